/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tap.h — lets a consumer in the same process (servprof analyze, report)
 * see every record and report row as the parse makes them (table.c).
 */
#ifndef SERVPROF_PARSE_TAP_H
#define SERVPROF_PARSE_TAP_H

#include "storeread.h"
#include "table.h"

/* A consumer inside the same process (servprof analyze) sees every report
 * row and every record as the parse makes them, with or without files:
 * row() gets the table (its key and columns) and the row's values, before
 * they are written; record() gets each record in time order before the
 * reports do. Strings are valid only during the call. The tap is the
 * calling thread's (thread-local): install it on the thread that calls
 * spp_run; parses on other threads do not see it. */
typedef struct spp_tap {
    void (*row)(void *ctx, const spp_table *t, const spp_val *vals);
    void (*record)(void *ctx, const spp_rec *r);
    void *ctx;
} spp_tap;
/* Installs tap (copied) for the calling thread, or removes it with NULL. */
void spp_set_tap(const spp_tap *tap);
extern _Thread_local spp_tap spp_tap_now;

#endif
