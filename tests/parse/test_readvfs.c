/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_readvfs.c — the parser's read-ahead VFS (tool/parse/read/readvfs.c) on real
 * SQLite files, compared byte for byte with the file itself:
 *
 *  - xRead of the read-only main file at every kind of offset (inside one
 *    chunk, straddling two, larger than a chunk, at and past the end: a
 *    short read zero-fills and says SQLITE_IOERR_SHORT_READ, as SQLite's
 *    own VFS does);
 *  - the chunk is dropped on lock changes: a change made by another
 *    connection is seen after the reader's next lock;
 *  - read-write and WAL connections through the VFS (writes, truncation,
 *    shared memory) give the same database as plain SQLite;
 *  - opening a missing file fails cleanly; prs_readvfs_main_file hands out
 *    SQLite's own file, for stores of this VFS and of the default one;
 *  - the VFS-level calls reach the default VFS (access, full path,
 *    randomness, time, dlopen errors).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "readvfs.h"

#define CHUNK (128 * 1024)

static char tmp[] = "/tmp/sp_test_readvfs_XXXXXX";
static char dbpath[300];

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, err ? err : "?");
        CHECK(0);
    }
    sqlite3_free(err);
}

static long long query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    long long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* A store of ~1 MiB in 4 KiB pages (plain SQLite, rollback journal). */
static void make_store(const char *path)
{
    sqlite3 *db;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    exec(db, "PRAGMA page_size=4096; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);"
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<4000)"
             " INSERT INTO t SELECT i, printf('%0200d', i) FROM n;");
    sqlite3_close(db);
}

static unsigned char *file_bytes(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        b = malloc((size_t)*size);
        if (b && fread(b, 1, (size_t)*size, f) != (size_t)*size) {
            free(b);
            b = NULL;
        }
    }
    if (f)
        fclose(f);
    return b;
}

/* Reads through the VFS's file at ofs and compares with the file's bytes. */
static void read_same(sqlite3_file *f, const unsigned char *want, long size, long ofs, int amt)
{
    unsigned char *got = malloc((size_t)amt);
    memset(got, 0xAA, (size_t)amt);
    int rc = f->pMethods->xRead(f, got, amt, ofs);
    if (ofs + amt <= size) {
        CHECK_INT(rc, SQLITE_OK);
        if (memcmp(got, want + ofs, (size_t)amt) != 0) {
            fprintf(stderr, "bytes differ at ofs %ld amt %d\n", ofs, amt);
            CHECK(0);
        }
    } else { /* past the end: what exists, then zeros */
        CHECK_INT(rc, SQLITE_IOERR_SHORT_READ);
        long have = size > ofs ? size - ofs : 0;
        CHECK(memcmp(got, want + ofs, (size_t)have) == 0);
        int zeros = 1;
        for (long i = have; i < amt; i++)
            zeros &= got[i] == 0;
        CHECK(zeros);
    }
    free(got);
}

static void check_reads(void)
{
    long size = 0;
    unsigned char *want = file_bytes(dbpath, &size);
    CHECK(want && size > 4 * CHUNK);
    sqlite3 *db;
    CHECK_INT(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, prs_readvfs_name()), SQLITE_OK);
    CHECK_INT(query_int(db, "SELECT count(*) FROM t"), 4000); /* pages through SQLite */
    sqlite3_file *f = NULL;
    CHECK_INT(sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &f), SQLITE_OK);
    CHECK(f && f->pMethods);
    long offsets[] = {0, 100, CHUNK - 100, CHUNK + 7, 3 * CHUNK - 50, size - 4096, size - 10,
                      size, size + 5000};
    int amounts[] = {100, 4096, 200, 65536, CHUNK + 1};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++)
        for (size_t j = 0; j < sizeof amounts / sizeof amounts[0]; j++)
            if (offsets[i] >= 0)
                read_same(f, want, size, offsets[i], amounts[j]);
    sqlite3_int64 fsize = 0;
    CHECK_INT(f->pMethods->xFileSize(f, &fsize), SQLITE_OK);
    CHECK_INT(fsize, size);
    /* No memory-mapped pages: xFetch hands out none, reads still right. */
    void *map = (void *)1;
    CHECK_INT(f->pMethods->xFetch(f, 0, 4096, &map), SQLITE_OK);
    CHECK(map == NULL);
    CHECK_INT(f->pMethods->xUnfetch(f, 0, NULL), SQLITE_OK);
    exec(db, "PRAGMA mmap_size=1048576");
    CHECK_INT(query_int(db, "SELECT sum(length(v)) FROM t"), 4000 * 200);

    /* The main file for rawscan: SQLite's own, equal bytes, unbuffered. */
    sqlite3_file *real = prs_readvfs_main_file(db, 0);
    CHECK(real != NULL && real != f);
    if (real)
        read_same(real, want, size, CHUNK - 100, 200);
    read_same(f, want, size, 5000, 300); /* the wrapper goes straight through now */
    CHECK(prs_readvfs_main_file(db, 1) == real);
    read_same(f, want, size, 9000, 300);
    sqlite3_close(db);

    /* A store opened with the default VFS: its own file comes back. */
    CHECK_INT(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_INT(sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &f), SQLITE_OK);
    CHECK(prs_readvfs_main_file(db, 1) == f);
    sqlite3_close(db);
    free(want);
}

