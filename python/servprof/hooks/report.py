# SPDX-License-Identifier: Apache-2.0
"""What the hook engine says, on stderr: one line per hook file at start
with how many hooks bound, one warning per hook that did not bind (and
why), one line the first time an expression fails at run time, and at exit
a count of every failing expression and the hooks whose module was never
imported.

Design: the reference's users lost hooks silently with every framework
release; here every hook ends in exactly one of three states — bound,
waiting for its module's import, not bound (with the reason) — and each
change away from "waiting" is said once. Lines start with
``servprof hooks:`` so they can be grepped out of a server's log.
SERVPROF_HOOKS_QUIET=1 keeps only the warnings.
"""

import os
import sys
import threading

_lock = threading.Lock()
_bindings = []   # every Binding with errors, for the exit summary


def _quiet():
    return os.environ.get("SERVPROF_HOOKS_QUIET", "") not in ("", "0")


def say(line, warning=False):
    if warning or not _quiet():
        try:
            sys.stderr.write("servprof hooks: %s%s\n" % ("WARNING: " if warning else "", line))
            sys.stderr.flush()
        except Exception:
            pass


def debug(line):
    """A line only for PROF_LOG_LEVEL=DEBUG (the library's own switch)."""
    if os.environ.get("PROF_LOG_LEVEL", "").upper() == "DEBUG":
        say(line)


def not_bound(hook, why):
    say("%s: not bound: %s" % (hook.where(), why), warning=True)


def runtime_error(binding, what, exc):
    with _lock:
        if binding not in _bindings:
            _bindings.append(binding)
    tail = "the call went on without it" if what == "handler" else "the value is left out"
    say("%s: %s of %s raised %s: %s (%s; counted, reported once)"
        % (binding.hook.where(), what, binding.target, type(exc).__name__, exc, tail), warning=True)


def exit_summary(registry):
    """At exit: failing expressions with their counts; hooks never bound."""
    with _lock:
        bs = list(_bindings)
    for bd in bs:
        for what, (n, first) in sorted(bd.errors.items()):
            say("%s: %s of %s failed %d time%s (first: %s)"
                % (bd.hook.where(), what, bd.target, n, "" if n == 1 else "s", first),
                warning=True)
    if registry is not None:
        for hook, why in registry.never_bound():
            say("%s: never bound: %s" % (hook.where(), why), warning=True)
