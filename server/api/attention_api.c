/* POST /attention  {"text", "target"?, "model"?, "layers"?, "heads"?}
 *
 * A teacher-forced pass over (source, target); without "target", the greedy
 * translation of the source is used.  Target row t is the decoder position fed
 * target_input_ids[t] (the start token, then the target shifted right) and
 * predicting target_ids[t].  Weights are rounded to 6 decimals, so each row
 * sums to 1 within 5e-7 per entry (+ float error):
 *   cross_attention          [layer][head][target][source]
 *   decoder_self_attention   [layer][head][target][target]  (lower-triangular)
 *   encoder_self_attention   [layer][head][source][source]
 * "layers" / "heads" (an integer or a list) select subsets; encoder layers are
 * those of the selection that the encoder has, likewise for the decoder.
 *
 * A decoder-only model: one causal pass over its prompt ("text" through the
 * prompt of "pair", default its first; as given with "raw": true) and the
 * output ("target" as ids, or the greedy translation): self_attention
 * [layer][head][N][N] over N = prompt + output ids fed (the last output id
 * is predicted, never fed), with tokens/token_ids of those N positions and
 * prompt_length.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "http/body.h"
#include "handlers.h"
#include "service/residency.h"
#include "service/languages.h"
#include "service/server.h"
#include "translate/text_ids.h"

#define ROUND_DECIMALS 6
#define MAX_WEIGHTS     (1 << 20)     /* per reply: ~10 MB of JSON */

typedef struct {
    srv_model *m;
    const char *text, *target;
    int raw;                    /* decoder-only: the text as the prompt, no template */
    const char *pair;           /* decoder-only: "en-fr", one of its pairs (NULL: the first) */
    int *layers, n_layers, *heads, n_heads;
    int32_t *src, *tgt;         /* source ids (</s> included), target ids */
    int n_src, n_tgt;
    mt_attention att;
} attn_req;

static void attn_free(attn_req *a)
{
    free(a->layers);
    free(a->heads);
    free(a->src);
    free(a->tgt);
    mt_attention_free(&a->att);
}

static int *all_indices(int n)
{
    int *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    for (int i = 0; v && i < n; i++)
        v[i] = i;
    return v;
}

static int parse(srv_request *req, srv_response *resp, attn_req *a)
{
    const char **texts = NULL;
    int n, is_list;
    if (srv_field_texts(req, resp, "text", &texts, &n, &is_list) < 0)
        return -1;
    a->text = texts[0];
    free(texts);
    if (is_list)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'text' must be a string");
    if (srv_field_string(req, resp, "target", &a->target) < 0 || srv_field_bool(req, resp, "raw", &a->raw) < 0 ||
        srv_field_string(req, resp, "pair", &a->pair) < 0 || !(a->m = srv_request_model(req, resp)))
        return -1;
    if ((a->raw || a->pair) && !a->m->llm)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "fields 'raw' and 'pair' are for decoder-only models; model '%s' "
                        "is an encoder-decoder", a->m->id);
    if (a->target && srv_is_blank(a->target, strlen(a->target)))
        return srv_fail(resp, SRV_E_EMPTY_TEXT, "field 'target' is empty");
    const mt_model_info *info = a->m->info;
    int n_layers = info->enc_layers > info->dec_layers ? info->enc_layers : info->dec_layers;
    int rc1 = srv_field_int_list(req, resp, "layers", 0, n_layers - 1, &a->layers, &a->n_layers);
    int rc2 = rc1 < 0 ? -1 : srv_field_int_list(req, resp, "heads", 0, info->dec_heads - 1, &a->heads,
                                                 &a->n_heads);
    if (rc1 < 0 || rc2 < 0)
        return -1;
    if (rc1 == 0)
        a->layers = all_indices(a->n_layers = n_layers);
    if (rc2 == 0)
        a->heads = all_indices(a->n_heads = info->dec_heads);
    if (!a->layers || !a->heads)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    return 0;
}

