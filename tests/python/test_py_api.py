# SPDX-License-Identifier: Apache-2.0
"""test_py_api.py — the Python binding writes what the C API writes.

Real stores, real sessions: every test reads the SQLite raw store that
libservprof (SERVPROF_LIB) wrote.
"""

import asyncio
import enum
import json
import math
import os
import sys
import threading
import time
import unittest

from support import sp_testlib as T

TMP = None


def setUpModule():
    global TMP, servprof, Level, Profiler
    import tempfile
    TMP = tempfile.mkdtemp(prefix="servprof-py-api-")
    os.environ["SERVICE_PROF_CONFIG_PATH"] = T.make_config(TMP, profiler_level="INFO",
                                                          profiler_step_num=2)
    import servprof as sp
    servprof, Level, Profiler = sp, sp.Level, sp.Profiler


def tearDownModule():
    import shutil
    servprof.shutdown()  # the config watcher stops before its file goes
    if TMP and not os.environ.get("KEEP_TMP"):
        shutil.rmtree(TMP, True)


class Session:
    """with Session() as s: ... record ...; then s.rows (slice rows)."""

    def __enter__(self):
        assert servprof.start() is True, "servprof.start() did not start a session"
        self.store = servprof.store_path()
        assert self.store, "no store path while collecting"
        return self

    def __exit__(self, *exc):
        assert servprof.stop() is True
        self.rows = T.rows(self.store)
        return False

    def named(self, name):
        return [r for r in self.rows if r["name"] == name]


class Equivalence(unittest.TestCase):
    """equiv_scenario.py and py_equiv.c write the same rows."""

    def record(self, args, tag):
        d = T.tmpdir(self)
        cfg = T.make_config(d, enable=1, profiler_level="DETAILED")
        T.run(args, env={"SERVICE_PROF_CONFIG_PATH": cfg})
        found = T.stores(d)
        self.assertEqual(len(found), 1, "%s: stores under %s: %s" % (tag, d, found))
        return found[0]

    def test_same_rows_as_c(self):
        exe = os.environ.get("SP_PY_EQUIV")
        if not exe or not os.path.exists(exe):
            self.skipTest("py_equiv not built (SP_PY_EQUIV=%r)" % exe)
        c_store = self.record([exe], "C")
        py_store = self.record([sys.executable, "-B", os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "equiv_scenario.py")], "Python")

        def shape(store):
            return [(r["name"], r["cat"], r["pairs"], r["duration"] == 0, r["depth"])
                    for r in T.rows(store)]
        c_rows, py_rows = shape(c_store), shape(py_store)
        self.assertGreaterEqual(len(c_rows), 12, "the C scenario wrote too few rows: %s" % c_rows)
        for i, (c, p) in enumerate(zip(c_rows, py_rows)):
            self.assertEqual(p, c, "row %d differs (Python vs C)" % i)
        self.assertEqual(len(py_rows), len(c_rows), "row counts differ:\nC %s\nPy %s"
                         % (c_rows, py_rows))
        self.assertNotIn("hidden", [r[0] for r in py_rows])
        self.assertEqual([r["thread_name"] for r in T.rows(py_store, "thread")],
                         [r["thread_name"] for r in T.rows(c_store, "thread")])
        self.assertIn("equiv-main", [r["thread_name"] for r in T.rows(py_store, "thread")])
        self.assertEqual(T.meta(py_store).get("model"), "toy-7b")
        self.assertEqual(T.meta(c_store).get("model"), "toy-7b")
        # the batch's rid list is structured JSON, not a string
        fwd = [r for r in T.rows(py_store) if r["name"] == "forward"][0]
        self.assertEqual(fwd["a"]["rid"][1]["iter"], 3)
        for r in T.rows(py_store):
            self.assertEqual(r["end_time"], r["timestamp"] + r["duration"])
            self.assertEqual(r["pid"], T.store_pid(py_store))


