/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pdsplit.c — the reports of disaggregated (prefill/decode split) serving:
 *
 *   pd_split_communication.csv  one row per request: the hand-off's moments
 *                               (Communication records receiveReq, sendReqToD,
 *                               sendReqToDSucc, prefillRes, decodeRes) and the
 *                               durations derived from them
 *   pd_split_kvcache.csv        one row per PullKVCache span (any domain)
 *   coordinator.csv             the coordinator's view (domain Coordinator:
 *                               RequestDispatch, GenerateToken, ReqFinish)
 *
 * Design: these records are rare (a few per request, none in a non-PD
 * store), so their attributes are read with jansson from the record's args
 * rather than by widening the hot decoder in argdecode.c. Per request the
 * hand-off moments are kept in an entry found through the request's id root
 * (an array indexed by root); a Link that joins two roots folds their
 * entries into one. The communication rows are written at the end, in
 * start order (memory: ~100 bytes per PD request). PullKVCache and
 * coordinator rows are written as the records come (time order).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "coordcount.h"
#include "fmt.h"
#include "model.h"
#include "plog.h"
#include "repcols.h"
#include "stats.h"
#include "xalloc.h"

/* What the terminal summary shows of the hand-offs. */
enum { S_PREFILL, S_SEND, S_KV, S_FIRST, S_TTFT, S_SHARE, S_RATE, NSUM };
typedef struct pd_sum {
    double *v[NSUM];
    long long n, nrate, caprate;
} pd_sum;

typedef struct pd_entry {
    int root;                /* the request's id root when the entry was made */
    int64_t t[5];            /* receiveReq, sendReqToD, sendReqToDSucc, prefillRes, decodeRes; -1 unknown */
    int64_t pull_ns;         /* total PullKVCache duration */
    int64_t pull_end;        /* end of the last PullKVCache; -1 none */
    int64_t first_token;     /* first token-out record at or after pull_end; -1 none */
    char *paddr, *daddr;     /* coordinator: prefill / decode instance addresses */
    int prefill_seen, finish_seen;
} pd_entry;

/* The report's state (prs_report_pdsplit). */
typedef struct pdsplit {
    prs_table t_comm, t_kv, t_coord;
    prs_coordcount *running; /* coordinator_running.csv (coordcount.c) */
    pd_entry *e;
    int n, cap;
    int *slot_of_root;       /* index = id root: entry + 1, 0 none */
    long long norid;         /* hand-off records naming no request: not used (warned once) */
    int nslots;
    int any;                 /* a hand-off was seen: token records are taken (prs_model_want) */
    pd_sum sum;
} pdsplit;

static const prs_col comm_cols[] = {
    {PRS_PC_RID, "TEXT"}, {PRS_PC_REQ_MS, "REAL"}, {PRS_PC_SEND_MS, "REAL"},
    {PRS_PC_SUCC_MS, "REAL"}, {PRS_PC_PREFILL_RES_MS, "REAL"}, {PRS_PC_END_MS, "REAL"},
    {PRS_PC_PREFILL_MS, "REAL"}, {PRS_PC_SEND_DUR_MS, "REAL"}, {PRS_PC_KV_MS, "REAL"},
    {PRS_PC_FIRST_DEC_MS, "REAL"}, {PRS_PC_TTFT_MS, "REAL"}, {PRS_PC_SHARE, "REAL"},
};
static const prs_col kv_cols[] = {
    {PRS_PK_DOMAIN, "TEXT"}, {PRS_PK_RANK, "INTEGER"}, {PRS_PK_RID, "TEXT"}, {PRS_PK_BLOCKS, "TEXT"},
    {PRS_PK_SEQ_LEN, "TEXT"}, {PRS_PK_DUR_MS, "REAL"}, {PRS_PK_START_DT, "TEXT"},
    {PRS_PK_END_DT, "TEXT"}, {PRS_PK_START_MS, "REAL"}, {PRS_PK_END_MS, "REAL"},
    {PRS_PK_BYTES, "INTEGER"}, {PRS_PK_RATE, "REAL"},
};
static const prs_col coord_cols[] = {
    {PRS_CO_RID, "TEXT"}, {PRS_CO_ADDRESS, "TEXT"}, {PRS_CO_START_DT, "TEXT"}, {PRS_CO_PREFILL_START, "INTEGER"},
    {PRS_CO_DECODE_START, "INTEGER"}, {PRS_CO_PREFILL_END, "INTEGER"}, {PRS_CO_DECODE_END, "INTEGER"},
};

