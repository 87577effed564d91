/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chpage.h — one report table read out of ClickHouse in pages of its
 * (export_id, seq) key (chpage.c), so that no query's memory on the server
 * grows with the table: the reader of analyze --from (chprofile.c) and the
 * one of report --from (chread.c).
 */
#ifndef SERVPROF_EXPORT_CHPAGE_H
#define SERVPROF_EXPORT_CHPAGE_H

#include <stddef.h>

#include "chhttp.h"

typedef struct ch_pages {
    const char *table;   /* its name, for messages */
    const char *cols;    /* "`a`, `b`": what each page SELECTs */
    const char *from;    /* "`db`.`table`" */
    const char *where;   /* "WHERE ..." (the session and host filters), or "" */
    const char *format;  /* "RowBinary", "TabSeparated" */
    /* the answers, in (export_id, seq) order: their bytes to sink as they
     * arrive (ch_query_stream), or, sink NULL, their lines to line
     * (ch_query_lines); either returns as those do */
    size_t (*sink)(const char *p, size_t n, void *ctx);
    int (*line)(void *ctx, char *s, size_t n);
    /* after each page, when not NULL: 0, or -1 with err set (a page whose
     * answer did not end on a whole row, say) */
    int (*page_end)(void *ctx, char *err, size_t cap);
    void *ctx;
    long long pages;     /* out: the page queries run */
} ch_pages;

/* Every row of pg->from that pg->where keeps, in the order of ORDER BY
 * export_id, seq, fed to pg's sink or line a page at a time. 0, or -1 with
 * one line in err that names the page that failed: rows of the pages
 * before it were fed already, so the caller must drop what it built. */
int ch_read_pages(ch_conn *c, ch_pages *pg, char *err, size_t cap);

#endif
