/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rec_spans.c — pairing span begins with span ends on the writer thread.
 *
 * A span's begin and end are two records, possibly in two threads' rings,
 * drained in either order. The writer keeps each half it has seen alone in
 * an open-addressing hash table keyed by span id (linear probing, deletion
 * by backward shift, so no tombstones build up); when the other half comes
 * the slice row is written and the entry freed. The table holds only spans
 * open right now, so it stays small.
 *
 * Second ends: span ids are (thread index << 40) | counter, and one thread's
 * begins are drained in order, so the writer remembers, per thread index,
 * the highest counter begun. An end that finds no entry for an id at or
 * below that mark belongs to a span already closed: a double end.
 */
#include <stdlib.h>
#include <string.h>

#include "rec_spans.h"

#define INDEX_SHIFT 40
#define COUNTER_MASK ((UINT64_C(1) << INDEX_SHIFT) - 1)

static size_t slot_of(uint64_t id, size_t cap)
{
    return (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (cap - 1);
}

sp_open_span *sp_span_new(uint64_t id, const char *name, size_t nl, const char *cat, size_t cl,
                          const char *args, size_t al)
{
    sp_open_span *s = malloc(sizeof *s + nl + cl + al + 3);
    if (!s)
        return NULL;
    s->id = id;
    s->has_begin = 0;
    s->tid = 0;
    s->ts = 0;
    s->name = s->data;
    memcpy(s->name, name, nl);
    s->name[nl] = 0;
    s->cat = s->name + nl + 1;
    memcpy(s->cat, cat, cl);
    s->cat[cl] = 0;
    s->args = s->cat + cl + 1;
    memcpy(s->args, args, al);
    s->args[al] = 0;
    s->name_len = nl;
    s->cat_len = cl;
    s->args_len = al;
    return s;
}

sp_open_span *sp_spans_find(const sp_span_table *t, uint64_t id)
{
    if (!t->cap)
        return NULL;
    for (size_t i = slot_of(id, t->cap);; i = (i + 1) & (t->cap - 1)) {
        sp_open_span *s = t->slots[i];
        if (!s || s->id == id)
            return s;
    }
}

static void put_slot(sp_open_span **slots, size_t cap, sp_open_span *s)
{
    size_t i = slot_of(s->id, cap);
    while (slots[i])
        i = (i + 1) & (cap - 1);
    slots[i] = s;
}

int sp_spans_add(sp_span_table *t, sp_open_span *s)
{
    if ((t->count + 1) * 2 > t->cap) { /* keep the load under one half */
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        sp_open_span **n = calloc(ncap, sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < t->cap; i++)
            if (t->slots[i])
                put_slot(n, ncap, t->slots[i]);
        free(t->slots);
        t->slots = n;
        t->cap = ncap;
    }
    put_slot(t->slots, t->cap, s);
    t->count++;
    return 0;
}

void sp_spans_remove(sp_span_table *t, sp_open_span *s)
{
    size_t mask = t->cap - 1, i = slot_of(s->id, t->cap);
    while (t->slots[i] != s)
        i = (i + 1) & mask;
    t->slots[i] = NULL;
    t->count--;
    /* Backward shift: move later members of the run into the hole when
     * their home slot is not after the hole (cyclically). */
    for (size_t j = (i + 1) & mask; t->slots[j]; j = (j + 1) & mask) {
        size_t home = slot_of(t->slots[j]->id, t->cap);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            t->slots[i] = t->slots[j];
            t->slots[j] = NULL;
            i = j;
        }
    }
}

void sp_spans_note_begin(sp_span_table *t, uint64_t id)
{
    size_t idx = (size_t)(id >> INDEX_SHIFT);
    if (idx >= t->nmax) {
        size_t n = t->nmax ? t->nmax : 64;
        while (n <= idx)
            n *= 2;
        uint64_t *m = realloc(t->max_begin, n * sizeof *m);
        if (!m)
            return; /* only weakens double-end detection */
        memset(m + t->nmax, 0, (n - t->nmax) * sizeof *m);
        t->max_begin = m;
        t->nmax = n;
    }
    if ((id & COUNTER_MASK) > t->max_begin[idx])
        t->max_begin[idx] = id & COUNTER_MASK;
}

int sp_spans_begun(const sp_span_table *t, uint64_t id)
{
    size_t idx = (size_t)(id >> INDEX_SHIFT);
    return idx < t->nmax && (id & COUNTER_MASK) <= t->max_begin[idx];
}

void sp_spans_drain(sp_span_table *t, void (*f)(void *ctx, sp_open_span *s), void *ctx)
{
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i]) {
            sp_open_span *s = t->slots[i];
            t->slots[i] = NULL;
            f(ctx, s);
        }
    }
    t->count = 0;
}

void sp_spans_free(sp_span_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slots[i]);
    free(t->slots);
    free(t->max_begin);
    memset(t, 0, sizeof *t);
}
