/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scheduler.h — the engine: one thread running scheduler steps over a
 * waiting queue and a running set (continuous batching, a token budget per
 * step, chunked prefill, preemption by recomputation when KV blocks run
 * out), calling the model, and publishing tokens to the front end.
 *
 * Thread safety: tl_engine_submit/abort/stats may be called from any thread;
 * they take the engine lock. Everything else: the owning (main) thread.
 */
#ifndef TL_SCHEDULER_H
#define TL_SCHEDULER_H

#include <pthread.h>

#include "model.h"
#include "request.h"

typedef struct tl_engine_cfg {
    tl_model_cfg model;      /* model.max_tokens is set from max_batched_tokens */
    int max_num_seqs;        /* most requests in one step */
    int max_batched_tokens;  /* token budget per step */
    int chunked_prefill;     /* 1: split long prompts across steps */
    int prefix_caching;      /* 1: reuse full prompt blocks */
    int max_inflight;        /* waiting + running beyond which submit says busy */
} tl_engine_cfg;

typedef struct tl_engine_stats {
    int waiting, running;
    int total_blocks, free_blocks, cached_blocks;
    unsigned long submitted, completed, aborted, rejected, preempted, steps;
    unsigned long prompt_tokens, output_tokens, cached_tokens;
} tl_engine_stats;

typedef struct tl_engine tl_engine;

/* NULL on bad configuration (message on stderr) or no memory. */
tl_engine *tl_engine_new(const tl_engine_cfg *cfg);
int tl_engine_start(tl_engine *e);  /* starts the thread: 0 or -1 */
/* Aborts every request, stops and joins the thread. Idempotent. */
void tl_engine_stop(tl_engine *e);
void tl_engine_free(tl_engine *e);  /* after stop; NULL is fine */

/* Hands a request to the engine (the engine takes its reference).
 * 0; -1 when overloaded or stopping (the caller keeps both references and
 * frees the request). */
int tl_engine_submit(tl_engine *e, tl_request *r);

/* The front end is done with r (response sent, or the client left): marks
 * it for abort if it is still running, and drops the front end's
 * reference. r must not be used after. */
void tl_engine_release(tl_engine *e, tl_request *r, int client_gone);

/* Waits until r has more than `seen` output tokens, is done, or timeout_ms
 * passes. Returns r->n_out and sets *state and *finish (read under the lock). */
int tl_engine_wait(tl_engine *e, tl_request *r, int seen, int timeout_ms, int *state, int *finish);

/* Claims the right to record the end (httpRes) of r: 1 for the first caller,
 * 0 after (so a request ends exactly once, whoever ends it). */
int tl_engine_claim_end(tl_engine *e, tl_request *r);

void tl_engine_stats_get(tl_engine *e, tl_engine_stats *out);
const tl_engine_cfg *tl_engine_config(const tl_engine *e);

#endif
