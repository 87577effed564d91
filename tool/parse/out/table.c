/* SPDX-License-Identifier: Apache-2.0 */
/*
 * table.c — the row sink every report writes through: one call per row
 * writes the CSV line (when csv is on) and the profiler.db row (when db is
 * on), so the two can never disagree. A report may give profiler.db columns
 * the CSV has not (the reference's, after the CSV's: ncsv), and dbcompat.c
 * may append virtual generated columns to a table's CREATE (computed when
 * read; the rows here never carry them).
 *
 * CSV files are opened on the first row, so a report whose data never came
 * leaves no empty file behind; prs_table_close() then prints the one line
 * saying which report was skipped and what was missing. profiler.db tables
 * are created up front (empty tables keep dashboards' queries valid).
 *
 * profiler.db is written page by page by btwrite.c (SQLite's INSERT was
 * most of the parse's profiler.db time: docs/benchmarks.md), as
 * profiler.db.partial, renamed when complete. SQLite still owns what needs
 * SQL: db_conn is an in-memory database where every CREATE TABLE / VIEW /
 * INDEX is run as before (so the schema texts are SQLite's own, and a bad
 * statement fails as before); at the close its sqlite_schema rows become
 * the file's (tables and indexes get btwrite's root pages: the indexes
 * dbout.c declares are laid out by btindex.c as their tables end); SQLite
 * opens the file only to create an index btindex.c could not. A value that needs SQLite's affinity rules (a
 * text into a numeric column, a number into a TEXT column: no report does
 * it today) is inserted into the in-memory table and read back, so it is
 * stored exactly as SQLite would. A write error (full disk, file size
 * limit) is one ERROR; the partial file is removed at once and the other
 * outputs go on. An OUT/profiler.db that is not a regular file (a FIFO,
 * /dev/null) is left alone and profiler.db not written (one ERROR).
 */
#include <errno.h>
#include <stdio_ext.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btwrite.h"
#include "dbcompat.h"
#include "dbout.h"
#include "dbsql.h"
#include "dwrite.h"
#include "fmt.h"
#include "fsutil.h"
#include "plog.h"
#include "table.h"
#include "wqueue.h"
#include "xalloc.h"

/* profiler.db while it is built (renamed when complete), beside the file
 * it replaces. */
#define DB_PARTIAL ".partial"

