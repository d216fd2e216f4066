/* DeepL's API v2: DeepL's own clients (deepl-node, deepl-python, the tools
 * built on them) pointed at our base URL (their serverUrl) work unchanged.
 * What DeepL does is quoted from its API reference (developers.deepl.com,
 * "Translate text", "Retrieve languages", "Check usage and limits", "Errors").
 *
 * POST /v2/translate  form (text=...&text=..., what deepl-node sends) or JSON
 *                     {"text": [strings], "target_lang", "source_lang"?,
 *                      "split_sentences"?, "preserve_formatting"?, "tag_handling"?,
 *                      "formality"?, "context"?, "show_billed_characters"?,
 *                      "ignore_tags"?, "splitting_tags"?, "non_splitting_tags"?,
 *                      "outline_detection"?, ...}
 *                  -> {"translations": [{"detected_source_language": "EN",
 *                      "text": "...", "billed_characters"?: N}]}
 * GET|POST /v2/languages?type=source|target
 *                  -> [{"language": "EN", "name": "English"}] (targets: with
 *                     "supports_formality"; English, Portuguese and Chinese as
 *                     DeepL lists them: EN-GB and EN-US, PT-BR and PT-PT, ZH-HANS)
 * GET|POST /v2/usage -> {"character_count": N, "character_limit": M}
 *
 * The key comes as "Authorization: DeepL-Auth-Key KEY" (routes.c); errors are
 * {"message": "..."} with DeepL's statuses (403 wrong key, 456 quota spent,
 * 429 with Retry-After: errors.c).  The decode path is /translate's
 * (translate_job.h): the cache, batching, fairness and limits are the same.
 *
 * How DeepL's settings map here:
 *   split_sentences  "1" (default without tag_handling): sentences end at
 *                    punctuation and at line breaks; "0": each text is decoded
 *                    whole; "nonewlines" (default with tag_handling): line
 *                    breaks inside a paragraph are read as spaces, so a
 *                    hard-wrapped sentence is translated whole (a blank line
 *                    still ends a paragraph), and each joined break is put back
 *                    where the word alignment places it (translate/word_align.h
 *                    srv_align_points: after the target words of the source word
 *                    before it; none when no space is left there).
 *   preserve_formatting  accepted: whitespace and punctuation around the
 *                    sentences are always kept as sent.
 *   tag_handling     "html": the page read as HTML5 (format html of /translate,
 *                    markup/html.h); "xml": the text read as an XML fragment by
 *                    expat (markup/xml.h: self-closing tags of any name, CDATA,
 *                    comments, PIs, case-sensitive names), every byte outside the
 *                    translated text kept as sent.  Both through markup_job.h: the
 *                    inline tags placed around the target words aligned to the
 *                    words they wrapped (markup/inline.h, one placement for both).
 *                    XML that is not well-formed: 400 "Tag handling parsing
 *                    failed, please check input: " and expat's message and line
 *                    (DeepL's v2 words); nesting past --max-html-depth: 400.
 *                    With xml, split_sentences' default nonewlines joins nothing:
 *                    a unit's whitespace runs are one space already, and the line
 *                    breaks between units are kept.
 *   ignore_tags, splitting_tags, non_splitting_tags  element names as written,
 *                    comma-separated (deepl-node joins its arrays so) or a JSON
 *                    array: ignore_tags' elements are never translated, kept byte
 *                    for byte and placed as a point inside their sentence (xml, and
 *                    html too: srv_html_parse_ignoring, names in any case there);
 *                    splitting_tags' always split, non_splitting_tags' never do
 *                    (xml only: HTML's elements have their own kinds).  A list
 *                    that does not apply: 400, rather than ignored.
 *   outline_detection  (xml) "1", the default: the structure is detected, an
 *                    element holding only elements and whitespace, or standing
 *                    among elements only, splits, one standing in text does not
 *                    (markup/xml.h); "0": only splitting_tags split, as DeepL's
 *                    "customized outline detection" describes.
 *   formality        the models have none: "default", "prefer_more" and
 *                    "prefer_less" translate as usual, "more" and "less" are
 *                    refused (400), as DeepL refuses them for such a language.
 *   context, model_type, tag_handling_version  accepted; the models take no
 *                    context and have one type, and there is one tag handling.
 *   glossary_id      a glossary of /v2 or /v3/glossaries (deepl_glossary_api.c) made with
 *                    the same key: its dictionary for source_lang -> target_lang is the
 *                    request's terms (source_lang required, as DeepL requires it).
 *   glossary_ids, custom_instructions, style_id  refused (400).
 *   source_lang absent: the texts' language is detected (detect_source.h); when
 *                    it is the target language the texts come back unchanged.
 *   placeholders     ours (DeepL has none): printf's %s, {name}, URLs... kept
 *                    byte for byte ("1", the default), or sent to the model ("0").
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "handlers.h"
#include "http/body.h"
#include "service/detect_target.h"
#include "service/glossary_store.h"
#include "service/languages.h"
#include "service/markup_job.h"
#include "service/pairs.h"
#include "service/server.h"
#include "service/translate_job.h"
#include "translate/word_align.h"
#include "util/utf8.h"

/* ---- language codes ------------------------------------------------------------- */

