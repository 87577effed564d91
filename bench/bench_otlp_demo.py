#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_otlp_demo.py — the demo server's throughput and P99 latency with
request tracing over OTLP on (every request traced) versus off, and with a
collector that stalls.

Rounds alternate the modes (off, trace, off, trace, ...; then one "stall"
round per round pair when asked), each on a fresh tiny-llm-server (default
model, no store session: tracing rides on the metrics drain thread) driven
by servprof-load at a rate it cannot keep up with, so throughput is the
server's capacity. The collector is tests/otlp/otlp_receiver.py on
127.0.0.1 (decoding every body with the official .proto files). Per mode:
the median over rounds of requests/s, P99 end-to-end latency, server CPU ms
per request, and for the trace rounds the CPU of the exporter thread
(servprof-otlp) and of the drain thread (servprof-mdrain, which runs the
assembler) per span. Each trace round checks that every request sent came
back as an llm_request span; each stall round (the collector answers
nothing for the whole round, OTEL_EXPORTER_OTLP_TIMEOUT 10 s) checks that
the spans made equal the counted drops and that the queue stayed bounded.

    bench/bench_otlp_demo.py [BUILD_DIR] [ROUNDS] [--stall]   (defaults: build, 5)
"""
import json
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

args = [a for a in sys.argv[1:] if not a.startswith("--")]
BUILD = args[0] if args else "build"
ROUNDS = int(args[1]) if len(args) > 1 else 5
STALL = "--stall" in sys.argv
SERVER = os.path.join(BUILD, "bin", "tiny-llm-server")
LOAD = os.path.join(BUILD, "bin", "servprof-load")
LOAD_ARGS = ["--requests", "150", "--rate", "200", "--concurrency", "16",
             "--prompt-len", "64:256", "--output-len", "16:64", "--quiet"]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid, name):
    total = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != name:
                    continue
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0]) / 1e9
        except OSError:
            pass
    return total


def one_round(mode, work):
    rx = Receiver(["stall:600"] * 1000 if mode == "stall" else []).start()
    cfg = os.path.join(work, "prof.json")
    with open(cfg, "w") as f:
        json.dump({"enable": 0, "prof_dir": os.path.join(work, "prof")}, f)
    port_file = os.path.join(work, "port")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_"))}
    env.update(SERVICE_PROF_CONFIG_PATH=cfg, PROF_LOG_LEVEL="INFO")
    if mode != "off":
        env.update(MS_TRACE_ENABLE="1", MS_PROFILER_AUTO_TRACE="1",
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
        cpu0 = cpu_seconds(srv.pid)
        out = subprocess.run([LOAD, "--port", port, *LOAD_ARGS, "--summary-json", "-"],
                             capture_output=True, text=True, timeout=600, check=True)
        s = json.loads(out.stdout.strip().splitlines()[-1])
        cpu = cpu_seconds(srv.pid) - cpu0
        exp = thread_cpu_seconds(srv.pid, "servprof-otlp")
        drain = thread_cpu_seconds(srv.pid, "servprof-mdrain")
    finally:
        srv.send_signal(signal.SIGINT)
        srv.wait(timeout=60)
        rx.stop()
    log.seek(0)
    text = log.read()
    res = {"req_s": s["request_throughput"], "p99_ms": s["e2e_ms"]["p99"],
           "cpu_ms_req": 1000 * cpu / max(s["requests"], 1)}
    if mode != "off":
        m = re.findall(r"request tracing off \(([^)]*)\)", text)
        c = {k: int(v) for k, v in (kv.split("=") for kv in m[-1].split())}
        spans = c["spans_queued"] + c["dropped_queue_full"] + c["dropped_encode"]
        res["us_cpu_span_exporter"] = 1e6 * exp / max(spans, 1)
        res["us_cpu_span_drain"] = 1e6 * drain / max(spans, 1)
        dropped = sum(v for k, v in c.items() if k.startswith("dropped_"))
        res["spans"] = spans
        res["dropped"] = dropped
        if mode == "trace":
            got = sum(1 for _, _, sp in rx.spans() if sp.name == "llm_request")
            if got != s["requests"] or c["spans_sent"] != len(rx.spans()):
                raise RuntimeError(f"{got} llm_request spans for {s['requests']} requests; {c}")
        elif spans != dropped or c["spans_sent"] != 0:
            raise RuntimeError(f"stall: {spans} spans made, {dropped} counted as dropped; {c}")
    return res


def main():
    modes = ["off", "trace"] + (["stall"] if STALL else [])
    results = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="sp-bench-otlp-") as work:
        for r in range(ROUNDS):
            for mode in modes:
                sub = os.path.join(work, f"{r}-{mode}")
                os.makedirs(sub)
                res = one_round(mode, sub)
                results[mode].append(res)
                print(f"round {r + 1} {mode:5s}: {json.dumps(res)}", flush=True)
    med = {m: {k: statistics.median(x[k] for x in results[m]) for k in results[m][0]} for m in modes}
    for k, label in [("req_s", "requests/s"), ("p99_ms", "P99 e2e (ms)"),
                     ("cpu_ms_req", "server CPU ms/request")]:
        off = med["off"][k]
        line = f"{label:24s} off {off:10.3f}"
        for m in modes[1:]:
            line += f"  {m} {med[m][k]:10.3f} ({100 * (med[m][k] - off) / off:+.2f} %)"
        print(line)
    for m in modes[1:]:
        print(f"{m}: exporter thread {med[m]['us_cpu_span_exporter']:.2f} µs CPU/span, "
              f"drain thread (assembler + metrics drain) {med[m]['us_cpu_span_drain']:.2f} µs CPU/span, "
              f"spans {med[m]['spans']:.0f}, dropped {med[m]['dropped']:.0f}")


if __name__ == "__main__":
    main()
