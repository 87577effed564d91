/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile.h — what analyze keeps of one profile, and the modules that
 * compute over it (internal to tool/analyze).
 *
 *   ingest.c    fills a profile from raw stores (the parser's tap: report
 *               rows and records, no files) or from a parse output folder
 *               (profiler.db); both go through sa_ingest_row()
 *   strmap.c    string -> index hash map (request ids, span names)
 *   pct.c       percentile objects
 *   budget.c    time windows, per-window series, busy/stalled/idle
 *   findings.c  the ranked findings
 *   refsum.c    the reference's request/batch/service summaries
 *   doc.c       the JSON document; text.c terminal tables and CSV files
 *   compare.c   two profiles side by side (compare.h)
 *
 * A profile holds one struct per request and per step (tens of bytes) and
 * one double per span: memory grows with requests and steps, not with
 * records otherwise.
 */
#ifndef SERVPROF_ANALYZE_PROFILE_H
#define SERVPROF_ANALYZE_PROFILE_H

#include <stdint.h>

#include "analyze.h"
#include "colmap.h"

/* ------------------------------------------------------------- strmap */
typedef struct sa_strmap {
    char **keys;          /* owned */
    int *vals;
    long long cap, n;
} sa_strmap;
/* Index stored for key (len bytes), or -1. */
int sa_strmap_get(const sa_strmap *m, const char *key, int len);
/* Stores key -> val (replacing). */
void sa_strmap_put(sa_strmap *m, const char *key, int len, int val);
void sa_strmap_free(sa_strmap *m);

/* -------------------------------------------------------------- data */
/* A percentile object (pct.c). */
typedef struct sa_pct { long long n; double mean, min, p50, p90, p99, max; } sa_pct;
enum { SA_PREFILL = 0, SA_DECODE = 1, SA_MIXED = 2, SA_NKINDS = 3 };
/* Where steps come from, most device-like first. */
enum { SA_SRC_FORWARD = 0, SA_SRC_EXEC = 1, SA_SRC_BATCH = 2, SA_NSRC = 3 };

typedef struct sa_req {
    char *rid;                      /* owned */
    int64_t start_ns, end_ns;       /* end_ns 0 when unknown */
    double e2e, ttft, tpot, queue, prefill, decode, in_tok, out_tok; /* ms / tokens; NAN unknown */
    int preempted;
    int complete;                   /* 0: cut by the collection window (or no end) */
} sa_req;

/* Step ends kept per request and source: enough for a prompt prefilled in
 * a few chunks; later chunks count as first-decode wait. */
#define SA_KEEP_ENDS 4

/* What the steps said about a request id (rid map's value indexes this). */
typedef struct sa_ridinfo {
    int64_t first_start[SA_NSRC];  /* start of the first step of each source naming it; 0 none */
    int64_t ends[SA_NSRC][SA_KEEP_ENDS]; /* ends of its first steps (chunked prefill spans several) */
    unsigned char nends[SA_NSRC];
    double exec_ms;                 /* sum of execution-step durations naming it */
    double sched_ms;                /* sum of schedule-step durations naming it */
    int proc;                       /* process of its first step, -1 */
} sa_ridinfo;

typedef struct sa_step {
    int64_t start, end;
    int proc, kind, bs;
    int dec;                        /* decode entries (requests decoding in it) */
    double tokens;                  /* total scheduled tokens, NAN unknown */
} sa_step;

typedef struct sa_steps { sa_step *v; long long n, cap; } sa_steps;

typedef struct sa_proc {
    char *prof_id, *hostname;
    int dp_rank;                    /* -1 unknown */
} sa_proc;

typedef struct sa_kvpoint { int64_t ts; double usage; int proc; } sa_kvpoint;

typedef struct sa_span {
    char *name;
    float *dur_ms;                  /* every duration (for percentiles); NULL when pre-aggregated */
    long long n, cap;
    double total_ms;
    double max_ms; int64_t max_ts;  /* the longest one, for examples */
    /* pre-aggregated (a database computed the percentiles, chspans.c):
     * dur is used instead of dur_ms, which stays empty */
    int agg;
    sa_pct dur;
} sa_span;

/* One row of pd_split_communication: the hand-off moments (ns, 0 unknown)
 * receiveReq, sendReqToD, sendReqToDSucc, prefillRes, decodeRes. */
enum { SA_PD_REQ, SA_PD_SEND, SA_PD_SUCC, SA_PD_PRES, SA_PD_END, SA_PD_N };
typedef struct sa_pdreq {
    char *rid;                      /* owned */
    int64_t t[SA_PD_N];
    double ttft, share;             /* ms, fraction; NAN unknown */
} sa_pdreq;

