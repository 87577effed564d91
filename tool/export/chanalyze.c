/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chanalyze.c — `servprof analyze --from clickhouse://HOST:PORT/DB`: the
 * whole analyze document over the tables `servprof export` wrote
 * (docs/fleet.md), equal to a local `servprof analyze` of the same stores.
 *
 * The design: analyze computes everything from a profile (tool/analyze,
 * profile.h). This module connects, resolves --session to its exports and
 * --host to a filter, and fills that profile from ClickHouse — the report
 * rows through analyze's own row handler (chprofile.c), the per-record
 * span table as per-name aggregates the engine computes on its shards
 * (chspans.c) — and then runs the very same document code (doc.c, budget.c,
 * findings.c, pdfind.c, moefind.c). Equality with local analyze is so by
 * construction, not by a second implementation of each figure.
 *
 * What differs honestly: "input" (the URL, not a path), "source"
 * ("clickhouse") and the parse's data-quality counts, which are the
 * parse's and not stored in the database (null, as from a profiler.db).
 * Every query is plain SQL that ClickHouse 18.16 runs (no CTE, window
 * function, JSONExtract) and current releases too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "chanalyze.h"
#include "chsrc.h"
#include "profile.h"
#include "render.h"

int chs_table_exists(ch_src *x, const char *t)
{
    char sql[1024], a[300], b[300];
    ch_quote(x->dbname, a, sizeof a);
    ch_quote(t, b, sizeof b);
    snprintf(sql, sizeof sql, "SELECT count() FROM system.tables WHERE database = %s AND name = %s FORMAT TabSeparated",
             a, b);
    x->err[0] = 0;
    return ch_query(&x->c, sql, x->err, sizeof x->err) == 0 && atoi(x->c.resp) > 0;
}

/* GLOBAL IN: the subquery over the span table runs once, not once per
 * shard (and a Distributed IN inside a Distributed query is refused by
 * default). */
const char *chs_where(const ch_src *x, int by, char *w, size_t cap)
{
    if (!x->host[0] || by == CHS_BY_NONE)
        return x->where;
    const char *col = by == CHS_BY_PROC ? "prof_id" : by == CHS_BY_HTTP_RID ? "http_rid" : "rid";
    const char *sub = by == CHS_BY_PROC ? "SELECT DISTINCT prof_id FROM %s.span WHERE host = %s"
                                        : "SELECT DISTINCT arrayJoin(rids) FROM %s.span WHERE host = %s";
    char subq[1200];
    snprintf(subq, sizeof subq, sub, x->db, x->host);
    if (!x->where[0])
        snprintf(w, cap, "WHERE %s GLOBAL IN (%s)", col, subq);
    else
        snprintf(w, cap, "%s AND %s GLOBAL IN (%s)", x->where, col, subq);
    return w;
}

/* Connects to url's node and checks that the database holds an export. */
static int open_src(ch_src *x, const char *url, char *err, size_t errcap)
{
    char host[256] = "", user[128] = "";
    int port = 8123;
    snprintf(x->url, sizeof x->url, "%s", url);
    const char *s = strstr(url, "://");
    s = s ? s + 3 : url;
    const char *at = strchr(s, '@');
    if (at && at < s + strcspn(s, "/")) {
        snprintf(user, sizeof user, "%.*s", (int)strcspn(s, ":@"), s);
        s = at + 1;
    }
    size_t hl = strcspn(s, ":/");
    snprintf(host, sizeof host, "%.*s", (int)hl, s);
    if (s[hl] == ':')
        port = atoi(s + hl + 1);
    const char *slash = strchr(s, '/');
    snprintf(x->dbname, sizeof x->dbname, "%s", slash && slash[1] ? slash + 1 : "servprof");
    x->dbname[strcspn(x->dbname, "/?")] = 0;
    ch_ident(x->dbname, x->db, sizeof x->db);
    const char *pw = getenv("SERVPROF_CLICKHOUSE_PASSWORD");
    const char *eu = getenv("SERVPROF_CLICKHOUSE_USER");
    if (!user[0])
        snprintf(user, sizeof user, "%s", eu && *eu ? eu : "default");
    if (!host[0] || port <= 0 || ch_conn_init(&x->c, host, port, user, pw ? pw : "", 0) != 0) {
        snprintf(err, errcap, "%s: expected clickhouse://HOST:PORT/DATABASE", url);
        return -1;
    }
    if (ch_ping(&x->c, x->err, sizeof x->err) != 0)
        return -1;
    if (!chs_table_exists(x, "request")) {
        if (!x->err[0])
            snprintf(x->err, sizeof x->err, "%s: database %s has no request table: export a run into it first "
                     "(servprof export DIR --to %s --create)", x->c.label, x->dbname, url);
        return -1;
    }
    return 0;
}

