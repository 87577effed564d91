# SPDX-License-Identifier: Apache-2.0
"""Every column of every report on the parity fixture (parity_fixture.py),
against values worked out by hand from the fixture's times (ms after T0,
2023-11-14 22:13:20 UTC; the parse runs with TZ=UTC).

The fixture is shaped like a real server's store: scheduling and execution
as two spans with a KVCacheStatus between them, worker forwards whose rid
lists carry no iter, ids joined by Link (front end -> engine -> worker), a
preempted request, two requests cut by the collection window, a front end
in the legacy Mstx layout. The reasoning for each figure is beside it.
"""
import csv
import os
import tempfile
import unittest

import parity_fixture  # noqa: E402
from support.fixtures import run_parse  # noqa: E402

D = "2023-11-14 22:13:20."   # datetime prefix of every record (all within that second)
E = "1700000000"             # epoch ms prefix: T0 = 1700000000000 ms


def rows(path):
    with open(path, newline="") as f:
        r = list(csv.reader(f))
    return r[0], r[1:]


class Parity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.inp, cls.out = os.path.join(cls.tmp.name, "in"), os.path.join(cls.tmp.name, "out")
        parity_fixture.build(cls.inp)
        os.environ["TZ"] = "UTC"
        cls.proc = run_parse(cls.inp, cls.out, "--format", "csv")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check(self, name, columns, expected):
        cols, got = rows(os.path.join(self.out, name))
        self.assertEqual(cols, columns)
        self.assertEqual(len(got), len(expected), got)
        for i, (g, e) in enumerate(zip(got, expected)):
            self.assertEqual(dict(zip(cols, g)), dict(zip(cols, e)), "%s row %d" % (name, i + 1))

    def test_request(self):
        cols = ["http_rid", "start_datetime", "recv_token_size", "reply_token_size", "execution_time(ms)",
                "queue_wait_time(ms)", "first_token_latency(ms)", "cache_hit_rate", "start_time(ms)", "tpot(ms)",
                "prefill_time(ms)", "decode_time(ms)", "preempted", "complete"]
        self.check("request.csv", cols, [
            # http-1: httpReq 0, httpRes 20 -> 20; waits Enqueue 1 -> Dequeue 3 = 2; first token = latest of
            # its iter-0 step ends (schedule 3.4, execution 8.2; the worker's forward has no iter) and its
            # first detokenize (8.4) = 8.4; hitCache 0.5; tpot (20 - 8.4) / (3 - 1) = 5.8; prefill
            # 8.4 - first step start 3.0 = 5.4; decode 20 - 8.4 = 11.6
            ["http-1", D + "000000", "10", "3", "20.000", "2.000", "8.400", "0.5", E + "000.000", "5.800",
             "5.400", "11.600", "0", "1"],
            # http-2: 1 -> 30 = 29; waits (8.5 - 2) + (19 - 14.5) = 11 (preempted once); first token =
            # latest of iter-0 ends (8.9, 14.3 and, prefilled again, 19.4, 24.0) and its first
            # sendResponse 24.1 = 24.1 -> 23.1; tpot (30 - 24.1) / (2 - 1) = 5.9; prefill 24.1 - 8.5
            ["http-2", D + "001000", "12", "2", "29.000", "11.000", "23.100", "N/A", E + "001.000", "5.900",
             "15.600", "5.900", "1", "1"],
            # http-4: arrives 26, still waiting when the records end: no end, no wait, complete 0
            ["http-4", D + "026000", "", "", "", "", "", "N/A", E + "026.000", "", "", "", "0", "0"],
            # http-3: no httpReq (began before collection): no start, so no figure that needs one;
            # never queued, never ran with iter 0; goes last (no start)
            ["http-3", "", "7", "8", "", "", "", "N/A", "", "", "", "", "0", "0"],
        ])

    def test_summary_counts_cut_requests_apart(self):
        self.assertIn("requests: 4 (2 cut by the collection window", self.proc.stdout)
        self.assertRegex(self.proc.stdout, r"TTFT\s+P50\s+15\.750 ms")  # median of 8.4 and 23.1 only

    def test_batch(self):
        cols = ["name", "res_list", "start_datetime", "end_datetime", "during_time(ms)", "batch_type", "prof_id",
                "batch_size", "total_blocks", "used_blocks", "free_blocks", "blocks_allocated", "blocks_freed",
                "kvcache_usage_rate", "prefill_batch_size", "decode_batch_size", "prefill_scheduled_tokens",
                "decode_scheduled_tokens", "total_scheduled_tokens", "dp_rank", "start_time(ms)", "end_time(ms)",
                "accepted_ratio", "accepted_ratio_per_pos"]
        p = "ms_service_hostA-20"

        def row(name, res, s, e, dur, typ, size, kv, pd):
            # KV of the step: the KVCacheStatus after its schedule span; the execution carries the same
            return [name, res, D + s, D + e, dur, typ, p, size, *kv, *pd, "", "", "", "",
                    E + s[:3] + "." + s[3:], E + e[:3] + "." + e[3:], "", ""]

        kv1 = ["100", "10", "90", "10", "0", "0.1"]    # free 100 -> 90 at 3.5
        kv2 = ["100", "15", "85", "5", "0", "0.15"]    # 90 -> 85 at 9.0
        kv3 = ["100", "12", "88", "0", "3", "0.12"]    # 85 -> 88 at 15.3 (e2's blocks back)
        kv4 = ["100", "20", "80", "8", "0", "0.2"]     # 88 -> 80 at 19.5
        kv5 = ["100", "20", "80", "0", "0", "0.2"]     # 80 -> 80 at 25.3
        mixed = "Prefill, Decode"
        self.check("batch.csv", cols, [
            row("BatchSchedule", '["http-1"]', "003000", "003400", "0.400", "Prefill", "1", kv1, ["1", "0"]),
            row("modelExec", '["http-1"]', "003600", "008200", "4.600", "Prefill", "1", kv1, ["1", "0"]),
            row("BatchSchedule", '["http-1","http-2"]', "008500", "008900", "0.400", mixed, "2", kv2, ["1", "1"]),
            row("modelExec", '["http-1","http-2"]', "009100", "014300", "5.200", mixed, "2", kv2, ["1", "1"]),
            row("BatchSchedule", '["http-1"]', "015000", "015200", "0.200", "Decode", "1", kv3, ["0", "1"]),
            row("modelExec", '["http-1"]', "015400", "018600", "3.200", "Decode", "1", kv3, ["0", "1"]),
            # e3's Link to http-3 comes at 29, after these steps: named as known then
            row("BatchSchedule", '["http-2","e3"]', "019000", "019400", "0.400", mixed, "2", kv4, ["1", "1"]),
            row("modelExec", '["http-2","e3"]', "019600", "024000", "4.400", mixed, "2", kv4, ["1", "1"]),
            row("BatchSchedule", '["http-2","e3"]', "025000", "025200", "0.200", "Decode", "2", kv5, ["0", "2"]),
            row("modelExec", '["http-2","e3"]', "025400", "028000", "2.600", "Decode", "2", kv5, ["0", "2"]),
        ])

    def test_forward(self):
        cols = ["name", "relative_start_time(ms)", "start_datetime", "end_datetime", "during_time(ms)",
                "bubble_time(ms)", "batch_size", "batch_type", "forward_iter", "dp_rank", "prof_id", "hostname",
                "start_time(ms)", "end_time(ms)"]
        p = "ms_service_hostA-30"

        def row(rel, s, e, dur, bubble, size, typ, it):
            return ["forward", rel, D + s, D + e, dur, bubble, size, typ, it, "", p, "hostA",
                    E + s[:3] + "." + s[3:], E + e[:3] + "." + e[3:]]

        # The worker's rid lists carry no iter and no type: each forward takes the type of the
        # schedule step that ran the same requests (w1 -> e1 -> http-1 through two Links).
        # relative to the host's first forward (3.8); bubble = next start - this end.
        self.check("forward.csv", cols, [
            row("0.000", "003800", "008000", "4.200", "1.300", "1", "Prefill", "1"),          # step 1
            row("5.500", "009300", "014100", "4.800", "1.400", "2", "Prefill, Decode", "2"),  # step 2
            row("11.700", "015500", "018500", "3.000", "1.200", "1", "Decode", "3"),          # step 3, not 1
            row("15.900", "019700", "023900", "4.200", "1.600", "2", "Prefill, Decode", "4"),  # step 4
            row("21.700", "025500", "027900", "2.400", "", "2", "Decode", "5"),               # last: no bubble
        ])

    def test_kvcache(self):
        cols = ["rid", "name", "start_time", "total_blocks", "used_blocks", "free_blocks", "blocks_allocated",
                "blocks_freed", "device_kvcache_left", "kvcache_usage_rate"]

        def row(t, kv):
            return ["", "KVCacheStatus", D + t, *kv[:5], "", kv[5]]

        self.check("kvcache.csv", cols, [
            row("003500", ["100", "10", "90", "10", "0", "0.1"]),
            row("009000", ["100", "15", "85", "5", "0", "0.15"]),
            row("015300", ["100", "12", "88", "0", "3", "0.12"]),
            row("019500", ["100", "20", "80", "8", "0", "0.2"]),
            row("025300", ["100", "20", "80", "0", "0", "0.2"]),
        ])

    def test_request_status(self):
        cols = ["hostuid", "pid", "start_datetime", "relative_timestamp(ms)", "waiting", "running", "swapped",
                "timestamp(ms)"]

        def row(t, rel, waiting):
            # only WAITING is ever reported: running and swapped stay empty
            return ["hostA", "20", D + t, rel, waiting, "", "", E + t[:3] + "." + t[3:]]

        # relative to the process's first queue row (1 ms)
        self.check("request_status.csv", cols, [
            row("001000", "0.000", "1"), row("002000", "1.000", "2"), row("003000", "2.000", "1"),
            row("008500", "7.500", "0"), row("014500", "13.500", "1"), row("019000", "18.000", "0"),
            row("026500", "25.500", "1"),
        ])


