/* LibreTranslate compatibility: an existing LibreTranslate client works
 * unchanged against our base URL.  What LibreTranslate v1.9 does is quoted
 * from its libretranslate/app.py (translate(), detect()).
 *
 * POST /translate  {"q": string | [strings], "source", "target", "format"?,
 *                   "alternatives"?, "api_key"?}  (JSON or form-encoded)
 *                  -> {"translatedText": string | [strings],
 *                      "alternatives"?: [strings] | [[strings]],
 *                      "detectedLanguage"?: {...} (source "auto")}
 * GET /languages   -> [{"code", "name", "targets": [codes]}]
 * POST /detect    {"q": string | [strings]} -> [{"language", "confidence"}], best
 *                  first: one list for all of q
 * GET /spec        -> its Swagger document (libretranslate_spec.json)
 * POST /suggest    -> 403 {"error": "Suggestions are disabled on this server."}
 * Errors are {"error": "message"}, with LibreTranslate's wording where it has one
 * (and its statuses: errors.c).  As LibreTranslate: codes in any case ("EN");
 * format "" is text; alternatives a number or a numeric string, below 0 read
 * as 0; a form's q has its line breaks made "\n" and its last one dropped
 * ("\n".join(q.splitlines())); text without a letter is detected as
 * {"confidence": 0.0, "language": "en"} by /detect; blank text is sent back as
 * it is, also with source "auto" (reported as undetected_source() says), and
 * a blank entry of a list beside text as "".
 * "auto" detects the language of the texts (all of q together, as
 * LibreTranslate does), among the loaded models' sources (detect_source.h),
 * and routes as if it had been named; detected as the target (or a named
 * source that is the target), q comes back as it is.  Format "html"
 * translates the pages' text with their markup kept (markup_job.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/body.h"
#include "service/languages.h"
#include "service/detect_target.h"
#include "service/markup_job.h"
#include "handlers.h"
#include "service/server.h"
#include "service/glossaries.h"
#include "service/translate_job.h"

/* ---- languages ------------------------------------------------------------------ */

/* Every language a model names: sources, targets, multilingual targets. */
static json_t *candidates(const srv_server *srv)
{
    json_t *set = json_object();
    for (int i = 0; i < srv->n_models; i++) {
        const srv_model *m = &srv->models[i];
        if (!srv_model_listed(m))
            continue;
        if (m->info->source_lang[0])
            json_object_set_new(set, m->info->source_lang, json_true());
        if (m->info->target_lang[0] && !m->n_targets)
            json_object_set_new(set, m->info->target_lang, json_true());
        for (int k = 0; k < m->n_targets; k++)
            json_object_set_new(set, m->targets[k], json_true());
        for (int k = 0; k < m->n_pairs; k++) {          /* a decoder-only model's declared pairs */
            json_object_set_new(set, m->pairs[k][0], json_true());
            json_object_set_new(set, m->pairs[k][1], json_true());
        }
    }
    return set;
}

/* One source language and every target a path reaches (direct or through a pivot). */
static json_t *language_json(srv_server *srv, const char *code, json_t *all)
{
    json_t *targets = json_array(), *v;
    const char *to;
    json_object_foreach(all, to, v) {
        srv_path path;
        srv_response scratch = { 0 };       /* srv_fail only writes into it */
        if (!srv_lang_same(to, code) && srv_path_for_pair(srv, code, to, &path, &scratch) == 0)
            json_array_append_new(targets, json_string(to));
    }
    return json_pack("{s:s,s:s,s:o}", "code", code, "name", srv_language_name(srv, code), "targets", targets);
}

void srv_handle_languages(srv_request *req, srv_response *resp)
{
    srv_server *srv = req->srv;
    json_t *list = json_array(), *all = candidates(srv), *v;
    const char *code;
    json_object_foreach(all, code, v)
        json_array_append_new(list, language_json(srv, code, all));
    json_decref(all);
    srv_reply_json(resp, 200, list);
}

