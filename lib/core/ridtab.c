/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ridtab.c — the request-id table of the rings' consumer (ridtab.h).
 *
 * DESIGN
 * A chained hash table (FNV-1a of the id, a fixed bucket array) of entries
 * embedded in their users' states, so a lookup is one hash, one chain walk
 * and no allocation (ridtab.h has it inline); only a new id allocates (its state and id in one
 * block). Removal unlinks from the chain: no tombstones, nothing to compact.
 *
 * Aliases: a canonical entry heads a singly linked list of its alias
 * entries through `aliases`; an alias uses the same field as its "next
 * alias" link and points at its canonical through `canon`. Dropping a
 * request frees the whole list. Both users (metrics_agg.c, otlp_asm.c) act
 * only on canonical entries; what a state holds is theirs to merge.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ridtab.h"

sp_ridtab_ent *sp_ridtab_add(sp_ridtab *t, const char *id, size_t n, uint32_t h, size_t size,
                             int64_t ts)
{
    assert(size >= sizeof(sp_ridtab_ent) && h == sp_ridtab_hash(id, n));
    sp_ridtab_ent *e = calloc(1, size + n + 1);
    if (!e)
        return NULL;
    char *s = (char *)e + size;
    memcpy(s, id, n);
    e->id = s;
    e->idl = n;
    e->hash = h;
    e->canon = e;
    e->touch = ts;
    e->next = t->bucket[e->hash % SP_RIDTAB_BUCKETS];
    t->bucket[e->hash % SP_RIDTAB_BUCKETS] = e;
    t->n++;
    t->ncanon++;
    return e;
}

void sp_ridtab_alias(sp_ridtab *t, sp_ridtab_ent *c, sp_ridtab_ent *a)
{
    assert(c != a && c->canon == c && a->canon == a);
    for (sp_ridtab_ent *x = a->aliases; x;) {
        sp_ridtab_ent *next = x->aliases;
        x->canon = c;
        x->aliases = c->aliases;
        c->aliases = x;
        x = next;
    }
    a->aliases = c->aliases;
    c->aliases = a;
    a->canon = c;
    t->ncanon--;
}

static void unlink_one(sp_ridtab *t, sp_ridtab_ent *e)
{
    sp_ridtab_ent **pp = &t->bucket[e->hash % SP_RIDTAB_BUCKETS];
    while (*pp && *pp != e)
        pp = &(*pp)->next;
    if (*pp)
        *pp = e->next;
    t->n--;
    free(e);
}

void sp_ridtab_drop(sp_ridtab *t, sp_ridtab_ent *c)
{
    assert(c->canon == c);
    sp_ridtab_ent *a = c->aliases;
    while (a) {
        sp_ridtab_ent *next = a->aliases;
        unlink_one(t, a);
        a = next;
    }
    t->ncanon--;
    unlink_one(t, c);
}

void sp_ridtab_sweep(sp_ridtab *t, int64_t now_ns, int64_t max_age_ns,
                     int (*stale)(sp_ridtab_ent *e, void *arg), void *arg)
{
    for (int b = 0; b < SP_RIDTAB_BUCKETS; b++) {
        sp_ridtab_ent *e = t->bucket[b];
        while (e) {
            sp_ridtab_ent *next = e->next;
            if (e->canon == e && now_ns - e->touch > max_age_ns && stale(e, arg)) {
                /* next may be one of e's aliases, freed below: restart the chain. */
                sp_ridtab_drop(t, e);
                next = t->bucket[b];
            }
            e = next;
        }
    }
}

void sp_ridtab_free(sp_ridtab *t)
{
    if (!t)
        return;
    for (int b = 0; b < SP_RIDTAB_BUCKETS; b++) {
        sp_ridtab_ent *e = t->bucket[b];
        while (e) {
            sp_ridtab_ent *next = e->next;
            free(e);
            e = next;
        }
    }
    memset(t, 0, sizeof *t);
}
