/* SentencePiece unigram tokenizer + Marian vocabulary, and Hugging Face
 * tokenizer.json BPE: the one public header of the tokenizer files.
 *
 * mt_spm       one .spm file (SentencePiece ModelProto): normalizer + Viterbi (unigram)
 *              or merges (BPE).
 * mt_tokenizer a Marian model directory's source.spm, target.spm, vocab.json
 *              (and target_vocab.json when the vocabularies are separate).
 * mt_hf_tokenizer  a tokenizer.json BPE (Llama 2, Qwen2/Qwen3): at the end.
 * mt_prompt    a translation prompt for a decoder-only LM on an mt_hf_tokenizer.
 * mt_multi_tokenizer  NLLB-200 / M2M-100 (fairseq ids, language codes): last.
 *
 * The files (their internal headers are for engine/ only):
 *   tokenizer.c  mt_tokenizer_*: load a model directory, encode, decode, piece lookups
 *   spm.c        mt_spm_*: one model: load and check, Viterbi encode, decode
 *   spm_bpe.c    BPE encoding (spm_bpe.h)
 *   multi.c      mt_multi_*: NLLB-200 and M2M-100 tokenizers
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
 *  - Unigram and BPE .spm models load (BPE: spm_bpe.c, sentencepiece's
 *    bpe_model.cc); WORD/CHAR give MT_ERR_UNSUPPORTED.  A
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
/* 1 when decoding grows by appending but for the end: the text of ids[0..k)
 * is a prefix of the text of more ids once its trailing U+FFFD run (bytes of
 * a character not complete yet: byte-level BPE) is left out, for k whose
 * last kept id is not a byte piece.  A decoder-only model's tokenizer.json
 * without HF's clean-up (which may rewrite what came before).  (A streaming
 * caller then emits per token, holding back such a run.) */
int mt_tokenizer_decode_grows(const mt_tokenizer *tok);
/* 1 when a decoding id is a byte piece ("<0xE2>") of the target spm. */
int mt_tokenizer_is_byte_piece(const mt_tokenizer *tok, int32_t id);
/* Marian id -> piece string from vocab.json (NULL when out of range). */
const char *mt_tokenizer_piece(const mt_tokenizer *tok, int32_t id);
int32_t     mt_tokenizer_piece_id(const mt_tokenizer *tok, const char *piece);   /* -1 if absent */
int         mt_tokenizer_vocab_size(const mt_tokenizer *tok);     /* max vocab.json id + 1 */
int32_t     mt_tokenizer_eos(const mt_tokenizer *tok);
int32_t     mt_tokenizer_unk(const mt_tokenizer *tok);
int32_t     mt_tokenizer_pad(const mt_tokenizer *tok);
/* 1: a Marian tokenizer with one vocabulary.json for both sides (not
 * separate_vocabs, not tokenizer.json nor NLLB / M2M-100's): a source id is
 * the same piece as that target id (the copy guard compares them). */
int         mt_tokenizer_joint(const mt_tokenizer *tok);
/* The target side (target_vocab.json when separate, else the same as above). */
int         mt_tokenizer_target_vocab_size(const mt_tokenizer *tok);
int32_t     mt_tokenizer_target_eos(const mt_tokenizer *tok);
/* The SentencePiece model of a side (target 0: source.spm, 1: target.spm),
 * owned by tok (for mt_spm_log_prob, mt_spm_same); NULL when tok is. */
const mt_spm *mt_tokenizer_spm(const mt_tokenizer *tok, int target);

/* A decoder-only model's tokenizer.json behind the calls above (it takes
 * hf, freed with tok, also on failure).  Then: encode target 0 = the file's
 * encode with its special tokens (Llama 2: <s> first; nothing appended),
 * target 1 = without them, its eos appended (as </s> above); decode = the
 * file's decoder, special tokens skipped, no strip; decode_appends 0;
 * pieces, ids, sizes and eos/unk/pad from the file; no spm (NULL). */
