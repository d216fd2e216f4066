/* fuzz_m2m_config: an M2M-100 / NLLB-200 model directory's JSON files from
 * untrusted bytes, loaded by mt_model_load (engine/model/model.c, m2m.c) next
 * to a fixed, valid micro model of that architecture: what fuzz_config does
 * for Marian.
 *
 * Covers the model_type dispatch (m2m_100, NLLB-MoE refused by name, Marian,
 * anything else), M2M100Config's keys (sizes, special ids, scale_embedding,
 * activation_function, the keys refused by name: NLLB-MoE's, unshared tables,
 * is_encoder_decoder, decoder_vocab_size, normalize_embedding; d_model at
 * least 4), generation_config.json (num_beams, max_length, early_stopping),
 * tokenizer_config.json as multi.c reads it (class, special tokens, language
 * lists, legacy_behaviour); then every tensor the config implies (the pre-LN
 * layers, model.encoder.layer_norm / model.decoder.layer_norm; old
 * checkpoints' embed_positions tables ignored), the tokenizer against
 * vocab_size and eos_token_id.  A config that loads decodes one source:
 * greedy with the target language forced first (forced_bos), ids in range,
 * the forced id first.
 *
 * Input: config.json, optionally followed by a NUL and generation_config.json,
 * then a NUL and tokenizer_config.json (an absent part: no such file; without
 * a tokenizer_config.json the tokenizer is NLLB's by default).  An odd input
 * length loads with --weights f16.
 *
 * The micro model (LLVMFuzzerInitialize, in a temporary directory): d_model 8,
 * 2 encoder and 2 decoder layers of 2 heads and FFN 8, NLLB's fairseq ids over
 * tests/fixtures/tokenizer/spm/bpe.spm (300 pieces: ids to <mask> = 503) and
 * 2 padding rows, vocabulary 506; F32 with the embeddings in F16 and the
 * LayerNorms in BF16 so every conversion runs. */
#define FUZZ_MAX_TENSORS 160
#include "fuzz_model_dir.h"

enum { D = 8, F = 8, V = 506, LAYERS = 2 };
static int verbose;

