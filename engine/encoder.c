/* encoder.c: the encoder stack over one source, then its cross-attention K/V.
 *
 * Sources are encoded one at a time (n rows, no padding): projections and FFN
 * are single products over the n rows, attention sees exactly the source's
 * own keys.  That is the padded-batch computation with the padding removed,
 * so a source gives the same result alone or inside any batch.
 */
#include "mt_internal.h"

#include <string.h>

/* x[i] = E[id_i] * embed_scale + PE[pos0 + i]  ([n][d]); E in F32 or F16. */
static void embed(const mt_model *m, const float *E, const uint16_t *E16, const int32_t *ids, int n, int pos0,
                  float *x)
{
    int d = m->d;
    for (int i = 0; i < n; i++) {
        const float *p = mt_pos_row(m, pos0 + i);
        float *xi = x + (long)i * d;
        if (E16) {
            const uint16_t *e = E16 + (long)ids[i] * d;
            for (int j = 0; j < d; j++)
                xi[j] = mt_f16_to_f32(e[j]) * m->embed_scale + p[j];
        } else {
            const float *e = E + (long)ids[i] * d;
            for (int j = 0; j < d; j++)
                xi[j] = e[j] * m->embed_scale + p[j];
        }
    }
}

void mt_embed_tokens(const mt_model *m, int decoder, const int32_t *ids, int n, int pos0, float *x)
{
    if (decoder)
        embed(m, m->dec_emb, m->dec_emb16, ids, n, pos0, x);
    else
        embed(m, m->enc_emb, m->enc_emb16, ids, n, pos0, x);
    if (m->emb_ln) {                /* normalize_embedding: LN(x + 0), the BART-era layernorm_embedding */
        const mt_ln *ln = decoder ? &m->dec_emb_ln : &m->enc_emb_ln;
        mt_k_add_layernorm(x, NULL, n, m->d, ln->g, ln->b);
    }
}

/* One post-LN encoder layer over x [n][d]. */
static void encoder_layer(mt_session *s, const mt_enc_layer *l, int n, float *cap)
{
    const mt_model *m = s->m;
    int d = m->d;
    mt_lin_apply(s->q8, &l->qkv, s->x, n, s->qkv, MT_ACT_NONE);                              /* [n][3d] */
    mt_attend(s, s->qkv, 3 * d, n, s->qkv + d, s->qkv + 2 * d, 3 * d, n, m->enc_heads, 0, s->ctx, d, cap);
    mt_lin_apply(s->q8, &l->out, s->ctx, n, s->h, MT_ACT_NONE);
    mt_k_add_layernorm(s->x, s->h, n, d, l->attn_ln.g, l->attn_ln.b);
    mt_lin_apply(s->q8, &l->fc1, s->x, n, s->ffn, m->act);                                   /* [n][F] */
    mt_lin_apply(s->q8, &l->fc2, s->ffn, n, s->h, MT_ACT_NONE);
    mt_k_add_layernorm(s->x, s->h, n, d, l->ffn_ln.g, l->ffn_ln.b);
}

void mt_encode_source(mt_session *s, const int32_t *src, int n, int off, float *cap_enc)
{
    const mt_model *m = s->m;
    int d = m->d, H = m->enc_heads;
    long cross_rows = (long)s->p.max_batch * s->p.max_src_len;
    mt_embed_tokens(m, 0, src, n, 0, s->x);
    for (int l = 0; l < m->info.enc_layers; l++)
        encoder_layer(s, &m->enc[l], n, cap_enc ? cap_enc + (long)l * H * n * n : NULL);
    /* Cross K/V once per source, for every decoder layer: [n][2d] = k | v. */
    for (int l = 0; l < m->info.dec_layers; l++)
        mt_lin_apply(s->q8, &m->dec[l].cross_kv, s->x, n, s->cross_kv + ((long)l * cross_rows + off) * 2 * d,
                     MT_ACT_NONE);
}
