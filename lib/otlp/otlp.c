/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.c — life of request tracing over OTLP: on/off with the settings,
 * the hooks the rings' consumer calls, fork, and the counts.
 *
 * DESIGN
 * metrics.c owns the consumer side (the writer hands it every record, or its
 * drain thread consumes the rings when no store session is open) and calls
 * sp_otlp_configure() whenever it configures itself — at init, on every
 * config change, at start/stop of a session and at shutdown — so tracing is
 * live like the rest of the config and works with or without a session.
 *
 * The assembler's state is under o_mu (taken once per record by the
 * consumer, uncontended, and by the runtime when it switches tracing off);
 * o_on is the lock-free "is it on?" in front of it. Changing the endpoint or
 * any setting restarts the exporter: the old one flushes first (bounded).
 * The counts are relaxed atomics: any thread adds, the log and Meta read.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "otlp.h"
#include "otlp_ctx.h"
#include "rec_state.h"

void sp_otlp_asm_set_model(const char *m); /* otlp_asm.c */

const char *const sp_otlp_domains[SP_OTLP_NDOMAINS] = {
    "Request", "Schedule", "BatchSchedule", "ModelExecute", "KVCache", "Communication", "PDSplit"};

const char *const sp_otlp_count_names[SP_OC_N] = {
    "requests", "unsampled", "spans_queued", "spans_sent", "dropped_queue_full",
    "dropped_rejected", "dropped_retries", "dropped_shutdown", "dropped_untracked",
    "dropped_encode", "exports", "retries"};

static _Atomic uint64_t counts[SP_OC_N];
static pthread_mutex_t o_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int o_on;
static sp_otlp_conf o_conf; /* runtime (under its mutex): what is running */
static unsigned meta_gen;   /* under o_mu */
static unsigned proc_gen;   /* under o_mu: the process name's generation */
static char o_model[128], o_dp[32]; /* under o_mu */
static int64_t last_log_ns; /* under o_mu */
static uint64_t last_logged_drops; /* under o_mu */

void sp_otlp_count(int which, uint64_t n)
{
    atomic_fetch_add_explicit(&counts[which], n, memory_order_relaxed);
}

uint64_t sp_otlp_count_get(int which)
{
    return atomic_load_explicit(&counts[which], memory_order_relaxed);
}

static uint64_t drops(void)
{
    uint64_t d = 0;
    for (int i = SP_OC_DROP_QUEUE_FULL; i <= SP_OC_DROP_ENCODE; i++)
        d += sp_otlp_count_get(i);
    return d;
}

void sp_otlp_counts_text(char *out, size_t len)
{
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < SP_OC_N && at < len; i++) {
        int n = snprintf(out + at, len - at, "%s%s=%llu", i ? " " : "", sp_otlp_count_names[i],
                         (unsigned long long)sp_otlp_count_get(i));
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

static _Atomic uint64_t seed; /* 0 until made; a fork child makes its own */

uint64_t sp_otlp_seed(void)
{
    uint64_t s = atomic_load_explicit(&seed, memory_order_acquire);
    if (s)
        return s;
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid() << 32 ^ (uint64_t)ts.tv_sec;
    }
    r |= 1; /* never 0: 0 means "not made yet" */
    uint64_t want = 0;
    if (!atomic_compare_exchange_strong(&seed, &want, r))
        return want; /* another thread made it first */
    return r;
}

/* The root sampling ratio now (a double's bits), for servprof_trace_outgoing
 * on serving threads: written by configure, read anywhere. */
static _Atomic uint64_t root_ratio_bits;

static double root_ratio(const sp_otlp_conf *c)
{
    if (c->sampler == SP_SMP_ALWAYS_OFF || c->sampler == SP_SMP_PB_ALWAYS_OFF)
        return 0;
    double r = c->sampler == SP_SMP_RATIO || c->sampler == SP_SMP_PB_RATIO ? c->ratio : 1;
    if (c->sample_rate_n > 0 && 1.0 / c->sample_rate_n < r)
        r = 1.0 / c->sample_rate_n;
    return r;
}

