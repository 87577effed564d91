/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.h — the contracts between the modules of `servprof report` (not API).
 *
 * The report is one HTML file: a template (report.html) with the charting
 * library (uPlot, inlined), the page's script (report_app.js) and one JSON
 * document holding everything the page shows. The C side only gathers data;
 * all drawing happens in the browser.
 *
 *   report.c        the driver: raw stores or a profiler.db; analyze's JSON;
 *                   the charts' rows; the page data; the file
 *   report_analyze.c calls analyze and compare (tool/analyze)
 *   report_rows.c   the parser's report rows (request, batch, forward, counter)
 *                   -> time series, CDFs, slowest requests
 *   report_tap.c    feeds report_rows.c from the parse analyze runs (one parse)
 *   report_db.c     feeds report_rows.c from a profiler.db's tables
 *   report_ch.c     feeds report_rows.c from a database the rows were
 *                   exported to (`report --from clickhouse://`), through an
 *                   rpt_source the CLI hands over (the report itself knows
 *                   no backend: tool/export reads ClickHouse)
 *   report_moe.c    the MoE rows (moe_rank, eplb_balance) -> per-rank heat map,
 *                   balance over time (handed over by report_rows.c)
 *   downsample.c    min/max per pixel bucket, so a long series stays small
 *   report_html.c   writes template + library + data as one self-contained file
 *   report_assets.c generated at build time (embed.cmake): the template, the
 *                   page script and uPlot's files as C strings, so the binary
 *                   needs no file and no network at run time
 *
 * Single-threaded; every function that returns memory says who frees it.
 */
#ifndef SERVPROF_REPORT_H
#define SERVPROF_REPORT_H

#include <stddef.h>

#include <jansson.h>
#include <sqlite3.h>

#include "table.h"
#include "tap.h"


/* ------------------------------------------------------------ options */
/* Row source of `report --from URL` (filled in by the CLI from tool/export).
 * The report asks it for the parser's report tables by key and for analyze's
 * document; it never learns what is behind it. */
typedef void (*rpt_row_fn)(void *ctx, const char *key, const prs_col *cols, int ncols, const prs_val *v);
typedef struct rpt_source {
    const char *label;  /* the run's input as the page names it (a URL without password) */
    /* Every row of report table `key`, in the parse's order, to fn. 0 done,
     * 1 no such table (no row of that kind), -1 failed with one line in err. */
    int (*table)(void *ctx, const char *key, rpt_row_fn fn, void *fctx, long long *nrows, char *err, size_t cap);
    /* analyze's JSON document of the source (new reference), NULL with one line in err. */
    json_t *(*analyze)(void *ctx, char *err, size_t cap);
    void *ctx;
} rpt_source;

typedef struct rpt_opts {
    const char *input;        /* --input-path: raw stores or a parse output folder */
    const char *output;       /* --output (default ./report.html) */
    const char *compare;      /* --compare OTHER, or NULL */
    const char *analyze_json; /* --analyze-json FILE: analyze's JSON for input (skips running it) */
    const char *compare_analyze_json; /* --compare-analyze-json FILE: the same for OTHER */
    const char *compare_json; /* --compare-json FILE: analyze's compare document of the two */
    int buckets;              /* --buckets: pixel buckets per series (default RPT_DEFAULT_BUCKETS) */
    int quiet;                /* no summary line on stdout */
    int progress;             /* the parse's bar on stderr: -1 on a terminal, 0 never, 1 always */
    const rpt_source *from;   /* --from URL: the run's rows and analyze come from there (input unused) */
} rpt_opts;

/* Pixel buckets per series: about the width of a wide screen, so a chart shows
 * every bucket's extremes at full width and zooming still has some detail. */
#define RPT_DEFAULT_BUCKETS 2000
#define RPT_MIN_BUCKETS 10
#define RPT_MAX_BUCKETS 100000
/* Rows of the slowest-requests table, and points per latency CDF. */
#define RPT_SLOWEST 100
#define RPT_CDF_POINTS 400

/* Writes the report. Returns 0 success, 1 failure (message printed), 2 bad input path. */
int rpt_run(const rpt_opts *o);

/* --------------------------------------------------------- downsample */
/* A series set sharing one time axis: t[i] (seconds from the run's start) and
 * ncols value columns v[c][i]; NaN is "no value" (null in the page). */
typedef struct rpt_series {
    size_t n, cap;
    int ncols;
    double *t;
    double **v;
} rpt_series;

/* Allocates an empty set of ncols columns. Returns NULL on out of memory.
 * Free with rpt_series_free. */
