#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_hooked_engine.py — the PyTorch engine profiled from a hook file
against the same engine instrumented by hand, on the same requests.

Why: the hooks_engine test once saw the hooked engine's forward spans at
about 3x the hand run's. That test runs the two servers one after the
other on a shared machine, so the two figures came from different minutes
of the neighbours' load. This bench takes that out: both servers run at
the same time (the hand engine, examples/python-engine/engine.py; and its
copy with every servprof call stubbed out, under `python -m servprof run
--hooks tests/hooks/engine_hooks.yaml`, made as the test makes it), and
each round drives one, then the other, with the test's load (16 requests,
one at a time, seed 7), the order alternating round by round. Per round and
server: the median forward span (ms) and the server's CPU time per request
(/proc/PID/stat, user + system, all threads). Printed: each round, then the
median over rounds of hooked / hand for both.

Goal: forward ratio within 0.9..1.1 — a hook only times the call it wraps
(nothing of engine_hooks.yaml runs inside Engine.forward; its expressions
are evaluated after the span's end is read), so the forward spans must
match. The CPU ratio is what the hooks' records cost the server (printed,
no goal: it depends on how many records a request makes).

    SERVPROF_LIB=build/lib/libservprof.so SERVPROF_BIN=build/bin/servprof \\
        python3 bench/bench_hooked_engine.py [--rounds 5]

Needs python3-torch, python3-aiohttp and PyYAML; exits 3 naming what is
missing.
"""

import argparse
import os
import sqlite3
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "hooks"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
os.environ.setdefault("SERVPROF_BIN", os.path.join(HERE, "..", "build", "bin", "servprof"))
os.environ.setdefault("SERVPROF_LIB", os.path.join(HERE, "..", "build", "lib", "libservprof.so"))
os.environ.setdefault("SERVPROF_SOURCE", os.path.join(HERE, ".."))

for m in ("torch", "aiohttp", "yaml"):
    try:
        __import__(m)
    except ImportError as e:
        print("bench_hooked_engine: %s is needed: %s" % (m, e))
        sys.exit(3)

import unittest  # noqa: E402

import hooklib as H  # noqa: E402
from hooklib import T  # noqa: E402
import test_hooks_engine as E  # noqa: E402


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def forwards(prof):
    """Durations (ns) of the forward spans of the one store under prof, in
    record order; and the store's pid (the server's, whatever launched it)."""
    stores = T.stores(prof)
    assert len(stores) == 1, stores
    db = sqlite3.connect("file:%s?mode=ro" % stores[0], uri=True)
    try:
        durs = [r[0] for r in db.execute("select duration from slice where name='forward' "
                                         "order by timestamp")]
    finally:
        db.close()
    return durs, T.store_pid(stores[0])


class Bench(unittest.TestCase):
    rounds = 5

    def test(self):
        hand_d, hook_d = T.tmpdir(self), T.tmpdir(self)
        servers = {
            "hand": E.Server(self, [H.PY, "-B", E.ENGINE],
                             {"SERVICE_PROF_CONFIG_PATH": T.make_config(hand_d, enable=1)},
                             hand_d),
            "hook": E.Server(self, H.run_cmd([E.HOOKS], H.PY, "-B", E.uninstrumented_copy(hook_d)),
                             H.env(hook_d, T.make_config(hook_d, enable=1)), hook_d)}
        pids = {"hand": servers["hand"].p.pid, "hook": servers["hook"].p.pid}
        cpu = {k: [] for k in servers}
        marks = {}   # forward spans per round: the same requests make the same steps
        order = ["hand", "hook"]
        for rnd in range(self.rounds):
            for k in (order if rnd % 2 == 0 else order[::-1]):
                c0 = cpu_s(pids[k])
                servers[k].load()
                cpu[k].append((cpu_s(pids[k]) - c0) / 16)
        for k, s in servers.items():
            rc, out, err = s.stop()
            self.assertEqual(rc, 0, err)
        per = {}
        for k, d in (("hand", hand_d), ("hook", hook_d)):
            durs, pid = forwards(os.path.join(d, "prof"))
            self.assertEqual(pid, pids[k], "the store is not the server's own")
            n = len(durs) // self.rounds
            self.assertEqual(n * self.rounds, len(durs), "rounds made unequal forward counts")
            per[k] = [statistics.median(durs[i * n:(i + 1) * n]) / 1e6 for i in range(self.rounds)]
            marks[k] = n
        self.assertEqual(marks["hand"], marks["hook"], "the same requests make the same steps")
        print("round  hand fwd p50 ms  hook fwd p50 ms  ratio   "
              "hand CPU ms/req  hook CPU ms/req  ratio")
        for i in range(self.rounds):
            print("%5d  %15.3f  %15.3f  %5.2f   %15.2f  %15.2f  %5.2f" % (
                i, per["hand"][i], per["hook"][i], per["hook"][i] / per["hand"][i],
                cpu["hand"][i] * 1e3, cpu["hook"][i] * 1e3,
                cpu["hook"][i] / cpu["hand"][i] if cpu["hand"][i] else float("nan")))
        fr = statistics.median(h / a for h, a in zip(per["hook"], per["hand"]))
        cr = statistics.median(h / a for h, a in zip(cpu["hook"], cpu["hand"]) if a)
        print("forward span, hooked / hand (median of %d rounds, %d steps each): %.2f  "
              "goal 0.9..1.1  %s" % (self.rounds, marks["hand"], fr,
                                     "met" if 0.9 <= fr <= 1.1 else "NOT met"))
        print("server CPU per request, hooked / hand: %.2f  (no goal: the hooks' records)" % cr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    Bench.rounds = a.rounds
    r = unittest.main(argv=[sys.argv[0]], exit=False, verbosity=0).result
    return 0 if r.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
