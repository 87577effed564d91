# SPDX-License-Identifier: Apache-2.0
"""The expression language of hook files, parsed by hand (never eval()).

What it is for: a hook's attributes, request ids and metrics are written as
small expressions over the hooked call — ``len(input_ids)``,
``len(return) | str``, ``args[1] | len``, ``return[0] | attr input_ids``,
``kwargs['k']``, ``self.waiting | len`` — the reference's documented forms
(which its eval()-based engine only partly accepts), with nothing that can
call user code except ``len``/``str``/``int``/``float``/``bool``,
attribute reads, and ``| call NAME``: a method of the value, called with no
argument — what a framework offers where its state is a method, not an
attribute (SGLang's ``allocator.available_size()``). The hook file's author
names the method; nothing of the file is evaluated as Python.

Design: two stages. parse() turns the text into a small tree of tuples when
the hook file is read, so a syntax error is reported at start with the
column. bind() turns a tree into one Python closure per node once the
hooked function's signature is known, so each parameter name becomes a
fixed "positional i, else keyword, else default" accessor — no
inspect.signature().bind() per call — and a name the signature lacks is
reported when the hook binds, not at every call. flatten() resolves a tree
the same way into the op list the C wrapper evaluates without Python
(python/servprof/_hookexpr.c); both must give the same value and raise
the same exception for every node.

Grammar (| binds loosest):

    pipeline := term ( "|" op )*
    op       := len | str | int | float | bool | keys | values | sum | list
              | attr NAME | each NAME | call NAME
    term     := primary ( "[" pipeline "]" | "." NAME )*
    primary  := NAME | return | args | kwargs | self | this | item
              | NUMBER | STRING | None | True | False
              | FUNC "(" pipeline ")" | attr "(" pipeline "," STRING ")"
              | "(" pipeline ")"

A bound expression is called as fn(args, kwargs, ret, item) and may raise;
the caller (hooks/wrap.py) counts and reports that. None flows through a
pipe unchanged (the reference's rule: a missing value is not recorded).
"""

import re

_FUNCS = {"len": len, "str": str, "int": int, "float": float, "bool": bool}


def _keys(v):
    return list(v.keys())


def _values(v):
    return list(v.values())


