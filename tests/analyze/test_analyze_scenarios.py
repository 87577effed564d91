# SPDX-License-Identifier: Apache-2.0
"""test_analyze_scenarios.py — planted limits on the real demo server
(tiny-llm-server under servprof-load, collection on): analyze must rank the
planted cause first, and report no bottleneck for an under-loaded server.
Each run serves 5 s of load (under 20 s with the drain). Sanitizer builds
run the same scenarios for 3 s at a third of the rate (the server is many
times slower there); the under-loaded one runs short requests on the small
model, as does the host-stalled one under TSan (whose model steps are
~100x slower), with a 10x longer planted delay."""
import unittest

import scenario_util as su  # noqa: E402

SANITIZED = bool(su.demo_util.SANITIZE)
SECONDS = 3 if SANITIZED else 5
SLOW = 3.0 if SANITIZED else 1.0
DELAY_SCALE = 10 if su.demo_util.SANITIZE == "thread" else 1
# short requests for the small model (sanitizer builds: the model's steps are slow there)
SHORT = ["--vocab", "1024", "--prompt-len", "16:32", "--output-len", "4:8", "--prefix-fraction", "0"]


def rate(r):
    return ["--rate", "%g" % (r / SLOW)]


class Scenarios(unittest.TestCase):
    def run_scenario(self, server, load):
        prof = su.profile(server, load, SECONDS)
        doc = su.analyze(prof)
        return doc, su.describe(doc)

    def assert_first(self, doc, why, finding):
        f = doc["findings"]
        self.assertTrue(f, why)
        self.assertEqual(f[0]["id"], finding, why)
        self.assertTrue(f[0]["bottleneck"], why)
        self.assertEqual(doc["headline"]["verdict"], "bottleneck", why)
        self.assertEqual(doc["headline"]["top_finding"], finding, why)
        # evidence: the figure crossed its threshold, windows and examples to look at
        fig, th = f[0]["figure"]["value"], f[0]["threshold"]
        self.assertTrue(fig >= th["value"] if th["op"] == ">=" else fig <= th["value"], why)
        self.assertTrue(f[0]["windows"], why)
        self.assertTrue(f[0]["examples"], why)
        self.assertTrue(f[0]["knob"], why)

    def test_queue_bound(self):
        # one request at a time: arrivals beyond what the engine admits
        doc, why = self.run_scenario(["--max-num-seqs", "1"], rate(30) + ["--output-len", "32:64"])
        self.assert_first(doc, why, "queueing")
        self.assertGreater(doc["headline"]["queue_ms"]["mean"], 0.2 * doc["headline"]["e2e_ms"]["mean"], why)

    def test_kv_bound(self):
        # 72 blocks of 16 tokens: four or five requests of 300-430 tokens fill the pool
        doc, why = self.run_scenario(["--num-blocks", "72", "--no-prefix-caching"],
                                     rate(30) + ["--prompt-len", "200:300", "--output-len", "64:128",
                                                 "--prefix-fraction", "0"])
        self.assert_first(doc, why, "kv_pressure")
        self.assertGreaterEqual(doc["headline"]["kv_usage_peak"], 0.9, why)

    def test_prefill_interference(self):
        # long prompts prefilled in the same steps as running decodes; KV plentiful
        doc, why = self.run_scenario(["--max-batched-tokens", "1024", "--num-blocks", "4096"],
                                     rate(8) + ["--prompt-len", "700:900", "--output-len", "64:128",
                                                "--prefix-fraction", "0"])
        self.assert_first(doc, why, "prefill_interference")

    def test_host_stalled(self):
        # 3 ms of host work after every step, device idle (a small model: steps are short)
        doc, why = self.run_scenario(su.SMALL_MODEL + ["--step-host-delay-us", str(3000 * DELAY_SCALE)],
                                     rate(10) + (SHORT if DELAY_SCALE > 1 else ["--vocab", "1024"]))
        self.assert_first(doc, why, "host_stalls")

    def test_under_loaded(self):
        doc, why = self.run_scenario(su.SMALL_MODEL if SANITIZED else [], rate(3) + (SHORT if SANITIZED else []))
        self.assertEqual(doc["headline"]["verdict"], "under_loaded", why)
        self.assertIsNone(doc["headline"]["top_finding"], why)
        self.assertFalse([f["id"] for f in doc["findings"] if f["bottleneck"]], why)
        self.assertEqual(doc["findings"][0]["id"], "under_loaded", why)


if __name__ == "__main__":
    unittest.main()
