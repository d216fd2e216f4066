/* mt.h: the inference engine's public API.
 *
 * Two objects, as in whisper.cpp (context/state) and llama.cpp (model/context):
 *   mt_model    loaded once from a Hugging Face MarianMT directory; immutable,
 *               weights mmapped read-only; shared by every thread.
 *   mt_session  everything one request mutates: KV caches, activations,
 *               scratch.  Sized once at creation; decoding allocates nothing
 *               per token.  One session is used by one thread at a time.
 *
 * Every function returns an mt_status and, on failure, fills *err (may be NULL)
 * with a message naming the file or field at fault.  Nothing here exits.
 *
 * Usage (load, session, decode, free; error checks shortened):
 *
 *   mt_err err = {0};
 *   mt_model *m;
 *   if (mt_model_load("models/en-fr", NULL, &m, &err) != MT_OK)
 *       return fprintf(stderr, "%s\n", err.msg), 1;
 *   mt_session *s;
 *   mt_session_new(m, NULL, &s, &err);                  // NULL: mt_session_default_params
 *   int32_t src[256];
 *   int n;
 *   mt_tokenizer_encode(mt_model_tokenizer(m), "Hello world.", 12, 0, src, 256, &n, &err);
 *   mt_decode_params dp = mt_decode_default_params();
 *   dp.beam_size = 4;
 *   dp.lengths.max_length = 128;
 *   mt_hyp hyp;                                          // [n sources][n_best]
 *   const int32_t *srcs[1] = {src};
 *   if (mt_generate(s, srcs, &n, 1, &dp, &hyp, &err) == MT_OK) {
 *       char *text;
 *       mt_tokenizer_decode(mt_model_tokenizer(m), hyp.ids, hyp.n_ids, &text, &err);
 *       puts(text);
 *       free(text);
 *       mt_hyps_free(&hyp, 1);
 *   }
 *   mt_session_free(s);
 *   mt_model_free(m);
 *
 * Many sequences joining and leaving one session between steps: mt_seq_start,
 * mt_step, mt_seq_take (below), or a feed of the decode loop, mt_decode_run.
 */
#ifndef MT_H
#define MT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {                     /* the headers below are plain C too */
#endif

#include "util/status.h"
#include "tokenizer/tokenizer.h"

/* This header's version (semantic: a major change breaks callers). */
#define MT_VERSION_MAJOR 0
#define MT_VERSION_MINOR 9
#define MT_VERSION_PATCH 0
#define MT_VERSION "0.9.0"

/* Every function of the API: visible from a shared library built with
 * -fvisibility=hidden (the engine's internals stay hidden). */
#if defined(__GNUC__) || defined(__clang__)
#define MT_API __attribute__((visibility("default")))
#else
#define MT_API
#endif

/* The widest beam search (the search's per-row arrays are sized by it); the
 * server, the CLI and the OpenAPI limits all come from this one constant. */
#define MT_MAX_BEAM 16
#define MT_MAX_CONSTRAINTS 16     /* lexical constraints (glossary terms) per source */

typedef struct mt_model   mt_model;
typedef struct mt_session mt_session;
typedef struct mt_shortlist mt_shortlist;
typedef struct mt_lang_vocab mt_lang_vocab;

/* ---- model ---------------------------------------------------------------- */
/* How weights are held in memory.  F16 halves the bytes a decode step reads
 * (its speed at batch 1 is those bytes over the memory bandwidth): every weight
 * matrix is rounded to half precision at load; activations stay F32. */
typedef enum { MT_WEIGHTS_F32 = 0, MT_WEIGHTS_F16, MT_WEIGHTS_I8 } mt_weights;
/* INT8 (MT_WEIGHTS_I8): every Linear and the vocabulary projection quantized
 * per output row, their inputs per row as each product runs, the products on
 * int8 with int32 sums (engine/kernels/linear_q8.c); embeddings, norms, attention and
 * the KV caches stay F32.  A quarter of the F32 bytes per decode step.  The
 * kernel is the CPU's best, found at run time (AVX-512 VNNI, AVX2, portable);
 * int8_kernel may ask for a slower one: all give the same bits. */
typedef enum { MT_INT8_AUTO = -1, MT_INT8_PORTABLE = 0, MT_INT8_AVX2 = 1, MT_INT8_VNNI512 = 2 } mt_int8_kernel;

typedef struct {
    int n_threads;      /* compute threads for the process (engine/kernels/parallel.h); 0 = leave as is */
    int compute_nice;   /* the nice value of those threads but the caller's (1-19: below the caller's
                           other threads); 0 = leave as is */
    mt_weights weights; /* default MT_WEIGHTS_F32: the checkpoint's values, exactly */
    mt_int8_kernel int8_kernel;   /* default MT_INT8_AUTO */
    long cache_l2;      /* F32/F16 products: the L2 bytes their k blocks are sized for;
                           0 (default) = the machine's, read at load (any size gives the same bits) */
} mt_model_params;

