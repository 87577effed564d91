/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rawscan.c — reads the `slice` table of a raw store from its b-tree pages.
 *
 * Why: stepping `SELECT timestamp, duration, name, cat, args, pid, tid FROM
 * slice` costs SQLite's VDBE, cursor, page cache and one column call per
 * value for every row, the largest single item of a parse. The table is
 * read once, front to back, so a plain walk of the table b-tree in key
 * (rowid) order does the same job for a fraction of that (figures:
 * docs/benchmarks.md, "Figures behind design comments").
 *
 * Format (https://www.sqlite.org/fileformat2.html): table b-tree interior
 * pages (0x05) hold child page numbers, leaves (0x0D) hold cells [payload
 * size varint][rowid varint][local payload][first overflow page] whose
 * payload is a record: a header of serial types, then the values. A
 * payload longer than U-35 bytes (U = page size - reserved bytes) keeps a
 * prefix on the leaf and the rest on a chain of overflow pages.
 *
 * Consistency: SQLite opens the store and holds its read transaction while
 * we read (storeread.c); we read only when the database FILE is that snapshot
 * (no WAL frames), through SQLite's own file handle (readvfs.c), so nothing
 * here takes or drops a lock.
 *
 * What is read here and what is not: values of the usual types (integers or
 * NULL for the numbers, text or NULL for the strings) are decoded here;
 * anything else — a REAL timestamp, an INTEGER name, a BLOB, a malformed
 * record — ends the scan with PRS_RAW_HANDOFF at that rowid and SQLite
 * reads the rest, so its conversions are never reimplemented. A damaged
 * page (bad type, cell out of the page, page number beyond the file, rowids
 * not increasing: a loop) ends it with PRS_RAW_CORRUPT and a message. Every
 * access is bounds-checked against the page; the work is bounded by the
 * page count (each page is entered at most once, rowids strictly increase).
 *
 * I/O and memory: leaves of a store written in order are mostly
 * contiguous, so leaves and overflow pages are read through one chunk per
 * store (one pread of up to 128 KiB: measured a little faster than 256 KiB
 * or 1 MiB, the rows being parsed while the copy is still in the CPU's L2
 * cache); the chunk shrinks (to 32 KiB) when more than 256 scans are open
 * at once, so that a merge of a thousand stores stays within CHUNK_BUDGET.
 * Interior pages are read alone and copied (one per level). No mmap: a
 * file truncated under a mapping would mean SIGBUS.
 *
 * Strings are handed out in place: name and cat are copied (short), args
 * is NUL-terminated in the buffer it lies in by overwriting the byte after
 * it, which is put back at the next call.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "bigendian.h"
#include "affinity.h"
#include "rawscan.h"
#include "readvfs.h"

#define MAX_DEPTH 20                /* SQLite's own limit (BTCURSOR_MAX_DEPTH) */
#define CHUNK_MIN (32u << 10)
#define CHUNK_MAX (128u << 10)
#define CHUNK_BUDGET (32u << 20)    /* all open scans' chunks together */
#define PENDING_BYTE 0x40000000u    /* the lock-byte page holds this offset */

enum { C_TS, C_DUR, C_NAME, C_CAT, C_ARGS, C_PID, C_TID, NCOL };
static const char *const col_names[NCOL] = {"timestamp", "duration", "name", "cat", "args", "pid", "tid"};

typedef struct level {
    unsigned char *page; /* a copy of the interior page (psz + 1 bytes) */
    int hdr;             /* 100 on page 1, else 0 */
    int ncells, idx;     /* idx: the child being walked, ncells = the right child */
} level;

struct prs_rawscan {
    atomic_int *nopen;    /* scans open now in this parse (its context's count; not owned) */
    sqlite3_file *f;      /* SQLite's file: read only, never locked or closed here */
    uint32_t psz, usable; /* page size, usable bytes per page (U) */
    uint32_t npages, lockpg, root;
    uint32_t maxlocal, minlocal; /* X = U-35 and M of the overflow rule */
    signed char *want;    /* record field i -> C_* or -1 */
    int nfields;          /* fields up to the last one wanted */

    unsigned char *chunk; /* pages cfirst .. cfirst+cn-1 (+1 spare byte) */
    size_t ccap;
    uint32_t cfirst, cn;

    level lv[MAX_DEPTH];
    int depth;            /* interior levels above the current leaf */
    int leaf_depth;       /* depth leaves were found at (-1: not yet): their I/O path */
    unsigned char *leaf;  /* the current leaf: in chunk, leafbuf or an lv page */
    int leaf_in_chunk;    /* it lies in the chunk (moved to leafbuf before a refill) */
    unsigned char *leafbuf;
    int lhdr, ncell, icell;
    int started;

    unsigned char *ov;    /* a payload put together from its overflow pages */
    size_t ovcap;
    char *str;            /* copies of name and cat */
    size_t strcap;
    unsigned char *patch; /* the byte overwritten by args' NUL, and its value */
    unsigned char saved;

    int64_t last_rowid;
    int have_last;
    uint64_t visited;     /* b-tree pages entered: at most npages */
    int state;            /* sticky END / CORRUPT, 0 while scanning */
    char err[200];
};

/* A varint at p, not reading at or past end; bytes used, 0 if cut off. */
static int varint_slow(const unsigned char *p, const unsigned char *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) {
        if (p + i >= end)
            return 0;
        x = x << 7 | (p[i] & 0x7f);
        if (!(p[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    if (p + 8 >= end)
        return 0;
    *v = x << 8 | p[8];
    return 9;
}

/* Serial types and sizes are mostly one byte. */
static inline int varint(const unsigned char *p, const unsigned char *end, uint64_t *v)
{
    if (p < end && *p < 0x80) {
        *v = *p;
        return 1;
    }
    return varint_slow(p, end, v);
}

static int bad(prs_rawscan *rs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(prs_rawscan *rs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rs->err, sizeof rs->err, fmt, ap);
    va_end(ap);
    rs->state = PRS_RAW_CORRUPT;
    return PRS_RAW_CORRUPT;
}

static int handoff(prs_rawscan *rs, prs_rawrow *row, int64_t rowid, const char *why, int col)
{
    snprintf(rs->err, sizeof rs->err, "%s%s%s", col >= 0 ? col_names[col] : "", col >= 0 ? " " : "", why);
    row->rowid = rowid;
    rs->state = PRS_RAW_HANDOFF;
    return PRS_RAW_HANDOFF;
}

static int pgno_ok(prs_rawscan *rs, uint32_t pgno, const char *what)
{
    if (pgno == 0 || pgno > rs->npages)
        return bad(rs, "%s page %u is beyond the file (%u pages)", what, pgno, rs->npages) == 0;
    if (pgno == rs->lockpg)
        return bad(rs, "%s page %u is the lock-byte page", what, pgno) == 0;
    return 1;
}

static int rd(prs_rawscan *rs, unsigned char *dst, uint32_t pgno, uint32_t n)
{
    int rc = rs->f->pMethods->xRead(rs->f, dst, (int)(n * rs->psz), (sqlite3_int64)(pgno - 1) * rs->psz);
    if (rc != SQLITE_OK)
        return bad(rs, "read error (%s) at page %u", sqlite3_errstr(rc), pgno) == 0;
    return 1;
}

static size_t chunk_target(const prs_rawscan *rs)
{
    int open = atomic_load_explicit(rs->nopen, memory_order_relaxed); /* readers.c: other threads */
    size_t t = CHUNK_BUDGET / (size_t)(open > 0 ? open : 1);
    t = t < CHUNK_MIN ? CHUNK_MIN : t > CHUNK_MAX ? CHUNK_MAX : t;
    return t < rs->psz ? rs->psz : t - t % rs->psz;
}

/* Page pgno through the chunk, reading from pgno on when it is not there.
 * Pointers into the chunk are invalid afterwards. */
static unsigned char *chunk_page(prs_rawscan *rs, uint32_t pgno)
{
    if (pgno - rs->cfirst < rs->cn)
        return rs->chunk + (size_t)(pgno - rs->cfirst) * rs->psz;
    size_t want = chunk_target(rs);
    if (want > (size_t)rs->npages * rs->psz) /* a small store: no more than the file */
        want = (size_t)rs->npages * rs->psz;
    if (want != rs->ccap) {
        free(rs->chunk);
        rs->chunk = malloc(want + 1);
        rs->ccap = rs->chunk ? want : 0;
        if (!rs->chunk) {
            bad(rs, "out of memory");
            return NULL;
        }
    }
    uint32_t n = (uint32_t)(rs->ccap / rs->psz);
    if (n > rs->npages - pgno + 1)
        n = rs->npages - pgno + 1;
    rs->cn = 0;
    if (!rd(rs, rs->chunk, pgno, n))
        return NULL;
    rs->cfirst = pgno;
    rs->cn = n;
    return rs->chunk;
}

static int in_chunk(const prs_rawscan *rs, uint32_t pgno) { return pgno - rs->cfirst < rs->cn; }

/* Child i of interior level L (i == ncells: the right child); 0 if bad. */
static uint32_t child(prs_rawscan *rs, const level *L)
{
    const unsigned char *pg = L->page;
    if (L->idx == L->ncells)
        return be32(pg + L->hdr + 8);
    uint32_t ptr = be16(pg + L->hdr + 12 + 2 * L->idx);
    if (ptr < (uint32_t)(L->hdr + 12 + 2 * L->ncells) || ptr + 4 > rs->usable) {
        bad(rs, "interior page: cell pointer %u out of range", ptr);
        return 0;
    }
    return be32(pg + ptr);
}

/* From page pgno down to the leftmost leaf under it. */
static int descend(prs_rawscan *rs, uint32_t pgno)
{
    for (;;) {
        if (!pgno_ok(rs, pgno, "b-tree"))
            return PRS_RAW_CORRUPT;
        if (++rs->visited > rs->npages)
            return bad(rs, "more b-tree pages than the file has (a loop)");
        if (rs->depth >= MAX_DEPTH)
            return bad(rs, "b-tree deeper than %d levels", MAX_DEPTH);
        level *L = &rs->lv[rs->depth];
        if (!L->page && !(L->page = malloc(rs->psz + 1)))
            return bad(rs, "out of memory");
        int hdr = pgno == 1 ? 100 : 0;
        unsigned char *pg;
        if (in_chunk(rs, pgno) || rs->depth == rs->leaf_depth) {
            if (!(pg = chunk_page(rs, pgno)))
                return PRS_RAW_CORRUPT;
        } else { /* most likely an interior page: read it alone */
            if (!rd(rs, L->page, pgno, 1))
                return PRS_RAW_CORRUPT;
            pg = L->page;
        }
        unsigned type = pg[hdr];
        if (type == 0x0D) {
            uint32_t n = be16(pg + hdr + 3);
            if ((uint32_t)hdr + 8 + 2 * n > rs->usable)
                return bad(rs, "leaf page %u: %u cells do not fit", pgno, n);
            rs->leaf = pg;
            rs->leaf_in_chunk = pg != L->page;
            rs->lhdr = hdr;
            rs->ncell = (int)n;
            rs->icell = 0;
            rs->leaf_depth = rs->depth;
            return PRS_RAW_ROW;
        }
        if (type != 0x05)
            return bad(rs, "page %u is not a table b-tree page (type %u)", pgno, type);
        if (pg != L->page)
            memcpy(L->page, pg, rs->psz);
        L->hdr = hdr;
        L->ncells = (int)be16(pg + hdr + 3);
        L->idx = 0;
        if ((uint32_t)hdr + 12 + 2 * (uint32_t)L->ncells > rs->usable)
            return bad(rs, "interior page %u: %d cells do not fit", pgno, L->ncells);
        rs->depth++;
        if (!(pgno = child(rs, L)))
            return PRS_RAW_CORRUPT;
    }
}

/* The next leaf in key order; PRS_RAW_END after the last. */
static int next_leaf(prs_rawscan *rs)
{
    rs->leaf = NULL;
    if (!rs->started) {
        rs->started = 1;
        return descend(rs, rs->root);
    }
    while (rs->depth > 0) {
        level *L = &rs->lv[rs->depth - 1];
        if (++L->idx <= L->ncells) {
            uint32_t c = child(rs, L);
            return c ? descend(rs, c) : PRS_RAW_CORRUPT;
        }
        rs->depth--;
    }
    rs->state = PRS_RAW_END;
    return PRS_RAW_END;
}

/* The whole payload into rs->ov: the local part, then the overflow chain. */
static const unsigned char *assemble(prs_rawscan *rs, const unsigned char *local, uint32_t nlocal, uint64_t plen,
                                     uint32_t pgno)
{
    if (plen + 1 > rs->ovcap) {
        free(rs->ov);
        rs->ovcap = (size_t)plen + 1 > rs->ovcap * 2 ? (size_t)plen + 1 : rs->ovcap * 2;
        if (!(rs->ov = malloc(rs->ovcap))) {
            rs->ovcap = 0;
            bad(rs, "out of memory for a %llu-byte row", (unsigned long long)plen);
            return NULL;
        }
    }
    memcpy(rs->ov, local, nlocal);
    size_t got = nlocal;
    while (got < plen) {
        if (!pgno_ok(rs, pgno, "overflow"))
            return NULL;
        if (!in_chunk(rs, pgno) && rs->leaf_in_chunk) {
            memcpy(rs->leafbuf, rs->leaf, rs->psz); /* keep the leaf: the chunk moves on */
            rs->leaf = rs->leafbuf;
            rs->leaf_in_chunk = 0;
        }
        const unsigned char *op = chunk_page(rs, pgno);
        if (!op)
            return NULL;
        size_t take = rs->usable - 4;
        if (take > plen - got)
            take = (size_t)(plen - got);
        memcpy(rs->ov + got, op + 4, take);
        got += take;
        pgno = be32(op);
    }
    return rs->ov;
}

/* Decodes the wanted fields of a record into row; HANDOFF on anything
 * unusual. */
static int put_strings(prs_rawscan *rs, prs_rawrow *row, unsigned char *const s[NCOL], const uint32_t slen[NCOL]);

static int record(prs_rawscan *rs, prs_rawrow *row, unsigned char *buf, uint64_t len)
{
    const unsigned char *end = buf + len;
    uint64_t hsz;
    int n = varint(buf, end, &hsz);
    if (!n || hsz < (uint64_t)n || hsz > len)
        return handoff(rs, row, row->rowid, "malformed record header", -1);
    const unsigned char *h = buf + n, *hend = buf + hsz;
    unsigned char *body = buf + hsz;
    uint64_t blen = len - hsz, off = 0;
    unsigned char *s[NCOL] = {0};
    uint32_t slen[NCOL] = {0};
    row->ts = row->dur = 0;
    row->pid = row->tid = 0;
    for (int i = 0; i < rs->nfields && h < hend; i++) {
        uint64_t st = *h;
        if (st < 0x80) { /* nearly always: a one-byte serial type */
            h++;
        } else {
            if (!(n = varint_slow(h, hend, &st)))
                return handoff(rs, row, row->rowid, "malformed record header", -1);
            h += n;
        }
        static const unsigned char isz[10] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
        uint64_t sz = st < 10 ? isz[st] : st < 12 ? 0 : (st - 12) / 2;
        if (sz > blen - off)
            return handoff(rs, row, row->rowid, "record shorter than its header", -1);
        int c = rs->want[i];
        if (c >= 0) {
            unsigned char *v = body + off;
            if (c == C_NAME || c == C_CAT || c == C_ARGS) {
                if (st >= 13 && (st & 1) && sz <= INT32_MAX) {
                    s[c] = v;
                    slen[c] = (uint32_t)sz;
                } else if (st != 0) {
                    return handoff(rs, row, row->rowid, "is not text", c);
                }
            } else {
                int64_t x;
                switch (st) {
                case 0: case 8: x = 0; break;
                case 9: x = 1; break;
                case 1: x = (int8_t)v[0]; break;
                case 2: x = (int16_t)(v[0] << 8 | v[1]); break;
                case 3: x = (int32_t)((uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8) >> 8; break;
                case 4: x = (int32_t)be32(v); break;
                case 5: x = (int64_t)((uint64_t)be16(v) << 48 | (uint64_t)be32(v + 2) << 16) >> 16; break;
                case 6: x = (int64_t)((uint64_t)be32(v) << 32 | be32(v + 4)); break;
                default: return handoff(rs, row, row->rowid, "is not an integer", c);
                }
                switch (c) {
                case C_TS: row->ts = x; break;
                case C_DUR: row->dur = x; break;
                case C_PID: row->pid = x; break;
                default: row->tid = x; break;
                }
            }
        }
        off += sz;
    }
    return put_strings(rs, row, s, slen);
}

/* name and cat copied, args NUL-terminated where it lies (the byte after
 * it is put back by the next prs_rawscan_next); NULL ones: "", "", "{}". */
static int put_strings(prs_rawscan *rs, prs_rawrow *row, unsigned char *const s[NCOL], const uint32_t slen[NCOL])
{
    size_t need = (size_t)slen[C_NAME] + slen[C_CAT] + 2;
    if (need > rs->strcap) {
        free(rs->str);
        rs->strcap = need > 256 ? need * 2 : 256;
        if (!(rs->str = malloc(rs->strcap))) {
            rs->strcap = 0;
            return bad(rs, "out of memory");
        }
    }
    char *o = rs->str;
    row->name = o;
    if (s[C_NAME])
        memcpy(o, s[C_NAME], slen[C_NAME]);
    o[slen[C_NAME]] = 0;
    o += slen[C_NAME] + 1;
    row->cat = o;
    if (s[C_CAT])
        memcpy(o, s[C_CAT], slen[C_CAT]);
    o[slen[C_CAT]] = 0;
    if (s[C_ARGS]) {
        rs->patch = s[C_ARGS] + slen[C_ARGS];
        rs->saved = *rs->patch;
        *rs->patch = 0;
        row->args = (const char *)s[C_ARGS];
        row->args_len = (int)slen[C_ARGS];
    } else {
        row->args = "{}";
        row->args_len = 2;
    }
    return PRS_RAW_ROW;
}

/* The cell icell of the current leaf. */
static int cell(prs_rawscan *rs, prs_rawrow *row)
{
    unsigned char *pg = rs->leaf, *end = pg + rs->usable;
    uint32_t ptr = be16(pg + rs->lhdr + 8 + 2 * rs->icell);
    rs->icell++;
    if (ptr < (uint32_t)rs->lhdr + 8 + 2 * (uint32_t)rs->ncell || ptr >= rs->usable)
        return bad(rs, "leaf cell pointer %u out of range", ptr);
    unsigned char *p = pg + ptr;
    uint64_t plen, key;
    int n = varint(p, end, &plen);
    int m = n ? varint(p + n, end, &key) : 0;
    if (!m)
        return bad(rs, "leaf cell at %u cut off", ptr);
    p += n + m;
    int64_t rowid = (int64_t)key;
    if (rs->have_last && rowid <= rs->last_rowid)
        return bad(rs, "rowid %lld after %lld (a loop or a damaged page)", (long long)rowid,
                   (long long)rs->last_rowid);
    rs->last_rowid = rowid;
    rs->have_last = 1;
    row->rowid = rowid;
    if (plen <= rs->maxlocal) {
        if (plen > (uint64_t)(end - p))
            return bad(rs, "leaf cell at %u runs past the page", ptr);
        return record(rs, row, p, plen);
    }
    if (plen > (uint64_t)rs->npages * rs->usable)
        return bad(rs, "row of %llu bytes in a smaller file", (unsigned long long)plen);
    uint32_t local = rs->minlocal + (uint32_t)((plen - rs->minlocal) % (rs->usable - 4));
    if (local > rs->maxlocal)
        local = rs->minlocal;
    if ((uint64_t)local + 4 > (uint64_t)(end - p))
        return bad(rs, "leaf cell at %u runs past the page", ptr);
    const unsigned char *buf = assemble(rs, p, local, plen, be32(p + local));
    if (!buf)
        return PRS_RAW_CORRUPT;
    return record(rs, row, rs->ov, plen);
}

int prs_rawscan_next(prs_rawscan *rs, prs_rawrow *row)
{
    if (rs->patch) {
        *rs->patch = rs->saved;
        rs->patch = NULL;
    }
    if (rs->state)
        return rs->state;
    for (;;) {
        if (rs->leaf && rs->icell < rs->ncell)
            return cell(rs, row);
        int rc = next_leaf(rs);
        if (rc != PRS_RAW_ROW)
            return rc;
    }
}

const char *prs_rawscan_error(const prs_rawscan *rs) { return rs->err; }

void prs_rawscan_close(prs_rawscan *rs)
{
    if (!rs)
        return;
    atomic_fetch_sub_explicit(rs->nopen, 1, memory_order_relaxed);
    for (int i = 0; i < MAX_DEPTH; i++)
        free(rs->lv[i].page);
    free(rs->chunk);
    free(rs->leafbuf);
    free(rs->ov);
    free(rs->str);
    free(rs->want);
    free(rs);
}

/* ------------------------------------------------------------------ open */

/* Maps the needed columns to record fields (PRAGMA table_xinfo). */
static const char *map_columns(prs_rawscan *rs, sqlite3 *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT cid, name, type, dflt_value IS NOT NULL, pk, hidden "
                               "FROM pragma_table_xinfo('slice')", -1, &st, NULL) != SQLITE_OK)
        return "its columns could not be listed";
    int cid_of[NCOL];
    for (int c = 0; c < NCOL; c++)
        cid_of[c] = -1;
    const char *why = NULL;
    int ncols = 0;
    while (!why && sqlite3_step(st) == SQLITE_ROW) {
        int cid = sqlite3_column_int(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        const char *type = (const char *)sqlite3_column_text(st, 2);
        ncols++;
        if (cid != ncols - 1 || sqlite3_column_int(st, 5) != 0)
            why = "it has hidden or generated columns";
        else if (!name)
            why = "a column without a name";
        else if (!strcasecmp(name, "rowid") || !strcasecmp(name, "_rowid_") || !strcasecmp(name, "oid"))
            why = "a column is named like the rowid";
        for (int c = 0; !why && c < NCOL; c++) {
            if (strcasecmp(name, col_names[c]) != 0)
                continue;
            char a = prs_affinity(type);
            cid_of[c] = cid;
            if (sqlite3_column_int(st, 4))
                why = "a column it reads is part of the primary key";
            else if (sqlite3_column_int(st, 3))
                why = "a column it reads has a default value";
            else if (c != C_NAME && c != C_CAT && c != C_ARGS && a != PRS_AFF_INTEGER && a != PRS_AFF_NUMERIC &&
                     a != PRS_AFF_BLOB)
                why = "a number column has REAL or TEXT affinity";
        }
    }
    sqlite3_finalize(st);
    if (why)
        return why;
    int maxcid = -1;
    for (int c = 0; c < NCOL; c++) {
        if (cid_of[c] < 0)
            return "a column it reads is missing";
        if (cid_of[c] > maxcid)
            maxcid = cid_of[c];
    }
    rs->nfields = maxcid + 1;
    rs->want = malloc((size_t)rs->nfields);
    if (!rs->want)
        return "out of memory";
    memset(rs->want, -1, (size_t)rs->nfields);
    for (int c = 0; c < NCOL; c++)
        rs->want[cid_of[c]] = (signed char)c;
    return NULL;
}

static const char *find_root(prs_rawscan *rs, sqlite3 *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT rootpage, sql FROM sqlite_schema WHERE type = 'table' AND "
                               "name = 'slice' COLLATE NOCASE", -1, &st, NULL) != SQLITE_OK)
        return "the schema could not be read";
    const char *why = "no table slice";
    if (sqlite3_step(st) == SQLITE_ROW) {
        sqlite3_int64 root = sqlite3_column_int64(st, 0);
        const char *sql = (const char *)sqlite3_column_text(st, 1);
        char u[16];
        why = NULL;
        if (root <= 1 || root > UINT32_MAX)
            why = "slice is not a stored table";
        /* WITHOUT ROWID: the root check below would catch it too */
        for (const char *p = sql; !why && p && *p; p++) {
            size_t k = 0;
            for (; k < 13 && p[k]; k++)
                u[k] = (char)(p[k] >= 'a' && p[k] <= 'z' ? p[k] - 32 : p[k]);
            if (k == 13 && !memcmp(u, "WITHOUT ROWID", 13))
                why = "slice is a WITHOUT ROWID table";
        }
        rs->root = (uint32_t)root;
    }
    sqlite3_finalize(st);
    return why;
}

/* The database header and file size: page size, usable size, page count. */
static const char *read_header(prs_rawscan *rs)
{
    unsigned char h[100];
    sqlite3_int64 size;
    if (rs->f->pMethods->xRead(rs->f, h, sizeof h, 0) != SQLITE_OK ||
        rs->f->pMethods->xFileSize(rs->f, &size) != SQLITE_OK)
        return "its header could not be read";
    if (memcmp(h, "SQLite format 3", 16) != 0)
        return "bad header";
    uint32_t psz = be16(h + 16);
    if (psz == 1)
        psz = 65536;
    if (psz < 512 || psz > 65536 || (psz & (psz - 1)))
        return "a page size SQLite does not allow";
    if (psz - h[20] < 480 || h[21] != 64 || h[22] != 32 || h[23] != 32)
        return "reserved space or payload fractions SQLite does not allow";
    if (be32(h + 56) != 1)
        return "its text is not UTF-8";
    rs->psz = psz;
    rs->usable = psz - h[20];
    rs->maxlocal = rs->usable - 35;
    rs->minlocal = (rs->usable - 12) * 32 / 255 - 23;
    sqlite3_int64 pages = size / psz;
    uint32_t inhdr = be32(h + 28);
    if (inhdr && be32(h + 24) == be32(h + 92) && inhdr < pages)
        pages = inhdr; /* the header's count is authoritative when valid */
    if (pages > UINT32_MAX - 1)
        return "too large";
    rs->npages = (uint32_t)pages;
    rs->lockpg = PENDING_BYTE / psz + 1;
    return NULL;
}

/* Only when the database file is the read transaction's snapshot: no WAL
 * frames (a WAL of frames needs SQLite's index to be read). */
static const char *check_snapshot(sqlite3 *db)
{
    if (sqlite3_txn_state(db, "main") != SQLITE_TXN_READ)
        return "no read transaction is open";
    const char *wal = sqlite3_filename_wal(sqlite3_db_filename(db, "main"));
    struct stat st;
    if (wal && stat(wal, &st) == 0 && st.st_size > 0)
        return "its WAL file holds frames";
    return NULL;
}

prs_rawscan *prs_rawscan_open(sqlite3 *db, atomic_int *nopen, const char **why)
{
    prs_rawscan *rs = calloc(1, sizeof *rs);
    if (!rs) {
        *why = "out of memory";
        return NULL;
    }
    rs->nopen = nopen;
    atomic_fetch_add_explicit(nopen, 1, memory_order_relaxed);
    rs->leaf_depth = -1;
    if ((*why = check_snapshot(db)) || (*why = find_root(rs, db)) || (*why = map_columns(rs, db))) {
        prs_rawscan_close(rs);
        return NULL;
    }
    if (!(rs->f = prs_readvfs_main_file(db, 0)) || !rs->f->pMethods) {
        *why = "its file is not reachable";
        prs_rawscan_close(rs);
        return NULL;
    }
    if ((*why = read_header(rs))) {
        prs_readvfs_main_file(db, 1);
        prs_rawscan_close(rs);
        return NULL;
    }
    /* the other levels' pages are allocated as the tree is walked */
    if (!(rs->lv[0].page = malloc(rs->psz + 1)))
        *why = "out of memory";
    if (!*why && !(rs->leafbuf = malloc(rs->psz + 1)))
        *why = "out of memory";
    if (!*why && (rs->root > rs->npages || rs->root == rs->lockpg))
        *why = "the root page of slice is beyond the file";
    if (!*why && !rd(rs, rs->lv[0].page, rs->root, 1))
        *why = "its root page could not be read";
    if (!*why && rs->lv[0].page[0] != 0x05 && rs->lv[0].page[0] != 0x0D)
        *why = "slice is not a rowid table b-tree";
    if (*why) {
        prs_readvfs_main_file(db, 1);
        prs_rawscan_close(rs);
        return NULL;
    }
    rs->err[0] = 0;
    return rs;
}
