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

#define MAX_PENDING 4096
#define SCHED_FIFO 64
#define STEP_TYPES 64 /* schedule steps remembered for their forwards */

/* The reference's column order; ours (accepted_ratio*) after it. */
enum { C_NAME, C_RES, C_START_DT, C_END_DT, C_DUR, C_TYPE, C_PROF, C_SIZE, C_KV0,
       C_PSIZE = C_KV0 + 6, C_DSIZE, C_PTOK, C_DTOK, C_TTOK, C_DP, C_START, C_END, C_ACC, C_ACCPOS, C_N };

static const prs_col cols[C_N] = {
    {"name", "TEXT"}, {"res_list", "TEXT"}, {"start_datetime", "TEXT"}, {"end_datetime", "TEXT"},
    {"during_time(ms)", "REAL"}, {"batch_type", "TEXT"}, {"prof_id", "TEXT"}, {"batch_size", "INTEGER"},
    {"total_blocks", "INTEGER"}, {"used_blocks", "INTEGER"},
    {"free_blocks", "INTEGER"}, {"blocks_allocated", "INTEGER"}, {"blocks_freed", "INTEGER"},
    {"kvcache_usage_rate", "REAL"},
    {"prefill_batch_size", "INTEGER"}, {"decode_batch_size", "INTEGER"},
    {"prefill_scheduled_tokens", "INTEGER"}, {"decode_scheduled_tokens", "INTEGER"},
    {"total_scheduled_tokens", "INTEGER"}, {"dp_rank", "INTEGER"}, {"start_time(ms)", "REAL"},
    {"end_time(ms)", "REAL"}, {"accepted_ratio", "REAL"}, {"accepted_ratio_per_pos", "TEXT"},
};

void prs_batch_init(prs_model *m)
{
    prs_table_init(&m->out, &m->t_batch, "batch.csv", "batch", cols, C_N,
                   "no batch records (domain BatchSchedule/Execute: batchFrameworkProcessing, "
                   "modelExec) were found");
}

static prs_val num_or_null(double d)
{
    return isnan(d) ? prs_v_null() : prs_v_int(llround(d));
}

static void emit(prs_model *m, prs_pending *p)
{
    prs_table_row(&m->out, &m->t_batch, p->vals);
    prs_pending_free(p);
}

static void enqueue(prs_model *m, prs_store_state *st, prs_pending *p)
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
        emit(m, h);
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
void prs_batch_kv(prs_model *m, int store, const double kv[6])
{
    prs_store_state *st = &m->st[store];
    while (st->pend_head) {
        prs_pending *p = st->pend_head;
        st->pend_head = p->next;
        if (!p->kv_set)
            set_kv(p, kv);
        emit(m, p);
    }
    st->pend_tail = NULL;
    st->npend = 0;
    for (int i = 0; i < st->sched_n; i++) {
        prs_pending *p = (prs_pending *)st->sched_fifo[(st->sched_head + i) % SCHED_FIFO];
        if (!p->kv_set)
            set_kv(p, kv);
    }
    memcpy(st->last_kv, kv, sizeof st->last_kv);
    st->have_last_kv = 1;
}

static void sched_push(prs_store_state *st, const prs_val *v)
{
    if (!st->sched_fifo)
        st->sched_fifo = calloc(SCHED_FIFO, sizeof *st->sched_fifo);
    if (st->sched_n == SCHED_FIFO) { /* executions never came: forget the oldest */
        prs_pending_free((prs_pending *)st->sched_fifo[st->sched_head]);
        st->sched_head = (st->sched_head + 1) % SCHED_FIFO;
        st->sched_n--;
    }
    st->sched_fifo[(st->sched_head + st->sched_n) % SCHED_FIFO] = (char *)prs_pending_new(v, C_N);
    st->sched_n++;
}

static prs_pending *sched_pop(prs_store_state *st)
{
    if (!st->sched_n)
        return NULL;
    prs_pending *p = (prs_pending *)st->sched_fifo[st->sched_head];
    st->sched_head = (st->sched_head + 1) % SCHED_FIFO;
    st->sched_n--;
    return p;
}

