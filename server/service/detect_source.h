/* detect_source: `source: "auto"` and POST /detect, over the loaded models.
 *
 * The candidates are the languages the loaded models translate from; the
 * detector (detect/detect.h: CLD2 with the candidates as hints, then the
 * candidates' language models) may still answer another language, which is
 * then reported, never translated by a model of another language.  A request
 * is one language, as LibreTranslate has it: its texts are detected together.
 *
 * The language models: first the character n-gram models that the model
 * directories hold for their source languages (<dir>/<source>.charlm,
 * detect/charlm.h: models/en-fr/en.charlm and models/fr-en/fr.charlm for the
 * shipped models), when at least two candidates have one; a candidate without
 * one then takes no part in the second stage.  Else the models' own source
 * SentencePiece models (engine/tokenizer: mt_spm_log_prob): a unigram model
 * trained on a model's source text is a language model of its source language.
 * Not when it was trained on both languages: a model whose source.spm is its
 * target.spm (a joint vocabulary, as models/en-fr and models/fr-en have) gives
 * its source language none, and neither do two candidates whose models share
 * one .spm; with fewer than two candidates left with a model, detection is
 * CLD2's alone.  Never the decoders: detection does not wait for translation.
 */
#ifndef SRV_DETECT_SOURCE_H
#define SRV_DETECT_SOURCE_H

#include "detect/charlm.h"
#include "detect/detect.h"
#include "server.h"

/* Source languages detection chooses among, at most (an NLLB-200 model alone
 * has 202). */
#define SRV_MAX_SOURCES 512

/* The candidates and their language models (a value: the pointers are the
 * tokenizers', which outlive it). */
typedef struct {
    const char   *cand[SRV_MAX_SOURCES];    /* the distinct source languages, in model order */
    const mt_spm *spm[SRV_MAX_SOURCES];     /* cand[i]'s SentencePiece model, or NULL: none */
    const srv_charlm *charlm[SRV_MAX_SOURCES];  /* cand[i]'s character model, or NULL: none */
    int           n;
} srv_detect_lms;

/* l from n models given by their source languages ("" or NULL: unknown, left
 * out) and tokenizers (NULL: no model): cand[i]'s model is the source.spm of
 * the first model translating from it whose source.spm is not also its
 * target.spm; two candidates left with byte-identical models lose them both. */
void srv_detect_lms_init(srv_detect_lms *l, const char *const *source_lang, const mt_tokenizer *const *tok, int n);
/* Gives each candidate of l the first of lm[0..n) of its language (srv_lang_same). */
void srv_detect_lms_add_charlms(srv_detect_lms *l, const srv_charlm *const *lm, int n);
/* p's candidates and scorer, pointing into l: the character models when two
 * candidates or more have one (srv_charlm_log_prob), else the SentencePiece
 * models when two or more have one (mt_spm_log_prob), else none; and the
 * cld2_weight of that kind of model (SRV_CHARLM_CLD2_WEIGHT, SRV_DETECT_CLD2_WEIGHT;
 * left as it is without a model). */
void srv_detect_lms_params(const srv_detect_lms *l, srv_detect_params *p);

/* The guesses for texts[0..n) (their first SRV_DETECT_MAX_BYTES together),
 * best first, at most max; their count (0: nothing recognised, text without
 * letters).  0 with resp failed (400): blank texts. */
int srv_detect_texts(const srv_server *srv, const char *const *texts, int n, srv_lang_guess *out, int max,
                     srv_response *resp);

/* The source language for `source: "auto"` towards target: *out the detected
 * language when a loaded model (or a pivot) translates it into target.  When
 * nothing is recognised (text without letters: "123", "!!!"), *out is the
 * first source language (in model order) with a path to target, confidence 0,
 * as LibreTranslate falls back (digits pass through a model unchanged).
 * 0, or -1 with resp failed: 400 for blank texts; 400 unsupported_language
 * saying what was detected and what is available for a language no model
 * translates from, for the target itself, and for unrecognised text when no
 * source has a path to target. */
int srv_detect_source(srv_server *srv, const char *const *texts, int n, const char *target, srv_lang_guess *out,
                      srv_response *resp);

#endif
