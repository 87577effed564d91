/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_rows.c — turns report rows into the page's charts data.
 *
 * The rows are the parser's own: `request`, `batch`, `forward` and `counter`
 * rows with profiler.db's column names, either handed over by the parser's tap
 * while it runs (raw stores: the same parse that analyze runs, no file
 * written; report_tap.c) or read back from a profiler.db (report_db.c). One
 * consumer for both, columns found by name, so the two inputs give the same
 * page (tested).
 *
 *   batch    scheduler steps (BatchSchedule / batchFrameworkProcessing; when a
 *            run has none, the execution steps): batch size, scheduled tokens
 *            (prefill / decode), KV usage at the step
 *   forward  device steps: duration and the gap to the next one
 *   counter  KV cache usage and blocks, queue sizes, host CPU and memory,
 *            the process's CPU and RSS, GPU memory and utilization: one group
 *            per counter name, one column per (process, series); per-core CPU
 *            counters are left out (the machine's total is there)
 *   request  the latency CDFs (TTFT, TPOT, e2e, queue wait) and the slowest
 *            requests by e2e (kept as a top-RPT_SLOWEST list while rows come)
 *
 * Rows arrive roughly in time order (the parser emits some late); each series
 * is sorted by time, then reduced by downsample.c. Times in the page are
 * seconds from the run's start t0 (the earliest time of any of these rows,
 * whole microseconds), so two runs overlay with --compare. Memory: the kept
 * columns of every step, forward and counter row (~40 bytes each) and four
 * numbers per request, until rpt_rows_json.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colmap.h"
#include "repcols.h"
#include "report.h"

/* Column names this file reads, per table (the parser's repcols.h). */
/* RQ_COMPLETE is read, not shown: it is last, and the slowest rows' JSON
 * stops before it. */
enum { RQ_RID, RQ_START, RQ_E2E, RQ_TTFT, RQ_QUEUE, RQ_PREFILL, RQ_DECODE, RQ_IN, RQ_OUT, RQ_PREEMPT, RQ_TPOT,
       RQ_COMPLETE, RQ_N };
static const char *const rq_cols[RQ_N] = {
    PRS_RQ_HTTP_RID, PRS_RQ_START_MS, PRS_RQ_EXEC_MS, PRS_RQ_TTFT_MS, PRS_RQ_QUEUE_MS,
    PRS_RQ_PREFILL_MS, PRS_RQ_DECODE_MS, PRS_RQ_RECV_TOKENS, PRS_RQ_REPLY_TOKENS, PRS_RQ_PREEMPTED,
    PRS_RQ_TPOT_MS, PRS_RQ_COMPLETE};
static const char *const rq_keys[RQ_COMPLETE] = {"rid", "start_s", "e2e_ms", "ttft_ms", "queue_ms", "prefill_ms",
                                                 "decode_ms", "in_tokens", "out_tokens", "preempted", "tpot_ms"};
enum { BT_NAME, BT_START, BT_BS, BT_PBS, BT_DBS, BT_TOK, BT_PTOK, BT_DTOK, BT_KV, BT_N };
static const char *const bt_cols[BT_N] = {
    PRS_BT_NAME, PRS_BT_START_MS, PRS_BT_SIZE, PRS_BT_PREFILL_SIZE, PRS_BT_DECODE_SIZE,
    PRS_BT_TOTAL_TOK, PRS_BT_PREFILL_TOK, PRS_BT_DECODE_TOK, PRS_BT_KV_USAGE};
enum { FW_START, FW_DUR, FW_GAP, FW_BS, FW_N };
static const char *const fw_cols[FW_N] = {PRS_FW_START_MS, PRS_FW_DUR_MS, PRS_FW_BUBBLE_MS, PRS_FW_SIZE};
enum { CT_NAME, CT_PID, CT_TS, CT_SERIES, CT_VALUE, CT_N };
static const char *const ct_cols[CT_N] = {PRS_CT_NAME, PRS_CT_PID, PRS_CT_TIMESTAMP, PRS_CT_SERIES, PRS_CT_VALUE};

