/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_stress.c — `servprof stress`: a synthetic instrumented process, for
 * users to check their setup (config file, prof_dir, disk) and how many
 * records per second this machine stores.
 *
 *   servprof stress [-t|--threads N] [-r|--rate R] [-s|--seconds S]
 *
 * N threads (default 2) each record R records per second (default 10000)
 * for S seconds (default 5): scheduler steps as a serving framework emits
 * them, a BatchSchedule span whose begin carries the batch's rid list of
 * objects {rid, iter, type, num_scheduled_tokens}, batch_type and
 * batch_size (two records per span: begin and end). Collection follows
 * SERVICE_PROF_CONFIG_PATH through the normal runtime when it is set (so
 * "enable" in the file decides, and may change while it runs); otherwise
 * stress starts a session itself with the defaults. At the end it prints
 * records emitted, accepted, dropped and not recorded (these three add up
 * to the emitted), rows written, where the accepted records went (stored,
 * lost, taken by live metrics only: these add up to the accepted) and the
 * rate achieved.
 * Exit status: 0, 1 when records were dropped or lost, the store failed,
 * the accepted records do not add up, or
 * collection could not start, 2 on a usage error.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "opts.h"
#include "servprof.h"

typedef struct stress_opts {
    int threads;
    double rate; /* records per second per thread */
    double seconds;
} stress_opts;

typedef struct worker {
    pthread_t th;
    int index;
    const stress_opts *o;
    long emitted; /* recording calls that finish a record (2 per step) */
} worker;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One scheduler step: a span with the batch's request list. */
static void step(int thread, long n)
{
    char rid[32];
    int batch = 1 + (int)(n % 8);
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "BatchSchedule");
    if (r) {
        servprof_attr_array_begin(r, "rid");
        for (int i = 0; i < batch; i++) {
            snprintf(rid, sizeof rid, "stress-%d-%ld", thread, (n + i) % 1000);
            servprof_attr_object_begin(r, NULL);
            servprof_attr_str(r, "rid", rid);
            servprof_attr_int(r, "iter", (n / 8) % 64);
            servprof_attr_int(r, "type", i == 0 ? 0 : 1);
            servprof_attr_int(r, "num_scheduled_tokens", i == 0 ? 128 : 1);
            servprof_attr_end(r);
        }
        servprof_attr_end(r);
        servprof_attr_str(r, "batch_type", batch > 1 ? "Prefill,Decode" : "Prefill");
        servprof_attr_int(r, "batch_size", batch);
    }
    servprof_span span = servprof_span_begin(r, "BatchSchedule");
    servprof_span_end(span);
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    char name[32];
    snprintf(name, sizeof name, "stress-%d", w->index);
    servprof_set_thread_name(name);
    int64_t t0 = mono_ns(), end = t0 + (int64_t)(w->o->seconds * 1e9);
    double per_ns = w->o->rate / 1e9;
    long steps = 0;
    for (int64_t now = t0; now < end; now = mono_ns()) {
        long due = (long)((double)(now - t0) * per_ns) / 2; /* two records per step */
        if (steps >= due) {
            struct timespec ts = {0, 200000}; /* ahead of the pace: 0.2 ms */
            nanosleep(&ts, NULL);
            continue;
        }
        for (int k = 0; k < 256 && steps < due; k++)
            step(w->index, steps++);
    }
    w->emitted = steps * 2;
    return NULL;
}

enum { OPT_THREADS = 1, OPT_RATE, OPT_SECONDS };

static const cli_opt stress_options[] = {
    {OPT_THREADS, "threads", 't', CLI_VALUE, "N", NULL, "threads recording (1..256, default 2)"},
    {OPT_RATE, "rate", 'r', CLI_VALUE, "R", NULL,
     "records per second per thread (1..10000000, default 10000)"},
    {OPT_SECONDS, "seconds", 's', CLI_VALUE, "S", NULL, "how long (0.1..3600, default 5)"},
    {0},
};

static const cli_verb stress_verb = {
    "stress", "[options]",
    "Records a synthetic load (BatchSchedule spans with rid lists) to check a setup and\n"
    "its disk. SERVICE_PROF_CONFIG_PATH, when set, decides whether collection is on;\n"
    "otherwise a session is started with the defaults.",
    stress_options};

/* What a failed servprof_init() means for the user, by its code: the
 * library's own ERROR line (above) names the folder or key. */
static const char *why_not_started(int rc, const char *cfg)
{
    static char buf[512];
    switch (rc) {
    case SERVPROF_EIO:
    case SERVPROF_ESTORE:
        return "the store could not be created under prof_dir (the folder cannot be created or written, or "
               "the disk is full: the ERROR line above names it)";
    case SERVPROF_ECONFIG:
        snprintf(buf, sizeof buf, "the config file %s was rejected (the ERROR line above says why; "
                 "check it with: servprof config check %s)", cfg, cfg);
        return buf;
    default:
        snprintf(buf, sizeof buf, "%s (see the log above)", servprof_strerror(rc));
        return buf;
    }
}

