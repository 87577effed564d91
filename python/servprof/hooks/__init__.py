# SPDX-License-Identifier: Apache-2.0
"""servprof.hooks — profile an unmodified Python program from hook files.

A hook file (the reference's YAML format, see spec.py and docs/hooks.md)
names functions to wrap and what to record around them. This package
reads such files, wraps the functions as their modules are imported
(bind.py) and records with the binding (wrap.py), so that a stock vLLM or
SGLang server writes servprof's vocabulary with no line changed.

    import servprof.hooks
    servprof.hooks.install(["my_hooks.yaml"])     # or from the environment:
    servprof.hooks.install_from_env()             # SERVPROF_HOOKS, PROFILING_SYMBOLS_PATH

Where hook files come from, in this order (all of them are used):
  1. the paths given to install();
  2. $SERVPROF_HOOKS: FILE[:FILE...] (os.pathsep), each a path or
     ``builtin:NAME`` (``builtin:vllm``, ``builtin:sglang``, ``builtin:auto``);
  3. $PROFILING_SYMBOLS_PATH: the reference's variable, one .yaml/.yml path.
The sets shipped in the package (sets/) are chosen by the installed
framework's version (sets.py). One registry per process: installing again
adds only files not yet installed.
"""

import atexit
import os
import threading

from . import bind, report, builtin as sets

__all__ = ["install", "install_from_env", "check", "env_files", "registry"]

_lock = threading.Lock()
_registry = None
_installed = set()   # real paths of files already in the registry
_said = set()        # builtin: notes already said


def registry():
    """This process's Registry, or None before install()."""
    return _registry


def env_files(environ=None):
    """The hook files the environment names, builtin: names expanded."""
    env = os.environ if environ is None else environ
    out = []
    parts = [p.strip() for p in (env.get("SERVPROF_HOOKS") or "").split(os.pathsep)]
    i = 0
    while i < len(parts):
        part = parts[i]
        # builtin:NAME holds the separator itself (":" on POSIX): rejoin it.
        if part == "builtin" and os.pathsep == ":" and i + 1 < len(parts):
            part = "builtin:" + parts[i + 1]
            i += 1
        if part:
            out.append(part)
        i += 1
    ref = (env.get("PROFILING_SYMBOLS_PATH") or "").strip()
    if ref:
        out.append(ref)
    return out


def _expand(paths):
    """Paths with builtin:NAME replaced by the shipped set for the installed
    framework; a name with no set for the installed version is said once."""
    out = []
    for p in paths:
        if p.startswith("builtin:"):
            files, notes = sets.choose(p[len("builtin:"):])
            for n in notes:
                if n not in _said:  # once per process, however often installed
                    _said.add(n)
                    report.say(n, warning=not files)
            out.extend(files)
        else:
            out.append(p)
    return out


def install(paths=(), say=True, with_env=True):
    """Reads the hook files (paths, then the environment's unless
    with_env=False), installs the import hook and binds what it can now.
    Never raises into the program: unreadable files are reported. Returns
    the Registry."""
    global _registry
    with _lock:
        files = _expand(list(paths) + (env_files() if with_env else []))
        first = _registry is None
        if first:
            _registry = bind.Registry()
            atexit.register(_at_exit)
        reg = _registry
        added = False
        for p in files:
            real = os.path.realpath(p)
            if real in _installed:
                continue
            _installed.add(real)
            reg.add_file(p)
            added = True
        if added or first:
            reg.install(say=False)
            if say and added:
                reg.say_files()
        return reg


def install_from_env(say=True):
    """install() from $SERVPROF_HOOKS / $PROFILING_SYMBOLS_PATH only; does
    nothing when neither is set."""
    if not env_files():
        return None
    return install((), say=say)


def check(paths, with_env=False):
    """For `servprof hooks check`: a fresh Registry with every named
    module imported (nothing else started). Returns it (see .table())."""
    reg = bind.Registry()
    reg.loud = False
    for p in _expand(list(paths) + (env_files() if with_env else [])):
        reg.add_file(p)
    reg.install(say=False)
    reg.import_all()
    reg.uninstall()
    return reg


def _at_exit():
    try:
        report.exit_summary(_registry)
    except Exception:
        pass
