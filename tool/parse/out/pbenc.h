/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pbenc.h — the protobuf wire format, as much of it as pftrace.c writes:
 * varints, fixed64 and length-delimited fields appended to a growable
 * byte buffer. Inline, no allocation but the buffer's own growth.
 *
 * A nested message is either encoded into its own buffer and appended
 * with its length (pb_msg), or written in place between pb_open and
 * pb_close: pb_open leaves one byte for the length, pb_close writes it
 * and, for a message of 128 bytes or more, moves the content up by the
 * extra length bytes. Minimal lengths either way (Perfetto's own writer
 * reserves 4 bytes per nested message; at tens of bytes per event that
 * padding would be a tenth of the file), and the small messages — most
 * of them — are never copied.
 * A buffer is not thread-safe; each writer owns its own.
 */
#ifndef SERVPROF_PARSE_PBENC_H
#define SERVPROF_PARSE_PBENC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

typedef struct prs_pb { unsigned char *b; size_t n, cap; } prs_pb;

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2 };

static inline void pb_reserve(prs_pb *e, size_t k)
{
    if (e->n + k <= e->cap)
        return;
    size_t cap = e->cap ? e->cap : 256;
    while (cap < e->n + k)
        cap *= 2;
    e->b = prs_xrealloc(e->b, cap); /* the tool's out-of-memory policy: xalloc.h */
    e->cap = cap;
}

static inline int pb_varint_len(uint64_t v)
{
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* A varint into room already reserved (10 bytes at most). */
static inline void pb_varint_in(prs_pb *e, uint64_t v)
{
    unsigned char *q = e->b + e->n;
    while (v >= 0x80) {
        *q++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *q++ = (unsigned char)v;
    e->n = (size_t)(q - e->b);
}

static inline void pb_varint(prs_pb *e, uint64_t v)
{
    pb_reserve(e, 10);
    pb_varint_in(e, v);
}

static inline void pb_tag(prs_pb *e, unsigned field, unsigned wt) { pb_varint(e, (uint64_t)field << 3 | wt); }

/* One reservation per field, not one per varint: the fields are written
 * by the hundred per event. */
static inline void pb_uint(prs_pb *e, unsigned field, uint64_t v)
{
    pb_reserve(e, 20);
    pb_varint_in(e, (uint64_t)field << 3 | PB_VARINT);
    pb_varint_in(e, v);
}

static inline void pb_fixed64(prs_pb *e, unsigned field, uint64_t v)
{
    pb_tag(e, field, PB_I64);
    pb_reserve(e, 8);
    for (int i = 0; i < 8; i++)
        e->b[e->n++] = (unsigned char)(v >> (8 * i));
}

static inline void pb_double(prs_pb *e, unsigned field, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    pb_fixed64(e, field, u);
}

static inline void pb_bytes(prs_pb *e, unsigned field, const void *p, size_t n)
{
    pb_reserve(e, 20 + n);
    pb_varint_in(e, (uint64_t)field << 3 | PB_LEN);
    pb_varint_in(e, n);
    memcpy(e->b + e->n, p, n);
    e->n += n;
}

static inline void pb_str(prs_pb *e, unsigned field, const char *s) { pb_bytes(e, field, s, strlen(s)); }

/* Appends the message encoded in m as field `field` of e. */
static inline void pb_msg(prs_pb *e, unsigned field, const prs_pb *m) { pb_bytes(e, field, m->b, m->n); }

/* Starts length-delimited field `field` in place; returns the offset of
 * its content, for pb_close. */
static inline size_t pb_open(prs_pb *e, unsigned field)
{
    pb_reserve(e, 11);
    pb_varint_in(e, (uint64_t)field << 3 | PB_LEN);
    e->b[e->n++] = 0;
    return e->n;
}

/* Ends the field pb_open started at `at`: writes its length. */
static inline void pb_close(prs_pb *e, size_t at)
{
    uint64_t len = e->n - at;
    int k = pb_varint_len(len);
    if (k > 1) {
        pb_reserve(e, (size_t)k - 1);
        memmove(e->b + at + k - 1, e->b + at, (size_t)len);
        e->n += (size_t)k - 1;
    }
    unsigned char *q = e->b + at - 1;
    while (len >= 0x80) {
        *q++ = (unsigned char)(len | 0x80);
        len >>= 7;
    }
    *q = (unsigned char)len;
}

static inline void pb_free(prs_pb *e)
{
    free(e->b);
    e->b = NULL;
    e->n = e->cap = 0;
}

#endif
