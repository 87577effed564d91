# SPDX-License-Identifier: Apache-2.0
"""Per-host clock alignment: stores of three hosts (front end "fe", prefill
"p", decode "d") where d's clock is written 7 s behind true time and p's
3 ms ahead. The parser must bound each offset from the requests' causal
pairs, land inside the bound, and after alignment no hand-off step may run
backwards; --clock-offset overrides the estimate.
"""
import os
import subprocess
import tempfile
import unittest

from support.fixtures import Store, read_csv, run_parse  # noqa: E402

D_SHIFT_MS = -7000.0  # d's clock reads 7 s behind
P_SHIFT_MS = 3.0
N = 12


def build(inp):
    fe = Store(os.path.join(inp, "fe", "ms_service_fe.db"), hostname="fe", pid=100)
    p = Store(os.path.join(inp, "p", "ms_service_p.db"), hostname="p", pid=200)
    d = Store(os.path.join(inp, "d", "ms_service_d.db"), hostname="d", pid=300)
    for i in range(N):
        t = 100.0 * i
        rid = "r%d" % i
        fe.event("receiveReq", t, cat="Communication", rid=rid)
        fe.event("decodeRes", t + 50 + i % 3, cat="Communication", rid=rid)
        ps, ds = t + P_SHIFT_MS, t + D_SHIFT_MS  # what each host's clock reads at true time t
        p.link(ps + 1, rid, "p-%d" % i)
        p.span("prefill", ps + 2, ps + 20, cat="Engine", rid="p-%d" % i)
        p.event("sendReqToD", ps + 20, cat="Communication", rid="p-%d" % i)
        d.link(ds + 21, rid, "d-%d" % i)
        d.event("sendReqToDSucc", ds + 22, cat="Communication", rid="d-%d" % i)
        d.span("PullKVCache", ds + 22, ds + 25, cat="KVCache", rid="d-%d" % i, rank=0, bytes=1000)
        d.event("decode", ds + 26, cat="Request", rid="d-%d" % i)
        d.event("decode", ds + 45 - i % 4, cat="Request", rid="d-%d" % i)
    for s in (fe, p, d):
        s.close()


def offsets(out):
    return {r["hostname"]: r for r in read_csv(os.path.join(out, "clock_offsets.csv"))}