MT_API mt_model_params mt_model_default_params(void);
MT_API mt_status mt_model_load(const char *dir, const mt_model_params *params, mt_model **out, mt_err *err);
MT_API void      mt_model_free(mt_model *model);
/* A model's card: what the model is, without its weights.  Reads and checks,
 * as mt_model_load does, the config (config.json, generation_config.json; a
 * Marian release's YAML and the index of its .npz, whose mapping is then
 * closed), the languages (tokenizer_config.json) and the tokenizer, and finds
 * the weights file without reading it.  A card answers what needs only these:
 * mt_model_get_info (weight_bytes 0; dtype, weights, int8_kernel ""; format,
 * weights_file, file_bytes of the file found), mt_model_tokenizer,
 * mt_session_default_params, mt_decode_params_resolve, mt_decode_limit_bounds.
 * mt_session_new refuses it (MT_ERR_INPUT).  A server keeps its models' cards
 * resident and loads their weights (mt_model_load) only when they are used.
 * The card and a model loaded from the same directory give the same token ids
 * and resolve the same parameters. */
MT_API mt_status mt_model_load_card(const char *dir, mt_model **out, mt_err *err);
MT_API int       mt_model_is_card(const mt_model *model);     /* 1: a card, 0: weights loaded */

typedef struct {
    int d_model, enc_layers, dec_layers, enc_heads, dec_heads, enc_ffn, dec_ffn;
    int vocab_size;             /* target (decoder) vocabulary: the logits */
    int src_vocab_size;         /* source (encoder) vocabulary; = vocab_size unless separate */
    int max_positions;
    int32_t pad_id, eos_id, decoder_start_id;
    int default_beam;           /* generation_config.json num_beams (else config.json, else 1) */
    int default_max_length;     /* max_length, HF semantics: decoder length incl. start token */
    const char *activation;     /* "swish", "relu", "gelu" */
    const char *source_lang;    /* from tokenizer_config.json; "" when unknown */
    const char *target_lang;
    const char *dtype;          /* dtype of the weights on disk: "F32", "F16", "BF16" */
    const char *weights;        /* how they are held in memory: "F32", "F16" or "INT8" (mt_weights) */
    const char *int8_kernel;    /* INT8: "avx512-vnni", "avx2" or "portable"; else "" */
    size_t weight_bytes;        /* bytes of weights in use (mmapped or converted) */
    size_t file_bytes;          /* size of the weights file */
    const char *format;         /* the form loaded: "safetensors", "pytorch" (pytorch_model.bin),
                                   "marian-npz" (an original Marian/OPUS-MT release) */
    const char *weights_file;   /* its file name in the model directory */
    const char *architecture;   /* "marian" (encoder-decoder), "m2m_100" (M2M-100 and NLLB-200:
                                   pre-LN encoder-decoder, docs/M2M100.md), or a decoder-only LM's
                                   config.json model_type: "llama", "qwen2", "qwen3" */
    double rope_theta;          /* a decoder-only LM's RoPE base (0: none, sinusoidal positions) */
    int head_dim;               /* a decoder-only LM's attention head size (0: Marian) */
    int early_stopping;         /* generation_config.json / config.json early_stopping: 1 = a beam
                                   search ends once beam_size hypotheses are finished (HF's True) */
    /* generation_config.json "max_length_factor" / "max_length_extra" (mtserve's keys,
     * Marian's max-length-factor): an encoder-decoder's output is at most
     * ceil(factor x source ids) + extra ids (</s> included); factor 0: no such cap
     * (MT_LENGTH_FACTOR_NONE in requests).  The shipped models carry theirs. */
    float default_length_factor;
    int default_length_extra;
    /* generation_config.json "loop_no_repeat_ngram_size" (mtserve's key): an
     * encoder-decoder output that loops (mt.h penalties.loop_no_repeat) is
     * decoded again with that no_repeat_ngram_size; 0: no such guard. */
    int default_loop_ngram;
    /* generation_config.json "copy_guard" (mtserve's key, a boolean): the copy
     * guard (penalties.copy_guard) on for this model's requests by default. */
    int default_copy_guard;
} mt_model_info;

MT_API const mt_model_info *mt_model_get_info(const mt_model *model);
/* Bytes of weights one decoder step reads, as held: the decoder layers'
 * per-step products and the output head (0 for a card). */
MT_API size_t    mt_model_step_weight_bytes(const mt_model *model);
MT_API const mt_tokenizer  *mt_model_tokenizer(const mt_model *model);

/* ---- lexical shortlist ------------------------------------------------------
 * Which target ids a source's tokens may translate to (Marian / Bergamot's
 * lexical shortlist, CTranslate2's vocabulary map): per source id a list of
 * target ids, plus frequent ids always allowed.  Immutable once made; shared
 * by every session and thread, as the model is; a sequence uses it through
 * mt_decode_params.shortlist. */
typedef struct {
    int best;           /* per source id at most this many target ids, best first; a text
                           table: by probability (Marian's bestNum); 0 = the file's
                           (a binary one's lists as they are; a text table: 100) */
    int frequent;       /* ids 0..frequent-1 always allowed (Marian's firstNum); -1 = the
                           file's (a binary header's first_num, a vmap's empty-source line;
                           a text table: 100) */
    double threshold;   /* a text table: entries of lower probability are dropped (0: none) */
} mt_shortlist_params;

