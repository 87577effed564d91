/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvcache.h — the paged KV cache's block pool: fixed-size blocks, reference
 * counts, a free list in LRU order, and an optional prefix cache that maps
 * the hash of a full block of tokens (chained with its predecessors) to the
 * block that holds its computed keys and values.
 *
 * Not thread-safe: the pool belongs to the engine thread (readers of the
 * counters elsewhere take the engine lock).
 */
#ifndef TL_KVCACHE_H
#define TL_KVCACHE_H

#include <stdint.h>

typedef struct kv_pool kv_pool;

/* A pool of num_blocks blocks of block_size tokens. NULL on bad sizes or
 * no memory. prefix_caching: 0 off, 1 on. */
kv_pool *kv_pool_new(int num_blocks, int block_size, int prefix_caching);
void kv_pool_free(kv_pool *kv); /* NULL is fine */

int kv_total_blocks(const kv_pool *kv);
int kv_block_size(const kv_pool *kv);
/* Blocks nobody holds (cached-but-unused blocks count as free: they are
 * evicted on demand). */
int kv_free_blocks(const kv_pool *kv);
/* Blocks that hold a reusable cached prefix right now. */
int kv_cached_blocks(const kv_pool *kv);

/* Hash of one full block given the previous block's hash (0 for the
 * first): the chain makes a block's identity include its whole prefix. */
uint64_t kv_block_hash(uint64_t prev, const int32_t *tokens, int n);

/* Looks up the longest run of leading full blocks of tokens[0..n) already in
 * the cache, but leaves at least one token to compute (the last token must
 * run to produce logits). Appends the blocks found to table (taking a
 * reference on each) and returns how many; *last_hash is the chain hash of
 * the last block found (0 when none). 0 when caching is off. */
int kv_match_prefix(kv_pool *kv, const int32_t *tokens, int n, int *table, uint64_t *last_hash);

/* Allocates n blocks into out (all or nothing): 0, or -1 when fewer than n
 * are free. Evicts cached blocks, least recently freed first. */
int kv_alloc(kv_pool *kv, int n, int *out);

/* Drops one reference on each of the n blocks. A block no one holds goes to
 * the tail of the free list; if it holds a cached prefix it stays findable
 * until it is evicted. */
void kv_release(kv_pool *kv, const int *blocks, int n);

/* Publishes block `block`, now fully computed, under `hash` so that later
 * requests with the same prefix reuse it. A hash already present keeps its
 * first block (two requests may compute the same prefix at once). */
void kv_publish(kv_pool *kv, int block, uint64_t hash);

#endif
