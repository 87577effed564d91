/* SPDX-License-Identifier: Apache-2.0 */
/*
 * batch.c — batch.csv: one row per scheduling step (batchFrameworkProcessing
 * / BatchSchedule) and per execution of it (modelExec / modelRunnerExec /
 * Execute), plus specDecoding steps.
 *
 * The rid list of a step is JSON (argdecode.c) and each entry's `type` (0
 * prefill, 1 decode; else iter 0 = prefill) splits the batch. KV columns
 * belong to the step: a schedule step takes the first KVCacheStatus of the
 * same process at or after its start (the scheduler reports the KV state
 * once it has placed the step's blocks), and the execution of that step
 * takes the same state — not the next step's, which often comes before the
 * execution ends. That is a look-ahead: rows wait in a per-process FIFO
 * until the record arrives (bounded: beyond MAX_PENDING the oldest goes
 * out with empty KV columns); rows still waiting at the end take the
 * process's last KVCacheStatus, as the reference does. An execution is
 * matched to the schedule step it runs by process and order (FIFO), never
 * by comparing printed id lists; one that carries no rid list takes the
 * step's list. An execution with no schedule step (a server that records
 * execution only) takes the first KVCacheStatus at or after its start.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "model.h"
#include "repcols.h"
#include "xalloc.h"

#define MAX_PENDING 4096
#define SCHED_FIFO 64
#define STEP_TYPES 64 /* schedule steps remembered for their forwards */

/* The reference's column order; ours (accepted_ratio*) after it. */
enum { C_NAME, C_RES, C_START_DT, C_END_DT, C_DUR, C_TYPE, C_PROF, C_SIZE, C_KV0,
       C_PSIZE = C_KV0 + 6, C_DSIZE, C_PTOK, C_DTOK, C_TTOK, C_DP, C_START, C_END, C_ACC, C_ACCPOS, C_N };

static const prs_col cols[C_N] = {
    {PRS_BT_NAME, "TEXT"}, {PRS_BT_RES_LIST, "TEXT"}, {PRS_BT_START_DT, "TEXT"}, {PRS_BT_END_DT, "TEXT"},
    {PRS_BT_DUR_MS, "REAL"}, {PRS_BT_TYPE, "TEXT"}, {PRS_BT_PROF_ID, "TEXT"}, {PRS_BT_SIZE, "INTEGER"},
    {PRS_BT_TOTAL_BLOCKS, "INTEGER"}, {PRS_BT_USED_BLOCKS, "INTEGER"},
    {PRS_BT_FREE_BLOCKS, "INTEGER"}, {PRS_BT_ALLOCATED, "INTEGER"}, {PRS_BT_FREED, "INTEGER"},
    {PRS_BT_KV_USAGE, "REAL"},
    {PRS_BT_PREFILL_SIZE, "INTEGER"}, {PRS_BT_DECODE_SIZE, "INTEGER"},
    {PRS_BT_PREFILL_TOK, "INTEGER"}, {PRS_BT_DECODE_TOK, "INTEGER"},
    {PRS_BT_TOTAL_TOK, "INTEGER"}, {PRS_BT_DP_RANK, "INTEGER"}, {PRS_BT_START_MS, "REAL"},
    {PRS_BT_END_MS, "REAL"}, {PRS_BT_ACCEPTED, "REAL"}, {PRS_BT_ACCEPTED_POS, "TEXT"},
};

/* Per process (store): the rows waiting for its next KVCacheStatus, its
 * schedule steps waiting for their executions, its held specDecoding row. */
typedef struct batch_store {
    prs_pending *pend_head, *pend_tail; /* rows waiting for the next KVCacheStatus */
    int npend;
    double last_kv[6];     /* the last KVCacheStatus of this process */
    int have_last_kv;
    /* a specDecoding row waiting for the next execution (its acceptance) */
    prs_pending *spec_held;
    int *spec_roots;          /* its requests (id roots) and drafted tokens */
    double *spec_drafted;
    int spec_n;
    /* schedule steps not yet matched to an execution (FIFO, SCHED_FIFO) */
    prs_pending **sched_fifo;
    int sched_n, sched_head;
} batch_store;

