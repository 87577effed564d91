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
signatures, with a dist-info saying the framework's version), for the
oldest, a middle and the newest release of its manifest: `hooks check` must
bind every entry whose range admits that release and say "version outside
range" of the others; and `builtin:` picks no set, saying why, when the
framework is not installed. The manifests themselves must be per release
(one source per release, each with the commit it was read at), and
manifest.py must make them from a git mirror's refs and days (a releases
file) and from folders of copied files — shown on a small git repository
made by the test, whose second "release" renames a parameter. Last, the wheel: it carries the sets,
the bootstrap and the entry points, and installed into a venv its
servprof-hooks.pth makes SERVPROF_HOOKS work for a plain `python prog.py`.
"""

import copy
import json
import os
import shutil
import subprocess
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
MANIFEST = os.path.join(T.PYDIR, "servprof", "hooks", "tools", "manifest.py")


def load(name):
    with open(os.path.join(SETS, name)) as f:
        return json.load(f)


def sglang_stand_in(d, version, scheduler_py, prog_py):
    """An installed "sglang" of version in folder d: the package path of
    its scheduler module (scheduler_py), its dist-info, and prog.py, run
    under `servprof run --set sglang`. Returns the finished process."""
    pkg = os.path.join(d, "sglang", "srt", "managers")
    os.makedirs(pkg)
    for p in ("sglang", "sglang/srt", "sglang/srt/managers"):
        H.write(os.path.join(d, p), "__init__.py", "")
    H.write(pkg, "scheduler.py", scheduler_py)
    di = os.path.join(d, "sglang-%s.dist-info" % version)
    os.makedirs(di)
    H.write(di, "METADATA", "Metadata-Version: 2.1\nName: sglang\nVersion: %s\n" % version)
    H.write(d, "prog.py", prog_py)
    cfg = T.make_config(d, enable=1)
    return T.run([H.PY, "-m", "servprof", "run", "--set", "sglang", "--", H.PY,
                  os.path.join(d, "prog.py")], env=H.env(d, cfg), cwd=d, timeout=60)


def stand_in(folder, man, dist, ver):
    """Modules with the classes and signatures of the manifest's source for
    release ver, and a dist-info saying ver."""
    src = next(s for s in man["sources"] if s["version"] == ver)
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

    def test_the_check_catches_a_renamed_self_attribute(self):
        # Expressions read self.waiting / self.kv_cache_manager: a release
        # that renames the attribute is found by reading too.
        man = copy.deepcopy(load("vllm_v1.json"))
        cls = man["sources"][-1]["modules"]["vllm.v1.core.sched.scheduler"]["classes"]["Scheduler"]
        cls["attrs"] = [a for a in cls["attrs"] if a != "waiting"] + ["waiting_queue"]
        problems = manifest.check(os.path.join(SETS, "vllm_v1.yaml"), man)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("reads self.waiting, which Scheduler has not in source %s"
                      % man["sources"][-1]["label"], problems[0])

    def test_a_planted_rename_in_a_copy_of_a_set_fails(self):
        # The set as shipped, with one symbol renamed: every release of the
        # manifest in its range says so, and the command exits 1.
        d = T.tmpdir(self)
        with open(os.path.join(SETS, "sglang.yaml")) as f:
            text = f.read()
        self.assertIn("Scheduler.run_batch\n", text)
        bad = H.write(d, "sglang.yaml", text.replace("Scheduler.run_batch\n",
                                                     "Scheduler.run_batch_v2\n"))
        p = T.run([H.PY, MANIFEST, "check", "--set", bad,
                   "--manifest", os.path.join(SETS, "sglang.json")], check=False, cwd=d)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        n = len(load("sglang.json")["sources"])
        self.assertEqual(p.stdout.count("has no Scheduler.run_batch_v2 in source"), n, p.stdout)
        self.assertIn("sglang.yaml: %d problems" % n, p.stdout)

    def test_sglang_batch_schedule_follows_the_plan_shape(self):
        # From 0.5.16 Scheduler.get_next_batch_to_run(running_batch,
        # last_batch) returns a NextBatchPlan, not the batch: the check reads
        # no return types, so this pins the one thing it can see of the
        # change, the signature. In every release exactly one BatchSchedule
        # entry applies, and it reads the plan's batch_to_run exactly where
        # the method takes running_batch (every expression of it, or none).
        from servprof.hooks import version
        hooks = [h for h in spec.load(os.path.join(SETS, "sglang.yaml"))
                 if h.name == "BatchSchedule"]
        self.assertEqual(len(hooks), 2, [h.symbol for h in hooks])
        planned = 0
        for src in load("sglang.json")["sources"]:
            mod = src["modules"]["sglang.srt.managers.scheduler"]
            params = mod["functions"]["Scheduler.get_next_batch_to_run"]["params"]
            on = [h for h in hooks
                  if version.in_range(src["version"], h.min_version, h.max_version)]
            self.assertEqual(len(on), 1, src["label"])
            reads_plan = {"batch_to_run" in e.text for _, e in on[0].exprs()}
            self.assertEqual(reads_plan, {"running_batch" in params}, (src["label"], params))
            planned += "running_batch" in params
        self.assertGreater(planned, 0)

    def test_sglang_batch_schedule_on_both_shapes(self):
        # Run, not read: a stand-in Scheduler whose get_next_batch_to_run
        # returns the batch (0.5.15.post1) or a NextBatchPlan holding it
        # (0.5.18, called with keywords, under a functools.wraps decorator as
        # SGLang's scheduler_nvtx_method is): each release's entry records
        # the batch's rid list, and a step with nothing to run records none
        # and no error.
        for ver, plan in (("0.5.18", True), ("0.5.15.post1", False)):
            d = T.tmpdir(self)
            scheduler = """
