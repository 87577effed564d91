/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coordcount.h — requests running per prefill/decode instance per 5 s
 * (coordinator_running.csv), from the coordinator's moments (coordcount.c).
 * One counter belongs to one parse, used from its thread only; two parses
 * on two threads do not share anything here.
 */
#ifndef SERVPROF_PARSE_COORDCOUNT_H
#define SERVPROF_PARSE_COORDCOUNT_H

#include "table.h"


typedef struct prs_coordcount prs_coordcount;

prs_coordcount *prs_coordcount_new(void);
/* One moment at ts on address: of its decode (1) or prefill (0) side; a
 * request ending there (1) or starting (0). address is copied. */
void prs_coordcount_note(prs_coordcount *c, int64_t ts, const char *address, int decode, int end);
/* Writes the table (and the CSV when there are moments). */
void prs_coordcount_write(prs_coordcount *c, prs_out *out);
void prs_coordcount_free(prs_coordcount *c); /* NULL is fine */

#endif
