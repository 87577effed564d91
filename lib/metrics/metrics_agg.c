/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_agg.c — folds records into one process's live metrics.
 *
 * DESIGN
 * Runs on the thread that consumes the thread buffers (the writer, or the
 * metrics drain thread while tracing is off), so it needs no lock of its
 * own and the serving threads pay nothing beyond copying their records.
 * Each record is decoded once, straight from the ring's bytes
 * (rec_format.h), keeping only the attributes the vocabulary gives metrics
 * meaning: rid, outcome (or status), QueueSize/QueueName, recvTokenSize/replyTokenSize,
 * the KV block counts, batch_size and the scheduled tokens of a step.
 *
 * Per-request metrics need the request's earlier times, so requests in
 * flight have a small state (start, first scheduling, first token, time
 * waited) in the consumer's request-id table (ridtab.h), keyed by id. `Link {from, to}` makes the
 * engine's id an alias of the front end's (as `servprof parse` does), so
 * httpReq/httpRes (front-end id) and Enqueue/Dequeue (engine id) meet in one
 * state. The state is dropped at httpRes, where every per-request histogram
 * is observed once (as vLLM observes at finish). Memory is bounded: at most
 * SP_MAGG_MAX_REQUESTS states; one that sees no record for
 * SP_MAGG_MAX_AGE_NS, or that cannot be created, is counted in
 * requests_untracked_total. Labels never carry an id.
 *
 * The formulas are those of docs/parse.md (request.csv, kvcache.csv,
 * request_status.csv), so a live graph and a parsed trace agree. The token
 * counts follow the parser's rule from the one header both include
 * (common/reqtokens.h): the last recvTokenSize/replyTokenSize on any record
 * naming the request, added to the counters when the request ends.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "reqtokens.h"
#include "ridtab.h"

#define SP_MAGG_MAX_REQUESTS 65536

typedef struct req {
    sp_ridtab_ent e;       /* first: the table's link, canon, aliases, touch */
    struct req *done_next; /* the list of ended states, observed after the next pass */
    int64_t start, sched, first, wait_since, wait_sum, end;
    double recv, reply;    /* token counts so far (reqtokens.h's rule); NAN unknown */
    uint64_t end_pass;     /* the pass its httpRes came in; 0 still running */
    int waits;
    char id[];
} req;

static struct {
    sp_mdata v;
    sp_ridtab t; /* requests in flight (t.ncanon of them) */
    uint64_t pass; /* passes over the rings so far (sp_magg_pass_end) */
    req *done;     /* ended states waiting for their observations */
} A;

/* ---- decoding ------------------------------------------------------ */

typedef struct view {
    const char *name, *rid, *outcome, *status, *queue, *from, *to;
    size_t nl, ridl, ol, sl, ql, fl, tl;
    char ridbuf[24];
    int has_qsize, has_recv, has_reply, has_bs, has_tokens, has_kv_total, has_kv_used,
        has_kv_free, has_kv_after, has_kv_usage;
    double qsize, recv, reply, kv_total, kv_used, kv_free, kv_after, kv_usage;
    int64_t bs, tokens, preemptions;
    int entries;        /* objects in a top-level "rid" array */
    double entry_tokens; /* their num_scheduled_tokens */
} view;

typedef struct cur {
    const uint8_t *p, *end;
    int bad;
} cur;

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

/* An 8-byte value (i64 or f64) into *out; zero past the end. */
static void take8(cur *c, void *out)
{
    const uint8_t *q = take(c, 8);
    if (q)
        memcpy(out, q, 8);
    else
        memset(out, 0, 8);
}

#define IS(k, kn, lit) ((kn) == sizeof(lit) - 1 && !memcmp((k), (lit), sizeof(lit) - 1))

/* A number at depth 0: the keys metrics read. */
static void top_number(view *v, int tag, const char *k, size_t kn, double x)
{
    if (tag == SP_TAG_GAUGE) {
        if (IS(k, kn, "QueueSize")) v->qsize = x, v->has_qsize = 1;
        else if (IS(k, kn, SP_TOKENS_RECV_KEY)) v->recv = x, v->has_recv = 1;
        else if (IS(k, kn, SP_TOKENS_REPLY_KEY)) v->reply = x, v->has_reply = 1;
        else if (IS(k, kn, "TotalBlocks")) v->kv_total = x, v->has_kv_total = 1;
        else if (IS(k, kn, "UsedBlocks")) v->kv_used = x, v->has_kv_used = 1;
        else if (IS(k, kn, "FreeBlocks")) v->kv_free = x, v->has_kv_free = 1;
        else if (IS(k, kn, "FreeBlocksAfter")) v->kv_after = x, v->has_kv_after = 1;
        else if (IS(k, kn, "UsagePercent")) v->kv_usage = x, v->has_kv_usage = 1;
        return;
    }
    if (IS(k, kn, "batch_size")) v->bs = (int64_t)x, v->has_bs = 1;
    else if (IS(k, kn, "total_scheduled_tokens")) v->tokens = (int64_t)x, v->has_tokens = 1;
    else if (IS(k, kn, "preemptions")) v->preemptions = (int64_t)x;
}

