/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bt_test.h — what the page writer's differential tests share
 * (test_btwrite.c, test_btbytes.c): texts of any length in valid UTF-8,
 * and binding a row of prs_val to an SQLite INSERT as table.c's rows come.
 */
#ifndef SERVPROF_TEST_BT_TEST_H
#define SERVPROF_TEST_BT_TEST_H

#include <stdlib.h>
#include <string.h>

#include "table.h"


/* A text of n bytes: UTF-8 (2- and 3-byte sequences), no NUL; seed picks
 * where the pattern starts. Freed by the caller. */
static inline char *make_text(size_t n, unsigned seed)
{
    static const char *parts[] = {"a", "\xc3\xa9", "\xe4\xb8\xad", "z", "0", " "};
    char *s = malloc(n + 4);
    size_t k = 0;
    while (k < n) {
        const char *p = parts[(seed + k) % 6];
        size_t l = strlen(p);
        if (k + l > n)
            p = "x", l = 1;
        memcpy(s + k, p, l);
        k += l;
    }
    s[k] = 0;
    return s;
}

/* Binds v[0..n-1] to st's parameters 1..n (texts SQLITE_STATIC). */
static inline void bind_vals(sqlite3_stmt *st, const prs_val *v, int n)
{
    for (int i = 0; i < n; i++) {
        switch (v[i].kind) {
        case PRS_INT: sqlite3_bind_int64(st, i + 1, v[i].i); break;
        case PRS_REAL: case PRS_MS: sqlite3_bind_double(st, i + 1, v[i].d); break;
        case PRS_TEXT: sqlite3_bind_text(st, i + 1, v[i].s, v[i].n, SQLITE_STATIC); break;
        default: sqlite3_bind_null(st, i + 1); break;
        }
    }
}

#endif
