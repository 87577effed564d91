/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strmap.c — string -> int hash map (open addressing, linear probing,
 * FNV-1a), for request ids and span names. Keys are copied; the table
 * doubles at 50 % load so probes stay short.
 */
#include <stdlib.h>
#include <string.h>

#include "profile.h"

static uint64_t hash(const char *s, int n)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static long long find_slot(char *const *keys, long long cap, const char *key, int len)
{
    long long i = (long long)(hash(key, len) & (uint64_t)(cap - 1));
    while (keys[i] && (strncmp(keys[i], key, (size_t)len) != 0 || keys[i][len] != 0))
        i = (i + 1) & (cap - 1);
    return i;
}

int sa_strmap_get(const sa_strmap *m, const char *key, int len)
{
    if (!m->cap)
        return -1;
    long long i = find_slot(m->keys, m->cap, key, len);
    return m->keys[i] ? m->vals[i] : -1;
}

static void grow(sa_strmap *m)
{
    long long cap = m->cap ? m->cap * 2 : 1024;
    char **keys = calloc((size_t)cap, sizeof *keys);
    int *vals = calloc((size_t)cap, sizeof *vals);
    for (long long i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        long long j = find_slot(keys, cap, m->keys[i], (int)strlen(m->keys[i]));
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
}

void sa_strmap_put(sa_strmap *m, const char *key, int len, int val)
{
    if ((m->n + 1) * 2 > m->cap)
        grow(m);
    long long i = find_slot(m->keys, m->cap, key, len);
    if (!m->keys[i]) {
        m->keys[i] = strndup(key, (size_t)len);
        m->n++;
    }
    m->vals[i] = val;
}

void sa_strmap_free(sa_strmap *m)
{
    for (long long i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
