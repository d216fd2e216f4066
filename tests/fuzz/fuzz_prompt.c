/* fuzz_prompt: translation prompts of decoder-only LMs (engine/tokenizer/prompt.c).
 *
 * Loaded once (LLVMFuzzerInitialize): the Llama 2-format, Qwen3 and Gemma 3
 * tokenizers (tests/fixtures/hf-tokenizers, copied by `make hf-ref`) and their
 * prompts; translategemma on the Gemma 3 tokenizer with the TranslateGemma
 * fixture's template (tests/fixtures/chat-templates), so its languages table.
 * Every kind is given the languages' codes too (the source and target strings
 * again: mt_prompt_encode_codes; the kinds other than translategemma ignore them).
 *
 * Input: byte 0 picks what the rest is.
 *   0 mod 2  a tokenizer_config.json (arbitrary bytes: its chat_template is what
 *            mt_prompt_new fingerprints) loaded with a small tokenizer.json of
 *            our own (ChatML, Llama and Gemma special tokens, a blank added token,
 *            byte fallback, a decoder: the real ones take a second to parse);
 *            byte 0 bit 1 picks auto or a named kind (bits 2-4; translategemma
 *            reads the config's languages table); when it loads, mt_prompt_new: a refusal
 *            is MT_ERR_UNSUPPORTED (or MT_ERR_NOMEM) with a UTF-8 message, never a
 *            prompt; a prompt is used on fixed texts (stop ids sorted, unique).
 *   1 mod 2  source NUL target NUL text through a prompt of kind byte 0 / 2 mod 8
 *            on the tokenizer of bits 4-5 mod 3 (prompts made once): a refusal is
 *            MT_ERR_INPUT for invalid UTF-8 or a bad language name, nothing else;
 *            ids in range; MT_ERR_TOO_LONG with the same count and nothing written
 *            past it; the rendered string holds the text (llama2-chat, gemma: its
 *            Python-stripped prefix; translategemma: its stripped middle) at
 *            text_at; no special added-token id comes from the
 *            text (the count of each special id equals that of the prompt of "x");
 *            mt_prompt_keep returns a length within the text. */
#include "fuzz_common.h"

#include "tokenizer/tokenizer.h"

enum { N_KINDS = 8, N_TOKS = 3 };
static mt_hf_tokenizer *toks[N_TOKS], *tgemma;
static mt_prompt *prompts[N_TOKS][N_KINDS];
static const char *const kinds[N_KINDS] = { "alma", "chatml", "qwen3", "zephyr", "llama2-chat", "raw", "gemma",
                                            "translategemma" };

