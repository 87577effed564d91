/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.c — life of the live metrics: on/off with the config, the hooks
 * the recorder's consumer calls, and the drain thread used while tracing is
 * off.
 *
 * DESIGN
 * Metrics come from the same records as traces. The serving threads copy
 * records into their rings as always (record.c); whoever consumes the
 * rings hands each record to sp_metrics_on_record() before anything else:
 *
 *   tracing on:   the writer thread (writer.c) — one call per record, one
 *                 call per pass (sp_metrics_after_pass), nothing else;
 *   tracing off:  a drain thread of this file, which consumes the rings the
 *                 way the writer does but stores nothing.
 *
 * The rings have one consumer at a time: the runtime starts and stops the
 * two under its mutex, stopping one (after its final pass) before starting
 * the other. With metrics on, the call sites record at level INFO at least
 * (sp_metrics_level): the vocabulary's records are INFO; DETAILED and
 * VERBOSE call sites (per-token records) keep their disabled cost when only
 * metrics are on.
 *
 * The aggregate (metrics_agg.c) and the file are under m_mu: taken once per
 * record by the consumer (uncontended: a few ns) and by the runtime when it
 * switches metrics off while the writer runs. The file is published at most
 * every PUBLISH_NS and at stop; stale request states are swept every
 * SWEEP_NS.
 *
 * Request tracing over OTLP (lib/otlp/otlp.h) rides on the same consumer:
 * each record goes to its assembler too, and the drain thread runs while
 * either metrics or tracing is on with no store session open. Its settings
 * are brought in line here (sp_otlp_configure), at every configure.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "otlp.h"
#include "rec_state.h"
#include "tbuf.h"

#define PUBLISH_NS (100 * 1000000LL)
#define SWEEP_NS (10 * 1000000000LL)
#define REQUEST_MAX_AGE_NS (1800 * 1000000000LL) /* 30 min without a record */
/* The drain thread's sleeps. Metrics are published every 100 ms, so it
 * needs no millisecond latency, only to keep rings far from full: 10 ms
 * after a pass that found DRAIN_BUSY_BYTES (a 4 MiB ring takes ~70 ms to
 * fill at the fastest one thread records), doubling up to 100 ms
 * otherwise. Wake-ups are what this thread's CPU is made of: at the
 * writer's 1..20 ms they were most of it in the demo (docs/benchmarks.md,
 * "Figures behind design comments"; bench_metrics_demo.py). Idle, that is
 * 10 wake-ups a second (bench_idle); a wake-up signalled by the producers
 * instead would put a check and a syscall on the serving threads for
 * ~0.4 ms of CPU a second: weighed and left out (docs/metrics.md, "Idle
 * wake-ups"). */
#define DRAIN_BUSY_BYTES (16 * 1024)
#define DRAIN_BUSY_MS 10
#define DRAIN_IDLE_MAX_MS 100
#define HTTP_RETRY_NS (5 * 1000000000LL)

static pthread_mutex_t m_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int m_on;        /* a file is open: hooks aggregate */
static sp_mfile *m_file;        /* under m_mu */
static int64_t last_publish_ns; /* under m_mu */
static int64_t last_sweep_ns;   /* under m_mu */
static unsigned meta_gen;       /* under m_mu */
static sp_mhttp *m_http;        /* under m_mu: this process serves /metrics (metric_port) */
static char m_listen[64];       /* under m_mu: where it should ("" nowhere) */
static int m_max_conns;         /* under m_mu: its connection cap (metric_max_connections) */
static int64_t m_http_retry_ns; /* under m_mu: next try to bind */
static int m_http_failed;       /* under m_mu: the last try failed (logged once) */
static char m_dir[SP_PATH_MAX]; /* written by the runtime under m_mu (read by it freely) */

/* The drain thread: started and stopped by the runtime (under its mutex). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int running; /* runtime only */
    int stop;    /* under mu */
    sp_tb_scratch wrapped; /* drain thread only: a record that wraps the ring */
} D = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

