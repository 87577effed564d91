# SPDX-License-Identifier: Apache-2.0
"""profiler.db written page by page (tool/parse/out/btwrite.c), seen from the
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
import tempfile
import unittest

from support.fixtures import Store, run_parse  # noqa: E402


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


def parse_limited(inp, out, *extra):
    """servprof parse with files limited to 512 KiB (SIGXFSZ ignored: writes fail with EFBIG)."""
    os.makedirs(out)
    cmd = [os.environ["SERVPROF_BIN"], "parse", "--input-path", inp, "--output-path", out, "--no-progress", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, preexec_fn=limit_files(512 * 1024))


class WriteFailure(unittest.TestCase):
    def test_file_size_limit_only_profiler_db_reaches(self):
        # both writers: the page writer's own message, SQLite's through dbsql.c
        # with the encoders on threads (--jobs 2, wqueue.c): the same one message and status
        for writer, says in (("pages", r"File too large"), ("sqlite", r"failed: .+")):
            for jobs in ("1", "2"):
                with self.subTest(writer=writer, jobs=jobs):
                    self.file_size_limit(writer, says, jobs)

    def file_size_limit(self, writer, says, jobs):
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            make_input(inp, 200)
            # every other output is far below 512 KiB; profiler.db has a 64 KiB page per table and more
            p = parse_limited(inp, out, "--db-writer", writer, "--jobs", jobs)
            self.assertEqual(p.returncode, 1, p.stderr)
            errors = [line for line in p.stderr.splitlines() if ": error: " in line]
            self.assertEqual(len(errors), 1, p.stderr)
            self.assertRegex(errors[0], r"profiler\.db.*" + says + r".*profiler\.db is not written")
            self.assertFalse(os.path.exists(os.path.join(out, "profiler.db")))
            self.assertFalse(os.path.exists(os.path.join(out, "profiler.db.partial")))
            with open(os.path.join(out, "chrome_tracing.json")) as f:
                self.assertGreater(len(json.load(f)), 600)
            with open(os.path.join(out, "request.csv")) as f:
                self.assertEqual(len(f.readlines()), 201)


def dump(path):
    db = sqlite3.connect(path)
    try:
        return list(db.iterdump()), db.execute("PRAGMA page_size").fetchone()[0]
    finally:
        db.close()


class SqliteWriter(unittest.TestCase):
    """`--db-writer sqlite` / SERVPROF_PARSE_DB_WRITER=sqlite: SQLite's own
    INSERT (tool/parse/out/dbsql.c) makes the same database as the page writer,
    and the other outputs do not change (its write failure: WriteFailure)."""

    def test_same_database_both_writers(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp = os.path.join(tmp, "in")
            make_input(inp, 1500)
            outs = {w: os.path.join(tmp, w) for w in ("pages", "option", "env")}
            run_parse(inp, outs["pages"])
            run_parse(inp, outs["option"], "--db-writer=sqlite")
            env = dict(os.environ, SERVPROF_PARSE_DB_WRITER="sqlite")
            p = subprocess.run([os.environ["SERVPROF_BIN"], "parse", "-i", inp, "-o", outs["env"], "--no-progress"],
                               capture_output=True, text=True, timeout=600, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            ref, ref_page = dump(os.path.join(outs["pages"], "profiler.db"))
            self.assertGreater(len(ref), 4500)
            for w in ("option", "env"):
                got, page = dump(os.path.join(outs[w], "profiler.db"))
                self.assertEqual(got, ref, w)
                self.assertEqual(page, 65536)
                self.assertEqual(sorted(os.listdir(outs[w])), sorted(os.listdir(outs["pages"])))
                for f in os.listdir(outs["pages"]):
                    if f != "profiler.db" and os.path.isfile(os.path.join(outs["pages"], f)):
                        with open(os.path.join(outs["pages"], f), "rb") as a, open(os.path.join(outs[w], f), "rb") as b:
                            self.assertEqual(a.read(), b.read(), f)
            self.assertEqual(ref_page, 65536)

    def test_bad_writer_name(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = run_parse(tmp, os.path.join(tmp, "out"), "--db-writer", "fast", check=False)
            self.assertEqual(p.returncode, 2)
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertIn("--db-writer", lines[0])
            self.assertIn("sqlite", lines[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
