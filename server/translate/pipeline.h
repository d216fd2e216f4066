/* pipeline: the one translate path, text in and text out.
 *
 *   texts -> split into sentences (splitter.h) -> tokenize, once -> decode
 *   (any decode_job.h implementation) -> detokenize -> join each text's
 *   translations back with its original whitespace and line breaks
 *
 * POST /translate (our JSON API and the LibreTranslate shape) and the
 * `mtserve translate` command all go through it.  The decode in the middle
 * is asynchronous in form: srv_tr_new prepares a decode job, the caller
 * submits it to a decoder (setting job->done, job->ctx and, for
 * cancellation, job->abort), and srv_tr_finish builds the results once
 * done() was called.  Failures are engine statuses with a message:
 * MT_ERR_INPUT (invalid UTF-8, a sentence with more glossary terms than a
 * decode takes), MT_ERR_TOO_LONG (a sentence or the request over its token
 * limit), MT_ERR_NOMEM.
 */
#ifndef SRV_PIPELINE_H
#define SRV_PIPELINE_H

#include <stdint.h>

#include "cache.h"
#include "store/redis.h"
#include "decode_job.h"
#include "copy_gate.h"
#include "glossary.h"

/* What the pipeline needs of a model. */
typedef struct {
    const mt_tokenizer *tok;
    int32_t eos_id;
    int     max_src_len;        /* source tokens per sentence, </s> included */
    long    max_tokens;         /* source tokens per request, all sentences; 0 = no limit */
    int     has_lang;           /* 1: lang_id, a multilingual model's language token */
    int32_t lang_id;            /* (Marian's target ">>fra<<", NLLB / M2M-100's source "fra_Latn"),
                                   goes before every sentence */
    int     lang_after;         /* 1: lang_id goes after the sentence's </s> instead (NLLB's
                                   legacy_behaviour: pieces + [</s>, code]) */
    int     has_bos;            /* 1: bos_id, NLLB / M2M-100's target-language token, is every */
    int32_t bos_id;             /* sentence's first generated id (mt_decode_params.forced_bos) */
    /* NULL, or the translation cache (cache.h) shared by every request, and
     * the name of this model in it (its id: a model's weights and form are
     * fixed while it is loaded) */
    srv_cache  *cache;
    const char *cache_ns;
    /* NULL, or the cache's second level (--redis-cache-mb, store/redis.h):
     * looked up after a miss in cache, filled with cache */
    srv_rcache *cache2;
    /* A decoder-only model translating through a prompt: the prompt, the
     * leg's language names for it ("English", "French") and codes ("en",
     * "fr": TranslateGemma's prompt names both; copies, "" none) and the ids that end
     * a translation (mt_decode_params.end_ids); output text is cut at the
     * prompt's stop string and trimmed.  prompt NULL: Marian, or a raw
     * continuation (the text alone, with the tokenizer's special tokens). */
    const struct mt_prompt *prompt;
    const char *src_name, *tgt_name;
    char src_code[16], tgt_code[16];
    const uint8_t *end_ids;
    const mt_shortlist *shortlist;      /* NULL, or every sentence's (mt_decode_params.shortlist) */
    const mt_lang_vocab *lang_vocab;    /* NULL, or every sentence's (mt_decode_params.lang_vocab) */
    int no_align;       /* 1: a decoder-only model, which gives no alignments: placeholders stay in its input */
    /* NULL, or the copy guard's gate (copy_gate.h): the guard is armed only
     * for a sentence whose written text holds one of its words */
    const srv_copy_gate *copy_gate;
} srv_tr_model;

/* A text's target prefix: ids when n_ids > 0, else text (tokenized with the
 * target model, its </s> dropped), else none. */
typedef struct {
    const char    *text;
    const int32_t *ids;
    int            n_ids;
} srv_prefix;

typedef struct {
    /* Every sentence's decoding parameters, resolved for the model
     * (mt_decode_params_resolve): n_best hypotheses per text, max_length for
     * the prefixes below.  Each sentence's prefix and seed are its own:
     * sentence j of the request (all texts, in order) draws with dp.seed + j. */
    mt_decode_params dp;
    int split;          /* split texts into sentences */
    const srv_prefix *prefix;   /* NULL, or [n texts]: each text's target prefix (such a text is not split) */
    /* NULL, or the terms every sentence must keep: each match in a sentence
     * (srv_glossary_match) becomes a lexical constraint of its decode, its
     * source span the pieces of the matched words, its ids the target term
     * tokenized with the target model (mt_decode_params.constraints) */
    const srv_glossary *glossary;
    /* 1: a sentence translated before with the same model, text and every
     * setting that can change its output (dp, its prefix, its terms; its
     * seed when sampling) is answered from srv_tr_model.cache: neither
     * tokenized nor decoded; the others are stored there once decoded.
     * The caller sets 0 for "cache": false and for sampling without a seed. */
    int cache;
    /* 1: a decoder-only model continues each text as it is, without its
     * translation prompt (srv_leg_model leaves srv_tr_model.prompt NULL);
     * such texts are not split */
    int raw;
    /* 1: "shortlist": false, the whole vocabulary even where the model has a shortlist */
    int no_shortlist;
    /* 1: each sentence's placeholders (printf's %s, {name}, URLs...: protect.h)
     * are kept out of the model and put back into its translation by the
     * word alignment, byte for byte; a sentence without one is decoded as
     * it is.  Not for a prefixed text, nor a model without alignments
     * (srv_tr_model.no_align). */
    int placeholders;
    /* 1: "fold_title_case": false, a Title Case sentence goes to the model as
     * written; 0 (the default): in sentence case (title_case.h: "Restore
     * From Trash" is read as "Restore from trash"; a lone word "Alarm" as
     * "alarm", its translation capitalized).  Marian models only:
     * not for NLLB / M2M-100, a prompted model, a raw continuation or a
     * prefixed text. */
    int keep_title_case;
    /* NULL, or every text's source ids as the caller encoded them (a chat
     * prompt: api/openai_api.c): n_given ids, used for each text as they
     * are: neither split, tokenized nor cached (raw must be 1, cache 0); the
     * limits are checked on them as on tokenized ones */
    const int32_t *given_ids;
    int n_given;
    /* NULL, or the ids that end each sentence instead of the model's (a chat
     * template's end of turn; mt_decode_params.end_ids) */
    const uint8_t *end_ids;
    /* n_stop (0..MT_STOP_MAX) stop strings (the OpenAI API's "stop"): each
     * greedy or sampling sentence of a decoder-only model ends as soon as the
     * text of its ids holds one (mt_stop_match, its stop callback: nothing
     * allocated per token); srv_tr_result.stopped says so.  The text is not
     * cut here.  A tokenizer mt_stop_match cannot follow: nothing ends early.
     * The strings must outlive the job; part of the cache key. */
    const char *const *stop;
    int n_stop;
} srv_tr_params;

