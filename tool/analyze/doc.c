/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doc.c — the analyze JSON document (docs/analyze.md, "The JSON
 * document"): headline, reference summaries, thresholds, findings,
 * windows, TTFT breakdown, slowest requests and span statistics. Keys are
 * only ever added; see the stability rule in the doc.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

static const char *const kind_names[SA_NKINDS] = {"prefill", "decode", "mixed"};

static json_t *pct_of_requests(const sa_profile *p, int field)
{
    double *v = malloc((size_t)(p->nreq + 1) * sizeof *v);
    long long n = 0;
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        if (!r->complete)
            continue;
        v[n++] = field == 0 ? r->ttft : field == 1 ? r->tpot : field == 2 ? r->e2e : isnan(r->queue) ? 0 : r->queue;
    }
    sa_pct s = sa_pct_of(v, n);
    free(v);
    return sa_pct_json(&s);
}

static json_t *stepagg_json(const sa_stepagg *g)
{
    json_t *o = json_object();
    json_object_set_new(o, "count", json_integer(g->count));
    json_object_set_new(o, "batch_size_mean", sa_num(g->bs_mean));
    json_object_set_new(o, "tokens_mean", sa_num(g->tok_mean));
    json_object_set_new(o, "step_ms_mean", sa_num(g->ms_mean));
    json_object_set_new(o, "step_ms_p90", sa_num(g->ms_p90));
    return o;
}

static json_t *run_json(const sa_profile *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "start_ns", json_integer(p->t0));
    json_object_set_new(o, "end_ns", json_integer(p->t1));
    json_object_set_new(o, "duration_s", sa_num((double)(p->t1 - p->t0) / 1e9));
    json_object_set_new(o, "records", p->records >= 0 ? json_integer(p->records) : json_null());
    json_t *a = json_array();
    for (int q = 0; q < p->nproc; q++) {
        long long steps = 0;
        for (long long i = 0; i < p->steps[p->src].n; i++)
            steps += p->steps[p->src].v[i].proc == q;
        json_t *x = json_object();
        json_object_set_new(x, "prof_id", json_string(p->proc[q].prof_id));
        json_object_set_new(x, "hostname", json_string(p->proc[q].hostname));
        json_object_set_new(x, "dp_rank", p->proc[q].dp_rank >= 0 ? json_integer(p->proc[q].dp_rank) : json_null());
        json_object_set_new(x, "steps", json_integer(steps));
        json_array_append_new(a, x);
    }
    json_object_set_new(o, "processes", a);
    return o;
}

static json_t *headline_json(const sa_profile *p, const sa_series *s, const sa_findings *f)
{
    long long complete = 0, pre = 0;
    double in = 0, out = 0;
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        pre += r->preempted;
        if (!r->complete)
            continue;
        complete++;
        in += isnan(r->in_tok) ? 0 : r->in_tok;
        out += isnan(r->out_tok) ? 0 : r->out_tok;
    }
    double secs = (double)(p->t1 - p->t0) / 1e9;
    json_t *o = json_object();
    json_object_set_new(o, "requests", json_integer(p->nreq));
    json_object_set_new(o, "complete", json_integer(complete));
    json_object_set_new(o, "incomplete", json_integer(p->nreq - complete));
    json_object_set_new(o, "throughput_rps", sa_num(secs > 0 ? (double)complete / secs : 0));
    json_object_set_new(o, "input_tokens_per_s", sa_num(secs > 0 ? in / secs : 0));
    json_object_set_new(o, "output_tokens_per_s", sa_num(secs > 0 ? out / secs : 0));
    json_object_set_new(o, "ttft_ms", pct_of_requests(p, 0));
    json_object_set_new(o, "tpot_ms", pct_of_requests(p, 1));
    json_object_set_new(o, "e2e_ms", pct_of_requests(p, 2));
    json_object_set_new(o, "queue_ms", pct_of_requests(p, 3));
    const sa_steps *ss = &p->steps[p->src];
    double bs = 0;
    for (long long i = 0; i < ss->n; i++)
        bs += ss->v[i].bs;
    json_object_set_new(o, "batch_size_mean", ss->n ? sa_num(bs / (double)ss->n) : json_null());
    double kvmax = NAN, kvsum = 0;
    for (long long i = 0; i < p->nkv; i++) {
        kvsum += p->kv[i].usage;
        if (isnan(kvmax) || p->kv[i].usage > kvmax)
            kvmax = p->kv[i].usage;
    }
    json_object_set_new(o, "kv_usage_peak", sa_num(kvmax));
    json_object_set_new(o, "kv_usage_mean", p->nkv ? sa_num(kvsum / (double)p->nkv) : json_null());
    json_object_set_new(o, "preemptions", json_integer(pre));
    json_object_set_new(o, "busy_frac", sa_num(s->budget.busy));
    json_object_set_new(o, "stalled_frac", sa_num(s->budget.stalled));
    json_object_set_new(o, "idle_frac", sa_num(s->budget.idle));
    json_object_set_new(o, "verdict", json_string(f->verdict));
    json_object_set_new(o, "top_finding",
                        f->n && f->f[0].bottleneck ? json_string(f->f[0].id) : json_null());
    return o;
}