typedef struct mt_hf_tokenizer mt_hf_tokenizer;
mt_status mt_tokenizer_from_hf(mt_hf_tokenizer *hf, mt_tokenizer **out, mt_err *err);
/* The tokenizer.json inside tok, or NULL (a Marian tokenizer). */
const mt_hf_tokenizer *mt_tokenizer_hf(const mt_tokenizer *tok);

/* An NLLB-200 / M2M-100 directory's tokenizer (mt_multi_load, below) behind
 * the calls above; tok owns it.  Then: encode (target 0 or 1) = the text's
 * pieces + [</s>] WITHOUT a language token (mt_multi_encode_text: the
 * caller puts the source language's id, mt_tokenizer_multi); decode =
 * mt_multi_decode (special and language ids skipped); pieces, ids, sizes,
 * eos/unk/pad from it; both sides' spm is its sentencepiece.bpe.model. */
typedef struct mt_multi_tokenizer mt_multi_tokenizer;
mt_status mt_tokenizer_load_multi(const char *model_dir, mt_tokenizer **out, mt_err *err);
/* The multilingual tokenizer inside tok, or NULL. */
const mt_multi_tokenizer *mt_tokenizer_multi(const mt_tokenizer *tok);

/* ---- Hugging Face tokenizer.json BPE (decoder-only models) ------------------ */
/* mt_hf_tokenizer: a tokenizer.json of model type BPE and, when present,
 * the tokenizer_config.json beside it, as the Llama 2 and Qwen2/Qwen3
 * families publish them (hf_load.c reads and checks, hf_bpe.c encodes and
 * decodes; hf_unicode.c, hf_split.c: the Unicode tables and the Qwen regex).
 * Immutable after load; safe to share between threads.
 *
 * Implemented (anything else is refused with MT_ERR_UNSUPPORTED naming it;
 * a malformed file gives MT_ERR_FORMAT naming the problem):
 *  - model: BPE with vocab, merges ("a b" strings or [a, b] pairs; lower
 *    index merges first, leftmost first), unk_token, fuse_unk, byte_fallback
 *    ("<0xNN>" tokens), ignore_merges.  Not: dropout,
 *    continuing_subword_prefix / end_of_word_suffix other than "" or null.
 *  - normalizer: Sequence, Prepend, Replace (String patterns), NFC.
 *  - pre_tokenizer: none; Metaspace (prepend_scheme always/first/never or the
 *    older add_prefix_space, split); Split with Qwen2's or Llama 3's regex
 *    (behavior Isolated), then ByteLevel (add_prefix_space and use_regex
 *    false), alone or in a Sequence in that order.
 *  - added_tokens: split out of the text before the model, leftmost-longest,
 *    normalized ones from the normalized text; single_word, lstrip, rstrip.
 *  - post_processor: TemplateProcessing (single), ByteLevel, a Sequence of
 *    them; applied when add_special_tokens.
 *  - decoder: Sequence, Replace (String), ByteFallback, Fuse, Strip,
 *    ByteLevel, Metaspace; no decoder: tokens joined with spaces.
 *  - tokenizer_config.json: bos/eos/pad/unk tokens (a string or an AddedToken
 *    object; each must be a token), chat_template (kept, not run),
 *    model_max_length (any JSON number: 1e30 parses), add_bos/eos_token
 *    (read; the post_processor decides what encode adds),
 *    clean_up_tokenization_spaces (HF's clean-up at decode).
 * Classes of the Qwen regex are Oniguruma's (the Rust library's engine):
 * \s is White_Space (U+0085 yes, U+FEFF no: JavaScript's \s differs there);
 * letters, numbers and NFC from Unicode 14.0 (mt_hf_unicode_version()). */
/* (typedef mt_hf_tokenizer: above) */

/* dir/tokenizer.json, and dir/tokenizer_config.json when present. */
mt_status mt_hf_tokenizer_load(const char *dir, mt_hf_tokenizer **out, mt_err *err);
/* The two files by path (config_json may be NULL). */
mt_status mt_hf_tokenizer_load_files(const char *tokenizer_json, const char *config_json,
                                     mt_hf_tokenizer **out, mt_err *err);
