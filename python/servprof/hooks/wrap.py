# SPDX-License-Identifier: Apache-2.0
"""The wrapper put around a hooked function, and what it records.

Design: a function is wrapped once, when its module is executed (or at
install when it already was); the wrapper then decides per call with the
same check the binding's call sites make — ``level > lv.value``, where lv
is the ctypes view of the C library's servprof__level — so with
collection off a hooked plain function costs that attribute load and a
branch, plus the wrapper's own call. Everything else (the clock, the
expressions, the C calls) happens only when the level is collected.

Records are made the way servprof.span()/event() make them (_span.py): a
span is timed in Python and written whole with servprof_span_at() after the
call; expressions are evaluated only after servprof_rec_begin_slow() has
returned a record, so a session stopping mid-call records nothing.

What may never happen: the hooked function's result or exception changed
or lost, or an error of the hook raised into the server. The wrapped call
is made outside every try that catches; an expression that raises is
counted in its Binding and reported once (report.py); the record goes on
without that value.

Shapes: plain functions (also methods, classmethods, staticmethods — the
descriptor is unwrapped by bind.py and re-made around the wrapper),
coroutine functions (async def wrapper), generator functions (a generator
wrapper that delegates with yield from, so send/throw/close and the return
value pass through) and async generator functions (an async generator that
forwards asend/athrow/aclose). A span of a generator runs from its first
next() to its end. Introspection sees the original: functools.wraps sets
__wrapped__, so inspect.signature() and iscoroutinefunction() answer as
for the function itself.

The C wrapper: when the optional extension servprof._hookcall is built
(python/servprof/_hookcall.c) a plain function without caller_filter or
handler is wrapped by a HookCall instead, whose off path forwards the
caller's arguments with no packing and no Python frame (docs/hooks.md,
"What a hook costs"). On, a plain function's record is made in C as
well, whatever its shape (a rid expression, a rid list, `each`,
attributes, metrics, a scope, a link): Binding._c_prog() describes it,
expr.flatten() turns each expression into the op list the extension
compiles (_hookexpr.c), and Python runs only when a value is of an
unusual type or an expression raises. SERVPROF_HOOKS_CEXPR=0 keeps the
expressions in Python (_record_c), which writes its record with ONE call,
_hookcall.emit(), instead of a ctypes call per attribute: the tests
compare the rows of both. The extension is
looked for in the package, then next to the libservprof the binding
loaded (where the build puts it). SERVPROF_HOOKS_PURE=1 forces the
pure-Python wrapper and the ctypes record path; a missing extension falls
back to them too, said once at debug level (PROF_LOG_LEVEL=DEBUG).
"""

import ctypes
import functools
import importlib.machinery
import importlib.util
import inspect
import os
import sys

from .._core import state, b, bdomain, put, res, number, now_ns, json_text
from . import expr as _expr
from . import report

_FAIL = object()