static json_t *findings_json(const sa_findings *fs)
{
    json_t *a = json_array();
    for (int i = 0; i < fs->n; i++) {
        const sa_finding *f = &fs->f[i];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(f->id));
        json_object_set_new(o, "rank", json_integer(i + 1));
        json_object_set_new(o, "bottleneck", json_boolean(f->bottleneck));
        json_object_set_new(o, "score", sa_num(f->score));
        json_object_set_new(o, "title", json_string(f->title));
        json_object_set_new(o, "figure", json_pack("{s:s, s:o, s:s}", "name", f->fig_name, "value",
                                                   sa_num(f->fig_value), "unit", f->fig_unit));
        json_object_set_new(o, "threshold", json_pack("{s:s, s:o, s:s}", "name", f->thr_name, "value",
                                                      sa_num(f->thr_value), "op", f->thr_op));
        json_object_set_new(o, "evidence", json_string(f->evidence));
        json_t *w = json_array();
        for (int k = 0; k < f->nwindows; k++)
            json_array_append_new(w, json_integer(f->windows[k]));
        json_object_set_new(o, "windows", w);
        json_t *ex = json_array();
        for (int k = 0; k < f->nex; k++)
            json_array_append_new(ex, json_pack("{s:o, s:I, s:s}", "rid",
                                                f->ex[k].rid[0] ? json_string(f->ex[k].rid) : json_null(),
                                                "ts_ns", (json_int_t)f->ex[k].ts, "what", f->ex[k].what));
        json_object_set_new(o, "examples", ex);
        json_object_set_new(o, "knob", json_string(f->knob));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *windows_json(const sa_profile *p, const sa_series *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "count", json_integer(s->count));
    json_object_set_new(o, "width_s", sa_num(s->width_s));
    json_object_set_new(o, "start_ns", json_integer(s->t0));
    json_t *rows = json_array();
    static const char *const scopes[] = {"all", "process", "dp_rank"};
    for (int i = 0; i < s->nw; i++) {
        const sa_window *w = &s->w[i];
        double secs = (double)(w->end - w->start) / 1e9;
        json_t *r = json_object();
        json_object_set_new(r, "scope", json_string(scopes[w->scope]));
        json_object_set_new(r, "prof_id", w->scope == 1 ? json_string(p->proc[w->who].prof_id) : json_null());
        json_object_set_new(r, "dp_rank", w->scope == 2 ? json_integer(w->who)
                                          : w->scope == 1 && p->proc[w->who].dp_rank >= 0
                                              ? json_integer(p->proc[w->who].dp_rank) : json_null());
        json_object_set_new(r, "index", json_integer(w->index));
        json_object_set_new(r, "start_ns", json_integer(w->start));
        json_object_set_new(r, "end_ns", json_integer(w->end));
        json_object_set_new(r, "finished", json_integer(w->finished));
        json_object_set_new(r, "throughput_rps", sa_num(secs > 0 ? (double)w->finished / secs : 0));
        json_object_set_new(r, "output_tokens_per_s", sa_num(secs > 0 ? w->out_tokens / secs : 0));
        json_object_set_new(r, "ttft_ms", sa_pct_json(&w->ttft));
        json_object_set_new(r, "tpot_ms", sa_pct_json(&w->tpot));
        json_object_set_new(r, "e2e_ms", sa_pct_json(&w->e2e));
        json_object_set_new(r, "queue_ms", sa_pct_json(&w->queue));
        json_t *st = json_object();
        for (int k = 0; k < SA_NKINDS; k++)
            json_object_set_new(st, kind_names[k], stepagg_json(&w->steps[k]));
        json_object_set_new(r, "steps", st);
        json_object_set_new(r, "kv_usage_mean", sa_num(w->kv_mean));
        json_object_set_new(r, "kv_usage_max", sa_num(w->kv_max));
        json_object_set_new(r, "preemptions", json_integer(w->preemptions));
        json_object_set_new(r, "busy_frac", sa_num(w->busy));
        json_object_set_new(r, "stalled_frac", sa_num(w->stalled));
        json_object_set_new(r, "idle_frac", sa_num(w->idle));
        json_array_append_new(rows, r);
    }
    json_object_set_new(o, "rows", rows);
    return o;
}

