/* SPDX-License-Identifier: Apache-2.0 */
/*
 * analyze.h — `servprof analyze` as a library call: summaries, per-window
 * series, the engine's time budget, TTFT breakdown and ranked findings of
 * one profile, returned as the JSON document docs/analyze.md specifies (the
 * stable interface; the C structs behind it are not).
 *
 * Internal to the servprof tool (not libservprof API); linked as the static
 * library servprof_analyze. A call runs on the thread that makes it; the
 * parser it drives keeps no process-wide state (its log level and tap are
 * per thread: plog.c, tap.h), so calls on two threads do not meet.
 */
#ifndef SERVPROF_ANALYZE_H
#define SERVPROF_ANALYZE_H

#include <stddef.h>

#include <jansson.h>

/* The finding thresholds: X(id, name, default, meaning). Names are the
 * keys of --threshold NAME=VALUE and of the JSON "thresholds" object. */
#define SA_THRESHOLDS(X)                                                                            \
    X(QUEUE_SHARE, "queue_share", 0.20, "queueing: mean queue wait / mean e2e at least this")       \
    X(QUEUE_MIN_MS, "queue_min_ms", 5.0, "queueing: and the P90 queue wait at least this (ms)")     \
    X(KV_USAGE_HIGH, "kv_usage_high", 0.90, "KV pressure: peak KV usage at least this")             \
    X(PREEMPT_SHARE, "preempt_share", 0.02, "KV pressure: or this share of requests preempted")     \
    X(INTERFERENCE_RATIO, "interference_ratio", 1.5,                                                \
      "prefill interference: mixed step time / decode step time at least this")                     \
    X(INTERFERENCE_SHARE, "interference_share", 0.10,                                               \
      "prefill interference: and the decoding requests' wait in them this share of all e2e time")   \
    X(FILL_RATIO, "fill_ratio", 0.5, "under-filled batches: mean batch / largest batch at most this") \
    X(STALL_FRAC, "stall_frac", 0.20, "host stalls: stalled share of the run at least this")         \
    X(TOKENIZE_SHARE, "tokenize_share", 0.10, "slow tokenize: tokenize+detokenize / e2e at least this") \
    X(DP_IMBALANCE, "dp_imbalance", 1.5, "dp imbalance: busiest / least busy rank's busy time")     \
    X(IDLE_FRAC, "idle_frac", 0.50, "under-loaded: idle share of the run at least this")               \
    X(HANDOFF_SHARE, "handoff_share", 0.30, "PD hand-off: mean hand-off share of TTFT at least this")  \
    X(PD_QUEUE_MIN, "pd_queue_min", 2.0, "PD imbalance: requests in flight on a side that count as queueing") \
    X(PD_IMBALANCE_FRAC, "pd_imbalance_frac", 0.20,                                                  \
      "PD imbalance: share of the PD time one side is idle while the other queues, at least this")   \
    X(KV_PULL_RATIO, "kv_pull_ratio", 1.5, "slow KV pulls: slowest rank's pull time / fastest rank's") \
    X(MOE_IMBALANCE, "moe_imbalance", 1.5,                                                           \
      "expert imbalance: slowest EP rank's expert-compute time / the mean rank's, at least this")    \
    X(MOE_LOAD_RATIO, "moe_load_ratio", 1.3,                                                         \
      "expert imbalance: and (when loads are known) the busiest rank's routed rows / the mean's")

enum {
#define SA_ENUM(id, name, def, doc) SA_T_##id,
    SA_THRESHOLDS(SA_ENUM)
#undef SA_ENUM
    SA_NTHRESH
};

typedef struct sa_opts {
    const char *input;          /* raw stores folder/file, or a parse output folder */
    int nwindows;               /* time windows (default 10); ignored when window_s > 0 */
    double window_s;            /* window width in seconds (0: use nwindows) */
    int max_requests;           /* most rows in ttft_breakdown.requests (default 10000) */
    double threshold[SA_NTHRESH];
    int verbose;                /* 1: let the parser print its info lines */
    /* servprof report: a second consumer of a raw-store parse. NULL, or a tap
     * that also gets every row and record this parse's own tap sees; with
     * tap_counters the parse also makes the timeline's counter rows for it. */
    const struct prs_tap *also;
    int tap_counters;
    /* the parse's progress bar on stderr (raw stores only), as prs_opts.progress:
     * -1 on a terminal for a large input, 0 never (sa_opts_init), 1 always */
    int progress;
} sa_opts;

/* Fills the defaults. */
void sa_opts_init(sa_opts *o);
/* Applies "NAME=VALUE". Returns 0, or -1 (unknown name or bad number). */
int sa_opts_threshold(sa_opts *o, const char *name_eq_value);
/* The names of the thresholds, comma-separated (for messages). */
const char *sa_threshold_names(void);

/* Analyzes o->input. Returns the document of docs/analyze.md (the caller
 * frees it with json_decref), or NULL with a one-line reason in err. */
json_t *sa_analyze(const sa_opts *o, char *err, size_t errcap);

#endif
