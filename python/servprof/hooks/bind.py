# SPDX-License-Identifier: Apache-2.0
"""Binding hooks to live functions: the registry of a process's hooks and
the import hook that applies them.

Design: a hook names a module; the module may be imported before servprof
installs its hooks (a plugin loaded late) or after (the usual case with
`python -m servprof run`). Both end in Registry.apply(module): right after
installing, for every module already in sys.modules; afterwards from the
import hook — a sys.meta_path finder that, for a module some hook names,
asks the other finders for the spec and wraps the spec's loader so that
exec_module() runs the module and then applies its hooks, before any other
module can `from m import f` the unwrapped function. Nothing is imported
to look for a hook's module (only top-level packages are looked up, which
imports nothing), so installing hooks never changes a server's import
order.

Each hook ends in one of three states, each change said once (report.py):
bound (with the targets it wrapped), waiting (its module not imported
yet), not bound (why: module not installed, attribute gone, version out of
range, a parameter an expression names missing from the signature, ...).
A hook is applied to an object at most once: wrappers carry the keys of
the hooks they hold in __servprof_hooks__, so installing the same file
twice (a plugin and the environment) wraps nothing twice.
"""

import fnmatch
import importlib
import importlib.abc
import importlib.util
import inspect
import sys
import threading
import types

from . import report, spec as _spec, version as _version, wrap as _wrap

_BOUND, _WAITING, _FAILED = "bound", "waiting", "not bound"


def _key(hook):
    return (hook.source, hook.index)


# ---------------------------------------------------------------- versions

_dists = None


def distribution_of(top):
    """The installed distribution providing top-level package `top`, or None."""
    global _dists
    import importlib.metadata as md
    try:  # the usual case, and cheap: the distribution is named as its package
        return top, md.version(top)
    except Exception:
        pass
    if _dists is None:  # scans every installed distribution: once
        try:
            _dists = md.packages_distributions()
        except Exception:  # Python < 3.10, or a broken dist-info
            _dists = {}
    names = _dists.get(top) or [top]
    for n in names:
        try:
            return n, md.version(n)
        except Exception:
            continue
    return None


def _version_ok(hook):
    """None when the hook may bind, else why not."""
    if hook.min_version is None and hook.max_version is None:
        return None
    top = hook.module.split(".")[0]
    if hook.package:
        import importlib.metadata as md
        try:
            found = hook.package, md.version(hook.package)
        except Exception:
            return "version range given, but distribution %r (package:) is not installed" \
                % hook.package
    else:
        found = distribution_of(top)
        if found is None:
            return ("version range given, but no installed distribution provides %r (name it "
                    "with package:)" % top)
    name, v = found
    try:
        ok = _version.in_range(v, hook.min_version, hook.max_version)
    except ValueError as e:
        return "installed %s has a version servprof cannot read: %s" % (name, e)
    if not ok:
        return "version outside range: %s %s is not in [%s, %s]" % (
            name, v, hook.min_version or "any", hook.max_version or "any")
    return None


# ---------------------------------------------------------------- wrapping

class _Unbound(Exception):
    """Why one target could not be wrapped."""


def _wrap_attr(owner, attr, hook, target):
    """Wraps owner.attr for hook. Returns True when wrapped, False when it
    already held this hook; raises _Unbound saying why it cannot."""
    if isinstance(owner, type):
        try:
            raw = inspect.getattr_static(owner, attr)
        except AttributeError:
            raise _Unbound("attribute gone: %s has no %r" % (owner.__qualname__, attr))
    else:
        raw = owner.__dict__.get(attr, None) if hasattr(owner, "__dict__") else None
        if raw is None:
            raw = getattr(owner, attr, None)
        if raw is None:
            raise _Unbound("attribute gone: %s has no %r" % (getattr(owner, "__name__", owner), attr))
    remake = None
    fn = raw
    if isinstance(raw, staticmethod):
        fn, remake = raw.__func__, staticmethod
    elif isinstance(raw, classmethod):
        fn, remake = raw.__func__, classmethod
    elif isinstance(raw, property):
        raise _Unbound("%s is a property, not a function" % target)
    if not callable(fn):
        raise _Unbound("%s is a %s, not a function" % (target, type(fn).__name__))
    held = getattr(fn, "__servprof_hooks__", frozenset())
    if _key(hook) in held:
        return False
    try:
        bd = _wrap.Binding(hook, fn, target)
    except LookupError as e:
        params = _signature_text(fn)
        raise _Unbound("signature without the parameter an expression names: %s; %s%s"
                       % (e.args[0] if e.args else e, target, params))
    w = _wrap.make(fn, bd)
    w.__servprof_hooks__ = frozenset(held | {_key(hook)})
    w.__servprof_binding__ = bd
    setattr(owner, attr, remake(w) if remake else w)
    return True


