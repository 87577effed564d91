# SPDX-License-Identifier: Apache-2.0
"""The Python idioms: ``with span(...)``, ``@traced``, ``event(...)``.

Design: a span is measured in Python and recorded whole when it ends. The
start is taken with time.time_ns() at enter — CLOCK_REALTIME in ns, the very
clock servprof_now_ns() reads, without the cost of a foreign call — and at
exit one record is built and finished with servprof_span_at(start, end).
Nothing is open in the C library while the body runs, so a span that
crosses awaits, or whose task is cancelled, can never be left dangling, and
the begin/finish of the C record never interleaves with another coroutine's.

The disabled path: span() compares the level with the C library's level
first and, when it is not collected, returns one shared do-nothing context
manager; traced wrappers compare and call straight through.

An exception inside the body ends the span anyway and marks it with
"error": true and "exception": "<type name>"; the exception goes on.
"""

import functools
import inspect

from typing import Any, Callable, Optional

from ._core import state, b, bdomain, put, res, internal_error, now_ns
from ._levels import Level


def _emit(name, domain, level, rid, attrs, start, exc_type):
    """Records one whole span [start, now]. name, domain: bytes / None."""
    end = now_ns()
    f = state.f
    r = None
    try:
        r = f.servprof_rec_begin_slow(level, domain)
        if not r:
            return
        if rid is not None:
            res(f, r, rid)
        if attrs:
            for k, v in attrs.items():
                put(f, r, b(k), v)
        if exc_type is not None:
            f.servprof_attr_bool(r, b"error", 1)
            f.servprof_attr_str(r, b"exception", b(exc_type.__name__))
        f.servprof_span_at(r, name, start, end)
    except Exception as e:
        internal_error(r, e)


class Span:
    """A span being measured; made by span() when its level is collected."""

    __slots__ = ("_name", "_domain", "_level", "_rid", "_attrs", "_start")

    def __enter__(self):
        self._start = now_ns()
        return self

    def __exit__(self, exc_type, exc, tb):
        _emit(self._name, self._domain, self._level, self._rid, self._attrs,
              self._start, exc_type)
        return False

    async def __aenter__(self):
        self._start = now_ns()
        return self

    async def __aexit__(self, exc_type, exc, tb):
        _emit(self._name, self._domain, self._level, self._rid, self._attrs,
              self._start, exc_type)
        return False

    def attr(self, key, value):
        """Adds (or replaces) an attribute, recorded when the span ends."""
        if self._attrs is None:
            self._attrs = {}
        self._attrs[key] = value
        return self

    def res(self, rid):
        """Sets the request id (a str, an int or a list of dicts)."""
        self._rid = rid
        return self


class _NoSpan:
    """What span() returns when its level is not collected: does nothing."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return False

    async def __aenter__(self):
        return self

    async def __aexit__(self, exc_type, exc, tb):
        return False

    def attr(self, key, value):
        return self

    def res(self, rid):
        return self


NO_SPAN = _NoSpan()


def span(name: str, domain: Optional[str] = None, rid: Any = None, level: int = Level.INFO,
         **attrs: Any) -> "Span":
    """A span around a block: ``with span("forward", domain="Execute",
    rid=batch, batch_size=4):`` (also ``async with``). Keyword arguments
    other than domain, rid and level become attributes."""
    if level > state.level.value:
        return NO_SPAN
    s = Span()
    s._name = b(name)
    s._domain = bdomain(domain)
    s._level = level
    s._rid = rid
    s._attrs = attrs
    return s


def event(name: str, domain: Optional[str] = None, rid: Any = None, level: int = Level.INFO,
          **attrs: Any) -> None:
    """An instant event: ``event("httpReq", domain="Request", rid=rid)``."""
    if level > state.level.value:
        return
    f = state.f
    r = None
    try:
        r = f.servprof_rec_begin_slow(level, bdomain(domain))
        if r:
            if rid is not None:
                res(f, r, rid)
            for k, v in attrs.items():
                put(f, r, b(k), v)
            f.servprof_event(r, b(name))
    except Exception as e:
        internal_error(r, e)


def traced(fn: Optional[Callable[..., Any]] = None, *, name: Optional[str] = None,
           domain: Optional[str] = None, level: int = Level.INFO, **attrs: Any) -> Any:
    """Decorator recording each call of a function (sync or async) as a
    span named after it (or name=): ``@traced`` or
    ``@traced(domain="Execute", level=Level.DETAILED)``."""

    def wrap(f):
        if inspect.isgeneratorfunction(f) or inspect.isasyncgenfunction(f):
            raise TypeError("servprof.traced: %r is a generator function; its calls return at "
                            "once, so a span would not cover its work: use `with servprof.span()` "
                            "inside it" % (f,))
        nb = b(name if name is not None else f.__qualname__)
        db = bdomain(domain)
        extra = dict(attrs) or None

        if inspect.iscoroutinefunction(f):
            @functools.wraps(f)
            async def traced_async(*args, **kwargs):
                if level > state.level.value:
                    return await f(*args, **kwargs)
                start = now_ns()
                try:
                    out = await f(*args, **kwargs)
                except BaseException as e:
                    _emit(nb, db, level, None, extra, start, type(e))
                    raise
                _emit(nb, db, level, None, extra, start, None)
                return out
            return traced_async

        @functools.wraps(f)
        def traced_sync(*args, **kwargs):
            if level > state.level.value:
                return f(*args, **kwargs)
            start = now_ns()
            try:
                out = f(*args, **kwargs)
            except BaseException as e:
                _emit(nb, db, level, None, extra, start, type(e))
                raise
            _emit(nb, db, level, None, extra, start, None)
            return out
        return traced_sync

    if fn is not None:  # used bare: @traced
        return wrap(fn)
    return wrap
