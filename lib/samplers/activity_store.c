/* SPDX-License-Identifier: Apache-2.0 */
/*
 * activity_store.c — the device-activity SQLite file of one process:
 * Trace_Service/ascend_service_profiler_<host>-<pid>.db with the reference
 * tool's tables Api, Kernel and Communication, times in epoch ns.
 *
 * Design. A plain SQLite file in WAL mode with synchronous=NORMAL, so the
 * parser can read it while collection runs and always sees whole batches.
 * The caller (sampler_cupti.c) turns each CUPTI buffer into one transaction:
 * begin, one prepared-statement insert per record, commit. The store is not
 * thread-safe; its one caller serializes under its own lock.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "sampler.h"

struct sp_activity_store {
    sqlite3 *db;
    sqlite3_stmt *kernel, *api, *comm;
    char path[SP_PATH_MAX];
    int failed;  /* a write error was logged: later ones stay quiet */
};

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS Api(name TEXT, start INTEGER, end INTEGER, processId INTEGER, "
    "threadId INTEGER, correlationId INTEGER);"
    "CREATE TABLE IF NOT EXISTS Kernel(type TEXT, name TEXT, start INTEGER, end INTEGER, "
    "deviceId INTEGER, streamId INTEGER, correlationId INTEGER);"
    "CREATE TABLE IF NOT EXISTS Communication(name TEXT, start INTEGER, end INTEGER, "
    "deviceId INTEGER, streamId INTEGER, dataCount INTEGER, dataType TEXT, "
    "commGroupName TEXT, correlationId INTEGER);";

/* mkdir -p of the folder holding path. */
static void make_parent(const char *path)
{
    char dir[SP_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(dir, 0750);
        *p = '/';
    }
    mkdir(dir, 0750);
}

static void store_error(sp_activity_store *st, const char *what)
{
    if (st->failed)
        return;
    st->failed = 1;
    sp_log(SP_LOG_ERROR, "activity store %s: %s failed: %s; device activity rows are being "
           "lost", st->path, what, sqlite3_errmsg(st->db));
}

sp_activity_store *sp_activity_store_open(const char *path)
{
    sp_activity_store *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    snprintf(st->path, sizeof st->path, "%s", path);
    make_parent(path);
    char why[160];
    if (sp_precreate_file(path, SP_FILE_MODE, why, sizeof why) != 0) {
        sp_log(SP_LOG_ERROR, "activity store %s: cannot create it (the file %s); device activity "
               "is not recorded", path, why);
        free(st);
        return NULL;
    }
    int rc = sqlite3_open_v2(path, &st->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    char *err = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(st->db, 2000);
        rc = sqlite3_exec(st->db, schema, NULL, NULL, &err);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(st->db, "INSERT INTO Kernel VALUES(?,?,?,?,?,?,?)", -1,
                                &st->kernel, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(st->db, "INSERT INTO Api VALUES(?,?,?,?,?,?)", -1, &st->api,
                                NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(st->db, "INSERT INTO Communication VALUES(?,?,?,?,?,NULL,NULL,"
                                "NULL,?)", -1, &st->comm, NULL);
    if (rc != SQLITE_OK) {
        sp_log(SP_LOG_ERROR, "activity store %s: cannot create it: %s; device activity is not "
               "recorded", path, err ? err : (st->db ? sqlite3_errmsg(st->db) : "out of memory"));
        sqlite3_free(err);
        sp_activity_store_close(st);
        return NULL;
    }
    return st;
}

int sp_activity_store_begin(sp_activity_store *st)
{
    if (sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        store_error(st, "BEGIN");
        return -1;
    }
    return 0;
}

static int step(sp_activity_store *st, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) {
        store_error(st, what);
        return -1;
    }
    return 0;
}

int sp_activity_store_kernel(sp_activity_store *st, const sp_act_kernel *k)
{
    sqlite3_stmt *s = st->kernel;
    sqlite3_bind_text(s, 1, k->type, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, k->name ? k->name : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, k->start);
    sqlite3_bind_int64(s, 4, k->end);
    sqlite3_bind_int64(s, 5, k->device);
    sqlite3_bind_int64(s, 6, k->stream);
    sqlite3_bind_int64(s, 7, k->correlation);
    return step(st, s, "INSERT INTO Kernel");
}

int sp_activity_store_api(sp_activity_store *st, const sp_act_api *a)
{
    sqlite3_stmt *s = st->api;
    sqlite3_bind_text(s, 1, a->name ? a->name : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, a->start);
    sqlite3_bind_int64(s, 3, a->end);
    sqlite3_bind_int64(s, 4, a->pid);
    sqlite3_bind_int64(s, 5, a->tid);
    sqlite3_bind_int64(s, 6, a->correlation);
    return step(st, s, "INSERT INTO Api");
}

int sp_activity_store_comm(sp_activity_store *st, const sp_act_kernel *k)
{
    sqlite3_stmt *s = st->comm;
    sqlite3_bind_text(s, 1, k->name ? k->name : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, k->start);
    sqlite3_bind_int64(s, 3, k->end);
    sqlite3_bind_int64(s, 4, k->device);
    sqlite3_bind_int64(s, 5, k->stream);
    sqlite3_bind_int64(s, 6, k->correlation);
    return step(st, s, "INSERT INTO Communication");
}

int sp_activity_store_commit(sp_activity_store *st)
{
    if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        store_error(st, "COMMIT");
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return 0;
}

void sp_activity_store_close(sp_activity_store *st)
{
    if (!st)
        return;
    sqlite3_finalize(st->kernel);
    sqlite3_finalize(st->api);
    sqlite3_finalize(st->comm);
    if (st->db)
        sqlite3_close(st->db);
    free(st);
}
