# SPDX-License-Identifier: Apache-2.0
"""Installs servprof's hooks at interpreter start-up, for programs started
by `python -m servprof run` (or with this folder on PYTHONPATH by hand).

Why a sitecustomize: Python imports the first `sitecustomize` on sys.path
after the path is set up and before the program's own code runs, in every
interpreter started with this PYTHONPATH — the server and every process it
spawns (multiprocessing "spawn", subprocess python). The hook files come
from $SERVPROF_HOOKS / $PROFILING_SYMBOLS_PATH (servprof.hooks.env_files).

It must stay invisible: any failure is one line on stderr, never an
exception; and a sitecustomize the environment had before (Debian ships
one) is still run — this one removes its folder from sys.path and imports
the next.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _install():
    try:
        try:
            import servprof.hooks
        except ImportError:
            # Not installed in this interpreter's environment: the copy this
            # bootstrap belongs to, searched last so that it shadows nothing.
            sys.path.append(os.path.dirname(os.path.dirname(_here)))
            import servprof.hooks
        servprof.hooks.install_from_env()
    except BaseException as e:  # never stop the program from starting
        try:
            sys.stderr.write("servprof hooks: WARNING: hooks not installed: %s: %s\n"
                             % (type(e).__name__, e))
        except Exception:
            pass


def _chain():
    """Runs the sitecustomize this one hides, if there is one."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    me = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401  the next one on the path
    except ImportError:
        if me is not None:
            sys.modules["sitecustomize"] = me
    except Exception as e:
        sys.stderr.write("servprof hooks: the environment's sitecustomize failed: %s: %s\n"
                         % (type(e).__name__, e))


_install()
_chain()
