/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_kvcache.c — the block pool of tiny-llm-server: all-or-nothing
 * allocation, reference counts, LRU eviction, prefix caching (hits only on
 * published blocks, the last token always left to compute, chained hashes).
 */
#include <stdlib.h>

#include "check.h"
#include "engine/kvcache.h"

static void fill(int32_t *t, int n, int seed)
{
    for (int i = 0; i < n; i++)
        t[i] = (seed * 131 + i * 7) % 1000;
}

int main(void)
{
    CHECK(kv_pool_new(0, 16, 1) == NULL);
    CHECK(kv_pool_new(8, 0, 1) == NULL);

    kv_pool *kv = kv_pool_new(8, 4, 1);
    CHECK(kv != NULL);
    CHECK_INT(kv_total_blocks(kv), 8);
    CHECK_INT(kv_free_blocks(kv), 8);

    /* All or nothing. */
    int a[8], b[8];
    CHECK_INT(kv_alloc(kv, 5, a), 0);
    CHECK_INT(kv_free_blocks(kv), 3);
    CHECK_INT(kv_alloc(kv, 4, b), -1);
    CHECK_INT(kv_free_blocks(kv), 3);
    CHECK_INT(kv_alloc(kv, 3, b), 0);
    CHECK_INT(kv_free_blocks(kv), 0);
    kv_release(kv, b, 3);
    kv_release(kv, a, 5);
    CHECK_INT(kv_free_blocks(kv), 8);

    /* Publish the blocks of a 12-token prompt (3 full blocks), release them:
     * they stay findable while free. */
    int32_t p[32];
    fill(p, 32, 1);
    int t1[8];
    CHECK_INT(kv_alloc(kv, 3, t1), 0);
    uint64_t h = 0;
    for (int i = 0; i < 3; i++) {
        h = kv_block_hash(h, p + 4 * i, 4);
        kv_publish(kv, t1[i], h);
    }
    CHECK_INT(kv_cached_blocks(kv), 3);
    kv_release(kv, t1, 3);
    CHECK_INT(kv_free_blocks(kv), 8);

    /* Same 12 tokens: at most 2 blocks hit (the last token must compute). */
    int t2[8];
    uint64_t last;
    CHECK_INT(kv_match_prefix(kv, p, 12, t2, &last), 2);
    CHECK_INT(t2[0], t1[0]);
    CHECK_INT(t2[1], t1[1]);
    CHECK(last == kv_block_hash(kv_block_hash(0, p, 4), p + 4, 4));
    CHECK_INT(kv_free_blocks(kv), 6);
    /* A longer prompt with the same start hits all 3. */
    int t3[8];
    CHECK_INT(kv_match_prefix(kv, p, 20, t3, &last), 3);
    CHECK_INT(kv_free_blocks(kv), 5); /* blocks 0,1 shared, block 2 taken */
    kv_release(kv, t3, 3);
    kv_release(kv, t2, 2);

    /* A different first block: no hit even if later blocks match. */
    int32_t q[32];
    fill(q, 32, 1);
    q[0] = 999;
    CHECK_INT(kv_match_prefix(kv, q, 20, t3, &last), 0);
    CHECK(last == 0);

    /* Allocating every block evicts the cached ones. */
    int all[8];
    CHECK_INT(kv_alloc(kv, 8, all), 0);
    CHECK_INT(kv_cached_blocks(kv), 0);
    kv_release(kv, all, 8);
    CHECK_INT(kv_match_prefix(kv, p, 20, t3, &last), 0);

    /* LRU: the block freed first is evicted first. */
    int x[8];
    CHECK_INT(kv_alloc(kv, 8, x), 0);
    kv_publish(kv, x[0], 111);
    kv_publish(kv, x[1], 222);
    kv_publish(kv, x[0], 333); /* already cached: keeps its first hash */
    kv_release(kv, &x[0], 1);  /* freed first */
    kv_release(kv, &x[1], 1);
    int y;
    CHECK_INT(kv_alloc(kv, 1, &y), 0);
    CHECK_INT(y, x[0]);
    CHECK_INT(kv_cached_blocks(kv), 1);
    kv_release(kv, &y, 1);
    kv_release(kv, x + 2, 6);
    CHECK_INT(kv_free_blocks(kv), 8);
    kv_pool_free(kv);

    /* Caching off: never a hit. */
    kv = kv_pool_new(4, 4, 0);
    int z[4];
    CHECK_INT(kv_alloc(kv, 2, z), 0);
    kv_publish(kv, z[0], kv_block_hash(0, p, 4));
    kv_release(kv, z, 2);
    CHECK_INT(kv_match_prefix(kv, p, 12, z, &last), 0);
    kv_pool_free(kv);
    kv_pool_free(NULL);
    CHECK_DONE();
}
