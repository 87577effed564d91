/* SPDX-License-Identifier: Apache-2.0 */
/*
 * msgdec.c — the reference collector's message text turned into the args
 * members a native record of the same content gets. Writer thread.
 *
 * The drop-in library (dropin/) copies each message as given into the
 * record (SP_TAG_MSG, rec_format.h); here, off the hot path, it becomes
 * `,"key":value` members that argbuild.c's caller wraps as `{"type":N...}`:
 * one path turns both native attributes and foreign messages into args.
 *
 * Two forms come in (docs/dropin.md):
 *  - JSON object text: what the reference's Python package (json.dumps of
 *    its attribute dict) and its current C++ header (`{"key":value,...}`)
 *    pass to MarkEventEx / SpanEndEx;
 *  - the legacy `^key^:value,` text of older headers (MarkEvent,
 *    MarkSpanAttr): `^` stands for `"`, no braces, a trailing comma. It is
 *    rewritten the way the parser reads the legacy Mstx table
 *    (docs/parse.md): `^` -> `"`, trailing comma dropped, wrapped in {}.
 *
 * Normalization, so that the stored args equal a native record's byte for
 * byte: "type" leaves the members (the writer puts it first, as for native
 * records); "name" and "domain" leave them too when the record takes its
 * name and domain from the message; strings are decoded (\uXXXX included)
 * and re-escaped by sp_json_str; integers that fit int64 are printed by
 * sp_json_int, other numbers by sp_json_double (so 3.0 reads "3", as a
 * native double does); NaN / Infinity (Python's json.dumps writes them)
 * become null as native doubles do; white space goes. Integers too big for
 * int64 are kept as written (valid JSON).
 *
 * Bad text never fails a record: the members read before the fault are
 * kept, then `"raw":` the whole text as a JSON string, and m->malformed is
 * set (the writer counts it in Meta bad_input). Nesting is bounded
 * (SP_MAX_NESTING), every loop is bounded by the text's length.
 *
 * The decoder is a small recursive-descent scanner rather than jansson: it
 * runs once per record on the writer thread, whose budget at 1 M records/s
 * is ~1 us per record for everything, and it must rewrite (not just
 * validate) the text. servprof__msg_fuzz checks its output with jansson.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "argbuild.h"
#include "ext.h"
#include "internal.h"
#include "msgdec.h"
#include "rec_format.h"

void sp_msg_reset(sp_msg *m)
{
    m->present = m->take = m->malformed = 0;
    m->has_name = m->has_domain = 0;
    m->type = -1;
}

void sp_msg_free(sp_msg *m)
{
    sp_sb_free(&m->name);
    sp_sb_free(&m->domain);
    sp_sb_free(&m->text);
    sp_sb_free(&m->key);
    sp_sb_free(&m->val);
    sp_sb_free(&m->str);
    sp_msg_reset(m);
}

/* ------------------------------------------------------------------ */
/* The scanner                                                          */
/* ------------------------------------------------------------------ */

/* sp_sb_put, inline when the buffer has room (the common case: the
 * decoder reserves room for the whole text first). */
static inline void put(sp_sbuf *b, const char *s, size_t n)
{
    if (__builtin_expect(b->len + n + 1 <= b->cap && !b->oom, 1)) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    } else {
        sp_sb_put(b, s, n);
    }
}

typedef struct scan {
    const char *p, *end;
    sp_sbuf *str; /* a decoded string */
} scan;

static void skip_ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static void put_utf8(sp_sbuf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    put(b, u, n);
}

/* A \u escape at s->p (after the backslash and 'u'): one code point, a
 * surrogate pair joined; a lone surrogate reads as U+FFFD. */
