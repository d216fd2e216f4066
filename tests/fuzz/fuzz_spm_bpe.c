/* fuzz_spm_bpe: SentencePiece BPE models (engine/tokenizer/spm_bpe.c) from
 * untrusted bytes, and their encodings checked against a naive reference.
 *   1. the input is a .spm file: mt_spm_load_mem; inputs that are not BPE
 *      models are left to fuzz_spm_model;
 *   2. a BPE model that loads encodes fixed texts (six scripts, whitespace
 *      runs, unknown characters) and the input's tail: ids in range, pieces
 *      inside the normalized text, decode succeeds;
 *   3. for texts up to 48 normalized bytes and models of at most 4096 pieces
 *      without UNUSED pieces, the ids equal a reference written here from
 *      bpe_model.cc's definition, without heap or linked list: split into
 *      characters (user-defined pieces whole, frozen), then repeatedly scan
 *      every adjacent pair and merge the one whose concatenation is a
 *      NORMAL/USER_DEFINED/UNUSED piece of the highest score, the leftmost
 *      on ties; ids by PieceToId (reserved pieces first, else <unk>); runs of
 *      unknown pieces merged, or split into <0xXX> pieces with byte_fallback.
 * Seeds: tests/fuzz/corpus/spm_bpe/ (small BPE models from spm_train). */
#include "fuzz_common.h"

#include "tokenizer/spm_proto.h"
#include "tokenizer/tokenizer.h"

#define REF_MAX_TEXT   48
#define REF_MAX_PIECES 4096

typedef struct {
    uint32_t off, len;
    int      freeze;
} rsym;

static int normal_class(int t)
{
    return t == MT_SPM_NORMAL || t == MT_SPM_USER_DEFINED || t == MT_SPM_UNUSED;
}

/* The piece of the given class equal to s[0..n), or -1 (a linear scan). */
static int find_piece(const mt_spm_proto *m, const uint8_t *s, size_t n, int reserved)
{
    for (int i = 0; i < m->n_pieces; i++)
        if (normal_class(m->type[i]) != reserved && m->piece[i].n == n && !memcmp(m->piece[i].p, s, n))
            return i;
    return -1;
}

static int piece_to_id(const mt_spm_proto *m, const uint8_t *s, size_t n, int unk)
{
    int id = find_piece(m, s, n, 1);
    if (id < 0)
        id = find_piece(m, s, n, 0);
    return id < 0 ? unk : id;
}

