/* SPDX-License-Identifier: Apache-2.0 */
/*
 * argbuild.h — JSON text for the `args` column, built on the writer thread from
 * the compact attribute stream of rec_format.h. Writer thread only.
 */
#ifndef SERVPROF_ARGBUILD_H
#define SERVPROF_ARGBUILD_H

#include <stddef.h>
#include <stdint.h>

/* A growable string. On allocation failure `oom` is set and appends are
 * ignored, so callers check once at the end. Free with sp_sb_free. */
typedef struct sp_sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sp_sbuf;

void sp_sb_free(sp_sbuf *b);
void sp_sb_put(sp_sbuf *b, const char *s, size_t n);
/* Makes room for n more bytes (and a NUL) without writing them. */
void sp_sb_reserve(sp_sbuf *b, size_t n);
static inline void sp_sb_clear(sp_sbuf *b)
{
    b->len = 0;
}
/* NUL-terminates (not counted in len) and returns the text. */
const char *sp_sb_cstr(sp_sbuf *b);

/* A JSON string literal for n bytes of s: quotes, escapes, and each byte
 * that is not part of valid UTF-8 written as \ufffd. */
void sp_json_str(sp_sbuf *b, const char *s, size_t n);
/* s itself when its n bytes are valid UTF-8; otherwise a copy in tmp with
 * each invalid byte replaced by U+FFFD. *out_n gets the length. For TEXT
 * columns (names, domains, Meta): readers such as Python's sqlite3 fail on
 * invalid UTF-8. */
const char *sp_utf8_clean(sp_sbuf *tmp, const char *s, size_t n, size_t *out_n);
/* Length of the valid UTF-8 sequence at s (n >= 1 bytes left), 0 when it
 * is not one (a stray continuation byte, an overlong form, a surrogate,
 * past U+10FFFF, cut short). */
size_t sp_utf8_len(const unsigned char *s, size_t n);

/* The shortest text that reads back as exactly v ("0.5", "3", "1e+300");
 * NaN and infinities, which JSON cannot hold, as null. */
void sp_json_double(sp_sbuf *b, double v);
void sp_json_int(sp_sbuf *b, int64_t v);

/* Reads the attribute stream at *p (bounded by end) up to and including its
 * SP_TAG_STOP, appending each attribute as `,"key":value` to b (so a caller
 * that opened `{"type":N` only closes the brace). Unclosed containers are
 * closed. *p is left after the stop tag. Counts invalid attr_json values in
 * *bad_json. Returns 0, or -1 when the stream is malformed (a bug). */
int sp_args_members(sp_sbuf *b, const uint8_t **p, const uint8_t *end, uint64_t *bad_json);

#endif /* SERVPROF_ARGBUILD_H */
