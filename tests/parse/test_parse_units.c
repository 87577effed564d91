/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_parse_units.c — the parser's building blocks on their own: the args
 * scanner (keys, numbers, rid lists, escapes, malformed text), Link
 * resolution (union-find), the reorder buffer (rowid order in, time order
 * out), a store read back in time order, and percentiles.
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "argdecode.h"
#include "check.h"
#include "fmt.h"
#include "ids.h"
#include "merge.h"
#include "parse.h"
#include "plog.h"
#include "reorder.h"
#include "servingstore.h"
#include "stats.h"
#include "storeread.h"
#include "table.h"
#include "tap.h"

/* the parse context the stores under test belong to */
static prs_parse_ctx test_ctx;

static void decode(prs_args *a, const char *s) { prs_args_decode(a, s, (int)strlen(s)); }

static void test_args(void)
{
    prs_args a;
    prs_args_init(&a);
    decode(&a, "{\"type\": 0, \"rid\": \"r-1\", \"QueueSize=\": 3, \"scope#QueueName\": \"WAITING\","
               " \"extra\": {\"nested\": [1, 2, {\"x\": null}]}, \"recvTokenSize=\": 1.5e2}");
    CHECK_INT(a.valid, 1);
    CHECK_INT(a.type, 0);
    CHECK_INT(a.rid_kind, 1);
    CHECK(a.rid.n == 3 && !memcmp(a.rid.p, "r-1", 3));
    CHECK(a.queue_size == 3);
    CHECK(a.queue_name.n == 7 && !memcmp(a.queue_name.p, "WAITING", 7));
    CHECK(a.recv_tokens == 150);
    CHECK(isnan(a.reply_tokens));

    decode(&a, "{\"rid\":[{\"rid\":\"a\",\"iter\":0,\"type\":0,\"num_scheduled_tokens\":128},"
               "{\"rid\":7,\"iter\":3,\"type\":1,\"num_scheduled_tokens\":1}],\"batch_type\":\"Prefill,Decode\"}");
    CHECK_INT(a.valid, 1);
    CHECK_INT(a.rid_kind, 2);
    CHECK_INT(a.nrids, 2);
    CHECK(a.rids[0].sched_tokens == 128 && a.rids[0].iter == 0 && a.rids[0].type == 0);
    CHECK(a.rids[1].rid.n == 1 && a.rids[1].rid.p[0] == '7'); /* numeric ids keep their digits */
    CHECK_INT(a.rids[1].iter, 3);

    /* Entry keys in another order, unknown members between them, an escaped
     * key (raw text compared: not "iter"), and numbers the integer fast
     * path must hand over to the full parser. */
    decode(&a, "{\"rid\":[{\"type\":1,\"x\":[1,{\"iter\":9}],\"rid\":\"b\",\"num_prompt_tokens\":1234567890123,"
               "\"iter\":2,\"num_scheduled_tokens\":2.5},{\"it\\u0065r\":5,\"num_spec_output_tokens\":1e2,"
               "\"num_computed_tokens\":\"7\",\"rid\":\"c\",\"num_scheduled_tokens\":-3},"
               "{\"iter\":4,\"rid\":\"d\",\"num_scheduled_tokens\":0012}]}");
    CHECK_INT(a.valid, 1);
    CHECK_INT(a.nrids, 3);
    CHECK(a.rids[0].rid.n == 1 && a.rids[0].rid.p[0] == 'b');
    CHECK_INT(a.rids[0].type, 1);
    CHECK_INT(a.rids[0].iter, 2);
    CHECK(a.rids[0].prompt_tokens == 1234567890123.0);
    CHECK(a.rids[0].sched_tokens == 2.5);
    CHECK(a.rids[1].rid.n == 1 && a.rids[1].rid.p[0] == 'c');
    CHECK_INT(a.rids[1].iter, -1);
    CHECK(a.rids[1].spec_tokens == 100);
    CHECK(a.rids[1].computed_tokens == 7);
    CHECK(a.rids[1].sched_tokens == -3);
    CHECK(a.rids[2].rid.n == 1 && a.rids[2].rid.p[0] == 'd');
    CHECK_INT(a.rids[2].iter, 4);
    CHECK(a.rids[2].sched_tokens == 12);
    CHECK(isnan(a.rids[2].prompt_tokens));
    /* keys that begin like the literal "type"/"rid" ones but are not them */
    decode(&a, "{\"types\":7,\"ri\":\"no\",\"rid\" :\"r9\",\"type\":2}");
    CHECK_INT(a.valid, 1);
    CHECK_INT(a.type, 2);
    CHECK(a.rid_kind == 1 && a.rid.n == 2 && !memcmp(a.rid.p, "r9", 2));
    decode(&a, "{\"typ\":1}");
    CHECK_INT(a.type, -1);

    /* whitespace everywhere JSON allows it, inside a rid list */
    decode(&a, "{ \"rid\" : [ { \"rid\" : \"w\" , \"iter\"\t:\n3 , \"type\" : 1 } ,\r\n {\"rid\":\"x\" } ] }");
    CHECK_INT(a.valid, 1);
    CHECK_INT(a.nrids, 2);
    CHECK(a.rids[0].rid.n == 1 && a.rids[0].rid.p[0] == 'w');
    CHECK_INT(a.rids[0].iter, 3);
    CHECK_INT(a.rids[0].type, 1);
    CHECK(a.rids[1].rid.n == 1 && a.rids[1].rid.p[0] == 'x');
    decode(&a, "{\"rid\":[{\"rid\":\"e\",\"iter\":12345678901}],\"QueueSize=\":42}");
    CHECK_INT(a.nrids, 1);
    CHECK(a.queue_size == 42);

    /* numval's integer fast path (up to 9 digits ended by ',' or '}')
     * and each way out of it to the general parser: 10 digits, whitespace
     * after the digits, a fraction, an exponent, ']' or the text's end
     * after them, a stray byte */
    decode(&a, "{\"rid\":[{\"rid\":\"f\",\"iter\":123456789,\"type\":7,\"num_scheduled_tokens\":1234567890,"
               "\"num_prompt_tokens\":12 ,\"num_computed_tokens\":3.0,\"num_spec_output_tokens\":4e0}],"
               "\"QueueSize=\":999999999,\"TotalBlocks=\":0}");
    CHECK_INT(a.valid, 1);
    CHECK_INT(a.nrids, 1);
    CHECK_INT(a.rids[0].iter, 123456789);
    CHECK_INT(a.rids[0].type, 7);
    CHECK(a.rids[0].sched_tokens == 1234567890.0);
    CHECK(a.rids[0].prompt_tokens == 12);
    CHECK(a.rids[0].computed_tokens == 3);
    CHECK(a.rids[0].spec_tokens == 4);
    CHECK(a.queue_size == 999999999);
    CHECK(a.total == 0);
    decode(&a, "{\"QueueSize=\":7");
    CHECK_INT(a.valid, 0);
    CHECK(a.queue_size == 7);
    decode(&a, "{\"QueueSize=\":5x}");
    CHECK_INT(a.valid, 0);
    CHECK(a.queue_size == 5);
    decode(&a, "{\"accepted\":[1,2],\"QueueSize=\":08}");
    CHECK_INT(a.valid, 1);
    CHECK(a.queue_size == 8);

    /* numbers written as strings by older writers; decimals exact */
    decode(&a, "{\"TotalBlocks=\":\"100\",\"UsagePercent=\":0.1,\"hitCache\":-0.25}");
    CHECK(a.total == 100);
    CHECK(a.usage_pct == 0.1);
    CHECK(a.hit_cache == -0.25);

    /* escapes: kept raw, unescaped on copy */
    decode(&a, "{\"rid\":\"a\\\"b\\u00e9\\n\"}");
    CHECK_INT(a.valid, 1);
    char buf[64];
    int n = prs_str_copy(a.rid, buf, sizeof buf);
    CHECK_STR(buf, "a\"b\xc3\xa9\n");
    CHECK_INT(n, 6);

    /* malformed texts: not valid, never a crash */
    const char *bad[] = {"", "{", "{\"rid\":", "{\"a\":1,}", "{\"rid\":\"x\"} trailing", "[1,2]",
                         "{\"a\":\"unterminated}", "{\"a\":tru}", "{\"a\":01x}", "{\"rid\":[{\"rid\":}]}",
                         "{\"a\":\"ctl\x01\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        decode(&a, bad[i]);
        if (a.valid)
            fprintf(stderr, "accepted as valid: %s\n", bad[i]);
        CHECK_INT(a.valid, 0);
    }
    /* UTF-8: valid multibyte text passes; invalid bytes make the text invalid */
    decode(&a, "{\"rid\":\"caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"}");
    CHECK_INT(a.valid, 1);
    const char *bad_utf8[] = {"{\"a\":\"\xff\"}", "{\"a\":\"\xc0\xaf\"}", "{\"a\":\"\xed\xa0\x80\"}",
                              "{\"a\":\"\xe4\xb8\"}", "{\"a\":\"\xf5\x80\x80\x80\"}"};
    for (size_t i = 0; i < sizeof bad_utf8 / sizeof *bad_utf8; i++) {
        decode(&a, bad_utf8[i]);
        CHECK_INT(a.valid, 0);
    }
    decode(&a, "{}");
    CHECK_INT(a.valid, 1);
    CHECK_INT(a.rid_kind, 0);

    prs_str obj = {"{\"r1\": 2, \"r2\": \"3\"}", 20, 0};
    CHECK(prs_json_object_number(obj, "r2", 2) == 3);
    CHECK(isnan(prs_json_object_number(obj, "r3", 2)));
    prs_str s;
    CHECK_INT(prs_json_object_string("{\"name\":\"httpReq\",\"domain\":\"Request\"}", 36, "domain", &s), 1);
    CHECK(s.n == 7 && !memcmp(s.p, "Request", 7));
    prs_args_free(&a);
}

