/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chanalyze.h — the analyze document of what `servprof export` wrote to
 * ClickHouse (chanalyze.c says how): the same document a local `servprof
 * analyze` gives of the same stores, every key.
 */
#ifndef SERVPROF_EXPORT_CHANALYZE_H
#define SERVPROF_EXPORT_CHANALYZE_H

#include <stdio.h>
#include <jansson.h>

#include "analyze.h"

struct sa_profile;

/* The analyze document (docs/analyze.md) for url (clickhouse://HOST:PORT/DB),
 * limited to the exports of session when not NULL, and to host's requests
 * (those a record of that host names), steps and records when host is not
 * NULL. o: windows, thresholds and max_requests as for a local analyze (its
 * input is ignored); NULL for the defaults. NULL with one line in err. The
 * caller frees the document (json_decref). Password:
 * SERVPROF_CLICKHOUSE_PASSWORD (user: SERVPROF_CLICKHOUSE_USER). */
json_t *sa_analyze_clickhouse(const char *url, const char *session, const char *host, const sa_opts *o, char *err,
                              size_t errcap);
/* The profile behind it (profile.h; free with sa_profile_free), for a
 * consumer that computes more from it. NULL with one line in err. */
struct sa_profile *sa_profile_load_clickhouse(const char *url, const char *session, const char *host, char *err,
                                              size_t errcap);
/* Its text form on f: the local analyze's (render.h). */
void sa_render_clickhouse_text(json_t *doc, FILE *f);

#endif
