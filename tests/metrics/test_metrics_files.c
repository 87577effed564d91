/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_metrics_files.c — the pieces of live metrics on bad input, without
 * a running library: the metric_dir key, a metrics file written and read
 * back (labels, liveness), damaged and foreign files in the folder, an
 * unusable folder, and the histogram buckets; label values that are not
 * UTF-8 (a stray byte, an overlong form, a surrogate, a cut sequence)
 * become U+FFFD, and the exposition passes `promtool check metrics`
 * (that part is skipped, with a line saying so, without promtool).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "metrics.h"

typedef struct msgs {
    char text[2048];
} msgs;

static void collect(void *ctx, int is_error, const char *msg)
{
    msgs *m = ctx;
    (void)is_error;
    strncat(m->text, msg, sizeof m->text - strlen(m->text) - 2);
    strcat(m->text, "\n");
}

static sp_config parse(const char *json, msgs *m)
{
    sp_config c;
    sp_config_diag d = {0, 0, collect, m};
    m->text[0] = 0;
    CHECK(sp_config_parse(json, strlen(json), &c, &d) == 0);
    return c;
}

static void test_metric_dir_key(void)
{
    msgs m;
    char out[SP_PATH_MAX];
    sp_config c = parse("{\"prof_dir\": \"/p\", \"metric_dir\": \"\"}", &m);
    CHECK_STR(m.text, "");
    sp_metrics_dir_for(&c, out, sizeof out);
    CHECK_STR(out, "/p/metrics");
    setenv("SP_TEST_MDIR", "/run/x", 1);
    c = parse("{\"metric_dir\": \"${SP_TEST_MDIR}/m\"}", &m);
    sp_metrics_dir_for(&c, out, sizeof out);
    CHECK_STR(out, "/run/x/m");
    c = parse("{\"prof_dir\": \"/p\", \"metric_dir\": \"${SP_TEST_UNSET_VAR}/m\"}", &m);
    CHECK(strstr(m.text, "'metric_dir'") && strstr(m.text, "SP_TEST_UNSET_VAR") &&
          strstr(m.text, "<prof_dir>/metrics"));
    sp_metrics_dir_for(&c, out, sizeof out);
    CHECK_STR(out, "/p/metrics");
    c = parse("{\"metric_dir\": 5}", &m);
    CHECK(strstr(m.text, "'metric_dir'") && strstr(m.text, "not a string"));
    CHECK_STR(c.metric_dir, "");

    c = parse("{\"metric_port\": 9464}", &m);
    CHECK_STR(m.text, "");
    CHECK_STR(c.metric_listen, "127.0.0.1:9464");
    c = parse("{\"metric_port\": \"0.0.0.0:9000\"}", &m);
    CHECK_STR(c.metric_listen, "0.0.0.0:9000");
    c = parse("{\"metric_port\": 0}", &m);
    CHECK_STR(m.text, "");
    CHECK_STR(c.metric_listen, "");
    const char *bad[] = {"70000", "-1", "\"localhost:80\"", "\"1.2.3.4\"", "true", "1.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[64];
        snprintf(json, sizeof json, "{\"metric_port\": %s}", bad[i]);
        c = parse(json, &m);
        CHECK(strstr(m.text, "'metric_port'") && strstr(m.text, "using 0"));
        CHECK_STR(c.metric_listen, "");
    }
}