class Binding:
    """One hook bound to one function: its compiled expressions and the
    records it makes. Errors are counted here, reported once each."""

    def __init__(self, hook, fn, target):
        self.hook = hook
        self.target = target               # "pkg.mod:Class.method" as bound
        self.level = hook.level
        self.name = b(hook.name)
        self.domain = bdomain(hook.domain)
        self.kind = hook.emit
        self.errors = {}                   # what -> [count, first message]
        try:
            params = _expr.Params(inspect.signature(fn))
        except (TypeError, ValueError):
            params = None
        # bind() raises LookupError for a parameter the function lacks:
        # bind.py turns that into "not bound: ...".
        self.attrs = [(b(k), _expr.bind(e.tree, params), e.what) for k, e in hook.attributes]
        self.metrics = [(b(n), _expr.bind(e.tree, params), inc, e.what, n)
                        for n, e, inc in hook.metrics]
        self.rid = None
        if isinstance(hook.rid, tuple):
            self.rid = ("each", _expr.bind(hook.rid[1].tree, params), hook.rid[1].what,
                        [(k, _expr.bind(e.tree, params), e.what) for k, e in hook.rid[2]])
        elif hook.rid is not None:
            self.rid = [(_expr.bind(e.tree, params), e.what) for e in hook.rid]
        self.link = None
        if hook.link:
            self.link = tuple((_expr.bind(e.tree, params), e.what) for e in hook.link)
        self.scope = None
        if hook.scope:
            n, v = hook.scope
            self.scope = (b(n), v)
        self.caller = hook.caller_filter
        # Nothing to evaluate: the C wrapper records it without Python.
        self.simple = not (self.attrs or self.metrics or self.rid is not None
                           or self.link is not None or self.scope is not None)
        # One rid expression (the usual case): evaluated inline by _record_c.
        self.rid1 = self.rid[0] if isinstance(self.rid, list) and len(self.rid) == 1 else None
        hc = c_ext()
        # The record compiled for the C wrapper (None: _record_c makes it).
        self.cprog = self._c_prog(hook, params) if hc is not None and _cexpr() else None
        self._emit = hc.emit if hc is not None else None
        self.record = self._record_c if hc is not None else self._record_py
        # What _record_c reads, in one tuple: one attribute load and an
        # unpack instead of a dozen instance-attribute loads per call
        # (~0.2 us of the 2 us an expression hook may cost).
        self._c = (self.link, self.kind == "link", self.kind == "span", self.rid1, self.rid,
                   tuple(self.attrs), tuple(self.metrics), self.scope, self._emit, self.level,
                   self.domain, self.name)

    def _c_prog(self, hook, params):
        """The spec HookCall compiles into a record made in C
        (_hookcall.c, "Compiled records", every shape), or None when
        there is nothing to evaluate (the C wrapper records that itself)."""
        if self.simple:
            return None
        flat = _expr.flatten
        rid = flat(hook.rid[0].tree, params) if self.rid1 is not None else None
        rids = each = None
        if isinstance(hook.rid, tuple):
            each = (flat(hook.rid[1].tree, params), hook.rid[1].what,
                    [(k, flat(e.tree, params), e.what) for k, e in hook.rid[2]])
        elif hook.rid is not None and rid is None:
            rids = [(flat(e.tree, params), e.what) for e in hook.rid]
        link = None
        if hook.link:
            link = tuple((flat(e.tree, params), e.what) for e in hook.link)
        items = [(0, b(k), flat(e.tree, params), e.what, None) for k, e in hook.attributes]
        items += [(2 if inc else 1, b(n), flat(e.tree, params), e.what,
                   b(n + ("+" if inc else "="))) for n, e, inc in hook.metrics]
        scope = None
        if self.scope is not None:
            n, v = self.scope
            scope = (3, n, v.encode("utf-8", "replace")) if type(v) is str else \
                (0, b"scope#" + n, _cval(v))
        return (self.fail, _cval, number, rid, None if rid is None else self.rid1[1], items,
                scope, rids, each, link, self.kind == "link")

    # ------------------------------------------------------------ values

    def fail(self, what, exc):
        # setdefault is one step under the GIL: of threads failing at once,
        # exactly one sees its own list come back and reports.
        mine = [0, "%s: %s" % (type(exc).__name__, exc)]
        e = self.errors.setdefault(what, mine)
        e[0] += 1
        if e is mine:
            report.runtime_error(self, what, exc)

    def val(self, fn, what, a, kw, ret, item=None):
        try:
            return fn(a, kw, ret, item)
        except Exception as e:
            self.fail(what, e)
            return _FAIL

    def rid_value(self, a, kw, ret, raw=False):
        """The resource id(s) of a call, or _FAIL. raw: a single value as
        the expression gave it (emit() normalizes it as _normal_rid)."""
        if self.rid[0] == "each":
            _, seq_fn, what, fields = self.rid
            seq = self.val(seq_fn, what, a, kw, ret)
            if seq is _FAIL or seq is None:
                return _FAIL
            if isinstance(seq, dict):
                seq = list(seq.items())
            out = []
            try:
                for item in seq:
                    d = {}
                    for k, fn, w in fields:
                        v = self.val(fn, w, a, kw, ret, item)
                        if v is not _FAIL and v is not None:
                            d[k] = v
                    out.append(d)
            except Exception as e:  # not iterable
                self.fail(what, e)
                return _FAIL
            return out
        vals = []
        for fn, what in self.rid:
            v = self.val(fn, what, a, kw, ret)
            if v is not _FAIL and v is not None:
                vals.append(v)
        if not vals:
            return _FAIL
        if len(vals) == 1:
            return vals[0] if raw else _normal_rid(vals[0])
        return [{"rid": _scalar(v)} for v in vals]

    # ------------------------------------------------------------ records

    def _record_c(self, a, kw, ret, start, exc_type, end=0):
        """record() through the C extension: the expressions evaluated
        here, every value handed to _hookcall.emit() in one call, in the
        order _record_py writes them (so both write the same rows). A
        session stopping meanwhile: emit() gets no record and writes
        nothing."""
        try:
            (link, is_link, is_span, r1, rids, attrs, metrics, scope, emit, level, domain,
             name) = self._c
            if link is not None:
                self._link(a, kw, ret)
            if is_link:
                return
            # The expressions are called inline (not through val()): a
            # Python call less each, on the path the 2 us goal is about.
            rid = None
            if r1 is not None:
                try:
                    rid = r1[0](a, kw, ret, None)
                except Exception as e:
                    self.fail(r1[1], e)
            elif rids is not None:
                v = self.rid_value(a, kw, ret, True)
                if v is not _FAIL:
                    rid = v
            items = []
            for k, fn, what in attrs:
                try:
                    v = fn(a, kw, ret, None)
                except Exception as e:
                    self.fail(what, e)
                    continue
                if v is not None:
                    items.append((0, k, v if type(v) in _PLAIN_C else _cval(v)))
            for k, fn, inc, what, n in metrics:
                v = self.val(fn, what, a, kw, ret)
                if v is _FAIL or v is None:
                    continue
                x = number(v)
                if x is None:
                    items.append((0, b(n + ("+" if inc else "=")), _cval(v)))
                else:
                    items.append((2 if inc else 1, k, x))
            if scope is not None:
                n, v = scope
                if type(v) is str:
                    items.append((3, n, v.encode("utf-8", "replace")))
                else:
                    items.append((0, b"scope#" + n, _cval(v)))
            span = is_span and start is not None
            emit(level, domain, name, start if span else None, (end or now_ns()) if span else 0,
                 rid, items, None if exc_type is None else b(exc_type.__name__))
        except Exception as e:
            self.fail("recording", e)

    def _link(self, a, kw, ret):
        fr = self.val(self.link[0][0], self.link[0][1], a, kw, ret)
        to = self.val(self.link[1][0], self.link[1][1], a, kw, ret)
        if fr is not _FAIL and to is not _FAIL and fr is not None and to is not None:
            state.f.servprof_link(str(fr).encode("utf-8", "replace"),
                                  str(to).encode("utf-8", "replace"))

    def _record_py(self, a, kw, ret, start, exc_type, end=0):
        """Writes what this hook records for one call, one ctypes call per
        C function (the fallback without the extension). start, end: the
        call's clock readings in ns (start None: an event), taken by the
        wrapper around the call itself so the record's own cost is not in
        the span."""
        f = state.f
        r = None
        try:
            if self.link is not None:
                self._link(a, kw, ret)
            if self.kind == "link":
                return
            r = f.servprof_rec_begin_slow(self.level, self.domain)
            if not r:
                return
            if self.rid is not None:
                v = self.rid_value(a, kw, ret)
                if v is not _FAIL:
                    res(f, r, v)
            for k, fn, what in self.attrs:
                v = self.val(fn, what, a, kw, ret)
                if v is not _FAIL and v is not None:
                    put(f, r, k, v)
            for k, fn, inc, what, n in self.metrics:
                v = self.val(fn, what, a, kw, ret)
                if v is _FAIL or v is None:
                    continue
                x = number(v)
                if x is None:
                    put(f, r, b(n + ("+" if inc else "=")), v)
                elif inc:
                    f.servprof_metric_inc(r, k, x)
                else:
                    f.servprof_metric(r, k, x)
            if self.scope is not None:
                n, v = self.scope
                if type(v) is str:
                    f.servprof_metric_scope(r, n, v.encode("utf-8", "replace"))
                else:
                    put(f, r, b"scope#" + n, v)
            if exc_type is not None:
                f.servprof_attr_bool(r, b"error", 1)
                f.servprof_attr_str(r, b"exception", b(exc_type.__name__))
            if self.kind == "span" and start is not None:
                f.servprof_span_at(r, self.name, start, end or now_ns())
            else:
                f.servprof_event(r, self.name)
            r = None
        except Exception as e:
            if r and f is not None:
                try:
                    f.servprof_rec_cancel(r)
                except Exception:
                    pass
            self.fail("recording", e)

    def skip_caller(self, depth):
        """caller_filter: True when the caller is not the named function.
        servprof's own wrappers (a function with several hooks) are not
        callers: they are skipped."""
        try:
            f = sys._getframe(depth)
        except ValueError:
            return True
        while f is not None and f.f_code in _OWN_CODE:
            f = f.f_back
        return f is None or f.f_code.co_name != self.caller


