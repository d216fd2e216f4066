/* fuzz_config: a model directory's JSON files from untrusted bytes, loaded by
 * mt_model_load (engine/model/model.c) next to a fixed, valid micro model.
 *
 * Covers config.json validation (required keys, integer/boolean types and
 * ranges, heads dividing d_model, decoder_vocab_size, activation_function,
 * the BART-era switches, model_type), generation_config.json overrides,
 * tokenizer_config.json (special tokens, separate_vocabs, languages), and the
 * cross-checks that follow: every tensor looked up by the names and shapes
 * the config implies (shared / separate embeddings, tied / untied LM head,
 * layer counts), vocab.json against vocab_size and eos_token_id; with a config
 * that passes, the whole load (packing, F16 tables) and mt_model_free.
 *
 * Input: config.json, optionally followed by a NUL and generation_config.json,
 * then a NUL and tokenizer_config.json (an absent part: no such file).  An odd
 * input length loads with --weights f16.
 *
 * The micro model (LLVMFuzzerInitialize, in a temporary directory): d_model 4,
 * 2 encoder and 2 decoder layers of FFN 8, a vocabulary of 16
 * (</s> = 0, <unk> = 1, <pad> = 15), every optional tensor present
 * (model.shared, separate embed_tokens, lm_head, final_logits_bias), F32 with
 * the embeddings in F16 and the LayerNorms in BF16 so every conversion runs;
 * source.spm and target.spm are tests/fixtures/tokenizer/spm/uni-rules.spm. */
#include "fuzz_model_dir.h"

enum { D = 4, F = 8, V = 16, LAYERS = 2 };
static int verbose;

