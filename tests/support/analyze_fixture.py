# SPDX-License-Identifier: Apache-2.0
"""analyze_fixture.py — a hand-made raw store for the analyze tests, small enough
that every figure can be worked out by hand (test_analyze_figures.py does,
next to each assertion). One engine process, times in ms after T0:

  r1  httpReq 0, tokenize 0-1, queued 1-3, prefill step (exec 4-10),
      first token 10, decodes in steps 2 and 3, httpRes 26 (100 in, 3 out)
  r2  httpReq 5, tokenize 5-6, queued 6-12, prefill in the mixed step 2
      (exec 13-21), first token 21, decodes in steps 3 and 4, httpRes 34 (50 in, 3 out)
  r3  httpReq 40, queued 40.5-41, prefill step 5 (exec 42-44), httpRes 44 (20 in, 1 out)

  step  schedule   exec     forward  entries                  kind
  1     3-4        4-10     4-10     r1 prefill               prefill
  2     12-13      13-21    13-21    r1 decode, r2 prefill    mixed
  3     22-23      23-25    23-25    r1, r2 decode            decode
  4     30-31      31-33    31-33    r2 decode                decode
  5     41-42      42-44    42-44    r3 prefill               prefill

KV usage after the steps: 0.4, 0.6, 0.6, 0.3, 0.2. Each first token is
the end of the request's prefill step (detokenize at the same instant).
"""
import os

from support.fixtures import T0, Store  # noqa: F401


def q(size):
    return {"scope#QueueName": "WAITING", "QueueSize=": size}


def rl(*entries):
    return [dict(rid=r, iter=i, type=t, num_scheduled_tokens=n) for (r, i, t, n) in entries]


def step(s, sched, exe, entries, kv_free):
    s.span("BatchSchedule", sched[0], sched[1], "BatchSchedule", rid=rl(*entries))
    s.span("modelExec", exe[0], exe[1], "ModelExecute", rid=rl(*entries))
    s.span("forward", exe[0], exe[1], "ModelExecute")
    s.event("KVCacheStatus", exe[1], "KVCache", **{"TotalBlocks=": 100, "FreeBlocks=": kv_free})


def build(root, scale=1.0):
    """Writes the store under root; scale > 1 stretches every exec/forward
    span (a slower engine) for the compare tests."""
    s = Store(os.path.join(root, "Trace_Service", "ms_service_h-100.db"), "h", 100)
    x = scale
    s.event("httpReq", 0, "Request", rid="r1")
    s.span("tokenize", 0, 1, "Request", rid="r1")
    s.event("Enqueue", 1, "Schedule", rid="r1", **q(1))
    s.event("Dequeue", 3, "Schedule", rid="r1", **q(0))
    step(s, (3, 4), (4, 4 + 6 * x), [("r1", 0, 0, 100)], 60)
    s.event("detokenize", 4 + 6 * x, "Request", rid="r1")
    s.event("httpReq", 5, "Request", rid="r2")
    s.span("tokenize", 5, 6, "Request", rid="r2")
    s.event("Enqueue", 6, "Schedule", rid="r2", **q(1))
    s.event("Dequeue", 12, "Schedule", rid="r2", **q(0))
    step(s, (12, 13), (13, 13 + 8 * x), [("r1", 1, 1, 1), ("r2", 0, 0, 50)], 40)
    s.event("detokenize", 13 + 8 * x, "Request", rid="r1")
    s.event("detokenize", 13 + 8 * x, "Request", rid="r2")
    step(s, (22 * x, 23 * x), (23 * x, 25 * x), [("r1", 2, 1, 1), ("r2", 1, 1, 1)], 40)
    s.event("httpRes", 26 * x, "Request", rid="r1", **{"recvTokenSize=": 100, "replyTokenSize=": 3})
    step(s, (30 * x, 31 * x), (31 * x, 33 * x), [("r2", 2, 1, 1)], 70)
    s.event("httpRes", 34 * x, "Request", rid="r2", **{"recvTokenSize=": 50, "replyTokenSize=": 3})
    s.event("httpReq", 40 * x, "Request", rid="r3")
    s.event("Enqueue", 40.5 * x, "Schedule", rid="r3", **q(1))
    s.event("Dequeue", 41 * x, "Schedule", rid="r3", **q(0))
    step(s, (41 * x, 42 * x), (42 * x, 44 * x), [("r3", 0, 0, 20)], 80)
    s.event("detokenize", 44 * x, "Request", rid="r3")
    s.event("httpRes", 44 * x, "Request", rid="r3", **{"recvTokenSize=": 20, "replyTokenSize=": 1})
    s.close()
    return root
