/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler.c — the one background thread that runs every periodic sampler.
 *
 * Design. sp_samplers_start() copies the few config values it needs and
 * starts one thread; that thread opens the samplers (NVML and CUPTI are
 * loaded there, so a slow driver never blocks the caller), then runs a
 * small job table:
 *
 *   host   every 1/host_system_usage_freq s   sp_host_sample()
 *   gpu    every 1/npu_memory_usage_freq s    sp_nvml_sample()
 *   flush  every 1 s                          sp_cupti_flush()
 *   limit  once, after the ";N" seconds       sp_cupti_limit()
 *
 * Deadlines are absolute on CLOCK_MONOTONIC: a job's next deadline is its
 * previous deadline plus its period, never "now + period", so the time a
 * sample takes does not accumulate into drift. When the thread was late by
 * more than a period (machine overloaded, suspended), the missed ticks are
 * skipped and counted, never replayed in a burst. The thread sleeps in one
 * futex wait on the stop word with the absolute deadline (CLOCK_MONOTONIC),
 * so sp_samplers_stop() wakes it at once instead of waiting for the next
 * deadline. A futex, not a condition variable: at 50 Hz the wake-up is most
 * of the thread's cost on a VM, and the condvar's mutex and bookkeeping
 * added to every wake-up there (measured side by side with clock_nanosleep
 * and a bare futex wait: docs/benchmarks.md, "Figures behind design
 * comments").
 *
 * Rows go out through the public recording API, from this thread (it has
 * its own per-thread buffer in the recorder like any other thread).
 *
 * Ownership: `ctl.stop` (atomic) is shared between the caller of
 * start/stop and the thread; everything the samplers hold belongs to the
 * thread while it runs and is freed by it before it exits. start/stop are
 * called by the runtime only, one at a time.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sampler.h"

#define FLUSH_PERIOD_NS 1000000000LL

static struct {
    _Atomic int stop;       /* set by stop, futex-woken; the thread waits on it */
    int running;            /* thread started and not joined; caller only */
    pthread_t thread;
    /* Copied at start; read by the thread only afterwards. */
    int host_hz, gpu_hz, per_core, cupti;
    int cupti_seconds;
    sp_session session;
    sp_config config;
    /* Set by the thread, read after join. */
    sp_sampler_stats stats;
    /* Live sampler objects, so a fork child can close their descriptors. */
    sp_host_sampler *host;
    sp_nvml *nvml;
    int64_t host_pass_ns;   /* thread only: wall time of the first passes */
} ctl;

static sp_sample_observer observer;
static void *observer_ctx;

void sp_samplers_set_observer(sp_sample_observer fn, void *ctx)
{
    observer = fn;
    observer_ctx = ctx;
}

void sp_samplers_get_stats(sp_sampler_stats *out)
{
    *out = ctl.stats;
}

/* Rows taken on the sampler thread wait here, each with the time it was
 * taken, and are recorded together every BATCH_NS (and when the thread
 * stops). Why: after each sleep the recording code and its buffer are cold,
 * and on a VM touching cold code and memory costs more than the rows
 * themselves; recording 5 passes' rows at once at 50 Hz pays that once
 * instead of 5 times. Rows reach the store at most BATCH_NS later, with
 * their own times. Other threads (tests) record at once. */
#define BATCH_NS (100 * 1000000LL)
#define BATCH_MAX 64

typedef struct batch_row {
    sp_sample_row row;
    int64_t ts; /* CLOCK_REALTIME ns the row was taken */
} batch_row;

static __thread batch_row *batch; /* the sampler thread's, NULL elsewhere */
static __thread int nbatch;

static void record_row(const sp_sample_row *row, int64_t ts)
{
    servprof_rec *r = servprof_rec_begin(row->level, row->domain);
    if (!r)
        return;
    for (int i = 0; i < row->nvalues; i++)
        servprof_metric(r, row->keys[i], row->values[i]);
    if (row->scope_key) {
        char key[64];
        snprintf(key, sizeof key, "scope#%s", row->scope_key);
        servprof_attr_int(r, key, row->scope);
    }
    sp_rec_event_at(r, row->name, ts);
}

static void flush_batch(void)
{
    for (int i = 0; i < nbatch; i++)
        record_row(&batch[i].row, batch[i].ts);
    nbatch = 0;
}

void sp_sample_emit(const sp_sample_row *row)
{
    assert(row->nvalues >= 0 && row->nvalues <= SP_SAMPLE_MAX_VALUES);
    int64_t ts = sp_now_realtime_ns();
    if (batch) {
        if (nbatch == BATCH_MAX)
            flush_batch();
        batch[nbatch++] = (batch_row){*row, ts};
    } else {
        record_row(row, ts);
    }
    if (observer)
        observer(observer_ctx, row);
}

/* ------------------------------------------------------------------ */
/* The thread                                                           */
/* ------------------------------------------------------------------ */

typedef struct job {
    int64_t period_ns;  /* 0: one-shot */
    int64_t next_ns;    /* absolute CLOCK_MONOTONIC deadline; INT64_MAX: done */
    void (*run)(void);
} job;

/* Host passes cost what the kernel takes to generate /proc/stat, which
 * grows with cores and interrupts: on a big machine 50 Hz may cost more
 * than intended. The first 50 passes are timed (monotonic clock, no
 * syscall) and one warning says so if they take over 1 % of the time. */
static void run_host(void)
{
    int timed = ctl.stats.host_samples < 50;
    int64_t t0 = timed ? sp_now_monotonic_ns() : 0;
    sp_host_sample(ctl.host);
    ctl.stats.host_samples++;
    if (!timed)
        return;
    ctl.host_pass_ns += sp_now_monotonic_ns() - t0;
    if (ctl.stats.host_samples == 50) {
        double per_pass_ms = (double)ctl.host_pass_ns / 50 / 1e6;
        double share = per_pass_ms * ctl.host_hz / 10.0; /* % of the time */
        if (share > 1.0)
            sp_log(SP_LOG_WARNING, "host sampler: a pass takes %.2f ms here, %.1f %% of the time "
                   "at host_system_usage_freq=%d; a lower frequency costs less", per_pass_ms,
                   share, ctl.host_hz);
    }
}

static void run_gpu(void)
{
    sp_nvml_sample(ctl.nvml);
    ctl.stats.gpu_samples++;
}

/* Sleeps until deadline (monotonic ns) or stop. Returns nonzero on stop.
 * FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time; it returns at
 * once (EAGAIN) when stop is already set, and a wake-up with stop still 0
 * (spurious, EINTR) just waits again. */
static int wait_until(int64_t deadline)
{
    struct timespec ts = {deadline / 1000000000, deadline % 1000000000};
    while (!atomic_load_explicit(&ctl.stop, memory_order_acquire)) {
        long rc = syscall(SYS_futex, &ctl.stop, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &ts,
                          NULL, FUTEX_BITSET_MATCH_ANY);
        if (rc == -1 && errno == ETIMEDOUT)
            break;
    }
    return atomic_load_explicit(&ctl.stop, memory_order_acquire);
}

static int64_t thread_cpu_now(void)
{
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    return (int64_t)cpu.tv_sec * 1000000000 + cpu.tv_nsec;
}

/* The deadline of the job running now (sampler thread only; observers). */
static __thread int64_t pass_deadline;

int64_t sp_samplers_pass_deadline(void)
{
    return pass_deadline;
}

/* Runs every job whose deadline has passed and moves its deadline on by
 * whole periods. A deadline that has already passed when the pass is over
 * (the pass, or the machine, was slow) is skipped and counted. */
static void run_due(job *jobs, int n, int64_t now)
{
    for (int i = 0; i < n; i++) {
        job *j = &jobs[i];
        if (j->next_ns > now)
            continue;
        pass_deadline = j->next_ns;
        j->run();
        if (!j->period_ns) {
            j->next_ns = INT64_MAX;
            continue;
        }
        now = sp_now_monotonic_ns();
        j->next_ns += j->period_ns;
        if (j->next_ns <= now) {
            int64_t missed = (now - j->next_ns) / j->period_ns + 1;
            j->next_ns += missed * j->period_ns;
            ctl.stats.ticks_skipped += (uint64_t)missed;
        }
    }
}

static void *sampler_main(void *arg)
{
    (void)arg;
    servprof_set_thread_name("servprof-sampler");
    int64_t t0 = sp_now_monotonic_ns();
    job jobs[4];
    int n = 0;
    if (ctl.host_hz > 0 && (ctl.host = sp_host_open(ctl.per_core)))
        jobs[n++] = (job){1000000000LL / ctl.host_hz, 0, run_host};
    if (ctl.gpu_hz > 0 && (ctl.nvml = sp_nvml_open()))
        jobs[n++] = (job){1000000000LL / ctl.gpu_hz, 0, run_gpu};
    int cupti_on = ctl.cupti && sp_cupti_start(&ctl.session, &ctl.config) == 0;
    if (cupti_on) {
        jobs[n++] = (job){FLUSH_PERIOD_NS, 0, sp_cupti_flush};
        if (ctl.cupti_seconds > 0)
            jobs[n++] = (job){0, 0, sp_cupti_limit};
    }
    ctl.stats.open_cpu_ns = thread_cpu_now();
    /* First deadlines count from t0 (after the opening work, which may be
     * slow), one period in: the host rates need one period of history. */
    int64_t base = sp_now_monotonic_ns();
    ctl.stats.base_ns = base;
    for (int i = 0; i < n; i++)
        jobs[i].next_ns = base + (jobs[i].period_ns ? jobs[i].period_ns
                                                    : (int64_t)ctl.cupti_seconds * 1000000000LL);
    batch_row rows[BATCH_MAX];
    batch = rows;
    int64_t flushed = base;
    while (n > 0) {
        int64_t next = INT64_MAX;
        for (int i = 0; i < n; i++)
            if (jobs[i].next_ns < next)
                next = jobs[i].next_ns;
        if (next == INT64_MAX) {
            /* nothing periodic left: just wait for stop */
            if (wait_until(sp_now_monotonic_ns() + 3600 * 1000000000LL))
                break;
            continue;
        }
        if (wait_until(next))
            break;
        int64_t now = sp_now_monotonic_ns();
        run_due(jobs, n, now);
        if (now - flushed >= BATCH_NS) {
            flush_batch();
            flushed = now;
        }
    }
    flush_batch(); /* before the runtime turns the level off (runtime.c) */
    batch = NULL;
    if (n == 0)
        while (!wait_until(sp_now_monotonic_ns() + 3600 * 1000000000LL))
            ;
    if (cupti_on)
        sp_cupti_stop();
    sp_host_close(ctl.host);
    sp_nvml_close(ctl.nvml);
    ctl.host = NULL;
    ctl.nvml = NULL;
    ctl.stats.thread_cpu_ns = thread_cpu_now();
    ctl.stats.end_ns = sp_now_monotonic_ns();
    ctl.stats.run_ns = ctl.stats.end_ns - t0;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Start, stop, fork                                                    */
/* ------------------------------------------------------------------ */

int sp_samplers_start(const sp_session *s, const sp_config *c)
{
    if (ctl.running)
        sp_samplers_stop();
    ctl.host_hz = c->host_system_usage_freq >= 1 && c->host_system_usage_freq <= 50
                      ? c->host_system_usage_freq : 0;
    ctl.gpu_hz = c->npu_memory_usage_freq >= 1 && c->npu_memory_usage_freq <= 50
                     ? c->npu_memory_usage_freq : 0;
    ctl.per_core = c->profiler_level >= SERVPROF_LEVEL_DETAILED;
    /* acl_task_time 3 is the Python side's (torch profiler). */
    ctl.cupti = c->acl_task_time == 1 || c->acl_task_time == 2;
    ctl.cupti_seconds = c->acl_prof_task_time_seconds > 0 ? c->acl_prof_task_time_seconds : 0;
    memset(&ctl.stats, 0, sizeof ctl.stats);
    ctl.host_pass_ns = 0;
    if (!ctl.host_hz && !ctl.gpu_hz && !ctl.cupti)
        return 0;
    ctl.session = *s;
    ctl.config = *c;
    atomic_store(&ctl.stop, 0);
    /* Default stack size: NVML and CUPTI initialize on this thread and
     * their stack needs are not documented. */
    int rc = pthread_create(&ctl.thread, NULL, sampler_main, NULL);
    if (rc) {
        sp_log(SP_LOG_ERROR, "samplers: cannot start the sampler thread (%s); no sampling, "
               "recording goes on", strerror(rc));
        return 0;
    }
    ctl.running = 1;
    return 0;
}

void sp_samplers_stop(void)
{
    if (!ctl.running)
        return;
    atomic_store_explicit(&ctl.stop, 1, memory_order_release);
    syscall(SYS_futex, &ctl.stop, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
    pthread_join(ctl.thread, NULL);
    ctl.running = 0;
    sp_log(SP_LOG_DEBUG, "samplers stopped: %llu host and %llu GPU passes, %llu late ticks "
           "skipped, sampler thread CPU %.1f ms",
           (unsigned long long)ctl.stats.host_samples, (unsigned long long)ctl.stats.gpu_samples,
           (unsigned long long)ctl.stats.ticks_skipped, (double)ctl.stats.thread_cpu_ns / 1e6);
}

void sp_samplers_atfork_child(void)
{
    /* The thread does not exist in the child: release what the parent's
     * samplers had opened and forget the rest (NVML and CUPTI state cannot
     * be trusted across fork). */
    atomic_store(&ctl.stop, 0);
    if (ctl.running) {
        sp_host_forget(ctl.host);
        sp_nvml_forget(ctl.nvml);
    }
    ctl.host = NULL;
    ctl.nvml = NULL;
    ctl.running = 0;
    sp_cupti_atfork_child();
}
