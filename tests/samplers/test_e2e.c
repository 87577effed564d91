/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_e2e.c — samplers through the real runtime and recorder: a config
 * file with host_system_usage_freq 10, started by servprof_init(), run
 * until 20 passes were taken, stopped. The raw store must hold every pass
 * taken (the batch pending at the stop included), each with args of sane
 * JSON per the samplers contract, all between the start and the stop; with NVML and CUPTI absent, one log line
 * each, no "npu" row and no activity store. A second session with the NVML
 * test double records one DeviceMemory row per device and pass.
 */
#include <dlfcn.h>
#include <sqlite3.h>

#include <stdatomic.h>

#include "check.h"
#include "fsutil.h"
#include "smp_util.h"

/* Counts the MemUsage rows the host sampler takes (one per pass). */
static _Atomic long mem_rows_taken;
static void count_mem_rows(void *ctx, const sp_sample_row *row)
{
    (void)ctx;
    if (!strcmp(row->name, "MemUsage"))
        atomic_fetch_add(&mem_rows_taken, 1);
}

static int64_t q_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    } else {
        fprintf(stderr, "query failed on %s: %s: %s\n", path, sql, sqlite3_errmsg(db));
    }
    sqlite3_close(db);
    return v;
}

static void session_one(const char *tmp)
{
    char store[SP_PATH_MAX], dir[SP_PATH_MAX], act[SP_PATH_MAX + 64];
    setenv("SERVPROF_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("SERVPROF_CUPTI_LIB", "/nonexistent/libcupti.so", 1);
    capture_begin();
    sp_samplers_set_observer(count_mem_rows, NULL);
    CHECK_INT(servprof_init(), 0);
    CHECK_INT(servprof_store_path(store, sizeof store), 0);
    CHECK_INT(servprof_session_dir(dir, sizeof dir), 0);
    int64_t t0 = servprof_now_ns();
    /* Until 20 passes were taken (bounded: 10 s, 100 s under sanitizers; the
     * rate is a figure: bench/bench_sampler.c and test_scheduler's grid). */
    for (int i = 0; i < (smp_sanitized() ? 1000 : 100) && atomic_load(&mem_rows_taken) < 20; i++)
        sleep_ms(100); /* a poll period */
    CHECK_INT(servprof_stop(), 0);
    int64_t t1 = servprof_now_ns();
    char *log = capture_end();
    CHECK(strncmp(dir, tmp, strlen(tmp)) == 0);
    CHECK_INT(count_substr(log, "NVML not available"), 1);
    CHECK_INT(count_substr(log, "CUPTI not available"), 1);
    free(log);

    int64_t passes = q_int(store, "SELECT COUNT(*) FROM slice WHERE cat='host' AND "
                                  "name='MemUsage'");
    fprintf(stderr, "host passes in the store: %lld\n", (long long)passes);
    sp_samplers_set_observer(NULL, NULL);
    /* every row taken is stored, the batch pending at the stop included */
    CHECK_INT(passes, atomic_load(&mem_rows_taken));
    CHECK(passes >= 20);
    CHECK(q_int(store, "SELECT COUNT(*) FROM slice WHERE cat='host' AND name='CpuUsage'") >=
          passes - 1);
    CHECK(q_int(store, "SELECT COUNT(*) FROM slice WHERE cat='host' AND name='ProcessUsage'") >=
          passes - 1);
    /* INFO level: no per-core rows */
    CHECK_INT(q_int(store, "SELECT COUNT(*) FROM slice WHERE json_extract(args, "
                           "'$.\"scope#cpu\"') IS NOT NULL"), 0);
    /* sane values, events of the contract */
    CHECK_INT(q_int(store, "SELECT COUNT(*) FROM slice WHERE cat='host' AND "
                           "(json_extract(args, '$.type') != 0 OR duration != 0)"), 0);
    CHECK_INT(q_int(store, "SELECT COUNT(*) FROM slice WHERE name='CpuUsage' AND NOT "
                           "(json_extract(args, '$.\"usage=\"') BETWEEN 0 AND 100)"), 0);
    CHECK_INT(q_int(store, "SELECT COUNT(*) FROM slice WHERE name='MemUsage' AND NOT ("
                           "json_extract(args, '$.\"total=\"') > 0 AND "
                           "json_extract(args, '$.\"used=\"') > 0 AND "
                           "json_extract(args, '$.\"available=\"') > 0 AND "
                           "abs(json_extract(args, '$.\"used=\"') + json_extract(args, "
                           "'$.\"available=\"') - json_extract(args, '$.\"total=\"')) < 0.01)"),
              0);
    CHECK_INT(q_int(store, "SELECT COUNT(*) FROM slice WHERE name='ProcessUsage' AND NOT ("
                           "json_extract(args, '$.\"rss=\"') > 0.5 AND "
                           "json_extract(args, '$.\"cpu=\"') >= 0)"), 0);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM slice WHERE cat='host' AND "
             "(timestamp < %lld OR timestamp > %lld)", (long long)t0 - 100000000LL,
             (long long)t1);
    CHECK_INT(q_int(store, sql), 0);
    /* one sampler thread wrote them all */
    CHECK_INT(q_int(store, "SELECT COUNT(DISTINCT tid) FROM slice WHERE cat='host'"), 1);
    /* nothing bogus from the absent GPU libraries */
    CHECK_INT(q_int(store, "SELECT COUNT(*) FROM slice WHERE cat='npu'"), 0);
    /* .../Trace_Service/ms_service_<host>-<pid>.db -> ascend_service_profiler_... */
    char *slash = strrchr(store, '/');
    snprintf(act, sizeof act, "%.*s/ascend_service_profiler_%s", (int)(slash - store), store,
             strstr(slash, "ms_service_") ? strstr(slash, "ms_service_") + 11 : "");
    CHECK(access(act, F_OK) != 0);
}

