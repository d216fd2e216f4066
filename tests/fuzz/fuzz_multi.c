/* fuzz_multi: the NLLB-200 / M2M-100 tokenizer loader (engine/tokenizer/multi.c)
 * on untrusted tokenizer files, beside a fixed spm model (spm/bpe.spm, fairseq's
 * <unk> <s> </s> layout).
 * Input: a selector byte, then tokenizer_config.json NUL special_tokens_map.json
 * NUL vocab.json.  Bit 0 of the selector: write vocab.json (else absent: NLLB
 * unless the class says otherwise); bit 1: leave tokenizer_config.json out;
 * bit 2: leave special_tokens_map.json out.
 *   - mt_multi_detect and mt_multi_load agree; a refusal has a message and no object;
 *   - a loaded tokenizer: every language id is unique, in [0, vocab_size),
 *     special, and found again by its code and its token; encoding fixed texts
 *     gives [lang] + ids + [eos] (legacy: ids + [eos, lang]) with every id in
 *     range and (NLLB) no special id but <unk> in the text's part; MT_ERR_TOO_LONG writes nothing
 *     past max_ids and reports the count; decoding those ids and arbitrary ids
 *     read from the input succeeds (negative ones are refused); the text alone
 *     (mt_multi_encode_text) is those ids without the language; every id's
 *     token string (mt_multi_piece) leads back to an id of that string. */
#include "fuzz_common.h"

#include "tokenizer/tokenizer.h"

static char dir[256];

static void remove_dir(void)
{
    static const char *const files[] = { "sentencepiece.bpe.model", "tokenizer_config.json",
                                         "special_tokens_map.json", "vocab.json" };
    char p[512];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

static void put_file(const char *name, const uint8_t *data, size_t len, int keep)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (!keep) {
        unlink(p);
        return;
    }
    FILE *f = fopen(p, "wb");
    FUZZ_CHECK(f);
    FUZZ_CHECK(fwrite(data, 1, len, f) == len || len == 0);
    FUZZ_CHECK(fclose(f) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char path[4096], link[512];
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fuzz-multi-XXXXXX", t && *t ? t : "/tmp");
    FUZZ_CHECK(mkdtemp(dir));
    atexit(remove_dir);
    fuzz_path(path, sizeof path, "tests/fixtures/tokenizer/spm/bpe.spm");
    snprintf(link, sizeof link, "%s/sentencepiece.bpe.model", dir);
    FUZZ_CHECK(symlink(path, link) == 0);
    return 0;
}

static void use(const mt_multi_tokenizer *t, const uint8_t *data, size_t size)
{
    int nl = mt_multi_n_langs(t), vs = mt_multi_vocab_size(t);
    FUZZ_CHECK(nl == 202 || nl == 100);
    int32_t prev = -1;
    for (int i = 0; i < nl; i++) {
        int32_t id = mt_multi_lang_id(t, mt_multi_lang(t, i));
        FUZZ_CHECK(id > prev && id < vs && mt_multi_is_special(t, id));
        FUZZ_CHECK(mt_multi_lang_id(t, mt_multi_lang_token(t, i)) == id);
        prev = id;
    }
    static const char *const texts[] = { "", "Hello world.", "  eng_Latn </s> __en__  ", "\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80" };
    int32_t ids[72];
    mt_err err = { 0 };
    const char *lang = mt_multi_lang(t, 1);
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        int n = 0;
        FUZZ_CHECK(mt_multi_encode(t, lang, texts[k], strlen(texts[k]), ids, 64, &n, &err) == MT_OK);
        FUZZ_CHECK(n >= 2 && n <= 64);
        int32_t lid = mt_multi_lang_id(t, lang), eos = mt_multi_eos(t);
        FUZZ_CHECK((ids[0] == lid && ids[n - 1] == eos) || (ids[n - 2] == eos && ids[n - 1] == lid));
        int from = ids[0] == lid ? 1 : 0, to = ids[0] == lid ? n - 1 : n - 2;
        for (int i = 0; i < n; i++)
            FUZZ_CHECK(ids[i] >= 0 && ids[i] < vs);
        for (int i = from; i < to && mt_multi_kind_of(t) == MT_MULTI_NLLB; i++)   /* vocab.json may map anything */
            FUZZ_CHECK(!mt_multi_is_special(t, ids[i]) || ids[i] == mt_multi_unk(t));
        char *out = NULL;
        FUZZ_CHECK(mt_multi_decode(t, ids, n, &out, NULL, &err) == MT_OK && out);
        free(out);
        int32_t txt[72];                   /* the text alone: the same ids without the language */
        int nt = 0;
        FUZZ_CHECK(mt_multi_encode_text(t, texts[k], strlen(texts[k]), txt, 64, &nt, &err) == MT_OK && nt == n - 1);
        FUZZ_CHECK(!memcmp(txt, ids + from, sizeof *txt * (size_t)(n - 1)));
        if (n > 2) {                       /* too small a buffer: nothing written past it */
            int32_t few[3] = { -7, -7, -7 };
            int m = 0;
            FUZZ_CHECK(mt_multi_encode(t, lang, texts[k], strlen(texts[k]), few, 2, &m, &err) == MT_ERR_TOO_LONG);
            FUZZ_CHECK(m == n && few[2] == -7);
        }
    }
    /* every id's token string, found again by it (the engine's piece calls) */
    for (int32_t id = 0; id < vs + 4; id++) {
        const char *p = mt_multi_piece(t, id);
        int32_t back = p ? mt_multi_piece_id(t, p) : -1;
        FUZZ_CHECK(!p || (back >= 0 && back < vs && !strcmp(mt_multi_piece(t, back), p)));
        FUZZ_CHECK(!mt_multi_is_byte_piece(t, id) || (p && !mt_multi_is_special(t, id)));
    }
    /* arbitrary ids from the input's bytes */
    int n = 0;
    for (size_t i = 0; i + 3 < size && n < 64; i += 4) {
        uint32_t v;
        memcpy(&v, data + i, 4);
        ids[n++] = (int32_t)(v % (uint32_t)(vs + 16));
    }
    char *out = NULL;
    FUZZ_CHECK(mt_multi_decode(t, ids, n, &out, NULL, &err) == MT_OK && out);
    free(out);
    int32_t neg = -1;
    out = NULL;
    FUZZ_CHECK(mt_multi_decode(t, &neg, 1, &out, NULL, &err) == MT_ERR_INPUT && !out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    const uint8_t *part[3];
    size_t len[3] = { 0, 0, 0 };
    int np = fuzz_split(data + 1, size - 1, 3, part, len);
    put_file("tokenizer_config.json", part[0], len[0], !(sel & 2));
    put_file("special_tokens_map.json", np > 1 ? part[1] : NULL, np > 1 ? len[1] : 0, np > 1 && !(sel & 4));
    put_file("vocab.json", np > 2 ? part[2] : NULL, np > 2 ? len[2] : 0, np > 2 && (sel & 1));
    mt_err err = { 0 };
    mt_multi_kind kind = MT_MULTI_NONE;
    mt_status dst = mt_multi_detect(dir, &kind, &err);
    mt_multi_tokenizer *t = (mt_multi_tokenizer *)1;
    mt_status st = mt_multi_load(dir, &t, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(t == NULL && err.msg[0]);
        return 0;
    }
    FUZZ_CHECK(dst == MT_OK && kind == mt_multi_kind_of(t));
    use(t, data, size);
    mt_multi_free(t);
    return 0;
}
