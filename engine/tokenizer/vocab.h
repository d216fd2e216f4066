/* vocab: one Marian vocabulary file (vocab.json, target_vocab.json): a JSON
 * object {piece: id}, read into piece -> id and id -> piece tables, and the
 * ids of its special tokens.  Immutable after load.  Internal to engine/. */
#ifndef MT_VOCAB_H
#define MT_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"
#include "util/strmap.h"

typedef struct {
    char        *arena;      /* every key, NUL-terminated                 */
    mt_smap      map;        /* piece -> id                               */
    const char **piece;      /* [size] id -> piece (NULL for unused ids)  */
    uint32_t    *piece_len;  /* [size]                                    */
    int32_t      size;       /* max id + 1                                */
    int32_t      eos, unk, pad;
} mt_vocab;

/* The special-token strings (tokenizer_config.json's, or the defaults). */
typedef struct {
    const char *eos, *unk, *pad;
} mt_vocab_specials;

/* Every id must be in [0, 2^24) and every special token present (else
 * MT_ERR_FORMAT naming path); when two keys share an id, the last wins
 * id -> piece.  On failure *v is left empty. */
mt_status mt_vocab_load(mt_vocab *v, const char *path, const mt_vocab_specials *sp_tok, mt_err *err);
struct json_t;
/* The same from a parsed {piece: id} object (a Marian .yml vocabulary read
 * by marian.c); path names it in messages.  root is only read. */
mt_status mt_vocab_from_json(mt_vocab *v, const struct json_t *root, const char *path,
                             const mt_vocab_specials *sp_tok, mt_err *err);
void      mt_vocab_free(mt_vocab *v);

/* Id of piece s[0..n), or -1. */
static inline int32_t mt_vocab_id(const mt_vocab *v, const char *s, size_t n)
{
    return mt_smap_get(&v->map, s, n);
}

#endif
