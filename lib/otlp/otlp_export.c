/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_export.c — the OTLP/HTTP exporter: a bounded queue of encoded spans
 * and one thread that batches and POSTs them (the OTel SDK's
 * BatchSpanProcessor, in C).
 *
 * DESIGN
 * Producers (the rings' consumer thread, through sp_otlp_export_push) copy
 * a span's bytes into the queue under q.mu and go; a full queue (max_queue
 * spans) drops the span and counts it. The exporter thread wakes when a
 * batch is full (max_batch) or the schedule delay has passed, takes up to
 * max_batch spans, wraps them in one ExportTraceServiceRequest
 * (common/otlp_pb.c), gzips it when asked, and POSTs it with libcurl on one
 * reused easy handle: one connection, kept alive, no other descriptor.
 *
 * Answers (the OTLP/HTTP spec's): 2xx sent; 429, 502, 503, 504 and network
 * errors (refused, reset, timed out) retried with exponential backoff from
 * 1 s (doubling, cap 30 s, ±20 % jitter) or the Retry-After the collector
 * gave (seconds or an HTTP date), at most MAX_TRIES tries; any other 4xx
 * (400: a body it cannot read) is not retried. Spans given up are counted by cause. A
 * collector that stalls costs at most timeout_ms per try, on this thread
 * only: the queue fills and drops count; serving threads never wait.
 *
 * Stop (servprof_shutdown, exit, trace export switched off): the thread
 * sends what is queued, each try bounded by what is left of flush_ms, then
 * counts the rest as shutdown drops. So the exit is bounded by flush_ms.
 *
 * libcurl is loaded with dlopen("libcurl.so.4") at the first start, as the
 * metrics' libmicrohttpd and the GPU libraries are: libservprof keeps no
 * link-time dependency on it, and a host without it gets one log line.
 * zlib (gzip) is linked: it is in every Debian base system.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <zlib.h>

#include "otlp.h"

#define MAX_TRIES 6
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 30000

typedef struct item { uint8_t *p; size_t len; } item;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    item *ring;     /* under mu: cap entries */
    int cap, head, count;
    int stop;       /* under mu */
    int running;    /* runtime only */
    pthread_t thread;
} q = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Exporter thread only (set before it starts). */
static sp_otlp_conf X;
/* The resource: replaced by sp_otlp_export_set_resource (meta changed),
 * read by the exporter thread while it encodes a batch; under res_mu. */
static pthread_mutex_t res_mu = PTHREAD_MUTEX_INITIALIZER;
static sp_otlp_attr *res;
static int nres;
static char *res_strings; /* the keys and values res points into */

/* ---- libcurl, loaded --------------------------------------------------- */

static struct {
    void *so;
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*setopt)(CURL *, CURLoption, ...);
    CURLcode (*perform)(CURL *);
    CURLcode (*getinfo)(CURL *, CURLINFO, ...);
    void (*cleanup)(CURL *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free)(struct curl_slist *);
    const char *(*strerror)(CURLcode);
    char *(*unescape)(CURL *, const char *, int, int *);
    void (*free)(void *);
    time_t (*getdate)(const char *, const time_t *); /* Retry-After as an HTTP date */
} C;

static int load_curl(char *why, size_t len)
{
    if (C.so)
        return 0;
    void *so = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        snprintf(why, len, "cannot load libcurl.so.4 (%s); install libcurl4", dlerror());
        return -1;
    }
#define SYM(f, n) *(void **)&C.f = dlsym(so, n)
    SYM(global_init, "curl_global_init");
    SYM(easy_init, "curl_easy_init");
    SYM(setopt, "curl_easy_setopt");
    SYM(perform, "curl_easy_perform");
    SYM(getinfo, "curl_easy_getinfo");
    SYM(cleanup, "curl_easy_cleanup");
    SYM(slist_append, "curl_slist_append");
    SYM(slist_free, "curl_slist_free_all");
    SYM(strerror, "curl_easy_strerror");
    SYM(unescape, "curl_easy_unescape");
    SYM(free, "curl_free");
    SYM(getdate, "curl_getdate");
#undef SYM
    if (!C.global_init || !C.easy_init || !C.setopt || !C.perform || !C.getinfo || !C.cleanup ||
        !C.slist_append || !C.slist_free || !C.strerror || !C.unescape || !C.free || !C.getdate) {
        snprintf(why, len, "libcurl.so.4 lacks a function servprof needs");
        dlclose(so);
        memset(&C, 0, sizeof C);
        return -1;
    }
    C.so = so;
    C.global_init(CURL_GLOBAL_DEFAULT);
    return 0;
}

