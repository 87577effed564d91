/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chhttp.c — ClickHouse's HTTP interface through libcurl.
 *
 * Why libcurl and not a socket client of our own: keep-alive, Basic auth,
 * Expect/100-continue, chunked responses and every network error named are
 * libcurl's job, done well; Debian ships it (libcurl4-openssl-dev), and the
 * OTLP exporter links it too. One easy handle per node keeps one connection
 * open across every INSERT to that node.
 *
 * The password goes in Basic auth (never in the URL, which servers log).
 * Queries go in the POST body; INSERT data goes in the body with the
 * INSERT in the query string, as ClickHouse wants. Errors: ClickHouse
 * answers "Code: N, e.displayText() = DB::Exception: TEXT" (18.x) or
 * "Code: N. DB::Exception: TEXT" (later); the code picks the advice.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "chhttp.h"

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
    ch_conn *c = ud;
    size_t n = sz * nm;
    if (c->sink) {
        long st = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &st);
        if (st == 200)
            return c->sink(p, n, c->sink_ctx);
    }
    if (c->nresp + n + 1 > c->capresp) {
        size_t cap = c->capresp ? c->capresp : 4096;
        while (cap < c->nresp + n + 1)
            cap *= 2;
        char *r = realloc(c->resp, cap);
        if (!r)
            return 0;
        c->resp = r;
        c->capresp = cap;
    }
    memcpy(c->resp + c->nresp, p, n);
    c->nresp += n;
    c->resp[c->nresp] = 0;
    return n;
}

int ch_conn_init(ch_conn *c, const char *host, int port, const char *user, const char *password,
                 int compress)
{
    static int global_done;
    memset(c, 0, sizeof *c);
    if (!global_done) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        global_done = 1;
    }
    c->curl = curl_easy_init();
    if (!c->curl)
        return -1;
    snprintf(c->base, sizeof c->base, "http://%s:%d/", host, port);
    snprintf(c->qurl, sizeof c->qurl, "%s", c->base);
    snprintf(c->label, sizeof c->label, "clickhouse://%s:%d", host, port);
    snprintf(c->user, sizeof c->user, "%s", user && *user ? user : "default");
    c->password = strdup(password ? password : "");
    c->compress = compress;
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, "Content-Type: application/octet-stream");
    h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip per block */
    c->hdr = h;
    return 0;
}

void ch_conn_settings(ch_conn *c, const char *params)
{
    snprintf(c->qurl, sizeof c->qurl, "%s%s%s", c->base, params && *params ? "?" : "", params ? params : "");
}

/* A sort or GROUP BY over many rows spills to the server's disk instead of
 * growing until the server refuses the query (its max_memory_usage; code
 * 241): the report rows' ORDER BY export_id, seq holds every row fetched
 * otherwise (18.16 reads no MergeTree in key order). The thresholds are a
 * quarter of this user's limit, read from the server (any limit a server
 * has; ClickHouse's own default is 10 GB), so what the query holds besides
 * the blocks to spill fits too. The final merge reads one block from each
 * spilled file at once: blocks of SPILL_BLOCK_ROWS rows (not 65536) keep
 * that small (at 5 M records, a 300 MB limit: 106 MB, not 225 MB, for the
 * batch rows' sort; query_log). No limit (0): nothing to stay under, and a
 * readonly=1 user may change no setting: none is sent. */
#define SPILL_BLOCK_ROWS 8192

int ch_conn_spill(ch_conn *c, char *err, size_t cap)
{
    if (ch_query(c, "SELECT name, value FROM system.settings WHERE name IN ('max_memory_usage', 'readonly') "
                 "FORMAT TabSeparated", err, cap) != 0)
        return -1;
    long long limit = 0, ro = 0;
    char *save = NULL;
    for (char *line = strtok_r(c->resp, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *tab = strchr(line, '\t');
        if (tab && !strncmp(line, "max_memory_usage\t", 17))
            limit = atoll(tab + 1);
        else if (tab && !strncmp(line, "readonly\t", 9))
            ro = atoll(tab + 1);
    }
    if (limit <= 0 || ro == 1)
        return 0;
    char params[300];
    snprintf(params, sizeof params, "max_bytes_before_external_sort=%lld&max_bytes_before_external_group_by=%lld"
             "&max_block_size=%d", limit / 4, limit / 4, SPILL_BLOCK_ROWS);
    ch_conn_settings(c, params);
    c->may_set = 1;
    return 0;
}

void ch_conn_close(ch_conn *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->hdr);
    free(c->password);
    free(c->resp);
    free(c->zbuf);
    memset(c, 0, sizeof *c);
}

void ch_ident(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    out[k++] = '`';
    for (; *s && k + 4 < cap; s++) {
        if (*s == '`' || *s == '\\')
            out[k++] = '\\';
        out[k++] = *s;
    }
    out[k++] = '`';
    out[k] = 0;
}

void ch_quote(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    if (cap < 3) {
        if (cap)
            out[0] = 0;
        return;
    }
    out[k++] = '\'';
    for (; *s && k + 4 < cap; s++) {
        if (*s == '\\' || *s == '\'')
            out[k++] = '\\';
        out[k++] = *s;
    }
    out[k++] = '\'';
    out[k] = 0;
}

