/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.h — series of durations/values kept for percentiles (stats.c).
 */
#ifndef SERVPROF_PARSE_STATS_H
#define SERVPROF_PARSE_STATS_H

typedef struct spp_stats spp_stats;
typedef struct spp_summary_row {
    long long n;
    double min, avg, p50, p90, p99, max, total;
} spp_summary_row;

spp_stats *spp_stats_new(int nseries);
void spp_stats_add(spp_stats *s, int series, double v);
/* Sorts the series and fills out (n = 0 when empty). */
void spp_stats_get(spp_stats *s, int series, spp_summary_row *out);
void spp_stats_free(spp_stats *s);
/* Percentile p (0..100) of sorted v[0..n), linear interpolation; NAN if n == 0. */
double spp_percentile(const double *sorted, long long n, double p);
/* Sorts v in place, dropping NANs; returns the new count. */
long long spp_sort_values(double *v, long long n);

#endif
