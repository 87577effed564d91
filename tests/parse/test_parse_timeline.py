# SPDX-License-Identifier: Apache-2.0
"""chrome_tracing.json validated structurally, as Perfetto / chrome://tracing
need it: the file parses, every event has the fields its phase needs, flows
pair up (one 's', one 'f', 'bp': 'e') and bind to a slice on their thread,
counters exist per device, device activity gets lanes of its own."""
import json
import os
import sqlite3
import tempfile
import unittest

from support import scenario  # noqa: E402
from support.fixtures import T0, ns, run_parse  # noqa: E402


def activity_store(path):
    db = sqlite3.connect(path)
    db.executescript("""
    CREATE TABLE Api(name TEXT, start INTEGER, end INTEGER, processId INTEGER, threadId INTEGER, correlationId INTEGER);
    CREATE TABLE Kernel(type TEXT, name TEXT, start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER);
    CREATE TABLE Communication(name TEXT, start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, dataCount INTEGER, dataType TEXT, commGroupName TEXT, correlationId INTEGER);
    """)
    db.execute("INSERT INTO Api VALUES ('cudaLaunchKernel', ?, ?, 200, 7, 1)", (ns(6.6), ns(6.7)))
    db.execute("INSERT INTO Api VALUES ('cudaMemcpyAsync', ?, ?, 200, 7, 2)", (ns(6.8), ns(6.9)))
    db.execute("INSERT INTO Kernel VALUES ('KERNEL', 'gemm', ?, ?, 0, 3, 1)", (ns(6.7), ns(8.0)))
    db.execute("INSERT INTO Kernel VALUES ('MEMCPY_HtoD', 'copy', ?, ?, 1, 5, 2)", (ns(7.0), ns(7.5)))
    db.commit()
    db.close()


REQUIRED = {
    "X": ("name", "ts", "dur", "pid", "tid"),
    "i": ("name", "ts", "pid", "tid", "s"),
    "C": ("name", "ts", "pid", "args"),
    "M": ("name", "pid", "args"),
    "s": ("id", "ts", "pid", "tid", "bp", "name", "cat"),
    "t": ("id", "ts", "pid", "tid", "bp", "name", "cat"),
    "f": ("id", "ts", "pid", "tid", "bp", "name", "cat"),
}


