/* SPDX-License-Identifier: Apache-2.0 */
/*
 * merge.h — the k-way merge of the stores' record streams by timestamp
 * (merge.c): a binary heap keyed by each store's current record.
 */
#ifndef SERVPROF_PARSE_MERGE_H
#define SERVPROF_PARSE_MERGE_H

#include "storeread.h"

typedef struct spp_merge {
    spp_store **heap;
    int n;
    int64_t *keys;
} spp_merge;
void spp_merge_init(spp_merge *m, spp_store **stores, int n);
/* The store whose current record is the earliest, or NULL when all are done.
 * After consuming its record call spp_merge_advance(). */
spp_store *spp_merge_top(spp_merge *m);
void spp_merge_advance(spp_merge *m);
void spp_merge_free(spp_merge *m);

#endif
