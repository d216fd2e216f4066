/* spm: one SentencePiece unigram model (the public mt_spm_* calls are in
 * spm_api.h, which tokenizer.h includes); this header is what the Marian
 * layer (tokenizer.c) needs beyond them: decoding piece strings that are not
 * ids of the model.  Internal to engine/tokenizer. */
#ifndef MT_SPM_H
#define MT_SPM_H

#include <stddef.h>
#include <stdint.h>

#include "util/strbuf.h"
#include "spm_api.h"

/* A piece to decode: its string and PieceToId(string) in the decoding spm. */
typedef struct {
    const char *p;     /* piece string */
    size_t      n;
    int32_t     id;    /* PieceToId(piece) in the decoding spm */
} mt_spm_dpiece;

/* PieceToId: reserved pieces first, then normal pieces, else the unknown id. */
int32_t mt_spm_piece_to_id(const mt_spm *sp, const char *p, size_t n);
/* SentencePieceProcessor::Decode of pc[0..n) (ids in range), appended to o
 * (NUL-terminated): 0, or -1 without memory. */
/* 1 when the model has denormalization rules (applied to the whole decoded text). */
int     mt_spm_has_denorm(const mt_spm *sp);
/* 1 when spm id is a byte piece (<0xE2>): part of a character decoded from bytes. */
int     mt_spm_is_byte(const mt_spm *sp, int32_t id);
int     mt_spm_decode_pieces(const mt_spm *sp, const mt_spm_dpiece *pc, int n, mt_sbuf *o);

/* Shared by tokenizer.c and multi.c (defined in tokenizer.c): Python's
 * str.strip() (all Unicode whitespace) and HF v4's clean_up_tokenization
 * (" ." -> "." ...), in place on a NUL-terminated buffer. */
void    mt_tok_py_strip(mt_sbuf *b);
void    mt_tok_clean_up(mt_sbuf *b);

#endif
