/* SPDX-License-Identifier: Apache-2.0 */
/*
 * instrument.c — the server's profiling records, in the vocabulary of the
 * parsing spec §1 (see instrument.h for the id conventions).
 *
 * Design. Every function begins its record with servprof_rec_begin(), which
 * is NULL when collection is off, and every libservprof call accepts NULL:
 * so a disabled call costs one relaxed load and a branch, and no function
 * here tests "is it on?" itself except where building the record would cost
 * a loop (the batch rid lists). Domains follow the reference tool: Request
 * (front end), Schedule, BatchSchedule, ModelExecute, KVCache.
 */
#include "instrument.h"

#include "servprof.h"

#define L SERVPROF_LEVEL_INFO

void ins_process(const char *model_name, const char *model_desc)
{
    servprof_set_process_name("tiny-llm-server");
    servprof_meta("model_name", model_name);
    servprof_meta("model_config", model_desc);
}

int ins_http_req(const tl_request *r)
{
    servprof_rec *x = servprof_rec_begin(L, "Request");
    if (!x)
        return 0;
    servprof_res_str(x, r->http_id);
    servprof_attr_int(x, "max_tokens", r->max_tokens);
    servprof_event(x, "httpReq");
    return 1;
}

servprof_span ins_tokenize_begin(const tl_request *r)
{
    servprof_rec *x = servprof_rec_begin(L, "Request");
    servprof_res_str(x, r->http_id);
    return servprof_span_begin(x, "tokenize");
}

void ins_tokenize_end(servprof_span s, int n_tokens)
{
    if (!s)
        return;
    servprof_rec *x = servprof_rec_begin(L, "Request");
    servprof_attr_int(x, "num_tokens", n_tokens);
    servprof_span_end_rec(x, s);
}

int ins_link(const tl_request *r)
{
    servprof_rec *x = servprof_rec_begin(L, NULL);
    if (!x)
        return 0;
    servprof_link_rec(x, r->http_id, r->engine_id); /* front end first: reports name it */
    return 1;
}

void ins_trace_context(const tl_request *r, const char *traceparent, const char *tracestate,
                       const char *b3)
{
    if (traceparent && servprof_trace_context(r->http_id, traceparent, tracestate) == 0)
        return;
    if (b3)
        servprof_trace_context(r->http_id, b3, NULL);
}

int ins_http_res(const tl_request *r, const char *status, int reply_tokens)
{
    servprof_rec *x = servprof_rec_begin(L, "Request");
    if (!x)
        return 0;
    servprof_res_str(x, r->http_id);
    servprof_metric(x, "recvTokenSize", r->n_prompt);
    servprof_metric(x, "replyTokenSize", reply_tokens);
    servprof_attr_str(x, "outcome", status); /* not "status": the reference reads that as a queue state */
    servprof_event(x, "httpRes");
    if (!r->link_recorded)
        ins_link(r); /* it began before collection was on: join its ids now */
    return 1;
}

void ins_queue(const char *event, const char *queue, const tl_request *r, int queue_size)
{
    servprof_rec *x = servprof_rec_begin(L, "Schedule");
    servprof_res_str(x, r->engine_id);
    servprof_metric(x, "QueueSize", queue_size);
    servprof_metric_scope(x, "QueueName", queue);
    if (r->preemptions)
        servprof_attr_int(x, "preemptions", r->preemptions);
    servprof_event(x, event);
}

static const char *batch_type(const tl_batch *b)
{
    if (b->n_prefill && b->n_decode)
        return "Prefill, Decode";
    return b->n_prefill ? "Prefill" : "Decode";
}

/* The batch's rid list: {rid, iter, type, num_scheduled_tokens, ...}. */
static void rid_list(servprof_rec *x, const tl_batch *b, int full)
{
    if (!x)
        return;
    servprof_attr_array_begin(x, "rid");
    for (int i = 0; i < b->n; i++) {
        const tl_batch_item *it = &b->items[i];
        servprof_attr_object_begin(x, NULL);
        servprof_attr_str(x, "rid", it->req->engine_id);
        servprof_attr_int(x, "iter", it->iter);
        servprof_attr_int(x, "type", it->type);
        servprof_attr_int(x, "num_scheduled_tokens", it->n);
        if (full) {
            servprof_attr_int(x, "num_prompt_tokens", it->req->n_prompt);
            servprof_attr_int(x, "num_computed_tokens", it->n_computed);
        }
        servprof_attr_end(x);
    }
    servprof_attr_end(x);
    servprof_attr_str(x, "batch_type", batch_type(b));
    servprof_attr_int(x, "batch_size", b->n);
}

