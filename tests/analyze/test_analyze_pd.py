# SPDX-License-Identifier: Apache-2.0
"""analyze's findings of disaggregated serving (handoff, pd_imbalance,
slow_kv_pull) on hand-built raw stores, read both ways: raw stores through
the parser's tap, and the profiler.db of `servprof parse`.

Each request: the front end's Communication events (receiveReq,
sendReqToD, sendReqToDSucc, decodeRes), and on the decode instance a Link
to its own id, one PullKVCache span (rank, bytes) and its first decode
token. Times are ms after the fixture's T0; every expected figure is worked
out by hand in the comments."""
import json
import os
import subprocess
import tempfile
import unittest

from support.fixtures import run_parse
from support.pd_stores import build_balanced, build_coordinator_only, build_unbalanced

CLI = os.environ["SERVPROF_BIN"]
PD_IDS = {"handoff", "pd_imbalance", "slow_kv_pull"}


def analyze(path, *extra):
    p = subprocess.run([CLI, "analyze", "-i", path, "--format", "json", *extra], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def by_id(doc):
    return {f["id"]: f for f in doc["findings"]}


class PdFindings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.docs = {}
        for name, build in (("unbalanced", build_unbalanced), ("balanced", build_balanced),
                            ("coordinator", build_coordinator_only)):
            inp = os.path.join(cls.tmp.name, name, "in")
            out = os.path.join(cls.tmp.name, name, "out")
            build(inp)
            run_parse(inp, out)
            cls.docs[name] = {"raw": analyze(inp), "db": analyze(out)}
            cls.docs[name]["inp"] = inp

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def each_path(self, name):
        for path in ("raw", "db"):
            with self.subTest(path=path):
                yield path, by_id(self.docs[name][path])

    def test_sources(self):
        self.assertEqual(self.docs["unbalanced"]["raw"]["source"], "raw")
        self.assertEqual(self.docs["unbalanced"]["db"]["source"], "profiler.db")

    def test_handoff_share(self):
        for _, f in self.each_path("unbalanced"):
            h = f["handoff"]
            self.assertTrue(h["bottleneck"])
            self.assertEqual(h["figure"]["name"], "handoff_share_of_ttft")
            self.assertAlmostEqual(h["figure"]["value"], (10 / 21 + 20 / 61 + 10 / 81) / 3, places=6)
            self.assertEqual(h["threshold"], {"name": "handoff_share", "value": 0.30, "op": ">="})
            # largest share first: r1 (0.476), r2, r3
            self.assertEqual([e["rid"] for e in h["examples"]], ["r1", "r2", "r3"])
            self.assertAlmostEqual(h["score"], h["figure"]["value"], places=6)  # no request rows
            # 10 windows of 8.2 ms over 0..82; hand-offs [10,20], [40,60], [70,80]
            self.assertEqual(h["windows"], [1, 2, 4, 5, 6, 7, 8, 9])

    def test_pd_imbalance(self):
        for _, f in self.each_path("unbalanced"):
            b = f["pd_imbalance"]
            self.assertAlmostEqual(b["figure"]["value"], 29 / 81, places=6)
            self.assertIn("prefill queues while decode idles", b["title"])
            # longest stretch first: [22, 40] then [0, 11]
            self.assertEqual([e["what"] for e in b["examples"]],
                             ["prefill queued, decode idle for 18.00 ms", "prefill queued, decode idle for 11.00 ms"])
            self.assertEqual(b["examples"][1]["ts_ns"] + 22_000_000, b["examples"][0]["ts_ns"])
            self.assertAlmostEqual(b["score"], 29 / 82, places=6)  # run: first to last moment, 0..82 ms
            self.assertEqual(b["windows"], [0, 1, 2, 3, 4])  # [0,11] and [22,40]

    def test_pd_imbalance_from_the_coordinator(self):
        for _, f in self.each_path("coordinator"):
            b = f["pd_imbalance"]
            self.assertAlmostEqual(b["figure"]["value"], 28 / 82, places=6)
            self.assertIn("(coordinator moments)", b["evidence"])
            # its local datetime text read back: the longest stretch starts 22 ms after T0
            self.assertEqual(b["examples"][0]["ts_ns"], 1_700_000_000_022_000_000)
            self.assertFalse({"handoff", "slow_kv_pull"} & set(f))

    def test_slow_kv_pull_by_rank(self):
        for _, f in self.each_path("unbalanced"):
            k = f["slow_kv_pull"]
            self.assertAlmostEqual(k["figure"]["value"], 18 / 8, places=6)
            self.assertIn("rank 1", k["title"])
            self.assertEqual([e["rid"] for e in k["examples"]], ["r2"])
            self.assertEqual(k["windows"], [5, 6, 7])  # r2's pull [42,60]
            self.assertAlmostEqual(k["score"], 1 - 8 / 18, places=6)  # no request rows: 1 - fast/slow

    def test_balanced_is_silent(self):
        for _, f in self.each_path("balanced"):
            self.assertFalse(PD_IDS & set(f), f.keys())

    def test_thresholds_are_named_and_overridable(self):
        doc = self.docs["unbalanced"]["raw"]
        for name, value in (("handoff_share", 0.30), ("pd_queue_min", 2), ("pd_imbalance_frac", 0.20),
                            ("kv_pull_ratio", 1.5)):
            self.assertEqual(doc["thresholds"][name], value)
        inp = self.docs["unbalanced"]["inp"]
        f = by_id(analyze(inp, "--threshold", "handoff_share=0.4", "--threshold", "pd_queue_min=4",
                          "--threshold", "kv_pull_ratio=2.5"))
        self.assertFalse(PD_IDS & set(f), f.keys())
        # pd_queue_min 3: only [0, 10] (P = 3) counts: 10 / 81
        f = by_id(analyze(inp, "--threshold", "pd_queue_min=3", "--threshold", "pd_imbalance_frac=0.1"))
        self.assertAlmostEqual(f["pd_imbalance"]["figure"]["value"], 10 / 81, places=6)

    def test_verdict_names_a_pd_finding(self):
        doc = self.docs["unbalanced"]["db"]
        self.assertEqual(doc["headline"]["verdict"], "bottleneck")
        self.assertIn(doc["headline"]["top_finding"], PD_IDS)


if __name__ == "__main__":
    unittest.main()
