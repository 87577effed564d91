/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compare.c — servprof compare: A and B, metric by metric.
 *
 * Metrics (each a row "key"): request latencies ttft / tpot / e2e / queue
 * (mean, p50, p90, p99, complete requests); throughput (rps, output tokens
 * per second); steps by type (step time mean/p50/p90, batch size and
 * tokens per step, means); spans by name (mean, p50, p90); the engine's
 * busy / stalled / idle fractions.
 *
 * Significance: a percentile bootstrap of the difference. Each resample
 * draws, with replacement, as many values as each run has (at most
 * max_sample) from A and from B and computes the statistic on both; the
 * change is significant when the central `confidence` interval of
 * stat(B*) - stat(A*) excludes 0 AND the change is at least min_effect of
 * A's value (10 %) and, for times, at least min_abs_ms (practical floors:
 * two runs of one setting on a shared machine differ by several % in step
 * time, and microseconds of a span are not a finding). A --fail-if gate
 * has its own limit and asks only that the interval exclude 0. The
 * resampling is seeded: the same inputs give the same answer. A
 * percentile needs at least 5 values beyond it in each run to be tested
 * (P90: 50 values, P99: 500); otherwise "significant" is null. Run-level
 * figures (throughput, busy/stalled/idle) have one value per run: no test.
 *
 * Ranking: rows are sorted by their share of the change in mean e2e
 * latency: queue and TTFT deltas directly; TPOT's times (mean output
 * tokens - 1); a step type's mean time times steps of that type per
 * request; a span's mean times spans per request. e2e itself comes first
 * as the reference (share 1); rows with no time meaning come last.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "profile.h"

void sa_compare_opts_init(sa_compare_opts *o)
{
    o->resamples = 400;
    o->max_sample = 4000;
    o->confidence = 0.95;
    o->min_effect = 0.10;
    o->min_abs_ms = 0.05;
    o->seed = 0x5eed5eedULL;
}

/* Values beyond a percentile, in each run, for it to be tested. */
#define MIN_TAIL 5

typedef struct sample { double *v; long long n; } sample;

static sample req_sample(const sa_profile *p, int field)
{
    sample s = {malloc((size_t)(p->nreq + 1) * sizeof(double)), 0};
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        if (!r->complete)
            continue;
        double v = field == 0 ? r->ttft : field == 1 ? r->tpot : field == 2 ? r->e2e : isnan(r->queue) ? 0 : r->queue;
        if (!isnan(v))
            s.v[s.n++] = v;
    }
    return s;
}

/* what: 0 step ms, 1 batch size, 2 tokens */
static sample step_sample(const sa_profile *p, int kind, int what)
{
    const sa_steps *ss = &p->steps[p->src];
    sample s = {malloc((size_t)(ss->n + 1) * sizeof(double)), 0};
    for (long long i = 0; i < ss->n; i++) {
        const sa_step *st = &ss->v[i];
        if (st->kind != kind)
            continue;
        double v = what == 0 ? (double)(st->end - st->start) / 1e6 : what == 1 ? st->bs : st->tokens;
        if (!isnan(v))
            s.v[s.n++] = v;
    }
    return s;
}

