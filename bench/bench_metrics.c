/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_metrics.c — what live metrics cost, in two phases reported apart:
 *
 *   1. records -> metrics: one thread records N requests' worth of the
 *      demo's vocabulary (10 records each: httpReq, Link, 3 queue events,
 *      BatchSchedule with a rid list, forward, detokenize, KVCacheStatus,
 *      httpRes) three ways: everything off, metrics on (tracing off), and
 *      the call sites alone with metrics on (the serving thread's share).
 *      Prints ns per request on the serving thread and on the drain thread
 *      (process CPU minus the serving thread's), and checks that the
 *      published requests_total is N and nothing was dropped (the figures
 *      are of a correct run). The recording thread pauses 10 ms every 250
 *      requests: a burst of 20 M records/s would fill its 4 MiB ring.
 *   2. a scrape of 64 processes: 64 metrics files with every histogram
 *      bucket filled, rendered by sp_metrics_render() (what
 *      `servprof metrics serve` does per GET /metrics) 50 times; once with
 *      one label set (64 workers of one role) and once with 64 (64 dp
 *      ranks). Prints median and max ms and the text size.
 *
 *   build/bench/bench_metrics [requests]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"
#include "servprof.h"

static int64_t cpu_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void one_request(int i)
{
    char http[32], eng[32];
    snprintf(http, sizeof http, "h%d", i);
    snprintf(eng, sizeof eng, "e%d", i);
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, http);
    servprof_event(r, "httpReq");
    servprof_link(eng, http);
    const char *q[3][2] = {{"Enqueue", "WAITING"}, {"Dequeue", "WAITING"}, {"Enqueue", "RUNNING"}};
    for (int k = 0; k < 3; k++) {
        r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
        servprof_res_str(r, eng);
        servprof_metric(r, "QueueSize", k);
        servprof_metric_scope(r, "QueueName", q[k][1]);
        servprof_event(r, q[k][0]);
    }
    int64_t t0 = servprof_now_ns();
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "BatchSchedule");
    if (r) {
        servprof_attr_array_begin(r, "rid");
        for (int k = 0; k < 8; k++) {
            servprof_attr_object_begin(r, NULL);
            servprof_attr_str(r, "rid", eng);
            servprof_attr_int(r, "iter", k);
            servprof_attr_int(r, "num_scheduled_tokens", 16);
            servprof_attr_end(r);
        }
        servprof_attr_end(r);
        servprof_attr_int(r, "batch_size", 8);
    }
    servprof_span_at(r, "BatchSchedule", t0, t0 + 1000);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "ModelExecute");
    servprof_span_at(r, "forward", t0, t0 + 2000000);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, http);
    servprof_event(r, "detokenize");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "KVCache");
    servprof_metric(r, "TotalBlocks", 1000);
    servprof_metric(r, "UsedBlocks", i % 1000);
    servprof_event(r, "KVCacheStatus");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, http);
    servprof_metric(r, "recvTokenSize", 100);
    servprof_metric(r, "replyTokenSize", 20);
    servprof_attr_str(r, "outcome", "ok");
    servprof_event(r, "httpRes");
}

static void write_config(const char *cfg, const char *dir, int metrics)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", cfg);
    FILE *f = fopen(tmp, "w");
    fprintf(f, "{\"enable\": 0, \"metric_enable\": %d, \"prof_dir\": \"%s/prof\"}\n", metrics, dir);
    fclose(f);
    rename(tmp, cfg);
}

static int wait_level(int want)
{
    for (int i = 0; i < 500; i++) {
        if (servprof_is_enabled(SERVPROF_LEVEL_INFO) == want)
            return 0;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL); /* a poll period, bounded */
    }
    return -1;
}

static double requests_published(const char *mdir)
{
    char *text;
    size_t len;
    sp_metrics_render(mdir, &text, &len);
    double total = 0;
    for (char *p = text; p && (p = strstr(p, "\nservprof_requests_total{")); p++) {
        char *sp = strchr(p, ' ');
        if (sp)
            total += strtod(sp + 1, NULL);
    }
    free(text);
    return total;
}

