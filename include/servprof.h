/* SPDX-License-Identifier: Apache-2.0 */
/*
 * servprof.h — the whole public API of libservprof.
 *
 * What is not declared in this file is not API. libservprof records what an
 * LLM inference server does (spans, events, metrics, links between request
 * ids) into one SQLite raw store per process, under the control of the JSON
 * file named by SERVICE_PROF_CONFIG_PATH (see docs/config.md).
 *
 * Design, in four rules:
 *
 *  1. A disabled call site costs one relaxed load and one predictable branch.
 *     Every record starts with servprof_rec_begin(), which returns NULL when
 *     the level or the domain is not being collected. Every other recording
 *     function accepts NULL and returns at once, so a call site reads
 *
 *         servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Schedule");
 *         servprof_res_str(r, rid);
 *         servprof_metric(r, "QueueSize", 3);
 *         servprof_event(r, "Enqueue");
 *
 *     and the cheap check servprof_is_enabled() is inline.
 *
 *  2. The hot path never blocks: no lock, no malloc, no syscall except the
 *     clock. A record is copied into a buffer owned by the calling thread and
 *     a background writer turns it into rows. When the buffer is full the
 *     record is dropped and counted (Meta 'dropped_records'); never silently.
 *
 *  3. Strings are copied. Every `const char *` argument may be freed or reused
 *     by the caller as soon as the call returns. Names and strings longer than
 *     SERVPROF_MAX_STRING bytes are truncated and counted. NULL strings are
 *     recorded as "" (and counted as bad input), never dereferenced.
 *
 *  4. One record is built at a time per thread: servprof_rec_begin() ...
 *     attributes ... one finishing call (servprof_event, servprof_span_begin,
 *     servprof_span_end_rec, servprof_span_at, servprof_link_rec,
 *     servprof_rec_cancel). Beginning a new record on a thread while one is
 *     still being built abandons the old one (counted).
 *
 * Thread safety: every function may be called from any thread. The record
 * handle (servprof_rec *) belongs to the thread that began it. A span handle
 * (servprof_span) may be ended on any thread.
 *
 * Errors: functions outside the hot path return int, 0 on success or a
 * negative SERVPROF_E* code; servprof_strerror() names it. Hot path
 * functions return nothing and count what they drop.
 *
 * Compiled out: with SERVPROF_DISABLE defined before this header is included
 * (-DSERVPROF_DISABLE), every function below becomes a static inline that
 * does nothing (rec_begin returns NULL, is_enabled 0, start/stop
 * SERVPROF_ESTATE, stats zeros), so a build that must not carry the
 * profiler keeps its call sites and needs neither the library nor -lservprof.
 */
#ifndef SERVPROF_H
#define SERVPROF_H

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdatomic.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SERVPROF_DISABLE)
#define SERVPROF_API static inline /* every function is a no-op, defined below */
#elif defined(_WIN32)
#define SERVPROF_API
#else
#define SERVPROF_API __attribute__((visibility("default")))
#endif

/* SERVPROF_VERSION_MAJOR / _MINOR / _PATCH, SERVPROF_VERSION ("0.1.0") and
 * SERVPROF_VERSION_HEX: the version of this header. */
#include "servprof_version.h"

/* The version of the library loaded at run time: SERVPROF_VERSION_HEX's
 * encoding (0x00MMmmpp), and the text "MAJOR.MINOR.PATCH". Thread-safe. */
SERVPROF_API unsigned servprof_version(void);
SERVPROF_API const char *servprof_version_string(void);

/* ------------------------------------------------------------------ */
/* Errors                                                               */
/* ------------------------------------------------------------------ */

/* One list, so codes and names cannot drift apart. Codes are only ever
 * added at the end. */
#define SERVPROF_ERRNO_MAP(X)                                              \
    X(OK, 0, "success")                                                    \
    X(EINVAL, -1, "invalid argument")                                      \
    X(ENOMEM, -2, "out of memory")                                         \
    X(EIO, -3, "input/output error")                                       \
    X(ESTATE, -4, "not allowed in the current state")                      \
    X(ECONFIG, -5, "configuration error")                                  \
    X(ESTORE, -6, "raw store error")                                       \
    X(ENOTFOUND, -7, "not found")

