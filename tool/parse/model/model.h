/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.h — the model that hands each record to the reports (model.c;
 * one model per parse, used only on the thread that runs the parse), and
 * what a report is: a row of hooks (prs_report) in the table of reports.c.
 * The model holds what every report reads (the record's decoded args, the
 * requests it names, the outputs, the timeline); each report's own state
 * is its file's, opaque here. The few things one part asks of a report
 * are that report's functions, below.
 */
#ifndef SERVPROF_PARSE_MODEL_H
#define SERVPROF_PARSE_MODEL_H

#include "parse.h"
#include "storeread.h"
#include "argdecode.h"
#include "ids.h"
#include "table.h"

/* What a record is, by its name (docs/vocabulary.md). */
enum prs_kind {
    K_OTHER = 0, K_HTTPREQ, K_TOKENIZE, K_ENQUEUE, K_DEQUEUE, K_QUEUE, K_BATCH, K_EXEC,
    K_FORWARD, K_KVSTATUS, K_KVEVENT, K_CACHEHIT, K_TOKEN_OUT, K_END, K_SENDRESP, K_SPEC,
    K_LINK, K_CPU, K_MEM, K_PROC, K_DEVMEM, K_COMM, K_PULLKV, K_COORD
};

typedef struct prs_model prs_model;
typedef struct prs_timeline prs_timeline;
struct prs_sessions;

/* The number of record kinds (one bit each in prs_report.kinds). */
enum { PRS_NKINDS = K_COORD + 1 };
#define PRS_KIND(k) (1u << (k))
#define PRS_ALL_KINDS (~0u)

/* A report: one file owning its state, one row of reports.c's table
 * (how to add one is written there). The model calls the hooks of every
 * report in the table's order; every hook but open may be NULL. `st` is
 * what open returned. Hooks run on the parse's thread only.
 *
 *   open     creates its tables (prs_table_init on &m->out) and returns its
 *            state; NULL: the report is off for this run (no other hook)
 *   record   a record of one of the .kinds, in time order: m->args is its
 *            decoded args, m->roots the requests it names (after its Link
 *            is applied), m->now_ns its time
 *   link     a Link joined request root `absorbed` into `kept` (ids.c)
 *   tick     every 1024 records, after that record's reports and timeline
 *            (work that need not run per record)
 *   finish   end of input: rows still held for a look-ahead go out
 *   close    closes its tables (prs_table_close); the state stays readable
 *            for the terminal summary
 *   table    the table the summary counts ("wrote" and "rows" lines)
 *   summary  prints its lines of the terminal summary (summary.c)
 *   free     frees the state (after the summary; also after a failed or
 *            abandoned run, where finish and close may not have run) */
typedef struct prs_report {
    const char *name;
    unsigned kinds; /* PRS_KIND(K_BATCH) | ...: the kinds record() gets */
    void *(*open)(prs_model *m);
    void (*record)(void *st, prs_model *m, const prs_rec *r, enum prs_kind k);
    void (*link)(void *st, prs_model *m, int kept, int absorbed);
    void (*tick)(void *st, prs_model *m);
    void (*finish)(void *st, prs_model *m);
    void (*close)(void *st, prs_model *m);
    const prs_table *(*table)(const void *st);
    void (*summary)(const void *st, const prs_model *m, const struct prs_sessions *ss);
    void (*free)(void *st);
} prs_report;

/* reports.c: the table, in hook order. */
extern const prs_report *const prs_reports[];
extern const int prs_nreports;

/* One record hook of a kind's dispatch list (built at open from .kinds). */
typedef struct prs_hook {
    void (*record)(void *st, prs_model *m, const prs_rec *r, enum prs_kind k);
    void *st;
    int report;            /* its row in prs_reports */
} prs_hook;

struct prs_model {
    const prs_opts *opts;
    prs_store **stores;
    int nstores;
    prs_ids *ids;
    prs_args args;         /* the record being handled, decoded */
    /* Decode cache for long args: a step's rid list (kilobytes) is often
     * carried unchanged by its schedule, execution and forward spans. The
     * decode of args_text (an owned copy: the decoded strings point into
     * it) lives in args_cache; on a hit it is swapped into `args` for the
     * record and swapped back before the next one. */
    prs_args args_cache;
    char *args_text;
    int args_text_len, args_text_cap;
    int args_swapped;      /* `args` currently holds the cached decode */
    /* Id nodes of the cached decode's rid entries (ids never move once
     * interned), so a cache hit skips hashing the ids again; roots are
     * still taken fresh (a Link may have joined sets since). */
    int *cache_nodes;
    int ncache_nodes, capcache_nodes;
    int cache_nodes_valid;
    prs_out out;
    int64_t origin_ns;     /* earliest record: timeline ts 0, relative columns */
    int64_t now_ns;        /* timestamp of the record being handled */
    int64_t last_ns;
    long long nrec;
    int cur_lane;          /* trace thread of the record being handled */
    int *roots;            /* scratch: request roots named by the record */
    int nroots, caproots;
    char *scratch;         /* scratch text (res lists) */
    size_t scratch_cap;
    /* prs_res_list's last answer: valid while the roots are the same. */
    int *res_roots;
    int nres_roots, capres_roots;
    int res_len;           /* -1: nothing cached */
    /* Links (model.c, apply_link): the store that first linked each id node
     * (index = node), to notice one engine id linked by two process stores,
     * whose requests then merge; counted, the first one named (request.c's
     * summary). */
    const prs_store **link_store;
    int cap_link_store;
    long long dup_links;
    char dup_example[320];
    prs_timeline *tl;
    /* The reports: rep[i] is the state of prs_reports[i] (NULL: off), and
     * per record kind the record hooks that take it, in table order
     * (hooks[k * prs_nreports + j], j < nhooks[k]). */
    void **rep;
    prs_hook *hooks;
    unsigned char nhooks[PRS_NKINDS];
};

