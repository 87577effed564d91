/* SPDX-License-Identifier: Apache-2.0 */
/*
 * budget.c — the per-window series and the engine's time budget.
 *
 * The run [t0, t1] is cut into windows (a count, or a width in seconds).
 * Each scope (the whole run, each process when there are several, each dp
 * rank when there are several) gets the same windows. A request belongs to
 * the window where it ended and to the process of its first step; a step
 * to the window where it started.
 *
 * Time budget, per process: busy = the union of its device steps (forward
 * spans, else execution steps, else schedule steps); work = the union of
 * its requests' lifetimes (arrival to end); stalled = work minus busy (a
 * request was waiting or running and the device did nothing: host,
 * scheduling or tokenizer time); idle = the rest (nothing to run). Each is
 * spread over the windows by exact interval overlap; scopes over several
 * processes divide by (processes x window length), so the three fractions
 * always sum to 1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define MAX_WINDOWS 1000

typedef struct iv { int64_t a, b; } iv;

static int cmp_iv(const void *x, const void *y)
{
    const iv *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sorts and merges overlapping intervals in place; returns the new count. */
static long long merge_ivs(iv *v, long long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_iv);
    long long k = 0;
    for (long long i = 0; i < n; i++) {
        if (v[i].b <= v[i].a)
            continue;
        if (k && v[i].a <= v[k - 1].b) {
            if (v[i].b > v[k - 1].b)
                v[k - 1].b = v[i].b;
        } else {
            v[k++] = v[i];
        }
    }
    return k;
}

typedef struct ctx {
    const sa_profile *p;
    sa_series *s;
    int64_t t0, width;
    int count;
} ctx;

static int win_of(const ctx *c, int64_t t)
{
    long long i = (t - c->t0) / c->width;
    return i < 0 ? 0 : i >= c->count ? c->count - 1 : (int)i;
}

/* Adds the seconds of [a, b) falling in each window to acc[window]. */
static void spread(const ctx *c, int64_t a, int64_t b, double *acc)
{
    if (b <= a)
        return;
    for (int w = win_of(c, a); w < c->count; w++) {
        int64_t ws = c->t0 + (int64_t)w * c->width, we = ws + c->width;
        if (w == c->count - 1 && we < b)
            we = b;
        int64_t lo = a > ws ? a : ws, hi = b < we ? b : we;
        if (hi > lo)
            acc[w] += (double)(hi - lo) / 1e9;
        if (b <= we)
            break;
    }
}

static void keep_gap(sa_series *s, int64_t a, int64_t b, int proc)
{
    int n = s->ngaps;
    if (n == 5 && b - a <= s->gaps[4].end - s->gaps[4].start)
        return;
    if (n < 5)
        n++;
    int i = n - 1;
    while (i > 0 && (s->gaps[i - 1].end - s->gaps[i - 1].start) < b - a) {
        s->gaps[i] = s->gaps[i - 1];
        i--;
    }
    s->gaps[i] = (sa_gap){a, b, proc};
    s->ngaps = n;
}

/* busy and stalled seconds of one process, per window (acc arrays) and in total. */
static void proc_budget(ctx *c, int proc, double *busy, double *stalled, double *tb, double *ts)
{
    const sa_profile *p = c->p;
    const sa_steps *bs = &p->steps[p->busy_src];
    iv *b = malloc((size_t)(bs->n + 1) * sizeof *b), *w = malloc((size_t)(p->nreq + 1) * sizeof *w);
    long long nb = 0, nw = 0;
    for (long long i = 0; i < bs->n; i++)
        if (bs->v[i].proc == proc)
            b[nb++] = (iv){bs->v[i].start, bs->v[i].end};
    for (long long i = 0; i < p->nreq; i++) {
        int rp = c->s->req_proc[i] < 0 && p->nproc <= 1 ? 0 : c->s->req_proc[i];
        if (rp != proc || p->req[i].start_ns <= 0)
            continue;
        w[nw++] = (iv){p->req[i].start_ns, p->req[i].end_ns ? p->req[i].end_ns : p->t1};
    }
    nb = merge_ivs(b, nb);
    nw = merge_ivs(w, nw);
    for (long long i = 0; i < nb; i++) {
        spread(c, b[i].a, b[i].b, busy);
        *tb += (double)(b[i].b - b[i].a) / 1e9;
    }
    /* work minus busy: walk both sorted lists */
    long long j = 0;
    for (long long i = 0; i < nw; i++) {
        int64_t cur = w[i].a;
        while (j < nb && b[j].b <= cur)
            j++;
        for (long long k = j; k < nb && b[k].a < w[i].b && cur < w[i].b; k++) {
            if (b[k].a > cur) {
                spread(c, cur, b[k].a, stalled);
                *ts += (double)(b[k].a - cur) / 1e9;
                keep_gap(c->s, cur, b[k].a, proc);
            }
            if (b[k].b > cur)
                cur = b[k].b;
        }
        if (cur < w[i].b) {
            spread(c, cur, w[i].b, stalled);
            *ts += (double)(w[i].b - cur) / 1e9;
            keep_gap(c->s, cur, w[i].b, proc);
        }
    }
    free(b);
    free(w);
}

