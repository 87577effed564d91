# SPDX-License-Identifier: Apache-2.0
"""trace.pftrace (`servprof parse --format perfetto`) decoded with Perfetto's
official perfetto_trace.proto (pinned in perfetto/, compiled by protoc here)
and checked against profiler.db of the same parse: every interned id is
defined in its sequence, the incremental-state flags and sequence ids are
right, begins and ends balance per track, and the slices (count, each one's
lane, name, category, start and duration, so the sum of durations too), the
instants, the counter samples and the request flows equal profiler.db's.

Inputs: the timeline scenario with a device activity store (kernels, API
calls, correlation flows), a serving run shaped like the demo server's
stores (servelike.py, front end + engine), and a multi-process PD run
(test_parse_pdsplit's front end, decode node and coordinator). A truncated
file is rejected, so these checks can fail."""
import collections
import json
import os
import sqlite3
import tempfile
import unittest

import pftrace_check as C  # noqa: E402
from support import scenario  # noqa: E402
from support import servelike  # noqa: E402
from support.fixtures import run_parse  # noqa: E402
from test_parse_pdsplit import build as build_pd  # noqa: E402
from test_parse_timeline import activity_store  # noqa: E402

P, WHY = C.load_proto()


def parse_both(inp, out):
    run_parse(inp, out, "--format", "perfetto", "--format", "db", "--format", "json")
    return os.path.join(out, "trace.pftrace"), sqlite3.connect(os.path.join(out, "profiler.db"))


class Base:
    """Checks shared by every input; subclasses build self.inp."""

    @classmethod
    def setUpClass(cls):
        if P is None:
            raise unittest.SkipTest(WHY)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.inp = os.path.join(cls.tmp.name, "in")
        cls.out = os.path.join(cls.tmp.name, "out")
        cls.build(cls.inp)
        cls.path, cls.db = parse_both(cls.inp, cls.out)
        cls.d = C.decode(cls.path, P)

    @classmethod
    def tearDownClass(cls):
        cls.db.close()
        cls.tmp.cleanup()

    def lane(self, uuid):
        td = self.d.tracks[uuid]
        return td.thread.pid, td.thread.tid

    def record_lanes(self):
        """The thread tracks of the records' processes (not devices / API)."""
        return {u for u, td in self.d.tracks.items() if td.HasField("thread") and td.thread.pid < 100000}

    def test_slices_equal_profiler_db(self):
        lanes = self.record_lanes()
        got = sorted((*self.lane(u), n, c, ts, dur) for u, n, c, ts, dur, _ in self.d.slices if u in lanes)
        want = sorted(tuple(r) for r in self.db.execute(
            "SELECT pid, tid, name, cat, timestamp, duration FROM slice WHERE duration > 0"))
        self.assertGreater(len(want), 0)
        self.assertEqual(len(got), len(want))
        self.assertEqual(sum(r[5] for r in got), sum(r[5] for r in want))
        self.assertEqual(got, want)

    def test_instants_equal_profiler_db(self):
        lanes = self.record_lanes()
        got = sorted((*self.lane(u), n, c, ts) for u, n, c, ts, _ in self.d.instants if u in lanes)
        want = sorted(tuple(r) for r in self.db.execute(
            "SELECT pid, tid, name, cat, timestamp FROM slice WHERE duration <= 0"))
        self.assertEqual(got, want)

    def test_counters_equal_profiler_db(self):
        got = sorted(self.d.counters)
        want = sorted((n + " " + s, pid, ts, float(v)) for n, pid, ts, s, v in self.db.execute(
            "SELECT name, pid, timestamp, series, value FROM counter"))
        self.assertEqual(got, want)

    def test_request_flows_equal_profiler_db(self):
        """Each request flow of the JSON (s, t..., f rows in profiler.db's flow
        table) is the same number of slices carrying flow id root + 1."""
        want = dict(self.db.execute("SELECT flow_id + 1, count(*) FROM flow WHERE name = 'request' "
                                    "GROUP BY flow_id"))
        got = {f: n for f, n in self.d.flows.items() if n >= 2 and f < (1 << 41)}
        self.assertEqual(got, want)

    def test_lanes_named_as_in_json(self):
        want = dict(((pid, tid), name) for pid, tid, name in self.db.execute(
            "SELECT pid, tid, thread_name FROM thread"))
        got = {(td.thread.pid, td.thread.tid): td.thread.thread_name for td in self.d.tracks.values()
               if td.HasField("thread") and td.thread.thread_name}
        self.assertEqual(got, want)
        procs = dict(self.db.execute("SELECT pid, process_name FROM process"))
        named = {td.process.pid: td.process.process_name for td in self.d.tracks.values()
                 if td.HasField("process") and td.process.process_name}
        self.assertEqual(named, procs)

    def test_args_as_annotations(self):
        """A record's args become debug annotations, one per key, with the
        same values (objects and arrays nested), as the JSON has them."""
        import json
        lanes = self.record_lanes()
        want = collections.Counter()
        for pid, tid, ts, args in self.db.execute("SELECT pid, tid, timestamp, args FROM slice"):
            want[pid, tid, ts, json.dumps(json.loads(args), sort_keys=True)] += 1
        got = collections.Counter()
        for u, _, _, ts, *rest in self.d.slices + self.d.instants:
            if u in lanes:
                got[(*self.lane(u), ts, json.dumps(rest[-1], sort_keys=True))] += 1
        self.assertEqual(got, want)