_PLAIN = (str, int, float, bool)
# What emit() writes itself (a list/tuple/dict through json_text() unless
# it is made of plain values).
_PLAIN_C = (str, int, float, bool, list, tuple, dict, type(None))


def _cval(v):
    """v as emit() takes a value — str, int, float, bool, or bytes holding
    JSON — typed the way _core.put() types it."""
    if type(v) in _PLAIN_C:
        return v
    if isinstance(v, (list, tuple, dict)):
        return json_text(v).encode()
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, int) or hasattr(v, "__index__"):  # IntEnum, numpy ints
        return int(v.__index__())
    if isinstance(v, float):
        return float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    return json_text(v).encode()


# ---------------------------------------------------------------- the C extension

def _cexpr():
    """False when SERVPROF_HOOKS_CEXPR=0: expressions evaluated by
    _record_c in Python even where the C wrapper could (the tests compare
    both)."""
    return os.environ.get("SERVPROF_HOOKS_CEXPR", "") != "0"


_hc = None   # servprof._hookcall once set up; False once found unusable


def c_ext():
    """servprof._hookcall, set up for the library the binding loaded, or
    None (SERVPROF_HOOKS_PURE set, not built, or no library loaded)."""
    global _hc
    if _hc is None:
        if state.lib is None:
            return None   # not decided yet: the library may load later
        _hc = _load_c() or False
    return _hc or None


