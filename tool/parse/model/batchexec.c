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
 * batch_req: one row per object entry with a rid of each scheduling
 * step's rid list (steps whose args are JSON, numbered 1... in time
 * order): req_id and rid the entry's rid (its JSON type kept: a number
 * stays a number), iter as recorded (empty when absent or not a whole
 * number), block empty. The entries are the model's decode of the args
 * (argdecode.c), which the other reports read anyway: reading the args
 * again with a JSON library cost 2.4 times the whole parse's instructions
 * on bench_parse. So, unlike the view this replaced, an entry's own
 * req_id and block attributes are not read (no emitter we know writes
 * them) and an object entry without a rid gives no row.
 *
 * Before this file both were views over batch, forward and slice
 * (dbcompat.c); docs/compat.md says what changed. Off (no state) when
 * profiler.db is not written: both tables are db-only.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    char *buf;             /* an escaped rid, unescaped */
    int cap;
} batchexec;

static const prs_col c_exec[] = {{"batch_id", "INTEGER"}, {"event", "TEXT"}, {"pid", "TEXT"},
                                 {"start", "INTEGER"}, {"end", "INTEGER"}};
/* no declared type: rid keeps its JSON type, as the view's json_extract gave it */
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

/* An entry's rid as its JSON type: a number stays a number (the
 * decode keeps numbers as their digits, strings without their quotes: the
 * byte before a string's first is its opening quote). *buf holds the
 * unescaped text of a string until the next call. */
static prs_val rid_val(prs_str rid, char **buf, int *cap)
{
    if (rid.p[-1] != '"') {
        char num[64];
        int n = rid.n < (int)sizeof num - 1 ? rid.n : (int)sizeof num - 1;
        memcpy(num, rid.p, (size_t)n);
        num[n] = 0;
        char *end;
        long long i = strtoll(num, &end, 10);
        if (*end == 0)
            return prs_v_int(i);
        return prs_v_real(strtod(num, NULL));
    }
    if (!rid.esc)
        return prs_v_text(rid.p, rid.n);
    if (rid.n + 1 > *cap) {
        *cap = rid.n + 1;
        *buf = prs_xrealloc(*buf, (size_t)*cap);
    }
    int n = prs_str_copy(rid, *buf, *cap);
    return prs_v_text(*buf, n);
}

/* batch_req's rows of one step: its object entries, from the model's
 * decode of the args (m->args), which costs nothing more. */
static void req_rows(batchexec *b, prs_model *m)
{
    const prs_args *a = &m->args;
    for (int i = 0; i < a->nrids; i++) {
        const prs_rident *e = &a->rids[i];
        if (!e->obj || !e->rid.p)
            continue;
        prs_val rid = rid_val(e->rid, &b->buf, &b->cap);
        prs_val v[5] = {rid, e->iter >= 0 ? prs_v_int(e->iter) : prs_v_null(), rid, prs_v_null(),
                        prs_v_int(b->steps)};
        prs_table_row(&m->out, &b->t_req, v);
    }
}

static void record_batchexec(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    batchexec *b = st;
    if (k == K_BATCH && m->args.valid) {
        b->steps++;
        if (m->args.rid_kind == 2)
            req_rows(b, m);
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
    if (b->nev > 1)
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
    free(b->buf);
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
