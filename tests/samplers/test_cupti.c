/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cupti.c — device activity against libfake_cupti.so (scripted CUPTI
 * records) and against a missing library. Checks what lands in the
 * activity store: tables and columns of the contract, L0 vs L1, copy types,
 * API names without their _vNNNN suffix, filters in mode 2 only, untimed
 * records dropped, NCCL kernels also in Communication, timestamps on the
 * epoch-ns scale, and the ";N" limit stopping activity while the host
 * sampler goes on.
 */
#include <dlfcn.h>
#include <sqlite3.h>

#include "check.h"
#include "smp_util.h"

#ifndef FAKE_CUPTI_PATH
#error FAKE_CUPTI_PATH must name libfake_cupti.so
#endif

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

static int *fake_int(const char *name)
{
    void *h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_NOLOAD);
    int *p = h ? (int *)dlsym(h, name) : NULL;
    if (h)
        dlclose(h);
    return p;
}

static int session_no;
static int have_cxx;

/* Starts a session with config c in a new folder, stderr captured. */
static void run_begin(sp_config *c, sp_session *s)
{
    char dir[256];
    smp_tmpdir(dir, sizeof dir, "cupti");
    smp_setup(&(sp_config){0}, s, dir);
    s->serial = (uint64_t)++session_no;
    int *batches = fake_int("fake_cupti_batches");
    if (batches)
        *batches = 0;
    capture_begin();
    sp_samplers_start(s, c);
}

/* Stops it; *log: what it said; returns the activity store's path. */
static char *run_end(sp_session *s, char **log)
{
    sp_samplers_stop();
    *log = capture_end();
    return s->activity_path;
}

/* One session of ms milliseconds with config c; returns the store path.
 * The sleep is the session's length, not a wait: with FAKE_CUPTI_BATCHES=1
 * the one batch comes back at the first flush, at the latest the stop's. */
static char *run(sp_config *c, sp_session *s, int ms, char **log)
{
    run_begin(c, s);
    sleep_ms(ms);
    return run_end(s, log);
}

/* Nonzero once the captured stderr (capture_begin) holds text. */
static int said(void *text)
{
    char *log = check_slurp(cap_path);
    int yes = log && strstr(log, text);
    free(log);
    return yes;
}

/* Nonzero once the activity store at path holds *(int64_t *)want kernels
 * (it is read while the sampler writes it). */
static const char *kernels_path;
static int kernels_reach(void *want)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int64_t n = -1;
    if (sqlite3_open_v2(kernels_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM Kernel WHERE type='KERNEL'", -1, &st,
                           NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return n >= *(int64_t *)want;
}

static void test_l1(void)
{
    sp_config c;
    sp_session s;
    smp_setup(&c, &s, "/tmp");
    c.acl_task_time = 1;
    c.acl_prof_task_time_level = 1;
    c.acl_prof_task_time_seconds = 0;
    setenv("FAKE_CUPTI_BATCHES", "1", 1);
    /* mode 1 ignores the filters */
    snprintf(c.kernel_filter, sizeof c.kernel_filter, "softmax");
    int64_t t0 = sp_now_realtime_ns();
    char *log;
    const char *db = run(&c, &s, 300, &log);
    int64_t t1 = sp_now_realtime_ns();
    CHECK(strstr(log, "CUPTI collecting kernels, copies and runtime API calls") != NULL);
    CHECK(strstr(log, "6 kernels, 3 copies/sets, 9 API calls") != NULL);
    free(log);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE type='KERNEL'"), 6);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE name LIKE 'untimed%'"), 0);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE type='MEMCPY_HtoD' AND "
                        "correlationId=7"), 1);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE type='MEMCPY_DtoH'"), 1);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE type='MEMSET' AND name='MEMSET'"), 1);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE name='softmax_kernel' AND "
                        "deviceId=1 AND streamId=8"), 2);
    /* C++ names are demangled when the C++ runtime is in the process (it
     * is in every nvcc-built program; main() loads it here) */
    if (have_cxx)
        CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE "
                            "name='matmul(float*, float*, float*, int)'"), 3);
    else
        CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE name='_Z6matmulPfS_S_i'"), 3);
    CHECK_INT(q_int(db, "SELECT SUM(end-start) FROM Kernel WHERE name LIKE '%matmul%'"), 6000);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Api WHERE name='cudaLaunchKernel'"), 6);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Api WHERE name='cudaMemcpyAsync'"), 2);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Api WHERE name='runtime_api_999'"), 1);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Api WHERE processId=4242 AND threadId=77"), 9);
    /* flows: every kernel has its launch call */
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel k JOIN Api a USING (correlationId) "
                        "WHERE k.type='KERNEL' AND a.name='cudaLaunchKernel'"), 6);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Communication WHERE name LIKE 'nccl%' AND "
                        "deviceId=0 AND streamId=9 AND correlationId=6 AND end-start=4000"), 1);
    /* epoch ns, not the CUPTI clock: within this run */
    CHECK(q_int(db, "SELECT MIN(start) FROM (SELECT start FROM Kernel UNION ALL "
                    "SELECT start FROM Api)") > t0 - 50000000);
    CHECK(q_int(db, "SELECT MAX(end) FROM Kernel") < t1);
    sp_cupti_stats st;
    sp_cupti_get_stats(&st);
    /* the fake clock is CLOCK_MONOTONIC + 1e15: the offset must say so */
    int64_t expect = sp_now_realtime_ns() - (sp_now_monotonic_ns() + 1000000000000000LL);
    CHECK(llabs(st.clock_offset_ns - expect) < 10000000);
}

