/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compare.h — two profiles side by side (servprof compare): request,
 * step and span metrics of A and B, the change in %, a bootstrap
 * confidence interval of the change, and each metric's share of the change
 * in end-to-end latency; --fail-if gates over the result.
 */
#ifndef SERVPROF_ANALYZE_COMPARE_H
#define SERVPROF_ANALYZE_COMPARE_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "analyze.h"

typedef struct sa_compare_opts {
    int resamples;        /* bootstrap resamples (default 400) */
    int max_sample;       /* values drawn per run and resample, at most (default 4000) */
    double confidence;    /* of the interval (default 0.95) */
    double min_effect;    /* |change| below this share is never called significant (default 0.10) */
    double min_abs_ms;    /* nor a change of a time below this many ms (default 0.05) */
    unsigned long long seed; /* of the resampling (fixed: repeatable results) */
} sa_compare_opts;

void sa_compare_opts_init(sa_compare_opts *o);
/* Compares the inputs of a and b (raw stores are parsed one after the
 * other). Returns the document of docs/analyze.md "compare" (caller frees
 * with json_decref), or NULL with the reason in err. */
json_t *sa_compare(const sa_opts *a, const sa_opts *b, const sa_compare_opts *o, char *err, size_t errcap);
/* Evaluates one --fail-if expression against the document: 1 it trips, 0
 * it does not, -1 the expression is malformed or names no metric (why in
 * msg). On 0/1, msg says what was compared. */
int sa_gate(json_t *cmp, const char *expr, char *msg, size_t cap);
/* The comparison as a terminal table. */
void sa_compare_render_text(json_t *cmp, FILE *f);

/* compare_out.c: writes span_comparation_result.csv (the reference's file:
 * Golden = A, Input = B) and compare.json (the document) into dir, made
 * with its parents when missing. 0, or -1 with a one-line reason in err. */
int sa_compare_write_files(const json_t *cmp, const char *dir, char *err, size_t errcap);

#endif
