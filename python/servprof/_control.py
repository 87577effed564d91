# SPDX-License-Identifier: Apache-2.0
"""Process-level control: start/stop, steps, names, meta, counters, exit.

These map one to one onto the C control functions, called through the
CDLL handle so that the GIL is released while they open files or drain
buffers. Errors become ServprofError (with the C code and its text);
"already collecting" / "not collecting" are answers, not errors: start()
and stop() return False then.

Exit: the C library drains and closes its store from an atexit handler,
but multiprocessing's fork workers leave through os._exit(), which runs no
atexit handler. So the binding registers a multiprocessing finalizer that
calls servprof_shutdown() — again in every fork child, through
multiprocessing.util.register_after_fork, because a fork child starts with
an empty finalizer list. It only shuts down a library that initialized in
this process: a child that never recorded creates no store on its way out.
"""

import ctypes
from typing import Any, Dict, Optional
import multiprocessing.util as _mp_util

from . import _core, _lib, _torch
from ._core import state, b, LEVEL_UNINIT
from ._levels import Level

_INFO = int(Level.INFO)  # hot path: a plain int compare

EINVAL, ENOMEM, EIO, ESTATE, ECONFIG, ESTORE, ENOTFOUND = -1, -2, -3, -4, -5, -6, -7


class ServprofError(RuntimeError):
    """A C function returned an error code (.code, servprof_strerror text)."""

    def __init__(self, func: str, code: int) -> None:
        self.code = code
        text = _lib.load().slow.servprof_strerror(code).decode("utf-8", "replace")
        super().__init__("%s failed: %s (%d)" % (func, text, code))


def _slow():
    """The CDLL handle, or LibraryNotFoundError for an explicit control call."""
    return _core.load().slow


def _check(func, rc):
    if rc < 0:
        raise ServprofError(func, rc)
    return rc


def init() -> None:
    """Reads the config and starts what it asks for (optional: the first
    record call does it). Raises ServprofError if the library could not start."""
    _check("servprof_init", _slow().servprof_init())


def shutdown() -> None:
    """Stops collection, drains every buffer into the store, frees the
    library's state. Runs by itself at exit."""
    if state.lib is not None:
        _torch.controller.stop_now()
        state.lib.slow.servprof_shutdown()


def start() -> bool:
    """Starts a session now, whatever the config file says. True when a
    session was started, False when one was already running."""
    rc = _slow().servprof_start()
    if rc == ESTATE:
        return False
    _check("servprof_start", rc)
    _torch.controller.follow(False)
    return True


def stop() -> bool:
    """Stops the session: drains, commits, closes. True when one was
    stopped, False when nothing was being collected."""
    _torch.controller.stop_now()  # its last step is recorded while collecting
    rc = _slow().servprof_stop()
    if rc == ESTATE:
        return False
    _check("servprof_stop", rc)
    return True


def is_enabled(level: int = Level.INFO) -> bool:
    """True when records of this level are being collected now."""
    v = state.level.value  # 0 when the library is not loaded
    if v == LEVEL_UNINIT:
        v = _core.current_level()
    return level <= v


def step() -> None:
    """Counts one scheduler step (profiler_step_num stops after N); with
    acl_task_time 3 it also drives the torch profiler (docs/python.md)."""
    if state.lib is not None:
        _torch.controller.follow(True)
        state.lib.slow.servprof_step()


def poll() -> None:
    """For a serving loop that is idle (no steps): lets the torch profiler
    of acl_task_time 3 follow collection (start or stop) without counting a
    step. Costs one attribute read when collection is off."""
    if state.lib is not None:
        _torch.controller.follow(False)


def _path(func):
    if state.lib is None:
        return None
    buf = ctypes.create_string_buffer(4096 + 1)
    rc = getattr(state.lib.slow, func)(buf, len(buf))
    if rc == ESTATE:
        return None
    _check(func, rc)
    return buf.value.decode("utf-8", "surrogateescape")


def session_dir() -> Optional[str]:
    """Folder of the current session, or None when not collecting."""
    return _path("servprof_session_dir")


def store_path() -> Optional[str]:
    """This process's raw store in the current session, or None."""
    return _path("servprof_store_path")


