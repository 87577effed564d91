/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scheduler.c — the engine thread: continuous batching over a paged KV cache
 * (see scheduler.h).
 *
 * Design. One step = schedule (under the engine lock), run the model (no
 * lock), publish results (under the lock). The lock is held only for
 * bookkeeping (microseconds), so HTTP threads submitting requests or reading
 * tokens never wait for a forward pass.
 *
 * Scheduling follows the shape of vLLM's unified scheduler, written from its
 * description: a token budget per step is spent first on the running
 * requests, in admission order (a decode needs one token; a prompt still in
 * chunked prefill needs the rest of it, cut to the budget), then on waiting
 * requests, first come first served, while the budget, the running limit and
 * the free KV blocks allow. When a running request needs a block and none is
 * free, the most recently admitted request is preempted: its blocks are
 * freed, its computed tokens forgotten, and it goes back to the head of the
 * waiting queue to be recomputed (prompt + tokens generated so far). No
 * waiting request is admitted in a step that preempted.
 *
 * A request is refused at admission unless it fits the cache alone
 * (n_prompt + max_tokens <= max_model_len, whose blocks the pool holds), so
 * preemption always makes progress: the oldest request can always run.
 *
 * Prefix caching: at admission the longest cached run of full blocks of the
 * request's tokens is reused (kv_match_prefix); after each step every block
 * that became full is published under its chained hash.
 */
#include "scheduler.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../instrument.h"
#include "batch.h"
#include "kvcache.h"

struct tl_engine {
    tl_engine_cfg c;
    tl_model *model;         /* engine thread only */
    kv_pool *kv;             /* modified by the engine thread under mu */
    pthread_t thread;
    int started;             /* owner thread */

    pthread_mutex_t mu;
    pthread_cond_t cv;       /* wakes the engine: submit, abort, stop */
    /* Under mu. */
    int stopping;
    tl_request *wait_head, *wait_tail;
    int n_waiting;
    tl_request **running;    /* admission order */
    int n_running;
    int pending_aborts;
    tl_engine_stats st;      /* counters; queue and block fields filled on read */

    /* Engine thread only. */
    tl_batch batch;
    tl_fwd_item *fwd;
};

/* ---------------------------------------------------------------- */
/* Waiting list (under mu)                                            */
/* ---------------------------------------------------------------- */

static void wait_push_back(tl_engine *e, tl_request *r)
{
    r->prev = e->wait_tail;
    r->next = NULL;
    if (e->wait_tail) e->wait_tail->next = r; else e->wait_head = r;
    e->wait_tail = r;
    e->n_waiting++;
}

static void wait_push_front(tl_engine *e, tl_request *r)
{
    r->prev = NULL;
    r->next = e->wait_head;
    if (e->wait_head) e->wait_head->prev = r; else e->wait_tail = r;
    e->wait_head = r;
    e->n_waiting++;
}

static void wait_remove(tl_engine *e, tl_request *r)
{
    if (r->prev) r->prev->next = r->next; else e->wait_head = r->next;
    if (r->next) r->next->prev = r->prev; else e->wait_tail = r->prev;
    r->prev = r->next = NULL;
    e->n_waiting--;
}

static void running_remove(tl_engine *e, tl_request *r)
{
    for (int i = 0; i < e->n_running; i++)
        if (e->running[i] == r) {
            memmove(&e->running[i], &e->running[i + 1],
                    (size_t)(e->n_running - i - 1) * sizeof *e->running);
            e->n_running--;
            return;
        }
    assert(!"request not in the running set");
}

/* ---------------------------------------------------------------- */
/* KV blocks of a request (engine thread, under mu)                   */
/* ---------------------------------------------------------------- */

/* Makes r's block table cover `upto` tokens. 0, or -1 when blocks ran out. */
static int ensure_blocks(tl_engine *e, tl_request *r, int upto)
{
    int bs = kv_block_size(e->kv);
    int need = (upto + bs - 1) / bs - r->n_blocks;
    if (need <= 0)
        return 0;
    if (kv_alloc(e->kv, need, r->blocks + r->n_blocks) < 0)
        return -1;
    r->n_blocks += need;
    e->batch.blocks_allocated += need;
    return 0;
}

