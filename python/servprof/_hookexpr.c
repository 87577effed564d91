/* SPDX-License-Identifier: Apache-2.0 */
/*
 * _hookexpr.c — hook expressions (hooks/expr.py) and the records made of
 * them evaluated in C, part of the servprof._hookcall extension.
 *
 * WHY: with collection on, a hook with expressions cost ~13,700
 * instructions a call on its caller's thread, most of it Python: one
 * closure call per expression node (expr.bind()), and the record method
 * around them (issue #28's goal is <= 2 us a call). Here an expression is
 * an array of nodes walked with the CPython API: no Python frame, no
 * argument tuple (a parameter is read from the caller's vectorcall array).
 *
 * DESIGN
 * - expr.flatten() resolves a parsed tree against the function's
 *   signature (which parameter is which position, its default) the way
 *   expr.bind() does, and hands over (code, a, b, c) tuples, operands
 *   before the node that uses them, the root last. hx_compile() turns
 *   them into hx_node structs once, when the hook binds.
 * - hx_eval() walks from the root; every node does exactly what its
 *   closure in expr.bind() does, in the same order (an index is not
 *   evaluated when the indexed value is None), raising the same
 *   exceptions with the same messages, so what a failing expression
 *   reports is the same whichever path evaluated it.
 * - A compiled record (hx_prog: a rid — one expression, a list of them,
 *   or `each` with its per-item fields — attributes, metrics, a scope, a
 *   link) is evaluated here in Binding._record_c's order and its values
 *   normalised as _record_c does (_cval, number(): the plain types in C,
 *   the rest by calling those very functions); _hookcall.c writes them.
 *   A rid list is made as the list of ids Binding.rid_value() makes, so
 *   emit()'s rid writer turns it into the same JSON text; an `each` as
 *   rows of values (hx_rows: one per item, no dict made), written as
 *   rid_value()'s dicts would be — or, when a value is not plain JSON,
 *   made into those very dicts for emit()'s JSON path (hx_rows_list()).
 *   An expression that raises goes to the
 *   Binding's fail(what, exc) — the one call back into Python a failure
 *   costs — and what fails the whole record in Python (str() of a link
 *   id raising, say) fails it here, told to fail() as "recording".
 * - Nothing of the hook file is evaluated: the only code an expression
 *   can run is attribute reads, a named no-argument method, indexing,
 *   iteration (each) and the builtins expr.py names (len, str, int ...).
 * Thread safety: called under the GIL; a compiled expression is read-only.
 */
#include "_hookexpr.h"

#include <assert.h>
#include <string.h>

/* expr.py's OP_* codes. */
enum {
    HX_CONST, HX_RET, HX_ARGS, HX_KWARGS, HX_ITEM, HX_POS, HX_KW, HX_VARPOS, HX_ATTR,
    HX_METHOD, HX_EACH, HX_INDEX, HX_CALL, HX_NCODES
};

/* b is 1 on a call node of len(): done with PyObject_Size, which is what
 * the builtin does, without the call. */
#define HX_IS_LEN 1

/* An operand index: an int naming an earlier node. */
static int operand(PyObject *o, int here, int *out)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v >= here) {
        PyErr_Format(PyExc_ValueError, "hook expression: node %d names operand %ld", here, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* A name field: an interned str (kwnames are interned: compared by
 * pointer first). */
static int name_of(PyObject *o, PyObject **out)
{
    if (!PyUnicode_CheckExact(o)) {
        PyErr_SetString(PyExc_TypeError, "hook expression: a name is not a str");
        return -1;
    }
    Py_INCREF(o);
    PyUnicode_InternInPlace(&o);
    *out = o;
    return 0;
}

/* A default: () for none, (d,) for d. */
static int default_of(PyObject *o, PyObject **out)
{
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) > 1) {
        PyErr_SetString(PyExc_TypeError, "hook expression: a default is not () or (d,)");
        return -1;
    }
    *out = PyTuple_GET_SIZE(o) ? Py_NewRef(PyTuple_GET_ITEM(o, 0)) : NULL;
    return 0;
}

