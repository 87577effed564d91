/* SPDX-License-Identifier: Apache-2.0 */
/*
 * moefind.c — the finding of mixture-of-experts serving, from the parser's
 * moe_rank and expert_load rows (the tap on raw stores, the tables of a
 * profiler.db):
 *
 *   expert_imbalance  one expert-parallel rank's experts run longer than
 *                     the others' and, since the combine is a barrier,
 *                     every rank waits for it in every layer.
 *     Figure: the slowest rank's expert-compute time over the run / the
 *             mean rank's (threshold moe_imbalance). Summed over the run,
 *             not per step: a small step's random spread (and, on a busy
 *             CPU, a descheduled rank thread) averages out; a hot expert
 *             does not.
 *     Gate:   when the rows each rank got are known, the busiest rank's
 *             rows / the mean rank's must reach moe_load_ratio too: a time
 *             spread with an even load is the machine, not the routing.
 *     Score:  the time the step loses to the slowest rank, sum over (step,
 *             layer) of (slowest rank's compute - mean rank's compute), as
 *             a share of the device-busy time (budget.c), else of the MoE
 *             layers' own time.
 *     Evidence: the share of the MoE layers' time (and of the busy time)
 *             the ranks spend waiting at the combine (moe_rank's
 *             combine_wait), the hottest experts with their share of the
 *             routed rows against 1/E, the most unbalanced layer, the
 *             worst (step, layer) moments as examples.
 *
 * Silent when there are no MoE rows or the figure or gate stays below its
 * threshold. Memory: the rows as read (one per step, layer and rank).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "repcols.h"

#define T(id) (o->threshold[SA_T_##id])

const char *const sa_moe_rank_cols[MR_N] = {
    PRS_MR_STEP, PRS_MR_LAYER, PRS_MR_RANK, PRS_MR_START_MS, PRS_MR_DISPATCH_MS, PRS_MR_COMPUTE_MS,
    PRS_MR_COMBINE_MS, PRS_MR_WAIT_MS, PRS_MR_TOKENS};
const char *const sa_moe_load_cols[EL_N] = {PRS_EL_LAYER, PRS_EL_EXPERT, PRS_EL_TOKENS};

#define GROW(arr, n, cap)                                                 \
    do {                                                                  \
        if ((n) == (cap)) {                                               \
            (cap) = (cap) ? (cap) * 2 : 256;                              \
            (arr) = realloc((arr), (size_t)(cap) * sizeof *(arr));        \
        }                                                                 \
    } while (0)

static int rank_index(sa_profile *p, const char *s, int len)
{
    for (int i = 0; i < p->nmoe_ranks; i++)
        if ((int)strlen(p->moe_ranks[i]) == len && !strncmp(p->moe_ranks[i], s, (size_t)len))
            return i;
    p->moe_ranks = realloc(p->moe_ranks, (size_t)(p->nmoe_ranks + 1) * sizeof *p->moe_ranks);
    p->moe_ranks[p->nmoe_ranks] = strndup(s, (size_t)len);
    return p->nmoe_ranks++;
}

void sa_moe_add_rank_row(sa_profile *p, const prs_colmap *m, const prs_val *v)
{
    double step = prs_colmap_num(v, m, MR_STEP), layer = prs_colmap_num(v, m, MR_LAYER);
    int len;
    const char *rank = prs_colmap_text(v, m, MR_RANK, &len);
    char buf[32];
    if (!len) { /* a db read back may give the rank as a number */
        double r = prs_colmap_num(v, m, MR_RANK);
        if (isnan(r))
            return;
        len = snprintf(buf, sizeof buf, "%.0f", r);
        rank = buf;
    }
    if (isnan(step) || isnan(layer))
        return;
    GROW(p->moe, p->nmoe, p->capmoe);
    sa_moe *x = &p->moe[p->nmoe++];
    x->step = (long long)step;
    x->layer = (int)layer;
    x->rank = rank_index(p, rank, len);
    double start = prs_colmap_num(v, m, MR_START);
    x->start = isnan(start) ? 0 : (int64_t)llround(start * 1e3) * 1000;
    x->dispatch = prs_colmap_num(v, m, MR_DISPATCH);
    x->compute = prs_colmap_num(v, m, MR_COMPUTE);
    x->combine = prs_colmap_num(v, m, MR_COMBINE);
    x->wait = prs_colmap_num(v, m, MR_WAIT);
    x->tokens = prs_colmap_num(v, m, MR_TOKENS);
}

