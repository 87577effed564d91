/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_record.c — the cost of a recording call on the calling thread.
 *
 * Prints, as the median of REPS repetitions, CPU nanoseconds per call (the
 * calling thread's CPU time, so a busy machine does not inflate them) for:
 *   1. a disabled call site (level off): servprof_rec_begin + 2 attrs + event,
 *      inline in a loop minus the same loop without it (what a real call site
 *      adds), and inside a noinline function (call overhead included);
 *   2. an enabled event with two attributes (an int and a string);
 *   3. a span begin + end carrying a rid and two attributes;
 *   4. 1 thread vs 2 threads doing (2) at once: aggregate calls/s, ratio;
 *   5. memory per recording thread (allocation and resident growth).
 * Phases 2-4 run twice: with the writer thread held off (the pure hot path:
 * the ring is big enough for the whole run) and with the writer draining
 * concurrently (what a server sees; on a 2-core machine the writer competes
 * for the same cores). Verifies that nothing was dropped.
 *
 * usage: bench_record [iterations per repetition (default 1000000)]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <ftw.h>

#include "clock.h"
#include "internal.h"
#include "tbuf.h"

#define REPS 7

static long iters;
static int hold_writer;
static char last_dir[1024]; /* the folder of the open session's store */

/* This thread's CPU time: per-call figures must not count the time other
 * processes of a busy machine hold the core. */
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

static void open_rec(void)
{
    static sp_session s;
    static sp_config c;
    static int n;
    memset(&s, 0, sizeof s);
    memset(&c, 0, sizeof c);
    const char *tmp = getenv("TMPDIR");
    snprintf(last_dir, sizeof last_dir, "%s/servprof-bench-rec-%d-%d", tmp && *tmp ? tmp : "/tmp",
             (int)getpid(), n++);
    snprintf(s.store_path, sizeof s.store_path, "%s/ms_service_bench.db", last_dir);
    snprintf(s.hostname, sizeof s.hostname, "bench");
    c.buffer_bytes = (size_t)256 << 20; /* holds a whole repetition: nothing drops */
    if (sp_recorder_open(&s, &c) != 0) {
        fprintf(stderr, "cannot open the recorder\n");
        exit(1);
    }
    atomic_store(&servprof__level, SERVPROF_LEVEL_INFO);
}

/* Touches every page of this thread's ring once, as a long-running server
 * has: page faults of a fresh ring are not the steady-state cost. */
static void prefault(void)
{
    sp_tbuf *tb = sp_tbuf_self();
    static __thread sp_tbuf *done;
    if (tb && tb != done) {
        memset(tb->data, 0, (size_t)tb->cap);
        done = tb;
    }
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void close_rec(void)
{
    atomic_store(&servprof__level, 0);
    sp_recorder_close();
    if (last_dir[0]) /* the rows are not read back: do not fill the disk */
        nftw(last_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    last_dir[0] = 0;
}

static __attribute__((noinline)) void one_event(long i)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_attr_int(r, "QueueSize", i);
    servprof_attr_str(r, "status", "WAITING");
    servprof_event(r, "Enqueue");
}

static __attribute__((noinline)) void one_span(long i)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
    servprof_res_str(r, "req-0000001");
    servprof_attr_int(r, "batch_size", i & 63);
    servprof_attr_str(r, "batch_type", "Decode");
    servprof_span s = servprof_span_begin(r, "forward");
    servprof_span_end(s);
}

/* CPU ns per call of f over iters calls. */
static double run(void (*f)(long))
{
    int64_t t0 = cpu_ns();
    for (long i = 0; i < iters; i++)
        f(i);
    return (double)(cpu_ns() - t0) / (double)iters;
}

/* The disabled site as the header recommends writing a hot one: one
 * inline level check, the attributes only built when it passed. Inside a
 * noinline function: includes the call, which a real site does not pay. */
static __attribute__((noinline)) void guarded_event(long i)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    if (r) {
        servprof_attr_int(r, "QueueSize", i);
        servprof_attr_str(r, "status", "WAITING");
        servprof_event(r, "Enqueue");
    }
}

/* The same site inline in a loop (instrumented), and the loop alone
 * (clean): the difference is what the site adds to the code around it,
 * as bench_python.py measures (instrumented - clean). The empty asm keeps
 * both loops' bodies from being merged or removed. */
static double run_inline_site(int instrumented)
{
    int64_t t0 = cpu_ns();
    if (instrumented) {
        for (long i = 0; i < iters; i++) {
            servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
            if (r) {
                servprof_attr_int(r, "QueueSize", i);
                servprof_attr_str(r, "status", "WAITING");
                servprof_event(r, "Enqueue");
            }
            __asm__ volatile("" : : "r"(i) : "memory");
        }
    } else {
        for (long i = 0; i < iters; i++)
            __asm__ volatile("" : : "r"(i) : "memory");
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
    prefault(); /* create and touch the buffer outside the timing */
    pthread_barrier_wait(a->bar);
    a->ns = run(one_event);
    return NULL;
}

/* Aggregate calls/s of n threads doing one_event at once. */
static double threads_rate(int n)
{
    pthread_t th[8];
    targ a[8];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        a[i].bar = &bar;
        pthread_create(&th[i], NULL, thread_run, &a[i]);
    }
    double rate = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        rate += 1e9 / a[i].ns;
    }
    pthread_barrier_destroy(&bar);
    return rate;
}

