/* decoder.c: the decoder stack, incremental (one position for n rows, KV
 * cache; rows may be at different positions) and teacher-forced (T positions of one sequence, causal mask).
 *
 * Self-attention cache: s->self_kv [layer][slot][max_tgt_len][2d], position t
 * of slot holds k | v of that position.  Cross K/V: s->cross_kv
 * [layer][max_batch * max_src_len][2d], source i at rows src_off[i].. .
 */
#include "mt_internal.h"

#include <string.h>

static float *self_cache(const mt_session *s, int layer, int slot)
{
    long per_slot = (long)s->p.max_tgt_len * 2 * s->m->d;
    return s->self_kv + ((long)layer * s->p.max_batch + slot) * per_slot;
}

static const float *cross_cache(const mt_session *s, int layer, int src)
{
    long cross_rows = (long)s->p.max_batch * s->p.max_src_len;
    return s->cross_kv + ((long)layer * cross_rows + s->src_off[src]) * 2 * s->m->d;
}

void mt_lm_head(const mt_model *m, const float *h, int n, float *logits)
{
    mt_k_linear(h, n, m->d, m->lm_head, m->final_bias, m->V, logits);
}

/* residual + LN after the feed-forward block, shared by both paths; x [n][d]. */
static void feed_forward(mt_session *s, const mt_dec_layer *l, int n)
{
    const mt_model *m = s->m;
    int d = m->d, F = m->dec_ffn;
    mt_k_linear(s->x, n, d, l->fc1.w, l->fc1.b, F, s->ffn);
    mt_k_activation(s->ffn, (long)n * F, m->act);
    mt_k_linear(s->ffn, n, F, l->fc2.w, l->fc2.b, d, s->h);
    mt_k_add_layernorm(s->x, s->h, n, d, l->ffn_ln.g, l->ffn_ln.b);
}

static void step_layer(mt_session *s, int li, int n, const int *pos, const int *row_slot, const int *row_src)
{
    const mt_model *m = s->m;
    const mt_dec_layer *l = &m->dec[li];
    int d = m->d, H = m->dec_heads;
    /* self-attention: append this position's k, v, attend over 0..pos[r] */
    mt_k_linear(s->x, n, d, l->self_qkv.w, l->self_qkv.b, 3 * d, s->qkv);          /* [n][3d] */
    for (int r = 0; r < n; r++) {
        float *c = self_cache(s, li, row_slot[r]);
        const float *qkv = s->qkv + (long)r * 3 * d;
        memcpy(c + (long)pos[r] * 2 * d, qkv + d, sizeof(float) * 2 * (size_t)d);
        mt_attend(s, qkv, 3 * d, 1, c, c + d, 2 * d, pos[r] + 1, H, 0, s->ctx + (long)r * d, d, NULL);
    }
    mt_k_linear(s->ctx, n, d, l->self_out.w, l->self_out.b, d, s->h);
    mt_k_add_layernorm(s->x, s->h, n, d, l->self_ln.g, l->self_ln.b);
    /* cross-attention over the row's source (K/V computed once per source) */
    mt_k_linear(s->x, n, d, l->cross_q.w, l->cross_q.b, d, s->qkv);                   /* [n][d] */
    for (int r = 0; r < n; r++) {
        const float *c = cross_cache(s, li, row_src[r]);
        mt_attend(s, s->qkv + (long)r * d, d, 1, c, c + d, 2 * d, s->src_len[row_src[r]], H, 0,
                  s->ctx + (long)r * d, d, NULL);
    }
    mt_k_linear(s->ctx, n, d, l->cross_out.w, l->cross_out.b, d, s->h);
    mt_k_add_layernorm(s->x, s->h, n, d, l->cross_ln.g, l->cross_ln.b);
    feed_forward(s, l, n);
}

void mt_decoder_step(mt_session *s, int n, const int32_t *tok, const int *pos, const int *row_slot,
                     const int *row_src)
{
    const mt_model *m = s->m;
    int d = m->d;
    for (int r = 0; r < n; r++)
        mt_embed_tokens(m, 1, tok + r, 1, pos[r], s->x + (long)r * d);
    for (int l = 0; l < m->info.dec_layers; l++)
        step_layer(s, l, n, pos, row_slot, row_src);
    mt_lm_head(m, s->x, n, s->logits);
}

void mt_decoder_full(mt_session *s, const int32_t *tgt_in, int T, mt_capture *cap)
{
    const mt_model *m = s->m;
    int d = m->d, H = m->dec_heads, S = s->src_len[0];
    mt_embed_tokens(m, 1, tgt_in, T, 0, s->x);
    for (int li = 0; li < m->info.dec_layers; li++) {
        const mt_dec_layer *l = &m->dec[li];
        float *cs = cap && cap->dec ? cap->dec + (long)li * H * T * T : NULL;
        float *cc = cap && cap->cross ? cap->cross + (long)li * H * T * S : NULL;
        const float *c = cross_cache(s, li, 0);
        mt_k_linear(s->x, T, d, l->self_qkv.w, l->self_qkv.b, 3 * d, s->qkv);
        mt_attend(s, s->qkv, 3 * d, T, s->qkv + d, s->qkv + 2 * d, 3 * d, T, H, 1, s->ctx, d, cs);
        mt_k_linear(s->ctx, T, d, l->self_out.w, l->self_out.b, d, s->h);
        mt_k_add_layernorm(s->x, s->h, T, d, l->self_ln.g, l->self_ln.b);
        mt_k_linear(s->x, T, d, l->cross_q.w, l->cross_q.b, d, s->qkv);
        mt_attend(s, s->qkv, d, T, c, c + d, 2 * d, S, H, 0, s->ctx, d, cc);
        mt_k_linear(s->ctx, T, d, l->cross_out.w, l->cross_out.b, d, s->h);
        mt_k_add_layernorm(s->x, s->h, T, d, l->cross_ln.g, l->cross_ln.b);
        feed_forward(s, l, T);
    }
}
