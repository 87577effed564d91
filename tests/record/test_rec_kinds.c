/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_kinds.c — every kind of record lands as the rows of
 * docs/api.md ("The raw store"), with the exact args JSON, and the store carries the
 * schema, the process, thread and Meta rows.
 */
#include "clock.h"
#include "rec_test.h"

static const char *args_of(sqlite3 *db, const char *name)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT args FROM slice WHERE name='%s' ORDER BY id LIMIT 1", name);
    return rt_text(db, sql);
}

static long long col_of(sqlite3 *db, const char *col, const char *name)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM slice WHERE name='%s' ORDER BY id LIMIT 1", col,
             name);
    return rt_int(db, sql);
}

int main(void)
{
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    servprof_set_thread_name("kinds-main");
    servprof_set_process_name("kinds-proc");
    CHECK_INT(servprof_meta("modelName", "llama-test"), 0);
    CHECK_INT(rt_open(dir, 0, store, sizeof store), 0);
    int64_t t0 = servprof_now_ns();

    /* An event with every scalar attribute kind. */
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    CHECK(r != NULL);
    servprof_res_str(r, "req-1");
    servprof_attr_str(r, "s", "a\"b\\c\n");
    servprof_attr_strn(r, "sn", "abcdef", 3);
    servprof_attr_int(r, "i", -42);
    servprof_attr_int(r, "big", INT64_MIN);
    servprof_attr_double(r, "half", 0.5);
    servprof_attr_double(r, "tenth", 0.1);
    servprof_attr_double(r, "third", 1.0 / 3);
    servprof_attr_double(r, "whole", 3.0);
    servprof_attr_double(r, "huge", 1e300);
    servprof_attr_bool(r, "yes", 7);
    servprof_attr_bool(r, "no", 0);
    servprof_event(r, "httpReq");

    /* Arrays, nested objects, JSON text. */
    int64_t ia[3] = {1, -2, 3};
    double da[2] = {0.25, 2.5};
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_attr_int_array(r, "ia", ia, 3);
    servprof_attr_double_array(r, "da", da, 2);
    servprof_attr_int_array(r, "empty", NULL, 0);
    servprof_attr_json(r, "j", " {\"x\": [1, 2]} ");
    servprof_attr_json(r, "bad", "{nope");
    servprof_attr_array_begin(r, "rid");
    for (int i = 0; i < 2; i++) {
        servprof_attr_object_begin(r, NULL);
        servprof_attr_str(r, "rid", i ? "r2" : "r1");
        servprof_attr_int(r, "iter", i);
        servprof_attr_end(r);
    }
    servprof_attr_end(r);
    servprof_attr_object_begin(r, "open"); /* left open: closed at finish */
    servprof_attr_int(r, "k", 1);
    servprof_event(r, "nested");

    /* Metrics with a scope. */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_metric(r, "QueueSize", 3);
    servprof_metric_inc(r, "WAITING", 1);
    servprof_metric_scope(r, "QueueName", "WAITING");
    servprof_event(r, "Enqueue");

    /* An integer rid and a level that is not collected. */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL);
    servprof_res_int(r, 77);
    servprof_event(r, "intRid");
    CHECK(servprof_rec_begin(SERVPROF_LEVEL_VERBOSE, "x") == NULL);
    CHECK(servprof_is_enabled(SERVPROF_LEVEL_INFO));
    CHECK(!servprof_is_enabled(SERVPROF_LEVEL_DETAILED));

    /* A span: begin attributes, then end attributes, merged. */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
    servprof_attr_str(r, "batch_type", "Prefill");
    servprof_span span = servprof_span_begin(r, "forward");
    CHECK(span != 0);
    rt_sleep_ms(2);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL);
    servprof_attr_int(r, "batch_size", 4);
    servprof_span_end_rec(r, span);

    /* A plain span end, a span_at, links. */
    servprof_span s2 = servprof_span_begin(servprof_rec_begin(SERVPROF_LEVEL_INFO, "E"), "plain");
    servprof_span_end(s2);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
    servprof_span_at(r, "measured", t0, t0 + 1500);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_attr_int(r, "extra", 1);
    servprof_link_rec(r, "http-1", "engine-1");
    servprof_link("http-2", "engine-2");
    /* A span end while another record is being built on this thread. */
    servprof_span s3 = servprof_span_begin(servprof_rec_begin(SERVPROF_LEVEL_INFO, "E"), "inner");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "E");
    servprof_attr_int(r, "before", 1);
    servprof_span_end(s3);
    servprof_link("a", "b");
    servprof_attr_int(r, "after", 2);
    servprof_event(r, "outer");
    CHECK_INT(servprof_meta("late", "yes"), 0);
    rt_close();

    servprof_stats stats;
    servprof_get_stats(&stats);
    CHECK_INT(stats.dropped, 0);
    CHECK(stats.written >= 12);

    sqlite3 *db = rt_db(store);
    CHECK_STR(args_of(db, "httpReq"),
              "{\"type\":0,\"rid\":\"req-1\",\"s\":\"a\\\"b\\\\c\\n\",\"sn\":\"abc\",\"i\":-42,"
              "\"big\":-9223372036854775808,\"half\":0.5,\"tenth\":0.1,"
              "\"third\":0.3333333333333333,\"whole\":3,\"huge\":1e+300,\"yes\":true,"
              "\"no\":false}");
    CHECK_STR(rt_text(db, "SELECT cat FROM slice WHERE name='httpReq'"), "Request");
    CHECK_STR(args_of(db, "nested"),
              "{\"type\":0,\"ia\":[1,-2,3],\"da\":[0.25,2.5],\"empty\":[],\"j\":{\"x\": [1, 2]},"
              "\"bad\":\"{nope\",\"rid\":[{\"rid\":\"r1\",\"iter\":0},{\"rid\":\"r2\",\"iter\":1}],"
              "\"open\":{\"k\":1}}");
    CHECK_STR(args_of(db, "Enqueue"),
              "{\"type\":0,\"QueueSize=\":3,\"WAITING+\":1,\"scope#QueueName\":\"WAITING\"}");
    CHECK_STR(args_of(db, "intRid"), "{\"type\":0,\"rid\":77}");
    CHECK_STR(rt_text(db, "SELECT cat FROM slice WHERE name='intRid'"), "");
    CHECK_STR(args_of(db, "forward"), "{\"type\":2,\"batch_type\":\"Prefill\",\"batch_size\":4}");
    CHECK(col_of(db, "duration", "forward") >= 2000000);
    CHECK_STR(rt_text(db, "SELECT cat FROM slice WHERE name='forward'"), "Execute");
    CHECK_STR(args_of(db, "plain"), "{\"type\":2}");
    CHECK_STR(args_of(db, "measured"), "{\"type\":2}");
    CHECK_INT(col_of(db, "duration", "measured"), 1500);
    CHECK_INT(col_of(db, "timestamp", "measured"), t0);
    CHECK_STR(rt_text(db, "SELECT group_concat(args, '|') FROM (SELECT args FROM slice WHERE "
                          "name='Link' ORDER BY id)"),
              "{\"type\":3,\"from\":\"http-1\",\"to\":\"engine-1\",\"extra\":1}|"
              "{\"type\":3,\"from\":\"http-2\",\"to\":\"engine-2\"}|"
              "{\"type\":3,\"from\":\"a\",\"to\":\"b\"}");
    CHECK_STR(args_of(db, "inner"), "{\"type\":2}");
    CHECK_STR(args_of(db, "outer"), "{\"type\":0,\"before\":1,\"after\":2}");
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice"), 12);

    /* Row invariants over every row. */
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE end_time != timestamp + duration"), 0);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE duration < 0 OR depth != 0"), 0);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE track_id != tid"), 0);
    CHECK_INT(rt_int(db, "SELECT count(DISTINCT pid) FROM slice"), 1);
    CHECK_INT(rt_int(db, "SELECT pid FROM slice LIMIT 1"), getpid());
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE timestamp < 1600000000000000000"), 0);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE duration = 0 AND "
                         "json_extract(args,'$.type') = 0"),
              rt_int(db, "SELECT count(*) FROM slice WHERE json_extract(args,'$.type') = 0"));
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT args FROM slice", -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW)
        CHECK(rt_json_ok((const char *)sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    /* Events of one thread are in time order. */
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice a JOIN slice b ON b.id = a.id + 1 WHERE "
                         "json_extract(a.args,'$.type') = 0 AND json_extract(b.args,'$.type') = 0 "
                         "AND b.timestamp < a.timestamp"),
              0);

    /* Schema: the six tables, Meta's 'slice' column. */
    CHECK_INT(rt_int(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN "
                         "('slice','Meta','process','thread','counter','flow')"),
              6);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM pragma_table_info('Meta') WHERE name='slice'"), 1);
    CHECK_STR(rt_text(db, "PRAGMA journal_mode"), "wal");

    /* Process, thread, Meta. */
    char sql[256];
    CHECK_STR(rt_text(db, "SELECT process_name FROM process"), "kinds-proc");
    CHECK_STR(rt_text(db, "SELECT label FROM process"), "testhost");
    snprintf(sql, sizeof sql, "SELECT count(*) FROM process WHERE pid='%d' AND parentPid='%d'",
             (int)getpid(), (int)getppid());
    CHECK_INT(rt_int(db, sql), 1);
    CHECK_STR(rt_text(db, "SELECT thread_name FROM thread"), "kinds-main");
    CHECK_INT(rt_int(db, "SELECT count(*) FROM thread"), 1);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM thread t JOIN slice s ON s.tid = t.track_id"), 12);
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='hostname'"), "testhost");
    snprintf(sql, sizeof sql, "%d", (int)getppid());
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='ppid'"), sql);
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='version'"), SERVPROF_VERSION);
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='clock_source'"), sp_clock_source());
    CHECK(!strncmp(sp_clock_source(), "CLOCK_REALTIME", 14));
    /* The kernel's synchronisation state, as adjtimex tells it here. */
    long maxerr, esterr;
    int synced = sp_clock_sync_state(&maxerr, &esterr);
    CHECK_INT(rt_int(db, "SELECT CAST(value AS INTEGER) FROM Meta WHERE name='clock_synced'"), synced);
    CHECK_INT(rt_int(db, "SELECT CAST(value AS INTEGER) FROM Meta WHERE name='clock_maxerror_us'"), maxerr);
    CHECK(synced >= -1 && synced <= 1);
    CHECK(rt_int(db, "SELECT CAST(value AS INTEGER) FROM Meta WHERE name='session_start_ns'") > 0);
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='modelName'"), "llama-test");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='late'"), "yes");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='dropped_records'"), "0");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='spans_never_ended'"), "0");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='records_written'"), "12");
    CHECK_INT(rt_int(db, "SELECT count(*) FROM Meta WHERE name='hostname'"), 1);
    sqlite3_close(db);

    /* Off: nothing is recorded, every call is a no-op. */
    CHECK(servprof_rec_begin(SERVPROF_LEVEL_ERROR, "x") == NULL);
    servprof_event(NULL, "x");
    servprof_span_end(0);
    CHECK_INT(servprof_span_begin(NULL, "x"), 0);
    RT_DONE();
}
