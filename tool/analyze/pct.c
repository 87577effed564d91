/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pct.c — percentile objects (n, mean, min, P50, P90, P99, max) and the
 * JSON numbers of the analyze document. Percentiles use numpy's default
 * rule (linear interpolation between closest ranks), like the reference's
 * summaries and `servprof parse`'s.
 */
#include <math.h>
#include <stdlib.h>

#include "profile.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sa_pct_at(const double *sorted, long long n, double p)
{
    if (n <= 0)
        return NAN;
    double pos = p / 100.0 * (double)(n - 1);
    long long lo = (long long)floor(pos);
    if (lo >= n - 1)
        return sorted[n - 1];
    double frac = pos - (double)lo;
    return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}

sa_pct sa_pct_of(double *v, long long n)
{
    long long k = 0;
    double sum = 0;
    for (long long i = 0; i < n; i++)
        if (!isnan(v[i])) {
            sum += v[i];
            v[k++] = v[i];
        }
    sa_pct s = {.n = k};
    if (k == 0) {
        s.mean = s.min = s.p50 = s.p90 = s.p99 = s.max = NAN;
        return s;
    }
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    s.mean = sum / (double)k;
    s.min = v[0];
    s.max = v[k - 1];
    s.p50 = sa_pct_at(v, k, 50);
    s.p90 = sa_pct_at(v, k, 90);
    s.p99 = sa_pct_at(v, k, 99);
    return s;
}

json_t *sa_num(double v)
{
    if (isnan(v) || isinf(v))
        return json_null();
    /* Six significant decimals are plenty and keep the document small. */
    return json_real(round(v * 1e6) / 1e6);
}

json_t *sa_pct_json(const sa_pct *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "n", json_integer(s->n));
    json_object_set_new(o, "mean", sa_num(s->mean));
    json_object_set_new(o, "p50", sa_num(s->p50));
    json_object_set_new(o, "p90", sa_num(s->p90));
    json_object_set_new(o, "p99", sa_num(s->p99));
    json_object_set_new(o, "max", sa_num(s->max));
    json_object_set_new(o, "min", sa_num(s->min));
    return o;
}
