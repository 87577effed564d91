# SPDX-License-Identifier: Apache-2.0
"""servprof — profile a Python inference server with libservprof.

A thin ctypes layer over the C library (standard library only). The
library is loaded when this package is imported; see _lib.py for where it
is looked for. When it cannot be found, importing still works: one
RuntimeWarning names every place tried, recording does nothing, and the
control functions (start, stop, init, load_library ...) raise
LibraryNotFoundError — unless the config file named by
SERVICE_PROF_CONFIG_PATH asks for collection ("enable": 1): then the import
itself raises LibraryNotFoundError, since the user asked for records that
would silently never be written.

`python -m servprof` (and the `servprof` command a wheel installs) runs the
C tool: the same verbs (parse, config, enable, disable, stress ...).

    import servprof
    from servprof import Profiler, Level

    Profiler(Level.INFO).domain("Request").res(rid).event("httpReq")

    with servprof.span("forward", domain="Execute", rid=batch_rids):
        run_model()

    @servprof.traced(domain="Execute")
    async def sample(batch): ...

Collection is switched on and off by the JSON file named by
SERVICE_PROF_CONFIG_PATH (see docs/config.md), or by servprof.start() /
servprof.stop(). Full guide: docs/python.md.
"""

from ._lib import LibraryNotFoundError
from ._levels import Level
from ._core import try_load as _try_load
from ._profiler import Profiler
from ._span import span, traced, event, Span
from ._control import (
    ServprofError, init, shutdown, start, stop, is_enabled, step, poll, session_dir,
    store_path, set_process_name, set_thread_name, meta, add_meta_info, link,
    trace_context, trace_end, trace_outgoing, now_ns, stats, library_path, load_library,
    install_exit_hooks as _install_exit_hooks)

def _read_version() -> str:
    """servprof/_version.py in a built wheel; in a source checkout, the
    project(servprof VERSION ...) line of the top-level CMakeLists.txt (the
    one place the version is written)."""
    try:
        from ._version import __version__ as v
        return v
    except ImportError:
        import os
        import re
        top = os.path.join(os.path.dirname(__file__), "..", "..", "CMakeLists.txt")
        try:
            with open(top, encoding="utf-8") as f:
                m = re.search(r"project\(servprof VERSION ([0-9.]+)", f.read())
            return m.group(1) if m else "0+unknown"
        except OSError:
            return "0+unknown"


__version__ = _read_version()


__all__ = [
    "Level", "Profiler", "span", "Span", "traced", "event", "link", "step", "poll", "init", "shutdown",
    "start", "stop", "is_enabled", "session_dir", "store_path", "set_process_name",
    "set_thread_name", "meta", "add_meta_info", "now_ns", "stats", "library_path",
    "load_library", "ServprofError", "LibraryNotFoundError", "trace_context", "trace_end",
    "trace_outgoing",
]

def _cli_verb() -> bool:
    """True while `python -m servprof VERB ...` imports this package: every
    verb either runs the C tool (__main__.py execs it) or is the binding's
    own `run` (which execs the server, and the server loads the library
    itself) or `hooks check` (which records nothing), so none loads the
    library or warns about it. runpy keeps sys.argv[0] == "-m" while it
    imports the package; sys.orig_argv (Python >= 3.10) tells `-m servprof`
    from `-m servprof.submodule`, which imports the package as a library.
    The console command a wheel installs (named servprof) is the same."""
    import os
    import sys
    if sys.argv and os.path.basename(sys.argv[0]) == "servprof":
        return True
    if not sys.argv or sys.argv[0] != "-m":
        return False
    orig = getattr(sys, "orig_argv", None)
    if orig and "-m" in orig:
        i = orig.index("-m")
        return i + 1 < len(orig) and orig[i + 1] == "servprof"
    return len(sys.argv) > 1 and sys.argv[1] in ("run", "hooks")


if not _cli_verb():
    _try_load()
_install_exit_hooks()