def set_process_name(name: str) -> None:
    """Names this process in the timeline."""
    if state.lib is not None:
        state.lib.slow.servprof_set_process_name(str(name).encode("utf-8", "replace"))


def set_thread_name(name: str) -> None:
    """Names the calling thread in the timeline."""
    if state.lib is not None:
        state.lib.slow.servprof_set_thread_name(str(name).encode("utf-8", "replace"))


def meta(key: str, value: Any) -> None:
    """Adds key = str(value) to Meta of this process's store, now and in
    every later session."""
    if state.lib is not None:
        _check("servprof_meta", state.lib.slow.servprof_meta(
            b(key), str(value).encode("utf-8", "replace")))


add_meta_info = meta


def link(from_rid: Any, to_rid: Any) -> None:
    """Records that two ids name the same request (INFO, no domain). With
    collection off the library keeps the last few links for the next
    session (a request straddling `servprof enable` keeps its front-end
    id), so the call always reaches it: one per request, not per token."""
    if state.f is not None:  # no library: recording is a no-op
        state.f.servprof_link(str(from_rid).encode("utf-8", "replace"),
                              str(to_rid).encode("utf-8", "replace"))


def _s(x: Any) -> Optional[bytes]:
    return None if x is None else str(x).encode("utf-8", "replace")


def trace_context(rid: Any, traceparent: Optional[str], tracestate: Optional[str] = None,
                  b3: Optional[str] = None) -> bool:
    """Request rid came with this trace context (a W3C traceparent, else a B3
    `b3` header value): its llm_request span joins that trace (request
    tracing over OTLP, docs/tracing.md). False when neither header is valid
    or tracing is off (nothing recorded)."""
    if _INFO > state.level.value:
        return False
    if traceparent and state.f.servprof_trace_context(_s(rid), _s(traceparent), _s(tracestate)) == 0:
        return True
    return bool(b3) and state.f.servprof_trace_context(_s(rid), _s(b3), None) == 0


def trace_end(rid: Any, outcome: str = "ok") -> None:
    """Ends rid's llm_request span where no httpRes does (servprof_trace_end)."""
    if _INFO <= state.level.value:
        state.f.servprof_trace_end(_s(rid), _s(outcome))


def trace_outgoing(rid: Any, traceparent: Optional[str] = None) -> Optional[str]:
    """The traceparent to send to the next hop for rid (this process's span
    as the parent), or None when the library is not loaded."""
    if state.lib is None:
        return None
    buf = ctypes.create_string_buffer(64)
    if state.f.servprof_trace_outgoing(_s(rid), _s(traceparent), buf, len(buf)) != 0:
        return None
    return buf.value.decode()


def now_ns() -> int:
    """Wall clock in ns since the epoch: the scale of every stored timestamp."""
    return _core.now_ns()


def stats() -> Dict[str, int]:
    """Counters since the process started (servprof_get_stats) as a dict."""
    s = _lib.Stats()
    # The sized entry point: a newer library fills only the fields we know.
    _slow().servprof_get_stats_n(ctypes.byref(s), ctypes.sizeof(s))
    return {name: getattr(s, name) for name, _ in _lib.Stats._fields_}


def library_path() -> str:
    """The path libservprof was loaded from (raises LibraryNotFoundError)."""
    return _core.load().path


def load_library() -> str:
    """Loads libservprof now; raises LibraryNotFoundError naming every place
    tried. Returns the path loaded."""
    return _core.load().path


# ---------------------------------------------------------------- exit

def _shutdown_at_exit():
    if state.lib is not None and state.level.value != LEVEL_UNINIT:
        _torch.controller.at_exit()
        state.lib.slow.servprof_shutdown()


class _ExitHook:
    """Something alive for multiprocessing's weak after-fork registry."""


_exit_hook = _ExitHook()


def _install_exit_finalizer(_obj=None):
    # Runs after every ordinary finalizer (lower priorities run later), so
    # what a worker's own finalizers record still reaches the store.
    _mp_util.Finalize(None, _shutdown_at_exit, exitpriority=-1000)


def install_exit_hooks() -> None:
    _install_exit_finalizer()
    _mp_util.register_after_fork(_exit_hook, _install_exit_finalizer)
