/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h — the log lines of libservprof and of the tool's runtime-facing
 * verbs (log.c). Common code: the library and the tool both link it.
 */
#ifndef SERVPROF_LOG_H
#define SERVPROF_LOG_H

#include <stdarg.h>

enum { SP_LOG_DEBUG = 0, SP_LOG_INFO = 1, SP_LOG_WARNING = 2, SP_LOG_ERROR = 3, SP_LOG_NONE = 4 };

/* Writes "[msservice_profiler] [PID:<pid>] [<LEVEL>] <message>\n" to stderr
 * with a single write(2). Thread-safe, async-signal-unsafe, never fails. */
void sp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sp_vlog(int level, const char *fmt, va_list ap);
/* Nonzero when messages of this level are printed (PROF_LOG_LEVEL). */
int sp_log_enabled(int level);
/* Re-reads PROF_LOG_LEVEL (tests; after fork). */
void sp_log_reset(void);

#endif
