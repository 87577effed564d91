/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.c — the tiny decoder's forward pass (see model.h).
 *
 * Architecture (a small Llama-like block, without rotary embeddings):
 *   x = embed[token] + sinusoid(pos)
 *   per layer: h = rmsnorm(x); q,k,v = h Wq, h Wk, h Wv; store k,v in the
 *              sequence's KV blocks; causal multi-head attention over all
 *              positions 0..pos read back through the block table;
 *              x += attn Wo; h = rmsnorm(x); x += silu(h W1) W2
 *   logits = rmsnorm(x_last) embed^T (tied); next token = argmax.
 * With --moe the feed-forward of every layer is a mixture of experts run on
 * expert-parallel rank threads (moe.c) instead of the one SiLU MLP.
 *
 * Design. Weights are uniform in +-1/sqrt(fan_in), drawn from a splitmix64
 * stream of the seed, so every run with one seed computes the same tokens.
 * Matrices are row-major [in][out] and products run i-p-j so the inner loop
 * is a contiguous axpy the compiler vectorizes. The KV memory of layer l,
 * block b, slot s is a d_model vector at ((l*num_blocks + b)*block_size + s)
 * in two arrays (K and V). Scratch buffers are sized once for the step's
 * token budget: the forward pass allocates nothing. The forward runs
 * layer by layer over the whole batch, item i's rows at offset base_i of
 * the scratch buffers: attention per item, the feed-forward over all rows
 * at once (a MoE layer needs the step's tokens together). Every product is
 * row by row, so a row's values do not depend on its batch.
 */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct layer {
    float *wq, *wk, *wv, *wo; /* [d][d] */
    float *w1;                /* [d][ff] */
    float *w2;                /* [ff][d] */
    float *g1, *g2;           /* rmsnorm gains [d] */
} layer;

struct tl_model {
    tl_model_cfg c;
    float *embed;   /* [vocab][d] */
    float *pos;     /* [max_pos][d] sinusoids */
    float *gf;      /* final norm gain [d] */
    layer *L;
    float *kcache, *vcache;
    /* scratch, [max_tokens][...] */
    float *x, *h, *q, *k, *v, *att, *ff, *scores, *logits;
    int *base;      /* [max_tokens] row offset of each item this forward; -1 skipped */
    uint64_t weight_bytes, kv_bytes;
    tl_moe *moe;    /* NULL: dense feed-forward */
    long long step;
};

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float *rand_matrix(tl_model *m, uint64_t *s, size_t rows, size_t cols, float scale)
{
    float *w = malloc(rows * cols * sizeof *w);
    if (!w)
        return NULL;
    for (size_t i = 0; i < rows * cols; i++)
        w[i] = scale * (float)((double)(splitmix(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    m->weight_bytes += rows * cols * sizeof *w;
    return w;
}

static float *ones(tl_model *m, size_t n)
{
    float *w = malloc(n * sizeof *w);
    if (w)
        for (size_t i = 0; i < n; i++)
            w[i] = 1.0f;
    m->weight_bytes += n * sizeof(float);
    return w;
}

static int cfg_ok(const tl_model_cfg *c)
{
    if (c->vocab < 2 || c->d_model < 4 || c->n_heads < 1 || c->d_model % c->n_heads ||
        c->n_layers < 1 || c->d_ff < 1 || c->max_pos < 1 || c->num_blocks < 1 ||
        c->block_size < 1 || c->max_tokens < 1) {
        fprintf(stderr, "tiny-llm-server: bad model sizes (d_model must be a multiple of heads, all > 0)\n");
        return 0;
    }
    return 1;
}

tl_model *tl_model_new(const tl_model_cfg *cfg)
{
    if (!cfg_ok(cfg))
        return NULL;
    tl_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->c = *cfg;
    size_t d = (size_t)cfg->d_model, ff = (size_t)cfg->d_ff, T = (size_t)cfg->max_tokens;
    uint64_t s = cfg->seed;
    int ok = 1;
    m->embed = rand_matrix(m, &s, (size_t)cfg->vocab, d, 1.0f);
    m->gf = ones(m, d);
    m->L = calloc((size_t)cfg->n_layers, sizeof *m->L);
    ok = m->embed && m->gf && m->L;
    for (int l = 0; ok && l < cfg->n_layers; l++) {
        layer *y = &m->L[l];
        float sd = 1.0f / sqrtf((float)d), sf = 1.0f / sqrtf((float)ff);
        y->wq = rand_matrix(m, &s, d, d, sd);
        y->wk = rand_matrix(m, &s, d, d, sd);
        y->wv = rand_matrix(m, &s, d, d, sd);
        y->wo = rand_matrix(m, &s, d, d, sd);
        y->w1 = rand_matrix(m, &s, d, ff, sd);
        y->w2 = rand_matrix(m, &s, ff, d, sf);
        y->g1 = ones(m, d);
        y->g2 = ones(m, d);
        ok = y->wq && y->wk && y->wv && y->wo && y->w1 && y->w2 && y->g1 && y->g2;
    }
    size_t kv_floats = (size_t)cfg->n_layers * cfg->num_blocks * cfg->block_size * d;
    m->kv_bytes = 2 * kv_floats * sizeof(float);
    m->kcache = ok ? calloc(kv_floats, sizeof(float)) : NULL;
    m->vcache = ok ? calloc(kv_floats, sizeof(float)) : NULL;
    m->pos = malloc((size_t)cfg->max_pos * d * sizeof(float));
    m->x = malloc(T * d * sizeof(float));
    m->h = malloc(T * d * sizeof(float));
    m->q = malloc(T * d * sizeof(float));
    m->k = malloc(T * d * sizeof(float));
    m->v = malloc(T * d * sizeof(float));
    m->att = malloc(T * d * sizeof(float));
    m->ff = malloc(T * ff * sizeof(float));
    m->scores = malloc((size_t)cfg->max_pos * sizeof(float));
    m->logits = malloc((size_t)cfg->vocab * sizeof(float));
    m->base = malloc(T * sizeof(int));
    if (ok && cfg->moe.n_experts > 0) {
        m->moe = tl_moe_new(&cfg->moe, cfg->d_model, cfg->d_ff, cfg->n_layers, cfg->max_tokens, cfg->seed,
                            &m->weight_bytes);
        if (!m->moe) {
            tl_model_free(m);
            return NULL;
        }
    }
    if (!ok || !m->base || !m->kcache || !m->vcache || !m->pos || !m->x || !m->h || !m->q || !m->k ||
        !m->v || !m->att || !m->ff || !m->scores || !m->logits) {
        fprintf(stderr, "tiny-llm-server: out of memory for the model (%llu bytes of KV cache)\n",
                (unsigned long long)m->kv_bytes);
        tl_model_free(m);
        return NULL;
    }
    for (int p = 0; p < cfg->max_pos; p++)
        for (size_t i = 0; i < d; i += 2) {
            double f = pow(10000.0, -(double)i / (double)d);
            m->pos[p * d + i] = (float)sin(p * f);
            if (i + 1 < d)
                m->pos[p * d + i + 1] = (float)cos(p * f);
        }
    return m;
}

void tl_model_free(tl_model *m)
{
    if (!m)
        return;
    for (int l = 0; m->L && l < m->c.n_layers; l++) {
        layer *y = &m->L[l];
        free(y->wq); free(y->wk); free(y->wv); free(y->wo);
        free(y->w1); free(y->w2); free(y->g1); free(y->g2);
    }
    free(m->L);
    free(m->embed); free(m->gf); free(m->pos);
    free(m->kcache); free(m->vcache);
    free(m->x); free(m->h); free(m->q); free(m->k); free(m->v);
    free(m->att); free(m->ff); free(m->scores); free(m->logits);
    free(m->base);
    tl_moe_free(m->moe);
    free(m);
}

uint64_t tl_model_weight_bytes(const tl_model *m) { return m->weight_bytes; }
uint64_t tl_model_kv_bytes(const tl_model *m) { return m->kv_bytes; }

void tl_model_set_step(tl_model *m, long long step) { m->step = step; }

/* out[n][k] = in[n][d] W[d][k] (+ out when accumulate). */
static void matmul(float *restrict out, const float *restrict in, const float *restrict W,
                   int n, int d, int k, int accumulate)
{
    for (int i = 0; i < n; i++) {
        float *o = out + (size_t)i * k;
        if (!accumulate)
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

static void rmsnorm(float *out, const float *in, const float *g, int n, int d)
{
    for (int i = 0; i < n; i++) {
        const float *a = in + (size_t)i * d;
        float ss = 0;
        for (int j = 0; j < d; j++)
            ss += a[j] * a[j];
        float r = 1.0f / sqrtf(ss / (float)d + 1e-5f);
        for (int j = 0; j < d; j++)
            out[(size_t)i * d + j] = a[j] * r * g[j];
    }
}

static size_t kv_index(const tl_model *m, int l, int block, int slot)
{
    return (((size_t)l * m->c.num_blocks + (size_t)block) * m->c.block_size + (size_t)slot) *
           (size_t)m->c.d_model;
}

/* Causal attention of the item's n queries (q) over positions 0..pos0+i, into att. */
static void attention(tl_model *m, int l, const tl_fwd_item *it, const float *q, float *att)
{
    const int d = m->c.d_model, H = m->c.n_heads, hd = d / H, bs = m->c.block_size;
    const float scale = 1.0f / sqrtf((float)hd);
    for (int i = 0; i < it->n; i++) {
        const int p = it->pos0 + i;
        const float *qi = q + (size_t)i * d;
        float *oi = att + (size_t)i * d;
        memset(oi, 0, (size_t)d * sizeof *oi);
        for (int h = 0; h < H; h++) {
            float mx = -INFINITY;
            for (int j = 0; j <= p; j++) {
                const float *kj = m->kcache + kv_index(m, l, it->block_table[j / bs], j % bs) + h * hd;
                float s = 0;
                for (int e = 0; e < hd; e++)
                    s += qi[h * hd + e] * kj[e];
                s *= scale;
                m->scores[j] = s;
                if (s > mx)
                    mx = s;
            }
            float sum = 0;
            for (int j = 0; j <= p; j++) {
                m->scores[j] = expf(m->scores[j] - mx);
                sum += m->scores[j];
            }
            for (int j = 0; j <= p; j++) {
                const float *vj = m->vcache + kv_index(m, l, it->block_table[j / bs], j % bs) + h * hd;
                const float a = m->scores[j] / sum;
                for (int e = 0; e < hd; e++)
                    oi[h * hd + e] += a * vj[e];
            }
        }
    }
}

/* The attention half of layer l for one item, its rows at offset b. */
static void attend_item(tl_model *m, int l, const tl_fwd_item *it, int b)
{
    const int d = m->c.d_model, n = it->n, bs = m->c.block_size;
    const layer *y = &m->L[l];
    float *x = m->x + (size_t)b * d, *h = m->h + (size_t)b * d, *q = m->q + (size_t)b * d;
    float *k = m->k + (size_t)b * d, *v = m->v + (size_t)b * d, *att = m->att + (size_t)b * d;
    rmsnorm(h, x, y->g1, n, d);
    matmul(q, h, y->wq, n, d, d, 0);
    matmul(k, h, y->wk, n, d, d, 0);
    matmul(v, h, y->wv, n, d, d, 0);
    for (int i = 0; i < n; i++) {
        int p = it->pos0 + i;
        size_t at = kv_index(m, l, it->block_table[p / bs], p % bs);
        memcpy(m->kcache + at, k + (size_t)i * d, (size_t)d * sizeof(float));
        memcpy(m->vcache + at, v + (size_t)i * d, (size_t)d * sizeof(float));
    }
    attention(m, l, it, q, att);
    matmul(x, att, y->wo, n, d, d, 1);
}

/* The feed-forward half of layer l over all N rows of the batch. */
static void feed_forward(tl_model *m, int l, int N)
{
    const int d = m->c.d_model, ff = m->c.d_ff;
    const layer *y = &m->L[l];
    rmsnorm(m->h, m->x, y->g2, N, d);
    if (m->moe) {
        tl_moe_ffn(m->moe, l, m->step, m->h, m->x, N);
        return;
    }
    matmul(m->ff, m->h, y->w1, N, d, ff, 0);
    for (size_t i = 0; i < (size_t)N * ff; i++)
        m->ff[i] = m->ff[i] / (1.0f + expf(-m->ff[i])); /* silu */
    matmul(m->x, m->ff, y->w2, N, ff, d, 1);
}

static void sample(tl_model *m, tl_fwd_item *it, int b)
{
    const int d = m->c.d_model;
    /* Logits of the last position only: the tied embedding, row by row. */
    rmsnorm(m->h, m->x + (size_t)(b + it->n - 1) * d, m->gf, 1, d);
    int best = 0;
    float bestv = -INFINITY;
    for (int t = 0; t < m->c.vocab; t++) {
        const float *e = m->embed + (size_t)t * d;
        float s = 0;
        for (int j = 0; j < d; j++)
            s += m->h[j] * e[j];
        m->logits[t] = s;
        if (s > bestv) {
            bestv = s;
            best = t;
        }
    }
    it->next = best;
}

void tl_model_forward(tl_model *m, tl_fwd_item *items, int n_items)
{
    const int d = m->c.d_model;
    int N = 0;
    for (int i = 0; i < n_items; i++) {
        tl_fwd_item *it = &items[i];
        m->base[i < m->c.max_tokens ? i : 0] = -1;
        if (i >= m->c.max_tokens || it->n < 1 || N + it->n > m->c.max_tokens || it->pos0 < 0 ||
            it->pos0 + it->n > m->c.max_pos) {
            fprintf(stderr, "tiny-llm-server: model: bad forward item (pos0 %d, n %d) skipped\n",
                    it->pos0, it->n);
            it->next = 0;
            continue;
        }
        m->base[i] = N;
        for (int j = 0; j < it->n; j++) {
            const float *e = m->embed + (size_t)it->tokens[j] * d;
            const float *pe = m->pos + (size_t)(it->pos0 + j) * d;
            for (int c = 0; c < d; c++)
                m->x[(size_t)(N + j) * d + c] = e[c] + pe[c];
        }
        N += it->n;
    }
    if (!N)
        return;
    for (int l = 0; l < m->c.n_layers; l++) {
        for (int i = 0; i < n_items && i < m->c.max_tokens; i++)
            if (m->base[i] >= 0)
                attend_item(m, l, &items[i], m->base[i]);
        feed_forward(m, l, N);
    }
    for (int i = 0; i < n_items && i < m->c.max_tokens; i++)
        if (m->base[i] >= 0 && items[i].want_token)
            sample(m, &items[i], m->base[i]);
}

size_t tl_model_block_bytes(const tl_model *m)
{
    return 2 * (size_t)m->c.n_layers * (size_t)m->c.block_size * (size_t)m->c.d_model * sizeof(float);
}

void tl_model_block_read(const tl_model *m, int block, void *buf)
{
    size_t per = (size_t)m->c.block_size * (size_t)m->c.d_model * sizeof(float);
    char *o = buf;
    for (int l = 0; l < m->c.n_layers; l++, o += per)
        memcpy(o, m->kcache + kv_index(m, l, block, 0), per);
    for (int l = 0; l < m->c.n_layers; l++, o += per)
        memcpy(o, m->vcache + kv_index(m, l, block, 0), per);
}

void tl_model_block_write(tl_model *m, int block, const void *buf)
{
    size_t per = (size_t)m->c.block_size * (size_t)m->c.d_model * sizeof(float);
    const char *i = buf;
    for (int l = 0; l < m->c.n_layers; l++, i += per)
        memcpy(m->kcache + kv_index(m, l, block, 0), i, per);
    for (int l = 0; l < m->c.n_layers; l++, i += per)
        memcpy(m->vcache + kv_index(m, l, block, 0), i, per);
}