void sa_moe_add_load_row(sa_profile *p, const prs_colmap *m, const prs_val *v)
{
    double layer = prs_colmap_num(v, m, EL_LAYER), expert = prs_colmap_num(v, m, EL_EXPERT),
           tok = prs_colmap_num(v, m, EL_TOKENS);
    if (isnan(layer) || isnan(expert) || isnan(tok) || expert < 0 || expert > 1e6)
        return;
    GROW(p->exl, p->nexl, p->capexl);
    p->exl[p->nexl++] = (sa_expload){(int)layer, (int)expert, tok};
}

void sa_moe_free(sa_profile *p)
{
    free(p->moe);
    for (int i = 0; i < p->nmoe_ranks; i++)
        free(p->moe_ranks[i]);
    free(p->moe_ranks);
    free(p->exl);
    p->moe = NULL, p->moe_ranks = NULL, p->exl = NULL;
    p->nmoe = p->capmoe = p->nexl = p->capexl = 0;
    p->nmoe_ranks = 0;
}

static int by_step_layer(const void *pa, const void *pb)
{
    const sa_moe *a = pa, *b = pb;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->layer != b->layer)
        return a->layer < b->layer ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static double nz(double v) { return isnan(v) ? 0 : v; }

typedef struct moment { double lost; int64_t ts; long long step; int layer, rank; double slow, mean; } moment;

/* The experts whose share of the routed rows is at least 1.5 / E, hottest
 * first (at most 4; the hottest alone when none is), as text. */
static void hot_experts(const sa_profile *p, char *buf, size_t cap, int *first_hot)
{
    int E = 0;
    for (long long i = 0; i < p->nexl; i++)
        if (p->exl[i].expert + 1 > E)
            E = p->exl[i].expert + 1;
    buf[0] = 0;
    *first_hot = -1;
    if (!E)
        return;
    double *tok = calloc((size_t)E, sizeof *tok), all = 0;
    for (long long i = 0; i < p->nexl; i++) {
        tok[p->exl[i].expert] += p->exl[i].tokens;
        all += p->exl[i].tokens;
    }
    size_t o = 0;
    if (all > 0) {
        char *used = calloc((size_t)E, 1);
        for (int k = 0; k < 4; k++) {
            int best = -1;
            for (int e = 0; e < E; e++)
                if (!used[e] && (best < 0 || tok[e] > tok[best]))
                    best = e;
            if (best < 0 || (k > 0 && tok[best] / all < 1.5 / E))
                break;
            used[best] = 1;
            if (k == 0)
                *first_hot = best;
            o += (size_t)snprintf(buf + o, cap - o, "%s%d (%.0f%%)", k ? ", " : "", best, 100 * tok[best] / all);
            if (o >= cap)
                break;
        }
        if (o < cap)
            snprintf(buf + o, cap - o, " of the routed rows, against %.1f%% each if balanced (%d experts)",
                     100.0 / E, E);
        free(used);
    }
    free(tok);
}

