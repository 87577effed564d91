# SPDX-License-Identifier: Apache-2.0
"""test_output_nodes.py — outputs that exist and are not plain files survive.

Outputs are written to a temporary name and renamed over the path, so that
a full disk never leaves half a file. Renaming over a FIFO or a device
(`servprof report -o /dev/null` as root) would replace the node with a plain
file. The rule (common/fsutil.h, sp_output_target): a path that exists and is
not a regular file is written in place; a symlink is followed, so the link
stays a link and the file it points to gets the data. /dev/null itself is
never touched here: a FIFO made by the test, drained by a reader thread,
stands for it.

  - report -o FIFO: the FIFO is still a FIFO and got the whole page;
  - report -o LINK (to a file, and dangling): the link stays, its target
    holds the page, no .partial is left;
  - parse -o OUT with OUT/request.csv a FIFO and OUT/chrome_tracing.json a
    link: the CSV goes through the FIFO, the trace through the link;
    OUT/profiler.db a FIFO: left alone, one ERROR naming it, exit 1, the
    other outputs written;
  - a parse whose one pass would restart, into OUT/request.csv a FIFO: it
    starts in exact mode, so the FIFO gets the rows once;
  - parse -o OUT with OUT/profiler.db a link to a file elsewhere: the link
    stays, the file it names becomes the new database;
  - config init --force FIFO / LINK: the same rule;
  - analyze -o OUT with OUT/analyze.json a FIFO: the document goes through;
  - parse -o LINK where LINK is a dangling symlink: one error naming where
    it points, no summary, exit 1;
  - in a folder that others can write, a planted OUT/request.csv.partial
    symlink (the temp name is known) is never written through: the file it
    names is unchanged (in the user's own folder the user's links are
    followed, as the full-disk test of test_parse_dbout.py relies on);
  - report under umask 000 writes its page 0644, not 0666.
"""
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import tempfile
import threading
import unittest

from support import scenario  # noqa: E402
from support.fixtures import Store  # noqa: E402

BIN = os.environ["SERVPROF_BIN"]


def sp(*args):
    e = dict(os.environ)
    e.pop("SERVICE_PROF_CONFIG_PATH", None)
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120, env=e)


