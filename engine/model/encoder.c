/* encoder.c: the encoder stack over sources, then their cross-attention K/V.
 *
 * Sources are packed as rows, without padding (several sources admitted
 * together are one batch: mt_encode_sources): projections and FFN are single
 * products over all rows, attention sees exactly each source's own keys.
 * That is the padded-batch computation with the padding removed, so a source
 * gives the same result alone or inside any batch.
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

const float *mt_block_in(mt_session *s, const mt_ln *ln, int n)
{
    if (!s->m->prenorm)
        return s->x;
    size_t bytes = sizeof(float) * (size_t)n * (size_t)s->m->d;
    memcpy(s->h, s->x, bytes);
    mt_k_add_layernorm(s->h, NULL, n, s->m->d, ln->g, ln->b);       /* LN(x + nothing): LN(x)'s bits */
    return s->h;
}

void mt_block_out(mt_session *s, const mt_ln *ln, int n)
{
    int d = s->m->d;
    if (!s->m->prenorm) {
        mt_k_add_layernorm(s->x, s->h, n, d, ln->g, ln->b);
        return;
    }
    float *x = s->x;
    const float *h = s->h;
    for (long i = 0, e = (long)n * d; i < e; i++)     /* the residual: x + block(LN(x)) */
        x[i] += h[i];
}

/* One encoder layer over x [N][d], the rows of k sources packed one after
 * another (source j at rows row0[j] .. + len[j]): the products run over all
 * N rows at once, the attention over each source's own rows.  Marian's
 * blocks are post-LN, M2M-100's pre-LN (mt_block_in, mt_block_out). */
static void encoder_layer(mt_session *s, const mt_enc_layer *l, int N, int k, const int *row0, const int *len,
                          float *cap)
{
    const mt_model *m = s->m;
    int d = m->d;
    mt_lin_apply(s->q8, &l->qkv, mt_block_in(s, &l->attn_ln, N), N, s->qkv, MT_ACT_NONE);  /* [N][3d] */
    for (int j = 0; j < k; j++) {
        const float *q = s->qkv + (long)row0[j] * 3 * d;
        mt_attend(s, q, 3 * d, len[j], q + d, q + 2 * d, 3 * d, len[j], m->enc_heads, 0,
                  s->ctx + (long)row0[j] * d, d, cap);
    }
    mt_lin_apply(s->q8, &l->out, s->ctx, N, s->h, MT_ACT_NONE);
    mt_block_out(s, &l->attn_ln, N);
    mt_lin_apply(s->q8, &l->fc1, mt_block_in(s, &l->ffn_ln, N), N, s->ffn, m->act);          /* [N][F] */
    mt_lin_apply(s->q8, &l->fc2, s->ffn, N, s->h, MT_ACT_NONE);
    mt_block_out(s, &l->ffn_ln, N);
}

/* k sources as one batch (sum of lengths <= rows_max), each then holding its
 * cross K/V at cross offset off[j].  Rows are independent in every product and
 * norm and the attention sees one source's keys, so a source's K/V are the same
 * bits as when it is encoded alone; the batch reads each weight once for all. */
static void encode_packed(mt_session *s, int k, const int32_t *const *src, const int *len, const int *off,
                          float *cap_enc)
{
    const mt_model *m = s->m;
    int d = m->d, H = m->enc_heads, N = 0, row0[MT_ENC_MAX_PACK];
    long cross_rows = (long)s->p.max_batch * s->p.max_src_len;
    for (int j = 0; j < k; j++) {
        row0[j] = N;
        mt_embed_tokens(m, 0, src[j], len[j], 0, s->x + (long)N * d);
        N += len[j];
    }
    for (int l = 0; l < m->info.enc_layers; l++)
        encoder_layer(s, &m->enc[l], N, k, row0, len, cap_enc ? cap_enc + (long)l * H * N * N : NULL);
    if (m->prenorm)                                 /* M2M-100: the encoder's closing LayerNorm */
        mt_k_add_layernorm(s->x, NULL, N, d, m->enc_final_ln.g, m->enc_final_ln.b);
    /* Cross K/V once per source, for every decoder layer: [N][2d] = k | v, then
     * each source's rows to its place in the cache. */
    int direct = k == 1 && !s->p.kv_f16;            /* straight into the cache, no copy */
    for (int l = 0; l < m->info.dec_layers; l++) {
        float *kv = direct ? (float *)s->kv.cross + ((long)l * cross_rows + off[0]) * 2 * d : s->qkv;
        mt_lin_apply(s->q8, &m->dec[l].cross_kv, s->x, N, kv, MT_ACT_NONE);
        for (int j = 0; !direct && j < k; j++)
            mt_kv_put(s, s->kv.cross, ((long)l * cross_rows + off[j]) * 2 * d, kv + (long)row0[j] * 2 * d,
                      (long)len[j] * 2 * d);
    }
}

void mt_encode_source(mt_session *s, const int32_t *src, int n, int off, float *cap_enc)
{
    encode_packed(s, 1, &src, &n, &off, cap_enc);
}

void mt_encode_sources(mt_session *s, int k, const int32_t *const *src, const int *len, const int *off)
{
    encode_packed(s, k, src, len, off, NULL);
}