/* ---- the queue ---------------------------------------------------------- */

void sp_otlp_export_push(const uint8_t *span, size_t len)
{
    uint8_t *p = malloc(len);
    if (!p) {
        sp_otlp_count(SP_OC_DROP_ENCODE, 1);
        return;
    }
    memcpy(p, span, len);
    pthread_mutex_lock(&q.mu);
    if (!q.ring || q.count >= q.cap) {
        pthread_mutex_unlock(&q.mu);
        free(p);
        sp_otlp_count(SP_OC_DROP_QUEUE_FULL, 1);
        return;
    }
    q.ring[(q.head + q.count) % q.cap] = (item){p, len};
    q.count++;
    if (q.count >= X.max_batch)
        pthread_cond_signal(&q.cv);
    pthread_mutex_unlock(&q.mu);
    sp_otlp_count(SP_OC_SPANS_QUEUED, 1);
}

int sp_otlp_export_full(void)
{
    pthread_mutex_lock(&q.mu);
    int full = !q.ring || q.count >= q.cap;
    pthread_mutex_unlock(&q.mu);
    return full;
}

int sp_otlp_export_queued(void)
{
    pthread_mutex_lock(&q.mu);
    int n = q.count;
    pthread_mutex_unlock(&q.mu);
    return n;
}

/* Takes up to max spans off the queue (under q.mu). */
static int take_locked(item *out, int max)
{
    int n = 0;
    while (n < max && q.count) {
        out[n++] = q.ring[q.head];
        q.head = (q.head + 1) % q.cap;
        q.count--;
    }
    return n;
}

/* ---- one POST ----------------------------------------------------------- */

static size_t discard(char *p, size_t s, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return s * n; /* the body (a partial-success message at most) is not read */
}

typedef struct answer { long retry_after_ms; } answer;

#define RETRY_AFTER_MAX_MS 3600000L

/* Retry-After (RFC 9110 10.2.3) is either delay-seconds or an HTTP-date
 * (IMF-fixdate, or the obsolete RFC 850 / asctime forms, which curl_getdate
 * reads too). A date is turned into a delay against this host's clock: one
 * already past means "now" (0), one further than an hour is capped like
 * seconds are. Anything else leaves -1: the backoff applies. */
static long retry_after_ms(const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    char *end;
    long secs = strtol(v, &end, 10);
    if (end != v && secs >= 0 && (*end == 0 || *end == '\r' || *end == '\n' || *end == ' '))
        return secs > RETRY_AFTER_MAX_MS / 1000 ? RETRY_AFTER_MAX_MS : secs * 1000;
    char date[64];
    size_t n = strcspn(v, "\r\n");
    if (n == 0 || n >= sizeof date)
        return -1;
    memcpy(date, v, n);
    date[n] = 0;
    time_t now = time(NULL);
    time_t at = C.getdate(date, &now);
    if (at == (time_t)-1)
        return -1;
    if (at <= now)
        return 0;
    double ms = difftime(at, now) * 1000;
    return ms > RETRY_AFTER_MAX_MS ? RETRY_AFTER_MAX_MS : (long)ms;
}

static size_t header_cb(char *p, size_t s, size_t n, void *ctx)
{
    answer *a = ctx;
    size_t len = s * n;
    if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
        char tmp[80];
        size_t m = len - 12 < sizeof tmp - 1 ? len - 12 : sizeof tmp - 1;
        memcpy(tmp, p + 12, m);
        tmp[m] = 0;
        a->retry_after_ms = retry_after_ms(tmp);
    }
    return len;
}

