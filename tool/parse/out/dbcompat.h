/* SPDX-License-Identifier: Apache-2.0 */
/* dbcompat.h — profiler.db as the reference's dashboards and tools read it
 * (dbcompat.c): its column names beside ours, its extra views. */
#ifndef SERVPROF_PARSE_DBCOMPAT_H
#define SERVPROF_PARSE_DBCOMPAT_H
#include <stdint.h>

#include "table.h"


/* The reference's columns of table `table` (stored columns cols) that we
 * compute from ours, as text to append to its CREATE TABLE column list:
 * ", name TYPE GENERATED ALWAYS AS (...) VIRTUAL" each, or NULL when none.
 * Virtual generated columns are computed when read: nothing is stored, and
 * they come after the stored columns, so the page writer never sees them.
 * A column is left out when the table already has one of that name or
 * lacks the one it is computed from. The caller frees with sqlite3_free. */
char *prs_dbcompat_columns(const char *table, const prs_col *cols, int ncols);

/* The reference's time text, "YYYY-MM-DD HH:MM:SS:ffffff" (a colon before
 * the microseconds, as its parser writes it), in UTC (docs/parse.md says
 * why). buf holds at least 27 bytes. */
void prs_dbcompat_time(int64_t ns, char *buf);

/* The instances of coordinator_running, for the Coordinator_curve view
 * (one column per instance: its columns depend on the data, which the page
 * writer has not stored yet when the views are made). decode[i]: node
 * type decode, else prefill. Kept in o until prs_dbcompat_views (or
 * prs_out_close); n = 0 clears. */
void prs_dbcompat_coordinator_nodes(prs_out *o, const char *const *address, const int *decode, int n);

/* Creates the reference's views (data_table, data_link, batch_info,
 * request_data, forward_info, kvcache_usage, pd_communication_info,
 * pd_split_pull_kvcache, coordinator_info, batch_exec, batch_req and the
 * *_curve views) in profiler.db's schema. Call once every table exists; a
 * view SQLite refuses is one warning, the others are still made. */
void prs_dbcompat_views(prs_out *o);

#endif
