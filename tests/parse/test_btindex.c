/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_btindex.c — indexes laid out by btindex.c inside a file written by
 * btwrite.c: SQLite's integrity_check (every row found through every
 * index, entry counts, page structure) says ok, and scans through each
 * index come back in SQLite's order — at a small page size (several
 * interior levels) and at profiler.db's 64 KiB. Keys cover NULLs, shared
 * text prefixes, negative and 64-bit integers, integral reals stored as
 * integers, duplicates (ordered by rowid), keys already in order and keys
 * in few values; a key the hand layout cannot order exactly is refused and
 * the file stays valid without that index, as it does when an index
 * outgrows its memory budget.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../check.h"
#include "btwrite.h"

static char dir[] = "/tmp/sp_btindex_XXXXXX";

#define NROWS 20000

static const char *texts[] = {"KV cache blocks", "KV cache usage", "KV cache", "queue size", "", "a", "ab",
                              "abc", "b", "http-1", "http-10", "http-2", "\xc3\xa9t\xc3\xa9", "Z"};

static void fill_row(int i, prs_val *v, char *buf)
{
    unsigned r = (unsigned)i * 2654435761u;
    /* a: text of few values, or NULL */
    if (r % 17 == 0)
        v[0] = prs_v_null();
    else
        v[0] = prs_v_text(texts[r % (sizeof texts / sizeof *texts)], -1);
    /* b: integers of every width, negative, 64-bit */
    static const long long bs[] = {0, 1, -1, 127, -128, 40000, -40000, 1LL << 40, -(1LL << 40), INT64_MAX,
                                   INT64_MIN + 1, 7};
    long long b = bs[(r >> 5) % 12];
    v[1] = prs_v_int(b == INT64_MAX || b == INT64_MIN + 1 ? b : b + (long long)(r % 3));
    /* c: reals, some integral (stored as integers), some NULL */
    if ((r >> 9) % 11 == 0)
        v[2] = prs_v_null();
    else if ((r >> 9) % 3 == 0)
        v[2] = prs_v_real((double)((int)(r % 1000) - 500));
    else
        v[2] = prs_v_real((double)(r % 100000) / 7.0 - 5000.0);
    /* d: a flow id: small range, not in order */
    v[3] = prs_v_int((long long)(r % 5000));
    /* e: a time that grows */
    v[4] = prs_v_real(1000.0 + i * 0.25);
    /* f: unique ids like request ids */
    snprintf(buf, 32, "req-%d", (int)(r % 100003));
    v[5] = prs_v_text(buf, -1);
}

static const char *const create_t = "CREATE TABLE t (a TEXT, b INTEGER, c REAL, d INTEGER, e REAL, f TEXT)";
static const char *const idx_sql[][2] = {
    {"ix_ab", "CREATE INDEX ix_ab ON t(a, b)"}, {"ix_c", "CREATE INDEX ix_c ON t(c)"},
    {"ix_d", "CREATE INDEX ix_d ON t(d)"},      {"ix_e", "CREATE INDEX ix_e ON t(e)"},
    {"ix_f", "CREATE INDEX ix_f ON t(f)"},      {"ix_empty", "CREATE INDEX ix_empty ON empty(x)"},
};
static const int idx_cols[][2] = {{0, 1}, {2, -1}, {3, -1}, {4, -1}, {5, -1}, {0, -1}};

static char *query_all(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    out[0] = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
        return out;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *t = (const char *)sqlite3_column_text(st, i);
            size_t k = strlen(t ? t : "NULL") + 2;
            if (n + k + 1 > cap) {
                cap = (n + k + 1) * 2;
                out = realloc(out, cap);
            }
            n += (size_t)snprintf(out + n, cap - n, "%s%c", t ? t : "NULL", i + 1 < sqlite3_column_count(st) ? '|' : '\n');
        }
    }
    sqlite3_finalize(st);
    return out;
}

