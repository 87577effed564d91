/* SPDX-License-Identifier: Apache-2.0 */
/*
 * btwrite.c — writes an SQLite database file's table b-trees directly, in
 * the documented file format (https://www.sqlite.org/fileformat2.html), so
 * that profiler.db's millions of rows do not each pay SQLite's INSERT
 * machinery (statement, cursor, balance: several times the cost of a row
 * written here; the figures are in docs/benchmarks.md, "Figures behind
 * design comments").
 *
 * Design. Every table is a rowid table filled in rowid order (1, 2, 3...,
 * or its INTEGER PRIMARY KEY values, which must increase), so a b-tree can
 * be built bottom-up while the rows stream:
 *  - each table has one current leaf page in memory; a row's cell is
 *    written straight into it (cells from the page end down, as SQLite
 *    lays them out); a full leaf takes the next free page number and goes
 *    to the file, and only (page number, last rowid) is kept for the levels
 *    above — 16 bytes per page of rows;
 *  - pages are numbered in the order they are written (leaves of all
 *    tables interleaved, overflow pages, interior pages), so the file is one
 *    sequential stream, handed in 4 MiB buffers to dwrite.c (O_DIRECT from
 *    a thread: a gigabyte through the page cache costs up to 2 s of kernel
 *    copying); page 1 is left blank and written last with pwrite(); the
 *    page holding byte 2^30 (SQLite's lock byte) is written as zeros and
 *    never used, as SQLite requires;
 *  - a table's interior pages are built when it ends: its leaves are
 *    spread evenly over as few interior pages as hold them, level after
 *    level, up to one root (every leaf at the same depth, no interior page
 *    without a cell);
 *  - the schema (sqlite_schema rows, given by the caller) is the last tree:
 *    its root must be page 1, whose b-tree header starts after the 100-byte
 *    file header.
 * Values are stored as SQLite's INSERT stores them, byte for byte (a
 * differential test compares the records): column affinity applied (an
 * integral real in a numeric column is stored as an integer, REAL columns
 * included while it fits in 6 bytes: SQLite does that to save space and
 * gives it back as real; a larger one in a REAL column stays a double),
 * the smallest integer serial type, 0 and 1 as serial types 8 and 9
 * (schema format 4), NaN as NULL.
 * The conversions that need SQLite's own number<->text rules (a text into a
 * numeric column, a number into a TEXT column) are left to the caller
 * (prs_bt_row returns 1). Records longer than a page's local limit spill
 * into overflow pages by the format's exact local-size rule. Indexes are
 * laid out by btindex.c from the keys each row adds (prs_bt_index); those it
 * cannot build the caller has SQLite create on the finished file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "btindex.h"
#include "sqlfmt.h"
#include "btwrite.h"
#include "dwrite.h"

/* A child of an interior page: its page and the largest rowid under it. */
typedef struct bt_child { uint32_t pg; int64_t key; } bt_child;

struct prs_bt_tab {
    prs_bt *w;
    char *name;
    int ncols, ipk;
    char *aff;            /* affinity per column */
    uint32_t *st;         /* serial type per column of the row being written */
    uint64_t *iv;         /* its integer / real bits per column */
    uint8_t *hb;          /* the row's serial types, as the header's varints (9 bytes a column) */
    uint8_t *body;        /* the row's bodies, as they are typed (see prs_bt_row) */
    size_t bodycap;
    uint8_t *page;        /* the current leaf (NULL once ended) */
    unsigned ncells;
    unsigned content;     /* start of the cell content area */
    unsigned reserve;     /* bytes kept free in a leaf with cells (the schema: page 1's header) */
    int64_t rowid;        /* the last rowid written */
    long long nrows;
    bt_child *leaves;     /* leaves written so far */
    size_t nleaves, capleaves;
    uint8_t *big;         /* a whole record that overflows */
    size_t bigcap;
    uint32_t root;        /* 0 until ended */
    prs_bt_tab *next;     /* the writer's list */
    struct bt_ix *ixs;    /* its indexes (btindex.c), fed by every row */
};

/* An index on a table: entries collected as rows are written, laid out
 * when the table ends (btindex.c). */