typedef struct {
    const char *format;     /* "marian-binary", "marian-text", "ct2-vmap", "built" */
    int src_vocab, tgt_vocab;
    int src_words;          /* source ids with a non-empty list */
    long entries;           /* (source id, target id) pairs */
    int max_list;           /* the longest list */
    int frequent;           /* ids always allowed (the frequent list) */
    long skipped;           /* text formats: entries naming a piece the vocabulary lacks */
} mt_shortlist_info;

MT_API mt_shortlist_params mt_shortlist_default_params(void);
/* Fills defaults (0 / -1 as above) and checks the ranges; MT_ERR_INPUT names the field. */
MT_API mt_status mt_shortlist_params_resolve(const mt_shortlist_params *in, mt_shortlist_params *out, mt_err *err);
/* A file in any of the three formats (engine/formats/shortlist_fmt.h), told
 * apart by content: binary when it has the magic, a NUL byte in its first 64
 * or a name ending ".bin"; else a TAB on the first line: a vmap; else the
 * text table.  Pieces are looked up in the model's vocabulary. */
MT_API mt_status mt_shortlist_load(const mt_model *m, const char *path, const mt_shortlist_params *params,
                            mt_shortlist **out, mt_err *err);
/* From memory: source id w's targets are ids[off[w] .. off[w+1]) for w < n_src
 * (off[0] = 0), frequent ids freq[0..n_freq) (NULL: none).  Copied. */
MT_API mt_status mt_shortlist_new(const mt_model *m, int n_src, const long *off, const int32_t *ids,
                           const int32_t *freq, int n_freq, mt_shortlist **out, mt_err *err);
MT_API void      mt_shortlist_free(mt_shortlist *sl);
MT_API const mt_shortlist_info *mt_shortlist_get_info(const mt_shortlist *sl);
/* Source id w's list (*n ids; NULL when none); the frequent ids. */
MT_API const int32_t *mt_shortlist_list(const mt_shortlist *sl, int w, int *n);
MT_API const int32_t *mt_shortlist_frequent(const mt_shortlist *sl, int *n);
/* Built from a tokenized parallel corpus (n pairs of source and target ids)
 * by co-occurrence: source id s keeps the `best` target ids t of highest
 * Dice coefficient 2 c(s,t) / (c(s) + c(t)) (c: sentence pairs holding them;
 * ties: the lower id), pairs seen fewer than min_count times dropped;
 * frequent: ids 0..frequent-1 (Marian's convention: the vocabulary is in
 * frequency order).  params->best 0 = 50, frequent -1 = 100. */
MT_API mt_status mt_shortlist_build(const mt_model *m, int n, const int32_t *const *src, const int *src_len,
                             const int32_t *const *tgt, const int *tgt_len, const mt_shortlist_params *params,
                             int min_count, mt_shortlist **out, mt_err *err);
/* Writes Marian's binary format (its frequent list must be ids 0..k-1). */
MT_API mt_status mt_shortlist_write(const mt_shortlist *sl, const char *path, mt_err *err);

/* ---- target-language vocabulary map ------------------------------------------
 * A multilingual model's (M2M-100, NLLB-200) target ids per language: a
 * sequence whose forced first token (mt_decode_params.forced_bos) is language
 * L's, given a map with a list for L, computes and searches L's ids alone
 * (with eos, its forced token, its prefix and constraints' ids; intersected
 * with its shortlist when it has one too).  The file format is defined in
 * engine/formats/langvocab_fmt.h; models/recipe/lang_vocab.py builds one from
 * text per language.  Immutable once made; shared as the model is. */
typedef struct {
    int languages;          /* languages listed */
    int vocab;              /* the model's target vocabulary */
    long ids;               /* ids over all the lists */
    int min_ids, max_ids;   /* the shortest and the longest list */
} mt_lang_vocab_info;

/* Reads and checks the file against model m (a card will do): every code one
 * of the model's languages (mt_multi_lang_id), once; every piece in its
 * vocabulary; errors name the file and the line. */
MT_API mt_status mt_lang_vocab_load(const mt_model *m, const char *path, mt_lang_vocab **out, mt_err *err);
MT_API mt_status mt_lang_vocab_parse(const mt_model *m, const char *buf, size_t n, mt_lang_vocab **out,
                                     mt_err *err);
/* From memory: language lang_ids[i] (its token id) lists ids[off[i] .. off[i+1])
 * (off[0] = 0); ids outside the vocabulary or a language twice refused.  Copied. */
MT_API mt_status mt_lang_vocab_new(const mt_model *m, int n_lang, const int32_t *lang_ids, const long *off,
                                   const int32_t *ids, mt_lang_vocab **out, mt_err *err);
MT_API void      mt_lang_vocab_free(mt_lang_vocab *lv);
MT_API const mt_lang_vocab_info *mt_lang_vocab_get_info(const mt_lang_vocab *lv);
/* The ids listed for the language whose token id is lang_id; -1: none listed
 * (its sequences are not restricted). */
MT_API int       mt_lang_vocab_count(const mt_lang_vocab *lv, int32_t lang_id);
/* 1: id is in that language's list. */
MT_API int       mt_lang_vocab_has(const mt_lang_vocab *lv, int32_t lang_id, int32_t id);

