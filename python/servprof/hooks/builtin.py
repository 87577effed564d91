# SPDX-License-Identifier: Apache-2.0
"""Choosing a shipped hook set by the installed framework's version.

Each set is a hook file in sets/ written against the framework's public
sources for a range of versions, with a manifest beside it (sets/*.json,
made by tools/make_manifest.py) of the symbols it was checked against.
They are checked against sources, not run: docs/hooks.md.

Design: a table, newest range first; ``builtin:NAME`` picks the first row
of that framework whose range holds the installed version, and says so.
``builtin:auto`` does that for every framework that is installed and
nothing (quietly) for the others.
"""

import os

from . import version as _version

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sets")

# (name, distribution, min_version, max_version or None, file)
SETS = [
    ("vllm", "vllm", "0.9.0", None, "vllm_v1.yaml"),
    ("sglang", "sglang", "0.4.6", None, "sglang.yaml"),
]


def path(file):
    return os.path.join(HERE, file)


def installed_version(dist):
    import importlib.metadata as md
    try:
        return md.version(dist)
    except Exception:
        return None


def choose(name):
    """([hook file paths], [lines to say]) for builtin:NAME."""
    names = sorted({s[0] for s in SETS})
    if name != "auto" and name not in names:
        return [], ["builtin:%s: no such hook set (known: %s, auto)" % (name, ", ".join(names))]
    files, notes = [], []
    for want in (names if name == "auto" else [name]):
        rows = [s for s in SETS if s[0] == want]
        v = installed_version(rows[0][1])
        if v is None:
            if name != "auto":
                notes.append("builtin:%s: %s is not installed; no hooks from this set"
                             % (want, rows[0][1]))
            continue
        for _, dist, lo, hi, f in rows:
            try:
                ok = _version.in_range(v, lo, hi)
            except ValueError:
                ok = False
            if ok:
                files.append(path(f))
                notes.append("builtin:%s: %s %s: using %s" % (want, dist, v, f))
                break
        else:
            notes.append("builtin:%s: no hook set for %s %s (sets cover: %s)" % (
                want, rows[0][1], v, ", ".join("%s..%s" % (r[2], r[3] or "") for r in rows)))
    return files, notes
