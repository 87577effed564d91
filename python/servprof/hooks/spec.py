# SPDX-License-Identifier: Apache-2.0
"""Reading hook files: the reference's YAML list of symbols, plus servprof's
extensions, into Hook objects (nothing is imported or wrapped here).

The reference's format (its users' files work as they are):

    - symbol: "pkg.module:Class.method"      # or "pkg.module:function"
      name: forward                          # default: the function's name
      domain: ModelExecute                   # default: "Default"
      handler: timer                         # or "pkg.mod:func"; default timer
      min_version: "0.9.1"                   # of the installed distribution
      max_version: "0.14.0rc1"
      caller_filter: step                    # only when called from a function named so
      attributes:
        - {name: input_len, expr: "len(input_ids)"}
        - {name: first, expr: "return[0] | attr input_ids | len"}
    - symbol: "pkg.models.*:*.embed"         # wildcards: modules and classes

servprof's extensions (a reference engine ignores unknown keys):

      emit: span | event | link              # default span
      when: return | call                    # an event's moment; default return
      level: INFO | DETAILED | VERBOSE       # default INFO
      package: vllm                          # the distribution the versions are of
      rid: "request | attr request_id"       # the record's request id(s): one
                                             # expression, a list of them, or
      rid: {each: "return", rid: "item[0].engine_id", iter: "item[0].iter"}
      metrics: [{name: QueueSize, expr: "self.waiting | len"}, {name: N, expr: ..., inc: true}]
      scope: {name: QueueName, value: WAITING}
      link: {from: "http_id", to: "engine_id"}
      attributes: {input_len: "len(input_ids)"}   # a mapping works too

Design: every entry is checked here as far as it can be without importing:
its keys, its version strings, its expressions (parsed; see expr.py). An
entry with a fault becomes a Hook whose .error says why; it is reported and
never bound, and the rest of the file goes on.
"""

import fnmatch
import os

from . import expr, version

KNOWN = {"symbol", "name", "domain", "handler", "min_version", "max_version", "caller_filter",
         "attributes", "emit", "when", "level", "package", "rid", "metrics", "scope", "link"}
_LEVELS = {"ERROR": 10, "INFO": 20, "DETAILED": 30, "VERBOSE": 40, "L0": 20, "L1": 30, "L2": 40}


class Expr:
    """One expression of a hook: its text and its tree."""
    __slots__ = ("text", "tree", "what")

    def __init__(self, text, what):
        self.text, self.what = str(text), what
        self.tree = expr.parse(self.text)


class Hook:
    """One entry of a hook file."""

    def __init__(self, source, index):
        self.source, self.index = source, index  # file path, 1-based entry number
        self.symbol = None
        self.module = None       # "pkg.mod" (may hold * when a pattern)
        self.qual = None         # ["Class", "method"] or ["function"]
        self.name = None
        self.domain = "Default"
        self.emit = "span"
        self.when = "return"
        self.level = 20
        self.handler = None      # "pkg.mod:func" or None (timer)
        self.handler_fn = None   # the imported handler (bind.py), when it imports
        self.min_version = self.max_version = None
        self.package = None
        self.caller_filter = None
        self.attributes = []     # [(key, Expr)]
        self.metrics = []        # [(name, Expr, inc)]
        self.rid = None          # None | [Expr] | ("each", Expr, [(field, Expr)])
        self.scope = None        # (name, value)
        self.link = None         # (Expr, Expr)
        self.error = None        # why the entry cannot bind (set when read)
        self.warnings = []       # what was read but is not used

    @property
    def pattern(self):
        return self.symbol is not None and "*" in self.symbol

    def where(self):
        return "%s entry %d (%s)" % (os.path.basename(self.source), self.index,
                                     self.symbol or "no symbol")

    def exprs(self):
        """Every expression of the hook: [(what, Expr)]."""
        out = [(e.what, e) for _, e in self.attributes]
        out += [(e.what, e) for _, e, _ in self.metrics]
        if self.rid is not None:
            if isinstance(self.rid, tuple):
                out.append((self.rid[1].what, self.rid[1]))
                out += [(e.what, e) for _, e in self.rid[2]]
            else:
                out += [(e.what, e) for e in self.rid]
        if self.link:
            out += [(e.what, e) for e in self.link]
        return out

    def matches_module(self, modname):
        if self.pattern:
            return fnmatch.fnmatchcase(modname, self.module)
        return modname == self.module


def _entry(source, index, item):
    h = Hook(source, index)
    if not isinstance(item, dict):
        h.error = "not a mapping (each entry is `- symbol: module:name` with its keys)"
        return h
    sym = item.get("symbol")
    h.symbol = sym if isinstance(sym, str) else None
    try:
        _read(h, item)
    except expr.ExprError as e:
        h.error = "bad expression: %s" % e
    except (ValueError, TypeError) as e:
        h.error = str(e)
    return h


