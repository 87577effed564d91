/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_parse_rawscan.c — the raw b-tree scan of `slice` (rawscan.c) against
 * SQLite on stores built for the purpose: every row must come out exactly
 * as SQLite yields it (storeread.c's read_cur), in both read modes.
 *
 * Stores: multi-level trees (512-byte pages), overflow chains (args of
 * 100-300 KB), page sizes 512..65536, reserved bytes, deleted rows
 * (freeblocks, freed leaves), records shorter than the column list (ALTER
 * TABLE ADD COLUMN), columns in another order, every integer serial type;
 * values of unusual types (REAL or TEXT timestamp, INTEGER name, BLOB args)
 * that hand the rest of the store to SQLite; tables rawscan must leave to
 * SQLite (WAL frames, REAL affinity, a default value, WITHOUT ROWID); a
 * writer in another process that must not change the pages under the scan
 * (rollback and WAL mode); and damaged bytes at many offsets (no crash, no
 * endless loop, rows before the damage kept).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "plog.h"
#include "rawscan.h"
#include "readvfs.h"
#include "storeread.h"

/* the parse context the stores under test belong to */
static prs_parse_ctx test_ctx;

static char dir[] = "/tmp/spp-rawscan-XXXXXX";

typedef struct row {
    int64_t rowid, ts, dur;
    long long pid, tid;
    char *name, *cat, *args;
    int args_len;
} row;

typedef struct rows {
    row *v;
    int n, cap;
} rows;

static void rows_free(rows *rs)
{
    for (int i = 0; i < rs->n; i++) {
        free(rs->v[i].name);
        free(rs->v[i].cat);
        free(rs->v[i].args);
    }
    free(rs->v);
    rs->v = NULL;
    rs->n = rs->cap = 0;
}

static char *dup_n(const char *s, int n)
{
    char *d = malloc((size_t)n + 1);
    memcpy(d, s, (size_t)n);
    d[n] = 0;
    return d;
}

/* SQLite's rows, read as storeread.c's read_cur() reads them (every table
 * here has an `id INTEGER PRIMARY KEY`: the rowid). */
static rows sqlite_rows(const char *path, const char *tail)
{
    rows out = {0};
    sqlite3 *db;
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT id, timestamp, duration, name, cat, args, pid, tid FROM slice NOT INDEXED %s",
             tail);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (out.n == out.cap) {
            out.cap = out.cap ? out.cap * 2 : 256;
            out.v = realloc(out.v, (size_t)out.cap * sizeof *out.v);
        }
        row *r = &out.v[out.n++];
        r->rowid = sqlite3_column_int64(st, 0);
        r->ts = sqlite3_column_int64(st, 1);
        r->dur = sqlite3_column_int64(st, 2);
        const char *t = (const char *)sqlite3_column_text(st, 3);
        r->name = strdup(t ? t : "");
        t = (const char *)sqlite3_column_text(st, 4);
        r->cat = strdup(t ? t : "");
        t = (const char *)sqlite3_column_text(st, 5);
        r->args_len = t ? sqlite3_column_bytes(st, 5) : 2;
        r->args = t ? dup_n(t, r->args_len) : strdup("{}");
        r->pid = sqlite3_column_int64(st, 6);
        r->tid = sqlite3_column_int64(st, 7);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

static int by_time(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->rowid < y->rowid ? -1 : x->rowid > y->rowid;
}

static int same(const row *w, int64_t ts, int64_t dur, const char *name, const char *cat, const char *args,
                int args_len, long long pid, long long tid)
{
    return w->ts == ts && w->dur == dur && !strcmp(w->name, name) && !strcmp(w->cat, cat) &&
           w->args_len == args_len && !memcmp(w->args, args, (size_t)args_len) && args[args_len] == 0 &&
           w->pid == pid && w->tid == tid;
}

/* The rows storeread.c must yield: those with a timestamp > 0, by (timestamp
 * as read, rowid). */
static rows time_order(const char *path)
{
    rows want = sqlite_rows(path, "WHERE timestamp > 0");
    qsort(want.v, (size_t)want.n, sizeof *want.v, by_time);
    return want;
}

/* Through prs_store, one pass and exact mode, and with the raw scan off:
 * exactly those rows, and the path the store took (0 SQLite, 1 raw, 2 raw
 * then SQLite; 0 with SERVPROF_RAWSCAN=0). */
static void check_store(const char *path, int want_path, const char *label)
{
    rows want = time_order(path);
    for (int run = 0; run < 3; run++) {
        int exact = run & 1;
        if (run == 2)
            setenv("SERVPROF_RAWSCAN", "0", 1);
        prs_store_exact(&test_ctx, exact);
        prs_store *s = prs_store_open(&test_ctx, path, 0);
        CHECK(s != NULL);
        int i = 0, bad = 0;
        prs_rec r;
        while (s && prs_store_peek(s, &r)) {
            if (i < want.n) {
                row w = want.v[i];
                w.dur = w.dur < 0 ? 0 : w.dur;
                if (w.dur > PRS_MAX_DUR_NS || (w.ts > 0 && w.dur > INT64_MAX - w.ts))
                    w.dur = 0; /* absurd: read as an event (storeread.c) */
                if (!same(&w, r.ts, r.dur, r.name, r.cat, r.args, r.args_len, r.pid, r.tid) && !bad++)
                    fprintf(stderr, "%s (exact %d): row %d (rowid %lld) differs\n", label, exact, i,
                            (long long)w.rowid);
            }
            i++;
            prs_store_next(s);
        }
        CHECK_INT(bad, 0);
        CHECK_INT(i, want.n);
        int path_want = run == 2 ? 0 : want_path;
        if (s && s->raw_path != path_want)
            fprintf(stderr, "%s (exact %d): path %d, expected %d\n", label, exact, s->raw_path, path_want);
        CHECK_INT(s ? s->raw_path : -1, path_want);
        CHECK_INT(s ? s->failed : -1, 0);
        prs_store_close(s);
        unsetenv("SERVPROF_RAWSCAN");
    }
    prs_store_exact(&test_ctx, 0);
    rows_free(&want);
}

/* A read-only connection holding a read transaction, as storeread.c leaves it. */
static sqlite3 *open_reader(const char *path)
{
    sqlite3 *db;
    char uri[256];
    snprintf(uri, sizeof uri, "file:%s?mode=ro", path);
    CHECK(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, prs_readvfs_name()) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "BEGIN; SELECT count(*) FROM slice;", NULL, NULL, NULL) == SQLITE_OK);
    return db;
}