/* Greedy translation of the source: its ids become the target. */
static int translate_greedy(attn_req *a, mt_session *s, srv_response *resp)
{
    const int32_t *src[1] = { a->src };
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = 1;
    if (a->m->llm && !a->raw)
        dp.end_ids = a->m->end_ids;     /* the prompt's end of turn / stop string */
    dp.lengths.max_length = a->m->max_length;   /* translation.json's, else (0) the model's */
    mt_hyp hyp = { 0 };
    mt_err err = { 0 };
    if (mt_generate(s, src, &a->n_src, 1, &dp, &hyp, &err) != MT_OK)
        return srv_fail_mt(resp, &err);
    a->tgt = hyp.ids;
    a->n_tgt = hyp.n_ids;
    hyp.ids = NULL;
    mt_hyps_free(&hyp, 1);
    return 0;
}

/* tgt_in = [start, tgt[0 .. n-1)]: position t is fed tgt_in[t] and predicts tgt[t]. */
static int run(srv_request *req, attn_req *a, srv_response *resp)
{
    mt_session *s;
    mt_err get_err = { 0 };
    if (srv_model_acquire(req->srv, a->m, resp))   /* on demand: loads it (this is a worker) */
        return -1;
    if (srv_sessions_get(a->m->sessions, &s, &get_err) != MT_OK) {
        srv_model_release(req->srv, a->m);
        return srv_fail(resp, SRV_E_INTERNAL, "cannot get a session: %s", get_err.msg);
    }
    int rc = 0;
    if (!a->target)
        rc = translate_greedy(a, s, resp);
    int32_t *tgt_in = rc ? NULL : malloc(sizeof *tgt_in * (size_t)(a->n_tgt + 1));
    if (!rc && !tgt_in)
        rc = srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    if (!rc && a->m->llm) {             /* the prompt, then the output but its last id (predicted, never fed) */
        int fed = a->n_tgt > 0 ? a->n_tgt - 1 : 0;
        memcpy(tgt_in, a->tgt, sizeof *tgt_in * (size_t)fed);
        mt_err err = { 0 };
        if (mt_attention_run(s, a->src, a->n_src, tgt_in, fed, &a->att, &err) != MT_OK)
            rc = srv_fail_mt(resp, &err);
    } else if (!rc) {
        tgt_in[0] = a->m->info->decoder_start_id;
        memcpy(tgt_in + 1, a->tgt, sizeof *tgt_in * (size_t)(a->n_tgt > 0 ? a->n_tgt - 1 : 0));
        mt_err err = { 0 };
        if (mt_attention_run(s, a->src, a->n_src, tgt_in, a->n_tgt, &a->att, &err) != MT_OK)
            rc = srv_fail_mt(resp, &err);
    }
    srv_sessions_put(a->m->sessions, s);
    srv_model_release(req->srv, a->m);
    free(tgt_in);
    return rc;
}

/* ---- reply ---------------------------------------------------------------------------- */

static json_t *weight(float w)
{
    double scale = pow(10, ROUND_DECIMALS);
    return json_real(floor((double)w * scale + 0.5) / scale);
}

/* [layer][head][rows][cols] for the selected layers (< n_layers) and heads. */
static json_t *tensor_json(const float *w, int n_layers, int heads, int rows, int cols,
                           const attn_req *a, json_t *used_layers)
{
    json_t *out = json_array();
    for (int li = 0; li < a->n_layers; li++) {
        int l = a->layers[li];
        if (l >= n_layers)
            continue;
        if (used_layers)
            json_array_append_new(used_layers, json_integer(l));
        json_t *lj = json_array();
        for (int hi = 0; hi < a->n_heads; hi++) {
            const float *m = w + ((long)l * heads + a->heads[hi]) * rows * cols;
            json_t *hj = json_array();
            for (int r = 0; r < rows; r++) {
                json_t *row = json_array();
                for (int c = 0; c < cols; c++)
                    json_array_append_new(row, weight(m[(long)r * cols + c]));
                json_array_append_new(hj, row);
            }
            json_array_append_new(lj, hj);
        }
        json_array_append_new(out, lj);
    }
    return out;
}

