/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rawscan.h — the `slice` table of a raw store read straight from its
 * b-tree pages (rawscan.c), in rowid order, instead of stepping an SQLite
 * statement: the same rows, a tenth of the cost.
 *
 * SQLite still opens the store and holds its read transaction for the whole
 * scan (that lock is what keeps the pages still); rawscan only reads the
 * database file under it. Anything it does not read exactly as SQLite
 * would (a value of an unusual type, a malformed record) ends the raw scan
 * with PRS_RAW_HANDOFF at that row, and the caller continues with
 * `... FROM slice NOT INDEXED WHERE rowid >= ?`.
 */
#ifndef SERVPROF_PARSE_RAWSCAN_H
#define SERVPROF_PARSE_RAWSCAN_H

#include <stdatomic.h>
#include <stdint.h>

#include <sqlite3.h>

typedef struct prs_rawscan prs_rawscan;

/* One row of `SELECT timestamp, duration, name, cat, args, pid, tid`, read
 * as storeread.c's read_cur() reads it: NULL numbers as 0; name and cat "" and
 * args "{}" when NULL; strings NUL-terminated (args_len counts the bytes
 * without the NUL). Valid until the next prs_rawscan_next() or close. */
typedef struct prs_rawrow {
    int64_t rowid;
    int64_t ts, dur;
    long long pid, tid;
    const char *name, *cat, *args;
    int args_len;
} prs_rawrow;

enum {
    PRS_RAW_CORRUPT = -1, /* a damaged page: prs_rawscan_error() says what; stop the store */
    PRS_RAW_END = 0,      /* every row read */
    PRS_RAW_ROW = 1,      /* *row filled */
    PRS_RAW_HANDOFF = 2,  /* row->rowid: SQLite must read from this rowid on (error() says why) */
};

/* Starts a raw scan of table `slice` of db, whose read
 * transaction must be open and must stay open until prs_rawscan_close().
 * Returns NULL with why (a static text) when the file is not the snapshot
 * or the table is not one rawscan reads exactly (then SQLite reads it).
 * *nopen counts the scans open at once (the caller's, one per parse): they
 * share one memory budget for their read chunks. */
prs_rawscan *prs_rawscan_open(sqlite3 *db, atomic_int *nopen, const char **why);
int prs_rawscan_next(prs_rawscan *rs, prs_rawrow *row);
/* What went wrong (CORRUPT) or why the scan was handed off (HANDOFF). */
const char *prs_rawscan_error(const prs_rawscan *rs);
void prs_rawscan_close(prs_rawscan *rs);

#endif
