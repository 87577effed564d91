/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.c — one state per request in flight -> request.csv.
 *
 * A request's state is created by the first record that names it and hangs
 * on its id root (ids.c). It accumulates the request's times: arrival
 * (httpReq), each wait in the WAITING queue (Enqueue -> Dequeue, summed, so
 * a preempted and re-queued request waits twice), the first token (the
 * reference parser's rule: the latest end among the steps that ran the
 * request with iter 0 — schedule, execution, forward, any process —, its
 * first detokenize / decode and its first sendResponse), the first step
 * that ran it, token counts and cache hits. An end event (httpRes /
 * DecodeEnd / sendResponse) puts it on the `done` list; because "end" is
 * the *last* of those events, the row is written and the state freed only
 * once the stream has moved GRACE_NS past the end (or at the end of input).
 * A request whose httpReq or end was not recorded (collection switched on
 * or off mid-request) is marked complete = 0, its unknown figures are left
 * empty and it stays out of the summary's percentiles. Rows go out in
 * start order through reqorder.c; the states live on a list in the order
 * they were created (their first record), whose head bounds the start of
 * every row still to come. A finished id keeps a tombstone so that
 * stragglers do not resurrect it. The request's flow in the timeline is drawn here as well:
 * each slice naming it becomes a flow step, the previous one held back so
 * that the last can be written as the flow's end ('f'). By default the
 * per-token slices are left out of the flow (decode steps, i.e. entries
 * with iter > 0, every token out after the first, AppendSlot): a request of
 * 1000 tokens would otherwise draw 4000 arrows, hide everything else and
 * triple the file. `--flows all` draws them too.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "model.h"
#include "tap.h"
#include "reqtokens.h"
#include "repcols.h"
#include "sessions.h"
#include "stats.h"
#include "timeline.h"
#include "xalloc.h"

#define GRACE_NS 10000000000LL /* 10 s of stream time */

typedef struct prs_req prs_req;
struct prs_req {
    int root;
    int64_t first_seen, start, end, first_step_start;
    int64_t iter0_end;   /* latest end of a step that ran it with iter 0 */
    int64_t tok_end;     /* end of its first detokenize / decode */
    int64_t send_end;    /* end of its first sendResponse */
    int64_t wait_since, queue_wait;
    int nwait, preempted, ended, queued;
    double recv, reply, hit;
    /* flow */
    int nflow;
    int flow_pid, flow_tid;
    int64_t flow_ts;
    prs_req *next;          /* done list */
    prs_req *older, *newer; /* live list (creation order) */
};

/* The report's state (prs_report_request). */
typedef struct request {
    prs_table t;
    prs_req *done_head, *done_tail; /* ended, finalized after a grace period */
    prs_req *live_head, *live_tail; /* every request with state, oldest first seen first */
    prs_reqorder *order;            /* finished rows waiting for start order (reqorder.c) */
    long long nincomplete;          /* rows cut by the collection window (complete = 0) */
    long long absurd_figures;       /* figures left empty: a first token outside the
                                       request's life, an end before the start */
    prs_reqsum *fin;                /* one per finished request: summary, buckets */
    int nfin, capfin;
    double out_tokens;
} request;

static const int tombstone; /* only its address is used */
#define DONE ((void *)&tombstone)

static const prs_col cols[] = {
    {PRS_RQ_HTTP_RID, "TEXT"}, {PRS_RQ_START_DT, "TEXT"}, {PRS_RQ_RECV_TOKENS, "INTEGER"},
    {PRS_RQ_REPLY_TOKENS, "INTEGER"}, {PRS_RQ_EXEC_MS, "REAL"}, {PRS_RQ_QUEUE_MS, "REAL"},
    {PRS_RQ_TTFT_MS, "REAL"}, {PRS_RQ_CACHE_HIT, "REAL"}, {PRS_RQ_START_MS, "REAL"},
    {PRS_RQ_TPOT_MS, "REAL"}, {PRS_RQ_PREFILL_MS, "REAL"}, {PRS_RQ_DECODE_MS, "REAL"},
    {PRS_RQ_PREEMPTED, "INTEGER"}, {PRS_RQ_COMPLETE, "INTEGER"},
};
#define NCOLS ((int)(sizeof cols / sizeof *cols))

