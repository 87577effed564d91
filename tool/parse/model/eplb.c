/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eplb.c — the EPLB view (expert-parallel load balance), two tables:
 *
 *   expert_load.csv   one row per (step, layer, expert): the rows (tokens x
 *                     choices) the router sent it and the rank holding it,
 *                     from the expert compute records' expert_ids /
 *                     expert_tokens (the reference's expert_hot, per
 *                     iteration and layer, kept as rows instead of a cube)
 *   eplb_balance.csv  one row per step: the reference's balance ratio
 *                     (per layer the population standard deviation over
 *                     ranks of the rows each rank got, averaged over the
 *                     layers: exporter_eplb_observe.py's std_balance_ratio),
 *                     the max/mean rank load, the hottest expert and its
 *                     share, and the time side: the slowest rank, the max
 *                     and mean rank expert time and the mean combine wait,
 *                     each summed over the step's layers
 *
 * A rank's load is its `tokens` attribute, else the sum of its experts'
 * rows. Reads the sorted set (moeset.h): a step's rows are contiguous.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moeset.h"
#include "repcols.h"

static long long load_of(const prs_moe_ent *e)
{
    if (e->tokens >= 0)
        return e->tokens;
    long long n = 0;
    for (int i = 0; i < e->nexp; i++)
        n += e->exp_tok[i];
    return n;
}

static void expert_rows(prs_out *o, const prs_moe_set *s)
{
    static const prs_col cols[] = {
        {PRS_EL_STEP, "INTEGER"}, {PRS_EL_LAYER, "INTEGER"}, {PRS_EL_EXPERT, "INTEGER"}, {PRS_EL_RANK, "TEXT"},
        {PRS_EL_TOKENS, "INTEGER"},
    };
    prs_table t = {0};
    prs_table_init(o, &t, "expert_load.csv", PRS_T_EXPERT_LOAD, cols, 5, NULL);
    for (long long i = 0; i < s->n; i++) {
        const prs_moe_ent *e = &s->e[i];
        for (int k = 0; k < e->nexp; k++) {
            prs_val v[5] = {prs_v_int(e->step), prs_v_int(e->layer), prs_v_int(e->exp_ids[k]),
                            prs_v_text(s->labels[e->rank], -1), prs_v_int(e->exp_tok[k])};
            prs_table_row(o, &t, v);
        }
    }
    prs_table_close(o, &t);
}

/* One step's row from its entries g[0..n) (sorted by layer, rank). */
static void step_row(prs_out *o, prs_table *t, const prs_moe_set *s, const prs_moe_ent *g, long long n,
                     long long *etok, double *rank_ns)
{
    double std_sum = 0, ratio_sum = 0, max_ns = 0, mean_ns = 0, wait_ns = 0;
    int layers = 0;
    int64_t start = -1;
    memset(rank_ns, 0, (size_t)s->nranks * sizeof *rank_ns);
    if (s->nexperts)
        memset(etok, 0, (size_t)s->nexperts * sizeof *etok);
    long long all_tok = 0;
    for (long long i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && g[j].layer == g[i].layer; j++)
            ;
        /* rank loads of this layer: every rank of the run counts (an idle rank has 0) */
        double sum = 0, sq = 0, mx = 0, tmax = 0, tsum = 0, wsum = 0;
        for (long long k = i; k < j; k++) {
            double l = (double)load_of(&g[k]);
            sum += l;
            mx = l > mx ? l : mx;
            double c = (double)g[k].dur[PRS_MOE_GEMM];
            tsum += c;
            tmax = c > tmax ? c : tmax;
            rank_ns[g[k].rank] += c;
            int64_t w = prs_moe_wait(g + i, (int)(j - i), &g[k]);
            wsum += w > 0 ? (double)w : 0;
            for (int p = 0; p < PRS_MOE_NPHASE; p++)
                if (g[k].t0[p] >= 0 && (start < 0 || g[k].t0[p] < start))
                    start = g[k].t0[p];
            for (int x = 0; x < g[k].nexp; x++) {
                etok[g[k].exp_ids[x]] += g[k].exp_tok[x];
                all_tok += g[k].exp_tok[x];
            }
        }
        double R = (double)s->nranks, mean = sum / R;
        for (long long k = i; k < j; k++) {
            double d = (double)load_of(&g[k]) - mean;
            sq += d * d;
        }
        sq += (R - (double)(j - i)) * mean * mean; /* ranks without a row this layer: load 0 */
        std_sum += sqrt(sq / R);
        ratio_sum += mean > 0 ? mx / mean : NAN;
        max_ns += tmax;
        mean_ns += tsum / R;
        wait_ns += wsum / R;
        layers++;
    }
    int hot = -1, slow = 0;
    for (int x = 0; x < s->nexperts; x++)
        if (hot < 0 || etok[x] > etok[hot])
            hot = x;
    for (int r = 1; r < s->nranks; r++)
        if (rank_ns[r] > rank_ns[slow])
            slow = r;
    prs_val v[11] = {
        prs_v_int(g[0].step), start >= 0 ? prs_v_ns(start) : prs_v_null(), prs_v_int(layers),
        prs_v_real(std_sum / layers), prs_v_real(ratio_sum / layers),
        hot >= 0 && all_tok ? prs_v_int(hot) : prs_v_null(),
        hot >= 0 && all_tok ? prs_v_real((double)etok[hot] / (double)all_tok) : prs_v_null(),
        prs_v_text(s->labels[slow], -1), prs_v_ns((int64_t)llround(max_ns)), prs_v_ns((int64_t)llround(mean_ns)),
        prs_v_ns((int64_t)llround(wait_ns)),
    };
    prs_table_row(o, t, v);
}

void prs_eplb_write(prs_out *o, const prs_moe_set *s)
{
    expert_rows(o, s);
    static const prs_col cols[] = {
        {PRS_EB_STEP, "INTEGER"}, {PRS_EB_START_MS, "REAL"}, {PRS_EB_LAYERS, "INTEGER"}, {PRS_EB_RATIO, "REAL"},
        {PRS_EB_LOAD_RATIO, "REAL"}, {PRS_EB_HOT, "INTEGER"}, {PRS_EB_HOT_SHARE, "REAL"},
        {PRS_EB_SLOWEST, "TEXT"}, {PRS_EB_MAX_MS, "REAL"}, {PRS_EB_MEAN_MS, "REAL"},
        {PRS_EB_WAIT_MS, "REAL"},
    };
    prs_table t = {0};
    prs_table_init(o, &t, "eplb_balance.csv", PRS_T_EPLB, cols, 11, NULL);
    long long *etok = calloc((size_t)s->nexperts + 1, sizeof *etok);
    double *rank_ns = calloc((size_t)s->nranks + 1, sizeof *rank_ns);
    for (long long i = 0, j; i < s->n; i = j) {
        for (j = i + 1; j < s->n && s->e[j].step == s->e[i].step; j++)
            ;
        step_row(o, &t, s, &s->e[i], j - i, etok, rank_ns);
    }
    prs_table_close(o, &t);
    free(etok);
    free(rank_ns);
}
