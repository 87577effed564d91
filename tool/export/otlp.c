/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.c — `servprof export INPUT --to otlp+http://HOST:PORT[/path]` (and
 * otlp+https://): a past run's requests as OTLP traces, into the tracing
 * backend of today (docs/tracing.md, "Replay").
 *
 * DESIGN
 * The export runs the parse in this process and feeds the module (export.h):
 * every decoded record, then every report row. A request becomes spans when
 * its request.csv row comes — the row holds the parse's own figures (start,
 * e2e, queue wait, TTFT, prefill and decode times, tokens), so a replayed
 * span and a parsed row agree by construction. Records add what the row has
 * not: the trace context (`traceContext`), the request's parameters
 * (`httpReq`: temperature, top_p, max_tokens, n), its outcome
 * (`httpRes` / `traceEnd`) and the engine's side by the live assembler's
 * rule (lib/otlp/otlp_asm.c): the durations of the steps naming it summed
 * per kind (BatchSchedule -> time_in_scheduler, modelExec/Execute ->
 * time_in_model_execute, forward -> time_in_model_forward) and the queue
 * child (first Enqueue into WAITING to its Dequeue or first step), over its
 * own id and the ids Linked onto it; kept per request id until its row (a
 * row comes after its records: the parse writes it once the stream is past
 * its end).
 *
 * The spans are those the live exporter sends (lib/otlp/otlp_asm.c), named
 * and typed the same: llm_request (SERVER, the caller's span as parent when
 * the store has its traceparent) with the gen_ai attributes, and queue /
 * prefill / decode children. Ids are derived (common/otlp_ctx.h) from a seed made of
 * the store's host and pid, so a second replay of the same input gives the
 * same ids (a backend stores them once). Requests without a trace context
 * get a made trace id; replay sends every request (sampling is the live
 * side's: what is in the store was chosen already).
 *
 * Bodies are encoded with common/otlp_pb.c and POSTed with libcurl in
 * batches of BATCH spans, synchronously: 429 / 503 / 5xx / network errors
 * retried (Retry-After, seconds or a date, or 1, 2, 4 s), other answers stop the export with the
 * collector's status in the message.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "export.h"
#include "otlp_ctx.h"
#include "otlp_pb.h"
#include "servprof_version.h"

#define BATCH 512
#define TRIES 4
#define HASH 4096

typedef struct info {
    struct info *next;
    char *rid;
    sp_tc ctx;
    int has_ctx;
    char tracestate[256];
    double temperature, top_p, max_tokens, n;
    unsigned have; /* 1 temperature, 2 top_p, 4 max_tokens, 8 n */
    char outcome[32];
    uint64_t seed;
    /* The engine's side, summed as the live assembler does (otlp_asm.c):
     * steps naming the request (its own id or an id Linked onto it) */
    int64_t first_enq, first_sched, sched_ns, exec_ns, fwd_ns;
    char *canon; /* a Link's "to" side: the id its times go to (malloc'ed) */
} info;

typedef struct ox {
    const exp_opts *o;
    char url[2048];
    CURL *h;
    struct curl_slist *hdrs;
    info *bucket[HASH];
    uint8_t **spans;
    size_t *lens;
    int n;
    sp_otlp_buf span, body;
    long long requests, spans_sent, posts, retries;
    int failed;
    char err[512];
    char service[256];
    struct timespec t0;
} ox;

/* ---- per-request facts from the records ------------------------------- */

static uint32_t hash_s(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static info *get(ox *x, const char *rid, int make)
{
    uint32_t b = hash_s(rid) % HASH;
    for (info *i = x->bucket[b]; i; i = i->next)
        if (!strcmp(i->rid, rid))
            return i;
    if (!make)
        return NULL;
    info *i = calloc(1, sizeof *i);
    if (!i || !(i->rid = strdup(rid))) {
        free(i);
        return NULL;
    }
    i->next = x->bucket[b];
    x->bucket[b] = i;
    return i;
}

static void drop(ox *x, info *want)
{
    for (info **pp = &x->bucket[hash_s(want->rid) % HASH]; *pp; pp = &(*pp)->next)
        if (*pp == want) {
            *pp = want->next;
            free(want->canon);
            free(want->rid);
            free(want);
            return;
        }
}

static uint64_t store_seed(const prs_rec *r)
{
    uint64_t h = 14695981039346656037ULL;
    const char *host = r->store && r->store->hostname ? r->store->hostname : "";
    for (const char *s = host; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return (h ^ (uint64_t)r->pid) | 1;
}

static const char *rid_of(json_t *a, char *buf, size_t len)
{
    json_t *r = json_object_get(a, "rid");
    if (json_is_string(r))
        return json_string_value(r);
    if (json_is_integer(r)) {
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(r));
        return buf;
    }
    return NULL;
}

static int64_t min_set(int64_t a, int64_t b) { return !a ? b : !b ? a : (a < b ? a : b); }

/* The step kinds, as the live assembler's kind_of (lib/otlp/otlp_asm.c). */
enum { ST_NONE, ST_SCHED, ST_EXEC, ST_FWD };

static int step_kind(const char *n)
{
    if (!strcmp(n, "BatchSchedule") || !strcmp(n, "batchFrameworkProcessing")) return ST_SCHED;
    if (!strcmp(n, "modelExec") || !strcmp(n, "modelRunnerExec") || !strcmp(n, "Execute")) return ST_EXEC;
    if (!strcmp(n, "forward")) return ST_FWD;
    return ST_NONE;
}

/* The state a step or queue record of id rid adds to: its Link's front-end
 * id when it has one (one level, as Links are front end -> engine). */
static info *target(ox *x, const char *rid)
{
    info *i = get(x, rid, 1);
    if (i && i->canon) {
        info *c = get(x, i->canon, 1);
        if (c)
            return c;
    }
    return i;
}

static void on_step_one(info *i, int k, int64_t t0, int64_t d)
{
    if (!i)
        return;
    i->first_sched = min_set(i->first_sched, t0);
    if (k == ST_SCHED) i->sched_ns += d;
    else if (k == ST_EXEC) i->exec_ns += d;
    else i->fwd_ns += d;
}

static void on_link(ox *x, json_t *a)
{
    json_t *f = json_object_get(a, "from"), *t = json_object_get(a, "to");
    if (!json_is_string(f) || !json_is_string(t) || !strcmp(json_string_value(f), json_string_value(t)))
        return;
    info *to = get(x, json_string_value(t), 1), *from = get(x, json_string_value(f), 1);
    if (!to || !from || to->canon)
        return;
    to->canon = strdup(json_string_value(f));
    /* what the engine's id gathered before the Link moves over */
    from->first_enq = min_set(from->first_enq, to->first_enq);
    from->first_sched = min_set(from->first_sched, to->first_sched);
    from->sched_ns += to->sched_ns;
    from->exec_ns += to->exec_ns;
    from->fwd_ns += to->fwd_ns;
    to->first_enq = to->first_sched = to->sched_ns = to->exec_ns = to->fwd_ns = 0;
}

static int waiting(json_t *a)
{
    json_t *q = json_object_get(a, "scope#QueueName");
    return !json_is_string(q) || !strcmp(json_string_value(q), "WAITING");
}

static void ox_record(void *mv, const prs_rec *r)
{
    ox *x = mv;
    int ctx = !strcmp(r->name, "traceContext"), req = !strcmp(r->name, "httpReq"),
        end = !strcmp(r->name, "httpRes") || !strcmp(r->name, "traceEnd");
    int step = step_kind(r->name), link = !strcmp(r->name, "Link"),
        enq = !strcmp(r->name, "Enqueue"), deq = !strcmp(r->name, "Dequeue");
    if (x->failed || !(ctx || req || end || step || link || enq || deq))
        return;
    json_t *a = json_loadb(r->args, (size_t)r->args_len, 0, NULL);
    if (!json_is_object(a)) {
        json_decref(a);
        return;
    }
    if (link) {
        on_link(x, a);
        json_decref(a);
        return;
    }
    if (step) {
        int64_t d = r->dur > 0 ? r->dur : 0;
        json_t *l = json_object_get(a, "rid");
        if (json_is_array(l)) {
            size_t j;
            json_t *e;
            json_array_foreach(l, j, e) {
                char b[32];
                const char *id = json_is_object(e) ? rid_of(e, b, sizeof b) : NULL;
                if (id)
                    on_step_one(target(x, id), step, r->ts, d);
            }
        } else {
            char b[32];
            const char *id = rid_of(a, b, sizeof b);
            if (id)
                on_step_one(target(x, id), step, r->ts, d);
        }
        json_decref(a);
        return;
    }
    char buf[32];
    const char *rid = rid_of(a, buf, sizeof buf);
    if (enq || deq) {
        info *t = rid && waiting(a) ? target(x, rid) : NULL;
        if (t && enq && !t->first_enq)
            t->first_enq = r->ts;
        if (t && deq && !t->first_sched)
            t->first_sched = r->ts;
        json_decref(a);
        return;
    }
    info *i = rid ? get(x, rid, 1) : NULL;
    if (!i) {
        json_decref(a);
        return;
    }
    if (!i->seed)
        i->seed = store_seed(r);
    if (ctx) {
        json_t *tp = json_object_get(a, "traceparent"), *ts = json_object_get(a, "tracestate");
        if (json_is_string(tp) && sp_tc_parse(json_string_value(tp), &i->ctx, NULL) == 0) {
            i->has_ctx = 1;
            i->seed = store_seed(r); /* the process that was given the context */
            snprintf(i->tracestate, sizeof i->tracestate, "%s", json_is_string(ts) ? json_string_value(ts) : "");
        }
    } else if (req) {
        static const char *const k[] = {"temperature", "top_p", "max_tokens", "n"};
        double *f[] = {&i->temperature, &i->top_p, &i->max_tokens, &i->n};
        for (int j = 0; j < 4; j++) {
            json_t *v = json_object_get(a, k[j]);
            if (json_is_number(v)) {
                *f[j] = json_number_value(v);
                i->have |= 1u << j;
            }
        }
    } else {
        json_t *o = json_object_get(a, "outcome");
        if (!json_is_string(o))
            o = json_object_get(a, "status");
        if (json_is_string(o))
            snprintf(i->outcome, sizeof i->outcome, "%s", json_string_value(o));
    }
    json_decref(a);
}

/* ---- sending ------------------------------------------------------------ */

static void fail(ox *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(ox *x, const char *fmt, ...)
{
    if (x->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err, sizeof x->err, fmt, ap);
    va_end(ap);
    x->failed = 1;
}

static size_t discard(char *p, size_t s, size_t n, void *c)
{
    (void)p;
    (void)c;
    return s * n;
}

static size_t on_header(char *p, size_t s, size_t n, void *c)
{
    long *ra = c;
    if (s * n > 12 && s * n < 100 && !strncasecmp(p, "Retry-After:", 12)) {
        /* delay-seconds, or an HTTP date (RFC 9110): seconds from now */
        char v[100];
        memcpy(v, p + 12, s * n - 12);
        v[s * n - 12] = 0;
        v[strcspn(v, "\r\n")] = 0;
        char *end;
        long secs = strtol(v, &end, 10);
        if (end != v && secs >= 0) {
            *ra = secs;
        } else {
            time_t now = time(NULL), at = curl_getdate(v, &now);
            if (at != (time_t)-1)
                *ra = at > now ? (long)(at - now) : 0;
        }
    }
    return s * n;
}

static void flush(ox *x)
{
    if (!x->n || x->failed)
        return;
    static const sp_otlp_attr res_fixed[] = {
        {.key = "telemetry.sdk.name", .type = SP_OTLP_STR, .s = "servprof"},
        {.key = "servprof.replay", .type = SP_OTLP_BOOL, .i = 1},
    };
    sp_otlp_attr res[4] = {{.key = "service.name", .type = SP_OTLP_STR, .s = x->service},
                           res_fixed[0], res_fixed[1],
                           {.key = "servprof.input", .type = SP_OTLP_STR, .s = x->o->input}};
    sp_otlp_buf_reset(&x->body);
    sp_otlp_request_encode(&x->body, res, 4, "servprof", SERVPROF_VERSION, (const uint8_t *const *)x->spans,
                           x->lens, x->n);
    if (x->body.oom) {
        fail(x, "out of memory encoding %d spans", x->n);
        return;
    }
    long wait = 1;
    for (int t = 0; t < TRIES; t++) {
        long ra = -1, code = 0;
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, (const char *)x->body.p);
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body.len);
        curl_easy_setopt(x->h, CURLOPT_HEADERDATA, &ra);
        x->posts++;
        CURLcode rc = curl_easy_perform(x->h);
        if (rc == CURLE_OK)
            curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
        if (rc == CURLE_OK && code >= 200 && code < 300) {
            x->spans_sent += x->n;
            for (int i = 0; i < x->n; i++)
                free(x->spans[i]);
            x->n = 0;
            return;
        }
        int retry = rc != CURLE_OK || code == 429 || code == 408 || code >= 500;
        if (!retry || t + 1 == TRIES) {
            if (rc != CURLE_OK)
                fail(x, "%s: %s", x->url, curl_easy_strerror(rc));
            else
                fail(x, "%s answered HTTP %ld%s", x->url, code, retry ? " (after retries)" : "");
            return;
        }
        x->retries++;
        sleep((unsigned)(ra >= 0 && ra < 60 ? ra : wait));
        wait *= 2;
    }
}

static void push(ox *x)
{
    if (x->span.oom) {
        fail(x, "out of memory encoding a span");
        return;
    }
    uint8_t *p = malloc(x->span.len);
    if (!p) {
        fail(x, "out of memory");
        return;
    }
    memcpy(p, x->span.p, x->span.len);
    x->spans[x->n] = p;
    x->lens[x->n++] = x->span.len;
    if (x->n == BATCH)
        flush(x);
}

/* ---- a request.csv row -> spans ------------------------------------------------ */

static int col(const prs_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i].name, name))
            return i;
    return -1;
}

