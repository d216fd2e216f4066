/* llm.c: the decoder-only network (Llama / Qwen2 / Qwen3 / Gemma 3; HF
 * modeling_llama, modeling_qwen2, modeling_qwen3, modeling_gemma3), on the
 * kernels the Marian network uses.
 *
 * A layer, pre-norm:
 *   h = RMSNorm(x) * ln_in;  q|k|v = h [Wq;Wk;Wv]^T (+ Qwen2's biases)
 *   Qwen3: q, k = RMSNorm per head (over head_dim) * q_norm / k_norm
 *   RoPE on q and k at the absolute position (HF rotate_half: pairs (i, i + hd/2))
 *   grouped-query attention: query head h reads K/V head h / (H / KV), causal
 *   x += ctx Wo^T;  h = RMSNorm(x) * ln_post;  x += down(silu(gate(h)) * up(h))
 * then logits = (RMSNorm(x) * norm) lm_head^T (tied: the embedding table).
 *
 * Gemma 3 (modeling_gemma3.Gemma3DecoderLayer), the same skeleton with:
 *   x = embedding * sqrt(hidden) (emb_scale); every RMSNorm weight is 1 + w (held so);
 *   q, k = RMSNorm per head * q_norm / k_norm before RoPE (as Qwen3);
 *   scores * query_pre_attn_scalar^-0.5 (attn_scale);
 *   x += RMSNorm(ctx Wo^T) * post_attention_layernorm   (attn_out)
 *   x += RMSNorm(down(gelu_tanh(gate(h)) * up(h))) * post_feedforward_layernorm
 *        with h = RMSNorm(x) * pre_feedforward_layernorm (ln_post);
 *   sliding_attention layers: a query at p sees keys p - window < k <= p and
 *   rotates with rope_local_base_freq; full_attention layers see every earlier
 *   key and rotate with rope_theta, inv_freq / rope_scaling's linear factor;
 *   logits = cap * tanh(logits / cap) when final_logit_softcapping is set.
 * A sliding layer's cache keeps every position (the mask, not the cache, is
 * the window's).
 *
 * The K/V cache: s->kv.self [layer][slot][max_src_len + max_tgt_len][2 kvd],
 * position p of a slot holding k | v of that position, k already rotated;
 * F32, or F16 with kv_f16 (mt_kv_put).  A sequence's prompt of P ids is
 * prefilled (mt_llm_prefill: positions 0..P-2, every row of every prompt
 * started together in one product per projection, attention per prompt with
 * its causal mask); its first decoder step feeds the last prompt id at
 * position P-1 and yields the first generated token's logits, each further
 * step one more position (mt_llm_step: all rows of all sequences in one
 * product, attention per row over its own slot).  Rows are independent in
 * every product and norm, so a sequence's results do not depend on the rows
 * decoded beside it.  Nothing here allocates.
 */
#include "mt_internal.h"
#include "kernels/parallel.h"

#include <math.h>
#include <string.h>

static long slot_len(const mt_session *s) { return (long)s->p.max_src_len + s->p.max_tgt_len; }

/* Slot `slot`'s cache row at position pos of layer li, in the cache's precision. */
static char *kv_row(const mt_session *s, int li, int slot, long pos)
{
    const mt_llm *n = s->m->llm;
    long row = 2L * n->kvd;
    return (char *)s->kv.self + (((long)li * s->p.max_batch + slot) * slot_len(s) + pos) * row * (long)mt_kv_bytes(s);
}

/* The RoPE tables: [global, then (Gemma 3) local][S + T][hd / 2]. */
int mt_llm_rope_tables(const mt_llm *n) { return n->theta_local > 0 ? 2 : 1; }