/* rawscan on its own: SQLite's rows in rowid order (every row, no WHERE),
 * up to the expected handoff rowid (-1: none). */
static void check_raw(const char *path, int64_t handoff_at, const char *label)
{
    rows want = sqlite_rows(path, "");
    sqlite3 *db = open_reader(path);
    const char *why = NULL;
    prs_rawscan *rs = prs_rawscan_open(db, &test_ctx.nscans, &why);
    if (!rs)
        fprintf(stderr, "%s: no raw scan: %s\n", label, why);
    CHECK(rs != NULL);
    int i = 0, bad = 0, rc = PRS_RAW_END;
    prs_rawrow w;
    while (rs && (rc = prs_rawscan_next(rs, &w)) == PRS_RAW_ROW) {
        if (i >= want.n || want.v[i].rowid != w.rowid ||
            !same(&want.v[i], w.ts, w.dur, w.name, w.cat, w.args, w.args_len, w.pid, w.tid)) {
            if (!bad++)
                fprintf(stderr, "%s: raw row %d (rowid %lld) differs\n", label, i, (long long)w.rowid);
        }
        i++;
    }
    CHECK_INT(bad, 0);
    if (handoff_at < 0) {
        CHECK_INT(rc, PRS_RAW_END);
        CHECK_INT(i, want.n);
    } else {
        CHECK_INT(rc, PRS_RAW_HANDOFF);
        CHECK_INT(w.rowid, handoff_at);
        CHECK(i < want.n && want.v[i].rowid == handoff_at);
    }
    prs_rawscan_close(rs);
    sqlite3_close(db);
    rows_free(&want);
}

