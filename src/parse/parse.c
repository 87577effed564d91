/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.c — the driver of `servprof parse`: discover the stores, open each
 * read-only, merge their records by time into the model (which feeds every
 * report), then add device activity, the profiler.db extras, the operator
 * reports, and print the summary.
 */
#include <pthread.h>
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
#include "tap.h"
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

/* What one run owns. Every way out of run_once goes through run_release,
 * which frees whatever was acquired: a field is zero until then, and
 * `model` says how far the model got. */
enum { MODEL_NONE, MODEL_OPEN, MODEL_CLOSED };
typedef struct run_owned {
    spp_paths paths;
    spp_sessions ss;
    spp_store **stores;
    int *session_of;      /* by store: its session (sessions.c) */
    int n;                /* stores opened */
    spp_clock clock;
    spp_model m;
    int model;            /* MODEL_OPEN: spp_model_close is due; MODEL_CLOSED: it was done */
} run_owned;

static void run_release(run_owned *o)
{
    if (o->model == MODEL_OPEN)
        spp_model_close(&o->m);
    if (o->model != MODEL_NONE) {
        spp_pdsplit_summary(&o->m, 0); /* a no-op when the run printed it */
        spp_stats_free(o->m.stats);
        free(o->m.fin);
        free(o->m.span_names);
    }
    spp_clock_free(&o->clock);
    for (int i = 0; i < o->n; i++)
        spp_store_close(o->stores[i]);
    free(o->stores);
    free(o->session_of);
    spp_sessions_free(&o->ss);
    spp_paths_free(&o->paths);
}

/* Closes a run that met a late row (store.c): its outputs are written out
 * and removed silently (the exact run after it writes them again). */
