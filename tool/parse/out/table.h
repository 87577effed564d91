/* SPDX-License-Identifier: Apache-2.0 */
/*
 * table.h — one row sink per report (table.c): a CSV file and/or a table
 * of profiler.db, fed typed values; prs_out is the run's set of outputs.
 */
#ifndef SERVPROF_PARSE_TABLE_H
#define SERVPROF_PARSE_TABLE_H

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sqlite3.h>

#include "dwrite.h"
#include "tap.h"

enum { PRS_NULL = 0, PRS_INT, PRS_REAL, PRS_MS, PRS_TEXT };
typedef struct prs_val {
    int kind;
    long long i;
    double d;
    const char *s; int n;
} prs_val;
static inline prs_val prs_v_null(void) { prs_val v = {0}; return v; }
static inline prs_val prs_v_int(long long i) { prs_val v = {0}; v.kind = PRS_INT; v.i = i; return v; }
static inline prs_val prs_v_real(double d) { prs_val v = {0}; v.kind = isnan(d) ? PRS_NULL : PRS_REAL; v.d = d; return v; }
static inline prs_val prs_v_ms(double d) { prs_val v = {0}; v.kind = isnan(d) ? PRS_NULL : PRS_MS; v.d = d; return v; }
/* A `(ms)` value known as integer nanoseconds: the CSV prints it correctly
 * rounded to the microsecond from the integer (n = 1 marks it; a double of
 * epoch milliseconds cannot hold every microsecond exactly), profiler.db
 * gets the nearest double of milliseconds. */
static inline prs_val prs_v_ns(int64_t ns)
{
    prs_val v = {0};
    v.kind = PRS_MS;
    v.i = ns;
    v.n = 1;
    v.d = (double)(ns / 1000000) + (double)(ns % 1000000) / 1e6;
    return v;
}
static inline prs_val prs_v_text(const char *s, int n) { prs_val v = {0}; v.kind = s ? PRS_TEXT : PRS_NULL; v.s = s; v.n = n < 0 && s ? (int)strlen(s) : n; return v; }

/* stdio buffer of each output file: one write() per this many bytes. */
#define PRS_OUT_BUF (1 << 20)
typedef struct prs_col { const char *name; const char *sqltype; } prs_col;
typedef struct prs_table {
    const char *csv_name;   /* e.g. "request.csv" or "span_info/forward.csv"; NULL: db only */
    const char *db_name;    /* e.g. "request"; NULL: csv only */
    const prs_col *cols;
    int ncols;
    int ncsv;               /* the first ncsv columns go to the CSV, the rest to profiler.db only
                             * (prs_table_init sets ncols; a report lowers it after the init) */
    const char *needs;      /* what the report needs, for the skip line */
    FILE *csv;              /* opened on the first row */
    sqlite3_stmt *ins;      /* INSERT into the in-memory twin (table.c: values SQLite must convert) */
    long long rows;
    int failed;
    char *csv_path;
    char *csv_buf;          /* stdio buffer of csv (glibc ignores setvbuf's size without one) */
    struct prs_bt_tab *bt;  /* its profiler.db b-tree (btwrite.c), owned by prs_out.bt; NULL: no db */
    const char *key;        /* db_name, else csv_name, even when that output is off: the tap's name */
    int sq_tab;             /* its number in prs_out.sq + 1 (dbsql.c); 0: none */
    /* With the writers on threads (prs_out_start_writers): the writers'
     * copy of this table (csv, csv_path, csv_buf, bt, sq_tab and its own
     * ins are theirs there; this one's stay unused), owned by prs_out and
     * freed at prs_out_close, since a report's prs_table may be gone
     * before its rows are written. NULL: the rows are written here. */
    struct prs_table *w;
    int db_on;              /* rows go to profiler.db (parse thread's view, with w) */
    char *create_sql;       /* a writers' table's CREATE, for the db thread's twin (table.c) */
} prs_table;

typedef struct prs_out {
    const char *dir;
    int csv, db;
    sqlite3 *db_conn;       /* profiler.db */
    int failed;
    /* profiler.db's pages are written by btwrite.c; db_conn is then an
     * in-memory database holding its schema (the CREATE texts, views and
     * indexes, which are created on the file at prs_out_close) and
     * converting the rare values that need SQLite's affinity rules. */
    struct prs_bt *bt;
    struct prs_dbsql *sq;   /* instead of bt: SQLite's INSERT on its own thread (dbsql.c) */
    int db_lost;            /* profiler.db failed (reported once, file removed) */
    int discard;            /* prs_out_close removes this run's outputs instead of committing them */
    char *curve_sql;        /* the Coordinator_curve view's CREATE, pending (dbcompat.c); sqlite3_malloc'd */
    prs_dw_stage stage;     /* the outputs' renames, done at prs_out_close (dwrite.c) */
    prs_tap tap;            /* the parse's consumer of rows (prs_opts.tap; zero: none), set after the open */
    char db_final[4096];    /* OUT/profiler.db, or the file that link names (table.c) */
    char db_partial[4104];  /* db_final + ".partial": profiler.db while it is built */
    /* --jobs N > 1: the CSV files and profiler.db encoded on threads of
     * their own (wqueue.c), in the parse thread's order. From
     * prs_out_start_writers to prs_out_close, db_lost, bt, sq, wconn and
     * the writers' tables (prs_table.w) are the db thread's; wfailed is set
     * by either thread and read after the joins. */
    struct prs_wq *wq;      /* one queue, two consumers: a row for both is copied once */
    unsigned wq_csv, wq_db; /* the CSV and db writers' bits in wq (PRS_WQ_FIRST...); 0: none */
    int writers;            /* prs_out_start_writers was called (timeline.c starts its own) */
    _Atomic int wfailed;    /* a writer thread's output failed: exit status 1 */
    sqlite3 *wconn;         /* the db thread's in-memory twin, for the rare rows SQLite converts */
    struct prs_table **shadows; /* the writers' tables, freed at the close */
    int nshadows, capshadows;
} prs_out;

/* Opens OUT (creating it) and profiler.db when on. Returns 0 or -1 (printed). */
int prs_out_open(prs_out *o, const char *dir, int csv, int db);
/* Moves the encoding of every table's CSV and profiler.db rows to two
 * threads (wqueue.c), for the parse's --jobs N > 1; call right after
 * prs_out_open, before any table. The bytes written are the same: each
 * thread encodes in the order the rows came. Without threads (they could
 * not start) the rows are written on the caller's thread as before. */
void prs_out_start_writers(prs_out *o);
/* Creates the table in profiler.db (when on) and prepares its insert. */
void prs_table_init(prs_out *o, prs_table *t, const char *csv_name, const char *db_name,
                    const prs_col *cols, int ncols, const char *needs);
void prs_table_row(prs_out *o, prs_table *t, const prs_val *vals);
/* Closes the CSV; a report with no rows prints its skip line. */
void prs_table_close(prs_out *o, prs_table *t);
/* Finishes profiler.db, then renames every output of the run from its
 * temporary name to its own (dwrite.c, staging); with o->discard set the
 * temporary files are removed instead. 0, or -1 if anything failed. */
int prs_out_close(prs_out *o);

#endif
