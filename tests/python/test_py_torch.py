# SPDX-License-Identifier: Apache-2.0
"""test_py_torch.py — acl_task_time 3: torch.profiler beside the service
records, and its trace merged by `servprof parse`.

A child process (torch_steps.py) runs a tiny torch model step by step under
servprof; the tests read the trace file it leaves in the session, and the
parse outputs: chrome_tracing.json lanes, op_summary.csv/op_statistic.csv
rows, profiler.db's slice table. The counts are exact: the model runs two
Linear layers (two aten::addmm) per step.

Without python3-torch every test that needs it is skipped, saying why; the
"torch missing" test runs anyway (it hides torch on purpose).
"""

import glob
import json
import os
import sqlite3
import sys
import unittest

from support import sp_testlib as T

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = os.path.join(HERE, "torch_steps.py")

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
NEEDS_TORCH = unittest.skipUnless(
    HAVE_TORCH, "python3-torch is not installed (scripts/install-deps.sh installs it): "
    "the torch profiler path cannot run")


class _Ev:
    """A stand-in for torch's FunctionEvent: what _clock reads."""
    class _Range:
        def __init__(self, start, end):
            self.start, self.end = start, end

    def __init__(self, name, thread, start_us, end_us):
        self.name, self.thread, self.time_range = name, thread, _Ev._Range(start_us, end_us)


class Clock(unittest.TestCase):
    """The torch clock's anchor (python/servprof/_torch.py, _clock): every
    clock op bounds the offset from both sides, and only the starting
    thread's ops count. Needs no torch."""

    def setUp(self):
        if T.PYDIR not in sys.path:
            sys.path.insert(0, T.PYDIR)
        from servprof import _torch
        self.t = _torch

    def test_bounds_of_two_loose_windows_meet(self):
        base = 1_000_000_000_000  # the true epoch ns of torch's 0 µs
        op = self.t.CLOCK_OP
        # Op 1 ran at 100..101 µs in a window loose before it (a preemption
        # before the op), op 2 at 200..201 µs in one loose after it.
        ops = [_Ev(op, 7, 100, 101), _Ev("aten::mm", 7, 150, 160), _Ev(op, 9, 120, 121), _Ev(op, 7, 200, 201)]
        anchors = [(base + 40_000, base + 101_500), (base + 199_500, base + 260_000)]
        got, used = self.t._clock(ops, anchors)
        self.assertEqual([e.time_range.start for e in used], [100, 200])  # thread 9's op is not ours
        # Each window alone puts its midpoint 29-30 µs off; together they meet within 1.5 µs.
        self.assertLessEqual(abs(got - base), 1_500, got - base)

    def test_no_clock_op_is_no_anchor(self):
        self.assertEqual(self.t._clock([_Ev("aten::mm", 1, 0, 5)], [(0, 10)]), (None, ()))


