/* test_loader.c: the model loader and the safetensors reader.
 *
 * Refusals: each broken input must give the right status and a message that
 * names the file and the problem.  The broken files are written here, from C:
 * small synthetic safetensors files, and variants of models/tiny whose header
 * or config.json has been edited.  Also: models/tiny loads with the right
 * info, F16 weights are converted exactly, positions follow the formula, and
 * the real OPUS-MT configs (en-mg swish, tc-big relu/eos 43311) are accepted.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "mt.h"
#include "translate/pipeline.h"
#include "translate/session_decoder.h"
#include "model/mt_internal.h"
#include "formats/safetensors.h"

#define TINY "models/tiny"

static char tmp[256];               /* scratch model directory */
static char st_path[300], cfg_path[300];
static uint8_t *tiny_data;          /* tiny's data buffer */
static size_t tiny_data_len;
static json_t *tiny_header, *tiny_config;

/* ---- file helpers ------------------------------------------------------------------ */
static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* u64 header length (LE), header text padded with spaces to 8, then data. */
static void write_st_raw(const char *path, const char *header, const void *data, size_t data_len)
{
    size_t hl = strlen(header), padded = (hl + 7) / 8 * 8;
    size_t total = 8 + padded + data_len;
    uint8_t *buf = calloc(1, total);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    memcpy(buf + 8, header, hl);
    memset(buf + 8 + hl, ' ', padded - hl);
    if (data_len)
        memcpy(buf + 8 + padded, data, data_len);
    write_file(path, buf, total);
    free(buf);
}

static void write_st_json(const char *path, json_t *header, const void *data, size_t data_len)
{
    char *h = json_dumps(header, JSON_COMPACT);
    write_st_raw(path, h, data, data_len);
    free(h);
}

static void write_config(json_t *cfg)
{
    assert_int_equal(json_dump_file(cfg, cfg_path, JSON_INDENT(1)), 0);
}

/* Fresh copy of tiny in the scratch directory (config + weights). */
static void reset_tiny(void)
{
    write_config(tiny_config);
    write_st_json(st_path, tiny_header, tiny_data, tiny_data_len);
}

static void load_tiny_file(void)
{
    FILE *f = fopen(TINY "/model.safetensors", "rb");
    assert_non_null(f);
    uint8_t len8[8];
    assert_int_equal(fread(len8, 1, 8, f), 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | len8[i];
    char *h = malloc(n + 1);
    assert_int_equal(fread(h, 1, n, f), n);
    h[n] = 0;
    json_error_t je;
    tiny_header = json_loads(h, 0, &je);
    free(h);
    assert_non_null(tiny_header);
    long at = ftell(f);
    fseek(f, 0, SEEK_END);
    tiny_data_len = (size_t)(ftell(f) - at);
    fseek(f, at, SEEK_SET);
    tiny_data = malloc(tiny_data_len);
    assert_int_equal(fread(tiny_data, 1, tiny_data_len, f), tiny_data_len);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/mt_test_loader_XXXXXX");
    if (!mkdtemp(tmp))
        return -1;
    char cwd[1024], src[1200], dst[400];
    if (!getcwd(cwd, sizeof cwd))
        return -1;
    static const char *links[] = {"source.spm", "target.spm", "vocab.json", "tokenizer_config.json",
                                  "generation_config.json"};
    for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
        snprintf(src, sizeof src, "%s/" TINY "/%s", cwd, links[i]);
        snprintf(dst, sizeof dst, "%s/%s", tmp, links[i]);
        if (symlink(src, dst) != 0)
            return -1;
    }
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", tmp);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", tmp);
    json_error_t je;
    tiny_config = json_load_file(TINY "/config.json", 0, &je);
    if (!tiny_config)
        return -1;
    load_tiny_file();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    static const char *files[] = {"source.spm", "target.spm", "vocab.json", "tokenizer_config.json",
                                  "generation_config.json", "config.json", "model.safetensors"};
    char p[400];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", tmp, files[i]);
        unlink(p);
    }
    rmdir(tmp);
    json_decref(tiny_header);
    json_decref(tiny_config);
    free(tiny_data);
    return 0;
}

