/* SPDX-License-Identifier: Apache-2.0 */
/*
 * _hookcall.c — the C wrapper of a hooked plain function (module
 * servprof._hookcall), and the one-call record writer every hook shape uses.
 *
 * WHY C: a hook must cost "one load and a branch" while collection is off
 * and at most ~2 us while it is on (docs/hooks.md, "What a hook costs").
 * The pure-Python wrapper (hooks/wrap.py) pays a Python frame, star-args
 * packing and a ctypes attribute read when off (~330 ns), and one ctypes
 * call (~0.3-1 us each) per C function of a record when on.
 *
 * DESIGN
 * - HookCall is a callable object implementing vectorcall. Off (the hook's
 *   level above the library's servprof__level), it forwards the caller's
 *   argument array untouched to the wrapped function: no tuple, no dict,
 *   no Python frame of its own. The level is read with a relaxed load, as
 *   servprof_is_enabled() does in C.
 * - On, a HookCall made with `on` (a generator or coroutine function, a
 *   caller filter, a custom handler: shapes whose record is made by a
 *   Python wrapper) hands the call to that wrapper as it came; otherwise
 *   a hook with no expressions (kind span or event, nothing to
 *   evaluate) is recorded entirely here with direct calls into
 *   libservprof, and so is every hook with expressions (a rid — one
 *   expression, a list, "each" — attributes, metrics, a scope, a link):
 *   its expressions compiled when it binds and evaluated in C
 *   (_hookexpr.c), reading the parameters from the caller's argument
 *   array — no tuple, no Python frame ("Compiled records" below). With
 *   SERVPROF_HOOKS_CEXPR=0 a hook packs the arguments once, calls the
 *   Binding's Python record() (which evaluates the expressions) and that
 *   hands every value to emit() below in ONE call.
 * - It does not link libservprof: wrap.py hands setup() the address of
 *   servprof__level and of each function, taken from the ctypes handle the
 *   binding loaded, so both always talk to the same copy of the library.
 *   Those addresses are process-wide statics, set once (under the GIL)
 *   before any HookCall exists; a single interpreter is assumed.
 * - Descriptor behaviour is a function's: bound to an instance it becomes
 *   a method (PyMethod_New), from the class it is itself; classmethod and
 *   staticmethod made around it (bind.py) work as around a function. It
 *   has a __dict__ so functools.update_wrapper() gives it __wrapped__ and
 *   the names, which inspect.signature() follows; attributes it lacks
 *   (__code__, __defaults__ ...) are read from the wrapped function, so
 *   inspect.iscoroutinefunction() and isgeneratorfunction() answer as for
 *   it. Off, a coroutine or generator function's call returns the
 *   original's coroutine or generator: awaited or iterated, the same.
 *
 * RULES kept from wrap.py: the wrapped function's result or exception is
 * never changed; an error of the hook itself never raises into the caller
 * (an Exception from record() is dropped: record() reports its own; only
 * a BaseException such as KeyboardInterrupt goes on, as in Python).
 * Thread safety: every call runs under the GIL; a HookCall is immutable
 * after construction apart from its __dict__.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_hookexpr.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* libservprof, through the addresses setup() was given                */
/* ------------------------------------------------------------------ */

typedef void rec; /* servprof_rec */

static const int *level_p;                 /* &servprof__level */
static int64_t (*now_ns)(void);
static rec *(*rec_begin_slow)(int, const char *);
static void (*rec_cancel)(rec *);
static void (*span_at)(rec *, const char *, int64_t, int64_t);
static void (*event)(rec *, const char *);
static void (*attr_bool)(rec *, const char *, int);
static void (*attr_str)(rec *, const char *, const char *);
static void (*attr_strn)(rec *, const char *, const char *, size_t);
static void (*attr_int)(rec *, const char *, int64_t);
static void (*attr_double)(rec *, const char *, double);
static void (*attr_json)(rec *, const char *, const char *);
static void (*res_str)(rec *, const char *);
static void (*res_int)(rec *, int64_t);
static void (*metric)(rec *, const char *, double);
static void (*metric_inc)(rec *, const char *, double);
static void (*metric_scope)(rec *, const char *, const char *);
static void (*attr_array_begin)(rec *, const char *);
static void (*attr_object_begin)(rec *, const char *);
static void (*attr_end)(rec *);
static void (*link_ids)(const char *, const char *); /* servprof_link */
/* Python callables (wrap.py) for values this file does not write itself:
 * json_text(v) -> bytes of JSON; rid_text(v) -> str (a resource id) or
 * bytes (the JSON of a rid list). */
static PyObject *json_text_cb, *rid_text_cb;

/* An int argument; -1 with an error set when it is not one. */
static int as_int(PyObject *o, int *out)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT32_MIN || v > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a level must fit an int");
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int level_now(void)
{
    return __atomic_load_n(level_p, __ATOMIC_RELAXED);
}

