/* SPDX-License-Identifier: Apache-2.0 */
/*
 * findings.c — what limits this run, ranked.
 *
 * Each check computes one figure over the whole run, compares it with a
 * named threshold (analyze.h, overridable with --threshold NAME=VALUE) and,
 * when crossed, adds a finding with its evidence: the windows where it
 * shows, a few requests or timestamps to look at in the timeline, and the
 * knob that usually moves it. The score ranks findings and is, as far as
 * possible, the share of latency or of time the limit explains:
 *
 *   queueing               mean queue wait / mean e2e
 *   kv_pressure            the part of that queueing that happened in windows
 *                          where KV usage crossed its threshold, plus the
 *                          share of requests preempted (KV being full is why
 *                          they queue, so it outranks plain queueing then)
 *   prefill_interference   the delay decoding requests suffer from prefill in
 *                          their step: sum over mixed steps of (step time -
 *                          mean decode-only step time) x decoding requests
 *                          in it, as a share of all complete requests' e2e
 *   underfilled_batches    half the queueing share times (1 - fill)
 *   host_stalls            stalled share of the run
 *   slow_tokenize          (tokenize + detokenize span means) / mean e2e
 *   dp_imbalance           (1 - least / most busy rank) x busy share
 *   handoff, pd_imbalance, slow_kv_pull: disaggregated serving, pdfind.c
 *   expert_imbalance       mixture-of-experts serving, moefind.c: the time the
 *                          ranks wait for the slowest one, as a share of
 *                          the forward time
 *
 * "under_loaded" (idle share over its threshold) is a state, not a limit:
 * it is listed after every bottleneck with bottleneck = false, and the
 * verdict is "under_loaded" only when no bottleneck was found.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define T(id) (o->threshold[SA_T_##id])

typedef struct run {
    long long ncomplete;
    double e2e_mean, queue_mean, queue_p90;
    double kv_peak;
    int64_t kv_peak_ts;
    double preempt_share;
    long long preempted;
    double bs_mean, bs_max;
} run;

static void run_figures(const sa_profile *p, run *r)
{
    memset(r, 0, sizeof *r);
    double *q = malloc((size_t)(p->nreq + 1) * sizeof *q);
    double e2e = 0, qs = 0;
    long long n = 0;
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *x = &p->req[i];
        if (x->preempted > 0)
            r->preempted++;
        if (!x->complete)
            continue;
        double qi = isnan(x->queue) ? 0 : x->queue;
        q[n++] = qi;
        qs += qi;
        e2e += x->e2e;
    }
    r->ncomplete = n;
    r->e2e_mean = n ? e2e / (double)n : NAN;
    r->queue_mean = n ? qs / (double)n : NAN;
    sa_pct qp = sa_pct_of(q, n);
    r->queue_p90 = qp.p90;
    free(q);
    r->preempt_share = p->nreq ? (double)r->preempted / (double)p->nreq : 0;
    r->kv_peak = NAN;
    for (long long i = 0; i < p->nkv; i++)
        if (isnan(r->kv_peak) || p->kv[i].usage > r->kv_peak) {
            r->kv_peak = p->kv[i].usage;
            r->kv_peak_ts = p->kv[i].ts;
        }
    const sa_steps *ss = &p->steps[p->src];
    double bs = 0;
    for (long long i = 0; i < ss->n; i++) {
        bs += ss->v[i].bs;
        if (ss->v[i].bs > r->bs_max)
            r->bs_max = ss->v[i].bs;
    }
    r->bs_mean = ss->n ? bs / (double)ss->n : NAN;
}

static sa_finding *add(sa_findings *out, const char *id, int bottleneck, double score)
{
    return sa_finding_add(out, id, bottleneck, score);
}

sa_finding *sa_finding_add(sa_findings *out, const char *id, int bottleneck, double score)
{
    if (out->n >= (int)(sizeof out->f / sizeof out->f[0]))
        return NULL;
    sa_finding *f = &out->f[out->n++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->bottleneck = bottleneck;
    f->score = score;
    return f;
}

static void figure(sa_finding *f, const char *name, double v, const char *unit, const char *tname, double tv,
                   const char *op)
{
    f->fig_name = name;
    f->fig_value = v;
    f->fig_unit = unit;
    f->thr_name = tname;
    f->thr_value = tv;
    f->thr_op = op;
}

static void example(sa_finding *f, const char *rid, int64_t ts, const char *fmt, double v)
{
    if (f->nex >= 5)
        return;
    sa_example *e = &f->ex[f->nex++];
    snprintf(e->rid, sizeof e->rid, "%s", rid ? rid : "");
    e->ts = ts;
    snprintf(e->what, sizeof e->what, fmt, v);
}

/* Windows (scope all) where pred holds. */
typedef int (*win_pred)(const sa_window *w, const sa_opts *o, const void *arg);
static void windows_where(sa_finding *f, const sa_series *s, const sa_opts *o, win_pred pred, const void *arg)
{
    for (int k = 0; k < s->count && f->nwindows < 16; k++)
        if (pred(&s->w[k], o, arg))
            f->windows[f->nwindows++] = k;
}