/* Load dir, expect status and every needle in the message. */
static void expect_load(const char *dir, mt_status want, const char *needle1, const char *needle2)
{
    mt_model *m = (mt_model *)0x1;
    mt_err err = {0};
    mt_status st = mt_model_load(dir, NULL, &m, &err);
    print_message("    %-14s %s\n", mt_status_name(st), err.msg);
    assert_int_equal(st, want);
    assert_null(m);
    assert_int_equal(err.status, want);
    if (needle1)
        assert_non_null(strstr(err.msg, needle1));
    if (needle2)
        assert_non_null(strstr(err.msg, needle2));
}

static void expect_st(mt_status want, const char *needle)
{
    mt_wfile *f = (mt_wfile *)0x1;
    mt_err err = {0};
    mt_status st = mt_st_open(st_path, &f, &err);
    print_message("    %-14s %s\n", mt_status_name(st), err.msg);
    assert_int_equal(st, want);
    assert_null(f);
    assert_non_null(strstr(err.msg, "model.safetensors"));
    if (needle)
        assert_non_null(strstr(err.msg, needle));
}

/* ---- safetensors refusals --------------------------------------------------------- */
static void test_st_too_short(void **state)
{
    (void)state;
    write_file(st_path, "abc", 3);
    expect_st(MT_ERR_FORMAT, "too short");
}

static void test_st_header_length_beyond_file(void **state)
{
    (void)state;
    uint8_t b[16] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}'};      /* claims 65535 header bytes */
    write_file(st_path, b, sizeof b);
    expect_st(MT_ERR_FORMAT, "header length 65535 exceeds");
}

static void test_st_foreign_file(void **state)
{
    (void)state;
    const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR and some more bytes";
    write_file(st_path, png, sizeof png);
    expect_st(MT_ERR_FORMAT, "not a safetensors file");
}

static void test_st_bad_json(void **state)
{
    (void)state;
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"F32\", ", NULL, 0);
    expect_st(MT_ERR_FORMAT, "not valid JSON");
    write_st_raw(st_path, "[1, 2]", NULL, 0);
    expect_st(MT_ERR_FORMAT, "not a JSON object");
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
                          "\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", "12345678", 8);
    expect_st(MT_ERR_FORMAT, "duplicate");
}

static void test_st_truncated(void **state)
{
    (void)state;
    json_t *h = json_deep_copy(tiny_header);
    write_st_json(st_path, h, tiny_data, tiny_data_len - 100);
    json_decref(h);
    expect_st(MT_ERR_FORMAT, "truncated");
}

static void test_st_offsets_lie(void **state)
{
    (void)state;
    char data[24] = {0};
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
                          "\"b\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [4, 20]}}", data, 24);
    expect_st(MT_ERR_FORMAT, "overlaps");
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
                          "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [16, 24]}}", data, 24);
    expect_st(MT_ERR_FORMAT, "hole");
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
                          "\"b\": {\"dtype\": \"F32\", \"shape\": [8], \"data_offsets\": [8, 40]}}", data, 24);
    expect_st(MT_ERR_FORMAT, "beyond the end");
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", data, 24);
    expect_st(MT_ERR_FORMAT, "after the last tensor");
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", data, 8);
    expect_st(MT_ERR_FORMAT, "needs 12");
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", data, 8);
    expect_st(MT_ERR_FORMAT, "bad data_offsets");
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"Q4\", \"shape\": [2], \"data_offsets\": [0, 8]}}", data, 8);
    expect_st(MT_ERR_FORMAT, "unknown or unsupported dtype 'Q4'");
    write_st_raw(st_path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", data, 8);
    expect_st(MT_ERR_FORMAT, "bad shape");
}

