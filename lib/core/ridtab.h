/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ridtab.h — the table of requests in flight, keyed by request id, that the
 * rings' consumer keeps for the live metrics (metrics_agg.c) and for request
 * tracing (otlp_asm.c). Internal to libservprof.
 *
 * An entry is the first member of its user's state (intrusive): the user's
 * struct starts with an sp_ridtab_ent and ends with `char id[]`, and
 * sp_ridtab_add() allocates the two together. `Link {from, to}` makes one id
 * an alias of another's state: every id of a request finds its entry, whose
 * canon is the one state that holds the figures.
 *
 * Not thread-safe: one table belongs to one consumer thread (or is used
 * under its user's lock). A zeroed table is an empty one.
 */
#ifndef SERVPROF_RIDTAB_H
#define SERVPROF_RIDTAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Fixed: both users cap their states at 65536 (a load of 4 at most), so the
 * consumer never stops to rehash and a zeroed table needs no init. */
#define SP_RIDTAB_BUCKETS 16384

typedef struct sp_ridtab_ent {
    struct sp_ridtab_ent *next;    /* hash chain */
    struct sp_ridtab_ent *canon;   /* the state this id stands for (itself unless an alias) */
    struct sp_ridtab_ent *aliases; /* canonical: its first alias; alias: the next alias */
    const char *id;                /* the user's id[], idl bytes and a NUL */
    size_t idl;
    int64_t touch; /* the last record naming the request (the canonical's counts) */
    uint32_t hash;
} sp_ridtab_ent;

typedef struct sp_ridtab {
    sp_ridtab_ent *bucket[SP_RIDTAB_BUCKETS];
    int n;      /* entries, aliases included */
    int ncanon; /* canonical entries: requests */
} sp_ridtab;

/* Inline, as the static functions the two users had: a lookup is made for
 * nearly every record, and a call into ridtab.c cost the metrics drain
 * ~1.5 % more instructions (bench/bench_otlp_asm.py). The caller hashes the
 * id once (sp_ridtab_hash) for the lookup and, when it was not there, the
 * add. */
static inline uint32_t sp_ridtab_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* The entry of exactly this id, whose sp_ridtab_hash is h (an alias or a
 * canonical one), or NULL. */
static inline sp_ridtab_ent *sp_ridtab_find(const sp_ridtab *t, const char *id, size_t n, uint32_t h)
{
    for (sp_ridtab_ent *e = t->bucket[h % SP_RIDTAB_BUCKETS]; e; e = e->next)
        if (e->hash == h && e->idl == n && !memcmp(e->id, id, n))
            return e;
    return NULL;
}

/* The canonical entry of this id (hash h) with its touch set to ts, or NULL
 * when the id is unknown. */
static inline sp_ridtab_ent *sp_ridtab_lookup(sp_ridtab *t, const char *id, size_t n, uint32_t h,
                                              int64_t ts)
{
    sp_ridtab_ent *e = sp_ridtab_find(t, id, n, h);
    if (!e)
        return NULL;
    e = e->canon;
    e->touch = ts;
    return e;
}

/* A new canonical entry for an id (hash h) not in the table: `size` bytes of the
 * user's state (offsetof its id[]) zeroed, then the id and a NUL; touched
 * at ts. NULL when out of memory. The caller enforces its own cap (t->n).
 * The table frees it (sp_ridtab_drop, sp_ridtab_free). */
sp_ridtab_ent *sp_ridtab_add(sp_ridtab *t, const char *id, size_t n, uint32_t h, size_t size,
                             int64_t ts);

/* Makes canonical `a` and its aliases aliases of canonical `c` (a != c);
 * the caller has merged a's figures into c's first. */
void sp_ridtab_alias(sp_ridtab *t, sp_ridtab_ent *c, sp_ridtab_ent *a);

/* Removes and frees canonical `c` and every alias of it. */
void sp_ridtab_drop(sp_ridtab *t, sp_ridtab_ent *c);

/* Ages the table: each canonical entry not touched for more than max_age_ns
 * before now_ns is offered to stale(e, arg); dropped (with its aliases)
 * when that returns nonzero (the user counts it there), kept otherwise. */
void sp_ridtab_sweep(sp_ridtab *t, int64_t now_ns, int64_t max_age_ns,
                     int (*stale)(sp_ridtab_ent *e, void *arg), void *arg);

/* Frees every entry; the table is empty after. NULL is a no-op. */
void sp_ridtab_free(sp_ridtab *t);

#endif