class Timeline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        inp = os.path.join(cls.tmp.name, "in")
        cls.out = os.path.join(cls.tmp.name, "out")
        scenario.build(inp)
        activity_store(os.path.join(inp, "hostA", "Trace_Service", "ascend_service_profiler_hostA-200.db"))
        run_parse(inp, cls.out)
        with open(os.path.join(cls.out, "chrome_tracing.json")) as f:
            cls.doc = json.load(f)
        cls.ev = cls.doc  # the default form: a top-level array of events

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_event_has_its_fields(self):
        self.assertGreater(len(self.ev), 50)
        for e in self.ev:
            self.assertIn(e.get("ph"), REQUIRED, e)
            for k in REQUIRED[e["ph"]]:
                self.assertIn(k, e, e)
            if "ts" in e:
                self.assertIsInstance(e["ts"], (int, float))
                self.assertGreaterEqual(e["ts"], 0, e)
            if e["ph"] == "X":
                self.assertGreaterEqual(e["dur"], 0)
            if e["ph"] == "C":
                for v in e["args"].values():
                    self.assertIsInstance(v, (int, float), e)
            if e["ph"] in ("X", "i"):
                self.assertIsInstance(e.get("args", {}), dict)

    def test_ts_rebased_and_origin_in_metadata(self):
        self.assertIsInstance(self.doc, list)  # `for e in json.load(f)` works, as on the reference's file
        meta = self.ev[0]
        self.assertEqual((meta["name"], meta["ph"]), ("servprof_trace", "M"))
        self.assertEqual(int(meta["args"]["epoch_origin_ns"]), T0)
        req = [e for e in self.ev if e.get("name") == "httpReq"]
        self.assertEqual(min(e["ts"] for e in req), 0)
        fwd = sorted(e["ts"] for e in self.ev if e.get("name") == "forward" and e["ph"] == "X")
        self.assertEqual(fwd[1], 6500.0)  # 6.5 ms after the origin, microseconds, exact

    def test_flows_pair_and_bind(self):
        slices = {}
        for e in self.ev:
            if e["ph"] in ("X", "i"):
                slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e.get("dur", 0)))
        flows = {}
        for e in self.ev:
            if e["ph"] in ("s", "t", "f"):
                self.assertEqual(e["bp"], "e")
                flows.setdefault((e["cat"], e["id"]), []).append(e)
                bound = any(a <= e["ts"] <= b for a, b in slices.get((e["pid"], e["tid"]), []))
                self.assertTrue(bound, "flow step not on a slice: %r" % e)
        self.assertGreater(len(flows), 0)
        for key, steps in flows.items():
            phs = [s["ph"] for s in steps]
            self.assertEqual(phs.count("s"), 1, key)
            self.assertEqual(phs.count("f"), 1, key)
            s = [x for x in steps if x["ph"] == "s"][0]
            f = [x for x in steps if x["ph"] == "f"][0]
            self.assertLessEqual(s["ts"], f["ts"])
            for t in steps:
                self.assertTrue(s["ts"] <= t["ts"] <= f["ts"], key)
        # the flow of http-2 crosses processes: front end (pid 1) and engine B (pid 2)
        req_pids = [{s["pid"] for s in steps} for (cat, _), steps in flows.items() if cat == "request"]
        self.assertTrue(any({1, 2} <= p for p in req_pids))
        self.assertTrue(any({1, 3} <= p for p in req_pids))  # across hosts too

    def test_processes_named_by_role_with_host_labels(self):
        names = {e["pid"]: e["args"]["name"] for e in self.ev if e["ph"] == "M" and e["name"] == "process_name"}
        labels = {e["pid"]: e["args"]["labels"] for e in self.ev if e["ph"] == "M" and e["name"] == "process_labels"}
        self.assertEqual(names[2], "forward")
        self.assertIn("hostA", labels[2])
        self.assertIn("hostB", labels[3])
        self.assertIn("dp1", labels[3])
        threads = [e for e in self.ev if e["ph"] == "M" and e["name"] == "thread_name"]
        self.assertIn("Request (http-worker 100)", [e["args"]["name"] for e in threads if e["pid"] == 1])
        lanes2 = {e["args"]["name"].split(" ")[0] for e in threads if e["pid"] == 2}
        self.assertTrue({"Schedule", "BatchSchedule", "Execute", "ModelExecute", "KVCache"} <= lanes2)

    def test_counters(self):
        cn = {e["name"] for e in self.ev if e["ph"] == "C"}
        self.assertIn("GPU 0 memory", cn)       # one counter per device
        self.assertIn("GPU 1 memory", cn)
        self.assertIn("KV cache blocks", cn)
        self.assertIn("queue size", cn)
        self.assertIn("host CPU", cn)
        self.assertIn("host memory", cn)
        g1 = [e for e in self.ev if e["ph"] == "C" and e["name"] == "GPU 1 memory"][0]
        self.assertEqual(g1["args"]["used MiB"], 2048)

    def test_device_activity_lanes(self):
        names = {e["pid"]: e["args"]["name"] for e in self.ev if e["ph"] == "M" and e["name"] == "process_name"}
        self.assertIn("device 0", names.values())
        self.assertIn("device 1", names.values())
        gemm = [e for e in self.ev if e.get("name") == "gemm"][0]
        self.assertEqual(names[gemm["pid"]], "device 0")
        self.assertEqual(gemm["tid"], 3)  # its stream
        corr = [e for e in self.ev if e.get("cat") == "correlation"]
        self.assertEqual(len(corr), 4)    # two launches, each s + f
        # the activity stores were also handed to the operator reports
        self.assertTrue(os.path.exists(os.path.join(self.out, "op_summary.csv")))

    def assert_nesting(self, ev):
        by_lane = {}
        for e in ev:
            if e["ph"] == "X":
                by_lane.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
        for lane, spans in by_lane.items():
            spans.sort(key=lambda x: (x[0], -x[1]))
            stack = []
            for a, b, name in spans:
                while stack and stack[-1] <= a:
                    stack.pop()
                self.assertTrue(not stack or b <= stack[-1], "%s overlaps without nesting on %r" % (name, lane))
                stack.append(b)

    def test_spans_nest_on_every_lane(self):
        self.assert_nesting(self.ev)

    def test_overlapping_spans_of_one_thread_get_sub_lanes(self):
        # an asyncio loop: two requests' spans interleave on one thread
        tmp = tempfile.TemporaryDirectory()
        from support.fixtures import Store
        s = Store(os.path.join(tmp.name, "in", "ms_service_x-1.db"), "x", 1)
        s.span("tokenize", 0, 10, "Request", rid="a")
        s.span("tokenize", 5, 15, "Request", rid="b")   # overlaps the first without nesting
        s.span("inner", 6, 8, "Request")                # nests (in the first)
        s.span("tokenize", 20, 30, "Request", rid="c")  # after both: back on the first lane
        s.close()
        out = os.path.join(tmp.name, "out")
        run_parse(os.path.join(tmp.name, "in"), out)
        with open(os.path.join(out, "chrome_tracing.json")) as f:
            ev = json.load(f)
        self.assert_nesting(ev)
        x = {(e["name"], e["ts"]): e["tid"] for e in ev if e["ph"] == "X"}
        self.assertNotEqual(x[("tokenize", 0)], x[("tokenize", 5000)])
        self.assertEqual(x[("tokenize", 0)], x[("tokenize", 20000)])
        names = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
        self.assertIn("Request (thread 1) #2", names)
        tmp.cleanup()

    def test_object_form_behind_an_option_and_a_chosen_name_wins(self):
        # --trace-form object: the earlier shape, origin in otherData. And a store whose
        # program named itself (servprof_set_process_name: Meta process_name) keeps that
        # name in the timeline over its role (`forward`).
        tmp = tempfile.TemporaryDirectory()
        from support.fixtures import Store
        s = Store(os.path.join(tmp.name, "in", "ms_service_x-1.db"), "x", 1, meta={"process_name": "fakellm"})
        s.span("forward", 0, 1, "ModelExecute")
        s.close()
        s = Store(os.path.join(tmp.name, "in", "ms_service_y-2.db"), "y", 2)
        s.span("forward", 0, 1, "ModelExecute")
        s.close()
        out = os.path.join(tmp.name, "out")
        run_parse(os.path.join(tmp.name, "in"), out, "--trace-form", "object")
        with open(os.path.join(out, "chrome_tracing.json")) as f:
            doc = json.load(f)
        self.assertEqual(int(doc["otherData"]["epoch_origin_ns"]), T0)
        ev = doc["traceEvents"]
        self.assertNotIn("servprof_trace", [e["name"] for e in ev])
        names = sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name")
        self.assertEqual(names, ["fakellm", "forward"])
        tmp.cleanup()

    def test_invalid_args_are_kept_as_text(self):
        # a writer that did not escape a quote: the timeline must stay JSON
        tmp = tempfile.TemporaryDirectory()
        from support.fixtures import Store
        s = Store(os.path.join(tmp.name, "in", "ms_service_x-1.db"), "x", 1)
        s.raw("httpReq", ns(0), 0, "Request", '{"type": 0, "rid": "a"b"}')
        # invalid UTF-8 in a name and in args (bytes, as a C writer could leave them)
        s.db.execute("INSERT INTO slice(timestamp, duration, name, cat, args, pid, tid) VALUES (?, 0, ?, 'x', ?, 1, 1)",
                     (ns(0.5), b"bad\xffname", b'{"v":"\xc3"}'))
        s.event("httpRes", 1, "Request", rid="a")
        s.close()
        out = os.path.join(tmp.name, "out")
        run_parse(os.path.join(tmp.name, "in"), out)
        with open(os.path.join(out, "chrome_tracing.json")) as f:
            ev = json.load(f)
        bad = [e for e in ev if e.get("name") == "httpReq"][0]
        self.assertEqual(bad["args"]["raw"], '{"type": 0, "rid": "a"b"}')
        self.assertIn("bad\ufffdname", [e.get("name") for e in ev])
        self.assertEqual([e for e in ev if e.get("name") == "bad\ufffdname"][0]["args"]["raw"], '{"v":"\ufffd"}')
        tmp.cleanup()


if __name__ == "__main__":
    unittest.main()
