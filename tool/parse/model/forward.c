/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forward.c — forward.csv: one row per `forward` span (the device-side
 * step). bubble_time is the idle gap until the next forward of the same
 * prof_id, so each row is held until that next forward starts (one row per
 * process held at a time); forward_iter counts from 1 per prof_id;
 * relative_start_time counts from the first forward of the host. batch_type
 * is the record's own, else its entries' (type, else iter), else the type
 * of the schedule step that ran the same requests (batch.c), else empty.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "model.h"
#include "repcols.h"
#include "xalloc.h"

enum { F_NAME, F_REL, F_START_DT, F_END_DT, F_DUR, F_BUBBLE, F_SIZE, F_TYPE, F_ITER, F_DP, F_PROF,
       F_HOST, F_START, F_END, F_N };

static const prs_col cols[F_N] = {
    {PRS_FW_NAME, "TEXT"}, {PRS_FW_REL_MS, "REAL"}, {PRS_FW_START_DT, "TEXT"},
    {PRS_FW_END_DT, "TEXT"}, {PRS_FW_DUR_MS, "REAL"}, {PRS_FW_BUBBLE_MS, "REAL"},
    {PRS_FW_SIZE, "INTEGER"}, {PRS_FW_TYPE, "TEXT"}, {PRS_FW_ITER, "INTEGER"}, {PRS_FW_DP_RANK, "INTEGER"},
    {PRS_FW_PROF_ID, "TEXT"}, {PRS_FW_HOSTNAME, "TEXT"}, {PRS_FW_START_MS, "REAL"}, {PRS_FW_END_MS, "REAL"},
};

/* Per process (store): the last row, waiting for the next forward's start. */
typedef struct fwd_store {
    prs_pending *held;
    long long iter;
} fwd_store;

/* The report's state (prs_report_forward). */
typedef struct forward {
    prs_table t;
    fwd_store *st;         /* by store index */
    int nstores;
    char **hosts;          /* the first forward per host (relative_start_time) */
    int64_t *host_first;
    int nhosts;
    const prs_batch *batch; /* for the type of the step a forward runs (batch.c) */
} forward;

static void *open_forward(prs_model *m)
{
    forward *f = prs_xcalloc(1, sizeof *f);
    prs_table_init(&m->out, &f->t, "forward.csv", PRS_T_FORWARD, cols, F_N,
                   "no forward records (domain ModelExecute: forward) were found");
    f->nstores = m->nstores;
    f->st = prs_xcalloc((size_t)m->nstores + 1, sizeof *f->st);
    f->batch = prs_model_state(m, &prs_report_batch); /* before this one in the table */
    return f;
}

static int64_t host_first(forward *f, const char *host, int64_t ts)
{
    for (int i = 0; i < f->nhosts; i++)
        if (!strcmp(f->hosts[i], host))
            return f->host_first[i];
    f->hosts = prs_xrealloc(f->hosts, (size_t)(f->nhosts + 1) * sizeof *f->hosts);
    f->host_first = prs_xrealloc(f->host_first, (size_t)(f->nhosts + 1) * sizeof *f->host_first);
    f->hosts[f->nhosts] = prs_xstrdup(host);
    f->host_first[f->nhosts] = ts;
    f->nhosts++;
    return ts;
}

static void release(forward *f, prs_model *m, fwd_store *st, int64_t next_start)
{
    prs_pending *p = st->held;
    if (!p)
        return;
    if (next_start >= 0)
        p->vals[F_BUBBLE] = prs_v_ns(next_start - p->end);
    prs_table_row(&m->out, &f->t, p->vals);
    prs_pending_free(p);
    st->held = NULL;
}

static void record_forward(void *state, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    (void)k;
    forward *f = state;
    const prs_args *a = &m->args;
    fwd_store *st = &f->st[r->store->index];
    release(f, m, st, r->ts);
    prs_val v[F_N];
    for (int i = 0; i < F_N; i++)
        v[i] = prs_v_null();
    char sdt[40], edt[40], type_buf[64];
    prs_fmt_datetime(r->ts, sdt);
    prs_fmt_datetime(r->ts + r->dur, edt);
    int64_t first = host_first(f, r->store->hostname, r->ts);
    v[F_NAME] = prs_v_text(r->name, -1);
    v[F_REL] = prs_v_ns(r->ts - first);
    v[F_START_DT] = prs_v_text(sdt, -1);
    v[F_END_DT] = prs_v_text(edt, -1);
    v[F_DUR] = prs_v_ns(r->dur);
    if (a->rid_kind)
        v[F_SIZE] = prs_v_int(m->nroots);
    else if (!isnan(a->batch_size))
        v[F_SIZE] = prs_v_int(llround(a->batch_size));
    if (a->batch_type.p) {
        prs_str_copy(a->batch_type, type_buf, sizeof type_buf);
        v[F_TYPE] = prs_v_text(type_buf, -1);
    } else if (a->rid_kind == 2 && a->nrids) {
        /* From the entries when each says what it is; else from the schedule
         * step this forward runs (same requests); else unknown: a missing
         * iter is never taken for a decode. */
        int pre = 0, dec = 0, told = 1;
        for (int i = 0; i < a->nrids && told; i++) {
            const prs_rident *e = &a->rids[i];
            told = e->type >= 0 || e->iter >= 0;
            int is_pre = e->type >= 0 ? e->type == 0 : e->iter == 0;
            pre += is_pre;
            dec += !is_pre;
        }
        const char *step = told ? NULL : prs_batch_step_type(f->batch, m);
        if (told)
            v[F_TYPE] = prs_v_text(pre && dec ? "Prefill, Decode" : pre ? "Prefill" : "Decode", -1);
        else if (step)
            v[F_TYPE] = prs_v_text(step, -1);
    }
    v[F_ITER] = prs_v_int(++st->iter);
    v[F_DP] = r->store->dp_rank >= 0 ? prs_v_int(r->store->dp_rank) : prs_v_null();
    v[F_PROF] = prs_v_text(r->store->prof_id, -1);
    v[F_HOST] = prs_v_text(r->store->hostname, -1);
    v[F_START] = prs_v_ns(r->ts);
    v[F_END] = prs_v_ns(r->ts + r->dur);
    st->held = prs_pending_new(v, F_N);
    st->held->end = r->ts + r->dur;
}

static void finish_forward(void *state, prs_model *m)
{
    forward *f = state;
    for (int i = 0; i < f->nstores; i++)
        release(f, m, &f->st[i], -1);
}

static void close_forward(void *state, prs_model *m)
{
    prs_table_close(&m->out, &((forward *)state)->t);
}

static void free_forward(void *state)
{
    forward *f = state;
    for (int i = 0; i < f->nstores; i++)
        prs_pending_free(f->st[i].held);
    for (int i = 0; i < f->nhosts; i++)
        free(f->hosts[i]);
    free(f->hosts);
    free(f->host_first);
    free(f->st);
    free(f);
}

static const prs_table *table_forward(const void *st) { return &((const forward *)st)->t; }

const prs_report prs_report_forward = {
    .name = "forward",
    .kinds = PRS_KIND(K_FORWARD),
    .open = open_forward,
    .record = record_forward,
    .finish = finish_forward,
    .close = close_forward,
    .table = table_forward,
    .free = free_forward,
};
