/* Internal: a reader for SentencePiece's ModelProto (.spm files) in protobuf
 * wire format, without a protobuf library (docs/MARIAN.md 6.1, 6.2).
 *
 * The parsed struct borrows every string and the charsmap from the caller's
 * buffer, which must outlive it.  Only the fields inference needs are kept;
 * every other field, known or not, is skipped by wire type.  Every length and
 * varint is checked against the buffer, so a truncated or hostile file yields
 * MT_ERR_FORMAT, never an over-read.  Semantic checks (one UNKNOWN piece, no
 * duplicates, byte pieces...) are the loader's job (spm.c).
 */
#ifndef MT_SPM_PROTO_H
#define MT_SPM_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

/* ModelProto.SentencePiece.Type */
enum {
    MT_SPM_NORMAL = 1, MT_SPM_UNKNOWN = 2, MT_SPM_CONTROL = 3,
    MT_SPM_USER_DEFINED = 4, MT_SPM_UNUSED = 5, MT_SPM_BYTE = 6,
};

/* TrainerSpec.ModelType */
enum { MT_SPM_UNIGRAM = 1, MT_SPM_BPE = 2, MT_SPM_WORD = 3, MT_SPM_CHAR = 4 };

typedef struct {
    const uint8_t *p;
    size_t         n;
} mt_spm_bytes;

typedef struct {
    int          present;                  /* the message occurred in the file   */
    mt_spm_bytes name;                     /* e.g. "nmt_nfkc"                     */
    mt_spm_bytes charsmap;                 /* precompiled_charsmap (may be empty) */
    int          add_dummy_prefix;         /* default 1                           */
    int          remove_extra_whitespaces; /* default 1                           */
    int          escape_whitespaces;       /* default 1                           */
} mt_spm_normspec;

typedef struct {
    int           n_pieces;
    mt_spm_bytes *piece;  /* [n_pieces] */
    float        *score;  /* [n_pieces] */
    uint8_t      *type;   /* [n_pieces], MT_SPM_NORMAL... */

    /* TrainerSpec */
    int          model_type;                 /* default MT_SPM_UNIGRAM */
    int          vocab_size;                 /* informational          */
    int          treat_whitespace_as_suffix;
    int          byte_fallback;
    int32_t      unk_id, bos_id, eos_id, pad_id;
    int          has_unk_surface;
    mt_spm_bytes unk_surface;                /* default " \xE2\x81\x87 " */

    mt_spm_normspec normalizer, denormalizer;
} mt_spm_proto;

/* Parse buf[0..len) into *out (arrays malloc'd; strings point into buf).
 * name names the file in error messages.  On failure *out is left empty
 * (safe to pass to mt_spm_proto_free) and err says what and where. */
mt_status mt_spm_proto_parse(const uint8_t *buf, size_t len, const char *name,
                             mt_spm_proto *out, mt_err *err);
void      mt_spm_proto_free(mt_spm_proto *p);

#endif