/* The n requests with the largest value of field (complete only). */
static void top_requests(const sa_profile *p, sa_finding *f, int n, double (*val)(const sa_req *),
                         const char *fmt)
{
    long long best[5];
    int nb = 0;
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        double v = val(r);
        if (isnan(v))
            continue;
        int k = nb < n ? nb++ : n;
        if (k == n && v <= val(&p->req[best[n - 1]]))
            continue;
        if (k == n)
            k = n - 1;
        while (k > 0 && val(&p->req[best[k - 1]]) < v) {
            best[k] = best[k - 1];
            k--;
        }
        best[k] = i;
    }
    for (int k = 0; k < nb; k++)
        example(f, p->req[best[k]].rid, p->req[best[k]].start_ns, fmt, val(&p->req[best[k]]));
}

static double val_queue(const sa_req *r) { return r->complete && !isnan(r->queue) ? r->queue : NAN; }
static double val_preempted(const sa_req *r) { return r->preempted > 0 ? r->preempted : NAN; }

static int w_queue(const sa_window *w, const sa_opts *o, const void *arg)
{
    (void)arg;
    return w->queue.n && w->queue.p90 >= T(QUEUE_MIN_MS) && w->queue.mean >= T(QUEUE_SHARE) * w->e2e.mean;
}
static int w_kv(const sa_window *w, const sa_opts *o, const void *arg)
{
    (void)arg;
    return (!isnan(w->kv_max) && w->kv_max >= T(KV_USAGE_HIGH)) || w->preemptions > 0;
}
/* arg: the run's mean decode-only step time (a window may hold no decode-only step) */
static int w_interf(const sa_window *w, const sa_opts *o, const void *arg)
{
    const sa_stepagg *m = &w->steps[SA_MIXED], *d = &w->steps[SA_DECODE];
    double dec = d->count && d->ms_mean > 0 ? d->ms_mean : *(const double *)arg;
    return m->count && dec > 0 && m->ms_mean / dec >= T(INTERFERENCE_RATIO);
}
static int w_fill(const sa_window *w, const sa_opts *o, const void *arg)
{
    double max = *(const double *)arg, bs = 0;
    long long n = 0;
    for (int k = 0; k < SA_NKINDS; k++)
        if (w->steps[k].count) {
            bs += w->steps[k].bs_mean * (double)w->steps[k].count;
            n += w->steps[k].count;
        }
    return n && w->queue.n && w->queue.p90 >= T(QUEUE_MIN_MS) && bs / (double)n <= T(FILL_RATIO) * max;
}
static int w_stall(const sa_window *w, const sa_opts *o, const void *arg)
{
    (void)arg;
    return w->stalled >= T(STALL_FRAC);
}
static int w_idle(const sa_window *w, const sa_opts *o, const void *arg)
{
    (void)arg;
    return w->idle >= T(IDLE_FRAC);
}

