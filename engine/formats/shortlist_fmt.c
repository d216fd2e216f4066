/* shortlist_fmt.c: Marian's binary and text lexical shortlists and
 * CTranslate2's vocabulary map, read and validated (shortlist_fmt.h). */
#include "shortlist_fmt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t mt_lex_offset(const mt_lex_bin *b, uint64_t w) { return le64(b->offsets + 8 * w); }
uint32_t mt_lex_id(const mt_lex_bin *b, uint64_t j) { return le32(b->ids + 4 * j); }

uint64_t mt_lex_checksum(const uint8_t *buf, size_t n)
{
    uint64_t seed = 0;
    size_t words = n < 16 ? 0 : (n - 16) / 8;       /* Marian: whole words only */
    for (size_t i = 0; i < words; i++)
        seed ^= le64(buf + 16 + 8 * i) + 0x9e3779b9u + (seed << 6) + (seed >> 2);
    return seed;
}

mt_status mt_lex_bin_parse(const uint8_t *buf, size_t n, uint64_t tgt_vocab, mt_lex_bin *out, mt_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < MT_LEX_HEADER)
        return mt_err_set(err, MT_ERR_FORMAT, "binary shortlist: %zu bytes, shorter than its 48-byte header", n);
    if (le64(buf) != MT_LEX_MAGIC)
        return mt_err_set(err, MT_ERR_FORMAT, "binary shortlist: byte 0: magic 0x%016llx is not 0x%016llx",
                          (unsigned long long)le64(buf), (unsigned long long)MT_LEX_MAGIC);
    uint64_t n_off = le64(buf + 32), n_ent = le64(buf + 40), room = n - MT_LEX_HEADER;
    if (n_off < 1 || n_off > room / 8 || n_ent > (room - n_off * 8) / 4 || room != n_off * 8 + n_ent * 4)
        return mt_err_set(err, MT_ERR_FORMAT, "binary shortlist: byte 32: %llu offsets and %llu entries need "
                          "%llu bytes after the header; the file has %llu (and at least 1 offset)",
                          (unsigned long long)n_off, (unsigned long long)n_ent,
                          n_off <= room / 8 ? (unsigned long long)(n_off * 8 + n_ent * 4) : ~0ull,
                          (unsigned long long)room);
    uint64_t sum = mt_lex_checksum(buf, n);
    if (sum != le64(buf + 8))
        return mt_err_set(err, MT_ERR_FORMAT, "binary shortlist: byte 8: checksum 0x%016llx, the content's is "
                          "0x%016llx (corrupted)", (unsigned long long)le64(buf + 8), (unsigned long long)sum);
    *out = (mt_lex_bin){.checksum = sum, .first_num = le64(buf + 16), .best_num = le64(buf + 24),
                        .n_words = n_off - 1, .n_entries = n_ent, .offsets = buf + MT_LEX_HEADER,
                        .ids = buf + MT_LEX_HEADER + 8 * n_off};
    uint64_t prev = 0;
    for (uint64_t w = 0; w < n_off; w++) {
        uint64_t o = mt_lex_offset(out, w);
        if ((w == 0 && o != 0) || o < prev || o > n_ent || (w == n_off - 1 && o != n_ent))
            return mt_err_set(err, MT_ERR_FORMAT, "binary shortlist: byte %llu: offset %llu of word %llu is out "
                              "of order (previous %llu, %llu entries; the first must be 0, the last %llu)",
                              (unsigned long long)(MT_LEX_HEADER + 8 * w), (unsigned long long)o,
                              (unsigned long long)w, (unsigned long long)prev, (unsigned long long)n_ent,
                              (unsigned long long)n_ent);
        prev = o;
    }
    for (uint64_t j = 0; tgt_vocab && j < n_ent; j++)
        if (mt_lex_id(out, j) >= tgt_vocab)
            return mt_err_set(err, MT_ERR_FORMAT, "binary shortlist: byte %llu: target id %u is outside the "
                              "vocabulary of %llu", (unsigned long long)(MT_LEX_HEADER + 8 * n_off + 4 * j),
                              mt_lex_id(out, j), (unsigned long long)tgt_vocab);
    return MT_OK;
}

/* ---- text ------------------------------------------------------------------------------ */
static int blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* The next field of [p, end) after blanks: *f, its length (0: none). */
static size_t field(const char **p, const char *end, const char **f)
{
    while (*p < end && blank(**p))
        (*p)++;
    *f = *p;
    while (*p < end && !blank(**p))
        (*p)++;
    return (size_t)(*p - *f);
}

mt_status mt_lex_text_parse(const char *buf, size_t n, mt_lex_text_cb cb, void *ctx, mt_err *err)
{
    long line = 0;
    for (size_t at = 0; at < n;) {
        const char *p = buf + at, *nl = memchr(p, '\n', n - at), *end = nl ? nl : buf + n;
        const char *trg, *src, *pr, *extra;
        line++;
        size_t tn = field(&p, end, &trg), sn = field(&p, end, &src), pn = field(&p, end, &pr);
        size_t xn = field(&p, end, &extra);
        if (tn || sn || pn || xn) {
            char num[64];
            char *stop = num;
            double prob = NAN;
            if (pn && pn < sizeof num) {
                memcpy(num, pr, pn);
                num[pn] = 0;
                prob = strtod(num, &stop);
            }
            if (!pn || pn >= sizeof num || xn || (size_t)(stop - num) != pn || !isfinite(prob))
                return mt_err_set(err, MT_ERR_FORMAT, "text shortlist: line %ld (byte %zu): expected \"target "
                                  "source probability\" (three fields, a finite number last)", line, at);
            int null_word = (tn == 4 && !memcmp(trg, "NULL", 4)) || (sn == 4 && !memcmp(src, "NULL", 4));
            mt_status st = null_word ? MT_OK : cb(ctx, trg, tn, src, sn, prob, line, at, err);
            if (st != MT_OK)
                return st;
        }
        at = (size_t)(end - buf) + 1;
    }
    return MT_OK;
}

mt_status mt_vmap_parse(const char *buf, size_t n, mt_vmap_cb cb, void *ctx, mt_err *err)
{
    long line = 0;
    for (size_t at = 0; at < n;) {
        const char *p = buf + at, *nl = memchr(p, '\n', n - at), *end = nl ? nl : buf + n;
        line++;
        if (end > p && end[-1] == '\r')
            end--;
        if (end > p) {
            const char *tab = memchr(p, '\t', (size_t)(end - p));
            if (!tab)
                return mt_err_set(err, MT_ERR_FORMAT, "vmap: line %ld (byte %zu): no TAB between the source "
                                  "n-gram and the target tokens", line, at);
            if (memchr(tab + 1, '\t', (size_t)(end - tab - 1)))
                return mt_err_set(err, MT_ERR_FORMAT, "vmap: line %ld (byte %zu): more than one TAB", line, at);
            const char *q = tab + 1, *t;
            int any = 0;
            for (size_t tn; (tn = field(&q, end, &t)) > 0; any = 1) {
                mt_status st = cb(ctx, p, (size_t)(tab - p), t, tn, line, at, err);
                if (st != MT_OK)
                    return st;
            }
            if (!any)
                return mt_err_set(err, MT_ERR_FORMAT, "vmap: line %ld (byte %zu): no target token", line, at);
        }
        at = (size_t)((nl ? nl : buf + n) - buf) + 1;
    }
    return MT_OK;
}
