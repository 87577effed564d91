/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_btbytes.c — the page writer (btwrite.c, btindex.c) stores every
 * record byte for byte as SQLite stores it. test_btwrite.c compares what
 * the two files read back (quote(), typeof()); that cannot see a value
 * stored under another serial type that reads back the same (an integral
 * REAL of 2^47 or more kept as an 8-byte integer instead of a double), so
 * here the records themselves are compared.
 *
 * Differential, on random schemas: each round draws a table (1-8 columns
 * of declared types covering every affinity, sometimes an INTEGER PRIMARY
 * KEY, sometimes an index) and rows of random values (NULL; integers of
 * every width and sign; reals at the 2^47 boundary, beyond 2^53 and 2^63,
 * +-0, +-inf, NaN; texts empty, short, around the page's local-payload
 * limits and many pages long, in typed and untyped columns). SQLite
 * inserts them into one file, btwrite writes the others; then both files'
 * b-trees are walked here, with the format's own rules
 * (sqlite.org/fileformat2.html), and every cell's rowid and full payload
 * (overflow chains followed) must be equal, table and index entries in
 * order. Every page size from 512 to 65536; the lock-byte page moved to
 * 64 KiB so that files cross it. Fixed seeds: a failure names its round
 * and reproduces.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bt_test.h"
#include "btwrite.h"
#include "check.h"

#define PENDING 0x10000u
#define MAXCOLS 8

static char tmpdir[256];

/* ---------------------------------------------------------- randomness */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    /* splitmix64: reproducible from the seed on every platform */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static unsigned below(unsigned n) { return (unsigned)(rnd() % n); }

/* Tame rounds draw values btindex can order exactly (no column mixing
 * numbers and texts, integers within 2^40, non-integral reals, short
 * texts), so that it writes the indexes and their records are compared
 * too; the other rounds go to every edge (and SQLite builds the indexes). */
static int tame;

static const char *decls[] = {"INTEGER", "INT", "BIGINT", "REAL", "DOUBLE PRECISION", "FLOAT", "TEXT",
                              "VARCHAR(20)", "CLOB", "BLOB", "", "NUMERIC", "DECIMAL(10,5)", "BOOLEAN",
                              "DATETIME", "FLOATING POINT"};

static const int64_t edge_ints[] = {0, 1, -1, 2, 127, 128, -128, -129, 32767, 32768, -32768, -32769,
                                    8388607, 8388608, -8388608, -8388609, 2147483647LL, 2147483648LL,
                                    -2147483648LL, -2147483649LL, 140737488355327LL, 140737488355328LL,
                                    -140737488355327LL, -140737488355328LL, -140737488355329LL,
                                    9007199254740993LL, INT64_MAX, INT64_MIN};

static int64_t rand_int(void)
{
    if (tame)
        return (int64_t)(rnd() >> (63 - below(41))) * (below(2) ? 1 : -1);
    if (below(3) == 0)
        return edge_ints[below(sizeof edge_ints / sizeof *edge_ints)];
    int bits = (int)below(64);
    int64_t v = (int64_t)(rnd() >> (63 - bits));
    return below(2) ? v : -v;
}

static double rand_real(void)
{
    const double p47 = 140737488355328.0; /* 2^47 */
    if (tame)
        return ((double)below(1000000) + 0.25 * (1 + below(3))) * (below(2) ? 1 : -1);
    switch (below(8)) {
    case 0: {
        static const double edge[] = {0.0, -0.0, 1.0, 0.5, -2.25, 1e15, 1e300, -1e-300, 9007199254740993.0,
                                      9223372036854775807.0, -9223372036854775808.0, 18446744073709551616.0};
        return edge[below(sizeof edge / sizeof *edge)];
    }
    case 1: return (below(2) ? 1 : -1) * (p47 + (double)((int)below(5) - 2)); /* 2^47-2 .. 2^47+2 */
    case 2: return (below(2) ? 1 : -1) * (p47 + 0.5);
    case 3: return below(2) ? INFINITY : -INFINITY;
    case 4: return NAN;
    case 5: return (double)rand_int(); /* integral, any size */
    default: {
        double d;
        uint64_t bits = rnd();
        memcpy(&d, &bits, 8);
        return isnan(d) ? 3.25 : d; /* any finite or infinite double */
    }
    }
}

static size_t rand_len(unsigned page)
{
    if (tame)
        return below(60);
    switch (below(10)) {
    case 0: return 0;
    case 1: return page - 35 + below(3) - 1;   /* the table leaf's local limit */
    case 2: return (page - 12) * 64 / 255 - 23 + below(3) - 1; /* the index's */
    case 3: return page * (1 + below(4)) + below(100);
    case 4: return below(50) == 0 ? 100000 + below(1000) : below(300);
    default: return below(40);
    }
}

