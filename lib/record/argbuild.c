/* SPDX-License-Identifier: Apache-2.0 */
/*
 * argbuild.c — the `args` JSON text, built on the writer thread.
 *
 * The calling thread only copied bytes (rec_format.h); this file turns the
 * attribute stream into JSON members in the order the caller gave them.
 * Three promises to the parser (docs/api.md, "The raw store"):
 *  - the text is always valid JSON: strings are escaped, and bytes that are
 *    not valid UTF-8 become U+FFFD (\ufffd), one per bad byte, so a reader
 *    sees where the damage was; overlong forms, surrogates and code points
 *    past U+10FFFF count as invalid;
 *  - numbers are exact and short: integers in full, doubles as the shortest
 *    %.*g text (15, 16, then 17 digits) that reads back to the same double,
 *    so 0.5 is "0.5" and 0.1 is "0.1"; NaN and infinities become null;
 *  - servprof_attr_json text is parsed with jansson and embedded as given
 *    when it is one valid JSON value, else stored as a JSON string.
 * The writer thread switches itself to the "C" locale (writer.c), so %g
 * always prints a '.'.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argbuild.h"
#include "rec_format.h"

/* ------------------------------------------------------------------ */
/* sp_sbuf                                                              */
/* ------------------------------------------------------------------ */

static int grow(sp_sbuf *b, size_t need)
{
    if (b->oom)
        return 0;
    if (b->len + need + 1 <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + need + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void sp_sb_free(sp_sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void sp_sb_put(sp_sbuf *b, const char *s, size_t n)
{
    if (n && grow(b, n)) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    }
}

void sp_sb_reserve(sp_sbuf *b, size_t n)
{
    (void)grow(b, n);
}

static inline void putc_(sp_sbuf *b, char c)
{
    if (b->len + 2 <= b->cap || grow(b, 1))
        b->p[b->len++] = c;
}

const char *sp_sb_cstr(sp_sbuf *b)
{
    if (!grow(b, 0))
        return "";
    b->p[b->len] = 0;
    return b->p;
}

/* ------------------------------------------------------------------ */
/* Scalars                                                              */
/* ------------------------------------------------------------------ */

size_t sp_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    if (c < 0xC2 || c > 0xF4)
        return 0; /* continuation byte, overlong 2-byte lead, or past U+10FFFF */
    size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if (c == 0xE0 && s[1] < 0xA0)
        return 0; /* overlong 3-byte */
    if (c == 0xED && s[1] >= 0xA0)
        return 0; /* UTF-16 surrogate */
    if (c == 0xF0 && s[1] < 0x90)
        return 0; /* overlong 4-byte */
    if (c == 0xF4 && s[1] >= 0x90)
        return 0; /* past U+10FFFF */
    return len;
}

void sp_json_str(sp_sbuf *b, const char *str, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    if (!grow(b, n + 2))
        return;
    putc_(b, '"');
    size_t run = 0; /* bytes copied verbatim, flushed in one memcpy */
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            run++;
            i++;
            continue;
        }
        size_t ulen = c >= 0x80 ? sp_utf8_len(s + i, n - i) : 0;
        if (ulen) {
            run += ulen;
            i += ulen;
            continue;
        }
        sp_sb_put(b, (const char *)s + i - run, run);
        run = 0;
        char esc[8];
        size_t el = 2;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            if (c < 0x20) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                el = 6;
            } else {
                memcpy(esc, "\\ufffd", 6); /* not valid UTF-8 */
                el = 6;
            }
        }
        sp_sb_put(b, esc, el);
        i++;
    }
    sp_sb_put(b, (const char *)s + n - run, run);
    putc_(b, '"');
}

