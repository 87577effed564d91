/* SPDX-License-Identifier: Apache-2.0 */
/*
 * moe.c — the mixture-of-experts feed-forward with expert parallelism (see
 * moe.h): router, dispatch, grouped expert GEMMs, combine.
 *
 * Why threads for the ranks. A real expert-parallel server runs one process
 * per device and an all-to-all between them. Here the ranks are threads of
 * the server process: the experts of different ranks really compute at the
 * same time (on different cores), dispatch and combine really move rows
 * between the ranks' own buffers, and the combine is a real barrier
 * (pthread_barrier_t) that no rank passes before the slowest has finished
 * its experts — which is the thing the profile must show. Processes would
 * add shared-memory plumbing and nothing the profile can see; one process
 * also keeps one profile store, the ranks telling themselves apart by their
 * `rank` attribute and their thread (a timeline lane each).
 *
 * Per layer (tl_moe_ffn, on the engine thread): the router scores every
 * token against the E experts (h Wr, plus hot_bias for --moe-skew's
 * experts), keeps the top k (ties: the lower expert) and weights them by a
 * softmax over the kept scores. Then the `start` barrier lets the R ranks
 * go; rank r:
 *   dispatch  gathers the rows of h routed to each of its experts into its
 *             own input buffer, expert by expert (an all-to-all's send side);
 *             slot_row[i*K+s] = where token i's s-th choice landed
 *             (written only by the rank owning that expert: no race);
 *   compute   per local expert j with c_j rows: silu(in W1_j) W2_j into its
 *             output buffer (a grouped GEMM: one GEMM per expert);
 *   combine   waits at the `mid` barrier (every rank's outputs are ready),
 *             then for its share of the tokens (rows r*n/R .. (r+1)*n/R)
 *             adds each choice's weighted output, in choice order, into x.
 * The `done` barrier (R ranks + the caller) ends the layer. Each rank then
 * records its three spans and its clock line, outside the measured times.
 * A token's result depends on its own row only (matmuls are row by row,
 * the sum in choice order), so batching never changes the tokens.
 *
 * Ownership: the job fields (layer, step, h, x, n, sel, wt) are written by
 * the caller before `start` and only read by the ranks until `done`; a
 * rank's buffers and counts are its own.
 */
#include "moe.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instrument.h"
#include "servprof.h"

typedef struct rank_state {
    struct tl_moe *m;
    int r;
    pthread_t th;
    float *in, *mid, *out;        /* [max_tokens*K][d], [..][ff], [..][d] */
    int count[TL_MOE_MAX_EXPERTS]; /* rows per local expert, this layer */
    int first[TL_MOE_MAX_EXPERTS]; /* first row of local expert j */
    int64_t t[4];                 /* dispatch start, compute start, combine start, combine end */
    long long step;               /* the job's step and layer, copied: the caller moves on after `done` */
    int layer;
} rank_state;

