/* SPDX-License-Identifier: Apache-2.0 */
/*
 * refsum.c — the reference's three summaries (request_summary.csv,
 * batch_summary.csv, service_summary.csv: same file names, columns and
 * metric names), over complete requests only, as the reference keeps only
 * requests with both an arrival and a response.
 *
 * Where the reference's figure is not what its name says, the name is kept
 * and the figure is ours (docs/compat.md):
 *   first_token_latency   arrival to first token (the reference sums the
 *                         durations of the request's iteration-0 steps:
 *                         prefill execution only, no queue)
 *   subsequent_token_latency  per-request TPOT (the reference pools the
 *                         gaps between consecutive token steps)
 *   batch rows            one per step (the reference merges every step
 *                         with the same request list and type into one row,
 *                         summing their times); steps with both prefill and
 *                         decode entries get their own rows (mixed_*),
 *                         added only when there are such steps
 */
#include <math.h>
#include <stdlib.h>

#include "profile.h"

static json_t *row(const char *metric, double *v, long long n)
{
    sa_pct s = sa_pct_of(v, n);
    json_t *o = json_object();
    json_object_set_new(o, "metric", json_string(metric));
    json_object_set_new(o, "average", sa_num(s.mean));
    json_object_set_new(o, "max", sa_num(s.max));
    json_object_set_new(o, "min", sa_num(s.min));
    json_object_set_new(o, "p50", sa_num(s.p50));
    json_object_set_new(o, "p90", sa_num(s.p90));
    json_object_set_new(o, "p99", sa_num(s.p99));
    return o;
}

static double exec_ms(const sa_profile *p, const sa_req *r)
{
    int i = sa_req_info(p, r);
    if (i < 0)
        return NAN;
    if (p->steps[SA_SRC_EXEC].n)
        return p->rinfo[i].exec_ms;
    return p->steps[SA_SRC_BATCH].n ? p->rinfo[i].sched_ms : NAN;
}

json_t *sa_refsum_request(const sa_profile *p)
{
    enum { TTFT, TPOT, TOTAL, EXEC, WAIT, IN, OUT, N };
    static const char *const names[N] = {"first_token_latency (ms)", "subsequent_token_latency (ms)",
                                         "total_time (ms)", "exec_time (ms)", "waiting_time (ms)",
                                         "input_token_num", "generated_token_num"};
    double *v[N];
    for (int k = 0; k < N; k++)
        v[k] = malloc((size_t)(p->nreq + 1) * sizeof(double));
    long long n = 0;
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        if (!r->complete)
            continue;
        v[TTFT][n] = r->ttft;
        v[TPOT][n] = r->tpot;
        v[TOTAL][n] = r->e2e;
        v[EXEC][n] = exec_ms(p, r);
        v[WAIT][n] = isnan(r->queue) ? 0 : r->queue;
        v[IN][n] = r->in_tok;
        v[OUT][n] = r->out_tok;
        n++;
    }
    json_t *a = json_array();
    for (int k = 0; k < N; k++) {
        json_array_append_new(a, row(names[k], v[k], n));
        free(v[k]);
    }
    return a;
}

json_t *sa_refsum_batch(const sa_profile *p)
{
    const sa_steps *ss = &p->steps[p->src];
    double *bs = malloc((size_t)(ss->n + 1) * sizeof *bs), *ms = malloc((size_t)(ss->n + 1) * sizeof *ms);
    static const char *const names[SA_NKINDS][2] = {{"prefill_batch_num", "prefill_exec_time (ms)"},
                                                    {"decode_batch_num", "decode_exec_time (ms)"},
                                                    {"mixed_batch_num", "mixed_exec_time (ms)"}};
    json_t *a = json_array();
    json_t *times[SA_NKINDS] = {0};
    for (int kind = 0; kind < SA_NKINDS; kind++) {
        long long n = 0;
        for (long long i = 0; i < ss->n; i++)
            if (ss->v[i].kind == kind) {
                bs[n] = ss->v[i].bs;
                ms[n++] = (double)(ss->v[i].end - ss->v[i].start) / 1e6;
            }
        if (kind == SA_MIXED && n == 0)
            break;
        /* the reference's order: both batch sizes, then both times */
        json_array_append_new(a, row(names[kind][0], bs, n));
        times[kind] = row(names[kind][1], ms, n);
    }
    for (int kind = 0; kind < SA_NKINDS; kind++)
        if (times[kind])
            json_array_append_new(a, times[kind]);
    free(bs);
    free(ms);
    return a;
}

static json_t *vrow(const char *metric, double v)
{
    json_t *o = json_object();
    json_object_set_new(o, "metric", json_string(metric));
    json_object_set_new(o, "value", sa_num(v));
    return o;
}

json_t *sa_refsum_service(const sa_profile *p)
{
    double in = 0, out = 0;
    int64_t first = 0, last = 0;
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        if (!r->complete)
            continue;
        if (!isnan(r->in_tok))
            in += r->in_tok;
        if (!isnan(r->out_tok))
            out += r->out_tok;
        if (!first || r->start_ns < first)
            first = r->start_ns;
        if (r->end_ns > last)
            last = r->end_ns;
    }
    double secs = (double)(last - first) / 1e9;
    json_t *a = json_array();
    json_array_append_new(a, vrow("total_input_token_num", in));
    json_array_append_new(a, vrow("total_generated_token_num", out));
    json_array_append_new(a, vrow("generate_token_speed (token/s)", secs > 0 ? out / secs : 0));
    json_array_append_new(a, vrow("generate_all_token_speed (token/s)", secs > 0 ? (in + out) / secs : 0));
    return a;
}