/* The two files' contents (config may be NULL); name is used in messages. */
mt_status mt_hf_tokenizer_load_mem(const char *json, size_t json_len, const char *config, size_t config_len,
                                   const char *name, mt_hf_tokenizer **out, mt_err *err);
void      mt_hf_tokenizer_free(mt_hf_tokenizer *tok);

/* Text -> ids: added tokens split out, then normalizer, pre-tokenizer, BPE;
 * with add_special_tokens, the post_processor's tokens (Llama 2: <s> first).
 * Writes at most max_ids ids; MT_ERR_TOO_LONG (and the needed count in
 * *n_ids) when they do not fit; MT_ERR_INPUT for invalid UTF-8. */
mt_status mt_hf_tokenizer_encode(const mt_hf_tokenizer *tok, const char *text, size_t len, int add_special_tokens,
                                 int32_t *ids, int max_ids, int *n_ids, mt_err *err);
/* Ids -> text through the file's decoder; special added tokens left out when
 * skip_special_tokens.  *out is malloc'd and NUL-terminated, *out_len (may
 * be NULL) its length (a decoded text may hold NUL).  An id outside
 * [0, vocab_size) or without a token gives MT_ERR_INPUT. */
mt_status mt_hf_tokenizer_decode(const mt_hf_tokenizer *tok, const int32_t *ids, int n, int skip_special_tokens,
                                 char **out, size_t *out_len, mt_err *err);
int         mt_hf_tokenizer_vocab_size(const mt_hf_tokenizer *tok);    /* max id + 1 (added tokens too) */
const char *mt_hf_tokenizer_token(const mt_hf_tokenizer *tok, int32_t id);          /* NULL if none */
int32_t     mt_hf_tokenizer_token_id(const mt_hf_tokenizer *tok, const char *token); /* -1 if none */
int         mt_hf_tokenizer_is_special(const mt_hf_tokenizer *tok, int32_t id);
/* tokenizer_config.json's tokens (-1 when absent or null); unk falls back to model.unk_token. */
int32_t     mt_hf_tokenizer_bos(const mt_hf_tokenizer *tok);
int32_t     mt_hf_tokenizer_eos(const mt_hf_tokenizer *tok);
int32_t     mt_hf_tokenizer_pad(const mt_hf_tokenizer *tok);
int32_t     mt_hf_tokenizer_unk(const mt_hf_tokenizer *tok);
const char *mt_hf_tokenizer_chat_template(const mt_hf_tokenizer *tok);   /* NULL when absent */
double      mt_hf_tokenizer_model_max_length(const mt_hf_tokenizer *tok); /* 0 when absent */
int         mt_hf_tokenizer_cleans_up(const mt_hf_tokenizer *tok);        /* clean_up_tokenization_spaces */
const char *mt_hf_unicode_version(void);


