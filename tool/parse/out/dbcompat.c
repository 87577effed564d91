/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbcompat.c — profiler.db as the reference (msServiceProfiler) reads it:
 * its Grafana dashboard (profiler_visualization.json), its curve views and
 * the tables its own tests look for work unchanged on our file.
 *
 * Design: nothing here costs the parse a row. Where a table of ours carries
 * a reference name but holds a reference column under another name or
 * unit (batch.start_time in µs, forward.during_time, request.execution_time,
 * thread.track_id, ...), the column is a VIRTUAL generated column appended
 * to the CREATE TABLE (computed by SQLite when read, never stored, so the
 * page writer in btwrite.c is not involved). What the reference keeps as
 * small tables of its own (data_table, data_link) and its views are views
 * over our tables, created in the schema at the end; its batch_exec and
 * batch_req are tables, made by the parser (tool/parse/model/batchexec.c). The
 * few reference columns that need knowledge only the parser has at the
 * record (request_status.status, "QueueSize=", PENDING, timestamp) are
 * db_only columns of that report (reqstatus.c); the time-bucket tables are
 * written in the reference's shape by dbout.c.
 *
 * The reference's meaning of each column, our decisions where it leaves
 * room or is wrong, and every remaining difference: docs/parse.md
 * (profiler.db) and docs/compat.md.
 */
#include <string.h>

#include "dbcompat.h"
#include "fmt.h"
#include "plog.h"

/* milliseconds (REAL, µs precision) to whole microseconds */
#define MS_TO_US(col) "CAST(round(\"" col "\" * 1000) AS INTEGER)"

/* One reference column computed from one of ours: added to `table` when
 * the table has `from` and no column named `name` yet (a report that comes
 * to carry the reference's column itself, or drops ours, must not break
 * its CREATE TABLE). */
static const struct compat_col {
    const char *table, *name, *type, *expr, *from;
} columns[] = {
    /* The reference's dashboard orders batches by `start_time` (its own
     * profiler.db lacks the column: it renames it start_time(ms) while it
     * holds µs). Here: µs since the epoch, as its parser's start_time. */
    {"batch", "start_time", "INTEGER", MS_TO_US("start_time(ms)"), "start_time(ms)"},
    {"batch", "end_time", "INTEGER", MS_TO_US("end_time(ms)"), "end_time(ms)"},
    {"batch", "during_time", "REAL", "\"during_time(ms)\"", "during_time(ms)"},
    /* Its request table holds these in ms without the suffix (its view
     * request_data adds it). */
    {"request", "execution_time", "REAL", "\"execution_time(ms)\"", "execution_time(ms)"},
    {"request", "queue_wait_time", "REAL", "\"queue_wait_time(ms)\"", "queue_wait_time(ms)"},
    {"request", "first_token_latency", "REAL", "\"first_token_latency(ms)\"", "first_token_latency(ms)"},
    /* Its forward table: the same values in ms without the suffix. */
    {"forward", "relative_start_time", "REAL", "\"relative_start_time(ms)\"", "relative_start_time(ms)"},
    {"forward", "during_time", "REAL", "\"during_time(ms)\"", "during_time(ms)"},
    {"forward", "bubble_time", "REAL", "\"bubble_time(ms)\"", "bubble_time(ms)"},
    {"forward", "start_time", "REAL", "\"start_time(ms)\"", "start_time(ms)"},
    {"forward", "end_time", "REAL", "\"end_time(ms)\"", "end_time(ms)"},
    /* Its kvcache table keeps the datetime as start_datetime (its CSV
     * calls it start_time): for a kvcache.csv that does the same. */
    {"kvcache", "start_datetime", "TEXT", "start_time", "start_time"},
    /* Timeline tables: the reference's track is our lane (tid), unique
     * across processes; sort indexes are the ones chrome_tracing.json gives. */
    {"process", "process_sort_index", "INTEGER", "pid", "pid"},
    {"thread", "track_id", "INTEGER", "tid", "tid"},
    {"thread", "thread_sort_index", "INTEGER", "tid", "tid"},
    {"counter", "args", "TEXT", "json_object(series, value)", "series"},
    {"flow", "track_id", "INTEGER", "tid", "tid"},
};

static int has_col(const prs_col *cols, int ncols, const char *name)
{
    for (int i = 0; i < ncols; i++)
        if (sqlite3_stricmp(cols[i].name, name) == 0)
            return 1;
    return 0;
}

char *prs_dbcompat_columns(const char *table, const prs_col *cols, int ncols)
{
    sqlite3_str *s = sqlite3_str_new(NULL);
    for (size_t i = 0; i < sizeof columns / sizeof *columns; i++) {
        const struct compat_col *c = &columns[i];
        if (strcmp(c->table, table) == 0 && has_col(cols, ncols, c->from) && !has_col(cols, ncols, c->name))
            sqlite3_str_appendf(s, ", \"%w\" %s GENERATED ALWAYS AS (%s) VIRTUAL", c->name, c->type, c->expr);
    }
    return sqlite3_str_finish(s); /* NULL when empty */
}

