/* SPDX-License-Identifier: Apache-2.0 */
/*
 * moeset.c — gathers the mixture-of-experts records of a parse into one
 * entry per (rank, step, layer) and hands the set to the MoE reports at
 * finish (see moeset.h).
 *
 * Which records. By name: a record is a dispatch, an expert compute (a
 * grouped GEMM) or a combine when its name is one of the defaults
 * (MoeDistributeDispatch; GroupedMatmul or the reference's
 * aclnnGroupedMatmulV4_GroupedMatmul_GroupedMatmul; MoeDistributeCombine)
 * or contains one of the names given with `servprof parse --moe-names
 * ROLE=NAME` (ROLE dispatch, gemm or combine: the grouped-GEMM and
 * all-to-all kernel names of a GPU server). The first letter is tested
 * before any string compare, so other records cost one branch.
 *
 * Which entry. A record's step, layer and rank come from its attributes
 * (`step`, `layer`, `rank`, as the demo and a hooked server write them).
 * Without `rank` the rank is the process (its store), as the reference
 * counts one process per device. Without `step`/`layer` (bare kernels) the
 * k-th record of a role on a rank is layer (k / G) % L of step (k / G) / L,
 * where L = `--moe-names layers=N` (default 1) and G = `gemms=N` grouped
 * GEMMs per layer for the compute role (default 1; the reference uses 2
 * and 58 layers). Several records of one role in one entry add up.
 *
 * Device kernels (the CUPTI path). The Kernel and Communication tables of
 * the device activity stores (ascend_service_profiler_*.db, what the
 * reference's ep_balance and moe_analysis read) go through the same names;
 * a kernel's rank is its device, and its step and layer come from the
 * ordinal rule above (kernels carry no attributes), so `--moe-names
 * layers=N` matters there. prs_moe_activity() reads them at the end of
 * the record pass, before the reports are written.
 *
 * Design: the attributes are read with jansson (MoE records are a few per
 * rank and layer, not per token). Entries live in one array (about 100
 * bytes each: 10 ranks x 60 layers x 1000 steps is 60 MB, the cost of
 * writing rows that need every rank of their step), found through an
 * open-addressing hash of (rank, step, layer). At finish they are sorted
 * by (step, layer, rank) and each report writes its tables from them.
 */
#include "moeset.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "model.h"
#include "plog.h"

/* Bounds on what a record may claim: a report is allocated by them (rows
 * per layer, columns per expert), so a wild value must not size it. */
enum { MOE_MAX_LAYER = 4096, MOE_MAX_EXPERT = 65536 };

typedef struct rank_key { int store; long long rank; } rank_key; /* rank -1: the store is the rank */

struct prs_moe {
    prs_moe_set set;
    long long cap;
    long long *slot;               /* hash: entry index + 1, 0 empty */
    long long nslot;
    rank_key *keys;                /* per rank index */
    long long *ordinal;            /* [rank][phase]: records without step/layer so far */
    const char **names[PRS_MOE_NPHASE]; /* --moe-names, matched as substrings */
    int nnames[PRS_MOE_NPHASE];
    int layers, gemms;             /* the ordinal fallback's L and G */
    long long bad;                 /* records whose expert lists are not loads */
    long long bad_layer;           /* records whose layer is past MOE_MAX_LAYER */
};

static const char *const default_names[PRS_MOE_NPHASE][3] = {
    {"MoeDistributeDispatch", NULL},
    {"GroupedMatmul", "aclnnGroupedMatmulV4_GroupedMatmul_GroupedMatmul", NULL},
    {"MoeDistributeCombine", NULL},
};

static void add_name(struct prs_moe *x, int phase, const char *name)
{
    x->names[phase] = realloc(x->names[phase], (size_t)(x->nnames[phase] + 1) * sizeof *x->names[phase]);
    x->names[phase][x->nnames[phase]++] = name;
}

/* --moe-names items: ROLE=NAME, layers=N, gemms=N (checked by the CLI). */
static void read_names(struct prs_moe *x, const prs_opts *o)
{
    static const char *const roles[PRS_MOE_NPHASE] = {"dispatch=", "gemm=", "combine="};
    for (int i = 0; i < o->nmoe_names; i++) {
        const char *s = o->moe_names[i];
        if (!strncmp(s, "layers=", 7))
            x->layers = atoi(s + 7) > 0 ? atoi(s + 7) : 1;
        else if (!strncmp(s, "gemms=", 6))
            x->gemms = atoi(s + 6) > 0 ? atoi(s + 6) : 1;
        else
            for (int p = 0; p < PRS_MOE_NPHASE; p++)
                if (!strncmp(s, roles[p], strlen(roles[p])) && s[strlen(roles[p])])
                    add_name(x, p, s + strlen(roles[p]));
    }
}