/* ---- translate ------------------------------------------------------------------- */

typedef struct {
    const char **all;            /* every entry of q */
    int          n_all, is_list;
    const char **texts;          /* the entries to translate (not blank) ... */
    int         *index;          /* ... and their place in all */
    int          n;
    json_t      *q_parsed;       /* a form's q holding a JSON array */
    const char  *source, *target;
    int          alternatives;
    int          html;           /* format "html": texts are pages, mk.units are translated */
    srv_markup   mk;
    srv_lang_guess detected;     /* source "auto": what was detected */
    int          has_detected;
    int          unchanged;      /* source (named or detected) is the target: q is sent back as it is */
    srv_path     path;
    srv_trjob   *job;
    srv_glossary *glossary;      /* our extra field "glossary" (glossaries.h), or NULL */
    int          cache;          /* our extra field "cache": false (or "false" in a form) turns it off */
    int          placeholders;   /* ours too, "placeholders": false (pipeline.h), default on */
} lt_req;

static int required(const srv_request *req, srv_response *resp, const char *name, const char **out)
{
    int rc = srv_field_string(req, resp, name, out);
    if (rc == 0 || (rc > 0 && !**out))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: missing %s parameter", name);
    return rc < 0 ? -1 : 0;
}

/* The length of the line break at s[0..len) (Python's str.splitlines: \n, \r,
 * \r\n, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029); 0 if none. */
static size_t line_break(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] == '\r')
        return len > 1 && u[1] == '\n' ? 2 : 1;
    if (u[0] == '\n' || u[0] == '\v' || u[0] == '\f' || (u[0] >= 0x1c && u[0] <= 0x1e))
        return 1;
    if (len > 1 && u[0] == 0xc2 && u[1] == 0x85)
        return 2;
    if (len > 2 && u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9))
        return 3;
    return 0;
}

/* "\n".join(s.splitlines()): what LibreTranslate makes of a form's q (a
 * browser's form sends a textarea's line breaks as CRLF).  NULL when out of memory. */
static json_t *form_lines(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    size_t o = 0, k;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += k ? k : 1) {
        k = line_break(s + i, len - i);
        out[o++] = k ? '\n' : s[i];
        if (k && i + k == len)
            o--;                    /* the last line's break ends it: no empty line after */
    }
    json_t *v = json_stringn(out, o);
    free(out);
    return v;
}

/* A form's q (a string, or our JSON array of strings) with form_lines applied
 * to each string; NULL when out of memory. */
