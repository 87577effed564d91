/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.h — series of durations/values kept for percentiles (stats.c).
 */
#ifndef SERVPROF_PARSE_STATS_H
#define SERVPROF_PARSE_STATS_H

typedef struct prs_stats prs_stats;
typedef struct prs_summary_row {
    long long n;
    double min, avg, p50, p90, p99, max, total;
} prs_summary_row;

prs_stats *prs_stats_new(int nseries);
void prs_stats_add(prs_stats *s, int series, double v);
/* Sorts the series and fills out (n = 0 when empty). */
void prs_stats_get(prs_stats *s, int series, prs_summary_row *out);
void prs_stats_free(prs_stats *s);
/* Percentile p (0..100) of sorted v[0..n), linear interpolation; NAN if n == 0. */
double prs_percentile(const double *sorted, long long n, double p);
/* Sorts v in place, dropping NANs; returns the new count. */
long long prs_sort_values(double *v, long long n);

#endif
