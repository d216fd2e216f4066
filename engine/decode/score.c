/* score.c: teacher-forced passes (mt_score, mt_score_batch) and attention
 * weights (mt_attention_run): one encoder pass, one decoder pass over all
 * target positions with the causal mask (a decoder-only model: one causal
 * pass over prompt + target, model/llm.c).  mt_score_batch packs several pairs
 * into each pass (sources encoded as one batch, every target position of
 * every pair one row of the decoder's products). */
#include "model/mt_internal.h"

#include <math.h>
#include <stdio.h>
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

/* The log-probs of rows [0, nr) of the logits, row r predicting y[r]. */
static void rows_logp(const mt_model *m, const float *rows, int nr, const int32_t *y, float *logp)
{
    int V = m->V;
    int32_t pad = m->info.pad_id;
    for (int i = 0; i < nr; i++) {
        const float *r = rows + (long)i * V;
        logp[i] = y[i] == pad ? -INFINITY : (float)((double)r[y[i]] - mt_k_logsumexp_skip(r, V, pad));
    }
}

mt_status mt_score(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt, int tgt_len, float *logp,
                   float *logits, mt_err *err)
{
    mt_status st;
    if ((st = check_ids("source", src, src_len, s->p.max_src_len, s->m->V_src, err)) != MT_OK ||
        (st = check_ids("target", tgt, tgt_len, s->p.max_tgt_len, s->m->V, err)) != MT_OK)
        return st;
    const mt_model *m = s->m;
    if (m->arch == MT_ARCH_LLM)            /* the prompt, then tgt: model/llm.c */
        return mt_llm_score(s, src, src_len, tgt, tgt_len, logp, logits, err);
    int V = m->V, d = m->d, B = s->p.max_batch;
    int32_t *tgt_in = s->hist.ids;             /* [T]: start + tgt[:-1] */
    tgt_in[0] = m->info.decoder_start_id;
    memcpy(tgt_in + 1, tgt, sizeof(int32_t) * (size_t)(tgt_len - 1));
    encode_one(s, src, src_len, NULL);
    mt_decoder_full(s, tgt_in, tgt_len, NULL);
    /* logits in chunks of max_batch rows so no [T][V] scratch is needed */
    for (int t0 = 0; t0 < tgt_len; t0 += B) {
        int nr = tgt_len - t0 < B ? tgt_len - t0 : B;
        float *rows = logits ? logits + (long)t0 * V : s->logits;
        mt_lm_head(m, s->x + (long)t0 * d, nr, rows, s->q8);
        if (logp)
            rows_logp(m, rows, nr, tgt + t0, logp + t0);
    }
    return MT_OK;
}

/* Pairs [i, i+k) from i on that one pass holds: at most max_batch (source
 * slots) and MT_ENC_MAX_PACK, their target rows within the activations and
 * the decoder-input scratch (hist, [max_batch][max_tgt_len]). */
static int pass_size(const mt_session *s, int i, int n, const int *tgt_len)
{
    long cap = (long)s->p.max_batch * s->p.max_tgt_len, rows = 0;
    if (cap > s->rows_max)
        cap = s->rows_max;
    int k = 0;
    while (i + k < n && k < s->p.max_batch && k < MT_ENC_MAX_PACK && rows + tgt_len[i + k] <= cap)
        rows += tgt_len[i + k++];
    return k;
}

/* Sources [0, k) into slots 0..k-1, encoded in batches of at most rows_max positions. */
static void encode_pass(mt_session *s, int k, const int32_t *const *src, const int *len)
{
    int off[MT_ENC_MAX_PACK], a = 0, rows = 0;
    for (int j = 0; j <= k; j++) {
        if (j == k || rows + len[j] > s->rows_max) {
            mt_encode_sources(s, j - a, src + a, len + a, off + a);
            a = j;
            rows = 0;
        }
        if (j < k) {
            off[j] = s->src_off[j] = j * s->p.max_src_len;
            s->src_len[j] = len[j];
            rows += len[j];
        }
    }
}