/* ------------------------------------------------- reading the b-trees */

static unsigned get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static int get_varint(const uint8_t *p, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) {
        x = (x << 7) | (p[i] & 0x7f);
        if (!(p[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    *v = (x << 8) | p[8];
    return 9;
}

typedef struct cellrec { int64_t rowid; size_t n; uint8_t *p; } cellrec;
typedef struct recs { cellrec *c; size_t n, cap; int bad; } recs;
typedef struct dbfile { uint8_t *f; size_t size; unsigned psz; } dbfile;

static const uint8_t *page_at(const dbfile *d, uint32_t pg)
{
    if (pg < 1 || (size_t)pg * d->psz > d->size)
        return NULL;
    return d->f + (size_t)(pg - 1) * d->psz;
}

/* Appends the cell's rowid and whole payload (the overflow chain read). */
static void take_cell(const dbfile *d, int type, const uint8_t *c, recs *out)
{
    uint64_t P, rowid = 0;
    c += get_varint(c, &P);
    if (type == 0x0d)
        c += get_varint(c, &rowid);
    uint64_t U = d->psz, X = type == 0x0d ? U - 35 : (U - 12) * 64 / 255 - 23, local = P;
    if (P > X) {
        uint64_t M = (U - 12) * 32 / 255 - 23, K = M + (P - M) % (U - 4);
        local = K <= X ? K : M;
    }
    if (P > 1u << 24 || local > U) {
        out->bad = 1;
        return;
    }
    uint8_t *buf = malloc((size_t)P + 1);
    memcpy(buf, c, (size_t)local);
    uint32_t ov = local < P ? get32(c + local) : 0;
    for (uint64_t at = local; at < P;) {
        const uint8_t *op = page_at(d, ov);
        if (!op) {
            out->bad = 1;
            free(buf);
            return;
        }
        size_t n = P - at < U - 4 ? (size_t)(P - at) : (size_t)(U - 4);
        memcpy(buf + at, op + 4, n);
        at += n;
        ov = get32(op);
    }
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 256;
        out->c = realloc(out->c, out->cap * sizeof *out->c);
    }
    out->c[out->n++] = (cellrec){(int64_t)rowid, (size_t)P, buf};
}

/* Every cell of the b-tree at pg, in key order. */
static void walk(const dbfile *d, uint32_t pg, int depth, recs *out)
{
    const uint8_t *p = page_at(d, pg);
    if (!p || depth > 20) {
        out->bad = 1;
        return;
    }
    const uint8_t *h = p + (pg == 1 ? 100 : 0);
    int type = h[0];
    if (type != 2 && type != 5 && type != 10 && type != 13) {
        out->bad = 1;
        return;
    }
    int interior = type == 2 || type == 5;
    const uint8_t *ptrs = h + (interior ? 12 : 8);
    unsigned ncell = get16(h + 3);
    for (unsigned i = 0; i < ncell && !out->bad; i++) {
        unsigned off = get16(ptrs + 2 * i);
        if (off < 8 || off >= d->psz) {
            out->bad = 1;
            return;
        }
        const uint8_t *c = p + off;
        if (interior)
            walk(d, get32(c), depth + 1, out);
        if (type == 2)
            take_cell(d, 10, c + 4, out);
        else if (!interior)
            take_cell(d, type, c, out);
    }
    if (interior && !out->bad)
        walk(d, get32(h + 8), depth + 1, out);
}

static void recs_free(recs *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->c[i].p);
    free(r->c);
}

static int load(const char *path, dbfile *d)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    struct stat sb;
    fstat(fileno(fp), &sb);
    d->size = (size_t)sb.st_size;
    d->f = malloc(d->size ? d->size : 1);
    size_t got = fread(d->f, 1, d->size, fp);
    fclose(fp);
    if (got != d->size || d->size < 100)
        return -1;
    d->psz = get16(d->f + 16) == 1 ? 65536 : get16(d->f + 16);
    return 0;
}

static uint32_t root_of(const char *path, const char *name)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    uint32_t root = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_schema WHERE name = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            root = (uint32_t)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return root;
}

static void print_hex(const char *what, const cellrec *c)
{
    fprintf(stderr, "  %s rowid %lld, %zu bytes:", what, (long long)c->rowid, c->n);
    for (size_t i = 0; i < c->n && i < 48; i++)
        fprintf(stderr, " %02x", c->p[i]);
    fprintf(stderr, "%s\n", c->n > 48 ? " ..." : "");
}

