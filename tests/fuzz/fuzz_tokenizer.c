/* fuzz_tokenizer: arbitrary text through real tokenizers (engine/tokenizer/tokenizer.c).
 *
 * Loaded once (LLVMFuzzerInitialize), from the repository's fixtures:
 *   SentencePiece models  tests/fixtures/tokenizer/spm/uni-{bytes,rules,suffix}.spm
 *                         (byte fallback, custom charsmap + deletions, whitespace
 *                         as suffix + denormalizer), models/tiny/source.spm,
 *                         tests/fixtures/opus-mt/en-mg/source.spm (nmt_nfkc)
 *   Marian tokenizers     models/tiny; models/tiny again with separate_vocabs and
 *                         clean_up_tokenization_spaces on (a temporary directory
 *                         of symlinks); tests/fixtures/opus-mt/tc-big-fr-en
 *
 * Input: byte 0 picks the model and the operation, the rest is the text.
 *   spm:    normalize, encode, decode(encode) (must succeed: the ids are
 *           the model's), decode of ids made from the text's bytes (ids out
 *           of range must give MT_ERR_INPUT, never a read)
 *   Marian: encode on the source and target side with room for all ids and
 *           with too little room (MT_ERR_TOO_LONG with the needed count,
 *           nothing written past max_ids), decode of the ids, decode of
 *           arbitrary ids (negative, past the vocabulary). */
#include "fuzz_common.h"

#include "tokenizer/tokenizer.h"

#include <unistd.h>

#define N_SPM 5
#define N_TOK 3
static mt_spm *spms[N_SPM];
static mt_tokenizer *toks[N_TOK];
static char tmpdir[256];

static void remove_tmpdir(void)
{
    static const char *const files[] = {"source.spm", "target.spm", "vocab.json", "target_vocab.json",
                                        "tokenizer_config.json"};
    char p[512];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", tmpdir, files[i]);
        unlink(p);
    }
    rmdir(tmpdir);
}

static void load_spm(int i, const char *rel)
{
    char path[4096];
    mt_err err = {0};
    if (mt_spm_load(fuzz_path(path, sizeof path, rel), &spms[i], &err) != MT_OK) {
        fprintf(stderr, "fuzz setup: %s\n", err.msg);
        abort();
    }
}

static void load_tok(int i, const char *dir)
{
    mt_err err = {0};
    if (mt_tokenizer_load(dir, &toks[i], &err) != MT_OK) {
        fprintf(stderr, "fuzz setup: %s\n", err.msg);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char path[4096], link[512];
    load_spm(0, "tests/fixtures/tokenizer/spm/uni-bytes.spm");
    load_spm(1, "tests/fixtures/tokenizer/spm/uni-rules.spm");
    load_spm(2, "tests/fixtures/tokenizer/spm/uni-suffix.spm");
    load_spm(3, "models/tiny/source.spm");
    load_spm(4, "tests/fixtures/opus-mt/en-mg/source.spm");
    load_tok(0, fuzz_path(path, sizeof path, "models/tiny"));
    load_tok(2, fuzz_path(path, sizeof path, "tests/fixtures/opus-mt/tc-big-fr-en"));

    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/fuzz-tok-XXXXXX", t && *t ? t : "/tmp");
    FUZZ_CHECK(mkdtemp(tmpdir));
    atexit(remove_tmpdir);
    static const char *const same[][2] = {{"source.spm", "source.spm"}, {"target.spm", "target.spm"},
                                          {"vocab.json", "vocab.json"}, {"vocab.json", "target_vocab.json"}};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "models/tiny/%s", same[i][0]);
        snprintf(link, sizeof link, "%s/%s", tmpdir, same[i][1]);
        FUZZ_CHECK(symlink(fuzz_path(path, sizeof path, rel), link) == 0);
    }
    snprintf(link, sizeof link, "%s/tokenizer_config.json", tmpdir);
    FILE *f = fopen(link, "w");
    FUZZ_CHECK(f);
    fputs("{\"separate_vocabs\": true, \"clean_up_tokenization_spaces\": true,"
          " \"unk_token\": {\"content\": \"<unk>\"}}\n", f);
    fclose(f);
    load_tok(1, tmpdir);
    return 0;
}

