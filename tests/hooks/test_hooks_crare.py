# SPDX-License-Identifier: Apache-2.0
"""test_hooks_crare.py — the rarer record shapes compiled in C: a rid
list (`rid: [a, b]`), `rid: {each: EXPR, FIELD: EXPR...}` and `link:
{from:, to:}`, against the same hooks recorded in Python.

One driver, run in three child processes: the C wrapper with compiled
records (_hookexpr.c), the C wrapper with SERVPROF_HOOKS_CEXPR=0 (the
expressions in Python, Binding._record_c, the reference path) and the
pure-Python wrapper. It calls hooked functions with the edge cases of
each shape — for `each`: an empty iterable, a field that is None, a field
that raises, a value that is no plain JSON, an iterable that is not one
or breaks midway, a dict (its items), an OrderedDict whose order is not
its dict's, None; for a rid list: every value None, one left (written as
that rid), values that are not str or int (str() of them), one whose
str() raises (the whole record is dropped), an int beyond int64 and a
lone surrogate (the JSON path); for a link: a None end, a raising end,
ends that are not str, a str() that raises, alone (emit: link) and
before a record. What must hold:

* the three runs write the same rows, byte for byte (the args text), give
  the same results and report the same failures with the same counts;
* the rows are the ones expected, decoded (so a C path that were wrong
  in the same way as nothing else would still fail);
* with the extension built, every hook here is compiled, and 200 calls
  of each leave no reference behind.
"""

import json
import unittest

import hooklib as H
from test_hooks_ccall import c_built, _ClassScope

H.need("yaml")

MOD = '''
import collections

class Req:
    def __init__(self, rid, it=None, kind=None):
        self.request_id, self.iter, self.kind = rid, it, kind
        self.id = rid

    @property
    def bad(self):
        raise KeyError("no such field")

class Obj:
    def __str__(self):
        return "Obj()"

class Odd:
    def __str__(self):
        raise RuntimeError("no text")

class Breaks:
    """Iterable that raises after its first item."""
    def __iter__(self):
        yield Req("b1", 1)
        raise RuntimeError("iteration broke")

def lst(a, b, c=None):
    return a

def each(batch):
    return 0 if batch is None else 1

def each_ret(n):
    return {"r%d" % i: i for i in range(n)}

def each_od():
    od = collections.OrderedDict([("x", 1), ("y", 2), ("z", 3)])
    od.move_to_end("x")
    return od

def link(a, b):
    return a

def link_only(a, b):
    return b
'''

HOOKS = '''
- symbol: smod:lst
  domain: L
  rid: [a, b, "c.x"]
  attributes: {first: a}
- symbol: smod:each
  domain: E
  rid: {each: batch, rid: "item.request_id", iter: "item.iter", kind: "item.kind", bad: "item.bad"}
  attributes: {outside: "item"}
- symbol: smod:each_ret
  rid: {each: return, rid: "item[0]", n: "item[1]"}
- symbol: smod:each_od
  emit: event
  rid: {each: return, rid: "item[0]", n: "item[1] | str"}
- symbol: smod:link
  domain: K
  link: {from: a, to: b}
  attributes: {a: a}
- symbol: smod:link_only
  emit: link
  link: {from: "a.id", to: b}
'''

DRIVER = r'''
import json, sys
import servprof, servprof.hooks
servprof.hooks.install([sys.argv[1]], with_env=False)
import smod
R = smod.Req

def calls():
    res = []
    # rid lists
    res.append(smod.lst("a", 7))
    res.append(smod.lst(None, "b"))
    res.append(smod.lst(None, None))
    res.append(smod.lst(True, smod.Obj(), 2.5))
    res.append(smod.lst(2**70, "x"))
    res.append(smod.lst("s\ud800", 1))
    res.append(smod.lst("ok", "c raises", 5))
    res.append(smod.lst(smod.Odd(), 1))
    # each
    res.append(smod.each([R("r1", 1, "decode"), R("r2", 2, None), R(3, None, "prefill")]))
    res.append(smod.each([]))
    res.append(smod.each(()))
    res.append(smod.each(None))
    res.append(smod.each(5))
    res.append(smod.each(smod.Breaks()))
    res.append(smod.each(iter([R("g1", 1)])))
    res.append(smod.each([R("o1", smod.Obj())]))
    deep = [1]
    for _ in range(9):
        deep = [deep]
    res.append(smod.each([R("n1", [1, {"a": [2.5, None]}], True), R("d1", deep)]))
    res.append(smod.each_ret(3))
    res.append(smod.each_ret(0))
    res.append(list(smod.each_od()))
    # links
    res.append(smod.link("http-1", "eng-1"))
    res.append(smod.link(None, "x"))
    res.append(smod.link(1, 2.5))
    res.append(smod.link("u\ud800", smod.Obj()))
    res.append(smod.link(smod.Odd(), "y"))
    res.append(smod.link_only(R("front-1"), "back-1"))
    res.append(smod.link_only(5, "back-2"))
    res.append(smod.link_only(R("front-3"), None))
    return [r if r is None or isinstance(r, (int, str, list)) else type(r).__name__
            for r in res]

def leaks():
    """References left by 200 calls of each shape."""
    out = {}
    x, req = smod.Obj(), R("l1", 1, "k")
    batch = [req, req]
    for label, fn in (("list", lambda: smod.lst(x, "b", None)),
                      ("each", lambda: smod.each(batch)),
                      ("each failing", lambda: smod.each(smod.Breaks())),
                      ("link", lambda: smod.link(x, x)),
                      ("link only", lambda: smod.link_only(req, x))):
        fn()
        before = (sys.getrefcount(x), sys.getrefcount(req), sys.getrefcount(batch))
        for _ in range(200):
            fn()
        after = (sys.getrefcount(x), sys.getrefcount(req), sys.getrefcount(batch))
        out[label] = [a - b for a, b in zip(after, before)]
    return out

servprof.is_enabled()
out = {"off": calls()}
servprof.start()
out["on"] = calls()
if sys.argv[3] == "leaks":
    out["leaks"] = leaks()
servprof.stop()
out["compiled"] = {n: getattr(getattr(smod, n), "__servprof_compiled__", None)
                   for n in ("lst", "each", "each_ret", "each_od", "link", "link_only")}
json.dump(out, open(sys.argv[2], "w"))
'''


