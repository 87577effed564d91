/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reqtokens.h — the one rule for a request's token counts, used by both
 * places that compute them:
 *
 *   tool/parse/model/request.c   request.csv recv_token_size / reply_token_size
 *                                (and TPOT, the token speeds, analyze's figures)
 *   lib/metrics/metrics_agg.c    servprof_prompt_tokens_total,
 *                                servprof_generation_tokens_total, the TPOT
 *                                histogram
 *
 * Why a shared header: the two were written apart and disagreed (metrics
 * read the counts from httpRes only, so docs/api.md's example, recvTokenSize
 * on httpReq, gave request.csv the right count and the live counter 0).
 * Both now include this file, so the keys and the rule cannot drift; the
 * test metrics_token_rule feeds the same records to both and compares.
 *
 * THE RULE. A request's counts are the LAST value of recvTokenSize /
 * replyTokenSize on any record naming the request (httpReq, httpRes,
 * DecodeEnd, a step ...), in record order. When two ids become one request
 * (a Link), the request keeps the value it has and takes the other id's
 * only where it has none. NAN is "not seen" (the CSV's empty cell; no
 * counter increment).
 *
 * Header only (static inline): the library and the tool each compile it;
 * no state, thread-safe.
 */
#ifndef SERVPROF_REQTOKENS_H
#define SERVPROF_REQTOKENS_H

#include <math.h>

/* The attribute names (docs/vocabulary.md), as the API writes them
 * (servprof_metric(r, SP_TOKENS_RECV_KEY, n)); the stored JSON key carries
 * the reference's trailing '=' ("recvTokenSize="), which the parser also
 * accepts. */
#define SP_TOKENS_RECV_KEY "recvTokenSize"
#define SP_TOKENS_REPLY_KEY "replyTokenSize"

/* One record naming the request carried `seen` (NAN: it did not): the last
 * value seen wins. */
static inline void sp_tokens_see(double *count, double seen)
{
    if (!isnan(seen))
        *count = seen;
}

/* Two ids of one request meet (a Link): the request's own value stays;
 * the other id's fills only a count not seen yet. */
static inline void sp_tokens_merge(double *count, double other)
{
    if (isnan(*count))
        *count = other;
}

#endif
