/* SPDX-License-Identifier: Apache-2.0 */
/*
 * walcheck.c — what a store's `-wal` file holds, checked before SQLite
 * reads it, so that a damaged WAL is named as such.
 *
 * Why: SQLite reads a WAL frame by frame and stops, silently, at the first
 * frame whose checksum or salts do not match; a damaged header makes it
 * ignore the whole file. A store whose rows are all in the WAL (a recorder
 * that hit a full disk before any checkpoint) then looks empty or
 * schemaless, and a flip mid-file quietly drops every row committed after
 * it. This module walks the file the way SQLite does (format:
 * https://www.sqlite.org/fileformat2.html#walformat) and also looks past
 * the break: frames after it that carry the header's salts belong to this
 * WAL's generation and were meant to be read (a checkpoint that restarts the
 * WAL writes new salts, so older frames left behind do not count).
 *
 * The row estimate counts the cells of the table-leaf pages among the
 * frames SQLite does not read, the last version of each page only (a
 * transaction rewrites the leaf it appends to). It counts rows of every
 * table, so it is "about".
 *
 * A torn last frame (a writer killed mid-write) is no damage: SQLite never
 * used it. Only a break followed by more frames of the same generation, or
 * a damaged header with frames behind it, is reported.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bigendian.h"
#include "walcheck.h"

#define WAL_HDR 32
#define FRAME_HDR 24

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* SQLite's WAL checksum over n bytes (a multiple of 8), continuing s[2]. */
static void wal_sum(const unsigned char *p, size_t n, int big, uint32_t s[2])
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint32_t x0 = big ? be32(p + i) : le32(p + i), x1 = big ? be32(p + i + 4) : le32(p + i + 4);
        s[0] += x0 + s[1];
        s[1] += x1 + s[0];
    }
}

/* Cells on a table-leaf page image (0 for any other page). */
static long long leaf_cells(const unsigned char *page, uint32_t psz, uint32_t pgno)
{
    uint32_t off = pgno == 1 ? 100 : 0;
    if (off + 5 > psz || page[off] != 0x0D)
        return 0;
    return (long long)((uint32_t)page[off + 3] << 8 | page[off + 4]);
}

/* Most frames whose pages are looked at: the estimate of a huge damaged
 * WAL comes from its last frames (bounded work). */
#define MAX_LOOK 4096

/* The cells of the last version of each table-leaf page in frames
 * [from, to). */
static long long rows_in(FILE *f, uint32_t psz, long long from, long long to, unsigned char *page)
{
    if (to - from > MAX_LOOK)
        from = to - MAX_LOOK;
    if (to <= from)
        return 0;
    uint32_t *seen = malloc((size_t)(to - from) * sizeof *seen);
    if (!seen)
        return 0;
    long long cells = 0;
    int nseen = 0;
    size_t fsz = FRAME_HDR + (size_t)psz;
    for (long long i = to - 1; i >= from; i--) { /* newest first: the version SQLite would read */
        unsigned char h[FRAME_HDR];
        if (fseeko(f, WAL_HDR + (off_t)i * (off_t)fsz, SEEK_SET) != 0 || fread(h, 1, FRAME_HDR, f) != FRAME_HDR ||
            fread(page, 1, psz, f) != psz)
            continue;
        uint32_t pgno = be32(h);
        int dup = 0;
        for (int k = 0; k < nseen && !dup; k++)
            dup = seen[k] == pgno;
        if (dup)
            continue;
        seen[nseen++] = pgno;
        cells += leaf_cells(page, psz, pgno);
    }
    free(seen);
    return cells;
}

int prs_wal_check(const char *db_path, uint32_t main_psz, prs_wal_info *w)
{
    memset(w, 0, sizeof *w);
    char path[4096];
    if (snprintf(path, sizeof path, "%s-wal", db_path) >= (int)sizeof path)
        return 0;
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size == 0)
        return 0;
    w->present = 1;
    w->size = (long long)st.st_size;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    unsigned char h[WAL_HDR];
    int hdr_read = fread(h, 1, WAL_HDR, f) == WAL_HDR;
    uint32_t magic = hdr_read ? be32(h) : 0;
    int big = magic == 0x377f0683;
    uint32_t psz = hdr_read ? be32(h + 8) : 0;
    if (psz == 1)
        psz = 65536; /* not used by SQLite's WAL, but harmless */
    int psz_ok = psz >= 512 && psz <= 65536 && (psz & (psz - 1)) == 0;
    uint32_t sum[2] = {0, 0};
    if (hdr_read)
        wal_sum(h, 24, big, sum);
    w->header_ok = hdr_read && (magic & 0xFFFFFFFEu) == 0x377f0682 && be32(h + 4) == 3007000 && psz_ok &&
                   sum[0] == be32(h + 24) && sum[1] == be32(h + 28);
    if (!w->header_ok) {
        /* SQLite ignores the whole file; frames counted with the main file's page size. */
        uint32_t p = psz_ok ? psz : main_psz;
        if (p >= 512 && p <= 65536 && w->size > WAL_HDR)
            w->frames = (w->size - WAL_HDR) / (FRAME_HDR + (long long)p);
        if (w->frames > 0) {
            unsigned char *page = malloc(p);
            if (page)
                w->lost_rows = rows_in(f, p, 0, w->frames, page);
            free(page);
            w->damaged = 1;
        }
        fclose(f);
        return w->damaged;
    }
    w->page_size = psz;
    w->frames = (w->size - WAL_HDR) / (FRAME_HDR + (long long)psz);
    unsigned char *page = malloc(psz);
    if (!page) {
        fclose(f);
        return 0;
    }
    long long i = 0, last_commit = 0;
    for (; i < w->frames; i++) {
        unsigned char fh[FRAME_HDR];
        if (fread(fh, 1, FRAME_HDR, f) != FRAME_HDR || fread(page, 1, psz, f) != psz)
            break;
        if (memcmp(fh + 8, h + 16, 8) != 0)
            break; /* another generation: SQLite stops here, rightly */
        uint32_t s2[2] = {sum[0], sum[1]};
        wal_sum(fh, 8, big, s2);
        wal_sum(page, psz, big, s2);
        if (s2[0] != be32(fh + 16) || s2[1] != be32(fh + 20)) {
            w->damaged_at = i + 1;
            break;
        }
        sum[0] = s2[0];
        sum[1] = s2[1];
        if (be32(fh + 4))
            last_commit = i + 1;
    }
    w->used = last_commit;
    if (w->damaged_at) {
        /* The frames of this generation after the break: meant to be read. */
        long long k = w->damaged_at; /* 0-based index of the frame after the bad one */
        size_t fsz = FRAME_HDR + (size_t)psz;
        for (; k < w->frames; k++) {
            unsigned char fh[FRAME_HDR];
            if (fseeko(f, WAL_HDR + (off_t)k * (off_t)fsz, SEEK_SET) != 0 || fread(fh, 1, FRAME_HDR, f) != FRAME_HDR ||
                memcmp(fh + 8, h + 16, 8) != 0)
                break;
        }
        w->after = k - w->damaged_at;
        if (w->after > 0) {
            w->damaged = 1;
            w->lost_rows = rows_in(f, psz, w->used, k, page);
        }
    }
    free(page);
    fclose(f);
    return w->damaged;
}
