/* SPDX-License-Identifier: Apache-2.0 */
/*
 * moe_rank.c — moe_rank.csv (and profiler.db's moe_rank): one row per
 * (step, layer, expert-parallel rank) with the three phases of the rank's
 * MoE layer — dispatch, expert compute (grouped GEMM), combine — and the
 * part of the combine spent waiting for the slowest rank of that step and
 * layer (prs_moe_wait: the slowest rank's compute end minus this rank's,
 * at most its combine time). servprof's own report (no reference
 * counterpart); servprof analyze's expert_imbalance and servprof report's
 * per-rank heat map read it. Rows in (step, layer, rank) order.
 */
#include "moeset.h"
#include "repcols.h"

static prs_val ms_or_null(int64_t t0, int64_t ns) { return t0 >= 0 ? prs_v_ns(ns) : prs_v_null(); }

void prs_moe_rank_write(prs_out *o, const prs_moe_set *s)
{
    static const prs_col cols[] = {
        {PRS_MR_STEP, "INTEGER"}, {PRS_MR_LAYER, "INTEGER"}, {PRS_MR_RANK, "TEXT"}, {PRS_MR_START_MS, "REAL"},
        {PRS_MR_DISPATCH_MS, "REAL"}, {PRS_MR_COMPUTE_MS, "REAL"}, {PRS_MR_COMBINE_MS, "REAL"},
        {PRS_MR_WAIT_MS, "REAL"}, {PRS_MR_TOKENS, "INTEGER"},
    };
    prs_table t = {0};
    prs_table_init(o, &t, "moe_rank.csv", PRS_T_MOE_RANK, cols, 9, NULL);
    for (long long i = 0, j; i < s->n; i = j) {
        for (j = i + 1; j < s->n && s->e[j].step == s->e[i].step && s->e[j].layer == s->e[i].layer; j++)
            ;
        for (long long k = i; k < j; k++) {
            const prs_moe_ent *e = &s->e[k];
            int64_t start = -1;
            for (int p = 0; p < PRS_MOE_NPHASE; p++)
                if (e->t0[p] >= 0 && (start < 0 || e->t0[p] < start))
                    start = e->t0[p];
            int64_t wait = prs_moe_wait(&s->e[i], (int)(j - i), e);
            prs_val v[9] = {
                prs_v_int(e->step), prs_v_int(e->layer), prs_v_text(s->labels[e->rank], -1),
                start >= 0 ? prs_v_ns(start) : prs_v_null(),
                ms_or_null(e->t0[PRS_MOE_DISPATCH], e->dur[PRS_MOE_DISPATCH]),
                ms_or_null(e->t0[PRS_MOE_GEMM], e->dur[PRS_MOE_GEMM]),
                ms_or_null(e->t0[PRS_MOE_COMBINE], e->dur[PRS_MOE_COMBINE]),
                wait >= 0 ? prs_v_ns(wait) : prs_v_null(),
                e->tokens >= 0 ? prs_v_int(e->tokens) : prs_v_null(),
            };
            prs_table_row(o, &t, v);
        }
    }
    prs_table_close(o, &t);
}
