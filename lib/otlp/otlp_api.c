/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_api.c — the public trace-context calls (servprof.h): the incoming
 * context becomes an ordinary record, the outgoing header is computed.
 *
 * Why a record: the assembler runs on the rings' consumer thread and sees
 * the request's records in their order; a `traceContext` event reaches it
 * the same way, needs no table shared with the serving threads, and lands in
 * the store too, where `servprof export --to otlp+http` finds it again. The
 * outgoing header needs no state at all: span ids are derived
 * (common/otlp_ctx.h), so the serving thread computes the id the assembler
 * will give the span later.
 */
#include <string.h>

#include "otlp.h"
#include "otlp_ctx.h"

static int record(const char *rid, const sp_tc *t, const char *tracestate)
{
    servprof_rec *x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    if (!x)
        return 0; /* off: nothing to join */
    char tp[64];
    sp_tc_format(t->trace_id, t->parent_id, t->flags, tp, sizeof tp);
    servprof_res_str(x, rid);
    servprof_attr_str(x, "traceparent", tp);
    if (tracestate && *tracestate && strlen(tracestate) < 256)
        servprof_attr_str(x, "tracestate", tracestate);
    servprof_event(x, "traceContext");
    return 0;
}

SERVPROF_API int servprof_trace_context(const char *rid, const char *traceparent,
                                        const char *tracestate)
{
    sp_tc t;
    const char *why;
    if (!rid || sp_tc_parse(traceparent, &t, &why) != 0)
        return SERVPROF_EINVAL;
    return record(rid, &t, tracestate);
}

SERVPROF_API int servprof_trace_context_b3(const char *rid, const char *trace_id,
                                           const char *span_id, const char *sampled)
{
    sp_tc t;
    const char *why;
    if (!rid || sp_tc_parse_b3(trace_id, span_id, sampled, &t, &why) != 0)
        return SERVPROF_EINVAL;
    return record(rid, &t, NULL);
}

SERVPROF_API void servprof_trace_end(const char *rid, const char *outcome)
{
    servprof_rec *x = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    if (!x)
        return;
    servprof_res_str(x, rid);
    servprof_attr_str(x, "outcome", outcome ? outcome : "ok");
    servprof_event(x, "traceEnd");
}

SERVPROF_API int servprof_trace_outgoing(const char *rid, const char *traceparent, char *out,
                                         size_t len)
{
    if (!out || len < 56 || !rid)
        return SERVPROF_EINVAL;
    uint64_t seed = sp_otlp_seed();
    size_t rl = strlen(rid);
    sp_tc t;
    uint8_t trace[16], span[8], flags = 1;
    if (traceparent && sp_tc_parse(traceparent, &t, NULL) == 0) {
        memcpy(trace, t.trace_id, 16);
        flags = t.flags & 1;
    } else {
        sp_tc_auto_trace_id(seed, rid, rl, trace);
        flags = (uint8_t)sp_otlp_auto_sampled(trace);
    }
    sp_tc_span_id(seed, trace, rid, rl, SP_PH_SERVER, span);
    sp_tc_format(trace, span, flags, out, len);
    return 0;
}
