/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chread.c — the report tables of an export, read back out of ClickHouse
 * as the parser's rows (chread.h), for `servprof report --from`.
 *
 * Design. Per table, every column the export wrote but its (export_id,
 * seq) key, in the order of ORDER BY export_id, seq: the order the parse
 * made the rows in, so the charts fed from here see what a local parse
 * would hand them. The rows come in pages of that key (chpage.c), so no
 * query's memory on the server grows with the table. The answers come in
 * RowBinary and are decoded as they arrive (ch_query_stream): nothing holds
 * the whole table, and a Float64 comes back as the very 8 bytes the export
 * sent (a text format would have to round-trip every double through
 * decimal). Column types are read from system.columns first; the export
 * writes Nullable(Int64 | Float64 | String), and the plain forms are read
 * too.
 *
 * A 200 answer may still end with an exception's text (ClickHouse writes
 * it into the body when a query fails after it began): a page whose body
 * does not end on a whole row is reported as failed, with that text.
 *
 * Filters follow analyze --from (tool/export/chanalyze.c): --session keeps
 * the exports the `exports` table lists for it; --host keeps requests whose
 * id a record of the host names (column http_rid), steps of the host's
 * processes (prof_id) and counters of its pids (pid), through GLOBAL IN
 * subqueries over `span` (run once a page, not once per shard).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chhttp.h"
#include "chpage.h"
#include "chread.h"

#define MAXC 256

struct ch_reader {
    ch_conn c;
    char dbname[128];
    char db[140];           /* `db` */
    char label[600];
    char host[600];         /* --host as a quoted literal, "" for every host */
    char *where;            /* "export_id IN (...)" for --session, "" for all (owned) */
};

enum { T_I64 = 1, T_U64, T_I32, T_U32, T_U8, T_F64, T_F32, T_STR };

typedef struct dec {        /* one table's answer being decoded */
    int ncols;
    int type[MAXC], nullable[MAXC];
    prs_col cols[MAXC];
    prs_val v[MAXC];
    const char *table;
    ch_row_fn fn;
    void *ctx;
    unsigned char *buf;     /* bytes not yet decoded (a row cut by a chunk's end) */
    size_t n, cap;
    char *scratch;          /* the row's strings, NUL-terminated */
    size_t scap;
    long long rows;
    int oom;
} dec;

static int type_of(const char *t, int *nullable)
{
    static const struct { const char *n; int t; } k[] = {
        {"Int64", T_I64}, {"UInt64", T_U64}, {"Int32", T_I32}, {"UInt32", T_U32}, {"UInt8", T_U8},
        {"Float64", T_F64}, {"Float32", T_F32}, {"String", T_STR}};
    char b[128];
    *nullable = !strncmp(t, "Nullable(", 9);
    snprintf(b, sizeof b, "%s", *nullable ? t + 9 : t);
    if (*nullable && strchr(b, ')'))
        *strchr(b, ')') = 0;
    for (size_t i = 0; i < sizeof k / sizeof *k; i++)
        if (!strcmp(b, k[i].n))
            return k[i].t;
    return 0;
}

