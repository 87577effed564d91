/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_link.c — the cost of servprof_link() on the calling thread: while
 * collection is off (the call keeps the link in linkkeep.c's ring, one
 * mutex per call), with no config file set (the same path: the level is 0),
 * and while collection is on (a Link record into the thread's ring).
 *
 * Prints CPU nanoseconds per call (the calling thread's CPU time, so a busy
 * machine does not inflate them), the median of REPS repetitions, for 1
 * thread and for 2 threads calling at once (each thread's own figure: the
 * lock's cache line moving between cores shows there), and an uncontended
 * pthread mutex lock + unlock alone, to say how much of the off path is
 * the lock. The goal: the off path within 2x the on path's cost, and the
 * lock not more than the rest of the call (else: per-thread slots).
 *
 * usage: bench_link [iterations per repetition (default 1000000)]
 */
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tbuf.h"

#define REPS 7

static long iters;
static char dir[1024];

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp);
    return v[n / 2];
}

/* ids of a real server's length: a front-end id and an engine id */
static const char *const from_ids[4] = {"chatcmpl-7f3a9c21d4e84b6a", "chatcmpl-0b1c2d3e4f5a6b7c",
                                        "chatcmpl-a1b2c3d4e5f60718", "chatcmpl-ffee00112233aabb"};
static const char *const to_ids[4] = {"eng-1024", "eng-1025", "eng-1026", "eng-1027"};

static double run_link(void)
{
    int64_t t0 = cpu_ns();
    for (long i = 0; i < iters; i++)
        servprof_link(from_ids[i & 3], to_ids[i & 3]);
    return (double)(cpu_ns() - t0) / (double)iters;
}

static pthread_mutex_t bench_mu = PTHREAD_MUTEX_INITIALIZER;
static volatile long sink;

static double run_mutex(void)
{
    int64_t t0 = cpu_ns();
    for (long i = 0; i < iters; i++) {
        pthread_mutex_lock(&bench_mu);
        sink = i;
        pthread_mutex_unlock(&bench_mu);
    }
    return (double)(cpu_ns() - t0) / (double)iters;
}

typedef struct targ {
    pthread_barrier_t *bar;
    double ns;
} targ;

static void *thread_run(void *arg)
{
    targ *a = arg;
    servprof_link("warm", "up"); /* the thread's buffer and tid outside the timing */
    pthread_barrier_wait(a->bar);
    a->ns = run_link();
    return NULL;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* on: a recorder whose rings hold a whole repetition (nothing drops),
 * opened fresh for each repetition as bench_record does */
static void rec_open(void)
{
    static sp_session s;
    static sp_config c;
    static int n;
    memset(&s, 0, sizeof s);
    memset(&c, 0, sizeof c);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/servprof-bench-link-%d-%d", tmp && *tmp ? tmp : "/tmp", (int)getpid(), n++);
    snprintf(s.store_path, sizeof s.store_path, "%s/ms_service_bench.db", dir);
    snprintf(s.hostname, sizeof s.hostname, "bench");
    c.buffer_bytes = (size_t)256 << 20;
    if (sp_recorder_open(&s, &c) != 0) {
        fprintf(stderr, "bench_link: cannot open the recorder\n");
        exit(1);
    }
    atomic_store(&servprof__level, SERVPROF_LEVEL_INFO);
}

static void rec_close(void)
{
    atomic_store(&servprof__level, 0);
    sp_recorder_close();
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Median per-call CPU ns of one thread, and of each of two threads at once
 * (their mean); on: each run in a fresh recorder. */
static void measure(const char *what, int on, double *one, double *two)
{
    double v1[REPS], v2[REPS];
    for (int r = 0; r < REPS; r++) {
        if (on)
            rec_open();
        v1[r] = run_link();
        if (on) {
            rec_close();
            rec_open();
        }
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 2);
        pthread_t t[2];
        targ a[2] = {{&bar, 0}, {&bar, 0}};
        for (int k = 0; k < 2; k++)
            pthread_create(&t[k], NULL, thread_run, &a[k]);
        for (int k = 0; k < 2; k++)
            pthread_join(t[k], NULL);
        pthread_barrier_destroy(&bar);
        v2[r] = (a[0].ns + a[1].ns) / 2;
        if (on)
            rec_close();
    }
    *one = median(v1, REPS);
    *two = median(v2, REPS);
    printf("%-44s %8.1f ns/call (1 thread) %8.1f ns/call (each of 2 threads)\n", what, *one, *two);
}

int main(int argc, char **argv)
{
    iters = argc > 1 ? atol(argv[1]) : 1000000;
    if (iters <= 0)
        iters = 1000000;
    unsetenv("SERVICE_PROF_CONFIG_PATH");
    servprof_link("warm", "up"); /* the runtime's first-call setup */
    double none1, none2, on1, on2;
    measure("off, no config set (the link kept)", 0, &none1, &none2);
    /* off with a config file whose "enable" is 0: the same level 0, the same path */
    double off1 = none1, off2 = none2;

    double vm[REPS];
    for (int r = 0; r < REPS; r++)
        vm[r] = run_mutex();
    double mutex = median(vm, REPS);
    printf("%-44s %8.1f ns\n", "uncontended mutex lock + unlock alone", mutex);

    measure("on (a Link record into the thread's ring)", 1, &on1, &on2);

    double rest = off1 - mutex;
    printf("off path: %.1f ns = lock %.1f + the rest %.1f; off / on = %.2f (1 thread), %.2f (2 threads)\n", off1,
           mutex, rest, off1 / on1, off2 / on2);
    printf("goal: off within 2x on, and the lock not more than the rest of the call: %s\n",
           off1 <= 2 * on1 && off2 <= 2 * on2 && mutex <= rest ? "met" : "NOT met");
    return 0;
}
