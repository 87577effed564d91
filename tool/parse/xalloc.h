/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xalloc.h — the tool's one out-of-memory policy (xalloc.c): an allocation
 * that fails stops the command with one message, instead of a NULL that a
 * later line would follow.
 *
 * Why stop: the parser's state is a few hundred thousand small objects
 * (requests in flight, held rows, ids); a report that silently lost one
 * would be wrong without saying so, and checking each site for a way to
 * go on would double the code for a case a parse cannot recover from.
 * Stopping is clean because every output is written under a temporary
 * name until the whole parse ends (dwrite.c, staging): the previous run's
 * reports stay as they were, this run's `*.partial` files are left for the
 * next run to replace. The message says how many bytes were asked; the
 * exit status is 1 ("an output could not be written", docs/parse.md).
 *
 * The library never does this (a library never exits): these are for the
 * tool's code only (parse, analyze, report). The writers that handle a
 * failed allocation as an output error (btwrite.c, btindex.c, dbsql.c:
 * profiler.db is then not written, the rest goes on) keep doing so.
 *
 * Out of line, on purpose: a call site costs what its malloc call did (the
 * test is in the callee), while an inline test would sit in the hot
 * functions that may grow a buffer (id interning, the timeline's slice)
 * and cost them registers: +0.15 % of a parse's instructions, measured
 * (docs/benchmarks.md).
 */
#ifndef SERVPROF_PARSE_XALLOC_H
#define SERVPROF_PARSE_XALLOC_H

#include <stddef.h>

/* Says "out of memory" (n bytes asked) on stderr and exits with status 1.
 * One write(2) of a line formatted on the stack, no allocation; _exit, so
 * that no atexit handler or stdio flush runs with the parse half done. */
_Noreturn void prs_oom(size_t n) __attribute__((cold));

void *prs_xmalloc(size_t n);
void *prs_xcalloc(size_t n, size_t size);
/* realloc(p, n): p is freed by the exit, never leaked into a NULL. */
void *prs_xrealloc(void *p, size_t n);
char *prs_xstrdup(const char *s);
char *prs_xstrndup(const char *s, size_t n);

#endif