void sp_metrics_dir_for(const sp_config *c, char *out, size_t len)
{
    int n = c->metric_dir[0] ? snprintf(out, len, "%s", c->metric_dir)
                             : snprintf(out, len, "%.*s/metrics", (int)(len - 9), c->prof_dir);
    (void)n; /* paths are at most SP_PATH_MAX - 9 + 8 bytes: prof_dir is cut, never overrun */
}

int sp_metrics_level(void)
{
    return atomic_load_explicit(&m_on, memory_order_relaxed) || sp_otlp_on() ? SERVPROF_LEVEL_INFO : 0;
}

/* ---- publishing (under m_mu) ----------------------------------------- */

static void take_meta(void *ctx, const char *key, const char *value)
{
    sp_mdata *d = ctx;
    if (!strcmp(key, "model_name"))
        snprintf(d->model, sizeof d->model, "%s", value);
    else if (!strcmp(key, "dpRankId"))
        snprintf(d->dp_rank, sizeof d->dp_rank, "%s", value);
}

static void publish_locked(int64_t now)
{
    sp_mdata *d = sp_magg_values();
    sp_meta_process_name(d->role, sizeof d->role);
    sp_meta_each_if_changed(&meta_gen, take_meta, d);
    uint64_t records, dropped;
    sp_tbuf_totals(&records, &dropped);
    d->counter[SP_MC_RECORDS] = (double)records;
    d->counter[SP_MC_DROPPED] = (double)dropped;
    d->counter[SP_MC_WRITE_ERRORS] =
        (double)atomic_load_explicit(&sp_rec_count.write_errors, memory_order_relaxed);
    d->counter[SP_MC_OTLP_SENT] = (double)sp_otlp_count_get(SP_OC_SPANS_SENT);
    uint64_t od = 0;
    for (int i = SP_OC_DROP_QUEUE_FULL; i <= SP_OC_DROP_ENCODE; i++)
        od += sp_otlp_count_get(i);
    d->counter[SP_MC_OTLP_DROPPED] = (double)od;
    sp_mfile_publish(m_file, d);
    last_publish_ns = now;
}

void sp_metrics_on_record(const sp_rec_hdr *h, const uint8_t *rec, size_t len)
{
    sp_otlp_on_record(h, rec, len); /* request tracing: the same records (otlp.c) */
    if (!atomic_load_explicit(&m_on, memory_order_relaxed))
        return;
    pthread_mutex_lock(&m_mu);
    if (m_file)
        sp_magg_record(h, rec, len);
    pthread_mutex_unlock(&m_mu);
}

/* metric_port: try to serve when nobody in this process does; another
 * process of the server may hold the port, so retry every HTTP_RETRY_NS
 * (whoever binds first serves; when it exits, another takes over). */
static void serve_locked(int64_t now)
{
    if (m_http || !m_listen[0] || now < m_http_retry_ns)
        return;
    char why[256];
    int port = 0;
    m_http = sp_mhttp_start(m_listen, m_dir, m_max_conns, &port, why, sizeof why);
    if (m_http) {
        sp_log(SP_LOG_INFO, "metric_port: serving the live metrics of %s on http://%s/metrics "
               "(port %d; %s; at most %d connections)", m_dir, m_listen, port,
               sp_mhttp_interfaces(m_listen), m_max_conns > 0 ? m_max_conns : SP_MHTTP_DEFAULT_CONNS);
        m_http_failed = 0;
        return;
    }
    if (!m_http_failed)
        sp_log(SP_LOG_INFO, "metric_port: %s; retrying every %d s (another process of the server "
               "may serve it)", why, (int)(HTTP_RETRY_NS / 1000000000));
    m_http_failed = 1;
    m_http_retry_ns = now + HTTP_RETRY_NS;
}

static void unserve_locked(void)
{
    sp_mhttp_stop(m_http);
    m_http = NULL;
    m_http_failed = 0;
    m_http_retry_ns = 0;
}

