/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_sampler.c — what the host sampler costs, and how well it keeps time.
 *
 *   bench_sampler [seconds=5] [hz=50]
 *
 * Phase 1: one host pass (read and parse /proc/stat, /proc/meminfo,
 *          /proc/self/stat, emit the rows) in a tight loop: CPU µs per pass,
 *          at INFO (3 rows) and at DETAILED (+ one row per core).
 * Phase 2: the real sampler thread at `hz` for `seconds`: CPU time of that
 *          thread (CLOCK_THREAD_CPUTIME_ID, read by the thread at exit)
 *          divided by wall time = share of one core; the goal is <= 0.5 %.
 *          Beside it runs a thread that only wakes up at the same rate, so
 *          the machine's own cost of a wake-up is visible next to ours.
 *          Also the timing: mean interval, worst interval, and drift =
 *          (last - first) - (n - 1) * period, which absolute deadlines keep
 *          near zero however long the run. And how long the stop call
 *          took: it wakes the thread out of its wait (tests check only that
 *          no pass ran after it; the figure lives here).
 * Rows go through the public recording API, so when a session is running
 * (SERVICE_PROF_CONFIG_PATH with enable 1) the cost of recording them is
 * included; without one, rows stop at servprof_rec_begin().
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler.h"

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t times[100000];
static int ntimes;

static void on_row(void *ctx, const sp_sample_row *r)
{
    (void)ctx;
    if (!strcmp(r->name, "MemUsage") && ntimes < 100000)
        times[ntimes++] = sp_now_monotonic_ns();
}

/* The baseline: a thread that wakes up at the same rate with absolute
 * deadlines and does nothing. On a VM a wake-up alone is tens of µs. */
static int idle_hz, idle_stop;
static double idle_share;