/* A `(ms)` value in ns (-1: null). */
static int64_t ns_of(const prs_table *t, const prs_val *v, const char *name)
{
    int i = col(t, name);
    if (i < 0 || v[i].kind == PRS_NULL)
        return -1;
    if (v[i].kind == PRS_MS && v[i].n == 1)
        return v[i].i;
    if (v[i].kind == PRS_MS || v[i].kind == PRS_REAL)
        return (int64_t)llround(v[i].d * 1e6);
    return v[i].kind == PRS_INT ? v[i].i * 1000000LL : -1;
}

static long long int_of(const prs_table *t, const prs_val *v, const char *name, int *ok)
{
    int i = col(t, name);
    *ok = i >= 0 && v[i].kind == PRS_INT;
    return *ok ? v[i].i : 0;
}

static int failed_outcome(const char *o)
{
    static const char *const ok[] = {"ok", "OK", "success", "finished", "stop", "length", "200"};
    if (!o[0])
        return 0;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(o, ok[i]))
            return 0;
    return 1;
}

#define A_D(k, v) (sp_otlp_attr){.key = (k), .type = SP_OTLP_DOUBLE, .d = (v)}
#define A_I(k, v) (sp_otlp_attr){.key = (k), .type = SP_OTLP_INT, .i = (int64_t)(v)}
#define A_S(k, v) (sp_otlp_attr){.key = (k), .type = SP_OTLP_STR, .s = (v)}

