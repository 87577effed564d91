/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.c — the HTTP front end (see http.h).
 *
 * Design. libmicrohttpd runs one thread per connection, so a response can
 * block: a completion is a "callback response" whose reader waits on the
 * request's condition variable (tl_engine_wait) for the engine's next
 * tokens, detokenizes them and hands them to MHD as server-sent events
 * (stream) or, at the end, as one JSON body. While it waits it polls the socket for a hang-up
 * every 20 ms, so a client that leaves mid-stream is noticed within one
 * wait even when no token is due: the reader fails the response, MHD calls
 * the completion notifier, and tl_engine_release() marks the request for
 * abort; the engine then frees its KV blocks and records its end as
 * "aborted".
 *
 * Every request body is bounded (max_body) and validated before anything
 * is created; every error answers a JSON object {"error": {...}} with a
 * 4xx/5xx status, never a crash: malformed JSON (with line and column),
 * wrong types, out-of-range numbers, prompts longer than the model takes,
 * and, when the engine is full, 503.
 *
 * The per-connection context lives from the first call of the access
 * handler to the later of the completion notifier and the response's free
 * callback (a count of two owners, since MHD does not promise their order).
 */
#include "http.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer.h"
#include "instrument.h"

struct tl_http {
    tl_http_cfg c;
    tl_engine *e;
    struct MHD_Daemon *d;
    int port;
};

typedef struct conn_ctx {
    tl_http *h;
    struct MHD_Connection *conn;
    _Atomic int owners;     /* completion notifier + response free callback */
    char *body;             /* request body, NUL-terminated */
    size_t len, cap;
    int too_big;
    /* The completion being answered (reader thread = this connection's). */
    tl_request *req;
    int stream;
    int req_recorded;       /* httpReq was recorded */
    int sent;               /* output tokens already formatted */
    int final_done;         /* the last byte of the answer is in `out` */
    char *out;              /* bytes formatted, not yet handed to MHD */
    size_t out_len, out_off, out_cap;
    char *text;             /* whole answer's text (not streaming) */
    size_t text_len, text_cap;
} conn_ctx;

static void ctx_put(conn_ctx *c)
{
    if (atomic_fetch_sub(&c->owners, 1) == 1) {
        free(c->body);
        free(c->out);
        free(c->text);
        free(c);
    }
}

/* ---------------------------------------------------------------- */
/* Small responses                                                    */
/* ---------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *ctype,
                             const char *body, const char *rid)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", ctype);
    if (rid)
        MHD_add_response_header(resp, "X-Request-Id", rid);
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status, const char *rid,
                                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status, const char *rid,
                                   const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *type = status == 503 ? "overloaded_error"
                       : status >= 500 ? "server_error" : "invalid_request_error";
    json_t *o = json_pack("{s:{s:s, s:s, s:i}}", "error", "message", msg, "type", type, "code", (int)status);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    enum MHD_Result ret = reply(conn, status, "application/json",
                                text ? text : "{\"error\":{\"message\":\"error\"}}", rid);
    free(text);
    json_decref(o);
    return ret;
}

/* The profiling level being collected now (0 when off), through the
 * public cheap check only. */
static int profiling_level(void)
{
    static const int levels[] = {SERVPROF_LEVEL_VERBOSE, SERVPROF_LEVEL_DETAILED,
                                 SERVPROF_LEVEL_INFO, SERVPROF_LEVEL_ERROR};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (servprof_is_enabled(levels[i]))
            return levels[i];
    return 0;
}

static enum MHD_Result health(conn_ctx *c)
{
    tl_engine_stats s;
    tl_engine_stats_get(c->h->e, &s);
    json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i}",
                          "status", "ok", "model", c->h->c.model_name, "waiting", s.waiting,
                          "running", s.running, "kv_total_blocks", s.total_blocks,
                          "kv_free_blocks", s.free_blocks, "kv_cached_blocks", s.cached_blocks,
                          "submitted", (json_int_t)s.submitted, "completed", (json_int_t)s.completed,
                          "aborted", (json_int_t)s.aborted, "rejected", (json_int_t)s.rejected,
                          "preempted", (json_int_t)s.preempted, "steps", (json_int_t)s.steps,
                          "prompt_tokens", (json_int_t)s.prompt_tokens,
                          "output_tokens", (json_int_t)s.output_tokens,
                          "cached_tokens", (json_int_t)s.cached_tokens,
                          "profiling_level", profiling_level());
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        return reply_error(c->conn, 500, NULL, "out of memory");
    enum MHD_Result ret = reply(c->conn, MHD_HTTP_OK, "application/json", text, NULL);
    free(text);
    return ret;
}