static void *open_request(prs_model *m)
{
    request *rq = prs_xcalloc(1, sizeof *rq);
    prs_table_init(&m->out, &rq->t, "request.csv", PRS_T_REQUEST, cols, NCOLS,
                   "no request records (domain Request: httpReq/httpRes) were found");
    rq->order = prs_reqorder_new(&m->out, &rq->t);
    return rq;
}

static prs_req *get(request *rq, prs_model *m, int root)
{
    void *d = prs_ids_data(m->ids, root);
    if (d == DONE)
        return NULL;
    if (d)
        return d;
    prs_req *q = prs_xcalloc(1, sizeof *q);
    q->root = root;
    q->first_seen = m->now_ns;
    q->start = q->end = q->first_step_start = q->iter0_end = q->tok_end = q->send_end = -1;
    q->wait_since = -1;
    q->recv = q->reply = q->hit = NAN;
    prs_ids_set_data(m->ids, root, q);
    q->older = rq->live_tail; /* first_seen is the stream's time: the list stays ordered */
    if (rq->live_tail)
        rq->live_tail->newer = q;
    else
        rq->live_head = q;
    rq->live_tail = q;
    return q;
}

static void live_remove(request *rq, prs_req *q)
{
    if (q->older)
        q->older->newer = q->newer;
    else
        rq->live_head = q->newer;
    if (q->newer)
        q->newer->older = q->older;
    else
        rq->live_tail = q->older;
    q->older = q->newer = NULL;
}

/* Puts k where a is in the live list (a leaves it): k takes a's earlier
 * first_seen, and the list must stay ordered by it. */
static void live_replace(request *rq, prs_req *a, prs_req *k)
{
    live_remove(rq, k);
    k->older = a->older;
    k->newer = a->newer;
    if (a->older)
        a->older->newer = k;
    else
        rq->live_head = k;
    if (a->newer)
        a->newer->older = k;
    else
        rq->live_tail = k;
    a->older = a->newer = NULL;
}

/* The first token: the latest of the request's iter-0 step ends, its first
 * detokenize / decode and its first sendResponse (-1: none seen). */
static int64_t first_token(const prs_req *q)
{
    int64_t t = q->iter0_end;
    if (q->tok_end > t)
        t = q->tok_end;
    if (q->send_end > t)
        t = q->send_end;
    return t;
}

static double ms(int64_t ns) { return (double)ns / 1e6; }

/* A duration known as integer ns (printed exactly, see prs_v_ns), or
 * empty when `known` is NAN. */
static prs_val ns_or_null(double known, int64_t ns)
{
    return isnan(known) ? prs_v_null() : prs_v_ns(ns);
}

static int64_t min_set(int64_t a, int64_t b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }
static int64_t max_set(int64_t a, int64_t b) { return a > b ? a : b; }

static void flow_end(prs_model *m, prs_req *q)
{
    if (m->tl && q->nflow >= 2)
        prs_timeline_flow(m->tl, 'f', q->root, q->flow_pid, q->flow_tid, q->flow_ts);
    q->nflow = 0;
}

static void flow_step(prs_model *m, prs_req *q, const prs_rec *r)
{
    if (!m->tl)
        return;
    int pid = prs_timeline_pid(r->store);
    int tid = m->cur_lane;
    if (q->nflow == 1)
        prs_timeline_flow(m->tl, 's', q->root, q->flow_pid, q->flow_tid, q->flow_ts);
    else if (q->nflow >= 2)
        prs_timeline_flow(m->tl, 't', q->root, q->flow_pid, q->flow_tid, q->flow_ts);
    prs_timeline_flow_mark(m->tl, q->root);
    q->nflow++;
    q->flow_pid = pid;
    q->flow_tid = tid;
    q->flow_ts = r->ts;
}

