/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.h — the recording clock: what the hot path stamps records with, and
 * how the writer turns that into the store's epoch nanoseconds (clock.c).
 *
 * On x86-64 CPUs whose time-stamp counter runs at a constant rate and does
 * not stop in idle states (/proc/cpuinfo flags constant_tsc and nonstop_tsc)
 * the hot path stores raw TSC ticks (rdtsc: less than half the cost of
 * clock_gettime(CLOCK_REALTIME) on a kvm-clock VM, figures in
 * docs/benchmarks.md, "Figures behind design comments") and flags the record header
 * (SP_HDR_TICKS); the writer converts ticks to CLOCK_REALTIME nanoseconds
 * with sp_clock_ticks_to_ns(). Elsewhere, or with SERVPROF_CLOCK=realtime
 * in the environment, the hot path reads CLOCK_REALTIME and nothing is
 * converted. The choice is made once, when the library is loaded.
 */
#ifndef SERVPROF_CLOCK_H
#define SERVPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SP_CLOCK_HAVE_TSC 1
#else
#define SP_CLOCK_HAVE_TSC 0
#endif

/* Nonzero when the hot path records TSC ticks. Written once by clock.c's
 * load-time constructor (and by tests through sp_clock_use_ticks), read
 * by every recording thread. */
extern int sp_clock_ticks;

/* The hot path's timestamp: TSC ticks (*ticks set to 1) when sp_clock_ticks,
 * else CLOCK_REALTIME ns (*ticks set to 0). */
static inline int64_t sp_clock_read(int *ticks)
{
#if SP_CLOCK_HAVE_TSC
    if (__builtin_expect(__atomic_load_n(&sp_clock_ticks, __ATOMIC_RELAXED), 1)) {
        *ticks = 1;
        return (int64_t)__rdtsc();
    }
#endif
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *ticks = 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Converts a tick count taken by sp_clock_read() (while sp_clock_ticks was
 * set) to CLOCK_REALTIME ns since the epoch. Meant for the writer thread;
 * any thread may call it (its calibration table is per thread). */
int64_t sp_clock_ticks_to_ns(int64_t ticks);

/* Takes a fresh calibration pair (ticks, realtime) that every converting
 * thread starts from: called when a session starts. Thread-safe. */
void sp_clock_calibrate(void);

/* Fork child (from sp_tbuf_atfork_child): a fresh lock. */
void sp_clock_atfork_child(void);

/* The Meta 'clock_source' text of the current choice. */
const char *sp_clock_source(void);
/* The kernel's view of the wall clock's synchronisation (adjtimex, read
 * only): 1 synchronised (NTP/PTP discipline), 0 not, -1 unknown; the
 * kernel's maximum and estimated error in µs (-1 unknown). Written to each
 * store's Meta so that the parser can bound hosts' clock offsets. */
int sp_clock_sync_state(long *maxerror_us, long *esterror_us);

/* Tests: force the hot path's clock (1: TSC when the CPU has one, 0:
 * CLOCK_REALTIME). Returns the previous value. Not while recording. */
int sp_clock_use_ticks(int on);

#endif /* SERVPROF_CLOCK_H */