/* ---------------------------------------------------------------- */
/* The answer of a completion, produced as the engine makes tokens     */
/* ---------------------------------------------------------------- */

static int out_append(conn_ctx *c, const char *s, size_t n)
{
    if (c->out_len + n + 1 > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 1024;
        while (cap < c->out_len + n + 1)
            cap *= 2;
        char *p = realloc(c->out, cap);
        if (!p)
            return -1;
        c->out = p;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, s, n);
    c->out_len += n;
    c->out[c->out_len] = 0;
    return 0;
}

static int text_append(conn_ctx *c, const char *s, size_t n)
{
    if (c->text_len + n + 1 > c->text_cap) {
        size_t cap = c->text_cap ? c->text_cap : 256;
        while (cap < c->text_len + n + 1)
            cap *= 2;
        char *p = realloc(c->text, cap);
        if (!p)
            return -1;
        c->text = p;
        c->text_cap = cap;
    }
    memcpy(c->text + c->text_len, s, n);
    c->text_len += n;
    c->text[c->text_len] = 0;
    return 0;
}

static int client_gone(conn_ctx *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return 0;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Detokenizes output tokens sent..n (final once published) and queues
 * them: one SSE event each when streaming, else into the whole text. This
 * is where tokens leave the server, so this is where `detokenize` is
 * recorded: its time is what a client sees as the token's arrival. */
static int format_tokens(conn_ctx *c, int n)
{
    const tl_request *r = c->req;
    for (int i = c->sent; i < n; i++) {
        char word[TL_TOKEN_TEXT_MAX], ev[256];
        int wl = tl_detokenize(r->tokens[r->n_prompt + i], word, sizeof word);
        if (!c->stream) {
            if (text_append(c, word, (size_t)wl))
                return -1;
            continue;
        }
        int k = snprintf(ev, sizeof ev,
                         "data: {\"id\":\"%s\",\"object\":\"text_completion\",\"choices\":"
                         "[{\"index\":0,\"text\":\"%s\",\"finish_reason\":null}]}\n\n",
                         r->http_id, word);
        if (k < 0 || (size_t)k >= sizeof ev || out_append(c, ev, (size_t)k) < 0)
            return -1;
    }
    ins_detokenize(r, n - c->sent, n);
    c->sent = n;
    return 0;
}

static int format_final(conn_ctx *c, int profiled)
{
    const tl_request *r = c->req;
    json_t *o = json_pack("{s:s, s:s, s:s, s:[{s:i, s:s, s:s}], s:{s:i, s:i, s:i}, s:i}",
                          "id", r->http_id, "object", "text_completion", "model", c->h->c.model_name,
                          "choices", "index", 0, "text", c->stream || !c->text ? "" : c->text,
                          "finish_reason", "length",
                          "usage", "prompt_tokens", r->n_prompt, "completion_tokens", c->sent,
                          "total_tokens", r->n_prompt + c->sent, "profiled", profiled);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        return -1;
    int rc = c->stream ? (out_append(c, "data: ", 6) || out_append(c, text, strlen(text)) ||
                          out_append(c, "\n\ndata: [DONE]\n\n", 16))
                       : out_append(c, text, strlen(text));
    free(text);
    return rc ? -1 : 0;
}

static ssize_t answer_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    conn_ctx *c = cls;
    tl_engine *e = c->h->e;
    for (;;) {
        if (c->out_off < c->out_len) {
            size_t n = c->out_len - c->out_off < max ? c->out_len - c->out_off : max;
            memcpy(buf, c->out + c->out_off, n);
            c->out_off += n;
            if (c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
            return (ssize_t)n;
        }
        if (c->final_done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        int state, how;
        int n = tl_engine_wait(e, c->req, c->sent, 20, &state, &how);
        /* A whole answer leaves at the end: its tokens are detokenized then. */
        if (n > c->sent && (c->stream || state == TL_DONE)) {
            if (format_tokens(c, n))
                return MHD_CONTENT_READER_END_WITH_ERROR;
            continue;
        }
        if (state == TL_DONE) {
            if (how != TL_FINISH_LENGTH)
                return MHD_CONTENT_READER_END_WITH_ERROR; /* aborted: server stopping */
            /* Tell the client what the profile holds of it: 2 both ends
             * (httpReq and httpRes), 1 the end only, 0 nothing. */
            int profiled = 0;
            if (tl_engine_claim_end(e, c->req) && ins_http_res(c->req, "ok", c->sent))
                profiled = c->req_recorded ? 2 : 1;
            if (format_final(c, profiled))
                return MHD_CONTENT_READER_END_WITH_ERROR;
            c->final_done = 1;
            continue;
        }
        if (client_gone(c))
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

static void answer_free(void *cls)
{
    ctx_put(cls);
}

/* ---------------------------------------------------------------- */
/* POST /v1/completions                                               */
/* ---------------------------------------------------------------- */

/* Reads "prompt" (string or token array) or "prompt_tokens" into r. NULL on
 * success, else a message (static or in msg). */
static const char *read_prompt(const json_t *p, tl_request *r, int vocab, char *msg, size_t msglen)
{
    int n;
    if (json_is_string(p)) {
        n = tl_tokenize(json_string_value(p), json_string_length(p), vocab, r->tokens, r->prompt_cap);
    } else if (json_is_array(p)) {
        n = (int)(json_array_size(p) < (size_t)r->prompt_cap + 1 ? json_array_size(p)
                                                                  : (size_t)r->prompt_cap + 1);
        for (int i = 0; i < n && i < r->prompt_cap; i++) {
            const json_t *t = json_array_get(p, (size_t)i);
            if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= vocab) {
                snprintf(msg, msglen, "prompt token %d must be an integer in 0..%d", i, vocab - 1);
                return msg;
            }
            r->tokens[i] = (int32_t)json_integer_value(t);
        }
    } else {
        return "'prompt' must be a string or an array of token ids";
    }
    if (n < 1)
        return "the prompt is empty";
    if (n > r->prompt_cap) {
        snprintf(msg, msglen, "the prompt has more than %d tokens (max-model-len %d minus max_tokens %d)",
                 r->prompt_cap, r->prompt_cap + r->max_tokens, r->max_tokens);
        return msg;
    }
    tl_request_set_prompt(r, n);
    return NULL;
}

static enum MHD_Result start_answer(conn_ctx *c)
{
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, answer_reader, c, answer_free);
    if (!resp)
        return MHD_NO;
    atomic_fetch_add(&c->owners, 1);
    MHD_add_response_header(resp, "Content-Type", c->stream ? "text/event-stream" : "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Request-Id", c->req->http_id);
    enum MHD_Result ret = MHD_queue_response(c->conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Checks the body's fields; NULL when valid (then *prompt, *max_tokens and
 * *stream are set), else the message (in msg). */
static const char *check_body(const json_t *root, int max_len, int default_max, char *msg,
                              size_t msglen, const json_t **prompt, int *max_tokens, int *stream)
{
    const json_t *p = json_object_get(root, "prompt"), *pt = json_object_get(root, "prompt_tokens");
    const json_t *mt = json_object_get(root, "max_tokens"), *st = json_object_get(root, "stream");
    if (!json_is_object(root))
        return "the body must be a JSON object";
    if (!p == !pt)
        return "give exactly one of 'prompt' and 'prompt_tokens'";
    if (pt && !json_is_array(pt))
        return "'prompt_tokens' must be an array of token ids";
    if (mt && !json_is_integer(mt))
        return "'max_tokens' must be an integer";
    if (mt && (json_integer_value(mt) < 1 || json_integer_value(mt) >= max_len)) {
        snprintf(msg, msglen, "'max_tokens' must be in 1..%d (max-model-len %d minus one prompt "
                 "token); got %" JSON_INTEGER_FORMAT, max_len - 1, max_len, json_integer_value(mt));
        return msg;
    }
    if (st && !json_is_boolean(st))
        return "'stream' must be true or false";
    *prompt = p ? p : pt;
    *max_tokens = mt ? (int)json_integer_value(mt) : (default_max < max_len ? default_max : max_len - 1);
    *stream = st && json_is_true(st);
    return NULL;
}

/* Creates the request, records its arrival, tokenizes, submits, and starts
 * the answer; or answers 400 (bad prompt) / 503 (engine full). */
static enum MHD_Result admit(conn_ctx *c, const json_t *prompt, int max_tokens)
{
    const tl_engine_cfg *ec = tl_engine_config(c->h->e);
    tl_request *r = tl_request_new(ec->model.max_pos - max_tokens, max_tokens);
    if (!r)
        return reply_error(c->conn, 500, NULL, "out of memory");
    c->req_recorded = ins_http_req(r);
    ins_trace_context(r, MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "traceparent"),
                      MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "tracestate"),
                      MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "b3"));
    servprof_span tok = ins_tokenize_begin(r);
    char msg[256];
    const char *bad = read_prompt(prompt, r, ec->model.vocab, msg, sizeof msg);
    ins_tokenize_end(tok, r->n_prompt);
    enum MHD_Result ret;
    if (bad) {
        ins_http_res(r, "rejected", 0);
        ret = reply_error(c->conn, 400, r->http_id, "%s", bad);
    } else {
        r->link_recorded = ins_link(r);
        if (tl_engine_submit(c->h->e, r) == 0) {
            c->req = r; /* the engine and the answer own it now */
            ret = start_answer(c);
            if (ret != MHD_YES) {
                tl_engine_release(c->h->e, r, 1);
                c->req = NULL;
            }
            return ret;
        }
        ins_http_res(r, "rejected", 0);
        ret = reply_error(c->conn, 503, r->http_id,
                          "server overloaded: too many requests in flight, retry later");
    }
    tl_request_free(r); /* never submitted */
    return ret;
}

