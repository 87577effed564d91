/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_ops.c — op_summary.csv and op_statistic.csv from the activity
 * stores (ascend_service_profiler_*.db, table Kernel) and the torch
 * profiler's traces (torch_trace.c: host ops on Device_id -1).
 *
 *   op_summary.csv    one row per device task (kernel, copy, memset), in
 *                     time order per device and stream, as the reference's
 *                     op_summary: when it ran, how long, and how long the
 *                     stream sat idle before it ("Task Wait Time").
 *   op_statistic.csv  one row per (device, op type, op name): Count, Total,
 *                     Min, Avg, Max (µs) and Ratio(%) = share of that
 *                     device's busy time, largest total first.
 *
 * Design. Every store's Kernel rows are copied into one private temporary
 * SQLite database (on disk, so millions of kernels do not need RAM), and the
 * two reports are two queries over it: GROUP BY for the statistics, a LAG()
 * window for the wait times. A store that cannot be read, or has no Kernel
 * table, is named on stderr and skipped; the others are still reported.
 */
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include <unistd.h>

#include "dwrite.h"
#include "fmt.h"
#include "fsutil.h"
#include "report_ops.h"
#include "torch_trace.h"

/* Column col of the current row of st as one CSV field (prs_csv_field:
 * quoted when it holds a comma, quote or newline). */
static void column_csv(FILE *f, sqlite3_stmt *st, int col)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    prs_csv_field(f, s ? s : "", s ? sqlite3_column_bytes(st, col) : 0);
}

/* Copies one store's Kernel rows into table k of db. Returns rows copied, or
 * -1 after a message. */
static int64_t import_store(sqlite3 *db, const char *path, int idx)
{
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, "ATTACH DATABASE ? AS src", -1, &st, NULL) != SQLITE_OK)
        goto fail;
    /* Read-only URI; the characters URIs give a meaning to are escaped. */
    char uri[3 * 4096 + 32];
    size_t u = (size_t)snprintf(uri, sizeof uri, "file:");
    for (const char *p = path; *p && u + 4 < sizeof uri - 16; p++) {
        if (*p == '%' || *p == '?' || *p == '#')
            u += (size_t)snprintf(uri + u, sizeof uri - u, "%%%02X", (unsigned char)*p);
        else
            uri[u++] = *p;
    }
    snprintf(uri + u, sizeof uri - u, "?mode=ro");
    sqlite3_bind_text(st, 1, uri, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_DONE)
        goto fail;
    if (sqlite3_prepare_v2(db, "INSERT INTO k SELECT ?, type, name, start, end, deviceId, "
                           "streamId, correlationId FROM src.Kernel WHERE end >= start",
                           -1, &st, NULL) != SQLITE_OK ||
        (sqlite3_bind_int(st, 1, idx), sqlite3_step(st)) != SQLITE_DONE) {
        fprintf(stderr, "servprof parse: %s: no readable Kernel table (%s); skipped for the "
                "op reports\n", path, sqlite3_errmsg(db));
        sqlite3_finalize(st);
        sqlite3_exec(db, "DETACH DATABASE src", NULL, NULL, NULL);
        return -1;
    }
    n = sqlite3_changes(db);
    sqlite3_finalize(st);
    sqlite3_exec(db, "DETACH DATABASE src", NULL, NULL, NULL);
    return n;
fail:
    fprintf(stderr, "servprof parse: %s: cannot open (%s); skipped for the op reports\n", path,
            sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return -1;
}

/* Written as NAME.partial and renamed with the parse's other outputs
 * (dwrite.c, staging): a killed parse leaves no half report. A NAME that
 * is a FIFO or a device is written in place (path is then NAME itself), a
 * symlink followed (sp_output_target). */
static FILE *open_out(const char *dir, const char *name, char *path, size_t len)
{
    char final[4200], target[PATH_MAX];
    snprintf(final, sizeof final, "%s/%s", dir, name);
    int how = sp_output_target(final, target, sizeof target);
    if (how < 0) {
        fprintf(stderr, "servprof parse: %s: %s\n", final, strerror(-how));
        return NULL;
    }
    snprintf(path, len, "%s%s", target, how == SP_OUT_IN_PLACE ? "" : PRS_DW_PARTIAL);
    FILE *f = fopen(path, "w");
    if (!f)
        perror(path);
    return f;
}

/* After the fclose: the file is queued for its rename, or removed. */
static void close_out(prs_dw_stage *stage, const char *path, int bad)
{
    size_t n = strlen(path), suffix = strlen(PRS_DW_PARTIAL);
    if (n < suffix || strcmp(path + n - suffix, PRS_DW_PARTIAL) != 0)
        return; /* written in place: nothing to rename, not ours to remove */
    if (bad) {
        unlink(path);
        return;
    }
    char final[4200];
    snprintf(final, sizeof final, "%.*s", (int)(strlen(path) - strlen(PRS_DW_PARTIAL)), path);
    prs_dw_stage_add(stage, path, final);
}

