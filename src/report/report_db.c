/*
 * report_db.c — what the report page takes straight from profiler.db.
 *
 * analyze (issue 14) computes the figures and findings; this file reads the
 * raw material the charts draw, table by table, each with one SQL statement
 * in time order (the tables have indexes on their time columns):
 *
 *   batch    scheduler steps: batch size and scheduled tokens (prefill/decode)
 *   forward  device steps: duration and the gap to the next one
 *   counter  KV cache usage and blocks, queue sizes, the host samplers' CPU and
 *            memory, the process's CPU and RSS, GPU memory and utilization:
 *            one chart group per counter name, one column per (process, series)
 *   request  latency CDFs (TTFT, TPOT, e2e, queue wait) and the slowest requests
 *
 * Times become seconds from the run's start (t0_ms, the earliest time of any
 * of those tables), so two runs overlay on one axis with --compare. Series are
 * reduced by downsample.c; CDFs are SPR_CDF_POINTS quantiles. Memory: one
 * table's chosen columns at a time (~50 bytes a row before reduction).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

typedef struct rd {
    sqlite3 *db;
    const char *path;
    double t0_ms, t1_ms;
    int buckets;
} rd;

static int fail_sql(rd *r, const char *what)
{
    fprintf(stderr, "servprof report: %s: %s: %s\n", r->path, what, sqlite3_errmsg(r->db));
    return -1;
}

/* 1 when the table exists (an empty report table still exists: parse keeps it). */
static int has_table(rd *r, const char *name)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM sqlite_schema WHERE name = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int yes = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

static double col_num(sqlite3_stmt *st, int c)
{
    return sqlite3_column_type(st, c) == SQLITE_NULL ? NAN : sqlite3_column_double(st, c);
}

/* The run's extent in ms since the epoch over every table that has times. */
static int run_extent(rd *r)
{
    static const char *const q[] = {
        "SELECT min(\"start_time(ms)\"), max(\"start_time(ms)\" + \"execution_time(ms)\") FROM request",
        "SELECT min(\"start_time(ms)\"), max(\"end_time(ms)\") FROM batch",
        "SELECT min(\"start_time(ms)\"), max(\"end_time(ms)\") FROM forward",
        "SELECT min(timestamp) / 1e6, max(timestamp) / 1e6 FROM counter",
    };
    static const char *const tab[] = {"request", "batch", "forward", "counter"};
    r->t0_ms = INFINITY;
    r->t1_ms = -INFINITY;
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        if (!has_table(r, tab[i]))
            continue;
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(r->db, q[i], -1, &st, NULL) != SQLITE_OK)
            return fail_sql(r, tab[i]);
        if (sqlite3_step(st) == SQLITE_ROW) {
            double a = col_num(st, 0), b = col_num(st, 1);
            if (!isnan(a) && a < r->t0_ms)
                r->t0_ms = a;
            if (!isnan(b) && b > r->t1_ms)
                r->t1_ms = b;
        }
        sqlite3_finalize(st);
    }
    if (!isfinite(r->t0_ms))
        r->t0_ms = r->t1_ms = 0;
    return 0;
}

/* Runs sql (time in ms in column 0, ncols values after it) into a reduced
 * series set, as JSON named by names. NULL on error (message printed). */
static json_t *query_series(rd *r, const char *sql, const char *const *names, int ncols)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fail_sql(r, sql);
        return NULL;
    }
    spr_series *s = spr_series_new(ncols);
    json_t *out = NULL;
    double v[16];
    int rc;
    while (s && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        double t = col_num(st, 0);
        if (isnan(t))
            continue;
        for (int c = 0; c < ncols; c++)
            v[c] = col_num(st, c + 1);
        if (spr_series_add(s, (t - r->t0_ms) / 1e3, v) != 0)
            break;
    }
    if (s && rc == SQLITE_DONE) {
        spr_series *d = spr_downsample(s, r->buckets);
        if (d)
            out = spr_series_json(d, names, 6);
        spr_series_free(d);
        if (!out)
            fprintf(stderr, "servprof report: out of memory reducing a series of %s\n", r->path);
    } else if (s) {
        fail_sql(r, sql);
    }
    spr_series_free(s);
    sqlite3_finalize(st);
    return out;
}