class ClockAlign(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.inp = os.path.join(cls.tmp.name, "in")
        build(cls.inp)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def parse(self, name, *extra):
        out = os.path.join(self.tmp.name, name)
        p = run_parse(self.inp, out, *extra)
        return out, p

    def assert_causal(self, out):
        rows = read_csv(os.path.join(out, "pd_split_communication.csv"))
        self.assertEqual(len(rows), N)
        for r in rows:
            for col in ("prefill_time(ms)", "send_time(ms)", "kv_transfer_time(ms)", "first_decode_time(ms)"):
                self.assertGreaterEqual(float(r[col]), 0.0, (r["rid"], col, r[col]))
            self.assertLessEqual(float(r["send_request_succ_time(ms)"]), float(r["request_end_time(ms)"]), r)
            self.assertLessEqual(float(r["ttft(ms)"]), 50.0, r)

    def test_estimate_within_bound_and_causal(self):
        out, p = self.parse("est")
        o = offsets(out)
        self.assertEqual(o["fe"]["source"], "reference")  # the front end of every request
        self.assertEqual(float(o["fe"]["offset(ms)"]), 0.0)
        d = o["d"]
        self.assertEqual(d["source"], "estimated")
        self.assertEqual(int(d["pairs"]), 2 * N)  # per request: inside fe's interval, and pulled after p sent
        lo, hi, est = float(d["lower_bound(ms)"]), float(d["upper_bound(ms)"]), float(d["offset(ms)"])
        self.assertLessEqual(lo, D_SHIFT_MS)  # the true shift is inside the bound ...
        self.assertGreaterEqual(hi, D_SHIFT_MS)
        self.assertTrue(lo <= est <= hi)  # ... and so is the estimate
        # Bound by hand (clock readings; d reads t-7000, p t+3 at true time t). d inside fe:
        # d.first - fe.first = 21 - 7000, fe.last - d.last >= 5 + 7000 (i = 0) -> off(d) >= -7005.
        # p inside fe: off(p) <= 1 + 3 = 4. Pulled on d after p sent: off(d) - off(p) <= (22 - 7000) - (20 + 3)
        # = -7001, so off(d) <= 4 - 7001 = -6997 (tighter than -6979).
        self.assertAlmostEqual(lo, -7005.0, places=3)
        self.assertAlmostEqual(hi, -6997.0, places=3)
        self.assertAlmostEqual(est, -6997.0, places=3)  # the point of the bound nearest to agreeing clocks
        # p: off(p) >= off(d) + 7001 >= -7005 + 7001 = -4, <= 4; once d is fixed at -6997, p must be 4
        po = o["p"]
        self.assertAlmostEqual(float(po["lower_bound(ms)"]), -4.0, places=3)
        self.assertAlmostEqual(float(po["upper_bound(ms)"]), 4.0, places=3)
        self.assertEqual(po["offset(ms)"], "4.000")
        self.assertTrue(float(po["lower_bound(ms)"]) <= P_SHIFT_MS <= float(po["upper_bound(ms)"]))
        self.assertIn("clock of host 'd'", p.stderr)
        self.assert_causal(out)

    def test_unaligned_would_run_backwards(self):
        # the same stores with d's offset forced to 0: the hand-off runs backwards
        out, _ = self.parse("zero", "--clock-offset", "d=0")
        rows = read_csv(os.path.join(out, "pd_split_communication.csv"))
        self.assertLess(float(rows[0]["send_time(ms)"]), -6000.0)
        self.assertEqual(offsets(out)["d"]["source"], "override")

    def test_override_exact(self):
        out, _ = self.parse("ovr", "--clock-offset=d=-7000000000", "--clock-offset", "p=3000000")
        o = offsets(out)
        self.assertEqual(o["d"]["offset(ms)"], "-7000.000")
        self.assertEqual(o["p"]["offset(ms)"], "3.000")
        rows = read_csv(os.path.join(out, "pd_split_communication.csv"))
        for r in rows:  # true times: send at t+20 on p, ack at t+22 on d, pull 22..25, decode 26
            self.assertEqual(r["send_time(ms)"], "2.000")
            self.assertEqual(r["prefill_time(ms)"], "20.000")
            self.assertEqual(r["ttft(ms)"], "26.000")
        self.assert_causal(out)

    def test_bad_override_is_usage_error(self):
        for bad in ("d", "d=", "=5", "d=5ms", "d=99999999999999999999", "d=1000000000000001", "d=-2e9"):
            p = subprocess.run([os.environ["SERVPROF_BIN"], "parse", self.inp, "-o",
                                os.path.join(self.tmp.name, "bad"), "--clock-offset", bad],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, bad)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn("--clock-offset", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "bad")))

    def test_unknown_host_warned(self):
        _, p = self.parse("unk", "--clock-offset", "nosuch=5")
        self.assertIn("no store comes from host 'nosuch'", p.stderr)

    def test_no_kernel_state_recorded(self):
        out, _ = self.parse("nokernel")
        for h in offsets(out).values():
            self.assertEqual((h["clock_synced"], h["kernel_max_error(ms)"], h["kernel_bound_used"]), ("", "", "0"))

    def kernel_case(self, name, q_shift_ms):
        """fe and q, both saying (Meta) their kernel keeps the clock within 2 ms of true time;
        q's records lie in [t+5, t+20] of fe's [t, t+50]."""
        inp = os.path.join(self.tmp.name, name + "-in")
        meta = {"clock_synced": 1, "clock_maxerror_us": 2000}
        fe = Store(os.path.join(inp, "ms_service_fe.db"), hostname="fe", pid=100, meta=meta)
        q = Store(os.path.join(inp, "ms_service_q.db"), hostname="q", pid=200, meta=meta)
        for i in range(5):
            t = 100.0 * i
            fe.event("receiveReq", t, cat="Communication", rid="r%d" % i)
            fe.event("decodeRes", t + 50, cat="Communication", rid="r%d" % i)
            q.link(t + 5 + q_shift_ms, "r%d" % i, "q-%d" % i)
            q.event("decode", t + 20 + q_shift_ms, cat="Request", rid="q-%d" % i)
        fe.close()
        q.close()
        out = os.path.join(self.tmp.name, name + "-out")
        p = run_parse(inp, out)
        return offsets(out)["q"], p

    def test_kernel_error_bounds_the_offset(self):
        q, _ = self.kernel_case("kern", 0.0)
        # records: off(q) in [20 - 50, 5 - 0] = [-30, 5] ms; kernels: |off(q)| <= 2 + 2 ms
        self.assertEqual((q["lower_bound(ms)"], q["upper_bound(ms)"]), ("-4.000", "4.000"))
        self.assertEqual(q["offset(ms)"], "0.000")
        self.assertEqual((q["clock_synced"], q["kernel_max_error(ms)"], q["kernel_bound_used"]),
                         ("1", "2.000", "1"))

    def test_kernel_bounds_contradicting_records_are_dropped(self):
        q, p = self.kernel_case("kernbad", -7000.0)  # q says synced, yet reads 7 s behind
        self.assertIn("contradict the records", p.stderr)
        self.assertEqual(q["kernel_bound_used"], "0")
        self.assertEqual((q["lower_bound(ms)"], q["upper_bound(ms)"]), ("-7030.000", "-6995.000"))
        self.assertEqual(q["offset(ms)"], "-6995.000")

    def test_one_host_untouched(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = Store(os.path.join(tmp, "in", "ms_service_x.db"), hostname="solo")
            s.event("receiveReq", 0, cat="Communication", rid="a")
            s.close()
            run_parse(os.path.join(tmp, "in"), os.path.join(tmp, "out"))
            self.assertFalse(os.path.exists(os.path.join(tmp, "out", "clock_offsets.csv")))


if __name__ == "__main__":
    unittest.main()
