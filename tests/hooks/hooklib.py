# SPDX-License-Identifier: Apache-2.0
"""hooklib.py — what the hook engine's tests share (on top of
tests/support/sp_testlib.py): running a program under `python -m servprof
run`, and reading the records of a folder of stores."""

import json
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


def run_wrapper_mode(scope, module, mod_text, hooks_text, driver_text, mode):
    """Runs a driver over a hooked module in one of the C wrapper's modes:
    c (compiled records), recc (the wrapper, Python expressions:
    SERVPROF_HOOKS_CEXPR=0), pure (no extension), leaks (c, the driver
    counting references). The driver is called as `driver HOOKS OUT
    calls|leaks` and writes its JSON result to OUT. Returns (that result,
    the records as (name, cat, args), the warnings of failing expressions
    with the folder left out), the three things the modes must agree on."""
    d = T.tmpdir(scope)
    write(d, module + ".py", mod_text)
    hooks = write(d, "hooks.yaml", hooks_text)
    drv = write(d, "driver.py", driver_text)
    cfg = T.make_config(d, enable=0)
    out = os.path.join(d, "out.json")
    extra = {"SERVPROF_HOOKS_PURE": "1" if mode == "pure" else "0",
             "SERVPROF_HOOKS_CEXPR": "0" if mode == "recc" else "1",
             "SERVPROF_HOOKS_QUIET": "1"}
    p = T.run([PY, drv, hooks, out, "leaks" if mode == "leaks" else "calls"],
              env=env(d, cfg, **extra), cwd=d, timeout=120)
    with open(out) as f:
        res = json.load(f)
    rows = [(r["name"], r["cat"], r["args"]) for r in records(os.path.join(d, "prof"))]
    warn = sorted(line.replace(d, "D") for line in p.stderr.splitlines()
                  if "raised" in line or "failed" in line)
    return res, rows, warn


main = unittest.main
