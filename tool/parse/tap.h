/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tap.h — lets a consumer in the same process (servprof analyze, report)
 * see every record and report row as the parse makes them: an option of
 * the parse (prs_opts.tap), called by table.c (rows) and model.c (records).
 */
#ifndef SERVPROF_PARSE_TAP_H
#define SERVPROF_PARSE_TAP_H

#include "storeread.h"

/* Not table.h: table.h includes this file (prs_out holds the tap). */
struct prs_table;
struct prs_val;

/* A consumer inside the same process (servprof analyze) sees every report
 * row and every record as the parse makes them, with or without files:
 * row() gets the table (its key and columns) and the row's values, before
 * they are written; record() gets each record in time order before the
 * reports do. Strings are valid only during the call. The tap is the
 * parse's own (prs_opts.tap, copied when the parse starts): two parses on
 * two threads each see only theirs; the calls come on the thread that
 * runs prs_run.
 *
 * restart() is how a consumer takes back what it was handed: when the one
 * pass meets a row later than its reorder window, the run is abandoned and
 * the parse starts again in exact mode (storeread.c); the driver (parse.c,
 * prs_run) calls restart() once, between the abandoned run and the exact
 * one, and the consumer must then return to its state before the parse
 * (everything row() and record() added, dropped). Rows and records then
 * come again from the start. NULL: the consumer cannot start over, so a
 * parse with that tap starts in exact mode (a first pass over the
 * timestamps, paid on every input) and never restarts. Any of the three
 * may be NULL.
 *
 * quality() (may be NULL) gets, once at the end of a run, what the parse
 * found wrong in the data itself: ids linked from two process stores and
 * figures left empty (request.c), as the terminal summary says them, so
 * that analyze can put them in its data-quality block. */
typedef struct prs_quality {
    long long dup_ids;        /* ids linked from two process stores */
    const char *dup_example;  /* the first of them ("" when none) */
    long long empty_figures;  /* figures left empty: outside the request's life */
} prs_quality;

typedef struct prs_tap {
    void (*row)(void *ctx, const struct prs_table *t, const struct prs_val *vals);
    void (*record)(void *ctx, const prs_rec *r);
    void (*restart)(void *ctx);
    void (*quality)(void *ctx, const prs_quality *q);
    void *ctx;
} prs_tap;

#endif
