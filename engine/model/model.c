/* model.c: load a Hugging Face MarianMT directory (config.json,
 * generation_config.json, tokenizer_config.json, model.safetensors and the
 * tokenizer files) into an immutable mt_model.
 *
 * Loader rules (docs/MARIAN.md sections 2-3): embeddings from
 * model.shared.weight (fallbacks: encoder then decoder embed_tokens), LM head
 * tied unless tie_word_embeddings is false, final_logits_bias zeros when
 * absent, positions always computed.  Every tensor we use is checked for name,
 * float dtype and shape against config.json before use.  F32 tensors are used
 * in place from the read-only mapping when aligned; F16/BF16 are converted
 * once.  q/k/v (and cross k/v) are fused into one matrix so a step does one
 * product instead of three.
 */
#include "formats/marian.h"
#include "mt_internal.h"
#include "kernels/parallel.h"
#include "formats/ptfile.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define REQUIRED INT_MIN

typedef struct {
    mt_model   *m;
    const char *dir;
    char        st_path[4096];
    char        cfg_file[4200];    /* where the config came from, for messages */
    int         pad_rows;          /* Marian: vocabulary-sized tensors lack their zero pad row (marian.h) */
    size_t      mapped_bytes;      /* F32 tensors used in place */
    size_t      owned_bytes;
    uint8_t    *pk_at;             /* next free byte of m->packed */
    size_t      pk_need;           /* sizing pass (m->packed still NULL): bytes the packs take */
    mt_weights  held;              /* how the products' weights are held: F32, F16 or INT8 */
    mt_q8_isa   isa;               /* INT8: the kernel that runs them */
    long        l2;                /* F32/F16: the L2 bytes their k blocks are sized for */
    int         card;              /* mt_model_load_card: the config and tokenizer only */
    size_t      card_file_bytes;   /* a card: the size of the weights file it names */
    const char *card_format;
    json_t     *cfg;              /* config.json, read once before the loader runs (NULL: none) */
} loader;

/* ---- small helpers --------------------------------------------------------------- */
static void *own(loader *L, size_t bytes, mt_err *err)
{
    void *p = mt_model_own(L->m, bytes, err);
    if (p)
        L->owned_bytes += bytes;
    return p;
}

/* Read and parse dir/name.  Missing: MT_ERR_IO when required, else *out = NULL and MT_OK. */
static mt_status read_json(const char *dir, const char *name, int required, json_t **out, mt_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return mt_read_json_object(path, required, out, err);
}

/* Integer key; def = REQUIRED makes it mandatory. Booleans are accepted as 0/1. */
static mt_status cfg_int(const char *file, json_t *root, const char *key, int def, int *out, mt_err *err)
{
    json_t *j = root ? json_object_get(root, key) : NULL;
    if (!j || json_is_null(j)) {
        if (def == REQUIRED)
            return mt_err_set(err, MT_ERR_FORMAT, "%s: missing required key '%s'", file, key);
        *out = def;
        return MT_OK;
    }
    if (json_is_boolean(j)) {
        *out = json_is_true(j);
        return MT_OK;
    }
    if (!json_is_integer(j) || json_integer_value(j) < INT_MIN / 2 || json_integer_value(j) > INT_MAX / 2)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: '%s' must be an integer", file, key);
    *out = (int)json_integer_value(j);
    return MT_OK;
}

static mt_status cfg_range(const char *file, const char *key, int v, int lo, int hi, mt_err *err)
{
    if (v < lo || v > hi)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: '%s' = %d is outside [%d, %d]", file, key, v, lo, hi);
    return MT_OK;
}

static void cfg_str(json_t *root, const char *key, const char *def, char *out, size_t cap)
{
    json_t *j = root ? json_object_get(root, key) : NULL;
    snprintf(out, cap, "%s", json_is_string(j) ? json_string_value(j) : def);
}

/* ---- config.json ------------------------------------------------------------------ */
static mt_status parse_activation(mt_model *m, const char *file, json_t *cfg, mt_err *err)
{
    /* the class defaults: MarianConfig's gelu, M2M100Config's relu */
    cfg_str(cfg, "activation_function", m->prenorm ? "relu" : "gelu", m->act_name, sizeof m->act_name);
    if (!strcmp(m->act_name, "swish") || !strcmp(m->act_name, "silu"))
        m->act = MT_ACT_SWISH;
    else if (!strcmp(m->act_name, "relu"))
        m->act = MT_ACT_RELU;
    else if (!strcmp(m->act_name, "gelu"))
        m->act = MT_ACT_GELU;
    else
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: unknown activation_function '%s' (swish, silu, relu, "
                          "gelu are supported)", file, m->act_name);
    return MT_OK;
}

/* model_type: "marian" (or none: Marian releases' configs), or "m2m_100"
 * (M2M-100 and NLLB-200: *m2m = 1, their checks in m2m.c).  The legacy
 * BART-era switches must have the Marian values. */
static mt_status check_architecture(const char *file, json_t *cfg, int *m2m, mt_err *err)
{
    json_t *mt = json_object_get(cfg, "model_type");
    *m2m = json_is_string(mt) && !strcmp(json_string_value(mt), "m2m_100");
    if (*m2m)
        return mt_m2m_check_config(file, cfg, err);
    static const char *must_be_false[] = {"normalize_before", "add_final_layer_norm"};
    for (size_t i = 0; i < sizeof must_be_false / sizeof *must_be_false; i++)
        if (json_is_true(json_object_get(cfg, must_be_false[i])))
            return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: '%s' = true is not a Marian architecture", file,
                              must_be_false[i]);
    if (json_is_string(mt) && strcmp(json_string_value(mt), "marian") != 0)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: model_type '%s' is not 'marian' or 'm2m_100'%s", file,
                          json_string_value(mt), mt_m2m_refusal_hint(json_string_value(mt)));
    return MT_OK;
}

/* config.json's switches and special ids, as read (checked by check_config). */
typedef struct { int m2m, scale, dvocab, sh, tie, pad, eos, start, norm_emb; } marian_cfg;