int sp_otlp_auto_sampled(const uint8_t trace_id[16])
{
    uint64_t b = atomic_load_explicit(&root_ratio_bits, memory_order_relaxed);
    double r;
    memcpy(&r, &b, sizeof r);
    return sp_tc_ratio_sampled(trace_id, r);
}

int sp_otlp_on(void)
{
    return atomic_load_explicit(&o_on, memory_order_relaxed);
}

/* ---- the resource ------------------------------------------------------ */

static void take_meta(void *ctx, const char *key, const char *value)
{
    (void)ctx;
    if (!strcmp(key, "model_name"))
        snprintf(o_model, sizeof o_model, "%s", value);
    else if (!strcmp(key, "dpRankId"))
        snprintf(o_dp, sizeof o_dp, "%s", value);
}

/* The resource attributes (pointing into static storage and c). */
static int build_resource(const sp_otlp_conf *c, sp_otlp_attr *a, int max, char *kvbuf, size_t kvlen)
{
    static char host[256], proc[64];
    int n = 0;
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    sp_meta_process_name(proc, sizeof proc);
    a[n++] = (sp_otlp_attr){.key = "service.name", .type = SP_OTLP_STR, .s = c->service[0] ? c->service : proc};
    a[n++] = (sp_otlp_attr){.key = "host.name", .type = SP_OTLP_STR, .s = host};
    a[n++] = (sp_otlp_attr){.key = "process.pid", .type = SP_OTLP_INT, .i = getpid()};
    a[n++] = (sp_otlp_attr){.key = "telemetry.sdk.name", .type = SP_OTLP_STR, .s = "servprof"};
    a[n++] = (sp_otlp_attr){.key = "telemetry.sdk.language", .type = SP_OTLP_STR, .s = "cpp"};
    if (o_model[0])
        a[n++] = (sp_otlp_attr){.key = "servprof.model_name", .type = SP_OTLP_STR, .s = o_model};
    if (o_dp[0])
        a[n++] = (sp_otlp_attr){.key = "servprof.dp_rank", .type = SP_OTLP_STR, .s = o_dp};
    /* OTEL_RESOURCE_ATTRIBUTES: k=v,k2=v2; a key given there wins over ours. */
    snprintf(kvbuf, kvlen, "%s", c->resource);
    for (char *save = NULL, *kv = strtok_r(kvbuf, ",", &save); kv && n < max;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        while (*kv == ' ')
            kv++;
        if (!eq || eq == kv) {
            sp_log(SP_LOG_WARNING, "otlp: OTEL_RESOURCE_ATTRIBUTES: \"%s\" is not key=value; left out", kv);
            continue;
        }
        *eq = 0;
        int i;
        for (i = 0; i < n && strcmp(a[i].key, kv); i++)
            ;
        a[i] = (sp_otlp_attr){.key = kv, .type = SP_OTLP_STR, .s = eq + 1};
        if (i == n)
            n++;
    }
    return n;
}

/* ---- life ---------------------------------------------------------------- */

static int same_conf(const sp_otlp_conf *a, const sp_otlp_conf *b)
{
    return !memcmp(a, b, sizeof *a);
}

static void stop_locked_all(void)
{
    atomic_store_explicit(&o_on, 0, memory_order_relaxed);
    pthread_mutex_lock(&o_mu);
    sp_otlp_asm_free(0); /* the consumer made its final pass: ended requests go out */
    pthread_mutex_unlock(&o_mu);
    sp_otlp_export_stop(); /* bounded flush */
    char t[512];
    sp_otlp_counts_text(t, sizeof t);
    sp_log(SP_LOG_INFO, "otlp: request tracing off (%s)", t);
    /* The store's Meta, when a session is open (else the next one's). */
    sp_recorder_meta("otlp_counts", t);
    memset(&o_conf, 0, sizeof o_conf);
}

