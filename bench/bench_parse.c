/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_parse.c — throughput and peak memory of `servprof parse` on a large,
 * realistic input.
 *
 * Generates (once, then reused) two raw stores in the schema of
 * docs/api.md ("The raw store"): a front end (httpReq / httpRes and the Link of each
 * request to its engine id) and an engine (queueing, cache hits, KV
 * allocate/free, batch / execution / forward spans whose rid lists carry
 * every request of the step, KVCacheStatus, one detokenize per token per
 * request, and the pre/post-processing spans of each step). With the
 * defaults: 50,000 requests of 80 output tokens in batches of 32 — about 5
 * million records. Spans are inserted when they end, as a recorder does, so
 * the tables are not in time order.
 *
 * Then it runs the real command (`servprof parse`, full default output:
 * every CSV, chrome_tracing.json and profiler.db) as a child process and
 * reports records/s and the child's peak RSS (wait4 rusage).
 *
 * With --analyze it runs `servprof analyze -i IN --format json` (stdout to
 * /dev/null) on the same input instead: raw stores parsed in-process with
 * no report written, summaries, windows and findings computed.
 *
 * With --late-span the engine store gets one more row, inserted last: a
 * span covering the whole run (as a server-lifetime span written at
 * shutdown would be). It comes later than any reorder window the one pass
 * can guess from the first rows, on the store's very last row: the worst
 * case of the parse's restart in exact mode (docs/parse.md, "Streaming").
 *
 * With --engines E the engine's rows go to E engine stores (pids 2000,
 * 2100, ...): batch b to engine b mod E, one after another as before, so
 * the front end stays in time order and the work is the same; E = 8 with
 * the front end makes the 9 stores of an 8-GPU server — the input of the
 * parallel parse's figures (`--jobs`, docs/benchmarks.md "Parse").
 *
 * With --big-args MB the engine store gets one span whose args carry a
 * string of MB megabytes; with --big-rids N one schedule step whose rid
 * list has N entries (N requests of their own): the inputs of the
 * per-record limits (docs/parse.md, "Limits"; peak RSS measured with
 * /usr/bin/time -v in docs/benchmarks.md).
 *
 * usage: bench_parse [--requests N] [--tokens T] [--batch B] [--dir D]
 *                    [--bin PATH/servprof] [--format ...] [--analyze] [--late-span]
 *                    [--big-args MB] [--big-rids N] [--engines E]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#define T0 1700000000000000000LL
#define MAX_ENGINES 64
#define MS 1000000LL

static const char *schema =
    "CREATE TABLE slice(id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER, duration INTEGER, name TEXT,"
    " depth INTEGER, track_id INTEGER, cat TEXT, args TEXT, cname TEXT, end_time INTEGER, flag_id TEXT,"
    " pid INTEGER, tid INTEGER);"
    "CREATE TABLE Meta(name TEXT, value TEXT, slice TEXT);"
    "CREATE TABLE process(pid TEXT PRIMARY KEY, process_name TEXT, label TEXT, process_sort_index INTEGER,"
    " parentPid TEXT);"
    "CREATE TABLE thread(track_id INTEGER PRIMARY KEY, tid TEXT, pid TEXT, thread_name TEXT,"
    " thread_sort_index INTEGER);"
    "CREATE TABLE counter(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, pid TEXT, timestamp INTEGER, cat TEXT,"
    " args TEXT);"
    "CREATE TABLE flow(id INTEGER PRIMARY KEY AUTOINCREMENT, flow_id TEXT, name TEXT, cat TEXT, track_id INTEGER,"
    " timestamp INTEGER, type TEXT);";

typedef struct store {
    sqlite3 *db;
    sqlite3_stmt *ins;
    int pid;
    long long rows;
} store;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int open_store(store *s, const char *path, const char *host, int pid)
{
    unlink(path);
    if (sqlite3_open(path, &s->db) != SQLITE_OK) {
        fprintf(stderr, "bench_parse: cannot create %s: %s\n", path, sqlite3_errmsg(s->db));
        return -1;
    }
    sqlite3_exec(s->db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF", NULL, NULL, NULL);
    sqlite3_exec(s->db, schema, NULL, NULL, NULL);
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO Meta(name, value) VALUES ('hostname', '%s'), ('ppid', '1')", host);
    sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    sqlite3_prepare_v2(s->db, "INSERT INTO slice(timestamp, duration, name, depth, track_id, cat, args, end_time,"
                              " pid, tid) VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?)", -1, &s->ins, NULL);
    s->pid = pid;
    s->rows = 0;
    return 0;
}

static void row(store *s, int64_t ts, int64_t dur, const char *name, const char *cat, int tid, const char *args)
{
    sqlite3_stmt *st = s->ins;
    sqlite3_bind_int64(st, 1, ts);
    sqlite3_bind_int64(st, 2, dur);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, tid);
    sqlite3_bind_text(st, 5, cat, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, args, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 7, ts + dur);
    sqlite3_bind_int(st, 8, s->pid);
    sqlite3_bind_int(st, 9, tid);
    sqlite3_step(st);
    sqlite3_reset(st);
    s->rows++;
}