#define SCHEMA                                                                                      \
    "CREATE TABLE slice(id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER, duration INTEGER,"   \
    " name TEXT, depth INTEGER, track_id INTEGER, cat TEXT, args TEXT, cname TEXT, end_time INTEGER," \
    " flag_id TEXT, pid INTEGER, tid INTEGER);"

static sqlite3 *create(const char *path, int page_size, int reserve, const char *schema)
{
    unlink(path);
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    if (reserve)
        CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve) == SQLITE_OK);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA page_size=%d;", page_size);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, schema, NULL, NULL, NULL) == SQLITE_OK);
    return db;
}

static const long long ints[] = {0, 1, -1, 127, -128, 32767, -32768, 8388607, -8388608, 2147483647,
                                 -2147483647LL - 1, 140737488355327LL, -140737488355328LL, INT64_MAX, INT64_MIN};
#define NINTS ((int)(sizeof ints / sizeof *ints))

/* Row i of the usual kind: every integer serial type, NULLs, empty texts,
 * UTF-8, args from empty to `big` bytes every 97th row. */
static void insert_rows(sqlite3 *db, int from, int n, int big)
{
    sqlite3_stmt *ins;
    CHECK(sqlite3_prepare_v2(db, "INSERT INTO slice(timestamp, duration, name, cat, args, pid, tid)"
                                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)", -1, &ins, NULL) == SQLITE_OK);
    char *args = malloc((size_t)big + 64);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (int i = from; i < from + n; i++) {
        if (i % 211 == 5)
            sqlite3_bind_null(ins, 1);
        else if (i % 211 == 7)
            sqlite3_bind_int64(ins, 1, -5);
        else if (i % 53 == 3)
            sqlite3_bind_int64(ins, 1, ints[i % NINTS] > 0 ? ints[i % NINTS] : 1000 + i);
        else
            sqlite3_bind_int64(ins, 1, 1700000000000000000LL + (int64_t)i * 1000 - (i % 10 == 9 ? 4000 : 0));
        if (i % 19 == 0)
            sqlite3_bind_null(ins, 2);
        else
            sqlite3_bind_int64(ins, 2, ints[(i / 3) % NINTS]);
        char name[64];
        snprintf(name, sizeof name, i % 7 ? "name-%d" : "n\xc3\xa9-%d", i);
        if (i % 23 == 0)
            sqlite3_bind_null(ins, 3);
        else
            sqlite3_bind_text(ins, 3, i % 29 == 0 ? "" : name, -1, SQLITE_TRANSIENT);
        if (i % 31 == 0)
            sqlite3_bind_null(ins, 4);
        else
            sqlite3_bind_text(ins, 4, i % 2 ? "Domain" : "Other", -1, SQLITE_STATIC);
        int len = i % 97 == 0 ? big : (i * 37) % 900;
        int o = snprintf(args, 64, "{\"rid\":%d,\"x\":\"", i);
        for (; o < len - 2; o++)
            args[o] = (char)('a' + (o + i) % 26);
        o += snprintf(args + o, 64, "\"}");
        if (i % 13 == 0)
            sqlite3_bind_null(ins, 5);
        else
            sqlite3_bind_text(ins, 5, args, i % 17 == 0 ? 0 : o, SQLITE_TRANSIENT);
        if (i % 5 == 0)
            sqlite3_bind_null(ins, 6);
        else
            sqlite3_bind_int64(ins, 6, ints[i % NINTS]);
        sqlite3_bind_int64(ins, 7, ints[(i * 7) % NINTS]);
        CHECK(sqlite3_step(ins) == SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_finalize(ins);
    free(args);
}

static void path_of(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s.db", dir, name); }

/* Trees of every shape the writer makes: depth, overflow, page sizes,
 * reserved bytes. */
static void test_layouts(void)
{
    static const struct { int psz, reserve, n, big; } cases[] = {
        {512, 0, 3000, 120000},   /* 3+ levels, long overflow chains */
        {1024, 33, 1500, 5000},   /* reserved bytes: usable 991 */
        {4096, 0, 6000, 300000},
        {8192, 8, 1000, 20000},
        {65536, 40, 800, 250000}, /* stored as 1 in the header */
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char path[128], label[64];
        snprintf(label, sizeof label, "layout-%d-%d", cases[k].psz, cases[k].reserve);
        path_of(path, sizeof path, label);
        sqlite3 *db = create(path, cases[k].psz, cases[k].reserve, SCHEMA);
        insert_rows(db, 0, cases[k].n, cases[k].big);
        sqlite3_close(db);
        check_raw(path, -1, label);
        check_store(path, 1, label);
        unlink(path);
    }
}

/* Deleted rows: freeblocks inside leaves and leaves given back. */
static void test_deleted(void)
{
    char path[128];
    path_of(path, sizeof path, "deleted");
    sqlite3 *db = create(path, 1024, 0, SCHEMA);
    insert_rows(db, 0, 4000, 9000);
    CHECK(sqlite3_exec(db, "DELETE FROM slice WHERE id % 3 = 0 OR id BETWEEN 1000 AND 1900 OR id > 3990",
                       NULL, NULL, NULL) == SQLITE_OK);
    insert_rows(db, 5000, 300, 9000); /* into freed space */
    sqlite3_close(db);
    check_raw(path, -1, "deleted");
    check_store(path, 1, "deleted");
    unlink(path);
}

/* Records shorter than the column list (ADD COLUMN after rows were
 * written), and the columns rawscan reads in another order. */
static void test_short_records(void)
{
    char path[128];
    path_of(path, sizeof path, "short");
    sqlite3 *db = create(path, 4096, 0,
                         "CREATE TABLE slice(tid INTEGER, id INTEGER PRIMARY KEY, args TEXT, cat TEXT, name TEXT,"
                         " duration INTEGER, timestamp INTEGER);");
    CHECK(sqlite3_exec(db, "INSERT INTO slice(timestamp, duration, name, cat, args, tid) VALUES"
                           "(100, 5, 'a', 'c', '{\"k\":1}', 7), (200, NULL, NULL, NULL, NULL, NULL);"
                           "ALTER TABLE slice ADD COLUMN extra TEXT;"
                           "INSERT INTO slice(timestamp, name, extra) VALUES(300, 'b', 'x');"
                           "ALTER TABLE slice ADD COLUMN pid INTEGER;"
                           "INSERT INTO slice(timestamp, name, pid) VALUES(400, 'c', 42);",
                       NULL, NULL, NULL) == SQLITE_OK);
    insert_rows(db, 0, 500, 10000);
    sqlite3_close(db);
    check_raw(path, -1, "short");
    check_store(path, 1, "short");
    unlink(path);
}

/* A value of an unusual type at rowid 150: the raw scan stops there and
 * SQLite reads the rest (storeread.c), with its own conversions. */
static void test_handoff(void)
{
    static const struct { const char *label, *schema, *set; } cases[] = {
        {"real-ts", SCHEMA, "UPDATE slice SET timestamp = 150.5 WHERE id = 150"},
        {"text-ts", SCHEMA, "UPDATE slice SET timestamp = '1700000000000150000x' WHERE id = 150"},
        {"int-name",
         "CREATE TABLE slice(id INTEGER PRIMARY KEY, timestamp INTEGER, duration INTEGER, name, cat TEXT,"
         " args TEXT, pid INTEGER, tid INTEGER);",
         "UPDATE slice SET name = 12345 WHERE id = 150"},
        {"blob-args", SCHEMA, "UPDATE slice SET args = X'7B226B223A317D' WHERE id = 150"},
        {"real-dur", SCHEMA, "UPDATE slice SET duration = 2.5 WHERE id = 150"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char path[128];
        path_of(path, sizeof path, cases[k].label);
        sqlite3 *db = create(path, 1024, 0, cases[k].schema);
        insert_rows(db, 0, 600, 3000);
        CHECK(sqlite3_exec(db, cases[k].set, NULL, NULL, NULL) == SQLITE_OK);
        sqlite3_close(db);
        check_raw(path, 150, cases[k].label);
        check_store(path, 2, cases[k].label);
        unlink(path);
    }
}

/* Tables the raw scan must leave to SQLite. */
static void test_sqlite_path(void)
{
    static const struct { const char *label, *schema; } cases[] = {
        {"real-affinity",
         "CREATE TABLE slice(id INTEGER PRIMARY KEY, timestamp REAL, duration INTEGER, name TEXT, cat TEXT,"
         " args TEXT, pid INTEGER, tid INTEGER);"},
        {"default",
         "CREATE TABLE slice(id INTEGER PRIMARY KEY, timestamp INTEGER, duration INTEGER, name TEXT,"
         " cat TEXT DEFAULT 'x', args TEXT, pid INTEGER, tid INTEGER);"},
        {"without-rowid",
         "CREATE TABLE slice(id INTEGER PRIMARY KEY, timestamp INTEGER, duration INTEGER, name TEXT, cat TEXT,"
         " args TEXT, pid INTEGER, tid INTEGER) WITHOUT ROWID;"},
        {"generated",
         "CREATE TABLE slice(id INTEGER PRIMARY KEY, g INTEGER AS (id * 2), timestamp INTEGER,"
         " duration INTEGER, name TEXT, cat TEXT, args TEXT, pid INTEGER, tid INTEGER);"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char path[128];
        path_of(path, sizeof path, cases[k].label);
        sqlite3 *db = create(path, 4096, 0, cases[k].schema);
        if (!strstr(cases[k].label, "without"))
            insert_rows(db, 0, 300, 5000);
        else /* its rows need their id */
            CHECK(sqlite3_exec(db, "INSERT INTO slice VALUES(1, 10, 1, 'a', 'c', '{}', 1, 1),"
                                   "(2, 20, 1, 'b', 'c', '{}', 1, 1)", NULL, NULL, NULL) == SQLITE_OK);
        sqlite3_close(db);
        check_store(path, 0, cases[k].label);
        unlink(path);
    }
    /* WAL frames not yet checkpointed: the file is not the snapshot */
    char path[128];
    path_of(path, sizeof path, "wal");
    sqlite3 *db = create(path, 4096, 0, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;" SCHEMA);
    insert_rows(db, 0, 400, 5000);
    check_store(path, 0, "wal-frames");
    /* checkpointed and truncated: the file is the snapshot again */
    CHECK(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) == SQLITE_OK);
    check_store(path, 1, "wal-empty");
    sqlite3_close(db);
    unlink(path);
}

/* Another process tries to change every page while a store is open on the
 * raw path with no SQLite statement active: the read transaction storeread.c
 * holds must keep the pages the scan reads unchanged. Rollback mode: the
 * writer cannot commit. WAL mode: it commits into the WAL, but no
 * checkpoint may copy a frame into the database file. */
static void test_writer_blocked(int wal)
{
    char path[128];
    path_of(path, sizeof path, wal ? "lock-wal" : "lock-rollback");
    sqlite3 *db = create(path, 1024, 0, wal ? "PRAGMA journal_mode=WAL;" SCHEMA : SCHEMA);
    /* rows in time order (direct mode: read as they are handed out), 4 MB:
     * more than one chunk of the scan */
    CHECK(sqlite3_exec(db, "WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 10000) "
                           "INSERT INTO slice(timestamp, duration, name, cat, args, pid, tid) SELECT "
                           "1700000000000000000 + n * 1000, n, 'r' || n, 'c', printf('{\"n\":%d,\"pad\":\"%.400c\"}', n, 'x'), "
                           "1, 2 FROM i", NULL, NULL, NULL) == SQLITE_OK);
    if (wal)
        CHECK(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) == SQLITE_OK);
    else
        sqlite3_close(db);
    /* WAL: the writer's connection stays open (its -wal and -shm are there), so
     * the store is live and opened with locks. A WAL store with no writer left
     * is read immutable (prs_store_uri): a writer arriving at a closed store is
     * outside that contract (docs/parse.md). */
    rows want = time_order(path);
    prs_store_exact(&test_ctx, 1);
    prs_store *s = prs_store_open(&test_ctx, path, 0);
    CHECK(s != NULL);
    if (!s) {
        rows_free(&want);
        return;
    }
    CHECK_INT(s->raw_path, 1);
    CHECK_INT(s->mode, PRS_READ_DIRECT);
    CHECK(s->cur == NULL && sqlite3_next_stmt(s->db, NULL) == NULL); /* no statement at all */
    prs_rec r;
    CHECK(prs_store_peek(s, &r));
    pid_t pid = fork();
    if (pid == 0) {
        sqlite3 *w;
        int ok = sqlite3_open(path, &w) == SQLITE_OK;
        sqlite3_busy_timeout(w, 200);
        int rc = sqlite3_exec(w, "UPDATE slice SET args = '{\"changed\":1}', timestamp = timestamp + 1",
                              NULL, NULL, NULL);
        int code = 0;
        if (!wal) {
            code = rc == SQLITE_BUSY ? 0 : 10; /* must not commit */
        } else {
            int log = -1, ckpt = -1;
            if (rc != SQLITE_OK)
                code = 11; /* the WAL takes the commit */
            sqlite3_wal_checkpoint_v2(w, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &ckpt);
            if (!(log > 0 && ckpt == 0))
                code = 12; /* nothing may be copied into the file */
        }
        sqlite3_close(w);
        _exit(ok ? code : 13);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), 0);
    if (wal)
        sqlite3_close(db);
    int i = 0, bad = 0;
    while (prs_store_peek(s, &r)) {
        row w = want.v[i < want.n ? i : 0];
        w.dur = w.dur < 0 ? 0 : w.dur;
        bad += i >= want.n || !same(&w, r.ts, r.dur, r.name, r.cat, r.args, r.args_len, r.pid, r.tid);
        i++;
        prs_store_next(s);
    }
    CHECK_INT(bad, 0);
    CHECK_INT(i, want.n);
    CHECK_INT(s->raw_path, 1);
    prs_store_close(s);
    prs_store_exact(&test_ctx, 0);
    rows_free(&want);
    /* the transaction ended with the store: the writer's change is there */
    rows after = sqlite_rows(path, "WHERE id = 2");
    CHECK(after.n == 1 && after.n && !strcmp(after.v[0].args, wal ? "{\"changed\":1}" : after.v[0].args));
    rows_free(&after);
    unlink(path);
    char side[160];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

static unsigned char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*len);
    CHECK(fread(b, 1, (size_t)*len, f) == (size_t)*len);
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, long len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(b, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
}

/* Reads path through prs_store; returns the rows yielded (bounded). */
static int drain(const char *path, int limit, prs_store **keep)
{
    prs_store *s = prs_store_open(&test_ctx, path, 0);
    int n = 0;
    prs_rec r;
    while (s && n <= limit && prs_store_peek(s, &r)) {
        n++;
        prs_store_next(s);
    }
    if (keep)
        *keep = s;
    else
        prs_store_close(s);
    return n;
}

/* Damaged bytes at many offsets of a real store: every read must end (no
 * crash: ASan; no endless loop: bounded), and a leaf whose type byte is
 * damaged ends the store there with the rows before it kept. */
static void test_corrupt(void)
{
    char path[128], bad[160];
    path_of(path, sizeof path, "corrupt-src");
    snprintf(bad, sizeof bad, "%s/corrupt.db", dir);
    sqlite3 *db = create(path, 1024, 0, SCHEMA);
    insert_rows(db, 0, 1200, 6000);
    sqlite3_close(db);
    rows want = time_order(path);
    long len;
    unsigned char *orig = slurp(path, &len);
    unsigned char *b = malloc((size_t)len);
    int psz = 1024, npages = (int)(len / psz);
    prs_log_set_level(PRS_NONE);
    static const int offs[] = {0, 1, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 100, 600, 1000, 1023};
    static const unsigned char vals[] = {0xff, 0x00, 0x05, 0x0d, 0x80};
    unsigned seed = 12345;
    int runs = 0, ended = 1, raw_runs = 0, raw_failed = 0;
    for (int p = 2; p <= npages; p += 7) {
        for (size_t k = 0; k < sizeof offs / sizeof *offs; k++) {
            memcpy(b, orig, (size_t)len);
            seed = seed * 1103515245u + 12345u;
            long at = (long)(p - 1) * psz + offs[k];
            b[at] = offs[k] >= 100 ? (unsigned char)(seed >> 16) : vals[(seed >> 16) % sizeof vals];
            spit(bad, b, len);
            prs_store_exact(&test_ctx, (int)(k & 1));
            prs_store *s = NULL;
            ended &= drain(bad, 4 * want.n + 100, &s) <= 4 * want.n + 100;
            raw_runs += s && s->raw_path;
            raw_failed += s && s->raw_path == 1 && s->failed;
            prs_store_close(s);
            runs++;
        }
    }
    prs_store_exact(&test_ctx, 0);
    CHECK(ended);
    CHECK(runs > 1000);
    /* most damage is met by the raw scan, and some of it ends the store */
    CHECK(raw_runs > runs / 2);
    CHECK(raw_failed > 20);
    fprintf(stderr, "damaged stores: %d runs, %d read raw, %d ended by a damaged page\n", runs, raw_runs,
            raw_failed);
    /* A slice leaf past the middle, its type byte damaged: find one whose
     * first cell is a row of the middle of the table. */
    int target = 0;
    for (int p = npages / 2; p <= npages && !target; p++) {
        const unsigned char *pg = orig + (long)(p - 1) * psz;
        if (pg[0] != 0x0d || (pg[3] << 8 | pg[4]) == 0)
            continue;
        const unsigned char *c = pg + (pg[8] << 8 | pg[9]);
        while (*c & 0x80) /* payload size */
            c++;
        c++;
        uint64_t rowid = 0;
        while (*c & 0x80)
            rowid = rowid << 7 | (*c++ & 0x7f);
        rowid = rowid << 7 | *c;
        if (rowid > 200 && rowid < 1000)
            target = p;
    }
    CHECK(target > 0);
    memcpy(b, orig, (size_t)len);
    b[(long)(target - 1) * psz] = 0x07;
    spit(bad, b, len);
    prs_store *s = NULL;
    /* exact mode: SQLite's first pass stops at the page, the raw scan too */
    prs_store_exact(&test_ctx, 1);
    int n = drain(bad, 4 * want.n, &s);
    prs_store_exact(&test_ctx, 0);
    CHECK(s != NULL);
    CHECK(n > 100 && n < want.n);
    CHECK_INT(s ? s->failed : 0, 1);
    CHECK_INT(s ? s->raw_path : 0, 1);
    prs_store_close(s);
    prs_log_set_level(PRS_WARNING);
    free(b);
    free(orig);
    rows_free(&want);
    unlink(bad);
    unlink(path);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    prs_log_set_level(PRS_WARNING);
    unsetenv("SERVPROF_RAWSCAN");
    test_layouts();
    test_deleted();
    test_short_records();
    test_handoff();
    test_sqlite_path();
    test_writer_blocked(0);
    test_writer_blocked(1);
    test_corrupt();
    rmdir(dir);
    CHECK_DONE();
}
