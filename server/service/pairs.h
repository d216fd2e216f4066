/* pairs: which model(s) translate a language pair.
 *
 * A model translates from its source language (tokenizer_config.json's
 * source_lang) into its target language, or, when it is multilingual (its
 * vocabulary holds target tokens such as ">>fra<<", as opus-mt-en-ROMANCE
 * does), into any of the languages of those tokens: the request's target
 * picks the token, which the pipeline puts before the source.  Codes match
 * in either ISO form (languages.h: "fr" = "fra").
 *
 * A decoder-only model (Llama, Qwen: srv_model.llm) translates the pairs
 * its translation.json declares ({"pairs": ["en-fr", "fr-en"], "prompt":
 * "alma", "max_length": 129}), through a prompt naming both languages
 * ("prompt" and "max_length", the default decoder length, optional).
 *
 * When no model translates source -> target directly but two do through a
 * shared language (fr -> en and en -> de), the pair is translated through
 * that pivot, as Argos Translate does: a path of two legs.
 */
#ifndef SRV_PAIRS_H
#define SRV_PAIRS_H

#include <stdint.h>

#include "server.h"

typedef struct {
    int        n_legs;           /* 1, or 2 through a pivot */
    srv_model *model[2];
    int32_t    lang_id[2];       /* each leg's target-language token id, or -1 */
    int32_t    src_id[2];        /* each leg's source-language token id (NLLB / M2M-100), or -1 */
    char       pivot[16];        /* the language between the legs ("" when direct) */
    char       src[16], tgt[16]; /* the path's source and target ("auto" kept when not detected) */
} srv_path;

/* Leg i's source and target language (a prompt names them). */
void srv_path_leg_langs(const srv_path *p, int i, const char **src, const char **tgt);

/* Fills m->targets: the target-language tokens of its vocabulary.  At load. */
int srv_model_find_targets(srv_model *m);
/* Frees m's targets, pairs, prompt and end ids (what describing it made). */
void srv_model_free_targets(srv_model *m);
/* 1 when m translates into lang; *lang_id gets the token to put first (-1: none needed). */
int srv_model_targets_lang(const srv_model *m, const char *lang, int32_t *lang_id);
/* 1 when m translates from lang ("auto": any). */
int srv_model_sources_lang(const srv_model *m, const char *lang);
/* 1 when m translates source ("auto": any) into target; *lang_id as above. */
int srv_model_translates(const srv_model *m, const char *source, const char *target, int32_t *lang_id);
/* m's k-th source language, NULL past the last (a Marian model has one). */
const char *srv_model_source_at(const srv_model *m, int k);
/* A decoder-only model's dir/translation.json: m->pairs, and its "prompt"
 * kind into prompt ("" when absent).  No file: no pairs, MT_OK.  A bad
 * file: MT_ERR_FORMAT naming the field. */
mt_status srv_model_read_pairs(srv_model *m, const char *dir, char *prompt, size_t prompt_cap, mt_err *err);

/* A language code as the loaded models spell it, whatever its case ("EN" is
 * "en", "AUTO" "auto"); code itself when no model names it. */
const char *srv_served_code(const srv_server *srv, const char *code);

/* The English name a listing gives code: a multilingual model's name for
 * one of its languages ("zho_Hant": "Chinese (Traditional)", and "zh" with it
 * "Chinese (Simplified)": srv_model.target_names), else languages.h's
 * srv_lang_name. */
const char *srv_language_name(const srv_server *srv, const char *code);

/* The path for source -> target ("auto" = any source); 0, or -1 with resp
 * failed (400 unsupported_language naming what is available). */
int srv_path_for_pair(srv_server *srv, const char *source, const char *target, srv_path *out,
                      srv_response *resp);
/* The one-leg path of a named model; source and target may be NULL.  A
 * multilingual model needs a target it can produce, a decoder-only model a
 * declared pair that source and target select: else -1, resp failed naming
 * the choices. */
int srv_path_for_model(srv_model *m, const char *source, const char *target, srv_path *out, srv_response *resp);

#endif