static void test_ids(void)
{
    prs_ids *ids = prs_ids_new();
    int http = prs_ids_get(ids, "http-1", 6);
    int eng = prs_ids_get(ids, "engine-1", 8);
    CHECK(http != eng);
    CHECK_INT(prs_ids_get(ids, "http-1", 6), http);
    CHECK_INT(prs_ids_find(ids, "nope", 4), -1);
    int absorbed;
    int root = prs_ids_link(ids, http, eng, &absorbed); /* Link {from: http-1, to: engine-1} */
    CHECK_INT(root, http);                              /* named by `from`, as the reference */
    CHECK_INT(absorbed, eng);
    CHECK_INT(prs_ids_root(ids, eng), http);
    int worker = prs_ids_get(ids, "worker-1", 8);      /* a chain: http -> engine -> worker */
    prs_ids_link(ids, eng, worker, &absorbed);
    CHECK_INT(prs_ids_root(ids, worker), http);
    CHECK_STR(prs_ids_name(ids, prs_ids_root(ids, worker)), "http-1");
    prs_ids_link(ids, worker, http, &absorbed);
    CHECK_INT(absorbed, -1);                            /* already one request */
    for (int i = 0; i < 100000; i++) {                  /* growth keeps every id */
        char b[32];
        int n = snprintf(b, sizeof b, "id-%d", i);
        prs_ids_get(ids, b, n);
    }
    CHECK_INT(prs_ids_count(ids), 100003);
    CHECK_STR(prs_ids_name(ids, prs_ids_find(ids, "id-77777", 8)), "id-77777");
    prs_ids_free(ids);
}

