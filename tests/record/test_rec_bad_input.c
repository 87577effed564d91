/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_bad_input.c — every kind of bad input is survived, stored
 * sensibly and counted: NULL strings, over-long strings, invalid UTF-8,
 * spans ended twice (same thread and another thread) or never, misuse of
 * record handles, bad containers, invalid attr_json, bad Meta, calls while
 * off.
 */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "rec_format.h"
#include "rec_test.h"

static servprof_span shared_span;

static void *end_again(void *arg)
{
    (void)arg;
    servprof_span_end(shared_span); /* the second end, from another thread */
    return NULL;
}

int main(void)
{
    char dir[512], store[4096];
    rt_tmpdir(dir, sizeof dir);
    /* Before any session: off, NULL handles everywhere. */
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "x"), "never");
    CHECK_INT(rt_open(dir, 0, store, sizeof store), 0);
    servprof_stats s0, s1;
    servprof_get_stats(&s0);

    /* NULL strings: stored as "", counted. */
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Bad");
    servprof_attr_str(r, NULL, "v");           /* 1 */
    servprof_attr_str(r, "nullval", NULL);     /* 2 */
    servprof_attr_strn(r, "nulln", NULL, 5);   /* 3 */
    servprof_res_str(r, NULL);                 /* 4 */
    servprof_attr_json(r, "nulljson", NULL);   /* 5: "" is not JSON -> string, +1 at close */
    servprof_event(r, NULL);                   /* 6 */
    servprof_get_stats(&s1);
    CHECK_INT(s1.bad_input - s0.bad_input, 6);

    /* Over-long strings: cut at SERVPROF_MAX_STRING on a character boundary. */
    char *longs = malloc(SERVPROF_MAX_STRING + 100);
    memset(longs, 'a', SERVPROF_MAX_STRING + 99);
    longs[SERVPROF_MAX_STRING + 99] = 0;
    char *utf = malloc(SERVPROF_MAX_STRING + 2);
    memset(utf, 'b', SERVPROF_MAX_STRING - 1);
    memcpy(utf + SERVPROF_MAX_STRING - 1, "\xc3\xa9", 3); /* é across the limit */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, longs);
    servprof_attr_str(r, "long", longs);
    servprof_attr_str(r, "utf", utf);
    servprof_attr_str(r, longs, "key-too-long");
    servprof_event(r, "longname");
    servprof_get_stats(&s0);
    CHECK_INT(s0.truncated - s1.truncated, 4);

    /* Invalid UTF-8 and control characters: escaped, never invalid JSON. */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Bad");
    servprof_attr_str(r, "bin", "\xff\xfe(\x01)\xc3");
    servprof_attr_str(r, "k\xff", "ok");
    servprof_event(r, "utf8\xc0");

    /* Spans: ended twice (same thread, other thread), never ended. */
    servprof_span twice = servprof_span_begin(servprof_rec_begin(SERVPROF_LEVEL_INFO, "S"), "twice");
    servprof_span_end(twice);
    servprof_span_end(twice);
    shared_span = servprof_span_begin(servprof_rec_begin(SERVPROF_LEVEL_INFO, "S"), "twice2");
    servprof_span_end(shared_span);
    /* The second end must come after the writer paired the first (they
     * are in different threads' buffers): wait for the span's row. */
    CHECK_INT(rt_wait_count(store, "SELECT count(*) FROM slice WHERE name = 'twice2'", 1), 1);
    pthread_t th;
    pthread_create(&th, NULL, end_again, NULL);
    pthread_join(th, NULL);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "S");
    servprof_attr_int(r, "open", 1);
    servprof_span never = servprof_span_begin(r, "never_ended");
    CHECK(never != 0);
    servprof_span_end_rec(NULL, 0); /* no-op */

    /* Handle misuse. */
    servprof_get_stats(&s0);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "M");
    servprof_event(r, "used");
    servprof_attr_int(r, "late", 1); /* 1: record already finished */
    servprof_event(r, "again");      /* 2 */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "M");
    servprof_attr_int(r, "x", 1);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "M"); /* 3: abandons the first */
    servprof_attr_end(r);                             /* 4: nothing open */
    for (int i = 0; i < SP_MAX_NESTING + 2; i++)      /* 5, 6: too deep */
        servprof_attr_array_begin(r, "deep");
    servprof_attr_int(r, NULL, 7);
    for (int i = 0; i < SP_MAX_NESTING + 2; i++)
        servprof_attr_end(r);
    servprof_event(r, "deep");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "M");
    servprof_span_at(r, "backwards", 2000, 1000); /* 7 */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "M");
    servprof_attr_int(r, "gone", 1);
    servprof_rec_cancel(r);
    servprof_rec_cancel(r); /* 8 */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "M");
    servprof_attr_json(r, "notjson", "{\"a\":}");
    servprof_attr_json(r, "two", "1 2");
    servprof_attr_json(r, "num", "12.5");
    servprof_event(r, "json");
    servprof_get_stats(&s1);
    CHECK_INT(s1.bad_input - s0.bad_input, 8);
    CHECK_INT(servprof_meta(NULL, "v"), SERVPROF_EINVAL);
    CHECK_INT(servprof_meta("", "v"), SERVPROF_EINVAL);
    CHECK_INT(servprof_meta("k", NULL), SERVPROF_EINVAL);
    servprof_set_thread_name(NULL);
    servprof_set_process_name(NULL);
    servprof_get_stats(&s0);
    CHECK_INT(s0.bad_input - s1.bad_input, 5);
    /* In a loop: every call counted, one warning shown (rate-limited). */
    char logp[600];
    snprintf(logp, sizeof logp, "%s/misuse.log", dir);
    fflush(stderr);
    int saved = dup(2), lfd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(lfd, 2);
    close(lfd);
    for (int i = 0; i < 1000; i++) {
        servprof_meta("", "v");
        servprof_set_thread_name("");
    }
    dup2(saved, 2);
    close(saved);
    char *log = check_slurp(logp);
    int lines = 0;
    for (const char *p = log; p && (p = strstr(p, "[WARNING]")); p++)
        lines++;
    CHECK(lines <= 1); /* none when the earlier calls' warning was less than 10 s ago */
    free(log);
    servprof_get_stats(&s1);
    CHECK_INT(s1.bad_input - s0.bad_input, 2000);
    rt_close();
    servprof_get_stats(&s1);
    CHECK_INT(s1.span_double_end, 2);
    CHECK_INT(s1.span_never_ended, 1);
    CHECK_INT(s1.dropped, 0);

    /* After the stop: off again. */
    CHECK(servprof_rec_begin(SERVPROF_LEVEL_ERROR, "x") == NULL);
    servprof_span_end(never); /* a span of an ended session: ignored */

    sqlite3 *db = rt_db(store);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT args FROM slice", -1, &st, NULL);
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        CHECK(rt_json_ok((const char *)sqlite3_column_text(st, 0)));
        rows++;
    }
    sqlite3_finalize(st);
    CHECK_INT(rows, 10);
    CHECK_STR(rt_text(db, "SELECT args FROM slice WHERE name=''"),
              "{\"type\":0,\"\":\"v\",\"nullval\":\"\",\"nulln\":\"\",\"rid\":\"\","
              "\"nulljson\":\"\"}");
    CHECK_INT(rt_int(db, "SELECT length(json_extract(args,'$.long')) FROM slice WHERE "
                         "name='longname'"),
              SERVPROF_MAX_STRING);
    CHECK_INT(rt_int(db, "SELECT length(cat) FROM slice WHERE name='longname'"),
              SERVPROF_MAX_STRING);
    CHECK_INT(rt_int(db, "SELECT length(CAST(json_extract(args,'$.utf') AS BLOB)) FROM slice "
                         "WHERE name='longname'"),
              SERVPROF_MAX_STRING - 1);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name = 'utf8\xEF\xBF\xBD'"), 1);
    CHECK_STR(rt_text(db, "SELECT args FROM slice WHERE name LIKE 'utf8%'"),
              "{\"type\":0,\"bin\":\"\\ufffd\\ufffd(\\u0001)\\ufffd\",\"k\\ufffd\":\"ok\"}");
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='twice' OR name='twice2'"), 2);
    CHECK_STR(rt_text(db, "SELECT args FROM slice WHERE name='never_ended'"),
              "{\"type\":2,\"open\":1,\"unended\":true}");
    CHECK_INT(rt_int(db, "SELECT duration FROM slice WHERE name='never_ended'"), 0);
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='spans_never_ended'"), "1");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='span_double_end'"), "2");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='truncated_strings'"), "4");
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name IN ('used','again','x')"), 1);
    CHECK_INT(rt_int(db, "SELECT json_array_length(args,'$.deep') FROM slice WHERE name='deep'"), 1);
    CHECK_INT(rt_int(db, "SELECT json_valid(args) FROM slice WHERE name='deep'"), 1);
    CHECK_INT(rt_int(db, "SELECT duration FROM slice WHERE name='backwards'"), 0);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE args LIKE '%gone%'"), 0);
    CHECK_STR(rt_text(db, "SELECT args FROM slice WHERE name='json'"),
              "{\"type\":0,\"notjson\":\"{\\\"a\\\":}\",\"two\":\"1 2\",\"num\":12.5}");
    sqlite3_close(db);
    free(longs);
    free(utf);
    RT_DONE();
}