typedef struct bt_ix {
    char *name;
    prs_bt_tab *tab;
    prs_btix *x;          /* NULL once written */
    int nkey, cols[PRS_BTIX_MAXKEY];
    uint32_t root;        /* 0: not written (why) */
    const char *why;
    struct bt_ix *next_of_tab, *next;
} bt_ix;

struct prs_bt {
    prs_dw *dw;           /* the file while pages stream (NULL once closed) */
    char *path;
    unsigned psz;         /* page size = usable size (no reserved bytes) */
    uint32_t next_pg;     /* the page number the next written page gets */
    uint32_t lock_pg;     /* the page holding byte 2^30: never used */
    long long ix_max_bytes; /* an index's memory budget (index_entry) */
    uint8_t *buf;         /* dwrite's buffer being filled with pages */
    size_t nbuf, capbuf;
    uint8_t *scratch;     /* an interior or overflow page being built */
    uint8_t *page1;
    int failed;
    char msg[256];
    prs_bt_tab *tabs, **tail;
    bt_ix *ixs;           /* every index, for prs_bt_index_status */
};

static void fail(prs_bt *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(prs_bt *w, const char *fmt, ...)
{
    if (w->failed)
        return;
    w->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg, sizeof w->msg, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------- the file */

/* Hands the full buffer to dwrite; its first failure stops the file. */
static void submit(prs_bt *w)
{
    w->buf = (uint8_t *)prs_dw_submit(w->dw);
    w->nbuf = 0;
    int e = prs_dw_error(w->dw);
    if (e)
        fail(w, "write: %s", strerror(e));
}

static void append(prs_bt *w, const uint8_t *page)
{
    if (w->failed)
        return;
    if (page)
        memcpy(w->buf + w->nbuf, page, w->psz);
    else
        memset(w->buf + w->nbuf, 0, w->psz);
    w->nbuf += w->psz;
    if (w->nbuf == w->capbuf)
        submit(w);
}

/* The number the next put_page() gives (the lock-byte page skipped). */
static uint32_t next_pgno(prs_bt *w)
{
    if (w->next_pg == w->lock_pg) {
        append(w, NULL);
        w->next_pg++;
    }
    return w->next_pg;
}

/* The page number after pg for a chain written page after page. */
static uint32_t pg_after(const prs_bt *w, uint32_t pg)
{
    pg++;
    return pg == w->lock_pg ? pg + 1 : pg;
}

static uint32_t put_page(prs_bt *w, const uint8_t *page)
{
    uint32_t pg = next_pgno(w);
    append(w, page);
    w->next_pg++;
    return pg;
}

/* The lock byte's offset: SQLite's PENDING_BYTE (tests move both). Like
 * SQLite's own (a process-wide test control), it is the process's: the
 * pages must match the SQLite library linked in. */
static uint32_t pending_byte = 0x40000000u;
void prs_bt_pending_byte(uint32_t offset) { pending_byte = offset; }

/* Entries an index may hold in memory (~8 bytes per key column and rowid,
 * a byte per column): past that its entries are dropped and SQLite's
 * CREATE INDEX (an external sort) builds it, so memory stays bounded
 * however long the run. The bench's largest, counter(name, timestamp),
 * holds 675 k entries (17 MB). */
#define IX_MAX_BYTES (32LL << 20)

prs_bt *prs_bt_open(const char *path, int page_size)
{
    if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1))) {
        errno = EINVAL;
        return NULL;
    }
    prs_dw *dw = prs_dw_open_unstaged(path, PRS_DW_BUF);
    if (!dw)
        return NULL;
    prs_bt *w = calloc(1, sizeof *w);
    if (!w) {
        prs_dw_close(dw, 0);
        errno = ENOMEM;
        return NULL;
    }
    w->dw = dw;
    w->path = strdup(path);
    w->psz = (unsigned)page_size;
    w->next_pg = 1;
    w->lock_pg = pending_byte / w->psz + 1;
    w->ix_max_bytes = IX_MAX_BYTES;
    w->capbuf = PRS_DW_BUF; /* a multiple of every page size */
    w->buf = (uint8_t *)prs_dw_buf(dw);
    w->scratch = malloc(w->psz);
    w->page1 = calloc(1, w->psz);
    w->tail = &w->tabs;
    if (!w->path || !w->scratch || !w->page1) {
        prs_bt_free(w);
        unlink(path);
        errno = ENOMEM;
        return NULL;
    }
    put_page(w, NULL); /* page 1, written at the end */
    return w;
}

