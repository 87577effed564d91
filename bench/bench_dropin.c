/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_dropin.c — the drop-in library (libms_service_profiler.so) through
 * the reference's ABI, loaded the way its clients load it (dlopen by name,
 * dlsym): run it with LD_LIBRARY_PATH=<build>/dropin.
 *
 * Phases (each printed; per-call figures are the calling thread's CPU
 * time, medians of REPS runs):
 *  1. off: IsEnable(INFO) per call, and an empty call through a function
 *     pointer (what any dlsym'd call costs) to subtract;
 *  2. off: what a disabled PROF(...) call site of the reference's
 *     header-only client asks the library: IsValidDomain once (Domain())
 *     and IsEnable three times (an attribute, a metric, Launch()). The
 *     header's own work (its std::string members) is not ours: see
 *     docs/benchmarks.md for the whole, measured against the real header;
 *  3. on: MarkEventEx with a 3-attribute JSON message (what the Python
 *     package and the C++ header send), into a buffer that holds them all;
 *  4. on, paced: one new thread (default 4 MiB buffer, as bench_writer's
 *     paced phase) at RATE records/s for SECONDS; prints the rate
 *     that reached the store, Meta dropped_records (goal: 0) and the CPU
 *     the rest of the process (the writer, decoding the messages) used.
 * Verifies as it goes: rows stored = calls made, in phases 3 and 4.
 *
 * usage: bench_dropin [N (default 2000000)] [rate (default 1000000)] [seconds (default 3)]
 */
#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define REPS 5

static bool (*IsEnable)(uint32_t);
static bool (*IsValidDomain)(const char *);
static void (*MarkEventEx)(const char *, const char *, const char *);
static void (*StartServerProfiler)(void);
static void (*StopServerProfiler)(void);
static const char *(*GetProfPath)(void);
static int (*GetTorchProfStepNum)(void);

static const char MSG[] = "{\"rid\": \"req-1\", \"QueueSize=\": 3, \"scope#QueueName\": \"WAITING\", "
                          "\"type\": 0}";

static int64_t cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t process_cpu_ns(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return ((int64_t)u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, REPS, sizeof *v, cmp);
    return v[REPS / 2];
}

__attribute__((noinline)) static bool empty(uint32_t level)
{
    __asm__ volatile("" ::: "memory");
    return level == 12345;
}

static char dir[128], cfg[160];

typedef struct paced {
    long rate;
    int seconds;
    long made;
    int64_t wall, cpu;
} paced;

/* One thread at p->rate records/s for p->seconds: a batch per ms, on
 * absolute deadlines. */
static void *paced_main(void *arg)
{
    paced *p = arg;
    long total = p->rate * p->seconds, per_tick = p->rate / 1000;
    int64_t start = mono_ns(), c0 = cpu_ns();
    for (long tick = 0; p->made < total; tick++) {
        int64_t due = start + tick * 1000000;
        while (mono_ns() < due) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
        for (long i = 0; i < per_tick && p->made < total; i++, p->made++)
            MarkEventEx("Enqueue", "Schedule", MSG);
    }
    p->wall = mono_ns() - start;
    p->cpu = cpu_ns() - c0;
    return NULL;
}

/* buffer_kb: per-thread buffer; marker: torch_prof_step_num, which
 * GetTorchProfStepNum() reads back once the watcher took the file. */
static void write_config(int enable, int buffer_kb, int marker)
{
    FILE *f = fopen(cfg, "w");
    if (!f) {
        perror(cfg);
        exit(1);
    }
    fprintf(f, "{\"enable\": %d, \"prof_dir\": \"%s/prof\", \"profiler_level\": \"INFO\", "
            "\"buffer_size_kb\": %d, \"torch_prof_step_num\": %d}\n", enable, dir, buffer_kb,
            marker);
    fclose(f);
}

/* Rows and Meta of the store of the session that just ended (session
 * folder sess). */
static void store_counts(const char *sess, long long *rows, long long *dropped)
{
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/Trace_Service/ms_service_*-%d.db", sess, (int)getpid());
    glob_t g;
    *rows = *dropped = -1;
    if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc != 1) {
        fprintf(stderr, "no store matches %s\n", pattern);
        return;
    }
    sqlite3 *db;
    if (sqlite3_open_v2(g.gl_pathv[0], &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM slice), (SELECT value FROM Meta "
                               "WHERE name = 'dropped_records')", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            *rows = sqlite3_column_int64(st, 0);
            *dropped = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    globfree(&g);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    long rate = argc > 2 ? atol(argv[2]) : 1000000;
    int seconds = argc > 3 ? atoi(argv[3]) : 3;
    void *h = dlopen("libms_service_profiler.so", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen: %s (run with LD_LIBRARY_PATH=<build>/dropin)\n", dlerror());
        return 1;
    }
    *(void **)&IsEnable = dlsym(h, "IsEnable");
    *(void **)&IsValidDomain = dlsym(h, "IsValidDomain");
    *(void **)&MarkEventEx = dlsym(h, "MarkEventEx");
    *(void **)&StartServerProfiler = dlsym(h, "StartServerProfiler");
    *(void **)&StopServerProfiler = dlsym(h, "StopServerProfiler");
    *(void **)&GetProfPath = dlsym(h, "GetProfPath");
    *(void **)&GetTorchProfStepNum = dlsym(h, "GetTorchProfStepNum");
    if (!IsEnable || !IsValidDomain || !MarkEventEx || !StartServerProfiler || !GetProfPath ||
        !GetTorchProfStepNum)
        return 1;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/servprof-bench-dropin-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    write_config(0, 65536, 0);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg, 1);

    /* 1 and 2: collection off */
    bool (*volatile empty_fn)(uint32_t) = empty;
    bool (*volatile is_enable)(uint32_t) = IsEnable;
    bool (*volatile valid)(const char *) = IsValidDomain;
    double e[REPS], off[REPS], site[REPS];
    long sink = 0;
    (void)IsEnable(20); /* initializes the library */
    for (int r = 0; r < REPS; r++) {
        int64_t t0 = cpu_ns();
        for (long i = 0; i < n; i++)
            sink += empty_fn(20);
        int64_t t1 = cpu_ns();
        for (long i = 0; i < n; i++)
            sink += is_enable(20);
        int64_t t2 = cpu_ns();
        for (long i = 0; i < n; i++) {
            if (valid("Schedule")) { /* Domain("Schedule") */
                sink += is_enable(20); /* .Attr(...) */
                sink += is_enable(20); /* .Metric(...) */
                sink += is_enable(20); /* .Launch() */
            }
        }
        int64_t t3 = cpu_ns();
        e[r] = (double)(t1 - t0) / n;
        off[r] = (double)(t2 - t1) / n;
        site[r] = (double)(t3 - t2) / n;
    }
    double me = median(e), moff = median(off), msite = median(site);
    printf("off: empty call through a pointer      %.2f ns\n", me);
    printf("off: IsEnable(INFO)                    %.2f ns per call (%.2f ns over the empty call)\n",
           moff, moff - me);
    printf("off: a PROF(...) site's library calls  %.2f ns (IsValidDomain + 3 IsEnable)\n", msite);

    /* 3: on, a burst into a buffer that holds it; each repetition is its
     * own session, whose stop drains everything before the count */
    long burst = n < 400000 ? n : 400000; /* 64 MiB buffer: ~140 bytes per record */
    double on[REPS];
    long long rows = 0, dropped = 0, stored = 0, lost = 0;
    char sess[512];
    for (int r = 0; r < REPS; r++) {
        StartServerProfiler();
        snprintf(sess, sizeof sess, "%s", GetProfPath());
        int64_t t0 = cpu_ns();
        for (long i = 0; i < burst; i++)
            MarkEventEx("Enqueue", "Schedule", MSG);
        on[r] = (double)(cpu_ns() - t0) / burst;
        StopServerProfiler();
        store_counts(sess, &rows, &dropped);
        stored += rows;
        lost += dropped;
    }
    printf("on:  MarkEventEx, 3-attribute JSON     %.1f ns per call (%ld calls x %d)\n",
           median(on), burst, REPS);
    printf("     stored %lld of %lld, dropped %lld%s\n", stored, (long long)burst * REPS, lost,
           stored == (long long)burst * REPS ? "" : "  <-- MISMATCH");

    /* 4: paced, one new thread with the default 4 MiB buffer (as
     * bench_writer's paced phase), once the watcher read that config */
    write_config(0, 4096, 7);
    for (int i = 0; i < 2000 && GetTorchProfStepNum() != 7; i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    if (GetTorchProfStepNum() != 7)
        fprintf(stderr, "the config with a 4 MiB buffer was not taken in 10 s\n");
    StartServerProfiler();
    snprintf(sess, sizeof sess, "%s", GetProfPath());
    paced p = {rate, seconds, 0, 0, 0};
    pthread_t th;
    int64_t p0 = process_cpu_ns();
    pthread_create(&th, NULL, paced_main, &p);
    pthread_join(th, NULL);
    StopServerProfiler();
    int64_t rest = process_cpu_ns() - p0 - p.cpu;
    long total = rate * seconds;
    store_counts(sess, &rows, &dropped);
    printf("paced: %ld records at %ld/s for %d s, 4 MiB buffer: offered %.2f M/s, stored %lld, "
           "dropped %lld%s\n", total, rate, seconds, total / (p.wall / 1e9) / 1e6, rows, dropped,
           rows + dropped == total ? "" : "  <-- rows + dropped != records");
    printf("       producer CPU %.2f s; the rest of the process (writer, decoding) %.2f s, "
           "%.0f ns per record\n", p.cpu / 1e9, rest / 1e9, (double)rest / total);
    if (sink == 42)
        printf(" ");
    if (!getenv("KEEP_TMP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return 0;
}