/* The exception class's __name__ (tp_name without its module part). */
static const char *type_name(PyObject *t)
{
    const char *s = ((PyTypeObject *)t)->tp_name;
    const char *dot = strrchr(s, '.');
    return dot ? dot + 1 : s;
}

/* ------------------------------------------------------------------ */
/* Typed values, as _core.put() types them                             */
/* ------------------------------------------------------------------ */

/* A str as UTF-8; lone surrogates replaced, as encode("utf-8", "replace").
 * Returns a new bytes reference or NULL (error set). */
static PyObject *utf8(PyObject *s)
{
    PyObject *o = PyUnicode_AsEncodedString(s, "utf-8", "replace");
    return o;
}

/* Depth of nested lists/dicts written directly; deeper goes through JSON. */
#define TREE_DEPTH 8

/* An int that fits int64: 1 (x set), else 0 (no error left set). */
static int int64_of(PyObject *v, long long *x)
{
    int over = 0;
    *x = PyLong_AsLongLongAndOverflow(v, &over);
    if (*x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return over == 0;
}

/* True when v is made only of exact str (valid UTF-8), bool, int64, finite
 * float, list, tuple and dict with str keys: what write_tree() writes as
 * json_text() would. Runs no Python code, so nothing changes under it. */
static int plain_tree(PyObject *v, int depth)
{
    if (PyUnicode_CheckExact(v)) {
        if (PyUnicode_AsUTF8(v))
            return 1;
        PyErr_Clear();
        return 0;
    }
    if (PyBool_Check(v))
        return 1;
    if (PyLong_CheckExact(v)) {
        long long x;
        return int64_of(v, &x);
    }
    if (PyFloat_CheckExact(v))
        return isfinite(PyFloat_AS_DOUBLE(v));
    if (depth >= TREE_DEPTH)
        return 0;
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        PyObject **it = PySequence_Fast_ITEMS(v);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!plain_tree(it[i], depth + 1))
                return 0;
        return 1;
    }
    if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0;
        PyObject *k, *x;
        while (PyDict_Next(v, &pos, &k, &x))
            if (!PyUnicode_CheckExact(k) || !plain_tree(k, depth + 1) ||
                !plain_tree(x, depth + 1))
                return 0;
        return 1;
    }
    return 0;
}

/* Writes a value plain_tree() accepted, with the nested-value calls. */
static void write_tree(rec *r, const char *key, PyObject *v)
{
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        attr_strn(r, key, s, (size_t)n);
    } else if (PyBool_Check(v)) {
        attr_bool(r, key, v == Py_True);
    } else if (PyLong_CheckExact(v)) {
        long long x;
        int64_of(v, &x);
        attr_int(r, key, (int64_t)x);
    } else if (PyFloat_CheckExact(v)) {
        attr_double(r, key, PyFloat_AS_DOUBLE(v));
    } else if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0;
        PyObject *k, *x;
        attr_object_begin(r, key);
        while (PyDict_Next(v, &pos, &k, &x))
            write_tree(r, PyUnicode_AsUTF8(k), x);
        attr_end(r);
    } else {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        PyObject **it = PySequence_Fast_ITEMS(v);
        attr_array_begin(r, key);
        for (Py_ssize_t i = 0; i < n; i++)
            write_tree(r, NULL, it[i]);
        attr_end(r);
    }
}

/* attr_json(key, cb(v)); cb must return bytes. */
static int put_json_cb(rec *r, const char *key, PyObject *cb, PyObject *v)
{
    PyObject *t = PyObject_CallOneArg(cb, v);
    if (!t)
        return -1;
    if (!PyBytes_Check(t)) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_TypeError, "emit: the JSON callback did not return bytes");
        return -1;
    }
    attr_json(r, key, PyBytes_AS_STRING(t));
    Py_DECREF(t);
    return 0;
}

/* Adds attribute key = v. wrap.py converts every value to str, bool, int,
 * float, list, tuple, dict, None or bytes (JSON text) first; anything else
 * is written as its str(). A list/tuple/dict of plain values is written
 * with the nested-value calls (no JSON text made); any other goes through
 * json_text(). Returns 0, or -1 with a Python error set. */
