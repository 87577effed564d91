/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h — live Prometheus metrics derived from the records (private).
 *
 * The metrics module turns the records that already flow through the
 * recorder into per-process aggregates (histograms, gauges, counters) and
 * publishes them in one memory-mapped file per process under a metrics
 * folder; one endpoint (`servprof metrics serve`) reads every file of the
 * folder and serves their sum in the Prometheus text format.
 *
 *   metrics_schema.c  the metric families: names, help, vLLM names, buckets
 *   metrics_agg.c     records -> aggregate (per-request state, observations)
 *   metrics_file.c    the per-process mmap file: publish (seqlock), read,
 *                     liveness (flock)
 *   metrics.c         life: start/stop with the config, the hooks the
 *                     recorder calls, the drain thread used while tracing is off
 *   metrics_expo.c    a folder of files -> Prometheus text exposition
 *
 * Thread model: the aggregate belongs to whichever thread consumes the
 * thread buffers — the writer (tracing on) or the metrics drain thread
 * (tracing off), never both (the runtime hands over under its mutex) — and
 * is guarded by one mutex so that the runtime can switch metrics off while
 * the writer runs.
 */
#ifndef SERVPROF_METRICS_H
#define SERVPROF_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "rec_format.h"

/* ---- the families (metrics_schema.c) ------------------------------ */

enum sp_mcounter {
    SP_MC_PROMPT_TOKENS,
    SP_MC_GENERATION_TOKENS,
    SP_MC_PREEMPTIONS,
    SP_MC_RECORDS,
    SP_MC_DROPPED,
    SP_MC_WRITE_ERRORS,
    SP_MC_UNTRACKED,
    SP_MC_OTLP_SENT,    /* request tracing over OTLP (lib/otlp): spans the collector accepted */
    SP_MC_OTLP_DROPPED, /* ... and spans dropped, every cause (the log and Meta split them) */
    SP_MC_N
};

enum sp_mgauge {
    SP_MG_WAITING,
    SP_MG_RUNNING,
    SP_MG_SWAPPED,
    SP_MG_KV_USAGE,
    SP_MG_KV_USED_BLOCKS,
    SP_MG_KV_TOTAL_BLOCKS,
    SP_MG_REQUESTS_TRACKED,
    SP_MG_N
};

enum sp_mhist {
    SP_MH_TTFT,
    SP_MH_TPOT,
    SP_MH_E2E,
    SP_MH_QUEUE,
    SP_MH_PREFILL,
    SP_MH_DECODE,
    SP_MH_BATCH_SIZE,
    SP_MH_BATCH_TOKENS,
    SP_MH_N
};

/* Request outcomes (httpRes "status") kept as label values per process: the
 * first SP_M_OUTCOMES distinct ones; later ones count as "other". */
#define SP_M_OUTCOMES 8
#define SP_M_OUTCOME_LEN 32
#define SP_M_BUCKETS_MAX 340 /* bounds + the +Inf bucket */

typedef struct sp_mdef {
    const char *name; /* without the servprof_ prefix */
    const char *help;
    const char *vllm; /* the vLLM metric it corresponds to ("" none) */
} sp_mdef;

extern const sp_mdef sp_mcounter_defs[SP_MC_N];
extern const sp_mdef sp_mgauge_defs[SP_MG_N];
extern const sp_mdef sp_mhist_defs[SP_MH_N];
extern const sp_mdef sp_mrequests_def; /* requests_total{outcome} */

/* The domains metrics read (the vocabulary's): with tracing off, records of
 * other domains are not taken at all (their call sites cost what a disabled
 * one does, one call that returns NULL). Records without a domain pass. */
#define SP_METRICS_NDOMAINS 4
extern const char *const sp_metrics_domains[SP_METRICS_NDOMAINS];

/* The upper bounds of histogram h (without +Inf); returns how many. */
int sp_mhist_bounds(int h, const double **bounds);
/* The bucket index of v in histogram h (the last one is +Inf). */
int sp_mhist_bucket(int h, double v);

/* ---- one process's values (what the file holds) ------------------- */

typedef struct sp_mhist_data {
    double count, sum;
    double b[SP_M_BUCKETS_MAX]; /* per bucket, not cumulative; [nbounds] is +Inf */
} sp_mhist_data;

typedef struct sp_mdata {
    char role[64];     /* the process name */
    char model[128];   /* servprof_meta "model_name" */
    char dp_rank[32];  /* servprof_meta "dpRankId" */
    char outcome[SP_M_OUTCOMES][SP_M_OUTCOME_LEN];
    double outcome_n[SP_M_OUTCOMES];
    double other_outcomes;
    double counter[SP_MC_N];
    double gauge[SP_MG_N];
    uint64_t gauge_set; /* bit g: gauge g was ever set */
    sp_mhist_data hist[SP_MH_N];
} sp_mdata;

