/*
 * reorder.c — puts records back in time order without sorting the table.
 *
 * A writer inserts spans when they end and threads' buffers are flushed at
 * different moments, so a store's rowid order is its time order except that
 * a row may come up to L nanoseconds "late" (L = the largest lateness,
 * measured by store.c in a first pass over the timestamps only). Reading
 * the table in rowid order (a sequential scan, about 10x cheaper than
 * SQLite's ORDER BY sort of whole rows) and holding rows in a min-heap
 * keyed on (timestamp, rowid), a row can be released as soon as its
 * timestamp is below (largest timestamp read so far − L): no row still to
 * come can be earlier. The output order is exactly ORDER BY timestamp, id.
 *
 * Memory is the rows of one window L (a few milliseconds of records for a
 * recorder's stores). Each buffered row is one block holding the row and
 * its strings; freed blocks go to per-size free lists and are reused, so
 * the steady state allocates nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "reorder.h"

typedef struct blk {
    struct blk *next_free;
    int cls;
    int64_t ts, dur, rowid;
    long long pid, tid;
    int name_len, cat_len, args_len;
    char data[];
} blk;

#define NCLS 24

struct spp_reorder {
    blk **heap;
    long long n, cap, peak;
    blk *free_[NCLS];
    blk *out;   /* the record last popped, alive until the next pop */
};

spp_reorder *spp_reorder_new(void)
{
    return calloc(1, sizeof(spp_reorder));
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

static blk *get_blk(spp_reorder *b, size_t data)
{
    size_t need = sizeof(blk) + data;
    int c = cls_of(need);
    size_t sz = (size_t)128 << c;
    if (sz < need) { /* larger than the biggest class: exact size, never pooled */
        blk *k = malloc(need);
        k->cls = -1;
        return k;
    }
    blk *k = b->free_[c];
    if (k) {
        b->free_[c] = k->next_free;
        return k;
    }
    k = malloc(sz);
    k->cls = c;
    return k;
}

static void put_blk(spp_reorder *b, blk *k)
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

void spp_reorder_push(spp_reorder *b, const spp_rec *r, int64_t rowid)
{
    int nl = (int)strlen(r->name), cl = (int)strlen(r->cat);
    blk *k = get_blk(b, (size_t)nl + (size_t)cl + (size_t)r->args_len + 3);
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
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 256;
        b->heap = realloc(b->heap, (size_t)b->cap * sizeof *b->heap);
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
    if (b->n > b->peak)
        b->peak = b->n;
}

int spp_reorder_min(spp_reorder *b, int64_t *ts)
{
    if (!b->n)
        return 0;
    *ts = b->heap[0]->ts;
    return 1;
}

int spp_reorder_pop(spp_reorder *b, spp_rec *out)
{
    if (!b->n)
        return 0;
    put_blk(b, b->out);
    blk *k = b->heap[0];
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

long long spp_reorder_count(spp_reorder *b) { return b->n; }
long long spp_reorder_peak(spp_reorder *b) { return b->peak; }

void spp_reorder_free(spp_reorder *b)
{
    if (!b)
        return;
    for (long long i = 0; i < b->n; i++)
        free(b->heap[i]);
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
