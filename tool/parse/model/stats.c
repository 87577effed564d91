/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.c — percentiles over kept values: sorted once, linear
 * interpolation between closest ranks (the same as numpy's default), so the
 * figures match what a user computes from the CSV.
 */
#include <math.h>
#include <stdlib.h>

#include "stats.h"
#include "xalloc.h"

typedef struct series { double *v; long long n, cap; } series;
struct prs_stats { series *s; int n; };

prs_stats *prs_stats_new(int n)
{
    prs_stats *s = prs_xcalloc(1, sizeof *s);
    s->s = prs_xcalloc((size_t)n, sizeof *s->s);
    s->n = n;
    return s;
}

void prs_stats_add(prs_stats *st, int i, double v)
{
    if (!st || i < 0 || i >= st->n || isnan(v))
        return;
    series *s = &st->s[i];
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = prs_xrealloc(s->v, (size_t)s->cap * sizeof *s->v);
    }
    s->v[s->n++] = v;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

long long prs_sort_values(double *v, long long n)
{
    long long o = 0;
    for (long long i = 0; i < n; i++)
        if (!isnan(v[i]))
            v[o++] = v[i];
    if (o > 1)
        qsort(v, (size_t)o, sizeof *v, cmp);
    return o;
}

double prs_percentile(const double *v, long long n, double p)
{
    if (n <= 0)
        return NAN;
    double rank = p / 100.0 * (double)(n - 1);
    long long lo = (long long)floor(rank);
    long long hi = lo + 1 < n ? lo + 1 : lo;
    double f = rank - (double)lo;
    return v[lo] + (v[hi] - v[lo]) * f;
}

void prs_stats_get(prs_stats *st, int i, prs_summary_row *o)
{
    series *s = &st->s[i];
    o->n = prs_sort_values(s->v, s->n);
    s->n = o->n;
    o->total = 0;
    for (long long k = 0; k < o->n; k++)
        o->total += s->v[k];
    o->min = o->n ? s->v[0] : NAN;
    o->max = o->n ? s->v[o->n - 1] : NAN;
    o->avg = o->n ? o->total / (double)o->n : NAN;
    o->p50 = prs_percentile(s->v, o->n, 50);
    o->p90 = prs_percentile(s->v, o->n, 90);
    o->p99 = prs_percentile(s->v, o->n, 99);
}

void prs_stats_free(prs_stats *st)
{
    if (!st)
        return;
    for (int i = 0; i < st->n; i++)
        free(st->s[i].v);
    free(st->s);
    free(st);
}
