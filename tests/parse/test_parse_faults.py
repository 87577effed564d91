# SPDX-License-Identifier: Apache-2.0
"""test_parse_faults.py — hostile and damaged input, each attack kept as a
regression test: a store that hit a full disk in WAL mode, numbers beyond
every integer type in args, absurd durations, a parse killed mid-write, a
damaged WAL, an output folder that cannot be made (a leak under ASan),
messages (stress with a bad prof_dir, the stress figures,
request_status.csv's skip line), CSV formula injection, and ids escaped by
one writer and raw from another."""
import json
import re
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import unittest

from support.fixtures import Store, TempCase, ns, read_csv, run_parse, simple_request  # noqa: E402

BIN = os.environ.get("SERVPROF_BIN", "servprof")


def analyze_quality(inp):
    """analyze's data-quality block for raw stores (its JSON document)."""
    p = subprocess.run([BIN, "analyze", inp, "--format", "json"], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        raise AssertionError("analyze exited %d: %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout)["data_quality"]
SLOW = 10 if os.environ.get("SERVPROF_SANITIZE") else 1


class Case(TempCase):
    def assert_no_sanitizer_report(self, p):
        for word in ("LeakSanitizer", "AddressSanitizer", "runtime error:", "ThreadSanitizer"):
            self.assertNotIn(word, p.stderr)


class Numbers(Case):
    def test_huge_numbers_in_args_are_counted_not_undefined(self):
        # what servprof_attr_int(r, "iter", 5000000000) writes inside a rid list
        s = Store(os.path.join(self.inp, "ms_service_n-1.db"), "n", 1)
        simple_request(s, "r1", 0, 10)
        s.raw("BatchSchedule", ns(2), ns(3) - ns(2), "BatchSchedule",
              '{"type":2,"rid":[{"rid":"r1","iter":5000000000,"type":1e300}],"batch_size":1,'
              '"scope#device":99999999999,"scope#cpu":-1e30}')
        s.close()
        p = run_parse(self.inp, self.out)
        self.assert_no_sanitizer_report(p)
        self.assertIn("4 numeric value(s) in args were out of range", p.stderr)
        rows = read_csv(os.path.join(self.out, "batch.csv"))
        self.assertEqual(len(rows), 1)

    def test_absurd_durations_are_clamped_once(self):
        # INT64_MAX and REAL 1e30 durations: timestamp + duration overflowed
        s = Store(os.path.join(self.inp, "ms_service_d-1.db"), "d", 1)
        simple_request(s, "r1", 0, 10)
        ins = "INSERT INTO slice(timestamp, duration, name, cat, args, pid, tid) VALUES (?, ?, ?, ?, ?, 1, 1)"
        s.db.execute(ins, (ns(1), 2**63 - 1, "forward", "ModelExecute", '{"type":2,"rid":[{"rid":"r1","iter":0}]}'))
        s.db.execute(ins, (ns(2), 1e30, "modelExec", "Execute", '{"type":2,"rid":[{"rid":"r1","iter":0}]}'))
        s.db.execute(ins, (ns(3), 2**62, "BatchSchedule", "BatchSchedule", '{"type":2,"rid":[{"rid":"r1"}]}'))
        s.db.execute(ins, (ns(4), ns(5) - ns(4), "forward", "ModelExecute", '{"type":2,"rid":[{"rid":"r1","iter":1}]}'))
        s.close()
        p = run_parse(self.inp, self.out)
        self.assert_no_sanitizer_report(p)
        self.assertRegex(p.stderr, r"store \S+ms_service_d-1.db: 3 record\(s\) had an absurd duration .*"
                                   r"read as events \(duration 0\)")
        with open(os.path.join(self.out, "chrome_tracing.json")) as f:
            trace = json.load(f)  # complete, valid JSON
        durs = sorted(e.get("dur", 0) for e in trace if e.get("name") == "forward")
        self.assertEqual(durs, [0, 1000.0])
        self.assertTrue(os.path.exists(os.path.join(self.out, "profiler.db")))
        self.assertFalse([n for n in os.listdir(self.out) if n.endswith(".partial")])


    def test_first_token_outside_the_request_is_left_empty(self):
        # a forward that names r1 11.6 days after its httpRes; r2 is sane
        s = Store(os.path.join(self.inp, "ms_service_f-1.db"), "f", 1)
        simple_request(s, "r1", 0, 10)
        s.span("forward", 1_000_000_000, 1_000_000_001, "ModelExecute", rid=[{"rid": "r1", "iter": 0}])
        simple_request(s, "r2", 20, 40)
        s.span("forward", 21, 25, "ModelExecute", rid=[{"rid": "r2", "iter": 0}])
        s.close()
        p = run_parse(self.inp, self.out)
        rows = {r["http_rid"]: r for r in read_csv(os.path.join(self.out, "request.csv"))}
        bad, good = rows["r1"], rows["r2"]
        for col in ("first_token_latency(ms)", "tpot(ms)", "decode_time(ms)", "prefill_time(ms)"):
            self.assertEqual(bad[col], "", (col, bad))
        self.assertEqual(float(good["first_token_latency(ms)"]), 5.0)
        self.assertEqual(float(bad["execution_time(ms)"]), 10.0)
        self.assertIn("figures left empty: 1 ", p.stdout)
        # analyze of the same stores: the same count in its data-quality block
        q = analyze_quality(self.inp)
        self.assertEqual(q["figures_left_empty"], 1)
        self.assertEqual(q["duplicate_ids"], 0)


class Ids(Case):
    def test_one_engine_id_in_two_stores_is_reported(self):
        # two processes each link their own request to engine id "0"
        for host, pid, rid in (("a", 1, "A"), ("b", 2, "B")):
            s = Store(os.path.join(self.inp, "ms_service_%s-%d.db" % (host, pid)), host, pid)
            simple_request(s, rid, 0 + pid, 10 + pid)
            s.link(1 + pid, "0", rid)
            s.close()
        p = run_parse(self.inp, self.out)
        self.assertRegex(p.stdout, r'duplicate ids: 1 id\(s\) linked from two process stores '
                                   r'\(first: "0" in ms_service_a-1 and ms_service_b-2\)')
        q = analyze_quality(self.inp)
        self.assertEqual(q["duplicate_ids"], 1)
        self.assertIn('"0" in ms_service_a-1 and ms_service_b-2', q["duplicate_example"])
        text = subprocess.run([BIN, "analyze", self.inp], capture_output=True, text=True, timeout=60)
        self.assertIn("data quality: 1 id(s) linked from two process stores", text.stdout)

    def test_escaped_and_raw_ids_are_one_request(self):
        # Python's json.dumps escapes non-ASCII, C writes it raw; longer than 511 bytes
        s = Store(os.path.join(self.inp, "ms_service_i-1.db"), "i", 1)
        long_rid = "req-\u00e9\U0001F600-" + "\u00e9" * 400 + "-end"
        other = "req-\u00e9\U0001F600-" + "\u00e9" * 400 + "-other"
        self.assertGreater(len(long_rid.encode()), 600)
        s.raw("httpReq", ns(0), 0, "Request", json.dumps({"type": 0, "rid": long_rid}))  # escaped
        s.raw("httpRes", ns(10), 0, "Request",
              json.dumps({"type": 0, "rid": long_rid, "replyTokenSize=": 4}, ensure_ascii=False))  # raw
        s.raw("httpReq", ns(1), 0, "Request", json.dumps({"type": 0, "rid": other}))
        s.raw("httpRes", ns(5), 0, "Request", json.dumps({"type": 0, "rid": other}, ensure_ascii=False))
        s.raw("httpReq", ns(2), 0, "Request", '{"type":0,"rid":"nul\\u0000id"}')
        s.close()
        run_parse(self.inp, self.out)
        rows = {r["http_rid"]: r for r in read_csv(os.path.join(self.out, "request.csv"))}
        self.assertEqual(set(rows), {long_rid, other, "nul\ufffdid"})
        self.assertAlmostEqual(float(rows[long_rid]["execution_time(ms)"]), 10.0)
        self.assertAlmostEqual(float(rows[other]["execution_time(ms)"]), 4.0)


class CsvInjection(Case):
    def test_formula_ids_get_a_quote(self):
        s = Store(os.path.join(self.inp, "ms_service_c-1.db"), "c", 1)
        evil = "=cmd|' /C calc'!A0"
        simple_request(s, evil, 0, 10)
        simple_request(s, "-42", 1, 5)
        s.close()
        run_parse(self.inp, self.out)
        with open(os.path.join(self.out, "request.csv")) as f:
            text = f.read()
        self.assertIn("\"'=cmd|' /C calc'!A0\"", text)
        rids = [r["http_rid"] for r in read_csv(os.path.join(self.out, "request.csv"))]
        self.assertEqual(sorted(rids), ["'" + evil, "-42"])  # a number is left alone
        db = sqlite3.connect(os.path.join(self.out, "profiler.db"))
        try:  # the database keeps the value itself
            got = sorted(r for (r,) in db.execute("SELECT http_rid FROM request"))
        finally:
            db.close()
        self.assertEqual(got, ["-42", evil])


class Messages(Case):
    def test_request_status_skip_names_the_unknown_queue(self):
        # records with QueueSize= came, but for a queue the report has no column for
        s = Store(os.path.join(self.inp, "ms_service_q-1.db"), "q", 1)
        simple_request(s, "r1", 0, 10)
        s.event("Enqueue", 1, "Schedule", rid="r1", **{"QueueSize=": 3, "scope#QueueName": "PENDING"})
        s.close()
        p = run_parse(self.inp, self.out)
        self.assertIn("request_status.csv skipped: records with QueueSize= were found, but for no queue it "
                      "reports (WAITING, RUNNING, SWAPPED): the first named 'PENDING' (scope#QueueName)",
                      p.stderr)
        self.assertNotIn("no queue records with QueueSize=", p.stderr)

    def test_output_folder_that_cannot_be_made(self):
        # the model was not freed on this path (a LeakSanitizer report in the ASan build)
        s = Store(os.path.join(self.inp, "ms_service_o-1.db"), "o", 1)
        simple_request(s, "r1", 0, 10)
        s.close()
        blocker = os.path.join(self.tmp.name, "a-file")
        with open(blocker, "w") as f:
            f.write("x")
        p = run_parse(self.inp, os.path.join(blocker, "out"), check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot create output folder %s/out: Not a directory" % blocker, p.stderr)
        self.assert_no_sanitizer_report(p)


def make_wal_store(path, transactions=20, rows=200):
    """A WAL store whose rows are all in its -wal file (no checkpoint), copied while the writer has it open."""
    src = path + ".src"
    s = Store(src, "w", 1, wal=True)
    s.db.execute("PRAGMA wal_autocheckpoint=0")
    for t in range(transactions):
        for i in range(rows):
            s.event("Enqueue", t * 10 + i * 0.01, "Schedule", rid="r%d" % (t * rows + i))
        s.commit()
    shutil.copy(src, path)
    shutil.copy(src + "-wal", path + "-wal")
    s.close()
    os.unlink(src)
    return transactions * rows


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x40]))


