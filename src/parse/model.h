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
enum spp_kind {
    K_OTHER = 0, K_HTTPREQ, K_TOKENIZE, K_ENQUEUE, K_DEQUEUE, K_QUEUE, K_BATCH, K_EXEC,
    K_FORWARD, K_KVSTATUS, K_KVEVENT, K_CACHEHIT, K_TOKEN_OUT, K_END, K_SENDRESP, K_SPEC,
    K_LINK, K_CPU, K_MEM, K_PROC, K_DEVMEM, K_COMM, K_PULLKV, K_COORD
};

typedef struct spp_req spp_req;
typedef struct spp_timeline spp_timeline;
typedef struct spp_stats spp_stats;
typedef struct spp_reqorder spp_reqorder;

/* Per-store state of the reports (index = store index). */
typedef struct spp_store_state {
    int64_t first_ts;
    /* request_status: current queue sizes (NAN: not reported yet), first row */
    double waiting, running, swapped;
    int64_t rs_first;
    double pending; /* profiler.db's request_status.PENDING (reqstatus.c) */
    /* batch rows waiting for the next KVCacheStatus of this process */
    struct spp_pending *pend_head, *pend_tail;
    int npend;
    double last_kv[6];     /* the last KVCacheStatus of this process */
    int have_last_kv;
    /* forward: the last row, waiting for the next forward's start */
    struct spp_pending *fwd_held;
    long long fwd_iter;
    /* a specDecoding row waiting for the next execution (its acceptance) */
    struct spp_pending *spec_held;
    int *spec_roots;          /* its requests (id roots) and drafted tokens */
    double *spec_drafted;
    int spec_n;
    /* schedule steps not yet matched to an execution (FIFO of res lists) */
    char **sched_fifo;
    int sched_n, sched_head;
} spp_store_state;

/* A schedule step's requests (id roots) and batch type (batch.c). */
struct spp_step_type {
    int *roots;
    int nroots;
    char type[24];
};

typedef struct spp_model {
    const spp_opts *opts;
    spp_store **stores;
    int nstores;
    spp_store_state *st;
    spp_ids *ids;
    spp_args args;         /* the record being handled, decoded */
    /* Decode cache for long args: a step's rid list (kilobytes) is often
     * carried unchanged by its schedule, execution and forward spans. The
     * decode of args_text (an owned copy: the decoded strings point into
     * it) lives in args_cache; on a hit it is swapped into `args` for the
     * record and swapped back before the next one. */
    spp_args args_cache;
    char *args_text;
    int args_text_len, args_text_cap;
    int args_swapped;      /* `args` currently holds the cached decode */
    /* Id nodes of the cached decode's rid entries (ids never move once
     * interned), so a cache hit skips hashing the ids again; roots are
     * still taken fresh (a Link may have joined sets since). */
    int *cache_nodes;
    int ncache_nodes, capcache_nodes;
    int cache_nodes_valid;
    spp_out out;
    int64_t origin_ns;     /* earliest record: timeline ts 0, relative columns */
    int64_t now_ns;        /* timestamp of the record being handled */
    int64_t last_ns;
    long long nrec;
    int cur_lane;          /* trace thread of the record being handled */
    int *roots;            /* scratch: request roots named by the record */
    int nroots, caproots;
    char *scratch;         /* scratch text (res lists) */
    size_t scratch_cap;
    /* spp_res_list's last answer: valid while the roots are the same. */
    int *res_roots;
    int nres_roots, capres_roots;
    int res_len;           /* -1: nothing cached */
    /* reports */
    spp_table t_request, t_batch, t_forward, t_kvcache, t_reqstatus;
    /* request_status (reqstatus.c): QueueSize= records of no queue it
     * reports, and why its table may then be empty (its `needs` text) */
    long long reqstatus_unknown_n;
    char reqstatus_unknown_why[256];
    spp_table *t_spans;    /* span_info/NAME.csv, one per name */
    const char **span_names;
    char **span_csv;       /* their file names (owned) */
    int nspan_names;
    /* requests */
    spp_req *done_head, *done_tail; /* ended, finalized after a grace period */
    spp_req *live_head, *live_tail; /* every request with state, oldest first seen first */
    spp_reqorder *reqorder;         /* finished rows waiting for start order (reqorder.c) */
    long long nrequests;
    long long nincomplete;          /* rows cut by the collection window (complete = 0) */
    struct spp_reqsum *fin;  /* one per finished request: summary, buckets */
    int nfin, capfin;
    double out_tokens;
    /* forwards: first forward per host (relative_start_time) */
    char **fwd_hosts;
    int64_t *fwd_host_first;
    int nfwd_hosts;
    spp_timeline *tl;
    spp_stats *stats;
    struct spp_pdsplit *pd;         /* the PD split reports (pdsplit.c) */
    int pd_any;                     /* a hand-off was seen: token records matter to pdsplit.c */
    struct spp_pdsum *pdsum;        /* hand-off durations for the summary (pdsplit.c) */
    /* The last schedule steps' request sets and batch types (batch.c), so
     * that a forward whose rid list says nothing about its type (no iter,
     * no type: vLLM-style workers) takes the type of the step it runs. */
    struct spp_step_type *step_types;
    int nstep_types, step_types_next;
} spp_model;

