/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dropin_behaviour.c — the drop-in library's behaviour through the
 * reference ABI alone (dlopen of "libms_service_profiler.so" by name,
 * dlsym of each function), under a real config file edited while the
 * program runs:
 *
 *  - start/stop callbacks on live enable/disable (file edits, the step
 *    limit), from the "servprof-cb" thread, calling back into the library;
 *    metric callbacks on metric_enable edits;
 *  - IsEnable per level, IsValidDomain under a domain filter, GetProfPath
 *    during and outside a session;
 *  - NULL, malformed and over-long messages; a span ended twice, one never
 *    ended, an unknown handle; all kept or counted in Meta;
 *  - many threads at once; a fork child recording into its own store;
 *  - profiler_step_num counted from SetProfilerCurrentStep's first value;
 *    timelimit.
 *
 * Waits are on conditions, polled with a bound (never a bare sleep).
 */
#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dropin_test.h"

typedef uint64_t SpanHandle;

static bool (*IsEnable)(uint32_t);
static bool (*IsValidDomain)(const char *);
static bool (*GetEnableDomainFilter)(void);
static SpanHandle (*StartSpanWithName)(const char *);
static void (*MarkSpanAttr)(const char *, SpanHandle);
static void (*EndSpan)(SpanHandle);
static void (*MarkEvent)(const char *);
static void (*MarkEventEx)(const char *, const char *, const char *);
static void (*SpanEndEx)(const char *, const char *, const char *, SpanHandle);
static void (*AddMetaInfo)(const char *, const char *);
static void (*StopServerProfiler)(void);
static const char *(*GetProfPath)(void);
static void (*SetProfilerCurrentStep)(int);
static int (*GetTorchProfStepNum)(void);
static bool (*GetTorchProfilerEnable)(void);
static const char *(*GetAclTaskTimeLevel)(void);
static int (*GetAclProfAicoreMetrics)(void);
static void (*RegisterProfilerStartCallback)(void (*)(void));
static void (*RegisterProfilerStopCallback)(void (*)(void));
static void (*RegisterProfilerStartMetricCallback)(void (*)(void));
static void (*RegisterProfilerStopMetricCallback)(void (*)(void));

static char dir[256], cfg[300], prof[300];

static void open_lib(void)
{
    void *h = dropin_dlopen();
    LOOK(h, IsEnable);
    LOOK(h, IsValidDomain);
    LOOK(h, GetEnableDomainFilter);
    LOOK(h, StartSpanWithName);
    LOOK(h, MarkSpanAttr);
    LOOK(h, EndSpan);
    LOOK(h, MarkEvent);
    LOOK(h, MarkEventEx);
    LOOK(h, SpanEndEx);
    LOOK(h, AddMetaInfo);
    LOOK(h, StopServerProfiler);
    LOOK(h, GetProfPath);
    LOOK(h, SetProfilerCurrentStep);
    LOOK(h, GetTorchProfStepNum);
    LOOK(h, GetTorchProfilerEnable);
    LOOK(h, GetAclTaskTimeLevel);
    LOOK(h, GetAclProfAicoreMetrics);
    LOOK(h, RegisterProfilerStartCallback);
    LOOK(h, RegisterProfilerStopCallback);
    LOOK(h, RegisterProfilerStartMetricCallback);
    LOOK(h, RegisterProfilerStopMetricCallback);
}

/* Replaces the config file atomically (the watcher sees one whole file). */
static void write_config(const char *extra)
{
    dropin_write_config(cfg, prof, extra);
}

/* ---- callbacks ----------------------------------------------------------- */

static _Atomic int starts, stops, metric_starts, metric_stops, wrong_thread, enable_in_cb;

static void check_thread(void)
{
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (strcmp(name, "servprof-cb") != 0)
        atomic_fetch_add(&wrong_thread, 1);
}

static void on_start(void)
{
    check_thread();
    /* back into the library from the callback */
    if (IsEnable(10))
        atomic_fetch_add(&enable_in_cb, 1);
    MarkEventEx("fromCallback", "Request", "{\"type\":0}");
    atomic_fetch_add(&starts, 1);
}

static void on_stop(void)
{
    check_thread();
    atomic_fetch_add(&stops, 1);
}

static void on_metric_start(void)
{
    check_thread();
    atomic_fetch_add(&metric_starts, 1);
}

static void on_metric_stop(void)
{
    check_thread();
    atomic_fetch_add(&metric_stops, 1);
}