static json_t *form_q_lines(json_t *q)
{
    if (json_is_string(q))
        return form_lines(json_string_value(q), json_string_length(q));
    json_t *out = json_array(), *e;
    size_t i;
    json_array_foreach(q, i, e) {
        if (!out || json_array_append_new(out, json_is_string(e) ? form_lines(json_string_value(e),
                                                                               json_string_length(e))
                                                                  : json_incref(e))) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* Form clients send a batch as a JSON-encoded array in q (LibreTranslate #309). */
static int form_q_array(const srv_request *req, lt_req *t)
{
    json_t *q = json_object_get(req->json, "q");
    if (!req->form || !json_is_string(q) || json_string_value(q)[0] != '[')
        return 0;
    json_t *arr = json_loads(json_string_value(q), 0, NULL);
    if (!json_is_array(arr)) {
        json_decref(arr);
        return 0;
    }
    t->q_parsed = arr;
    return 1;
}

/* q: a string or a list of strings.  Blank entries of a list are not
 * translated (entry_json: "" beside text), rather than failing the whole batch.  lines: a
 * form's q gets LibreTranslate's line breaks (/translate only). */
static int parse_q(const srv_request *req, srv_response *resp, lt_req *t, int lines)
{
    json_t *q = form_q_array(req, t) ? t->q_parsed : json_object_get(req->json, "q");
    t->is_list = json_is_array(q);
    size_t n = t->is_list ? json_array_size(q) : 1;
    if (!q || json_is_null(q) || n == 0 || (json_is_string(q) && json_string_length(q) == 0))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: missing q parameter");
    if (lines && req->form) {               /* after the check, as LibreTranslate: "\n" is "" */
        json_t *norm = form_q_lines(q);
        if (!norm)
            return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        json_decref(t->q_parsed);
        q = t->q_parsed = norm;
    }
    if (!t->is_list && !json_is_string(q))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: q must be a string or a list of strings");
    t->all = malloc(sizeof *t->all * n);
    t->texts = malloc(sizeof *t->texts * n);
    t->index = malloc(sizeof *t->index * n);
    if (!t->all || !t->texts || !t->index)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *e = t->is_list ? json_array_get(q, i) : q;
        if (!json_is_string(e))
            return srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: q[%zu] must be a string", i);
        t->all[t->n_all++] = json_string_value(e);
        if (!srv_is_blank(json_string_value(e), json_string_length(e))) {
            t->texts[t->n] = json_string_value(e);
            t->index[t->n++] = (int)i;
        }
    }
    return 0;
}

/* The texts decoded: the non-blank entries, or the units of their pages. */
static int n_decoded(const lt_req *t) { return t->html ? t->mk.n_units : t->n; }
static const char *const *decoded_texts(const lt_req *t) { return t->html ? t->mk.units : t->texts; }

/* The source of blank text with source "auto" (nothing to detect; the text
 * is sent back as it is, as LibreTranslate does): the first source language,
 * in model order, with a path to target, reported with confidence 0, as
 * srv_detect_source falls back for text without letters.  "auto" when none. */
static const char *undetected_source(srv_server *srv, const char *target)
{
    for (int i = 0; i < srv->n_models; i++) {
        const char *source;
        for (int k = 0; srv_model_listed(&srv->models[i]) && (source = srv_model_source_at(&srv->models[i], k)); k++) {
            srv_path path;
            srv_response scratch = { 0 };   /* srv_fail only writes into it */
            if (srv_path_for_pair(srv, source, target, &path, &scratch) == 0)
                return source;
        }
    }
    return "auto";
}

/* 1 when /languages lists code (a language some model names). */
static int listed(const srv_server *srv, const char *code)
{
    json_t *all = candidates(srv), *v;
    const char *c;
    int found = 0;
    json_object_foreach(all, c, v)
        found |= srv_lang_same(c, code);
    json_decref(all);
    return found;
}

/* Our extension "model" names the model (its target token from "target" when
 * multilingual); else the pair picks it, maybe through a pivot (pairs.h), the
 * source detected when it is "auto".  A source that is the target, named or
 * detected, leaves q as it is (t->unchanged): LibreTranslate's languages
 * translate into themselves (argos' IdentityTranslation, whose hypotheses are
 * the text itself), and its translate() takes the detected language as the
 * source whatever the target: `src_lang = get_language_with_fallback(
 * detected_src_lang["language"], languages)`, then `src_lang.get_translation(tgt_lang)`. */
static int pick_path(srv_request *req, srv_response *resp, lt_req *t)
{
    if (json_object_get(req->json, "model")) {
        srv_model *m = srv_request_model(req, resp);
        return m ? srv_path_for_model(m, t->source, t->target, &t->path, resp) : -1;
    }
    const char *source = t->source;
    if (!strcmp(source, "auto") && n_decoded(t) == 0)
        source = undetected_source(req->srv, t->target);
    if (!strcmp(source, "auto")) {
        if (srv_path_for_pair(req->srv, "auto", t->target, &t->path, resp))  /* an unknown target first */
            return -1;
        if (srv_detect_auto(req->srv, decoded_texts(t), n_decoded(t), t->target, &t->detected, &t->unchanged,
                            resp))
            return -1;
        t->has_detected = 1;
        if (t->unchanged)
            return 0;
        source = t->detected.code;
    } else if (srv_lang_same(source, t->target) && listed(req->srv, source)) {
        t->unchanged = 1;           /* an unknown one: "xx is not supported", as LibreTranslate's */
        return 0;
    }
    return srv_path_for_pair(req->srv, source, t->target, &t->path, resp);
}

/* alternatives as LibreTranslate reads it (max(0, int(value))): an integer, a
 * number (truncated) or a string holding an integer; below 0 is 0.  0, or -1
 * when it is none of those. */
static int alternatives_value(json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
    } else if (json_is_real(v)) {
        double x = json_real_value(v);
        if (!(fabs(x) < 1e18))
            return -1;
        *out = (long long)x;
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        errno = 0;
        *out = strtoll(s, &end, 10);        /* leading blanks and a sign, as int() */
        while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
            end++;
        if (end == s || *end || errno)
            return -1;
    } else {
        return -1;
    }
    if (*out < 0)
        *out = 0;
    return 0;
}

static int parse_alternatives(const srv_request *req, srv_response *resp, lt_req *t)
{
    json_t *alt = json_object_get(req->json, "alternatives");
    int max_alt = req->srv->opts.max_alternatives;
    long long n = 0;
    if (!alt || json_is_null(alt))
        return 0;
    if (alternatives_value(alt, &n))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: alternatives parameter is not a number");
    if (n > max_alt)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: alternatives parameter must be <= %d", max_alt);
    t->alternatives = (int)n;
    return 0;
}

static int parse(srv_request *req, srv_response *resp, lt_req *t)
{
    const char *format = "text";
    if (parse_q(req, resp, t, 1) || required(req, resp, "source", &t->source) ||
        required(req, resp, "target", &t->target))
        return -1;
    t->source = srv_served_code(req->srv, t->source);
    t->target = srv_served_code(req->srv, t->target);
    if (srv_field_string(req, resp, "format", &format) < 0)
        return -1;
    if (!format[0])
        format = "text";
    if (strcmp(format, "text") != 0 && strcmp(format, "html") != 0)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "%s format is not supported", format);
    t->html = strcmp(format, "html") == 0;
    if (t->html && srv_markup_parse(&t->mk, t->texts, t->n, req->srv->opts.max_html_depth, resp))
        return -1;
    if (parse_alternatives(req, resp, t) || srv_request_glossary(req, resp, &t->glossary))
        return -1;
    t->placeholders = 1;
    if (srv_field_bool(req, resp, "placeholders", &t->placeholders) < 0)
        return -1;
    json_t *c = json_object_get(req->json, "cache");
    t->cache = !(json_is_false(c) || (json_is_string(c) && (!strcmp(json_string_value(c), "false") ||
                                                             !strcmp(json_string_value(c), "0"))));
    return pick_path(req, resp, t);
}

