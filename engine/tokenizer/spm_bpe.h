/* spm_bpe: SentencePiece BPE encoding (bpe_model.cc's Model::Encode) over a
 * normalized text, for spm.c.  Internal to engine/tokenizer.
 *
 * The text is split into characters (a USER_DEFINED piece matched at a
 * position is one frozen symbol, never merged), then adjacent symbols are
 * merged while their concatenation is a piece: the highest score first, the
 * leftmost on ties, with a heap of candidate pairs over a linked list of
 * symbols (O(n log n)); UNUSED pieces are merged like the others and split
 * back at the end along the pair that last produced them (spm's rev_merge).
 * Ids are PieceToId of each final piece (reserved pieces first, else the
 * unknown id); merging runs of unknown pieces and byte fallback are spm.c's
 * (the same PopulateSentencePieceText as for unigram). */
#ifndef MT_SPM_BPE_H
#define MT_SPM_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "util/strmap.h"

typedef struct {
    const mt_ptrie *match;      /* NORMAL, USER_DEFINED, UNUSED pieces (spm's pieces_) */
    const mt_ptrie *user;       /* USER_DEFINED pieces, or NULL                         */
    const mt_smap  *ids;        /* piece -> id, reserved pieces winning (PieceToId)      */
    const float    *score;      /* [n_pieces]                                            */
    const uint8_t  *type;       /* [n_pieces], MT_SPM_NORMAL...                          */
    int32_t         unk_id;
    int             has_unused; /* any UNUSED piece: the rev_merge log is kept           */
} mt_spm_bpe;

/* The pieces of s[0..n) (n >= 1, at most INT32_MAX / 4): piece i is
 * s[off[i] .. off[i] + len[i]), id[i] its PieceToId.  off, len, id have room
 * for n entries.  Returns the count, or -1 without memory (one allocation a
 * call, about 80 bytes a byte of text, nothing in the merge loop). */
int mt_spm_bpe_encode(const mt_spm_bpe *m, const uint8_t *s, size_t n, uint32_t *off, uint32_t *len,
                      int32_t *id);

#endif
