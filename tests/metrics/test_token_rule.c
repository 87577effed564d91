/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_token_rule.c — live metrics and `servprof parse` agree on token
 * counts, and a session started while metrics run counts nothing as lost.
 *
 * One real process records, with tracing and live metrics on, requests
 * whose token counts sit where servers put them:
 *   A  recvTokenSize on httpReq (docs/api.md's example), replyTokenSize on httpRes
 *   B  both on httpRes
 *   C  recvTokenSize on httpReq and again on httpRes (the last wins),
 *      replyTokenSize on a DecodeEnd event only
 * The same records go to the live metrics (prompt_tokens_total,
 * generation_tokens_total) and into the store, which the built
 * `servprof parse` turns into request.csv. Both must give the sums the
 * rule in common/reqtokens.h gives: 7+11+6 prompt, 3+4+2 generated tokens.
 * (Before the rule was shared, metrics read httpRes only: 17 and 7.)
 *
 * The session starts while a thread records metrics-only records as fast
 * as it can (collection off, metric_enable 1), so records made before the
 * session reach its writer: Meta records_lost must stay 0 (they are counted
 * as records_before_session: nothing failed).
 *
 * servprof_set_process_name's name lands in Meta process_name (the parser
 * names the timeline process by it, over the role name).
 *
 * Waits are bounded polls of conditions, never sleeps as synchronisation.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "metrics.h"
#include "servprof.h"

static char dir[256], cfg[300], mdir[300];

static void write_config(int enable)
{
    char tmp[320];
    snprintf(tmp, sizeof tmp, "%s.tmp", cfg);
    FILE *f = fopen(tmp, "w");
    fprintf(f, "{\"enable\": %d, \"metric_enable\": 1, \"prof_dir\": \"%s/prof\"}\n", enable, dir);
    fclose(f);
    rename(tmp, cfg);
}

static void pause_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static double slack(void)
{
    const char *s = getenv("SERVPROF_SANITIZE");
    return s && *s ? 10.0 : 1.0;
}

/* The sum of every series of a metric in the folder's exposition; -1 when absent. */
static double metric(const char *name)
{
    char *text;
    size_t len;
    sp_metrics_render(mdir, &text, &len);
    double v = -1;
    size_t n = strlen(name);
    for (char *p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (!strncmp(p, name, n) && (p[n] == '{' || p[n] == ' ')) {
            char *sp = strchr(p, ' ');
            v = (v < 0 ? 0 : v) + strtod(sp + 1, NULL);
        }
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    return v;
}

static double wait_metric(const char *name, double want)
{
    double v = metric(name);
    for (int i = 0; i < (int)(500 * slack()) && v != want; i++) {
        pause_ms(20); /* a poll period: the loop checks the condition */
        v = metric(name);
    }
    return v;
}

static void event(const char *domain, const char *name, const char *rid, const char *k1, double v1,
                  const char *k2, double v2)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, domain);
    servprof_res_str(r, rid);
    if (k1)
        servprof_metric(r, k1, v1);
    if (k2)
        servprof_metric(r, k2, v2);
    servprof_event(r, name);
}

static atomic_int stop_noise;

/* Metrics-only records (KV cache status) as fast as possible, collection off. */
static void *noise(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_noise)) {
        servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "KVCache");
        servprof_metric(r, "TotalBlocks", 100);
        servprof_metric(r, "UsedBlocks", 10);
        servprof_event(r, "KVCacheStatus");
    }
    return NULL;
}

/* Sums the columns recv_token_size and reply_token_size of request.csv. */
static int csv_sums(const char *path, double *recv, double *reply, int *rows)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[4096];
    int ci = -1, co = -1;
    *recv = *reply = 0;
    *rows = 0;
    if (fgets(line, sizeof line, f)) {
        int i = 0;
        for (char *s = strtok(line, ",\n"); s; s = strtok(NULL, ",\n"), i++) {
            if (!strcmp(s, "recv_token_size"))
                ci = i;
            if (!strcmp(s, "reply_token_size"))
                co = i;
        }
    }
    while (ci >= 0 && co >= 0 && fgets(line, sizeof line, f)) {
        /* fields are plain here (ids without commas): split on every comma, keep empties */
        int i = 0;
        char *s = line;
        for (;;) {
            char *c = strpbrk(s, ",\n");
            if (i == ci)
                *recv += atof(s);
            if (i == co)
                *reply += atof(s);
            if (!c || *c == '\n')
                break;
            s = c + 1;
            i++;
        }
        (*rows)++;
    }
    fclose(f);
    return ci >= 0 && co >= 0 ? 0 : -1;
}