static int compile_node(PyObject *t, int i, hx_node *n)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 4) {
        PyErr_SetString(PyExc_TypeError, "hook expression: a node is not (code, a, b, c)");
        return -1;
    }
    long code = PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
    PyObject *a = PyTuple_GET_ITEM(t, 1), *b = PyTuple_GET_ITEM(t, 2), *c = PyTuple_GET_ITEM(t, 3);
    if (code < 0 || code >= HX_NCODES) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "hook expression: unknown op %ld", code);
        return -1;
    }
    n->code = (int)code;
    switch (n->code) {
    case HX_CONST:
        n->obj = Py_NewRef(a);
        return 0;
    case HX_RET:
    case HX_ARGS:
    case HX_KWARGS:
    case HX_ITEM:
        return 0;
    case HX_POS:
    case HX_KW:
        n->a = (int)PyLong_AsLong(a);
        if (n->a < 0)
            return PyErr_Occurred() ? -1 : (PyErr_SetString(PyExc_ValueError, "position"), -1);
        return name_of(b, &n->name) < 0 ? -1 : default_of(c, &n->dflt);
    case HX_VARPOS:
        n->a = (int)PyLong_AsLong(a);
        return n->a < 0 ? (PyErr_Occurred() ? -1 : (PyErr_SetString(PyExc_ValueError,
                                                                    "position"), -1))
                        : 0;
    case HX_ATTR:
    case HX_METHOD:
    case HX_EACH:
        return operand(a, i, &n->a) < 0 ? -1 : name_of(b, &n->name);
    case HX_INDEX:
        return operand(a, i, &n->a) < 0 ? -1 : operand(b, i, &n->b);
    case HX_CALL:
        if (operand(a, i, &n->a) < 0)
            return -1;
        if (!PyUnicode_Check(b) || !PyCallable_Check(c)) {
            PyErr_SetString(PyExc_TypeError, "hook expression: a call is (operand, name, fn)");
            return -1;
        }
        n->b = PyUnicode_CompareWithASCIIString(b, "len") == 0 ? HX_IS_LEN : 0;
        n->obj = Py_NewRef(c);
        return 0;
    }
    return 0;
}

int hx_compile(PyObject *ops, hx_expr *e)
{
    if (!PyList_Check(ops) || PyList_GET_SIZE(ops) == 0 || PyList_GET_SIZE(ops) > 4096) {
        PyErr_SetString(PyExc_TypeError, "hook expression: ops is not a non-empty list");
        return -1;
    }
    int n = (int)PyList_GET_SIZE(ops);
    e->nodes = PyMem_Calloc((size_t)n, sizeof *e->nodes);
    if (!e->nodes) {
        PyErr_NoMemory();
        return -1;
    }
    e->n = n;
    for (int i = 0; i < n; i++)
        if (compile_node(PyList_GET_ITEM(ops, i), i, &e->nodes[i]) < 0) {
            hx_free(e);
            return -1;
        }
    return 0;
}

void hx_free(hx_expr *e)
{
    for (int i = 0; i < e->n; i++) {
        Py_CLEAR(e->nodes[i].obj);
        Py_CLEAR(e->nodes[i].name);
        Py_CLEAR(e->nodes[i].dflt);
    }
    PyMem_Free(e->nodes);
    e->nodes = NULL;
    e->n = 0;
}

int hx_traverse(const hx_expr *e, visitproc visit, void *arg)
{
    for (int i = 0; i < e->n; i++) {
        Py_VISIT(e->nodes[i].obj);
        Py_VISIT(e->nodes[i].dflt);
    }
    return 0;
}

void hx_call_done(hx_call *c)
{
    Py_CLEAR(c->tuple);
    Py_CLEAR(c->dict);
}

/* ------------------------------------------------------------------ */
/* The call's arguments                                                */
/* ------------------------------------------------------------------ */

/* args[from:] as a new tuple. */
static PyObject *args_tuple(hx_call *c, Py_ssize_t from)
{
    Py_ssize_t n = c->nargs > from ? c->nargs - from : 0;
    PyObject *t = PyTuple_New(n);
    if (!t)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(c->args[from + i]));
    return t;
}

