# SPDX-License-Identifier: Apache-2.0
"""test_hooks_sets.py — the shipped vLLM and SGLang hook sets against the
manifests of the sources they were written from.

No vLLM or SGLang can be installed where servprof is built, so the sets are
checked by reading: every entry of each set (sets/*.yaml) must resolve in
every source of its manifest (sets/*.json, made by
servprof/hooks/tools/manifest.py) that its version range admits — module,
class, function, and every parameter its expressions name. The check
itself must catch a renamed method and a renamed parameter (it is run on a
doctored manifest). Then each set is bound for real, against stand-in
modules generated from the manifest (the same classes, functions and
signatures, with a dist-info saying the framework's version): `hooks
check` must bind every entry; and `builtin:` picks no set, saying why,
when the framework is not installed. Last, the wheel: it carries the sets,
the bootstrap and the entry points, and installed into a venv its
servprof-hooks.pth makes SERVPROF_HOOKS work for a plain `python prog.py`.
"""

import copy
import json
import os
import sys
import unittest

import hooklib as H
from hooklib import T

H.need("yaml")

SETS = os.path.join(T.PYDIR, "servprof", "hooks", "sets")
sys.path.insert(0, os.path.join(T.PYDIR, "servprof", "hooks", "tools"))
import manifest  # noqa: E402

from servprof.hooks import builtin, spec  # noqa: E402

PAIRS = [("vllm_v1.yaml", "vllm_v1.json", "vllm", "0.10.1"),
         ("sglang.yaml", "sglang.json", "sglang", "0.5.6")]


def load(name):
    with open(os.path.join(SETS, name)) as f:
        return json.load(f)