/* ---- session -------------------------------------------------------------- */
typedef struct {
    int max_batch;      /* sequences decoded together: sentences x beams */
    int max_src_len;    /* source tokens, </s> included */
    int max_tgt_len;    /* decoder positions, start token included */
    int kv_f16;         /* 1: the K/V caches hold half precision: half the bytes a decode
                           step's attention reads; K and V rounded once as they are
                           cached, so results differ slightly from the F32 cache */
    /* Lexical shortlists (mt_shortlist below): the most candidate ids one step's
     * LM head computes alone (the union over its rows); with more, or with a
     * row decoding without a shortlist, the step computes the whole head and
     * masks.  0 = the default, min(vocab, 4096), or vocab / 8 for a vocabulary
     * over 65,536 ids (NLLB-200, M2M-100: a target language's list fits);
     * -1 = always the whole head. */
    int shortlist_max;
    /* Where the step's candidate rows come from: 0 = the row-major F32 weights
     * when the model holds them (F32), else the packed ones; 1 = always the
     * packed ones (measured in docs/SHORTLIST.md).  Same bits either way. */
    int shortlist_from_packed;
    /* A sequence whose shortlist holds at most this many ids is searched over
     * them alone (argmax, log-softmax, beam top-k, sampling); a larger one over
     * [vocab] rows holding -inf outside it.  The same ids either way; the
     * log-probs' normalizer sums in another order (docs/SHORTLIST.md).
     * 0 = the default, min(vocab, 4096); -1 = never. */
    int shortlist_search_max;
} mt_session_params;

MT_API mt_session_params mt_session_default_params(const mt_model *model);
MT_API mt_status mt_session_new(const mt_model *model, const mt_session_params *params,
                         mt_session **out, mt_err *err);
MT_API void      mt_session_free(mt_session *s);
MT_API size_t    mt_session_bytes(const mt_session *s);   /* bytes allocated by the session */
/* The session's pages stay in memory once touched: one batch of many long
 * sentences leaves its K/V caches and logits resident for good.  Trimming
 * gives them back to the system when more than min_bytes beyond a new
 * session's are resident (0: whenever any are), and the session is then
 * exactly as mt_session_new made it (the same results); its next use
 * faults in again what it touches.  Only with no sequence in flight
 * (MT_ERR_BUSY, nothing done); call it when the session goes idle, not
 * between steps.  Checking costs a mincore over the session (~0.1 ms for
 * 200 MB); giving back, a madvise (~6 ms for 40 MB resident) and resetting
 * the few tables mt_session_new sets. */
MT_API mt_status mt_session_trim(mt_session *s, size_t min_bytes, mt_err *err);
MT_API size_t    mt_session_resident(const mt_session *s);   /* bytes of the session's buffers in memory now */

/* ---- decoding ------------------------------------------------------------- */
/* A decode's settings, grouped as the JSON API groups them ("sampling.top_k");
 * mt_decode_limits below gives each field's range and default.  Every field
 * 0 (or NULL) means its default or off, except as noted: start from
 * mt_decode_default_params(). */
