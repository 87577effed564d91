#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_torch_engine.py — what collection costs a real PyTorch server.

Serves examples/python-engine/engine.py (the small torch decoder over
aiohttp) on 127.0.0.1 and drives it with servprof-load at saturation (a
fixed request count, every arrival at once, --concurrency clients). Prints
serving throughput (output tokens/s, requests/s) for:

  off   collection off ("enable": 0)
  on    collection on at INFO, "acl_task_time": 0 (service records only)

in interleaved rounds (off, on, off, on ...; a fresh server each run), the
median of each and the overhead (off - on) / off. Goal: <= 2 %. Also the
server's CPU time (user + system, /proc/PID/stat) per output token while the
load ran, best run of each mode: on a shared machine throughput follows the
neighbours' load, CPU per token much less. Then one
run with "acl_task_time": 3 and torch_prof_step_num N reports what the
profiled steps cost — torch's profiler, not servprof: the median forward
span in the profiled steps against the others, and the pause after the
last profiled step (torch's stop, which turns its records into events).

    SERVPROF_LIB=build/lib/libservprof.so python3 bench/bench_torch_engine.py \\
        [--load build/bin/servprof-load] [--rounds 3] [--requests 256]

Verifies, while timing: every request ok in every run, and in the "on"
runs a store with one httpRes per request. Needs python3-torch and
python3-aiohttp; without them it says so and exits 3.
"""

import argparse
import glob
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.path.join(HERE, "..", "examples", "python-engine", "engine.py")


def start(cfg):
    env = dict(os.environ, SERVICE_PROF_CONFIG_PATH=cfg)
    p = subprocess.Popen([sys.executable, "-B", ENGINE, "--port", "0"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()  # the engine prints this first, or exits
    if not line.startswith("listening on "):
        p.kill()
        raise SystemExit("the engine did not start: %r %s" % (line, p.stderr.read()))
    return p, int(line.rsplit(":", 1)[1])


def cpu_s(pid):
    """CPU time (user + system, all threads) of process pid so far, in s."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=300)


def run(args, folder, mode, extra):
    cfg = os.path.join(folder, "config.json")
    prof = os.path.join(folder, "prof-%s" % mode)
    c = {"enable": 0 if mode == "off" else 1, "prof_dir": prof, "profiler_level": "INFO",
         "acl_task_time": 0}
    c.update(extra)
    with open(cfg, "w") as f:
        json.dump(c, f)
    p, port = start(cfg)
    try:
        cpu0 = cpu_s(p.pid)
        out = subprocess.run([args.load, "--port", str(port), "--requests", str(args.requests),
                              "--rate", "100000", "--concurrency", str(args.concurrency),
                              "--vocab", "256", "--prompt-len", "16:48", "--output-len", "16:32",
                              "--shared-prefix", "0", "--seed", "5", "--quiet",
                              "--summary-json", "-"],
                             capture_output=True, text=True, timeout=600, check=True).stdout
        cpu = cpu_s(p.pid) - cpu0
    finally:
        stop(p)
    s = json.loads(out.strip().splitlines()[-1])
    s["cpu_ms_per_token"] = 1000.0 * cpu / max(1, s["output_tokens"])
    if s["ok"] != args.requests:
        raise SystemExit("%s run: %d of %d requests ok" % (mode, s["ok"], args.requests))
    return s, prof


def store_rows(prof, name):
    stores = glob.glob(os.path.join(prof, "**", "ms_service_*.db"), recursive=True)
    if len(stores) != 1:
        raise SystemExit("expected one store under %s, found %s" % (prof, stores))
    db = sqlite3.connect("file:%s?mode=ro" % stores[0], uri=True)
    try:
        return db.execute("select timestamp, duration, args from slice where name = ? "
                          "order by timestamp", (name,)).fetchall()
    finally:
        db.close()


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--load", default=os.path.join(HERE, "..", "build", "bin", "servprof-load"))
    a.add_argument("--rounds", type=int, default=3)
    a.add_argument("--requests", type=int, default=256)
    a.add_argument("--concurrency", type=int, default=32)
    a.add_argument("--torch-steps", type=int, default=5)
    args = a.parse_args()
    try:
        import torch  # noqa: F401
        import aiohttp  # noqa: F401
    except ImportError as e:
        print("bench_torch_engine: needs python3-torch and python3-aiohttp (%s)" % e, file=sys.stderr)
        return 3
    folder = tempfile.mkdtemp(prefix="servprof-bench-torch-")
    tput = {"off": [], "on": []}
    reqs = {"off": [], "on": []}
    cpu = {"off": [], "on": []}
    try:
        for r in range(args.rounds):
            for mode in ("off", "on"):
                s, prof = run(args, folder, mode, {})
                if mode == "on":
                    n = len(store_rows(prof, "httpRes"))
                    if n != args.requests:
                        raise SystemExit("on run: %d httpRes records for %d requests" % (n, args.requests))
                shutil.rmtree(prof, ignore_errors=True)
                tput[mode].append(s["output_tokens_per_s"])
                reqs[mode].append(s["request_throughput"])
                cpu[mode].append(s["cpu_ms_per_token"])
                print("round %d %-3s %8.1f output tokens/s %7.2f req/s %7.3f server CPU ms/token" %
                      (r + 1, mode, s["output_tokens_per_s"], s["request_throughput"],
                       s["cpu_ms_per_token"]), flush=True)
        off, on = statistics.median(tput["off"]), statistics.median(tput["on"])
        print("median: off %.1f, on %.1f output tokens/s; overhead (off - on) / off = %.2f %% "
              "(goal <= 2 %%)" % (off, on, 100.0 * (off - on) / off))
        coff, con = min(cpu["off"]), min(cpu["on"])
        print("server CPU per output token, best run: off %.3f ms, on %.3f ms; (on - off) / off "
              "= %.2f %%" % (coff, con, 100.0 * (con - coff) / coff))

        s, prof = run(args, folder, "torch", {"acl_task_time": 3,
                                              "torch_prof_step_num": args.torch_steps})
        steps = store_rows(prof, "torch_profiler")
        fwd = store_rows(prof, "forward")
        inside = [d for t, d, _ in fwd if any(st <= t < st + sd for st, sd, _ in steps)]
        outside = [d for t, d, _ in fwd if not any(st <= t < st + sd for st, sd, _ in steps)]
        last_end = max(st + sd for st, sd, _ in steps) if steps else 0
        after = [t for t, _, _ in fwd if t >= last_end]
        print("acl_task_time 3, torch_prof_step_num %d: %d steps profiled; forward median %.2f ms "
              "profiled vs %.2f ms not; pause after the last profiled step (torch's stop) %.2f s; "
              "run throughput %.1f output tokens/s" %
              (args.torch_steps, len(steps), statistics.median(inside) / 1e6 if inside else 0,
               statistics.median(outside) / 1e6 if outside else 0,
               (after[0] - last_end) / 1e9 if after else 0, s["output_tokens_per_s"]))
    finally:
        if not os.environ.get("KEEP_TMP"):
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
