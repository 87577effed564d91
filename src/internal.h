/* SPDX-License-Identifier: Apache-2.0 */
/*
 * internal.h — the contracts between libservprof's modules. Not API.
 *
 * The library is a few modules, each in its own file(s), owning its state:
 *
 *   log       (log.c)       one stderr line per message, honoring PROF_LOG_LEVEL
 *   config    (config.c)    reads and validates the JSON config into sp_config
 *   watch     (watch.c)     a thread that notices edits of the config file
 *   session   (session.c)   the session folder shared by the processes of a host
 *   runtime   (runtime.c)   process life: init, start/stop, limits, fork, exit
 *   recorder  (record.c, tbuf.c, writer.c, storewrite.c, argbuild.c, msgdec.c)
 *                           the hot path, per-thread buffers, the writer thread
 *                           and the SQLite raw store; msgdec.c decodes the
 *                           drop-in's messages (ext.h: its entry points)
 *   samplers  (sampler*.c)  host / GPU / device-activity background sampling
 *
 * The runtime is the only caller of sp_recorder_* and sp_samplers_*, and
 * the only writer of servprof__level and sp__domain_filter. Start order:
 * session folder -> recorder open -> level published -> samplers start.
 * Stop order is the reverse, so every record taken before a stop is drained.
 */
#ifndef SERVPROF_INTERNAL_H
#define SERVPROF_INTERNAL_H

#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "servprof.h"

#define SP_PATH_MAX 4096

/* ------------------------------------------------------------------ */
/* log.c                                                                */
/* ------------------------------------------------------------------ */

enum { SP_LOG_DEBUG = 0, SP_LOG_INFO = 1, SP_LOG_WARNING = 2, SP_LOG_ERROR = 3, SP_LOG_NONE = 4 };

/* Writes "[msservice_profiler] [PID:<pid>] [<LEVEL>] <message>\n" to stderr
 * with a single write(2). Thread-safe, async-signal-unsafe, never fails. */
void sp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sp_vlog(int level, const char *fmt, va_list ap);
/* Nonzero when messages of this level are printed (PROF_LOG_LEVEL). */
int sp_log_enabled(int level);
/* Re-reads PROF_LOG_LEVEL (tests; after fork). */
void sp_log_reset(void);

/* ------------------------------------------------------------------ */
/* config.c                                                             */
/* ------------------------------------------------------------------ */

#define SP_MAX_DOMAINS 32
#define SP_DOMAIN_LEN 64
#define SP_FILTER_LEN 1024
#define SP_DEFAULT_BUFFER_KB 4096

typedef struct sp_config {
    int enable;                     /* 0 / 1 */
    int metric_enable;              /* 0 / 1: live metrics (metrics_*.c) */
    char metric_dir[SP_PATH_MAX];   /* expanded; "" = <prof_dir>/metrics */
    char metric_listen[64];         /* key "metric_port": "ADDR:PORT" this process tries to
                                       serve /metrics on; "" = none */
    char prof_dir[SP_PATH_MAX];     /* expanded (~, ${VAR}) */
    int profiler_level;             /* 10, 20, 30, 40 */
    int host_system_usage_freq;     /* -1 off, 1..50 Hz */
    int npu_memory_usage_freq;      /* -1 off, 1..50 Hz */
    int acl_task_time;              /* 0..3 */
    int acl_prof_task_time_level;   /* 0 = L0, 1 = L1 */
    int acl_prof_task_time_seconds; /* 0 = no limit, else 1..999 */
    char acl_data_type_config[SP_FILTER_LEN];
    char aclprof_aicore_metrics[128];
    char api_filter[SP_FILTER_LEN];    /* ';'-separated substrings */
    char kernel_filter[SP_FILTER_LEN];
    int timelimit;                  /* seconds, 0..7200, 0 = none */
    int ndomains;                   /* 0 = every domain */
    char domains[SP_MAX_DOMAINS][SP_DOMAIN_LEN];
    int torch_prof_stack;
    int torch_prof_modules;
    int torch_prof_step_num;
    int64_t profiler_step_num;      /* 0 = unset (no limit) */
    size_t buffer_bytes;            /* per-thread buffer: key "buffer_size_kb" (64..65536,
                                       default SP_DEFAULT_BUFFER_KB); ours, not the reference's */
} sp_config;

/* Problems found while reading a config: one message per problem. */
typedef struct sp_config_diag {
    int nwarnings;
    int nerrors;   /* > 0: the file could not be used (syntax error, I/O) */
    /* Called once per message (already formatted, no newline). NULL: log. */
    void (*emit)(void *ctx, int is_error, const char *msg);
    void *ctx;
} sp_config_diag;

/* Fills c with every default (prof_dir from $HOME). */
void sp_config_defaults(sp_config *c);

/* Parses JSON text into c (starting from defaults), reporting through d.
 * Returns 0, or SERVPROF_ECONFIG on a syntax error (c then untouched). */
int sp_config_parse(const char *text, size_t len, sp_config *c, sp_config_diag *d);

/* The value of integer or true/false key name of c (0/1 for flags): 0, or
 * -1 when name is not such a key. */