static void *idle_main(void *arg)
{
    (void)arg;
    int64_t t0 = sp_now_monotonic_ns(), next = t0, c0 = thread_cpu_ns();
    while (!__atomic_load_n(&idle_stop, __ATOMIC_RELAXED)) {
        next += 1000000000LL / idle_hz;
        struct timespec ts = {next / 1000000000, next % 1000000000};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    idle_share = 100.0 * (double)(thread_cpu_ns() - c0) / (double)(sp_now_monotonic_ns() - t0);
    return NULL;
}

static void phase1(int per_core)
{
    sp_host_sampler *h = sp_host_open(per_core);
    if (!h) {
        printf("host sampler unavailable\n");
        exit(1);
    }
    const int n = 2000;
    int64_t c0 = thread_cpu_ns();
    for (int i = 0; i < n; i++)
        sp_host_sample(h);
    int64_t c1 = thread_cpu_ns();
    sp_host_close(h);
    double us = (double)(c1 - c0) / n / 1e3;
    printf("one host pass (%s): %.1f us CPU  -> at 50 Hz %.3f %% of one core\n",
           per_core ? "DETAILED, per core too" : "INFO", us, us * 50 / 1e6 * 100);
}

/* Runs the sampler thread at hz for seconds, next to the idle waker.
 * recording: through the runtime with a real session (rows land in a raw
 * store); otherwise the samplers alone (rows stop at servprof_rec_begin).
 * Returns the share of one core the sampler thread used. */
static double phase2(int seconds, int hz, const char *tmp)
{
    ntimes = 0;
    idle_stop = 0;
    idle_hz = hz;
    sp_samplers_set_observer(on_row, NULL);
    pthread_t idle;
    pthread_create(&idle, NULL, idle_main, NULL);
    if (tmp) {
        if (servprof_start() != 0) {
            printf("could not start a session in %s\n", tmp);
            exit(1);
        }
    } else {
        sp_config c;
        sp_session s;
        memset(&c, 0, sizeof c);
        memset(&s, 0, sizeof s);
        c.profiler_level = SERVPROF_LEVEL_INFO;
        c.host_system_usage_freq = hz;
        c.npu_memory_usage_freq = -1;
        sp_samplers_start(&s, &c);
    }
    struct timespec ts = {seconds, 0};
    while (nanosleep(&ts, &ts) != 0)
        ;
    int64_t stop_t0 = sp_now_monotonic_ns();
    if (tmp)
        servprof_stop();
    else
        sp_samplers_stop();
    double stop_ms = (sp_now_monotonic_ns() - stop_t0) / 1e6;
    __atomic_store_n(&idle_stop, 1, __ATOMIC_RELAXED);
    pthread_join(idle, NULL);
    sp_samplers_set_observer(NULL, NULL);
    sp_sampler_stats st;
    sp_samplers_get_stats(&st);
    double share = 100.0 * (double)st.thread_cpu_ns / (double)st.run_ns;
    printf("%s: sampler thread at %d Hz for %d s: %llu passes, %llu skipped, CPU %.2f ms "
           "= %.3f %% of one core (goal <= 0.5 %%), %.1f us per pass\n",
           tmp ? "recording into a raw store" : "samplers alone, no session", hz, seconds,
           (unsigned long long)st.host_samples, (unsigned long long)st.ticks_skipped,
           st.thread_cpu_ns / 1e6, share,
           st.host_samples ? st.thread_cpu_ns / 1e3 / (double)st.host_samples : 0.0);
    printf("  of which opening the samplers %.2f ms; a thread that only wakes up at %d Hz, "
           "run alongside, used %.3f %% of one core (the machine's cost of waking up)\n",
           st.open_cpu_ns / 1e6, hz, idle_share);
    printf("  stop: %.3f ms from the stop call to its return (the thread is woken, not left "
           "to its next deadline; %s)\n", stop_ms,
           tmp ? "with the session's drain" : "samplers alone");
    if (ntimes >= 2) {
        double period = 1e9 / hz, worst = 0;
        for (int i = 1; i < ntimes; i++) {
            double d = (double)(times[i] - times[i - 1]);
            if (d > worst)
                worst = d;
        }
        double span = (double)(times[ntimes - 1] - times[0]);
        /* skipped ticks are whole periods with no row */
        double ticks = (double)(ntimes - 1) + (double)st.ticks_skipped;
        printf("  timing: mean interval %.3f ms (period %.3f), worst %.3f ms, last pass "
               "%+.3f ms off the grid of the first\n", span / ticks / 1e6, period / 1e6,
               worst / 1e6, (span - ticks * period) / 1e6);
    }
    return share;
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 5;
    int hz = argc > 2 ? atoi(argv[2]) : 50;
    if (seconds < 1 || hz < 1 || hz > 50) {
        fprintf(stderr, "usage: bench_sampler [seconds>=1] [hz 1..50]\n");
        return 2;
    }
    /* A config with collection off, set before any call: the first row
     * emitted initializes the library, which must find this file. The
     * recording phase then starts a session with servprof_start(). */
    char tmp[] = "/tmp/servprof-bench-sampler-XXXXXX", cfg[128], text[512];
    if (!mkdtemp(tmp))
        return 2;
    snprintf(cfg, sizeof cfg, "%s/c.json", tmp);
    snprintf(text, sizeof text, "{\"enable\": 0, \"prof_dir\": \"%s\", "
             "\"host_system_usage_freq\": %d}", tmp, hz);
    FILE *f = fopen(cfg, "w");
    if (!f)
        return 2;
    fputs(text, f);
    fclose(f);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    setenv("PROF_LOG_LEVEL", "WARNING", 1);
    sp_log_reset();
    servprof_init();
    phase1(0);
    phase1(1);
    double alone = phase2(seconds, hz, NULL);
    double recorded = phase2(seconds, hz, tmp);
    servprof_shutdown();
    printf("data left in %s\n", tmp);
    return alone <= 0.5 && recorded <= 0.5 ? 0 : 1;
}
