/* word_align: the word links of a translated sentence, from its token
 * alignment (the engine's mt_hyp.align), as character offsets into the source
 * text and into the translation, so that a client can carry markup across.
 *
 * Words are runs of non-space characters (Unicode spaces as body.c's).  A
 * token belongs to the word its piece starts (a piece starting with U+2581,
 * SentencePiece's word mark, starts the next word), which is how SentencePiece
 * splits at spaces; should the counts disagree (a normalization that adds or
 * removes a space), the token goes to the last word.  Offsets are in code
 * points (Python's str indexing), [start, end).
 */
#ifndef SRV_WORD_ALIGN_H
#define SRV_WORD_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

typedef struct {
    long *v;            /* [n][4]: source start, end, target start, end */
    int   n;
    size_t cap;
} srv_links;

/* Code points in s[0..n). */
long srv_cp_count(const char *s, size_t n);

/* One sentence: src_ids [ns] (its pieces, no </s> nor language token) of
 * src_text, tgt_ids [nt] (no </s>) of tgt_text, align[t] the index into
 * src_ids of target token t (< 0 or >= ns: no link).  Appends each distinct
 * (source word, target word) pair, in target order, offsets plus src_cp0 and
 * tgt_cp0.  0, or -1 out of memory. */
int srv_word_links(const mt_tokenizer *tok, const char *src_text, size_t src_len, const int32_t *src_ids, int ns,
                   const char *tgt_text, size_t tgt_len, const int32_t *tgt_ids, int nt, const int32_t *align,
                   long src_cp0, long tgt_cp0, srv_links *out);

/* Where points between source words land in the target, by the word links
 * words [n_words][4] (source start, end, target start, end, in code points:
 * srv_tr_result.words): for point pos[i] (a source code point offset,
 * increasing; a line break DeepL's nonewlines read as a space, say), the
 * source words ending at or before it, nearest first, until one has a link;
 * the end of the farthest target word linked to it; then the first space of
 * tgt[0..tgt_len) at or after that end, past out[i - 1].  out[i]: that
 * space's code point offset in tgt, or -1 when there is none (no link, no
 * space left). */
void srv_align_points(const long *words, int n_words, const char *tgt, size_t tgt_len, const long *pos, int n,
                      long *out);

/* The pieces ids[start, end) of text[0..len) (its pieces, no </s> nor language
 * token) that make up the words holding bytes [a, b): a glossary term's
 * source span.  0, or -1 when no piece is found. */
int srv_token_span(const mt_tokenizer *tok, const char *text, size_t len, const int32_t *ids, int n, size_t a,
                   size_t b, int *start, int *end);

#endif
