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

/* log and config are common/ (the tool uses them too): log.h, config.h. */
#include "config.h"
#include "log.h"

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
/* Counts one misuse (bad_input) and logs "fn: what; then", rate-limited
 * per call site (lim: a static of the site, zeroed): the first at once,
 * then one per 10 s with the count not shown. Thread-safe. */
typedef struct sp_misuse_limit {
    _Atomic int64_t next_ns;
    _Atomic uint64_t unshown;
} sp_misuse_limit;
void sp_warn_misuse(sp_misuse_limit *lim, const char *fn, const char *what, const char *then);

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
