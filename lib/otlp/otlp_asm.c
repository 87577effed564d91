/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_asm.c — folds records into one OTLP trace per request, live.
 *
 * DESIGN
 * Runs on the rings' consumer thread, beside the live metrics aggregate
 * (metrics_agg.c) and in the same way: each record is decoded once from the
 * ring's bytes (rec_format.h), keeping only what the spans need; requests in
 * flight have a state in the consumer's request-id table (ridtab.h); `Link {from, to}`
 * makes the two ids one state (the front end's id names it, as in the
 * reports). The figures are request.csv's (docs/parse.md), so a span and a
 * parsed row agree:
 *
 *   start        httpReq (else receiveReq, the PD instances' arrival)
 *   end          httpRes / DecodeEnd (front end), traceEnd (servprof_trace_end:
 *                a PD instance, which has no httpRes); the latest end is kept
 *   first token  the latest of: the ends of the steps that ran it with
 *                iter 0 (BatchSchedule, modelExec/Execute, forward; a
 *                schedule entry with num_scheduled_tokens 0 did not run),
 *                the end of its first detokenize/decode, of its first
 *                sendResponse
 *   queue        Σ (Dequeue − Enqueue) of WAITING; a re-enqueue after the
 *                first wait, or an Enqueue into SWAPPED, is a preemption
 *
 * A request is traced when it has a trace context (a `traceContext` record,
 * written by servprof_trace_context()) or the settings make one for it
 * (auto trace); the sampling decision is taken at its end (error-only needs
 * the outcome). Its spans — llm_request (SERVER) and the phase children —
 * are encoded at once and pushed into the exporter's queue; the state goes.
 * As in metrics_agg.c an end is acted on after the next whole pass, because
 * the request's records on other threads' rings may come later in the pass.
 *
 * Span-halves (span_begin … span_end) that name requests are kept in a small
 * table by span id until their end (the begin has the rid list, the end the
 * time). Memory is bounded: MAX_REQUESTS states, MAX_OPEN open halves; a
 * state that cannot be made, or that sees nothing for MAX_AGE_NS, is counted
 * SP_OC_DROP_UNTRACKED when it had a trace context.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "msgdec.h"
#include "otlp.h"
#include "otlp_ctx.h"
#include "ridtab.h"

#define MAX_REQUESTS 65536
#define MAX_OPEN 4096
#define MAX_AGE_NS (1800 * 1000000000LL)
#define MAX_RIDS 1024  /* entries of one step's rid list read */
#define MAX_PREEMPT 16 /* preemption events kept per request */
#define OUTCOME_LEN 32
#define STATE_LEN 256

typedef struct req {
    sp_ridtab_ent e; /* first: the table's link, canon, aliases, touch */
    struct req *done_next;
    int64_t seen, start, end, first_enq, first_sched, iter0_end, tok_end, send_end;
    int64_t wait_since, wait_sum, sched_ns, exec_ns, fwd_ns, handoff0, handoff1;
    int64_t preempt_ts[MAX_PREEMPT];
    int npreempt, nwait, has_ctx, has_start_rec;
    double recv, reply, temperature, top_p, max_tokens, n;
    unsigned have; /* H_* bits: which of the doubles above were recorded */
    sp_tc ctx;
    char trace_state[STATE_LEN];
    char outcome[OUTCOME_LEN];
    char ctx_rid[128]; /* the id the context was given for: span ids derive from it */
    size_t ctx_ridl;
    uint64_t end_pass;
    char id[];
} req;

enum { H_RECV = 1, H_REPLY = 2, H_TEMP = 4, H_TOPP = 8, H_MAXTOK = 16, H_N = 32 };

typedef struct open_span {
    uint64_t id;
    int64_t start;
    int kind; /* K_* of its name */
    int nrid;
    struct { char *rid; size_t l; int iter0; } *rids;
    struct open_span *next;
} open_span;

static struct {
    sp_otlp_conf c;
    uint64_t seed;
    sp_ridtab t; /* requests in flight */
    uint64_t pass;
    req *done;
    open_span *open;
    int nopen;
    int64_t last_sweep;
    sp_otlp_buf buf;
} A;

/* ---- decoding ------------------------------------------------------ */

enum { K_NONE, K_HTTPREQ, K_END, K_SENDRESP, K_TOKEN, K_ENQ, K_DEQ, K_SCHED, K_EXEC, K_FWD,
       K_CTX, K_RECVREQ, K_PDEND, K_TOD, K_TODSUCC };

typedef struct rident {
    const char *rid;
    size_t l;
    int64_t iter, type;
    double tokens;
    char buf[24];
} rident;

typedef struct view {
    const char *rid, *outcome, *status, *queue, *tp, *ts_state, *model;
    size_t ridl, ol, sl, ql, tpl, tsl;
    char ridbuf[24];
    int has_recv, has_reply, has_temp, has_topp, has_maxtok, has_n;
    double recv, reply, temp, topp, maxtok, n;
    const char *mname;   /* the drop-in's message named the record (take) */
    size_t mnl;
    int mtype;           /* the message's "type" (3: a Link), -1 none */
    const char *from, *to; /* a message-form Link's ids */
    size_t froml, tol;
    int nrid;
    rident e[MAX_RIDS];
} view;

typedef struct cur { const uint8_t *p, *end; int bad; } cur;

static const uint8_t *take(cur *c, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = 1;
        c->p = c->end;
        return NULL;
    }
    const uint8_t *q = c->p;
    c->p += n;
    return q;
}

