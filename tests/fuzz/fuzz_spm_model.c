/* fuzz_spm_model: a SentencePiece ModelProto (.spm file) from untrusted bytes.
 *   1. engine/tokenizer/spm_proto.c: the protobuf wire-format reader (varints, keys,
 *      length-delimited fields, groups, every field of ModelProto,
 *      TrainerSpec and NormalizerSpec); every string it returns must lie
 *      inside the input;
 *   2. engine/tokenizer/tokenizer.c mt_spm_load_mem: the semantic checks (one UNKNOWN
 *      piece, duplicates, byte pieces), the piece tries and the normalizer /
 *      denormalizer charsmaps (Darts double arrays read from the file);
 *   3. when the model loads, the model is used: normalize, encode and decode
 *      of fixed texts and of the input's last bytes, decode of every id and of
 *      every piece of the encoding (spm's round trip), the log-probability of
 *      each text (mt_spm_log_prob), mt_spm_same.
 * The input is the .spm file; seeds are small real models. */
#include "fuzz_common.h"

#include "tokenizer/spm_proto.h"
#include "tokenizer/tokenizer.h"

static int inside(const uint8_t *data, size_t size, mt_spm_bytes b)
{
    return b.n == 0 || (b.p >= data && b.n <= size && b.p - data <= (ptrdiff_t)(size - b.n));
}

static void use_text(const mt_spm *sp, const char *text, size_t len)
{
    mt_err err = {0};
    char *norm = NULL, *dec = NULL;
    size_t norm_len = 0, dec_len = 0;
    if (mt_spm_normalize(sp, text, len, &norm, &norm_len, &err) == MT_OK) {
        FUZZ_CHECK(norm && strlen(norm) <= norm_len);
        free(norm);
    }
    mt_pieces pc = {0};
    if (mt_spm_encode(sp, text, len, &pc, &err) == MT_OK) {
        int32_t *ids = malloc(sizeof *ids * (size_t)(pc.n ? pc.n : 1));
        FUZZ_CHECK(ids);
        for (int i = 0; i < pc.n; i++) {
            FUZZ_CHECK(pc.id[i] >= 0 && pc.id[i] < mt_spm_size(sp));
            FUZZ_CHECK((size_t)pc.off[i] + pc.len[i] <= pc.text_len);
            ids[i] = pc.id[i];
        }
        if (mt_spm_decode(sp, ids, pc.n, &dec, &dec_len, &err) == MT_OK) {
            FUZZ_CHECK(dec && strlen(dec) <= dec_len);
            free(dec);
        }
        free(ids);
    }
    mt_pieces_free(&pc);
    /* the model as a language model: any model, any bytes up to the cap (a score
     * the file makes NaN or infinite is the caller's to refuse: server/detect does) */
    double lp = 1;
    mt_status want = mt_spm_is_bpe(sp) ? MT_ERR_UNSUPPORTED : len <= MT_SPM_LOG_PROB_MAX ? MT_OK : MT_ERR_TOO_LONG;
    FUZZ_CHECK(mt_spm_log_prob(sp, text, len, &lp, &err) == want);
    FUZZ_CHECK(len > 0 || lp == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_err err = {0};
    mt_spm_proto p;
    if (mt_spm_proto_parse(data, size, "fuzz.spm", &p, &err) == MT_OK) {
        FUZZ_CHECK(p.n_pieces > 0 && p.piece && p.score && p.type);
        for (int i = 0; i < p.n_pieces; i++) {
            FUZZ_CHECK(inside(data, size, p.piece[i]));
            FUZZ_CHECK(p.type[i] >= MT_SPM_NORMAL && p.type[i] <= MT_SPM_BYTE);
        }
        FUZZ_CHECK(inside(data, size, p.normalizer.name) && inside(data, size, p.normalizer.charsmap));
        FUZZ_CHECK(inside(data, size, p.denormalizer.name) && inside(data, size, p.denormalizer.charsmap));
        FUZZ_CHECK(!p.has_unk_surface || inside(data, size, p.unk_surface));
    } else {
        FUZZ_CHECK(err.status == MT_ERR_FORMAT && err.msg[0]);
    }
    mt_spm_proto_free(&p);

    mt_spm *sp = NULL;
    mt_status st = mt_spm_load_mem(data, size, &sp, &err);
    if (st != MT_OK) {
        FUZZ_CHECK(sp == NULL && err.msg[0]);
        return 0;
    }
    int n = mt_spm_size(sp);
    FUZZ_CHECK(n > 0);
    int32_t unk = mt_spm_unk_id(sp);
    FUZZ_CHECK(unk >= 0 && unk < n);
    FUZZ_CHECK(mt_spm_piece(sp, -1, NULL) == NULL && mt_spm_piece(sp, n, NULL) == NULL);
    FUZZ_CHECK(mt_spm_same(sp, sp) && !mt_spm_same(sp, NULL));

    static const char *const texts[] = {
        "", " ", "Hello world.", "  Two  spaces\tand\ttabs  ", "caf\xc3\xa9 \xe2\x96\x81 \xef\xbc\xa1",
        "\xff\xfe broken \xc3", "\xe2\x81\x87 <unk> <s> </s> <0x41>", "\xf0\x9f\x98\x80\xe4\xb8\xad\xe6\x96\x87",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        use_text(sp, texts[i], strlen(texts[i]));
    size_t tail = size < 96 ? size : 96;        /* the pieces' own bytes make good text */
    use_text(sp, (const char *)data + size - tail, tail);

    /* every id decodes, alone and all together; an id out of range is refused */
    int32_t *ids = malloc(sizeof *ids * (size_t)n);
    FUZZ_CHECK(ids);
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        const char *piece = mt_spm_piece(sp, i, &len);
        FUZZ_CHECK(piece && strlen(piece) == len);
        ids[i] = i;
    }
    char *dec = NULL;
    if (mt_spm_decode(sp, ids, n, &dec, NULL, &err) == MT_OK)
        free(dec);
    int32_t bad[2] = {0, n};
    dec = NULL;
    FUZZ_CHECK(mt_spm_decode(sp, bad, 2, &dec, NULL, &err) == MT_ERR_INPUT && dec == NULL);
    free(ids);
    mt_spm_free(sp);
    return 0;
}
