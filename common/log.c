/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c — the library's log lines.
 *
 * Every message is one line on stderr, "[msservice_profiler] [PID:<pid>]
 * [<LEVEL>] <message>", formatted into a stack buffer and written with one
 * write(2), so lines from many threads and processes never interleave. The
 * threshold comes from PROF_LOG_LEVEL (DEBUG, INFO, WARNING, ERROR, NONE;
 * default INFO), read once and cached in an atomic.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"

static _Atomic int threshold = -1; /* -1: not read yet */

static const char *const level_names[] = {"DEBUG", "INFO", "WARNING", "ERROR", "NONE"};

static int read_threshold(void)
{
    const char *env = getenv("PROF_LOG_LEVEL");
    if (!env || !*env)
        return SP_LOG_INFO;
    for (int i = 0; i <= SP_LOG_NONE; i++)
        if (!strcasecmp(env, level_names[i]))
            return i;
    if (!strcasecmp(env, "WARN"))
        return SP_LOG_WARNING;
    /* An unknown value must not silence errors: keep INFO and say so once. */
    char line[256];
    int n = snprintf(line, sizeof line,
                     "[msservice_profiler] [PID:%d] [WARNING] PROF_LOG_LEVEL='%s' is not one of "
                     "DEBUG, INFO, WARNING, ERROR, NONE; using INFO\n", (int)getpid(), env);
    if (n > 0)
        (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    return SP_LOG_INFO;
}

int sp_log_enabled(int level)
{
    int t = atomic_load_explicit(&threshold, memory_order_relaxed);
    if (t < 0) {
        t = read_threshold();
        atomic_store_explicit(&threshold, t, memory_order_relaxed);
    }
    return level >= t && level < SP_LOG_NONE;
}

void sp_log_reset(void)
{
    atomic_store_explicit(&threshold, -1, memory_order_relaxed);
}

void sp_vlog(int level, const char *fmt, va_list ap)
{
    if (!sp_log_enabled(level))
        return;
    char line[2048];
    int head = snprintf(line, sizeof line, "[msservice_profiler] [PID:%d] [%s] ", (int)getpid(),
                        level_names[level]);
    int body = vsnprintf(line + head, sizeof line - (size_t)head - 1, fmt, ap);
    size_t len = (size_t)head + (body < 0 ? 0 : (size_t)body);
    if (len > sizeof line - 2)
        len = sizeof line - 2; /* truncated message: still one whole line */
    line[len++] = '\n';
    (void)!write(STDERR_FILENO, line, len);
}

void sp_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sp_vlog(level, fmt, ap);
    va_end(ap);
}