void mt_llm_rope_init(mt_session *s)
{
    const mt_llm *n = s->m->llm;
    int half = n->hd / 2;
    for (int t = 0; t < mt_llm_rope_tables(n); t++) {
        double theta = t ? n->theta_local : n->theta, factor = t ? 1.0 : n->rope_factor;
        float *cs = s->rope_cos + (long)t * slot_len(s) * half, *sn = s->rope_sin + (long)t * slot_len(s) * half;
        for (long p = 0; p < slot_len(s); p++)
            for (int i = 0; i < half; i++) {
                /* HF: inv_freq = 1 / theta^(2i / hd) (linear rope_scaling: / factor); the angle
                 * in double, rounded once */
                double a = (double)p / pow(theta, (2.0 * i) / n->hd) / factor;
                cs[p * half + i] = (float)cos(a);
                sn[p * half + i] = (float)sin(a);
            }
    }
}

/* The first key position a query at pos sees in layer l (a sliding layer's window). */
static long first_key(const mt_llm *n, const mt_llm_layer *l, long pos)
{
    return l->local && n->window && pos >= n->window ? pos - n->window + 1 : 0;
}

/* One row of q|k|v [qd + 2 kvd] at position pos: Qwen3's per-head norms, then
 * RoPE on every q and k head (v is left as it is). */
static void rotate_row(const mt_session *s, const mt_llm_layer *l, float *qkv, long pos)
{
    const mt_llm *n = s->m->llm;
    int hd = n->hd, half = hd / 2;
    long at = ((l->local ? slot_len(s) : 0) + pos) * half;          /* a sliding layer's local table */
    const float *c = s->rope_cos + at, *sn = s->rope_sin + at;
    for (int h = 0; h < n->H + n->KV; h++) {
        float *x = qkv + (long)h * hd;            /* q heads, then k heads (contiguous) */
        if (l->q_norm)
            mt_k_rmsnorm(x, 1, hd, h < n->H ? l->q_norm : l->k_norm, n->eps, x);
        for (int i = 0; i < half; i++) {
            float x1 = x[i], x2 = x[i + half];
            x[i] = x1 * c[i] - x2 * sn[i];
            x[i + half] = x2 * c[i] + x1 * sn[i];
        }
    }
}

static void add(float *x, const float *h, long n)
{
    for (long i = 0; i < n; i++)
        x[i] += h[i];
}

static void embed(const mt_model *m, const int32_t *ids, int n, float *x)
{
    const mt_llm *l = m->llm;
    int d = l->d;
    for (int i = 0; i < n; i++) {
        float *xi = x + (long)i * d;
        if (l->emb16) {
            const uint16_t *e = l->emb16 + (long)ids[i] * d;
            for (int j = 0; j < d; j++)
                xi[j] = mt_f16_to_f32(e[j]);
        } else {
            memcpy(xi, l->emb + (long)ids[i] * d, sizeof(float) * (size_t)d);
        }
        for (int j = 0; l->emb_scale != 1.0f && j < d; j++)      /* Gemma 3: * sqrt(hidden) */
            xi[j] *= l->emb_scale;
    }
}

/* final_logit_softcapping: cap * tanh(logit / cap) (HF, in float). */
static void softcap(const mt_llm *n, float *logits, long count)
{
    for (long i = 0; n->final_cap > 0 && i < count; i++)
        logits[i] = n->final_cap * tanhf(logits[i] / n->final_cap);
}

/* The attention half's output s->h (ctx Wo^T) onto the residual: Gemma 3
 * normalizes it first (post_attention_layernorm). */
static void attn_residual(mt_session *s, const mt_llm_layer *l, int N)
{
    const mt_llm *n = s->m->llm;
    if (l->attn_out)
        mt_k_rmsnorm(s->h, N, n->d, l->attn_out, n->eps, s->h);
    add(s->x, s->h, (long)N * n->d);
}


/* The MLP half of a layer over N rows: x += down(silu(gate(h)) * up(h)), h = RMSNorm(x)
 * (Gemma 3: gelu_tanh for silu, the output normalized before the residual). */
