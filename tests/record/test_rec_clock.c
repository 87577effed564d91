/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_clock.c — the recording clock (clock.h): TSC ticks taken on the
 * hot path and converted by the writer land as CLOCK_REALTIME ns, as close
 * as a realtime read would be; times the caller passes (servprof_span_at
 * with servprof_now_ns values) are stored exactly; and the same holds with
 * the hot path on CLOCK_REALTIME (SERVPROF_CLOCK=realtime, or no TSC).
 */
#include "clock.h"
#include "rec_test.h"

/* The conversion alone: ticks read between two realtime reads convert into
 * that interval (with slack for the calibration error and, under
 * sanitizers or a busy machine, a preempted read), and increasing ticks
 * never convert to decreasing ns. */
static void check_conversion(void)
{
    if (!sp_clock_ticks) {
        printf("TSC not used on this machine: conversion not exercised\n");
        return;
    }
    const int64_t slack = rt_sanitized() ? 2000000 : 200000; /* 2 ms / 200 µs */
    int64_t prev_ticks = 0, prev_ns = 0;
    int bad = 0, outside = 0;
    for (int i = 0; i < 200; i++) {
        int64_t before = servprof_now_ns();
        int ticks_flag;
        int64_t t = sp_clock_read(&ticks_flag);
        int64_t after = servprof_now_ns();
        CHECK_INT(ticks_flag, 1);
        int64_t ns = sp_clock_ticks_to_ns(t);
        if (ns < before - slack || ns > after + slack) {
            if (outside++ < 3)
                fprintf(stderr, "tick %lld -> %lld ns, read between %lld and %lld\n",
                        (long long)t, (long long)ns, (long long)before, (long long)after);
        }
        if (prev_ticks && t > prev_ticks && ns < prev_ns)
            bad++;
        prev_ticks = t;
        prev_ns = ns;
        if (i % 20 == 0)
            rt_sleep_ms(5); /* new calibration points between reads */
    }
    CHECK_INT(outside, 0);
    CHECK_INT(bad, 0);

    /* Older ticks converted after newer ones (a ring drained late) still
     * convert in order. */
    int f;
    int64_t a = sp_clock_read(&f);
    rt_sleep_ms(2);
    int64_t b = sp_clock_read(&f);
    rt_sleep_ms(2);
    int64_t c = sp_clock_read(&f);
    int64_t nc = sp_clock_ticks_to_ns(c), na = sp_clock_ticks_to_ns(a), nb = sp_clock_ticks_to_ns(b);
    CHECK(na < nb && nb < nc);
    CHECK(nc - na >= 3500000 && nc - na < 1000000000); /* ~4 ms apart, slept at least that */
}

/* Records through the API with the hot path on ticks (1) or realtime (0);
 * their stored times must fall inside the realtime interval around them. */
static void check_store(int use_ticks)
{
    int old = sp_clock_use_ticks(use_ticks);
    char dir[512], store[4096], sql[512];
    rt_tmpdir(dir, sizeof dir);
    CHECK_INT(rt_open(dir, 0, store, sizeof store), 0);
    const int64_t slack = rt_sanitized() ? 2000000 : 200000;

    int64_t t0 = servprof_now_ns();
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Clock");
    servprof_attr_int(r, "i", 1);
    servprof_event(r, "ev");
    int64_t t1 = servprof_now_ns();
    rt_sleep_ms(3);
    int64_t t2 = servprof_now_ns();
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Clock");
    servprof_span s = servprof_span_begin(r, "sp");
    rt_sleep_ms(10);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL);
    servprof_attr_int(r, "end_attr", 2);
    servprof_span_end_rec(r, s);
    int64_t t3 = servprof_now_ns();
    s = servprof_span_begin(servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL), "sp2");
    rt_sleep_ms(2);
    servprof_span_end(s);
    int64_t t4 = servprof_now_ns();
    /* The caller's own times, exact, including the epoch itself. */
    servprof_span_at(servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL), "at", 1234567890123456789LL,
                     1234567890123457789LL);
    servprof_span_at(servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL), "at0", 0, 5);
    rt_close();
    sp_clock_use_ticks(old);

    sqlite3 *db = rt_db(store);
    long long ev = rt_int(db, "SELECT timestamp FROM slice WHERE name='ev'");
    CHECK(ev >= t0 - slack && ev <= t1 + slack);
    long long sb = rt_int(db, "SELECT timestamp FROM slice WHERE name='sp'");
    long long se = rt_int(db, "SELECT end_time FROM slice WHERE name='sp'");
    long long sd = rt_int(db, "SELECT duration FROM slice WHERE name='sp'");
    CHECK(sb >= t2 - slack && sb <= t3 + slack);
    CHECK(se >= sb + 10000000 - slack && se <= t3 + slack); /* slept 10 ms inside */
    CHECK_INT(se - sb, sd);
    CHECK(sb > ev);
    long long s2b = rt_int(db, "SELECT timestamp FROM slice WHERE name='sp2'");
    long long s2d = rt_int(db, "SELECT duration FROM slice WHERE name='sp2'");
    CHECK(s2b >= t3 - slack && s2b + s2d <= t4 + slack && s2d >= 2000000 - slack);
    CHECK_INT(rt_int(db, "SELECT timestamp FROM slice WHERE name='at'"), 1234567890123456789LL);
    CHECK_INT(rt_int(db, "SELECT duration FROM slice WHERE name='at'"), 1000);
    CHECK_INT(rt_int(db, "SELECT timestamp FROM slice WHERE name='at0'"), 0);
    CHECK_INT(rt_int(db, "SELECT duration FROM slice WHERE name='at0'"), 5);
    snprintf(sql, sizeof sql, "%s",
             use_ticks && SP_CLOCK_HAVE_TSC ? "CLOCK_REALTIME (TSC ticks converted by the writer)"
                                            : "CLOCK_REALTIME");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='clock_source'"), sql);
    sqlite3_close(db);
}

/* Many records across several writer passes: stored times of one thread
 * never go backwards. */
static void check_order(void)
{
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    CHECK_INT(rt_open(dir, 0, store, sizeof store), 0);
    for (int i = 0; i < 20000; i++) {
        servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Order");
        servprof_attr_int(r, "i", i);
        servprof_event(r, "tick");
        if (i % 2000 == 0)
            rt_sleep_ms(3); /* let the writer take passes (and points) */
    }
    rt_close();
    sqlite3 *db = rt_db(store);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='tick'"), 20000);
    /* Rows in emission order (the i attribute) whose time is lower than
     * the previous row's. */
    CHECK_INT(rt_int(db, "SELECT count(*) FROM (SELECT timestamp t, lag(timestamp) OVER "
                         "(ORDER BY json_extract(args,'$.i')) p FROM slice WHERE name='tick') "
                         "WHERE t < p"),
              0);
    sqlite3_close(db);
}

int main(void)
{
    printf("clock source: %s\n", sp_clock_source());
    const char *env = getenv("SERVPROF_CLOCK");
    if (env && !strcmp(env, "realtime"))
        CHECK_INT(sp_clock_ticks, 0);
    check_conversion();
    check_store(1);
    check_store(0);
    check_order();
    RT_DONE();
}