static void write_row(request *rq, prs_model *m, prs_req *q)
{
    int have_start = q->start >= 0, have_end = q->end >= 0;
    int complete = have_start && have_end;
    int64_t start = q->start;
    double exec = complete ? ms(q->end - start) : NAN;
    int64_t ft = first_token(q);
    /* A first token outside the request's own life (before its start, or
     * after its end: a forward that names the request days later, a
     * clock-less timestamp) would print negative or absurd TTFT, TPOT and
     * decode figures: they are left empty, and counted (summary). */
    if (ft >= 0 && ((have_start && ft < start) || (have_end && ft > q->end))) {
        ft = -1;
        rq->absurd_figures++;
    }
    if (complete && q->end < start) {
        exec = NAN; /* an end before the start: the duration is not true */
        rq->absurd_figures++;
    }
    double ttft = have_start && ft >= 0 ? ms(ft - start) : NAN;
    double tpot = NAN, decode = NAN, prefill = NAN;
    if (have_end && ft >= 0 && q->end >= ft) {
        decode = ms(q->end - ft);
        if (!isnan(q->reply) && q->reply > 1)
            tpot = decode / (q->reply - 1);
    }
    if (ft >= 0 && q->first_step_start >= 0 && ft >= q->first_step_start)
        prefill = ms(ft - q->first_step_start);
    /* A figure whose start was not seen is empty, never negative: a request
     * that straddles `servprof enable` has its first token before the first
     * step the store holds (a later decode step), and clocks of two
     * processes may disagree by more than a short span. */
    if (prefill < 0)
        prefill = NAN;
    if (decode < 0)
        decode = tpot = NAN;
    if (ttft < 0)
        ttft = NAN;
    /* Still waiting when the records end: how long is not known. */
    double wait = q->nwait && q->wait_since < 0 ? ms(q->queue_wait) : NAN;
    char dt[40];
    if (have_start)
        prs_fmt_datetime(start, dt);
    const char *name = prs_req_name(m, q->root);
    prs_val v[NCOLS] = {
        prs_v_text(name, -1), have_start ? prs_v_text(dt, -1) : prs_v_null(),
        isnan(q->recv) ? prs_v_null() : prs_v_int((long long)q->recv),
        isnan(q->reply) ? prs_v_null() : prs_v_int((long long)q->reply),
        ns_or_null(exec, q->end - start), ns_or_null(wait, q->queue_wait), ns_or_null(ttft, ft - start),
        isnan(q->hit) ? prs_v_text("N/A", 3) : prs_v_real(q->hit),
        have_start ? prs_v_ns(start) : prs_v_null(), prs_v_ms(tpot), ns_or_null(prefill, ft - q->first_step_start),
        ns_or_null(decode, q->end - ft), prs_v_int(q->preempted), prs_v_int(complete),
    };
    prs_reqorder_push(rq->order, have_start ? start : INT64_MAX, q->first_seen, v, NCOLS); /* no start: last */
    if (rq->nfin == rq->capfin) {
        rq->capfin = rq->capfin ? rq->capfin * 2 : 1024;
        rq->fin = prs_xrealloc(rq->fin, (size_t)rq->capfin * sizeof *rq->fin);
    }
    prs_reqsum *s = &rq->fin[rq->nfin++];
    s->start = have_start ? start : q->first_seen;
    s->end = q->end;
    s->first_token = ft;
    if (!complete) {
        /* Cut by the collection window: its figures would be the window's,
         * not the request's; counted apart, out of every percentile. */
        rq->nincomplete++;
        s->ttft = s->e2e = s->tpot = s->wait = s->prefill_speed = s->decode_speed = NAN;
    } else {
        s->ttft = ttft;
        s->e2e = exec;
        s->tpot = tpot;
        s->wait = wait;
        s->prefill_speed = !isnan(prefill) && prefill > 0 && !isnan(q->recv) ? q->recv / (prefill / 1e3) : NAN;
        s->decode_speed = !isnan(decode) && decode > 0 && !isnan(q->reply) && q->reply > 1
                              ? (q->reply - 1) / (decode / 1e3) : NAN;
    }
    if (!isnan(q->reply))
        rq->out_tokens += q->reply;
}

