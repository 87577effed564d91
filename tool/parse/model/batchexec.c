/* SPDX-License-Identifier: Apache-2.0 */
/*
 * batchexec.c — profiler.db's batch_exec and batch_req, the reference's
 * tables of its steps, as TABLES (tools that list sqlite_master WHERE
 * type = 'table' find them), made here in the parser so both db writers
 * (btwrite.c's pages, dbsql.c's INSERTs) write them like any report's rows.
 *
 * batch_exec: one row per step, record name and process. A step starts at
 * each scheduling span (BatchSchedule, batchFrameworkProcessing); the
 * batch table's rows (but specDecoding) and the forward table's rows are
 * numbered by the steps in start order (a scheduling span first among
 * rows that start together), rows before the first step left out; per
 * (step, name, prof_id) the earliest start and latest end, in µs since the
 * epoch (the batch table's start_time(ms) rounded to the µs). Every record
 * of those kinds is a row of batch.c / forward.c (neither skips one), so
 * the records give the same rows; they are kept (32 bytes each) and
 * numbered at finish, since a step's start order is not the order in which
 * the records end.
 *
 * batch_req: one row per object entry of each scheduling step's rid list
 * (steps whose args are JSON, numbered 1... in time order): req_id (the
 * entry's req_id, else its rid), iter, rid and block as the entry holds
 * them (their JSON types kept: a number stays a number). The entries are
 * read with jansson from the record's args, only for steps with a rid
 * list: the model's decode keeps neither req_id nor block nor which
 * entries are objects.
 *
 * Before this file both were views over batch, forward and slice
 * (dbcompat.c); docs/compat.md says what changed. Off (no state) when
 * profiler.db is not written: both tables are db-only.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model.h"
#include "xalloc.h"

typedef struct bx_ev {
    int64_t s, e;          /* µs since the epoch */
    int name, pid;         /* indexes into the interned strings */
    int sched;             /* a scheduling span: starts a step */
    long long seq;         /* arrival order: ties sort as they came */
} bx_ev;

typedef struct batchexec {
    prs_table t_exec, t_req;
    bx_ev *ev;
    long long nev, capev;
    char **str;            /* interned names and prof_ids (a handful) */
    int nstr;
    long long steps;       /* scheduling steps with JSON args seen: batch_req's batch_id */
} batchexec;

static const prs_col c_exec[] = {{"batch_id", "INTEGER"}, {"event", "TEXT"}, {"pid", "TEXT"},
                                 {"start", "INTEGER"}, {"end", "INTEGER"}};
/* no declared type: the values keep the JSON's types, as the view's json_extract gave them */
static const prs_col c_req[] = {{"req_id", ""}, {"iter", ""}, {"rid", ""}, {"block", ""}, {"batch_id", "INTEGER"}};

static int intern(batchexec *b, const char *s)
{
    for (int i = 0; i < b->nstr; i++)
        if (!strcmp(b->str[i], s))
            return i;
    b->str = prs_xrealloc(b->str, (size_t)(b->nstr + 1) * sizeof *b->str);
    b->str[b->nstr] = prs_xstrdup(s);
    return b->nstr++;
}

/* The batch table's start_time(ms) (prs_v_ns's double) rounded to the µs,
 * as the view's CAST(round(ms * 1000) AS INTEGER) did. */
static int64_t us_of(int64_t ns)
{
    double ms = (double)(ns / 1000000) + (double)(ns % 1000000) / 1e6;
    return (int64_t)llround(ms * 1000.0);
}

static void *open_batchexec(prs_model *m)
{
    if (!m->out.db)
        return NULL;
    batchexec *b = prs_xcalloc(1, sizeof *b);
    prs_table_init(&m->out, &b->t_exec, NULL, "batch_exec", c_exec, (int)(sizeof c_exec / sizeof *c_exec), NULL);
    prs_table_init(&m->out, &b->t_req, NULL, "batch_req", c_req, (int)(sizeof c_req / sizeof *c_req), NULL);
    return b;
}

/* A JSON value as the view's json_extract returned it. */
static prs_val json_val(json_t *v, char **text)
{
    *text = NULL;
    switch (json_typeof(v)) {
    case JSON_INTEGER: return prs_v_int(json_integer_value(v));
    case JSON_REAL: return prs_v_real(json_real_value(v));
    case JSON_STRING: return prs_v_text(json_string_value(v), (int)json_string_length(v));
    case JSON_TRUE: return prs_v_int(1);
    case JSON_FALSE: return prs_v_int(0);
    case JSON_OBJECT:
    case JSON_ARRAY:
        *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        return prs_v_text(*text, -1);
    default: return prs_v_null();
    }
}

