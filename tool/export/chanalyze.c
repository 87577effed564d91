/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chanalyze.c — `servprof analyze --from clickhouse://HOST:PORT/DB`: the
 * run and headline figures of analyze computed by SQL inside ClickHouse,
 * over the tables `servprof export` wrote (docs/fleet.md).
 *
 * The engine does the per-request and per-step work on its shards and
 * sends back one row of aggregates per query (three queries), never the
 * rows. The figures follow ingest.c/doc.c rule for rule, so they equal
 * local analyze's to the last bit before the document's six-decimal
 * rounding:
 *   - a request is complete when `complete` is absent or non-zero, its
 *     execution time is known and its start > 0; times go to integer ns
 *     as ms_to_ns does (round(ms * 1e3) * 1000);
 *   - percentiles are linear interpolation between closest ranks over
 *     arraySort(groupArray(x)) (numpy's rule, pct.c's sa_pct_at, the
 *     same IEEE operations in the same order); quantilesExact picks an
 *     element and would differ;
 *   - means sum the values in request order (the tuples (seq, x) sorted
 *     by seq), as the C loop does, so even the last bit agrees;
 *   - steps are the batch rows of the engine's step names and every
 *     forward row; the step source is Execute's, else BatchSchedule's,
 *     else forward's (ingest.c finish()); the run's extent spans
 *     requests, steps and the PD reports.
 * Not computed here (named in the document's "not_covered"): the time
 * budget, windows, findings, TTFT breakdown, KV usage and span tables.
 * Every query is plain SQL that ClickHouse 18.16 runs (no CTE, window
 * function, JSONExtract) and current releases too.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "chhttp.h"
#include "chanalyze.h"
#include "profile.h"

typedef struct q {
    ch_conn c;
    char db[140];           /* `db` */
    char dbname[128];
    char where[8192];       /* WHERE export_id IN (...) or "" */
    char host[600];         /* --host as a quoted literal, "" for all hosts */
    char wbuf[4][10000];    /* where_for's answers, one per kind */
    char err[1024];
} q;

enum { W_REQUEST = 0, W_STEPS, W_PD };
/* The WHERE of a table of kind k: the session's exports and, with --host,
 * the rows of that host: requests whose id a record of the host names,
 * steps of the host's processes, PD rows of those ids. GLOBAL IN: the
 * subquery over the span table runs once, not once per shard (and a
 * Distributed IN inside a Distributed query is refused by default). */
static const char *where_for(struct q *x, int k);

static void bq(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    out[k++] = '`';
    for (; *s && k + 4 < cap; s++) {
        if (*s == '`' || *s == '\\')
            out[k++] = '\\';
        out[k++] = *s;
    }
    out[k++] = '`';
    out[k] = 0;
}

/* 1 when table t has column col (system.columns; cached per call site by the caller). */
static int has(q *x, const char *t, const char *col)
{
    char sql[1024], a[300], b[300], c[300];
    ch_quote(x->dbname, a, sizeof a);
    ch_quote(t, b, sizeof b);
    ch_quote(col, c, sizeof c);
    snprintf(sql, sizeof sql,
             "SELECT count() FROM system.columns WHERE database = %s AND table = %s AND name = %s "
             "FORMAT TabSeparated", a, b, c);
    return ch_query(&x->c, sql, x->err, sizeof x->err) == 0 && atoi(x->c.resp) > 0;
}

/* Column col of t as Float64 with NaN for NULL or absent (colmap's num()). */
static void numcol(q *x, const char *t, const char *col, char *out, size_t cap)
{
    char id[300];
    bq(col, id, sizeof id);
    if (has(x, t, col))
        snprintf(out, cap, "ifNull(toFloat64(%s), nan)", id);
    else
        snprintf(out, cap, "nan");
}

/* ms_to_ns(e) of ingest.c: 0 for NaN. */
static void ns_of(const char *e, char *out, size_t cap)
{
    snprintf(out, cap, "if(isNaN(%s), toInt64(0), toInt64(round((%s) * 1e3)) * 1000)", e, e);
}

/* The SELECT items of one sa_pct over array alias A of n = length(A),
 * with mean from S (the values in request order). */
static size_t pct_items(char *o, size_t cap, const char *a, const char *s)
{
    size_t n = 0;
    n += (size_t)snprintf(o + n, cap - n, ", length(%s) AS n_%s", a, a);
    n += (size_t)snprintf(o + n, cap - n, ", if(n_%s = 0, nan, arraySum(%s) / n_%s)", a, s, a);
    n += (size_t)snprintf(o + n, cap - n, ", if(n_%s = 0, nan, %s[1])", a, a);
    static const char *const ps[3] = {"50", "90", "99"};
    for (int k = 0; k < 3; k++) {
        char pos[200];
        snprintf(pos, sizeof pos, "(%s / 100.) * toFloat64(toInt64(n_%s) - 1)", ps[k], a);
        n += (size_t)snprintf(o + n, cap - n,
                              ", if(n_%s = 0, nan, if(floor(%s) >= toFloat64(toInt64(n_%s) - 1), %s[n_%s], "
                              "%s[toUInt64(floor(%s)) + 1] + (%s[toUInt64(floor(%s)) + 2] - %s[toUInt64(floor(%s)) + 1]) "
                              "* (%s - floor(%s))))",
                              a, pos, a, a, a, a, pos, a, pos, a, pos, pos, pos);
    }
    n += (size_t)snprintf(o + n, cap - n, ", if(n_%s = 0, nan, %s[n_%s])", a, a, a);
    return n;
}

static int table_exists(q *x, const char *t)
{
    char sql[1024], a[300], b[300];
    ch_quote(x->dbname, a, sizeof a);
    ch_quote(t, b, sizeof b);
    snprintf(sql, sizeof sql, "SELECT count() FROM system.tables WHERE database = %s AND name = %s FORMAT TabSeparated",
             a, b);
    return ch_query(&x->c, sql, x->err, sizeof x->err) == 0 && atoi(x->c.resp) > 0;
}

/* The tab-separated fields of the one-line answer, as numbers; iv (when
 * not NULL) gets each as an integer too: ns timestamps need all 64 bits. */
static int fields(q *x, double *v, long long *iv, int n)
{
    char *s = x->c.resp;
    for (int i = 0; i < n; i++) {
        char *e;
        if (iv)
            iv[i] = strtoll(s, NULL, 10);
        v[i] = strtod(s, &e);
        if (e == s) {
            if (!strncmp(s, "\\N", 2)) {
                v[i] = NAN;
                e = s + 2;
            } else {
                snprintf(x->err, sizeof x->err, "unexpected answer from %s: %.100s", x->c.label, x->c.resp);
                return -1;
            }
        }
        s = *e ? e + 1 : e;
    }
    return 0;
}

static sa_pct pct_at(const double *v)
{
    sa_pct s = {.n = (long long)v[0], .mean = v[1], .min = v[2], .p50 = v[3], .p90 = v[4], .p99 = v[5], .max = v[6]};
    return s;
}

/* Extent of the steps and PD reports: min start (> 0) and max end, folded into t0/t1. */
static void fold(int64_t *t0, int64_t *t1, long long a, long long b)
{
    if (a > 0 && a < *t0)
        *t0 = a;
    if (b > *t1)
        *t1 = b;
}

static const char *where_for(q *x, int k)
{
    char *w = x->wbuf[k];
    if (!x->host[0])
        return x->where;
    const char *col = k == W_STEPS ? "prof_id" : k == W_REQUEST ? "http_rid" : "rid";
    const char *sub = k == W_STEPS ? "SELECT DISTINCT prof_id FROM %s.span WHERE host = %s"
                                   : "SELECT DISTINCT arrayJoin(rids) FROM %s.span WHERE host = %s";
    char subq[1200];
    snprintf(subq, sizeof subq, sub, x->db, x->host);
    if (!x->where[0])
        snprintf(w, sizeof x->wbuf[k], "WHERE %s GLOBAL IN (%s)", col, subq);
    else
        snprintf(w, sizeof x->wbuf[k], "%s AND %s GLOBAL IN (%s)", x->where, col, subq);
    return w;
}

json_t *sa_analyze_clickhouse(const char *url, const char *session, const char *host_only, char *err,
                              size_t errcap)
{
    q *x = calloc(1, sizeof *x);
    json_t *doc = NULL;
    char host[256] = "", *sql = malloc(65536);
    int port = 8123;
    const char *s = strstr(url, "://");
    s = s ? s + 3 : url;
    const char *at = strchr(s, '@');
    char user[128] = "";
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
    bq(x->dbname, x->db, sizeof x->db);
    if (host_only)
        ch_quote(host_only, x->host, sizeof x->host);
    const char *pw = getenv("SERVPROF_CLICKHOUSE_PASSWORD");
    const char *eu = getenv("SERVPROF_CLICKHOUSE_USER");
    if (!user[0])
        snprintf(user, sizeof user, "%s", eu && *eu ? eu : "default");
    if (!host[0] || port <= 0 || ch_conn_init(&x->c, host, port, user, pw ? pw : "", 0) != 0) {
        snprintf(err, errcap, "%s: expected clickhouse://HOST:PORT/DATABASE", url);
        goto out;
    }
    if (ch_ping(&x->c, x->err, sizeof x->err) != 0)
        goto fail;
    if (!table_exists(x, "request")) {
        if (!x->err[0])
            snprintf(x->err, sizeof x->err, "%s: database %s has no request table: export a run into it first "
                     "(servprof export DIR --to %s --create)", x->c.label, x->dbname, url);
        goto fail;
    }
    /* which exports: --session picks them from the exports table */
    if (session) {
        char lit[600];
        ch_quote(session, lit, sizeof lit);
        snprintf(sql, 65536, "SELECT DISTINCT export_id FROM %s.exports WHERE session = %s FORMAT TabSeparated", x->db,
                 lit);
        if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0)
            goto fail;
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
            goto fail;
        }
    }

    /* 1. requests: counts, token sums, extent, four percentile objects */
    char st[400], e2e[400], ttft[400], tpot[400], qw[400], in[400], outt[400], pre[400], cpl[400];
    numcol(x, "request", "start_time(ms)", st, sizeof st);
    numcol(x, "request", "execution_time(ms)", e2e, sizeof e2e);
    numcol(x, "request", "first_token_latency(ms)", ttft, sizeof ttft);
    numcol(x, "request", "tpot(ms)", tpot, sizeof tpot);
    numcol(x, "request", "queue_wait_time(ms)", qw, sizeof qw);
    numcol(x, "request", "recv_token_size", in, sizeof in);
    numcol(x, "request", "reply_token_size", outt, sizeof outt);
    numcol(x, "request", "preempted", pre, sizeof pre);
    numcol(x, "request", "complete", cpl, sizeof cpl);
    char sn[1000], en[1000];
    ns_of("st", sn, sizeof sn);
    ns_of("e2e", en, sizeof en);
    /* outer: scalars and the percentile expressions; middle: the aggregates
     * and sorted arrays (aliases, not sent back); inner: one row per request */
    char *mid = malloc(16384);
    size_t n = (size_t)snprintf(sql, 65536, "SELECT nreq, ncpl, sin, sout, spre, t0, t1, nst");
    size_t m = (size_t)snprintf(mid, 16384,
        "SELECT count() AS nreq, countIf(c) AS ncpl, sumIf(if(isNaN(inn), 0, inn), c) AS sin, "
        "sumIf(if(isNaN(outn), 0, outn), c) AS sout, sum(if(isNaN(pre), 0, toInt64(pre))) AS spre, "
        "minIf(sn, sn > 0) AS t0, max(en) AS t1, countIf(sn > 0) AS nst");
    static const char *const arr[4] = {"a_ttft", "a_tpot", "a_e2e", "a_queue"};
    static const char *const sums[4] = {"s_ttft", "s_tpot", "s_e2e", "s_queue"};
    static const char *const val[4] = {"ttft", "tpot", "e2e", "if(isNaN(qw), 0, qw)"};
    for (int k = 0; k < 4; k++) {
        char items[16384];
        m += (size_t)snprintf(mid + m, 16384 - m,
                              ", arraySort(groupArrayIf(%s, c AND NOT isNaN(%s))) AS %s"
                              ", arrayMap(t -> tupleElement(t, 2), arraySort(groupArrayIf((seq, %s), c AND NOT isNaN(%s)))) AS %s",
                              val[k], val[k], arr[k], val[k], val[k], sums[k]);
        pct_items(items, sizeof items, arr[k], sums[k]);
        n += (size_t)snprintf(sql + n, 65536 - n, "%s", items);
    }
    n += (size_t)snprintf(sql + n, 65536 - n, " FROM (%s"
        " FROM (SELECT seq, %s AS st, %s AS e2e, %s AS ttft, %s AS tpot, %s AS qw, %s AS inn, %s AS outn, %s AS pre, "
        "%s AS sn, if(isNaN(e2e), toInt64(0), sn + %s) AS en, "
        "(isNaN(%s) OR %s != 0) AND NOT isNaN(e2e) AND sn > 0 AS c FROM %s.request %s)) FORMAT TabSeparated",
        mid, st, e2e, ttft, tpot, qw, in, outt, pre, sn, en, cpl, cpl, x->db, where_for(x, W_REQUEST));
    free(mid);
    if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0)
        goto fail;
    double r[8 + 4 * 7];
    long long ri[8 + 4 * 7];
    if (fields(x, r, ri, 8 + 4 * 7) != 0)
        goto fail;
    long long nreq = (long long)r[0], complete = (long long)r[1], preempt = (long long)r[4];
    int64_t t0 = INT64_MAX, t1 = 0;
    if (r[7] > 0)
        t0 = ri[5];
    if (ri[6] > 0)
        t1 = ri[6];
    sa_pct pc[4];
    for (int k = 0; k < 4; k++)
        pc[k] = pct_at(r + 8 + 7 * k);

    /* 2. steps: per source, count, batch-size sum (truncated as (int) does), extent */
    double steps[3][4] = {{0}};
    int have_batch = table_exists(x, "batch"), have_fwd = table_exists(x, "forward");
    if (have_batch || have_fwd) {
        n = (size_t)snprintf(sql, 65536, "SELECT src, count(), sum(bs), min(s), max(e) FROM (");
        int first = 1;
        const char *tabs[2] = {"batch", "forward"};
        for (int k = 0; k < 2; k++) {
            if (!(k == 0 ? have_batch : have_fwd))
                continue;
            char sc[400], ec[400], bsc[400], sns[1000], ens[1000];
            numcol(x, tabs[k], "start_time(ms)", sc, sizeof sc);
            numcol(x, tabs[k], "end_time(ms)", ec, sizeof ec);
            numcol(x, tabs[k], "batch_size", bsc, sizeof bsc);
            ns_of(sc, sns, sizeof sns);
            ns_of(ec, ens, sizeof ens);
            const char *srcexpr = k == 0 ? "multiIf(name IN ('modelExec', 'modelRunnerExec', 'Execute'), 1, "
                                           "name IN ('batchFrameworkProcessing', 'BatchSchedule'), 2, -1)"
                                         : "0";
            n += (size_t)snprintf(sql + n, 65536 - n,
                                  "%sSELECT toInt32(%s) AS src, toInt64(if(isNaN(%s), 0, toInt32(%s))) AS bs, %s AS s, %s AS e "
                                  "FROM %s.%s %s",
                                  first ? "" : " UNION ALL ", srcexpr, bsc, bsc, sns, ens, x->db, tabs[k],
                                  where_for(x, W_STEPS));
            first = 0;
        }
        n += (size_t)snprintf(sql + n, 65536 - n,
                              ") WHERE src >= 0 AND s > 0 AND e >= s GROUP BY src ORDER BY src FORMAT TabSeparated");
        if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0)
            goto fail;
        char *save = NULL;
        for (char *line = strtok_r(x->c.resp, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            int src;
            double c, b;
            long long a, e;
            if (sscanf(line, "%d\t%lf\t%lf\t%lld\t%lld", &src, &c, &b, &a, &e) == 5 && src >= 0 && src < 3) {
                steps[src][0] = c;
                steps[src][1] = b;
                fold(&t0, &t1, a, e);
            }
        }
    }
    /* 3. the PD reports' times widen the extent as ingest.c's finish() does */
    if (table_exists(x, "pd_split_communication")) {
        static const char *const cols[5] = {"http_req_time(ms)", "send_request_time(ms)",
                                            "send_request_succ_time(ms)", "prefill_res_time(ms)",
                                            "request_end_time(ms)"};
        n = (size_t)snprintf(sql, 65536, "SELECT min(a), max(b) FROM (");
        for (int k = 0; k < 5; k++) {
            char c[400], ns[1000];
            numcol(x, "pd_split_communication", cols[k], c, sizeof c);
            ns_of(c, ns, sizeof ns);
            n += (size_t)snprintf(sql + n, 65536 - n, "%sSELECT if(%s > 0, %s, toInt64(9223372036854775807)) AS a, %s AS b FROM %s.pd_split_communication %s",
                                  k ? " UNION ALL " : "", ns, ns, ns, x->db, where_for(x, W_PD));
        }
        snprintf(sql + n, 65536 - n, ") FORMAT TabSeparated");
        double v[2];
        long long iv[2];
        if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0 || fields(x, v, iv, 2) != 0)
            goto fail;
        if (iv[0] < INT64_MAX)
            fold(&t0, &t1, iv[0], iv[1]);
    }
    if (table_exists(x, "pd_split_kvcache")) {
        char a[400], d[400], as[1000];
        numcol(x, "pd_split_kvcache", "start_time(ms)", a, sizeof a);
        numcol(x, "pd_split_kvcache", "during_time(ms)", d, sizeof d);
        ns_of(a, as, sizeof as);
        snprintf(sql, 65536,
                 "SELECT minIf(s, s > 0), maxIf(s + toInt64(round(d * 1e6)), s > 0), countIf(s > 0) FROM (SELECT %s AS s, %s AS d FROM %s.pd_split_kvcache %s) "
                 "WHERE NOT isNaN(d) AND d >= 0 FORMAT TabSeparated", as, d, x->db, where_for(x, W_PD));
        double v[3];
        long long iv[3];
        if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0 || fields(x, v, iv, 3) != 0)
            goto fail;
        if (iv[2] > 0)
            fold(&t0, &t1, iv[0], iv[1]);
    }
    /* records: the span rows of these exports' stores */
    long long records = -1;
    if (table_exists(x, "span")) {
        if (x->host[0] && session)
            snprintf(sql, 65536, "SELECT count() FROM %s.span WHERE host = %s AND store GLOBAL IN "
                     "(SELECT arrayJoin(store_ids) FROM %s.exports %s) FORMAT TabSeparated", x->db, x->host, x->db,
                     x->where);
        else if (x->host[0])
            snprintf(sql, 65536, "SELECT count() FROM %s.span WHERE host = %s FORMAT TabSeparated", x->db, x->host);
        else if (session) {
            char lit[600];
            ch_quote(session, lit, sizeof lit);
            snprintf(sql, 65536, "SELECT sum(records) FROM (SELECT export_id, any(records) AS records FROM %s.exports "
                     "WHERE session = %s GROUP BY export_id) FORMAT TabSeparated", x->db, lit);
        } else
            snprintf(sql, 65536, "SELECT count() FROM %s.span FORMAT TabSeparated", x->db);
        if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0)
            goto fail;
        records = atoll(x->c.resp);
    }
    if (t0 == INT64_MAX)
        t0 = t1 = 0;
    if (t1 < t0)
        t1 = t0;

    int srcsel = steps[1][0] > 0 ? 1 : steps[2][0] > 0 ? 2 : 0;
    double secs = (double)(t1 - t0) / 1e9;
    doc = json_object();
    json_object_set_new(doc, "schema", json_string("servprof-analyze/1"));
    json_object_set_new(doc, "input", json_string(url));
    json_object_set_new(doc, "source", json_string("clickhouse"));
    json_t *run = json_object();
    json_object_set_new(run, "start_ns", json_integer(t0));
    json_object_set_new(run, "end_ns", json_integer(t1));
    json_object_set_new(run, "duration_s", sa_num(secs));
    json_object_set_new(run, "records", records >= 0 ? json_integer(records) : json_null());
    json_object_set_new(doc, "run", run);
    json_t *h = json_object();
    json_object_set_new(h, "requests", json_integer(nreq));
    json_object_set_new(h, "complete", json_integer(complete));
    json_object_set_new(h, "incomplete", json_integer(nreq - complete));
    json_object_set_new(h, "throughput_rps", sa_num(secs > 0 ? (double)complete / secs : 0));
    json_object_set_new(h, "input_tokens_per_s", sa_num(secs > 0 ? r[2] / secs : 0));
    json_object_set_new(h, "output_tokens_per_s", sa_num(secs > 0 ? r[3] / secs : 0));
    static const char *const names[4] = {"ttft_ms", "tpot_ms", "e2e_ms", "queue_ms"};
    for (int k = 0; k < 4; k++)
        json_object_set_new(h, names[k], sa_pct_json(&pc[k]));
    json_object_set_new(h, "batch_size_mean",
                        steps[srcsel][0] > 0 ? sa_num(steps[srcsel][1] / steps[srcsel][0]) : json_null());
    json_object_set_new(h, "preemptions", json_integer(preempt));
    json_object_set_new(doc, "headline", h);
    json_t *nc = json_array();
    static const char *const missing[] = {"run.processes", "headline.kv_usage_peak", "headline.kv_usage_mean",
                                          "headline.busy_frac", "headline.stalled_frac", "headline.idle_frac",
                                          "headline.verdict", "headline.top_finding", "summaries", "findings",
                                          "windows", "ttft_breakdown", "slowest", "spans", "data_quality", NULL};
    for (int i = 0; missing[i]; i++)
        json_array_append_new(nc, json_string(missing[i]));
    json_object_set_new(doc, "not_covered", nc);
    goto out;