static int gzip_body(const uint8_t *in, size_t n, sp_otlp_buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    size_t cap = deflateBound(&z, (uLong)n);
    sp_otlp_buf_reset(out);
    if (out->cap < cap) {
        uint8_t *p = realloc(out->p, cap);
        if (!p) {
            deflateEnd(&z);
            return -1;
        }
        out->p = p;
        out->cap = cap;
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out->p;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    out->len = cap - z.avail_out;
    deflateEnd(&z);
    return rc == Z_STREAM_END ? 0 : -1;
}

enum { R_SENT, R_RETRY, R_REJECTED };

/* One try. Returns R_*; *wait_ms: Retry-After when the collector gave one. */
static int post(CURL *h, struct curl_slist *hdrs, const uint8_t *body, size_t n, long timeout_ms,
                long *wait_ms, char *why, size_t whylen)
{
    answer a = {-1};
    C.setopt(h, CURLOPT_URL, X.url);
    C.setopt(h, CURLOPT_HTTPHEADER, hdrs);
    C.setopt(h, CURLOPT_POST, 1L);
    C.setopt(h, CURLOPT_POSTFIELDS, (const char *)body);
    C.setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    C.setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    C.setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    C.setopt(h, CURLOPT_NOSIGNAL, 1L);
    C.setopt(h, CURLOPT_WRITEFUNCTION, discard);
    C.setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    C.setopt(h, CURLOPT_HEADERDATA, &a);
    C.setopt(h, CURLOPT_MAXCONNECTS, 1L);
    if (X.ca_file[0])
        C.setopt(h, CURLOPT_CAINFO, X.ca_file);
    sp_otlp_count(SP_OC_EXPORTS, 1);
    CURLcode rc = C.perform(h);
    *wait_ms = -1;
    if (rc != CURLE_OK) {
        snprintf(why, whylen, "%s", C.strerror(rc));
        return R_RETRY;
    }
    long code = 0;
    C.getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300)
        return R_SENT;
    snprintf(why, whylen, "HTTP %ld", code);
    if (code == 429 || code == 502 || code == 503 || code == 504 || code == 408) {
        *wait_ms = a.retry_after_ms;
        return R_RETRY;
    }
    return R_REJECTED;
}

/* ---- the thread -------------------------------------------------------------- */

static int64_t mono_ms(void) { return sp_now_monotonic_ns() / 1000000; }

static void deadline_in(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Waits up to ms or until stop; returns nonzero when stopping. */
static int nap(long ms)
{
    struct timespec ts;
    deadline_in(&ts, ms);
    pthread_mutex_lock(&q.mu);
    while (!q.stop && pthread_cond_timedwait(&q.cv, &q.mu, &ts) == 0)
        ;
    int s = q.stop;
    pthread_mutex_unlock(&q.mu);
    return s;
}

static struct curl_slist *make_headers(CURL *h)
{
    struct curl_slist *l = C.slist_append(NULL, "Content-Type: application/x-protobuf");
    if (X.gzip)
        l = C.slist_append(l, "Content-Encoding: gzip");
    l = C.slist_append(l, "Expect:"); /* no 100-continue round trip */
    /* OTEL_EXPORTER_OTLP_HEADERS: k=v,k2=v2, each URL-encoded (the OTel spec) */
    char *dup = strdup(X.headers);
    for (char *save = NULL, *kv = dup ? strtok_r(dup, ",", &save) : NULL; kv;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv)
            continue; /* otlp_conf.c logged it */
        *eq = 0;
        char *k = C.unescape(h, kv, 0, NULL), *v = C.unescape(h, eq + 1, 0, NULL);
        if (k && v) {
            const char *kk = k;
            while (*kk == ' ')
                kk++;
            char line[4200];
            snprintf(line, sizeof line, "%s: %s", kk, v);
            l = C.slist_append(l, line);
        }
        C.free(k);
        C.free(v);
    }
    free(dup);
    return l;
}