/* The keyword argument called name (borrowed), or NULL (no error). */
static PyObject *keyword(hx_call *c, PyObject *name)
{
    if (!c->kwnames)
        return NULL;
    Py_ssize_t nk = PyTuple_GET_SIZE(c->kwnames);
    for (Py_ssize_t i = 0; i < nk; i++)
        if (PyTuple_GET_ITEM(c->kwnames, i) == name)
            return c->args[c->nargs + i];
    for (Py_ssize_t i = 0; i < nk; i++)
        if (PyUnicode_Compare(PyTuple_GET_ITEM(c->kwnames, i), name) == 0)
            return c->args[c->nargs + i];
    return NULL;
}

static PyObject *kwargs_dict(hx_call *c)
{
    if (!c->dict) {
        c->dict = PyDict_New();
        Py_ssize_t nk = c->kwnames ? PyTuple_GET_SIZE(c->kwnames) : 0;
        for (Py_ssize_t i = 0; c->dict && i < nk; i++)
            if (PyDict_SetItem(c->dict, PyTuple_GET_ITEM(c->kwnames, i), c->args[c->nargs + i]) < 0)
                Py_CLEAR(c->dict);
    }
    return c->dict ? Py_NewRef(c->dict) : NULL;
}

/* Params.accessor(): positional i, else the keyword, else the default. */
static PyObject *param(const hx_node *n, hx_call *c)
{
    if (n->code == HX_POS && n->a < c->nargs)
        return Py_NewRef(c->args[n->a]);
    PyObject *v = keyword(c, n->name);
    if (!v)
        v = n->dflt;
    if (!v)
        return PyErr_Format(PyExc_LookupError, "parameter %R was not passed", n->name);
    return Py_NewRef(v);
}

/* ------------------------------------------------------------------ */
/* Evaluation                                                          */
/* ------------------------------------------------------------------ */

/* [getattr(x, name) for x in v] */
static PyObject *each(PyObject *v, PyObject *name)
{
    PyObject *it = PyObject_GetIter(v), *x;
    PyObject *out = it ? PyList_New(0) : NULL;
    if (!out) {
        Py_XDECREF(it);
        return NULL;
    }
    while ((x = PyIter_Next(it))) {
        PyObject *a = PyObject_GetAttr(x, name);
        Py_DECREF(x);
        if (!a || PyList_Append(out, a) < 0) {
            Py_XDECREF(a);
            goto fail;
        }
        Py_DECREF(a);
    }
    if (PyErr_Occurred())
        goto fail;
    Py_DECREF(it);
    return out;
fail:
    Py_DECREF(it);
    Py_DECREF(out);
    return NULL;
}

static PyObject *eval_node(const hx_expr *e, int i, hx_call *c);

/* A node with one operand v (a new reference, not None). */
static PyObject *apply(const hx_expr *e, const hx_node *n, PyObject *v, hx_call *c)
{
    switch (n->code) {
    case HX_ATTR:
        return PyObject_GetAttr(v, n->name);
    case HX_METHOD:
        return PyObject_CallMethodNoArgs(v, n->name);
    case HX_EACH:
        return each(v, n->name);
    case HX_INDEX: {
        PyObject *k = eval_node(e, n->b, c);
        if (!k)
            return NULL;
        PyObject *out = PyObject_GetItem(v, k);
        Py_DECREF(k);
        return out;
    }
    case HX_CALL:
        if (n->b == HX_IS_LEN) {
            Py_ssize_t len = PyObject_Size(v);
            return len < 0 ? NULL : PyLong_FromSsize_t(len);
        }
        return PyObject_CallOneArg(n->obj, v);
    }
    assert(0);
    return NULL;
}

static PyObject *eval_node(const hx_expr *e, int i, hx_call *c)
{
    const hx_node *n = &e->nodes[i];
    switch (n->code) {
    case HX_CONST:
        return Py_NewRef(n->obj);
    case HX_RET:
        return Py_NewRef(c->ret ? c->ret : Py_None);
    case HX_ARGS:
        if (!c->tuple)
            c->tuple = args_tuple(c, 0);
        return c->tuple ? Py_NewRef(c->tuple) : NULL;
    case HX_KWARGS:
        return kwargs_dict(c);
    case HX_ITEM: /* None outside a rid "each" */
        return Py_NewRef(c->item ? c->item : Py_None);
    case HX_POS:
    case HX_KW:
        return param(n, c);
    case HX_VARPOS:
        return args_tuple(c, n->a);
    }
    /* The rest take one value first; None goes through unchanged. */
    PyObject *v = eval_node(e, n->a, c);
    if (!v || v == Py_None)
        return v;
    PyObject *out = apply(e, n, v, c);
    Py_DECREF(v);
    return out;
}