static int varint(const unsigned char *p, size_t n, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int sh = 0; sh < 64; sh += 7) {
        if (*pos >= n)
            return 0;
        unsigned char b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* One row from d->buf at *pos: 1 decoded (handed to fn), 0 not all there yet. */
static int one_row(dec *d, size_t *pos)
{
    const unsigned char *p = d->buf;
    size_t at = *pos, sused = 0;
    /* strings are laid out in scratch first, pointers fixed after (scratch may move) */
    size_t soff[MAXC];
    for (int c = 0; c < d->ncols; c++) {
        if (d->nullable[c]) {
            if (at >= d->n)
                return 0;
            if (p[at++]) {
                d->v[c] = prs_v_null();
                soff[c] = SIZE_MAX;
                continue;
            }
        }
        soff[c] = SIZE_MAX;
        int64_t i64;
        double f;
        switch (d->type[c]) {
        case T_I64: case T_U64: case T_F64:
            if (d->n - at < 8)
                return 0;
            if (d->type[c] == T_F64) {
                memcpy(&f, p + at, 8);
                d->v[c] = prs_v_real(f);
            } else {
                memcpy(&i64, p + at, 8);
                d->v[c] = prs_v_int((long long)i64);
            }
            at += 8;
            break;
        case T_I32: case T_U32: case T_F32: {
            if (d->n - at < 4)
                return 0;
            int32_t i32;
            uint32_t u32;
            float f32;
            memcpy(&i32, p + at, 4);
            memcpy(&u32, p + at, 4);
            memcpy(&f32, p + at, 4);
            d->v[c] = d->type[c] == T_I32 ? prs_v_int(i32) : d->type[c] == T_U32 ? prs_v_int(u32) : prs_v_real(f32);
            at += 4;
            break;
        }
        case T_U8:
            if (at >= d->n)
                return 0;
            d->v[c] = prs_v_int(p[at++]);
            break;
        case T_STR: {
            uint64_t len;
            if (!varint(p, d->n, &at, &len) || d->n - at < len)
                return 0;
            if (sused + len + 1 > d->scap) {
                size_t cap = d->scap ? d->scap : 4096;
                while (cap < sused + len + 1)
                    cap *= 2;
                char *s = realloc(d->scratch, cap);
                if (!s) {
                    d->oom = 1;
                    return 0;
                }
                d->scratch = s;
                d->scap = cap;
            }
            memcpy(d->scratch + sused, p + at, len);
            d->scratch[sused + len] = 0;
            soff[c] = sused;
            d->v[c] = prs_v_text("", (int)len);
            sused += len + 1;
            at += len;
            break;
        }
        }
    }
    for (int c = 0; c < d->ncols; c++)
        if (soff[c] != SIZE_MAX)
            d->v[c].s = d->scratch + soff[c];
    *pos = at;
    d->rows++;
    d->fn(d->ctx, d->table, d->cols, d->ncols, d->v);
    return 1;
}

static size_t sink(const char *p, size_t n, void *ctx)
{
    dec *d = ctx;
    if (d->n + n > d->cap) {
        size_t cap = d->cap ? d->cap : 1 << 16;
        while (cap < d->n + n)
            cap *= 2;
        unsigned char *b = realloc(d->buf, cap);
        if (!b) {
            d->oom = 1;
            return 0;
        }
        d->buf = b;
        d->cap = cap;
    }
    memcpy(d->buf + d->n, p, n);
    d->n += n;
    size_t pos = 0;
    while (pos < d->n && one_row(d, &pos))
        ;
    if (d->oom)
        return 0;
    memmove(d->buf, d->buf + pos, d->n - pos);
    d->n -= pos;
    return n;
}

const char *ch_reader_label(const ch_reader *r) { return r->label; }

void ch_reader_close(ch_reader *r)
{
    if (!r)
        return;
    ch_conn_close(&r->c);
    free(r->where);
    free(r);
}

static int count_of(ch_reader *r, const char *sql, long long *out, char *err, size_t cap)
{
    if (ch_query(&r->c, sql, err, cap) != 0)
        return -1;
    *out = atoll(r->c.resp ? r->c.resp : "0");
    return 0;
}

ch_reader *ch_reader_open(const char *url, const char *session, const char *host_only, char *err, size_t cap)
{
    ch_reader *r = calloc(1, sizeof *r);
    char host[256] = "", user[128] = "", sql[2048];
    int port = 8123;
    if (!r) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    const char *s = strstr(url, "://");
    if (!s || strncmp(url, "clickhouse://", 13) != 0) {
        snprintf(err, cap, "%s: expected clickhouse://HOST:PORT/DATABASE", url);
        goto fail;
    }
    s += 3;
    const char *at = strchr(s, '@');
    if (at && at < s + strcspn(s, "/")) {
        snprintf(user, sizeof user, "%.*s", (int)strcspn(s, ":@"), s);
        s = at + 1;
    }
    size_t hl = strcspn(s, ":/");
    snprintf(host, sizeof host, "%.*s", (int)hl, s);
    if (s[hl] == ':') {
        char *e;
        long p = strtol(s + hl + 1, &e, 10);
        if ((*e && *e != '/') || p <= 0 || p > 65535) {
            snprintf(err, cap, "%s: the port is not a number from 1 to 65535", url);
            goto fail;
        }
        port = (int)p;
    }
    const char *slash = strchr(s, '/');
    snprintf(r->dbname, sizeof r->dbname, "%s", slash && slash[1] ? slash + 1 : "servprof");
    r->dbname[strcspn(r->dbname, "/?")] = 0;
    for (const char *c = r->dbname; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')) {
            snprintf(err, cap, "%s: database name '%s': letters, digits and '_' only", url, r->dbname);
            goto fail;
        }
    ch_ident(r->dbname, r->db, sizeof r->db);
    if (!host[0]) {
        snprintf(err, cap, "%s: no host (expected clickhouse://HOST:PORT/DATABASE)", url);
        goto fail;
    }
    const char *pw = getenv("SERVPROF_CLICKHOUSE_PASSWORD");
    const char *eu = getenv("SERVPROF_CLICKHOUSE_USER");
    if (!user[0])
        snprintf(user, sizeof user, "%s", eu && *eu ? eu : "default");
    if (ch_conn_init(&r->c, host, port, user, pw ? pw : "", 0) != 0) {
        snprintf(err, cap, "%s: libcurl could not start", url);
        goto fail;
    }
    snprintf(r->label, sizeof r->label, "clickhouse://%s:%d/%s", host, port, r->dbname);
    if (host_only)
        ch_quote(host_only, r->host, sizeof r->host);
    if (ch_ping(&r->c, err, cap) != 0 || ch_conn_spill(&r->c, err, cap) != 0)
        goto fail;
    char lit[300];
    ch_quote(r->dbname, lit, sizeof lit);
    long long n = 0;
    snprintf(sql, sizeof sql, "SELECT count() FROM system.tables WHERE database = %s AND name = 'request' "
             "FORMAT TabSeparated", lit);
    if (count_of(r, sql, &n, err, cap) != 0)
        goto fail;
    if (n == 0) {
        snprintf(err, cap, "%s: database %s has no request table: export a run into it first "
                 "(servprof export DIR --to %s --create)", r->c.label, r->dbname, r->label);
        goto fail;
    }
    r->where = strdup("");
    if (session) {
        char slit[600];
        ch_quote(session, slit, sizeof slit);
        snprintf(sql, sizeof sql, "SELECT DISTINCT export_id FROM %s.exports WHERE session = %s FORMAT TabSeparated",
                 r->db, slit);
        if (ch_query(&r->c, sql, err, cap) != 0)
            goto fail;
        size_t len = strlen(r->c.resp) * 2 + 64, k = 0;
        char *w = malloc(len);
        if (!w) {
            snprintf(err, cap, "out of memory");
            goto fail;
        }
        k += (size_t)snprintf(w, len, "export_id IN (''");
        int any = 0;
        for (char *line = strtok(r->c.resp, "\n"); line; line = strtok(NULL, "\n")) {
            char l[64];
            ch_quote(line, l, sizeof l);
            k += (size_t)snprintf(w + k, len - k, ", %s", l);
            any = 1;
        }
        snprintf(w + k, len - k, ")");
        free(r->where);
        r->where = w;
        if (!any) {
            snprintf(err, cap, "%s: no export of session '%s' in database %s", r->c.label, session, r->dbname);
            goto fail;
        }
    }
    return r;
fail:
    ch_reader_close(r);
    return NULL;
}

/* After each page: its answer must end on a whole row (an exception text
 * ClickHouse wrote after its 200 does not), or the next page's bytes would
 * be decoded after it. */
static int page_end(void *ctx, char *err, size_t cap)
{
    dec *d = ctx;
    if (!d->n)
        return 0;
    snprintf(err, cap, "the answer ended inside a row (%zu bytes left: \"%.*s\")", d->n,
             (int)(d->n < 200 ? d->n : 200), (const char *)d->buf);
    return -1;
}

int ch_reader_table(ch_reader *r, const char *table, ch_row_fn fn, void *ctx, long long *nrows, char *err,
                    size_t cap)
{
    char sql[8192], dl[300], tl[300];
    *nrows = 0;
    ch_quote(r->dbname, dl, sizeof dl);
    ch_quote(table, tl, sizeof tl);
    snprintf(sql, sizeof sql, "SELECT name, type FROM system.columns WHERE database = %s AND table = %s "
             "FORMAT TabSeparated", dl, tl);
    if (ch_query(&r->c, sql, err, cap) != 0)
        return -1;
    dec *d = calloc(1, sizeof *d);
    char *names = strdup(r->c.resp ? r->c.resp : "");
    char *q = malloc(65536);
    int rc = -1;
    if (!d || !names || !q) {
        snprintf(err, cap, "out of memory reading table %s", table);
        goto out;
    }
    d->table = table;
    d->fn = fn;
    d->ctx = ctx;
    int has_rid = 0, has_prof = 0, has_pid = 0, has_key = 0;
    size_t k = (size_t)snprintf(q, 65536, "SELECT ");
    for (char *line = strtok(names, "\n"); line; line = strtok(NULL, "\n")) {
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        *tab = 0;
        const char *type = tab + 1;
        /* TabSeparated escapes \ and tab in names; report columns have neither */
        if (!strcmp(line, "export_id") || !strcmp(line, "seq")) {
            has_key++;
            continue;
        }
        if (d->ncols == MAXC) {
            snprintf(err, cap, "%s: table %s has more than %d columns", r->label, table, MAXC);
            goto out;
        }
        int t = type_of(type, &d->nullable[d->ncols]);
        if (!t) {
            snprintf(err, cap, "%s: table %s: column %s has type %s, not one servprof export writes", r->label,
                     table, line, type);
            goto out;
        }
        has_rid |= !strcmp(line, "http_rid");
        has_prof |= !strcmp(line, "prof_id");
        has_pid |= !strcmp(line, "pid");
        d->type[d->ncols] = t;
        d->cols[d->ncols].name = line;
        d->cols[d->ncols].sqltype = t == T_STR ? "TEXT" : (t == T_F64 || t == T_F32) ? "REAL" : "INTEGER";
        char id[300];
        ch_ident(line, id, sizeof id);
        k += (size_t)snprintf(q + k, 65536 - k, "%s%s", d->ncols ? ", " : "", id);
        d->ncols++;
    }
    if (d->ncols == 0) {
        rc = 1; /* not there */
        goto out;
    }
    if (has_key != 2) {
        snprintf(err, cap, "%s: table %s has no (export_id, seq) columns: not a table servprof export made",
                 r->label, table);
        goto out;
    }
    char tid[300], from[600];
    ch_ident(table, tid, sizeof tid);
    snprintf(from, sizeof from, "%s.%s", r->db, tid);
    size_t wcap = strlen(r->where) + 4096, w = 0;
    char *where = malloc(wcap);
    if (!where) {
        snprintf(err, cap, "out of memory reading table %s", table);
        goto out;
    }
    const char *glue = "WHERE ";
    where[0] = 0;
    if (r->where[0]) {
        w += (size_t)snprintf(where + w, wcap - w, "%s%s", glue, r->where);
        glue = " AND ";
    }
    if (r->host[0]) {
        const char *f = has_rid ? "http_rid GLOBAL IN (SELECT DISTINCT arrayJoin(rids) FROM %s.span WHERE host = %s)"
                        : has_prof ? "prof_id GLOBAL IN (SELECT DISTINCT prof_id FROM %s.span WHERE host = %s)"
                        : has_pid ? "pid GLOBAL IN (SELECT DISTINCT pid FROM %s.span WHERE host = %s)" : NULL;
        w += (size_t)snprintf(where + w, wcap - w, "%s", glue);
        if (f)
            w += (size_t)snprintf(where + w, wcap - w, f, r->db, r->host);
        else /* a table that names no host: none of its rows is the host's */
            snprintf(where + w, wcap - w, "0");
    }
    ch_pages pg = {.table = table, .cols = q + 7, .from = from, .where = where, .format = "RowBinary",
                   .sink = sink, .page_end = page_end, .ctx = d};
    int prc = ch_read_pages(&r->c, &pg, err, cap);
    free(where);
    if (prc != 0) {
        if (d->oom)
            snprintf(err, cap, "%s: out of memory reading table %s", r->label, table);
        goto out;
    }
    *nrows = d->rows;
    rc = 0;
out:
    if (d) {
        free(d->buf);
        free(d->scratch);
    }
    free(d);
    free(names);
    free(q);
    return rc;
}