typedef struct acc_ctx { prs_model *m; prs_store_state *st; double *acc; } acc_ctx;

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
static void spec_release(prs_model *m, prs_store_state *st, prs_str accepted)
{
    prs_pending *p = st->spec_held;
    if (!p)
        return;
    st->spec_held = NULL;
    if (accepted.p && st->spec_n) {
        double *acc = malloc((size_t)st->spec_n * sizeof *acc);
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
            /* position k: requests with >= k accepted among those with >= k drafted */
            size_t cap = (size_t)maxd * 16 + 8, o = 0;
            char *txt = malloc(cap);
            txt[o++] = '[';
            for (int k = 1; k <= maxd && k <= 64; k++) {
                int num = 0, den = 0;
                for (int i = 0; i < st->spec_n; i++) {
                    if (isnan(acc[i]) || isnan(st->spec_drafted[i]) || st->spec_drafted[i] < k)
                        continue;
                    den++;
                    num += acc[i] >= k;
                }
                o += (size_t)snprintf(txt + o, cap - o, "%s%.4g", k > 1 ? "," : "", den ? (double)num / den : 0.0);
            }
            txt[o++] = ']';
            txt[o] = 0;
            p->vals[C_ACCPOS] = prs_v_text(txt, (int)o); /* owned by the row now */
        }
        free(acc);
    }
    enqueue(m, st, p);
    st->spec_n = 0;
}

/* Keeps the schedule step's request set and type for the forwards that
 * run it (in this or another process). */
static void remember_step_type(prs_model *m, const prs_val *type)
{
    if (type->kind != PRS_TEXT || !m->nroots)
        return;
    if (!m->step_types)
        m->step_types = calloc(STEP_TYPES, sizeof *m->step_types);
    struct prs_step_type *t = &m->step_types[m->step_types_next];
    m->step_types_next = (m->step_types_next + 1) % STEP_TYPES;
    if (m->nstep_types < STEP_TYPES)
        m->nstep_types++;
    t->roots = realloc(t->roots, (size_t)m->nroots * sizeof *t->roots);
    memcpy(t->roots, m->roots, (size_t)m->nroots * sizeof *t->roots);
    t->nroots = m->nroots;
    int n = type->n < (int)sizeof t->type - 1 ? type->n : (int)sizeof t->type - 1;
    memcpy(t->type, type->s, (size_t)n);
    t->type[n] = 0;
}

const char *prs_batch_step_type(prs_model *m)
{
    for (int i = 1; i <= m->nstep_types; i++) { /* newest first */
        struct prs_step_type *t = &m->step_types[(m->step_types_next - i + STEP_TYPES) % STEP_TYPES];
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

void prs_batch_record(prs_model *m, const prs_rec *r, enum prs_kind k)
{
    const prs_args *a = &m->args;
    prs_store_state *st = &m->st[r->store->index];
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
        spec_release(m, st, (prs_str){0});
        st->spec_roots = realloc(st->spec_roots, (size_t)(a->nrids + 1) * sizeof *st->spec_roots);
        st->spec_drafted = realloc(st->spec_drafted, (size_t)(a->nrids + 1) * sizeof *st->spec_drafted);
        st->spec_n = 0;
        for (int i = 0; i < a->nrids && i < m->nroots; i++) {
            st->spec_roots[st->spec_n] = m->roots[i];
            st->spec_drafted[st->spec_n++] = a->rids[i].spec_tokens;
        }
        st->spec_held = prs_pending_new(v, C_N);
        return;
    }
    if (k == K_BATCH) {
        remember_step_type(m, &v[C_TYPE]);
        sched_push(st, v);
    } else if (k == K_EXEC) {
        spec_release(m, st, a->accepted);
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
    enqueue(m, st, row);
    prs_pending_free(sched);
}

void prs_batch_finish(prs_model *m)
{
    double none[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    for (int i = 0; i < m->nstores; i++) {
        spec_release(m, &m->st[i], (prs_str){0});
        /* No KVCacheStatus after these rows: the process's last one. */
        prs_batch_kv(m, i, m->st[i].have_last_kv ? m->st[i].last_kv : none);
        prs_store_state *st = &m->st[i];
        free(st->spec_roots);
        free(st->spec_drafted);
        st->spec_roots = NULL;
        st->spec_drafted = NULL;
        while (st->sched_n)
            prs_pending_free(sched_pop(st));
    }
    for (int i = 0; i < m->nstep_types; i++)
        free(m->step_types[i].roots);
    free(m->step_types);
    m->step_types = NULL;
    m->nstep_types = 0;
}