/* What the summary and the time-bucket tables keep of a request (NAN: unknown). */
typedef struct spp_reqsum {
    int64_t start, end, first_token;
    double ttft, e2e, tpot, wait, prefill_speed, decode_speed; /* ms, ms, ms, ms, tok/s, tok/s */
} spp_reqsum;

typedef struct spp_pending {
    struct spp_pending *next;
    int nvals;
    spp_val *vals;         /* owned strings */
    int64_t start, end;
    int store;
    int kv_set;            /* batch rows: KV columns already filled */
    const char *block_end; /* end of the one allocation holding the row (pending.c) */
} spp_pending;

/* model.c */
int spp_model_open(spp_model *m, const spp_opts *opts, spp_store **stores, int n, int64_t origin);
void spp_model_record(spp_model *m, const spp_rec *r);
void spp_model_finish(spp_model *m);
void spp_model_close(spp_model *m);
enum spp_kind spp_kind_of(const char *name, const spp_args *a);
/* The i-th name spp_kind_of knows (0, 1, ...; NULL past the last) and its
 * kind in *kind. For the tests' walk of the table. */
const char *spp_kind_name(int i, enum spp_kind *kind);
/* Display name of a request root. */
const char *spp_req_name(spp_model *m, int root);
/* Resolved res list of the record as JSON text into m->scratch. */
const char *spp_res_list(spp_model *m, int *len);

/* pending.c */
spp_pending *spp_pending_new(const spp_val *vals, int n);
void spp_pending_free(spp_pending *p);

/* request.c */
void spp_request_init(spp_model *m);
void spp_request_link(spp_model *m, int kept, int absorbed);
void spp_request_record(spp_model *m, const spp_rec *r, enum spp_kind k);
void spp_request_flush(spp_model *m, int all);

/* reqorder.c: request.csv rows released in start order */
void spp_reqorder_push(spp_model *m, int64_t key, int64_t key2, const spp_val *vals, int n);
void spp_reqorder_release(spp_model *m, int64_t bound);
void spp_reqorder_release_all(spp_model *m);
void spp_reqorder_free(spp_model *m);

/* batch.c forward.c kvcache.c reqstatus.c spaninfo.c */
void spp_batch_init(spp_model *m);
void spp_batch_record(spp_model *m, const spp_rec *r, enum spp_kind k);
void spp_batch_kv(spp_model *m, int store, const double kv[6]);
void spp_batch_finish(spp_model *m);
/* Batch type of the latest schedule step that ran exactly the requests of
 * the record being handled (m->roots), or NULL. */
const char *spp_batch_step_type(spp_model *m);
void spp_forward_init(spp_model *m);
void spp_forward_record(spp_model *m, const spp_rec *r);
void spp_forward_finish(spp_model *m);
void spp_kvcache_init(spp_model *m);
void spp_kvcache_record(spp_model *m, const spp_rec *r, enum spp_kind k);
void spp_reqstatus_init(spp_model *m);
void spp_reqstatus_record(spp_model *m, const spp_rec *r, enum spp_kind k);
void spp_spaninfo_init(spp_model *m);
void spp_spaninfo_record(spp_model *m, const spp_rec *r, enum spp_kind k);
void spp_spaninfo_finish(spp_model *m);
/* pdsplit.c: pd_split_communication, pd_split_kvcache, coordinator */
void spp_pdsplit_init(spp_model *m);
void spp_pdsplit_record(spp_model *m, const spp_rec *r, enum spp_kind k);
void spp_pdsplit_link(spp_model *m, int kept, int absorbed);
void spp_pdsplit_finish(spp_model *m);
void spp_pdsplit_close(spp_model *m);
/* Prints (when print) the hand-off lines of the terminal summary; frees them either way. */
void spp_pdsplit_summary(spp_model *m, int print);


/* KV numbers of a KVCacheStatus-like record: total, used, free, allocated,
 * freed, usage rate (NAN where unknown). */
void spp_kv_numbers(const spp_args *a, double kv[6]);

#endif
