/* score.c: teacher-forced passes (mt_score) and attention weights
 * (mt_attention_run): one encoder pass, one decoder pass over all target
 * positions with the causal mask. */
#include "mt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static mt_status check_ids(const char *what, const int32_t *ids, int n, int max, int V, mt_err *err)
{
    if (!ids || n < 1)
        return mt_err_set(err, MT_ERR_INPUT, "%s is empty", what);
    if (n > max)
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s has %d tokens; the session limit is %d", what, n, max);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return mt_err_set(err, MT_ERR_INPUT, "%s: token id %d outside the vocabulary", what, (int)ids[i]);
    return MT_OK;
}

static void encode_one(mt_session *s, const int32_t *src, int n, float *cap_enc)
{
    s->src_off[0] = 0;
    s->src_len[0] = n;
    mt_encode_source(s, src, n, 0, cap_enc);
}

mt_status mt_score(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt, int tgt_len, float *logp,
                   float *logits, mt_err *err)
{
    mt_status st;
    if ((st = check_ids("source", src, src_len, s->p.max_src_len, s->m->V_src, err)) != MT_OK ||
        (st = check_ids("target", tgt, tgt_len, s->p.max_tgt_len, s->m->V, err)) != MT_OK)
        return st;
    const mt_model *m = s->m;
    int V = m->V, d = m->d, B = s->p.max_batch;
    int32_t pad = m->info.pad_id, *tgt_in = s->hist;             /* [T]: start + tgt[:-1] */
    tgt_in[0] = m->info.decoder_start_id;
    memcpy(tgt_in + 1, tgt, sizeof(int32_t) * (size_t)(tgt_len - 1));
    encode_one(s, src, src_len, NULL);
    mt_decoder_full(s, tgt_in, tgt_len, NULL);
    /* logits in chunks of max_batch rows so no [T][V] scratch is needed */
    for (int t0 = 0; t0 < tgt_len; t0 += B) {
        int nr = tgt_len - t0 < B ? tgt_len - t0 : B;
        float *rows = logits ? logits + (long)t0 * V : s->logits;
        mt_lm_head(m, s->x + (long)t0 * d, nr, rows, s->q8);
        for (int i = 0; logp && i < nr; i++) {
            int32_t y = tgt[t0 + i];
            const float *r = rows + (long)i * V;
            logp[t0 + i] = y == pad ? -INFINITY : (float)((double)r[y] - mt_k_logsumexp_skip(r, V, pad));
        }
    }
    return MT_OK;
}

mt_status mt_attention_run(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt_in, int tgt_len,
                           mt_attention *out, mt_err *err)
{
    mt_status st;
    const mt_model *m = s->m;
    memset(out, 0, sizeof *out);
    if ((st = check_ids("source", src, src_len, s->p.max_src_len, s->m->V_src, err)) != MT_OK ||
        (st = check_ids("target", tgt_in, tgt_len, s->p.max_tgt_len, s->m->V, err)) != MT_OK)
        return st;
    if (m->enc_heads != m->dec_heads)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "attention capture needs equal encoder/decoder head counts");
    long H = m->enc_heads, S = src_len, T = tgt_len;
    *out = (mt_attention){.enc_layers = m->info.enc_layers, .dec_layers = m->info.dec_layers, .heads = (int)H,
                          .src_len = src_len, .tgt_len = tgt_len};
    out->enc = malloc(sizeof(float) * (size_t)(out->enc_layers * H * S * S));
    out->dec = malloc(sizeof(float) * (size_t)(out->dec_layers * H * T * T));
    out->cross = malloc(sizeof(float) * (size_t)(out->dec_layers * H * T * S));
    if (!out->enc || !out->dec || !out->cross) {
        mt_attention_free(out);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory for attention weights");
    }
    mt_capture cap = {.enc = out->enc, .dec = out->dec, .cross = out->cross};
    encode_one(s, src, src_len, cap.enc);
    mt_decoder_full(s, tgt_in, tgt_len, &cap);
    return MT_OK;
}

void mt_attention_free(mt_attention *a)
{
    if (!a)
        return;
    free(a->enc);
    free(a->dec);
    free(a->cross);
    a->enc = a->dec = a->cross = NULL;
}
