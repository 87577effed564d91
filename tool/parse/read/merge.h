/* SPDX-License-Identifier: Apache-2.0 */
/*
 * merge.h — the k-way merge of the stores' record streams by timestamp
 * (merge.c): a binary heap keyed by each store's current record.
 */
#ifndef SERVPROF_PARSE_MERGE_H
#define SERVPROF_PARSE_MERGE_H

#include "readers.h"
#include "storeread.h"

typedef struct prs_merge {
    prs_store **heap;
    int n;
    int64_t *keys;
    prs_readers *rd;      /* NULL: the stores are read here; else their rings (readers.c) */
} prs_merge;
/* rd: the stores' reader threads (prs_readers_start), or NULL (--jobs 1). */
void prs_merge_init(prs_merge *m, prs_store **stores, int n, prs_readers *rd);
/* Store s's current record (s from prs_merge_top), read wherever it is. */
int prs_merge_peek(prs_merge *m, prs_store *s, prs_rec *rec);
/* The store whose current record is the earliest, or NULL when all are done.
 * After consuming its record call prs_merge_advance(). */
prs_store *prs_merge_top(prs_merge *m);
void prs_merge_advance(prs_merge *m);
void prs_merge_free(prs_merge *m);

#endif
