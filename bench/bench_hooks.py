#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_hooks.py — what a hook (servprof.hooks) costs per call.

For each shape of hooked function, the ns per call of the hooked function
minus the ns per call of an identical unhooked twin (so the function's own
time is subtracted), with collection off (servprof loaded, the level not
collected: the wrapper's flag check) and on (a session running: the
record written with its expressions evaluated). Best of several repeats,
since the machine is shared.

    SERVPROF_LIB=build/lib/libservprof.so python3 bench/bench_hooks.py [--calls N] [--repeats R]

Runs in a temporary folder (removed unless KEEP_TMP=1); after the "on"
runs it checks that the store holds one record per hooked call made
(--no-verify to skip).
"""

import argparse
import asyncio
import glob
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
TMP = tempfile.mkdtemp(prefix="servprof-bench-hooks-")
sys.path.insert(0, TMP)
CONFIG = os.path.join(TMP, "config.json")
with open(CONFIG, "w") as f:
    json.dump({"enable": 0, "prof_dir": os.path.join(TMP, "prof"), "profiler_level": "INFO",
               "buffer_size_kb": 65536}, f)
os.environ["SERVICE_PROF_CONFIG_PATH"] = CONFIG
os.environ.setdefault("PROF_LOG_LEVEL", "WARNING")
os.environ["SERVPROF_HOOKS_QUIET"] = "1"

MOD = '''
class Sched:
    def __init__(self):
        self.waiting = [1, 2, 3]
    def schedule(self, batch):
        return batch
    def schedule_twin(self, batch):
        return batch

def f(x):
    return x
def f_twin(x):
    return x

async def af(x):
    return x
async def af_twin(x):
    return x

def gen(x):
    yield x
def gen_twin(x):
    yield x

def enqueue(req):
    return req
def enqueue_twin(req):
    return req
'''

HOOKS = '''
- symbol: benchmod:f
- symbol: benchmod:Sched.schedule
  domain: BatchSchedule
  name: BatchSchedule
  rid: batch
  attributes: {batch_size: "len(batch)", waiting: "self.waiting | len"}
- symbol: benchmod:af
- symbol: benchmod:gen
- symbol: benchmod:enqueue
  emit: event
  when: call
  domain: Schedule
  name: Enqueue
  rid: req
  metrics: [{name: QueueSize, expr: "3"}]
  scope: {name: QueueName, value: WAITING}
'''

with open(os.path.join(TMP, "benchmod.py"), "w") as fh:
    fh.write(MOD)
with open(os.path.join(TMP, "hooks.yaml"), "w") as fh:
    fh.write(HOOKS)

import servprof  # noqa: E402
import servprof.hooks  # noqa: E402

servprof.hooks.install([os.path.join(TMP, "hooks.yaml")], with_env=False)
import benchmod  # noqa: E402

S = benchmod.Sched()
BATCH = ["r1", "r2", "r3", "r4"]


def loop_plain(fn):
    def run(n):
        for i in range(n):
            fn(i)
    return run


def loop_method(name):
    m = getattr(S, name)

    def run(n):
        for _ in range(n):
            m(BATCH)
    return run


def loop_async(fn):
    def run(n):
        async def go():
            for i in range(n):
                await fn(i)
        asyncio.run(go())
    return run


def loop_gen(fn):
    def run(n):
        for i in range(n):
            for _ in fn(i):
                pass
    return run


CASES = [
    # name, hooked, twin, records per call
    ("plain function, span, no expressions", loop_plain(benchmod.f), loop_plain(benchmod.f_twin)),
    ("method, span, rid + 2 attributes", loop_method("schedule"), loop_method("schedule_twin")),
    ("async function, span", loop_async(benchmod.af), loop_async(benchmod.af_twin)),
    ("generator, span", loop_gen(benchmod.gen), loop_gen(benchmod.gen_twin)),
    ("event at call, rid + metric + scope", loop_plain(benchmod.enqueue),
     loop_plain(benchmod.enqueue_twin)),
]


def best_ns(fn, n, repeats):
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn(n)
        dt = (time.perf_counter_ns() - t0) / n
        best = dt if best is None else min(best, dt)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-verify", action="store_true")
    a = ap.parse_args()
    servprof.is_enabled()  # initializes the library: the level is real from now on
    rows = []
    for name, hooked, twin in CASES:
        clean = best_ns(twin, a.calls, a.repeats)
        off = best_ns(hooked, a.calls, a.repeats)
        rows.append([name, clean, off - clean])
    servprof.start()
    made = 0
    for row, (name, hooked, twin) in zip(rows, CASES):
        n = max(1, a.calls // 5)
        clean = best_ns(twin, n, a.repeats)
        on = best_ns(hooked, n, a.repeats)
        made += n * a.repeats
        row.append(on - clean)
    servprof.stop()
    print("%-40s %10s %12s %12s" % ("hooked function", "own ns", "off +ns", "on +ns"))
    for name, clean, off, on in rows:
        print("%-40s %10.0f %12.0f %12.0f" % (name, clean, off, on))
    if not a.no_verify:
        stores = glob.glob(os.path.join(TMP, "prof", "**", "ms_service_*.db"), recursive=True)
        got = 0
        for s in stores:
            db = sqlite3.connect(s)
            got += db.execute("select count(*) from slice").fetchone()[0]
            db.close()
        st = servprof.stats()
        print("verify: %d records in the store for %d hooked calls (dropped: %s)"
              % (got, made, st.get("dropped", "?")))
    if not os.environ.get("KEEP_TMP"):
        shutil.rmtree(TMP, True)


if __name__ == "__main__":
    main()
