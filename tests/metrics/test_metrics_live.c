/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_metrics_live.c — live metrics in one real process (and a forked
 * child), read back the way `servprof metrics serve` reads them:
 *
 *   - metric_enable 1, enable 0: records of two requests become counters,
 *     gauges and histograms with the right values; no session folder;
 *   - a forked child publishes its own file: while it lives its gauges add
 *     up with the parent's, after it dies its counters stay and its gauges
 *     go (the dead-process convention);
 *   - metric_enable is live: 0 closes the file (the process reads as dead,
 *     counters kept), 1 opens a new one;
 *   - tracing and metrics together: the store gets rows and metrics go on,
 *     also when tracing filters domains (the metrics' domains still pass);
 *   - metric_port: the process answers GET /metrics itself, until the key
 *     goes.
 *
 * Waits are bounded polls of the published file (it is published every
 * ~100 ms), never sleeps used as synchronisation.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "metrics.h"
#include "servprof.h"

static char dir[256], cfg[300], mdir[300];
static int tracing_now; /* "enable": 1 in the config (set once collection started) */

static double slack(void)
{
    const char *s = getenv("SERVPROF_SANITIZE");
    return s && *s ? 10.0 : 1.0;
}

static const char *domain = ""; /* the config's "domain" */
static int mport;                /* the config's "metric_port" */
static int forked;               /* a child wrote a metrics file of its own */

static void write_config(int enable, int metric_enable)
{
    char tmp[320];
    snprintf(tmp, sizeof tmp, "%s.tmp", cfg);
    FILE *f = fopen(tmp, "w");
    fprintf(f, "{\"enable\": %d, \"metric_enable\": %d, \"prof_dir\": \"%s/prof\", "
            "\"domain\": \"%s\", \"metric_port\": %d}\n", enable, metric_enable, dir, domain, mport);
    fclose(f);
    rename(tmp, cfg);
}

/* The value of one exact series ("name{labels}") in the folder's exposition,
 * or -1 when absent. */
static double value_of(const char *series)
{
    char *text;
    size_t len;
    sp_metrics_render(mdir, &text, &len);
    double v = -1;
    size_t n = strlen(series);
    for (char *p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (!strncmp(p, series, n) && p[n] == ' ')
            v = strtod(p + n + 1, NULL);
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    return v;
}

static void pause_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls until series == want (bounded: 10 s, x10 under sanitizers). */
static double wait_value(const char *series, double want)
{
    double v = value_of(series);
    for (int i = 0; i < (int)(500 * slack()) && v != want; i++) {
        pause_ms(20); /* a poll period, not a synchronisation: the loop checks the condition */
        v = value_of(series);
    }
    if (v != want)
        fprintf(stderr, "timed out waiting for %s == %g (last %g)\n", series, want, v);
    return v;
}

#define L "{role=\"test_metrics_liv\",model_name=\"m1\""
#define SERIES(name) "servprof_" name L "}"

static void one_request(const char *http, const char *eng, const char *status, int with_token)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, http);
    servprof_event(r, "httpReq");
    servprof_link(eng, http);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_res_str(r, eng);
    servprof_metric(r, "QueueSize", 1);
    servprof_metric_scope(r, "QueueName", "WAITING");
    servprof_event(r, "Enqueue");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_res_str(r, eng);
    servprof_metric(r, "QueueSize", 0);
    servprof_metric_scope(r, "QueueName", "WAITING");
    servprof_event(r, "Dequeue");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_res_str(r, eng);
    servprof_metric(r, "QueueSize", 1);
    servprof_metric_scope(r, "QueueName", "RUNNING");
    servprof_event(r, "Enqueue");
    int64_t t0 = servprof_now_ns();
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "BatchSchedule");
    servprof_attr_array_begin(r, "rid");
    servprof_attr_object_begin(r, NULL);
    servprof_attr_str(r, "rid", eng);
    servprof_attr_int(r, "num_scheduled_tokens", 10);
    servprof_attr_end(r);
    servprof_attr_end(r);
    servprof_span_at(r, "BatchSchedule", t0, t0 + 1000);
    /* Not a domain metrics read: with tracing off, not taken at all. */
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "ModelExecute");
    CHECK((r != NULL) == tracing_now);
    servprof_span_at(r, "forward", t0, t0 + 2000000);
    if (with_token) {
        r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
        servprof_res_str(r, http);
        servprof_event(r, "detokenize");
        /* A per-token record: DETAILED, so not collected with metrics only. */
        r = servprof_rec_begin(SERVPROF_LEVEL_DETAILED, "Request");
        CHECK(r == NULL);
        servprof_rec_cancel(r);
    }
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "KVCache");
    servprof_metric(r, "TotalBlocks", 100);
    servprof_metric(r, "UsedBlocks", 25);
    servprof_event(r, "KVCacheStatus");
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, http);
    servprof_metric(r, "recvTokenSize", 10);
    servprof_metric(r, "replyTokenSize", 5);
    /* The demo's key is "outcome"; "status" is the older spelling, also read. */
    servprof_attr_str(r, strcmp(status, "ok") ? "status" : "outcome", status);
    servprof_event(r, "httpRes");
}

