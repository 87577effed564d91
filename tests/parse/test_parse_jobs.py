# SPDX-License-Identifier: Apache-2.0
"""The parallel parse (`--jobs N`, readers.c) equals the one-thread parse
byte for byte: every multi-store input below is parsed with --jobs 1 and
with --jobs 4 (and 2: fewer threads than stores, so a thread serves several
stores round robin), and every output file — the CSVs, chrome_tracing.json,
trace.pftrace and profiler.db — is compared byte for byte.

Inputs: the parity fixture (a legacy Mstx store and two slice stores), the
main scenario (two hosts), the PD split and the clock-alignment fixture
(hosts' clocks shifted), seven synthetic stores big enough to take the
one-pass window, wrap each reader's ring many times and tie timestamps
across stores, the same with a late span (the one pass meets a row later
than its window: the exact-mode restart, with reader threads in both runs)
and rows without a valid timestamp, three stores of long records (the
rings' text wrapped, past half full, the longest in buffers of their own),
and bench_parse's input when the
bench was built. With --jobs above 1 the outputs are also encoded on
threads of their own (wqueue.c: the CSVs, profiler.db, the timeline), so
the same comparison covers them; --span and --db-writer sqlite add the
span_info CSVs and the SQLite writer fed from the db thread.
"""
import filecmp
import os
import random
import subprocess
import tempfile
import unittest

import parity_fixture  # noqa: E402
from support import scenario
import test_parse_clock  # noqa: E402
import test_parse_pdsplit  # noqa: E402
from support.fixtures import Store, run_parse

FORMATS = ("--format", "csv", "--format", "json", "--format", "db", "--format", "perfetto")


def synthetic(inp, stores=7, rows=20000, late=False, bad=False):
    """Stores whose rows interleave in time, with ties across stores (the
    store index breaks them) and spans inserted when they end (not in time
    order)."""
    rng = random.Random(31)
    for k in range(stores):
        s = Store(os.path.join(inp, "h%d" % (k % 3), "ms_service_s%d.db" % k), hostname="h%d" % (k % 3),
                  pid=1000 + k)
        pending = []
        for i in range(rows):
            t = i * 0.05 + (0 if i % 5 == 0 else rng.random() * 0.01)  # every 5th: the same ts in every store
            if i % 3 == 0:
                pending.append(("forward", t, t + rng.random() * 0.4, i))
            else:
                s.event("Enqueue" if i % 2 else "Dequeue", t, cat="Schedule", rid="r%d-%d" % (k, i % 97),
                        **{"QueueSize=": i % 17, "scope#QueueName": "WAITING"})
            while pending and pending[0][2] <= t:
                name, a, b, j = pending.pop(0)
                s.span(name, a, b, cat="ModelExecute", rid=[{"rid": "r%d-%d" % (k, j % 97), "iter": j}])
            if bad and i % 1000 == 7:
                s.raw("noTime", 0, 0, "Schedule", "{}")  # no place in time
        for name, a, b, j in pending:
            s.span(name, a, b, cat="ModelExecute", rid=[{"rid": "r%d-%d" % (k, j % 97), "iter": j}])
        if late and k == 2:
            s.span("serverLifetime", 0.01, rows * 0.05, cat="Server")  # inserted last: later than any window
        s.close()


def long_records(inp, stores=3, rows=2000):
    """Records of 50 to 500 bytes of args, every 20th of 5 to 60 KiB, every
    97th of 200 KiB: a reader's ring text (readers.c, 512 KiB) wraps with a
    gap at its end, fills past its half, and the longest get buffers of
    their own."""
    rng = random.Random(7)
    for k in range(stores):
        s = Store(os.path.join(inp, "ms_service_l%d.db" % k), pid=2000 + k)
        for i in range(rows):
            n = 200 << 10 if i % 97 == 5 else rng.randint(5 << 10, 60 << 10) if i % 20 == 0 else rng.randint(50, 500)
            s.event("Enqueue" if i % 2 else "Dequeue", i * 0.01 + k * 0.001, cat="Schedule", rid="r%d" % (i % 31),
                    note=rng.choice("abcdef") * n)
        s.close()


def bench_input(inp):
    """bench_parse's generator (the bench's own parse of it is not used). A sanitizer build has no
    bench: SERVPROF_BENCH_PARSE may name a plain build's bench_parse (the stores it writes are the same)."""
    exe = os.environ.get("SERVPROF_BENCH_PARSE") or os.path.join(os.environ.get("SERVPROF_BUILD", ""), "bench",
                                                                  "bench_parse")
    if not os.access(exe, os.X_OK):
        return False
    d = os.path.dirname(inp)
    subprocess.run([exe, "--requests", "400", "--dir", d, "--bin", os.environ["SERVPROF_BIN"], "--format", "csv"],
                   check=True, capture_output=True, timeout=600)
    return os.path.isdir(inp)


def all_files(root):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


