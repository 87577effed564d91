# SPDX-License-Identifier: Apache-2.0
"""test_hooks_ccall.py — the C hook wrapper (servprof._hookcall) against
the pure-Python one (SERVPROF_HOOKS_PURE=1), on the same program.

One driver, run twice in child processes, calls hooked functions of every
shape with the edge cases a wrapper can get wrong: positional and keyword
arguments, *rest and **opts, values of every type the records encode
(surrogates, int beyond int64, NaN, nested lists and dicts, sets, bytes,
IntEnum, objects), resource ids of every shape, exceptions (the very object
raised comes back, BaseException included), methods bound and through the
class, classmethod and staticmethod, generators (send), coroutines, async
generators, a recursion, a hooked function calling another (reentrancy),
collection stopped and started inside a hooked call, caller_filter, events
at call. What must hold:

* the two runs return the same results and write the same rows (name,
  category, args), so the C record path encodes as the ctypes one does;
* introspection answers as for the original (signature, __wrapped__,
  names, iscoroutinefunction, isgeneratorfunction, __code__), and it
  pickles by name as a function does;
* with the C wrapper: its type is HookCall, and calls on and off leave no
  reference behind (sys.getrefcount of the arguments and the exception).

The C checks are skipped when the extension was not built (no Python
headers): then both runs use the Python wrapper and the comparison still
runs.
"""

import glob
import importlib.machinery
import json
import os
import unittest

import hooklib as H
from hooklib import T

H.need("yaml")

MOD = '''
import enum

class Color(enum.IntEnum):
    RED = 3

class Obj:
    def __repr__(self):
        return "Obj()"
    __str__ = __repr__

ERR = ValueError("bad")
EXIT = SystemExit(7)
KBD = KeyboardInterrupt()

def tag(rid, v, m=1.0):
    return v

def ids(a, b):
    return (a, b)

def each(reqs):
    return len(reqs)

def simple(x):
    """Returns x."""
    return x

def plain(x, *rest, scale=2, **opts):
    return (x + sum(rest)) * scale

def boom(kind):
    if kind == "value":
        raise ERR
    if kind == "exit":
        raise EXIT
    if kind == "kbd":
        raise KBD
    return kind

def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)

def toggle(action):
    import servprof
    if action == "stop":
        servprof.stop()
    else:
        servprof.start()
    return action

def reenter(f, *a, **kw):
    return f(*a, **kw)

class K:
    def __init__(self):
        self.waiting = [1, 2, 3]

    def m(self, batch, k=0):
        return len(batch) + k

    @classmethod
    def c(cls, n):
        return cls.__name__ * n

    @staticmethod
    def s(x):
        return x * 10

    def gen(self, n):
        got = []
        for i in range(n):
            got.append((yield i))
        return got

    async def co(self, x):
        return x + 1

    async def agen(self, n):
        for i in range(n):
            yield i

def caller_only(x):
    return x

def from_here(x):
    return caller_only(x)

def elsewhere(x):
    return caller_only(x)

def enq(x):
    return x

def enq2(x):
    return x

class Item:
    def __init__(self, n):
        self.n = n

class Box:
    def __init__(self, v):
        self.v = v
        self.items = [Item(1), Item("two")]
        self.big = 2**1100

    def __repr__(self):
        return "Box()"

    def size(self):
        return len(self.v)

    def bad(self):
        raise RuntimeError("no size")

def ops(box, seq, *rest, key="k", flag=None, **extra):
    return {"r": len(seq), "o": Obj()}

def big(x):
    return x
'''

