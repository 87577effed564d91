/* SPDX-License-Identifier: Apache-2.0 */
/*
 * btindex.h — index b-trees for tables written by btwrite.c (btindex.c):
 * the entries collected as the rows are written, sorted and laid out as
 * index pages when the table ends, so profiler.db's indexes need no
 * CREATE INDEX (SQLite reading every row back and sorting it).
 */
#ifndef SERVPROF_PARSE_BTINDEX_H
#define SERVPROF_PARSE_BTINDEX_H

#include <stddef.h>
#include <stdint.h>

#define PRS_BTIX_MAXKEY 4

typedef struct prs_btix prs_btix;

/* An index of nkey (1..PRS_BTIX_MAXKEY) columns. */
prs_btix *prs_btix_new(int nkey);
/* One entry, in rowid order: per key column its serial type (the record
 * format's), its integer or real bits (serial types 1..7) or its text
 * (13 and up, odd); and the row's rowid. */
void prs_btix_add(prs_btix *x, const uint32_t *st, const uint64_t *iv, const char *const *text, int64_t rowid);
long long prs_btix_count(const prs_btix *x);

/* Writes the index b-tree: pages of psz bytes handed to put_page in the
 * order written (it returns each one's page number); *root gets the last
 * one's. Returns 0, or -1 with *why when this index cannot be written by
 * hand exactly (a key too long for one page, integers beyond 2^53 mixed
 * with reals): then SQLite's CREATE INDEX must build it. */
int prs_btix_write(prs_btix *x, unsigned psz, uint32_t (*put_page)(void *ctx, const uint8_t *page), void *ctx,
                   uint32_t *root, const char **why);
void prs_btix_free(prs_btix *x);

#endif
