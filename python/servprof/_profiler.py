# SPDX-License-Identifier: Apache-2.0
"""Profiler: the builder users of the reference tool know.

    Profiler(Level.INFO).domain("Request").res(rid).attr("k", v).event("httpReq")

Design: a Profiler decides once, when it is made, whether its level is
being collected; when it is not, every method returns at once. When it is,
the builder methods only remember what was asked (a dict, so setting a key
twice keeps the last value, as in the reference tool) and the finishing
call — event, span_start, span_end, link, launch — replays it into one C
record: servprof_rec_begin_slow(level, domain), one C call per attribute in
the order first set, then the finishing C call. So a Profiler writes exactly
the rows a C caller making the same calls writes.

A Profiler belongs to the thread using it, like the reference's. Spans:
attributes set before span_start() go with the start, attributes set after
it with the end (servprof_span_end_rec); span_end() may run on any thread.
"""

from typing import Any

from ._core import state, b, bdomain, put, res, number, internal_error
from ._levels import Level

# What a remembered attribute is (the first item of its tuple).
_ATTR, _RES, _METRIC, _INC, _SCOPE = range(5)


def replay(f, r, attrs):
    """Turns remembered attributes into C calls on record r."""
    for key, (op, name, val) in attrs.items():
        if op == _ATTR:
            put(f, r, b(key), val)
        elif op == _RES:
            res(f, r, val)
        elif op == _SCOPE:
            if type(val) is str:
                f.servprof_metric_scope(r, b(name), val.encode("utf-8", "replace"))
            else:
                put(f, r, b(key), val)
        else:
            x = number(val)
            if x is None:  # not a number: still recorded, under the same key
                put(f, r, b(key), val)
            elif op == _METRIC:
                f.servprof_metric(r, b(name), x)
            else:
                f.servprof_metric_inc(r, b(name), x)


class Profiler:
    """One record (or one span) being built. See the module comment."""

    __slots__ = ("_on", "_level", "_domain", "_attrs", "_span", "_name")

    def __new__(cls, level: int = Level.INFO) -> "Profiler":
        # Disabled: one shared instance that ignores everything, so the
        # off path allocates nothing. (No __init__: it would run again.)
        if level > state.level.value:
            return _OFF
        self = object.__new__(cls)
        self._on = True
        self._level = level
        self._domain = None
        self._attrs = {}
        self._span = 0
        self._name = None
        return self

    @property
    def enable(self):
        """True when this Profiler's level is being collected."""
        return self._on

    # -- builders: remember, return self ------------------------------

    def domain(self, domain: str) -> "Profiler":
        if self._on:
            self._domain = domain
        return self

    def res(self, rid: Any) -> "Profiler":
        """The request id: a str, an int, or a list of dicts (a batch)."""
        if self._on:
            self._attrs["rid"] = (_RES, None, rid)
        return self

    def attr(self, key: str, value: Any) -> "Profiler":
        if self._on:
            self._attrs[key] = (_ATTR, None, value)
        return self

    def metric(self, name: str, value: float) -> "Profiler":
        """A gauge: args "name=": value."""
        if self._on:
            self._attrs[f"{name}="] = (_METRIC, name, value)
        return self

    def metric_inc(self, name: str, value: float) -> "Profiler":
        """An increment: args "name+": value."""
        if self._on:
            self._attrs[f"{name}+"] = (_INC, name, value)
        return self

    def metric_scope(self, name, value=0):
        """A metric scope: args "scope#name": value."""
        if self._on:
            self._attrs[f"scope#{name}"] = (_SCOPE, name, value)
        return self

    def metric_scope_as_req_id(self):
        """Per-request scope: args "scope#": "req"."""
        return self.metric_scope("", "req")

    # -- finishing calls ----------------------------------------------

    def _begin(self):
        return state.f.servprof_rec_begin_slow(self._level, bdomain(self._domain))

    def event(self, name: str) -> "Profiler":
        """Records an instant event named name with what was set."""
        if self._on:
            r = None
            try:
                r = self._begin()
                if r:
                    replay(state.f, r, self._attrs)
                    state.f.servprof_event(r, b(name))
            except Exception as e:
                internal_error(r, e)
        return self

    def launch(self):
        """The reference tool's event named "Launch"."""
        return self.event("Launch")

    def link(self, from_rid: Any, to_rid: Any) -> "Profiler":
        """Records that from_rid and to_rid name the same request
        (name "Link", args type 3). Ids are recorded as strings. from_rid is
        the upstream (front-end) id: reports name the request by it."""
        if self._on:
            r = None
            try:
                r = self._begin()
                if r:
                    state.f.servprof_link_rec(r, str(from_rid).encode("utf-8", "replace"),
                                              str(to_rid).encode("utf-8", "replace"))
            except Exception as e:
                internal_error(r, e)
        return self

    def span_start(self, name: str) -> "Profiler":
        """Starts a span with what was set so far (servprof_span_begin)."""
        if self._on:
            r = None
            try:
                r = self._begin()
                if r:
                    replay(state.f, r, self._attrs)
                    self._span = state.f.servprof_span_begin(r, b(name))
                    self._name = name
                self._attrs = {}
            except Exception as e:
                internal_error(r, e)
        return self

    def span_end(self) -> "Profiler":
        """Ends the span, adding what was set since span_start()."""
        h = self._span
        if self._on and h:
            self._span = 0
            r = None
            try:
                if self._attrs:
                    r = self._begin()
                    if r:
                        replay(state.f, r, self._attrs)
                    state.f.servprof_span_end_rec(r, h)
                else:
                    state.f.servprof_span_end(h)
            except Exception as e:
                internal_error(r, e)
        return self

    def add_meta_info(self, key: str, value: Any) -> "Profiler":
        """Adds key = str(value) to Meta of this process's store, now and in
        every later session (servprof_meta)."""
        if state.lib is not None:
            state.lib.slow.servprof_meta(b(key), str(value).encode("utf-8", "replace"))
        return self

    # -- with Profiler(...).span_start("x"): --------------------------

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and self._on and self._span:
            self.attr("error", True).attr("exception", exc_type.__name__)
        self.span_end()
        return False



_OFF = object.__new__(Profiler)
_OFF._on = False
_OFF._level = 0
_OFF._domain = None
_OFF._attrs = {}
_OFF._span = 0
_OFF._name = None
