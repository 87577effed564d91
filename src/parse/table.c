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
 */
#include <errno.h>
#include <stdio_ext.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse.h"

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
        snprintf(path, sizeof path, "%s/profiler.db", dir);
        unlink(path); /* a fresh database per run: stale rows would mix runs */
        /* readvfs.c writes its pages around the page cache. */
        if (sqlite3_open_v2(path, &o->db_conn, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            spp_readvfs_name()) != SQLITE_OK) {
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
    t->csv = spp_fopen_direct(t->csv_path);
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
            putc(',', t->csv);
        spp_csv_field(t->csv, t->cols[i].name, (int)strlen(t->cols[i].name));
    }
    putc('\n', t->csv);
    return 0;
}

/* Milliseconds with microsecond precision, exactly: integer arithmetic. */
static void put_ms(FILE *f, double ms)
{
    long long us = llround(ms * 1000.0);
    if (us < 0) {
        putc('-', f);
        us = -us;
    }
    spp_put_int(f, us / 1000);
    char frac[4] = {(char)('0' + us % 1000 / 100), (char)('0' + us % 100 / 10), (char)('0' + us % 10), 0};
    putc('.', f);
    fwrite(frac, 1, 3, f);
}

void spp_table_row(spp_out *o, spp_table *t, const spp_val *v)
{
    t->rows++;
    if (t->csv_name && !t->failed && (t->csv || open_csv(o, t) == 0)) {
        FILE *f = t->csv;
        for (int i = 0; i < t->ncols; i++) {
            if (i)
                putc(',', f);
            switch (v[i].kind) {
            case SPP_INT: spp_put_int(f, v[i].i); break;
            case SPP_REAL: fprintf(f, "%.6g", v[i].d); break;
            case SPP_MS: put_ms(f, v[i].d); break;
            case SPP_TEXT: spp_csv_field(f, v[i].s, v[i].n); break;
            default: break;
            }
        }
        putc('\n', f);
    }
    if (t->db_name && t->ins) {
        sqlite3_stmt *st = t->ins;
        for (int i = 0; i < t->ncols; i++) {
            switch (v[i].kind) {
            case SPP_INT: sqlite3_bind_int64(st, i + 1, v[i].i); break;
            case SPP_REAL: case SPP_MS: sqlite3_bind_double(st, i + 1, v[i].d); break;
            /* STATIC: the text outlives the step that copies it into the page. */
            case SPP_TEXT: sqlite3_bind_text(st, i + 1, v[i].s, v[i].n, SQLITE_STATIC); break;
            default: sqlite3_bind_null(st, i + 1); break;
            }
        }
        if (sqlite3_step(st) != SQLITE_DONE && !o->failed) {
            spp_log(SPP_ERROR, "profiler.db: insert into %s failed: %s", t->db_name,
                    sqlite3_errmsg(o->db_conn));
            o->failed = 1;
        }
        sqlite3_reset(st);
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
    if (t->ins)
        sqlite3_finalize(t->ins);
    t->ins = NULL;
    free(t->csv_path);
    t->csv_path = NULL;
    free(t->csv_buf); /* after fclose: stdio used it until then */
    t->csv_buf = NULL;
}

int spp_out_close(spp_out *o)
{
    if (o->db_conn) {
        if (sqlite3_exec(o->db_conn, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            spp_log(SPP_ERROR, "profiler.db: commit failed: %s", sqlite3_errmsg(o->db_conn));
            o->failed = 1;
        }
        sqlite3_close(o->db_conn);
        o->db_conn = NULL;
    }
    return o->failed ? -1 : 0;
}
