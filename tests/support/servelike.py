# SPDX-License-Identifier: Apache-2.0
"""servelike.py — a serving run of a few seconds, shaped like the stores the
demo server writes, for the profiler.db dashboard tests.

Two processes on one host, as a front end and an engine write them: the
front end records httpReq / httpRes and links its id to the engine's; the
engine queues requests (Enqueue / Dequeue with QueueSize=, a PENDING queue
too), runs a scheduler step every 10 ms as separate spans (BatchSchedule,
then modelExec with a forward inside), a KVCacheStatus per step, and a
detokenize at each request's first token. 40 requests arrive every 55 ms
from a start that is not on a bucket boundary, so the run covers many
time buckets and its range is not a round number.

build(root) writes the stores and returns (first_ns, last_ns): the run's own
time range, the first and last instant any record covers.
"""
import os

from support.fixtures import Store, ns

START_MS = 1234.567  # after fixtures.T0
STEP_MS = 10.0
NREQ = 40


def build(root):
    fe = Store(os.path.join(root, "Trace_Service", "ms_service_hostS-500.db"), "hostS", 500)
    en = Store(os.path.join(root, "Trace_Service", "ms_service_hostS-501.db"), "hostS", 501)
    arrive = {i: START_MS + i * 55.0 for i in range(NREQ)}
    want = {i: 3 + i % 5 for i in range(NREQ)}  # tokens to generate
    prompt = {i: 20 + 7 * (i % 6) for i in range(NREQ)}
    waiting, running, done = [], {}, {}
    times = []
    for i in range(NREQ):
        fe.event("httpReq", arrive[i], "Request", rid="cmpl-%d" % i)
        fe.link(arrive[i] + 0.1, "cmpl-%d" % i, "seq-%d" % i)
    t = START_MS + 2.0
    # The scheduler reports each queue once as it starts, as vLLM-style servers do;
    # a queue never reported stays empty in request_status (as in the reference).
    for q in ("WAITING", "RUNNING", "SWAPPED"):
        en.event("Queue", START_MS + 0.05, "Schedule", **{"scope#QueueName": q, "QueueSize=": 0})
    step = 0
    while len(done) < NREQ:
        # arrivals since the last step join the waiting queue
        for i in range(NREQ):
            if arrive[i] + 0.2 <= t and i not in done and i not in running and i not in waiting \
                    and arrive[i] + 0.2 > t - STEP_MS:
                waiting.append(i)
                en.event("Enqueue", arrive[i] + 0.2, "Schedule", rid="seq-%d" % i,
                         **{"scope#QueueName": "WAITING", "QueueSize=": len(waiting)})
        if step % 7 == 3:
            en.event("Queue", t + 0.05, "Schedule", **{"scope#QueueName": "PENDING", "QueueSize=": step % 3})
        admitted = waiting[:4]
        del waiting[:4]
        for k, i in enumerate(admitted):
            en.event("Dequeue", t + 0.1 + 0.01 * k, "Schedule", rid="seq-%d" % i,
                     **{"scope#QueueName": "WAITING", "QueueSize=": len(waiting) + len(admitted) - k - 1})
            running[i] = 0
        if running:
            en.event("Queue", t + 0.2, "Schedule", **{"scope#QueueName": "RUNNING", "QueueSize=": len(running)})
            entries = [{"rid": "seq-%d" % i, "iter": it, "type": 0 if it == 0 else 1,
                        "num_scheduled_tokens": prompt[i] if it == 0 else 1} for i, it in sorted(running.items())]
            kinds = {e["type"] for e in entries}
            btype = "Prefill" if kinds == {0} else "Decode" if kinds == {1} else "Prefill,Decode"
            en.span("BatchSchedule", t, t + 0.5, "BatchSchedule", rid=entries, batch_type=btype,
                    batch_size=len(entries))
            en.event("KVCacheStatus", t + 0.6, "KVCache",
                     **{"TotalBlocks=": 512, "FreeBlocks=": 512 - 3 * len(entries)})
            dur = 2.0 + 0.5 * len(entries)
            en.span("modelExec", t + 0.7, t + 0.7 + dur, "Execute", rid=entries, batch_type=btype,
                    batch_size=len(entries))
            en.span("forward", t + 0.8, t + 0.6 + dur, "ModelExecute", rid=entries, batch_type=btype,
                    batch_size=len(entries))
            end = t + 0.7 + dur
            for i in list(running):
                running[i] += 1
                if running[i] == 1:
                    en.event("detokenize", end + 0.05, "Request", rid="seq-%d" % i)
                if running[i] == want[i]:
                    del running[i]
                    done[i] = end + 0.3
                    fe.event("httpRes", done[i], "Request", rid="cmpl-%d" % i,
                             **{"recvTokenSize=": prompt[i], "replyTokenSize=": want[i]})
            times.append(end + 0.3)
        t += STEP_MS
        step += 1
        assert step < 10000
    fe.close()
    en.close()
    first = ns(START_MS)
    last = ns(max(times))
    return first, last