class FifoReader(threading.Thread):
    """Makes a FIFO at path and reads it to the end, as `cat FIFO` would."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.data = None
        os.mkfifo(path)
        self.start()

    def run(self):
        with open(self.path, "rb") as f:  # waits for the writer
            self.data = f.read()  # until the writer closes

    def finish(self):
        """The bytes read; None when no writer ever opened the FIFO."""
        if self.is_alive() and self.data is None and is_fifo(self.path):
            # No writer came: open it ourselves (the reader is waiting, so
            # this does not block) and close it, which ends the read.
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        self.join(30)
        return self.data


def is_fifo(path):
    return stat.S_ISFIFO(os.lstat(path).st_mode)


class OutputNodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="sp-out-nodes-")
        cls.raw = os.path.join(cls.work, "raw")
        scenario.build(cls.raw)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=self.work)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def test_report_into_a_fifo(self):
        fifo = self.path("page.fifo")
        reader = FifoReader(fifo)
        p = sp("report", "-i", self.raw, "-o", fifo, "--quiet")
        data = reader.finish()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(is_fifo(fifo), "the FIFO was replaced by a plain file")
        self.assertIsNotNone(data, "nothing was written into the FIFO")
        page = data.decode("utf-8")
        self.assertIn('<script type="application/json" id="servprof-data">', page)
        self.assertTrue(page.rstrip().endswith("</html>"), page[-200:])
        self.assertEqual(sorted(os.listdir(self.tmp)), ["page.fifo"])

    def test_report_through_a_symlink(self):
        os.mkdir(self.path("pages"))
        target = self.path("pages/run.html")
        with open(target, "w") as f:
            f.write("old page")
        link = self.path("latest.html")
        os.symlink(target, link)
        dangling = self.path("next.html")
        os.symlink(self.path("pages/next.html"), dangling)
        for lnk, dest in ((link, target), (dangling, self.path("pages/next.html"))):
            p = sp("report", "-i", self.raw, "-o", lnk, "--quiet")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(os.path.islink(lnk), "the link was replaced")
            with open(dest, encoding="utf-8") as f:
                self.assertIn('id="servprof-data"', f.read())
        self.assertEqual(sorted(os.listdir(self.path("pages"))), ["next.html", "run.html"])
        self.assertEqual(sorted(os.listdir(self.tmp)), ["latest.html", "next.html", "pages"])

    def test_parse_outputs(self):
        out = self.path("out")
        os.mkdir(out)
        reader = FifoReader(os.path.join(out, "request.csv"))
        os.mkfifo(os.path.join(out, "profiler.db"))  # nobody reads it: it must not be opened
        trace = self.path("trace.json")
        os.symlink(trace, os.path.join(out, "chrome_tracing.json"))
        p = sp("parse", "-i", self.raw, "-o", out, "--quiet")
        data = reader.finish()
        self.assertEqual(p.returncode, 1, p.stderr)  # profiler.db not written
        self.assertIn("profiler.db", p.stderr)
        self.assertIn("not a regular file", p.stderr)
        self.assertTrue(is_fifo(os.path.join(out, "request.csv")))
        self.assertTrue(is_fifo(os.path.join(out, "profiler.db")))
        self.assertIsNotNone(data, "request.csv was not written into the FIFO")
        self.assertTrue(data.decode().startswith("http_rid,"), data[:200])
        self.assertGreater(data.count(b"\n"), 1)
        self.assertTrue(os.path.islink(os.path.join(out, "chrome_tracing.json")))
        with open(trace) as f:
            self.assertEqual(json.load(f)[0]["name"], "servprof_trace")  # the array form
        self.assertTrue(os.path.isfile(os.path.join(out, "batch.csv")))
        self.assertEqual([n for n in os.listdir(out) if n.endswith(".partial")], [])

    def test_parse_into_a_dangling_folder_link(self):
        out = self.path("out")
        os.symlink(self.path("nowhere/out"), out)
        p = sp("parse", "-i", self.raw, "-o", out, "--no-progress")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("is a symbolic link to " + self.path("nowhere/out"), p.stderr)
        self.assertEqual(p.stdout, "")  # no summary of outputs that were never written

    def test_planted_partial_link_is_not_followed(self):
        out = self.path("out")
        os.mkdir(out)
        os.chmod(out, 0o777)  # a shared folder: anyone could have planted the link
        victim = self.path("victim")
        with open(victim, "w") as f:
            f.write("someone's file\n")
        os.symlink(victim, os.path.join(out, "request.csv.partial"))
        p = sp("parse", "-i", self.raw, "-o", out, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(victim) as f:
            self.assertEqual(f.read(), "someone's file\n")
        req = os.path.join(out, "request.csv")
        self.assertFalse(os.path.islink(req))
        with open(req) as f:
            self.assertTrue(f.read().startswith("http_rid,"))

    def test_report_page_mode_under_umask_000(self):
        page = self.path("page.html")
        e = dict(os.environ)
        e.pop("SERVICE_PROF_CONFIG_PATH", None)
        p = subprocess.run([BIN, "report", "-i", self.raw, "-o", page, "--quiet"],
                           capture_output=True, text=True, timeout=120, env=e,
                           preexec_fn=lambda: os.umask(0))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(page).st_mode), 0o644)

    def test_parse_that_would_restart_into_a_fifo(self):
        # A span over the whole run inserted last, after more rows than one pass sizes its
        # window from: a parse into plain files runs once, is abandoned and runs again in
        # exact mode. A FIFO cannot take back what the first run wrote (its reader would get
        # the rows twice, or, like `cat`, end at the first close and leave the second run
        # blocked), so a parse with an output written in place starts in exact mode.
        raw = self.path("late")
        scenario.build(raw)
        s = Store(os.path.join(raw, "hostA", "Trace_Service", "ms_service_hostA-400.db"), "hostA", 400)
        s.db.execute("BEGIN")
        for i in range(17000):
            s.event("tick", i, "Misc")
        s.span("serverLifetime", -1, 17001, "Service")
        s.close()
        plain = self.path("late-plain")
        p = sp("parse", "-i", raw, "-o", plain, "--quiet", "--log-level", "info")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("parsing again", p.stderr)  # the input does make a one-pass parse restart
        with open(os.path.join(plain, "request.csv"), "rb") as f:
            expected = f.read()
        out = self.path("late-out")
        os.mkdir(out)
        reader = FifoReader(os.path.join(out, "request.csv"))
        e = dict(os.environ)
        e.pop("SERVICE_PROF_CONFIG_PATH", None)
        try:
            p = subprocess.run([BIN, "parse", "-i", raw, "-o", out, "--quiet", "--log-level", "info"],
                               capture_output=True, text=True, timeout=60, env=e)
        except subprocess.TimeoutExpired:
            self.fail("the parse blocked on the FIFO (a second run opened it after its reader had ended)")
        data = reader.finish()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("parsing again", p.stderr)
        self.assertIn(os.path.join(out, "request.csv") + " is written in place", p.stderr)
        self.assertEqual(data, expected)
        self.assertTrue(is_fifo(os.path.join(out, "request.csv")))

    def test_parse_db_through_a_symlink(self):
        out = self.path("out-db")
        os.mkdir(out)
        elsewhere = self.path("kept")
        os.mkdir(elsewhere)
        target = os.path.join(elsewhere, "run.db")
        with open(target, "w") as f:
            f.write("an older file the link points at")
        link = os.path.join(out, "profiler.db")
        os.symlink(target, link)
        p = sp("parse", "-i", self.raw, "-o", out, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.islink(link), "the link was replaced")
        with sqlite3.connect("file:%s?mode=ro" % target, uri=True) as db:
            n = db.execute("SELECT count(*) FROM request").fetchone()[0]
        self.assertGreater(n, 0)
        for d in (out, elsewhere):
            self.assertEqual([n for n in os.listdir(d) if n.endswith(".partial")], [], d)

    def test_config_init(self):
        fifo = self.path("c.fifo")
        reader = FifoReader(fifo)
        p = sp("config", "init", "--force", fifo)
        data = reader.finish()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(is_fifo(fifo))
        self.assertIn("enable", json.loads(data))
        target, link = self.path("real.json"), self.path("link.json")
        with open(target, "w") as f:
            f.write("{}")
        os.symlink(target, link)
        p = sp("config", "init", "--force", link)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.islink(link))
        with open(target) as f:
            self.assertIn("enable", json.load(f))

    def test_analyze_outputs(self):
        out = self.path("an")
        os.mkdir(out)
        reader = FifoReader(os.path.join(out, "analyze.json"))
        p = sp("analyze", "-i", self.raw, "-o", out, "--findings-only")
        data = reader.finish()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(is_fifo(os.path.join(out, "analyze.json")))
        self.assertIn("findings", json.loads(data))


if __name__ == "__main__":
    unittest.main()
