/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.c — the driver of `servprof parse`: discover the stores, open each
 * read-only, merge their records by time into the model (which feeds every
 * report), then add device activity, the profiler.db extras, the operator
 * reports, and print the summary.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clockalign.h"
#include "dbout.h"
#include "merge.h"
#include "model.h"
#include "plog.h"
#include "progress.h"
#include "report_ops.h"
#include "sessions.h"
#include "stats.h"
#include "summary.h"
#include "timeline.h"
#include "torch_trace.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long estimate(spp_store *s)
{
    sqlite3_stmt *st;
    long long n = 0;
    const char *sql = s->legacy ? "SELECT max(rowid) FROM Mstx" : "SELECT max(rowid) FROM slice";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return n;
}

/* Closes a run that met a late row (store.c): its outputs are written out
 * and closed silently (the exact run after it writes them again) so that
 * nothing leaks. */
static void abandon(spp_model *m, spp_store **stores, int n)
{
    int level = spp_log_level();
    spp_log_set_level(SPP_NONE);
    spp_model_finish(m);
    spp_timeline_close(m->tl, stores, n);
    m->tl = NULL;
    spp_model_close(m);
    m->out.discard = 1; /* the exact run writes them again */
    spp_out_close(&m->out);
    spp_pdsplit_summary(m, 0);
    spp_stats_free(m->stats);
    free(m->fin);
    free(m->span_names);
    spp_log_set_level(level);
}

static int run_once(spp_parse_ctx *ctx, const spp_opts *opts, double t0, int *again);

/* Values read but not used, counted where they were read (store.c; args.c,
 * in the model's decoders: the clock alignment's look at the same rows
 * before them is not counted twice) and said once per parse: nothing is
 * dropped silently. */
static void warn_dropped_values(const spp_model *m, spp_store **stores, int n)
{
    for (int i = 0; i < n; i++)
        if (stores[i]->absurd_dur)
            spp_log(SPP_WARNING, "store %s: %lld record(s) had an absurd duration (over %.1f years, or ending "
                    "past the year 2262); they are read as events (duration 0)", stores[i]->path,
                    stores[i]->absurd_dur, (double)SPP_MAX_DUR_NS / 1e9 / 86400 / 365.25);
    long long range = m->args.range_errors + m->args_cache.range_errors;
    if (range)
        spp_log(SPP_WARNING, "%lld numeric value(s) in args were out of range (beyond 2^53, infinite, or an "
                "iter/type/scope#device/scope#cpu beyond a 32-bit integer); they are treated as absent", range);
}

/* One pass over the stores (store.c); in the rare input where a row comes
 * later than the window the single pass guessed, everything is parsed again
 * with a first pass that measures the window, before any row is used. */
int spp_run(const spp_opts *opts)
{
    double t0 = now_s();
    int again = 0;
    spp_parse_ctx ctx = {0};
    spp_store_exact(&ctx, 0);
    int rc = run_once(&ctx, opts, t0, &again);
    if (again) {
        spp_log(SPP_INFO, "a record came later than the reorder window of one pass; parsing again with a "
                "first pass over the timestamps");
        spp_store_exact(&ctx, 1);
        rc = run_once(&ctx, opts, t0, &again);
    }
    spp_store_exact(&ctx, 0); /* frees what ctx remembers */
    return rc;
}

