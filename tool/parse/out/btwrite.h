/* SPDX-License-Identifier: Apache-2.0 */
/*
 * btwrite.h — writes an SQLite database file's table b-trees directly
 * (btwrite.c): rows appended in rowid order, page 1 (header + schema)
 * written last. table.c is its only user (profiler.db).
 */
#ifndef SERVPROF_PARSE_BTWRITE_H
#define SERVPROF_PARSE_BTWRITE_H

#include <stdint.h>

#include "affinity.h"
#include "table.h"


typedef struct prs_bt prs_bt;         /* one database file being written */
typedef struct prs_bt_tab prs_bt_tab; /* one rowid table of it; owned by the prs_bt */

/* Creates path (truncating it) with pages of page_size bytes (a power of
 * two, 512..65536). NULL with errno set when the file cannot be created. */
prs_bt *prs_bt_open(const char *path, int page_size);

/* A new table: ncols columns with affinities aff[0..ncols-1]; ipk is the
 * column that is the rowid (INTEGER PRIMARY KEY), -1 if none. name (copied)
 * is how prs_bt_finish finds it. */
prs_bt_tab *prs_bt_table(prs_bt *w, const char *name, int ncols, const char *aff, int ipk);

/* Appends one row, values as given to an INSERT. Returns 0 when written;
 * 1 when a value needs SQLite's own conversion (a text into a numeric
 * column, a number into a TEXT column): nothing written, convert and call
 * again with as_is = 1 (values then stored as they are, but for the
 * integer storage of integral reals in numeric columns); -1 on error
 * (prs_bt_error). */
int prs_bt_row(prs_bt_tab *t, const prs_val *v, int as_is);

/* An index on t over columns cols[0..nkey-1] (not the INTEGER PRIMARY
 * KEY), declared before t's first row: every row adds its entry, and the
 * index's pages are written when t ends (btindex.c). 0, or -1 (bad
 * columns, rows already written). */
int prs_bt_index(prs_bt_tab *t, const char *name, int nkey, const int *cols);
/* After t ended (ends it if needed): NULL with *root set when the index was
 * written; else why not (*root 0): e.g. keys btindex cannot order exactly;
 * SQLite's CREATE INDEX must then build it. Index rows given to
 * prs_bt_finish must name written indexes. */
const char *prs_bt_index_status(prs_bt *w, const char *name, uint32_t *root);

/* Writes the table's last leaf, its interior pages and its indexes. 0 or
 * -1. Idempotent. */
int prs_bt_table_end(prs_bt_tab *t);

/* One row of sqlite_schema. For type "table", the rootpage is the one of
 * the prs_bt table of that name (an empty table when there is none);
 * other types get rootpage 0 (views, triggers: no storage). */
typedef struct prs_bt_schema { const char *type, *name, *tbl_name, *sql; } prs_bt_schema;

/* Ends every table, writes sqlite_schema (root at page 1) and the file
 * header, closes the file. 0, or -1 (prs_bt_error). */
int prs_bt_finish(prs_bt *w, const prs_bt_schema *rows, int n);

/* The first failure, "" if none (e.g. "write: No space left on device"). */
const char *prs_bt_error(const prs_bt *w);

/* Closes the file if still open, and removes it when `remove` is set. The
 * prs_bt stays valid (rows return -1) until prs_bt_free. */
void prs_bt_abort(prs_bt *w, int remove);

/* Tests only: the lock byte at offset (SQLite's PENDING_BYTE, 2^30, moved
 * in SQLite by sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE)), so
 * that a small file has the page that must stay unused. Before any open. */
void prs_bt_pending_byte(uint32_t offset);

/* Tests only: the memory an index of w may use before SQLite is left to
 * build it (default 32 MiB). Before the first row. */
void prs_bt_index_budget(prs_bt *w, long long bytes);

/* Frees w and its tables (closing the file if still open, not removing it). */
void prs_bt_free(prs_bt *w);

#endif