/* ------------------------------------------------------------ a b-tree */

static void tab_free(prs_bt_tab *t)
{
    free(t->name);
    free(t->aff);
    free(t->st);
    free(t->iv);
    free(t->page);
    free(t->leaves);
    free(t->big);
    free(t->hb);
    free(t->body);
    free(t);
}

prs_bt_tab *prs_bt_table(prs_bt *w, const char *name, int ncols, const char *aff, int ipk)
{
    if (ncols < 1)
        return NULL;
    prs_bt_tab *t = calloc(1, sizeof *t);
    if (!t) {
        fail(w, "table %s: out of memory", name);
        return NULL;
    }
    t->w = w;
    t->name = strdup(name);
    t->ncols = ncols;
    t->ipk = ipk;
    t->aff = malloc((size_t)ncols);
    t->st = malloc((size_t)ncols * sizeof *t->st);
    t->iv = malloc((size_t)ncols * sizeof *t->iv);
    t->hb = malloc((size_t)ncols * 9);
    t->bodycap = 8 * (size_t)ncols + 8 + 4096;
    t->body = malloc(t->bodycap);
    t->page = malloc(w->psz);
    t->content = w->psz;
    if (!t->name || !t->aff || !t->st || !t->iv || !t->hb || !t->body || !t->page) {
        fail(w, "table %s: out of memory", name);
        tab_free(t);
        return NULL;
    }
    memcpy(t->aff, aff, (size_t)ncols);
    *w->tail = t;
    w->tail = &t->next;
    return t;
}

/* Writes the current leaf (even empty) and notes it for the level above. */
static void flush_leaf(prs_bt_tab *t)
{
    prs_bt *w = t->w;
    uint8_t *p = t->page;
    unsigned ptrs = 8 + 2 * t->ncells;
    p[0] = 0x0d; /* table leaf */
    put16(p + 1, 0);
    put16(p + 3, t->ncells);
    put16(p + 5, t->content == 65536 ? 0 : t->content);
    p[7] = 0;
    memset(p + ptrs, 0, t->content - ptrs); /* no stale bytes in the file */
    uint32_t pg = put_page(w, p);
    if (t->nleaves == t->capleaves) {
        size_t cap = t->capleaves ? t->capleaves * 2 : 64;
        bt_child *nl = realloc(t->leaves, cap * sizeof *nl);
        if (!nl) {
            fail(w, "table %s: out of memory for its page list", t->name);
            t->ncells = 0;
            t->content = w->psz;
            return;
        }
        t->leaves = nl;
        t->capleaves = cap;
    }
    t->leaves[t->nleaves++] = (bt_child){pg, t->rowid};
    t->ncells = 0;
    t->content = w->psz;
}

/* An integral real SQLite turns into an integer (sqlite3VdbeIntegerAffinity). */
static inline int integral(double d, int64_t *out)
{
    if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
        return 0;
    int64_t ix = (int64_t)d;
    if ((double)ix != d)
        return 0;
    *out = ix;
    return 1;
}

/* The serial type SQLite gives integer ix in a column of affinity a, its
 * body bits in *bits and length in *len. A REAL column keeps an integer
 * (the value was integral) as an integer only while that takes at most 6
 * bytes, -2^47 <= ix < 2^47 (sqlite3VdbeSerialType on a MEM_IntReal);
 * one that would need 8 bytes is stored as the double (double)ix instead
 * (type 7), rounded as that conversion rounds. */
static inline uint32_t number_type(char a, int64_t ix, uint64_t *bits, uint32_t *len)
{
    uint32_t st = int_type(ix, len);
    if (st == 6 && a == PRS_AFF_REAL) {
        double d = (double)ix;
        memcpy(bits, &d, 8);
        return 7;
    }
    *bits = (uint64_t)ix;
    return st;
}