static double ms_of(prs_val v) { return v.kind == PRS_NULL ? NAN : v.d; }

/* Keeps a communication row's durations for the terminal summary. */
static void note_summary(pd_sum *s, const prs_val *v)
{
    if (!(s->n & (s->n - 1)) || !s->n) /* doubles at 0, 1, 2, 4, ... */
        for (int i = 0; i < S_RATE; i++)
            s->v[i] = prs_xrealloc(s->v[i], (size_t)(s->n ? s->n * 2 : 1) * sizeof *s->v[i]);
    static const int col[S_RATE] = {6, 7, 8, 9, 10, 11};
    for (int i = 0; i < S_RATE; i++)
        s->v[i][s->n] = ms_of(v[col[i]]);
    s->n++;
}

static void note_rate(pd_sum *s, double rate)
{
    if (s->nrate == s->caprate) {
        s->caprate = s->caprate ? s->caprate * 2 : 64;
        s->v[S_RATE] = prs_xrealloc(s->v[S_RATE], (size_t)s->caprate * sizeof *s->v[S_RATE]);
    }
    s->v[S_RATE][s->nrate++] = rate;
}

#define NCOLS(c) ((int)(sizeof c / sizeof *c))

static void *open_pdsplit(prs_model *m)
{
    pdsplit *pd = prs_xcalloc(1, sizeof *pd);
    prs_table_init(&m->out, &pd->t_comm, "pd_split_communication.csv", PRS_T_PD_COMM, comm_cols,
                   NCOLS(comm_cols), NULL);
    prs_table_init(&m->out, &pd->t_kv, "pd_split_kvcache.csv", PRS_T_PD_KV, kv_cols, NCOLS(kv_cols), NULL);
    prs_table_init(&m->out, &pd->t_coord, "coordinator.csv", PRS_T_COORDINATOR, coord_cols, NCOLS(coord_cols),
                   NULL);
    pd->running = prs_coordcount_new();
    return pd;
}

static void grow_slots(pdsplit *pd, int root)
{
    if (root < pd->nslots)
        return;
    int n = root * 2 + 64;
    pd->slot_of_root = prs_xrealloc(pd->slot_of_root, (size_t)n * sizeof *pd->slot_of_root);
    memset(pd->slot_of_root + pd->nslots, 0, (size_t)(n - pd->nslots) * sizeof *pd->slot_of_root);
    pd->nslots = n;
}

/* The entry of request root `root`; created when `make` (else NULL). */
static pd_entry *entry_of(pdsplit *pd, int root, int make)
{
    if (root < 0)
        return NULL;
    if (root < pd->nslots && pd->slot_of_root[root])
        return &pd->e[pd->slot_of_root[root] - 1];
    if (!make)
        return NULL;
    grow_slots(pd, root);
    if (pd->n == pd->cap) {
        pd->cap = pd->cap ? pd->cap * 2 : 64;
        pd->e = prs_xrealloc(pd->e, (size_t)pd->cap * sizeof *pd->e);
    }
    pd_entry *e = &pd->e[pd->n++];
    memset(e, 0, sizeof *e);
    e->root = root;
    for (int i = 0; i < 5; i++)
        e->t[i] = -1;
    e->pull_end = e->first_token = -1;
    pd->slot_of_root[root] = pd->n;
    return e;
}

static int64_t later(int64_t a, int64_t b) { return a < 0 ? b : b < 0 ? a : a > b ? a : b; }
static int64_t earlier(int64_t a, int64_t b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }

/* Adds what entry `from` knows to `to`; `from` is left dead (root -1). */
static void fold(pd_entry *to, pd_entry *from)
{
    for (int t = 0; t < 5; t++)
        to->t[t] = earlier(to->t[t], from->t[t]);
    to->pull_ns += from->pull_ns;
    to->pull_end = later(to->pull_end, from->pull_end);
    to->first_token = earlier(to->first_token, from->first_token);
    if (!to->paddr) {
        to->paddr = from->paddr;
        to->daddr = from->daddr;
        from->paddr = from->daddr = NULL;
    }
    to->prefill_seen |= from->prefill_seen;
    to->finish_seen |= from->finish_seen;
    free(from->paddr);
    free(from->daddr);
    from->paddr = from->daddr = NULL;
    from->root = -1;
}

