"""dashboards/grafana-profiler.json: every panel's SQL, with Grafana's
time-range macros set to the run's own range (as a user who sets the
dashboard to the run sees it), returns rows whose time columns fall in that
range and whose values are numbers. A range narrower than the run returns
only rows inside it, and a range after the run returns none: the panels
filter on the real time columns.

(The first version of this test substituted 0 and 99999999999999 and passed
by accident: four panels compared a text column `time` with numbers, which
holds for those two bounds only.)"""
import json
import math
import os
import sqlite3
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import servelike  # noqa: E402
from fixtures import run_parse  # noqa: E402

DASH = os.path.join(os.environ.get("SERVPROF_SOURCE", os.path.join(os.path.dirname(__file__), "..", "..")),
                    "dashboards", "grafana-profiler.json")


def with_range(sql, from_ms, to_ms):
    """What Grafana substitutes: the time range in ms since the epoch."""
    return sql.replace("$__from", str(from_ms)).replace("$__to", str(to_ms))


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


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
        with open(DASH) as f:
            cls.dash = json.load(f)
        cls.targets = [(p, t) for p in cls.dash["panels"] for t in p["targets"]]

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
        lo, hi = self.from_ms / 1000.0, self.to_ms / 1000.0
        for p, t in self.targets:
            for key in ("rawQueryText", "queryText"):
                with self.subTest(panel=p["title"], key=key):
                    cols, rows = self.run_target(t, key, self.from_ms, self.to_ms)
                    self.assertGreater(len(rows), 0, t[key])
                    times = t.get("timeColumns", [])
                    for tc in times:
                        i = cols.index(tc)
                        # seconds since the epoch, as the plugin expects, inside the run
                        self.assertTrue(all(is_number(r[i]) and lo <= r[i] <= hi for r in rows),
                                        (tc, rows[0][i], lo, hi))
                    values = [i for i, c in enumerate(cols) if c not in times]
                    # every value is a number or empty, and each value column has numbers
                    # (the table panel's id and datetime columns are texts)
                    for i in values:
                        got = [r[i] for r in rows if r[i] is not None]
                        if p["type"] == "timeseries":
                            self.assertTrue(got and all(is_number(v) for v in got), (cols[i], rows[:3]))
                        else:
                            self.assertTrue(got, cols[i])

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