static void test_st_valid_small(void **state)
{
    (void)state;
    float data[3] = {1, 2, 3};
    write_st_raw(st_path, "{\"__metadata__\": {\"format\": \"pt\"}, \"z\": {\"dtype\": \"F32\", \"shape\": [], "
                          "\"data_offsets\": [8, 12]}, \"e\": {\"dtype\": \"F32\", \"shape\": [0, 4], "
                          "\"data_offsets\": [8, 8]}, \"w\": {\"dtype\": \"F32\", \"shape\": [2], "
                          "\"data_offsets\": [0, 8]}}", data, sizeof data);
    mt_wfile *f;
    mt_err err = {0};
    assert_int_equal(mt_st_open(st_path, &f, &err), MT_OK);
    assert_int_equal(f->n_tensors, 3);
    const mt_tensor *z = mt_wfile_find(f, "z"), *w = mt_wfile_find(f, "w");
    assert_non_null(z);
    assert_int_equal(z->rank, 0);
    assert_true(((const float *)w->data)[1] == 2.0f && *(const float *)z->data == 3.0f);
    assert_null(mt_wfile_find(f, "__metadata__"));
    mt_wfile_close(f);
}

/* ---- model refusals --------------------------------------------------------------- */
static void test_missing_dir_and_files(void **state)
{
    (void)state;
    expect_load("/nonexistent/model/dir", MT_ERR_IO, "/nonexistent/model/dir", "not found");
    reset_tiny();
    unlink(cfg_path);
    expect_load(tmp, MT_ERR_IO, "config.json", "missing");
    reset_tiny();
    unlink(st_path);
    expect_load(tmp, MT_ERR_IO, "model.safetensors", "no weights");
}

static void test_truncated_weights(void **state)
{
    (void)state;
    reset_tiny();
    write_st_json(st_path, tiny_header, tiny_data, tiny_data_len / 2);
    expect_load(tmp, MT_ERR_FORMAT, "model.safetensors", "truncated");
}

/* Edit one header entry of tiny: same byte size, so only the model checks catch it. */
static void test_wrong_shape(void **state)
{
    (void)state;
    json_t *h = json_deep_copy(tiny_header);
    json_t *e = json_object_get(h, "model.encoder.layers.1.fc1.weight");       /* [64, 32] */
    json_object_set_new(e, "shape", json_pack("[i,i]", 32, 64));
    write_config(tiny_config);
    write_st_json(st_path, h, tiny_data, tiny_data_len);
    json_decref(h);
    expect_load(tmp, MT_ERR_FORMAT, "model.encoder.layers.1.fc1.weight", "has shape [32, 64], expected [64, 32]");
}

static void test_wrong_dtype(void **state)
{
    (void)state;
    json_t *h = json_deep_copy(tiny_header);
    json_t *e = json_object_get(h, "model.decoder.layers.0.self_attn.q_proj.weight");   /* F16 [32, 32] */
    json_object_set_new(e, "dtype", json_string("I32"));
    json_object_set_new(e, "shape", json_pack("[i,i]", 16, 32));
    write_config(tiny_config);
    write_st_json(st_path, h, tiny_data, tiny_data_len);
    json_decref(h);
    expect_load(tmp, MT_ERR_FORMAT, "self_attn.q_proj.weight", "dtype I32");
}

static void test_missing_tensor(void **state)
{
    (void)state;
    json_t *h = json_deep_copy(tiny_header);
    json_t *e = json_incref(json_object_get(h, "model.decoder.layers.1.fc2.bias"));
    json_object_del(h, "model.decoder.layers.1.fc2.bias");
    json_object_set_new(h, "model.decoder.layers.1.fc2.bias_renamed", e);
    write_config(tiny_config);
    write_st_json(st_path, h, tiny_data, tiny_data_len);
    json_decref(h);
    expect_load(tmp, MT_ERR_FORMAT, "missing tensor", "model.decoder.layers.1.fc2.bias");
}