/* Walks the attribute stream (rec_format.h) up to its stop tag. */
static void decode_attrs(view *v, cur *c)
{
    int depth = 0, rid_array = 0; /* the depth-1 container is the "rid" array */
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
        switch (tag) {
        case SP_TAG_STR:
        case SP_TAG_SCOPE:
        case SP_TAG_JSON:
        case SP_TAG_MSG: { /* the drop-in's message text: skipped, not read (docs/metrics.md) */
            size_t n;
            const char *s = take_str(c, &n);
            if (depth)
                break;
            if (tag == SP_TAG_STR && IS(k, kn, "rid")) v->rid = s, v->ridl = n;
            else if (tag == SP_TAG_STR && IS(k, kn, "outcome")) v->outcome = s, v->ol = n;
            else if (tag == SP_TAG_STR && IS(k, kn, "status")) v->status = s, v->sl = n;
            else if (tag == SP_TAG_SCOPE && IS(k, kn, "QueueName")) v->queue = s, v->ql = n;
            break;
        }
        case SP_TAG_INT: {
            int64_t x;
            take8(c, &x);
            if (depth == 0 && IS(k, kn, "rid")) {
                int n = snprintf(v->ridbuf, sizeof v->ridbuf, "%lld", (long long)x);
                v->rid = v->ridbuf;
                v->ridl = (size_t)n;
            } else if (depth == 0) {
                top_number(v, tag, k, kn, (double)x);
            } else if (depth == 2 && rid_array && IS(k, kn, "num_scheduled_tokens")) {
                v->entry_tokens += (double)x;
            }
            break;
        }
        case SP_TAG_DOUBLE:
        case SP_TAG_GAUGE:
        case SP_TAG_INC: {
            double x;
            take8(c, &x);
            if (depth == 0)
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
            else if (depth == 1 && rid_array && tag == SP_TAG_OBJ)
                v->entries++;
            depth++;
            break;
        default:
            c->bad = 1;
        }
        if (c->bad)
            return;
    }
}

/* ---- request states ------------------------------------------------- */

static req *create(const char *id, size_t n, uint32_t h, int64_t ts)
{
    req *r = A.t.n < SP_MAGG_MAX_REQUESTS
                 ? (req *)sp_ridtab_add(&A.t, id, n, h, offsetof(req, id), ts) : NULL;
    if (!r) {
        A.v.counter[SP_MC_UNTRACKED]++;
        return NULL;
    }
    r->recv = r->reply = NAN;
    return r;
}

/* The state of this id (its canonical one), created when `make`. */
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

static int64_t min_set(int64_t a, int64_t b)
{
    return !a ? b : !b ? a : (a < b ? a : b);
}

/* Link {from, to}: from becomes an alias of to's state (parse.md: reports
 * name a request by the id linked to). */
static void link_ids(const view *v, int64_t ts)
{
    req *t = state(v->to, v->tl, ts, 1);
    req *f = state(v->from, v->fl, ts, 1);
    if (!t || !f || f == t)
        return;
    t->start = min_set(t->start, f->start);
    t->sched = min_set(t->sched, f->sched);
    t->first = min_set(t->first, f->first);
    t->wait_sum += f->wait_sum;
    t->waits += f->waits;
    sp_tokens_merge(&t->recv, f->recv);
    sp_tokens_merge(&t->reply, f->reply);
    if (!t->wait_since)
        t->wait_since = f->wait_since;
    sp_ridtab_alias(&A.t, &t->e, &f->e);
}

/* ---- observations --------------------------------------------------- */

static void observe(int h, double x)
{
    if (x < 0)
        return; /* clocks of two threads, or a record out of order: no sample */
    sp_mhist_data *d = &A.v.hist[h];
    d->count++;
    d->sum += x;
    d->b[sp_mhist_bucket(h, x)]++;
}

static void set_gauge(int g, double x)
{
    A.v.gauge[g] = x;
    A.v.gauge_set |= (uint64_t)1 << g;
}

