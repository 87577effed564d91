# SPDX-License-Identifier: Apache-2.0
"""test_hooks_shapes.py — hook files in the reference's shapes, on a
package written by the test and run under `python -m servprof run`.

The package (pkgx, "installed" as distribution pkgx 1.4.2 through a
dist-info folder) has what servers have: methods, a classmethod, a
staticmethod, a generator, a coroutine, an async generator, module
functions, one model class per module of pkgx.models. The hook file is
the reference's example shapes — attributes with pipes
(`len(return) | str`, `args[1] | len`, `return[0] | attr input_ids | len`),
versions, a wildcard `pkgx.models.*:*.embed`, caller_filter — plus broken
entries: the program must run unchanged and the report must name each
broken entry with why. Also: the expression language on its own, the
version order, `hooks check`, and a module imported before the hooks are
installed.
"""

import json
import os
import unittest

import hooklib as H
from hooklib import T

H.need("yaml")

from servprof.hooks import expr, version  # noqa: E402

CORE = '''
import asyncio

class Item:
    def __init__(self, ids):
        self.input_ids = ids

class Sched:
    def __init__(self):
        self.waiting = [1, 2]

    def schedule(self, input_ids, k=0):
        return [Item(input_ids), Item(input_ids[:1])]

    @classmethod
    def make(cls, n):
        return cls.__name__ * n

    @staticmethod
    def norm(x):
        return x * 10

    def tokens(self, n):
        got = []
        for i in range(n):
            got.append((yield i))
        return got

    async def run(self, x):
        await asyncio.sleep(0)
        return x + 1

    async def stream(self, n):
        for i in range(n):
            await asyncio.sleep(0)
            yield i

    def fail(self, why):
        raise KeyError(why)

def helper(a, *rest, scale=2, **opts):
    return (a + sum(rest)) * scale
'''

MODEL = '''
class {name}:
    def embed(self, x):
        return "{name}:" + str(x)
    def other(self):
        return 0
'''

DRIVER = '''
import asyncio, json, sys
import pkgx.core as c
import pkgx.models.alpha as ma, pkgx.models.beta as mb

out = {}
s = c.Sched()
def driver_call():
    return s.schedule([7, 8, 9], k=5)
r = driver_call()
out["schedule"] = [x.input_ids for x in r]
out["make"] = c.Sched.make(2)
out["norm"] = c.Sched.norm(4) + s.norm(1)
g = s.tokens(3)
vals = [next(g), g.send("a"), g.send("b")]
try:
    g.send("c")
except StopIteration as e:
    out["gen"] = [vals, e.value]
out["run"] = asyncio.run(s.run(1))
async def agen():
    return [x async for x in s.stream(3)]
out["agen"] = asyncio.run(agen())
try:
    s.fail("boom")
except KeyError as e:
    out["fail"] = repr(e)
out["helper"] = c.helper(1, 2, 3, scale=3)
out["embed"] = [ma.Alpha().embed(1), mb.Beta().embed(2), mb.Gamma().other()]
out["signature"] = str(__import__("inspect").signature(c.Sched.schedule))
out["iscoro"] = __import__("inspect").iscoroutinefunction(c.Sched.run)
print(json.dumps(out))
'''

HOOKS = '''
# The reference's shapes (its hooks_example.yaml), on pkgx.
- symbol: pkgx.core:Sched.schedule
  domain: BatchSchedule
  name: BatchSchedule
  min_version: "1.0"
  max_version: "2.0rc1"
  attributes:
    - name: input_ids_len
      expr: len(input_ids)
    - name: out_len_str
      expr: len(return) | str
    - name: arg1_len
      expr: args[1] | len
    - name: first_ids_len
      expr: return[0] | attr input_ids | len
    - name: k
      expr: kwargs['k']
- symbol: pkgx.core:Sched.make
  attributes: [{name: n, expr: n}]
- symbol: pkgx.core:Sched.norm
  attributes: [{name: x, expr: x}]
- symbol: pkgx.core:Sched.tokens
  name: tokens
  attributes: [{name: got, expr: "return | len"}]
- symbol: pkgx.core:Sched.run
  attributes: [{name: r, expr: return}]
- symbol: pkgx.core:Sched.stream
- symbol: pkgx.core:Sched.fail
- symbol: pkgx.core:helper
  attributes: [{name: a, expr: a}, {name: rest, expr: "rest | len"}, {name: scale, expr: scale}]
- symbol: "pkgx.models.*:*.embed"
  name: multimodalEmbedding
  domain: Multimodal
- symbol: pkgx.core:Sched.schedule
  name: fromDriver
  caller_filter: driver_call
- symbol: pkgx.core:Sched.schedule
  name: fromElsewhere
  caller_filter: somewhere_else
# Broken entries: each is reported, none stops the program.
- symbol: pkgx.core:Sched.no_such_method
- symbol: pkgx.core:Sched.make
  min_version: "one.two"
- symbol: pkgx.core:Sched.make
  attributes: [{name: bad, expr: "len(n"}]
- symbol: pkgx.core:Sched.make
  attributes: [{name: bad, expr: "len(batch)"}]
- symbol: pkgx.core:Sched.make
  min_version: "3.0"
- symbol: notinstalled.mod:f
- symbol: pkgx.core:Sched.norm
  name: runtimeFail
  attributes: [{name: bad, expr: "x[3]"}]
# The reference's custom handlers: one that works, one that fails before
# calling the function, one that cannot be imported (a timing span instead).
- symbol: pkgx.core:Sched.make
  handler: myhandlers:around
- symbol: pkgx.core:helper
  handler: myhandlers:broken
- symbol: pkgx.core:Sched.norm
  name: fallbackTimer
  handler: ms_service_profiler.patcher.vllm.handlers.v1.batch_handlers:schedule
'''

