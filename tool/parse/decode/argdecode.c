/* SPDX-License-Identifier: Apache-2.0 */
/*
 * argdecode.c — decodes a record's `args` JSON for the keys the reports need.
 *
 * This is the parser's hot loop (every record passes here), so it is a
 * hand-written single-pass scanner over the text SQLite hands us: no
 * allocation, no tree, strings are returned as (pointer, length) slices of
 * the input and unescaped only when copied. Members the reports do not use
 * are skipped but still checked, so `valid` tells the timeline whether the
 * text can be copied verbatim into chrome_tracing.json.
 *
 * Values may come as numbers or as numeric strings (older writers quoted
 * everything); both are accepted for numeric keys. Which keys are read,
 * and into which field of prs_args, is one table ("the keys" below).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "argdecode.h"
#include "fmt.h"
#include "reqtokens.h"
#include "xalloc.h"


/* The decoder's state; range counts the values out of range (NULL: not
 * counted), see bounded(). */
typedef struct J { const char *p, *e; int err; long long *range; } J;

/* Most calls find no whitespace at all: one test settles them (every
 * JSON whitespace byte is <= ' '). */
static inline void ws(J *j)
{
    while (j->p < j->e && (unsigned char)*j->p <= ' ' &&
           (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r'))
        j->p++;
}

/* Consumes c, after whitespace if any; 1 if it was there. Compact JSON
 * (every writer's) has the byte right here: no whitespace scan then. */
static inline int take(J *j, char c)
{
    if (j->p < j->e && *j->p == c) {
        j->p++;
        return 1;
    }
    ws(j);
    if (j->p < j->e && *j->p == c) {
        j->p++;
        return 1;
    }
    return 0;
}

/* Bytes that end the fast scan of a string: the quote, a backslash,
 * control characters (invalid inside a JSON string) and non-ASCII bytes,
 * whose UTF-8 is checked (a trace with invalid UTF-8 does not load). */
#define X16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
static const unsigned char stop[256] = {
    X16(1), X16(1), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20: '"' */
    X16(0), X16(0), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x5c: '\\' */
    X16(0), X16(0),
    X16(1), X16(1), X16(1), X16(1), X16(1), X16(1), X16(1), X16(1),
};

static int hexval(unsigned char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Length of the escape at p ('\\' then one of "\\/bfnrt or uXXXX), 0 if
 * malformed or cut short. */
static int escape_len(const unsigned char *p, const unsigned char *e)
{
    if (e - p < 2)
        return 0;
    switch (p[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': return 2;
    case 'u':
        if (e - p < 6)
            return 0;
        for (int i = 2; i < 6; i++)
            if (hexval(p[i]) < 0)
                return 0;
        return 6;
    default: return 0;
    }
}

static int str(J *j, prs_str *out)
{
    if (j->p >= j->e || *j->p != '"')
        return j->err = 1, 0;
    const char *s = ++j->p;
    const unsigned char *p = (const unsigned char *)s, *e = (const unsigned char *)j->e;
    int esc = 0;
    for (;;) {
        while (p < e && !stop[*p])
            p++;
        if (p >= e || *p < 0x20)
            return j->err = 1, 0;
        if (*p == '"')
            break;
        if (*p == '\\') {
            /* Escapes are checked here, so that a text called valid can be
             * copied verbatim into chrome_tracing.json and prs_str_copy()
             * never meets a malformed one. */
            esc = 1;
            int n = escape_len(p, e);
            if (!n)
                return j->err = 1, 0;
            p += n;
            continue;
        }
        int n = prs_utf8_len((const char *)p, (const char *)e);
        if (!n)
            return j->err = 1, 0;
        p += n;
    }
    j->p = (const char *)p;
    out->p = s;
    out->n = (int)(j->p - s);
    out->esc = esc;
    j->p++;
    return 1;
}

/* An object member's key and its ':' (whitespace allowed between). 0, with
 * err set, when either is missing. */
static int key(J *j, prs_str *k)
{
    if (!str(j, k))
        return 0;
    ws(j);
    if (j->p >= j->e || *j->p != ':')
        return j->err = 1, 0;
    j->p++;
    return 1;
}

static double pow10i(int e)
{
    static const double t[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                               1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
    return e <= 18 ? t[e] : 1e18 * pow10i(e - 18);
}

/* A JSON number; the fast path covers integers and plain decimals exactly
 * as strtod would for up to 15 significant digits. */
static int num(J *j, double *out, prs_str *raw)
{
    const char *s = j->p;
    int neg = 0;
    if (j->p < j->e && *j->p == '-')
        neg = 1, j->p++;
    if (j->p >= j->e || *j->p < '0' || *j->p > '9')
        return j->err = 1, 0;
    unsigned long long m = 0;
    int digits = 0, frac = 0;
    while (j->p < j->e && *j->p >= '0' && *j->p <= '9') {
        m = m * 10 + (unsigned)(*j->p++ - '0');
        digits++;
    }
    if (j->p < j->e && *j->p == '.') {
        j->p++;
        if (j->p >= j->e || *j->p < '0' || *j->p > '9')
            return j->err = 1, 0;
        while (j->p < j->e && *j->p >= '0' && *j->p <= '9') {
            m = m * 10 + (unsigned)(*j->p++ - '0');
            digits++;
            frac++;
        }
    }
    int expo = 0;
    if (j->p < j->e && (*j->p == 'e' || *j->p == 'E')) {
        expo = 1;
        j->p++;
        if (j->p < j->e && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (j->p >= j->e || *j->p < '0' || *j->p > '9')
            return j->err = 1, 0;
        while (j->p < j->e && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    if (raw) {
        raw->p = s;
        raw->n = (int)(j->p - s);
        raw->esc = 0;
    }
    if (expo || digits > 15) {
        char buf[64];
        int n = (int)(j->p - s);
        if (n > 63)
            n = 63;
        memcpy(buf, s, (size_t)n);
        buf[n] = 0;
        *out = strtod(buf, NULL);
    } else {
        double d = (double)m / pow10i(frac);
        *out = neg ? -d : d;
    }
    return 1;
}

static void skip(J *j, int depth);

static int lit(J *j, const char *w, int n)
{
    if (j->e - j->p < n || memcmp(j->p, w, (size_t)n) != 0)
        return j->err = 1, 0;
    j->p += n;
    return 1;
}

static void skip(J *j, int depth)
{
    if (depth > 64)
        return (void)(j->err = 1);
    ws(j);
    if (j->p >= j->e)
        return (void)(j->err = 1);
    prs_str s;
    double d;
    switch (*j->p) {
    case '"': str(j, &s); return;
    case 't': lit(j, "true", 4); return;
    case 'f': lit(j, "false", 5); return;
    case 'n': lit(j, "null", 4); return;
    case '{':
        j->p++;
        ws(j);
        if (j->p < j->e && *j->p == '}') {
            j->p++;
            return;
        }
        for (;;) {
            ws(j);
            if (!key(j, &s))
                return;
            skip(j, depth + 1);
            if (j->err)
                return;
            ws(j);
            if (j->p < j->e && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->e && *j->p == '}') {
                j->p++;
                return;
            }
            return (void)(j->err = 1);
        }
    case '[':
        j->p++;
        ws(j);
        if (j->p < j->e && *j->p == ']') {
            j->p++;
            return;
        }
        for (;;) {
            skip(j, depth + 1);
            if (j->err)
                return;
            ws(j);
            if (j->p < j->e && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->e && *j->p == ']') {
                j->p++;
                return;
            }
            return (void)(j->err = 1);
        }
    default: num(j, &d, NULL); return;
    }
}

/* Largest magnitude a numeric value may have: 2^53, beyond which a double
 * no longer holds every integer (no token count, block count or byte
 * count comes near it). Larger values and infinities are treated as
 * absent (NAN) and counted, so that no report ever converts an
 * unrepresentable double to an integer (undefined behaviour in C). */
#define NUM_LIMIT 9007199254740992.0

static double bounded(J *j, double d)
{
    if (isnan(d) || (d >= -NUM_LIMIT && d <= NUM_LIMIT))
        return d;
    if (j->range)
        (*j->range)++;
    return NAN;
}

/* An int-valued key (iter, type, scope#device, scope#cpu): -1 when absent,
 * and when out of int's range (counted). */
static int to_int(J *j, double d)
{
    if (isnan(d))
        return -1;
    if (d > -2147483649.0 && d < 2147483648.0)
        return (int)d;
    if (j->range)
        (*j->range)++;
    return -1;
}

static double numval_raw(J *j);

/* A numeric value, or a string holding a number; NAN when absent, not a
 * number or out of range (bounded()). */
static double numval(J *j)
{
    return bounded(j, numval_raw(j));
}

static double numval_raw(J *j)
{
    const char *p = j->p, *e = j->e;
    if (p < e && (unsigned)(*p - '0') < 10) {
        /* Fast path: a small non-negative integer (token counts, iters,
         * types) ended by ',' or '}' as compact JSON has it; exactly what
         * num() gives for it. At most 9 digits (no overflow); anything
         * else (more digits, a fraction, an exponent, whitespace) takes
         * the general path below. */
        const char *lim = e - p > 9 ? p + 9 : e, *q = p + 1;
        unsigned v = (unsigned)(*p - '0');
        while (q < lim && (unsigned)(*q - '0') < 10)
            v = v * 10 + (unsigned)(*q++ - '0');
        if (q < e && (*q == ',' || *q == '}')) {
            j->p = q;
            return (double)v;
        }
    }
    if (j->p < j->e && (unsigned char)*j->p <= ' ')
        ws(j);
    double d = NAN;
    if (j->p < j->e && *j->p == '"') {
        prs_str s;
        if (!str(j, &s))
            return NAN;
        char buf[64];
        int n = s.n < 63 ? s.n : 63;
        memcpy(buf, s.p, (size_t)n);
        buf[n] = 0;
        char *end;
        d = strtod(buf, &end);
        if (end == buf)
            d = NAN;
        return d;
    }
    if (j->p < j->e && *j->p >= '0' && *j->p <= '9') {
        /* Fast path: a small non-negative integer (token counts, iters,
         * types); exactly what num() gives for it. */
        unsigned v = 0;
        const char *q = j->p;
        while (q < j->e && *q >= '0' && *q <= '9' && q - j->p < 9)
            v = v * 10 + (unsigned)(*q++ - '0');
        if (q >= j->e || !((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E')) {
            j->p = q;
            return (double)v;
        }
    }
    if (j->p < j->e && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))) {
        num(j, &d, NULL);
        return d;
    }
    skip(j, 1);
    return NAN;
}

/* A string, or a number kept as its text (ids may be either). */
static void idval(J *j, prs_str *out)
{
    if (j->p < j->e && (unsigned char)*j->p <= ' ')
        ws(j);
    out->p = NULL;
    out->n = 0;
    out->esc = 0;
    if (j->p < j->e && *j->p == '"') {
        str(j, out);
    } else if (j->p < j->e && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))) {
        double d;
        num(j, &d, out);
    } else {
        skip(j, 1);
    }
}

/* The members of a rid entry the reports use, quoted, in the order writers
 * put them. A step's list repeats the same keys in the same order for
 * every entry, so the next key is guessed and compared as a literal (a
 * match is exactly the unescaped key); only a miss scans the string. */
enum { EK_RID, EK_ITER, EK_TYPE, EK_SCHED, EK_PROMPT, EK_COMPUTED, EK_SPEC, EK_N };
static const struct { const char *q; int n; } ekey[EK_N] = { /* n: the quoted key and ':' */
    {"\"rid\":", 6}, {"\"iter\":", 7}, {"\"type\":", 7}, {"\"num_scheduled_tokens\":", 23},
    {"\"num_prompt_tokens\":", 20}, {"\"num_computed_tokens\":", 22}, {"\"num_spec_output_tokens\":", 25},
};

/* The entry key at j->p and its ':': EK_* , EK_N for another key, -1 on
 * error. */
static int entry_key(J *j, int guess)
{
    if (guess < EK_N && j->e - j->p >= ekey[guess].n && !memcmp(j->p, ekey[guess].q, (size_t)ekey[guess].n)) {
        j->p += ekey[guess].n;
        return guess;
    }
    prs_str k;
    if (!key(j, &k))
        return -1;
    for (int i = 0; i < EK_N; i++)
        if (k.n == ekey[i].n - 3 && !memcmp(k.p, ekey[i].q + 1, (size_t)k.n))
            return i;
    return EK_N;
}

static void rid_entry(J *j, prs_args *a)
{
    if (a->nrids == a->caprids) {
        a->caprids = a->caprids ? a->caprids * 2 : 64;
        a->rids = prs_xrealloc(a->rids, (size_t)a->caprids * sizeof *a->rids);
    }
    prs_rident *r = &a->rids[a->nrids];
    memset(r, 0, sizeof *r);
    r->iter = r->type = -1;
    r->sched_tokens = r->prompt_tokens = r->computed_tokens = r->spec_tokens = NAN;
    ws(j);
    if (j->p < j->e && *j->p != '{') {
        idval(j, &r->rid);
        if (r->rid.p)
            a->nrids++;
        return;
    }
    j->p++;
    r->obj = 1;
    ws(j);
    if (j->p < j->e && *j->p == '}') {
        j->p++;
        return;
    }
    int guess = EK_RID;
    for (;;) {
        ws(j);
        int key = entry_key(j, guess);
        if (key < 0)
            return;
        guess = key + 1;
        switch (key) {
        case EK_RID: idval(j, &r->rid); break;
        case EK_ITER: r->iter = to_int(j, numval(j)); break;
        case EK_TYPE: r->type = to_int(j, numval(j)); break;
        case EK_SCHED: r->sched_tokens = numval(j); break;
        case EK_PROMPT: r->prompt_tokens = numval(j); break;
        case EK_COMPUTED: r->computed_tokens = numval(j); break;
        case EK_SPEC: r->spec_tokens = numval(j); break;
        default: skip(j, 2); break;
        }
        if (j->err)
            return;
        if (take(j, ','))
            continue;
        if (take(j, '}'))
            break;
        return (void)(j->err = 1);
    }
    if (r->rid.p)
        a->nrids++;
}

static void rid_value(J *j, prs_args *a)
{
    ws(j);
    if (j->p < j->e && *j->p == '[') {
        a->rid_kind = 2;
        j->p++;
        ws(j);
        if (j->p < j->e && *j->p == ']') {
            j->p++;
            return;
        }
        for (;;) {
            rid_entry(j, a);
            if (j->err)
                return;
            if (take(j, ','))
                continue;
            if (take(j, ']'))
                return;
            return (void)(j->err = 1);
        }
    }
    idval(j, &a->rid);
    if (a->rid.p)
        a->rid_kind = 1;
}

void prs_args_init(prs_args *a)
{
    memset(a, 0, sizeof *a);
}

void prs_args_copy(prs_args *dst, const prs_args *src)
{
    prs_rident *rids = dst->rids;
    int cap = dst->caprids;
    long long range = dst->range_errors;
    if (src->nrids > cap) {
        cap = src->nrids * 2;
        rids = prs_xrealloc(rids, (size_t)cap * sizeof *rids);
    }
    *dst = *src;
    if (src->nrids)
        memcpy(rids, src->rids, (size_t)src->nrids * sizeof *rids);
    dst->rids = rids;
    dst->caprids = cap;
    dst->range_errors = range + src->range_errors;
}

void prs_args_free(prs_args *a)
{
    free(a->rids);
    memset(a, 0, sizeof *a);
}

/* Every record starts from this: one struct copy instead of a memset and
 * two dozen stores. */
static const prs_args blank = {
    .type = -1, .device = -1, .cpu_index = -1,
    .queue_size = NAN, .total = NAN, .used = NAN, .free = NAN, .free_before = NAN, .free_after = NAN,
    .allocated = NAN, .usage_pct = NAN, .device_block = NAN, .recv_tokens = NAN, .reply_tokens = NAN,
    .hit_cache = NAN, .batch_size = NAN,
    .usage = NAN, .mtotal = NAN, .util = NAN, .mused = NAN, .available = NAN, .cpu = NAN, .rss = NAN,
};

static void reset(prs_args *a)
{
    prs_rident *rids = a->rids;
    int cap = a->caprids;
    long long range = a->range_errors;
    *a = blank;
    a->rids = rids;
    a->caprids = cap;
    a->range_errors = range;
}

/* ------------------------------------------------------------ the keys
 *
 * Which key fills which field of prs_args is this table, not code: a key
 * is decoded by its kind (a number, an int, an id, a string, the raw text
 * of a value, or a rid list), into the field at its offset. A row holds the
 * keys that begin with one letter, so a lookup compares a handful of keys
 * at most (ROW_MAX), mostly by length alone.
 *
 * Keys are compared as the raw text between the quotes: an escaped key
 * ("\u0074ype") is not the key it spells and is skipped, as every writer
 * writes keys plain. A key may appear twice: each occurrence is decoded
 * again, so the last one wins (a rid list appends to the first). Samplers
 * and older writers add '=' to some keys ("QueueSize="): EQ marks the
 * keys accepted both with and without it; a key written with its '='
 * ("rss=") is accepted only so.
 *
 * To add a key: a field in prs_args (and its absent value in `blank`),
 * then one entry in the row of its first letter. The compiler checks the
 * field's type against the kind (FIELD), a row given twice
 * (-Woverride-init) and a row longer than ROW_MAX; test_parse_keys.c's
 * table walk lists every key with the field it must fill, and fails until
 * the new key is there too. */
enum arg_kind {
    ARG_NUM,  /* double: a number or a numeric string, NAN when absent (numval) */
    ARG_INT,  /* int: the same, -1 when absent or beyond int (to_int) */
    ARG_ID,   /* prs_str: a string, or a number kept as its digits (idval) */
    ARG_STR,  /* prs_str: a string only; anything else makes the text invalid */
    ARG_RAW,  /* prs_str: the value's whole JSON text, decoded later by who needs it */
    ARG_RIDS, /* "rid": one id, or a list of entries (rid_value) */
};

typedef struct arg_field {
    const char *key;         /* NULL: end of the row */
    unsigned char n;         /* strlen(key) */
    unsigned char eq;        /* 1: also accepted with a trailing '=' */
    unsigned char kind;      /* enum arg_kind */
    unsigned short off;      /* offset of the field in prs_args */
} arg_field;

enum { EQ = 1, ROW_MAX = 5 };

/* The field's offset, and a compile error unless the field has type T. */
#define FIELD(f, T) _Generic(((prs_args *)0)->f, T: offsetof(prs_args, f))
#define NUM(k, f, e) {k, sizeof k - 1, e, ARG_NUM, FIELD(f, double)}
#define INT(k, f) {k, sizeof k - 1, 0, ARG_INT, FIELD(f, int)}
#define SLICE(kind, k, f) {k, sizeof k - 1, 0, kind, FIELD(f, prs_str)}
#define ROW(c) [(c) - 'A']

static const arg_field fields['z' - 'A' + 1][ROW_MAX] = {
    ROW('A') = {NUM("AllocatedBlocks", allocated, EQ)},
    ROW('F') = {NUM("FreeBlocks", free, EQ), NUM("FreeBlocksBefore", free_before, EQ),
                NUM("FreeBlocksAfter", free_after, EQ)},
    ROW('Q') = {NUM("QueueSize", queue_size, EQ)},
    ROW('T') = {NUM("TotalBlocks", total, EQ)},
    ROW('U') = {NUM("UsedBlocks", used, EQ), NUM("UsagePercent", usage_pct, EQ)},
    ROW('a') = {NUM("available=", available, 0)},
    ROW('b') = {SLICE(ARG_ID, "batch_type", batch_type), NUM("batch_size", batch_size, EQ)},
    ROW('c') = {NUM("cpu=", cpu, 0)},
    ROW('d') = {NUM("deviceBlock", device_block, EQ)},
    ROW('f') = {SLICE(ARG_ID, "from", from)},
    ROW('h') = {NUM("hitCache", hit_cache, EQ)},
    ROW('r') = {SLICE(ARG_RIDS, "rid", rid), NUM(SP_TOKENS_RECV_KEY, recv_tokens, EQ),
                NUM(SP_TOKENS_REPLY_KEY, reply_tokens, EQ), NUM("rss=", rss, 0)},
    ROW('s') = {SLICE(ARG_STR, "scope#QueueName", queue_name), SLICE(ARG_ID, "status", status),
                INT("scope#device", device), INT("scope#cpu", cpu_index),
                SLICE(ARG_RAW, "spec_decode_accepted_by_req", accepted)},
    ROW('t') = {INT("type", type), SLICE(ARG_ID, "to", to), NUM("total=", mtotal, 0)},
    ROW('u') = {NUM("usage=", usage, 0), NUM("util=", util, 0), NUM("used=", mused, 0)},
};

/* decode's literal fast path hands these two over without a lookup */
static const arg_field *const type_field = &fields['t' - 'A'][0];
static const arg_field *const rid_field = &fields['r' - 'A'][0];

/* k's entry, or NULL: only the row of its first byte is searched. */
static const arg_field *lookup(prs_str k)
{
    unsigned row = (unsigned)(unsigned char)k.p[0] - 'A';
    if (row >= sizeof fields / sizeof *fields)
        return NULL;
    for (const arg_field *f = fields[row]; f < fields[row] + ROW_MAX && f->key; f++) {
        int n = f->n;
        if ((n == k.n || (f->eq && n == k.n - 1 && k.p[n] == '=')) && !memcmp(f->key, k.p, (size_t)n))
            return f;
    }
    return NULL;
}

/* The value's JSON text, whatever it is (checked, not decoded). */
static void raw_value(J *j, prs_str *out)
{
    ws(j);
    const char *s = j->p;
    skip(j, 1);
    out->p = s;
    out->n = (int)(j->p - s);
    out->esc = 0;
}

/* Decodes the value at j into f's field of a. */
static void field_value(J *j, prs_args *a, const arg_field *f)
{
    char *at = (char *)a + f->off;
    switch ((enum arg_kind)f->kind) {
    case ARG_NUM: *(double *)at = numval(j); return;
    case ARG_INT: *(int *)at = to_int(j, numval(j)); return;
    case ARG_ID: idval(j, (prs_str *)at); return;
    case ARG_STR: ws(j); str(j, (prs_str *)at); return;
    case ARG_RAW: raw_value(j, (prs_str *)at); return;
    case ARG_RIDS: rid_value(j, a); return;
    }
}

const char *prs_args_key(int i, int *eq)
{
    for (size_t r = 0; r < sizeof fields / sizeof *fields; r++)
        for (int c = 0; c < ROW_MAX && fields[r][c].key; c++)
            if (i-- == 0) {
                *eq = fields[r][c].eq;
                return fields[r][c].key;
            }
    return NULL;
}

void prs_args_decode(prs_args *a, const char *text, int len)
{
    reset(a);
    J j = {text, text + len, 0, &a->range_errors};
    ws(&j);
    if (j.p >= j.e || *j.p != '{')
        return;
    j.p++;
    ws(&j);
    if (j.p < j.e && *j.p == '}') {
        j.p++;
        ws(&j);
        a->valid = j.p == j.e;
        return;
    }
    for (;;) {
        prs_str k;
        const arg_field *f;
        ws(&j);
        /* "type" and "rid" lead almost every record: taken as literals
         * (with their ':'), the rest scanned and looked up. */
        if (j.e - j.p >= 7 && !memcmp(j.p, "\"type\":", 7)) {
            f = type_field;
            j.p += 7;
        } else if (j.e - j.p >= 6 && !memcmp(j.p, "\"rid\":", 6)) {
            f = rid_field;
            j.p += 6;
        } else if (!key(&j, &k)) {
            return;
        } else {
            f = k.n > 0 ? lookup(k) : NULL;
        }
        if (f)
            field_value(&j, a, f);
        else
            skip(&j, 1);
        if (j.err)
            return;
        if (take(&j, ','))
            continue;
        if (take(&j, '}'))
            break;
        return;
    }
    ws(&j);
    a->valid = j.p == j.e;
}

/* UTF-8 of code point v into o (room checked by the caller): 1..4 bytes. */
static int put_utf8(char *o, unsigned v)
{
    if (v < 0x80) {
        o[0] = (char)v;
        return 1;
    }
    if (v < 0x800) {
        o[0] = (char)(0xC0 | v >> 6);
        o[1] = (char)(0x80 | (v & 0x3F));
        return 2;
    }
    if (v < 0x10000) {
        o[0] = (char)(0xE0 | v >> 12);
        o[1] = (char)(0x80 | ((v >> 6) & 0x3F));
        o[2] = (char)(0x80 | (v & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | v >> 18);
    o[1] = (char)(0x80 | ((v >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((v >> 6) & 0x3F));
    o[3] = (char)(0x80 | (v & 0x3F));
    return 4;
}

static unsigned hex4(const char *p)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval((unsigned char)p[i]);
        v = v * 16 + (unsigned)(h < 0 ? 0 : h);
    }
    return v;
}

/* The code point of the \u escape at p[0..5] (and of the low surrogate
 * that follows a high one: *used = 12 then, else 6). NUL and unpaired
 * surrogates become U+FFFD, the replacement character: an id is a C string
 * in the reports (a NUL would cut it), and a lone surrogate has no UTF-8. */
static unsigned u_escape(const char *p, const char *e, int *used)
{
    unsigned v = hex4(p + 2);
    *used = 6;
    if (v >= 0xD800 && v < 0xDC00 && e - p >= 12 && p[6] == '\\' && p[7] == 'u') {
        unsigned lo = hex4(p + 8);
        if (lo >= 0xDC00 && lo < 0xE000) {
            *used = 12;
            return 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
        }
    }
    if (v == 0 || (v >= 0xD800 && v < 0xE000))
        return 0xFFFD;
    return v;
}

/* The text of a string exactly as JSON defines it (str() checked every
 * escape): \uXXXX to UTF-8, surrogate pairs joined into one 4-byte
 * sequence (not two 3-byte ones: CESU-8), so an id escaped by one writer
 * (Python's json.dumps escapes non-ASCII) and raw from another (C) are the
 * same bytes. The unescaped text is never longer than s.n. Cut at cap-1
 * bytes, never inside a UTF-8 sequence. */
int prs_str_copy(prs_str s, char *buf, int cap)
{
    int o = 0;
    if (cap <= 0)
        return 0;
    const char *p = s.p, *e = s.p + s.n;
    while (p < e) {
        char u[4];
        int n = 1;
        if (!s.esc || *p != '\\' || e - p < 2) {
            u[0] = *p++;
        } else {
            switch (p[1]) {
            case 'n': u[0] = '\n'; p += 2; break;
            case 't': u[0] = '\t'; p += 2; break;
            case 'r': u[0] = '\r'; p += 2; break;
            case 'b': u[0] = '\b'; p += 2; break;
            case 'f': u[0] = '\f'; p += 2; break;
            case 'u':
                if (e - p >= 6) {
                    int used;
                    n = put_utf8(u, u_escape(p, e, &used));
                    p += used;
                    break;
                }
                u[0] = *p++; /* cut short (not from str()): kept as it is */
                break;
            default: u[0] = p[1]; p += 2; break; /* \" \\ \/ */
            }
        }
        if (o + n > cap - 1)
            break;
        memcpy(buf + o, u, (size_t)n);
        o += n;
    }
    buf[o] = 0;
    return o;
}

/* Walks the members of a flat object, calling back with the key and a J
 * positioned on the value; the callback consumes the value and returns 1 to
 * stop. */
typedef int (*member_fn)(J *j, prs_str k, void *ctx);

static void each_member(const char *text, int len, member_fn fn, void *ctx, long long *range)
{
    J j = {text, text + len, 0, range};
    ws(&j);
    if (j.p >= j.e || *j.p != '{')
        return;
    j.p++;
    for (;;) {
        prs_str k;
        ws(&j);
        if (j.p < j.e && *j.p == '}')
            return;
        if (!key(&j, &k))
            return;
        if (fn(&j, k, ctx))
            return;
        if (j.err)
            return;
        ws(&j);
        if (j.p < j.e && *j.p == ',') {
            j.p++;
            continue;
        }
        return;
    }
}

typedef struct find_ctx { const char *key; int keylen; double d; prs_str s; int found; } find_ctx;

static int find_num(J *j, prs_str k, void *c)
{
    find_ctx *f = c;
    char tmp[256];
    prs_str_copy(k, tmp, sizeof tmp);
    if ((int)strlen(tmp) == f->keylen && !memcmp(tmp, f->key, (size_t)f->keylen)) {
        f->d = numval(j);
        f->found = 1;
        return 1;
    }
    skip(j, 1);
    return 0;
}

double prs_json_object_number(prs_str obj, const char *key, int keylen)
{
    find_ctx f = {key, keylen, NAN, {0}, 0};
    each_member(obj.p, obj.n, find_num, &f, NULL);
    return f.d;
}

static int find_str(J *j, prs_str k, void *c)
{
    find_ctx *f = c;
    if (k.n == f->keylen && !memcmp(k.p, f->key, (size_t)f->keylen)) {
        ws(j);
        if (j->p < j->e && *j->p == '"')
            f->found = str(j, &f->s);
        return 1;
    }
    skip(j, 1);
    return 0;
}

int prs_json_object_string(const char *text, int len, const char *key, prs_str *out)
{
    find_ctx f = {key, (int)strlen(key), NAN, {0}, 0};
    each_member(text, len, find_str, &f, NULL);
    if (f.found)
        *out = f.s;
    return f.found;
}

typedef struct each_ctx { prs_json_num_fn fn; void *ctx; } each_ctx;

static int each_num(J *j, prs_str k, void *c)
{
    each_ctx *e = c;
    double d = numval(j);
    e->fn(k, d, e->ctx);
    return 0;
}

void prs_json_each_number(prs_str obj, prs_json_num_fn fn, void *ctx, long long *range)
{
    each_ctx e = {fn, ctx};
    each_member(obj.p, obj.n, each_num, &e, range);
}