static void release_blocks(tl_engine *e, tl_request *r)
{
    if (r->n_blocks) {
        kv_release(e->kv, r->blocks, r->n_blocks);
        e->batch.blocks_freed += r->n_blocks;
    }
    r->n_blocks = 0;
    r->n_computed = 0;
    r->n_published = 0;
    r->last_hash = 0;
}

/* ---------------------------------------------------------------- */
/* Ending requests (under mu)                                         */
/* ---------------------------------------------------------------- */

static void drop_engine_ref(tl_request *r)
{
    assert(r->refs > 0);
    if (--r->refs == 0)
        tl_request_free(r);
}

/* Takes r out of whichever queue holds it, frees its blocks, and wakes its
 * front end. Aborted requests are ended (httpRes) here: their client is
 * gone or the server is stopping. */
static void finish(tl_engine *e, tl_request *r, int how)
{
    if (r->state == TL_WAITING) {
        wait_remove(e, r);
        ins_queue("Dequeue", "WAITING", r, e->n_waiting);
    } else {
        running_remove(e, r);
        ins_queue("Dequeue", "RUNNING", r, e->n_running);
    }
    release_blocks(e, r);
    if (r->abort_requested)
        how = TL_FINISH_ABORT; /* its client is gone: it did not complete */
    r->state = TL_DONE;
    r->finish = how;
    if (how == TL_FINISH_ABORT) {
        e->st.aborted++;
        if (!r->ended) {
            r->ended = 1;
            ins_http_res(r, "aborted", r->n_out);
        }
    } else {
        e->st.completed++;
    }
    pthread_cond_broadcast(&r->cv);
    drop_engine_ref(r);
}

static void handle_aborts(tl_engine *e, int all)
{
    for (int i = e->n_running - 1; i >= 0; i--)
        if (all || e->running[i]->abort_requested)
            finish(e, e->running[i], TL_FINISH_ABORT);
    for (tl_request *r = e->wait_head, *nx; r; r = nx) {
        nx = r->next;
        if (all || r->abort_requested)
            finish(e, r, TL_FINISH_ABORT);
    }
    e->pending_aborts = 0;
}

/* ---------------------------------------------------------------- */
/* Scheduling (under mu)                                              */
/* ---------------------------------------------------------------- */

static void batch_add(tl_engine *e, tl_request *r, int n)
{
    tl_batch *b = &e->batch;
    assert(b->n < b->cap);
    tl_batch_item *it = &b->items[b->n++];
    it->req = r;
    it->n = n;
    it->iter = r->iter;
    it->n_computed = r->n_computed;
    /* A decode computes the one newest token of a request that already has
     * output; anything else (prompt, recomputation) is prefill. */
    it->type = (n == 1 && r->n_tokens > r->n_prompt && r->n_computed == r->n_tokens - 1)
                   ? TL_DECODE : TL_PREFILL;
    if (it->type == TL_DECODE) b->n_decode++; else b->n_prefill++;
    b->tokens += n;
}

/* Preempts the last running request (recompute later). */
static tl_request *preempt_last(tl_engine *e)
{
    tl_request *v = e->running[e->n_running - 1];
    e->n_running--;
    ins_queue("Dequeue", "RUNNING", v, e->n_running);
    release_blocks(e, v);
    v->state = TL_WAITING;
    v->preemptions++;
    e->st.preempted++;
    wait_push_front(e, v);
    ins_queue("Enqueue", "WAITING", v, e->n_waiting);
    return v;
}

