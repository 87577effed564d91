/* SPDX-License-Identifier: Apache-2.0 */
/*
 * _hookexpr.h — private to the servprof._hookcall extension: the hook
 * expressions of hooks/expr.py, compiled to an op array and evaluated with
 * the CPython API (_hookexpr.c). Not an API of the package.
 */
#ifndef SERVPROF_HOOKEXPR_H
#define SERVPROF_HOOKEXPR_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* One node. Its operands (a, b) are indexes of earlier nodes, so an op
 * array is evaluated from its last node down and every walk ends. */
typedef struct {
    int code;        /* HX_*, the numbers of expr.py's OP_* */
    int a, b;        /* operand indexes, or a parameter's position */
    PyObject *obj;   /* const value, builtin of a call; owned */
    PyObject *name;  /* parameter, attribute or method name (interned); owned */
    PyObject *dflt;  /* a parameter's default, NULL: none; owned */
} hx_node;

/* A compiled expression: immutable after hx_compile(). */
typedef struct {
    int n;
    hx_node *nodes;  /* PyMem_ allocated; NULL when n is 0 */
} hx_expr;

/* What one call offers its expressions: the caller's vectorcall arguments
 * (borrowed, alive for the whole call) and the result. args and kwargs
 * as objects are made only when an expression asks for them. */
typedef struct {
    PyObject *const *args;
    Py_ssize_t nargs;
    PyObject *kwnames;  /* tuple or NULL */
    PyObject *ret;      /* NULL: None (at call, or the call raised) */
    PyObject *tuple;    /* args as a tuple, made on first use; owned */
    PyObject *dict;     /* kwargs as a dict, made on first use; owned */
    PyObject *item;     /* the item of a rid "each" being made, borrowed;
                         * NULL: None (every other expression) */
} hx_call;

/* Compiles expr.flatten()'s op list into e (zeroed by the caller).
 * Returns 0, or -1 with a Python error set (e is then freed). */
int hx_compile(PyObject *ops, hx_expr *e);

/* Releases what e holds; e may be zeroed or half compiled. */
void hx_free(hx_expr *e);

/* Visits e's objects for the cyclic GC. */
int hx_traverse(const hx_expr *e, visitproc visit, void *arg);

/* The value of e for call c: a new reference, or NULL with the Python
 * error the pure-Python closures of expr.bind() would have raised. */
PyObject *hx_eval(const hx_expr *e, hx_call *c);

/* Releases what hx_eval() made for c. */
void hx_call_done(hx_call *c);

/* ------------------------------------------------------------------ */
/* Compiled records: what wrap.py Binding._c_prog() describes          */
/* ------------------------------------------------------------------ */

/* An item's kind; also the op of emit()'s items it is written as. */
enum { HX_OUT_ATTR = 0, HX_OUT_METRIC = 1, HX_OUT_METRIC_INC = 2 };

/* An attribute or metric of a record. */
typedef struct {
    int kind;          /* HX_OUT_*  */
    PyObject *key;     /* bytes */
    PyObject *alt;     /* bytes: a metric's key when its value is no number */
    PyObject *what;    /* str, for fail() */
    hx_expr e;
} hx_item;

/* An expression of a record's rid or link, with what fail() is told of
 * it and, for a field of a rid "each", its name. */
typedef struct {
    PyObject *key;     /* str: an "each" field's name; else NULL */
    PyObject *key8;    /* bytes: key in UTF-8; NULL: none, or not encodable */
    PyObject *what;    /* str */
    hx_expr e;
} hx_part;

/* A compiled record: immutable after hx_prog_new(). At most one rid shape
 * is set: rid_what (one expression), nrids (a rid list) or seq (each). */
typedef struct {
    PyObject *fail;    /* Binding.fail(what, exc) */
    PyObject *cval;    /* wrap._cval */
    PyObject *number;  /* _core.number */
    PyObject *rid_what;/* str; NULL: no rid expression */
    hx_expr rid;
    int nrids;         /* rid: [a, b]: its expressions (PyMem_); 0: none */
    hx_part *rids;
    hx_part *seq;      /* rid: {each: ...}: the iterable (PyMem_); NULL: none */
    int nfields;
    hx_part *fields;   /* each's per-item fields, key set (PyMem_) */
    int each_direct;   /* 1: every key has its key8, no two alike (hx_rows) */
    hx_part *link;     /* link: {from, to}: two parts (PyMem_); NULL: none */
    int link_only;     /* emit: link: the link is all the hook writes */
    PyObject *scope;   /* emit() item (op, key, value), or NULL */
    int n;
    hx_item *items;    /* PyMem_ */
} hx_prog;

/* One evaluated item, before the record is begun. */
typedef struct {
    int op;            /* HX_OUT_*; -1: left out */
    PyObject *key;     /* borrowed */
    PyObject *v;       /* owned: an attribute's value */
    double x;          /* a metric's */
} hx_val;


/* The entries of a rid "each" as evaluated: a row per item, a value per
 * field. Zeroed by the caller; release with hx_rows_done(). */
typedef struct {
    int made;          /* 1: the rid is these rows (n may be 0) */
    Py_ssize_t n, cap; /* rows made, rows allocated */
    PyObject **v;      /* n * nfields values, owned; NULL: left out (PyMem_) */
} hx_rows;

/* The record wrap.py's Binding._c_prog() describes: (fail, cval, number,
 * rid ops or None, rid what, [(kind, key, ops, what, alt key)], scope item
 * or None[, rid list, each, link, link only]) with rid list None or
 * [(ops, what)], each None or (ops, what, [(field str, ops, what)]), link
 * None or ((ops, what), (ops, what)) and link only a bool. Free with
 * hx_prog_free(). NULL with an error set. */
hx_prog *hx_prog_new(PyObject *spec);

/* Releases p; NULL is a no-op. */
void hx_prog_free(hx_prog *p);

int hx_prog_traverse(hx_prog *p, visitproc visit, void *arg);

/* Evaluates p's rid (*rid: a new reference, or NULL: none; an "each":
 * rows) and items into vals (p->n of them, zeroed by the caller; release
 * with hx_vals_done()), in Binding._record_c's order, each value
 * normalised as _record_c does. A rid list comes as the list of its ids,
 * written by emit()'s rid code as the list rid_value() makes. An
 * expression that raises an Exception is handed to fail() and left out.
 * Returns 0, or -1 with the error that fails the whole record set. */
int hx_prog_eval(hx_prog *p, hx_call *c, PyObject **rid, hx_rows *rows, hx_val *vals);

void hx_vals_done(hx_val *vals, int n);

/* rows as the list of dicts Binding.rid_value() makes ({field: value} of
 * the values not left out, in the fields' order): a new reference, or
 * NULL with an error set. */
PyObject *hx_rows_list(const hx_prog *p, const hx_rows *rows);

void hx_rows_done(hx_rows *rows, int nfields);

/* p's link as Binding._link makes it: *from and *to the UTF-8 bytes of
 * str() of the two values (new references), or both NULL when one raised
 * (handed to fail()) or is None. Returns 0, or -1 with the error that fails
 * the whole record set (str() raised: "recording", as in _record_c). */
int hx_prog_link(hx_prog *p, hx_call *c, PyObject **from, PyObject **to);

/* The raised exception handed to p's fail(what, exc) (what NULL:
 * "recording"), as _record_c's except clauses do, and cleared. Returns 0,
 * or -1 when it is no Exception (a KeyboardInterrupt goes on, as out of
 * Python; left set). */
int hx_prog_fail(hx_prog *p, PyObject *what);

#endif
