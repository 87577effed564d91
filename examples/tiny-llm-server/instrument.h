/* SPDX-License-Identifier: Apache-2.0 */
/*
 * instrument.h — everything the server tells libservprof, in one place, in
 * the vocabulary of docs (parsing spec §1). The engine and the front end call
 * these at the points where things happen; each returns at once when
 * collection is off (one relaxed load inside servprof_rec_begin()).
 *
 * Ids: front-end records (httpReq, tokenize, detokenize, httpRes) name the
 * HTTP id; scheduler, KV cache and execution records name the engine id; a
 * Link row {from: HTTP id, to: engine id} ties the two (the parser reports
 * requests under the id a link comes *from*, as the reference does). The link is recorded at submission
 * and again at the end, so a request that began before collection was
 * switched on still has its two ids joined. Thread-safe (libservprof is).
 */
#ifndef TL_INSTRUMENT_H
#define TL_INSTRUMENT_H

#include <stdint.h>

#include "engine/batch.h"
#include "engine/kvcache.h"
#include "engine/request.h"
#include "servprof.h"

/* Process name, Meta keys naming the model and its sizes. */
void ins_process(const char *model_name, const char *model_desc);

/* Front end. */
/* Returns 1 when the record was taken (collection on). */
int ins_http_req(const tl_request *r);
servprof_span ins_tokenize_begin(const tl_request *r);
void ins_tokenize_end(servprof_span s, int n_tokens);
/* Returns 1 when the record was taken. */
int ins_link(const tl_request *r);
/* The caller's trace context (W3C traceparent / tracestate, else a B3 `b3`
 * header; any may be NULL): the request's llm_request span joins that trace
 * (request tracing over OTLP, docs/tracing.md). A header that is neither form
 * is ignored (the request is then a root). */
void ins_trace_context(const tl_request *r, const char *traceparent, const char *tracestate,
                       const char *b3);
/* n tokens were turned into text and went out; n_out in all so far.
 * Recorded at INFO for a request's first tokens, at DETAILED after. */
void ins_detokenize(const tl_request *r, int n, int n_out);
/* The request ends: returns 1 when the record was taken (collection on).
 * outcome: "ok", "aborted" or "rejected" (attribute `outcome`). */
int ins_http_res(const tl_request *r, const char *status, int reply_tokens);

/* Scheduler. */
void ins_queue(const char *event, const char *queue, const tl_request *r, int queue_size);
void ins_batch_schedule(const tl_batch *b, int64_t t0, int64_t t1);
servprof_span ins_model_exec_begin(const tl_batch *b);
void ins_model_exec_end(servprof_span s, const tl_batch *b);
void ins_forward(const tl_batch *b, int64_t t0, int64_t t1);
void ins_cache_hit(const tl_request *r, int hit_tokens);

/* KV cache: one KVCacheStatus per step. No per-request Allocate/Free
 * events: the reference parser reads those as its old KV format, which it
 * cannot mix with KVCacheStatus (it loses batch.csv's KV columns). */
void ins_kv_status(const tl_batch *b, const kv_pool *kv);

/* Mixture of experts (engine/moe.c), from expert-parallel rank `rank`'s own
 * thread, once per (step, layer): t = dispatch start, expert compute start,
 * combine start, combine end (servprof_now_ns); rows = token rows it got;
 * its n experts' global ids and rows each. Spans MoeDistributeDispatch,
 * GroupedMatmul, MoeDistributeCombine (domain MoE, docs/vocabulary.md). */
void ins_moe_rank(long long step, int layer, int rank, const int64_t t[4], int rows, const int64_t *expert_ids,
                  const int64_t *expert_tokens, int n);

#endif