/* --session: the exports of that session (the exports table). */
static int pick_session(ch_src *x, const char *session)
{
    char sql[2048];
    ch_quote(session, x->session, sizeof x->session);
    if (!chs_table_exists(x, "exports")) {
        if (!x->err[0])
            snprintf(x->err, sizeof x->err, "%s: database %s has no exports table, so no session to pick: "
                     "export with this release (servprof export DIR --to URL --session S)", x->c.label, x->dbname);
        return -1;
    }
    snprintf(sql, sizeof sql, "SELECT DISTINCT export_id FROM %s.exports WHERE session = %s ORDER BY export_id "
             "FORMAT TabSeparated", x->db, x->session);
    if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0)
        return -1;
    size_t n = (size_t)snprintf(x->where, sizeof x->where, "WHERE export_id IN (''");
    for (char *line = strtok(x->c.resp, "\n"); line; line = strtok(NULL, "\n")) {
        char l[64];
        ch_quote(line, l, sizeof l);
        n += (size_t)snprintf(x->where + n, sizeof x->where - n, ", %s", l);
    }
    snprintf(x->where + n, sizeof x->where - n, ")");
    if (!strcmp(x->where, "WHERE export_id IN ('')")) {
        snprintf(x->err, sizeof x->err, "%s: no export of session '%s' in database %s", x->c.label, session,
                 x->dbname);
        return -1;
    }
    return 0;
}

sa_profile *sa_profile_load_clickhouse(const char *url, const char *session, const char *host_only, char *err,
                                       size_t errcap)
{
    ch_src *x = calloc(1, sizeof *x);
    sa_ingest *g = NULL;
    sa_profile *p = NULL;
    if (open_src(x, url, err, errcap) != 0) {
        if (x->err[0])
            snprintf(err, errcap, "%s", x->err);
        goto out;
    }
    if (host_only)
        ch_quote(host_only, x->host, sizeof x->host);
    if (session && pick_session(x, session) != 0)
        goto fail;
    g = sa_ingest_new(x->url);
    if (chs_fill_reports(x, g) != 0 || chs_fill_spans(x, g) != 0)
        goto fail;
    if (getenv("SERVPROF_CH_STATS"))
        fprintf(stderr, "servprof analyze --from: %lld report rows, %lld bytes of answers\n", x->rows, x->bytes);
    p = sa_ingest_finish(g);
    g = NULL;
    p->input = url;
    goto out;
fail:
    snprintf(err, errcap, "%s", x->err[0] ? x->err : "query failed");
out:
    sa_ingest_free(g);
    ch_conn_close(&x->c);
    free(x);
    return p;
}

json_t *sa_analyze_clickhouse(const char *url, const char *session, const char *host_only, const sa_opts *opts,
                              char *err, size_t errcap)
{
    sa_opts o;
    if (opts)
        o = *opts;
    else
        sa_opts_init(&o);
    o.input = url;
    sa_profile *p = sa_profile_load_clickhouse(url, session, host_only, err, errcap);
    if (!p)
        return NULL;
    json_t *doc = sa_document(p, &o);
    sa_profile_free(p);
    json_object_set_new(doc, "source", json_string("clickhouse"));
    return doc;
}

void sa_render_clickhouse_text(json_t *doc, FILE *f) { sa_render_text(doc, f); }