static mt_status read_config(const char *file, json_t *cfg, mt_model_info *info, marian_cfg *c, mt_err *err)
{
    mt_status st;
#define INT(key, def, dst) if ((st = cfg_int(file, cfg, key, def, dst, err)) != MT_OK) return st
    INT("d_model", REQUIRED, &info->d_model);
    INT("encoder_layers", REQUIRED, &info->enc_layers);
    INT("decoder_layers", REQUIRED, &info->dec_layers);
    INT("encoder_attention_heads", REQUIRED, &info->enc_heads);
    INT("decoder_attention_heads", REQUIRED, &info->dec_heads);
    INT("encoder_ffn_dim", REQUIRED, &info->enc_ffn);
    INT("decoder_ffn_dim", REQUIRED, &info->dec_ffn);
    INT("vocab_size", REQUIRED, &info->vocab_size);
    INT("max_position_embeddings", REQUIRED, &info->max_positions);
    INT("pad_token_id", REQUIRED, &c->pad);
    INT("eos_token_id", REQUIRED, &c->eos);
    /* the class defaults: Marian starts from pad, M2M-100 from eos; MarianConfig's
     * scale_embedding is False, M2M100Config's True */
    INT("decoder_start_token_id", c->m2m ? c->eos : c->pad, &c->start);
    INT("scale_embedding", c->m2m, &c->scale);
    INT("decoder_vocab_size", info->vocab_size, &c->dvocab);
    INT("share_encoder_decoder_embeddings", 1, &c->sh);
    INT("tie_word_embeddings", 1, &c->tie);
    INT("normalize_embedding", 0, &c->norm_emb);
    INT("num_beams", 1, &info->default_beam);
    INT("early_stopping", 0, &info->early_stopping);
    INT("max_length", 20, &info->default_max_length);           /* GenerationConfig default */
#undef INT
    return MT_OK;
}

static mt_status check_config(const char *file, const mt_model_info *info, const marian_cfg *c, mt_err *err)
{
    mt_status st;
#define RANGE(key, v, lo, hi) if ((st = cfg_range(file, key, v, lo, hi, err)) != MT_OK) return st
    RANGE("d_model", info->d_model, 2, 1 << 16);
    RANGE("encoder_layers", info->enc_layers, 1, 1024);
    RANGE("decoder_layers", info->dec_layers, 1, 1024);
    RANGE("encoder_attention_heads", info->enc_heads, 1, info->d_model);
    RANGE("decoder_attention_heads", info->dec_heads, 1, info->d_model);
    RANGE("encoder_ffn_dim", info->enc_ffn, 1, 1 << 20);
    RANGE("decoder_ffn_dim", info->dec_ffn, 1, 1 << 20);
    RANGE("vocab_size", info->vocab_size, 2, 1 << 24);
    RANGE("decoder_vocab_size", c->dvocab, 2, 1 << 24);
    RANGE("max_position_embeddings", info->max_positions, 2, 1 << 20);
    /* the special ids are target-side ids (they index the logits) */
    RANGE("pad_token_id", c->pad, 0, c->dvocab - 1);
    RANGE("eos_token_id", c->eos, 0, c->dvocab - 1);
    RANGE("decoder_start_token_id", c->start, 0, c->dvocab - 1);
#undef RANGE
    if (c->m2m && info->d_model < 4)           /* fairseq's frequencies divide by d_model / 2 - 1 */
        return mt_err_set(err, MT_ERR_FORMAT, "%s: 'd_model' = %d: M2M-100's positions need at least 4", file,
                          info->d_model);
    if (info->d_model % info->enc_heads || info->d_model % info->dec_heads)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: d_model %d is not divisible by the attention heads (encoder %d, "
                          "decoder %d)", file, info->d_model, info->enc_heads, info->dec_heads);
    if (c->dvocab != info->vocab_size && c->sh)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: decoder_vocab_size %d differs from vocab_size %d but "
                          "share_encoder_decoder_embeddings is true (one table cannot have two sizes)", file,
                          c->dvocab, info->vocab_size);
    return MT_OK;
}

/* generation_config.json's "max_length_factor" (a number in (0, 1000]) and
 * "max_length_extra" (an integer in [0, 1024], default 10): the length cap. */
static mt_status cfg_length_cap(const char *file, json_t *gen, mt_model_info *info, mt_err *err)
{
    json_t *f = json_object_get(gen, "max_length_factor");
    mt_status st = cfg_int(file, gen, "max_length_extra", 10, &info->default_length_extra, err);
    if (st == MT_OK)
        st = cfg_range(file, "max_length_extra", info->default_length_extra, 0, 1024, err);
    if (st != MT_OK || !f || json_is_null(f))
        return st;
    double x = json_number_value(f);
    if (!json_is_number(f) || !(x > 0 && x <= MT_LENGTH_FACTOR_NONE))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: 'max_length_factor' must be a number in (0, %g]", file,
                          MT_LENGTH_FACTOR_NONE);
    info->default_length_factor = (float)x;
    return MT_OK;
}

/* generation_config.json's "loop_no_repeat_ngram_size" (an integer in [0, 16]). */
static mt_status cfg_loop_guard(const char *file, json_t *gen, mt_model_info *info, mt_err *err)
{
    mt_status st = cfg_int(file, gen, "loop_no_repeat_ngram_size", 0, &info->default_loop_ngram, err);
    return st == MT_OK ? cfg_range(file, "loop_no_repeat_ngram_size", info->default_loop_ngram, 0, 16, err) : st;
}

/* generation_config.json's "copy_guard" (a boolean; 0 / 1 taken too). */
static mt_status cfg_copy_guard(const char *file, json_t *gen, mt_model_info *info, mt_err *err)
{
    mt_status st = cfg_int(file, gen, "copy_guard", 0, &info->default_copy_guard, err);
    return st == MT_OK ? cfg_range(file, "copy_guard", info->default_copy_guard, 0, 1, err) : st;
}

