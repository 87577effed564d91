/* SPDX-License-Identifier: Apache-2.0 */
/*
 * btindex.c — an index b-tree built by hand (btindex.h) in SQLite's file
 * format (https://www.sqlite.org/fileformat2.html, "Index B-Tree Pages").
 *
 * CREATE INDEX on a finished profiler.db reads every row back (a batch row
 * carries its whole res_list) and sorts the keys through SQLite's sorter:
 * a large share of the full parse for the eight dashboard indexes
 * (docs/benchmarks.md, "Figures behind design comments"). Here each table
 * row adds its key as it is written, and the index is laid out when the
 * table ends.
 *
 * Keys. Each key column becomes one 64-bit number ordered as SQLite's
 * BINARY comparison orders the values: NULL first (0), then numbers, then
 * texts. Integers map to themselves with the sign bit flipped; a column
 * with any real maps every number through the double's ordered bit
 * pattern (exact: our reals and integral reals are doubles); texts map to
 * their rank among the column's distinct texts (memcmp order, shorter
 * first). An entry is (key..., rowid) and entries compare as arrays of
 * unsigned numbers, sorted in place; each record is rebuilt from its key
 * (a number column's integral values are stored as integers, as btwrite
 * stores them). What that cannot order or rebuild exactly (a column mixing
 * texts and numbers, integers beyond 2^53 next to reals, an integral value
 * stored as a real, INT64_MIN next to NULL) makes prs_btix_write refuse,
 * and SQLite builds that index.
 *
 * Sorting: nothing when the entries already come in order (keys that grow
 * with time); a stable counting sort on the first column when it has few
 * distinct values and the rest is already in order (counter(name,
 * timestamp), kvcache(rid), flow(flow_id)); else qsort.
 *
 * Layout, bottom up: leaves are filled in key order; the entry after a
 * full leaf goes up as the divider between it and the next leaf (in an
 * index b-tree every entry is stored once, interior cells included), and
 * the interior levels are built the same way from the dividers, until one
 * page is left: the root. A divider is never taken when it would leave the
 * last page of a level without a cell. A key longer than a page's local
 * payload limit would need overflow pages: refused (SQLite builds it).
 */
#include <stdlib.h>
#include <string.h>

#include "btindex.h"
#include "sqlfmt.h"

enum { C_NULL = 0, C_INT, C_REAL, C_TEXT };

struct prs_btix {
    int nkey;
    long long n, cap;
    uint64_t *raw;      /* n x (nkey + 1): per column the value (int / real bits / text id), then the rowid */
    uint8_t *cls;       /* n x nkey: C_* per column */
    /* interned texts, all columns: id -> (offset, length) in the arena */
    char *arena;
    size_t used, acap;
    uint32_t *toff, *tlen;
    long long ntext, captext;
    uint32_t *slots;    /* id + 1, open addressing */
    uint32_t nslots;
    /* at write time: */
    uint32_t *rank;     /* id -> rank (1..) */
    uint32_t *by_rank;  /* rank - 1 -> id */
    uint8_t kind[PRS_BTIX_MAXKEY];  /* per column: C_NULL (all), C_INT, C_REAL (numbers as doubles), C_TEXT */
    uint8_t nulls[PRS_BTIX_MAXKEY]; /* the column has NULLs (key 0) */
    int oom;            /* an allocation failed: entries stopped, the index is refused */
};

prs_btix *prs_btix_new(int nkey)
{
    if (nkey < 1 || nkey > PRS_BTIX_MAXKEY)
        return NULL;
    prs_btix *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->nkey = nkey;
    x->nslots = 1024;
    x->slots = calloc(x->nslots, sizeof *x->slots);
    if (!x->slots) {
        free(x);
        return NULL;
    }
    return x;
}

void prs_btix_free(prs_btix *x)
{
    if (!x)
        return;
    free(x->raw);
    free(x->cls);
    free(x->arena);
    free(x->toff);
    free(x->tlen);
    free(x->slots);
    free(x->rank);
    free(x->by_rank);
    free(x);
}