def stand_in(folder, man, dist, ver):
    """Modules with the manifest's classes and signatures (first source)."""
    src = man["sources"][0]
    for mod, rec in src["modules"].items():
        parts = mod.split(".")
        for i in range(1, len(parts)):
            pkg = os.path.join(folder, *parts[:i])
            os.makedirs(pkg, exist_ok=True)
            init = os.path.join(pkg, "__init__.py")
            if not os.path.exists(init):
                H.write(pkg, "__init__.py", "")
        by_owner = {c: [] for c in rec["classes"]}
        by_owner[""] = []
        for q, f in sorted(rec["functions"].items()):
            owner, _, name = q.rpartition(".")
            ps = [p if p.startswith("*") or j == 0 else p + "=None"
                  for j, p in enumerate(f["params"])]
            kw = "async def" if f["kind"] in ("async", "asyncgen") else "def"
            body = "yield" if f["kind"] in ("generator", "asyncgen") else "return None"
            deco = {"staticmethod": "@staticmethod", "classmethod": "@classmethod",
                    "property": "@property"}.get(f["kind"])
            by_owner.setdefault(owner, []).append((deco, "%s %s(%s):" % (kw, name, ", ".join(ps)),
                                                   body))
        lines = []
        for owner in sorted(by_owner):
            ind = "    " if owner else ""
            if owner:
                lines.append("class %s:" % owner.split(".")[-1])
                lines.append("    pass")
            for deco, head, body in by_owner[owner]:
                if deco:
                    lines.append(ind + deco)
                lines += [ind + head, ind + "    " + body]
        H.write(folder, os.path.join(*parts) + ".py", "\n".join(lines) + "\n")
    di = os.path.join(folder, "%s-%s.dist-info" % (dist, ver))
    os.makedirs(di)
    H.write(di, "METADATA", "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (dist, ver))
    H.write(di, "top_level.txt", dist + "\n")


class Sets(unittest.TestCase):

    def test_every_entry_reads(self):
        for yml, _, _, _ in PAIRS:
            hooks = spec.load(os.path.join(SETS, yml))
            self.assertGreater(len(hooks), 5)
            for h in hooks:
                self.assertIsNone(h.error, h.where())
                self.assertEqual(h.warnings, [], h.where())

    def test_every_symbol_is_in_the_manifest(self):
        for yml, js, _, _ in PAIRS:
            man = load(js)
            self.assertTrue(man["sources"])
            self.assertEqual(manifest.check(os.path.join(SETS, yml), man), [], yml)

    def test_the_check_catches_renames(self):
        man = load("vllm_v1.json")
        gone = copy.deepcopy(man)
        fns = gone["sources"][0]["modules"]["vllm.v1.core.sched.scheduler"]["functions"]
        fns["Scheduler.schedule_step"] = fns.pop("Scheduler.schedule")
        fns["Scheduler.add_request"]["params"] = ["self", "req"]
        problems = manifest.check(os.path.join(SETS, "vllm_v1.yaml"), gone)
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(any("has no Scheduler.schedule in source" in p for p in problems))
        self.assertTrue(any("names 'request', which vllm.v1.core.sched.scheduler:Scheduler."
                            "add_request(self, req) does not have" in p for p in problems))
        del gone["sources"][0]["modules"]["vllm.v1.worker.gpu_worker"]
        self.assertTrue(any("module vllm.v1.worker.gpu_worker is not in source" in p
                            for p in manifest.check(os.path.join(SETS, "vllm_v1.yaml"), gone)))

    def test_sets_bind_on_stand_ins_of_their_sources(self):
        for yml, js, dist, ver in PAIRS:
            d = T.tmpdir(self)
            stand_in(d, load(js), dist, ver)
            p = T.run([H.PY, "-m", "servprof", "hooks", "check", "--set", dist], env=H.env(d),
                      cwd=d, check=False, timeout=60)
            n = len(spec.load(os.path.join(SETS, yml)))
            self.assertIn("%d of %d hooks bind" % (n, n), p.stdout, p.stdout + p.stderr)
            self.assertEqual(p.returncode, 0)

    def test_builtin_without_the_framework(self):
        files, notes = builtin.choose("vllm")
        if files:
            self.skipTest("vLLM is installed here")
        self.assertIn("vllm is not installed", notes[0])
        files, notes = builtin.choose("nosuch")
        self.assertEqual(files, [])
        self.assertIn("no such hook set", notes[0])
        self.assertEqual(builtin.choose("auto"), ([], []))

    def test_vllm_plugin_without_vllm(self):
        d = T.tmpdir(self)
        p = T.run([H.PY, "-c", "import servprof.hooks.vllm_plugin as v; v.register(); v.register(); "
                   "print('ok')"], env=H.env(d), cwd=d)
        self.assertEqual(p.stdout.strip(), "ok")
        self.assertEqual(p.stderr.count("vllm is not installed"), 1, p.stderr)

    def test_the_wheel_carries_the_hooks(self):
        import zipfile
        d = T.tmpdir(self)
        code = ("import sys; sys.path.insert(0, %r); import servprof_backend as b; "
                "print(b.build_wheel(%r))" % (os.path.join(T.PYDIR, "_backend"), d))
        name = T.run([H.PY, "-c", code], cwd=T.PYDIR).stdout.strip().splitlines()[-1]
        with zipfile.ZipFile(os.path.join(d, name)) as z:
            names = set(z.namelist())
            eps = z.read(next(n for n in names if n.endswith("/entry_points.txt"))).decode()
            pth = z.read("servprof-hooks.pth").decode()
        for f in ("servprof/hooks/sets/vllm_v1.yaml", "servprof/hooks/sets/vllm_v1.json",
                  "servprof/hooks/sets/sglang.yaml", "servprof/hooks/sets/sglang.json",
                  "servprof/hooks/tools/manifest.py", "servprof/_bootstrap/sitecustomize.py",
                  "servprof/hooks/wrap.py", "servprof/_run.py"):
            self.assertIn(f, names)
        self.assertIn("servprof-run = servprof._run:console_run", eps)
        self.assertIn("[vllm.general_plugins]\nservprof = servprof.hooks.vllm_plugin:register", eps)
        self.assertIn("SERVPROF_HOOKS", pth)
        self.assertTrue(pth.startswith("import "), pth)  # site.py runs only lines starting so

    def test_installed_wheel_honours_servprof_hooks(self):
        # The wheel's servprof-hooks.pth: a program started by plain python
        # in the environment, with only SERVPROF_HOOKS set, is hooked.
        try:
            import venv  # noqa: F401
            import ensurepip  # noqa: F401
        except ImportError as e:
            self.skipTest("python3-venv is needed: %s" % e)
        d = T.tmpdir(self)
        code = ("import sys; sys.path.insert(0, %r); import servprof_backend as b; "
                "print(b.build_wheel(%r))" % (os.path.join(T.PYDIR, "_backend"), d))
        whl = T.run([H.PY, "-c", code], cwd=T.PYDIR).stdout.strip().splitlines()[-1]
        env = os.path.join(d, "venv")
        T.run([H.PY, "-m", "venv", "--system-site-packages", env], timeout=120)
        py = os.path.join(env, "bin", "python")
        T.run([py, "-m", "pip", "install", "--no-index", "-q", os.path.join(d, whl)], timeout=240)
        H.write(d, "target_mod.py", "def work(x):\n    return x + 1\n")
        # JSON: the venv need not have PyYAML.
        hooks = H.write(d, "h.json", '[{"symbol": "target_mod:work", "name": "viaPth"}]')
        H.write(d, "prog.py", "import target_mod\nprint(target_mod.work(1))\n")
        cfg = T.make_config(d, enable=1)
        p = T.run([py, os.path.join(d, "prog.py")], cwd=d, env=dict(
            SERVPROF_HOOKS=hooks, SERVICE_PROF_CONFIG_PATH=cfg, PYTHONPATH=d), timeout=60)
        self.assertEqual(p.stdout.strip(), "2")
        self.assertIn("h.json: 1 hook:", p.stderr)
        self.assertEqual([r["name"] for r in H.records(os.path.join(d, "prof"))], ["viaPth"])

    def test_vllm_plugin_entry_point_is_declared(self):
        with open(os.path.join(T.PYDIR, "pyproject.toml")) as f:
            text = f.read()
        self.assertIn('[project.entry-points."vllm.general_plugins"]', text)
        self.assertIn('servprof = "servprof.hooks.vllm_plugin:register"', text)


if __name__ == "__main__":
    H.main()
