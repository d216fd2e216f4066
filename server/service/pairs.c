/* pairs: models for language pairs, multilingual target tokens, pivots (pairs.h). */
#include "pairs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "languages.h"

/* ">>xxx<<" with 1..15 code characters: the code, else NULL. */
static int target_token(const char *piece, char code[16])
{
    size_t n = piece ? strlen(piece) : 0;
    if (n < 5 || n > 19 || strncmp(piece, ">>", 2) != 0 || strcmp(piece + n - 2, "<<") != 0)
        return 0;
    for (size_t i = 2; i < n - 2; i++) {
        char c = piece[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    memcpy(code, piece + 2, n - 4);
    code[n - 4] = '\0';
    return 1;
}

/* The names of a multilingual model's n languages (shorts: the code clients
 * know each one's language by).  A language the model has in two scripts
 * (NLLB's ace_Arab and ace_Latn, zho_Hans and zho_Hant) is named with the
 * script of each, "Achinese (Arabic)" for "ace" too, so that neither is
 * named by its code nor the pair alike; one in a single script keeps its
 * plain name, as a Marian model's or M2M-100's languages have it. */
static void name_multi(srv_model *m, const mt_multi_tokenizer *mt, char (*shorts)[16], int n)
{
    for (int i = 0; i < n; i++) {
        int scripts = 0;
        for (int k = 0; k < n; k++)
            scripts += !strcmp(shorts[k], shorts[i]);
        if (scripts > 1)
            srv_lang_script_name(mt_multi_lang(mt, i), m->target_names[i], sizeof m->target_names[i]);
        else
            snprintf(m->target_names[i], sizeof m->target_names[i], "%s", srv_lang_name(m->targets[i]));
    }
}

/* An NLLB-200 / M2M-100 model: every language, by the code clients know it by
 * (languages.h srv_lang_short of NLLB's 639-3 part or M2M-100's code; a code
 * taken by an earlier language, a second script, stays the model's own). */
static int find_multi(srv_model *m, const mt_multi_tokenizer *mt)
{
    int n = mt_multi_n_langs(mt);
    char (*shorts)[16] = calloc((size_t)n + 1, sizeof *shorts);
    m->targets = calloc((size_t)n, sizeof *m->targets);
    m->target_ids = calloc((size_t)n, sizeof *m->target_ids);
    m->target_names = calloc((size_t)n, sizeof *m->target_names);
    if (!shorts || !m->targets || !m->target_ids || !m->target_names) {
        free(shorts);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *code = mt_multi_lang(mt, i), *us = strchr(code, '_');
        char base[16];
        snprintf(base, sizeof base, "%.*s", us ? (int)(us - code) : (int)strlen(code), code);
        const char *c = srv_lang_short(base);
        snprintf(shorts[i], sizeof shorts[i], "%s", c);
        for (int k = 0; k < i; k++)
            if (!strcmp(m->targets[k], c))
                c = code;
        snprintf(m->targets[i], sizeof m->targets[i], "%s", c);
        m->target_ids[i] = mt_multi_lang_id(mt, code);
    }
    name_multi(m, mt, shorts, n);
    free(shorts);
    m->n_targets = n;
    m->multi = 1;
    return 0;
}

int srv_model_find_targets(srv_model *m)
{
    const mt_multi_tokenizer *mt = mt_tokenizer_multi(m->tok);
    if (mt)
        return find_multi(m, mt);
    int V = mt_tokenizer_vocab_size(m->tok), n = 0;
    char code[16];
    for (int id = 0; id < V; id++)
        n += target_token(mt_tokenizer_piece(m->tok, id), code);
    if (!n)
        return 0;
    m->targets = calloc((size_t)n, sizeof *m->targets);
    m->target_ids = calloc((size_t)n, sizeof *m->target_ids);
    if (!m->targets || !m->target_ids)
        return -1;
    for (int id = 0; id < V; id++)
        if (target_token(mt_tokenizer_piece(m->tok, id), code)) {
            memcpy(m->targets[m->n_targets], code, sizeof code);
            m->target_ids[m->n_targets++] = id;
        }
    return 0;
}

void srv_model_free_targets(srv_model *m)
{
    free(m->pairs);
    m->pairs = NULL;
    m->n_pairs = 0;
    mt_prompt_free(m->prompt);
    m->prompt = NULL;
    free(m->end_ids);
    m->end_ids = NULL;
    mt_prompt_free(m->chat);
    m->chat = NULL;
    free(m->chat_end_ids);
    m->chat_end_ids = NULL;
    m->max_length = 0;
    m->llm = 0;
    free(m->targets);
    free(m->target_ids);
    free(m->target_names);
    m->targets = NULL;
    m->target_ids = NULL;
    m->target_names = NULL;
    m->n_targets = 0;
    m->multi = 0;
}

/* An NLLB-200 / M2M-100 model's language named lang: by the code clients know,
 * the model's own code ("fra_Latn", "fr") or its token ("__fr__"); -1. */
static int multi_lang(const srv_model *m, const char *lang)
{
    for (int i = 0; i < m->n_targets; i++)          /* the listings' case: a code as listed */
        if (!strcmp(m->targets[i], lang))
            return i;
    int32_t id = mt_multi_lang_id(mt_tokenizer_multi(m->tok), lang);
    for (int i = 0; i < m->n_targets; i++)
        if (m->target_ids[i] == id || srv_lang_same(m->targets[i], lang))
            return i;
    return -1;
}

/* An NLLB / M2M-100 leg's source token ("auto" undetected: -1, refused later). */
static int32_t source_id(const srv_model *m, const char *source)
{
    int i = m && m->multi ? multi_lang(m, source) : -1;
    return i >= 0 ? m->target_ids[i] : -1;
}

int srv_model_targets_lang(const srv_model *m, const char *lang, int32_t *lang_id)
{
    *lang_id = -1;
    if (m->llm) {
        for (int i = 0; i < m->n_pairs; i++)
            if (srv_lang_same(m->pairs[i][1], lang))
                return 1;
        return 0;
    }
    if (m->multi) {
        int i = multi_lang(m, lang);
        *lang_id = i >= 0 ? m->target_ids[i] : -1;
        return i >= 0;
    }
    if (!m->n_targets)
        return m->info->target_lang[0] && srv_lang_same(m->info->target_lang, lang);
    for (int i = 0; i < m->n_targets; i++)
        if (srv_lang_same(m->targets[i], lang)) {
            *lang_id = m->target_ids[i];
            return 1;
        }
    return 0;
}

int srv_model_sources_lang(const srv_model *m, const char *lang)
{
    if (m->llm) {
        for (int i = 0; i < m->n_pairs; i++)
            if (!strcmp(lang, "auto") || srv_lang_same(m->pairs[i][0], lang))
                return 1;
        return 0;
    }
    if (m->multi)
        return !strcmp(lang, "auto") || multi_lang(m, lang) >= 0;
    if (!m->info->source_lang[0])
        return 0;
    return !strcmp(lang, "auto") || srv_lang_same(m->info->source_lang, lang);
}

/* "a, b, c" (at most cap bytes). */
static void list_targets(const srv_model *m, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->n_targets && at + 20 < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", m->targets[i]);
}

/* The languages of each leg: source -> (pivot ->) target. */
static int path_langs(srv_path *p, const char *source, const char *target)
{
    snprintf(p->src, sizeof p->src, "%s", source);
    snprintf(p->tgt, sizeof p->tgt, "%s", target);
    return 0;
}

/* "en-fr, fr-en" (at most cap bytes). */
static void list_pairs(const srv_model *m, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->n_pairs && at + 40 < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s-%s", i ? ", " : "", m->pairs[i][0], m->pairs[i][1]);
}

/* A decoder-only model named by the request: the one declared pair that
 * source (NULL/"auto": any) and target (NULL: any) select. */
static int llm_pair(srv_model *m, const char *source, const char *target, srv_path *out, srv_response *resp)
{
    char list[1024];
    list_pairs(m, list, sizeof list);
    if (!m->n_pairs)
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "model '%s' declares no language pairs (translation.json "
                        "beside its checkpoint); \"raw\": true continues a text without a prompt", m->id);
    int found = -1, n = 0;
    for (int i = 0; i < m->n_pairs; i++)
        if ((!source || !strcmp(source, "auto") || srv_lang_same(m->pairs[i][0], source)) &&
            (!target || srv_lang_same(m->pairs[i][1], target))) {
            found = found < 0 ? i : found;
            n++;
        }
    if (n == 0)
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "model '%s' does not translate %s -> %s; its pairs are %s",
                        m->id, source ? source : "auto", target ? target : "(any)", list);
    if (n > 1)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' translates several pairs (%s): name \"source\" and "
                        "\"target\"", m->id, list);
    return path_langs(out, m->pairs[found][0], m->pairs[found][1]);
}