/* Scheduler steps: the schedule rows when there are any (they carry the
 * batch as scheduled), else the execution rows. */
static json_t *read_steps(rd *r)
{
    if (!has_table(r, "batch"))
        return json_null();
    static const char *const names[] = {"batch_size", "prefill_batch", "decode_batch",
                                        "tokens", "prefill_tokens", "decode_tokens", "kv_usage"};
    static const char *const cols =
        "SELECT \"start_time(ms)\", batch_size, prefill_batch_size, decode_batch_size, total_scheduled_tokens,"
        " prefill_scheduled_tokens, decode_scheduled_tokens, kvcache_usage_rate * 100 FROM batch WHERE name IN ";
    char sql[1024];
    sqlite3_stmt *st;
    int sched = 0;
    if (sqlite3_prepare_v2(r->db, "SELECT count(*) FROM batch WHERE name IN ('BatchSchedule','batchFrameworkProcessing')",
                           -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        sched = sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    snprintf(sql, sizeof sql, "%s%s ORDER BY \"start_time(ms)\"", cols,
             sched ? "('BatchSchedule','batchFrameworkProcessing')" : "('modelExec','modelRunnerExec','Execute')");
    json_t *j = query_series(r, sql, names, 7);
    if (j)
        json_object_set_new(j, "source", json_string(sched ? "schedule steps" : "execution steps"));
    return j;
}

static json_t *read_forward(rd *r)
{
    if (!has_table(r, "forward"))
        return json_null();
    static const char *const names[] = {"dur_ms", "gap_ms", "batch_size"};
    return query_series(r, "SELECT \"start_time(ms)\", \"during_time(ms)\", \"bubble_time(ms)\", batch_size"
                           " FROM forward ORDER BY \"start_time(ms)\"", names, 3);
}

/* One counter name: its (pid, series) columns, rows merged by timestamp. */
static json_t *read_counter(rd *r, const char *name)
{
    sqlite3_stmt *st;
    char *col[16];
    long long pid[16];
    int n = 0, npids = 0;
    long long last_pid = 0;
    if (sqlite3_prepare_v2(r->db, "SELECT DISTINCT pid, series FROM counter WHERE name = ? ORDER BY pid, series", -1,
                           &st, NULL) != SQLITE_OK) {
        fail_sql(r, "counter");
        return NULL;
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    while (n < 16 && sqlite3_step(st) == SQLITE_ROW) {
        pid[n] = sqlite3_column_int64(st, 0);
        const char *s = (const char *)sqlite3_column_text(st, 1);
        col[n] = strdup(s ? s : "value");
        if (n == 0 || pid[n] != last_pid)
            npids++;
        last_pid = pid[n];
        n++;
    }
    sqlite3_finalize(st);
    /* Several processes: a column names its process ("used · pid 2"). */
    if (npids > 1)
        for (int c = 0; c < n; c++) {
            char b[160];
            snprintf(b, sizeof b, "%s · pid %lld", col[c], pid[c]);
            free(col[c]);
            col[c] = strdup(b);
        }
    json_t *out = NULL;
    spr_series *s = spr_series_new(n);
    if (!s || sqlite3_prepare_v2(r->db, "SELECT timestamp, pid, series, value FROM counter WHERE name = ?"
                                        " ORDER BY timestamp", -1, &st, NULL) != SQLITE_OK)
        goto done;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    double row[16];
    long long cur = -1;
    int have = 0, rc;
    for (int c = 0; c < n; c++)
        row[c] = NAN;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long long ts = sqlite3_column_int64(st, 0);
        if (have && ts != cur) {
            if (spr_series_add(s, ((double)cur / 1e6 - r->t0_ms) / 1e3, row) != 0)
                break;
            for (int c = 0; c < n; c++)
                row[c] = NAN;
        }
        cur = ts;
        have = 1;
        long long p = sqlite3_column_int64(st, 1);
        const char *se = (const char *)sqlite3_column_text(st, 2);
        char b[160];
        if (npids > 1)
            snprintf(b, sizeof b, "%s · pid %lld", se ? se : "value", p);
        else
            snprintf(b, sizeof b, "%s", se ? se : "value");
        for (int c = 0; c < n; c++)
            if (pid[c] == p && strcmp(col[c], b) == 0)
                row[c] = sqlite3_column_double(st, 3);
    }
    if (rc == SQLITE_DONE && have)
        spr_series_add(s, ((double)cur / 1e6 - r->t0_ms) / 1e3, row);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        fail_sql(r, "counter");
        goto done;
    }
    spr_series *d = spr_downsample(s, r->buckets);
    json_t *data = d ? spr_series_json(d, (const char *const *)col, 6) : NULL;
    spr_series_free(d);
    json_t *cols = json_array();
    for (int c = 0; c < n; c++)
        json_array_append_new(cols, json_string(col[c]));
    out = json_pack("{s:s, s:o, s:o*}", "name", name, "cols", cols, "data", data);
done:
    spr_series_free(s);
    for (int c = 0; c < n; c++)
        free(col[c]);
    return out;
}

/* Every counter but the per-core CPU ones (one chart per core would bury the
 * page; the machine's total is there). */
static json_t *read_counters(rd *r)
{
    json_t *arr = json_array();
    if (!has_table(r, "counter"))
        return arr;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT DISTINCT name FROM counter ORDER BY name", -1, &st, NULL) != SQLITE_OK) {
        fail_sql(r, "counter");
        json_decref(arr);
        return NULL;
    }
    char *names[64];
    int n = 0;
    while (n < 64 && sqlite3_step(st) == SQLITE_ROW) {
        const char *nm = (const char *)sqlite3_column_text(st, 0);
        int core;
        char tail;
        if (!nm || sscanf(nm, "host CPU %d%c", &core, &tail) == 1)
            continue;
        names[n++] = strdup(nm);
    }
    sqlite3_finalize(st);
    for (int i = 0; i < n; i++) {
        json_t *c = arr ? read_counter(r, names[i]) : NULL;
        if (!c) {
            json_decref(arr);
            arr = NULL;
        } else {
            json_array_append_new(arr, c);
        }
        free(names[i]);
    }
    return arr;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The CDF of one request column: SPR_CDF_POINTS quantiles {x: ms, p: 0..1}. */
static json_t *read_cdf(rd *r, const char *column)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT \"%s\" FROM request WHERE \"%s\" IS NOT NULL AND \"%s\" != ''", column,
             column, column);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fail_sql(r, sql);
        return NULL;
    }
    size_t n = 0, cap = 0;
    double *v = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            double *nv = realloc(v, cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[n++] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    qsort(v, n, sizeof *v, cmp_double);
    spr_series *s = spr_series_new(1);
    size_t pts = n < SPR_CDF_POINTS ? n : SPR_CDF_POINTS;
    for (size_t k = 0; s && k < pts; k++) {
        /* Evenly spaced ranks, the first and the last value always in. */
        size_t i = pts > 1 ? (size_t)((double)k * (double)(n - 1) / (double)(pts - 1) + 0.5) : 0;
        double p = (double)(i + 1) / (double)n;
        spr_series_add(s, v[i], &p);
    }
    static const char *const nm[] = {"p"};
    json_t *j = s ? spr_series_json(s, nm, 6) : NULL;
    if (j) {
        /* A CDF's axis is the value, not time: "x" instead of "t". */
        json_object_set(j, "x", json_object_get(j, "t"));
        json_object_del(j, "t");
        json_object_set_new(j, "n", json_integer((json_int_t)n));
    }
    spr_series_free(s);
    free(v);
    return j;
}

