/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_engine.c — the engine of tiny-llm-server without HTTP: continuous
 * batching completes every request; the model is deterministic (same
 * prompt, same tokens, whatever the batch and whatever preemption did);
 * a KV pool too small for the load forces preemptions and still completes;
 * the prefix cache finds shared prompts; aborts free every block.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "engine/scheduler.h"

static tl_engine_cfg small_cfg(int num_blocks, int chunked)
{
    tl_engine_cfg c = {
        .model = {.vocab = 256, .d_model = 32, .n_layers = 1, .n_heads = 2, .d_ff = 64,
                  .max_pos = 128, .num_blocks = num_blocks, .block_size = 8, .seed = 7},
        .max_num_seqs = 8, .max_batched_tokens = 64, .chunked_prefill = chunked,
        .prefix_caching = 1, .max_inflight = 64};
    if (!chunked)
        c.max_batched_tokens = 128;
    return c;
}

static tl_request *make(int n_prompt, int max_tokens, int seed)
{
    tl_request *r = tl_request_new(128 - max_tokens, max_tokens);
    for (int i = 0; i < n_prompt; i++)
        r->tokens[i] = (seed * 31 + i * 17) % 256;
    tl_request_set_prompt(r, n_prompt);
    return r;
}

/* Waits for r to finish; copies its output; releases it. Returns finish. */
static int finish_of(tl_engine *e, tl_request *r, int32_t *out, int *n_out)
{
    int state = 0, how = 0, n = 0;
    for (int i = 0; i < 3000 && state != TL_DONE; i++)
        n = tl_engine_wait(e, r, n, 100, &state, &how);
    *n_out = n;
    if (out)
        memcpy(out, r->tokens + r->n_prompt, (size_t)n * sizeof *out);
    tl_engine_claim_end(e, r);
    tl_engine_release(e, r, 0);
    return how;
}

static void run_batch(int num_blocks, int chunked, int32_t ref[][40], int expect_preempt)
{
    tl_engine_cfg c = small_cfg(num_blocks, chunked);
    tl_engine *e = tl_engine_new(&c);
    CHECK(e != NULL);
    if (!e)
        return;
    CHECK_INT(tl_engine_start(e), 0);
    enum { N = 12 };
    tl_request *rs[N];
    for (int i = 0; i < N; i++) {
        rs[i] = make(40 + i * 3, 40, i % 4); /* 4 distinct prompt starts */
        CHECK_INT(tl_engine_submit(e, rs[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        int32_t out[40];
        int n = 0;
        CHECK_INT(finish_of(e, rs[i], out, &n), TL_FINISH_LENGTH);
        CHECK_INT(n, 40);
        if (ref[i][0] < 0)
            memcpy(ref[i], out, sizeof out);
        else
            CHECK(!memcmp(ref[i], out, sizeof out)); /* same tokens as the reference run */
    }
    tl_engine_stats s;
    tl_engine_stats_get(e, &s);
    CHECK_INT(s.completed, N);
    CHECK_INT(s.aborted, 0);
    CHECK_INT(s.free_blocks, s.total_blocks);
    CHECK_INT(s.waiting + s.running, 0);
    CHECK_INT(s.output_tokens, N * 40);
    CHECK(s.cached_tokens > 0); /* requests i and i+4 share their prompt start */
    if (expect_preempt)
        CHECK(s.preempted > 0);
    tl_engine_stop(e);
    tl_engine_free(e);
}

int main(void)
{
    /* Bad sizes are refused with a message, not a crash. */
    tl_engine_cfg bad = small_cfg(4, 1); /* 4 blocks of 8 < max_pos 128 */
    CHECK(tl_engine_new(&bad) == NULL);

    static int32_t ref[12][40];
    for (int i = 0; i < 12; i++)
        ref[i][0] = -1;
    run_batch(256, 1, ref, 0); /* plenty of blocks: the reference */
    run_batch(24, 1, ref, 1);  /* 24 blocks for 12 sequences of ~11 blocks: preemption */
    run_batch(256, 0, ref, 0); /* no chunked prefill */

    /* Aborts: waiting and running requests end as aborted, blocks freed. */
    tl_engine_cfg c = small_cfg(64, 1);
    c.max_inflight = 4;
    tl_engine *e = tl_engine_new(&c);
    CHECK_INT(tl_engine_start(e), 0);
    tl_request *rs[5];
    for (int i = 0; i < 4; i++) {
        rs[i] = make(60, 60, i);
        CHECK_INT(tl_engine_submit(e, rs[i]), 0);
    }
    rs[4] = make(10, 10, 9);
    CHECK_INT(tl_engine_submit(e, rs[4]), -1); /* over max_inflight */
    tl_request_free(rs[4]);
    for (int i = 0; i < 4; i++)
        tl_engine_release(e, rs[i], 1); /* clients gone */
    tl_engine_stats s;
    for (int i = 0; i < 500; i++) {
        tl_engine_stats_get(e, &s);
        if (s.completed + s.aborted == 4 && s.waiting + s.running == 0)
            break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    CHECK_INT(s.completed + s.aborted, 4);
    CHECK(s.aborted >= 1);
    CHECK_INT(s.rejected, 1);
    CHECK_INT(s.free_blocks, s.total_blocks);
    tl_engine_stop(e);
    tl_engine_free(e);
    CHECK_DONE();
}