static int put(rec *r, const char *key, PyObject *v)
{
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        if (s) {
            attr_strn(r, key, s, (size_t)n);
            return 0;
        }
        PyErr_Clear();
        PyObject *b = utf8(v);
        if (!b)
            return -1;
        attr_strn(r, key, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
        Py_DECREF(b);
        return 0;
    }
    if (PyBool_Check(v)) {
        attr_bool(r, key, v == Py_True);
        return 0;
    }
    if (PyLong_CheckExact(v)) {
        int over = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &over);
        if (over == 0 && !(x == -1 && PyErr_Occurred())) {
            attr_int(r, key, (int64_t)x);
            return 0;
        }
        PyErr_Clear(); /* beyond int64: every digit kept as text */
    } else if (PyFloat_CheckExact(v)) {
        attr_double(r, key, PyFloat_AS_DOUBLE(v));
        return 0;
    } else if (PyBytes_CheckExact(v)) {
        attr_json(r, key, PyBytes_AS_STRING(v));
        return 0;
    } else if (v == Py_None) {
        attr_json(r, key, "null");
        return 0;
    } else if (PyList_CheckExact(v) || PyTuple_CheckExact(v) || PyDict_CheckExact(v)) {
        if (plain_tree(v, 0)) {
            write_tree(r, key, v);
            return 0;
        }
        return put_json_cb(r, key, json_text_cb, v);
    }
    PyObject *s = PyObject_Str(v);
    if (!s)
        return -1;
    PyObject *b = utf8(s);
    Py_DECREF(s);
    if (!b)
        return -1;
    attr_str(r, key, PyBytes_AS_STRING(b));
    Py_DECREF(b);
    return 0;
}

/* A batch element written as {"rid": x}: an exact str or int64. */
static int rid_scalar(PyObject *x)
{
    long long n;
    return (PyUnicode_CheckExact(x) && plain_tree(x, 0)) ||
           (PyLong_CheckExact(x) && int64_of(x, &n));
}

/* The resource id as _core.res(_normal_rid(v)) writes it: a str or an
 * int64 through servprof_res_*; a list or tuple of them (and of plain
 * dicts) as the batch list "rid": [{"rid": x}, ...], written directly;
 * anything else through rid_text(), which answers a str (a resource id)
 * or bytes (JSON of the rid list). */
static int put_rid(rec *r, PyObject *v)
{
    long long x;
    if (PyUnicode_CheckExact(v)) {
        PyObject *b = utf8(v);
        if (!b)
            return -1;
        res_str(r, PyBytes_AS_STRING(b));
        Py_DECREF(b);
        return 0;
    }
    if (PyLong_CheckExact(v) && int64_of(v, &x)) {
        res_int(r, (int64_t)x);
        return 0;
    }
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        PyObject **it = PySequence_Fast_ITEMS(v);
        Py_ssize_t i = 0;
        while (i < n && (rid_scalar(it[i]) || (PyDict_CheckExact(it[i]) && plain_tree(it[i], 1))))
            i++;
        if (i == n) {
            attr_array_begin(r, "rid");
            for (i = 0; i < n; i++) {
                if (PyDict_CheckExact(it[i])) {
                    write_tree(r, NULL, it[i]);
                    continue;
                }
                attr_object_begin(r, NULL);
                write_tree(r, "rid", it[i]);
                attr_end(r);
            }
            attr_end(r);
            return 0;
        }
    }
    PyObject *t = PyObject_CallOneArg(rid_text_cb, v);
    if (!t)
        return -1;
    int rc = 0;
    if (PyUnicode_CheckExact(t)) {
        PyObject *b = utf8(t);
        if (b) {
            res_str(r, PyBytes_AS_STRING(b));
            Py_DECREF(b);
        } else {
            rc = -1;
        }
    } else if (PyLong_CheckExact(t) && int64_of(t, &x)) {
        res_int(r, (int64_t)x);
    } else if (PyBytes_Check(t)) {
        attr_json(r, "rid", PyBytes_AS_STRING(t));
    } else {
        rc = put(r, "rid", t);
    }
    Py_DECREF(t);
    return rc;
}

enum { OP_ATTR = 0, OP_METRIC = 1, OP_METRIC_INC = 2, OP_SCOPE = 3 };
_Static_assert((int)OP_ATTR == (int)HX_OUT_ATTR && (int)OP_METRIC == (int)HX_OUT_METRIC &&
                   (int)OP_METRIC_INC == (int)HX_OUT_METRIC_INC,
               "a compiled item is written with emit()'s op of the same number");

/* One item of emit()'s list: (op, key bytes, value). */
static int put_item(rec *r, PyObject *item)
{
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3 ||
        !PyBytes_Check(PyTuple_GET_ITEM(item, 1))) {
        PyErr_SetString(PyExc_TypeError, "emit: an item is not (op, key bytes, value)");
        return -1;
    }
    long op = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
    const char *key = PyBytes_AS_STRING(PyTuple_GET_ITEM(item, 1));
    PyObject *v = PyTuple_GET_ITEM(item, 2);
    switch (op) {
    case OP_ATTR:
        return put(r, key, v);
    case OP_METRIC:
    case OP_METRIC_INC: {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred())
            return -1;
        (op == OP_METRIC ? metric : metric_inc)(r, key, x);
        return 0;
    }
    case OP_SCOPE:
        if (!PyBytes_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "emit: a scope value is not bytes");
            return -1;
        }
        metric_scope(r, key, PyBytes_AS_STRING(v));
        return 0;
    default:
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "emit: unknown op %ld", op);
        return -1;
    }
}

