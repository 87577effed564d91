/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dropin_test.h — what the C tests of the drop-in library share: loading
 * it the way the reference's clients do (dlopen by name, dlsym of each
 * function), writing the config file the way an editor saves it, and
 * waiting on a condition with a bound.
 */
#ifndef SERVPROF_TEST_DROPIN_TEST_H
#define SERVPROF_TEST_DROPIN_TEST_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

/* Sets the function pointer f to the symbol of the same name, or exits. */
#define LOOK(h, f)                                                                 \
    do {                                                                           \
        *(void **)(&f) = dlsym(h, #f);                                             \
        if (!f) {                                                                  \
            fprintf(stderr, "missing symbol %s\n", #f);                            \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

/* "libms_service_profiler.so" found through LD_LIBRARY_PATH, or exits. */
static inline void *dropin_dlopen(void)
{
    void *h = dlopen("libms_service_profiler.so", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(1);
    }
    return h;
}

/* Replaces the config file cfg atomically (the watcher sees one whole
 * file): {"prof_dir": prof, extra}. */
static inline void dropin_write_config(const char *cfg, const char *prof, const char *extra)
{
    char tmp[4200], text[8192];
    snprintf(tmp, sizeof tmp, "%s.tmp", cfg);
    snprintf(text, sizeof text, "{\"prof_dir\": \"%s\", %s}\n", prof, extra);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, cfg) != 0) {
        perror(tmp);
        exit(1);
    }
}

static inline int dropin_call_cond(void *cond)
{
    return (*(int (**)(void))cond)();
}

/* Waits (check_wait_until) at most 20 s, x10 under sanitizers, for cond. */
static inline int dropin_wait_for(int (*cond)(void))
{
    return check_wait_until(dropin_call_cond, &cond, 20000);
}

#endif
