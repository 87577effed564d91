/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_analyze_restart.c — analyze and the report's charts on an input
 * whose parse starts over: the same figures as when it does not.
 *
 * The input is a real serving store with one span covering the whole run
 * inserted last (as a server's lifetime span written at shutdown): the
 * parse's one pass meets it later than its reorder window, abandons the run
 * and parses again in exact mode. Analyze and the report's rows were handed
 * the abandoned run's rows and records through the tap; its restart must
 * drop them. Three ways must give one result, compared whole:
 *   - the late input through taps that can restart (one pass, one restart);
 *   - the same input through taps without restart (the parse starts in
 *     exact mode and never restarts: the reference);
 *   - the same rows with that span inserted first (one pass, no restart).
 * Analyze's JSON document and the report's charts data (rpt_rows_json) are
 * compared, the record count against the store's rows, and the number of
 * restarts each tap was told of. This happens for analyze with the report
 * riding on it (sa_opts.also, as `servprof report` runs it), analyze alone,
 * and the report's own parse (report.c when analyze's JSON is given).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "analyze.h"
#include "parse.h"
#include "plog.h"
#include "report.h"
#include "storeread.h"
#include "tap.h"
#include "../parse/servingstore.h"

/* Requests and tokens of the serving store: more rows (about 18,500) than
 * the one pass sizes its first window from (16,384), a run of ~23 s. */
enum { NREQ = 1000, TOKENS = 6 };

/* A tap around another (the report's rows, or none) that counts what it
 * is handed since the last restart, and the restarts. */
typedef struct counting {
    prs_tap inner;
    long long rows, records, restarts;
} counting;

static void count_row(void *ctx, const prs_table *t, const prs_val *v)
{
    counting *c = ctx;
    c->rows++;
    if (c->inner.row)
        c->inner.row(c->inner.ctx, t, v);
}

static void count_record(void *ctx, const prs_rec *r)
{
    counting *c = ctx;
    c->records++;
    if (c->inner.record)
        c->inner.record(c->inner.ctx, r);
}

static void count_restart(void *ctx)
{
    counting *c = ctx;
    c->rows = c->records = 0;
    c->restarts++;
    if (c->inner.restart)
        c->inner.restart(c->inner.ctx);
}

/* The tap over rows (NULL: none); restartable 0 takes the restart away
 * from both, so the parse has to start in exact mode. */
static prs_tap counting_tap(counting *c, rpt_rows *rows, int restartable)
{
    *c = (counting){0};
    if (rows)
        c->inner = rpt_rows_tap(rows);
    if (!restartable)
        c->inner.restart = NULL;
    return (prs_tap){.row = count_row, .record = count_record, .restart = restartable ? count_restart : NULL,
                     .ctx = c};
}

/* One result: analyze's document and the charts data. */
typedef struct result {
    json_t *doc, *charts;
    long long restarts, records;
} result;

static void result_free(result *r)
{
    json_decref(r->doc);
    json_decref(r->charts);
}

static json_t *charts_of(rpt_rows *rows)
{
    json_t *j = rpt_rows_json(rows, RPT_DEFAULT_BUCKETS);
    CHECK(j != NULL);
    return j;
}

/* sa_analyze on in; also (NULL: none) rides on its parse with the
 * timeline's counter rows, as report_analyze.c runs it. */
static json_t *analyze(const char *in, const prs_tap *also)
{
    sa_opts o;
    sa_opts_init(&o);
    o.input = in;
    o.also = also;
    o.tap_counters = also != NULL;
    char err[512] = "";
    json_t *doc = sa_analyze(&o, err, sizeof err);
    if (!doc)
        fprintf(stderr, "analyze %s: %s\n", in, err);
    CHECK(doc != NULL);
    return doc;
}

/* Analyze on in with the report's rows riding on its parse. */
static result analyze_with_rows(const char *in, int restartable)
{
    rpt_rows *rows = rpt_rows_new();
    counting c;
    prs_tap tap = counting_tap(&c, rows, restartable);
    result r = {0};
    r.doc = analyze(in, &tap);
    r.charts = charts_of(rows);
    r.restarts = c.restarts;
    r.records = c.records;
    rpt_rows_free(rows);
    return r;
}