/* The b-tree `name` holds the same cells, in order, in both files. */
static void compare_tree(const char *round, const char *name, const char *ref, const char *got)
{
    dbfile a = {0}, b = {0};
    CHECK(load(ref, &a) == 0 && load(got, &b) == 0);
    recs ra = {0}, rb = {0};
    uint32_t root_a = root_of(ref, name), root_b = root_of(got, name);
    CHECK(root_a != 0 && root_b != 0);
    if (root_a && root_b && a.f && b.f) {
        walk(&a, root_a, 0, &ra);
        walk(&b, root_b, 0, &rb);
    }
    CHECK(!ra.bad && !rb.bad);
    CHECK_INT(rb.n, ra.n);
    for (size_t i = 0; i < ra.n && i < rb.n; i++) {
        const cellrec *x = &ra.c[i], *y = &rb.c[i];
        if (x->rowid != y->rowid || x->n != y->n || memcmp(x->p, y->p, x->n) != 0) {
            fprintf(stderr, "%s: %s: cell %zu differs\n", round, name, i);
            print_hex("sqlite ", x);
            print_hex("btwrite", y);
            CHECK(0);
            break;
        }
    }
    recs_free(&ra);
    recs_free(&rb);
    free(a.f);
    free(b.f);
}

/* ------------------------------------------------------------- a round */

typedef struct schema {
    int ncols, ipk, nix, ix[2];
    const char *decl[MAXCOLS];
    char aff[MAXCOLS];
} schema;

static void rand_schema(schema *s)
{
    s->ncols = 1 + (int)below(MAXCOLS);
    s->ipk = below(3) == 0 ? (int)below((unsigned)s->ncols) : -1;
    for (int i = 0; i < s->ncols; i++) {
        s->decl[i] = i == s->ipk ? "INTEGER PRIMARY KEY" : decls[below(sizeof decls / sizeof *decls)];
        s->aff[i] = prs_affinity(s->decl[i]);
    }
    s->nix = 0;
    for (int i = 0; i < s->ncols && s->nix < 2; i++)
        if (i != s->ipk && below(3) == 0)
            s->ix[s->nix++] = i;
}

/* A value for column i: most of the time one the writer takes without
 * SQLite's conversions (texts into TEXT and untyped columns, numbers into
 * the others); sometimes one it must hand back (prs_bt_row returns 1). */
static prs_val rand_val(const schema *s, int i, unsigned page, char **text)
{
    char a = s->aff[i];
    unsigned k = below(10);
    int want_text = a == PRS_AFF_TEXT ? k < 8 : a == PRS_AFF_BLOB ? tame || k < 4 : k == 9 && below(4) == 0;
    if (k == 0)
        return prs_v_null();
    if (want_text) {
        *text = make_text(rand_len(page), (unsigned)rnd());
        return prs_v_text(*text, -1);
    }
    if (a == PRS_AFF_TEXT && below(8) != 0)
        return prs_v_null();
    prs_val v;
    switch (below(3)) {
    case 0: return prs_v_int(rand_int());
    case 1: v = prs_v_real(0); v.d = rand_real(); return v; /* NaN kept: the writer must store NULL */
    default: v = prs_v_ms(0); v.d = rand_real(); return v;
    }
}

static int ix_compared; /* indexes written by btindex and compared */