/* One row of pd_split_kvcache: a PullKVCache span. */
typedef struct sa_pull {
    char *rid;                      /* owned; "" none */
    int rank;                       /* -1 unknown */
    int64_t start;
    double dur_ms, bytes;           /* bytes NAN unknown */
} sa_pull;

/* One row of coordinator: a moment of a request at an instance. */
enum { SA_CO_PSTART, SA_CO_DSTART, SA_CO_PEND, SA_CO_DEND };
typedef struct sa_coord { int64_t ts; int which; } sa_coord;

/* One row of moe_rank (a rank's MoE layer of one step; ms, NAN unknown)
 * and one of expert_load (moefind.c). */
typedef struct sa_moe {
    long long step;
    int layer, rank;                /* rank: index into sa_profile.moe_ranks */
    int64_t start;
    double dispatch, compute, combine, wait, tokens;
} sa_moe;
typedef struct sa_expload { int layer, expert; double tokens; } sa_expload;

typedef struct sa_profile {
    const char *input;
    int from_db;
    long long records;              /* raw records read; -1 from profiler.db */
    sa_req *req; long long nreq, capreq;
    sa_ridinfo *rinfo; long long nrinfo, caprinfo;
    sa_strmap rids;                 /* rid -> rinfo index */
    sa_steps steps[SA_NSRC];
    sa_proc *proc; int nproc, capproc;
    sa_kvpoint *kv; long long nkv, capkv;
    sa_span *span; int nspan, capspan;
    sa_strmap span_names;
    sa_pdreq *pd; long long npd, cappd;     /* PD hand-offs (pdfind.c) */
    sa_pull *pull; long long npull, cappull; /* KV pulls */
    sa_coord *coord; long long ncoord, capcoord; /* coordinator moments */
    sa_moe *moe; long long nmoe, capmoe;    /* MoE rank rows (moefind.c) */
    char **moe_ranks; int nmoe_ranks;       /* their rank labels (owned) */
    sa_expload *exl; long long nexl, capexl; /* expert loads */
    /* what the parse found wrong in the data (tap.h, prs_quality); raw input only */
    int quality_known;
    long long dup_ids, empty_figures;
    char dup_example[320];
    /* computed by sa_profile_finish() */
    int src;                        /* steps used for step metrics: exec, else batch, else forward */
    int busy_src;                   /* steps used as busy time: forward, else exec, else batch */
    int64_t t0, t1;                 /* run extent */
} sa_profile;

/* ingest.c: loads o->input. NULL with the reason in err. */
sa_profile *sa_profile_load(const sa_opts *o, char *err, size_t errcap);
void sa_profile_free(sa_profile *p);

/* Filling a profile from another source of the same report rows (a
 * database the reports were exported to: tool/export/chprofile.c): rows go
 * through the very row handler the parse's tap and profiler.db use, so the
 * profile, and every figure computed from it, is the same. */
typedef struct sa_ingest sa_ingest;
/* An empty profile for input (kept by pointer) and its row feeder. */
sa_ingest *sa_ingest_new(const char *input);
/* One row of report table `key` (PRS_T_REQUEST, PRS_T_BATCH, ...); other keys are ignored. */
void sa_ingest_row(sa_ingest *g, const char *key, const prs_col *cols, int ncols, const prs_val *v);
/* The columns the row handler reads of table key (n of them), or NULL
 * for a table it does not read: a source may fetch only these. */
const char *const *sa_ingest_columns(const char *key, int *n);
/* A span name's figures computed elsewhere: count, total, the longest
 * (and its ts) and the percentile object of its durations (ms, as float). */
void sa_ingest_span_agg(sa_ingest *g, const char *name, long long n, double total_ms, double max_ms,
                        int64_t max_ts, const sa_pct *dur);
/* Sorts, picks the step sources and the extent, and hands the profile over
 * (g is freed). */
sa_profile *sa_ingest_finish(sa_ingest *g);
/* The profile being filled (to set records, the data-quality counts). */
sa_profile *sa_ingest_profile(sa_ingest *g);
void sa_ingest_free(sa_ingest *g);
/* The request's row joined with its steps: TTFT parts (ms; NAN unknown). */
typedef struct sa_ttft_parts { double queue, schedule, prefill, first_decode_wait; } sa_ttft_parts;
sa_ttft_parts sa_ttft_split(const sa_profile *p, const sa_req *r);
/* Index of the request's rinfo, or -1. */
int sa_req_info(const sa_profile *p, const sa_req *r);

