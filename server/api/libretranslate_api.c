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
 * Errors are {"error": "message"}, with LibreTranslate's wording where it has one
 * (and its statuses: errors.c).  As LibreTranslate: codes in any case ("EN");
 * format "" is text; alternatives a number or a numeric string, below 0 read
 * as 0; a form's q has its line breaks made "\n" and its last one dropped
 * ("\n".join(q.splitlines())); text without a letter is detected as
 * {"confidence": 0.0, "language": "en"} by /detect; blank text is sent back as
 * it is, also with source "auto" (reported as undetected_source() says).
 * "auto" detects the language of the texts (all of q together, as
 * LibreTranslate does), among the loaded models' sources (detect_source.h),
 * and routes as if it had been named; format "html" translates the pages'
 * text with their markup kept (markup_job.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/body.h"
#include "service/languages.h"
#include "service/detect_source.h"
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
    return json_pack("{s:s,s:s,s:o}", "code", code, "name", srv_lang_name(code), "targets", targets);
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

/* q: a string or a list of strings.  Blank entries of a list are sent back
 * as they are, untranslated, rather than failing the whole batch.  lines: a
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
        for (int k = 0; (source = srv_model_source_at(&srv->models[i], k)); k++) {
            srv_path path;
            srv_response scratch = { 0 };   /* srv_fail only writes into it */
            if (srv_path_for_pair(srv, source, target, &path, &scratch) == 0)
                return source;
        }
    }
    return "auto";
}

/* Our extension "model" names the model (its target token from "target" when
 * multilingual); else the pair picks it, maybe through a pivot (pairs.h), the
 * source detected when it is "auto". */
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
        if (srv_detect_source(req->srv, decoded_texts(t), n_decoded(t), t->target, &t->detected, resp))
            return -1;
        t->has_detected = 1;
        source = t->detected.code;
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

/* What "auto" found, confidence in whole percent as LibreTranslate gives it. */
static json_t *detected_json(const lt_req *t)
{
    if (!t->has_detected)
        return json_pack("{s:f,s:s}", "confidence", 0.0, "language", t->path.model[0]->info->source_lang);
    return json_pack("{s:f,s:s}", "confidence", round(t->detected.confidence), "language", t->detected.code);
}

/* Entry i of q: its translation and alternatives, or itself when blank.  A
 * page (format html) has no alternatives: they would be the units'. */
static void entry_json(const lt_req *t, const srv_tr_result *res, char *const *pages, int i, json_t **text,
                       json_t **alts)
{
    int k = 0;
    while (k < t->n && t->index[k] != i)
        k++;
    *text = json_string(k >= t->n ? t->all[i] : pages ? pages[k] : res[k].alts[0]);
    *alts = k < t->n && !pages ? alternatives_json(&res[k]) : json_array();
}

static json_t *reply_json(const lt_req *t, const srv_tr_result *res, char *const *pages)
{
    json_t *out = json_object(), *text, *alts;
    if (t->is_list) {
        json_t *texts = json_array(), *all_alts = json_array(), *detected = json_array();
        for (int i = 0; i < t->n_all; i++) {
            entry_json(t, res, pages, i, &text, &alts);
            json_array_append_new(texts, text);
            json_array_append_new(all_alts, alts);
            json_array_append_new(detected, detected_json(t));
        }
        json_object_set_new(out, "translatedText", texts);
        json_object_set_new(out, "alternatives", all_alts);
        json_object_set_new(out, "detectedLanguage", detected);
    } else {
        entry_json(t, res, pages, 0, &text, &alts);
        json_object_set_new(out, "translatedText", text);
        json_object_set_new(out, "alternatives", alts);
        json_object_set_new(out, "detectedLanguage", detected_json(t));
    }
    if (t->alternatives == 0)
        json_object_del(out, "alternatives");
    if (strcmp(t->source, "auto") != 0)
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

/* The reply, from the translations of the non-blank entries. */
static void lt_reply(srv_response *resp, lt_req *t)
{
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
        goto fail;
    /* the alternatives are hypotheses 2..n_best: the resolver widens the model's beam to n_best */
    int max_beam = srv_max_beam(t->path.model[t->path.n_legs - 1]);
    srv_tr_params tp = { .dp = mt_decode_default_params(), .split = 1, .glossary = t->glossary, .cache = t->cache,
                         .placeholders = t->placeholders };
    tp.dp.n_best = t->html ? 1 : t->alternatives + 1;
    tp.dp.alignment.enabled = t->html;         /* the inline tags go where the words went */
    if (t->html && t->path.n_legs == 2) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: format html is not available through a pivot (%s): "
                 "the tags follow the word alignments of one model", t->path.pivot);
        goto fail;
    }
    if (tp.dp.n_best > max_beam) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: alternatives parameter must be <= %d",
                 max_beam - 1);
        goto fail;
    }
    if (srv_translate_resolve(&t->path, &tp, resp))
        goto fail;
    if (n_decoded(t) == 0)          /* every entry blank, or pages without words: nothing to decode */
        lt_reply(resp, t);
    else if (srv_translate_start(req, resp, &t->path, decoded_texts(t), n_decoded(t), &tp, &t->job, lt_finish, t,
                                 lt_free, NULL) == 0)
        return;                     /* pending: lt_finish frees t */
fail:
    lt_free(t);
}

/* ---- detect ----------------------------------------------------------------------- */

/* LibreTranslate's answer for text it cannot place (its detect.py, and
 * detect_languages() for no candidate at all): English, confidence 0. */
static json_t *undetected_json(void)
{
    return json_pack("[{s:f,s:s}]", "confidence", 0.0, "language", "en");
}

static json_t *guesses_json(const srv_lang_guess *g, int k)
{
    json_t *list = json_array();
    for (int j = 0; j < k; j++)
        json_array_append_new(list, json_pack("{s:f,s:s}", "confidence", round(g[j].confidence), "language",
                                              g[j].code));
    return list;
}

/* LibreTranslate's {"q": string | [strings]} -> one list for all of q (its
 * detect_languages() merges a list's detections into one), best first; blank
 * text and text without a letter -> undetected_json().  Missing, empty or an
 * empty list: 400, as LibreTranslate's `if not q`. */
static void lt_detect(srv_request *req, srv_response *resp)
{
    lt_req t = { 0 };
    srv_lang_guess g[3];
    if (parse_q(req, resp, &t, 0) == 0) {
        int k = t.n ? srv_detect_texts(req->srv, t.texts, t.n, g, 3, resp) : 0;
        if (resp->error == SRV_OK)
            srv_reply_json(resp, 200, k ? guesses_json(g, k) : undetected_json());
    }
    q_free(&t);
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