_FUNCS = ("servprof_now_ns", "servprof_rec_begin_slow", "servprof_rec_cancel", "servprof_span_at",
          "servprof_event", "servprof_attr_bool", "servprof_attr_str", "servprof_attr_strn",
          "servprof_attr_int", "servprof_attr_double", "servprof_attr_json", "servprof_res_str",
          "servprof_res_int", "servprof_metric", "servprof_metric_inc", "servprof_metric_scope",
          "servprof_attr_array_begin", "servprof_attr_object_begin", "servprof_attr_end",
          "servprof_link")


def _json_bytes(v):
    return json_text(v).encode()


def _rid_text(v):
    """A rid value emit() did not write itself, as _core.res() would."""
    v = _normal_rid(v)
    return v if type(v) is str or type(v) is int else json_text(v).encode()


def _load_c():
    if os.environ.get("SERVPROF_HOOKS_PURE", "") not in ("", "0"):
        report.debug("pure-Python hook wrapper: SERVPROF_HOOKS_PURE is set")
        return None
    mod = None
    try:
        from .. import _hookcall as mod
    except ImportError:
        mod = _load_beside(state.lib.path)
    if mod is None:
        report.debug("pure-Python hook wrapper: servprof._hookcall is not built (in the "
                     "package or next to %s)" % state.lib.path)
        return None
    try:
        f = state.f
        mod.setup(ctypes.addressof(state.lib.level),
                  {n: ctypes.cast(getattr(f, n), ctypes.c_void_p).value for n in _FUNCS},
                  _json_bytes, _rid_text)
    except Exception as e:
        report.debug("pure-Python hook wrapper: servprof._hookcall unusable: %s: %s"
                     % (type(e).__name__, e))
        return None
    report.debug("C hook wrapper: %s" % mod.__file__)
    return mod


