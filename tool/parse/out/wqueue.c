/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wqueue.c — one output's encoding on a thread of its own (wqueue.h).
 *
 * Design. The producer (the parse thread) writes messages into the block
 * it owns (cur): each is a size word then its bytes, both 8-byte aligned,
 * so the encoder can read the copied structs in place. A full block goes
 * on the queue (head..tail, at most PRS_WQ_BLOCKS of them: the producer
 * waits on `room` beyond that, so a slow disk or a slow encoder bounds the
 * memory instead of growing it); the thread takes the oldest, runs every
 * message of it through the encoder, and gives the block back to a free
 * list, so that each block is allocated (and its pages touched) once: at
 * most PRS_WQ_BLOCKS + 2 of them. (A free list of two freed the others,
 * and each new block faulted its pages in again.) The lock is taken once
 * per block, not per message: the hand-over costs the copy. Blocks are
 * 256 KiB, not 1 MiB as before: the pages a queue touches are a quarter,
 * and a block is still in cache when its thread reads it; WAKE of them
 * make a wake-up, as many bytes as one 1 MiB block did.
 *
 * Wake-ups cost more than the lock on a loaded machine: a thread woken on
 * the producer's core preempts it. So each side is woken only when it
 * sleeps and it pays: the thread when WAKE blocks wait (or the producer
 * would block, or the output ends), the producer when half the queue is
 * free again; and the signal is sent after the unlock, so the woken
 * thread does not block at once on the mutex its waker still holds.
 *
 * Messages of the thread: the encoders report failures through prs_log
 * (table.c, timeline.c: the same lines as the one-thread parse). Those
 * calls happen on this thread, whose log threshold is not the parse's
 * (plog.c keeps it per thread, and an abandoned run silences it while it
 * closes): the thread captures them (prs_log_capture) and prs_wq_stop
 * logs them on the parse thread, at its level, when the output ends.
 *
 * Ownership: mu guards head, tail, nq, spare, the waiting flags and done; cur belongs
 * to the producer; the encoder's state to the thread until it is joined
 * (prs_wq_stop's join is the hand-back).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plog.h"
#include "thrcpu.h"
#include "wqueue.h"
#include "xalloc.h"

typedef struct block {
    struct block *next;
    size_t n, cap;          /* bytes used, bytes of data */
    _Alignas(8) uint8_t data[];
} block;

#define WAKE 4 /* full blocks that wake a sleeping thread */

struct prs_wq {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t room, work;
    block *head, *tail;     /* full blocks, oldest first (mu) */
    int nq;                 /* how many (mu) */
    block *spare;           /* PRS_WQ_BLOCK ones given back by the thread (mu) */
    int th_waiting;         /* the thread sleeps on work (mu) */
    int prod_waiting;       /* the producer sleeps on room (mu) */
    int done;               /* nothing more will come (mu) */
    block *cur;             /* being filled (producer) */
    prs_wq_fn fn;           /* the encoder (thread) */
    const char *name;
    void *ctx;
    prs_log_buf log;        /* the thread's messages (thread; read after the join) */
};

static block *block_new(size_t cap)
{
    block *b = prs_xmalloc(sizeof *b + cap);
    b->next = NULL;
    b->n = 0;
    b->cap = cap;
    return b;
}

static void *run(void *arg)
{
    prs_wq *q = arg;
    pthread_setname_np(pthread_self(), q->name);
    prs_log_capture(&q->log);
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->head && !q->done) {
            q->th_waiting = 1;
            pthread_cond_wait(&q->work, &q->mu);
            q->th_waiting = 0;
        }
        block *b = q->head;
        if (!b)
            break; /* done and drained */
        q->head = b->next;
        if (!q->head)
            q->tail = NULL;
        q->nq--;
        int wake = q->prod_waiting && q->nq <= PRS_WQ_BLOCKS / 2;
        pthread_mutex_unlock(&q->mu);
        if (wake)
            pthread_cond_signal(&q->room);
        for (size_t at = 0; at < b->n;) {
            size_t n;
            memcpy(&n, b->data + at, sizeof n);
            at += 8;
            q->fn(q->ctx, b->data + at, n);
            at += prs_wq_round(n);
        }
        if (b->cap != PRS_WQ_BLOCK) {
            free(b); /* a big message's own */
            b = NULL;
        }
        pthread_mutex_lock(&q->mu);
        if (b) {
            b->n = 0;
            b->next = q->spare;
            q->spare = b;
        }
    }
    pthread_mutex_unlock(&q->mu);
    prs_log_capture(NULL);
    prs_thrcpu_note(q->name);
    return NULL;
}

prs_wq *prs_wq_start(prs_wq_fn fn, void *ctx, const char *name)
{
    prs_wq *q = prs_xcalloc(1, sizeof *q);
    q->name = name;
    q->fn = fn;
    q->ctx = ctx;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->room, NULL);
    pthread_cond_init(&q->work, NULL);
    q->cur = block_new(PRS_WQ_BLOCK);
    if (pthread_create(&q->th, NULL, run, q) != 0) {
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->room);
        pthread_cond_destroy(&q->work);
        free(q->cur);
        free(q);
        return NULL;
    }
    return q;
}

/* Queues cur and gives the producer a block of at least cap bytes. */
static void hand_over(prs_wq *q, size_t cap)
{
    pthread_mutex_lock(&q->mu);
    block *b = q->cur;
    q->cur = NULL;
    int wake = 0;
    if (b && b->n) {
        while (q->nq >= PRS_WQ_BLOCKS) {
            /* nq >= WAKE: the thread was woken, it will give room */
            q->prod_waiting = 1;
            pthread_cond_wait(&q->room, &q->mu);
            q->prod_waiting = 0;
        }
        if (q->tail)
            q->tail->next = b;
        else
            q->head = b;
        q->tail = b;
        q->nq++;
        wake = q->th_waiting && q->nq >= WAKE;
        b = NULL;
    }
    if (cap == PRS_WQ_BLOCK && !b && q->spare) {
        b = q->spare;
        q->spare = b->next;
        b->next = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    if (wake)
        pthread_cond_signal(&q->work);
    if (b && b->cap < cap) {
        free(b);
        b = NULL;
    }
    q->cur = b ? b : block_new(cap);
}

void *prs_wq_put(prs_wq *q, size_t n)
{
    size_t need = 8 + prs_wq_round(n);
    if (q->cur->cap - q->cur->n < need)
        hand_over(q, need > PRS_WQ_BLOCK ? need : PRS_WQ_BLOCK);
    block *b = q->cur;
    memcpy(b->data + b->n, &n, sizeof n);
    void *p = b->data + b->n + 8;
    b->n += need;
    return p;
}

void prs_wq_stop(prs_wq *q)
{
    if (!q)
        return;
    hand_over(q, 0);
    pthread_mutex_lock(&q->mu);
    q->done = 1;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->th, NULL);
    prs_log_replay(&q->log);
    free(q->cur);
    while (q->spare) {
        block *b = q->spare;
        q->spare = b->next;
        free(b);
    }
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->room);
    pthread_cond_destroy(&q->work);
    free(q);
}
