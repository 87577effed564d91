/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reorder.h — a bounded reorder buffer (reorder.c): records read in rowid
 * order come out in (timestamp, rowid) order, given the largest lateness.
 */
#ifndef SERVPROF_PARSE_REORDER_H
#define SERVPROF_PARSE_REORDER_H

#include "storeread.h"


typedef struct prs_reorder prs_reorder;

prs_reorder *prs_reorder_new(void);
/* Copies r (its strings too). */
void prs_reorder_push(prs_reorder *b, const prs_rec *r, int64_t rowid);
/* Timestamp of the earliest buffered record; 0 if empty. */
int prs_reorder_min(prs_reorder *b, int64_t *ts);
/* Moves the earliest record out into *out; its strings stay valid until the
 * next pop or prs_reorder_free. 0 if empty. */
int prs_reorder_pop(prs_reorder *b, prs_rec *out);
long long prs_reorder_count(prs_reorder *b);
size_t prs_reorder_bytes(prs_reorder *b); /* buffered, for a memory cap */
long long prs_reorder_peak(prs_reorder *b);
void prs_reorder_free(prs_reorder *b);

#endif
