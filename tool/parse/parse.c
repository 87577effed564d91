/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.c — the driver of `servprof parse`: discover the stores, open each
 * read-only, merge their records by time into the model (which feeds every
 * report), then add device activity, the profiler.db extras, the operator
 * reports, and print the summary.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clockalign.h"
#include "dbout.h"
#include "merge.h"
#include "model.h"
#include "moeset.h"
#include "plog.h"
#include "progress.h"
#include "readers.h"
#include "report_ops.h"
#include "sessions.h"
#include "stats.h"
#include "summary.h"
#include "tap.h"
#include "thrcpu.h"
#include "timeline.h"
#include "torch_trace.h"
#include "xalloc.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long estimate(prs_store *s)
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
    prs_paths paths;
    prs_sessions ss;
    prs_store **stores;
    int *session_of;      /* by store: its session (sessions.c) */
    int n;                /* stores opened */
    prs_clock clock;
    prs_model m;
    int model;            /* MODEL_OPEN: prs_model_close is due; MODEL_CLOSED: it was done */
} run_owned;

static void run_release(run_owned *o)
{
    if (o->model == MODEL_OPEN)
        prs_model_close(&o->m);
    if (o->model != MODEL_NONE)
        prs_model_free(&o->m); /* the reports' states, kept for the summary */
    prs_clock_free(&o->clock);
    for (int i = 0; i < o->n; i++)
        prs_store_close(o->stores[i]);
    free(o->stores);
    free(o->session_of);
    prs_sessions_free(&o->ss);
    prs_paths_free(&o->paths);
}

/* Closes a run that met a late row (storeread.c): its outputs are written out
 * and removed silently (the exact run after it writes them again). */
static void abandon(run_owned *o)
{
    int level = prs_log_level();
    prs_log_set_level(PRS_NONE);
    prs_model_finish(&o->m);
    prs_timeline_close(o->m.tl, o->stores, o->n);
    o->m.tl = NULL;
    prs_model_close(&o->m);
    o->model = MODEL_CLOSED;
    o->m.out.discard = 1;
    prs_out_close(&o->m.out);
    prs_log_set_level(level);
}

static int run_once(prs_parse_ctx *ctx, const prs_opts *opts, double t0, int *again);

/* --jobs N > 1: the stores opened on up to N threads. An open measures
 * the start of its store through SQLite (storeread.c, the one-pass
 * window: up to 16,384 rows), a fifth of the parse thread's work on nine
 * small stores when done one after another. Each open's messages are kept
 * (plog.c) and logged here in the stores' order, so stderr reads as with
 * --jobs 1; out[i] is path i's store (NULL: not readable), its index
 * provisional (the caller numbers the ones that opened). */
typedef struct open_jobs {
    prs_parse_ctx *ctx;
    char *const *paths;
    int n;
    prs_store **out;
    prs_log_buf *logs;
    atomic_int next;      /* the next path to open (every thread) */
} open_jobs;

static void *open_some(void *arg)
{
    open_jobs *j = arg;
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
        prs_log_capture(&j->logs[i]);
        j->out[i] = prs_store_open(j->ctx, j->paths[i], i);
        prs_log_capture(NULL);
    }
    return NULL;
}

static void open_stores(prs_parse_ctx *ctx, char *const *paths, int n, int jobs, prs_store **out)
{
    open_jobs j = {ctx, paths, n, out, prs_xcalloc((size_t)n, sizeof *j.logs), 0};
    int nt = (jobs < n ? jobs : n) - 1; /* this thread opens too */
    pthread_t *th = prs_xcalloc((size_t)(nt > 0 ? nt : 1), sizeof *th);
    int started = 0;
    while (started < nt && pthread_create(&th[started], NULL, open_some, &j) == 0)
        started++;
    open_some(&j);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++)
        prs_log_replay(&j.logs[i]);
    free(th);
    free(j.logs);
}

/* Values read but not used, counted where they were read (storeread.c; argdecode.c,
 * in the model's decoders: the clock alignment's look at the same rows
 * before them is not counted twice) and said once per parse: nothing is
 * dropped silently. */
