/* SPDX-License-Identifier: Apache-2.0 */
/*
 * thrcpu.h — each parse thread's CPU time, for the load-independent
 * figure of the parallel parse (thrcpu.c; docs/parse.md "Parallel parse"):
 * with SERVPROF_PARSE_THREAD_CPU set, every reader and writer thread notes
 * its CPU time as it ends, and the parse prints them with its own at the
 * end. The busiest thread is the critical path on free cores.
 */
#ifndef SERVPROF_PARSE_THRCPU_H
#define SERVPROF_PARSE_THRCPU_H

/* Notes the calling thread's CPU time under name (a literal). Thread-safe;
 * a no-op without SERVPROF_PARSE_THREAD_CPU. */
void prs_thrcpu_note(const char *name);
/* Prints, on stderr, one line per thread noted since the last call and
 * one for the calling thread ("parse"), then the busiest and the total;
 * forgets them. A no-op without SERVPROF_PARSE_THREAD_CPU. */
void prs_thrcpu_report(void);

#endif
