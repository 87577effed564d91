/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_pb.h — the protobuf bytes of OTLP trace export requests (private to
 * servprof: the library's live exporter and `servprof export --to otlp+http`).
 *
 * Why by hand: an ExportTraceServiceRequest is six nested messages of a fixed
 * shape (request > ResourceSpans > ScopeSpans > Span > KeyValue/Event/Status
 * > AnyValue), and protobuf's wire format for them is varints, fixed64s and
 * length prefixes. A generated encoder (protobuf-c, the C++ runtime) would
 * bring a code-generation step and a runtime library into every profiled
 * process for ~300 lines of straight code. The tests decode every body with
 * the official opentelemetry-proto definitions (tests/otlp/proto), so this
 * file is checked against the real schema, not against itself.
 *
 * Design: a span is encoded once, when it is complete, into its own bytes
 * (sp_otlp_span_encode: the body of a `Span` message). Queues hold those
 * bytes; a batch is the concatenation of spans wrapped in one ScopeSpans,
 * one ResourceSpans and the request (sp_otlp_request_encode), so a batch
 * costs one copy per span and no re-encoding. Field numbers are those of
 * opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto.
 *
 * Nothing here is thread-safe or not: every function works on the caller's
 * buffer only. Strings are pointer + NUL; they are copied into the output.
 */
#ifndef SERVPROF_OTLP_PB_H
#define SERVPROF_OTLP_PB_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer. oom is set (and stays set) when memory ran out;
 * the bytes are then incomplete and must not be sent. Free with
 * sp_otlp_buf_free (free(NULL)-like on a zeroed buffer). */
typedef struct sp_otlp_buf {
    uint8_t *p;
    size_t len, cap;
    int oom;
} sp_otlp_buf;

void sp_otlp_buf_free(sp_otlp_buf *b);
void sp_otlp_buf_reset(sp_otlp_buf *b); /* len = 0, oom = 0, memory kept */

enum sp_otlp_vtype { SP_OTLP_STR = 1, SP_OTLP_INT, SP_OTLP_DOUBLE, SP_OTLP_BOOL };

/* One attribute: key and a value of one of the four scalar kinds. */
typedef struct sp_otlp_attr {
    const char *key;
    int type; /* enum sp_otlp_vtype */
    const char *s;
    int64_t i;
    double d;
} sp_otlp_attr;

typedef struct sp_otlp_event {
    int64_t time_ns;
    const char *name;
    const sp_otlp_attr *attrs;
    int nattrs;
} sp_otlp_event;

enum sp_otlp_kind { SP_OTLP_KIND_INTERNAL = 1, SP_OTLP_KIND_SERVER = 2, SP_OTLP_KIND_CLIENT = 3 };
enum sp_otlp_status { SP_OTLP_STATUS_UNSET = 0, SP_OTLP_STATUS_OK = 1, SP_OTLP_STATUS_ERROR = 2 };

typedef struct sp_otlp_span {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t parent_id[8];
    int has_parent;          /* 0: a root span (no parent_span_id on the wire) */
    const char *trace_state; /* W3C tracestate, NULL or "" for none */
    const char *name;
    int kind;                /* enum sp_otlp_kind */
    int64_t start_ns, end_ns;
    const sp_otlp_attr *attrs;
    int nattrs;
    const sp_otlp_event *events;
    int nevents;
    int status;              /* enum sp_otlp_status */
    const char *status_msg;  /* NULL: none */
    uint32_t flags;          /* W3C trace flags (low 8 bits) */
} sp_otlp_span;

/* Appends the body of one `Span` message (without its tag and length). */
void sp_otlp_span_encode(sp_otlp_buf *b, const sp_otlp_span *s);

/* Appends a whole ExportTraceServiceRequest: one ResourceSpans with the
 * resource attributes res[0..nres), one ScopeSpans named scope (version
 * scope_ver, may be NULL) holding n spans whose bodies (from
 * sp_otlp_span_encode) are spans[i], lens[i]. */
void sp_otlp_request_encode(sp_otlp_buf *b, const sp_otlp_attr *res, int nres, const char *scope,
                            const char *scope_ver, const uint8_t *const *spans,
                            const size_t *lens, int n);

#endif /* SERVPROF_OTLP_PB_H */