/* ---- Prompts: translation with a decoder-only LM (prompt.c) ---------------------- */
/* mt_prompt turns one translation (source and target language NAMES, e.g.
 * "English", "French", and the text) into the prompt ids of a Llama / Qwen
 * model, and says which ids and which decoded text end the translation.
 * It borrows tok (which must outlive it); immutable, safe to share.
 *
 * Kinds.  Each renders exactly what Hugging Face's apply_chat_template
 * (messages = [{"role": "user", "content": INSTRUCTION}],
 * add_generation_prompt = True, tokenize = True, i.e. the rendered string
 * encoded with add_special_tokens = False) gives with its published template:
 *   alma         no chat template (ALMA, Llama 2 based): MT_PROMPT_ALMA encoded
 *                WITH the post-processor's tokens (<s> first); stop string "\n".
 *   chatml       Qwen2 / Qwen2.5: [<|im_start|>system\nSYSTEM<|im_end|>\n]
 *                <|im_start|>user\nINSTRUCTION<|im_end|>\n<|im_start|>assistant\n.
 *                SYSTEM is the default system message of the tokenizer's own
 *                ChatML template (a literal after "<|im_start|>system\n"; none
 *                if it has none), else Qwen2.5's "You are Qwen, created by
 *                Alibaba Cloud. You are a helpful assistant.".
 *   qwen3        Qwen3 with enable_thinking = false: <|im_start|>user\nINSTRUCTION
 *                <|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n
 *   zephyr       TinyLlama-1.1B-Chat (Zephyr): <|user|>\nINSTRUCTION</s>\n<|assistant|>\n
 *                (eos_token's string; no <s>: the template has none).
 *   llama2-chat  Llama-2-*-chat-hf: <s>[INST] strip(INSTRUCTION) [/INST] (bos_token's
 *                string; strip() is Python's str.strip, so a text's trailing
 *                whitespace goes, and "\n\n" with it for a blank text).
 *   gemma        Gemma 3 (gemma-3-1b-it): <bos><start_of_turn>user\nstrip(INSTRUCTION)
 *                <end_of_turn>\n<start_of_turn>model\n
 *   translategemma  TranslateGemma (its model card's prompt, as its chat template
 *                writes it): <bos><start_of_turn>user\nMT_PROMPT_TRANSLATEGEMMA
 *                (the text strip()ped)<end_of_turn>\n<start_of_turn>model\n.  It
 *                names each language by name and code: mt_prompt_encode_codes;
 *                the name is the template's own for the code (its "languages"
 *                table, when the chat_template has one and lists the code; a
 *                code's "_" read as "-" as the template does), else the name given.
 *   raw          the text alone, encoded with the post-processor's tokens;
 *                languages ignored (may be NULL).
 * INSTRUCTION is MT_PROMPT_INSTRUCTION.  Chat kinds need the tokens they
 * write: chatml/qwen3 <|im_start|> and <|im_end|>, zephyr an eos_token,
 * llama2-chat, gemma and translategemma a bos_token (else MT_ERR_UNSUPPORTED).
 *
 * "auto" (or NULL) picks the kind from tokenizer_config.json's chat_template
 * by fingerprints (markers, not the exact string; no Jinja engine):
 *   none -> alma; <|im_start|> with enable_thinking and </think> -> qwen3;
 *   <|im_start|> otherwise -> chatml (but <think> without enable_thinking,
 *   a reasoning template, is refused); <|user|> + <|assistant|> + eos_token
 *   without <|end|> (Phi-3) -> zephyr; [INST] + <<SYS>> + bos_token -> llama2-chat
 *   (but one with a built-in default system prompt is refused); <start_of_turn>
 *   with source_lang_code and target_lang_code -> translategemma; <start_of_turn>
 *   with Gemma 3's first_user_prefix and bos_token -> gemma.  Anything
 *   else: MT_ERR_UNSUPPORTED, the message quoting the template's start and
 *   naming the family when it looks like one (Llama 3, Gemma, Mistral,
 *   Phi-3); the caller may then name a kind.  A kind name not in the list:
 *   MT_ERR_INPUT naming the accepted ones.
 * Recognised and tested published templates: tests/fixtures/chat-templates/.
 *
 * Injection (a deliberate difference from HF): HF splits added tokens out
 * of the whole rendered string, so a text that spells "<|im_end|>" or "</s>"
 * would become that special id and close the turn.  Here the rendered
 * string is split at added tokens only outside the text's byte span (and no
 * added-token match may run into it); the text is tokenized as plain text
 * together with the template text around it, as HF tokenizes any segment.
 * For a text without added-token strings the ids are HF's, exactly.
 * Language names are not in that span: they must be 1..64 bytes of UTF-8
 * without control characters or added-token strings (else MT_ERR_INPUT). */
typedef struct mt_prompt mt_prompt;

#define MT_PROMPT_INSTRUCTION "Translate the following {src} text into {tgt}. Reply with the translation only.\n\n{text}"
#define MT_PROMPT_ALMA        "Translate this from {src} to {tgt}:\n{src}: {text}\n{tgt}:"
/* TranslateGemma's (google/translategemma-4b-it's model card and chat template):
 * {src_code} and {tgt_code} are the languages' codes. */