static void check_db(const char *path, int nidx)
{
    sqlite3 *db;
    CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *ic = query_all(db, "PRAGMA integrity_check");
    CHECK_STR(ic, "ok\n");
    if (strcmp(ic, "ok\n") != 0)
        fprintf(stderr, "%.2000s\n", ic);
    free(ic);
    char *n = query_all(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'index'");
    char want[16];
    snprintf(want, sizeof want, "%d\n", nidx);
    CHECK_STR(n, want);
    free(n);
    /* each index scanned in its own order equals SQLite's sort of the table */
    static const char *const pairs[][2] = {
        {"SELECT a, b, rowid FROM t INDEXED BY ix_ab ORDER BY a, b",
         "SELECT a, b, rowid FROM t NOT INDEXED ORDER BY a, b, rowid"},
        {"SELECT c, rowid FROM t INDEXED BY ix_c ORDER BY c", "SELECT c, rowid FROM t NOT INDEXED ORDER BY c, rowid"},
        {"SELECT d, rowid FROM t INDEXED BY ix_d ORDER BY d", "SELECT d, rowid FROM t NOT INDEXED ORDER BY d, rowid"},
        {"SELECT e, rowid FROM t INDEXED BY ix_e ORDER BY e", "SELECT e, rowid FROM t NOT INDEXED ORDER BY e, rowid"},
        {"SELECT f, rowid FROM t INDEXED BY ix_f ORDER BY f", "SELECT f, rowid FROM t NOT INDEXED ORDER BY f, rowid"},
    };
    for (int i = 0; i < nidx && i < 5; i++) {
        char *a = query_all(db, pairs[i][0]), *b = query_all(db, pairs[i][1]);
        CHECK(strlen(a) > 1000);
        CHECK(strcmp(a, b) == 0);
        free(a);
        free(b);
    }
    /* lookups through the index */
    char *hit = query_all(db, "SELECT count(*) FROM t INDEXED BY ix_ab WHERE a = 'KV cache usage' AND b = 1");
    char *ref = query_all(db, "SELECT count(*) FROM t NOT INDEXED WHERE a = 'KV cache usage' AND b = 1");
    CHECK_STR(hit, ref);
    free(hit);
    free(ref);
    sqlite3_close(db);
}

static void test_indexes(int page)
{
    char path[256];
    snprintf(path, sizeof path, "%s/ix%d.db", dir, page);
    prs_bt *w = prs_bt_open(path, page);
    CHECK(w != NULL);
    prs_bt_tab *t = prs_bt_table(w, "t", 6, "BDEDEB", -1);
    prs_bt_tab *empty = prs_bt_table(w, "empty", 1, "B", -1);
    for (int i = 0; i < 6; i++) {
        int nk = idx_cols[i][1] >= 0 ? 2 : 1;
        CHECK_INT(prs_bt_index(i == 5 ? empty : t, idx_sql[i][0], nk, idx_cols[i]), 0);
    }
    prs_val v[6];
    char buf[32];
    for (int i = 0; i < NROWS; i++) {
        fill_row(i, v, buf);
        CHECK_INT(prs_bt_row(t, v, 0), 0);
    }
    prs_bt_schema rows[8];
    int n = 0;
    rows[n++] = (prs_bt_schema){"table", "t", "t", create_t};
    rows[n++] = (prs_bt_schema){"table", "empty", "empty", "CREATE TABLE empty (x TEXT)"};
    for (int i = 0; i < 6; i++) {
        uint32_t root = 0;
        CHECK(prs_bt_index_status(w, idx_sql[i][0], &root) == NULL);
        CHECK(root > 1);
        rows[n++] = (prs_bt_schema){"index", idx_sql[i][0], i == 5 ? "empty" : "t", idx_sql[i][1]};
    }
    CHECK_INT(prs_bt_finish(w, rows, n), 0);
    CHECK_STR(prs_bt_error(w), "");
    prs_bt_free(w);
    check_db(path, 6);
    unlink(path);
}

/* A file written without an index it refused: SQLite builds that index on
 * it and finds the file sound. The connection stays open for more checks. */
static sqlite3 *sqlite_builds_index(const char *path, const char *create_index)
{
    sqlite3 *db;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db, create_index, NULL, NULL, NULL), SQLITE_OK);
    char *ic = query_all(db, "PRAGMA integrity_check");
    CHECK_STR(ic, "ok\n");
    free(ic);
    return db;
}

/* Texts and numbers in one key column: refused, and the file is valid
 * without it (the caller has SQLite build that index). */
static void test_refused(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/refused.db", dir);
    prs_bt *w = prs_bt_open(path, 4096);
    prs_bt_tab *t = prs_bt_table(w, "m", 1, "A", -1);
    int col = 0;
    CHECK_INT(prs_bt_index(t, "ix_m", 1, &col), 0);
    prs_val a = prs_v_int(5), b = prs_v_text("x", -1);
    CHECK_INT(prs_bt_row(t, &a, 1), 0);
    CHECK_INT(prs_bt_row(t, &b, 1), 0);
    CHECK_INT(prs_bt_table_end(t), 0);
    uint32_t root = 7;
    const char *why = prs_bt_index_status(w, "ix_m", &root);
    CHECK(why != NULL && strstr(why, "numbers and texts") != NULL);
    CHECK_INT(root, 0);
    CHECK(prs_bt_index_status(w, "no_such_index", &root) != NULL);
    prs_bt_schema rows[1] = {{"table", "m", "m", "CREATE TABLE m (v)"}};
    CHECK_INT(prs_bt_finish(w, rows, 1), 0);
    prs_bt_free(w);
    sqlite3 *db = sqlite_builds_index(path, "CREATE INDEX ix_m ON m(v)");
    sqlite3_close(db);
    unlink(path);
}

/* An index past its memory budget is dropped and left to SQLite. */
static void test_budget(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/budget.db", dir);
    prs_bt *w = prs_bt_open(path, 4096);
    prs_bt_index_budget(w, 4096);
    prs_bt_tab *t = prs_bt_table(w, "n", 1, "D", -1);
    int col = 0;
    CHECK_INT(prs_bt_index(t, "ix_n", 1, &col), 0);
    for (int i = 0; i < 1000; i++) {
        prs_val v = prs_v_int(1000 - i);
        CHECK_INT(prs_bt_row(t, &v, 0), 0);
    }
    uint32_t root = 7;
    const char *why = prs_bt_index_status(w, "ix_n", &root);
    CHECK(why != NULL && strstr(why, "memory budget") != NULL);
    CHECK_INT(root, 0);
    prs_bt_schema rows[1] = {{"table", "n", "n", "CREATE TABLE n (v INTEGER)"}};
    CHECK_INT(prs_bt_finish(w, rows, 1), 0);
    prs_bt_free(w);
    sqlite3 *db = sqlite_builds_index(path, "CREATE INDEX ix_n ON n(v)");
    char *first = query_all(db, "SELECT v FROM n INDEXED BY ix_n ORDER BY v LIMIT 1");
    CHECK_STR(first, "1\n");
    free(first);
    sqlite3_close(db);
    unlink(path);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_indexes(512);
    test_indexes(65536);
    test_refused();
    test_budget();
    rmdir(dir);
    CHECK_DONE();
}