typedef enum {
#define SERVPROF_ERRNO_GEN(name, code, text) SERVPROF_##name = (code),
    SERVPROF_ERRNO_MAP(SERVPROF_ERRNO_GEN)
#undef SERVPROF_ERRNO_GEN
} servprof_err;

/* Static text for an error code; never NULL. Thread-safe. */
SERVPROF_API const char *servprof_strerror(int err);

/* ------------------------------------------------------------------ */
/* Levels                                                               */
/* ------------------------------------------------------------------ */

/* A record is kept when its level <= the configured profiler_level. */
#define SERVPROF_LEVEL_ERROR 10    /* also "L0" */
#define SERVPROF_LEVEL_INFO 20     /* also "L1"; the default */
#define SERVPROF_LEVEL_DETAILED 30 /* also "L2" */
#define SERVPROF_LEVEL_VERBOSE 40

/* Longest name, key or string value kept; longer ones are truncated. */
#define SERVPROF_MAX_STRING 4096

/* ------------------------------------------------------------------ */
/* Process life and control                                             */
/* ------------------------------------------------------------------ */

/* Reads SERVICE_PROF_CONFIG_PATH, creates the file when missing, starts the
 * watcher and, when "enable" is 1, a session. Optional: the first call of
 * any other function does it. Idempotent. Returns 0, or a negative code
 * when the library could not start (it then stays off; the program goes on). */
SERVPROF_API int servprof_init(void);

/* Stops collection (draining every buffer into the store), stops the watcher
 * and frees what the library holds. Also runs at exit. After it, recording
 * calls are ignored and counted; servprof_init() may start again. */
SERVPROF_API void servprof_shutdown(void);

/* Starts a session now, whatever the file says, using the current config
 * (or the defaults when there is no file). Returns 0, SERVPROF_ESTATE when
 * already collecting, or an error when the session could not be opened. */
SERVPROF_API int servprof_start(void);

/* Stops the current session: drains, commits, closes. 0, or SERVPROF_ESTATE
 * when not collecting. */
SERVPROF_API int servprof_stop(void);

/* Counts one step (a scheduler iteration). With profiler_step_num = N the
 * session stops after N steps and "enable": 0 is written back to the file. */
SERVPROF_API void servprof_step(void);

/* Folder of the current session, copied into buf (NUL-terminated).
 * Returns 0, SERVPROF_ESTATE when not collecting, SERVPROF_EINVAL when buf
 * is too small. */
SERVPROF_API int servprof_session_dir(char *buf, size_t len);

/* Raw store path of this process in the current session, like above. */
SERVPROF_API int servprof_store_path(char *buf, size_t len);

/* An integer or true/false key (true = 1) of the config the current
 * session started with, for a binding that runs a collector of its own
 * (the Python binding's torch profiler reads "acl_task_time" and the
 * "torch_prof_*" keys). Key "session" gives the session's serial number in
 * this process (it grows by one at every start). Returns 0 with *out set,
 * SERVPROF_ESTATE when not collecting, SERVPROF_EINVAL for a key that is not
 * an integer or true/false key. Thread-safe. */
SERVPROF_API int servprof_session_config_int(const char *key, int64_t *out);

/* Names this process and the calling thread in the timeline. Copied. */
SERVPROF_API void servprof_set_process_name(const char *name);
SERVPROF_API void servprof_set_thread_name(const char *name);

/* Adds a key/value to Meta of this process's store, now and in every later
 * session. A key set twice keeps the last value. Returns 0 or an error. */
SERVPROF_API int servprof_meta(const char *key, const char *value);

/* ------------------------------------------------------------------ */
/* The cheap check                                                      */
/* ------------------------------------------------------------------ */

/* The level being collected: 0 when off. Written by the library only; read
 * it through servprof_is_enabled(). C++ (before C++23) has no _Atomic, so
 * C++ sees a plain int of the same size and alignment and loads it with the
 * compiler's atomic builtin: the same relaxed load, the same symbol. */