static int started1(void) { return atomic_load(&starts) >= 1; }
static int stopped1(void) { return atomic_load(&stops) >= 1; }
static int started2(void) { return atomic_load(&starts) >= 2; }
static int stopped2(void) { return atomic_load(&stops) >= 2; }
static int started3(void) { return atomic_load(&starts) >= 3; }
static int stopped3(void) { return atomic_load(&stops) >= 3; }
static int metric_on(void) { return atomic_load(&metric_starts) >= 1; }
static int metric_off(void) { return atomic_load(&metric_stops) >= 1; }
static int is_off(void) { return !IsEnable(0); }

/* The runtime wrote "enable": 0 back into the file (after a limit). */
static int file_says_off(void)
{
    char text[1024] = "";
    FILE *f = fopen(cfg, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    return strstr(text, "\"enable\": 0") != NULL;
}

/* ---- the store ---------------------------------------------------------- */

/* The one store of this process under session folder sess. */
static sqlite3 *open_store(const char *sess, int pid)
{
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/Trace_Service/ms_service_*-%d.db", sess, pid);
    glob_t g;
    sqlite3 *db = NULL;
    if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc == 1)
        sqlite3_open_v2(g.gl_pathv[0], &db, SQLITE_OPEN_READONLY, NULL);
    else
        fprintf(stderr, "no single store matches %s\n", pattern);
    globfree(&g);
    return db;
}

static long long query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    long long v = -1;
    if (db && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    } else {
        fprintf(stderr, "query failed: %s\n", sql);
    }
    return v;
}

static long long meta_int(sqlite3 *db, const char *key)
{
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT CAST(value AS INTEGER) FROM Meta WHERE name = '%s'", key);
    return query_int(db, sql);
}

static long long count_rows(sqlite3 *db, const char *where)
{
    char sql[600];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM slice WHERE %s", where);
    return query_int(db, sql);
}

/* ---- many threads ------------------------------------------------------- */

#define THREADS 8
#define PER_THREAD 2000

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char msg[96];
        snprintf(msg, sizeof msg, "{\"rid\":\"t-%d\",\"QueueSize=\":%d,\"type\":0}", i, i % 7);
        MarkEventEx("threadEvent", "Request", msg);
        if (i % 4 == 0) {
            SpanHandle h = StartSpanWithName("threadSpan");
            SpanEndEx("threadSpan", "Execute", "{\"type\":2}", h);
            EndSpan(h);
        }
    }
    return NULL;
}

