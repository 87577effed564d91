# SPDX-License-Identifier: Apache-2.0
"""parity_fixture.py — stores shaped like the ones real servers write, for
the parity tests (test_parse_parity.py, test_parse_compat.py).

Three processes on one host, as a MindIE-style server records them:
  F  pid 10  front end, written in the reference's legacy `Mstx` layout:
             httpReq, detokenize, sendResponse, httpRes (token counts)
  S  pid 20  scheduler (`slice` layout): Link(front-end id -> engine id),
             Enqueue/Dequeue with QueueSize= and scope#QueueName,
             CacheHitRate, BatchSchedule and modelExec as two spans per
             step (rid lists with iter, no type), a KVCacheStatus between
             the two
  W  pid 30  worker (`slice`): Link(engine id -> worker id), forward spans
             whose rid lists carry no iter (as vLLM-style workers write them)

Requests (times in ms after fixtures.T0):
  http-1  whole: arrives 0, prefilled in step 1, decodes in 2 and 3, ends 20
  http-2  preempted: waits 2..8.5, prefilled in step 2, re-queued 14.5,
          waits to 19, prefilled again in step 4, decodes in 5, ends 30
  http-3  cut by the collection window: no httpReq (it began before
          collection was on), decodes in steps 4 and 5, ends 29
  http-4  cut at the other end: arrives 26, queued, never ends

Every expected figure is worked out by hand in test_parse_parity.py.
"""
import json
import os
import sqlite3

from support.fixtures import T0, Store, ns
from support.scenario import q


def steps(*entries):
    return [{"rid": r, "iter": i} for (r, i) in entries]


def workers(*ids):
    return [{"rid": r} for r in ids]


def step(s, sched, kv_at, exec_, entries, free, free_before):
    """One scheduler step as a MindIE-style server records it: the schedule
    span, its KVCacheStatus, then the execution span (times in ms)."""
    s.span("BatchSchedule", sched[0], sched[1], "BatchSchedule", rid=steps(*entries))
    s.event("KVCacheStatus", kv_at, "KVCache", **kv(free, free_before))
    s.span("modelExec", exec_[0], exec_[1], "Execute", rid=steps(*entries))


def kv(free, before):
    return {"TotalBlocks=": 100, "FreeBlocks=": free, "FreeBlocksBefore=": before, "FreeBlocksAfter=": free,
            "UsagePercent=": (100 - free) / 100.0}


class MstxStore:
    """A store in the reference's legacy layout: Mstx(markId, message, pid,
    tid, timestamp, endTimestamp) + Meta(name, value); each message is the
    collector's `^key^:value,` text (`^` for `"`, trailing comma, no braces);
    a marker's endTimestamp is its timestamp, as the collector writes it."""

    def __init__(self, path, hostname, pid):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            os.unlink(path)
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE Mstx(markId INTEGER, message TEXT, pid INTEGER, tid INTEGER, "
                        "timestamp INTEGER, endTimestamp INTEGER)")
        self.db.execute("CREATE TABLE Meta(name TEXT, value TEXT)")
        self.db.execute("INSERT INTO Meta VALUES ('hostname', ?)", (hostname,))
        self.pid = pid
        self.mark = 0

    def event(self, name, at_ms, domain, **attrs):
        parts = ["^name^:^%s^" % name, "^domain^:^%s^" % domain, "^type^:0"]
        for k, v in attrs.items():
            parts.append("^%s^:%s" % (k, ("^%s^" % v) if isinstance(v, str) else json.dumps(v)))
        self.mark += 1
        self.db.execute("INSERT INTO Mstx VALUES (?, ?, ?, ?, ?, ?)",
                        (self.mark, ",".join(parts) + ",", self.pid, self.pid, ns(at_ms), ns(at_ms)))

    def close(self):
        self.db.commit()
        self.db.close()


def build(root):
    trace = os.path.join(root, "hostA", "Trace_Service")
    f = MstxStore(os.path.join(trace, "ms_service_hostA-10.db"), "hostA", 10)
    s = Store(os.path.join(trace, "ms_service_hostA-20.db"), "hostA", 20)
    w = Store(os.path.join(trace, "ms_service_hostA-30.db"), "hostA", 30)

    # front end (legacy layout)
    f.event("httpReq", 0, "Request", rid="http-1")
    f.event("httpReq", 1, "Request", rid="http-2")
    f.event("detokenize", 8.4, "Request", rid="http-1")
    f.event("httpRes", 20, "Request", rid="http-1", **{"recvTokenSize=": 10, "replyTokenSize=": 3})
    f.event("sendResponse", 24.1, "Request", rid="http-2")
    f.event("httpReq", 26, "Request", rid="http-4")
    f.event("httpRes", 29, "Request", rid="http-3", **{"recvTokenSize=": 7, "replyTokenSize=": 8})
    f.event("httpRes", 30, "Request", rid="http-2", **{"recvTokenSize=": 12, "replyTokenSize=": 2})

    # scheduler: rows inserted as a recorder does (spans when they end)
    s.link(0.5, "http-1", "e1")
    s.link(1.5, "http-2", "e2")
    s.event("Enqueue", 1, "Schedule", rid="e1", **q("WAITING", 1))
    s.event("Enqueue", 2, "Schedule", rid="e2", **q("WAITING", 2))
    s.event("CacheHitRate", 2.5, "Schedule", rid="e1", hitCache=0.5)
    s.event("Dequeue", 3, "Schedule", rid="e1", **q("WAITING", 1))
    step(s, (3.0, 3.4), 3.5, (3.6, 8.2), [("e1", 0)], 90, 100)                  # 1: e1 prefill
    s.event("Dequeue", 8.5, "Schedule", rid="e2", **q("WAITING", 0))
    step(s, (8.5, 8.9), 9.0, (9.1, 14.3), [("e1", 1), ("e2", 0)], 85, 90)       # 2: e1 decode, e2 prefill
    s.event("Enqueue", 14.5, "Schedule", rid="e2", **q("WAITING", 1))           # e2 preempted
    step(s, (15.0, 15.2), 15.3, (15.4, 18.6), [("e1", 2)], 88, 85)              # 3: e1 decode, e2's blocks back
    s.event("Dequeue", 19, "Schedule", rid="e2", **q("WAITING", 0))
    # 4: e2 prefilled again, e3 (begun before collection) decoding; 5: both decode
    step(s, (19.0, 19.4), 19.5, (19.6, 24.0), [("e2", 0), ("e3", 5)], 80, 88)
    step(s, (25.0, 25.2), 25.3, (25.4, 28.0), [("e2", 1), ("e3", 6)], 80, 80)
    s.link(26.2, "http-4", "e4")
    s.event("Enqueue", 26.5, "Schedule", rid="e4", **q("WAITING", 1))
    s.link(29, "http-3", "e3")  # recorded again at its end, as the demo does

    # worker: its own ids, linked from the engine's
    w.link(1.0, "e1", "w1")
    w.link(2.0, "e2", "w2")
    w.link(19.0, "e3", "w3")
    w.span("forward", 3.8, 8.0, "ModelExecute", rid=workers("w1"))
    w.span("forward", 9.3, 14.1, "ModelExecute", rid=workers("w1", "w2"))
    w.span("forward", 15.5, 18.5, "ModelExecute", rid=workers("w1"))
    w.span("forward", 19.7, 23.9, "ModelExecute", rid=workers("w2", "w3"))
    w.span("forward", 25.5, 27.9, "ModelExecute", rid=workers("w2", "w3"))

    f.close()
    s.close()
    w.close()


__all__ = ["build", "T0"]