/* The alternatives of one text: hypotheses 2..n_best, duplicates of earlier
 * ones and empty ones dropped (LibreTranslate's filter_unique). */
static json_t *alternatives_json(const srv_tr_result *r)
{
    json_t *list = json_array();
    for (int k = 1; k < r->n_alts; k++) {
        int dup = !r->alts[k][0];
        for (int j = 0; j < k; j++)
            dup |= strcmp(r->alts[j], r->alts[k]) == 0;
        if (!dup)
            json_array_append_new(list, json_string(r->alts[k]));
    }
    return list;
}

/* What "auto" found, confidence in whole percent as LibreTranslate gives it
 * (blank text: the source undetected_source() gave, confidence 0). */
static json_t *detected_json(const lt_req *t)
{
    if (!t->has_detected)
        return json_pack("{s:f,s:s}", "confidence", 0.0, "language", t->path.model[0]->info->source_lang);
    return json_pack("{s:f,s:s}", "confidence", round(t->detected.confidence), "language", t->detected.code);
}

/* Entry i of q: its translation and alternatives, or itself when unchanged
 * (the identity translation's alternatives are the text again, which
 * filter_unique drops) or blank.  A blank entry beside text is "", as
 * LibreTranslate's improve_translation_formatting() makes it (`source =
 * source.strip(); if not len(source): return ""`); when every entry is blank
 * its detect_translatable() is false: `translated_text = text # Cannot
 * translate, send the original text back`.  A page (format html) has no
 * alternatives: they would be the units'. */
