/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.h — percentiles and the load generator's summary (human table and
 * one JSON line for scripts). Pure functions; thread-safe.
 */
#ifndef LG_STATS_H
#define LG_STATS_H

#include <stdio.h>

#include "client.h"

/* The p-th percentile (0..100) of v[0..n), linear interpolation between
 * closest ranks; sorts v in place. 0 when n is 0. */
double lg_percentile(double *v, size_t n, double p);

/* Prints the summary of n results (and of `unsent` arrivals that found no
 * free client slot before the end) over wall_s seconds to f: a table, or one
 * JSON object on one line when json. */
void lg_summary(FILE *f, const lg_result *res, size_t n, size_t unsent, double wall_s, int json);

/* Writes one CSV row per request (id, times, status) to path. 0 or -1. */
int lg_write_csv(const char *path, const lg_result *res, size_t n);

#endif
