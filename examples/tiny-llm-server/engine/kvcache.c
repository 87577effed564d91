/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvcache.c — the block pool of the paged KV cache (see kvcache.h).
 *
 * Design. Blocks are numbered 0..N-1; the model keeps the key/value memory
 * of block b at index b, so this file only does bookkeeping. Every block has
 * a reference count. Blocks with no reference sit in one doubly linked free
 * list: allocation takes from the head, release appends to the tail, so the
 * block evicted first is the one freed longest ago (LRU) — this is what keeps
 * a popular system prompt cached while it is being reused.
 *
 * Prefix caching (vLLM's "automatic prefix caching" idea, written from its
 * description): a full block is identified by a hash chained over the whole
 * prefix up to it, h_i = H(h_{i-1}, tokens of block i). A block is published
 * under its hash only once its keys and values are computed, so a hit never
 * reads unfinished memory. A cached block with no holder stays in the free
 * list *and* the hash table; a hit takes it out of the free list, an
 * allocation that reaches it evicts it from the table. The table is chained
 * through an index per block (no allocation after start). 64-bit hashes are
 * trusted not to collide; at these sizes the odds are ~1e-12.
 */
#include "kvcache.h"

#include <assert.h>
#include <stdlib.h>

typedef struct kv_block {
    int ref;        /* holders; 0 means the block is in the free list */
    int prev, next; /* free list links, -1 at the ends */
    int hnext;      /* next block in the same hash bucket, -1 at the end */
    int cached;     /* published in the hash table under `hash` */
    uint64_t hash;
} kv_block;

struct kv_pool {
    int n, block_size, prefix_caching;
    kv_block *b;
    int head, tail; /* free list: allocate from head, release to tail */
    int nfree;      /* blocks in the free list */
    int ncached;    /* blocks in the hash table */
    int *bucket;    /* hash table heads, nbucket a power of two */
    unsigned nbucket;
};

static void list_remove(kv_pool *kv, int i)
{
    kv_block *x = &kv->b[i];
    if (x->prev >= 0) kv->b[x->prev].next = x->next; else kv->head = x->next;
    if (x->next >= 0) kv->b[x->next].prev = x->prev; else kv->tail = x->prev;
    x->prev = x->next = -1;
    kv->nfree--;
}

static void list_append(kv_pool *kv, int i)
{
    kv_block *x = &kv->b[i];
    x->prev = kv->tail;
    x->next = -1;
    if (kv->tail >= 0) kv->b[kv->tail].next = i; else kv->head = i;
    kv->tail = i;
    kv->nfree++;
}

static unsigned bucket_of(const kv_pool *kv, uint64_t h)
{
    return (unsigned)(h ^ (h >> 29)) & (kv->nbucket - 1);
}

static int table_find(const kv_pool *kv, uint64_t h)
{
    for (int i = kv->bucket[bucket_of(kv, h)]; i >= 0; i = kv->b[i].hnext)
        if (kv->b[i].hash == h)
            return i;
    return -1;
}

static void table_remove(kv_pool *kv, int i)
{
    int *link = &kv->bucket[bucket_of(kv, kv->b[i].hash)];
    while (*link != i) {
        assert(*link >= 0);
        link = &kv->b[*link].hnext;
    }
    *link = kv->b[i].hnext;
    kv->b[i].hnext = -1;
    kv->b[i].cached = 0;
    kv->ncached--;
}

kv_pool *kv_pool_new(int num_blocks, int block_size, int prefix_caching)
{
    if (num_blocks < 1 || block_size < 1 || num_blocks > (1 << 24))
        return NULL;
    kv_pool *kv = calloc(1, sizeof *kv);
    if (!kv)
        return NULL;
    kv->n = num_blocks;
    kv->block_size = block_size;
    kv->prefix_caching = prefix_caching != 0;
    kv->nbucket = 1;
    while (kv->nbucket < 2u * (unsigned)num_blocks)
        kv->nbucket <<= 1;
    kv->b = calloc((size_t)num_blocks, sizeof *kv->b);
    kv->bucket = malloc(kv->nbucket * sizeof *kv->bucket);
    if (!kv->b || !kv->bucket) {
        kv_pool_free(kv);
        return NULL;
    }
    for (unsigned i = 0; i < kv->nbucket; i++)
        kv->bucket[i] = -1;
    kv->head = kv->tail = -1;
    for (int i = 0; i < num_blocks; i++) {
        kv->b[i].hnext = -1;
        list_append(kv, i);
    }
    return kv;
}

void kv_pool_free(kv_pool *kv)
{
    if (!kv)
        return;
    free(kv->b);
    free(kv->bucket);
    free(kv);
}

int kv_total_blocks(const kv_pool *kv) { return kv->n; }
int kv_block_size(const kv_pool *kv) { return kv->block_size; }
int kv_free_blocks(const kv_pool *kv) { return kv->nfree; }
int kv_cached_blocks(const kv_pool *kv) { return kv->ncached; }

uint64_t kv_block_hash(uint64_t prev, const int32_t *tokens, int n)
{
    /* FNV-1a over the previous hash and the token ids, then a final mix so
     * that bucket bits depend on every input bit. */
    uint64_t h = 1469598103934665603ull ^ prev;
    for (int i = 0; i < n; i++) {
        h ^= (uint32_t)tokens[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1; /* 0 means "no predecessor" */
}

int kv_match_prefix(kv_pool *kv, const int32_t *tokens, int n, int *table, uint64_t *last_hash)
{
    *last_hash = 0;
    if (!kv->prefix_caching || n < 2)
        return 0;
    int max_blocks = (n - 1) / kv->block_size; /* keep the last token to compute */
    uint64_t h = 0;
    int found = 0;
    for (int i = 0; i < max_blocks; i++) {
        h = kv_block_hash(h, tokens + (size_t)i * kv->block_size, kv->block_size);
        int b = table_find(kv, h);
        if (b < 0)
            break;
        if (kv->b[b].ref++ == 0)
            list_remove(kv, b);
        table[found++] = b;
        *last_hash = h;
    }
    return found;
}

int kv_alloc(kv_pool *kv, int n, int *out)
{
    assert(n >= 0);
    if (n > kv->nfree)
        return -1;
    for (int i = 0; i < n; i++) {
        int b = kv->head;
        assert(b >= 0 && kv->b[b].ref == 0);
        list_remove(kv, b);
        if (kv->b[b].cached)
            table_remove(kv, b); /* eviction: its content is about to be overwritten */
        kv->b[b].ref = 1;
        out[i] = b;
    }
    return 0;
}

void kv_release(kv_pool *kv, const int *blocks, int n)
{
    /* Release the last blocks first: the tail of a sequence is the least
     * likely to be shared, so it should be evicted before its prefix. */
    for (int i = n - 1; i >= 0; i--) {
        int b = blocks[i];
        assert(b >= 0 && b < kv->n && kv->b[b].ref > 0);
        if (--kv->b[b].ref == 0)
            list_append(kv, b);
    }
}

void kv_publish(kv_pool *kv, int block, uint64_t hash)
{
    assert(block >= 0 && block < kv->n && kv->b[block].ref > 0);
    if (!kv->prefix_caching || kv->b[block].cached || table_find(kv, hash) >= 0)
        return;
    kv_block *x = &kv->b[block];
    x->hash = hash;
    x->cached = 1;
    unsigned k = bucket_of(kv, hash);
    x->hnext = kv->bucket[k];
    kv->bucket[k] = block;
    kv->ncached++;
}