/* An integer's body, big-endian, in its len (1..8) bytes: written as 8
 * bytes (the value shifted to the top; gcc makes it one byte-swapped
 * store) of which the caller keeps len, so the buffer needs 8 bytes free. */
static inline void put_body(uint8_t *p, uint64_t x, uint32_t len)
{
    x <<= 64 - 8 * len;
    put32(p, (uint32_t)(x >> 32));
    put32(p + 4, (uint32_t)x);
}

/* The record: the header's size, the serial types (t->hb, hsum bytes),
 * the bodies (t->body, body bytes). */
static void encode(const prs_bt_tab *t, uint8_t *p, uint64_t hdr, uint64_t hsum, uint64_t body)
{
    p += put_varint(p, hdr);
    memcpy(p, t->hb, (size_t)hsum);
    memcpy(p + hsum, t->body, (size_t)body);
}

/* Writes payload bytes [local, P) of big as an overflow chain starting at
 * the next page number; returns that page number. */
static uint32_t write_overflow(prs_bt *w, const uint8_t *big, uint64_t local, uint64_t P)
{
    uint32_t first = next_pgno(w);
    uint8_t *pg = w->scratch;
    size_t per = w->psz - 4;
    for (uint64_t at = local; at < P;) {
        size_t n = P - at < per ? (size_t)(P - at) : per;
        uint32_t me = next_pgno(w);
        put32(pg, at + n < P ? pg_after(w, me) : 0);
        memcpy(pg + 4, big + at, n);
        memset(pg + 4 + n, 0, per - n);
        put_page(w, pg);
        at += n;
    }
    return first;
}

void prs_bt_index_budget(prs_bt *w, long long bytes) { w->ix_max_bytes = bytes; }

/* The row just written, as an entry of index ix (t->st / t->iv hold its
 * stored types and values). */
static void index_entry(bt_ix *ix, const prs_val *v, int64_t rowid)
{
    const prs_bt_tab *t = ix->tab;
    if (!ix->x)
        return;
    if (prs_btix_count(ix->x) * (8 * (ix->nkey + 1) + ix->nkey) >= t->w->ix_max_bytes) {
        prs_btix_free(ix->x);
        ix->x = NULL;
        ix->why = "more entries than its memory budget";
        return;
    }
    uint32_t st[PRS_BTIX_MAXKEY];
    uint64_t iv[PRS_BTIX_MAXKEY];
    const char *text[PRS_BTIX_MAXKEY];
    for (int k = 0; k < ix->nkey; k++) {
        int c = ix->cols[k];
        st[k] = t->st[c];
        iv[k] = t->iv[c];
        text[k] = st[k] >= 13 ? v[c].s : NULL;
    }
    prs_btix_add(ix->x, st, iv, text, rowid);
}

int prs_bt_index(prs_bt_tab *t, const char *name, int nkey, const int *cols)
{
    if (nkey < 1 || nkey > PRS_BTIX_MAXKEY || t->nrows || !t->page)
        return -1;
    for (int k = 0; k < nkey; k++)
        if (cols[k] < 0 || cols[k] >= t->ncols || cols[k] == t->ipk)
            return -1;
    bt_ix *ix = calloc(1, sizeof *ix);
    char *nm = strdup(name);
    prs_btix *x = prs_btix_new(nkey);
    if (!ix || !nm || !x) { /* the caller has SQLite build it */
        free(ix);
        free(nm);
        prs_btix_free(x);
        return -1;
    }
    ix->name = nm;
    ix->tab = t;
    ix->x = x;
    ix->nkey = nkey;
    memcpy(ix->cols, cols, (size_t)nkey * sizeof *cols);
    ix->why = "its table has not ended";
    bt_ix **end = &t->ixs;
    while (*end)
        end = &(*end)->next_of_tab;
    *end = ix;
    ix->next = t->w->ixs;
    t->w->ixs = ix;
    return 0;
}

static uint32_t ix_put_page(void *w, const uint8_t *page) { return put_page(w, page); }

