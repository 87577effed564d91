/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_ctx.h — trace context: W3C traceparent and B3 headers, and the ids
 * servprof gives its spans (private; the library and `servprof export`).
 *
 * Span ids are derived, not drawn: a request's SERVER span id is a hash of
 * (trace id, the request id it was given, the process's seed), its phase
 * spans' ids a hash of the same with the phase's number, and a trace id made
 * for a request that came without one (MS_PROFILER_AUTO_TRACE) a hash of
 * (the process's seed, the request id). So the serving thread can write the
 * outgoing `traceparent` for the next hop (sp_tc_child_header) at once, with
 * no state shared with the thread that builds the spans later, and a replay
 * from a store gives the same ids again. The seed is 64 random bits per
 * process (the library) or the store's pid and start (replay).
 *
 * Every function is pure and thread-safe.
 */
#ifndef SERVPROF_OTLP_CTX_H
#define SERVPROF_OTLP_CTX_H

#include <stddef.h>
#include <stdint.h>

typedef struct sp_tc {
    uint8_t trace_id[16];
    uint8_t parent_id[8]; /* the caller's span: our SERVER span's parent */
    int has_parent;
    uint8_t flags;        /* W3C trace-flags: bit 0 sampled */
} sp_tc;

/* W3C `traceparent` ("00-<32 hex>-<16 hex>-<2 hex>", version 00, or a later
 * version's first four fields) or a B3 single header ("<16|32 hex>-<16 hex>
 * [-<0|1|d>[-<16 hex>]]", or just "0"/"1"/"d") into t. Lower-case hex as the
 * W3C spec asks; all-zero ids are invalid. Returns 0, or -1 (t untouched)
 * when s is neither; why (may be NULL) then says what was wrong. */
int sp_tc_parse(const char *s, sp_tc *t, const char **why);

/* The three B3 multi headers (X-B3-TraceId, X-B3-SpanId, X-B3-Sampled; the
 * last may be NULL: sampled). Returns 0 or -1 as sp_tc_parse. */
int sp_tc_parse_b3(const char *trace_id, const char *span_id, const char *sampled, sp_tc *t,
                   const char **why);

/* Writes "00-<trace>-<span>-<flags>" (56 bytes + NUL) into out (len >= 56). */
void sp_tc_format(const uint8_t trace_id[16], const uint8_t span_id[8], uint8_t flags, char *out,
                  size_t len);

/* Phases of a request: the span each gets (SP_PH_SERVER: the request's own). */
enum sp_tc_phase { SP_PH_SERVER = 0, SP_PH_QUEUE, SP_PH_PREFILL, SP_PH_DECODE, SP_PH_HANDOFF, SP_PH_N };

/* The id of phase ph's span of the request rid (rid_len bytes) in trace. */
void sp_tc_span_id(uint64_t seed, const uint8_t trace_id[16], const char *rid, size_t rid_len,
                   int ph, uint8_t out[8]);
/* The trace id a request without a trace context gets. */
void sp_tc_auto_trace_id(uint64_t seed, const char *rid, size_t rid_len, uint8_t out[16]);

/* traceidratio (the OTel SDKs' rule): sampled when the trace id's last 8
 * bytes, big-endian, shifted right by one, are below ratio * 2^63. The same
 * trace id gives the same answer everywhere. */
int sp_tc_ratio_sampled(const uint8_t trace_id[16], double ratio);

#endif /* SERVPROF_OTLP_CTX_H */
