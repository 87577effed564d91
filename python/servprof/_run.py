# SPDX-License-Identifier: Apache-2.0
"""`python -m servprof run` / `servprof-run`, and `python -m servprof hooks check`.

run: starts any program with servprof's hooks applied, the way
`opentelemetry-instrument` and `ddtrace-run` do:

    python -m servprof run [--hooks FILE]... [--set NAME]... [--quiet] -- python server.py ARGS

It adds the files to $SERVPROF_HOOKS (absolute paths, so a server that
changes folder still finds them), puts servprof/_bootstrap (a
sitecustomize, which finds the servprof package it sits in) first on
PYTHONPATH, and execs the command: every Python interpreter the command
starts installs the hooks before its own code runs. With no --hooks,
--set, $SERVPROF_HOOKS or $PROFILING_SYMBOLS_PATH, the shipped sets of the
installed frameworks are used (builtin:auto). Collection itself is the
usual servprof config ($SERVICE_PROF_CONFIG_PATH).

hooks check: prints, for every entry of the files, whether it binds in
this environment (or in the interpreter --python names) and why not,
importing the modules the hooks name and starting nothing else. Exit
status 0 when every entry binds, 1 when some do not, 2 on a usage error.
"""

import os
import subprocess
import sys

_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_BOOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")

RUN_USAGE = ("usage: python -m servprof run [--hooks FILE]... [--set vllm|sglang|auto]... "
             "[--quiet] -- COMMAND [ARGS...]\n")
CHECK_USAGE = "usage: python -m servprof hooks check FILE... [--set NAME]... [--python PY]\n"


def _pythonpath(env):
    # Only the bootstrap goes first: putting the package's folder (a whole
    # site-packages, for a wheel) before the standard library could shadow
    # it. The bootstrap finds the package itself (it sits inside it).
    parts = [_BOOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    seen, out = set(), []
    for p in parts:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return os.pathsep.join(out)


def _hook_args(args, usage, allow_python=False):
    files, python, quiet, rest = [], None, False, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest = args[i + 1:]
            break
        key, eq, val = a.partition("=")
        if key in ("--hooks", "--set", "--python") and not eq:
            if i + 1 >= len(args):
                raise SystemExit(usage + "%s needs a value\n" % key)
            val = args[i + 1]
            i += 1
        if key == "--hooks":
            files.append(os.path.abspath(val))
        elif key == "--set":
            files.append("builtin:" + val)
        elif key == "--python" and allow_python:
            python = val
        elif a == "--quiet":
            quiet = True
        elif a.startswith("-"):
            raise SystemExit(usage + "unknown option %s\n" % a)
        elif allow_python:
            files.append(os.path.abspath(a))
        else:
            rest = args[i:]
            break
        i += 1
    return files, python, quiet, rest


def run_main(args):
    try:
        files, _, quiet, cmd = _hook_args(list(args), RUN_USAGE)
    except SystemExit as e:
        sys.stderr.write(str(e))
        return 2
    if not cmd:
        sys.stderr.write(RUN_USAGE + "no command to run (put it after --)\n")
        return 2
    env = dict(os.environ)
    old = [p for p in env.get("SERVPROF_HOOKS", "").split(os.pathsep) if p]
    if not files and not old and not env.get("PROFILING_SYMBOLS_PATH"):
        files = ["builtin:auto"]
    env["SERVPROF_HOOKS"] = os.pathsep.join(old + files)
    env["PYTHONPATH"] = _pythonpath(env)
    if quiet:
        env["SERVPROF_HOOKS_QUIET"] = "1"
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        sys.stderr.write("servprof run: cannot run %s: %s\n" % (cmd[0], e.strerror or e))
        return 127


def console_run():
    """The `servprof-run` console command."""
    sys.exit(run_main(sys.argv[1:]))


def _print_table(rows, out):
    head = ("FILE", "ENTRY", "SYMBOL", "STATE", "DETAIL")
    rows = [(os.path.basename(f), str(i), s, st, d) for f, i, s, st, d in rows]
    w = [max(len(r[k]) for r in rows + [head]) for k in range(4)]
    for r in [head] + rows:
        out.write("  ".join(r[k].ljust(w[k]) for k in range(4)) + "  " + r[4] + "\n")


def hooks_main(args):
    if not args or args[0] != "check":
        sys.stderr.write(CHECK_USAGE)
        return 2
    try:
        files, python, _, _ = _hook_args(list(args[1:]), CHECK_USAGE, allow_python=True)
    except SystemExit as e:
        sys.stderr.write(str(e))
        return 2
    if not files:
        sys.stderr.write(CHECK_USAGE + "no hook file given\n")
        return 2
    if python and os.path.realpath(python) != os.path.realpath(sys.executable):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([p for p in env.get(
            "PYTHONPATH", "").split(os.pathsep) if p] + [_PKG_PARENT])  # last: shadows nothing
        cmd = [python, "-m", "servprof", "hooks", "check"]
        for f in files:
            cmd += ["--set", f[len("builtin:"):]] if f.startswith("builtin:") else [f]
        try:
            return subprocess.call(cmd, env=env)
        except OSError as e:
            sys.stderr.write("servprof hooks check: cannot run %s: %s\n" % (python, e.strerror or e))
            return 127
    os.environ["SERVPROF_HOOKS_QUIET"] = "1"
    from . import hooks
    reg = hooks.check(files)
    rows = reg.table()
    if not rows:
        sys.stdout.write("no hooks to check (the sets named are for frameworks not installed in "
                         "%s)\n" % sys.executable)
        return 1
    _print_table(rows, sys.stdout)
    bad = sum(1 for r in rows if r[3] != "bound")
    sys.stdout.write("%d of %d hooks bind with %s\n" % (len(rows) - bad, len(rows), sys.executable))
    return 1 if bad else 0