/* A record's error marks, as wrap.py writes them for a raising call. */
static void put_error(rec *r, const char *exc_name)
{
    attr_bool(r, "error", 1);
    attr_str(r, "exception", exc_name);
}

/* ------------------------------------------------------------------ */
/* emit(): a whole record in one call                                  */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(emit_doc,
"emit(level, domain, name, start, end, rid, items, exc_name)\n\n"
"Writes one record: begins it at level/domain (bytes or None), sets the\n"
"resource id rid (None: none), adds items, a sequence of (op, key, value)\n"
"with op 0 attribute, 1 metric, 2 metric increment, 3 metric scope, marks\n"
"exc_name (bytes or None) as its exception, and ends it as a span from\n"
"start to end (ns), or as an event when start is None. Returns True when\n"
"written, False when nothing is being collected. On an error the record\n"
"is cancelled and the error raised.");

static PyObject *emit(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "emit() takes 8 arguments");
        return NULL;
    }
    if (!level_p) {
        PyErr_SetString(PyExc_RuntimeError, "servprof._hookcall: setup() was not called");
        return NULL;
    }
    int level;
    if (as_int(args[0], &level) < 0)
        return NULL;
    PyObject *dom = args[1], *name = args[2], *start = args[3], *end = args[4];
    PyObject *rid = args[5], *items = args[6], *exc = args[7];
    if ((dom != Py_None && !PyBytes_Check(dom)) || !PyBytes_Check(name) ||
        (exc != Py_None && !PyBytes_Check(exc))) {
        PyErr_SetString(PyExc_TypeError, "emit: domain, name and exc_name are bytes");
        return NULL;
    }
    int64_t t0 = 0, t1 = 0;
    if (start != Py_None) {
        t0 = PyLong_AsLongLong(start);
        t1 = PyLong_AsLongLong(end);
        if (PyErr_Occurred())
            return NULL;
    }
    PyObject *seq = PySequence_Fast(items, "emit: items is not a sequence");
    if (!seq)
        return NULL;
    rec *r = rec_begin_slow(level, dom == Py_None ? NULL : PyBytes_AS_STRING(dom));
    if (!r) {
        Py_DECREF(seq);
        Py_RETURN_FALSE;
    }
    if (rid != Py_None && put_rid(r, rid) < 0)
        goto fail;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **it = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++)
        if (put_item(r, it[i]) < 0)
            goto fail;
    Py_DECREF(seq);
    if (exc != Py_None)
        put_error(r, PyBytes_AS_STRING(exc));
    if (start != Py_None)
        span_at(r, PyBytes_AS_STRING(name), t0, t1);
    else
        event(r, PyBytes_AS_STRING(name));
    Py_RETURN_TRUE;
fail:
    Py_DECREF(seq);
    rec_cancel(r);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Compiled records: Binding._record_c done here                       */
/* ------------------------------------------------------------------ */

/* A hook with expressions is recorded without Python: hx_prog_link()
 * and hx_prog_eval() (_hookexpr.c) evaluate them as Binding._record_c
 * does, and the values are written here as emit() writes them — so the
 * rows are the same. */

/* The rows of a rid "each" as put_rid() writes the list of dicts
 * hx_rows_list() makes of them: directly when every value is plain
 * (put_rid()'s own test of a dict's values: depth 2), without making the
 * dicts; else those dicts through put_rid() (its JSON path). */
static int put_rows(hx_prog *p, rec *r, const hx_rows *rows)
{
    Py_ssize_t total = rows->n * p->nfields;
    int plain = p->each_direct;
    for (Py_ssize_t i = 0; plain && i < total; i++)
        plain = !rows->v[i] || plain_tree(rows->v[i], 2);
    if (!plain) {
        PyObject *list = hx_rows_list(p, rows);
        int rc = list ? put_rid(r, list) : -1;
        Py_XDECREF(list);
        return rc;
    }
    attr_array_begin(r, "rid");
    for (Py_ssize_t i = 0; i < rows->n; i++) {
        PyObject **row = rows->v + i * p->nfields;
        attr_object_begin(r, NULL);
        for (int j = 0; j < p->nfields; j++)
            if (row[j])
                write_tree(r, PyBytes_AS_STRING(p->fields[j].key8), row[j]);
        attr_end(r);
    }
    attr_end(r);
    return 0;
}

/* Writes the evaluated values as emit() would. 0, or -1 (error set, the
 * record cancelled). */
