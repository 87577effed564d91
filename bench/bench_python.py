#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_python.py — what a servprof call costs from Python.

Prints, for each kind of call site, ns per call for:
  clean     the same code without servprof (the baseline),
  disabled  servprof loaded, nothing collected (the level check only),
  enabled   a session running (records reach the store),
and the overhead (instrumented - clean) / calls. Best of several repeats,
since the machine is shared.

    SERVPROF_LIB=build/lib/libservprof.so python3 bench/bench_python.py [--calls N]

It runs in a temporary folder (config file and prof_dir; removed at the
end unless KEEP_TMP=1) and checks, after the enabled run, that the store
holds the records it made (--no-verify to skip).
"""

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

TMP = tempfile.mkdtemp(prefix="servprof-bench-py-")
CONFIG = os.path.join(TMP, "config.json")
with open(CONFIG, "w") as f:
    json.dump({"enable": 0, "prof_dir": os.path.join(TMP, "prof"), "profiler_level": "INFO",
               "buffer_size_kb": 65536}, f)  # room enough that few records drop
os.environ["SERVICE_PROF_CONFIG_PATH"] = CONFIG
os.environ.setdefault("PROF_LOG_LEVEL", "WARNING")

import servprof  # noqa: E402
from servprof import Profiler, Level  # noqa: E402


def body():
    pass


def span_plain(n):
    span = servprof.span
    for _ in range(n):
        with span("forward", domain="Execute"):
            pass


def span_attrs(n):
    span = servprof.span
    rids = [{"rid": "r1", "iter": 0}, {"rid": "r2", "iter": 3}]
    for _ in range(n):
        with span("forward", domain="Execute", rid=rids, batch_size=2):
            pass


def clean_call(n):
    f = body
    for _ in range(n):
        f()


def traced_call(n):
    f = servprof.traced(domain="Execute")(body)
    for _ in range(n):
        f()


async def abody():
    pass


def clean_async(n):
    async def run():
        f = abody
        for _ in range(n):
            await f()
    asyncio.run(run())


def traced_async(n):
    async def run():
        f = servprof.traced(domain="Execute")(abody)
        for _ in range(n):
            await f()
    asyncio.run(run())


def clean_loop(n):
    for _ in range(n):
        pass


def profiler_event(n):
    for i in range(n):
        Profiler(Level.INFO).domain("Request").res(i).event("httpReq")


def profiler_metrics(n):
    for _ in range(n):
        (Profiler(Level.INFO).domain("Schedule").metric("QueueSize", 3)
         .metric_scope("QueueName", "WAITING").event("Enqueue"))


def module_event(n):
    ev = servprof.event
    for i in range(n):
        ev("httpReq", domain="Request", rid=i)


def is_enabled(n):
    on = servprof.is_enabled
    for _ in range(n):
        on(Level.INFO)


CASES = [
    # name, instrumented, clean baseline, records per call
    ("with span(name, domain)", span_plain, clean_loop, 1),
    ("with span(..., rid=[2 dicts], 1 kwarg)", span_attrs, clean_loop, 1),
    ("@traced sync call", traced_call, clean_call, 1),
    ("@traced async call", traced_async, clean_async, 1),
    ("Profiler().domain().res().event()", profiler_event, clean_loop, 1),
    ("Profiler().domain().metric().metric_scope().event()", profiler_metrics, clean_loop, 1),
    ("servprof.event(name, domain, rid)", module_event, clean_loop, 1),
    ("servprof.is_enabled(level)", is_enabled, clean_loop, 0),
]


def best_ns(fn, n, repeats):
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn(n)
        dt = (time.perf_counter_ns() - t0) / n
        best = dt if best is None else min(best, dt)
    return best


def count_rows(store):
    db = sqlite3.connect("file:%s?mode=ro" % store, uri=True)
    try:
        return db.execute("select count(*) from slice").fetchone()[0]
    finally:
        db.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=100000, help="calls per repeat (disabled)")
    ap.add_argument("--enabled-calls", type=int, default=20000, help="calls per repeat (enabled)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-verify", action="store_true")
    a = ap.parse_args()

    print("servprof Python binding, library %s" % servprof.library_path())
    print("python %s, %d calls x %d repeats (enabled: %d calls), load average %.1f\n"
          % (sys.version.split()[0], a.calls, a.repeats, a.enabled_calls, os.getloadavg()[0]))

    clean = {}
    disabled = {}
    servprof.stop()
    assert not servprof.is_enabled(Level.ERROR), "collection should be off for the disabled run"
    for name, fn, base, _ in CASES:
        if base not in clean:
            clean[base] = best_ns(base, a.calls, a.repeats)
        disabled[name] = best_ns(fn, a.calls, a.repeats)

    enabled = {}
    started = servprof.start()
    store = servprof.store_path()
    if started and servprof.is_enabled(Level.INFO):
        for name, fn, base, _ in CASES:
            enabled[name] = best_ns(fn, a.enabled_calls, a.repeats)
        servprof.stop()
    else:
        print("(could not start a session: enabled figures skipped)\n")

    print("%-54s %9s %9s %9s %10s %10s" % ("call site", "clean", "disabled", "enabled",
                                          "disab.ovh", "enab.ovh"))
    for name, fn, base, _ in CASES:
        c, d = clean[base], disabled[name]
        e = enabled.get(name)
        print("%-54s %7.0fns %7.0fns %9s %8.0fns %10s" % (
            name, c, d, "%7.0fns" % e if e is not None else "-", d - c,
            "%8.0fns" % (e - c) if e is not None else "-"))

    if enabled and not a.no_verify:
        want = sum(per * a.enabled_calls * a.repeats for _, _, _, per in CASES)
        got = count_rows(store)
        st = servprof.stats()
        print("\nverify: %d slice rows in %s (expected %d; dropped %d)" % (
            got, store, want, st["dropped"]))
        if got + st["dropped"] < want:
            print("verify: FAILED, records are missing")
            return 1
    return 0


if __name__ == "__main__":
    try:
        rc = main()
    finally:
        servprof.shutdown()
        if not os.environ.get("KEEP_TMP"):
            import shutil
            shutil.rmtree(TMP, True)  # the enabled run's store is large
    sys.exit(rc)