/* The reference ids of the normalized t[0..n) into ids (room for 6 n); returns the count. */
static int reference(const mt_spm_proto *m, int unk, const uint8_t *t, size_t n, int32_t *ids)
{
    static const uint8_t char_len[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
    rsym sy[REF_MAX_TEXT];
    int k = 0;
    for (size_t pos = 0; pos < n; k++) {
        size_t best = 0;
        for (int i = 0; i < m->n_pieces; i++)       /* the longest user-defined prefix */
            if (m->type[i] == MT_SPM_USER_DEFINED && m->piece[i].n > best && m->piece[i].n <= n - pos &&
                !memcmp(m->piece[i].p, t + pos, m->piece[i].n))
                best = m->piece[i].n;
        size_t len = best ? best : char_len[t[pos] >> 4];
        if (len > n - pos)
            len = n - pos;
        sy[k] = (rsym){ (uint32_t)pos, (uint32_t)len, best > 0 };
        pos += len;
    }
    for (;;) {
        int at = -1;
        float score = 0;
        for (int i = 0; i + 1 < k; i++) {
            if (sy[i].freeze || sy[i + 1].freeze)
                continue;
            int id = find_piece(m, t + sy[i].off, sy[i].len + sy[i + 1].len, 0);
            if (id >= 0 && (at < 0 || m->score[id] > score)) {
                at = i;
                score = m->score[id];
            }
        }
        if (at < 0)
            break;
        sy[at].len += sy[at + 1].len;
        memmove(&sy[at + 1], &sy[at + 2], (size_t)(k - at - 2) * sizeof *sy);
        k--;
    }
    int w = 0, prev_unk = 0;
    for (int i = 0; i < k; i++) {
        int id = piece_to_id(m, t + sy[i].off, sy[i].len, unk);
        if (id == unk && m->byte_fallback) {
            for (uint32_t b = 0; b < sy[i].len; b++) {
                char hex[8];
                snprintf(hex, sizeof hex, "<0x%02X>", t[sy[i].off + b]);
                ids[w++] = piece_to_id(m, (const uint8_t *)hex, 6, unk);
            }
        } else if (!(id == unk && prev_unk)) {
            ids[w++] = id;
        }
        prev_unk = id == unk;
    }
    return w;
}

static void use_text(const mt_spm *sp, const mt_spm_proto *m, int compare, const char *text, size_t len)
{
    mt_err err = { 0 };
    mt_pieces pc = { 0 };
    if (mt_spm_encode(sp, text, len, &pc, &err) != MT_OK) {
        mt_pieces_free(&pc);
        return;
    }
    for (int i = 0; i < pc.n; i++) {
        FUZZ_CHECK(pc.id[i] >= 0 && pc.id[i] < mt_spm_size(sp));
        FUZZ_CHECK(pc.len[i] > 0 && (size_t)pc.off[i] + pc.len[i] <= pc.text_len);
    }
    char *dec = NULL;
    if (mt_spm_decode(sp, pc.id, pc.n, &dec, NULL, &err) == MT_OK)
        free(dec);
    char *norm = NULL;
    size_t nn = 0;
    if (compare && mt_spm_normalize(sp, text, len, &norm, &nn, &err) == MT_OK && nn <= REF_MAX_TEXT) {
        int32_t ref[6 * REF_MAX_TEXT];
        int rn = reference(m, mt_spm_unk_id(sp), (const uint8_t *)norm, nn, ref);
        FUZZ_CHECK(rn == pc.n);
        FUZZ_CHECK(!rn || !memcmp(ref, pc.id, (size_t)rn * sizeof *ref));
    }
    free(norm);
    mt_pieces_free(&pc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_err err = { 0 };
    mt_spm *sp = NULL;
    if (mt_spm_load_mem(data, size, &sp, &err) != MT_OK) {
        FUZZ_CHECK(sp == NULL && err.msg[0]);
        return 0;
    }
    if (!mt_spm_is_bpe(sp)) {
        mt_spm_free(sp);
        return 0;
    }
    /* The same bytes parsed again for the reference's piece table (the loader
     * accepted them, so the parse does too). */
    mt_spm_proto m;
    FUZZ_CHECK(mt_spm_proto_parse(data, size, "fuzz.spm", &m, &err) == MT_OK);
    int compare = m.n_pieces <= REF_MAX_PIECES;
    for (int i = 0; i < m.n_pieces && compare; i++)
        compare = m.type[i] != MT_SPM_UNUSED;
    double lp;
    FUZZ_CHECK(mt_spm_log_prob(sp, "a", 1, &lp, &err) == MT_ERR_UNSUPPORTED);

    static const char *const texts[] = {
        "", " ", "Hello world, the quick brown fox.", "  Two  spaces\tand\ttabs  ", "caf\xc3\xa9 \xe2\x96\x81 ab",
        "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xce\x93\xce\xb5\xce\xb9\xce\xb1",
        "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 \xe4\xbd\xa0\xe5\xa5\xbd \xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87",
        "\xf0\x9f\x98\x80 <sep> http://x ab ab ab", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        use_text(sp, &m, compare, texts[i], strlen(texts[i]));
    size_t tail = size < 40 ? size : 40;        /* the pieces' own bytes make good text */
    use_text(sp, &m, compare, (const char *)data + size - tail, tail);
    mt_spm_proto_free(&m);
    mt_spm_free(sp);
    return 0;
}