fail:
    snprintf(err, errcap, "%s", x->err);
out:
    ch_conn_close(&x->c);
    free(x);
    free(sql);
    return doc;
}

void sa_render_clickhouse_text(json_t *doc, FILE *f)
{
    json_t *run = json_object_get(doc, "run"), *h = json_object_get(doc, "headline");
#define N(o, k) json_number_value(json_object_get(o, k))
    fprintf(f, "servprof analyze: %s (ClickHouse", json_string_value(json_object_get(doc, "input")));
    if (json_is_integer(json_object_get(run, "records")))
        fprintf(f, ", %lld records", (long long)json_integer_value(json_object_get(run, "records")));
    fprintf(f, ")\nrun %.2f s: %lld requests (%lld complete, %lld cut by the collection window), %.2f req/s, "
               "%.1f output tokens/s\nmean batch %.2f; %lld preemption(s)\n",
            N(run, "duration_s"), (long long)N(h, "requests"), (long long)N(h, "complete"),
            (long long)N(h, "incomplete"), N(h, "throughput_rps"), N(h, "output_tokens_per_s"),
            N(h, "batch_size_mean"), (long long)N(h, "preemptions"));
    fprintf(f, "\nLatency of complete requests (ms)   %7s %9s %9s %9s %9s %9s\n", "n", "mean", "P50", "P90", "P99",
            "max");
    static const char *const rows[4][2] = {{"TTFT", "ttft_ms"}, {"TPOT", "tpot_ms"}, {"end-to-end", "e2e_ms"},
                                           {"queue wait", "queue_ms"}};
    for (int i = 0; i < 4; i++) {
        json_t *p = json_object_get(h, rows[i][1]);
        fprintf(f, "%-34s %7lld", rows[i][0], (long long)N(p, "n"));
        static const char *const keys[] = {"mean", "p50", "p90", "p99", "max"};
        for (int k = 0; k < 5; k++) {
            json_t *v = json_object_get(p, keys[k]);
            if (json_is_number(v))
                fprintf(f, " %9.3f", json_number_value(v));
            else
                fprintf(f, " %9s", "-");
        }
        fputc('\n', f);
    }
    fprintf(f, "\n(computed in ClickHouse: run, request counts, throughput, latency percentiles, mean batch, "
               "preemptions; the time budget, windows and findings need a local analyze)\n");
#undef N
}