typedef struct {
    int   beam_size;        /* 1 = greedy; 0 = the model's default; at most MT_MAX_BEAM */
    float length_penalty;   /* beam scores: sum log p / (generated length incl. </s>)^lp */
    int   n_best;           /* hypotheses returned per source, <= beam size */
    struct {
        int max_length;     /* HF max_length; 0 = min(model default, session max_tgt_len) */
        int min_length;     /* HF min_length: </s> banned while the decoder length (start token
                               included) is below it; 0 = off; at most max_length */
        /* An encoder-decoder sentence's own cap (Marian's max-length-factor): at most
         * ceil(max_length_factor x its source ids, </s> included) + the model's
         * default_length_extra generated ids, </s> included, within max_length, never
         * below what its prefix, constraints and min_length need.  0: the model's
         * default_length_factor, else MT_LENGTH_FACTOR_NONE (no cap); ignored by
         * decoder-only models (a prompt is no measure of its answer). */
        float max_length_factor;
    } lengths;
    /* The rules apply to the logits before the log-softmax, for greedy, sampling and beam
     * alike (CTranslate2's order); token log-probabilities and scores are of the ruled logits.
     * Forced tokens (the prefix, the constraints) are exempt from them. */
    struct {
        float repetition;   /* > 0 (0 or 1 = off): the logit of an id already in the output is
                               divided by it when positive, multiplied when negative (HF, CTranslate2) */
        int   no_repeat_ngram_size;   /* >= 0 (0 = off): no n-gram of the output occurs twice */
        /* The loop guard of encoder-decoders: a sentence whose best output loops
         * (some 4-gram of its ids 3 times, or one id 4 times in a row; </s> not
         * counted) is decoded once more from the start with no_repeat_ngram_size
         * this; the second output is the result.  0: the model's
         * default_loop_ngram; -1: off.  Only where the request sets no
         * no_repeat_ngram_size, samples not and streams not (a stream has sent
         * the first output's ids), and not for decoder-only models. */
        int   loop_no_repeat;
        /* The copy guard of encoder-decoders: a sentence whose best output
         * (without the forced prefix / target-language id and </s>) equals its
         * copy ids (below) is decoded once more from the start with the copy
         * ban (copy.ban); the second output is the result.  1: on; -1: off; 0:
         * the model's default_copy_guard (mt_decode_params_resolve makes it 1
         * or -1).  With no copy ids it does nothing.
         * Not with sampling or streaming, nor for decoder-only models.  When
         * the loop guard fires too, the one second decode has both rules. */
        int   copy_guard;
    } penalties;
    struct {
        int      enabled;   /* 1: draw each token (beam_size must be 1) instead of the argmax */
        float    temperature;   /* > 0 (0 = 1): the draw is from softmax(logits / temperature) */
        int      top_k;     /* >= 0 (0 = every id): only the top_k logits (ties with the k-th kept) */
        float    top_p;     /* (0, 1] (0 = 1): then the fewest ids, best first, whose mass reaches top_p */
        uint64_t seed;      /* the sequence's random stream (xoshiro256** seeded by splitmix64) */
    } sampling;
    int   token_scores;     /* 1: mt_hyp.token_logp */
    struct {
        int enabled;        /* 1: mt_hyp.align, from the cross-attention of layer */
        int layer;          /* decoder layer, 0-based; -1 = the last (Marian's guided-alignment layer) */
        int heads;          /* average of its first heads heads; 0 = all (1 = head 0, as Marian) */
    } alignment;
    /* Asked before every decoder step of mt_generate: nonzero stops it with
     * MT_ERR_ABORTED, every row freed (as whisper.cpp's abort callback).
     * NULL: never.  Called on the decoding thread. */
    int (*abort_callback)(void *data);
    void *abort_callback_data;
    /* Called by the decode loop (mt_decode_run) on its thread, after every
     * step: a greedy sequence's ids so far (final 0: what mt_seq_ids gives;
     * a beam sequence has none before it ends), and once when the sequence
     * finishes, its best hypothesis (final 1: hyps[0]'s ids).  ids live only
     * during the call; it must not block.  NULL: none.  Each sequence's own. */
    void (*progress_callback)(void *data, const int32_t *ids, int n, int final);
    void *progress_callback_data;
    /* Asked by the decode loop (mt_decode_run) on its thread after every
     * step (after the progress callback), with a running greedy or sampling
     * sequence's ids so far: nonzero ends it there (mt_seq_stop), its ids as
     * they stand, the last one kept.  The server's stop strings: the text of
     * those ids holds one (mt_stop_match).  Beam sequences are not asked.  It
     * must not block (and should not allocate: it runs for every token).
     * NULL: never.  Each sequence's own. */
    int (*stop_callback)(void *data, const int32_t *ids, int n);
    void *stop_callback_data;
    /* ---- what the output must hold, each sequence's own (engine/decode/constraints.c,
     * engine/decode/sampling.c).  Defaults: none.  A sequence's result does not
     * depend on the sequences decoded beside it, nor on the thread count. */
    const int32_t *prefix;      /* target prefix: ids forced first (no </s>, no pad); copied by mt_seq_start */
    int   n_prefix;             /* 0..max_length-2 (max_length-3 with forced_bos) */
    /* The copy guard's ids (penalties.copy_guard): the target ids an output
     * that merely gives the source back would have (no </s>; the server puts
     * the source's own ids, engine/decode/README.md).  With ban 1 the copy ban
     * applies from the first step (what the guard's second decode does; for
     * tests and references): while the generated ids (after the forced ones)
     * are a proper prefix of ids, the next of ids gets -inf, in every beam.
     * Copied by mt_seq_start; more than max_length - 2 ids: no guard. */
    struct {
        const int32_t *ids;
        int   n_ids;
        int   ban;
    } copy;
    /* Hugging Face's forced_bos_token_id: the first generated id is `id`, with
     * log p 0 (every other id's logit -inf), before the prefix.  NLLB-200 and
     * M2M-100 are told the target language so (its token, mt_multi_lang_id);
     * decoding then goes on as from a decoder input [start, id]. */
    struct {
        int     enabled;
        int32_t id;             /* a target id, not pad or </s> */
    } forced_bos;
    /* Lexical constraints (glossary terms, engine/decode/constraints.c): each
     * constraint's target ids appear in every hypothesis, as a contiguous run.
     * A constraint is started, and then forced to its end, at the step whose
     * alignment (the cross-attention argmax of alignment.layer and .heads) falls
     * in its source span, or when the steps left before max_length only just
     * hold what is unmet; </s> is banned while one is unmet; a run the model
     * produces by itself counts.  Copied by mt_seq_start. */
    const struct mt_constraint *constraints;
    int   n_constraints;        /* 0..MT_MAX_CONSTRAINTS; their ids and the prefix fit in max_length-2 */
    /* NULL, or a [vocab_size] map: an id whose entry is nonzero ends the
     * sequence as eos does (it is kept as the last id): a decoder-only
     * model's end of turn and the ids holding its prompt's stop string
     * (mt_prompt_stop_ids).  Not copied: it must outlive the sequence. */
    const uint8_t *end_ids;
    /* NULL (default: every id), or a lexical shortlist of this model
     * (mt_shortlist_load): each step's ids are those of the source's tokens'
     * lists, the shortlist's frequent ids, eos, the prefix and the constraints'
     * ids; every other id's logit is -inf before anything reads the logits
     * (rules, softmax, argmax, top-k, sampling, beams: the same code).  Not
     * copied: it must outlive the sequence.  Encoder-decoders only. */
    const mt_shortlist *shortlist;
    /* NULL (default), or a target-language vocabulary map of this model
     * (mt_lang_vocab_load): with forced_bos on and a list for that language,
     * the step's ids are the list's, with eos, the forced id, the prefix and
     * the constraints' ids; with a shortlist too, the ids both allow (plus
     * those).  A language the map does not list: no restriction.  Not copied. */
    const mt_lang_vocab *lang_vocab;
} mt_decode_params;