/* A Link joined root `absorbed` into `kept`: one entry answers for both
 * from now on (the absorbed one's moments folded into kept's). */
static void link_pdsplit(void *st, prs_model *m, int kept, int absorbed)
{
    (void)m;
    pdsplit *pd = st;
    if (absorbed < 0 || absorbed >= pd->nslots || !pd->slot_of_root[absorbed])
        return;
    grow_slots(pd, kept);
    int a = pd->slot_of_root[absorbed] - 1;
    pd->slot_of_root[absorbed] = 0;
    if (!pd->slot_of_root[kept]) {
        pd->slot_of_root[kept] = a + 1;
        pd->e[a].root = kept;
        return;
    }
    fold(&pd->e[pd->slot_of_root[kept] - 1], &pd->e[a]);
}

static int comm_index(const char *name)
{
    static const char *const names[] = {"receiveReq", "sendReqToD", "sendReqToDSucc", "prefillRes", "decodeRes"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

static char *dup_string(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? prs_xstrdup(s) : NULL;
}

/* JSON text of member key (arrays and objects as compact JSON, strings
 * bare), NULL when absent; caller frees. */
static char *member_text(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return NULL;
    if (json_is_string(v))
        return prs_xstrdup(json_string_value(v));
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* Number of integers in a (nested) array: the blocks of a block table. */
static long count_numbers(json_t *v)
{
    if (json_is_integer(v))
        return 1;
    long n = 0;
    size_t i;
    json_t *x;
    if (json_is_array(v))
        json_array_foreach(v, i, x) n += count_numbers(x);
    return n;
}

static double number_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void kv_row(pdsplit *pd, prs_model *m, const prs_rec *r, json_t *o, pd_entry *e)
{
    char *blocks = member_text(o, "block_tables"), *seq = member_text(o, "batch_seq_len");
    char sdt[40], edt[40];
    prs_fmt_datetime(r->ts, sdt);
    prs_fmt_datetime(r->ts + r->dur, edt);
    double rank = number_of(o, "rank");
    /* Bytes moved: `bytes` as written, else blocks × `block_bytes`. */
    double bytes = number_of(o, "bytes");
    if (isnan(bytes)) {
        double per_block = number_of(o, "block_bytes");
        long nblocks = count_numbers(json_object_get(o, "block_tables"));
        if (!isnan(per_block) && nblocks > 0)
            bytes = per_block * (double)nblocks;
    }
    double rate = !isnan(bytes) && r->dur > 0 ? bytes / 1e6 / ((double)r->dur / 1e9) : NAN;
    prs_val v[12] = {
        prs_v_text(r->cat, -1), isnan(rank) ? prs_v_null() : prs_v_int(llround(rank)),
        m->nroots ? prs_v_text(prs_req_name(m, m->roots[0]), -1) : prs_v_null(),
        prs_v_text(blocks, -1), prs_v_text(seq, -1), prs_v_ns(r->dur), prs_v_text(sdt, -1),
        prs_v_text(edt, -1), prs_v_ns(r->ts), prs_v_ns(r->ts + r->dur),
        isnan(bytes) ? prs_v_null() : prs_v_int(llround(bytes)), prs_v_real(rate),
    };
    prs_table_row(&m->out, &pd->t_kv, v);
    if (!isnan(rate))
        note_rate(&pd->sum, rate);
    free(blocks);
    free(seq);
    if (e) {
        e->pull_ns += r->dur;
        if (r->ts + r->dur > e->pull_end)
            e->pull_end = r->ts + r->dur;
    }
}

static void coord_row(pdsplit *pd, prs_model *m, const char *rid, const char *addr, int64_t ts, int which)
{
    char dt[40];
    prs_fmt_datetime(ts, dt);
    prs_val v[7] = {prs_v_text(rid, -1), prs_v_text(addr, -1), prs_v_text(dt, -1),
                    prs_v_null(), prs_v_null(), prs_v_null(), prs_v_null()};
    v[3 + which] = prs_v_int(1);
    prs_table_row(&m->out, &pd->t_coord, v);
    /* which: 0 prefillStart, 1 decodeStart, 2 prefillEnd, 3 decodeEnd */
    prs_coordcount_note(pd->running, ts, addr, which == 1 || which == 3, which >= 2);
}

enum { PREFILL_START, DECODE_START, PREFILL_END, DECODE_END };

static void coordinator(pdsplit *pd, prs_model *m, const prs_rec *r, json_t *o, pd_entry *e)
{
    const char *rid = prs_req_name(m, m->roots[0]);
    if (!strcmp(r->name, "RequestDispatch")) {
        if (e->paddr) /* the first dispatch names the instances */
            return;
        e->paddr = dup_string(o, "PrefillAddress");
        e->daddr = dup_string(o, "DecodeAddress");
        if (e->paddr)
            coord_row(pd, m, rid, e->paddr, r->ts, PREFILL_START);
    } else if (!strcmp(r->name, "GenerateToken")) {
        const char *phase = json_string_value(json_object_get(o, "Phase"));
        if (!phase || strcasecmp(phase, "prefill") != 0 || e->prefill_seen || !e->paddr)
            return;
        e->prefill_seen = 1;
        coord_row(pd, m, rid, e->paddr, r->ts, PREFILL_END);
        if (e->daddr)
            coord_row(pd, m, rid, e->daddr, r->ts, DECODE_START);
    } else if (!e->finish_seen && e->daddr) { /* ReqFinish */
        e->finish_seen = 1;
        coord_row(pd, m, rid, e->daddr, r->ts, DECODE_END);
    }
}

static void record_pdsplit(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    pdsplit *pd = st;
    int root = m->nroots ? m->roots[0] : -1;
    if (k == K_TOKEN_OUT) { /* only requests already in a hand-off (taken once one came) */
        pd_entry *e = entry_of(pd, root, 0);
        if (e && e->pull_end >= 0 && e->first_token < 0 && r->ts >= e->pull_end)
            e->first_token = r->ts;
        return;
    }
    int comm = -1;
    if (k == K_COMM) {
        if (strcmp(r->cat, "Communication") != 0 && strcmp(r->cat, "PDSplit") != 0)
            return; /* the reference reads these names in these domains only */
        comm = comm_index(r->name);
    }
    if (k == K_COORD && strcmp(r->cat, "Coordinator") != 0)
        return;
    pd_entry *e = entry_of(pd, root, 1);
    if (e && !pd->any) { /* the first hand-off: token records matter from now on */
        pd->any = 1;
        prs_model_want(m, &prs_report_pdsplit, K_TOKEN_OUT);
    }
    if (!e && k != K_PULLKV) { /* a PullKVCache row is still written, with no rid */
        pd->norid++;
        return;
    }
    if (comm >= 0) {
        if (e && e->t[comm] < 0)
            e->t[comm] = r->ts;
        return;
    }
    json_t *o = json_loadb(r->args, (size_t)r->args_len, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    if (k == K_PULLKV)
        kv_row(pd, m, r, o, e);
    else if (e)
        coordinator(pd, m, r, o, e);
    json_decref(o);
}

static prs_val at(int64_t t) { return t >= 0 ? prs_v_ns(t) : prs_v_null(); }
static prs_val span(int64_t a, int64_t b) { return a >= 0 && b >= 0 ? prs_v_ns(b - a) : prs_v_null(); }

static int by_start(const void *pa, const void *pb)
{
    const pd_entry *a = pa, *b = pb;
    int64_t x = a->t[0] < 0 ? INT64_MAX : a->t[0], y = b->t[0] < 0 ? INT64_MAX : b->t[0];
    if (x != y)
        return x < y ? -1 : 1;
    return (a->root > b->root) - (a->root < b->root);
}

/* Drops the entries a Link folded into another. */
static int compact(pdsplit *pd)
{
    int out = 0;
    for (int i = 0; i < pd->n; i++)
        if (pd->e[i].root >= 0)
            pd->e[out++] = pd->e[i];
    return out;
}

/* The summary's hand-off lines (requests with a communication row). */
static void summary_pdsplit(const void *st, const prs_model *m, const struct prs_sessions *ss)
{
    (void)m;
    (void)ss;
    const pdsplit *pd = st;
    const pd_sum *s = &pd->sum;
    if (s->n) {
        static const char *const what[S_RATE] = {"prefill on P", "send to D", "KV transfer", "first decode on D",
                                                 "TTFT (PD)", "hand-off share"};
        printf("  PD hand-off: %lld request%s (rows: pd_split_communication %lld, pd_split_kvcache %lld, "
               "coordinator %lld)\n", s->n, s->n == 1 ? "" : "s", s->n, pd->t_kv.rows, pd->t_coord.rows);
        for (int i = 0; i < S_RATE; i++) {
            long long n = prs_sort_values(s->v[i], s->n);
            if (!n)
                printf("    %-20s -\n", what[i]);
            else if (i == S_SHARE)
                printf("    %-20s P50 %9.1f %%    P90 %9.1f %%    (n=%lld)\n", what[i],
                       100 * prs_percentile(s->v[i], n, 50), 100 * prs_percentile(s->v[i], n, 90), n);
            else
                printf("    %-20s P50 %10.3f ms   P90 %10.3f ms   (n=%lld)\n", what[i],
                       prs_percentile(s->v[i], n, 50), prs_percentile(s->v[i], n, 90), n);
        }
        long long n = prs_sort_values(s->v[S_RATE], s->nrate);
        if (n)
            printf("    %-20s P50 %10.1f MB/s P90 %10.1f MB/s (n=%lld)\n", "KV pull rate",
                   prs_percentile(s->v[S_RATE], n, 50), prs_percentile(s->v[S_RATE], n, 90), n);
        fflush(stdout);
    }
}

static void finish_pdsplit(void *st, prs_model *m)
{
    pdsplit *pd = st;
    /* Requests with no Communication record have no row (PullKVCache or
     * coordinator records alone make rows of those reports only). */
    prs_coordcount_write(pd->running, &m->out);
    if (pd->norid)
        prs_log(PRS_WARNING, "%lld hand-off record(s) (Communication/Coordinator) name no request (no rid): "
                "not used in pd_split_communication.csv / coordinator.csv", pd->norid);
    int n = compact(pd);
    if (n > 1)
        qsort(pd->e, (size_t)n, sizeof *pd->e, by_start);
    for (int i = 0; i < n; i++) {
        pd_entry *e = &pd->e[i];
        int any = 0;
        for (int t = 0; t < 5; t++)
            any |= e->t[t] >= 0;
        if (!any)
            continue;
        /* First token: the decode side's first token after the transfer,
         * else the prefill response (the P instance returned it). */
        int64_t first = e->first_token >= 0 ? e->first_token : e->t[3];
        int64_t handoff_end = later(e->t[2], e->pull_end);
        prs_val ttft = span(e->t[0], first);
        double share = NAN;
        if (ttft.kind != PRS_NULL && first > e->t[0] && e->t[1] >= 0 && handoff_end >= 0)
            share = (double)(handoff_end - e->t[1]) / (double)(first - e->t[0]);
        prs_val v[12] = {
            prs_v_text(prs_req_name(m, prs_ids_root(m->ids, e->root)), -1), at(e->t[0]), at(e->t[1]), at(e->t[2]), at(e->t[3]),
            at(e->t[4]), span(e->t[0], e->t[1]), span(e->t[1], e->t[2]),
            e->pull_end >= 0 ? prs_v_ns(e->pull_ns) : prs_v_null(),
            e->first_token >= 0 ? span(e->pull_end, e->first_token) : prs_v_null(), ttft, prs_v_real(share),
        };
        prs_table_row(&m->out, &pd->t_comm, v);
        note_summary(&pd->sum, v);
    }
    for (int i = 0; i < n; i++) {
        free(pd->e[i].paddr);
        free(pd->e[i].daddr);
    }
    pd->n = 0;
}

static void close_pdsplit(void *st, prs_model *m)
{
    pdsplit *pd = st;
    prs_table_close(&m->out, &pd->t_comm);
    prs_table_close(&m->out, &pd->t_kv);
    prs_table_close(&m->out, &pd->t_coord);
}

static void free_pdsplit(void *st)
{
    pdsplit *pd = st;
    for (int i = 0; i < pd->n; i++) {
        free(pd->e[i].paddr);
        free(pd->e[i].daddr);
    }
    free(pd->e);
    free(pd->slot_of_root);
    prs_coordcount_free(pd->running);
    for (int i = 0; i < NSUM; i++)
        free(pd->sum.v[i]);
    free(pd);
}

const prs_report prs_report_pdsplit = {
    .name = "pdsplit",
    .kinds = PRS_KIND(K_COMM) | PRS_KIND(K_PULLKV) | PRS_KIND(K_COORD), /* K_TOKEN_OUT: once a hand-off came */
    .open = open_pdsplit,
    .record = record_pdsplit,
    .link = link_pdsplit,
    .finish = finish_pdsplit,
    .close = close_pdsplit,
    .summary = summary_pdsplit,
    .free = free_pdsplit,
};
