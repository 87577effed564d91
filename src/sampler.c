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
 * skipped and counted, never replayed in a burst. The thread sleeps on a
 * condition variable whose clock is CLOCK_MONOTONIC, so sp_samplers_stop()
 * wakes it at once instead of waiting for the next deadline.
 *
 * Rows go out through the public recording API, from this thread (it has
 * its own per-thread buffer in the recorder like any other thread).
 *
 * Ownership: `ctl` (mutex, cond, stop flag) is shared between the caller of
 * start/stop and the thread; everything the samplers hold belongs to the
 * thread while it runs and is freed by it before it exits. start/stop are
 * called by the runtime only, one at a time.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler.h"

#define FLUSH_PERIOD_NS 1000000000LL

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* signalled by stop; clock CLOCK_MONOTONIC */
    int stop;               /* under mu */
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
} ctl = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static sp_sample_observer observer;
static void *observer_ctx;
static int cv_ready;

void sp_samplers_set_observer(sp_sample_observer fn, void *ctx)
{
    observer = fn;
    observer_ctx = ctx;
}

void sp_samplers_get_stats(sp_sampler_stats *out)
{
    *out = ctl.stats;
}

void sp_sample_emit(const sp_sample_row *row)
{
    assert(row->nvalues >= 0 && row->nvalues <= SP_SAMPLE_MAX_VALUES);
    servprof_rec *r = servprof_rec_begin(row->level, row->domain);
    if (r) {
        for (int i = 0; i < row->nvalues; i++)
            servprof_metric(r, row->keys[i], row->values[i]);
        if (row->scope_key) {
            char key[64];
            snprintf(key, sizeof key, "scope#%s", row->scope_key);
            servprof_attr_int(r, key, row->scope);
        }
        servprof_event(r, row->name);
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

/* Sleeps until deadline (monotonic ns) or stop. Returns nonzero on stop. */
static int wait_until(int64_t deadline)
{
    struct timespec ts = {deadline / 1000000000, deadline % 1000000000};
    pthread_mutex_lock(&ctl.mu);
    while (!ctl.stop) {
        int rc = pthread_cond_timedwait(&ctl.cv, &ctl.mu, &ts);
        if (rc == ETIMEDOUT)
            break;
    }
    int stop = ctl.stop;
    pthread_mutex_unlock(&ctl.mu);
    return stop;
}

static int64_t thread_cpu_now(void)
{
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    return (int64_t)cpu.tv_sec * 1000000000 + cpu.tv_nsec;
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
    for (int i = 0; i < n; i++)
        jobs[i].next_ns = base + (jobs[i].period_ns ? jobs[i].period_ns
                                                    : (int64_t)ctl.cupti_seconds * 1000000000LL);
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
        run_due(jobs, n, sp_now_monotonic_ns());
    }
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
    ctl.stats.run_ns = sp_now_monotonic_ns() - t0;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Start, stop, fork                                                    */
/* ------------------------------------------------------------------ */

static int init_cv(void)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a))
        return -1;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_destroy(&ctl.cv);
    int rc = pthread_cond_init(&ctl.cv, &a);
    pthread_condattr_destroy(&a);
    return rc ? -1 : 0;
}

int sp_samplers_start(const sp_session *s, const sp_config *c)
{
    if (ctl.running)
        sp_samplers_stop();
    if (!cv_ready) {
        if (init_cv() < 0) {
            sp_log(SP_LOG_ERROR, "samplers: cannot set up the sampler clock; no sampling");
            return 0;
        }
        cv_ready = 1;
    }
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
    ctl.stop = 0;
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
    pthread_mutex_lock(&ctl.mu);
    ctl.stop = 1;
    pthread_cond_signal(&ctl.cv);
    pthread_mutex_unlock(&ctl.mu);
    pthread_join(ctl.thread, NULL);
    ctl.running = 0;
    sp_log(SP_LOG_DEBUG, "samplers stopped: %llu host and %llu GPU passes, %llu late ticks "
           "skipped, sampler thread CPU %.1f ms",
           (unsigned long long)ctl.stats.host_samples, (unsigned long long)ctl.stats.gpu_samples,
           (unsigned long long)ctl.stats.ticks_skipped, (double)ctl.stats.thread_cpu_ns / 1e6);
}

void sp_samplers_atfork_child(void)
{
    /* The thread does not exist in the child and the lock may have been
     * held by it at fork time: rebuild the control block, release what the
     * parent's samplers had opened, and forget the rest (NVML and CUPTI
     * state cannot be trusted across fork). */
    pthread_mutex_init(&ctl.mu, NULL);
    cv_ready = 0;
    memset(&ctl.cv, 0, sizeof ctl.cv);
    if (init_cv() == 0)
        cv_ready = 1;
    ctl.stop = 0;
    if (ctl.running) {
        sp_host_forget(ctl.host);
        sp_nvml_forget(ctl.nvml);
    }
    ctl.host = NULL;
    ctl.nvml = NULL;
    ctl.running = 0;
    sp_cupti_atfork_child();
}
