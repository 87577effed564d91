# SPDX-License-Identifier: Apache-2.0
"""equiv_scenario.py — the Python side of py_equiv.c, step for step.

Run as a program (by test_py_api.py) with SERVICE_PROF_CONFIG_PATH naming a
config with collection on; it records, then shuts the library down.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.environ["SERVPROF_SOURCE"], "python"))

import servprof  # noqa: E402
from servprof import Level, Profiler  # noqa: E402

BATCH = [
    {"rid": "req-1", "iter": 0, "type": 0, "num_scheduled_tokens": 128},
    {"rid": "req-2", "iter": 3, "type": 1, "num_scheduled_tokens": 1},
]


@servprof.traced(domain="Execute")
def model_step():
    return 1


def main():
    servprof.init()
    servprof.set_thread_name("equiv-main")

    # 1. scalar attributes of every type
    (Profiler(Level.INFO).domain("Request").res("req-1").attr("s", "text").attr("i", 42)
     .attr("d", 0.5).attr("b", True).attr("neg", -7).attr("whole", 3.0)
     .attr("utf8", "h\u00e9llo \u2713").event("httpReq"))

    # 2. an integer request id
    Profiler(Level.INFO).domain("Request").res(7).event("tokenize")

    # 3. metrics
    (Profiler(Level.INFO).domain("Schedule").res("req-1").metric("QueueSize", 3)
     .metric_inc("WAITING", 1).metric_scope("QueueName", "WAITING").event("Enqueue"))

    # 4. per-request scope, a fractional gauge
    Profiler(Level.INFO).domain("KVCache").metric("UsagePercent", 0.25).metric_scope_as_req_id() \
        .event("KVCacheStatus")

    # 5. a batch span: rid list at the start, batch_size at the end
    p = Profiler(Level.INFO).domain("BatchSchedule").res(BATCH).attr("batch_type", "Prefill,Decode")
    p.span_start("batchFrameworkProcessing")
    p.attr("batch_size", 2).span_end()

    # 5b. a span ended with nothing added; a scope whose value is a number
    Profiler(Level.INFO).domain("Schedule").metric_scope("QueueName", 2).span_start("swap") \
        .span_end()

    # 6. nested values, numeric arrays, null, a huge integer
    (Profiler(Level.DETAILED).domain("Execute").attr("cfg", {"a": [1, 2.5, "x"], "b": None})
     .attr("ids", [1, 2, 3]).attr("ws", (0.5, 1.5)).attr("none", None).attr("big", 2**70)
     .event("config"))

    # 7. links: through a Profiler, and the shorthand
    Profiler(Level.INFO).link("http-1", "req-1")
    servprof.link("http-2", "req-2")

    # 8. a whole span
    with servprof.span("forward", domain="Execute", rid=BATCH, batch_size=2):
        pass

    # 9. a span whose body raised ValueError
    try:
        with servprof.span("sample", domain="Execute", rid="req-3"):
            raise ValueError("boom")
    except ValueError:
        pass

    # 10. a traced function
    model_step()

    # 11. a level that is not collected (profiler_level DETAILED): no row
    Profiler(Level.VERBOSE).domain("Execute").event("hidden")

    # 12. the module's event function
    servprof.event("httpRes", domain="Request", rid="req-1", **{"replyTokenSize=": 17})

    # 13. Meta
    Profiler(Level.INFO).add_meta_info("model", "toy-7b")
    servprof.shutdown()


if __name__ == "__main__":
    main()