static void finalize(request *rq, prs_model *m, prs_req *q)
{
    flow_end(m, q);
    write_row(rq, m, q);
    prs_ids_set_data(m->ids, q->root, DONE);
    live_remove(rq, q);
    free(q);
}

/* Takes q off the done list (it is absorbed into another request). */
static void done_unlink(request *rq, prs_req *q)
{
    prs_req **pp = &rq->done_head, *prev = NULL;
    while (*pp && *pp != q) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = q->next;
        if (rq->done_tail == q)
            rq->done_tail = prev;
    }
}

/* Puts q at the end of the done list. */
static void done_push(request *rq, prs_req *q)
{
    q->queued = 1;
    q->next = NULL;
    if (rq->done_tail)
        rq->done_tail->next = q;
    else
        rq->done_head = q;
    rq->done_tail = q;
}

static void link_request(void *st, prs_model *m, int kept, int absorbed)
{
    request *rq = st;
    prs_req *a = prs_ids_data(m->ids, absorbed);
    if (!a || a == DONE)
        return;
    prs_ids_set_data(m->ids, absorbed, NULL);
    prs_req *k = prs_ids_data(m->ids, kept);
    if (k == DONE) {
        /* rare: the request already ended under its other id */
        if (a->queued)
            done_unlink(rq, a);
        flow_end(m, a);
        live_remove(rq, a);
        free(a);
        return;
    }
    if (!k) {
        a->root = kept;
        prs_ids_set_data(m->ids, kept, a);
        return;
    }
    /* Both ids had state: fold the absorbed one into the kept one. */
    if (a->first_seen < k->first_seen)
        live_replace(rq, a, k);
    else
        live_remove(rq, a);
    k->first_seen = min_set(k->first_seen, a->first_seen);
    k->start = min_set(k->start, a->start);
    k->end = max_set(k->end, a->end);
    k->first_step_start = min_set(k->first_step_start, a->first_step_start);
    k->iter0_end = max_set(k->iter0_end, a->iter0_end);
    k->tok_end = min_set(k->tok_end, a->tok_end);
    k->send_end = min_set(k->send_end, a->send_end);
    k->queue_wait += a->queue_wait;
    k->nwait += a->nwait;
    k->preempted += a->preempted;
    if (k->wait_since < 0)
        k->wait_since = a->wait_since;
    sp_tokens_merge(&k->recv, a->recv);
    sp_tokens_merge(&k->reply, a->reply);
    if (isnan(k->hit)) k->hit = a->hit;
    flow_end(m, a);
    if (a->queued) {
        done_unlink(rq, a);
        if (!k->queued)
            done_push(rq, k);
    }
    k->ended |= a->ended;
    free(a);
}

static int waiting_queue(const prs_args *a)
{
    prs_str q = a->queue_name.p ? a->queue_name : a->status;
    if (!q.p)
        return 1; /* no queue named: the waiting queue */
    return q.n == 7 && !memcmp(q.p, "WAITING", 7);
}

static int swapped_queue(const prs_args *a)
{
    prs_str q = a->queue_name.p ? a->queue_name : a->status;
    return q.p && q.n == 7 && !memcmp(q.p, "SWAPPED", 7);
}

