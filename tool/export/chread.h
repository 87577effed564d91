/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chread.h — reads back the report tables `servprof export` wrote into
 * ClickHouse, row by row, as the parser's own rows (chread.c): what
 * `servprof report --from clickhouse://` draws its charts from.
 */
#ifndef SERVPROF_EXPORT_CHREAD_H
#define SERVPROF_EXPORT_CHREAD_H

#include <stddef.h>

#include "table.h"

/* One row of `table`: its columns by name and their values (valid during
 * the call only; strings are not NUL-terminated, v[i].n says their length). */
typedef void (*ch_row_fn)(void *ctx, const char *table, const prs_col *cols, int ncols, const prs_val *v);

typedef struct ch_reader ch_reader;

/* A reader of url (clickhouse://[USER@]HOST[:PORT][/DATABASE]; password from
 * SERVPROF_CLICKHOUSE_PASSWORD, user from the URL or SERVPROF_CLICKHOUSE_USER),
 * limited to the exports of `session` when not NULL and to the rows of
 * `host` when not NULL (the rule of analyze --from: requests a record of
 * the host names, steps of its processes). Checks that the server answers
 * and holds an export. NULL with one line in err. Free with ch_reader_close. */
ch_reader *ch_reader_open(const char *url, const char *session, const char *host, char *err, size_t cap);
/* Streams every row of the report table `table` (request, batch, ...) to fn,
 * in the order the parse made them (export, then seq). *nrows gets the count.
 * 0 done, 1 the table is not there (no row of that kind was exported), -1
 * failed with one line in err. Single-threaded. */
int ch_reader_table(ch_reader *r, const char *table, ch_row_fn fn, void *ctx, long long *nrows, char *err,
                    size_t cap);
/* The server and database, for messages and the page ("clickhouse://HOST:PORT/DB", never a password). */
const char *ch_reader_label(const ch_reader *r);
void ch_reader_close(ch_reader *r); /* NULL is a no-op */

#endif