static int unicode_escape(scan *s, sp_sbuf *out)
{
    unsigned cp, lo;
    if (s->end - s->p < 4 || hex4(s->p, &cp))
        return -1;
    s->p += 4;
    if (cp >= 0xD800 && cp < 0xDC00 && s->end - s->p >= 6 && s->p[0] == '\\' &&
        s->p[1] == 'u' && !hex4(s->p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
        s->p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp >= 0xD800 && cp < 0xE000) {
        cp = 0xFFFD;
    }
    put_utf8(out, cp);
    return 0;
}

/* A string at s->p (at its opening quote), decoded into out (cleared
 * first). Raw control bytes are accepted (the legacy text does not escape
 * values); sp_json_str escapes them again. */
static int read_string(scan *s, sp_sbuf *out)
{
    sp_sb_clear(out);
    if (s->p >= s->end || *s->p != '"')
        return -1;
    s->p++;
    const char *run = s->p;
    while (s->p < s->end) {
        char c = *s->p;
        if (c == '"') {
            put(out, run, (size_t)(s->p - run));
            s->p++;
            return 0;
        }
        if (c != '\\') {
            s->p++;
            continue;
        }
        put(out, run, (size_t)(s->p - run));
        if (s->end - s->p < 2)
            return -1;
        char e = s->p[1];
        s->p += 2;
        switch (e) {
        case '"': put(out, "\"", 1); break;
        case '\\': put(out, "\\", 1); break;
        case '/': put(out, "/", 1); break;
        case 'b': put(out, "\b", 1); break;
        case 'f': put(out, "\f", 1); break;
        case 'n': put(out, "\n", 1); break;
        case 'r': put(out, "\r", 1); break;
        case 't': put(out, "\t", 1); break;
        case 'u':
            if (unicode_escape(s, out))
                return -1;
            break;
        default:
            return -1;
        }
        run = s->p;
    }
    return -1; /* no closing quote */
}

/* A string at s->p with no escape, no control byte and no byte >= 0x80
 * is already what sp_json_str would write: copied as it stands, quotes
 * included. Returns 0 (and moves nothing) for any other string. */
static int copy_plain_string(scan *s, sp_sbuf *out)
{
    const char *q = s->p + 1;
    while (q < s->end) {
        unsigned char c = (unsigned char)*q;
        if (c == '"') {
            q++;
            put(out, s->p, (size_t)(q - s->p));
            s->p = q;
            return 1;
        }
        if (c == '\\' || c < 0x20 || c >= 0x80)
            return 0;
        q++;
    }
    return 0;
}

/* A string written as JSON to out: as it stands when plain, else decoded
 * and escaped again the way native strings are. */
static int copy_string(scan *s, sp_sbuf *out)
{
    if (s->p < s->end && *s->p == '"' && copy_plain_string(s, out))
        return 0;
    if (read_string(s, s->str))
        return -1;
    sp_json_str(out, s->str->p ? s->str->p : "", s->str->len);
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int literal(scan *s, const char *word, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
        return 0;
    s->p += n;
    return 1;
}

/* A number (JSON grammar), printed the way a native attribute prints. */
static int read_number(scan *s, sp_sbuf *out)
{
    const char *start = s->p;
    int integral = 1;
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (literal(s, "Infinity", 8)) { /* Python's json.dumps(float('-inf')) */
        put(out, "null", 4);
        return 0;
    }
    if (s->p >= s->end || !is_digit(*s->p))
        return -1;
    if (*s->p == '0')
        s->p++;
    else
        while (s->p < s->end && is_digit(*s->p))
            s->p++;
    if (s->p < s->end && *s->p == '.') {
        integral = 0;
        s->p++;
        if (s->p >= s->end || !is_digit(*s->p))
            return -1;
        while (s->p < s->end && is_digit(*s->p))
            s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        integral = 0;
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (s->p >= s->end || !is_digit(*s->p))
            return -1;
        while (s->p < s->end && is_digit(*s->p))
            s->p++;
    }
    size_t n = (size_t)(s->p - start);
    char small[64], *tmp = small;
    if (n >= sizeof small) { /* a long literal: read from the scratch string */
        sp_sb_clear(s->str);
        put(s->str, start, n);
        tmp = (char *)sp_sb_cstr(s->str);
        if (s->str->oom)
            return -1;
    } else {
        memcpy(small, start, n);
        small[n] = 0;
    }
    size_t digits = n - (tmp[0] == '-');
    if (integral && digits <= 18) {
        /* Up to 18 digits always fit int64 and print as written (JSON has
         * no leading zeros), but for "-0". */
        if (strcmp(tmp, "-0") != 0)
            put(out, start, n);
        else
            sp_json_int(out, 0);
        return 0;
    }
    if (!isfinite(strtod(tmp, NULL))) {
        put(out, "null", 4); /* 1e999: no double holds it; as a native inf */
        return 0;
    }
    if (integral) { /* 19 digits or more: int64 when it fits */
        char *e;
        long long v = strtoll(tmp, &e, 10);
        if ((v == LLONG_MAX || v == LLONG_MIN) && strcmp(tmp, v < 0 ? "-9223372036854775808"
                                                                     : "9223372036854775807")) {
            put(out, start, n); /* beyond int64: as written */
            return 0;
        }
        sp_json_int(out, v);
        return 0;
    }
    sp_json_double(out, strtod(tmp, NULL));
    return 0;
}

static int read_value(scan *s, sp_sbuf *out, int depth);

/* An object or array at s->p, written compactly to out. */
static int read_container(scan *s, sp_sbuf *out, int depth)
{
    if (depth >= SP_MAX_NESTING)
        return -1;
    char close = *s->p == '{' ? '}' : ']';
    int is_obj = close == '}';
    put(out, s->p, 1);
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        put(out, &close, 1);
        return 0;
    }
    for (;;) {
        skip_ws(s);
        if (is_obj) {
            if (copy_string(s, out))
                return -1;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return -1;
            s->p++;
            put(out, ":", 1);
            skip_ws(s);
        }
        if (read_value(s, out, depth + 1))
            return -1;
        skip_ws(s);
        if (s->p >= s->end)
            return -1;
        if (*s->p == close) {
            s->p++;
            put(out, &close, 1);
            return 0;
        }
        if (*s->p != ',')
            return -1;
        s->p++;
        put(out, ",", 1);
    }
}

static int read_value(scan *s, sp_sbuf *out, int depth)
{
    skip_ws(s);
    if (s->p >= s->end)
        return -1;
    switch (*s->p) {
    case '"':
        return copy_string(s, out);
    case '{':
    case '[':
        return read_container(s, out, depth);
    case 't':
        if (!literal(s, "true", 4))
            return -1;
        put(out, "true", 4);
        return 0;
    case 'f':
        if (!literal(s, "false", 5))
            return -1;
        put(out, "false", 5);
        return 0;
    case 'n':
        if (!literal(s, "null", 4))
            return -1;
        put(out, "null", 4);
        return 0;
    case 'N':
        if (!literal(s, "NaN", 3)) /* Python's json.dumps(float('nan')) */
            return -1;
        put(out, "null", 4);
        return 0;
    case 'I':
        if (!literal(s, "Infinity", 8))
            return -1;
        put(out, "null", 4);
        return 0;
    default:
        return read_number(s, out);
    }
}

/* ------------------------------------------------------------------ */
/* A message                                                            */
/* ------------------------------------------------------------------ */

/* The legacy `^key^:value,` text as JSON object text, in m->text. */
static void legacy_to_json(sp_msg *m, const char *t, size_t n)
{
    sp_sb_clear(&m->text);
    if (n > 0 && t[n - 1] == ',')
        n--; /* the reference's parser drops the trailing comma */
    put(&m->text, "{", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] != '^') {
            run++;
            continue;
        }
        put(&m->text, t + i - run, run);
        put(&m->text, "\"", 1);
        run = 0;
    }
    put(&m->text, t + n - run, run);
    put(&m->text, "}", 1);
}

