/* SPDX-License-Identifier: Apache-2.0 */
/*
 * moe.h — a mixture-of-experts feed-forward served with expert parallelism
 * (moe.c): top-k routing over E experts, the experts spread over R
 * expert-parallel ranks, each rank a thread of its own.
 *
 * Per layer of a forward: the router picks each token's top-k experts (the
 * caller's thread); then every rank, at once, gathers the rows routed to
 * its experts (dispatch), runs its experts' two matmuls over them (expert
 * compute, a grouped GEMM) and, after a barrier that every rank must reach,
 * sums the weighted expert outputs of its share of the tokens back into the
 * residual stream (combine). The slowest rank's compute decides when the
 * barrier opens: a hot expert makes every other rank wait at the combine.
 *
 * Thread safety: one caller thread (the engine's); tl_moe_ffn() returns
 * when every rank is done with the layer.
 */
#ifndef TL_MOE_H
#define TL_MOE_H

#include <stdint.h>

enum { TL_MOE_MAX_EXPERTS = 256, TL_MOE_MAX_RANKS = 64, TL_MOE_MAX_HOT = 16 };

typedef struct tl_moe_cfg {
    int n_experts;    /* E; 0: the model is dense (no MoE) */
    int top_k;        /* K experts per token, 1..E */
    int ep_ranks;     /* R ranks (threads); E % R == 0, expert e lives on rank e / (E/R) */
    int hot[TL_MOE_MAX_HOT]; /* --moe-skew: experts the router favours */
    int n_hot;
    float hot_bias;   /* added to the hot experts' router logits */
    const char *clock_path; /* --moe-clock: each rank's own measurements, one line per (step, layer, rank) */
} tl_moe_cfg;

typedef struct tl_moe tl_moe;

/* Parses "E,K,R" into c (n_experts, top_k, ep_ranks). 0 or -1 (message on stderr). */
int tl_moe_parse(const char *s, tl_moe_cfg *c);
/* Parses "e1,e2,...[@bias]" into c->hot / c->hot_bias. 0 or -1 (message on stderr). */
int tl_moe_parse_skew(const char *s, tl_moe_cfg *c);

/* Weights from seed (a stream of its own: the dense weights do not move);
 * starts the R rank threads. NULL on bad sizes or no memory (message on
 * stderr). *weight_bytes grows by the experts' and routers' bytes. */
tl_moe *tl_moe_new(const tl_moe_cfg *c, int d_model, int d_ff, int n_layers, int max_tokens, uint64_t seed,
                   uint64_t *weight_bytes);
/* Stops and joins the rank threads, frees everything. NULL is fine. */
void tl_moe_free(tl_moe *m);
/* x[n][d] += MoE_layer(h[n][d]): layer `layer` of scheduler step `step`.
 * Row i's result depends on row i only (equal prompts, equal tokens). */
void tl_moe_ffn(tl_moe *m, int layer, long long step, const float *h, float *x, int n);

#endif