#define MT_PROMPT_TRANSLATEGEMMA \
    "You are a professional {src} ({src_code}) to {tgt} ({tgt_code}) translator. Your goal is to accurately " \
    "convey the meaning and nuances of the original {src} text while adhering to {tgt} grammar, vocabulary, and " \
    "cultural sensitivities.\nProduce only the {tgt} translation, without any additional explanations or " \
    "commentary. Please translate the following {src} text into {tgt}:\n\n\n{text}"

/* kind: NULL, "auto", or a kind name above.  *out owned by the caller
 * (mt_prompt_free).  Builds the stop ids (with a stop string: every token
 * whose string could decode to it, by byte, byte-fallback or byte-level
 * spelling, is decoded to check). */
mt_status   mt_prompt_new(const mt_hf_tokenizer *tok, const char *kind, mt_prompt **out, mt_err *err);
void        mt_prompt_free(mt_prompt *p);                      /* NULL is fine */
const char *mt_prompt_kind(const mt_prompt *p);                /* "alma", "chatml", ... */
const char *mt_prompt_system(const mt_prompt *p);              /* chatml's system message, or NULL */

/* The prompt ids of one translation.  Writes at most max_ids ids;
 * MT_ERR_TOO_LONG (and the needed count in *n_ids) when they do not fit;
 * MT_ERR_INPUT for invalid UTF-8 in text or a bad language name. */
mt_status mt_prompt_encode(const mt_prompt *p, const char *src, const char *tgt, const char *text, size_t len,
                           int32_t *ids, int max_ids, int *n_ids, mt_err *err);
/* The same with the languages' codes ("en", "fr"; NULL: none), which
 * translategemma needs (MT_ERR_INPUT without them) and the others ignore;
 * codes are checked as names are. */
mt_status mt_prompt_encode_codes(const mt_prompt *p, const char *src, const char *src_code, const char *tgt,
                                 const char *tgt_code, const char *text, size_t len, int32_t *ids, int max_ids,
                                 int *n_ids, mt_err *err);
/* 1 when p's kind writes language codes (translategemma). */
int       mt_prompt_needs_codes(const mt_prompt *p);
/* The rendered prompt string itself (*out malloc'd, NUL-terminated; what
 * mt_prompt_encode tokenizes, bos/eos of alma/raw excepted, which the
 * post-processor adds), and where the text sits in it (text_at, text_len:
 * each may be NULL).  Same checks as mt_prompt_encode. */
mt_status mt_prompt_render(const mt_prompt *p, const char *src, const char *tgt, const char *text, size_t len,
                           char **out, size_t *out_len, size_t *text_at, size_t *text_len, mt_err *err);
mt_status mt_prompt_render_codes(const mt_prompt *p, const char *src, const char *src_code, const char *tgt,
                                 const char *tgt_code, const char *text, size_t len, char **out, size_t *out_len,
                                 size_t *text_at, size_t *text_len, mt_err *err);

/* The ids that end a translation, sorted and unique (*ids owned by p): eos,
 * the template's end-of-turn tokens (chatml, qwen3: <|im_end|>, <|endoftext|>;
 * gemma, translategemma: <end_of_turn>, <eos>),
 * and every vocabulary id whose decoded text (alone, special tokens kept)
 * contains the stop string. */
int         mt_prompt_stop_ids(const mt_prompt *p, const int32_t **ids);
/* The text that ends a translation: "\n" for alma; NULL for the others. */
const char *mt_prompt_stop_string(const mt_prompt *p);
/* The length of a decoded output to keep: up to the stop string when there
 * is one, then trailing White_Space trimmed (the start is kept as it is). */
size_t      mt_prompt_keep(const mt_prompt *p, const char *text, size_t len);