/* generation_config.json (may be NULL) overrides the beam and max_length. */
static mt_status parse_generation(const loader *L, json_t *gen, mt_model_info *info, mt_err *err)
{
    mt_status st;
    if (gen) {
        char gfile[4096];
        snprintf(gfile, sizeof gfile, "%s/generation_config.json", L->dir);
        if ((st = cfg_int(gfile, gen, "num_beams", info->default_beam, &info->default_beam, err)) != MT_OK ||
            (st = cfg_int(gfile, gen, "early_stopping", info->early_stopping, &info->early_stopping, err)) != MT_OK ||
            (st = cfg_int(gfile, gen, "max_length", info->default_max_length, &info->default_max_length, err)) != MT_OK ||
            (st = cfg_length_cap(gfile, gen, info, err)) != MT_OK || (st = cfg_loop_guard(gfile, gen, info, err)) != MT_OK ||
            (st = cfg_copy_guard(gfile, gen, info, err)) != MT_OK)
            return st;
    }
    if (info->default_beam < 1)
        info->default_beam = 1;
    if (info->default_max_length < 2)
        info->default_max_length = 2;
    return MT_OK;
}

static mt_status parse_config(loader *L, json_t *cfg, json_t *gen, mt_err *err)
{
    mt_model *m = L->m;
    mt_model_info *info = &m->info;
    const char *file = L->cfg_file;
    mt_status st;
    marian_cfg c = {0};
    if ((st = check_architecture(file, cfg, &c.m2m, err)) != MT_OK)
        return st;
    m->prenorm = c.m2m;
    if ((st = read_config(file, cfg, info, &c, err)) != MT_OK || (st = check_config(file, info, &c, err)) != MT_OK ||
        (st = parse_activation(m, file, cfg, err)) != MT_OK || (st = parse_generation(L, gen, info, err)) != MT_OK)
        return st;
    info->pad_id = c.pad;
    info->eos_id = c.eos;
    info->decoder_start_id = c.start;
    m->d = info->d_model;
    info->src_vocab_size = info->vocab_size;
    info->vocab_size = c.dvocab;
    m->V = c.dvocab;
    m->V_src = info->src_vocab_size;
    m->emb_ln = c.norm_emb;
    m->enc_heads = info->enc_heads;
    m->dec_heads = info->dec_heads;
    m->enc_ffn = info->enc_ffn;
    m->dec_ffn = info->dec_ffn;
    m->embed_scale = c.scale ? (float)sqrt((double)m->d) : 1.0f;
    m->shared_emb = c.sh;
    m->tied_head = c.tie;
    return MT_OK;
}

/* ---- tensors ------------------------------------------------------------------- */
/* Find name and check it is a float tensor of shape [d0] or [d0][d1] (d1 = 0: rank 1). */
static mt_status find_tensor(loader *L, const char *name, int64_t d0, int64_t d1, const mt_tensor **out,
                             mt_err *err)
{
    const mt_tensor *t = mt_wfile_find(L->m->st, name);
    *out = NULL;
    if (!t)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: missing tensor '%s'", L->st_path, name);
    mt_status st = mt_check_tensor(L->st_path, name, t, d0, d1, 1, err);
    if (st != MT_OK)
        return st;
    *out = t;
    return MT_OK;
}

/* A float32 view of the tensor: in place when F32 and aligned, else a converted copy. */
static mt_status get_f32(loader *L, const char *name, int64_t d0, int64_t d1, const float **out, mt_err *err)
{
    const mt_tensor *t;
    mt_status st = find_tensor(L, name, d0, d1, &t, err);
    if (st != MT_OK)
        return st;
    size_t n = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    if (t->dtype == MT_DT_F32 && !(t->transposed && t->rank == 2) && ((uintptr_t)t->data % sizeof(float)) == 0) {
        *out = t->data;
        L->mapped_bytes += n * sizeof(float);
        return MT_OK;
    }
    float *dst = own(L, n * sizeof(float), err);
    if (!dst)
        return MT_ERR_NOMEM;
    mt_tensor_to_f32(t, dst, n);
    mt_release_tensor(t);
    *out = dst;
    return MT_OK;
}

/* A vocabulary-sized tensor [rows][d] (d = 0: [rows]).  A Marian release
 * stores rows - 1 of them: the last, the pad token's, is zero and is added
 * here (as Hugging Face's converter adds it to the file). */
static mt_status get_vocab_f32(loader *L, const char *name, int64_t rows, int64_t d, const float **out, mt_err *err)
{
    if (!L->pad_rows)
        return get_f32(L, name, rows, d, out, err);
    const mt_tensor *t;
    mt_status st = find_tensor(L, name, rows - L->pad_rows, d, &t, err);
    if (st != MT_OK)
        return st;
    size_t width = (size_t)(d ? d : 1), stored = (size_t)(rows - L->pad_rows) * width;
    float *dst = own(L, (size_t)rows * width * sizeof(float), err);      /* zeroed: the pad row */
    if (!dst)
        return MT_ERR_NOMEM;
    mt_tensor_to_f32(t, dst, stored);
    mt_release_tensor(t);
    *out = dst;
    return MT_OK;
}

/* Load nparts [d][in] matrices (and their [d] biases) stacked into one [nparts*d][in]. */
static mt_status get_fused(loader *L, const char *prefix, const char *const *parts, int nparts, int d, int in,
                           mt_lin *out, mt_err *err)
{
    float *w = own(L, sizeof(float) * (size_t)nparts * d * in, err);
    float *b = own(L, sizeof(float) * (size_t)nparts * d, err);
    if (!w || !b)
        return MT_ERR_NOMEM;
    for (int i = 0; i < nparts; i++) {
        char name[256];
        const mt_tensor *t;
        mt_status st;
        snprintf(name, sizeof name, "%s.%s.weight", prefix, parts[i]);
        if ((st = find_tensor(L, name, d, in, &t, err)) != MT_OK)
            return st;
        mt_tensor_to_f32(t, w + (size_t)i * d * in, (size_t)d * in);
        mt_release_tensor(t);
        snprintf(name, sizeof name, "%s.%s.bias", prefix, parts[i]);
        if ((st = find_tensor(L, name, d, 0, &t, err)) != MT_OK)
            return st;
        mt_tensor_to_f32(t, b + (size_t)i * d, (size_t)d);
    }
    out->w = w;
    out->b = b;
    return MT_OK;
}

