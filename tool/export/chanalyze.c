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
 * What differs honestly: "input" (the URL, not a path) and "source"
 * ("clickhouse"). The parse's data-quality counts are the exporter's
 * (table data_quality, one row per export): null, with a note, from an
 * export by an older servprof without them.
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

/* moeset.c's default_names (an export parses with them: no --moe-names);
 * only MoE records name MoE ranks (a KV pull's `rank` is another rank). */
#define MOE_NAMES "'MoeDistributeDispatch', 'GroupedMatmul', " \
                  "'aclnnGroupedMatmulV4_GroupedMatmul_GroupedMatmul', 'MoeDistributeCombine'"
#define RANK_RE "\"rank\"[[:space:]]*:[[:space:]]*(-?[0-9]+)"

/* --host's subquery per kind of row: the ids HOST's records name; HOST's
 * processes; the ids of HOST's coordinator records (a coordinator row is
 * made by the coordinator's records: local analyze of a prefill or decode
 * host alone has none); the expert-parallel ranks of HOST's records, under
 * the labels moe_rank gives them (moeset.c: the `rank` attribute, else the
 * process id; "R@PID" when two processes say the same rank). */
static const char *host_subquery(int by)
{
    switch (by) {
    case CHS_BY_PROC: return "SELECT DISTINCT prof_id FROM %s.span WHERE host = %s";
    case CHS_BY_COORD:
        return "SELECT DISTINCT arrayJoin(rids) FROM %s.span WHERE host = %s AND domain = 'Coordinator'";
    case CHS_BY_RANK: /* extract, not visitParamExtractInt: that one reads no space after the colon */
        return "SELECT DISTINCT arrayJoin(if(extract(args, '" RANK_RE "') != '', "
               "[extract(args, '" RANK_RE "'), concat(extract(args, '" RANK_RE "'), '@', toString(pid))], "
               "[toString(pid), concat(toString(pid), '@', toString(pid))])) FROM %s.span WHERE host = %s "
               "AND name IN (" MOE_NAMES ")";
    default: return "SELECT DISTINCT arrayJoin(rids) FROM %s.span WHERE host = %s";
    }
}

/* GLOBAL IN: the subquery over the span table runs once, not once per
 * shard (and a Distributed IN inside a Distributed query is refused by
 * default). */
const char *chs_where(const ch_src *x, int by, char *w, size_t cap)
{
    if (!x->host[0] || by == CHS_BY_NONE)
        return x->where;
    static const char *const col[] = {[CHS_BY_RID] = "rid", [CHS_BY_HTTP_RID] = "http_rid",
                                      [CHS_BY_PROC] = "prof_id", [CHS_BY_COORD] = "rid", [CHS_BY_RANK] = "rank"};
    char subq[2400];
    snprintf(subq, sizeof subq, host_subquery(by), x->db, x->host);
    if (!x->where[0])
        snprintf(w, cap, "WHERE %s GLOBAL IN (%s)", col[by], subq);
    else
        snprintf(w, cap, "%s AND %s GLOBAL IN (%s)", x->where, col[by], subq);
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
    return ch_conn_spill(&x->c, x->err, sizeof x->err);
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

/* The exports analyzed (the session's, or every one): how many the exports
 * table lists; -1 on an error. */
static long long count_exports(ch_src *x)
{
    char sql[9000];
    snprintf(sql, sizeof sql, "SELECT uniqExact(export_id) FROM %s.exports %s FORMAT TabSeparated", x->db, x->where);
    if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0)
        return -1;
    return atoll(x->c.resp);
}

static void quality_note(const char *why)
{
    fprintf(stderr, "servprof analyze: note: %s: the parse's data-quality counts (duplicate_ids, "
            "figures_left_empty) are unknown (null)\n", why);
}

/* The parse's data-quality counts, one row per export (clickhouse.c,
 * put_quality), summed over the exports analyzed; the first export's
 * example. any() per export_id: a row stored twice (two exports of the
 * same stores at once) still counts once. Known only when every export
 * analyzed has its row: an export by an older servprof has none (a note,
 * and null as from a profiler.db). With --host the counts are the whole
 * export's, not the host's: kept only when they are zero (then a part of
 * the export has none either), else null. */
static int fill_quality(ch_src *x, sa_ingest *g)
{
    char why[600];
    if (!chs_table_exists(x, "data_quality") || !chs_table_exists(x, "exports")) {
        if (x->err[0])
            return -1;
        snprintf(why, sizeof why, "database %s has no data_quality table (an export by an older servprof)",
                 x->dbname);
        quality_note(why);
        return 0;
    }
    long long want = count_exports(x);
    if (want < 0)
        return -1;
    char sql[18000];
    snprintf(sql, sizeof sql, "SELECT any(duplicate_ids), any(figures_left_empty), any(duplicate_example) "
             "FROM %s.data_quality WHERE export_id GLOBAL IN (SELECT export_id FROM %s.exports %s) "
             "GROUP BY export_id ORDER BY export_id FORMAT TabSeparated", x->db, x->db, x->where);
    if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0)
        return -1;
    long long got = 0, dup = 0, empty = 0;
    char example[320] = "";
    char *save = NULL;
    for (char *line = strtok_r(x->c.resp, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t2)
            continue;
        long long d = atoll(line), e = atoll(t1 + 1);
        char *ex = t2 + 1;
        ex[chs_unescape(ex, strlen(ex))] = 0;
        if (d > 0 && !example[0])
            snprintf(example, sizeof example, "%s", ex);
        got++, dup += d, empty += e;
    }
    if (got < want) {
        snprintf(why, sizeof why, "%lld of the %lld export(s) in database %s have no data_quality row (exported "
                 "by an older servprof)", want - got, want, x->dbname);
        quality_note(why);
        return 0;
    }
    if (x->host[0] && (dup || empty)) {
        snprintf(why, sizeof why, "with --host, the export's counts (%lld, %lld) are not the host's", dup, empty);
        quality_note(why);
        return 0;
    }
    sa_profile *p = sa_ingest_profile(g);
    p->quality_known = 1;
    p->dup_ids = dup;
    p->empty_figures = empty;
    snprintf(p->dup_example, sizeof p->dup_example, "%s", example);
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
    if (chs_fill_reports(x, g) != 0 || chs_fill_spans(x, g) != 0 || fill_quality(x, g) != 0)
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