void prs_dbcompat_time(int64_t ns, char *buf)
{
    prs_fmt_datetime_utc(ns, buf, ':');
}

/* The time text of the reference's curve views, from its `timestamp`:
 * "YYYY-MM-DD HH:MM:SS.ffffff". */
#define CURVE_TIME "substr(timestamp, 1, 19) || '.' || substr(timestamp, 21, 6)"
#define SCHEDULE_NAMES "('BatchSchedule', 'batchFrameworkProcessing')"

static const char *const views[] = {
    /* What the reference lists for MindStudio Insight: its name and view. */
    "CREATE VIEW data_table(id, name, view_name) AS VALUES (1, 'batch_info', 'batch_info'), "
    "(2, 'request_data', 'request_data'), (3, 'forward_info', 'forward_info'), "
    "(4, 'kvcache_usage', 'kvcache_usage')",
    /* forward rows name requests as request.http_rid does */
    "CREATE VIEW data_link(source_name, target_table, target_name) AS VALUES ('rid', 'request', 'http_rid')",
    "CREATE VIEW Batch_Size_curve AS SELECT row_number() OVER (ORDER BY \"start_time(ms)\") - 1 AS batch_id,"
    " batch_size AS total_batch_size, prefill_batch_size, decode_batch_size FROM batch"
    " WHERE name IN " SCHEDULE_NAMES " ORDER BY batch_id",
    "CREATE VIEW Batch_Token_curve AS SELECT row_number() OVER (ORDER BY \"start_time(ms)\") - 1 AS batch_id,"
    " total_scheduled_tokens, prefill_scheduled_tokens, decode_scheduled_tokens FROM batch"
    " WHERE name IN " SCHEDULE_NAMES " ORDER BY batch_id",
    "CREATE VIEW Kvcache_Usage_Percent_curve AS SELECT start_datetime AS datetime,"
    " kvcache_usage_rate * 100 AS kvcache_usage_percent FROM kvcache WHERE kvcache_usage_rate IS NOT NULL"
    " ORDER BY datetime",
    /* latencies are µs in the tables (the reference's unit), ms here */
    "CREATE VIEW First_Token_Latency_curve AS SELECT " CURVE_TIME " AS time,"
    " round(p99 / 1000.0, 4) AS \"p99(ms)\", round(p90 / 1000.0, 4) AS \"p90(ms)\","
    " round(p50 / 1000.0, 4) AS \"p50(ms)\", round(min_value / 1000.0, 4) AS \"min(ms)\""
    " FROM first_token_latency ORDER BY time",
    "CREATE VIEW Request_Latency_curve AS SELECT " CURVE_TIME " AS time,"
    " round(avg / 1000.0, 4) AS \"avg(ms)\", round(p99 / 1000.0, 4) AS \"p99(ms)\","
    " round(p90 / 1000.0, 4) AS \"p90(ms)\", round(p50 / 1000.0, 4) AS \"p50(ms)\""
    " FROM req_latency ORDER BY time",
    "CREATE VIEW Prefill_Generate_Speed_Latency_curve AS SELECT " CURVE_TIME " AS time,"
    " round(avg, 4) AS \"avg(tokens/s)\", round(p99, 4) AS \"p99(tokens/s)\","
    " round(p90, 4) AS \"p90(tokens/s)\", round(p50, 4) AS \"p50(tokens/s)\""
    " FROM prefill_gen_speed ORDER BY time",
    "CREATE VIEW Decode_Generate_Speed_Latency_curve AS SELECT " CURVE_TIME " AS time,"
    " round(avg, 4) AS \"avg(tokens/s)\", round(p99, 4) AS \"p99(tokens/s)\","
    " round(p90, 4) AS \"p90(tokens/s)\", round(p50, 4) AS \"p50(tokens/s)\""
    " FROM decode_gen_speed ORDER BY time",
    /* every row carries the three current sizes (not only the queue that changed) */
    "CREATE VIEW Request_Status_curve AS SELECT " CURVE_TIME " AS time, CAST(waiting AS REAL) AS waiting,"
    " CAST(swapped AS REAL) AS swapped, CAST(running AS REAL) AS running FROM request_status ORDER BY time",
};

/* Whether table has a stored column named col (any case). */
static int table_has(sqlite3 *db, const char *table, const char *col)
{
    sqlite3_stmt *st;
    int has = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2 COLLATE NOCASE", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, col, -1, SQLITE_STATIC);
        has = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    return has;
}

/* A column of a view renamed: `from` of ours shown as the reference's `to`. */
typedef struct col_rename { const char *from, *to; } rename_t;