static const char *take_str(cur *c, size_t *n)
{
    const uint8_t *q = take(c, 2);
    uint16_t len = 0;
    if (q)
        memcpy(&len, q, 2);
    const char *s = (const char *)take(c, len);
    *n = s ? len : 0;
    return s ? s : "";
}

static void take8(cur *c, void *out)
{
    const uint8_t *q = take(c, 8);
    if (q)
        memcpy(out, q, 8);
    else
        memset(out, 0, 8);
}

#define IS(k, kn, lit) ((kn) == sizeof(lit) - 1 && !memcmp((k), (lit), sizeof(lit) - 1))

static void top_number(view *v, int tag, const char *k, size_t kn, double x)
{
    if (IS(k, kn, "recvTokenSize")) v->recv = x, v->has_recv = 1;
    else if (IS(k, kn, "replyTokenSize")) v->reply = x, v->has_reply = 1;
    else if (tag == SP_TAG_GAUGE) return;
    else if (IS(k, kn, "temperature")) v->temp = x, v->has_temp = 1;
    else if (IS(k, kn, "top_p")) v->topp = x, v->has_topp = 1;
    else if (IS(k, kn, "max_tokens")) v->maxtok = x, v->has_maxtok = 1;
    else if (IS(k, kn, "n")) v->n = x, v->has_n = 1;
}

/* Members of one rid-list entry (depth 2 inside the top-level "rid" array). */
static void entry_field(view *v, const char *k, size_t kn, int tag, const char *s, size_t sl, double x)
{
    if (!v->nrid)
        return;
    rident *e = &v->e[v->nrid - 1];
    if (IS(k, kn, "rid")) {
        if (tag == SP_TAG_STR) {
            e->rid = s;
            e->l = sl;
        } else {
            int n = snprintf(e->buf, sizeof e->buf, "%lld", (long long)x);
            e->rid = e->buf;
            e->l = (size_t)n;
        }
    } else if (IS(k, kn, "iter")) {
        e->iter = (int64_t)x;
    } else if (IS(k, kn, "type")) {
        e->type = (int64_t)x;
    } else if (IS(k, kn, "num_scheduled_tokens")) {
        e->tokens = x;
    }
}

/* ---- the drop-in's message-form records ------------------------------ */

/* libms_service_profiler.so (dropin/) copies the reference API's message
 * text into the record (SP_TAG_MSG) as given. It is decoded here with the
 * writer's own decoder (msgdec.c: JSON or the legacy ^key^ form, both
 * normalized to args members) and read with jansson into the same view a
 * native record fills: keys carry the reference's kind marks ("k=" gauge,
 * "k+" increment, "scope#k" scope), as the stored args do. The strings
 * point into M.root, kept until the next message. Consumer thread only. */
static struct {
    sp_msg m;
    sp_sbuf members, text;
    json_t *root;
} M;

static void msg_rid(const char **s, size_t *l, char *buf, size_t bl, json_t *x)
{
    if (json_is_string(x)) {
        *s = json_string_value(x);
        *l = json_string_length(x);
    } else if (json_is_integer(x)) {
        int n = snprintf(buf, bl, "%lld", (long long)json_integer_value(x));
        *s = buf;
        *l = (size_t)n;
    }
}