int cmd_stress(int argc, char **argv)
{
    stress_opts o = {2, 10000, 5};
    cli_parser p;
    cli_init(&p, &stress_verb, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        double v;
        if (id == CLI_STOP)
            return p.status;
        if (id == CLI_ARG)
            return cli_error(&stress_verb, "takes no argument (got '%s')", p.value);
        if (id == OPT_THREADS && cli_number(&p, 1, 256, &v) == 0)
            o.threads = (int)v;
        else if (id == OPT_RATE && cli_number(&p, 1, 1e7, &v) == 0)
            o.rate = v;
        else if (id == OPT_SECONDS && cli_number(&p, 0.1, 3600, &v) == 0)
            o.seconds = v;
        else
            return 2; /* cli_number said why */
    }

    const char *cfg = getenv("SERVICE_PROF_CONFIG_PATH");
    int started = 0, init_failed = 0;
    if (cfg && *cfg) {
        int rc = servprof_init();
        if (rc != 0) {
            init_failed = 1;
            fprintf(stderr, "servprof stress: collection did not start: %s; this run records nothing\n",
                    why_not_started(rc, cfg));
        } else if (!servprof_is_enabled(SERVPROF_LEVEL_INFO))
            fprintf(stderr, "servprof stress: collection is off in %s (\"enable\" is not 1, or "
                    "profiler_level/domain exclude INFO BatchSchedule); records are not stored "
                    "unless it is enabled while this runs (servprof enable %s)\n", cfg, cfg);
    } else {
        int rc = servprof_start();
        if (rc != 0) {
            fprintf(stderr, "servprof stress: cannot start collection: %s\n",
                    servprof_strerror(rc));
            return 1;
        }
        started = 1;
    }

    servprof_stats a, b;
    servprof_get_stats(&a);
    worker *ws = calloc((size_t)o.threads, sizeof *ws);
    if (!ws)
        return 1;
    int64_t t0 = mono_ns();
    for (int i = 0; i < o.threads; i++) {
        ws[i].index = i;
        ws[i].o = &o;
        if (pthread_create(&ws[i].th, NULL, run_worker, &ws[i]) != 0) {
            fprintf(stderr, "servprof stress: cannot start thread %d\n", i);
            o.threads = i;
            break;
        }
    }
    long emitted = 0;
    for (int i = 0; i < o.threads; i++) {
        pthread_join(ws[i].th, NULL);
        emitted += ws[i].emitted;
    }
    double took = (double)(mono_ns() - t0) / 1e9;
    free(ws);
    char store[4096] = "";
    if (servprof_store_path(store, sizeof store) != 0)
        snprintf(store, sizeof store, "(not collecting at the end)");
    if (started)
        servprof_stop();
    else
        servprof_shutdown(); /* drains and commits what this run recorded */
    servprof_get_stats(&b);

    unsigned long long accepted = b.records - a.records, dropped = b.dropped - a.dropped;
    unsigned long long written = b.written - a.written, errors = b.write_errors - a.write_errors;
    /* emitted = accepted + dropped + not recorded: a span whose begin was
     * dropped has no end to record (its end call does nothing), and with
     * collection off nothing is recorded at all. */
    unsigned long long kept = accepted + dropped;
    unsigned long long unrecorded = (unsigned long long)emitted > kept ? (unsigned long long)emitted - kept : 0;
    printf("threads:            %d\n", o.threads);
    printf("seconds:            %.2f\n", took);
    printf("records emitted:    %ld (asked %.0f/s per thread; a span's begin and end are two)\n", emitted,
           o.rate);
    printf("records accepted:   %llu\n", accepted);
    printf("records dropped:    %llu (buffers full)\n", dropped);
    printf("not recorded:       %llu (ends of spans whose begin was dropped, and records while "
           "collection was off)\n", unrecorded);
    printf("rows written:       %llu (a span's begin and end make one row)\n", written);
    /* Where the accepted records went: stored + lost + live metrics only
     * adds up to accepted once the stop has drained every buffer. */
    unsigned long long stored = b.stored - a.stored, lost = b.lost - a.lost,
                       monly = b.metrics_only - a.metrics_only;
    unsigned long long placed = stored + lost + monly;
    printf("records stored:     %llu (in those rows)\n", stored);
    printf("records lost:       %llu (store errors, rolled-back transactions)\n", lost);
    printf("live metrics only:  %llu (taken by live metrics, tracing off: no rows)\n", monly);
    if (placed != accepted)
        printf("unaccounted:        %lld (accepted - stored - lost - live metrics only)\n",
               (long long)(accepted - placed));
    printf("write errors:       %llu\n", errors);
    printf("achieved rate:      %.0f records/s (%.0f per thread)\n", (double)emitted / took,
           (double)emitted / took / (o.threads ? o.threads : 1));
    printf("store:              %s\n", store);
    return dropped || errors || init_failed || lost || placed != accepted ? 1 : 0;
}