struct tl_moe {
    tl_moe_cfg c;
    int d, ff, L, T, E, K, R, per;  /* per: experts per rank */
    float *wr;                      /* [L][d][E] routers */
    float *w1, *w2;                 /* [L][E][d][ff], [L][E][ff][d] */
    float bias[TL_MOE_MAX_EXPERTS]; /* router bias (the skew) */
    /* the job: written by the caller before `start`, read by ranks until `done` */
    int layer;
    long long step;
    const float *h;
    float *x;
    int n;
    int *sel;                       /* [T][K] chosen experts */
    float *wt;                      /* [T][K] their weights */
    int *slot_row;                  /* [T][K] row of the choice in its rank's out buffer */
    float *scores;                  /* [E] router scratch (caller) */
    int quit;
    pthread_barrier_t start, mid, done;
    rank_state *rs;
    int nstarted;
    FILE *clock;                    /* --moe-clock; lines written under clock_mu */
    pthread_mutex_t clock_mu;
};

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float *rand_floats(uint64_t *s, size_t n, float scale)
{
    float *w = malloc(n * sizeof *w);
    if (w)
        for (size_t i = 0; i < n; i++)
            w[i] = scale * (float)((double)(splitmix(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    return w;
}

static int parse_list(const char *s, int *out, int max, const char *what)
{
    int n = 0;
    const char *p = s;
    while (*p && *p != '@') {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 0 || v >= TL_MOE_MAX_EXPERTS || n == max) {
            fprintf(stderr, "tiny-llm-server: %s: cannot read '%s' (want up to %d integers 0..%d, comma-separated)\n",
                    what, s, max, TL_MOE_MAX_EXPERTS - 1);
            return -1;
        }
        out[n++] = (int)v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p && *p != '@') {
            fprintf(stderr, "tiny-llm-server: %s: unexpected '%c' in '%s'\n", what, *p, s);
            return -1;
        }
    }
    return n;
}

int tl_moe_parse(const char *s, tl_moe_cfg *c)
{
    int v[3];
    if (parse_list(s, v, 3, "--moe") != 3 || strchr(s, '@')) {
        fprintf(stderr, "tiny-llm-server: --moe wants E,K,R (experts, top-k, expert-parallel ranks), got '%s'\n", s);
        return -1;
    }
    c->n_experts = v[0];
    c->top_k = v[1];
    c->ep_ranks = v[2];
    if (c->n_experts < 1 || c->top_k < 1 || c->top_k > c->n_experts || c->ep_ranks < 1 ||
        c->ep_ranks > TL_MOE_MAX_RANKS || c->n_experts % c->ep_ranks) {
        fprintf(stderr, "tiny-llm-server: --moe %s: need 1 <= K <= E, 1 <= R <= %d and E a multiple of R\n", s,
                TL_MOE_MAX_RANKS);
        return -1;
    }
    return 0;
}

int tl_moe_parse_skew(const char *s, tl_moe_cfg *c)
{
    int n = parse_list(s, c->hot, TL_MOE_MAX_HOT, "--moe-skew");
    if (n < 0)
        return -1;
    c->n_hot = n;
    c->hot_bias = 3.0f;
    const char *at = strchr(s, '@');
    if (at) {
        char *end;
        errno = 0;
        double b = strtod(at + 1, &end);
        if (errno || end == at + 1 || *end || !(b >= 0 && b <= 100)) {
            fprintf(stderr, "tiny-llm-server: --moe-skew: the bias after '@' must be a number 0..100, got '%s'\n",
                    at + 1);
            return -1;
        }
        c->hot_bias = (float)b;
    }
    return 0;
}

/* out[n][k] = in[n][d] W[d][k] (row by row: a row's result is its own). */
static void matmul(float *restrict out, const float *restrict in, const float *restrict W, int n, int d, int k)
{
    for (int i = 0; i < n; i++) {
        float *o = out + (size_t)i * k;
        memset(o, 0, (size_t)k * sizeof *o);
        const float *a = in + (size_t)i * d;
        for (int p = 0; p < d; p++) {
            const float ap = a[p];
            const float *w = W + (size_t)p * k;
            for (int j = 0; j < k; j++)
                o[j] += ap * w[j];
        }
    }
}

static void dispatch(tl_moe *m, rank_state *rs)
{
    const int K = m->K, d = m->d;
    int row = 0;
    for (int j = 0; j < m->per; j++) {
        int g = rs->r * m->per + j;
        rs->first[j] = row;
        for (int i = 0; i < m->n; i++)
            for (int s = 0; s < K; s++)
                if (m->sel[i * K + s] == g) {
                    memcpy(rs->in + (size_t)row * d, m->h + (size_t)i * d, (size_t)d * sizeof(float));
                    m->slot_row[i * K + s] = row++;
                }
        rs->count[j] = row - rs->first[j];
    }
}

static void compute(tl_moe *m, rank_state *rs)
{
    const int d = m->d, ff = m->ff;
    for (int j = 0; j < m->per; j++) {
        int c = rs->count[j], g = rs->r * m->per + j;
        if (!c)
            continue;
        const float *w1 = m->w1 + ((size_t)m->layer * m->E + g) * d * ff;
        const float *w2 = m->w2 + ((size_t)m->layer * m->E + g) * ff * d;
        float *mid = rs->mid + (size_t)rs->first[j] * ff;
        matmul(mid, rs->in + (size_t)rs->first[j] * d, w1, c, d, ff);
        for (size_t i = 0; i < (size_t)c * ff; i++)
            mid[i] = mid[i] / (1.0f + expf(-mid[i])); /* silu */
        matmul(rs->out + (size_t)rs->first[j] * d, mid, w2, c, ff, d);
    }
}

static void combine(tl_moe *m, rank_state *rs)
{
    const int K = m->K, d = m->d;
    int lo = (int)((long long)m->n * rs->r / m->R), hi = (int)((long long)m->n * (rs->r + 1) / m->R);
    for (int i = lo; i < hi; i++) {
        float *xi = m->x + (size_t)i * d;
        for (int s = 0; s < K; s++) {
            int g = m->sel[i * K + s];
            const float *o = m->rs[g / m->per].out + (size_t)m->slot_row[i * K + s] * d;
            const float w = m->wt[i * K + s];
            for (int e = 0; e < d; e++)
                xi[e] += w * o[e];
        }
    }
}

static void report(tl_moe *m, rank_state *rs)
{
    int64_t ids[TL_MOE_MAX_EXPERTS], tok[TL_MOE_MAX_EXPERTS];
    int rows = 0;
    for (int j = 0; j < m->per; j++) {
        ids[j] = rs->r * m->per + j;
        tok[j] = rs->count[j];
        rows += rs->count[j];
    }
    ins_moe_rank(rs->step, rs->layer, rs->r, rs->t, rows, ids, tok, m->per);
    if (m->clock) {
        pthread_mutex_lock(&m->clock_mu);
        fprintf(m->clock, "%lld %d %d %lld %lld %lld %d\n", rs->step, rs->layer, rs->r,
                (long long)(rs->t[1] - rs->t[0]), (long long)(rs->t[2] - rs->t[1]),
                (long long)(rs->t[3] - rs->t[2]), rows);
        pthread_mutex_unlock(&m->clock_mu);
    }
}

static void *rank_main(void *arg)
{
    rank_state *rs = arg;
    tl_moe *m = rs->m;
    char name[32];
    snprintf(name, sizeof name, "ep rank %d", rs->r);
    servprof_set_thread_name(name);
    snprintf(name, sizeof name, "tl-ep%d", rs->r);
    pthread_setname_np(pthread_self(), name);
    for (;;) {
        pthread_barrier_wait(&m->start);
        if (m->quit)
            return NULL;
        rs->step = m->step;
        rs->layer = m->layer;
        rs->t[0] = servprof_now_ns();
        dispatch(m, rs);
        rs->t[1] = servprof_now_ns();
        compute(m, rs);
        rs->t[2] = servprof_now_ns();
        pthread_barrier_wait(&m->mid); /* the combine waits for the slowest rank */
        combine(m, rs);
        rs->t[3] = servprof_now_ns();
        pthread_barrier_wait(&m->done);
        report(m, rs);
    }
}

tl_moe *tl_moe_new(const tl_moe_cfg *c, int d_model, int d_ff, int n_layers, int max_tokens, uint64_t seed,
                   uint64_t *weight_bytes)
{
    if (c->n_experts < 1 || c->n_experts > TL_MOE_MAX_EXPERTS || c->top_k < 1 || c->top_k > c->n_experts ||
        c->ep_ranks < 1 || c->ep_ranks > TL_MOE_MAX_RANKS || c->n_experts % c->ep_ranks) {
        fprintf(stderr, "tiny-llm-server: bad MoE sizes (E %d, K %d, R %d)\n", c->n_experts, c->top_k, c->ep_ranks);
        return NULL;
    }
    for (int i = 0; i < c->n_hot; i++)
        if (c->hot[i] >= c->n_experts) {
            fprintf(stderr, "tiny-llm-server: --moe-skew names expert %d, but there are %d (0..%d)\n", c->hot[i],
                    c->n_experts, c->n_experts - 1);
            return NULL;
        }
    tl_moe *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->c = *c;
    m->d = d_model, m->ff = d_ff, m->L = n_layers, m->T = max_tokens;
    m->E = c->n_experts, m->K = c->top_k, m->R = c->ep_ranks, m->per = m->E / m->R;
    for (int i = 0; i < c->n_hot; i++)
        m->bias[c->hot[i]] = c->hot_bias;
    uint64_t s = seed ^ 0x6d6f652d65787065ull; /* "moe-expe": a stream apart from the dense weights */
    size_t d = (size_t)d_model, ff = (size_t)d_ff, E = (size_t)m->E, L = (size_t)n_layers;
    m->wr = rand_floats(&s, L * d * E, 1.0f / sqrtf((float)d));
    m->w1 = rand_floats(&s, L * E * d * ff, 1.0f / sqrtf((float)d));
    m->w2 = rand_floats(&s, L * E * ff * d, 1.0f / sqrtf((float)ff));
    *weight_bytes += (L * d * E + 2 * L * E * d * ff) * sizeof(float);
    size_t TK = (size_t)max_tokens * (size_t)m->K;
    m->sel = malloc(TK * sizeof *m->sel);
    m->wt = malloc(TK * sizeof *m->wt);
    m->slot_row = malloc(TK * sizeof *m->slot_row);
    m->scores = malloc(E * sizeof *m->scores);
    m->rs = calloc((size_t)m->R, sizeof *m->rs);
    int ok = m->wr && m->w1 && m->w2 && m->sel && m->wt && m->slot_row && m->scores && m->rs;
    for (int r = 0; ok && r < m->R; r++) {
        rank_state *rs = &m->rs[r];
        rs->m = m;
        rs->r = r;
        /* a rank may receive every token's every choice (all hot on it) */
        rs->in = malloc(TK * d * sizeof(float));
        rs->mid = malloc(TK * ff * sizeof(float));
        rs->out = malloc(TK * d * sizeof(float));
        ok = rs->in && rs->mid && rs->out;
    }
    if (ok && c->clock_path) {
        m->clock = fopen(c->clock_path, "w");
        if (!m->clock) {
            fprintf(stderr, "tiny-llm-server: --moe-clock %s: %s\n", c->clock_path, strerror(errno));
            ok = 0;
        } else {
            setvbuf(m->clock, NULL, _IOLBF, 0); /* a line per rank-layer, readable while serving */
            fprintf(m->clock, "# step layer rank dispatch_ns compute_ns combine_ns rows\n");
        }
    }
    pthread_mutex_init(&m->clock_mu, NULL);
    pthread_barrier_init(&m->start, NULL, (unsigned)m->R + 1);
    pthread_barrier_init(&m->mid, NULL, (unsigned)m->R);
    pthread_barrier_init(&m->done, NULL, (unsigned)m->R + 1);
    if (!ok) {
        fprintf(stderr, "tiny-llm-server: cannot set up the MoE layers\n");
        tl_moe_free(m);
        return NULL;
    }
    for (int r = 0; r < m->R; r++) {
        if (pthread_create(&m->rs[r].th, NULL, rank_main, &m->rs[r])) {
            fprintf(stderr, "tiny-llm-server: cannot start expert-parallel rank %d\n", r);
            tl_moe_free(m);
            return NULL;
        }
        m->nstarted++;
    }
    return m;
}

void tl_moe_free(tl_moe *m)
{
    if (!m)
        return;
    if (m->nstarted == m->R) {
        m->quit = 1;
        pthread_barrier_wait(&m->start);
        for (int r = 0; r < m->R; r++)
            pthread_join(m->rs[r].th, NULL);
    } else if (m->nstarted) {
        /* a rank failed to start: the start barrier can never fill; cancel the started ones */
        for (int r = 0; r < m->nstarted; r++) {
            pthread_cancel(m->rs[r].th);
            pthread_join(m->rs[r].th, NULL);
        }
    }
    pthread_barrier_destroy(&m->start);
    pthread_barrier_destroy(&m->mid);
    pthread_barrier_destroy(&m->done);
    pthread_mutex_destroy(&m->clock_mu);
    if (m->clock)
        fclose(m->clock);
    for (int r = 0; m->rs && r < m->R; r++) {
        free(m->rs[r].in);
        free(m->rs[r].mid);
        free(m->rs[r].out);
    }
    free(m->rs);
    free(m->wr); free(m->w1); free(m->w2);
    free(m->sel); free(m->wt); free(m->slot_row); free(m->scores);
    free(m);
}

/* Token i's top-k experts by router score (ties: the lower expert) and
 * their softmax weights. The score is a small projection of the row
 * (h Wr / 4) plus a Gumbel term seeded by a hash of the row's bits and the
 * layer (hash routing, as in "Hash Layers for Large Sparse Models"), plus
 * the skew's bias. Why the hash: a random-weight router is not balanced
 * (the rows share a direction, the positions' slow sinusoids, so a few
 * experts win everywhere); a trained one is, by its balance loss. The hash
 * gives that balance by construction and stays a function of the row
 * alone, so equal prompts still give equal tokens. */
static void route(tl_moe *m, const float *hi, int *sel, float *wt)
{
    const int E = m->E, K = m->K, d = m->d;
    const float *wr = m->wr + (size_t)m->layer * d * E;
    uint64_t hash = 0xcbf29ce484222325ull ^ (uint64_t)m->layer;
    for (int p = 0; p < d; p++) {
        uint32_t bits;
        memcpy(&bits, &hi[p], sizeof bits);
        hash = (hash ^ bits) * 0x100000001b3ull;
    }
    for (int e = 0; e < E; e++) {
        uint64_t st = hash ^ (uint64_t)e * 0x9e3779b97f4a7c15ull;
        double u = ((double)(splitmix(&st) >> 11) + 0.5) * 0x1.0p-53;
        m->scores[e] = m->bias[e] + (float)(-log(-log(u)));
    }
    for (int p = 0; p < d; p++) {
        const float a = 0.25f * hi[p];
        const float *w = wr + (size_t)p * E;
        for (int e = 0; e < E; e++)
            m->scores[e] += a * w[e];
    }
    for (int s = 0; s < K; s++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int q = 0; q < s; q++)
                taken |= sel[q] == e;
            if (!taken && (best < 0 || m->scores[e] > m->scores[best]))
                best = e;
        }
        sel[s] = best;
    }
    float mx = m->scores[sel[0]], sum = 0;
    for (int s = 0; s < K; s++)
        sum += wt[s] = expf(m->scores[sel[s]] - mx);
    for (int s = 0; s < K; s++)
        wt[s] /= sum;
}

void tl_moe_ffn(tl_moe *m, int layer, long long step, const float *h, float *x, int n)
{
    if (n <= 0)
        return;
    m->layer = layer;
    m->step = step;
    m->h = h;
    m->x = x;
    m->n = n > m->T ? m->T : n;
    for (int i = 0; i < m->n; i++)
        route(m, h + (size_t)i * m->d, m->sel + i * m->K, m->wt + i * m->K);
    pthread_barrier_wait(&m->start);
    pthread_barrier_wait(&m->done);
}