static void child(ox *x, const sp_otlp_span *parent, const char *rid, uint64_t seed, int ph,
                  const char *name, int64_t t0, int64_t t1)
{
    if (t0 < 0 || t1 < t0)
        return;
    sp_otlp_span s;
    memset(&s, 0, sizeof s);
    memcpy(s.trace_id, parent->trace_id, 16);
    sp_tc_span_id(seed, parent->trace_id, rid, strlen(rid), ph, s.span_id);
    memcpy(s.parent_id, parent->span_id, 8);
    s.has_parent = 1;
    s.trace_state = parent->trace_state;
    s.name = name;
    s.kind = SP_OTLP_KIND_INTERNAL;
    s.start_ns = t0;
    s.end_ns = t1;
    s.flags = 1 | 0x100;
    sp_otlp_buf_reset(&x->span);
    sp_otlp_span_encode(&x->span, &s);
    push(x);
}

static void ox_row(void *mv, const prs_table *t, const prs_val *v)
{
    ox *x = mv;
    const char *key = t->key; /* db_name, else csv_name, even with the outputs off */
    if (x->failed || !key || strcmp(key, "request"))
        return;
    int ridc = col(t, "http_rid");
    if (ridc < 0 || v[ridc].kind != PRS_TEXT)
        return;
    char rid[512];
    snprintf(rid, sizeof rid, "%.*s", v[ridc].n, v[ridc].s);
    int64_t start = ns_of(t, v, "start_time(ms)"), e2e = ns_of(t, v, "execution_time(ms)"),
            ttft = ns_of(t, v, "first_token_latency(ms)"), wait = ns_of(t, v, "queue_wait_time(ms)"),
            prefill = ns_of(t, v, "prefill_time(ms)"), decode = ns_of(t, v, "decode_time(ms)");
    if (start < 0)
        return; /* cut by the collection window: no time to put it at */
    x->requests++;
    info *in = get(x, rid, 0);
    uint64_t seed = in && in->seed ? in->seed : 0x5e1fULL;
    sp_otlp_span s;
    memset(&s, 0, sizeof s);
    if (in && in->has_ctx) {
        memcpy(s.trace_id, in->ctx.trace_id, 16);
        memcpy(s.parent_id, in->ctx.parent_id, 8);
        s.has_parent = 1;
        s.trace_state = in->tracestate;
    } else {
        sp_tc_auto_trace_id(seed, rid, strlen(rid), s.trace_id);
    }
    sp_tc_span_id(seed, s.trace_id, rid, strlen(rid), SP_PH_SERVER, s.span_id);
    sp_otlp_attr at[20];
    int na = 0, ok;
    at[na++] = A_S("gen_ai.request.id", rid);
    if (in && (in->have & 1)) at[na++] = A_D("gen_ai.request.temperature", in->temperature);
    if (in && (in->have & 2)) at[na++] = A_D("gen_ai.request.top_p", in->top_p);
    if (in && (in->have & 4)) at[na++] = A_I("gen_ai.request.max_tokens", in->max_tokens);
    if (in && (in->have & 8)) at[na++] = A_I("gen_ai.request.n", in->n);
    long long recv = int_of(t, v, "recv_token_size", &ok);
    if (ok) at[na++] = A_I("gen_ai.usage.prompt_tokens", recv);
    long long reply = int_of(t, v, "reply_token_size", &ok);
    if (ok) at[na++] = A_I("gen_ai.usage.completion_tokens", reply);
    if (wait >= 0) at[na++] = A_D("gen_ai.latency.time_in_queue", wait / 1e9);
    if (ttft >= 0) at[na++] = A_D("gen_ai.latency.time_to_first_token", ttft / 1e9);
    if (e2e >= 0) at[na++] = A_D("gen_ai.latency.e2e", e2e / 1e9);
    if (prefill >= 0) at[na++] = A_D("gen_ai.latency.time_in_model_prefill", prefill / 1e9);
    if (decode >= 0) at[na++] = A_D("gen_ai.latency.time_in_model_decode", decode / 1e9);
    if (in && in->sched_ns) at[na++] = A_D("gen_ai.latency.time_in_scheduler", in->sched_ns / 1e9);
    if (in && in->fwd_ns) at[na++] = A_D("gen_ai.latency.time_in_model_forward", in->fwd_ns / 1e9);
    if (in && in->exec_ns) at[na++] = A_D("gen_ai.latency.time_in_model_execute", in->exec_ns / 1e9);
    const char *outcome = in ? in->outcome : "";
    if (outcome[0]) at[na++] = A_S("servprof.outcome", outcome);
    long long pre = int_of(t, v, "preempted", &ok);
    if (ok && pre) at[na++] = A_I("servprof.preemptions", pre);
    int bad = failed_outcome(outcome);
    sp_otlp_attr evat[1] = {A_S("servprof.outcome", outcome)};
    sp_otlp_event ev = {.time_ns = start + (e2e > 0 ? e2e : 0), .name = "error", .attrs = evat, .nattrs = 1};
    s.name = "llm_request";
    s.kind = SP_OTLP_KIND_SERVER;
    s.start_ns = start;
    s.end_ns = start + (e2e > 0 ? e2e : 0);
    s.attrs = at;
    s.nattrs = na;
    s.events = bad ? &ev : NULL;
    s.nevents = bad;
    s.status = bad ? SP_OTLP_STATUS_ERROR : SP_OTLP_STATUS_UNSET;
    s.status_msg = bad ? outcome : NULL;
    s.flags = 1 | 0x100 | (s.has_parent ? 0x200 : 0);
    sp_otlp_buf_reset(&x->span);
    sp_otlp_span_encode(&x->span, &s);
    push(x);
    if (in && in->first_enq && in->first_sched)
        child(x, &s, rid, seed, SP_PH_QUEUE, "queue", in->first_enq, in->first_sched);
    if (ttft >= 0) {
        int64_t ft = start + ttft;
        if (prefill >= 0)
            child(x, &s, rid, seed, SP_PH_PREFILL, "prefill", ft - prefill, ft);
        if (decode >= 0)
            child(x, &s, rid, seed, SP_PH_DECODE, "decode", ft, ft + decode);
    }
    if (in)
        drop(x, in);
}

