#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_pftrace.py — trace.pftrace's size and write cost against the JSON
timeline's, the figures of docs/benchmarks.md "trace.pftrace".

  1. size: one parse writing both files (`-f json -f perfetto`); prints the
     bytes of each, their ratio and B/record (bytes / records read), with
     the goals (<= 1/3 of the JSON, <= 60 B/record);
  2. CPU: bench/pairs.py, a parse writing only trace.pftrace (A) against
     one writing only chrome_tracing.json (B), alternated A B A B so the
     ratio holds while the machine's speed drifts; the median A/B cpu is the
     figure (goal: <= 1.0); A/B wall, also printed, is the time a user waits
     for the file (written with O_DIRECT: the bytes reach the disk);
  3. instructions (--callgrind): the same two parses under
     `valgrind --tool=callgrind`; load does not move these counts.

The input is bench_parse's generator: run
  build/bench/bench_parse --requests 3000 --dir D
first (309,120 records), then
  python3 bench/bench_pftrace.py D/in [--bin build/bin/servprof] [--runs 9] [--callgrind]
Use a smaller input (--requests 300) for --callgrind: about 30 s a parse.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pairs  # noqa: E402


def parse_cmd(binary, inp, out, fmt):
    return [binary, "parse", "-i", inp, "-o", out, "-f", fmt, "--no-progress", "--quiet"]


def records(binary, inp, out):
    """Bytes of both files and the number of records the parse read."""
    p = subprocess.run([binary, "parse", "-i", inp, "-o", out, "-f", "json", "-f", "perfetto", "--no-progress"],
                       capture_output=True, text=True, check=True)
    m = re.search(r"(\d[\d,]*) records", p.stderr + p.stdout)
    n = int(m.group(1).replace(",", "")) if m else 0
    return (os.path.getsize(os.path.join(out, "chrome_tracing.json")),
            os.path.getsize(os.path.join(out, "trace.pftrace")), n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input")
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "bin", "servprof"))
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--callgrind", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_pftrace.")
    try:
        js, pf, n = records(a.bin, a.input, os.path.join(tmp, "both"))
        print("size: chrome_tracing.json %d B, trace.pftrace %d B: ratio %.3f (goal <= 0.333)" % (js, pf, pf / js))
        if n:
            print("size: %d records: %.1f B/record vs the JSON's %.1f (goal <= 60)" % (n, pf / n, js / n))
        else:
            print("size: the record count was not found in parse's summary; B/record not computed")
        a_cmd = parse_cmd(a.bin, a.input, os.path.join(tmp, "pf"), "perfetto")
        b_cmd = parse_cmd(a.bin, a.input, os.path.join(tmp, "js"), "json")
        rows = pairs.run(a_cmd, b_cmd, a.runs)
        for line in pairs.table(rows):
            if line.startswith(("A cpu", "B cpu", "A/B cpu", "A/B user", "A wall", "B wall", "A/B wall")):
                print("cpu: " + line)
        print("cpu: A = -f perfetto, B = -f json; figure: median A/B cpu (goal <= 1.0); wall: the time to the "
              "file on disk (O_DIRECT writes, docs/parse.md), 3x fewer bytes for A")
        if a.callgrind:
            counts = {}
            for fmt in ("json", "perfetto"):
                cg = os.path.join(tmp, "cg." + fmt)
                p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg]
                                   + parse_cmd(a.bin, a.input, os.path.join(tmp, "cg" + fmt), fmt),
                                   capture_output=True, text=True)
                m = re.search(r"Collected : (\d+)", p.stderr)
                counts[fmt] = int(m.group(1)) if m else 0
            if counts["json"]:
                print("instructions: -f perfetto %d, -f json %d: ratio %.2f (goal <= 1.0)"
                      % (counts["perfetto"], counts["json"], counts["perfetto"] / counts["json"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
