/* SPDX-License-Identifier: Apache-2.0 */
/*
 * moeset.h — the mixture-of-experts records of a parse, gathered into one
 * entry per (rank, step, layer) (moeset.c), and the reports made of them:
 *
 *   ep_balance.c    ep_balance.csv    expert-compute (grouped GEMM) time per layer and rank
 *   moe_analysis.c  moe_analysis.csv  dispatch + combine times per rank: mean, 95 % interval
 *   moe_rank.c      moe_rank.csv      one row per (step, layer, rank): the three phases, the wait
 *   eplb.c          expert_load.csv, eplb_balance.csv   tokens per expert, balance per step
 *
 * Names, attributes and formulas: docs/vocabulary.md (MoE), docs/compat.md
 * (MoE reports). One row of reports.c's table (prs_report_moe) and
 * parse.c's call of prs_moe_activity (device kernels); the reports are written at finish, from the whole set
 * (their rows need every rank of a step: the slowest decides the wait).
 */
#ifndef SERVPROF_PARSE_MOESET_H
#define SERVPROF_PARSE_MOESET_H

#include <stdint.h>

#include "model.h"
#include "table.h"

struct prs_model;
struct prs_rec;

/* Phases of one rank's MoE layer. */
enum { PRS_MOE_DISPATCH, PRS_MOE_GEMM, PRS_MOE_COMBINE, PRS_MOE_NPHASE };

typedef struct prs_moe_ent {
    int rank;                       /* index into prs_moe_set.labels */
    long long step;
    int layer;
    int64_t t0[PRS_MOE_NPHASE];     /* phase start (ns since epoch); -1 unseen */
    int64_t dur[PRS_MOE_NPHASE];    /* summed durations (a phase may be several kernels) */
    int tokens;                     /* rows the rank got (attribute tokens); -1 unknown */
    int nexp;
    int *exp_ids, *exp_tok;         /* its experts' global ids and rows (owned) */
} prs_moe_ent;

/* What the reports read: entries sorted by (step, layer, rank). */
typedef struct prs_moe_set {
    prs_moe_ent *e;
    long long n;
    char **labels;                  /* per rank: its column name in ep_balance.csv */
    int nranks;
    int nlayers;                    /* highest layer + 1 */
    int nexperts;                   /* highest expert id + 1 (0: no expert loads) */
} prs_moe_set;

/* The row of reports.c's table (moeset.c): one state per parse. */
extern const prs_report prs_report_moe;
/* The MoE kernels of the device activity stores (parse.c, after the
 * records, before finish). Nothing when the report is off. */
void prs_moe_activity(struct prs_model *m, char *const *paths, int n);

/* The reports: each writes its tables from the finished set (its own state
 * lives and dies inside the call). */
void prs_ep_balance_write(prs_out *o, const prs_moe_set *s);
void prs_moe_analysis_write(prs_out *o, const prs_moe_set *s);
void prs_moe_rank_write(prs_out *o, const prs_moe_set *s);
void prs_eplb_write(prs_out *o, const prs_moe_set *s);

/* How long rank entry e waited at the combine for the slowest rank of its
 * (step, layer) group g[0..n): the slowest rank's compute end minus its own,
 * at most its combine time (ns; -1 unknown). moe_rank.c, eplb.c. */
int64_t prs_moe_wait(const prs_moe_ent *g, int n, const prs_moe_ent *e);

#endif
