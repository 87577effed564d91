# SPDX-License-Identifier: Apache-2.0
"""test_analyze_findings.py — the findings the demo scenarios do not plant
(slow tokenize, unbalanced dp ranks, preemptions) on synthetic raw stores,
and the per-process / per-rank windows. Each request is served alone:
httpReq, tokenize, queue, one prefill step, decode steps, httpRes."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from support import analyze_fixture as fixture  # noqa: E402

CLI = os.environ["SERVPROF_BIN"]


def analyze(path, *extra):
    p = subprocess.run([CLI, "analyze", "-i", path, "--format", "json", *extra], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def serve(s, rid, t, tokenize=0.0, queue=0.5, prefill=4.0, decodes=4, step=1.0, requeue=0.0):
    """Writes one request served alone from t (ms); returns its end."""
    s.event("httpReq", t, "Request", rid=rid)
    if tokenize:
        s.span("tokenize", t, t + tokenize, "Request", rid=rid)
    t += tokenize
    s.event("Enqueue", t, "Schedule", rid=rid, **fixture.q(1))
    t += queue
    s.event("Dequeue", t, "Schedule", rid=rid, **fixture.q(0))
    if requeue:  # preempted once: back to WAITING, then admitted again
        s.event("Enqueue", t + 0.1, "Schedule", rid=rid, **fixture.q(1))
        t += requeue
        s.event("Dequeue", t, "Schedule", rid=rid, **fixture.q(0))
    fixture.step(s, (t, t + 0.1), (t + 0.1, t + 0.1 + prefill), [(rid, 0, 0, 50)], 50)
    t += 0.1 + prefill
    s.event("detokenize", t, "Request", rid=rid)
    for k in range(decodes):
        fixture.step(s, (t, t + 0.1), (t + 0.1, t + 0.1 + step), [(rid, k + 1, 1, 1)], 50)
        t += 0.1 + step
    s.event("httpRes", t, "Request", rid=rid, **{"recvTokenSize=": 50, "replyTokenSize=": decodes + 1})
    return t


class Findings(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sp-findings-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def store(self, name, **meta):
        return fixture.Store(os.path.join(self.tmp, name, "Trace_Service", "ms_service_%s.db" % name), name,
                             100, meta=meta)

    def test_slow_tokenize(self):
        s = self.store("tok")
        for i in range(10):
            serve(s, "t%d" % i, i * 30.0, tokenize=6.0)
        s.close()
        d = analyze(os.path.join(self.tmp, "tok"))
        f = {x["id"]: x for x in d["findings"]}
        # per request: 6 ms tokenize of 6 + 0.5 + 4.1 + 4 x 1.1 = 15 ms e2e: 0.40
        self.assertIn("slow_tokenize", f)
        self.assertAlmostEqual(f["slow_tokenize"]["figure"]["value"], 6 / 15.0, places=3)
        self.assertEqual(d["findings"][0]["id"], "slow_tokenize")
        self.assertEqual(f["slow_tokenize"]["examples"][0]["what"], "tokenize span of 6.00 ms")

    def test_unbalanced_dp_ranks_and_scoped_windows(self):
        a, b = self.store("rank0", dpRankId=0), self.store("rank1", dpRankId=1)
        for i in range(8):
            serve(a, "a%d" % i, i * 15.0, decodes=6)
        for i in range(2):
            serve(b, "b%d" % i, i * 40.0, decodes=6)
        a.close()
        b.close()
        d = analyze(self.tmp, "--windows", "2")
        f = {x["id"]: x for x in d["findings"]}
        # busy per request: 4 + 6 x 1 = 10 ms; rank 0: 80 ms, rank 1: 20 ms
        self.assertIn("dp_imbalance", f)
        self.assertAlmostEqual(f["dp_imbalance"]["figure"]["value"], 4.0, places=3)
        scopes = sorted({(r["scope"], r["prof_id"] or "", r["dp_rank"] if r["dp_rank"] is not None else -1)
                         for r in d["windows"]["rows"]})
        self.assertEqual(scopes, [("all", "", -1), ("dp_rank", "", 0), ("dp_rank", "", 1),
                                  ("process", "ms_service_rank0", 0), ("process", "ms_service_rank1", 1)])
        self.assertEqual(len(d["windows"]["rows"]), 2 * 5)
        done = {(r["scope"], r["dp_rank"]): 0 for r in d["windows"]["rows"]}
        for r in d["windows"]["rows"]:
            done[(r["scope"], r["dp_rank"])] += r["finished"]
        self.assertEqual(done[("dp_rank", 0)], 8)
        self.assertEqual(done[("dp_rank", 1)], 2)
        self.assertEqual(done[("all", None)], 10)
        self.assertEqual(len(d["run"]["processes"]), 2)

    def test_preemptions_are_kv_pressure(self):
        s = self.store("kv")
        t = 0.0
        for i in range(10):
            t = serve(s, "k%d" % i, t + 1, requeue=3.0 if i % 2 else 0.0)
        s.close()
        d = analyze(os.path.join(self.tmp, "kv"))
        self.assertEqual(d["headline"]["preemptions"], 5)
        f = {x["id"]: x for x in d["findings"]}
        self.assertIn("kv_pressure", f)
        self.assertEqual(f["kv_pressure"]["figure"]["name"], "preempted_share")
        self.assertAlmostEqual(f["kv_pressure"]["figure"]["value"], 0.5)
        self.assertEqual(len([e for e in f["kv_pressure"]["examples"] if e["rid"]]), 3)

    def test_underfilled_batches_while_requests_wait(self):
        s = self.store("fill")
        # four requests in one step: the engine can batch 4
        for i in range(4):
            s.event("httpReq", 0, "Request", rid="b%d" % i)
            s.event("Enqueue", 0.1, "Schedule", rid="b%d" % i, **fixture.q(i + 1))
            s.event("Dequeue", 0.2, "Schedule", rid="b%d" % i, **fixture.q(3 - i))
        fixture.step(s, (0.2, 0.3), (0.3, 4.3), [("b%d" % i, 0, 0, 50) for i in range(4)], 50)
        for i in range(4):
            s.event("detokenize", 4.3, "Request", rid="b%d" % i)
            s.event("httpRes", 4.5, "Request", rid="b%d" % i, **{"recvTokenSize=": 50, "replyTokenSize=": 1})
        # then ten arrive together and are served one at a time: batches of 1 while the rest wait
        end = 10.0
        for i in range(10):
            end = serve(s, "w%d" % i, 10.0, queue=max(0.5, end - 10.0))
        s.close()
        d = analyze(os.path.join(self.tmp, "fill"))
        f = {x["id"]: x for x in d["findings"]}
        self.assertIn("underfilled_batches", f)
        self.assertIn("queueing", f)
        # 1 step of 4 and 50 steps of 1: mean 54/51 against 4
        self.assertAlmostEqual(f["underfilled_batches"]["figure"]["value"], (54 / 51) / 4, places=3)
        self.assertEqual(f["underfilled_batches"]["threshold"]["op"], "<=")
        self.assertEqual(d["findings"][0]["id"], "queueing")


if __name__ == "__main__":
    unittest.main()