/* The tokenizer.json of the config inputs: small, with the tokens the kinds write. */
static const char small_json[] =
    "{\"added_tokens\": ["
    " {\"id\": 0, \"content\": \"<unk>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 1, \"content\": \"<s>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 2, \"content\": \"</s>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 3, \"content\": \"<|im_start|>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 4, \"content\": \"<|im_end|>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 5, \"content\": \"<|endoftext|>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 6, \"content\": \"<think>\", \"special\": false, \"normalized\": false},"
    " {\"id\": 15, \"content\": \"<start_of_turn>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 16, \"content\": \"<end_of_turn>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 17, \"content\": \"\\n\\n\", \"special\": false, \"normalized\": false}],"
    " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\xE2\x96\x81\"},"
    "   {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xE2\x96\x81\"}]},"
    " \"pre_tokenizer\": null,"
    " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}},"
    "   {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [],"
    "   \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1], \"tokens\": [\"<s>\"]}}},"
    " \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\xE2\x96\x81\"},"
    "   \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},"
    " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"byte_fallback\": true,"
    "   \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"<0x0A>\": 7, \"\xE2\x96\x81\": 8, \"a\": 9, \"e\": 10,"
    "     \"\\n\": 11, \"a\\nb\": 12, \"\xC4\x8A\": 13, \"<0x41>\": 14},"
    "   \"merges\": []}}";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const names[N_TOKS] = { "tests/fixtures/hf-tokenizers/llama2",
                                               "tests/fixtures/hf-tokenizers/qwen3",
                                               "tests/fixtures/hf-tokenizers/gemma3" };
    for (int i = 0; i < N_TOKS; i++) {
        char path[4096];
        mt_err err = { 0 };
        fuzz_path(path, sizeof path, names[i]);
        if (mt_hf_tokenizer_load(path, &toks[i], &err) != MT_OK) {
            fprintf(stderr, "fuzz setup: %s (make hf-ref copies the files)\n", err.msg);
            abort();
        }
        for (int k = 0; k < N_KINDS - 1; k++)
            mt_prompt_new(toks[i], kinds[k], &prompts[i][k], &err);   /* chatml/qwen3 on Llama: refused */
    }
    {   /* translategemma: the Gemma 3 tokenizer with TranslateGemma's template (its languages table) */
        char rel[256], path[4096];
        size_t nj, nc;
        uint8_t *json = fuzz_slurp(fuzz_path(path, sizeof path, "tests/fixtures/hf-tokenizers/gemma3/tokenizer.json"),
                                   &nj);
        snprintf(rel, sizeof rel, "tests/fixtures/chat-templates/TranslateGemma-4b-it.partial.json");
        uint8_t *c = fuzz_slurp(fuzz_path(path, sizeof path, rel), &nc);
        mt_err err = { 0 };
        if (!json || !c || mt_hf_tokenizer_load_mem((char *)json, nj, (char *)c, nc, "tg", &tgemma, &err) ||
            mt_prompt_new(tgemma, "auto", &prompts[2][7], &err)) {
            fprintf(stderr, "fuzz setup: TranslateGemma: %s\n", err.msg);
            abort();
        }
        free(json);
        free(c);
    }
    /* the config inputs' tokenizer loads, and every kind works on it */
    mt_hf_tokenizer *small = NULL;
    mt_err err = { 0 };
    static const char small_cfg[] = "{\"eos_token\": \"</s>\", \"bos_token\": \"<s>\"}";
    if (mt_hf_tokenizer_load_mem(small_json, sizeof small_json - 1, small_cfg, sizeof small_cfg - 1, "small", &small,
                                 &err) != MT_OK) {
        fprintf(stderr, "fuzz setup: the small tokenizer.json: %s\n", err.msg);
        abort();
    }
    for (int k = 0; k < N_KINDS; k++) {
        mt_prompt *p = NULL;
        FUZZ_CHECK(mt_prompt_new(small, kinds[k], &p, &err) == MT_OK);
        mt_prompt_free(p);
    }
    mt_hf_tokenizer_free(small);
    return 0;
}

static void use(const mt_prompt *p, const mt_hf_tokenizer *tok)
{
    static const char *const texts[] = { "", "Hello world", "<|im_end|></s>", "e\xCC\x81t\xC3\xA9\n\n  " };
    int32_t ids[512];
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        int n = -1;
        mt_err err = { 0 };
        FUZZ_CHECK(mt_prompt_encode_codes(p, "English", "en", "French", "fr", texts[i], strlen(texts[i]), ids, 512, &n,
                                          &err) == MT_OK);
        for (int k = 0; k < n; k++)
            FUZZ_CHECK(ids[k] >= 0 && ids[k] < mt_hf_tokenizer_vocab_size(tok));
    }
    const int32_t *stop;
    int ns = mt_prompt_stop_ids(p, &stop);
    FUZZ_CHECK(ns >= 1);
    for (int k = 1; k < ns; k++)
        FUZZ_CHECK(stop[k - 1] < stop[k]);
}

static void config(int named, int kind, const uint8_t *data, size_t size)
{
    mt_hf_tokenizer *tok = NULL;
    mt_err err = { 0 };
    if (mt_hf_tokenizer_load_mem(small_json, sizeof small_json - 1, (const char *)data, size, "fuzz", &tok, &err) !=
        MT_OK)
        return;
    mt_prompt *p = NULL;
    mt_status st = mt_prompt_new(tok, named ? kinds[kind] : (size & 1) ? NULL : "auto", &p, &err);
    if (st) {
        FUZZ_CHECK(!p && (st == MT_ERR_UNSUPPORTED || st == MT_ERR_NOMEM) && err.msg[0]);
        FUZZ_CHECK(fuzz_utf8_valid(err.msg, strlen(err.msg)));
    } else {
        FUZZ_CHECK(p && mt_prompt_kind(p));
        if (named)
            FUZZ_CHECK(!strcmp(mt_prompt_kind(p), kinds[kind]));
        use(p, tok);
    }
    mt_prompt_free(p);
    mt_hf_tokenizer_free(tok);
}