static void apply(request *rq, prs_model *m, prs_req *q, const prs_rec *r, enum prs_kind k, int entry)
{
    const prs_args *a = &m->args;
    int64_t end = r->ts + r->dur;
    sp_tokens_see(&q->recv, a->recv_tokens); /* the one rule: common/reqtokens.h */
    sp_tokens_see(&q->reply, a->reply_tokens);
    switch (k) {
    case K_HTTPREQ:
        if (q->start < 0)
            q->start = r->ts;
        break;
    case K_ENQUEUE:
        if (waiting_queue(a)) {
            if (q->wait_since < 0) {
                q->wait_since = r->ts;
                if (q->nwait++ > 0)
                    q->preempted++;
            }
        } else if (swapped_queue(a)) {
            q->preempted++;
        }
        break;
    case K_DEQUEUE:
        if (waiting_queue(a) && q->wait_since >= 0) {
            q->queue_wait += r->ts - q->wait_since;
            q->wait_since = -1;
        }
        break;
    case K_BATCH: case K_EXEC: case K_FORWARD: {
        if (q->first_step_start < 0)
            q->first_step_start = r->ts;
        const prs_rident *e = entry >= 0 ? &a->rids[entry] : NULL;
        /* A schedule entry with no token scheduled did not run the prefill
         * (the reference leaves such entries out too). */
        int ran = !e || k != K_BATCH || isnan(e->sched_tokens) || e->sched_tokens > 0;
        if (e && e->iter == 0 && ran)
            q->iter0_end = max_set(q->iter0_end, end);
        break;
    }
    case K_TOKEN_OUT:
        if (q->tok_end < 0)
            q->tok_end = end;
        break;
    case K_SENDRESP: case K_END:
        if (k == K_SENDRESP && q->send_end < 0)
            q->send_end = end;
        q->end = max_set(q->end, r->ts);
        q->ended = 1;
        if (!q->queued)
            done_push(rq, q);
        break;
    case K_CACHEHIT:
        if (!isnan(a->hit_cache))
            q->hit = a->hit_cache;
        break;
    default:
        break;
    }
}

/* Whether this slice is a step of the request's flow (see the top). */
static int flow_key(const prs_model *m, const prs_req *q, const prs_rec *r, enum prs_kind k, int entry)
{
    if (m->opts->flows_all)
        return 1;
    if (entry >= 0) {
        const prs_rident *e = &m->args.rids[entry];
        int decode = e->iter > 0 || (e->iter < 0 && e->type == 1);
        return !decode;
    }
    if (k == K_TOKEN_OUT || k == K_SENDRESP)
        return q->tok_end < 0 && q->send_end < 0;
    if (k == K_KVEVENT && r->name[0] == 'A' && r->name[1] == 'p')
        return 0; /* AppendSlot: one per token */
    return 1;
}

static void record_request(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    request *rq = st;
    for (int i = 0; i < m->nroots; i++) {
        prs_req *q = get(rq, m, m->roots[i]);
        if (!q)
            continue;
        int entry = m->args.rid_kind == 2 ? i : -1;
        int key = m->tl && flow_key(m, q, r, k, entry);
        apply(rq, m, q, r, k, entry);
        if (key)
            flow_step(m, q, r);
    }
}

/* Writes the requests that ended GRACE_NS ago (all: every request, at the end). */
static void flush(request *rq, prs_model *m, int all)
{
    while (rq->done_head && (all || rq->done_head->end + GRACE_NS < m->now_ns)) {
        prs_req *q = rq->done_head;
        rq->done_head = q->next;
        if (!rq->done_head)
            rq->done_tail = NULL;
        finalize(rq, m, q);
    }
    if (!all) {
        prs_reqorder_release(rq->order, rq->live_head && rq->live_head->first_seen < m->now_ns
                                            ? rq->live_head->first_seen : m->now_ns);
        return;
    }
    /* Requests that never ended (a store cut short, a run still going). */
    int n = prs_ids_count(m->ids);
    for (int i = 0; i < n; i++) {
        void *d = prs_ids_data(m->ids, i);
        if (d && d != DONE)
            finalize(rq, m, d);
    }
    prs_reqorder_release_all(rq->order);
}

static void tick_request(void *st, prs_model *m) { flush(st, m, 0); }
static void finish_request(void *st, prs_model *m)
{
    const request *rq = st;
    flush(st, m, 1);
    if (m->out.tap.quality) {
        prs_quality q = {m->dup_links, m->dup_links ? m->dup_example : "", rq->absurd_figures};
        m->out.tap.quality(m->out.tap.ctx, &q);
    }
}

static void close_request(void *st, prs_model *m)
{
    request *rq = st;
    prs_reqorder_free(rq->order); /* rows a run abandoned before its end never go out */
    rq->order = NULL;
    prs_table_close(&m->out, &rq->t);
}