static int count_entries(const char *path)
{
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void test_metrics_only(void)
{
    one_request("h1", "e1", "ok", 1);
    one_request("h2", "e2", "aborted", 0);
    CHECK(wait_value("servprof_requests_total" L ",outcome=\"ok\"}", 1) == 1);
    CHECK(wait_value("servprof_requests_total" L ",outcome=\"aborted\"}", 1) == 1);
    /* Histograms are observed one pass after httpRes. */
    CHECK(wait_value(SERIES("e2e_request_latency_seconds_count"), 2) == 2);
    CHECK(value_of(SERIES("prompt_tokens_total")) == 20);
    CHECK(value_of(SERIES("generation_tokens_total")) == 10);
    CHECK(value_of(SERIES("time_to_first_token_seconds_count")) == 1); /* only h1 had a token */
    CHECK(value_of(SERIES("request_queue_time_seconds_count")) == 2); /* via the Link */
    CHECK(value_of(SERIES("request_prefill_time_seconds_count")) == 1);
    CHECK(value_of(SERIES("time_per_output_token_seconds_count")) == 1);
    CHECK(value_of(SERIES("iteration_scheduled_tokens_count")) == 2);
    /* 10 tokens lie in (8, 12] of the count buckets 1, 1.5, 2, 3, 4, 6, 8, 12 ... */
    CHECK(value_of("servprof_iteration_scheduled_tokens_bucket" L ",le=\"8\"}") == 0);
    CHECK(value_of("servprof_iteration_scheduled_tokens_bucket" L ",le=\"12\"}") == 2);
    CHECK(value_of("servprof_iteration_scheduled_tokens_bucket" L ",le=\"+Inf\"}") == 2);
    CHECK(value_of(SERIES("iteration_batch_size_sum")) == 2);      /* one entry per step */
    CHECK(value_of(SERIES("iteration_scheduled_tokens_sum")) == 20); /* from the entries */
    CHECK(value_of(SERIES("kv_cache_usage_ratio")) == 0.25);
    CHECK(value_of(SERIES("kv_cache_total_blocks")) == 100);
    CHECK(value_of(SERIES("requests_waiting")) == 0);
    CHECK(value_of(SERIES("requests_running")) == 1);
    CHECK(value_of(SERIES("requests_tracked")) == 0);
    CHECK(value_of(SERIES("records_dropped_total")) == 0);
    CHECK(value_of(SERIES("records_total")) >= 17); /* 9 + 8 above */
    CHECK(value_of("servprof_metrics_processes{state=\"live\"}") == 1);
    /* Tracing is off: nothing but the metrics folder under prof_dir. */
    char prof[300];
    snprintf(prof, sizeof prof, "%s/prof", dir);
    CHECK_INT(count_entries(prof), 1);
    char sess[64];
    CHECK(servprof_session_dir(sess, sizeof sess) == SERVPROF_ESTATE);
}

static void test_fork_and_dead_child(void)
{
    /* TSan cannot start threads in the child of a threaded process (the
     * child's drain thread): the plain and ASan builds run this part. */
    const char *san = getenv("SERVPROF_SANITIZE");
    if (san && !strcmp(san, "thread")) {
        fprintf(stderr, "fork part skipped under ThreadSanitizer\n");
        one_request("c1", "ce1", "ok", 1); /* what the child adds, for the counts below */
        return;
    }
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(go[1]);
        /* The child's first record starts its own metrics file. */
        one_request("c1", "ce1", "ok", 1);
        servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "KVCache");
        servprof_metric(r, "TotalBlocks", 50);
        servprof_metric(r, "UsedBlocks", 10);
        servprof_event(r, "KVCacheStatus");
        char c;
        while (read(go[0], &c, 1) < 0 && errno == EINTR) /* until the parent closes it */
            ;
        /* The final values are published, the file closed (the lock goes).
         * _exit: the child's copy of the parent's thread buffers is
         * forgotten on purpose (fork safety), which a leak checker would
         * report at exit(). */
        servprof_shutdown();
        _exit(0);
    }
    close(go[0]);
    forked = 1;
    CHECK(wait_value("servprof_metrics_processes{state=\"live\"}", 2) == 2);
    CHECK(wait_value("servprof_requests_total" L ",outcome=\"ok\"}", 2) == 2);
    CHECK(wait_value(SERIES("kv_cache_total_blocks"), 150) == 150); /* live gauges add up */
    close(go[1]);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(value_of("servprof_metrics_processes{state=\"dead\"}") == 1);
    CHECK(value_of("servprof_requests_total" L ",outcome=\"ok\"}") == 2); /* counters stay */
    CHECK(value_of(SERIES("e2e_request_latency_seconds_count")) == 3);
    CHECK(value_of(SERIES("kv_cache_total_blocks")) == 100); /* its gauges go */
}

