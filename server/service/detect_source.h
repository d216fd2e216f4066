/* detect_source: `source: "auto"` and POST /detect, over the loaded models.
 *
 * The candidates are the languages the loaded models translate from; the
 * detector (detect/detect.h: CLD2 with the candidates as hints, then the
 * candidates' language models) may still answer another language, which is
 * then reported, never translated by a model of another language.  A request
 * is one language, as LibreTranslate has it: its texts are detected together.
 *
 * The language models are the models' own source SentencePiece models
 * (engine/tokenizer: mt_spm_log_prob): a unigram model trained on a model's
 * source text is a language model of its source language.  Not when it was
 * trained on both languages: a model whose source.spm is its target.spm (a
 * joint vocabulary, as models/en-fr and models/fr-en have) gives its source
 * language none, and neither do two candidates whose models share one .spm;
 * with fewer than two candidates left with a model, detection is CLD2's alone.
 */
#ifndef SRV_DETECT_SOURCE_H
#define SRV_DETECT_SOURCE_H

#include "detect/detect.h"
#include "server.h"

/* The candidates and their language models (a value: the pointers are the
 * tokenizers', which outlive it). */
typedef struct {
    const char   *cand[SRV_MAX_MODELS];     /* the distinct source languages, in model order */
    const mt_spm *spm[SRV_MAX_MODELS];      /* cand[i]'s language model, or NULL: none */
    int           n;
} srv_detect_lms;

/* l from n models given by their source languages ("" or NULL: unknown, left
 * out) and tokenizers (NULL: no model): cand[i]'s model is the source.spm of
 * the first model translating from it whose source.spm is not also its
 * target.spm; two candidates left with byte-identical models lose them both. */
void srv_detect_lms_init(srv_detect_lms *l, const char *const *source_lang, const mt_tokenizer *const *tok, int n);
/* p's candidates and scorer (mt_spm_log_prob of cand[i]'s model), pointing into l;
 * the other fields of p are left as they are. */
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
