/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler.h — private contracts between the sampler modules (not API).
 *
 *   sampler.c         the one sampler thread: absolute deadlines, job table,
 *                     start/stop/fork; emits rows through sp_sample_emit()
 *   sampler_host.c    /proc/stat, /proc/meminfo, /proc/self/stat
 *   sampler_nvml.c    GPU memory and utilization through NVML (dlopen)
 *   sampler_cupti.c   device activity through CUPTI (dlopen) into the
 *                     activity store
 *   activity_store.c  the SQLite file with tables Api, Kernel, Communication
 *
 * Every periodic function below runs on the sampler thread only, so none of
 * them locks anything. The CUPTI completion callback is the exception: it
 * runs on a CUPTI thread and takes the lock in sampler_cupti.c.
 */
#ifndef SERVPROF_SAMPLER_H
#define SERVPROF_SAMPLER_H

#include <stdint.h>

#include "internal.h"

/* ------------------------------------------------------------------ */
/* Rows (sampler.c)                                                     */
/* ------------------------------------------------------------------ */

#define SP_SAMPLE_MAX_VALUES 4

/* One sampled row: an event of `domain`/`name` whose args are gauges
 * "<key>=": value, plus an optional integer scope "scope#<scope_key>". */
typedef struct sp_sample_row {
    int level;                 /* SERVPROF_LEVEL_INFO or _DETAILED */
    const char *domain;        /* "host" or "npu" */
    const char *name;          /* "CpuUsage", "MemUsage", ... */
    int nvalues;
    const char *keys[SP_SAMPLE_MAX_VALUES]; /* without the '=' suffix */
    double values[SP_SAMPLE_MAX_VALUES];
    const char *scope_key;     /* NULL: no scope */
    int64_t scope;
} sp_sample_row;

/* Records the row through the public API (servprof_rec_begin ... event at
 * the time of this call; on the sampler thread in a batch every 100 ms, see
 * sampler.c), and hands it to the observer at once if one is set. */
void sp_sample_emit(const sp_sample_row *row);

/* Tests: every emitted row is also given to fn (on the sampler thread).
 * Set it before sp_samplers_start(), clear it after sp_samplers_stop(). */
typedef void (*sp_sample_observer)(void *ctx, const sp_sample_row *row);
void sp_samplers_set_observer(sp_sample_observer fn, void *ctx);

/* What the last sampler thread did, filled when it exits (benchmarks,
 * tests). Valid after sp_samplers_stop(). */
typedef struct sp_sampler_stats {
    uint64_t host_samples;   /* host sampling passes */
    uint64_t gpu_samples;    /* NVML sampling passes */
    uint64_t ticks_skipped;  /* deadlines missed (thread was late) */
    int64_t thread_cpu_ns;   /* CPU time of the sampler thread, all of it */
    int64_t open_cpu_ns;     /* part spent opening the samplers (dlopen ...) */
    int64_t run_ns;          /* monotonic time from thread start to exit */
    int64_t base_ns;         /* monotonic time the deadlines count from */
    int64_t end_ns;          /* monotonic time the thread exited */
} sp_sampler_stats;
void sp_samplers_get_stats(sp_sampler_stats *out);

/* The absolute CLOCK_MONOTONIC deadline of the pass running now; valid on
 * the sampler thread only, i.e. in an observer (tests check with it that
 * pass k is due at base_ns + k periods). */
int64_t sp_samplers_pass_deadline(void);

/* ------------------------------------------------------------------ */
/* Host (sampler_host.c)                                                */
/* ------------------------------------------------------------------ */

#define SP_HOST_MAX_CPUS 1024

/* Jiffies of one "cpu" line of /proc/stat: busy and total (idle is the
 * not-busy part; guest time is already inside user). */
typedef struct sp_cpu_times {
    uint64_t busy;
    uint64_t total;
} sp_cpu_times;

/* Parses /proc/stat text: the aggregate line into *all, "cpuN" lines into
 * cpus[N] (N < max; absent cores stay zero) and *ncpu = highest N + 1.
 * Returns 0, or -1 when the aggregate line is missing or malformed. */
int sp_host_parse_stat(const char *text, sp_cpu_times *all, sp_cpu_times *cpus, int max,
                       int *ncpu);

/* Parses /proc/meminfo text into MiB. Available falls back to
 * MemFree + Buffers + Cached on kernels without MemAvailable. -1 when
 * MemTotal is missing. */
int sp_host_parse_meminfo(const char *text, double *total_mib, double *avail_mib);

/* Parses /proc/self/statm text: the resident set in pages. */
int sp_host_parse_statm(const char *text, int64_t *rss_pages);

/* Parses /proc/uptime text ("uptime idle", seconds with two decimals; idle
 * summed over the online CPUs) into centiseconds. 0, or -1 when malformed. */