HANDLERS = '''
import servprof

def around(original_func, *args, **kwargs):
    with servprof.span("handled", domain="Custom"):
        return original_func(*args, **kwargs)

def broken(original_func, *args, **kwargs):
    raise RuntimeError("handler bug")
'''


def make_pkg(d):
    os.makedirs(os.path.join(d, "pkgx", "models"))
    H.write(d, "pkgx/__init__.py", "")
    H.write(d, "pkgx/core.py", CORE)
    H.write(d, "pkgx/models/__init__.py", "")
    H.write(d, "pkgx/models/alpha.py", MODEL.format(name="Alpha"))
    H.write(d, "pkgx/models/beta.py", MODEL.format(name="Beta") + MODEL.format(name="Gamma"))
    os.makedirs(os.path.join(d, "pkgx-1.4.2.dist-info"))
    H.write(d, "pkgx-1.4.2.dist-info/METADATA", "Metadata-Version: 2.1\nName: pkgx\nVersion: 1.4.2\n")
    H.write(d, "pkgx-1.4.2.dist-info/top_level.txt", "pkgx\n")
    H.write(d, "driver.py", DRIVER)
    H.write(d, "myhandlers.py", HANDLERS)
    return H.write(d, "hooks.yaml", HOOKS)


EXPECTED = {"schedule": [[7, 8, 9], [7]], "make": "SchedSched", "norm": 50,
            "gen": [[0, 1, 2], ["a", "b", "c"]], "run": 2, "agen": [0, 1, 2],
            "fail": "KeyError('boom')", "helper": 18,
            "embed": ["Alpha:1", "Beta:2", 0], "signature": "(self, input_ids, k=0)",
            "iscoro": True}


