/* decode_params.c: a decode's settings, their defaults filled and every
 * field validated in one place (mt_check_decode_params), before a sequence
 * starts.  The error names the field at fault.
 */
#include "model/mt_internal.h"

#include <math.h>

mt_decode_params mt_decode_default_params(void)
{
    return (mt_decode_params){.beam_size = 0, .max_length = 0, .length_penalty = 1.0f, .n_best = 1,
                              .repetition_penalty = 1.0f, .temperature = 1.0f, .top_p = 1.0f, .align_layer = -1};
}

/* The decoding features' part of mt_check_decode_params (q: resolved beam and max_length). */
static mt_status check_features(const mt_session *s, mt_decode_params *q, mt_err *err)
{
    const mt_model *m = s->m;
    if (q->n_prefix < 0 || (q->n_prefix > 0 && !q->prefix))
        return mt_err_set(err, MT_ERR_INPUT, "target prefix: %d ids without an array", q->n_prefix);
    if (q->n_prefix > q->max_length - 2)
        return mt_err_set(err, MT_ERR_INPUT, "target prefix has %d tokens; max_length %d leaves room for %d",
                          q->n_prefix, q->max_length, q->max_length - 2);
    for (int i = 0; i < q->n_prefix; i++)
        if (q->prefix[i] < 0 || q->prefix[i] >= m->V || q->prefix[i] == m->info.pad_id ||
            q->prefix[i] == m->info.eos_id)
            return mt_err_set(err, MT_ERR_INPUT, "target prefix: id %d is outside the vocabulary, pad or </s>",
                              (int)q->prefix[i]);
    if (q->min_length < 0 || q->min_length > q->max_length)
        return mt_err_set(err, MT_ERR_INPUT, "min_length %d outside [0, max_length %d]", q->min_length,
                          q->max_length);
    if (q->repetition_penalty == 0.0f)
        q->repetition_penalty = 1.0f;
    if (!(q->repetition_penalty > 0.0f) || !isfinite(q->repetition_penalty))
        return mt_err_set(err, MT_ERR_INPUT, "repetition_penalty must be a finite number > 0");
    if (q->no_repeat_ngram_size < 0)
        return mt_err_set(err, MT_ERR_INPUT, "no_repeat_ngram_size %d is negative", q->no_repeat_ngram_size);
    if (q->temperature == 0.0f)
        q->temperature = 1.0f;
    if (q->top_p == 0.0f)
        q->top_p = 1.0f;
    if (q->sample) {
        if (q->beam_size != 1)
            return mt_err_set(err, MT_ERR_INPUT, "sampling decodes one row: beam_size must be 1, not %d",
                              q->beam_size);
        if (!(q->temperature > 0.0f) || !isfinite(q->temperature))
            return mt_err_set(err, MT_ERR_INPUT, "temperature must be a finite number > 0");
        if (q->top_k < 0)
            return mt_err_set(err, MT_ERR_INPUT, "top_k %d is negative", q->top_k);
        if (!(q->top_p > 0.0f && q->top_p <= 1.0f))
            return mt_err_set(err, MT_ERR_INPUT, "top_p must be in (0, 1]");
    }
    if (q->alignments) {
        int L = m->info.dec_layers, H = m->dec_heads;
        if (q->align_layer < 0)
            q->align_layer += L;
        if (q->align_layer < 0 || q->align_layer >= L)
            return mt_err_set(err, MT_ERR_INPUT, "alignment layer outside [-%d, %d]", L, L - 1);
        if (q->align_heads == 0)
            q->align_heads = H;
        if (q->align_heads < 1 || q->align_heads > H)
            return mt_err_set(err, MT_ERR_INPUT, "alignment heads %d outside [0, %d]", q->align_heads, H);
    }
    return MT_OK;
}

mt_status mt_check_decode_params(const mt_session *s, const mt_decode_params *p, mt_decode_params *out,
                                 mt_err *err)
{
    const mt_model_info *info = &s->m->info;
    mt_decode_params q = p ? *p : mt_decode_default_params();
    if (q.beam_size == 0)
        q.beam_size = info->default_beam < MT_MAX_BEAM ? info->default_beam : MT_MAX_BEAM;
    if (q.beam_size < 1 || q.beam_size > MT_MAX_BEAM)
        return mt_err_set(err, MT_ERR_INPUT, "beam_size %d outside [1, %d]", q.beam_size, MT_MAX_BEAM);
    if (q.beam_size > s->p.max_batch)
        return mt_err_set(err, MT_ERR_INPUT, "beam_size %d exceeds the session's max_batch %d", q.beam_size,
                          s->p.max_batch);
    if (q.n_best == 0)
        q.n_best = 1;
    if (q.n_best < 1 || q.n_best > q.beam_size)
        return mt_err_set(err, MT_ERR_INPUT, "n_best %d outside [1, beam_size %d]", q.n_best, q.beam_size);
    if (q.max_length == 0)
        q.max_length = info->default_max_length < s->p.max_tgt_len ? info->default_max_length : s->p.max_tgt_len;
    if (q.max_length < 2 || q.max_length > s->p.max_tgt_len)
        return mt_err_set(err, MT_ERR_INPUT, "max_length %d outside [2, %d] (the session's max_tgt_len)",
                          q.max_length, s->p.max_tgt_len);
    if (!isfinite(q.length_penalty))
        return mt_err_set(err, MT_ERR_INPUT, "length_penalty is not finite");
    mt_status st = check_features(s, &q, err);
    if (st != MT_OK)
        return st;
    *out = q;
    return MT_OK;
}