HOOKS = '''
- symbol: cmod:tag
  rid: rid
  attributes: {v: v, n: "len(v)"}
  metrics: [{name: M, expr: m}, {name: Minc, expr: m, inc: true}]
- symbol: cmod:ids
  rid: [a, b]
- symbol: cmod:each
  rid: {each: reqs, rid: "item[0]", iter: "item[1]"}
- symbol: cmod:simple
- symbol: cmod:plain
  domain: Plain
  attributes: {x: x, rest: rest, scale: scale, opts: opts}
- symbol: cmod:boom
- symbol: cmod:rec
- symbol: cmod:toggle
- symbol: cmod:reenter
- symbol: "cmod:K.m"
  rid: batch
  attributes: {size: "len(batch)", waiting: "self.waiting | len", k: k}
- symbol: "cmod:K.c"
- symbol: "cmod:K.s"
- symbol: "cmod:K.gen"
- symbol: "cmod:K.co"
- symbol: "cmod:K.agen"
- symbol: cmod:caller_only
  caller_filter: from_here
- symbol: cmod:enq
  emit: event
  when: call
  name: Enqueue
  scope: {name: QueueName, value: WAITING}
- symbol: cmod:enq2
  emit: event
  scope: {name: Q, value: 5}
- symbol: cmod:ops
  rid: "box.v[0]"
  attributes:
    c_int: "3"
    c_str: "'s'"
    c_none: "None"
    c_float: "1.5"
    c_true: "True"
    ret: "return"
    ret_r: "return['r']"
    ret_o: "return['o']"
    args_n: "args | len"
    args1: "args[1]"
    kwargs: "kwargs"
    kw_key: "kwargs['key']"
    item: "item"
    seq: seq
    key: key
    flag: flag
    rest: rest
    extra_x: x
    v: "box.v"
    none_attr: "flag.anything"
    attr_fn: "attr(box, 'v')"
    size: "box | call size"
    bad: "box | call bad"
    each: "box.items | each n"
    idx: "seq[0]"
    idx_none: "flag[box.missing]"
    len: "len(seq)"
    str: "len(seq) | str"
    int: "'7' | int"
    float: "seq | len | float"
    bool: "bool(seq)"
    keys: "kwargs | keys"
    values: "kwargs | values"
    sum: "box.v | sum"
    list: "seq | list"
    bad_len: "len(box)"
    this: "this.v | len"
  metrics:
    - {name: Mlen, expr: "len(seq)"}
    - {name: Mstr, expr: "'x'"}
    - {name: Minc, expr: "box.v | sum", inc: true}
    - {name: Mflag, expr: flag}
    - {name: Mbad, expr: "box | call bad"}
- symbol: cmod:big
  emit: event
  when: call
  attributes: {x: "x | str"}
  metrics: [{name: Big, expr: x}]
'''