static int cmp_double_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static json_t *ttft_json(const sa_profile *p, const sa_opts *o)
{
    long long n = 0;
    double *v[5];
    for (int k = 0; k < 5; k++)
        v[k] = malloc((size_t)(p->nreq + 1) * sizeof(double));
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        if (!r->complete || isnan(r->ttft))
            continue;
        sa_ttft_parts t = sa_ttft_split(p, r);
        v[0][n] = r->ttft;
        v[1][n] = t.queue;
        v[2][n] = t.schedule;
        v[3][n] = t.prefill;
        v[4][n] = t.first_decode_wait;
        n++;
    }
    /* the TTFT of the max_requests-th slowest: rows below it are left out */
    double cut = -INFINITY;
    int truncated = o->max_requests >= 0 && n > o->max_requests;
    if (truncated) {
        double *c = malloc((size_t)n * sizeof *c);
        memcpy(c, v[0], (size_t)n * sizeof *c);
        qsort(c, (size_t)n, sizeof *c, cmp_double_desc);
        cut = o->max_requests > 0 ? c[o->max_requests - 1] : INFINITY;
        free(c);
    }
    json_t *rows = json_array();
    long long kept = 0;
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        if (!r->complete || isnan(r->ttft) || r->ttft < cut || (truncated && kept >= o->max_requests))
            continue;
        sa_ttft_parts t = sa_ttft_split(p, r);
        json_t *x = json_object();
        json_object_set_new(x, "rid", json_string(r->rid));
        json_object_set_new(x, "start_ns", json_integer(r->start_ns));
        json_object_set_new(x, "ttft_ms", sa_num(r->ttft));
        json_object_set_new(x, "queue_ms", sa_num(t.queue));
        json_object_set_new(x, "schedule_ms", sa_num(t.schedule));
        json_object_set_new(x, "prefill_ms", sa_num(t.prefill));
        json_object_set_new(x, "first_decode_wait_ms", sa_num(t.first_decode_wait));
        json_array_append_new(rows, x);
        kept++;
    }
    static const char *const names[5] = {"ttft_ms", "queue_ms", "schedule_ms", "prefill_ms",
                                         "first_decode_wait_ms"};
    json_t *pc = json_object();
    for (int k = 0; k < 5; k++) {
        sa_pct s = sa_pct_of(v[k], n);
        json_object_set_new(pc, names[k], sa_pct_json(&s));
        free(v[k]);
    }
    json_t *out = json_object();
    json_object_set_new(out, "percentiles", pc);
    json_object_set_new(out, "truncated", json_boolean(truncated));
    json_object_set_new(out, "requests", rows);
    return out;
}

static json_t *slowest_json(const sa_profile *p)
{
    long long best[10];
    int nb = 0;
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        if (!r->complete)
            continue;
        int k;
        if (nb < 10)
            k = nb++;
        else if (r->e2e > p->req[best[9]].e2e)
            k = 9;
        else
            continue;
        while (k > 0 && p->req[best[k - 1]].e2e < r->e2e) {
            best[k] = best[k - 1];
            k--;
        }
        best[k] = i;
    }
    json_t *a = json_array();
    for (int k = 0; k < nb; k++) {
        const sa_req *r = &p->req[best[k]];
        sa_ttft_parts t = sa_ttft_split(p, r);
        const char *names[5] = {"queue", "schedule", "prefill", "first_decode_wait", "decode"};
        double parts[5] = {t.queue, t.schedule, t.prefill, t.first_decode_wait, r->decode};
        int dom = 0;
        for (int j = 1; j < 5; j++)
            if (!isnan(parts[j]) && (isnan(parts[dom]) || parts[j] > parts[dom]))
                dom = j;
        json_t *x = json_object();
        json_object_set_new(x, "rid", json_string(r->rid));
        json_object_set_new(x, "start_ns", json_integer(r->start_ns));
        json_object_set_new(x, "e2e_ms", sa_num(r->e2e));
        json_object_set_new(x, "ttft_ms", sa_num(r->ttft));
        json_object_set_new(x, "tpot_ms", sa_num(r->tpot));
        json_object_set_new(x, "queue_ms", sa_num(isnan(r->queue) ? 0 : r->queue));
        json_object_set_new(x, "prefill_ms", sa_num(t.prefill));
        json_object_set_new(x, "decode_ms", sa_num(r->decode));
        json_object_set_new(x, "preempted", json_integer(r->preempted));
        json_object_set_new(x, "input_tokens", sa_num(r->in_tok));
        json_object_set_new(x, "output_tokens", sa_num(r->out_tok));
        json_object_set_new(x, "dominant", json_string(names[dom]));
        json_array_append_new(a, x);
    }
    return a;
}