void ins_batch_schedule(const tl_batch *b, int64_t t0, int64_t t1)
{
    servprof_rec *x = servprof_rec_begin(L, "BatchSchedule");
    rid_list(x, b, 1);
    servprof_attr_int(x, "total_scheduled_tokens", b->tokens);
    servprof_span_at(x, "BatchSchedule", t0, t1);
}

servprof_span ins_model_exec_begin(const tl_batch *b)
{
    servprof_rec *x = servprof_rec_begin(L, "ModelExecute");
    rid_list(x, b, 1);
    return servprof_span_begin(x, "modelExec");
}

void ins_model_exec_end(servprof_span s, const tl_batch *b)
{
    if (!s)
        return;
    servprof_rec *x = servprof_rec_begin(L, "ModelExecute");
    servprof_attr_int(x, "num_scheduled_tokens", b->tokens);
    servprof_span_end_rec(x, s);
}

void ins_forward(const tl_batch *b, int64_t t0, int64_t t1)
{
    servprof_rec *x = servprof_rec_begin(L, "ModelExecute");
    rid_list(x, b, 0);
    servprof_span_at(x, "forward", t0, t1);
}

void ins_detokenize(const tl_request *r, int n, int n_out)
{
    /* The first token out is what TTFT needs: INFO. Every later one would
     * be the most frequent record of all (one per token per request) and
     * is only needed for inter-token analysis: DETAILED. */
    servprof_rec *x = servprof_rec_begin(n_out == n ? L : SERVPROF_LEVEL_DETAILED, "Request");
    servprof_res_str(x, r->http_id);
    servprof_attr_int(x, "num_tokens", n);
    servprof_attr_int(x, "num_output_tokens", n_out);
    servprof_event(x, "detokenize");
}

void ins_cache_hit(const tl_request *r, int hit_tokens)
{
    servprof_rec *x = servprof_rec_begin(L, "Schedule");
    servprof_res_str(x, r->engine_id);
    servprof_attr_double(x, "hitCache", r->n_tokens ? (double)hit_tokens / r->n_tokens : 0.0);
    servprof_attr_int(x, "hit_tokens", hit_tokens);
    servprof_event(x, "CacheHitRate");
}

void ins_kv_status(const tl_batch *b, const kv_pool *kv)
{
    servprof_rec *x = servprof_rec_begin(L, "KVCache");
    if (!x)
        return;
    int total = kv_total_blocks(kv), free_now = kv_free_blocks(kv);
    servprof_metric(x, "TotalBlocks", total);
    servprof_metric(x, "UsedBlocks", total - free_now);
    servprof_metric(x, "FreeBlocks", free_now);
    servprof_metric(x, "FreeBlocksBefore", b->free_before);
    servprof_metric(x, "FreeBlocksAfter", b->free_after);
    servprof_metric(x, "AllocatedBlocks", b->blocks_allocated);
    servprof_metric(x, "UsagePercent", total ? (double)(total - free_now) / total : 0.0);
    servprof_metric(x, "CachedBlocks", kv_cached_blocks(kv));
    servprof_event(x, "KVCacheStatus");
}

/* The three spans of one rank's MoE layer. Each carries step, layer and
 * rank, so that the parser groups them without relying on order; the
 * expert compute also carries its experts' loads (the EPLB view). */
static servprof_rec *moe_rec(long long step, int layer, int rank, int rows)
{
    servprof_rec *x = servprof_rec_begin(L, "MoE");
    if (!x)
        return NULL;
    servprof_attr_int(x, "step", step);
    servprof_attr_int(x, "layer", layer);
    servprof_attr_int(x, "rank", rank);
    servprof_attr_int(x, "tokens", rows);
    return x;
}

void ins_moe_rank(long long step, int layer, int rank, const int64_t t[4], int rows, const int64_t *expert_ids,
                  const int64_t *expert_tokens, int n)
{
    servprof_rec *x = moe_rec(step, layer, rank, rows);
    if (!x)
        return;
    servprof_span_at(x, "MoeDistributeDispatch", t[0], t[1]);
    x = moe_rec(step, layer, rank, rows);
    servprof_attr_int_array(x, "expert_ids", expert_ids, (size_t)n);
    servprof_attr_int_array(x, "expert_tokens", expert_tokens, (size_t)n);
    servprof_span_at(x, "GroupedMatmul", t[1], t[2]);
    x = moe_rec(step, layer, rank, rows);
    servprof_span_at(x, "MoeDistributeCombine", t[2], t[3]);
}