PyObject *hx_eval(const hx_expr *e, hx_call *c)
{
    assert(e->n > 0);
    return eval_node(e, e->n - 1, c);
}

/* ------------------------------------------------------------------ */
/* Compiled records                                                    */
/* ------------------------------------------------------------------ */

/* "recording": what fail() is told when the record itself failed. */
static PyObject *s_recording, *s_items;

/* Releases n parts and the array; zeroed parts and NULL are fine. */
static void parts_free(hx_part *pt, int n)
{
    for (int i = 0; pt && i < n; i++) {
        Py_CLEAR(pt[i].key);
        Py_CLEAR(pt[i].key8);
        Py_CLEAR(pt[i].what);
        hx_free(&pt[i].e);
    }
    PyMem_Free(pt);
}

static int parts_traverse(const hx_part *pt, int n, visitproc visit, void *arg)
{
    int rc = 0;
    for (int i = 0; !rc && pt && i < n; i++)
        rc = hx_traverse(&pt[i].e, visit, arg);
    return rc;
}

void hx_prog_free(hx_prog *p)
{
    if (!p)
        return;
    Py_CLEAR(p->fail);
    Py_CLEAR(p->cval);
    Py_CLEAR(p->number);
    Py_CLEAR(p->rid_what);
    Py_CLEAR(p->scope);
    hx_free(&p->rid);
    parts_free(p->rids, p->nrids);
    parts_free(p->seq, 1);
    parts_free(p->fields, p->nfields);
    parts_free(p->link, 2);
    for (int i = 0; i < p->n; i++) {
        Py_CLEAR(p->items[i].key);
        Py_CLEAR(p->items[i].alt);
        Py_CLEAR(p->items[i].what);
        hx_free(&p->items[i].e);
    }
    PyMem_Free(p->items);
    PyMem_Free(p);
}

int hx_prog_traverse(hx_prog *p, visitproc visit, void *arg)
{
    if (!p)
        return 0;
    Py_VISIT(p->fail);
    Py_VISIT(p->cval);
    Py_VISIT(p->number);
    Py_VISIT(p->scope);
    int rc = hx_traverse(&p->rid, visit, arg);
    if (!rc)
        rc = parts_traverse(p->rids, p->nrids, visit, arg);
    if (!rc)
        rc = parts_traverse(p->seq, 1, visit, arg);
    if (!rc)
        rc = parts_traverse(p->fields, p->nfields, visit, arg);
    if (!rc)
        rc = parts_traverse(p->link, 2, visit, arg);
    for (int i = 0; !rc && i < p->n; i++)
        rc = hx_traverse(&p->items[i].e, visit, arg);
    return rc;
}

/* An item of the spec: (kind, key bytes, ops, what, alt key bytes or None). */
static int hx_item_of(PyObject *t, hx_item *it)
{
    int kind;
    PyObject *key, *ops, *what, *alt;
    /* Parsed into locals: on failure the converters may have set some. */
    if (!PyArg_ParseTuple(t, "iSOUO:c_prog item", &kind, &key, &ops, &what, &alt))
        return -1;
    if (kind < HX_OUT_ATTR || kind > HX_OUT_METRIC_INC ||
        (kind != HX_OUT_ATTR && !PyBytes_Check(alt))) {
        PyErr_SetString(PyExc_ValueError, "c_prog: a metric item needs its other key");
        return -1;
    }
    it->kind = kind;
    it->key = Py_NewRef(key);
    it->what = Py_NewRef(what);
    it->alt = kind == HX_OUT_ATTR ? NULL : Py_NewRef(alt);
    return hx_compile(ops, &it->e);
}

