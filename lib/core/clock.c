/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.c — the clocks. Stored timestamps are CLOCK_REALTIME in ns so that
 * processes and hosts line up; intervals (limits, latencies) use
 * CLOCK_MONOTONIC so that a clock step cannot stretch or shrink them.
 *
 * THE RECORDING CLOCK (clock.h)
 * Reading CLOCK_REALTIME on a kvm-clock VM is a third of an event's cost,
 * two reads per span; rdtsc costs less than half of it (figures:
 * docs/benchmarks.md, "Figures behind design comments"). So when the CPU's
 * TSC is invariant (constant_tsc + nonstop_tsc: one rate, never stopped,
 * the same on every core as Linux requires for those flags) the hot path
 * stores raw ticks and the writer thread converts them here.
 *
 * Conversion. A calibration point is a triple (ticks, monotonic ns,
 * realtime ns) read together: the clock reads are bracketed by two rdtsc
 * and the tightest of three brackets is kept, its midpoint being the ticks.
 * A point is taken when the library loads, when a session starts
 * (sp_clock_calibrate) and by the converting thread whenever it meets a
 * record newer than its newest point — in practice once per writer pass,
 * since a pass only sees records published before it began. Each thread
 * keeps its last SP_CAL_POINTS points (no lock on the writer's path). A
 * tick count between two points is interpolated linearly in MONOTONIC time
 * (which is continuous: a step of the wall clock cannot bend the line) and
 * shifted to REALTIME by the offset realtime - monotonic of the nearer
 * point (so a wall-clock step shows where it happened, give or take one
 * pass). Ticks outside the points are extrapolated with the rate measured
 * over the longest baseline (the load-time point to the newest).
 * Interpolation is monotonic, so records of one thread keep their order and
 * a span's end never precedes its begin.
 *
 * Precision. A point is exact to half its rdtsc bracket (tens of ns on this
 * VM). Between two points the error adds the TSC's rate wander against
 * CLOCK_MONOTONIC over the segment: parts per million at worst, and the
 * segment is one writer pass (≤ ~20 ms), so ~20 ns; records drained after
 * a long idle gap sit near the segment's newer end, where the error is
 * still bounded by the rate wander over the time since they were taken.
 * Expect within ~100 ns of a CLOCK_REALTIME read at the same instant; at
 * worst a few µs right after a wall-clock step (NTP step, settimeofday).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>

#include "clock.h"
#include "internal.h"

int sp_clock_ticks; /* see clock.h; constant after load except in tests */

int64_t sp_now_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t sp_now_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

SERVPROF_API int64_t servprof_now_ns(void)
{
    return sp_now_realtime_ns();
}

/* ------------------------------------------------------------------ */
/* Calibration points                                                   */
/* ------------------------------------------------------------------ */

#define SP_CAL_POINTS 16

typedef struct cal_pt {
    int64_t ticks, mono, real;
} cal_pt;

static cal_pt load_pt;                  /* at load; read-only after */
static pthread_mutex_t seed_lock = PTHREAD_MUTEX_INITIALIZER;
static cal_pt seed_pt;                  /* under seed_lock: the latest session start */
static _Atomic unsigned seed_gen;       /* bumped (under seed_lock) with seed_pt */

/* One converting thread's points, oldest first. */
typedef struct cal_table {
    cal_pt p[SP_CAL_POINTS];
    int n;
    unsigned gen; /* seed_gen it was seeded from */
} cal_table;

static __thread cal_table cal;

static int64_t ticks_now(void)
{
#if SP_CLOCK_HAVE_TSC
    return (int64_t)__rdtsc();
#else
    return sp_now_monotonic_ns();
#endif
}

static cal_pt take_point(void)
{
    cal_pt best = {0, 0, 0};
    int64_t best_gap = INT64_MAX;
    for (int i = 0; i < 3; i++) {
        struct timespec m, r;
        int64_t t0 = ticks_now();
        clock_gettime(CLOCK_MONOTONIC, &m);
        clock_gettime(CLOCK_REALTIME, &r);
        int64_t t1 = ticks_now();
        if (t1 - t0 < best_gap) {
            best_gap = t1 - t0;
            best.ticks = t0 + (t1 - t0) / 2;
            best.mono = (int64_t)m.tv_sec * 1000000000 + m.tv_nsec;
            best.real = (int64_t)r.tv_sec * 1000000000 + r.tv_nsec;
        }
    }
    return best;
}

void sp_clock_calibrate(void)
{
    cal_pt p = take_point();
    pthread_mutex_lock(&seed_lock);
    seed_pt = p;
    atomic_fetch_add_explicit(&seed_gen, 1, memory_order_release);
    pthread_mutex_unlock(&seed_lock);
}

void sp_clock_atfork_child(void)
{
    /* Another thread may have held the lock at fork: the child starts
     * with a fresh one (the seed point itself is still valid). */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    seed_lock = fresh;
    cal.n = 0;
}

static void push_point(cal_table *t, cal_pt p)
{
    if (t->n > 0 && p.ticks <= t->p[t->n - 1].ticks)
        return; /* the ring must stay sorted */
    if (t->n == SP_CAL_POINTS) {
        memmove(t->p, t->p + 1, sizeof t->p[0] * (SP_CAL_POINTS - 1));
        t->n--;
    }
    t->p[t->n++] = p;
}

/* Monotonic ns per tick over the longest baseline this thread knows. */
static double long_rate(const cal_table *t)
{
    const cal_pt *a = &load_pt, *b = &t->p[t->n - 1];
    if (b->ticks - a->ticks <= 0)
        a = &t->p[0];
    if (b->ticks - a->ticks <= 0)
        return 1.0; /* one point and nothing older: cannot happen past the first pass */
    return (double)(b->mono - a->mono) / (double)(b->ticks - a->ticks);
}

static int64_t from_point(const cal_pt *p, int64_t ticks, double rate)
{
    return p->real + (int64_t)((double)(ticks - p->ticks) * rate);
}

int64_t sp_clock_ticks_to_ns(int64_t ticks)
{
    cal_table *t = &cal;
    unsigned gen = atomic_load_explicit(&seed_gen, memory_order_acquire);
    if (t->n == 0 || t->gen != gen) {
        pthread_mutex_lock(&seed_lock);
        t->p[0] = seed_pt;
        t->gen = atomic_load_explicit(&seed_gen, memory_order_relaxed);
        pthread_mutex_unlock(&seed_lock);
        t->n = 1;
    }
    if (ticks > t->p[t->n - 1].ticks)
        push_point(t, take_point()); /* once per writer pass */
    const cal_pt *last = &t->p[t->n - 1];
    if (ticks >= last->ticks) /* a tick from just after the point */
        return from_point(last, ticks, long_rate(t));
    if (ticks < t->p[0].ticks)
        return from_point(&t->p[0], ticks, long_rate(t));
    int i = t->n - 2; /* the segment [p[i], p[i+1]] holding ticks */
    while (t->p[i].ticks > ticks)
        i--;
    const cal_pt *a = &t->p[i], *b = &t->p[i + 1];
    double f = (double)(ticks - a->ticks) / (double)(b->ticks - a->ticks);
    int64_t mono = a->mono + (int64_t)(f * (double)(b->mono - a->mono));
    const cal_pt *near = f < 0.5 ? a : b;
    return mono + (near->real - near->mono);
}

/* ------------------------------------------------------------------ */
/* The choice, at load                                                  */
/* ------------------------------------------------------------------ */

/* Nonzero when /proc/cpuinfo's first "flags" line has both flags. */
static int cpu_tsc_invariant(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[8192];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
        break;
    }
    fclose(f);
    return ok;
}