static void test_malformed_config(void **state)
{
    (void)state;
    reset_tiny();
    write_file(cfg_path, "{\"d_model\": 32,, }", 18);
    expect_load(tmp, MT_ERR_FORMAT, "config.json", "invalid JSON");
    write_file(cfg_path, "[]", 2);
    expect_load(tmp, MT_ERR_FORMAT, "config.json", "not a JSON object");
    json_t *c = json_deep_copy(tiny_config);
    json_object_del(c, "d_model");
    write_config(c);
    expect_load(tmp, MT_ERR_FORMAT, "config.json", "missing required key 'd_model'");
    json_object_set_new(c, "d_model", json_string("32"));
    write_config(c);
    expect_load(tmp, MT_ERR_FORMAT, "config.json", "'d_model' must be an integer");
    json_decref(c);
}

static void test_inconsistent_config(void **state)
{
    (void)state;
    reset_tiny();
    json_t *c = json_deep_copy(tiny_config);
    json_object_set_new(c, "encoder_attention_heads", json_integer(5));
    write_config(c);
    expect_load(tmp, MT_ERR_FORMAT, "config.json", "d_model 32 is not divisible");
    json_object_set_new(c, "encoder_attention_heads", json_integer(4));
    json_object_set_new(c, "pad_token_id", json_integer(9000));
    write_config(c);
    expect_load(tmp, MT_ERR_FORMAT, "'pad_token_id' = 9000", "outside");
    json_object_set_new(c, "pad_token_id", json_integer(7999));
    json_object_set_new(c, "d_model", json_integer(64));                    /* weights are d 32 */
    write_config(c);
    expect_load(tmp, MT_ERR_FORMAT, "has shape [8000, 32], expected [8000, 64]", NULL);
    json_object_set_new(c, "d_model", json_integer(32));
    json_object_set_new(c, "eos_token_id", json_integer(5));                 /* vocab.json says 0 */
    write_config(c);
    expect_load(tmp, MT_ERR_FORMAT, "eos_token_id is 5", NULL);
    json_object_set_new(c, "eos_token_id", json_integer(0));
    json_object_set_new(c, "tie_word_embeddings", json_false());             /* needs lm_head.weight */
    write_config(c);
    expect_load(tmp, MT_ERR_FORMAT, "missing tensor 'lm_head.weight'", NULL);
    json_decref(c);
}

static void test_unknown_activation(void **state)
{
    (void)state;
    reset_tiny();
    json_t *c = json_deep_copy(tiny_config);
    json_object_set_new(c, "activation_function", json_string("tanh"));
    write_config(c);
    expect_load(tmp, MT_ERR_UNSUPPORTED, "config.json", "unknown activation_function 'tanh'");
    json_object_set_new(c, "activation_function", json_string("swish"));
    json_object_set_new(c, "normalize_before", json_true());
    write_config(c);
    expect_load(tmp, MT_ERR_UNSUPPORTED, "normalize_before", NULL);
    json_decref(c);
}

/* ---- successful loads ---------------------------------------------------------------- */
static void test_load_tiny_info(void **state)
{
    (void)state;
    mt_model *m;
    mt_err err = {0};
    assert_int_equal(mt_model_load(TINY, NULL, &m, &err), MT_OK);
    const mt_model_info *i = mt_model_get_info(m);
    assert_int_equal(i->d_model, 32);
    assert_int_equal(i->enc_layers, 2);
    assert_int_equal(i->dec_layers, 2);
    assert_int_equal(i->enc_heads, 4);
    assert_int_equal(i->dec_heads, 4);
    assert_int_equal(i->enc_ffn, 64);
    assert_int_equal(i->dec_ffn, 64);
    assert_int_equal(i->vocab_size, 8000);
    assert_int_equal(i->max_positions, 256);
    assert_int_equal(i->pad_id, 7999);
    assert_int_equal(i->eos_id, 0);
    assert_int_equal(i->decoder_start_id, 7999);
    assert_int_equal(i->default_beam, 4);
    assert_int_equal(i->default_max_length, 64);
    assert_string_equal(i->activation, "swish");
    assert_string_equal(i->source_lang, "en");
    assert_string_equal(i->target_lang, "fr");
    assert_string_equal(i->dtype, "F16");
    struct stat sb;
    assert_int_equal(stat(TINY "/model.safetensors", &sb), 0);
    assert_int_equal(i->file_bytes, (size_t)sb.st_size);
    assert_true(i->weight_bytes >= (size_t)(8000 * 32 + 4 * 32 * 32 * 2 * 3) * 4);
    assert_non_null(mt_model_tokenizer(m));
    assert_int_equal(mt_tokenizer_vocab_size(mt_model_tokenizer(m)), 8000);
    mt_model_free(m);
}