class Expressions(unittest.TestCase):

    def ev(self, text, a=(), kw=None, ret=None, params=None):
        return expr.bind(expr.parse(text), params)(a, kw or {}, ret, None)

    def test_reference_forms(self):
        class O:
            input_ids = [1, 2, 3]
        self.assertEqual(self.ev("len(return) | str", ret=[1, 2]), "2")
        self.assertEqual(self.ev("args[1] | len", a=(None, [1, 2, 3])), 3)
        self.assertEqual(self.ev("return[0] | attr input_ids | len", ret=[O()]), 3)
        self.assertEqual(self.ev("kwargs['k']", kw={"k": 5}), 5)
        self.assertEqual(self.ev("return | keys", ret={"a": 1}), ["a"])
        self.assertEqual(self.ev("return | each input_ids", ret=[O()]), [[1, 2, 3]])
        self.assertEqual(self.ev("attr(return, 'input_ids') | sum", ret=O()), 6)
        self.assertEqual(self.ev("return.input_ids[-1] | float", ret=O()), 3.0)
        self.assertIsNone(self.ev("return | len | str", ret=None))  # None flows through

    def test_call_pipe(self):
        # `| call NAME`: a zero-argument method (SGLang's available_size());
        # its value flows on like any other, None passes, a missing method
        # raises (counted by the wrapper, never into the server).
        class Pool:
            def available_size(self):
                return 12
        class Sched:
            pool = Pool()
        self.assertEqual(self.ev("return.pool | call available_size", ret=Sched()), 12)
        self.assertEqual(self.ev("return | call available_size | str", ret=Pool()), "12")
        self.assertIsNone(self.ev("return | call available_size", ret=None))
        with self.assertRaises(AttributeError):
            self.ev("return | call gone", ret=Pool())
        with self.assertRaisesRegex(expr.ExprError, "expected name"):
            expr.parse("return | call")

    def test_parameter_names_by_signature(self):
        import inspect

        def f(self, batch, n=4, *more, key=None, **kw):
            pass
        p = expr.Params(inspect.signature(f))
        self.assertEqual(self.ev("len(batch)", a=(0, [1, 2]), params=p), 2)
        self.assertEqual(self.ev("n", a=(0, []), params=p), 4)
        self.assertEqual(self.ev("n", a=(0, []), kw={"n": 9}, params=p), 9)
        self.assertEqual(self.ev("key", kw={"key": "x"}, params=p), "x")
        self.assertEqual(self.ev("more | len", a=(0, [], 1, 2, 3), params=p), 2)

        def g(a):
            pass
        with self.assertRaisesRegex(LookupError, "no parameter 'batch'"):
            expr.bind(expr.parse("len(batch)"), expr.Params(inspect.signature(g)))

    def test_syntax_errors_say_where(self):
        for text, msg in [("len(batch", "column 10"), ("return |", "expected name"),
                          ("open(x)", "not a function"), ("a + b", "unexpected character"),
                          ("x | frobnicate", "unknown pipe operation"),
                          ("__import__('os')", "not a function")]:
            with self.assertRaises(expr.ExprError) as cm:
                expr.parse(text)
            self.assertIn(msg, str(cm.exception), text)

    def test_environment_lists(self):
        import servprof.hooks as hooks
        self.assertEqual(hooks.env_files({"SERVPROF_HOOKS": "a.yaml:builtin:vllm::b.yaml:builtin:auto",
                                          "PROFILING_SYMBOLS_PATH": "ref.yaml"}),
                         ["a.yaml", "builtin:vllm", "b.yaml", "builtin:auto", "ref.yaml"])
        self.assertEqual(hooks.env_files({}), [])

    def test_versions(self):
        order = ["0.9.0rc1", "0.9", "0.9.1", "0.9.2.dev1", "0.9.2rc1", "0.9.2", "0.9.2.post1",
                 "0.10.0", "0.14.0rc1", "0.14.0"]
        keys = [version.parse(v) for v in order]
        self.assertEqual(keys, sorted(keys))
        self.assertEqual(version.parse("0.9.0"), version.parse("0.9"))
        self.assertEqual(version.parse("0.9.1+cu121"), version.parse("0.9.1"))
        self.assertTrue(version.in_range("0.10.1", "0.9.1", "0.14.0rc1"))
        self.assertFalse(version.in_range("0.14.0", "0.9.1", "0.14.0rc1"))
        with self.assertRaises(ValueError):
            version.parse("one.two")