static sample span_sample(const sa_span *sp)
{
    /* a pre-aggregated span (analyze --from a database) has no durations */
    sample s = {malloc((size_t)(sp->n + 1) * sizeof(double)), sp->agg ? 0 : sp->n};
    for (long long i = 0; i < s.n; i++)
        s.v[i] = sp->dur_ms[i];
    return s;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* stat: 0 mean, else the percentile */
static double stat_of(double *v, long long n, double stat)
{
    if (n == 0)
        return NAN;
    if (stat == 0) {
        double s = 0;
        for (long long i = 0; i < n; i++)
            s += v[i];
        return s / (double)n;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return sa_pct_at(v, n, stat);
}

static unsigned long long rng_next(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static void resample(const sample *src, double *dst, long long n, unsigned long long *rng)
{
    for (long long i = 0; i < n; i++)
        dst[i] = src->v[rng_next(rng) % (unsigned long long)src->n];
}

typedef struct ctx {
    const sa_compare_opts *o;
    json_t *rows;
    double de2e;               /* change of mean e2e, ms */
    unsigned long long rng;
} ctx;

static json_t *row_new(ctx *c, const char *key, const char *label, double a, double b, const char *unit)
{
    json_t *r = json_object();
    json_object_set_new(r, "metric", json_string(key));
    json_object_set_new(r, "label", json_string(label));
    json_object_set_new(r, "unit", json_string(unit));
    json_object_set_new(r, "a", sa_num(a));
    json_object_set_new(r, "b", sa_num(b));
    json_object_set_new(r, "change_pct", sa_num(a != 0 && !isnan(a) && !isnan(b) ? 100 * (b - a) / fabs(a) : NAN));
    json_object_set_new(r, "ci_low", json_null());
    json_object_set_new(r, "ci_high", json_null());
    json_object_set_new(r, "significant", json_null());
    json_object_set_new(r, "ci_excludes_zero", json_null());
    json_object_set_new(r, "share_of_e2e_change", json_null());
    json_array_append_new(c->rows, r);
    return r;
}

/* A row with a bootstrap test of statistic stat (0 mean, else percentile). */
static json_t *test_row(ctx *c, const char *key, const char *label, const char *unit, const sample *A,
                        const sample *B, double stat)
{
    double *tmp = malloc((size_t)(A->n > B->n ? A->n : B->n) * sizeof(double) + 8);
    memcpy(tmp, A->v, (size_t)A->n * sizeof(double));
    double a = stat_of(tmp, A->n, stat);
    memcpy(tmp, B->v, (size_t)B->n * sizeof(double));
    double b = stat_of(tmp, B->n, stat);
    json_t *r = row_new(c, key, label, a, b, unit);
    /* A percentile is tested only with at least MIN_TAIL values beyond it
     * in each run (the bootstrap of an extreme quantile of a small sample
     * is not reliable: P99 of 60 requests is their maximum). */
    long long nmin = A->n < B->n ? A->n : B->n;
    int testable = nmin >= 2 && (stat == 0 || (double)nmin * (1 - stat / 100) >= MIN_TAIL);
    if (!testable)
        json_object_set_new(r, "note", json_string("too few values to test"));
    if (testable) {
        long long na = A->n < c->o->max_sample ? A->n : c->o->max_sample;
        long long nb = B->n < c->o->max_sample ? B->n : c->o->max_sample;
        int R = c->o->resamples;
        double *d = malloc((size_t)R * sizeof *d);
        for (int k = 0; k < R; k++) {
            resample(A, tmp, na, &c->rng);
            double sa = stat_of(tmp, na, stat);
            resample(B, tmp, nb, &c->rng);
            d[k] = stat_of(tmp, nb, stat) - sa;
        }
        qsort(d, (size_t)R, sizeof *d, cmp_d);
        double alpha = (1 - c->o->confidence) / 2;
        double lo = sa_pct_at(d, R, 100 * alpha), hi = sa_pct_at(d, R, 100 * (1 - alpha));
        int excl = lo > 0 || hi < 0;
        int sig = excl && fabs(b - a) >= c->o->min_effect * fabs(a) &&
                  (strcmp(unit, "ms") != 0 || fabs(b - a) >= c->o->min_abs_ms);
        json_object_set_new(r, "ci_excludes_zero", json_boolean(excl));
        json_object_set_new(r, "ci_low", sa_num(lo));
        json_object_set_new(r, "ci_high", sa_num(hi));
        json_object_set_new(r, "significant", json_boolean(sig));
        free(d);
    }
    free(tmp);
    return r;
}

static void set_share(ctx *c, json_t *r, double delta_ms)
{
    if (c->de2e != 0 && !isnan(delta_ms))
        json_object_set_new(r, "share_of_e2e_change", sa_num(delta_ms / c->de2e));
}

static const double stats[4] = {0, 50, 90, 99};
static const char *const stat_names[4] = {"mean", "p50", "p90", "p99"};

static double mean_of(const sample *s)
{
    double t = 0;
    for (long long i = 0; i < s->n; i++)
        t += s->v[i];
    return s->n ? t / (double)s->n : NAN;
}

static long long complete_count(const sa_profile *p)
{
    long long n = 0;
    for (long long i = 0; i < p->nreq; i++)
        n += p->req[i].complete;
    return n;
}

static double mean_out_tokens(const sa_profile *p)
{
    double t = 0;
    long long n = 0;
    for (long long i = 0; i < p->nreq; i++)
        if (p->req[i].complete && !isnan(p->req[i].out_tok)) {
            t += p->req[i].out_tok;
            n++;
        }
    return n ? t / (double)n : NAN;
}

static void request_rows(ctx *c, const sa_profile *A, const sa_profile *B)
{
    static const char *const names[4] = {"ttft", "tpot", "e2e", "queue"};
    static const char *const labels[4] = {"TTFT", "TPOT", "end-to-end", "queue wait"};
    sample sa[4], sb[4];
    for (int f = 0; f < 4; f++) {
        sa[f] = req_sample(A, f);
        sb[f] = req_sample(B, f);
    }
    c->de2e = mean_of(&sb[2]) - mean_of(&sa[2]);
    double outb = mean_out_tokens(B);
    /* share per metric, from its mean */
    double delta[4];
    for (int f = 0; f < 4; f++)
        delta[f] = mean_of(&sb[f]) - mean_of(&sa[f]);
    double share_ms[4] = {delta[0], delta[1] * (isnan(outb) ? 0 : outb - 1), delta[2], delta[3]};
    int order[4] = {2, 0, 1, 3};
    for (int k = 0; k < 4; k++) {
        int f = order[k];
        for (int s = 0; s < 4; s++) {
            char key[64], label[64];
            snprintf(key, sizeof key, "%s.%s", names[f], stat_names[s]);
            snprintf(label, sizeof label, "%s %s", labels[f], stat_names[s]);
            json_t *r = test_row(c, key, label, "ms", &sa[f], &sb[f], stats[s]);
            set_share(c, r, share_ms[f]);
        }
    }
    for (int f = 0; f < 4; f++) {
        free(sa[f].v);
        free(sb[f].v);
    }
}

static void run_rows(ctx *c, const sa_profile *A, const sa_profile *B, const sa_series *sa, const sa_series *sb)
{
    double ta = (double)(A->t1 - A->t0) / 1e9, tb = (double)(B->t1 - B->t0) / 1e9;
    double oa = mean_out_tokens(A) * (double)complete_count(A), ob = mean_out_tokens(B) * (double)complete_count(B);
    row_new(c, "throughput.rps", "throughput (requests/s)", ta > 0 ? (double)complete_count(A) / ta : NAN,
            tb > 0 ? (double)complete_count(B) / tb : NAN, "1/s");
    row_new(c, "throughput.output_tokens_per_s", "output tokens/s", ta > 0 ? oa / ta : NAN, tb > 0 ? ob / tb : NAN,
            "1/s");
    row_new(c, "engine.busy_frac", "engine busy", sa->budget.busy, sb->budget.busy, "frac");
    row_new(c, "engine.stalled_frac", "engine stalled (work waiting, device idle)", sa->budget.stalled,
            sb->budget.stalled, "frac");
    row_new(c, "engine.idle_frac", "engine idle", sa->budget.idle, sb->budget.idle, "frac");
}

static void step_rows(ctx *c, const sa_profile *A, const sa_profile *B)
{
    static const char *const kinds[SA_NKINDS] = {"prefill", "decode", "mixed"};
    long long na = complete_count(A), nb = complete_count(B);
    for (int k = 0; k < SA_NKINDS; k++) {
        sample ms_a = step_sample(A, k, 0), ms_b = step_sample(B, k, 0);
        if (ms_a.n || ms_b.n) {
            /* time of this step type per request, B's count: the change of its duration */
            double per_req = nb ? (double)ms_b.n / (double)nb : 0;
            double dms = mean_of(&ms_b) - mean_of(&ms_a);
            for (int s = 0; s < 3; s++) {
                char key[64], label[64];
                snprintf(key, sizeof key, "step.%s.ms_%s", kinds[k], stat_names[s]);
                snprintf(label, sizeof label, "%s step time %s", kinds[k], stat_names[s]);
                json_t *r = test_row(c, key, label, "ms", &ms_a, &ms_b, stats[s]);
                set_share(c, r, dms * per_req);
            }
            static const char *const what[2] = {"batch_mean", "tokens_mean"};
            static const char *const wl[2] = {"batch size", "tokens per step"};
            for (int w = 1; w <= 2; w++) {
                sample x = step_sample(A, k, w), y = step_sample(B, k, w);
                char key[64], label[64];
                snprintf(key, sizeof key, "step.%s.%s", kinds[k], what[w - 1]);
                snprintf(label, sizeof label, "%s %s mean", kinds[k], wl[w - 1]);
                if (x.n || y.n)
                    test_row(c, key, label, "count", &x, &y, 0);
                free(x.v);
                free(y.v);
            }
            double steps_a = na ? (double)ms_a.n / (double)na : NAN;
            char key[64], label[64];
            snprintf(key, sizeof key, "step.%s.per_request", kinds[k]);
            snprintf(label, sizeof label, "%s steps per request", kinds[k]);
            row_new(c, key, label, steps_a, per_req, "count");
        }
        free(ms_a.v);
        free(ms_b.v);
    }
}

static void span_rows(ctx *c, const sa_profile *A, const sa_profile *B, json_t *only_a, json_t *only_b)
{
    long long na = complete_count(A), nb = complete_count(B);
    for (int i = 0; i < A->nspan; i++) {
        const sa_span *x = &A->span[i];
        int j = sa_strmap_get(&B->span_names, x->name, (int)strlen(x->name));
        if (j < 0) {
            json_array_append_new(only_a, json_string(x->name));
            continue;
        }
        const sa_span *y = &B->span[j];
        sample sa = span_sample(x), sb = span_sample(y);
        double per_req = nb ? (double)y->n / (double)nb : 0;
        double d = mean_of(&sb) - mean_of(&sa);
        for (int s = 0; s < 3; s++) {
            char key[300], label[300];
            snprintf(key, sizeof key, "span.%s.%s", x->name, stat_names[s]);
            snprintf(label, sizeof label, "span %s %s", x->name, stat_names[s]);
            json_t *r = test_row(c, key, label, "ms", &sa, &sb, stats[s]);
            set_share(c, r, d * per_req);
        }
        char key[300], label[300];
        snprintf(key, sizeof key, "span.%s.per_request", x->name);
        snprintf(label, sizeof label, "span %s per request", x->name);
        row_new(c, key, label, na ? (double)x->n / (double)na : NAN, per_req, "count");
        free(sa.v);
        free(sb.v);
    }
    for (int j = 0; j < B->nspan; j++)
        if (sa_strmap_get(&A->span_names, B->span[j].name, (int)strlen(B->span[j].name)) < 0)
            json_array_append_new(only_b, json_string(B->span[j].name));
}

static double share_key(json_t *r)
{
    json_t *s = json_object_get(r, "share_of_e2e_change");
    if (!strncmp(json_string_value(json_object_get(r, "metric")), "e2e.", 4))
        return INFINITY;
    return json_is_number(s) ? fabs(json_number_value(s)) : -1;
}

static int cmp_rows(const void *x, const void *y)
{
    json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
    double sa = share_key(a), sb = share_key(b);
    if (sa != sb)
        return (sa < sb) - (sa > sb);
    /* same share (rows of one metric): keep their order */
    long long ia = json_integer_value(json_object_get(a, "_order")), ib = json_integer_value(json_object_get(b, "_order"));
    return (ia > ib) - (ia < ib);
}

json_t *sa_compare(const sa_opts *oa, const sa_opts *ob, const sa_compare_opts *o, char *err, size_t errcap)
{
    char e[512];
    sa_profile *A = sa_profile_load(oa, e, sizeof e);
    if (!A) {
        snprintf(err, errcap, "A: %s", e);
        return NULL;
    }
    sa_profile *B = sa_profile_load(ob, e, sizeof e);
    if (!B) {
        snprintf(err, errcap, "B: %s", e);
        sa_profile_free(A);
        return NULL;
    }
    ctx c = {.o = o, .rows = json_array(), .rng = o->seed ? o->seed : 1};
    sa_series sa, sb;
    sa_series_compute(A, oa, &sa);
    sa_series_compute(B, ob, &sb);
    json_t *only_a = json_array(), *only_b = json_array();
    request_rows(&c, A, B);
    step_rows(&c, A, B);
    span_rows(&c, A, B, only_a, only_b);
    run_rows(&c, A, B, &sa, &sb);
    /* sort by share of the e2e change, stable within a metric */
    size_t n = json_array_size(c.rows);
    json_t **v = malloc((n + 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i] = json_incref(json_array_get(c.rows, i));
        json_object_set_new(v[i], "_order", json_integer((json_int_t)i));
    }
    qsort(v, n, sizeof *v, cmp_rows);
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++) {
        json_object_del(v[i], "_order");
        json_array_append_new(rows, v[i]);
    }
    free(v);
    json_decref(c.rows);
    json_t *d = json_object();
    json_object_set_new(d, "schema", json_string("servprof-compare/1"));
    json_object_set_new(d, "a", json_string(oa->input));
    json_object_set_new(d, "b", json_string(ob->input));
    json_object_set_new(d, "test", json_pack("{s:s, s:i, s:f, s:f, s:f}", "method", "bootstrap", "resamples",
                                             o->resamples, "confidence", o->confidence, "min_effect",
                                             o->min_effect, "min_abs_ms", o->min_abs_ms));
    json_object_set_new(d, "e2e_mean_change_ms", sa_num(c.de2e));
    json_object_set_new(d, "rows", rows);
    json_object_set_new(d, "spans_only_in_a", only_a);
    json_object_set_new(d, "spans_only_in_b", only_b);
    sa_series_free(&sa);
    sa_series_free(&sb);
    sa_profile_free(A);
    sa_profile_free(B);
    return d;
}

/* ---------------------------------------------------------------- gates */

int sa_gate(json_t *cmp, const char *expr, char *msg, size_t cap)
{
    /* KEY OP NUMBER [%|ms], OP one of > < >= <= */
    const char *op = strpbrk(expr, "<>");
    if (!op || op == expr) {
        snprintf(msg, cap, "--fail-if '%s': expected METRIC>VALUE or METRIC<VALUE (e.g. ttft.p99>+5%%)", expr);
        return -1;
    }
    char key[300];
    size_t klen = (size_t)(op - expr);
    if (klen >= sizeof key)
        klen = sizeof key - 1;
    memcpy(key, expr, klen);
    key[klen] = 0;
    int greater = *op == '>', eq = op[1] == '=';
    const char *num = op + 1 + eq;
    char *end;
    double lim = strtod(num, &end);
    int pct = 0;
    if (end == num || (*end && strcmp(end, "%") && strcmp(end, "ms"))) {
        snprintf(msg, cap, "--fail-if '%s': the limit must be a number, optionally followed by %% or ms", expr);
        return -1;
    }
    pct = !strcmp(end, "%");
    json_t *r = NULL, *x;
    size_t i;
    json_array_foreach(json_object_get(cmp, "rows"), i, x)
        if (!strcmp(json_string_value(json_object_get(x, "metric")), key))
            r = x;
    if (!r) {
        snprintf(msg, cap, "--fail-if '%s': no metric '%s' in both runs (see the metric column of compare)", expr,
                 key);
        return -1;
    }
    double a = json_number_value(json_object_get(r, "a")), b = json_number_value(json_object_get(r, "b"));
    double change = pct ? json_number_value(json_object_get(r, "change_pct")) : b - a;
    json_t *sig = json_object_get(r, "ci_excludes_zero");
    int crossed = greater ? (eq ? change >= lim : change > lim) : (eq ? change <= lim : change < lim);
    /* A tested metric trips only when its interval excludes 0 (the gate's
     * limit is the practical floor); a run-level figure on the change alone. */
    int trips = crossed && (json_is_null(sig) || json_is_true(sig));
    snprintf(msg, cap, "%s: A %.4g, B %.4g, change %+.4g%s%s -> %s", expr, a, b, change, pct ? "%" : "",
             json_is_null(sig) ? " (no test)" : json_is_true(sig) ? " (interval excludes 0)"
                                                                  : " (interval includes 0)",
             trips ? "FAIL" : "pass");
    return trips;
}

void sa_compare_render_text(json_t *cmp, FILE *f)
{
    fprintf(f, "servprof compare\n  A: %s\n  B: %s\n", json_string_value(json_object_get(cmp, "a")),
            json_string_value(json_object_get(cmp, "b")));
    json_t *t = json_object_get(cmp, "test");
    fprintf(f, "significance: bootstrap %.0f%% interval of B - A (%lld resamples) excluding 0, and |change| >= "
               "%.0f%%\nrows by share of the change in mean e2e (%+.2f ms)\n\n",
            100 * json_number_value(json_object_get(t, "confidence")),
            (long long)json_integer_value(json_object_get(t, "resamples")),
            100 * json_number_value(json_object_get(t, "min_effect")),
            json_number_value(json_object_get(cmp, "e2e_mean_change_ms")));
    fprintf(f, "  %-34s %12s %12s %9s %23s %4s %7s\n", "metric", "A", "B", "change", "interval of B-A", "sig",
            "share");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(cmp, "rows"), i, r) {
        fprintf(f, "  %-34s", json_string_value(json_object_get(r, "metric")));
        static const char *const ks[] = {"a", "b"};
        for (int k = 0; k < 2; k++) {
            json_t *v = json_object_get(r, ks[k]);
            if (json_is_number(v))
                fprintf(f, " %12.4g", json_number_value(v));
            else
                fprintf(f, " %12s", "-");
        }
        json_t *c = json_object_get(r, "change_pct");
        if (json_is_number(c))
            fprintf(f, " %+8.1f%%", json_number_value(c));
        else
            fprintf(f, " %9s", "-");
        json_t *lo = json_object_get(r, "ci_low"), *hi = json_object_get(r, "ci_high");
        if (json_is_number(lo))
            fprintf(f, " [%10.3g,%10.3g]", json_number_value(lo), json_number_value(hi));
        else
            fprintf(f, " %23s", "");
        json_t *s = json_object_get(r, "significant");
        fprintf(f, " %4s", json_is_null(s) ? "" : json_is_true(s) ? "yes" : "no");
        json_t *sh = json_object_get(r, "share_of_e2e_change");
        if (json_is_number(sh))
            fprintf(f, " %6.0f%%", 100 * json_number_value(sh));
        fputc('\n', f);
    }
    static const char *const only[2] = {"spans_only_in_a", "spans_only_in_b"};
    for (int k = 0; k < 2; k++) {
        json_t *a = json_object_get(cmp, only[k]);
        if (!json_array_size(a))
            continue;
        fprintf(f, "\nspans only in %s:", k ? "B" : "A");
        json_array_foreach(a, i, r) fprintf(f, " %s", json_string_value(r));
        fputc('\n', f);
    }
}