/* ---- life --------------------------------------------------------------------- */

static void ox_close(void *mv)
{
    ox *x = mv;
    if (!x)
        return;
    for (int b = 0; b < HASH; b++)
        while (x->bucket[b])
            drop(x, x->bucket[b]);
    for (int i = 0; i < x->n; i++)
        free(x->spans[i]);
    free(x->spans);
    free(x->lens);
    sp_otlp_buf_free(&x->span);
    sp_otlp_buf_free(&x->body);
    if (x->hdrs)
        curl_slist_free_all(x->hdrs);
    if (x->h)
        curl_easy_cleanup(x->h);
    free(x);
}

static void *ox_open(const exp_opts *o, char *err, size_t errcap)
{
    const char *u = o->url;
    int tls = !strncmp(u, "otlp+https://", 13);
    const char *rest = u + (tls ? 13 : 12);
    if (!*rest || *rest == '/') {
        snprintf(err, errcap, "%s: no HOST:PORT after the scheme (otlp+http://HOST:PORT[/path])", u);
        return NULL;
    }
    ox *x = calloc(1, sizeof *x);
    if (!x || !(x->spans = calloc(BATCH, sizeof *x->spans)) || !(x->lens = calloc(BATCH, sizeof *x->lens))) {
        ox_close(x);
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    x->o = o;
    snprintf(x->url, sizeof x->url, "%s://%s%s", tls ? "https" : "http", rest,
             strchr(rest, '/') ? "" : "/v1/traces");
    const char *svc = getenv("OTEL_SERVICE_NAME");
    snprintf(x->service, sizeof x->service, "%s", svc && *svc ? svc : "servprof-replay");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    x->h = curl_easy_init();
    if (!x->h) {
        ox_close(x);
        snprintf(err, errcap, "cannot start libcurl");
        return NULL;
    }
    x->hdrs = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
    x->hdrs = curl_slist_append(x->hdrs, "Expect:");
    curl_easy_setopt(x->h, CURLOPT_URL, x->url);
    curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
    curl_easy_setopt(x->h, CURLOPT_POST, 1L);
    curl_easy_setopt(x->h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
    const char *ca = getenv("OTEL_EXPORTER_OTLP_CERTIFICATE");
    if (ca && *ca)
        curl_easy_setopt(x->h, CURLOPT_CAINFO, ca);
    clock_gettime(CLOCK_MONOTONIC, &x->t0);
    return x;
}

static int ox_finish(void *mv, int parse_rc)
{
    ox *x = mv;
    flush(x);
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - x->t0.tv_sec) + (double)(t1.tv_nsec - x->t0.tv_nsec) / 1e9;
    if (x->failed) {
        fprintf(stderr, "servprof export: %s; %lld spans of %lld requests were sent before it "
                "(a rerun sends them all again: the ids are the same, so the backend keeps one)\n",
                x->err, x->spans_sent, x->requests);
        return -1;
    }
    if (parse_rc && !x->requests) {
        fprintf(stderr, "servprof export: nothing sent to %s (the parse failed, above)\n", x->url);
        return -1;
    }
    printf("servprof export: %lld requests as %lld spans to %s in %lld POSTs (%lld retried), %.1f s%s\n",
           x->requests, x->spans_sent, x->url, x->posts, x->retries, s,
           parse_rc ? " (the parse reported problems above)" : "");
    return 0;
}

const exp_module exp_otlp_http = {"otlp+http", ox_open, ox_row, ox_record, ox_finish, ox_close, 0, NULL};
const exp_module exp_otlp_https = {"otlp+https", ox_open, ox_row, ox_record, ox_finish, ox_close, 0, NULL};
