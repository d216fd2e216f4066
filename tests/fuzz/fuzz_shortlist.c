/* fuzz_shortlist: the lexical shortlist readers (engine/formats/shortlist_fmt.c)
 * on untrusted bytes: Marian's binary format (header sizes against the file
 * with overflow, checksum, offsets, ids against a vocabulary), Marian's text
 * table and CTranslate2's vmap.  The first input byte picks the reader; the
 * rest is the file.  After a successful binary parse every promise of
 * shortlist_fmt.h is checked: offsets from 0, non-decreasing, the last the
 * entry count, every id below the vocabulary, the lists inside the buffer.
 * Text callbacks check that each field they get lies inside the input, is
 * non-empty and holds no blank (or, for a vmap source, no TAB or newline). */
#include "fuzz_common.h"

#include "formats/shortlist_fmt.h"

#include <string.h>

#define VOCAB 1000

static const char *lo, *hi;

static int inside(const char *p, size_t n) { return p >= lo && p + n <= hi; }

static mt_status on_text(void *ctx, const char *trg, size_t trg_n, const char *src, size_t src_n, double prob,
                         long line, size_t at, mt_err *err)
{
    FUZZ_CHECK(inside(trg, trg_n) && inside(src, src_n) && trg_n > 0 && src_n > 0 && line >= 1);
    FUZZ_CHECK(!memchr(trg, ' ', trg_n) && !memchr(src, '\n', src_n) && prob == prob);
    FUZZ_CHECK(lo + at <= trg);
    return MT_OK;
}

static mt_status on_vmap(void *ctx, const char *src, size_t src_n, const char *trg, size_t trg_n, long line,
                         size_t at, mt_err *err)
{
    FUZZ_CHECK(inside(trg, trg_n) && inside(src, src_n) && trg_n > 0 && line >= 1);
    FUZZ_CHECK(!memchr(src, '\t', src_n) && !memchr(src, '\n', src_n) && !memchr(trg, ' ', trg_n));
    if (*(int *)ctx && trg_n == 1 && trg[0] == '!')        /* a callback's failure stops the parse */
        return mt_err_set(err, MT_ERR_INPUT, "stop");
    return MT_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 3, stop = data[0] & 4;
    const uint8_t *buf = data + 1;
    size_t n = size - 1;
    lo = (const char *)buf, hi = (const char *)buf + n;
    mt_err err = {0};
    if (which == 0) {
        mt_lex_bin b;
        mt_status st = mt_lex_bin_parse(buf, n, VOCAB, &b, &err);
        if (st != MT_OK) {
            FUZZ_CHECK(st == MT_ERR_FORMAT && err.msg[0]);
            return 0;
        }
        FUZZ_CHECK(b.offsets == buf + MT_LEX_HEADER && b.ids + 4 * b.n_entries == buf + n);
        FUZZ_CHECK(mt_lex_offset(&b, 0) == 0 && mt_lex_offset(&b, b.n_words) == b.n_entries);
        for (uint64_t w = 0; w < b.n_words; w++)
            FUZZ_CHECK(mt_lex_offset(&b, w) <= mt_lex_offset(&b, w + 1));
        for (uint64_t j = 0; j < b.n_entries; j++)
            FUZZ_CHECK(mt_lex_id(&b, j) < VOCAB);
        FUZZ_CHECK(mt_lex_checksum(buf, n) == b.checksum);
    } else if (which == 1) {
        mt_status st = mt_lex_text_parse((const char *)buf, n, on_text, NULL, &err);
        FUZZ_CHECK(st == MT_OK || (st == MT_ERR_FORMAT && strstr(err.msg, "line ")));
    } else {
        mt_status st = mt_vmap_parse((const char *)buf, n, on_vmap, &stop, &err);
        FUZZ_CHECK(st == MT_OK || (st == MT_ERR_FORMAT && strstr(err.msg, "line ")) ||
                   (st == MT_ERR_INPUT && stop));
    }
    return 0;
}