/* The report's own parse of in (every output off, the rows' tap only), as
 * report.c runs it when analyze's JSON is given. */
static result report_parse(const char *in, int restartable)
{
    rpt_rows *rows = rpt_rows_new();
    counting c;
    prs_tap tap = counting_tap(&c, rows, restartable);
    prs_opts po = {.input = in, .output = ".", .tap_counters = 1, .tap = &tap};
    CHECK_INT(prs_run(&po), 0);
    result r = {.charts = charts_of(rows), .restarts = c.restarts, .records = c.records};
    rpt_rows_free(rows);
    return r;
}

/* Rows of the store with a valid timestamp: the records a parse reads. */
static long long store_rows(const char *path)
{
    sqlite3 *db;
    long long n = -1;
    sqlite3_stmt *st;
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM slice WHERE timestamp > 0", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return n;
}

static void check_same_json(json_t *got, json_t *want, const char *what)
{
    int same = got && want && json_equal(got, want);
    if (!same)
        fprintf(stderr, "differs: %s\n", what);
    CHECK(same);
}

static long long doc_records(json_t *doc)
{
    return json_integer_value(json_object_get(json_object_get(doc, "run"), "records"));
}

int main(void)
{
    char dir[] = "/tmp/sa-restart-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char late[96], calm[96], path[128];
    snprintf(late, sizeof late, "%s/late", dir);
    snprintf(calm, sizeof calm, "%s/calm", dir);
    CHECK(mkdir(late, 0755) == 0 && mkdir(calm, 0755) == 0);
    snprintf(path, sizeof path, "%s/ms_service_e.db", calm);
    serving_store(path, NREQ, TOKENS, LIFETIME_FIRST);
    snprintf(path, sizeof path, "%s/ms_service_e.db", late);
    serving_store(path, NREQ, TOKENS, LIFETIME_LAST);
    long long n = store_rows(path);
    CHECK(n > 16384);
    prs_log_set_level(PRS_WARNING);

    /* analyze with the report riding on it */
    result restarted = analyze_with_rows(late, 1);
    result exact = analyze_with_rows(late, 0);
    result one_pass = analyze_with_rows(calm, 1);
    CHECK_INT(restarted.restarts, 1); /* the one pass was kept, and abandoned */
    CHECK_INT(exact.restarts, 0);
    CHECK_INT(one_pass.restarts, 0);
    CHECK_INT(restarted.records, n);
    CHECK_INT(exact.records, n);
    CHECK_INT(one_pass.records, n);
    CHECK_INT(doc_records(restarted.doc), n);
    CHECK_INT(json_integer_value(json_object_get(restarted.charts, "requests")), NREQ);
    check_same_json(restarted.doc, exact.doc, "analyze: restarted vs exact from the start");
    check_same_json(restarted.charts, exact.charts, "report rows: restarted vs exact from the start");
    json_object_set_new(one_pass.doc, "input", json_string(late)); /* the only field that names the input */
    check_same_json(restarted.doc, one_pass.doc, "analyze: late input vs the same rows in one pass");
    check_same_json(restarted.charts, one_pass.charts, "report rows: late input vs the same rows in one pass");

    /* analyze alone */
    json_t *alone = analyze(late, NULL);
    CHECK_INT(doc_records(alone), n);
    check_same_json(alone, exact.doc, "analyze alone: restarted vs exact from the start");
    json_decref(alone);

    /* the report's own parse */
    result rp = report_parse(late, 1);
    result rp_exact = report_parse(late, 0);
    CHECK_INT(rp.restarts, 1);
    CHECK_INT(rp_exact.restarts, 0);
    CHECK_INT(rp.records, n);
    check_same_json(rp.charts, rp_exact.charts, "report's parse: restarted vs exact from the start");
    check_same_json(rp.charts, exact.charts, "report's parse vs the rows riding on analyze");

    result *all[] = {&restarted, &exact, &one_pass, &rp, &rp_exact};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        result_free(all[i]);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
