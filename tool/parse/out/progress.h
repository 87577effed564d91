/* SPDX-License-Identifier: Apache-2.0 */
/* progress.h — the stderr progress bar (progress.c). */
#ifndef SERVPROF_PARSE_PROGRESS_H
#define SERVPROF_PARSE_PROGRESS_H
/* One parse's bar. */
typedef struct prs_progress {
    long long total;      /* the estimate, at least 1 */
    int on;
    double last;          /* when it was last drawn (monotonic s) */
} prs_progress;
/* mode: -1 auto (TTY and large input), 0 off, 1 on. */
void prs_progress_start(prs_progress *p, long long estimate, int mode);
void prs_progress_tick(prs_progress *p, long long done);
void prs_progress_end(prs_progress *p);
#endif