typedef struct mt_constraint {
    int src_start, src_end;     /* source positions [start, end) (the language token counts) */
    const int32_t *ids;         /* [n_ids] target ids (no </s>, no pad) */
    int n_ids;
} mt_constraint;

MT_API mt_decode_params mt_decode_default_params(void);

/* The decode fields' limits and defaults, one table (engine/decode/decode_params.c):
 * the resolver below checks against it, and the JSON API, the LibreTranslate
 * shape, the CLI and the served OpenAPI document take their ranges from it.
 * A bound or default that depends on the model, the session or the request
 * is named by an mt_bound; the rest are the row's numbers. */
typedef enum {
    MT_BOUND_CONST = 0,         /* the row's number */
    MT_BOUND_MAX_BEAM,          /* min(MT_MAX_BEAM, the session's max_batch) */
    MT_BOUND_MAX_TGT_LEN,       /* the session's max_tgt_len (decoder positions) */
    MT_BOUND_MAX_LENGTH,        /* the request's max_length */
    MT_BOUND_VOCAB,             /* the target vocabulary's size */
    MT_BOUND_MINUS_DEC_LAYERS,  /* -(decoder layers) */
    MT_BOUND_LAST_DEC_LAYER,    /* decoder layers - 1 */
    MT_BOUND_DEC_HEADS,         /* decoder heads */
    MT_BOUND_MODEL_BEAM,        /* default: the model's num_beams (1 when sampling; at least n_best) */
    MT_BOUND_MODEL_MAX_LENGTH,  /* default: the model's max_length, at most max_tgt_len */
    MT_BOUND_DRAWN,             /* default: drawn by the caller (a seed) */
    MT_BOUND_MODEL_LENGTH_FACTOR, /* default: the model's default_length_factor, else MT_LENGTH_FACTOR_NONE */
} mt_bound;

/* max_length_factor's largest value, and what it means: no cap (ceil(1000 x
 * a source) + extra is past any max_length a session allows). */
#define MT_LENGTH_FACTOR_NONE 1000.0

/* MT_LIMIT_BOOL: an int field that is 1 (on), -1 (off) or 0 (the default);
 * the JSON API and the CLI take it as a boolean (true / false, on / off). */
typedef enum { MT_LIMIT_INT, MT_LIMIT_FLOAT, MT_LIMIT_U64, MT_LIMIT_BOOL } mt_limit_type;

typedef struct {
    const char   *name;         /* as the JSON API spells it: "beam_size", "sampling.temperature" */
    size_t        offset;       /* of the field in mt_decode_params */
    mt_limit_type type;
    double        min, max, dflt;           /* when the matching *_of is MT_BOUND_CONST */
    mt_bound      min_of, max_of, dflt_of;
    int           min_open;     /* 1: min itself is excluded */
    const char   *doc;          /* one line */
} mt_decode_limit;

MT_API extern const mt_decode_limit mt_decode_limits[];   /* ends with a NULL name */

MT_API const mt_decode_limit *mt_decode_limit_find(const char *name);
/* x (checked against l's bounds by the caller) as l's float field holds it:
 * a value above an open minimum that rounds down to it (a top_p or
 * temperature of 1e-300) becomes the smallest float above the minimum
 * instead of the minimum itself, which the resolver would take for "unset"
 * and replace by the default: a tiny top_p keeps the best id alone, a tiny
 * temperature draws the argmax. */
MT_API float mt_decode_limit_float(const mt_decode_limit *l, double x);
/* l's bounds for model m on sessions of shape sp (*min excluded when
 * l->min_open); one that depends on the request from q's max_length
 * (q NULL: its widest).  A bound that needs a NULL argument is
 * -HUGE_VAL / HUGE_VAL (not known here), except MT_BOUND_MAX_BEAM: MT_MAX_BEAM. */
MT_API void mt_decode_limit_bounds(const mt_decode_limit *l, const mt_model *m, const mt_session_params *sp,
                            const mt_decode_params *q, double *min, double *max);
/* How GET /models names a bound that depends on the model ("config.vocab_size"). */
MT_API const char *mt_decode_bound_name(mt_bound b);

