/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.h — a tiny decoder-only transformer with random weights, run on the
 * CPU in plain C. Its keys and values live in a paged KV cache: block b of
 * the pool (kvcache.h) is memory slot b here, and each sequence passes its
 * block table.
 *
 * Not thread-safe: one model per engine thread (the forward pass uses
 * scratch memory owned by the model).
 */
#ifndef TL_MODEL_H
#define TL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "moe.h"

typedef struct tl_model_cfg {
    int vocab;        /* token ids are 0..vocab-1 */
    int d_model;      /* multiple of n_heads */
    int n_layers;
    int n_heads;
    int d_ff;
    int max_pos;      /* longest sequence (max_model_len) */
    int num_blocks;   /* KV cache blocks */
    int block_size;   /* tokens per block */
    int max_tokens;   /* most tokens in one forward (the step's token budget) */
    uint64_t seed;    /* the weights are a function of the seed */
    tl_moe_cfg moe;   /* moe.n_experts > 0: every layer's feed-forward is a MoE (moe.h) */
} tl_model_cfg;

/* One sequence's share of a forward: n tokens at positions pos0..pos0+n-1,
 * whose keys/values go to (and whose attention reads from) the blocks of
 * block_table. When want_token, the next token is sampled (greedy) from the
 * last position into *next. */
typedef struct tl_fwd_item {
    const int32_t *tokens; /* the n tokens to run */
    int pos0, n;
    const int *block_table; /* covers positions 0..pos0+n-1 */
    int want_token;
    int32_t next;           /* out */
} tl_fwd_item;

typedef struct tl_model tl_model;

/* NULL on bad sizes (message on stderr) or no memory. */
tl_model *tl_model_new(const tl_model_cfg *cfg);
void tl_model_free(tl_model *m); /* NULL is fine */

/* Runs every item (their total n <= cfg.max_tokens; items past it are
 * skipped with a message). Layer by layer over the whole batch, so that a
 * MoE layer dispatches the step's tokens together. */
void tl_model_forward(tl_model *m, tl_fwd_item *items, int n_items);
/* The scheduler step the next forward belongs to (the MoE records' `step`). */
void tl_model_set_step(tl_model *m, long long step);

/* Bytes of weights and of KV cache memory (for the startup line). */
uint64_t tl_model_weight_bytes(const tl_model *m);
uint64_t tl_model_kv_bytes(const tl_model *m);

/* One KV block as bytes (every layer's keys, then values): what a prefill
 * instance hands to a decode instance (pd.c). */
size_t tl_model_block_bytes(const tl_model *m);
void tl_model_block_read(const tl_model *m, int block, void *buf);  /* buf: tl_model_block_bytes() */
void tl_model_block_write(tl_model *m, int block, const void *buf);

#endif
