#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_otlp_demo_ir.py — what tracing every request costs the demo server,
in instructions (callgrind): a figure the machine's load does not move.

Wall-clock rounds on a shared 2-core machine spread ±5 % or more between
rounds of one mode (bench_otlp_demo.py), as much as the 1 % goal. So this
counts instructions instead: the same fixed-seed load (16 requests, 4 in
flight) against tiny-llm-server (default model) under valgrind
--tool=callgrind --separate-threads=yes, once per mode — off (nothing
recorded), trace (MS_TRACE_ENABLE=1, every request traced to a receiver on
127.0.0.1), and metrics (live metrics on, tracing off: the records without
the assembler). Per mode, instructions per request of: the engine thread
(the model and its records), the drain thread (rings, assembler, encoder),
the exporter thread, the rest (main, HTTP; the main thread's includes the
one-time start: loading libcurl and initializing OpenSSL). Printed against
the goal: tracing's steady cost (engine + drain + exporter increase over
off) ≤ 1 % of the server's instructions per request. Takes ~5 minutes.

    bench/bench_otlp_demo_ir.py [BUILD_DIR] [MODES...]   (defaults: build, off trace metrics)
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "otlp"))
from otlp_receiver import Receiver  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
MODES = sys.argv[2:] or ["off", "trace", "metrics"]
N = 16
THREADS = {"engine_main": "engine", "drain_main": "drain", "export_main": "exporter"}


def run(mode, w):
    rx = Receiver([]).start()
    cfg = os.path.join(w, "c.json")
    with open(cfg, "w") as f:
        json.dump({"enable": 0, "metric_enable": 1 if mode == "metrics" else 0,
                   "prof_dir": os.path.join(w, "prof")}, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_"))}
    env["SERVICE_PROF_CONFIG_PATH"] = cfg
    if mode == "trace":
        env.update(MS_TRACE_ENABLE="1", MS_PROFILER_AUTO_TRACE="1", OTEL_BSP_SCHEDULE_DELAY="1000",
                   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=rx.url)
    pf = os.path.join(w, "port")
    # names uncompressed: with --separate-threads a name is defined once, in
    # whichever thread's file mentions it first
    srv = subprocess.Popen(["valgrind", "--tool=callgrind", "--separate-threads=yes", "--compress-strings=no",
                            "--callgrind-out-file=" + os.path.join(w, "cg"),
                            os.path.join(BUILD, "bin", "tiny-llm-server"), "--port", "0", "--port-file", pf],
                           env=env, stdout=open(os.path.join(w, "srv.log"), "w"), stderr=subprocess.STDOUT)
    try:
        t = time.time()
        while not (os.path.exists(pf) and os.path.getsize(pf)):
            if time.time() - t > 300 or srv.poll() is not None:
                raise RuntimeError("server did not start under valgrind")
            time.sleep(0.2)
        out = subprocess.run([os.path.join(BUILD, "bin", "servprof-load"), "--port", open(pf).read().strip(),
                              "--requests", str(N), "--rate", "100", "--concurrency", "4", "--seed", "7",
                              "--prompt-len", "64:128", "--output-len", "16:32", "--quiet", "--summary-json", "-"],
                             capture_output=True, text=True, timeout=1800, check=True)
        s = json.loads(out.stdout.strip().splitlines()[-1])
        if s["ok"] != N:
            raise RuntimeError(f"{mode}: {s}")
    finally:
        srv.send_signal(signal.SIGINT)
        srv.wait(timeout=600)
        rx.stop()
    if mode == "trace":
        got = sum(1 for _, _, sp in rx.spans() if sp.name == "llm_request")
        if got != N:
            raise RuntimeError(f"trace: {got} llm_request spans for {N} requests")
    res = {"engine": 0, "drain": 0, "exporter": 0, "rest": 0}
    for f in glob.glob(os.path.join(w, "cg-*")):
        text = open(f).read()
        ir = int(re.search(r"^summary: (\d+)", text, re.M).group(1))
        name = next((v for k, v in THREADS.items() if re.search(r"^fn=" + k + "$", text, re.M)), "rest")
        res[name] += ir
    return {k: v / N for k, v in res.items()}


def main():
    got = {}
    with tempfile.TemporaryDirectory(prefix="sp-bench-otlp-ir-") as work:
        for m in MODES:
            w = os.path.join(work, m)
            os.makedirs(w)
            got[m] = run(m, w)
            r = got[m]
            print(f"{m:8s} instructions/request: engine {r['engine'] / 1e6:8.3f} M, drain {r['drain'] / 1e6:6.3f} M, "
                  f"exporter {r['exporter'] / 1e6:6.3f} M, rest {r['rest'] / 1e6:6.3f} M", flush=True)
    if "off" not in got:
        return
    off = got["off"]
    total = sum(off.values())
    for m in [m for m in MODES if m != "off"]:
        r = got[m]
        eng = 100 * (r["engine"] - off["engine"]) / off["engine"]
        steady = (r["engine"] - off["engine"]) + r["drain"] + r["exporter"]
        line = (f"{m}: engine thread {eng:+.3f} %; engine + drain + exporter {100 * steady / total:+.3f} % of "
                f"the server's instructions per request (rest, incl. one-time start: "
                f"{(r['rest'] - off['rest']) / 1e6:+.2f} M/request over {N} requests)")
        if m == "trace":
            line += f"; goal ≤ 1 %: {'met' if 100 * steady / total <= 1 else 'NOT met'}"
        print(line)


if __name__ == "__main__":
    main()
