/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pd.c — tiny-llm-pd: the tiny model served disaggregated, prefill and
 * decode in separate processes, on 127.0.0.1.
 *
 *   tiny-llm-pd --role decode  --port 0 --port-file D
 *   tiny-llm-pd --role prefill --port 0 --port-file P
 *   tiny-llm-pd --role router  --port 0 --port-file R --prefill-port $(cat P) --decode-port $(cat D)
 *
 * A client sends the router one line `GEN <max_tokens> <n> <t1> .. <tn>`
 * and reads `TOK <id>` lines, then `END` (or `ERR <why>`). The hand-off:
 *
 *   router -> P   PREFILL <rid> <n> <tokens..>      P runs the prompt, keeps its KV
 *   P -> router   READY <handle> <first_token>     blocks under a handle
 *   router -> D   DECODE <rid> <p_port> <handle> <first_token> <n> <max_tokens>
 *   D -> router   ACK
 *   D -> P        PULL <handle>                    P answers `KV <blocks> <bytes>`, then
 *                                                   the blocks' bytes (every layer's K and V,
 *                                                   tl_model_block_read), and frees them
 *   D             writes the bytes into its own blocks, runs one decode step,
 *                 then streams TOK lines to the router (which relays them)
 *
 * Records (docs/vocabulary.md): the router writes httpReq/httpRes (request.csv),
 * the Communication events
 * receiveReq, prefillRes, sendReqToD, sendReqToDSucc, decodeRes and the
 * Coordinator events RequestDispatch, GenerateToken (Phase prefill),
 * ReqFinish under its id; P and D link that id to theirs (Link) and write
 * `prefill` (P), PullKVCache and one `decode` event per token out (D).
 *
 * Trace context (docs/tracing.md): any of the three lines may end with
 * ` tp=<traceparent>`. The router joins the client's trace with it and
 * passes its own span on to P and D (servprof_trace_outgoing), which join
 * as its children and end their span with servprof_trace_end: one trace
 * per request across the three processes.
 *
 * Design: blocking sockets, a thread per connection; each instance's model
 * and block pool sit behind one mutex (the model is not thread-safe). Every
 * read is bounded (line length, token counts, block counts). On SIGINT or
 * SIGTERM it stops accepting, waits (up to 10 s) for the connections in
 * flight, shuts the profiler down (buffers drained) and exits.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/kvcache.h"
#include "engine/model.h"
#include "servprof.h"

#define MAX_LINE 65536
#define MAX_PROMPT 512
#define MAX_HANDLES 256

typedef struct instance {
    pthread_mutex_t mu;
    tl_model *model;
    kv_pool *kv;
    int block_size;
    /* prefill: the blocks of prompts waiting to be pulled, by handle */
    int *held[MAX_HANDLES];
    int nheld[MAX_HANDLES];
} instance;

static struct {
    const char *role;
    int port, prefill_port, decode_port;
    const char *port_file;
    instance in;
    _Atomic long next_id;
    pthread_mutex_t conn_mu;   /* guards nconn */
    pthread_cond_t conn_cv;    /* signalled when a connection thread ends */
    int nconn;                 /* connection threads running */
} g = {.conn_mu = PTHREAD_MUTEX_INITIALIZER, .conn_cv = PTHREAD_COND_INITIALIZER};

/* ------------------------------------------------------------ sockets */

