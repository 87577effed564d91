#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_hooks.py — what a hook (servprof.hooks) costs per call.

For each shape of hooked function, the ns per call of the hooked function
minus the ns per call of an identical unhooked twin (so the function's own
time is subtracted; the two measured alternately, round by round), with collection off (servprof loaded, the level not
collected: the wrapper's flag check) and on (a session running: the
record written with its expressions evaluated). Best of several repeats.

Issue #28's goals, printed beside each figure: off, at most "one attribute
load and a branch" more than unhooked — measured in the same run as the
cost of that check written into an unhooked twin (`if L > lv.value:`), the
"yardstick" row; on, the wrapper's own cost <= 2000 ns per call.

The clock is the calling thread's CPU time (time.thread_time_ns) unless
--clock wall: on a shared machine the time other processes take the CPU
away is not in it, and the library's writer thread (which drains the
records on its own thread) is not either — what is measured is what the
hooked call itself costs the thread that makes it.

Both wrappers are measured, each in its own process (the wrapper is chosen
when a hook binds): the C one (servprof._hookcall, built next to the
library) and the pure-Python fallback (SERVPROF_HOOKS_PURE=1). Each table
says which wrapper it actually measured.

    SERVPROF_LIB=build/lib/libservprof.so python3 bench/bench_hooks.py \
        [--calls N] [--repeats R] [--wrapper both|c|python] [--clock thread|wall]

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
import subprocess
import sys
import tempfile
import time

ON_GOAL_NS = 2000
HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__" and "--child" not in sys.argv:
    # The parent only runs one child per wrapper (below): no library use.
    _PARENT = True
else:
    _PARENT = False
    if "--wrapper" in sys.argv and sys.argv[sys.argv.index("--wrapper") + 1] == "python":
        os.environ["SERVPROF_HOOKS_PURE"] = "1"
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
def f_checked(x):
    if _L > _lv.value:
        return x
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

class Req:
    def __init__(self, i):
        self.request_id = "req-%d" % i
        self.external_req_id = "http-%d" % i
        self.iter = i

def step(batch):
    return batch
def step_twin(batch):
    return batch

def assign(request):
    return request
def assign_twin(request):
    return request
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
- symbol: benchmod:step
  domain: BatchSchedule
  name: BatchSchedule
  rid: {each: batch, rid: "item[0].request_id", iter: "item[0].iter", type: "item[1]"}
- symbol: benchmod:assign
  emit: link
  link: {from: request.external_req_id, to: request.request_id}
