/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.c — one state per request in flight -> request.csv.
 *
 * A request's state is created by the first record that names it and hangs
 * on its id root (ids.c). It accumulates the request's times: arrival
 * (httpReq), each wait in the WAITING queue (Enqueue -> Dequeue, summed, so
 * a preempted and re-queued request waits twice), the first token out, the
 * first step that ran it, token counts and cache hits. An end event
 * (httpRes / DecodeEnd / sendResponse) puts it on the `done` list; because
 * "end" is the *last* of those events, the row is written and the state
 * freed only once the stream has moved GRACE_NS past the end (or at the end
 * of input). A finished id keeps a tombstone so that stragglers do not
 * resurrect it. The request's flow in the timeline is drawn here as well:
 * each slice naming it becomes a flow step, the previous one held back so
 * that the last can be written as the flow's end ('f'). By default the
 * per-token slices are left out of the flow (decode steps, i.e. entries
 * with iter > 0, every token out after the first, AppendSlot): a request of
 * 1000 tokens would otherwise draw 4000 arrows, hide everything else and
 * triple the file. `--flows all` draws them too.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "timeline.h"

#define GRACE_NS 10000000000LL /* 10 s of stream time */

struct spp_req {
    int root;
    int64_t first_seen, start, end, first_token, first_step_start, first_step_end;
    int64_t wait_since, queue_wait;
    int nwait, preempted, ended, queued;
    double recv, reply, hit;
    /* flow */
    int nflow;
    int flow_pid, flow_tid;
    int64_t flow_ts;
    spp_req *next;
};

static int tombstone;
#define DONE ((void *)&tombstone)

static const spp_col cols[] = {
    {"http_rid", "TEXT"}, {"start_datetime", "TEXT"}, {"recv_token_size", "INTEGER"},
    {"reply_token_size", "INTEGER"}, {"execution_time(ms)", "REAL"}, {"queue_wait_time(ms)", "REAL"},
    {"first_token_latency(ms)", "REAL"}, {"cache_hit_rate", "REAL"}, {"start_time(ms)", "REAL"},
    {"tpot(ms)", "REAL"}, {"prefill_time(ms)", "REAL"}, {"decode_time(ms)", "REAL"},
    {"preempted", "INTEGER"},
};

void spp_request_init(spp_model *m)
{
    spp_table_init(&m->out, &m->t_request, "request.csv", "request", cols, sizeof cols / sizeof *cols,
                   "no request records (domain Request: httpReq/httpRes) were found");
}

static spp_req *get(spp_model *m, int root)
{
    void *d = spp_ids_data(m->ids, root);
    if (d == DONE)
        return NULL;
    if (d)
        return d;
    spp_req *q = calloc(1, sizeof *q);
    q->root = root;
    q->first_seen = m->now_ns;
    q->start = q->end = q->first_token = q->first_step_start = q->first_step_end = -1;
    q->wait_since = -1;
    q->recv = q->reply = q->hit = NAN;
    spp_ids_set_data(m->ids, root, q);
    return q;
}

static double ms(int64_t ns) { return (double)ns / 1e6; }

static int64_t min_set(int64_t a, int64_t b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }
static int64_t max_set(int64_t a, int64_t b) { return a > b ? a : b; }

static void flow_end(spp_model *m, spp_req *q)
{
    if (m->tl && q->nflow >= 2)
        spp_timeline_flow(m->tl, 'f', q->root, q->flow_pid, q->flow_tid, q->flow_ts);
    q->nflow = 0;
}

static void flow_step(spp_model *m, spp_req *q, const spp_rec *r)
{
    if (!m->tl)
        return;
    int pid = spp_timeline_pid(r->store);
    int tid = m->cur_lane;
    if (q->nflow == 1)
        spp_timeline_flow(m->tl, 's', q->root, q->flow_pid, q->flow_tid, q->flow_ts);
    else if (q->nflow >= 2)
        spp_timeline_flow(m->tl, 't', q->root, q->flow_pid, q->flow_tid, q->flow_ts);
    q->nflow++;
    q->flow_pid = pid;
    q->flow_tid = tid;
    q->flow_ts = r->ts;
}

