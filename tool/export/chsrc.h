/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chsrc.h — what analyze --from clickhouse:// reads from (internal to
 * tool/export): the connection, the database, and the session and host
 * filters every query applies (chanalyze.c), shared by the module that fills
 * the profile from the report tables (chprofile.c) and the one that
 * aggregates the span table (chspans.c).
 */
#ifndef SERVPROF_EXPORT_CHSRC_H
#define SERVPROF_EXPORT_CHSRC_H

#include "chhttp.h"
#include "profile.h"

typedef struct ch_src {
    ch_conn c;
    char url[512];
    char db[140];           /* `db`, quoted as an identifier */
    char dbname[128];
    char session[600];      /* --session as a quoted literal, "" for every export */
    char where[8192];       /* WHERE export_id IN (the session's exports), or "" */
    char host[600];         /* --host as a quoted literal, "" for all hosts */
    char err[1024];
    long long rows, bytes;  /* report rows and answer bytes received (SERVPROF_CH_STATS) */
} ch_src;

/* What a WHERE selects rows by (chs_where). */
enum { CHS_BY_NONE, CHS_BY_RID, CHS_BY_HTTP_RID, CHS_BY_PROC, CHS_BY_COORD, CHS_BY_RANK };
/* The WHERE of a report table, into buf: the session's exports and, with
 * --host, the rows of that host: requests whose id a record of the host
 * names (by CHS_BY_HTTP_RID/RID), steps of the host's processes (CHS_BY_PROC),
 * coordinator rows of the host's coordinator records (CHS_BY_COORD), MoE
 * rows of the host's ranks (CHS_BY_RANK). CHS_BY_NONE: the session filter only. */
const char *chs_where(const ch_src *x, int by, char *buf, size_t cap);
/* 1 when table t exists in the database (0 also on an error, set in x->err). */
int chs_table_exists(ch_src *x, const char *t);

/* chprofile.c: TabSeparated's escapes undone in place in s[0..n); the new length. */
size_t chs_unescape(char *s, size_t n);
/* chprofile.c: every report row analyze reads, fed to g. 0, or -1 with x->err. */
int chs_fill_reports(ch_src *x, sa_ingest *g);
/* chspans.c: the span table's aggregates per name and the record count. 0, or -1. */
int chs_fill_spans(ch_src *x, sa_ingest *g);

#endif
