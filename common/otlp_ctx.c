/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_ctx.c — traceparent / B3 parsing and formatting, derived span ids
 * (see otlp_ctx.h for why the ids are derived).
 *
 * The hash is FNV-1a over the inputs, finished with splitmix64's mixer: not
 * cryptographic (ids are not secrets) but every output bit depends on every
 * input bit, which is what ratio sampling on the trace id needs.
 */
#include "otlp_ctx.h"

#include <stdio.h>
#include <string.h>

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') /* B3 is lenient; W3C callers are checked before */
        return c - 'A' + 10;
    return -1;
}

/* n hex digits of s into n/2 bytes; -1 on a non-hex digit. */
static int unhex(const char *s, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i += 2) {
        int a = hexval((unsigned char)s[i]), b = hexval((unsigned char)s[i + 1]);
        if (a < 0 || b < 0)
            return -1;
        out[i / 2] = (uint8_t)(a << 4 | b);
    }
    return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static int has_upper(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'A' && s[i] <= 'F')
            return 1;
    return 0;
}

static int fail(const char **why, const char *msg)
{
    if (why)
        *why = msg;
    return -1;
}

static int parse_w3c(const char *s, sp_tc *t, const char **why)
{
    size_t n = strlen(s);
    if (n < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-')
        return fail(why, "not version-traceid-parentid-flags (2-32-16-2 hex digits)");
    if (has_upper(s, n))
        return fail(why, "upper-case hex (W3C traceparent is lower-case)");
    uint8_t ver;
    sp_tc x;
    memset(&x, 0, sizeof x);
    if (unhex(s, 2, &ver) || ver == 0xff)
        return fail(why, "bad version");
    if (ver == 0 && n != 55)
        return fail(why, "version 00 with extra characters");
    if (ver != 0 && n > 55 && s[55] != '-')
        return fail(why, "bad field after the flags");
    if (unhex(s + 3, 32, x.trace_id) || unhex(s + 36, 16, x.parent_id) || unhex(s + 53, 2, &x.flags))
        return fail(why, "non-hex digit");
    if (all_zero(x.trace_id, 16))
        return fail(why, "all-zero trace id");
    if (all_zero(x.parent_id, 8))
        return fail(why, "all-zero parent id");
    x.has_parent = 1;
    *t = x;
    return 0;
}

static int b3_flag(const char *s, size_t n, uint8_t *flags)
{
    if (n == 1 && (s[0] == '1' || s[0] == 'd'))
        *flags = 1; /* d = debug: sampled */
    else if (n == 1 && s[0] == '0')
        *flags = 0;
    else if (n == 4 && !memcmp(s, "true", 4))
        *flags = 1;
    else if (n == 5 && !memcmp(s, "false", 5))
        *flags = 0;
    else
        return -1;
    return 0;
}

/* B3 trace ids may be 64 bits: left-padded with zeros to 128. */
static int b3_ids(const char *tid, size_t tl, const char *sid, size_t sl, sp_tc *x, const char **why)
{
    if (tl != 16 && tl != 32)
        return fail(why, "B3 trace id is not 16 or 32 hex digits");
    if (sl != 16)
        return fail(why, "B3 span id is not 16 hex digits");
    memset(x->trace_id, 0, 16);
    if (unhex(tid, tl, x->trace_id + (32 - tl) / 2) || unhex(sid, 16, x->parent_id))
        return fail(why, "non-hex digit in a B3 id");
    if (all_zero(x->trace_id, 16) || all_zero(x->parent_id, 8))
        return fail(why, "all-zero B3 id");
    x->has_parent = 1;
    return 0;
}

static int parse_b3_single(const char *s, sp_tc *t, const char **why)
{
    const char *f[4];
    size_t fl[4];
    int nf = 0;
    const char *p = s;
    for (;;) {
        const char *d = strchr(p, '-');
        if (nf == 4)
            return fail(why, "B3 header with more than four fields");
        f[nf] = p;
        fl[nf] = d ? (size_t)(d - p) : strlen(p);
        nf++;
        if (!d)
            break;
        p = d + 1;
    }
    sp_tc x;
    memset(&x, 0, sizeof x);
    if (nf == 1) /* sampling only: no ids to join */
        return fail(why, "B3 header with a sampling decision only (no ids)");
    if (b3_ids(f[0], fl[0], f[1], fl[1], &x, why))
        return -1;
    x.flags = 1; /* absent: defer, which we read as sampled */
    if (nf >= 3 && b3_flag(f[2], fl[2], &x.flags))
        return fail(why, "B3 sampling field is not 0, 1 or d");
    *t = x;
    return 0;
}

int sp_tc_parse(const char *s, sp_tc *t, const char **why)
{
    if (!s || !*s)
        return fail(why, "empty header");
    size_t n = strlen(s);
    if (n >= 55 && s[2] == '-' && s[35] == '-')
        return parse_w3c(s, t, why);
    return parse_b3_single(s, t, why);
}

int sp_tc_parse_b3(const char *trace_id, const char *span_id, const char *sampled, sp_tc *t,
                   const char **why)
{
    if (!trace_id || !span_id)
        return fail(why, "X-B3-TraceId and X-B3-SpanId are both needed");
    sp_tc x;
    memset(&x, 0, sizeof x);
    if (b3_ids(trace_id, strlen(trace_id), span_id, strlen(span_id), &x, why))
        return -1;
    x.flags = 1;
    if (sampled && *sampled && b3_flag(sampled, strlen(sampled), &x.flags))
        return fail(why, "X-B3-Sampled is not 0, 1, true or false");
    *t = x;
    return 0;
}

void sp_tc_format(const uint8_t trace_id[16], const uint8_t span_id[8], uint8_t flags, char *out,
                  size_t len)
{
    static const char hx[] = "0123456789abcdef";
    char s[56];
    memcpy(s, "00-", 3);
    for (int i = 0; i < 16; i++) {
        s[3 + 2 * i] = hx[trace_id[i] >> 4];
        s[4 + 2 * i] = hx[trace_id[i] & 15];
    }
    s[35] = '-';
    for (int i = 0; i < 8; i++) {
        s[36 + 2 * i] = hx[span_id[i] >> 4];
        s[37 + 2 * i] = hx[span_id[i] & 15];
    }
    s[52] = '-';
    s[53] = hx[flags >> 4];
    s[54] = hx[flags & 15];
    s[55] = 0;
    if (len)
        snprintf(out, len, "%s", s);
}

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static void put64(uint8_t *out, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(v >> (56 - 8 * i));
}

void sp_tc_span_id(uint64_t seed, const uint8_t trace_id[16], const char *rid, size_t rid_len,
                   int ph, uint8_t out[8])
{
    uint64_t h = fnv(14695981039346656037ULL ^ seed, trace_id, 16);
    h = fnv(h, rid, rid_len);
    uint8_t p = (uint8_t)ph;
    h = mix(fnv(h, &p, 1) ^ seed);
    if (!h)
        h = 1; /* an all-zero span id is invalid */
    put64(out, h);
}

void sp_tc_auto_trace_id(uint64_t seed, const char *rid, size_t rid_len, uint8_t out[16])
{
    uint64_t h = fnv(14695981039346656037ULL, &seed, sizeof seed);
    h = fnv(h, rid, rid_len);
    put64(out, mix(h ^ 0x5ca1ab1e));
    put64(out + 8, mix(h + 0x9e3779b97f4a7c15ULL) | 1); /* never all zero */
}

int sp_tc_ratio_sampled(const uint8_t trace_id[16], double ratio)
{
    if (ratio >= 1)
        return 1;
    if (ratio <= 0)
        return 0;
    uint64_t x = 0;
    for (int i = 8; i < 16; i++)
        x = x << 8 | trace_id[i];
    return (double)(x >> 1) < ratio * 9223372036854775808.0;
}