static int in_scope(const sa_profile *p, int proc, int scope, int who)
{
    if (scope == 0)
        return 1;
    if (proc < 0)
        return 0;
    return scope == 1 ? proc == who : p->proc[proc].dp_rank == who;
}

/* Requests and steps of one scope into its windows. */
static void fill_scope(ctx *c, sa_window *ws, int scope, int who)
{
    const sa_profile *p = c->p;
    int n = c->count;
    for (int k = 0; k < n; k++) {
        memset(&ws[k], 0, sizeof ws[k]);
        ws[k].scope = scope;
        ws[k].who = who;
        ws[k].index = k;
        ws[k].start = c->t0 + (int64_t)k * c->width;
        ws[k].end = k == n - 1 ? (p->t1 > ws[k].start ? p->t1 : ws[k].start) : ws[k].start + c->width;
        ws[k].kv_mean = ws[k].kv_max = NAN;
    }
    /* requests: counting sort by window, then percentiles per slice */
    long long *off = calloc((size_t)n + 1, sizeof *off);
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        if (!in_scope(p, c->s->req_proc[i], scope, who) || !r->end_ns)
            continue;
        int w = win_of(c, r->end_ns);
        ws[w].preemptions += r->preempted;
        if (r->complete) {
            off[w + 1]++;
            ws[w].finished++;
            if (!isnan(r->out_tok))
                ws[w].out_tokens += r->out_tok;
        }
    }
    for (int k = 0; k < n; k++)
        off[k + 1] += off[k];
    long long tot = off[n];
    double *v[4];
    for (int m = 0; m < 4; m++)
        v[m] = malloc((size_t)(tot + 1) * sizeof(double));
    long long *pos = malloc((size_t)(n + 1) * sizeof *pos);
    memcpy(pos, off, (size_t)(n + 1) * sizeof *pos);
    for (long long i = 0; i < p->nreq; i++) {
        const sa_req *r = &p->req[i];
        if (!r->complete || !in_scope(p, c->s->req_proc[i], scope, who))
            continue;
        long long at = pos[win_of(c, r->end_ns)]++;
        v[0][at] = r->ttft;
        v[1][at] = r->tpot;
        v[2][at] = r->e2e;
        v[3][at] = isnan(r->queue) ? 0 : r->queue;
    }
    for (int k = 0; k < n; k++) {
        long long a = off[k], cnt = off[k + 1] - off[k];
        ws[k].ttft = sa_pct_of(v[0] + a, cnt);
        ws[k].tpot = sa_pct_of(v[1] + a, cnt);
        ws[k].e2e = sa_pct_of(v[2] + a, cnt);
        ws[k].queue = sa_pct_of(v[3] + a, cnt);
    }
    for (int m = 0; m < 4; m++)
        free(v[m]);
    /* steps: sums, and durations for the P90, sorted by (window, kind) */
    const sa_steps *ss = &p->steps[p->src];
    int nk = n * SA_NKINDS;
    long long *so = calloc((size_t)nk + 1, sizeof *so);
    double *bsum = calloc((size_t)nk, sizeof *bsum), *tsum = calloc((size_t)nk, sizeof *tsum);
    long long *tcnt = calloc((size_t)nk, sizeof *tcnt);
    for (long long i = 0; i < ss->n; i++) {
        const sa_step *st = &ss->v[i];
        if (!in_scope(p, st->proc, scope, who))
            continue;
        int key = win_of(c, st->start) * SA_NKINDS + st->kind;
        so[key + 1]++;
        bsum[key] += st->bs;
        if (!isnan(st->tokens)) {
            tsum[key] += st->tokens;
            tcnt[key]++;
        }
    }
    for (int k = 0; k < nk; k++)
        so[k + 1] += so[k];
    double *dur = malloc((size_t)(so[nk] + 1) * sizeof *dur);
    long long *sp = malloc((size_t)(nk + 1) * sizeof *sp);
    memcpy(sp, so, (size_t)(nk + 1) * sizeof *sp);
    for (long long i = 0; i < ss->n; i++) {
        const sa_step *st = &ss->v[i];
        if (in_scope(p, st->proc, scope, who))
            dur[sp[win_of(c, st->start) * SA_NKINDS + st->kind]++] = (double)(st->end - st->start) / 1e6;
    }
    for (int k = 0; k < nk; k++) {
        sa_stepagg *g = &ws[k / SA_NKINDS].steps[k % SA_NKINDS];
        long long cnt = so[k + 1] - so[k];
        sa_pct d = sa_pct_of(dur + so[k], cnt);
        g->count = cnt;
        g->bs_mean = cnt ? bsum[k] / (double)cnt : NAN;
        g->tok_mean = tcnt[k] ? tsum[k] / (double)tcnt[k] : NAN;
        g->ms_mean = d.mean;
        g->ms_p90 = d.p90;
    }
    /* KV usage */
    double *kvs = calloc((size_t)n, sizeof *kvs);
    long long *kvn = calloc((size_t)n, sizeof *kvn);
    for (long long i = 0; i < p->nkv; i++) {
        if (!in_scope(p, p->kv[i].proc, scope, who))
            continue;
        int w = win_of(c, p->kv[i].ts);
        kvs[w] += p->kv[i].usage;
        kvn[w]++;
        if (isnan(ws[w].kv_max) || p->kv[i].usage > ws[w].kv_max)
            ws[w].kv_max = p->kv[i].usage;
    }
    for (int k = 0; k < n; k++)
        ws[k].kv_mean = kvn[k] ? kvs[k] / (double)kvn[k] : NAN;
    free(kvs);
    free(kvn);
    free(off);
    free(pos);
    free(so);
    free(sp);
    free(dur);
    free(bsum);
    free(tsum);
    free(tcnt);
}