static mt_status get_lin(loader *L, const char *prefix, const char *part, int out_dim, int in_dim, mt_lin *o,
                         mt_err *err)
{
    char name[256];
    mt_status st;
    snprintf(name, sizeof name, "%s.%s.weight", prefix, part);
    if ((st = get_f32(L, name, out_dim, in_dim, &o->w, err)) != MT_OK)
        return st;
    snprintf(name, sizeof name, "%s.%s.bias", prefix, part);
    return get_f32(L, name, out_dim, 0, &o->b, err);
}

static mt_status get_ln(loader *L, const char *prefix, const char *part, int d, mt_ln *o, mt_err *err)
{
    char name[256];
    mt_status st;
    snprintf(name, sizeof name, "%s.%s.weight", prefix, part);
    if ((st = get_f32(L, name, d, 0, &o->g, err)) != MT_OK)
        return st;
    snprintf(name, sizeof name, "%s.%s.bias", prefix, part);
    return get_f32(L, name, d, 0, &o->b, err);
}

static const char *const QKV[] = {"q_proj", "k_proj", "v_proj"};

static mt_status load_encoder(loader *L, mt_err *err)
{
    mt_model *m = L->m;
    int d = m->d, F = m->enc_ffn;
    for (int i = 0; i < m->info.enc_layers; i++) {
        char p[128], pa[160];
        mt_enc_layer *l = &m->enc[i];
        mt_status st;
        snprintf(p, sizeof p, "model.encoder.layers.%d", i);
        snprintf(pa, sizeof pa, "%s.self_attn", p);
        if ((st = get_fused(L, pa, QKV, 3, d, d, &l->qkv, err)) != MT_OK ||
            (st = get_lin(L, pa, "out_proj", d, d, &l->out, err)) != MT_OK ||
            (st = get_ln(L, p, "self_attn_layer_norm", d, &l->attn_ln, err)) != MT_OK ||
            (st = get_lin(L, p, "fc1", F, d, &l->fc1, err)) != MT_OK ||
            (st = get_lin(L, p, "fc2", d, F, &l->fc2, err)) != MT_OK ||
            (st = get_ln(L, p, "final_layer_norm", d, &l->ffn_ln, err)) != MT_OK)
            return st;
    }
    return MT_OK;
}

static mt_status load_decoder(loader *L, mt_err *err)
{
    mt_model *m = L->m;
    int d = m->d, F = m->dec_ffn;
    for (int i = 0; i < m->info.dec_layers; i++) {
        char p[128], ps[160], pc[160];
        mt_dec_layer *l = &m->dec[i];
        mt_status st;
        snprintf(p, sizeof p, "model.decoder.layers.%d", i);
        snprintf(ps, sizeof ps, "%s.self_attn", p);
        snprintf(pc, sizeof pc, "%s.encoder_attn", p);
        if ((st = get_fused(L, ps, QKV, 3, d, d, &l->self_qkv, err)) != MT_OK ||
            (st = get_lin(L, ps, "out_proj", d, d, &l->self_out, err)) != MT_OK ||
            (st = get_ln(L, p, "self_attn_layer_norm", d, &l->self_ln, err)) != MT_OK ||
            (st = get_lin(L, pc, "q_proj", d, d, &l->cross_q, err)) != MT_OK ||
            (st = get_fused(L, pc, QKV + 1, 2, d, d, &l->cross_kv, err)) != MT_OK ||
            (st = get_lin(L, pc, "out_proj", d, d, &l->cross_out, err)) != MT_OK ||
            (st = get_ln(L, p, "encoder_attn_layer_norm", d, &l->cross_ln, err)) != MT_OK ||
            (st = get_lin(L, p, "fc1", F, d, &l->fc1, err)) != MT_OK ||
            (st = get_lin(L, p, "fc2", d, F, &l->fc2, err)) != MT_OK ||
            (st = get_ln(L, p, "final_layer_norm", d, &l->ffn_ln, err)) != MT_OK)
            return st;
    }
    return MT_OK;
}

/* Embeddings, LM head and final_logits_bias (spec 2.3 loader rule). */
static mt_status load_embeddings(loader *L, int shared, int tied, mt_err *err)
{
    mt_model *m = L->m;
    int V = m->V, d = m->d;
    mt_status st;
    if (m->emb_ln && ((st = get_ln(L, "model.encoder", "layernorm_embedding", d, &m->enc_emb_ln, err)) != MT_OK ||
                      (st = get_ln(L, "model.decoder", "layernorm_embedding", d, &m->dec_emb_ln, err)) != MT_OK))
        return st;
    if (shared) {
        static const char *const names[] = {"model.shared.weight", "model.encoder.embed_tokens.weight",
                                            "model.decoder.embed_tokens.weight"};
        const char *use = names[0];
        for (int i = 0; i < 3; i++)
            if (mt_wfile_find(m->st, names[i])) {
                use = names[i];
                break;
            }
        if ((st = get_vocab_f32(L, use, V, d, &m->enc_emb, err)) != MT_OK)
            return st;
        m->dec_emb = m->enc_emb;
    } else if ((st = get_vocab_f32(L, "model.encoder.embed_tokens.weight", m->V_src, d, &m->enc_emb, err)) != MT_OK ||
               (st = get_vocab_f32(L, "model.decoder.embed_tokens.weight", V, d, &m->dec_emb, err)) != MT_OK) {
        return st;
    }
    if (tied)
        m->lm_head = m->dec_emb;
    else if ((st = get_vocab_f32(L, "lm_head.weight", V, d, &m->lm_head, err)) != MT_OK)
        return st;
    if (!m->prenorm && mt_wfile_find(m->st, "final_logits_bias"))    /* M2M-100's head has no bias */
        return get_vocab_f32(L, "final_logits_bias", V, 0, &m->final_bias, err);
    float *zeros = own(L, sizeof(float) * (size_t)V, err);   /* HF: missing bias = zeros */
    if (!zeros)
        return MT_ERR_NOMEM;
    m->final_bias = zeros;
    return MT_OK;
}

