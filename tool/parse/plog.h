/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plog.h — the parser's messages on stderr (plog.c): a level threshold set
 * by --log-level / PROF_LOG_LEVEL, one line per message.
 */
#ifndef SERVPROF_PARSE_PLOG_H
#define SERVPROF_PARSE_PLOG_H

enum { PRS_DEBUG = 0, PRS_INFO = 1, PRS_WARNING = 2, PRS_ERROR = 3, PRS_NONE = 4 };
/* The threshold is the calling thread's (plog.c): set it on the thread
 * that calls prs_run; other threads keep theirs (default PRS_INFO). */
void prs_log_set_level(int level);
int prs_log_level(void);
void prs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses "debug", "info", "warning"/"warn", "error", "none" (any case); -1 if unknown. */
int prs_log_level_from_name(const char *name);

/* A thread that encodes an output for the parse thread (wqueue.c) keeps
 * its messages instead of printing them (NUL-separated, each led by its
 * level): prs_log_capture(b) sends this thread's messages into b (NULL:
 * to stderr again); prs_log_replay(b) logs them on the calling thread, at
 * its level, and empties b. */
typedef struct prs_log_buf { char *text; unsigned long n, cap; } prs_log_buf;
void prs_log_capture(prs_log_buf *b);
void prs_log_replay(prs_log_buf *b);

#endif