static double secs(int64_t ns)
{
    return (double)ns / 1e9;
}

static void count_outcome(const char *s, size_t n)
{
    if (!s || !n) {
        s = "unknown";
        n = 7;
    }
    if (n >= SP_M_OUTCOME_LEN)
        n = SP_M_OUTCOME_LEN - 1;
    for (int i = 0; i < SP_M_OUTCOMES; i++) {
        char *o = A.v.outcome[i];
        if (!o[0]) {
            memcpy(o, s, n);
            o[n] = 0;
        }
        if (strlen(o) == n && !memcmp(o, s, n)) {
            A.v.outcome_n[i]++;
            return;
        }
    }
    A.v.other_outcomes++;
}

/* The per-request histograms of an ended state, which then goes. */
static void observe_request(req *r)
{
    int64_t ts = r->end;
    if (r->start)
        observe(SP_MH_E2E, secs(ts - r->start));
    if (r->first) {
        if (r->start)
            observe(SP_MH_TTFT, secs(r->first - r->start));
        if (r->sched)
            observe(SP_MH_PREFILL, secs(r->first - r->sched));
        observe(SP_MH_DECODE, secs(ts - r->first));
        if (!isnan(r->reply) && r->reply > 1)
            observe(SP_MH_TPOT, secs(ts - r->first) / (r->reply - 1));
    }
    if (r->waits)
        observe(SP_MH_QUEUE, secs(r->wait_sum));
    sp_ridtab_drop(&A.t, &r->e);
}

/* httpRes: counters now; histograms after the next whole pass, because the
 * request's records on other threads' rings (a Dequeue on the engine's) may
 * come later in this pass than its end on the front end's ring. */
static void on_http_res(const view *v, int64_t ts)
{
    req *r = state(v->rid, v->ridl, ts, 0);
    if (r && r->end_pass)
        return; /* a second end of the same request */
    if (v->outcome) /* the demo's key; "status" is the older spelling */
        count_outcome(v->outcome, v->ol);
    else
        count_outcome(v->status, v->sl);
    /* The request's counts (seen on any of its records, this one last); a
     * request without a state (untracked) has this record's only. */
    double recv = r ? r->recv : NAN, reply = r ? r->reply : NAN;
    sp_tokens_see(&recv, v->has_recv ? v->recv : NAN);
    sp_tokens_see(&reply, v->has_reply ? v->reply : NAN);
    if (!isnan(recv))
        A.v.counter[SP_MC_PROMPT_TOKENS] += recv;
    if (!isnan(reply))
        A.v.counter[SP_MC_GENERATION_TOKENS] += reply;
    if (!r)
        return;
    r->end = ts;
    r->recv = recv;
    r->reply = reply;
    r->end_pass = A.pass + 1;
    r->done_next = A.done;
    A.done = r;
}

void sp_magg_pass_end(void)
{
    req **pp = &A.done;
    while (*pp) {
        req *r = *pp;
        if (r->end_pass <= A.pass) { /* ended before this pass began */
            *pp = r->done_next;
            observe_request(r);
        } else {
            pp = &r->done_next;
        }
    }
    A.pass++;
}

static int queue_is(const view *v, const char *q)
{
    size_t n = strlen(q);
    if (!v->queue) /* no queue name: WAITING (parse.md) */
        return !strcmp(q, "WAITING");
    return v->ql == n && !memcmp(v->queue, q, n);
}

static void on_queue(const view *v, int64_t ts, int enqueue)
{
    if (v->has_qsize) {
        if (queue_is(v, "WAITING")) set_gauge(SP_MG_WAITING, v->qsize);
        else if (queue_is(v, "RUNNING")) set_gauge(SP_MG_RUNNING, v->qsize);
        else if (queue_is(v, "SWAPPED")) set_gauge(SP_MG_SWAPPED, v->qsize);
    }
    if (enqueue && queue_is(v, "SWAPPED"))
        A.v.counter[SP_MC_PREEMPTIONS]++;
    if (!queue_is(v, "WAITING"))
        return;
    req *r = state(v->rid, v->ridl, ts, enqueue);
    if (!r)
        return;
    if (enqueue) {
        if (r->waits)
            A.v.counter[SP_MC_PREEMPTIONS]++; /* back to WAITING after its first wait */
        r->waits++;
        r->wait_since = ts;
    } else if (r->wait_since) {
        r->wait_sum += ts - r->wait_since;
        r->wait_since = 0;
        if (!r->sched)
            r->sched = ts;
    }
}