/* Marian: PE[pos][k] = sin(pos / 10000^(2k/d)), PE[pos][half + k] = cos(...),
 * in double; M2M-100: fairseq's table from padding_idx + 1 (m2m.c). */
static mt_status compute_positions(loader *L, mt_err *err)
{
    mt_model *m = L->m;
    int d = m->d, n = m->info.max_positions, half = d % 2 ? d / 2 + 1 : d / 2;
    float *pe = own(L, sizeof(float) * (size_t)n * d, err);
    if (!pe)
        return MT_ERR_NOMEM;
    m->pos = pe;
    if (m->prenorm) {
        mt_m2m_positions(d, m->info.pad_id, n, pe);
        return MT_OK;
    }
    for (int pos = 0; pos < n; pos++) {
        float *row = pe + (size_t)pos * d;
        for (int k = 0; k < half; k++)
            row[k] = (float)sin(pos / pow(10000.0, (2.0 * k) / d));
        for (int k = 0; k < d / 2; k++)
            row[half + k] = (float)cos(pos / pow(10000.0, (2.0 * k) / d));
    }
    return MT_OK;
}

/* The vocabularies must fit the embedding tables, and the target's </s> must be
 * the config's eos (it ends hypotheses). */
static mt_status check_tokenizer(loader *L, mt_err *err)
{
    mt_model *m = L->m;
    int sv = mt_tokenizer_vocab_size(m->tok), tv = mt_tokenizer_target_vocab_size(m->tok);
    if (sv > m->V_src)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: the source vocabulary has %d entries but the model's source "
                          "embeddings have %d rows (vocab_size)", L->dir, sv, m->V_src);
    if (tv > m->V)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: the target vocabulary has %d entries but the model's output "
                          "layer has %d (decoder_vocab_size)", L->dir, tv, m->V);
    if (mt_tokenizer_target_eos(m->tok) != m->info.eos_id)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: the target vocabulary's </s> is id %d but the config's "
                          "eos_token_id is %d", L->dir, (int)mt_tokenizer_target_eos(m->tok), (int)m->info.eos_id);
    return MT_OK;
}

/* Marian's source.spm / target.spm / vocab.json; M2M-100's and NLLB-200's
 * sentencepiece.bpe.model with their fairseq ids (tokenizer.h, multi.c). */
static mt_status load_tokenizer(loader *L, mt_err *err)
{
    mt_status st = L->m->prenorm ? mt_tokenizer_load_multi(L->dir, &L->m->tok, err)
                                 : mt_tokenizer_load(L->dir, &L->m->tok, err);
    return st != MT_OK ? st : check_tokenizer(L, err);
}


/* A Hugging Face directory's weights: model.safetensors, else pytorch_model.bin
 * (what most Helsinki-NLP repositories ship). */
static mt_status open_weights(loader *L, mt_err *err)
{
    mt_model *m = L->m;
    if (mt_path_exists(L->dir, "model.safetensors", L->st_path, sizeof L->st_path)) {
        snprintf(m->weights_file, sizeof m->weights_file, "model.safetensors");
        return mt_st_open(L->st_path, &m->st, err);
    }
    if (mt_path_exists(L->dir, "pytorch_model.bin", L->st_path, sizeof L->st_path)) {
        snprintf(m->weights_file, sizeof m->weights_file, "pytorch_model.bin");
        return mt_pt_open(L->st_path, &m->st, err);
    }
    return mt_err_set(err, MT_ERR_IO, "%s: no weights (model.safetensors or pytorch_model.bin)", L->dir);
}

/* A card: which weights file the directory holds and its size, without
 * opening it (open_weights' choice). */
static mt_status card_weights(loader *L, mt_err *err)
{
    static const struct { const char *file, *format; } forms[] = {
        { "model.safetensors", "safetensors" }, { "pytorch_model.bin", "pytorch" },
    };
    struct stat sb;
    for (int i = 0; i < 2; i++)
        if (mt_path_exists(L->dir, forms[i].file, L->st_path, sizeof L->st_path) && stat(L->st_path, &sb) == 0) {
            snprintf(L->m->weights_file, sizeof L->m->weights_file, "%s", forms[i].file);
            L->card_file_bytes = (size_t)sb.st_size;
            L->card_format = forms[i].format;
            return MT_OK;
        }
    return mt_err_set(err, MT_ERR_IO, "%s: no weights (model.safetensors or pytorch_model.bin)", L->dir);
}

/* The config parsed, the weights opened: every tensor the engine uses. */
static mt_status load_tensors(loader *L, json_t *cfg, json_t *gen, mt_err *err)
{
    mt_model *m = L->m;
    mt_status st;
    if ((st = parse_config(L, cfg, gen, err)) != MT_OK)
        return st;
    m->enc = calloc((size_t)m->info.enc_layers, sizeof *m->enc);
    m->dec = calloc((size_t)m->info.dec_layers, sizeof *m->dec);
    if (!m->enc || !m->dec)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if ((st = load_embeddings(L, m->shared_emb, m->tied_head, err)) != MT_OK || (st = load_encoder(L, err)) != MT_OK ||
        (st = load_decoder(L, err)) != MT_OK)
        return st;
    if (m->prenorm && ((st = get_ln(L, "model.encoder", "layer_norm", m->d, &m->enc_final_ln, err)) != MT_OK ||
                       (st = get_ln(L, "model.decoder", "layer_norm", m->d, &m->dec_final_ln, err)) != MT_OK))
        return st;
    return compute_positions(L, err);
}

/* A Hugging Face directory: config.json, generation_config.json,
 * tokenizer_config.json, the weights (open_weights) and the tokenizer files. */