/* An NLLB / M2M-100 model named by the request: both languages must be
 * named, and be the model's (its codes or the clients'). */
static int multi_pair(srv_model *m, const char *source, const char *target, srv_path *out, srv_response *resp)
{
    const char *first = m->targets[0], *second = m->n_targets > 1 ? m->targets[1] : "";
    if (!source || !strcmp(source, "auto") || !target)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' is multilingual (%d languages: %s, %s, ...): name "
                        "\"source\" and \"target\"", m->id, m->n_targets, first, second);
    out->src_id[0] = source_id(m, source);
    if (out->src_id[0] < 0 || !srv_model_targets_lang(m, target, &out->lang_id[0]))
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "model '%s' does not know the language '%s' (%d "
                        "languages: %s, %s, ...)", m->id, out->src_id[0] < 0 ? source : target, m->n_targets, first,
                        second);
    return path_langs(out, source, target);
}

int srv_path_for_model(srv_model *m, const char *source, const char *target, srv_path *out, srv_response *resp)
{
    *out = (srv_path){ .n_legs = 1, .model = { m, NULL }, .lang_id = { -1, -1 }, .src_id = { -1, -1 } };
    if (m->llm)
        return llm_pair(m, source, target, out, resp);
    if (m->multi)
        return multi_pair(m, source, target, out, resp);
    path_langs(out, m->info->source_lang, target ? target : m->info->target_lang);
    if (!m->n_targets)
        return 0;                               /* one target: "target" needs no token */
    char list[1024];
    list_targets(m, list, sizeof list);
    if (!target)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' is multilingual: name the target language "
                        "(\"target\": one of %s)", m->id, list);
    if (!srv_model_targets_lang(m, target, &out->lang_id[0]))
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "model '%s' cannot translate into '%s'; its target "
                        "languages are %s", m->id, target, list);
    return 0;
}