static void write_row(spp_model *m, spp_req *q)
{
    int64_t start = q->start >= 0 ? q->start : q->first_seen;
    double exec = q->end >= 0 ? ms(q->end - start) : NAN;
    int64_t ft = q->first_token >= 0 ? q->first_token : q->first_step_end;
    double ttft = ft >= 0 ? ms(ft - start) : NAN;
    double tpot = NAN, decode = NAN, prefill = NAN;
    if (q->end >= 0 && ft >= 0) {
        decode = ms(q->end - ft);
        if (!isnan(q->reply) && q->reply > 1)
            tpot = decode / (q->reply - 1);
    }
    if (ft >= 0 && q->first_step_start >= 0)
        prefill = ms(ft - q->first_step_start);
    char dt[40];
    spp_fmt_datetime(start, dt);
    const char *name = spp_req_name(m, q->root);
    spp_val v[13] = {
        spp_v_text(name, -1), spp_v_text(dt, -1),
        isnan(q->recv) ? spp_v_null() : spp_v_int((long long)q->recv),
        isnan(q->reply) ? spp_v_null() : spp_v_int((long long)q->reply),
        spp_v_ms(exec), spp_v_ms(q->nwait ? ms(q->queue_wait) : NAN), spp_v_ms(ttft),
        spp_v_real(q->hit), spp_v_ms(ms(start)), spp_v_ms(tpot), spp_v_ms(prefill),
        spp_v_ms(decode), spp_v_int(q->preempted),
    };
    spp_table_row(&m->out, &m->t_request, v);
    if (m->nfin == m->capfin) {
        m->capfin = m->capfin ? m->capfin * 2 : 1024;
        m->fin = realloc(m->fin, (size_t)m->capfin * sizeof *m->fin);
    }
    spp_reqsum *s = &m->fin[m->nfin++];
    s->start = start;
    s->end = q->end;
    s->first_token = ft;
    s->ttft = ttft;
    s->e2e = exec;
    s->tpot = tpot;
    s->wait = q->nwait ? ms(q->queue_wait) : NAN;
    s->prefill_speed = !isnan(prefill) && prefill > 0 && !isnan(q->recv) ? q->recv / (prefill / 1e3) : NAN;
    s->decode_speed = !isnan(decode) && decode > 0 && !isnan(q->reply) && q->reply > 1
                          ? (q->reply - 1) / (decode / 1e3) : NAN;
    if (!isnan(q->reply))
        m->out_tokens += q->reply;
}

static void finalize(spp_model *m, spp_req *q)
{
    flow_end(m, q);
    write_row(m, q);
    spp_ids_set_data(m->ids, q->root, DONE);
    free(q);
}

void spp_request_link(spp_model *m, int kept, int absorbed)
{
    spp_req *a = spp_ids_data(m->ids, absorbed);
    if (!a || a == DONE)
        return;
    spp_ids_set_data(m->ids, absorbed, NULL);
    spp_req *k = spp_ids_data(m->ids, kept);
    if (k == DONE) {
        free(a); /* rare: the request already ended under its other id */
        return;
    }
    if (!k) {
        a->root = kept;
        spp_ids_set_data(m->ids, kept, a);
        return;
    }
    /* Both ids had state: fold the absorbed one into the kept one. */
    k->first_seen = min_set(k->first_seen, a->first_seen);
    k->start = min_set(k->start, a->start);
    k->end = max_set(k->end, a->end);
    k->first_token = min_set(k->first_token, a->first_token);
    k->first_step_start = min_set(k->first_step_start, a->first_step_start);
    k->first_step_end = min_set(k->first_step_end, a->first_step_end);
    k->queue_wait += a->queue_wait;
    k->nwait += a->nwait;
    k->preempted += a->preempted;
    if (k->wait_since < 0)
        k->wait_since = a->wait_since;
    if (isnan(k->recv)) k->recv = a->recv;
    if (isnan(k->reply)) k->reply = a->reply;
    if (isnan(k->hit)) k->hit = a->hit;
    flow_end(m, a);
    if (a->queued) {
        /* Unlink a from the done list. */
        spp_req **pp = &m->done_head, *prev = NULL;
        while (*pp && *pp != a) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        if (*pp) {
            *pp = a->next;
            if (m->done_tail == a)
                m->done_tail = prev;
        }
        if (!k->queued) {
            k->queued = 1;
            k->next = NULL;
            if (m->done_tail)
                m->done_tail->next = k;
            else
                m->done_head = k;
            m->done_tail = k;
        }
    }
    k->ended |= a->ended;
    free(a);
}

