# SPDX-License-Identifier: Apache-2.0
"""test_pd_clocks.py — hosts whose clocks disagree, for real: tiny-llm-pd's
three instances, each made to look like its own host by a preloaded helper
(clockshift.c: gethostname answers a name of its own, CLOCK_REALTIME reads
are moved), the decode host's clock 2.5 s behind and the prefill host's
40 ms ahead. `servprof parse` must bound each host's offset from the
requests' causal pairs with the true shift inside the bound and the
estimate inside too, and after alignment no hand-off step runs backwards
and every parsed TTFT fits inside the client's.
"""
import os
import subprocess
import tempfile
import unittest

from support.demo_util import BUILD, CLI, SLACK  # noqa: E402
from test_pd import Proc, generate, profiled_env, read_csv  # noqa: E402

SHIM = os.path.join(BUILD, "tests", "demo", "clockshift.so")
D_SHIFT_MS, P_SHIFT_MS = -2500.0, 40.0
N_REQ = 6


class PdClocks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        _, base = profiled_env(cls.tmp.name)

        def env(host, shift_ms):
            e = dict(base, LD_PRELOAD=SHIM, CLOCKSHIFT_HOST=host, CLOCKSHIFT_NS=str(int(shift_ms * 1e6)))
            e["ASAN_OPTIONS"] = e.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
            return e
        d = Proc(cls.tmp.name, "decode", env("dhost", D_SHIFT_MS))
        p = Proc(cls.tmp.name, "prefill", env("phost", P_SHIFT_MS))
        r = Proc(cls.tmp.name, "router", env("rhost", 0.0), "--prefill-port", str(p.port),
                 "--decode-port", str(d.port))
        try:
            cls.client = [generate(r.port, [(3 * i + j) % 1000 for j in range(24 + 8 * i)], 5)
                          for i in range(N_REQ)]
        finally:
            cls.rcs = [x.stop() for x in (r, p, d)]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def parse(self, name, *extra):
        out = os.path.join(self.tmp.name, name)
        p = subprocess.run([CLI, "parse", os.path.join(self.tmp.name, "prof"), "-o", out, "--no-progress", "-q",
                            *extra], capture_output=True, text=True, timeout=300 * SLACK)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out

    def test_hosts_are_apart(self):
        self.assertEqual(self.rcs, [0, 0, 0])
        out = self.parse("plain")
        hosts = {r["hostname"]: r for r in read_csv(os.path.join(out, "clock_offsets.csv"))}
        self.assertEqual(set(hosts), {"rhost", "phost", "dhost"})

    def test_offsets_bounded_and_aligned(self):
        out = self.parse("est")
        hosts = {r["hostname"]: r for r in read_csv(os.path.join(out, "clock_offsets.csv"))}
        self.assertEqual(hosts["rhost"]["source"], "reference")  # the router is every request's front end
        for name, true in (("dhost", D_SHIFT_MS), ("phost", P_SHIFT_MS)):
            h = hosts[name]
            lo, hi, est = float(h["lower_bound(ms)"]), float(h["upper_bound(ms)"]), float(h["offset(ms)"])
            self.assertTrue(lo <= true <= hi, (name, lo, true, hi))
            self.assertTrue(lo <= est <= hi, (name, lo, est, hi))
            self.assertGreaterEqual(int(h["pairs"]), N_REQ)
        rows = read_csv(os.path.join(out, "pd_split_communication.csv"))
        self.assertEqual(len(rows), N_REQ)
        for r, (_, client_ns) in zip(rows, self.client):
            for col in ("prefill_time(ms)", "kv_transfer_time(ms)", "first_decode_time(ms)", "ttft(ms)"):
                self.assertGreaterEqual(float(r[col]), 0.0, (r["rid"], col))
            self.assertLessEqual(float(r["ttft(ms)"]), client_ns / 1e6 + 0.001, r)
        kv = {k["rid"]: k for k in read_csv(os.path.join(out, "pd_split_kvcache.csv"))}
        for r in rows:  # the pull (on dhost) starts after the router sent the request to D
            self.assertGreaterEqual(float(kv[r["rid"]]["start_time(ms)"]), float(r["send_request_time(ms)"]), r)

    def test_without_alignment_the_handoff_runs_backwards(self):
        out = self.parse("raw", "--clock-offset", "dhost=0", "--clock-offset", "phost=0")
        rows = read_csv(os.path.join(out, "pd_split_communication.csv"))
        self.assertTrue(all(float(r["ttft(ms)"]) < 0 for r in rows), rows)


if __name__ == "__main__":
    unittest.main()