static void check_queueing(const sa_profile *p, const sa_opts *o, const sa_series *s, const run *r,
                           sa_findings *out)
{
    if (!r->ncomplete || !(r->e2e_mean > 0))
        return;
    double share = r->queue_mean / r->e2e_mean;
    if (share < T(QUEUE_SHARE) || !(r->queue_p90 >= T(QUEUE_MIN_MS)))
        return;
    sa_finding *f = add(out, "queueing", 1, share);
    if (!f)
        return;
    snprintf(f->title, sizeof f->title, "Requests wait in the queue: %.0f%% of end-to-end latency", share * 100);
    figure(f, "queue_share_of_e2e", share, "ratio", "queue_share", T(QUEUE_SHARE), ">=");
    snprintf(f->evidence, sizeof f->evidence,
             "mean queue wait %.1f ms of %.1f ms mean e2e (P90 queue wait %.1f ms, threshold %.1f ms); "
             "arrivals exceed what the engine admits",
             r->queue_mean, r->e2e_mean, r->queue_p90, T(QUEUE_MIN_MS));
    windows_where(f, s, o, w_queue, NULL);
    top_requests(p, f, 3, val_queue, "queued %.1f ms");
    f->knob = "admit more at once if memory allows: max running sequences (vLLM --max-num-seqs, SGLang "
              "--max-running-requests, MindIE maxBatchSize), or add replicas / dp ranks, or limit the "
              "arrival rate";
}

static void check_kv(const sa_profile *p, const sa_opts *o, const sa_series *s, const run *r, sa_findings *out)
{
    int full = !isnan(r->kv_peak) && r->kv_peak >= T(KV_USAGE_HIGH);
    int preempt = r->preempt_share >= T(PREEMPT_SHARE);
    if (!full && !preempt)
        return;
    /* The queueing that happened while KV was full is KV's doing. */
    double q_all = 0, q_full = 0;
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *x = &p->req[i];
        if (!x->complete || isnan(x->queue))
            continue;
        long long k = (x->end_ns - s->t0) / (int64_t)(s->width_s * 1e9 + 0.5);
        if (k >= s->count)
            k = s->count - 1;
        q_all += x->queue;
        if (k >= 0 && w_kv(&s->w[k], o, NULL))
            q_full += x->queue;
    }
    double qshare = r->e2e_mean > 0 ? r->queue_mean / r->e2e_mean : 0;
    double score = (q_all > 0 ? qshare * q_full / q_all : 0) + r->preempt_share + 0.01;
    sa_finding *f = add(out, "kv_pressure", 1, score);
    if (!f)
        return;
    if (full) {
        snprintf(f->title, sizeof f->title, "KV cache is full: peak usage %.0f%%%s", r->kv_peak * 100,
                 r->preempted ? ", requests preempted" : "");
        figure(f, "kv_usage_peak", r->kv_peak, "frac", "kv_usage_high", T(KV_USAGE_HIGH), ">=");
    } else {
        snprintf(f->title, sizeof f->title, "Requests preempted for KV blocks: %.1f%% of requests",
                 r->preempt_share * 100);
        figure(f, "preempted_share", r->preempt_share, "frac", "preempt_share", T(PREEMPT_SHARE), ">=");
    }
    snprintf(f->evidence, sizeof f->evidence,
             "peak KV usage %.1f%%, %lld request(s) preempted (%.1f%%); %.0f%% of the queue wait fell in windows "
             "where KV was full or requests were preempted",
             isnan(r->kv_peak) ? 0 : r->kv_peak * 100, r->preempted, r->preempt_share * 100,
             q_all > 0 ? 100 * q_full / q_all : 0);
    windows_where(f, s, o, w_kv, NULL);
    if (full)
        example(f, NULL, r->kv_peak_ts, "KV usage %.1f%%", r->kv_peak * 100);
    top_requests(p, f, 3, val_preempted, "preempted %.0f time(s)");
    f->knob = "more KV blocks: vLLM --gpu-memory-utilization / --num-gpu-blocks-override, SGLang "
              "--mem-fraction-static, MindIE npuMemSize; or fewer running sequences / a shorter max model "
              "length; prefix caching to share prompt blocks";
}

