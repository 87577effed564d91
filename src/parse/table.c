/*
 * table.c — the row sink every report writes through: one call per row
 * writes the CSV line (when csv is on) and the profiler.db row (when db is
 * on), so the two can never disagree.
 *
 * CSV files are opened on the first row, so a report whose data never came
 * leaves no empty file behind; spp_table_close() then prints the one line
 * saying which report was skipped and what was missing. profiler.db tables
 * are created up front (empty tables keep dashboards' queries valid) and
 * filled inside one transaction (see dbout.c / spp_out_open).
 *
 * profiler.db rows are staged and inserted DB_ROWS at a time by one
 * multi-row INSERT: SQLite's cost per statement (start, open the table,
 * halt, reset) is then paid once per DB_ROWS rows instead of per row
 * (callgrind: see the commit message). Texts are copied when staged (the
 * caller's strings do not outlive the call); spp_table_close() inserts the
 * rest one row at a time, so every row is in before the commit, in order.
 */
#include <errno.h>
#include <stdio_ext.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmtnum.h"
#include "parse.h"

/* profiler.db while it is built (renamed when complete). */
#define DB_PARTIAL "profiler.db.partial"

/* Rows per multi-row INSERT into profiler.db. */
#define DB_ROWS 32

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
    return 0;
}