static void on_kv(const view *v)
{
    double total = v->has_kv_total ? v->kv_total : 0;
    double free_now = v->has_kv_free ? v->kv_free : v->has_kv_after ? v->kv_after : -1;
    double used = v->has_kv_used ? v->kv_used : (total > 0 && free_now >= 0 ? total - free_now : -1);
    if (v->has_kv_total)
        set_gauge(SP_MG_KV_TOTAL_BLOCKS, total);
    if (used >= 0)
        set_gauge(SP_MG_KV_USED_BLOCKS, used);
    if (v->has_kv_usage)
        set_gauge(SP_MG_KV_USAGE, v->kv_usage > 1 ? v->kv_usage / 100 : v->kv_usage);
    else if (total > 0 && used >= 0)
        set_gauge(SP_MG_KV_USAGE, used / total);
}

static void on_step(const view *v)
{
    if (v->has_bs || v->entries)
        observe(SP_MH_BATCH_SIZE, (double)(v->has_bs ? v->bs : v->entries));
    if (v->has_tokens || v->entry_tokens > 0)
        observe(SP_MH_BATCH_TOKENS, v->has_tokens ? (double)v->tokens : v->entry_tokens);
}

/* ---- the entry points ------------------------------------------------ */

void sp_magg_record(const sp_rec_hdr *h, const uint8_t *rec, size_t len)
{
    cur c = {rec + sizeof *h, rec + len, 0};
    view v;
    memset(&v, 0, sizeof v);
    size_t dl;
    take_str(&c, &dl); /* the domain: names are what metrics go by */
    decode_attrs(&v, &c);
    if (c.bad)
        return;
    if (h->kind == SP_REC_SPAN_END)
        return; /* span ends carry nothing metrics read */
    if (h->kind == SP_REC_LINK) {
        v.from = take_str(&c, &v.fl);
        v.to = take_str(&c, &v.tl);
        if (!c.bad)
            link_ids(&v, h->ts);
        return;
    }
    const char *n = take_str(&c, &v.nl);
    size_t nl = v.nl;
    int is_res = IS(n, nl, "httpRes");
    if ((v.has_recv || v.has_reply) && !is_res) {
        /* the token rule (reqtokens.h): any record naming the request counts */
        req *r = state(v.rid, v.ridl, h->ts, IS(n, nl, "httpReq"));
        if (r && !r->end_pass) {
            sp_tokens_see(&r->recv, v.has_recv ? v.recv : NAN);
            sp_tokens_see(&r->reply, v.has_reply ? v.reply : NAN);
        }
    }
    if (IS(n, nl, "httpReq")) {
        req *r = state(v.rid, v.ridl, h->ts, 1);
        if (r && !r->start)
            r->start = h->ts;
    } else if (is_res) {
        on_http_res(&v, h->ts);
    } else if (IS(n, nl, "Enqueue") || IS(n, nl, "Dequeue") || IS(n, nl, "Queue")) {
        on_queue(&v, h->ts, n[0] == 'E');
    } else if (IS(n, nl, "detokenize") || IS(n, nl, "decode") || IS(n, nl, "sendResponse")) {
        req *r = state(v.rid, v.ridl, h->ts, 0);
        if (r && !r->first)
            r->first = h->ts;
    } else if (IS(n, nl, "KVCacheStatus") || IS(n, nl, "Allocate") || IS(n, nl, "Free") ||
               IS(n, nl, "AppendSlot")) {
        on_kv(&v);
    } else if (IS(n, nl, "BatchSchedule") || IS(n, nl, "batchFrameworkProcessing")) {
        if (h->kind != SP_REC_SPAN_END)
            on_step(&v);
    }
}

sp_mdata *sp_magg_values(void)
{
    A.v.gauge[SP_MG_REQUESTS_TRACKED] = A.t.ncanon;
    A.v.gauge_set |= (uint64_t)1 << SP_MG_REQUESTS_TRACKED;
    return &A.v;
}

/* Stale unless its end is queued (observed after the pass). */
static int untracked(sp_ridtab_ent *e, void *arg)
{
    (void)arg;
    if (((req *)e)->end_pass)
        return 0;
    A.v.counter[SP_MC_UNTRACKED]++;
    return 1;
}

void sp_magg_sweep(int64_t now_ns, int64_t max_age_ns)
{
    sp_ridtab_sweep(&A.t, now_ns, max_age_ns, untracked, NULL);
}

void sp_magg_free(int forget)
{
    if (!forget)
        sp_ridtab_free(&A.t);
    memset(&A, 0, sizeof A);
}

void sp_magg_reset(void)
{
    sp_magg_free(0);
}
