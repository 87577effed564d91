/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coordcount.c — coordinator_running.csv: how many requests each prefill
 * and decode instance was running, per 5-second bucket, from the
 * coordinator's moments (pdsplit.c hands them over as it writes
 * coordinator.csv): prefillStart / decodeStart add a request to the
 * (address, node type), prefillEnd / decodeEnd end one.
 *
 * Design: the moments are kept as (bucket, key, add/end) triples, 16 bytes
 * each (four per request), keys being the distinct (address, node type)
 * pairs; at the end they are sorted and every bucket from the first to the
 * last is written for every key, the running count carried through buckets
 * without moments. Rows: time, address, node_type (the reference's
 * columns), in time, address, node type order.
 */
#include <stdlib.h>
#include <string.h>

#include "coordcount.h"
#include "dbcompat.h"
#include "fmt.h"
#include "xalloc.h"

#define BUCKET_NS 5000000000LL
#define MAX_ROWS 10000000LL /* beyond: only buckets with moments are written */

typedef struct moment { int64_t bucket; int key; int end; } moment;
typedef struct key { char *address; int decode; } key;

struct prs_coordcount {
    moment *m;
    long long n, cap;
    key *k;
    int nk;
};

prs_coordcount *prs_coordcount_new(void) { return prs_xcalloc(1, sizeof(prs_coordcount)); }

static int key_of(prs_coordcount *c, const char *address, int decode)
{
    for (int i = 0; i < c->nk; i++)
        if (c->k[i].decode == decode && !strcmp(c->k[i].address, address))
            return i;
    c->k = prs_xrealloc(c->k, (size_t)(c->nk + 1) * sizeof *c->k);
    c->k[c->nk].address = prs_xstrdup(address);
    c->k[c->nk].decode = decode;
    return c->nk++;
}

void prs_coordcount_note(prs_coordcount *c, int64_t ts, const char *address, int decode, int end)
{
    if (!c || !address)
        return;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->m = prs_xrealloc(c->m, (size_t)c->cap * sizeof *c->m);
    }
    int64_t b = ts / BUCKET_NS - (ts % BUCKET_NS < 0);
    c->m[c->n++] = (moment){b, key_of(c, address, decode), end};
}

/* Keys in address, then node type order (prefill before decode). The
 * comparators take c from qsort_r (glibc's argument order), not from a
 * global: two parses may sort at once. */
static int by_key(const prs_coordcount *c, int a, int b)
{
    const key *x = &c->k[a], *y = &c->k[b];
    int d = strcmp(x->address, y->address);
    return d ? d : x->decode - y->decode;
}
static int by_bucket_key(const void *pa, const void *pb, void *c)
{
    const moment *a = pa, *b = pb;
    if (a->bucket != b->bucket)
        return a->bucket < b->bucket ? -1 : 1;
    return by_key(c, a->key, b->key);
}
static int key_cmp(const void *pa, const void *pb, void *c)
{
    return by_key(c, *(const int *)pa, *(const int *)pb);
}

static void row(prs_out *out, prs_table *t, int64_t bucket, const key *k, long long add, long long end,
                long long running)
{
    char dt[40];
    prs_fmt_datetime(bucket * BUCKET_NS, dt);
    dt[19] = 0; /* whole seconds, as the reference writes them */
    prs_val v[6] = {prs_v_text(dt, -1), prs_v_text(k->address, -1), prs_v_text(k->decode ? "decode" : "prefill", -1),
                    prs_v_int(add), prs_v_int(end), prs_v_int(running)};
    prs_table_row(out, t, v);
}

void prs_coordcount_write(prs_coordcount *c, prs_out *out)
{
    static const prs_col cols[] = {{"time", "TEXT"}, {"address", "TEXT"}, {"node_type", "TEXT"},
                                   {"add_count", "INTEGER"}, {"end_count", "INTEGER"},
                                   {"running_count", "INTEGER"}};
    prs_table t;
    prs_table_init(out, &t, "coordinator_running.csv", "coordinator_running", cols, 6, NULL);
    if (c && c->n) {
        qsort_r(c->m, (size_t)c->n, sizeof *c->m, by_bucket_key, c);
        int *order = prs_xmalloc((size_t)c->nk * sizeof *order);
        long long *running = prs_xcalloc((size_t)c->nk, sizeof *running);
        for (int i = 0; i < c->nk; i++)
            order[i] = i;
        qsort_r(order, (size_t)c->nk, sizeof *order, key_cmp, c);
        /* profiler.db's Coordinator_curve view needs the instances (dbcompat.c) */
        const char **addr = prs_xmalloc((size_t)c->nk * sizeof *addr); /* sorted by address: the view's order */
        int *dec = prs_xmalloc((size_t)c->nk * sizeof *dec);
        for (int i = 0; i < c->nk; i++) {
            addr[i] = c->k[order[i]].address;
            dec[i] = c->k[order[i]].decode;
        }
        if (out->db_conn)
            prs_dbcompat_coordinator_nodes(out, addr, dec, c->nk);
        free(addr);
        free(dec);
        int64_t first = c->m[0].bucket, last = c->m[c->n - 1].bucket;
        int fill = (last - first + 1) * c->nk <= MAX_ROWS;
        long long i = 0;
        for (int64_t b = first; b <= last; b++) {
            if (!fill && (i == c->n || c->m[i].bucket != b)) {
                if (i < c->n)
                    b = c->m[i].bucket - 1; /* jump to the next bucket with moments */
                continue;
            }
            for (int j = 0; j < c->nk; j++) {
                long long add = 0, end = 0;
                while (i < c->n && c->m[i].bucket == b && c->m[i].key == order[j]) {
                    add += !c->m[i].end;
                    end += c->m[i].end;
                    i++;
                }
                running[order[j]] += add - end;
                if (running[order[j]] < 0) /* an end whose start was before collection */
                    running[order[j]] = 0;
                if (fill || add || end)
                    row(out, &t, b, &c->k[order[j]], add, end, running[order[j]]);
            }
        }
        free(order);
        free(running);
    }
    prs_table_close(out, &t);
}

void prs_coordcount_free(prs_coordcount *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nk; i++)
        free(c->k[i].address);
    free(c->k);
    free(c->m);
    free(c);
}