const char *sp_utf8_clean(sp_sbuf *tmp, const char *str, size_t n, size_t *out_n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        size_t l = s[i] < 0x80 ? 1 : sp_utf8_len(s + i, n - i);
        if (!l)
            break;
        i += l;
    }
    *out_n = n;
    if (i == n)
        return str;
    sp_sb_clear(tmp);
    sp_sb_put(tmp, str, i);
    while (i < n) {
        size_t l = s[i] < 0x80 ? 1 : sp_utf8_len(s + i, n - i);
        if (l) {
            sp_sb_put(tmp, (const char *)s + i, l);
            i += l;
        } else {
            sp_sb_put(tmp, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
    *out_n = tmp->len;
    return sp_sb_cstr(tmp);
}

void sp_json_int(sp_sbuf *b, int64_t v)
{
    char tmp[24];
    char *e = tmp + sizeof tmp, *q = e;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--q = '-';
    sp_sb_put(b, q, (size_t)(e - q));
}

void sp_json_double(sp_sbuf *b, double v)
{
    if (!isfinite(v)) {
        sp_sb_put(b, "null", 4);
        return;
    }
    /* Integral values print as integers ("3", not "3.0"), as a JSON reader
     * reads them back to the same double either way. */
    /* The range test first: converting a double beyond int64_t is
     * undefined behaviour (clang's float-cast-overflow check). */
    if (fabs(v) < 9007199254740992.0 && v == (double)(int64_t)v) {
        if (v == 0 && signbit(v))
            sp_sb_put(b, "-0.0", 4);
        else
            sp_json_int(b, (int64_t)v);
        return;
    }
    char tmp[32];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    sp_sb_put(b, tmp, (size_t)n);
}

/* ------------------------------------------------------------------ */
/* The attribute stream                                                 */
/* ------------------------------------------------------------------ */

typedef struct reader {
    const uint8_t *p, *end;
    int bad; /* ran past end */
} reader;

static const uint8_t *take(reader *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        r->bad = 1;
        r->p = r->end;
        return NULL;
    }
    const uint8_t *q = r->p;
    r->p += n;
    return q;
}

static uint16_t take_u16(reader *r)
{
    const uint8_t *q = take(r, 2);
    uint16_t v = 0;
    if (q)
        memcpy(&v, q, 2);
    return v;
}

static const char *take_str(reader *r, size_t *n)
{
    *n = take_u16(r);
    const char *s = (const char *)take(r, *n);
    if (!s)
        *n = 0;
    return s ? s : "";
}

/* Embeds text that must be one JSON value; else a JSON string (counted). */
static void json_value(sp_sbuf *b, const char *s, size_t n, uint64_t *bad_json)
{
    json_error_t err;
    json_t *j = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (j) {
        json_decref(j);
        /* Trim surrounding white space so the stored text stays compact. */
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t' || s[n - 1] == '\r'))
            n--;
        while (n && (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')) {
            s++;
            n--;
        }
        sp_sb_put(b, s, n);
    } else {
        (*bad_json)++;
        sp_json_str(b, s, n);
    }
}

int sp_args_members(sp_sbuf *b, const uint8_t **pp, const uint8_t *end, uint64_t *bad_json)
{
    reader r = {*pp, end, 0};
    /* Per open container: is it an array, and has it a member yet. Level 0
     * is the args object, opened by the caller, which already holds "type". */
    char is_array[SP_MAX_NESTING + 1] = {0};
    char has_member[SP_MAX_NESTING + 1] = {1};
    int depth = 0;
    for (;;) {
        const uint8_t *t = take(&r, 1);
        if (!t)
            break;
        uint8_t tag = *t;
        if (tag == SP_TAG_STOP)
            break;
        if (tag == SP_TAG_END) {
            if (depth > 0) {
                putc_(b, is_array[depth] ? ']' : '}');
                depth--;
            }
            continue;
        }
        size_t kn;
        const char *key = take_str(&r, &kn);
        if (has_member[depth])
            putc_(b, ',');
        has_member[depth] = 1;
        if (!is_array[depth]) {
            if (tag == SP_TAG_SCOPE) {
                sp_sbuf tmp = {0};
                sp_sb_put(&tmp, "scope#", 6);
                sp_sb_put(&tmp, key, kn);
                sp_json_str(b, tmp.p ? tmp.p : "", tmp.len);
                sp_sb_free(&tmp);
            } else if (tag == SP_TAG_GAUGE || tag == SP_TAG_INC) {
                sp_sbuf tmp = {0};
                sp_sb_put(&tmp, key, kn);
                sp_sb_put(&tmp, tag == SP_TAG_GAUGE ? "=" : "+", 1);
                sp_json_str(b, tmp.p ? tmp.p : "", tmp.len);
                sp_sb_free(&tmp);
            } else {
                sp_json_str(b, key, kn);
            }
            putc_(b, ':');
        }
        switch (tag) {
        case SP_TAG_STR:
        case SP_TAG_SCOPE: {
            size_t n;
            const char *s = take_str(&r, &n);
            sp_json_str(b, s, n);
            break;
        }
        case SP_TAG_JSON: {
            size_t n;
            const char *s = take_str(&r, &n);
            json_value(b, s, n, bad_json);
            break;
        }
        case SP_TAG_INT: {
            const uint8_t *q = take(&r, 8);
            int64_t v = 0;
            if (q)
                memcpy(&v, q, 8);
            sp_json_int(b, v);
            break;
        }
        case SP_TAG_DOUBLE:
        case SP_TAG_GAUGE:
        case SP_TAG_INC: {
            const uint8_t *q = take(&r, 8);
            double v = 0;
            if (q)
                memcpy(&v, q, 8);
            sp_json_double(b, v);
            break;
        }
        case SP_TAG_BOOL: {
            const uint8_t *q = take(&r, 1);
            if (q && *q)
                sp_sb_put(b, "true", 4);
            else
                sp_sb_put(b, "false", 5);
            break;
        }
        case SP_TAG_INT_ARR:
        case SP_TAG_DBL_ARR: {
            const uint8_t *q = take(&r, 4);
            uint32_t cnt = 0;
            if (q)
                memcpy(&cnt, q, 4);
            const uint8_t *v = take(&r, (size_t)cnt * 8);
            putc_(b, '[');
            for (uint32_t i = 0; v && i < cnt; i++) {
                if (i)
                    putc_(b, ',');
                if (tag == SP_TAG_INT_ARR) {
                    int64_t x;
                    memcpy(&x, v + 8 * i, 8);
                    sp_json_int(b, x);
                } else {
                    double x;
                    memcpy(&x, v + 8 * i, 8);
                    sp_json_double(b, x);
                }
            }
            putc_(b, ']');
            break;
        }
        case SP_TAG_ARR:
        case SP_TAG_OBJ:
            if (depth == SP_MAX_NESTING) { /* the producer never nests deeper */
                r.bad = 1;
                break;
            }
            depth++;
            is_array[depth] = tag == SP_TAG_ARR;
            has_member[depth] = 0;
            putc_(b, tag == SP_TAG_ARR ? '[' : '{');
            break;
        default:
            r.bad = 1;
        }
        if (r.bad)
            break;
    }
    while (depth > 0) { /* unclosed containers close with the record */
        putc_(b, is_array[depth] ? ']' : '}');
        depth--;
    }
    *pp = r.p;
    return r.bad ? -1 : 0;
}