static mt_status load_hf(loader *L, mt_err *err)
{
    mt_model *m = L->m;
    json_t *cfg = NULL, *gen = NULL, *tcfg = NULL;
    mt_status st;
    snprintf(L->cfg_file, sizeof L->cfg_file, "%s/config.json", L->dir);
    if (L->cfg)                         /* read once, by load_dir */
        cfg = json_incref(L->cfg);
    if ((st = cfg ? MT_OK : read_json(L->dir, "config.json", 1, &cfg, err)) == MT_OK &&
        (st = read_json(L->dir, "generation_config.json", 0, &gen, err)) == MT_OK &&
        (st = read_json(L->dir, "tokenizer_config.json", 0, &tcfg, err)) == MT_OK &&
        (st = L->card ? card_weights(L, err) : open_weights(L, err)) == MT_OK &&
        (st = L->card ? parse_config(L, cfg, gen, err) : load_tensors(L, cfg, gen, err)) == MT_OK) {
        cfg_str(tcfg, "source_lang", "", m->src_lang, sizeof m->src_lang);
        cfg_str(tcfg, "target_lang", "", m->tgt_lang, sizeof m->tgt_lang);
        st = load_tokenizer(L, err);
    }
    json_decref(cfg);
    json_decref(gen);
    json_decref(tcfg);
    return st;
}

/* An original Marian / OPUS-MT release (marian.h): the same model, read
 * through the Hugging Face names and config marian.c derives. */
static mt_status load_marian(loader *L, mt_err *err)
{
    mt_model *m = L->m;
    mt_marian_dir d;
    mt_status st = mt_marian_open(L->dir, &d, err);
    if (st != MT_OK)
        return st;
    if (L->card) {                      /* the config marian.c derived; the mapping is closed below */
        L->card_file_bytes = d.weights->size;
        L->card_format = d.weights->format;
    } else {
        m->st = d.weights;              /* the model owns the mapping from here */
        d.weights = NULL;
    }
    L->pad_rows = d.pad_rows;
    const char *base = strrchr(d.model_path, '/') ? strrchr(d.model_path, '/') + 1 : d.model_path;
    snprintf(m->weights_file, sizeof m->weights_file, "%.*s", (int)sizeof m->weights_file - 1, base);
    snprintf(L->st_path, sizeof L->st_path, "%s", d.model_path);
    snprintf(L->cfg_file, sizeof L->cfg_file, "%s (special:model.yml)", d.model_path);
    if ((st = L->card ? parse_config(L, d.config, NULL, err) : load_tensors(L, d.config, NULL, err)) == MT_OK) {
        mt_tokenizer_files f = {
            .src_spm = d.src_spm, .tgt_spm = d.tgt_spm, .src_vocab = d.src_vocab_path,
            .tgt_vocab = d.joint_vocab ? NULL : d.tgt_vocab_path, .src_vocab_obj = d.src_vocab,
            .tgt_vocab_obj = d.joint_vocab ? NULL : d.tgt_vocab,
        };
        if ((st = mt_tokenizer_load_files(&f, &m->tok, err)) == MT_OK)
            st = check_tokenizer(L, err);
    }
    mt_marian_close(&d);
    return st;
}

