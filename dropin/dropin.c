/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dropin.c — libms_service_profiler.so: the reference collector's C ABI on
 * libservprof. This file: events, levels and domains, start/stop, Meta and
 * steps. Spans are in spans.c, start/stop callbacks in callbacks.c, the
 * configuration getters in config_get.c, the tracing symbols that have no
 * meaning here in trace_stubs.c.
 *
 * DESIGN
 * One runtime per process. This library links libservprof.so (shared, not
 * static): a process that also uses servprof's own API (C or Python) gets
 * the same recorder, the same session, the same store and the same
 * config watcher, whichever API each call comes from. A static copy would
 * start a second runtime that races the first for the same store file.
 *
 * The hot path copies bytes and nothing more: a call finds the level (one
 * relaxed load), begins a native record (domain filter, timestamp), copies
 * the message text as one attribute (servprof__attr_msg, no parsing) and
 * finishes the record (name). The writer thread decodes the message
 * (lib/record/msgdec.c) into the same name, domain and args a native record of
 * the same content gets: one path for both, and a malformed message is
 * kept ("raw") and counted, never a crash.
 *
 * Levels: the reference's clients ask IsEnable(level) before they build a
 * message, so what reaches MarkEventEx / SpanEndEx was already selected;
 * records are begun at the lowest level (kept whenever collection is on).
 * The domain filter applies as for native records, and to a domain found
 * inside a legacy message on the writer thread.
 *
 * Thread safety: every function may be called from any thread; a span
 * handle belongs to the thread that started it (as in the reference).
 */
#include <stdatomic.h>
#include <string.h>

#include "dropin.h"

servprof_rec *dropin_begin(const char *domain)
{
    if (domain && !*domain)
        domain = NULL; /* the Python package passes "" for "no domain" */
    return servprof_rec_begin(SERVPROF_LEVEL_ERROR, domain);
}

size_t dropin_msg_len(const char *msg)
{
    return msg ? strnlen(msg, SERVPROF__MSG_MAX + 1) : 0;
}

/* ------------------------------------------------------------------ */
/* Levels and domains                                                   */
/* ------------------------------------------------------------------ */

DROPIN_API bool IsEnable(uint32_t level)
{
    int on = dropin_level();
    return on > 0 && level <= (uint32_t)on;
}

DROPIN_API bool IsValidDomain(const char *domainName)
{
    (void)dropin_level(); /* the filter of the config in force */
    return servprof__domain_pass(domainName) != 0;
}

/* Deprecated by the reference (its header asks it only when IsValidDomain
 * is missing); answers whether a domain filter is in force. */
DROPIN_API bool GetEnableDomainFilter(void)
{
    (void)dropin_level();
    return servprof__domain_filter_on() != 0;
}

/* ------------------------------------------------------------------ */
/* Events                                                               */
/* ------------------------------------------------------------------ */

DROPIN_API void MarkEventEx(const char *name, const char *domain, const char *msg)
{
    servprof_rec *r = dropin_begin(domain);
    if (!r)
        return;
    servprof__attr_msg(r, 0, msg ? msg : "", dropin_msg_len(msg));
    servprof_event(r, name ? name : "");
}

/* The legacy form: name, domain and attributes all inside msg. */
DROPIN_API void MarkEvent(const char *msg)
{
    if (!msg)
        return; /* as the reference */
    servprof_rec *r = dropin_begin(NULL);
    if (!r)
        return;
    servprof__attr_msg(r, 1, msg, dropin_msg_len(msg));
    servprof_event(r, "");
}

/* ------------------------------------------------------------------ */
/* Control, Meta, steps                                                 */
/* ------------------------------------------------------------------ */

DROPIN_API void StartServerProfiler(void)
{
    (void)servprof_start(); /* already collecting: nothing to do, as the reference */
}

DROPIN_API void StopServerProfiler(void)
{
    (void)servprof_stop();
}

DROPIN_API void AddMetaInfo(const char *key, const char *value)
{
    if (!key || !value) {
        servprof__count(SERVPROF__COUNT_BAD_INPUT, 1);
        return;
    }
    (void)servprof_meta(key, value);
}

/* profiler_step_num counts the steps a server reports from the first value
 * it reports after a session starts (the reference's rule), whatever the
 * numbering it uses: each increase by k counts k servprof_step() calls. */
static _Atomic int current_step;
static _Atomic int step_rebase = 1;

#define STEP_JUMP_MAX (1 << 20) /* a jump larger than this counts this many */

void dropin_step_rebase(void)
{
    atomic_store(&step_rebase, 1);
}

DROPIN_API void SetProfilerCurrentStep(int current_step_num)
{
    int prev = atomic_exchange(&current_step, current_step_num);
    if (atomic_exchange(&step_rebase, 0) || current_step_num <= prev)
        return;
    long long jump = (long long)current_step_num - prev;
    if (jump > STEP_JUMP_MAX)
        jump = STEP_JUMP_MAX;
    for (long long i = 0; i < jump; i++)
        servprof_step();
}

DROPIN_API int GetProfilerCurrentStep(void)
{
    return atomic_load(&current_step);
}