/* A decoder-only model's positions: the prompt and the output ids fed. */
static int llm_positions(const attn_req *a)
{
    return a->n_src + (a->n_tgt > 0 ? a->n_tgt - 1 : 0);
}

/* Weights the reply would hold; over MAX_WEIGHTS is refused (413). */
static int check_size(const attn_req *a, srv_response *resp)
{
    const mt_attention *t = &a->att;
    long S = t->src_len, T = t->tgt_len, n = 0;
    if (a->m->llm) {                    /* one self-attention over every position */
        S = 0;
        T = llm_positions(a);
    }
    for (int i = 0; i < a->n_layers; i++) {
        if (a->layers[i] < t->dec_layers)
            n += a->n_heads * (T * S + T * T);
        if (a->layers[i] < t->enc_layers)
            n += a->n_heads * S * S;
    }
    if (n > MAX_WEIGHTS)
        return srv_fail(resp, SRV_E_INPUT_TOO_LONG,
                        "the reply would hold %ld weights (limit %d); select fewer layers or heads",
                        n, MAX_WEIGHTS);
    return 0;
}

static json_t *ids_json(const int32_t *ids, int n, const srv_model *m, json_t **pieces)
{
    json_t *list = json_array();
    *pieces = json_array();
    for (int i = 0; i < n; i++) {
        const char *p = mt_tokenizer_piece(m->tok, ids[i]);
        json_array_append_new(list, json_integer(ids[i]));
        json_array_append_new(*pieces, json_string(p ? p : ""));
    }
    return list;
}

/* A decoder-only model: one causal self-attention over prompt + output. */
static json_t *reply_llm_json(const srv_request *req, const attn_req *a)
{
    const mt_attention *t = &a->att;
    int N = llm_positions(a);
    int32_t *ids = malloc(sizeof *ids * (size_t)(N + 1));
    if (!ids)
        return NULL;
    memcpy(ids, a->src, sizeof *ids * (size_t)a->n_src);
    memcpy(ids + a->n_src, a->tgt, sizeof *ids * (size_t)(N - a->n_src));
    json_t *pieces, *layers = json_array(), *heads = json_array(), *out_pieces;
    json_t *list = ids_json(ids, N, a->m, &pieces);
    json_t *out_ids = ids_json(a->tgt, a->n_tgt, a->m, &out_pieces);
    free(ids);
    for (int i = 0; i < a->n_heads; i++)
        json_array_append_new(heads, json_integer(a->heads[i]));
    json_t *self = tensor_json(t->dec, t->dec_layers, t->heads, N, N, a, layers);
    const mt_model_info *info = a->m->info;
    return json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:o,s:o,s:b,s:o,s:o,s:o,s:{s:f,s:i},s:i,s:f}",
                     "model", a->m->id, "architecture", "decoder-only", "model_type", info->architecture,
                     "tokens", pieces, "token_ids", list, "prompt_length", a->n_src,
                     "output_tokens", out_pieces, "output_ids", out_ids, "target_generated", a->target == NULL,
                     "layers", layers, "heads", heads, "self_attention", self,
                     "rope", "theta", info->rope_theta, "head_dim", info->head_dim,
                     "rounding_decimals", ROUND_DECIMALS, "timing_ms", (srv_now() - req->t_start) * 1e3);
}

/* A decoder-only model's prompt ids: the text through its prompt for the
 * pair asked (else its first), or as given with "raw" (or without pairs). */
