/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_pb.c — protobuf encoding of OTLP trace requests (see otlp_pb.h for
 * why it is hand-written).
 *
 * A nested message is written in place: its tag, one byte reserved for its
 * length, its body; when the body turns out to be 128 bytes or more the body
 * is moved up by the extra length bytes (nest_end). Attributes, events and
 * most spans are under 128 bytes, so the move is rare and, for the outer
 * messages of a batch, happens once per batch. Lengths use the minimal varint,
 * as every protobuf encoder does, so the bytes compare with the official
 * exporters' field by field.
 */
#include "otlp_pb.h"

#include <stdlib.h>
#include <string.h>

/* Wire types. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

void sp_otlp_buf_free(sp_otlp_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void sp_otlp_buf_reset(sp_otlp_buf *b)
{
    b->len = 0;
    b->oom = 0;
}

static int grow(sp_otlp_buf *b, size_t n)
{
    if (b->oom)
        return -1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Inline: it runs for every field written (a call each was ~10 % of the
 * drain thread's instructions with tracing on, bench/bench_otlp_asm.py). */
static inline int reserve(sp_otlp_buf *b, size_t n)
{
    if (__builtin_expect(b->cap - b->len >= n && !b->oom, 1))
        return 0;
    return grow(b, n);
}

static void put(sp_otlp_buf *b, const void *src, size_t n)
{
    if (n && reserve(b, n) == 0) {
        memcpy(b->p + b->len, src, n);
        b->len += n;
    }
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void varint(sp_otlp_buf *b, uint64_t v)
{
    if (v < 0x80) { /* tags and short lengths: most varints */
        if (reserve(b, 1) == 0)
            b->p[b->len++] = (uint8_t)v;
        return;
    }
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    put(b, t, n);
}

static void tag(sp_otlp_buf *b, int field, int wt)
{
    varint(b, ((uint64_t)field << 3) | (uint64_t)wt);
}

static void fixed64(sp_otlp_buf *b, int field, uint64_t v)
{
    uint8_t t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(v >> (8 * i)); /* little-endian on the wire */
    tag(b, field, WT_I64);
    put(b, t, 8);
}

static void fixed32(sp_otlp_buf *b, int field, uint32_t v)
{
    uint8_t t[4];
    for (int i = 0; i < 4; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    tag(b, field, WT_I32);
    put(b, t, 4);
}

static void bytes(sp_otlp_buf *b, int field, const void *p, size_t n)
{
    tag(b, field, WT_LEN);
    varint(b, n);
    put(b, p, n);
}

/* proto3: an empty string is the default and is not written. */
static void string(sp_otlp_buf *b, int field, const char *s)
{
    if (s && *s)
        bytes(b, field, s, strlen(s));
}

static void uvarint_field(sp_otlp_buf *b, int field, uint64_t v)
{
    if (v) {
        tag(b, field, WT_VARINT);
        varint(b, v);
    }
}

/* Opens a nested message: returns where its body starts. */
static size_t nest_begin(sp_otlp_buf *b, int field)
{
    tag(b, field, WT_LEN);
    put(b, "", 1); /* the length, one byte for now */
    return b->len;
}

static void nest_end(sp_otlp_buf *b, size_t body)
{
    if (b->oom)
        return;
    size_t n = b->len - body;
    size_t extra = varint_len(n) - 1;
    if (extra) {
        if (reserve(b, extra) != 0)
            return;
        memmove(b->p + body + extra, b->p + body, n);
        b->len += extra;
    }
    size_t at = body - 1;
    uint64_t v = n;
    while (v >= 0x80) {
        b->p[at++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[at] = (uint8_t)v;
}

/* KeyValue { string key = 1; AnyValue value = 2; }
 * AnyValue { string_value = 1; bool_value = 2; int_value = 3; double_value = 4; } */
static void keyvalue(sp_otlp_buf *b, int field, const sp_otlp_attr *a)
{
    size_t kv = nest_begin(b, field);
    string(b, 1, a->key);
    size_t av = nest_begin(b, 2);
    switch (a->type) {
    case SP_OTLP_STR: /* written even when empty: the oneof says which kind it is */
        bytes(b, 1, a->s ? a->s : "", a->s ? strlen(a->s) : 0);
        break;
    case SP_OTLP_BOOL:
        tag(b, 2, WT_VARINT);
        varint(b, a->i ? 1 : 0);
        break;
    case SP_OTLP_INT:
        tag(b, 3, WT_VARINT);
        varint(b, (uint64_t)a->i); /* int64: two's complement, 10 bytes when negative */
        break;
    case SP_OTLP_DOUBLE: {
        uint64_t u;
        memcpy(&u, &a->d, 8);
        fixed64(b, 4, u);
        break;
    }
    }
    nest_end(b, av);
    nest_end(b, kv);
}

/* Span fields: trace_id 1, span_id 2, trace_state 3, parent_span_id 4,
 * name 5, kind 6, start 7, end 8, attributes 9, events 11, status 15,
 * flags 16. Event: time 1, name 2, attributes 3. Status: message 2, code 3. */
void sp_otlp_span_encode(sp_otlp_buf *b, const sp_otlp_span *s)
{
    bytes(b, 1, s->trace_id, 16);
    bytes(b, 2, s->span_id, 8);
    string(b, 3, s->trace_state);
    if (s->has_parent)
        bytes(b, 4, s->parent_id, 8);
    string(b, 5, s->name);
    uvarint_field(b, 6, (uint64_t)s->kind);
    fixed64(b, 7, (uint64_t)s->start_ns);
    fixed64(b, 8, (uint64_t)s->end_ns);
    for (int i = 0; i < s->nattrs; i++)
        keyvalue(b, 9, &s->attrs[i]);
    for (int i = 0; i < s->nevents; i++) {
        const sp_otlp_event *e = &s->events[i];
        size_t ev = nest_begin(b, 11);
        fixed64(b, 1, (uint64_t)e->time_ns);
        string(b, 2, e->name);
        for (int j = 0; j < e->nattrs; j++)
            keyvalue(b, 3, &e->attrs[j]);
        nest_end(b, ev);
    }
    if (s->status || (s->status_msg && *s->status_msg)) {
        size_t st = nest_begin(b, 15);
        string(b, 2, s->status_msg);
        uvarint_field(b, 3, (uint64_t)s->status);
        nest_end(b, st);
    }
    /* flags: the W3C flags in bits 0-7; bit 8 (0x100) says "the parent's
     * remote-ness is known", bit 9 that it is remote (trace.proto SpanFlags). */
    fixed32(b, 16, s->flags);
}

/* ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
 * ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
 * Resource { repeated KeyValue attributes = 1; }
 * ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
 * InstrumentationScope { string name = 1; string version = 2; } */
void sp_otlp_request_encode(sp_otlp_buf *b, const sp_otlp_attr *res, int nres, const char *scope,
                            const char *scope_ver, const uint8_t *const *spans,
                            const size_t *lens, int n)
{
    size_t rs = nest_begin(b, 1);
    size_t r = nest_begin(b, 1);
    for (int i = 0; i < nres; i++)
        keyvalue(b, 1, &res[i]);
    nest_end(b, r);
    size_t ss = nest_begin(b, 2);
    size_t sc = nest_begin(b, 1);
    string(b, 1, scope);
    string(b, 2, scope_ver);
    nest_end(b, sc);
    for (int i = 0; i < n; i++)
        bytes(b, 2, spans[i], lens[i]);
    nest_end(b, ss);
    nest_end(b, rs);
}