#define MAXCOLS PRS_COLMAP_MAX
typedef prs_colmap colmap;

typedef struct sample {
    double t;    /* ms since the epoch (counters: ns / 1e6) */
    int group;   /* counters: name index; steps: 1 schedule, 0 execution */
    int col;     /* counters: column index within the group */
    double v[7];
} sample;

typedef struct samples {
    sample *s;
    size_t n, cap;
} samples;

typedef struct cgroup {
    char *name;
    int ncols;
    long long pid[MAXCOLS];
    char *series[MAXCOLS];
} cgroup;

typedef struct req {
    char *rid;
    double v[RQ_N];
} req;

struct rpt_rows {
    rpt_moe *moe;   /* report_moe.c; NULL until a MoE row comes */
    colmap rq, bt, fw, ct;
    samples steps, fwd, ctr;
    cgroup *groups;
    int ngroups;
    double *cdf[4]; /* ttft, tpot, e2e, queue */
    size_t ncdf[4], capcdf[4];
    req slow[RPT_SLOWEST]; /* by e2e, slowest first */
    int nslow;
    long long requests;
    double t0_ms, t1_ms;
    int oom;
};

rpt_rows *rpt_rows_new(void)
{
    rpt_rows *r = calloc(1, sizeof *r);
    if (r)
        rpt_rows_reset(r);
    return r;
}

/* Frees what r owns; r itself stays. */
static void rows_release(rpt_rows *r)
{
    rpt_moe_free(r->moe);
    free(r->steps.s);
    free(r->fwd.s);
    free(r->ctr.s);
    for (int g = 0; g < r->ngroups; g++) {
        free(r->groups[g].name);
        for (int c = 0; c < r->groups[g].ncols; c++)
            free(r->groups[g].series[c]);
    }
    free(r->groups);
    for (int k = 0; k < 4; k++)
        free(r->cdf[k]);
    for (int i = 0; i < r->nslow; i++)
        free(r->slow[i].rid);
}

void rpt_rows_free(rpt_rows *r)
{
    if (!r)
        return;
    rows_release(r);
    free(r);
}

void rpt_rows_reset(rpt_rows *r)
{
    rows_release(r);
    memset(r, 0, sizeof *r);
    r->t0_ms = INFINITY;
    r->t1_ms = -INFINITY;
}

static sample *push(rpt_rows *r, samples *a, double t)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 1024;
        sample *s = realloc(a->s, cap * sizeof *s);
        if (!s) {
            r->oom = 1;
            return NULL;
        }
        a->s = s;
        a->cap = cap;
    }
    if (t < r->t0_ms)
        r->t0_ms = t;
    if (t > r->t1_ms)
        r->t1_ms = t;
    sample *s = &a->s[a->n++];
    memset(s, 0, sizeof *s);
    s->t = t;
    return s;
}

static int is_name(const char *s, int n, const char *lit)
{
    return (size_t)n == strlen(lit) && memcmp(s, lit, (size_t)n) == 0;
}

static void add_step(rpt_rows *r, const prs_val *v)
{
    int n;
    const char *name = prs_colmap_text(v, &r->bt, BT_NAME, &n);
    int sched = is_name(name, n, "BatchSchedule") || is_name(name, n, "batchFrameworkProcessing");
    int exec = is_name(name, n, "modelExec") || is_name(name, n, "modelRunnerExec") || is_name(name, n, "Execute");
    double t = prs_colmap_num(v, &r->bt, BT_START);
    if ((!sched && !exec) || isnan(t))
        return;
    sample *s = push(r, &r->steps, t);
    if (!s)
        return;
    s->group = sched;
    for (int k = 0; k < 7; k++)
        s->v[k] = prs_colmap_num(v, &r->bt, BT_BS + k);
    s->v[6] *= 100; /* KV usage as % */
}

static void add_forward(rpt_rows *r, const prs_val *v)
{
    double t = prs_colmap_num(v, &r->fw, FW_START);
    if (isnan(t))
        return;
    sample *s = push(r, &r->fwd, t);
    if (!s)
        return;
    for (int k = 0; k < 3; k++)
        s->v[k] = prs_colmap_num(v, &r->fw, FW_DUR + k);
    double end = t + s->v[0];
    if (end > r->t1_ms)
        r->t1_ms = end;
}

