/* SentencePiece unigram tokenizer + Marian vocabulary: the one public header
 * of the tokenizer files.
 *
 * mt_spm       one .spm file (SentencePiece ModelProto): normalizer + Viterbi.
 * mt_tokenizer a Marian model directory's source.spm, target.spm, vocab.json
 *              (and target_vocab.json when the vocabularies are separate).
 *
 * The files (their internal headers are for engine/ only):
 *   tokenizer.c  mt_tokenizer_*: load a model directory, encode, decode, piece lookups
 *   spm.c        mt_spm_*: one unigram model: load and check, Viterbi encode, decode
 *                (spm_api.h, included below: the public calls; spm.h: tokenizer.c's extras)
 *   spm_norm.c   spm's Normalizer: precompiled charsmap, whitespace (spm_norm.h)
 *   spm_proto.c  the ModelProto wire-format reader (spm_proto.h)
 *   vocab.c      one vocab.json: piece <-> id, special-token ids (vocab.h)
 * and from engine/util: strmap (string -> id: hash map, byte trie), strbuf (byte buffer).
 *
 * Both are immutable after load and safe to share between threads.
 * Contract (docs/MARIAN.md sections 5 and 6): encode = spm pieces mapped
 * through vocab.json (absent pieces -> <unk>; a leading ">>xx<<" kept whole),
 * then </s> appended.  decode = drop </s>, <unk>, <pad>; join pieces with the
 * target spm; U+2581 -> space; trim.
 *
 * Reference: Debian's python3-sentencepiece 0.1.97 and models/recipe/marian_tok.py
 * (tests/test_tokenizer.c checks both, bit for bit).  Details of that contract:
 *  - Only unigram .spm models load; BPE/WORD/CHAR give MT_ERR_UNSUPPORTED.  A
 *    malformed, truncated or inconsistent file gives MT_ERR_FORMAT naming it.
 *  - Special-token strings typed in the text ("</s>", "<pad>") are NOT split out
 *    as HF's tokenizer() does; they are ordinary text, as in marian_tok.py.
 *  - The language code is the prefix up to the first "<<" when the text starts
 *    with ">>"; it maps to its vocab.json id (or <unk>).
 *  - decode: an id with no vocab.json entry decodes as the piece "<unk>" (the spm
 *    unk surface " â "); a piece unknown to target.spm is copied
 *    verbatim (U+2581 kept); CONTROL pieces such as <s> vanish; the final trim is
 *    Python's str.strip() (all Unicode whitespace).
 *  - clean_up_tokenization_spaces: HF v4's replacements (" ." -> "." ...) are
 *    applied only when tokenizer_config.json says true.  Absent counts as FALSE
 *    (HF v4 would default to true; v5 and marian_tok.py do no clean-up).
 *  - separate_vocabs: true in tokenizer_config.json -> target_vocab.json is
 *    required and used for target=1 encoding and for decoding (its own </s>,
 *    <unk>, <pad>); vocab.json serves the source side.  The getters below always
 *    describe vocab.json.
 *  - special tokens: tokenizer_config.json's eos_token/unk_token/pad_token
 *    (default "</s>", "<unk>", "<pad>") must be in the vocabulary.
 */
#ifndef MT_TOKENIZER_H
#define MT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "spm_api.h"       /* mt_spm, mt_pieces: one SentencePiece model (spm.c) */
#include "util/status.h"

typedef struct mt_tokenizer mt_tokenizer;

/* ---- Marian tokenizer ---------------------------------------------------- */
/* The files of a tokenizer, wherever they come from (a Hugging Face directory,
 * a Marian release).  A vocabulary is a vocab.json-style file ({piece: id}),
 * or that object already parsed (a Marian .yml vocabulary read by marian.c:
 * then the path only names it in messages). */
struct json_t;
typedef struct {
    const char *src_spm, *tgt_spm;          /* paths of the SentencePiece models */
    const char *src_vocab;                  /* the (source, or joint) vocabulary */
    const char *tgt_vocab;                  /* the target vocabulary; NULL or = src_vocab when joint */
    const struct json_t *src_vocab_obj;     /* when set: src_vocab's content, parsed */
    const struct json_t *tgt_vocab_obj;     /* when set: tgt_vocab's content, parsed */
    const char *eos_token, *unk_token, *pad_token;   /* NULL: "</s>", "<unk>", "<pad>" */
    int         clean_up;                   /* clean_up_tokenization_spaces */
} mt_tokenizer_files;

mt_status mt_tokenizer_load_files(const mt_tokenizer_files *files, mt_tokenizer **out, mt_err *err);
/* A Hugging Face model directory (source.spm, target.spm, vocab.json, and
 * tokenizer_config.json, target_vocab.json when present / separate). */
mt_status mt_tokenizer_load(const char *model_dir, mt_tokenizer **out, mt_err *err);
void      mt_tokenizer_free(mt_tokenizer *tok);

/* Source text -> Marian ids (</s> appended).  Writes at most max_ids ids;
 * returns MT_ERR_TOO_LONG (and the needed count in *n_ids) when they do not fit,
 * MT_ERR_INPUT for invalid UTF-8.  target=1 uses target.spm. */
mt_status mt_tokenizer_encode(const mt_tokenizer *tok, const char *text, size_t len, int target,
                              int32_t *ids, int max_ids, int *n_ids, mt_err *err);
/* Marian ids -> text.  *out is malloc'd and NUL-terminated. */
mt_status mt_tokenizer_decode(const mt_tokenizer *tok, const int32_t *ids, int n, char **out, mt_err *err);
/* 1 when decoding grows by appending: the text of ids[0..k) is a prefix of
 * the text of ids[0..n) for every k <= n whose last kept id is not a byte
 * piece ("<0xE2>": a character may still be incomplete).  That holds for the
 * spm decode and the final strip; HF's clean-up (" ." -> ".") and spm
 * denormalization rules may rewrite what came before, so then 0.  (A
 * streaming caller emits per token when 1, per sentence when 0.) */
int mt_tokenizer_decode_appends(const mt_tokenizer *tok);
/* 1 when a decoding id is a byte piece ("<0xE2>") of the target spm. */
int mt_tokenizer_is_byte_piece(const mt_tokenizer *tok, int32_t id);
/* Marian id -> piece string from vocab.json (NULL when out of range). */
const char *mt_tokenizer_piece(const mt_tokenizer *tok, int32_t id);
int32_t     mt_tokenizer_piece_id(const mt_tokenizer *tok, const char *piece);   /* -1 if absent */
int         mt_tokenizer_vocab_size(const mt_tokenizer *tok);     /* max vocab.json id + 1 */
int32_t     mt_tokenizer_eos(const mt_tokenizer *tok);
int32_t     mt_tokenizer_unk(const mt_tokenizer *tok);
int32_t     mt_tokenizer_pad(const mt_tokenizer *tok);
/* The target side (target_vocab.json when separate, else the same as above). */
int         mt_tokenizer_target_vocab_size(const mt_tokenizer *tok);
int32_t     mt_tokenizer_target_eos(const mt_tokenizer *tok);
/* The SentencePiece model of a side (target 0: source.spm, 1: target.spm),
 * owned by tok (for mt_spm_log_prob, mt_spm_same); NULL when tok is. */
const mt_spm *mt_tokenizer_spm(const mt_tokenizer *tok, int target);


#endif
