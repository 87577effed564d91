/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_schema.c — the live metric families: names (Prometheus
 * conventions: base units, `_seconds`, `_total`), help texts, the vLLM
 * metric each corresponds to, and the histogram buckets.
 *
 * Design: one fixed schema compiled into both the writer of the per-process
 * files and their reader, so a file is a plain array of numbers (no names
 * stored per value). Time buckets are 16 per doubling, 2^-12 s (0.24 ms)
 * to 2^9 s (512 s): histogram_quantile() interpolates inside one bucket,
 * and a bucket 4.4 % wide keeps its answer within a few percent of the
 * exact quantile (8 per doubling, 9 % wide, was measured further off:
 * docs/benchmarks.md, "Figures behind design comments"), where vLLM's
 * coarser buckets can be off by half. The
 * price is 338 series per histogram and label set. Count buckets
 * (requests, tokens per step) are 1, 1.5, 2, 3, 4, 6 ... 65536.
 */
#include <pthread.h>

#include "metrics.h"

const sp_mdef sp_mcounter_defs[SP_MC_N] = {
    [SP_MC_PROMPT_TOKENS] = {"prompt_tokens_total",
                             "Prompt tokens of finished requests (httpRes recvTokenSize).",
                             "vllm:prompt_tokens_total"},
    [SP_MC_GENERATION_TOKENS] = {"generation_tokens_total",
                                 "Generated tokens of finished requests (httpRes replyTokenSize).",
                                 "vllm:generation_tokens_total"},
    [SP_MC_PREEMPTIONS] = {"preemptions_total",
                           "Requests sent back to WAITING after running, or into SWAPPED.",
                           "vllm:num_preemptions_total"},
    [SP_MC_RECORDS] = {"records_total", "Records the process published to servprof.", ""},
    [SP_MC_DROPPED] = {"records_dropped_total",
                       "Records servprof dropped because a thread buffer was full.", ""},
    [SP_MC_WRITE_ERRORS] = {"write_errors_total", "Store write errors (tracing only).", ""},
    [SP_MC_UNTRACKED] = {"requests_untracked_total",
                         "Requests whose state servprof gave up (table full, or no end "
                         "within 10 minutes).",
                         ""},
    [SP_MC_OTLP_SENT] = {"otlp_spans_sent_total",
                         "Spans of request tracing over OTLP that the collector accepted.", ""},
    [SP_MC_OTLP_DROPPED] = {"otlp_spans_dropped_total",
                            "Spans of request tracing over OTLP dropped (queue full, refused, "
                            "retries exhausted, exit flush ran out of time, out of memory).",
                            ""},
};

const sp_mdef sp_mgauge_defs[SP_MG_N] = {
    [SP_MG_WAITING] = {"requests_waiting", "Requests in the WAITING queue.",
                       "vllm:num_requests_waiting"},
    [SP_MG_RUNNING] = {"requests_running", "Requests in the RUNNING queue.",
                       "vllm:num_requests_running"},
    [SP_MG_SWAPPED] = {"requests_swapped", "Requests in the SWAPPED queue.",
                       "vllm:num_requests_swapped"},
    [SP_MG_KV_USAGE] = {"kv_cache_usage_ratio", "KV cache blocks in use, 0..1.",
                        "vllm:gpu_cache_usage_perc (v1: vllm:kv_cache_usage_perc)"},
    [SP_MG_KV_USED_BLOCKS] = {"kv_cache_used_blocks", "KV cache blocks in use.", ""},
    [SP_MG_KV_TOTAL_BLOCKS] = {"kv_cache_total_blocks", "KV cache blocks in all.",
                               "vllm:cache_config_info num_gpu_blocks"},
    [SP_MG_REQUESTS_TRACKED] = {"requests_tracked",
                                "Requests in flight whose state servprof keeps.", ""},
};

const sp_mdef sp_mhist_defs[SP_MH_N] = {
    [SP_MH_TTFT] = {"time_to_first_token_seconds", "First token out minus httpReq.",
                    "vllm:time_to_first_token_seconds"},
    [SP_MH_TPOT] = {"time_per_output_token_seconds",
                    "(end - first token) / (generated tokens - 1), per request.",
                    "vllm:request_time_per_output_token_seconds"},
    [SP_MH_E2E] = {"e2e_request_latency_seconds", "httpRes minus httpReq.",
                   "vllm:e2e_request_latency_seconds"},
    [SP_MH_QUEUE] = {"request_queue_time_seconds", "Time spent in WAITING, summed per request.",
                     "vllm:request_queue_time_seconds"},
    [SP_MH_PREFILL] = {"request_prefill_time_seconds",
                       "First token minus the first dequeue from WAITING.",
                       "vllm:request_prefill_time_seconds"},
    [SP_MH_DECODE] = {"request_decode_time_seconds", "End minus first token.",
                      "vllm:request_decode_time_seconds"},
    [SP_MH_BATCH_SIZE] = {"iteration_batch_size", "Requests per scheduling step (BatchSchedule).",
                          ""},
    [SP_MH_BATCH_TOKENS] = {"iteration_scheduled_tokens",
                            "Tokens scheduled per step (BatchSchedule).",
                            "vllm:iteration_tokens_total"},
};

const char *const sp_metrics_domains[SP_METRICS_NDOMAINS] = {"Request", "Schedule",
                                                             "BatchSchedule", "KVCache"};

const sp_mdef sp_mrequests_def = {"requests_total", "Finished requests by outcome (httpRes outcome, else status).",
                                  "vllm:request_success_total{finished_reason}"};

#define TIME_BOUNDS 337  /* 2^(-12 + k/16), k = 0..336 */
#define COUNT_BOUNDS 33  /* 2^k and 1.5 * 2^k up to 65536 */

static double time_bounds[TIME_BOUNDS];
static double count_bounds[COUNT_BOUNDS];
_Static_assert(TIME_BOUNDS + 1 <= SP_M_BUCKETS_MAX, "bucket room");

static void compute_bounds(void)
{
    /* 2^(j/16), j = 0..15: the library does not link libm for these. */
    static const double step[16] = {
        1.0, 1.0442737824274138, 1.0905077326652577, 1.1387886347566916, 1.189207115002721,
        1.241857812073484, 1.2968395546510096, 1.3542555469368927, 1.4142135623730951,
        1.4768261459394993, 1.5422108254079407, 1.6104903319492543, 1.681792830507429,
        1.7562521603732995, 1.8340080864093424, 1.9152065613971474};
    double p2 = 1.0;
    for (int k = 0; k < COUNT_BOUNDS; k++) {
        count_bounds[k] = (k % 2 ? 1.5 : 1.0) * p2;
        if (k % 2)
            p2 *= 2;
    }
    p2 = 1.0 / 4096; /* 2^-12 */
    for (int k = 0; k < TIME_BOUNDS; k++) {
        time_bounds[k] = step[k % 16] * p2;
        if (k % 16 == 15)
            p2 *= 2;
    }
}

static void fill_bounds(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, compute_bounds);
}

static int is_count(int h)
{
    return h == SP_MH_BATCH_SIZE || h == SP_MH_BATCH_TOKENS;
}

int sp_mhist_bounds(int h, const double **bounds)
{
    fill_bounds();
    *bounds = is_count(h) ? count_bounds : time_bounds;
    return is_count(h) ? COUNT_BOUNDS : TIME_BOUNDS;
}

int sp_mhist_bucket(int h, double v)
{
    const double *b;
    int n = sp_mhist_bounds(h, &b);
    int lo = 0, hi = n; /* first bound >= v, by bisection; n = +Inf */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (v <= b[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}