/* The targets DeepL names by a variant, never by the bare code, the
 * language each variant is here (the models translate into the language) and,
 * for Chinese, its script: NLLB-200 has a code for each ("zho_Hans",
 * "zho_Hant"), a model of one "zh" (M2M-100, OPUS-MT) serves both variants. */
static const struct {
    const char *variant, *lang, *script;
} VARIANTS[] = {
    { "EN-GB", "en", NULL }, { "EN-US", "en", NULL }, { "PT-BR", "pt", NULL }, { "PT-PT", "pt", NULL },
    { "ZH-HANS", "zh", "Hans" }, { "ZH-HANT", "zh", "Hant" }, { "ES-419", "es", NULL },
};
#define N_VARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

/* 1 when code is lang written in script: NLLB's "zho_Hant" for ("zh", "Hant"). */
static int code_in_script(const char *code, const char *lang, const char *script)
{
    const char *us = strchr(code, '_');
    char base[16];
    if (!us || strcmp(us + 1, script) || (size_t)(us - code) >= sizeof base)
        return 0;
    snprintf(base, sizeof base, "%.*s", (int)(us - code), code);
    return srv_lang_same(base, lang);
}

/* The code a served model gives lang in script ("zho_Hant"), or NULL. */
static const char *script_code(const srv_server *srv, const char *lang, const char *script)
{
    for (int i = 0; i < srv->n_models; i++) {
        const srv_model *m = &srv->models[i];
        for (int k = 0; srv_model_listed(m) && k < m->n_targets; k++)
            if (code_in_script(m->targets[k], lang, script))
                return m->targets[k];
    }
    return NULL;
}

/* A DeepL code ("EN-GB", "de", "PT-br", "ZH-HANT") as the models spell its language. */
static const char *model_code(const srv_server *srv, const char *code)
{
    for (int i = 0; i < N_VARIANTS; i++)
        if (!strcasecmp(code, VARIANTS[i].variant)) {
            const char *in_script = VARIANTS[i].script ? script_code(srv, VARIANTS[i].lang, VARIANTS[i].script) : NULL;
            return in_script ? in_script : srv_served_code(srv, VARIANTS[i].lang);
        }
    return srv_served_code(srv, code);
}

/* code upper-cased into out ("en" -> "EN"): DeepL's spelling in replies. */
static const char *upper(const char *code, char *out, size_t cap)
{
    size_t i = 0;
    for (; code[i] && i + 1 < cap; i++)
        out[i] = (char)toupper((unsigned char)code[i]);
    out[i] = 0;
    return out;
}

/* ---- POST /v2/translate ----------------------------------------------------------- */

enum { SPLIT_NONE, SPLIT_ALL, SPLIT_NO_NEWLINES };
enum { MARKUP_NONE, MARKUP_HTML, MARKUP_XML };