/* "CREATE VIEW view AS SELECT <table's stored columns> FROM table", the
 * columns named in ren[0..1] renamed. The stored columns are the report's
 * (PRAGMA table_info leaves generated columns out). */
static char *info_view_sql(sqlite3 *db, const char *view, const char *table, const rename_t *ren)
{
    rename_t r[2] = {{NULL, NULL}, {NULL, NULL}};
    for (int k = 0; k < 2; k++)
        if (ren[k].from && !table_has(db, table, ren[k].to)) /* else the table has the reference's name */
            r[k] = ren[k];
    sqlite3_str *s = sqlite3_str_new(db);
    sqlite3_str_appendf(s, "CREATE VIEW \"%w\" AS SELECT ", view);
    char *q = sqlite3_mprintf("PRAGMA table_info(\"%w\")", table);
    sqlite3_stmt *st;
    int n = 0;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *c = (const char *)sqlite3_column_text(st, 1);
            sqlite3_str_appendf(s, "%s\"%w\"", n++ ? ", " : "", c);
            for (int k = 0; k < 2; k++)
                if (r[k].from && strcmp(c, r[k].from) == 0)
                    sqlite3_str_appendf(s, " AS \"%w\"", r[k].to);
        }
        sqlite3_finalize(st);
    }
    sqlite3_free(q);
    sqlite3_str_appendf(s, " FROM \"%w\"", table);
    char *sql = sqlite3_str_finish(s);
    if (n == 0) { /* no such table (that report is off): no view */
        sqlite3_free(sql);
        return NULL;
    }
    return sql;
}

static void exec_view(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        prs_log(PRS_WARNING, "profiler.db: a view of the reference's is left out: %s (%.60s...)", err ? err : "?",
                sql);
        sqlite3_free(err);
    }
}

/* Coordinator_curve: one row per 5-second bucket of coordinator_running,
 * one column per instance ("decode ADDR" / "prefill ADDR", by node type
 * then address, as the reference names and orders them) holding the
 * requests added to it in the bucket. Its columns depend on the instances
 * seen, so its SQL is made from them (coordcount.c hands them over). */
void prs_dbcompat_coordinator_nodes(prs_out *o, const char *const *address, const int *decode, int n)
{
    sqlite3_free(o->curve_sql);
    o->curve_sql = NULL;
    if (n <= 0)
        return;
    sqlite3_str *s = sqlite3_str_new(NULL);
    sqlite3_str_appendall(s, "CREATE VIEW Coordinator_curve AS SELECT time");
    for (int want = 1; want >= 0; want--) /* "decode" sorts before "prefill" */
        for (int i = 0; i < n; i++) {
            if (decode[i] != want)
                continue;
            const char *type = want ? "decode" : "prefill";
            char *alias = sqlite3_mprintf("%s %s", type, address[i]);
            sqlite3_str_appendf(s, ", max(CASE WHEN node_type = %Q AND address = %Q THEN add_count END) AS \"%w\"",
                                type, address[i], alias);
            sqlite3_free(alias);
        }
    sqlite3_str_appendall(s, " FROM coordinator_running GROUP BY time ORDER BY time");
    o->curve_sql = sqlite3_str_finish(s);
}

void prs_dbcompat_views(prs_out *o)
{
    if (!o->db_conn) {
        prs_dbcompat_coordinator_nodes(o, NULL, NULL, 0);
        return;
    }
    /* the reference's views of its tables, with its column names. Its
     * pd_split_communication already carries the (ms) names its view adds;
     * its coordinator table is our coordinator_running (5-second counts). */
    static const struct { const char *view, *table; rename_t ren[2]; } info[] = {
        {"batch_info", "batch", {{NULL, NULL}, {NULL, NULL}}},
        {"request_data", "request", {{NULL, NULL}, {NULL, NULL}}},
        {"forward_info", "forward", {{NULL, NULL}, {NULL, NULL}}},
        {"kvcache_usage", "kvcache", {{"start_datetime", "start_time"}, {NULL, NULL}}},
        {"pd_communication_info", "pd_split_communication", {{NULL, NULL}, {NULL, NULL}}},
        {"pd_split_pull_kvcache", "pd_split_kvcache", {{"start_datetime", "start_time"}, {"end_datetime", "end_time"}}},
        {"coordinator_info", "coordinator_running", {{NULL, NULL}, {NULL, NULL}}},
    };
    for (size_t i = 0; i < sizeof info / sizeof *info; i++) {
        char *sql = info_view_sql(o->db_conn, info[i].view, info[i].table, info[i].ren);
        if (sql)
            exec_view(o->db_conn, sql);
        sqlite3_free(sql);
    }
    for (size_t i = 0; i < sizeof views / sizeof *views; i++)
        exec_view(o->db_conn, views[i]);
    if (o->curve_sql)
        exec_view(o->db_conn, o->curve_sql);
    prs_dbcompat_coordinator_nodes(o, NULL, NULL, 0);
}