/* A part of the spec: (ops, what), or keyed (field str, ops, what). */
static int part_of(PyObject *t, int keyed, hx_part *pt)
{
    PyObject *key = NULL, *ops, *what;
    if (!PyTuple_Check(t)) { /* PyArg_ParseTuple() takes only a tuple */
        PyErr_SetString(PyExc_TypeError, "c_prog: a part is not a tuple");
        return -1;
    }
    if (keyed ? !PyArg_ParseTuple(t, "UOU:c_prog part", &key, &ops, &what)
              : !PyArg_ParseTuple(t, "OU:c_prog part", &ops, &what))
        return -1;
    pt->key = key ? Py_NewRef(key) : NULL;
    pt->what = Py_NewRef(what);
    if (key && !(pt->key8 = PyUnicode_AsUTF8String(key)))
        PyErr_Clear(); /* a lone surrogate: its entries go through the JSON path */
    return hx_compile(ops, &pt->e);
}

/* n parts from the sequence list into a new array *out (zeroed: what a
 * failure leaves is freed with the prog). 0, or -1 with an error set. */
static int parts_of(PyObject *list, int keyed, hx_part **out, int *n)
{
    PyObject *seq = PySequence_Fast(list, "c_prog: parts are not a sequence");
    if (!seq)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    if (len > 4096 || !(*out = PyMem_Calloc(len ? (size_t)len : 1, sizeof **out))) {
        Py_DECREF(seq);
        if (len > 4096)
            PyErr_SetString(PyExc_ValueError, "c_prog: too many parts");
        else
            PyErr_NoMemory();
        return -1;
    }
    *n = (int)len;
    for (Py_ssize_t i = 0; !rc && i < len; i++)
        rc = part_of(PySequence_Fast_GET_ITEM(seq, i), keyed, &(*out)[i]);
    Py_DECREF(seq);
    return rc;
}

/* The spec's rare shapes: rid list, each, link (see hx_prog_new()). */
static int prog_rare(hx_prog *p, PyObject *rids, PyObject *each, PyObject *link, int link_only)
{
    if ((p->rid_what != NULL) + (rids != Py_None) + (each != Py_None) > 1 ||
        (link_only && link == Py_None)) {
        PyErr_SetString(PyExc_ValueError,
                        "c_prog: one rid shape at most; link only needs a link");
        return -1;
    }
    if (rids != Py_None && parts_of(rids, 0, &p->rids, &p->nrids) < 0)
        return -1;
    if (each != Py_None) {
        PyObject *ops, *what, *fields;
        if (!PyTuple_Check(each)) {
            PyErr_SetString(PyExc_TypeError, "c_prog: each is not (ops, what, fields)");
            return -1;
        }
        if (!PyArg_ParseTuple(each, "OUO:c_prog each", &ops, &what, &fields))
            return -1;
        if (!(p->seq = PyMem_Calloc(1, sizeof *p->seq))) {
            PyErr_NoMemory();
            return -1;
        }
        p->seq->what = Py_NewRef(what);
        if (hx_compile(ops, &p->seq->e) < 0 || parts_of(fields, 1, &p->fields, &p->nfields) < 0)
            return -1;
        p->each_direct = 1;
        for (int i = 0; i < p->nfields; i++)
            for (int j = 0; j <= i; j++)
                if (!p->fields[i].key8 ||
                    (j < i && PyUnicode_Compare(p->fields[i].key, p->fields[j].key) == 0))
                    p->each_direct = 0;
    }
    if (link != Py_None) {
        int two = 0;
        if (!PyTuple_Check(link) || PyTuple_GET_SIZE(link) != 2) {
            PyErr_SetString(PyExc_TypeError, "c_prog: a link is ((ops, what), (ops, what))");
            return -1;
        }
        if (parts_of(link, 0, &p->link, &two) < 0)
            return -1;
    }
    p->link_only = link_only;
    return 0;
}

