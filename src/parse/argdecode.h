/* SPDX-License-Identifier: Apache-2.0 */
/*
 * argdecode.h — decodes the few keys the reports need from a record's args
 * JSON (args.c): one pass, no allocation, strings as slices of the text.
 */
#ifndef SERVPROF_PARSE_ARGDECODE_H
#define SERVPROF_PARSE_ARGDECODE_H

#include <stdint.h>

typedef struct spp_str { const char *p; int n; int esc; } spp_str; /* raw, no quotes */

typedef struct spp_rident {   /* one entry of a rid list */
    spp_str rid;
    int iter;                 /* -1 absent */
    int type;                 /* 0 prefill, 1 decode, -1 absent */
    double sched_tokens, prompt_tokens, computed_tokens, spec_tokens; /* NAN absent */
} spp_rident;

typedef struct spp_args {
    int valid;                /* 1: the whole text is a well-formed JSON object */
    int type;                 /* "type": -1 absent */
    int rid_kind;             /* 0 none, 1 scalar, 2 list */
    spp_str rid;              /* scalar rid (numbers as their digits) */
    spp_rident *rids; int nrids, caprids;
    spp_str queue_name, status, batch_type, from, to;
    double queue_size, total, used, free, free_before, free_after, allocated, usage_pct;
    double device_block, recv_tokens, reply_tokens, hit_cache, batch_size;
    double usage, mtotal, util, mused, available, cpu, rss;  /* sampler keys */
    int device, cpu_index;    /* scope#device / scope#cpu, -1 absent */
    spp_str accepted;         /* spec_decode_accepted_by_req object text */
    long long range_errors;   /* numeric values out of range (beyond 2^53, infinite, or an int key
                               * beyond int) treated as absent, since spp_args_init: kept by decode */
} spp_args;

void spp_args_init(spp_args *a);
void spp_args_free(spp_args *a);
/* Decodes text (len bytes). Never fails: unknown keys are skipped; a
 * malformed text leaves valid = 0 and what was decoded before the error. */
void spp_args_decode(spp_args *a, const char *text, int len);
/* The i-th key args.c decodes (0, 1, ...; NULL past the last); *eq = 1 when
 * it is also accepted with a trailing '='. For the tests' walk of the table. */
const char *spp_args_key(int i, int *eq);
/* Copies s into buf (unescaping), NUL-terminated; returns length. The
 * unescaped text is never longer than s.n (cap = s.n + 1 holds it whole).
 * \u0000 and unpaired surrogates become U+FFFD; surrogate pairs become one
 * 4-byte UTF-8 sequence. */
int spp_str_copy(spp_str s, char *buf, int cap);
/* Looks up "key" (a number) in a flat JSON object text; NAN if absent. */
double spp_json_object_number(spp_str obj, const char *key, int keylen);
/* Calls fn(key, value) for each member of a flat object (NAN when not a
 * number, or out of range: then counted in *range unless range is NULL). */
typedef void (*spp_json_num_fn)(spp_str key, double value, void *ctx);
void spp_json_each_number(spp_str obj, spp_json_num_fn fn, void *ctx, long long *range);
/* Finds string member "key" of a flat JSON object text; 1 if found. */
int spp_json_object_string(const char *text, int len, const char *key, spp_str *out);

#endif