void srv_path_leg_langs(const srv_path *p, int i, const char **src, const char **tgt)
{
    *src = i == 0 ? p->src : p->pivot;
    *tgt = i == p->n_legs - 1 ? p->tgt : p->pivot;
}

/* ---- a decoder-only model's translation.json ---------------------------------------- */

/* A language code as a pair names it: 2..15 of [a-zA-Z0-9_-], with a name in languages.tsv. */
static int code_ok(const char *c, size_t n)
{
    if (n < 2 || n > 15)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= 'A' && c[i] <= 'Z') || (c[i] >= '0' && c[i] <= '9') ||
              c[i] == '_'))
            return 0;
    char code[16];
    memcpy(code, c, n);
    code[n] = '\0';
    return strcmp(srv_lang_name(code), code) != 0;
}

static mt_status add_pair(srv_model *m, const char *path, const char *pair, mt_err *err)
{
    const char *dash = strchr(pair, '-');
    size_t a = dash ? (size_t)(dash - pair) : 0, b = dash ? strlen(dash + 1) : 0;
    if (!dash || !code_ok(pair, a) || !code_ok(dash + 1, b))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: pair '%.40s' is not SOURCE-TARGET with two language codes "
                          "known to languages.tsv (\"en-fr\")", path, pair);
    memcpy(m->pairs[m->n_pairs][0], pair, a);
    m->pairs[m->n_pairs][0][a] = '\0';
    memcpy(m->pairs[m->n_pairs][1], dash + 1, b + 1);
    if (srv_lang_same(m->pairs[m->n_pairs][0], m->pairs[m->n_pairs][1]))
        return mt_err_set(err, MT_ERR_FORMAT, "%s: pair '%s' translates a language into itself", path, pair);
    m->n_pairs++;
    return MT_OK;
}

