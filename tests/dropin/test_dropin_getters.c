/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dropin_getters.c — the drop-in library's configuration getters and
 * tracing stubs, through the reference ABI alone (dlopen of
 * "libms_service_profiler.so" by name, dlsym of each function):
 *
 *  - GetAclProfAicoreMetrics answers CANN's aclprofAicoreMetrics value for
 *    every ACL_AICORE_* name the config accepts;
 *  - GetTorchProfStack / GetTorchProfModules / GetTorchProfStepNum /
 *    GetTorchProfilerEnable / GetAclTaskTimeLevel follow live config edits
 *    both ways;
 *  - the OpenTelemetry-style tracing symbols (Tracer.h) say tracing is off,
 *    hand out no span data and record nothing, even during a session in
 *    which the same process's other records are stored.
 *
 * Waits are on conditions, polled with a bound (never a bare sleep).
 */
#include <dlfcn.h>
#include <glob.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dropin_test.h"

static bool (*IsEnable)(uint32_t);
static void (*MarkEventEx)(const char *, const char *, const char *);
static const char *(*GetProfPath)(void);
static int (*GetTorchProfStepNum)(void);
static bool (*GetTorchProfilerEnable)(void);
static bool (*GetTorchProfStack)(void);
static bool (*GetTorchProfModules)(void);
static const char *(*GetAclTaskTimeLevel)(void);
static int (*GetAclProfAicoreMetrics)(void);
static void (*RegisterProfilerStartCallback)(void (*)(void));
static void (*RegisterProfilerStopCallback)(void (*)(void));
static bool (*IsTraceEnable)(void);
static void (*ResAddAttr)(const char *, const char *);
static void *(*NewSpanData)(const char *);
static void (*SpanActivate)(void *, uint64_t);
static void (*SpanFillCtxData)(void *, uint64_t, uint64_t, uint64_t, uint64_t);
static void (*SpanAddAttribute)(void *, const char *, const char *);
static void (*SpanSetStatus)(void *, bool, const void *);
static void (*SpanEndAndFree)(void *, void *);

static char dir[256], cfg[300], prof[300];

static void open_lib(void)
{
    void *h = dropin_dlopen();
    LOOK(h, IsEnable);
    LOOK(h, MarkEventEx);
    LOOK(h, GetProfPath);
    LOOK(h, GetTorchProfStepNum);
    LOOK(h, GetTorchProfilerEnable);
    LOOK(h, GetTorchProfStack);
    LOOK(h, GetTorchProfModules);
    LOOK(h, GetAclTaskTimeLevel);
    LOOK(h, GetAclProfAicoreMetrics);
    LOOK(h, RegisterProfilerStartCallback);
    LOOK(h, RegisterProfilerStopCallback);
    LOOK(h, IsTraceEnable);
    LOOK(h, ResAddAttr);
    LOOK(h, NewSpanData);
    LOOK(h, SpanActivate);
    LOOK(h, SpanFillCtxData);
    LOOK(h, SpanAddAttribute);
    LOOK(h, SpanSetStatus);
    LOOK(h, SpanEndAndFree);
}

/* Replaces the config file atomically (the watcher sees one whole file). */
static void write_config(const char *extra)
{
    dropin_write_config(cfg, prof, extra);
}

/* ---- the ACL AI Core metric names ------------------------------------- */

/* CANN's acl_prof.h enumeration aclprofAicoreMetrics. */
static const struct {
    const char *name;
    int value;
} aicore[] = {
    {"ACL_AICORE_ARITHMETIC_UTILIZATION", 0}, {"ACL_AICORE_PIPE_UTILIZATION", 1},
    {"ACL_AICORE_MEMORY_BANDWIDTH", 2},       {"ACL_AICORE_L0B_AND_WIDTH", 3},
    {"ACL_AICORE_RESOURCE_CONFLICT_RATIO", 4}, {"ACL_AICORE_MEMORY_UB", 5},
    {"ACL_AICORE_L2_CACHE", 6},               {"ACL_AICORE_MEMORY_ACCESS", 8},
    {"ACL_AICORE_NONE", 0xFF},
};
static int want_aicore;
static int aicore_is(void) { return GetAclProfAicoreMetrics() == want_aicore; }

static void check_aicore_names(void)
{
    /* From one name to the next, so each edit changes the answer. */
    for (size_t i = 0; i < sizeof aicore / sizeof aicore[0]; i++) {
        char extra[200];
        snprintf(extra, sizeof extra, "\"enable\": 0, \"aclprofAicoreMetrics\": \"%s\"",
                 aicore[i].name);
        write_config(extra);
        want_aicore = aicore[i].value;
        if (!dropin_wait_for(aicore_is))
            fprintf(stderr, "%s: GetAclProfAicoreMetrics() = %d, expected %d\n", aicore[i].name,
                    GetAclProfAicoreMetrics(), aicore[i].value);
        CHECK_INT(GetAclProfAicoreMetrics(), aicore[i].value);
    }
    /* A name the config refuses: its default, PIPE_UTILIZATION. */
    write_config("\"enable\": 0, \"aclprofAicoreMetrics\": \"ACL_AICORE_BOGUS\"");
    want_aicore = 1;
    CHECK(dropin_wait_for(aicore_is));
}