static void close_store(store *s)
{
    sqlite3_finalize(s->ins);
    sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(s->db);
}

/* The rid list of a step: every request of the batch, its iteration. */
static int rid_list(char *buf, size_t cap, long long first, int n, int iter, int prefill_tokens)
{
    size_t o = (size_t)snprintf(buf, cap, "{\"type\":2,\"rid\":[");
    for (int i = 0; i < n && o < cap - 200; i++)
        o += (size_t)snprintf(buf + o, cap - o,
                              "%s{\"rid\":\"engine-%lld\",\"iter\":%d,\"type\":%d,\"num_scheduled_tokens\":%d,"
                              "\"num_prompt_tokens\":%d,\"num_computed_tokens\":%d}",
                              i ? "," : "", first + i, iter, iter ? 1 : 0, iter ? 1 : prefill_tokens,
                              prefill_tokens, iter ? prefill_tokens + iter : 0);
    o += (size_t)snprintf(buf + o, cap - o, "],\"batch_type\":\"%s\",\"batch_size\":%d}",
                          iter ? "Decode" : "Prefill", n);
    return (int)o;
}

/* The rows of --big-args / --big-rids, in the engine store at ts. */
static void big_rows(store *en, int64_t ts, long long big_args_mb, long long big_rids)
{
    if (big_args_mb > 0) {
        size_t n = (size_t)big_args_mb << 20;
        char *a = malloc(n + 64);
        size_t o = (size_t)snprintf(a, n + 64, "{\"type\":2,\"blob\":\"");
        memset(a + o, 'x', n);
        o += n;
        memcpy(a + o, "\"}", 3);
        row(en, ts, MS, "bigArgs", "Server", 2006, a);
        free(a);
    }
    if (big_rids > 0) {
        size_t cap = (size_t)big_rids * 80 + 64, o;
        char *a = malloc(cap);
        o = (size_t)snprintf(a, cap, "{\"type\":2,\"rid\":[");
        for (long long i = 0; i < big_rids; i++)
            o += (size_t)snprintf(a + o, cap - o, "%s{\"rid\":\"big-%lld\",\"iter\":0,\"type\":0}", i ? "," : "", i);
        snprintf(a + o, cap - o, "],\"batch_type\":\"Prefill\",\"batch_size\":%lld}", big_rids);
        row(en, ts + 2 * MS, MS, "batchFrameworkProcessing", "BatchSchedule", 2002, a);
        free(a);
    }
}

