/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.h — one completion request as the front end and the engine share
 * it. Ownership is by field group (see the comments): the HTTP thread that
 * created it, the engine thread, or the engine lock. The request is freed by
 * whoever drops the last of its two references (front end, engine).
 */
#ifndef TL_REQUEST_H
#define TL_REQUEST_H

#include <pthread.h>
#include <stdint.h>

#include "servprof.h"

enum { TL_WAITING = 0, TL_RUNNING = 1, TL_DONE = 2 };
enum { TL_FINISH_NONE = 0, TL_FINISH_LENGTH = 1, TL_FINISH_ABORT = 2 };

typedef struct tl_request {
    /* Immutable after tl_request_new(). */
    char http_id[32];       /* the front end's id, returned to the client */
    char engine_id[32];     /* the scheduler's id (linked to http_id) */
    int n_prompt;           /* set once by tl_request_set_prompt() */
    int prompt_cap;
    int max_tokens;
    int64_t arrival_ns;     /* servprof_now_ns() when the request arrived */
    int link_recorded;      /* the Link row was recorded at submission (set before submit) */
    int32_t *tokens;        /* [prompt_cap + max_tokens]: prompt, then output */

    /* Engine thread only. */
    int n_tokens;           /* prompt + generated tokens */
    int n_computed;         /* tokens whose KV is in the cache */
    int *blocks;            /* block table */
    int n_blocks;
    int iter;               /* steps this request ran in (0 for the first) */
    int preemptions;
    int hit_reported;       /* CacheHitRate emitted */
    uint64_t last_hash;     /* prefix-cache hash chain up to n_published blocks */
    int n_published;        /* leading blocks published in the prefix cache */
    struct tl_request *prev, *next; /* waiting list links */

    /* Under the engine lock. */
    int state;              /* TL_WAITING / TL_RUNNING / TL_DONE */
    int finish;             /* TL_FINISH_* once state is TL_DONE */
    int n_out;              /* output tokens published to the front end:
                             * tokens[n_prompt .. n_prompt+n_out) are final */
    int abort_requested;    /* the client went away, or the server stops */
    int refs;               /* 2 at submit: front end + engine */
    int ended;              /* httpRes was emitted (exactly once, by whoever ends it) */
    pthread_cond_t cv;      /* signalled when n_out or state change */
} tl_request;

/* A request with room for prompt_cap prompt tokens and max_tokens output
 * tokens; ids from a process-wide counter. The creator writes the prompt
 * into tokens[0..n) and calls tl_request_set_prompt(r, n) before submitting
 * (so that the request, and its id, exist while the prompt is tokenized).
 * NULL when out of memory or sizes < 1. */
tl_request *tl_request_new(int prompt_cap, int max_tokens);
void tl_request_set_prompt(tl_request *r, int n_prompt);
void tl_request_free(tl_request *r);

#endif