/* ---- the torch profiler's settings ------------------------------------ */

static int torch_all_on(void)
{
    return GetTorchProfStack() && GetTorchProfModules() && GetTorchProfStepNum() == 7 &&
           GetTorchProfilerEnable() && !strcmp(GetAclTaskTimeLevel(), "L1");
}

static int torch_all_off(void)
{
    return !GetTorchProfStack() && !GetTorchProfModules() && GetTorchProfStepNum() == 0 &&
           !GetTorchProfilerEnable() && !strcmp(GetAclTaskTimeLevel(), "L0");
}

static int torch_stack_only(void)
{
    /* acl_task_time 1 is CUPTI, not the torch profiler. */
    return GetTorchProfStack() && !GetTorchProfModules() && !GetTorchProfilerEnable() &&
           GetTorchProfStepNum() == 2;
}

static void check_torch_settings(void)
{
    write_config("\"enable\": 0, \"acl_task_time\": 3, \"acl_prof_task_time_level\": \"L1;10\","
                 " \"torch_prof_stack\": true, \"torch_prof_modules\": 1,"
                 " \"torch_prof_step_num\": 7");
    CHECK(dropin_wait_for(torch_all_on));
    CHECK_STR(GetAclTaskTimeLevel(), "L1");
    write_config("\"enable\": 0, \"acl_task_time\": 1, \"torch_prof_stack\": 1,"
                 " \"torch_prof_modules\": false, \"torch_prof_step_num\": 2");
    CHECK(dropin_wait_for(torch_stack_only));
    CHECK(!GetTorchProfilerEnable());
    write_config("\"enable\": 0");
    CHECK(dropin_wait_for(torch_all_off));
    CHECK_STR(GetProfPath(), prof); /* no session: the configured folder */
}

/* ---- the tracing stubs -------------------------------------------------- */

static _Atomic int starts, stops;
static void on_start(void) { atomic_fetch_add(&starts, 1); }
static void on_stop(void) { atomic_fetch_add(&stops, 1); }
static int started(void) { return atomic_load(&starts) >= 1; }
static int stopped(void) { return atomic_load(&stops) >= 1; }

static long long count_rows(const char *sess, const char *where)
{
    char pattern[600], sql[300];
    snprintf(pattern, sizeof pattern, "%s/Trace_Service/ms_service_*-%d.db", sess, (int)getpid());
    snprintf(sql, sizeof sql, "SELECT count(*) FROM slice WHERE %s", where);
    glob_t g;
    sqlite3 *db = NULL;
    sqlite3_stmt *st;
    long long v = -1;
    if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc == 1 &&
        sqlite3_open_v2(g.gl_pathv[0], &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    } else {
        fprintf(stderr, "no single readable store matches %s\n", pattern);
    }
    sqlite3_close(db);
    globfree(&g);
    return v;
}

static void check_tracing_stubs(void)
{
    RegisterProfilerStartCallback(on_start);
    RegisterProfilerStopCallback(on_stop);
    write_config("\"enable\": 1, \"profiler_level\": \"INFO\"");
    CHECK(dropin_wait_for(started));
    CHECK(IsEnable(0));
    char sess[512];
    snprintf(sess, sizeof sess, "%s", GetProfPath());

    /* Even while collecting, tracing is off and nothing is exported. */
    CHECK(!IsTraceEnable());
    CHECK(NewSpanData("otelSpan") == NULL);
    ResAddAttr("service.name", "otelResource");
    int fake = 42; /* a span pointer the header never hands out: still ignored */
    void *spans[2] = {NULL, &fake};
    for (int i = 0; i < 2; i++) {
        SpanActivate(spans[i], 123);
        SpanFillCtxData(spans[i], 1, 2, 3, 4);
        SpanAddAttribute(spans[i], "otelKey", "otelValue");
        SpanSetStatus(spans[i], false, "otelStatus");
        SpanEndAndFree(spans[i], "otelModule");
    }
    CHECK_INT(fake, 42); /* never written through (nor freed: ASan would say) */
    MarkEventEx("witness", "Request", "{\"type\":0}");

    write_config("\"enable\": 0");
    CHECK(dropin_wait_for(stopped));
    CHECK_INT(count_rows(sess, "name = 'witness'"), 1);
    CHECK_INT(count_rows(sess, "name LIKE 'otel%' OR args LIKE '%otel%'"), 0);
    CHECK_INT(count_rows(sess, "1"), 1);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/servprof-getters-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(prof, sizeof prof, "%s/prof", dir);
    write_config("\"enable\": 0");
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    open_lib();

    check_aicore_names();
    check_torch_settings();
    check_tracing_stubs();

    check_remove_tree(dir);
    CHECK_DONE();
}
