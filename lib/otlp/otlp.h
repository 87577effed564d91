/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.h — always-on request tracing over OTLP (private to libservprof).
 *
 *   otlp_conf.c    the settings: MS_TRACE_ENABLE and its sampling variables,
 *                  the OTEL_* variables, the config's trace_export keys
 *   otlp_asm.c     records -> one request's spans (consumer thread)
 *   otlp_export.c  the bounded queue and the exporter thread (libcurl)
 *   otlp.c         life: on/off with the config, the hooks, fork, the counts
 *
 * Thread model. The assembler belongs to whichever thread consumes the
 * rings — the writer (a store session open) or the metrics drain thread (no
 * session) — exactly as the live metrics aggregate does: metrics.c calls
 * sp_otlp_on_record() beside sp_magg_record() and sp_otlp_after_pass() after
 * each pass, so serving threads pay nothing beyond the records they already
 * copy. Finished spans are encoded there (common/otlp_pb.c) and pushed into
 * the exporter's bounded queue; the exporter thread batches and POSTs them.
 * The queue is the only thing the two threads share (its own mutex).
 */
#ifndef SERVPROF_OTLP_H
#define SERVPROF_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "otlp_pb.h"
#include "rec_format.h"

enum sp_otlp_sampler {
    SP_SMP_ALWAYS_ON,
    SP_SMP_ALWAYS_OFF,
    SP_SMP_RATIO,
    SP_SMP_PB_ALWAYS_ON, /* parentbased_*: a parent's sampled flag decides; the root rule else */
    SP_SMP_PB_ALWAYS_OFF,
    SP_SMP_PB_RATIO,
};

typedef struct sp_otlp_conf {
    int on;
    char url[2048];          /* the traces endpoint, /v1/traces included */
    char headers[4096];      /* OTEL_EXPORTER_OTLP_HEADERS: "k=v,k2=v2" (URL-decoded at use) */
    int timeout_ms;          /* per export (OTEL_EXPORTER_OTLP_TIMEOUT, default 10000) */
    int gzip;                /* OTEL_EXPORTER_OTLP_COMPRESSION=gzip */
    char ca_file[SP_PATH_MAX]; /* OTEL_EXPORTER_OTLP_CERTIFICATE ("" system CAs) */
    char service[256];       /* OTEL_SERVICE_NAME, else the process name */
    char resource[4096];     /* OTEL_RESOURCE_ATTRIBUTES: "k=v,..." */
    int auto_trace;          /* requests without a trace context get one */
    int sample_rate_n;       /* MS_PROFILER_SAMPLE_RATE: 1 in N of those (0: all) */
    int error_only;          /* MS_PROFILER_SAMPLE_ERROR: failed requests only */
    int sampler;             /* enum sp_otlp_sampler */
    double ratio;            /* the ratio samplers' argument */
    int delay_ms;            /* OTEL_BSP_SCHEDULE_DELAY (5000) */
    int max_queue;           /* OTEL_BSP_MAX_QUEUE_SIZE (2048) */
    int max_batch;           /* OTEL_BSP_MAX_EXPORT_BATCH_SIZE (512) */
    int flush_ms;            /* at exit: how long the last sends may take (OTEL_BSP_EXPORT_TIMEOUT, 30000, capped 5000) */
} sp_otlp_conf;

/* ---- otlp_conf.c --------------------------------------------------- */

/* The settings from the environment and config c (NULL: environment only).
 * Problems (a bad value) are logged once per distinct text and the default
 * is used instead. */
void sp_otlp_conf_read(const sp_config *c, sp_otlp_conf *out);

/* ---- the counts (otlp.c) ------------------------------------------- */

