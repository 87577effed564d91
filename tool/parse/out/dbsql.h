/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbsql.h — profiler.db written by SQLite itself, on a thread of its own
 * (dbsql.c): the way back from the page writer (btwrite.c), chosen with
 * `servprof parse --db-writer sqlite` or SERVPROF_PARSE_DB_WRITER=sqlite.
 *
 * The caller (table.c, one thread) queues statements and rows; the thread
 * runs them in order: prepared INSERTs, one transaction, journal off,
 * 64 KiB pages, views and indexes at the end. Not thread-safe: one caller.
 */
#ifndef SERVPROF_PARSE_DBSQL_H
#define SERVPROF_PARSE_DBSQL_H

#include "table.h"

typedef struct prs_dbsql prs_dbsql;

/* Creates path (truncated) and starts the thread. NULL with why set when
 * the file or the thread cannot be made. */
prs_dbsql *prs_dbsql_open(const char *path, char *why, size_t cap);
/* Queues a CREATE TABLE (its text as SQLite keeps it) for a table of ncols
 * columns; rows for it are then given its number (0, 1, ...). -1 when the
 * writer has failed. */
int prs_dbsql_table(prs_dbsql *q, const char *create_sql, const char *name, int ncols);
/* Queues one row of table tab (values copied). */
void prs_dbsql_row(prs_dbsql *q, int tab, const prs_val *v, int ncols);
/* Queues the statements to run after every row (views, indexes), commits,
 * waits for the thread and closes the file. 0, or -1 with why set. */
int prs_dbsql_finish(prs_dbsql *q, char **sql, int n, char *why, size_t cap);
/* The first failure so far, "" if none (e.g. "disk I/O error"). */
const char *prs_dbsql_error(prs_dbsql *q);
/* Stops the thread if running and frees q (the file is left as it is). */
void prs_dbsql_free(prs_dbsql *q);

/* profiler.db's writer: SQLite's INSERT on a thread (dbsql.c) when
 * SERVPROF_PARSE_DB_WRITER=sqlite (`parse --db-writer sqlite` sets it),
 * else the page writer (btwrite.c). */
int prs_db_writer_is_sqlite(void);

#endif