/* The first line of the server's error, without the exception's tail. */
static void server_text(const ch_conn *c, char *out, size_t cap)
{
    const char *s = c->resp ? c->resp : "";
    const char *m = strstr(s, "DB::Exception: ");
    if (m)
        s = m + 15;
    size_t n = strcspn(s, "\n");
    const char *tail = strstr(s, ", e.what()");
    if (tail && (size_t)(tail - s) < n)
        n = (size_t)(tail - s);
    if (n > 400)
        n = 400;
    snprintf(out, cap, "%.*s", (int)n, s);
}

static int server_code(const char *body)
{
    if (!body || strncmp(body, "Code: ", 6))
        return 0;
    return atoi(body + 6);
}

/* err for a failed exchange: the network's, or the server's with advice. */
static void describe(ch_conn *c, CURLcode cc, const char *what, char *err, size_t cap)
{
    if (cc != CURLE_OK) {
        const char *hint = "";
        if (cc == CURLE_COULDNT_CONNECT)
            hint = ": is the server running, and is this its HTTP port (8123 by default)?";
        else if (cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR || cc == CURLE_GOT_NOTHING ||
                 cc == CURLE_PARTIAL_FILE)
            hint = ": the connection was reset (server stopped or restarted?)";
        snprintf(err, cap, "%s: %s failed: %s%s", c->label, what, curl_easy_strerror(cc), hint);
        return;
    }
    char text[420];
    server_text(c, text, sizeof text);
    c->server_code = server_code(c->resp);
    int code = c->server_code;
    if (!code && c->status != 401 && c->status != 403) {
        snprintf(err, cap, "%s: %s: HTTP %ld and an answer that is not ClickHouse's (\"%.80s\"): "
                 "is this a ClickHouse HTTP port?", c->label, what, c->status, text);
        return;
    }
    const char *advice = "";
    if (code == CH_E_UNKNOWN_USER || code == CH_E_WRONG_PASSWORD || code == CH_E_AUTH_FAILED ||
        c->status == 401 || c->status == 403)
        advice = " (user and password: SERVPROF_CLICKHOUSE_USER, SERVPROF_CLICKHOUSE_PASSWORD or "
                 "--password-file FILE)";
    else if (code == CH_E_UNKNOWN_TABLE || code == CH_E_UNKNOWN_DATABASE)
        advice = " (run with --create to make the database and tables)";
    else if (code == CH_E_MEMORY_LIMIT)
        advice = " (the server's limit on one query's memory: raise max_memory_usage in this user's profile on "
                 "the server)";
    else if (code == CH_E_NOT_ENOUGH_SPACE)
        advice = " (the server's disk is full: free space, then run the same command again)";
    else if (code == CH_E_ALL_CONNECTIONS_FAILED)
        advice = " (a shard of the cluster is down)";
    snprintf(err, cap, "%s: %s refused (HTTP %ld, ClickHouse code %d): %s%s", c->label, what, c->status,
             code, text, advice);
}

static CURLcode perform_to(ch_conn *c, const char *url, const void *body, size_t n, int gz,
                           size_t (*fn)(char *, size_t, size_t, void *), void *ud);

static CURLcode perform(ch_conn *c, const char *url, const void *body, size_t n, int gz)
{
    return perform_to(c, url, body, n, gz, on_body, c);
}

static CURLcode perform_to(ch_conn *c, const char *url, const void *body, size_t n, int gz,
                           size_t (*fn)(char *, size_t, size_t, void *), void *ud)
{
    CURL *h = c->curl;
    curl_easy_reset(h);
    c->nresp = 0;
    if (c->resp)
        c->resp[0] = 0;
    c->status = 0;
    c->server_code = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
    curl_easy_setopt(h, CURLOPT_PASSWORD, c->password);
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fn);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, ud);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    struct curl_slist *extra = NULL;
    if (body) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
        if (gz) {
            for (struct curl_slist *s = c->hdr; s; s = s->next)
                extra = curl_slist_append(extra, s->data);
            extra = curl_slist_append(extra, "Content-Encoding: gzip");
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, extra);
        } else
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)c->hdr);
    }
    CURLcode cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(extra);
    return cc;
}

int ch_ping(ch_conn *c, char *err, size_t cap)
{
    char url[400];
    snprintf(url, sizeof url, "%sping", c->base);
    CURLcode cc = perform(c, url, NULL, 0, 0);
    if (cc != CURLE_OK) {
        describe(c, cc, "GET /ping", err, cap);
        return -1;
    }
    if (c->status != 200 || strcmp(c->resp ? c->resp : "", "Ok.\n") != 0) {
        char text[420];
        server_text(c, text, sizeof text);
        snprintf(err, cap, "%s: not a ClickHouse server: GET /ping answered HTTP %ld \"%.60s\" "
                 "(ClickHouse answers 200 \"Ok.\"; is this its HTTP port?)", c->label, c->status, text);
        return -1;
    }
    return 0;
}