static void test_l0_and_filters(void)
{
    sp_config c;
    sp_session s;
    smp_setup(&c, &s, "/tmp");
    c.acl_task_time = 1;
    c.acl_prof_task_time_level = 0;
    setenv("FAKE_CUPTI_BATCHES", "1", 1);
    char *log;
    const char *db = run(&c, &s, 200, &log);
    free(log);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel"), 9);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Api"), 0); /* L0: no API calls */
    int *enabled = fake_int("fake_cupti_enabled");
    CHECK(enabled && !enabled[5] && !enabled[10]); /* everything disabled at stop */

    /* aclDataTypeConfig ACL_PROF_ACL_API maps to the runtime API even at L0 */
    snprintf(c.acl_data_type_config, sizeof c.acl_data_type_config,
             "ACL_PROF_TASK_TIME, ACL_PROF_ACL_API");
    db = run(&c, &s, 200, &log);
    CHECK(strstr(log, "aclDataTypeConfig") == NULL); /* both have a counterpart */
    free(log);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Api"), 9);
    /* names without a CUDA counterpart: one warning naming them */
    snprintf(c.acl_data_type_config, sizeof c.acl_data_type_config,
             "ACL_PROF_AICORE_METRICS,ACL_PROF_TASK_TIME,ACL_PROF_L2CACHE");
    snprintf(c.aclprof_aicore_metrics, sizeof c.aclprof_aicore_metrics,
             "ACL_AICORE_MEMORY_BANDWIDTH");
    db = run(&c, &s, 100, &log);
    CHECK_INT(count_substr(log, "aclDataTypeConfig: ACL_PROF_AICORE_METRICS, ACL_PROF_L2CACHE "
                                "have no CUDA counterpart"), 1);
    CHECK_INT(count_substr(log, "aclprofAicoreMetrics: ACL_AICORE_MEMORY_BANDWIDTH"), 1);
    free(log);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Api"), 0); /* still L0 */
    c.acl_data_type_config[0] = '\0';
    c.aclprof_aicore_metrics[0] = '\0';

    /* mode 2: filters keep matching names only (copies are not kernels) */
    c.acl_task_time = 2;
    c.acl_prof_task_time_level = 1;
    snprintf(c.kernel_filter, sizeof c.kernel_filter, "softmax; nccl");
    snprintf(c.api_filter, sizeof c.api_filter, "Memcpy");
    db = run(&c, &s, 200, &log);
    CHECK(strstr(log, "(filtered)") != NULL);
    free(log);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE type='KERNEL'"), 3);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE type!='KERNEL'"), 3);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Api"), 2);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Api WHERE name!='cudaMemcpyAsync'"), 0);
    sp_cupti_stats st;
    sp_cupti_get_stats(&st);
    CHECK_INT(st.filtered, 3 + 7);
}

static void test_limit(void)
{
    sp_config c;
    sp_session s;
    smp_setup(&c, &s, "/tmp");
    c.acl_task_time = 1;
    c.acl_prof_task_time_level = 1;
    c.host_system_usage_freq = 10;
    setenv("FAKE_CUPTI_BATCHES", "1000", 1);
    /* no limit: a batch (6 kernels) per periodic flush (1 s, 2 s, ...),
     * one more at stop; it stops once two periodic batches are stored */
    char *log;
    obs_reset();
    sp_samplers_set_observer(obs_fn, NULL);
    run_begin(&c, &s);
    kernels_path = s.activity_path;
    CHECK(check_wait_until(kernels_reach, &(int64_t){12}, 10000));
    const char *db = run_end(&s, &log);
    free(log);
    int64_t unlimited = q_int(db, "SELECT COUNT(*) FROM Kernel WHERE type='KERNEL'");
    CHECK(unlimited >= 18);
    /* ";1": activity stops after 1 s (the periodic flush at 1 s, then the
     * forced one at the limit), host samples go on after it */
    c.acl_prof_task_time_seconds = 1;
    obs_reset();
    run_begin(&c, &s);
    CHECK(check_wait_until(said, "stopped after 1 s", 10000));
    int host_at_limit = obs_count("MemUsage", 0);
    CHECK(obs_wait("MemUsage", 0, host_at_limit + 5) >= host_at_limit + 5);
    db = run_end(&s, &log);
    sp_samplers_set_observer(NULL, NULL);
    CHECK(strstr(log, "stopped after 1 s") != NULL);
    free(log);
    CHECK_INT(q_int(db, "SELECT COUNT(*) FROM Kernel WHERE type='KERNEL'"), 12);
}