/* in (NULL: the defaults) resolved for model m on sessions of shape sp: every
 * default filled (a field given as 0 where 0 is not a valid value takes its
 * default: beam_size, max_length, n_best, repetition_penalty, temperature,
 * top_p), every field checked against mt_decode_limits and the rules that join
 * fields (n_best <= beam_size, sampling with beam 1, the prefix), the alignment
 * layer and heads made explicit.  Resolving twice changes nothing.
 * MT_ERR_INPUT names the field as the JSON API spells it ("field 'beam_size' ..."). */
MT_API mt_status mt_decode_params_resolve(const mt_model *m, const mt_session_params *sp, const mt_decode_params *in,
                                   mt_decode_params *out, mt_err *err);

typedef struct {
    int32_t *ids;           /* generated ids; the final </s> included when produced */
    int      n_ids;
    float    score;         /* greedy: sum of log p; beam: length-normalized */
    char    *text;          /* detokenized text, when the caller asked (NULL otherwise) */
    float   *token_logp;    /* [n_ids] with token_scores: log p of each id (forced final </s>: 0) */
    int32_t *align;         /* [n_ids] with alignments: for each id, the source position (</s>
                               included) of the largest head-averaged cross-attention weight at the
                               step that produced it */
} mt_hyp;

/* Decode n tokenized sources as one batch (each result equals decoding it
 * alone); sources join as earlier ones finish.  out receives n * n_best
 * hypotheses, source-major.  Free their arrays with mt_hyps_free.  A feed of
 * mt_decode_run (below) over the sources: it steps every sequence of the
 * session, so call it on a session with no sequences of its own in flight
 * (the same holds for mt_score and mt_attention_run, which use source slot 0). */
MT_API mt_status mt_generate(mt_session *s, const int32_t *const *src, const int *src_len, int n,
                      const mt_decode_params *params, mt_hyp *out, mt_err *err);
MT_API void      mt_hyps_free(mt_hyp *hyps, int n);
/* mt_generate with each source's own parameters (params[i]: a prefix, a seed,
 * ...); every params[i] must give the same n_best.  The abort callback is
 * params[0]'s. */
MT_API mt_status mt_generate_each(mt_session *s, const int32_t *const *src, const int *src_len, int n,
                           const mt_decode_params *const *params, mt_hyp *out, mt_err *err);

/* ---- continuous batching: sequences that join and leave between steps ------
 * A sequence is one tokenized source decoded with its own parameters (greedy
 * and beam sequences may share a session).  It holds beam_size of the
 * session's max_batch decoder rows and one cross-K/V source slot from
 * mt_seq_start until mt_seq_take or mt_seq_cancel.  mt_step runs one decoder
 * step for every row of every running sequence as one batched product per
 * projection; each sequence's result equals decoding it alone (mt_generate).
 * One thread at a time, as for every session function. */

/* Takes a copy of src for a free source slot and reserves beam_size rows;
 * *seq is its id (>= 0, reused after take/cancel).  MT_ERR_BUSY when no
 * beam_size consecutive rows are free (nothing changed: retry after a step).
 * The source is encoded by the next mt_encode_started or mt_step, together
 * with every other source started since the last one: one batch. */
MT_API mt_status mt_seq_start(mt_session *s, const int32_t *src, int src_len, const mt_decode_params *params,
                       int *seq, mt_err *err);
/* Encodes the sources started since the last call, as batches of at most
 * the session's rows.  mt_step calls it first; calling it before lets a
 * caller keep the encoding apart (the BLAS it uses for attention may
 * allocate for small matrices). */
MT_API void      mt_encode_started(mt_session *s);
/* Encodes what was started (mt_encode_started), then one decoder step for
 * every running sequence; returns how many finished during it.  The decoder
 * step allocates nothing. */
MT_API int       mt_step(mt_session *s);
/* 1 once the sequence has finished (its hypotheses wait for mt_seq_take). */
MT_API int       mt_seq_finished(const mt_session *s, int seq);
/* A greedy sequence's ids so far (*n of them, the final </s> included once
 * produced), for streaming: valid until the next mt_step, mt_seq_take or
 * mt_seq_cancel.  Ids already generated never change.  NULL (*n = 0) for a
 * beam sequence (no hypothesis is final before it finishes) or an unknown,
 * free or not yet encoded one. */
MT_API const int32_t *mt_seq_ids(const mt_session *s, int seq, int *n);
/* The finished sequence's n_best hypotheses (as resolved: n_best 0 -> 1) into
 * out, best first; frees its rows.  Free the arrays with mt_hyps_free. */
MT_API mt_status mt_seq_take(mt_session *s, int seq, mt_hyp *out, mt_err *err);
/* Drops a sequence in any state and frees its rows (unknown ids: no-op). */
MT_API void      mt_seq_cancel(mt_session *s, int seq);
/* Ends a running greedy sequence now, as an end id would: it has finished
 * (mt_seq_finished), its hypothesis the ids it has (mt_seq_ids), the last
 * one kept.  No-op for a beam sequence or one not running. */
MT_API void      mt_seq_stop(mt_session *s, int seq);
/* The K/V cache bytes the next step's attention reads (every running
 * sequence's rows over their self positions and source), plus, with add_beam
 * > 0, those of a sequence of add_src_len source tokens and add_beam rows
 * half-way through (as many target positions as source tokens): what a
 * scheduler weighs before starting it (mt_model_step_weight_bytes). */