/* F16 -> F32 exactly, checked against the raw bytes with an independent decoder;
 * fused q|k|v rows in the declared order. */
static float half_ref(uint16_t h)
{
    int e = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v = e ? ldexp(1024 + man, e - 25) : ldexp(man, -24);
    return (float)((h & 0x8000) ? -v : v);
}

static void check_tensor(const mt_wfile *f, const char *name, const float *got, size_t n)
{
    const mt_tensor *t = mt_wfile_find(f, name);
    assert_non_null(t);
    assert_int_equal(t->dtype, MT_DT_F16);
    const uint8_t *p = t->data;
    for (size_t i = 0; i < n; i++)
        assert_true(got[i] == half_ref((uint16_t)(p[2 * i] | p[2 * i + 1] << 8)));
}

/* The [rows][in] tensor `name` is rows o0.. of the packed matrix pk: panels of
 * MT_PANEL outputs, each [in][MT_PANEL] (engine/kernels/kernels.h), F32 here. */
static void check_packed(const mt_wfile *f, const char *name, const mt_packed *pk, int o0, int rows)
{
    const mt_tensor *t = mt_wfile_find(f, name);
    assert_non_null(t);
    assert_int_equal(t->dtype, MT_DT_F16);
    assert_int_equal(pk->f16, 0);
    int in = pk->in;
    assert_int_equal(t->shape[0], rows);
    assert_int_equal(t->shape[1], in);
    const uint8_t *p = t->data;
    const float *w = pk->data;
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < in; k++) {
            int o = o0 + r;
            size_t i = (size_t)r * in + k;
            float got = w[((size_t)(o / MT_PANEL) * in + k) * MT_PANEL + o % MT_PANEL];
            assert_true(got == half_ref((uint16_t)(p[2 * i] | p[2 * i + 1] << 8)));
        }
}

static void test_f16_conversion_and_layout(void **state)
{
    (void)state;
    mt_model *m;
    mt_wfile *f;
    assert_int_equal(mt_model_load(TINY, NULL, &m, NULL), MT_OK);
    assert_int_equal(mt_st_open(TINY "/model.safetensors", &f, NULL), MT_OK);
    int d = 32;
    check_tensor(f, "model.shared.weight", m->enc_emb, 8000 * 32);
    assert_ptr_equal(m->lm_head, m->dec_emb);                     /* tied */
    check_tensor(f, "final_logits_bias", m->final_bias, 8000);
    /* Linears are packed at load (q, k, v fused into one [3d][d]); the row-major arrays are gone */
    check_packed(f, "model.encoder.layers.1.self_attn.q_proj.weight", &m->enc[1].qkv.pk, 0, d);
    check_packed(f, "model.encoder.layers.1.self_attn.k_proj.weight", &m->enc[1].qkv.pk, d, d);
    check_packed(f, "model.encoder.layers.1.self_attn.v_proj.weight", &m->enc[1].qkv.pk, 2 * d, d);
    assert_null(m->enc[1].qkv.w);
    check_packed(f, "model.shared.weight", &m->lm_pk, 0, 8000);         /* the tied head, packed */
    check_tensor(f, "model.encoder.layers.1.self_attn.v_proj.bias", m->enc[1].qkv.b + 2 * d, (size_t)d);
    check_packed(f, "model.decoder.layers.0.encoder_attn.k_proj.weight", &m->dec[0].cross_kv.pk, 0, d);
    check_tensor(f, "model.decoder.layers.0.encoder_attn.v_proj.bias", m->dec[0].cross_kv.b + d, (size_t)d);
    check_packed(f, "model.decoder.layers.1.fc2.weight", &m->dec[1].fc2.pk, 0, d);
    /* positions: [sin | cos], spec 1.2 */
    const float *pe1 = m->pos + d;
    assert_true(m->pos[0] == 0.0f && m->pos[16] == 1.0f);
    assert_float_equal(pe1[0], sin(1.0), 1e-7);
    assert_float_equal(pe1[16], cos(1.0), 1e-7);
    assert_float_equal(pe1[1], sin(1.0 / pow(10000.0, 2.0 / 32)), 1e-7);
    assert_float_equal(m->pos[5 * d + 31], cos(5.0 / pow(10000.0, 30.0 / 32)), 1e-7);
    assert_float_equal(m->embed_scale, sqrt(32.0), 1e-6);
    mt_wfile_close(f);
    mt_model_free(m);
}