static void check_interference(const sa_profile *p, const sa_opts *o, const sa_series *s, const run *r,
                               sa_findings *out)
{
    sa_stepagg d = sa_steps_agg(p, SA_DECODE), m = sa_steps_agg(p, SA_MIXED);
    if (!d.count || !m.count || !(d.ms_mean > 0) || !(r->e2e_mean > 0))
        return;
    double ratio = m.ms_mean / d.ms_mean;
    /* request-milliseconds decoding requests waited for the prefill in their step */
    const sa_steps *ss = &p->steps[p->src];
    double delay = 0;
    for (long long i = 0; i < ss->n; i++)
        if (ss->v[i].kind == SA_MIXED) {
            double extra = (double)(ss->v[i].end - ss->v[i].start) / 1e6 - d.ms_mean;
            if (extra > 0)
                delay += extra * (ss->v[i].dec > 0 ? ss->v[i].dec : 1);
        }
    double share = delay / (r->e2e_mean * (double)r->ncomplete);
    if (ratio < T(INTERFERENCE_RATIO) || share < T(INTERFERENCE_SHARE))
        return;
    sa_finding *f = add(out, "prefill_interference", 1, share);
    if (!f)
        return;
    snprintf(f->title, sizeof f->title, "Prefill slows decoding: steps with prefill take %.1fx a decode step",
             ratio);
    figure(f, "mixed_over_decode_step_time", ratio, "ratio", "interference_ratio", T(INTERFERENCE_RATIO), ">=");
    snprintf(f->evidence, sizeof f->evidence,
             "%lld steps mixed prefill with decode, %.2f ms mean against %.2f ms for decode-only steps; the "
             "decoding requests in them waited %.0f ms in all, %.0f%% of the requests' end-to-end time",
             m.count, m.ms_mean, d.ms_mean, delay, share * 100);
    windows_where(f, s, o, w_interf, &d.ms_mean);
    long long best[3] = {-1, -1, -1};
    for (long long i = 0; i < ss->n; i++) {
        if (ss->v[i].kind != SA_MIXED)
            continue;
        int64_t dur = ss->v[i].end - ss->v[i].start;
        for (int k = 0; k < 3; k++)
            if (best[k] < 0 || dur > ss->v[best[k]].end - ss->v[best[k]].start) {
                for (int j = 2; j > k; j--)
                    best[j] = best[j - 1];
                best[k] = i;
                break;
            }
    }
    for (int k = 0; k < 3 && best[k] >= 0; k++)
        example(f, NULL, ss->v[best[k]].start, "mixed step of %.2f ms",
                (double)(ss->v[best[k]].end - ss->v[best[k]].start) / 1e6);
    f->knob = "smaller prefill chunks: vLLM --max-num-batched-tokens with chunked prefill, SGLang "
              "--chunked-prefill-size, MindIE maxPrefillTokens / prefillTimeMsPerReq; or "
              "prefill/decode disaggregation";
}

static void check_fill(const sa_profile *p, const sa_opts *o, const sa_series *s, const run *r,
                       sa_findings *out)
{
    if (!(r->bs_max > 1) || !r->ncomplete || !(r->e2e_mean > 0))
        return;
    double fill = r->bs_mean / r->bs_max, qshare = r->queue_mean / r->e2e_mean;
    if (fill > T(FILL_RATIO) || !(r->queue_p90 >= T(QUEUE_MIN_MS)) || qshare < T(QUEUE_SHARE) / 2)
        return;
    sa_finding *f = add(out, "underfilled_batches", 1, qshare * (1 - fill) * 0.5);
    if (!f)
        return;
    snprintf(f->title, sizeof f->title, "Batches run %.0f%% full while requests wait", fill * 100);
    figure(f, "batch_fill", fill, "ratio", "fill_ratio", T(FILL_RATIO), "<=");
    snprintf(f->evidence, sizeof f->evidence,
             "mean batch %.2f requests against %.0f at most, while the P90 queue wait is %.1f ms",
             r->bs_mean, r->bs_max, r->queue_p90);
    double max = r->bs_max;
    windows_where(f, s, o, w_fill, &max);
    top_requests(p, f, 3, val_queue, "queued %.1f ms");
    f->knob = "let the scheduler fill steps: max batched tokens per step (vLLM --max-num-batched-tokens, "
              "SGLang --max-prefill-tokens, MindIE maxPrefillTokens / maxPrefillBatchSize), batch wait time";
}