/* The state of report `r` in this run (NULL: off, or not opened yet: a
 * report's open may ask only for those before it in the table). */
void *prs_model_state(const prs_model *m, const prs_report *r);
/* From the next record on, hands report r the records of kind k too (in
 * table order among the reports taking k): for a kind that matters only
 * once something was seen (pdsplit.c takes the token records once a
 * hand-off came), so that until then those records cost that report
 * nothing. A no-op when r is off or already takes k. */
void prs_model_want(prs_model *m, const prs_report *r, enum prs_kind k);

/* What the summary and the time-bucket tables keep of a request (NAN: unknown). */
typedef struct prs_reqsum {
    int64_t start, end, first_token;
    double ttft, e2e, tpot, wait, prefill_speed, decode_speed; /* ms, ms, ms, ms, tok/s, tok/s */
} prs_reqsum;

typedef struct prs_pending {
    struct prs_pending *next;
    int nvals;
    prs_val *vals;         /* owned strings */
    int64_t start, end;
    int store;
    int kv_set;            /* batch rows: KV columns already filled */
    const char *block_end; /* end of the one allocation holding the row (pending.c) */
} prs_pending;

/* model.c */
int prs_model_open(prs_model *m, const prs_opts *opts, prs_store **stores, int n, int64_t origin);
void prs_model_record(prs_model *m, const prs_rec *r);
void prs_model_finish(prs_model *m);
/* Closes the reports' tables and frees the model's own state; the
 * reports' states stay for the summary until prs_model_free. */
void prs_model_close(prs_model *m);
/* The terminal summary's lines of each report (summary.c calls it). */
void prs_model_summary(const prs_model *m, const struct prs_sessions *ss);
/* Frees the reports' states. After prs_model_close, or alone after an
 * open that failed; a no-op the second time. */
void prs_model_free(prs_model *m);
enum prs_kind prs_kind_of(const char *name, const prs_args *a);
/* The i-th name prs_kind_of knows (0, 1, ...; NULL past the last) and its
 * kind in *kind. For the tests' walk of the table. */
const char *prs_kind_name(int i, enum prs_kind *kind);
/* Display name of a request root. */
const char *prs_req_name(const prs_model *m, int root);
/* Resolved res list of the record as JSON text into m->scratch. */
const char *prs_res_list(prs_model *m, int *len);

/* pending.c */
prs_pending *prs_pending_new(const prs_val *vals, int n);
void prs_pending_free(prs_pending *p);

/* What the other parts ask of a report (each the report's own file). */
extern const prs_report prs_report_request, prs_report_batch, prs_report_reqstatus, prs_report_spaninfo,
    prs_report_pdsplit;

/* request.c: the finished requests, for the summary and profiler.db's
 * time buckets (dbout.c); valid until prs_model_free. */
typedef struct prs_reqsums {
    const struct prs_reqsum *v;  /* one per finished request, in the order they finished */
    int n;
    long long nincomplete;       /* rows cut by the collection window (complete = 0) */
    double out_tokens;
} prs_reqsums;
prs_reqsums prs_request_sums(const prs_model *m);

/* reqorder.c: request.csv rows released in start order */
typedef struct prs_reqorder prs_reqorder;
prs_reqorder *prs_reqorder_new(prs_out *out, prs_table *t);
void prs_reqorder_push(prs_reqorder *o, int64_t key, int64_t key2, const prs_val *vals, int n);
void prs_reqorder_release(prs_reqorder *o, int64_t bound);
void prs_reqorder_release_all(prs_reqorder *o);
void prs_reqorder_free(prs_reqorder *o);

/* batch.c */
typedef struct prs_batch prs_batch;
/* A KVCacheStatus of `store` (kvcache.c): completes the batch rows waiting for it. */
void prs_batch_kv(prs_batch *b, prs_model *m, int store, const double kv[6]);
/* Batch type of the latest schedule step that ran exactly the requests of
 * the record being handled (m->roots), or NULL. */
const char *prs_batch_step_type(const prs_batch *b, const prs_model *m);

/* reqstatus.c: the current sizes of the waiting, running and swapped
 * queues of `store` (0 where not reported yet), for the timeline's counter. */
void prs_reqstatus_sizes(const prs_model *m, int store, double v[3]);

/* spaninfo.c: whether span_info/ is written this run (--span) */
int prs_spaninfo_on(const prs_model *m);

/* KV numbers of a KVCacheStatus-like record: total, used, free, allocated,
 * freed, usage rate (NAN where unknown). */
void prs_kv_numbers(const prs_args *a, double kv[6]);

#endif
