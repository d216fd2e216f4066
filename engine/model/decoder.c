/* decoder.c: the decoder stack, incremental (one position for n rows, KV
 * cache; rows may be at different positions) and teacher-forced (T positions of one sequence, causal mask).
 *
 * Self-attention cache: s->kv.self [layer][slot][max_tgt_len][2d], position t
 * of slot holds k | v of that position.  Cross K/V: s->kv.cross
 * [layer][max_batch * max_src_len][2d], source i at rows src_off[i].. .
 */
#include "mt_internal.h"
#include "kernels/parallel.h"

#include <math.h>
#include <string.h>

/* A slot's / a source's cache rows [.][2d], in the caches' precision (mt_kv_bytes). */
static char *self_cache(const mt_session *s, int layer, int slot)
{
    long per_slot = (long)s->p.max_tgt_len * 2 * s->m->d;
    return (char *)s->kv.self + ((long)layer * s->p.max_batch + slot) * per_slot * (long)mt_kv_bytes(s);
}

static const char *cross_cache(const mt_session *s, int layer, int src)
{
    long cross_rows = (long)s->p.max_batch * s->p.max_src_len;
    return (const char *)s->kv.cross +
           ((long)layer * cross_rows + s->src_off[src]) * 2 * s->m->d * (long)mt_kv_bytes(s);
}

void mt_lm_head(const mt_model *m, const float *h, int n, float *logits, void *q8)
{
    if (m->lm_pk.i8)
        mt_k_linear_q8(h, n, &m->lm_pk, m->final_bias, logits, MT_ACT_NONE, q8);
    else
        mt_k_linear_packed(h, n, &m->lm_pk, m->final_bias, logits, MT_ACT_NONE);
}

/* The feed-forward block, shared by both paths; x [n][d]. */
static void feed_forward(mt_session *s, const mt_dec_layer *l, int n)
{
    const mt_model *m = s->m;
    mt_lin_apply(s->q8, &l->fc1, mt_block_in(s, &l->ffn_ln, n), n, s->ffn, m->act);   /* [n][F], activation fused */
    mt_lin_apply(s->q8, &l->fc2, s->ffn, n, s->h, MT_ACT_NONE);
    mt_block_out(s, &l->ffn_ln, n);
}

/* M2M-100: the decoder's closing LayerNorm over x [n][d], before the head. */
static void final_norm(mt_session *s, int n)
{
    const mt_model *m = s->m;
    if (m->prenorm)
        mt_k_add_layernorm(s->x, NULL, n, m->d, m->dec_final_ln.g, m->dec_final_ln.b);
}

/* The head average of the first s->step.al_heads[r] heads of gathered row r's
 * cross-attention weights sc [H][nk] at its alignment layer, and its argmax
 * over the source (first wins ties) -> s->step.al[r]: the alignment of the id
 * this step produces (Marian's hard alignment; generate.c records it). */
static void align_capture(mt_session *s, int r, const float *sc, int nk)
{
    int k = s->step.al_heads[r], best = 0;
    float best_w = -1.0f;
    for (int j = 0; j < nk; j++) {
        float w = 0.0f;
        for (int h = 0; h < k; h++)
            w += sc[(long)h * nk + j];
        w /= (float)k;
        if (w > best_w)
            best_w = w, best = j;
    }
    s->step.al[r] = best;
}

/* The attention of a step's rows, spread over the compute pool: each row reads
 * its own caches and writes its own ctx row and scratch. */
typedef struct {
    mt_session *s;
    int li, n, per, cross;
    const int *pos, *row_slot, *row_src;
} attn_job;

static void attn_rows(void *ctx, int c)
{
    const attn_job *j = ctx;
    mt_session *s = j->s;
    int d = s->m->d, H = s->m->dec_heads, L = s->p.max_src_len > s->p.max_tgt_len ? s->p.max_src_len
                                                                                : s->p.max_tgt_len;
    int hi = (c + 1) * j->per < j->n ? (c + 1) * j->per : j->n;
    for (int r = c * j->per; r < hi; r++) {
        float *sc = s->scores + (long)r * H * L, *out = s->ctx + (long)r * d;
        if (j->cross) {
            const char *kv = cross_cache(s, j->li, j->row_src[r]);
            mt_attend_step(s, s->qkv + (long)r * d, kv, s->src_len[j->row_src[r]], H, out, sc);
            if (s->step.al_layer[r] == j->li)          /* the row's alignment layer: sc holds its weights */
                align_capture(s, r, sc, s->src_len[j->row_src[r]]);
        } else {
            /* append this position's k, v, then attend over positions 0..pos[r] */
            char *kv = self_cache(s, j->li, j->row_slot[r]);
            const float *qkv = s->qkv + (long)r * 3 * d;
            mt_kv_put(s, kv, (long)j->pos[r] * 2 * d, qkv + d, 2L * d);
            mt_attend_step(s, qkv, kv, j->pos[r] + 1, H, out, sc);
        }
    }
}