static void remove_dir(void)
{
    static const char *const files[] = {"config.json", "generation_config.json", "tokenizer_config.json",
                                        "model.safetensors", "sentencepiece.bpe.model"};
    char p[512];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* ---- the micro model.safetensors ------------------------------------------- */

/* M2M100ForConditionalGeneration's names: the shared table (the tied names
 * dropped, as safetensors writes them), an old checkpoint's position tables,
 * q/k/v/out with biases, the three LayerNorms of a layer, each stack's own. */
static void describe_model(void)
{
    static const char *const proj[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
    char p[64], a[96];
    add("F16", V, D, "model.shared.weight");
    add("F32", 34, D, "model.encoder.embed_positions.weights");
    for (int dec = 0; dec < 2; dec++) {
        for (int l = 0; l < LAYERS; l++) {
            snprintf(p, sizeof p, "model.%s.layers.%d", dec ? "decoder" : "encoder", l);
            for (int k = 0; k < 2 - !dec; k++) {
                snprintf(a, sizeof a, "%s.%s", p, k ? "encoder_attn" : "self_attn");
                for (int j = 0; j < 4; j++) {
                    add("F32", D, D, "%s.%s.weight", a, proj[j]);
                    add("F32", D, 0, "%s.%s.bias", a, proj[j]);
                }
                add("BF16", D, 0, "%s.%s.weight", p, k ? "encoder_attn_layer_norm" : "self_attn_layer_norm");
                add("BF16", D, 0, "%s.%s.bias", p, k ? "encoder_attn_layer_norm" : "self_attn_layer_norm");
            }
            add("F32", F, D, "%s.fc1.weight", p);
            add("F32", F, 0, "%s.fc1.bias", p);
            add("F32", D, F, "%s.fc2.weight", p);
            add("F32", D, 0, "%s.fc2.bias", p);
            add("BF16", D, 0, "%s.final_layer_norm.weight", p);
            add("BF16", D, 0, "%s.final_layer_norm.bias", p);
        }
        add("F32", D, 0, "model.%s.layer_norm.weight", dec ? "decoder" : "encoder");
        add("F32", D, 0, "model.%s.layer_norm.bias", dec ? "decoder" : "encoder");
    }
}

static void write_safetensors(const char *path)
{
    describe_model();
    write_tensors(path, 4949u);
}

/* The valid config the seed corpus starts from (tests/fuzz/corpus/m2m_config/). */
static const char valid_config[] =
    "{\"d_model\": 8, \"encoder_layers\": 2, \"decoder_layers\": 2, \"encoder_attention_heads\": 2,"
    " \"decoder_attention_heads\": 2, \"encoder_ffn_dim\": 8, \"decoder_ffn_dim\": 8, \"vocab_size\": 506,"
    " \"max_position_embeddings\": 32, \"pad_token_id\": 1, \"eos_token_id\": 2, \"bos_token_id\": 0,"
    " \"decoder_start_token_id\": 2, \"activation_function\": \"relu\", \"model_type\": \"m2m_100\","
    " \"scale_embedding\": true, \"dropout\": 0.1}";

/* A loaded model decodes "ab" from its first language into its last, greedy. */
static void decode_one(const mt_model *m)
{
    const mt_multi_tokenizer *mt = mt_tokenizer_multi(mt_model_tokenizer(m));
    const mt_model_info *info = mt_model_get_info(m);
    if (!mt)
        return;                     /* a Marian config on these files cannot load; another tokenizer: none */
    mt_session_params sp = {.max_batch = 2, .max_src_len = 8, .max_tgt_len = 6};
    if (sp.max_src_len > info->max_positions || sp.max_tgt_len > info->max_positions)
        return;
    mt_session *s = NULL;
    mt_err err = {0};
    FUZZ_CHECK(mt_session_new(m, &sp, &s, &err) == MT_OK);
    int32_t src[8];
    int n = 0;
    FUZZ_CHECK(mt_multi_encode(mt, mt_multi_lang(mt, 0), "ab", 2, src, 8, &n, &err) == MT_OK);
    mt_decode_params q = mt_decode_default_params();
    q.beam_size = 1;
    q.lengths.max_length = 6;
    q.forced_bos.enabled = 1;
    q.forced_bos.id = mt_multi_lang_id(mt, mt_multi_lang(mt, mt_multi_n_langs(mt) - 1));
    const int32_t *srcs[1] = {src};
    mt_hyp h;
    if (q.forced_bos.id != info->pad_id && q.forced_bos.id != info->eos_id && q.forced_bos.id < info->vocab_size) {
        FUZZ_CHECK(mt_generate(s, srcs, &n, 1, &q, &h, &err) == MT_OK);
        FUZZ_CHECK(h.n_ids >= 2 && h.n_ids <= 5 && h.ids[0] == q.forced_bos.id);
        for (int i = 0; i < h.n_ids; i++)
            /* pad may be generated: M2M-100's generation bans no id (no bad_words_ids), as transformers */
            FUZZ_CHECK(h.ids[i] >= 0 && h.ids[i] < info->vocab_size);
        mt_hyps_free(&h, 1);
    }
    mt_session_free(s);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char path[4096], link[512];
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fuzz-m2m-config-XXXXXX", t && *t ? t : "/tmp");
    FUZZ_CHECK(mkdtemp(dir));
    atexit(remove_dir);
    verbose = getenv("FUZZ_VERBOSE") != NULL;
    snprintf(link, sizeof link, "%s/model.safetensors", dir);
    write_safetensors(link);
    fuzz_path(path, sizeof path, "tests/fixtures/tokenizer/spm/bpe.spm");
    snprintf(link, sizeof link, "%s/sentencepiece.bpe.model", dir);
    FUZZ_CHECK(symlink(path, link) == 0);

    /* The setup must be right, or every input would fail before the checks worth fuzzing. */
    mt_model *m = NULL;
    mt_err err = {0};
    write_file("config.json", (const uint8_t *)valid_config, sizeof valid_config - 1);
    for (int f16 = 0; f16 < 2; f16++) {
        if (load(f16, &m, &err) != MT_OK) {
            fprintf(stderr, "fuzz setup: the micro model does not load: %s\n", err.msg);
            abort();
        }
        decode_one(m);
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
        fprintf(stderr, "fuzz_m2m_config: %s\n", st == MT_OK ? "loaded" : err.msg);
    if (st != MT_OK) {
        FUZZ_CHECK(m == NULL && err.msg[0]);
        FUZZ_CHECK(st == MT_ERR_FORMAT || st == MT_ERR_UNSUPPORTED || st == MT_ERR_IO);
        return 0;
    }
    const mt_model_info *info = mt_model_get_info(m);
    FUZZ_CHECK(!strcmp(info->architecture, "m2m_100"));
    FUZZ_CHECK(info->d_model == D && info->vocab_size == V && info->eos_id >= 0 && info->eos_id < V);
    FUZZ_CHECK(info->enc_layers >= 1 && info->enc_layers <= LAYERS && info->dec_layers >= 1 &&
               info->dec_layers <= LAYERS);
    FUZZ_CHECK(info->pad_id >= 0 && info->pad_id < V && info->decoder_start_id >= 0 && info->decoder_start_id < V);
    FUZZ_CHECK(info->default_beam >= 1 && info->default_max_length >= 2);
    FUZZ_CHECK(info->max_positions >= 2 && info->max_positions <= (1 << 20));
    decode_one(m);
    mt_model_free(m);
    return 0;
}
