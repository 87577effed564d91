/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reqorder.c — request.csv rows in start-time order, as the reference
 * writes them, without holding the whole report.
 *
 * A request's row is known only some time after its end (request.c), so
 * rows finish in end order. Each finished row waits in a min-heap keyed by
 * its start (ties: by their first record, then the order they finished;
 * rows with no start: by id). A row can go out once no
 * request can still produce an earlier start: every request that has
 * state (request.c keeps them on a list in creation order) will start no
 * earlier than it was first seen, and a request not seen yet will start no
 * earlier than the record being read. So the bound is the oldest living
 * request's first record, else the stream's current time; rows below it
 * are released in order. A row with no start (its httpReq was not
 * recorded) goes last, as in the reference's sort, at the end of input
 * (few: only requests cut by the collection window). Memory is the rows
 * finished while an older
 * request is still going; beyond MAX_HELD rows the earliest goes out
 * anyway (order is then kept only within the window; a request hanging
 * for the whole run must not hold every row in memory).
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xalloc.h"

#define MAX_HELD 200000

typedef struct held {
    int64_t key, key2;   /* start (INT64_MAX: none), then first record */
    long long seq;
    prs_pending *row;
} held;

struct prs_reqorder {
    prs_out *out;        /* where request.csv's rows go (request.c's table) */
    prs_table *t;
    held *h;
    int n, cap;
    long long seq;
};

static int before(const held *a, const held *b)
{
    if (a->key != b->key)
        return a->key < b->key;
    if (a->key == INT64_MAX) { /* no start: by id, as the reference's group-by leaves them */
        int c = strcmp(a->row->vals[0].s, b->row->vals[0].s);
        if (c)
            return c < 0;
    }
    if (a->key2 != b->key2)
        return a->key2 < b->key2;
    return a->seq < b->seq;
}

static void sift_up(held *h, int i)
{
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!before(&h[i], &h[p]))
            break;
        held t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

static void sift_down(held *h, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, s = i;
        if (l < n && before(&h[l], &h[s]))
            s = l;
        if (r < n && before(&h[r], &h[s]))
            s = r;
        if (s == i)
            break;
        held t = h[i];
        h[i] = h[s];
        h[s] = t;
        i = s;
    }
}

static void pop_write(prs_reqorder *o)
{
    prs_pending *p = o->h[0].row;
    o->h[0] = o->h[--o->n];
    sift_down(o->h, o->n, 0);
    prs_table_row(o->out, o->t, p->vals);
    prs_pending_free(p);
}

prs_reqorder *prs_reqorder_new(prs_out *out, prs_table *t)
{
    prs_reqorder *o = prs_xcalloc(1, sizeof *o);
    o->out = out;
    o->t = t;
    return o;
}

void prs_reqorder_push(prs_reqorder *o, int64_t key, int64_t key2, const prs_val *vals, int n)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 256;
        o->h = prs_xrealloc(o->h, (size_t)o->cap * sizeof *o->h);
    }
    o->h[o->n] = (held){key, key2, o->seq++, prs_pending_new(vals, n)};
    sift_up(o->h, o->n++);
    if (o->n > MAX_HELD)
        pop_write(o);
}

void prs_reqorder_release(prs_reqorder *o, int64_t bound)
{
    while (o->n && o->h[0].key < bound)
        pop_write(o);
}

void prs_reqorder_release_all(prs_reqorder *o)
{
    while (o->n)
        pop_write(o);
}

void prs_reqorder_free(prs_reqorder *o)
{
    if (!o)
        return;
    for (int i = 0; i < o->n; i++)
        prs_pending_free(o->h[i].row);
    free(o->h);
    free(o);
}
