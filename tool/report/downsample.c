/* SPDX-License-Identifier: Apache-2.0 */
/*
 * downsample.c — series sets and their min/max-per-bucket reduction.
 *
 * A 5 M-record run has ~10^5 scheduler steps; drawing them all would make the
 * page megabytes larger and slower to open, yet a chart 2000 pixels wide can
 * show only one vertical stroke per pixel column: the extremes of the values
 * falling in it. So (as Perfetto does for long tracks) each time bucket of
 * more than two rows keeps two: the minimum of every column at the bucket's
 * first time and the maximum at its last time. Spikes survive (a one-step
 * stall still shows), the page stays a few hundred kilobytes.
 *
 * Columns of a set share its time axis (uPlot draws a chart from one x array),
 * so the bucket's two rows carry the min and max of each column independently.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

rpt_series *rpt_series_new(int ncols)
{
    rpt_series *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->ncols = ncols;
    s->v = calloc((size_t)(ncols > 0 ? ncols : 1), sizeof *s->v);
    if (!s->v) {
        free(s);
        return NULL;
    }
    return s;
}

void rpt_series_free(rpt_series *s)
{
    if (!s)
        return;
    for (int c = 0; c < s->ncols; c++)
        free(s->v[c]);
    free(s->v);
    free(s->t);
    free(s);
}

static int grow(rpt_series *s, size_t need)
{
    if (need <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap * 2 : 256;
    while (cap < need)
        cap *= 2;
    double *t = realloc(s->t, cap * sizeof *t);
    if (!t)
        return -1;
    s->t = t;
    for (int c = 0; c < s->ncols; c++) {
        double *v = realloc(s->v[c], cap * sizeof *v);
        if (!v)
            return -1;
        s->v[c] = v;
    }
    s->cap = cap;
    return 0;
}

int rpt_series_add(rpt_series *s, double t, const double *vals)
{
    if (grow(s, s->n + 1) != 0)
        return -1;
    s->t[s->n] = t;
    for (int c = 0; c < s->ncols; c++)
        s->v[c][s->n] = vals[c];
    s->n++;
    return 0;
}

/* NaN-aware extremes: a NaN never wins, and a column that is NaN all over the
 * bucket stays NaN. */
static double fmin_nan(double a, double b) { return isnan(a) ? b : isnan(b) ? a : (b < a ? b : a); }
static double fmax_nan(double a, double b) { return isnan(a) ? b : isnan(b) ? a : (b > a ? b : a); }

/* Appends the reduction of rows [from, to) of s to out. */
static int reduce_bucket(const rpt_series *s, size_t from, size_t to, rpt_series *out, double *lo, double *hi)
{
    if (to - from <= 2) {
        for (size_t i = from; i < to; i++) {
            for (int c = 0; c < s->ncols; c++)
                lo[c] = s->v[c][i];
            if (rpt_series_add(out, s->t[i], lo) != 0)
                return -1;
        }
        return 0;
    }
    for (int c = 0; c < s->ncols; c++)
        lo[c] = hi[c] = NAN;
    for (size_t i = from; i < to; i++)
        for (int c = 0; c < s->ncols; c++) {
            lo[c] = fmin_nan(lo[c], s->v[c][i]);
            hi[c] = fmax_nan(hi[c], s->v[c][i]);
        }
    if (rpt_series_add(out, s->t[from], lo) != 0)
        return -1;
    return rpt_series_add(out, s->t[to - 1], hi);
}

rpt_series *rpt_downsample(const rpt_series *s, int buckets)
{
    rpt_series *out = rpt_series_new(s->ncols);
    if (!out)
        return NULL;
    if (buckets < 1)
        buckets = 1;
    int keep = s->n <= 2 * (size_t)buckets;
    double *lo = malloc((size_t)(s->ncols > 0 ? s->ncols : 1) * sizeof *lo);
    double *hi = malloc((size_t)(s->ncols > 0 ? s->ncols : 1) * sizeof *hi);
    if (!lo || !hi)
        goto fail;
    if (keep || s->n == 0) {
        for (size_t i = 0; i < s->n; i++) {
            for (int c = 0; c < s->ncols; c++)
                lo[c] = s->v[c][i];
            if (rpt_series_add(out, s->t[i], lo) != 0)
                goto fail;
        }
    } else {
        double t0 = s->t[0], span = s->t[s->n - 1] - t0;
        size_t from = 0;
        for (size_t i = 1; i <= s->n; i++) {
            /* Bucket of row i; rows are in time order, so buckets are runs. */
            int same = 0;
            if (i < s->n && span > 0) {
                long b0 = (long)((s->t[from] - t0) / span * buckets);
                long b1 = (long)((s->t[i] - t0) / span * buckets);
                same = b0 == b1 || (b1 >= buckets && b0 >= buckets - 1);
            } else if (i < s->n) {
                same = 1;
            }
            if (same)
                continue;
            if (reduce_bucket(s, from, i, out, lo, hi) != 0)
                goto fail;
            from = i;
        }
    }
    free(lo);
    free(hi);
    return out;
fail:
    free(lo);
    free(hi);
    rpt_series_free(out);
    return NULL;
}

/* A number rounded to `digits` significant digits, as jansson would print it
 * at that precision (jansson's own JSON_REAL_PRECISION applies to the whole
 * document; times need more digits than values). */
static json_t *rounded(double v, int digits)
{
    if (!isfinite(v))
        return json_null();
    if (v == floor(v) && fabs(v) < 9e15)
        return json_integer((json_int_t)v);
    char b[40];
    snprintf(b, sizeof b, "%.*g", digits, v);
    return json_real(strtod(b, NULL));
}

json_t *rpt_series_json(const rpt_series *s, const char *const *names, int digits)
{
    json_t *o = json_object();
    json_t *t = json_array();
    if (!o || !t)
        goto fail;
    /* Times to the microsecond, the precision of profiler.db's (ms) columns
     * (their last digits are the binary noise of ms since the epoch). */
    for (size_t i = 0; i < s->n; i++)
        if (json_array_append_new(t, rounded(round(s->t[i] * 1e6) / 1e6, 9)) != 0)
            goto fail;
    if (json_object_set_new(o, "t", t) != 0) {
        t = NULL;
        goto fail;
    }
    t = NULL;
    for (int c = 0; c < s->ncols; c++) {
        json_t *a = json_array();
        if (!a || json_object_set_new(o, names[c], a) != 0)
            goto fail;
        for (size_t i = 0; i < s->n; i++)
            if (json_array_append_new(a, rounded(s->v[c][i], digits)) != 0)
                goto fail;
    }
    return o;
fail:
    json_decref(t);
    json_decref(o);
    return NULL;
}
