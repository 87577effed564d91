# SPDX-License-Identifier: Apache-2.0
"""profiler.db read the way the reference's (msServiceProfiler's) Grafana
dashboard and tools read theirs: every query shape of its dashboard
(profiler_visualization.json, 7 panels), the tables and columns its own
system tests look for, and its views, run on our profiler.db from a
realistic run (servelike.py) and checked for rows, parseable times inside
the run, numbers, and the reference's meaning of each column.

The queries are written here in our own words, in the shapes that dashboard
uses (its times: substr() of a datetime text with 'Z' appended, read by
Grafana as UTC); the reference itself is not needed to run this test."""
import datetime
import json
import os
import sqlite3
import statistics
import tempfile
import unittest

from support import servelike  # noqa: E402
from support.dashqueries import (BATCH_PANEL, ISO_FROM_TIMESTAMP, LATENCY_TABLES, STATUS_PANEL,  # noqa: E402
                         check_reference_dashboard, utc)
from support.fixtures import run_parse  # noqa: E402

# What the reference's system tests look for (columns by table), and its views.
REFERENCE_COLUMNS = {
    "first_token_latency": ["p50", "p90", "p99", "timestamp", "p50_alltime", "avg"],
    "req_latency": ["p50", "p90", "p99", "timestamp", "p50_alltime", "avg"],
    "prefill_gen_speed": ["p50", "p90", "p99", "timestamp", "p50_alltime", "avg"],
    "decode_gen_speed": ["p50", "p90", "p99", "timestamp", "p50_alltime", "avg"],
    "request_status": ["timestamp", "QueueSize=", "status", "WAITING", "PENDING", "RUNNING"],
    "kvcache": ["name", "start_datetime", "total_blocks", "kvcache_usage_rate"],
    "counter": ["id", "name", "pid", "args", "timestamp"],
    "flow": ["id", "flow_id", "name", "cat", "timestamp", "track_id", "type"],
    "process": ["pid", "process_name", "process_sort_index"],
    "slice": ["id", "timestamp", "duration", "name", "track_id", "args", "end_time"],
    "thread": ["tid", "pid", "thread_name", "track_id"],
    "batch": ["name", "res_list", "batch_size", "batch_type", "start_time", "end_time", "during_time"],
    "batch_exec": ["batch_id", "event", "pid", "start", "end"],
    "batch_req": ["req_id", "iter", "rid", "block", "batch_id"],
    "request": ["http_rid", "recv_token_size", "reply_token_size", "execution_time", "queue_wait_time",
                "first_token_latency"],
    "forward": ["relative_start_time", "during_time", "bubble_time", "start_time", "end_time", "batch_type"],
    "data_table": ["id", "name", "view_name"],
    "data_link": ["source_name", "target_table", "target_name"],
    "batch_info": ["name", "start_time(ms)", "batch_size"],
    "request_data": ["http_rid", "execution_time(ms)", "first_token_latency(ms)"],
    "forward_info": ["during_time(ms)", "bubble_time(ms)"],
    "kvcache_usage": ["name", "start_time", "kvcache_usage_rate"],
    "Batch_Size_curve": ["batch_id", "total_batch_size", "prefill_batch_size", "decode_batch_size"],
    "Batch_Token_curve": ["batch_id", "total_scheduled_tokens", "prefill_scheduled_tokens",
                          "decode_scheduled_tokens"],
    "Decode_Generate_Speed_Latency_curve": ["time", "avg(tokens/s)", "p99(tokens/s)", "p90(tokens/s)",
                                            "p50(tokens/s)"],
    "Prefill_Generate_Speed_Latency_curve": ["time", "avg(tokens/s)", "p99(tokens/s)", "p90(tokens/s)",
                                             "p50(tokens/s)"],
    "First_Token_Latency_curve": ["time", "p99(ms)", "p90(ms)", "p50(ms)", "min(ms)"],
    "Request_Latency_curve": ["time", "avg(ms)", "p99(ms)", "p90(ms)", "p50(ms)"],
    "Kvcache_Usage_Percent_curve": ["datetime", "kvcache_usage_percent"],
    "Request_Status_curve": ["time", "waiting", "swapped", "running"],
}


