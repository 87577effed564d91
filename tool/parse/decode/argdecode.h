/* SPDX-License-Identifier: Apache-2.0 */
/*
 * argdecode.h — decodes the few keys the reports need from a record's args
 * JSON (argdecode.c): one pass, no allocation, strings as slices of the text.
 */
#ifndef SERVPROF_PARSE_ARGDECODE_H
#define SERVPROF_PARSE_ARGDECODE_H

#include <stdint.h>

typedef struct prs_str { const char *p; int n; int esc; } prs_str; /* raw, no quotes */

typedef struct prs_rident {   /* one entry of a rid list */
    prs_str rid;
    int iter;                 /* -1 absent */
    int type;                 /* 0 prefill, 1 decode, -1 absent */
    int obj;                  /* 1: written as an object ({"rid": ...}), 0: a bare id */
    double sched_tokens, prompt_tokens, computed_tokens, spec_tokens; /* NAN absent */
} prs_rident;

typedef struct prs_args {
    int valid;                /* 1: the whole text is a well-formed JSON object */
    int type;                 /* "type": -1 absent */
    int rid_kind;             /* 0 none, 1 scalar, 2 list */
    prs_str rid;              /* scalar rid (numbers as their digits) */
    prs_rident *rids; int nrids, caprids;
    prs_str queue_name, status, batch_type, from, to;
    double queue_size, total, used, free, free_before, free_after, allocated, usage_pct;
    double device_block, recv_tokens, reply_tokens, hit_cache, batch_size;
    double usage, mtotal, util, mused, available, cpu, rss;  /* sampler keys */
    int device, cpu_index;    /* scope#device / scope#cpu, -1 absent */
    prs_str accepted;         /* spec_decode_accepted_by_req object text */
    long long range_errors;   /* numeric values out of range (beyond 2^53, infinite, or an int key
                               * beyond int) treated as absent, since prs_args_init: kept by decode */
} prs_args;

void prs_args_init(prs_args *a);
/* dst becomes src's decode (its rid entries copied into dst's own array;
 * the strings still point into src's text); range_errors adds src's. */
void prs_args_copy(prs_args *dst, const prs_args *src);
void prs_args_free(prs_args *a);
/* Decodes text (len bytes). Never fails: unknown keys are skipped; a
 * malformed text leaves valid = 0 and what was decoded before the error. */
void prs_args_decode(prs_args *a, const char *text, int len);
/* The i-th key argdecode.c decodes (0, 1, ...; NULL past the last); *eq = 1 when
 * it is also accepted with a trailing '='. For the tests' walk of the table. */
const char *prs_args_key(int i, int *eq);
/* Copies s into buf (unescaping), NUL-terminated; returns length. The
 * unescaped text is never longer than s.n (cap = s.n + 1 holds it whole).
 * \u0000 and unpaired surrogates become U+FFFD; surrogate pairs become one
 * 4-byte UTF-8 sequence. */
int prs_str_copy(prs_str s, char *buf, int cap);
/* Looks up "key" (a number) in a flat JSON object text; NAN if absent. */
double prs_json_object_number(prs_str obj, const char *key, int keylen);
/* Calls fn(key, value) for each member of a flat object (NAN when not a
 * number, or out of range: then counted in *range unless range is NULL). */
typedef void (*prs_json_num_fn)(prs_str key, double value, void *ctx);
void prs_json_each_number(prs_str obj, prs_json_num_fn fn, void *ctx, long long *range);
/* Finds string member "key" of a flat JSON object text; 1 if found. */
int prs_json_object_string(const char *text, int len, const char *key, prs_str *out);

#endif