/* Meta's value of key as text into out ("" when absent). */
static void meta_text(const char *store, const char *key, char *out, size_t cap)
{
    sqlite3 *db;
    out[0] = 0;
    if (sqlite3_open_v2(store, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT value FROM Meta WHERE name=?1", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW)
                snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(db);
}

static long long meta_int(const char *store, const char *key)
{
    sqlite3 *db;
    long long v = -1;
    if (sqlite3_open_v2(store, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT value FROM Meta WHERE name=?1", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(db);
    return v;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/sp-tokrule-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(cfg, sizeof cfg, "%s/prof.json", dir);
    snprintf(mdir, sizeof mdir, "%s/prof/metrics", dir);
    write_config(0);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    servprof_set_process_name("test_token_rule");
    CHECK(servprof_init() == 0);

    pthread_t t;
    CHECK(pthread_create(&t, NULL, noise, NULL) == 0);
    pause_ms(50); /* let the noise run a while before the start; not a synchronisation */
    write_config(1);
    char store[512] = "";
    for (int i = 0; i < (int)(500 * slack()) && servprof_store_path(store, sizeof store) != 0; i++)
        pause_ms(20);
    CHECK(store[0] != 0);
    atomic_store(&stop_noise, 1);
    pthread_join(t, NULL);

    event("Request", "httpReq", "A", "recvTokenSize", 7, NULL, 0);
    event("Request", "httpReq", "B", NULL, 0, NULL, 0);
    event("Request", "httpReq", "C", "recvTokenSize", 5, NULL, 0);
    event("Request", "DecodeEnd", "C", "replyTokenSize", 2, NULL, 0);
    event("Request", "httpRes", "A", "replyTokenSize", 3, NULL, 0);
    event("Request", "httpRes", "B", "recvTokenSize", 11, "replyTokenSize", 4);
    event("Request", "httpRes", "C", "recvTokenSize", 6, NULL, 0);

    double prompt = wait_metric("servprof_prompt_tokens_total", 24);
    double gen = wait_metric("servprof_generation_tokens_total", 9);
    CHECK_INT((long long)prompt, 24);
    CHECK_INT((long long)gen, 9);

    write_config(0);
    char probe[512];
    for (int i = 0; i < (int)(500 * slack()) && servprof_store_path(probe, sizeof probe) == 0; i++)
        pause_ms(20);
    servprof_shutdown();

    CHECK_INT(meta_int(store, "records_lost"), 0);
    CHECK(meta_int(store, "records_before_session") >= 0);
    /* The chosen process name is in Meta, where the parser looks for it. */
    char pname[64];
    meta_text(store, "process_name", pname, sizeof pname);
    CHECK_STR(pname, "test_token_rule");

    /* The same records through the parser. */
    char session[512], cmd[2048], csv[600];
    snprintf(session, sizeof session, "%s", store);
    *strrchr(session, '/') = 0;
    const char *bin = getenv("SERVPROF_BIN");
    CHECK(bin != NULL);
    snprintf(cmd, sizeof cmd, "'%s' parse '%s' -o '%s/out' --format csv --quiet --no-progress", bin ? bin : "",
             session, dir);
    CHECK(system(cmd) == 0);
    snprintf(csv, sizeof csv, "%s/out/request.csv", dir);
    double recv = -1, reply = -1;
    int rows = 0;
    CHECK(csv_sums(csv, &recv, &reply, &rows) == 0);
    CHECK_INT(rows, 3);
    CHECK_INT((long long)recv, (long long)prompt);
    CHECK_INT((long long)reply, (long long)gen);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