/* ---- Chat: a list of messages (prompt.c; the OpenAI-compatible API) ---------------- */
/* apply_chat_template(messages, add_generation_prompt = True) of the chat
 * kinds above (alma and raw have none: mt_prompt_chat_refusal says so),
 * rendered by hand and checked against @huggingface/jinja on the published
 * templates (tests/tokenizers/ref_chat_msgs.mjs, tests/test_openai_units.c):
 *   chatml       [<|im_start|>system\nSYSTEM<|im_end|>\n] (the first message when
 *                its role is system, else the default system message), then
 *                each <|im_start|>ROLE\nCONTENT<|im_end|>\n, then <|im_start|>assistant\n
 *   qwen3        the same without a default system message; an assistant turn
 *                after the last user turn gets Qwen3's <think> block (its
 *                reasoning split at '</think>' as the template does); the end
 *                <|im_start|>assistant\n<think>\n\n</think>\n\n (thinking off)
 *   zephyr       each <|ROLE|>\nCONTENT EOS\n, then <|assistant|>\n
 *   llama2-chat  roles alternate user/assistant after an optional system
 *                message (in <<SYS>> inside the first user turn); each turn's
 *                content strip()ped: BOS[INST] USER [/INST] ASSISTANT EOS...;
 *                the last message must be a user's (MT_ERR_INPUT otherwise)
 *   gemma        Gemma 3's: BOS, then turns from a user turn, a user turn at every
 *                even place (MT_ERR_INPUT otherwise, as the template raises):
 *                <start_of_turn>ROLE\nCONTENT<end_of_turn>\n, ROLE "model" for
 *                assistant (a system message at an odd place stays "system", as
 *                the template writes it), each CONTENT strip()ped; a first
 *                system message goes, as it is, + "\n\n" before the first
 *                turn's content (dropped when no turn follows, as the template
 *                does); then <start_of_turn>model\n
 * translategemma renders no chat: its template takes structured translation
 * requests only (mt_prompt_chat_refusal says so).
 * Roles: system, user, assistant (others MT_ERR_INPUT naming messages[i]).
 * Contents are kept plain as the translation text is (no added token split
 * out of them); two contents both spelling added tokens: MT_ERR_INPUT. */
typedef struct {
    const char *role;           /* "system", "user", "assistant" */
    const char *content;        /* UTF-8, len bytes (NUL not needed) */
    size_t      len;
} mt_chat_msg;

/* NULL when p renders chats, else why not (a sentence for a message). */
const char *mt_prompt_chat_refusal(const mt_prompt *p);
/* The rendered string (*out malloc'd, NUL-terminated). */
mt_status   mt_prompt_chat_render(const mt_prompt *p, const mt_chat_msg *msgs, int n, char **out, size_t *out_len,
                                  mt_err *err);
/* Its ids (add_special_tokens false, as apply_chat_template); MT_ERR_TOO_LONG
 * and the needed count in *n_ids when they do not fit in max_ids. */
mt_status   mt_prompt_chat_encode(const mt_prompt *p, const mt_chat_msg *msgs, int n, int32_t *ids, int max_ids,
                                  int *n_ids, mt_err *err);

/* ---- Stop strings: a decoder-only model's output watched id by id (stop.c) -------- */
/* mt_stop_match says when the text of the ids generated so far (as
 * mt_hf_tokenizer_decode gives it, special tokens skipped: the server's
 * reply) first holds one of up to MT_STOP_MAX stop strings, a stop string
 * spanning several tokens included: the OpenAI-compatible API's "stop",
 * which then ends decoding (mt_decode_params.stop_callback).  Feeding
 * allocates nothing: each id's bytes go through the decoder's per-token steps
 * into buffers sized at creation, and the last (longest stop - 1) bytes are
 * kept.  What it cannot see token by token: Hugging Face's clean-up of
 * spaces (clean_up_tokenization_spaces), a decoder step after Fuse other
 * than Strip, Strip or Replace after ByteFallback (MT_ERR_UNSUPPORTED at
 * creation: stop nothing early then); a stop string holding U+FFFD (found
 * only in a decoded text); the trailing part of a Strip after Fuse (the end
 * of a text that goes on is not known).  One per sequence; not shared
 * between threads. */
#define MT_STOP_MAX 8
typedef struct mt_stop_match mt_stop_match;