static void free_request(void *st)
{
    request *rq = st;
    prs_reqorder_free(rq->order);
    free(rq->fin);
    free(rq);
}

static const prs_table *table_request(const void *st) { return &((const request *)st)->t; }

prs_reqsums prs_request_sums(const prs_model *m)
{
    const request *rq = prs_model_state(m, &prs_report_request);
    if (!rq)
        return (prs_reqsums){0};
    return (prs_reqsums){rq->fin, rq->nfin, rq->nincomplete, rq->out_tokens};
}

/* Output tokens per second over the time requests were being served: from
 * the first request's start to the last one's end, within each session. */
static double tokens_per_s(const request *rq, const prs_sessions *ss)
{
    int n = ss && ss->n > 1 ? ss->n : 1;
    int64_t *first = prs_xmalloc((size_t)n * sizeof *first), *last = prs_xmalloc((size_t)n * sizeof *last);
    double on = 0;
    for (int k = 0; k < n; k++)
        first[k] = -1, last[k] = -1;
    for (long long i = 0; i < rq->nfin; i++) {
        int k = n > 1 ? prs_sessions_at(ss, rq->fin[i].start) : 0;
        if (k < 0 || rq->fin[i].start < 0)
            continue;
        if (first[k] < 0 || rq->fin[i].start < first[k])
            first[k] = rq->fin[i].start;
        if (rq->fin[i].end > last[k])
            last[k] = rq->fin[i].end;
    }
    for (int k = 0; k < n; k++)
        if (first[k] >= 0 && last[k] > first[k])
            on += (double)(last[k] - first[k]) / 1e9;
    free(first);
    free(last);
    return on > 0 ? rq->out_tokens / on : 0;
}

static void summary_line(const char *what, double *v, long long n)
{
    n = prs_sort_values(v, n);
    if (!n) {
        printf("  %-22s -\n", what);
        return;
    }
    printf("  %-22s P50 %10.3f ms   P99 %10.3f ms   (n=%lld)\n", what, prs_percentile(v, n, 50),
           prs_percentile(v, n, 99), n);
}

/* The summary's requests and their latencies. */
static void summary_request(const void *st, const prs_model *m, const prs_sessions *ss)
{
    const request *rq = st;
    printf("  requests: %d", rq->nfin);
    if (rq->nincomplete)
        printf(" (%lld cut by the collection window: complete = 0, not in the percentiles)", rq->nincomplete);
    printf("\n");
    if (m->dup_links)
        printf("  duplicate ids: %lld id(s) linked from two process stores (first: %s); their "
               "requests were merged into one: ids must be unique across processes\n",
               m->dup_links, m->dup_example);
    if (rq->absurd_figures)
        printf("  figures left empty: %lld (a first token outside its request's life, or an end "
               "before the start: check the clocks and the request ids)\n", rq->absurd_figures);
    long long n = rq->nfin;
    double *v = prs_xmalloc((size_t)(n ? n : 1) * sizeof *v);
    for (long long i = 0; i < n; i++)
        v[i] = rq->fin[i].ttft;
    summary_line("TTFT", v, n);
    for (long long i = 0; i < n; i++)
        v[i] = rq->fin[i].tpot;
    summary_line("TPOT", v, n);
    for (long long i = 0; i < n; i++)
        v[i] = rq->fin[i].e2e;
    summary_line("end-to-end", v, n);
    for (long long i = 0; i < n; i++)
        v[i] = rq->fin[i].wait;
    summary_line("queue wait", v, n);
    free(v);
    double tps = tokens_per_s(rq, ss);
    if (tps > 0 && rq->out_tokens > 0)
        printf("  output tokens: %.0f, %.1f tokens/s\n", rq->out_tokens, tps);
}

const prs_report prs_report_request = {
    .name = "request",
    .kinds = PRS_ALL_KINDS,
    .open = open_request,
    .record = record_request,
    .link = link_request,
    .tick = tick_request,
    .finish = finish_request,
    .close = close_request,
    .table = table_request,
    .summary = summary_request,
    .free = free_request,
};