/* The group of a counter name (made on first sight); -1 when left out. */
static int group_of(rpt_rows *r, const char *name, int n)
{
    for (int g = 0; g < r->ngroups; g++)
        if (is_name(name, n, r->groups[g].name))
            return g;
    char b[128];
    snprintf(b, sizeof b, "%.*s", n, name);
    int core;
    char tail;
    if (sscanf(b, "host CPU %d%c", &core, &tail) == 1)
        return -1;
    cgroup *gs = realloc(r->groups, (size_t)(r->ngroups + 1) * sizeof *gs);
    if (!gs) {
        r->oom = 1;
        return -1;
    }
    r->groups = gs;
    memset(&gs[r->ngroups], 0, sizeof *gs);
    gs[r->ngroups].name = strdup(b);
    return r->ngroups++;
}

static int column_of(rpt_rows *r, cgroup *g, long long pid, const char *series, int n)
{
    for (int c = 0; c < g->ncols; c++)
        if (g->pid[c] == pid && is_name(series, n, g->series[c]))
            return c;
    if (g->ncols == MAXCOLS)
        return -1;
    g->pid[g->ncols] = pid;
    g->series[g->ncols] = strndup(series, (size_t)n);
    if (!g->series[g->ncols]) {
        r->oom = 1;
        return -1;
    }
    return g->ncols++;
}

static void add_counter(rpt_rows *r, const prs_val *v)
{
    int nn, ns;
    const char *name = prs_colmap_text(v, &r->ct, CT_NAME, &nn);
    const char *series = prs_colmap_text(v, &r->ct, CT_SERIES, &ns);
    double ts = prs_colmap_num(v, &r->ct, CT_TS), val = prs_colmap_num(v, &r->ct, CT_VALUE), pid = prs_colmap_num(v, &r->ct, CT_PID);
    if (isnan(ts) || isnan(val))
        return;
    int g = group_of(r, name, nn);
    int c = g < 0 ? -1 : column_of(r, &r->groups[g], isnan(pid) ? 0 : (long long)pid, ns ? series : "value",
                                   ns ? ns : 5);
    if (c < 0)
        return;
    sample *s = push(r, &r->ctr, ts / 1e6);
    if (!s)
        return;
    s->group = g;
    s->col = c;
    s->v[0] = val;
}

static void add_cdf(rpt_rows *r, int k, double v)
{
    if (isnan(v))
        return;
    if (r->ncdf[k] == r->capcdf[k]) {
        size_t cap = r->capcdf[k] ? r->capcdf[k] * 2 : 1024;
        double *a = realloc(r->cdf[k], cap * sizeof *a);
        if (!a) {
            r->oom = 1;
            return;
        }
        r->cdf[k] = a;
        r->capcdf[k] = cap;
    }
    r->cdf[k][r->ncdf[k]++] = v;
}

/* Keeps the RPT_SLOWEST longest requests, slowest first. */
static void add_slow(rpt_rows *r, const prs_val *v, const double *vals)
{
    double e2e = vals[RQ_E2E];
    if (isnan(e2e) || (r->nslow == RPT_SLOWEST && e2e <= r->slow[RPT_SLOWEST - 1].v[RQ_E2E]))
        return;
    int n;
    const char *rid = prs_colmap_text(v, &r->rq, RQ_RID, &n);
    char *copy = strndup(rid, (size_t)n);
    if (!copy) {
        r->oom = 1;
        return;
    }
    int at;
    if (r->nslow == RPT_SLOWEST) { /* full: the fastest kept one makes room */
        at = RPT_SLOWEST - 1;
        free(r->slow[at].rid);
    } else {
        at = r->nslow++;
    }
    while (at > 0 && r->slow[at - 1].v[RQ_E2E] < e2e) {
        r->slow[at] = r->slow[at - 1];
        at--;
    }
    r->slow[at].rid = copy;
    memcpy(r->slow[at].v, vals, sizeof r->slow[at].v);
}