/* The chunk never outlives a lock: another connection's change is seen. */
static void check_lock_drops_chunk(void)
{
    sqlite3 *rd, *wr;
    CHECK_INT(sqlite3_open_v2(dbpath, &rd, SQLITE_OPEN_READONLY, prs_readvfs_name()), SQLITE_OK);
    CHECK_INT(sqlite3_open(dbpath, &wr), SQLITE_OK);
    CHECK_INT(query_int(rd, "SELECT length(v) FROM t WHERE id = 2000"), 200);
    exec(wr, "UPDATE t SET v = 'x' WHERE id = 2000");
    CHECK_INT(query_int(rd, "SELECT length(v) FROM t WHERE id = 2000"), 1);
    exec(wr, "DELETE FROM t WHERE id > 3000; VACUUM"); /* the file shrinks */
    CHECK_INT(query_int(rd, "SELECT count(*) FROM t"), 3000);
    sqlite3_close(wr);
    sqlite3_close(rd);
}

/* Read-write and WAL connections through the VFS go straight through. */
static void check_writers(void)
{
    char path[320];
    snprintf(path, sizeof path, "%s/wal.db", tmp);
    sqlite3 *db, *plain;
    CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                              prs_readvfs_name()), SQLITE_OK);
    exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE w(a); "
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<5000)"
             " INSERT INTO w SELECT randomblob(100) FROM n;");
    CHECK_INT(query_int(db, "SELECT count(*) FROM w"), 5000);
    CHECK_INT(sqlite3_open_v2(path, &plain, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_INT(query_int(plain, "SELECT count(*) FROM w"), 5000); /* through the WAL and -shm */
    sqlite3_close(plain);
    exec(db, "DELETE FROM w WHERE rowid > 10; PRAGMA wal_checkpoint(TRUNCATE); "
             "PRAGMA journal_mode=DELETE; VACUUM;");
    sqlite3_close(db);
    CHECK_INT(sqlite3_open_v2(path, &plain, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_INT(query_int(plain, "SELECT count(*) FROM w"), 10);
    CHECK_STR(sqlite3_errmsg(plain), "not an error");
    long long pages = query_int(plain, "PRAGMA page_count");
    CHECK(pages > 0 && pages < 10); /* from ~150: truncated by the VACUUM */
    long size = 0;
    free(file_bytes(path, &size));
    CHECK_INT(size, pages * query_int(plain, "PRAGMA page_size"));
    sqlite3_close(plain);
}

static void check_vfs_calls(void)
{
    sqlite3_vfs *v = sqlite3_vfs_find(prs_readvfs_name());
    CHECK(v != NULL && v != sqlite3_vfs_find(NULL)); /* registered, not the default */
    if (!v)
        return;
    int out = -1;
    CHECK_INT(v->xAccess(v, dbpath, SQLITE_ACCESS_EXISTS, &out), SQLITE_OK);
    CHECK_INT(out, 1);
    char missing[320];
    snprintf(missing, sizeof missing, "%s/missing.db", tmp);
    CHECK_INT(v->xAccess(v, missing, SQLITE_ACCESS_EXISTS, &out), SQLITE_OK);
    CHECK_INT(out, 0);
    char full[1024], cwd[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_INT(v->xFullPathname(v, "rel.db", (int)sizeof full, full), SQLITE_OK);
    char want[600];
    snprintf(want, sizeof want, "%s/rel.db", cwd);
    CHECK_STR(full, want);
    unsigned char r1[16] = {0}, r2[16] = {0};
    CHECK_INT(v->xRandomness(v, 16, (char *)r1), 16);
    CHECK_INT(v->xRandomness(v, 16, (char *)r2), 16);
    CHECK(memcmp(r1, r2, 16) != 0);
    sqlite3_int64 t64 = 0;
    double tday = 0;
    CHECK_INT(v->xCurrentTimeInt64(v, &t64), SQLITE_OK);
    CHECK_INT(v->xCurrentTime(v, &tday), SQLITE_OK);
    /* Julian day of 2020-01-01 is 2458849.5; both clocks agree within a minute. */
    CHECK(tday > 2458849.5 && t64 > 0 && (t64 / 86400000.0 - tday) < 1.0 / 1440);
    CHECK(v->xSleep(v, 0) >= 0);
    CHECK(v->xDlOpen(v, "/nonexistent/libnothing.so") == NULL);
    char msg[256] = "";
    v->xDlError(v, (int)sizeof msg, msg);
    CHECK(strstr(msg, "libnothing") != NULL);
    void *self = v->xDlOpen(v, NULL); /* the program itself */
    CHECK(self != NULL);
    if (self) {
        CHECK(v->xDlSym(v, self, "sqlite3_libversion") != NULL);
        v->xDlClose(v, self);
    }
    CHECK_INT(v->xDelete(v, missing, 0), SQLITE_IOERR_DELETE_NOENT);

    /* Opening what is not there fails cleanly (no file left half open). */
    sqlite3 *db;
    CHECK_INT(sqlite3_open_v2(missing, &db, SQLITE_OPEN_READONLY, prs_readvfs_name()),
              SQLITE_CANTOPEN);
    sqlite3_close(db);
}

int main(void)
{
    if (!mkdtemp(tmp))
        return 2;
    snprintf(dbpath, sizeof dbpath, "%s/store.db", tmp);
    CHECK(prs_readvfs_name() != NULL);
    CHECK_STR(prs_readvfs_name(), "servprof-readahead");
    make_store(dbpath);
    check_reads();
    check_lock_drops_chunk();
    check_writers();
    check_vfs_calls();
    check_remove_tree(tmp);
    CHECK_DONE();
}