/* -------------------------------------------------------------- pct.c */
/* Percentiles of v[0..n) (sorted in place; NANs dropped). */
sa_pct sa_pct_of(double *v, long long n);
/* Percentile p (0..100) of sorted v, numpy's linear rule; NAN if n == 0. */
double sa_pct_at(const double *sorted, long long n, double p);
json_t *sa_pct_json(const sa_pct *s);
/* JSON number, or null for NAN. */
json_t *sa_num(double v);

/* ----------------------------------------------------------- budget.c */
typedef struct sa_stepagg {
    long long count;
    double bs_mean, tok_mean, ms_mean, ms_p90;
} sa_stepagg;

typedef struct sa_window {
    int scope;                      /* 0 all, 1 process, 2 dp rank */
    int who;                        /* process index or dp rank; -1 for all */
    int index;
    int64_t start, end;
    long long finished;
    double out_tokens;
    sa_pct ttft, tpot, e2e, queue;
    sa_stepagg steps[SA_NKINDS];
    double kv_mean, kv_max;
    long long preemptions;
    double busy, stalled, idle;     /* fractions */
} sa_window;

typedef struct sa_budget {
    double busy, stalled, idle;     /* fractions of the whole run, over processes */
    double *proc_busy;              /* busy seconds per process */
    double *proc_stalled;
} sa_budget;

/* A stretch with work in flight and the device idle. */
typedef struct sa_gap { int64_t start, end; int proc; } sa_gap;

typedef struct sa_series {
    int count;                      /* windows per scope */
    double width_s;
    int64_t t0;
    sa_window *w; int nw;           /* scope all first, then per process, then per rank */
    sa_budget budget;
    sa_gap gaps[5]; int ngaps;      /* the longest stalls, longest first */
    int *req_proc;                  /* process of each request (first step), -1 */
} sa_series;

void sa_series_compute(const sa_profile *p, const sa_opts *o, sa_series *s);
void sa_series_free(sa_series *s);
/* Step aggregates over the whole run for one kind (all processes). */
sa_stepagg sa_steps_agg(const sa_profile *p, int kind);

/* --------------------------------------------------------- findings.c */
typedef struct sa_example { char rid[96]; int64_t ts; char what[96]; } sa_example;
typedef struct sa_finding {
    const char *id;
    int bottleneck;
    double score;
    char title[160];
    const char *fig_name, *fig_unit;
    double fig_value;
    const char *thr_name, *thr_op;
    double thr_value;
    char evidence[400];
    int windows[16]; int nwindows;
    sa_example ex[5]; int nex;
    const char *knob;
} sa_finding;

typedef struct sa_findings { sa_finding f[16]; int n; const char *verdict; } sa_findings;
void sa_findings_compute(const sa_profile *p, const sa_opts *o, const sa_series *s, sa_findings *out);

/* ---------------------------------------------------------- pdfind.c */
/* The findings of disaggregated serving (hand-off share of TTFT, P/D
 * imbalance, slow KV pulls by rank); e2e_ms_total: sum of the complete
 * requests' e2e (ms), the denominator of their scores. */
void sa_pd_findings(const sa_profile *p, const sa_opts *o, const sa_series *s, double e2e_ms_total,
                    sa_findings *out);
/* ---------------------------------------------------------- moefind.c */
/* expert_imbalance: one expert-parallel rank's experts take longer than the
 * others' and every rank waits for it at the combine. */
void sa_moe_findings(const sa_profile *p, const sa_opts *o, const sa_series *s, sa_findings *out);
/* ingest.c's row handlers for moe_rank and expert_load. */
void sa_moe_add_rank_row(sa_profile *p, const prs_colmap *m, const prs_val *v);
void sa_moe_add_load_row(sa_profile *p, const prs_colmap *m, const prs_val *v);
void sa_moe_free(sa_profile *p);
/* Column names read from moe_rank and expert_load. */
enum { MR_STEP, MR_LAYER, MR_RANK, MR_START, MR_DISPATCH, MR_COMPUTE, MR_COMBINE, MR_WAIT, MR_TOKENS, MR_N };
extern const char *const sa_moe_rank_cols[MR_N];
enum { EL_LAYER, EL_EXPERT, EL_TOKENS, EL_N };
extern const char *const sa_moe_load_cols[EL_N];

/* Adds a finding to out (NULL when full); used by findings.c and pdfind.c. */
sa_finding *sa_finding_add(sa_findings *out, const char *id, int bottleneck, double score);

/* ------------------------------------------------------------ refsum.c */
/* The reference's three summaries as JSON arrays of rows. */
json_t *sa_refsum_request(const sa_profile *p);
json_t *sa_refsum_batch(const sa_profile *p);
json_t *sa_refsum_service(const sa_profile *p);

/* --------------------------------------------------------------- doc.c */
json_t *sa_document(const sa_profile *p, const sa_opts *o);

#endif
