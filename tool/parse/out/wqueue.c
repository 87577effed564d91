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
 * Two consumers (prs_wq_start_pair: table.c's CSV and profiler.db
 * writers) read the same blocks, each on its thread, and each runs only
 * the messages marked for it (the mask in a message's size word): a row
 * that goes to both outputs is copied once, not once per queue. Neither
 * writes into a block; a block keeps a count of the consumers yet to read
 * it and goes back to the free list when the last is done with it. Each
 * reads the blocks in order, so blocks are finished in order too: the
 * finished one is always the head.
 *
 * Ownership: mu guards head, tail, nq, spare, each block's next and left,
 * the consumers' next, pending and waiting flags, and done; cur belongs to
 * the producer; an encoder's state to its thread until it is joined
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
    int left;               /* consumers yet to read it (mu) */
    _Alignas(8) uint8_t data[];
} block;

#define WAKE 4 /* full blocks that wake a sleeping thread */
#define MAXC 2 /* consumers of a queue */

/* A message's size word: its bytes, and which consumers run it. */
typedef struct word {
    uint32_t n, who;
} word;

typedef struct consumer {
    struct prs_wq *q;
    pthread_t th;
    prs_wq_fn fn;
    const char *name;
    uint32_t bit;           /* its PRS_WQ_FIRST / PRS_WQ_SECOND */
    block *next;            /* the next block it reads; NULL: none yet (mu) */
    int pending;            /* blocks queued it has not taken (mu) */
    int waiting;            /* it sleeps on work (mu) */
    pthread_cond_t work;
    prs_log_buf log;        /* its messages (its thread; read after the join) */
} consumer;

struct prs_wq {
    pthread_mutex_t mu;
    pthread_cond_t room;
    block *head, *tail;     /* full blocks not read by all, oldest first (mu) */
    int nq;                 /* how many (mu) */
    block *spare;           /* PRS_WQ_BLOCK ones finished by all (mu) */
    int prod_waiting;       /* the producer sleeps on room (mu) */
    int done;               /* nothing more will come (mu) */
    block *cur;             /* being filled (producer) */
    void *ctx;
    int nc;                 /* consumers: 1 or 2 */
    consumer c[MAXC];
};

static block *block_new(size_t cap)
{
    block *b = prs_xmalloc(sizeof *b + cap);
    b->next = NULL;
    b->n = 0;
    b->cap = cap;
    b->left = 0;
    return b;
}

/* Runs b's messages that are c's. Reads only: the other consumer may be
 * reading the same block. */
static void run_block(consumer *c, const block *b)
{
    for (size_t at = 0; at < b->n;) {
        word w;
        memcpy(&w, b->data + at, sizeof w);
        at += 8;
        if (w.who & c->bit)
            c->fn(c->q->ctx, (uint8_t *)b->data + at, w.n);
        at += prs_wq_round(w.n);
    }
}

/* c is done with b, the head if c is the last to read it (each reads in
 * order): b leaves the queue. Under mu; returns 1 when the producer is to
 * be woken (after the unlock). */
static int finish_block(prs_wq *q, block *b)
{
    if (--b->left > 0)
        return 0;
    q->head = b->next;
    if (!q->head)
        q->tail = NULL;
    q->nq--;
    if (b->cap == PRS_WQ_BLOCK) {
        b->n = 0;
        b->next = q->spare;
        q->spare = b;
    } else {
        free(b); /* a big message's own */
    }
    return q->prod_waiting && q->nq <= PRS_WQ_BLOCKS / 2;
}

static void *run(void *arg)
{
    consumer *c = arg;
    prs_wq *q = c->q;
    pthread_setname_np(pthread_self(), c->name);
    prs_log_capture(&c->log);
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!c->next && !q->done) {
            c->waiting = 1;
            pthread_cond_wait(&c->work, &q->mu);
            c->waiting = 0;
        }
        block *b = c->next;
        if (!b)
            break; /* done and drained */
        c->next = b->next; /* NULL: the producer sets it with the next block */
        c->pending--;
        pthread_mutex_unlock(&q->mu);
        run_block(c, b);
        pthread_mutex_lock(&q->mu);
        if (finish_block(q, b)) {
            pthread_mutex_unlock(&q->mu);
            pthread_cond_signal(&q->room);
            pthread_mutex_lock(&q->mu);
        }
    }
    pthread_mutex_unlock(&q->mu);
    prs_log_capture(NULL);
    prs_thrcpu_note(c->name);
    return NULL;
}

