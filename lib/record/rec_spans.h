/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rec_spans.h — the writer's table of open spans (see rec_spans.c).
 * Writer thread only.
 */
#ifndef SERVPROF_REC_SPANS_H
#define SERVPROF_REC_SPANS_H

#include <stddef.h>
#include <stdint.h>

/* One half-seen span: its begin, or (when the end was drained first,
 * because it was written by another thread) its end. */
typedef struct sp_open_span {
    uint64_t id;
    int has_begin;
    int tid;          /* the thread that began it (else: that ended it) */
    int64_t ts;       /* begin time; end time while only the end is known */
    size_t name_len, cat_len, args_len;
    char *name, *cat; /* point into data[] */
    char *args;       /* JSON members (",\"k\":v..."), begin's or end's */
    char data[];
} sp_open_span;

typedef struct sp_span_table {
    sp_open_span **slots; /* open addressing, linear probing; NULL = empty */
    size_t cap, count;    /* cap is a power of two */
    uint64_t *max_begin;  /* per thread index: highest span counter begun */
    size_t nmax;
} sp_span_table;

/* A new entry holding copies of the three strings; NULL on no memory. */
sp_open_span *sp_span_new(uint64_t id, const char *name, size_t nl, const char *cat, size_t cl,
                          const char *args, size_t al);
sp_open_span *sp_spans_find(const sp_span_table *t, uint64_t id);
int sp_spans_add(sp_span_table *t, sp_open_span *s);     /* 0, or -1 on no memory */
void sp_spans_remove(sp_span_table *t, sp_open_span *s); /* unlinks; the caller frees */

/* Remembers that span `id` was begun; returns nonzero when a span of that
 * thread with this counter or a later one was already begun — an end for
 * such an id with no open entry is a second end. */
void sp_spans_note_begin(sp_span_table *t, uint64_t id);
int sp_spans_begun(const sp_span_table *t, uint64_t id);

/* Calls f on every entry, then empties the table (f frees or keeps). */
void sp_spans_drain(sp_span_table *t, void (*f)(void *ctx, sp_open_span *s), void *ctx);
void sp_spans_free(sp_span_table *t);

#endif /* SERVPROF_REC_SPANS_H */
