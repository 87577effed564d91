/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_btwrite.c — profiler.db's page writer (btwrite.c) against SQLite
 * itself: the same rows are inserted by SQLite into a reference database
 * and written by btwrite into another, and every table must read back
 * identically (rowid, quote() and typeof() of every column), the schema
 * too, with PRAGMA integrity_check = ok. Page sizes 512..65536: at 512
 * bytes a table of 100k rows has four levels, the schema spills out of
 * page 1, a 3 kB text has an overflow chain of several pages. SQLite's
 * lock-byte page is moved to 64 KiB (as SQLite's own tests do) so that
 * small files cross it. Then the row sink (table.c) end to end: values
 * that need SQLite's affinity rules, INTEGER PRIMARY KEY, views and
 * indexes; and a write failure (file size limit) that must give one
 * ERROR and no profiler.db.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bt_test.h"
#include "btwrite.h"
#include "check.h"

#define PENDING 0x10000u

static char tmpdir[256];

/* ------------------------------------------------------------ helpers */

typedef struct sbuf { char *p; size_t n, cap; } sbuf;
static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* Every row of table: rowid, then quote() and typeof() of each column. */
static char *dump_table(sqlite3 *db, const char *table)
{
    sbuf sql = {0}, out = {0};
    char *q = sqlite3_mprintf("SELECT name FROM pragma_table_info(%Q)", table);
    sqlite3_stmt *st;
    sb_add(&sql, "SELECT rowid", 12);
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            char *c = sqlite3_mprintf(", quote(\"%w\"), typeof(\"%w\")", sqlite3_column_text(st, 0),
                                      sqlite3_column_text(st, 0));
            sb_add(&sql, c, strlen(c));
            sqlite3_free(c);
        }
        sqlite3_finalize(st);
    }
    sqlite3_free(q);
    q = sqlite3_mprintf(" FROM \"%w\" ORDER BY rowid", table);
    sb_add(&sql, q, strlen(q));
    sqlite3_free(q);
    sb_add(&out, "", 0);
    if (sqlite3_prepare_v2(db, sql.p, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int i = 0; i < sqlite3_column_count(st); i++) {
                const char *v = (const char *)sqlite3_column_text(st, i);
                sb_add(&out, v ? v : "NULL", strlen(v ? v : "NULL"));
                sb_add(&out, "|", 1);
            }
            sb_add(&out, "\n", 1);
        }
        sqlite3_finalize(st);
    } else {
        sb_add(&out, "ERROR ", 6);
        sb_add(&out, sqlite3_errmsg(db), strlen(sqlite3_errmsg(db)));
    }
    free(sql.p);
    return out.p;
}

static char *query_text(sqlite3 *db, const char *sql)
{
    sbuf out = {0};
    sqlite3_stmt *st;
    sb_add(&out, "", 0);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        sb_add(&out, "ERROR ", 6);
        sb_add(&out, sqlite3_errmsg(db), strlen(sqlite3_errmsg(db)));
        return out.p;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *v = (const char *)sqlite3_column_text(st, i);
            sb_add(&out, v ? v : "NULL", strlen(v ? v : "NULL"));
            sb_add(&out, "|", 1);
        }
        sb_add(&out, "\n", 1);
    }
    sqlite3_finalize(st);
    return out.p;
}

/* Both databases: same schema rows (but rootpage), same rows in every
 * table, integrity ok. */