static int schedule_running(tl_engine *e, int *budget)
{
    int preempted = 0;
    for (int i = 0; i < e->n_running && *budget > 0; i++) {
        tl_request *r = e->running[i];
        int need = r->n_tokens - r->n_computed;
        int n = need < *budget ? need : *budget;
        if (!e->c.chunked_prefill && n < need)
            continue;
        int victim_was_r = 0;
        while (ensure_blocks(e, r, r->n_computed + n) < 0) {
            preempted = 1;
            if (preempt_last(e) == r) {
                victim_was_r = 1;
                break;
            }
        }
        if (victim_was_r)
            break; /* r was the last running request: nothing after it */
        batch_add(e, r, n);
        *budget -= n;
    }
    return preempted;
}

static void schedule_waiting(tl_engine *e, int *budget)
{
    int bs = kv_block_size(e->kv);
    while (e->wait_head && *budget > 0 && e->n_running < e->c.max_num_seqs) {
        tl_request *r = e->wait_head;
        if (r->n_blocks == 0) {
            int hit = kv_match_prefix(e->kv, r->tokens, r->n_tokens, r->blocks, &r->last_hash);
            r->n_blocks = hit;
            r->n_published = hit;
            r->n_computed = hit * bs;
            if (!r->hit_reported) {
                r->hit_reported = 1;
                e->st.cached_tokens += (unsigned long)hit * bs;
                ins_cache_hit(r, hit * bs);
            }
        }
        int need = r->n_tokens - r->n_computed;
        int n = need < *budget ? need : *budget;
        if ((!e->c.chunked_prefill && n < need) || ensure_blocks(e, r, r->n_computed + n) < 0) {
            /* Not now: give back what the prefix lookup took, so a request
             * that waits never pins blocks others need. */
            if (r->n_blocks) {
                kv_release(e->kv, r->blocks, r->n_blocks);
                r->n_blocks = r->n_published = r->n_computed = 0;
                r->last_hash = 0;
            }
            break;
        }
        wait_remove(e, r);
        ins_queue("Dequeue", "WAITING", r, e->n_waiting);
        r->state = TL_RUNNING;
        e->running[e->n_running++] = r;
        ins_queue("Enqueue", "RUNNING", r, e->n_running);
        batch_add(e, r, n);
        *budget -= n;
    }
}

static void schedule(tl_engine *e)
{
    tl_batch *b = &e->batch;
    b->n = b->n_prefill = b->n_decode = b->tokens = 0;
    b->blocks_allocated = b->blocks_freed = 0;
    b->free_before = kv_free_blocks(e->kv);
    int budget = e->c.max_batched_tokens;
    if (!schedule_running(e, &budget))
        schedule_waiting(e, &budget);
    b->free_after = kv_free_blocks(e->kv);
}

/* ---------------------------------------------------------------- */
/* After the forward (under mu)                                       */
/* ---------------------------------------------------------------- */

static void publish_full_blocks(tl_engine *e, tl_request *r)
{
    int bs = kv_block_size(e->kv);
    while ((r->n_published + 1) * bs <= r->n_computed) {
        uint64_t h = kv_block_hash(r->last_hash, r->tokens + (size_t)r->n_published * bs, bs);
        kv_publish(e->kv, r->blocks[r->n_published], h);
        r->last_hash = h;
        r->n_published++;
    }
}

static void postprocess(tl_engine *e)
{
    tl_batch *b = &e->batch;
    for (int i = 0; i < b->n; i++) {
        tl_request *r = b->items[i].req;
        r->n_computed += b->items[i].n;
        r->iter++;
        publish_full_blocks(e, r);
        if (r->n_computed < r->n_tokens)
            continue; /* a prefill chunk: no token yet */
        int k = r->n_tokens - r->n_prompt; /* index of the new output token */
        assert(k < r->max_tokens);
        r->tokens[r->n_tokens++] = e->fwd[i].next;
        r->n_out = k + 1;
        e->st.output_tokens++;
        pthread_cond_broadcast(&r->cv);
        if (r->n_out == r->max_tokens)
            finish(e, r, TL_FINISH_LENGTH);
    }
}