static enum MHD_Result completions(conn_ctx *c)
{
    const tl_engine_cfg *ec = tl_engine_config(c->h->e);
    if (c->too_big)
        return reply_error(c->conn, 413, NULL, "request body larger than %zu bytes", c->h->c.max_body);
    json_error_t jerr;
    json_t *root = json_loadb(c->body ? c->body : "", c->len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return reply_error(c->conn, 400, NULL, "malformed JSON at line %d column %d: %s",
                           jerr.line, jerr.column, jerr.text);
    char msg[256];
    const json_t *prompt = NULL;
    int max_tokens = 0;
    const char *bad = check_body(root, ec->model.max_pos, c->h->c.default_max_tokens, msg, sizeof msg,
                                 &prompt, &max_tokens, &c->stream);
    enum MHD_Result ret = bad ? reply_error(c->conn, 400, NULL, "%s", bad) : admit(c, prompt, max_tokens);
    json_decref(root);
    return ret;
}

/* ---------------------------------------------------------------- */
/* MHD callbacks                                                      */
/* ---------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    tl_http *h = cls;
    conn_ctx *c = *con_cls;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return MHD_NO;
        c->h = h;
        c->conn = conn;
        atomic_init(&c->owners, 1);
        *con_cls = c;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (c->too_big || c->len + n > h->c.max_body) {
            c->too_big = 1; /* keep reading (and dropping) so the 413 can be sent */
            return MHD_YES;
        }
        if (c->len + n + 1 > c->cap) {
            size_t cap = c->cap ? c->cap : 4096;
            while (cap < c->len + n + 1)
                cap *= 2;
            char *p = realloc(c->body, cap);
            if (!p) {
                c->too_big = 1;
                return MHD_YES;
            }
            c->body = p;
            c->cap = cap;
        }
        memcpy(c->body + c->len, upload, n);
        c->len += n;
        c->body[c->len] = 0;
        return MHD_YES;
    }
    if (!strcmp(url, "/health"))
        return strcmp(method, "GET") ? reply_error(conn, 405, NULL, "use GET on /health") : health(c);
    if (!strcmp(url, "/v1/completions"))
        return strcmp(method, "POST") ? reply_error(conn, 405, NULL, "use POST on /v1/completions")
                                      : completions(c);
    return reply_error(conn, 404, NULL, "no such path; try POST /v1/completions or GET /health");
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    tl_http *h = cls;
    conn_ctx *c = *con_cls;
    if (!c)
        return;
    *con_cls = NULL;
    if (c->req) {
        /* The answer is over (its reader will not run again). */
        int ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && c->final_done;
        tl_engine_release(h->e, c->req, !ok);
        c->req = NULL;
    }
    ctx_put(c);
}

tl_http *tl_http_start(const tl_http_cfg *cfg, tl_engine *e)
{
    tl_http *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->c = *cfg;
    h->e = e;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
    if (cfg->port < 0 || cfg->port > 65535 || inet_pton(AF_INET, cfg->host, &sa.sin_addr) != 1) {
        fprintf(stderr, "tiny-llm-server: bad address %s:%d (want a numeric IPv4 address and a port 0..65535)\n",
                cfg->host, cfg->port);
        free(h);
        return NULL;
    }
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL,
                            (uint16_t)cfg->port, NULL, NULL, on_request, h,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                            MHD_OPTION_END);
    if (!h->d) {
        fprintf(stderr, "tiny-llm-server: cannot listen on %s:%d (in use? no permission?)\n",
                cfg->host, cfg->port);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : cfg->port;
    return h;
}

int tl_http_port(const tl_http *h) { return h->port; }

void tl_http_stop(tl_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