DRIVER = r'''
import asyncio, inspect, json, pickle, sys
import servprof, servprof.hooks
servprof.hooks.install([sys.argv[1]], with_env=False)
import cmod

out = {}
K = cmod.K
k = K()
deep = [1]
for _ in range(12):
    deep = [deep]
VALUES = ["s", "", "\u00fc\u20ac", "a\ud800b", 5, -1, 2**70, 1.5, float("nan"), True, None,
          [1, "a"], (1, 2), {"a": 1, "b": [1, 2.5, None]}, {1: "x"}, [float("inf")], b"by",
          bytearray(b"x"), {7}, cmod.Color.RED, cmod.Obj(), deep, [{"rid": "r", "iter": 1}],
          ("t1", "t2"), [1, 2**70], {"r1": 3, "r2": "x"}, [cmod.Obj()], [True]]
METRICS = [1.0, 2, "x", None, cmod.Color.RED, True]

def count_refs():
    """References left by calls on and off: simple, with expressions,
    keywords, a method, raising, a generator."""
    leaks = {}
    x = cmod.Obj()
    def count(label, fn):
        fn()
        before = (sys.getrefcount(x), sys.getrefcount(cmod.ERR))
        for _ in range(200):
            fn()
        leaks[label] = [sys.getrefcount(x) - before[0], sys.getrefcount(cmod.ERR) - before[1]]
    def raising():
        try:
            cmod.boom("value")
        except ValueError:
            pass
    box = cmod.Box([x])
    for phase in ("off", "on"):
        if phase == "on":
            servprof.start()
        count(phase + " ops", lambda: cmod.ops(box, [x], x, key=x, flag=[x], x=x))
        count(phase + " ops failing", lambda: cmod.ops(cmod.Box([]), seq=[x]))
        count(phase + " simple", lambda: cmod.simple(x))
        count(phase + " expressions", lambda: cmod.tag(x, x, x))
        count(phase + " kwargs", lambda: cmod.tag(rid=x, v=x, m=x))
        count(phase + " method", lambda: k.m([x], k=1))
        count(phase + " raising", raising)
        count(phase + " generator", lambda: list(k.gen(2)))
    servprof.stop()
    out["leaks"] = leaks
    out["wrapper"] = type(cmod.simple).__name__

def call_all():
    res = []
    for i, v in enumerate(VALUES):
        m = METRICS[i % len(METRICS)]
        r = cmod.tag(v, v, m) if i % 2 else cmod.tag(rid=v, v=v, m=m)
        res.append(r is v)
    res.append(cmod.ids("a", 7))
    res.append(cmod.ids(None, "b"))
    res.append(cmod.each([("e1", 1), ("e2", 2)]))
    res.append(cmod.simple("x"))
    res.append(cmod.plain(1, 2, 3, scale=4, z=5))
    res.append(cmod.plain(x=2))
    for kind in ("value", "exit", "kbd", "ok"):
        try:
            res.append(cmod.boom(kind))
        except BaseException as e:
            res.append([type(e).__name__, e is {"value": cmod.ERR, "exit": cmod.EXIT,
                                                 "kbd": cmod.KBD}[kind]])
    res.append(cmod.rec(30))
    res.append(cmod.reenter(cmod.plain, 1, 2, scale=3))
    res.append(cmod.reenter(cmod.reenter, cmod.simple, "deep"))
    res.append(k.m(["a", "b"], k=2))
    res.append(K.m(k, ["c"]))
    res.append([K.c(3), k.c(2), K.s(4), k.s(5)])
    g = k.gen(3)
    got = [next(g)]
    try:
        while True:
            got.append(g.send(len(got) * 10))
    except StopIteration as e:
        got.append(e.value)
    res.append(got)
    res.append(asyncio.run(k.co(41)))

    async def collect():
        return [i async for i in k.agen(3)]
    res.append(asyncio.run(collect()))
    res.append([cmod.from_here(1), cmod.elsewhere(2)])
    res.append([cmod.enq("x"), cmod.enq2("y")])
    return res

def call_ops():
    """Every op kind of the expressions, passing and failing."""
    box = cmod.Box([1, 2])
    res = [cmod.ops(box, ["a", "b"], 9, 8, key="kk", flag=[1], x=3)["r"],
           cmod.ops(cmod.Box([3]), ("c",))["r"],
           cmod.ops(box=cmod.Box([]), seq=[])["r"],
           cmod.ops(box, "s", flag={"f": 1}, key=None)["r"],
           cmod.big(2**1100), cmod.big(5), cmod.big(2.5)]
    compiled = getattr(cmod.ops, "__servprof_compiled__", None)
    return res, compiled

servprof.is_enabled()
if sys.argv[3] == "leaks":
    count_refs()
    json.dump(out, open(sys.argv[2], "w"))
    sys.exit(0)
out["off"] = call_all()
servprof.start()
out["on"] = call_all()
out["ops"], out["compiled"] = call_ops()
out["stop_inside"] = cmod.toggle("stop")      # ends the session inside a hooked call
out["start_inside"] = cmod.toggle("start")    # off when called: not recorded
out["after"] = cmod.simple("after start")     # recorded in the new session
servprof.stop()

out["intro"] = {
    "sig": str(inspect.signature(K.m)), "sig_bound": str(inspect.signature(k.m)),
    "sig_plain": str(inspect.signature(cmod.plain)),
    "wrapped": cmod.simple.__wrapped__.__name__, "name": cmod.simple.__name__,
    "qualname": K.m.__qualname__, "doc": cmod.simple.__doc__, "module": cmod.simple.__module__,
    "coro": inspect.iscoroutinefunction(K.co), "gen": inspect.isgeneratorfunction(K.gen),
    "agen": inspect.isasyncgenfunction(K.agen), "coro_plain": inspect.iscoroutinefunction(K.m),
    "ismethod": inspect.ismethod(k.m), "code": cmod.plain.__code__.co_name,
    "classm": inspect.ismethod(K.c), "hooks": len(cmod.simple.__servprof_hooks__),
    "pickled": [pickle.loads(pickle.dumps(f)) is f for f in (cmod.simple, K.m, K.__dict__["gen"])],
}
out["wrapper"] = type(cmod.simple).__name__
out["shapes"] = sorted({type(getattr(K, n)).__name__ for n in ("m", "gen", "co", "agen", "s")})

json.dump(out, open(sys.argv[2], "w"))
'''