# What batch_exec and batch_req were as views (dbcompat.c before they became tables made by the
# parser, batchexec.c): the tables must hold exactly these rows.
SCHED = "('BatchSchedule', 'batchFrameworkProcessing')"
US = 'CAST(round("%s" * 1000) AS INTEGER)'
OLD_BATCH_EXEC = (
    "WITH ev AS (SELECT name AS event, prof_id AS pid, " + US % "start_time(ms)" + " AS s, " + US % "end_time(ms)" +
    " AS e, name IN " + SCHED + " AS sched FROM batch WHERE name <> 'specDecoding'"
    " UNION ALL SELECT name, prof_id, " + US % "start_time(ms)" + ", " + US % "end_time(ms)" + ", 0 FROM forward),"
    " numbered AS (SELECT event, pid, s, e, sum(sched) OVER (ORDER BY s, sched DESC ROWS UNBOUNDED PRECEDING)"
    " AS batch_id FROM ev)"
    " SELECT batch_id, event, pid, min(s) AS start, max(e) AS \"end\" FROM numbered WHERE batch_id > 0"
    " GROUP BY batch_id, event, pid ORDER BY batch_id, start")
OLD_BATCH_REQ = (
    "WITH steps AS (SELECT row_number() OVER (ORDER BY timestamp) AS batch_id, args FROM slice"
    " WHERE name IN " + SCHED + " AND json_valid(args))"
    " SELECT coalesce(json_extract(j.value, '$.req_id'), json_extract(j.value, '$.rid')) AS req_id,"
    " json_extract(j.value, '$.iter') AS iter, json_extract(j.value, '$.rid') AS rid,"
    " json_extract(j.value, '$.block') AS block, steps.batch_id AS batch_id"
    " FROM steps, json_each(steps.args, '$.rid') AS j WHERE j.type = 'object'")


def typed_sorted(rows):
    """Rows sorted with their values' types kept apart (1 and '1' differ)."""
    return sorted(rows, key=lambda r: [(type(v).__name__, v if v is not None else 0) for v in r])


def assert_tables_equal_old_views(test, db):
    kinds = dict(db.execute("SELECT name, type FROM sqlite_master"))
    for name, old in (("batch_exec", OLD_BATCH_EXEC), ("batch_req", OLD_BATCH_REQ)):
        test.assertEqual(kinds.get(name), "table", name)
        cols = "batch_id, event, pid, start, \"end\"" if name == "batch_exec" else "req_id, iter, rid, block, batch_id"
        new = db.execute("SELECT %s FROM %s" % (cols, name)).fetchall()
        want = db.execute(old).fetchall()
        test.assertGreater(len(want), 0, name)
        test.assertEqual(typed_sorted(new), typed_sorted(want), name)
    # batch_exec in its view's order: by step, then start
    ex = db.execute('SELECT batch_id, start FROM batch_exec').fetchall()
    test.assertEqual(ex, sorted(ex))


def parse_with_tz(inp, out, tz):
    old = os.environ.get("TZ")
    os.environ["TZ"] = tz
    try:
        run_parse(inp, out, "--format", "db")
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
    return sqlite3.connect(os.path.join(out, "profiler.db"))


class ReferenceDashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.inp = os.path.join(cls.tmp.name, "in")
        first, last = servelike.build(cls.inp)
        cls.first = datetime.datetime.fromtimestamp(first // 1000 / 1e6, datetime.timezone.utc)
        cls.last = datetime.datetime.fromtimestamp(last // 1000 / 1e6, datetime.timezone.utc)
        # Grafana reads the datetimes as UTC: the one panel on a local datetime (KV) is right with TZ=UTC
        cls.db = parse_with_tz(cls.inp, os.path.join(cls.tmp.name, "out"), "UTC")

    @classmethod
    def tearDownClass(cls):
        cls.db.close()
        cls.tmp.cleanup()

    def query(self, sql):
        cur = self.db.execute(sql)
        return [d[0].lower() for d in cur.description], cur.fetchall()

    def test_every_panel(self):
        # latency (4), request status, KV cache, batch size: rows, times inside the run, numbers
        check_reference_dashboard(self, self.db, self.first, self.last)
        # and, on this run, each panel in full
        for table in LATENCY_TABLES:
            self.assertGreater(self.db.execute("SELECT count(*) FROM " + table).fetchone()[0], 5)
        cols, rows = self.query(STATUS_PANEL)
        self.assertEqual(cols, ["time", "waiting", "pending", "running"])
        self.assertGreater(max(r[2] for r in rows), 0)  # the fixture reports a PENDING queue
        usage = self.db.execute("SELECT kvcache_usage_rate FROM kvcache").fetchall()
        self.assertTrue(usage and all(u[0] is not None and 0 < u[0] <= 1 for u in usage))

    def test_batch_size_panel(self):
        cols, rows = self.query(BATCH_PANEL)
        steps = self.db.execute("SELECT count(*) FROM batch WHERE name = 'BatchSchedule'").fetchone()[0]
        self.assertEqual([r[0] for r in rows], list(range(steps)))
        self.assertTrue(any(r[1] for r in rows) and any(r[2] for r in rows))
        # ordered by start time: the first step is a prefill of the first request alone
        self.assertEqual(rows[0][1:], (1, None))

    def test_reference_tables_and_columns(self):
        kinds = dict(self.db.execute("SELECT name, type FROM sqlite_master"))
        for name, want in REFERENCE_COLUMNS.items():
            with self.subTest(name=name):
                self.assertIn(kinds.get(name), ("table", "view"))
                cur = self.db.execute('SELECT * FROM "%s"' % name)
                cols = [d[0] for d in cur.description]
                rows = cur.fetchall()
                # SQLite's names are case-insensitive: request_status's WAITING is our waiting
                self.assertTrue(set(c.lower() for c in want) <= set(c.lower() for c in cols), (want, cols))
                self.assertGreater(len(rows), 0)
                for c in want:
                    if (name, c) == ("batch_req", "block"):
                        continue  # only a forward's `blocks` (vLLM's) says it: none here (docs/compat.md)
                    i = [x.lower() for x in cols].index(c.lower())
                    self.assertTrue(any(r[i] is not None for r in rows), c)

    def test_latency_tables_mean_what_the_reference_means(self):
        ttft = [r[0] * 1000 for r in self.db.execute('SELECT "first_token_latency(ms)" FROM request')]
        e2e = [r[0] * 1000 for r in self.db.execute('SELECT "execution_time(ms)" FROM request')]
        for table, values in (("first_token_latency", ttft), ("req_latency", e2e)):
            with self.subTest(table=table):  # microseconds; p50_alltime the whole run's median
                got = self.db.execute("SELECT min(p50_alltime), max(p50_alltime), sum(count), min(min_value), "
                                      "max(max_value) FROM " + table).fetchone()
                self.assertAlmostEqual(got[0], statistics.median(values), delta=0.01)
                self.assertEqual(got[0], got[1])
                self.assertEqual(got[2], len(values))
                self.assertAlmostEqual(got[3], min(values), delta=0.01)
                self.assertAlmostEqual(got[4], max(values), delta=0.01)
        # the timestamp text is the bucket start, the same instant as timestamp(ms)
        for ts, ms in self.db.execute('SELECT timestamp, "timestamp(ms)" FROM req_latency'):
            self.assertEqual(utc(self.db.execute("SELECT " + ISO_FROM_TIMESTAMP.replace("timestamp", "?"),
                                                 (ts, ts, ts)).fetchone()[0]).timestamp() * 1000, ms)

    def test_generated_columns_hold_the_reference_meaning(self):
        bad = self.db.execute('SELECT count(*) FROM batch WHERE start_time != CAST(round("start_time(ms)" * 1000) '
                              'AS INTEGER) OR during_time != "during_time(ms)"').fetchone()[0]
        self.assertEqual(bad, 0)
        bad = self.db.execute('SELECT count(*) FROM request WHERE execution_time != "execution_time(ms)" OR '
                              'first_token_latency != "first_token_latency(ms)"').fetchone()[0]
        self.assertEqual(bad, 0)
        bad = self.db.execute('SELECT count(*) FROM forward WHERE during_time != "during_time(ms)" OR '
                              'start_time != "start_time(ms)"').fetchone()[0]
        self.assertEqual(bad, 0)
        for series, value, args in self.db.execute("SELECT series, value, args FROM counter"):
            self.assertEqual(json.loads(args), {series: value})
        # every slice and flow is on a track the thread table names
        tracks = {r[0] for r in self.db.execute("SELECT track_id FROM thread")}
        self.assertTrue({r[0] for r in self.db.execute("SELECT track_id FROM slice")} <= tracks)
        self.assertTrue({r[0] for r in self.db.execute("SELECT track_id FROM flow")} <= tracks)
        ids = [r[0] for r in self.db.execute("SELECT id FROM slice ORDER BY timestamp, id")]
        self.assertEqual(ids, list(range(1, len(ids) + 1)))

    def test_request_status_rows(self):
        # status names the queue the record changed; QueueSize= its new size, also in that queue's column
        rows = self.db.execute('SELECT status, "QueueSize=", waiting, running, swapped, timestamp, "timestamp(ms)" '
                               "FROM request_status").fetchall()
        self.assertEqual({r[0] for r in rows}, {"WAITING", "RUNNING", "SWAPPED"})
        for status, size, waiting, running, swapped, ts, ms in rows:
            self.assertEqual(size, {"WAITING": waiting, "RUNNING": running, "SWAPPED": swapped}[status])
            want = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
            self.assertLess(abs((utc(ts[:19] + "." + ts[20:] + "Z") - want).total_seconds()), 2e-6)

    def test_batch_exec_and_batch_req(self):
        steps = self.db.execute("SELECT start_time FROM batch WHERE name = 'BatchSchedule' "
                                "ORDER BY start_time").fetchall()
        ex = self.db.execute("SELECT batch_id, event, pid, start, \"end\" FROM batch_exec").fetchall()
        sched = [r for r in ex if r[1] == "BatchSchedule"]
        self.assertEqual([r[0] for r in sched], list(range(1, len(steps) + 1)))
        self.assertEqual([r[3] for r in sched], [s[0] for s in steps])
        by_step = {}
        for r in ex:
            by_step.setdefault(r[0], set()).add(r[1])
            self.assertLessEqual(r[3], r[4])
        # each step: its schedule, its execution and its forward
        self.assertTrue(all(v == {"BatchSchedule", "modelExec", "forward"} for v in by_step.values()), by_step)
        req = self.db.execute("SELECT req_id, iter, rid, block, batch_id FROM batch_req").fetchall()
        sizes = self.db.execute("SELECT batch_size FROM batch WHERE name = 'BatchSchedule' "
                                "ORDER BY start_time").fetchall()
        self.assertEqual(len(req), sum(s[0] for s in sizes))
        per_step = {}
        for req_id, it, rid, block, batch_id in req:
            per_step[batch_id] = per_step.get(batch_id, 0) + 1
            self.assertEqual(req_id, rid)
            self.assertTrue(rid.startswith("seq-"))
            self.assertIsInstance(it, int)
        self.assertEqual([per_step[k] for k in sorted(per_step)], [s[0] for s in sizes])
        # iter counts up per request across its steps
        iters = {}
        for req_id, it, rid, block, batch_id in sorted(req, key=lambda r: r[4]):
            self.assertEqual(it, iters.get(rid, -1) + 1)
            iters[rid] = it

    def test_batch_exec_and_batch_req_are_tables_equal_to_the_old_views(self):
        assert_tables_equal_old_views(self, self.db)
        # the other db writer (SQLite's INSERTs) writes the same rows
        out = os.path.join(self.tmp.name, "out_sqlite")
        os.environ["SERVPROF_PARSE_DB_WRITER"] = "sqlite"
        try:
            run_parse(self.inp, out, "--format", "db")
        finally:
            del os.environ["SERVPROF_PARSE_DB_WRITER"]
        db = sqlite3.connect(os.path.join(out, "profiler.db"))
        try:
            assert_tables_equal_old_views(self, db)
            for name in ("batch_exec", "batch_req"):
                self.assertEqual(db.execute("SELECT count(*) FROM " + name).fetchone(),
                                 self.db.execute("SELECT count(*) FROM " + name).fetchone())
        finally:
            db.close()

    def test_batch_req_keeps_the_entries_as_written(self):
        # entries of every shape: a number rid, a string rid with req_id and block (not read:
        # docs/compat.md), a bare string (not an object: no row, as the view had it), an object
        # without rid (no row: the view had one of NULLs), a step with args that are not JSON
        # (not a step of batch_req), two processes whose steps interleave (batch_exec numbers
        # them together)
        from support.fixtures import Store
        inp = os.path.join(self.tmp.name, "shapes")
        for pid, off in ((100, 0), (200, 0.5)):
            s = Store(os.path.join(inp, "ms_service_h-%d.db" % pid), "h", pid)
            for k in range(4):
                t = off + k * 3
                s.span("BatchSchedule", t, t + 1, "BatchSchedule",
                       rid=[{"rid": 7 + k, "iter": k}, {"rid": "a\\%d" % k, "req_id": "q%d" % k, "block": [1, 2]},
                            "plain", {"iter": 3}])
                s.span("modelExec", t + 1, t + 2, "ModelExecute", rid=[{"rid": "a%d" % k, "iter": k}])
                s.span("forward", t + 1.1, t + 1.9, "ModelExecute")
            s.raw("batchFrameworkProcessing", 10**18 + 20 * 10**6 + pid, 10**6, "BatchSchedule", "not json")
            s.close()
        out = os.path.join(self.tmp.name, "shapes_out")
        run_parse(inp, out, "--format", "db")
        db = sqlite3.connect(os.path.join(out, "profiler.db"))
        try:
            kinds = dict(db.execute("SELECT name, type FROM sqlite_master"))
            self.assertEqual((kinds["batch_exec"], kinds["batch_req"]), ("table", "table"))
            self.assertEqual(typed_sorted(db.execute('SELECT batch_id, event, pid, start, "end" FROM batch_exec')),
                             typed_sorted(db.execute(OLD_BATCH_EXEC)))
            self.assertEqual(db.execute("SELECT max(batch_id) FROM batch_exec").fetchone()[0], 10)
            req = db.execute("SELECT req_id, iter, rid, block FROM batch_req WHERE batch_id = 1").fetchall()
            self.assertEqual(req, [(7, 0, 7, None), ("a\\0", None, "a\\0", None)])
            # the view's rows, but the entries' own req_id / block and the entry without a rid
            old = [(r[2] if r[2] is not None else r[0], r[1], r[2], None, r[4])
                   for r in db.execute(OLD_BATCH_REQ) if r[2] is not None]
            self.assertEqual(typed_sorted(db.execute("SELECT req_id, iter, rid, block, batch_id FROM batch_req")),
                             typed_sorted(old))
        finally:
            db.close()

    def test_data_table_names_views_that_work(self):
        views = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
        names = self.db.execute("SELECT id, name, view_name FROM data_table ORDER BY id").fetchall()
        self.assertEqual([r[0] for r in names], list(range(1, len(names) + 1)))
        for _, name, view in names:
            self.assertIn(view, views)
            self.assertGreater(self.db.execute('SELECT count(*) FROM "%s"' % view).fetchone()[0], 0)
        self.assertEqual(self.db.execute("SELECT * FROM data_link").fetchall(), [("rid", "request", "http_rid")])
        # kvcache_usage: the kvcache table with start_datetime named start_time
        self.assertEqual(self.db.execute("SELECT count(*) FROM kvcache_usage").fetchone()[0],
                         self.db.execute("SELECT count(*) FROM kvcache").fetchone()[0])

    def test_time_texts_are_utc_whatever_the_zone(self):
        with tempfile.TemporaryDirectory() as tmp:
            other = parse_with_tz(self.inp, tmp, "Asia/Shanghai")  # UTC+8, no daylight saving
            try:
                for table in LATENCY_TABLES + ("request_status",):
                    q = "SELECT timestamp FROM %s ORDER BY rowid" % table
                    self.assertEqual(other.execute(q).fetchall(), self.db.execute(q).fetchall())
                # the *_datetime columns are local time, as in the CSV reports and the reference
                q = "SELECT start_datetime FROM kvcache ORDER BY rowid LIMIT 1"
                here = datetime.datetime.fromisoformat(self.db.execute(q).fetchone()[0])
                there = datetime.datetime.fromisoformat(other.execute(q).fetchone()[0])
                self.assertEqual(there - here, datetime.timedelta(hours=8))
            finally:
                other.close()


if __name__ == "__main__":
    unittest.main()
