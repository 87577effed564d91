# SPDX-License-Identifier: Apache-2.0
"""Finding, loading and describing libservprof for ctypes.

Where the library is looked for, in this order:

1. ``$SERVPROF_LIB`` — a path to the .so. When it is set, it is the only
   place tried: a wrong setting is an error to report, not a reason to pick
   up some other copy of the library silently.
2. next to this package — ``servprof/libservprof.so.0`` or
   ``servprof/libservprof.so`` (a wheel built with the library bundled).
3. the system path — the dynamic loader's own search for
   ``libservprof.so.0`` (LD_LIBRARY_PATH, /etc/ld.so.cache, /usr/lib ...) and
   ``ctypes.util.find_library("servprof")``.

When nothing loads, :class:`LibraryNotFoundError` names every place tried
and why each failed.

The library is opened twice, through the same dlopen handle count:

* ``PyDLL`` for the recording functions. They never block (the C hot path
  takes no lock and makes no syscall but the clock), so keeping the GIL
  across the call is safe and saves releasing and re-taking it, the largest
  part of a ctypes call's cost.
* ``CDLL`` for the control functions (init, start, stop, shutdown, step,
  meta), which open files, drain buffers and join threads: they release the
  GIL so other Python threads keep running meanwhile.
"""

import ctypes
import ctypes.util
import os
import threading

_SONAMES = ("libservprof.so.0", "libservprof.so")

# SP_LEVEL_UNINIT in lib/core/internal.h: servprof__level holds INT_MAX until the
# library has initialized in this process (and again in a fork child).
LEVEL_UNINIT = 2**31 - 1


class LibraryNotFoundError(ImportError):
    """libservprof could not be loaded; the message names every place tried."""

    def __init__(self, tried, why=""):
        self.tried = list(tried)  # [(place, reason), ...]
        lines = [why + "libservprof could not be loaded. Places tried:"]
        lines += ["  - %s: %s" % (place, why) for place, why in self.tried]
        lines.append(
            "Build it (cmake --build build) and set SERVPROF_LIB=/path/to/libservprof.so, "
            "install it on the loader path, or install the Python package with the "
            "library bundled (see docs/python.md).")
        super().__init__("\n".join(lines))


class Lib:
    """The loaded library: two ctypes handles and the level variable."""

    def __init__(self, path, fast, slow):
        self.path = path    # the file that was loaded (as given to dlopen)
        self.fast = fast    # PyDLL: recording functions, GIL kept
        self.slow = slow    # CDLL: control functions, GIL released
        self.level = ctypes.c_int.in_dll(fast, "servprof__level")


_lock = threading.Lock()
_lib = None      # Lib once loaded
_error = None    # LibraryNotFoundError once a load failed


def _reset_lock_in_child():
    # A thread of the parent may have held the lock at fork time.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_lock_in_child)


def _candidates():
    """(place description, path to dlopen) in search order."""
    env = os.environ.get("SERVPROF_LIB")
    if env is not None:
        return [("$SERVPROF_LIB=%s" % env, env)], True
    here = os.path.dirname(os.path.abspath(__file__))
    out = [("next to the package: %s" % os.path.join(here, n), os.path.join(here, n))
           for n in _SONAMES]
    out.append(("system loader path: libservprof.so.0", "libservprof.so.0"))
    found = ctypes.util.find_library("servprof")
    if found:
        out.append(("ctypes.util.find_library('servprof'): %s" % found, found))
    else:
        out.append(("ctypes.util.find_library('servprof')", None))
    return out, False


def _open(path):
    fast = ctypes.PyDLL(path)
    slow = ctypes.CDLL(path)
    _declare(fast, slow)
    return Lib(path, fast, slow)


def load():
    """Returns the loaded :class:`Lib`, loading it on first use.

    Raises :class:`LibraryNotFoundError` (every later call raises the same
    error again: the search is not repeated)."""
    global _lib, _error
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        if _error is not None:
            raise _error
        tried = []
        cands, only_env = _candidates()
        for place, path in cands:
            if path is None:
                tried.append((place, "found nothing"))
                continue
            if os.sep in path and not os.path.exists(path):
                tried.append((place, "no such file"))
                continue
            try:
                _lib = _open(path)
                return _lib
            except OSError as e:
                tried.append((place, str(e)))
            except (AttributeError, ValueError) as e:
                # Loaded, but it is not libservprof (or too old a version).
                tried.append((place, "not a usable libservprof: %s" % e))
        if only_env:
            tried.append(("next to the package and the system path",
                          "not tried, because SERVPROF_LIB is set"))
        _error = LibraryNotFoundError(tried)
        raise _error