/* ---------------------------------------------------------------- */
/* The thread                                                         */
/* ---------------------------------------------------------------- */

static void run_model(tl_engine *e)
{
    tl_batch *b = &e->batch;
    for (int i = 0; i < b->n; i++) {
        tl_request *r = b->items[i].req;
        tl_fwd_item *f = &e->fwd[i];
        f->tokens = r->tokens + r->n_computed;
        f->pos0 = r->n_computed;
        f->n = b->items[i].n;
        f->block_table = r->blocks;
        f->want_token = r->n_computed + f->n == r->n_tokens;
        f->next = 0;
    }
    servprof_span exec = ins_model_exec_begin(b);
    int64_t t0 = servprof_now_ns();
    tl_model_set_step(e->model, (long long)e->st.steps);
    tl_model_forward(e->model, e->fwd, b->n);
    int64_t t1 = servprof_now_ns();
    ins_forward(b, t0, t1);
    ins_model_exec_end(exec, b);
}

/* The planted host stall (--step-host-delay-us): the engine thread does
 * "host work" between steps while the model is idle. A sleep, not a
 * spin, so the shared test machine is not loaded by it. */
static void host_delay(int us)
{
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void *engine_main(void *arg)
{
    tl_engine *e = arg;
    pthread_setname_np(pthread_self(), "tl-engine"); /* for top, perf, bench_overhead */
    servprof_set_thread_name("engine");
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->stopping && !e->n_waiting && !e->n_running)
            pthread_cond_wait(&e->cv, &e->mu);
        if (e->stopping) {
            handle_aborts(e, 1);
            break;
        }
        if (e->pending_aborts)
            handle_aborts(e, 0);
        int64_t t0 = servprof_now_ns();
        schedule(e);
        int64_t t1 = servprof_now_ns();
        if (e->batch.n == 0) {
            /* Aborts emptied the queues just now; anything else would be a
             * scheduling bug, so wait a little rather than spin. */
            if (e->n_waiting || e->n_running) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 1000000L;
                ts.tv_sec += ts.tv_nsec / 1000000000L;
                ts.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&e->cv, &e->mu, &ts);
            }
            continue;
        }
        ins_batch_schedule(&e->batch, t0, t1);
        ins_kv_status(&e->batch, e->kv);
        e->st.steps++;
        pthread_mutex_unlock(&e->mu);

        run_model(e);

        pthread_mutex_lock(&e->mu);
        postprocess(e);
        pthread_mutex_unlock(&e->mu);
        if (e->c.host_delay_us > 0)
            host_delay(e->c.host_delay_us);
        servprof_step();
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---------------------------------------------------------------- */
/* Public                                                             */
/* ---------------------------------------------------------------- */

tl_engine *tl_engine_new(const tl_engine_cfg *cfg)
{
    tl_engine_cfg c = *cfg;
    int bs = c.model.block_size;
    if (c.max_num_seqs < 1 || c.max_batched_tokens < 1 || c.max_inflight < 1 || bs < 1) {
        fprintf(stderr, "tiny-llm-server: max-num-seqs, max-batched-tokens, max-inflight and block-size must be > 0\n");
        return NULL;
    }
    if ((c.model.max_pos + bs - 1) / bs > c.model.num_blocks) {
        fprintf(stderr, "tiny-llm-server: %d KV blocks of %d tokens cannot hold one sequence of "
                        "max-model-len %d; raise --num-blocks\n", c.model.num_blocks, bs, c.model.max_pos);
        return NULL;
    }
    if (!c.chunked_prefill && c.max_batched_tokens < c.model.max_pos) {
        fprintf(stderr, "tiny-llm-server: without chunked prefill, max-batched-tokens (%d) must be "
                        ">= max-model-len (%d); using %d\n", c.max_batched_tokens, c.model.max_pos, c.model.max_pos);
        c.max_batched_tokens = c.model.max_pos;
    }
    c.model.max_tokens = c.max_batched_tokens;
    tl_engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->c = c;
    e->model = tl_model_new(&c.model);
    e->kv = kv_pool_new(c.model.num_blocks, bs, c.prefix_caching);
    e->running = calloc((size_t)c.max_num_seqs, sizeof *e->running);
    e->batch.cap = c.max_num_seqs;
    e->batch.items = calloc((size_t)c.max_num_seqs, sizeof *e->batch.items);
    e->fwd = calloc((size_t)c.max_num_seqs, sizeof *e->fwd);
    if (!e->model || !e->kv || !e->running || !e->batch.items || !e->fwd) {
        tl_engine_free(e);
        return NULL;
    }
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    return e;
}