static void entry_json(const lt_req *t, const srv_tr_result *res, char *const *pages, int i, json_t **text,
                       json_t **alts)
{
    int k = 0;
    while (k < t->n && t->index[k] != i)
        k++;
    if (t->unchanged || k >= t->n) {
        *text = json_string(k >= t->n && t->n > 0 && !t->html ? "" : t->all[i]);
        *alts = json_array();
        return;
    }
    *text = json_string(pages ? pages[k] : res[k].alts[0]);
    *alts = pages ? json_array() : alternatives_json(&res[k]);
}

/* {"translatedText", "alternatives"? (asked for), "detectedLanguage"? (source
 * "auto")}: each a list for a list q (detectedLanguage the same for each). */
static json_t *reply_json(const lt_req *t, const srv_tr_result *res, char *const *pages)
{
    json_t *out = json_object(), *text, *alts;
    int detect = strcmp(t->source, "auto") == 0;
    if (t->is_list) {
        json_t *texts = json_array(), *all_alts = json_array(), *detected = json_array();
        for (int i = 0; i < t->n_all; i++) {
            entry_json(t, res, pages, i, &text, &alts);
            json_array_append_new(texts, text);
            json_array_append_new(all_alts, alts);
            if (detect)
                json_array_append_new(detected, detected_json(t));
        }
        json_object_set_new(out, "translatedText", texts);
        json_object_set_new(out, "alternatives", all_alts);
        json_object_set_new(out, "detectedLanguage", detected);
    } else {
        entry_json(t, res, pages, 0, &text, &alts);
        json_object_set_new(out, "translatedText", text);
        json_object_set_new(out, "alternatives", alts);
        if (detect)
            json_object_set_new(out, "detectedLanguage", detected_json(t));
    }
    if (t->alternatives == 0)
        json_object_del(out, "alternatives");
    if (!detect)
        json_object_del(out, "detectedLanguage");
    return out;
}

/* What parse_q allocated. */
static void q_free(lt_req *t)
{
    free(t->all);
    free(t->texts);
    free(t->index);
    json_decref(t->q_parsed);
}

static void lt_free(void *p)
{
    lt_req *t = p;
    srv_trjob_free(t->job);
    q_free(t);
    srv_glossary_free(t->glossary);
    srv_markup_free(&t->mk);
    free(t);
}

/* The reply, from the translations of the non-blank entries (none when unchanged). */
static void lt_reply(srv_response *resp, lt_req *t)
{
    if (t->unchanged) {
        srv_reply_json(resp, 200, reply_json(t, NULL, NULL));
        return;
    }
    int n = n_decoded(t);
    srv_tr_result *res = calloc((size_t)n + 1, sizeof *res);
    char **pages = t->html ? calloc((size_t)t->n + 1, sizeof *pages) : NULL;
    if (!res || (t->html && !pages)) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    } else if (n == 0 || srv_translate_results(t->job, res, resp) == 0) {
        if (!t->html || srv_markup_render(&t->mk, res, pages, resp) == 0)
            srv_reply_json(resp, 200, reply_json(t, res, pages));
        srv_tr_results_free(res, n);
    }
    for (int i = 0; pages && i < t->n; i++)
        free(pages[i]);
    free(pages);
    free(res);
}

/* After decoding, on an HTTP thread. */
static void lt_finish(srv_request *req, srv_response *resp)
{
    lt_req *t = req->pending;
    lt_reply(resp, t);
    lt_free(t);
    req->pending = NULL;
}

