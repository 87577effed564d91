/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plog.h — the parser's messages on stderr (plog.c): a level threshold set
 * by --log-level / PROF_LOG_LEVEL, one line per message.
 */
#ifndef SERVPROF_PARSE_PLOG_H
#define SERVPROF_PARSE_PLOG_H

enum { SPP_DEBUG = 0, SPP_INFO = 1, SPP_WARNING = 2, SPP_ERROR = 3, SPP_NONE = 4 };
/* The threshold is the calling thread's (plog.c): set it on the thread
 * that calls spp_run; other threads keep theirs (default SPP_INFO). */
void spp_log_set_level(int level);
int spp_log_level(void);
void spp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses "debug", "info", "warning"/"warn", "error", "none" (any case); -1 if unknown. */
int spp_log_level_from_name(const char *name);

#endif
