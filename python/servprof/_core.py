# SPDX-License-Identifier: Apache-2.0
"""The state every recording helper shares, and the encoding of values.

Design: a disabled call site must cost well under a microsecond, so the
only thing a call site does before anything else is compare its level with
``state.level.value`` — a ctypes view of the C library's exported
``servprof__level`` (the same relaxed load servprof_is_enabled() does in C;
the inline C function itself cannot be called through ctypes). When the
library is missing, ``state.level`` is a stand-in whose value is 0, so every
call site takes its "off" branch and the program goes on unprofiled.

Before the C library has initialized in this process (first use, or first
use in a fork child) the level reads SP_LEVEL_UNINIT (INT_MAX): every level
passes the check, and the first record call reaches
servprof_rec_begin_slow(), which initializes the library and returns NULL
when nothing is being collected. From then on the real level is read.

Values are encoded by type, mapping onto the C calls a C caller would make,
so both write the same rows: str -> servprof_attr_strn, bool ->
servprof_attr_bool, int -> servprof_attr_int, float -> servprof_attr_double,
anything else (None, lists, dicts, tuples ...) -> one json.dumps() handed to
servprof_attr_json, which stores it as structured JSON.

Never raise into the profiled program: a value that cannot be encoded is
recorded as its str(); an unexpected error while emitting cancels the
record and is reported once on stderr.
"""

import json
import math
import os
import sys
import time
import warnings

from . import _lib

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
LEVEL_UNINIT = _lib.LEVEL_UNINIT


class _Off:
    """Stands in for servprof__level when the library is not loaded."""
    __slots__ = ()
    value = 0


class State:
    """Module-wide state; read on every call site (attribute lookups only)."""
    __slots__ = ("lib", "level", "f", "error")

    def __init__(self):
        self.lib = None      # _lib.Lib, or None when not loaded
        self.level = _Off()  # .value: the C library's current level
        self.f = None        # the PyDLL handle (recording functions)
        self.error = None    # LibraryNotFoundError when loading failed


state = State()


def load():
    """Loads the library into ``state`` (once). Returns the Lib or raises."""
    if state.lib is not None:
        return state.lib
    lib = _lib.load()
    state.f = lib.fast
    state.lib = lib
    state.level = lib.level  # published last: call sites start recording now
    return lib


def collection_requested() -> bool:
    """True when the config file of SERVICE_PROF_CONFIG_PATH says "enable": 1
    (read with the standard json module: only to decide how loudly to fail)."""
    path = os.environ.get("SERVICE_PROF_CONFIG_PATH")
    if not path:
        return False
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(cfg, dict) and cfg.get("enable") == 1 and type(cfg.get("enable")) is int


def try_load() -> None:
    """load(), turning a failure into one warning and no-op recording — or
    into the error itself when the config asks for collection: records the
    user asked for must not be silently lost."""
    try:
        load()
    except _lib.LibraryNotFoundError as e:
        state.error = e
        if collection_requested():
            raise _lib.LibraryNotFoundError(
                e.tried, "the config file %s asks for collection (\"enable\": 1), but "
                % os.environ["SERVICE_PROF_CONFIG_PATH"]) from None
        warnings.warn("servprof: recording is off. " + str(e), RuntimeWarning, stacklevel=3)


def current_level():
    """The level being collected (0 when off), initializing the library in
    this process if it has not yet (that is what servprof_init() does)."""
    v = state.level.value
    if v == LEVEL_UNINIT:
        state.lib.slow.servprof_init()
        v = state.level.value
        if v == LEVEL_UNINIT:  # init failed: the library stays off
            v = 0
    return v


# ---------------------------------------------------------------- names

_names = {}           # str -> bytes, for names, keys and domains
_NAMES_MAX = 4096     # dynamic names must not grow the cache without bound


