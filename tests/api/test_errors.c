/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_errors.c — servprof_strerror, the public names of the error codes:
 * every code of SERVPROF_ERRNO_MAP has its own non-empty text, codes run
 * 0, -1, -2, ... without gaps (new ones are only added at the end), and
 * any other value gets the one defined answer "unknown error". Called from
 * several threads at once, the answers stay the same (it is documented
 * thread-safe: static texts).
 */
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "servprof.h"

static const struct {
    int code;
    const char *text;
} map[] = {
#define ROW(name, code, text) {(code), (text)},
    SERVPROF_ERRNO_MAP(ROW)
#undef ROW
};
#define NCODES ((int)(sizeof map / sizeof map[0]))
#define UNKNOWN "unknown error"

static void check_every_code(void)
{
    for (int i = 0; i < NCODES; i++) {
        const char *s = servprof_strerror(map[i].code);
        CHECK_INT(map[i].code, -i); /* contiguous: 0, -1, -2, ... */
        CHECK(s != NULL && s[0] != '\0');
        CHECK_STR(s, map[i].text);
        CHECK(strcmp(s, UNKNOWN) != 0);
        for (int j = 0; j < i; j++)
            if (!strcmp(s, servprof_strerror(map[j].code))) {
                fprintf(stderr, "codes %d and %d share the text \"%s\"\n", map[i].code,
                        map[j].code, s);
                CHECK(0);
            }
    }
    /* The names callers compare with, spelled out. */
    CHECK_STR(servprof_strerror(SERVPROF_OK), "success");
    CHECK_STR(servprof_strerror(SERVPROF_EINVAL), "invalid argument");
    CHECK_STR(servprof_strerror(SERVPROF_ESTATE), "not allowed in the current state");
    CHECK_STR(servprof_strerror(SERVPROF_ENOTFOUND), "not found");
}

static void check_unknown_codes(void)
{
    const int unknown[] = {1, 2, 42, -NCODES, -NCODES - 1, -1000, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        CHECK_STR(servprof_strerror(unknown[i]), UNKNOWN);
}

static void *ask_all(void *arg)
{
    int *bad = arg;
    for (int round = 0; round < 1000; round++)
        for (int i = -NCODES - 1; i <= 1; i++) {
            const char *s = servprof_strerror(i);
            const char *want = (i <= 0 && i > -NCODES) ? map[-i].text : UNKNOWN;
            if (strcmp(s, want) != 0)
                (*bad)++;
        }
    return NULL;
}

static void check_threads(void)
{
    pthread_t th[4];
    int bad[4] = {0};
    for (int i = 0; i < 4; i++)
        CHECK_INT(pthread_create(&th[i], NULL, ask_all, &bad[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT(bad[i], 0);
    }
}

int main(void)
{
    check_every_code();
    check_unknown_codes();
    check_threads();
    CHECK_DONE();
}
