/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_scheduler.c — the sampler thread: host sampling at 10 Hz for 2 s
 * gives 20 ± 2 passes of sane rows, per-core rows only at DETAILED, a
 * stall is skipped (counted) rather than replayed in a burst, stop wakes
 * the thread at once, and nothing runs when nothing is asked for.
 */
#include <math.h>

#include "check.h"
#include "smp_util.h"

static int stall_once; /* observer sleeps 250 ms at the 5th MemUsage row */

static void stalling_obs(void *ctx, const sp_sample_row *r)
{
    obs_fn(ctx, r);
    if (stall_once && !strcmp(r->name, "MemUsage") && obs_count("MemUsage", 0) == 5) {
        stall_once = 0;
        sleep_ms(250);
    }
}

static void run(sp_config *c, sp_session *s, int ms)
{
    obs_reset();
    sp_samplers_set_observer(stalling_obs, NULL);
    CHECK_INT(sp_samplers_start(s, c), 0);
    sleep_ms(ms);
    sp_samplers_stop();
    sp_samplers_set_observer(NULL, NULL);
}

static void test_ten_hz(sp_config *c, sp_session *s)
{
    c->host_system_usage_freq = 10;
    run(c, s, 2000);
    sp_sampler_stats st;
    sp_samplers_get_stats(&st);
    int passes = obs_count("MemUsage", 0);
    fprintf(stderr, "10 Hz for 2 s: %d passes, %llu skipped, thread CPU %.2f ms\n", passes,
            (unsigned long long)st.ticks_skipped, st.thread_cpu_ns / 1e6);
    CHECK_INT(passes, (int)st.host_samples);
    if (smp_sanitized())
        CHECK(passes >= 10 && passes <= 22);
    else
        CHECK(passes >= 18 && passes <= 22);
    CHECK(obs_count("CpuUsage", 0) >= passes - 1);
    CHECK(obs_count("ProcessUsage", 0) >= passes - 1);
    CHECK_INT(obs_count("CpuUsage", 1), 0); /* INFO level: no per-core rows */
    for (int i = 0; i < obs.n; i++) {
        obs_row *o = &obs.rows[i];
        if (!strcmp(o->name, "CpuUsage"))
            CHECK(obs_value(o, "usage") >= 0 && obs_value(o, "usage") <= 100);
        if (!strcmp(o->name, "MemUsage"))
            CHECK(obs_value(o, "total") > 0 && obs_value(o, "used") >= 0 &&
                  obs_value(o, "used") <= obs_value(o, "total"));
    }
    /* deadlines are absolute: the passes keep the 100 ms grid on average */
    int first = -1, last = -1, k = 0;
    for (int i = 0; i < obs.n; i++)
        if (!strcmp(obs.rows[i].name, "MemUsage")) {
            if (first < 0)
                first = i;
            last = i;
            k++;
        }
    if (k >= 2 && !smp_sanitized()) {
        double mean_ms = (obs.rows[last].mono_ns - obs.rows[first].mono_ns) / 1e6 / (k - 1);
        fprintf(stderr, "mean interval %.3f ms\n", mean_ms);
        CHECK(mean_ms > 90 && mean_ms < 110);
    }
}

static void test_per_core(sp_config *c, sp_session *s)
{
    c->host_system_usage_freq = 20;
    c->profiler_level = SERVPROF_LEVEL_DETAILED;
    run(c, s, 400);
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    int cores = obs_count("CpuUsage", 1), passes = obs_count("CpuUsage", 0);
    CHECK(passes >= 1);
    CHECK(cores >= passes && cores <= passes * ncpu);
    c->profiler_level = SERVPROF_LEVEL_INFO;
}

static void test_stall(sp_config *c, sp_session *s)
{
    c->host_system_usage_freq = 10;
    stall_once = 1;
    run(c, s, 2000);
    sp_sampler_stats st;
    sp_samplers_get_stats(&st);
    fprintf(stderr, "with a 250 ms stall: %llu passes, %llu skipped\n",
            (unsigned long long)st.host_samples, (unsigned long long)st.ticks_skipped);
    CHECK(st.ticks_skipped >= 2);
    CHECK(st.host_samples <= 19);
    /* no burst after the stall: rows after it are >= 40 ms apart */
    int64_t prev = 0;
    int bursts = 0;
    for (int i = 0; i < obs.n; i++)
        if (!strcmp(obs.rows[i].name, "MemUsage")) {
            if (prev && obs.rows[i].mono_ns - prev < 40000000)
                bursts++;
            prev = obs.rows[i].mono_ns;
        }
    if (!smp_sanitized())
        CHECK_INT(bursts, 0);
}

static void test_prompt_stop(sp_config *c, sp_session *s)
{
    c->host_system_usage_freq = 1;
    sp_samplers_start(s, c);
    sleep_ms(100);
    int64_t t0 = sp_now_monotonic_ns();
    sp_samplers_stop();
    double ms = (sp_now_monotonic_ns() - t0) / 1e6;
    fprintf(stderr, "stop took %.2f ms\n", ms);
    CHECK(ms < (smp_sanitized() ? 5000 : 500));
    sp_samplers_stop(); /* idempotent */
}

/* Starts and stops the samplers with c; nonzero when no sampler thread
 * ran and no row came (the thread sets its run time as it ends, and the
 * stop joins it, so no wait is needed to see one that ran). */
static int nothing_ran(sp_config *c, sp_session *s)
{
    obs_reset();
    sp_samplers_set_observer(obs_fn, NULL);
    CHECK_INT(sp_samplers_start(s, c), 0);
    sp_samplers_stop();
    sp_samplers_set_observer(NULL, NULL);
    sp_sampler_stats st;
    sp_samplers_get_stats(&st);
    return st.run_ns == 0 && obs.n == 0;
}

static void test_nothing_asked(sp_config *c, sp_session *s)
{
    c->host_system_usage_freq = -1;
    c->npu_memory_usage_freq = -1;
    c->acl_task_time = 0;
    CHECK(nothing_ran(c, s));
    /* out-of-range values from a hand-made config are "off", not clamped */
    c->host_system_usage_freq = 500;
    CHECK(nothing_ran(c, s));
    /* acl_task_time 3 is the Python side's: no CUPTI here */
    c->host_system_usage_freq = -1;
    c->acl_task_time = 3;
    setenv("SERVPROF_CUPTI_LIB", "/nonexistent/libcupti.so", 1);
    capture_begin();
    CHECK(nothing_ran(c, s));
    char *log = capture_end();
    CHECK(strstr(log, "CUPTI") == NULL);
    free(log);
    c->acl_task_time = 0;
}

int main(void)
{
    char dir[256];
    sp_config c;
    sp_session s;
    smp_tmpdir(dir, sizeof dir, "sched");
    smp_setup(&c, &s, dir);
    test_ten_hz(&c, &s);
    test_per_core(&c, &s);
    test_stall(&c, &s);
    test_prompt_stop(&c, &s);
    test_nothing_asked(&c, &s);
    CHECK_DONE();
}
