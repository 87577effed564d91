/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ids.h — request ids (ids.c): interned strings with union-find, so that a
 * Link makes two ids one request.
 */
#ifndef SERVPROF_PARSE_IDS_H
#define SERVPROF_PARSE_IDS_H

#include "argdecode.h"

typedef struct prs_ids prs_ids;
prs_ids *prs_ids_new(void);
void prs_ids_free(prs_ids *ids);
/* Node of id s (created when absent). */
int prs_ids_get(prs_ids *ids, const char *s, int n);
/* Node of id s, or -1 when never seen. */
int prs_ids_find(prs_ids *ids, const char *s, int n);
/* The same for an id as decoded from args (escapes resolved, any length). */
int prs_ids_get_str(prs_ids *ids, prs_str s);
int prs_ids_find_str(prs_ids *ids, prs_str s);
int prs_ids_root(prs_ids *ids, int node);
/* Records that `from` is the same request as `to`; returns the root kept
 * (from's: reports name the request by the upstream id), and in *absorbed
 * the root that disappeared (-1 if none). */
int prs_ids_link(prs_ids *ids, int from, int to, int *absorbed);
const char *prs_ids_name(prs_ids *ids, int node);
int prs_ids_name_len(prs_ids *ids, int node);
void *prs_ids_data(prs_ids *ids, int root);
void prs_ids_set_data(prs_ids *ids, int root, void *data);
int prs_ids_count(prs_ids *ids);

#endif
