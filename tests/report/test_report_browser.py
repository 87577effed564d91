# SPDX-License-Identifier: Apache-2.0
"""test_report_browser.py — `servprof report` pages in a real browser.

Two short real demo runs (tiny-llm-server under Poisson load from
servprof-load, collection and the host sampler on): run A with the default
scheduler, run B with --max-num-seqs 2 (smaller batches, more queueing).
Then `servprof report` of A alone, and of A with --compare B, each opened
from disk in Debian's headless Chromium (tests/support/cdp.py; nothing is
installed at run time). For each page:

  - no console error, no uncaught exception, no failed load, and no request
    at all besides the page itself (everything is inlined);
  - every chart drew its data: coloured pixels in its plot area (grid and
    axes are grey), and a value in its legend once the cursor is on a point;
  - the charts the demo records are there (throughput, latency percentiles,
    engine budget, batch size, tokens, KV usage, queues, forwards, CPU and
    memory of the host sampler, the four CDFs), the findings as analyze
    ranked them, the TTFT breakdown, one phase bar per slowest request;
  - the time axes are linked (zooming one chart zooms every time chart;
    double-click resets all), the slowest-requests table sorts on a click;
  - with --compare: both runs' series in the charts, the compare table;
  - a screenshot, saved under the build's test-output/report/ folder.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from support import cdp  # noqa: E402
from support.demo_util import CLI, LOAD, SANITIZE, SLACK, SMALL_MODEL, Server  # noqa: E402

BUILD = os.environ.get("SERVPROF_BUILD", "build")
OUT = os.path.join(BUILD, "test-output", "report")
TIME_CHARTS = {"throughput", "ttft", "tpot", "e2e", "budget", "batch", "tokens", "kv", "queues", "forward",
               "cpu", "mem"}
CDF_CHARTS = {"cdf-ttft", "cdf-tpot", "cdf-e2e", "cdf-queue"}

# Per chart: coloured pixels in the plot area, and the legend's values with
# the cursor on a data point of the chart's first series that has one.
CHART_PROBE = r"""
(() => window.__servprof.charts.map(c => {
  const u = c.uplot, b = u.bbox;
  const d = u.ctx.getImageData(b.left, b.top, b.width, b.height).data;
  let coloured = 0;
  for (let i = 0; i < d.length; i += 4) {
    const mx = Math.max(d[i], d[i + 1], d[i + 2]), mn = Math.min(d[i], d[i + 1], d[i + 2]);
    if (d[i + 3] > 100 && mx - mn > 60) coloured++;
  }
  // Hover a point that has data, from the middle on, then from the start.
  // A pixel can hold several x values (two runs' windows side by side in a
  // comparison), and uPlot shows the one the pixel maps to, which may have
  // no value: so the next point with data is tried until the legend shows
  // one (at most 200 tries), and the legend is read at the last one.
  const xs = u.data[0], n = xs.length, from = Math.floor(n / 2);
  const read = () => [...u.root.querySelectorAll('.u-legend .u-series')].slice(1)
    .map(e => e.querySelector('.u-value').textContent);
  let legend = read(), tries = 0;
  for (let j = 0; j < n && tries < 200; j++) {
    const k = (from + j) % n;
    if (!u.data.slice(1).some(s => s[k] != null)) continue;
    tries++;
    u.setCursor({ left: u.valToPos(xs[k], 'x'), top: 5 });
    legend = read();
    if (legend.some(v => v !== '–' && v !== '')) break;
  }
  const labels = u.series.slice(1).map(s => s.label);
  return { id: c.id, kind: c.kind, points: c.points, coloured, legend, labels };
}))()
"""


def demo_run(name, server_args):
    """A short profiled run; returns the prof folder (raw stores)."""
    work = os.path.join(OUT, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cfg = os.path.join(work, "profiler.json")
    prof = os.path.join(work, "prof")
    with open(cfg, "w") as f:
        json.dump({"enable": 1, "prof_dir": prof, "profiler_level": "INFO", "host_system_usage_freq": 20}, f)
    if SANITIZE:
        model, load = SMALL_MODEL, ["--rate", "4", "--duration", "4", "--prompt-len", "24:96", "--output-len",
                                    "8:24", "--vocab", "1024"]
    else:
        model, load = [], ["--rate", "16", "--duration", "4", "--prompt-len", "64:256", "--output-len", "16:64",
                           "--vocab", "2048"]
    with Server(model + server_args, env={"SERVICE_PROF_CONFIG_PATH": cfg}, workdir=work) as srv:
        r = subprocess.run([LOAD, "--port", str(srv.port), *load, "--quiet", "--out", os.path.join(work, "client.csv")],
                           capture_output=True, text=True, timeout=120 * SLACK)
        if r.returncode != 0:
            raise AssertionError("servprof-load failed:\n" + r.stdout + r.stderr)
    stores = glob.glob(os.path.join(prof, "*", "Trace_Service", "ms_service_*.db"))
    if not stores:
        raise AssertionError("the run recorded no store:\n" + srv.output())
    return prof


class ReportInBrowser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not cdp.find_chromium():
            raise AssertionError("Chromium is not installed (Debian package chromium; scripts/install-deps.sh)")
        os.makedirs(OUT, exist_ok=True)
        cls.a = demo_run("run-a", [])
        cls.b = demo_run("run-b", ["--max-num-seqs", "2"])
        cls.page = os.path.join(OUT, "report.html")
        cls.cmp_page = os.path.join(OUT, "compare.html")
        for args in (["-i", cls.a, "-o", cls.page], ["-i", cls.a, "--compare", cls.b, "-o", cls.cmp_page]):
            r = subprocess.run([CLI, "report", *args], capture_output=True, text=True, timeout=300 * SLACK)
            if r.returncode != 0 or r.stderr:
                raise AssertionError(f"servprof report {args}: {r.returncode}\n{r.stdout}\n{r.stderr}")

    def open_page(self, browser, path):
        browser.open(path)
        browser.wait_for("window.__servprof && window.__servprof.ready", timeout=60)
        return json.loads(re.search(r'id="servprof-data">(.*?)</script>',
                                    open(path, encoding="utf-8").read(), re.S).group(1))

    def check_clean(self, browser):
        run = browser.run_report()
        self.assertEqual(run.console_errors, [])
        self.assertEqual(run.exceptions, [])
        self.assertEqual(run.failed_loads, [])
        self.assertEqual(run.requests, [], "the page asked for something: it must be self-contained")
        self.assertEqual(browser.evaluate("window.__servprof.errors"), [])

    def check_charts(self, browser, runs, expected=TIME_CHARTS | CDF_CHARTS, min_coloured=30):
        charts = {c["id"]: c for c in browser.evaluate(CHART_PROBE)}
        missing = expected - set(charts)
        self.assertEqual(missing, set(), f"charts not drawn: {missing}")
        for cid, c in charts.items():
            self.assertGreater(c["points"], 0, cid)
            self.assertGreater(c["coloured"], min_coloured, f"chart {cid} has no data drawn")
            values = [v for v in c["legend"] if v not in ("–", "")]
            self.assertTrue(values, f"chart {cid}: no legend value on hover: {c['legend']}")
            if runs == 2 and c["kind"] == "time" and cid not in ("cpu", "mem"):
                self.assertTrue(any(l.endswith("(B)") for l in c["labels"]), f"{cid}: no run B series {c['labels']}")
        return charts

    def check_linked_zoom(self, browser):
        # uPlot applies a new scale on its next commit (a microtask): wait a frame.
        ranges = browser.evaluate("""(async () => {
            const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
            const t = window.__servprof.charts.filter(c => c.kind === 'time').map(c => c.uplot);
            t[3].setScale('x', {min: 1, max: 2});
            await frame();
            const zoomed = t.map(u => [u.scales.x.min, u.scales.x.max]);
            t[5].over.dispatchEvent(new MouseEvent('dblclick', {bubbles: true}));
            await frame();
            const reset = t.map(u => [u.scales.x.min, u.scales.x.max]);
            return {zoomed, reset};
        })()""")
        for lo, hi in ranges["zoomed"]:
            self.assertAlmostEqual(lo, 1, places=6)
            self.assertAlmostEqual(hi, 2, places=6)
        ends = {hi for _, hi in ranges["reset"]}
        self.assertEqual({lo for lo, _ in ranges["reset"]}, {0})
        self.assertEqual(len(ends), 1, "after the reset the charts do not share one range")
        self.assertGreater(ends.pop(), 2)

    def check_table(self, browser, data):
        n = sum(len(r["db"]["slowest"]) for r in data["runs"])
        rows = browser.evaluate("document.querySelectorAll('#slowest tbody tr').length")
        self.assertEqual(rows, n)
        bars = browser.evaluate("[...document.querySelectorAll('#slowest tbody tr')]"
                                ".filter(tr => tr.querySelector('.bar span')).length")
        self.assertEqual(bars, n, "a slowest request without its phase bar")
        col = browser.evaluate("""(() => {
            const th = [...document.querySelectorAll('#slowest th')].find(t => t.dataset.key === 'ttft_ms');
            th.click();
            const i = [...th.parentNode.children].indexOf(th);
            return [...document.querySelectorAll('#slowest tbody tr')].map(tr => tr.children[i].textContent);
        })()""")
        values = [float(v.replace(",", "")) for v in col if v != "–"]
        self.assertGreater(len(values), 1)
        self.assertEqual(values, sorted(values, reverse=True), "not sorted by TTFT after a click")

    def check_analyze_parts(self, browser, data):
        findings = [f for r in data["runs"] for f in r["analyze"]["findings"]]
        self.assertEqual(browser.evaluate("document.querySelectorAll('ol.findings li').length"), len(findings))
        shown = browser.evaluate("document.getElementById('findings').textContent")
        for f in findings:
            self.assertIn(f["title"], shown)
        if not data["runs"][0]["analyze"]["findings"]:
            self.assertIn("no findings", shown)
        self.assertEqual(browser.evaluate("document.querySelectorAll('.verdict').length"), len(data["runs"]))
        self.assertGreaterEqual(browser.evaluate("document.querySelectorAll('#cards .card').length"), 8)
        # The four questions, answered with analyze's figures (one list item per run and question).
        glance = browser.evaluate("[...document.querySelectorAll('#glance li')].map(li => li.textContent)")
        self.assertEqual(len(glance), 4 * len(data["runs"]))
        h = data["runs"][0]["analyze"]["headline"]
        self.assertIn("Is the batch full?", glance[0])
        self.assertIn(f"{h['preemptions']} preemptions", glance[1])
        self.assertIn("Is the engine stalled or idle?", glance[3])
        self.assertNotIn("–", glance[3], "busy/stalled/idle missing")
        self.assertGreaterEqual(browser.evaluate("document.querySelectorAll('#breakdown-bars .bar span').length"), 3)

    def screenshot(self, browser, name):
        path = browser.screenshot(os.path.join(OUT, name))
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(path), 20000)

    def test_report(self):
        with cdp.Browser() as b:
            data = self.open_page(b, self.page)
            self.assertEqual(len(data["runs"]), 1)
            self.check_clean(b)
            self.check_charts(b, 1)
            self.check_analyze_parts(b, data)
            self.check_table(b, data)
            self.check_linked_zoom(b)
            self.check_clean(b)
            self.screenshot(b, "report.png")

    def test_sparse_page_with_device_samplers(self):
        """The parse tests' hand-made scenario: three requests, two engine
        processes, one GPU memory sample per device: sparse series are drawn as
        points, the device charts are there."""
        from support import scenario
        root = tempfile.mkdtemp(prefix="sp-report-scenario-")
        try:
            scenario.build(os.path.join(root, "raw"))
            page = os.path.join(OUT, "scenario.html")
            subprocess.run([CLI, "report", "-i", os.path.join(root, "raw"), "-o", page, "--quiet"], check=True,
                           capture_output=True, timeout=120 * SLACK)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        with cdp.Browser() as b:
            self.open_page(b, page)
            self.check_clean(b)
            self.check_charts(b, 1, {"gpumem", "gpuutil", "kv", "queues", "batch", "cpu", "mem"}, min_coloured=8)
            self.screenshot(b, "scenario.png")

    def test_page_with_an_empty_analyze_document(self):
        """An analyze document without any of the keys the page reads (an older or
        newer schema): the page still opens cleanly and draws the parser's rows."""
        empty = os.path.join(OUT, "empty-analyze.json")
        with open(empty, "w") as f:
            f.write("{}")
        page = os.path.join(OUT, "no-analyze.html")
        subprocess.run([CLI, "report", "-i", self.a, "-o", page, "--analyze-json", empty, "--quiet"], check=True,
                       capture_output=True, timeout=120 * SLACK)
        with cdp.Browser() as b:
            self.open_page(b, page)
            self.check_clean(b)
            self.check_charts(b, 1, {"batch", "tokens", "kv", "queues", "forward", "cpu", "mem"} | CDF_CHARTS)
            self.assertIn("needs analyze's windows", b.evaluate("document.getElementById('missing').textContent"))

    def test_compare(self):
        with cdp.Browser() as b:
            data = self.open_page(b, self.cmp_page)
            self.assertEqual([r["label"] for r in data["runs"]], ["A", "B"])
            self.assertIsNotNone(data["compare"], "no compare document")
            self.check_clean(b)
            self.check_charts(b, 2)
            self.check_analyze_parts(b, data)
            self.check_table(b, data)
            self.check_linked_zoom(b)
            rows = b.evaluate("document.querySelectorAll('#compare-table tbody tr').length")
            self.assertGreater(rows, 3)
            self.assertFalse(b.evaluate("document.getElementById('compare-sec').hidden"))
            self.assertIn("→", b.evaluate("document.getElementById('cards').textContent"))
            self.check_clean(b)
            self.screenshot(b, "compare.png")


if __name__ == "__main__":
    unittest.main()
