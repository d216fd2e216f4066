/* translate.c: text in, text out (tokenize, decode as one batch, detokenize). */
#include "mt_internal.h"

#include <stdlib.h>
#include <string.h>

static mt_status tokenize_all(mt_session *s, const char *const *texts, int n, mt_translation *out, mt_err *err)
{
    const mt_tokenizer *tok = s->m->tok;
    int max = s->p.max_src_len;
    for (int i = 0; i < n; i++) {
        if (!texts[i])
            return mt_err_set(err, MT_ERR_INPUT, "text %d is NULL", i);
        out[i].src_ids = malloc(sizeof(int32_t) * (size_t)max);
        if (!out[i].src_ids)
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        int n_ids = 0;
        mt_status st = mt_tokenizer_encode(tok, texts[i], strlen(texts[i]), 0, out[i].src_ids, max, &n_ids, err);
        if (st == MT_ERR_TOO_LONG)
            return mt_err_set(err, MT_ERR_TOO_LONG, "text %d has %d tokens; the limit is %d", i, n_ids, max);
        if (st != MT_OK)
            return st;
        out[i].n_src = n_ids;
    }
    return MT_OK;
}

static mt_status detokenize(mt_session *s, mt_translation *t, mt_hyp *hyps, int n_best, mt_err *err)
{
    t->hyps = hyps;
    t->n_hyps = n_best;
    for (int j = 0; j < n_best; j++) {
        mt_status st = mt_tokenizer_decode(s->m->tok, hyps[j].ids, hyps[j].n_ids, &hyps[j].text, err);
        if (st != MT_OK)
            return st;
    }
    return MT_OK;
}

mt_status mt_translate(mt_session *s, const char *const *texts, int n, const mt_decode_params *params,
                       mt_translation *out, mt_err *err)
{
    mt_decode_params q;
    mt_status st = mt_check_decode_params(s, params, &q, err);
    if (st != MT_OK)
        return st;
    if (n < 0 || (n > 0 && (!texts || !out)))
        return mt_err_set(err, MT_ERR_INPUT, "mt_translate: bad arguments");
    memset(out, 0, sizeof *out * (size_t)n);
    const int32_t **src = calloc((size_t)n + 1, sizeof *src);
    int *len = calloc((size_t)n + 1, sizeof *len);
    mt_hyp *hyps = calloc((size_t)n * (size_t)q.n_best + 1, sizeof *hyps);
    if (!src || !len || !hyps) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((st = tokenize_all(s, texts, n, out, err)) != MT_OK)
        goto out;
    for (int i = 0; i < n; i++) {
        src[i] = out[i].src_ids;
        len[i] = out[i].n_src;
    }
    if ((st = mt_generate(s, src, len, n, &q, hyps, err)) != MT_OK)
        goto out;
    for (int i = 0; i < n && st == MT_OK; i++) {
        mt_hyp *h = malloc(sizeof *h * (size_t)q.n_best);
        if (!h) {
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            break;
        }
        memcpy(h, hyps + (long)i * q.n_best, sizeof *h * (size_t)q.n_best);
        memset(hyps + (long)i * q.n_best, 0, sizeof *h * (size_t)q.n_best);   /* ownership moved */
        st = detokenize(s, &out[i], h, q.n_best, err);
    }
out:
    if (hyps)
        mt_hyps_free(hyps, n * q.n_best);
    free(hyps);
    free(src);
    free(len);
    if (st != MT_OK)
        mt_translation_free(out, n);
    return st;
}

void mt_translation_free(mt_translation *t, int n)
{
    if (!t)
        return;
    for (int i = 0; i < n; i++) {
        free(t[i].src_ids);
        mt_hyps_free(t[i].hyps, t[i].n_hyps);
        free(t[i].hyps);
        memset(&t[i], 0, sizeof t[i]);
    }
}