int sp_config_int_key(const sp_config *c, const char *name, int64_t *out);

/* Reads and parses a file. SERVPROF_ENOTFOUND when it does not exist. */
int sp_config_load(const char *path, sp_config *c, sp_config_diag *d);

/* A config file larger than this is a mistake (and is not read). */
#define SP_CONFIG_MAX_BYTES (1u << 20)
/* The jansson flags of every parse of a config file (sp_config_json_load). */
#define SP_CONFIG_JSON_FLAGS JSON_REJECT_DUPLICATES

/* The one JSON parse of config text: the runtime, `config check` and the
 * editor all use it. Returns a new reference to the top-level object, or
 * NULL with the reason in err (for users: no jansson flag names). The
 * json_t type is jansson's; callers include <jansson.h>. */
struct json_t;
struct json_t *sp_config_json_load(const char *text, size_t len, char *err, size_t errlen);

/* What a negative errno from sp_read_file() means for a config file, in
 * words (buf holds the text when it is not a constant). */
const char *sp_config_read_error(int rc, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* session.c                                                            */
/* ------------------------------------------------------------------ */

typedef struct sp_session {
    char dir[SP_PATH_MAX];            /* <prof_dir>/<MMDD-HHMM>[-N] */
    char store_path[SP_PATH_MAX];     /* dir/Trace_Service/ms_service_<host>-<pid>.db */
    char activity_path[SP_PATH_MAX];  /* dir/Trace_Service/ascend_service_profiler_<host>-<pid>.db */
    char hostname[256];
    int64_t start_ns;                 /* CLOCK_REALTIME at start */
    uint64_t serial;                  /* 1 for the first session of the process, ... */
} sp_session;

/* ------------------------------------------------------------------ */
/* The recorder (record.c, tbuf.c, writer.c, storewrite.c, argbuild.c)           */
/* ------------------------------------------------------------------ */

/* Opens the raw store at s->store_path (creating Trace_Service/ if needed),
 * writes the process/thread/Meta rows and starts the writer thread.
 * Returns 0, or an error (logged) and nothing is left running. */
int sp_recorder_open(const sp_session *s, const sp_config *c);

/* Drains every thread buffer, writes Meta totals (dropped_records, spans
 * never ended ...), commits and closes the store, stops the writer.
 * Called after servprof__level was set to 0. Idempotent. */
void sp_recorder_close(void);

/* In a forked child: forget the parent's writer thread, buffers and store
 * without touching their locks. Called by runtime's atfork child hook. */
void sp_recorder_atfork_child(void);

/* Process-level Meta kept across sessions (servprof_meta). */
int sp_recorder_meta(const char *key, const char *value);

/* The domain filter, published by the runtime before the level; NULL or
 * n == 0 keeps every domain. Never freed while the process runs. */
typedef struct sp_domain_filter {
    int n;
    char names[SP_MAX_DOMAINS][SP_DOMAIN_LEN];
} sp_domain_filter;
extern _Atomic(const sp_domain_filter *) sp__domain_filter;

/* Nonzero when a record of this domain passes the filter f. */
int sp_domain_pass(const sp_domain_filter *f, const char *domain);

/* ------------------------------------------------------------------ */
/* Samplers (sampler.c, sampler_host.c, sampler_nvml.c, sampler_cupti.c) */
/* ------------------------------------------------------------------ */

/* Starts the background samplers that c asks for. Records go through the
 * public recording API; device activity goes to s->activity_path. A missing
 * GPU library is one log line, never an error. Returns 0. */
int sp_samplers_start(const sp_session *s, const sp_config *c);
/* Finishes r as an instant event at ts_ns (CLOCK_REALTIME ns) instead of
 * now: for rows a sampler took earlier and records in a batch (record.c). */
void sp_rec_event_at(servprof_rec *r, const char *name, int64_t ts_ns);
/* Stops them and flushes device activity. Idempotent. */
void sp_samplers_stop(void);
void sp_samplers_atfork_child(void);

/* ------------------------------------------------------------------ */
/* runtime.c                                                            */
/* ------------------------------------------------------------------ */

/* servprof__level (defined in runtime.c) starts at SP_LEVEL_UNINIT, and is
 * set back to it in a fork child, so that the first record call of a process
 * fails the inline check's "off" branch and reaches servprof_rec_begin_slow(),
 * which calls sp_runtime_ensure() when it sees this value. The runtime then
 * publishes the real level (0 when off). This is how "no explicit init
 * needed" works without a constructor and without a cost on the hot path. */
#define SP_LEVEL_UNINIT INT_MAX

/* Makes sure the library is initialized for this process (first API call,
 * first call in a fork child). Cheap after: one atomic load and a pid check.
 * Every public control function calls it; servprof_rec_begin_slow() calls it
 * when it reads SP_LEVEL_UNINIT. */
void sp_runtime_ensure(void);

/* ------------------------------------------------------------------ */
/* util                                                                 */
/* ------------------------------------------------------------------ */

int64_t sp_now_realtime_ns(void);
int64_t sp_now_monotonic_ns(void);

#endif /* SERVPROF_INTERNAL_H */