static void mlp(mt_session *s, const mt_llm_layer *l, int N)
{
    const mt_llm *n = s->m->llm;
    mt_k_rmsnorm(s->x, N, n->d, l->ln_post, n->eps, s->h);
    mt_lin_apply(s->q8, &l->gate_up, s->h, N, s->ffn, MT_ACT_NONE);           /* [N][2F] */
    if (n->geglu)
        mt_k_geglu(s->ffn, N, n->F);                                          /* [N][F] */
    else
        mt_k_swiglu(s->ffn, N, n->F);
    mt_lin_apply(s->q8, &l->down, s->ffn, N, s->h, MT_ACT_NONE);              /* [N][d] */
    if (l->mlp_out)
        mt_k_rmsnorm(s->h, N, n->d, l->mlp_out, n->eps, s->h);
    add(s->x, s->h, (long)N * n->d);
}

/* ---- whole prompts: causal attention within each -------------------------------- */
typedef struct {
    mt_session *s;
    const mt_llm_layer *l;
    const float *qkv;     /* the sequence's first row */
    float *ctx;
    float *cap;           /* NULL, or mt_attention_run's [H][N][N] of this layer */
    int N;
} heads_job;

/* Query head h of one sequence's N rows over its own N keys (K/V head h / G),
 * F32 from the projection (the cache holds the same k, v, maybe in F16). */
static void prompt_head(void *ctx, int h)
{
    const heads_job *j = ctx;
    const mt_session *s = j->s;
    const mt_llm *n = s->m->llm;
    int W = n->qd + 2 * n->kvd, hd = n->hd, g = h / (n->H / n->KV), N = j->N;
    float *sc = s->scores + (long)h * s->rows_max * s->rows_max;             /* [N][N] */
    const float *q = j->qkv + (long)h * hd, *k = j->qkv + n->qd + (long)g * hd, *v = k + n->kvd;
    mt_k_gemm_nt(N, N, hd, n->attn_scale, q, W, k, W, 0.0f, sc, N);
    for (int i = 0; i < N; i++) {                                             /* causal (and the window) */
        long lo = first_key(n, j->l, i);
        memset(sc + (long)i * N, 0, sizeof(float) * (size_t)lo);
        mt_k_softmax(sc + (long)i * N + lo, i + 1 - (int)lo, N - (int)lo);
    }
    if (j->cap)                                                               /* upper triangle 0 */
        memcpy(j->cap + (long)h * N * N, sc, sizeof(float) * (size_t)N * (size_t)N);
    mt_k_gemm_nn(N, hd, N, sc, N, v, W, 0.0f, j->ctx + (long)h * hd, n->qd);
}

/* k sequences of len[j] ids (tok, one after another) from position 0, as one
 * batch of rows (sum of len <= rows_max), each one's rotated K/V into cache
 * slot slot[j]; leaves the last layer's output rows in s->x.  cap (k = 1
 * only, else NULL): every layer's attention probabilities, [L][H][N][N]. */
static void forward_rows(mt_session *s, int k, const int32_t *tok, const int *len, const int *slot, float *cap)
{
    const mt_model *m = s->m;
    const mt_llm *n = m->llm;
    int W = n->qd + 2 * n->kvd, N = 0, row0[MT_ENC_MAX_PACK];
    for (int j = 0; j < k; j++) {
        row0[j] = N;
        N += len[j];
    }
    if (N == 0)
        return;
    embed(m, tok, N, s->x);
    for (int li = 0; li < n->L; li++) {
        const mt_llm_layer *l = &n->layers[li];
        mt_k_rmsnorm(s->x, N, n->d, l->ln_in, n->eps, s->h);
        mt_lin_apply(s->q8, &l->qkv, s->h, N, s->qkv, MT_ACT_NONE);          /* [N][W] */
        for (int j = 0; j < k; j++)
            for (int p = 0; p < len[j]; p++) {
                float *row = s->qkv + (long)(row0[j] + p) * W;
                rotate_row(s, l, row, p);
                mt_kv_put(s, kv_row(s, li, slot[j], p), 0, row + n->qd, 2L * n->kvd);
            }
        for (int j = 0; j < k; j++) {
            if (!len[j])
                continue;
            heads_job hj = {.s = s, .l = l, .qkv = s->qkv + (long)row0[j] * W, .ctx = s->ctx + (long)row0[j] * n->qd,
                            .cap = cap ? cap + (long)li * n->H * N * N : NULL, .N = len[j]};
            mt_par_for(n->H, prompt_head, &hj);
        }
        mt_lin_apply(s->q8, &l->o, s->ctx, N, s->h, MT_ACT_NONE);            /* [N][d] */
        attn_residual(s, l, N);
        mlp(s, l, N);
    }
}