mt_status mt_score_batch(mt_session *s, int n, const int32_t *const *src, const int *src_len,
                         const int32_t *const *tgt, const int *tgt_len, float *const *logp, mt_err *err)
{
    if (n < 0 || (n > 0 && (!src || !src_len || !tgt || !tgt_len || !logp)))
        return mt_err_set(err, MT_ERR_INPUT, "mt_score_batch: bad arguments");
    for (int i = 0; i < n; i++) {
        char what[48];
        mt_status st;
        snprintf(what, sizeof what, "pair %d: source", i);
        if ((st = check_ids(what, src[i], src_len[i], s->p.max_src_len, s->m->V_src, err)) != MT_OK)
            return st;
        snprintf(what, sizeof what, "pair %d: target", i);
        if ((st = check_ids(what, tgt[i], tgt_len[i], s->p.max_tgt_len, s->m->V, err)) != MT_OK)
            return st;
    }
    if (s->m->arch == MT_ARCH_LLM) {       /* one pair at a time: a pass per prompt */
        for (int i = 0; i < n; i++) {
            mt_status st = mt_llm_score(s, src[i], src_len[i], tgt[i], tgt_len[i], logp[i], NULL, err);
            if (st != MT_OK)
                return st;
        }
        return MT_OK;
    }
    const mt_model *m = s->m;
    int d = m->d, B = s->p.max_batch, slot[MT_ENC_MAX_PACK];
    for (int i = 0; i < n;) {
        int k = pass_size(s, i, n, tgt_len), N = 0;
        int32_t *tgt_in = s->hist.ids;                           /* [N]: per pair start + tgt[:-1] */
        for (int j = 0; j < k; j++) {
            slot[j] = j;
            tgt_in[N] = m->info.decoder_start_id;
            memcpy(tgt_in + N + 1, tgt[i + j], sizeof(int32_t) * (size_t)(tgt_len[i + j] - 1));
            N += tgt_len[i + j];
        }
        encode_pass(s, k, src + i, src_len + i);
        mt_decoder_full_packed(s, k, tgt_in, tgt_len + i, slot, NULL);
        /* logits in chunks of max_batch rows (s->logits); a chunk may span pairs */
        int j = 0, t = 0;                                    /* the pair and position of row r0 */
        for (int r0 = 0; r0 < N; r0 += B) {
            int nr = N - r0 < B ? N - r0 : B;
            mt_lm_head(m, s->x + (long)r0 * d, nr, s->logits, s->q8);
            for (int r = 0; r < nr;) {
                int take = tgt_len[i + j] - t < nr - r ? tgt_len[i + j] - t : nr - r;
                rows_logp(m, s->logits + (long)r * m->V, take, tgt[i + j] + t, logp[i + j] + t);
                r += take;
                t += take;
                if (t == tgt_len[i + j])
                    j++, t = 0;
            }
        }
        i += k;
    }
    return MT_OK;
}

/* A decoder-only model: one causal pass over the prompt and then tgt (0 or
 * more ids, no start token); out->dec [L][H][N][N], N = src_len + tgt_len
 * (mt.h: src_len = the prompt's length, tgt_len = N). */
static mt_status llm_attention(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt, int tgt_len,
                               mt_attention *out, mt_err *err)
{
    mt_status st;
    if ((st = check_ids("prompt", src, src_len, s->p.max_src_len, s->m->V, err)) != MT_OK)
        return st;
    if (tgt_len < 0 || (tgt_len > 0 && !tgt))
        return mt_err_set(err, MT_ERR_INPUT, "target: bad arguments");
    if (tgt_len > 0 && (st = check_ids("target", tgt, tgt_len, s->p.max_tgt_len, s->m->V, err)) != MT_OK)
        return st;
    const mt_model_info *info = &s->m->info;
    long H = s->m->llm->H, N = (long)src_len + tgt_len, L = info->dec_layers;
    *out = (mt_attention){.dec_layers = (int)L, .heads = (int)H, .src_len = src_len, .tgt_len = (int)N};
    out->dec = malloc(sizeof(float) * (size_t)(L * H * N * N));
    if (!out->dec)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory for attention weights");
    if ((st = mt_llm_attention(s, src, src_len, tgt, tgt_len, out->dec, err)) != MT_OK) {
        mt_attention_free(out);
        memset(out, 0, sizeof *out);
    }
    return st;
}

mt_status mt_attention_run(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt_in, int tgt_len,
                           mt_attention *out, mt_err *err)
{
    mt_status st;
    const mt_model *m = s->m;
    memset(out, 0, sizeof *out);
    if (m->arch == MT_ARCH_LLM)
        return llm_attention(s, src, src_len, tgt_in, tgt_len, out, err);
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