'''

with open(os.path.join(TMP, "benchmod.py"), "w") as fh:
    fh.write(MOD)
with open(os.path.join(TMP, "hooks.yaml"), "w") as fh:
    fh.write(HOOKS)

if _PARENT:
    shutil.rmtree(TMP, True)
    benchmod = None
else:
    import servprof  # noqa: E402
    import servprof.hooks  # noqa: E402

    servprof.hooks.install([os.path.join(TMP, "hooks.yaml")], with_env=False)
    import benchmod  # noqa: E402
    # The yardstick: the check alone (an attribute load and a
    # branch, as a call site of the binding makes it) inside the function.
    benchmod._lv, benchmod._L = servprof._core.state.level, int(servprof.Level.INFO)

S = benchmod.Sched() if benchmod else None
BATCH = ["r1", "r2", "r3", "r4"]
# A schedule step of 32 requests, as engine_hooks.yaml's `each` reads it.
STEP = [(benchmod.Req(i), "decode" if i % 4 else "prefill") for i in range(32)] if benchmod \
    else None


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


def loop_arg(fn, arg):
    def run(n):
        for _ in range(n):
            fn(arg)
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


CASES = [] if benchmod is None else [
    # name, hooked, twin, records per call
    ("plain function, span, no expressions", loop_plain(benchmod.f), loop_plain(benchmod.f_twin)),
    ("method, span, rid + 2 attributes", loop_method("schedule"), loop_method("schedule_twin")),
    ("async function, span", loop_async(benchmod.af), loop_async(benchmod.af_twin)),
    ("generator, span", loop_gen(benchmod.gen), loop_gen(benchmod.gen_twin)),
    ("event at call, rid + metric + scope", loop_plain(benchmod.enqueue),
     loop_plain(benchmod.enqueue_twin)),
    ("span, rid each over 32 items, 3 fields", loop_arg(benchmod.step, STEP),
     loop_arg(benchmod.step_twin, STEP)),
    ("link from -> to", loop_arg(benchmod.assign, STEP[0][0]),
     loop_arg(benchmod.assign_twin, STEP[0][0])),
]


CLOCK = time.thread_time_ns


def best_pair(hooked, twin, n, repeats):
    """(best ns of twin, best ns of hooked), measured alternately round by
    round, so a drift of the machine's speed hits both alike."""
    bt = bh = None
    for _ in range(repeats):
        for which in (0, 1):
            fn = twin if which == 0 else hooked
            t0 = CLOCK()
            fn(n)
            dt = (CLOCK() - t0) / n
            if which == 0:
                bt = dt if bt is None else min(bt, dt)
            else:
                bh = dt if bh is None else min(bh, dt)
    return bt, bh


def wrapper_kind():
    w = type(benchmod.f).__name__
    return "C (servprof._hookcall)" if w == "HookCall" else "Python (wrap.py)"


def main():
    global CLOCK
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--wrapper", choices=("both", "c", "python"), default="both")
    ap.add_argument("--clock", choices=("thread", "wall"), default="thread")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    # --one CASE,off|on,hooked|twin: make just those calls (bench_hooks_ir.py
    # counts their instructions under callgrind).
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if _PARENT:
        kinds = ("c", "python") if a.wrapper == "both" else (a.wrapper,)
        rc = 0
        for k in kinds:
            args = [x for x in sys.argv[1:] if x not in ("both", "c", "python", "--wrapper")]
            rc |= subprocess.call([sys.executable, os.path.abspath(__file__), "--child",
                                   "--wrapper", k] + args)
        print("goals (issue #28): off +ns <= the yardstick (an attribute load and a branch), "
              "on +ns <= %d" % ON_GOAL_NS)
        return rc
    if a.clock == "wall":
        CLOCK = time.perf_counter_ns
    servprof.is_enabled()
    if a.one:
        case, phase, which = a.one.split(",")
        if phase == "on":
            servprof.start()
        CASES[int(case)][1 if which == "hooked" else 2](a.calls)
        servprof.shutdown()
        shutil.rmtree(TMP, True)
        return 0  # initializes the library: the level is real from now on
    clean, checked = best_pair(loop_plain(benchmod.f_checked), loop_plain(benchmod.f_twin),
                               a.calls, 2 * a.repeats)
    yard = checked - clean
    rows = []
    for name, hooked, twin in CASES:
        clean, off = best_pair(hooked, twin, a.calls, a.repeats)
        rows.append([name, clean, off - clean])
    servprof.start()
    made = 0
    for row, (name, hooked, twin) in zip(rows, CASES):
        n = max(1, a.calls // 5)
        clean, on = best_pair(hooked, twin, n, a.repeats)
        made += n * a.repeats
        row.append(on - clean)
    servprof.stop()
    print("wrapper: %s; clock: %s time, best of %d" % (wrapper_kind(), a.clock, a.repeats))
    print("%-40s %8s %9s %4s %9s %4s" % ("hooked function", "own ns", "off +ns", "met", "on +ns",
                                         "met"))
    print("%-40s %8s %9.0f" % ("yardstick: the check alone, no wrapper", "", yard))
    for name, clean, off, on in rows:
        print("%-40s %8.0f %9.0f %4s %9.0f %4s" % (name, clean, off,
                                                   "yes" if off <= yard else "no", on,
                                                   "yes" if on <= ON_GOAL_NS else "no"))
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
    servprof.shutdown()  # before its config file goes
    if not os.environ.get("KEEP_TMP"):
        shutil.rmtree(TMP, True)


if __name__ == "__main__":
    sys.exit(main())