# Malformed compiled-record specs: each refused with TypeError or
# ValueError, none crashing or leaking half-built state (run under ASan
# too: docs/hooks.md, "Tests").
BAD_SPECS = r'''
import sys, servprof, servprof.hooks.wrap as w
servprof.is_enabled()
hc = w.c_ext()
def f(x): return x
fail = lambda what, e: None
ok_ops = [(1, None, None, None)]  # ret
good = (fail, w._cval, w.number, None, None, [(0, b"k", ok_ops, "attribute k", None)], None)
hc.HookCall(f, 0, None, b"f", None, True, False, None, good)
part = (ok_ops, "w")
rare = (fail, w._cval, w.number, None, None, [], None, [part, part],
        None, (part, part), True)
hc.HookCall(f, 0, None, b"f", None, True, False, None, rare)
hc.HookCall(f, 0, None, b"f", None, True, False, None,
            (fail, w._cval, w.number, None, None, [], None, None, (ok_ops, "e", [("k",) + part]),
             None, False))
base = (fail, w._cval, w.number, None, None, [], None)
bad = [
    (fail, w._cval, w.number, ok_ops, "rid", [], None, [part], None, None, False),
    base + (None, (ok_ops, "e", []), None, True),
    base + ([5], None, None, False),
    base + ([(ok_ops, 5)], None, None, False),
    base + (None, (ok_ops,), None, False),
    base + (None, (ok_ops, "e", [(5, ok_ops, "w")]), None, False),
    base + (None, (ok_ops, "e", [("k", [], "w")]), None, False),
    base + (None, None, (part, part, part), False),
    base + (None, None, (part, ([(99, None, None, None)], "t")), False),
    (fail,),
    (fail, w._cval, w.number, [(99, None, None, None)], "rid", [], None),
    (fail, w._cval, w.number, [(8, 5, "a", None)], "rid", [], None),
    (fail, w._cval, w.number, [(5, 0, 3, ())], "rid", [], None),
    (fail, w._cval, w.number, [(5, 0, "x", 5)], "rid", [], None),
    (fail, w._cval, w.number, [], "rid", [], None),
    (fail, w._cval, w.number, ok_ops, 7, [], None),
    (fail, w._cval, w.number, None, None, [(0, b"k", ok_ops, 3, None)], None),
    (fail, w._cval, w.number, None, None, [(1, b"k", ok_ops, "w", None)], None),
    (fail, w._cval, w.number, None, None, [(0, b"k", ok_ops, "w", None), (0, "k", ok_ops, "w", None)], None),
    (fail, w._cval, w.number, None, None, [(0, b"k", [(12, 0, "len", 5)], "w", None)], None),
    (fail, w._cval, w.number, None, None, [], 5),
    (5, w._cval, w.number, None, None, [], None),
]
n = 0
for spec in bad:
    try:
        hc.HookCall(f, 0, None, b"f", None, True, False, None, spec)
    except (TypeError, ValueError) as e:
        n += 1
print("refused", n, "of", len(bad))

'''


