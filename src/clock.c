/*
 * clock.c — the two clocks. Stored timestamps are CLOCK_REALTIME in ns so
 * that processes and hosts line up; intervals (limits, latencies) use
 * CLOCK_MONOTONIC so that a clock step cannot stretch or shrink them.
 */
#include <time.h>

#include "internal.h"

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