static void msg_view(view *v, const char *text, size_t n, int take)
{
    json_decref(M.root);
    M.root = NULL;
    sp_msg_reset(&M.m);
    M.m.take = take;
    sp_sb_clear(&M.members);
    sp_msg_decode(&M.m, &M.members, text, n);
    sp_sb_clear(&M.text);
    sp_sb_put(&M.text, "{", 1);
    if (M.members.len > 1)
        sp_sb_put(&M.text, M.members.p + 1, M.members.len - 1); /* ",k:v,..." less its comma */
    sp_sb_put(&M.text, "}", 1);
    if (M.members.oom || M.text.oom)
        return;
    M.root = json_loadb(M.text.p, M.text.len, 0, NULL);
    if (!json_is_object(M.root))
        return;
    if (take && M.m.has_name && M.m.name.len) {
        v->mname = M.m.name.p;
        v->mnl = M.m.name.len;
    }
    v->mtype = M.m.type;
    const char *k;
    json_t *x;
    json_object_foreach(M.root, k, x) {
        size_t kn = strlen(k);
        if (json_is_string(x)) {
            const char *sv = json_string_value(x);
            size_t sl = json_string_length(x);
            if (IS(k, kn, "rid")) v->rid = sv, v->ridl = sl;
            else if (IS(k, kn, "outcome")) v->outcome = sv, v->ol = sl;
            else if (IS(k, kn, "status")) v->status = sv, v->sl = sl;
            else if (IS(k, kn, "traceparent")) v->tp = sv, v->tpl = sl;
            else if (IS(k, kn, "tracestate")) v->ts_state = sv, v->tsl = sl;
            else if (IS(k, kn, "scope#QueueName")) v->queue = sv, v->ql = sl;
            else if (IS(k, kn, "from")) v->from = sv, v->froml = sl;
            else if (IS(k, kn, "to")) v->to = sv, v->tol = sl;
        } else if (json_is_number(x)) {
            int tag = SP_TAG_DOUBLE;
            if (kn > 1 && (k[kn - 1] == '=' || k[kn - 1] == '+'))
                tag = k[--kn] == '=' ? SP_TAG_GAUGE : SP_TAG_INC;
            if (IS(k, kn, "rid"))
                msg_rid(&v->rid, &v->ridl, v->ridbuf, sizeof v->ridbuf, x);
            else
                top_number(v, tag, k, kn, json_number_value(x));
        } else if (json_is_array(x) && IS(k, kn, "rid")) {
            size_t i;
            json_t *o;
            json_array_foreach(x, i, o) {
                if (!json_is_object(o) || v->nrid >= MAX_RIDS)
                    continue;
                rident *e = &v->e[v->nrid++];
                e->rid = NULL;
                e->l = 0;
                e->iter = -1;
                e->type = -1;
                e->tokens = NAN;
                msg_rid(&e->rid, &e->l, e->buf, sizeof e->buf, json_object_get(o, "rid"));
                json_t *f;
                if ((f = json_object_get(o, "iter")) && json_is_number(f))
                    e->iter = (int64_t)json_number_value(f);
                if ((f = json_object_get(o, "type")) && json_is_number(f))
                    e->type = (int64_t)json_number_value(f);
                if ((f = json_object_get(o, "num_scheduled_tokens")) && json_is_number(f))
                    e->tokens = json_number_value(f);
            }
        }
    }
}

static void decode_attrs(view *v, cur *c)
{
    int depth = 0, rid_array = 0;
    for (;;) {
        const uint8_t *t = take(c, 1);
        if (!t || *t == SP_TAG_STOP)
            return;
        int tag = *t;
        if (tag == SP_TAG_END) {
            if (depth > 0 && --depth == 0)
                rid_array = 0;
            continue;
        }
        size_t kn;
        const char *k = take_str(c, &kn);
        int in_entry = depth == 2 && rid_array;
        switch (tag) {
        case SP_TAG_STR:
        case SP_TAG_SCOPE:
        case SP_TAG_JSON:
        case SP_TAG_MSG: {
            size_t n;
            const char *s = take_str(c, &n);
            if (tag == SP_TAG_MSG && !depth && !c->bad) {
                msg_view(v, s, n, kn > 0 && k[0] == 'x');
                break;
            }
            if (in_entry && tag == SP_TAG_STR) {
                entry_field(v, k, kn, tag, s, n, 0);
                break;
            }
            if (depth)
                break;
            if (tag == SP_TAG_STR && IS(k, kn, "rid")) v->rid = s, v->ridl = n;
            else if (tag == SP_TAG_STR && IS(k, kn, "outcome")) v->outcome = s, v->ol = n;
            else if (tag == SP_TAG_STR && IS(k, kn, "status")) v->status = s, v->sl = n;
            else if (tag == SP_TAG_STR && IS(k, kn, "traceparent")) v->tp = s, v->tpl = n;
            else if (tag == SP_TAG_STR && IS(k, kn, "tracestate")) v->ts_state = s, v->tsl = n;
            else if (tag == SP_TAG_SCOPE && IS(k, kn, "QueueName")) v->queue = s, v->ql = n;
            break;
        }
        case SP_TAG_INT: {
            int64_t x;
            take8(c, &x);
            if (in_entry)
                entry_field(v, k, kn, tag, NULL, 0, (double)x);
            else if (depth == 0 && IS(k, kn, "rid")) {
                int n = snprintf(v->ridbuf, sizeof v->ridbuf, "%lld", (long long)x);
                v->rid = v->ridbuf;
                v->ridl = (size_t)n;
            } else if (depth == 0)
                top_number(v, tag, k, kn, (double)x);
            break;
        }
        case SP_TAG_DOUBLE:
        case SP_TAG_GAUGE:
        case SP_TAG_INC: {
            double x;
            take8(c, &x);
            if (in_entry)
                entry_field(v, k, kn, tag, NULL, 0, x);
            else if (depth == 0)
                top_number(v, tag, k, kn, x);
            break;
        }
        case SP_TAG_BOOL:
            take(c, 1);
            break;
        case SP_TAG_INT_ARR:
        case SP_TAG_DBL_ARR: {
            const uint8_t *q = take(c, 4);
            uint32_t cnt = 0;
            if (q)
                memcpy(&cnt, q, 4);
            take(c, (size_t)cnt * 8);
            break;
        }
        case SP_TAG_ARR:
        case SP_TAG_OBJ:
            if (depth == 0 && tag == SP_TAG_ARR && IS(k, kn, "rid"))
                rid_array = 1;
            else if (depth == 1 && rid_array && tag == SP_TAG_OBJ && v->nrid < MAX_RIDS) {
                rident *e = &v->e[v->nrid++];
                e->rid = NULL;
                e->l = 0;
                e->iter = -1;
                e->type = -1;
                e->tokens = NAN;
            }
            depth++;
            break;
        default:
            c->bad = 1;
        }
        if (c->bad)
            return;
    }
}