hx_prog *hx_prog_new(PyObject *spec)
{
    PyObject *fail, *cval, *number, *rid, *rid_what, *items, *scope;
    PyObject *rids = Py_None, *each = Py_None, *link = Py_None;
    int link_only = 0;
    if (!PyArg_ParseTuple(spec, "OOOOOO!O|OOOp:c_prog", &fail, &cval, &number, &rid, &rid_what,
                          &PyList_Type, &items, &scope, &rids, &each, &link, &link_only))
        return NULL;
    if (!PyCallable_Check(fail) || !PyCallable_Check(cval) || !PyCallable_Check(number) ||
        (scope != Py_None && !PyTuple_Check(scope))) {
        PyErr_SetString(PyExc_TypeError, "c_prog: fail, cval, number callable; scope a tuple");
        return NULL;
    }
    if (!s_recording && !(s_recording = PyUnicode_InternFromString("recording")))
        return NULL;
    if (!s_items && !(s_items = PyUnicode_InternFromString("items")))
        return NULL;
    hx_prog *p = PyMem_Calloc(1, sizeof *p);
    Py_ssize_t n = PyList_GET_SIZE(items);
    if (!p || !(p->items = PyMem_Calloc(n ? (size_t)n : 1, sizeof *p->items))) {
        PyMem_Free(p);
        PyErr_NoMemory();
        return NULL;
    }
    p->fail = Py_NewRef(fail);
    p->cval = Py_NewRef(cval);
    p->number = Py_NewRef(number);
    p->scope = scope == Py_None ? NULL : Py_NewRef(scope);
    if (rid != Py_None) {
        if (!PyUnicode_Check(rid_what) || hx_compile(rid, &p->rid) < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "c_prog: the rid's what is not a str");
            goto fail;
        }
        p->rid_what = Py_NewRef(rid_what);
    }
    if (prog_rare(p, rids, each, link, link_only) < 0)
        goto fail;
    for (; p->n < n; p->n++)
        if (hx_item_of(PyList_GET_ITEM(items, p->n), &p->items[p->n]) < 0) {
            p->n++; /* freed with the others */
            goto fail;
        }
    return p;
fail:
    hx_prog_free(p);
    return NULL;
}

int hx_prog_fail(hx_prog *p, PyObject *what)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    if (!what)
        what = s_recording;
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb && v)
        PyException_SetTraceback(v, tb);
    PyObject *out = PyObject_CallFunctionObjArgs(p->fail, what, v ? v : Py_None, NULL);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    if (out) {
        Py_DECREF(out);
        return 0;
    }
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyErr_Clear(); /* fail() itself failed: nothing more to do for it */
    return 0;
}

/* Exact types emit() writes as _record_c hands them (wrap._PLAIN_C). */
static int plain_c(PyObject *v)
{
    return PyUnicode_CheckExact(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) ||
           PyBool_Check(v) || PyList_CheckExact(v) || PyTuple_CheckExact(v) ||
           PyDict_CheckExact(v);
}

/* v (stolen) as _cval(v): itself when plain, else what _cval answers. */
static PyObject *prog_cval(hx_prog *p, PyObject *v)
{
    if (plain_c(v))
        return v;
    PyObject *out = PyObject_CallOneArg(p->cval, v);
    Py_DECREF(v);
    return out;
}

/* A metric's value v (stolen) as _record_c makes it: number(v) into
 * out->x, or, not a number, the attribute alt = _cval(v). 0 or -1. */
static int prog_metric(hx_prog *p, const hx_item *it, PyObject *v, hx_val *out)
{
    double x;
    if (PyFloat_CheckExact(v) || PyLong_CheckExact(v)) {
        x = PyFloat_CheckExact(v) ? PyFloat_AS_DOUBLE(v) : PyLong_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred()) { /* beyond a double: number() raises too */
            Py_DECREF(v);
            return -1;
        }
    } else {
        PyObject *f = PyObject_CallOneArg(p->number, v);
        if (!f) {
            Py_DECREF(v);
            return -1;
        }
        if (f == Py_None) {
            Py_DECREF(f);
            out->op = HX_OUT_ATTR;
            out->key = it->alt;
            out->v = prog_cval(p, v);
            return out->v ? 0 : -1;
        }
        x = PyFloat_AsDouble(f);
        Py_DECREF(f);
        if (x == -1.0 && PyErr_Occurred()) {
            Py_DECREF(v);
            return -1;
        }
    }
    Py_DECREF(v);
    out->op = it->kind == HX_OUT_METRIC ? HX_OUT_METRIC : HX_OUT_METRIC_INC;
    out->key = it->key;
    out->x = x;
    return 0;
}

/* Evaluates item it into out (op -1: left out). 0, or -1 with the error
 * that fails the whole record set. */