static void req_rows(batchexec *b, prs_model *m, const prs_rec *r)
{
    json_t *doc = json_loadb(r->args, (size_t)r->args_len, 0, NULL);
    json_t *list = json_object_get(doc, "rid");
    /* json_each over an object walks its members, over an array its elements */
    size_t n = json_is_array(list) ? json_array_size(list) : json_is_object(list) ? json_object_size(list) : 0;
    void *it = json_is_object(list) ? json_object_iter(list) : NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *e;
        if (json_is_array(list))
            e = json_array_get(list, i);
        else {
            e = json_object_iter_value(it);
            it = json_object_iter_next(list, it);
        }
        if (!json_is_object(e))
            continue;
        json_t *rid = json_object_get(e, "rid"), *req = json_object_get(e, "req_id");
        if (!req || json_is_null(req))
            req = rid;
        char *t[4] = {NULL, NULL, NULL, NULL};
        prs_val v[5] = {req ? json_val(req, &t[0]) : prs_v_null(),
                        json_object_get(e, "iter") ? json_val(json_object_get(e, "iter"), &t[1]) : prs_v_null(),
                        rid ? json_val(rid, &t[2]) : prs_v_null(),
                        json_object_get(e, "block") ? json_val(json_object_get(e, "block"), &t[3]) : prs_v_null(),
                        prs_v_int(b->steps)};
        prs_table_row(&m->out, &b->t_req, v);
        for (int k = 0; k < 4; k++)
            free(t[k]);
    }
    json_decref(doc);
}

static void record_batchexec(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    batchexec *b = st;
    if (k == K_BATCH && m->args.valid) {
        b->steps++;
        if (m->args.rid_kind == 2 || !m->args.rid_kind) /* a list, or a key the decode does not take */
            req_rows(b, m, r);
    }
    if (b->nev == b->capev) {
        b->capev = b->capev ? b->capev * 2 : 1024;
        b->ev = prs_xrealloc(b->ev, (size_t)b->capev * sizeof *b->ev);
    }
    b->ev[b->nev] = (bx_ev){us_of(r->ts), us_of(r->ts + r->dur), intern(b, r->name),
                            intern(b, r->store->prof_id ? r->store->prof_id : ""), k == K_BATCH, b->nev};
    b->nev++;
}

/* start, then a scheduling span before the rest, then arrival */
static int cmp_ev(const void *x, const void *y)
{
    const bx_ev *a = x, *c = y;
    if (a->s != c->s)
        return (a->s > c->s) - (a->s < c->s);
    if (a->sched != c->sched)
        return c->sched - a->sched;
    return (a->seq > c->seq) - (a->seq < c->seq);
}

/* one output row of batch_exec, gathered */
typedef struct bx_row { long long batch; int name, pid; int64_t s, e; } bx_row;

static int cmp_row(const void *x, const void *y)
{
    const bx_row *a = x, *c = y;
    if (a->batch != c->batch)
        return (a->batch > c->batch) - (a->batch < c->batch);
    if (a->s != c->s)
        return (a->s > c->s) - (a->s < c->s);
    if (a->name != c->name)
        return a->name - c->name;
    return a->pid - c->pid;
}

static void finish_batchexec(void *st, prs_model *m)
{
    batchexec *b = st;
    qsort(b->ev, (size_t)b->nev, sizeof *b->ev, cmp_ev);
    /* per step, one row per (name, pid): the step's events are few, so a
     * linear look over the step's rows so far finds its group */
    bx_row *rows = prs_xmalloc((size_t)(b->nev ? b->nev : 1) * sizeof *rows);
    long long nrows = 0, batch = 0, step_first = 0;
    for (long long i = 0; i < b->nev; i++) {
        const bx_ev *e = &b->ev[i];
        if (e->sched) {
            batch++;
            step_first = nrows;
        }
        if (!batch)
            continue; /* before the first step */
        long long j = step_first;
        while (j < nrows && (rows[j].name != e->name || rows[j].pid != e->pid))
            j++;
        if (j == nrows)
            rows[nrows++] = (bx_row){batch, e->name, e->pid, e->s, e->e};
        else {
            if (e->s < rows[j].s)
                rows[j].s = e->s;
            if (e->e > rows[j].e)
                rows[j].e = e->e;
        }
    }
    qsort(rows, (size_t)nrows, sizeof *rows, cmp_row);
    for (long long i = 0; i < nrows; i++) {
        prs_val v[5] = {prs_v_int(rows[i].batch), prs_v_text(b->str[rows[i].name], -1),
                        prs_v_text(b->str[rows[i].pid], -1), prs_v_int(rows[i].s), prs_v_int(rows[i].e)};
        prs_table_row(&m->out, &b->t_exec, v);
    }
    free(rows);
    free(b->ev);
    b->ev = NULL;
    b->nev = b->capev = 0;
}

static void close_batchexec(void *st, prs_model *m)
{
    batchexec *b = st;
    prs_table_close(&m->out, &b->t_exec);
    prs_table_close(&m->out, &b->t_req);
}

static void free_batchexec(void *st)
{
    batchexec *b = st;
    for (int i = 0; i < b->nstr; i++)
        free(b->str[i]);
    free(b->str);
    free(b->ev);
    free(b);
}

const prs_report prs_report_batchexec = {
    .name = "batchexec",
    .kinds = PRS_KIND(K_BATCH) | PRS_KIND(K_EXEC) | PRS_KIND(K_FORWARD),
    .open = open_batchexec,
    .record = record_batchexec,
    .finish = finish_batchexec,
    .close = close_batchexec,
    .free = free_batchexec,
};