int spp_out_open(spp_out *o, const char *dir, int csv, int db)
{
    memset(o, 0, sizeof *o);
    o->dir = dir;
    o->csv = csv;
    o->db = db;
    if (mkdir_p(dir) != 0) {
        spp_log(SPP_ERROR, "cannot create output folder %s: %s", dir, strerror(errno));
        return -1;
    }
    if (db) {
        char path[4096];
        /* A fresh database per run: stale rows would mix runs. It is built
         * as profiler.db.partial and renamed at the end, so an interrupted
         * run leaves no profiler.db that looks complete (without a journal
         * the partial file may not even open). */
        snprintf(path, sizeof path, "%s/profiler.db", dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/" DB_PARTIAL, dir);
        unlink(path);
        if (sqlite3_open_v2(path, &o->db_conn, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            NULL) != SQLITE_OK) {
            spp_log(SPP_ERROR, "cannot create %s: %s; profiler.db is not written",
                    path, sqlite3_errmsg(o->db_conn));
            sqlite3_close(o->db_conn);
            o->db_conn = NULL;
            o->db = 0;
            o->failed = 1;
        } else {
            /* Built in one go and only then readable: no journal, no fsync, one
             * lock for the whole run. Rows are appended (rowid tables, indexes
             * built at the end), so each page is written once whatever the
             * cache size: a small cache saves the page faults of filling a
             * big one (measured: 32 MiB -> 8 MiB cut ~30 MiB of peak RSS). */
            sqlite3_exec(o->db_conn, "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; "
                                     "PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
                                     "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-8192; BEGIN",
                         NULL, NULL, NULL);
        }
    }
    return 0;
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

void spp_table_init(spp_out *o, spp_table *t, const char *csv_name, const char *db_name,
                    const spp_col *cols, int ncols, const char *needs)
{
    memset(t, 0, sizeof *t);
    t->csv_name = o->csv ? csv_name : NULL;
    t->db_name = o->db ? db_name : NULL;
    t->cols = cols;
    t->ncols = ncols;
    t->needs = needs;
    if (!t->db_name || !o->db_conn)
        return;
    size_t cap = 256 + (size_t)ncols * 96;
    char *create = malloc(cap), *ins = malloc(cap);
    char q[160];
    quote_ident(q, sizeof q, db_name);
    size_t n = (size_t)snprintf(create, cap, "CREATE TABLE %s (", q);
    size_t m = (size_t)snprintf(ins, cap, "INSERT INTO %s VALUES (", q);
    for (int i = 0; i < ncols; i++) {
        quote_ident(q, sizeof q, cols[i].name);
        n += (size_t)snprintf(create + n, cap - n, "%s%s %s", i ? ", " : "", q, cols[i].sqltype);
        m += (size_t)snprintf(ins + m, cap - m, "%s?", i ? ", " : "");
    }
    snprintf(create + n, cap - n, ")");
    snprintf(ins + m, cap - m, ")");
    if (sqlite3_exec(o->db_conn, create, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(o->db_conn, ins, -1, &t->ins, NULL) != SQLITE_OK) {
        spp_log(SPP_ERROR, "profiler.db: cannot create table %s: %s", db_name, sqlite3_errmsg(o->db_conn));
        t->db_name = NULL;
        o->failed = 1;
    } else {
        /* The same INSERT with DB_ROWS rows of values; without it (an SQLite
         * with a low variable limit) rows go one by one. */
        size_t one = strlen(ins) - (size_t)(strchr(ins, '(') - ins); /* "(?, ?, ...)" */
        size_t mcap = (size_t)m + (one + 2) * DB_ROWS + 16;
        char *many = malloc(mcap);
        size_t k = (size_t)snprintf(many, mcap, "%s", ins);
        for (int r = 1; r < DB_ROWS; r++)
            k += (size_t)snprintf(many + k, mcap - k, ",%s", strchr(ins, '('));
        if (sqlite3_prepare_v2(o->db_conn, many, -1, &t->ins_many, NULL) == SQLITE_OK)
            t->staged = malloc((size_t)DB_ROWS * (size_t)ncols * sizeof *t->staged);
        else
            t->ins_many = NULL;
        free(many);
    }
    free(create);
    free(ins);
}

static int open_csv(spp_out *o, spp_table *t)
{
    size_t len = strlen(o->dir) + strlen(t->csv_name) + 2;
    t->csv_path = malloc(len);
    snprintf(t->csv_path, len, "%s/%s", o->dir, t->csv_name);
    char *slash = strrchr(t->csv_path, '/');
    if (slash && strchr(t->csv_name, '/')) {
        *slash = 0;
        mkdir_p(t->csv_path);
        *slash = '/';
    }
    t->csv = fopen(t->csv_path, "w");
    if (!t->csv) {
        spp_log(SPP_ERROR, "cannot write %s: %s; that report is not written", t->csv_path, strerror(errno));
        t->failed = 1;
        o->failed = 1;
        return -1;
    }
    /* glibc ignores the size when setvbuf gets no buffer (4 KiB writes). */
    t->csv_buf = malloc(SPP_OUT_BUF);
    setvbuf(t->csv, t->csv_buf, _IOFBF, SPP_OUT_BUF);
    __fsetlocking(t->csv, FSETLOCKING_BYCALLER); /* one thread: no stdio locks */
    for (int i = 0; i < t->ncols; i++) {
        if (i)
            putc_unlocked(',', t->csv);
        spp_csv_field(t->csv, t->cols[i].name, (int)strlen(t->cols[i].name));
    }
    putc_unlocked('\n', t->csv);
    return 0;
}

/* Milliseconds with microsecond precision, exactly: integer arithmetic. */
static void put_ms(FILE *f, double ms)
{
    long long us = llround(ms * 1000.0);
    if (us < 0) {
        putc_unlocked('-', f);
        us = -us;
    }
    spp_put_int(f, us / 1000);
    putc_unlocked('.', f);
    putc_unlocked('0' + (int)(us % 1000 / 100), f);
    putc_unlocked('0' + (int)(us % 100 / 10), f);
    putc_unlocked('0' + (int)(us % 10), f);
}

/* "%.6g" without printf (1.8k instructions a call): integers below 1e6
 * print as their digits, other values through spp_fmt_g6. */
static void put_real(FILE *f, double d)
{
    if (d > -1e6 && d < 1e6 && d == (double)(long long)d && !(d == 0 && signbit(d))) {
        spp_put_int(f, (long long)d);
    } else {
        char b[32];
        int n = spp_fmt_g6(d, b);
        for (int i = 0; i < n; i++)
            putc_unlocked(b[i], f);
    }
}

static void bind_row(sqlite3_stmt *st, int first, const spp_val *v, int ncols, const char *text)
{
    for (int i = 0; i < ncols; i++) {
        switch (v[i].kind) {
        case SPP_INT: sqlite3_bind_int64(st, first + i, v[i].i); break;
        case SPP_REAL: case SPP_MS: sqlite3_bind_double(st, first + i, v[i].d); break;
        /* STATIC: the text outlives the step that copies it into the page. */
        case SPP_TEXT:
            sqlite3_bind_text(st, first + i, text ? text + v[i].i : v[i].s, v[i].n, SQLITE_STATIC);
            break;
        default: sqlite3_bind_null(st, first + i); break;
        }
    }
}

static void step_insert(spp_out *o, spp_table *t, sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_DONE && !o->failed) {
        spp_log(SPP_ERROR, "profiler.db: insert into %s failed: %s", t->db_name, sqlite3_errmsg(o->db_conn));
        o->failed = 1;
    }
    sqlite3_reset(st);
}

/* Inserts the staged rows: one statement when there are DB_ROWS of them,
 * else one by one (the rest at close). */
static void flush_staged(spp_out *o, spp_table *t)
{
    int nc = t->ncols;
    if (t->nstaged == DB_ROWS) {
        for (int r = 0; r < DB_ROWS; r++)
            bind_row(t->ins_many, r * nc + 1, t->staged + (size_t)r * (size_t)nc, nc, t->text);
        step_insert(o, t, t->ins_many);
    } else {
        for (int r = 0; r < t->nstaged; r++) {
            bind_row(t->ins, 1, t->staged + (size_t)r * (size_t)nc, nc, t->text);
            step_insert(o, t, t->ins);
        }
    }
    t->nstaged = 0;
    t->text_len = 0;
}

static void stage_row(spp_out *o, spp_table *t, const spp_val *v)
{
    spp_val *d = t->staged + (size_t)t->nstaged * (size_t)t->ncols;
    for (int i = 0; i < t->ncols; i++) {
        d[i] = v[i];
        if (v[i].kind != SPP_TEXT)
            continue;
        size_t n = (size_t)v[i].n;
        if (t->text_len + n > t->text_cap) {
            t->text_cap = (t->text_len + n) * 2 + 4096;
            t->text = realloc(t->text, t->text_cap);
        }
        memcpy(t->text + t->text_len, v[i].s, n);
        d[i].i = (long long)t->text_len;
        d[i].s = NULL;
        t->text_len += n;
    }
    if (++t->nstaged == DB_ROWS)
        flush_staged(o, t);
}

void spp_table_row(spp_out *o, spp_table *t, const spp_val *v)
{
    t->rows++;
    if (t->csv_name && !t->failed && (t->csv || open_csv(o, t) == 0)) {
        FILE *f = t->csv;
        for (int i = 0; i < t->ncols; i++) {
            if (i)
                putc_unlocked(',', f);
            switch (v[i].kind) {
            case SPP_INT: spp_put_int(f, v[i].i); break;
            case SPP_REAL: put_real(f, v[i].d); break;
            case SPP_MS: put_ms(f, v[i].d); break;
            case SPP_TEXT: spp_csv_field(f, v[i].s, v[i].n); break;
            default: break;
            }
        }
        putc_unlocked('\n', f);
    }
    if (t->db_name && t->ins) {
        if (t->ins_many) {
            stage_row(o, t, v);
        } else {
            bind_row(t->ins, 1, v, t->ncols, NULL);
            step_insert(o, t, t->ins);
        }
    }
}

void spp_table_close(spp_out *o, spp_table *t)
{
    if (t->csv) {
        if (fclose(t->csv) != 0) {
            spp_log(SPP_ERROR, "writing %s failed: %s", t->csv_path, strerror(errno));
            o->failed = 1;
        }
        t->csv = NULL;
    } else if (t->rows == 0 && t->csv_name) {
        /* A file of that name from an earlier run would pass for this run's. */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", o->dir, t->csv_name);
        if (unlink(path) == 0)
            spp_log(SPP_INFO, "removed %s of an earlier run", path);
        if (t->needs)
            spp_log(SPP_WARNING, "%s skipped: %s", t->csv_name, t->needs);
    }
    if (t->ins && t->nstaged)
        flush_staged(o, t);
    if (t->ins)
        sqlite3_finalize(t->ins);
    t->ins = NULL;
    if (t->ins_many)
        sqlite3_finalize(t->ins_many);
    t->ins_many = NULL;
    free(t->staged);
    t->staged = NULL;
    free(t->text);
    t->text = NULL;
    t->text_len = t->text_cap = 0;
    free(t->csv_path);
    t->csv_path = NULL;
    free(t->csv_buf); /* after fclose: stdio used it until then */
    t->csv_buf = NULL;
}

int spp_out_close(spp_out *o)
{
    if (o->db_conn) {
        char partial[4096], path[4096];
        snprintf(partial, sizeof partial, "%s/" DB_PARTIAL, o->dir);
        snprintf(path, sizeof path, "%s/profiler.db", o->dir);
        int ok = sqlite3_exec(o->db_conn, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
        if (!ok)
            spp_log(SPP_ERROR, "profiler.db: commit failed: %s; %s removed, profiler.db is not written",
                    sqlite3_errmsg(o->db_conn), partial);
        sqlite3_close_v2(o->db_conn); /* committed: the file is complete */
        o->db_conn = NULL;
        if (ok && rename(partial, path) != 0) {
            spp_log(SPP_ERROR, "profiler.db: cannot rename %s to %s: %s", partial, path, strerror(errno));
            ok = 0;
        }
        if (!ok) {
            unlink(partial);
            o->failed = 1;
        }
    }
    return o->failed ? -1 : 0;
}
