# SPDX-License-Identifier: Apache-2.0
"""test_dashboard.py — every query of dashboards/grafana-clickhouse.json,
run against a real 2-shard ClickHouse cluster (chlib.py) holding an
exported serving run, with Grafana's variables substituted as Grafana
does ($__from / $__to in ms since the epoch, $__interval_ms, ${database}).

Each panel must answer rows; a time series' first column is a DateTime
and the rest numbers (or NULL); the slowest-requests table starts with the
request local parse found slowest, and the TTFT panel's buckets together
hold every request of the run.
"""
import json
import os
import sqlite3
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
import chlib  # noqa: E402
from test_export import BIN, build_fleet, export  # noqa: E402

SOURCE = os.environ.get("SERVPROF_SOURCE", os.path.join(HERE, "..", ".."))
DASHBOARD = os.path.join(SOURCE, "dashboards", "grafana-clickhouse.json")


def substitute(sql, from_ms, to_ms, interval_ms=1000, db="servprof"):
    return (sql.replace("$__from", str(from_ms)).replace("$__to", str(to_ms))
            .replace("$__interval_ms", str(interval_ms)).replace("${database}", db))


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not chlib.available():
            raise unittest.SkipTest("clickhouse-server is not installed")
        cls.tmp = tempfile.mkdtemp(prefix="sp-ch-dash-")
        cls.inp = os.path.join(cls.tmp, "in")
        build_fleet(cls.inp)
        cls.cluster = chlib.Cluster(2, "two", os.path.join(cls.tmp, "ch")).start()
        n = cls.cluster.nodes[0]
        export(cls.inp, n.url(), "--create", "--cluster", "two", "--nodes", cls.cluster.node_urls())
        out = os.path.join(cls.tmp, "out")
        subprocess.run([BIN, "parse", "--input-path", cls.inp, "--output-path", out, "--no-progress",
                        "--format", "db"], check=True, capture_output=True)
        cls.db = sqlite3.connect(os.path.join(out, "profiler.db"))
        lo, hi = cls.db.execute('SELECT min("start_time(ms)"), max("start_time(ms)") FROM request').fetchone()
        cls.from_ms, cls.to_ms = int(lo) - 1000, int(hi) + 1000
        with open(DASHBOARD) as f:
            cls.dash = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def run_panel(self, panel):
        sql = substitute(panel["targets"][0]["rawSql"], self.from_ms, self.to_ms)
        body = self.cluster.nodes[0].query(sql + " FORMAT JSONCompact")
        return json.loads(body)

    def test_every_panel_answers(self):
        self.assertEqual(len(self.dash["panels"]), 10)
        for p in self.dash["panels"]:
            with self.subTest(panel=p["title"]):
                self.assertEqual(p["datasource"]["type"], "grafana-clickhouse-datasource")
                r = self.run_panel(p)
                self.assertGreater(len(r["data"]), 0, p["title"])
                if p["type"] == "timeseries":
                    self.assertEqual(r["meta"][0]["name"], "time")
                    self.assertEqual(r["meta"][0]["type"], "DateTime")
                    for row in r["data"]:
                        for v in row[1:]:
                            self.assertTrue(v is None or isinstance(v, (int, float)) or
                                            (isinstance(v, str) and v.replace(".", "").replace("-", "").isdigit()),
                                            (p["title"], row))

    def test_values_match_the_local_parse(self):
        panels = {p["title"]: p for p in self.dash["panels"]}
        slow = self.run_panel(panels["Slowest requests (started in the time range)"])["data"]
        want = self.db.execute('SELECT max("execution_time(ms)") FROM request').fetchone()[0]
        self.assertEqual(float(slow[0][2]), want)
        self.assertEqual(len(slow), min(100, self.db.execute("SELECT count(*) FROM request").fetchone()[0]))
        # the TTFT buckets: count per bucket, summed, is every request with a TTFT
        sql = substitute(panels["TTFT per time bucket (ms)"]["targets"][0]["rawSql"], self.from_ms, self.to_ms)
        sql = sql.replace("avg(x) AS avg", "count() AS n, avg(x) AS avg")
        rows = json.loads(self.cluster.nodes[0].query(sql + " FORMAT JSONCompact"))["data"]
        total = sum(int(r[1]) for r in rows)
        want = self.db.execute('SELECT count(*) FROM request WHERE "first_token_latency(ms)" IS NOT NULL').fetchone()[0]
        self.assertEqual(total, want)


if __name__ == "__main__":
    chlib.main()
