# SPDX-License-Identifier: Apache-2.0
"""test_cli_habits.py — the habits a first-time user expects of every verb
that reads stores (issue "first use without a stumble"), on real stores:

  - `servprof report DIR` takes its input as the argument, as parse and
    analyze do (and two inputs are one usage line, status 2);
  - `parse --format csv,json` takes a comma list as well as repeated values
    (and names the bad piece of a list, status 2);
  - `report -o a/b/x.html` creates the missing folders, as parse does;
  - `analyze` of a session whose store holds 0 records gives the answer
    parse + analyze give ("no requests or steps"), status 0, not 1;
  - analyze and report show parse's progress bar (--progress; never on a
    pipe unless asked);
  - parse, analyze and report write nothing into the session folder they
    read: a closed WAL-mode store gets no -shm/-wal; a store whose -wal
    still holds committed rows (a live writer) is read with those rows.
"""
import glob
import os
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

from support import scenario  # noqa: E402
from support.fixtures import Store, ns  # noqa: E402

BIN = os.environ["SERVPROF_BIN"]


def sp(*args):
    e = dict(os.environ)
    e.pop("SERVICE_PROF_CONFIG_PATH", None)
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300, env=e)


def to_wal(folder):
    for f in glob.glob(os.path.join(folder, "**", "*.db"), recursive=True):
        c = sqlite3.connect(f)
        assert c.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        c.close()


def side_files(folder):
    return sorted(os.path.relpath(f, folder) for f in glob.glob(os.path.join(folder, "**", "*"), recursive=True)
                  if f.endswith(("-shm", "-wal", "-journal")))


class Habits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="sp-cli-habits-")
        cls.raw = os.path.join(cls.work, "raw")
        scenario.build(cls.raw)
        to_wal(cls.raw)  # as the recorder leaves them: WAL mode, closed

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def out(self, *parts):
        return os.path.join(self.work, *parts)

    def test_report_takes_the_input_as_argument(self):
        page = self.out("positional.html")
        p = sp("report", self.raw, "-o", page, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.getsize(page) > 10000)
        p = sp("report", self.raw, self.raw, "-o", page)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("one input only", p.stderr)
        self.assertIn("[-i|--input-path] DIR", sp("report", "--help").stdout)

    def test_parse_format_comma_list(self):
        out = self.out("comma")
        p = sp("parse", self.raw, "-o", out, "--format", "csv,json", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "request.csv")))
        self.assertTrue(os.path.exists(os.path.join(out, "chrome_tracing.json")))
        self.assertFalse(os.path.exists(os.path.join(out, "profiler.db")))
        out2 = self.out("comma2")
        p = sp("parse", self.raw, "-o", out2, "--format=db,csv", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(out2, "profiler.db")))
        self.assertFalse(os.path.exists(os.path.join(out2, "chrome_tracing.json")))
        p = sp("parse", self.raw, "-o", self.out("comma3"), "--format", "csv,xml")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("'xml' is not one of: csv, json, db", p.stderr)
        self.assertFalse(os.path.exists(self.out("comma3")))

    def test_report_creates_the_output_folder(self):
        page = self.out("no", "such", "dir", "x.html")
        p = sp("report", "-i", self.raw, "-o", page, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isfile(page))
        self.assertEqual(os.listdir(os.path.dirname(page)), ["x.html"])  # no .partial left
        # a folder that cannot be made: one message, before any parse
        blocker = self.out("afile")
        with open(blocker, "w") as f:
            f.write("x")
        p = sp("report", "-i", self.raw, "-o", os.path.join(blocker, "x.html"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot create the folder", p.stderr)

    def test_analyze_of_an_empty_session_is_an_answer(self):
        empty = self.out("empty")
        s = Store(os.path.join(empty, "ms_service_h-1.db"), "h", 1, wal=True)
        s.close()
        p = sp("analyze", empty)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("no requests or steps", p.stdout)
        parsed = self.out("empty_out")
        self.assertEqual(sp("parse", empty, "-o", parsed, "--quiet").returncode, 0)
        q = sp("analyze", parsed)
        self.assertEqual(q.returncode, 0, q.stderr)
        verdict = [l for l in p.stdout.splitlines() if l.startswith("Verdict")]
        self.assertEqual(verdict, [l for l in q.stdout.splitlines() if l.startswith("Verdict")])
        # an unknown figure reads "-", as the tables print it, never "nan"
        for out in (p.stdout, q.stdout):
            self.assertNotRegex(out, r"(?i)\bnan\b", out)
            self.assertIn("mean batch -; KV peak -;", out)
        # a folder with no store at all is still an error
        os.makedirs(self.out("nothing"), exist_ok=True)
        self.assertEqual(sp("analyze", self.out("nothing")).returncode, 1)

    def test_progress_on_analyze_and_report(self):
        big = self.out("big")
        s = Store(os.path.join(big, "ms_service_big-1.db"), "big", 1)
        rows = [(ns(i * 0.01), 0, "tick", 0, 1, "Other", '{"type":0}', ns(i * 0.01), 1, 1) for i in range(70000)]
        s.db.executemany("INSERT INTO slice(timestamp, duration, name, depth, track_id, cat, args, end_time, pid,"
                         " tid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        s.close()
        bar = r"\[#+\.*\]\s+\d+%\s+\d+ records"
        p = sp("analyze", big, "--progress")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, bar)
        p = sp("report", big, "-o", self.out("big.html"), "--progress", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, bar)
        for args in (["analyze", big], ["report", big, "-o", self.out("big2.html")]):
            p = sp(*args)  # stderr is a pipe: no bar unless asked
            self.assertNotRegex(p.stderr, r"\[#+", args)

    def test_reading_writes_nothing_beside_closed_stores(self):
        self.assertEqual(side_files(self.raw), [])
        sp("parse", self.raw, "-o", self.out("ro_parse"), "--quiet")
        self.assertEqual(side_files(self.raw), [], "parse")
        sp("analyze", self.raw)
        self.assertEqual(side_files(self.raw), [], "analyze")
        sp("report", self.raw, "-o", self.out("ro.html"), "--quiet")
        self.assertEqual(side_files(self.raw), [], "report")

    def test_a_live_wal_is_read(self):
        live = self.out("live")
        s = Store(os.path.join(live, "ms_service_live-1.db"), "live", 1, wal=True)
        s.db.execute("PRAGMA wal_autocheckpoint=0")
        s.span("forward", 1, 2, cat="ModelExecute")
        s.span("forward", 3, 4, cat="ModelExecute")
        s.commit()  # committed into the -wal only; the writer stays open
        try:
            self.assertTrue(os.path.getsize(s.path + "-wal") > 0)
            out = self.out("live_out")
            p = sp("parse", live, "-o", out, "--format", "csv")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("2 records", p.stdout)
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main()