mt_status srv_model_read_pairs(srv_model *m, const char *dir, char *prompt, size_t prompt_cap, mt_err *err)
{
    char path[1200];
    prompt[0] = '\0';
    snprintf(path, sizeof path, "%s/translation.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return MT_OK;                           /* no pairs: raw continuations only */
    json_error_t je;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: invalid JSON: %s (line %d)", path, je.text, je.line);
    mt_status st = MT_OK;
    json_t *pairs = json_object_get(root, "pairs"), *pr = json_object_get(root, "prompt");
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
        if (strcmp(key, "pairs") != 0 && strcmp(key, "prompt") != 0 && strcmp(key, "max_length") != 0 && st == MT_OK)
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: unknown field '%.40s' (fields: pairs, prompt, max_length)", path,
                            key);
    json_t *ml = json_object_get(root, "max_length");
    if (st == MT_OK && ml && (!json_is_integer(ml) || json_integer_value(ml) < 2 || json_integer_value(ml) > 65536))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: \"max_length\" must be an integer in [2, 65536] (the decoder length "
                        "a translation may reach: its ids + 1)", path);
    if (st == MT_OK && ml)
        m->max_length = (int)json_integer_value(ml);
    if (st == MT_OK && (!json_is_array(pairs) || json_array_size(pairs) == 0 || json_array_size(pairs) > 256))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: \"pairs\" must be a list of 1..256 \"SOURCE-TARGET\" strings", path);
    if (st == MT_OK && pr && (!json_is_string(pr) || json_string_length(pr) >= prompt_cap))
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: \"prompt\" must be a prompt kind (a short string)", path);
    if (st == MT_OK && pr)
        snprintf(prompt, prompt_cap, "%s", json_string_value(pr));
    if (st == MT_OK && !(m->pairs = calloc(json_array_size(pairs), sizeof *m->pairs)))
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    size_t i;
    json_array_foreach(pairs, i, val) {
        if (st != MT_OK)
            break;
        if (!json_is_string(val))
            st = mt_err_set(err, MT_ERR_FORMAT, "%s: pairs[%zu] is not a string", path, i);
        else
            st = add_pair(m, path, json_string_value(val), err);
    }
    json_decref(root);
    return st;
}

int srv_model_translates(const srv_model *m, const char *source, const char *target, int32_t *lang_id)
{
    *lang_id = -1;
    if (!m->llm)
        return srv_model_sources_lang(m, source) && srv_model_targets_lang(m, target, lang_id);
    for (int i = 0; i < m->n_pairs; i++)
        if ((!strcmp(source, "auto") || srv_lang_same(m->pairs[i][0], source)) && srv_lang_same(m->pairs[i][1], target))
            return 1;
    return 0;
}

/* The first model from source into target (lang_id: its token), or NULL;
 * with no_multi, not an NLLB / M2M-100 model (a pivot's legs: a multilingual
 * model covers its pairs directly, which is better). */
static srv_model *direct(srv_server *srv, const char *source, const char *target, int32_t *lang_id, int no_multi)
{
    for (int i = 0; i < srv->n_models; i++)
        if (srv_model_listed(&srv->models[i]) && !(no_multi && srv->models[i].multi) &&
            srv_model_translates(&srv->models[i], source, target, lang_id))
            return &srv->models[i];
    return NULL;
}