static void add_request(rpt_rows *r, const prs_val *v)
{
    double vals[RQ_N];
    for (int k = 0; k < RQ_N; k++)
        vals[k] = k == RQ_RID ? NAN : prs_colmap_num(v, &r->rq, k);
    r->requests++;
    if (!isnan(vals[RQ_START])) {
        if (vals[RQ_START] < r->t0_ms)
            r->t0_ms = vals[RQ_START];
        double end = vals[RQ_START] + (isnan(vals[RQ_E2E]) ? 0 : vals[RQ_E2E]);
        if (end > r->t1_ms)
            r->t1_ms = end;
    }
    /* The CDFs count complete requests only, as analyze's latency figures
     * and the headline do (a request the collection window cut has a
     * partial e2e); without a `complete` column, every request with an end. */
    int complete = isnan(vals[RQ_COMPLETE]) ? !isnan(vals[RQ_E2E]) : vals[RQ_COMPLETE] != 0;
    if (complete) {
        add_cdf(r, 0, vals[RQ_TTFT]);
        add_cdf(r, 1, vals[RQ_TPOT]);
        add_cdf(r, 2, vals[RQ_E2E]);
        add_cdf(r, 3, vals[RQ_QUEUE]);
    }
    add_slow(r, v, vals);
}

void rpt_rows_add(rpt_rows *r, const char *key, const prs_col *cols, int ncols, const prs_val *v)
{
    if (!key || ncols > MAXCOLS * 2)
        return;
    if (!strcmp(key, PRS_T_BATCH)) {
        prs_colmap_fit(&r->bt, cols, ncols, bt_cols, BT_N);
        add_step(r, v);
    } else if (!strcmp(key, PRS_T_FORWARD)) {
        prs_colmap_fit(&r->fw, cols, ncols, fw_cols, FW_N);
        add_forward(r, v);
    } else if (!strcmp(key, PRS_T_COUNTER)) {
        prs_colmap_fit(&r->ct, cols, ncols, ct_cols, CT_N);
        add_counter(r, v);
    } else if (!strcmp(key, PRS_T_REQUEST)) {
        prs_colmap_fit(&r->rq, cols, ncols, rq_cols, RQ_N);
        add_request(r, v);
    } else if (!strcmp(key, PRS_T_MOE_RANK) || !strcmp(key, PRS_T_EPLB)) {
        if (!r->moe && !(r->moe = rpt_moe_new()))
            r->oom = 1;
        else
            rpt_moe_add(r->moe, key, cols, ncols, v);
    }
}