/* A schedule step's requests (id roots) and batch type. */
typedef struct step_type {
    int *roots;
    int nroots;
    char type[24];
} step_type;

/* The report's state (prs_report_batch). */
struct prs_batch {
    prs_table t;
    batch_store *st;       /* by store index */
    int nstores;
    /* The last schedule steps' request sets and batch types, so that a
     * forward whose rid list says nothing about its type (no iter, no
     * type: vLLM-style workers) takes the type of the step it runs. */
    step_type *step_types;
    int nstep_types, step_types_next;
};

static void *open_batch(prs_model *m)
{
    prs_batch *b = prs_xcalloc(1, sizeof *b);
    prs_table_init(&m->out, &b->t, "batch.csv", PRS_T_BATCH, cols, C_N,
                   "no batch records (domain BatchSchedule/Execute: batchFrameworkProcessing, "
                   "modelExec) were found");
    b->nstores = m->nstores;
    b->st = prs_xcalloc((size_t)m->nstores + 1, sizeof *b->st);
    return b;
}

static prs_val num_or_null(double d)
{
    return isnan(d) ? prs_v_null() : prs_v_int(llround(d));
}

static void emit(prs_batch *b, prs_model *m, prs_pending *p)
{
    prs_table_row(&m->out, &b->t, p->vals);
    prs_pending_free(p);
}

static void enqueue(prs_batch *b, prs_model *m, batch_store *st, prs_pending *p)
{
    if (st->pend_tail)
        st->pend_tail->next = p;
    else
        st->pend_head = p;
    st->pend_tail = p;
    if (++st->npend > MAX_PENDING) {
        prs_pending *h = st->pend_head;
        st->pend_head = h->next;
        if (!st->pend_head)
            st->pend_tail = NULL;
        st->npend--;
        emit(b, m, h);
    }
}

static void set_kv(prs_pending *p, const double kv[6])
{
    for (int i = 0; i < 5; i++)
        p->vals[C_KV0 + i] = num_or_null(kv[i]);
    p->vals[C_KV0 + 5] = prs_v_real(kv[5]);
    p->kv_set = 1;
}

/* A KVCacheStatus of `store`: completes the rows waiting for it, and the
 * schedule steps whose executions are still to come. */
void prs_batch_kv(prs_batch *b, prs_model *m, int store, const double kv[6])
{
    batch_store *st = &b->st[store];
    while (st->pend_head) {
        prs_pending *p = st->pend_head;
        st->pend_head = p->next;
        if (!p->kv_set)
            set_kv(p, kv);
        emit(b, m, p);
    }
    st->pend_tail = NULL;
    st->npend = 0;
    for (int i = 0; i < st->sched_n; i++) {
        prs_pending *p = st->sched_fifo[(st->sched_head + i) % SCHED_FIFO];
        if (!p->kv_set)
            set_kv(p, kv);
    }
    memcpy(st->last_kv, kv, sizeof st->last_kv);
    st->have_last_kv = 1;
}

static void sched_push(batch_store *st, const prs_val *v)
{
    if (!st->sched_fifo)
        st->sched_fifo = prs_xcalloc(SCHED_FIFO, sizeof *st->sched_fifo);
    if (st->sched_n == SCHED_FIFO) { /* executions never came: forget the oldest */
        prs_pending_free(st->sched_fifo[st->sched_head]);
        st->sched_head = (st->sched_head + 1) % SCHED_FIFO;
        st->sched_n--;
    }
    st->sched_fifo[(st->sched_head + st->sched_n) % SCHED_FIFO] = prs_pending_new(v, C_N);
    st->sched_n++;
}

static prs_pending *sched_pop(batch_store *st)
{
    if (!st->sched_n)
        return NULL;
    prs_pending *p = st->sched_fifo[st->sched_head];
    st->sched_head = (st->sched_head + 1) % SCHED_FIFO;
    st->sched_n--;
    return p;
}

