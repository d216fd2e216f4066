/* llm_load.c: load a Hugging Face decoder-only LM directory (LlamaForCausalLM,
 * Qwen2ForCausalLM, Qwen3ForCausalLM) into an immutable mt_model (arch
 * MT_ARCH_LLM; the network is llm.c).
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

static const char *FAMILY[] = {"llama", "qwen2", "qwen3"};
static const char *ARCH[] = {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"};

int mt_llm_detect(const json_t *cfg)
{
    if (!cfg)
        return 0;
    int yes = 0;
    json_t *mt = json_object_get(cfg, "model_type"), *ar = json_object_get(cfg, "architectures");
    for (int i = 0; i < 3 && json_is_string(mt); i++)
        yes |= !strcmp(json_string_value(mt), FAMILY[i]);
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

/* The settings of these families that change the computation and that the
 * network does not implement: each is refused by its name. */
static mt_status refuse_unsupported(lload *L, json_t *cfg, mt_err *err)
{
    mt_llm *n = L->n;
    const char *f = L->cfg_file;
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
    int fam = -1;
    for (int i = 0; i < 3 && json_is_string(mt); i++)
        if (!strcmp(json_string_value(mt), FAMILY[i]))
            fam = i;
    if (fam < 0)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: model_type '%s' is not supported (decoder-only: llama, qwen2, "
                          "qwen3)", f, json_is_string(mt) ? json_string_value(mt) : "(none)");
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
    if (json_is_array(je) && json_array_size(je) == 1)
        je = json_array_get(je, 0);
    if (json_is_array(je))
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "%s: eos_token_id lists %zu ids: only one stop id is supported",
                          f, json_array_size(je));
    if (json_is_integer(je))
        *eos = (int)json_integer_value(je);
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
    m->act = MT_ACT_SWISH;
    snprintf(m->act_name, sizeof m->act_name, "silu");
}

