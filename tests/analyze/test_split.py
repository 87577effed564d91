# SPDX-License-Identifier: Apache-2.0
"""test_split.py — servprof split: the steps it picks (batch type and size, or a
request id; the first --*-number of them), the rows and columns of prefill.csv
and decode.csv with their statistics worked out by hand, the same files from
raw stores, a session folder's parse output folder and its profiler.db, and
bad options (one line, exit 2) and a pick that finds nothing (exit 1, the batch
sizes there named); --log-level (parse's names and meaning) and the
reference's debug files it adds at debug (<kind>_detail.csv, <kind>_<N>.csv),
their columns and one row worked out here; the temporary folder of a killed run
(killed for real: a file-size limit) removed by the next run, and never one
still in use.

The store, times in ms after T0, one engine process (pid 100), threads 1
(requests), 3 (scheduler) and 4 (worker):

  step  schedule  exec     forward  entries            type     size
  1     3-4       4-10     4-9      p1 prefill         Prefill  1
  2     12-13     13-15    13-14    p1 decode          Decode   1
  3     16-17     17-20    17-19    p1, p2 decode      Decode   2
  4     22-23     23-27    23-26    p1, p2 decode      Decode   2
  5     30-31     31-32    31-32    p2 decode          Decode   1   (no next step: never picked)
  p1: httpReq 0, tokenize 0-1, detokenize 19.5-19.8 (600-byte args), httpRes 28;
  p2: httpReq 2 (no prefill step of its own)
"""
import csv
import datetime
import fcntl
import os
import resource
import signal
import subprocess
import tempfile
import time
import unittest

from support.fixtures import T0, Store, run_parse

CLI = os.environ["SERVPROF_BIN"]


def rl(*entries):
    return [dict(rid=r, iter=i, type=t) for (r, i, t) in entries]


def build(root):
    s = Store(os.path.join(root, "ms_service_h-100.db"), "h", 100)
    s.event("httpReq", 0, "Request", tid=1, rid="p1", **{"recvTokenSize=": 10})
    s.span("tokenize", 0, 1, "Request", tid=1, rid="p1")
    s.event("httpReq", 2, "Request", tid=1, rid="p2", **{"recvTokenSize=": 10})
    steps = [((3, 4), (4, 10), (4, 9), [("p1", 0, 0)]),
             ((12, 13), (13, 15), (13, 14), [("p1", 1, 1)]),
             ((16, 17), (17, 20), (17, 19), [("p1", 2, 1), ("p2", 1, 1)]),
             ((22, 23), (23, 27), (23, 26), [("p1", 3, 1), ("p2", 2, 1)]),
             ((30, 31), (31, 32), (31, 32), [("p2", 3, 1)])]
    for sched, exe, fwd, entries in steps:
        s.span("BatchSchedule", sched[0], sched[1], "BatchSchedule", tid=3, rid=rl(*entries))
        s.span("modelExec", exe[0], exe[1], "ModelExecute", tid=4, rid=rl(*entries))
        s.span("forward", fwd[0], fwd[1], "ModelExecute", tid=4)
    # a request's span inside step 3's window, its args long enough to be stored apart
    # (slice_args): it belongs to its request, not to the step
    s.span("detokenize", 19.5, 19.8, "Request", tid=1, rid="p1", text="x" * 600)
    s.event("httpRes", 28, "Request", tid=1, rid="p1", **{"replyTokenSize=": 4})
    s.event("httpRes", 33, "Request", tid=1, rid="p2", **{"replyTokenSize=": 3})
    s.close()


