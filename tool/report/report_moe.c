/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_moe.c — the page's mixture-of-experts data, from the parser's
 * moe_rank and eplb_balance rows (report_rows.c hands them over):
 *
 *   heat     per expert-parallel rank, its expert-compute time per step,
 *            steps grouped into at most RPT_MOE_COLS columns (the mean of
 *            the column's steps): the reference's ep_balance heat map, over
 *            time instead of over layers (a hot expert is a bright row)
 *   balance  per step: the slowest rank's compute / the mean rank's, the
 *            busiest rank's rows / the mean's, and the reference's balance
 *            ratio (std of the rank loads), downsampled like every series
 *
 * Absent ("moe": null) when the run has no MoE rows. Memory: one small
 * struct per (step, layer, rank) row and per step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "colmap.h"
#include "repcols.h"
#include "report.h"

#define RPT_MOE_COLS 200

enum { MR_STEP, MR_RANK, MR_COMPUTE, MR_N };
static const char *const mr_cols[MR_N] = {PRS_MR_STEP, PRS_MR_RANK, PRS_MR_COMPUTE_MS};
enum { EB_STEP, EB_START, EB_RATIO, EB_LOAD, EB_MAX, EB_MEAN, EB_N };
static const char *const eb_cols[EB_N] = {PRS_EB_STEP, PRS_EB_START_MS, PRS_EB_RATIO, PRS_EB_LOAD_RATIO,
                                          PRS_EB_MAX_MS, PRS_EB_MEAN_MS};

typedef struct cell { long long step; int rank; double ms; } cell;
typedef struct bal { double t_ms, ratio, load, compute; } bal;

struct rpt_moe {
    prs_colmap mr, eb;
    cell *c; size_t nc, capc;
    bal *b; size_t nb, capb;
    char **ranks; int nranks;
    int oom;
};

rpt_moe *rpt_moe_new(void) { return calloc(1, sizeof(rpt_moe)); }

void rpt_moe_reset(rpt_moe *m)
{
    if (!m)
        return;
    free(m->c);
    free(m->b);
    for (int i = 0; i < m->nranks; i++)
        free(m->ranks[i]);
    free(m->ranks);
    memset(m, 0, sizeof *m);
}

void rpt_moe_free(rpt_moe *m)
{
    rpt_moe_reset(m);
    free(m);
}

static int rank_of(rpt_moe *m, const char *s, int n)
{
    for (int i = 0; i < m->nranks; i++)
        if ((int)strlen(m->ranks[i]) == n && !strncmp(m->ranks[i], s, (size_t)n))
            return i;
    char **r = realloc(m->ranks, (size_t)(m->nranks + 1) * sizeof *r);
    if (!r)
        return -1;
    m->ranks = r;
    m->ranks[m->nranks] = strndup(s, (size_t)n);
    return m->ranks[m->nranks] ? m->nranks++ : -1;
}

#define GROW(arr, n, cap, m)                                                   \
    do {                                                                       \
        if ((n) == (cap)) {                                                    \
            size_t nc = (cap) ? (cap) * 2 : 256;                               \
            void *p = realloc((arr), nc * sizeof *(arr));                      \
            if (!p) { (m)->oom = 1; return; }                                  \
            (arr) = p; (cap) = nc;                                             \
        }                                                                      \
    } while (0)

void rpt_moe_add(rpt_moe *m, const char *key, const prs_col *cols, int ncols, const prs_val *v)
{
    if (!strcmp(key, PRS_T_MOE_RANK)) {
        prs_colmap_fit(&m->mr, cols, ncols, mr_cols, MR_N);
        double step = prs_colmap_num(v, &m->mr, MR_STEP), ms = prs_colmap_num(v, &m->mr, MR_COMPUTE);
        int len;
        const char *rank = prs_colmap_text(v, &m->mr, MR_RANK, &len);
        char buf[32];
        if (!len && !isnan(prs_colmap_num(v, &m->mr, MR_RANK))) {
            len = snprintf(buf, sizeof buf, "%.0f", prs_colmap_num(v, &m->mr, MR_RANK));
            rank = buf;
        }
        int r = len ? rank_of(m, rank, len) : -1;
        if (isnan(step) || r < 0)
            return;
        GROW(m->c, m->nc, m->capc, m);
        m->c[m->nc++] = (cell){(long long)step, r, isnan(ms) ? 0 : ms};
    } else if (!strcmp(key, PRS_T_EPLB)) {
        prs_colmap_fit(&m->eb, cols, ncols, eb_cols, EB_N);
        double t = prs_colmap_num(v, &m->eb, EB_START);
        if (isnan(t))
            return;
        double mx = prs_colmap_num(v, &m->eb, EB_MAX), mean = prs_colmap_num(v, &m->eb, EB_MEAN);
        GROW(m->b, m->nb, m->capb, m);
        m->b[m->nb++] = (bal){t, prs_colmap_num(v, &m->eb, EB_RATIO), prs_colmap_num(v, &m->eb, EB_LOAD),
                              mean > 0 ? mx / mean : NAN};
    }
}

static int by_step(const void *a, const void *b)
{
    const cell *x = a, *y = b;
    return x->step < y->step ? -1 : x->step > y->step;
}

static int by_t(const void *a, const void *b)
{
    const bal *x = a, *y = b;
    return x->t_ms < y->t_ms ? -1 : x->t_ms > y->t_ms;
}

/* {"ranks", "heat": {"steps": [first step of each column], "ms": [[rank 0 ...], ...]}, "balance": series} */
json_t *rpt_moe_json(rpt_moe *m, double t0_ms, int buckets)
{
    if (!m || m->oom || !m->nc || !m->nranks)
        return json_null();
    qsort(m->c, m->nc, sizeof *m->c, by_step);
    long long nsteps = 1;
    for (size_t i = 1; i < m->nc; i++)
        nsteps += m->c[i].step != m->c[i - 1].step;
    long long per = (nsteps + RPT_MOE_COLS - 1) / RPT_MOE_COLS; /* steps per column */
    int ncol = (int)((nsteps + per - 1) / per);
    double *sum = calloc((size_t)ncol * (size_t)m->nranks, sizeof *sum);
    long long *first = calloc((size_t)ncol, sizeof *first), *nst = calloc((size_t)ncol, sizeof *nst);
    if (!sum || !first || !nst) {
        free(sum), free(first), free(nst);
        return NULL;
    }
    long long k = -1;
    for (size_t i = 0; i < m->nc; i++) {
        if (!i || m->c[i].step != m->c[i - 1].step) {
            k++;
            if (k % per == 0)
                first[k / per] = m->c[i].step;
            nst[k / per]++;
        }
        sum[(size_t)(k / per) * m->nranks + m->c[i].rank] += m->c[i].ms;
    }
    json_t *ranks = json_array(), *steps = json_array(), *rows = json_array();
    for (int r = 0; r < m->nranks; r++) {
        json_array_append_new(ranks, json_string(m->ranks[r]));
        json_t *row = json_array();
        for (int c = 0; c < ncol; c++)
            json_array_append_new(row, json_real(round(sum[(size_t)c * m->nranks + r] / (double)nst[c] * 1e3) / 1e3));
        json_array_append_new(rows, row);
    }
    for (int c = 0; c < ncol; c++)
        json_array_append_new(steps, json_integer(first[c]));
    free(sum), free(first), free(nst);
    json_t *balance = json_null();
    if (m->nb) {
        qsort(m->b, m->nb, sizeof *m->b, by_t);
        rpt_series *s = rpt_series_new(3);
        for (size_t i = 0; s && i < m->nb; i++) {
            double vals[3] = {m->b[i].compute, m->b[i].load, m->b[i].ratio};
            if (rpt_series_add(s, (m->b[i].t_ms - t0_ms) / 1e3, vals) != 0) {
                rpt_series_free(s);
                s = NULL;
            }
        }
        rpt_series *d = s ? rpt_downsample(s, buckets) : NULL;
        static const char *const names[] = {"compute_ratio", "load_ratio", "balance_ratio"};
        if (d)
            balance = rpt_series_json(d, names, 4);
        rpt_series_free(d);
        rpt_series_free(s);
        if (!balance)
            balance = json_null();
    }
    return json_pack("{s:o, s:{s:o, s:o}, s:o}", "ranks", ranks, "heat", "steps", steps, "ms", rows, "balance",
                     balance);
}