/* DeepL's tag lists, in this order in dl_req. */
static const char *const TAG_LISTS[] = { "ignore_tags", "splitting_tags", "non_splitting_tags" };
#define N_TAG_LISTS 3

typedef struct {
    const char **texts;          /* every text, as sent (borrowed from req->json) */
    int          n;
    char       **joined;         /* nonewlines: each text with its inner line breaks read as spaces ... */
    long       **breaks;         /* ... where they were (code points of joined[i], increasing) */
    int         *n_breaks;
    const char **sent;           /* what is decoded, entry by entry: texts or joined */
    const char **to_decode;      /* the non-blank ones ... */
    int         *index;          /* ... and their place among texts */
    int          n_decode;
    const char  *source, *target;   /* as the models spell them; source NULL: detect */
    const char  *detected;       /* the source language reported */
    int          split, markup, billed, unchanged, placeholders;
    int          outline;        /* outline_detection (default 1) */
    char        *tag_text[N_TAG_LISTS];     /* the tag lists' names, NUL-separated ... */
    const char **tag_list[N_TAG_LISTS];     /* ... and each list */
    int          n_tag[N_TAG_LISTS];
    srv_markup   mk;
    srv_path     path;
    srv_trjob   *job;
    srv_gstored *glossary;       /* glossary_id's (a reference), or NULL ... */
    srv_gstore  *gstore;         /* ... in this store */
    const srv_glossary *terms;   /* its dictionary for the pair */
} dl_req;

/* The parameters DeepL documents (and its clients send); any other is refused
 * by name, rather than silently doing what the client did not ask. */
static const char *const KNOWN[] = {
    "text", "source_lang", "target_lang", "split_sentences", "preserve_formatting", "tag_handling",
    "tag_handling_version", "formality", "context", "glossary_id", "glossary_ids", "show_billed_characters",
    "model_type", "outline_detection", "ignore_tags", "non_splitting_tags", "splitting_tags",
    "custom_instructions", "style_id", "translation_memory_id", "enable_beta_languages",
    "placeholders",         /* ours, not DeepL's: "0" keeps placeholders in the model's input (pipeline.h) */
};
/* ... and those of them refused: not implemented here, so never half-done. */
static const char *const REFUSED[] = {
    "glossary_ids", "custom_instructions", "style_id", "translation_memory_id",
};

static int in_list(const char *name, const char *const *list, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(name, list[i]))
            return 1;
    return 0;
}

static int check_names(const srv_request *req, srv_response *resp)
{
    const char *name;
    json_t *v;
    json_object_foreach(req->json, name, v) {
        if (!in_list(name, KNOWN, (int)(sizeof KNOWN / sizeof *KNOWN)))
            return srv_fail(resp, SRV_E_INVALID_FIELD, "Unknown parameter '%s'", name);
        if (in_list(name, REFUSED, (int)(sizeof REFUSED / sizeof *REFUSED)))
            return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter '%s' is not supported by this server", name);
    }
    return 0;
}

/* text: a string or a list of strings (a form's repeated text=); at least one. */
static int parse_texts(const srv_request *req, srv_response *resp, dl_req *t)
{
    json_t *v = json_object_get(req->json, "text");
    size_t n = json_is_array(v) ? json_array_size(v) : json_is_string(v) ? 1 : 0;
    if (!v || json_is_null(v))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'text' not specified.");
    if (n == 0)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'text' must be a string or a non-empty list of "
                        "strings");
    t->texts = calloc(n, sizeof *t->texts);
    t->sent = calloc(n, sizeof *t->sent);
    t->to_decode = calloc(n, sizeof *t->to_decode);
    t->index = calloc(n, sizeof *t->index);
    if (!t->texts || !t->sent || !t->to_decode || !t->index)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(e))
            return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'text' must hold strings (entry %zu does not)", i);
        t->texts[t->n++] = json_string_value(e);
    }
    return 0;
}

