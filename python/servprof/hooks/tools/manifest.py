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
every class with its bases and every function with its kind
(function, async, generator, async generator, classmethod, staticmethod,
property) and parameter names. The check then resolves each entry of a set
in each source whose version its min/max_version admit, and names what
does not resolve — so a version that renames a symbol is found by reading,
not at a user's site.

    # make (from checkouts, or tags of one git mirror):
    manifest.py make --set sets/vllm_v1.yaml --source ~/src/vllm=0.10.1 \\
        --git ~/mirrors/vllm.git --ref v0.9.2 --ref v0.11.0 -o sets/vllm_v1.json
    # check:
    manifest.py check --set sets/vllm_v1.yaml --manifest sets/vllm_v1.json

Module files are looked for as MOD/PATH.py, MOD/PATH/__init__.py and the
same under python/ (SGLang keeps its package there). Design: ast only; a
class's methods are looked up through its bases by name within the same
source (how mixins are written), so an inherited method resolves.
"""

import argparse
import ast
import json
import os
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


def _walk(body, prefix, out, classes):
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[prefix + node.name] = {"kind": _kind(node), "params": _params(node)}
        elif isinstance(node, ast.ClassDef):
            q = prefix + node.name
            classes[q] = {"bases": [ast.unparse(b) if hasattr(ast, "unparse") else "?"
                                    for b in node.bases]}
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


def _modules_of(sets):
    mods = set()
    for path in sets:
        for h in _spec.load(path):
            if h.error is None and not h.pattern:
                mods.add(h.module)
    return sorted(mods)


def make(sets, dirs, git, refs, note=None):
    """The manifest dict. dirs: ["DIR=LABEL"]; git + refs: a mirror's refs."""
    mods = _modules_of(sets)
    sources = []

    def one(label, read):
        entry = {"label": label, "version": label.split("@")[0], "modules": {}}
        for m in mods:
            for rel in _candidates(m):
                text = read(rel)
                if text is not None:
                    rec = read_module(text)
                    rec["file"] = rel
                    entry["modules"][m] = rec
                    break
        sources.append(entry)

    for d in dirs:
        path, _, label = d.partition("=")

        def read(rel, path=path):
            try:
                with open(os.path.join(path, rel), encoding="utf-8") as f:
                    return f.read()
            except OSError:
                return None
        one(label or os.path.basename(os.path.abspath(path)), read)
    for ref in refs:
        def read(rel, ref=ref):
            p = subprocess.run(["git", "-C", git, "show", "%s:%s" % (ref, rel)],
                               capture_output=True, text=True)
            return p.stdout if p.returncode == 0 else None
        one(ref.lstrip("v"), read)
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
        if checked == 0:
            problems.append("%s: no source in the manifest is in its version range" % where)
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description="Make or check a hook set's source manifest.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("--set", action="append", required=True)
    mk.add_argument("--source", action="append", default=[], help="DIR=VERSION (a checkout)")
    mk.add_argument("--git", help="a git mirror of the framework")
    mk.add_argument("--ref", action="append", default=[], help="a tag of --git (v0.9.2)")
    mk.add_argument("--note", help="where the sources came from (kept in the manifest)")
    mk.add_argument("-o", "--output", required=True)
    ck = sub.add_parser("check")
    ck.add_argument("--set", required=True)
    ck.add_argument("--manifest", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "make":
        if a.ref and not a.git:
            ap.error("--ref needs --git")
        m = make(a.set, a.source, a.git, a.ref, a.note)
        with open(a.output, "w", encoding="utf-8") as f:
            json.dump(m, f, indent=1, sort_keys=True)
            f.write("\n")
        for s in m["sources"]:
            print("%s: %d of %d modules found" % (s["label"], len(s["modules"]),
                                                len(_modules_of(a.set))))
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