static void check_stalls(const sa_profile *p, const sa_opts *o, const sa_series *s, sa_findings *out)
{
    double st = s->budget.stalled;
    if (st < T(STALL_FRAC))
        return;
    sa_finding *f = add(out, "host_stalls", 1, st);
    if (!f)
        return;
    snprintf(f->title, sizeof f->title, "Device idle while work waits: %.0f%% of the time", st * 100);
    figure(f, "stalled_frac", st, "frac", "stall_frac", T(STALL_FRAC), ">=");
    snprintf(f->evidence, sizeof f->evidence,
             "busy %.0f%%, stalled %.0f%%, idle %.0f%% of the run: between device steps requests were in "
             "flight but nothing ran (host-side scheduling, sampling, input preparation)",
             s->budget.busy * 100, st * 100, s->budget.idle * 100);
    windows_where(f, s, o, w_stall, NULL);
    for (int k = 0; k < s->ngaps; k++)
        example(f, NULL, s->gaps[k].start, "device idle %.2f ms with work in flight",
                (double)(s->gaps[k].end - s->gaps[k].start) / 1e6);
    (void)p;
    f->knob = "overlap host work with the device: vLLM async scheduling / --num-scheduler-steps, SGLang's "
              "overlap scheduler, CUDA graphs, MindIE asynchronous scheduling; profile the scheduler's CPU time";
}

static const sa_span *span_named(const sa_profile *p, const char *name)
{
    int i = sa_strmap_get(&p->span_names, name, (int)strlen(name));
    return i >= 0 ? &p->span[i] : NULL;
}

static void check_tokenize(const sa_profile *p, const sa_opts *o, const run *r, sa_findings *out)
{
    const sa_span *tk = span_named(p, "tokenize"), *dt = span_named(p, "detokenize");
    double ms = (tk && tk->n ? tk->total_ms / (double)tk->n : 0) + (dt && dt->n ? dt->total_ms / (double)dt->n : 0);
    if (!(r->e2e_mean > 0) || ms <= 0)
        return;
    double share = ms / r->e2e_mean;
    if (share < T(TOKENIZE_SHARE))
        return;
    sa_finding *f = add(out, "slow_tokenize", 1, share);
    if (!f)
        return;
    snprintf(f->title, sizeof f->title, "Tokenizing takes %.0f%% of end-to-end latency", share * 100);
    figure(f, "tokenize_share_of_e2e", share, "ratio", "tokenize_share", T(TOKENIZE_SHARE), ">=");
    snprintf(f->evidence, sizeof f->evidence, "tokenize + detokenize spans %.2f ms per request, mean e2e %.1f ms",
             ms, r->e2e_mean);
    if (tk && tk->n)
        example(f, NULL, tk->max_ts, "tokenize span of %.2f ms", tk->max_ms);
    if (dt && dt->n)
        example(f, NULL, dt->max_ts, "detokenize span of %.2f ms", dt->max_ms);
    f->knob = "more tokenizer workers: vLLM API-server processes / --tokenizer-pool-size, SGLang "
              "--tokenizer-worker-num, MindIE tokenizer processes; a fast (Rust) tokenizer; "
              "detokenize off the engine's thread";
}