static int llm_prompt_ids(attn_req *a, srv_response *resp, mt_err *err)
{
    const srv_model *m = a->m;
    if (a->raw || !m->prompt)
        return srv_text_ids(m->tok, a->text, 0, m->sparams.max_src_len, "the text", &a->src, &a->n_src, err);
    int k = 0;
    if (a->pair) {
        for (k = 0; k < m->n_pairs; k++) {
            char name[40];
            snprintf(name, sizeof name, "%s-%s", m->pairs[k][0], m->pairs[k][1]);
            if (!strcmp(name, a->pair))
                break;
        }
        if (k == m->n_pairs)
            return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "model '%s' does not translate the pair '%s' "
                            "(see its pairs in GET /models)", m->id, a->pair);
    }
    int cap = m->sparams.max_src_len, n = 0;
    if (!(a->src = malloc(sizeof *a->src * (size_t)cap)))
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    mt_status st = mt_prompt_encode_codes(m->prompt, srv_lang_name(m->pairs[k][0]), m->pairs[k][0],
                                          srv_lang_name(m->pairs[k][1]), m->pairs[k][1], a->text, strlen(a->text),
                                          a->src, cap, &n, err);
    if (st == MT_ERR_TOO_LONG)
        mt_err_set(err, st, "the text's prompt has %d tokens; the limit is %d", n, cap);
    a->n_src = n;
    return st == MT_OK ? 0 : -1;
}

static json_t *reply_json(const srv_request *req, const attn_req *a)
{
    const mt_attention *t = &a->att;
    json_t *src_pieces, *tgt_pieces, *enc_layers = json_array(), *dec_layers = json_array();
    json_t *src_ids = ids_json(a->src, a->n_src, a->m, &src_pieces);
    json_t *tgt_ids = ids_json(a->tgt, a->n_tgt, a->m, &tgt_pieces);
    json_t *heads = json_array();
    for (int i = 0; i < a->n_heads; i++)
        json_array_append_new(heads, json_integer(a->heads[i]));
    json_t *cross = tensor_json(t->cross, t->dec_layers, t->heads, t->tgt_len, t->src_len, a, dec_layers);
    json_t *dec = tensor_json(t->dec, t->dec_layers, t->heads, t->tgt_len, t->tgt_len, a, NULL);
    json_t *enc = tensor_json(t->enc, t->enc_layers, t->heads, t->src_len, t->src_len, a, enc_layers);
    return json_pack("{s:s,s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:i,s:f}",
                     "model", a->m->id, "source_tokens", src_pieces, "source_ids", src_ids,
                     "target_tokens", tgt_pieces, "target_ids", tgt_ids,
                     "target_generated", a->target == NULL, "heads", heads,
                     "encoder_layers", enc_layers, "decoder_layers", dec_layers,
                     "cross_attention", cross, "decoder_self_attention", dec,
                     "encoder_self_attention", enc, "rounding_decimals", ROUND_DECIMALS,
                     "timing_ms", (srv_now() - req->t_start) * 1e3);
}

void srv_handle_attention(srv_request *req, srv_response *resp)
{
    attn_req a = { 0 };
    mt_err err = { 0 };
    if (parse(req, resp, &a))
        goto done;
    if (a.m->llm) {
        err.status = MT_OK;
        if (llm_prompt_ids(&a, resp, &err)) {
            if (err.status != MT_OK)
                srv_fail_mt(resp, &err);
            goto done;
        }
        if (a.target && srv_text_ids(a.m->tok, a.target, 1, a.m->sparams.max_tgt_len, "the target", &a.tgt,
                                     &a.n_tgt, &err)) {
            srv_fail_mt(resp, &err);
            goto done;
        }
        if (run(req, &a, resp) || check_size(&a, resp))
            goto done;
        srv_reply_json(resp, 200, reply_llm_json(req, &a));
        goto done;
    }
    if (srv_text_ids(a.m->tok, a.text, 0, a.m->sparams.max_src_len, "the text", &a.src, &a.n_src, &err) ||
        (a.target && srv_text_ids(a.m->tok, a.target, 1, a.m->sparams.max_tgt_len, "the target", &a.tgt, &a.n_tgt,
                                  &err))) {
        srv_fail_mt(resp, &err);
        goto done;
    }
    if (run(req, &a, resp) || check_size(&a, resp))
        goto done;
    srv_reply_json(resp, 200, reply_json(req, &a));
done:
    attn_free(&a);
}
