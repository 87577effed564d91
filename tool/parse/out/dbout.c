/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbout.c — what profiler.db has beyond the report tables: the time-bucket
 * tables (first_token_latency, req_latency, prefill_gen_speed,
 * decode_gen_speed), the indexes dashboards' queries need (laid out by
 * btindex.c while their tables are written), and, last, the reference's
 * views (dbcompat.c).
 *
 * Buckets: one row per time bucket with avg, p50, p90, p99, min and max of
 * the values that fall in that bucket only (not cumulative, which hides
 * spikes), and p50_alltime, the median of the whole run. The width is the
 * smallest of 100 ms, 200 ms, 500 ms, 1 s that keeps the run under 2000
 * buckets (1 s beyond). Values are placed at the time they were observed
 * (first token for TTFT, end for latency and decode speed, first token for
 * prefill speed).
 *
 * The columns are the reference's, with its meaning (its parser's
 * exporter_latency, read by its Grafana dashboard): `timestamp` is the
 * bucket start as its time text (dbcompat.c: UTC), latencies are in
 * microseconds, speeds in tokens/s. Ours beside them: `timestamp(ms)` (the
 * bucket start in ms since the epoch, what a dashboard filters on),
 * `bucket_ms` and `count`. There is no column named `time`: a query
 * aliasing `... AS time` would have its WHERE read that column instead.
 */
#include <stdlib.h>
#include <string.h>

#include "btwrite.h"
#include "dbcompat.h"
#include "dbout.h"
#include "plog.h"
#include "stats.h"
#include "xalloc.h"

/* The indexes dashboards' queries need. btwrite.c builds them as their
 * tables are written (prs_dbout_declare_indexes, from prs_table_init);
 * their CREATE INDEX texts, run at the end, give sqlite_schema its rows
 * (and SQLite builds any btindex.c could not). */
static const struct index_def {
    const char *name, *table, *cols[2];
} indexes[] = {
    {"batch_start", "batch", {"start_time(ms)"}},
    {"forward_start", "forward", {"start_time(ms)"}},
    {"request_start", "request", {"start_time(ms)"}},
    {"request_rid", "request", {"http_rid"}},
    {"request_status_ts", "request_status", {"timestamp(ms)"}},
    {"kvcache_rid", "kvcache", {"rid"}},
    {"counter_name", "counter", {"name", "timestamp"}},
    {"flow_id", "flow", {"flow_id"}},
};
#define NINDEXES (sizeof indexes / sizeof *indexes)

/* "CREATE INDEX IF NOT EXISTS name ON table(col, ...)", a column quoted
 * when it is not a plain identifier. */
static void index_sql(const struct index_def *d, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "CREATE INDEX IF NOT EXISTS %s ON %s(", d->name, d->table);
    for (int k = 0; k < 2 && d->cols[k] && n < cap; k++) {
        const char *c = d->cols[k];
        int plain = strspn(c, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == strlen(c);
        n += (size_t)snprintf(out + n, cap - n, plain ? "%s%s" : "%s\"%s\"", k ? ", " : "", c);
    }
    if (n < cap)
        snprintf(out + n, cap - n, ")");
}

void prs_dbout_declare_indexes(prs_table *t, struct prs_bt_tab *bt)
{
    for (size_t i = 0; i < NINDEXES; i++) {
        const struct index_def *d = &indexes[i];
        if (strcmp(d->table, t->db_name) != 0)
            continue;
        int cols[2], nkey = 0;
        for (int k = 0; k < 2 && d->cols[k]; k++)
            for (int c = 0; c < t->ncols; c++)
                if (strcmp(t->cols[c].name, d->cols[k]) == 0)
                    cols[nkey++] = c;
        if (nkey == (d->cols[1] ? 2 : 1) && prs_bt_index(bt, d->name, nkey, cols) != 0)
            prs_log(PRS_DEBUG, "profiler.db: index %s left to SQLite", d->name);
    }
}

