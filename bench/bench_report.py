#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_report.py — `servprof report` on a large input: size, time, render.

The goals (docs/benchmarks.md, Report), on the 5 M-record bench input of bench_parse:
  - the page is at most 10 MB;
  - it is written in at most the time of `servprof analyze` on the same input plus 1 s;
  - it renders in headless Chromium in at most 3 s (navigation start to every chart
    drawn: the page's window.__servprof.renderMs, performance.now() when ready).

Runs, alternately, `servprof analyze -i IN --format json` and `servprof report -i IN`
(--runs times each), measuring each child's CPU time (user + sys, from wait4's
rusage) and wall time; then opens the page --renders times in Debian's headless
Chromium (tests/report/cdp.py), checks it drew without any console error, failed
load or request, and prints the render times. CPU time is the figure to compare
on a shared machine: wall time there includes waiting for a core.

    build/bench/bench_parse --dir /tmp/pp            # makes /tmp/pp/in (5.15 M records, once)
    python3 bench/bench_report.py --input /tmp/pp/in [--bin build/bin/servprof]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "report"))
import cdp  # noqa: E402


def timed(cmd):
    """(cpu seconds, wall seconds, peak RSS MiB) of one child run."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err}")
    return ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", required=True, help="raw stores (bench_parse's DIR/in) or a parse output folder")
    ap.add_argument("--bin", default=os.path.join("build", "bin", "servprof"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--renders", type=int, default=3)
    ap.add_argument("--out", default=None, help="the page (default: a temporary file)")
    a = ap.parse_args()
    out = a.out or os.path.join(tempfile.mkdtemp(prefix="servprof-bench-report-"), "report.html")

    rows = {"analyze": [], "report": []}
    for _ in range(a.runs):
        rows["analyze"].append(timed([a.bin, "analyze", "-i", a.input, "--format", "json"]))
        rows["report"].append(timed([a.bin, "report", "-i", a.input, "-o", out, "--quiet"]))
    size = os.path.getsize(out)
    print(f"input {a.input}; {a.runs} runs each, alternated")
    for name, r in rows.items():
        cpu = [x[0] for x in r]
        print(f"  {name:8s} CPU {', '.join(f'{x:.2f}' for x in cpu)} s (median {statistics.median(cpu):.2f}); "
              f"wall {', '.join(f'{x[1]:.2f}' for x in r)} s; peak RSS {max(x[2] for x in r):.0f} MiB")
    extra = [rep[0] - an[0] for an, rep in zip(rows["analyze"], rows["report"])]
    print(f"  report - analyze, CPU, pairwise: {', '.join(f'{x:+.2f}' for x in extra)} s "
          f"(goal <= +1 s: {'met' if statistics.median(extra) <= 1 else 'NOT met'})")
    print(f"  page {out}: {size / 1e6:.2f} MB (goal <= 10 MB: {'met' if size <= 10e6 else 'NOT met'})")

    renders = []
    for _ in range(a.renders):
        with cdp.Browser() as b:
            b.open(out)
            b.wait_for("window.__servprof && window.__servprof.ready", timeout=60)
            run = b.run_report()
            if run.console_errors or run.exceptions or run.failed_loads or run.requests:
                raise SystemExit(f"the page misbehaved: {vars(run)}")
            charts = b.evaluate("window.__servprof.charts.filter(c => c.points > 0).length")
            renders.append(b.evaluate("window.__servprof.renderMs") / 1e3)
    print(f"  render in headless Chromium (navigation start to all {charts} charts drawn): "
          f"{', '.join(f'{x:.2f}' for x in renders)} s (goal <= 3 s: {'met' if max(renders) <= 3 else 'NOT met'})")


if __name__ == "__main__":
    main()