static int write_summary(sqlite3 *db, const char *dir, prs_dw_stage *stage)
{
    char path[4200];
    FILE *f = open_out(dir, "op_summary.csv", path, sizeof path);
    if (!f)
        return -1;
    fputs("Device_id,Stream ID,Op Name,OP Type,Task Start Time(us),Task Duration(us),"
          "Task Wait Time(us),Correlation ID\n", f);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(
        db,
        "SELECT device, stream, name, type, start, end - start, "
        "  start - LAG(end) OVER (PARTITION BY src, device, stream ORDER BY start, end), corr "
        "FROM k ORDER BY device, stream, start, end", -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t wait = sqlite3_column_type(st, 6) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 6);
        if (wait < 0)
            wait = 0; /* overlapping tasks on one stream (graphs): no wait */
        fprintf(f, "%" PRId64 ",%" PRId64 ",", (int64_t)sqlite3_column_int64(st, 0),
                (int64_t)sqlite3_column_int64(st, 1));
        column_csv(f, st, 2);
        fputc(',', f);
        column_csv(f, st, 3);
        fprintf(f, ",%.3f,%.3f,%.3f,%" PRId64 "\n", (double)sqlite3_column_int64(st, 4) / 1e3,
                (double)sqlite3_column_int64(st, 5) / 1e3, (double)wait / 1e3,
                (int64_t)sqlite3_column_int64(st, 7));
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    int bad = (rc != SQLITE_DONE) | (fclose(f) != 0);
    if (bad)
        fprintf(stderr, "servprof parse: writing %s failed (%s)\n", path, sqlite3_errmsg(db));
    close_out(stage, path, bad);
    return bad ? -1 : 0;
}

static int write_statistic(sqlite3 *db, const char *dir, prs_dw_stage *stage)
{
    char path[4200];
    FILE *f = open_out(dir, "op_statistic.csv", path, sizeof path);
    if (!f)
        return -1;
    fputs("Device_id,OP Type,Op Name,Count,Total Time(us),Min Time(us),Avg Time(us),"
          "Max Time(us),Ratio(%)\n", f);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(
        db,
        "WITH g AS (SELECT device, type, name, COUNT(*) AS n, SUM(end - start) AS tot, "
        "  MIN(end - start) AS lo, MAX(end - start) AS hi FROM k GROUP BY device, type, name), "
        "d AS (SELECT device, SUM(tot) AS busy FROM g GROUP BY device) "
        "SELECT g.device, g.type, g.name, g.n, g.tot, g.lo, g.hi, d.busy "
        "FROM g JOIN d USING (device) ORDER BY g.device, g.tot DESC, g.name", -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t n = sqlite3_column_int64(st, 3), tot = (int64_t)sqlite3_column_int64(st, 4),
                busy = sqlite3_column_int64(st, 7);
        fprintf(f, "%" PRId64 ",", (int64_t)sqlite3_column_int64(st, 0));
        column_csv(f, st, 1);
        fputc(',', f);
        column_csv(f, st, 2);
        fprintf(f, ",%" PRId64 ",%.3f,%.3f,%.3f,%.3f,%.2f\n", n, (double)tot / 1e3,
                (double)sqlite3_column_int64(st, 5) / 1e3, (double)tot / 1e3 / (double)n,
                (double)sqlite3_column_int64(st, 6) / 1e3,
                busy > 0 ? 100.0 * (double)tot / (double)busy : 0.0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    int bad = (rc != SQLITE_DONE) | (fclose(f) != 0);
    if (bad)
        fprintf(stderr, "servprof parse: writing %s failed (%s)\n", path, sqlite3_errmsg(db));
    close_out(stage, path, bad);
    return bad ? -1 : 0;
}

int prs_report_ops(const char *const *activity_paths, int n, const char *out_dir)
{
    return prs_report_ops_all(activity_paths, n, NULL, 0, out_dir, NULL);
}

int prs_report_ops_all(const char *const *activity_paths, int n, const char *const *torch_paths,
                      int ntorch, const char *out_dir, prs_dw_stage *stage)
{
    if (n <= 0 && ntorch <= 0)
        return 0;
    sqlite3 *db = NULL;
    /* "" = a private temporary database on disk, deleted at close. */
    if (sqlite3_open_v2("", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                        NULL) != SQLITE_OK ||
        sqlite3_exec(db, "CREATE TABLE k(src INTEGER, type TEXT, name TEXT, start INTEGER, "
                     "end INTEGER, device INTEGER, stream INTEGER, corr INTEGER)",
                     NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "servprof parse: cannot create a temporary database for the op "
                "reports (%s)\n", db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return -1;
    }
    /* ATTACH is not allowed inside a transaction: one INSERT per store. */
    int64_t rows = 0;
    for (int i = 0; i < n; i++) {
        int64_t got = import_store(db, activity_paths[i], i);
        if (got > 0)
            rows += got;
    }
    for (int i = 0; i < ntorch; i++) { /* torch profiler ops (acl_task_time 3) */
        int64_t got = prs_torch_import_ops(db, torch_paths[i], n + i);
        if (got > 0)
            rows += got;
    }
    int rc = 0;
    if (rows > 0) {
        if (write_summary(db, out_dir, stage) < 0)
            rc = -1;
        if (write_statistic(db, out_dir, stage) < 0)
            rc = -1;
    }
    sqlite3_close(db);
    return rc;
}