rpt_series *rpt_series_new(int ncols);
/* Appends one row (ncols values). Returns 0, or -1 on out of memory. */
int rpt_series_add(rpt_series *s, double t, const double *vals);
void rpt_series_free(rpt_series *s);

/* Min/max per bucket: splits [t of the first row, t of the last row] into
 * `buckets` equal spans; a span with more than two rows is replaced by two
 * rows: (time of its first row, each column's minimum) and (time of its last
 * row, each column's maximum). A column's extremes over the span are kept
 * (its envelope, which is what a pixel column can show); rows are in time
 * order. Sets of at most 2 × buckets rows are returned as they are.
 * Returns a new set (free with rpt_series_free), NULL on out of memory. */
rpt_series *rpt_downsample(const rpt_series *s, int buckets);

/* The set as a JSON object {"t": [...], names[0]: [...], ...} with numbers
 * rounded to `digits` significant digits (smaller page) and NaN as null.
 * Returns a new reference, NULL on out of memory. */
json_t *rpt_series_json(const rpt_series *s, const char *const *names, int digits);

/* --------------------------------------------------------------- rows */
/* Collects the parser's report rows (request, batch, forward, counter; other
 * tables are ignored) and turns them into the page's charts data. Not
 * thread-safe; one per run. */
typedef struct rpt_rows rpt_rows;
/* Returns NULL on out of memory. Free with rpt_rows_free (NULL is a no-op). */
rpt_rows *rpt_rows_new(void);
void rpt_rows_free(rpt_rows *r);
/* Drops every row added: r is again as rpt_rows_new made it (the parse
 * started over, tap.h). */
void rpt_rows_reset(rpt_rows *r);
/* One row of table `key` whose columns are cols (found by name). Values
 * are copied as needed; they may be freed after the call. */
void rpt_rows_add(rpt_rows *r, const char *key, const prs_col *cols, int ncols, const prs_val *v);
/* The "db" member of a run (schema in docs/report.md): step series, forwards,
 * counters, latency CDFs, the slowest requests, the run's origin (t0_us) and
 * length. Returns a new reference, NULL (message printed) on out of memory. */
json_t *rpt_rows_json(rpt_rows *r, int buckets);
/* The parser tap that feeds r (report_tap.c): for a parse run by analyze
 * (sa_opts.also), so one parse of the raw stores serves both. When the
 * parse starts over, its restart empties r (rpt_rows_reset). */
prs_tap rpt_rows_tap(rpt_rows *r);

/* ---------------------------------------------------------------- moe */
/* The MoE part of the page (report_moe.c). Not thread-safe; one per rpt_rows. */
typedef struct rpt_moe rpt_moe;
/* NULL on out of memory. Free with rpt_moe_free (NULL is a no-op). */
rpt_moe *rpt_moe_new(void);
void rpt_moe_free(rpt_moe *m);
void rpt_moe_reset(rpt_moe *m);
/* A row of moe_rank or eplb_balance (other keys are ignored). */
void rpt_moe_add(rpt_moe *m, const char *key, const prs_col *cols, int ncols, const prs_val *v);
/* The "moe" member (schema in docs/report.md), times from t0_ms; JSON null
 * without MoE rows, NULL on out of memory. New reference. */
json_t *rpt_moe_json(rpt_moe *m, double t0_ms, int buckets);

/* ----------------------------------------------------------- database */
/* Feeds r with the report tables of a profiler.db made by servprof parse.
 * Returns 0, or -1 with a message naming the file and what failed. */
int rpt_db_read(const char *profiler_db, rpt_rows *r);

/* -------------------------------------------------------------- remote */
/* Feeds r with the report tables of src (report_ch.c): the same tables
 * rpt_db_read reads, in the same order. progress: a line per table on
 * stderr (-1: when stderr is a terminal). Returns 0, or -1 with a message. */
int rpt_source_read(const rpt_source *src, rpt_rows *r, int progress);

/* -------------------------------------------------------------- html */
/* Writes the page to path (through a temporary file renamed into place, so a
 * failed write never leaves a half page). data is the page's JSON document.
 * Returns 0, or -1 with a message naming the file and the reason. */
int rpt_html_write(const char *path, const json_t *data);

/* The embedded assets (report_assets.c, generated by embed.cmake). Never
 * NULL: uPlot is vendored in tool/report/vendor/uplot and the build fails
 * without it, so every servprof has a working report. */
extern const char *const rpt_asset_template;
extern const char *const rpt_asset_app_js;
extern const char *const rpt_asset_uplot_js;
extern const char *const rpt_asset_uplot_css;
extern const char *const rpt_asset_uplot_version;
extern const char *const rpt_asset_uplot_licence; /* uPlot's LICENSE (MIT), copied into every page */

#endif
