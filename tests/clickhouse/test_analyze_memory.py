# SPDX-License-Identifier: Apache-2.0
"""test_analyze_memory.py — `analyze --from` (and `report --from`) holds a
bounded memory per query, so a server with a small per-query limit (max_memory_usage) still
answers it, and the document still equals local analyze's (issue #30).

The input is bench_fleet.py's --big shape (16 hosts, 11 decode steps)
at 50,000 requests: 1,050,288 records. The export runs under chlib's usual
limit (2 GB); then the node restarts with max_memory_usage = 120 MB for
analyze --from. Measured in system.query_log on this input: before the
fix the batch rows' ORDER BY took 142 MB (and the span percentiles'
groupArray 17.6 MB per million records), so the old queries are refused
(code 241); with the spill settings analyze --from sends and the span
histogram, the largest takes 94 MB. A limit the queries cannot fit must
give one message naming max_memory_usage.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import chlib  # noqa: E402
from test_analyze_from import DIFFERENT, diff, from_analyze, local_analyze  # noqa: E402
from test_export import BIN, env, export  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from bench_fleet import build  # noqa: E402

SMALL = 120_000_000


def restart_with(node, **settings):
    node.stop()
    node.settings.update(settings)
    node.write_config(node.clusters)
    node.start()


class AnalyzeMemory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        chlib.require(cls)
        cls.tmp = tempfile.TemporaryDirectory(prefix="sp-chmem-")
        cls.inp, cls.nrec = build(cls.tmp.name, 16, 50_000 // 16, tokens=11)
        cls.cluster = chlib.single(os.path.join(cls.tmp.name, "ch")).start()
        cls.node = cls.cluster.nodes[0]
        export(cls.inp, cls.node.url("mem"), "--create")
        cls.want = local_analyze(cls.inp)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        cls.tmp.cleanup()

    def test_small_limit_same_document(self):
        restart_with(self.node, max_memory_usage=SMALL)
        self.assertEqual(self.node.scalar("SELECT value FROM system.settings WHERE name = 'max_memory_usage'"),
                         str(SMALL))
        got = json.loads(from_analyze(self.node.url("mem")).stdout)
        self.assertEqual(got["run"]["records"], self.nrec)
        self.assertEqual(diff(got, self.want), [], "keys that differ: %s" % sorted(DIFFERENT))

    def test_small_limit_report(self):
        """report --from streams every report row back, sorted: the same
        spill settings must reach its reader (tool/export/chread.c)."""
        restart_with(self.node, max_memory_usage=SMALL)
        out = os.path.join(self.tmp.name, "report.html")
        p = subprocess.run([BIN, "report", "--from", self.node.url("mem"), "-o", out, "--quiet"], env=env(),
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, encoding="utf-8") as f:
            self.assertIn("<html", f.read(4096).lower())

    def test_too_small_names_the_setting(self):
        restart_with(self.node, max_memory_usage=8_000_000)
        p = from_analyze(self.node.url("mem"), check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("code 241", p.stderr)
        self.assertIn("max_memory_usage", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


if __name__ == "__main__":
    chlib.main()