static int prog_value(hx_prog *p, const hx_item *it, hx_call *c, hx_val *out)
{
    out->op = -1;
    PyObject *v = hx_eval(&it->e, c);
    if (!v)
        return hx_prog_fail(p, it->what);
    if (v == Py_None) {
        Py_DECREF(v);
        return 0;
    }
    if (it->kind != HX_OUT_ATTR)
        return prog_metric(p, it, v, out);
    out->op = HX_OUT_ATTR;
    out->key = it->key;
    out->v = prog_cval(p, v);
    return out->v ? 0 : -1;
}

/* pt's value for c: 0 with *v a new reference, or NULL when it raised an
 * Exception (handed to fail(): Binding.val()); -1 with any other error
 * set, which goes on. */
static int part_value(hx_prog *p, const hx_part *pt, hx_call *c, PyObject **v)
{
    *v = hx_eval(&pt->e, c);
    return *v || hx_prog_fail(p, pt->what) == 0 ? 0 : -1;
}

/* rid: [a, b] as Binding.rid_value(raw=True) makes it: the values that
 * are not None in order; one alone as itself; several as the list of
 * _scalar() of each (exact str and int as they are, the rest as str()),
 * which emit()'s rid writer writes as [{"rid": x}, ...] just as the
 * [{"rid": x}] rid_value() makes. 0, or -1 (str() raised: the record). */
static int rid_list(hx_prog *p, hx_call *c, PyObject **rid)
{
    PyObject *out = PyList_New(0), *v;
    if (!out)
        return -1;
    for (int i = 0; i < p->nrids; i++) {
        if (part_value(p, &p->rids[i], c, &v) < 0)
            goto fail;
        int rc = v && v != Py_None ? PyList_Append(out, v) : 0;
        Py_XDECREF(v);
        if (rc < 0)
            goto fail;
    }
    Py_ssize_t n = PyList_GET_SIZE(out);
    if (n == 1)
        *rid = Py_NewRef(PyList_GET_ITEM(out, 0));
    for (Py_ssize_t i = 0; n > 1 && i < n; i++) {
        PyObject *x = PyList_GET_ITEM(out, i);
        if (PyUnicode_CheckExact(x) || PyLong_CheckExact(x))
            continue;
        if (!(x = PyObject_Str(x)))
            goto fail;
        PyList_SetItem(out, i, x); /* steals x, releases the value */
    }
    if (n > 1)
        *rid = Py_NewRef(out);
    Py_DECREF(out);
    return 0;
fail:
    Py_DECREF(out);
    return -1;
}

/* Room for one more row of nf values, zeroed. 0, or -1 (no memory). */
static int rows_add(hx_rows *rows, int nf)
{
    if (rows->n == rows->cap) {
        Py_ssize_t cap = rows->cap ? 2 * rows->cap : 32;
        PyObject **v = (size_t)cap * (size_t)nf > PY_SSIZE_T_MAX / sizeof *v ? NULL
                       : PyMem_Realloc(rows->v, (size_t)cap * (size_t)nf * sizeof *v + 1);
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        rows->v = v;
        rows->cap = cap;
    }
    memset(rows->v + rows->n * nf, 0, (size_t)nf * sizeof *rows->v);
    rows->n++;
    return 0;
}

void hx_rows_done(hx_rows *rows, int nfields)
{
    for (Py_ssize_t i = 0; rows->v && i < rows->n * nfields; i++)
        Py_CLEAR(rows->v[i]);
    PyMem_Free(rows->v);
    memset(rows, 0, sizeof *rows);
}

PyObject *hx_rows_list(const hx_prog *p, const hx_rows *rows)
{
    PyObject *out = PyList_New(rows->n);
    for (Py_ssize_t i = 0; out && i < rows->n; i++) {
        PyObject *d = PyDict_New();
        for (int j = 0; d && j < p->nfields; j++) {
            PyObject *v = rows->v[i * p->nfields + j];
            if (v && PyDict_SetItem(d, p->fields[j].key, v) < 0)
                Py_CLEAR(d);
        }
        if (!d)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, d);
    }
    return out;
}

/* One row of an "each": the value of each field with item bound, None
 * left out (NULL), one that raised an Exception left out too (fail()).
 * 0, or -1 with an error that goes on. */
