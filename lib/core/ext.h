/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ext.h — the few libservprof entry points that the drop-in library
 * (dropin/, libms_service_profiler.so) needs beyond servprof.h.
 *
 * Not API: this header is not installed and these names may change with
 * any release; only our own drop-in calls them. They are exported from
 * libservprof.so (SERVPROF_API, `servprof__` prefix) because the drop-in
 * links it as a shared library: one runtime per process, whichever API a
 * process uses (docs/dropin.md says why).
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef SERVPROF_EXT_H
#define SERVPROF_EXT_H

#include <stddef.h>
#include <stdint.h>

#include "servprof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest message text kept by servprof__attr_msg (bytes); longer text is
 * cut there (counted as truncated), and then usually fails to decode: it is
 * kept as "raw" (msgdec.c). */
#define SERVPROF__MSG_MAX 60000

/* Attaches a message in the reference collector's text (JSON object text,
 * or the legacy `^key^:value,` text) to the record being built. Hot path:
 * the bytes are copied, nothing is parsed here; the writer thread decodes
 * them into args members (msgdec.c). take_name_domain nonzero: the record
 * has no name or domain of its own and takes the message's "name" and
 * "domain" members. msg NULL counts as bad input and is recorded as "". */
SERVPROF_API void servprof__attr_msg(servprof_rec *r, int take_name_domain, const char *msg,
                                     size_t len);

/* Whether a record of this domain passes the domain filter in force (the
 * current session's, else the last one's; every domain before the first
 * session). NULL passes. Hot path: one atomic load, no lock. */
SERVPROF_API int servprof__domain_pass(const char *domain);
/* Nonzero when a domain filter is in force. */
SERVPROF_API int servprof__domain_filter_on(void);

/* The level tracing collects at: a session's, INFO while request tracing
 * over OTLP runs without one (its assembler reads drop-in messages), else
 * 0. servprof__level can be higher (live metrics record at INFO with
 * tracing off, and read no drop-in message), so the reference's IsEnable()
 * asks this. One relaxed load. */
SERVPROF_API int servprof__tracing_level(void);

/* Counts misuse the drop-in detects itself into the Meta totals. */
enum {
    SERVPROF__COUNT_BAD_INPUT = 0,   /* Meta bad_input */
    SERVPROF__COUNT_DOUBLE_END = 1,  /* Meta span_double_end */
    SERVPROF__COUNT_NEVER_ENDED = 2, /* Meta spans_never_ended */
    SERVPROF__COUNT_TRUNCATED = 3,   /* Meta truncated_strings */
};
SERVPROF_API void servprof__count(int what, uint64_t n);

/* Transitions the runtime reports to one observer. */
enum {
    SERVPROF__SWITCH_COLLECTION = 0, /* a session started (on 1) or stopped (on 0) */
    SERVPROF__SWITCH_METRIC = 1,     /* "metric_enable" of the config turned 1 / 0 */
};
/* The observer is called for every transition, in order, on the thread
 * that made it (the config watcher, or an API caller), while the runtime's
 * lock is held: it must return at once and must not call back into the
 * library (queue the news for another thread instead). by_exit: the stop
 * made by exit() or servprof_shutdown(). NULL unregisters. */
typedef void (*servprof__observer)(int what, int on, int by_exit);
SERVPROF_API void servprof__observe(servprof__observer fn);

/* What the drop-in's configuration getters answer (GetProfPath,
 * GetTorchProfStack ...): a copy of the config in force. */
typedef struct servprof__cfg {
    int collecting;             /* a session is open */
    int metric_enable;
    int profiler_level;         /* configured level (10..40) */
    int acl_task_time;          /* 0..3 */
    int acl_prof_task_time_level; /* 0 = L0, 1 = L1 */
    int torch_prof_stack, torch_prof_modules, torch_prof_step_num;
    char aicore_metrics[128];   /* "ACL_AICORE_..." */
    char prof_dir[4096];        /* the configured folder */
    char session_dir[4096];     /* "" when not collecting */
} servprof__cfg;
SERVPROF_API void servprof__config_view(servprof__cfg *out);

#ifdef __cplusplus
}
#endif
#endif /* SERVPROF_EXT_H */
