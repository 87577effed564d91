#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pairs.py — two commands timed in alternation, A B A B …, and the ratio
A/B taken pair by pair: the honest way to quote a speed-up on a machine
whose speed drifts (a shared VM), because both halves of a pair see the
same machine.

Each run's user and system seconds and its peak RSS are the kernel's own
accounting of the reaped child (os.wait4's rusage); wall is a monotonic
clock read around the start and the reap. Peak RSS cannot read below
this script's own (a child's high-water mark starts at the forked
Python's, before exec): ~12 MiB. One warm-up pair is run first
and not counted. Output stays out of the figures: it goes to /dev/null.

As a module (bench_pftrace.py, bench_parse_jobs.py):
    rows = pairs.run(cmd_a, cmd_b, runs)    # {"A wall s": [...], "A/B cpu": [...], …}
    for line in pairs.table(rows): print(line)
From the shell:
    python3 bench/pairs.py -n 9 --vs 'CMD_B …' -- CMD_A …
Figures are printed as min, median, max: quote the median.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time

METRICS = ("user s", "sys s", "cpu s", "wall s", "peak MiB")


def once(cmd):
    """One run of cmd: {metric: value} from the child's rusage."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit("pairs: %s exited %d" % (" ".join(cmd), p.returncode))
    return {"user s": ru.ru_utime, "sys s": ru.ru_stime, "cpu s": ru.ru_utime + ru.ru_stime,
            "wall s": wall, "peak MiB": ru.ru_maxrss / 1024.0}


def run(cmd_a, cmd_b, runs, warmup=1):
    """runs pairs A then B after warmup uncounted pairs; returns each
    metric's list per command and the pair-by-pair ratios."""
    for _ in range(warmup):
        once(cmd_a)
        once(cmd_b)
    rows = {}
    for _ in range(runs):
        a, b = once(cmd_a), once(cmd_b)
        for m in METRICS:
            rows.setdefault("A " + m, []).append(a[m])
            rows.setdefault("B " + m, []).append(b[m])
        for m in ("user s", "cpu s", "wall s"):
            if b[m] > 0:
                rows.setdefault("A/B " + m.split()[0], []).append(a[m] / b[m])
    return rows


def table(rows):
    """Lines 'name min median max' in a fixed order."""
    out = ["%-16s %11s %11s %11s" % ("", "min", "median", "max")]
    for name, v in rows.items():
        fmt = "%-16s %11.4f %11.4f %11.4f" if name.startswith("A/B") else "%-16s %11.3f %11.3f %11.3f"
        out.append(fmt % (name, min(v), statistics.median(v), max(v)))
    return out


def median(rows, name):
    return statistics.median(rows[name])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--vs", required=True, help="command B, one string split as a shell splits words")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- command A …")
    a = ap.parse_args()
    cmd_a = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd_a:
        ap.error("command A is missing (after --)")
    for line in table(run(cmd_a, shlex.split(a.vs), a.runs, a.warmup)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
