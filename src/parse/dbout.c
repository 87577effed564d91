/*
 * dbout.c — what profiler.db has beyond the report tables: the time-bucket
 * tables (first_token_latency, req_latency, prefill_gen_speed,
 * decode_gen_speed) and the indexes dashboards' queries need.
 *
 * Buckets: one row per time bucket with avg, p50, p90, p99 of the values
 * that fall in that bucket only (not cumulative, which hides spikes). The
 * width is the smallest of 100 ms, 200 ms, 500 ms, 1 s that keeps the run
 * under 2000 buckets (1 s beyond). Values are placed at the time they were
 * observed (first token for TTFT, end for latency and decode speed, first
 * token for prefill speed).
 */
#include <stdlib.h>
#include <string.h>

#include "dbout.h"
#include "stats.h"

static const spp_col cols[] = {
    {"timestamp", "INTEGER"}, {"time", "TEXT"}, {"bucket_ms", "INTEGER"}, {"count", "INTEGER"},
    {"avg", "REAL"}, {"p50", "REAL"}, {"p90", "REAL"}, {"p99", "REAL"},
};

typedef struct pt { int64_t at; double v; } pt;

static int cmp_pt(const void *a, const void *b)
{
    const pt *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

static void bucket_table(spp_model *m, const char *name, pt *p, long long n, int64_t width)
{
    spp_table t;
    spp_table_init(&m->out, &t, NULL, name, cols, 8, NULL);
    qsort(p, (size_t)n, sizeof *p, cmp_pt);
    double *vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
    for (long long i = 0; i < n;) {
        int64_t b = p[i].at / width * width;
        long long k = 0;
        double sum = 0;
        while (i < n && p[i].at / width * width == b) {
            vals[k++] = p[i].v;
            sum += p[i].v;
            i++;
        }
        spp_sort_values(vals, k);
        char dt[40];
        spp_fmt_datetime(b, dt);
        spp_val v[8] = {spp_v_int(b / 1000000), spp_v_text(dt, -1), spp_v_int(width / 1000000), spp_v_int(k),
                        spp_v_real(sum / (double)k), spp_v_real(spp_percentile(vals, k, 50)),
                        spp_v_real(spp_percentile(vals, k, 90)), spp_v_real(spp_percentile(vals, k, 99))};
        spp_table_row(&m->out, &t, v);
    }
    free(vals);
    spp_table_close(&m->out, &t);
}

void spp_dbout_finish(spp_model *m)
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
    pt *p = malloc((size_t)(m->nfin ? m->nfin : 1) * sizeof *p);
    struct { const char *name; int field; } tabs[] = {
        {"first_token_latency", 0}, {"req_latency", 1}, {"prefill_gen_speed", 2}, {"decode_gen_speed", 3}};
    for (int t = 0; t < 4; t++) {
        long long n = 0;
        for (int i = 0; i < m->nfin; i++) {
            const spp_reqsum *s = &m->fin[i];
            double v = NAN;
            int64_t at = -1;
            switch (tabs[t].field) {
            case 0: v = s->ttft; at = s->first_token; break;
            case 1: v = s->e2e; at = s->end; break;
            case 2: v = s->prefill_speed; at = s->first_token; break;
            default: v = s->decode_speed; at = s->end; break;
            }
            if (!isnan(v) && at >= 0)
                p[n++] = (pt){at, v};
        }
        bucket_table(m, tabs[t].name, p, n, width);
    }
    free(p);
    static const char *const idx =
        "CREATE INDEX IF NOT EXISTS batch_start ON batch(\"start_time(ms)\");"
        "CREATE INDEX IF NOT EXISTS forward_start ON forward(\"start_time(ms)\");"
        "CREATE INDEX IF NOT EXISTS request_start ON request(\"start_time(ms)\");"
        "CREATE INDEX IF NOT EXISTS request_rid ON request(http_rid);"
        "CREATE INDEX IF NOT EXISTS request_status_ts ON request_status(\"timestamp(ms)\");"
        "CREATE INDEX IF NOT EXISTS kvcache_rid ON kvcache(rid);"
        "CREATE INDEX IF NOT EXISTS counter_name ON counter(name, timestamp);"
        "CREATE INDEX IF NOT EXISTS flow_id ON flow(flow_id);";
    char *err = NULL;
    if (sqlite3_exec(m->out.db_conn, idx, NULL, NULL, &err) != SQLITE_OK) {
        spp_log(SPP_WARNING, "profiler.db: creating indexes failed: %s", err ? err : "?");
        sqlite3_free(err);
    }
}