class Shapes(unittest.TestCase):

    def run_driver(self, d, hooks):
        cfg = T.make_config(d, enable=1)
        p = T.run(H.run_cmd([hooks], H.PY, os.path.join(d, "driver.py")),
                  env=H.env(d, cfg), cwd=d, timeout=120)
        return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr

    def test_reference_shapes_bind_and_record(self):
        d = T.tmpdir(self)
        hooks = make_pkg(d)
        out, err = self.run_driver(d, hooks)
        self.assertEqual(out, EXPECTED, err)   # results, exceptions, signatures unchanged
        rows = H.records(os.path.join(d, "prof"))
        by = {}
        for r in rows:
            by.setdefault(r["name"], []).append(r)
        bs = by["BatchSchedule"]
        self.assertEqual(len(bs), 1, err)
        self.assertEqual(bs[0]["cat"], "BatchSchedule")
        self.assertEqual({k: bs[0]["a"].get(k) for k in
                          ("input_ids_len", "out_len_str", "arg1_len", "first_ids_len", "k")},
                         {"input_ids_len": 3, "out_len_str": "2", "arg1_len": 3,
                          "first_ids_len": 3, "k": 5})
        self.assertEqual(by["make"][0]["a"]["n"], 2)
        self.assertEqual(sorted(r["a"]["x"] for r in by["norm"]), [1, 4])  # class and instance
        self.assertEqual(by["tokens"][0]["a"]["got"], 3)    # a generator's return value
        self.assertGreater(by["tokens"][0]["duration"], 0)
        self.assertEqual(by["run"][0]["a"]["r"], 2)
        self.assertEqual(len(by["stream"]), 1)
        self.assertEqual((by["fail"][0]["a"]["error"], by["fail"][0]["a"]["exception"]),
                         (True, "KeyError"))
        self.assertEqual({k: by["helper"][0]["a"][k] for k in ("a", "rest", "scale")},
                         {"a": 1, "rest": 2, "scale": 3})
        emb = by["multimodalEmbedding"]
        self.assertEqual(len(emb), 2)                       # Alpha.embed and Beta.embed
        self.assertEqual({r["cat"] for r in emb}, {"Multimodal"})
        self.assertEqual(len(by["fromDriver"]), 1)          # caller_filter matched
        self.assertNotIn("fromElsewhere", by)               # caller_filter did not
        self.assertEqual(len(by["runtimeFail"]), 2)         # recorded without the bad value
        self.assertNotIn("bad", by["runtimeFail"][0]["a"])

        # The start line, then one warning per entry that did not bind, with why.
        self.assertRegex(err, r"hooks.yaml: 21 hooks: 0 bound, \d+ waiting")
        for entry, why in [(12, "attribute gone: Sched has no 'no_such_method'"),
                           (13, "bad version string in min_version: 'one.two'"),
                           (14, "bad expression: expected \\), found the end at column 6"),
                           (15, "signature without the parameter an expression names: the "
                                "function has no parameter 'batch'"),
                           (16, r"version outside range: pkgx 1.4.2 is not in \[3.0, any\]"),
                           (17, "never bound: module not installed \\(no package 'notinstalled'\\)")]:
            self.assertRegex(err, r"WARNING: hooks.yaml entry %d \([^)]*\): .*%s" % (entry, why))
        # The runtime failure: said once when it happens, counted at exit.
        self.assertEqual(err.count("attribute bad of pkgx.core:Sched.norm raised TypeError"), 1, err)
        self.assertIn("attribute bad of pkgx.core:Sched.norm failed 2 times", err)
        # Custom handlers: run; failing, the call goes on; not importable, a timer.
        self.assertEqual(len(by["handled"]), 1)
        self.assertEqual(len(by["fallbackTimer"]), 2)
        self.assertIn("handler of pkgx.core:helper raised RuntimeError: handler bug (the call "
                      "went on without it", err)
        self.assertRegex(err, r"entry 21 \(pkgx.core:Sched.norm\): handler ms_service_profiler\S+ "
                         r"cannot be used \(ModuleNotFoundError: .*\); recording a timing span instead")

    def test_check_prints_the_table(self):
        d = T.tmpdir(self)
        hooks = make_pkg(d)
        p = T.run([H.PY, "-m", "servprof", "hooks", "check", hooks], env=H.env(d), cwd=d,
                  check=False, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        lines = {int(l.split()[1]): l for l in p.stdout.splitlines()[1:] if l.startswith("hooks.yaml")}
        self.assertEqual(len(lines), 21, p.stdout)
        self.assertIn(" bound ", lines[1])
        self.assertIn("pkgx.models.alpha:Alpha.embed, pkgx.models.beta:Beta.embed", lines[9])
        self.assertIn("not bound  attribute gone", lines[12])
        self.assertIn("module not installed", lines[17])
        self.assertIn("15 of 21 hooks bind", p.stdout)
        # Another interpreter (a wrapper script, so a different path) answers the same.
        pyw = H.write(d, "pyw", "#!/bin/sh\nexec %s \"$@\"\n" % H.PY)
        os.chmod(pyw, 0o755)
        q = T.run([H.PY, "-m", "servprof", "hooks", "check", hooks, "--python", pyw],
                  env=H.env(d), cwd=d, check=False)
        self.assertEqual((q.returncode, q.stdout), (1, p.stdout), q.stderr)
        # The C tool's verb runs the same.
        c = T.run([os.environ["SERVPROF_BIN"], "hooks", "check", hooks, "--python", H.PY],
                  env=H.env(d), cwd=d, check=False)
        self.assertEqual((c.returncode, c.stdout), (1, p.stdout), c.stderr)
        u = T.run([os.environ["SERVPROF_BIN"], "hooks", "verify", hooks], check=False)
        self.assertEqual(u.returncode, 2)
        self.assertIn("unknown sub-verb 'verify'", u.stderr)

    def test_module_imported_before_install(self):
        d = T.tmpdir(self)
        hooks = make_pkg(d)
        cfg = T.make_config(d, enable=1)
        H.write(d, "late.py", "import pkgx.core as c\nimport servprof.hooks\n"
                "servprof.hooks.install([%r])\nprint(c.Sched().schedule([1, 2])[0].input_ids)\n"
                % hooks)
        p = T.run([H.PY, os.path.join(d, "late.py")], env=H.env(d, cfg), cwd=d)
        self.assertEqual(p.stdout.strip(), "[1, 2]")
        names = [r["name"] for r in H.records(os.path.join(d, "prof"))]
        self.assertEqual(names.count("BatchSchedule"), 1, p.stderr)
        self.assertRegex(p.stderr, r"hooks.yaml: 21 hooks: \d+ bound")

    def test_hook_files_from_the_environment(self):
        d = T.tmpdir(self)
        hooks = make_pkg(d)
        small = H.write(d, "small.yaml", "- symbol: pkgx.core:helper\n  name: fromEnv\n")
        for var, value, names in [("PROFILING_SYMBOLS_PATH", hooks, {"BatchSchedule"}),
                                  ("SERVPROF_HOOKS", small + os.pathsep + hooks,
                                   {"BatchSchedule", "fromEnv"})]:
            with self.subTest(var=var):
                e = T.tmpdir(self)
                cfg = T.make_config(e, enable=1)
                p = T.run([H.PY, "-m", "servprof", "run", "--", H.PY, os.path.join(d, "driver.py")],
                          env=H.env(d, cfg, **{var: value}), cwd=d)
                self.assertEqual(json.loads(p.stdout.strip().splitlines()[-1]), EXPECTED)
                got = {r["name"] for r in H.records(os.path.join(e, "prof"))}
                self.assertTrue(names <= got, (names, got))
                self.assertIn("hooks.yaml: 21 hooks", p.stderr)

    def test_child_without_servprof_on_its_path(self):
        # The runner puts only its bootstrap on PYTHONPATH; the bootstrap
        # finds the servprof copy it belongs to.
        d = T.tmpdir(self)
        hooks = make_pkg(d)
        cfg = T.make_config(d, enable=1)
        code = ("import sys; sys.path.insert(0, %r); from servprof._run import run_main; "
                "sys.exit(run_main(['--hooks', %r, '--', %r, %r]))"
                % (T.PYDIR, hooks, H.PY, os.path.join(d, "driver.py")))
        e = H.env(d, cfg)
        e["PYTHONPATH"] = d
        p = T.run([H.PY, "-c", code], env=e, cwd=d)
        self.assertEqual(json.loads(p.stdout.strip().splitlines()[-1]), EXPECTED)
        self.assertIn("BatchSchedule", {r["name"] for r in H.records(os.path.join(d, "prof"))})

    def test_spawned_processes_are_hooked_too(self):
        # multiprocessing "spawn" starts a fresh interpreter (as vLLM does
        # for its engine core and workers): the hooks come with PYTHONPATH.
        d = T.tmpdir(self)
        hooks = make_pkg(d)
        cfg = T.make_config(d, enable=1)
        H.write(d, "spawner.py", "import multiprocessing as mp\n"
                "def child(q):\n    import pkgx.core as c\n    q.put(c.helper(5))\n"
                "if __name__ == '__main__':\n    ctx = mp.get_context('spawn')\n"
                "    q = ctx.Queue()\n    p = ctx.Process(target=child, args=(q,))\n"
                "    p.start()\n    print(q.get(timeout=60))\n    p.join(60)\n")
        p = T.run(H.run_cmd([hooks], H.PY, os.path.join(d, "spawner.py")), env=H.env(d, cfg), cwd=d)
        self.assertEqual(p.stdout.strip(), "10")
        spans = [(T.store_pid(s), r["name"]) for s in T.stores(os.path.join(d, "prof"))
                 for r in T.rows(s)]
        self.assertEqual([n for _, n in spans], ["helper"], p.stderr)

    def test_bad_file_and_no_command(self):
        d = T.tmpdir(self)
        bad = H.write(d, "bad.yaml", "symbol: not a list\n")
        H.write(d, "ok.py", "print('ran')\n")
        p = T.run(H.run_cmd([bad], H.PY, os.path.join(d, "ok.py")), env=H.env(d), cwd=d)
        self.assertEqual(p.stdout.strip(), "ran")
        self.assertIn("bad.yaml: not read: ", p.stderr)
        self.assertIn("a hook file is a list of entries", p.stderr)
        q = T.run([H.PY, "-m", "servprof", "run", "--hooks", bad], env=H.env(d), check=False)
        self.assertEqual(q.returncode, 2)
        self.assertIn("no command to run", q.stderr)


if __name__ == "__main__":
    H.main()