void srv_handle_lt_translate(srv_request *req, srv_response *resp)
{
    lt_req *t = calloc(1, sizeof *t);
    if (!t) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    if (parse(req, resp, t))
        goto done;
    if (t->unchanged) {             /* nothing to decode: q as it is */
        lt_reply(resp, t);
        goto done;
    }
    /* the alternatives are hypotheses 2..n_best: the resolver widens the model's beam to n_best */
    int max_beam = srv_max_beam(t->path.model[t->path.n_legs - 1]);
    srv_tr_params tp = { .dp = mt_decode_default_params(), .split = 1, .glossary = t->glossary, .cache = t->cache,
                         .placeholders = t->placeholders };
    tp.dp.n_best = t->html ? 1 : t->alternatives + 1;
    tp.dp.alignment.enabled = t->html;         /* the inline tags go where the words went */
    if (t->html && t->path.n_legs == 2) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: format html is not available through a pivot (%s): "
                 "the tags follow the word alignments of one model", t->path.pivot);
        goto done;
    }
    if (tp.dp.n_best > max_beam) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: alternatives parameter must be <= %d",
                 max_beam - 1);
        goto done;
    }
    if (srv_translate_resolve(&t->path, &tp, resp))
        goto done;
    if (n_decoded(t) == 0)          /* every entry blank, or pages without words: nothing to decode */
        lt_reply(resp, t);
    else if (srv_translate_start(req, resp, &t->path, decoded_texts(t), n_decoded(t), &tp, &t->job, lt_finish, t,
                                 lt_free, NULL) == 0)
        return;                     /* pending: lt_finish frees t */
done:                               /* answered (an error, or nothing to decode) */
    lt_free(t);
}

/* ---- detect ----------------------------------------------------------------------- */

/* One language among the detections of q's texts, as LibreTranslate's
 * detect_languages() (its language.py) gathers them: "for multiple
 * occurrences of the same language (can happen on batch detection) calculate
 * the average confidence", and "text_length = sum(...)" of their texts. */
typedef struct {
    char   code[sizeof ((srv_lang_guess *)0)->code];
    double sum;         /* of its texts' confidences (whole percent, as its Detector rounds them) */
    int    n;           /* its texts */
    double length;      /* its texts' characters (code points: Python's len) */
} lt_cand;

static double code_points(const char *s)
{
    double n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* text's candidates into c[0..*n): its detector's best three (top_3_choices),
 * or, for blank text and text without a letter, what its Detector gives
 * there: [Language("en", 0)].  0, or -1 with resp failed. */
static int add_candidates(srv_server *srv, const char *text, lt_cand *c, int *n, srv_response *resp)
{
    srv_lang_guess g[3] = { { "en", 0 } };
    int k = 0;
    if (!srv_is_blank(text, strlen(text)) && !(k = srv_detect_texts(srv, &text, 1, g, 3, resp)) &&
        resp->error != SRV_OK)
        return -1;
    for (int j = 0; j < (k ? k : 1); j++) {
        int i = 0;
        while (i < *n && strcmp(c[i].code, g[j].code) != 0)
            i++;
        if (i == *n) {
            c[(*n)++] = (lt_cand){ .n = 0 };
            memcpy(c[i].code, g[j].code, sizeof c[i].code);     /* NUL-terminated, same size */
        }
        c[i].sum += round(g[j].confidence);
        c[i].n++;
        c[i].length += code_points(text);
    }
    return 0;
}

/* c[0..n) best first, as detect_languages() sorts them: "(l.confidence *
 * l.text_length) / text_length_total", descending, a stable sort (ties keep
 * their order: first seen first; LibreTranslate's is its installed languages'). */
static json_t *candidates_json(lt_cand *c, int n)
{
    for (int i = 1; i < n; i++) {
        lt_cand x = c[i];
        int j = i;
        for (; j > 0 && c[j - 1].sum / c[j - 1].n * c[j - 1].length < x.sum / x.n * x.length; j--)
            c[j] = c[j - 1];
        c[j] = x;
    }
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:f,s:s}", "confidence", c[i].sum / c[i].n, "language", c[i].code));
    return list;
}

