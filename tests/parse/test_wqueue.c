/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wqueue.c — an output's encoder on a thread of its own (wqueue.c,
 * `parse --jobs`): every message reaches the encoder once, whole, in the
 * order it was put (small ones packed many to a block, one bigger than a
 * block in a block of its own); the producer waits when PRS_WQ_BLOCKS
 * blocks are queued (the encoder held back: the queue never holds more);
 * the thread's prs_log lines are kept and logged by prs_wq_stop on the
 * caller's thread at the caller's level (here: the threshold drops one).
 * A pair (prs_wq_start_pair): each consumer gets exactly the messages put
 * for it, whole and in order, the ones for both included, while the other
 * reads the same blocks.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "plog.h"
#include "wqueue.h"

typedef struct seen {
    long long next;         /* the sequence number expected next */
    long long bad;          /* messages out of order or damaged */
    long long big;          /* the big message, checked whole */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int hold;               /* the encoder waits while set (the bound's test) */
    atomic_long handled;
} seen;

static void encode(void *ctx, uint8_t *msg, size_t n)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    while (s->hold)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    long long k;
    memcpy(&k, msg, sizeof k);
    if (k != s->next)
        s->bad++;
    for (size_t i = sizeof k; i < n; i++)
        if (msg[i] != (uint8_t)(k + (long long)i))
            s->bad++;
    if (n > PRS_WQ_BLOCK)
        s->big++;
    if (k == 3)
        prs_log(PRS_WARNING, "encoder says %lld", k);
    if (k == 4)
        prs_log(PRS_DEBUG, "below the caller's threshold");
    s->next++;
    atomic_fetch_add(&s->handled, 1);
}

static void put(prs_wq *q, long long k, size_t n)
{
    uint8_t *p = prs_wq_put(q, n);
    memcpy(p, &k, sizeof k);
    for (size_t i = sizeof k; i < n; i++)
        p[i] = (uint8_t)(k + (long long)i);
}

static char path[] = "/tmp/spp-wqueue-XXXXXX";

static void test_order_and_sizes(void)
{
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    prs_wq *q = prs_wq_start(encode, &s, "sp-test");
    CHECK(q != NULL);
    if (!q)
        return;
    long long k = 0;
    for (; k < 200000; k++)
        put(q, k, 8 + (size_t)(k % 300)); /* ~30 MB in all: many blocks */
    put(q, k++, PRS_WQ_BLOCK * 2 + 5);     /* its own block */
    for (int i = 0; i < 10; i++)
        put(q, k++, 16);
    /* the thread's lines: kept, then logged here at this thread's level */
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    prs_log_set_level(PRS_INFO);
    prs_wq_stop(q);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *got = check_slurp(path);
    close(fd);
    unlink(path);
    CHECK_STR(got ? got : "", "servprof parse: warning: encoder says 3\n");
    free(got);
    CHECK_INT(s.bad, 0);
    CHECK_INT(s.next, k);
    CHECK_INT(s.big, 1);
}

/* With the encoder held, the producer stops after about PRS_WQ_BLOCKS
 * blocks: the one it fills and those queued (+1 the thread took). */
typedef struct producer { prs_wq *q; atomic_long put; } producer;

static void *produce(void *arg)
{
    producer *p = arg;
    for (long long k = 0; k < 64 * 1024; k++) {
        put(p->q, k, 1024);
        atomic_fetch_add(&p->put, 1);
    }
    return NULL;
}

static void test_bounded(void)
{
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .hold = 1};
    producer p = {prs_wq_start(encode, &s, "sp-test"), 0};
    CHECK(p.q != NULL);
    if (!p.q)
        return;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, produce, &p) == 0);
    /* The producer gets at least PRS_WQ_BLOCKS blocks in (a condition,
     * waited for), then stops: whatever the timing, it never gets past the
     * bound (the queued blocks, the one the thread holds, the one it fills). */
    long per_block = (long)(PRS_WQ_BLOCK / (1024 + 8));
    for (int i = 0; i < 60000 && atomic_load(&p.put) < per_block * PRS_WQ_BLOCKS; i++)
        usleep(1000);
    CHECK(atomic_load(&p.put) >= per_block * PRS_WQ_BLOCKS);
    long last = -1;
    for (int still = 0; still < 50;) { /* settled: 50 looks without progress */
        usleep(2000);
        long now = atomic_load(&p.put);
        still = now == last ? still + 1 : 0;
        last = now;
    }
    CHECK(last <= per_block * (PRS_WQ_BLOCKS + 2));
    pthread_mutex_lock(&s.mu);
    s.hold = 0;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    pthread_join(th, NULL);
    prs_wq_stop(p.q);
    CHECK_INT(s.bad, 0);
    CHECK_INT(s.next, 64 * 1024);
}

/* Message k goes to the first consumer (k % 3 == 0), the second (1) or
 * both (2); each consumer's seen counts its own in order by k. */
typedef struct side { long long next, bad, n; int mine; } side;

static void encode_side(side *d, const uint8_t *msg, size_t n)
{
    long long k;
    memcpy(&k, msg, sizeof k);
    while (d->next < k && d->next % 3 != 2 && d->next % 3 != d->mine)
        d->next++; /* the other's */
    if (k != d->next || (k % 3 != 2 && k % 3 != d->mine))
        d->bad++;
    for (size_t i = sizeof k; i < n; i++)
        if (msg[i] != (uint8_t)(k + (long long)i))
            d->bad++;
    d->next = k + 1;
    d->n++;
}

static side sides[2] = {{.mine = 0}, {.mine = 1}};
static void encode_first(void *ctx, uint8_t *msg, size_t n) { (void)ctx; encode_side(&sides[0], msg, n); }
static void encode_second(void *ctx, uint8_t *msg, size_t n) { (void)ctx; encode_side(&sides[1], msg, n); }

static void test_pair(void)
{
    prs_wq *q = prs_wq_start_pair(encode_first, "sp-test1", encode_second, "sp-test2", NULL);
    CHECK(q != NULL);
    if (!q)
        return;
    long long k = 0, mine[2] = {0, 0};
    static const unsigned who[3] = {PRS_WQ_FIRST, PRS_WQ_SECOND, PRS_WQ_FIRST | PRS_WQ_SECOND};
    for (; k < 150000; k++) {
        size_t n = k == 7777 ? PRS_WQ_BLOCK + 100 : 8 + (size_t)(k % 200);
        uint8_t *p = prs_wq_put_for(q, who[k % 3], n);
        memcpy(p, &k, sizeof k);
        for (size_t i = sizeof k; i < n; i++)
            p[i] = (uint8_t)(k + (long long)i);
        mine[0] += k % 3 != 1;
        mine[1] += k % 3 != 0;
    }
    prs_wq_stop(q);
    CHECK_INT(sides[0].bad, 0);
    CHECK_INT(sides[1].bad, 0);
    CHECK_INT(sides[0].n, mine[0]);
    CHECK_INT(sides[1].n, mine[1]);
}

int main(void)
{
    test_order_and_sizes();
    test_bounded();
    test_pair();
    CHECK_DONE();
}