static void test_file_roundtrip(const char *dir)
{
    sp_mfile *f = sp_mfile_create(dir);
    CHECK(f != NULL);
    if (!f)
        return;
    sp_mdata *d = calloc(1, sizeof *d), *back = calloc(1, sizeof *back);
    snprintf(d->role, sizeof d->role, "prefill \"a\"");
    snprintf(d->model, sizeof d->model, "m\\1");
    snprintf(d->outcome[0], SP_M_OUTCOME_LEN, "ok");
    d->outcome_n[0] = 7;
    d->counter[SP_MC_PROMPT_TOKENS] = 123;
    d->gauge[SP_MG_WAITING] = 4;
    d->gauge_set = 1u << SP_MG_WAITING;
    d->hist[SP_MH_TTFT].count = 1;
    d->hist[SP_MH_TTFT].sum = 0.5;
    d->hist[SP_MH_TTFT].b[sp_mhist_bucket(SP_MH_TTFT, 0.5)] = 1;
    sp_mfile_publish(f, d);
    int alive = 0;
    int64_t pid = 0;
    char why[256];
    CHECK(sp_mfile_read(sp_mfile_path(f), back, &alive, &pid, why, sizeof why) == 0);
    CHECK(alive == 1);
    CHECK_INT(pid, getpid());
    CHECK(memcmp(d, back, sizeof *d) == 0);

    /* The exposition escapes label values and sums by label set. */
    char *text;
    size_t len;
    CHECK(sp_metrics_render(dir, &text, &len) == 0);
    CHECK(strstr(text, "servprof_requests_total{role=\"prefill \\\"a\\\"\",model_name=\"m\\\\1\","
                       "outcome=\"ok\"} 7\n") != NULL);
    CHECK(strstr(text, "servprof_requests_waiting{role=\"prefill \\\"a\\\"\",model_name=\"m\\\\1\"} 4\n"));
    CHECK(strstr(text, "servprof_time_to_first_token_seconds_bucket{role=\"prefill \\\"a\\\"\","
                       "model_name=\"m\\\\1\",le=\"0.5\"} 1\n"));
    CHECK(strstr(text, "servprof_time_to_first_token_seconds_bucket{role=\"prefill \\\"a\\\"\","
                       "model_name=\"m\\\\1\",le=\"0.478802\"} 0\n"));
    free(text);

    /* Damaged and foreign files: skipped, counted, named in a comment. */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/servprof-1-2.metrics", dir);
    FILE *g = fopen(bad, "w");
    fputs("not a metrics file", g);
    fclose(g);
    snprintf(bad, sizeof bad, "%s/notes.txt", dir);
    g = fopen(bad, "w");
    fputs("ignored", g);
    fclose(g);
    CHECK(sp_metrics_render(dir, &text, &len) == 0);
    CHECK(strstr(text, "servprof_metrics_files_unreadable 1\n") != NULL);
    CHECK(strstr(text, "# servprof: skipped servprof-1-2.metrics: not a metrics file") != NULL);
    CHECK(strstr(text, "servprof_metrics_processes{state=\"live\"} 1\n") != NULL);
    free(text);

    /* Closed: the process reads as dead; counters stay, gauges go. */
    sp_mfile_close(f);
    CHECK(sp_metrics_render(dir, &text, &len) == 0);
    CHECK(strstr(text, "servprof_metrics_processes{state=\"dead\"} 1\n") != NULL);
    CHECK(strstr(text, "outcome=\"ok\"} 7\n") != NULL);
    CHECK(strstr(text, "servprof_requests_waiting{") == NULL);
    free(text);
    free(d);
    free(back);
}

static void test_bad_folders(void)
{
    /* A regular file in the way: no metrics, a message, no crash. */
    CHECK(sp_mfile_create("/etc/passwd/metrics") == NULL);
    char *text;
    size_t len;
    CHECK(sp_metrics_render("/nonexistent/servprof-metrics", &text, &len) < 0);
    CHECK(text && strstr(text, "# servprof: cannot read the metrics folder") != NULL);
    CHECK(text && strstr(text, "servprof_metrics_processes{state=\"live\"} 0\n") != NULL);
    free(text);
}

static void test_buckets(void)
{
    const double *b;
    int n = sp_mhist_bounds(SP_MH_TTFT, &b);
    CHECK_INT(n, 337);
    CHECK(b[0] == 1.0 / 4096 && b[16] == 1.0 / 2048 && b[336] == 512);
    for (int i = 1; i < n; i++)
        CHECK(b[i] > b[i - 1] * 1.044 && b[i] < b[i - 1] * 1.0443);
    CHECK_INT(sp_mhist_bucket(SP_MH_TTFT, 0), 0);
    CHECK_INT(sp_mhist_bucket(SP_MH_TTFT, 1.0 / 4096), 0);
    CHECK_INT(sp_mhist_bucket(SP_MH_TTFT, 1e9), n); /* +Inf */
    n = sp_mhist_bounds(SP_MH_BATCH_SIZE, &b);
    CHECK(b[0] == 1 && b[1] == 1.5 && b[2] == 2 && b[3] == 3 && b[n - 1] == 65536);
    CHECK_INT(sp_mhist_bucket(SP_MH_BATCH_SIZE, 3), 3);
}