#if defined(SERVPROF_DISABLE)
#define SERVPROF__LEVEL_NOW() 0
#elif defined(__cplusplus)
extern SERVPROF_API int servprof__level;
#define SERVPROF__LEVEL_NOW() __atomic_load_n(&servprof__level, __ATOMIC_RELAXED)
#else
extern SERVPROF_API _Atomic int servprof__level;
#define SERVPROF__LEVEL_NOW() atomic_load_explicit(&servprof__level, memory_order_relaxed)
#endif

/* Nonzero when records of this level are being collected now. One relaxed
 * load and a compare: use it to skip building expensive attributes. */
static inline int servprof_is_enabled(int level)
{
    int on = SERVPROF__LEVEL_NOW();
    return __builtin_expect(level <= on, 0);
}

/* Wall clock in nanoseconds since the Unix epoch (CLOCK_REALTIME), the
 * scale of every timestamp in the store. */
SERVPROF_API int64_t servprof_now_ns(void);

/* ------------------------------------------------------------------ */
/* Building a record                                                    */
/* ------------------------------------------------------------------ */

typedef struct servprof_rec servprof_rec; /* opaque; owned by the library */

/* Begins a record of this level and domain (domain may be NULL: records
 * without a domain pass every domain filter). Returns NULL when the record
 * would not be kept — every function below accepts NULL. The timestamp of an
 * event is taken here. Hot path. */
SERVPROF_API servprof_rec *servprof_rec_begin_slow(int level, const char *domain);
/* The same with the domain's length (SERVPROF__NOLEN: not known). */
SERVPROF_API servprof_rec *servprof__rec_begin_k(int level, const char *domain,
                                                 size_t domain_len);

/* A string's length when the compiler knows it (a literal, once inlined),
 * else SERVPROF__NOLEN: then the library measures it. */
#define SERVPROF__NOLEN ((size_t)-1)
#if defined(__GNUC__) && defined(__OPTIMIZE__)
static inline __attribute__((always_inline)) size_t servprof__len(const char *s)
{
    return s && __builtin_constant_p(__builtin_strlen(s)) ? __builtin_strlen(s) : SERVPROF__NOLEN;
}
#else
static inline size_t servprof__len(const char *s)
{
    (void)s;
    return SERVPROF__NOLEN;
}
#endif

static inline servprof_rec *servprof_rec_begin(int level, const char *domain)
{
    if (!servprof_is_enabled(level))
        return (servprof_rec *)0;
    return servprof__rec_begin_k(level, domain, servprof__len(domain));
}

/* Drops the record being built without recording it. */
SERVPROF_API void servprof_rec_cancel(servprof_rec *r);

/* The resource id ("rid" in args): a string or an integer. For a list of
 * requests (a batch) use servprof_attr_array_begin(r, "rid"). */
SERVPROF_API void servprof_res_str(servprof_rec *r, const char *rid);
SERVPROF_API void servprof_res_int(servprof_rec *r, int64_t rid);

/* Attributes: a key and a value, in args in the order given. Inside an
 * array, key is ignored (pass NULL). */
SERVPROF_API void servprof_attr_str(servprof_rec *r, const char *key, const char *val);
SERVPROF_API void servprof_attr_strn(servprof_rec *r, const char *key, const char *val, size_t len);
SERVPROF_API void servprof_attr_int(servprof_rec *r, const char *key, int64_t val);
SERVPROF_API void servprof_attr_double(servprof_rec *r, const char *key, double val);
SERVPROF_API void servprof_attr_bool(servprof_rec *r, const char *key, int val);
SERVPROF_API void servprof_attr_int_array(servprof_rec *r, const char *key,
                                          const int64_t *vals, size_t n);
SERVPROF_API void servprof_attr_double_array(servprof_rec *r, const char *key,
                                             const double *vals, size_t n);
/* A value that is already JSON text (an object, array, number ...). It is
 * checked on the writer thread; text that is not valid JSON is stored as a
 * JSON string instead, and counted. */