def _run(cls, mode):
    return H.run_wrapper_mode(_ClassScope(cls), "smod", MOD, HOOKS, DRIVER, mode)


class RareShapes(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.runs = {m: _run(cls, m) for m in ("c", "recc", "pure", "leaks")}

    def rows(self, name, mode="c"):
        return [json.loads(a) for n, _, a in self.runs[mode][1] if n == name]

    def test_the_three_paths_agree(self):
        c = self.runs["c"]
        for mode in ("recc", "pure"):
            other = self.runs[mode]
            self.assertEqual(c[0]["on"], other[0]["on"], mode)
            self.assertEqual(len(c[1]), len(other[1]), mode)
            for a, b in zip(c[1], other[1]):
                self.assertEqual(a, b, mode)
            self.assertEqual(c[2], other[2], mode)
        self.assertEqual(c[0]["off"], c[0]["on"])

    def test_rid_lists(self):
        got = [r.get("rid") for r in self.rows("lst")]
        self.assertEqual(got, [
            [{"rid": "a"}, {"rid": 7}],
            "b",                                  # one left: that rid
            None,                                 # none left: no rid
            [{"rid": "True"}, {"rid": "Obj()"}],  # 2.5 .x raised: left out
            # Not plain (beyond int64, a lone surrogate): json_text() writes
            # the list, which the store keeps as that text (on every path).
            '[{"rid":1180591620717411303424},{"rid":"x"}]',
            '[{"rid":"s\\ud800"},{"rid":1}]',
            [{"rid": "ok"}, {"rid": "c raises"}],  # 5 .x raised: left out
        ], "lst(Odd(), 1): str() raised, the whole record dropped")
        self.assertEqual([r.get("first") for r in self.rows("lst")][:2], ["a", None])

    def test_each(self):
        rows = self.rows("each")
        got = [r.get("rid") for r in rows]
        self.assertEqual(got, [
            [{"rid": "r1", "iter": 1, "kind": "decode"}, {"rid": "r2", "iter": 2},
             {"rid": 3, "kind": "prefill"}],
            [], [],
            None,                           # each: None
            None,                           # 5 is not iterable
            None,                           # broke midway: no rid
            [{"rid": "g1", "iter": 1}],
            [{"rid": "o1", "iter": "Obj()"}],  # no plain JSON: through json_text()
            # nested values written as they are; one too deep for the
            # direct writer: the whole list through json_text()
            [{"rid": "n1", "iter": [1, {"a": [2.5, None]}], "kind": True},
             {"rid": "d1", "iter": [[[[[[[[[[1]]]]]]]]]]}],
        ])
        self.assertTrue(all("outside" not in r for r in rows), "item is None outside each")
        self.assertEqual([r.get("rid") for r in self.rows("each_ret")],
                         [[{"rid": "r0", "n": 0}, {"rid": "r1", "n": 1}, {"rid": "r2", "n": 2}],
                          []])
        self.assertEqual([r.get("rid") for r in self.rows("each_od")],
                         [[{"rid": "y", "n": "2"}, {"rid": "z", "n": "3"},
                           {"rid": "x", "n": "1"}]], "the OrderedDict's own order")

    def test_links(self):
        links = [(r["from"], r["to"]) for r in self.rows("Link")]
        # str(x).encode("utf-8", "replace"): a lone surrogate becomes "?"
        self.assertEqual(links, [("http-1", "eng-1"), ("1", "2.5"), ("u?", "Obj()"),
                                 ("front-1", "back-1")])
        # link(Odd(), "y"): str() raised, so no record either (as in Python)
        self.assertEqual([r.get("a") for r in self.rows("link")], ["http-1", None, 1, "u?"])
        self.assertEqual(self.rows("link_only"), [], "emit: link writes the link alone")

    def test_failures_reported_with_their_counts(self):
        warn = "\n".join(self.runs["c"][2])
        for what, n in (("rid field bad of smod:each", 8), ("rid each of smod:each", 2),
                        ("rid of smod:lst", 2), ("link from of smod:link_only", 1),
                        ("recording of smod:lst", 1), ("recording of smod:link", 1)):
            self.assertIn("%s failed %d time%s " % (what, n, "s" if n > 1 else ""), warn)

    def test_compiled_and_no_reference_left(self):
        if not c_built():
            self.skipTest("servprof._hookcall is not built (python3-dev missing)")
        self.assertEqual(set(self.runs["c"][0]["compiled"].values()), {True})
        self.assertEqual(set(self.runs["recc"][0]["compiled"].values()), {False})
        leaks = self.runs["leaks"][0]["leaks"]
        self.assertEqual(len(leaks), 5)
        for label, d in leaks.items():
            self.assertEqual(d, [0, 0, 0], label)


if __name__ == "__main__":
    H.main()