static void test_reorder(void)
{
    /* rows in insert order with lateness <= 5: out in (ts, rowid) order */
    int64_t ts[] = {10, 12, 8, 15, 11, 20, 16, 16, 25, 21, 30};
    int n = (int)(sizeof ts / sizeof *ts);
    int64_t late = 5, maxts = INT64_MIN, last = INT64_MIN;
    prs_reorder *b = prs_reorder_new();
    int got = 0;
    char name[16];
    for (int i = 0; i <= n; i++) {
        if (i < n) {
            snprintf(name, sizeof name, "r%d", i);
            prs_rec r = {ts[i], 0, name, "cat", "{}", 2, 1, 1, NULL, NULL};
            prs_reorder_push(b, &r, i);
            if (ts[i] > maxts)
                maxts = ts[i];
        }
        int64_t m;
        while (prs_reorder_min(b, &m) && (i == n || m < maxts - late)) {
            prs_rec o;
            prs_reorder_pop(b, &o);
            CHECK(o.ts >= last);
            last = o.ts;
            CHECK_STR(o.cat, "cat");
            CHECK(o.args_len == 2 && !memcmp(o.args, "{}", 2));
            got++;
        }
    }
    CHECK_INT(got, n);
    CHECK(prs_reorder_peak(b) <= 5);
    prs_reorder_free(b);
}