/* The count of special (or added) id occurrences. */
static int count_id(const int32_t *ids, int n, int32_t id)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += ids[i] == id;
    return c;
}

static void translate(int t, int kind, const uint8_t *data, size_t size)
{
    const mt_prompt *p = prompts[t][kind];
    const mt_hf_tokenizer *tok = kind == 7 ? tgemma : toks[t];
    if (!p)
        return;
    const uint8_t *part[3];
    size_t len[3];
    if (fuzz_split(data, size, 3, part, len) < 3)
        return;
    char src[80], tgt[80];
    if (len[0] >= sizeof src || len[1] >= sizeof tgt)
        return;
    memcpy(src, part[0], len[0]);
    src[len[0]] = '\0';
    memcpy(tgt, part[1], len[1]);
    tgt[len[1]] = '\0';
    const char *text = (const char *)part[2];
    size_t tl = len[2];
    int cap = (int)tl * 2 + 256, n = -1;
    int32_t *ids = malloc(((size_t)cap + 1) * sizeof *ids);
    FUZZ_CHECK(ids);
    mt_err err = { 0 };
    mt_status st = mt_prompt_encode_codes(p, src, src, tgt, tgt, text, tl, ids, cap, &n, &err);
    if (st) {
        /* refused (n 0), or more ids than cap: language codes spelled piece by
         * piece can outgrow it (CI: 323 ids for 318), and the count is given */
        FUZZ_CHECK(((st == MT_ERR_INPUT && n == 0) || (st == MT_ERR_TOO_LONG && n > cap)) && err.msg[0]);
        free(ids);
        return;
    }
    FUZZ_CHECK(fuzz_utf8_valid(text, tl));
    FUZZ_CHECK(n >= 0 && n <= cap);
    int vs = mt_hf_tokenizer_vocab_size(tok);
    for (int k = 0; k < n; k++)
        FUZZ_CHECK(ids[k] >= 0 && ids[k] < vs);
    if (n > 0) {
        int need = -1;
        ids[n - 1] = -7;
        FUZZ_CHECK(mt_prompt_encode_codes(p, src, src, tgt, tgt, text, tl, ids, n - 1, &need, &err) == MT_ERR_TOO_LONG);
        FUZZ_CHECK(need == n && ids[n - 1] == -7);
        FUZZ_CHECK(mt_prompt_encode_codes(p, src, src, tgt, tgt, text, tl, ids, cap, &n, &err) == MT_OK);
    }
    /* no special id from the text: the same counts as the prompt of "x" */
    int32_t ref[512];
    int nr = -1;
    FUZZ_CHECK(mt_prompt_encode_codes(p, src, src, tgt, tgt, "x", 1, ref, 512, &nr, &err) == MT_OK);
    for (int k = 0; k < nr; k++)
        if (mt_hf_tokenizer_is_special(tok, ref[k]))
            FUZZ_CHECK(count_id(ids, n, ref[k]) == count_id(ref, nr, ref[k]));
    for (int k = 0; k < n; k++)
        if (mt_hf_tokenizer_is_special(tok, ids[k]))
            FUZZ_CHECK(count_id(ids, n, ids[k]) == count_id(ref, nr, ids[k]));
    /* the rendered string holds the text where it says */
    char *r = NULL;
    size_t rl = 0, at = 0, kl = 0;
    FUZZ_CHECK(mt_prompt_render_codes(p, src, src, tgt, tgt, text, tl, &r, &rl, &at, &kl, &err) == MT_OK);
    int strips = !strcmp(mt_prompt_kind(p), "llama2-chat") || !strcmp(mt_prompt_kind(p), "gemma"), both = kind == 7;
    FUZZ_CHECK(r && r[rl] == '\0' && at + kl <= rl && kl <= tl);
    FUZZ_CHECK(kl == 0 || (both ? memmem(text, tl, r + at, kl) != NULL : !memcmp(r + at, text, kl)));
    if (!strips && !both)
        FUZZ_CHECK(kl == tl);
    free(r);
    FUZZ_CHECK(mt_prompt_keep(p, text, tl) <= tl);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    data++, size--;
    if (!(sel & 1))
        config((sel >> 1) & 1, (sel >> 2) & 7, data, size);
    else
        translate(((sel >> 4) & 3) % N_TOKS, (sel >> 1) & 7, data, size);
    return 0;
}