/* ---- the aggregate (metrics_agg.c): consumer thread only ---------- */

void sp_magg_reset(void);
/* Folds one record (h: its header, times already in realtime ns). */
void sp_magg_record(const sp_rec_hdr *h, const uint8_t *rec, size_t len);
/* After each pass over every ring: observes requests that ended before it. */
void sp_magg_pass_end(void);
/* The values now; the caller fills labels and servprof's own counters. */
sp_mdata *sp_magg_values(void);
/* Drops per-request state older than max_age_ns (counted untracked). */
void sp_magg_sweep(int64_t now_ns, int64_t max_age_ns);
/* Frees everything (fork child: forget = 1 leaks instead, safely). */
void sp_magg_free(int forget);

/* ---- the per-process file (metrics_file.c) ------------------------ */

typedef struct sp_mfile sp_mfile;

/* Creates <dir>/servprof-<pid>-<start>.metrics (the folder too), holds an
 * exclusive flock on it for the life of the process. NULL (logged) on
 * failure. */
sp_mfile *sp_mfile_create(const char *dir);
void sp_mfile_publish(sp_mfile *f, const sp_mdata *d);
const char *sp_mfile_path(const sp_mfile *f);
/* Unmaps and closes (the lock goes: readers see the process as dead). */
void sp_mfile_close(sp_mfile *f);
/* Fork child: unmap and close without writing (the parent keeps its lock). */
void sp_mfile_forget(sp_mfile *f);

/* Reads a file written by sp_mfile_publish. *alive: its process still holds
 * the lock. Returns 0, or a negative code with a reason in why. */
int sp_mfile_read(const char *path, sp_mdata *out, int *alive, int64_t *pid, char *why,
                  size_t whylen);

/* ---- the exposition (metrics_expo.c) ------------------------------ */

/* Reads every *.metrics file of dir and writes the Prometheus text format
 * (version 0.0.4) of their sum into a malloc'ed buffer (*out, freed by the
 * caller with free()). Series of the same labels (role, model_name,
 * dp_rank) are summed; gauges only over live processes. Files that cannot
 * be read are counted in servprof_metrics_files_unreadable. Returns 0 or a
 * negative code (dir unreadable: the text says so in a comment). */
int sp_metrics_render(const char *dir, char **out, size_t *len);

/* ---- HTTP (metrics_http.c) ---------------------------------------- */

struct sockaddr_in;
typedef struct sp_mhttp sp_mhttp;
/* sp_mhttp_parse_listen (the "ADDR:PORT" syntax) is common/config.h. */
/* Serves GET /metrics (the text of dir) on listen, from a thread of its
 * own; *port gets the port bound (PORT 0: one the kernel chose). At most
 * max_conns connections at once (<= 0: SP_MHTTP_DEFAULT_CONNS), half of
 * them per client address (metrics_http.c says why and how). NULL with a
 * reason in why (what libmicrohttpd or the system said). Thread-safe. */
#define SP_MHTTP_DEFAULT_CONNS 16
sp_mhttp *sp_mhttp_start(const char *listen, const char *dir, int max_conns, int *port,
                         char *why, size_t whylen);
/* Connections refused (or closed to make room) so far, by cause. */
enum { SP_MHTTP_REFUSED_CAP = 0, SP_MHTTP_REFUSED_ADDR = 1, SP_MHTTP_EVICTED_SLOW = 2 };
uint64_t sp_mhttp_refused(const sp_mhttp *h, int why);
/* Stops serving and frees h (joins its thread). stop(NULL) is a no-op. */
void sp_mhttp_stop(sp_mhttp *h);
/* Fork child: closes the child's copy of the listening socket; h is then
 * forgotten (not freed: the parent's daemon state may be mid-update). */
void sp_mhttp_forget(sp_mhttp *h);

/* ---- life and hooks (metrics.c) ----------------------------------- */

/* Brings metrics in line with c (NULL: off) while tracing is (1) or is not
 * (0) collecting: creates or closes this process's file, starts the drain
 * thread when metrics are on and tracing is off, stops it otherwise.
 * Runtime only, under its mutex. Returns the level the metrics need the
 * call sites to record at (0 when off). */
int sp_metrics_configure(const sp_config *c, int tracing);
/* The level metrics need now (0 when off). */
int sp_metrics_level(void);
/* The recorder's consumer calls these: each record it drains (before any
 * filtering of its own), and after each pass over the buffers. */
void sp_metrics_on_record(const sp_rec_hdr *h, const uint8_t *rec, size_t len);
void sp_metrics_after_pass(void);
/* Fork child: forget the parent's file and thread. */
void sp_metrics_atfork_child(void);
/* The folder metrics go to for config c. */
void sp_metrics_dir_for(const sp_config *c, char *out, size_t len);

#endif /* SERVPROF_METRICS_H */