static void test_absent(void)
{
    sp_config c;
    sp_session s;
    smp_setup(&c, &s, "/tmp");
    c.acl_task_time = 1;
    c.host_system_usage_freq = 20;
    setenv("SERVPROF_CUPTI_LIB", "/nonexistent/libcupti.so", 1);
    obs_reset();
    sp_samplers_set_observer(obs_fn, NULL);
    char *log;
    const char *db = run(&c, &s, 400, &log);
    sp_samplers_set_observer(NULL, NULL);
    CHECK_INT(count_substr(log, "CUPTI not available"), 1);
    CHECK_INT(count_substr(log, "\n"), 1);
    CHECK(access(db, F_OK) != 0); /* no activity store at all */
    CHECK(obs_count("MemUsage", 0) >= 3);
    free(log);
    /* a library that is not CUPTI */
    setenv("SERVPROF_CUPTI_LIB", "libm.so.6", 1);
    db = run(&c, &s, 100, &log);
    CHECK_INT(count_substr(log, "CUPTI has no cuptiActivityRegisterCallbacks"), 1);
    CHECK(access(db, F_OK) != 0);
    free(log);
}

/* Nonzero once this session said it cannot create its store (so its
 * counts were reset: that happens on the sampler thread) and *(int *)want
 * buffers came back with nowhere to go. */
static int late_buffers_reach(void *want)
{
    char *log = check_slurp(cap_path); /* stderr so far (capture_begin) */
    int said = log && strstr(log, "cannot create it");
    free(log);
    sp_cupti_stats st;
    sp_cupti_get_stats(&st);
    return said && st.late >= (uint64_t)*(int *)want;
}

/* An activity store that cannot be created: said once, not per buffer. */
static void test_unwritable(void)
{
    sp_config c;
    sp_session s;
    smp_setup(&c, &s, "/proc/servprof-no-such-dir");
    c.acl_task_time = 1;
    setenv("FAKE_CUPTI_BATCHES", "1000", 1);
    int *batches = fake_int("fake_cupti_batches");
    if (batches)
        *batches = 0;
    capture_begin();
    sp_samplers_start(&s, &c);
    /* Two of the sampler's flushes (one a second) handed back a buffer
     * that found no store; the stop flushes a third. */
    CHECK(check_wait_until(late_buffers_reach, &(int){2}, 10000));
    sp_samplers_stop();
    char *log = capture_end();
    CHECK_INT(count_substr(log, "cannot create it"), 1);
    CHECK(batches && *batches >= 3);
    sp_cupti_stats st;
    sp_cupti_get_stats(&st);
    CHECK_INT(st.kernels, 0);
    CHECK(st.late >= 3);
    free(log);
}

static void test_filter_fn(void)
{
    CHECK(sp_name_filter_pass("", "anything"));
    CHECK(sp_name_filter_pass(NULL, "anything"));
    CHECK(sp_name_filter_pass("gemm", "ampere_sgemm_128x64"));
    CHECK(!sp_name_filter_pass("Gemm", "ampere_sgemm_128x64")); /* case-sensitive */
    CHECK(sp_name_filter_pass("foo;;bar ", "xbarx"));
    CHECK(!sp_name_filter_pass(";", "x"));
    CHECK(!sp_name_filter_pass("foo", NULL));
}

int main(void)
{
    have_cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL) != NULL;
    fprintf(stderr, "C++ runtime (demangler) loaded: %s\n", have_cxx ? "yes" : "no");
    /* absent first: once a CUPTI is loaded it stays for the process */
    test_absent();
    setenv("SERVPROF_CUPTI_LIB", FAKE_CUPTI_PATH, 1);
    test_filter_fn();
    test_l1();
    test_l0_and_filters();
    test_limit();
    test_unwritable();
    CHECK_DONE();
}