void sp_metrics_after_pass(void)
{
    sp_otlp_after_pass();
    if (!atomic_load_explicit(&m_on, memory_order_relaxed))
        return;
    int64_t now = sp_now_realtime_ns();
    pthread_mutex_lock(&m_mu);
    if (m_file)
        sp_magg_pass_end();
    if (m_file && now - last_sweep_ns >= SWEEP_NS) {
        sp_magg_sweep(now, REQUEST_MAX_AGE_NS);
        last_sweep_ns = now;
    }
    if (m_file && (now - last_publish_ns >= PUBLISH_NS || now < last_publish_ns))
        publish_locked(now);
    if (m_file)
        serve_locked(sp_now_monotonic_ns());
    pthread_mutex_unlock(&m_mu);
}

/* ---- the drain thread (tracing off) ---------------------------------- */

/* Consumes everything published in tb. Returns the bytes consumed. A
 * wrapped record without memory to copy it is skipped: tracing is off, so
 * it would only have been counted in metrics. */
static size_t drain_one(sp_tbuf *tb)
{
    sp_tb_reader r;
    sp_tb_begin(&r, tb);
    uint64_t start = r.tail;
    const uint8_t *rec;
    size_t len;
    while ((len = sp_tb_peek(&r, &D.wrapped, &rec)) != 0) {
        if (rec) {
            sp_rec_hdr h;
            memcpy(&h, rec, sizeof h);
            sp_rec_hdr_times(&h);
            sp_metrics_on_record(&h, rec, len);
        }
        sp_count(&sp_rec_count.metrics_only, 1); /* where it went: servprof_stats */
        sp_tb_advance(&r, len);
    }
    sp_tb_release(&r);
    return (size_t)(r.tail - start);
}

static size_t drain_all(void)
{
    size_t bytes = 0;
    for (sp_tbuf *tb = sp_tbuf_first(); tb;) {
        sp_tbuf *next = tb->next; /* read before a reap frees tb */
        bytes += drain_one(tb);
        sp_tbuf_reap(tb);
        tb = next;
    }
    return bytes;
}

static void *drain_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "servprof-mdrain"); /* 15 bytes at most */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals are not ours */
    int sleep_ms = DRAIN_BUSY_MS;
    for (;;) {
        pthread_mutex_lock(&D.mu);
        int stop = D.stop;
        pthread_mutex_unlock(&D.mu);
        size_t bytes = drain_all(); /* after a stop: the final pass */
        sp_metrics_after_pass();
        if (stop)
            break;
        if (bytes >= DRAIN_BUSY_BYTES)
            sleep_ms = DRAIN_BUSY_MS;
        else
            sleep_ms = sleep_ms * 2 > DRAIN_IDLE_MAX_MS ? DRAIN_IDLE_MAX_MS : sleep_ms * 2;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)sleep_ms * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&D.mu);
        if (!D.stop)
            pthread_cond_timedwait(&D.cv, &D.mu, &until);
        pthread_mutex_unlock(&D.mu);
    }
    return NULL;
}

static void drain_start(const sp_config *c)
{
    if (D.running)
        return;
    sp_tbuf_set_size(c->buffer_bytes ? c->buffer_bytes : (size_t)SP_DEFAULT_BUFFER_KB * 1024);
    pthread_mutex_lock(&D.mu);
    D.stop = 0;
    pthread_mutex_unlock(&D.mu);
    sp_tbuf_writer_active(1);
    int rc = pthread_create(&D.thread, NULL, drain_main, NULL);
    if (rc != 0) {
        sp_tbuf_writer_active(0);
        sp_log(SP_LOG_ERROR, "metrics: cannot start the drain thread: %s; live metrics only "
               "while tracing is on", strerror(rc));
        return;
    }
    D.running = 1;
}

static void drain_stop(void)
{
    if (!D.running)
        return;
    pthread_mutex_lock(&D.mu);
    D.stop = 1;
    pthread_cond_broadcast(&D.cv);
    pthread_mutex_unlock(&D.mu);
    pthread_join(D.thread, NULL);
    D.running = 0;
    sp_tbuf_writer_active(0);
    free(D.wrapped.buf);
    D.wrapped.buf = NULL;
    D.wrapped.cap = 0;
}