/* The slowest requests by end-to-end time, with what the phase bar needs. */
static json_t *read_slowest(rd *r)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT http_rid, \"start_time(ms)\", \"execution_time(ms)\", \"first_token_latency(ms)\","
             " \"queue_wait_time(ms)\", \"prefill_time(ms)\", \"decode_time(ms)\", recv_token_size,"
             " reply_token_size, preempted, \"tpot(ms)\" FROM request WHERE \"execution_time(ms)\" IS NOT NULL"
             " ORDER BY \"execution_time(ms)\" DESC LIMIT %d", SPR_SLOWEST);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fail_sql(r, "request");
        return NULL;
    }
    static const char *const keys[] = {"rid", "start_s", "e2e_ms", "ttft_ms", "queue_ms", "prefill_ms", "decode_ms",
                                       "in_tokens", "out_tokens", "preempted", "tpot_ms"};
    json_t *arr = json_array();
    while (arr && sqlite3_step(st) == SQLITE_ROW) {
        json_t *o = json_object();
        for (int c = 0; c < 11; c++) {
            json_t *v;
            if (sqlite3_column_type(st, c) == SQLITE_NULL ||
                (sqlite3_column_type(st, c) == SQLITE_TEXT && sqlite3_column_bytes(st, c) == 0))
                v = json_null();
            else if (c == 0)
                v = json_string((const char *)sqlite3_column_text(st, 0));
            else if (c == 1)
                v = json_real(round((sqlite3_column_double(st, 1) - r->t0_ms)) / 1e3);
            else
                v = json_real(round(sqlite3_column_double(st, c) * 1e3) / 1e3);
            json_object_set_new(o, keys[c], v);
        }
        json_array_append_new(arr, o);
    }
    sqlite3_finalize(st);
    return arr;
}

