/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.h — the HTTP front end (libmicrohttpd): POST /v1/completions
 * (OpenAI-style, optionally streamed as server-sent events) and
 * GET /health, on a loopback address.
 */
#ifndef TL_HTTP_H
#define TL_HTTP_H

#include "engine/scheduler.h"

typedef struct tl_http_cfg {
    const char *host;        /* numeric IPv4 address to bind, e.g. 127.0.0.1 */
    int port;                /* 0: any free port */
    int max_connections;
    size_t max_body;         /* bytes; larger bodies get 413 */
    int default_max_tokens;
    const char *model_name;
} tl_http_cfg;

typedef struct tl_http tl_http;

/* Starts serving (threads of its own). NULL on failure, with a message. */
tl_http *tl_http_start(const tl_http_cfg *cfg, tl_engine *e);
int tl_http_port(const tl_http *h);
/* Stops accepting, waits for every connection thread. NULL is fine. */
void tl_http_stop(tl_http *h);

#endif