/* Lays out the indexes of a table that has ended. */
static void write_indexes(prs_bt_tab *t)
{
    for (bt_ix *ix = t->ixs; ix; ix = ix->next_of_tab) {
        if (!ix->x)
            continue;
        if (prs_btix_write(ix->x, t->w->psz, ix_put_page, t->w, &ix->root, &ix->why) == 0)
            ix->why = NULL;
        else
            ix->root = 0;
        prs_btix_free(ix->x); /* its memory is not needed any more */
        ix->x = NULL;
    }
}

static bt_ix *find_ix(prs_bt *w, const char *name)
{
    for (bt_ix *ix = w->ixs; ix; ix = ix->next)
        if (strcmp(ix->name, name) == 0)
            return ix;
    return NULL;
}

const char *prs_bt_index_status(prs_bt *w, const char *name, uint32_t *root)
{
    bt_ix *ix = find_ix(w, name);
    *root = 0;
    if (!ix)
        return "no such index";
    if (prs_bt_table_end(ix->tab) != 0)
        return "the table was not written";
    *root = ix->root;
    return ix->why;
}

int prs_bt_row(prs_bt_tab *t, const prs_val *v, int as_is)
{
    prs_bt *w = t->w;
    if (w->failed || !t->page)
        return -1;
    if (t->nrows && t->rowid == INT64_MAX) { /* SQLite would pick a random free rowid */
        fail(w, "table %s: no rowid after %lld", t->name, (long long)t->rowid);
        return -1;
    }
    int64_t rowid = t->nrows ? t->rowid + 1 : 1;
    /* The record is built while the columns are typed: serial types into
     * t->hb, bodies into t->body; the cell then takes both with two copies
     * (one pass over the columns, not a second one to encode them). The
     * body buffer always keeps 8 bytes per column still to come + 8 free,
     * for put_body's 8-byte stores; texts grow it first. */
    uint64_t hsum = 0, body = 0;
    /* Locals: t->st[i] (uint32_t) could alias t->ncols / t->ipk (int) and
     * would make the compiler reload them every column. */
    const char *aff = t->aff;
    uint32_t *sts = t->st;
    uint64_t *ivs = t->iv;
    uint8_t *hb = t->hb, *bd = t->body;
    const int ncols = t->ncols, ipk = t->ipk;
    for (int i = 0; i < ncols; i++) {
        const prs_val *x = &v[i];
        char a = aff[i];
        uint32_t st = 0, len = 0;
        int64_t ix;
        if (i == ipk) {
            /* The rowid itself: NULL in the record. */
            if (x->kind == PRS_INT) {
                ix = x->i;
            } else if ((x->kind == PRS_REAL || x->kind == PRS_MS) && integral(x->d, &ix)) {
            } else if (x->kind == PRS_NULL) {
                ix = rowid;
            } else if (!as_is) {
                return 1;
            } else {
                fail(w, "table %s: a non-integer value for its INTEGER PRIMARY KEY", t->name);
                return -1;
            }
            if (t->nrows && ix <= t->rowid) {
                fail(w, "table %s: rowid %lld after %lld (rows must come in rowid order)", t->name,
                     (long long)ix, (long long)t->rowid);
                return -1;
            }
            rowid = ix;
        } else {
            switch (x->kind) {
            case PRS_INT:
                if (a == PRS_AFF_TEXT && !as_is)
                    return 1;
                st = number_type(a, x->i, &ivs[i], &len);
                if (len)
                    put_body(bd + body, ivs[i], len);
                break;
            case PRS_REAL:
            case PRS_MS:
                if (a == PRS_AFF_TEXT && !as_is)
                    return 1;
                if (x->d != x->d) {
                    break; /* NaN: NULL, as sqlite3_bind_double stores it */
                } else if (a >= PRS_AFF_NUMERIC && integral(x->d, &ix)) {
                    st = number_type(a, ix, &ivs[i], &len);
                } else {
                    st = 7;
                    len = 8;
                    memcpy(&ivs[i], &x->d, 8);
                }
                if (len)
                    put_body(bd + body, ivs[i], len);
                break;
            case PRS_TEXT:
                if (a >= PRS_AFF_NUMERIC && !as_is)
                    return 1;
                len = (uint32_t)x->n;
                st = 2 * len + 13;
                if (body + len > 0x7fffffff) {
                    fail(w, "table %s: a row of more than %llu bytes", t->name, (unsigned long long)(body + len));
                    return -1;
                }
                if (body + len + 8 * (size_t)ncols + 8 > t->bodycap) {
                    size_t cap = 2 * ((size_t)body + len + 8 * (size_t)ncols + 8);
                    uint8_t *nb = realloc(t->body, cap);
                    if (!nb) {
                        fail(w, "table %s: out of memory for a row", t->name);
                        return -1;
                    }
                    t->body = bd = nb;
                    t->bodycap = cap;
                }
                memcpy(bd + body, x->s, len);
                break;
            default:
                break;
            }
        }
        sts[i] = st;
        if (st < 0x80)
            hb[hsum++] = (uint8_t)st;
        else
            hsum += (uint64_t)put_varint(hb + hsum, st);
        body += len;
    }
    uint64_t hdr = hsum + 1;
    while ((uint64_t)varint_len(hdr) > hdr - hsum)
        hdr++;
    uint64_t P = hdr + body;
    if (P > 0x7fffffff) {
        fail(w, "table %s: a row of %llu bytes", t->name, (unsigned long long)P);
        return -1;
    }
    /* The local part: the format's rule for table leaves (U = page size). */
    uint64_t U = w->psz, X = U - 35, local = P;
    if (P > X) {
        uint64_t M = ((U - 12) * 32 / 255) - 23;
        uint64_t K = M + ((P - M) % (U - 4));
        local = K <= X ? K : M;
    }
    unsigned cell = (unsigned)(varint_len(P) + varint_len((uint64_t)rowid) + local + (local < P ? 4 : 0));
    unsigned used = 8 + 2 * t->ncells + (t->ncells ? t->reserve : 0);
    if (used + cell + 2 > t->content) { /* (the first cell of a leaf always fits: local <= U - 35) */
        flush_leaf(t);
        if (w->failed)
            return -1;
    }
    uint32_t ovfl = 0;
    if (local < P) {
        if (t->bigcap < P) {
            free(t->big);
            t->bigcap = (size_t)P * 2;
            t->big = malloc(t->bigcap);
            if (!t->big) {
                t->bigcap = 0;
                fail(w, "table %s: out of memory for a row of %llu bytes", t->name, (unsigned long long)P);
                return -1;
            }
        }
        encode(t, t->big, hdr, hsum, body);
        ovfl = write_overflow(w, t->big, local, P);
    }
    t->content -= cell;
    uint8_t *p = t->page + t->content;
    p += put_varint(p, P);
    p += put_varint(p, (uint64_t)rowid);
    if (local == P) {
        encode(t, p, hdr, hsum, body);
    } else {
        memcpy(p, t->big, (size_t)local);
        put32(p + local, ovfl);
    }
    put16(t->page + 8 + 2 * t->ncells, t->content);
    t->ncells++;
    t->rowid = rowid;
    t->nrows++;
    for (bt_ix *ix = t->ixs; ix; ix = ix->next_of_tab)
        index_entry(ix, v, rowid);
    return w->failed ? -1 : 0;
}