static json_t *read_requests(rd *r, json_t *out)
{
    if (!has_table(r, "request"))
        return out;
    static const char *const cols[][2] = {{"ttft", "first_token_latency(ms)"}, {"tpot", "tpot(ms)"},
                                          {"e2e", "execution_time(ms)"}, {"queue", "queue_wait_time(ms)"}};
    json_t *cdf = json_object();
    for (size_t i = 0; i < 4; i++) {
        json_t *c = read_cdf(r, cols[i][1]);
        if (!c) {
            json_decref(cdf);
            return NULL;
        }
        json_object_set_new(cdf, cols[i][0], c);
    }
    json_object_set_new(out, "cdf", cdf);
    json_t *slow = read_slowest(r);
    if (!slow)
        return NULL;
    json_object_set_new(out, "slowest", slow);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT count(*) FROM request", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        json_object_set_new(out, "requests", json_integer(sqlite3_column_int64(st, 0)));
    sqlite3_finalize(st);
    return out;
}

json_t *spr_db_read(const char *profiler_db, int buckets)
{
    rd r = {.path = profiler_db, .buckets = buckets};
    char uri[4200];
    snprintf(uri, sizeof uri, "file:%s?mode=ro", profiler_db);
    if (sqlite3_open_v2(uri, &r.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        fprintf(stderr, "servprof report: cannot open %s: %s\n", profiler_db, r.db ? sqlite3_errmsg(r.db) : "no memory");
        sqlite3_close(r.db);
        return NULL;
    }
    json_t *out = NULL, *steps = NULL, *fwd = NULL, *ctr = NULL;
    if (!has_table(&r, "request") && !has_table(&r, "batch")) {
        fprintf(stderr, "servprof report: %s is not a profiler.db made by servprof parse (no request or batch "
                        "table)\n", profiler_db);
        goto done;
    }
    if (run_extent(&r) != 0)
        goto done;
    steps = read_steps(&r);
    fwd = steps ? read_forward(&r) : NULL;
    ctr = fwd ? read_counters(&r) : NULL;
    if (!ctr)
        goto done;
    out = json_pack("{s:f, s:f, s:o, s:o, s:o}", "t0_ms", r.t0_ms, "duration_s", (r.t1_ms - r.t0_ms) / 1e3,
                    "steps", steps, "forward", fwd, "counters", ctr);
    steps = fwd = ctr = NULL;
    if (out && !read_requests(&r, out)) {
        json_decref(out);
        out = NULL;
    }
done:
    json_decref(steps);
    json_decref(fwd);
    json_decref(ctr);
    sqlite3_close(r.db);
    return out;
}
