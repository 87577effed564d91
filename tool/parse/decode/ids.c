/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ids.c — request ids: interning and resolution through `Link` rows.
 *
 * Every id string seen in a `rid` is interned once into a node (open
 * addressing hash, eight bytes per step, names copied into one growing
 * arena). A `Link`
 * {from, to} says that two ids are the same request (the front end's id
 * `from`, an engine's or worker's id `to`), so nodes form a union-find: the
 * root of a set is the node of the id a link came *from* (the upstream
 * system's id, the one reports show, as the reference parser maps `to` onto
 * `from`) and it carries the request's state (`data`). A chain (front end ->
 * engine -> worker) keeps the first `from`. A link may arrive after
 * records that used either id: the caller merges the absorbed root's state.
 *
 * Memory grows with the number of distinct ids (tens of bytes each), not
 * with the number of records.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "argdecode.h"
#include "ids.h"
#include "xalloc.h"


typedef struct node {
    int parent;
    int name;     /* offset in the arena */
    int len;
    void *data;
} node;

struct prs_ids {
    node *nodes;
    int n, cap;
    int *slots;   /* node index + 1; 0 empty */
    unsigned nslots;
    char *arena;
    size_t used, acap;
};

/* Eight bytes per step (ids are ~10 bytes: one or two multiplies instead
 * of a multiply per byte); the tail is read byte by byte, never past n. */
static unsigned hash(const char *s, int n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    uint64_t t = 0;
    for (int k = 0; i < n; i++, k += 8)
        t |= (uint64_t)(unsigned char)s[i] << k;
    h ^= t;
    h = (h ^ h >> 33) * 0xC4CEB9FE1A85EC53ULL; /* every input bit reaches the low bits */
    return (unsigned)(h ^ h >> 33);
}

prs_ids *prs_ids_new(void)
{
    prs_ids *ids = prs_xcalloc(1, sizeof *ids);
    ids->nslots = 1024;
    ids->slots = prs_xcalloc(ids->nslots, sizeof *ids->slots);
    return ids;
}

void prs_ids_free(prs_ids *ids)
{
    if (!ids)
        return;
    free(ids->nodes);
    free(ids->slots);
    free(ids->arena);
    free(ids);
}

static void grow(prs_ids *ids)
{
    unsigned ns = ids->nslots * 2;
    int *slots = prs_xcalloc(ns, sizeof *slots);
    for (int i = 0; i < ids->n; i++) {
        node *nd = &ids->nodes[i];
        unsigned h = hash(ids->arena + nd->name, nd->len) & (ns - 1);
        while (slots[h])
            h = (h + 1) & (ns - 1);
        slots[h] = i + 1;
    }
    free(ids->slots);
    ids->slots = slots;
    ids->nslots = ns;
}

static int lookup(prs_ids *ids, const char *s, int n, int create)
{
    unsigned h = hash(s, n) & (ids->nslots - 1);
    while (ids->slots[h]) {
        node *nd = &ids->nodes[ids->slots[h] - 1];
        if (nd->len == n && (n == 0 || !memcmp(ids->arena + nd->name, s, (size_t)n)))
            return ids->slots[h] - 1;
        h = (h + 1) & (ids->nslots - 1);
    }
    if (!create)
        return -1;
    if (ids->n == ids->cap) {
        ids->cap = ids->cap ? ids->cap * 2 : 1024;
        ids->nodes = prs_xrealloc(ids->nodes, (size_t)ids->cap * sizeof *ids->nodes);
    }
    if (ids->used + (size_t)n + 1 > ids->acap) {
        ids->acap = (ids->acap + (size_t)n + 1) * 2;
        ids->arena = prs_xrealloc(ids->arena, ids->acap);
    }
    if (n) /* s may be NULL for the empty id */
        memcpy(ids->arena + ids->used, s, (size_t)n);
    ids->arena[ids->used + (size_t)n] = 0;
    int i = ids->n++;
    ids->nodes[i] = (node){i, (int)ids->used, n, NULL};
    ids->used += (size_t)n + 1;
    ids->slots[h] = i + 1;
    if ((unsigned)ids->n * 2 > ids->nslots)
        grow(ids);
    return i;
}

int prs_ids_get(prs_ids *ids, const char *s, int n) { return lookup(ids, s, n, 1); }
int prs_ids_find(prs_ids *ids, const char *s, int n) { return lookup(ids, s, n, 0); }

/* An id as the args text holds it: unescaped whole (no length cut, so two
 * long ids never merge); the text is never longer unescaped. */
static int lookup_str(prs_ids *ids, prs_str s, int create)
{
    if (!s.esc)
        return lookup(ids, s.p, s.n, create);
    char small[512], *buf = s.n < (int)sizeof small ? small : prs_xmalloc((size_t)s.n + 1);
    if (!buf)
        return -1;
    int n = prs_str_copy(s, buf, s.n + 1);
    int found = lookup(ids, buf, n, create);
    if (buf != small)
        free(buf);
    return found;
}

int prs_ids_get_str(prs_ids *ids, prs_str s) { return lookup_str(ids, s, 1); }
int prs_ids_find_str(prs_ids *ids, prs_str s) { return lookup_str(ids, s, 0); }

int prs_ids_root(prs_ids *ids, int i)
{
    while (ids->nodes[i].parent != i) {
        ids->nodes[i].parent = ids->nodes[ids->nodes[i].parent].parent; /* path halving */
        i = ids->nodes[i].parent;
    }
    return i;
}

int prs_ids_link(prs_ids *ids, int from, int to, int *absorbed)
{
    int rf = prs_ids_root(ids, from), rt = prs_ids_root(ids, to);
    *absorbed = -1;
    if (rf == rt)
        return rt;
    ids->nodes[rt].parent = rf;
    *absorbed = rt;
    return rf;
}

const char *prs_ids_name(prs_ids *ids, int i) { return ids->arena + ids->nodes[i].name; }
int prs_ids_name_len(prs_ids *ids, int i) { return ids->nodes[i].len; }
void *prs_ids_data(prs_ids *ids, int root) { return ids->nodes[root].data; }
void prs_ids_set_data(prs_ids *ids, int root, void *d) { ids->nodes[root].data = d; }
int prs_ids_count(prs_ids *ids) { return ids->n; }
