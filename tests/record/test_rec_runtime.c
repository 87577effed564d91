/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_runtime.c — the recorder driven by the real runtime: the first
 * record call of the process starts collection from the config file (lazy
 * init), the domain filter and level apply, buffer_size_kb reaches Meta,
 * servprof_stop() drains and servprof_start() opens a fresh store that
 * carries earlier servprof_meta keys; a fork child records into its own
 * store while the parent's store never sees the child's rows.
 */
#include <sys/wait.h>

#include "rec_test.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    char dir[512], cfg[1024], text[2048], store1[SP_PATH_MAX], store2[SP_PATH_MAX];
    rt_tmpdir(dir, sizeof dir);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(text, sizeof text,
             "{\"enable\": 1, \"prof_dir\": \"%s/prof\", \"profiler_level\": \"INFO\", "
             "\"domain\": \"Keep; Other\", \"buffer_size_kb\": 256}",
             dir);
    write_file(cfg, text);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    setenv("HOME", dir, 1);
    CHECK_INT(servprof_meta("dpRankId", "3"), 0); /* before any session */

    /* The very first call starts the library and, the file says so, a session. */
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Keep");
    CHECK(r != NULL);
    servprof_attr_int(r, "n", 1);
    servprof_event(r, "lazy");
    CHECK(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Dropped") == NULL);
    CHECK(servprof_rec_begin(SERVPROF_LEVEL_DETAILED, "Keep") == NULL);
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, NULL), "nodomain");
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_ERROR, "Other"), "other");
    servprof_span s = servprof_span_begin(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Keep"), "open");
    CHECK_INT(servprof_store_path(store1, sizeof store1), 0);
    servprof_span_end(s);
    CHECK_INT(servprof_stop(), 0);
    CHECK(servprof_rec_begin(SERVPROF_LEVEL_ERROR, "Keep") == NULL);

    sqlite3 *db = rt_db(store1);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice"), 4);
    CHECK_STR(rt_text(db, "SELECT args FROM slice WHERE name='lazy'"), "{\"type\":0,\"n\":1}");
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE cat='Dropped'"), 0);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='open' AND duration >= 0"), 1);
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='buffer_bytes'"), "262144");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='dpRankId'"), "3");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='dropped_records'"), "0");
    sqlite3_close(db);

    /* A second session: a new store, the process-level Meta again. */
    CHECK_INT(servprof_start(), 0);
    CHECK_INT(servprof_store_path(store2, sizeof store2), 0);
    CHECK(strcmp(store1, store2) != 0);
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Keep"), "second");

    /* A fork child: its own store in the same session folder. Plain build
     * only: TSan refuses a child that starts threads after a multi-threaded
     * fork, and the ASan allocator (gcc 12) can be left locked in the child
     * when another thread was inside malloc at the fork (a hang). */
    pid_t pid = rt_sanitized() ? -1 : fork();
    if (pid == 0) {
        servprof_rec *cr = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Keep");
        servprof_event(cr, "child");
        char cs[SP_PATH_MAX];
        int rc = servprof_store_path(cs, sizeof cs);
        servprof_shutdown();
        if (rc != 0)
            _exit(3);
        sqlite3 *cdb = rt_db(cs);
        long long n = rt_int(cdb, "SELECT count(*) FROM slice WHERE name='child'");
        long long other = rt_int(cdb, "SELECT count(*) FROM slice WHERE name='second'");
        sqlite3_close(cdb);
        _exit(n == 1 && other == 0 ? 0 : 4);
    }
    if (pid > 0) {
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status));
        CHECK_INT(WEXITSTATUS(status), 0);
    }
    servprof_event(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Keep"), "after_fork");
    CHECK_INT(servprof_stop(), 0);
    servprof_shutdown();

    db = rt_db(store2);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice"), 2);
    CHECK_INT(rt_int(db, "SELECT count(*) FROM slice WHERE name='child'"), 0);
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='dpRankId'"), "3");
    CHECK_STR(rt_text(db, "SELECT value FROM Meta WHERE name='session_serial'"), "2");
    sqlite3_close(db);
    RT_DONE();
}