static int kind_of(const char *n, size_t nl)
{
    if (IS(n, nl, "httpReq")) return K_HTTPREQ;
    if (IS(n, nl, "httpRes") || IS(n, nl, "DecodeEnd")) return K_END;
    if (IS(n, nl, "sendResponse")) return K_SENDRESP;
    if (IS(n, nl, "detokenize") || IS(n, nl, "decode")) return K_TOKEN;
    if (IS(n, nl, "Enqueue")) return K_ENQ;
    if (IS(n, nl, "Dequeue")) return K_DEQ;
    if (IS(n, nl, "BatchSchedule") || IS(n, nl, "batchFrameworkProcessing")) return K_SCHED;
    if (IS(n, nl, "modelExec") || IS(n, nl, "modelRunnerExec") || IS(n, nl, "Execute")) return K_EXEC;
    if (IS(n, nl, "forward")) return K_FWD;
    if (IS(n, nl, "traceContext")) return K_CTX;
    if (IS(n, nl, "receiveReq")) return K_RECVREQ;
    if (IS(n, nl, "traceEnd")) return K_PDEND;
    if (IS(n, nl, "sendReqToD")) return K_TOD;
    if (IS(n, nl, "sendReqToDSucc")) return K_TODSUCC;
    return K_NONE;
}

/* ---- request states (as metrics_agg.c) ------------------------------ */

static req *create(const char *id, size_t n, uint32_t h, int64_t ts)
{
    req *r = A.t.n < MAX_REQUESTS
                 ? (req *)sp_ridtab_add(&A.t, id, n, h, offsetof(req, id), ts) : NULL;
    if (r) /* else counted when its context or end shows it mattered */
        r->seen = ts;
    return r;
}

static req *state(const char *id, size_t n, int64_t ts, int make)
{
    if (!id || !n)
        return NULL;
    uint32_t h = sp_ridtab_hash(id, n); /* once, for the lookup and the add */
    req *r = (req *)sp_ridtab_lookup(&A.t, id, n, h, ts);
    if (!r && make)
        r = create(id, n, h, ts);
    return r;
}

static int64_t min_set(int64_t a, int64_t b) { return !a ? b : !b ? a : (a < b ? a : b); }
static int64_t max_set(int64_t a, int64_t b) { return a > b ? a : b; }

/* Link {from, to}: one request. The state that names it is from's (the
 * front end's id, upstream); to's figures join it. */
static void link_ids(const char *from, size_t fl, const char *to, size_t tl, int64_t ts)
{
    req *f = state(from, fl, ts, 1);
    req *t = state(to, tl, ts, 1);
    if (!t || !f || f == t)
        return;
    f->start = min_set(f->start, t->start);
    f->seen = min_set(f->seen, t->seen);
    f->first_enq = min_set(f->first_enq, t->first_enq);
    f->first_sched = min_set(f->first_sched, t->first_sched);
    f->iter0_end = max_set(f->iter0_end, t->iter0_end);
    f->tok_end = min_set(f->tok_end, t->tok_end);
    f->send_end = min_set(f->send_end, t->send_end);
    f->end = max_set(f->end, t->end);
    f->wait_sum += t->wait_sum;
    f->nwait += t->nwait;
    if (!f->wait_since)
        f->wait_since = t->wait_since;
    f->sched_ns += t->sched_ns;
    f->exec_ns += t->exec_ns;
    f->fwd_ns += t->fwd_ns;
    f->handoff0 = min_set(f->handoff0, t->handoff0);
    f->handoff1 = max_set(f->handoff1, t->handoff1);
    for (int i = 0; i < t->npreempt && f->npreempt < MAX_PREEMPT; i++)
        f->preempt_ts[f->npreempt++] = t->preempt_ts[i];
    if (!f->has_ctx && t->has_ctx) {
        f->has_ctx = 1;
        f->ctx = t->ctx;
        memcpy(f->trace_state, t->trace_state, STATE_LEN);
        memcpy(f->ctx_rid, t->ctx_rid, sizeof f->ctx_rid);
        f->ctx_ridl = t->ctx_ridl;
    }
    if (!f->outcome[0])
        memcpy(f->outcome, t->outcome, OUTCOME_LEN);
    f->have |= t->have;
    if (t->have & H_RECV) f->recv = t->recv;
    if (t->have & H_REPLY) f->reply = t->reply;
    if ((t->have & H_TEMP) && !(f->have & H_TEMP)) f->temperature = t->temperature;
    f->has_start_rec |= t->has_start_rec;
    if (t->end_pass && !f->end_pass) {
        /* to's end was queued: from takes its place on the done list */
        for (req **pp = &A.done; *pp; pp = &(*pp)->done_next)
            if (*pp == t) {
                *pp = t->done_next;
                break;
            }
        f->end_pass = t->end_pass;
        f->done_next = A.done;
        A.done = f;
    } else if (t->end_pass) {
        for (req **pp = &A.done; *pp; pp = &(*pp)->done_next)
            if (*pp == t) {
                *pp = t->done_next;
                break;
            }
    }
    t->end_pass = 0;
    /* t, its aliases, become f's aliases. */
    sp_ridtab_alias(&A.t, &f->e, &t->e);
}