typedef struct acc_ctx { prs_model *m; batch_store *st; double *acc; } acc_ctx;

static void acc_member(prs_str key, double v, void *c)
{
    acc_ctx *a = c;
    int node = prs_ids_find_str(a->m->ids, key);
    if (node < 0 || isnan(v))
        return;
    int root = prs_ids_root(a->m->ids, node);
    for (int i = 0; i < a->st->spec_n; i++)
        if (a->st->spec_roots[i] == root)
            a->acc[i] = v;
}

/* Completes the held specDecoding row with the acceptance an execution
 * reports (accepted may be empty: the row goes out without it). */
static void spec_release(prs_batch *b, prs_model *m, batch_store *st, prs_str accepted)
{
    prs_pending *p = st->spec_held;
    if (!p)
        return;
    st->spec_held = NULL;
    if (accepted.p && st->spec_n) {
        double *acc = prs_xmalloc((size_t)st->spec_n * sizeof *acc);
        for (int i = 0; i < st->spec_n; i++)
            acc[i] = NAN;
        acc_ctx c = {m, st, acc};
        prs_json_each_number(accepted, acc_member, &c, &m->args.range_errors);
        double sa = 0, sd = 0;
        int maxd = 0, have = 0;
        for (int i = 0; i < st->spec_n; i++) {
            if (isnan(acc[i]) || isnan(st->spec_drafted[i]))
                continue;
            have = 1;
            sa += acc[i];
            sd += st->spec_drafted[i];
            /* only positions 1..64 are reported: clamped before the cast
             * (a double beyond int is undefined behaviour to convert) */
            double dd = st->spec_drafted[i];
            int d = dd > 64 ? 64 : dd < 0 ? 0 : (int)dd;
            if (d > maxd)
                maxd = d;
        }
        if (have && sd > 0) {
            p->vals[C_ACC] = prs_v_real(sa / sd);
            /* position k: requests with >= k accepted among those with >= k drafted,
             * as the reference writes it: an object keyed by the 0-based position
             * ({"0": 0.95, "1": 0.88}), each share rounded to 4 decimals */
            size_t cap = (size_t)maxd * 24 + 8, o = 0;
            char *txt = prs_xmalloc(cap);
            txt[o++] = '{';
            for (int k = 1; k <= maxd && k <= 64; k++) {
                int num = 0, den = 0;
                for (int i = 0; i < st->spec_n; i++) {
                    if (isnan(acc[i]) || isnan(st->spec_drafted[i]) || st->spec_drafted[i] < k)
                        continue;
                    den++;
                    num += acc[i] >= k;
                }
                o += (size_t)snprintf(txt + o, cap - o, "%s\"%d\": %.10g", k > 1 ? ", " : "", k - 1,
                                      den ? round((double)num / den * 1e4) / 1e4 : 0.0);
            }
            txt[o++] = '}';
            txt[o] = 0;
            p->vals[C_ACCPOS] = prs_v_text(txt, (int)o); /* owned by the row now */
        }
        free(acc);
    }
    enqueue(b, m, st, p);
    st->spec_n = 0;
}

/* Keeps the schedule step's request set and type for the forwards that
 * run it (in this or another process). */
static void remember_step_type(prs_batch *b, const prs_model *m, const prs_val *type)
{
    if (type->kind != PRS_TEXT || !m->nroots)
        return;
    if (!b->step_types)
        b->step_types = prs_xcalloc(STEP_TYPES, sizeof *b->step_types);
    step_type *t = &b->step_types[b->step_types_next];
    b->step_types_next = (b->step_types_next + 1) % STEP_TYPES;
    if (b->nstep_types < STEP_TYPES)
        b->nstep_types++;
    t->roots = prs_xrealloc(t->roots, (size_t)m->nroots * sizeof *t->roots);
    memcpy(t->roots, m->roots, (size_t)m->nroots * sizeof *t->roots);
    t->nroots = m->nroots;
    int n = type->n < (int)sizeof t->type - 1 ? type->n : (int)sizeof t->type - 1;
    memcpy(t->type, type->s, (size_t)n);
    t->type[n] = 0;
}

