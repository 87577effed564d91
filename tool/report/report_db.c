/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_db.c — feeds a profiler.db's report tables to report_rows.c.
 *
 * The input is a parse output folder (or its profiler.db): the tables the
 * charts need (request, batch, forward, counter) are read back in rowid
 * order, every column, and handed over as the parser's own rows would be
 * (prs_val values, columns named as in the file), so the page is the same
 * whether the report parses raw stores itself or reads the parse's output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repcols.h"
#include "report.h"

static int has_table(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE name = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int yes = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

static prs_val value_of(sqlite3_stmt *st, int c)
{
    switch (sqlite3_column_type(st, c)) {
    case SQLITE_INTEGER: return prs_v_int(sqlite3_column_int64(st, c));
    case SQLITE_FLOAT: return prs_v_real(sqlite3_column_double(st, c));
    case SQLITE_TEXT: return prs_v_text((const char *)sqlite3_column_text(st, c), sqlite3_column_bytes(st, c));
    default: return prs_v_null();
    }
}

static int feed_table(sqlite3 *db, const char *path, const char *table, rpt_rows *r)
{
    if (!has_table(db, table))
        return 0;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", table);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "servprof report: %s: reading table %s: %s\n", path, table, sqlite3_errmsg(db));
        return -1;
    }
    int n = sqlite3_column_count(st);
    prs_col *cols = calloc((size_t)n + 1, sizeof *cols);
    prs_val *v = calloc((size_t)n + 1, sizeof *v);
    int rc = cols && v ? SQLITE_ROW : SQLITE_NOMEM;
    for (int c = 0; cols && c < n; c++)
        cols[c].name = sqlite3_column_name(st, c);
    while (rc == SQLITE_ROW && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int c = 0; c < n; c++)
            v[c] = value_of(st, c);
        rpt_rows_add(r, table, cols, n, v);
    }
    if (rc != SQLITE_DONE)
        fprintf(stderr, "servprof report: %s: reading table %s: %s\n", path, table,
                rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(db));
    sqlite3_finalize(st);
    free(cols);
    free(v);
    return rc == SQLITE_DONE ? 0 : -1;
}

int rpt_db_read(const char *profiler_db, rpt_rows *r)
{
    sqlite3 *db = NULL;
    char uri[4200];
    snprintf(uri, sizeof uri, "file:%s?mode=ro", profiler_db);
    if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        fprintf(stderr, "servprof report: cannot open %s: %s\n", profiler_db, db ? sqlite3_errmsg(db) : "no memory");
        sqlite3_close(db);
        return -1;
    }
    int rc = -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        fprintf(stderr, "servprof report: cannot read %s: %s\n", profiler_db, sqlite3_errmsg(db));
    } else if (!has_table(db, "request") && !has_table(db, "batch")) {
        fprintf(stderr, "servprof report: %s is not a profiler.db made by servprof parse (no request or batch "
                        "table)\n", profiler_db);
    } else {
        static const char *const tables[] = {"request", "batch", "forward", "counter", PRS_T_MOE_RANK, PRS_T_EPLB};
        rc = 0;
        for (size_t i = 0; i < sizeof tables / sizeof *tables && rc == 0; i++)
            rc = feed_table(db, profiler_db, tables[i], r);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}