/* profiler.db's page size (SQLite's largest: fewest pages and levels). */
#define DB_PAGE 65536

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return -1;
    /* EEXIST is not enough: a dangling symlink or a file has that name. */
    struct stat st;
    if (stat(tmp, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Where profiler.db goes: OUT/profiler.db, or the file it links to (the
 * link stays a link, as for every output: sp_output_target), built under
 * that name + ".partial" so that the rename stays on one file system.
 * OUT/profiler.db that exists and is not a regular file (a FIFO, a device
 * such as /dev/null) is not written: a database is built by pages and
 * indexes, not streamed, and renaming over it would replace the node.
 * Says so (once) and returns 1; 0 when profiler.db can be written. */
static int db_target_is_special(prs_out *o, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/profiler.db", dir);
    int how = sp_output_target(path, o->db_final, sizeof o->db_final);
    if (how == SP_OUT_REPLACE) {
        snprintf(o->db_partial, sizeof o->db_partial, "%s" DB_PARTIAL, o->db_final);
        return 0;
    }
    prs_log(PRS_ERROR, "profiler.db: %s %s; profiler.db is not written", path,
            how < 0 ? strerror(-how) : "exists and is not a regular file (a FIFO or a device)");
    return 1;
}

int prs_out_open(prs_out *o, const char *dir, int csv, int db)
{
    memset(o, 0, sizeof *o);
    o->dir = dir;
    o->csv = csv;
    o->db = db;
    if (mkdir_p(dir) != 0) {
        int e = errno;
        char link[4096];
        ssize_t n = readlink(dir, link, sizeof link - 1);
        if (n > 0 && e == ENOENT) {
            link[n] = 0;
            prs_log(PRS_ERROR, "output folder %s is a symbolic link to %s, which does not exist: "
                    "create that folder or give another -o", dir, link);
        } else {
            prs_log(PRS_ERROR, "cannot create output folder %s: %s", dir, strerror(e));
        }
        return -1;
    }
    prs_dw_stage_begin(&o->stage); /* every output under a temporary name until prs_out_close */
    if (db && db_target_is_special(o, dir)) {
        o->db = db = 0;
        o->failed = 1; /* an output not written: exit status 1 */
    }
    if (db) {
        const char *path = o->db_partial;
        /* A fresh database per run: stale rows would mix runs. It is built
         * as profiler.db.partial and renamed at the end with the other
         * outputs (dwrite.c, staging), so an interrupted run leaves the
         * previous profiler.db as it was, never one that looks complete. */
        unlink(path);
        char why[512];
        if (prs_db_writer_is_sqlite()) {
            o->sq = prs_dbsql_open(path, why, sizeof why);
            if (!o->sq)
                prs_log(PRS_ERROR, "cannot create %s: %s; profiler.db is not written", path, why);
        } else {
            o->bt = prs_bt_open(path, DB_PAGE);
            if (!o->bt)
                prs_log(PRS_ERROR, "cannot create %s: %s; profiler.db is not written", path, strerror(errno));
        }
        if ((o->bt || o->sq) &&
            sqlite3_open_v2(":memory:", &o->db_conn, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
            prs_log(PRS_ERROR, "profiler.db: cannot open SQLite in memory: %s; profiler.db is not written",
                    sqlite3_errmsg(o->db_conn));
            if (o->bt)
                prs_bt_abort(o->bt, 1);
        }
        if ((!o->bt && !o->sq) || !o->db_conn) {
            sqlite3_close(o->db_conn);
            o->db_conn = NULL;
            prs_dbsql_free(o->sq);
            o->sq = NULL;
            prs_bt_free(o->bt);
            o->bt = NULL;
            o->db = 0;
            o->failed = 1;
        }
    }
    return 0;
}

/* profiler.db cannot be completed: one ERROR, the partial file removed at
 * once (the disk space may be what the other outputs need), rows ignored. */
/* An output failed: exit status 1. On a writer thread the flag is its
 * own (wfailed), merged into failed at prs_out_close. */
static void out_failed(prs_out *o)
{
    if (o->writers)
        atomic_store(&o->wfailed, 1);
    else
        o->failed = 1;
}

static void db_fail(prs_out *o, const char *why)
{
    if (o->db_lost)
        return;
    o->db_lost = 1;
    out_failed(o);
    prs_log(PRS_ERROR, "profiler.db: writing %s failed: %s; it is removed and profiler.db is not written",
            o->db_partial, why);
    if (o->bt) {
        prs_bt_abort(o->bt, 1);
    } else {
        prs_dbsql_free(o->sq);
        o->sq = NULL;
        unlink(o->db_partial);
    }
}

static void quote_ident(char *buf, size_t cap, const char *name)
{
    size_t o = 0;
    buf[o++] = '"';
    for (const char *p = name; *p && o < cap - 3; p++) {
        if (*p == '"')
            buf[o++] = '"';
        buf[o++] = *p;
    }
    buf[o++] = '"';
    buf[o] = 0;
}

/* The page writer's table for a table just created in the in-memory
 * database: affinities from the declared types as SQLite read them, and
 * the column that is the rowid (a lone INTEGER PRIMARY KEY, not DESC). */
static char *bt_affinities(prs_out *o, const char *name, const prs_col *cols, int ncols, int *ipk_out)
{
    char *aff = prs_xmalloc((size_t)ncols);
    memset(aff, PRS_AFF_BLOB, (size_t)ncols);
    int ipk = -1, npk = 0;
    /* PRAGMA table_info, not sqlite3_table_column_metadata (that one needs
     * SQLITE_ENABLE_COLUMN_METADATA): cid, name, type, notnull, dflt, pk. */
    char *q = sqlite3_mprintf("PRAGMA table_info(\"%w\")", name);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(o->db_conn, q, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            int i = sqlite3_column_int(st, 0);
            const char *decl = (const char *)sqlite3_column_text(st, 2);
            if (i < 0 || i >= ncols)
                continue;
            aff[i] = prs_affinity(decl);
            if (sqlite3_column_int(st, 5)) {
                npk++;
                if (decl && sqlite3_stricmp(decl, "INTEGER") == 0 && !strstr(cols[i].sqltype, "DESC") &&
                    !strstr(cols[i].sqltype, "desc"))
                    ipk = i;
            }
        }
        sqlite3_finalize(st);
    }
    sqlite3_free(q);
    *ipk_out = npk == 1 ? ipk : -1;
    return aff;
}

/* The db side of a table's creation: its b-tree and indexes (btwrite.c),
 * or its CREATE for the SQLite writer. On the db thread with writers. */
static void db_table(prs_out *o, prs_table *t, const char *aff, int ipk, const char *create)
{
    if (o->sq) {
        int id = prs_dbsql_table(o->sq, create, t->db_name, t->ncols);
        t->sq_tab = id >= 0 ? id + 1 : 0;
    } else if (o->bt) {
        t->bt = prs_bt_table(o->bt, t->db_name, t->ncols, aff, ipk);
        if (t->bt)
            prs_dbout_declare_indexes(t, t->bt);
    }
}

/* ------------------------------------------------ the writers' threads */

/* Messages to the writers (wqueue.c): a fixed head, then what it needs. */
enum { M_DB_TABLE, M_CSV_OPEN, M_ROW, M_CSV_CLOSE, M_DB_CLOSE };
typedef struct msg {
    int kind, ncols;
    prs_table *w;           /* the writers' table */
    prs_out *o;
    int ipk;                /* M_DB_TABLE */
    FILE *csv;              /* M_CSV_OPEN: the file, its path and buffer (handed over) */
    char *path, *buf;
} msg;

static void encode_csv(prs_table *t, const prs_val *v);
static void encode_db(prs_out *o, prs_table *t, const prs_val *v);
static void close_csv(prs_out *o, prs_table *t);

/* One message on its writer's thread (db: the db writer's, else the
 * CSV's). Reads the message only: both writers may read one row. */
static void writer_msg(const uint8_t *p, int db)
{
    const msg *m = (const msg *)p;
    prs_table *w = m->w;
    const uint8_t *tail = p + prs_wq_round(sizeof *m);
    switch (m->kind) {
    case M_DB_TABLE: /* aff[ncols], then the CREATE text */
        db_table(m->o, w, (const char *)tail, m->ipk, (const char *)tail + m->ncols);
        break;
    case M_CSV_OPEN:
        w->ncsv = m->ncols; /* a report may lower it after its init */
        w->csv = m->csv;
        w->csv_path = m->path;
        w->csv_buf = m->buf;
        break;
    case M_ROW: /* prs_val[ncols], then their texts */
        if (db)
            encode_db(m->o, w, (const prs_val *)tail);
        else
            encode_csv(w, (const prs_val *)tail);
        break;
    case M_CSV_CLOSE:
        close_csv(m->o, w);
        break;
    case M_DB_CLOSE:
        if (w->bt && !m->o->db_lost && prs_bt_table_end(w->bt) != 0)
            db_fail(m->o, prs_bt_error(m->o->bt));
        w->bt = NULL;
        if (w->ins)
            sqlite3_finalize(w->ins);
        w->ins = NULL;
        break;
    }
}

static void writer_csv(void *ctx, uint8_t *p, size_t n)
{
    (void)ctx;
    (void)n;
    writer_msg(p, 0);
}

static void writer_db(void *ctx, uint8_t *p, size_t n)
{
    (void)ctx;
    (void)n;
    writer_msg(p, 1);
}

void prs_out_start_writers(prs_out *o)
{
    o->writers = 1;
    if (o->csv && o->db)
        o->wq = prs_wq_start_pair(writer_csv, "sp-csv", writer_db, "sp-db", o);
    else if (o->csv || o->db)
        o->wq = prs_wq_start(o->csv ? writer_csv : writer_db, o, o->csv ? "sp-csv" : "sp-db");
    if (o->wq) {
        o->wq_csv = o->csv ? PRS_WQ_FIRST : 0;
        o->wq_db = o->db ? (o->csv ? PRS_WQ_SECOND : PRS_WQ_FIRST) : 0;
    }
}

/* A message for the writers in who (o->wq_csv and/or o->wq_db). */
static msg *put_msg(prs_out *o, unsigned who, int kind, prs_table *w, size_t extra)
{
    msg *m = prs_wq_put_for(o->wq, who, prs_wq_round(sizeof *m) + extra);
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->o = o;
    m->w = w;
    return m;
}

/* One copy of a row for the writers in who: its first ncols values (the
 * CSV writer reads the first ncsv of them), texts copied after them. A
 * message stays in its block until both writers are done (wqueue.c), so a
 * text's pointer is set here, to its copy, and nobody writes the message
 * after this. */
static void put_row(prs_out *o, unsigned who, prs_table *w, const prs_val *v, int ncols)
{
    size_t text = 0;
    for (int i = 0; i < ncols; i++)
        if (v[i].kind == PRS_TEXT)
            text += (size_t)v[i].n;
    msg *m = put_msg(o, who, M_ROW, w, (size_t)ncols * sizeof *v + text);
    m->ncols = ncols;
    prs_val *c = (prs_val *)((uint8_t *)m + prs_wq_round(sizeof *m));
    memcpy(c, v, (size_t)ncols * sizeof *v);
    char *t = (char *)(c + ncols);
    for (int i = 0; i < ncols; i++) {
        if (v[i].kind == PRS_TEXT) {
            if (v[i].n > 0) /* an empty text may come as NULL */
                memcpy(t, v[i].s, (size_t)v[i].n);
            c[i].s = t;
            t += v[i].n;
        }
    }
}

/* The writers' copy of t (names and columns copied: a report's may live on
 * its stack). */
static prs_table *shadow(prs_out *o, const prs_table *t)
{
    prs_table *w = prs_xcalloc(1, sizeof *w);
    w->ncols = t->ncols;
    w->ncsv = t->ncsv;
    w->db_name = t->db_name ? prs_xstrdup(t->db_name) : NULL;
    w->csv_name = t->csv_name ? prs_xstrdup(t->csv_name) : NULL;
    prs_col *cols = prs_xcalloc((size_t)(t->ncols ? t->ncols : 1), sizeof *cols);
    for (int i = 0; i < t->ncols; i++) {
        cols[i].name = prs_xstrdup(t->cols[i].name);
        cols[i].sqltype = prs_xstrdup(t->cols[i].sqltype);
    }
    w->cols = cols;
    if (o->nshadows == o->capshadows) {
        o->capshadows = o->capshadows ? o->capshadows * 2 : 64;
        o->shadows = prs_xrealloc(o->shadows, (size_t)o->capshadows * sizeof *o->shadows);
    }
    o->shadows[o->nshadows++] = w;
    return w;
}

static void free_shadows(prs_out *o)
{
    for (int i = 0; i < o->nshadows; i++) {
        prs_table *w = o->shadows[i];
        for (int k = 0; k < w->ncols; k++) {
            free((char *)w->cols[k].name);
            free((char *)w->cols[k].sqltype);
        }
        free((void *)w->cols);
        free((char *)w->db_name);
        free((char *)w->csv_name);
        free(w->csv_path);
        free(w->csv_buf);
        free(w->create_sql);
        free(w);
    }
    free(o->shadows);
    o->shadows = NULL;
    o->nshadows = o->capshadows = 0;
}

void prs_table_init(prs_out *o, prs_table *t, const char *csv_name, const char *db_name,
                    const prs_col *cols, int ncols, const char *needs)
{
    memset(t, 0, sizeof *t);
    t->key = db_name ? db_name : csv_name;
    t->csv_name = o->csv ? csv_name : NULL;
    t->db_name = o->db ? db_name : NULL;
    t->cols = cols;
    t->ncols = ncols;
    t->ncsv = ncols;
    t->needs = needs;
    if (o->wq_csv && t->csv_name)
        t->w = shadow(o, t);
    if (!t->db_name || !o->db_conn)
        return;
    /* The reference's names for columns we hold under other names:
     * virtual generated columns (dbcompat.c), computed when read, so the
     * page writer never sees them (they come after the stored ones). */
    char *extra = prs_dbcompat_columns(db_name, cols, ncols);
    size_t cap = 256 + (size_t)ncols * 96 + (extra ? strlen(extra) : 0);
    char *create = prs_xmalloc(cap), *ins = prs_xmalloc(cap);
    char q[160];
    quote_ident(q, sizeof q, db_name);
    size_t n = (size_t)snprintf(create, cap, "CREATE TABLE %s (", q);
    size_t m = (size_t)snprintf(ins, cap, "INSERT INTO %s VALUES (", q);
    for (int i = 0; i < ncols; i++) {
        quote_ident(q, sizeof q, cols[i].name);
        n += (size_t)snprintf(create + n, cap - n, "%s%s %s", i ? ", " : "", q, cols[i].sqltype);
        m += (size_t)snprintf(ins + m, cap - m, "%s?", i ? ", " : "");
    }
    snprintf(create + n, cap - n, "%s)", extra ? extra : "");
    sqlite3_free(extra);
    snprintf(ins + m, cap - m, ")");
    if (sqlite3_exec(o->db_conn, create, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(o->db_conn, ins, -1, &t->ins, NULL) != SQLITE_OK) {
        prs_log(PRS_ERROR, "profiler.db: cannot create table %s: %s", db_name, sqlite3_errmsg(o->db_conn));
        t->db_name = NULL;
        o->failed = 1;
    } else {
        int ipk = -1;
        char *aff = o->bt ? bt_affinities(o, db_name, cols, ncols, &ipk) : NULL;
        t->db_on = 1;
        if (o->wq_db) {
            if (!t->w)
                t->w = shadow(o, t);
            t->w->create_sql = prs_xstrdup(create); /* the db thread's twin makes it when a row needs SQLite */
            size_t cl = strlen(create) + 1;
            msg *dm = put_msg(o, o->wq_db, M_DB_TABLE, t->w, (size_t)ncols + cl);
            dm->ncols = ncols;
            dm->ipk = ipk;
            uint8_t *tail = (uint8_t *)dm + prs_wq_round(sizeof *dm);
            if (aff)
                memcpy(tail, aff, (size_t)ncols);
            memcpy(tail + ncols, create, cl);
        } else {
            db_table(o, t, aff, ipk, create);
        }
        free(aff);
    }
    free(create);
    free(ins);
}

static int open_csv(prs_out *o, prs_table *t)
{
    size_t len = strlen(o->dir) + strlen(t->csv_name) + 2;
    t->csv_path = prs_xmalloc(len);
    snprintf(t->csv_path, len, "%s/%s", o->dir, t->csv_name);
    char *slash = strrchr(t->csv_path, '/');
    if (slash && strchr(t->csv_name, '/')) {
        *slash = 0;
        mkdir_p(t->csv_path);
        *slash = '/';
    }
    /* Through dwrite.c (O_DIRECT from a writer thread): a buffered write
     * costs a new page-cache page per 4 KiB (docs/parse.md). */
    t->csv = prs_dw_fopen(&o->stage, t->csv_path);
    if (!t->csv) {
        prs_log(PRS_ERROR, "cannot write %s: %s; that report is not written", t->csv_path, strerror(errno));
        t->failed = 1;
        o->failed = 1;
        return -1;
    }
    /* glibc ignores the size when setvbuf gets no buffer (4 KiB writes). */
    t->csv_buf = prs_xmalloc(PRS_OUT_BUF);
    setvbuf(t->csv, t->csv_buf, _IOFBF, PRS_OUT_BUF);
    __fsetlocking(t->csv, FSETLOCKING_BYCALLER); /* one thread: no stdio locks */
    for (int i = 0; i < t->ncsv; i++) {
        if (i)
            putc_unlocked(',', t->csv);
        prs_csv_field(t->csv, t->cols[i].name, (int)strlen(t->cols[i].name));
    }
    putc_unlocked('\n', t->csv);
    if (t->w && o->wq_csv) { /* the file is the csv thread's from here */
        msg *m = put_msg(o, o->wq_csv, M_CSV_OPEN, t->w, 0);
        m->ncols = t->ncsv;
        m->csv = t->csv;
        m->path = t->csv_path;
        m->buf = t->csv_buf;
        t->csv_path = NULL;
        t->csv_buf = NULL;
    }
    return 0;
}

/* Milliseconds with microsecond precision, exactly: integer arithmetic. */
static void put_ms(FILE *f, const prs_val *v)
{
    long long us;
    if (v->n == 1) /* exact nanoseconds: round half away from zero in integers */
        us = v->i >= 0 ? (v->i + 500) / 1000 : -((-v->i + 500) / 1000);
    else
        us = llround(v->d * 1000.0);
    if (us < 0) {
        putc_unlocked('-', f);
        us = -us;
    }
    prs_put_int(f, us / 1000);
    putc_unlocked('.', f);
    putc_unlocked('0' + (int)(us % 1000 / 100), f);
    putc_unlocked('0' + (int)(us % 100 / 10), f);
    putc_unlocked('0' + (int)(us % 10), f);
}

/* "%.6g" without printf (1.8k instructions a call): integers below 1e6
 * print as their digits, other values through prs_fmt_g6. */
static void put_real(FILE *f, double d)
{
    if (d > -1e6 && d < 1e6 && d == (double)(long long)d && !(d == 0 && signbit(d))) {
        prs_put_int(f, (long long)d);
    } else {
        char b[32];
        int n = prs_fmt_g6(d, b);
        for (int i = 0; i < n; i++)
            putc_unlocked(b[i], f);
    }
}

static void bind_row(sqlite3_stmt *st, const prs_val *v, int ncols)
{
    for (int i = 0; i < ncols; i++) {
        switch (v[i].kind) {
        case PRS_INT: sqlite3_bind_int64(st, i + 1, v[i].i); break;
        case PRS_REAL: case PRS_MS: sqlite3_bind_double(st, i + 1, v[i].d); break;
        case PRS_TEXT: sqlite3_bind_text(st, i + 1, v[i].s, v[i].n, SQLITE_STATIC); break;
        default: sqlite3_bind_null(st, i + 1); break;
        }
    }
}

/* The db thread's own in-memory twin of a writers' table t (the parse
 * thread's db_conn is not shared): made when a row first needs SQLite's
 * conversion, which no report's rows do today. 0 or -1. */
static int twin_table(prs_out *o, prs_table *t)
{
    if (!o->wconn &&
        sqlite3_open_v2(":memory:", &o->wconn, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        return -1;
    char *ins = sqlite3_mprintf("INSERT INTO \"%w\" VALUES (?", t->db_name);
    for (int i = 1; i < t->ncols && ins; i++) {
        char *n = sqlite3_mprintf("%s, ?", ins);
        sqlite3_free(ins);
        ins = n;
    }
    char *full = ins ? sqlite3_mprintf("%s)", ins) : NULL;
    sqlite3_free(ins);
    int rc = full && sqlite3_exec(o->wconn, t->create_sql, NULL, NULL, NULL) == SQLITE_OK &&
                     sqlite3_prepare_v2(o->wconn, full, -1, &t->ins, NULL) == SQLITE_OK ? 0 : -1;
    sqlite3_free(full);
    return rc;
}

/* A row with a value that needs SQLite's conversion: inserted into the
 * in-memory table, read back as SQLite stored it, written as is, deleted.
 * Returns prs_bt_row's result, or -1 (with the reason in why). */
static int convert_row(prs_out *o, prs_table *t, const prs_val *v, char *why, size_t cap)
{
    if (!t->ins && t->create_sql && twin_table(o, t) != 0) {
        snprintf(why, cap, "converting a row of %s: %s", t->db_name, o->wconn ? sqlite3_errmsg(o->wconn) : "?");
        return -1;
    }
    sqlite3 *db = sqlite3_db_handle(t->ins);
    bind_row(t->ins, v, t->ncols);
    int rc = sqlite3_step(t->ins);
    sqlite3_reset(t->ins);
    if (rc != SQLITE_DONE) {
        snprintf(why, cap, "insert into %s failed: %s", t->db_name, sqlite3_errmsg(db));
        return -1;
    }
    char q[160], sql[400];
    quote_ident(q, sizeof q, t->db_name);
    snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE rowid = ?", q);
    sqlite3_stmt *st = NULL;
    rc = -1;
    snprintf(why, cap, "reading back a row of %s failed: %s", t->db_name, "?");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, sqlite3_last_insert_rowid(db));
        if (sqlite3_step(st) == SQLITE_ROW) {
            prs_val *cv = prs_xcalloc((size_t)t->ncols, sizeof *cv);
            for (int i = 0; i < t->ncols; i++) {
                switch (sqlite3_column_type(st, i)) {
                case SQLITE_INTEGER: cv[i] = prs_v_int(sqlite3_column_int64(st, i)); break;
                case SQLITE_FLOAT: cv[i].kind = PRS_REAL; cv[i].d = sqlite3_column_double(st, i); break;
                case SQLITE_NULL: break;
                default: /* text (a blob is never bound) */
                    cv[i].kind = PRS_TEXT;
                    cv[i].s = (const char *)sqlite3_column_text(st, i);
                    cv[i].n = sqlite3_column_bytes(st, i);
                    break;
                }
            }
            rc = prs_bt_row(t->bt, cv, 1);
            if (rc < 0)
                snprintf(why, cap, "%s", prs_bt_error(o->bt));
            free(cv);
        }
    }
    sqlite3_finalize(st);
    snprintf(sql, sizeof sql, "DELETE FROM %s", q);
    sqlite3_exec(db, sql, NULL, NULL, NULL);
    return rc;
}

/* A row's CSV line (t's writer: the parse thread, or the csv thread). */
static void encode_csv(prs_table *t, const prs_val *v)
{
    {
        FILE *f = t->csv;
        for (int i = 0; i < t->ncsv; i++) {
            if (i)
                putc_unlocked(',', f);
            switch (v[i].kind) {
            case PRS_INT: prs_put_int(f, v[i].i); break;
            case PRS_REAL: put_real(f, v[i].d); break;
            case PRS_MS: put_ms(f, &v[i]); break;
            case PRS_TEXT: prs_csv_field(f, v[i].s, v[i].n); break;
            default: break;
            }
        }
        putc_unlocked('\n', f);
    }
}

/* A row into profiler.db (t's writer: the parse thread, or the db thread). */
static void encode_db(prs_out *o, prs_table *t, const prs_val *v)
{
    if (t->sq_tab && o->sq && !o->db_lost) {
        prs_dbsql_row(o->sq, t->sq_tab - 1, v, t->ncols);
    } else if (t->bt && !o->db_lost) {
        int rc = prs_bt_row(t->bt, v, 0);
        if (rc == 0)
            return;
        char why[512];
        snprintf(why, sizeof why, "%s", prs_bt_error(o->bt));
        if (rc > 0)
            rc = convert_row(o, t, v, why, sizeof why);
        if (rc != 0)
            db_fail(o, why);
    }
}

void prs_table_row(prs_out *o, prs_table *t, const prs_val *v)
{
    t->rows++;
    if (o->tap.row) /* the parse's consumer (tap.h) */
        o->tap.row(o->tap.ctx, t, v);
    int csv = t->csv_name && !t->failed && (t->csv || open_csv(o, t) == 0);
    /* With writers, copied once for both threads and written there in
     * this order. */
    unsigned who = 0;
    if (csv && t->w && o->wq_csv)
        who |= o->wq_csv;
    else if (csv)
        encode_csv(t, v);
    if (t->w && o->wq_db) {
        if (t->db_on)
            who |= o->wq_db;
    } else {
        encode_db(o, t, v);
    }
    if (who)
        put_row(o, who, t->w, v, who & o->wq_db ? t->ncols : t->ncsv);
}

/* Closes t's CSV file (t's writer: the parse thread, or the csv thread). */
static void close_csv(prs_out *o, prs_table *t)
{
    if (!t->csv)
        return;
    if (fclose(t->csv) != 0) {
        /* Half a report would pass for a short run: it goes. */
        prs_log(PRS_ERROR, "writing %s failed: %s; the incomplete file is removed", t->csv_path,
                strerror(errno));
        prs_dw_stage_add(&o->stage, NULL, t->csv_path); /* nor an earlier run's under its name */
        out_failed(o);
    }
    t->csv = NULL;
    free(t->csv_buf); /* after fclose: stdio used it until then */
    t->csv_buf = NULL;
}

void prs_table_close(prs_out *o, prs_table *t)
{
    if (t->w && o->wq_csv && t->csv) {
        put_msg(o, o->wq_csv, M_CSV_CLOSE, t->w, 0);
        t->csv = NULL; /* the csv thread's since its open; its table is freed at prs_out_close */
    }
    if (t->w && o->wq_db && t->db_on)
        put_msg(o, o->wq_db, M_DB_CLOSE, t->w, 0);
    if (t->csv) {
        close_csv(o, t);
    } else if (t->rows == 0 && t->csv_name) {
        /* A file of that name from an earlier run would pass for this
         * run's: removed at the commit (prs_out_close). */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", o->dir, t->csv_name);
        prs_dw_stage_add(&o->stage, NULL, path);
        if (t->needs)
            prs_log(PRS_WARNING, "%s skipped: %s", t->csv_name, t->needs);
    }
    if (t->bt && !o->db_lost && prs_bt_table_end(t->bt) != 0)
        db_fail(o, prs_bt_error(o->bt));
    t->bt = NULL; /* owned by o->bt */
    if (t->ins)
        sqlite3_finalize(t->ins);
    t->ins = NULL;
    free(t->csv_path);
    t->csv_path = NULL;
    free(t->csv_buf); /* after fclose: stdio used it until then */
    t->csv_buf = NULL;
}

/* The file's sqlite_schema rows are the in-memory database's, in order:
 * tables, views and the indexes btindex.c laid out written by btwrite.c;
 * other indexes collected in *idx to be created by SQLite on the finished
 * file. 0 or -1 (why). */
static int write_schema(prs_out *o, char ***idx, int *nidx, char *why, size_t cap)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(o->db_conn, "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid", -1,
                           &st, NULL) != SQLITE_OK) {
        snprintf(why, cap, "reading the schema: %s", sqlite3_errmsg(o->db_conn));
        return -1;
    }
    prs_bt_schema *rows = NULL;
    int n = 0, rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *f[4];
        for (int i = 0; i < 4; i++)
            f[i] = (const char *)sqlite3_column_text(st, i);
        if (!f[0] || !f[1] || !f[2] || !f[3]) { /* an automatic index: not made by this writer */
            snprintf(why, cap, "%s %s has no SQL (not supported)", f[0] ? f[0] : "?", f[1] ? f[1] : "?");
            rc = -1;
            break;
        }
        uint32_t root;
        const char *not_built = strcmp(f[0], "index") == 0 ? prs_bt_index_status(o->bt, f[1], &root) : NULL;
        if (not_built) {
            prs_log(PRS_DEBUG, "profiler.db: index %s built by SQLite (%s)", f[1], not_built);
            *idx = prs_xrealloc(*idx, (size_t)(*nidx + 1) * sizeof **idx);
            (*idx)[(*nidx)++] = prs_xstrdup(f[3]);
            continue;
        }
        rows = prs_xrealloc(rows, (size_t)(n + 1) * sizeof *rows);
        rows[n++] = (prs_bt_schema){prs_xstrdup(f[0]), prs_xstrdup(f[1]), prs_xstrdup(f[2]), prs_xstrdup(f[3])};
    }
    sqlite3_finalize(st);
    if (rc == 0 && prs_bt_finish(o->bt, rows, n) != 0) {
        snprintf(why, cap, "%s", prs_bt_error(o->bt));
        rc = -1;
    }
    for (int i = 0; i < n; i++) {
        free((char *)rows[i].type);
        free((char *)rows[i].name);
        free((char *)rows[i].tbl_name);
        free((char *)rows[i].sql);
    }
    free(rows);
    return rc;
}