/* ---- the test ------------------------------------------------------------ */

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/servprof-dropin-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(prof, sizeof prof, "%s/prof", dir);
    write_config("\"enable\": 0, \"profiler_level\": \"DETAILED\"");
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);
    open_lib();

    /* Off: nothing enabled, the path is the configured folder. */
    RegisterProfilerStartCallback(on_start);
    RegisterProfilerStopCallback(on_stop);
    RegisterProfilerStartMetricCallback(on_metric_start);
    RegisterProfilerStopMetricCallback(on_metric_stop);
    CHECK(!IsEnable(0));
    CHECK(!IsEnable(10));
    CHECK_STR(GetProfPath(), prof);
    CHECK_INT(GetTorchProfStepNum(), 0);
    CHECK(!GetTorchProfilerEnable());
    CHECK_STR(GetAclTaskTimeLevel(), "L0");
    CHECK_INT(GetAclProfAicoreMetrics(), 1); /* ACL_AICORE_PIPE_UTILIZATION, the default */
    CHECK_INT(atomic_load(&starts), 0);

    /* Live enable with a domain filter: the start callback fires. */
    write_config("\"enable\": 1, \"profiler_level\": \"DETAILED\", \"domain\": \"Request;Execute\","
                 " \"acl_task_time\": 3, \"torch_prof_step_num\": 4,"
                 " \"acl_prof_task_time_level\": \"L1\"");
    CHECK(dropin_wait_for(started1));
    CHECK(IsEnable(0));
    CHECK(IsEnable(10));
    CHECK(IsEnable(20));
    CHECK(IsEnable(30));
    CHECK(!IsEnable(40));
    CHECK(IsValidDomain("Request"));
    CHECK(IsValidDomain("Execute"));
    CHECK(!IsValidDomain("Schedule"));
    CHECK(IsValidDomain(NULL));
    CHECK(GetEnableDomainFilter());
    CHECK(GetTorchProfilerEnable());
    CHECK_INT(GetTorchProfStepNum(), 4);
    CHECK_STR(GetAclTaskTimeLevel(), "L1");
    char sess[512];
    snprintf(sess, sizeof sess, "%s", GetProfPath());
    CHECK(strncmp(sess, prof, strlen(prof)) == 0 && strlen(sess) > strlen(prof));
    struct stat sb;
    CHECK(stat(sess, &sb) == 0 && S_ISDIR(sb.st_mode));

    /* Records, filtered by domain as native ones are. */
    AddMetaInfo("model", "toy-7b");
    AddMetaInfo(NULL, "x");
    MarkEventEx("kept", "Request", "{\"rid\":\"r1\",\"type\":0}");
    MarkEventEx("filtered", "Schedule", "{\"type\":0}");
    MarkEvent("^name^:^legacyKept^,^domain^:^Execute^,^type^:0,");
    MarkEvent("^name^:^legacyFiltered^,^domain^:^Schedule^,^type^:0,");
    /* NULL and malformed input: kept or ignored, counted, never a crash. */
    MarkEventEx(NULL, NULL, NULL);
    MarkEvent(NULL);
    MarkEventEx("malformed", "Request", "{\"rid\": \"r1\", \"n\": 3,, oops");
    MarkEventEx("notObject", "Request", "[1, 2]");
    size_t big = 100000;
    char *longmsg = malloc(big + 1);
    memset(longmsg, 'a', big);
    memcpy(longmsg, "{\"k\":\"", 6);
    memcpy(longmsg + big - 2, "\"}", 2);
    longmsg[big] = 0;
    MarkEventEx("overlong", "Request", longmsg);
    free(longmsg);
    /* Spans: ended twice, never ended, an unknown handle. */
    SpanHandle twice = StartSpanWithName("twice");
    CHECK(twice != 0);
    SpanEndEx("twice", "Execute", "{\"type\":2}", twice);
    EndSpan(twice);                                          /* the header's protocol: fine */
    SpanEndEx("twice", "Execute", "{\"type\":2}", twice);    /* a second end: counted */
    EndSpan(twice);                                          /* and another */
    SpanHandle legacy = StartSpanWithName("legacySpan");
    MarkSpanAttr("^domain^:^Execute^,^n^:1,^type^:2,", legacy);
    MarkSpanAttr(NULL, legacy);
    EndSpan(legacy);
    SpanHandle plain = StartSpanWithName("plainSpan");
    EndSpan(plain);                                          /* no attributes: as native */
    (void)StartSpanWithName("never");
    for (int i = 0; i < 300; i++) { /* the never-ended span's slot is needed again */
        SpanHandle h = StartSpanWithName("filler");
        SpanEndEx("filler", "Schedule", "{}", h);            /* filtered out: not stored */
    }
    EndSpan(0x7777777777ULL);                                /* not a handle of ours */
    SpanEndEx("x", "Request", "{}", 0);                      /* begun while off: ignored */

    /* Many threads at once. */
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);

    /* A fork child records into its own store of the same session. (Not
     * under TSan, which cannot start threads in the child of a process
     * that has threads: the child's writer is one.) */
    const char *san = getenv("SERVPROF_SANITIZE");
    int fork_ok = !(san && !strcmp(san, "thread"));
    pid_t child = fork_ok ? fork() : -1;
    if (!fork_ok)
        fprintf(stderr, "TSan build: the fork case is skipped\n");
    if (child == 0) {
        MarkEventEx("inChild", "Request", "{\"type\":0}");
        StopServerProfiler(); /* drains and closes the child's store */
        /* _exit: the parent's buffers, which the child forgot on purpose,
         * would read as leaks to LeakSanitizer at exit() */
        _exit(0);
    }
    int status = 0;
    if (fork_ok)
        CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);

    /* Live disable: the stop callback fires, the path is the folder again. */
    write_config("\"enable\": 0, \"profiler_level\": \"DETAILED\"");
    CHECK(dropin_wait_for(stopped1));
    CHECK(!IsEnable(10));
    CHECK_STR(GetProfPath(), prof);
    CHECK_INT(atomic_load(&starts), 1);
    CHECK_INT(atomic_load(&enable_in_cb), 1);

    sqlite3 *db = open_store(sess, (int)getpid());
    CHECK(db != NULL);
    CHECK_INT(count_rows(db, "name = 'kept' AND cat = 'Request' AND args = '{\"type\":0,\"rid\":\"r1\"}'"), 1);
    CHECK_INT(count_rows(db, "name = 'fromCallback'"), 1);
    CHECK_INT(count_rows(db, "name IN ('filtered', 'legacyFiltered', 'filler')"), 0);
    CHECK_INT(count_rows(db, "name = 'legacyKept' AND cat = 'Execute' AND args = '{\"type\":0}'"), 1);
    CHECK_INT(count_rows(db, "name = '' AND cat = '' AND args = '{\"type\":0}'"), 1); /* NULLs */
    CHECK_INT(count_rows(db, "name = 'malformed' AND json_extract(args, '$.rid') = 'r1'"
                             " AND json_extract(args, '$.n') = 3 AND json_extract(args, '$.raw') LIKE '{\"rid\"%'"), 1);
    CHECK_INT(count_rows(db, "name = 'notObject' AND json_extract(args, '$.raw') = '[1, 2]'"), 1);
    CHECK_INT(count_rows(db, "name = 'overlong' AND length(json_extract(args, '$.raw')) = 60000"), 1);
    CHECK_INT(count_rows(db, "name = 'twice' AND duration >= 0"), 1);
    CHECK_INT(count_rows(db, "name = 'legacySpan' AND cat = 'Execute' AND args = '{\"type\":2,\"n\":1}'"), 1);
    CHECK_INT(count_rows(db, "name = 'plainSpan' AND args = '{\"type\":2}'"), 1);
    CHECK_INT(count_rows(db, "name = 'threadEvent'"), THREADS * PER_THREAD);
    CHECK_INT(count_rows(db, "name = 'threadSpan' AND cat = 'Execute'"), THREADS * PER_THREAD / 4);
    CHECK_INT(count_rows(db, "json_valid(args) = 0"), 0);
    CHECK_INT(meta_int(db, "dropped_records"), 0);
    CHECK_INT(meta_int(db, "span_double_end"), 2);
    CHECK_INT(meta_int(db, "spans_never_ended"), 1);
    CHECK_INT(meta_int(db, "truncated_strings"), 1);
    /* AddMetaInfo(NULL), MarkEventEx's NULLs (name is allowed), the unknown
     * handle, two malformed messages, the over-long one */
    CHECK(meta_int(db, "bad_input") >= 5);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, "SELECT value FROM Meta WHERE name = 'model'", -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "toy-7b"));
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (fork_ok) {
        sqlite3 *cdb = open_store(sess, (int)child);
        CHECK_INT(count_rows(cdb, "name = 'inChild'"), 1);
        sqlite3_close(cdb);
    }

    /* profiler_step_num: counted from the first step value of the session. */
    write_config("\"enable\": 1, \"profiler_level\": \"INFO\", \"profiler_step_num\": 3,"
                 " \"metric_enable\": 1");
    CHECK(dropin_wait_for(started2));
    CHECK(dropin_wait_for(metric_on));
    SetProfilerCurrentStep(1000); /* the base: no step counted */
    SetProfilerCurrentStep(1001);
    SetProfilerCurrentStep(1002);
    CHECK(IsEnable(20));
    SetProfilerCurrentStep(1003); /* the third step: collection stops */
    CHECK(dropin_wait_for(is_off));
    CHECK(dropin_wait_for(stopped2));
    CHECK_INT(atomic_load(&metric_stops), 0);
    CHECK(dropin_wait_for(file_says_off)); /* else our edit could race the runtime's */
    write_config("\"enable\": 0, \"metric_enable\": 0");
    CHECK(dropin_wait_for(metric_off));
    CHECK_INT(atomic_load(&starts), 2);
    CHECK_INT(atomic_load(&stops), 2);
    CHECK_INT(atomic_load(&metric_starts), 1);

    /* timelimit stops a session as for native callers: the stop callback
     * fires and "enable": 0 is written back. */
    write_config("\"enable\": 1, \"profiler_level\": \"INFO\", \"timelimit\": 1");
    CHECK(dropin_wait_for(started3));
    CHECK(dropin_wait_for(stopped3));
    CHECK(dropin_wait_for(file_says_off));
    CHECK(!IsEnable(0));
    CHECK_INT(atomic_load(&wrong_thread), 0);

    if (!getenv("KEEP_TMP")) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    CHECK_DONE();
}