static void *moe_open(prs_model *m)
{
    struct prs_moe *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->layers = x->gemms = 1;
    read_names(x, m->opts);
    return x;
}

/* The record's phase, or -1. */
static int phase_of(const struct prs_moe *x, const char *name)
{
    if (name[0] == 'M' || name[0] == 'G' || name[0] == 'a')
        for (int p = 0; p < PRS_MOE_NPHASE; p++)
            for (int i = 0; default_names[p][i]; i++)
                if (!strcmp(name, default_names[p][i]))
                    return p;
    for (int p = 0; p < PRS_MOE_NPHASE; p++)
        for (int i = 0; i < x->nnames[p]; i++)
            if (strstr(name, x->names[p][i]))
                return p;
    return -1;
}

static int rank_of(struct prs_moe *x, int store, long long rank, long long pid)
{
    for (int i = 0; i < x->set.nranks; i++)
        if (x->keys[i].store == store && x->keys[i].rank == rank)
            return i;
    int i = x->set.nranks++;
    x->keys = realloc(x->keys, (size_t)x->set.nranks * sizeof *x->keys);
    x->set.labels = realloc(x->set.labels, (size_t)x->set.nranks * sizeof *x->set.labels);
    x->ordinal = realloc(x->ordinal, (size_t)x->set.nranks * PRS_MOE_NPHASE * sizeof *x->ordinal);
    memset(x->ordinal + (size_t)i * PRS_MOE_NPHASE, 0, PRS_MOE_NPHASE * sizeof *x->ordinal);
    x->keys[i].store = store;
    x->keys[i].rank = rank;
    char label[64];
    /* The rank's number names its column; a rank number given twice (two
     * processes both saying rank 0) gets its process id added. */
    if (rank >= 0)
        snprintf(label, sizeof label, "%lld", rank);
    else
        snprintf(label, sizeof label, "%lld", pid);
    for (int j = 0; j < i; j++)
        if (!strcmp(x->set.labels[j], label)) {
            snprintf(label, sizeof label, "%lld@%lld", rank >= 0 ? rank : pid, pid);
            break;
        }
    x->set.labels[i] = strdup(label);
    return i;
}

static uint64_t mix(int rank, long long step, int layer)
{
    uint64_t h = (uint64_t)step * 0x9e3779b97f4a7c15ull ^ (uint64_t)layer * 0xbf58476d1ce4e5b9ull ^
                 (uint64_t)rank * 0x94d049bb133111ebull;
    return h ^ (h >> 29);
}

static void rehash(struct prs_moe *x)
{
    free(x->slot);
    x->nslot = x->nslot ? x->nslot * 2 : 1024;
    x->slot = calloc((size_t)x->nslot, sizeof *x->slot);
    for (long long i = 0; i < x->set.n; i++) {
        const prs_moe_ent *e = &x->set.e[i];
        uint64_t h = mix(e->rank, e->step, e->layer) & (uint64_t)(x->nslot - 1);
        while (x->slot[h])
            h = (h + 1) & (uint64_t)(x->nslot - 1);
        x->slot[h] = i + 1;
    }
}

static prs_moe_ent *entry(struct prs_moe *x, int rank, long long step, int layer)
{
    if (2 * (x->set.n + 1) > x->nslot)
        rehash(x);
    uint64_t h = mix(rank, step, layer) & (uint64_t)(x->nslot - 1);
    for (; x->slot[h]; h = (h + 1) & (uint64_t)(x->nslot - 1)) {
        prs_moe_ent *e = &x->set.e[x->slot[h] - 1];
        if (e->rank == rank && e->step == step && e->layer == layer)
            return e;
    }
    if (x->set.n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 256;
        x->set.e = realloc(x->set.e, (size_t)x->cap * sizeof *x->set.e);
    }
    prs_moe_ent *e = &x->set.e[x->set.n++];
    memset(e, 0, sizeof *e);
    e->rank = rank, e->step = step, e->layer = layer, e->tokens = -1;
    for (int p = 0; p < PRS_MOE_NPHASE; p++)
        e->t0[p] = -1;
    x->slot[h] = x->set.n;
    if (layer + 1 > x->set.nlayers)
        x->set.nlayers = layer + 1;
    return e;
}

static long long int_of(json_t *o, const char *key, long long dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : json_is_real(v) ? (long long)json_real_value(v)
                                                                                   : dflt;
}

