# SPDX-License-Identifier: Apache-2.0
"""test_py_engine.py — the asyncio example engine, parsed into reports.

Runs examples/python-engine/engine.py with collection on, then
`servprof parse` on its store, and checks the request and batch reports:
one row per request, batches of both kinds, times that make sense.
"""

import csv
import os
import sys
import unittest

import sp_testlib as T

ENGINE = os.path.join(T.SOURCE, "examples", "python-engine", "engine.py")


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Engine(unittest.TestCase):

    def run_engine(self, *extra):
        d = T.tmpdir(self)
        prof = os.path.join(d, "prof")
        p = T.run([sys.executable, "-B", ENGINE, "--prof-dir", prof, *extra], timeout=120)
        self.assertIn("served", p.stdout)
        stores = T.stores(prof)
        self.assertEqual(len(stores), 1, stores)
        return d, prof, stores[0]

    def test_parsed_reports(self):
        n = 24
        d, prof, store = self.run_engine("--requests", str(n), "--seed", "7")
        out = os.path.join(d, "out")
        T.run([os.environ["SERVPROF_BIN"], "parse", "--input-path", prof, "--output-path", out],
              timeout=120)

        reqs = read_csv(os.path.join(out, "request.csv"))
        self.assertEqual(len(reqs), n, "one request.csv row per request")
        self.assertEqual(sorted(r["http_rid"] for r in reqs),
                         sorted("http-%d" % i for i in range(n)))
        for r in reqs:
            self.assertGreater(float(r["execution_time(ms)"]), 0, r)
            ttft = float(r["first_token_latency(ms)"])
            self.assertTrue(0 < ttft <= float(r["execution_time(ms)"]), r)
            self.assertGreaterEqual(int(r["reply_token_size"]), 4, r)
            self.assertGreaterEqual(int(r["recv_token_size"]), 16, r)

        batches = read_csv(os.path.join(out, "batch.csv"))
        self.assertTrue(batches, "batch.csv is empty")
        names = {b["name"] for b in batches}
        self.assertIn("batchFrameworkProcessing", names)
        self.assertIn("modelExec", names)
        types = {b["batch_type"] for b in batches}
        self.assertIn("Prefill", " ".join(types))
        self.assertIn("Decode", " ".join(types))
        for b in batches:
            self.assertGreaterEqual(int(b["batch_size"]), 1, b)
            self.assertLessEqual(int(b["batch_size"]), 8, b)
            self.assertGreaterEqual(float(b["during_time(ms)"]), 0, b)
        execs = [b for b in batches if b["name"] == "modelExec"]
        # every step sleeps at least --step-ms (2 ms)
        self.assertTrue(all(float(b["during_time(ms)"]) >= 2.0 for b in execs))
        self.assertTrue(os.path.getsize(os.path.join(out, "forward.csv")) > 0)

    def test_preemption_under_kv_pressure(self):
        _, _, store = self.run_engine("--requests", "30", "--rate", "0", "--kv-blocks", "15")
        rows = T.rows(store)
        names = [r["name"] for r in rows]
        self.assertEqual(names.count("httpRes"), 30, "every request finished")
        preempted = [r for r in rows if r["name"] == "Dequeue"
                     and r["a"].get("scope#QueueName") == "RUNNING"]
        self.assertTrue(preempted, "a 15-block cache must preempt someone")
        for r in rows:
            if r["name"] == "KVCacheStatus":
                self.assertLessEqual(r["a"]["UsedBlocks="], 15)

    def test_bad_arguments(self):
        p = T.run([sys.executable, "-B", ENGINE, "--kv-blocks", "2"], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--kv-blocks (2) must hold one whole request", p.stderr)


if __name__ == "__main__":
    unittest.main()
