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


typedef struct spp_bt spp_bt;         /* one database file being written */
typedef struct spp_bt_tab spp_bt_tab; /* one rowid table of it; owned by the spp_bt */

/* Creates path (truncating it) with pages of page_size bytes (a power of
 * two, 512..65536). NULL with errno set when the file cannot be created. */
spp_bt *spp_bt_open(const char *path, int page_size);

/* A new table: ncols columns with affinities aff[0..ncols-1]; ipk is the
 * column that is the rowid (INTEGER PRIMARY KEY), -1 if none. name (copied)
 * is how spp_bt_finish finds it. */
spp_bt_tab *spp_bt_table(spp_bt *w, const char *name, int ncols, const char *aff, int ipk);

/* Appends one row, values as given to an INSERT. Returns 0 when written;
 * 1 when a value needs SQLite's own conversion (a text into a numeric
 * column, a number into a TEXT column): nothing written, convert and call
 * again with as_is = 1 (values then stored as they are, but for the
 * integer storage of integral reals in numeric columns); -1 on error
 * (spp_bt_error). */
int spp_bt_row(spp_bt_tab *t, const spp_val *v, int as_is);

/* An index on t over columns cols[0..nkey-1] (not the INTEGER PRIMARY
 * KEY), declared before t's first row: every row adds its entry, and the
 * index's pages are written when t ends (btindex.c). 0, or -1 (bad
 * columns, rows already written). */
int spp_bt_index(spp_bt_tab *t, const char *name, int nkey, const int *cols);
/* After t ended (ends it if needed): NULL with *root set when the index was
 * written; else why not (*root 0): e.g. keys btindex cannot order exactly;
 * SQLite's CREATE INDEX must then build it. Index rows given to
 * spp_bt_finish must name written indexes. */
const char *spp_bt_index_status(spp_bt *w, const char *name, uint32_t *root);

/* Writes the table's last leaf, its interior pages and its indexes. 0 or
 * -1. Idempotent. */
int spp_bt_table_end(spp_bt_tab *t);

/* One row of sqlite_schema. For type "table", the rootpage is the one of
 * the spp_bt table of that name (an empty table when there is none);
 * other types get rootpage 0 (views, triggers: no storage). */
typedef struct spp_bt_schema { const char *type, *name, *tbl_name, *sql; } spp_bt_schema;

/* Ends every table, writes sqlite_schema (root at page 1) and the file
 * header, closes the file. 0, or -1 (spp_bt_error). */
int spp_bt_finish(spp_bt *w, const spp_bt_schema *rows, int n);

/* The first failure, "" if none (e.g. "write: No space left on device"). */
const char *spp_bt_error(const spp_bt *w);

/* Closes the file if still open, and removes it when `remove` is set. The
 * spp_bt stays valid (rows return -1) until spp_bt_free. */
void spp_bt_abort(spp_bt *w, int remove);

/* Tests only: the lock byte at offset (SQLite's PENDING_BYTE, 2^30, moved
 * in SQLite by sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE)), so
 * that a small file has the page that must stay unused. Before any open. */
void spp_bt_pending_byte(uint32_t offset);

/* Tests only: the memory an index of w may use before SQLite is left to
 * build it (default 32 MiB). Before the first row. */
void spp_bt_index_budget(spp_bt *w, long long bytes);

/* Frees w and its tables (closing the file if still open, not removing it). */
void spp_bt_free(spp_bt *w);

#endif