const char *prs_batch_step_type(const prs_batch *b, const prs_model *m)
{
    for (int i = 1; b && i <= b->nstep_types; i++) { /* newest first */
        const step_type *t = &b->step_types[(b->step_types_next - i + STEP_TYPES) % STEP_TYPES];
        if (t->nroots != m->nroots)
            continue;
        int j = 0;
        while (j < t->nroots && prs_ids_root(m->ids, t->roots[j]) == m->roots[j])
            j++;
        if (j == t->nroots)
            return t->type;
    }
    return NULL;
}

static void record_batch(void *state, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    prs_batch *b = state;
    const prs_args *a = &m->args;
    batch_store *st = &b->st[r->store->index];
    prs_val v[C_N];
    for (int i = 0; i < C_N; i++)
        v[i] = prs_v_null();
    char sdt[40], edt[40];
    prs_fmt_datetime(r->ts, sdt);
    prs_fmt_datetime(r->ts + r->dur, edt);
    v[C_NAME] = prs_v_text(r->name, -1);
    v[C_START_DT] = prs_v_text(sdt, -1);
    v[C_END_DT] = prs_v_text(edt, -1);
    v[C_DUR] = prs_v_ns(r->dur);
    v[C_PROF] = prs_v_text(r->store->prof_id, -1);
    v[C_DP] = r->store->dp_rank >= 0 ? prs_v_int(r->store->dp_rank) : prs_v_null();
    v[C_START] = prs_v_ns(r->ts);
    v[C_END] = prs_v_ns(r->ts + r->dur);
    char type_buf[64];
    prs_pending *sched = NULL;
    if (a->rid_kind == 2 || a->rid_kind == 1) {
        int len;
        const char *res = prs_res_list(m, &len);
        v[C_RES] = prs_v_text(res, len);
        int pre = 0, dec = 0;
        double ptok = 0, dtok = 0;
        int have_tok = 0;
        for (int i = 0; i < a->nrids; i++) {
            const prs_rident *e = &a->rids[i];
            int is_pre = e->type >= 0 ? e->type == 0 : e->iter == 0;
            double t = !isnan(e->sched_tokens) ? e->sched_tokens : NAN;
            if (!isnan(t))
                have_tok = 1;
            if (is_pre) {
                pre++;
                ptok += isnan(t) ? 0 : t;
            } else {
                dec++;
                dtok += isnan(t) ? 0 : t;
            }
        }
        if (a->rid_kind == 1)
            dec = pre = 0;
        v[C_SIZE] = prs_v_int(m->nroots);
        if (a->rid_kind == 2) {
            v[C_PSIZE] = prs_v_int(pre);
            v[C_DSIZE] = prs_v_int(dec);
        }
        if (have_tok) {
            v[C_PTOK] = prs_v_int(llround(ptok));
            v[C_DTOK] = prs_v_int(llround(dtok));
            v[C_TTOK] = prs_v_int(llround(ptok + dtok));
        }
        if (a->batch_type.p) {
            prs_str_copy(a->batch_type, type_buf, sizeof type_buf);
            v[C_TYPE] = prs_v_text(type_buf, -1);
        } else if (a->rid_kind == 2 && pre + dec > 0) {
            v[C_TYPE] = prs_v_text(pre && dec ? "Prefill, Decode" : pre ? "Prefill" : "Decode", -1);
        }
    } else if (a->batch_type.p) {
        prs_str_copy(a->batch_type, type_buf, sizeof type_buf);
        v[C_TYPE] = prs_v_text(type_buf, -1);
    }
    if (!isnan(a->batch_size) && v[C_SIZE].kind == PRS_NULL)
        v[C_SIZE] = prs_v_int(llround(a->batch_size));
    if (k == K_SPEC) {
        spec_release(b, m, st, (prs_str){0});
        st->spec_roots = prs_xrealloc(st->spec_roots, (size_t)(a->nrids + 1) * sizeof *st->spec_roots);
        st->spec_drafted = prs_xrealloc(st->spec_drafted, (size_t)(a->nrids + 1) * sizeof *st->spec_drafted);
        st->spec_n = 0;
        for (int i = 0; i < a->nrids && i < m->nroots; i++) {
            st->spec_roots[st->spec_n] = m->roots[i];
            st->spec_drafted[st->spec_n++] = a->rids[i].spec_tokens;
        }
        st->spec_held = prs_pending_new(v, C_N);
        return;
    }
    if (k == K_BATCH) {
        remember_step_type(b, m, &v[C_TYPE]);
        sched_push(st, v);
    } else if (k == K_EXEC) {
        spec_release(b, m, st, a->accepted);
        sched = sched_pop(st);
        if (sched && a->rid_kind == 0) {
            /* Inherit what the schedule step said about the batch. */
            static const int inherit[] = {C_RES, C_TYPE, C_SIZE, C_PSIZE, C_DSIZE, C_PTOK, C_DTOK, C_TTOK};
            for (size_t i = 0; i < sizeof inherit / sizeof *inherit; i++)
                if (v[inherit[i]].kind == PRS_NULL)
                    v[inherit[i]] = sched->vals[inherit[i]];
        }
    }
    prs_pending *row = prs_pending_new(v, C_N);
    if (sched && sched->kv_set) { /* its step's KV state came before this execution */
        for (int i = 0; i < 6; i++)
            row->vals[C_KV0 + i] = sched->vals[C_KV0 + i];
        row->kv_set = 1;
    }
    enqueue(b, m, st, row);
    prs_pending_free(sched);
}

