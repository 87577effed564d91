#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_hooks_ir.py — bench_hooks.py's figures as instruction counts:
a load-independent cross-check of the wall/CPU-time ones.

For a few cases of bench/bench_hooks.py and both wrappers, the process runs
under `valgrind --tool=callgrind` twice — N calls of the hooked function,
N calls of its unhooked twin — and the difference of the instructions
collected, divided by N, is the hook's cost per call in instructions
(everything else, interpreter start and imports included, is the same in
both runs). With collection on, the library's writer thread is counted
too (callgrind counts every thread): it is the same for both wrappers.

    SERVPROF_LIB=build/lib/libservprof.so python3 bench/bench_hooks_ir.py [--calls N]

Needs valgrind; a few minutes (each run is a Python start under callgrind).
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [(0, "plain function, span, no expressions"), (1, "method, span, rid + 2 attributes")]


def instructions(wrapper, case, phase, which, calls):
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
           sys.executable, os.path.join(HERE, "bench_hooks.py"), "--child", "--wrapper", wrapper,
           "--calls", str(calls), "--one", "%d,%s,%s" % (case, phase, which)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        sys.exit("bench_hooks_ir: %s failed:\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=5000)
    a = ap.parse_args()
    print("%-40s %-8s %-5s %14s" % ("hooked function", "wrapper", "coll.", "+instr/call"))
    for case, name in CASES:
        for phase in ("off", "on"):
            for wrapper in ("c", "python"):
                d = (instructions(wrapper, case, phase, "hooked", a.calls)
                     - instructions(wrapper, case, phase, "twin", a.calls)) / a.calls
                print("%-40s %-8s %-5s %14.0f" % (name, wrapper, phase, d), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