class Torch(unittest.TestCase):

    def child(self, d, mode, n, **keys):
        cfg = T.make_config(d, acl_task_time=3, **keys)
        env = {"SERVICE_PROF_CONFIG_PATH": cfg, "PYTHONPATH": T.TESTS}
        p = T.run([sys.executable, "-B", STEPS, mode, str(n)], env=env, timeout=150)
        return p, json.loads(p.stdout.strip().splitlines()[-1])

    def parse(self, d, prof):
        out = os.path.join(d, "out")
        T.run([os.environ["SERVPROF_BIN"], "parse", "-i", prof, "-o", out], timeout=120)
        return out

    def traces(self, prof):
        return sorted(glob.glob(os.path.join(prof, "**", "torch_prof_*.json"), recursive=True))

    def load_trace(self, path):
        with open(path) as f:
            return json.load(f)

    @NEEDS_TORCH
    def test_five_steps_then_stops_and_parse_merges(self):
        d = T.tmpdir(self)
        prof = os.path.join(d, "prof")
        self.child(d, "api", 8, torch_prof_step_num=5, torch_prof_stack=True,
                   torch_prof_modules=True)
        stores, traces = T.stores(prof), self.traces(prof)
        self.assertEqual(len(stores), 1, stores)
        self.assertEqual(len(traces), 1, traces)
        # Named after its process's store, in the same folder.
        self.assertEqual(os.path.dirname(traces[0]), os.path.dirname(stores[0]))
        self.assertEqual(os.path.basename(traces[0])[len("torch_prof_"):-5],
                         os.path.basename(stores[0])[len("ms_service_"):-3])
        tr = self.load_trace(traces[0])
        self.assertEqual(tr["servprof"]["steps"], 5)
        self.assertIn("torch_prof_step_num", tr["servprof"]["stopped"])
        self.assertEqual(tr["servprof"]["activities"][0], "CPU")
        self.assertFalse(glob.glob(os.path.join(prof, "**", "*.tmp"), recursive=True))

        # The store: 8 forward spans, 5 torch_profiler spans numbered 0..4.
        rows = T.rows(stores[0])
        steps = [r for r in rows if r["name"] == "torch_profiler"]
        self.assertEqual([r["a"]["step"] for r in steps], [0, 1, 2, 3, 4])
        self.assertEqual(sum(r["name"] == "forward" for r in rows), 8)

        out = self.parse(d, prof)
        ev = T.trace_events(os.path.join(out, "chrome_tracing.json"))
        fwd = [e for e in ev if e.get("name") == "forward" and e.get("ph") == "X"]
        addmm = [e for e in ev if e.get("name") == "aten::addmm"]
        self.assertEqual(len(addmm), 10, "2 Linear layers x 5 profiled steps")
        self.assertEqual(sum(e.get("name") == "torch_profiler" for e in ev), 5)
        # Lanes of the same process, on the same clock: each addmm lies
        # inside one of the first five forward spans.
        self.assertEqual({e["pid"] for e in addmm}, {fwd[0]["pid"]})
        lanes = {e["tid"]: e["args"]["name"] for e in ev
                 if e.get("ph") == "M" and e.get("name") == "thread_name" and e["pid"] == fwd[0]["pid"]}
        self.assertTrue(lanes[addmm[0]["tid"]].startswith("torch cpu_op"), lanes)
        tol = 20.0  # µs: the clock anchor is good to a few µs (a record_function anchor was off by 20-190)
        for e in addmm:
            self.assertTrue(any(f["ts"] - tol <= e["ts"] and e["ts"] + e["dur"] <= f["ts"] + f["dur"] + tol
                                for f in fwd[:5]), (e, fwd[:5]))
        # Stack and modules on: call stacks and module ranges recorded.
        self.assertIn("Call stack", addmm[0]["args"])
        self.assertIn("Input Dims", addmm[0]["args"])
        self.assertEqual(sum(e.get("name") == "nn.Module: Linear" for e in ev), 10)

        stat = {(r["Device_id"], r["Op Name"]): r for r in T.read_csv(os.path.join(out, "op_statistic.csv"))}
        self.assertEqual(int(stat[("-1", "aten::addmm")]["Count"]), 10)
        self.assertEqual(int(stat[("-1", "aten::relu")]["Count"]), 5)
        summ = [r for r in T.read_csv(os.path.join(out, "op_summary.csv")) if r["Op Name"] == "aten::addmm"]
        self.assertEqual(len(summ), 10)
        self.assertEqual({r["OP Type"] for r in summ}, {"cpu_op"})
        db = sqlite3.connect(os.path.join(out, "profiler.db"))
        try:
            n = db.execute("select count(*) from slice where name = 'aten::addmm'").fetchone()[0]
        finally:
            db.close()
        self.assertEqual(n, 10)

    @NEEDS_TORCH
    def test_stack_and_modules_off(self):
        d = T.tmpdir(self)
        prof = os.path.join(d, "prof")
        self.child(d, "api", 3, torch_prof_step_num=2)
        ev = self.load_trace(self.traces(prof)[0])["traceEvents"]
        addmm = [e for e in ev if e["name"] == "aten::addmm"]
        self.assertEqual(len(addmm), 4)
        self.assertIn("Input Dims", addmm[0]["args"], "record_shapes is always on")
        self.assertFalse([e for e in ev if "Call stack" in e.get("args", {})])
        self.assertFalse([e for e in ev if e["name"].startswith("nn.Module:")])

    @NEEDS_TORCH
    def test_step_num_zero_runs_until_collection_stops(self):
        d = T.tmpdir(self)
        prof = os.path.join(d, "prof")
        self.child(d, "api", 7, torch_prof_step_num=0)
        tr = self.load_trace(self.traces(prof)[0])
        # 7 whole steps and the one under way when servprof.stop() came.
        self.assertEqual(tr["servprof"]["steps"], 8)
        self.assertEqual(sum(e["name"] == "aten::addmm" for e in tr["traceEvents"]), 14)
        rows = T.rows(T.stores(prof)[0])
        self.assertEqual(sum(r["name"] == "torch_profiler" for r in rows), 8)

    @NEEDS_TORCH
    def test_live_enable_disable_while_stepping(self):
        d = T.tmpdir(self)
        prof = os.path.join(d, "prof")
        p, res = self.child(d, "toggle", 3, torch_prof_step_num=0)
        self.assertEqual(res["errors"], [], p.stderr)
        self.assertEqual(len(res["sessions"]), 3)
        traces = self.traces(prof)
        self.assertEqual(len(traces), 3, traces)
        for t in traces:  # complete files: they load, and hold the steps they claim
            tr = self.load_trace(t)
            self.assertGreaterEqual(tr["servprof"]["steps"], 3)
            self.assertEqual(tr["servprof"]["stopped"], "collection stopped")
            self.assertGreaterEqual(sum(e["name"] == "aten::addmm" for e in tr["traceEvents"]),
                                    2 * (tr["servprof"]["steps"] - 1))
        self.assertFalse(glob.glob(os.path.join(prof, "**", "*.tmp"), recursive=True))
        out = self.parse(d, prof)
        stat = [r for r in T.read_csv(os.path.join(out, "op_statistic.csv")) if r["Op Name"] == "aten::addmm"]
        self.assertEqual(len(stat), 1)
        self.assertEqual(int(stat[0]["Count"]),
                         sum(sum(e["name"] == "aten::addmm" for e in self.load_trace(t)["traceEvents"])
                             for t in traces))

    @NEEDS_TORCH
    def test_timelimit_stops_it(self):
        d = T.tmpdir(self)
        prof = os.path.join(d, "prof")
        _, res = self.child(d, "until", 60, enable=1, timelimit=1, torch_prof_step_num=0)
        self.assertFalse(res["running"], "the profiler stopped with the session")
        traces = self.traces(prof)
        self.assertEqual(len(traces), 1, traces)
        tr = self.load_trace(traces[0])
        self.assertEqual(tr["servprof"]["stopped"], "collection stopped")
        self.assertGreaterEqual(tr["servprof"]["steps"], 1)

    def test_torch_missing_is_one_warning(self):
        d = T.tmpdir(self)
        prof = os.path.join(d, "prof")
        hide = os.path.join(d, "hide")
        os.mkdir(hide)
        with open(os.path.join(hide, "torch.py"), "w") as f:
            f.write("raise ImportError('torch hidden by the test')\n")
        cfg = T.make_config(d, acl_task_time=3, torch_prof_step_num=2)
        p = T.run([sys.executable, "-B", STEPS, "api", "4"],
                  env={"SERVICE_PROF_CONFIG_PATH": cfg, "PYTHONPATH": hide + os.pathsep + T.TESTS},
                  timeout=60)
        self.assertEqual(p.stderr.count("torch cannot be imported"), 1, p.stderr)
        self.assertIn("torch hidden by the test", p.stderr)
        self.assertFalse(self.traces(prof))
        rows = T.rows(T.stores(prof)[0])
        self.assertEqual(sum(r["name"] == "forward" for r in rows), 4, "service records go on")


if __name__ == "__main__":
    unittest.main()