static void test_missing_bias_is_zero(void **state)
{
    (void)state;
    json_t *h = json_deep_copy(tiny_header);
    /* final_logits_bias is first in the data buffer (offsets 0..16000): drop it and shift the rest */
    json_t *e = json_object_get(h, "final_logits_bias");
    size_t cut = (size_t)json_integer_value(json_array_get(json_object_get(e, "data_offsets"), 1));
    assert_int_equal(json_integer_value(json_array_get(json_object_get(e, "data_offsets"), 0)), 0);
    json_object_del(h, "final_logits_bias");
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v) {
        json_t *o = json_object_get(v, "data_offsets");
        if (!o)
            continue;
        json_array_set_new(o, 0, json_integer(json_integer_value(json_array_get(o, 0)) - (json_int_t)cut));
        json_array_set_new(o, 1, json_integer(json_integer_value(json_array_get(o, 1)) - (json_int_t)cut));
    }
    write_config(tiny_config);
    write_st_json(st_path, h, tiny_data + cut, tiny_data_len - cut);
    json_decref(h);
    mt_model *m;
    mt_err err = {0};
    assert_int_equal(mt_model_load(tmp, NULL, &m, &err), MT_OK);
    for (int i = 0; i < 8000; i++)
        assert_true(m->final_bias[i] == 0.0f);
    mt_model_free(m);
}

/* Real OPUS-MT configs (no weights): the config is accepted, loading stops at
 * the missing model.safetensors. */
static void test_real_opus_configs(void **state)
{
    (void)state;
    expect_load("tests/fixtures/opus-mt/en-mg", MT_ERR_IO, "en-mg: no weights", "pytorch_model.bin");
    expect_load("tests/fixtures/opus-mt/tc-big-fr-en", MT_ERR_IO, "tc-big-fr-en: no weights", "pytorch_model.bin");
}

static int abort_now(void *data)
{
    (void)data;
    return 1;
}

static void job_done(srv_decode_job *job)
{
    (void)job;
}