static void compare_dbs(const char *ref_path, const char *got_path)
{
    sqlite3 *a = NULL, *b = NULL;
    CHECK(sqlite3_open_v2(ref_path, &a, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(sqlite3_open_v2(got_path, &b, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    char *ia = query_text(b, "PRAGMA integrity_check");
    CHECK_STR(ia, "ok|\n");
    free(ia);
    const char *sch = "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid";
    char *sa = query_text(a, sch), *sb = query_text(b, sch);
    CHECK_STR(sb, sa);
    free(sa);
    free(sb);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid", -1, &st,
                           NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(st, 0);
            char *ta = dump_table(a, name), *tb = dump_table(b, name);
            if (strcmp(ta, tb) != 0)
                fprintf(stderr, "table %s differs (%zu vs %zu bytes)\n", name, strlen(ta), strlen(tb));
            CHECK(strcmp(ta, tb) == 0);
            free(ta);
            free(tb);
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(a);
    sqlite3_close(b);
}

/* ------------------------------------------------ the writer on its own */

enum { COLS = 5 };
static const char *all_create = "CREATE TABLE all_kinds (i INTEGER, r REAL, t TEXT, b, n NUMERIC)";

static const long long ints[] = {0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769,
                                 8388607, 8388608, -8388608, -8388609, 2147483647LL, 2147483648LL,
                                 -2147483648LL, -2147483649LL, 140737488355327LL, 140737488355328LL,
                                 -140737488355328LL, -140737488355329LL, 9223372036854775807LL,
                                 -9223372036854775807LL - 1};
static const double reals[] = {0.0, -0.0, 1.0, 0.5, -2.25, 3.0, 1e15, 1e300, -1e-300, 123456.789,
                               9007199254740993.0, 9223372036854775807.0, -9223372036854775808.0,
                               4611686018427387904.0, 1.0 / 0.0, -1.0 / 0.0};

typedef struct rowset { prs_val *v; int nrows, ncols, cap; char **texts; int ntexts, captexts; } rowset;

static void rs_add(rowset *rs, const prs_val *row)
{
    if (rs->nrows == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 64;
        rs->v = realloc(rs->v, (size_t)rs->cap * (size_t)rs->ncols * sizeof *rs->v);
    }
    memcpy(rs->v + (size_t)rs->nrows * (size_t)rs->ncols, row, (size_t)rs->ncols * sizeof *row);
    rs->nrows++;
}

static const char *rs_text(rowset *rs, char *s)
{
    if (rs->ntexts == rs->captexts) {
        rs->captexts = rs->captexts ? rs->captexts * 2 : 64;
        rs->texts = realloc(rs->texts, (size_t)rs->captexts * sizeof *rs->texts);
    }
    rs->texts[rs->ntexts++] = s;
    return s;
}

static void rs_free(rowset *rs)
{
    for (int i = 0; i < rs->ntexts; i++)
        free(rs->texts[i]);
    free(rs->texts);
    free(rs->v);
}

/* Every value kind in every column it may go to without SQLite's
 * conversions (texts into TEXT and untyped columns; numbers elsewhere). */
static void all_kinds_rows(rowset *rs, int page)
{
    rs->ncols = COLS;
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        prs_val r[COLS] = {prs_v_int(ints[k]), prs_v_int(ints[k]), prs_v_null(), prs_v_int(ints[k]),
                           prs_v_int(ints[k])};
        rs_add(rs, r);
    }
    for (size_t k = 0; k < sizeof reals / sizeof *reals; k++) {
        prs_val r[COLS] = {prs_v_real(reals[k]), prs_v_real(reals[k]), prs_v_null(), prs_v_real(reals[k]),
                           prs_v_ms(reals[k])};
        rs_add(rs, r);
    }
    /* texts: empty, short, around the local limits, overflow chains */
    size_t lens[] = {0, 1, 5, 57, 58, 200, (size_t)page - 40, (size_t)page - 35, (size_t)page,
                     (size_t)page * 3 + 7, (size_t)page * 5 / 2, 10000, 70000};
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
        const char *s = rs_text(rs, make_text(lens[k], (unsigned)k));
        prs_val r[COLS] = {prs_v_int((long long)k), prs_v_null(), prs_v_text(s, -1), prs_v_text(s, -1),
                           prs_v_null()};
        rs_add(rs, r);
    }
    prs_val nulls[COLS] = {prs_v_null(), prs_v_null(), prs_v_null(), prs_v_null(), prs_v_null()};
    rs_add(rs, nulls);
}

/* Inserts rs into table of db by SQL. */
static void sql_insert(sqlite3 *db, const char *table, const rowset *rs)
{
    sbuf q = {0};
    char *h = sqlite3_mprintf("INSERT INTO \"%w\" VALUES (?", table);
    sb_add(&q, h, strlen(h));
    sqlite3_free(h);
    for (int i = 1; i < rs->ncols; i++)
        sb_add(&q, ", ?", 3);
    sb_add(&q, ")", 1);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, q.p, -1, &st, NULL) == SQLITE_OK);
    for (int r = 0; r < rs->nrows; r++) {
        bind_vals(st, rs->v + (size_t)r * (size_t)rs->ncols, rs->ncols);
        CHECK_INT(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    free(q.p);
}

static void bt_insert(prs_bt_tab *t, const rowset *rs)
{
    for (int r = 0; r < rs->nrows; r++)
        CHECK_INT(prs_bt_row(t, rs->v + (size_t)r * (size_t)rs->ncols, 0), 0);
}

/* The reference database's sqlite_schema rows, copied (free_schema_rows). */
static int schema_rows(sqlite3 *db, prs_bt_schema *rows, int cap)
{
    sqlite3_stmt *st;
    int n = 0;
    CHECK(sqlite3_prepare_v2(db, "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid", -1, &st,
                             NULL) == SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW && n < cap) {
        char *f[4];
        for (int i = 0; i < 4; i++)
            f[i] = strdup((const char *)sqlite3_column_text(st, i));
        rows[n++] = (prs_bt_schema){f[0], f[1], f[2], f[3]};
    }
    sqlite3_finalize(st);
    return n;
}

static void free_schema_rows(prs_bt_schema *rows, int n)
{
    for (int i = 0; i < n; i++) {
        free((char *)rows[i].type);
        free((char *)rows[i].name);
        free((char *)rows[i].tbl_name);
        free((char *)rows[i].sql);
    }
}

static void test_writer(int page)
{
    char ref[300], got[300];
    snprintf(ref, sizeof ref, "%s/ref-%d.db", tmpdir, page);
    snprintf(got, sizeof got, "%s/got-%d.db", tmpdir, page);
    unlink(ref);
    sqlite3 *db;
    CHECK(sqlite3_open(ref, &db) == SQLITE_OK);
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA page_size=%d", page);
    sqlite3_exec(db, pragma, NULL, NULL, NULL);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    CHECK(sqlite3_exec(db, all_create, NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE empty (a INTEGER, b TEXT)", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE one (a INTEGER, b TEXT)", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE big (k INTEGER, s TEXT, x REAL)", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE ipk (id INTEGER PRIMARY KEY, v TEXT)", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE VIEW v_big AS SELECT k, s FROM big WHERE k % 2 = 0", NULL, NULL, NULL) ==
          SQLITE_OK);
    /* enough schema rows that at 512 bytes sqlite_schema needs several pages */
    for (int i = 0; i < 30; i++) {
        char *c = sqlite3_mprintf("CREATE TABLE \"padding table %d\" (\"a column with a long name\" INTEGER, "
                                  "\"another column with a long name\" TEXT, more REAL)", i);
        CHECK(sqlite3_exec(db, c, NULL, NULL, NULL) == SQLITE_OK);
        sqlite3_free(c);
    }

    rowset all = {0}, one = {0}, big = {0}, ipk = {0};
    all_kinds_rows(&all, page);
    one.ncols = 2;
    prs_val r1[2] = {prs_v_int(42), prs_v_text("only row", -1)};
    rs_add(&one, r1);
    big.ncols = 3;
    for (int k = 0; k < 100000; k++) {
        static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        prs_val r[3] = {prs_v_int((long long)k * 7919 - 300000), prs_v_text(letters + k % 40, k % 13),
                        prs_v_real(k * 0.25)};
        rs_add(&big, r);
    }
    ipk.ncols = 2;
    long long ids[] = {3, 10, 11, 1000000, 1099511627776LL};
    for (size_t k = 0; k < sizeof ids / sizeof *ids; k++) {
        prs_val r[2] = {prs_v_int(ids[k]), prs_v_text("id given", -1)};
        rs_add(&ipk, r);
    }
    prs_val rn[2] = {prs_v_null(), prs_v_text("id chosen: max + 1", -1)};
    rs_add(&ipk, rn);
    prs_val rr[2] = {prs_v_real(2e12), prs_v_text("integral real id", -1)};
    rs_add(&ipk, rr);

    sql_insert(db, "all_kinds", &all);
    sql_insert(db, "one", &one);
    sql_insert(db, "big", &big);
    sql_insert(db, "ipk", &ipk);
    CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);

    /* the writer, tables interleaved as reports interleave */
    prs_bt *w = prs_bt_open(got, page);
    CHECK(w != NULL);
    if (!w)
        return;
    prs_bt_tab *t_all = prs_bt_table(w, "all_kinds", COLS, "DEBAC", -1);
    prs_bt_table(w, "empty", 2, "DB", -1);
    prs_bt_tab *t_one = prs_bt_table(w, "one", 2, "DB", -1);
    prs_bt_tab *t_big = prs_bt_table(w, "big", 3, "DBE", -1);
    prs_bt_tab *t_ipk = prs_bt_table(w, "ipk", 2, "DB", 0);
    for (int r = 0; r < big.nrows; r++) {
        CHECK_INT(prs_bt_row(t_big, big.v + (size_t)r * 3, 0), 0);
        if (r == 500)
            bt_insert(t_all, &all);
        if (r == 700)
            bt_insert(t_ipk, &ipk);
    }
    bt_insert(t_one, &one);
    CHECK_INT(prs_bt_table_end(t_big), 0);
    /* conversions are SQLite's: the writer says so and writes nothing */
    prs_val needs_text[COLS] = {prs_v_null(), prs_v_null(), prs_v_int(5), prs_v_null(), prs_v_null()};
    CHECK_INT(prs_bt_row(t_all, needs_text, 0), 1);
    prs_val needs_num[COLS] = {prs_v_text("12", 2), prs_v_null(), prs_v_null(), prs_v_null(), prs_v_null()};
    CHECK_INT(prs_bt_row(t_all, needs_num, 0), 1);

    /* schema rows: the reference's own */
    prs_bt_schema rows[64];
    int n = schema_rows(db, rows, 64);
    sqlite3_close(db);
    CHECK_INT(prs_bt_finish(w, rows, n), 0);
    CHECK_STR(prs_bt_error(w), "");
    prs_bt_free(w);
    free_schema_rows(rows, n);

    struct stat sb;
    CHECK(stat(got, &sb) == 0 && sb.st_size % page == 0);
    compare_dbs(ref, got);

    /* SQLite adds indexes to both: the file stays consistent */
    const char *idx = "CREATE INDEX big_s ON big(s, k); CREATE INDEX all_t ON all_kinds(t)";
    sqlite3 *a, *b;
    CHECK(sqlite3_open(ref, &a) == SQLITE_OK && sqlite3_exec(a, idx, NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_open(got, &b) == SQLITE_OK && sqlite3_exec(b, idx, NULL, NULL, NULL) == SQLITE_OK);
    char *va = query_text(a, "SELECT k, s FROM v_big WHERE s = 'abc' ORDER BY k");
    char *vb = query_text(b, "SELECT k, s FROM v_big WHERE s = 'abc' ORDER BY k");
    CHECK_STR(vb, va);
    /* the view's rows through the index: big's rows with s = 'abc' (k % 40
     * == 0, k % 13 == 3) whose stored k is even, each once */
    int want = 0, got_rows = 0;
    for (int k = 0; k < 100000; k++)
        want += k % 40 == 0 && k % 13 == 3 && ((long long)k * 7919 - 300000) % 2 == 0;
    for (const char *l = vb; (l = strstr(l, "|abc|\n")) != NULL; l++)
        got_rows++;
    CHECK(want > 100);
    CHECK_INT(got_rows, want);
    free(va);
    free(vb);
    sqlite3_close(a);
    sqlite3_close(b);
    compare_dbs(ref, got);
    fprintf(stderr, "page size %d: %lld bytes, %d rows\n", page, (long long)sb.st_size,
            all.nrows + big.nrows + ipk.nrows + 1);
    rs_free(&all);
    rs_free(&one);
    rs_free(&big);
    rs_free(&ipk);
}

static void test_rowid_order(void)
{
    char got[300];
    snprintf(got, sizeof got, "%s/order.db", tmpdir);
    prs_bt *w = prs_bt_open(got, 4096);
    prs_bt_tab *t = prs_bt_table(w, "t", 2, "DB", 0);
    prs_val a[2] = {prs_v_int(5), prs_v_text("a", 1)}, b[2] = {prs_v_int(5), prs_v_text("b", 1)};
    CHECK_INT(prs_bt_row(t, a, 0), 0);
    CHECK_INT(prs_bt_row(t, b, 0), -1);
    CHECK(strstr(prs_bt_error(w), "rowid 5 after 5") != NULL);
    prs_bt_abort(w, 1);
    CHECK(access(got, F_OK) != 0);
    prs_bt_free(w);
    CHECK(prs_bt_open(got, 1000) == NULL && errno == EINVAL);
    CHECK_INT(prs_affinity("INTEGER"), PRS_AFF_INTEGER);
    CHECK_INT(prs_affinity("BIGINT PRIMARY KEY"), PRS_AFF_INTEGER);
    CHECK_INT(prs_affinity("varchar(10)"), PRS_AFF_TEXT);
    CHECK_INT(prs_affinity("REAL"), PRS_AFF_REAL);
    CHECK_INT(prs_affinity("DOUBLE PRECISION"), PRS_AFF_REAL);
    CHECK_INT(prs_affinity("FLOATING POINT"), PRS_AFF_INTEGER); /* "POINT" has INT: SQLite's rule */
    CHECK_INT(prs_affinity("BLOB"), PRS_AFF_BLOB);
    CHECK_INT(prs_affinity(""), PRS_AFF_BLOB);
    CHECK_INT(prs_affinity("NUMERIC"), PRS_AFF_NUMERIC);
    CHECK_INT(prs_affinity("DATETIME"), PRS_AFF_NUMERIC);
}

/* sqlite_schema beyond page 1 in the odd ways: a first row that leaves
 * page 1 too little room for the next, and a lone row bigger than page 1's
 * room (SQLite's own answer: a root with no cell, one child). */
static void test_schema_spill(int lone)
{
    char ref[300], got[300];
    snprintf(ref, sizeof ref, "%s/sref-%d.db", tmpdir, lone);
    snprintf(got, sizeof got, "%s/sgot-%d.db", tmpdir, lone);
    unlink(ref);
    sqlite3 *db;
    CHECK(sqlite3_open(ref, &db) == SQLITE_OK);
    sqlite3_exec(db, "PRAGMA page_size=512", NULL, NULL, NULL);
    sbuf c = {0};
    sb_add(&c, "CREATE TABLE wide (", 19);
    /* 25 columns: a record of ~450 bytes, all local (<= 477), leaving page 1 ~60 */
    for (int i = 0; i < 25; i++) {
        char col[32];
        int n = snprintf(col, sizeof col, "%scolumn_%02d TEXT", i ? ", " : "", i);
        sb_add(&c, col, (size_t)n);
    }
    sb_add(&c, ")", 1);
    CHECK(sqlite3_exec(db, c.p, NULL, NULL, NULL) == SQLITE_OK);
    if (!lone)
        CHECK(sqlite3_exec(db, "CREATE TABLE small (a INTEGER, b TEXT)", NULL, NULL, NULL) == SQLITE_OK);
    free(c.p);
    prs_bt_schema rows[4];
    int n = schema_rows(db, rows, 4);
    sqlite3_close(db);
    prs_bt *w = prs_bt_open(got, 512);
    CHECK_INT(prs_bt_finish(w, rows, n), 0);
    prs_bt_free(w);
    free_schema_rows(rows, n);
    compare_dbs(ref, got);
    CHECK(sqlite3_open(got, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "INSERT INTO wide (column_00) VALUES ('x'); CREATE TABLE later (x)", NULL, NULL, NULL) ==
          SQLITE_OK);
    char *ic = query_text(db, "PRAGMA integrity_check");
    CHECK_STR(ic, "ok|\n");
    free(ic);
    sqlite3_close(db);
}

/* --------------------------------------------- the row sink (table.c) */

static const prs_col c_conv[] = {{"i", "INTEGER"}, {"r", "REAL"}, {"t", "TEXT"}, {"n", "NUMERIC"},
                                 {"b", ""}};
static const prs_col c_ids[] = {{"id", "INTEGER PRIMARY KEY"}, {"args", "TEXT"}};
static const prs_col c_plain[] = {{"timestamp", "INTEGER"}, {"name", "TEXT"}, {"value", "REAL"}};

static void conv_rows(rowset *rs)
{
    rs->ncols = 5;
    const char *texts[] = {"12", " 12 ", "abc", "1e3", "2.5", "-0", "0x10", "9223372036854775808", "", "1.0"};
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        prs_val r[5] = {prs_v_text(texts[k], -1), prs_v_text(texts[k], -1), prs_v_text(texts[k], -1),
                        prs_v_text(texts[k], -1), prs_v_text(texts[k], -1)};
        rs_add(rs, r);
    }
    for (size_t k = 0; k < sizeof reals / sizeof *reals; k++) {
        prs_val r[5] = {prs_v_real(reals[k]), prs_v_real(reals[k]), prs_v_real(reals[k]), prs_v_real(reals[k]),
                        prs_v_real(reals[k])};
        rs_add(rs, r);
    }
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        prs_val r[5] = {prs_v_int(ints[k]), prs_v_int(ints[k]), prs_v_int(ints[k]), prs_v_int(ints[k]),
                        prs_v_int(ints[k])};
        rs_add(rs, r);
    }
}

static void test_sink(void)
{
    char dir[300], ref[300], got[400];
    snprintf(dir, sizeof dir, "%s/sink", tmpdir);
    snprintf(ref, sizeof ref, "%s/sink-ref.db", tmpdir);
    snprintf(got, sizeof got, "%s/profiler.db", dir);
    prs_out o;
    CHECK_INT(prs_out_open(&o, dir, 0, 1), 0);
    prs_table t1, t2, t3;
    prs_table_init(&o, &t1, NULL, "conv", c_conv, 5, NULL);
    prs_table_init(&o, &t2, NULL, "ids", c_ids, 2, NULL);
    CHECK(sqlite3_exec(o.db_conn, "CREATE VIEW both AS SELECT c.i, d.args FROM conv c JOIN ids d ON d.id = c.i",
                       NULL, NULL, NULL) == SQLITE_OK);
    prs_table_init(&o, &t3, NULL, "plain", c_plain, 3, NULL);
    CHECK(t1.ins && t2.ins && t3.ins && t1.bt && t2.bt && t3.bt);
    rowset conv = {0}, ids = {0}, plain = {0};
    conv_rows(&conv);
    ids.ncols = 2;
    for (int k = 1; k <= 3000; k++) {
        const char *s = rs_text(&ids, make_text((size_t)(k % 7 == 0 ? 70000 : 600 + k % 100), (unsigned)k));
        prs_val r[2] = {prs_v_int(k * 3), prs_v_text(s, -1)};
        rs_add(&ids, r);
    }
    plain.ncols = 3;
    for (int k = 0; k < 20000; k++) {
        prs_val r[3] = {prs_v_int(1700000000000000000LL + k * 1000LL), prs_v_text(k % 3 ? "tick" : "tock", -1),
                        k % 5 ? prs_v_real(k / 8.0) : prs_v_null()};
        rs_add(&plain, r);
    }
    for (int r = 0; r < plain.nrows; r++) {
        prs_table_row(&o, &t3, plain.v + (size_t)r * 3);
        if (r < ids.nrows)
            prs_table_row(&o, &t2, ids.v + (size_t)r * 2);
        if (r < conv.nrows)
            prs_table_row(&o, &t1, conv.v + (size_t)r * 5);
    }
    CHECK(sqlite3_exec(o.db_conn, "CREATE INDEX IF NOT EXISTS plain_name ON plain(name, timestamp)", NULL, NULL,
                       NULL) == SQLITE_OK);
    prs_table_close(&o, &t1);
    prs_table_close(&o, &t2);
    prs_table_close(&o, &t3);
    CHECK_INT(prs_out_close(&o), 0);
    CHECK_INT(o.failed, 0);
    char partial[400];
    snprintf(partial, sizeof partial, "%s/profiler.db.partial", dir);
    CHECK(access(partial, F_OK) != 0);

    /* the same through SQLite */
    unlink(ref);
    sqlite3 *db;
    CHECK(sqlite3_open(ref, &db) == SQLITE_OK);
    sqlite3_exec(db, "PRAGMA page_size=65536; BEGIN", NULL, NULL, NULL);
    CHECK(sqlite3_exec(db, "CREATE TABLE \"conv\" (\"i\" INTEGER, \"r\" REAL, \"t\" TEXT, \"n\" NUMERIC, \"b\" )",
                       NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE \"ids\" (\"id\" INTEGER PRIMARY KEY, \"args\" TEXT)", NULL, NULL, NULL) ==
          SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE VIEW both AS SELECT c.i, d.args FROM conv c JOIN ids d ON d.id = c.i", NULL,
                       NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE \"plain\" (\"timestamp\" INTEGER, \"name\" TEXT, \"value\" REAL)", NULL,
                       NULL, NULL) == SQLITE_OK);
    sql_insert(db, "conv", &conv);
    sql_insert(db, "ids", &ids);
    sql_insert(db, "plain", &plain);
    CHECK(sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS plain_name ON plain(name, timestamp); COMMIT", NULL, NULL,
                       NULL) == SQLITE_OK);
    sqlite3_close(db);
    compare_dbs(ref, got);
    CHECK(sqlite3_open(got, &db) == SQLITE_OK);
    char *v = query_text(db, "SELECT count(*), sum(length(args)) FROM both");
    CHECK(strncmp(v, "ERROR", 5) != 0 && strcmp(v, "0|NULL|\n") != 0);
    free(v);
    v = query_text(db, "SELECT typeof(i), typeof(r), typeof(t), typeof(n), typeof(b) FROM conv WHERE rowid = 1");
    CHECK_STR(v, "integer|real|text|integer|text|\n"); /* "12" in each column */
    free(v);
    sqlite3_close(db);
    rs_free(&conv);
    rs_free(&ids);
    rs_free(&plain);
}

