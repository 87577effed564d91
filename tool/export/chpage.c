/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chpage.c — a report table read out of ClickHouse a page at a time
 * (chpage.h), for analyze --from (chprofile.c) and report --from (chread.c).
 *
 * Why pages. Both readers need a table's rows in the order the parse made
 * them, ORDER BY export_id, seq. One such SELECT over the whole table makes
 * the server hold every row it sorts: 18.16 reads no MergeTree in key order,
 * so the sort is a full one. At 1 M records analyze --from's batch rows took
 * 142 MB (system.query_log memory_usage), growing with the data; spilling
 * (ch_conn_spill) moves the threshold, not the growth: the final merge holds
 * a block of every spilled file. A fleet's billions of rows would hit the
 * server's max_memory_usage (code 241) whatever the settings.
 *
 * Design. First one small GROUP BY: the exports the filters keep, with the
 * lowest and highest seq of each (one row per export). Then, per export in
 * export_id order, ranges `export_id = E AND seq >= A AND seq < B ORDER BY
 * seq`: the table's key is (export_id, seq), so a range reads the granules
 * that hold it and sorts only its own rows. Concatenated, the pages are
 * exactly ORDER BY export_id, seq: the rows arrive in the same order as
 * from the one big query, and the outputs do not change by a byte.
 *
 * A page is sized in bytes, not rows: rows differ from table to table
 * (a batch row carries its request list) and the filters (--host) keep a
 * part of each range only. The first range is PAGE_FIRST seq wide; each
 * next one is scaled so that its answer comes near PAGE_BYTES from the
 * bytes per seq of the page before, by at most PAGE_GROW times (a dense
 * stretch after a sparse one costs a few pages too big, never the table).
 * Measured on the batch table (16,384 rows): the server holds ~6 MB plus
 * ~3.5 times the page's answer, so a page of 2 MB stays near 13 MB for
 * any table size.
 *
 * The read buffers. A page reads a granule or two of each column, but the
 * server gives every column it reads a buffer of max_read_buffer_size
 * (1 MiB) at times: the same 4,096-row page of the 24-column batch table
 * took 9 MB most times and 64 MB once (query_log; the request table's
 * 5 MB pages 22-24 MB). Pages ask for 64 KiB buffers (PAGE_READ_BUF): 9 to
 * 11 MB, no spikes, over the same 120 pages. Only when ch_conn_spill found
 * the user may change settings (a readonly=1 user may not; then the
 * server's own buffers are used).
 *
 * What it costs: one query per page, so a round trip and a few granules
 * read again at each edge; with --host, the filter's GLOBAL IN subquery
 * over the span table runs for each page (the growth keeps the pages of a
 * sparse host few).
 *
 * A page that fails (an error answer, an exception at the end of a 200
 * body, the caller's page_end) fails the whole read, with the table, the
 * export and the seq range in the message: rows of the pages before it
 * were fed already, and the callers drop everything they built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chpage.h"

#define PAGE_BYTES (2ull << 20)
#define PAGE_FIRST 4096ull
#define PAGE_MIN 16ull
#define PAGE_MAX (1ull << 24)
#define PAGE_GROW 4ull
#define PAGE_READ_BUF "65536"

typedef struct pager {
    ch_pages *pg;
    unsigned long long bytes; /* of the page running */
} pager;

static size_t count_sink(const char *p, size_t n, void *ctx)
{
    pager *w = ctx;
    w->bytes += n;
    return w->pg->sink(p, n, w->pg->ctx);
}

static int count_line(void *ctx, char *s, size_t n)
{
    pager *w = ctx;
    w->bytes += n + 1;
    return w->pg->line(w->pg->ctx, s, n);
}

/* The seq width of the next page, from the answer of the one before. */
static unsigned long long next_span(unsigned long long span, unsigned long long bytes)
{
    unsigned long long next = bytes ? (unsigned long long)((double)span * PAGE_BYTES / (double)bytes) : span * PAGE_GROW;
    if (next > span * PAGE_GROW)
        next = span * PAGE_GROW;
    if (next < PAGE_MIN)
        next = PAGE_MIN;
    return next > PAGE_MAX ? PAGE_MAX : next;
}

/* One page: [lo, hi) of export `lit` (quoted). 0, or -1 with err. */
static int one_page(ch_conn *c, pager *w, char *sql, size_t qcap, const char *lit, unsigned long long lo,
                    unsigned long long hi, char *err, size_t cap)
{
    ch_pages *pg = w->pg;
    snprintf(sql, qcap, "SELECT %s FROM %s %s%sexport_id = %s AND seq >= %llu AND seq < %llu ORDER BY seq%s FORMAT %s",
             pg->cols, pg->from, pg->where, pg->where[0] ? " AND " : "WHERE ", lit, lo, hi,
             c->may_set ? " SETTINGS max_read_buffer_size = " PAGE_READ_BUF : "", pg->format);
    w->bytes = 0;
    pg->pages++;
    int rc = pg->sink ? ch_query_stream(c, sql, count_sink, w, err, cap)
                      : ch_query_lines(c, sql, count_line, w, err, cap);
    if (rc == 0 && pg->page_end)
        rc = pg->page_end(pg->ctx, err, cap);
    return rc;
}

/* "reason" becomes "reason (table T read in pages: export E, seq A to B
 * failed; nothing read is used)"; the reason is cut, never the page. */
static void name_page(char *err, size_t cap, const ch_pages *pg, const char *id, unsigned long long lo,
                      unsigned long long hi)
{
    char why[1024], page[400];
    snprintf(why, sizeof why, "%s", err);
    int n = snprintf(page, sizeof page, " (table %s read in pages: export %s, seq %llu to %llu failed; nothing "
                     "read is used)", pg->table, id, lo, hi - 1);
    int keep = (int)cap - 1 - n;
    snprintf(err, cap, "%.*s%s", keep > 0 ? keep : 0, why, page);
}

int ch_read_pages(ch_conn *c, ch_pages *pg, char *err, size_t cap)
{
    size_t qcap = strlen(pg->cols) + strlen(pg->from) + strlen(pg->where) + 1024;
    char *sql = malloc(qcap), *ids = NULL;
    int rc = -1;
    pg->pages = 0;
    if (!sql) {
        snprintf(err, cap, "%s: out of memory reading table %s", c->label, pg->table);
        return -1;
    }
    snprintf(sql, qcap, "SELECT export_id, min(seq), max(seq) FROM %s %s GROUP BY export_id ORDER BY export_id "
             "FORMAT TabSeparated", pg->from, pg->where);
    if (ch_query(c, sql, err, cap) != 0)
        goto out;
    if (!(ids = strdup(c->resp ? c->resp : ""))) {
        snprintf(err, cap, "%s: out of memory reading table %s", c->label, pg->table);
        goto out;
    }
    pager w = {pg, 0};
    char *save = NULL;
    for (char *line = strtok_r(ids, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL, lit[600];
        if (!t2) {
            snprintf(err, cap, "%s: table %s: the list of exports has a line without 3 fields: '%.80s'", c->label,
                     pg->table, line);
            goto out;
        }
        *t1 = 0;
        unsigned long long lo = strtoull(t1 + 1, NULL, 10), last = strtoull(t2 + 1, NULL, 10);
        unsigned long long span = PAGE_FIRST;
        ch_quote(line, lit, sizeof lit);
        while (lo <= last) {
            unsigned long long hi = lo + span;
            if (one_page(c, &w, sql, qcap, lit, lo, hi, err, cap) != 0) {
                name_page(err, cap, pg, line, lo, hi);
                goto out;
            }
            span = next_span(span, w.bytes);
            lo = hi;
        }
    }
    rc = 0;
out:
    free(sql);
    free(ids);
    return rc;
}
