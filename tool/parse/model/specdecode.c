/* SPDX-License-Identifier: Apache-2.0 */
/*
 * specdecode.c — spec_decode.csv, the reference's per-request view of
 * speculative decoding: one row per request per `specDecoding` step,
 *
 *   rid, iter, prof_id, start_datetime, end_datetime, during_time(ms),
 *   spec_tokens, accepted_tokens, accepted_ratio, draft_model_time_ms
 *
 * (the reference's columns and order, ms_service_profiler/exporters/
 * exporter_batch.py). Written only when a store has `specDecoding` records.
 *
 * Where the figures come from (docs/parse.md, spec_decode.csv):
 *   spec_tokens      the entry's num_spec_output_tokens (else num_scheduled_tokens)
 *   accepted_tokens  spec_decode_accepted_by_req ({"rid": n, ...}) of the
 *                    next execution span (modelExec / modelRunnerExec /
 *                    Execute) of the same process, as batch.csv's
 *                    accepted_ratio reads it; empty when no execution
 *                    reported it (the reference writes 0)
 *   accepted_ratio   accepted / spec, 4 decimals; empty when either is unknown
 *   draft_model_time_ms  the step's duration (the reference's definition)
 *
 * Design: one report of reports.c's table (prs_report_specdec), its state
 * opaque to every other file; hooks open, record (K_SPEC and K_EXEC
 * records only), finish, close and free. Per
 * store one step is held from its `specDecoding` record until the next
 * execution of that store (which carries the acceptance) or the next
 * `specDecoding` (which releases it without), or the end of the parse; rows
 * are written when a step is released, so memory is one step per store.
 * Request names are resolved at release (prs_req_name), so a Link recorded
 * in between still names the request by its front-end id.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "model.h"
#include "xalloc.h"

typedef struct sd_entry {
    int root;      /* the request's id root when the step was seen */
    int iter;      /* -1 unknown */
    double spec;   /* drafted tokens; NAN unknown */
    double acc;    /* accepted tokens; NAN unknown */
} sd_entry;

typedef struct sd_step {
    int held;
    int64_t ts, dur;
    const char *prof_id; /* the store's, lives as long as the parse */
    sd_entry *e;
    int n, cap;
} sd_step;

typedef struct specdec {
    prs_table t;
    sd_step *step; /* one per store */
    int nstores;
} specdec;

static const prs_col cols[] = {
    {"rid", "TEXT"},         {"iter", "INTEGER"},           {"prof_id", "TEXT"},
    {"start_datetime", "TEXT"}, {"end_datetime", "TEXT"},   {"during_time(ms)", "REAL"},
    {"spec_tokens", "INTEGER"}, {"accepted_tokens", "INTEGER"}, {"accepted_ratio", "REAL"},
    {"draft_model_time_ms", "REAL"},
};

static void *open_specdec(prs_model *m)
{
    specdec *sd = prs_xcalloc(1, sizeof *sd);
    sd->step = prs_xcalloc((size_t)m->nstores + 1, sizeof *sd->step);
    sd->nstores = m->nstores;
    /* CSV only, as the reference writes it (no profiler.db table) */
    prs_table_init(&m->out, &sd->t, "spec_decode.csv", NULL, cols, (int)(sizeof cols / sizeof *cols), NULL);
    return sd;
}

static prs_val count_or_null(double x)
{
    return isnan(x) ? prs_v_null() : prs_v_int(llround(x));
}

static void release(specdec *sd, prs_model *m, sd_step *s)
{
    if (!s->held)
        return;
    s->held = 0;
    char sdt[40], edt[40];
    prs_fmt_datetime(s->ts, sdt);
    prs_fmt_datetime(s->ts + s->dur, edt);
    for (int i = 0; i < s->n; i++) {
        const sd_entry *e = &s->e[i];
        double ratio = !isnan(e->spec) && e->spec > 0 && !isnan(e->acc) ? round(e->acc / e->spec * 1e4) / 1e4 : NAN;
        prs_val v[10] = {
            prs_v_text(prs_req_name(m, prs_ids_root(m->ids, e->root)), -1),
            e->iter >= 0 ? prs_v_int(e->iter) : prs_v_null(),
            prs_v_text(s->prof_id, -1),
            prs_v_text(sdt, -1),
            prs_v_text(edt, -1),
            prs_v_ns(s->dur),
            count_or_null(e->spec),
            count_or_null(e->acc),
            prs_v_real(ratio),
            prs_v_ns(s->dur),
        };
        prs_table_row(&m->out, &sd->t, v);
    }
    s->n = 0;
}

typedef struct acc_ctx { prs_model *m; sd_step *s; } acc_ctx;

static void acc_member(prs_str key, double v, void *c)
{
    acc_ctx *a = c;
    int node = prs_ids_find_str(a->m->ids, key);
    if (node < 0 || isnan(v))
        return;
    int root = prs_ids_root(a->m->ids, node);
    for (int i = 0; i < a->s->n; i++)
        if (prs_ids_root(a->m->ids, a->s->e[i].root) == root)
            a->s->e[i].acc = v;
}

static void record_specdec(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    specdec *sd = st;
    int idx = r->store->index;
    if (idx < 0 || idx >= sd->nstores)
        return;
    sd_step *s = &sd->step[idx];
    const prs_args *a = &m->args;
    if (k == K_EXEC) {
        if (s->held && a->accepted.p) {
            acc_ctx c = {m, s};
            prs_json_each_number(a->accepted, acc_member, &c, &m->args.range_errors);
        }
        release(sd, m, s);
        return;
    }
    if (k != K_SPEC)
        return;
    release(sd, m, s); /* a step no execution reported on */
    int n = a->nrids < m->nroots ? a->nrids : m->nroots;
    if (n > s->cap) {
        s->e = prs_xrealloc(s->e, (size_t)n * sizeof *s->e);
        s->cap = n;
    }
    for (int i = 0; i < n; i++) {
        const prs_rident *ri = &a->rids[i];
        s->e[i] = (sd_entry){.root = m->roots[i], .iter = ri->iter,
                             .spec = !isnan(ri->spec_tokens) ? ri->spec_tokens : ri->sched_tokens, .acc = NAN};
    }
    s->n = n;
    s->held = n > 0;
    s->ts = r->ts;
    s->dur = r->dur;
    s->prof_id = r->store->prof_id;
}

static void finish_specdec(void *st, prs_model *m)
{
    specdec *sd = st;
    for (int i = 0; i < sd->nstores; i++)
        release(sd, m, &sd->step[i]);
}

static void close_specdec(void *st, prs_model *m)
{
    specdec *sd = st;
    prs_table_close(&m->out, &sd->t);
}

static void free_specdec(void *st)
{
    specdec *sd = st;
    for (int i = 0; i < sd->nstores; i++)
        free(sd->step[i].e);
    free(sd->step);
    free(sd);
}

const prs_report prs_report_specdec = {
    .name = "specdec",
    .kinds = PRS_KIND(K_SPEC) | PRS_KIND(K_EXEC),
    .open = open_specdec,
    .record = record_specdec,
    .finish = finish_specdec,
    .close = close_specdec,
    .free = free_specdec,
};