/* ---- the spans ------------------------------------------------------- */

static int failed(const req *r)
{
    const char *o = r->outcome;
    if (!o[0])
        return 0; /* no outcome recorded: not known to have failed */
    static const char *const ok[] = {"ok", "OK", "success", "finished", "stop", "length", "200"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(o, ok[i]))
            return 0;
    return 1;
}

/* The sampling decision for an ended request (otlp_conf.c reads the rules). */
static int sampled(const req *r)
{
    const sp_otlp_conf *c = &A.c;
    int yes;
    int parentbased = c->sampler >= SP_SMP_PB_ALWAYS_ON;
    if (r->has_ctx && parentbased) {
        yes = r->ctx.flags & 1;
    } else {
        int root = c->sampler == SP_SMP_ALWAYS_OFF || c->sampler == SP_SMP_PB_ALWAYS_OFF ? 0 : 1;
        double ratio = c->sampler == SP_SMP_RATIO || c->sampler == SP_SMP_PB_RATIO ? c->ratio : 1;
        if (!r->has_ctx && c->sample_rate_n > 0 && 1.0 / c->sample_rate_n < ratio)
            ratio = 1.0 / c->sample_rate_n;
        yes = root && sp_tc_ratio_sampled(r->ctx.trace_id, ratio);
    }
    if (yes && c->error_only)
        yes = failed(r);
    return yes;
}

static double secs(int64_t ns) { return (double)ns / 1e9; }

static int64_t first_token(const req *r)
{
    int64_t t = r->iter0_end;
    if (r->tok_end > t) t = r->tok_end;
    if (r->send_end > t) t = r->send_end;
    return t;
}

static void emit(const sp_otlp_span *s)
{
    if (sp_otlp_export_full()) { /* a stalled collector: the drop costs no encoding */
        sp_otlp_count(SP_OC_DROP_QUEUE_FULL, 1);
        return;
    }
    sp_otlp_buf_reset(&A.buf);
    sp_otlp_span_encode(&A.buf, s);
    if (A.buf.oom) {
        sp_otlp_count(SP_OC_DROP_ENCODE, 1);
        return;
    }
    sp_otlp_export_push(A.buf.p, A.buf.len);
}

static void child(const req *r, int ph, const char *name, int64_t t0, int64_t t1, const uint8_t parent[8])
{
    if (!t0 || !t1 || t1 < t0)
        return;
    sp_otlp_span s;
    memset(&s, 0, sizeof s);
    memcpy(s.trace_id, r->ctx.trace_id, 16);
    sp_tc_span_id(A.seed, r->ctx.trace_id, r->ctx_rid, r->ctx_ridl, ph, s.span_id);
    memcpy(s.parent_id, parent, 8);
    s.has_parent = 1;
    s.trace_state = r->trace_state;
    s.name = name;
    s.kind = SP_OTLP_KIND_INTERNAL;
    s.start_ns = t0;
    s.end_ns = t1;
    s.flags = 1 | 0x100; /* sampled; parent is local */
    emit(&s);
}

#define ATTR_D(k, v) (sp_otlp_attr){.key = (k), .type = SP_OTLP_DOUBLE, .d = (v)}
#define ATTR_I(k, v) (sp_otlp_attr){.key = (k), .type = SP_OTLP_INT, .i = (int64_t)(v)}
#define ATTR_S(k, v) (sp_otlp_attr){.key = (k), .type = SP_OTLP_STR, .s = (v)}

static char model_name[128]; /* consumer thread: from Meta model_name (otlp.c sets it) */

void sp_otlp_asm_set_model(const char *m);
void sp_otlp_asm_set_model(const char *m)
{
    snprintf(model_name, sizeof model_name, "%s", m ? m : "");
}

