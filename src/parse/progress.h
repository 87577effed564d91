/* SPDX-License-Identifier: Apache-2.0 */
/* progress.h — the stderr progress bar (progress.c). */
#ifndef SERVPROF_PARSE_PROGRESS_H
#define SERVPROF_PARSE_PROGRESS_H
/* mode: -1 auto (TTY and large input), 0 off, 1 on. */
void spp_progress_start(long long estimate, int mode);
void spp_progress_tick(long long done);
void spp_progress_end(void);
#endif