def c_built():
    """True when the build put servprof._hookcall next to the library."""
    lib = os.environ.get("SERVPROF_LIB", "")
    d = os.path.dirname(os.path.realpath(lib)) if lib else ""
    return any(glob.glob(os.path.join(d, "_hookcall" + s))
               for s in importlib.machinery.EXTENSION_SUFFIXES) if d else False


class _ClassScope:
    """T.tmpdir() for setUpClass: the folder removed when the class ends."""

    def __init__(self, cls):
        self.addCleanup = cls.addClassCleanup


class CWrapper(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.runs = {}
        # c: the compiled records of the C wrapper; recc: its _record_c
        # (Python expressions, SERVPROF_HOOKS_CEXPR=0); pure: no extension.
        for mode in ("c", "recc", "pure", "leaks"):
            cls.runs[mode] = H.run_wrapper_mode(_ClassScope(cls), "cmod", MOD, HOOKS, DRIVER, mode)


    def test_same_results_as_the_python_wrapper(self):
        c, pure = self.runs["c"][0], self.runs["pure"][0]
        for key in ("off", "on", "stop_inside", "start_inside", "after"):
            self.assertEqual(c[key], pure[key], key)
        # __code__ is the original's through the C wrapper, the wrapper's own in Python
        self.assertEqual(dict(c["intro"], code=None), dict(pure["intro"], code=None))
        on = c["on"]
        self.assertTrue(all(on[:28]), "the very value came back")
        self.assertEqual(on[28:34], [["a", 7], [None, "b"], 2, "x", 24, 4])
        self.assertEqual(on[34:38], [["ValueError", True], ["SystemExit", True],
                                     ["KeyboardInterrupt", True], "ok"])
        self.assertEqual(on[38:], [30, 9, "deep", 4, 1, ["KKK", "KK", 40, 50],
                                   [0, 1, 2, [10, 20, 30]], 42, [0, 1, 2], [1, 2], ["x", "y"]])
        self.assertEqual(c["off"], on)

    def test_same_rows_as_the_python_wrapper(self):
        c, pure = self.runs["c"][1], self.runs["pure"][1]
        self.assertEqual(len(c), len(pure))
        for a, b in zip(c, pure):
            self.assertEqual(a, b)
        names = [n for n, _, _ in c]
        # Nothing while off, nor for the calls that stopped or started a session.
        self.assertEqual(names.count("rec"), 31)
        self.assertEqual(names.count("tag"), 28)
        self.assertEqual(names.count("caller_only"), 1)
        self.assertEqual(names.count("Enqueue"), 1)
        self.assertNotIn("toggle", names)
        self.assertEqual(names.count("simple"), 3, "2 while on, 1 in the session started inside")
        errs = [json.loads(a) for n, _, a in c if n == "boom"]
        self.assertEqual([e.get("exception") for e in errs],
                         ["ValueError", "SystemExit", "KeyboardInterrupt", None])

    def test_compiled_records_write_the_same_rows(self):
        """Every op kind: the same rows, results and error reports from
        the compiled records, _record_c and the pure-Python wrapper."""
        runs = [self.runs[m] for m in ("c", "recc", "pure")]
        for mode, (res, rows, warn) in zip(("recc", "pure"), runs[1:]):
            self.assertEqual(runs[0][0]["ops"], res["ops"], mode)
            self.assertEqual(runs[0][1], rows, mode)
            self.assertEqual(runs[0][2], warn, mode)
        self.assertEqual(runs[0][0]["ops"], [2, 1, 0, 1, 2**1100, 5, 2.5])
        ops = [json.loads(a) for n, _, a in runs[0][1] if n == "ops"]
        self.assertEqual(len(ops), 4)
        first = ops[0]
        self.assertEqual(first["rid"], 1)
        want = {"c_int": 3, "c_str": "s", "c_float": 1.5, "c_true": True, "ret_r": 2,
                "ret_o": "Obj()", "args_n": 4, "args1": ["a", "b"], "kw_key": "kk",
                "seq": ["a", "b"], "key": "kk", "flag": [1], "rest": [9, 8], "extra_x": 3,
                "v": [1, 2], "attr_fn": [1, 2], "size": 2, "each": [1, "two"], "idx": "a",
                "len": 2, "str": "2", "int": 7, "float": 2.0, "bool": True, "sum": 3,
                "list": ["a", "b"], "Mlen=": 2, "Mstr=": "x", "Minc+": 3, "Mflag=": [1],
                "keys": ["key", "flag", "x"], "values": ["kk", [1], 3]}
        for k, v in want.items():
            self.assertEqual(first.get(k), v, k)
        # this: ops has no self, only **extra: "parameter 'self' was not passed"
        for k in ("c_none", "item", "bad", "bad_len", "idx_none", "none_attr", "Mbad", "this"):
            self.assertNotIn(k, first)
        self.assertEqual(first["kwargs"], {"key": "kk", "flag": [1], "x": 3})
        # the second call: defaults, a missing **extra key, no rest
        second = ops[1]
        self.assertEqual([second.get(k) for k in ("key", "rest", "extra_x", "kw_key", "flag")],
                         ["k", [], None, None, None])
        self.assertNotIn("rid", ops[2], "box.v[0] of an empty list raised")
        self.assertNotIn("idx_none", ops[3], "flag[box.missing]: the index raised")
        warn = "\n".join(runs[0][2])
        for what in ("attribute bad", "attribute bad_len", "attribute idx_none",
                     "attribute extra_x", "attribute kw_key", "attribute this", "recording"):
            self.assertIn(what, warn)
        big = [json.loads(a) for n, _, a in runs[0][1] if n == "big"]
        self.assertEqual([b.get("x") for b in big], ["5", "2.5"], "2**1100: record dropped")
        if c_built():
            self.assertIs(runs[0][0]["compiled"], True)
            self.assertIs(runs[1][0]["compiled"], False)

    def test_bad_compiled_specs_are_refused(self):
        if not c_built():
            self.skipTest("servprof._hookcall is not built (python3-dev missing)")
        d = T.tmpdir(self)
        script = H.write(d, "bad.py", BAD_SPECS)
        p = T.run([H.PY, script], env=H.env(d), cwd=d, timeout=60)
        self.assertIn("refused 22 of 22", p.stdout)

    def test_introspection_sees_the_original(self):
        intro = self.runs["c"][0]["intro"]
        self.assertEqual(intro, {
            "sig": "(self, batch, k=0)", "sig_bound": "(batch, k=0)",
            "sig_plain": "(x, *rest, scale=2, **opts)", "wrapped": "simple", "name": "simple",
            "qualname": "K.m", "doc": "Returns x.", "module": "cmod", "coro": True, "gen": True,
            "agen": True, "coro_plain": False, "ismethod": True, "code": "plain",
            "classm": True, "hooks": 1, "pickled": [True, True, True]})

    def test_the_c_wrapper_is_used_and_leaks_nothing(self):
        if not c_built():
            self.skipTest("servprof._hookcall is not built (python3-dev missing)")
        c, pure, leaks = self.runs["c"][0], self.runs["pure"][0], self.runs["leaks"][0]
        self.assertEqual(c["wrapper"], "HookCall")
        self.assertEqual(c["shapes"], ["HookCall"])
        self.assertEqual(pure["wrapper"], "function")
        self.assertEqual(leaks["wrapper"], "HookCall")
        for label, (dx, derr) in leaks["leaks"].items():
            self.assertEqual((dx, derr), (0, 0), label)
        self.assertEqual(len(leaks["leaks"]), 16)
        self.assertGreater(len(self.runs["leaks"][1]), 6 * 200, "the 'on' calls recorded")


if __name__ == "__main__":
    H.main()
