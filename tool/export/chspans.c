/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chspans.c — the span table's part of analyze --from clickhouse://: per
 * span name its count, total, longest (and when) and the percentile object
 * of its durations, computed by the engine over every record on its shards;
 * a few rows per span NAME come back (tens of names), never the records.
 * Plus the run's record count.
 *
 * The figures follow ingest.c/pct.c rule for rule: a record counts when
 * its duration is > 0; a duration is kept as a float of milliseconds
 * (toFloat32(dur / 1e6), the same IEEE rounding as C's (float)); the
 * percentiles are numpy's linear interpolation between the values at two
 * ranks, with the operations of sa_pct_at in the same order
 * (quantilesExact picks an element and would differ).
 *
 * Memory that does not grow with the records (issue #30: sorting
 * groupArray(x) held every duration of a name, refused at 40 M records):
 * a positive float's bits order as its value, so query 1 gives each
 * name's count and plain figures, query 2 the counts per bucket of the
 * float32's high 16 bits (sign, exponent, 7 mantissa bits: a few thousand
 * buckets a name), and the client finds the bucket and place of each rank
 * sa_pct_at reads; query 3 sends back the distinct values, with counts,
 * of those buckets only (at most 65,536 each). The sums are
 * the engine's (another order than the parse's records): equal after the
 * document's six-decimal rounding, not always to the last bit.
 *
 * Plain SQL that ClickHouse 18.16 runs (no CTE, window function) and
 * current releases too.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chsrc.h"

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

/* One span name's figures, then the histogram of its durations by the
 * high 16 bits of their float32 (bucket: sign, exponent, 7 bits of
 * mantissa), then the values at the ranks its percentiles read. */
typedef struct pick {
    long long rank; /* 0-based rank in the sorted durations */
    unsigned hi;    /* its bucket */
    long long off;  /* its place in the bucket */
    double v;
} pick;

typedef struct sname {
    char *name;
    long long n, mxts;
    double tot, mx, sum, min, max;
    pick pk[6];
    int npk;
} sname;

typedef struct spans {
    ch_src *x;
    sname *s;
    int n, cap;
    /* the histogram walk: the name and bucket of the last row, the count
     * of the name's durations in buckets before this one */
    int cur;
    unsigned hi;
    long long below, inb;
} spans;

/* TabSeparated's escapes undone in a span name; s ends at its tab. */
static char *name_field(char *s, size_t len, char **rest)
{
    char *tab = memchr(s, '\t', len);
    if (!tab)
        return NULL;
    *tab = 0;
    s[chs_unescape(s, (size_t)(tab - s))] = 0;
    *rest = tab + 1;
    return s;
}

static int find_name(const spans *S, const char *name)
{
    for (int i = 0; i < S->n; i++)
        if (!strcmp(S->s[i].name, name))
            return i;
    return -1;
}

static int bad_row(spans *S, const char *s)
{
    snprintf(S->x->err, sizeof S->x->err, "%s: unexpected span aggregate row: %.100s", S->x->c.label, s);
    return -1;
}

/* name, count, total, max, ts of max, sum, min, max of the float32 durations */
static int on_name(void *ctx, char *s, size_t len)
{
    spans *S = ctx;
    char *p, *e;
    char *name = name_field(s, len, &p);
    if (!name)
        return bad_row(S, s);
    if (S->n == S->cap) {
        S->cap = S->cap ? 2 * S->cap : 16;
        S->s = realloc(S->s, (size_t)S->cap * sizeof *S->s);
    }
    sname *m = &S->s[S->n];
    memset(m, 0, sizeof *m);
    double v[6];
    m->n = strtoll(p, &e, 10);
    for (int i = 0; i < 6; i++) {
        if (*e != '\t')
            return bad_row(S, s);
        p = e + 1;
        if (i == 2)
            m->mxts = strtoll(p, &e, 10); /* ns: all 64 bits */
        else
            v[i < 2 ? i : i - 1] = num(p, &e);
        if (e == p)
            return bad_row(S, s);
    }
    m->tot = v[0], m->mx = v[1], m->sum = v[2], m->min = v[3], m->max = v[4];
    m->name = strdup(name);
    S->n++;
    S->x->bytes += (long long)len + 1;
    return 0;
}

