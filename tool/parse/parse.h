/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.h — the parser's entry: its options and prs_run (parse.c).
 *
 * The parser is a pipeline that never holds a whole table. Each module has
 * its own header (module.c -> module.h; tap.h is table.c's too). The
 * reading and decoding stages call nothing of a later stage and nothing of
 * each other in a circle; the reports read the model's state (model.h)
 * and keep their own, each in its file, and table.c asks dbout.c which
 * indexes a table gets:
 *
 *  read/        discover.c    finds raw stores, activity stores, torch traces
 *               sessions.c    which session folder each store belongs to
 *               storeread.c   one store as records in time order, served by
 *                             reorder.c (the bounded window),
 *                             rawscan.c (slice read from its b-tree pages),
 *                             readvfs.c (read-ahead VFS under SQLite) and
 *                             walcheck.c (a damaged WAL named as such)
 *               clockalign.c  several hosts' stores put on one clock
 *               readers.c     the stores read on threads (--jobs), into rings
 *               merge.c       k-way merge of the stores by timestamp
 *               torch_trace.c torch profiler traces
 *  decode/      argdecode.c   the keys the reports need from args JSON;
 *               ids.c         request ids and Links
 *  model/       model.c       hands each record to the reports of the table in
 *                             reports.c (model.h: the model, and prs_report,
 *                             a report's hooks; each report owns its state):
 *                             request.c, reqorder.c, batch.c, forward.c,
 *                             kvcache.c, reqstatus.c, spaninfo.c, pdsplit.c,
 *                             coordcount.c, pending.c (rows held for a
 *                             look-ahead); stats.c
 *                             percentiles; colmap.c report columns found by
 *                             name, for consumers; moeset.c the MoE records
 *                             per (rank, step, layer) and its reports
 *                             ep_balance.c, moe_analysis.c, moe_rank.c, eplb.c
 *  out/         table.c       one row sink per report: CSV and/or profiler.db;
 *                             tap.h lets analyze/report see rows and records
 *               timeline.c    chrome_tracing.json
 *               report_ops.c  op_summary/op_statistic
 *               dwrite.c      output files under temporary names until the end
 *               btwrite.c, btindex.c   profiler.db's pages written directly;
 *               dbsql.c       or through SQLite's INSERT (--db-writer sqlite)
 *               affinity.c    column affinity, shared by writer and reader
 *               dbout.c, dbcompat.c    profiler.db's extra tables and views
 *               summary.c the terminal summary; progress.c; fmt.c datetimes
 *               and numbers
 *  (here)       parse.c the driver; plog.c messages; tap.h a consumer's
 *               view of rows and records (prs_opts.tap); repcols.h the
 *               report columns other parts read back; xalloc.c the tool's
 *               checked allocation (out of memory: one message, status 1)
 *
 * A parse runs on the thread that calls prs_run (only the output writers
 * of dwrite.c and dbsql.c, and with prs_opts.jobs > 1 the stores' opens
 * (parse.c), the store readers of readers.c and the outputs' encoders of
 * wqueue.c, have threads of their own); two parses may run
 * at once on two threads: their state is in their context and model, the
 * tap is an option of each (prs_opts.tap), and the log level is
 * thread-local. Record strings (name, cat,
 * args) belong to SQLite and are valid only until the store's cursor
 * steps again: modules copy what they keep.
 */
#ifndef SERVPROF_PARSE_H
#define SERVPROF_PARSE_H

typedef struct prs_opts {
    const char *input;        /* --input-path */
    const char *output;       /* --output-path (default ./output) */
    int csv, json, db;        /* --format; all three by default */
    int perfetto;             /* --format perfetto: trace.pftrace (not by default) */
    const char **spans;       /* --span NAME ... */
    int nspans;
    int progress;             /* -1 auto (TTY and large), 0 off, 1 on */
    int summary;              /* print the terminal summary */
    int flows_all;            /* --flows all: a flow step on every slice naming a request */
    const char *session;      /* --session NAME: only the stores of that session folder */
    int tap_counters;         /* no json/db: still hand the timeline's counter rows to the tap */
    const char **clock_hosts; /* --clock-offset HOST=NS: HOST's clock reads NS ahead */
    long long *clock_ns;
    int nclock;
    int jobs;                 /* --jobs N: threads for the stores' opens and reads (readers.c) and the
                               * outputs' encoding (wqueue.c); 0: the default (prs_readers_jobs: the
                               * CPUs the process may use, 1 when the machine is busy); 1: none */
    const struct prs_tap *tap; /* NULL, or a consumer of every row and record (tap.h); lives until prs_run returns */
    const char **moe_names;   /* --moe-names ROLE=NAME, layers=N, gemms=N (moeset.c) */
    int nmoe_names;
    int trace_object;         /* --trace-form object: chrome_tracing.json as {"traceEvents": [...]}
                                 (default 0: a top-level array, the reference's shape) */
} prs_opts;

/* Runs the whole parse. Returns 0 success, 1 nothing parsed / some output
 * failed, 2 bad input path. Messages on stderr; summary too. Thread-safe:
 * parses on two threads at once share nothing (each has its own tap,
 * opts->tap, and uses its thread's log level); their output folders must
 * differ. */
int prs_run(const prs_opts *opts);

#endif
