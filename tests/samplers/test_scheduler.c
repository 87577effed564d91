/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_scheduler.c — the sampler thread: host passes of sane rows on an
 * absolute grid (pass k is due at base + k periods, by the deadlines the
 * thread itself records: none doubled, every skipped one counted, none
 * after the stop), per-core rows only at DETAILED, a stall is skipped
 * (counted) rather than replayed in a burst, stop wakes the thread before
 * its next deadline, and nothing runs when nothing is asked for. Rates and
 * the stop's latency are figures: bench/bench_sampler.c.
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

/* Runs the host sampler at hz until `want` passes were observed (the wait's
 * bound only stops a hung test), stops it, and checks the grid: returns
 * the stats. Every MemUsage row (one a pass) carries its pass's deadline. */
static sp_sampler_stats run_grid(sp_config *c, sp_session *s, int hz, int want)
{
    c->host_system_usage_freq = hz;
    obs_reset();
    sp_samplers_set_observer(stalling_obs, NULL);
    CHECK_INT(sp_samplers_start(s, c), 0);
    CHECK(obs_wait("MemUsage", 0, want) >= want);
    sp_samplers_stop();
    int64_t stopped = sp_now_monotonic_ns();
    sp_samplers_set_observer(NULL, NULL);
    sp_sampler_stats st;
    sp_samplers_get_stats(&st);
    CHECK_INT(obs_count("MemUsage", 0), (int)st.host_samples);
    CHECK(st.base_ns > 0 && st.end_ns <= stopped);
    int64_t period = 1000000000LL / hz, prev_slot = 0, gaps = 0;
    for (int i = 0; i < obs.n; i++) {
        obs_row *o = &obs.rows[i];
        CHECK(o->mono_ns <= st.end_ns); /* no pass after the thread ended */
        if (strcmp(o->name, "MemUsage"))
            continue;
        int64_t since = o->deadline_ns - st.base_ns;
        CHECK(since > 0 && since % period == 0); /* on the grid, not "now + period" */
        int64_t slot = since / period;
        CHECK(slot > prev_slot); /* none doubled, none out of order */
        gaps += slot - prev_slot - 1;
        prev_slot = slot;
        CHECK(o->mono_ns >= o->deadline_ns); /* none early */
    }
    /* Every skipped deadline counted (a skip after the last pass has no row
     * after it, so the count may be higher). */
    CHECK(gaps <= (int64_t)st.ticks_skipped);
    return st;
}

static void test_ten_hz(sp_config *c, sp_session *s)
{
    sp_sampler_stats st = run_grid(c, s, 10, 20);
    int passes = obs_count("MemUsage", 0);
    fprintf(stderr, "10 Hz: %d passes, %llu skipped, thread CPU %.2f ms\n", passes,
            (unsigned long long)st.ticks_skipped, st.thread_cpu_ns / 1e6);
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
}

static void test_per_core(sp_config *c, sp_session *s)
{
    c->profiler_level = SERVPROF_LEVEL_DETAILED;
    run_grid(c, s, 20, 4);
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    int cores = obs_count("CpuUsage", 1), passes = obs_count("CpuUsage", 0);
    CHECK(passes >= 1);
    CHECK(cores >= passes && cores <= passes * ncpu);
    c->profiler_level = SERVPROF_LEVEL_INFO;
}

static void test_stall(sp_config *c, sp_session *s)
{
    stall_once = 1; /* the observer sleeps 250 ms in the 5th pass */
    sp_sampler_stats st = run_grid(c, s, 10, 12);
    fprintf(stderr, "with a 250 ms stall: %llu passes, %llu skipped\n",
            (unsigned long long)st.host_samples, (unsigned long long)st.ticks_skipped);
    CHECK(st.ticks_skipped >= 2);
    /* No burst: the pass after the stall is due after the stall ended, not
     * at one of the deadlines that passed during it. */
    int k = 0;
    int64_t stall_end = 0;
    for (int i = 0; i < obs.n; i++)
        if (!strcmp(obs.rows[i].name, "MemUsage")) {
            k++;
            if (k == 5)
                stall_end = obs.rows[i].mono_ns + 250000000LL;
            if (k == 6)
                CHECK(obs.rows[i].deadline_ns >= stall_end);
        }
    CHECK(k >= 6);
}

static void test_prompt_stop(sp_config *c, sp_session *s)
{
    c->host_system_usage_freq = 1;
    CHECK_INT(sp_samplers_start(s, c), 0);
    sleep_ms(100); /* lets the thread reach its wait; the checks hold either way */
    sp_samplers_stop();
    sp_sampler_stats st;
    sp_samplers_get_stats(&st);
    /* Woken, not left to its deadline: by the thread's own clock it ended
     * before its first pass was due, and no pass ran. */
    CHECK(st.base_ns > 0);
    CHECK(st.end_ns < st.base_ns + 1000000000LL);
    CHECK_INT((int)st.host_samples, 0);
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