static int run_once(spp_parse_ctx *ctx, const spp_opts *opts, double t0, int *again)
{
    *again = 0;
    /* SQLite's malloc takes a process-wide mutex only to keep memory
     * statistics, on every row read and inserted; we never ask for them.
     * Fails harmlessly (SQLITE_MISUSE) when SQLite is already initialised. */
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    spp_paths paths;
    if (spp_discover(opts->input, &paths) != 0)
        return 2;
    if (paths.nraw == 0) {
        spp_log(SPP_ERROR, "no raw store (ms_service_*.db) under %s; nothing to parse", opts->input);
        spp_paths_free(&paths);
        return 1;
    }
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t started_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
    spp_sessions ss;
    if (spp_sessions_find(&paths, opts->input, opts->session, &ss) != 0) {
        spp_sessions_free(&ss);
        spp_paths_free(&paths);
        return 2;
    }
    spp_store **stores = calloc((size_t)paths.nraw, sizeof *stores);
    int *session_of = calloc((size_t)paths.nraw, sizeof *session_of);
    int n = 0;
    long long est = 0;
    int64_t origin = INT64_MAX;
    for (int i = 0; i < paths.nraw; i++) {
        spp_store *s = spp_store_open(ctx, paths.raw[i], n);
        if (!s)
            continue;
        session_of[n] = ss.of_store[i];
        stores[n++] = s;
        est += estimate(s);
    }
    spp_clock clock;
    spp_clock_align(&clock, stores, n, opts); /* before any time is used: it shifts hosts' clocks */
    for (int i = 0; i < n; i++) {
        spp_rec r;
        if (spp_store_peek(stores[i], &r) && r.ts < origin)
            origin = r.ts;
    }
    int skipped = paths.nraw - n;
    spp_torch_select(&paths, stores, n);
    if (n == 0) {
        spp_log(SPP_ERROR, "none of the %d store(s) under %s could be read; nothing to parse", paths.nraw,
                opts->input);
        free(stores);
        free(session_of);
        spp_sessions_free(&ss);
        spp_paths_free(&paths);
        return 1;
    }
    if (origin == INT64_MAX)
        origin = 0;
    spp_model m;
    if (spp_model_open(&m, opts, stores, n, origin) != 0) {
        spp_model_close(&m); /* what the open allocated before the output folder failed */
        spp_clock_free(&clock);
        for (int i = 0; i < n; i++)
            spp_store_close(stores[i]);
        free(stores);
        free(session_of);
        spp_sessions_free(&ss);
        spp_paths_free(&paths);
        return 1;
    }
    spp_clock_report(&clock, &m.out);
    spp_clock_free(&clock);
    m.last_ns = origin;
    spp_merge mg;
    spp_merge_init(&mg, stores, n);
    spp_progress bar;
    spp_progress_start(&bar, est, opts->progress);
    spp_store *s;
    while ((s = spp_merge_top(&mg)) && !spp_store_violations(ctx)) {
        spp_rec r;
        spp_store_peek(s, &r);
        spp_sessions_note(&ss, session_of[s->index], r.ts,
                          r.dur > 0 && r.dur < INT64_MAX - r.ts ? r.ts + r.dur : r.ts);
        spp_model_record(&m, &r);
        spp_merge_advance(&mg);
        if ((m.nrec & 65535) == 0)
            spp_progress_tick(&bar, m.nrec);
    }
    spp_progress_end(&bar);
    spp_merge_free(&mg);
    if (spp_store_violations(ctx)) {
        abandon(&m, stores, n);
        for (int i = 0; i < n; i++)
            spp_store_close(stores[i]);
        free(stores);
        free(session_of);
        spp_sessions_free(&ss);
        spp_paths_free(&paths);
        *again = 1;
        return 1;
    }
    warn_dropped_values(&m, stores, n);
    spp_model_finish(&m);
    spp_timeline_activity(m.tl, paths.activity, paths.nactivity);
    spp_torch_timeline(m.tl, paths.torch, paths.ntorch, stores, n);
    int rc = 0;
    if (spp_timeline_close(m.tl, stores, n) != 0)
        rc = 1;
    m.tl = NULL;
    spp_dbout_finish(&m);
    if ((paths.nactivity || paths.ntorch) && opts->csv &&
        sp_report_ops_all((const char *const *)paths.activity, paths.nactivity,
                          (const char *const *)paths.torch, paths.ntorch, opts->output, &m.out.stage) != 0)
        rc = 1;
    spp_model_close(&m);
    if (spp_out_close(&m.out) != 0)
        rc = 1;
    if (opts->summary)
        spp_summary_print(&m, n, skipped, paths.nactivity + paths.ntorch, now_s() - t0, &ss, started_ns);
    spp_pdsplit_summary(&m, opts->summary);
    spp_stats_free(m.stats);
    free(m.fin);
    free(m.span_names);
    for (int i = 0; i < n; i++)
        spp_store_close(stores[i]);
    free(stores);
    free(session_of);
    spp_sessions_free(&ss);
    spp_paths_free(&paths);
    return rc;
}