int sp_otlp_would_change(const sp_config *c, int off)
{
    if (!sp_otlp_on())
        return 0;
    if (off)
        return 1;
    sp_otlp_conf want;
    sp_otlp_conf_read(c, &want);
    return !want.on || !same_conf(&want, &o_conf);
}

int sp_otlp_configure(const sp_config *c, int off)
{
    sp_otlp_conf want;
    if (off)
        memset(&want, 0, sizeof want);
    else
        sp_otlp_conf_read(c, &want);
    int running = sp_otlp_on();
    if (running && (!want.on || !same_conf(&want, &o_conf)))
        stop_locked_all();
    if (!want.on || sp_otlp_on())
        return sp_otlp_on();
    pthread_mutex_lock(&o_mu);
    meta_gen = 0;
    sp_meta_each_if_changed(&meta_gen, take_meta, NULL);
    proc_gen = sp_meta_process_gen();
    sp_otlp_attr res[64];
    static char kvbuf[4096];
    int nres = build_resource(&want, res, 64, kvbuf, sizeof kvbuf);
    sp_otlp_asm_reset(&want, sp_otlp_seed());
    sp_otlp_asm_set_model(o_model);
    pthread_mutex_unlock(&o_mu);
    if (sp_otlp_export_start(&want, res, nres) != 0)
        return 0;
    o_conf = want;
    double rr = root_ratio(&want);
    uint64_t bits;
    memcpy(&bits, &rr, sizeof bits);
    atomic_store_explicit(&root_ratio_bits, bits, memory_order_relaxed);
    atomic_store_explicit(&o_on, 1, memory_order_relaxed);
    sp_log(SP_LOG_INFO, "otlp: request tracing on: spans to %s (batch %d, queue %d, every %d ms%s)",
           want.url, want.max_batch, want.max_queue, want.delay_ms, want.gzip ? ", gzip" : "");
    return 1;
}

void sp_otlp_on_record(const sp_rec_hdr *h, const uint8_t *rec, size_t len)
{
    if (!sp_otlp_on())
        return;
    pthread_mutex_lock(&o_mu);
    if (sp_otlp_on()) /* again under the lock: a stop may have come between */
        sp_otlp_asm_record(h, rec, len);
    pthread_mutex_unlock(&o_mu);
}

void sp_otlp_after_pass(void)
{
    if (!sp_otlp_on())
        return;
    int64_t now = sp_now_realtime_ns();
    pthread_mutex_lock(&o_mu);
    if (!sp_otlp_on()) {
        pthread_mutex_unlock(&o_mu);
        return;
    }
    unsigned pg = sp_meta_process_gen();
    if (sp_meta_each_if_changed(&meta_gen, take_meta, NULL) || pg != proc_gen) {
        /* servprof_meta / set_process_name after tracing began: a new resource */
        proc_gen = pg;
        sp_otlp_asm_set_model(o_model);
        sp_otlp_attr res[64];
        static char kvbuf[4096];
        int nres = build_resource(&o_conf, res, 64, kvbuf, sizeof kvbuf);
        sp_otlp_export_set_resource(res, nres);
    }
    sp_otlp_asm_pass_end(now);
    /* Drops: one line at most every 10 s, with the totals. */
    uint64_t d = drops();
    if (d != last_logged_drops && now - last_log_ns >= 10 * 1000000000LL) {
        char t[512];
        sp_otlp_counts_text(t, sizeof t);
        sp_log(SP_LOG_WARNING, "otlp: spans dropped (%s)", t);
        last_logged_drops = d;
        last_log_ns = now;
    }
    pthread_mutex_unlock(&o_mu);
}

void sp_otlp_atfork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&o_mu, &fresh, sizeof o_mu);
    atomic_store_explicit(&o_on, 0, memory_order_relaxed);
    sp_otlp_asm_free(1);
    sp_otlp_export_atfork_child();
    memset(&o_conf, 0, sizeof o_conf);
    for (int i = 0; i < SP_OC_N; i++)
        atomic_store(&counts[i], 0);
    atomic_store(&seed, 0); /* the child's spans get ids of their own */
}
