/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.h — assertions for the C tests. Each failed check prints the file,
 * line, the expression and both values, counts the failure and goes on, so
 * one run shows every broken case; CHECK_DONE() ends the test with exit
 * status 1 when anything failed. check_wait_until() is how a test waits for
 * another thread or process: on a condition, with a bound, never a sleep.
 */
#ifndef SERVPROF_TEST_CHECK_H
#define SERVPROF_TEST_CHECK_H

#include <ftw.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Atomic: a test may check from several threads (each ++ is one atomic
 * add; a test's own threads need no lock around CHECK). */
static _Atomic int check_failures;
static _Atomic int check_count;

#define CHECK(cond)                                                            \
    do {                                                                       \
        check_count++;                                                         \
        if (!(cond)) {                                                         \
            check_failures++;                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                      \
    } while (0)

#define CHECK_INT(a, b)                                                        \
    do {                                                                       \
        long long va_ = (long long)(a), vb_ = (long long)(b);                  \
        check_count++;                                                         \
        if (va_ != vb_) {                                                      \
            check_failures++;                                                  \
            fprintf(stderr, "%s:%d: CHECK_INT failed: %s == %s (%lld != %lld)\n", \
                    __FILE__, __LINE__, #a, #b, va_, vb_);                     \
        }                                                                      \
    } while (0)

#define CHECK_STR(a, b)                                                        \
    do {                                                                       \
        const char *sa_ = (a), *sb_ = (b);                                     \
        check_count++;                                                         \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                           \
            check_failures++;                                                  \
            fprintf(stderr, "%s:%d: CHECK_STR failed: %s == %s (\"%s\" != \"%s\")\n", \
                    __FILE__, __LINE__, #a, #b, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)"); \
        }                                                                      \
    } while (0)

/* The whole file at path, NUL-terminated (free() it), or NULL when it
 * cannot be read. */
static inline char *check_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static inline int check_remove_one(const char *path, const struct stat *st, int type,
                                   struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

/* Removes the folder dir and everything below it (a test's temp folder;
 * links are removed, not followed). Returns 0, or -1 (reported). */
static inline int check_remove_tree(const char *dir)
{
    int rc = nftw(dir, check_remove_one, 16, FTW_DEPTH | FTW_PHYS);
    if (rc != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}

/* A wait's bound in ms: ms, ten times that in a sanitizer build (ctest sets
 * SERVPROF_SANITIZE), as bound() in tests/support/rtlib.py. */
static inline long check_bound_ms(long ms)
{
    const char *s = getenv("SERVPROF_SANITIZE");
    return s && *s ? ms * 10 : ms;
}

/* Polls cond(arg) every 2 ms until it is nonzero or check_bound_ms(ms) has
 * passed; returns its last value (0: the bound passed first). */
static inline int check_wait_until(int (*cond)(void *), void *arg, long ms)
{
    struct timespec t0, now, pause = {0, 2000000L};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long bound = check_bound_ms(ms);
    for (;;) {
        int v = cond(arg);
        if (v)
            return v;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > bound)
            return cond(arg);
        nanosleep(&pause, NULL);
    }
}

#define CHECK_DONE()                                                           \
    do {                                                                       \
        fprintf(stderr, "%d checks, %d failed\n", atomic_load(&check_count),     \
                atomic_load(&check_failures));                                 \
        return check_failures ? 1 : 0;                                         \
    } while (0)

#endif