/* An interior table page at offset off of page: children c[0..m-1] (m >= 2),
 * the last one the right-most pointer. */
static void write_interior(const prs_bt *w, uint8_t *page, unsigned off, const bt_child *c, size_t m)
{
    unsigned content = w->psz;
    uint8_t *h = page + off;
    h[0] = 0x05;
    put16(h + 1, 0);
    put16(h + 3, (unsigned)(m - 1));
    h[7] = 0;
    put32(h + 8, c[m - 1].pg);
    for (size_t i = 0; i + 1 < m; i++) {
        uint8_t cellb[13];
        put32(cellb, c[i].pg);
        unsigned n = 4 + (unsigned)put_varint(cellb + 4, (uint64_t)c[i].key);
        content -= n;
        memcpy(page + content, cellb, n);
        put16(h + 12 + 2 * i, content);
    }
    put16(h + 5, content == 65536 ? 0 : content);
    unsigned ptrs = off + 12 + 2 * (unsigned)(m - 1);
    memset(page + ptrs, 0, content - ptrs);
}

/* Builds the levels above c[0..n-1] (n >= 1); returns the root page. With
 * root1 the root is written into page1. c is reused. */
static uint32_t build_levels(prs_bt *w, bt_child *c, size_t n, int root1)
{
    for (;;) {
        if (!root1 && n == 1)
            return c[0].pg;
        int kl = 1;
        for (size_t i = 0; i < n; i++)
            if (varint_len((uint64_t)c[i].key) > kl)
                kl = varint_len((uint64_t)c[i].key);
        size_t per = 6 + (size_t)kl; /* pointer + 4-byte child + varint key */
        size_t cap = (w->psz - 12) / per + 1;
        if (root1 && n <= (w->psz - 112) / per + 1) {
            write_interior(w, w->page1, 100, c, n);
            return 1;
        }
        size_t k = (n + cap - 1) / cap;
        if (root1 && k < 2)
            k = 2;
        size_t at = 0;
        for (size_t j = 0; j < k; j++) {
            size_t m = n / k + (j < n % k);
            write_interior(w, w->scratch, 0, c + at, m);
            int64_t key = c[at + m - 1].key;
            uint32_t pg = put_page(w, w->scratch);
            c[j] = (bt_child){pg, key};
            at += m;
        }
        n = k;
    }
}