/* LibreTranslate's {"q": string | [strings]} -> [{"confidence", "language"}],
 * one list for all of q, as its detect() answers `detect_languages(q)`: each
 * text detected on its own, a language found in several texts given their
 * mean confidence, best first by confidence times characters (above).  So
 * blank text and text without a letter count as "en" with confidence 0 (a
 * list of them alone: [{"confidence": 0.0, "language": "en"}]).  Missing,
 * empty or an empty list: 400, as its `if not q`. */
static void lt_detect(srv_request *req, srv_response *resp)
{
    lt_req t = { 0 };
    lt_cand *c = NULL;
    int n = 0;
    if (parse_q(req, resp, &t, 0))
        goto done;
    if (!(c = calloc((size_t)t.n_all * 3, sizeof *c))) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        goto done;
    }
    for (int i = 0; i < t.n_all; i++)
        if (add_candidates(req->srv, t.all[i], c, &n, resp))
            goto done;
    srv_reply_json(resp, 200, candidates_json(c, n));
done:
    free(c);
    q_free(&t);
}

static json_t *guesses_json(const srv_lang_guess *g, int k)
{
    json_t *list = json_array();
    for (int j = 0; j < k; j++)
        json_array_append_new(list, json_pack("{s:f,s:s}", "confidence", round(g[j].confidence), "language",
                                              g[j].code));
    return list;
}

/* POST /detect: LibreTranslate's shape (lt_detect) or ours, {"text": string |
 * [strings]} -> {"detections": the list, or one list per text}.  The router
 * decided whose (req->lt).  Among every language the detector knows, the
 * loaded models' sources favoured (detect_source.h). */
void srv_handle_detect(srv_request *req, srv_response *resp)
{
    if (req->lt) {
        lt_detect(req, resp);
        return;
    }
    const char **texts = NULL;
    int n = 0, is_list = 0;
    if (srv_field_texts(req, resp, "text", &texts, &n, &is_list) < 0)
        return;
    json_t *all = json_array();
    for (int i = 0; i < n; i++) {
        srv_lang_guess g[3];
        int k = srv_detect_texts(req->srv, texts + i, 1, g, 3, resp);
        if (resp->error != SRV_OK) {
            json_decref(all);
            free(texts);
            return;
        }
        json_array_append_new(all, guesses_json(g, k));
    }
    free(texts);
    srv_reply_json(resp, 200, json_pack("{s:O}", "detections", is_list ? all : json_array_get(all, 0)));
    json_decref(all);
}

/* ---- spec, suggest ----------------------------------------------------------------- */

/* GET /spec: LibreTranslate's Swagger 2.0 document (flasgger's, its info
 * set by app.py: title "LibreTranslate", version, "Free and Open Source
 * Machine Translation API.", license AGPL-3.0), with the paths we serve in
 * its shape.  Clients check an instance by it (Dialect: info.title). */
void srv_handle_lt_spec(srv_request *req, srv_response *resp)
{
    (void)req;
    if (!(resp->text = strdup(srv_lt_spec_json))) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    resp->text_len = strlen(resp->text);
    resp->content_type = "application/json";
    resp->status = 200;
}

/* POST /suggest: LibreTranslate with suggestions off (its default, and
 * /frontend/settings says "suggestions": false), before it reads a field:
 * `if not args.suggestions: abort(403, description=_("Suggestions are
 * disabled on this server."))`. */
void srv_handle_lt_suggest(srv_request *req, srv_response *resp)
{
    (void)req;
    srv_fail(resp, SRV_E_FORBIDDEN, "Suggestions are disabled on this server.");
}