void mt_llm_cache_copy(mt_session *s, int seq, int dst, int src, int cur)
{
    const mt_llm *n = s->m->llm;
    long npos = (long)s->src_len[seq] - 1 + cur;
    size_t bytes = (size_t)npos * 2 * (size_t)n->kvd * mt_kv_bytes(s);
    for (int li = 0; li < n->L; li++)
        memcpy(kv_row(s, li, dst, 0), kv_row(s, li, src, 0), bytes);
}

void mt_llm_prefill(mt_session *s, int k, const int *ids)
{
    int len[MT_ENC_MAX_PACK] = {0}, slot[MT_ENC_MAX_PACK] = {0}, N = 0;
    int32_t *all = s->llm_tok;          /* the prompts' ids but the last, one after another */
    for (int j = 0; j < k; j++) {
        const mt_seq *q = &s->seqs[ids[j]];
        len[j] = s->src_len[ids[j]] - 1;
        slot[j] = s->row.slot[q->base];
        memcpy(all + N, s->src_ids + (long)ids[j] * s->p.max_src_len, sizeof(int32_t) * (size_t)len[j]);
        N += len[j];
    }
    forward_rows(s, k, all, len, slot, NULL);
    for (int j = 0; j < k; j++) {        /* a beam's other rows start from the same prompt */
        const mt_seq *q = &s->seqs[ids[j]];
        for (int b = 1; b < q->beam; b++)
            mt_llm_cache_copy(s, ids[j], s->row.slot[q->base + b], slot[j], 0);
    }
}

/* ---- decode steps: one position per row ------------------------------------------------ */
typedef struct {
    mt_session *s;
    int li, n, per;
    const int *pos, *row_slot, *row_src;
} step_job;

static void step_rows(void *ctx, int c)
{
    const step_job *j = ctx;
    mt_session *s = j->s;
    const mt_llm *n = s->m->llm;
    const mt_llm_layer *l = &n->layers[j->li];
    int W = n->qd + 2 * n->kvd, hd = n->hd, G = n->H / n->KV, hi = (c + 1) * j->per < j->n ? (c + 1) * j->per : j->n;
    float scale = n->attn_scale;
    for (int r = c * j->per; r < hi; r++) {
        long pos = (long)s->src_len[j->row_src[r]] - 1 + j->pos[r];
        float *row = s->qkv + (long)r * W, *out = s->ctx + (long)r * n->qd, *sc = s->scores + (long)r * slot_len(s);
        rotate_row(s, l, row, pos);
        char *kv = kv_row(s, j->li, j->row_slot[r], 0);
        mt_kv_put(s, kv, pos * 2 * n->kvd, row + n->qd, 2L * n->kvd);
        long lo = first_key(n, l, pos), at = lo * 2 * n->kvd;
        int nk = (int)(pos + 1 - lo);
        for (int h = 0; h < n->H; h++) {            /* query head h over K/V head h / G, positions lo..pos */
            long g = h / G;
            if (s->p.kv_f16) {
                const uint16_t *K = (const uint16_t *)kv + at;
                mt_k_attend_row_f16(row + (long)h * hd, K + g * hd, K + n->kvd + g * hd, 2 * n->kvd, nk, 1, hd, scale,
                                    sc, out + (long)h * hd);
            } else {
                const float *K = (const float *)kv + at;
                mt_k_attend_row(row + (long)h * hd, K + g * hd, K + n->kvd + g * hd, 2 * n->kvd, nk, 1, hd, scale, sc,
                                out + (long)h * hd);
            }
        }
    }
}

