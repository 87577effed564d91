/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chhttp.h — one connection to one ClickHouse node over its HTTP interface
 * (chhttp.c, libcurl): queries, INSERT bodies, and the server's errors
 * turned into one line that says what happened and what to do.
 */
#ifndef SERVPROF_CHHTTP_H
#define SERVPROF_CHHTTP_H

#include <stddef.h>

typedef struct ch_conn {
    void *curl;              /* CURL *, kept: one keep-alive connection per node */
    void *hdr;               /* struct curl_slist * of the INSERT headers */
    char base[320];          /* http://HOST:PORT/ */
    char qurl[640];          /* base plus the query settings (ch_conn_settings); base when none */
    int may_set;             /* ch_conn_spill sent settings: this user may set more in a query */
    char label[300];         /* clickhouse://HOST:PORT, for messages (never the password) */
    char user[128];
    char *password;          /* owned; "" for none */
    int compress;            /* gzip INSERT bodies (Content-Encoding: gzip) */
    char *resp;              /* the last response body, NUL-terminated (owned) */
    size_t nresp, capresp;
    long status;             /* the last HTTP status, 0 when none came */
    int server_code;         /* ClickHouse's "Code: N" of the last error, 0 none */
    unsigned char *zbuf;     /* gzip scratch (owned) */
    size_t zcap;
    long long sent_bytes;    /* bytes of INSERT bodies put on the wire */
    /* ch_query_stream's sink while it runs (NULL otherwise): a 200 answer's
     * bytes go there as they arrive instead of into resp */
    size_t (*sink)(const char *p, size_t n, void *ctx);
    void *sink_ctx;
} ch_conn;

/* Sets c up for host:port; copies user and password. 0, or -1 (libcurl could not start). */
int ch_conn_init(ch_conn *c, const char *host, int port, const char *user, const char *password,
                 int compress);
/* Settings every later query (not INSERT) carries in its URL, as
 * "name=value&name=value" (ClickHouse's HTTP interface takes any setting so);
 * "" for none. The text is the caller's and must be URL-safe. */
void ch_conn_settings(ch_conn *c, const char *params);
/* Reads this user's max_memory_usage and readonly from the server and sets
 * the spill thresholds (a quarter of the limit) and small blocks on every
 * later query of c, so big sorts and GROUP BYs spill instead of being
 * refused (code 241). Nothing is set for no limit or a readonly=1 user.
 * 0, or -1 with the reason in err. */
int ch_conn_spill(ch_conn *c, char *err, size_t cap);
/* GET /ping must answer "Ok.": 0, or -1 with a message saying what answered instead. */
int ch_ping(ch_conn *c, char *err, size_t cap);
/* Runs sql (the POST body). 0 with the result in c->resp, or -1 with one line in err. */
int ch_query(ch_conn *c, const char *sql, char *err, size_t cap);
/* Runs sql and hands each line of the answer (without its '\n', NUL-terminated,
 * writable) to line as it arrives: only one network block and one partial line
 * are held, never the whole answer. line returns 0 to go on, non-zero to stop
 * (then this returns -1 with err left as line set it). 0, or -1 with one line in err. */
int ch_query_lines(ch_conn *c, const char *sql, int (*line)(void *ctx, char *s, size_t n), void *ctx,
                   char *err, size_t cap);
/* Runs sql and hands a 200 answer's body to sink piece by piece as it
 * arrives (nothing is held whole: a SELECT of millions of rows streams).
 * sink returns n to go on, anything else to stop (then -1 with "stopped by
 * the reader" in err). An error answer (not 200) is kept in c->resp and
 * described in err as ch_query does. ClickHouse may still fail after a 200
 * began (an exception text at the end of the body): the sink's decoder
 * must check that the body ends on a whole row. 0, or -1. */
int ch_query_stream(ch_conn *c, const char *sql, size_t (*sink)(const char *p, size_t n, void *ctx), void *ctx,
                    char *err, size_t cap);
/* INSERT: `insert` is the query ("INSERT INTO t FORMAT RowBinary"), body its data. */
int ch_insert(ch_conn *c, const char *insert, const void *body, size_t n, char *err, size_t cap);
/* Quotes s as a ClickHouse string literal into out ('...' with \\ and \' escaped). */
void ch_quote(const char *s, char *out, size_t cap);
/* Quotes s as a ClickHouse identifier into out (`...` with \\ and \` escaped). */
void ch_ident(const char *s, char *out, size_t cap);
void ch_conn_close(ch_conn *c);

/* Server error codes the messages name (ClickHouse's ErrorCodes). */
enum { CH_E_UNKNOWN_TABLE = 60, CH_E_UNKNOWN_DATABASE = 81, CH_E_UNKNOWN_USER = 192,
       CH_E_WRONG_PASSWORD = 193, CH_E_MEMORY_LIMIT = 241, CH_E_NOT_ENOUGH_SPACE = 243, CH_E_ALL_CONNECTIONS_FAILED = 279,
       CH_E_AUTH_FAILED = 516 };

#endif