_OPS = dict(_FUNCS, keys=_keys, values=_values, sum=sum, list=list)

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>-?\d+(?:\.\d+)?)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>[\[\]().,|])
""", re.X)


class ExprError(ValueError):
    """A syntax error: .text, .pos (0-based column) and a message."""

    def __init__(self, text, pos, msg):
        self.text, self.pos = text, pos
        super().__init__("%s at column %d of %r" % (msg, pos + 1, text))


def _tokens(text):
    out, i = [], 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if not m:
            raise ExprError(text, i, "unexpected character %r" % text[i])
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group(kind), i))
        i = m.end()
    out.append(("end", "", len(text)))
    return out


class _Parser:
    def __init__(self, text):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def take(self, kind=None, value=None):
        t = self.toks[self.i]
        if (kind and t[0] != kind) or (value is not None and t[1] != value):
            want = value if value is not None else kind
            got = t[1] if t[0] != "end" else "the end"
            raise ExprError(self.text, t[2], "expected %s, found %s" % (want, got))
        self.i += 1
        return t

    def pipeline(self):
        node = self.term()
        while self.peek()[1] == "|" and self.peek()[0] == "op":
            self.take()
            _, name, pos = self.take("name")
            if name in ("attr", "each"):
                _, an, _ = self.take("name")
                node = (name, node, an)
            elif name == "call":
                _, an, _ = self.take("name")
                node = ("method", node, an)
            elif name in _OPS:
                node = ("call", _OPS[name], name, node)
            else:
                raise ExprError(self.text, pos, "unknown pipe operation %r (known: %s, attr NAME, "
                                "each NAME, call NAME)" % (name, ", ".join(sorted(_OPS))))
        return node

    def term(self):
        node = self.primary()
        while True:
            kind, v, _ = self.peek()
            if kind == "op" and v == "[":
                self.take()
                idx = self.pipeline()
                self.take("op", "]")
                node = ("index", node, idx)
            elif kind == "op" and v == ".":
                self.take()
                _, an, _ = self.take("name")
                node = ("attr", node, an)
            else:
                return node

    def primary(self):
        kind, v, pos = self.take()
        if kind == "num":
            return ("const", float(v) if "." in v else int(v))
        if kind == "str":
            return ("const", _unquote(v))
        if kind == "op" and v == "(":
            node = self.pipeline()
            self.take("op", ")")
            return node
        if kind != "name":
            raise ExprError(self.text, pos, "expected a value, found %s" % (v or "the end"))
        if v in ("None", "True", "False"):
            return ("const", {"None": None, "True": True, "False": False}[v])
        nxt = self.peek()
        if nxt[0] == "op" and nxt[1] == "(":
            if v == "attr":  # the reference's attr(obj, 'name')
                self.take()
                obj = self.pipeline()
                self.take("op", ",")
                _, s, _ = self.take("str")
                self.take("op", ")")
                return ("attr", obj, _unquote(s))
            if v not in _FUNCS:
                raise ExprError(self.text, pos, "%r is not a function here (only %s)"
                                % (v, ", ".join(sorted(_FUNCS))))
            self.take()
            arg = self.pipeline()
            self.take("op", ")")
            return ("call", _FUNCS[v], v, arg)
        if v == "return":
            return ("ret",)
        if v == "args":
            return ("args",)
        if v == "kwargs":
            return ("kwargs",)
        if v == "item":
            return ("item",)
        if v == "this":
            return ("name", "self")
        return ("name", v)


def _unquote(s):
    return re.sub(r"\\(.)", r"\1", s[1:-1])


def parse(text):
    """The tree of an expression text; raises ExprError."""
    if not isinstance(text, str):
        text = str(text)
    p = _Parser(text)
    node = p.pipeline()
    p.take("end")
    return node


def names(node, out=None):
    """The parameter names an expression reads (a set)."""
    out = set() if out is None else out
    if node[0] == "name":
        out.add(node[1])
    for x in node[1:]:
        if isinstance(x, tuple):
            names(x, out)
    return out


def uses_return(node):
    if node[0] == "ret":
        return True
    return any(isinstance(x, tuple) and uses_return(x) for x in node[1:])


# ---------------------------------------------------------------- binding

class Params:
    """How to find each parameter of a function in (args, kwargs)."""

    def __init__(self, sig):
        self.pos = {}        # name -> (index, default or _MISSING)
        self.kwonly = {}     # name -> default
        self.var_kw = False
        self.var_pos = None  # the *args name
        for i, (n, p) in enumerate(sig.parameters.items()):
            d = _MISSING if p.default is p.empty else p.default
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                self.pos[n] = (i, d)
            elif p.kind == p.KEYWORD_ONLY:
                self.kwonly[n] = d
            elif p.kind == p.VAR_KEYWORD:
                self.var_kw = True
            elif p.kind == p.VAR_POSITIONAL:
                self.var_pos = (n, i)

    def has(self, name):
        return name in self.pos or name in self.kwonly or self.var_kw or \
            (self.var_pos is not None and self.var_pos[0] == name)

    def accessor(self, name, full=False):
        """fn(args, kwargs) reading the parameter; full: fn(args, kwargs,
        ret, item), the shape bind() gives every node (one call less per
        evaluation than wrapping the short one)."""
        if full:
            get = self.accessor(name)
            if name in self.pos:
                i, d = self.pos[name]
                if d is _MISSING:
                    def get_pos(args, kwargs, r, it):
                        if len(args) > i:
                            return args[i]
                        return get(args, kwargs)
                    return get_pos
            return lambda a, kw, r, it: get(a, kw)
        if name in self.pos:
            i, d = self.pos[name]

            def get(args, kwargs):
                if len(args) > i:
                    return args[i]
                v = kwargs.get(name, d)
                if v is _MISSING:
                    raise LookupError("parameter %r was not passed" % name)
                return v
            return get
        if self.var_pos is not None and self.var_pos[0] == name:
            j = self.var_pos[1]
            return lambda args, kwargs: args[j:]
        d = self.kwonly.get(name, _MISSING)

        def get_kw(args, kwargs):
            v = kwargs.get(name, d)
            if v is _MISSING:
                raise LookupError("parameter %r was not passed" % name)
            return v
        return get_kw


_MISSING = object()


def _getattr(v, name):
    if v is None:
        return None
    return getattr(v, name)


def bind(node, params):
    """A closure fn(args, kwargs, ret, item) for a parsed tree. params: a
    Params, or None (then only return/args/kwargs/item are known).
    Raises LookupError naming a parameter the function does not have."""
    k = node[0]
    if k == "const":
        c = node[1]
        return lambda a, kw, r, it: c
    if k == "ret":
        return lambda a, kw, r, it: r
    if k == "args":
        return lambda a, kw, r, it: a
    if k == "kwargs":
        return lambda a, kw, r, it: kw
    if k == "item":
        return lambda a, kw, r, it: it
    if k == "name":
        n = node[1]
        if params is None or not params.has(n):
            raise LookupError("the function has no parameter %r" % n)
        return params.accessor(n, True)
    if k == "attr":
        inner, an = bind(node[1], params), node[2]
        return lambda a, kw, r, it: _getattr(inner(a, kw, r, it), an)
    if k == "method":
        inner, an = bind(node[1], params), node[2]

        def method(a, kw, r, it):
            v = inner(a, kw, r, it)
            return None if v is None else getattr(v, an)()
        return method
    if k == "each":
        inner, an = bind(node[1], params), node[2]

        def each(a, kw, r, it):
            v = inner(a, kw, r, it)
            return None if v is None else [getattr(x, an) for x in v]
        return each
    if k == "index":
        obj, idx = bind(node[1], params), bind(node[2], params)

        def index(a, kw, r, it):
            v = obj(a, kw, r, it)
            return None if v is None else v[idx(a, kw, r, it)]
        return index
    if k == "call":
        fn, inner = node[1], bind(node[3], params)

        def call(a, kw, r, it):
            v = inner(a, kw, r, it)
            return None if v is None else fn(v)
        return call
    raise AssertionError(node)


# ---------------------------------------------------------------- flat ops

# The op codes of flatten(), the same numbers as _hookexpr.c's HX_* enum.
OP_CONST, OP_RET, OP_ARGS, OP_KWARGS, OP_ITEM, OP_POS, OP_KW, OP_VARPOS, OP_ATTR, OP_METHOD, \
    OP_EACH, OP_INDEX, OP_CALL = range(13)


def flatten(node, params):
    """A parsed tree as the op list the C extension evaluates
    (python/servprof/_hookexpr.c): a list of (code, a, b, c) tuples,
    children before parents, the root last; a and b of a node with
    children are the indexes of its operands. The parameter accessors are
    resolved here, as bind() resolves them, so both read the same value.
    Raises LookupError as bind() does."""
    out = []

    def op(code, a=None, b_=None, c=None):
        out.append((code, a, b_, c))
        return len(out) - 1

    def walk(n):
        k = n[0]
        if k == "const":
            return op(OP_CONST, n[1])
        if k in ("ret", "args", "kwargs", "item"):
            return op({"ret": OP_RET, "args": OP_ARGS, "kwargs": OP_KWARGS, "item": OP_ITEM}[k])
        if k == "name":
            name = n[1]
            if params is None or not params.has(name):
                raise LookupError("the function has no parameter %r" % name)
            if name in params.pos:
                i, d = params.pos[name]
                return op(OP_POS, i, name, () if d is _MISSING else (d,))
            if params.var_pos is not None and params.var_pos[0] == name:
                return op(OP_VARPOS, params.var_pos[1])
            d = params.kwonly.get(name, _MISSING)
            return op(OP_KW, 0, name, () if d is _MISSING else (d,))
        if k in ("attr", "method", "each"):
            code = {"attr": OP_ATTR, "method": OP_METHOD, "each": OP_EACH}[k]
            return op(code, walk(n[1]), n[2])
        if k == "index":
            return op(OP_INDEX, walk(n[1]), walk(n[2]))
        if k == "call":
            return op(OP_CALL, walk(n[3]), n[2], n[1])
        raise AssertionError(n)

    walk(node)
    return out