int sp_clock_use_ticks(int on)
{
    int old = __atomic_load_n(&sp_clock_ticks, __ATOMIC_RELAXED);
    __atomic_store_n(&sp_clock_ticks, on && SP_CLOCK_HAVE_TSC, __ATOMIC_RELAXED);
    return old;
}

const char *sp_clock_source(void)
{
    return __atomic_load_n(&sp_clock_ticks, __ATOMIC_RELAXED)
               ? "CLOCK_REALTIME (TSC ticks converted by the writer)"
               : "CLOCK_REALTIME";
}

int sp_clock_sync_state(long *maxerror_us, long *esterror_us)
{
    struct timex tx;
    memset(&tx, 0, sizeof tx); /* modes 0: read only, allowed to anyone */
    int state = adjtimex(&tx);
    *maxerror_us = *esterror_us = -1;
    if (state < 0)
        return -1;
    *maxerror_us = tx.maxerror;
    *esterror_us = tx.esterror;
    return state != TIME_ERROR && !(tx.status & STA_UNSYNC);
}

__attribute__((constructor)) static void clock_choose(void)
{
    const char *env = getenv("SERVPROF_CLOCK");
    int want = !(env && !strcmp(env, "realtime"));
    load_pt = take_point();
    seed_pt = load_pt;
    sp_clock_use_ticks(want && SP_CLOCK_HAVE_TSC && cpu_tsc_invariant());
}