TORCH = ('{"schemaVersion":1,"baseTimeNanoseconds":%d,"traceEvents":['
         '{"ph":"X","name":"aten::linear","ts":1000,"dur":300,"cat":"cpu_op","tid":1},'
         '{"ph":"X","name":"aten::addmm","ts":1100,"dur":100,"cat":"cpu_op","tid":1,'
         '"args":{"Input Dims":[[16],[2,16],[16,16]]}},'
         '{"ph":"X","name":"torch_gemm","ts":1150,"dur":40,"cat":"kernel","tid":0}]}')


class Timeline(Base, unittest.TestCase):
    @staticmethod
    def build(inp):
        from support.fixtures import T0
        scenario.build(inp)
        activity_store(os.path.join(inp, "hostA", "Trace_Service", "ascend_service_profiler_hostA-200.db"))
        with open(os.path.join(inp, "hostA", "Trace_Service", "torch_prof_hostA-200.json"), "w") as f:
            f.write(TORCH % T0)

    def test_torch_ops_on_their_lanes(self):
        """Torch profiler ops come after the records, earlier in time: they are
        slices of profiler.db too (so the equality above covers them) and sit
        on lanes of their store's process."""
        ops = [(self.lane(u)[0], n) for u, n, *_ in self.d.slices if n in ("aten::linear", "aten::addmm", "torch_gemm")]
        self.assertEqual(len(ops), 3, ops)
        self.assertEqual(len({pid for pid, _ in ops}), 1)
        self.assertLess(ops[0][0], 100000)

    def test_kernels_and_api_on_their_lanes(self):
        dev = collections.Counter((self.lane(u)[0], n) for u, n, *_ in self.d.slices if self.lane(u)[0] >= 100000)
        self.assertEqual(dev[(100000, "gemm")], 1)
        self.assertEqual(dev[(100001, "copy")], 1)
        api = [n for u, n, *_ in self.d.slices if self.lane(u)[0] >= 200000]
        self.assertEqual(sorted(api), ["cudaLaunchKernel", "cudaMemcpyAsync"])
        # each API call and its kernel share a correlation flow id
        corr = [f for f, n in self.d.flows.items() if f >= (1 << 41)]
        self.assertEqual(len(corr), 2)
        self.assertTrue(all(self.d.flows[f] == 2 for f in corr))
        # the activity came after the records, earlier in time: its own sequence
        self.assertGreaterEqual(len(self.d.sequences), 2)

    def test_interning_used(self):
        self.assertGreater(self.d.interned, 10)

    def test_truncated_file_is_rejected(self):
        with open(self.path, "rb") as f:
            data = f.read()
        cut = os.path.join(self.tmp.name, "cut.pftrace")
        for at in (len(data) - 3, len(data) // 2 + 1, 7):
            with open(cut, "wb") as f:
                f.write(data[:at])
            with self.assertRaises(C.Invalid):
                C.decode(cut, P)

    def test_undefined_iid_is_rejected(self):
        """The check catches an id used before its definition: here, the first
        sequence's interned data taken out of the file."""
        with open(self.path, "rb") as f:
            data = f.read()
        out = bytearray()
        stripped = False
        for p in C.packets(data, P):
            if p.HasField("interned_data") and not stripped:
                p.ClearField("interned_data")
                stripped = True
            b = p.SerializeToString()
            out += bytes([0x0A]) + _varint(len(b)) + b
        bad = os.path.join(self.tmp.name, "bad.pftrace")
        with open(bad, "wb") as f:
            f.write(out)
        with self.assertRaisesRegex(C.Invalid, "not defined"):
            C.decode(bad, P)


def _varint(n):
    b = bytearray()
    while n >= 0x80:
        b.append(n & 0x7F | 0x80)
        n >>= 7
    b.append(n)
    return bytes(b)


class DemoLike(Base, unittest.TestCase):
    build = staticmethod(servelike.build)

    def test_sizes(self):
        """The protobuf trace is far smaller than the JSON of the same run."""
        js = os.path.getsize(os.path.join(self.out, "chrome_tracing.json"))
        self.assertLess(os.path.getsize(self.path) * 3, js)


class OddArgs(unittest.TestCase):
    """Args of every shape arrive as the JSON timeline has them: escapes,
    non-ASCII, deep nesting (past 8 levels as JSON text), empty objects and
    arrays, null, booleans, big and negative integers, doubles; args that
    are not JSON (or not UTF-8) as {"raw": text}, cleaned to UTF-8."""

    def test_odd_args(self):
        if P is None:
            self.skipTest(WHY)
        from support.fixtures import Store
        deep = {"a": 1}
        for _ in range(11):
            deep = {"d": deep}
        cases = {
            "esc": {"s": "caf\u00e9 \"q\" \\ \n\t", "k\u00e9y": 1},
            "deep": {"deep": deep},
            "empty": {"o": {}, "a": [], "n": None, "t": True, "f": False},
            "nums": {"big": 2 ** 62, "max": 2 ** 63 - 1, "min": -2 ** 63, "neg": -12345, "zero": 0,
                     "d": 1.5e300, "e": 1e-7, "m": -0.25},
            "mixed": {"l": [1, "two", [3, {"four": 4}], None, 2.5]},
        }
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            s = Store(os.path.join(inp, "ms_service_odd.db"), "hostO", 900)
            at = 0
            for name, a in cases.items():
                s.event(name, at, cat="Odd", **a)
                at += 1
            s.raw("notjson", ns_at(at), 0, "Odd", "{'single': quotes}")
            s.raw("over", ns_at(at + 2), 0, "Odd", '{"v": 18446744073709551616}')
            s.db.execute("INSERT INTO slice(timestamp, duration, name, depth, track_id, cat, args, end_time, pid, tid)"
                         " VALUES (?, 0, 'badutf8', 0, 900, 'Odd', CAST(? AS TEXT), ?, 900, 900)",
                         (ns_at(at + 1), b'{"x": "\xff\xfe"}', ns_at(at + 1)))
            s.close()
            path, db = parse_both(inp, out)
            d = C.decode(path, P)
            got = {n: a for _, n, _, _, a in d.instants}
            for name, a in cases.items():
                want = dict(a, type=0)
                self.assertEqual(json.dumps(got[name], sort_keys=True), json.dumps(want, sort_keys=True), name)
            self.assertEqual(got["notjson"], {"raw": "{'single': quotes}"})
            self.assertEqual(got["badutf8"], {"raw": '{"x": "\ufffd\ufffd"}'})  # not UTF-8: cleaned
            # past int64: a double, as a JSON reader makes of it
            self.assertEqual(got["over"]["v"], float(2 ** 64))
            db.close()


class KeyCache(unittest.TestCase):
    """The key cache by position (a key compared with the one met last at the
    same place of the same event name's args) never gives a key the wrong
    name: keys that change order, that are prefixes of each other, escaped
    spellings of a cached key, lists whose dicts differ, string values at
    one list place that change (the string cache by position), and, on a new
    sequence (the torch trace comes after the records, earlier in time),
    a key at a cached position whose id belongs to the old sequence."""

    def test_key_positions(self):
        if P is None:
            self.skipTest(WHY)
        from support.fixtures import Store, T0
        cases = [
            {"a": 0, "b": 0, "k": 1},
            {"b": 1, "a": 2},
            {"ab": 1, "a": 2},
            {"a": 1, "ab": 2},
            {"a": 3, "abc": 4, "": 5},
            {"l": [{"x": 1, "y": 2}, {"y": 3, "x": 4}, {"x": 5}, {"xy": 6, "y": {"x": 7}}]},
            {"l": [{"x": 8}, 9, [{"x": 10}]]},
            # long keys differing in their last byte only, at the same positions
            {"abcdefgh": 1, "abcdefghijkl": 2, "num_scheduled_tokens": 3},
            {"abcdefgX": 1, "abcdefghijkX": 2, "num_scheduled_tokenX": 3},
            {"abcdefgh": 1, "abcdefghijkl": 2, "num_scheduled_tokens": 3},
            # string values at the same list places changing, swapping, growing
            # (the string cache by position: each is interned on its second sight)
            {"l": [{"r": "s1"}, {"r": "s2"}]},
            {"l": [{"r": "s1"}, {"r": "s2"}]},
            {"l": [{"r": "s2"}, {"r": "s1"}]},
            {"l": [{"r": "s1"}, {"r": "s22"}]},
            {"l": [{"r": "s"}, {"r": "s2"}, {"r": "s1"}]},
            {"l": [{"r": "s1"}, {"r": "s2"}]},
            # numbers inside a dict (a fast path there for small integers)
            {"n": {"z": 0, "x18": 123456789012345678, "x19": 1234567890123456789, "max": 2 ** 63 - 1,
                   "min": -2 ** 63, "d": 1.5, "e": 1e-7, "neg": -3, "last": 7}},
        ]
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            s = Store(os.path.join(inp, "ms_service_hostK-700.db"), "hostK", 700)
            for i, a in enumerate(cases):
                s.event("same", i, cat="Keys", **a)
            # escaped spellings of cached keys, at their positions
            s.raw("same", ns_at(len(cases)), 0, "Keys", '{"type": 0, "\\u0062": 1, "a\\"": 2}')
            s.raw("same", ns_at(len(cases) + 1), 0, "Keys", '{"type": 0, "b": 1, "a": 2}')
            s.event("other", len(cases) + 2, cat="Keys", b=1, a=2)
            # the torch op's args text exactly: its encoding is reused on
            # sequence 1 only (ids are per sequence)
            s.raw("same", ns_at(len(cases) + 3), 0, "Keys", '{"x":0,"y":0,"z":0,"k":2}')
            s.event("same", 20, cat="Keys", a=0, b=0, k=1)  # cached at position 3: "k"
            s.close()
            # torch ops come after the records but earlier: a new sequence,
            # whose first event name gets the first event name id again and
            # whose key at position 3 is the cached one of sequence 1
            with open(os.path.join(inp, "torch_prof_hostK-700.json"), "w") as f:
                f.write('{"schemaVersion":1,"baseTimeNanoseconds":%d,"traceEvents":['
                        '{"ph":"X","name":"op1","ts":1000,"dur":300,"cat":"cpu_op","tid":1,'
                        '"args":{"x":0,"y":0,"z":0,"k":2}}]}' % T0)
            path, db = parse_both(inp, out)
            d = C.decode(path, P)  # raises on an id used outside its sequence
            self.assertGreater(len(d.sequences), 1)
            got = sorted((ts, n, json.dumps(a, sort_keys=True)) for _, n, _, ts, a in d.instants)
            want = sorted((ts, n, json.dumps(json.loads(a), sort_keys=True)) for ts, n, a in db.execute(
                "SELECT timestamp, name, args FROM slice WHERE cat = 'Keys'"))
            self.assertEqual(got, want)
            self.assertIn({"type": 0, "b": 1, "a\"": 2}, [json.loads(g[2]) for g in got])
            ops = [a for _, n, _, _, _, a in d.slices if n == "op1"]
            self.assertEqual(len(ops), 1)
            self.assertEqual(ops[0].get("k"), 2, ops[0])
            db.close()


def ns_at(ms):
    from support.fixtures import ns
    return ns(ms)


class JsonSizeNote(unittest.TestCase):
    """A big chrome_tracing.json makes parse point at --format perfetto,
    with an estimate; a parse that writes trace.pftrace does not. The
    threshold (300 MB) is lowered by SERVPROF_PARSE_JSON_NOTE_MB here."""

    def test_note(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp = os.path.join(tmp, "in")
            servelike.build(inp)
            os.environ["SERVPROF_PARSE_JSON_NOTE_MB"] = "0.1"
            try:
                p = run_parse(inp, os.path.join(tmp, "a"), "--format", "json")
                self.assertRegex(p.stderr, r"chrome_tracing.json is 0 MB.*--format perfetto.*about 0 MB")
                p = run_parse(inp, os.path.join(tmp, "b"), "--format", "json", "--format", "perfetto")
                self.assertNotIn("--format perfetto", p.stderr)
                os.environ["SERVPROF_PARSE_JSON_NOTE_MB"] = "1000"
                p = run_parse(inp, os.path.join(tmp, "c"), "--format", "json")
                self.assertNotIn("--format perfetto", p.stderr)
            finally:
                del os.environ["SERVPROF_PARSE_JSON_NOTE_MB"]


class PdRun(Base, unittest.TestCase):
    build = staticmethod(build_pd)

    def test_three_processes(self):
        pids = {td.process.pid for td in self.d.tracks.values() if td.HasField("process")}
        self.assertEqual(len(pids), 3)


if __name__ == "__main__":
    unittest.main()
