# SPDX-License-Identifier: Apache-2.0
"""profiler.db's timeline storage: `slice` is a view over slice_data and
slice_args (long args texts stored once), and must read exactly like the
table it replaced: the columns of docs/parse.md, every record with its args
byte for byte, end_time = timestamp + duration. The file is built as
profiler.db.partial and renamed when complete, so an interrupted parse
leaves no profiler.db behind."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

from support.fixtures import Store, ns, run_parse  # noqa: E402


def rid_list(first, n):
    return [{"rid": "r%d" % i, "iter": 0, "type": 0, "num_scheduled_tokens": 16, "num_prompt_tokens": 16,
             "num_computed_tokens": 0} for i in range(first, first + n)]


class DbOut(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.inp = os.path.join(cls.tmp.name, "in")
        cls.out = os.path.join(cls.tmp.name, "out")
        s = Store(os.path.join(cls.inp, "ms_service_db-1.db"), "hostD", 1)
        a = rid_list(0, 20)  # ~2 KB: a long text
        b = rid_list(5, 20)
        t = 0.0
        # step 1: the same list on schedule, execution and forward (stored once)
        s.span("batchFrameworkProcessing", t + 1, t + 2, "Schedule", tid=11, rid=a)
        s.event("detokenize", t + 2.5, "Request", tid=12, rid="r0")
        s.span("modelExec", t + 3, t + 6, "ModelExecute", tid=13, rid=a)
        s.span("forward", t + 3.5, t + 5.5, "ModelExecute", tid=14, rid=a)
        # step 2: another list, then the first one again (recent: referenced)
        s.span("batchFrameworkProcessing", t + 10, t + 11, "Schedule", tid=11, rid=b)
        s.span("modelExec", t + 12, t + 14, "ModelExecute", tid=13, rid=b)
        s.span("forward", t + 20, t + 22, "ModelExecute", tid=14, rid=a)
        # a long text that is not JSON (stored as it is), and odd short ones
        s.raw("garbage", ns(30), 0, "Other", "{not json " + "x" * 700, tid=15)
        s.raw("noargs", ns(31), 0, "Other", None, tid=15)
        s.raw("uni\u00e9", ns(32), 0, "Other", '{"k":"\u00e9\u4e2d"}', tid=15)
        s.close()
        run_parse(cls.inp, cls.out)
        cls.db = sqlite3.connect(os.path.join(cls.out, "profiler.db"))
        src = sqlite3.connect(os.path.join(cls.inp, "ms_service_db-1.db"))
        cls.src = src.execute("SELECT timestamp, duration, name, args FROM slice ORDER BY timestamp").fetchall()
        src.close()

    @classmethod
    def tearDownClass(cls):
        cls.db.close()
        cls.tmp.cleanup()

    def test_slice_has_the_columns_of_the_contract(self):
        cols = [r[1] for r in self.db.execute("PRAGMA table_info(slice)")]
        # then the reference's id (insertion order) and track_id (our lane, tid)
        self.assertEqual(cols, ["timestamp", "duration", "end_time", "name", "cat", "args", "pid", "tid", "id",
                                "track_id"])

    def test_every_record_with_its_args_byte_for_byte(self):
        rows = self.db.execute("SELECT timestamp, duration, name, args FROM slice ORDER BY timestamp").fetchall()
        self.assertEqual(len(rows), len(self.src))
        for got, want in zip(rows, self.src):
            self.assertEqual(got[0], want[0])
            self.assertEqual(got[1], want[1])
            self.assertEqual(got[2], want[2])
            self.assertEqual(got[3], want[3] if want[3] is not None else "{}", got[2])
        bad = self.db.execute("SELECT count(*) FROM slice WHERE end_time != timestamp + duration").fetchone()[0]
        self.assertEqual(bad, 0)

    def test_long_args_stored_once(self):
        # a (x3), b (x2), a (x1), garbage: three texts stored, seven records refer to them
        self.assertEqual(self.db.execute("SELECT count(*) FROM slice_args").fetchone()[0], 3)
        self.assertEqual(self.db.execute("SELECT count(*) FROM slice_data WHERE args_id IS NOT NULL").fetchone()[0], 7)
        self.assertEqual(self.db.execute("SELECT count(*) FROM slice_data WHERE args IS NOT NULL"
                                         " AND args_id IS NOT NULL").fetchone()[0], 0)
        a = json.dumps({"type": 2, "rid": rid_list(0, 20)})
        self.assertEqual(self.db.execute("SELECT count(*) FROM slice WHERE args = ?", (a,)).fetchone()[0], 4)

    def test_sql_on_the_view(self):
        n = self.db.execute("SELECT count(*) FROM slice WHERE name = 'forward' AND "
                            "json_extract(args, '$.rid[19].rid') = 'r19'").fetchone()[0]
        self.assertEqual(n, 2)
        self.assertEqual(self.db.execute("SELECT json_extract(args, '$.k') FROM slice WHERE cat = 'Other' AND "
                                         "name LIKE 'uni%'").fetchone()[0], "\u00e9\u4e2d")
        # stored in time order
        ts = [r[0] for r in self.db.execute("SELECT timestamp FROM slice_data ORDER BY rowid")]
        self.assertEqual(ts, sorted(ts))

    def test_no_partial_file_and_stale_files_replaced(self):
        out = os.path.join(self.tmp.name, "out2")
        os.makedirs(out)
        with open(os.path.join(out, "profiler.db.partial"), "w") as f:
            f.write("left by an interrupted run")
        with open(os.path.join(out, "profiler.db"), "w") as f:
            f.write("not a database")
        run_parse(self.inp, out, "--format", "db")
        self.assertEqual(sorted(os.listdir(out)), ["profiler.db"])
        db = sqlite3.connect(os.path.join(out, "profiler.db"))
        try:
            self.assertEqual(db.execute("SELECT count(*) FROM slice").fetchone()[0], len(self.src))
        finally:
            db.close()


class RecentTexts(unittest.TestCase):
    def test_only_recent_long_texts_are_referenced(self):
        # six distinct lists, then the first again: it left the last four, so it is stored again
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            s = Store(os.path.join(inp, "ms_service_rt-1.db"), "rt", 1)
            for k in range(6):
                s.span("forward", k * 10 + 1, k * 10 + 2, "ModelExecute", rid=rid_list(k, 20))
            s.span("forward", 70, 71, "ModelExecute", rid=rid_list(0, 20))
            s.span("forward", 80, 81, "ModelExecute", rid=rid_list(5, 20))  # still recent
            s.close()
            run_parse(inp, out, "--format", "db")
            db = sqlite3.connect(os.path.join(out, "profiler.db"))
            try:
                self.assertEqual(db.execute("SELECT count(*) FROM slice_args").fetchone()[0], 7)
                rows = db.execute("SELECT args FROM slice ORDER BY timestamp")
                got = [json.loads(a)["rid"][0]["rid"] for (a,) in rows]
                self.assertEqual(got, ["r0", "r1", "r2", "r3", "r4", "r5", "r0", "r5"])
            finally:
                db.close()


class WriteErrors(unittest.TestCase):
    @unittest.skipUnless(os.path.exists("/dev/full"), "needs /dev/full")
    def test_full_disk_is_reported_per_file(self):
        # the same messages and status with the writers on threads (--jobs 2: wqueue.c)
        for jobs in ("1", "2"):
            with self.subTest(jobs=jobs):
                self.full_disk(jobs)

    def full_disk(self, jobs):
        # chrome_tracing.json and request.csv lead to /dev/full: every write fails with ENOSPC
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            s = Store(os.path.join(inp, "ms_service_full-1.db"), "full", 1)
            s.event("httpReq", 1, "Request", rid="a")
            s.event("httpRes", 5, "Request", rid="a")
            s.close()
            os.makedirs(out)
            # outputs are written under a temporary name, renamed when complete
            os.symlink("/dev/full", os.path.join(out, "chrome_tracing.json.partial"))
            os.symlink("/dev/full", os.path.join(out, "request.csv.partial"))
            p = run_parse(inp, out, "--jobs", jobs, check=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(len([ln for ln in p.stderr.splitlines() if ": error: " in ln]), 2, p.stderr)
            self.assertRegex(p.stderr, r"writing \S*chrome_tracing.json failed: No space left on device")
            self.assertRegex(p.stderr, r"writing \S*request.csv failed: No space left on device; "
                                       r"the incomplete file is removed")
            # an incomplete report or trace is not left to pass for a short run
            self.assertFalse(os.path.lexists(os.path.join(out, "chrome_tracing.json")))
            self.assertFalse(os.path.lexists(os.path.join(out, "request.csv")))
            self.assertFalse(os.path.lexists(os.path.join(out, "request.csv.partial")))
            db = sqlite3.connect(os.path.join(out, "profiler.db"))  # the other outputs are complete
            try:
                self.assertEqual(db.execute("SELECT count(*) FROM slice").fetchone()[0], 2)
            finally:
                db.close()


class Interrupted(unittest.TestCase):
    def test_killed_parse_leaves_no_profiler_db(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            s = Store(os.path.join(inp, "ms_service_big-1.db"), "big", 1)
            rows = [(ns(i * 0.01), 0, "tick", 0, 1, "Other", '{"type":0,"rid":"r%d"}' % i, ns(i * 0.01), 1, 1)
                    for i in range(300000)]
            s.db.executemany("INSERT INTO slice(timestamp, duration, name, depth, track_id, cat, args, end_time,"
                             " pid, tid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            s.close()
            os.makedirs(out)
            partial = os.path.join(out, "profiler.db.partial")
            p = subprocess.Popen([os.environ["SERVPROF_BIN"], "parse", "--input-path", inp, "--output-path", out,
                                  "--format", "db", "--no-progress"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while not os.path.exists(partial) and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.001)
            p.send_signal(signal.SIGKILL)
            rc = p.wait()
            print("parse rc after the kill:", rc, file=sys.stderr)
            if rc == -signal.SIGKILL:  # killed while building (not already done)
                self.assertFalse(os.path.exists(os.path.join(out, "profiler.db")))
            # the next run replaces the partial file
            run_parse(inp, out, "--format", "db")
            self.assertFalse(os.path.exists(partial))
            db = sqlite3.connect(os.path.join(out, "profiler.db"))
            try:
                self.assertEqual(db.execute("SELECT count(*) FROM slice").fetchone()[0], 300000)
            finally:
                db.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
