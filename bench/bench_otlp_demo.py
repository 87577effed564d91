#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_otlp_demo.py — what tracing every request over OTLP costs the demo
server: throughput, P99 latency and CPU per request with tracing on versus
off, and with a collector that stalls; against the goals (≤ 1 % throughput,
≤ 2 % P99).

Why it is built this way. On a 2-core machine the same mode's rounds
spread ±5 % (the engine thread's CPU time per request itself moves with
what else runs), as much as the difference looked for. So the bench makes
many SHORT rounds in PAIRS — (off, trace) then (trace, off), alternating,
so drift cancels — and reports the median over pairs of the per-pair ratio
trace/off, with a distribution-free ~95 % interval of that median (order
statistics of the ratios). A goal is "met" when the interval's worst end is
within it, "not met" when its best end is past it, else "not resolved"
(more pairs, or a quieter machine). Beside the ratios it prints the figures
that do not depend on load: the CPU of the two threads tracing adds
(servprof-mdrain, which runs the assembler, and servprof-otlp, the
exporter), per span and as a share of the server's CPU, and the engine
thread's CPU per request.

Each round is a fresh tiny-llm-server (default model) driven by
servprof-load with a fixed seed at a rate it cannot keep up with
(--rate 200, 16 in flight), so throughput is the server's capacity and the
engine thread is busy all the time. The collector is
tests/otlp/otlp_receiver.py on 127.0.0.1, decoding every body with the
official .proto files. OTEL_BSP_SCHEDULE_DELAY is 1000 ms in the trace and
stall rounds so that exports happen during the short rounds (the default
5 s would leave them all to the exit flush). Modes:

  off      no profiling at all (nothing recorded)
  trace    MS_TRACE_ENABLE=1, auto trace: every request traced and sent;
           checks that every request came back as an llm_request span
  metrics  (--metrics) live metrics on, tracing off: what recording the
           records costs by itself (tracing records a few domains more)
  stall    (--stall) trace, but the collector answers nothing (each POST
           stalls past OTEL_EXPORTER_OTLP_TIMEOUT, 10 s); checks that the
           spans made equal the counted drops

    bench/bench_otlp_demo.py [BUILD_DIR] [PAIRS] [--stall] [--metrics] [--requests N]
    (defaults: build, 20 pairs, 60 requests a round)
"""
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "otlp"))
from otlp_receiver import Receiver  # noqa: E402


def opt(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


REQUESTS = int(opt("--requests", "60"))
args = [a for i, a in enumerate(sys.argv[1:], 1)
        if not a.startswith("--") and sys.argv[i - 1] != "--requests"]
BUILD = args[0] if args else "build"
PAIRS = int(args[1]) if len(args) > 1 else 20
STALL = "--stall" in sys.argv
METRICS = "--metrics" in sys.argv
SERVER = os.path.join(BUILD, "bin", "tiny-llm-server")
LOAD = os.path.join(BUILD, "bin", "servprof-load")
LOAD_ARGS = ["--requests", str(REQUESTS), "--rate", "200", "--concurrency", "16", "--seed", "7",
             "--prompt-len", "64:256", "--output-len", "16:64", "--quiet"]
GOALS = {"req_s": 1.0, "p99_ms": 2.0}  # % worse at most


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid):
    """{thread name: CPU seconds} of the live threads (schedstat: ns)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[name] = out.get(name, 0.0) + int(f.read().split()[0]) / 1e9
        except OSError:
            pass
    return out


