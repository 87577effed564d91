/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_host_parse.c — the /proc parsers on crafted text (odd command
 * old kernels without MemAvailable, missing lines, counters going
 * backwards, malformed statm), then one real pass over this machine's /proc.
 */
#include <math.h>

#include "check.h"
#include "smp_util.h"

static const char stat_text[] =
    "cpu  100 0 50 800 50 0 0 0 0 0\n"
    "cpu0 60 0 20 400 20 0 0 0 0 0\n"
    "cpu1 40 0 30 400 30 0 0 0 0 0\n"
    "intr 12345 0 0\n"
    "ctxt 999\n";
static const char stat_text2[] =
    "cpu  200 0 100 850 50 0 0 0 0 0\n"
    "cpu0 160 0 20 420 20 0 0 0 0 0\n"
    "cpu1 40 0 80 430 30 0 0 0 0 0\n";

static void test_stat(void)
{
    sp_cpu_times all, all2, cpus[4] = {{0}}, cpus2[4] = {{0}};
    int n = -1;
    CHECK_INT(sp_host_parse_stat(stat_text, &all, cpus, 4, &n), 0);
    CHECK_INT(n, 2);
    CHECK_INT(all.total, 1000);
    CHECK_INT(all.busy, 200); /* idle 800 is not busy; iowait 50 is */
    CHECK_INT(cpus[1].busy, 100);
    CHECK_INT(sp_host_parse_stat(stat_text2, &all2, cpus2, 4, &n), 0);
    /* 150 busy jiffies more out of 200: 75 % */
    CHECK(fabs(sp_cpu_busy_pct(&all, &all2) - 75.0) < 1e-9);
    CHECK(fabs(sp_cpu_busy_pct(&cpus[0], &cpus2[0]) - 100.0 * 100 / 120) < 1e-9);
    CHECK(fabs(sp_cpu_busy_pct(&cpus[1], &cpus2[1]) - 62.5) < 1e-9); /* 50 of 80 */
    /* no time passed, or counters went backwards: no figure */
    CHECK(sp_cpu_busy_pct(&all, &all) < 0);
    CHECK(sp_cpu_busy_pct(&all2, &all) < 0);
    /* old kernel: only 4 fields */
    CHECK_INT(sp_host_parse_stat("cpu 10 0 10 80\n", &all, cpus, 4, &n), 0);
    CHECK_INT(all.total, 100);
    CHECK_INT(n, 0);
    /* garbage and missing aggregate line */
    CHECK_INT(sp_host_parse_stat("", &all, cpus, 4, &n), -1);
    CHECK_INT(sp_host_parse_stat("cpu0 1 2 3 4\n", &all, cpus, 4, &n), -1);
    CHECK_INT(sp_host_parse_stat("cpu  x y z\n", &all, cpus, 4, &n), -1);
    /* a core index beyond the array is ignored, not written */
    CHECK_INT(sp_host_parse_stat("cpu  1 1 1 1\ncpu9 1 1 1 1\n", &all, cpus, 4, &n), 0);
    CHECK_INT(n, 0);
}

static void test_uptime(void)
{
    int64_t up = -1, idle = -1;
    CHECK_INT(sp_host_parse_uptime("9610.04 5155.18\n", &up, &idle), 0);
    CHECK_INT(up, 961004);
    CHECK_INT(idle, 515518);
    /* one decimal, none, extra digits: still centiseconds */
    CHECK_INT(sp_host_parse_uptime("12.5 3 \n", &up, &idle), 0);
    CHECK_INT(up, 1250);
    CHECK_INT(idle, 300);
    CHECK_INT(sp_host_parse_uptime("1.239 0.001\n", &up, &idle), 0);
    CHECK_INT(up, 123);
    CHECK_INT(idle, 0);
    CHECK_INT(sp_host_parse_uptime("", &up, &idle), -1);
    CHECK_INT(sp_host_parse_uptime("12.00\n", &up, &idle), -1);
    CHECK_INT(sp_host_parse_uptime("x 1.00\n", &up, &idle), -1);
    CHECK_INT(sp_host_parse_uptime("99999999999999999999.00 1\n", &up, &idle), -1);
    /* 2 CPUs for 1 s = 200 cs, 50 of them idle: 75 % busy */
    CHECK(fabs(sp_uptime_busy_pct(100, 50, 2) - 75.0) < 1e-9);
    CHECK(fabs(sp_uptime_busy_pct(100, 0, 4) - 100.0) < 1e-9);
    /* rounding can show more idle than elapsed: 0, not negative */
    CHECK(sp_uptime_busy_pct(2, 5, 2) == 0.0);
    /* no time passed, idle backwards, no CPU: no figure */
    CHECK(sp_uptime_busy_pct(0, 0, 2) < 0);
    CHECK(sp_uptime_busy_pct(10, -1, 2) < 0);
    CHECK(sp_uptime_busy_pct(10, 1, 0) < 0);
}