SERVPROF_API void servprof_attr_json(servprof_rec *r, const char *key, const char *json);

/* Nested values: arrays and objects, closed by servprof_attr_end(). A
 * batch's request list:
 *
 *     servprof_attr_array_begin(r, "rid");
 *     for each request:
 *         servprof_attr_object_begin(r, NULL);
 *         servprof_attr_str(r, "rid", id);
 *         servprof_attr_int(r, "iter", iter);
 *         servprof_attr_end(r);
 *     servprof_attr_end(r);
 *
 * Unclosed containers are closed when the record finishes. */
SERVPROF_API void servprof_attr_array_begin(servprof_rec *r, const char *key);
SERVPROF_API void servprof_attr_object_begin(servprof_rec *r, const char *key);
SERVPROF_API void servprof_attr_end(servprof_rec *r);

/* Metrics are attributes with the reference tool's key conventions:
 * gauge "name=": value, increment "name+": value, scope "scope#name": value. */
SERVPROF_API void servprof_metric(servprof_rec *r, const char *name, double val);
SERVPROF_API void servprof_metric_inc(servprof_rec *r, const char *name, double val);
SERVPROF_API void servprof_metric_scope(servprof_rec *r, const char *name, const char *val);

/* ------------------------------------------------------------------ */
/* Finishing a record                                                   */
/* ------------------------------------------------------------------ */

/* An instant event named `name` (args "type": 0). */
SERVPROF_API void servprof_event(servprof_rec *r, const char *name);

/* A link between two ids of one request (name "Link", args
 * {"type": 3, "from": from, "to": to}). `from` is the upstream id (the front
 * end's), `to` the downstream one (the engine's): reports name the request
 * by `from`. */
SERVPROF_API void servprof_link_rec(servprof_rec *r, const char *from, const char *to);
/* Shorthand: a link at INFO level without a domain. */
SERVPROF_API void servprof_link(const char *from, const char *to);

/* Trace context (request tracing over OTLP, docs/tracing.md). Tells that
 * request rid came with this trace context: its llm_request span joins that
 * trace as the child of the caller's span. traceparent is a W3C
 * `traceparent` header value or a B3 single `b3` header value; tracestate
 * (may be NULL) the W3C `tracestate`, passed on as given (at most 255
 * bytes). Records an INFO event "traceContext" (domain "Request") with rid,
 * traceparent (always W3C form) and tracestate, so a store keeps it too.
 * Returns 0; SERVPROF_EINVAL when the header is neither form (nothing
 * recorded: the request is then a root, traced or not as the sampling
 * settings say). Thread-safe; the cost of one event. */
SERVPROF_API int servprof_trace_context(const char *rid, const char *traceparent,
                                        const char *tracestate);
/* The same from B3's multi headers (X-B3-TraceId, X-B3-SpanId, X-B3-Sampled;
 * sampled may be NULL). */
SERVPROF_API int servprof_trace_context_b3(const char *rid, const char *trace_id,
                                           const char *span_id, const char *sampled);
/* Ends request rid's llm_request span where no httpRes / DecodeEnd does (an
 * instance of a disaggregated server that got the request from a router:
 * prefill, decode). outcome as httpRes's (NULL: "ok"; anything but ok,
 * success, finished, stop, length or 200 is a failure: status ERROR).
 * Records an INFO event "traceEnd" (domain "Request"; the reports ignore
 * it). Thread-safe; the cost of one event. */
SERVPROF_API void servprof_trace_end(const char *rid, const char *outcome);
/* The `traceparent` to send to the next hop for request rid: this process's
 * llm_request span of rid as the parent. traceparent is the header rid came
 * with (as given to servprof_trace_context; NULL or invalid: none, the
 * trace id made for it is used). Writes "00-<trace>-<span>-<flags>" and a
 * NUL into out (len >= 56). Returns 0, SERVPROF_EINVAL when len < 56.
 * Pure: no record, no lock; works whether tracing is on or not. */
SERVPROF_API int servprof_trace_outgoing(const char *rid, const char *traceparent, char *out,
                                         size_t len);