static void abandon(run_owned *o)
{
    int level = spp_log_level();
    spp_log_set_level(SPP_NONE);
    spp_model_finish(&o->m);
    spp_timeline_close(o->m.tl, o->stores, o->n);
    o->m.tl = NULL;
    spp_model_close(&o->m);
    o->model = MODEL_CLOSED;
    o->m.out.discard = 1;
    spp_out_close(&o->m.out);
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
 * with a first pass that measures the window, before any row is used
 * (docs/parse.md, "Streaming", bounds what that costs). A tap's consumer
 * (analyze, report) is told to drop what the abandoned run handed it
 * (restart, tap.h) before the second run; a tap without restart cannot
 * take rows back, so its parse starts in exact mode and never restarts:
 * the first pass over the timestamps is then paid every time
 * (docs/benchmarks.md, "Analyze"). */
int spp_run(const spp_opts *opts)
{
    double t0 = now_s();
    int again = 0;
    spp_parse_ctx ctx = {0};
    spp_store_exact(&ctx, 0);
    /* open-time warnings are still said when a tap forces exact mode */
    ctx.exact = (spp_tap_now.row || spp_tap_now.record) && !spp_tap_now.restart;
    int rc = run_once(&ctx, opts, t0, &again);
    if (again) {
        spp_log(SPP_INFO, "a record came later than the reorder window of one pass; parsing again with a "
                "first pass over the timestamps");
        if (spp_tap_now.restart)
            spp_tap_now.restart(spp_tap_now.ctx);
        spp_store_exact(&ctx, 1);
        rc = run_once(&ctx, opts, t0, &again);
    }
    spp_store_exact(&ctx, 0); /* frees what ctx remembers */
    return rc;
}

/* SQLite's malloc takes a process-wide mutex only to keep memory
 * statistics, on every row read and inserted; we never ask for them.
 * Fails harmlessly (SQLITE_MISUSE) when SQLite is already initialised.
 * sqlite3_config must not race another thread's first use of SQLite:
 * once per process, before any parse opens a store. */
static pthread_once_t memstatus_once = PTHREAD_ONCE_INIT;
static void memstatus_off(void) { (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

static int run_once(spp_parse_ctx *ctx, const spp_opts *opts, double t0, int *again)
{
    *again = 0;
    pthread_once(&memstatus_once, memstatus_off);
    run_owned o = {0};
    int rc = 2;
    if (spp_discover(opts->input, &o.paths) != 0)
        goto done;
    rc = 1;
    if (o.paths.nraw == 0) {
        spp_log(SPP_ERROR, "no raw store (ms_service_*.db) under %s; nothing to parse", opts->input);
        goto done;
    }
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t started_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
    if (spp_sessions_find(&o.paths, opts->input, opts->session, &o.ss) != 0) {
        rc = 2;
        goto done;
    }
    o.stores = calloc((size_t)o.paths.nraw, sizeof *o.stores);
    o.session_of = calloc((size_t)o.paths.nraw, sizeof *o.session_of);
    long long est = 0;
    int64_t origin = INT64_MAX;
    for (int i = 0; i < o.paths.nraw; i++) {
        spp_store *s = spp_store_open(ctx, o.paths.raw[i], o.n);
        if (!s)
            continue;
        o.session_of[o.n] = o.ss.of_store[i];
        o.stores[o.n++] = s;
        est += estimate(s);
    }
    spp_clock_align(&o.clock, o.stores, o.n, opts); /* before any time is used: it shifts hosts' clocks */
    for (int i = 0; i < o.n; i++) {
        spp_rec r;
        if (spp_store_peek(o.stores[i], &r) && r.ts < origin)
            origin = r.ts;
    }
    int skipped = o.paths.nraw - o.n;
    spp_torch_select(&o.paths, o.stores, o.n);
    if (o.n == 0) {
        spp_log(SPP_ERROR, "none of the %d store(s) under %s could be read; nothing to parse", o.paths.nraw,
                opts->input);
        goto done;
    }
    if (origin == INT64_MAX)
        origin = 0;
    spp_model *m = &o.m;
    o.model = MODEL_OPEN; /* what the open allocated before a failure is freed too */
    if (spp_model_open(m, opts, o.stores, o.n, origin) != 0)
        goto done;
    spp_clock_report(&o.clock, &m->out);
    m->last_ns = origin;
    spp_merge mg;
    spp_merge_init(&mg, o.stores, o.n);
    spp_progress bar;
    spp_progress_start(&bar, est, opts->progress);
    spp_store *s;
    while ((s = spp_merge_top(&mg)) && !spp_store_violations(ctx)) {
        spp_rec r;
        spp_store_peek(s, &r);
        spp_sessions_note(&o.ss, o.session_of[s->index], r.ts,
                          r.dur > 0 && r.dur < INT64_MAX - r.ts ? r.ts + r.dur : r.ts);
        spp_model_record(m, &r);
        spp_merge_advance(&mg);
        if ((m->nrec & 65535) == 0)
            spp_progress_tick(&bar, m->nrec);
    }
    spp_progress_end(&bar);
    spp_merge_free(&mg);
    if (spp_store_violations(ctx)) {
        abandon(&o);
        *again = 1;
        goto done;
    }
    warn_dropped_values(m, o.stores, o.n);
    spp_model_finish(m);
    spp_timeline_activity(m->tl, o.paths.activity, o.paths.nactivity);
    spp_torch_timeline(m->tl, o.paths.torch, o.paths.ntorch, o.stores, o.n);
    rc = 0;
    if (spp_timeline_close(m->tl, o.stores, o.n) != 0)
        rc = 1;
    m->tl = NULL;
    spp_dbout_finish(m);
    if ((o.paths.nactivity || o.paths.ntorch) && opts->csv &&
        sp_report_ops_all((const char *const *)o.paths.activity, o.paths.nactivity,
                          (const char *const *)o.paths.torch, o.paths.ntorch, opts->output, &m->out.stage) != 0)
        rc = 1;
    spp_model_close(m);
    o.model = MODEL_CLOSED;
    if (spp_out_close(&m->out) != 0)
        rc = 1;
    if (opts->summary)
        spp_summary_print(m, o.n, skipped, o.paths.nactivity + o.paths.ntorch, now_s() - t0, &o.ss, started_ns);
    spp_pdsplit_summary(m, opts->summary);
done:
    run_release(&o);
    return rc;
}
