# SPDX-License-Identifier: Apache-2.0
"""sp_testlib.py — what the Python binding's tests share.

Import it before servprof: it puts the source tree's python/ folder first
on sys.path, so the package under test is the one in this checkout.
"""

import csv
import glob
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

from support.configfile import make_config  # noqa: F401  (re-exported)

SOURCE = os.environ.get("SERVPROF_SOURCE") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("SERVPROF_BUILD", "")
PYDIR = os.path.join(SOURCE, "python")
TESTS = os.path.join(SOURCE, "tests")  # where `support` lives, for a child env that sets PYTHONPATH
SANITIZE = os.environ.get("SERVPROF_SANITIZE", "")
# Wall-clock bounds get 10x slack under sanitizers.
SLACK = 10 if SANITIZE else 1

if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)



def stores(folder):
    """Every raw store under folder, sorted."""
    return sorted(glob.glob(os.path.join(folder, "**", "ms_service_*.db"), recursive=True))


def store_pid(path):
    """The pid in a store's name: ms_service_<host>-<pid>.db."""
    return int(os.path.basename(path)[:-3].rsplit("-", 1)[1])


def _pairs(text):
    return json.loads(text, object_pairs_hook=lambda kv: [list(p) for p in kv])


def rows(store, table="slice"):
    """slice rows in id order as dicts; args parsed (key order kept, as a
    list of [key, value] pairs) and as a dict under 'a'."""
    db = sqlite3.connect("file:%s?mode=ro" % store, uri=True)
    db.row_factory = sqlite3.Row
    try:
        out = []
        for r in db.execute("select * from %s order by rowid" % table):
            d = dict(r)
            if table == "slice":
                d["pairs"] = _pairs(d["args"]) if d["args"] else []
                d["a"] = json.loads(d["args"]) if d["args"] else {}
            out.append(d)
        return out
    finally:
        db.close()


def meta(store):
    db = sqlite3.connect("file:%s?mode=ro" % store, uri=True)
    try:
        return {n: v for n, v in db.execute("select name, value from Meta")}
    finally:
        db.close()


def tmpdir(test, prefix="servprof-py-"):
    """A temporary folder removed when the test ends (kept with KEEP_TMP=1)."""
    d = tempfile.mkdtemp(prefix=prefix)
    if not os.environ.get("KEEP_TMP"):
        import shutil
        test.addCleanup(shutil.rmtree, d, True)
    return d


def run(args, env=None, timeout=60, check=True, cwd=None):
    """Runs a program; returns CompletedProcess (text). On failure with
    check, raises AssertionError showing its output."""
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(args, env=e, capture_output=True, text=True, timeout=timeout * SLACK,
                       cwd=cwd)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s"
                             % (args, p.returncode, p.stdout, p.stderr))
    return p


def read_csv(path):
    """A CSV report as a list of dicts (header = keys)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def trace_events(path):
    """The events of a Chrome trace file (object form or bare list)."""
    with open(path) as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d
