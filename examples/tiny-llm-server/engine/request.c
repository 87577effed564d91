/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.c — creation and destruction of a request (see request.h).
 * Ids come from one atomic counter: "cmpl-N" for the front end and "seq-N"
 * for the engine, so a Link row is what ties them together in the profile,
 * as in servers whose front end and engine number requests separately.
 */
#include "request.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static _Atomic unsigned long next_id = 1;

tl_request *tl_request_new(int prompt_cap, int max_tokens)
{
    if (prompt_cap < 1 || max_tokens < 1)
        return NULL;
    tl_request *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    unsigned long id = atomic_fetch_add(&next_id, 1);
    snprintf(r->http_id, sizeof r->http_id, "cmpl-%lu", id);
    snprintf(r->engine_id, sizeof r->engine_id, "seq-%lu", id);
    r->prompt_cap = prompt_cap;
    r->max_tokens = max_tokens;
    size_t cap = (size_t)prompt_cap + (size_t)max_tokens;
    r->tokens = malloc(cap * sizeof *r->tokens);
    r->blocks = malloc(cap * sizeof *r->blocks); /* >= one block per token: enough */
    if (!r->tokens || !r->blocks || pthread_cond_init(&r->cv, NULL)) {
        free(r->tokens);
        free(r->blocks);
        free(r);
        return NULL;
    }
    r->refs = 2;
    return r;
}

void tl_request_set_prompt(tl_request *r, int n_prompt)
{
    assert(n_prompt >= 1 && n_prompt <= r->prompt_cap);
    r->n_prompt = n_prompt;
    r->n_tokens = n_prompt;
}

void tl_request_free(tl_request *r)
{
    if (!r)
        return;
    pthread_cond_destroy(&r->cv);
    free(r->tokens);
    free(r->blocks);
    free(r);
}