/* stops[0..n): 1..MT_STOP_MAX non-empty UTF-8 strings (copied). */
mt_status mt_stop_match_new(const mt_hf_tokenizer *tok, const char *const *stops, int n, mt_stop_match **out,
                            mt_err *err);
void      mt_stop_match_free(mt_stop_match *m);                  /* NULL is fine */
void      mt_stop_match_reset(mt_stop_match *m);                 /* a new sequence */
/* ids[0..n): the sequence's ids so far, each call's a prefix of the next
 * one's (ids[0..previous n) are not read again).  1 once the text holds a
 * stop string (and from then on), else 0. */
int       mt_stop_match_feed(mt_stop_match *m, const int32_t *ids, int n);

/* ---- Multilingual tokenizers: NLLB-200, M2M-100 (multi.c) ------------------------ */
/* mt_multi_tokenizer: a Hugging Face directory of fairseq's multilingual
 * models, as transformers' NllbTokenizer and M2M100Tokenizer read it (the
 * published files: sentencepiece.bpe.model, a SentencePiece model of type
 * BPE or unigram; tokenizer_config.json, special_tokens_map.json; M2M-100
 * also vocab.json).  Immutable after load; safe to share between threads.
 *
 * Kind (mt_multi_detect, from the files present): tokenizer_config.json's
 * tokenizer_class NllbTokenizer / NllbTokenizerFast -> nllb, M2M100Tokenizer
 * -> m2m100, another class refused; no class: vocab.json present -> m2m100,
 * else nllb.  No sentencepiece.bpe.model: an nllb directory with a
 * tokenizer.json (NllbTokenizerFast's save, transformers' NllbConverter)
 * takes its pieces from that file's BPE instead (mt_hf_tokenizer: normalizer
 * Precompiled / Replace / Strip, Metaspace, merges by rank; its vocabulary
 * must hold <s> <pad> </s> <unk> at 0..3, "<unk>" the BPE's unknown, the
 * pieces after them, the 202 codes in order and <mask> last, Metaspace and no
 * byte fallback: else refused naming the file); m2m100 (no fast class in
 * transformers) MT_ERR_UNSUPPORTED; neither file: MT_ERR_IO.
 *
 * Ids:
 *   nllb    fairseq's dictionary: <s>=0 <pad>=1 </s>=2 <unk>=3, spm piece k
 *           -> k + 1 (spm's <unk>, which must be id 0, with <s> 1 and </s> 2,
 *           -> 3), then the 202 codes of engine/tokenizer/nllb_langs.txt
 *           ("eng_Latn" = spm size + 1 + 46), then <mask>.
 *   m2m100  vocab.json (its <s>, <pad>, </s>, <unk>: tokenizer_config.json's
 *           names, defaults those; every id below its entry count), spm piece
 *           strings looked up in it (absent -> <unk>); "__xx__" for the 100
 *           codes of engine/tokenizer/m2m100_langs.txt from id len(vocab.json),
 *           then 8 "madeup" ids.
 * Checked, else refused naming the file: additional_special_tokens (in
 * tokenizer_config.json or special_tokens_map.json) must be NLLB's codes in
 * order (other lists: MT_ERR_UNSUPPORTED); added_tokens_decoder, when
 * present, must give each token the id above (a token unknown here only an
 * id past them: M2M-100's "madeupword0000"...); language_codes only "m2m100";
 * legacy_behaviour a boolean.
 * Encode (src_lang: a code, "eng_Latn" / "en", or its token "__en__"):
 *   [lang] + pieces + [</s>] (NLLB with legacy_behaviour: pieces + [</s>, lang]).
 *   From a tokenizer.json: the pieces as that file's BPE gives them (its
 *   added tokens typed in the text stay text, as above), then the same layout.
 *   Special-token strings typed in the text are ordinary text (as for Marian:
 *   "</s>" in a text is never the eos id).
 * The decoder starts from </s>; the target language's id (mt_multi_lang_id)
 * is the forced first generated token.
 * Decode: special ids (bos, pad, eos, unk, mask, languages) skipped; nllb:
 *   "".join(pieces).replace("\u2581", " ").strip() (the slow NllbTokenizer's
 *   convert_tokens_to_string; ids past <mask>, the padding rows of the
 *   published embeddings, are skipped too); m2m100: the pieces through the
 *   spm decoder (an id without a vocab.json entry is the piece "<unk>").  Then
 *   HF's clean-up when clean_up_tokenization_spaces is true (absent: false).
 *   A negative id: MT_ERR_INPUT. */
