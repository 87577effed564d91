# SPDX-License-Identifier: Apache-2.0
"""dashboards/grafana-profiler.json: every panel's SQL, with Grafana's
time-range macros set to the run's own range (as a user who sets the
dashboard to the run sees it), returns rows whose time columns fall in that
range and whose values are numbers. A range narrower than the run returns
only rows inside it, and a range after the run returns none: the panels
filter on the real time columns.

(The first version of this test substituted 0 and 99999999999999 and passed
by accident: four panels compared a text column `time` with numbers, which
holds for those two bounds only.)"""
import os
import sqlite3
import tempfile
import unittest

from support import servelike  # noqa: E402
from support.dashqueries import check_our_dashboard, our_targets, with_range  # noqa: E402
from support.fixtures import run_parse  # noqa: E402


class Grafana(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        inp = os.path.join(cls.tmp.name, "in")
        out = os.path.join(cls.tmp.name, "out")
        first, last = servelike.build(inp)
        # the range a user sets: whole ms around the first and last record
        cls.from_ms, cls.to_ms = first // 1_000_000, -(-last // 1_000_000) + 1
        run_parse(inp, out, "--format", "db")
        cls.db = sqlite3.connect(os.path.join(out, "profiler.db"))
        cls.dash, cls.targets = our_targets()

    @classmethod
    def tearDownClass(cls):
        cls.db.close()
        cls.tmp.cleanup()

    def run_target(self, t, key, from_ms, to_ms):
        cur = self.db.execute(with_range(t[key], from_ms, to_ms))
        return [d[0] for d in cur.description], cur.fetchall()

    def test_panels_cover_the_issue(self):
        titles = " | ".join(p["title"].lower() for p in self.dash["panels"])
        for word in ("batch size", "request status", "kv cache", "ttft", "prefill speed", "decode speed",
                     "request latency"):
            self.assertIn(word, titles)
        for p in self.dash["panels"]:
            self.assertEqual(p["datasource"]["type"], "frser-sqlite-datasource")
        self.assertGreaterEqual(len(self.targets), 10)

    def test_every_panel_with_the_runs_range(self):
        # rows; time columns in seconds inside the range; each value column has numbers
        check_our_dashboard(self, self.db, self.from_ms, self.to_ms)

    def test_a_narrower_range_filters(self):
        mid = (self.from_ms + self.to_ms) // 2
        for p, t in self.targets:
            with self.subTest(panel=p["title"]):
                _, whole = self.run_target(t, "rawQueryText", self.from_ms, self.to_ms)
                _, half = self.run_target(t, "rawQueryText", mid, self.to_ms)
                cols, after = self.run_target(t, "rawQueryText", self.to_ms + 1, self.to_ms + 100000)
                self.assertEqual(after, [])
                self.assertGreater(len(half), 0)
                self.assertLess(len(half), len(whole))
                for tc in t.get("timeColumns", []):
                    i = cols.index(tc)
                    self.assertTrue(all(r[i] >= mid / 1000.0 for r in half))

    def test_latency_panels_in_ms(self):
        # the tables hold µs (the reference's unit); the panels show ms
        ttft = [t for p, t in self.targets if p["title"].startswith("TTFT")][0]
        cols, rows = self.run_target(ttft, "rawQueryText", self.from_ms, self.to_ms)
        shown = max(r[cols.index("p99")] for r in rows)
        stored = self.db.execute("SELECT max(p99) FROM first_token_latency").fetchone()[0]
        self.assertAlmostEqual(shown, stored / 1000.0)
        worst = self.db.execute('SELECT max("first_token_latency(ms)") FROM request').fetchone()[0]
        self.assertAlmostEqual(shown, worst, delta=worst * 0.02)


if __name__ == "__main__":
    unittest.main()
