/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_stubs.c — the reference header's OpenTelemetry-style tracing
 * symbols (Tracer.h: IsTraceEnable, ResAddAttr, NewSpanData, SpanActivate,
 * SpanFillCtxData, SpanAddAttribute, SpanSetStatus, SpanEndAndFree).
 *
 * servprof has no trace exporter, so these do the harmless thing: tracing
 * reports itself off, span data is NULL, everything else is ignored. The
 * header calls them only after IsTraceEnable() said yes or a parsed HTTP
 * context said "sampled"; ParseHttpCtx, which returns a C++ tuple by value,
 * is deliberately not exported, so the header uses its own default (not
 * sampled). Parameters are declared with C types of the same ABI
 * (references are pointers, TraceId is two uint64, SpanId one).
 */
#include "dropin.h"

DROPIN_API bool IsTraceEnable(void)
{
    return false;
}

DROPIN_API void ResAddAttr(const char *key, const char *value)
{
    (void)key;
    (void)value;
}

DROPIN_API void *NewSpanData(const char *name)
{
    (void)name;
    return NULL;
}

DROPIN_API void SpanActivate(void *span, uint64_t start_time)
{
    (void)span;
    (void)start_time;
}

DROPIN_API void SpanFillCtxData(void *span, uint64_t trace_hi, uint64_t trace_lo,
                                uint64_t span_id, uint64_t parent_id)
{
    (void)span;
    (void)trace_hi;
    (void)trace_lo;
    (void)span_id;
    (void)parent_id;
}

DROPIN_API void SpanAddAttribute(void *span, const char *key, const char *value)
{
    (void)span;
    (void)key;
    (void)value;
}

DROPIN_API void SpanSetStatus(void *span, bool ok, const void *msg)
{
    (void)span;
    (void)ok;
    (void)msg;
}

DROPIN_API void SpanEndAndFree(void *span, void *module_name)
{
    (void)span;
    (void)module_name;
}
