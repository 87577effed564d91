/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rec_test.h — helpers for the recorder's tests: open the recorder directly
 * on a store in a fresh temporary folder (no runtime, no config file),
 * switch the level by hand, and read the resulting SQLite file back.
 */
#ifndef SERVPROF_REC_TEST_H
#define SERVPROF_REC_TEST_H

#include <ftw.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static char rt_dirs[16][512]; /* folders to remove when the test passes */
static int rt_ndirs;

/* A fresh folder under $TMPDIR (or /tmp), removed by RT_DONE() when every
 * check passed (kept for inspection otherwise). */
static inline void rt_tmpdir(char *out, size_t len)
{
    const char *base = getenv("TMPDIR");
    snprintf(out, len, "%s/servprof-rec-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        exit(2);
    }
    if (rt_ndirs < 16)
        snprintf(rt_dirs[rt_ndirs++], sizeof rt_dirs[0], "%s", out);
}

static inline int rt_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path); /* best effort */
    return 0;
}

#define RT_DONE()                                                              \
    do {                                                                       \
        if (!check_failures)                                                   \
            for (int i_ = 0; i_ < rt_ndirs; i_++)                              \
                nftw(rt_dirs[i_], rt_rm_one, 16, FTW_DEPTH | FTW_PHYS);        \
        else                                                                   \
            fprintf(stderr, "test folders kept: %s ...\n", rt_dirs[0]);        \
        CHECK_DONE();                                                          \
    } while (0)

static inline int rt_sanitized(void)
{
    const char *s = getenv("SERVPROF_SANITIZE");
    return s && *s;
}

/* Opens the recorder on <dir>/Trace_Service/ms_service_test-<pid>.db with
 * the given buffer size (0: default) and turns recording on at INFO. */
static inline int rt_open(const char *dir, size_t buffer_bytes, char *store, size_t len)
{
    static sp_session s;
    static sp_config c;
    memset(&s, 0, sizeof s);
    memset(&c, 0, sizeof c);
    snprintf(s.dir, sizeof s.dir, "%s", dir);
    snprintf(s.store_path, sizeof s.store_path, "%s/Trace_Service/ms_service_testhost-%d.db", dir,
             (int)getpid());
    snprintf(s.hostname, sizeof s.hostname, "testhost");
    s.start_ns = servprof_now_ns();
    s.serial = 1;
    c.buffer_bytes = buffer_bytes ? buffer_bytes : 2048 * 1024;
    c.profiler_level = SERVPROF_LEVEL_INFO;
    snprintf(store, len, "%s", s.store_path);
    int rc = sp_recorder_open(&s, &c);
    if (rc == 0)
        atomic_store(&servprof__level, SERVPROF_LEVEL_INFO);
    return rc;
}

static inline void rt_close(void)
{
    atomic_store(&servprof__level, 0);
    sp_recorder_close();
}

static inline sqlite3 *rt_db(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "cannot open %s: %s\n", path, db ? sqlite3_errmsg(db) : "?");
        exit(2);
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

/* First column of the first row as an integer; -1 when no row / error. */
static inline long long rt_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    long long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "SQL error in \"%s\": %s\n", sql, sqlite3_errmsg(db));
        return -1;
    }
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* First column of the first row as text (static buffer); "(none)" when no
 * row, "(null)" for NULL. */
static inline const char *rt_text(sqlite3 *db, const char *sql)
{
    static char buf[16384];
    sqlite3_stmt *st;
    snprintf(buf, sizeof buf, "(none)");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "SQL error in \"%s\": %s\n", sql, sqlite3_errmsg(db));
        return "(error)";
    }
    if (sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(buf, sizeof buf, "%s", t ? (const char *)t : "(null)");
    }
    sqlite3_finalize(st);
    return buf;
}

/* Nonzero when text is one valid JSON object (jansson). */
static inline int rt_json_ok(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    int ok = j && json_is_object(j);
    if (!ok)
        fprintf(stderr, "invalid JSON (%s at %d:%d): %s\n", err.text, err.line, err.column, text);
    json_decref(j);
    return ok;
}

/* Waits until `sql` on the store gives at least `want` (the writer has
 * committed the rows the test waits for), polling every 2 ms for at most
 * 10 s (100 s under sanitizers). Returns the last value. */
static inline long long rt_wait_count(const char *store, const char *sql, long long want)
{
    long long v = -1;
    int polls = (rt_sanitized() ? 100 : 10) * 500;
    for (int i = 0; i < polls; i++) {
        sqlite3 *db = NULL;
        if (sqlite3_open_v2(store, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
                if (sqlite3_step(st) == SQLITE_ROW)
                    v = sqlite3_column_int64(st, 0);
                sqlite3_finalize(st);
            }
        }
        sqlite3_close(db);
        if (v >= want)
            break;
        struct timespec ts = {0, 2000000L};
        nanosleep(&ts, NULL);
    }
    return v;
}

static inline void rt_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#endif
