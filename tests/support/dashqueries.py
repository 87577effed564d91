# SPDX-License-Identifier: Apache-2.0
"""dashqueries.py — the two Grafana dashboards' queries over profiler.db, and
one check that runs them all on a parsed run with its own time range.

Ours: dashboards/grafana-profiler.json (Grafana's $__from / $__to are ms
since the epoch). The reference's (msServiceProfiler's
profiler_visualization.json, not in this repository): its query shapes,
written here in our own words. Its times are substr() of a datetime text
with 'Z' appended, which Grafana reads as UTC.

Used by test_parse_grafana.py, test_parse_refdash.py and the demo's end to
end test (tests/demo/test_e2e.py), which runs check_dashboards on the demo's
own profiler.db.
"""
import datetime
import json
import math
import os

SOURCE = os.environ.get("SERVPROF_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
OUR_DASHBOARD = os.path.join(SOURCE, "dashboards", "grafana-profiler.json")

# The reference's shapes. Its time text "YYYY-MM-DD HH:MM:SS:ffffff" cut into ISO 8601 with a Z.
ISO_FROM_TIMESTAMP = ("substr(timestamp, 1, 10) || 'T' || substr(timestamp, 12, 8) || '.' || "
                      "substr(timestamp, 21, 6) || 'Z'")
LATENCY_PANEL = ("WITH t AS (SELECT " + ISO_FROM_TIMESTAMP + " AS at, avg, p99, p90, p50 FROM {table}) "
                 "SELECT at AS time, CAST(avg AS REAL) AS avg, CAST(p99 AS REAL) AS p99, CAST(p90 AS REAL) AS p90, "
                 "CAST(p50 AS REAL) AS p50 FROM t ORDER BY at")
STATUS_PANEL = ("SELECT " + ISO_FROM_TIMESTAMP + " AS time, WAITING, PENDING, RUNNING FROM request_status "
                "ORDER BY time")
KV_PANEL = ("WITH t AS (SELECT kvcache_usage_rate * 100 AS pct, substr(start_datetime, 1, 10) || 'T' || "
            "substr(start_datetime, 12, 8) || 'Z' AS at FROM kvcache) "
            "SELECT at AS time, CAST(pct AS REAL) AS usage FROM t ORDER BY at")
BATCH_PANEL = ("WITH n AS (SELECT row_number() OVER (ORDER BY `start_time`) - 1 AS batch_id, batch_size, batch_type "
               "FROM batch WHERE name IN ('BatchSchedule', 'batchFrameworkProcessing')) "
               "SELECT batch_id, CASE WHEN batch_type = 'Prefill' THEN batch_size END AS prefill, "
               "CASE WHEN batch_type = 'Decode' THEN batch_size END AS decode FROM n ORDER BY batch_id")
LATENCY_TABLES = ("first_token_latency", "req_latency", "prefill_gen_speed", "decode_gen_speed")


def utc(iso):
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def with_range(sql, from_ms, to_ms):
    """What Grafana substitutes: the time range in ms since the epoch."""
    return sql.replace("$__from", str(from_ms)).replace("$__to", str(to_ms))


def our_targets():
    """(panel, target) of every query of our dashboard."""
    with open(OUR_DASHBOARD) as f:
        dash = json.load(f)
    return dash, [(p, t) for p in dash["panels"] for t in p["targets"]]


def run_range(db):
    """The run's own range in whole ms: around its first and last record."""
    first, last = db.execute("SELECT min(timestamp), max(timestamp + duration) FROM slice").fetchone()
    return first // 1_000_000, -(-last // 1_000_000) + 1


def check_our_dashboard(tc, db, from_ms, to_ms):
    """Every panel with that range: rows, times (s) inside it, numbers."""
    lo, hi = from_ms / 1000.0, to_ms / 1000.0
    _, targets = our_targets()
    for p, t in targets:
        for key in ("rawQueryText", "queryText"):
            with tc.subTest(dashboard="ours", panel=p["title"], key=key):
                cur = db.execute(with_range(t[key], from_ms, to_ms))
                cols = [d[0] for d in cur.description]
                rows = cur.fetchall()
                tc.assertGreater(len(rows), 0, t[key])
                times = t.get("timeColumns", [])
                for tc_name in times:
                    i = cols.index(tc_name)
                    tc.assertTrue(all(is_number(r[i]) and lo <= r[i] <= hi for r in rows), (tc_name, rows[0][i]))
                for i, c in enumerate(cols):
                    if c in times:
                        continue
                    got = [r[i] for r in rows if r[i] is not None]
                    # each value column has values, but for a queue the run never reported
                    # (request_status leaves it empty, as the reference does)
                    if not (c.lower() in unreported_queues(db)):
                        tc.assertTrue(got, c)
                    if p["type"] == "timeseries":
                        tc.assertTrue(all(is_number(v) for v in got), (c, rows[:3]))


def unreported_queues(db):
    """The queue columns of request_status that no record of the run reported."""
    seen = {r[0] for r in db.execute("SELECT DISTINCT status FROM request_status")}
    return {q.lower() for q in ("WAITING", "RUNNING", "SWAPPED") if q not in seen}


def check_reference_dashboard(tc, db, first, last, kv_in_utc=True):
    """Each of the reference's panels: rows, times inside [first, last]
    (datetimes, UTC; a bucket may start up to its width before its values),
    numbers. The KV panel reads a local datetime as UTC: its times are
    checked only when the parse ran with TZ=UTC (kv_in_utc)."""
    def inside(times, slack_ms=0):
        tc.assertTrue(times)
        lo = first - datetime.timedelta(milliseconds=slack_ms)
        for t in times:
            tc.assertTrue(lo <= utc(t) <= last, (t, lo, last))

    for table in LATENCY_TABLES:
        with tc.subTest(dashboard="reference", panel=table):
            rows = db.execute(LATENCY_PANEL.format(table=table)).fetchall()
            width = db.execute("SELECT max(bucket_ms) FROM " + table).fetchone()[0]
            inside([r[0] for r in rows], slack_ms=width)
            tc.assertTrue(all(is_number(v) and v > 0 for r in rows for v in r[1:]), rows[:3])
    with tc.subTest(dashboard="reference", panel="request status"):
        rows = db.execute(STATUS_PANEL).fetchall()
        inside([r[0] for r in rows])
        # numbers, or empty where that queue had not been reported yet
        tc.assertTrue(all(v is None or is_number(v) for r in rows for v in r[1:]))
        tc.assertGreater(max(r[1] for r in rows if r[1] is not None), 0)
        tc.assertGreater(max(r[3] for r in rows if r[3] is not None), 0)
    with tc.subTest(dashboard="reference", panel="kv cache"):
        rows = db.execute(KV_PANEL).fetchall()
        if kv_in_utc:
            inside([r[0] for r in rows], slack_ms=1000)  # the panel cuts to the second
        got = [r[1] for r in rows if r[1] is not None]
        tc.assertTrue(got and all(is_number(v) and 0 <= v <= 100 for v in got), rows[:3])
    with tc.subTest(dashboard="reference", panel="batch size"):
        rows = db.execute(BATCH_PANEL).fetchall()
        tc.assertEqual([r[0] for r in rows], list(range(len(rows))))
        tc.assertTrue(any(r[1] for r in rows) and any(r[2] for r in rows))


def check_dashboards(tc, db, kv_in_utc=True):
    """Both dashboards on a parsed run, with the run's own time range."""
    from_ms, to_ms = run_range(db)
    check_our_dashboard(tc, db, from_ms, to_ms)
    first = datetime.datetime.fromtimestamp(from_ms / 1000, datetime.timezone.utc)
    last = datetime.datetime.fromtimestamp(to_ms / 1000, datetime.timezone.utc)
    check_reference_dashboard(tc, db, first, last, kv_in_utc)
