/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dropin.h — what the files of the drop-in library share (not installed).
 *
 * libms_service_profiler.so exports the reference collector's C ABI
 * (the functions its ServiceProfilerInterface.h resolves with dlsym and its
 * Python package loads with ctypes) and records through libservprof.
 * docs/dropin.md is the user's page; the design is at the top of dropin.c.
 */
#ifndef SERVPROF_DROPIN_H
#define SERVPROF_DROPIN_H

#include <stdbool.h>
#include <stdint.h>

#include "ext.h"
#include "servprof.h"

/* Every symbol of the reference's ABI, and nothing else, is exported. */
#define DROPIN_API __attribute__((visibility("default")))

typedef uint64_t SpanHandle;

/* The level tracing collects at (0 when off), initializing libservprof on
 * the first call of the process: one relaxed load after that while nothing
 * runs, one call more while something does (live metrics alone raise the
 * native level, not tracing's; OTLP request tracing does: servprof__tracing_level
 * in ext.h). */
static inline int dropin_level(void)
{
    int on = SERVPROF__LEVEL_NOW();
    if (__builtin_expect(on == INT32_MAX, 0)) {
        servprof_init();
        on = SERVPROF__LEVEL_NOW();
        if (on == INT32_MAX)
            on = 0;
    }
    return on > 0 ? servprof__tracing_level() : 0;
}

/* A record whose level is the lowest (so it is kept whenever collection is
 * on: the caller asked IsEnable for its own level) in domain (NULL or ""
 * for none, as a native record without a domain). NULL when not kept. */
servprof_rec *dropin_begin(const char *domain);

/* Length of a message, bounded: a longer one is cut by servprof__attr_msg. */
size_t dropin_msg_len(const char *msg);

/* callbacks.c: the observer of libservprof's transitions. */
void dropin_observe(int what, int on, int by_exit);

/* dropin.c: a session started: the next SetProfilerCurrentStep() value is
 * the base that profiler_step_num counts from. */
void dropin_step_rebase(void);

#endif /* SERVPROF_DROPIN_H */