def b(s):
    """A name, key or domain as UTF-8 bytes (cached: names repeat)."""
    v = _names.get(s)
    if v is None:
        if type(s) is not str:
            s = str(s)
        v = s.encode("utf-8", "replace")
        if len(_names) < _NAMES_MAX:
            _names[s] = v
    return v


def bdomain(d):
    return None if d is None else b(d)


# ---------------------------------------------------------------- values

def _finite(v):
    """v with every NaN/inf float replaced by None (JSON has no NaN)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def _json_default(o):
    if hasattr(o, "__index__"):
        return o.__index__()
    if isinstance(o, (set, frozenset)):
        return list(o)
    if isinstance(o, (bytes, bytearray)):
        return bytes(o).decode("utf-8", "replace")
    if hasattr(o, "__float__"):
        return float(o)
    return str(o)


# One encoder made once: json.dumps() with any non-default option builds a
# new JSONEncoder per call, which costs more than the C call it feeds.
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False,
                           default=_json_default).encode


def json_text(v):
    """Compact JSON for any value; never raises."""
    try:
        return _encode(v)
    except ValueError:
        # NaN/inf inside, or a circular reference.
        try:
            return _encode(_finite(v))
        except ValueError:
            return json.dumps(str(v))


def put(f, r, k, v):
    """Adds attribute k (bytes) = v to record r, typed by v's type."""
    t = type(v)
    if t is str:
        s = v.encode("utf-8", "replace")
        f.servprof_attr_strn(r, k, s, len(s))
    elif t is int:
        if INT64_MIN <= v <= INT64_MAX:
            f.servprof_attr_int(r, k, v)
        else:  # the library's JSON stops at int64: keep every digit as text
            f.servprof_attr_str(r, k, str(v).encode())
    elif t is float:
        f.servprof_attr_double(r, k, v)
    elif t is bool:
        f.servprof_attr_bool(r, k, 1 if v else 0)
    elif isinstance(v, (list, tuple, dict)) or v is None:
        f.servprof_attr_json(r, k, json_text(v).encode())
    elif isinstance(v, bool):
        f.servprof_attr_bool(r, k, 1 if v else 0)
    elif isinstance(v, int) or hasattr(v, "__index__"):  # IntEnum, numpy ints
        put(f, r, k, int(v.__index__()))
    elif isinstance(v, float):
        f.servprof_attr_double(r, k, float(v))
    elif isinstance(v, str):
        put(f, r, k, str(v))
    elif isinstance(v, (bytes, bytearray)):
        put(f, r, k, bytes(v).decode("utf-8", "replace"))
    else:
        f.servprof_attr_json(r, k, json_text(v).encode())


def res(f, r, rid):
    """The resource id: a scalar through servprof_res_*, a list (a batch)
    through servprof_attr_json under "rid" — the same JSON a C caller builds
    with servprof_attr_array_begin(r, "rid")."""
    t = type(rid)
    if t is str:
        f.servprof_res_str(r, rid.encode("utf-8", "replace"))
    elif t is int and INT64_MIN <= rid <= INT64_MAX:
        f.servprof_res_int(r, rid)
    else:
        put(f, r, b"rid", rid)


def number(v):
    """v as a float for servprof_metric*, or None when it is not a number."""
    t = type(v)
    if t is int or t is float:
        return float(v)
    if t is bool or isinstance(v, (str, bytes)):
        return None
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return None


# ---------------------------------------------------------------- errors

_reported = False


def internal_error(r, exc):
    """An unexpected failure while emitting: drop the record, say it once."""
    global _reported
    if r and state.f is not None:
        try:
            state.f.servprof_rec_cancel(r)
        except Exception:
            pass
    if not _reported:
        _reported = True
        sys.stderr.write("[msservice_profiler] [PID:%d] [WARNING] servprof (Python): record "
                         "dropped: %s: %s (reported once)\n" % (os.getpid(), type(exc).__name__, exc))


now_ns = time.time_ns  # CLOCK_REALTIME in ns: the scale of servprof_now_ns()
