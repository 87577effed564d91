/* SPDX-License-Identifier: Apache-2.0 */
/*
 * batch.h — what one scheduler step decided: which requests run and how
 * many tokens each computes. Built and read by the engine thread only.
 */
#ifndef TL_BATCH_H
#define TL_BATCH_H

#include "request.h"

enum { TL_PREFILL = 0, TL_DECODE = 1 };

typedef struct tl_batch_item {
    tl_request *req;
    int n;             /* tokens computed for it in this step */
    int type;          /* TL_PREFILL (prompt or recompute) or TL_DECODE */
    int iter;          /* the request's step count before this one */
    int n_computed;    /* its computed tokens before this step */
} tl_batch_item;

typedef struct tl_batch {
    tl_batch_item *items;
    int n, cap;
    int n_prefill, n_decode;
    int tokens;        /* total tokens scheduled */
    int blocks_allocated, blocks_freed; /* during scheduling */
    int free_before, free_after;        /* free blocks around scheduling */
} tl_batch;

#endif