static void warn_dropped_values(const prs_model *m, prs_store **stores, int n)
{
    for (int i = 0; i < n; i++)
        if (stores[i]->absurd_dur)
            prs_log(PRS_WARNING, "store %s: %lld record(s) had an absurd duration (over %.1f years, or ending "
                    "past the year 2262); they are read as events (duration 0)", stores[i]->path,
                    stores[i]->absurd_dur, (double)PRS_MAX_DUR_NS / 1e9 / 86400 / 365.25);
    for (int i = 0; i < n; i++) {
        const prs_argcap *c = &stores[i]->argcap;
        if (c->cut_args)
            prs_log(PRS_WARNING, "store %s: %lld record(s) had args over %d bytes (the longest %lld); each was "
                    "cut to the members that fit, marked \"servprof_cut\" in its args (docs/parse.md, \"Limits\")",
                    stores[i]->path, c->cut_args, PRS_ARGS_MAX, c->max_len);
        if (c->cut_rids)
            prs_log(PRS_WARNING, "store %s: %lld record(s) had a rid list over %d entries (the longest %lld); "
                    "each kept its first %d, marked \"servprof_cut\" in its args (docs/parse.md, \"Limits\")",
                    stores[i]->path, c->cut_rids, PRS_RIDS_MAX, c->max_rids, PRS_RIDS_MAX);
    }
    long long range = m->args.range_errors + m->args_cache.range_errors;
    if (range)
        prs_log(PRS_WARNING, "%lld numeric value(s) in args were out of range (beyond 2^53, infinite, or an "
                "iter/type/scope#device/scope#cpu beyond a 32-bit integer); they are treated as absent", range);
}

/* One pass over the stores (storeread.c); in the rare input where a row comes
 * later than the window the single pass guessed, everything is parsed again
 * with a first pass that measures the window, before any row is used
 * (docs/parse.md, "Streaming", bounds what that costs). A tap's consumer
 * (analyze, report) is told to drop what the abandoned run handed it
 * (restart, tap.h) before the second run; a tap without restart cannot
 * take rows back, so its parse starts in exact mode and never restarts:
 * the first pass over the timestamps is then paid every time
 * (docs/benchmarks.md, "Analyze"). */
int prs_run(const prs_opts *asked)
{
    /* --jobs' default decided once, so that both runs (and the model's
     * writers, model.c) see the same count: readers.h, prs_readers_jobs. */
    prs_opts chosen = *asked;
    chosen.jobs = prs_readers_jobs(asked->jobs);
    if (!asked->jobs)
        prs_log(PRS_DEBUG, "--jobs %d (the default: readers.c, prs_readers_jobs)", chosen.jobs);
    const prs_opts *opts = &chosen;
    static const prs_tap none;
    const prs_tap *tap = opts->tap ? opts->tap : &none;
    double t0 = now_s();
    int again = 0;
    prs_parse_ctx ctx = {0};
    prs_store_exact(&ctx, 0);
    /* Exact mode from the start when what a first run hands out cannot be
     * taken back: a tap that cannot start over, or an output written in
     * place (a FIFO's reader would get the abandoned run's rows too). The
     * open-time warnings are still said. */
    char node[4096];
    int in_place = (opts->csv || opts->json || opts->db || opts->perfetto) && prs_dw_dir_has_nodes(opts->output, node, sizeof node);
    if (in_place)
        prs_log(PRS_INFO, "%s is written in place (not a regular file): the stores' timestamps are read once "
                "before any row, so that no row reaches it twice", node);
    ctx.exact = ((tap->row || tap->record) && !tap->restart) || in_place;
    int rc = run_once(&ctx, opts, t0, &again);
    if (again) {
        prs_log(PRS_INFO, "a record came later than the reorder window of one pass; parsing again with a "
                "first pass over the timestamps");
        if (tap->restart)
            tap->restart(tap->ctx);
        prs_store_exact(&ctx, 1);
        rc = run_once(&ctx, opts, t0, &again);
    }
    prs_store_exact(&ctx, 0); /* frees what ctx remembers */
    return rc;
}

/* SQLite's malloc takes a process-wide mutex only to keep memory
 * statistics, on every row read and inserted; we never ask for them.
 * Fails harmlessly (SQLITE_MISUSE) when SQLite is already initialised.
 * sqlite3_config must not race another thread's first use of SQLite:
 * once per process, before any parse opens a store. */
