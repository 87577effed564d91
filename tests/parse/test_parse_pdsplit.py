# SPDX-License-Identifier: Apache-2.0
"""The prefill/decode split reports: pd_split_communication.csv,
pd_split_kvcache.csv and coordinator.csv (and their profiler.db tables).

Three stores of one host (so no clock alignment applies): a front end
("router") with the Communication events, a decode instance with Link,
PullKVCache and the first decode token, and a coordinator. Every expected
value is worked out by hand from the times (ms after T0) in the comments.
"""
import os
import sqlite3
import tempfile
import unittest

from support.fixtures import Store, ns, read_csv, run_parse  # noqa: E402

P_ADDR, D_ADDR = "10.0.0.1:1025", "10.0.0.2:1025"


def comm(s, name, at, rid, cat="Communication"):
    s.event(name, at, cat=cat, rid=rid)


def build(inp):
    fe = Store(os.path.join(inp, "ms_service_fe.db"), hostname="node", pid=100)
    # r1: a complete hand-off
    comm(fe, "receiveReq", 0, "r1")
    comm(fe, "sendReqToD", 10, "r1")
    comm(fe, "sendReqToDSucc", 12, "r1")
    comm(fe, "prefillRes", 30, "r1")
    comm(fe, "decodeRes", 100, "r1")
    # r2: no KV pull, no ack: TTFT from prefillRes
    comm(fe, "receiveReq", 50, "r2")
    comm(fe, "sendReqToD", 55, "r2")
    comm(fe, "prefillRes", 70, "r2")
    # r9: these names in another domain are not hand-off records
    comm(fe, "receiveReq", 60, "r9", cat="Other")
    # r3: the front end's records come before the Link that joins d-3 to r3
    comm(fe, "receiveReq", 190, "r3")
    comm(fe, "sendReqToD", 195, "r3")
    comm(fe, "sendReqToDSucc", 198, "r3")
    fe.close()

    d = Store(os.path.join(inp, "ms_service_d.db"), hostname="node", pid=200)
    d.link(11, "r1", "d-1")
    d.span("PullKVCache", 13, 18, cat="KVCache", rid="d-1", rank=2, block_tables=[[1, 2, 3]],
           batch_seq_len=[40], block_bytes=1000)
    d.event("decode", 21, cat="Request", rid="d-1")
    d.event("decode", 25, cat="Request", rid="d-1")
    d.span("PullKVCache", 200, 204, cat="KVCache", rid="d-3", rank=0, block_tables=[[7]],
           batch_seq_len=[8], bytes=8000)
    d.link(205, "r3", "d-3")
    d.event("decode", 206, cat="Request", rid="d-3")
    d.close()

    co = Store(os.path.join(inp, "ms_service_co.db"), hostname="node", pid=300)
    co.event("RequestDispatch", 0, cat="Coordinator", rid="c1", PrefillAddress=P_ADDR, DecodeAddress=D_ADDR)
    co.event("GenerateToken", 30, cat="Coordinator", rid="c1", Phase="prefill")
    co.event("GenerateToken", 40, cat="Coordinator", rid="c1", Phase="decode")
    co.event("ReqFinish", 100, cat="Coordinator", rid="c1")
    co.event("ReqFinish", 101, cat="Other", rid="c1")
    # c2, two 5-second buckets later, still decoding at the end
    co.event("RequestDispatch", 10000, cat="Coordinator", rid="c2", PrefillAddress=P_ADDR, DecodeAddress=D_ADDR)
    co.event("GenerateToken", 10100, cat="Coordinator", rid="c2", Phase="Prefill")
    co.close()