static int listen_on(int port, int *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 128) ||
        getsockname(fd, (struct sockaddr *)&a, &len)) {
        fprintf(stderr, "tiny-llm-pd: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        return -1;
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = recv(fd, c, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* One line (without its '\n') into buf; -1 at EOF, error or overlong. Byte
 * by byte: lines are short and binary KV bytes may follow a line. */
static int read_line(int fd, char *buf, int cap)
{
    for (int n = 0; n < cap - 1;) {
        char ch;
        ssize_t r = recv(fd, &ch, 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (ch == '\n') {
            buf[n] = 0;
            return n;
        }
        buf[n++] = ch;
    }
    return -1;
}

static int say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(int fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return n < 0 || n >= (int)sizeof line ? -1 : write_all(fd, line, (size_t)n);
}

/* Reads up to max integers from the text at *p (advancing it); count or -1. */
static int read_ints(const char **p, int *out, int max)
{
    int n = 0;
    char *end;
    while (**p == ' ') {
        long v = strtol(*p, &end, 10);
        if (end == *p || n == max)
            return -1;
        out[n++] = (int)v;
        *p = end;
    }
    return n;
}

/* ------------------------------------------------------------ records */

static void comm(const char *name, const char *rid)
{
    servprof_rec *x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Communication");
    servprof_res_str(x, rid);
    servprof_event(x, name);
}

static void coord(const char *name, const char *rid, const char *phase, int pport, int dport)
{
    servprof_rec *x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Coordinator");
    if (!x)
        return;
    servprof_res_str(x, rid);
    char a[64];
    if (phase)
        servprof_attr_str(x, "Phase", phase);
    if (pport) {
        snprintf(a, sizeof a, "127.0.0.1:%d", pport);
        servprof_attr_str(x, "PrefillAddress", a);
        snprintf(a, sizeof a, "127.0.0.1:%d", dport);
        servprof_attr_str(x, "DecodeAddress", a);
    }
    servprof_event(x, name);
}

/* A trailing " tp=<traceparent>" of a protocol line: cut off args, copied
 * into tp ("" when none). */
static void take_tp(char *args, char *tp, size_t len)
{
    tp[0] = 0;
    char *t = strstr(args, " tp=");
    if (!t)
        return;
    snprintf(tp, len, "%s", t + 4);
    *t = 0;
}

/* ------------------------------------------------------------ prefill */

static int blocks_for(int tokens) { return (tokens + g.in.block_size - 1) / g.in.block_size; }

/* PREFILL <rid> <n> <tokens..>: runs the prompt into fresh blocks. */
static void prefill(int fd, char *args)
{
    char rid[64], pid[80], tp[128];
    take_tp(args, tp, sizeof tp);
    int n, off = 0, toks[MAX_PROMPT];
    if (sscanf(args, "%63s %d%n", rid, &n, &off) != 2 || n < 1 || n > MAX_PROMPT) {
        say(fd, "ERR bad PREFILL\n");
        return;
    }
    const char *p = args + off;
    if (read_ints(&p, toks, MAX_PROMPT) != n) {
        say(fd, "ERR bad PREFILL tokens\n");
        return;
    }
    snprintf(pid, sizeof pid, "p-%ld", ++g.next_id);
    servprof_link(rid, pid);
    if (tp[0])
        servprof_trace_context(pid, tp, NULL);
    servprof_rec *x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "ModelExecute");
    servprof_res_str(x, pid);
    servprof_span sp = servprof_span_begin(x, "prefill");
    instance *in = &g.in;
    pthread_mutex_lock(&in->mu);
    int nb = blocks_for(n), handle = -1;
    for (int h = 0; h < MAX_HANDLES && handle < 0; h++)
        if (!in->held[h])
            handle = h;
    int *table = handle >= 0 ? malloc((size_t)nb * sizeof *table) : NULL;
    if (!table || kv_alloc(in->kv, nb, table)) {
        pthread_mutex_unlock(&in->mu);
        free(table);
        servprof_span_end(sp);
        servprof_trace_end(pid, "no_kv_blocks");
        say(fd, "ERR no KV blocks free on the prefill instance\n");
        return;
    }
    tl_fwd_item it = {.tokens = toks, .pos0 = 0, .n = n, .block_table = table, .want_token = 1};
    tl_model_forward(in->model, &it, 1);
    in->held[handle] = table;
    in->nheld[handle] = nb;
    pthread_mutex_unlock(&in->mu);
    servprof_span_end(sp);
    servprof_trace_end(pid, "ok");
    say(fd, "READY %d %d\n", handle, (int)it.next);
}

/* PULL <handle>: sends the held blocks' bytes and frees them. */
static void pull(int fd, const char *args)
{
    int h;
    instance *in = &g.in;
    if (sscanf(args, "%d", &h) != 1 || h < 0 || h >= MAX_HANDLES) {
        say(fd, "ERR bad PULL\n");
        return;
    }
    pthread_mutex_lock(&in->mu);
    int *table = in->held[h], nb = in->nheld[h];
    in->held[h] = NULL;
    size_t per = tl_model_block_bytes(in->model);
    char *bytes = table ? malloc(per * (size_t)nb) : NULL;
    for (int i = 0; bytes && i < nb; i++)
        tl_model_block_read(in->model, table[i], bytes + per * (size_t)i);
    if (table)
        kv_release(in->kv, table, nb);
    pthread_mutex_unlock(&in->mu);
    if (!bytes) {
        free(table);
        say(fd, "ERR no such handle\n");
        return;
    }
    if (say(fd, "KV %d %zu\n", nb, per * (size_t)nb) == 0)
        write_all(fd, bytes, per * (size_t)nb);
    free(bytes);
    free(table);
}

/* ------------------------------------------------------------- decode */

/* DECODE <rid> <p_port> <handle> <first_token> <n_prompt> <max_tokens> */
static void decode(int fd, char *args)
{
    char rid[64], did[80], line[256], tp[128];
    take_tp(args, tp, sizeof tp);
    int pport, handle, first, n, max;
    if (sscanf(args, "%63s %d %d %d %d %d", rid, &pport, &handle, &first, &n, &max) != 6 || n < 1 ||
        n > MAX_PROMPT || max < 1 || max > 1024) {
        say(fd, "ERR bad DECODE\n");
        return;
    }
    snprintf(did, sizeof did, "d-%ld", ++g.next_id);
    servprof_link(rid, did);
    if (tp[0])
        servprof_trace_context(did, tp, NULL);
    say(fd, "ACK\n");
    /* Pull the prompt's KV from the prefill instance. */
    servprof_rec *x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "KVCache");
    servprof_res_str(x, did);
    servprof_span sp = servprof_span_begin(x, "PullKVCache");
    int pfd = connect_to(pport), nb = 0;
    size_t len = 0;
    char *bytes = NULL;
    if (pfd >= 0 && say(pfd, "PULL %d\n", handle) == 0 && read_line(pfd, line, sizeof line) > 0 &&
        sscanf(line, "KV %d %zu", &nb, &len) == 2 && nb == blocks_for(n) &&
        len == (size_t)nb * tl_model_block_bytes(g.in.model)) {
        bytes = malloc(len);
        if (bytes && read_all(pfd, bytes, len)) {
            free(bytes);
            bytes = NULL;
        }
    }
    if (pfd >= 0)
        close(pfd);
    instance *in = &g.in;
    int total = blocks_for(n + max), *table = malloc((size_t)total * sizeof *table);
    pthread_mutex_lock(&in->mu);
    int ok = bytes && table && kv_alloc(in->kv, total, table) == 0;
    for (int i = 0; ok && i < nb; i++)
        tl_model_block_write(in->model, table[i], bytes + (size_t)i * tl_model_block_bytes(in->model));
    pthread_mutex_unlock(&in->mu);
    x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "KVCache");
    servprof_attr_int(x, "rank", 0);
    char *bt = malloc((size_t)nb * 12 + 8);
    int bo = 0;
    if (bt) {
        bo += sprintf(bt, "[[");
        for (int i = 0; ok && i < nb; i++)
            bo += sprintf(bt + bo, i ? ",%d" : "%d", table[i]);
        sprintf(bt + bo, "]]");
        servprof_attr_json(x, "block_tables", bt); /* the blocks the pulled bytes went to */
        free(bt);
    }
    int64_t seq[1] = {n};
    servprof_attr_int_array(x, "batch_seq_len", seq, 1);
    servprof_attr_int(x, "bytes", (int64_t)len);
    servprof_span_end_rec(x, sp);
    free(bytes);
    if (!ok) {
        free(table);
        servprof_trace_end(did, "kv_pull_failed");
        say(fd, "ERR the KV pull from the prefill instance failed\n");
        return;
    }
    /* Decode: the first step runs before the first token goes out. */
    int32_t tok = first;
    for (int i = 0; i < max; i++) {
        int32_t next = tok;
        if (i + 1 < max || i == 0) {
            tl_fwd_item it = {.tokens = &tok, .pos0 = n + i, .n = 1, .block_table = table, .want_token = 1};
            pthread_mutex_lock(&in->mu);
            tl_model_forward(in->model, &it, 1);
            pthread_mutex_unlock(&in->mu);
            next = it.next;
        }
        x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
        servprof_res_str(x, did);
        servprof_event(x, "decode");
        if (say(fd, "TOK %d\n", (int)tok))
            break;
        tok = next;
    }
    pthread_mutex_lock(&in->mu);
    kv_release(in->kv, table, total);
    pthread_mutex_unlock(&in->mu);
    free(table);
    servprof_trace_end(did, "ok");
    say(fd, "END\n");
}

/* ------------------------------------------------------------- router */

/* GEN <max_tokens> <n> <tokens..>: the whole hand-off for one request. */
static void route(int fd, char *args)
{
    char rid[64], line[256], tp[128], next[64] = "";
    take_tp(args, tp, sizeof tp);
    int max, n, off = 0, toks[MAX_PROMPT];
    snprintf(rid, sizeof rid, "req-%ld", ++g.next_id);
    servprof_rec *x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(x, rid);
    servprof_event(x, "httpReq"); /* request.csv: the request as the client sees it */
    if (tp[0] && servprof_trace_context(rid, tp, NULL) != 0)
        tp[0] = 0; /* not a header: this request is a root */
    char hop[80] = "";
    if (servprof_trace_outgoing(rid, tp[0] ? tp : NULL, next, sizeof next) == 0)
        snprintf(hop, sizeof hop, " tp=%s", next); /* P and D: children of this span */
    comm("receiveReq", rid);
    if (sscanf(args, "%d %d%n", &max, &n, &off) != 2 || max < 1 || max > 1024 || n < 1 || n > MAX_PROMPT) {
        say(fd, "ERR bad GEN (GEN <max_tokens 1..1024> <n 1..%d> <tokens..>)\n", MAX_PROMPT);
        return;
    }
    const char *p = args + off;
    if (read_ints(&p, toks, MAX_PROMPT) != n) {
        say(fd, "ERR bad GEN tokens\n");
        return;
    }
    coord("RequestDispatch", rid, NULL, g.prefill_port, g.decode_port);
    int pfd = connect_to(g.prefill_port), dfd = -1, handle, first;
    char *req = malloc((size_t)n * 12 + 96 + sizeof hop);
    int o = sprintf(req, "PREFILL %s %d", rid, n);
    for (int i = 0; i < n; i++)
        o += sprintf(req + o, " %d", toks[i]);
    o += sprintf(req + o, "%s", hop);
    req[o++] = '\n';
    if (pfd < 0 || write_all(pfd, req, (size_t)o) || read_line(pfd, line, sizeof line) < 0 ||
        sscanf(line, "READY %d %d", &handle, &first) != 2) {
        say(fd, "ERR prefill instance: %s\n", pfd < 0 ? "unreachable" : line);
        goto out;
    }
    comm("prefillRes", rid);
    coord("GenerateToken", rid, "prefill", 0, 0);
    dfd = connect_to(g.decode_port);
    comm("sendReqToD", rid);
    if (dfd < 0 || say(dfd, "DECODE %s %d %d %d %d %d%s\n", rid, g.prefill_port, handle, first, n, max, hop) ||
        read_line(dfd, line, sizeof line) < 0 || strcmp(line, "ACK") != 0) {
        say(fd, "ERR decode instance: %s\n", dfd < 0 ? "unreachable" : "no ACK");
        goto out;
    }
    comm("sendReqToDSucc", rid);
    int nout = 0;
    while (read_line(dfd, line, sizeof line) >= 0) { /* relay until END or ERR */
        if (say(fd, "%s\n", line) || strncmp(line, "TOK ", 4) != 0)
            break;
        nout++;
    }
    comm("decodeRes", rid);
    coord("ReqFinish", rid, NULL, 0, 0);
    x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(x, rid);
    servprof_metric(x, "recvTokenSize", n);
    servprof_metric(x, "replyTokenSize", nout);
    servprof_event(x, "httpRes");
out:
    free(req);
    if (pfd >= 0)
        close(pfd);
    if (dfd >= 0)
        close(dfd);
}

/* ---------------------------------------------------------- the server */

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg, one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char *line = malloc(MAX_LINE);
    while (line && read_line(fd, line, MAX_LINE) >= 0) {
        if (!strncmp(line, "GEN ", 4) && !strcmp(g.role, "router"))
            route(fd, line + 3);
        else if (!strncmp(line, "PREFILL ", 8) && !strcmp(g.role, "prefill"))
            prefill(fd, line + 7);
        else if (!strncmp(line, "PULL ", 5) && !strcmp(g.role, "prefill"))
            pull(fd, line + 4);
        else if (!strncmp(line, "DECODE ", 7) && !strcmp(g.role, "decode"))
            decode(fd, line + 6);
        else if (say(fd, "ERR unknown command for the %s role\n", g.role))
            break;
    }
    free(line);
    close(fd);
    pthread_mutex_lock(&g.conn_mu);
    g.nconn--;
    pthread_cond_broadcast(&g.conn_cv);
    pthread_mutex_unlock(&g.conn_mu);
    return NULL;
}

