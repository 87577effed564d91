/* SPDX-License-Identifier: Apache-2.0 */
/*
 * linkkeep.c — a small process-wide ring of the newest Links made while
 * collection was off.
 *
 * Why: a server links a request's engine id to its front-end id once, when
 * the request arrives. A request that arrived before `servprof enable` had
 * its Link dropped (nothing is recorded while off), so every report named
 * it by its engine id (`eng-33`, and batch.csv listed engine ids). Keeping
 * the last SP_LINKKEEP_N links costs the off path of servprof_link() one
 * mutex and two short copies (one call per request, not per token; 46 ns a
 * call, the lock 13 ns of it, against 52 ns for the on path: bench_link.c,
 * so the lock stays rather than per-thread slots), and the
 * session's writer stores them in its first transaction (writer.c), dated
 * at the session's start, so the parser resolves the ids as if the link had
 * been recorded.
 *
 * Design: a fixed array used as a ring (no allocation; ~17 KB), the newest
 * overwriting the oldest; ids longer than SP_LINKKEEP_ID bytes are cut (the
 * parser would then see another id: ids are short in practice). One lock
 * guards the ring; it is never held while calling out (take copies first).
 */
#include <pthread.h>
#include <string.h>

#include "linkkeep.h"

typedef struct kept {
    char from[SP_LINKKEEP_ID], to[SP_LINKKEEP_ID];
    unsigned char nf, nt;
    int tid;
} kept;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static kept ring[SP_LINKKEEP_N]; /* under mu */
static unsigned head, count;      /* under mu: next slot, links held */

void sp_linkkeep_note(const char *from, size_t nf, const char *to, size_t nt, int tid)
{
    if (nf > SP_LINKKEEP_ID)
        nf = SP_LINKKEEP_ID;
    if (nt > SP_LINKKEEP_ID)
        nt = SP_LINKKEEP_ID;
    pthread_mutex_lock(&mu);
    kept *k = &ring[head];
    memcpy(k->from, from, nf);
    memcpy(k->to, to, nt);
    k->nf = (unsigned char)nf;
    k->nt = (unsigned char)nt;
    k->tid = tid;
    head = (head + 1) % SP_LINKKEEP_N;
    if (count < SP_LINKKEEP_N)
        count++;
    pthread_mutex_unlock(&mu);
}

void sp_linkkeep_take(sp_linkkeep_fn fn, void *ctx)
{
    static kept copy[SP_LINKKEEP_N]; /* only the writer takes, one session at a time */
    pthread_mutex_lock(&mu);
    unsigned n = count, first = (head + SP_LINKKEEP_N - count) % SP_LINKKEEP_N;
    for (unsigned i = 0; i < n; i++)
        copy[i] = ring[(first + i) % SP_LINKKEEP_N];
    count = 0;
    pthread_mutex_unlock(&mu);
    for (unsigned i = 0; i < n; i++)
        fn(ctx, copy[i].from, copy[i].nf, copy[i].to, copy[i].nt, copy[i].tid);
}

void sp_linkkeep_atfork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&mu, &fresh, sizeof mu);
    head = count = 0;
}