def split(inp, out, *opts, rc=0, env=None):
    p = subprocess.run([CLI, "split", inp, "-o", out, "--no-progress", *opts], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    return p


def text(path):
    with open(path) as f:
        return f.read()


def read(path):
    with open(path, newline="") as f:
        r = csv.reader(f)
        head = next(r)
        return head, [dict(zip(head, row)) for row in r]


class Split(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="sp-split-")
        cls.raw = os.path.join(cls.tmp.name, "raw")
        build(cls.raw)
        cls.parsed = os.path.join(cls.tmp.name, "parsed")
        run_parse(cls.raw, cls.parsed, "--format", "db")

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def test_decode_rows_columns_and_statistics(self):
        # Decode steps of size 2: steps 3 and 4 (both followed by another step).
        split(self.raw, self.out("d"), "--decode-batch-size", "2", "--decode-number", "5")
        self.assertFalse(os.path.exists(os.path.join(self.out("d"), "prefill.csv")))
        head, rows = read(os.path.join(self.out("d"), "decode.csv"))
        self.assertEqual(head, ["name", "during_time(ms)", "max", "min", "mean", "std", "pid", "tid",
                                "start_time(ms)", "end_time(ms)"])
        # one step's rows (both have the same rows: the first, step 3), in start order, gaps, tail, AllTime
        self.assertEqual([r["name"] for r in rows],
                         ["BatchSchedule", "modelExec", "forward", "Between-BatchSchedule-modelExec",
                          "Between-modelExec-forward", "Between-forward-AllTime", "AllTime"])
        by = {r["name"]: r for r in rows}
        fw = by["forward"]
        self.assertAlmostEqual(float(fw["during_time(ms)"]), 2.0)          # step 3: 17-19
        self.assertAlmostEqual(float(fw["max"]), 3.0)                      # step 4: 23-26
        self.assertAlmostEqual(float(fw["min"]), 2.0)
        self.assertAlmostEqual(float(fw["mean"]), 2.5)
        self.assertAlmostEqual(float(fw["std"]), 0.7071, places=4)        # sample std of {2, 3}
        self.assertEqual(int(fw["start_time(ms)"]), T0 // 1_000_000 + 17)  # whole ms since the epoch
        self.assertEqual(int(fw["end_time(ms)"]), T0 // 1_000_000 + 19)
        self.assertEqual(fw["tid"], by["modelExec"]["tid"])               # the worker's lane
        self.assertNotEqual(fw["tid"], by["BatchSchedule"]["tid"])
        # AllTime: step start to the next step's start (16 -> 22, 22 -> 30); no pid/tid
        at = by["AllTime"]
        self.assertAlmostEqual(float(at["during_time(ms)"]), 6.0)
        self.assertAlmostEqual(float(at["max"]), 8.0)
        self.assertEqual((at["pid"], at["tid"]), ("", ""))
        # the tail: the last span's end to the next step (forward ends 19, next step 22)
        self.assertAlmostEqual(float(by["Between-forward-AllTime"]["during_time(ms)"]), 3.0)
        self.assertAlmostEqual(float(by["Between-BatchSchedule-modelExec"]["during_time(ms)"]), 0.0)

    def test_number_limits_the_steps_counted(self):
        split(self.raw, self.out("d1"), "--decode-batch-size", "2")  # --decode-number 1: step 3 only
        _, rows = read(os.path.join(self.out("d1"), "decode.csv"))
        fw = {r["name"]: r for r in rows}["forward"]
        self.assertAlmostEqual(float(fw["max"]), 2.0)
        self.assertAlmostEqual(float(fw["std"]), 0.0)

    def test_prefill_rows_take_the_requests_http_spans(self):
        split(self.raw, self.out("p"), "--prefill-batch-size", "1", "--prefill-number", "3")
        head, rows = read(os.path.join(self.out("p"), "prefill.csv"))
        self.assertEqual(head[-1], "rid")
        names = [r["name"] for r in rows]
        # step 1 and p1's httpReq, tokenize, httpRes; no gap from or to httpReq / httpRes
        for n in ("httpReq", "tokenize", "BatchSchedule", "modelExec", "forward", "httpRes",
                  "Between-tokenize-BatchSchedule", "Between-httpRes-AllTime", "AllTime"):
            self.assertIn(n, names)
        self.assertFalse(any(n.startswith("Between-httpReq") for n in names), names)
        by = {r["name"]: r for r in rows}
        self.assertEqual(by["httpReq"]["rid"], "p1")
        self.assertAlmostEqual(float(by["Between-tokenize-BatchSchedule"]["during_time(ms)"]), 2.0)  # 1 -> 3
        self.assertAlmostEqual(float(by["AllTime"]["during_time(ms)"]), 9.0)  # 3 -> 12
        self.assertEqual(names[-1], "AllTime")

    def test_by_rid(self):
        split(self.raw, self.out("r"), "--decode-rid", "p2", "--decode-number", "9")
        _, rows = read(os.path.join(self.out("r"), "decode.csv"))
        fw = {r["name"]: r for r in rows}["forward"]
        self.assertAlmostEqual(float(fw["max"]), 3.0)   # steps 3 and 4 (step 5 has no next)
        self.assertAlmostEqual(float(fw["min"]), 2.0)

    def test_every_input_gives_the_same_files(self):
        args = ("--decode-batch-size", "2", "--decode-number", "2", "--prefill-batch-size", "1")
        split(self.raw, self.out("a"), *args)
        split(self.parsed, self.out("b"), *args)
        split(os.path.join(self.parsed, "profiler.db"), self.out("c"), *args)
        for f in ("prefill.csv", "decode.csv"):
            a = text(os.path.join(self.out("a"), f))
            self.assertEqual(a, text(os.path.join(self.out("b"), f)), f)
            self.assertEqual(a, text(os.path.join(self.out("c"), f)), f)
        self.assertEqual(sorted(os.listdir(self.raw)), ["ms_service_h-100.db"])  # nothing written beside the stores

    def test_nothing_found_names_the_sizes(self):
        p = split(self.raw, self.out("n"), "--decode-batch-size", "7", rc=1)
        self.assertIn("batch sizes of its Decode steps: 1, 2", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.out("n"), "decode.csv")))
        p = split(self.raw, self.out("n"), "--prefill-rid", "p2", rc=1)  # p2 has no Prefill step
        self.assertIn("holds request p2", p.stderr)

    def test_log_level(self):
        args = ("--decode-batch-size", "2")
        p = split(self.raw, self.out("l0"), *args, "--log-level", "loud", rc=2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("--log-level 'loud' is not one of: debug, info", p.stderr)
        # none: not even the "nothing found" line; the status still says it
        p = split(self.raw, self.out("l1"), "--decode-batch-size", "7", "--log-level", "none", rc=1)
        self.assertEqual(p.stderr, "")
        p = split(self.raw, self.out("l1"), "--decode-batch-size", "7", "--log-level", "fatal", rc=1)
        self.assertEqual(p.stderr, "")  # the reference's fatal is error: the warning is left out
        p = split(self.raw, self.out("l1"), "--decode-batch-size", "7", "--log-level", "warning", rc=1)
        self.assertIn("batch sizes of its Decode steps", p.stderr)
        # debug reaches the in-process parse too; by default the parse says nothing below warning
        p = split(self.raw, self.out("l2"), *args, "--log-level", "debug")
        self.assertIn("servprof parse: debug:", p.stderr)
        self.assertIn("servprof split: debug: wrote", p.stderr)
        p = split(self.raw, self.out("l3"), *args)
        self.assertEqual(p.stderr, "")
        self.assertEqual(os.listdir(self.out("l3")), ["decode.csv"])  # no debug files below debug
        self.assertIn("--log-level", subprocess.run([CLI, "split", "--help"], capture_output=True,
                                                    text=True).stdout)

    def test_debug_files(self):
        out = self.out("dbg")
        split(self.raw, out, "--decode-batch-size", "2", "--decode-number", "5", "--prefill-batch-size", "1",
              "--log-level", "debug")
        self.assertEqual(sorted(os.listdir(out)), ["decode.csv", "decode_5.csv", "decode_detail.csv",
                                                   "prefill.csv", "prefill_1.csv", "prefill_detail.csv"])
        cols = ["name", "during_time(ms)", "pid", "tid", "start_time(ms)", "end_time(ms)", "rid", "start_datetime",
                "end_datetime", "batch_type", "batch_size", "rid_list", "token_id_list"]
        _, dec = read(os.path.join(out, "decode.csv"))
        pid, tid = {r["name"]: r for r in dec}["BatchSchedule"]["pid"], {r["name"]: r for r in dec}["forward"]["tid"]
        us = T0 // 1000  # the detail files keep the reference's unconverted microseconds
        # the detail: every step (5), an AllTime for each with a next (4), the HTTP records from the first step on
        head, det = read(os.path.join(out, "decode_detail.csv"))
        self.assertEqual(head, cols)
        self.assertEqual([r["name"] for r in det],
                         ["BatchSchedule", "AllTime"] * 4 + ["httpRes", "BatchSchedule", "httpRes"])
        step3 = det[4]
        local = datetime.datetime.fromtimestamp((T0 + 16_000_000) / 1e9)  # as batch.csv's start_datetime
        self.assertEqual(step3, {
            "name": "BatchSchedule", "during_time(ms)": "1000.000", "pid": pid, "tid": step3["tid"],
            "start_time(ms)": "%d.000" % (us + 16000), "end_time(ms)": "%d.000" % (us + 17000), "rid": "",
            "start_datetime": local.strftime("%Y-%m-%d %H:%M:%S.%f"),
            "end_datetime": (local + datetime.timedelta(milliseconds=1)).strftime("%Y-%m-%d %H:%M:%S.%f"),
            "batch_type": "Decode", "batch_size": "2", "rid_list": "['p1', 'p2']", "token_id_list": ""})
        self.assertEqual(det[5], {**{c: "" for c in cols}, "name": "AllTime", "during_time(ms)": "6000.000",
                                  "start_time(ms)": "%d.000" % (us + 16000), "end_time(ms)": "%d.000" % (us + 22000)})
        _, pdet = read(os.path.join(out, "prefill_detail.csv"))
        self.assertEqual(pdet[0]["name"], "httpReq")  # from the first httpReq on
        self.assertEqual(pdet[0]["rid"], "p1")
        # the groups: each picked step's rows before the statistics, each led by an empty row
        head, grp = read(os.path.join(out, "decode_5.csv"))
        self.assertEqual(head, cols)
        names = [r["name"] for r in dec]
        self.assertEqual([r["name"] for r in grp], ([""] + names) * 2)
        fw = [r for r in grp if r["name"] == "forward"]
        self.assertEqual([r["during_time(ms)"] for r in fw], ["2000.000", "3000.000"])  # steps 3 and 4
        self.assertEqual(fw[1]["start_time(ms)"], "%d.000" % (us + 23000))
        self.assertEqual(fw[1]["tid"], tid)
        gap = [r for r in grp if r["name"] == "Between-modelExec-forward"][0]
        self.assertEqual((gap["during_time(ms)"], gap["start_datetime"]), ("-3000.000", ""))  # 20 -> 17
        _, pg = read(os.path.join(out, "prefill_1.csv"))
        self.assertEqual({r["rid"] for r in pg if r["name"] in ("httpReq", "tokenize", "httpRes")}, {"p1"})

    def test_killed_runs_folder_removed_by_the_next(self):
        root = self.out("tmproot")
        os.makedirs(root)
        env = dict(os.environ, TMPDIR=root)

        def plant(name, lock=True, age=0):
            d = os.path.join(root, name)
            os.makedirs(d)
            with open(os.path.join(d, "profiler.db.partial"), "w") as f:
                f.write("x" * 1000)
            if lock:
                open(os.path.join(d, ".lock"), "w").close()
            if age:
                os.utime(d, (time.time() - age, time.time() - age))
            return d

        plant("servprof-split-killed")                   # its lock no longer held: the run died
        busy = plant("servprof-split-inuse")             # a run still at work holds its lock
        plant("servprof-split-oldnol", lock=False, age=120)  # died before locking, long ago
        plant("servprof-split-newnol", lock=False)       # just made by a run about to lock it
        plant("other-folder", lock=True)                 # not ours
        held = open(os.path.join(busy, ".lock"))
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            split(self.raw, self.out("k"), "--decode-batch-size", "2", env=env)
            self.assertEqual(sorted(os.listdir(root)), ["other-folder", "servprof-split-inuse",
                                                        "servprof-split-newnol"])
            self.assertTrue(os.path.exists(os.path.join(busy, "profiler.db.partial")))
        finally:
            held.close()
        # released: the next run takes it; its own folder is gone when it ends
        split(self.raw, self.out("k"), "--decode-batch-size", "2", env=env)
        self.assertEqual(sorted(os.listdir(root)), ["other-folder", "servprof-split-newnol"])
        self.assertTrue(os.path.exists(os.path.join(self.out("k"), "decode.csv")))
        # a run killed mid-parse: a file-size limit smaller than its profiler.db kills it (SIGXFSZ)
        # while it writes into its folder, which stays behind, locked by no one
        limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # noqa: E731
        p = subprocess.run([CLI, "split", self.raw, "-o", self.out("k2"), "--decode-batch-size", "2"], env=env,
                           capture_output=True, timeout=120, preexec_fn=limit)
        self.assertEqual(p.returncode, -signal.SIGXFSZ, p.stderr)
        left = sorted(set(os.listdir(root)) - {"other-folder", "servprof-split-newnol"})
        self.assertEqual(len(left), 1, left)
        self.assertTrue(left[0].startswith("servprof-split-"))
        self.assertIn(".lock", os.listdir(os.path.join(root, left[0])))
        self.assertFalse(os.path.exists(os.path.join(self.out("k2"), "decode.csv")))
        split(self.raw, self.out("k2"), "--decode-batch-size", "2", env=env)
        self.assertEqual(sorted(os.listdir(root)), ["other-folder", "servprof-split-newnol"])

    def test_bad_options(self):
        for opts, word in ((["--decode-batch-size", "-1"], "--decode-batch-size"),
                           (["--decode-batch-size", "x"], "--decode-batch-size"),
                           (["--prefill-number", "0", "--prefill-batch-size", "1"], "--prefill-number"),
                           (["--prefill-rid", "a;b"], "--prefill-rid"),
                           (["--prefill-rid", "a", "--prefill-batch-size", "1"], "give one"),
                           ([], "nothing to pick")):
            p = split(self.raw, self.out("bad"), *opts, rc=2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(word, p.stderr)
        p = subprocess.run([CLI, "split", self.out("missing"), "--decode-batch-size", "1"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("missing", p.stderr)


if __name__ == "__main__":
    unittest.main()
