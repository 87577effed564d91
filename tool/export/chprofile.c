/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chprofile.c — fills analyze's profile from the report tables `servprof
 * export` wrote to ClickHouse (request, batch, forward, the PD reports,
 * coordinator, moe_rank, expert_load): each row is fetched and fed through
 * analyze's own row handler (sa_ingest_row), so the profile is the one a
 * local analyze of the same stores builds, and every figure computed from
 * it (budget, windows, findings, TTFT breakdown, ...) is the same by
 * construction.
 *
 * These queries return rows, not aggregates: one per request, one per
 * step (batch and forward rows), one per PD hand-off or KV pull — report
 * rows, orders of magnitude fewer than records. The busy/stalled/idle
 * sweeps and the findings walk ordered steps, which SQL on 18.16 (no
 * window functions) cannot do. Only the columns the row handler reads are
 * fetched (sa_ingest_columns). The rows come as TabSeparated, which
 * ClickHouse writes with the shortest text that reads back to the same
 * double, in (export_id, seq) order — the parse's own order — in pages of
 * that key (chpage.c: no query's memory on the server grows with the
 * table), and are handed over line by line as they arrive
 * (ch_query_lines): nothing holds the whole answer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chpage.h"
#include "chsrc.h"
#include "repcols.h"

#define MAXCOLS 64

enum { K_TEXT, K_INT, K_REAL };

typedef struct feed {
    ch_src *x;
    sa_ingest *g;
    const char *key;
    prs_col cols[MAXCOLS];
    char *names[MAXCOLS];
    int kind[MAXCOLS];
    int ncols;
    prs_val v[MAXCOLS];
} feed;

size_t chs_unescape(char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            c = s[++i];
            switch (c) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case '0': c = '\0'; break;
            default: break; /* \\ \' and anything else: the character itself */
            }
        }
        s[k++] = c;
    }
    return k;
}

static int on_row(void *ctx, char *s, size_t n)
{
    feed *f = ctx;
    char *e = s + n;
    for (int i = 0; i < f->ncols; i++) {
        if (s > e) {
            snprintf(f->x->err, sizeof f->x->err, "%s: table %s answered a row of %d columns where %d were asked: %.100s",
                     f->x->c.label, f->key, i, f->ncols, f->x->c.resp);
            return -1;
        }
        char *tab = memchr(s, '\t', (size_t)(e - s));
        char *end = tab ? tab : e;
        size_t len = (size_t)(end - s);
        *end = 0;
        prs_val *v = &f->v[i];
        memset(v, 0, sizeof *v);
        if (len == 2 && s[0] == '\\' && s[1] == 'N') {
            v->kind = PRS_NULL;
        } else if (f->kind[i] == K_TEXT) {
            v->kind = PRS_TEXT;
            v->s = s;
            v->n = (int)chs_unescape(s, len);
        } else {
            char *q;
            if (f->kind[i] == K_INT) {
                v->kind = PRS_INT;
                v->i = strtoll(s, &q, 10);
            } else {
                v->kind = PRS_REAL;
                v->d = strtod(s, &q);
            }
            if (q == s || q != end) {
                snprintf(f->x->err, sizeof f->x->err, "%s: table %s, column %s: '%.60s' is not a number",
                         f->x->c.label, f->key, f->names[i], s);
                return -1;
            }
        }
        s = end + 1;
    }
    f->x->rows++;
    f->x->bytes += (long long)n + 1;
    sa_ingest_row(f->g, f->key, f->cols, f->ncols, f->v);
    return 0;
}

/* 1 when analyze's row handler reads column col of table t. */
static int wanted(const char *t, const char *col)
{
    int n;
    const char *const *names = sa_ingest_columns(t, &n);
    for (int i = 0; names && i < n; i++)
        if (!strcmp(names[i], col))
            return 1;
    return 0;
}

/* The columns of table t that analyze reads, with their kinds. */
static int list_columns(ch_src *x, feed *f, const char *t)
{
    char sql[1024], a[300], b[300];
    ch_quote(x->dbname, a, sizeof a);
    ch_quote(t, b, sizeof b);
    snprintf(sql, sizeof sql,
             "SELECT name, type FROM system.columns WHERE database = %s AND table = %s "
             "AND name NOT IN ('export_id', 'seq') FORMAT TabSeparated", a, b);
    if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0)
        return -1;
    f->ncols = 0;
    char *save = NULL;
    for (char *line = strtok_r(x->c.resp, "\n", &save); line && f->ncols < MAXCOLS;
         line = strtok_r(NULL, "\n", &save)) {
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        *tab = 0;
        size_t nl = chs_unescape(line, strlen(line));
        line[nl] = 0;
        const char *type = tab + 1;
        if (!wanted(t, line))
            continue; /* a column analyze does not read: not fetched */
        int k = f->ncols++;
        f->names[k] = strdup(line);
        f->cols[k].name = f->names[k];
        f->kind[k] = strstr(type, "Float") ? K_REAL : strstr(type, "Int") ? K_INT : K_TEXT;
    }
    return 0;
}

static int has_col(const feed *f, const char *name)
{
    for (int i = 0; i < f->ncols; i++)
        if (!strcmp(f->names[i], name))
            return 1;
    return 0;
}

/* The columns without which a table's rows mean nothing (an error), and
 * the one a later release added (a note: read as profiler.db reads an
 * older file without it). */
static int check_columns(ch_src *x, const feed *f, const char *t)
{
    static const char *const need_rq[] = {PRS_RQ_HTTP_RID, PRS_RQ_START_MS, NULL};
    static const char *const need_st[] = {PRS_BT_START_MS, PRS_BT_END_MS, NULL};
    const char *const *need = !strcmp(t, PRS_T_REQUEST) ? need_rq
                              : !strcmp(t, PRS_T_BATCH) || !strcmp(t, PRS_T_FORWARD) ? need_st : NULL;
    for (int i = 0; need && need[i]; i++)
        if (!has_col(f, need[i])) {
            snprintf(x->err, sizeof x->err,
                     "%s: table %s.%s has no column `%s`: not the request/step report servprof export writes "
                     "(export the run again into a new database)", x->c.label, x->dbname, t, need[i]);
            return -1;
        }
    if (!strcmp(t, PRS_T_REQUEST) && !has_col(f, PRS_RQ_COMPLETE))
        fprintf(stderr, "servprof analyze: note: table %s.request has no column `complete` (an export by an older "
                "servprof): every request with an end counts as complete\n", x->dbname);
    return 0;
}

static int fill_table(ch_src *x, sa_ingest *g, const char *t, int by)
{
    if (!chs_table_exists(x, t))
        return x->err[0] ? -1 : 0; /* absent: that part of the profile stays empty, as from profiler.db */
    feed *f = calloc(1, sizeof *f);
    f->x = x;
    f->g = g;
    f->key = t;
    int rc = list_columns(x, f, t);
    if (rc == 0)
        rc = check_columns(x, f, t);
    if (rc == 0 && f->ncols > 0) {
        size_t cap = (size_t)f->ncols * 300 + 16;
        char *cols = malloc(cap), *wbuf = malloc(12000), from[300];
        if (!cols || !wbuf) {
            snprintf(x->err, sizeof x->err, "out of memory reading table %s", t);
            rc = -1;
        }
        for (int i = 0, n = 0; rc == 0 && i < f->ncols; i++) {
            char id[300];
            ch_ident(f->names[i], id, sizeof id);
            n += snprintf(cols + n, cap - (size_t)n, "%s%s", i ? ", " : "", id);
        }
        snprintf(from, sizeof from, "%s.%s", x->db, t);
        ch_pages pg = {.table = t, .cols = cols, .from = from, .format = "TabSeparated", .line = on_row, .ctx = f};
        if (rc == 0) {
            pg.where = chs_where(x, by, wbuf, 12000);
            rc = ch_read_pages(&x->c, &pg, x->err, sizeof x->err);
        }
        free(cols);
        free(wbuf);
    }
    for (int i = 0; i < f->ncols; i++)
        free(f->names[i]);
    free(f);
    return rc;
}

int chs_fill_reports(ch_src *x, sa_ingest *g)
{
    /* the order of profiler.db's read-back (ingest.c load_db): processes
     * are numbered by first sight, batch rows before forward rows */
    static const struct { const char *t; int by; } tabs[] = {
        {PRS_T_REQUEST, CHS_BY_HTTP_RID}, {PRS_T_BATCH, CHS_BY_PROC},   {PRS_T_FORWARD, CHS_BY_PROC},
        {PRS_T_PD_COMM, CHS_BY_RID},      {PRS_T_PD_KV, CHS_BY_RID},    {PRS_T_COORDINATOR, CHS_BY_COORD},
        {PRS_T_MOE_RANK, CHS_BY_RANK},    {PRS_T_EXPERT_LOAD, CHS_BY_RANK}};
    for (size_t i = 0; i < sizeof tabs / sizeof *tabs; i++)
        if (fill_table(x, g, tabs[i].t, tabs[i].by) != 0)
            return -1;
    return 0;
}