def _signature_text(fn):
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(signature unknown)"


def _resolve_handler(hook):
    """The reference's `handler: pkg.mod:func`; when it cannot be imported,
    the hook records a timing span (the reference's fallback), said once."""
    hook.handler_fn = None
    if not hook.handler:
        return
    mod, _, name = hook.handler.partition(":")
    try:
        fn = getattr(importlib.import_module(mod), name)
        if not callable(fn):
            raise TypeError("not callable")
        hook.handler_fn = fn
    except Exception as e:
        hook.warnings.append("handler %s cannot be used (%s: %s); recording a timing span "
                             "instead" % (hook.handler, type(e).__name__, e))


# ---------------------------------------------------------------- registry

class Registry:
    """The hooks of this process. Thread-safe (imports run on any thread)."""

    def __init__(self):
        self.files = []       # [(path, [Hook] or None, error)]
        self.state = {}       # key -> [state, why, [targets]]
        self.hooks = []       # every readable Hook with no fault
        self._lock = threading.RLock()
        self._finder = None
        self.loud = True      # say late failures (off for `hooks check`)

    # -- reading

    def add_file(self, path):
        try:
            hooks = _spec.load(path)
        except ValueError as e:
            self.files.append((path, None, str(e)))
            return
        self.files.append((path, hooks, None))
        for h in hooks:
            if h.error:
                self.state[_key(h)] = [_FAILED, h.error, []]
                continue
            _resolve_handler(h)
            top = h.module.split(".")[0]
            if "*" in top:
                self.state[_key(h)] = [_FAILED, "the top-level package may not be a wildcard", []]
                continue
            # A package not found now may still come: at interpreter start
            # (sitecustomize) the script's own folder is not on sys.path
            # yet. So it waits, and never_bound() says "not installed" at
            # exit if it never came.
            why = _version_ok(h)
            if why:
                self.state[_key(h)] = [_FAILED, why, []]
                continue
            self.state[_key(h)] = [_WAITING, None, []]
            self.hooks.append(h)

    # -- applying

    def wants(self, name):
        for h in self.hooks:
            if h.matches_module(name) and self.state[_key(h)][0] != _FAILED:
                return True
        return False

    def apply(self, module):
        """Applies every hook naming this module (just executed or found)."""
        name = getattr(module, "__name__", None)
        if not name:
            return
        with self._lock:
            for h in self.hooks:
                st = self.state[_key(h)]
                if st[0] == _FAILED or not h.matches_module(name):
                    continue
                try:
                    self._apply_one(h, module, st)
                except _Unbound as e:
                    if h.pattern:  # one module of many: the others may still bind
                        continue
                    st[0], st[1] = _FAILED, str(e)
                    if self._finder is not None and self.loud:
                        report.not_bound(h, st[1])
                except Exception as e:  # never into the server's import
                    st[0], st[1] = _FAILED, "%s: %s" % (type(e).__name__, e)
                    if self._finder is not None and self.loud:
                        report.not_bound(h, st[1])

    def _apply_one(self, h, module, st):
        if not h.pattern:
            obj = module
            for q in h.qual[:-1]:
                nxt = getattr(obj, q, None)
                if nxt is None:
                    raise _Unbound("attribute gone: %s has no %r" % (
                        getattr(obj, "__qualname__", getattr(obj, "__name__", "?")), q))
                obj = nxt
            target = "%s:%s" % (module.__name__, ".".join(h.qual))
            _wrap_attr(obj, h.qual[-1], h, target)
            st[0], st[1] = _BOUND, None
            if target not in st[2]:
                st[2].append(target)
            return
        # Patterns: classes (or functions) defined in this module whose
        # names match; an inherited method is bound where it is defined.
        attr = h.qual[-1]
        found = []
        if len(h.qual) == 1:
            fn = module.__dict__.get(attr)
            if callable(fn) and getattr(fn, "__module__", None) == module.__name__:
                found.append((module, "%s:%s" % (module.__name__, attr)))
        else:
            cpat = ".".join(h.qual[:-1])
            for cname, cls in list(vars(module).items()):
                if isinstance(cls, type) and cls.__module__ == module.__name__ \
                        and fnmatch.fnmatchcase(cname, cpat) and attr in cls.__dict__:
                    found.append((cls, "%s:%s.%s" % (module.__name__, cname, attr)))
        for owner, target in found:
            try:
                _wrap_attr(owner, attr, h, target)
            except _Unbound:
                continue
            st[0] = _BOUND
            if target not in st[2]:
                st[2].append(target)

    # -- install

    def install(self, say=True):
        """Puts the import hook first in sys.meta_path, applies the hooks to
        modules already imported, and says one line per file."""
        with self._lock:
            if self._finder is None:
                self._finder = _Finder(self)
                sys.meta_path.insert(0, self._finder)
            for name, mod in list(sys.modules.items()):
                if isinstance(mod, types.ModuleType) and self.wants(name):
                    self.apply(mod)
        if say:
            self.say_files()

    def uninstall(self):
        with self._lock:
            if self._finder is not None and self._finder in sys.meta_path:
                sys.meta_path.remove(self._finder)
            self._finder = None

    def say_files(self):
        for path, hooks, err in self.files:
            if hooks is None:
                report.say("%s: not read: %s" % (path, err), warning=True)
                continue
            n = {_BOUND: 0, _WAITING: 0, _FAILED: 0}
            for h in hooks:
                n[self.state[_key(h)][0]] += 1
            report.say("%s: %d hook%s: %d bound, %d waiting for their module's import, "
                       "%d not bound" % (path, len(hooks), "" if len(hooks) == 1 else "s",
                                         n[_BOUND], n[_WAITING], n[_FAILED]))
            for h in hooks:
                for w in h.warnings:
                    report.say("%s: %s" % (h.where(), w), warning=True)
                st = self.state[_key(h)]
                if st[0] == _FAILED:
                    report.not_bound(h, st[1])

    # -- reports

    def table(self):
        """[(file, index, symbol, state, detail)] for every entry."""
        out = []
        for path, hooks, err in self.files:
            if hooks is None:
                out.append((path, 0, "-", _FAILED, err))
                continue
            for h in hooks:
                st = self.state[_key(h)]
                detail = st[1] or ", ".join(st[2]) or ""
                if st[0] == _WAITING and not detail:
                    detail = "module %s not imported" % h.module
                out.append((path, h.index, h.symbol or "-", st[0], detail))
        return out

    def never_bound(self):
        """Hooks still waiting whose module cannot exist: [(hook, why)]."""
        out = []
        for h in self.hooks:
            st = self.state[_key(h)]
            if st[0] != _WAITING or h.pattern:
                continue
            top = h.module.split(".")[0]
            try:
                found = importlib.util.find_spec(top) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                out.append((h, "module not installed (no package %r)" % top))
                continue
            parent = h.module.rpartition(".")[0]
            if parent and parent in sys.modules:
                try:
                    if importlib.util.find_spec(h.module) is None:
                        out.append((h, "module %s does not exist in the installed %s"
                                    % (h.module, h.module.split(".")[0])))
                except (ImportError, ValueError):
                    pass
        return out

    def import_all(self):
        """For `servprof hooks check`: imports every module the hooks name
        (pattern modules: every submodule of the pattern's fixed prefix)."""
        import pkgutil
        mods = set()
        for h in self.hooks:
            if not h.pattern:
                mods.add(h.module)
                continue
            prefix = h.module.split("*")[0].rstrip(".")
            try:
                pkg = importlib.import_module(prefix)
            except Exception:
                continue
            for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), prefix + "."):
                if fnmatch.fnmatchcase(info.name, h.module):
                    mods.add(info.name)
        for m in sorted(mods):
            try:
                importlib.import_module(m)
            except Exception as e:
                if isinstance(e, ModuleNotFoundError) and e.name and \
                        (m == e.name or m.startswith(e.name + ".")):
                    why = "module not installed (no module %r)" % e.name
                else:
                    why = "import %s failed: %s: %s" % (m, type(e).__name__, e)
                for h in self.hooks:
                    st = self.state[_key(h)]
                    if not h.pattern and h.module == m and st[0] == _WAITING:
                        st[0], st[1] = _FAILED, why
        for h in self.hooks:
            st = self.state[_key(h)]
            if st[0] == _WAITING:
                st[0] = _FAILED
                st[1] = "no module matches %s" % h.module if h.pattern else \
                    "module %s was imported but the hook did not bind" % h.module


class _Loader(importlib.abc.Loader):
    """The loader of a module some hook names: the real loader's work, then
    the hooks. Everything else is the real loader's."""

    def __init__(self, inner, registry):
        self._inner = inner
        self._registry = registry

    def create_module(self, spec):
        cm = getattr(self._inner, "create_module", None)
        return cm(spec) if cm is not None else None

    def exec_module(self, module):
        self._inner.exec_module(module)
        try:
            self._registry.apply(module)
        except Exception:  # the server's import must succeed
            pass

    def __getattr__(self, name):
        if name in ("_inner", "_registry"):  # not set yet (a copy, unpickling)
            raise AttributeError(name)
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, registry):
        self._registry = registry
        self._busy = threading.local()

    def find_spec(self, name, path=None, target=None):
        if getattr(self._busy, "on", False) or not self._registry.wants(name):
            return None
        self._busy.on = True
        try:
            spec = None
            for f in sys.meta_path:
                if f is self:
                    continue
                fs = getattr(f, "find_spec", None)
                if fs is None:
                    continue
                spec = fs(name, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.on = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, self._registry)
        return spec