int sp_host_parse_uptime(const char *text, int64_t *up_cs, int64_t *idle_cs);

/* Whole-machine busy % from the growth of uptime and idle (centiseconds)
 * with ncpu CPUs online, clamped to 0..100; -1 when no time passed or
 * idle went backwards. */
double sp_uptime_busy_pct(int64_t d_up_cs, int64_t d_idle_cs, int ncpu);

/* Busy % between two readings, 0..100; -1 when no time passed. */
double sp_cpu_busy_pct(const sp_cpu_times *prev, const sp_cpu_times *cur);

typedef struct sp_host_sampler sp_host_sampler;
/* Opens the /proc files and takes the baseline reading. NULL (logged once)
 * when /proc cannot be read. */
sp_host_sampler *sp_host_open(int per_core);
/* One pass: CpuUsage (+ per core), MemUsage, ProcessUsage rows. */
void sp_host_sample(sp_host_sampler *h);
void sp_host_close(sp_host_sampler *h);
/* Fork child: close the inherited descriptors and free, nothing else. */
void sp_host_forget(sp_host_sampler *h);

/* ------------------------------------------------------------------ */
/* GPU memory (sampler_nvml.c)                                          */
/* ------------------------------------------------------------------ */

typedef struct sp_nvml sp_nvml;
/* dlopen()s NVML ($SERVPROF_NVML_LIB, else libnvidia-ml.so.1), initializes
 * it and finds the devices. NULL, with one log line, when any of it fails. */
sp_nvml *sp_nvml_open(void);
/* One DeviceMemory row per device. */
void sp_nvml_sample(sp_nvml *n);
void sp_nvml_close(sp_nvml *n);
void sp_nvml_forget(sp_nvml *n);
/* Number of devices being sampled. */
int sp_nvml_device_count(const sp_nvml *n);

/* ------------------------------------------------------------------ */
/* Device activity (sampler_cupti.c)                                    */
/* ------------------------------------------------------------------ */

/* Loads CUPTI ($SERVPROF_CUPTI_LIB, else libcupti.so), enables the activity
 * kinds of c (acl_task_time 1/2, L0/L1, filters) and writes what comes into
 * s->activity_path. Returns 0 when running, -1 (one log line) otherwise. */
int sp_cupti_start(const sp_session *s, const sp_config *c);
/* Sampler thread, every second: hands finished buffers to the store. */
void sp_cupti_flush(void);
/* The ";N" limit passed: stop collecting activity, keep what was taken. */
void sp_cupti_limit(void);
/* Disables every kind, flushes, closes the store. Idempotent. */
void sp_cupti_stop(void);
void sp_cupti_atfork_child(void);

/* Counters of the last/current CUPTI run (tests, logs). */
typedef struct sp_cupti_stats {
    uint64_t kernels, copies, apis, comms;  /* rows written */
    uint64_t filtered;                      /* records dropped by a filter */
    uint64_t dropped;                       /* records CUPTI says it dropped */
    uint64_t late;                          /* records after stop / limit */
    int64_t clock_offset_ns;                /* epoch ns = CUPTI ns + offset */
} sp_cupti_stats;
void sp_cupti_get_stats(sp_cupti_stats *out);

/* Nonzero when name contains one of the ';'-separated substrings of
 * filter; an empty filter keeps everything. */
int sp_name_filter_pass(const char *filter, const char *name);

/* ------------------------------------------------------------------ */
/* Activity store (activity_store.c)                                    */
/* ------------------------------------------------------------------ */

typedef struct sp_act_kernel {
    const char *type;   /* KERNEL, MEMCPY_HtoD, MEMCPY_DtoH, MEMCPY_DtoD, MEMSET ... */
    const char *name;
    int64_t start, end; /* epoch ns */
    int64_t device, stream, correlation;
} sp_act_kernel;

typedef struct sp_act_api {
    const char *name;
    int64_t start, end;
    int64_t pid, tid, correlation;
} sp_act_api;

typedef struct sp_activity_store sp_activity_store;
/* Creates (or appends to) the store at path, making its folder. NULL after
 * one log line naming the path and the reason. Not thread-safe: the caller
 * serializes every call on one store. */
sp_activity_store *sp_activity_store_open(const char *path);
/* One transaction per batch. */
int sp_activity_store_begin(sp_activity_store *st);
int sp_activity_store_kernel(sp_activity_store *st, const sp_act_kernel *k);
int sp_activity_store_api(sp_activity_store *st, const sp_act_api *a);
/* A collective (NCCL) kernel, also in table Communication. */
int sp_activity_store_comm(sp_activity_store *st, const sp_act_kernel *k);
int sp_activity_store_commit(sp_activity_store *st);
void sp_activity_store_close(sp_activity_store *st);

#endif /* SERVPROF_SAMPLER_H */
