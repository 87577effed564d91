/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clockshift.c — a test helper preloaded (LD_PRELOAD) into a demo process
 * to make it look like another host: CLOCK_REALTIME reads are moved by
 * CLOCKSHIFT_NS nanoseconds and gethostname() answers CLOCKSHIFT_HOST.
 * Everything else goes to the next definition (libc, or a sanitizer's
 * interceptor). Used by test_pd_clocks.py only.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long shift_ns(void)
{
    const char *s = getenv("CLOCKSHIFT_NS");
    return s ? strtoll(s, NULL, 10) : 0;
}

/* The project builds with hidden visibility: these must be seen to interpose. */
#define EXPORT __attribute__((visibility("default")))

EXPORT int clock_gettime(clockid_t clk, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real(clk, ts);
    if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
        long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + shift_ns();
        ts->tv_sec = (time_t)(ns / 1000000000LL);
        ts->tv_nsec = (long)(ns % 1000000000LL);
    }
    return rc;
}

EXPORT int gethostname(char *name, size_t len)
{
    const char *h = getenv("CLOCKSHIFT_HOST");
    if (!h) {
        static int (*real)(char *, size_t);
        if (!real)
            real = (int (*)(char *, size_t))dlsym(RTLD_NEXT, "gethostname");
        return real(name, len);
    }
    if (strlen(h) + 1 > len)
        return -1;
    memcpy(name, h, strlen(h) + 1);
    return 0;
}