static const prs_col cols[] = {
    {"timestamp", "TEXT"}, {"avg", "REAL"}, {"p50", "REAL"}, {"p90", "REAL"}, {"p99", "REAL"},
    {"p50_alltime", "REAL"}, {"min_value", "REAL"}, {"max_value", "REAL"},
    {"timestamp(ms)", "INTEGER"}, {"bucket_ms", "INTEGER"}, {"count", "INTEGER"},
};
#define NCOLS ((int)(sizeof cols / sizeof *cols))

typedef struct pt { int64_t at; double v; } pt;

static int cmp_pt(const void *a, const void *b)
{
    const pt *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* p: n values (already in the table's unit) and when they were seen. */
static void bucket_table(prs_model *m, const char *name, pt *p, long long n, int64_t width)
{
    prs_table t;
    prs_table_init(&m->out, &t, NULL, name, cols, NCOLS, NULL);
    qsort(p, (size_t)n, sizeof *p, cmp_pt);
    double *vals = prs_xmalloc((size_t)(n ? n : 1) * sizeof *vals);
    for (long long i = 0; i < n; i++)
        vals[i] = p[i].v;
    prs_sort_values(vals, n);
    double alltime = prs_percentile(vals, n, 50);
    for (long long i = 0; i < n;) {
        int64_t b = p[i].at / width * width;
        long long k = 0;
        double sum = 0;
        while (i < n && p[i].at / width * width == b) {
            vals[k++] = p[i].v;
            sum += p[i].v;
            i++;
        }
        prs_sort_values(vals, k);
        char ts[32];
        prs_dbcompat_time(b, ts);
        prs_val v[NCOLS] = {prs_v_text(ts, -1), prs_v_real(sum / (double)k), prs_v_real(prs_percentile(vals, k, 50)),
                            prs_v_real(prs_percentile(vals, k, 90)), prs_v_real(prs_percentile(vals, k, 99)),
                            prs_v_real(alltime), prs_v_real(vals[0]), prs_v_real(vals[k - 1]),
                            prs_v_int(b / 1000000), prs_v_int(width / 1000000), prs_v_int(k)};
        prs_table_row(&m->out, &t, v);
    }
    free(vals);
    prs_table_close(&m->out, &t);
}

void prs_dbout_finish(prs_model *m)
{
    if (!m->out.db_conn)
        return;
    int64_t span = m->last_ns - m->origin_ns;
    int64_t width = 1000000000LL;
    static const int64_t widths[] = {100000000LL, 200000000LL, 500000000LL, 1000000000LL};
    for (int i = 0; i < 4; i++)
        if (span / widths[i] < 2000) {
            width = widths[i];
            break;
        }
    prs_reqsums fin = prs_request_sums(m);
    pt *p = prs_xmalloc((size_t)(fin.n ? fin.n : 1) * sizeof *p);
    struct { const char *name; int field; } tabs[] = {
        {"first_token_latency", 0}, {"req_latency", 1}, {"prefill_gen_speed", 2}, {"decode_gen_speed", 3}};
    for (int t = 0; t < 4; t++) {
        long long n = 0;
        for (int i = 0; i < fin.n; i++) {
            const prs_reqsum *s = &fin.v[i];
            double v = NAN;
            int64_t at = -1;
            switch (tabs[t].field) { /* latencies: ms to the reference's µs */
            case 0: v = s->ttft * 1000; at = s->first_token; break;
            case 1: v = s->e2e * 1000; at = s->end; break;
            case 2: v = s->prefill_speed; at = s->first_token; break;
            default: v = s->decode_speed; at = s->end; break;
            }
            if (!isnan(v) && at >= 0)
                p[n++] = (pt){at, v};
        }
        bucket_table(m, tabs[t].name, p, n, width);
    }
    free(p);
    char sql[256];
    for (size_t i = 0; i < NINDEXES; i++) {
        index_sql(&indexes[i], sql, sizeof sql);
        char *err = NULL;
        if (sqlite3_exec(m->out.db_conn, sql, NULL, NULL, &err) != SQLITE_OK) {
            prs_log(PRS_WARNING, "profiler.db: creating index %s failed: %s", indexes[i].name, err ? err : "?");
            sqlite3_free(err);
        }
    }
    prs_dbcompat_views(&m->out);
}
