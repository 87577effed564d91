/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_edit.c — sets "enable" in the config file, keeping the rest.
 *
 * Why textual: re-serializing the file with the JSON library would reorder
 * or reformat every key and drop the user's layout. Instead a small scanner
 * walks the top-level object (strings with escapes, nested objects and
 * arrays skipped as units), finds the span of each top-level "enable" value
 * and replaces it with 0 or 1; when the key is missing it is inserted after
 * the opening brace, with the indentation of the first key.
 *
 * Checks, with the library's own parser (sp_config_json_load and
 * sp_config_parse in config.c: the same jansson flags, so a duplicate key,
 * a byte-order mark or a NUL escape is refused here exactly as every
 * running process would refuse it): the original must be a config the
 * library accepts, and the result must parse to the original with only
 * "enable" changed. Only then is the file replaced atomically (temp +
 * rename, mode kept). Used by timelimit / profiler_step_num and by
 * `servprof enable|disable`.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fsutil.h"

typedef struct span {
    size_t start, end;
} span;

static size_t skip_ws(const char *t, size_t i, size_t n)
{
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

/* t[i] == '"': returns the index after the closing quote, or n. */
static size_t skip_string(const char *t, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (t[i] == '\\')
            i++;
        else if (t[i] == '"')
            return i + 1;
    }
    return n;
}

/* Returns the index after the value starting at t[i], or n. */
static size_t skip_value(const char *t, size_t i, size_t n)
{
    if (i >= n)
        return n;
    if (t[i] == '"')
        return skip_string(t, i, n);
    if (t[i] == '{' || t[i] == '[') {
        int depth = 0;
        while (i < n) {
            char ch = t[i];
            if (ch == '"') {
                i = skip_string(t, i, n);
                continue;
            }
            if (ch == '{' || ch == '[')
                depth++;
            else if (ch == '}' || ch == ']') {
                if (--depth == 0)
                    return i + 1;
            }
            i++;
        }
        return n;
    }
    while (i < n && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' && t[i] != '\t' &&
           t[i] != '\n' && t[i] != '\r')
        i++;
    return i;
}

#define MAX_HITS 16

/* Finds the top-level object's brace, first key and every "enable" value. */
static int scan(const char *t, size_t n, size_t *brace, size_t *first_key, span *hits, int *nhits)
{
    /* A byte-order mark never gets here: sp_config_json_load refuses it. */
    size_t i = skip_ws(t, 0, n);
    if (i >= n || t[i] != '{')
        return -1;
    *brace = i;
    *first_key = 0;
    *nhits = 0;
    i++;
    for (;;) {
        i = skip_ws(t, i, n);
        if (i >= n)
            return -1;
        if (t[i] == '}')
            return 0;
        if (t[i] != '"')
            return -1;
        size_t ks = i;
        i = skip_string(t, i, n);
        if (!*first_key)
            *first_key = ks;
        int is_enable = i - ks == 8 && !memcmp(t + ks, "\"enable\"", 8);
        i = skip_ws(t, i, n);
        if (i >= n || t[i] != ':')
            return -1;
        i = skip_ws(t, i + 1, n);
        size_t vs = i;
        i = skip_value(t, i, n);
        if (i >= n || i == vs)
            return -1;
        if (is_enable && *nhits < MAX_HITS)
            hits[(*nhits)++] = (span){vs, i};
        i = skip_ws(t, i, n);
        if (i < n && t[i] == ',')
            i++;
    }
}