typedef struct {
    char   **alts;      /* n_alts joined translations, best first (malloc'd) */
    int      n_alts;
    int32_t *ids;       /* target ids of the best translation, sentence after sentence, </s> dropped */
    int      n_ids;
    double   score;     /* sum over the sentences of the best hypothesis' score */
    int      n_sentences;
    int      stopped;   /* a sentence's decoding ended at a stop string (srv_tr_params.stop) */
    /* with dp.token_scores: log p of each of ids (the </s> dropped with them) */
    float   *token_logp;
    /* with dp.alignments: the source ids of every sentence (</s> and a language
     * token dropped); token links (index into src_ids, index into ids); word links
     * [n_words][4]: source [start, end) in the text, target [start, end) in alts[0],
     * in code points (words: runs of non-space characters; a piece starting with
     * U+2581 starts one).  With placeholders, ids and links are the model's:
     * the placeholders are no tokens, and the word links go from the words
     * around them to the words the model wrote. */
    int32_t *src_ids;
    int      n_src_ids;
    int     *align;     /* [n_align][2] */
    int      n_align;
    long    *words;     /* [n_words][4] */
    int      n_words;
} srv_tr_result;

typedef struct srv_tr srv_tr;

/* Splits and tokenizes n texts (the texts must outlive *out).  MT_OK and
 * *out, or a failure with err (nothing to free). */
mt_status srv_tr_new(const srv_tr_model *m, const char *const *texts, int n, const srv_tr_params *p,
                     srv_tr **out, mt_err *err);
/* The decode job of t's sentences: set done/ctx/abort, then submit it. */
srv_decode_job *srv_tr_job(srv_tr *t);
/* After done(): detokenizes and joins into out[0..n); free with
 * srv_tr_results_free.  The job's own failure (cancelled, timed out, an
 * item's error) is the caller's to look at first. */
mt_status srv_tr_finish(srv_tr *t, srv_tr_result *out, mt_err *err);
void      srv_tr_free(srv_tr *t);
/* Source tokens of every sentence; generated tokens of the best hypotheses. */
long      srv_tr_src_tokens(const srv_tr *t);
long      srv_tr_gen_tokens(const srv_tr *t);

void      srv_tr_results_free(srv_tr_result *r, int n);

/* Sentence i as decoded (after srv_tr_finish): its source ids (</s>
 * included) and its best hypothesis (the final </s> included, with text). */
const int32_t *srv_tr_source(const srv_tr *t, int i, int *n_src);
/* The layout a stream joins by (stream.c), valid from srv_tr_new: sentence i
 * replaces texts[*text][*start, *start + *len) in its text's result, and the
 * bytes between the spans are copied as they are (join_text). */
void           srv_tr_span(const srv_tr *t, int i, int *text, size_t *start, size_t *len);
int            srv_tr_texts(const srv_tr *t);
const char    *srv_tr_text(const srv_tr *t, int i);
const mt_hyp  *srv_tr_best(const srv_tr *t, int i);
int            srv_tr_sentences(const srv_tr *t);
/* 1 when sentence i came from the cache (its best hypothesis is there from
 * srv_tr_new on: streaming sends it at once); the decode job's items are the
 * others, item k being sentence srv_tr_item_sentence(t, k). */
int            srv_tr_cached(const srv_tr *t, int i);
/* 1 when sentence i's text is not its ids decoded (its placeholders put back,
 * or kept as written: protect.h; a lone word's translation capitalized:
 * title_case.h): a stream sends it whole, once the job is done, as
 * srv_tr_sentence_text gives it. */
int            srv_tr_whole(const srv_tr *t, int i);
/* Sentence i's best translation as it goes into its text's result (after
 * done(); also before srv_tr_finish): malloc'd, NULL out of memory. */
char          *srv_tr_sentence_text(const srv_tr *t, int i);
int            srv_tr_item_sentence(const srv_tr *t, int item);

#endif
