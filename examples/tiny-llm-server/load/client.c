/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.c — a minimal HTTP/1.1 client for the load generator (see
 * client.h). One connection per request ("Connection: close"), as an
 * open-loop benchmark client should: requests never wait on each other's
 * sockets.
 *
 * Design. Bytes are read as they come and pushed through two small state
 * machines: the chunked transfer decoder, then (when streaming) a line
 * splitter for server-sent events. The first "data:" event carrying a token
 * stamps the time to first token. Timings use CLOCK_MONOTONIC; the start is
 * also stamped on the wall clock so results can be matched against the
 * server's profile.
 */
#include "client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct reader {
    lg_result *out;
    int stream;
    int64_t t0;
    /* chunked decoding */
    int chunked;
    int cstate;            /* 0 size line, 1 data, 2 CRLF after data, 3 done */
    size_t crem;
    char cline[32];
    size_t clen;
    /* body / SSE lines */
    char *body;
    size_t blen, bcap;
    size_t line_start;     /* SSE: start of the current line in body */
    int done;              /* [DONE] seen, or the body is complete */
} reader;

static int body_append(reader *r, const char *p, size_t n)
{
    if (r->blen + n + 1 > r->bcap) {
        size_t cap = r->bcap ? r->bcap : 4096;
        while (cap < r->blen + n + 1)
            cap *= 2;
        char *b = realloc(r->body, cap);
        if (!b)
            return -1;
        r->body = b;
        r->bcap = cap;
    }
    memcpy(r->body + r->blen, p, n);
    r->blen += n;
    r->body[r->blen] = 0;
    return 0;
}

static void sse_line(reader *r, const char *line, size_t n)
{
    if (n < 6 || strncmp(line, "data: ", 6))
        return;
    line += 6;
    n -= 6;
    if (n >= 6 && !strncmp(line, "[DONE]", 6)) {
        r->done = 1;
        return;
    }
    char tmp[512];
    const char *p;
    size_t k = n < sizeof tmp - 1 ? n : sizeof tmp - 1;
    memcpy(tmp, line, k);
    tmp[k] = 0;
    if (strstr(tmp, "\"finish_reason\":null")) {
        if (r->out->n_out++ == 0)
            r->out->ttft_ms = (double)(mono_ns() - r->t0) / 1e6;
    } else if ((p = strstr(tmp, "\"profiled\":"))) {
        r->out->profiled = atoi(p + 11);
    }
}

/* Decoded body bytes arrive here. */
static int on_body(reader *r, const char *p, size_t n)
{
    if (body_append(r, p, n))
        return -1;
    if (!r->stream)
        return 0;
    for (size_t i = r->blen - n; i < r->blen; i++)
        if (r->body[i] == '\n') {
            sse_line(r, r->body + r->line_start, i - r->line_start);
            r->line_start = i + 1;
        }
    /* Drop consumed lines so a long stream does not grow the buffer. */
    if (r->line_start > 65536) {
        memmove(r->body, r->body + r->line_start, r->blen - r->line_start);
        r->blen -= r->line_start;
        r->line_start = 0;
    }
    return 0;
}

static int on_raw(reader *r, const char *p, size_t n)
{
    if (!r->chunked)
        return on_body(r, p, n);
    for (size_t i = 0; i < n && r->cstate != 3;) {
        if (r->cstate == 0) {
            char c = p[i++];
            if (c == '\n') {
                r->cline[r->clen] = 0;
                r->crem = strtoul(r->cline, NULL, 16);
                r->clen = 0;
                r->cstate = r->crem ? 1 : 3;
            } else if (c != '\r' && r->clen < sizeof r->cline - 1) {
                r->cline[r->clen++] = c;
            }
        } else if (r->cstate == 1) {
            size_t k = n - i < r->crem ? n - i : r->crem;
            if (on_body(r, p + i, k))
                return -1;
            i += k;
            r->crem -= k;
            if (!r->crem)
                r->cstate = 2;
        } else { /* CRLF after the chunk data */
            if (p[i++] == '\n')
                r->cstate = 0;
        }
    }
    if (r->cstate == 3)
        r->done = 1;
    return 0;
}