class InProcess(unittest.TestCase):

    def test_disabled_records_nothing(self):
        self.assertFalse(servprof.is_enabled(Level.ERROR))
        before = servprof.stats()["records"]
        with servprof.span("forward", domain="Execute", rid=[{"rid": 1}]) as s:
            s.attr("k", 1)
        Profiler(Level.INFO).domain("Request").res("r").attr("k", 1).event("httpReq")
        p = Profiler(Level.INFO).span_start("x")
        p.span_end()
        servprof.event("httpReq", rid="r")
        servprof.link("a", "b")

        @servprof.traced
        def f(x):
            return x * 2
        self.assertEqual(f(21), 42)
        self.assertIsNone(servprof.store_path())
        self.assertIsNone(servprof.session_dir())
        self.assertEqual(servprof.stats()["records"], before)

    def test_start_stop_answers(self):
        self.assertTrue(servprof.start())
        try:
            self.assertFalse(servprof.start(), "a second start() must say 'already running'")
            self.assertTrue(servprof.is_enabled(Level.INFO))
            self.assertFalse(servprof.is_enabled(Level.DETAILED))
            self.assertTrue(os.path.isdir(servprof.session_dir()))
            self.assertTrue(servprof.store_path().startswith(servprof.session_dir()))
        finally:
            self.assertTrue(servprof.stop())
        self.assertFalse(servprof.stop())
        self.assertFalse(servprof.is_enabled(Level.ERROR))

    def test_span_times_and_nesting(self):
        t0 = time.time_ns()
        with Session() as s:
            with servprof.span("outer", domain="Execute"):
                with servprof.span("inner", domain="Execute", rid="r1") as sp:
                    time.sleep(0.02)
                    sp.attr("late", "yes")
        t1 = time.time_ns()
        outer, inner = s.named("outer")[0], s.named("inner")[0]
        self.assertGreaterEqual(inner["duration"], 20_000_000)
        self.assertGreaterEqual(outer["duration"], inner["duration"])
        self.assertLessEqual(outer["timestamp"], inner["timestamp"])
        self.assertGreaterEqual(inner["end_time"], inner["timestamp"])
        self.assertTrue(t0 <= outer["timestamp"] and outer["end_time"] <= t1)
        self.assertEqual(inner["a"]["rid"], "r1")
        self.assertEqual(inner["a"]["late"], "yes")
        self.assertEqual(inner["a"]["type"], 2)
        self.assertEqual(inner["cat"], "Execute")

    def test_exception_inside_span(self):
        with Session() as s:
            with self.assertRaises(KeyError):
                with servprof.span("forward", domain="Execute", rid="r9"):
                    time.sleep(0.01)
                    raise KeyError("missing")
            with self.assertRaises(ZeroDivisionError):
                with Profiler(Level.INFO).domain("Execute").span_start("postprocess"):
                    1 / 0
        fwd = s.named("forward")
        self.assertEqual(len(fwd), 1, "the span must end even though its body raised")
        self.assertIs(fwd[0]["a"]["error"], True)
        self.assertEqual(fwd[0]["a"]["exception"], "KeyError")
        self.assertGreaterEqual(fwd[0]["duration"], 10_000_000)
        post = s.named("postprocess")
        self.assertTrue(post, "Profiler span ended by __exit__")
        self.assertTrue(any(r["a"].get("exception") == "ZeroDivisionError" for r in post), post)

    def test_traced_sync(self):
        @servprof.traced(domain="Execute", kind="sync")
        def step(x):
            """doc"""
            time.sleep(0.005)
            return x + 1

        @servprof.traced(name="failing")
        def bad():
            raise RuntimeError("x")
        self.assertEqual(step.__name__, "step")
        self.assertEqual(step.__doc__, "doc")
        with Session() as s:
            self.assertEqual(step(1), 2)
            with self.assertRaises(RuntimeError):
                bad()
        rows = [r for r in s.rows if r["name"].endswith("step")]
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["cat"], "Execute")
        self.assertEqual(rows[0]["a"]["kind"], "sync")
        self.assertGreaterEqual(rows[0]["duration"], 5_000_000)
        self.assertEqual(s.named("failing")[0]["a"]["exception"], "RuntimeError")

    def test_traced_rejects_generators(self):
        def gen():
            yield 1
        with self.assertRaises(TypeError):
            servprof.traced(gen)

    def test_async_spans(self):
        @servprof.traced(domain="Execute")
        async def model(ms):
            await asyncio.sleep(ms / 1000)
            return ms

        async def request(i):
            async with servprof.span("request", domain="Request", rid="r%d" % i):
                await asyncio.sleep(0.01 * (i + 1))
                return await model(5)

        async def cancelled(inside):
            with servprof.span("cancelled", domain="Request"):
                inside.set()
                await asyncio.sleep(10)  # never ends by itself: it is cancelled

        async def main():
            out = await asyncio.gather(*(request(i) for i in range(3)))
            inside = asyncio.Event()
            t = asyncio.ensure_future(cancelled(inside))
            await asyncio.wait_for(inside.wait(), 10 * T.SLACK)  # cancelled inside its span
            t.cancel()
            try:
                await t
            except asyncio.CancelledError:
                pass
            return out

        with Session() as s:
            self.assertEqual(asyncio.run(main()), [5, 5, 5])
        reqs = {r["a"]["rid"]: r for r in s.named("request")}
        self.assertEqual(sorted(reqs), ["r0", "r1", "r2"])
        for i in range(3):
            self.assertGreaterEqual(reqs["r%d" % i]["duration"], (10 * (i + 1) + 5) * 1_000_000)
        # the three ran concurrently on one thread: their intervals overlap
        self.assertLess(max(r["timestamp"] for r in reqs.values()),
                        min(r["end_time"] for r in reqs.values()))
        models = [r for r in s.rows if r["name"].endswith("model")]
        self.assertEqual(len(models), 3)
        c = s.named("cancelled")
        self.assertEqual(len(c), 1)
        self.assertEqual(c[0]["a"]["exception"], "CancelledError")

    def test_value_types(self):
        class Color(enum.IntEnum):
            RED = 3

        class Thing:
            def __str__(self):
                return "<thing>"

        with Session() as s:
            (Profiler(Level.INFO).domain("Misc").attr("enum", Color.RED).attr("nan", math.nan)
             .attr("nested_nan", [1.0, math.inf]).attr("set", {7}).attr("bytes", b"ab\xff")
             .attr("obj", Thing()).attr("tuple", (1, "a")).attr("empty", "")
             .attr("nul", "a\x00b").attr("surrogate", "x\udcffy").attr("neg_big", -(2**64))
             .metric("QueueSize", 3).metric("Bad", "not-a-number").metric_inc("WAITING", True)
             .metric_scope("QueueName", 2).res(["r1", "r2"]).event("values"))
        a = s.named("values")[0]["a"]
        self.assertEqual(a["enum"], 3)
        self.assertEqual(a["nested_nan"][0], 1.0)
        self.assertEqual(a["set"], [7])
        self.assertEqual(a["bytes"], "ab\ufffd")
        self.assertEqual(a["obj"], "<thing>")
        self.assertEqual(a["tuple"], [1, "a"])
        self.assertEqual(a["empty"], "")
        self.assertEqual(a["nul"], "a\x00b")
        self.assertEqual(a["neg_big"], str(-(2**64)), "beyond int64: every digit, as text")
        self.assertEqual(a["QueueSize="], 3)
        self.assertEqual(a["Bad="], "not-a-number")
        self.assertEqual(a["scope#QueueName"], 2)
        self.assertEqual(a["rid"], ["r1", "r2"])
        self.assertIn("nan", a)  # recorded, whatever JSON the library chose for NaN

    def test_levels_and_domains(self):
        with Session() as s:
            Profiler(Level.DETAILED).domain("Execute").event("too_detailed")
            with servprof.span("too_verbose", level=Level.VERBOSE):
                pass
            Profiler(Level.ERROR).domain("Execute").event("error_level")
            Profiler(Level.INFO).event("no_domain")
        names = [r["name"] for r in s.rows]
        self.assertNotIn("too_detailed", names)
        self.assertNotIn("too_verbose", names)
        self.assertIn("error_level", names)
        nd = s.named("no_domain")[0]
        self.assertIn(nd["cat"], (None, ""))

    def test_span_end_on_other_thread_and_threads(self):
        p = None

        def worker(k):
            for i in range(50):
                with servprof.span("work", domain="Thread", rid="t%d-%d" % (k, i)):
                    pass

        with Session() as s:
            p = Profiler(Level.INFO).domain("Request").res("x1").span_start("handoff")
            t = threading.Thread(target=lambda: p.attr("ended_by", "other").span_end())
            t.start()
            t.join()
            ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        work = s.named("work")
        self.assertEqual(len(work), 200)
        self.assertEqual(len({r["a"]["rid"] for r in work}), 200)
        self.assertGreaterEqual(len({r["tid"] for r in work}), 2)
        handoff = s.named("handoff")
        self.assertTrue(handoff)
        self.assertTrue(any(r["a"].get("ended_by") == "other" for r in handoff), handoff)

    def test_step_limit(self):
        # profiler_step_num=2 is in the module's config from the start.
        self.assertTrue(servprof.start())
        try:
            servprof.step()
            self.assertTrue(servprof.is_enabled(Level.INFO))
            servprof.step()
            deadline = time.time() + 5 * T.SLACK
            while servprof.is_enabled(Level.INFO) and time.time() < deadline:
                time.sleep(0.01)
            self.assertFalse(servprof.is_enabled(Level.INFO),
                             "profiler_step_num=2 should stop collection after 2 steps")
        finally:
            servprof.stop()

    def test_clock_is_the_librarys(self):
        lib = servprof.load_library()
        self.assertTrue(os.path.exists(lib) or lib.startswith("lib"))
        import servprof._core as core
        c = core.state.lib.fast.servprof_now_ns()
        py = servprof.now_ns()
        self.assertLess(abs(py - c), 50_000_000 * T.SLACK)

    def test_meta_and_names(self):
        with Session() as s:
            servprof.meta("dpRankId", 3)
            servprof.set_process_name("engine")
            servprof.set_thread_name("scheduler")
            servprof.event("named", domain="Misc")
        m = T.meta(s.store)
        self.assertEqual(m.get("dpRankId"), "3")
        self.assertIn("hostname", m)


if __name__ == "__main__":
    unittest.main()
