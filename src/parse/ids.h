/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ids.h — request ids (ids.c): interned strings with union-find, so that a
 * Link makes two ids one request.
 */
#ifndef SERVPROF_PARSE_IDS_H
#define SERVPROF_PARSE_IDS_H

#include "argdecode.h"

typedef struct spp_ids spp_ids;
spp_ids *spp_ids_new(void);
void spp_ids_free(spp_ids *ids);
/* Node of id s (created when absent). */
int spp_ids_get(spp_ids *ids, const char *s, int n);
/* Node of id s, or -1 when never seen. */
int spp_ids_find(spp_ids *ids, const char *s, int n);
/* The same for an id as decoded from args (escapes resolved, any length). */
int spp_ids_get_str(spp_ids *ids, spp_str s);
int spp_ids_find_str(spp_ids *ids, spp_str s);
int spp_ids_root(spp_ids *ids, int node);
/* Records that `from` is the same request as `to`; returns the root kept
 * (from's: reports name the request by the upstream id), and in *absorbed
 * the root that disappeared (-1 if none). */
int spp_ids_link(spp_ids *ids, int from, int to, int *absorbed);
const char *spp_ids_name(spp_ids *ids, int node);
int spp_ids_name_len(spp_ids *ids, int node);
void *spp_ids_data(spp_ids *ids, int root);
void spp_ids_set_data(spp_ids *ids, int root, void *data);
int spp_ids_count(spp_ids *ids);

#endif
