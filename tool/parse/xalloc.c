/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xalloc.c — the tool's checked allocations (xalloc.h) and their failure
 * path: one line on stderr, exit status 1, written with write(2) from a
 * stack buffer (the heap is what just failed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xalloc.h"

void prs_oom(size_t n)
{
    char line[256];
    int len = snprintf(line, sizeof line,
                       "servprof: error: out of memory (%zu bytes asked); stopped: this run's outputs are "
                       "left as *.partial, the previous ones as they were\n", n);
    if (len > 0) {
        ssize_t w = write(STDERR_FILENO, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
        (void)w;
    }
    _exit(1);
}

void *prs_xmalloc(size_t n)
{
    void *p = malloc(n);
    if (__builtin_expect(!p && n, 0))
        prs_oom(n);
    return p;
}

void *prs_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (__builtin_expect(!p && n && size, 0))
        prs_oom(n * size);
    return p;
}

void *prs_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (__builtin_expect(!q && n, 0))
        prs_oom(n);
    return q;
}

char *prs_xstrdup(const char *s)
{
    char *d = strdup(s);
    if (__builtin_expect(!d, 0))
        prs_oom(strlen(s) + 1);
    return d;
}

char *prs_xstrndup(const char *s, size_t n)
{
    char *d = strndup(s, n);
    if (__builtin_expect(!d, 0))
        prs_oom(n + 1);
    return d;
}
