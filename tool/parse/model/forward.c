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

enum { F_NAME, F_REL, F_START_DT, F_END_DT, F_DUR, F_BUBBLE, F_SIZE, F_TYPE, F_ITER, F_DP, F_PROF,
       F_HOST, F_START, F_END, F_N };

static const prs_col cols[F_N] = {
    {"name", "TEXT"}, {"relative_start_time(ms)", "REAL"}, {"start_datetime", "TEXT"},
    {"end_datetime", "TEXT"}, {"during_time(ms)", "REAL"}, {"bubble_time(ms)", "REAL"},
    {"batch_size", "INTEGER"}, {"batch_type", "TEXT"}, {"forward_iter", "INTEGER"}, {"dp_rank", "INTEGER"},
    {"prof_id", "TEXT"}, {"hostname", "TEXT"}, {"start_time(ms)", "REAL"}, {"end_time(ms)", "REAL"},
};

void prs_forward_init(prs_model *m)
{
    prs_table_init(&m->out, &m->t_forward, "forward.csv", "forward", cols, F_N,
                   "no forward records (domain ModelExecute: forward) were found");
}

static int64_t host_first(prs_model *m, const char *host, int64_t ts)
{
    for (int i = 0; i < m->nfwd_hosts; i++)
        if (!strcmp(m->fwd_hosts[i], host))
            return m->fwd_host_first[i];
    m->fwd_hosts = realloc(m->fwd_hosts, (size_t)(m->nfwd_hosts + 1) * sizeof *m->fwd_hosts);
    m->fwd_host_first = realloc(m->fwd_host_first, (size_t)(m->nfwd_hosts + 1) * sizeof *m->fwd_host_first);
    m->fwd_hosts[m->nfwd_hosts] = strdup(host);
    m->fwd_host_first[m->nfwd_hosts] = ts;
    m->nfwd_hosts++;
    return ts;
}

static void release(prs_model *m, prs_store_state *st, int64_t next_start)
{
    prs_pending *p = st->fwd_held;
    if (!p)
        return;
    if (next_start >= 0)
        p->vals[F_BUBBLE] = prs_v_ns(next_start - p->end);
    prs_table_row(&m->out, &m->t_forward, p->vals);
    prs_pending_free(p);
    st->fwd_held = NULL;
}

void prs_forward_record(prs_model *m, const prs_rec *r)
{
    const prs_args *a = &m->args;
    prs_store_state *st = &m->st[r->store->index];
    release(m, st, r->ts);
    prs_val v[F_N];
    for (int i = 0; i < F_N; i++)
        v[i] = prs_v_null();
    char sdt[40], edt[40], type_buf[64];
    prs_fmt_datetime(r->ts, sdt);
    prs_fmt_datetime(r->ts + r->dur, edt);
    int64_t first = host_first(m, r->store->hostname, r->ts);
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
        const char *step = told ? NULL : prs_batch_step_type(m);
        if (told)
            v[F_TYPE] = prs_v_text(pre && dec ? "Prefill, Decode" : pre ? "Prefill" : "Decode", -1);
        else if (step)
            v[F_TYPE] = prs_v_text(step, -1);
    }
    v[F_ITER] = prs_v_int(++st->fwd_iter);
    v[F_DP] = r->store->dp_rank >= 0 ? prs_v_int(r->store->dp_rank) : prs_v_null();
    v[F_PROF] = prs_v_text(r->store->prof_id, -1);
    v[F_HOST] = prs_v_text(r->store->hostname, -1);
    v[F_START] = prs_v_ns(r->ts);
    v[F_END] = prs_v_ns(r->ts + r->dur);
    st->fwd_held = prs_pending_new(v, F_N);
    st->fwd_held->end = r->ts + r->dur;
}

void prs_forward_finish(prs_model *m)
{
    for (int i = 0; i < m->nstores; i++)
        release(m, &m->st[i], -1);
}