static void finish(req *r)
{
    sp_otlp_count(SP_OC_REQUESTS, 1);
    if (!r->has_ctx) {
        if (!A.c.auto_trace) {
            sp_otlp_count(SP_OC_UNSAMPLED, 1);
            return;
        }
        sp_tc_auto_trace_id(A.seed, r->id, r->e.idl, r->ctx.trace_id);
        r->ctx.flags = 1;
        r->ctx_ridl = r->e.idl < sizeof r->ctx_rid ? r->e.idl : sizeof r->ctx_rid;
        memcpy(r->ctx_rid, r->id, r->ctx_ridl);
    }
    if (!sampled(r)) {
        sp_otlp_count(SP_OC_UNSAMPLED, 1);
        return;
    }
    int64_t start = r->start ? r->start : r->seen; /* no httpReq: its first record */
    int64_t end = r->end ? r->end : r->e.touch;
    int64_t ft = first_token(r);
    char id[256];
    snprintf(id, sizeof id, "%.*s", (int)r->e.idl, r->id);

    sp_otlp_attr at[24];
    int na = 0;
    at[na++] = ATTR_S("gen_ai.request.id", id);
    if (model_name[0])
        at[na++] = ATTR_S("gen_ai.response.model", model_name);
    if (r->have & H_TEMP) at[na++] = ATTR_D("gen_ai.request.temperature", r->temperature);
    if (r->have & H_TOPP) at[na++] = ATTR_D("gen_ai.request.top_p", r->top_p);
    if (r->have & H_MAXTOK) at[na++] = ATTR_I("gen_ai.request.max_tokens", r->max_tokens);
    if (r->have & H_N) at[na++] = ATTR_I("gen_ai.request.n", r->n);
    if (r->have & H_RECV) at[na++] = ATTR_I("gen_ai.usage.prompt_tokens", r->recv);
    if (r->have & H_REPLY) at[na++] = ATTR_I("gen_ai.usage.completion_tokens", r->reply);
    if (r->nwait) at[na++] = ATTR_D("gen_ai.latency.time_in_queue", secs(r->wait_sum));
    if (ft && r->start) at[na++] = ATTR_D("gen_ai.latency.time_to_first_token", secs(ft - r->start));
    if (r->start && r->end) at[na++] = ATTR_D("gen_ai.latency.e2e", secs(r->end - r->start));
    if (r->sched_ns) at[na++] = ATTR_D("gen_ai.latency.time_in_scheduler", secs(r->sched_ns));
    if (r->fwd_ns) at[na++] = ATTR_D("gen_ai.latency.time_in_model_forward", secs(r->fwd_ns));
    if (r->exec_ns) at[na++] = ATTR_D("gen_ai.latency.time_in_model_execute", secs(r->exec_ns));
    if (ft && r->first_sched && ft >= r->first_sched)
        at[na++] = ATTR_D("gen_ai.latency.time_in_model_prefill", secs(ft - r->first_sched));
    if (ft && r->end && r->end >= ft)
        at[na++] = ATTR_D("gen_ai.latency.time_in_model_decode", secs(r->end - ft));
    if (r->outcome[0]) at[na++] = ATTR_S("servprof.outcome", r->outcome);
    if (r->npreempt) at[na++] = ATTR_I("servprof.preemptions", r->npreempt);
    if (!r->has_start_rec) at[na++] = (sp_otlp_attr){.key = "servprof.complete", .type = SP_OTLP_BOOL, .i = 0};

    sp_otlp_event ev[MAX_PREEMPT + 1];
    sp_otlp_attr evat[1];
    int ne = 0;
    for (int i = 0; i < r->npreempt; i++)
        ev[ne++] = (sp_otlp_event){.time_ns = r->preempt_ts[i], .name = "preemption"};
    int bad = failed(r);
    if (bad) {
        evat[0] = ATTR_S("servprof.outcome", r->outcome);
        ev[ne++] = (sp_otlp_event){.time_ns = end, .name = "error", .attrs = evat, .nattrs = 1};
    }
    sp_otlp_span s;
    memset(&s, 0, sizeof s);
    memcpy(s.trace_id, r->ctx.trace_id, 16);
    sp_tc_span_id(A.seed, r->ctx.trace_id, r->ctx_rid, r->ctx_ridl, SP_PH_SERVER, s.span_id);
    if (r->has_ctx && r->ctx.has_parent) {
        memcpy(s.parent_id, r->ctx.parent_id, 8);
        s.has_parent = 1;
    }
    s.trace_state = r->trace_state;
    s.name = "llm_request";
    s.kind = SP_OTLP_KIND_SERVER;
    s.start_ns = start;
    s.end_ns = end > start ? end : start;
    s.attrs = at;
    s.nattrs = na;
    s.events = ev;
    s.nevents = ne;
    s.status = bad ? SP_OTLP_STATUS_ERROR : SP_OTLP_STATUS_UNSET;
    s.status_msg = bad ? r->outcome : NULL;
    s.flags = 1 | 0x100 | (s.has_parent ? 0x200 : 0); /* sampled; parent remote when given */
    emit(&s);
    child(r, SP_PH_QUEUE, "queue", r->first_enq, r->first_sched, s.span_id);
    child(r, SP_PH_PREFILL, "prefill", r->first_sched, ft, s.span_id);
    child(r, SP_PH_DECODE, "decode", ft, r->end, s.span_id);
    child(r, SP_PH_HANDOFF, "pd_handoff", r->handoff0, r->handoff1, s.span_id);
}

/* ---- records --------------------------------------------------------- */

static void on_end(req *r, const view *v, int64_t ts)
{
    r->end = max_set(r->end, ts);
    if (v->outcome && v->ol)
        snprintf(r->outcome, OUTCOME_LEN, "%.*s", (int)v->ol, v->outcome);
    else if (v->status && v->sl && !r->outcome[0])
        snprintf(r->outcome, OUTCOME_LEN, "%.*s", (int)v->sl, v->status);
    if (!r->end_pass) {
        r->end_pass = A.pass + 1;
        r->done_next = A.done;
        A.done = r;
    }
}