static void test_percentiles(void)
{
    double v[] = {30, NAN, 7, 11};
    long long n = prs_sort_values(v, 4);
    CHECK_INT(n, 3);
    CHECK(prs_percentile(v, n, 50) == 11);
    CHECK(fabs(prs_percentile(v, n, 99) - 29.62) < 1e-9); /* 11 + (30 - 11) * 0.98 */
    CHECK(isnan(prs_percentile(v, 0, 50)));
}

/* A real store whose rows are out of time order, with an index on
 * timestamp that neither pass may walk (the lateness is measured on the
 * rowid scan), rows without a valid timestamp, and equal timestamps (rowid
 * breaks the tie): prs_store_* must yield exactly ORDER BY timestamp, id. */
static void test_store_order(void)
{
    char dir[] = "/tmp/spp-units-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/ms_service_t.db", dir);
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       RAW_SCHEMA
                       "CREATE INDEX slice_ts ON slice(timestamp);",
                       NULL, NULL, NULL) == SQLITE_OK);
    /* insert order (rowid) vs time: up to 7 late */
    int64_t ts[] = {100, 103, 96, 110, 103, 0, 104, 120, 113, -5, 121, 121, 119};
    int n = (int)(sizeof ts / sizeof *ts), valid = 0;
    sqlite3_stmt *ins;
    CHECK(sqlite3_prepare_v2(db, "INSERT INTO slice(timestamp, duration, name, cat, args, pid, tid)"
                                 " VALUES(?1, 0, ?2, 'c', '{}', 1, 1)", -1, &ins, NULL) == SQLITE_OK);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", i + 1);
        sqlite3_bind_int64(ins, 1, ts[i]);
        sqlite3_bind_text(ins, 2, name, -1, SQLITE_TRANSIENT);
        CHECK(sqlite3_step(ins) == SQLITE_DONE);
        sqlite3_reset(ins);
        valid += ts[i] > 0;
    }
    sqlite3_finalize(ins);
    CHECK(sqlite3_exec(db, "INSERT INTO slice(timestamp, name, cat, args) VALUES(NULL, 'null', 'c', '{}')",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_stmt *want;
    CHECK(sqlite3_prepare_v2(db, "SELECT timestamp, name FROM slice NOT INDEXED WHERE timestamp > 0"
                                 " ORDER BY timestamp, id", -1, &want, NULL) == SQLITE_OK);
    prs_log_set_level(PRS_NONE);
    for (int exact = 0; exact <= 1; exact++) { /* one pass, then with the first pass */
        prs_store_exact(&test_ctx, exact);
        prs_store *st = prs_store_open(&test_ctx, path, 0);
        CHECK(st != NULL);
        CHECK_INT(st ? st->mode : -1, PRS_READ_REORDER);
        int got = 0;
        prs_rec r;
        sqlite3_reset(want);
        while (st && prs_store_peek(st, &r)) {
            CHECK(sqlite3_step(want) == SQLITE_ROW);
            CHECK(r.ts == sqlite3_column_int64(want, 0));
            CHECK_STR(r.name, (const char *)sqlite3_column_text(want, 1));
            prs_store_next(st);
            got++;
        }
        CHECK_INT(got, valid);
        CHECK(sqlite3_step(want) == SQLITE_DONE);
        CHECK_INT(prs_store_violations(&test_ctx), 0);
        prs_store_close(st);
    }
    prs_store_exact(&test_ctx, 0);
    sqlite3_finalize(want);
    sqlite3_close(db);
    prs_log_set_level(PRS_WARNING);
    unlink(path);
    rmdir(dir);
}

/* Writes a store of `forward` spans (1 ms each) at the given seconds, in
 * that insert order. */
static void late_store(const char *path, const double *sec, int n)
{
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       RAW_SCHEMA
                       "INSERT INTO Meta(name, value) VALUES('hostname', 'h1');",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_stmt *ins;
    CHECK(sqlite3_prepare_v2(db, "INSERT INTO slice(timestamp, duration, name, cat, args, pid, tid)"
                                 " VALUES(?1, 1000000, 'forward', 'ModelExecute', '{\"type\":2}', 1, 1)", -1, &ins,
                             NULL) == SQLITE_OK);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int64(ins, 1, 1700000000000000000LL + (int64_t)(sec[i] * 1e9));
        CHECK(sqlite3_step(ins) == SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_finalize(ins);
    sqlite3_close(db);
}

/* One pass (the default) meets a row 7 s late, after the rows its first
 * window is sized from (storeread.c PREFIX_ROWS = 16384): the store reports a
 * violation; exact mode reads it in order; and the whole parse (prs_run)
 * starts again by itself and writes forward.csv in time order with every
 * row. */
static void test_one_pass_restart(void)
{
    char dir[] = "/tmp/spp-units-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[96], out[96], csv[128];
    snprintf(path, sizeof path, "%s/ms_service_late.db", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(csv, sizeof csv, "%s/forward.csv", out);
    enum { FILL = 66000 };
    int n = FILL + 3;
    double *sec = malloc((size_t)n * sizeof *sec);
    for (int i = 0; i < FILL; i++)
        sec[i] = 1 + i * 0.001; /* one forward per ms: 66 s */
    sec[FILL] = sec[FILL - 1] - 7; /* inserted 7 s late */
    sec[FILL + 1] = sec[FILL - 1] + 1;
    sec[FILL + 2] = sec[FILL - 1] + 2;
    late_store(path, sec, n);
    free(sec);
    prs_log_set_level(PRS_NONE);
    for (int exact = 0; exact <= 1; exact++) {
        prs_store_exact(&test_ctx, exact);
        prs_store *st = prs_store_open(&test_ctx, path, 0);
        CHECK(st != NULL);
        prs_rec r;
        int64_t last = 0;
        int got = 0;
        while (st && prs_store_peek(st, &r)) {
            CHECK(r.ts >= last);
            last = r.ts;
            prs_store_next(st);
            got++;
        }
        CHECK_INT(prs_store_violations(&test_ctx), exact ? 0 : 1);
        if (exact)
            CHECK_INT(got, n);
        prs_store_close(st);
    }
    prs_store_exact(&test_ctx, 0);
    prs_opts o = {0};
    o.input = dir;
    o.output = out;
    o.csv = 1;
    CHECK_INT(prs_run(&o), 0); /* its own context: the restart is inside */
    FILE *f = fopen(csv, "r");
    CHECK(f != NULL);
    char line[1024];
    int rows = 0;
    double prev = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (rows++ == 0)
            continue; /* header */
        /* start_time(ms) is the 13th column */
        char *p = line;
        for (int c = 0; c < 12 && p; c++)
            p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
        CHECK(p != NULL);
        double t = p ? atof(p) : 0;
        CHECK(t >= prev);
        prev = t;
    }
    if (f)
        fclose(f);
    CHECK_INT(rows, n + 1);
    prs_log_set_level(PRS_WARNING);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* Whether files a and b hold the same bytes (both absent counts as same). */
static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = !fa == !fb;
    while (same && fa) {
        int ca = getc(fa), cb = getc(fb);
        same = ca == cb;
        if (ca == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* One whole parse of in into out (every format), in this process, with
 * tap (NULL: none) seeing its rows and records. */
static int parse_tapped(const char *in, const char *out, const prs_tap *tap)
{
    prs_opts o = {0};
    o.input = in;
    o.output = out;
    o.csv = o.json = o.db = 1;
    o.tap = tap;
    return prs_run(&o);
}

static int parse_into(const char *in, const char *out) { return parse_tapped(in, out, NULL); }

/* The same parse in a child process of its own: the reference a parse that
 * follows another in one process must equal. */
static void parse_alone(const char *in, const char *out)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(parse_into(in, out) == 0 ? 0 : 1);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void check_same_outputs(const char *got, const char *want)
{
    static const char *const files[] = {"forward.csv", "batch.csv", "request.csv", "kvcache.csv",
                                        "request_status.csv", "chrome_tracing.json", "profiler.db"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char a[160], b[160];
        snprintf(a, sizeof a, "%s/%s", got, files[i]);
        snprintf(b, sizeof b, "%s/%s", want, files[i]);
        if (!same_file(a, b))
            fprintf(stderr, "differs from the parse alone: %s\n", a);
        CHECK(same_file(a, b));
    }
}

enum { LATE_FILL = 20000 };

/* Makes the folders dir/a and dir/b (their names in in_a, in_b: 96 bytes
 * each) and in a a store of LATE_FILL spans 1 ms apart and one more 7 s
 * before the last, inserted after them: its one pass restarts. */
static void late_input(const char *dir, char *in_a, char *in_b)
{
    char path[128];
    snprintf(in_a, 96, "%s/a", dir);
    snprintf(in_b, 96, "%s/b", dir);
    CHECK(mkdir(in_a, 0755) == 0 && mkdir(in_b, 0755) == 0);
    double *sec = malloc((LATE_FILL + 1) * sizeof *sec);
    for (int i = 0; i < LATE_FILL; i++)
        sec[i] = 1 + i * 0.001;
    sec[LATE_FILL] = sec[LATE_FILL - 1] - 7;
    snprintf(path, sizeof path, "%s/ms_service_a.db", in_a);
    late_store(path, sec, LATE_FILL + 1);
    free(sec);
}

/* Two parses in one process, one after the other on different inputs (one
 * that makes the parse start again in exact mode, one that does not), and
 * the first again: each writes what it writes alone, byte for byte. No
 * state of one parse (its context, its model) leaks into the next. */
static void test_two_parses(void)
{
    char dir[] = "/tmp/spp-twice-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char in_a[96], in_b[96], path[128];
    late_input(dir, in_a, in_b);
    double sec[300];
    for (int i = 0; i < 300; i++)
        sec[i] = 5 + i * 0.01;
    snprintf(path, sizeof path, "%s/ms_service_b.db", in_b);
    late_store(path, sec, 300);
    prs_log_set_level(PRS_NONE);
    char alone_a[96], alone_b[96], a1[96], b1[96], a2[96];
    snprintf(alone_a, sizeof alone_a, "%s/alone_a", dir);
    snprintf(alone_b, sizeof alone_b, "%s/alone_b", dir);
    snprintf(a1, sizeof a1, "%s/a1", dir);
    snprintf(b1, sizeof b1, "%s/b1", dir);
    snprintf(a2, sizeof a2, "%s/a2", dir);
    parse_alone(in_a, alone_a);
    parse_alone(in_b, alone_b);
    CHECK_INT(parse_into(in_a, a1), 0);
    CHECK_INT(parse_into(in_b, b1), 0);
    CHECK_INT(parse_into(in_a, a2), 0);
    snprintf(path, sizeof path, "%s/forward.csv", alone_b);
    CHECK(access(path, R_OK) == 0); /* the comparison is of real outputs */
    check_same_outputs(a1, alone_a);
    check_same_outputs(b1, alone_b);
    check_same_outputs(a2, alone_a);
    prs_log_set_level(PRS_WARNING);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* Every file under want (and one folder down: span_info/) has a twin under
 * got with the same bytes, and got has no other file. */
static void check_same_tree(const char *got, const char *want, int depth)
{
    DIR *d = opendir(want);
    CHECK(d != NULL);
    int nwant = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char a[512], b[512];
        snprintf(a, sizeof a, "%s/%s", got, e->d_name);
        snprintf(b, sizeof b, "%s/%s", want, e->d_name);
        struct stat st;
        CHECK(stat(b, &st) == 0);
        nwant++;
        if (S_ISDIR(st.st_mode) && depth < 1) {
            check_same_tree(a, b, depth + 1);
            continue;
        }
        if (!same_file(a, b))
            fprintf(stderr, "differs from the parse alone: %s\n", a);
        CHECK(same_file(a, b));
    }
    if (d)
        closedir(d);
    int ngot = 0;
    d = opendir(got);
    CHECK(d != NULL);
    while (d && (e = readdir(d)))
        ngot += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK_INT(ngot, nwant);
}

/* What a thread's tap saw of its parse: counts and a hash of every row's
 * table and values and of every record, in the order they came since the
 * parse last started over, and how many times it did. */
typedef struct tap_seen { long long rows, records, restarts; uint64_t hash; } tap_seen;
#define FNV_BASIS 14695981039346656037ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
    return h;
}

static void seen_row(void *ctx, const prs_table *t, const prs_val *v)
{
    tap_seen *s = ctx;
    s->rows++;
    s->hash = fnv(s->hash, t->key, strlen(t->key));
    for (int i = 0; i < t->ncols; i++) {
        s->hash = fnv(s->hash, &v[i].kind, sizeof v[i].kind);
        if (v[i].kind == PRS_TEXT)
            s->hash = fnv(s->hash, v[i].s, (size_t)v[i].n);
        else if (v[i].kind == PRS_INT)
            s->hash = fnv(s->hash, &v[i].i, sizeof v[i].i);
        else if (v[i].kind != PRS_NULL)
            s->hash = fnv(s->hash, &v[i].d, sizeof v[i].d);
    }
}

static void seen_record(void *ctx, const prs_rec *r)
{
    tap_seen *s = ctx;
    s->records++;
    s->hash = fnv(s->hash, &r->ts, sizeof r->ts);
    s->hash = fnv(s->hash, r->name, strlen(r->name));
}

/* The parse starts over: what the abandoned run handed over is dropped. */
static void seen_restart(void *ctx)
{
    tap_seen *s = ctx;
    *s = (tap_seen){0, 0, s->restarts + 1, FNV_BASIS};
}

/* One parse on the calling thread, with its own log level and tap. */
typedef struct parse_job {
    const char *in, *out;
    int level;                    /* set on the parse's thread */
    pthread_barrier_t *start;     /* NULL: start at once */
    int exact_tap;                /* 1: a tap without restart (the parse starts exact) */
    int rc, level_after;
    tap_seen seen;
} parse_job;

static void *parse_job_run(void *arg)
{
    parse_job *j = arg;
    prs_log_set_level(j->level);
    j->seen = (tap_seen){0, 0, 0, FNV_BASIS};
    prs_tap tap = {.row = seen_row, .record = seen_record, .restart = j->exact_tap ? NULL : seen_restart,
                   .ctx = &j->seen};
    if (j->start)
        pthread_barrier_wait(j->start);
    j->rc = parse_tapped(j->in, j->out, &tap);
    j->level_after = prs_log_level();
    return NULL;
}

/* Two parses of two different inputs on two threads at the same time (one
 * that restarts in exact mode, with the log silenced; one with PD,
 * coordinator and request reports, at level error), each with its own tap:
 * each writes, byte for byte, what it writes alone, and each tap sees
 * exactly its own parse's rows and records. The log level is the
 * thread's, the tap the parse's option; everything else is in the parse's
 * context and model, and a later parse on the same thread without a tap
 * reaches none of the earlier parses' taps.
 * The taps can start over: the late input's parse keeps its one pass,
 * restarts once, and after its restart the tap sees exactly what a tap
 * without restart sees (that parse starts in exact mode, never restarts). */
static void test_two_threads(void)
{
    char dir[] = "/tmp/spp-threads-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char in_a[96], in_b[96], path[128];
    late_input(dir, in_a, in_b);
    snprintf(path, sizeof path, "%s/ms_service_b.db", in_b);
    serving_store(path, 40, 6, LIFETIME_NONE);
    char out[6][96];
    for (int i = 0; i < 6; i++)
        snprintf(out[i], sizeof out[i], "%s/out%d", dir, i);
    parse_job alone[2] = {{.in = in_a, .out = out[0], .level = PRS_NONE},
                          {.in = in_b, .out = out[1], .level = PRS_ERROR}};
    parse_job both[2] = {{.in = in_a, .out = out[2], .level = PRS_NONE},
                         {.in = in_b, .out = out[3], .level = PRS_ERROR}};
    parse_job exact = {.in = in_a, .out = out[4], .level = PRS_NONE, .exact_tap = 1};
    prs_log_set_level(PRS_WARNING);
    for (int i = 0; i < 2; i++)
        parse_job_run(&alone[i]); /* one after the other, on this thread */
    CHECK_INT(prs_log_level(), PRS_ERROR); /* the last job's, on this thread */
    prs_log_set_level(PRS_WARNING);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        both[i].start = &start;
        CHECK(pthread_create(&th[i], NULL, parse_job_run, &both[i]) == 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    CHECK_INT(prs_log_level(), PRS_WARNING); /* the threads' levels were theirs */
    for (int i = 0; i < 2; i++) {
        CHECK_INT(alone[i].rc, 0);
        CHECK_INT(both[i].rc, 0);
        CHECK_INT(both[i].level_after, both[i].level);
        CHECK(alone[i].seen.rows > 0 && alone[i].seen.records > 0);
        CHECK_INT(both[i].seen.rows, alone[i].seen.rows);
        CHECK_INT(both[i].seen.records, alone[i].seen.records);
        CHECK(both[i].seen.hash == alone[i].seen.hash);
        check_same_tree(out[2 + i], out[i], 0);
    }
    /* the late input's one pass was abandoned once, and its tap told so
     * (on both threads); the other input's never */
    CHECK_INT(alone[0].seen.restarts, 1);
    CHECK_INT(both[0].seen.restarts, 1);
    CHECK_INT(alone[1].seen.restarts, 0);
    CHECK_INT(both[1].seen.restarts, 0);
    /* after the restart the tap holds each record once, and the very rows
     * and records (same order) of a parse that started in exact mode: a
     * tap without restart; same files too */
    CHECK_INT(alone[0].seen.records, LATE_FILL + 1);
    prs_log_set_level(PRS_WARNING);
    parse_job_run(&exact);
    prs_log_set_level(PRS_WARNING);
    CHECK_INT(exact.rc, 0);
    CHECK_INT(exact.seen.restarts, 0);
    CHECK_INT(exact.seen.records, LATE_FILL + 1);
    CHECK_INT(exact.seen.rows, alone[0].seen.rows);
    CHECK(exact.seen.hash == alone[0].seen.hash);
    check_same_tree(out[4], out[0], 0);
    /* no tap given: no tap called (the taps above belonged to their parses) */
    tap_seen before = exact.seen;
    CHECK_INT(parse_into(in_a, out[5]), 0);
    CHECK_INT(exact.seen.rows, before.rows);
    CHECK_INT(exact.seen.records, before.records);
    check_same_tree(out[5], out[0], 0);
    /* B's outputs are the reports compared, not empty files */
    static const char *const b_files[] = {"request.csv", "batch.csv", "forward.csv", "kvcache.csv",
                                          "coordinator.csv", "coordinator_running.csv", "profiler.db"};
    for (size_t i = 0; i < sizeof b_files / sizeof *b_files; i++) {
        snprintf(path, sizeof path, "%s/%s", out[1], b_files[i]);
        struct stat st;
        if (stat(path, &st) != 0 || st.st_size < 100)
            fprintf(stderr, "missing or short: %s\n", path);
        CHECK(stat(path, &st) == 0 && st.st_size >= 100);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    test_args();
    test_ids();
    test_reorder();
    test_store_order();
    test_one_pass_restart();
    test_two_parses();
    test_two_threads();
    test_percentiles();
    CHECK_DONE();
}