class MsRounding(unittest.TestCase):
    """(ms) columns are rounded to the µs from the integer ns (half away from
    zero), not from a double of epoch ms (whose ulp is 0.24 µs)."""

    def test_rounding_from_integer_ns(self):
        from support.fixtures import Store, T0
        with tempfile.TemporaryDirectory() as tmp:
            st = Store(os.path.join(tmp, "in", "ms_service_h-1.db"), "h", 1)
            # 1000.0005 ms after T0: exactly half a µs -> up; 2000.000499 ms -> down;
            # durations 1500 ns -> 0.002 ms, 1499 ns -> 0.001 ms
            rl = '{"type":2,"rid":[{"rid":"a","iter":0}]}'
            st.raw("BatchSchedule", T0 + 1_000_000_500, 1_500, "BatchSchedule", rl)
            st.raw("BatchSchedule", T0 + 2_000_000_499, 1_499, "BatchSchedule", rl)
            st.close()
            run_parse(os.path.join(tmp, "in"), os.path.join(tmp, "out"), "--format", "csv")
            cols, got = rows(os.path.join(tmp, "out", "batch.csv"))
            b = [dict(zip(cols, r)) for r in got]
            self.assertEqual([r["start_time(ms)"] for r in b], ["1700000001000.001", "1700000002000.000"])
            # ends: 1000.002000 and 2000.001998 ms
            self.assertEqual([r["end_time(ms)"] for r in b], ["1700000001000.002", "1700000002000.002"])
            self.assertEqual([r["during_time(ms)"] for r in b], ["0.002", "0.001"])


