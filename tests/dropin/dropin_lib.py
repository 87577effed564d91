# SPDX-License-Identifier: Apache-2.0
"""dropin_lib.py — what the drop-in's tests share: record a scenario in a
fresh session, compare two stores row by row, compare the reports that
`servprof parse` makes of them.

The reports of two recordings of one scenario differ in what depends on
the moment (timestamps, durations, pids): those columns, named for times
or processes or seen to differ between two native recordings, are the only
ones left out.
"""

import csv
import glob
import os
import subprocess


from support import sp_testlib as T

NATIVE = os.environ.get("SP_DROPIN_NATIVE", "")
CLIENT = os.environ.get("SP_DROPIN_CLIENT", "")
CLI = os.environ.get("SERVPROF_BIN", "")


def record(test, args, tag, level="DETAILED", env=None):
    """Runs args with collection on in a fresh folder; returns the one store."""
    d = T.tmpdir(test, prefix="servprof-dropin-")
    cfg = T.make_config(d, enable=1, profiler_level=level)
    e = {"SERVICE_PROF_CONFIG_PATH": cfg}
    e.update(env or {})
    T.run(args, env=e)
    found = T.stores(d)
    test.assertEqual(len(found), 1, "%s: stores under %s: %s" % (tag, d, found))
    return found[0]


def shape(store):
    """What must be equal between two recordings of one scenario."""
    return [(r["name"], r["cat"], r["pairs"], r["duration"] == 0, r["depth"])
            for r in T.rows(store)]


def assert_same_rows(test, got, want, tag):
    g, w = shape(got), shape(want)
    for i, (a, b) in enumerate(zip(g, w)):
        test.assertEqual(a, b, "%s: row %d differs (drop-in vs native)" % (tag, i))
    test.assertEqual(len(g), len(w), "%s: row counts differ:\ndrop-in %s\nnative %s" % (tag, g, w))


def parse(test, store):
    """`servprof parse` of the store's session; {csv name: rows}."""
    session = os.path.dirname(os.path.dirname(store))
    out = T.tmpdir(test, prefix="servprof-dropin-out-")
    proc = subprocess.run([CLI, "parse", "--input-path", session, "--output-path", out],
                          capture_output=True, text=True, timeout=120 * T.SLACK)
    test.assertEqual(proc.returncode, 0, "parse failed: %s" % proc.stderr)
    reports = {}
    for path in sorted(glob.glob(os.path.join(out, "*.csv"))):
        with open(path, newline="") as f:
            reports[os.path.basename(path)] = list(csv.reader(f))
    test.assertIn("request.csv", reports, "parse wrote %s" % list(reports))
    return reports


TIME_WORDS = ("time", "latency", "tpot", "timestamp")
PER_RUN = ("pid", "tid", "prof_id", "hostuid")


def moving_columns(a, b):
    """{csv: set of column indexes that depend on the moment of recording}:
    those named for times or processes, and those whose values differ
    between a and b (two native recordings of the scenario)."""
    moving = {}
    for name, rows in a.items():
        other = b.get(name, [])
        head = rows[0] if rows else []
        cols = {i for i, h in enumerate(head)
                if any(w in h.lower() for w in TIME_WORDS) or h.lower() in PER_RUN}
        for r1, r2 in zip(rows[1:], other[1:]):
            cols |= {i for i, (x, y) in enumerate(zip(r1, r2)) if x != y}
        moving[name] = cols
    return moving


def assert_same_reports(test, got, want, moving, tag):
    test.assertEqual(sorted(got), sorted(want), "%s: report files differ" % tag)
    compared = 0
    for name in want:
        g, w = got[name], want[name]
        test.assertEqual(len(g), len(w), "%s: %s has %d rows, native %d" % (tag, name, len(g),
                                                                            len(w)))
        test.assertEqual(g[:1], w[:1], "%s: %s columns differ" % (tag, name))
        keep = [i for i in range(len(w[0]) if w else 0) if i not in moving.get(name, ())]
        for n, (rg, rw) in enumerate(zip(g[1:], w[1:])):
            test.assertEqual([rg[i] for i in keep if i < len(rg)],
                             [rw[i] for i in keep if i < len(rw)],
                             "%s: %s row %d differs in a column that does not depend on time"
                             % (tag, name, n + 1))
            compared += len(keep)
    return compared