def _fn(handle, name, restype, *argtypes):
    f = getattr(handle, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


def _declare(fast, slow):
    """Prototypes of every exported function (servprof.h)."""
    c_int, c_char_p, c_void_p = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p
    c_int64, c_uint64, c_size_t = ctypes.c_int64, ctypes.c_uint64, ctypes.c_size_t
    c_double = ctypes.c_double
    R = c_void_p  # servprof_rec *

    for h in (fast, slow):
        _fn(h, "servprof_strerror", c_char_p, c_int)
        _fn(h, "servprof_now_ns", c_int64)
    # control: GIL released
    _fn(slow, "servprof_init", c_int)
    _fn(slow, "servprof_shutdown", None)
    _fn(slow, "servprof_start", c_int)
    _fn(slow, "servprof_stop", c_int)
    _fn(slow, "servprof_step", None)
    _fn(slow, "servprof_session_dir", c_int, c_char_p, c_size_t)
    _fn(slow, "servprof_store_path", c_int, c_char_p, c_size_t)
    _fn(slow, "servprof_session_config_int", c_int, c_char_p, ctypes.POINTER(c_int64))
    _fn(slow, "servprof_set_process_name", None, c_char_p)
    _fn(slow, "servprof_set_thread_name", None, c_char_p)
    _fn(slow, "servprof_meta", c_int, c_char_p, c_char_p)
    _fn(slow, "servprof_get_stats", None, ctypes.POINTER(Stats))
    _fn(slow, "servprof_get_stats_n", None, ctypes.POINTER(Stats), c_size_t)
    _fn(slow, "servprof_version_string", c_char_p)
    # recording: GIL kept
    _fn(fast, "servprof_rec_begin_slow", R, c_int, c_char_p)
    _fn(fast, "servprof_rec_cancel", None, R)
    _fn(fast, "servprof_res_str", None, R, c_char_p)
    _fn(fast, "servprof_res_int", None, R, c_int64)
    _fn(fast, "servprof_attr_str", None, R, c_char_p, c_char_p)
    _fn(fast, "servprof_attr_strn", None, R, c_char_p, c_char_p, c_size_t)
    _fn(fast, "servprof_attr_int", None, R, c_char_p, c_int64)
    _fn(fast, "servprof_attr_double", None, R, c_char_p, c_double)
    _fn(fast, "servprof_attr_bool", None, R, c_char_p, c_int)
    _fn(fast, "servprof_attr_int_array", None, R, c_char_p, ctypes.POINTER(c_int64), c_size_t)
    _fn(fast, "servprof_attr_double_array", None, R, c_char_p, ctypes.POINTER(c_double), c_size_t)
    _fn(fast, "servprof_attr_json", None, R, c_char_p, c_char_p)
    _fn(fast, "servprof_attr_array_begin", None, R, c_char_p)
    _fn(fast, "servprof_attr_object_begin", None, R, c_char_p)
    _fn(fast, "servprof_attr_end", None, R)
    _fn(fast, "servprof_metric", None, R, c_char_p, c_double)
    _fn(fast, "servprof_metric_inc", None, R, c_char_p, c_double)
    _fn(fast, "servprof_metric_scope", None, R, c_char_p, c_char_p)
    _fn(fast, "servprof_event", None, R, c_char_p)
    _fn(fast, "servprof_link_rec", None, R, c_char_p, c_char_p)
    _fn(fast, "servprof_link", None, c_char_p, c_char_p)
    _fn(fast, "servprof_trace_context", c_int, c_char_p, c_char_p, c_char_p)
    _fn(fast, "servprof_trace_context_b3", c_int, c_char_p, c_char_p, c_char_p, c_char_p)
    _fn(fast, "servprof_trace_end", None, c_char_p, c_char_p)
    _fn(fast, "servprof_trace_outgoing", c_int, c_char_p, c_char_p, c_char_p, c_size_t)
    _fn(fast, "servprof_span_begin", c_uint64, R, c_char_p)
    _fn(fast, "servprof_span_end", None, c_uint64)
    _fn(fast, "servprof_span_end_rec", None, R, c_uint64)
    _fn(fast, "servprof_span_at", None, R, c_char_p, c_int64, c_int64)


class Stats(ctypes.Structure):
    """servprof_stats, field for field."""
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "records", "dropped", "written", "truncated", "bad_input",
        "span_double_end", "span_never_ended", "write_errors",
        # since 0.2: where accepted records went (docs/api.md)
        "stored", "lost", "metrics_only")]