static void run_round(unsigned page, int round, uint64_t seed)
{
    char ref[300], got[300], name[64];
    snprintf(name, sizeof name, "page %u round %d seed %llu", page, round, (unsigned long long)seed);
    snprintf(ref, sizeof ref, "%s/ref.db", tmpdir);
    snprintf(got, sizeof got, "%s/got.db", tmpdir);
    unlink(ref);
    rng_state = seed;
    tame = round % 2;
    schema s;
    rand_schema(&s);

    char sql[1024];
    int at = snprintf(sql, sizeof sql, "CREATE TABLE t (");
    for (int i = 0; i < s.ncols; i++)
        at += snprintf(sql + at, sizeof sql - (size_t)at, "%sc%d %s", i ? ", " : "", i, s.decl[i]);
    snprintf(sql + at, sizeof sql - (size_t)at, ")");
    sqlite3 *db;
    CHECK(sqlite3_open(ref, &db) == SQLITE_OK);
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA page_size=%u", page);
    CHECK(sqlite3_exec(db, pragma, NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    for (int k = 0; k < s.nix; k++) {
        char ix[128];
        snprintf(ix, sizeof ix, "CREATE INDEX ix%d ON t(c%d%s)", k, s.ix[k], k && s.ipk != 0 ? ", c0" : "");
        CHECK(sqlite3_exec(db, ix, NULL, NULL, NULL) == SQLITE_OK);
    }
    char ins[256];
    at = snprintf(ins, sizeof ins, "INSERT INTO t VALUES (?");
    for (int i = 1; i < s.ncols; i++)
        at += snprintf(ins + at, sizeof ins - (size_t)at, ", ?");
    snprintf(ins + at, sizeof ins - (size_t)at, ")");
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, ins, -1, &st, NULL) == SQLITE_OK);

    prs_bt *w = prs_bt_open(got, (int)page);
    CHECK(w != NULL);
    if (!w) {
        sqlite3_close(db);
        return;
    }
    prs_bt_tab *t = prs_bt_table(w, "t", s.ncols, s.aff, s.ipk);
    for (int k = 0; k < s.nix; k++) {
        char ixname[16];
        snprintf(ixname, sizeof ixname, "ix%d", k);
        int cols[2] = {s.ix[k], 0};
        int nkey = k && s.ipk != 0 ? 2 : 1; /* the second index also on c0 (unless c0 is the rowid) */
        CHECK_INT(prs_bt_index(t, ixname, nkey, cols), 0);
    }
    int nrows = (int)below(page <= 1024 ? 400 : 1500), written = 0, handed_back = 0;
    int64_t next_id = 1 + (int64_t)below(1000);
    for (int r = 0; r < nrows; r++) {
        prs_val v[MAXCOLS];
        char *texts[MAXCOLS] = {0};
        for (int i = 0; i < s.ncols; i++) {
            if (i == s.ipk) {
                next_id += 1 + (int64_t)below(1u << below(20));
                v[i] = below(8) == 0 ? prs_v_null() : below(4) == 0 ? prs_v_real((double)next_id) : prs_v_int(next_id);
            } else {
                v[i] = rand_val(&s, i, page, &texts[i]);
            }
        }
        int rc = prs_bt_row(t, v, 0);
        CHECK(rc == 0 || rc == 1);
        if (rc == 0) {
            bind_vals(st, v, s.ncols);
            CHECK_INT(sqlite3_step(st), SQLITE_DONE);
            sqlite3_reset(st);
            written++;
        } else {
            handed_back++;
        }
        for (int i = 0; i < s.ncols; i++)
            free(texts[i]);
    }
    sqlite3_finalize(st);
    CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);

    /* the reference's schema rows, less the indexes btindex refused */
    prs_bt_schema rows[4];
    int n = 0, written_ix[2] = {0, 0};
    for (int k = 0; k < s.nix; k++) {
        char ixname[16];
        uint32_t root;
        snprintf(ixname, sizeof ixname, "ix%d", k);
        written_ix[k] = prs_bt_index_status(w, ixname, &root) == NULL;
    }
    CHECK(sqlite3_prepare_v2(db, "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid", -1, &st,
                             NULL) == SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW && n < 4) {
        const char *nm = (const char *)sqlite3_column_text(st, 1);
        if (strncmp(nm, "ix", 2) == 0 && !written_ix[atoi(nm + 2)])
            continue;
        char *f[4];
        for (int i = 0; i < 4; i++)
            f[i] = strdup((const char *)sqlite3_column_text(st, i));
        rows[n++] = (prs_bt_schema){f[0], f[1], f[2], f[3]};
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    CHECK_INT(prs_bt_finish(w, rows, n), 0);
    CHECK_STR(prs_bt_error(w), "");
    prs_bt_free(w);
    for (int i = 0; i < n; i++) {
        free((char *)rows[i].type);
        free((char *)rows[i].name);
        free((char *)rows[i].tbl_name);
        free((char *)rows[i].sql);
    }

    sqlite3 *g;
    CHECK(sqlite3_open_v2(got, &g, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    sqlite3_stmt *ic;
    CHECK(sqlite3_prepare_v2(g, "PRAGMA integrity_check", -1, &ic, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(ic) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(ic, 0), "ok") == 0);
    sqlite3_finalize(ic);
    sqlite3_close(g);

    compare_tree(name, "t", ref, got);
    for (int k = 0; k < s.nix; k++)
        if (written_ix[k]) {
            char ixname[16];
            snprintf(ixname, sizeof ixname, "ix%d", k);
            compare_tree(name, ixname, ref, got);
        }
    fprintf(stderr, "%s: %d columns, %d rows written, %d handed back, %d of %d indexes by btindex\n", name,
            s.ncols, written, handed_back, written_ix[0] + written_ix[1], s.nix);
    ix_compared += written_ix[0] + written_ix[1];
}

int main(void)
{
    sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE, PENDING);
    prs_bt_pending_byte(PENDING);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_btbytes.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    for (unsigned page = 512; page <= 65536; page *= 2)
        for (int round = 0; round < 6; round++)
            run_round(page, round, (uint64_t)page * 1000 + (uint64_t)round);
    /* the seeds are fixed: tame rounds do give btindex indexes to write */
    CHECK(ix_compared >= 8);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    CHECK_DONE();
}
