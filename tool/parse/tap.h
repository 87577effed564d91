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
 * prs_run; parses on other threads do not see it.
 *
 * restart() is how a consumer takes back what it was handed: when the one
 * pass meets a row later than its reorder window, the run is abandoned and
 * the parse starts again in exact mode (storeread.c); the driver (parse.c,
 * prs_run) calls restart() once, between the abandoned run and the exact
 * one, and the consumer must then return to its state before the parse
 * (everything row() and record() added, dropped). Rows and records then
 * come again from the start. NULL: the consumer cannot start over, so a
 * parse with that tap starts in exact mode (a first pass over the
 * timestamps, paid on every input) and never restarts. */
typedef struct prs_tap {
    void (*row)(void *ctx, const prs_table *t, const prs_val *vals);
    void (*record)(void *ctx, const prs_rec *r);
    void (*restart)(void *ctx);
    void *ctx;
} prs_tap;
/* Installs tap (copied) for the calling thread, or removes it with NULL. */
void prs_set_tap(const prs_tap *tap);
extern _Thread_local prs_tap prs_tap_now;

#endif
