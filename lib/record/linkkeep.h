/* SPDX-License-Identifier: Apache-2.0 */
/*
 * linkkeep.h — the last few servprof_link() calls made while collection
 * was off (linkkeep.c), so a request that straddles `servprof enable`
 * keeps its front-end id: the session's writer stores them first.
 */
#ifndef SERVPROF_LINKKEEP_H
#define SERVPROF_LINKKEEP_H

#include <stddef.h>

/* Most links kept (the newest win), and the longest id kept whole. */
#define SP_LINKKEEP_N 64
#define SP_LINKKEEP_ID 128

/* Keeps link from -> to (lengths nf, nt; longer ids are cut to
 * SP_LINKKEEP_ID bytes) made by thread tid while collection is off.
 * Thread-safe (a mutex: collection is off, and links are one per request). */
void sp_linkkeep_note(const char *from, size_t nf, const char *to, size_t nt, int tid);

/* Hands every kept link to fn, oldest first, and forgets them. Called by the
 * writer when a session starts. Thread-safe. */
typedef void (*sp_linkkeep_fn)(void *ctx, const char *from, size_t nf, const char *to, size_t nt, int tid);
void sp_linkkeep_take(sp_linkkeep_fn fn, void *ctx);

/* After fork() in the child: a fresh lock, the parent's links forgotten. */
void sp_linkkeep_atfork_child(void);

#endif
