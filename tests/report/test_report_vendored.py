# SPDX-License-Identifier: Apache-2.0
"""test_report_vendored.py — every build has a working `servprof report`.

uPlot (the page's charting library, MIT) is vendored in
tool/report/vendor/uplot with its LICENSE, a VERSION file and SHA256SUMS;
the build embeds it always (there is no build without it, and no
node_modules is looked for). This test proves, on the build under test:
  - the vendored files match SHA256SUMS (scripts/refresh-uplot.sh --check,
    no network), and the checkout has no npm manifest left to install;
  - `servprof report` on a real raw store exits 0 and its page carries the
    vendored uPlot byte for byte, its licence, and the version VERSION names.
On a build that embedded nothing (the old node_modules path) the report
refused to run and this test failed.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
from support import scenario  # noqa: E402

CLI = os.environ.get("SERVPROF_BIN", "build/bin/servprof")
SOURCE = os.environ.get("SERVPROF_SOURCE", os.path.join(HERE, "..", ".."))
VENDOR = os.path.join(SOURCE, "tool", "report", "vendor", "uplot")


class Vendored(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="sp-report-vendored-")

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def test_vendored_files_match_their_hashes(self):
        for f in ("uPlot.iife.min.js", "uPlot.min.css", "LICENSE", "VERSION", "SHA256SUMS"):
            self.assertTrue(os.path.isfile(os.path.join(VENDOR, f)), f)
        p = subprocess.run([os.path.join(SOURCE, "scripts", "refresh-uplot.sh"), "--check"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(VENDOR, "VERSION")) as f:
            v = f.read()
        self.assertRegex(v, r"(?m)^license: MIT$")
        self.assertRegex(v, r"(?m)^integrity: sha512-")

    def test_report_embeds_the_vendored_uplot(self):
        raw = os.path.join(self.work, "raw")
        scenario.build(raw)
        page = os.path.join(self.work, "page.html")
        p = subprocess.run([CLI, "report", "-i", raw, "-o", page, "--quiet"], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        with open(os.path.join(VENDOR, "uPlot.iife.min.js"), encoding="utf-8") as f:
            self.assertIn(f.read().strip(), html)
        with open(os.path.join(VENDOR, "LICENSE"), encoding="utf-8") as f:
            self.assertIn("Leon Sorokin", f.read())
        self.assertIn("Leon Sorokin", html)
        with open(os.path.join(VENDOR, "VERSION")) as f:
            version = re.search(r"(?m)^version: (\S+)$", f.read()).group(1)
        self.assertIn('"uplot":"%s"' % version, html)


if __name__ == "__main__":
    unittest.main()