/* A flag DeepL sends as "0" / "1" (or JSON true / false / 0 / 1). */
static int flag(const srv_request *req, srv_response *resp, const char *name, int *out)
{
    json_t *v = json_object_get(req->json, name);
    const char *s = json_string_value(v);
    if (!v || json_is_null(v))
        return 0;
    if (json_is_boolean(v) || (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)))
        *out = json_is_true(v) || json_integer_value(v) == 1;
    else if (s && (!strcmp(s, "0") || !strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "false")))
        *out = !strcmp(s, "1") || !strcasecmp(s, "true");
    else
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Value for '%s' not supported.", name);
    return 0;
}

/* An optional string parameter among choices (NULL-terminated); *out the index, else left alone. */
static int choice(const srv_request *req, srv_response *resp, const char *name, const char *const *choices,
                  int *out)
{
    const char *s = NULL;
    int rc = srv_field_string(req, resp, name, &s);
    if (rc <= 0)
        return rc;
    for (int i = 0; choices[i]; i++)
        if (!strcasecmp(s, choices[i])) {
            *out = i;
            return 0;
        }
    return srv_fail(resp, SRV_E_INVALID_FIELD, "Value for '%s' not supported.", name);
}

/* Tag list i: DeepL's comma-separated string (what deepl-node sends), or a
 * JSON array of names (each may hold commas too).  Names trimmed, empty ones
 * dropped.  Only with tag_handling xml; ignore_tags with html too (HTML has
 * its own blocks and inline elements: html.h). */
static int parse_tag_list(const srv_request *req, srv_response *resp, dl_req *t, int i)
{
    const char *name = TAG_LISTS[i];
    json_t *v = json_object_get(req->json, name), *e;
    size_t k, total = 0;
    if (!v || json_is_null(v))
        return 0;
    if (t->markup != MARKUP_XML && (t->markup != MARKUP_HTML || i != 0))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter '%s' is supported with tag_handling 'xml'%s only", name,
                        i == 0 ? " or 'html'" : "");
    if (!json_is_string(v) && !json_is_array(v))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter '%s' must be a string or a list of strings", name);
    json_array_foreach(json_is_array(v) ? v : NULL, k, e) {
        if (!json_is_string(e))
            return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter '%s' must hold strings (entry %zu does not)", name,
                            k);
        total += json_string_length(e) + 1;
    }
    if (json_is_string(v))
        total = json_string_length(v) + 1;
    char *buf = t->tag_text[i] = malloc(total + 1), *o = buf;
    const char **list = t->tag_list[i] = calloc(total / 2 + 2, sizeof *list);  /* a name takes a byte and a comma */
    if (!buf || !list)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    for (k = 0; k < (json_is_array(v) ? json_array_size(v) : 1); k++) {
        const char *s = json_string_value(json_is_array(v) ? json_array_get(v, k) : v);
        for (;;) {
            size_t n = strcspn(s, ",");
            const char *a = s, *b = s + n;
            while (a < b && isspace((unsigned char)*a))
                a++;
            while (b > a && isspace((unsigned char)b[-1]))
                b--;
            if (b > a) {
                memcpy(o, a, (size_t)(b - a));
                list[t->n_tag[i]++] = o;
                o += b - a;
                *o++ = 0;
            }
            if (!s[n])
                break;
            s += n + 1;
        }
    }
    return 0;
}

