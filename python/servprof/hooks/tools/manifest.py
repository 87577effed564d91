#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""manifest.py — the manifest of a framework's sources for a hook set, and
the check of a hook set against it.

Why: a framework renames and re-signs its functions with every release
(the reference's hooks broke for vLLM 0.12, 0.13, 0.14, 0.17 and SGLang
0.5.4 -> 0.5.6). servprof's shipped sets are written against the public
sources; this tool reads those sources — never importing them — and writes
what a hook needs to bind: per source (a checkout, or a git ref of a
mirror, labelled with the version it is), per module the hooks name,
every class with its bases and the attributes its methods set on self,
and every function with its kind
(function, async, generator, async generator, classmethod, staticmethod,
property) and parameter names. The check then resolves each entry of a set
in each source whose version its min/max_version admit — function,
parameters its expressions name, and the first attribute of `self.x` they
read (when the class's chain is in the file) — and names what
does not resolve — so a version that renames a symbol is found by reading,
not at a user's site.

    # make, from checkouts or folders of copied files (DIR=VERSION), a
    # folder of such folders named by version (--sources-dir), or refs of
    # one git mirror (--ref TAG, --ref SHA=VERSION, or a releases file):
    manifest.py make --set sets/vllm_v1.yaml --source ~/src/vllm=0.10.1 \\
        --git ~/mirrors/vllm.git --ref v0.9.2 --ref 1a2b3c=0.11.0 -o sets/vllm_v1.json
    manifest.py make --set sets/vllm_v1.yaml --git MIRROR \\
        --releases sets/vllm_v1.releases -o sets/vllm_v1.json
    # check:
    manifest.py check --set sets/vllm_v1.yaml --manifest sets/vllm_v1.json

A releases file says which commit of a mirror stands for which release,
one release a line: `VERSION WHERE [# how it was mapped]`, WHERE being a
ref (tag, sha) or a date YYYY-MM-DD — the newest commit of the mirror's
first-parent history (its main line) on or before that day. Dates are for
mirrors without tags (a fork's history): the main line on a release's day
is the release give or take the days between branch cut and tag, and the
manifest records the commit and its date so anyone can tell which it was.
Each line resolves alone, so one file may mix them (sglang.releases: bump
commits, then the commits release branches were cut at, then tags).

Module files are looked for as MOD/PATH.py, MOD/PATH/__init__.py and the
same under python/ (SGLang keeps its package there). Design: ast only; a
class's methods are looked up through its bases by name within the same
source (how mixins are written), so an inherited method resolves.
"""

import argparse
import ast
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))

import warnings  # noqa: E402
with warnings.catch_warnings():  # the tool reads files: the C library is not needed
    warnings.simplefilter("ignore", RuntimeWarning)
    from servprof.hooks import expr as _expr, spec as _spec, version as _version  # noqa: E402


# ---------------------------------------------------------------- reading

def _kind(fn):
    deco = {getattr(d, "id", getattr(d, "attr", None)) for d in fn.decorator_list}
    if "staticmethod" in deco:
        return "staticmethod"
    if "classmethod" in deco:
        return "classmethod"
    if "property" in deco or "cached_property" in deco:
        return "property"
    gen = False
    for node in ast.walk(fn):
        if node is not fn and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            gen = True
    if isinstance(fn, ast.AsyncFunctionDef):
        return "asyncgen" if gen else "async"
    return "generator" if gen else "function"


def _params(fn):
    a = fn.args
    out = [p.arg for p in getattr(a, "posonlyargs", [])] + [p.arg for p in a.args]
    if a.vararg:
        out.append("*" + a.vararg.arg)
    out += [p.arg for p in a.kwonlyargs]
    if a.kwarg:
        out.append("**" + a.kwarg.arg)
    return out


def _self_attrs(cls):
    """The attributes a class's methods assign on self (self.x = ...,
    self.a, self.b = ..., self.x: T = ..., self.x += ...) and its class-level
    names: what an expression `self.x` can read."""
    names = set()

    def targets(t):
        if isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Starred):
            targets(t.value)
        elif (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
              and t.value.id == "self"):
            names.add(t.attr)
    for node in cls.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign):
                    for t in sub.targets:
                        targets(t)
                elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
                    targets(sub.target)
    return sorted(names)


def _walk(body, prefix, out, classes):
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[prefix + node.name] = {"kind": _kind(node), "params": _params(node)}
        elif isinstance(node, ast.ClassDef):
            q = prefix + node.name
            classes[q] = {"bases": [ast.unparse(b) if hasattr(ast, "unparse") else "?"
                                    for b in node.bases],
                          "attrs": _self_attrs(node)}
            _walk(node.body, q + ".", out, classes)


def read_module(text):
    """{"functions": {qualname: {...}}, "classes": {qualname: {...}}} of a
    module's source text."""
    tree = ast.parse(text)
    funcs, classes = {}, {}
    _walk(tree.body, "", funcs, classes)
    return {"functions": funcs, "classes": classes}


def _candidates(module):
    p = module.replace(".", "/")
    return [p + ".py", p + "/__init__.py", "python/" + p + ".py", "python/" + p + "/__init__.py"]


def _wanted(sets):
    """{module: set of qualified names the hooks reach} ("Class.method",
    "function")."""
    want = {}
    for path in sets:
        for h in _spec.load(path):
            if h.error is None and not h.pattern:
                want.setdefault(h.module, set()).add(".".join(h.qual))
    return want


def trim(rec, quals):
    """Only what the check reads of a module record: the functions the
    hooks name, each looked for in its class and that class's bases found
    in the same module (by name), and those classes' bases and attributes.
    Whole modules would make the shipped manifests megabytes (SGLang's
    Scheduler alone has hundreds of methods) for nothing a check reads."""
    funcs, classes = {}, {}
    for q in quals:
        if q in rec["functions"] and "." not in q:
            funcs[q] = rec["functions"][q]
            continue
        cls, _, name = q.rpartition(".")
        todo = [cls]
        while todo:
            c = todo.pop(0)
            if c in classes or c not in rec["classes"]:
                continue
            classes[c] = rec["classes"][c]
            if c + "." + name in rec["functions"]:
                funcs[c + "." + name] = rec["functions"][c + "." + name]
            todo += [b.split(".")[-1].split("[")[0] for b in rec["classes"][c]["bases"]]
        for c in list(classes):  # a method found in a base visited for another hook
            if c + "." + name in rec["functions"]:
                funcs[c + "." + name] = rec["functions"][c + "." + name]
    return {"functions": funcs, "classes": classes}


def _modules_of(sets):
    mods = set()
    for path in sets:
        for h in _spec.load(path):
            if h.error is None and not h.pattern:
                mods.add(h.module)
    return sorted(mods)


def read_releases(path):
    """[(version, where, why)] of a releases file (see the header)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            body, _, why = line.partition("#")
            parts = body.split()
            if not parts:
                continue
            if len(parts) != 2:
                raise SystemExit("%s:%d: expected 'VERSION WHERE [# why]', got %r"
                                 % (path, n, line.strip()))
            try:
                _version.parse(parts[0])
            except ValueError as e:
                raise SystemExit("%s:%d: %s" % (path, n, e))
            out.append((parts[0], parts[1], why.strip()))
    return out


def _git(git, *args):
    p = subprocess.run(["git", "-C", git] + list(args), capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def resolve_ref(git, where):
    """(sha, commit date) of a ref or a YYYY-MM-DD day of a mirror's main
    line; SystemExit naming what did not resolve."""
    if re.match(r"^\d{4}-\d{2}-\d{2}$", where):
        sha = _git(git, "rev-list", "-1", "--first-parent", "--before=%s 23:59:59 +0000" % where,
                   "HEAD")
    else:
        sha = _git(git, "rev-parse", "--verify", where + "^{commit}")
    if not sha:
        raise SystemExit("%s: no commit for %r in %s" % ("manifest.py", where, git))
    return sha, _git(git, "show", "-s", "--format=%cs", sha)


def make(sets, dirs, git, refs, note=None, sources_dir=None, releases=None, full=False):
    """The manifest dict. dirs: ["DIR=LABEL"] (checkouts, or folders of
    copied files with the same relative paths); sources_dir: a folder of
    such folders, each named by its version; git + refs: a mirror's refs
    ("TAG" or "REF=VERSION"); releases: [(version, where, why)] of git."""
    mods = _modules_of(sets)
    want = _wanted(sets)
    sources = []

    def one(label, read, extra=None):
        entry = {"label": label, "version": label.split("@")[0], "modules": {}}
        entry.update(extra or {})
        for m in mods:
            for rel in _candidates(m):
                text = read(rel)
                if text is not None:
                    rec = read_module(text)
                    if not full:
                        rec = trim(rec, want.get(m, ()))
                    rec["file"] = rel
                    entry["modules"][m] = rec
                    break
        sources.append(entry)

    def from_dir(path, label):
        def read(rel):
            try:
                with open(os.path.join(path, rel), encoding="utf-8") as f:
                    return f.read()
            except OSError:
                return None
        one(label, read)

    def from_git(sha, label, extra):
        def read(rel):
            p = subprocess.run(["git", "-C", git, "show", "%s:%s" % (sha, rel)],
                               capture_output=True, text=True)
            return p.stdout if p.returncode == 0 else None
        one(label, read, extra)

    for d in dirs:
        path, _, label = d.partition("=")
        from_dir(path, label or os.path.basename(os.path.abspath(path)))
    if sources_dir:
        names = [n for n in os.listdir(sources_dir) if os.path.isdir(os.path.join(sources_dir, n))]
        for n in sorted(names, key=lambda n: _version.parse(n)):
            from_dir(os.path.join(sources_dir, n), n)
    for ref in refs:
        where, _, label = ref.partition("=")
        sha, day = resolve_ref(git, where)
        from_git(sha, label or where.lstrip("v"), {"commit": sha, "date": day, "ref": where})
    for ver, where, why in releases or []:
        sha, day = resolve_ref(git, where)
        extra = {"commit": sha, "date": day, "ref": where}
        if why:
            extra["mapped"] = why
        from_git(sha, ver, extra)
    out = {"sets": [os.path.basename(s) for s in sets], "sources": sources}
    if note:
        out["note"] = note
    return out


# ---------------------------------------------------------------- checking

def _resolve(mod, qual):
    """The function record of qual ("Class.method" or "function") in a
    manifest module, following bases by name; None when absent."""
    funcs, classes = mod["functions"], mod["classes"]
    if qual in funcs:
        return funcs[qual]
    cls, _, name = qual.rpartition(".")
    seen = set()
    todo = [cls]
    while todo:
        c = todo.pop(0)
        if c in seen or c not in classes:
            continue
        seen.add(c)
        if c + "." + name in funcs:
            return funcs[c + "." + name]
        todo += [b.split(".")[-1].split("[")[0] for b in classes[c]["bases"]]
    return None


def _self_attr(mod, cls, name):
    """(found, elsewhere): found is True when class cls of a manifest module
    (or a base of it in the same module) sets attribute `name` on self or
    defines it; elsewhere lists the bases defined in other files, not read.
    Those are assumed to add nothing: a false alarm is seen when the set is
    checked and can be answered, a silent miss is found at a user's site.
    found is None when the manifest has no attributes recorded."""
    funcs, classes = mod["functions"], mod["classes"]
    seen, todo, elsewhere = set(), [cls], []
    while todo:
        c = todo.pop(0)
        if c in seen:
            continue
        seen.add(c)
        if c not in classes:
            if c not in ("object", "ABC", "Generic", "Protocol"):
                elsewhere.append(c)
            continue
        if "attrs" not in classes[c]:
            return None, elsewhere
        if name in classes[c]["attrs"] or c + "." + name in funcs:
            return True, elsewhere
        todo += [b.split(".")[-1].split("[")[0] for b in classes[c]["bases"]]
    return False, elsewhere


def _self_reads(node, out):
    """The attribute names read directly off `self` in an expression tree."""
    if node[0] in ("attr", "method", "each") and node[1] == ("name", "self"):
        out.add(node[2])
    for x in node[1:]:
        if isinstance(x, tuple):
            _self_reads(x, out)
    return out


def _applies(hook, version):
    try:
        return _version.in_range(version, hook.min_version, hook.max_version)
    except ValueError:
        return True  # a source labelled with no version: every entry applies


def check(set_path, manifest):
    """Problems of one set against a manifest: [str] (empty: all resolve)."""
    problems = []
    hooks = _spec.load(set_path)
    for h in hooks:
        where = "%s entry %d (%s)" % (os.path.basename(set_path), h.index, h.symbol)
        if h.error:
            problems.append("%s: %s" % (where, h.error))
            continue
        if h.pattern:
            continue
        checked = 0
        for src in manifest["sources"]:
            if not _applies(h, src["version"]):
                continue
            checked += 1
            mod = src["modules"].get(h.module)
            if mod is None:
                problems.append("%s: module %s is not in source %s" % (where, h.module, src["label"]))
                continue
            rec = _resolve(mod, ".".join(h.qual))
            if rec is None:
                problems.append("%s: %s has no %s in source %s" % (
                    where, h.module, ".".join(h.qual), src["label"]))
                continue
            if rec["kind"] == "property":
                problems.append("%s: %s is a property in source %s" % (where, h.symbol, src["label"]))
                continue
            params = rec["params"]
            plain = [p for p in params if not p.startswith("*")]
            star = [p[1:] for p in params if p.startswith("*") and not p.startswith("**")]
            var_kw = any(p.startswith("**") for p in params)
            for what, e in h.exprs():
                for n in sorted(_expr.names(e.tree)):
                    if n in plain or n in star or var_kw:
                        continue
                    problems.append("%s: %s names %r, which %s%s does not have in source %s" % (
                        where, what, n, h.symbol, "(%s)" % ", ".join(params), src["label"]))
                if len(h.qual) > 1 and "self" in plain:
                    for an in sorted(_self_reads(e.tree, set())):
                        found, elsewhere = _self_attr(mod, ".".join(h.qual[:-1]), an)
                        if found is False:
                            problems.append("%s: %s reads self.%s, which %s has not in source %s%s"
                                            % (where, what, an, ".".join(h.qual[:-1]),
                                               src["label"], " (bases not read: %s)"
                                               % ", ".join(elsewhere) if elsewhere else ""))
        if checked == 0:
            problems.append("%s: no source in the manifest is in its version range" % where)
    return problems


def dumps(m):
    """The manifest as JSON text, one line per function (lists of strings
    on one line), so a diff between two makes reads as the signatures that
    changed."""
    text = json.dumps(m, indent=1, sort_keys=True)
    text = re.sub(r"\[\s*((?:\"[^\"\n]*\",?\s*)*)\]",
                  lambda g: "[" + ", ".join(x.strip().rstrip(",") for x in
                                            g.group(1).split("\n") if x.strip()) + "]", text)
    text = re.sub(r'\{\s*"kind": ("[a-z]+"),\s*"params": (\[[^\]\n]*\])\s*\}',
                  r'{"kind": \1, "params": \2}', text)
    return text + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description="Make or check a hook set's source manifest.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("--set", action="append", required=True)
    mk.add_argument("--source", action="append", default=[], help="DIR=VERSION (a checkout)")
    mk.add_argument("--git", help="a git mirror of the framework")
    mk.add_argument("--sources-dir", help="a folder of folders of copied files, one per version")
    mk.add_argument("--ref", action="append", default=[],
                    help="a ref of --git: TAG (v0.9.2) or REF=VERSION (a sha, a day YYYY-MM-DD)")
    mk.add_argument("--releases", help="a releases file: VERSION WHERE lines for --git")
    mk.add_argument("--full", action="store_true",
                    help="keep every class and function of each module, not only those the "
                    "set names (and their bases)")
    mk.add_argument("--note", help="where the sources came from (kept in the manifest)")
    mk.add_argument("-o", "--output", required=True)
    ck = sub.add_parser("check")
    ck.add_argument("--set", required=True)
    ck.add_argument("--manifest", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "make":
        if (a.ref or a.releases) and not a.git:
            ap.error("--ref and --releases need --git")
        rel = read_releases(a.releases) if a.releases else None
        m = make(a.set, a.source, a.git, a.ref, a.note, a.sources_dir, rel, a.full)
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(dumps(m))
        for s in m["sources"]:
            print("%s%s: %d of %d modules found" % (
                s["label"], " (%s %s)" % (s["commit"][:10], s["date"]) if "commit" in s else "",
                len(s["modules"]), len(_modules_of(a.set))))
        return 0
    with open(a.manifest, encoding="utf-8") as f:
        m = json.load(f)
    problems = check(a.set, m)
    for p in problems:
        print(p)
    print("%s: %d problem%s" % (os.path.basename(a.set), len(problems), "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