static void check_dp(const sa_profile *p, const sa_opts *o, const sa_series *s, sa_findings *out)
{
    /* busy seconds per dp rank (processes without a rank count as their own) */
    double busy[256];
    int rank[256], n = 0;
    for (int q = 0; q < p->nproc; q++) {
        int r = p->proc[q].dp_rank, k;
        for (k = 0; k < n; k++)
            if (rank[k] == r && r >= 0)
                break;
        if (k == n) {
            if (n == 256)
                continue;
            rank[n] = r;
            busy[n++] = 0;
        }
        busy[k] += s->budget.proc_busy[q];
    }
    if (n < 2)
        return;
    int lo = 0, hi = 0;
    for (int k = 1; k < n; k++) {
        if (busy[k] < busy[lo])
            lo = k;
        if (busy[k] > busy[hi])
            hi = k;
    }
    if (!(busy[lo] > 0) || busy[hi] / busy[lo] < T(DP_IMBALANCE))
        return;
    double ratio = busy[hi] / busy[lo];
    double span = (double)(p->t1 - p->t0) / 1e9;
    sa_finding *f = add(out, "dp_imbalance", 1, (1 - busy[lo] / busy[hi]) * (span > 0 ? busy[hi] / span : 1));
    if (!f)
        return;
    snprintf(f->title, sizeof f->title, "Unbalanced dp ranks: the busiest works %.1fx the least busy", ratio);
    figure(f, "busy_ratio", ratio, "ratio", "dp_imbalance", T(DP_IMBALANCE), ">=");
    snprintf(f->evidence, sizeof f->evidence, "rank %d busy %.2f s, rank %d busy %.2f s of %.2f s", rank[hi],
             busy[hi], rank[lo], busy[lo], span);
    f->knob = "balance the dp ranks: vLLM/SGLang --load-balance-method (shortest queue rather than round "
              "robin), MindIE dp scheduling; check for long prompts pinned to one rank";
}

static void check_idle(const sa_opts *o, const sa_series *s, sa_findings *out)
{
    if (s->budget.idle < T(IDLE_FRAC))
        return;
    sa_finding *f = add(out, "under_loaded", 0, s->budget.idle);
    if (!f)
        return;
    snprintf(f->title, sizeof f->title, "Under-loaded: nothing to run %.0f%% of the time (not a bottleneck)",
             s->budget.idle * 100);
    figure(f, "idle_frac", s->budget.idle, "frac", "idle_frac", T(IDLE_FRAC), ">=");
    snprintf(f->evidence, sizeof f->evidence,
             "busy %.0f%%, stalled %.0f%%, idle %.0f%%: the engine waits for requests; latency here is the "
             "engine's own, and throughput follows the offered load",
             s->budget.busy * 100, s->budget.stalled * 100, s->budget.idle * 100);
    windows_where(f, s, o, w_idle, NULL);
    f->knob = "none needed for throughput; to measure capacity, raise the offered load until a bottleneck "
              "appears";
}

static int cmp_finding(const void *a, const void *b)
{
    const sa_finding *x = a, *y = b;
    if (x->bottleneck != y->bottleneck)
        return y->bottleneck - x->bottleneck;
    return (y->score > x->score) - (y->score < x->score);
}

void sa_findings_compute(const sa_profile *p, const sa_opts *o, const sa_series *s, sa_findings *out)
{
    memset(out, 0, sizeof *out);
    run r;
    run_figures(p, &r);
    check_queueing(p, o, s, &r, out);
    check_kv(p, o, s, &r, out);
    check_interference(p, o, s, &r, out);
    check_fill(p, o, s, &r, out);
    check_stalls(p, o, s, out);
    check_tokenize(p, o, &r, out);
    check_dp(p, o, s, out);
    sa_pd_findings(p, o, s, r.e2e_mean * (double)r.ncomplete, out);
    sa_moe_findings(p, o, s, out);
    check_idle(o, s, out);
    qsort(out->f, (size_t)out->n, sizeof out->f[0], cmp_finding);
    int any = out->n && out->f[0].bottleneck;
    if (!p->nreq && !p->steps[p->src].n && !p->npd && !p->npull && !p->nmoe)
        out->verdict = "no_data";
    else if (any)
        out->verdict = "bottleneck";
    else if (out->n && !strcmp(out->f[0].id, "under_loaded"))
        out->verdict = "under_loaded";
    else
        out->verdict = "no_bottleneck";
}