static int queue_is(const view *v, const char *q)
{
    size_t n = strlen(q);
    if (!v->queue)
        return !strcmp(q, "WAITING");
    return v->ql == n && !memcmp(v->queue, q, n);
}

static void on_step_req(req *r, int k, int64_t t0, int64_t t1, int iter0_ran)
{
    if (!r->first_sched || t0 < r->first_sched)
        r->first_sched = min_set(r->first_sched, t0);
    if (iter0_ran)
        r->iter0_end = max_set(r->iter0_end, t1);
    int64_t d = t1 > t0 ? t1 - t0 : 0;
    if (k == K_SCHED) r->sched_ns += d;
    else if (k == K_EXEC) r->exec_ns += d;
    else r->fwd_ns += d;
}

static void on_step(const view *v, int k, int64_t t0, int64_t t1)
{
    for (int i = 0; i < v->nrid; i++) {
        req *r = state(v->e[i].rid, v->e[i].l, t1, 0);
        if (!r)
            continue;
        int ran = k != K_SCHED || isnan(v->e[i].tokens) || v->e[i].tokens > 0;
        on_step_req(r, k, t0, t1, v->e[i].iter == 0 && ran);
    }
    if (!v->nrid && v->rid) {
        req *r = state(v->rid, v->ridl, t1, 0);
        if (r)
            on_step_req(r, k, t0, t1, 0);
    }
}

static void open_push(const sp_rec_hdr *h, const view *v, int k)
{
    if (A.nopen >= MAX_OPEN || !v->nrid)
        return;
    open_span *o = calloc(1, sizeof *o);
    if (!o)
        return;
    o->rids = calloc((size_t)v->nrid, sizeof o->rids[0]);
    if (!o->rids) {
        free(o);
        return;
    }
    for (int i = 0; i < v->nrid; i++) {
        if (!v->e[i].rid)
            continue;
        char *s = malloc(v->e[i].l + 1);
        if (!s)
            break;
        memcpy(s, v->e[i].rid, v->e[i].l);
        s[v->e[i].l] = 0;
        int ran = k != K_SCHED || isnan(v->e[i].tokens) || v->e[i].tokens > 0;
        o->rids[o->nrid].rid = s;
        o->rids[o->nrid].l = v->e[i].l;
        o->rids[o->nrid].iter0 = v->e[i].iter == 0 && ran;
        o->nrid++;
    }
    o->id = h->span;
    o->start = h->ts;
    o->kind = k;
    o->next = A.open;
    A.open = o;
    A.nopen++;
}

static void open_free(open_span *o)
{
    for (int i = 0; i < o->nrid; i++)
        free(o->rids[i].rid);
    free(o->rids);
    free(o);
}

static void open_end(const sp_rec_hdr *h)
{
    for (open_span **pp = &A.open; *pp; pp = &(*pp)->next) {
        open_span *o = *pp;
        if (o->id != h->span)
            continue;
        *pp = o->next;
        A.nopen--;
        for (int i = 0; i < o->nrid; i++) {
            req *r = state(o->rids[i].rid, o->rids[i].l, h->ts, 0);
            if (r)
                on_step_req(r, o->kind, o->start, h->ts, o->rids[i].iter0);
        }
        open_free(o);
        return;
    }
}

static void on_ctx(const view *v, int64_t ts)
{
    req *r = state(v->rid, v->ridl, ts, 1);
    if (!r) {
        sp_otlp_count(SP_OC_DROP_UNTRACKED, 1);
        return;
    }
    char tp[128];
    snprintf(tp, sizeof tp, "%.*s", (int)v->tpl, v->tp ? v->tp : "");
    sp_tc t;
    if (sp_tc_parse(tp, &t, NULL) != 0)
        return; /* servprof_trace_context checked it; a store may hold anything */
    r->ctx = t;
    r->has_ctx = 1;
    /* the context comes with the request: its arrival where no httpReq says
     * it (a PD instance); an httpReq before or after still wins (min) */
    r->start = min_set(r->start, ts);
    r->has_start_rec = 1;
    r->ctx_ridl = v->ridl < sizeof r->ctx_rid ? v->ridl : sizeof r->ctx_rid;
    memcpy(r->ctx_rid, v->rid, r->ctx_ridl);
    snprintf(r->trace_state, STATE_LEN, "%.*s", (int)v->tsl, v->ts_state ? v->ts_state : "");
}