/* Hostile bytes in every label a process controls. */
static void test_invalid_utf8(const char *parent)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/utf8", parent);
    sp_mfile *f = sp_mfile_create(dir);
    CHECK(f != NULL);
    if (!f)
        return;
    sp_mdata *d = calloc(1, sizeof *d);
    snprintf(d->role, sizeof d->role, "r\xff\"x\\\n");        /* stray byte + escapes */
    snprintf(d->model, sizeof d->model, "m\xc0\xaf\xed\xa0\x80\xe2\x82"); /* overlong, surrogate, cut */
    snprintf(d->dp_rank, sizeof d->dp_rank, "\xf4\x90\x80\x80"); /* past U+10FFFF */
    snprintf(d->outcome[0], SP_M_OUTCOME_LEN, "ok\x80\xe2\x82\xac"); /* stray + a real euro */
    d->outcome_n[0] = 3;
    sp_mfile_publish(f, d);
    char *text;
    size_t len;
    CHECK(sp_metrics_render(dir, &text, &len) == 0);
    CHECK(strstr(text, "role=\"r\xef\xbf\xbd\\\"x\\\\\\n\"") != NULL);
    CHECK(strstr(text, "model_name=\"m\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                       "\xef\xbf\xbd\xef\xbf\xbd\"") != NULL);
    CHECK(strstr(text, "outcome=\"ok\xef\xbf\xbd\xe2\x82\xac\"} 3\n") != NULL);
    CHECK(memchr(text, 0xff, len) == NULL && memchr(text, 0xc0, len) == NULL &&
          memchr(text, 0xf4, len) == NULL); /* bytes that are never UTF-8 here */
    char path[700];
    snprintf(path, sizeof path, "%s/expo.txt", parent);
    FILE *g = fopen(path, "w");
    fwrite(text, 1, len, g);
    fclose(g);
    free(text);
    if (system("command -v promtool >/dev/null 2>&1") != 0) {
        printf("promtool is not installed (Debian package prometheus): not run\n");
    } else {
        char cmd[800];
        snprintf(cmd, sizeof cmd, "promtool check metrics < '%s'", path);
        CHECK_INT(system(cmd), 0);
    }
    sp_mfile_close(f);
    free(d);
}

/* The file's sequence word (file_hdr.seq in metrics_file.c: after magic,
 * layout, version, pid and start_ns), mapped writable as a stand-in for a
 * writer stuck in the middle of a publish. */
#define SEQ_OFFSET 32

static void *end_publish_later(void *seq)
{
    struct timespec ts = {0, 50 * 1000000L}; /* a writer preempted for 50 ms */
    nanosleep(&ts, NULL);
    atomic_fetch_add((_Atomic uint64_t *)seq, 1);
    return NULL;
}

/* A publish under way (seq odd) makes a reader wait for its end, not give
 * up after a few yields; one that never ends is reported as busy. */
static void test_publish_under_way(const char *parent)
{
    char dir[400];
    snprintf(dir, sizeof dir, "%s/busy", parent);
    sp_mfile *f = sp_mfile_create(dir);
    CHECK(f != NULL);
    if (!f)
        return;
    sp_mdata *d = calloc(1, sizeof *d), *back = calloc(1, sizeof *back);
    d->counter[SP_MC_PROMPT_TOKENS] = 42;
    sp_mfile_publish(f, d);
    int fd = open(sp_mfile_path(f), O_RDWR);
    CHECK(fd >= 0);
    uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    _Atomic uint64_t *seq = (_Atomic uint64_t *)(m + SEQ_OFFSET);
    CHECK((atomic_load(seq) & 1) == 0);
    int alive = 0;
    int64_t pid = 0;
    char why[256] = "";

    atomic_fetch_add(seq, 1); /* odd: under way, ended by the thread */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, end_publish_later, (void *)seq) == 0);
    CHECK(sp_mfile_read(sp_mfile_path(f), back, &alive, &pid, why, sizeof why) == 0);
    pthread_join(t, NULL);
    CHECK(back->counter[SP_MC_PROMPT_TOKENS] == 42);

    atomic_fetch_add(seq, 1); /* odd, and nobody ends it */
    CHECK(sp_mfile_read(sp_mfile_path(f), back, &alive, &pid, why, sizeof why) == -1);
    CHECK(strstr(why, "busy") != NULL);
    atomic_fetch_add(seq, 1);
    munmap(m, 4096);
    close(fd);
    sp_mfile_close(f);
    free(d);
    free(back);
}

int main(void)
{
    char dir[] = "/tmp/sp-mfiles-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_metric_dir_key();
    test_file_roundtrip(dir);
    test_bad_folders();
    test_buckets();
    test_invalid_utf8(dir);
    test_publish_under_way(dir);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
