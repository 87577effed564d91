"""servprof — profile a Python inference server with libservprof.

A thin ctypes layer over the C library (standard library only). The
library is loaded when this package is imported; see _lib.py for where it
is looked for. When it cannot be found, importing still works: one
RuntimeWarning names every place tried, recording does nothing, and the
control functions (start, stop, init, load_library ...) raise
LibraryNotFoundError.

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

import enum as _enum

from ._lib import LibraryNotFoundError
from ._core import try_load as _try_load
from ._profiler import Profiler
from ._span import span, traced, event, Span
from ._control import (
    ServprofError, init, shutdown, start, stop, is_enabled, step, session_dir,
    store_path, set_process_name, set_thread_name, meta, add_meta_info, link,
    now_ns, stats, library_path, load_library, install_exit_hooks as _install_exit_hooks)

__version__ = "0.1.0"


class Level(_enum.IntEnum):
    """Record levels: a record is kept when its level <= profiler_level."""
    ERROR = 10
    INFO = 20
    DETAILED = 30
    VERBOSE = 40
    L0 = 10  # aliases of the reference tool
    L1 = 20
    L2 = 30


__all__ = [
    "Level", "Profiler", "span", "Span", "traced", "event", "link", "step", "init", "shutdown",
    "start", "stop", "is_enabled", "session_dir", "store_path", "set_process_name",
    "set_thread_name", "meta", "add_meta_info", "now_ns", "stats", "library_path",
    "load_library", "ServprofError", "LibraryNotFoundError",
]

_try_load()
_install_exit_hooks()