/* Model m's k-th source language (a Marian model has one), or NULL past the last. */
const char *srv_model_source_at(const srv_model *m, int k)
{
    if (m->multi)                               /* every language both ways */
        return k < m->n_targets ? m->targets[k] : NULL;
    if (m->llm)
        return k < m->n_pairs ? m->pairs[k][0] : NULL;
    return k == 0 && m->info->source_lang[0] ? m->info->source_lang : NULL;
}

/* Leg 1 from source into a language X that some model translates into target. */
static int pivot(srv_server *srv, const char *source, const char *target, srv_path *out)
{
    for (int b = 0; b < srv->n_models; b++) {
        srv_model *mb = &srv->models[b];
        const char *x;
        for (int k = 0; srv_model_listed(mb) && !mb->multi && (x = srv_model_source_at(mb, k)); k++) {
            int32_t id_b, id_a;
            if (srv_lang_same(x, source) || srv_lang_same(x, target) || !srv_model_translates(mb, x, target, &id_b))
                continue;
            srv_model *ma = direct(srv, source, x, &id_a, 1);
            if (ma && ma != mb) {
                *out = (srv_path){ .n_legs = 2, .model = { ma, mb }, .lang_id = { id_a, id_b }, .src_id = { -1, -1 } };
                snprintf(out->pivot, sizeof out->pivot, "%s", x);
                return 1;
            }
        }
    }
    return 0;
}

int srv_path_for_pair(srv_server *srv, const char *source, const char *target, srv_path *out,
                      srv_response *resp)
{
    *out = (srv_path){ .n_legs = 1, .lang_id = { -1, -1 }, .src_id = { -1, -1 } };
    if ((out->model[0] = direct(srv, source, target, &out->lang_id[0], 0))) {
        out->src_id[0] = source_id(out->model[0], source);
        return path_langs(out, source, target);
    }
    if (strcmp(source, "auto") != 0 && pivot(srv, source, target, out))
        return path_langs(out, source, target);
    int source_known = !strcmp(source, "auto");
    for (int i = 0; i < srv->n_models; i++)
        source_known |= srv_model_listed(&srv->models[i]) && srv_model_sources_lang(&srv->models[i], source);
    if (!source_known)
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "%s is not supported", source);
    return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "%s (%s) is not available as a target language from %s (%s)",
                    srv_language_name(srv, target), target, srv_language_name(srv, source), source);
}

/* A language code as the models spell it, whatever its case: LibreTranslate
 * lowercases what it is sent (iso2model), "EN" is "en", "auto" "AUTO". */
const char *srv_served_code(const srv_server *srv, const char *code)
{
    if (!strcasecmp(code, "auto"))
        return "auto";
    for (int i = 0; i < srv->n_models; i++) {
        const srv_model *m = &srv->models[i];
        if (!srv_model_listed(m))
            continue;
        if (!strcasecmp(code, m->info->source_lang))
            return m->info->source_lang;
        if (!strcasecmp(code, m->info->target_lang))
            return m->info->target_lang;
        for (int k = 0; k < m->n_targets; k++)
            if (!strcasecmp(code, m->targets[k]))
                return m->targets[k];
        for (int k = 0; k < m->n_pairs; k++)
            for (int e = 0; e < 2; e++)
                if (!strcasecmp(code, m->pairs[k][e]))
                    return m->pairs[k][e];
    }
    return code;
}

const char *srv_language_name(const srv_server *srv, const char *code)
{
    for (int i = 0; i < srv->n_models; i++) {
        const srv_model *m = &srv->models[i];
        for (int k = 0; m->target_names && srv_model_listed(m) && k < m->n_targets; k++)
            if (!strcmp(m->targets[k], code))
                return m->target_names[k];
    }
    return srv_lang_name(code);
}
