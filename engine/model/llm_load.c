/* llm_load.c: load a Hugging Face decoder-only LM directory (LlamaForCausalLM,
 * Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM; and the text model of
 * a Gemma3ForConditionalGeneration, its vision tower ignored) into an
 * immutable mt_model (arch MT_ARCH_LLM; the network is llm.c).
 *
 * config.json is read key by key: the settings the network implements are
 * taken, every other setting that changes the computation is refused by name
 * (rope_scaling, attention_bias on Llama / Qwen3, mlp_bias, sliding windows,
 * another hidden_act, quantization, non-full-attention layer types).  The
 * weights are model.safetensors, or the shards a model.safetensors.index.json
 * names: the index must map every tensor to an existing shard that holds it,
 * and every shard tensor must be in the index.  Every tensor the network uses
 * is checked for name, float dtype (F32, F16, BF16) and shape; a tensor the
 * network does not use is refused (a checkpoint of another shape).  F32
 * tensors are used in place from the read-only mappings when aligned, F16
 * and BF16 converted once; every Linear is packed (F32, F16 or INT8 as
 * mt_model_params.weights asks) and its row-major copy dropped at once, so
 * the peak is the packed weights plus one matrix.
 */
#include "mt_internal.h"
#include "formats/safetensors.h"
#include "kernels/parallel.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    mt_model   *m;
    mt_llm     *n;
    const char *dir;
    char        cfg_file[4200];
    char        wpath[4200];       /* the weights file or the index, for messages */
    mt_weights  held;
    mt_q8_isa   isa;
    long        l2;
    uint8_t    *pk_at;             /* next free byte of m->packed */
    size_t      mapped_bytes, owned_bytes;
    uint8_t   **used;              /* [n_shards][n_tensors]: tensors the network took */
    int         multimodal;        /* model_type gemma3: config.json's text_config is the network */
    char        pfx[32];           /* the text model's tensor prefix: "model." (multimodal: below) */
    char        head[48];          /* the untied head's name: "lm_head.weight" */
    char        dtype[32];         /* config.json's torch_dtype (or dtype), "" when absent */
} lload;

/* ---- small helpers ------------------------------------------------------------ */
static void *own(lload *L, size_t bytes, mt_err *err)
{
    void *p = mt_model_own(L->m, bytes, err);
    if (p)
        L->owned_bytes += bytes;
    return p;
}

static json_t *read_json(const char *path, mt_err *err)
{
    json_t *root = NULL;
    mt_read_json_object(path, 1, &root, err);
    return root;
}

#define N_FAMILY 4
static const char *FAMILY[N_FAMILY] = {"llama", "qwen2", "qwen3", "gemma3_text"};
static const char *ARCH[N_FAMILY] = {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Gemma3ForCausalLM"};

int mt_llm_detect(const json_t *cfg)
{
    if (!cfg)
        return 0;
    int yes = 0;
    json_t *mt = json_object_get(cfg, "model_type"), *ar = json_object_get(cfg, "architectures");
    for (int i = 0; i < N_FAMILY && json_is_string(mt); i++)
        yes |= !strcmp(json_string_value(mt), FAMILY[i]);
    yes |= json_is_string(mt) && !strcmp(json_string_value(mt), "gemma3");      /* its text_config */
    if (json_is_array(ar) && json_is_string(json_array_get(ar, 0))) {
        const char *a = json_string_value(json_array_get(ar, 0));
        size_t n = strlen(a), k = strlen("ForCausalLM");
        yes |= n > k && !strcmp(a + n - k, "ForCausalLM");
    }
    return yes;
}

/* ---- config.json ---------------------------------------------------------------- */
#define REQUIRED INT_MIN

static mt_status cfg_int(lload *L, json_t *cfg, const char *key, int def, int lo, int hi, int *out, mt_err *err)
{
    json_t *j = json_object_get(cfg, key);
    if (!j || json_is_null(j)) {
        if (def == REQUIRED)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: missing required key '%s'", L->cfg_file, key);
        *out = def;
        return MT_OK;
    }
    if (!json_is_integer(j))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: '%s' must be an integer", L->cfg_file, key);
    json_int_t v = json_integer_value(j);
    if (v < lo || v > hi)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: '%s' = %lld is outside [%d, %d]", L->cfg_file, key, (long long)v,
                          lo, hi);
    *out = (int)v;
    return MT_OK;
}

static mt_status cfg_num(lload *L, json_t *cfg, const char *key, double def, double *out, mt_err *err)
{
    json_t *j = json_object_get(cfg, key);
    if (!j || json_is_null(j)) {
        *out = def;
        return MT_OK;
    }
    if (!json_is_number(j) || !(json_number_value(j) > 0) || !isfinite(json_number_value(j)))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: '%s' must be a positive number", L->cfg_file, key);
    *out = json_number_value(j);
    return MT_OK;
}

static int cfg_true(json_t *cfg, const char *key) { return json_is_true(json_object_get(cfg, key)); }

/* Gemma 3 (Gemma3TextConfig): hidden_activation (or hidden_act) gelu_pytorch_tanh;
 * rope_scaling null or linear (its factor, on the global layers: the 4b..27b
 * configs' {"rope_type": "linear", "factor": 8.0}); attn_logit_softcapping
 * null (Gemma 2's; final_logit_softcapping is implemented); no attention bias,
 * no bidirectional attention; layer_types of sliding_attention / full_attention. */
