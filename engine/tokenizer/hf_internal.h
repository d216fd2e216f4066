/* hf_internal.h: the mt_hf_tokenizer struct, shared by hf_load.c (reads and
 * checks tokenizer.json and tokenizer_config.json) and hf_bpe.c (encode,
 * decode).  Internal to engine/tokenizer. */
#ifndef MT_HF_INTERNAL_H
#define MT_HF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"
#include "util/strbuf.h"
#include "util/strmap.h"

/* One pair -> merge entry of the BPE model: the pair (a, b) of ids merges into
 * id with priority rank (lower first).  Open addressing on key. */
typedef struct {
    uint64_t key;      /* (uint64_t)a << 32 | b; slot free when rank < 0 */
    int32_t  rank;
    int32_t  id;
} hf_merge;

typedef struct {
    const char *content;     /* in the pool, NUL-terminated */
    uint32_t    len;
    int32_t     id;
    uint8_t     special, single_word, lstrip, rstrip, normalized;
    uint8_t     blank;       /* only White_Space and U+2581 (Gemma's "\n\n", "▁▁"): closes no
                              * turn, so split out of a kept span too (hf_encode_span) */
} hf_added;

/* Normalizer steps, applied in order (a Sequence flattened).  SPACES: the
 * Regex " {2,}" (a run of two or more U+0020) -> b; PRECOMPILED: a
 * SentencePiece precompiled charsmap (spm_norm.c's, longest match, none of
 * spm's whitespace rules); STRIP: White_Space off the left and/or right. */
enum { HF_NORM_PREPEND, HF_NORM_REPLACE, HF_NORM_NFC, HF_NORM_SPACES, HF_NORM_PRECOMPILED, HF_NORM_STRIP };
struct hf_charsmap;
typedef struct {
    int         kind;
    const char *a, *b;       /* PREPEND: a; REPLACE: a -> b; SPACES: -> b (pool strings) */
    size_t      na, nb;
    int         left, right; /* STRIP */
    struct hf_charsmap *cm;  /* PRECOMPILED (owned: hf_norm_free) */
} hf_norm;

/* hf_charsmap.c: a Precompiled normalizer's charsmap (base64 in the file,
 * what SentencePiece stores as precompiled_charsmap), checked as spm_norm.c
 * checks it (MT_ERR_FORMAT naming name); run appends the mapped s[0..n)
 * to o: 0, or -1 without memory. */
mt_status hf_charsmap_new(const char *b64, size_t n, const char *name, struct hf_charsmap **out, mt_err *err);
void      hf_charsmap_free(struct hf_charsmap *cm);
int       hf_charsmap_run(const struct hf_charsmap *cm, const char *s, size_t n, mt_sbuf *o);

/* Decoder steps, applied in order to the list of token strings. */
enum { HF_DEC_REPLACE, HF_DEC_BYTE_FALLBACK, HF_DEC_FUSE, HF_DEC_STRIP, HF_DEC_BYTE_LEVEL, HF_DEC_METASPACE };
typedef struct {
    int         kind;
    const char *a, *b;       /* REPLACE: a -> b; METASPACE: a = the replacement */
    size_t      na, nb;
    uint32_t    strip_char;  /* STRIP: the character, start and stop counts */
    int         start, stop;
    int         prepend;     /* METASPACE: strip the first token's leading space */
} hf_dec;

enum { HF_PREPEND_ALWAYS, HF_PREPEND_FIRST, HF_PREPEND_NEVER };

struct mt_hf_tokenizer {
    struct hf_chunk *pool;    /* every string below lives here (hf_strdup)   */

    /* ids: the model's vocabulary and the added tokens together */
    int32_t   n_ids;          /* max id + 1                                  */
    const char **tok;         /* [n_ids] token string (NULL: no token)       */
    uint32_t *tok_len;        /* [n_ids]                                     */
    uint8_t  *special;        /* [n_ids] 1 for a special added token         */
    mt_smap   vocab;          /* the model's vocabulary: string -> id        */

    /* the BPE model */
    hf_merge *merge;
    size_t    merge_mask;
    int32_t   unk;            /* model.unk_token's id, -1 if none            */
    int       fuse_unk, byte_fallback, ignore_merges;
    int32_t   fallback_id[256];   /* "<0xNN>" ids (byte_fallback)            */

    /* added tokens: matched in the raw text (normalized 0) and in the
     * normalized text (normalized 1), leftmost-longest */
    hf_added *added;
    int       n_added;
    mt_smap   added_map;      /* content -> index in added                   */
    mt_ptrie  trie_raw, trie_norm;
    int       has_raw, has_norm;
    int       has_blank;      /* an added token is blank (hf_added.blank)            */

    hf_norm  *norm;
    int       n_norm;

    /* pre-tokenizer */
    int       split_digits;   /* 0: no Split; 1 Qwen2, 3 Llama 3 pattern     */
    int       byte_level;     /* ByteLevel: bytes -> characters, byte BPE    */
    int32_t   byte_id[256];   /* ByteLevel: the vocabulary id of each byte's character, -1 */
    int       metaspace;      /* Metaspace pre-tokenizer                     */
    const char *ms_rep;       /* its replacement (UTF-8) and scheme, split   */
    size_t    ms_rep_n;
    int       ms_prepend, ms_split;

    /* post-processor (single sequences): ids before and after */
    int32_t  *pre_ids, *post_ids;
    int       n_pre, n_post;

    hf_dec   *dec;
    int       n_dec;
    int       has_decoder;

    /* tokenizer_config.json */
    int32_t   bos, eos, pad, cfg_unk;
    const char *chat_template;
    double    model_max_length;
    int       add_bos, add_eos;   /* -1 when absent */
    int       clean_up;
};

/* A copy of s[0..n) (NUL-terminated) in tok's string pool, or NULL without memory. */
const char *hf_strdup(mt_hf_tokenizer *tok, const char *s, size_t n);

/* mt_hf_tokenizer_encode, except that no added token is split out of
 * text[keep_a..keep_b) (keep_a == keep_b: none kept, the public encode): a
 * match that would start inside it or run into it is not taken, so that
 * span is tokenized as plain text with what surrounds it.  prompt.c keeps
 * the user's text there; lstrip/rstrip of a token next to it may still take
 * its whitespace, as HF would.  A blank added token (hf_added.blank:
 * Gemma's runs of newlines) is the exception: it is split out anywhere, as
 * HF does, span or not: it is text the model reads as such, and ends no turn. */
mt_status hf_encode_span(const mt_hf_tokenizer *tok, const char *text, size_t len, size_t keep_a, size_t keep_b,
                         int add_special_tokens, int32_t *ids, int max_ids, int *n_ids, mt_err *err);

/* A Strip decoder step on s[0..n): the span [*a, return) left once up to
 * d->start leading and d->stop trailing d->strip_char are taken off (the
 * decoder of hf_bpe.c and the stop-string matcher of stop.c agree on it). */
size_t hf_strip_span(const hf_dec *d, const char *s, size_t n, size_t *a);

/* The byte-level alphabet (GPT-2): byte b is written as code point hf_byte_char[b]. */
extern const uint16_t hf_byte_char[256];

#endif
