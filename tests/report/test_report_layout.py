# SPDX-License-Identifier: Apache-2.0
"""test_report_layout.py — the --compare page laid out at 1,000 and 1,400 px,
in Debian's headless Chromium (tests/support/cdp.py), on the parse tests'
hand-made scenario (no demo server needed):

  - no headline tile clips its text (in compare mode a tile holds "A → B"):
    no tile, and nothing in one, is wider than its box;
  - the compare table and the slowest requests' table fit the page: they
    do not scroll sideways (on the compare page and on a one-run page);
  - in "Batch size per step" (and "Scheduled tokens per step") the total
    series is drawn last and wider, so a decode series equal to it cannot
    hide it;
  - the page still opens cleanly (no console error, nothing fetched).
"""
import os
import shutil
import subprocess
import tempfile
import unittest

from support import cdp  # noqa: E402
from support import scenario  # noqa: E402

CLI = os.environ.get("SERVPROF_BIN", "build/bin/servprof")

LAYOUT = r"""(() => {
  const over = el => el.scrollWidth > el.clientWidth + 1;
  const clipped = [...document.querySelectorAll('#cards .card')]
    .filter(c => over(c) || [...c.querySelectorAll('*')].some(over)).map(c => c.textContent);
  const wrap = id => { const t = document.getElementById(id); const w = t && t.closest('.tablewrap');
                      return w && !w.closest('[hidden]') ? [w.scrollWidth, w.clientWidth, t.rows.length] : null; };
  return {cards: document.querySelectorAll('#cards .card').length, clipped,
          table: wrap('compare-table'), slowest: wrap('slowest'),
          page: [document.documentElement.scrollWidth, innerWidth]};
})()"""

SERIES = r"""(() => window.__servprof.charts.filter(c => c.id === 'batch' || c.id === 'tokens').map(c => ({
  id: c.id, series: c.uplot.series.slice(1).map(s => [s.label, s.width])})))()"""


class Layout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not cdp.find_chromium():
            raise AssertionError("Chromium is not installed (Debian package chromium; scripts/install-deps.sh)")
        cls.tmp = tempfile.mkdtemp(prefix="sp-report-layout-")
        for run in ("a", "b"):
            scenario.build(os.path.join(cls.tmp, run))
        cls.page = os.path.join(cls.tmp, "compare.html")
        subprocess.run([CLI, "report", os.path.join(cls.tmp, "a"), "--compare", os.path.join(cls.tmp, "b"),
                        "-o", cls.page, "--quiet"], check=True, capture_output=True, timeout=300)
        cls.single = os.path.join(cls.tmp, "single.html")
        subprocess.run([CLI, "report", os.path.join(cls.tmp, "a"), "-o", cls.single, "--quiet"], check=True,
                       capture_output=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_compare_page_at_1000_and_1400_px(self):
        for width in (1000, 1400):
            with self.subTest(width=width), cdp.Browser(width=width) as b:
                b.open(self.page)
                b.wait_for("window.__servprof && window.__servprof.ready", timeout=60)
                run = b.run_report()
                self.assertEqual(run.console_errors, [])
                self.assertEqual(run.exceptions, [])
                self.assertEqual(run.requests, [])
                got = b.evaluate(LAYOUT)
                self.assertGreaterEqual(got["cards"], 8)
                self.assertEqual(got["clipped"], [], "tiles clip their text at %d px" % width)
                self.assertLessEqual(got["table"][0], got["table"][1], "the compare table scrolls sideways")
                self.assertGreater(got["slowest"][2], 1)
                self.assertLessEqual(got["slowest"][0], got["slowest"][1],
                                     "the slowest requests' table scrolls sideways at %d px" % width)
                self.assertLessEqual(got["page"][0], got["page"][1], "the page scrolls sideways")
                for chart in b.evaluate(SERIES):
                    labels = [s[0] for s in chart["series"]]
                    total = "batch size" if chart["id"] == "batch" else "total"
                    is_total = [l.startswith(total) for l in labels]
                    self.assertTrue(any(is_total), (chart["id"], labels))
                    first = is_total.index(True)
                    self.assertTrue(all(is_total[first:]), "%s: the total is not drawn last: %s" % (chart["id"], labels))
                    widths = {s[1] for s in chart["series"] if s[0].startswith(total)}
                    others = {s[1] for s in chart["series"] if not s[0].startswith(total)}
                    self.assertGreater(min(widths), max(others), chart)

    def test_one_run_page_at_1000_and_1400_px(self):
        for width in (1000, 1400):
            with self.subTest(width=width), cdp.Browser(width=width) as b:
                b.open(self.single)
                b.wait_for("window.__servprof && window.__servprof.ready", timeout=60)
                got = b.evaluate(LAYOUT)
                self.assertIsNone(got["table"])  # no compare table on a one-run page
                self.assertGreater(got["slowest"][2], 1)
                self.assertLessEqual(got["slowest"][0], got["slowest"][1],
                                     "the slowest requests' table scrolls sideways at %d px" % width)
                self.assertLessEqual(got["page"][0], got["page"][1], "the page scrolls sideways")


if __name__ == "__main__":
    unittest.main()