/* The expert ids and rows of a compute record into e (first one wins). */
static void expert_loads(struct prs_moe *x, prs_moe_ent *e, json_t *o)
{
    json_t *ids = json_object_get(o, "expert_ids"), *tok = json_object_get(o, "expert_tokens");
    if (e->nexp || !json_is_array(ids) || !json_is_array(tok) || json_array_size(ids) != json_array_size(tok))
        return;
    int n = (int)json_array_size(ids);
    e->exp_ids = malloc((size_t)(n ? n : 1) * sizeof *e->exp_ids);
    e->exp_tok = malloc((size_t)(n ? n : 1) * sizeof *e->exp_tok);
    for (int i = 0; i < n; i++) {
        e->exp_ids[i] = (int)json_integer_value(json_array_get(ids, (size_t)i));
        e->exp_tok[i] = (int)json_integer_value(json_array_get(tok, (size_t)i));
        if (e->exp_ids[i] < 0 || e->exp_ids[i] >= MOE_MAX_EXPERT || e->exp_tok[i] < 0) { /* not a load: drop the lists */
            x->bad++;
            n = i = 0;
            break;
        }
        if (e->exp_ids[i] + 1 > x->set.nexperts)
            x->set.nexperts = e->exp_ids[i] + 1;
    }
    e->nexp = n;
}

/* One record or kernel of phase p on store `store` (activity stores: -1 -
 * their index, rank_attr their device), attributes o. */
static void add(struct prs_moe *x, int p, int store, long long rank_attr, long long pid, int64_t ts, int64_t dur,
                json_t *o)
{
    int rank = rank_of(x, store, rank_attr < 0 ? -1 : rank_attr, pid);
    long long step = int_of(o, "step", -1), layer = int_of(o, "layer", -1);
    if (layer >= MOE_MAX_LAYER) {
        x->bad_layer++;
        layer = -1;
    }
    if (step < 0 || layer < 0) {
        long long k = x->ordinal[(size_t)rank * PRS_MOE_NPHASE + p]++;
        if (p == PRS_MOE_GEMM)
            k /= x->gemms;
        layer = k % x->layers;
        step = k / x->layers;
    }
    prs_moe_ent *e = entry(x, rank, step, (int)layer);
    if (e->t0[p] < 0 || ts < e->t0[p])
        e->t0[p] = ts;
    e->dur[p] += dur;
    long long tokens = int_of(o, "tokens", -1);
    if (tokens >= 0 && e->tokens < 0)
        e->tokens = (int)tokens;
    if (p == PRS_MOE_GEMM)
        expert_loads(x, e, o);
}

/* K_OTHER records only: the MoE names are no other report's. */
static void moe_record(void *st, prs_model *m, const prs_rec *r, enum prs_kind k)
{
    (void)m;
    (void)k;
    struct prs_moe *x = st;
    int p = phase_of(x, r->name);
    if (p < 0)
        return;
    json_t *o = json_loadb(r->args, (size_t)r->args_len, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object(); /* no args: the fallbacks of add() */
    }
    add(x, p, r->store->index, int_of(o, "rank", -1), r->pid, r->ts, r->dur, o);
    json_decref(o);
}

void prs_moe_activity(prs_model *m, char *const *paths, int n)
{
    struct prs_moe *x = prs_model_state(m, &prs_report_moe);
    if (!x)
        return;
    static const char *const sql[] = {
        "SELECT name, start, end, deviceId FROM Kernel ORDER BY start",
        "SELECT name, start, end, deviceId FROM Communication ORDER BY start",
    };
    json_t *none = json_object();
    for (int i = 0; i < n; i++) {
        char uri[4200];
        snprintf(uri, sizeof uri, "file:%s?mode=ro", paths[i]);
        sqlite3 *db;
        if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
            sqlite3_close(db); /* the timeline says so (timeline.c) */
            continue;
        }
        sqlite3_busy_timeout(db, 5000);
        for (int q = 0; q < 2; q++) {
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(db, sql[q], -1, &st, NULL) != SQLITE_OK)
                continue; /* no such table: nothing of that kind */
            while (sqlite3_step(st) == SQLITE_ROW) {
                const char *name = (const char *)sqlite3_column_text(st, 0);
                int p = name ? phase_of(x, name) : -1;
                if (p < 0)
                    continue;
                int64_t s0 = sqlite3_column_int64(st, 1), e0 = sqlite3_column_int64(st, 2);
                add(x, p, -1 - i, sqlite3_column_int64(st, 3), i, s0, e0 > s0 ? e0 - s0 : 0, none);
            }
            sqlite3_finalize(st);
        }
        sqlite3_close(db);
    }
    json_decref(none);
}

