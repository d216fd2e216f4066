/* m2m.c: what the M2M-100 architecture (config.json model_type "m2m_100":
 * facebook/m2m100_*, facebook/nllb-200-*) adds to the Marian loader
 * (model.c): its config checks and its positional table.  The network is
 * Marian's code with pre-LN blocks and a closing LayerNorm per stack
 * (encoder.c mt_block_in / mt_block_out, decoder.c); docs/M2M100.md says
 * what each piece follows in transformers' modeling_m2m_100.py.
 */
#include "mt_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* M2M100Config's keys, as this loader takes them.  Read (model.c): the
 * sizes (d_model, encoder_/decoder_layers, _attention_heads, _ffn_dim,
 * vocab_size, max_position_embeddings), the special ids (pad_token_id,
 * eos_token_id, decoder_start_token_id), scale_embedding,
 * activation_function, tie_word_embeddings and the generation defaults
 * (num_beams, max_length, early_stopping).  Ignored, as transformers ignores
 * them with the model in eval mode: dropout, attention_dropout,
 * activation_dropout, encoder_layerdrop, decoder_layerdrop (training), init_std,
 * use_cache, bos_token_id (no model input), num_hidden_layers (an alias).
 * Refused by name: the keys below. */

/* Keys that would change the network if they had another value than
 * M2M100's: what they must be, else the load is refused naming the key.
 * (M2M100's code shares one table for both stacks and the head, has no
 * embedding LayerNorm and is an encoder-decoder.) */
static mt_status check_fixed(const char *file, json_t *cfg, mt_err *err)
{
    json_t *v;
    if ((v = json_object_get(cfg, "is_encoder_decoder")) && json_is_false(v))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: 'is_encoder_decoder' = false: an M2M-100 model is an "
                          "encoder-decoder", file);
    if ((v = json_object_get(cfg, "share_encoder_decoder_embeddings")) && json_is_false(v))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: 'share_encoder_decoder_embeddings' = false: M2M-100 shares "
                          "one embedding table (model.shared)", file);
    if ((v = json_object_get(cfg, "normalize_embedding")) && json_is_true(v))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: 'normalize_embedding' = true: M2M-100 has no embedding "
                          "LayerNorm", file);
    json_t *dv = json_object_get(cfg, "decoder_vocab_size"), *vs = json_object_get(cfg, "vocab_size");
    if (json_is_integer(dv) && json_is_integer(vs) && json_integer_value(dv) != json_integer_value(vs))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: 'decoder_vocab_size' %lld differs from 'vocab_size' %lld: "
                          "M2M-100 has one vocabulary", file, (long long)json_integer_value(dv),
                          (long long)json_integer_value(vs));
    return MT_OK;
}

/* Keys of NLLB-MoE (model_type "nllb-moe"), a sparse architecture this code
 * does not run, in a config that says m2m_100 all the same. */
static const char *const MOE_KEYS[] = {
    "num_experts", "expert_capacity", "encoder_sparse_step", "decoder_sparse_step", "router_dtype",
    "moe_token_dropout", "moe_eval_capacity_token_fraction",
};

mt_status mt_m2m_check_config(const char *file, json_t *cfg, mt_err *err)
{
    for (size_t i = 0; i < sizeof MOE_KEYS / sizeof *MOE_KEYS; i++)
        if (json_object_get(cfg, MOE_KEYS[i]))
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: '%s' is a key of NLLB-MoE (mixture-of-experts layers), "
                              "which is not supported", file, MOE_KEYS[i]);
    return check_fixed(file, cfg, err);
}

const char *mt_m2m_refusal_hint(const char *model_type)
{
    if (model_type && (!strcmp(model_type, "nllb-moe") || !strcmp(model_type, "nllb_moe")))
        return " (NLLB-MoE: its mixture-of-experts layers are not supported; the dense NLLB-200 models, "
               "model_type m2m_100, are)";
    return "";
}

/* M2M100SinusoidalPositionalEmbedding.get_embedding: half = d // 2,
 * f_k = exp(-k ln(10000) / (half - 1)); row p = [sin(p f_k) for k < half |
 * cos(p f_k) for k < half] (+ one 0 when d is odd).  Token i of a stack
 * (no padding inside a row here) is at position padding_idx + 1 + i, so row
 * i of the table is that position's.  Computed in double, rounded to float
 * (transformers computes in float32: the two differ by a few units in the
 * last place, ~1e-5 absolute at position 1000). */
void mt_m2m_positions(int d, int pad, int n, float *pe)
{
    int half = d / 2;
    double step = half > 1 ? log(10000.0) / (half - 1) : 0.0;   /* d < 4: PyTorch divides by zero; refused */
    for (int i = 0; i < n; i++) {
        double p = (double)pad + 1 + i;
        float *row = pe + (size_t)i * d;
        for (int k = 0; k < half; k++) {
            double a = p * exp(-(double)k * step);
            row[k] = (float)sin(a);
            row[half + k] = (float)cos(a);
        }
        if (d % 2)
            row[d - 1] = 0.0f;
    }
}