long long prs_btix_count(const prs_btix *x) { return x->n; }

static uint32_t text_hash(const char *s, uint32_t n)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static void rehash(prs_btix *x)
{
    uint32_t ns = x->nslots * 2;
    uint32_t *sl = calloc(ns, sizeof *sl);
    if (!sl) {
        x->oom = 1; /* no further entry is added: the table never fills up */
        return;
    }
    for (long long i = 0; i < x->ntext; i++) {
        uint32_t h = text_hash(x->arena + x->toff[i], x->tlen[i]) & (ns - 1);
        while (sl[h])
            h = (h + 1) & (ns - 1);
        sl[h] = (uint32_t)i + 1;
    }
    free(x->slots);
    x->slots = sl;
    x->nslots = ns;
}

static uint32_t intern(prs_btix *x, const char *s, uint32_t n)
{
    uint32_t h = text_hash(s, n) & (x->nslots - 1);
    while (x->slots[h]) {
        uint32_t id = x->slots[h] - 1;
        if (x->tlen[id] == n && (n == 0 || memcmp(x->arena + x->toff[id], s, n) == 0))
            return id;
        h = (h + 1) & (x->nslots - 1);
    }
    if (x->ntext == x->captext) {
        long long cap = x->captext ? x->captext * 2 : 256;
        uint32_t *to = realloc(x->toff, (size_t)cap * sizeof *to);
        if (to)
            x->toff = to;
        uint32_t *tl = to ? realloc(x->tlen, (size_t)cap * sizeof *tl) : NULL;
        if (!tl) {
            x->oom = 1;
            return 0;
        }
        x->tlen = tl;
        x->captext = cap;
    }
    if (x->used + n > x->acap) {
        size_t cap = (x->used + n) * 2 + 4096;
        char *na = realloc(x->arena, cap);
        if (!na) {
            x->oom = 1;
            return 0;
        }
        x->arena = na;
        x->acap = cap;
    }
    if (n) /* the arena is still NULL when the first text is empty */
        memcpy(x->arena + x->used, s, n);
    uint32_t id = (uint32_t)x->ntext++;
    x->toff[id] = (uint32_t)x->used;
    x->tlen[id] = n;
    x->used += n;
    x->slots[h] = id + 1;
    if ((uint64_t)x->ntext * 2 > x->nslots)
        rehash(x);
    return id;
}

static int64_t sext(uint64_t v, int bytes)
{
    if (bytes >= 8)
        return (int64_t)v;
    int sh = 64 - 8 * bytes;
    return (int64_t)(v << sh) >> sh;
}

void prs_btix_add(prs_btix *x, const uint32_t *st, const uint64_t *iv, const char *const *text, int64_t rowid)
{
    static const int int_bytes[7] = {0, 1, 2, 3, 4, 6, 8};
    if (x->oom)
        return;
    if (x->n == x->cap) {
        long long cap = x->cap ? x->cap * 2 : 1024;
        uint64_t *nr = realloc(x->raw, (size_t)cap * (size_t)(x->nkey + 1) * sizeof *nr);
        if (nr)
            x->raw = nr;
        uint8_t *nc = nr ? realloc(x->cls, (size_t)cap * (size_t)x->nkey) : NULL;
        if (!nc) {
            x->oom = 1;
            return;
        }
        x->cls = nc;
        x->cap = cap;
    }
    uint64_t *r = x->raw + x->n * (x->nkey + 1);
    uint8_t *c = x->cls + x->n * x->nkey;
    for (int i = 0; i < x->nkey; i++) {
        uint32_t t = st[i];
        if (t == 0) {
            c[i] = C_NULL;
            r[i] = 0;
        } else if (t == 8 || t == 9) {
            c[i] = C_INT;
            r[i] = t - 8;
        } else if (t <= 6) {
            c[i] = C_INT;
            r[i] = (uint64_t)sext(iv[i], int_bytes[t]);
        } else if (t == 7) {
            c[i] = C_REAL;
            r[i] = iv[i];
        } else { /* text (blobs do not occur in profiler.db) */
            c[i] = C_TEXT;
            r[i] = intern(x, text[i], (t - 13) / 2);
        }
    }
    r[x->nkey] = (uint64_t)rowid;
    x->n++;
}