static void session_two(void)
{
    char store[SP_PATH_MAX];
    setenv("SERVPROF_NVML_LIB", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_COUNT", "2", 1);
    setenv("FAKE_NVML_MODE", "ok", 1);
    capture_begin();
    CHECK_INT(servprof_start(), 0);
    CHECK_INT(servprof_store_path(store, sizeof store), 0);
    /* Until the writer committed 8 passes of both GPUs (bounded: 10 s, 100 s under sanitizers). */
    const char *count = "SELECT COUNT(*) FROM slice WHERE cat='npu' AND name='DeviceMemory'";
    for (int i = 0; i < (smp_sanitized() ? 1000 : 100) && q_int(store, count) < 16; i++)
        sleep_ms(100); /* a poll period */
    CHECK_INT(servprof_stop(), 0);
    free(capture_end());
    int64_t rows = q_int(store, count);
    CHECK(rows >= 16);
    CHECK_INT(q_int(store, "SELECT COUNT(*) FROM slice WHERE cat='npu' AND "
                           "json_extract(args, '$.\"scope#device\"')=1 AND "
                           "json_extract(args, '$.\"usage=\"')=2048 AND "
                           "json_extract(args, '$.\"total=\"')=24576 AND "
                           "json_extract(args, '$.\"util=\"')=20"), rows / 2);
}

int main(void)
{
    char tmp[256], cfg[512], text[1024];
    smp_tmpdir(tmp, sizeof tmp, "e2e");
    snprintf(cfg, sizeof cfg, "%s/c.json", tmp);
    snprintf(text, sizeof text,
             "{\"enable\": 1, \"prof_dir\": \"%s/prof\", \"host_system_usage_freq\": 10, "
             "\"npu_memory_usage_freq\": 10, \"acl_task_time\": 1}", tmp);
    CHECK_INT(sp_write_atomic(cfg, text, strlen(text), 0640), 0);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    setenv("HOME", tmp, 1);
    session_one(tmp);
    session_two();
    servprof_shutdown();
    CHECK_DONE();
}