class LinkAfterEnd(unittest.TestCase):
    """A Link that joins an id whose request already ended and was written
    (10 s of stream earlier) with an id that has an ended state of its own:
    the second state is dropped, not written twice, not used after free
    (the ASan build checks the latter)."""

    def test_link_to_a_finished_request(self):
        from support.fixtures import Store
        with tempfile.TemporaryDirectory() as tmp:
            st = Store(os.path.join(tmp, "in", "ms_service_h-1.db"), "h", 1)
            st.event("httpReq", 0, "Request", rid="front")
            st.event("httpRes", 1, "Request", rid="front")
            for i in range(1100):  # stream time passes: "front" is written and closed
                st.event("CpuUsage", 2 + i * 11, "host", **{"usage=": 1.0})
            st.event("httpRes", 12200, "Request", rid="engine")   # an ended state under the other id
            st.link(12201, "front", "engine")
            st.close()
            run_parse(os.path.join(tmp, "in"), os.path.join(tmp, "out"), "--format", "csv")
            cols, got = rows(os.path.join(tmp, "out", "request.csv"))
            self.assertEqual([r[0] for r in got], ["front"])
            self.assertEqual(dict(zip(cols, got[0]))["execution_time(ms)"], "1.000")


if __name__ == "__main__":
    unittest.main()
