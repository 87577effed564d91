/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wqueue.h — an output's encoder on a thread of its own (wqueue.c,
 * `servprof parse --jobs N`, docs/parse.md "Parallel parse"): the parse
 * thread copies each finished row or timeline event into a message, the
 * queue's thread hands the messages to the output's encoder in the order
 * they were put, so the output's bytes are those of the one-thread parse.
 *
 * Memory is bounded: at most PRS_WQ_BLOCKS full blocks of PRS_WQ_BLOCK
 * bytes wait (a message bigger than a block gets a block of its own);
 * prs_wq_put waits while the thread is that far behind — nothing is
 * dropped. One producer thread per queue; not thread-safe otherwise.
 * A queue may have two consumers (prs_wq_start_pair), each on its thread,
 * reading the same messages: a message marked for both is put once.
 */
#ifndef SERVPROF_PARSE_WQUEUE_H
#define SERVPROF_PARSE_WQUEUE_H

#include <stddef.h>
#include <stdint.h>

#define PRS_WQ_BLOCK ((size_t)256 << 10)
#define PRS_WQ_BLOCKS 8

typedef struct prs_wq prs_wq;
/* The encoder: called on the queue's thread with each message (n bytes,
 * 8-byte aligned), oldest first. */
typedef void (*prs_wq_fn)(void *ctx, uint8_t *msg, size_t n);

/* Starts the thread. NULL when it cannot be started: the caller then
 * encodes on its own thread, as with --jobs 1. The thread's messages
 * (prs_log) are kept and logged by prs_wq_stop on the caller's thread, at
 * the caller's level. name (a literal, under 16 bytes) names the thread
 * (pthread_setname_np: perf, top -H) and its line of thrcpu.c's figures. */
prs_wq *prs_wq_start(prs_wq_fn fn, void *ctx, const char *name);
/* Two consumers, two threads: fn1 runs the messages put for PRS_WQ_FIRST,
 * fn2 those for PRS_WQ_SECOND, each in the order they were put. Neither may
 * write into a message (the other may be reading it). NULL as above. */
prs_wq *prs_wq_start_pair(prs_wq_fn fn1, const char *name1, prs_wq_fn fn2, const char *name2, void *ctx);
#define PRS_WQ_FIRST 1u
#define PRS_WQ_SECOND 2u
/* Room for one message of n bytes (8-byte aligned, under 4 GiB), to fill
 * before the next call, for the consumers in who (PRS_WQ_FIRST and/or
 * PRS_WQ_SECOND); it is handed over with the block it is in. May wait.
 * The message stays where it is until its consumers are done with it. */
void *prs_wq_put_for(prs_wq *q, unsigned who, size_t n);
/* A message for every consumer. */
void *prs_wq_put(prs_wq *q, size_t n);
/* Hands over what was put, waits until the thread has encoded all of it,
 * stops it and frees q; logs the thread's messages. NULL: no-op. */
void prs_wq_stop(prs_wq *q);
/* Packing helpers for messages: a string's bytes after the fixed part. */
static inline size_t prs_wq_round(size_t n) { return (n + 7) & ~(size_t)7; }

#endif