/* ------------------------------------------------------------- ordering */

static uint64_t ordered_double(double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    return (b & (1ULL << 63)) ? ~b : b | (1ULL << 63);
}

static double unordered_double(uint64_t k)
{
    uint64_t b = (k & (1ULL << 63)) ? k & ~(1ULL << 63) : ~k;
    double d;
    memcpy(&d, &b, 8);
    return d;
}

/* qsort_r comparator (glibc's argument order): ctx is the index. */
static int cmp_text_ids(const void *a, const void *b, void *ctx)
{
    const prs_btix *x = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint32_t li = x->tlen[i], lj = x->tlen[j];
    int c = li && lj ? memcmp(x->arena + x->toff[i], x->arena + x->toff[j], li < lj ? li : lj) : 0;
    if (c)
        return c;
    return li < lj ? -1 : li > lj;
}

/* Ranks 1.. of the distinct texts (0 is NULL): by_rank[r - 1] = id.
 * 0, or -1 when out of memory. */
static int rank_texts(prs_btix *x)
{
    x->by_rank = malloc((size_t)(x->ntext ? x->ntext : 1) * sizeof *x->by_rank);
    uint32_t *rank = malloc((size_t)(x->ntext ? x->ntext : 1) * sizeof *rank);
    if (!x->by_rank || !rank) {
        free(rank);
        return -1;
    }
    for (long long i = 0; i < x->ntext; i++)
        x->by_rank[i] = (uint32_t)i;
    qsort_r(x->by_rank, (size_t)x->ntext, sizeof *x->by_rank, cmp_text_ids, x);
    for (long long r = 0; r < x->ntext; r++)
        rank[x->by_rank[r]] = (uint32_t)r + 1;
    x->rank = rank;
    return 0;
}

static int integral(double d, int64_t *out)
{
    if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
        return 0;
    int64_t i = (int64_t)d;
    if ((double)i != d)
        return 0;
    *out = i;
    return 1;
}

/* Turns column col's raw values into ordered keys, in place (key_value
 * turns them back). *small: the key range when a counting sort can use
 * it, else -1. 0, or -1 with *why. */
static int order_column(prs_btix *x, int col, long long *small, const char **why)
{
    int has_real = 0, has_int = 0, has_text = 0, has_null = 0, real_integral = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int stride = x->nkey + 1;
    for (long long e = 0; e < x->n; e++) {
        uint8_t c = x->cls[e * x->nkey + col];
        uint64_t v = x->raw[e * stride + col];
        has_null |= c == C_NULL;
        has_text |= c == C_TEXT;
        if (c == C_REAL) {
            double d;
            int64_t i;
            memcpy(&d, &v, 8);
            has_real = 1;
            real_integral |= integral(d, &i);
        } else if (c == C_INT) {
            has_int = 1;
            lo = (int64_t)v < lo ? (int64_t)v : lo;
            hi = (int64_t)v > hi ? (int64_t)v : hi;
        }
    }
    if (has_text && (has_int || has_real)) {
        *why = "a key column holds both numbers and texts";
        return -1;
    }
    if (has_real && has_int && (lo < -(1LL << 53) || hi > (1LL << 53))) {
        *why = "a key column holds reals and integers beyond 2^53";
        return -1;
    }
    if (has_real && real_integral) {
        *why = "a key column holds an integral value stored as a real";
        return -1;
    }
    if (has_null && has_int && !has_real && lo == INT64_MIN) {
        *why = "a key column holds NULL and INT64_MIN";
        return -1;
    }
    x->kind[col] = has_text ? C_TEXT : has_real ? C_REAL : has_int ? C_INT : C_NULL;
    x->nulls[col] = (uint8_t)has_null;
    for (long long e = 0; e < x->n; e++) {
        uint8_t c = x->cls[e * x->nkey + col];
        uint64_t *v = &x->raw[e * stride + col];
        if (c == C_NULL)
            *v = 0;
        else if (c == C_TEXT)
            *v = x->rank[*v];
        else if (x->kind[col] == C_REAL && c == C_INT)
            *v = ordered_double((double)(int64_t)*v);
        else if (x->kind[col] == C_REAL) {
            double d;
            memcpy(&d, v, 8);
            *v = ordered_double(d);
        } else
            *v ^= 1ULL << 63;
    }
    *small = -1;
    if (x->kind[col] == C_TEXT && x->ntext <= x->n * 4 + 16)
        *small = x->ntext;
    else if (x->kind[col] == C_INT && !has_null && (uint64_t)hi - (uint64_t)lo <= (uint64_t)x->n * 4 + 16)
        *small = (long long)((uint64_t)hi - (uint64_t)lo);
    return 0;
}