static int connect_to(const char *host, int port, int timeout_ms, char *err, size_t errlen)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "bad address %s", host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        snprintf(err, errlen, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Parses the status line and headers in hdr (NUL-terminated). */
static void parse_head(reader *r, char *hdr)
{
    lg_result *o = r->out;
    sscanf(hdr, "HTTP/1.%*d %d", &o->status);
    for (char *line = strchr(hdr, '\n'); line; line = strchr(line, '\n')) {
        line++;
        if (!strncasecmp(line, "X-Request-Id:", 13)) {
            const char *v = line + 13;
            while (*v == ' ')
                v++;
            size_t k = strcspn(v, "\r\n");
            if (k >= sizeof o->id)
                k = sizeof o->id - 1;
            memcpy(o->id, v, k);
            o->id[k] = 0;
        } else if (!strncasecmp(line, "Transfer-Encoding:", 18) && strstr(line, "chunked")) {
            r->chunked = 1;
        }
    }
}

int lg_post(const char *host, int port, const char *body, size_t len, int stream,
            int timeout_ms, lg_result *out)
{
    reader r = {.out = out, .stream = stream};
    out->status = 0;
    out->n_out = 0;
    out->profiled = 0;
    out->id[0] = out->err[0] = 0;
    out->ttft_ms = -1;
    out->start_ns = real_ns();
    r.t0 = mono_ns();
    int fd = connect_to(host, port, timeout_ms, out->err, sizeof out->err);
    int ok = -1;
    char head[512], buf[16384];
    if (fd < 0)
        goto end;
    int hl = snprintf(head, sizeof head,
                      "POST /v1/completions HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n", host, port, len);
    if (send_all(fd, head, (size_t)hl) || send_all(fd, body, len)) {
        snprintf(out->err, sizeof out->err, "send: %s", strerror(errno));
        goto end;
    }
    /* Headers first (into hbuf), then the body through the decoders. */
    char hbuf[8192];
    size_t hn = 0;
    int in_body = 0;
    for (;;) {
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            snprintf(out->err, sizeof out->err, "recv: %s", strerror(errno));
            goto end;
        }
        if (k == 0)
            break;
        const char *p = buf;
        size_t n = (size_t)k;
        if (!in_body) {
            size_t take = n < sizeof hbuf - 1 - hn ? n : sizeof hbuf - 1 - hn;
            memcpy(hbuf + hn, p, take);
            hn += take;
            hbuf[hn] = 0;
            char *eoh = strstr(hbuf, "\r\n\r\n");
            if (!eoh) {
                if (hn == sizeof hbuf - 1) {
                    snprintf(out->err, sizeof out->err, "headers too long");
                    goto end;
                }
                continue;
            }
            size_t hdr_len = (size_t)(eoh - hbuf) + 4;
            *eoh = 0;
            parse_head(&r, hbuf);
            in_body = 1;
            /* Bytes of this read past the headers belong to the body. */
            size_t consumed = hdr_len - (hn - take);
            p += consumed;
            n -= consumed;
        }
        if (n && on_raw(&r, p, n)) {
            snprintf(out->err, sizeof out->err, "out of memory");
            goto end;
        }
        if (r.done && (!stream || r.cstate == 3 || !r.chunked))
            break;
    }
    if (!stream && r.body) {
        const char *u = strstr(r.body, "\"completion_tokens\":");
        if (u)
            out->n_out = atoi(u + 20);
        const char *p = strstr(r.body, "\"profiled\":");
        out->profiled = p ? atoi(p + 11) : 0;
    }
    if (out->status < 200 || out->status > 299) {
        if (!out->err[0])
            snprintf(out->err, sizeof out->err, "HTTP %d", out->status);
    } else if (stream && !r.done) {
        snprintf(out->err, sizeof out->err, "stream ended before [DONE]");
    } else {
        ok = 0;
    }
end:
    out->e2e_ms = (double)(mono_ns() - r.t0) / 1e6;
    out->end_ns = real_ns();
    if (fd >= 0)
        close(fd);
    free(r.body);
    return ok;
}