static void test_meminfo(void)
{
    double total, avail;
    CHECK_INT(sp_host_parse_meminfo("MemTotal:       16384000 kB\nMemFree:  1000 kB\n"
                                    "MemAvailable:    8192000 kB\nBuffers: 5 kB\n",
                                    &total, &avail), 0);
    CHECK(fabs(total - 16000.0) < 1e-9);
    CHECK(fabs(avail - 8000.0) < 1e-9);
    /* no MemAvailable (kernel < 3.14): free + buffers + cached */
    CHECK_INT(sp_host_parse_meminfo("MemTotal: 10240 kB\nMemFree: 1024 kB\nBuffers: 1024 kB\n"
                                    "Cached: 2048 kB\nSwapCached: 999 kB\n", &total, &avail), 0);
    CHECK(fabs(avail - 4.0) < 1e-9);
    CHECK_INT(sp_host_parse_meminfo("MemFree: 1 kB\n", &total, &avail), -1);
    CHECK_INT(sp_host_parse_meminfo("", &total, &avail), -1);
    /* "MemTotalX" is not MemTotal */
    CHECK_INT(sp_host_parse_meminfo("MemTotalX: 5 kB\n", &total, &avail), -1);
}

static void test_statm(void)
{
    int64_t rss = -1;
    CHECK_INT(sp_host_parse_statm("123456 7890 1000 200 0 5000 0\n", &rss), 0);
    CHECK_INT(rss, 7890);
    CHECK_INT(sp_host_parse_statm("", &rss), -1);
    CHECK_INT(sp_host_parse_statm("12 x\n", &rss), -1);
    CHECK_INT(sp_host_parse_statm("12\n", &rss), -1);
    CHECK_INT(sp_host_parse_statm("12 -5 1\n", &rss), -1);
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One real pass over this machine's /proc; per_core picks /proc/stat
 * (DETAILED) or /proc/uptime (INFO) for the machine's CPU. */
static void test_real_proc(int per_core)
{
    sp_samplers_set_observer(obs_fn, NULL);
    obs_reset();
    /* Burn 100 ms of this thread's CPU so the rates have something to
     * measure. On a loaded machine that takes longer than 100 ms of wall
     * time, so the least the process figure can be is that CPU over the
     * wall time around the sampler's window [open, sample]. */
    int64_t w0 = sp_now_monotonic_ns();
    sp_host_sampler *h = sp_host_open(per_core);
    CHECK(h != NULL);
    if (!h)
        return;
    volatile double x = 0;
    int64_t c0 = thread_cpu_ns(), burned;
    while ((burned = thread_cpu_ns() - c0) < 100000000)
        x += 1.0;
    sp_host_sample(h);
    double burned_pct = 100.0 * (double)burned / (double)(sp_now_monotonic_ns() - w0);
    sp_host_close(h);
    sp_samplers_set_observer(NULL, NULL);
    CHECK_INT(obs_count("CpuUsage", 0), 1);
    CHECK_INT(obs_count("MemUsage", 0), 1);
    CHECK_INT(obs_count("ProcessUsage", 0), 1);
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (per_core)
        CHECK(obs_count("CpuUsage", 1) >= 1 && obs_count("CpuUsage", 1) <= ncpu);
    else
        CHECK_INT(obs_count("CpuUsage", 1), 0);
    for (int i = 0; i < obs.n; i++) {
        obs_row *o = &obs.rows[i];
        CHECK_STR(o->domain, "host");
        if (!strcmp(o->name, "CpuUsage")) {
            double u = obs_value(o, "usage");
            CHECK(u >= 0 && u <= 100);
            /* this thread was busy the whole time: at least one CPU's worth,
             * less the 10 ms rounding of the counters */
            if (!o->has_scope)
                CHECK(u >= 100.0 / (double)sysconf(_SC_NPROCESSORS_ONLN) - 30.0);
            CHECK_INT(o->level, o->has_scope ? SERVPROF_LEVEL_DETAILED : SERVPROF_LEVEL_INFO);
            if (o->has_scope)
                CHECK(o->scope >= 0 && o->scope < ncpu);
        } else if (!strcmp(o->name, "MemUsage")) {
            double used = obs_value(o, "used"), av = obs_value(o, "available"),
                   tot = obs_value(o, "total");
            CHECK(tot > 64 && used > 0 && av > 0);
            CHECK(fabs(used + av - tot) < 1e-6);
        } else if (!strcmp(o->name, "ProcessUsage")) {
            double cpu = obs_value(o, "cpu"), rss = obs_value(o, "rss");
            CHECK(cpu >= 0.95 * burned_pct && cpu <= 100.0 * (double)ncpu + 1);
            CHECK(rss > 0.5 && rss < 1e6);
        }
    }
}

int main(void)
{
    test_stat();
    test_uptime();
    test_meminfo();
    test_statm();
    test_real_proc(1);
    test_real_proc(0);
    CHECK_DONE();
}
