/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers.h — the stores read on reader threads (readers.c, `--jobs N`):
 * each store's records, in its own time order, through a bounded ring of
 * owned copies that the merge (merge.c, on the parse thread) pops from.
 */
#ifndef SERVPROF_PARSE_READERS_H
#define SERVPROF_PARSE_READERS_H

#include "storeread.h"

typedef struct prs_readers prs_readers;

/* Args shorter than this are decoded by the reader threads (prs_rec.pre);
 * model.c decodes the longer ones itself, through its cache of the last
 * long text (its ARGS_CACHE_MIN: the same bound). */
#define PRS_READERS_DECODE_MAX 512

/* The CPUs this process may run on (sched_getaffinity), at least 1: the
 * default of --jobs. */
int prs_readers_cpus(void);
/* The parse's thread count for --jobs asked (0: the default: the CPUs
 * above, or 1 when the load average leaves none of them idle); above 1 the
 * stores' opens and the readers use threads, and from 3 the writers too
 * (prs_readers_threads, prs_readers_writers below). */
int prs_readers_jobs(int asked);
/* How --jobs N > 1 spends its threads (docs/parse.md, "Parallel parse"):
 * the reader threads for n stores, and whether the outputs are encoded on
 * threads of their own (wqueue.c). With N = 2 one reader and no encoder
 * thread: the parse thread and the reader then each have a core. */
int prs_readers_threads(int jobs, int n);
int prs_readers_writers(int jobs);
/* Starts prs_readers_threads(jobs, n) reader threads over stores[0..n) (thread t serves
 * stores t, t + threads, ...). NULL when jobs <= 1 or n < 1: the caller
 * reads the stores on its own thread (prs_store_peek/next). From here on,
 * until prs_readers_stop, only the readers touch the stores' cursors. */
prs_readers *prs_readers_start(prs_store **stores, int n, int jobs);
/* Store s's current record, as prs_store_peek would give it; its strings
 * stay valid until prs_readers_next(r, s). 0 when s has ended. */
int prs_readers_peek(prs_readers *r, const prs_store *s, prs_rec *rec);
void prs_readers_next(prs_readers *r, const prs_store *s);
/* Stops the readers (at once, if stores are not finished), joins them and
 * frees r. The stores are the caller's again. */
void prs_readers_stop(prs_readers *r);

#endif
