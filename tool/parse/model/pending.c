/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pending.c — a report row held back until a later record completes it
 * (batch rows wait for the next KVCacheStatus of their process, a forward
 * row for the next forward's start). The row owns copies of its strings,
 * because record strings die when the store's cursor moves.
 *
 * One allocation per row: the struct, its values and its strings in one
 * block (a batch row has half a dozen strings; a malloc/free pair each
 * cost more than the copies). A text value the caller puts into a row
 * afterwards (its own malloc'd string) is freed on its own: it is the one
 * whose pointer lies outside the block.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xalloc.h"

prs_pending *prs_pending_new(const prs_val *vals, int n)
{
    size_t text = 0;
    for (int i = 0; i < n; i++)
        if (vals[i].kind == PRS_TEXT)
            text += (size_t)vals[i].n + 1;
    size_t head = sizeof(prs_pending) + (size_t)n * sizeof *vals;
    char *blk = prs_xmalloc(head + text);
    prs_pending *p = (prs_pending *)blk;
    memset(p, 0, sizeof *p);
    p->nvals = n;
    p->vals = (prs_val *)(blk + sizeof(prs_pending));
    memcpy(p->vals, vals, (size_t)n * sizeof *vals);
    char *o = blk + head;
    for (int i = 0; i < n; i++) {
        if (p->vals[i].kind == PRS_TEXT) {
            memcpy(o, vals[i].s, (size_t)vals[i].n);
            o[vals[i].n] = 0;
            p->vals[i].s = o;
            o += vals[i].n + 1;
        }
    }
    p->block_end = o;
    return p;
}

void prs_pending_free(prs_pending *p)
{
    if (!p)
        return;
    uintptr_t lo = (uintptr_t)p, hi = (uintptr_t)p->block_end;
    for (int i = 0; i < p->nvals; i++) {
        uintptr_t s = (uintptr_t)p->vals[i].s;
        if (p->vals[i].kind == PRS_TEXT && (s < lo || s >= hi))
            free((char *)p->vals[i].s); /* put in after prs_pending_new: owned apart */
    }
    free(p);
}