static void *accept_loop(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL;
        }
        pthread_t t;
        pthread_mutex_lock(&g.conn_mu);
        g.nconn++;
        pthread_mutex_unlock(&g.conn_mu);
        if (pthread_create(&t, NULL, serve, (void *)(intptr_t)fd)) {
            close(fd);
            pthread_mutex_lock(&g.conn_mu);
            g.nconn--;
            pthread_mutex_unlock(&g.conn_mu);
        } else {
            pthread_detach(t);
        }
    }
}

static int opt_int(const char *name, const char *v, int lo, int hi)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "tiny-llm-pd: --%s wants an integer in %d..%d, got '%s'\n", name, lo, hi, v);
        exit(2);
    }
    return (int)x;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tiny-llm-pd --role router|prefill|decode [--port N] [--port-file FILE]\n"
               "                   [--prefill-port N --decode-port N (router)]\n");
}

int main(int argc, char **argv)
{
    g.port = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "tiny-llm-pd: %s wants a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--role")) g.role = v;
        else if (!strcmp(a, "--port")) g.port = opt_int("port", v, 0, 65535);
        else if (!strcmp(a, "--port-file")) g.port_file = v;
        else if (!strcmp(a, "--prefill-port")) g.prefill_port = opt_int("prefill-port", v, 1, 65535);
        else if (!strcmp(a, "--decode-port")) g.decode_port = opt_int("decode-port", v, 1, 65535);
        else {
            fprintf(stderr, "tiny-llm-pd: unknown option %s\n", a);
            return 2;
        }
    }
    if (!g.role || (strcmp(g.role, "router") && strcmp(g.role, "prefill") && strcmp(g.role, "decode"))) {
        fprintf(stderr, "tiny-llm-pd: --role wants router, prefill or decode\n");
        return 2;
    }
    if (!strcmp(g.role, "router") && (!g.prefill_port || !g.decode_port)) {
        fprintf(stderr, "tiny-llm-pd: the router wants --prefill-port and --decode-port\n");
        return 2;
    }
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (servprof_init())
        fprintf(stderr, "tiny-llm-pd: profiler not started; serving without it\n");
    char pname[32];
    snprintf(pname, sizeof pname, "pd-%s", g.role);
    servprof_set_process_name(pname);
    servprof_meta("pd_role", g.role);
    if (strcmp(g.role, "router")) {
        tl_model_cfg c = {.vocab = 1024, .d_model = 64, .n_layers = 2, .n_heads = 2, .d_ff = 128,
                          .max_pos = MAX_PROMPT + 1024, .num_blocks = 1024, .block_size = 16,
                          .max_tokens = MAX_PROMPT, .seed = 1};
        pthread_mutex_init(&g.in.mu, NULL);
        g.in.block_size = c.block_size;
        g.in.model = tl_model_new(&c);
        g.in.kv = kv_pool_new(c.num_blocks, c.block_size, 0);
        if (!g.in.model || !g.in.kv) {
            servprof_shutdown();
            return 1;
        }
    }
    int port, lfd = listen_on(g.port, &port);
    if (lfd < 0) {
        servprof_shutdown();
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, accept_loop, (void *)(intptr_t)lfd);
    fprintf(stderr, "tiny-llm-pd: %s listening on 127.0.0.1:%d\n", g.role, port);
    if (g.port_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", g.port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) || rename(tmp, g.port_file))
            fprintf(stderr, "tiny-llm-pd: cannot write %s: %s\n", g.port_file, strerror(errno));
    }
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "tiny-llm-pd: %s stopping\n", g.role);
    shutdown(lfd, SHUT_RDWR); /* accept() fails: the accept thread ends */
    pthread_join(t, NULL);
    close(lfd);
    /* Let the requests in flight finish (bounded: 10 s), then drain the profiler. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&g.conn_mu);
    while (g.nconn > 0 && pthread_cond_timedwait(&g.conn_cv, &g.conn_mu, &until) == 0)
        ;
    int left = g.nconn;
    pthread_mutex_unlock(&g.conn_mu);
    if (left)
        fprintf(stderr, "tiny-llm-pd: %d connection(s) still open after 10 s; stopping anyway\n", left);
    servprof_shutdown(); /* drains what was recorded */
    if (g.in.model) {
        tl_model_free(g.in.model);
        kv_pool_free(g.in.kv);
    }
    return 0;
}