int prs_bt_table_end(prs_bt_tab *t)
{
    if (t->root)
        return 0;
    if (t->w->failed || !t->page)
        return -1;
    if (t->ncells || !t->nleaves)
        flush_leaf(t);
    t->root = build_levels(t->w, t->leaves, t->nleaves, 0);
    write_indexes(t);
    free(t->page);
    t->page = NULL;
    free(t->leaves);
    t->leaves = NULL;
    free(t->big);
    t->big = NULL;
    free(t->hb);
    t->hb = NULL;
    free(t->body);
    t->body = NULL;
    return t->w->failed ? -1 : 0;
}

/* ----------------------------------------------------------- page 1 */

static void file_header(prs_bt *w, uint8_t *h)
{
    memcpy(h, "SQLite format 3", 16);
    put16(h + 16, w->psz == 65536 ? 1 : w->psz);
    h[18] = 1; /* file format write / read: legacy (rollback journal) */
    h[19] = 1;
    h[20] = 0; /* reserved bytes per page */
    h[21] = 64; /* payload fractions: fixed by the format */
    h[22] = 32;
    h[23] = 32;
    put32(h + 24, 1);               /* file change counter */
    put32(h + 28, w->next_pg - 1);  /* pages in the file */
    put32(h + 32, 0);               /* freelist */
    put32(h + 36, 0);
    put32(h + 40, 1);               /* schema cookie */
    put32(h + 44, 4);               /* schema format 4: serial types 8, 9 */
    put32(h + 48, 0);               /* default cache size */
    put32(h + 52, 0);               /* no auto-vacuum */
    put32(h + 56, 1);               /* UTF-8 */
    put32(h + 60, 0);               /* user version */
    put32(h + 64, 0);
    put32(h + 68, 0);               /* application id */
    memset(h + 72, 0, 20);
    put32(h + 92, 1);               /* version-valid-for = change counter */
    put32(h + 96, (uint32_t)sqlite3_libversion_number());
}

