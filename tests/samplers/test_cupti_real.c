/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cupti_real.c — NVIDIA's real libcupti, where a CUDA toolkit is
 * installed, on a machine without an NVIDIA driver (this test is only
 * registered when CMake finds the library): CUPTI loads, cannot trace, and
 * that is exactly one log line; the host sampler goes on; no activity store
 * is created. On a machine with a driver and a GPU it checks instead that
 * collection starts and stops cleanly in a process that never uses CUDA
 * (nothing recorded, the "does this process use CUDA?" line).
 */
#include <dlfcn.h>
#include <sqlite3.h>

#include "check.h"
#include "smp_util.h"

/* Rows in every table of the activity store; 0 when there is no store. */
static long long activity_rows(const char *path)
{
    if (access(path, F_OK) != 0)
        return 0;
    sqlite3 *db = NULL;
    long long n = -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table'", -1, &st, NULL) == SQLITE_OK) {
        n = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            char *q = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", (const char *)sqlite3_column_text(st, 0));
            sqlite3_stmt *c = NULL;
            if (sqlite3_prepare_v2(db, q, -1, &c, NULL) == SQLITE_OK && sqlite3_step(c) == SQLITE_ROW)
                n += sqlite3_column_int64(c, 0);
            sqlite3_finalize(c);
            sqlite3_free(q);
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

int main(void)
{
    char dir[256];
    sp_config c;
    sp_session s;
    smp_tmpdir(dir, sizeof dir, "cupti-real");
    smp_setup(&c, &s, dir);
    c.acl_task_time = 1;
    c.acl_prof_task_time_level = 1;
    c.host_system_usage_freq = 20;
    setenv("SERVPROF_CUPTI_LIB", REAL_CUPTI_PATH, 1);
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    obs_reset();
    sp_samplers_set_observer(obs_fn, NULL);
    capture_begin();
    sp_samplers_start(&s, &c);
    obs_wait("MemUsage", 0, 5); /* the host sampler runs beside CUPTI */
    sp_samplers_stop();
    char *log = capture_end();
    sp_samplers_set_observer(NULL, NULL);
    CHECK(obs_count("MemUsage", 0) >= 5);
    if (!driver) {
        CHECK_INT(count_substr(log, "\n"), 1);
        CHECK_INT(count_substr(log, "CUPTI cannot trace kernels, copies, memsets, runtime API "
                                    "calls"), 1);
        CHECK(access(s.activity_path, F_OK) != 0);
    } else {
        /* collection started and stopped cleanly, said once, recorded nothing */
        CHECK_INT(count_substr(log, "does this process use CUDA?"), 1);
        CHECK_INT(activity_rows(s.activity_path), 0);
    }
    free(log);
    CHECK_DONE();
}