static int prog_write(hx_prog *p, rec *r, PyObject *rid, const hx_rows *rows, hx_val *vals)
{
    if (rid && rid != Py_None && put_rid(r, rid) < 0)
        goto fail;
    if (rows->made && put_rows(p, r, rows) < 0)
        goto fail;
    for (int i = 0; i < p->n; i++) {
        hx_val *pv = &vals[i];
        const char *key = pv->op < 0 ? NULL : PyBytes_AS_STRING(pv->key);
        if (pv->op == OP_ATTR && put(r, key, pv->v) < 0)
            goto fail;
        if (pv->op == OP_METRIC || pv->op == OP_METRIC_INC)
            (pv->op == OP_METRIC ? metric : metric_inc)(r, key, pv->x);
    }
    if (p->scope && put_item(r, p->scope) < 0)
        goto fail;
    return 0;
fail:
    rec_cancel(r);
    return -1;
}

/* ------------------------------------------------------------------ */
/* HookCall                                                            */
/* ------------------------------------------------------------------ */

enum { HC_SPAN = 1, HC_AT_CALL = 2 };

typedef struct {
    PyObject_HEAD
    PyObject *fn;        /* the wrapped callable */
    PyObject *record;    /* Binding.record, or NULL: nothing to evaluate */
    hx_prog *prog;       /* the record compiled (made here), or NULL */
    PyObject *on;        /* a Python wrapper that makes the whole call when
                          * on (generators, coroutines, caller filters,
                          * handlers), or NULL */
    PyObject *name;      /* bytes */
    PyObject *domain;    /* bytes, or NULL */
    PyObject *dict;      /* __dict__: __wrapped__, __name__, hook marks */
    PyObject *weaklist;
    int level;           /* the hook's level: on when level <= servprof__level */
    int flags;           /* HC_* */
    vectorcallfunc vectorcall;
} HookCall;

/* The record of a hook with nothing to evaluate, made here. exc_type: the
 * class of the exception the call raised, or NULL. start < 0: an event. */
static void simple_record(HookCall *h, PyObject *exc_type, int64_t start, int64_t end)
{
    rec *r = rec_begin_slow(h->level, h->domain ? PyBytes_AS_STRING(h->domain) : NULL);
    if (!r)
        return;
    if (exc_type)
        put_error(r, type_name(exc_type));
    if (start >= 0)
        span_at(r, PyBytes_AS_STRING(h->name), start, end);
    else
        event(r, PyBytes_AS_STRING(h->name));
}

/* The kwargs of a call made without keywords: one empty dict shared by
 * every such call (the expressions only read it). */
static PyObject *no_kwargs;

/* The arguments as record() wants them: a tuple and a dict. */
static int pack(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **a,
                PyObject **kw)
{
    *a = PyTuple_New(nargs);
    *kw = kwnames ? PyDict_New() : Py_NewRef(no_kwargs);
    if (!*a || !*kw)
        goto fail;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(*a, i, args[i]);
    }
    if (kwnames) {
        Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t i = 0; i < nk; i++)
            if (PyDict_SetItem(*kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
                goto fail;
    }
    return 0;
fail:
    Py_CLEAR(*a);
    Py_CLEAR(*kw);
    return -1;
}

/* Calls record(a, kw, ret, start, exc_type, end) with any exception of the
 * wrapped call saved around it. Returns 0, or -1 when record() raised a
 * BaseException that is not an Exception (that one is left set). */
