/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pftrace.h — trace.pftrace, the timeline as Perfetto's native protobuf
 * trace (pftrace.c). Driven by timeline.c, which decides lanes, names and
 * flows once for both files: each call here mirrors one event of
 * chrome_tracing.json. One writer per parse, used on the parse's thread.
 */
#ifndef SERVPROF_PARSE_PFTRACE_H
#define SERVPROF_PARSE_PFTRACE_H

#include <stdint.h>

#include "dwrite.h"

typedef struct prs_pft prs_pft;

/* Creates dir/trace.pftrace (staged: stage may be NULL). NULL with errno
 * set when the file cannot be opened. */
prs_pft *prs_pft_open(prs_dw_stage *stage, const char *dir);
/* A process (trace pid): its name and label, re-sent when known better
 * (the roles are known at the end). label may be NULL. */
void prs_pft_process(prs_pft *p, int pid, const char *name, const char *label);
/* A thread lane (pid, tid as chrome_tracing.json numbers them) and its
 * name; a lane used without this call gets a descriptor without a name. */
void prs_pft_thread(prs_pft *p, int pid, long long tid, const char *name);
/* A span (dur > 0: begin now, end at ts + dur) or an instant (dur <= 0)
 * on lane (pid, tid). args: the record's args text (len bytes), a JSON
 * object when valid, else kept whole as {"raw": text}. flows: flow ids
 * this event continues; term: flow ids it ends. Spans must arrive in
 * start order per lane and nest there (timeline.c's sub-lanes see to it);
 * the ends are written in time order as later events pass them. */
void prs_pft_slice(prs_pft *p, int pid, long long tid, const char *name, const char *cat, int64_t ts, int64_t dur,
                   const char *args, int len, int valid, const uint64_t *flows, int nflows,
                   const uint64_t *term, int nterm);
/* One sample of counter `name` of process pid: series[i] = vals[i] on
 * track "name series[i]" (NAN: no value), all in one packet. */
void prs_pft_counter(prs_pft *p, int pid, const char *name, int64_t ts, const char *const *series,
                     const double *vals, int n);
/* What was written so far, for the summary and the tests' notes. */
typedef struct prs_pft_stats {
    long long packets, slices, instants, counters, sequences, unnested;
    long long key_hits;  /* args keys found by the key cache by position */
    long long args_hits; /* short args texts whose encoding was reused */
    unsigned long long bytes;
} prs_pft_stats;
prs_pft_stats prs_pft_stats_of(const prs_pft *p);
/* Writes the pending ends, closes the file and frees p. 0, or the errno
 * of a failed write (the incomplete file is removed). NULL: no-op. */
int prs_pft_close(prs_pft *p);

#endif