class PdSplit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.inp = os.path.join(cls.tmp.name, "in")
        cls.out = os.path.join(cls.tmp.name, "out")
        build(cls.inp)
        os.environ["TZ"] = "UTC"
        cls.proc = run_parse(cls.inp, cls.out)
        cls.comm = read_csv(os.path.join(cls.out, "pd_split_communication.csv"))
        cls.kv = read_csv(os.path.join(cls.out, "pd_split_kvcache.csv"))
        cls.coord = read_csv(os.path.join(cls.out, "coordinator.csv"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def row(self, rid):
        rows = [r for r in self.comm if r["rid"] == rid]
        self.assertEqual(len(rows), 1, rid)
        return rows[0]

    def test_one_row_per_request_in_start_order(self):
        # r9's records are in domain Other: no row; d-3 is named by the front end's r3
        self.assertEqual([r["rid"] for r in self.comm], ["r1", "r2", "r3"])

    def test_reference_columns_are_epoch_ms(self):
        r = self.row("r1")
        t0 = 1_700_000_000_000.0
        self.assertAlmostEqual(float(r["http_req_time(ms)"]) - t0, 0.0, places=3)
        self.assertAlmostEqual(float(r["send_request_time(ms)"]) - t0, 10.0, places=3)
        self.assertAlmostEqual(float(r["send_request_succ_time(ms)"]) - t0, 12.0, places=3)
        self.assertAlmostEqual(float(r["prefill_res_time(ms)"]) - t0, 30.0, places=3)
        self.assertAlmostEqual(float(r["request_end_time(ms)"]) - t0, 100.0, places=3)
        self.assertEqual(r["http_req_time(ms)"], "1700000000000.000")

    def test_derived_durations(self):
        r = self.row("r1")
        self.assertEqual(r["prefill_time(ms)"], "10.000")      # 10 - 0
        self.assertEqual(r["send_time(ms)"], "2.000")         # 12 - 10
        self.assertEqual(r["kv_transfer_time(ms)"], "5.000")  # PullKVCache 13..18
        self.assertEqual(r["first_decode_time(ms)"], "3.000")  # first decode 21 - pull end 18
        self.assertEqual(r["ttft(ms)"], "21.000")             # first decode token 21 - 0
        self.assertAlmostEqual(float(r["handoff_share"]), 8 / 21, places=6)  # (18 - 10) / 21

    def test_without_pull_ttft_is_prefill_response(self):
        r = self.row("r2")
        self.assertEqual(r["ttft(ms)"], "20.000")  # prefillRes 70 - receiveReq 50
        self.assertEqual(r["send_time(ms)"], "")  # no sendReqToDSucc
        self.assertEqual(r["kv_transfer_time(ms)"], "")
        self.assertEqual(r["handoff_share"], "")
        self.assertEqual(r["request_end_time(ms)"], "")

    def test_link_after_both_ids_had_records(self):
        r = self.row("r3")
        self.assertEqual(r["kv_transfer_time(ms)"], "4.000")  # 200..204, recorded as d-3
        self.assertEqual(r["first_decode_time(ms)"], "2.000")  # 206 - 204
        self.assertEqual(r["ttft(ms)"], "16.000")  # 206 - 190
        self.assertAlmostEqual(float(r["handoff_share"]), 9 / 16, places=6)  # (204 - 195) / 16

    def test_kvcache_rows(self):
        self.assertEqual(len(self.kv), 2)
        a, b = self.kv
        self.assertEqual((a["domain"], a["rank"], a["rid"]), ("KVCache", "2", "r1"))  # linked at 11
        self.assertEqual(a["block_tables"], "[[1,2,3]]")
        self.assertEqual(a["batch_seq_len"], "[40]")
        self.assertEqual(a["during_time(ms)"], "5.000")
        self.assertEqual(a["start_datetime"], "2023-11-14 22:13:20.013000")
        self.assertEqual(a["end_datetime"], "2023-11-14 22:13:20.018000")
        self.assertEqual(a["start_time(ms)"], "1700000000013.000")
        self.assertEqual(a["end_time(ms)"], "1700000000018.000")
        self.assertEqual(a["kv_bytes"], "3000")  # 3 blocks x 1000 bytes
        self.assertAlmostEqual(float(a["transfer_rate(MB/s)"]), 0.6)  # 3000 B / 5 ms
        self.assertEqual(b["rid"], "d-3")  # its Link comes later
        self.assertEqual(b["kv_bytes"], "8000")
        self.assertAlmostEqual(float(b["transfer_rate(MB/s)"]), 2.0)  # 8000 B / 4 ms

    def test_coordinator_rows(self):
        got = [(r["rid"], r["address"], r["start_datetime"][-9:],
                [k for k in ("prefillStart", "decodeStart", "prefillEnd", "decodeEnd") if r[k] == "1"])
               for r in self.coord]
        self.assertEqual(got, [
            ("c1", P_ADDR, "20.000000", ["prefillStart"]),
            ("c1", P_ADDR, "20.030000", ["prefillEnd"]),  # the first GenerateToken of phase prefill
            ("c1", D_ADDR, "20.030000", ["decodeStart"]),  # the same moment, on D
            ("c1", D_ADDR, "20.100000", ["decodeEnd"]),  # ReqFinish of domain Coordinator only
            ("c2", P_ADDR, "30.000000", ["prefillStart"]),
            ("c2", P_ADDR, "30.100000", ["prefillEnd"]),  # phase in any case
            ("c2", D_ADDR, "30.100000", ["decodeStart"]),
        ])

    def test_coordinator_running_per_5_seconds(self):
        rows = read_csv(os.path.join(self.out, "coordinator_running.csv"))
        got = [(r["time"][-8:], r["address"], r["node_type"], r["add_count"], r["end_count"], r["running_count"])
               for r in rows]
        self.assertEqual(got, [
            ("22:13:20", P_ADDR, "prefill", "1", "1", "0"),  # c1: 0 ms start, 30 ms end
            ("22:13:20", D_ADDR, "decode", "1", "1", "0"),  # c1: 30 ms start, 100 ms end
            ("22:13:25", P_ADDR, "prefill", "0", "0", "0"),  # no moment: every bucket is written
            ("22:13:25", D_ADDR, "decode", "0", "0", "0"),
            ("22:13:30", P_ADDR, "prefill", "1", "1", "0"),  # c2
            ("22:13:30", D_ADDR, "decode", "1", "0", "1"),  # c2 still decoding
        ])

    def test_summary_lines(self):
        out = self.proc.stdout
        self.assertIn("PD hand-off: 3 requests (rows: pd_split_communication 3, pd_split_kvcache 2, "
                      "coordinator 7)", out)
        lines = {l.split(" P50")[0].strip(): l for l in out.splitlines() if " P50 " in l}
        self.assertIn("P50      5.000 ms", lines["prefill on P"])  # 10, 5, 5
        self.assertIn("P50     20.000 ms", lines["TTFT (PD)"])  # 21, 20, 16
        self.assertIn("(n=2)", lines["KV transfer"])  # r2 pulled nothing
        self.assertIn("P50        1.3 MB/s", lines["KV pull rate"])  # 0.6 and 2.0

    def test_profiler_db_tables(self):
        db = sqlite3.connect(os.path.join(self.out, "profiler.db"))
        try:
            rows = db.execute('SELECT rid, "ttft(ms)", "kv_transfer_time(ms)" FROM pd_split_communication'
                              ' ORDER BY rid').fetchall()
            self.assertEqual([(r[0], round(r[1], 3), r[2] and round(r[2], 3)) for r in rows],
                             [("r1", 21.0, 5.0), ("r2", 20.0, None), ("r3", 16.0, 4.0)])
            self.assertEqual(db.execute("SELECT count(*), sum(kv_bytes) FROM pd_split_kvcache").fetchone(),
                             (2, 11000))
            self.assertEqual(db.execute("SELECT count(*) FROM coordinator WHERE address = ?", (D_ADDR,))
                             .fetchone()[0], 3)
            self.assertEqual(db.execute("SELECT sum(add_count), sum(end_count) FROM coordinator_running")
                             .fetchone(), (4, 3))
        finally:
            db.close()

    def test_reference_views(self):
        """The reference's views of these reports, with its column names."""
        db = sqlite3.connect(os.path.join(self.out, "profiler.db"))
        try:
            def cols(view):
                return [c[1] for c in db.execute('PRAGMA table_info("%s")' % view)]
            # pd_communication_info: the table as is (it has the (ms) names the reference's view adds)
            self.assertEqual(cols("pd_communication_info")[:6], [
                "rid", "http_req_time(ms)", "send_request_time(ms)", "send_request_succ_time(ms)",
                "prefill_res_time(ms)", "request_end_time(ms)"])
            self.assertEqual(db.execute('SELECT rid, round("ttft(ms)", 3) FROM pd_communication_info ORDER BY rid')
                             .fetchall(), [("r1", 21.0), ("r2", 20.0), ("r3", 16.0)])
            # pd_split_pull_kvcache: start/end datetimes under the reference's start_time / end_time
            self.assertEqual(cols("pd_split_pull_kvcache")[:10], [
                "domain", "rank", "rid", "block_tables", "batch_seq_len", "during_time(ms)", "start_time",
                "end_time", "start_time(ms)", "end_time(ms)"])
            row = db.execute('SELECT start_time, end_time, "during_time(ms)" FROM pd_split_pull_kvcache '
                             "WHERE rid = 'r1'").fetchone()
            self.assertEqual(row[0][-15:], "22:13:20.013000")  # pull 13..18 ms (TZ=UTC)
            self.assertEqual(row[1][-15:], "22:13:20.018000")
            self.assertAlmostEqual(row[2], 5.0, places=6)
            # coordinator_info: the reference's coordinator table is our coordinator_running
            self.assertEqual(cols("coordinator_info"),
                             ["time", "address", "node_type", "add_count", "end_count", "running_count"])
            self.assertEqual(db.execute("SELECT count(*) FROM coordinator_info").fetchone()[0], 6)
            # Coordinator_curve: one column per instance, requests added per 5-second bucket
            self.assertEqual(cols("Coordinator_curve"),
                             ["time", "decode " + D_ADDR, "prefill " + P_ADDR])
            got = [(t[-8:], d, p) for t, d, p in db.execute("SELECT * FROM Coordinator_curve")]
            self.assertEqual(got, [("22:13:20", 1, 1), ("22:13:25", 0, 0), ("22:13:30", 1, 1)])
        finally:
            db.close()

    def test_malformed_pd_records(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = Store(os.path.join(tmp, "in", "ms_service_bad.db"), hostname="node")
            s.raw("PullKVCache", ns(1), 2_000_000, "KVCache", '{"type":2,"rid":"x1","rank":')  # cut short
            s.span("PullKVCache", 5, 6, cat="KVCache", rid="x2", rank="abc", bytes="many", block_tables="[[1")
            s.event("receiveReq", 7, cat="Communication")  # no rid: no request to put it on
            s.event("GenerateToken", 8, cat="Coordinator", rid="c9", Phase="prefill")  # before its dispatch
            s.event("RequestDispatch", 9, cat="Coordinator", rid="c9", PrefillAddress=P_ADDR)  # no decode address
            s.event("ReqFinish", 10, cat="Coordinator", rid="c9")
            s.close()
            p = run_parse(os.path.join(tmp, "in"), os.path.join(tmp, "out"))
            kv = read_csv(os.path.join(tmp, "out", "pd_split_kvcache.csv"))
            self.assertEqual([(r["rid"], r["rank"], r["kv_bytes"], r["during_time(ms)"]) for r in kv],
                             [("x1", "", "", "2.000"), ("x2", "", "", "1.000")])
            self.assertEqual(kv[1]["block_tables"], "[[1")  # kept as written
            self.assertFalse(os.path.exists(os.path.join(tmp, "out", "pd_split_communication.csv")))
            coord = read_csv(os.path.join(tmp, "out", "coordinator.csv"))
            self.assertEqual([(r["rid"], r["prefillStart"]) for r in coord], [("c9", "1")])
            self.assertEqual(p.returncode, 0)
            self.assertIn("1 hand-off record(s) (Communication/Coordinator) name no request", p.stderr)

    def test_no_pd_records_no_pd_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = Store(os.path.join(tmp, "in", "ms_service_x.db"))
            s.event("httpReq", 0, cat="Request", rid="h1")
            s.event("decode", 5, cat="Request", rid="h1")
            s.close()
            p = run_parse(os.path.join(tmp, "in"), os.path.join(tmp, "out"))
            for f in ("pd_split_communication.csv", "pd_split_kvcache.csv", "coordinator.csv"):
                self.assertFalse(os.path.exists(os.path.join(tmp, "out", f)), f)
            self.assertNotIn("pd_split", p.stderr)
            self.assertNotIn("PD hand-off", p.stdout)


if __name__ == "__main__":
    unittest.main()