class ParallelParse(unittest.TestCase):
    def compare(self, build, jobs=(4, 2), restart=None, extra=()):
        with tempfile.TemporaryDirectory() as tmp:
            inp = os.path.join(tmp, "in")
            os.makedirs(inp)
            if build(inp) is False:
                self.skipTest("bench_parse was not built (SERVPROF_BUILD_BENCH=OFF)")
            one = os.path.join(tmp, "j1")
            p1 = run_parse(inp, one, "--jobs", "1", "--quiet", *FORMATS, *extra)
            names = all_files(one)
            self.assertIn("profiler.db", names)
            self.assertIn("trace.pftrace", names)
            self.assertIn("chrome_tracing.json", names)
            for j in jobs:
                other = os.path.join(tmp, "j%d" % j)
                pj = run_parse(inp, other, "--jobs", str(j), "--quiet", *FORMATS, *extra)
                self.assertEqual(all_files(other), names, "--jobs %d wrote other files" % j)
                for n in names:
                    self.assertTrue(filecmp.cmp(os.path.join(one, n), os.path.join(other, n), shallow=False),
                                    "%s differs between --jobs 1 and --jobs %d" % (n, j))
                if restart is not None:
                    for p in (p1, pj):
                        self.assertEqual("parsing again" in p.stderr, restart, p.stderr)
            return p1

    def test_parity_fixture(self):
        self.compare(parity_fixture.build)

    def test_scenario(self):
        self.compare(scenario.build)

    def test_pdsplit(self):
        self.compare(test_parse_pdsplit.build)

    def test_clock_hosts(self):
        self.compare(test_parse_clock.build)

    def test_many_stores(self):
        self.compare(lambda inp: synthetic(inp), jobs=(4, 2, 3), restart=False)

    def test_long_records(self):
        self.compare(lambda inp: long_records(inp), jobs=(2, 3))

    def test_restart_and_bad_rows(self):
        p = self.compare(lambda inp: synthetic(inp, rows=18000, late=True, bad=True), restart=True)
        self.assertIn("without a valid timestamp", p.stderr)

    def test_span_and_sqlite_writer(self):
        # every writer thread's input (wqueue.c): span_info/*.csv, profiler.db through SQLite's INSERT
        # (dbsql.c fed from the db thread), with the restart in exact mode in both runs
        self.compare(lambda inp: synthetic(inp, rows=18000, late=True), jobs=(2,), restart=True,
                     extra=("--span", "forward", "--db-writer", "sqlite"))
        self.compare(scenario.build, jobs=(2,), extra=("--span", "forward", "--span", "httpReq"))

    def test_messages_alike(self):
        # the writers' threads log through the parse thread: the same lines (warnings, skips) as --jobs 1
        with tempfile.TemporaryDirectory() as tmp:
            inp = os.path.join(tmp, "in")
            os.makedirs(inp)
            synthetic(inp, stores=3, rows=3000, bad=True)
            err = {}
            for j in ("1", "2"):
                p = run_parse(inp, os.path.join(tmp, "o" + j), "--jobs", j, *FORMATS)
                err[j] = sorted(ln for ln in p.stderr.splitlines() if ": warning: " in ln or ": error: " in ln)
            self.assertTrue(err["1"])
            self.assertEqual(err["2"], err["1"])

    def test_bench_input(self):
        self.compare(bench_input)

    def test_thread_layout(self):
        # readers.c, prs_readers_threads / prs_readers_writers: --jobs 2 is one reader and the
        # encoders on the parse thread (two threads for two cores); 3 and more add the encoders'
        # threads. Each thread names itself in SERVPROF_PARSE_THREAD_CPU's lines (thrcpu.c).
        with tempfile.TemporaryDirectory() as tmp:
            inp = os.path.join(tmp, "in")
            os.makedirs(inp)
            synthetic(inp, stores=5, rows=2000)
            os.environ["SERVPROF_PARSE_THREAD_CPU"] = "1"
            try:
                names = {}
                for j in ("2", "4"):
                    p = run_parse(inp, os.path.join(tmp, "o" + j), "--jobs", j, *FORMATS)
                    names[j] = sorted(ln.split("thread cpu: ")[1].split()[0] for ln in p.stderr.splitlines()
                                      if "thread cpu: sp-" in ln)
            finally:
                del os.environ["SERVPROF_PARSE_THREAD_CPU"]
            self.assertEqual(names["2"], ["sp-reader"])
            self.assertEqual(names["4"], ["sp-csv", "sp-db", "sp-reader", "sp-reader", "sp-reader", "sp-reader",
                                          "sp-timeline"])

    def test_bad_jobs(self):
        with tempfile.TemporaryDirectory() as tmp:
            for v in ("0", "x", "-2"):
                p = run_parse(tmp, os.path.join(tmp, "o"), "--jobs", v, check=False)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("--jobs", p.stderr)


if __name__ == "__main__":
    unittest.main()