def _read(h, item):
    if h.symbol is None:
        raise ValueError("no symbol (a string `module.path:Class.method`)")
    unknown = sorted(set(item) - KNOWN)
    if unknown:
        h.warnings.append("unknown keys ignored: %s" % ", ".join(map(str, unknown)))
    if h.symbol.count(":") != 1:
        raise ValueError("symbol %r: expected one colon, `module.path:Class.method` or "
                         "`module.path:function`" % h.symbol)
    h.module, rest = (s.strip() for s in h.symbol.split(":"))
    h.qual = rest.split(".")
    if not h.module or not all(h.qual):
        raise ValueError("symbol %r: empty module or name" % h.symbol)
    if "*" in h.qual[-1]:
        raise ValueError("symbol %r: the function name may not hold * (only modules and "
                         "classes may)" % h.symbol)
    h.name = str(item.get("name") or h.qual[-1])
    h.domain = str(item.get("domain") or "Default")
    h.emit = str(item.get("emit", "span"))
    if h.emit not in ("span", "event", "link"):
        raise ValueError("emit: %r is not span, event or link" % h.emit)
    h.when = str(item.get("when", "return"))
    if h.when not in ("return", "call"):
        raise ValueError("when: %r is not return or call" % h.when)
    lv = item.get("level", "INFO")
    if isinstance(lv, int) and not isinstance(lv, bool):
        h.level = lv
    elif str(lv).upper() in _LEVELS:
        h.level = _LEVELS[str(lv).upper()]
    else:
        raise ValueError("level: %r is not one of %s" % (lv, ", ".join(_LEVELS)))
    handler = item.get("handler")
    if handler is not None and str(handler).lower() != "timer":
        h.handler = str(handler)
    for k in ("min_version", "max_version"):
        v = item.get(k)
        if v is not None:
            v = str(v)
            try:
                version.parse(v)
            except ValueError as e:
                raise ValueError("bad version string in %s: %s" % (k, e))
            setattr(h, k, v)
    if item.get("package") is not None:
        h.package = str(item["package"])
    if item.get("caller_filter") is not None:
        h.caller_filter = str(item["caller_filter"])

    attrs = item.get("attributes") or []
    if isinstance(attrs, dict):
        attrs = [{"name": k, "expr": v} for k, v in attrs.items()]
    if not isinstance(attrs, list):
        raise ValueError("attributes: a list of {name, expr} (or a mapping name: expr)")
    for a in attrs:
        if not isinstance(a, dict) or "name" not in a or "expr" not in a:
            raise ValueError("attributes: each item needs name and expr, got %r" % (a,))
        h.attributes.append((str(a["name"]), Expr(a["expr"], "attribute %s" % a["name"])))

    mets = item.get("metrics") or []
    if isinstance(mets, dict):
        mets = [{"name": k, "expr": v} for k, v in mets.items()]
    for m in mets:
        if not isinstance(m, dict) or "name" not in m or "expr" not in m:
            raise ValueError("metrics: each item needs name and expr, got %r" % (m,))
        h.metrics.append((str(m["name"]), Expr(m["expr"], "metric %s" % m["name"]),
                          bool(m.get("inc"))))

    rid = item.get("rid")
    if isinstance(rid, dict):
        if "each" not in rid:
            raise ValueError("rid: a mapping needs `each` (the list) and `rid` (per item)")
        fields = [(str(k), Expr(v, "rid field %s" % k)) for k, v in rid.items() if k != "each"]
        if not any(k == "rid" for k, _ in fields):
            raise ValueError("rid: a mapping needs a `rid` field (the id of each item)")
        h.rid = ("each", Expr(rid["each"], "rid each"), fields)
    elif isinstance(rid, list):
        h.rid = [Expr(r, "rid") for r in rid]
    elif rid is not None:
        h.rid = [Expr(rid, "rid")]

    sc = item.get("scope")
    if sc is not None:
        if not isinstance(sc, dict) or "name" not in sc:
            raise ValueError("scope: {name: QueueName, value: WAITING}")
        h.scope = (str(sc["name"]), sc.get("value", 0))

    ln = item.get("link")
    if ln is not None:
        if not isinstance(ln, dict) or "from" not in ln or "to" not in ln:
            raise ValueError("link: {from: EXPR, to: EXPR} (from: the upstream id)")
        h.link = (Expr(ln["from"], "link from"), Expr(ln["to"], "link to"))
    if h.emit == "link" and h.link is None:
        raise ValueError("emit: link needs link: {from: EXPR, to: EXPR}")
    if h.when == "call":
        for what, e in h.exprs():
            if expr.uses_return(e.tree):
                raise ValueError("%s reads `return`, but the record is made at the call "
                                 "(when: call)" % what)


def _yaml_load(text, path):
    try:
        import yaml
    except ImportError:
        raise ValueError("PyYAML is needed to read %s (Debian: apt-get install python3-yaml; "
                         "pip install pyyaml); a .json hook file needs nothing" % path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError("%s is not valid YAML: %s" % (path, e))


def load(path):
    """The hooks of one file: [Hook]. Raises ValueError when the file
    cannot be read at all (missing, not YAML/JSON, not a list)."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            text = f.read()
    except OSError as e:
        raise ValueError("cannot read hook file %s: %s" % (path, e.strerror or e))
    if path.endswith(".json"):
        import json
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ValueError("%s is not valid JSON: %s" % (path, e))
    else:
        data = _yaml_load(text, path)
    if data is None:
        return []
    if not isinstance(data, list):
        raise ValueError("%s: a hook file is a list of entries (`- symbol: ...`), not a %s"
                         % (path, type(data).__name__))
    return [_entry(path, i + 1, item) for i, item in enumerate(data)]