static void *export_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "servprof-otlp");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    CURL *h = C.easy_init();
    struct curl_slist *hdrs = h ? make_headers(h) : NULL;
    int max = X.max_batch;
    item *batch = calloc((size_t)max, sizeof *batch);
    const uint8_t **ptrs = calloc((size_t)max, sizeof *ptrs);
    size_t *lens = calloc((size_t)max, sizeof *lens);
    sp_otlp_buf body = {0}, gz = {0};
    int64_t flush_until = 0; /* set when the stop is seen */
    int logged_fail = 0;
    if (!h || !batch || !ptrs || !lens)
        sp_log(SP_LOG_ERROR, "otlp: the exporter cannot start (out of memory); spans are counted "
               "as dropped");
    int64_t next_send = mono_ms() + X.delay_ms;
    for (;;) {
        pthread_mutex_lock(&q.mu);
        struct timespec ts;
        while (!q.stop && q.count < max) {
            long left = (long)(next_send - mono_ms());
            if (left <= 0)
                break;
            deadline_in(&ts, left);
            pthread_cond_timedwait(&q.cv, &q.mu, &ts);
        }
        if (q.stop && !flush_until)
            flush_until = mono_ms() + X.flush_ms;
        int n = (h && batch) ? take_locked(batch, max) : 0;
        int stopping = q.stop;
        if (!h || !batch) { /* nothing can be sent: what is queued is dropped */
            item junk;
            while (take_locked(&junk, 1)) {
                free(junk.p);
                sp_otlp_count(SP_OC_DROP_ENCODE, 1);
            }
        }
        pthread_mutex_unlock(&q.mu);
        next_send = mono_ms() + X.delay_ms;
        if (n == 0) {
            if (stopping)
                break;
            continue;
        }
        for (int i = 0; i < n; i++) {
            ptrs[i] = batch[i].p;
            lens[i] = batch[i].len;
        }
        sp_otlp_buf_reset(&body);
        pthread_mutex_lock(&res_mu);
        sp_otlp_request_encode(&body, res, nres, "servprof", SERVPROF_VERSION, ptrs, lens, n);
        pthread_mutex_unlock(&res_mu);
        for (int i = 0; i < n; i++)
            free(batch[i].p);
        const uint8_t *p = body.p;
        size_t len = body.len;
        if (!body.oom && X.gzip) {
            if (gzip_body(body.p, body.len, &gz) == 0) {
                p = gz.p;
                len = gz.len;
            } else {
                body.oom = 1;
            }
        }
        if (body.oom) {
            sp_otlp_count(SP_OC_DROP_ENCODE, (uint64_t)n);
            continue;
        }
        long backoff = BACKOFF_FIRST_MS;
        int outcome = R_RETRY;
        char why[256] = "";
        for (int tries = 0; tries < MAX_TRIES; tries++) {
            long timeout = X.timeout_ms;
            if (flush_until) {
                long left = (long)(flush_until - mono_ms());
                if (left <= 0)
                    break;
                if (left < timeout)
                    timeout = left;
            }
            if (tries)
                sp_otlp_count(SP_OC_RETRIES, 1);
            long wait_ms;
            outcome = post(h, hdrs, p, len, timeout, &wait_ms, why, sizeof why);
            if (outcome != R_RETRY)
                break;
            if (wait_ms < 0) {
                /* ±20 % so that the processes of a server do not retry in step */
                long j = backoff / 5;
                wait_ms = backoff - j + (j ? (long)(rand() % (2 * j + 1)) : 0);
                backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
            }
            if (tries + 1 == MAX_TRIES)
                break;
            if (flush_until) {
                long left = (long)(flush_until - mono_ms());
                if (wait_ms >= left)
                    break; /* no time left for the wait: give up now */
                struct timespec t = {wait_ms / 1000, (wait_ms % 1000) * 1000000L};
                nanosleep(&t, NULL); /* the exit flush: nothing to wake us for */
            } else if (nap(wait_ms)) {
                if (!flush_until)
                    flush_until = mono_ms() + X.flush_ms;
            }
        }
        if (outcome == R_SENT) {
            sp_otlp_count(SP_OC_SPANS_SENT, (uint64_t)n);
            if (logged_fail)
                sp_log(SP_LOG_INFO, "otlp: %s accepts spans again", X.url);
            logged_fail = 0;
        } else {
            int cause = outcome == R_REJECTED ? SP_OC_DROP_REJECTED
                        : flush_until ? SP_OC_DROP_SHUTDOWN : SP_OC_DROP_RETRIES;
            sp_otlp_count(cause, (uint64_t)n);
            if (!logged_fail)
                sp_log(SP_LOG_WARNING, "otlp: %d spans not accepted by %s (%s%s); counted as dropped, "
                       "going on (one line until it accepts again)", n, X.url, why,
                       outcome == R_REJECTED ? ", not retried" : ", after retries");
            logged_fail = 1;
        }
        if (flush_until && mono_ms() >= flush_until) {
            pthread_mutex_lock(&q.mu);
            item junk;
            int left = 0;
            while (take_locked(&junk, 1)) {
                free(junk.p);
                left++;
            }
            pthread_mutex_unlock(&q.mu);
            sp_otlp_count(SP_OC_DROP_SHUTDOWN, (uint64_t)left);
            break;
        }
    }
    if (hdrs)
        C.slist_free(hdrs);
    if (h)
        C.cleanup(h);
    free(batch);
    free(ptrs);
    free(lens);
    sp_otlp_buf_free(&body);
    sp_otlp_buf_free(&gz);
    return NULL;
}

