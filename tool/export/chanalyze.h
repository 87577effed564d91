/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chanalyze.h — analyze's figures computed by SQL in ClickHouse over what
 * `servprof export` wrote (chanalyze.c says which figures and how).
 */
#ifndef SERVPROF_EXPORT_CHANALYZE_H
#define SERVPROF_EXPORT_CHANALYZE_H

#include <stdio.h>
#include <jansson.h>

/* The analyze document's run and headline for url (clickhouse://HOST:PORT/DB),
 * limited to the exports of session when not NULL, and to host's requests
 * (those a record of that host names), steps and records when host is not
 * NULL; the parts not computed are
 * listed in its "not_covered". NULL with one line in err. The caller frees
 * the document (json_decref). Password: SERVPROF_CLICKHOUSE_PASSWORD. */
json_t *sa_analyze_clickhouse(const char *url, const char *session, const char *host, char *err, size_t errcap);
/* Its text form on f. */
void sa_render_clickhouse_text(json_t *doc, FILE *f);

#endif