static int parse_settings(const srv_request *req, srv_response *resp, dl_req *t)
{
    static const char *const splits[] = { "0", "1", "nonewlines", NULL };
    static const char *const tags[] = { "html", "xml", NULL };
    static const char *const formality[] = { "default", "prefer_more", "prefer_less", "more", "less", NULL };
    static const char *const models[] = { "quality_optimized", "prefer_quality_optimized", "latency_optimized",
                                          NULL };
    int tag = -1, split = -1, form = 0, model = 0, ignored = 0;
    t->placeholders = 1;
    t->outline = 1;
    if (choice(req, resp, "tag_handling", tags, &tag) || choice(req, resp, "split_sentences", splits, &split) ||
        choice(req, resp, "formality", formality, &form) || choice(req, resp, "model_type", models, &model) ||
        flag(req, resp, "preserve_formatting", &ignored) || flag(req, resp, "outline_detection", &t->outline) ||
        flag(req, resp, "show_billed_characters", &t->billed) ||
        flag(req, resp, "placeholders", &t->placeholders))
        return -1;
    if (form >= 3)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "'formality' is not supported for the given 'target_lang' "
                        "(use prefer_more or prefer_less)");
    t->markup = tag < 0 ? MARKUP_NONE : tag == 0 ? MARKUP_HTML : MARKUP_XML;
    t->split = split >= 0 ? (split == 0 ? SPLIT_NONE : split == 1 ? SPLIT_ALL : SPLIT_NO_NEWLINES)
                          : (t->markup ? SPLIT_NO_NEWLINES : SPLIT_ALL);
    for (int i = 0; i < N_TAG_LISTS; i++)
        if (parse_tag_list(req, resp, t, i))
            return -1;
    return 0;
}

/* The length of the line break at s (\n, \r\n, \r); 0 if none. */
static size_t line_break(const char *s) { return s[0] == '\r' ? 1 + (s[1] == '\n') : s[0] == '\n'; }

/* s with every single line break that has text on both sides made a space:
 * a hard-wrapped paragraph read as one line; blank lines stay.  *breaks (malloc'd,
 * *n_breaks): the code point offsets of those spaces.  NULL: out of memory. */
static char *join_lines(const char *s, long **breaks, int *n_breaks)
{
    size_t n = strlen(s), o = 0;
    long cp = 0;
    char *out = malloc(n + 1);
    *breaks = malloc(sizeof **breaks * (n / 2 + 1));      /* a break takes a byte and has text beside it */
    *n_breaks = 0;
    if (!out || !*breaks) {
        free(out);
        return NULL;
    }
    for (size_t i = 0; i < n;) {
        size_t k = line_break(s + i);
        if (!k) {
            cp += ((unsigned char)s[i] & 0xc0) != 0x80;
            out[o++] = s[i++];
            continue;
        }
        size_t next = line_break(s + i + k);
        int inner = o > 0 && out[o - 1] != '\n' && s[i + k] && !next;
        cp += inner ? 1 : (long)k;
        if (inner) {
            (*breaks)[(*n_breaks)++] = cp - 1;
            out[o++] = ' ';
        } else {
            memcpy(out + o, s + i, k);
            o += k;
        }
        i += k;
    }
    out[o] = 0;
    return out;
}

/* What is decoded: each text (joined with nonewlines), the blank ones left out. */
static int pick_texts(srv_response *resp, dl_req *t)
{
    /* XML's units are made of its text with whitespace runs as one space already, and
     * every byte outside them is kept: its line breaks are not joined */
    if (t->split == SPLIT_NO_NEWLINES && t->markup != MARKUP_XML && (!(t->joined = calloc((size_t)t->n, sizeof *t->joined)) ||
                                          !(t->breaks = calloc((size_t)t->n, sizeof *t->breaks)) ||
                                          !(t->n_breaks = calloc((size_t)t->n, sizeof *t->n_breaks))))
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    for (int i = 0; i < t->n; i++) {
        if (t->joined && !(t->joined[i] = join_lines(t->texts[i], &t->breaks[i], &t->n_breaks[i])))
            return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        t->sent[i] = t->joined ? t->joined[i] : t->texts[i];
        if (!srv_is_blank(t->sent[i], strlen(t->sent[i]))) {
            t->to_decode[t->n_decode] = t->sent[i];
            t->index[t->n_decode++] = i;
        }
    }
    return 0;
}

static int n_decoded(const dl_req *t) { return t->markup ? t->mk.n_units : t->n_decode; }
static const char *const *decoded(const dl_req *t) { return t->markup ? t->mk.units : t->to_decode; }