static prs_bt_tab *find_tab(prs_bt *w, const char *name)
{
    for (prs_bt_tab *t = w->tabs; t; t = t->next)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

/* sqlite_schema's rows into a tree whose root is page 1. */
static int write_schema(prs_bt *w, const prs_bt_schema *rows, int n)
{
    static const char aff[5] = {PRS_AFF_TEXT, PRS_AFF_TEXT, PRS_AFF_TEXT, PRS_AFF_INTEGER, PRS_AFF_TEXT};
    prs_bt_tab *s = prs_bt_table(w, "sqlite_schema", 5, aff, -1);
    if (!s)
        return -1;
    s->reserve = 100;
    for (int i = 0; i < n; i++) {
        long long root = 0;
        if (strcmp(rows[i].type, "table") == 0) {
            prs_bt_tab *t = find_tab(w, rows[i].name);
            if (!t)
                t = prs_bt_table(w, rows[i].name, 1, "A", -1);
            if (!t || prs_bt_table_end(t) != 0)
                return -1;
            root = t->root;
        } else if (strcmp(rows[i].type, "index") == 0) {
            bt_ix *ix = find_ix(w, rows[i].name);
            if (ix)
                prs_bt_table_end(ix->tab);
            if (!ix || !ix->root) {
                fail(w, "index %s: %s", rows[i].name, ix ? ix->why : "not written by this writer");
                return -1;
            }
            root = ix->root;
        }
        prs_val v[5] = {prs_v_text(rows[i].type, -1), prs_v_text(rows[i].name, -1),
                        prs_v_text(rows[i].tbl_name, -1), prs_v_int(root), prs_v_text(rows[i].sql, -1)};
        if (prs_bt_row(s, v, 1) != 0)
            return -1;
    }
    if (!s->nleaves && 100 + 8 + 2 * s->ncells <= s->content) {
        /* All in page 1: the leaf's header and pointers move after the file
         * header; the cells (at the page end) stay where they are. */
        uint8_t *p = w->page1;
        memcpy(p + s->content, s->page + s->content, w->psz - s->content);
        p[100] = 0x0d;
        put16(p + 101, 0);
        put16(p + 103, s->ncells);
        put16(p + 105, s->content == 65536 ? 0 : s->content);
        p[107] = 0;
        memcpy(p + 108, s->page + 8, 2 * s->ncells);
        memset(p + 108 + 2 * s->ncells, 0, s->content - (108 + 2 * s->ncells));
        s->root = 1;
        return 0;
    }
    /* More than page 1 holds: leaves elsewhere, page 1 the interior root.
     * One leaf (a row bigger than page 1's room) gives a root with no cell,
     * only its right-most pointer, as SQLite's balance_deeper() makes. */
    if (s->ncells)
        flush_leaf(s);
    s->root = build_levels(w, s->leaves, s->nleaves, 1);
    return w->failed ? -1 : 0;
}

int prs_bt_finish(prs_bt *w, const prs_bt_schema *rows, int n)
{
    if (w->failed || !w->dw)
        return -1;
    for (prs_bt_tab *t = w->tabs; t; t = t->next)
        if (prs_bt_table_end(t) != 0)
            return -1;
    if (write_schema(w, rows, n) != 0)
        return -1;
    int e = prs_dw_close(w->dw, w->failed ? 0 : w->nbuf);
    w->dw = NULL;
    w->buf = NULL;
    if (e)
        fail(w, "write: %s", strerror(e));
    if (w->failed)
        return -1;
    /* Page 1 last: until then the file has no header and is no database. */
    file_header(w, w->page1);
    int fd = open(w->path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        fail(w, "open for page 1: %s", strerror(errno));
        return -1;
    }
    ssize_t k = pwrite(fd, w->page1, w->psz, 0);
    if (k != (ssize_t)w->psz)
        fail(w, "write: %s", strerror(k < 0 ? errno : EIO));
    if (close(fd) != 0)
        fail(w, "close: %s", strerror(errno));
    return w->failed ? -1 : 0;
}

const char *prs_bt_error(const prs_bt *w) { return w->failed ? w->msg : ""; }

void prs_bt_abort(prs_bt *w, int remove)
{
    fail(w, "aborted");
    if (w->dw) {
        prs_dw_close(w->dw, 0);
        w->dw = NULL;
        w->buf = NULL;
    }
    if (remove)
        unlink(w->path);
}

void prs_bt_free(prs_bt *w)
{
    if (!w)
        return;
    for (bt_ix *ix = w->ixs, *nx; ix; ix = nx) {
        nx = ix->next;
        free(ix->name);
        prs_btix_free(ix->x);
        free(ix);
    }
    if (w->dw)
        prs_dw_close(w->dw, 0);
    for (prs_bt_tab *t = w->tabs, *nx; t; t = nx) {
        nx = t->next;
        tab_free(t);
    }
    free(w->path);
    free(w->scratch);
    free(w->page1);
    free(w);
}
