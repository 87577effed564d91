/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reorder.c — puts records back in time order without sorting the table.
 *
 * A writer inserts spans when they end and threads' buffers are flushed at
 * different moments, so a store's rowid order is its time order except that
 * some rows come "late". Reading the table in rowid order (a sequential
 * scan, about 10x cheaper than SQLite's ORDER BY sort of whole rows), the
 * caller (storeread.c) releases the earliest buffered row once it is older than
 * the window it keeps (largest timestamp read − window); the output order is
 * ORDER BY timestamp, id.
 *
 * Most rows are not late (events, and every row of a store in order): a row
 * whose (timestamp, rowid) is not below the last row appended to the FIFO
 * goes there, and the FIFO stays sorted by construction at O(1) a row. Only
 * late rows go into a min-heap (O(log n) in the few late rows buffered);
 * the earliest record is the smaller of the FIFO head and the heap top.
 *
 * Memory is the rows of one window. Each buffered row is one block holding
 * the row and its strings; freed blocks go to per-size free lists and are
 * reused, so the steady state allocates nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "reorder.h"
#include "xalloc.h"

typedef struct blk {
    struct blk *next_free;
    int cls;
    int64_t ts, dur, rowid;
    long long pid, tid;
    int name_len, cat_len, args_len;
    char data[];
} blk;

#define NCLS 24

struct prs_reorder {
    blk **heap;      /* late rows, min-heap on (ts, rowid) */
    long long n, cap, peak;
    blk **fifo;      /* rows in order: a ring, head .. head + nfifo */
    long long fhead, nfifo, fcap;
    blk *ftail;      /* the row appended last to the FIFO (NULL: none yet) */
    size_t bytes;    /* bytes buffered */
    blk *free_[NCLS];
    blk *out;   /* the record last popped, alive until the next pop */
};

prs_reorder *prs_reorder_new(void)
{
    return prs_xcalloc(1, sizeof(prs_reorder));
}

static int cls_of(size_t need)
{
    int c = 0;
    size_t sz = 128;
    while (sz < need && c < NCLS - 1) {
        sz <<= 1;
        c++;
    }
    return c;
}

static blk *get_blk(prs_reorder *b, size_t data)
{
    size_t need = sizeof(blk) + data;
    int c = cls_of(need);
    size_t sz = (size_t)128 << c;
    if (sz < need) { /* larger than the biggest class: exact size, never pooled */
        blk *k = prs_xmalloc(need);
        k->cls = -1;
        return k;
    }
    blk *k = b->free_[c];
    if (k) {
        b->free_[c] = k->next_free;
        return k;
    }
    k = prs_xmalloc(sz);
    k->cls = c;
    return k;
}

static void put_blk(prs_reorder *b, blk *k)
{
    if (!k)
        return;
    if (k->cls < 0) {
        free(k);
        return;
    }
    k->next_free = b->free_[k->cls];
    b->free_[k->cls] = k;
}

static int less(const blk *x, const blk *y)
{
    return x->ts != y->ts ? x->ts < y->ts : x->rowid < y->rowid;
}

static void fifo_push(prs_reorder *b, blk *k)
{
    if (b->nfifo == b->fcap) {
        long long nc = b->fcap ? b->fcap * 2 : 256;
        blk **f = prs_xmalloc((size_t)nc * sizeof *f);
        for (long long i = 0; i < b->nfifo; i++)
            f[i] = b->fifo[(b->fhead + i) % b->fcap];
        free(b->fifo);
        b->fifo = f;
        b->fcap = nc;
        b->fhead = 0;
    }
    b->fifo[(b->fhead + b->nfifo) % b->fcap] = k;
    b->nfifo++;
    b->ftail = k;
}

static void heap_push(prs_reorder *b, blk *k)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 256;
        b->heap = prs_xrealloc(b->heap, (size_t)b->cap * sizeof *b->heap);
    }
    long long i = b->n++;
    while (i > 0) {
        long long p = (i - 1) / 2;
        if (!less(k, b->heap[p]))
            break;
        b->heap[i] = b->heap[p];
        i = p;
    }
    b->heap[i] = k;
}