/* ------------------------------------------------------------ to JSON */
static int cmp_sample(const void *a, const void *b)
{
    const sample *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Samples (those of group `group` when group >= 0) as a reduced series set. */
static json_t *series_json(rpt_rows *r, samples *a, int group, int ncols, const char *const *names, int buckets)
{
    rpt_series *s = rpt_series_new(ncols);
    json_t *out = NULL;
    for (size_t i = 0; s && i < a->n; i++)
        if ((group < 0 || a->s[i].group == group) && rpt_series_add(s, (a->s[i].t - r->t0_ms) / 1e3, a->s[i].v) != 0)
            goto done;
    rpt_series *d = s ? rpt_downsample(s, buckets) : NULL;
    out = d ? rpt_series_json(d, names, 6) : NULL;
    rpt_series_free(d);
done:
    rpt_series_free(s);
    return out;
}

static json_t *steps_json(rpt_rows *r, int buckets)
{
    static const char *const names[] = {"batch_size", "prefill_batch", "decode_batch", "tokens",
                                        "prefill_tokens", "decode_tokens", "kv_usage"};
    if (r->steps.n == 0)
        return json_null();
    int sched = 0;
    for (size_t i = 0; i < r->steps.n && !sched; i++)
        sched = r->steps.s[i].group;
    json_t *j = series_json(r, &r->steps, sched, 7, names, buckets);
    if (j)
        json_object_set_new(j, "source", json_string(sched ? "schedule steps" : "execution steps"));
    return j;
}

/* One counter group: rows at one timestamp merged into one row (a queue
 * event carries waiting, running and swapped). */
static json_t *counter_json(rpt_rows *r, int g, int buckets)
{
    cgroup *cg = &r->groups[g];
    char *names[MAXCOLS];
    int npids = 0;
    for (int c = 0; c < cg->ncols; c++) {
        int seen = 0;
        for (int k = 0; k < c; k++)
            seen |= cg->pid[k] == cg->pid[c];
        npids += !seen;
    }
    /* Several processes: a column names its process ("used · pid 2"). */
    for (int c = 0; c < cg->ncols; c++) {
        char b[256];
        if (npids > 1)
            snprintf(b, sizeof b, "%s · pid %lld", cg->series[c], cg->pid[c]);
        else
            snprintf(b, sizeof b, "%s", cg->series[c]);
        names[c] = strdup(b);
    }
    /* Columns in a fixed order (by pid, then series), whichever row came first. */
    int order[MAXCOLS], pos[MAXCOLS];
    for (int c = 0; c < cg->ncols; c++)
        order[c] = c;
    for (int i = 1; i < cg->ncols; i++)
        for (int k = i; k > 0; k--) {
            int a = order[k - 1], b = order[k];
            if (cg->pid[a] < cg->pid[b] || (cg->pid[a] == cg->pid[b] && strcmp(cg->series[a], cg->series[b]) <= 0))
                break;
            order[k - 1] = b;
            order[k] = a;
        }
    const char *sorted[MAXCOLS];
    for (int k = 0; k < cg->ncols; k++) {
        pos[order[k]] = k;
        sorted[k] = names[order[k]];
    }
    rpt_series *s = rpt_series_new(cg->ncols);
    double row[MAXCOLS];
    double cur = NAN;
    int have = 0;
    json_t *out = NULL;
    for (int c = 0; c < cg->ncols; c++)
        row[c] = NAN;
    for (size_t i = 0; s && i <= r->ctr.n; i++) {
        const sample *x = i < r->ctr.n ? &r->ctr.s[i] : NULL;
        if (x && x->group != g)
            continue;
        if (have && (!x || x->t != cur)) {
            if (rpt_series_add(s, (cur - r->t0_ms) / 1e3, row) != 0)
                goto done;
            for (int c = 0; c < cg->ncols; c++)
                row[c] = NAN;
            have = 0;
        }
        if (x) {
            cur = x->t;
            row[pos[x->col]] = x->v[0];
            have = 1;
        }
    }
    rpt_series *d = s ? rpt_downsample(s, buckets) : NULL;
    json_t *data = d ? rpt_series_json(d, sorted, 6) : NULL;
    rpt_series_free(d);
    json_t *cols = json_array();
    for (int k = 0; k < cg->ncols; k++)
        json_array_append_new(cols, json_string(sorted[k]));
    out = data ? json_pack("{s:s, s:o, s:o}", "name", cg->name, "cols", cols, "data", data) : NULL;
    if (!out)
        json_decref(cols);
done:
    rpt_series_free(s);
    for (int c = 0; c < cg->ncols; c++)
        free(names[c]);
    return out;
}

static int cmp_group(const void *a, const void *b, void *ctx)
{
    const cgroup *g = ctx;
    return strcmp(g[*(const int *)a].name, g[*(const int *)b].name);
}

static json_t *counters_json(rpt_rows *r, int buckets)
{
    json_t *arr = json_array();
    int *idx = malloc((size_t)(r->ngroups + 1) * sizeof *idx);
    if (!arr || !idx)
        goto fail;
    for (int g = 0; g < r->ngroups; g++)
        idx[g] = g;
    if (r->ngroups)
        qsort_r(idx, (size_t)r->ngroups, sizeof *idx, cmp_group, r->groups);
    for (int k = 0; k < r->ngroups; k++) {
        json_t *c = counter_json(r, idx[k], buckets);
        if (!c || json_array_append_new(arr, c) != 0)
            goto fail;
    }
    free(idx);
    return arr;
fail:
    free(idx);
    json_decref(arr);
    return NULL;
}

/* A CDF: RPT_CDF_POINTS evenly spaced ranks {x: value, p: share ≤ x, n}. */
static json_t *cdf_json(double *v, size_t n)
{
    if (n)
        qsort(v, n, sizeof *v, cmp_double);
    rpt_series *s = rpt_series_new(1);
    size_t pts = n < RPT_CDF_POINTS ? n : RPT_CDF_POINTS;
    for (size_t k = 0; s && k < pts; k++) {
        size_t i = pts > 1 ? (size_t)((double)k * (double)(n - 1) / (double)(pts - 1) + 0.5) : 0;
        double p = (double)(i + 1) / (double)n;
        rpt_series_add(s, v[i], &p);
    }
    static const char *const nm[] = {"p"};
    json_t *j = s ? rpt_series_json(s, nm, 6) : NULL;
    if (j) {
        /* A CDF's axis is the value, not time: "x" instead of "t". */
        json_object_set(j, "x", json_object_get(j, "t"));
        json_object_del(j, "t");
        json_object_set_new(j, "n", json_integer((json_int_t)n));
    }
    rpt_series_free(s);
    return j;
}

static json_t *slowest_json(rpt_rows *r)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < r->nslow; i++) {
        json_t *o = json_object();
        for (int k = 0; k < RQ_COMPLETE; k++) {
            double x = r->slow[i].v[k];
            json_t *v;
            if (k == RQ_RID)
                v = json_string(r->slow[i].rid);
            else if (isnan(x))
                v = json_null();
            else if (k == RQ_START)
                v = json_real(round(x - r->t0_ms) / 1e3); /* seconds from t0, to the ms */
            else
                v = json_real(round(x * 1e3) / 1e3);
            json_object_set_new(o, rq_keys[k], v);
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

json_t *rpt_rows_json(rpt_rows *r, int buckets)
{
    if (r->oom) {
        fprintf(stderr, "servprof report: out of memory collecting the charts' rows\n");
        return NULL;
    }
    if (!isfinite(r->t0_ms))
        r->t0_ms = r->t1_ms = 0;
    r->t0_ms = (double)llround(r->t0_ms * 1e3) / 1e3; /* the page's origin is whole microseconds */
    samples *all[] = {&r->steps, &r->fwd, &r->ctr};
    for (int k = 0; k < 3; k++)
        if (all[k]->n) /* qsort's base may not be NULL, even for 0 rows */
            qsort(all[k]->s, all[k]->n, sizeof *all[k]->s, cmp_sample);
    static const char *const fw_names[] = {"dur_ms", "gap_ms", "batch_size"};
    json_t *steps = steps_json(r, buckets);
    json_t *fwd = r->fwd.n ? series_json(r, &r->fwd, -1, 3, fw_names, buckets) : json_null();
    json_t *ctr = counters_json(r, buckets);
    json_t *cdf = json_object();
    static const char *const cdf_names[] = {"ttft", "tpot", "e2e", "queue"};
    for (int k = 0; cdf && k < 4; k++)
        json_object_set_new(cdf, cdf_names[k], cdf_json(r->cdf[k], r->ncdf[k]));
    json_t *slow = slowest_json(r);
    json_t *moe = rpt_moe_json(r->moe, r->t0_ms, buckets);
    if (!steps || !fwd || !ctr || !cdf || !slow || !moe) {
        json_decref(moe);
        json_decref(steps);
        json_decref(fwd);
        json_decref(ctr);
        json_decref(cdf);
        json_decref(slow);
        fprintf(stderr, "servprof report: out of memory building the charts' data\n");
        return NULL;
    }
    /* The origin as integer microseconds: the page's numbers have 9 digits. */
    return json_pack("{s:I, s:f, s:o, s:o, s:o, s:o, s:o, s:I, s:o}", "t0_us", (json_int_t)llround(r->t0_ms * 1e3),
                     "duration_s", (r->t1_ms - r->t0_ms) / 1e3, "steps", steps, "forward", fwd, "counters", ctr,
                     "cdf", cdf, "slowest", slow, "requests", (json_int_t)r->requests, "moe", moe);
}