static mt_status gemma_unsupported(lload *L, json_t *cfg, mt_err *err)
{
    const char *f = L->cfg_file, *acts[] = {"hidden_activation", "hidden_act"};
    for (int i = 0; i < 2; i++) {
        json_t *j = json_object_get(cfg, acts[i]);
        if (j && !json_is_null(j) && !(json_is_string(j) && !strcmp(json_string_value(j), "gelu_pytorch_tanh")))
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: %s '%s' is not supported for gemma3 (only "
                              "gelu_pytorch_tanh: the GeGLU MLP)", f, acts[i], json_is_string(j) ? json_string_value(j) : "?");
    }
    json_t *j = json_object_get(cfg, "rope_scaling");
    if (j && !json_is_null(j)) {
        json_t *t = json_object_get(j, "rope_type");
        if (!t)
            t = json_object_get(j, "type");
        if (!json_is_string(t) || strcmp(json_string_value(t), "linear") != 0)
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: rope_scaling (type '%s') is not supported for gemma3: "
                              "only null or linear", f, json_is_string(t) ? json_string_value(t) : "?");
    }
    if (json_object_get(cfg, "rope_parameters"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: rope_parameters is not read for gemma3 (write rope_theta, "
                          "rope_local_base_freq and rope_scaling, as the published configs do)", f);
    j = json_object_get(cfg, "attn_logit_softcapping");
    if (j && !json_is_null(j))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: attn_logit_softcapping is not supported (Gemma 3 sets it "
                          "null)", f);
    if (cfg_true(cfg, "attention_bias"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: attention_bias true is not supported for gemma3", f);
    if (cfg_true(cfg, "use_bidirectional_attention"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: use_bidirectional_attention true is not supported (an "
                          "encoder: EmbeddingGemma)", f);
    if (json_object_get(cfg, "quantization_config"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: quantization_config is not supported (quantized "
                          "checkpoints; the engine quantizes at load with --weights int8)", f);
    j = json_object_get(cfg, "layer_types");
    for (size_t i = 0; json_is_array(j) && i < json_array_size(j); i++) {
        json_t *t = json_array_get(j, i);
        if (!json_is_string(t) || (strcmp(json_string_value(t), "full_attention") != 0 &&
                                   strcmp(json_string_value(t), "sliding_attention") != 0))
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: layer_types[%zu] '%s' is not supported (only "
                              "sliding_attention and full_attention)", f, i, json_is_string(t) ? json_string_value(t) : "?");
    }
    return MT_OK;
}

/* The settings of these families that change the computation and that the
 * network does not implement: each is refused by its name. */
static mt_status refuse_unsupported(lload *L, json_t *cfg, mt_err *err)
{
    mt_llm *n = L->n;
    const char *f = L->cfg_file;
    if (n->family == MT_LLM_GEMMA3)
        return gemma_unsupported(L, cfg, err);
    json_t *j = json_object_get(cfg, "hidden_act");
    if (j && !(json_is_string(j) && !strcmp(json_string_value(j), "silu")))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: hidden_act '%s' is not supported (only silu: the SwiGLU MLP)",
                          f, json_is_string(j) ? json_string_value(j) : "?");
    j = json_object_get(cfg, "rope_scaling");
    if (j && !json_is_null(j)) {
        json_t *t = json_object_get(j, "rope_type");
        if (!t)
            t = json_object_get(j, "type");
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: rope_scaling (type '%s') is not supported: only "
                          "rope_scaling null (plain RoPE with rope_theta)", f,
                          json_is_string(t) ? json_string_value(t) : "?");
    }
    /* transformers >= 4.56 writes rope_parameters {rope_type, rope_theta}: "default" only */
    j = json_object_get(cfg, "rope_parameters");
    if (j && !json_is_null(j)) {
        json_t *t = json_object_get(j, "rope_type");
        if (json_is_string(t) && strcmp(json_string_value(t), "default") != 0)
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: rope_parameters.rope_type '%s' is not supported: only "
                              "'default' (plain RoPE)", f, json_string_value(t));
    }
    if (n->family != MT_LLM_QWEN2 && cfg_true(cfg, "attention_bias"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: attention_bias true is not supported for model_type '%s' "
                          "(q/k/v/o biases: only Qwen2's q/k/v biases are)", f, FAMILY[n->family]);
    if (cfg_true(cfg, "mlp_bias"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: mlp_bias true is not supported", f);
    if (cfg_true(cfg, "use_sliding_window"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: use_sliding_window true is not supported (sliding-window "
                          "attention; every layer attends to every earlier position)", f);
    if (json_object_get(cfg, "quantization_config"))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: quantization_config is not supported (quantized "
                          "checkpoints; the engine quantizes at load with --weights int8)", f);
    j = json_object_get(cfg, "layer_types");
    for (size_t i = 0; json_is_array(j) && i < json_array_size(j); i++) {
        json_t *t = json_array_get(j, i);
        if (!json_is_string(t) || strcmp(json_string_value(t), "full_attention") != 0)
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: layer_types[%zu] '%s' is not supported (only "
                              "full_attention)", f, i, json_is_string(t) ? json_string_value(t) : "?");
    }
    /* pretraining_tp is accepted: in HF it only slices the same products */
    return MT_OK;
}

/* model_type (and architectures, when given) name a family this loader runs. */
static mt_status parse_family(lload *L, json_t *cfg, mt_err *err)
{
    const char *f = L->cfg_file;
    json_t *mt = json_object_get(cfg, "model_type"), *ar = json_object_get(cfg, "architectures");
    int fam = L->multimodal ? MT_LLM_GEMMA3 : -1;      /* a text_config may omit its model_type */
    for (int i = 0; i < N_FAMILY && json_is_string(mt); i++)
        if (!strcmp(json_string_value(mt), FAMILY[i]))
            fam = i;
    if (fam < 0)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: model_type '%s' is not supported (decoder-only: llama, qwen2, "
                          "qwen3, gemma3_text, gemma3)", f, json_is_string(mt) ? json_string_value(mt) : "(none)");
    if (L->multimodal)      /* text_config names no architecture; the outer one was checked */
        ar = NULL;
    if (json_is_array(ar) && json_is_string(json_array_get(ar, 0)) &&
        strcmp(json_string_value(json_array_get(ar, 0)), ARCH[fam]) != 0)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: architectures '%s' is not supported for model_type '%s' "
                          "(expected %s)", f, json_string_value(json_array_get(ar, 0)), FAMILY[fam], ARCH[fam]);
    L->n->family = (mt_llm_family)fam;
    return MT_OK;
}

/* eos: an id, or a list of one (several stop ids are not implemented). */
static mt_status parse_eos(lload *L, json_t *cfg, int *eos, mt_err *err)
{
    const char *f = L->cfg_file;
    json_t *je = json_object_get(cfg, "eos_token_id");
    *eos = -1;
    /* Gemma 3 publishes [1, 106]: <eos> and the chat's <end_of_turn>; eos is the
     * first, <end_of_turn> ends a chat prompt's reply (the prompt's end ids). */
    if (json_is_array(je) && (json_array_size(je) == 1 || (L->n->family == MT_LLM_GEMMA3 && json_array_size(je) > 1)))
        je = json_array_get(je, 0);
    if (json_is_array(je))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: eos_token_id lists %zu ids: only one stop id is supported",
                          f, json_array_size(je));
    if (json_is_integer(je))
        *eos = (int)json_integer_value(je);
    else if (!je && L->n->family == MT_LLM_GEMMA3)
        *eos = 1;                      /* Gemma3TextConfig's default (<eos>); a text_config omits it */
    if (*eos < 0 || *eos >= L->n->V)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: eos_token_id missing or outside the vocabulary (%d ids)", f,
                          L->n->V);
    return MT_OK;
}

/* The public info and the model's shape from the parsed network: a
 * decoder-only model has no encoder; a "source" is the prompt. */
static void set_info(mt_model *m, const mt_llm *n, int eos)
{
    mt_model_info *info = &m->info;
    info->d_model = n->d;
    info->enc_layers = 0;
    info->dec_layers = n->L;
    info->enc_heads = info->dec_heads = n->H;
    info->enc_ffn = 0;
    info->dec_ffn = n->F;
    info->vocab_size = info->src_vocab_size = n->V;
    info->pad_id = -1;                 /* none: no id is excluded from the argmax (HF greedy) */
    info->eos_id = eos;
    info->decoder_start_id = -1;       /* the first input is the prompt's last id; bos is the caller's */
    info->default_beam = 1;
    info->default_max_length = 257;    /* 256 new tokens (then the forced eos, as for Marian) */
    if (info->default_max_length > info->max_positions)
        info->default_max_length = info->max_positions;
    m->d = n->d;
    m->V = m->V_src = n->V;
    m->enc_heads = m->dec_heads = n->H;
    m->enc_ffn = 0;
    m->dec_ffn = n->F;
    m->act = n->geglu ? MT_ACT_GELU : MT_ACT_SWISH;
    snprintf(m->act_name, sizeof m->act_name, "%s", n->geglu ? "gelu_tanh" : "silu");
}

/* sqrt(hidden) rounded to the published dtype: HF multiplies by
 * embed_scale.to(weight.dtype) (BF16: sqrt(1152) = 33.94 becomes 34). */
static float emb_scale(const lload *L, int d)
{
    float s = (float)sqrt((double)d);
    if (!strcmp(L->dtype, "bfloat16")) {     /* round to nearest even, 8 bits of mantissa */
        uint32_t u;
        memcpy(&u, &s, 4);
        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
        memcpy(&s, &u, 4);
        return s;
    }
    if (!strcmp(L->dtype, "float16"))
        return mt_f16_to_f32(mt_f32_to_f16(s));
    return s;
}

/* Gemma3TextConfig's keys beyond Llama's (its defaults when absent, as the 4b
 * text_config, which names 6 keys): query_pre_attn_scalar, sliding_window,
 * rope_local_base_freq, rope_scaling's linear factor, layer_types or
 * sliding_window_pattern (layer i local unless (i + 1) % pattern == 0),
 * final_logit_softcapping. */
static mt_status gemma_config(lload *L, json_t *cfg, mt_err *err)
{
    mt_llm *n = L->n;
    mt_status st;
    int pattern;
    double qpas, cap = 0;
    if ((st = cfg_num(L, cfg, "query_pre_attn_scalar", 256.0, &qpas, err)) != MT_OK ||
        (st = cfg_int(L, cfg, "sliding_window", 4096, 1, 1 << 24, &n->window, err)) != MT_OK ||
        (st = cfg_int(L, cfg, "sliding_window_pattern", 6, 1, 1 << 16, &pattern, err)) != MT_OK ||
        (st = cfg_num(L, cfg, "rope_local_base_freq", 10000.0, &n->theta_local, err)) != MT_OK ||
        (st = cfg_num(L, cfg, "final_logit_softcapping", 0, &cap, err)) != MT_OK)
        return st;
    json_t *rs = json_object_get(cfg, "rope_scaling");
    n->rope_factor = 1.0;
    if (json_is_object(rs) && (st = cfg_num(L, rs, "factor", 1.0, &n->rope_factor, err)) != MT_OK)
        return st;
    json_t *lt = json_object_get(cfg, "layer_types");
    if (lt && !json_is_null(lt) && (!json_is_array(lt) || json_array_size(lt) != (size_t)n->L))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: layer_types must list num_hidden_layers (%d) entries", L->cfg_file,
                          n->L);
    for (int i = 0; i < n->L; i++)
        n->layers[i].local = json_is_array(lt) ? !strcmp(json_string_value(json_array_get(lt, (size_t)i)),
                                                         "sliding_attention")
                                               : (i + 1) % pattern != 0;
    n->attn_scale = (float)(1.0 / sqrt(qpas));
    n->final_cap = (float)cap;
    n->geglu = 1;
    n->emb_scale = emb_scale(L, n->d);
    return MT_OK;
}

static mt_status parse_config(lload *L, json_t *cfg, mt_err *err)
{
    mt_llm *n = L->n;
    mt_model_info *info = &L->m->info;
    const char *f = L->cfg_file;
    mt_status st;
    if ((st = parse_family(L, cfg, err)) != MT_OK || (st = refuse_unsupported(L, cfg, err)) != MT_OK)
        return st;
    int tied, eos = -1, g = n->family == MT_LLM_GEMMA3;
    double eps, theta;
    /* Gemma3TextConfig has a default for every key (the 4b text_config relies on them) */
#define INT(key, def, gdef, lo, hi, dst) \
    if ((st = cfg_int(L, cfg, key, g ? (gdef) : (def), lo, hi, dst, err)) != MT_OK) return st
    INT("hidden_size", REQUIRED, 2304, 2, 1 << 16, &n->d);
    INT("intermediate_size", REQUIRED, 9216, 1, 1 << 20, &n->F);
    INT("num_hidden_layers", REQUIRED, 26, 1, 1024, &n->L);
    INT("num_attention_heads", REQUIRED, 8, 1, 1024, &n->H);
    INT("num_key_value_heads", n->H, 4, 1, n->H, &n->KV);
    INT("head_dim", n->d / n->H, 256, 2, 1024, &n->hd);     /* Qwen3: 128 where hidden / heads is 64 */
    INT("vocab_size", REQUIRED, 262208, 2, 1 << 24, &n->V);
    INT("max_position_embeddings", REQUIRED, 131072, 2, 1 << 22, &info->max_positions);
#undef INT
    json_t *jt = json_object_get(cfg, "tie_word_embeddings");
    if (jt && !json_is_boolean(jt) && !json_is_null(jt))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: 'tie_word_embeddings' must be true or false", f);
    tied = jt && !json_is_null(jt) ? json_is_true(jt) : g;  /* Llama/Qwen: default false; Gemma 3 true */
    if ((st = cfg_num(L, cfg, "rms_norm_eps", 1e-6, &eps, err)) != MT_OK ||
        (st = cfg_num(L, cfg, "rope_theta", g ? 1e6 : 10000.0, &theta, err)) != MT_OK)
        return st;
    json_t *rp = json_object_get(cfg, "rope_parameters");
    if (json_is_object(rp) && json_object_get(rp, "rope_theta") &&
        (st = cfg_num(L, rp, "rope_theta", theta, &theta, err)) != MT_OK)
        return st;
    if (n->H % n->KV)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: num_attention_heads %d is not a multiple of num_key_value_heads %d",
                          f, n->H, n->KV);
    if (n->hd % 2)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: head_dim %d is odd (RoPE rotates pairs)", f, n->hd);
    if ((st = parse_eos(L, cfg, &eos, err)) != MT_OK)
        return st;
    n->qd = n->H * n->hd;
    n->kvd = n->KV * n->hd;
    n->eps = (float)eps;
    n->theta = theta;
    n->tied = tied;
    n->rope_factor = 1.0;
    n->emb_scale = 1.0f;
    n->attn_scale = (float)(1.0 / sqrt((double)n->hd));
    if (!(n->layers = calloc((size_t)n->L, sizeof *n->layers)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (g && (st = gemma_config(L, cfg, err)) != MT_OK)
        return st;
    set_info(L->m, n, eos);
    return MT_OK;
}

/* ---- the weights files ------------------------------------------------------------- */

static int shard_of(const mt_llm *n, const char *path)
{
    for (int i = 0; i < n->n_shards; i++)
        if (!strcmp(n->shards[i]->path, path))
            return i;
    return -1;
}

/* model.safetensors.index.json: {"weight_map": {tensor: shard file}}.  Every
 * shard it names is opened (a missing one is an error), every tensor it maps
 * must be in that shard, every tensor of a shard must be mapped to it. */
static mt_status open_index(lload *L, mt_err *err)
{
    mt_llm *n = L->n;
    json_t *ix = read_json(L->wpath, err);
    if (!ix)
        return err ? err->status : MT_ERR_FORMAT;
    mt_status st = MT_OK;
    json_t *wm = json_object_get(ix, "weight_map");
    if (!json_is_object(wm) || json_object_size(wm) == 0) {
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: no weight_map object", L->wpath);
        goto out;
    }
    n->shards = calloc(json_object_size(wm), sizeof *n->shards);
    if (!n->shards) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto out;
    }
    const char *name;
    json_t *v;
    json_object_foreach(wm, name, v) {
        char path[4200];
        if (!json_is_string(v) || !*json_string_value(v) || strchr(json_string_value(v), '/') ||
            !strcmp(json_string_value(v), "..")) {
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' maps to '%s', not a file name of the directory",
                            L->wpath, name, json_is_string(v) ? json_string_value(v) : "?");
            goto out;
        }
        if (!mt_path_exists(L->dir, json_string_value(v), path, sizeof path)) {
            st = mt_err_set(err, MT_ERR_IO, "%s: tensor '%s' is in shard '%s', which is missing", L->wpath, name,
                            json_string_value(v));
            goto out;
        }
        int k = shard_of(n, path);
        if (k < 0) {
            if ((st = mt_st_open(path, &n->shards[n->n_shards], err)) != MT_OK)
                goto out;
            k = n->n_shards++;
        }
        if (!mt_wfile_find(n->shards[k], name)) {
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: tensor '%s' is mapped to shard '%s', which does not hold it",
                            L->wpath, name, json_string_value(v));
            goto out;
        }
    }
    for (int k = 0; k < n->n_shards; k++)
        for (int i = 0; i < n->shards[k]->n_tensors; i++) {
            const char *t = n->shards[k]->tensors[i].name, *base = strrchr(n->shards[k]->path, '/');
            json_t *to = json_object_get(wm, t);
            if (!to || strcmp(json_string_value(to), base ? base + 1 : n->shards[k]->path) != 0) {
                st = mt_err_set(err, MT_ERR_FORMAT, "%s: shard '%s' holds tensor '%s', which the index %s", L->wpath,
                                base ? base + 1 : n->shards[k]->path, t,
                                to ? "maps to another shard" : "does not list");
                goto out;
            }
        }
out:
    json_decref(ix);
    return st;
}

static mt_status open_weights(lload *L, mt_err *err)
{
    mt_model *m = L->m;
    mt_llm *n = L->n;
    mt_status st;
    if (mt_path_exists(L->dir, "model.safetensors", L->wpath, sizeof L->wpath)) {
        snprintf(m->weights_file, sizeof m->weights_file, "model.safetensors");
        if (!(n->shards = calloc(1, sizeof *n->shards)))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        if ((st = mt_st_open(L->wpath, &n->shards[0], err)) != MT_OK)
            return st;
        n->n_shards = 1;
    } else if (mt_path_exists(L->dir, "model.safetensors.index.json", L->wpath, sizeof L->wpath)) {
        snprintf(m->weights_file, sizeof m->weights_file, "model.safetensors.index.json");
        if ((st = open_index(L, err)) != MT_OK)
            return st;
    } else {
        return mt_err_set(err, MT_ERR_IO, "%s: no weights (model.safetensors or model.safetensors.index.json)", L->dir);
    }
    L->used = calloc((size_t)n->n_shards, sizeof *L->used);
    if (!L->used)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n->n_shards; k++)
        if (!(L->used[k] = calloc((size_t)n->shards[k]->n_tensors + 1, 1)))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    return MT_OK;
}

/* ---- tensors -------------------------------------------------------------------- */
/* name, checked: a float dtype and shape [d0] (d1 = 0) or [d0][d1]; marked used. */
static mt_status find(lload *L, const char *name, int64_t d0, int64_t d1, const mt_tensor **out, mt_err *err)
{
    const mt_llm *n = L->n;
    const mt_tensor *t = NULL;
    int k = 0;
    for (; k < n->n_shards && !t; k++)
        t = mt_wfile_find(n->shards[k], name);
    *out = NULL;
    if (!t)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: missing tensor '%s'", L->wpath, name);
    const mt_wfile *w = n->shards[k - 1];
    mt_status st = mt_check_tensor(w->path, name, t, d0, d1, 0, err);
    if (st != MT_OK)
        return st;
    L->used[k - 1][t - w->tensors] = 1;
    *out = t;
    return MT_OK;
}

/* Forget an array read once: freed if converted, its pages given back if mapped. */
static void drop(lload *L, const float *p, size_t bytes)
{
    const mt_llm *n = L->n;
    for (int k = 0; k < n->n_shards; k++) {
        const uint8_t *q = (const uint8_t *)p, *map = n->shards[k]->map;
        if (q >= map && q < map + n->shards[k]->size) {
            mt_release_pages(q, bytes);
            L->mapped_bytes -= bytes;
            return;
        }
    }
    if (mt_model_disown(L->m, p))
        L->owned_bytes -= bytes;
}

/* A float32 view: in place when F32 and aligned, else a converted copy. */
static mt_status get_f32(lload *L, const char *name, int64_t d0, int64_t d1, const float **out, mt_err *err)
{
    const mt_tensor *t;
    mt_status st = find(L, name, d0, d1, &t, err);
    if (st != MT_OK)
        return st;
    size_t count = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    if (t->dtype == MT_DT_F32 && (uintptr_t)t->data % sizeof(float) == 0) {
        *out = t->data;
        L->mapped_bytes += count * sizeof(float);
        return MT_OK;
    }
    float *dst = own(L, count * sizeof(float), err);
    if (!dst)
        return MT_ERR_NOMEM;
    mt_tensor_to_f32(t, dst, count);
    mt_release_tensor(t);
    *out = dst;
    return MT_OK;
}

static size_t pk_bytes(const lload *L, int in, int out)
{
    return mt_held_bytes(L->held, in, out);
}

/* W [out][in] F32 packed into the arena as the products use it. */
static void pack(lload *L, const float *w, int in, int out, mt_packed *pk)
{
    mt_held_pack(L->held, L->isa, L->l2, w, in, out, L->pk_at, pk);
    L->pk_at += pk_bytes(L, in, out);
}

/* nparts matrices prefix.parts[i].weight [rows[i]][in] stacked into one
 * Linear [sum rows][in] (q|k|v, gate|up), packed; their biases (bias: Qwen2)
 * stacked too.  The stacked F32 copy lives only while it is packed. */
static mt_status get_lin(lload *L, const char *prefix, const char *const *parts, const int *rows, int nparts, int in,
                         int bias, mt_lin *o, mt_err *err)
{
    int out = 0;
    for (int i = 0; i < nparts; i++)
        out += rows[i];
    size_t wb = sizeof(float) * (size_t)out * in;
    float *w = own(L, wb, err), *b = bias ? own(L, sizeof(float) * (size_t)out, err) : NULL;
    if (!w || (bias && !b))
        return MT_ERR_NOMEM;
    for (int i = 0, at = 0; i < nparts; at += rows[i++]) {
        char name[256];
        const mt_tensor *t;
        mt_status st;
        snprintf(name, sizeof name, "%s.%s.weight", prefix, parts[i]);
        if ((st = find(L, name, rows[i], in, &t, err)) != MT_OK)
            return st;
        mt_tensor_to_f32(t, w + (size_t)at * in, (size_t)rows[i] * in);
        mt_release_tensor(t);
        if (bias) {
            snprintf(name, sizeof name, "%s.%s.bias", prefix, parts[i]);
            if ((st = find(L, name, rows[i], 0, &t, err)) != MT_OK)
                return st;
            mt_tensor_to_f32(t, b + at, (size_t)rows[i]);
        }
    }
    pack(L, w, in, out, &o->pk);
    if (mt_model_disown(L->m, w))         /* the stacked copy lived only while it was packed */
        L->owned_bytes -= wb;
    o->w = NULL;
    o->b = b;
    return MT_OK;
}

/* An RMSNorm weight; Gemma 3's held as 1 + w (HF: output * (1.0 + weight.float()), in F32). */
static mt_status get_norm(lload *L, const char *prefix, const char *name, int d, const float **out, mt_err *err)
{
    char full[256];
    snprintf(full, sizeof full, "%s.%s.weight", prefix, name);
    mt_status st = get_f32(L, full, d, 0, out, err);
    if (st != MT_OK || L->n->family != MT_LLM_GEMMA3)
        return st;
    float *w = own(L, sizeof(float) * (size_t)d, err);
    if (!w)
        return MT_ERR_NOMEM;
    for (int i = 0; i < d; i++)
        w[i] = 1.0f + (*out)[i];
    drop(L, *out, sizeof(float) * (size_t)d);
    *out = w;
    return MT_OK;
}

static mt_status load_layers(lload *L, mt_err *err)
{
    mt_llm *n = L->n;
    static const char *const QKV[] = {"q_proj", "k_proj", "v_proj"}, *const GU[] = {"gate_proj", "up_proj"},
                             *const O[] = {"o_proj"}, *const DOWN[] = {"down_proj"};
    int rq[3] = {n->qd, n->kvd, n->kvd}, rgu[2] = {n->F, n->F}, rd = n->d;
    int g = n->family == MT_LLM_GEMMA3;
    for (int i = 0; i < n->L; i++) {
        char p[96], pa[128], pm[128];
        mt_llm_layer *l = &n->layers[i];
        mt_status st;
        snprintf(p, sizeof p, "%slayers.%d", L->pfx, i);
        snprintf(pa, sizeof pa, "%s.self_attn", p);
        snprintf(pm, sizeof pm, "%s.mlp", p);
        if ((st = get_norm(L, p, "input_layernorm", n->d, &l->ln_in, err)) != MT_OK ||
            (st = get_norm(L, p, g ? "pre_feedforward_layernorm" : "post_attention_layernorm", n->d, &l->ln_post,
                           err)) != MT_OK ||
            (st = get_lin(L, pa, QKV, rq, 3, n->d, n->family == MT_LLM_QWEN2, &l->qkv, err)) != MT_OK ||
            (st = get_lin(L, pa, O, &rd, 1, n->qd, 0, &l->o, err)) != MT_OK ||
            (st = get_lin(L, pm, GU, rgu, 2, n->d, 0, &l->gate_up, err)) != MT_OK ||
            (st = get_lin(L, pm, DOWN, &rd, 1, n->F, 0, &l->down, err)) != MT_OK)
            return st;
        if ((n->family == MT_LLM_QWEN3 || g) && ((st = get_norm(L, pa, "q_norm", n->hd, &l->q_norm, err)) != MT_OK ||
                                                 (st = get_norm(L, pa, "k_norm", n->hd, &l->k_norm, err)) != MT_OK))
            return st;
        if (g && ((st = get_norm(L, p, "post_attention_layernorm", n->d, &l->attn_out, err)) != MT_OK ||
                  (st = get_norm(L, p, "post_feedforward_layernorm", n->d, &l->mlp_out, err)) != MT_OK))
            return st;
    }
    return MT_OK;
}

/* Embeddings, final norm, LM head (tied: the embedding table, packed). */
static mt_status load_head(lload *L, mt_err *err)
{
    mt_model *m = L->m;
    mt_llm *n = L->n;
    mt_status st;
    const float *emb, *head;
    char ename[64], nname[64];
    snprintf(ename, sizeof ename, "%sembed_tokens.weight", L->pfx);
    snprintf(nname, sizeof nname, "%.*s", (int)strlen(L->pfx) - 1, L->pfx);   /* without its dot */
    if ((st = get_f32(L, ename, n->V, n->d, &emb, err)) != MT_OK ||
        (st = get_norm(L, nname, "norm", n->d, &n->norm, err)) != MT_OK)
        return st;
    head = emb;
    if (!n->tied && (st = get_f32(L, L->head, n->V, n->d, &head, err)) != MT_OK)
        return st;
    pack(L, head, n->d, n->V, &m->lm_pk);
    size_t count = (size_t)n->V * n->d;
    if (!n->tied)                      /* read once, to pack */
        drop(L, head, count * sizeof(float));
    if (L->held == MT_WEIGHTS_F16) {   /* the gather table too: "these weights rounded to F16" */
        uint16_t *h = own(L, count * sizeof(uint16_t), err);
        if (!h)
            return MT_ERR_NOMEM;
        for (size_t i = 0; i < count; i++)
            h[i] = mt_f32_to_f16(emb[i]);
        n->emb16 = h;
        drop(L, emb, count * sizeof(float));
        n->emb = NULL;
    } else {
        n->emb = emb;
    }
    return MT_OK;
}

/* A multimodal Gemma 3's vision tower and projector: present, not used (text only). */
static int vision_tensor(const lload *L, const char *name)
{
    static const char *const V[] = {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                                    "model.multi_modal_projector."};
    for (int i = 0; L->multimodal && i < 4; i++)
        if (!strncmp(name, V[i], strlen(V[i])))
            return 1;
    return 0;
}

/* Every tensor of the checkpoint must be one the network took. */
static mt_status check_all_used(lload *L, mt_err *err)
{
    const mt_llm *n = L->n;
    for (int k = 0; k < n->n_shards; k++)
        for (int i = 0; i < n->shards[k]->n_tensors; i++)
            if (!L->used[k][i] && !(n->tied && !strcmp(n->shards[k]->tensors[i].name, L->head)) &&
                !vision_tensor(L, n->shards[k]->tensors[i].name))
                return mt_err_set(err, MT_ERR_FORMAT, "%s: unexpected tensor '%s' (not part of the %s network "
                                  "config.json describes)", n->shards[k]->path, n->shards[k]->tensors[i].name,
                                  FAMILY[n->family]);
    return MT_OK;
}

static size_t arena_bytes(const lload *L)
{
    const mt_llm *n = L->n;
    size_t per = pk_bytes(L, n->d, n->qd + 2 * n->kvd) + pk_bytes(L, n->qd, n->d) + pk_bytes(L, n->d, 2 * n->F) +
                 pk_bytes(L, n->F, n->d);
    return per * (size_t)n->L + pk_bytes(L, n->d, n->V);
}

static const mt_tensor *find_any(const mt_llm *n, const char *name)
{
    const mt_tensor *t = NULL;
    for (int k = 0; !t && k < n->n_shards; k++)
        t = mt_wfile_find(n->shards[k], name);
    return t;
}

static const char *weights_dtype(const lload *L)
{
    char name[64];
    snprintf(name, sizeof name, "%sembed_tokens.weight", L->pfx);
    const mt_tensor *t = find_any(L->n, name);
    return t ? t->dtype_name : "F32";
}

/* A multimodal Gemma 3 names its text model language_model.model.* and
 * language_model.lm_head (transformers < 4.52) or model.language_model.* and
 * lm_head (>= 4.52): the one whose embedding the weights hold. */
static void text_prefix(lload *L)
{
    if (!L->multimodal)
        return;
    int old = find_any(L->n, "language_model.model.embed_tokens.weight") != NULL;
    snprintf(L->pfx, sizeof L->pfx, "%s", old ? "language_model.model." : "model.language_model.");
    snprintf(L->head, sizeof L->head, "%s", old ? "language_model.lm_head.weight" : "lm_head.weight");
}

/* config.json of model_type gemma3 (Gemma3ForConditionalGeneration): the
 * network is its text_config (model_type gemma3_text); vision_config and the
 * image token settings describe the vision tower, which is not run (its
 * tensors are skipped): a text-only model of the same weights.  *net is the
 * config the network is read from. */
static mt_status unwrap_gemma3(lload *L, json_t *cfg, json_t **net, mt_err *err)
{
    json_t *mt = json_object_get(cfg, "model_type"), *ar = json_object_get(cfg, "architectures");
    const char *dt = json_string_value(json_object_get(cfg, "torch_dtype"));
    if (!dt)
        dt = json_string_value(json_object_get(cfg, "dtype"));
    snprintf(L->dtype, sizeof L->dtype, "%s", dt ? dt : "");
    *net = cfg;
    if (!json_is_string(mt) || strcmp(json_string_value(mt), "gemma3") != 0)
        return MT_OK;
    if (json_is_array(ar) && json_is_string(json_array_get(ar, 0)) &&
        strcmp(json_string_value(json_array_get(ar, 0)), "Gemma3ForConditionalGeneration") != 0)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: architectures '%s' is not supported for model_type 'gemma3' "
                          "(expected Gemma3ForConditionalGeneration)", L->cfg_file,
                          json_string_value(json_array_get(ar, 0)));
    json_t *tc = json_object_get(cfg, "text_config");
    if (!json_is_object(tc))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: model_type gemma3 without a text_config object", L->cfg_file);
    json_t *tmt = json_object_get(tc, "model_type");
    if (tmt && !(json_is_string(tmt) && !strcmp(json_string_value(tmt), "gemma3_text")))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: text_config.model_type '%s' is not supported (expected "
                          "gemma3_text)", L->cfg_file, json_is_string(tmt) ? json_string_value(tmt) : "?");
    L->multimodal = 1;
    *net = tc;
    return MT_OK;
}

/* dir/tokenizer.json (and tokenizer_config.json) when present: the model's
 * tokenizer (mt_tokenizer_from_hf); its ids must be rows of the embedding.
 * Without it the model serves ids only (the engine's tests). */
static mt_status load_tokenizer(lload *L, mt_err *err)
{
    char path[4096];
    struct stat sb;
    if (snprintf(path, sizeof path, "%s/tokenizer.json", L->dir) >= (int)sizeof path || stat(path, &sb) != 0)
        return MT_OK;
    mt_hf_tokenizer *hf;
    mt_status st = mt_hf_tokenizer_load(L->dir, &hf, err);
    if (st != MT_OK)
        return st;
    int tv = mt_hf_tokenizer_vocab_size(hf);
    if (tv > L->m->V) {
        mt_hf_tokenizer_free(hf);
        return mt_err_set(err, MT_ERR_FORMAT, "%s: the tokenizer has %d ids but config.json's vocab_size is %d",
                          path, tv, L->m->V);
    }
    return mt_tokenizer_from_hf(hf, &L->m->tok, err);
}

mt_status mt_llm_load(mt_model *m, const char *dir, const json_t *cfg, mt_weights held, mt_q8_isa isa, long l2, int card,
                      mt_err *err)
{
    mt_llm *n = calloc(1, sizeof *n);
    if (!n)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    m->arch = MT_ARCH_LLM;
    m->llm = n;
    lload L = {.m = m, .n = n, .dir = dir, .held = held, .isa = isa, .l2 = l2, .pfx = "model.",
               .head = "lm_head.weight"};
    snprintf(L.cfg_file, sizeof L.cfg_file, "%s/config.json", dir);
    json_t *net = NULL;
    mt_status st = unwrap_gemma3(&L, (json_t *)cfg, &net, err);
    if (st == MT_OK)
        st = parse_config(&L, net, err);
    if (st == MT_OK)
        st = load_tokenizer(&L, err);
    if (st == MT_OK)
        st = open_weights(&L, err);
    if (st == MT_OK)
        text_prefix(&L);
    if (st == MT_OK && !card) {
        m->packed_bytes = arena_bytes(&L);
        if (!(m->packed = mt_huge_alloc(m->packed_bytes)))
            st = mt_err_set(err, MT_ERR_NOMEM, "cannot allocate %zu MB of packed weights", m->packed_bytes >> 20);
        L.pk_at = m->packed;
        if (st == MT_OK && (st = load_layers(&L, err)) == MT_OK && (st = load_head(&L, err)) == MT_OK)
            st = check_all_used(&L, err);
    }
    size_t file_bytes = 0;
    for (int k = 0; k < n->n_shards; k++)
        file_bytes += n->shards[k]->size;
    for (int k = 0; L.used && k < n->n_shards; k++)
        free(L.used[k]);
    free(L.used);
    if (st != MT_OK)
        return st;
    snprintf(m->dtype, sizeof m->dtype, "%s", weights_dtype(&L));
    snprintf(m->held, sizeof m->held, "%s", held == MT_WEIGHTS_I8 ? "INT8" : held == MT_WEIGHTS_F16 ? "F16" : "F32");
    m->info.activation = m->act_name;
    m->info.source_lang = m->src_lang;
    m->info.target_lang = m->tgt_lang;
    m->info.dtype = m->dtype;
    m->info.weights = card ? "" : m->held;
    m->info.int8_kernel = !card && m->lm_pk.i8 ? mt_k_q8_isa_name(m->lm_pk.isa) : "";
    m->info.weight_bytes = card ? 0 : L.mapped_bytes + L.owned_bytes + m->packed_bytes;
    m->info.file_bytes = file_bytes;
    m->info.format = "safetensors";
    m->info.architecture = L.multimodal ? "gemma3" : FAMILY[n->family];
    m->info.head_dim = n->hd;
    m->info.rope_theta = n->theta;
    m->info.weights_file = m->weights_file;
    if (card) {                        /* a card keeps no mapping */
        for (int k = 0; k < n->n_shards; k++)
            mt_wfile_close(n->shards[k]);
        n->n_shards = 0;
    }
    return MT_OK;
}

void mt_llm_free(mt_model *m)
{
    mt_llm *n = m->llm;
    if (!n)
        return;
    for (int k = 0; k < n->n_shards; k++)
        mt_wfile_close(n->shards[k]);
    free(n->shards);
    free(n->layers);
    free(n);
    m->llm = NULL;
}
