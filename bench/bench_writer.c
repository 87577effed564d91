/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_writer.c — how many records per second the writer thread lands in
 * the raw store.
 *
 * Phases (each printed, medians of REPS runs):
 *  1. burst: one thread emits N events (two attributes, a domain) into a
 *     buffer large enough to hold them all; time from the first record to
 *     the last row committed = the writer's drain rate;
 *  2. paced: producers emit at a fixed total rate for a few seconds; prints
 *     the rate achieved into the store and what was dropped (goal: 1,000,000
 *     records/s with nothing dropped);
 *  3. spans: as 1 with span begin+end pairs (the pairing table in the loop).
 * Verifies as it goes: the store's row count must equal what was accepted.
 * Each run also prints where the writer could stall: its longest pass and
 * commit, the fullest a thread buffer got, and the background checkpoints
 * (count, longest, the checkpointer's CPU, largest WAL in 64 KiB pages) and
 * the writer's waits for them.
 *
 *  4. low (only with `low`): one thread emits at a modest paced rate (a
 *     server recording a few thousand rows/s); prints the writer thread's
 *     CPU time per stored row and as a share of one core. At such rates
 *     the cost is per pass / per commit, not per row.
 *
 * usage: bench_writer [N (default 1000000)] [paced rate (default 1000000)] [paced seconds (default 3)]
 *        bench_writer low [rate (default 5000)] [seconds (default 5)]
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ftw.h>

#include "internal.h"
#include "storewrite.h"
#include "writer.h"

#define REPS 3

static int64_t mono(void)
{
    return sp_now_monotonic_ns();
}

static int open_rec(const char *tag, size_t buf, char *store, size_t len)
{
    static sp_session s;
    static sp_config c;
    static int n;
    memset(&s, 0, sizeof s);
    memset(&c, 0, sizeof c);
    const char *tmp = getenv("TMPDIR");
    snprintf(s.store_path, sizeof s.store_path,
             "%s/servprof-bench-writer-%d-%s-%d/Trace_Service/ms_service_bench.db",
             tmp && *tmp ? tmp : "/tmp", (int)getpid(), tag, n++);
    snprintf(s.hostname, sizeof s.hostname, "bench");
    s.start_ns = servprof_now_ns();
    c.buffer_bytes = buf;
    snprintf(store, len, "%s", s.store_path);
    if (sp_recorder_open(&s, &c) != 0)
        return -1;
    atomic_store(&servprof__level, SERVPROF_LEVEL_INFO);
    return 0;
}

static long long rows_in(const char *store)
{
    sqlite3 *db;
    long long n = -1;
    if (sqlite3_open_v2(store, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT count(*) FROM slice", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return n;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Removes the session folder of a store (.../<dir>/Trace_Service/x.db):
 * a million-row store is ~100 MB, and a run makes several. */
static void remove_store(const char *store)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", store);
    for (int i = 0; i < 2; i++) {
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
    }
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void emit_event(long i)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
    servprof_attr_int(r, "QueueSize=", i & 1023);
    servprof_attr_str(r, "rid", "req-000123");
    servprof_event(r, "Enqueue");
}

static void emit_span(long i)
{
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute");
    servprof_attr_int(r, "batch_size", i & 63);
    servprof_attr_str(r, "batch_type", "Decode");
    servprof_span_end(servprof_span_begin(r, "forward"));
}

static void print_stalls(void)
{
    sp_writer_stats w;
    sp_store_stats s;
    sp_writer_last_stats(&w);
    sp_store_last_stats(&s);
    printf("      writer: longest pass %.1f ms, longest commit %.1f ms, fullest buffer %.0f KiB, "
           "%llu waits for a checkpoint (longest %.1f ms); checkpoints %llu (%llu failed), "
           "longest %.1f ms, checkpointer CPU %.3f s, WAL max %d pages\n",
           w.longest_pass_ns / 1e6, w.longest_commit_ns / 1e6, w.max_buffer_fill / 1024.0,
           (unsigned long long)w.checkpoint_waits, w.longest_checkpoint_wait_ns / 1e6,
           (unsigned long long)s.checkpoints, (unsigned long long)s.checkpoint_failures,
           s.checkpoint_longest_ns / 1e6, s.checkpointer_cpu_ns / 1e9, s.max_wal_pages);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Emits n records with f, waits until all are committed; records/s. */
static double burst(void (*f)(long), long n, long rows_per_n, int *ok)
{
    char store[4096];
    if (open_rec("burst", (size_t)256 << 20, store, sizeof store) != 0)
        return 0;
    servprof_stats a, b;
    servprof_get_stats(&a);
    int64_t t0 = mono();
    for (long i = 0; i < n; i++)
        f(i);
    int64_t t1 = mono();
    while (sp_writer_rows() < (uint64_t)(n * rows_per_n) && mono() - t1 < 60000000000LL)
        usleep(200);
    int64_t t2 = mono();
    atomic_store(&servprof__level, 0);
    sp_recorder_close();
    servprof_get_stats(&b);
    long long rows = rows_in(store);
    remove_store(store);
    *ok = rows == n * rows_per_n && b.dropped == a.dropped;
    double cpu = sp_writer_last_cpu_ns() / 1e9;
    printf("    emitted %ld in %.3f s, all %lld rows committed after %.3f s, writer CPU %.3f s%s\n",
           n, (t1 - t0) / 1e9, rows, (t2 - t0) / 1e9, cpu, *ok ? "" : "  ** MISMATCH **");
    print_stalls();
    /* Per second of the writer's own CPU: what one core sustains, whatever
     * else the machine runs. */
    return (double)n / cpu;
}

typedef struct pace_arg {
    double rate; /* records/s for this thread */
    double seconds;
    long emitted;
} pace_arg;

static void *paced(void *arg)
{
    pace_arg *p = arg;
    int64_t t0 = mono(), end = t0 + (int64_t)(p->seconds * 1e9);
    long i = 0;
    for (int64_t now = t0; now < end; now = mono()) {
        long due = (long)((now - t0) / 1e9 * p->rate);
        if (i >= due) { /* ahead: sleep, as a server between bursts, leaving the core */
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        for (; i < due; i++)
            emit_event(i);
    }
    p->emitted = i;
    return NULL;
}

static void paced_run(double rate, int threads, double seconds)
{
    char store[4096];
    if (open_rec("paced", (size_t)4 << 20, store, sizeof store) != 0)
        return;
    servprof_stats a, b;
    servprof_get_stats(&a);
    pthread_t th[16];
    pace_arg args[16];
    for (int i = 0; i < threads; i++) {
        args[i] = (pace_arg){rate / threads, seconds, 0};
        pthread_create(&th[i], NULL, paced, &args[i]);
    }
    long emitted = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        emitted += args[i].emitted;
    }
    atomic_store(&servprof__level, 0);
    sp_recorder_close();
    servprof_get_stats(&b);
    long long rows = rows_in(store);
    remove_store(store);
    printf("  paced %.0f rec/s, %d thread(s), %.0f s, 4 MiB buffers: emitted %ld, stored %lld, "
           "dropped %llu -> %.0f rec/s into the store; writer CPU %.3f s%s\n",
           rate, threads, seconds, emitted, rows, (unsigned long long)(b.dropped - a.dropped),
           rows / seconds, sp_writer_last_cpu_ns() / 1e9, rows + (long long)(b.dropped - a.dropped) == emitted ? "" : " ** MISMATCH **");
    print_stalls();
}

/* Phase 4: writer CPU per row at a low paced rate (the thread's own CPU
 * clock, read by the writer itself as it exits, so the machine's load does
 * not count). */
static int low_run(double rate, double seconds)
{
    char store[4096];
    if (open_rec("low", (size_t)4 << 20, store, sizeof store) != 0)
        return 1;
    pace_arg arg = {rate, seconds, 0};
    pthread_t th;
    pthread_create(&th, NULL, paced, &arg);
    pthread_join(th, NULL);
    atomic_store(&servprof__level, 0);
    sp_recorder_close();
    long long rows = rows_in(store);
    remove_store(store);
    double cpu = sp_writer_last_cpu_ns() / 1e9;
    printf("  low %.0f rec/s for %.0f s: emitted %ld, stored %lld, writer CPU %.4f s = %.2f us "
           "per row, %.2f %% of a core%s\n",
           rate, seconds, arg.emitted, rows, cpu, rows > 0 ? cpu / (double)rows * 1e6 : 0.0,
           cpu / seconds * 100, rows == arg.emitted ? "" : "  ** MISMATCH **");
    return rows == arg.emitted ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "low") == 0) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        double rate = argc > 2 ? atof(argv[2]) : 5000;
        double secs = argc > 3 ? atof(argv[3]) : 5;
        int bad = 0;
        for (int i = 0; i < REPS; i++)
            bad |= low_run(rate, secs);
        return bad;
    }
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    double rate = argc > 2 ? atof(argv[2]) : 1000000;
    double paced_s = argc > 3 ? atof(argv[3]) : 3;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("bench_writer: %ld records per burst, %d repetitions, median\n", n, REPS);
    double r[REPS];
    int ok;
    printf("  burst of events (2 attributes):\n");
    for (int i = 0; i < REPS; i++)
        r[i] = burst(emit_event, n, 1, &ok);
    qsort(r, REPS, sizeof r[0], cmp);
    printf("  => writer drains %.0f events per CPU-second (median)\n", r[REPS / 2]);
    printf("  burst of spans (begin+end, 2 attributes):\n");
    for (int i = 0; i < REPS; i++)
        r[i] = burst(emit_span, n / 2, 1, &ok) * 2;
    qsort(r, REPS, sizeof r[0], cmp);
    printf("  => writer drains %.0f span records per CPU-second (median; 2 records per row)\n",
           r[REPS / 2]);
    paced_run(rate, 1, paced_s);
    paced_run(rate, 2, paced_s);
    return 0;
}