/* One repetition of a phase in a fresh session, writer held off or not. */
static double phase(void (*f)(long))
{
    open_rec();
    prefault();
    f(0);
    if (hold_writer)
        sp_tbuf_lock();
    double ns = run(f);
    if (hold_writer)
        sp_tbuf_unlock();
    close_rec();
    return ns;
}

static double phase_threads(int n)
{
    open_rec();
    double r = threads_rate(n);
    close_rec();
    return r;
}

static long rss_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* KiB of [p, p+len) resident in memory (mincore): the ring's own pages,
 * whatever the allocator did before. */
static long resident_kib(const void *p, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1), e = (uintptr_t)p + len;
    size_t n = (size_t)((e - a + (uintptr_t)page - 1) / (uintptr_t)page);
    unsigned char *v = malloc(n);
    long kib = 0;
    if (v && mincore((void *)a, e - a, v) == 0)
        for (size_t i = 0; i < n; i++)
            kib += (v[i] & 1) * (page / 1024);
    free(v);
    return kib;
}

static void *mem_thread(void *arg)
{
    long *out = arg;
    long before = rss_kib();
    one_event(0);
    sp_tbuf *tb = sp_tbuf_tls;
    out[0] = rss_kib() - before;
    out[2] = tb ? resident_kib(tb->data, (size_t)tb->cap) : -1;
    for (long i = 0; i < 400000; i++) /* fill the ring at least once */
        one_event(i);
    out[1] = rss_kib() - before;
    out[3] = tb ? resident_kib(tb->data, (size_t)tb->cap) : -1;
    return NULL;
}

/* Memory: a default-sized buffer in a fresh thread, first thing (before
 * the other phases' buffers are freed and their memory reused). */
static void memory_phase(void)
{
    sp_config c;
    memset(&c, 0, sizeof c);
    sp_session s;
    memset(&s, 0, sizeof s);
    snprintf(last_dir, sizeof last_dir, "/tmp/servprof-bench-rec-mem-%d", (int)getpid());
    snprintf(s.store_path, sizeof s.store_path, "%s/x.db", last_dir);
    c.buffer_bytes = (size_t)SP_DEFAULT_BUFFER_KB * 1024;
    sp_recorder_open(&s, &c);
    atomic_store(&servprof__level, SERVPROF_LEVEL_INFO);
    long mem[4];
    pthread_t th;
    pthread_create(&th, NULL, mem_thread, mem);
    pthread_join(th, NULL);
    close_rec();
    printf("  memory per recording thread: buffer %d KiB allocated (+%zu bytes control block); "
           "ring resident after 1st record %ld KiB, after filling it %ld KiB (process RSS, writer and "
           "SQLite included: +%ld, +%ld KiB)\n",
           SP_DEFAULT_BUFFER_KB, sizeof(sp_tbuf), mem[2], mem[3], mem[0], mem[1]);
}

int main(int argc, char **argv)
{
    iters = argc > 1 ? atol(argv[1]) : 1000000;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("bench_record: %ld calls per repetition, median of %d; timestamps: %s\n", iters, REPS,
           sp_clock_source());
    servprof_stats s0, s1;
    servprof_get_stats(&s0);
    memory_phase();

    double v[REPS];
    atomic_store(&servprof__level, 0);
    long keep = iters;
    iters *= 20; /* sub-nanosecond: more calls for a stable figure */
    double clean[REPS];
    for (int i = 0; i < REPS; i++) { /* alternate: both see the same machine */
        clean[i] = run_inline_site(0);
        v[i] = run_inline_site(1) - clean[i];
    }
    printf("  disabled call site, inline, if (r)-guarded: %.2f ns (instrumented loop - clean "
           "loop; clean loop %.2f ns/iteration)\n",
           median(v, REPS), median(clean, REPS));
    for (int i = 0; i < REPS; i++)
        v[i] = run(guarded_event);
    printf("  disabled call site, if (r)-guarded, in a noinline function (call included): "
           "%.2f ns\n", median(v, REPS));
    for (int i = 0; i < REPS; i++)
        v[i] = run(one_event);
    printf("  disabled call site, unguarded, noinline function (begin + 2 attrs + event: 3 calls "
           "on NULL): %.2f ns\n",
           median(v, REPS));
    iters = keep;

    for (hold_writer = 1; hold_writer >= 0; hold_writer--) {
        const char *mode = hold_writer ? "writer held off" : "writer draining";
        for (int i = 0; i < REPS; i++)
            v[i] = phase(one_event);
        printf("  [%s] enabled event, 2 attributes: %.1f ns\n", mode, median(v, REPS));
        for (int i = 0; i < REPS; i++)
            v[i] = phase(one_span);
        printf("  [%s] span begin+end, rid + 2 attributes: %.1f ns\n", mode, median(v, REPS));
        if (hold_writer)
            continue; /* threads need the list lock to create buffers */
        double one[REPS], two[REPS];
        for (int i = 0; i < REPS; i++) {
            one[i] = phase_threads(1);
            two[i] = phase_threads(2);
        }
        double m1 = median(one, REPS), m2 = median(two, REPS);
        printf("  [%s] events per CPU-second: 1 thread %.3g, 2 threads together %.3g -> %.2fx\n",
               mode, m1, m2, m2 / m1);
    }

    servprof_get_stats(&s1);
    printf("  dropped during the benchmark: %llu%s\n",
           (unsigned long long)(s1.dropped - s0.dropped),
           s1.dropped == s0.dropped ? "" : " (the memory phase fills a default ring on purpose)");
    return 0;
}
