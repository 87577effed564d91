/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ep_balance.c — ep_balance.csv (and profiler.db's ep_balance): the expert
 * compute time of every MoE layer on every expert-parallel rank, summed
 * over the steps of the parse.
 *
 * As the reference's ep_balance (docs/compat.md, MoE): one column per rank
 * (per device process there), one row per decoder layer in layer order,
 * no index column; a cell is the summed duration of the layer's grouped
 * GEMMs on that rank, in integer nanoseconds (the reference subtracts its
 * kernels' ns timestamps). A column whose rank never ran a layer has 0.
 * A hot expert shows as a bright column: its rank's GEMMs run longest.
 */
#include <stdlib.h>

#include "moeset.h"

void prs_ep_balance_write(prs_out *o, const prs_moe_set *s)
{
    if (!s->nranks || !s->nlayers)
        return;
    int R = s->nranks, L = s->nlayers;
    long long *sum = calloc((size_t)R * (size_t)L, sizeof *sum);
    for (long long i = 0; i < s->n; i++) {
        const prs_moe_ent *e = &s->e[i];
        sum[(size_t)e->layer * R + e->rank] += e->dur[PRS_MOE_GEMM];
    }
    prs_col *cols = calloc((size_t)R, sizeof *cols);
    for (int r = 0; r < R; r++)
        cols[r] = (prs_col){s->labels[r], "INTEGER"};
    prs_table t = {0};
    prs_table_init(o, &t, "ep_balance.csv", "ep_balance", cols, R, NULL);
    prs_val *v = calloc((size_t)R, sizeof *v);
    for (int l = 0; l < L; l++) {
        for (int r = 0; r < R; r++)
            v[r] = prs_v_int(sum[(size_t)l * R + r]);
        prs_table_row(o, &t, v);
    }
    prs_table_close(o, &t);
    free(v);
    free(cols);
    free(sum);
}