static void step_attention(mt_session *s, int li, int n, int cross, const int *pos, const int *row_slot,
                           const int *row_src)
{
    int chunks = n < 2 * mt_par_threads() ? n : 2 * mt_par_threads();
    attn_job j = {.s = s, .li = li, .n = n, .per = (n + chunks - 1) / chunks, .cross = cross, .pos = pos,
                  .row_slot = row_slot, .row_src = row_src};
    mt_par_for((n + j.per - 1) / j.per, attn_rows, &j);
}

static void step_layer(mt_session *s, int li, int n, const int *pos, const int *row_slot, const int *row_src)
{
    const mt_model *m = s->m;
    const mt_dec_layer *l = &m->dec[li];
    mt_lin_apply(s->q8, &l->self_qkv, mt_block_in(s, &l->self_ln, n), n, s->qkv, MT_ACT_NONE);   /* [n][3d] */
    step_attention(s, li, n, 0, pos, row_slot, row_src);                            /* ctx [n][d] */
    mt_lin_apply(s->q8, &l->self_out, s->ctx, n, s->h, MT_ACT_NONE);
    mt_block_out(s, &l->self_ln, n);
    /* cross-attention over the row's source (K/V computed once per source) */
    mt_lin_apply(s->q8, &l->cross_q, mt_block_in(s, &l->cross_ln, n), n, s->qkv, MT_ACT_NONE);   /* [n][d] */
    step_attention(s, li, n, 1, pos, row_slot, row_src);
    mt_lin_apply(s->q8, &l->cross_out, s->ctx, n, s->h, MT_ACT_NONE);
    mt_block_out(s, &l->cross_ln, n);
    feed_forward(s, l, n);
}

void mt_decoder_step(mt_session *s, int n, const int32_t *tok, const int *pos, const int *row_slot,
                     const int *row_src)
{
    const mt_model *m = s->m;
    int d = m->d;
    if (m->arch == MT_ARCH_LLM) {
        mt_llm_step(s, n, tok, pos, row_slot, row_src);
        return;
    }
    for (int r = 0; r < n; r++)
        mt_embed_tokens(m, 1, tok + r, 1, pos[r], s->x + (long)r * d);
    for (int l = 0; l < m->info.dec_layers; l++)
        step_layer(s, l, n, pos, row_slot, row_src);
    final_norm(s, n);
    mt_lm_head_step(s, n);
}

/* The candidates' head rows packed (in the held precision: the same values
 * the whole head multiplies by) when the union is new (s->sl.fresh; else the
 * rows packed for it at an earlier step), their bias, then [n][C] logits into s->lp
 * (free until the step's rules run), scattered into each row's [V] with -inf
 * outside the row's own set (a row whose search reads its set's ids alone,
 * s->sl.only: only the set's are written).  Else the whole head, masked. */
void mt_lm_head_step(mt_session *s, int n)
{
    const mt_model *m = s->m;
    int V = m->V, C = s->sl.n;
    if (C > 0) {
        if (s->sl.fresh) {
            if (m->lm_head && !m->lm_pk.i8 && !s->p.shortlist_from_packed) {
                mt_k_pack_rows(m->lm_head, m->d, s->sl.ids, C, m->lm_pk.f16, s->sl.pk_data);
                s->sl.pk = (mt_packed){.data = s->sl.pk_data, .in = m->d, .out = C, .f16 = m->lm_pk.f16,
                                      .kc = m->lm_pk.kc};
            } else {
                mt_k_pack_select(&m->lm_pk, s->sl.ids, C, s->sl.pk_data, &s->sl.pk);
            }
            for (int j = 0; j < C; j++)
                s->sl.bias[j] = m->final_bias[s->sl.ids[j]];
            s->sl.pk_valid = 1;
        }
        const mt_packed pk = s->sl.pk;
        if (pk.i8)
            mt_k_linear_q8(s->x, n, &pk, s->sl.bias, s->lp, MT_ACT_NONE, s->q8);
        else
            mt_k_linear_packed(s->x, n, &pk, s->sl.bias, s->lp, MT_ACT_NONE);
        for (int r = 0; r < n; r++) {
            float *lg = s->logits + (long)r * V;
            const float *c = s->lp + (long)r * C;
            for (int v = 0; !s->sl.only[r] && v < V; v++)
                lg[v] = -INFINITY;
            for (int j = 0; j < C; j++)
                if (mt_bit_has(s->sl.row[r], s->sl.ids[j]))
                    lg[s->sl.ids[j]] = c[j];
        }
        return;
    }
    mt_lm_head(m, s->x, n, s->logits, s->q8);
    for (int r = 0; s->sl.mask && r < n; r++) {
        float *lg = s->logits + (long)r * V;
        for (int v = 0; s->sl.row[r] && v < V; v++)
            if (!mt_bit_has(s->sl.row[r], v))
                lg[v] = -INFINITY;
    }
}