static void test_live_toggle(void)
{
    write_config(0, 0);
    CHECK(wait_value("servprof_metrics_processes{state=\"live\"}", 0) == 0);
    CHECK(value_of("servprof_metrics_processes{state=\"dead\"}") == 1 + forked);
    CHECK(value_of(SERIES("kv_cache_total_blocks")) == -1); /* no live process */
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    CHECK(r == NULL); /* everything off: the disabled cost again */
    servprof_rec_cancel(r);
    write_config(0, 1);
    CHECK(wait_value("servprof_metrics_processes{state=\"live\"}", 1) == 1);
    one_request("h3", "e3", "ok", 1);
    CHECK(wait_value("servprof_requests_total" L ",outcome=\"ok\"}", 3) == 3);
}

static void test_with_tracing(void)
{
    write_config(1, 1);
    char store[512] = "";
    for (int i = 0; i < (int)(500 * slack()) && servprof_store_path(store, sizeof store) != 0; i++)
        pause_ms(20);
    CHECK(store[0] != 0);
    tracing_now = 1;
    one_request("h4", "e4", "ok", 1);
    tracing_now = 0;
    CHECK(wait_value("servprof_requests_total" L ",outcome=\"ok\"}", 4) == 4);
    CHECK(wait_value(SERIES("e2e_request_latency_seconds_count"), 5) == 5);
    write_config(0, 1);
    for (int i = 0; i < (int)(500 * slack()) && servprof_store_path(store, sizeof store) == 0; i++)
        pause_ms(20);
    struct stat st;
    CHECK(stat(store, &st) == 0 && st.st_size > 0);
    one_request("h5", "e5", "ok", 1); /* back to the drain thread */
    CHECK(wait_value("servprof_requests_total" L ",outcome=\"ok\"}", 5) == 5);

    /* Tracing only ModelExecute: metrics still get their domains. */
    domain = "ModelExecute";
    write_config(1, 1);
    for (int i = 0; i < (int)(500 * slack()) && servprof_store_path(store, sizeof store) != 0; i++)
        pause_ms(20);
    tracing_now = 1;
    one_request("h6", "e6", "ok", 1);
    tracing_now = 0;
    CHECK(wait_value("servprof_requests_total" L ",outcome=\"ok\"}", 6) == 6);
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Sampler");
    CHECK(r == NULL); /* neither tracing's nor the metrics' domain */
    servprof_rec_cancel(r);
    write_config(0, 1);
    for (int i = 0; i < (int)(500 * slack()) && servprof_store_path(store, sizeof store) == 0; i++)
        pause_ms(20);
}

/* GET path from 127.0.0.1:port: the status (0: no connection), the body
 * in body (cut to its size). */
static int http_get(int port, const char *path, char *body, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    body[0] = 0;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return 0;
    }
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return 0;
    }
    size_t got = 0;
    ssize_t r;
    while (got + 1 < size && (r = read(fd, body + got, size - got - 1)) > 0)
        got += (size_t)r;
    body[got] = 0;
    close(fd);
    int status = 0;
    sscanf(body, "HTTP/1.%*d %d", &status);
    return status;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    bind(fd, (struct sockaddr *)&sa, sizeof sa);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    close(fd);
    return ntohs(sa.sin_port);
}

/* metric_port: the process itself answers GET /metrics, and stops when
 * the key goes. */
static void test_metric_port(void)
{
    static char body[1 << 20];
    int status = 0;
    /* free_port() closes the port before the library binds it, so another
     * process may take it in between: then the next free port is tried.
     * Three ports that all fail are our failure, not a race. */
    for (int attempt = 0; attempt < 3 && status != 200; attempt++) {
        mport = free_port();
        write_config(0, 1);
        for (int i = 0; i < (int)(500 * slack()) && status != 200; i++) {
            status = http_get(mport, "/metrics", body, sizeof body);
            if (status != 200)
                pause_ms(20);
        }
        if (status != 200)
            fprintf(stderr, "test_metric_port: port %d never answered 200 (last status %d)\n", mport, status);
    }
    CHECK_INT(status, 200);
    CHECK(strstr(body, "version=0.0.4") != NULL);
    CHECK(strstr(body, "servprof_requests_total" L ",outcome=\"ok\"} 6\n") != NULL);
    CHECK_INT(http_get(mport, "/nope", body, sizeof body), 404);
    int port = mport;
    mport = 0;
    write_config(0, 1);
    for (int i = 0; i < (int)(500 * slack()) && status != 0; i++) {
        status = http_get(port, "/metrics", body, sizeof body);
        if (status != 0)
            pause_ms(20);
    }
    CHECK_INT(status, 0); /* the port is closed */
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/sp-metrics-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(cfg, sizeof cfg, "%s/prof.json", dir);
    snprintf(mdir, sizeof mdir, "%s/prof/metrics", dir);
    write_config(0, 1);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    /* The role label is the process name; make it known (comm is cut at 15). */
    servprof_set_process_name("test_metrics_liv");
    servprof_meta("model_name", "m1");
    CHECK(servprof_init() == 0);
    test_metrics_only();
    test_fork_and_dead_child();
    test_live_toggle();
    test_with_tracing();
    test_metric_port();
    servprof_shutdown();
    CHECK(value_of("servprof_metrics_processes{state=\"live\"}") == 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
