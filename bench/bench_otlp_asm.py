#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_otlp_asm.py — instructions per span of the thread that assembles
and encodes request tracing's spans, counted by callgrind: a figure that
does not depend on the machine's load.

tests/otlp/otlp_emit records N requests in the vocabulary (httpReq, Link,
Enqueue/Dequeue, a BatchSchedule / modelExec / forward step per token with
the request in its rid list, detokenize, httpRes) and exits; with no store
session the metrics drain thread (servprof-mdrain) consumes the rings and
runs the assembler. It runs twice under valgrind --tool=callgrind
--separate-threads=yes: tracing on (MS_TRACE_ENABLE=1, auto trace, a
collector that is not there: the exporter's work is another thread) and
live metrics on with tracing off, the same records consumed without the
assembler. Printed: the drain thread's instructions per span in both, and
their difference per span (the assembler and the encoder), against a goal
of 10 000 instructions (a few µs, ~3 µs at 3 G instructions/s) per span.

    bench/bench_otlp_asm.py [BUILD_DIR] [REQUESTS]   (defaults: build, 2000)
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
EMIT = os.path.join(BUILD, "tests", "otlp_emit")
GOAL = 10000  # "a few µs" a span: ~3 µs at 3 G instructions/s


def drain_ir(mode, work):
    cfg = os.path.join(work, mode + ".json")
    with open(cfg, "w") as f:
        json.dump({"enable": 0, "metric_enable": 1 if mode == "metrics" else 0,
                   "prof_dir": os.path.join(work, "prof")}, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_"))}
    env.update(SERVICE_PROF_CONFIG_PATH=cfg, HOME=work, PROF_LOG_LEVEL="INFO")
    if mode == "trace":
        env.update(MS_TRACE_ENABLE="1", MS_PROFILER_AUTO_TRACE="1", OTEL_BSP_EXPORT_TIMEOUT="100",
                   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://127.0.0.1:9/v1/traces")
    out = os.path.join(work, mode + ".cg")
    p = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                        "--callgrind-out-file=" + out, EMIT, str(N)],
                       env=env, capture_output=True, text=True, timeout=1200)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    spans = 0
    m = re.findall(r"request tracing off \(([^)]*)\)", p.stderr)
    if m:
        c = {k: int(v) for k, v in (kv.split("=") for kv in m[-1].split())}
        spans = c["spans_queued"] + c["dropped_queue_full"] + c["dropped_encode"]
    for f in glob.glob(out + "-*"):
        text = open(f).read()
        if "drain_main" in text:
            return int(re.search(r"^summary: (\d+)", text, re.M).group(1)), spans
    raise RuntimeError("no drain thread among " + str(glob.glob(out + "-*")))


def main():
    with tempfile.TemporaryDirectory(prefix="sp-bench-otlp-asm-") as work:
        ir_t, spans = drain_ir("trace", work)
        ir_m, _ = drain_ir("metrics", work)
    per = (ir_t - ir_m) / max(spans, 1)
    print(f"{N} requests, {spans} spans")
    print(f"drain thread, tracing on (assembler + encoder): {ir_t / max(spans, 1):8.0f} instructions/span")
    print(f"drain thread, metrics only (same records):      {ir_m / max(spans, 1):8.0f} instructions/span")
    print(f"tracing's own work: {per:.0f} instructions/span (goal ≤ {GOAL}): "
          f"{'met' if per <= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