void mt_self_cache_copy(mt_session *s, int seq, int dst, int src, int cur)
{
    if (s->m->arch == MT_ARCH_LLM) {
        mt_llm_cache_copy(s, seq, dst, src, cur);
        return;
    }
    size_t bytes = (size_t)cur * 2 * (size_t)s->m->d * mt_kv_bytes(s);
    for (int l = 0; l < s->m->info.dec_layers; l++)
        memcpy(self_cache(s, l, dst), self_cache(s, l, src), bytes);
}

void mt_decoder_full(mt_session *s, const int32_t *tgt_in, int T, mt_capture *cap)
{
    int src = 0;
    mt_decoder_full_packed(s, 1, tgt_in, &T, &src, cap);
}

void mt_decoder_full_packed(mt_session *s, int k, const int32_t *tgt_in, const int *T, const int *src,
                            mt_capture *cap)
{
    const mt_model *m = s->m;
    int d = m->d, H = m->dec_heads, N = 0, row0[MT_ENC_MAX_PACK];
    for (int j = 0; j < k; j++) {                       /* sequence j: rows row0[j] .. + T[j] */
        row0[j] = N;
        mt_embed_tokens(m, 1, tgt_in + N, T[j], 0, s->x + (long)N * d);
        N += T[j];
    }
    for (int li = 0; li < m->info.dec_layers; li++) {
        const mt_dec_layer *l = &m->dec[li];
        /* capture: one sequence only (mt_attention_run) */
        float *cs = cap && cap->dec ? cap->dec + (long)li * H * T[0] * T[0] : NULL;
        float *cc = cap && cap->cross ? cap->cross + (long)li * H * T[0] * s->src_len[src[0]] : NULL;
        mt_lin_apply(s->q8, &l->self_qkv, mt_block_in(s, &l->self_ln, N), N, s->qkv, MT_ACT_NONE);   /* [N][3d] */
        for (int j = 0; j < k; j++) {
            const float *q = s->qkv + (long)row0[j] * 3 * d;
            mt_attend(s, q, 3 * d, T[j], q + d, q + 2 * d, 3 * d, T[j], H, 1, s->ctx + (long)row0[j] * d, d, cs);
        }
        mt_lin_apply(s->q8, &l->self_out, s->ctx, N, s->h, MT_ACT_NONE);
        mt_block_out(s, &l->self_ln, N);
        mt_lin_apply(s->q8, &l->cross_q, mt_block_in(s, &l->cross_ln, N), N, s->qkv, MT_ACT_NONE);  /* [N][d] */
        for (int j = 0; j < k; j++) {
            const float *c = (const float *)cross_cache(s, li, src[j]);
            if (s->p.kv_f16) {                      /* the sgemm path reads F32 */
                mt_k_from_f16((const uint16_t *)c, s->kv.cross_f32, (long)s->src_len[src[j]] * 2 * d);
                c = s->kv.cross_f32;
            }
            mt_attend(s, s->qkv + (long)row0[j] * d, d, T[j], c, c + d, 2 * d, s->src_len[src[j]], H, 0,
                      s->ctx + (long)row0[j] * d, d, cc);
        }
        mt_lin_apply(s->q8, &l->cross_out, s->ctx, N, s->h, MT_ACT_NONE);
        mt_block_out(s, &l->cross_ln, N);
        feed_forward(s, l, N);
    }
    final_norm(s, N);
}