/* Whether the key decoded into m->key names a member taken out of the
 * args ("type"; "name" and "domain" when the record takes them). */
static int is_special(const sp_msg *m, const char *k, size_t kn)
{
    return (kn == 4 && !memcmp(k, "type", 4)) ||
           (m->take && ((kn == 4 && !memcmp(k, "name", 4)) || (kn == 6 && !memcmp(k, "domain", 6))));
}

/* A special member whose value starts at vstart (its normalized text in
 * m->val). Returns 1 when it was taken out of the members; 0 when it
 * stays one after all (a name or domain that is not a string). */
static int special_member(sp_msg *m, const char *k, size_t kn, const char *vstart,
                          const char *end)
{
    if (kn == 4 && !memcmp(k, "type", 4)) {
        /* The writer writes "type" first, as for native records. */
        if (m->val.len == 1 && m->val.p[0] >= '0' && m->val.p[0] <= '3')
            m->type = m->val.p[0] - '0';
        return 1;
    }
    if (!m->take || *vstart != '"')
        return 0;
    sp_sbuf *dst = NULL;
    if (kn == 4 && !memcmp(k, "name", 4)) {
        dst = &m->name;
        m->has_name = 1;
    } else if (kn == 6 && !memcmp(k, "domain", 6)) {
        dst = &m->domain;
        m->has_domain = 1;
    }
    if (!dst)
        return 0;
    scan again = {vstart, end, dst};
    if (read_string(&again, dst)) /* cannot fail: it was read once */
        sp_sb_clear(dst);
    size_t cn;
    sp_sbuf tmp = {0};
    const char *clean = sp_utf8_clean(&tmp, dst->p ? dst->p : "", dst->len, &cn);
    if (clean != dst->p && dst->len) {
        sp_sb_clear(dst);
        put(dst, clean, cn);
    }
    sp_sb_free(&tmp);
    sp_sb_cstr(dst);
    return 1;
}

