/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reorder.h — a bounded reorder buffer (reorder.c): records read in rowid
 * order come out in (timestamp, rowid) order, given the largest lateness.
 */
#ifndef SERVPROF_PARSE_REORDER_H
#define SERVPROF_PARSE_REORDER_H

#include "storeread.h"


typedef struct spp_reorder spp_reorder;

spp_reorder *spp_reorder_new(void);
/* Copies r (its strings too). */
void spp_reorder_push(spp_reorder *b, const spp_rec *r, int64_t rowid);
/* Timestamp of the earliest buffered record; 0 if empty. */
int spp_reorder_min(spp_reorder *b, int64_t *ts);
/* Moves the earliest record out into *out; its strings stay valid until the
 * next pop or spp_reorder_free. 0 if empty. */
int spp_reorder_pop(spp_reorder *b, spp_rec *out);
long long spp_reorder_count(spp_reorder *b);
size_t spp_reorder_bytes(spp_reorder *b); /* buffered, for a memory cap */
long long spp_reorder_peak(spp_reorder *b);
void spp_reorder_free(spp_reorder *b);

#endif