typedef enum { MT_MULTI_NONE = 0, MT_MULTI_NLLB = 1, MT_MULTI_M2M100 = 2 } mt_multi_kind;

mt_status     mt_multi_detect(const char *dir, mt_multi_kind *kind, mt_err *err);
mt_status     mt_multi_load(const char *dir, mt_multi_tokenizer **out, mt_err *err);
void          mt_multi_free(mt_multi_tokenizer *t);
/* Text -> ids as above.  Writes at most max_ids ids; MT_ERR_TOO_LONG (and the
 * needed count in *n_ids) when they do not fit; MT_ERR_INPUT for invalid
 * UTF-8 or an unknown language. */
mt_status     mt_multi_encode(const mt_multi_tokenizer *t, const char *src_lang, const char *text, size_t len,
                              int32_t *ids, int max_ids, int *n_ids, mt_err *err);
/* *out malloc'd, NUL-terminated; *out_len may be NULL. */
mt_status     mt_multi_decode(const mt_multi_tokenizer *t, const int32_t *ids, int n, char **out, size_t *out_len,
                              mt_err *err);
int32_t       mt_multi_lang_id(const mt_multi_tokenizer *t, const char *code);   /* -1 if not a language */
int           mt_multi_n_langs(const mt_multi_tokenizer *t);
const char   *mt_multi_lang(const mt_multi_tokenizer *t, int i);        /* "eng_Latn", "en"; NULL past the end */
const char   *mt_multi_lang_token(const mt_multi_tokenizer *t, int i);  /* "eng_Latn", "__en__"             */
int           mt_multi_is_special(const mt_multi_tokenizer *t, int32_t id);
mt_multi_kind mt_multi_kind_of(const mt_multi_tokenizer *t);
const char   *mt_multi_kind_name(mt_multi_kind kind);                     /* "nllb", "m2m100", "none" */
int32_t       mt_multi_vocab_size(const mt_multi_tokenizer *t);           /* ids defined: <mask> + 1; m2m100 incl. madeup */
/* pieces + [</s>], no language token: the caller puts it (mt_multi_legacy
 * says where: 0 first, 1 after </s>).  Errors as mt_multi_encode. */
mt_status     mt_multi_encode_text(const mt_multi_tokenizer *t, const char *text, size_t len, int32_t *ids,
                                   int max_ids, int *n_ids, mt_err *err);
int           mt_multi_legacy(const mt_multi_tokenizer *t);
/* An id's token string ("▁the", "<s>", "eng_Latn", "__en__"; NULL when it
 * has none: M2M-100's madeup words, NLLB's padding rows) and back (-1: none;
 * a language by its token's spelling only). */
const char   *mt_multi_piece(const mt_multi_tokenizer *t, int32_t id);
int32_t       mt_multi_piece_id(const mt_multi_tokenizer *t, const char *piece);
int           mt_multi_is_byte_piece(const mt_multi_tokenizer *t, int32_t id);
/* 1 when decoding grows by appending (mt_tokenizer_decode_appends). */
int           mt_multi_decode_appends(const mt_multi_tokenizer *t);
int32_t       mt_multi_bos(const mt_multi_tokenizer *t);
int32_t       mt_multi_eos(const mt_multi_tokenizer *t);                  /* also the decoder start */
int32_t       mt_multi_pad(const mt_multi_tokenizer *t);
int32_t       mt_multi_unk(const mt_multi_tokenizer *t);
const mt_spm *mt_multi_spm(const mt_multi_tokenizer *t);

#endif