void sp_msg_decode(sp_msg *m, sp_sbuf *b, const char *t, size_t n)
{
    m->present = 1;
    const char *orig = t;
    size_t orig_n = n;
    while (n && (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')) {
        t++;
        n--;
    }
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t' || t[n - 1] == '\n' || t[n - 1] == '\r'))
        n--;
    if (n == 0)
        return; /* no attributes (the Python package sends "" then) */
    sp_sb_reserve(b, n + 16); /* room for about the whole text, once */
    if (t[0] != '{') {
        legacy_to_json(m, t, n);
        t = m->text.p;
        n = m->text.len;
        if (m->text.oom)
            goto bad;
    }
    scan s = {t + 1, t + n, &m->str};
    skip_ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
    } else {
        for (;;) {
            skip_ws(&s);
            /* the key: as it stands when plain (no escape, printable
             * ASCII), else decoded into m->key */
            const char *k = NULL;
            size_t kn = 0;
            int plain_key = 0;
            if (s.p < s.end && *s.p == '"') {
                const char *q = s.p + 1;
                while (q < s.end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20 &&
                       (unsigned char)*q < 0x80)
                    q++;
                if (q < s.end && *q == '"') {
                    plain_key = 1;
                    k = s.p + 1;
                    kn = (size_t)(q - k);
                    s.p = q + 1;
                }
            }
            if (!plain_key) {
                if (read_string(&s, &m->key))
                    goto bad;
                k = m->key.p ? m->key.p : "";
                kn = m->key.len;
            }
            skip_ws(&s);
            if (s.p >= s.end || *s.p != ':')
                goto bad;
            s.p++;
            skip_ws(&s);
            const char *vstart = s.p;
            size_t member_at = b->len;
            if (is_special(m, k, kn)) {
                sp_sb_clear(&m->val);
                if (read_value(&s, &m->val, 1))
                    goto bad;
                if (!special_member(m, k, kn, vstart, s.end)) {
                    put(b, ",", 1);
                    sp_json_str(b, k, kn);
                    put(b, ":", 1);
                    put(b, m->val.p, m->val.len);
                }
            } else if (plain_key) { /* the common case: straight into b */
                b->len = member_at;
                put(b, ",", 1);
                put(b, k - 1, kn + 2);
                put(b, ":", 1);
                if (read_value(&s, b, 1)) {
                    b->len = member_at;
                    goto bad;
                }
            } else {
                put(b, ",", 1);
                sp_json_str(b, k, kn);
                put(b, ":", 1);
                if (read_value(&s, b, 1)) {
                    b->len = member_at; /* no half member */
                    goto bad;
                }
            }
            skip_ws(&s);
            if (s.p >= s.end)
                goto bad;
            if (*s.p == '}') {
                s.p++;
                break;
            }
            if (*s.p != ',')
                goto bad;
            s.p++;
        }
    }
    skip_ws(&s);
    if (s.p == s.end)
        return;
bad:
    m->malformed = 1;
    put(b, ",\"raw\":", 7);
    sp_json_str(b, orig, orig_n);
}

int sp_msg_take(sp_msg *m, sp_sbuf *b, const uint8_t **pp, const uint8_t *end)
{
    const uint8_t *p = *pp;
    if (p >= end || *p != SP_TAG_MSG)
        return 0;
    p++;
    uint16_t kn, vn;
    if (end - p < 2)
        return -1;
    memcpy(&kn, p, 2);
    p += 2;
    if ((size_t)(end - p) < (size_t)kn + 2)
        return -1;
    m->take = kn > 0 && p[0] == 'x';
    p += kn;
    memcpy(&vn, p, 2);
    p += 2;
    if ((size_t)(end - p) < vn)
        return -1;
    sp_msg_decode(m, b, (const char *)p, vn);
    *pp = p + vn;
    return 1;
}

int sp_msg_apply(sp_msg *m, int is_event, const char **name, size_t *nl, const char **cat,
                 size_t *cl, int *type)
{
    if (!m->present)
        return 1;
    if (m->take && m->has_name && m->name.len) {
        *name = m->name.p;
        *nl = m->name.len;
    }
    if (m->take && m->has_domain && m->domain.len) {
        const sp_domain_filter *f = atomic_load_explicit(&sp__domain_filter,
                                                         memory_order_acquire);
        if (!sp_domain_pass(f, m->domain.p))
            return 0;
        *cat = m->domain.p;
        *cl = m->domain.len;
    }
    if (is_event && m->type >= 0)
        *type = m->type;
    return 1;
}

/* ------------------------------------------------------------------ */
/* The fuzz entry (ext.h)                                               */
/* ------------------------------------------------------------------ */

int servprof__msg_fuzz(const uint8_t *data, size_t size)
{
    for (int take = 0; take < 2; take++) {
        sp_msg m = {0};
        sp_sbuf b = {0};
        sp_msg_reset(&m);
        m.take = take;
        put(&b, "{\"type\":0", 9);
        sp_msg_decode(&m, &b, (const char *)data, size);
        put(&b, "}", 1);
        if (!b.oom) {
            json_error_t err;
            json_t *j = json_loadb(b.p, b.len, JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &err);
            /* jansson refuses "\u0000" in a key, which JSON allows (and a
             * key of the message may hold) */
            if (!j && !strstr(err.text, "NUL byte in object key"))
                abort(); /* the decoder wrote text that is not JSON */
            json_decref(j);
        }
        if ((m.has_name && !m.name.p) || (m.has_domain && !m.domain.p))
            abort();
        sp_sb_free(&b);
        sp_msg_free(&m);
    }
    return 0;
}