static void phase_records(const char *dir, int n)
{
    char cfg[600], mdir[600];
    snprintf(cfg, sizeof cfg, "%s/prof.json", dir);
    snprintf(mdir, sizeof mdir, "%s/prof/metrics", dir);
    write_config(cfg, dir, 0);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    servprof_init();

    int64_t t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < n; i++)
        one_request(i);
    double off = (double)(cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / n;

    write_config(cfg, dir, 1);
    if (wait_level(1) != 0) {
        fprintf(stderr, "metrics did not start\n");
        exit(1);
    }
    int64_t p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < n; i++) {
        one_request(i);
        /* A server's pace, not a burst of 20 M records/s: a pause every
         * 250 requests (150 KB of records) lets the drain thread keep up,
         * so nothing is dropped (checked below). Sleeping costs no CPU. */
        if (i % 250 == 249) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    int64_t thread = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    servprof_shutdown(); /* the drain thread's final pass, final publish */
    int64_t process = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - p0;
    double got = requests_published(mdir);
    servprof_stats st;
    servprof_get_stats(&st);
    printf("records -> metrics, %d requests x 10 records (%s):\n", n,
           got == n && st.dropped == 0 ? "all counted" : "WRONG COUNT");
    printf("  serving thread, everything off : %8.1f ns/request\n", off);
    printf("  serving thread, metrics on     : %8.1f ns/request\n", (double)thread / n);
    printf("  drain thread (process - serving): %7.1f ns/request\n", (double)(process - thread) / n);
    printf("  requests_total published %.0f, records dropped %llu\n", got,
           (unsigned long long)st.dropped);
}

static void fill(sp_mdata *d, int rank, int distinct)
{
    memset(d, 0, sizeof *d);
    snprintf(d->role, sizeof d->role, "engine");
    snprintf(d->model, sizeof d->model, "llama-3-8b");
    if (distinct)
        snprintf(d->dp_rank, sizeof d->dp_rank, "%d", rank);
    snprintf(d->outcome[0], SP_M_OUTCOME_LEN, "ok");
    d->outcome_n[0] = 1000 + rank;
    for (int c = 0; c < SP_MC_N; c++)
        d->counter[c] = 12345 + rank;
    for (int g = 0; g < SP_MG_N; g++)
        d->gauge[g] = g + rank;
    d->gauge_set = ~(uint64_t)0 >> (64 - SP_MG_N);
    for (int h = 0; h < SP_MH_N; h++) {
        for (int b = 0; b < SP_M_BUCKETS_MAX; b++)
            d->hist[h].b[b] = b + rank;
        d->hist[h].count = 1;
        d->hist[h].sum = 0.123 * rank;
    }
}

static void phase_scrape(const char *dir, int distinct)
{
    char mdir[600];
    snprintf(mdir, sizeof mdir, "%s/scrape-%d", dir, distinct);
    sp_mfile *files[64];
    sp_mdata *d = malloc(sizeof *d);
    for (int i = 0; i < 64; i++) {
        files[i] = sp_mfile_create(mdir);
        if (!files[i])
            exit(1);
        fill(d, i, distinct);
        sp_mfile_publish(files[i], d);
    }
    double ms[50];
    size_t bytes = 0;
    for (int k = 0; k < 50; k++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        char *text;
        sp_metrics_render(mdir, &text, &bytes);
        clock_gettime(CLOCK_MONOTONIC, &b);
        ms[k] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
        if (k == 0 && !strstr(text, "servprof_metrics_processes{state=\"live\"} 64\n")) {
            fprintf(stderr, "scrape did not see 64 live processes\n");
            exit(1);
        }
        free(text);
    }
    qsort(ms, 50, sizeof ms[0], cmp);
    printf("scrape of 64 processes, %s: median %.2f ms, max %.2f ms, %zu bytes of text\n",
           distinct ? "64 label sets (dp_rank 0..63)" : "one label set", ms[25], ms[49], bytes);
    for (int i = 0; i < 64; i++)
        sp_mfile_close(files[i]);
    free(d);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    char dir[] = "/tmp/sp-bench-metrics-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    phase_records(dir, n);
    phase_scrape(dir, 0);
    phase_scrape(dir, 1);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) != 0;
}