int ch_query(ch_conn *c, const char *sql, char *err, size_t cap)
{
    CURLcode cc = perform(c, c->qurl, sql, strlen(sql), 0);
    if (cc != CURLE_OK || c->status != 200) {
        describe(c, cc, "query", err, cap);
        return -1;
    }
    return 0;
}

/* ch_query_lines' state: c->resp holds the partial last line (or, when the
 * answer is not a 200, the server's error text, as for any query). */
typedef struct lines {
    ch_conn *c;
    int (*line)(void *, char *, size_t);
    void *ctx;
    int checked, ok, stopped;
    int failed; /* an exception text came after the 200 (left in c->resp) */
} lines;

static size_t on_lines(char *p, size_t sz, size_t nm, void *ud)
{
    lines *L = ud;
    ch_conn *c = L->c;
    if (!L->checked) {
        long st = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &st);
        L->ok = st == 200;
        L->checked = 1;
    }
    size_t n = on_body(p, sz, nm, c);
    if (n != sz * nm || !L->ok)
        return n;
    char *s = c->resp, *e = c->resp + c->nresp, *nl;
    while ((nl = memchr(s, '\n', (size_t)(e - s))) != NULL) {
        *nl = 0;
        if (server_code(s) && strstr(s, "DB::Exception: ")) {
            /* the server failed after its 200 began: its error ends the body */
            memmove(c->resp, s, (size_t)(nl - s) + 1);
            L->failed = 1;
            return 0;
        }
        if (L->line(L->ctx, s, (size_t)(nl - s)) != 0) {
            L->stopped = 1;
            return 0; /* libcurl stops the transfer */
        }
        s = nl + 1;
    }
    c->nresp = (size_t)(e - s);
    memmove(c->resp, s, c->nresp);
    c->resp[c->nresp] = 0;
    return n;
}

int ch_query_lines(ch_conn *c, const char *sql, int (*line)(void *ctx, char *s, size_t n), void *ctx,
                   char *err, size_t cap)
{
    lines L = {c, line, ctx, 0, 0, 0, 0};
    CURLcode cc = perform_to(c, c->qurl, sql, strlen(sql), 0, on_lines, &L);
    if (L.stopped)
        return -1;
    if (!L.failed && c->nresp && L.ok && server_code(c->resp) && strstr(c->resp, "DB::Exception: "))
        L.failed = 1; /* the same, without its newline */
    if (L.failed) {
        describe(c, CURLE_OK, "query", err, cap);
        return -1;
    }
    if (cc != CURLE_OK || c->status != 200) {
        describe(c, cc, "query", err, cap);
        return -1;
    }
    if (c->nresp && line(ctx, c->resp, c->nresp) != 0) /* a last line without its newline */
        return -1;
    c->nresp = 0;
    return 0;
}

int ch_query_stream(ch_conn *c, const char *sql, size_t (*sink)(const char *p, size_t n, void *ctx), void *ctx,
                    char *err, size_t cap)
{
    c->sink = sink;
    c->sink_ctx = ctx;
    CURLcode cc = perform(c, c->qurl, sql, strlen(sql), 0);
    c->sink = NULL;
    c->sink_ctx = NULL;
    if (cc == CURLE_WRITE_ERROR && c->status == 200) {
        snprintf(err, cap, "%s: query stopped by the reader", c->label);
        return -1;
    }
    if (cc != CURLE_OK || c->status != 200) {
        describe(c, cc, "query", err, cap);
        return -1;
    }
    return 0;
}

/* gzip of body into c->zbuf; its size, or 0 on failure. */
static size_t gzip(ch_conn *c, const void *body, size_t n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    size_t need = deflateBound(&z, (uLong)n) + 32;
    if (need > c->zcap) {
        unsigned char *b = realloc(c->zbuf, need);
        if (!b) {
            deflateEnd(&z);
            return 0;
        }
        c->zbuf = b;
        c->zcap = need;
    }
    z.next_in = (Bytef *)body;
    z.avail_in = (uInt)n;
    z.next_out = c->zbuf;
    z.avail_out = (uInt)c->zcap;
    int r = deflate(&z, Z_FINISH);
    size_t out = z.total_out;
    deflateEnd(&z);
    return r == Z_STREAM_END ? out : 0;
}

int ch_insert(ch_conn *c, const char *insert, const void *body, size_t n, char *err, size_t cap)
{
    char *q = curl_easy_escape(c->curl, insert, 0);
    size_t ulen = strlen(c->base) + strlen(q) + 16;
    char *url = malloc(ulen);
    snprintf(url, ulen, "%s?query=%s", c->base, q);
    curl_free(q);
    int gz = 0;
    if (c->compress && n > 0) {
        size_t zn = gzip(c, body, n);
        if (zn) {
            body = c->zbuf;
            n = zn;
            gz = 1;
        }
    }
    CURLcode cc = perform(c, url, body, n, gz);
    free(url);
    if (cc != CURLE_OK || c->status != 200) {
        describe(c, cc, "INSERT", err, cap);
        return -1;
    }
    c->sent_bytes += (long long)n;
    return 0;
}