/* SQLite opens the finished file and creates the indexes btindex.c could
 * not lay out. 0 or -1 (why). */
static int create_indexes(const char *path, char **idx, int nidx, char *why, size_t cap)
{
    if (!nidx)
        return 0;
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
                              "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-8192; BEGIN",
                          NULL, NULL, NULL);
    for (int i = 0; i < nidx && rc == SQLITE_OK; i++)
        rc = sqlite3_exec(db, idx[i], NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        snprintf(why, cap, "creating indexes: %s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    if (sqlite3_close(db) != SQLITE_OK && rc == SQLITE_OK) {
        snprintf(why, cap, "closing after the indexes failed");
        rc = SQLITE_ERROR;
    }
    return rc == SQLITE_OK ? 0 : -1;
}

/* The SQLite writer's end: the in-memory twin's views and indexes, in
 * its order, run on the file after the rows; then the rename. */
static void close_sqlite_writer(prs_out *o)
{
    const char *partial = o->db_partial, *path = o->db_final;
    char why[4400] = "";
    char **sql = NULL;
    int n = 0;
    sqlite3_stmt *st;
    if (!o->db_lost && sqlite3_prepare_v2(o->db_conn, "SELECT sql FROM sqlite_schema WHERE type != 'table' AND "
                                                      "sql IS NOT NULL ORDER BY rowid", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            char **ns = realloc(sql, (size_t)(n + 1) * sizeof *sql);
            if (!ns)
                break;
            sql = ns;
            sql[n++] = prs_xstrdup((const char *)sqlite3_column_text(st, 0));
        }
        sqlite3_finalize(st);
    }
    if (!o->db_lost && prs_dbsql_finish(o->sq, sql, n, why, sizeof why) != 0)
        db_fail(o, why);
    for (int i = 0; i < n; i++)
        free(sql[i]);
    free(sql);
    if (!o->db_lost && rename(partial, path) != 0) {
        snprintf(why, sizeof why, "cannot rename it to %s: %s", path, strerror(errno));
        db_fail(o, why);
    }
    prs_dbsql_free(o->sq);
    o->sq = NULL;
}