/* A file size limit while profiler.db is written (in a child: the limit
 * and the ignored SIGXFSZ stay there): one ERROR naming profiler.db and the
 * reason, no profiler.db, no partial file, the CSV written. */
/* Out of memory (the address space limited in a child): a table whose
 * buffers cannot be allocated fails the file with "out of memory", no
 * crash, and nothing more is written. Not under sanitizers (their allocators reserve the address space
 * up front and abort rather than return NULL). */
static void test_out_of_memory(void)
{
    const char *san = getenv("SERVPROF_SANITIZE");
    if (san && *san)
        return;
    char path[300];
    snprintf(path, sizeof path, "%s/oom.db", tmpdir);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        prs_bt *w = prs_bt_open(path, 4096);
        if (!w)
            _exit(10);
        prs_bt_tab *t = prs_bt_table(w, "small", 1, "D", -1);
        int col = 0;
        if (!t || prs_bt_index(t, "small_ix", 1, &col) != 0)
            _exit(11);
        /* a 256 MiB allocation per column array of a 2^25-column table */
        int wide = 1 << 25;
        char *aff = malloc((size_t)wide);
        if (!aff)
            _exit(12);
        memset(aff, PRS_AFF_INTEGER, (size_t)wide);
        struct rlimit rl = {1u << 30, 1u << 30};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(13);
        if (prs_bt_table(w, "wide", wide, aff, -1) != NULL)
            _exit(14);
        if (!strstr(prs_bt_error(w), "table wide: out of memory"))
            _exit(15);
        prs_val v = prs_v_int(1);
        if (prs_bt_row(t, &v, 0) != -1 || prs_bt_finish(w, NULL, 0) != -1)
            _exit(16); /* the file has failed: nothing more is written */
        prs_bt_free(w);
        free(aff);
        _exit(0);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st));
    CHECK_INT(WEXITSTATUS(st), 0);
}