enum sp_otlp_count {
    SP_OC_REQUESTS,     /* requests ended and considered */
    SP_OC_UNSAMPLED,    /* not sampled (sampler, parent flag, error-only, no context): not drops */
    SP_OC_SPANS_QUEUED, /* spans put in the queue */
    SP_OC_SPANS_SENT,   /* spans the collector accepted (2xx) */
    SP_OC_DROP_QUEUE_FULL,
    SP_OC_DROP_REJECTED,   /* 4xx other than 408/429: the collector refused them */
    SP_OC_DROP_RETRIES,    /* 429/503/5xx/network errors past the retry budget */
    SP_OC_DROP_SHUTDOWN,   /* still queued when the exit flush ran out of time */
    SP_OC_DROP_UNTRACKED,  /* request state could not be kept (table full, too old) */
    SP_OC_DROP_ENCODE,     /* out of memory encoding */
    SP_OC_EXPORTS,         /* POSTs made */
    SP_OC_RETRIES,         /* POSTs repeated */
    SP_OC_N
};
extern const char *const sp_otlp_count_names[SP_OC_N];
void sp_otlp_count(int which, uint64_t n);
uint64_t sp_otlp_count_get(int which);

/* ---- otlp_asm.c: consumer thread only ------------------------------- */

void sp_otlp_asm_reset(const sp_otlp_conf *c, uint64_t seed);
void sp_otlp_asm_record(const sp_rec_hdr *h, const uint8_t *rec, size_t len);
/* After each pass: ends requests that ended before it, sweeps old ones. */
void sp_otlp_asm_pass_end(int64_t now_ns);
/* Ends every request whose end was seen (final pass) and frees the rest. */
void sp_otlp_asm_free(int forget);

/* ---- otlp_export.c -------------------------------------------------- */

/* Starts the exporter thread for c with resource attributes res[0..n)
 * (copied). Returns 0, or -1 logged (no libcurl session possible). */
int sp_otlp_export_start(const sp_otlp_conf *c, const sp_otlp_attr *res, int nres);
/* Replaces the resource attributes (copied). 0, or -1 out of memory (the
 * old ones stay). Thread-safe. */
int sp_otlp_export_set_resource(const sp_otlp_attr *res, int nres);
/* Queues one encoded span (copied). Never blocks on the network: a full
 * queue drops it (counted). Thread-safe. */
void sp_otlp_export_push(const uint8_t *span, size_t len);
/* Whether a push now would be dropped (queue full, or no exporter): the
 * assembler asks before encoding, so that drops during a stall cost no
 * encoding. Any thread. */
int sp_otlp_export_full(void);
/* Sends what is queued within the flush bound, then stops the thread;
 * what is left is counted SP_OC_DROP_SHUTDOWN. Idempotent. */
void sp_otlp_export_stop(void);
/* Spans in the queue now. */
int sp_otlp_export_queued(void);
void sp_otlp_export_atfork_child(void);

/* ---- otlp.c: life ---------------------------------------------------- */

/* Brings tracing in line with c (NULL: environment only / off at shutdown
 * when off is 1). Runtime (through metrics.c), under its mutex. Returns 1
 * when on. */
int sp_otlp_configure(const sp_config *c, int off);
/* Whether sp_otlp_configure(c, off) would stop what runs now. */
int sp_otlp_would_change(const sp_config *c, int off);
int sp_otlp_on(void);
void sp_otlp_on_record(const sp_rec_hdr *h, const uint8_t *rec, size_t len);
void sp_otlp_after_pass(void);
void sp_otlp_atfork_child(void);
/* Whether a made trace id is sampled by the root rule now (outgoing header). */
int sp_otlp_auto_sampled(const uint8_t trace_id[16]);
/* The process's seed for derived ids (otlp_ctx.h); made once. */
uint64_t sp_otlp_seed(void);
/* "key=value ..." of the counts, for the log and Meta. */
void sp_otlp_counts_text(char *out, size_t len);

/* The domains the assembler reads: with tracing off in the store, the
 * runtime's filter lets these through while OTLP is on. */
#define SP_OTLP_NDOMAINS 7
extern const char *const sp_otlp_domains[SP_OTLP_NDOMAINS];

#endif /* SERVPROF_OTLP_H */