MT_API size_t    mt_session_kv_step_bytes(const mt_session *s, int add_src_len, int add_beam);
/* Sequences started and not yet taken or cancelled; decoder rows they hold. */
MT_API int       mt_session_seqs(const mt_session *s);
MT_API int       mt_session_rows_used(const mt_session *s);
/* 1 if mt_seq_start with this beam size (0 = the default mt_decode_params_resolve fills) would find rows now. */
MT_API int       mt_session_can_start(const mt_session *s, int beam_size);

/* ---- the decode loop: the only loop that runs decoding steps --------------
 * mt_decode_run repeats, on the calling thread: feed->start (the caller
 * starts its sequences), one mt_step, every sequence's progress callback
 * (final 0), then each finished sequence: taken (mt_seq_take), its progress
 * callback (final 1), handed to feed->finished.  It allocates nothing itself.
 * mt_generate is a feed over its sources, the server's scheduler one over its
 * queue of requests. */
typedef struct {
    /* Before every step: start sequences (mt_seq_start while the session has
     * rows), cancel those no longer wanted (mt_seq_cancel); may block waiting
     * for work.  Returns 1: run the step; 0: end the loop (MT_OK); -1: end it
     * with the failure set in *err (mt_err_set; err is never NULL here).
     * Sequences left in the session when it ends stay the caller's. */
    int       (*start)(void *data, mt_session *s, mt_err *err);
    /* Sequence seq finished; st is mt_seq_take's status.  MT_OK: hyps[0..n)
     * its hypotheses, best first, their arrays the callee's from now on (copy
     * the structs; mt_hyps_free later).  Else none, and err says why. */
    void      (*finished)(void *data, int seq, mt_status st, mt_hyp *hyps, int n, const mt_err *err);
    void       *data;
} mt_decode_feed;

MT_API mt_status mt_decode_run(mt_session *s, const mt_decode_feed *feed, mt_err *err);

/* Teacher-forced scoring in one pass with the full causal mask: logp[t] =
 * log p(tgt[t] | src, tgt[<t]) with pad excluded from the normalizer.  tgt does
 * not include the start token.  logits (may be NULL) receives [tgt_len][vocab]. */
MT_API mt_status mt_score(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt, int tgt_len,
                   float *logp, float *logits, mt_err *err);

/* mt_score of n pairs (logp[i] receives tgt_len[i] values), in as few passes
 * as the session holds: a pass takes up to max_batch pairs whose target
 * positions fit the session's rows, encodes their sources as one batch and
 * runs every target position of every pair as one row of the decoder's
 * products (attention per pair: its own causal mask and source).  Each pair's
 * log-probs equal mt_score of it alone, bit for bit.  Uses source slots from 0. */
MT_API mt_status mt_score_batch(mt_session *s, int n, const int32_t *const *src, const int *src_len,
                         const int32_t *const *tgt, const int *tgt_len, float *const *logp, mt_err *err);

/* Attention weights (softmax probabilities, each row sums to 1) of a
 * teacher-forced pass.  Arrays are malloc'd; free with mt_attention_free.
 *
 * Marian (encoder-decoder): src is the source (1..max_src_len ids), tgt_in
 * the decoder input (1..max_tgt_len ids) starting with the decoder start
 * token; out: enc_layers, dec_layers as the model's, heads, src_len and
 * tgt_len as given, enc / dec / cross as below.
 *
 * Decoder-only (MT_ARCH_LLM): the sequence is the prompt src (1..max_src_len
 * ids, used as given: bos is the caller's) followed by tgt_in (0..max_tgt_len
 * ids fed after it, e.g. the generated ids; no start token; tgt_in may be
 * NULL when tgt_len is 0): one causal pass over its N = src_len + tgt_len
 * positions (0..N-1, RoPE at those absolute positions), the pass mt_score
 * runs.  out: enc_layers 0, enc = cross = NULL; dec_layers = the model's
 * layers; heads = info.dec_heads, the QUERY heads (grouped-query attention:
 * query head h reads K/V head h / (heads / num_key_value_heads));
 * out->src_len = the prompt's length P (rows and columns 0..P-1 are the
 * prompt, P..N-1 the target); out->tgt_len = N, NOT the tgt_len passed in,
 * so dec is [dec_layers][heads][N][N] as the layout below says: row i =
 * query position i, column j = key position j, exactly 0 for j > i.
 * Probabilities from the F32 activations whatever the K/V cache precision.
 * Uses cache slot 0 (see mt_generate). */
typedef struct {
    int enc_layers, dec_layers, heads, src_len, tgt_len;
    float *enc;     /* [enc_layers][heads][src_len][src_len]; NULL for a decoder-only model */
    float *dec;     /* [dec_layers][heads][tgt_len][tgt_len], lower-triangular (upper triangle exactly 0) */
    float *cross;   /* [dec_layers][heads][tgt_len][src_len]; NULL for a decoder-only model */
} mt_attention;

MT_API mt_status mt_attention_run(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt_in,
                           int tgt_len, mt_attention *out, mt_err *err);
MT_API void      mt_attention_free(mt_attention *a);

#ifdef __cplusplus
}
#endif

#endif