static int each_row(hx_prog *p, hx_call *c, PyObject *item, PyObject **row)
{
    int rc = 0;
    c->item = item;
    for (int i = 0; !rc && i < p->nfields; i++) {
        rc = part_value(p, &p->fields[i], c, &row[i]);
        if (row[i] == Py_None)
            Py_CLEAR(row[i]);
    }
    c->item = NULL;
    return rc;
}

/* rid: {each: EXPR, FIELD: EXPR...} as Binding.rid_value() makes it: the
 * iterable None or raising: no rid; a dict: its items(); then one row per
 * item (rows; hx_rows_list() makes them the dicts rid_value() makes).
 * What fails the iteration (not iterable, its __next__ raising) is handed
 * to fail() under each's what and leaves the rid out, as the Python
 * loop's except does. 0, or -1 with the error that goes on. */
static int rid_each(hx_prog *p, hx_call *c, hx_rows *rows)
{
    PyObject *seq, *it, *item;
    int fatal = 0;
    if (part_value(p, p->seq, c, &seq) < 0)
        return -1;
    if (!seq || seq == Py_None) {
        Py_XDECREF(seq);
        return 0;
    }
    if (PyDict_Check(seq)) { /* list(seq.items()), before the loop's try */
        PyObject *items;
        if (PyDict_CheckExact(seq)) {
            items = PyDict_Items(seq);
        } else { /* a subclass's own items() (an OrderedDict's order) */
            PyObject *view = PyObject_CallMethodNoArgs(seq, s_items);
            items = view ? PySequence_List(view) : NULL;
            Py_XDECREF(view);
        }
        Py_SETREF(seq, items);
        if (!seq)
            return -1;
    }
    it = PyObject_GetIter(seq);
    Py_DECREF(seq);
    while (it && (item = PyIter_Next(it))) {
        int rc = rows_add(rows, p->nfields);
        if (!rc && each_row(p, c, item, rows->v + (rows->n - 1) * p->nfields) < 0)
            fatal = 1;
        Py_DECREF(item);
        if (rc < 0 || fatal)
            break;
    }
    Py_XDECREF(it);
    if (PyErr_Occurred()) {
        hx_rows_done(rows, p->nfields);
        return fatal || hx_prog_fail(p, p->seq->what) < 0 ? -1 : 0;
    }
    rows->made = 1;
    return 0;
}

int hx_prog_link(hx_prog *p, hx_call *c, PyObject **from, PyObject **to)
{
    PyObject *v[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
    int rc = -1;
    *from = *to = NULL;
    for (int i = 0; i < 2; i++)
        if (part_value(p, &p->link[i], c, &v[i]) < 0)
            goto done;
    rc = 0;
    if (!v[0] || !v[1] || v[0] == Py_None || v[1] == Py_None)
        goto done;
    for (int i = 0; i < 2; i++) {
        PyObject *s = PyObject_Str(v[i]);
        out[i] = s ? PyUnicode_AsEncodedString(s, "utf-8", "replace") : NULL;
        Py_XDECREF(s);
        if (!out[i]) {
            rc = -1;
            Py_CLEAR(out[0]);
            goto done;
        }
    }
    *from = out[0];
    *to = out[1];
done:
    Py_XDECREF(v[0]);
    Py_XDECREF(v[1]);
    return rc;
}

int hx_prog_eval(hx_prog *p, hx_call *c, PyObject **rid, hx_rows *rows, hx_val *vals)
{
    int rc = 0;
    *rid = NULL;
    if (p->rid_what) {
        if (!(*rid = hx_eval(&p->rid, c)) && hx_prog_fail(p, p->rid_what) < 0)
            return -1;
    } else if (p->nrids) {
        rc = rid_list(p, c, rid);
    } else if (p->seq) {
        rc = rid_each(p, c, rows);
    }
    if (rc < 0)
        return -1;
    for (int i = 0; i < p->n; i++)
        if (prog_value(p, &p->items[i], c, &vals[i]) < 0)
            return -1;
    return 0;
}

void hx_vals_done(hx_val *vals, int n)
{
    for (int i = 0; i < n; i++)
        Py_CLEAR(vals[i].v);
}