/* busy/stalled/idle of each window of a scope from per-process seconds. */
static void budget_scope(ctx *c, sa_window *ws, int scope, int who, double **pb, double **pst)
{
    const sa_profile *p = c->p;
    int members = 0;
    for (int q = 0; q < p->nproc; q++)
        if (in_scope(p, q, scope, who))
            members++;
    for (int k = 0; k < c->count; k++) {
        double len = (double)(ws[k].end - ws[k].start) / 1e9 * (members ? members : 1);
        double b = 0, st = 0;
        for (int q = 0; q < p->nproc; q++)
            if (in_scope(p, q, scope, who)) {
                b += pb[q][k];
                st += pst[q][k];
            }
        if (len <= 0) {
            ws[k].idle = 1;
            continue;
        }
        ws[k].busy = fmin(1, b / len);
        ws[k].stalled = fmin(1 - ws[k].busy, st / len);
        ws[k].idle = fmax(0, 1 - ws[k].busy - ws[k].stalled);
    }
}

void sa_series_compute(const sa_profile *p, const sa_opts *o, sa_series *s)
{
    memset(s, 0, sizeof *s);
    ctx c = {.p = p, .s = s, .t0 = p->t0};
    int64_t span = p->t1 - p->t0;
    if (o->window_s > 0) {
        c.width = (int64_t)(o->window_s * 1e9);
        if (c.width < 1)
            c.width = 1;
        long long n = span / c.width + 1;
        c.count = n > MAX_WINDOWS ? MAX_WINDOWS : (int)n;
        if (n > MAX_WINDOWS)
            c.width = span / MAX_WINDOWS + 1;
    } else {
        c.count = o->nwindows > 0 ? (o->nwindows > MAX_WINDOWS ? MAX_WINDOWS : o->nwindows) : 10;
        c.width = span / c.count + 1;
    }
    s->count = c.count;
    s->width_s = (double)c.width / 1e9;
    s->t0 = c.t0;
    s->req_proc = malloc((size_t)(p->nreq + 1) * sizeof *s->req_proc);
    for (long long i = 0; i < p->nreq; i++) {
        int x = sa_req_info(p, &p->req[i]);
        s->req_proc[i] = x >= 0 ? p->rinfo[x].proc : (p->nproc == 1 ? 0 : -1);
    }
    /* scopes: all; processes when > 1; dp ranks when > 1 distinct */
    int ranks[256], nranks = 0;
    for (int q = 0; q < p->nproc; q++) {
        int r = p->proc[q].dp_rank, seen = 0;
        for (int k = 0; k < nranks; k++)
            seen |= ranks[k] == r;
        if (!seen && r >= 0 && nranks < 256)
            ranks[nranks++] = r;
    }
    int nscopes = 1 + (p->nproc > 1 ? p->nproc : 0) + (nranks > 1 ? nranks : 0);
    s->nw = nscopes * c.count;
    s->w = calloc((size_t)s->nw, sizeof *s->w);
    double **pb = calloc((size_t)p->nproc + 1, sizeof *pb), **pst = calloc((size_t)p->nproc + 1, sizeof *pst);
    s->budget.proc_busy = calloc((size_t)p->nproc + 1, sizeof(double));
    s->budget.proc_stalled = calloc((size_t)p->nproc + 1, sizeof(double));
    double tb = 0, ts = 0;
    for (int q = 0; q < p->nproc; q++) {
        pb[q] = calloc((size_t)c.count, sizeof **pb);
        pst[q] = calloc((size_t)c.count, sizeof **pst);
        proc_budget(&c, q, pb[q], pst[q], &s->budget.proc_busy[q], &s->budget.proc_stalled[q]);
        tb += s->budget.proc_busy[q];
        ts += s->budget.proc_stalled[q];
    }
    double total = (double)span / 1e9 * (p->nproc ? p->nproc : 1);
    s->budget.busy = total > 0 ? fmin(1, tb / total) : 0;
    s->budget.stalled = total > 0 ? fmin(1 - s->budget.busy, ts / total) : 0;
    s->budget.idle = fmax(0, 1 - s->budget.busy - s->budget.stalled);
    int at = 0;
    fill_scope(&c, s->w, 0, -1);
    budget_scope(&c, s->w, 0, -1, pb, pst);
    at += c.count;
    if (p->nproc > 1)
        for (int q = 0; q < p->nproc; q++, at += c.count) {
            fill_scope(&c, s->w + at, 1, q);
            budget_scope(&c, s->w + at, 1, q, pb, pst);
        }
    if (nranks > 1)
        for (int k = 0; k < nranks; k++, at += c.count) {
            fill_scope(&c, s->w + at, 2, ranks[k]);
            budget_scope(&c, s->w + at, 2, ranks[k], pb, pst);
        }
    for (int q = 0; q < p->nproc; q++) {
        free(pb[q]);
        free(pst[q]);
    }
    free(pb);
    free(pst);
}

void sa_series_free(sa_series *s)
{
    free(s->w);
    free(s->req_proc);
    free(s->budget.proc_busy);
    free(s->budget.proc_stalled);
    memset(s, 0, sizeof *s);
}

sa_stepagg sa_steps_agg(const sa_profile *p, int kind)
{
    const sa_steps *ss = &p->steps[p->src];
    sa_stepagg g = {0};
    double *dur = malloc((size_t)(ss->n + 1) * sizeof *dur);
    double bs = 0, tok = 0;
    long long ntok = 0, n = 0;
    for (long long i = 0; i < ss->n; i++) {
        if (ss->v[i].kind != kind)
            continue;
        dur[n++] = (double)(ss->v[i].end - ss->v[i].start) / 1e6;
        bs += ss->v[i].bs;
        if (!isnan(ss->v[i].tokens)) {
            tok += ss->v[i].tokens;
            ntok++;
        }
    }
    sa_pct d = sa_pct_of(dur, n);
    free(dur);
    g.count = n;
    g.bs_mean = n ? bs / (double)n : NAN;
    g.tok_mean = ntok ? tok / (double)ntok : NAN;
    g.ms_mean = d.mean;
    g.ms_p90 = d.p90;
    return g;
}