static int call_record(HookCall *h, PyObject *a, PyObject *kw, PyObject *ret, int64_t start,
                       PyObject *exc_type, int64_t end)
{
    PyObject *st = start >= 0 ? PyLong_FromLongLong(start) : Py_NewRef(Py_None);
    PyObject *en = start >= 0 ? PyLong_FromLongLong(end) : PyLong_FromLong(0);
    PyObject *out = NULL;
    if (st && en) {
        /* argv[0] is spare (PY_VECTORCALL_ARGUMENTS_OFFSET): the bound
         * method puts its self there instead of copying the array. */
        PyObject *argv[7] = {NULL, a, kw, ret ? ret : Py_None, st,
                             exc_type ? exc_type : Py_None, en};
        out = PyObject_Vectorcall(h->record, argv + 1, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Py_XDECREF(st);
    Py_XDECREF(en);
    if (out) {
        Py_DECREF(out);
        return 0;
    }
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear(); /* record() reports its own errors: this is a bug of ours */
        return 0;
    }
    return -1;
}

/* The compiled record of call c (start < 0: an event at call; exc_type:
 * the class the call raised, or NULL), as Binding._record_c makes it:
 * every expression first, then the record, begun only then. Returns 0,
 * or -1 with a BaseException that is no Exception set (it goes on to the
 * caller, as it does out of _record_c). */
static int prog_record(HookCall *h, hx_call *c, int64_t start, PyObject *exc_type, int64_t end)
{
    hx_prog *p = h->prog;
    hx_val stack[8];
    hx_val *vals = p->n <= 8 ? stack : PyMem_Calloc((size_t)p->n, sizeof *vals);
    PyObject *rid = NULL;
    hx_rows rows = {0};
    int base = 0;
    if (!vals) {
        PyErr_NoMemory();
        goto failed;
    }
    memset(vals, 0, (size_t)p->n * sizeof *vals);
    if (p->link) { /* first, as _record_c makes it: before the record's own values */
        PyObject *from, *to;
        if (hx_prog_link(p, c, &from, &to) < 0)
            goto failed;
        if (from) {
            link_ids(PyBytes_AS_STRING(from), PyBytes_AS_STRING(to));
            Py_DECREF(from);
            Py_DECREF(to);
        }
        if (p->link_only)
            goto done;
    }
    if (hx_prog_eval(p, c, &rid, &rows, vals) < 0)
        goto failed;
    rec *r = rec_begin_slow(h->level, h->domain ? PyBytes_AS_STRING(h->domain) : NULL);
    if (r) {
        if (prog_write(p, r, rid, &rows, vals) < 0)
            goto failed;
        if (exc_type)
            put_error(r, type_name(exc_type));
        if ((h->flags & HC_SPAN) && start >= 0)
            span_at(r, PyBytes_AS_STRING(h->name), start, end);
        else
            event(r, PyBytes_AS_STRING(h->name));
    }
    goto done;
failed:
    base = hx_prog_fail(p, NULL) < 0;
done:
    Py_XDECREF(rid);
    if (rows.v)
        hx_rows_done(&rows, p->nfields);
    if (vals) {
        hx_vals_done(vals, p->n);
        if (vals != stack)
            PyMem_Free(vals);
    }
    hx_call_done(c);
    return base ? -1 : 0;
}

/* hc_on() for a compiled record: no tuple, no dict, no Python frame. */
static PyObject *hc_on_prog(HookCall *h, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    hx_call c = {.args = args, .nargs = PyVectorcall_NARGS(nargsf), .kwnames = kwnames};
    if (h->flags & HC_AT_CALL) {
        if (prog_record(h, &c, -1, NULL, 0) < 0)
            return NULL;
        return PyObject_Vectorcall(h->fn, args, nargsf, kwnames);
    }
    int64_t t0 = now_ns();
    PyObject *ret = PyObject_Vectorcall(h->fn, args, nargsf, kwnames);
    int64_t t1 = now_ns();
    if (ret) {
        c.ret = ret;
        if (prog_record(h, &c, t0, NULL, t1) < 0)
            Py_CLEAR(ret);
        return ret;
    }
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (prog_record(h, &c, t0, t, t1) < 0) {
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(tb);
    } else {
        PyErr_Restore(t, v, tb);
    }
    return NULL;
}

static PyObject *hc_on(HookCall *h, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    int at_call = h->flags & HC_AT_CALL;
    if (h->on)
        return PyObject_Vectorcall(h->on, args, nargsf, kwnames);
    if (h->prog)
        return hc_on_prog(h, args, nargsf, kwnames);
    if (!h->record) {
        if (at_call) {
            simple_record(h, NULL, -1, 0);
            return PyObject_Vectorcall(h->fn, args, nargsf, kwnames);
        }
        int64_t t0 = now_ns();
        PyObject *ret = PyObject_Vectorcall(h->fn, args, nargsf, kwnames);
        int64_t t1 = now_ns();
        /* Pure C from here: the raised exception (if any) stays set. */
        simple_record(h, ret ? NULL : PyErr_Occurred(), (h->flags & HC_SPAN) ? t0 : -1, t1);
        return ret;
    }
    PyObject *a, *kw;
    if (pack(args, PyVectorcall_NARGS(nargsf), kwnames, &a, &kw) < 0) {
        PyErr_Clear(); /* no memory for the hook: the call goes on unrecorded */
        return PyObject_Vectorcall(h->fn, args, nargsf, kwnames);
    }
    PyObject *ret;
    if (at_call) {
        if (call_record(h, a, kw, NULL, -1, NULL, 0) < 0)
            ret = NULL;
        else
            ret = PyObject_Vectorcall(h->fn, args, nargsf, kwnames);
        goto out;
    }
    int64_t t0 = now_ns();
    ret = PyObject_Vectorcall(h->fn, args, nargsf, kwnames);
    int64_t t1 = now_ns();
    if (ret) {
        if (call_record(h, a, kw, ret, t0, NULL, t1) < 0)
            Py_CLEAR(ret);
    } else {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        if (call_record(h, a, kw, NULL, t0, t, t1) < 0) {
            Py_XDECREF(t);
            Py_XDECREF(v);
            Py_XDECREF(tb);
        } else {
            PyErr_Restore(t, v, tb);
        }
    }
out:
    Py_DECREF(a);
    Py_DECREF(kw);
    return ret;
}

static PyObject *hc_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    HookCall *h = (HookCall *)self;
    if (h->level > level_now())
        return PyObject_Vectorcall(h->fn, args, nargsf, kwnames);
    return hc_on(h, args, nargsf, kwnames);
}