static void test_write_failure(void)
{
    char dir[300], log[300];
    snprintf(dir, sizeof dir, "%s/full", tmpdir);
    snprintf(log, sizeof log, "%s/full.log", tmpdir);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "w", stderr);
        (void)f;
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {3u << 20, 3u << 20};
        setrlimit(RLIMIT_FSIZE, &rl);
        prs_out o;
        if (prs_out_open(&o, dir, 1, 1) != 0)
            _exit(10);
        prs_table t, c;
        prs_table_init(&o, &t, NULL, "plain", c_plain, 3, NULL);
        prs_table_init(&o, &c, "plain.csv", NULL, c_plain, 3, NULL);
        for (int k = 0; k < 200000; k++) { /* ~10 MB of pages, 0.5 MB of CSV */
            prs_val r[3] = {prs_v_int(k), prs_v_text("a name of some length, for the pages", -1),
                            prs_v_real(k * 0.5)};
            prs_table_row(&o, &t, r);
            if (k < 10000)
                prs_table_row(&o, &c, r);
        }
        prs_table_close(&o, &t);
        prs_table_close(&o, &c);
        int rc = prs_out_close(&o);
        fflush(stderr);
        _exit(rc == -1 && o.failed ? 0 : 11);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char path[400];
    snprintf(path, sizeof path, "%s/profiler.db", dir);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/profiler.db.partial", dir);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/plain.csv", dir);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size > 400000);
    FILE *f = fopen(log, "r");
    char buf[4096] = "";
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
    CHECK(strstr(buf, "profiler.db") && strstr(buf, "File too large") && strstr(buf, "not written"));
    int errors = 0;
    for (const char *p = buf; (p = strstr(p, ": error: ")); p++)
        errors++;
    CHECK_INT(errors, 1);
    if (errors != 1 || !strstr(buf, "File too large"))
        fprintf(stderr, "messages were:\n%s", buf);
}

int main(void)
{
    /* the lock-byte page where small files reach it, in SQLite and here */
    sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE, PENDING);
    prs_bt_pending_byte(PENDING);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_btwrite.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_rowid_order();
    test_schema_spill(0);
    test_schema_spill(1);
    int pages[] = {512, 1024, 4096, 65536};
    for (int i = 0; i < 4; i++)
        test_writer(pages[i]);
    test_sink();
    test_write_failure();
    test_out_of_memory();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    CHECK_DONE();
}
