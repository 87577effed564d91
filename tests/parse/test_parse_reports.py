# SPDX-License-Identifier: Apache-2.0
"""The reports of `servprof parse` on the hand-made scenario (scenario.py).

Every expected value is worked out by hand from the scenario's times (ms
after T0) in the comment beside it.
"""
import os
import sqlite3
import tempfile
import unittest

from support import scenario  # noqa: E402
from support.fixtures import read_csv, run_parse  # noqa: E402


class Reports(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.inp = os.path.join(cls.tmp.name, "in")
        cls.out = os.path.join(cls.tmp.name, "out")
        scenario.build(cls.inp)
        cls.proc = run_parse(cls.inp, cls.out)
        cls.req = {r["http_rid"]: r for r in read_csv(os.path.join(cls.out, "request.csv"))}
        cls.batch = read_csv(os.path.join(cls.out, "batch.csv"))
        cls.fwd = read_csv(os.path.join(cls.out, "forward.csv"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_requests_resolved_through_links(self):
        # e1/e2 (process B, host A) and e3 (process C, host B) are linked to the
        # front end's ids: exactly three requests, under the front end's names.
        self.assertEqual(sorted(self.req), ["http-1", "http-2", "http-3"])

    def test_execution_time(self):
        # end (httpRes) - start (httpReq)
        self.assertAlmostEqual(float(self.req["http-1"]["execution_time(ms)"]), 50.0)   # 50 - 0
        self.assertAlmostEqual(float(self.req["http-2"]["execution_time(ms)"]), 79.0)   # 80 - 1
        self.assertAlmostEqual(float(self.req["http-3"]["execution_time(ms)"]), 58.0)   # 60 - 2

    def test_ttft(self):
        # first detokenize naming the request (through its engine id) - httpReq
        self.assertAlmostEqual(float(self.req["http-1"]["first_token_latency(ms)"]), 11.0)  # 11 - 0
        self.assertAlmostEqual(float(self.req["http-2"]["first_token_latency(ms)"]), 30.0)  # 31 - 1
        self.assertAlmostEqual(float(self.req["http-3"]["first_token_latency(ms)"]), 7.0)   # 9 - 2 (host B)

    def test_queue_wait_with_preemption(self):
        self.assertAlmostEqual(float(self.req["http-1"]["queue_wait_time(ms)"]), 3.0)   # 5 - 2
        # e2 waits twice: (12 - 3) + (25 - 20) after being preempted and re-queued
        self.assertAlmostEqual(float(self.req["http-2"]["queue_wait_time(ms)"]), 14.0)
        self.assertEqual(self.req["http-2"]["preempted"], "1")
        self.assertEqual(self.req["http-1"]["preempted"], "0")
        self.assertAlmostEqual(float(self.req["http-3"]["queue_wait_time(ms)"]), 1.5)   # 4 - 2.5

    def test_tokens_cache_tpot(self):
        r1 = self.req["http-1"]
        self.assertEqual((r1["recv_token_size"], r1["reply_token_size"]), ("100", "5"))
        self.assertAlmostEqual(float(r1["cache_hit_rate"]), 0.25)
        self.assertAlmostEqual(float(r1["tpot(ms)"]), 9.75)           # (50 - 11) / (5 - 1)
        self.assertAlmostEqual(float(r1["prefill_time(ms)"]), 6.0)    # first token 11 - first step 5
        self.assertAlmostEqual(float(r1["decode_time(ms)"]), 39.0)    # 50 - 11
        self.assertAlmostEqual(float(self.req["http-2"]["tpot(ms)"]), 24.5)  # (80 - 31) / (3 - 1)
        self.assertAlmostEqual(float(r1["start_time(ms)"]), 1_700_000_000_000.0)

    def test_batch_rows(self):
        b = [r for r in self.batch if r["prof_id"] == "ms_service_hostA-200"]
        self.assertEqual([r["name"] for r in b], ["batchFrameworkProcessing", "modelExec"] * 3)
        mixed = b[2]  # the step at 12 ms: e1 decoding (iter 1), e2 prefilling
        self.assertEqual(mixed["res_list"], '["http-1","http-2"]')
        self.assertEqual((mixed["batch_size"], mixed["prefill_batch_size"], mixed["decode_batch_size"]),
                         ("2", "1", "1"))
        self.assertEqual((mixed["prefill_scheduled_tokens"], mixed["decode_scheduled_tokens"],
                          mixed["total_scheduled_tokens"]), ("20", "1", "21"))
        self.assertEqual(mixed["batch_type"], "Prefill, Decode")
        self.assertAlmostEqual(float(mixed["during_time(ms)"]), 1.0)
        self.assertEqual(b[0]["batch_type"], "Prefill")
        self.assertEqual(b[0]["batch_size"], "1")

    def test_batch_kv_from_next_status_of_same_process(self):
        b = [r for r in self.batch if r["prof_id"] == "ms_service_hostA-200"]
        # steps at 5 and 6 ms -> KVCacheStatus at 10 ms: total 100, free 90, used 10
        self.assertEqual((b[0]["total_blocks"], b[0]["used_blocks"], b[0]["free_blocks"]), ("100", "10", "90"))
        self.assertAlmostEqual(float(b[1]["kvcache_usage_rate"]), 0.1)
        # steps at 12/13 ms -> status at 17 ms: free 90 -> 85: allocated 5, freed 0
        self.assertEqual((b[2]["used_blocks"], b[2]["blocks_allocated"], b[2]["blocks_freed"]), ("15", "5", "0"))
        # steps at 26/27 ms -> status at 31 ms: UsagePercent= 20 -> 0.2
        self.assertAlmostEqual(float(b[5]["kvcache_usage_rate"]), 0.2)
        # host B's step takes host B's status (total 50), not host A's
        c = [r for r in self.batch if r["prof_id"] == "ms_service_hostB-300"]
        self.assertEqual(c[0]["total_blocks"], "50")
        self.assertEqual(c[0]["dp_rank"], "1")

    def test_forward_bubble_and_iter(self):
        f = [r for r in self.fwd if r["prof_id"] == "ms_service_hostA-200"]
        self.assertEqual([r["forward_iter"] for r in f], ["1", "2", "3"])
        self.assertAlmostEqual(float(f[0]["bubble_time(ms)"]), 4.0)    # 13.5 - 9.5
        self.assertAlmostEqual(float(f[1]["bubble_time(ms)"]), 11.0)   # 27.5 - 16.5
        self.assertEqual(f[2]["bubble_time(ms)"], "")                  # no next forward
        self.assertAlmostEqual(float(f[1]["relative_start_time(ms)"]), 7.0)  # 13.5 - 6.5
        self.assertEqual(f[1]["batch_size"], "2")
        self.assertEqual(f[0]["hostname"], "hostA")
        g = [r for r in self.fwd if r["prof_id"] == "ms_service_hostB-300"]
        self.assertEqual(g[0]["forward_iter"], "1")
        self.assertAlmostEqual(float(g[0]["relative_start_time(ms)"]), 0.0)

    def test_kvcache_rows(self):
        k = read_csv(os.path.join(self.out, "kvcache.csv"))
        status = [r for r in k if r["name"] == "KVCacheStatus"]
        self.assertEqual(len(status), 4)
        s17 = [r for r in status if r["start_time"].endswith(".017000")][0]
        self.assertEqual((s17["total_blocks"], s17["used_blocks"], s17["free_blocks"], s17["blocks_allocated"],
                          s17["blocks_freed"]), ("100", "15", "85", "5", "0"))
        free = [r for r in k if r["name"] == "Free"][0]
        self.assertEqual(free["rid"], "http-1")           # e1 resolved
        self.assertEqual(free["device_kvcache_left"], "7")

    def test_request_status(self):
        rs = read_csv(os.path.join(self.out, "request_status.csv"))
        a = [r for r in rs if r["pid"] == "200"]
        # after the Queue RUNNING event at 5.5 ms: waiting 1, running 1, swapped never
        # reported (empty); relative to the process's first queue row (2 ms)
        row = [r for r in a if abs(float(r["relative_timestamp(ms)"]) - 3.5) < 1e-6][0]
        self.assertEqual((row["waiting"], row["running"], row["swapped"]), ("1", "1", ""))
        self.assertEqual(row["hostuid"], "hostA")

    def test_profiler_db_tables(self):
        db = sqlite3.connect(os.path.join(self.out, "profiler.db"))
        # slice is a view over slice_data / slice_args (test_parse_dbout.py)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        for t in ("request", "batch", "forward", "kvcache", "request_status", "first_token_latency",
                  "req_latency", "prefill_gen_speed", "decode_gen_speed", "process", "thread", "slice",
                  "counter", "flow"):
            self.assertIn(t, tables)
        self.assertEqual(db.execute("SELECT count(*) FROM request").fetchone()[0], 3)
        ttft = db.execute('SELECT "first_token_latency(ms)" FROM request WHERE http_rid = ?',
                          ("http-2",)).fetchone()[0]
        self.assertAlmostEqual(ttft, 30.0)
        # every record of the three stores is in slice (samplers become counters only)
        self.assertEqual(db.execute("SELECT count(*) FROM slice").fetchone()[0], 38)
        # per-bucket percentiles: all three first tokens fall in the first 100 ms bucket
        row = db.execute("SELECT count, p50 FROM first_token_latency").fetchall()
        self.assertEqual(len(row), 1)
        self.assertEqual(row[0][0], 3)
        self.assertAlmostEqual(row[0][1], 11000.0)  # median of 7, 11, 30 ms, in µs (the reference's unit)
        names = dict(db.execute("SELECT prof_id, process_name FROM process WHERE prof_id <> ''"))
        self.assertEqual(names["ms_service_hostA-200"], "forward")
        db.close()

    def test_summary_printed(self):
        out = self.proc.stdout
        self.assertIn("read 3 stores", out)
        self.assertRegex(out, r"wrote to .*: request.csv batch.csv forward.csv kvcache.csv request_status.csv "
                              r"chrome_tracing.json profiler.db")
        self.assertIn("requests: 3", out)
        self.assertRegex(out, r"TTFT\s+P50\s+11\.000 ms")


if __name__ == "__main__":
    unittest.main()
