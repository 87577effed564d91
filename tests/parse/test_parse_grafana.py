# SPDX-License-Identifier: Apache-2.0
"""dashboards/grafana-profiler.json: every panel's SQL runs against a real
profiler.db (the scenario parsed by the CLI) and returns rows, with the
columns the panel declares as time columns (the reference shipped queries
naming columns that did not exist)."""
import json
import os
import sqlite3
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import scenario  # noqa: E402
from fixtures import run_parse  # noqa: E402

DASH = os.path.join(os.environ.get("SERVPROF_SOURCE", os.path.join(os.path.dirname(__file__), "..", "..")),
                    "dashboards", "grafana-profiler.json")


def grafana_macros(sql):
    # What Grafana substitutes: the dashboard's time range in ms since the epoch.
    return sql.replace("$__from", "0").replace("$__to", "99999999999999")


class Grafana(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        inp = os.path.join(cls.tmp.name, "in")
        out = os.path.join(cls.tmp.name, "out")
        scenario.build(inp)
        run_parse(inp, out, "--format", "db")
        cls.db = sqlite3.connect(os.path.join(out, "profiler.db"))
        with open(DASH) as f:
            cls.dash = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.db.close()
        cls.tmp.cleanup()

    def test_panels_cover_the_issue(self):
        titles = " | ".join(p["title"].lower() for p in self.dash["panels"])
        for word in ("batch size", "request status", "kv cache", "ttft", "prefill speed", "decode speed",
                     "request latency"):
            self.assertIn(word, titles)
        for p in self.dash["panels"]:
            self.assertEqual(p["datasource"]["type"], "frser-sqlite-datasource")

    def test_every_query_returns_rows(self):
        n = 0
        for p in self.dash["panels"]:
            for t in p["targets"]:
                for key in ("rawQueryText", "queryText"):
                    with self.subTest(panel=p["title"], key=key):
                        cur = self.db.execute(grafana_macros(t[key]))
                        cols = [d[0] for d in cur.description]
                        rows = cur.fetchall()
                        self.assertGreater(len(rows), 0, t[key])
                        for tc in t.get("timeColumns", []):
                            self.assertIn(tc, cols)
                            # seconds since the epoch, as the plugin expects
                            self.assertTrue(1e9 < rows[0][cols.index(tc)] < 1e10)
                        # some value column is not entirely NULL
                        values = [i for i, c in enumerate(cols) if c not in t.get("timeColumns", [])]
                        self.assertTrue(any(r[i] is not None for r in rows for i in values), t[key])
                        n += 1
        self.assertGreaterEqual(n, 14)


if __name__ == "__main__":
    unittest.main()
