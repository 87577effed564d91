/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pdfind.c — the findings of disaggregated (prefill/decode split) serving,
 * from the parser's pd_split_communication and pd_split_kvcache rows (the
 * tap on raw stores, the tables of a profiler.db):
 *
 *   handoff       the hand-off (send to D + KV transfer) is a large share of
 *                 TTFT. Figure: mean handoff_share of the requests that
 *                 have one. Score: mean hand-off time x requests / all
 *                 complete requests' e2e (the latency it explains).
 *   pd_imbalance  one side idle while the other queues. Each request is on
 *                 the prefill side from receiveReq to sendReqToD (else
 *                 prefillRes) and on the decode side from sendReqToDSucc
 *                 (else sendReqToD) to decodeRes. A sweep over those
 *                 moments measures the time when one side holds at least
 *                 pd_queue_min requests and the other none. Figure: that
 *                 time / the time with any hand-off in flight. Score: that
 *                 time / the run. Without hand-off moments, the
 *                 coordinator's: prefillStart..prefillEnd on the prefill
 *                 side, decodeStart..decodeEnd on the decode side.
 *   slow_kv_pull  one rank pulls KV slower than the others. Per rank: ms
 *                 per MB when every pull has its bytes, else the mean pull
 *                 time. Figure: slowest rank / fastest rank (>= 2 ranks).
 *                 Score: the slow rank's pull time beyond the fastest
 *                 rank's pace / all complete requests' e2e.
 *
 * Design: these rows are few (one or two per request), so the checks sort
 * and scan plain arrays; nothing here touches the per-record hot path.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define T(id) (o->threshold[SA_T_##id])

static void set_figure(sa_finding *f, const char *name, double v, const char *unit, const char *tname, double tv)
{
    f->fig_name = name;
    f->fig_value = v;
    f->fig_unit = unit;
    f->thr_name = tname;
    f->thr_value = tv;
    f->thr_op = ">=";
}

static void add_example(sa_finding *f, const char *rid, int64_t ts, const char *what)
{
    if (f->nex >= 5)
        return;
    sa_example *e = &f->ex[f->nex++];
    snprintf(e->rid, sizeof e->rid, "%s", rid ? rid : "");
    e->ts = ts;
    snprintf(e->what, sizeof e->what, "%s", what);
}

/* Marks the "all" windows that [a, b) overlaps. */
static void mark_windows(sa_finding *f, const sa_series *s, int64_t a, int64_t b)
{
    for (int k = 0; k < s->count; k++) {
        if (s->w[k].end <= a || s->w[k].start >= b)
            continue;
        int seen = 0;
        for (int j = 0; j < f->nwindows; j++)
            seen |= f->windows[j] == k;
        if (!seen && f->nwindows < 16)
            f->windows[f->nwindows++] = k;
    }
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* ------------------------------------------------------------- handoff */
static void check_handoff(const sa_profile *p, const sa_opts *o, const sa_series *s, double e2e_total,
                          sa_findings *out)
{
    double share_sum = 0, handoff_ms = 0, ttft_sum = 0;
    long long n = 0;
    for (long long i = 0; i < p->npd; i++) {
        const sa_pdreq *x = &p->pd[i];
        if (isnan(x->share) || isnan(x->ttft))
            continue;
        share_sum += x->share;
        handoff_ms += x->share * x->ttft;
        ttft_sum += x->ttft;
        n++;
    }
    if (!n)
        return;
    double mean = share_sum / (double)n;
    if (mean < T(HANDOFF_SHARE))
        return;
    double score = e2e_total > 0 ? fmin(1, handoff_ms / e2e_total) : mean;
    sa_finding *f = sa_finding_add(out, "handoff", 1, score);
    if (!f)
        return;
    snprintf(f->title, sizeof f->title, "The P-to-D hand-off takes %.0f%% of TTFT", mean * 100);
    set_figure(f, "handoff_share_of_ttft", mean, "frac", "handoff_share", T(HANDOFF_SHARE));
    snprintf(f->evidence, sizeof f->evidence,
             "%lld request(s) handed from prefill to decode: mean hand-off (send + KV transfer) %.2f ms of "
             "%.2f ms mean TTFT",
             n, handoff_ms / (double)n, ttft_sum / (double)n);
    /* examples: the largest shares */
    int used[5] = {-1, -1, -1, -1, -1};
    for (int k = 0; k < 5; k++) {
        long long best = -1;
        for (long long i = 0; i < p->npd; i++) {
            const sa_pdreq *x = &p->pd[i];
            int dup = 0;
            for (int j = 0; j < k; j++)
                dup |= used[j] == i;
            if (!dup && !isnan(x->share) && !isnan(x->ttft) && (best < 0 || x->share > p->pd[best].share))
                best = i;
        }
        if (best < 0)
            break;
        used[k] = (int)best;
        const sa_pdreq *x = &p->pd[best];
        char what[96];
        snprintf(what, sizeof what, "hand-off %.0f%% of %.2f ms TTFT", x->share * 100, x->ttft);
        add_example(f, x->rid, x->t[SA_PD_SEND] ? x->t[SA_PD_SEND] : x->t[SA_PD_REQ], what);
        if (x->t[SA_PD_SEND]) /* the hand-off itself: send to D .. end of the transfer */
            mark_windows(f, s, x->t[SA_PD_SEND], x->t[SA_PD_SEND] + (int64_t)llround(x->share * x->ttft * 1e6));
    }
    qsort(f->windows, (size_t)f->nwindows, sizeof f->windows[0], cmp_int);
    f->knob = "faster KV transfer: the P-D link (RDMA/NVLink rather than TCP), fewer bytes per request "
              "(KV quantization, prefix caching on D), vLLM --kv-transfer-config connector, SGLang "
              "--disaggregation-transfer-backend, MindIE PD link settings; co-locate P and D for short prompts";
}

/* -------------------------------------------------------- pd_imbalance */
typedef struct moment { int64_t ts; int side, delta; } moment;

static int cmp_moment(const void *a, const void *b)
{
    const moment *x = a, *y = b;
    if (x->ts != y->ts)
        return (x->ts > y->ts) - (x->ts < y->ts);
    return x->delta - y->delta; /* ends before starts at the same moment */
}

typedef struct stretch { int64_t a, b; int side; } stretch;

/* Keeps the 5 longest stretches, longest first. */
static void keep_stretch(stretch *top, int *ntop, stretch x)
{
    int i = *ntop;
    if (i == 5) {
        if (top[4].b - top[4].a >= x.b - x.a)
            return;
        i = 4;
    } else {
        (*ntop)++;
    }
    top[i] = x;
    for (; i > 0 && top[i].b - top[i].a > top[i - 1].b - top[i - 1].a; i--) {
        stretch t = top[i];
        top[i] = top[i - 1];
        top[i - 1] = t;
    }
}

static void check_imbalance(const sa_profile *p, const sa_opts *o, const sa_series *s, sa_findings *out)
{
    moment *m = malloc((size_t)(p->npd * 4 + 1) * sizeof *m);
    long long n = 0;
    for (long long i = 0; i < p->npd; i++) {
        const int64_t *t = p->pd[i].t;
        int64_t p_end = t[SA_PD_SEND] ? t[SA_PD_SEND] : t[SA_PD_PRES];
        int64_t d_start = t[SA_PD_SUCC] ? t[SA_PD_SUCC] : t[SA_PD_SEND];
        if (t[SA_PD_REQ] && p_end > t[SA_PD_REQ]) {
            m[n++] = (moment){t[SA_PD_REQ], 0, 1};
            m[n++] = (moment){p_end, 0, -1};
        }
        if (d_start && t[SA_PD_END] > d_start) {
            m[n++] = (moment){d_start, 1, 1};
            m[n++] = (moment){t[SA_PD_END], 1, -1};
        }
    }
    int from_coord = 0;
    if (n < 4 && p->ncoord) { /* no hand-off moments: the coordinator's view */
        free(m);
        m = malloc((size_t)p->ncoord * sizeof *m);
        n = 0;
        for (long long i = 0; i < p->ncoord; i++) {
            int w = p->coord[i].which;
            m[n++] = (moment){p->coord[i].ts, w == SA_CO_DSTART || w == SA_CO_DEND,
                              w == SA_CO_PSTART || w == SA_CO_DSTART ? 1 : -1};
        }
        from_coord = 1;
    }
    if (n < 4) {
        free(m);
        return;
    }
    qsort(m, (size_t)n, sizeof *m, cmp_moment);
    int in[2] = {0, 0};
    int64_t active = 0, lop[2] = {0, 0}; /* lop[side]: time side queued while the other was idle */
    stretch top[5];
    int ntop = 0, cur = -1;
    int64_t cur_start = 0;
    int qmin = (int)ceil(T(PD_QUEUE_MIN));
    if (qmin < 1)
        qmin = 1;
    for (long long i = 0; i < n; i++) {
        if (i > 0) {
            int64_t dt = m[i].ts - m[i - 1].ts;
            if (in[0] + in[1] > 0)
                active += dt;
            if (cur >= 0)
                lop[cur] += dt;
        }
        in[m[i].side] += m[i].delta;
        if (in[m[i].side] < 0) /* an end whose start was before collection */
            in[m[i].side] = 0;
        if (i + 1 < n && m[i + 1].ts == m[i].ts)
            continue; /* state between moments only */
        int now = in[0] >= qmin && in[1] == 0 ? 0 : in[1] >= qmin && in[0] == 0 ? 1 : -1;
        if (now != cur) {
            if (cur >= 0)
                keep_stretch(top, &ntop, (stretch){cur_start, m[i].ts, cur});
            cur = now;
            cur_start = m[i].ts;
        }
    }
    free(m);
    if (!(active > 0))
        return;
    double frac = (double)(lop[0] + lop[1]) / (double)active;
    if (frac < T(PD_IMBALANCE_FRAC) || lop[0] + lop[1] == 0)
        return;
    double run = (double)(p->t1 - p->t0);
    sa_finding *f = sa_finding_add(out, "pd_imbalance", 1, run > 0 ? fmin(1, (double)(lop[0] + lop[1]) / run) : frac);
    if (!f)
        return;
    int busy = lop[0] >= lop[1] ? 0 : 1;
    static const char *const side[2] = {"prefill", "decode"};
    snprintf(f->title, sizeof f->title, "P/D imbalance: %s queues while %s idles %.0f%% of the hand-off time",
             side[busy], side[!busy], frac * 100);
    set_figure(f, "pd_one_side_idle_frac", frac, "frac", "pd_imbalance_frac", T(PD_IMBALANCE_FRAC));
    snprintf(f->evidence, sizeof f->evidence,
             "of %.1f ms with hand-offs in flight: %.1f ms with >= %d on prefill and none on decode, %.1f ms "
             "with >= %d on decode and none on prefill (%s)",
             (double)active / 1e6, (double)lop[0] / 1e6, qmin, (double)lop[1] / 1e6, qmin,
             from_coord ? "coordinator moments" : "hand-off moments");
    for (int k = 0; k < ntop; k++) {
        char what[96];
        snprintf(what, sizeof what, "%s queued, %s idle for %.2f ms", side[top[k].side], side[!top[k].side],
                 (double)(top[k].b - top[k].a) / 1e6);
        add_example(f, NULL, top[k].a, what);
        mark_windows(f, s, top[k].a, top[k].b);
    }
    qsort(f->windows, (size_t)f->nwindows, sizeof f->windows[0], cmp_int);
    f->knob = "change the P:D ratio toward the side that queues (more prefill instances when prefill queues, "
              "more decode instances or a larger decode batch when decode queues): vLLM/SGLang number of "
              "prefill and decode workers, MindIE PD instance counts / role switching";
}

/* -------------------------------------------------------- slow_kv_pull */
typedef struct rank_agg { int rank; long long n, nbytes; double ms, bytes; } rank_agg;

static double pace(const rank_agg *r, int per_mb)
{
    return per_mb ? r->ms / (r->bytes / 1e6) : r->ms / (double)r->n;
}

static void check_pulls(const sa_profile *p, const sa_opts *o, const sa_series *s, double e2e_total,
                        sa_findings *out)
{
    rank_agg rk[256];
    int nr = 0;
    for (long long i = 0; i < p->npull; i++) {
        const sa_pull *x = &p->pull[i];
        if (x->rank < 0)
            continue;
        int k;
        for (k = 0; k < nr && rk[k].rank != x->rank; k++)
            ;
        if (k == nr) {
            if (nr == 256)
                continue;
            rk[nr++] = (rank_agg){x->rank, 0, 0, 0, 0};
        }
        rk[k].n++;
        rk[k].ms += x->dur_ms;
        if (!isnan(x->bytes) && x->bytes > 0) {
            rk[k].nbytes++;
            rk[k].bytes += x->bytes;
        }
    }
    if (nr < 2)
        return;
    int per_mb = 1;
    for (int k = 0; k < nr; k++)
        per_mb &= rk[k].nbytes == rk[k].n;
    int lo = 0, hi = 0;
    for (int k = 1; k < nr; k++) {
        if (pace(&rk[k], per_mb) < pace(&rk[lo], per_mb))
            lo = k;
        if (pace(&rk[k], per_mb) > pace(&rk[hi], per_mb))
            hi = k;
    }
    double fast = pace(&rk[lo], per_mb), slow = pace(&rk[hi], per_mb);
    if (!(fast > 0) || slow / fast < T(KV_PULL_RATIO))
        return;
    double ratio = slow / fast;
    double excess = rk[hi].ms * (1 - fast / slow);
    sa_finding *f = sa_finding_add(out, "slow_kv_pull", 1, e2e_total > 0 ? fmin(1, excess / e2e_total) : 1 - fast / slow);
    if (!f)
        return;
    snprintf(f->title, sizeof f->title, "Slow KV pulls on rank %d: %.1fx the fastest rank's %s", rk[hi].rank, ratio,
             per_mb ? "time per MB" : "pull time");
    set_figure(f, "kv_pull_rank_ratio", ratio, "ratio", "kv_pull_ratio", T(KV_PULL_RATIO));
    if (per_mb)
        snprintf(f->evidence, sizeof f->evidence,
                 "rank %d: %lld pull(s), %.3f ms per MB (%.1f MB/s); rank %d: %lld pull(s), %.3f ms per MB "
                 "(%.1f MB/s); %d rank(s) in all",
                 rk[hi].rank, rk[hi].n, slow, 1e3 / slow, rk[lo].rank, rk[lo].n, fast, 1e3 / fast, nr);
    else
        snprintf(f->evidence, sizeof f->evidence,
                 "rank %d: %lld pull(s), mean %.3f ms; rank %d: %lld pull(s), mean %.3f ms; %d rank(s) in all "
                 "(bytes not recorded for every pull: times compared)",
                 rk[hi].rank, rk[hi].n, slow, rk[lo].rank, rk[lo].n, fast, nr);
    /* examples: the slow rank's longest pulls */
    long long used[5];
    for (int k = 0; k < 5; k++) {
        long long best = -1;
        for (long long i = 0; i < p->npull; i++) {
            int dup = 0;
            for (int j = 0; j < k; j++)
                dup |= used[j] == i;
            if (!dup && p->pull[i].rank == rk[hi].rank && (best < 0 || p->pull[i].dur_ms > p->pull[best].dur_ms))
                best = i;
        }
        if (best < 0)
            break;
        used[k] = best;
        const sa_pull *x = &p->pull[best];
        char what[96];
        snprintf(what, sizeof what, "KV pull on rank %d: %.2f ms", x->rank, x->dur_ms);
        add_example(f, x->rid, x->start, what);
        mark_windows(f, s, x->start, x->start + (int64_t)llround(x->dur_ms * 1e6));
    }
    qsort(f->windows, (size_t)f->nwindows, sizeof f->windows[0], cmp_int);
    f->knob = "check that rank's transfer path (its NIC / link, NUMA placement, a congested switch port) and "
              "the KV connector's per-rank setup (vLLM --kv-transfer-config, SGLang "
              "--disaggregation-ib-device, MindIE device-to-NIC mapping)";
}

void sa_pd_findings(const sa_profile *p, const sa_opts *o, const sa_series *s, double e2e_ms_total,
                    sa_findings *out)
{
    check_handoff(p, o, s, e2e_ms_total, out);
    check_imbalance(p, o, s, out);
    check_pulls(p, o, s, e2e_ms_total, out);
}
