/* SPDX-License-Identifier: Apache-2.0 */
/*
 * argcap.c — bounds a record's args as the store is read (argcap.h).
 *
 * Why here: every stage after the reader keeps what it is handed — the
 * reorder window copies a record until its turn, the model caches the
 * decode of a long text, the timeline and profiler.db keep the last few
 * long texts for reuse — so a 100 MB args value cost 11 times its size,
 * and a rid list of a million entries made a million requests. Cut once,
 * at the source, everything downstream is bounded by PRS_ARGS_MAX and
 * PRS_RIDS_MAX; what remains is still a JSON object, so the reports decode
 * what was kept (the first entries of a rid list, the members that fit)
 * and the timeline shows the cut in the record's own args
 * ("servprof_cut"). Only the reader's own buffer of the row (SQLite's, or
 * rawscan.c's payload) still holds the whole value, once.
 *
 * Texts up to PRS_RIDS_CHECK bytes (64 KiB) are never looked at: they are
 * under both limits by construction, and they are nearly all records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argcap.h"
#include "xalloc.h"

static const char *ws(const char *s, const char *e)
{
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
        s++;
    return s;
}

/* s at an opening quote: the byte after the closing one (e if none). */
static const char *skip_str(const char *s, const char *e)
{
    for (s++; s < e; s++) {
        if (*s == '\\')
            s++;
        else if (*s == '"')
            return s + 1;
    }
    return e;
}

/* s at a value: the byte after it. */
static const char *skip_value(const char *s, const char *e)
{
    if (s >= e)
        return e;
    if (*s == '"')
        return skip_str(s, e);
    if (*s == '{' || *s == '[') {
        int depth = 0;
        while (s < e) {
            if (*s == '"') {
                s = skip_str(s, e);
                continue;
            }
            if (*s == '{' || *s == '[')
                depth++;
            else if ((*s == '}' || *s == ']') && --depth == 0)
                return s + 1;
            s++;
        }
        return e;
    }
    while (s < e && *s != ',' && *s != '}' && *s != ']' && *s != ' ' && *s != '\n' && *s != '\t' && *s != '\r')
        s++;
    return s;
}

/* The entries of array a (at '['): counted, and the end of the first
 * `keep` of them in *kept_end (the '[' + 1 when none). */
static long long count_array(const char *a, const char *e, long long keep, const char **kept_end)
{
    long long n = 0;
    const char *s = ws(a + 1, e);
    *kept_end = a + 1;
    while (s < e && *s != ']') {
        const char *v1 = skip_value(s, e);
        if (v1 == s)
            break;
        if (++n <= keep)
            *kept_end = v1;
        s = ws(v1, e);
        if (s < e && *s == ',')
            s = ws(s + 1, e);
    }
    return n;
}

static int is_rid_key(const char *k0, const char *k1) { return k1 - k0 == 5 && memcmp(k0, "\"rid\"", 5) == 0; }

static void put(prs_argcap *c, int *n, const char *p, size_t k)
{
    memcpy(c->buf + *n, p, k);
    *n += (int)k;
}

int prs_argcap_apply(prs_argcap *c, const char **args, int *len)
{
    if (*len <= PRS_RIDS_CHECK)
        return 0;
    const char *s0 = *args, *e = s0 + *len;
    int over = *len > PRS_ARGS_MAX;
    if (!c->buf) {
        c->cap = PRS_ARGS_MAX + 1;
        c->buf = prs_xmalloc((size_t)c->cap);
    }
    const char *s = ws(s0, e);
    if (s >= e || *s != '{') {
        if (!over)
            return 0;
        int n = PRS_ARGS_MAX;
        while (n > 0 && ((unsigned char)s0[n] & 0xC0) == 0x80)
            n--; /* not inside a UTF-8 sequence */
        memcpy(c->buf, s0, (size_t)n);
        c->cut_args++;
        if (*len > c->max_len)
            c->max_len = *len;
        *args = c->buf;
        *len = n;
        return 1;
    }
    /* First pass: how long is the rid list? */
    long long nrids = -1;
    const char *body = s + 1;
    for (s = ws(body, e); s < e && *s == '"';) {
        const char *k1 = skip_str(s, e), *v = ws(k1, e);
        if (v >= e || *v != ':')
            break;
        v = ws(v + 1, e);
        const char *v1 = skip_value(v, e);
        if (is_rid_key(s, k1) && v < e && *v == '[') {
            const char *ke;
            nrids = count_array(v, e, 0, &ke);
        }
        s = ws(v1, e);
        if (s < e && *s == ',')
            s = ws(s + 1, e);
    }
    if (!over && nrids <= PRS_RIDS_MAX)
        return 0;
    /* Second pass: the members that fit, whole; arrays crossing the limit
     * (and the rid list past PRS_RIDS_MAX) keep their first entries. */
    int budget = PRS_ARGS_MAX - 96, n = 0; /* room for "servprof_cut" and the braces */
    put(c, &n, "{", 1);
    int members = 0;
    for (s = ws(body, e); s < e && *s == '"';) {
        const char *k1 = skip_str(s, e), *v = ws(k1, e);
        if (v >= e || *v != ':')
            break;
        v = ws(v + 1, e);
        const char *v1 = skip_value(v, e);
        size_t klen = (size_t)(k1 - s), need = klen + 1 + (size_t)(v1 - v) + 1;
        int rid = is_rid_key(s, k1) && *v == '[';
        if (!(rid && nrids > PRS_RIDS_MAX) && (long long)n + (long long)need <= budget) {
            if (members++)
                put(c, &n, ",", 1);
            put(c, &n, s, klen);
            put(c, &n, ":", 1);
            put(c, &n, v, (size_t)(v1 - v));
        } else if (*v == '[' && (long long)n + (long long)klen + 4 <= budget) {
            /* the first entries that fit (and, for the rid list, at most PRS_RIDS_MAX) */
            if (members++)
                put(c, &n, ",", 1);
            put(c, &n, s, klen);
            put(c, &n, ":[", 2);
            long long kept = 0, limit = rid ? PRS_RIDS_MAX : -1;
            const char *q = ws(v + 1, e);
            while (q < v1 && *q != ']' && (limit < 0 || kept < limit)) {
                const char *q1 = skip_value(q, v1);
                if (q1 == q || (long long)n + (q1 - q) + 2 > budget)
                    break;
                if (kept++)
                    put(c, &n, ",", 1);
                put(c, &n, q, (size_t)(q1 - q));
                q = ws(q1, v1);
                if (q < v1 && *q == ',')
                    q = ws(q + 1, v1);
            }
            put(c, &n, "]", 1);
        } /* else: dropped (too big, not an array) */
        s = ws(v1, e);
        if (s < e && *s == ',')
            s = ws(s + 1, e);
    }
    char tail[96];
    int tn = snprintf(tail, sizeof tail, "%s\"servprof_cut\":{\"bytes\":%d,\"rid_entries\":%lld}}",
                      members ? "," : "", *len, nrids < 0 ? 0 : nrids);
    put(c, &n, tail, (size_t)tn);
    if (over) {
        c->cut_args++;
        if (*len > c->max_len)
            c->max_len = *len;
    }
    if (nrids > PRS_RIDS_MAX) {
        c->cut_rids++;
        if (nrids > c->max_rids)
            c->max_rids = nrids;
    }
    *args = c->buf;
    *len = n;
    return 1;
}

void prs_argcap_free(prs_argcap *c)
{
    free(c->buf);
    c->buf = NULL;
}
