# SPDX-License-Identifier: Apache-2.0
"""hooklib.py — what the hook engine's tests share (on top of
tests/support/sp_testlib.py): running a program under `python -m servprof
run`, and reading the records of a folder of stores."""

import os
import sys
import unittest

from support import sp_testlib as T

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable

try:
    import yaml  # noqa: F401
    NO_YAML = None
except ImportError as e:
    NO_YAML = str(e)


def need(*modules):
    """Exits 77 (ctest SKIP) naming the first missing module."""
    for m in modules:
        try:
            __import__(m)
        except ImportError as e:
            print("SKIP: %s is needed (scripts/install-deps.sh installs it): %s" % (m, e))
            sys.exit(77)


def env(folder, cfg=None, **extra):
    """The environment of a hooked child: the library, the config, the
    package under test on PYTHONPATH."""
    e = {"PYTHONPATH": os.pathsep.join([T.PYDIR, folder]), "PYTHONDONTWRITEBYTECODE": "1"}
    if cfg:
        e["SERVICE_PROF_CONFIG_PATH"] = cfg
    e.update(extra)
    return e


def run_cmd(hook_files, *cmd):
    """argv of `python -m servprof run --hooks F... -- cmd...`."""
    out = [PY, "-m", "servprof", "run"]
    for f in hook_files:
        out += ["--hooks", f]
    return out + ["--"] + list(cmd)


def records(prof):
    """Every slice row of every store under prof."""
    out = []
    for s in T.stores(prof):
        out += T.rows(s)
    return out


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


main = unittest.main