/* Spans. servprof_span_begin() finishes the record as the start of a span
 * (args "type": 2) and returns its handle (0 when not recording). End it
 * once, from any thread; a second end is ignored and counted, a span never
 * ended is counted and reported when the session stops. Many spans may be
 * open at once on one thread. */
typedef uint64_t servprof_span;
SERVPROF_API servprof_span servprof_span_begin(servprof_rec *r, const char *name);
SERVPROF_API void servprof_span_end(servprof_span span);
/* Ends a span adding the attributes of r (begun with servprof_rec_begin on
 * the ending thread; its domain and level are ignored). r may be NULL. */
SERVPROF_API void servprof_span_end_rec(servprof_rec *r, servprof_span span);

/* A whole span whose ends the caller measured with servprof_now_ns()
 * (start_ns <= end_ns). Used by the Python binding's `with span(...)`. */
SERVPROF_API void servprof_span_at(servprof_rec *r, const char *name,
                                   int64_t start_ns, int64_t end_ns);

/* ------------------------------------------------------------------ */
/* Lengths known at compile time                                        */
/* ------------------------------------------------------------------ */

/* The calls below with the lengths of key / value / name passed in (or
 * SERVPROF__NOLEN when not known). With optimization on, the macros that
 * follow make the documented names use them, so a string literal's length
 * is folded by the compiler and the hot path skips a strlen per string.
 * Same behaviour, same records; the documented functions stay exported
 * (the Python binding and function pointers use them). Define
 * SERVPROF_NO_LITERAL_LENGTHS before including this header to turn the
 * macros off. These names may change: call the documented ones. */
SERVPROF_API void servprof__attr_str_k(servprof_rec *r, const char *key, size_t key_len,
                                       const char *val, size_t val_len);
SERVPROF_API void servprof__attr_int_k(servprof_rec *r, const char *key, size_t key_len,
                                       int64_t val);
SERVPROF_API void servprof__event_k(servprof_rec *r, const char *name, size_t name_len);
SERVPROF_API servprof_span servprof__span_begin_k(servprof_rec *r, const char *name,
                                                  size_t name_len);

#if !defined(SERVPROF_NO_LITERAL_LENGTHS) && !defined(SERVPROF_DISABLE) && defined(__GNUC__) && \
    defined(__OPTIMIZE__)
#define servprof_attr_str(r, key, val) \
    servprof__attr_str_k((r), (key), servprof__len(key), (val), servprof__len(val))
#define servprof_res_str(r, rid) servprof__attr_str_k((r), "rid", 3, (rid), servprof__len(rid))
#define servprof_attr_int(r, key, val) servprof__attr_int_k((r), (key), servprof__len(key), (val))
#define servprof_event(r, name) servprof__event_k((r), (name), servprof__len(name))
#define servprof_span_begin(r, name) servprof__span_begin_k((r), (name), servprof__len(name))
#endif

/* ------------------------------------------------------------------ */
/* Counters                                                             */
/* ------------------------------------------------------------------ */

/* Fields are only ever added at the end. A caller passes the size of the
 * struct it was compiled with (servprof_get_stats() does so by itself), so a
 * program built against an older header keeps working with a newer library:
 * it gets the fields it knows, and a newer program with an older library
 * gets zeros in the fields that library does not know. */
typedef struct servprof_stats {
    uint64_t records;       /* records accepted into thread buffers */
    uint64_t dropped;       /* records dropped: buffers full */
    uint64_t written;       /* rows committed to the store */
    uint64_t truncated;     /* strings cut to SERVPROF_MAX_STRING */
    uint64_t bad_input;     /* NULL strings, misuse of the API */
    uint64_t span_double_end;
    uint64_t span_never_ended;
    uint64_t write_errors;  /* store errors (disk full ...) */
    /* Since 0.2 (servprof_get_stats_n): where accepted records went, in
     * records (a span's begin and end are two, in one row). After a stop,
     * records = stored + lost + metrics_only. */
    uint64_t stored;        /* records in rows committed to the store */
    uint64_t lost;          /* consumed but not stored: store errors, rolled-back
                               transactions, records of an ended session */
    uint64_t metrics_only;  /* taken by live metrics alone (metric_enable: 1, tracing off) */
} servprof_stats;