int sp_config_edit_enable_text(const char *text, size_t len, int value, char **out,
                               size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    char why[512];
    json_t *orig = sp_config_json_load(text, len, why, sizeof why);
    if (!orig) {
        snprintf(err, errlen, "%s; every process would reject this file, so it was left "
                 "unchanged", why);
        return SERVPROF_ECONFIG;
    }
    size_t brace, first_key;
    span hits[MAX_HITS];
    int nhits;
    if (scan(text, len, &brace, &first_key, hits, &nhits) != 0) {
        json_decref(orig);
        snprintf(err, errlen, "could not locate the top-level object; left unchanged");
        return SERVPROF_ECONFIG;
    }
    const char *v = value ? "1" : "0";
    size_t cap = len + 64 + (first_key ? first_key - brace : 0);
    char *res = malloc(cap);
    if (!res) {
        json_decref(orig);
        snprintf(err, errlen, "out of memory");
        return SERVPROF_ENOMEM;
    }
    size_t o = 0;
    if (nhits == 0) {
        /* Insert after '{' with the whitespace that precedes the first key. */
        memcpy(res, text, brace + 1);
        o = brace + 1;
        if (first_key) {
            memcpy(res + o, text + brace + 1, first_key - brace - 1);
            o += first_key - brace - 1;
            o += (size_t)sprintf(res + o, "\"enable\": %s,", v);
        } else {
            o += (size_t)sprintf(res + o, "\"enable\": %s", v);
        }
        memcpy(res + o, text + brace + 1, len - brace - 1);
        o += len - brace - 1;
    } else {
        size_t from = 0;
        for (int h = 0; h < nhits; h++) {
            memcpy(res + o, text + from, hits[h].start - from);
            o += hits[h].start - from;
            res[o++] = v[0];
            from = hits[h].end;
        }
        memcpy(res + o, text + from, len - from);
        o += len - from;
    }
    /* Check: the new text parses to the old object with only "enable" changed. */
    json_object_set_new(orig, "enable", json_integer(value));
    json_t *now = sp_config_json_load(res, o, why, sizeof why);
    int ok = now && json_equal(orig, now);
    json_decref(now);
    json_decref(orig);
    if (!ok) {
        free(res);
        snprintf(err, errlen, "the edit did not check out (unusual layout); left unchanged");
        return SERVPROF_ECONFIG;
    }
    res[o] = '\0'; /* cap leaves room: a C string for callers and tests */
    *out = res;
    *outlen = o;
    return 0;
}

static void quiet(void *ctx, int is_error, const char *msg)
{
    (void)ctx, (void)is_error, (void)msg;
}

/* Passes warnings on to the caller's diag; an error is said once, in err. */
static void warnings_only(void *ctx, int is_error, const char *msg)
{
    sp_config_diag *to = ctx;
    if (!is_error && to->emit)
        to->emit(to->ctx, 0, msg);
}

int sp_config_set_enable_diag(const char *path, int value, int *changed, sp_config_diag *d,
                              char *err, size_t errlen)
{
    *changed = 0;
    char *text;
    size_t len;
    int rc = sp_read_file(path, SP_CONFIG_MAX_BYTES, &text, &len);
    if (rc != 0) {
        char buf[256];
        snprintf(err, errlen, "cannot read it: %s", sp_config_read_error(rc, buf, sizeof buf));
        return rc == -ENOENT ? SERVPROF_ENOTFOUND : SERVPROF_EIO;
    }
    /* The whole file, as a running process would read it: warnings go to
     * d (the file is still used), errors refuse the edit. */
    sp_config_diag silent = {0, 0, quiet, NULL}, filtered = {0, 0, warnings_only, d};
    sp_config parsed;
    int prc = sp_config_parse(text, len, &parsed, d && d->emit ? &filtered : &silent);
    if (d) {
        d->nwarnings += filtered.nwarnings;
        d->nerrors += filtered.nerrors;
    }
    if (prc != 0) {
        char why[512];
        json_t *j = sp_config_json_load(text, len, why, sizeof why);
        json_decref(j);
        snprintf(err, errlen, "%s; every process would reject this file, so it was left "
                 "unchanged", j ? "the file could not be read as a config" : why);
        free(text);
        return SERVPROF_ECONFIG;
    }
    char *res;
    size_t rlen;
    rc = sp_config_edit_enable_text(text, len, value, &res, &rlen, err, errlen);
    if (rc == 0 && (rlen != len || memcmp(res, text, len) != 0)) {
        int wrc = sp_write_atomic(path, res, rlen, SP_FILE_MODE);
        if (wrc != 0) {
            snprintf(err, errlen, "cannot replace it: %s", strerror(-wrc));
            rc = SERVPROF_EIO;
        } else {
            *changed = 1;
        }
    }
    free(res);
    free(text);
    return rc;
}

int sp_config_set_enable(const char *path, int value, int *changed, char *err, size_t errlen)
{
    return sp_config_set_enable_diag(path, value, changed, NULL, err, errlen);
}