int tl_engine_start(tl_engine *e)
{
    if (pthread_create(&e->thread, NULL, engine_main, e))
        return -1;
    e->started = 1;
    return 0;
}

void tl_engine_stop(tl_engine *e)
{
    if (!e->started)
        return;
    pthread_mutex_lock(&e->mu);
    e->stopping = 1;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    e->started = 0;
}

void tl_engine_free(tl_engine *e)
{
    if (!e)
        return;
    assert(!e->started);
    if (e->model) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
    }
    tl_model_free(e->model);
    kv_pool_free(e->kv);
    free(e->running);
    free(e->batch.items);
    free(e->fwd);
    free(e);
}

int tl_engine_submit(tl_engine *e, tl_request *r)
{
    pthread_mutex_lock(&e->mu);
    if (e->stopping || e->n_waiting + e->n_running >= e->c.max_inflight) {
        e->st.rejected++;
        pthread_mutex_unlock(&e->mu);
        return -1;
    }
    r->state = TL_WAITING;
    wait_push_back(e, r);
    e->st.submitted++;
    e->st.prompt_tokens += (unsigned long)r->n_prompt;
    ins_queue("Enqueue", "WAITING", r, e->n_waiting);
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

void tl_engine_release(tl_engine *e, tl_request *r, int client_gone)
{
    int end_here = 0, n_out = 0;
    pthread_mutex_lock(&e->mu);
    if (r->state != TL_DONE) {
        /* The engine ends it: frees its blocks, then records the end. */
        r->abort_requested = 1;
        e->pending_aborts++;
        pthread_cond_signal(&e->cv);
    } else if (client_gone && !r->ended) {
        r->ended = end_here = 1; /* finished, but the client left before the end */
        n_out = r->n_out;
    }
    int last = --r->refs == 0;
    pthread_mutex_unlock(&e->mu);
    if (end_here)
        ins_http_res(r, "aborted", n_out);
    if (last)
        tl_request_free(r);
}

int tl_engine_wait(tl_engine *e, tl_request *r, int seen, int timeout_ms, int *state, int *finish_how)
{
    pthread_mutex_lock(&e->mu);
    if (r->n_out <= seen && r->state != TL_DONE) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)timeout_ms * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        while (r->n_out <= seen && r->state != TL_DONE)
            if (pthread_cond_timedwait(&r->cv, &e->mu, &ts) == ETIMEDOUT)
                break;
    }
    int n = r->n_out;
    *state = r->state;
    *finish_how = r->finish;
    pthread_mutex_unlock(&e->mu);
    return n;
}

int tl_engine_claim_end(tl_engine *e, tl_request *r)
{
    pthread_mutex_lock(&e->mu);
    int first = !r->ended;
    r->ended = 1;
    pthread_mutex_unlock(&e->mu);
    return first;
}

void tl_engine_stats_get(tl_engine *e, tl_engine_stats *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->st;
    out->waiting = e->n_waiting;
    out->running = e->n_running;
    out->total_blocks = kv_total_blocks(e->kv);
    out->free_blocks = kv_free_blocks(e->kv);
    out->cached_blocks = kv_cached_blocks(e->kv);
    pthread_mutex_unlock(&e->mu);
}

const tl_engine_cfg *tl_engine_config(const tl_engine *e) { return &e->c; }