static PyObject *hc_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"fn", "level", "record", "name", "domain", "span", "at_call", "on",
                             "prog", NULL};
    PyObject *fn, *record, *name, *domain, *on = Py_None, *spec = Py_None;
    int level, span, at_call;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OiOSOpp|OO:HookCall", kwlist, &fn, &level,
                                     &record, &name, &domain, &span, &at_call, &on, &spec))
        return NULL;
    if (!level_p) {
        PyErr_SetString(PyExc_RuntimeError, "servprof._hookcall: setup() was not called");
        return NULL;
    }
    if (!PyCallable_Check(fn) || (record != Py_None && !PyCallable_Check(record)) ||
        (on != Py_None && !PyCallable_Check(on))) {
        PyErr_SetString(PyExc_TypeError, "HookCall: fn, record and on must be callable");
        return NULL;
    }
    if (domain != Py_None && !PyBytes_Check(domain)) {
        PyErr_SetString(PyExc_TypeError, "HookCall: domain must be bytes or None");
        return NULL;
    }
    hx_prog *p = spec == Py_None ? NULL : hx_prog_new(spec);
    if (spec != Py_None && !p)
        return NULL;
    HookCall *h = (HookCall *)type->tp_alloc(type, 0);
    if (!h) {
        hx_prog_free(p);
        return NULL;
    }
    h->prog = p;
    h->fn = Py_NewRef(fn);
    h->record = record == Py_None ? NULL : Py_NewRef(record);
    h->on = on == Py_None ? NULL : Py_NewRef(on);
    h->name = Py_NewRef(name);
    h->domain = domain == Py_None ? NULL : Py_NewRef(domain);
    h->level = level;
    h->flags = (span ? HC_SPAN : 0) | (at_call ? HC_AT_CALL : 0);
    h->vectorcall = hc_vectorcall;
    return (PyObject *)h;
}

static int hc_traverse(HookCall *h, visitproc visit, void *arg)
{
    Py_VISIT(h->fn);
    Py_VISIT(h->record);
    Py_VISIT(h->on);
    Py_VISIT(h->dict);
    return hx_prog_traverse(h->prog, visit, arg);
}

static int hc_clear(HookCall *h)
{
    Py_CLEAR(h->fn);
    Py_CLEAR(h->record);
    Py_CLEAR(h->on);
    Py_CLEAR(h->name);
    Py_CLEAR(h->domain);
    Py_CLEAR(h->dict);
    hx_prog_free(h->prog);
    h->prog = NULL;
    return 0;
}

