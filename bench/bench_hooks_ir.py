#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_hooks_ir.py — bench_hooks.py's figures as instruction counts:
a load-independent cross-check of the wall/CPU-time ones.

For a few cases of bench/bench_hooks.py and both wrappers, the process runs
under `valgrind --tool=callgrind` twice — N calls of the hooked function,
N calls of its unhooked twin — and the difference of the instructions
collected, divided by N, is the hook's cost per call in instructions
(everything else, interpreter start and imports included, is the same in
both runs). Two columns: every thread (with collection on, the library's
writer thread, which is the same for both wrappers, is counted too) and
the calling thread alone (--separate-threads=yes, thread 1): the
wrapper's own cost, the figure issue 28's goal is about.

    SERVPROF_LIB=build/lib/libservprof.so python3 bench/bench_hooks_ir.py [--calls N] \
        [--case I ...] [--wrapper c|python] [--phase off|on]

--case (repeatable) picks cases by their index in bench_hooks.py's CASES
(0 plain span, 1 method with rid + 2 attributes, 5 each over 32 items, 6
link); --wrapper and --phase keep one wrapper, one phase.

Needs valgrind; a few minutes (each run is a Python start under callgrind).
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [(0, "plain function, span, no expressions"), (1, "method, span, rid + 2 attributes"),
         (5, "span, rid each over 32 items, 3 fields"), (6, "link from -> to")]


def instructions(wrapper, case, phase, which, calls):
    """(all threads, the calling thread) instructions of one child run.
    --separate-threads writes one file per thread; thread 1 is the main
    thread, the one that calls the hooked function."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--callgrind-out-file=" + out,
               sys.executable, os.path.join(HERE, "bench_hooks.py"), "--child", "--wrapper", wrapper,
               "--calls", str(calls), "--one", "%d,%s,%s" % (case, phase, which)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if p.returncode != 0 or not m:
            sys.exit("bench_hooks_ir: %s failed:\n%s" % (" ".join(cmd), p.stderr[-2000:]))
        main_thread = None
        for f in glob.glob(out + "*-01"):
            with open(f) as fh:
                t = re.search(r"^(?:summary|totals): (\d+)", fh.read(), re.M)
            main_thread = int(t.group(1)) if t else None
        if main_thread is None:
            sys.exit("bench_hooks_ir: no per-thread file for the main thread under " + tmp)
        return int(m.group(1)), main_thread


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--case", type=int, action="append", choices=[c for c, _ in CASES])
    ap.add_argument("--wrapper", choices=("c", "python"))
    ap.add_argument("--phase", choices=("off", "on"))
    a = ap.parse_args()
    print("%-40s %-8s %-5s %14s %16s" % ("hooked function", "wrapper", "coll.", "+instr/call", "caller's thread"))
    for case, name in CASES:
        if a.case and case not in a.case:
            continue
        for phase in (a.phase,) if a.phase else ("off", "on"):
            for wrapper in (a.wrapper,) if a.wrapper else ("c", "python"):
                hooked = instructions(wrapper, case, phase, "hooked", a.calls)
                twin = instructions(wrapper, case, phase, "twin", a.calls)
                d = [(h - t) / a.calls for h, t in zip(hooked, twin)]
                print("%-40s %-8s %-5s %14.0f %16.0f" % (name, wrapper, phase, d[0], d[1]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