/* The 0-based ranks sa_pct_at reads for P50, P90, P99 of n values. */
static void want_ranks(sname *m)
{
    static const double ps[3] = {50, 90, 99};
    m->npk = 0;
    for (int k = 0; k < 3; k++) {
        long long lo = (long long)floor(ps[k] / 100.0 * (double)(m->n - 1));
        for (long long r = lo; r <= lo + 1 && r <= m->n - 1; r++)
            m->pk[m->npk++].rank = r;
    }
}

/* name, bucket, count, in (name, bucket) order: each wanted rank's bucket
 * and place in it. */
static int on_bucket(void *ctx, char *s, size_t len)
{
    spans *S = ctx;
    char *p, *e;
    char *name = name_field(s, len, &p);
    int i = name ? find_name(S, name) : -1;
    if (i < 0)
        return bad_row(S, s);
    unsigned hi = (unsigned)strtoul(p, &e, 10);
    if (*e != '\t')
        return bad_row(S, s);
    long long c = strtoll(e + 1, &e, 10);
    if (i != S->cur)
        S->cur = i, S->below = 0;
    sname *m = &S->s[i];
    for (int k = 0; k < m->npk; k++)
        if (m->pk[k].rank >= S->below && m->pk[k].rank < S->below + c)
            m->pk[k].hi = hi, m->pk[k].off = m->pk[k].rank - S->below;
    S->below += c;
    return 0;
}

/* name, float32 bits, count, in (name, bits) order, over the wanted
 * buckets only: the values at the wanted ranks. */
static int on_value(void *ctx, char *s, size_t len)
{
    spans *S = ctx;
    char *p, *e;
    char *name = name_field(s, len, &p);
    int i = name ? find_name(S, name) : -1;
    if (i < 0)
        return bad_row(S, s);
    uint32_t bits = (uint32_t)strtoul(p, &e, 10);
    if (*e != '\t')
        return bad_row(S, s);
    long long c = strtoll(e + 1, &e, 10);
    unsigned hi = bits >> 16;
    if (i != S->cur || hi != S->hi)
        S->cur = i, S->hi = hi, S->inb = 0;
    float f;
    memcpy(&f, &bits, sizeof f);
    sname *m = &S->s[i];
    for (int k = 0; k < m->npk; k++)
        if (m->pk[k].hi == hi && m->pk[k].off >= S->inb && m->pk[k].off < S->inb + c)
            m->pk[k].v = (double)f;
    S->inb += c;
    return 0;
}