void sa_moe_findings(const sa_profile *p, const sa_opts *o, const sa_series *s, sa_findings *out)
{
    int R = p->nmoe_ranks;
    if (!p->nmoe || R < 2)
        return;
    sa_moe *v = malloc((size_t)p->nmoe * sizeof *v);
    memcpy(v, p->moe, (size_t)p->nmoe * sizeof *v);
    qsort(v, (size_t)p->nmoe, sizeof *v, by_step_layer);
    double *comp = calloc((size_t)R, sizeof *comp), *load = calloc((size_t)R, sizeof *load);
    int loads_known = 1, nlayers = 0;
    for (long long i = 0; i < p->nmoe; i++) {
        comp[v[i].rank] += nz(v[i].compute);
        if (isnan(v[i].tokens))
            loads_known = 0;
        else
            load[v[i].rank] += v[i].tokens;
        if (v[i].layer + 1 > nlayers)
            nlayers = v[i].layer + 1;
    }
    int slow = 0, busiest = 0;
    double csum = 0, lsum = 0;
    for (int r = 0; r < R; r++) {
        csum += comp[r];
        lsum += load[r];
        if (comp[r] > comp[slow])
            slow = r;
        if (load[r] > load[busiest])
            busiest = r;
    }
    double ratio = csum > 0 ? comp[slow] / (csum / R) : 0;
    double load_ratio = lsum > 0 ? load[busiest] / (lsum / R) : NAN;
    /* per (step, layer): time lost to the slowest rank, waits, the layer's time */
    double lost = 0, wait = 0, layer_ms = 0;
    double *lay_max = calloc((size_t)nlayers + 1, sizeof *lay_max), *lay_mean = calloc((size_t)nlayers + 1,
                                                                                     sizeof *lay_mean);
    moment worst[3] = {{0}};
    for (long long i = 0, j; i < p->nmoe; i = j) {
        for (j = i + 1; j < p->nmoe && v[j].step == v[i].step && v[j].layer == v[i].layer; j++)
            ;
        double mx = 0, sum = 0, wsum = 0, span = 0;
        int who = v[i].rank;
        for (long long k = i; k < j; k++) {
            double c = nz(v[k].compute);
            if (c > mx) {
                mx = c;
                who = v[k].rank;
            }
            sum += c;
            wsum += nz(v[k].wait);
            double t = nz(v[k].dispatch) + c + nz(v[k].combine);
            span = t > span ? t : span;
        }
        double mean = sum / R;
        lost += mx - mean;
        wait += wsum / R;
        layer_ms += span;
        lay_max[v[i].layer] += mx;
        lay_mean[v[i].layer] += mean;
        moment m = {mx - mean, v[i].start, v[i].step, v[i].layer, who, mx, mean};
        for (int k = 0; k < 3; k++)
            if (m.lost > worst[k].lost) {
                moment t = worst[k];
                worst[k] = m;
                m = t;
            }
    }
    int hot_layer = 0;
    for (int l = 1; l < nlayers; l++)
        if (lay_mean[l] > 0 && (lay_mean[hot_layer] <= 0 || lay_max[l] / lay_mean[l] >
                                                                 lay_max[hot_layer] / lay_mean[hot_layer]))
            hot_layer = l;
    double busy_ms = 0;
    for (int q = 0; s->budget.proc_busy && q < p->nproc; q++)
        busy_ms += s->budget.proc_busy[q] * 1e3;
    int fire = ratio >= T(MOE_IMBALANCE) && (!loads_known || isnan(load_ratio) || load_ratio >= T(MOE_LOAD_RATIO));
    if (fire) {
        double base = busy_ms > 0 ? busy_ms : layer_ms;
        sa_finding *f = sa_finding_add(out, "expert_imbalance", 1, base > 0 ? lost / base : 0);
        if (f) {
            char hot[200];
            int first_hot;
            hot_experts(p, hot, sizeof hot, &first_hot);
            snprintf(f->title, sizeof f->title,
                     "Unbalanced experts: EP rank %s's experts compute %.1fx the mean rank's; the others wait "
                     "at the combine", p->moe_ranks[slow], ratio);
            f->fig_name = "expert_compute_ratio";
            f->fig_value = ratio;
            f->fig_unit = "ratio";
            f->thr_name = "moe_imbalance";
            f->thr_value = T(MOE_IMBALANCE);
            f->thr_op = ">=";
            int n = snprintf(f->evidence, sizeof f->evidence,
                             "%d EP ranks; ranks wait at the combine %.0f%% of the MoE layers' time", R,
                             layer_ms > 0 ? 100 * wait / layer_ms : 0);
            if (busy_ms > 0)
                n += snprintf(f->evidence + n, sizeof f->evidence - (size_t)n, " (%.0f%% of the busy time)",
                              100 * wait / busy_ms);
            if (!isnan(load_ratio) && loads_known)
                n += snprintf(f->evidence + n, sizeof f->evidence - (size_t)n,
                              "; rank %s got %.1fx the mean rank's rows", p->moe_ranks[busiest], load_ratio);
            if (hot[0])
                n += snprintf(f->evidence + n, sizeof f->evidence - (size_t)n, "; hottest experts %s", hot);
            if (n < (int)sizeof f->evidence && nlayers > 1)
                snprintf(f->evidence + n, sizeof f->evidence - (size_t)n, "; most unbalanced layer %d (%.1fx)",
                         hot_layer, lay_mean[hot_layer] > 0 ? lay_max[hot_layer] / lay_mean[hot_layer] : 0);
            for (int k = 0; k < 3 && worst[k].lost > 0 && f->nex < 5; k++) {
                sa_example *e = &f->ex[f->nex++];
                e->rid[0] = 0;
                e->ts = worst[k].ts;
                snprintf(e->what, sizeof e->what, "step %lld layer %d: rank %s %.2f ms, mean %.2f ms",
                         worst[k].step, worst[k].layer, p->moe_ranks[worst[k].rank], worst[k].slow,
                         worst[k].mean);
            }
            f->knob = "EPLB: move or replicate the hot experts (redundant experts) so every rank gets the same "
                      "rows; or a different EP size (fewer, larger ranks even the load); or a capacity factor "
                      "that caps the rows an expert takes per step";
        }
    }
    free(lay_max);
    free(lay_mean);
    free(comp);
    free(load);
    free(v);
}