def _load_beside(libpath):
    """servprof._hookcall from the folder of the loaded libservprof."""
    if os.sep not in libpath:
        return None
    d = os.path.dirname(os.path.realpath(libpath))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(d, "_hookcall" + suffix)
        if not os.path.exists(path):
            continue
        try:
            spec = importlib.util.spec_from_file_location("servprof._hookcall", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except (ImportError, OSError) as e:
            report.debug("servprof._hookcall at %s did not load: %s" % (path, e))
            return None
        sys.modules["servprof._hookcall"] = mod
        return mod
    return None


def _scalar(v):
    if type(v) in (str, int):
        return v
    return str(v)


def _normal_rid(v):
    """A rid value as the vocabulary wants it: a scalar, or a rid list."""
    t = type(v)
    if t is str or t is int:
        return v
    if isinstance(v, dict):
        return [{"rid": _scalar(k), "num_scheduled_tokens": n} if type(n) is int
                else {"rid": _scalar(k)} for k, n in v.items()]
    if isinstance(v, (list, tuple, set, frozenset)):
        return [x if isinstance(x, dict) else {"rid": _scalar(x)} for x in v]
    return str(v)


# ---------------------------------------------------------------- wrappers

def make(fn, bd):
    """The wrapper of fn for Binding bd (same shape as fn): a C HookCall
    when the extension is there — recording itself for a plain function,
    handing the call to the Python wrapper below when on for every other
    shape — else the Python wrapper."""
    w = _make_py(fn, bd)
    hc = c_ext()
    if hc is None:
        return w
    plain = w.__code__ is _PLAIN_CODE and bd.caller is None
    on = None if plain else w
    h = hc.HookCall(fn, bd.level, None if (bd.simple or not plain) else bd.record, bd.name,
                    bd.domain, bd.kind == "span", bd.hook.when == "call" and bd.kind != "span",
                    on, bd.cprog if plain else None)
    return functools.update_wrapper(h, fn)


def _make_py(fn, bd):
    """The pure-Python wrapper of fn for Binding bd."""
    lv = state.level
    L = bd.level
    kind = bd.kind
    at_call = bd.hook.when == "call" and kind != "span"
    caller = bd.caller is not None
    record = bd.record

    if bd.hook.handler_fn is not None:
        if not (inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn)
                or inspect.iscoroutinefunction(fn)):
            return _with_handler(fn, bd, lv, L)
        report.say("%s: handler %s wraps plain functions only, and %s is not one: recording a "
                   "timing span instead" % (bd.hook.where(), bd.hook.handler, bd.target),
                   warning=True)

    if inspect.isasyncgenfunction(fn):
        @functools.wraps(fn)
        async def agen_wrapper(*a, **kw):
            if L > lv.value or (caller and bd.skip_caller(2)):
                on = False
            else:
                on = True
                if at_call:
                    record(a, kw, None, None, None)
            start = now_ns() if on and not at_call else None
            ag = fn(*a, **kw)
            exc_type = None
            try:
                v = await ag.__anext__()
                while True:
                    try:
                        sent = yield v
                    except GeneratorExit:
                        await ag.aclose()
                        raise
                    except BaseException as e:
                        v = await ag.athrow(e)
                    else:
                        v = await ag.asend(sent)
            except StopAsyncIteration:
                pass
            except GeneratorExit:
                raise
            except BaseException as e:
                exc_type = type(e)
                raise
            finally:
                if start is not None:
                    record(a, kw, None, start, exc_type, now_ns())
        return agen_wrapper

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*a, **kw):
            if L > lv.value or (caller and bd.skip_caller(2)):
                return (yield from fn(*a, **kw))
            if at_call:
                record(a, kw, None, None, None)
                return (yield from fn(*a, **kw))
            start = now_ns()
            try:
                ret = yield from fn(*a, **kw)
            except GeneratorExit:
                record(a, kw, None, start, None, now_ns())
                raise
            except BaseException as e:
                record(a, kw, None, start, type(e), now_ns())
                raise
            record(a, kw, ret, start, None, now_ns())
            return ret
        return gen_wrapper

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_wrapper(*a, **kw):
            if L > lv.value or (caller and bd.skip_caller(2)):
                return await fn(*a, **kw)
            if at_call:
                record(a, kw, None, None, None)
                return await fn(*a, **kw)
            start = now_ns()
            try:
                ret = await fn(*a, **kw)
            except BaseException as e:
                record(a, kw, None, start, type(e), now_ns())
                raise
            record(a, kw, ret, start, None, now_ns())
            return ret
        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        if L > lv.value or (caller and bd.skip_caller(2)):
            return fn(*a, **kw)
        if at_call:
            record(a, kw, None, None, None)
            return fn(*a, **kw)
        start = now_ns()
        try:
            ret = fn(*a, **kw)
        except BaseException as e:
            record(a, kw, None, start, type(e), now_ns())
            raise
        record(a, kw, ret, start, None, now_ns())
        return ret
    return wrapper


class _Tracked:
    """The original function as a custom handler sees it: remembers whether
    it ran and what it gave, so a handler that fails never makes the
    server lose (or repeat) the call."""
    __slots__ = ("fn", "ran", "ret", "exc")

    def __init__(self, fn):
        self.fn, self.ran, self.ret, self.exc = fn, False, None, None

    def __call__(self, *a, **kw):
        self.ran = True
        try:
            self.ret = self.fn(*a, **kw)
        except BaseException as e:
            self.exc = e
            raise
        return self.ret


def _with_handler(fn, bd, lv, L):
    """The reference's custom handler: handler(original_func, *args, **kwargs)."""
    handler = bd.hook.handler_fn

    @functools.wraps(fn)
    def handler_wrapper(*a, **kw):
        if L > lv.value:
            return fn(*a, **kw)
        t = _Tracked(fn)
        try:
            return handler(t, *a, **kw)
        except BaseException as e:
            if t.ran:
                if t.exc is not None:
                    raise t.exc
                if e is not t.exc:
                    bd.fail("handler", e)
                return t.ret
            bd.fail("handler", e)
        return fn(*a, **kw)
    return handler_wrapper


# The code objects of the wrappers above (one per shape, shared by every
# closure made from it), for skip_caller.
_OWN_CODE = frozenset(c for fn in (_make_py, _with_handler) for c in fn.__code__.co_consts
                      if hasattr(c, "co_name"))
# The plain shape's: without caller_filter or handler, the C wrapper does
# its job itself.
_PLAIN_CODE = next(c for c in _make_py.__code__.co_consts
                   if getattr(c, "co_name", None) == "wrapper")