/* The source: as given, or detected; detected as the target language, the
 * texts come back as they are (t->unchanged).  Then the path. */
static int pick_path(srv_request *req, srv_response *resp, dl_req *t)
{
    srv_server *srv = req->srv;
    if (t->source) {
        t->detected = t->source;
        t->unchanged = srv_lang_same(t->source, t->target);    /* DeepL sends such text back as it is */
        return t->unchanged ? 0 : srv_path_for_pair(srv, t->source, t->target, &t->path, resp);
    }
    srv_lang_guess g;
    if (n_decoded(t) == 0) {                    /* nothing to detect: the target is as good as any */
        t->detected = t->target;
        t->unchanged = 1;
        return 0;
    }
    if (srv_path_for_pair(srv, "auto", t->target, &t->path, resp) ||     /* an unknown target first */
        srv_detect_auto(srv, decoded(t), n_decoded(t), t->target, &g, &t->unchanged, resp))
        return -1;
    if (t->unchanged) {
        t->detected = t->target;
        return 0;
    }
    t->detected = srv_served_code(srv, g.code);
    return srv_path_for_pair(srv, t->detected, t->target, &t->path, resp);
}

/* glossary_id: the stored glossary's dictionary for the pair. */
static int pick_glossary(srv_request *req, srv_response *resp, dl_req *t)
{
    const char *id = NULL;
    if (srv_field_string(req, resp, "glossary_id", &id) <= 0 || !*id)
        return resp->error == SRV_OK ? 0 : -1;
    if (!t->source)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Use of a glossary requires the source_lang parameter");
    t->gstore = req->srv->gstore;
    if (!(t->glossary = srv_gstore_get(t->gstore, id, req->key)))
        return srv_fail(resp, SRV_E_NOT_FOUND, "Glossary not found");
    const srv_gdict *d = srv_gstored_dict(t->glossary, t->source, t->target);
    if (!d)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "The glossary has no dictionary %s -> %s", t->source, t->target);
    t->terms = d->terms;
    return 0;
}

static int parse(srv_request *req, srv_response *resp, dl_req *t)
{
    const char *target = NULL, *source = NULL;
    if (check_names(req, resp) || parse_texts(req, resp, t) || srv_field_string(req, resp, "target_lang", &target) < 0 ||
        srv_field_string(req, resp, "source_lang", &source) < 0 || parse_settings(req, resp, t))
        return -1;
    if (!target || !*target)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'target_lang' not specified.");
    t->target = model_code(req->srv, target);
    t->source = source && *source ? model_code(req->srv, source) : NULL;
    if (pick_texts(resp, t) || pick_glossary(req, resp, t))
        return -1;
    srv_xml_tags tags = { t->tag_list[0], t->n_tag[0], t->tag_list[1], t->n_tag[1], t->tag_list[2], t->n_tag[2],
                          t->outline };
    int depth = req->srv->opts.max_html_depth;
    if (t->markup && srv_markup_parse_tags(&t->mk, t->to_decode, t->n_decode, t->markup == MARKUP_XML, &tags, depth,
                                           resp))
        return -1;
    return pick_path(req, resp, t);
}

/* nonewlines: text (entry i's translation) with its source's joined line
 * breaks put back where the word alignment places them (srv_align_points):
 * a space of the translation becomes "\n".  malloc'd; NULL: as it is. */
static char *breaks_back(const dl_req *t, int i, const srv_tr_result *r, const char *text)
{
    int n = t->n_breaks ? t->n_breaks[i] : 0;
    long *at = n && r->n_words ? malloc(sizeof *at * (size_t)n) : NULL;
    char *out = at ? strdup(text) : NULL;
    if (!out) {
        free(at);
        return NULL;
    }
    srv_align_points(r->words, r->n_words, out, strlen(out), t->breaks[i], n, at);
    long cp = 0;
    for (char *p = out; *p; p++) {
        for (int k = 0; k < n; k++)
            if (at[k] == cp && *p == ' ')
                *p = '\n';
        cp += ((unsigned char)*p & 0xc0) != 0x80;
    }
    free(at);
    return out;
}

