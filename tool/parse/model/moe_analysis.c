/* SPDX-License-Identifier: Apache-2.0 */
/*
 * moe_analysis.c — moe_analysis.csv (and profiler.db's moe_analysis): per
 * expert-parallel rank, the mean duration of its dispatch and combine
 * operations and a 95 % confidence interval of that mean.
 *
 * As the reference's moe_analysis (docs/compat.md, MoE): columns Dataset
 * (the rank; the device process there), Mean, CI_Lower, CI_Upper; the
 * samples are every MoeDistributeDispatch and MoeDistributeCombine of the
 * rank together, in nanoseconds; the interval is mean -+ t(0.975, n-1) *
 * std / sqrt(n) with the population std (numpy's default, ddof 0). One
 * sample has no interval (NULL, where the reference writes NaN). A rank
 * that waits at the combine for a slow one has the larger mean: the fast
 * ranks, not the slow one, stand out here.
 */
#include <math.h>
#include <stdlib.h>

#include "moeset.h"

/* Student's t quantile at 0.975 for df degrees of freedom: exact for 1 and
 * 2, else the Cornish-Fisher series in 1/df (Abramowitz & Stegun 26.7.5),
 * within 2e-4 of the exact value from df 3 on. */
static double t975(long long df)
{
    if (df == 1)
        return 12.706204736174707;
    if (df == 2)
        return 4.302652729749464;
    const double z = 1.959963984540054, z2 = z * z, n = (double)df;
    double g1 = (z2 + 1) * z / 4;
    double g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
    double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
    double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
    return z + g1 / n + g2 / (n * n) + g3 / (n * n * n) + g4 / (n * n * n * n);
}

void prs_moe_analysis_write(prs_out *o, const prs_moe_set *s)
{
    static const prs_col cols[] = {
        {"Dataset", "TEXT"}, {"Mean", "REAL"}, {"CI_Lower", "REAL"}, {"CI_Upper", "REAL"},
    };
    int R = s->nranks;
    double *sum = calloc((size_t)R, sizeof *sum), *sq = calloc((size_t)R, sizeof *sq);
    long long *n = calloc((size_t)R, sizeof *n);
    static const int phases[] = {PRS_MOE_DISPATCH, PRS_MOE_COMBINE};
    /* two passes (mean, then squared deviations): no cancellation */
    for (int pass = 0; pass < 2; pass++)
        for (long long i = 0; i < s->n; i++) {
            const prs_moe_ent *e = &s->e[i];
            for (int k = 0; k < 2; k++) {
                if (e->t0[phases[k]] < 0)
                    continue;
                double d = (double)e->dur[phases[k]];
                if (pass == 0) {
                    sum[e->rank] += d;
                    n[e->rank]++;
                } else {
                    double dev = d - sum[e->rank] / (double)n[e->rank];
                    sq[e->rank] += dev * dev;
                }
            }
        }
    prs_table t = {0};
    prs_table_init(o, &t, "moe_analysis.csv", "moe_analysis", cols, 4, NULL);
    for (int r = 0; r < R; r++) {
        if (!n[r])
            continue;
        double mean = sum[r] / (double)n[r];
        double var = sq[r] / (double)n[r];
        double margin = n[r] > 1 ? t975(n[r] - 1) * sqrt(var > 0 ? var : 0) / sqrt((double)n[r]) : NAN;
        prs_val v[4] = {prs_v_text(s->labels[r], -1), prs_v_real(mean), prs_v_real(mean - margin),
                        prs_v_real(mean + margin)};
        prs_table_row(o, &t, v);
    }
    prs_table_close(o, &t);
    free(sum);
    free(sq);
    free(n);
}