void sp_otlp_asm_record(const sp_rec_hdr *h, const uint8_t *rec, size_t len)
{
    static view v; /* consumer thread only; big (the rid list) */
    cur c = {rec + sizeof *h, rec + len, 0};
    memset(&v, 0, offsetof(view, e));
    v.mtype = -1;
    size_t dl;
    take_str(&c, &dl);
    decode_attrs(&v, &c);
    if (c.bad)
        return;
    if (h->kind == SP_REC_SPAN_END) {
        if (A.open)
            open_end(h);
        return;
    }
    if (h->kind == SP_REC_LINK) {
        size_t fl, tl;
        const char *f = take_str(&c, &fl);
        const char *t = take_str(&c, &tl);
        if (!c.bad)
            link_ids(f, fl, t, tl, h->ts);
        return;
    }
    size_t nl;
    const char *n = take_str(&c, &nl);
    if (v.mname) { /* a drop-in message that names its record */
        n = v.mname;
        nl = v.mnl;
    }
    if (h->kind == SP_REC_EVENT && (v.mtype == 3 || IS(n, nl, "Link")) && v.from && v.to) {
        link_ids(v.from, v.froml, v.to, v.tol, h->ts); /* the message API's Link */
        return;
    }
    int k = kind_of(n, nl);
    if (k == K_NONE)
        return;
    int64_t t0 = h->ts, t1 = h->kind == SP_REC_SPAN_AT ? h->ts2 : h->ts;
    if (k == K_SCHED || k == K_EXEC || k == K_FWD) {
        if (h->kind == SP_REC_SPAN_BEGIN)
            open_push(h, &v, k);
        else
            on_step(&v, k, t0, t1);
        return;
    }
    if (k == K_CTX) {
        on_ctx(&v, t0);
        return;
    }
    int make = k == K_HTTPREQ || k == K_RECVREQ || k == K_ENQ;
    req *r = state(v.rid, v.ridl, t0, make);
    if (!r)
        return;
    if (v.has_recv) r->recv = v.recv, r->have |= H_RECV;
    if (v.has_reply) r->reply = v.reply, r->have |= H_REPLY;
    switch (k) {
    case K_HTTPREQ:
    case K_RECVREQ:
        /* httpReq is the start (the earliest, as a trace context's arrival may be
         * earlier); receiveReq only where nothing earlier said it */
        if (k == K_HTTPREQ || !r->start)
            r->start = min_set(r->start, t0);
        r->has_start_rec = 1;
        if (v.has_temp) r->temperature = v.temp, r->have |= H_TEMP;
        if (v.has_topp) r->top_p = v.topp, r->have |= H_TOPP;
        if (v.has_maxtok) r->max_tokens = v.maxtok, r->have |= H_MAXTOK;
        if (v.has_n) r->n = v.n, r->have |= H_N;
        break;
    case K_END:
    case K_PDEND:
        on_end(r, &v, t1);
        break;
    case K_SENDRESP:
        if (!r->send_end)
            r->send_end = t1;
        break;
    case K_TOKEN:
        if (!r->tok_end)
            r->tok_end = t1;
        break;
    case K_ENQ:
        if (queue_is(&v, "WAITING")) {
            if (!r->wait_since) {
                if (r->nwait++ > 0 && r->npreempt < MAX_PREEMPT)
                    r->preempt_ts[r->npreempt++] = t0;
                r->wait_since = t0;
            }
            if (!r->first_enq)
                r->first_enq = t0;
        } else if (queue_is(&v, "SWAPPED") && r->npreempt < MAX_PREEMPT) {
            r->preempt_ts[r->npreempt++] = t0;
        }
        break;
    case K_DEQ:
        if (queue_is(&v, "WAITING") && r->wait_since) {
            r->wait_sum += t0 - r->wait_since;
            r->wait_since = 0;
            if (!r->first_sched)
                r->first_sched = t0;
        }
        break;
    case K_TOD:
        r->handoff0 = min_set(r->handoff0, t0);
        break;
    case K_TODSUCC:
        r->handoff1 = max_set(r->handoff1, t0);
        break;
    }
}

/* Stale unless its end is queued (finished after the pass). */
static int untracked(sp_ridtab_ent *e, void *arg)
{
    (void)arg;
    const req *r = (const req *)e;
    if (r->end_pass)
        return 0;
    if (r->has_ctx)
        sp_otlp_count(SP_OC_DROP_UNTRACKED, 1);
    return 1;
}

void sp_otlp_asm_pass_end(int64_t now_ns)
{
    req **pp = &A.done;
    while (*pp) {
        req *r = *pp;
        if (r->end_pass <= A.pass) {
            *pp = r->done_next;
            finish(r);
            sp_ridtab_drop(&A.t, &r->e);
        } else {
            pp = &r->done_next;
        }
    }
    A.pass++;
    if (now_ns - A.last_sweep < 10 * 1000000000LL)
        return;
    A.last_sweep = now_ns;
    sp_ridtab_sweep(&A.t, now_ns, MAX_AGE_NS, untracked, NULL);
}

void sp_otlp_asm_reset(const sp_otlp_conf *c, uint64_t seed)
{
    sp_otlp_asm_free(0);
    A.c = *c;
    A.seed = seed;
    A.last_sweep = sp_now_realtime_ns();
}

void sp_otlp_asm_free(int forget)
{
    if (!forget) {
        while (A.done) { /* the final pass was made: every end seen is final */
            req *r = A.done;
            A.done = r->done_next;
            finish(r);
            sp_ridtab_drop(&A.t, &r->e);
        }
        sp_ridtab_free(&A.t);
        while (A.open) {
            open_span *o = A.open;
            A.open = o->next;
            open_free(o);
        }
        sp_otlp_buf_free(&A.buf);
        json_decref(M.root);
        M.root = NULL;
        sp_msg_free(&M.m);
        sp_sb_free(&M.members);
        sp_sb_free(&M.text);
    }
    memset(&A, 0, sizeof A);
}