int prs_out_close(prs_out *o)
{
    /* The writers finish what was queued (an abandoned run's too: its
     * files are then discarded below), then everything is this thread's. */
    prs_wq_stop(o->wq);
    o->wq = NULL;
    o->wq_csv = o->wq_db = 0;
    if (o->writers && atomic_load(&o->wfailed))
        o->failed = 1;
    o->writers = 0;
    free_shadows(o);
    sqlite3_close(o->wconn);
    o->wconn = NULL;
    if (o->sq)
        close_sqlite_writer(o);
    if (o->bt) {
        const char *partial = o->db_partial, *path = o->db_final;
        char why[4400] = "";
        char **idx = NULL;
        int nidx = 0;
        if (!o->db_lost && (write_schema(o, &idx, &nidx, why, sizeof why) != 0 ||
                            create_indexes(partial, idx, nidx, why, sizeof why) != 0))
            db_fail(o, why);
        for (int i = 0; i < nidx; i++)
            free(idx[i]);
        free(idx);
        prs_dw_stage_add(&o->stage, o->db_lost ? NULL : partial, path); /* renamed with the rest, or an old one removed */
        prs_bt_free(o->bt);
        o->bt = NULL;
    }
    if (o->db_conn) {
        sqlite3_close(o->db_conn);
        o->db_conn = NULL;
    }
    sqlite3_free(o->curve_sql); /* a run that ended before its views (abandoned) */
    o->curve_sql = NULL;
    if (o->discard)
        prs_dw_stage_discard(&o->stage);
    else if (prs_dw_stage_commit(&o->stage) != 0)
        o->failed = 1;
    return o->failed ? -1 : 0;
}