void prs_reorder_push(prs_reorder *b, const prs_rec *r, int64_t rowid)
{
    int nl = (int)strlen(r->name), cl = (int)strlen(r->cat);
    size_t data = (size_t)nl + (size_t)cl + (size_t)r->args_len + 3;
    blk *k = get_blk(b, data);
    k->ts = r->ts;
    k->dur = r->dur;
    k->rowid = rowid;
    k->pid = r->pid;
    k->tid = r->tid;
    k->name_len = nl;
    k->cat_len = cl;
    k->args_len = r->args_len;
    memcpy(k->data, r->name, (size_t)nl + 1);
    memcpy(k->data + nl + 1, r->cat, (size_t)cl + 1);
    memcpy(k->data + nl + cl + 2, r->args, (size_t)r->args_len);
    k->data[nl + cl + 2 + r->args_len] = 0;
    b->bytes += sizeof(blk) + data;
    if (!b->ftail || !less(k, b->ftail))
        fifo_push(b, k);
    else
        heap_push(b, k);
    if (b->n + b->nfifo > b->peak)
        b->peak = b->n + b->nfifo;
}

/* The earliest buffered block, or NULL; *from_heap says where it is. */
static blk *earliest(prs_reorder *b, int *from_heap)
{
    blk *f = b->nfifo ? b->fifo[b->fhead] : NULL;
    blk *h = b->n ? b->heap[0] : NULL;
    *from_heap = h && (!f || less(h, f));
    return *from_heap ? h : f;
}

int prs_reorder_min(prs_reorder *b, int64_t *ts)
{
    int from_heap;
    blk *k = earliest(b, &from_heap);
    if (!k)
        return 0;
    *ts = k->ts;
    return 1;
}

static void heap_pop(prs_reorder *b)
{
    blk *last = b->heap[--b->n];
    long long i = 0;
    for (;;) {
        long long l = 2 * i + 1, r = l + 1, s = l;
        if (l >= b->n)
            break;
        if (r < b->n && less(b->heap[r], b->heap[l]))
            s = r;
        if (!less(b->heap[s], last))
            break;
        b->heap[i] = b->heap[s];
        i = s;
    }
    if (b->n)
        b->heap[i] = last;
}

int prs_reorder_pop(prs_reorder *b, prs_rec *out)
{
    int from_heap;
    blk *k = earliest(b, &from_heap);
    if (!k)
        return 0;
    put_blk(b, b->out);
    if (from_heap) {
        heap_pop(b);
    } else {
        b->fhead = (b->fhead + 1) % b->fcap;
        if (--b->nfifo == 0)
            b->ftail = NULL; /* the next row starts the FIFO again */
    }
    b->bytes -= sizeof(blk) + (size_t)k->name_len + (size_t)k->cat_len + (size_t)k->args_len + 3;
    b->out = k;
    out->ts = k->ts;
    out->dur = k->dur;
    out->pid = k->pid;
    out->tid = k->tid;
    out->name = k->data;
    out->cat = k->data + k->name_len + 1;
    out->args = k->data + k->name_len + k->cat_len + 2;
    out->args_len = k->args_len;
    return 1;
}

long long prs_reorder_count(prs_reorder *b) { return b->n + b->nfifo; }
size_t prs_reorder_bytes(prs_reorder *b) { return b->bytes; }
long long prs_reorder_peak(prs_reorder *b) { return b->peak; }

void prs_reorder_free(prs_reorder *b)
{
    if (!b)
        return;
    for (long long i = 0; i < b->n; i++)
        free(b->heap[i]);
    for (long long i = 0; i < b->nfifo; i++)
        free(b->fifo[(b->fhead + i) % b->fcap]);
    free(b->fifo);
    free(b->out);
    for (int c = 0; c < NCLS; c++)
        while (b->free_[c]) {
            blk *k = b->free_[c];
            b->free_[c] = k->next_free;
            free(k);
        }
    free(b->heap);
    free(b);
}