/* qsort_r comparator: ctx points to the stride (words per row). */
static int cmp_entries(const void *a, const void *b, void *ctx)
{
    const uint64_t *x = a, *y = b;
    int stride = *(const int *)ctx;
    for (int i = 0; i < stride; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* Whether the rows are in order on words from..stride-1. */
static int entries_sorted(const uint64_t *k, long long n, int stride, int from)
{
    for (long long e = 1; e < n; e++) {
        const uint64_t *a = k + (e - 1) * stride, *b = k + e * stride;
        for (int i = from; i < stride; i++) {
            if (a[i] != b[i]) {
                if (a[i] > b[i])
                    return 0;
                break;
            }
        }
    }
    return 1;
}

/* Sorts the key rows (the last word the rowid, which grows with the row). */
static void sort_keys(uint64_t *k, long long n, int stride, long long small)
{
    if (entries_sorted(k, n, stride, 0))
        return;
    long long *cnt = NULL;
    uint64_t *out = NULL;
    if (small >= 0 && entries_sorted(k, n, stride, 1) &&
        (cnt = calloc((size_t)small + 3, sizeof *cnt)) != NULL &&
        (out = malloc((size_t)n * (size_t)stride * sizeof *out)) != NULL) {
        /* in order but for column 0, which has few values: a stable
         * counting sort (qsort below when its memory is not there) */
        uint64_t base = UINT64_MAX;
        for (long long e = 0; e < n; e++)
            base = k[e * stride] < base ? k[e * stride] : base;
        size_t nb = (size_t)small + 2;
        for (long long e = 0; e < n; e++)
            cnt[k[e * stride] - base + 1]++;
        for (size_t b = 1; b <= nb; b++)
            cnt[b] += cnt[b - 1];
        for (long long e = 0; e < n; e++)
            memcpy(out + cnt[k[e * stride] - base]++ * stride, k + e * stride, (size_t)stride * sizeof *out);
        memcpy(k, out, (size_t)n * (size_t)stride * sizeof *out);
        free(out);
        free(cnt);
        return;
    }
    free(cnt);
    qsort_r(k, (size_t)n, (size_t)stride * sizeof *k, cmp_entries, &stride);
}

/* -------------------------------------------------------------- records */

/* The record of the sorted key row k: its size, and its bytes when out. */
static uint32_t record(const prs_btix *x, const uint64_t *k, uint8_t *out)
{
    int nf = x->nkey + 1;
    uint32_t st[PRS_BTIX_MAXKEY + 1];
    uint32_t len[PRS_BTIX_MAXKEY + 1];
    uint64_t val[PRS_BTIX_MAXKEY + 1];
    uint32_t hsum = 0, body = 0;
    for (int i = 0; i < nf; i++) {
        int kind = i < x->nkey ? x->kind[i] : C_INT;
        uint64_t v = k[i];
        if (i == x->nkey) { /* the rowid, as it is */
            st[i] = int_type((int64_t)v, &len[i]);
            val[i] = v;
        } else if (kind == C_NULL || (v == 0 && x->nulls[i])) {
            st[i] = 0;
            len[i] = 0;
        } else if (kind == C_INT) {
            val[i] = v ^ (1ULL << 63);
            st[i] = int_type((int64_t)val[i], &len[i]);
        } else if (kind == C_REAL) {
            double d = unordered_double(v);
            int64_t iv;
            if (integral(d, &iv)) { /* an integer of the column (integral reals were refused) */
                val[i] = (uint64_t)iv;
                st[i] = int_type(iv, &len[i]);
            } else {
                memcpy(&val[i], &d, 8);
                st[i] = 7;
                len[i] = 8;
            }
        } else {
            val[i] = x->by_rank[v - 1];
            len[i] = x->tlen[val[i]];
            st[i] = 2 * len[i] + 13;
        }
        hsum += (uint32_t)varint_len(st[i]);
        body += len[i];
    }
    uint32_t hdr = hsum + 1;
    while ((uint32_t)varint_len(hdr) > hdr - hsum)
        hdr++;
    if (!out)
        return hdr + body;
    uint8_t *p = out;
    p += put_varint(p, hdr);
    for (int i = 0; i < nf; i++)
        p += put_varint(p, st[i]);
    for (int i = 0; i < nf; i++) {
        if (st[i] >= 13) {
            memcpy(p, x->arena + x->toff[val[i]], (size_t)len[i]);
        } else {
            uint64_t v = val[i];
            for (int b = (int)len[i] - 1; b >= 0; b--) {
                p[b] = (uint8_t)v;
                v >>= 8;
            }
        }
        p += len[i];
    }
    return hdr + body;
}

/* -------------------------------------------------------------- pages */

typedef struct layout {
    const prs_btix *x;
    unsigned psz;
    uint8_t *page;
    uint32_t (*put_page)(void *, const uint8_t *);
    void *ctx;
    const uint64_t *keys;    /* the sorted key rows */
    int stride;
    const uint32_t *size;    /* sorted position -> record size */
    long long *pos;          /* the positions of one page's cells (psz / 4 + 1) */
} layout;

static unsigned cell_size(const layout *L, long long pos, int interior)
{
    uint32_t P = L->size[pos];
    return (interior ? 4u : 0u) + (unsigned)varint_len(P) + P;
}

/* A page with the entries at sorted positions pos[0..n-1]; interior pages
 * have child[i] left of pos[i] and `right` as the right-most child. */
static uint32_t write_page(layout *L, const long long *pos, const uint32_t *child, long long n, uint32_t right)
{
    int interior = child != NULL;
    unsigned hl = interior ? 12 : 8, content = L->psz;
    uint8_t *pg = L->page;
    pg[0] = interior ? 0x02 : 0x0a;
    put16(pg + 1, 0);
    put16(pg + 3, (unsigned)n);
    pg[7] = 0;
    if (interior)
        put32(pg + 8, right);
    for (long long i = 0; i < n; i++) {
        unsigned cs = cell_size(L, pos[i], interior);
        content -= cs;
        uint8_t *c = pg + content;
        if (interior) {
            put32(c, child[i]);
            c += 4;
        }
        c += put_varint(c, L->size[pos[i]]);
        record(L->x, L->keys + pos[i] * L->stride, c);
        put16(pg + hl + 2 * i, content);
    }
    put16(pg + 5, content == 65536 ? 0 : content);
    memset(pg + hl + 2 * n, 0, content - (hl + 2 * (unsigned)n));
    return L->put_page(L->ctx, pg);
}

/* Leaves over sorted positions 0..n-1: fills child[] (pages) and div[]
 * (the positions between them); returns the number of pages. */
static long long leaf_level(layout *L, long long n, uint32_t *child, long long *div, long long *ndiv)
{
    unsigned room = L->psz - 8;
    long long npg = 0, i = 0;
    long long *pos = L->pos;
    *ndiv = 0;
    if (n == 0) {
        child[npg++] = write_page(L, pos, NULL, 0, 0);
        return npg;
    }
    while (i < n) {
        unsigned used = 0;
        long long j = i;
        while (j < n && used + cell_size(L, j, 0) + 2 <= room)
            used += cell_size(L, j++, 0) + 2;
        long long end = j;
        if (j < n && j + 1 == n)
            end = j - 1; /* keep an entry for the last leaf */
        for (long long k = i; k < end; k++)
            pos[k - i] = k;
        child[npg++] = write_page(L, pos, NULL, end - i, 0);
        if (end >= n)
            break;
        div[(*ndiv)++] = end;
        i = end + 1;
    }
    return npg;
}

/* One interior level over children c[0..m] and dividers d[0..m-1] (d[t]
 * between c[t] and c[t+1]); the new level's children and dividers are
 * written over the arrays' fronts. Returns the new m. */
static long long interior_level(layout *L, uint32_t *c, long long *d, long long m)
{
    unsigned room = L->psz - 12;
    long long *pos = L->pos;
    long long nm = 0, nc = 0, a = 0;
    for (;;) {
        unsigned used = 0;
        long long b = a;
        while (b < m && used + cell_size(L, d[b], 1) + 2 <= room)
            used += cell_size(L, d[b++], 1) + 2;
        long long end = b;
        if (b < m && b + 1 == m)
            end = b - 1; /* the last page keeps a cell */
        for (long long t = a; t < end; t++)
            pos[t - a] = d[t];
        uint32_t pg = write_page(L, pos, c + a, end - a, c[end]);
        long long up = end < m ? d[end] : -1;
        c[nc++] = pg;
        if (end >= m)
            break;
        d[nm++] = up;
        a = end + 1;
    }
    return nm;
}

int prs_btix_write(prs_btix *x, unsigned psz, uint32_t (*put_page)(void *ctx, const uint8_t *page), void *ctx,
                   uint32_t *root, const char **why)
{
    int stride = x->nkey + 1;
    long long n = x->n;
    uint32_t maxlocal = (psz - 12) * 64 / 255 - 23; /* the local payload limit of index pages */
    if (x->oom || rank_texts(x) != 0) {
        *why = "out of memory for its entries";
        return -1;
    }
    long long small = -1;
    for (int col = 0; col < x->nkey; col++) {
        long long sm;
        if (order_column(x, col, &sm, why) != 0)
            return -1;
        if (col == 0)
            small = sm;
    }
    free(x->cls); /* the kinds say the rest */
    x->cls = NULL;
    sort_keys(x->raw, n, stride, small);
    /* Every allocation before the first page: a failure then writes none. */
    uint32_t *size = malloc((size_t)(n ? n : 1) * sizeof *size);
    layout L = {x, psz, malloc(psz), put_page, ctx, x->raw, stride, size,
                malloc((size_t)(psz / 4 + 1) * sizeof(long long))};
    uint32_t *child = calloc((size_t)(n + 1), sizeof *child);
    long long *div = malloc((size_t)(n + 1) * sizeof *div);
    int rc = 0;
    if (!size || !L.page || !L.pos || !child || !div) {
        *why = "out of memory for its layout";
        rc = -1;
    }
    for (long long p = 0; rc == 0 && p < n; p++) {
        size[p] = record(x, x->raw + p * stride, NULL);
        if (size[p] > maxlocal) {
            *why = "a key longer than an index page holds without overflow pages";
            rc = -1;
        }
    }
    if (rc == 0) {
        long long m;
        leaf_level(&L, n, child, div, &m);
        while (m > 0)
            m = interior_level(&L, child, div, m);
        *root = child[0];
    }
    free(child);
    free(div);
    free(L.page);
    free(L.pos);
    free(size);
    return rc;
}
