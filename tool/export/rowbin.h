/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rowbin.h — ClickHouse's RowBinary encoding into a growing buffer: fixed
 * integers and floats little-endian, String as LEB128 length + the bytes
 * (any bytes: NUL, quotes and invalid UTF-8 travel verbatim, nothing is
 * escaped), Nullable as one flag byte, Array as LEB128 count + elements.
 * Header-only: the encoder is the hot loop of the export.
 */
#ifndef SERVPROF_ROWBIN_H
#define SERVPROF_ROWBIN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct rb_buf {
    unsigned char *p;
    size_t n, cap;
    int oom;            /* an allocation failed: the buffer is unusable */
} rb_buf;

static inline int rb_reserve(rb_buf *b, size_t more)
{
    if (b->n + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + more)
        cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* x86-64 and aarch64 are little-endian, as RowBinary is: a memcpy. */
static inline void rb_u64(rb_buf *b, uint64_t v)
{
    if (rb_reserve(b, 8) == 0) {
        memcpy(b->p + b->n, &v, 8);
        b->n += 8;
    }
}
static inline void rb_i64(rb_buf *b, int64_t v) { rb_u64(b, (uint64_t)v); }
static inline void rb_i32(rb_buf *b, int32_t v)
{
    if (rb_reserve(b, 4) == 0) {
        memcpy(b->p + b->n, &v, 4);
        b->n += 4;
    }
}
static inline void rb_f64(rb_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    rb_u64(b, u);
}
static inline void rb_u8(rb_buf *b, unsigned v)
{
    if (rb_reserve(b, 1) == 0)
        b->p[b->n++] = (unsigned char)v;
}
static inline void rb_varint(rb_buf *b, uint64_t v)
{
    if (rb_reserve(b, 10) != 0)
        return;
    while (v >= 0x80) {
        b->p[b->n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (unsigned char)v;
}
static inline void rb_str(rb_buf *b, const char *s, size_t n)
{
    rb_varint(b, n);
    if (n && rb_reserve(b, n) == 0) {
        memcpy(b->p + b->n, s, n);
        b->n += n;
    }
}
static inline void rb_cstr(rb_buf *b, const char *s) { rb_str(b, s ? s : "", s ? strlen(s) : 0); }

#endif