void mt_llm_step(mt_session *s, int n_rows, const int32_t *tok, const int *pos, const int *row_slot, const int *row_src)
{
    const mt_model *m = s->m;
    const mt_llm *n = m->llm;
    embed(m, tok, n_rows, s->x);
    int chunks = n_rows < 2 * mt_par_threads() ? n_rows : 2 * mt_par_threads();
    step_job j = {.s = s, .n = n_rows, .per = (n_rows + chunks - 1) / chunks, .pos = pos, .row_slot = row_slot,
                  .row_src = row_src};
    for (int li = 0; li < n->L; li++) {
        const mt_llm_layer *l = &n->layers[li];
        mt_k_rmsnorm(s->x, n_rows, n->d, l->ln_in, n->eps, s->h);
        mt_lin_apply(s->q8, &l->qkv, s->h, n_rows, s->qkv, MT_ACT_NONE);
        j.li = li;
        mt_par_for((n_rows + j.per - 1) / j.per, step_rows, &j);
        mt_lin_apply(s->q8, &l->o, s->ctx, n_rows, s->h, MT_ACT_NONE);
        attn_residual(s, l, n_rows);
        mlp(s, l, n_rows);
    }
    mt_k_rmsnorm(s->x, n_rows, n->d, n->norm, n->eps, s->h);
    mt_lm_head(m, s->h, n_rows, s->logits, s->q8);
    softcap(n, s->logits, (long)n_rows * m->V);
}

/* ---- teacher-forced: mt_score ----------------------------------------------------------- */
mt_status mt_llm_score(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt, int tgt_len, float *logp,
                       float *logits, mt_err *err)
{
    const mt_model *m = s->m;
    const mt_llm *n = m->llm;
    int N = src_len + tgt_len - 1, V = n->V, B = s->p.max_batch, slot = 0;
    if (N > s->rows_max || N > slot_len(s))
        return mt_err_set(err, MT_ERR_TOO_LONG, "prompt (%d) and target (%d) exceed the session's %d rows", src_len,
                          tgt_len, s->rows_max);
    int32_t *all = s->llm_tok;
    memcpy(all, src, sizeof(int32_t) * (size_t)src_len);
    memcpy(all + src_len, tgt, sizeof(int32_t) * (size_t)(tgt_len - 1));
    forward_rows(s, 1, all, &N, &slot, NULL);
    /* row P-1+t predicts tgt[t]; logits in chunks of max_batch rows */
    for (int t0 = 0; t0 < tgt_len; t0 += B) {
        int nr = tgt_len - t0 < B ? tgt_len - t0 : B;
        float *rows = logits ? logits + (long)t0 * V : s->logits;
        mt_k_rmsnorm(s->x + (long)(src_len - 1 + t0) * n->d, nr, n->d, n->norm, n->eps, s->h);
        mt_lm_head(m, s->h, nr, rows, s->q8);
        softcap(n, rows, (long)nr * V);
        for (int i = 0; logp && i < nr; i++) {
            const float *r = rows + (long)i * V;
            logp[t0 + i] = (float)((double)r[tgt[t0 + i]] - mt_k_logsumexp_skip(r, V, -1));
        }
    }
    return MT_OK;
}

/* ---- attention capture: mt_attention_run ------------------------------------------------- */
mt_status mt_llm_attention(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt, int tgt_len,
                           float *cap, mt_err *err)
{
    int N = src_len + tgt_len, slot = 0;
    if (N > s->rows_max || N > slot_len(s))
        return mt_err_set(err, MT_ERR_TOO_LONG, "prompt (%d) and target (%d) exceed the session's %d rows", src_len,
                          tgt_len, s->rows_max);
    int32_t *all = s->llm_tok;
    memcpy(all, src, sizeof(int32_t) * (size_t)src_len);
    if (tgt_len)
        memcpy(all + src_len, tgt, sizeof(int32_t) * (size_t)tgt_len);
    forward_rows(s, 1, all, &N, &slot, cap);       /* the same pass as mt_llm_score, one row more */
    return MT_OK;
}
