/* SPDX-License-Identifier: Apache-2.0 */
/* summary.h — the terminal summary (summary.c). */
#ifndef SERVPROF_PARSE_SUMMARY_H
#define SERVPROF_PARSE_SUMMARY_H
#include "model.h"
#include "sessions.h"
/* started_ns: wall clock when the parse began; only files written since are
 * named as written. ss: the sessions read (listed when more than one; rates
 * then count only the time collection was on). */
void prs_summary_print(prs_model *m, int nstores, int nskipped, int nactivity, double seconds,
                       const prs_sessions *ss, int64_t started_ns);
#endif