/* sa_pct_at's value at p from the picked ranks. */
static double pct_at(const sname *m, double p)
{
    double pos = p / 100.0 * (double)(m->n - 1);
    long long lo = (long long)floor(pos);
    double a = NAN, b = NAN;
    for (int k = 0; k < m->npk; k++) {
        if (m->pk[k].rank == (lo >= m->n - 1 ? m->n - 1 : lo))
            a = m->pk[k].v;
        if (m->pk[k].rank == lo + 1)
            b = m->pk[k].v;
    }
    if (lo >= m->n - 1)
        return a;
    return a + (b - a) * (pos - (double)lo);
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

/* The float32 of a duration in ms, as C's (float), and its bits. */
#define F32 "toFloat32(dur / 1e6)"
#define BITS "reinterpretAsUInt32(reinterpretAsString(" F32 "))"

/* Query 3's WHERE: the wanted (name, bucket) pairs. */
static char *bucket_list(const spans *S)
{
    size_t cap = 256, n = 0;
    const char *sep = "";
    char *o = malloc(cap);
    n += (size_t)snprintf(o, cap, "(name, intDiv(" BITS ", 65536)) IN (");
    for (int i = 0; i < S->n; i++)
        for (int k = 0; k < S->s[i].npk; k++) {
            char q[1100];
            ch_quote(S->s[i].name, q, sizeof q);
            if (n + strlen(q) + 40 > cap)
                o = realloc(o, cap = 2 * cap + strlen(q) + 40);
            n += (size_t)snprintf(o + n, cap - n, "%s(%s, %u)", sep, q, S->s[i].pk[k].hi);
            sep = ", ";
        }
    snprintf(o + n, cap - n, ")");
    return o;
}

/* The three queries; each holds per name a few figures, a histogram of
 * at most 65536 buckets, or the distinct values of its wanted buckets:
 * nothing that grows with the records. */
static int span_queries(ch_src *x, spans *S)
{
    char w[12000];
    span_where(x, w, sizeof w);
    size_t cap = 40000;
    char *sql = malloc(cap);
    /* names in the order the records first show them, as the parse meets
     * them (by time, then by position in the store): doc.c's sort by total
     * keeps that order for ties, as locally */
    snprintf(sql, cap,
             "SELECT name, n, tot, mx, mxts, s, lo, hi FROM ("
             "SELECT name, count() AS n, sum(dur / 1e6) AS tot, max(dur / 1e6) AS mx, "
             "toInt64(argMax(ts, dur)) AS mxts, min(ts) AS first, argMin(seq, ts) AS first_seq, "
             "sum(toFloat64(" F32 ")) AS s, toFloat64(min(" F32 ")) AS lo, toFloat64(max(" F32 ")) AS hi "
             "FROM %s.span %s GROUP BY name) ORDER BY first, first_seq, name FORMAT TabSeparated", x->db, w);
    int rc = ch_query_lines(&x->c, sql, on_name, S, x->err, sizeof x->err);
    for (int i = 0; rc == 0 && i < S->n; i++)
        want_ranks(&S->s[i]);
    if (rc == 0 && S->n) {
        S->cur = -1;
        snprintf(sql, cap, "SELECT name, intDiv(" BITS ", 65536) AS b, count() FROM %s.span %s GROUP BY name, b "
                 "ORDER BY name, b FORMAT TabSeparated", x->db, w);
        rc = ch_query_lines(&x->c, sql, on_bucket, S, x->err, sizeof x->err);
    }
    if (rc == 0 && S->n) {
        char *in = bucket_list(S);
        size_t need = strlen(in) + strlen(w) + 1000;
        if (need > cap)
            sql = realloc(sql, cap = need);
        S->cur = -1;
        snprintf(sql, cap, "SELECT name, " BITS " AS v, count() FROM %s.span %s AND %s GROUP BY name, v "
                 "ORDER BY name, v FORMAT TabSeparated", x->db, w, in);
        free(in);
        rc = ch_query_lines(&x->c, sql, on_value, S, x->err, sizeof x->err);
    }
    free(sql);
    return rc;
}

int chs_fill_spans(ch_src *x, sa_ingest *g)
{
    sa_profile *p = sa_ingest_profile(g);
    p->records = -1;
    if (!chs_table_exists(x, "span"))
        return x->err[0] ? -1 : 0;
    if (record_count(x, &p->records) != 0)
        return -1;
    spans S = {.x = x, .cur = -1};
    int rc = span_queries(x, &S);
    for (int i = 0; i < S.n; i++) {
        sname *m = &S.s[i];
        if (rc == 0) {
            sa_pct d = {.n = m->n, .mean = m->sum / (double)m->n, .min = m->min, .max = m->max,
                        .p50 = pct_at(m, 50), .p90 = pct_at(m, 90), .p99 = pct_at(m, 99)};
            sa_ingest_span_agg(g, m->name, m->n, m->tot, m->mx, (int64_t)m->mxts, &d);
        }
        free(m->name);
    }
    free(S.s);
    return rc;
}