/* {"translations": [...]}: entry i's translation, or its text as sent when
 * blank or unchanged. */
static json_t *reply_json(const dl_req *t, const srv_tr_result *res, char *const *pages)
{
    json_t *list = json_array();
    char lang[16];
    upper(t->detected, lang, sizeof lang);
    for (int i = 0, k = 0; i < t->n; i++) {
        const char *text = t->texts[i];
        char *back = NULL;
        if (!t->unchanged && k < t->n_decode && t->index[k] == i) {
            text = pages ? pages[k] : res[k].alts[0];
            back = pages ? NULL : breaks_back(t, i, &res[k], text);
            k++;
        }
        json_t *e = json_pack("{s:s,s:s}", "detected_source_language", lang, "text", back ? back : text);
        free(back);
        if (t->billed)
            json_object_set_new(e, "billed_characters", json_integer(mt_utf8_count(t->texts[i], strlen(t->texts[i]))));
        json_array_append_new(list, e);
    }
    return json_pack("{s:o}", "translations", list);
}

static void dl_free(void *p)
{
    dl_req *t = p;
    if (t->glossary)
        srv_gstore_release(t->gstore, t->glossary);
    srv_trjob_free(t->job);
    for (int i = 0; t->joined && i < t->n; i++) {
        free(t->joined[i]);
        free(t->breaks ? t->breaks[i] : NULL);
    }
    free(t->joined);
    free(t->breaks);
    free(t->n_breaks);
    free(t->texts);
    free(t->sent);
    free(t->to_decode);
    free(t->index);
    srv_markup_free(&t->mk);
    for (int i = 0; i < N_TAG_LISTS; i++) {
        free(t->tag_text[i]);
        free(t->tag_list[i]);
    }
    free(t);
}

static void dl_reply(srv_response *resp, dl_req *t)
{
    int n = t->unchanged ? 0 : n_decoded(t);
    srv_tr_result *res = calloc((size_t)n + 1, sizeof *res);
    char **pages = t->markup ? calloc((size_t)t->n_decode + 1, sizeof *pages) : NULL;
    if (!res || (t->markup && !pages)) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    } else if (n == 0 || srv_translate_results(t->job, res, resp) == 0) {
        if (n == 0 || !t->markup || srv_markup_render(&t->mk, res, pages, resp) == 0)
            srv_reply_json(resp, 200, reply_json(t, res, n ? pages : NULL));
        srv_tr_results_free(res, n);
    }
    for (int i = 0; pages && i < t->n_decode; i++)
        free(pages[i]);
    free(pages);
    free(res);
}

static void dl_finish(srv_request *req, srv_response *resp)
{
    dl_req *t = req->pending;
    dl_reply(resp, t);
    dl_free(t);
    req->pending = NULL;
}

void srv_handle_deepl_translate(srv_request *req, srv_response *resp)
{
    dl_req *t = calloc(1, sizeof *t);
    if (!t) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    if (parse(req, resp, t))
        goto done;
    if (t->unchanged || n_decoded(t) == 0) {
        dl_reply(resp, t);
        goto done;
    }
    srv_tr_params tp = { .dp = mt_decode_default_params(), .split = t->split != SPLIT_NONE, .cache = 1,
                         .glossary = t->terms, .placeholders = t->placeholders };
    tp.dp.alignment.enabled = t->markup || t->n_breaks;     /* the tags, the line breaks go where the words went */
    if (t->markup && t->path.n_legs == 2) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "tag_handling is not available through a pivot (%s): the tags follow "
                 "the word alignments of one model", t->path.pivot);
        goto done;
    }
    if (srv_translate_resolve(&t->path, &tp, resp))
        goto done;
    if (srv_translate_start(req, resp, &t->path, decoded(t), n_decoded(t), &tp, &t->job, dl_finish, t, dl_free,
                            NULL) == 0)
        return;                     /* pending: dl_finish frees t */
