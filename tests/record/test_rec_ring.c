/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rec_ring.c — the consumer's walk over a thread buffer (tbuf.h:
 * sp_tb_begin / sp_tb_peek / sp_tb_advance / sp_tb_release), which the
 * writer and the metrics drain thread share, driven without either:
 *
 *  - a producer thread publishes records of many lengths into the smallest
 *    ring, waiting for room as record.c does (tail, acquire); this thread
 *    walks them (head, acquire; tail, release) and finds every record
 *    whole and in order, including those that wrap the ring's end (handed
 *    out contiguous, from the scratch buffer). Under TSan this checks the
 *    memory orders of both sides;
 *  - a walk stops at the head it loaded, and a release gives the room back;
 *  - a record whose length cannot be right is not handed out: the rest of
 *    the walk is skipped (logged), nothing is read past the head.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "internal.h"
#include "rec_format.h"
#include "tbuf.h"

#define RECORDS 200000
#define SPIN_LIMIT 200000000L /* waits end with a failure, never a hang */

static _Atomic(sp_tbuf *) ring;
static _Atomic int consumed_all, producer_stuck;

/* Record i: a header whose span field holds i, then i % 301 bytes of i. */
static size_t record_len(uint64_t i) { return sizeof(sp_rec_hdr) + i % 301; }

static void *producer(void *arg)
{
    (void)arg;
    sp_tbuf *tb = sp_tbuf_self();
    atomic_store_explicit(&ring, tb, memory_order_release);
    if (!tb)
        return NULL;
    uint8_t rec[sizeof(sp_rec_hdr) + 301];
    uint64_t pos = atomic_load_explicit(&tb->head, memory_order_relaxed);
    for (uint64_t i = 0; i < RECORDS; i++) {
        size_t n = record_len(i);
        sp_rec_hdr h = {.len = (uint32_t)n, .kind = SP_REC_EVENT, .span = i};
        memcpy(rec, &h, sizeof h);
        memset(rec + sizeof h, (int)(i & 0xff), n - sizeof h);
        long spins = 0;
        while (!sp_tb_room(tb, pos + n)) {
            if (++spins > SPIN_LIMIT) {
                atomic_store(&producer_stuck, 1);
                return NULL;
            }
            sched_yield();
        }
        sp_tb_write(tb, pos, rec, n);
        pos += n;
        atomic_store_explicit(&tb->head, pos, memory_order_release);
    }
    /* The buffer is freed when this thread exits (no writer runs): stay
     * until the walk is over. */
    for (long spins = 0; !atomic_load(&consumed_all) && spins < SPIN_LIMIT; spins++)
        sched_yield();
    return NULL;
}

static void check_concurrent_walk(void)
{
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, producer, NULL), 0);
    sp_tbuf *tb = NULL;
    for (long spins = 0; !(tb = atomic_load_explicit(&ring, memory_order_acquire)) &&
                         spins < SPIN_LIMIT; spins++)
        sched_yield();
    CHECK(tb != NULL);
    sp_tb_scratch scratch = {0};
    uint64_t next = 0, wrapped = 0, bad = 0;
    long idle = 0;
    while (tb && next < RECORDS && !atomic_load(&producer_stuck) && idle < SPIN_LIMIT) {
        sp_tb_reader r;
        sp_tb_begin(&r, tb);
        CHECK(r.head - r.tail <= tb->cap);
        const uint8_t *rec;
        size_t len;
        int got = 0;
        while ((len = sp_tb_peek(&r, &scratch, &rec)) != 0) {
            sp_rec_hdr h;
            memcpy(&h, rec, sizeof h);
            size_t body = len - sizeof h;
            int ok = rec && len == record_len(next) && h.len == len && h.span == next;
            for (size_t k = 0; ok && k < body; k++)
                ok = rec[sizeof h + k] == (uint8_t)(next & 0xff);
            if (!ok && bad++ < 5)
                fprintf(stderr, "record %llu: wrong length or bytes (len %zu)\n",
                        (unsigned long long)next, len);
            wrapped += rec == scratch.buf;
            next++;
            got++;
            sp_tb_advance(&r, len);
        }
        CHECK(r.tail == r.head); /* stopped at the head it loaded */
        sp_tb_release(&r);
        idle = got ? 0 : idle + 1;
        if (!got)
            sched_yield();
    }
    atomic_store(&consumed_all, 1);
    pthread_join(th, NULL);
    CHECK_INT(atomic_load(&producer_stuck), 0);
    CHECK_INT(next, RECORDS);
    CHECK_INT(bad, 0);
    CHECK(wrapped > 0); /* the ring wrapped many times: some records straddled */
    free(scratch.buf);
}

/* This thread's own buffer, with bytes published by hand. */
static void check_bad_length(void)
{
    sp_tbuf *tb = sp_tbuf_self();
    CHECK(tb != NULL);
    if (!tb)
        return;
    uint64_t pos = atomic_load(&tb->head);
    sp_rec_hdr good = {.len = sizeof(sp_rec_hdr), .kind = SP_REC_EVENT, .span = 7};
    sp_rec_hdr shortlen = {.len = 3, .kind = SP_REC_EVENT};
    sp_rec_hdr toolong = {.len = 1000, .kind = SP_REC_EVENT};
    for (int round = 0; round < 2; round++) {
        uint64_t start = pos;
        sp_tb_write(tb, pos, &good, sizeof good);
        pos += sizeof good;
        sp_tb_write(tb, pos, round ? &toolong : &shortlen, sizeof good);
        pos += sizeof good;
        sp_tb_write(tb, pos, &good, sizeof good);
        pos += sizeof good;
        atomic_store_explicit(&tb->head, pos, memory_order_release);

        sp_tb_scratch scratch = {0};
        sp_tb_reader r;
        sp_tb_begin(&r, tb);
        CHECK_INT(r.tail, start);
        const uint8_t *rec = NULL;
        size_t len = sp_tb_peek(&r, &scratch, &rec);
        CHECK_INT(len, sizeof good);
        CHECK(rec && ((const sp_rec_hdr *)(const void *)rec)->span == 7);
        sp_tb_advance(&r, len);
        CHECK_INT(sp_tb_peek(&r, &scratch, &rec), 0); /* the bad one: the walk ends */
        CHECK_INT(r.tail, pos);                       /* skipped to the head, no further */
        CHECK_INT(sp_tb_peek(&r, &scratch, &rec), 0);
        sp_tb_release(&r);
        CHECK_INT(atomic_load(&tb->tail), pos); /* the room is given back */
        CHECK_INT(sp_tb_unread(tb), 0);
        free(scratch.buf);
    }
}

int main(void)
{
    setenv("PROF_LOG_LEVEL", "NONE", 1); /* the bad-length case logs an internal error */
    sp_log_reset();
    sp_tbuf_set_size(64 * 1024); /* the smallest ring: it wraps often */
    check_concurrent_walk();
    check_bad_length();
    CHECK_DONE();
}
