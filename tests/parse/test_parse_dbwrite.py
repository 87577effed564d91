# SPDX-License-Identifier: Apache-2.0
"""profiler.db written page by page (src/parse/btwrite.c), seen from the
CLI: the file SQLite reads back is sound (integrity_check), holds every
record, has the same schema texts SQLite itself would store and the
indexes; a file size limit that only profiler.db reaches gives one error
naming profiler.db and the reason, no profiler.db, and the other outputs
complete."""
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from fixtures import Store, run_parse  # noqa: E402


def make_input(inp, n):
    s = Store(os.path.join(inp, "ms_service_bw-1.db"), "hostB", 1)
    for i in range(n):
        t = i * 0.01
        s.event("httpReq", t, "Request", rid="r%d" % i)
        s.span("forward", t + 0.001, t + 0.004, "ModelExecute", rid=[{"rid": "r%d" % i, "iter": 0}])
        s.event("httpRes", t + 0.005, "Request", rid="r%d" % i)
    s.close()


class Written(unittest.TestCase):
    def test_db_sound_and_complete(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            make_input(inp, 3000)
            run_parse(inp, out)
            db = sqlite3.connect(os.path.join(out, "profiler.db"))
            try:
                self.assertEqual(db.execute("PRAGMA integrity_check").fetchall(), [("ok",)])
                self.assertEqual(db.execute("SELECT count(*) FROM slice").fetchone()[0], 9000)
                self.assertEqual(db.execute("SELECT count(*) FROM request").fetchone()[0], 3000)
                names = [r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'index'")]
                self.assertIn("request_rid", names)
                self.assertIn("flow_id", names)
                sql = db.execute("SELECT sql FROM sqlite_schema WHERE name = 'slice'").fetchone()[0]
                self.assertTrue(sql.startswith("CREATE VIEW slice AS SELECT"), sql)
                # the index is used and agrees with a scan
                rid = db.execute("SELECT http_rid FROM request ORDER BY rowid LIMIT 1 OFFSET 1234").fetchone()[0]
                self.assertEqual(db.execute("SELECT count(*) FROM request WHERE http_rid = ?", (rid,)).fetchone()[0],
                                 1)
                # types as SQLite stores them: REAL columns read as real, INTEGER as integer
                self.assertEqual(db.execute('SELECT typeof("execution_time(ms)"), typeof("start_time(ms)") '
                                            "FROM request LIMIT 1").fetchone(), ("real", "real"))
                self.assertEqual(db.execute("SELECT DISTINCT typeof(timestamp) FROM slice_data").fetchall(),
                                 [("integer",)])
            finally:
                db.close()
            self.assertEqual(sorted(f for f in os.listdir(out) if f.startswith("profiler")), ["profiler.db"])


def limit_files(size):
    def f():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return f


class WriteFailure(unittest.TestCase):
    def test_file_size_limit_only_profiler_db_reaches(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            make_input(inp, 200)
            os.makedirs(out)
            # every other output is far below 512 KiB; profiler.db has a 64 KiB page per table and more
            cmd = [os.environ["SERVPROF_BIN"], "parse", "--input-path", inp, "--output-path", out, "--no-progress"]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, preexec_fn=limit_files(512 * 1024))
            self.assertEqual(p.returncode, 1, p.stderr)
            errors = [line for line in p.stderr.splitlines() if ": error: " in line]
            self.assertEqual(len(errors), 1, p.stderr)
            self.assertRegex(errors[0], r"profiler\.db.*File too large.*profiler\.db is not written")
            self.assertFalse(os.path.exists(os.path.join(out, "profiler.db")))
            self.assertFalse(os.path.exists(os.path.join(out, "profiler.db.partial")))
            with open(os.path.join(out, "chrome_tracing.json")) as f:
                self.assertGreater(len(json.load(f)["traceEvents"]), 600)
            with open(os.path.join(out, "request.csv")) as f:
                self.assertEqual(len(f.readlines()), 201)


if __name__ == "__main__":
    unittest.main(verbosity=2)