/* ---- life -------------------------------------------------------------- */

static void close_file(void)
{
    atomic_store_explicit(&m_on, 0, memory_order_relaxed);
    pthread_mutex_lock(&m_mu);
    unserve_locked();
    m_listen[0] = 0;
    if (m_file) {
        sp_magg_pass_end(); /* the consumer made its final pass: observe every ended request */
        sp_magg_pass_end();
        publish_locked(sp_now_realtime_ns()); /* the final values */
        sp_log(SP_LOG_INFO, "live metrics off; %s keeps this process's final counters",
               sp_mfile_path(m_file));
        sp_mfile_close(m_file);
        m_file = NULL;
    }
    sp_magg_free(0);
    m_dir[0] = 0;
    pthread_mutex_unlock(&m_mu);
}

static int open_file(const char *dir)
{
    sp_mfile *f = sp_mfile_create(dir); /* logs its failure */
    if (!f)
        return -1;
    pthread_mutex_lock(&m_mu);
    sp_magg_reset();
    m_file = f;
    meta_gen = 0;
    last_sweep_ns = sp_now_realtime_ns();
    publish_locked(last_sweep_ns);
    snprintf(m_dir, sizeof m_dir, "%s", dir);
    pthread_mutex_unlock(&m_mu);
    atomic_store_explicit(&m_on, 1, memory_order_relaxed);
    sp_log(SP_LOG_INFO, "live metrics on: this process publishes to %s", sp_mfile_path(f));
    return 0;
}

int sp_metrics_configure(const sp_config *c, int tracing)
{
    char dir[SP_PATH_MAX] = "";
    if (c && c->metric_enable)
        sp_metrics_dir_for(c, dir, sizeof dir);
    if (m_dir[0] && strcmp(dir, m_dir)) { /* off, or another folder */
        drain_stop();
        close_file();
    }
    /* Tracing over OTLP: a change stops the drain first, so that its final
     * pass reaches the assembler before that is switched off. */
    if (sp_otlp_would_change(c, c == NULL))
        drain_stop();
    int traces = sp_otlp_configure(c, c == NULL);
    if (dir[0] && !m_dir[0] && open_file(dir) != 0)
        dir[0] = 0;
    if (!dir[0] && !traces) {
        drain_stop();
        return 0;
    }
    if (dir[0]) {
        pthread_mutex_lock(&m_mu);
        if (strcmp(m_listen, c->metric_listen) || m_max_conns != c->metric_max_conns) {
            unserve_locked(); /* metric_port (or its cap) changed: stop, the consumer retries */
            snprintf(m_listen, sizeof m_listen, "%s", c->metric_listen);
            m_max_conns = c->metric_max_conns;
        }
        pthread_mutex_unlock(&m_mu);
    }
    if (tracing)
        drain_stop();
    else
        drain_start(c);
    return SERVPROF_LEVEL_INFO;
}

void sp_metrics_atfork_child(void)
{
    /* The parent's drain thread is not in the child and either lock may be
     * held by a thread that is gone: start from fresh ones, forget the rest
     * (the parent keeps its file and its lock). */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cv = PTHREAD_COND_INITIALIZER;
    memcpy(&m_mu, &fresh, sizeof m_mu);
    memcpy(&D.mu, &fresh, sizeof D.mu);
    memcpy(&D.cv, &fresh_cv, sizeof D.cv);
    atomic_store_explicit(&m_on, 0, memory_order_relaxed);
    sp_mhttp_forget(m_http); /* the port is the parent's */
    m_http = NULL;
    m_listen[0] = 0;
    m_http_failed = 0;
    m_http_retry_ns = 0;
    if (m_file)
        sp_mfile_forget(m_file);
    m_file = NULL;
    sp_magg_free(1);
    D.running = 0;
    D.stop = 0;
    D.wrapped.buf = NULL;
    D.wrapped.cap = 0;
    m_dir[0] = 0;
    sp_otlp_atfork_child();
}
