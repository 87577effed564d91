# SPDX-License-Identifier: Apache-2.0
"""test_report_from.py — `servprof report --from clickhouse://` draws the
same page as `servprof report` on the same stores, on a 2-shard cluster
started by chlib.py.

A real demo run (tiny-llm-server under Poisson load, collection and the
host sampler on) is exported into the cluster. Then:

  - the page's embedded data equals the local report's: every chart series,
    counter, CDF, forward and the slowest requests with their TTFT parts
    (analyze's breakdown, computed from ClickHouse as locally); analyze's
    document equals the local one but for the keys test_analyze_from.py
    lists as honestly different (the input's name, its source, the parse's
    own data-quality counts);
  - the page opens in Chromium with no error and draws the same charts, with
    as many points, as the local page;
  - --host keeps one host's rows (equal to the local report of that host's
    stores alone), --session an export's; bad input gives one line and a
    non-zero exit.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import chlib  # noqa: E402
from support import servelike  # noqa: E402
from test_analyze_from import demo_run, diff  # noqa: E402
from test_export import BIN, build_fleet, env, export  # noqa: E402


def page_data(path):
    with open(path, encoding="utf-8") as f:
        return json.loads(re.search(r'id="servprof-data">(.*?)</script>', f.read(), re.S).group(1))


def report(*args, check=True):
    p = subprocess.run([BIN, "report", "--quiet", *args], env=env(), capture_output=True, text=True,
                       timeout=300 * chlib.SLACK)
    if check and p.returncode != 0:
        raise AssertionError("servprof report %s failed (%d):\n%s%s" % (args, p.returncode, p.stdout, p.stderr))
    return p


class ReportFrom(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not chlib.available():
            raise unittest.SkipTest("clickhouse-server is not installed")
        cls.tmp = tempfile.mkdtemp(prefix="sp-ch-rep-")
        cls.cluster = chlib.Cluster(2, "two", os.path.join(cls.tmp, "ch")).start()
        try:
            cls.prof = demo_run(os.path.join(cls.tmp, "demo"), sampler_hz=20)
            if cls.prof is None:  # the demo is not built: the parse tests' serving run
                cls.prof = os.path.join(cls.tmp, "serve")
                servelike.build(cls.prof)
            cls.put(cls.prof, "demo")
            cls.local = os.path.join(cls.tmp, "local.html")
            cls.remote = os.path.join(cls.tmp, "out", "from.html")  # its folder is made
            report(cls.prof, "-o", cls.local)
            report("--from", cls.url("demo"), "-o", cls.remote)
        except BaseException:
            cls.cluster.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def url(cls, db):
        return cls.cluster.nodes[0].url(db)

    @classmethod
    def put(cls, inp, db, *extra):
        export(inp, cls.url(db), "--create", "--cluster", "two", "--nodes", cls.cluster.node_urls(db), *extra)

    def assert_same_page(self, got, want):
        g, w = got["runs"][0], want["runs"][0]
        self.assertEqual(g["db"], w["db"])
        for q in g["db"]["slowest"]:
            self.assertEqual(q["parts_from"], "analyze")
        self.assertEqual(diff(g["analyze"], w["analyze"]), [])
        self.assertEqual(g["analyze"]["source"], "clickhouse")
        self.assertNotIn("not_covered", g["analyze"])

    def test_data_equals_local_report(self):
        got, want = page_data(self.remote), page_data(self.local)
        self.assert_same_page(got, want)
        self.assertEqual(got["runs"][0]["input"], "clickhouse://127.0.0.1:%d/demo" % self.cluster.nodes[0].http_port)
        self.assertGreater(got["runs"][0]["db"]["requests"], 0)
        # the chart data is not trivially empty: series and the slowest table carry values
        self.assertTrue(got["runs"][0]["db"]["slowest"])
        self.assertTrue(got["runs"][0]["db"]["steps"])
        if "demo" in self.prof:  # the host sampler's counters came through the export's counter table
            self.assertTrue(got["runs"][0]["db"]["counters"])

    def test_page_renders_like_the_local_one(self):
        from support import cdp
        if not cdp.find_chromium():
            raise AssertionError("Chromium is not installed (Debian package chromium; scripts/install-deps.sh)")
        probe = "window.__servprof.charts.map(c => [c.id, c.points])"
        seen = {}
        for page in (self.local, self.remote):
            with cdp.Browser() as b:
                b.open(page)
                b.wait_for("window.__servprof && window.__servprof.ready", timeout=60)
                run = b.run_report()
                self.assertEqual(run.console_errors, [], page)
                self.assertEqual(run.exceptions, [], page)
                self.assertEqual(run.failed_loads, [], page)
                self.assertEqual(b.evaluate("window.__servprof.errors"), [], page)
                seen[page] = dict(b.evaluate(probe))
                if page == self.remote:  # nothing is left out, so the page names nothing missing
                    note = b.evaluate("(document.getElementById('not-covered') || {}).textContent || ''")
                    self.assertEqual(note, "")
        # every chart the local page draws is drawn here with as many points
        local, remote = seen[self.local], seen[self.remote]
        self.assertTrue(remote, "no chart drawn")
        self.assertEqual(remote, local)

    def test_host_and_session(self):
        inp = os.path.join(self.tmp, "fleet")
        build_fleet(inp)
        self.put(inp, "fleet")
        stores = os.path.join(inp, "Trace_Service")
        alone = os.path.join(self.tmp, "alone-node1", "Trace_Service")
        os.makedirs(alone)
        for f in os.listdir(stores):
            if f.startswith("ms_service_node1-"):
                shutil.copy(os.path.join(stores, f), alone)
        want = os.path.join(self.tmp, "alone.html")
        got = os.path.join(self.tmp, "host.html")
        report(os.path.dirname(alone), "-o", want)
        report("--from", self.url("fleet"), "--host", "node1", "-o", got)
        g, w = page_data(got)["runs"][0], page_data(want)["runs"][0]
        self.assertEqual(g["db"]["requests"], w["db"]["requests"])
        self.assertEqual(g["db"]["slowest"], w["db"]["slowest"])
        self.assertEqual(g["analyze"]["headline"]["requests"], w["analyze"]["headline"]["requests"])
        p = report("--from", self.url("fleet"), "--session", "0000-0000", "-o", got, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no export of session '0000-0000'", p.stderr)

    def test_bad_input(self):
        out = os.path.join(self.tmp, "bad.html")
        p = report("--from", self.url("nothing"), "-o", out, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("export a run into it first", p.stderr)
        self.assertFalse(os.path.exists(out))
        p = report("--from", "http://127.0.0.1:1/x", "-o", out, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("expected clickhouse://", p.stderr)
        p = report(self.prof, "--from", self.url("demo"), "-o", out, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("one input only", p.stderr)
        p = report("--from", self.url("demo"), "--compare", self.prof, "-o", out, check=False)
        self.assertEqual(p.returncode, 2)
        p = report(self.prof, "--host", "x", "-o", out, check=False)
        self.assertEqual(p.returncode, 2)
        p = report("--from", "clickhouse://127.0.0.1:%d/demo" % chlib.free_port(), "-o", out, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("connect", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


if __name__ == "__main__":
    chlib.main()