static int generate(const char *dir, long long nreq, int tokens, int batch, int late_span, long long big_args_mb,
                    long long big_rids, int engines)
{
    char p1[4200], p2[4200];
    if (strlen(dir) > 4096) {
        fprintf(stderr, "bench_parse: folder name too long\n");
        return -1;
    }
    snprintf(p1, sizeof p1, "%.4096s/ms_service_bench-1000.db", dir);
    store fe, ens[MAX_ENGINES];
    if (open_store(&fe, p1, "bench", 1000))
        return -1;
    for (int e = 0; e < MAX_ENGINES; e++) { /* an earlier input's extra engines must not stay */
        snprintf(p2, sizeof p2, "%.4096s/ms_service_bench-%d.db", dir, 2000 + 100 * e);
        if (e >= engines)
            unlink(p2);
        else if (open_store(&ens[e], p2, "bench", 2000 + 100 * e))
            return -1;
    }
    char *buf = malloc(1 << 20);
    char a[512];
    int64_t t = T0;
    int64_t step_ns = 15 * MS;
    long long kvs[MAX_ENGINES] = {0}, total_blocks = 100000;
    for (long long first = 0; first < nreq; first += batch) {
        int e = (int)(first / batch % engines);
        store *en = &ens[e];  /* this batch's engine */
        long long *kv = &kvs[e];
        int n = (int)(nreq - first < batch ? nreq - first : batch);
        int64_t w = t;
        for (int i = 0; i < n; i++) {
            long long r = first + i;
            int64_t at = w + i * 100000LL;
            snprintf(a, sizeof a, "{\"type\":0,\"rid\":\"http-%lld\"}", r);
            row(&fe, at, 0, "httpReq", "Request", 1001, a);
            snprintf(a, sizeof a, "{\"type\":3,\"from\":\"http-%lld\",\"to\":\"engine-%lld\"}", r, r);
            row(en, at + 20000, 0, "Link", "Request", 2001, a);
            snprintf(a, sizeof a, "{\"type\":0,\"rid\":\"engine-%lld\",\"QueueSize=\":%d,"
                                  "\"scope#QueueName\":\"WAITING\"}", r, i + 1);
            row(en, at + 50000, 0, "Enqueue", "Schedule", 2001, a);
        }
        int64_t deq = w + n * 100000LL + MS;
        for (int i = 0; i < n; i++) {
            long long r = first + i;
            snprintf(a, sizeof a, "{\"type\":0,\"rid\":\"engine-%lld\",\"QueueSize=\":%d,"
                                  "\"scope#QueueName\":\"WAITING\"}", r, n - i - 1);
            row(en, deq + i * 1000, 0, "Dequeue", "Schedule", 2001, a);
            snprintf(a, sizeof a, "{\"type\":0,\"rid\":\"engine-%lld\",\"hitCache\":0.%d}", r, (int)(r % 10));
            row(en, deq + i * 1000 + 500, 0, "CacheHitRate", "Schedule", 2001, a);
            snprintf(a, sizeof a, "{\"type\":0,\"rid\":\"engine-%lld\",\"deviceBlock=\":%lld}", r,
                     total_blocks - *kv);
            row(en, deq + i * 1000 + 700, 0, "Allocate", "KVCache", 2001, a);
            *kv += 8;
        }
        int64_t s0 = deq + 2 * MS;
        for (int k = 0; k < tokens; k++) {
            int64_t b = s0 + k * step_ns;
            rid_list(buf, 1 << 20, first, n, k, 128);
            row(en, b, 2 * MS, "batchFrameworkProcessing", "BatchSchedule", 2001, buf);
            row(en, b + 2 * MS, 11 * MS, "modelExec", "Execute", 2002, buf);
            row(en, b + 2 * MS + 300000, 600000, "preprocess", "Execute", 2002, "{\"type\":2}");
            row(en, b + 3 * MS, 9 * MS, "forward", "ModelExecute", 2003, buf);
            row(en, b + 12 * MS, 500000, "sample", "Execute", 2002, "{\"type\":2}");
            snprintf(a, sizeof a, "{\"type\":0,\"TotalBlocks=\":%lld,\"FreeBlocksBefore=\":%lld,"
                                  "\"FreeBlocksAfter=\":%lld,\"UsagePercent=\":%.4f}",
                     total_blocks, total_blocks - *kv, total_blocks - *kv - n,
                     (double)(*kv + n) / (double)total_blocks);
            *kv += n;
            row(en, b + 13 * MS, 0, "KVCacheStatus", "KVCache", 2001, a);
            for (int i = 0; i < n; i++) {
                snprintf(a, sizeof a, "{\"type\":0,\"rid\":\"engine-%lld\"}", first + i);
                row(en, b + 13 * MS + 100000 + i * 1000, 0, "detokenize", "Request", 2004, a);
            }
        }
        int64_t end = s0 + tokens * step_ns;
        for (int i = 0; i < n; i++) {
            long long r = first + i;
            snprintf(a, sizeof a, "{\"type\":0,\"rid\":\"engine-%lld\",\"deviceBlock=\":%lld}", r,
                     total_blocks - *kv + 8 + tokens);
            row(en, end + i * 1000, 0, "Free", "KVCache", 2001, a);
            *kv -= 8 + tokens;
            snprintf(a, sizeof a, "{\"type\":0,\"rid\":\"http-%lld\",\"recvTokenSize=\":128,"
                                  "\"replyTokenSize=\":%d}", r, tokens);
            row(&fe, end + MS + i * 1000, 0, "httpRes", "Request", 1001, a);
        }
        t = end + 2 * MS;
    }
    if (late_span)
        row(&ens[0], T0 - MS, t - T0 + MS, "serverLifetime", "Server", 2005, "{\"type\":2}");
    big_rows(&ens[0], t, big_args_mb, big_rids);
    free(buf);
    long long total = fe.rows;
    close_store(&fe);
    for (int e = 0; e < engines; e++) {
        total += ens[e].rows;
        close_store(&ens[e]);
    }
    printf("generated %lld records (%lld requests, %d tokens each, batch %d) in %s\n", total, nreq, tokens,
           batch, dir);
    return 0;
}

