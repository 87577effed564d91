/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.h — one HTTP/1.1 request to the completion server over a plain
 * TCP socket, timing what a client sees: time to the first streamed token,
 * end to end, tokens received. Thread-safe (no shared state).
 */
#ifndef LG_CLIENT_H
#define LG_CLIENT_H

#include <stddef.h>
#include <stdint.h>

typedef struct lg_result {
    char id[64];         /* X-Request-Id of the answer ("" when none) */
    int status;          /* HTTP status; 0 when no answer (connection error) */
    int n_prompt;        /* prompt tokens sent */
    int n_out;           /* output tokens received */
    int profiled;        /* what the server's profile holds of it: 2 both
                          * ends, 1 the end only (it began before collection
                          * was on), 0 nothing */
    int64_t start_ns;    /* wall clock (CLOCK_REALTIME) when sending began */
    int64_t end_ns;      /* wall clock when the last byte arrived */
    double queue_ms;     /* time the request waited for a free client slot */
    double ttft_ms;      /* to the first token (stream), else -1 */
    double e2e_ms;
    char err[96];        /* what went wrong, "" when fine */
} lg_result;

/* POSTs body to http://host:port/v1/completions and reads the answer
 * (server-sent events when stream). Fills *out; returns 0 when the answer
 * was complete and 2xx, else -1. timeout_ms bounds every wait. */
int lg_post(const char *host, int port, const char *body, size_t len, int stream,
            int timeout_ms, lg_result *out);

#endif