def one_round(mode, work):
    rx = Receiver(["stall:600"] * 1000 if mode == "stall" else []).start()
    cfg = os.path.join(work, "prof.json")
    with open(cfg, "w") as f:
        json.dump({"enable": 0, "metric_enable": 1 if mode == "metrics" else 0,
                   "prof_dir": os.path.join(work, "prof")}, f)
    port_file = os.path.join(work, "port")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_"))}
    env.update(SERVICE_PROF_CONFIG_PATH=cfg, PROF_LOG_LEVEL="INFO")
    if mode in ("trace", "stall"):
        env.update(MS_TRACE_ENABLE="1", MS_PROFILER_AUTO_TRACE="1", OTEL_BSP_SCHEDULE_DELAY="1000",
                   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=rx.url)
    log = open(os.path.join(work, "server.log"), "w+")
    srv = subprocess.Popen([SERVER, "--port", "0", "--port-file", port_file], env=env,
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while not (os.path.exists(port_file) and os.path.getsize(port_file)):
            if time.time() > deadline or srv.poll() is not None:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        port = open(port_file).read().strip()
        cpu0, th0 = cpu_seconds(srv.pid), thread_cpu(srv.pid)
        out = subprocess.run([LOAD, "--port", port, *LOAD_ARGS, "--summary-json", "-"],
                             capture_output=True, text=True, timeout=600, check=True)
        s = json.loads(out.stdout.strip().splitlines()[-1])
        cpu, th1 = cpu_seconds(srv.pid) - cpu0, thread_cpu(srv.pid)
    finally:
        srv.send_signal(signal.SIGINT)
        srv.wait(timeout=60)
        rx.stop()
    th = {k: v - th0.get(k, 0.0) for k, v in th1.items()}
    n = max(s["requests"], 1)
    res = {"req_s": s["request_throughput"], "p99_ms": s["e2e_ms"]["p99"],
           "cpu_ms_req": 1000 * cpu / n, "engine_ms_req": 1000 * th.get("tl-engine", 0) / n,
           "drain_share": 100 * th.get("servprof-mdrain", 0) / max(cpu, 1e-9),
           "exporter_share": 100 * th.get("servprof-otlp", 0) / max(cpu, 1e-9)}
    if mode in ("trace", "stall"):
        log.seek(0)
        m = re.findall(r"request tracing off \(([^)]*)\)", log.read())
        c = {k: int(v) for k, v in (kv.split("=") for kv in m[-1].split())}
        spans = c["spans_queued"] + c["dropped_queue_full"] + c["dropped_encode"]
        res["us_span_exporter"] = 1e6 * th.get("servprof-otlp", 0) / max(spans, 1)
        res["us_span_drain"] = 1e6 * th.get("servprof-mdrain", 0) / max(spans, 1)
        dropped = sum(v for k, v in c.items() if k.startswith("dropped_"))
        res["spans"], res["dropped"] = spans, dropped
        if mode == "trace":
            got = sum(1 for _, _, sp in rx.spans() if sp.name == "llm_request")
            if got != s["requests"] or c["spans_sent"] != len(rx.spans()):
                raise RuntimeError(f"{got} llm_request spans for {s['requests']} requests; {c}")
        elif spans != dropped or c["spans_sent"] != 0:
            raise RuntimeError(f"stall: {spans} spans made, {dropped} counted as dropped; {c}")
    return res


def median_ci(xs):
    """The median of xs and a distribution-free ~95 % interval for it: the
    order statistics at ranks n/2 ± 1.96·√n/2 (the sign test's)."""
    xs = sorted(xs)
    n = len(xs)
    h = 1.96 * math.sqrt(n) / 2
    lo, hi = max(0, int(math.floor(n / 2 - h))), min(n - 1, int(math.ceil(n / 2 + h)) - 1)
    return statistics.median(xs), xs[lo], xs[hi]


def verdict(cost_lo, cost_hi, goal):
    if PAIRS < 6:
        return "too few pairs for a verdict (6 at least)"
    if cost_hi <= goal:
        return "met"
    if cost_lo > goal:
        return "NOT met"
    return "not resolved (interval spans the goal: more pairs or a quieter machine)"


def main():
    others = ["trace"] + (["stall"] if STALL else []) + (["metrics"] if METRICS else [])
    pairs = []
    print(f"{PAIRS} pairs of {REQUESTS}-request rounds; modes off, {', '.join(others)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="sp-bench-otlp-") as work:
        for p in range(PAIRS):
            order = ["off"] + others if p % 2 == 0 else others[::-1] + ["off"]
            got = {}
            for mode in order:
                sub = os.path.join(work, f"{p}-{mode}")
                os.makedirs(sub)
                got[mode] = one_round(mode, sub)
                print(f"pair {p + 1:2d} {mode:7s}: {json.dumps({k: round(v, 3) for k, v in got[mode].items()})}",
                      flush=True)
            pairs.append(got)
    print()
    print("median over pairs of (mode / off − 1), with its ~95 % interval:")
    for m in others:
        for k, label, sign in [("req_s", "requests/s", -1), ("p99_ms", "P99 e2e", 1),
                               ("cpu_ms_req", "server CPU/request", 1),
                               ("engine_ms_req", "engine thread CPU/request", 1)]:
            rel = [100 * (x[m][k] / x["off"][k] - 1) for x in pairs]
            med, lo, hi = median_ci(rel)
            line = f"  {m:7s} {label:26s} {med:+6.2f} %  [{lo:+6.2f}, {hi:+6.2f}]"
            if k in GOALS and m in ("trace", "stall"):
                cost = [sign * lo, sign * hi]
                line += f"   goal ≤ {GOALS[k]:.0f} % worse: {verdict(min(cost), max(cost), GOALS[k])}"
            print(line)
    print("isolated costs (load-independent; medians over rounds):")
    for m in others:
        if m == "metrics":
            continue
        med = {k: statistics.median(x[m][k] for x in pairs) for k in pairs[0][m]}
        print(f"  {m:7s} drain thread {med['us_span_drain']:.1f} µs CPU/span ({med['drain_share']:.3f} % of "
              f"the server's CPU), exporter thread {med['us_span_exporter']:.1f} µs CPU/span "
              f"({med['exporter_share']:.3f} %); spans/round {med['spans']:.0f}, dropped {med['dropped']:.0f}")
    if METRICS:
        med = statistics.median(x["metrics"]["drain_share"] for x in pairs)
        print(f"  metrics drain thread {med:.3f} % of the server's CPU (records consumed, no tracing)")


if __name__ == "__main__":
    main()