done:
    dl_free(t);
}

/* ---- GET|POST /v2/languages --------------------------------------------------------- */

/* DeepL's list of one language: its code (or variant) and name. */
static void add_language(json_t *list, const char *code, const char *name, int target)
{
    char up[16];
    size_t i;
    json_t *e;
    upper(code, up, sizeof up);
    json_array_foreach(list, i, e)          /* a language several models name, once */
        if (!strcmp(json_string_value(json_object_get(e, "language")), up))
            return;
    e = json_pack("{s:s,s:s}", "language", up, "name", name);
    if (target)
        json_object_set_new(e, "supports_formality", json_false());
    json_array_append_new(list, e);
}

/* The DeepL variant that lists code as a target (i of VARIANTS): DeepL lists
 * ZH-HANS and ES, not ES-419 and ZH-HANT (newer, opt-in), but a model with a
 * code for Traditional Chinese (NLLB's "zho_Hant") lists ZH-HANT for it. */
static int lists_variant(const char *code, int i)
{
    if (VARIANTS[i].script && code_in_script(code, VARIANTS[i].lang, VARIANTS[i].script))
        return 1;
    return srv_lang_same(code, VARIANTS[i].lang) && strcmp(VARIANTS[i].variant, "ZH-HANT") &&
           strcmp(VARIANTS[i].variant, "ES-419");
}

/* A language code the models name, as DeepL lists it (targets: the variants,
 * a script's named as /languages names it: "Chinese (Traditional)"). */
static void add_code(const srv_server *srv, json_t *list, const char *code, int target)
{
    int variants = 0;
    for (int i = 0; target && i < N_VARIANTS; i++) {
        if (!lists_variant(code, i))
            continue;
        const char *script = VARIANTS[i].script ? srv_script_name(VARIANTS[i].script) : NULL;
        char name[96];
        snprintf(name, sizeof name, "%s (%s)", srv_lang_name(VARIANTS[i].lang), script ? script : VARIANTS[i].variant + 3);
        add_language(list, VARIANTS[i].variant, name, 1);
        variants++;
    }
    if (!variants)
        add_language(list, code, srv_language_name(srv, code), target);
}

void srv_handle_deepl_languages(srv_request *req, srv_response *resp)
{
    static const char *const types[] = { "source", "target", NULL };
    int type = 0;
    if (choice(req, resp, "type", types, &type))
        return;
    srv_server *srv = req->srv;
    json_t *list = json_array();
    for (int i = 0; i < srv->n_models; i++) {
        const srv_model *m = &srv->models[i];
        const char *code;
        if (!srv_model_listed(m))
            continue;
        if (type == 0) {
            for (int k = 0; (code = srv_model_source_at(m, k)); k++)
                add_code(srv, list, code, 0);
        } else if (m->n_targets) {
            for (int k = 0; k < m->n_targets; k++)
                add_code(srv, list, m->targets[k], 1);
        } else if (m->n_pairs) {
            for (int k = 0; k < m->n_pairs; k++)
                add_code(srv, list, m->pairs[k][1], 1);
        } else if (m->info->target_lang[0]) {
            add_code(srv, list, m->info->target_lang, 1);
        }
    }
    srv_reply_json(resp, 200, list);
}

/* ---- GET|POST /v2/usage ------------------------------------------------------------- */

/* The requesting key's count and quota; no quota: DeepL Pro's "unlimited"
 * answer, a limit of 10^12. */
void srv_handle_deepl_usage(srv_request *req, srv_response *resp)
{
    srv_server *srv = req->srv;
    int key = req->key;
    long used = srv->usage ? srv_shared_usage_count(srv->shared, key) : 0;
    long quota = srv->usage ? srv_usage_quota(srv->usage, key) : -1;
    srv_reply_json(resp, 200, json_pack("{s:I,s:I}", "character_count", (json_int_t)used, "character_limit",
                                        (json_int_t)(quota >= 0 ? quota : 1000000000000LL)));
}