static int by_step_layer_rank(const void *pa, const void *pb)
{
    const prs_moe_ent *a = pa, *b = pb;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->layer != b->layer)
        return a->layer < b->layer ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

int64_t prs_moe_wait(const prs_moe_ent *g, int n, const prs_moe_ent *e)
{
    if (e->t0[PRS_MOE_COMBINE] < 0)
        return -1;
    int64_t slowest = -1;
    for (int i = 0; i < n; i++)
        if (g[i].t0[PRS_MOE_GEMM] >= 0 && g[i].t0[PRS_MOE_GEMM] + g[i].dur[PRS_MOE_GEMM] > slowest)
            slowest = g[i].t0[PRS_MOE_GEMM] + g[i].dur[PRS_MOE_GEMM];
    if (slowest < 0 || e->t0[PRS_MOE_GEMM] < 0)
        return -1;
    int64_t w = slowest - (e->t0[PRS_MOE_GEMM] + e->dur[PRS_MOE_GEMM]);
    if (w < 0)
        w = 0;
    return w > e->dur[PRS_MOE_COMBINE] ? e->dur[PRS_MOE_COMBINE] : w;
}

/* qsort_r comparator (glibc's argument order): ctx is the rank keys. */
static int by_key(const void *pa, const void *pb, void *ctx)
{
    const rank_key *keys = ctx;
    const rank_key *a = &keys[*(const int *)pa], *b = &keys[*(const int *)pb];
    if (a->store != b->store)
        return a->store < b->store ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Ranks numbered in (store, rank) order, so ep_balance's columns read 0, 1, 2 ... */
static void order_ranks(struct prs_moe *x)
{
    int R = x->set.nranks;
    int *perm = malloc((size_t)R * sizeof *perm), *pos = malloc((size_t)R * sizeof *pos);
    for (int i = 0; i < R; i++)
        perm[i] = i;
    qsort_r(perm, (size_t)R, sizeof *perm, by_key, x->keys);
    char **labels = malloc((size_t)R * sizeof *labels);
    rank_key *keys = malloc((size_t)R * sizeof *keys);
    for (int i = 0; i < R; i++) {
        pos[perm[i]] = i;
        labels[i] = x->set.labels[perm[i]];
        keys[i] = x->keys[perm[i]];
    }
    for (long long i = 0; i < x->set.n; i++)
        x->set.e[i].rank = pos[x->set.e[i].rank];
    free(x->set.labels);
    free(x->keys);
    x->set.labels = labels;
    x->keys = keys;
    free(perm);
    free(pos);
}

static void moe_finish(void *st, prs_model *m)
{
    struct prs_moe *x = st;
    if (x->bad)
        prs_log(PRS_WARNING, "%lld MoE records had expert lists that are not loads (a negative count, or an "
                "expert id negative or of %d or more); their loads are left out of expert_load.csv", x->bad,
                MOE_MAX_EXPERT);
    if (x->bad_layer)
        prs_log(PRS_WARNING, "%lld MoE records named a layer of %d or more; they were placed by their order "
                "instead (as records without a layer)", x->bad_layer, MOE_MAX_LAYER);
    if (!x->set.n)
        return; /* not a MoE run: no MoE tables at all */
    free(x->slot);
    x->slot = NULL;
    x->nslot = 0;
    order_ranks(x);
    qsort(x->set.e, (size_t)x->set.n, sizeof *x->set.e, by_step_layer_rank);
    prs_ep_balance_write(&m->out, &x->set);
    prs_moe_analysis_write(&m->out, &x->set);
    prs_moe_rank_write(&m->out, &x->set);
    prs_eplb_write(&m->out, &x->set);
}

static void moe_free(void *st)
{
    struct prs_moe *x = st;
    if (!x)
        return;
    for (long long i = 0; i < x->set.n; i++) {
        free(x->set.e[i].exp_ids);
        free(x->set.e[i].exp_tok);
    }
    free(x->set.e);
    for (int i = 0; i < x->set.nranks; i++)
        free(x->set.labels[i]);
    free(x->set.labels);
    free(x->keys);
    free(x->ordinal);
    free(x->slot);
    for (int p = 0; p < PRS_MOE_NPHASE; p++)
        free(x->names[p]);
    free(x);
}

/* The reports write their tables at finish, each opening and closing its
 * own (moeset.h), so there is no close hook. */
const prs_report prs_report_moe = {
    .name = "moe",
    .kinds = PRS_KIND(K_OTHER),
    .open = moe_open,
    .record = moe_record,
    .finish = moe_finish,
    .free = moe_free,
};