/* Totals since the process started (all sessions), into the first `size`
 * bytes of *out (bytes the library has no field for are zeroed). Use it
 * through the macro below. Thread-safe. */
SERVPROF_API void servprof_get_stats_n(servprof_stats *out, size_t size);
/* The same for the 8 fields of version 0.1 (the original entry point, kept
 * for programs built before servprof_get_stats_n existed). */
SERVPROF_API void(servprof_get_stats)(servprof_stats *out);
#define servprof_get_stats(out) servprof_get_stats_n((out), sizeof *(out))

/* ------------------------------------------------------------------ */
/* Compiled out (SERVPROF_DISABLE): every function, doing nothing        */
/* ------------------------------------------------------------------ */

#if defined(SERVPROF_DISABLE)
#define SERVPROF__NOOP __attribute__((unused)) static inline
SERVPROF__NOOP unsigned servprof_version(void) { return SERVPROF_VERSION_HEX; }
SERVPROF__NOOP const char *servprof_version_string(void) { return SERVPROF_VERSION; }
SERVPROF__NOOP const char *servprof_strerror(int err) { (void)err; return "servprof is compiled out (SERVPROF_DISABLE)"; }
SERVPROF__NOOP int servprof_init(void) { return 0; }
SERVPROF__NOOP void servprof_shutdown(void) {}
SERVPROF__NOOP int servprof_start(void) { return SERVPROF_ESTATE; }
SERVPROF__NOOP int servprof_stop(void) { return SERVPROF_ESTATE; }
SERVPROF__NOOP void servprof_step(void) {}
SERVPROF__NOOP int servprof_session_dir(char *buf, size_t len) { (void)buf; (void)len; return SERVPROF_ESTATE; }
SERVPROF__NOOP int servprof_store_path(char *buf, size_t len) { (void)buf; (void)len; return SERVPROF_ESTATE; }
SERVPROF__NOOP int servprof_session_config_int(const char *key, int64_t *out) { (void)key; (void)out; return SERVPROF_ESTATE; }
SERVPROF__NOOP void servprof_set_process_name(const char *name) { (void)name; }
SERVPROF__NOOP void servprof_set_thread_name(const char *name) { (void)name; }
SERVPROF__NOOP int servprof_meta(const char *key, const char *value) { (void)key; (void)value; return 0; }
SERVPROF__NOOP int64_t servprof_now_ns(void) { return 0; }
SERVPROF__NOOP servprof_rec *servprof_rec_begin_slow(int level, const char *domain) { (void)level; (void)domain; return (servprof_rec *)0; }
SERVPROF__NOOP servprof_rec *servprof__rec_begin_k(int level, const char *domain, size_t domain_len) { (void)level; (void)domain; (void)domain_len; return (servprof_rec *)0; }
SERVPROF__NOOP void servprof_rec_cancel(servprof_rec *r) { (void)r; }
SERVPROF__NOOP void servprof_res_str(servprof_rec *r, const char *rid) { (void)r; (void)rid; }
SERVPROF__NOOP void servprof_res_int(servprof_rec *r, int64_t rid) { (void)r; (void)rid; }
SERVPROF__NOOP void servprof_attr_str(servprof_rec *r, const char *key, const char *val) { (void)r; (void)key; (void)val; }
SERVPROF__NOOP void servprof_attr_strn(servprof_rec *r, const char *key, const char *val, size_t len) { (void)r; (void)key; (void)val; (void)len; }
SERVPROF__NOOP void servprof_attr_int(servprof_rec *r, const char *key, int64_t val) { (void)r; (void)key; (void)val; }
SERVPROF__NOOP void servprof_attr_double(servprof_rec *r, const char *key, double val) { (void)r; (void)key; (void)val; }
SERVPROF__NOOP void servprof_attr_bool(servprof_rec *r, const char *key, int val) { (void)r; (void)key; (void)val; }
SERVPROF__NOOP void servprof_attr_int_array(servprof_rec *r, const char *key, const int64_t *vals, size_t n) { (void)r; (void)key; (void)vals; (void)n; }
SERVPROF__NOOP void servprof_attr_double_array(servprof_rec *r, const char *key, const double *vals, size_t n) { (void)r; (void)key; (void)vals; (void)n; }
SERVPROF__NOOP void servprof_attr_json(servprof_rec *r, const char *key, const char *json) { (void)r; (void)key; (void)json; }
SERVPROF__NOOP void servprof_attr_array_begin(servprof_rec *r, const char *key) { (void)r; (void)key; }
SERVPROF__NOOP void servprof_attr_object_begin(servprof_rec *r, const char *key) { (void)r; (void)key; }
SERVPROF__NOOP void servprof_attr_end(servprof_rec *r) { (void)r; }
SERVPROF__NOOP void servprof_metric(servprof_rec *r, const char *name, double val) { (void)r; (void)name; (void)val; }
SERVPROF__NOOP void servprof_metric_inc(servprof_rec *r, const char *name, double val) { (void)r; (void)name; (void)val; }
SERVPROF__NOOP void servprof_metric_scope(servprof_rec *r, const char *name, const char *val) { (void)r; (void)name; (void)val; }
SERVPROF__NOOP void servprof_event(servprof_rec *r, const char *name) { (void)r; (void)name; }
SERVPROF__NOOP void servprof_link_rec(servprof_rec *r, const char *from, const char *to) { (void)r; (void)from; (void)to; }
SERVPROF__NOOP void servprof_link(const char *from, const char *to) { (void)from; (void)to; }
SERVPROF__NOOP int servprof_trace_context(const char *rid, const char *tp, const char *ts) { (void)rid; (void)tp; (void)ts; return 0; }
SERVPROF__NOOP int servprof_trace_context_b3(const char *rid, const char *t, const char *s, const char *f) { (void)rid; (void)t; (void)s; (void)f; return 0; }
SERVPROF__NOOP void servprof_trace_end(const char *rid, const char *o) { (void)rid; (void)o; }
SERVPROF__NOOP int servprof_trace_outgoing(const char *rid, const char *tp, char *out, size_t len) { (void)rid; (void)tp; if (out && len) out[0] = 0; return SERVPROF_ESTATE; }
SERVPROF__NOOP servprof_span servprof_span_begin(servprof_rec *r, const char *name) { (void)r; (void)name; return 0; }
SERVPROF__NOOP void servprof_span_end(servprof_span span) { (void)span; }
SERVPROF__NOOP void servprof_span_end_rec(servprof_rec *r, servprof_span span) { (void)r; (void)span; }
SERVPROF__NOOP void servprof_span_at(servprof_rec *r, const char *name, int64_t start_ns, int64_t end_ns) { (void)r; (void)name; (void)start_ns; (void)end_ns; }
SERVPROF__NOOP void servprof__attr_str_k(servprof_rec *r, const char *key, size_t key_len, const char *val, size_t val_len) { (void)r; (void)key; (void)key_len; (void)val; (void)val_len; }
SERVPROF__NOOP void servprof__attr_int_k(servprof_rec *r, const char *key, size_t key_len, int64_t val) { (void)r; (void)key; (void)key_len; (void)val; }
SERVPROF__NOOP void servprof__event_k(servprof_rec *r, const char *name, size_t name_len) { (void)r; (void)name; (void)name_len; }
SERVPROF__NOOP servprof_span servprof__span_begin_k(servprof_rec *r, const char *name, size_t name_len) { (void)r; (void)name; (void)name_len; return 0; }
SERVPROF__NOOP void servprof_get_stats_n(servprof_stats *out, size_t size)
{
    unsigned char *p = (unsigned char *)out;
    for (size_t i = 0; p && i < size; i++)
        p[i] = 0;
}
SERVPROF__NOOP void(servprof_get_stats)(servprof_stats *out) { servprof_get_stats_n(out, sizeof *out); }
#endif /* SERVPROF_DISABLE */

#ifdef __cplusplus
}
#endif
#endif /* SERVPROF_H */