static pthread_once_t memstatus_once = PTHREAD_ONCE_INIT;
static void memstatus_off(void) { (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

static int run_once(prs_parse_ctx *ctx, const prs_opts *opts, double t0, int *again)
{
    *again = 0;
    pthread_once(&memstatus_once, memstatus_off);
    run_owned o = {0};
    int rc = 2;
    if (prs_discover(opts->input, &o.paths) != 0)
        goto done;
    rc = 1;
    if (o.paths.nraw == 0) {
        prs_log(PRS_ERROR, "no raw store (ms_service_*.db) under %s; nothing to parse", opts->input);
        goto done;
    }
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t started_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
    if (prs_sessions_find(&o.paths, opts->input, opts->session, &o.ss) != 0) {
        rc = 2;
        goto done;
    }
    o.stores = prs_xcalloc((size_t)o.paths.nraw, sizeof *o.stores);
    o.session_of = prs_xcalloc((size_t)o.paths.nraw, sizeof *o.session_of);
    long long est = 0;
    int64_t origin = INT64_MAX;
    int jobs = prs_readers_jobs(opts->jobs);
    if (jobs > 1) /* opened on threads; numbered below, in the paths' order */
        open_stores(ctx, o.paths.raw, o.paths.nraw, jobs, o.stores);
    for (int i = 0; i < o.paths.nraw; i++) {
        prs_store *s = jobs > 1 ? o.stores[i] : prs_store_open(ctx, o.paths.raw[i], o.n);
        o.stores[i] = NULL;
        if (!s)
            continue;
        s->index = o.n;
        o.session_of[o.n] = o.ss.of_store[i];
        o.stores[o.n++] = s;
        est += estimate(s);
    }
    prs_clock_align(&o.clock, o.stores, o.n, opts); /* before any time is used: it shifts hosts' clocks */
    for (int i = 0; i < o.n; i++) {
        prs_rec r;
        if (prs_store_peek(o.stores[i], &r) && r.ts < origin)
            origin = r.ts;
    }
    int skipped = o.paths.nraw - o.n;
    prs_torch_select(&o.paths, o.stores, o.n);
    if (o.n == 0) {
        prs_log(PRS_ERROR, "none of the %d store(s) under %s could be read; nothing to parse", o.paths.nraw,
                opts->input);
        goto done;
    }
    if (origin == INT64_MAX)
        origin = 0;
    prs_model *m = &o.m;
    o.model = MODEL_OPEN; /* what the open allocated before a failure is freed too */
    if (prs_model_open(m, opts, o.stores, o.n, origin) != 0)
        goto done;
    prs_clock_report(&o.clock, &m->out);
    m->last_ns = origin;
    /* --jobs: the stores are read on reader threads from here (readers.c);
     * the merge and the model stay on this one, so the order is today's. */
    prs_readers *rd = prs_readers_start(o.stores, o.n, jobs);
    prs_merge mg;
    prs_merge_init(&mg, o.stores, o.n, rd);
    prs_progress bar;
    prs_progress_start(&bar, est, opts->progress);
    prs_store *s;
    while ((s = prs_merge_top(&mg)) && !prs_store_violations(ctx)) {
        prs_rec r;
        prs_merge_peek(&mg, s, &r);
        prs_sessions_note(&o.ss, o.session_of[s->index], r.ts,
                          r.dur > 0 && r.dur < INT64_MAX - r.ts ? r.ts + r.dur : r.ts);
        prs_model_record(m, &r);
        prs_merge_advance(&mg);
        if ((m->nrec & 65535) == 0)
            prs_progress_tick(&bar, m->nrec);
    }
    prs_progress_end(&bar);
    prs_merge_free(&mg);
    prs_readers_stop(rd); /* joined: the stores are this thread's again */
    if (prs_store_violations(ctx)) {
        abandon(&o);
        *again = 1;
        goto done;
    }
    warn_dropped_values(m, o.stores, o.n);
    prs_moe_activity(m, o.paths.activity, o.paths.nactivity);
    prs_model_finish(m);
    prs_timeline_activity(m->tl, o.paths.activity, o.paths.nactivity);
    prs_torch_timeline(m->tl, o.paths.torch, o.paths.ntorch, o.stores, o.n);
    rc = 0;
    if (prs_timeline_close(m->tl, o.stores, o.n) != 0)
        rc = 1;
    m->tl = NULL;
    prs_dbout_finish(m);
    if ((o.paths.nactivity || o.paths.ntorch) && opts->csv &&
        prs_report_ops_all((const char *const *)o.paths.activity, o.paths.nactivity,
                          (const char *const *)o.paths.torch, o.paths.ntorch, opts->output, &m->out.stage) != 0)
        rc = 1;
    prs_model_close(m);
    o.model = MODEL_CLOSED;
    if (prs_out_close(&m->out) != 0)
        rc = 1;
    prs_thrcpu_report(); /* SERVPROF_PARSE_THREAD_CPU: each thread's CPU time (thrcpu.h) */
    if (opts->summary)
        prs_summary_print(m, o.n, skipped, o.paths.nactivity + o.paths.ntorch, now_s() - t0, &o.ss, started_ns);
done:
    run_release(&o);
    return rc;
}