int main(int argc, char **argv)
{
    long long nreq = 50000;
    int tokens = 80, batch = 32;
    const char *dir = "bench-parse-data";
    char bin[4096];
    snprintf(bin, sizeof bin, "%s", argv[0]);
    char *slash = strrchr(bin, '/');
    if (slash)
        snprintf(slash, sizeof bin - (size_t)(slash - bin), "/../bin/servprof");
    else
        snprintf(bin, sizeof bin, "servprof");
    const char *extra[8] = {0};
    int nextra = 0, regen = 0, analyze = 0, late_span = 0;
    long long big_args_mb = 0, big_rids = 0;
    int engines = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--requests") && i + 1 < argc)
            nreq = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc)
            tokens = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--bin") && i + 1 < argc)
            snprintf(bin, sizeof bin, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--regenerate"))
            regen = 1;
        else if (!strcmp(argv[i], "--analyze"))
            analyze = 1;
        else if (!strcmp(argv[i], "--late-span"))
            late_span = 1;
        else if (!strcmp(argv[i], "--big-args") && i + 1 < argc)
            big_args_mb = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--big-rids") && i + 1 < argc)
            big_rids = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--engines") && i + 1 < argc)
            engines = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--format")) {
            extra[nextra++] = "--format";
            while (i + 1 < argc && argv[i + 1][0] != '-' && nextra < 7)
                extra[nextra++] = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_parse [--requests N] [--tokens T] [--batch B] [--dir D] [--bin servprof]"
                            " [--format csv json db perfetto] [--regenerate] [--analyze] [--late-span]"
                            " [--big-args MB] [--big-rids N] [--engines E]\n");
            return 2;
        }
    }
    if (engines < 1 || engines > MAX_ENGINES) {
        fprintf(stderr, "bench_parse: --engines must be 1 to %d\n", MAX_ENGINES);
        return 2;
    }
    if (nreq <= 0 || tokens <= 0 || batch <= 0) {
        fprintf(stderr, "bench_parse: --requests, --tokens and --batch must be positive\n");
        return 2;
    }
    char in[4096], out[4096], stamp[4096], want[128];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(stamp, sizeof stamp, "%s/in/params", dir);
    if (engines > 1)
        snprintf(want, sizeof want, "%lld %d %d v1%s big %lld %lld engines %d\n", nreq, tokens, batch,
                 late_span ? " late" : "", big_args_mb, big_rids, engines);
    else /* the stamp of inputs generated before --engines: still reused */
        snprintf(want, sizeof want, "%lld %d %d v1%s big %lld %lld\n", nreq, tokens, batch, late_span ? " late" : "",
                 big_args_mb, big_rids);
    mkdir(dir, 0755);
    mkdir(in, 0755);
    char have[128] = "";
    FILE *f = fopen(stamp, "r");
    if (f) {
        if (!fgets(have, sizeof have, f))
            have[0] = 0;
        fclose(f);
    }
    if (regen || strcmp(have, want) != 0) {
        double g0 = now_s();
        unlink(stamp);
        if (generate(in, nreq, tokens, batch, late_span, big_args_mb, big_rids, engines) != 0)
            return 1;
        f = fopen(stamp, "w");
        if (f) {
            fputs(want, f);
            fclose(f);
        }
        printf("generation took %.1f s\n", now_s() - g0);
    }
    const char *args[16] = {bin, "parse", "--input-path", in, "--output-path", out, "--no-progress"};
    int na = 7;
    for (int i = 0; i < nextra; i++)
        args[na++] = extra[i];
    args[na] = NULL;
    if (analyze) {
        const char *a[] = {bin, "analyze", "-i", in, "--format", "json", NULL};
        memcpy(args, a, sizeof a);
    }
    fflush(stdout);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (analyze && !freopen("/dev/null", "w", stdout))
            _exit(127);
        execv(bin, (char *const *)args);
        fprintf(stderr, "bench_parse: cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("wait4");
        return 1;
    }
    double wall = now_s() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_parse: %s failed (status %d)\n", args[1], status);
        return 1;
    }
    /* Records = rows of the stores (their max rowid). */
    long long records = 0;
    for (int i = 0; i <= engines; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/ms_service_bench-%d.db", in, i ? 2000 + 100 * (i - 1) : 1000);
        sqlite3 *db;
        sqlite3_stmt *st;
        if (sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT count(*) FROM slice", -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                records += sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
        sqlite3_close(db);
    }
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 (double)ru.ru_stime.tv_usec / 1e6;
    printf("%s: %lld records in %.2f s wall (%.2f s CPU): %.0f records/s wall, %.0f records/s CPU; "
           "peak RSS %.1f MiB\n", args[1], records, wall, cpu, (double)records / wall, (double)records / cpu,
           (double)ru.ru_maxrss / 1024.0);
    return 0;
}
