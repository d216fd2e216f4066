/* spm_api: the public calls of one SentencePiece model, unigram or BPE (spm.c):
 * load and check a .spm file, normalize, encode to pieces, decode ids, and
 * the log-probability of a text (the model read as a unigram language model).
 * tokenizer.h includes it, so the rest of the tree reaches these calls
 * through tokenizer.h; spm.h adds what only tokenizer.c needs.  A header of
 * its own so that spm.c's prototypes need nothing of the Marian layer
 * (tokenizer.h includes spm's API, never the other way round).
 * Behaviour: docs/MARIAN.md section 6. */
#ifndef MT_SPM_API_H
#define MT_SPM_API_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef struct mt_spm mt_spm;

/* A list of pieces: piece i is text[off[i] .. off[i]+len[i]), its spm id id[i]. */
typedef struct {
    int       n, cap;
    int32_t  *id;
    uint32_t *off, *len;
    char     *text;
    size_t    text_len, text_cap;
} mt_pieces;

void mt_pieces_free(mt_pieces *p);

/* ---- one .spm model ---------------------------------------------------- */
mt_status mt_spm_load(const char *path, mt_spm **out, mt_err *err);
mt_status mt_spm_load_mem(const void *data, size_t len, mt_spm **out, mt_err *err);
void      mt_spm_free(mt_spm *sp);
int       mt_spm_size(const mt_spm *sp);
/* 1 for a BPE model (spm_bpe.c's merges), 0 for unigram (Viterbi). */
int       mt_spm_is_bpe(const mt_spm *sp);
/* Piece string of spm id (NUL-terminated, owned by sp; *len may be NULL), NULL if out of range. */
const char *mt_spm_piece(const mt_spm *sp, int32_t id, size_t *len);
/* Id of the UNKNOWN piece (spm's unk_id). */
int32_t   mt_spm_unk_id(const mt_spm *sp);
/* The normalized form of text (U+2581 for spaces, as spm's Normalize()). *out is malloc'd. */
mt_status mt_spm_normalize(const mt_spm *sp, const char *text, size_t len, char **out, size_t *out_len, mt_err *err);
/* Pieces of text, as spm.encode(text, out_type=str) / out_type=int. out is reset, not freed. */
mt_status mt_spm_encode(const mt_spm *sp, const char *text, size_t len, mt_pieces *out, mt_err *err);
/* Text of spm ids, as spm.decode(ids) (control pieces vanish, <0xXX> byte runs
 * become UTF-8 with U+FFFD for malformed bytes, U+2581 -> space, first leading
 * space dropped).  MT_ERR_INPUT for an id outside [0, mt_spm_size).  *out is
 * malloc'd and NUL-terminated; *out_len (may be NULL) gets its length. */
mt_status mt_spm_decode(const mt_spm *sp, const int32_t *ids, int n, char **out, size_t *out_len, mt_err *err);

/* ---- the model as a language model ------------------------------------- */
/* The longest text mt_spm_log_prob takes, in bytes. */
#define MT_SPM_LOG_PROB_MAX 4096

/* The natural-log probability of text[0..len) under a unigram model (a BPE
 * model: MT_ERR_UNSUPPORTED, it has no probabilities), as the
 * score of its best segmentation: the path mt_spm_encode takes (spm's Viterbi
 * over the normalized text, before runs of unknown characters are merged), the
 * sum of its pieces' scores, which are log-probabilities for NORMAL pieces;
 * an unknown character costs min_score - 10 (spm's kUnkPenalty), a
 * USER_DEFINED piece of L bytes L * max_score - 0.1 (spm's own scores).  It is
 * what python3-sentencepiece 0.1.97 reports as
 * NBestEncodeAsImmutableProto(text, 2).nbests[0].score (to float rounding:
 * spm sums in float).  Text that normalizes to nothing: 0.
 * A model trained on one language's text is a language model of it: compare
 * two models' log-probabilities of one text to tell which language it is in.
 * Any bytes (malformed UTF-8 is scored as spm reads it); len at most
 * MT_SPM_LOG_PROB_MAX, else MT_ERR_TOO_LONG.  One buffer per call (malloc'd,
 * grown while normalizing), its size bounded through MT_SPM_LOG_PROB_MAX: the
 * normalized text and the Viterbi lattice; sp is only read, so threads may
 * share it. */
mt_status mt_spm_log_prob(const mt_spm *sp, const char *text, size_t len, double *logp, mt_err *err);
/* 1 when a and b were loaded from byte-identical files (a 64-bit FNV-1a hash of
 * the file taken at load, and its size), 0 otherwise (also when one is NULL).
 * Cheap: nothing is read but the two fingerprints. */
int       mt_spm_same(const mt_spm *a, const mt_spm *b);

#endif
