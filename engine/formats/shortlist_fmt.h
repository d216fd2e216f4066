/* shortlist_fmt.h: the published lexical shortlist formats, read from memory
 * and validated; every error names the byte offset (and line) at fault.
 *
 *   Marian binary (lex.*.s2t.bin as Bergamot ships them; Marian's
 *   src/data/shortlist.cpp BinaryShortlistGenerator): little-endian
 *     u64 magic 0xF11A48D5013417F5, u64 checksum, u64 first_num, u64 best_num,
 *     u64 n_offsets, u64 n_entries, u64 offsets[n_offsets], u32 ids[n_entries]
 *   The checksum is boost-style hash_combine (std::hash<u64> = identity) over
 *   the whole u64 words from first_num to the end of the file.  Source word w
 *   has target ids ids[offsets[w] .. offsets[w + 1]); the frequent target
 *   words are ids 0 .. first_num-1.
 *
 *   Marian text ("target source probability" per line, any blank between:
 *   fast_align / marian-conv lexical tables); "NULL" words are skipped.
 *
 *   CTranslate2 vocabulary map (vmap): "source n-gram TAB target tokens"
 *   per line, tokens separated by spaces; an empty source keeps its targets
 *   for every input.
 *
 * Pieces are strings here: mapping them to ids is the model's (model/shortlist.c). */
#ifndef MT_SHORTLIST_FMT_H
#define MT_SHORTLIST_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define MT_LEX_MAGIC 0xF11A48D5013417F5ull
#define MT_LEX_HEADER 48

typedef struct {
    uint64_t checksum, first_num, best_num;
    uint64_t n_words;          /* source ids covered: n_offsets - 1 */
    uint64_t n_entries;
    const uint8_t *offsets;    /* [n_words + 1] u64 LE (read with mt_lex_offset) */
    const uint8_t *ids;        /* [n_entries] u32 LE (read with mt_lex_id) */
} mt_lex_bin;

/* Marian's checksum of a whole file (the words after magic and checksum). */
uint64_t mt_lex_checksum(const uint8_t *buf, size_t n);
/* Checks magic, sizes, checksum, offsets (from 0, non-decreasing, last =
 * n_entries) and every id < tgt_vocab (0: not checked). */
mt_status mt_lex_bin_parse(const uint8_t *buf, size_t n, uint64_t tgt_vocab, mt_lex_bin *out, mt_err *err);
uint64_t  mt_lex_offset(const mt_lex_bin *b, uint64_t w);
uint32_t  mt_lex_id(const mt_lex_bin *b, uint64_t j);

/* Text formats: one call per entry, strings NOT NUL-terminated; line is
 * 1-based, at the byte offset of the line's start.  A callback's failure
 * (its own message set) stops the parse and is returned. */
typedef mt_status (*mt_lex_text_cb)(void *ctx, const char *trg, size_t trg_n, const char *src, size_t src_n,
                                    double prob, long line, size_t at, mt_err *err);
mt_status mt_lex_text_parse(const char *buf, size_t n, mt_lex_text_cb cb, void *ctx, mt_err *err);

/* vmap: one call per (source n-gram, target token); src_n 0 = every input. */
typedef mt_status (*mt_vmap_cb)(void *ctx, const char *src, size_t src_n, const char *trg, size_t trg_n,
                                long line, size_t at, mt_err *err);
mt_status mt_vmap_parse(const char *buf, size_t n, mt_vmap_cb cb, void *ctx, mt_err *err);

#endif