static void free_step_types(prs_batch *b)
{
    for (int i = 0; i < b->nstep_types; i++)
        free(b->step_types[i].roots);
    free(b->step_types);
    b->step_types = NULL;
    b->nstep_types = 0;
}

static void finish_batch(void *state, prs_model *m)
{
    prs_batch *b = state;
    double none[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    for (int i = 0; i < b->nstores; i++) {
        batch_store *st = &b->st[i];
        spec_release(b, m, st, (prs_str){0});
        /* No KVCacheStatus after these rows: the process's last one. */
        prs_batch_kv(b, m, i, st->have_last_kv ? st->last_kv : none);
        free(st->spec_roots);
        free(st->spec_drafted);
        st->spec_roots = NULL;
        st->spec_drafted = NULL;
        while (st->sched_n)
            prs_pending_free(sched_pop(st));
    }
    free_step_types(b);
}

static void close_batch(void *state, prs_model *m)
{
    prs_table_close(&m->out, &((prs_batch *)state)->t);
}

/* What a run that never finished (abandoned, failed) still holds, too. */
static void free_batch(void *state)
{
    prs_batch *b = state;
    for (int i = 0; i < b->nstores; i++) {
        batch_store *st = &b->st[i];
        while (st->pend_head) {
            prs_pending *p = st->pend_head;
            st->pend_head = p->next;
            prs_pending_free(p);
        }
        prs_pending_free(st->spec_held);
        free(st->spec_roots);
        free(st->spec_drafted);
        while (st->sched_n)
            prs_pending_free(sched_pop(st));
        free(st->sched_fifo);
    }
    free(b->st);
    free_step_types(b);
    free(b);
}

static const prs_table *table_batch(const void *st) { return &((const prs_batch *)st)->t; }

const prs_report prs_report_batch = {
    .name = "batch",
    .kinds = PRS_KIND(K_BATCH) | PRS_KIND(K_EXEC) | PRS_KIND(K_SPEC),
    .open = open_batch,
    .record = record_batch,
    .finish = finish_batch,
    .close = close_batch,
    .table = table_batch,
    .free = free_batch,
};
