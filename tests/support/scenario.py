# SPDX-License-Identifier: Apache-2.0
"""scenario.py — the main hand-made scenario shared by the parse tests.

Three processes on two hosts:
  A  hostA pid 100  front end: httpReq/httpRes of http-1, http-2, http-3
  B  hostA pid 200  engine: ids e1, e2 linked to http-1, http-2
  C  hostB pid 300  engine (dp rank 1): id e3 linked to http-3
Times are milliseconds after fixtures.T0. The expected values are worked
out in test_parse_reports.py next to each assertion.
"""
import os

from support.fixtures import Store


def q(name, size):
    return {"scope#QueueName": name, "QueueSize=": size}


def rl(*entries):
    return [dict(rid=r, iter=i, type=t, num_scheduled_tokens=n) for (r, i, t, n) in entries]


def build(root):
    a = Store(os.path.join(root, "hostA", "Trace_Service", "ms_service_hostA-100.db"), "hostA", 100)
    b = Store(os.path.join(root, "hostA", "Trace_Service", "ms_service_hostA-200.db"), "hostA", 200)
    c = Store(os.path.join(root, "hostB", "Trace_Service", "ms_service_hostB-300.db"), "hostB", 300,
              meta={"dpRankId": 1})
    a.db.execute("INSERT INTO thread(track_id, tid, pid, thread_name) VALUES (100, '100', '100', 'http-worker')")
    # front end
    a.event("httpReq", 0, "Request", rid="http-1")
    a.event("httpReq", 1, "Request", rid="http-2")
    a.event("httpReq", 2, "Request", rid="http-3")
    a.event("httpRes", 50, "Request", rid="http-1", **{"recvTokenSize=": 100, "replyTokenSize=": 5})
    a.event("httpRes", 60, "Request", rid="http-3", **{"recvTokenSize=": 10, "replyTokenSize=": 2})
    a.event("httpRes", 80, "Request", rid="http-2", **{"recvTokenSize=": 20, "replyTokenSize=": 3})
    # engine B: rows inserted out of time order on purpose (spans are written at their end)
    b.link(0.5, "http-1", "e1")
    b.link(1.5, "http-2", "e2")
    b.event("Enqueue", 2, "Schedule", rid="e1", **q("WAITING", 1))
    b.event("Enqueue", 3, "Schedule", rid="e2", **q("WAITING", 2))
    b.event("CacheHitRate", 4, "Schedule", rid="e1", hitCache=0.25)
    b.event("Dequeue", 5, "Schedule", rid="e1", **q("WAITING", 1))
    b.event("Queue", 5.5, "Schedule", **q("RUNNING", 1))
    b.span("modelExec", 6, 10, "Execute", rid=rl(("e1", 0, 0, 100)), batch_type="Prefill")
    b.span("batchFrameworkProcessing", 5, 6, "BatchSchedule", rid=rl(("e1", 0, 0, 100)), batch_type="Prefill")
    b.span("forward", 6.5, 9.5, "ModelExecute", rid=rl(("e1", 0, 0, 100)))
    b.event("KVCacheStatus", 10, "KVCache", **{"TotalBlocks=": 100, "FreeBlocks=": 90})
    b.event("detokenize", 11, "Request", rid="e1")
    b.event("Dequeue", 12, "Schedule", rid="e2", **q("WAITING", 0))
    b.span("batchFrameworkProcessing", 12, 13, "BatchSchedule", rid=rl(("e1", 1, 1, 1), ("e2", 0, 0, 20)))
    b.span("modelExec", 13, 17, "Execute", rid=rl(("e1", 1, 1, 1), ("e2", 0, 0, 20)))
    b.span("forward", 13.5, 16.5, "ModelExecute", rid=rl(("e1", 1, 1, 1), ("e2", 0, 0, 20)))
    b.event("KVCacheStatus", 17, "KVCache",
            **{"TotalBlocks=": 100, "FreeBlocksBefore=": 90, "FreeBlocksAfter=": 85})
    b.event("Enqueue", 20, "Schedule", rid="e2", **q("WAITING", 1))  # preempted and re-queued
    b.event("Dequeue", 25, "Schedule", rid="e2", **q("WAITING", 0))
    b.span("batchFrameworkProcessing", 26, 27, "BatchSchedule", rid=rl(("e1", 2, 1, 1), ("e2", 0, 0, 20)))
    b.span("modelExec", 27, 30, "Execute", rid=rl(("e1", 2, 1, 1), ("e2", 0, 0, 20)))
    b.span("forward", 27.5, 29.5, "ModelExecute", rid=rl(("e1", 2, 1, 1), ("e2", 0, 0, 20)))
    b.event("detokenize", 31, "Request", rid="e2")
    b.event("KVCacheStatus", 31, "KVCache", **{"TotalBlocks=": 100, "FreeBlocks=": 80, "UsagePercent=": 20})
    b.event("Free", 45, "KVCache", rid="e1", **{"deviceBlock=": 7})
    b.event("DeviceMemory", 9, "npu", **{"usage=": 1024.0, "total=": 8192.0, "util=": 50.0, "scope#device": 0})
    b.event("DeviceMemory", 9, "npu", **{"usage=": 2048.0, "total=": 8192.0, "util=": 70.0, "scope#device": 1})
    b.event("CpuUsage", 9, "host", **{"usage=": 12.5})
    b.event("MemUsage", 9, "host", **{"used=": 1000.0, "available=": 3000.0, "total=": 4000.0})
    # engine C on host B
    c.link(2, "http-3", "e3")
    c.event("Enqueue", 2.5, "Schedule", rid="e3", **q("WAITING", 1))
    c.event("Dequeue", 4, "Schedule", rid="e3", **q("WAITING", 0))
    c.span("batchFrameworkProcessing", 4, 5, "BatchSchedule", rid=rl(("e3", 0, 0, 10)))
    c.span("forward", 5, 8, "ModelExecute", rid=rl(("e3", 0, 0, 10)))
    c.event("KVCacheStatus", 8.5, "KVCache", **{"TotalBlocks=": 50, "FreeBlocks=": 40})
    c.event("detokenize", 9, "Request", rid="e3")
    for s in (a, b, c):
        s.close()