static mt_status load_all(loader *L, mt_err *err)
{
    struct stat sb;
    char path[4096];
    if (stat(L->dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return mt_err_set(err, MT_ERR_IO, "%s: model directory not found", L->dir);
    if (!mt_path_exists(L->dir, "config.json", path, sizeof path) && mt_marian_detect(L->dir))
        return load_marian(L, err);
    return load_hf(L, err);
}

/* ---- packed products; F16 weights -------------------------------------------------------
 * Every Linear and the vocabulary projection are repacked once, here, into
 * the panels of mt_k_linear_packed (engine/kernels/linear.c), as CTranslate2 packs
 * at load: the kernel then streams each panel sequentially and needs no
 * horizontal sums.  The row-major arrays are dropped: owned ones freed,
 * mapped ones released from this process (madvise), the mapping staying for
 * what is used in place (embedding tables, biases, norms).
 *
 * F16 (mt_model_params.weights): a batch-1 step's speed is the bytes of its
 * weights over the memory bandwidth, so they can be held at half precision.
 * Then EVERY weight matrix is rounded to F16 once (round to nearest even):
 * the packed ones and the embedding tables are stored as F16 and converted
 * exactly in registers.  The model is exactly "these weights rounded to F16",
 * which a reference reproduces (bench/bench_torch.py --weights f16);
 * activations stay F32.  On an F16 checkpoint the rounding is exact. */
static int in_map(const loader *L, const void *p)
{
    const uint8_t *q = p;
    return q >= L->m->st->map && q < L->m->st->map + L->m->st->size;
}

/* Forget array p of n floats: freed if owned; if mapped, its whole pages are
 * given back (they were read once, to pack). */
static void drop(loader *L, const float *p, size_t n)
{
    mt_model *m = L->m;
    if (in_map(L, p)) {
        L->mapped_bytes -= n * sizeof(float);
        mt_release_pages(p, n * sizeof(float));
        return;
    }
    if (mt_model_disown(m, p))
        L->owned_bytes -= n * sizeof(float);
}

/* bytes of one packed matrix in m->packed (64-byte aligned) */
static size_t pk_bytes(const loader *L, int in, int out)
{
    return mt_held_bytes(L->held, in, out);
}

/* Pack w into the arena; in the sizing pass (no arena yet) only count its bytes. */
static mt_status pack(loader *L, const float *w, int in, int out, mt_packed *pk, mt_err *err)
{
    mt_model *m = L->m;
    size_t need = pk_bytes(L, in, out);
    if (!m->packed) {
        L->pk_need += need;
        return MT_OK;
    }
    if (L->pk_at + need > (uint8_t *)m->packed + m->packed_bytes)
        return mt_err_set(err, MT_ERR_INTERNAL, "packed weights: arena too small for a [%d][%d] matrix", out, in);
    mt_held_pack(L->held, L->isa, L->l2, w, in, out, L->pk_at, pk);
    L->pk_at += need;
    return MT_OK;
}

/* A Linear: packed, its row-major weights dropped. */
static mt_status pack_lin(loader *L, mt_lin *l, int in, int out, mt_err *err)
{
    mt_status st = pack(L, l->w, in, out, &l->pk, err);
    if (st == MT_OK && L->m->packed) {
        drop(L, l->w, (size_t)in * out);
        l->w = NULL;
    }
    return st;
}

static mt_status half_table(loader *L, const float *t, size_t n, const uint16_t **out, mt_err *err)
{
    uint16_t *h = own(L, n * sizeof(uint16_t), err);
    if (!h)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        h[i] = mt_f32_to_f16(t[i]);
    *out = h;
    return MT_OK;
}

static mt_status pack_layers(loader *L, mt_err *err)
{
    mt_model *m = L->m;
    int d = m->d;
    mt_status st = MT_OK;
    for (int i = 0; i < m->info.enc_layers && st == MT_OK; i++) {
        mt_enc_layer *l = &m->enc[i];
        int F = m->enc_ffn;
        if ((st = pack_lin(L, &l->qkv, d, 3 * d, err)) != MT_OK ||
            (st = pack_lin(L, &l->out, d, d, err)) != MT_OK ||
            (st = pack_lin(L, &l->fc1, d, F, err)) != MT_OK)
            break;
        st = pack_lin(L, &l->fc2, F, d, err);
    }
    for (int i = 0; i < m->info.dec_layers && st == MT_OK; i++) {
        mt_dec_layer *l = &m->dec[i];
        int F = m->dec_ffn;
        if ((st = pack_lin(L, &l->self_qkv, d, 3 * d, err)) != MT_OK ||
            (st = pack_lin(L, &l->self_out, d, d, err)) != MT_OK ||
            (st = pack_lin(L, &l->cross_q, d, d, err)) != MT_OK ||
            (st = pack_lin(L, &l->cross_kv, d, 2 * d, err)) != MT_OK ||
            (st = pack_lin(L, &l->cross_out, d, d, err)) != MT_OK ||
            (st = pack_lin(L, &l->fc1, d, F, err)) != MT_OK)
            break;
        st = pack_lin(L, &l->fc2, F, d, err);
    }
    return st;
}

static mt_status prepare_weights(loader *L, mt_err *err)
{
    mt_model *m = L->m;
    int d = m->d, V = m->V;
    mt_status st = MT_OK;
    for (int pass = 0; pass < 2 && st == MT_OK; pass++) {      /* 0: size the arena, 1: pack */
        if (pass == 1) {
            m->packed_bytes = L->pk_need;
            if (!(m->packed = mt_huge_alloc(m->packed_bytes)))
                return mt_err_set(err, MT_ERR_NOMEM, "cannot allocate %zu MB of packed weights",
                                  m->packed_bytes >> 20);
            L->pk_at = m->packed;
            L->owned_bytes += m->packed_bytes;
        }
        if ((st = pack_layers(L, err)) == MT_OK)
            st = pack(L, m->lm_head, d, V, &m->lm_pk, err);    /* lm_head may alias an embedding table */
    }
    if (st == MT_OK && L->held == MT_WEIGHTS_I8)   /* the embedding tables stay F32 (a gather reads a row per token) */
        snprintf(m->held, sizeof m->held, "INT8");
    if (st != MT_OK || L->held != MT_WEIGHTS_F16)
        return st;
    size_t n = (size_t)V * d, n_src = (size_t)m->V_src * d;
    if ((st = half_table(L, m->enc_emb, n_src, &m->enc_emb16, err)) != MT_OK)
        return st;
    if (m->dec_emb == m->enc_emb)
        m->dec_emb16 = m->enc_emb16;
    else if ((st = half_table(L, m->dec_emb, n, &m->dec_emb16, err)) != MT_OK)
        return st;
    const float *tables[3] = {m->enc_emb, m->dec_emb, m->lm_head};
    for (int i = 0; i < 3; i++) {
        int first = 1;
        for (int j = 0; j < i; j++)
            first &= tables[j] != tables[i];
        if (first)
            drop(L, tables[i], i == 0 ? n_src : n);
    }
    m->enc_emb = m->dec_emb = m->lm_head = NULL;
    snprintf(m->held, sizeof m->held, "F16");
    return MT_OK;
}

/* A card's info: the config's; of the weights only the file (their dtype,
 * how they would be held and their bytes are known once loaded). */
static void fill_card_info(loader *L)
{
    mt_model *m = L->m;
    m->info.activation = m->act_name;
    m->info.source_lang = m->src_lang;
    m->info.target_lang = m->tgt_lang;
    m->info.dtype = m->dtype;
    m->info.weights = "";
    m->info.int8_kernel = "";
    m->info.weight_bytes = 0;
    m->info.file_bytes = L->card_file_bytes;
    m->info.format = L->card_format ? L->card_format : "";
    m->info.architecture = m->prenorm ? "m2m_100" : "marian";
    m->info.weights_file = m->weights_file;
}

/* Dtype of the weights on disk: the one of the embedding matrix. */
static void fill_info(loader *L)
{
    mt_model *m = L->m;
    const mt_tensor *t = NULL;
    for (int i = 0; i < m->st->n_tensors && !t; i++)
        if (m->st->tensors[i].dtype == MT_DT_F32 || m->st->tensors[i].dtype == MT_DT_F16 ||
            m->st->tensors[i].dtype == MT_DT_BF16)
            t = &m->st->tensors[i];
    snprintf(m->dtype, sizeof m->dtype, "%s", t ? t->dtype_name : "F32");
    m->info.activation = m->act_name;
    m->info.source_lang = m->src_lang;
    m->info.target_lang = m->tgt_lang;
    m->info.dtype = m->dtype;
    m->info.weight_bytes = L->mapped_bytes + L->owned_bytes;
    m->info.weights = m->held;
    m->info.int8_kernel = m->lm_pk.i8 ? mt_k_q8_isa_name(m->lm_pk.isa) : "";
    m->info.file_bytes = m->st->size;
    m->info.format = m->st->format;
    m->info.architecture = m->prenorm ? "m2m_100" : "marian";
    m->info.weights_file = m->weights_file;
}

/* ---- public API ---------------------------------------------------------------- */
mt_model_params mt_model_default_params(void)
{
    return (mt_model_params){.n_threads = 0, .weights = MT_WEIGHTS_F32, .int8_kernel = MT_INT8_AUTO};
}

/* The pool is process-wide; OpenBLAS stays at one thread (parallel.h). */
static void set_pool(const mt_model_params *p)
{
    mt_par_set_threads(p->n_threads > 0 ? p->n_threads : mt_par_threads());
    if (p->compute_nice > 0)
        mt_par_set_nice(p->compute_nice);
}

mt_status mt_model_load(const char *dir, const mt_model_params *params, mt_model **out, mt_err *err)
{
    *out = NULL;
    if (!dir || !*dir)
        return mt_err_set(err, MT_ERR_INPUT, "no model directory given");
    if (params && (params->compute_nice < 0 || params->compute_nice > 19))
        return mt_err_set(err, MT_ERR_INPUT, "compute_nice %d is not within 0-19", params->compute_nice);
    mt_model *m = calloc(1, sizeof *m);
    if (!m)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    mt_model_params p = params ? *params : mt_model_default_params();
    loader L = {.m = m, .dir = dir, .held = p.weights, .isa = mt_k_q8_best_isa(),
                .l2 = p.cache_l2 > 0 ? p.cache_l2 : mt_k_l2_bytes()};
    if (p.int8_kernel != MT_INT8_AUTO && (int)p.int8_kernel < (int)L.isa)
        L.isa = (mt_q8_isa)p.int8_kernel;      /* a slower kernel on request (tests, benchmarks) */
    snprintf(m->held, sizeof m->held, "F32");
    mt_status st = read_json(dir, "config.json", 0, &L.cfg, err);
    if (st == MT_OK && mt_llm_detect(L.cfg)) {     /* a decoder-only LM: llm_load.c reads it whole */
        st = mt_llm_load(m, dir, L.cfg, p.weights, L.isa, L.l2, 0, err);
        json_decref(L.cfg);
        if (st != MT_OK) {
            mt_model_free(m);
            return st;
        }
        set_pool(&p);
        *out = m;
        return MT_OK;
    }
    if (st == MT_OK)
        st = load_all(&L, err);
    json_decref(L.cfg);
    L.cfg = NULL;
    if (st == MT_OK)
        st = prepare_weights(&L, err);
    if (st != MT_OK) {
        mt_model_free(m);
        return st;
    }
    fill_info(&L);
    set_pool(&p);
    *out = m;
    return MT_OK;
}

mt_status mt_model_load_card(const char *dir, mt_model **out, mt_err *err)
{
    *out = NULL;
    if (!dir || !*dir)
        return mt_err_set(err, MT_ERR_INPUT, "no model directory given");
    mt_model *m = calloc(1, sizeof *m);
    if (!m)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    m->card = 1;
    loader L = {.m = m, .dir = dir, .card = 1};
    mt_status st = read_json(dir, "config.json", 0, &L.cfg, err);
    if (st == MT_OK)
        st = mt_llm_detect(L.cfg) ? mt_llm_load(m, dir, L.cfg, MT_WEIGHTS_F32, MT_Q8_SCALAR, 0, 1, err) : load_all(&L, err);
    json_decref(L.cfg);
    L.cfg = NULL;
    if (st == MT_OK && m->arch == MT_ARCH_LLM) {
        *out = m;
        return MT_OK;
    }
    if (st != MT_OK) {
        mt_model_free(m);
        return st;
    }
    fill_card_info(&L);
    *out = m;
    return MT_OK;
}

int mt_model_is_card(const mt_model *m) { return m && m->card; }

void mt_model_free(mt_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n_owned; i++)
        free(m->owned[i]);
    free(m->owned);
    mt_huge_free(m->packed, m->packed_bytes);
    free(m->enc);
    free(m->dec);
    mt_llm_free(m);
    mt_wfile_close(m->st);
    mt_tokenizer_free(m->tok);
    free(m);
}

/* Bytes of a packed Linear as a product reads them (its panels, and an INT8
 * one's scales and sums): what the loader allocated for it. */
static size_t lin_bytes(const mt_packed *pk)
{
    mt_weights held = pk->i8 ? MT_WEIGHTS_I8 : pk->f16 ? MT_WEIGHTS_F16 : MT_WEIGHTS_F32;
    return mt_held_bytes(held, pk->in, pk->out);
}

size_t mt_model_step_weight_bytes(const mt_model *m)
{
    if (mt_model_is_card(m))
        return 0;
    size_t b = lin_bytes(&m->lm_pk);
    if (m->arch == MT_ARCH_LLM) {
        for (int i = 0; i < m->llm->L; i++) {
            const mt_llm_layer *l = &m->llm->layers[i];
            b += lin_bytes(&l->qkv.pk) + lin_bytes(&l->o.pk) + lin_bytes(&l->gate_up.pk) + lin_bytes(&l->down.pk);
        }
        return b;
    }
    for (int i = 0; i < m->info.dec_layers; i++) {    /* cross_kv runs once per source, not per step */
        const mt_dec_layer *l = &m->dec[i];
        b += lin_bytes(&l->self_qkv.pk) + lin_bytes(&l->self_out.pk) + lin_bytes(&l->cross_q.pk) +
             lin_bytes(&l->cross_out.pk) + lin_bytes(&l->fc1.pk) + lin_bytes(&l->fc2.pk);
    }
    return b;
}

const mt_model_info *mt_model_get_info(const mt_model *m) { return &m->info; }
const mt_tokenizer *mt_model_tokenizer(const mt_model *m) { return m->tok; }
