/* SPDX-License-Identifier: Apache-2.0 */
/* progress.h — the stderr progress bar (progress.c). */
#ifndef SERVPROF_PARSE_PROGRESS_H
#define SERVPROF_PARSE_PROGRESS_H
/* One parse's bar. */
typedef struct spp_progress {
    long long total;      /* the estimate, at least 1 */
    int on;
    double last;          /* when it was last drawn (monotonic s) */
} spp_progress;
/* mode: -1 auto (TTY and large input), 0 off, 1 on. */
void spp_progress_start(spp_progress *p, long long estimate, int mode);
void spp_progress_tick(spp_progress *p, long long done);
void spp_progress_end(spp_progress *p);
#endif
