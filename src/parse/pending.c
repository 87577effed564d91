/*
 * pending.c — a report row held back until a later record completes it
 * (batch rows wait for the next KVCacheStatus of their process, a forward
 * row for the next forward's start). The row owns copies of its strings,
 * because record strings die when the store's cursor moves.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

spp_pending *spp_pending_new(const spp_val *vals, int n)
{
    spp_pending *p = calloc(1, sizeof *p);
    p->nvals = n;
    p->vals = malloc((size_t)n * sizeof *p->vals);
    memcpy(p->vals, vals, (size_t)n * sizeof *vals);
    for (int i = 0; i < n; i++) {
        if (p->vals[i].kind == SPP_TEXT) {
            char *c = malloc((size_t)p->vals[i].n + 1);
            memcpy(c, vals[i].s, (size_t)vals[i].n);
            c[vals[i].n] = 0;
            p->vals[i].s = c;
        }
    }
    return p;
}

void spp_pending_free(spp_pending *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nvals; i++)
        if (p->vals[i].kind == SPP_TEXT)
            free((char *)p->vals[i].s);
    free(p->vals);
    free(p);
}