import functools
class Req:
    def __init__(self, rid):
        self.rid = rid
class ScheduleBatch:
    forward_mode = "EXTEND"
    def __init__(self, n):
        self.reqs = [Req("r%%d" %% i) for i in range(n)]
class NextBatchPlan:
    def __init__(self, batch_to_run, running_batch):
        self.batch_to_run, self.running_batch = batch_to_run, running_batch
def nvtx(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper
class Scheduler:
    left = 1
    @nvtx
    def get_next_batch_to_run(self%s):
        batch = ScheduleBatch(2) if self.left else None
        self.left -= 1
        return %s
""" % ((", running_batch, last_batch", "NextBatchPlan(batch, running_batch)") if plan
                else ("", "batch"))
            call = ("s.get_next_batch_to_run(running_batch=None, last_batch=None)" if plan
                    else "s.get_next_batch_to_run()")
            p = sglang_stand_in(d, ver, scheduler, "from sglang.srt.managers.scheduler import Scheduler\n"
                                "s = Scheduler()\n%s\n%s\n" % (call, call))
            bs = [r["a"] for r in H.records(os.path.join(d, "prof")) if r["name"] == "BatchSchedule"]
            self.assertEqual(len(bs), 2, (ver, p.stderr))
            self.assertEqual(bs[0].get("rid"), [{"rid": "r0"}, {"rid": "r1"}], (ver, bs, p.stderr))
            self.assertEqual((bs[0].get("batch_size"), bs[0].get("forward_mode")), (2, "EXTEND"))
            self.assertNotIn("rid", bs[1], (ver, bs))
            self.assertNotIn("raised", p.stderr)
            # The other release's entry: out of range, said so.
            self.assertEqual(p.stderr.count("get_next_batch_to_run): not bound: version outside "
                                            "range"), 1, p.stderr)

    def test_manifests_are_per_release(self):
        for _, js, _, _ in PAIRS:
            man = load(js)
            versions = [s["version"] for s in man["sources"]]
            self.assertGreaterEqual(len(versions), 10, js)
            self.assertEqual(len(set(versions)), len(versions), js)
            for s in man["sources"]:
                self.assertRegex(s.get("commit", ""), r"^[0-9a-f]{40}$", (js, s["label"]))
                self.assertRegex(s.get("date", ""), r"^\d{4}-\d{2}-\d{2}$", (js, s["label"]))
        self.assertEqual(load("vllm_v1.json")["sources"][0]["version"], "0.9.0")
        self.assertEqual(load("sglang.json")["sources"][0]["version"], "0.4.6")

    def test_sets_bind_on_stand_ins_of_their_sources(self):
        from servprof.hooks import version
        for yml, js, dist, _ in PAIRS:
            man = load(js)
            hooks = spec.load(os.path.join(SETS, yml))
            srcs = man["sources"]
            for src in (srcs[0], srcs[len(srcs) // 2], srcs[-1]):
                ver = src["version"]
                d = T.tmpdir(self)
                stand_in(d, man, dist, ver)
                p = T.run([H.PY, "-m", "servprof", "hooks", "check", "--set", dist],
                          env=H.env(d), cwd=d, check=False, timeout=60)
                k = sum(version.in_range(ver, h.min_version, h.max_version) for h in hooks)
                self.assertIn("%d of %d hooks bind" % (k, len(hooks)), p.stdout,
                              ver + "\n" + p.stdout + p.stderr)
                self.assertEqual(p.stdout.count("version outside range"), len(hooks) - k, p.stdout)

    def test_sglang_kv_status_reaches_kvcache_csv(self):
        # The SGLang set's KVCacheStatus, on a stand-in Scheduler with the
        # state the set reads (max_total_num_tokens, the allocator's
        # available_size(), the tree cache's evictable_size()): one event per
        # process_batch_result, which parse turns into kvcache.csv rows.
        d = T.tmpdir(self)
        scheduler = """
class Allocator:
    def __init__(self):
        self.free = 1000
    def available_size(self):
        return self.free
class RadixCache:
    def evictable_size(self):
        return 40
class Scheduler:
    def __init__(self):
        self.max_total_num_tokens = 1000
        self.token_to_kv_pool_allocator = Allocator()
        self.tree_cache = RadixCache()
    def process_batch_result(self, batch, result):
        self.token_to_kv_pool_allocator.free -= 100
        return None
"""
        p = sglang_stand_in(d, "0.5.6", scheduler, "from sglang.srt.managers.scheduler import Scheduler\n"
                            "s = Scheduler()\nfor _ in range(3):\n    s.process_batch_result(None, None)\n")
        self.assertIn("sglang.yaml", p.stderr)
        kv = [r for r in H.records(os.path.join(d, "prof")) if r["name"] == "KVCacheStatus"]
        self.assertEqual(len(kv), 3, p.stderr)
        self.assertEqual([r["a"].get("FreeBlocks=") for r in kv], [900, 800, 700], kv[0]["a"])
        self.assertEqual(kv[0]["a"].get("TotalBlocks="), 1000, kv[0]["a"])
        self.assertEqual(kv[0]["a"].get("EvictableBlocks="), 40, kv[0]["a"])
        out = os.path.join(d, "out")
        T.run([os.environ["SERVPROF_BIN"], "parse", "-i", os.path.join(d, "prof"), "-o", out],
              timeout=120)
        rows = T.read_csv(os.path.join(out, "kvcache.csv"))
        self.assertEqual(len(rows), 3, rows)
        self.assertEqual([(r["total_blocks"], r["free_blocks"], r["used_blocks"]) for r in rows],
                         [("1000", "900", "100"), ("1000", "800", "200"), ("1000", "700", "300")])
        self.assertEqual(float(rows[2]["kvcache_usage_rate"]), 0.3)

    def test_make_from_a_mirror_and_from_folders(self):
        if shutil.which("git") is None:
            self.skipTest("git is needed")
        d = T.tmpdir(self)
        git = os.path.join(d, "fw")
        os.makedirs(os.path.join(git, "fw"))
        genv = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                    GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")

        def commit(text, day):
            H.write(os.path.join(git, "fw"), "core.py", text)
            e = dict(genv, GIT_AUTHOR_DATE=day + "T12:00:00+0000",
                     GIT_COMMITTER_DATE=day + "T12:00:00+0000")
            for c in (["add", "-A"], ["commit", "-q", "-m", day]):
                subprocess.run(["git", "-C", git] + c, env=e, check=True)
        subprocess.run(["git", "init", "-q", git], check=True)
        commit("class Engine:\n    def step(self, batch):\n        self.queue = []\n", "2025-01-10")
        subprocess.run(["git", "-C", git, "tag", "v1.0"], check=True)
        commit("class Engine:\n    def step(self, work):\n        self.queue = []\n", "2025-02-10")
        hooks = H.write(d, "fw.yaml", '- {symbol: "fw.core:Engine.step", name: s, '
                        'attributes: {n: "batch | len", q: "self.queue | len"}, '
                        'max_version: "1.0"}\n'
                        '- {symbol: "fw.core:Engine.step", name: t, '
                        'attributes: {n: "work | len"}, min_version: "2.0"}\n')
        rel = H.write(d, "fw.releases", "# comment\n1.0 v1.0  # the tag\n"
                      "2.0 2025-02-11  # main that day\n")
        out = os.path.join(d, "m.json")
        p = T.run([H.PY, MANIFEST, "make", "--set", hooks, "--git", git, "--releases", rel,
                   "-o", out], cwd=d)
        self.assertIn("1.0 (", p.stdout)
        with open(out) as f:
            man = json.load(f)
        self.assertEqual([s["version"] for s in man["sources"]], ["1.0", "2.0"])
        self.assertEqual(man["sources"][1]["date"], "2025-02-10")
        self.assertEqual(man["sources"][1]["mapped"], "main that day")
        self.assertEqual(manifest.check(hooks, man), [])
        # A file whose earlier lines are commits (an abbreviated sha, as
        # sglang.releases has) and later ones days: each line resolves alone.
        sha1 = subprocess.run(["git", "-C", git, "rev-parse", "v1.0"], capture_output=True,
                              text=True, check=True).stdout.strip()
        mixed = H.write(d, "mixed.releases", "1.0 %s  # the bump\n2.0 2025-02-11\n" % sha1[:9])
        T.run([H.PY, MANIFEST, "make", "--set", hooks, "--git", git, "--releases", mixed,
               "-o", out], cwd=d)
        with open(out) as f:
            mixed_man = json.load(f)
        self.assertEqual([(s["version"], s["commit"], s["ref"]) for s in mixed_man["sources"]],
                         [("1.0", sha1, sha1[:9]), ("2.0", man["sources"][1]["commit"],
                                                    "2025-02-11")])
        self.assertEqual(mixed_man["sources"][0]["date"], "2025-01-10")
        self.assertEqual(manifest.check(hooks, mixed_man), [])
        # Without the ranges, each entry fails in the release it was not
        # written for.
        with open(hooks) as f:
            text = f.read()
        wide = H.write(d, "wide.yaml", text.replace('max_version: "1.0"', 'x: 1')
                       .replace('min_version: "2.0"', 'y: 1'))
        problems = manifest.check(wide, man)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("names 'batch', which fw.core:Engine.step(self, work) does not have in "
                      "source 2.0", problems[0])
        self.assertIn("names 'work'", problems[1])
        self.assertIn("source 1.0", problems[1])
        # Folders of copied files, one per release, named by version.
        for ver, ref in (("1.0", "v1.0"), ("2.0", "HEAD")):
            os.makedirs(os.path.join(d, "copies", ver, "fw"))
            H.write(os.path.join(d, "copies", ver, "fw"), "core.py", subprocess.run(
                ["git", "-C", git, "show", ref + ":fw/core.py"], capture_output=True,
                text=True, check=True).stdout)
        out2 = os.path.join(d, "m2.json")
        T.run([H.PY, MANIFEST, "make", "--set", hooks, "--sources-dir",
               os.path.join(d, "copies"), "-o", out2], cwd=d)
        with open(out2) as f:
            man2 = json.load(f)
        self.assertEqual([s["version"] for s in man2["sources"]], ["1.0", "2.0"])
        self.assertEqual(manifest.check(wide, man2), problems)
        # A bad releases file says which line is wrong.
        bad = H.write(d, "bad.releases", "1.0 v1.0\nnot-a-version 2025-02-11\n")
        p = T.run([H.PY, MANIFEST, "make", "--set", hooks, "--git", git, "--releases", bad,
                   "-o", out], cwd=d, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("bad.releases:2:", p.stderr)
        self.assertIn("'not-a-version' is not a version", p.stderr)

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
