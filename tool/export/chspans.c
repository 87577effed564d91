/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chspans.c — the span table's part of analyze --from clickhouse://: per
 * span name its count, total, longest (and when) and the percentile object
 * of its durations, computed by the engine over every record on its shards;
 * one row per span NAME comes back (tens), never the records. Plus the
 * run's record count.
 *
 * The figures follow ingest.c/pct.c rule for rule: a record counts when
 * its duration is > 0; a duration is kept as a float of milliseconds
 * (toFloat32(dur / 1e6), the same IEEE rounding as C's (float)); the
 * percentiles are numpy's linear interpolation over
 * arraySort(groupArray(x)) with the operations of sa_pct_at in the same
 * order (quantilesExact picks an element and would differ). The sums are
 * the engine's (another order than the parse's records): equal after the
 * document's six-decimal rounding, not always to the last bit.
 *
 * Plain SQL that ClickHouse 18.16 runs (no CTE, window function) and
 * current releases too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chsrc.h"

/* The SELECT items of one sa_pct over sorted array A (n_A its length),
 * mean from arraySum(A). */
static size_t pct_items(char *o, size_t cap, const char *a)
{
    size_t n = 0;
    n += (size_t)snprintf(o + n, cap - n, ", if(n_%s = 0, nan, arraySum(%s) / n_%s)", a, a, a);
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

/* The span rows of this analyze: the session's stores, the host's records. */
static void span_where(const ch_src *x, char *w, size_t cap)
{
    size_t n = (size_t)snprintf(w, cap, "WHERE dur > 0");
    if (x->host[0])
        n += (size_t)snprintf(w + n, cap - n, " AND host = %s", x->host);
    if (x->session[0])
        snprintf(w + n, cap - n, " AND store GLOBAL IN (SELECT arrayJoin(store_ids) FROM %s.exports %s)", x->db,
                 x->where);
}

static double num(const char *s, char **end)
{
    if (!strncmp(s, "\\N", 2)) {
        *end = (char *)s + 2;
        return NAN;
    }
    return strtod(s, end);
}

typedef struct spanfeed { ch_src *x; sa_ingest *g; } spanfeed;

/* name, count, total, max, ts of max, mean, min, p50, p90, p99, max */
static int on_span(void *ctx, char *s, size_t len)
{
    spanfeed *f = ctx;
    char *tab = memchr(s, '\t', len);
    if (!tab)
        goto bad;
    *tab = 0;
    /* span names are identifiers in practice; an escaped one is undone */
    size_t k = 0;
    for (char *p = s; *p; p++) {
        if (*p == '\\' && p[1])
            p++;
        s[k++] = *p;
    }
    s[k] = 0;
    char *p = tab + 1, *e;
    long long n = strtoll(p, &e, 10);
    double v[9];
    long long mxts = 0;
    for (int i = 0; i < 9; i++) {
        if (*e != '\t')
            goto bad;
        p = e + 1;
        if (i == 2)
            v[i] = (double)(mxts = strtoll(p, &e, 10)); /* ns: all 64 bits */
        else
            v[i] = num(p, &e);
        if (e == p)
            goto bad;
    }
    sa_pct d = {.n = n, .mean = v[3], .min = v[4], .p50 = v[5], .p90 = v[6], .p99 = v[7], .max = v[8]};
    sa_ingest_span_agg(f->g, s, n, v[0], v[1], (int64_t)mxts, &d);
    f->x->bytes += (long long)len + 1;
    return 0;
bad:
    snprintf(f->x->err, sizeof f->x->err, "%s: unexpected span aggregate row: %.100s", f->x->c.label, s);
    return -1;
}

static int record_count(ch_src *x, long long *records)
{
    char sql[12000];
    if (x->host[0] && x->session[0])
        snprintf(sql, sizeof sql, "SELECT count() FROM %s.span WHERE host = %s AND store GLOBAL IN "
                 "(SELECT arrayJoin(store_ids) FROM %s.exports %s) FORMAT TabSeparated", x->db, x->host, x->db,
                 x->where);
    else if (x->host[0])
        snprintf(sql, sizeof sql, "SELECT count() FROM %s.span WHERE host = %s FORMAT TabSeparated", x->db, x->host);
    else if (x->session[0])
        snprintf(sql, sizeof sql, "SELECT sum(records) FROM (SELECT export_id, any(records) AS records FROM %s.exports "
                 "WHERE session = %s GROUP BY export_id) FORMAT TabSeparated", x->db, x->session);
    else
        snprintf(sql, sizeof sql, "SELECT count() FROM %s.span FORMAT TabSeparated", x->db);
    if (ch_query(&x->c, sql, x->err, sizeof x->err) != 0)
        return -1;
    *records = atoll(x->c.resp);
    return 0;
}

int chs_fill_spans(ch_src *x, sa_ingest *g)
{
    sa_profile *p = sa_ingest_profile(g);
    p->records = -1;
    if (!chs_table_exists(x, "span"))
        return x->err[0] ? -1 : 0;
    if (record_count(x, &p->records) != 0)
        return -1;
    char w[12000], items[8192];
    span_where(x, w, sizeof w);
    pct_items(items, sizeof items, "a");
    size_t cap = 40000;
    char *sql = malloc(cap);
    /* names in the order the records first show them, as the parse meets
     * them (by time, then by position in the store): doc.c's sort by total
     * keeps that order for ties, as locally */
    snprintf(sql, cap,
             "SELECT name, n_a, tot, mx, mxts%s FROM ("
             "SELECT name, count() AS n_a, sum(dur / 1e6) AS tot, max(dur / 1e6) AS mx, "
             "toInt64(argMax(ts, dur)) AS mxts, min(ts) AS first, argMin(seq, ts) AS first_seq, "
             "arraySort(groupArray(toFloat64(toFloat32(dur / 1e6)))) AS a "
             "FROM %s.span %s GROUP BY name) ORDER BY first, first_seq, name FORMAT TabSeparated",
             items, x->db, w);
    spanfeed f = {x, g};
    int rc = ch_query_lines(&x->c, sql, on_span, &f, x->err, sizeof x->err);
    free(sql);
    return rc;
}