/* Ids from the text: little-endian 16-bit values spread over [-2, limit + 2). */
static int ids_from(const uint8_t *s, size_t len, int limit, int32_t *ids, int max)
{
    int n = 0;
    for (size_t i = 0; i + 1 < len && n < max; i += 2)
        ids[n++] = (int32_t)((s[i] | s[i + 1] << 8) % (unsigned)(limit + 4)) - 2;
    return n;
}

static void fuzz_spm(const mt_spm *sp, const char *text, size_t len)
{
    mt_err err = {0};
    char *out = NULL;
    size_t out_len = 0;
    int n = mt_spm_size(sp);
    if (mt_spm_normalize(sp, text, len, &out, &out_len, &err) == MT_OK) {
        FUZZ_CHECK(out && strlen(out) <= out_len);
        free(out);
    }
    mt_pieces pc = {0};
    mt_status st = mt_spm_encode(sp, text, len, &pc, &err);
    FUZZ_CHECK(st == MT_OK || st == MT_ERR_TOO_LONG);
    if (st == MT_OK) {
        int32_t *ids = malloc(sizeof *ids * (size_t)(pc.n + 1));
        FUZZ_CHECK(ids);
        for (int i = 0; i < pc.n; i++) {
            FUZZ_CHECK(pc.id[i] >= 0 && pc.id[i] < n);
            FUZZ_CHECK(pc.len[i] > 0 && (size_t)pc.off[i] + pc.len[i] <= pc.text_len);
            ids[i] = pc.id[i];
        }
        out = NULL;
        FUZZ_CHECK(mt_spm_decode(sp, ids, pc.n, &out, &out_len, &err) == MT_OK);
        FUZZ_CHECK(out && strlen(out) <= out_len);
        free(out);
        free(ids);
    }
    mt_pieces_free(&pc);

    int32_t ids[512];
    int k = ids_from((const uint8_t *)text, len, n, ids, 512), ok = 1;
    for (int i = 0; i < k; i++)
        ok &= ids[i] >= 0 && ids[i] < n;
    out = NULL;
    st = mt_spm_decode(sp, ids, k, &out, NULL, &err);
    FUZZ_CHECK(ok ? st == MT_OK : st == MT_ERR_INPUT && out == NULL);
    free(out);
}

static void fuzz_marian(const mt_tokenizer *tok, const char *text, size_t len, int small)
{
    mt_err err = {0};
    enum { CAP = 8192 };
    int32_t *ids = malloc(sizeof *ids * (CAP + 1));
    FUZZ_CHECK(ids);
    for (int target = 0; target < 2; target++) {
        int n = -1, max = small ? small : CAP;
        ids[max] = -12345;                              /* a canary just past max_ids */
        mt_status st = mt_tokenizer_encode(tok, text, len, target, ids, max, &n, &err);
        FUZZ_CHECK(ids[max] == -12345);
        if (st == MT_ERR_INPUT)
            break;                                      /* invalid UTF-8: both sides refuse */
        FUZZ_CHECK(st == MT_OK || st == MT_ERR_TOO_LONG);
        FUZZ_CHECK(n >= 1);
        if (st == MT_ERR_TOO_LONG) {
            FUZZ_CHECK(n > max);
            continue;
        }
        FUZZ_CHECK(n <= max && ids[n - 1] == mt_tokenizer_eos(tok));
        for (int i = 0; i < n; i++)
            FUZZ_CHECK(ids[i] >= 0 && ids[i] < mt_tokenizer_vocab_size(tok));
        char *out = NULL;
        FUZZ_CHECK(mt_tokenizer_decode(tok, ids, n, &out, &err) == MT_OK && out);
        free(out);
    }
    int k = ids_from((const uint8_t *)text, len, mt_tokenizer_vocab_size(tok), ids, CAP);
    char *out = NULL;
    FUZZ_CHECK(mt_tokenizer_decode(tok, ids, k, &out, &err) == MT_OK && out);
    free(out);
    for (int i = 0; i < 3 && i < k; i++)
        (void)mt_tokenizer_piece(tok, ids[i]);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned sel = data[0] % (N_SPM + N_TOK), small = data[0] / (N_SPM + N_TOK) % 4;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (sel < N_SPM)
        fuzz_spm(spms[sel], text, len);
    else
        fuzz_marian(toks[sel - N_SPM], text, len, (int)small * 3);
    return 0;
}