static mt_status parse_config(lload *L, json_t *cfg, mt_err *err)
{
    mt_llm *n = L->n;
    mt_model_info *info = &L->m->info;
    const char *f = L->cfg_file;
    mt_status st;
    if ((st = parse_family(L, cfg, err)) != MT_OK || (st = refuse_unsupported(L, cfg, err)) != MT_OK)
        return st;
    int tied, eos = -1;
    double eps, theta;
#define INT(key, def, lo, hi, dst) if ((st = cfg_int(L, cfg, key, def, lo, hi, dst, err)) != MT_OK) return st
    INT("hidden_size", REQUIRED, 2, 1 << 16, &n->d);
    INT("intermediate_size", REQUIRED, 1, 1 << 20, &n->F);
    INT("num_hidden_layers", REQUIRED, 1, 1024, &n->L);
    INT("num_attention_heads", REQUIRED, 1, 1024, &n->H);
    INT("num_key_value_heads", n->H, 1, n->H, &n->KV);
    INT("head_dim", n->d / n->H, 2, 1024, &n->hd);     /* Qwen3: 128 where hidden / heads is 64 */
    INT("vocab_size", REQUIRED, 2, 1 << 24, &n->V);
    INT("max_position_embeddings", REQUIRED, 2, 1 << 22, &info->max_positions);
#undef INT
    json_t *jt = json_object_get(cfg, "tie_word_embeddings");
    if (jt && !json_is_boolean(jt) && !json_is_null(jt))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: 'tie_word_embeddings' must be true or false", f);
    tied = json_is_true(jt);           /* LlamaConfig, Qwen2Config, Qwen3Config: default false */
    if ((st = cfg_num(L, cfg, "rms_norm_eps", 1e-6, &eps, err)) != MT_OK ||
        (st = cfg_num(L, cfg, "rope_theta", 10000.0, &theta, err)) != MT_OK)
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

static mt_status get_norm(lload *L, const char *prefix, const char *name, int d, const float **out, mt_err *err)
{
    char full[256];
    snprintf(full, sizeof full, "%s.%s.weight", prefix, name);
    return get_f32(L, full, d, 0, out, err);
}

static mt_status load_layers(lload *L, mt_err *err)
{
    mt_llm *n = L->n;
    static const char *const QKV[] = {"q_proj", "k_proj", "v_proj"}, *const GU[] = {"gate_proj", "up_proj"},
                             *const O[] = {"o_proj"}, *const DOWN[] = {"down_proj"};
    int rq[3] = {n->qd, n->kvd, n->kvd}, rgu[2] = {n->F, n->F}, rd = n->d;
    for (int i = 0; i < n->L; i++) {
        char p[64], pa[96], pm[96];
        mt_llm_layer *l = &n->layers[i];
        mt_status st;
        snprintf(p, sizeof p, "model.layers.%d", i);
        snprintf(pa, sizeof pa, "%s.self_attn", p);
        snprintf(pm, sizeof pm, "%s.mlp", p);
        if ((st = get_norm(L, p, "input_layernorm", n->d, &l->ln_in, err)) != MT_OK ||
            (st = get_norm(L, p, "post_attention_layernorm", n->d, &l->ln_post, err)) != MT_OK ||
            (st = get_lin(L, pa, QKV, rq, 3, n->d, n->family == MT_LLM_QWEN2, &l->qkv, err)) != MT_OK ||
            (st = get_lin(L, pa, O, &rd, 1, n->qd, 0, &l->o, err)) != MT_OK ||
            (st = get_lin(L, pm, GU, rgu, 2, n->d, 0, &l->gate_up, err)) != MT_OK ||
            (st = get_lin(L, pm, DOWN, &rd, 1, n->F, 0, &l->down, err)) != MT_OK)
            return st;
        if (n->family == MT_LLM_QWEN3 && ((st = get_norm(L, pa, "q_norm", n->hd, &l->q_norm, err)) != MT_OK ||
                                          (st = get_norm(L, pa, "k_norm", n->hd, &l->k_norm, err)) != MT_OK))
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
    if ((st = get_f32(L, "model.embed_tokens.weight", n->V, n->d, &emb, err)) != MT_OK ||
        (st = get_f32(L, "model.norm.weight", n->d, 0, &n->norm, err)) != MT_OK)
        return st;
    head = emb;
    if (!n->tied && (st = get_f32(L, "lm_head.weight", n->V, n->d, &head, err)) != MT_OK)
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

/* Every tensor of the checkpoint must be one the network took. */
static mt_status check_all_used(lload *L, mt_err *err)
{
    const mt_llm *n = L->n;
    for (int k = 0; k < n->n_shards; k++)
        for (int i = 0; i < n->shards[k]->n_tensors; i++)
            if (!L->used[k][i] && !(n->tied && !strcmp(n->shards[k]->tensors[i].name, "lm_head.weight")))
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

static const char *weights_dtype(const mt_llm *n)
{
    const mt_tensor *t = mt_wfile_find(n->shards[0], "model.embed_tokens.weight");
    for (int k = 1; !t && k < n->n_shards; k++)
        t = mt_wfile_find(n->shards[k], "model.embed_tokens.weight");
    return t ? t->dtype_name : "F32";
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
    lload L = {.m = m, .n = n, .dir = dir, .held = held, .isa = isa, .l2 = l2};
    snprintf(L.cfg_file, sizeof L.cfg_file, "%s/config.json", dir);
    mt_status st = parse_config(&L, (json_t *)cfg, err);
    if (st == MT_OK)
        st = load_tokenizer(&L, err);
    if (st == MT_OK)
        st = open_weights(&L, err);
    if (st == MT_OK && !card) {
        m->packed_bytes = arena_bytes(&L);
        if (!(n->layers = calloc((size_t)n->L, sizeof *n->layers)) || !(m->packed = mt_huge_alloc(m->packed_bytes)))
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
    snprintf(m->dtype, sizeof m->dtype, "%s", weights_dtype(n));
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
    m->info.architecture = FAMILY[n->family];
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