static void test_session_params(void **state)
{
    (void)state;
    mt_model *m;
    assert_int_equal(mt_model_load(TINY, NULL, &m, NULL), MT_OK);
    mt_session_params p = mt_session_default_params(m);
    assert_true(p.max_src_len <= 256 && p.max_tgt_len == 64 && p.max_batch >= 1);
    mt_session *s;
    mt_err err = {0};
    p.max_src_len = 257;
    assert_int_equal(mt_session_new(m, &p, &s, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "max_src_len"));
    p = mt_session_default_params(m);
    assert_int_equal(mt_session_new(m, &p, &s, &err), MT_OK);
    assert_true(mt_session_bytes(s) > 0);
    /* decode parameter and input refusals */
    int32_t src[3] = {5, 6, 0}, big[300] = {0};
    const int32_t *sp = src, *bp = big;
    int n = 3, nb = 300;
    mt_hyp h[4];
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = 17;
    assert_int_equal(mt_generate(s, &sp, &n, 1, &dp, h, &err), MT_ERR_INPUT);
    dp = mt_decode_default_params();
    dp.lengths.max_length = 1000;
    assert_int_equal(mt_generate(s, &sp, &n, 1, &dp, h, &err), MT_ERR_INPUT);
    dp = mt_decode_default_params();
    assert_int_equal(mt_generate(s, &bp, &nb, 1, &dp, h, &err), MT_ERR_TOO_LONG);
    src[1] = 8000;
    assert_int_equal(mt_generate(s, &sp, &n, 1, &dp, h, &err), MT_ERR_INPUT);
    /* the abort callback stops decoding, every row freed */
    src[1] = 6;
    dp = mt_decode_default_params();
    dp.abort_callback = abort_now;
    assert_int_equal(mt_generate(s, &sp, &n, 1, &dp, h, &err), MT_ERR_ABORTED);
    assert_int_equal(mt_session_rows_used(s), 0);
    dp = mt_decode_default_params();
    /* text layer (the translate pipeline): invalid UTF-8 and too long */
    const mt_model_info *info = mt_model_get_info(m);
    srv_tr_model tm = { .tok = mt_model_tokenizer(m), .eos_id = info->eos_id, .max_src_len = p.max_src_len };
    srv_tr_params tp = { .dp = mt_decode_default_params(), .split = 0 };
    tp.dp.beam_size = 1;
    srv_tr *t = NULL;
    const char *bad = "caf\xc3";
    assert_int_equal(srv_tr_new(&tm, &bad, 1, &tp, &t, &err), MT_ERR_INPUT);
    assert_null(t);
    char *longtext = malloc(4000);
    for (int i = 0; i < 3999; i++)
        longtext[i] = i % 4 == 3 ? ' ' : 'a' + i % 3;
    longtext[3999] = 0;
    const char *lt = longtext;
    assert_int_equal(srv_tr_new(&tm, &lt, 1, &tp, &t, &err), MT_ERR_TOO_LONG);
    free(longtext);
    const char *ok[2] = {"Hello.", ""};
    tp.dp.beam_size = 2;
    tp.dp.n_best = 2;
    assert_int_equal(srv_tr_new(&tm, ok, 2, &tp, &t, &err), MT_OK);
    srv_decode_job *job = srv_tr_job(t);
    job->done = job_done;
    srv_session_decode(s, job);
    assert_int_equal(job->status, MT_OK);
    srv_tr_result r[2];
    assert_int_equal(srv_tr_finish(t, r, &err), MT_OK);
    assert_int_equal(r[0].n_alts, 2);
    int n_src = 0;
    srv_tr_source(t, 1, &n_src);
    assert_int_equal(n_src, 1);                       /* "" -> </s> */
    assert_non_null(srv_tr_best(t, 1)->text);
    srv_tr_results_free(r, 2);
    srv_tr_free(t);
    mt_session_free(s);
    mt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_st_too_short),
        cmocka_unit_test(test_st_header_length_beyond_file),
        cmocka_unit_test(test_st_foreign_file),
        cmocka_unit_test(test_st_bad_json),
        cmocka_unit_test(test_st_truncated),
        cmocka_unit_test(test_st_offsets_lie),
        cmocka_unit_test(test_st_valid_small),
        cmocka_unit_test(test_missing_dir_and_files),
        cmocka_unit_test(test_truncated_weights),
        cmocka_unit_test(test_wrong_shape),
        cmocka_unit_test(test_wrong_dtype),
        cmocka_unit_test(test_missing_tensor),
        cmocka_unit_test(test_malformed_config),
        cmocka_unit_test(test_inconsistent_config),
        cmocka_unit_test(test_unknown_activation),
        cmocka_unit_test(test_load_tiny_info),
        cmocka_unit_test(test_f16_conversion_and_layout),
        cmocka_unit_test(test_missing_bias_is_zero),
        cmocka_unit_test(test_real_opus_configs),
        cmocka_unit_test(test_session_params),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
