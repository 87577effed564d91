/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_links_kept.c — a request that straddles `servprof enable`
 * keeps its front-end id.
 *
 * One real process, collection off (no live metrics either): the server
 * links 100 older requests, then http-1 to its engine id eng-1, all before
 * the enable. Collection goes on (the config file, as `servprof enable`
 * edits it); only then does the engine record eng-1's schedule step and the
 * front end its httpRes. The built `servprof parse` must name the request
 * http-1 in request.csv and in batch.csv's res_list (never eng-1): the
 * writer stored the kept links in the session's first commit. At most
 * SP_LINKKEEP_N (64) are kept, the newest: Meta links_before_session = 64.
 *
 * Waits are bounded polls of conditions, never sleeps as synchronisation.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "servprof.h"

static char dir[256], cfg[300];

static void write_config(int enable)
{
    char tmp[320];
    snprintf(tmp, sizeof tmp, "%s.tmp", cfg);
    FILE *f = fopen(tmp, "w");
    fprintf(f, "{\"enable\": %d, \"prof_dir\": \"%s/prof\"}\n", enable, dir);
    fclose(f);
    rename(tmp, cfg);
}

static void pause_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
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

/* The whole file as a string (freed by the caller), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    b[got] = 0;
    fclose(f);
    return b;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/sp-linkkeep-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(cfg, sizeof cfg, "%s/prof.json", dir);
    write_config(0);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    CHECK(servprof_init() == 0);

    char a[32], b[32];
    for (int i = 0; i < 100; i++) {
        snprintf(a, sizeof a, "old-http-%d", i);
        snprintf(b, sizeof b, "old-eng-%d", i);
        servprof_link(a, b);
    }
    servprof_link("http-1", "eng-1"); /* the request arrives before the enable */

    write_config(1);
    char store[512] = "";
    for (int i = 0; i < 1000 && servprof_store_path(store, sizeof store) != 0; i++)
        pause_ms(10);
    CHECK(store[0] != 0);

    int64_t t0 = servprof_now_ns();
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "BatchSchedule");
    servprof_attr_array_begin(r, "rid");
    servprof_attr_object_begin(r, NULL);
    servprof_attr_str(r, "rid", "eng-1");
    servprof_attr_int(r, "iter", 3);
    servprof_attr_end(r);
    servprof_attr_end(r);
    servprof_span_at(r, "BatchSchedule", t0, t0 + 1000);
    r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, "http-1");
    servprof_event(r, "httpRes");

    write_config(0);
    char probe[512];
    for (int i = 0; i < 1000 && servprof_store_path(probe, sizeof probe) == 0; i++)
        pause_ms(10);
    servprof_shutdown();
    CHECK_INT(meta_int(store, "links_before_session"), 64);

    char session[512], cmd[2048], path[700];
    snprintf(session, sizeof session, "%s", store);
    *strrchr(session, '/') = 0;
    const char *bin = getenv("SERVPROF_BIN");
    CHECK(bin != NULL);
    snprintf(cmd, sizeof cmd, "'%s' parse '%s' -o '%s/out' --format csv --quiet --no-progress", bin ? bin : "",
             session, dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/out/request.csv", dir);
    char *req = slurp(path);
    CHECK(req != NULL);
    CHECK(req && strstr(req, "\nhttp-1,") != NULL);
    CHECK(req && strstr(req, "eng-1") == NULL);
    snprintf(path, sizeof path, "%s/out/batch.csv", dir);
    char *bat = slurp(path);
    CHECK(bat != NULL);
    CHECK(bat && strstr(bat, "http-1") != NULL);
    CHECK(bat && strstr(bat, "eng-1") == NULL);
    free(req);
    free(bat);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
