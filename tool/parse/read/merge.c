/* SPDX-License-Identifier: Apache-2.0 */
/*
 * merge.c — k-way merge of the stores by timestamp. Each store yields its
 * records already ordered (ORDER BY timestamp); a binary min-heap keyed on
 * each store's current timestamp gives the globally earliest record in
 * O(log k). Ties go to the lower store index so that runs are repeatable.
 * With --jobs the records come from the readers' rings (readers.c) in the
 * same per-store order, so the merged sequence is the same either way.
 */
#include <stdlib.h>

#include "merge.h"
#include "storeread.h"
#include "xalloc.h"


static int less(prs_merge *m, int a, int b)
{
    if (m->keys[a] != m->keys[b])
        return m->keys[a] < m->keys[b];
    return m->heap[a]->index < m->heap[b]->index;
}

static void swap(prs_merge *m, int a, int b)
{
    prs_store *s = m->heap[a];
    m->heap[a] = m->heap[b];
    m->heap[b] = s;
    int64_t k = m->keys[a];
    m->keys[a] = m->keys[b];
    m->keys[b] = k;
}

static void down(prs_merge *m, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, s = i;
        if (l < m->n && less(m, l, s))
            s = l;
        if (r < m->n && less(m, r, s))
            s = r;
        if (s == i)
            return;
        swap(m, i, s);
        i = s;
    }
}

int prs_merge_peek(prs_merge *m, prs_store *s, prs_rec *rec)
{
    return m->rd ? prs_readers_peek(m->rd, s, rec) : prs_store_peek(s, rec);
}

void prs_merge_init(prs_merge *m, prs_store **stores, int n, prs_readers *rd)
{
    m->rd = rd;
    m->heap = prs_xcalloc((size_t)n + 1, sizeof *m->heap);
    m->keys = prs_xcalloc((size_t)n + 1, sizeof *m->keys);
    m->n = 0;
    for (int i = 0; i < n; i++) {
        prs_rec r;
        if (!prs_merge_peek(m, stores[i], &r))
            continue;
        m->heap[m->n] = stores[i];
        m->keys[m->n] = r.ts;
        m->n++;
    }
    for (int i = m->n / 2 - 1; i >= 0; i--)
        down(m, i);
}

prs_store *prs_merge_top(prs_merge *m)
{
    return m->n ? m->heap[0] : NULL;
}

void prs_merge_advance(prs_merge *m)
{
    prs_store *s = m->heap[0];
    if (m->rd)
        prs_readers_next(m->rd, s);
    else
        prs_store_next(s);
    prs_rec r;
    if (prs_merge_peek(m, s, &r)) {
        m->keys[0] = r.ts;
    } else {
        m->n--;
        m->heap[0] = m->heap[m->n];
        m->keys[0] = m->keys[m->n];
    }
    down(m, 0);
}

void prs_merge_free(prs_merge *m)
{
    free(m->heap);
    free(m->keys);
    m->heap = NULL;
    m->keys = NULL;
    m->n = 0;
}
