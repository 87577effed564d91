/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export.h — the seam between `servprof export` (tool/cli/cmd_export.c) and
 * its exporters, one module per URL scheme (clickhouse.c, otlp.c).
 *
 * export.c runs the whole parse of INPUT in this process with every file
 * output off and a tap (tap.h), exactly as analyze does, and hands the
 * module what the tap sees: every decoded record in time order, and every
 * report row (request.csv's rows and every other report's, each naming its
 * table). So an exporter sends the parse's figures by construction and
 * never reads SQLite itself. The tap has no restart: the parse runs exact
 * (a first pass bounds the reorder window), so rows come once, in an order
 * that is the same on every run of the same input — what clickhouse.c's
 * resume counts on.
 *
 * A module is a row of export.c's table. open() returns the module's state
 * or NULL with a message in err; row()/record() must not fail loudly (they
 * remember the first error and make later calls cheap); finish() flushes,
 * prints its one summary line and returns 0, or -1 after printing what
 * went wrong and what a rerun will do. Strings handed to row()/record()
 * live only during the call.
 */
#ifndef SERVPROF_EXPORT_H
#define SERVPROF_EXPORT_H

#include <stddef.h>

#include "storeread.h"
#include "table.h"
#include "tap.h"

typedef struct exp_opts {
    const char *input;         /* INPUT, as parse takes it */
    const char *url;           /* --to */
    const char *session;       /* --session NAME: only that session folder's stores */
    int create;                /* --create: make the database and tables when missing */
    const char *cluster;       /* --cluster NAME: local tables + Distributed over NAME */
    const char *nodes;         /* --nodes URL,URL: the cluster's nodes (HTTP), for --cluster */
    const char *password_file; /* --password-file FILE */
    long block_rows;           /* --block-rows N: rows per INSERT (per node and table) */
    int compress;              /* --compress: gzip the INSERT bodies */
    int progress;              /* -1 auto, 0 off, 1 on (the parse's progress line) */
    int verbose;
    const char *prefer;        /* --prefer N|URL: every row to that node of the cluster (the nearest shard) */
    const char **clock_hosts;  /* --clock-offset HOST=NS, as parse takes it (prs_opts) */
    long long *clock_ns;
    int nclock;
} exp_opts;

typedef struct exp_module {
    const char *scheme;        /* "clickhouse": URLs "clickhouse://..." */
    void *(*open)(const exp_opts *o, char *err, size_t errcap);
    void (*row)(void *m, const prs_table *t, const prs_val *vals);
    void (*record)(void *m, const prs_rec *r);
    int (*finish)(void *m, int parse_rc);
    void (*close)(void *m);    /* frees; close(NULL) is a no-op */
    int counters;              /* 1: also the timeline's counter rows (table "counter", as profiler.db
                                  has it: what `report --from` draws the samplers' charts from) */
    void (*quality)(void *m, const prs_quality *q); /* the parse's data-quality counts, once at the end of
                                                       the parse (before finish); NULL: not kept */
} exp_module;

/* The module for url's scheme, or NULL (then *known lists the schemes). */
const exp_module *exp_module_for(const char *url, const char **known);
/* Runs the export; 0 done, 1 failed (printed), 2 bad input path. */
int exp_run(const exp_opts *o);

extern const exp_module exp_clickhouse;
extern const exp_module exp_otlp_http, exp_otlp_https; /* otlp.c: otlp+http://, otlp+https:// */

#endif