class DamagedWal(Case):
    def wal_frames(self, wal):
        with open(wal, "rb") as f:
            head = f.read(32)
        psz = int.from_bytes(head[8:12], "big")
        return psz, (os.path.getsize(wal) - 32) // (24 + psz)

    def test_flip_in_first_frame_is_not_called_a_wrong_schema(self):
        # SQLite ignores the WAL from its first frame on; the main file has no tables yet
        path = os.path.join(self.inp, "ms_service_w-1.db")
        make_wal_store(path)
        psz, frames = self.wal_frames(path + "-wal")
        flip(path + "-wal", 32 + 24 + 200)
        p = run_parse(self.inp, self.out, check=False)
        self.assertRegex(p.stderr, r"its WAL file \(\S+-wal\) is damaged at frame 1 of %d \(checksum mismatch\); "
                                   r"SQLite reads only the 0 frame\(s\) committed before it: the other %d frame\(s\), "
                                   r"about \d+ rows, are not read" % (frames, frames))
        self.assertIn("no 'slice' or 'Mstx' table can be read: the tables are in its damaged WAL", p.stderr)
        self.assertNotIn("has neither a 'slice' nor an 'Mstx' table", p.stderr)

    def test_flip_mid_wal_is_reported_with_the_rows_lost(self):
        path = os.path.join(self.inp, "ms_service_w-1.db")
        total = make_wal_store(path)
        psz, frames = self.wal_frames(path + "-wal")
        k = frames // 2
        flip(path + "-wal", 32 + k * (24 + psz) + 24 + 100)
        p = run_parse(self.inp, self.out, check=False)
        m = re.search(r"damaged at frame (\d+) of (\d+) .* the other (\d+) frame\(s\), about (\d+) rows",
                                    p.stderr)
        self.assertTrue(m, p.stderr)
        self.assertEqual(int(m.group(1)), k + 1)
        read = int(p.stdout.split("requests:")[1].split()[0]) if "requests:" in p.stdout else 0
        lost = int(m.group(4))
        self.assertGreater(read, 0)
        self.assertLess(read, total)
        # the estimate is of the right size: what was read plus what was not is about the whole
        self.assertLess(abs(read + lost - total), total // 10, (read, lost, total))

    def test_torn_last_frame_is_not_damage(self):
        path = os.path.join(self.inp, "ms_service_w-1.db")
        make_wal_store(path, transactions=3)
        psz, frames = self.wal_frames(path + "-wal")
        with open(path + "-wal", "r+b") as f:  # a writer killed mid-frame
            f.truncate(32 + (frames - 1) * (24 + psz) + 24 + psz // 2)
        p = run_parse(self.inp, self.out, check=False)
        self.assertNotIn("damaged", p.stderr)


class KilledParse(Case):
    def test_killed_reparse_keeps_the_previous_reports(self):
        # kill -9 while the outputs are written; the previous reports stay whole
        s = Store(os.path.join(self.inp, "ms_service_k-1.db"), "k", 1)
        rows = []
        for i in range(60000):
            t = ns(i * 0.05)
            rid = "r%d" % (i // 4)
            rows.append(("httpReq", t, 0, "Request", json.dumps({"type": 0, "rid": rid})))
            rows.append(("forward", t + 1000, 20000, "ModelExecute",
                         json.dumps({"type": 2, "rid": [{"rid": rid, "iter": i % 4}], "batch_size": 1})))
        s.db.executemany("INSERT INTO slice(name, timestamp, duration, cat, args, pid, tid) "
                         "VALUES (?, ?, ?, ?, ?, 1, 1)", rows)
        s.close()
        run_parse(self.inp, self.out)
        before = {}
        for root, _, files in os.walk(self.out):
            for n in files:
                p = os.path.join(root, n)
                with open(p, "rb") as f:
                    before[p] = f.read()
        self.assertIn(os.path.join(self.out, "chrome_tracing.json"), before)
        snap = {p: os.stat(p).st_mtime_ns for p in before}
        proc = subprocess.Popen([BIN, "parse", "--input-path", self.inp, "--output-path", self.out,
                                 "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60 * SLOW
        # kill as soon as the new run has written anything in the folder
        while time.monotonic() < deadline and proc.poll() is None:
            names = {os.path.join(r, n) for r, _, fs in os.walk(self.out) for n in fs}
            if names != set(snap) or any(os.stat(p).st_mtime_ns != m for p, m in snap.items() if p in names):
                break
            time.sleep(0.001)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.returncode != -signal.SIGKILL:
            self.skipTest("the parse finished before it could be killed (machine too fast for this input)")
        for p, data in before.items():
            with open(p, "rb") as f:
                self.assertEqual(f.read(), data, "%s changed by a killed parse" % p)
        finals = {os.path.join(r, n) for r, _, fs in os.walk(self.out) for n in fs if not n.endswith(".partial")}
        self.assertEqual(finals, set(before))
        # the next run replaces the killed run's temporary files
        run_parse(self.inp, self.out)
        left = [n for r, _, fs in os.walk(self.out) for n in fs if n.endswith(".partial")]
        self.assertEqual(left, [])


def stress(args, env_extra, timeout=60):
    env = dict(os.environ)
    env.pop("SERVICE_PROF_CONFIG_PATH", None)
    env.update(env_extra)
    return subprocess.run([BIN, "stress"] + args, env=env, capture_output=True, text=True, timeout=timeout * SLOW)


def field(out, name):
    m = re.search(r"^%s:\s+(\d+)" % name, out, re.M)
    return int(m.group(1)) if m else None


class Stress(Case):
    def test_bad_prof_dir_is_named_not_io_error(self):
        cfg = os.path.join(self.tmp.name, "c.json")
        blocker = os.path.join(self.tmp.name, "a-file")
        with open(blocker, "w") as f:
            f.write("x")
        with open(cfg, "w") as f:
            json.dump({"enable": 1, "prof_dir": os.path.join(blocker, "prof")}, f)
        p = stress(["--threads", "1", "--rate", "1000", "--seconds", "0.2"],
                   {"HOME": self.tmp.name, "SERVICE_PROF_CONFIG_PATH": cfg})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("servprof stress: collection did not start: the store could not be created under prof_dir",
                      p.stderr)
        self.assertNotIn("input/output error", p.stderr)
        self.assertNotIn('"enable" is not 1', p.stderr)

    def test_figures_add_up(self):
        cfg = os.path.join(self.tmp.name, "c.json")
        with open(cfg, "w") as f:  # the smallest buffers, a high rate: spans are dropped
            json.dump({"enable": 1, "prof_dir": os.path.join(self.tmp.name, "prof"), "buffer_size_kb": 64}, f)
        p = stress(["--threads", "2", "--rate", "400000", "--seconds", "0.5"],
                   {"HOME": self.tmp.name, "SERVICE_PROF_CONFIG_PATH": cfg})
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        emitted, accepted = field(p.stdout, "records emitted"), field(p.stdout, "records accepted")
        dropped, unrecorded = field(p.stdout, "records dropped"), field(p.stdout, "not recorded")
        self.assertIsNotNone(unrecorded, p.stdout)
        self.assertEqual(accepted + dropped + unrecorded, emitted, p.stdout)


class FullDisk(Case):
    def test_store_that_filled_a_disk_in_wal_mode_is_parsed(self):
        # the committed pages live in the -wal file; the main file is shorter than its header says
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs needs root")
        mnt = os.path.join(self.tmp.name, "mnt")
        os.makedirs(mnt)
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt], capture_output=True, text=True)
        if m.returncode != 0:
            self.skipTest("cannot mount a tmpfs here: " + m.stderr.strip())
        try:
            cfg = os.path.join(self.tmp.name, "c.json")
            with open(cfg, "w") as f:
                json.dump({"enable": 1, "prof_dir": os.path.join(mnt, "prof")}, f)
            p = stress(["--threads", "1", "--rate", "20000", "--seconds", "3"],
                       {"HOME": self.tmp.name, "SERVICE_PROF_CONFIG_PATH": cfg})
            self.assertIn("database or disk is full", p.stderr)
            written = field(p.stdout, "rows written")
            self.assertGreater(written, 0, p.stdout + p.stderr)
            store = [os.path.join(r, n) for r, _, fs in os.walk(mnt) for n in fs if n.endswith(".db")]
            self.assertEqual(len(store), 1)
            db = sqlite3.connect("file:%s?mode=ro" % store[0], uri=True)
            try:
                self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
                stored = db.execute("SELECT count(*) FROM slice").fetchone()[0]
            finally:
                db.close()
            self.assertEqual(stored, written)
            out = os.path.join(self.tmp.name, "out")
            r = run_parse(os.path.join(mnt, "prof"), out)
            self.assertNotIn("truncated", r.stderr)
            db = sqlite3.connect(os.path.join(out, "profiler.db"))
            try:
                self.assertEqual(db.execute("SELECT count(*) FROM batch").fetchone()[0], stored)
            finally:
                db.close()
        finally:
            subprocess.run(["umount", "-l", mnt])


if __name__ == "__main__":
    unittest.main()