static int waiting_queue(const spp_args *a)
{
    spp_str q = a->queue_name.p ? a->queue_name : a->status;
    if (!q.p)
        return 1; /* no queue named: the waiting queue */
    return q.n == 7 && !memcmp(q.p, "WAITING", 7);
}

static int swapped_queue(const spp_args *a)
{
    spp_str q = a->queue_name.p ? a->queue_name : a->status;
    return q.p && q.n == 7 && !memcmp(q.p, "SWAPPED", 7);
}

static void apply(spp_model *m, spp_req *q, const spp_rec *r, enum spp_kind k, int entry)
{
    const spp_args *a = &m->args;
    int64_t end = r->ts + r->dur;
    if (!isnan(a->recv_tokens))
        q->recv = a->recv_tokens;
    if (!isnan(a->reply_tokens))
        q->reply = a->reply_tokens;
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
        int iter = entry >= 0 ? a->rids[entry].iter : -1;
        if (iter == 0 && q->first_step_end < 0)
            q->first_step_end = end;
        break;
    }
    case K_TOKEN_OUT:
        if (q->first_token < 0)
            q->first_token = r->ts;
        break;
    case K_SENDRESP: case K_END:
        if (k == K_SENDRESP && q->first_token < 0)
            q->first_token = r->ts;
        q->end = max_set(q->end, r->ts);
        q->ended = 1;
        if (!q->queued) {
            q->queued = 1;
            q->next = NULL;
            if (m->done_tail)
                m->done_tail->next = q;
            else
                m->done_head = q;
            m->done_tail = q;
        }
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
static int flow_key(const spp_model *m, const spp_req *q, const spp_rec *r, enum spp_kind k, int entry)
{
    if (m->opts->flows_all)
        return 1;
    if (entry >= 0) {
        const spp_rident *e = &m->args.rids[entry];
        int decode = e->iter > 0 || (e->iter < 0 && e->type == 1);
        return !decode;
    }
    if (k == K_TOKEN_OUT || k == K_SENDRESP)
        return q->first_token < 0;
    if (k == K_KVEVENT && r->name[0] == 'A' && r->name[1] == 'p')
        return 0; /* AppendSlot: one per token */
    return 1;
}

void spp_request_record(spp_model *m, const spp_rec *r, enum spp_kind k)
{
    for (int i = 0; i < m->nroots; i++) {
        spp_req *q = get(m, m->roots[i]);
        if (!q)
            continue;
        int entry = m->args.rid_kind == 2 ? i : -1;
        int key = m->tl && flow_key(m, q, r, k, entry);
        apply(m, q, r, k, entry);
        if (key)
            flow_step(m, q, r);
    }
}

void spp_request_flush(spp_model *m, int all)
{
    while (m->done_head && (all || m->done_head->end + GRACE_NS < m->now_ns)) {
        spp_req *q = m->done_head;
        m->done_head = q->next;
        if (!m->done_head)
            m->done_tail = NULL;
        finalize(m, q);
    }
    if (!all)
        return;
    /* Requests that never ended (a store cut short, a run still going). */
    int n = spp_ids_count(m->ids);
    for (int i = 0; i < n; i++) {
        void *d = spp_ids_data(m->ids, i);
        if (d && d != DONE)
            finalize(m, d);
    }
}