static void destroy(prs_wq *q)
{
    free(q->cur);
    while (q->spare) {
        block *b = q->spare;
        q->spare = b->next;
        free(b);
    }
    for (int i = 0; i < q->nc; i++)
        pthread_cond_destroy(&q->c[i].work);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->room);
    free(q);
}

/* Tells the threads that nothing more comes, joins the first `started`. */
static void join(prs_wq *q, int started)
{
    pthread_mutex_lock(&q->mu);
    q->done = 1;
    for (int i = 0; i < started; i++)
        pthread_cond_signal(&q->c[i].work);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < started; i++)
        pthread_join(q->c[i].th, NULL);
}

static prs_wq *start(int nc, const prs_wq_fn *fn, const char *const *name, void *ctx)
{
    prs_wq *q = prs_xcalloc(1, sizeof *q);
    q->ctx = ctx;
    q->nc = nc;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->room, NULL);
    q->cur = block_new(PRS_WQ_BLOCK);
    for (int i = 0; i < nc; i++) {
        consumer *c = &q->c[i];
        c->q = q;
        c->fn = fn[i];
        c->name = name[i];
        c->bit = 1u << i;
        pthread_cond_init(&c->work, NULL);
    }
    for (int i = 0; i < nc; i++) {
        if (pthread_create(&q->c[i].th, NULL, run, &q->c[i]) != 0) {
            join(q, i); /* they have read nothing: the caller encodes */
            destroy(q);
            return NULL;
        }
    }
    return q;
}

prs_wq *prs_wq_start(prs_wq_fn fn, void *ctx, const char *name)
{
    return start(1, &fn, &name, ctx);
}

prs_wq *prs_wq_start_pair(prs_wq_fn fn1, const char *name1, prs_wq_fn fn2, const char *name2, void *ctx)
{
    prs_wq_fn fn[2] = {fn1, fn2};
    const char *name[2] = {name1, name2};
    return start(2, fn, name, ctx);
}

/* Queues cur for every consumer; under mu. Returns the bits of the
 * consumers to wake (after the unlock). */
static unsigned enqueue(prs_wq *q, block *b)
{
    while (q->nq >= PRS_WQ_BLOCKS) {
        /* nq >= WAKE: the threads were woken, they will give room */
        q->prod_waiting = 1;
        pthread_cond_wait(&q->room, &q->mu);
        q->prod_waiting = 0;
    }
    b->left = q->nc;
    b->next = NULL;
    if (q->tail)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
    q->nq++;
    unsigned wake = 0;
    for (int i = 0; i < q->nc; i++) {
        consumer *c = &q->c[i];
        if (!c->next)
            c->next = b;
        c->pending++;
        if (c->waiting && c->pending >= WAKE)
            wake |= c->bit;
    }
    return wake;
}

/* Queues cur and gives the producer a block of at least cap bytes. */
static void hand_over(prs_wq *q, size_t cap)
{
    pthread_mutex_lock(&q->mu);
    block *b = q->cur;
    q->cur = NULL;
    unsigned wake = 0;
    if (b && b->n) {
        wake = enqueue(q, b);
        b = NULL;
    }
    if (cap == PRS_WQ_BLOCK && !b && q->spare) {
        b = q->spare;
        q->spare = b->next;
        b->next = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nc; i++)
        if (wake & q->c[i].bit)
            pthread_cond_signal(&q->c[i].work);
    if (b && b->cap < cap) {
        free(b);
        b = NULL;
    }
    q->cur = b ? b : block_new(cap);
}

void *prs_wq_put_for(prs_wq *q, unsigned who, size_t n)
{
    size_t need = 8 + prs_wq_round(n);
    if (q->cur->cap - q->cur->n < need)
        hand_over(q, need > PRS_WQ_BLOCK ? need : PRS_WQ_BLOCK);
    block *b = q->cur;
    word w = {(uint32_t)n, who};
    memcpy(b->data + b->n, &w, sizeof w);
    void *p = b->data + b->n + 8;
    b->n += need;
    return p;
}

void *prs_wq_put(prs_wq *q, size_t n)
{
    return prs_wq_put_for(q, PRS_WQ_FIRST | PRS_WQ_SECOND, n);
}

void prs_wq_stop(prs_wq *q)
{
    if (!q)
        return;
    hand_over(q, 0);
    join(q, q->nc);
    for (int i = 0; i < q->nc; i++)
        prs_log_replay(&q->c[i].log);
    destroy(q);
}
