/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.h — the state shared by the report modules while records stream
 * through (owned by model.c; one model per parse, used only on the thread
 * that runs the parse).
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

typedef struct prs_req prs_req;
typedef struct prs_timeline prs_timeline;
typedef struct prs_stats prs_stats;
typedef struct prs_reqorder prs_reqorder;

/* Per-store state of the reports (index = store index). */
typedef struct prs_store_state {
    int64_t first_ts;
    /* request_status: current queue sizes (NAN: not reported yet), first row */
    double waiting, running, swapped;
    int64_t rs_first;
    double pending; /* profiler.db's request_status.PENDING (reqstatus.c) */
    /* batch rows waiting for the next KVCacheStatus of this process */
    struct prs_pending *pend_head, *pend_tail;
    int npend;
    double last_kv[6];     /* the last KVCacheStatus of this process */
    int have_last_kv;
    /* forward: the last row, waiting for the next forward's start */
    struct prs_pending *fwd_held;
    long long fwd_iter;
    /* a specDecoding row waiting for the next execution (its acceptance) */
    struct prs_pending *spec_held;
    int *spec_roots;          /* its requests (id roots) and drafted tokens */
    double *spec_drafted;
    int spec_n;
    /* schedule steps not yet matched to an execution (FIFO of res lists) */
    char **sched_fifo;
    int sched_n, sched_head;
} prs_store_state;

/* A schedule step's requests (id roots) and batch type (batch.c). */
struct prs_step_type {
    int *roots;
    int nroots;
    char type[24];
};

typedef struct prs_model {
    const prs_opts *opts;
    prs_store **stores;
    int nstores;
    prs_store_state *st;
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
    /* reports */
    prs_table t_request, t_batch, t_forward, t_kvcache, t_reqstatus;
    /* request_status (reqstatus.c): QueueSize= records of no queue it
     * reports, and why its table may then be empty (its `needs` text) */
    long long reqstatus_unknown_n;
    char reqstatus_unknown_why[256];
    prs_table *t_spans;    /* span_info/NAME.csv, one per name */
    const char **span_names;
    char **span_csv;       /* their file names (owned) */
    int nspan_names;
    /* requests */
    prs_req *done_head, *done_tail; /* ended, finalized after a grace period */
    prs_req *live_head, *live_tail; /* every request with state, oldest first seen first */
    prs_reqorder *reqorder;         /* finished rows waiting for start order (reqorder.c) */
    long long nrequests;
    long long nincomplete;          /* rows cut by the collection window (complete = 0) */
    struct prs_reqsum *fin;  /* one per finished request: summary, buckets */
    int nfin, capfin;
    double out_tokens;
    /* forwards: first forward per host (relative_start_time) */
    char **fwd_hosts;
    int64_t *fwd_host_first;
    int nfwd_hosts;
    prs_timeline *tl;
    prs_stats *stats;
    struct prs_pdsplit *pd;         /* the PD split reports (pdsplit.c) */
    int pd_any;                     /* a hand-off was seen: token records matter to pdsplit.c */
    struct prs_pdsum *pdsum;        /* hand-off durations for the summary (pdsplit.c) */
    /* The last schedule steps' request sets and batch types (batch.c), so
     * that a forward whose rid list says nothing about its type (no iter,
     * no type: vLLM-style workers) takes the type of the step it runs. */
    struct prs_step_type *step_types;
    int nstep_types, step_types_next;
} prs_model;

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
void prs_model_close(prs_model *m);
enum prs_kind prs_kind_of(const char *name, const prs_args *a);
/* The i-th name prs_kind_of knows (0, 1, ...; NULL past the last) and its
 * kind in *kind. For the tests' walk of the table. */
const char *prs_kind_name(int i, enum prs_kind *kind);
/* Display name of a request root. */
const char *prs_req_name(prs_model *m, int root);
/* Resolved res list of the record as JSON text into m->scratch. */
const char *prs_res_list(prs_model *m, int *len);

/* pending.c */
prs_pending *prs_pending_new(const prs_val *vals, int n);
void prs_pending_free(prs_pending *p);

/* request.c */
void prs_request_init(prs_model *m);
void prs_request_link(prs_model *m, int kept, int absorbed);
void prs_request_record(prs_model *m, const prs_rec *r, enum prs_kind k);
void prs_request_flush(prs_model *m, int all);

/* reqorder.c: request.csv rows released in start order */
void prs_reqorder_push(prs_model *m, int64_t key, int64_t key2, const prs_val *vals, int n);
void prs_reqorder_release(prs_model *m, int64_t bound);
void prs_reqorder_release_all(prs_model *m);
void prs_reqorder_free(prs_model *m);

/* batch.c forward.c kvcache.c reqstatus.c spaninfo.c */
void prs_batch_init(prs_model *m);
void prs_batch_record(prs_model *m, const prs_rec *r, enum prs_kind k);
void prs_batch_kv(prs_model *m, int store, const double kv[6]);
void prs_batch_finish(prs_model *m);
/* Batch type of the latest schedule step that ran exactly the requests of
 * the record being handled (m->roots), or NULL. */
const char *prs_batch_step_type(prs_model *m);
void prs_forward_init(prs_model *m);
void prs_forward_record(prs_model *m, const prs_rec *r);
void prs_forward_finish(prs_model *m);
void prs_kvcache_init(prs_model *m);
void prs_kvcache_record(prs_model *m, const prs_rec *r, enum prs_kind k);
void prs_reqstatus_init(prs_model *m);
void prs_reqstatus_record(prs_model *m, const prs_rec *r, enum prs_kind k);
void prs_spaninfo_init(prs_model *m);
void prs_spaninfo_record(prs_model *m, const prs_rec *r, enum prs_kind k);
void prs_spaninfo_finish(prs_model *m);
/* pdsplit.c: pd_split_communication, pd_split_kvcache, coordinator */
void prs_pdsplit_init(prs_model *m);
void prs_pdsplit_record(prs_model *m, const prs_rec *r, enum prs_kind k);
void prs_pdsplit_link(prs_model *m, int kept, int absorbed);
void prs_pdsplit_finish(prs_model *m);
void prs_pdsplit_close(prs_model *m);
/* Prints (when print) the hand-off lines of the terminal summary; frees them either way. */
void prs_pdsplit_summary(prs_model *m, int print);


/* KV numbers of a KVCacheStatus-like record: total, used, free, allocated,
 * freed, usage rate (NAN where unknown). */
void prs_kv_numbers(const prs_args *a, double kv[6]);

#endif