static void hc_dealloc(HookCall *h)
{
    PyObject_GC_UnTrack(h);
    if (h->weaklist)
        PyObject_ClearWeakRefs((PyObject *)h);
    hc_clear(h);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

/* Like a function: bound to an instance it is a method. */
static PyObject *hc_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

/* Attributes it does not have itself are the wrapped function's (code
 * that reads fn.__code__ or __defaults__ keeps working). */
static PyObject *hc_getattro(PyObject *self, PyObject *name)
{
    PyObject *v = PyObject_GenericGetAttr(self, name);
    if (v || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return v;
    PyErr_Clear();
    return PyObject_GetAttr(((HookCall *)self)->fn, name);
}

static PyObject *hc_repr(HookCall *h)
{
    return PyUnicode_FromFormat("<servprof hook of %R>", h->fn);
}

static PyObject *hc_get_fn(HookCall *h, void *c)
{
    (void)c;
    return Py_NewRef(h->fn);
}

/* True when the record is compiled (made in C, no Python per call). */
static PyObject *hc_get_compiled(HookCall *h, void *c)
{
    (void)c;
    return PyBool_FromLong(h->prog != NULL);
}

/* Pickled by name, as a function is: the module attribute it replaced is
 * itself, so the name finds it again (multiprocessing, spawn). */
static PyObject *hc_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef hc_methods[] = {
    {"__reduce__", hc_reduce, METH_NOARGS, "pickled by qualified name, as a function"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hc_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"__servprof_fn__", (getter)hc_get_fn, NULL, "the wrapped callable", NULL},
    {"__servprof_compiled__", (getter)hc_get_compiled, NULL, "the record is made in C", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HookCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "servprof._hookcall.HookCall",
    .tp_basicsize = sizeof(HookCall),
    .tp_dealloc = (destructor)hc_dealloc,
    .tp_vectorcall_offset = offsetof(HookCall, vectorcall),
    .tp_repr = (reprfunc)hc_repr,
    .tp_call = PyVectorcall_Call,
    .tp_getattro = hc_getattro,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "HookCall(fn, level, record, name, domain, span, at_call, on=None, prog=None): "
              "fn wrapped by a hook.",
    .tp_traverse = (traverseproc)hc_traverse,
    .tp_clear = (inquiry)hc_clear,
    .tp_weaklistoffset = offsetof(HookCall, weaklist),
    .tp_methods = hc_methods,
    .tp_getset = hc_getset,
    .tp_descr_get = hc_descr_get,
    .tp_dictoffset = offsetof(HookCall, dict),
    .tp_new = hc_new,
};

/* ------------------------------------------------------------------ */
/* setup()                                                             */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(setup_doc,
"setup(level_address, functions, json_text, rid_text)\n\n"
"Points the module at the loaded libservprof: the address of\n"
"servprof__level and a dict of function name -> address; json_text(v)\n"
"-> JSON bytes and rid_text(v) -> str or JSON bytes write the values\n"
"the module does not write itself. Once per process; a second call\n"
"must name the same library.");

static PyObject *setup(PyObject *mod, PyObject *args)
{
    (void)mod;
    unsigned long long lv;
    PyObject *fns, *jcb, *rcb;
    if (!PyArg_ParseTuple(args, "KO!OO:setup", &lv, &PyDict_Type, &fns, &jcb, &rcb))
        return NULL;
    if (!PyCallable_Check(jcb) || !PyCallable_Check(rcb)) {
        PyErr_SetString(PyExc_TypeError, "setup: json_text and rid_text must be callable");
        return NULL;
    }
    struct {
        const char *name;
        void **slot;
    } want[] = {
        {"servprof_now_ns", (void **)&now_ns},
        {"servprof_rec_begin_slow", (void **)&rec_begin_slow},
        {"servprof_rec_cancel", (void **)&rec_cancel},
        {"servprof_span_at", (void **)&span_at},
        {"servprof_event", (void **)&event},
        {"servprof_attr_bool", (void **)&attr_bool},
        {"servprof_attr_str", (void **)&attr_str},
        {"servprof_attr_strn", (void **)&attr_strn},
        {"servprof_attr_int", (void **)&attr_int},
        {"servprof_attr_double", (void **)&attr_double},
        {"servprof_attr_json", (void **)&attr_json},
        {"servprof_res_str", (void **)&res_str},
        {"servprof_res_int", (void **)&res_int},
        {"servprof_metric", (void **)&metric},
        {"servprof_metric_inc", (void **)&metric_inc},
        {"servprof_metric_scope", (void **)&metric_scope},
        {"servprof_attr_array_begin", (void **)&attr_array_begin},
        {"servprof_attr_object_begin", (void **)&attr_object_begin},
        {"servprof_attr_end", (void **)&attr_end},
        {"servprof_link", (void **)&link_ids},
    };
    size_t n = sizeof want / sizeof want[0];
    void *got[sizeof want / sizeof want[0]];
    if (!lv) {
        PyErr_SetString(PyExc_ValueError, "setup: the level address is 0");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *v = PyDict_GetItemString(fns, want[i].name);
        if (!v)
            return PyErr_Format(PyExc_KeyError, "setup: no address for %s", want[i].name);
        got[i] = PyLong_AsVoidPtr(v);
        if (!got[i])
            return PyErr_Occurred() ? NULL
                                    : PyErr_Format(PyExc_ValueError, "setup: %s is 0",
                                                   want[i].name);
    }
    if (level_p && level_p != (const int *)(uintptr_t)lv) {
        PyErr_SetString(PyExc_RuntimeError, "setup: already set up for another libservprof");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        *want[i].slot = got[i];
    Py_XSETREF(json_text_cb, Py_NewRef(jcb));
    Py_XSETREF(rid_text_cb, Py_NewRef(rcb));
    level_p = (const int *)(uintptr_t)lv; /* last: HookCall refuses to exist before */
    Py_RETURN_NONE;
}

PyDoc_STRVAR(is_on_doc, "is_on(level): True when a hook of that level records now.");

static PyObject *is_on(PyObject *mod, PyObject *arg)
{
    (void)mod;
    if (!level_p)
        Py_RETURN_FALSE;
    int level;
    if (as_int(arg, &level) < 0)
        return NULL;
    return PyBool_FromLong(level <= level_now());
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, setup_doc},
    {"emit", (PyCFunction)(void (*)(void))emit, METH_FASTCALL, emit_doc},
    {"is_on", is_on, METH_O, is_on_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "servprof._hookcall",
    .m_doc = "The C wrapper of hooked functions (servprof.hooks); see _hookcall.c.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__hookcall(void)
{
    if (PyType_Ready(&HookCallType) < 0)
        return NULL;
    if (!no_kwargs && !(no_kwargs = PyDict_New()))
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (PyModule_AddObjectRef(m, "HookCall", (PyObject *)&HookCallType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