/* ---- life -------------------------------------------------------------------- */

static void free_res(void)
{
    pthread_mutex_lock(&res_mu);
    free(res);
    free(res_strings);
    res = NULL;
    res_strings = NULL;
    nres = 0;
    pthread_mutex_unlock(&res_mu);
}

int sp_otlp_export_set_resource(const sp_otlp_attr *r, int nr)
{
    /* One block for the keys and string values, built before the swap. */
    size_t total = 0;
    for (int i = 0; i < nr; i++)
        total += strlen(r[i].key) + 1 + (r[i].type == SP_OTLP_STR ? strlen(r[i].s) + 1 : 0);
    sp_otlp_attr *a = calloc((size_t)(nr ? nr : 1), sizeof *a);
    char *strings = malloc(total ? total : 1);
    if (!a || !strings) {
        free(a);
        free(strings);
        return -1;
    }
    char *s = strings;
    for (int i = 0; i < nr; i++) {
        a[i] = r[i];
        size_t kl = strlen(r[i].key) + 1;
        memcpy(s, r[i].key, kl);
        a[i].key = s;
        s += kl;
        if (r[i].type == SP_OTLP_STR) {
            size_t vl = strlen(r[i].s) + 1;
            memcpy(s, r[i].s, vl);
            a[i].s = s;
            s += vl;
        }
    }
    pthread_mutex_lock(&res_mu);
    free(res);
    free(res_strings);
    res = a;
    res_strings = strings;
    nres = nr;
    pthread_mutex_unlock(&res_mu);
    return 0;
}

int sp_otlp_export_start(const sp_otlp_conf *c, const sp_otlp_attr *r, int nr)
{
    if (q.running)
        return 0;
    char why[512];
    if (load_curl(why, sizeof why) != 0) {
        sp_log(SP_LOG_WARNING, "otlp: %s; request tracing stays off", why);
        return -1;
    }
    X = *c;
    item *ring = calloc((size_t)c->max_queue, sizeof *ring);
    if (!ring || sp_otlp_export_set_resource(r, nr) != 0) {
        free(ring);
        free_res();
        sp_log(SP_LOG_ERROR, "otlp: out of memory; request tracing stays off");
        return -1;
    }
    pthread_mutex_lock(&q.mu);
    q.ring = ring;
    q.cap = c->max_queue;
    q.head = q.count = 0;
    q.stop = 0;
    pthread_mutex_unlock(&q.mu);
    int rc = pthread_create(&q.thread, NULL, export_main, NULL);
    if (rc != 0) {
        pthread_mutex_lock(&q.mu);
        q.ring = NULL;
        q.cap = 0;
        pthread_mutex_unlock(&q.mu);
        free(ring);
        free_res();
        sp_log(SP_LOG_ERROR, "otlp: cannot start the exporter thread: %s; request tracing stays off",
               strerror(rc));
        return -1;
    }
    q.running = 1;
    return 0;
}

void sp_otlp_export_stop(void)
{
    if (!q.running)
        return;
    pthread_mutex_lock(&q.mu);
    q.stop = 1;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    pthread_join(q.thread, NULL);
    q.running = 0;
    pthread_mutex_lock(&q.mu);
    item junk;
    int left = 0;
    while (take_locked(&junk, 1)) { /* none: the thread emptied it */
        free(junk.p);
        left++;
    }
    free(q.ring);
    q.ring = NULL;
    q.cap = 0;
    pthread_mutex_unlock(&q.mu);
    if (left)
        sp_otlp_count(SP_OC_DROP_SHUTDOWN, (uint64_t)left);
    free_res();
}

void sp_otlp_export_atfork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cv = PTHREAD_COND_INITIALIZER;
    memcpy(&q.mu, &fresh, sizeof q.mu);
    memcpy(&q.cv, &fresh_cv, sizeof q.cv);
    memcpy(&res_mu, &fresh, sizeof res_mu);
    /* The parent's queue and thread are not ours: forget them (leaked, safely). */
    q.ring = NULL;
    q.cap = q.head = q.count = 0;
    q.stop = 0;
    q.running = 0;
    res = NULL;
    res_strings = NULL;
    nres = 0;
}