static void remove_dir(void)
{
    static const char *const files[] = {"config.json", "generation_config.json", "tokenizer_config.json",
                                        "model.safetensors", "source.spm", "target.spm", "vocab.json"};
    char p[512];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* ---- the micro model.safetensors ------------------------------------------- */

static void add_lin(const char *prefix, const char *part, int out, int in)
{
    add("F32", out, in, "%s.%s.weight", prefix, part);
    add("F32", out, 0, "%s.%s.bias", prefix, part);
}

static void add_ln(const char *prefix, const char *part)
{
    add("BF16", D, 0, "%s.%s.weight", prefix, part);
    add("BF16", D, 0, "%s.%s.bias", prefix, part);
}

static void describe_model(void)
{
    static const char *const proj[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
    char p[64], a[96];
    add("F16", V, D, "model.shared.weight");
    add("F16", V, D, "model.encoder.embed_tokens.weight");
    add("F16", V, D, "model.decoder.embed_tokens.weight");
    add("F32", V, D, "lm_head.weight");
    add("F32", 1, V, "final_logits_bias");
    for (int dec = 0; dec < 2; dec++)
        for (int l = 0; l < LAYERS; l++) {
            snprintf(p, sizeof p, "model.%s.layers.%d", dec ? "decoder" : "encoder", l);
            for (int k = 0; k < 2 - !dec; k++) {
                snprintf(a, sizeof a, "%s.%s", p, k ? "encoder_attn" : "self_attn");
                for (int j = 0; j < 4; j++)
                    add_lin(a, proj[j], D, D);
                add_ln(p, k ? "encoder_attn_layer_norm" : "self_attn_layer_norm");
            }
            add_lin(p, "fc1", F, D);
            add_lin(p, "fc2", D, F);
            add_ln(p, "final_layer_norm");
        }
}

static void write_safetensors(const char *path)
{
    describe_model();
    write_tensors(path, 12345u);
}

/* The valid config the seed corpus starts from (tests/fuzz/corpus/config/). */
static const char valid_config[] =
    "{\"d_model\": 4, \"encoder_layers\": 2, \"decoder_layers\": 2, \"encoder_attention_heads\": 2,"
    " \"decoder_attention_heads\": 2, \"encoder_ffn_dim\": 8, \"decoder_ffn_dim\": 8, \"vocab_size\": 16,"
    " \"max_position_embeddings\": 32, \"pad_token_id\": 15, \"eos_token_id\": 0,"
    " \"decoder_start_token_id\": 15, \"activation_function\": \"swish\", \"model_type\": \"marian\","
    " \"scale_embedding\": true}";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char path[4096], link[512];
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fuzz-config-XXXXXX", t && *t ? t : "/tmp");
    FUZZ_CHECK(mkdtemp(dir));
    atexit(remove_dir);
    verbose = getenv("FUZZ_VERBOSE") != NULL;
    snprintf(link, sizeof link, "%s/model.safetensors", dir);
    write_safetensors(link);
    fuzz_path(path, sizeof path, "tests/fixtures/tokenizer/spm/uni-rules.spm");
    snprintf(link, sizeof link, "%s/source.spm", dir);
    FUZZ_CHECK(symlink(path, link) == 0);
    snprintf(link, sizeof link, "%s/target.spm", dir);
    FUZZ_CHECK(symlink(path, link) == 0);
    static const char vocab[] =
        "{\"</s>\": 0, \"<unk>\": 1, \"\xe2\x96\x81le\": 2, \"\xe2\x96\x81la\": 3, \"s\": 4, \"e\": 5,"
        " \"\xe2\x96\x81\": 6, \"pour\": 7, \"ation\": 8, \"ment\": 9, \"\xe2\x96\x81" "de\": 10, \"a\": 11,"
        " \"\xe2\x96\x81" "d\": 12, \">>fr<<\": 13, \"<s>\": 14, \"<pad>\": 15}";
    write_file("vocab.json", (const uint8_t *)vocab, sizeof vocab - 1);

    /* The setup must be right, or every input would fail before the checks worth fuzzing. */
    mt_model *m = NULL;
    mt_err err = {0};
    write_file("config.json", (const uint8_t *)valid_config, sizeof valid_config - 1);
    for (int f16 = 0; f16 < 2; f16++) {
        if (load(f16, &m, &err) != MT_OK) {
            fprintf(stderr, "fuzz setup: the micro model does not load: %s\n", err.msg);
            abort();
        }
        mt_model_free(m);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"config.json", "generation_config.json", "tokenizer_config.json"};
    const uint8_t *part[3];
    size_t len[3];
    int n = fuzz_split(data, size, 3, part, len);
    for (int i = 0; i < 3; i++) {
        if (i < n)
            write_file(names[i], part[i], len[i]);
        else
            remove_file(names[i]);
    }
    mt_model *m = NULL;
    mt_err err = {0};
    mt_status st = load((int)(size & 1), &m, &err);
    if (verbose)                        /* FUZZ_VERBOSE=1: what happened to each input */
        fprintf(stderr, "fuzz_config: %s\n", st == MT_OK ? "loaded" : err.msg);
    if (st != MT_OK) {
        FUZZ_CHECK(m == NULL && err.msg[0]);
        FUZZ_CHECK(st == MT_ERR_FORMAT || st == MT_ERR_UNSUPPORTED || st == MT_ERR_IO);
        return 0;
    }
    const mt_model_info *info = mt_model_get_info(m);
    /* eos: </s> (0) unless tokenizer_config.json names another token and config.json agrees */
    FUZZ_CHECK(info->d_model == D && info->vocab_size == V && info->eos_id >= 0 && info->eos_id < V);
    FUZZ_CHECK(info->enc_layers >= 1 && info->enc_layers <= LAYERS && info->dec_layers >= 1 &&
               info->dec_layers <= LAYERS);
    FUZZ_CHECK(info->pad_id >= 0 && info->pad_id < V && info->decoder_start_id >= 0 && info->decoder_start_id < V);
    FUZZ_CHECK(info->default_beam >= 1 && info->default_max_length >= 2);
    FUZZ_CHECK(info->max_positions >= 2 && info->max_positions <= (1 << 20));
    FUZZ_CHECK(info->activation && info->source_lang && info->target_lang && info->dtype && info->weights);
    mt_model_free(m);
    return 0;
}
