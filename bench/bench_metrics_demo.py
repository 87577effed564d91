#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_metrics_demo.py — the demo server's throughput, P99 latency and CPU
with live metrics on (tracing off) versus everything off.

Rounds alternate the two modes (off, metrics, off, metrics, ...), each on a
fresh tiny-llm-server (default model) driven by servprof-load at a rate it
cannot keep up with, so throughput is the server's capacity. Per mode it
prints the median over rounds of: requests/s, output tokens/s, P99
end-to-end latency, and the server's CPU seconds per request (utime + stime
from /proc, which a busy machine disturbs less than wall time); for the
metrics rounds also the CPU of the metrics drain thread (the thread named
servprof-mdrain), the part of the cost that can be isolated. Each metrics
round also checks that servprof_requests_total equals the requests sent.

    bench/bench_metrics_demo.py [BUILD_DIR] [ROUNDS]     (defaults: build, 5)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
SERVER = os.path.join(BUILD, "bin", "tiny-llm-server")
LOAD = os.path.join(BUILD, "bin", "servprof-load")
CLI = os.path.join(BUILD, "bin", "servprof")
LOAD_ARGS = ["--requests", "150", "--rate", "200", "--concurrency", "16",
             "--prompt-len", "64:256", "--output-len", "16:64", "--quiet"]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid, name):
    """CPU seconds of the process's threads called name (0 when none), in ns
    resolution (schedstat: the clock ticks of /proc/PID/stat are 10 ms)."""
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


def one_round(metrics, work):
    cfg = os.path.join(work, "prof.json")
    with open(cfg, "w") as f:
        json.dump({"enable": 0, "metric_enable": metrics, "prof_dir": os.path.join(work, "prof")}, f)
    port_file = os.path.join(work, "port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    env = dict(os.environ, SERVICE_PROF_CONFIG_PATH=cfg)
    srv = subprocess.Popen([SERVER, "--port", "0", "--port-file", port_file], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
        drain = thread_cpu_seconds(srv.pid, "servprof-mdrain")
        if metrics:
            deadline = time.time() + 30
            while True:
                dump = subprocess.run([CLI, "metrics", "dump", "-c", cfg], capture_output=True,
                                      text=True).stdout
                total = sum(float(l.split()[-1]) for l in dump.splitlines()
                            if l.startswith("servprof_requests_total{"))
                if total == s["requests"] or time.time() > deadline:
                    break
                time.sleep(0.1)
            if total != s["requests"]:
                raise RuntimeError(f"metrics counted {total} of {s['requests']} requests")
    finally:
        srv.terminate()
        srv.wait(timeout=60)
    return {"req_s": s["request_throughput"], "tok_s": s["output_tokens_per_s"],
            "p99_ms": s["e2e_ms"]["p99"], "cpu_ms_req": 1000 * cpu / max(s["requests"], 1),
            "drain_ms_req": 1000 * drain / max(s["requests"], 1)}


def main():
    results = {0: [], 1: []}
    with tempfile.TemporaryDirectory(prefix="sp-bench-mdemo-") as work:
        for r in range(ROUNDS):
            for mode in (0, 1):
                sub = os.path.join(work, f"{r}-{mode}")
                os.makedirs(sub)
                res = one_round(mode, sub)
                results[mode].append(res)
                print(f"round {r + 1} {'metrics' if mode else 'off    '}: {json.dumps(res)}", flush=True)
    med = {m: {k: statistics.median(x[k] for x in results[m]) for k in results[m][0]} for m in results}
    for k, label in [("req_s", "requests/s"), ("tok_s", "output tokens/s"),
                     ("p99_ms", "P99 e2e (ms)"), ("cpu_ms_req", "server CPU ms/request")]:
        off, on = med[0][k], med[1][k]
        print(f"{label:24s} off {off:10.3f}  metrics {on:10.3f}  change {100 * (on - off) / off:+.2f} %")
    print(f"{'drain thread CPU ms/request':28s} metrics {med[1]['drain_ms_req']:.5f} "
          f"({100 * med[1]['drain_ms_req'] / med[1]['cpu_ms_req']:.3f} % of the server's CPU)")


if __name__ == "__main__":
    main()
