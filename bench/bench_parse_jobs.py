#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_parse_jobs.py — the parallel parse's figures (`servprof parse --jobs`,
docs/parse.md "Parallel parse"; goal of issue 31: 2 cores >= 1.7x one core).

Input: bench_parse's generator with --engines 8 (a front end and eight engine
stores: the nine stores of an 8-GPU server), made once under --dir.

Two figures, printed with their goal:
  work    (load-independent) each thread's instructions under
          `valgrind --tool=callgrind --separate-threads=yes`, --jobs 1, 2 and
          16, full default output: the expected speed-up on c free cores is
          work_1 / max(busiest_c, total_c / c), from --jobs c for c = 2 and 16
          (the two lay their threads out differently: readers.c), and the
          instructions per record of each mode. Uses --requests 1000
          (about 100 k records: callgrind is ~50x slower).
  wall    bench/pairs.py: --jobs 2 (A) against --jobs 1 (B), pairs alternated in
          one run (--requests 3000, about 310 k records): the median A/B wall
          ratio is the speed-up. Meaningful only on a quiet machine with two
          free cores (the lead reruns it).

    python3 bench/bench_parse_jobs.py [--bin build/bin/servprof] [--bench build/bench/bench_parse]
                                      [--dir /tmp/pjobs] [--only work|wall] [--runs 7]
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pairs  # noqa: E402


def make_input(bench, servprof, d, requests):
    """bench_parse's stores under d/in (reused when the parameters match)."""
    os.makedirs(d, exist_ok=True)  # bench_parse makes only the last folder
    subprocess.run([bench, "--requests", str(requests), "--engines", "8", "--dir", d, "--bin", servprof,
                    "--format", "csv"], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(d, "in")


def records(inp):
    import sqlite3
    n = 0
    for p in glob.glob(os.path.join(inp, "ms_service_*.db")):
        db = sqlite3.connect("file:%s?mode=ro" % p, uri=True)
        n += db.execute("SELECT count(*) FROM slice").fetchone()[0]
        db.close()
    return n


def thread_work(servprof, inp, jobs, tmp):
    """Instructions of each thread of one parse (callgrind, one file per thread)."""
    out = os.path.join(tmp, "cg%d" % jobs)
    env = dict(os.environ, SERVPROF_PARSE_DIRECT_IO="0")
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                    "--callgrind-out-file=" + out + ".%p", servprof, "parse", "-i", inp, "-o",
                    os.path.join(tmp, "o%d" % jobs), "--no-progress", "--quiet", "--jobs", str(jobs)],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work = []
    for f in glob.glob(out + ".*"):
        with open(f) as fh:
            for line in fh:
                if line.startswith("summary:"):
                    work.append(int(line.split()[1]))
                    break
    return sorted(work, reverse=True)


def figure_work(args):
    d = os.path.join(args.dir, "work")
    inp = make_input(args.bench, args.bin, d, 1000)
    n = records(inp)
    with tempfile.TemporaryDirectory() as tmp:
        one = thread_work(args.bin, inp, 1, tmp)
        # --jobs 2 and --jobs 16 lay their threads out differently (readers.c,
        # prs_readers_threads): each core count is derived from its own layout.
        runs = {c: thread_work(args.bin, inp, c, tmp) for c in (2, 16)}
    w1 = sum(one)
    print("input: %d records in 9 stores (bench_parse --requests 1000 --engines 8)" % n)
    print("--jobs 1: %.1f M instructions (%.0f per record)" % (w1 / 1e6, w1 / n))
    for c, work in runs.items():
        t, b = sum(work), work[0]
        print("--jobs %d: %.1f M in all (%+.1f %%, %.0f per record); the busiest thread %.1f M (%.0f per record); "
              "threads: %s" % (c, t / 1e6, 100.0 * (t - w1) / w1, t / n, b / 1e6, b / n,
                               ", ".join("%.1f" % (w / 1e6) for w in work if w > 1e6)))
        print("expected speed-up on %d free cores: %.2fx (work_1 / max(busiest, total / %d)); goal: %s" %
              (c, w1 / max(b, t / c), c, ">= 1.7x" if c == 2 else "written down"))


def figure_wall(args):
    d = os.path.join(args.dir, "wall")
    inp = make_input(args.bench, args.bin, d, 3000)
    with tempfile.TemporaryDirectory() as tmp:
        a = [args.bin, "parse", "-i", inp, "-o", os.path.join(tmp, "a"), "--no-progress", "--quiet", "--jobs", "2"]
        b = [args.bin, "parse", "-i", inp, "-o", os.path.join(tmp, "b"), "--no-progress", "--quiet", "--jobs", "1"]
        rows = pairs.run(a, b, args.runs)
    print("\n".join(pairs.table(rows)))
    print("wall: --jobs 2 takes %.4f of --jobs 1's time (median ratio): %.2fx; goal >= 1.7x on 2 free cores" %
          (pairs.median(rows, "A/B wall"), 1 / pairs.median(rows, "A/B wall")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "servprof"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bench", "bench_parse"))
    ap.add_argument("--dir", default="/tmp/servprof-bench-jobs")
    ap.add_argument("--only", choices=("work", "wall"))
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    for exe in (args.bin, args.bench):
        if not os.access(exe, os.X_OK):
            sys.exit("bench_parse_jobs: %s is not built (cmake -DSERVPROF_BUILD_BENCH=ON)" % exe)
    if args.only != "wall":
        figure_work(args)
    if args.only != "work":
        figure_wall(args)


if __name__ == "__main__":
    main()