static int cmp_span_total(const void *a, const void *b)
{
    const sa_span *x = *(sa_span *const *)a, *y = *(sa_span *const *)b;
    return (x->total_ms < y->total_ms) - (x->total_ms > y->total_ms);
}

static json_t *spans_json(const sa_profile *p)
{
    const sa_span **order = malloc((size_t)(p->nspan + 1) * sizeof *order);
    for (int i = 0; i < p->nspan; i++)
        order[i] = &p->span[i];
    qsort(order, (size_t)p->nspan, sizeof *order, cmp_span_total);
    json_t *a = json_array();
    for (int i = 0; i < p->nspan; i++) {
        const sa_span *s = order[i];
        sa_pct d = s->dur;
        if (!s->agg) {
            double *v = malloc((size_t)(s->n + 1) * sizeof *v);
            for (long long k = 0; k < s->n; k++)
                v[k] = s->dur_ms[k];
            d = sa_pct_of(v, s->n);
            free(v);
        }
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(s->name));
        json_object_set_new(x, "count", json_integer(s->n));
        json_object_set_new(x, "total_ms", sa_num(s->total_ms));
        json_object_set_new(x, "dur_ms", sa_pct_json(&d));
        json_array_append_new(a, x);
    }
    free(order);
    return a;
}

/* What the parse found wrong in the data itself. From profiler.db the
 * counts are unknown (null): they are the parse's, not the database's. */
static json_t *quality_json(const sa_profile *p)
{
    json_t *q = json_object();
    long long complete = 0;
    for (long long i = 0; i < p->nreq; i++)
        complete += p->req[i].complete != 0;
    json_object_set_new(q, "incomplete_requests", json_integer(p->nreq - complete));
    if (!p->quality_known) {
        json_object_set_new(q, "duplicate_ids", json_null());
        json_object_set_new(q, "duplicate_example", json_null());
        json_object_set_new(q, "figures_left_empty", json_null());
        return q;
    }
    json_object_set_new(q, "duplicate_ids", json_integer(p->dup_ids));
    json_object_set_new(q, "duplicate_example", p->dup_ids ? json_string(p->dup_example) : json_null());
    json_object_set_new(q, "figures_left_empty", json_integer(p->empty_figures));
    return q;
}

json_t *sa_document(const sa_profile *p, const sa_opts *o)
{
    sa_series s;
    sa_series_compute(p, o, &s);
    sa_findings f;
    sa_findings_compute(p, o, &s, &f);
    json_t *d = json_object();
    json_object_set_new(d, "schema", json_string("servprof-analyze/1"));
    json_object_set_new(d, "input", json_string(o->input));
    json_object_set_new(d, "source", json_string(p->from_db ? "profiler.db" : "raw"));
    json_object_set_new(d, "run", run_json(p));
    json_object_set_new(d, "headline", headline_json(p, &s, &f));
    json_object_set_new(d, "data_quality", quality_json(p));
    json_t *sum = json_object();
    json_object_set_new(sum, "request", sa_refsum_request(p));
    json_object_set_new(sum, "batch", sa_refsum_batch(p));
    json_object_set_new(sum, "service", sa_refsum_service(p));
    json_object_set_new(d, "summaries", sum);
    json_t *th = json_object();
#define SA_TH(id, name, def, doc) json_object_set_new(th, name, sa_num(o->threshold[SA_T_##id]));
    SA_THRESHOLDS(SA_TH)
#undef SA_TH
    json_object_set_new(d, "thresholds", th);
    json_object_set_new(d, "findings", findings_json(&f));
    json_object_set_new(d, "windows", windows_json(p, &s));
    json_object_set_new(d, "ttft_breakdown", ttft_json(p, o));
    json_object_set_new(d, "slowest", slowest_json(p));
    json_object_set_new(d, "spans", spans_json(p));
    sa_series_free(&s);
    return d;
}
