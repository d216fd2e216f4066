/* test_lt_parity: what a LibreTranslate v1.9 server gives its clients, asked of
 * the real server over loopback (shipped models en-fr, fr-en; an API key, as
 * an instance that has keys).  Each check quotes LibreTranslate's
 * libretranslate/app.py (v1.9.6) or language.py for what it compares with:
 *   - GET /spec: its Swagger document, info as its app.py sets it; public;
 *     POST /spec 405 (its test_api_spec.py)
 *   - POST /suggest: 403 "Suggestions are disabled on this server.", before any
 *     field or key is read; GET /suggest 405
 *   - its paths we do not serve (/docs, /js/app.js, /static/): 404 in its
 *     shape; 404 and 405 in werkzeug's words; other unknown paths stay ours
 *   - source "auto" detected as the target: 200, q as it is, detectedLanguage
 *     (a string, a list, a form, format html); a named source that is the
 *     target: the same, without detectedLanguage; an unknown one: 400
 *   - POST /detect with a list: each text detected on its own and gathered as
 *     detect_languages() does, recomputed here from /detect of each text
 *   - query-string fields: deep-translator's LibreTranslator sends all of them
 *     in the query of a POST without a body; a form's fields give way to the
 *     query's (Flask's request.values)
 *   - its 429: "Slowdown: N per 1 minute"
 * The npm clients drive the same server in tests/e2e/lt_client.mjs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static server srv;

#define KEY  "lt-parity-key"
#define FORM "application/x-www-form-urlencoded"

/* French sentences of the shipped models' domain (Debian package descriptions). */
#define FR1 "Le fichier contient une liste des paquets installés."
#define FR2 "Ce paquet contient les fichiers de développement de la bibliothèque."
#define EN1 "This package provides the documentation of the library."

/* werkzeug's descriptions of NotFound and MethodNotAllowed: what Flask answers
 * LibreTranslate's clients for a path or a method it has no rule for. */
#define WZ_404 "The requested URL was not found on the server. If you entered the URL manually please check " \
               "your spelling and try again."
#define WZ_405 "The method is not allowed for the requested URL."

static int setup(void **state)
{
    (void)state;
    const char *const args[] = { "--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en",
                                 "--api-key", KEY, "--threads", "2", NULL };
    return server_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    return server_stop(&srv) == -2 ? -1 : 0;
}

/* A request of method on path: body JSON when it starts with '{' (or '['), else a form. */
static reply lt_req(const server *s, const char *method, const char *path, const char *body)
{
    req_opts o = { .method = method, .body = body,
                   .content_type = body && (body[0] == '{' || body[0] == '[') ? "application/json" : FORM };
    return http_req(s, path, &o);
}

/* The reply's body, its status asserted (caller decrefs). */
static json_t *lt_ok(const char *path, const char *body)
{
    reply r = lt_req(&srv, "POST", path, body);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    return j;
}

/* Asserts LibreTranslate's error shape, {"error": "..."} and nothing else,
 * with status; the message starts with prefix (when given). */
static void expect_lt_error(reply *r, long status, const char *prefix)
{
    json_t *j = expect_json(r, status);
    json_t *e = json_object_get(j, "error");
    if (!json_is_string(e) || (prefix && strncmp(json_string_value(e), prefix, strlen(prefix)) != 0))
        print_error("expected {\"error\": \"%s...\"}: %s\n", prefix ? prefix : "", r->body);
    assert_true(json_is_string(e));
    if (prefix)
        assert_int_equal(strncmp(json_string_value(e), prefix, strlen(prefix)), 0);
    assert_int_equal(json_object_size(j), 1);
    json_decref(j);
    reply_free(r);
}

/* ---- /spec ------------------------------------------------------------------------- */

/* app.py: swag["info"]["version"] = get_version(); ["title"] = "LibreTranslate";
 * ["description"] = "Free and Open Source Machine Translation API."; ["license"] =
 * {"name": "AGPL-3.0"}; `@app.route(api_url) @limiter.exempt def spec()`, with no
 * access_check: public.  Its test_api_spec.py: GET 200, POST 405. */
static void test_spec(void **state)
{
    (void)state;
    reply r = get(&srv, "/spec");           /* no api_key: public */
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    json_t *info = json_object_get(j, "info");
    assert_string_equal(json_string_value(json_object_get(info, "title")), "LibreTranslate");  /* Dialect's check */
    assert_string_equal(json_string_value(json_object_get(info, "version")), "1.9.6");
    assert_string_equal(json_string_value(json_object_get(info, "description")),
                        "Free and Open Source Machine Translation API.");
    assert_string_equal(json_string_value(json_object_get(json_object_get(info, "license"), "name")), "AGPL-3.0");
    assert_string_equal(json_string_value(json_object_get(j, "swagger")), "2.0");
    /* its paths are the routes a LibreTranslate client calls here: each answers (not 404) */
    const char *path;
    json_t *item;
    int n = 0;
    json_object_foreach(json_object_get(j, "paths"), path, item) {
        const char *method;
        json_t *op;
        json_object_foreach(item, method, op) {
            if (strchr(path, '{'))
                continue;                   /* /download_file/{id}/{name}: no file to name */
            req_opts o = { .method = strcmp(method, "post") == 0 ? "POST" : "GET" };
            r = http_req(&srv, path, &o);
            if (r.status == 404)
                print_error("%s %s: 404\n", o.method, path);
            assert_true(r.status != 404 && r.status != 405 && r.status > 0);
            reply_free(&r);
            n++;
        }
    }
    assert_true(n >= 7);
    json_decref(j);
    r = lt_req(&srv, "POST", "/spec", NULL);
    expect_lt_error(&r, 405, WZ_405);
}

/* ---- /suggest ------------------------------------------------------------------------ */

/* app.py suggest(), no access_check: `if not args.suggestions: abort(403,
 * description=_("Suggestions are disabled on this server."))`, its first
 * line; bp.errorhandler(403): jsonify({"error": str(e.description)}), 403. */
static void test_suggest(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "q=Hello&s=Bonjour&source=en&target=fr",                                   /* Dialect's form */
        "{\"q\": \"Hello\", \"s\": \"Bonjour\", \"source\": \"en\", \"target\": \"fr\", \"api_key\": \"" KEY "\"}",
        "{\"q\": ",                         /* not JSON: never read */
        NULL,                               /* no body */
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        reply r = lt_req(&srv, "POST", "/suggest", bodies[i]);
        json_t *j = expect_json(&r, 403);
        assert_string_equal(json_string_value(json_object_get(j, "error")), "Suggestions are disabled on this server.");
        assert_int_equal(json_object_size(j), 1);
        json_decref(j);
        reply_free(&r);
    }
    reply r = get(&srv, "/suggest");        /* @bp.post: GET has no rule */
    expect_lt_error(&r, 405, WZ_405);
    /* and /frontend/settings says so: "suggestions": args.suggestions */
    r = get(&srv, "/frontend/settings");
    json_t *j = expect_json(&r, 200);
    assert_true(json_is_false(json_object_get(j, "suggestions")));
    json_decref(j);
    reply_free(&r);
}

/* ---- 404, 405 on its paths ------------------------------------------------------------- */

/* Its routes we do not serve: the Swagger UI (get_swaggerui_blueprint at
 * /docs), its page's /js/app.js and /static/ files.  Flask answers a path or
 * a method without a rule with werkzeug's NotFound / MethodNotAllowed; here in
 * its {"error": "..."} shape, the words werkzeug's.  A path no one has: ours. */
static void test_not_found_not_allowed(void **state)
{
    (void)state;
    static const char *const unserved[] = { "/docs", "/docs/", "/docs/swagger-ui.css", "/js/app.js",
                                            "/static/css/main.css" };
    for (size_t i = 0; i < sizeof unserved / sizeof *unserved; i++) {
        reply r = get(&srv, unserved[i]);
        expect_lt_error(&r, 404, WZ_404);
    }
    static const char *const wrong[][2] = {
        { "GET", "/detect" }, { "POST", "/languages" }, { "POST", "/frontend/settings" }, { "GET", "/suggest" },
        { "POST", "/spec" }, { "PUT", "/translate_file" }, { "POST", "/download_file/x/y" },
    };
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
        reply r = lt_req(&srv, wrong[i][0], wrong[i][1], NULL);
        char allow[128] = "";
        assert_true(header(&r, "Allow", allow, sizeof allow));
        expect_lt_error(&r, 405, WZ_405);
    }
    reply r = get(&srv, "/no-such-path");
    json_t *j = expect_json(&r, 404);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")), "not_found");
    json_decref(j);
    reply_free(&r);
}

/* ---- source "auto" detected as the target ---------------------------------------------- */

/* /detect's best guess for one text (LibreTranslate's shape). */
static json_t *best_guess(const char *text)
{
    json_t *body = json_pack("{s:s,s:s}", "q", text, "api_key", KEY);
    char *b = json_dumps(body, 0);
    json_t *list = lt_ok("/detect", b);
    json_t *g = json_incref(json_array_get(list, 0));
    json_decref(list);
    free(b);
    json_decref(body);
    return g;
}

/* app.py translate(): `candidate_langs = detect_languages(src_texts);
 * detected_src_lang = candidate_langs[0]; src_lang = get_language_with_fallback(
 * detected_src_lang["language"], languages)`, whatever the target; then
 * `translator = src_lang.get_translation(tgt_lang)`, for fr -> fr argos'
 * IdentityTranslation, whose hypotheses are the text itself:
 * `translated_text = unescape(improve_translation_formatting(q, hypotheses[0].value))`
 * is q, and filter_unique leaves no alternative.  `if source_lang == "auto":
 * result["detectedLanguage"] = model2iso(detected_src_lang)`, for a list
 * `[model2iso(detected_src_lang)] * len(q)`; `if num_alternatives > 0:
 * result["alternatives"] = alternatives`. */
static void test_auto_is_target(void **state)
{
    (void)state;
    json_t *g = best_guess(FR1);
    assert_string_equal(json_string_value(json_object_get(g, "language")), "fr");
    json_t *j = lt_ok("/translate", "{\"q\": \"" FR1 "\", \"source\": \"auto\", \"target\": \"fr\", \"api_key\": \"" KEY "\"}");
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), FR1);
    json_t *det = json_object_get(j, "detectedLanguage");
    assert_true(json_equal(det, g));        /* {"confidence", "language": "fr"}: /detect's best */
    assert_null(json_object_get(j, "alternatives"));
    assert_int_equal(json_object_size(j), 2);
    json_decref(j);

    /* alternatives asked: [] (the identity's hypotheses are all q) */
    j = lt_ok("/translate", "{\"q\": \"" FR1 "\", \"source\": \"auto\", \"target\": \"fr\", \"alternatives\": 3, "
              "\"api_key\": \"" KEY "\"}");
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), FR1);
    assert_true(json_is_array(json_object_get(j, "alternatives")));
    assert_int_equal(json_array_size(json_object_get(j, "alternatives")), 0);
    json_decref(j);

    /* a list: each entry as it is, detectedLanguage the same for each */
    j = lt_ok("/translate", "{\"q\": [\"" FR1 "\", \"" FR2 "\"], \"source\": \"auto\", \"target\": \"fr\", "
              "\"api_key\": \"" KEY "\"}");
    json_t *texts = json_object_get(j, "translatedText"), *dets = json_object_get(j, "detectedLanguage");
    assert_int_equal(json_array_size(texts), 2);
    assert_string_equal(json_string_value(json_array_get(texts, 0)), FR1);
    assert_string_equal(json_string_value(json_array_get(texts, 1)), FR2);
    assert_int_equal(json_array_size(dets), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(dets, 0), "language")), "fr");
    assert_true(json_equal(json_array_get(dets, 0), json_array_get(dets, 1)));
    json_decref(j);

    /* a form (LibreTranslate's page), and format html: the page as it is */
    j = lt_ok("/translate", "q=Le+fichier+contient+une+liste+des+paquets+install%C3%A9s.&source=auto&target=fr"
              "&api_key=" KEY);
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), FR1);
    assert_true(json_equal(json_object_get(j, "detectedLanguage"), g));
    json_decref(j);
    j = lt_ok("/translate", "{\"q\": \"<p>" FR1 " <b>" FR2 "</b></p>\", \"source\": \"auto\", \"target\": \"fr\", "
              "\"format\": \"html\", \"api_key\": \"" KEY "\"}");
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), "<p>" FR1 " <b>" FR2 "</b></p>");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "detectedLanguage"), "language")), "fr");
    json_decref(j);

    /* English towards fr is still translated, as with source en */
    json_t *auto_en = lt_ok("/translate", "{\"q\": \"" EN1 "\", \"source\": \"auto\", \"target\": \"fr\", "
                            "\"api_key\": \"" KEY "\"}");
    json_t *named = lt_ok("/translate", "{\"q\": \"" EN1 "\", \"source\": \"en\", \"target\": \"fr\", "
                          "\"api_key\": \"" KEY "\"}");
    assert_string_equal(json_string_value(json_object_get(auto_en, "translatedText")),
                        json_string_value(json_object_get(named, "translatedText")));
    assert_string_not_equal(json_string_value(json_object_get(named, "translatedText")), EN1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(auto_en, "detectedLanguage"), "language")),
                        "en");
    json_decref(auto_en);
    json_decref(named);
    json_decref(g);
}

/* A named source that is the target: `src_lang = next((l for l in languages if
 * l.code == source_lang), None)`, the identity translation again; no
 * detectedLanguage (source is not "auto").  One it does not have: `if src_lang
 * is None: abort(400, description=_("%(lang)s is not supported", lang=source_lang))`. */
static void test_source_is_target(void **state)
{
    (void)state;
    json_t *j = lt_ok("/translate", "{\"q\": \"" FR1 "\", \"source\": \"fr\", \"target\": \"FR\", \"api_key\": \"" KEY "\"}");
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), FR1);
    assert_int_equal(json_object_size(j), 1);
    json_decref(j);
    /* a blank entry beside text: improve_translation_formatting(q, q) strips it to "" */
    j = lt_ok("/translate", "{\"q\": [\"" EN1 "\", \"  \"], \"source\": \"en\", \"target\": \"en\", \"api_key\": \"" KEY "\"}");
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "translatedText"), 0)), EN1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "translatedText"), 1)), "");
    json_decref(j);
    reply r = lt_req(&srv, "POST", "/translate", "{\"q\": \"Hallo\", \"source\": \"de\", \"target\": \"de\", "
                     "\"api_key\": \"" KEY "\"}");
    expect_lt_error(&r, 400, "de is not supported");
}

/* ---- /detect with a list ------------------------------------------------------------------ */

typedef struct {
    char   code[16];
    double sum, length;
    int    n;
} cand;

static double code_points(const char *s)
{
    double n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* language.py detect_languages(), on the per-text candidates /detect gives
 * for each text alone: `for t in text: d = Detector(lang_codes).detect(t); ...
 * d[i].text_length = len(t)`; `if is_batch:` a language found in several
 * texts gets `sum(l.confidence for l in lc) / len(lc)` and `text_length =
 * sum(l.text_length for l in lc)`; `candidates.sort(key=lambda l: (l.confidence
 * * l.text_length) / text_length_total, reverse=True)`. */
static json_t *expected_detection(const char *const *texts, int n_texts)
{
    cand c[64];
    int n = 0;
    for (int t = 0; t < n_texts; t++) {
        json_t *body = json_pack("{s:s,s:s}", "q", texts[t], "api_key", KEY);
        char *b = json_dumps(body, 0);
        json_t *list = lt_ok("/detect", b);
        size_t k;
        json_t *g;
        json_array_foreach(list, k, g) {
            const char *code = json_string_value(json_object_get(g, "language"));
            int i = 0;
            while (i < n && strcmp(c[i].code, code) != 0)
                i++;
            if (i == n) {
                assert_true(n < 64);
                c[n++] = (cand){ .n = 0 };
                snprintf(c[i].code, sizeof c[i].code, "%s", code);
            }
            c[i].sum += json_number_value(json_object_get(g, "confidence"));
            c[i].n++;
            c[i].length += code_points(texts[t]);
        }
        json_decref(list);
        free(b);
        json_decref(body);
    }
    for (int i = 1; i < n; i++)             /* Python's sort is stable */
        for (int j = i; j > 0 && c[j - 1].sum / c[j - 1].n * c[j - 1].length < c[j].sum / c[j].n * c[j].length; j--) {
            cand x = c[j];
            c[j] = c[j - 1];
            c[j - 1] = x;
        }
    json_t *out = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(out, json_pack("{s:f,s:s}", "confidence", c[i].sum / c[i].n, "language", c[i].code));
    return out;
}

/* app.py detect(): `return jsonify(model2iso(detect_languages(q)))`, q a
 * string or a list: one list back, merged as above (not one per text). */
static void test_detect_list(void **state)
{
    (void)state;
    static const char *const texts[] = { FR1, EN1, FR2, "12345", "  " };
    json_t *want = expected_detection(texts, 5);
    json_t *got = lt_ok("/detect", "{\"q\": [\"" FR1 "\", \"" EN1 "\", \"" FR2 "\", \"12345\", \"  \"], "
                        "\"api_key\": \"" KEY "\"}");
    char *w = json_dumps(want, 0), *g = json_dumps(got, 0);
    print_message("    want %s\n    got  %s\n", w, g);
    assert_int_equal(json_array_size(got), json_array_size(want));
    for (size_t k = 0; k < json_array_size(want); k++) {     /* replies' reals have 10 digits (reply.c) */
        json_t *a = json_array_get(got, k), *b = json_array_get(want, k);
        assert_string_equal(json_string_value(json_object_get(a, "language")),
                            json_string_value(json_object_get(b, "language")));
        assert_true(fabs(json_number_value(json_object_get(a, "confidence")) -
                         json_number_value(json_object_get(b, "confidence"))) < 1e-6);
        assert_int_equal(json_object_size(a), 2);
    }
    /* and the parts of it that do not depend on the detector: one entry per
     * language, fr's confidence the mean of its two texts', en counted with
     * the two texts without a letter at confidence 0 */
    json_t *fr1 = best_guess(FR1), *fr2 = best_guess(FR2), *en = best_guess(EN1);
    size_t i;
    json_t *e;
    int seen_fr = 0, seen_en = 0;
    json_array_foreach(got, i, e) {
        const char *code = json_string_value(json_object_get(e, "language"));
        double conf = json_number_value(json_object_get(e, "confidence"));
        if (strcmp(code, "fr") == 0) {
            seen_fr++;
            assert_true(fabs(conf - (json_number_value(json_object_get(fr1, "confidence")) +
                                     json_number_value(json_object_get(fr2, "confidence"))) / 2) < 1e-9);
        } else if (strcmp(code, "en") == 0) {
            seen_en++;
            assert_true(conf < json_number_value(json_object_get(en, "confidence")));
        }
    }
    assert_int_equal(seen_fr, 1);
    assert_int_equal(seen_en, 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "language")), "fr");
    json_decref(fr1);
    json_decref(fr2);
    json_decref(en);
    free(w);
    free(g);
    json_decref(want);
    json_decref(got);
}

/* ---- the query string ---------------------------------------------------------------------- */

/* A LibreTranslate client that sends everything in the query string:
 * deep-translator's LibreTranslator.translate() (deep_translator/libre.py):
 * `params = {"q": text, "source": ..., "target": ..., "format": "text"}`,
 * `params["api_key"] = self.api_key`, `requests.post(self._base_url +
 * "translate", params=params)`: a POST with no body.  app.py reads
 * `request.values.get("q")` (not JSON), its access_check `request.values.get(
 * "api_key")`.  request.values is werkzeug's CombinedMultiDict of args, then
 * form: a form's field gives way to the query's. */
static void test_query_string(void **state)
{
    (void)state;
    req_opts o = { .method = "POST" };
    reply r = http_req(&srv, "/translate?q=This+package+provides+the+documentation+of+the+library.&source=en"
                       "&target=fr&format=text&api_key=" KEY, &o);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    json_t *want = lt_ok("/translate", "{\"q\": \"" EN1 "\", \"source\": \"en\", \"target\": \"fr\", "
                         "\"api_key\": \"" KEY "\"}");
    assert_true(json_equal(j, want));
    json_decref(j);
    json_decref(want);
    /* its api_key is checked there too: a wrong one, 403 "Invalid API key" */
    r = http_req(&srv, "/translate?q=Hello.&source=en&target=fr&api_key=wrong", &o);
    expect_lt_error(&r, 403, "Invalid API key");
    /* /detect the same way */
    r = http_req(&srv, "/detect?q=Le+fichier+contient+une+liste+des+paquets+install%C3%A9s.&api_key=" KEY, &o);
    j = expect_json(&r, 200);
    reply_free(&r);
    json_t *g = best_guess(FR1);
    assert_true(json_equal(json_array_get(j, 0), g));
    json_decref(g);
    json_decref(j);
    /* a form and the query naming the same fields: the query's win */
    req_opts f = { .body = "q=" "Ce+paquet+contient+les+fichiers+de+d%C3%A9veloppement+de+la+biblioth%C3%A8que."
                           "&source=en&target=fr&api_key=" KEY, .content_type = FORM };
    r = http_req(&srv, "/translate?source=fr&target=en", &f);
    j = expect_json(&r, 200);
    reply_free(&r);
    want = lt_ok("/translate", "{\"q\": \"" FR2 "\", \"source\": \"fr\", \"target\": \"en\", \"api_key\": \"" KEY "\"}");
    assert_true(json_equal(j, want));
    assert_string_not_equal(json_string_value(json_object_get(j, "translatedText")), FR2);
    json_decref(j);
    json_decref(want);
}

/* ---- its 429 -------------------------------------------------------------------------------- */

/* app.py: `@bp.errorhandler(429) def slow_down_error(e): ... jsonify({"error":
 * _("Slowdown:") + " " + str(e.description)}), 429`, the description
 * flask-limiter's limit ("%s per minute" % req_limit: "1 per 1 minute"). */
static void test_slowdown(void **state)
{
    (void)state;
    server s;
    const char *const args[] = { "--model", "en-fr=models/en-fr", "--req-limit", "1", NULL };
    assert_int_equal(server_start(&s, args), 0);
    const char *body = "{\"q\": \"Hello.\", \"source\": \"en\", \"target\": \"fr\"}";
    reply r = lt_req(&s, "POST", "/translate", body);
    json_t *j = expect_json(&r, 200);
    json_decref(j);
    reply_free(&r);
    r = lt_req(&s, "POST", "/translate", body);
    char ra[16] = "";
    assert_true(header(&r, "Retry-After", ra, sizeof ra));
    j = expect_json(&r, 429);
    assert_string_equal(json_string_value(json_object_get(j, "error")), "Slowdown: 1 per 1 minute");
    json_decref(j);
    reply_free(&r);
    assert_int_equal(server_stop(&s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_not_found_not_allowed),
        cmocka_unit_test(test_auto_is_target),
        cmocka_unit_test(test_source_is_target),
        cmocka_unit_test(test_detect_list),
        cmocka_unit_test(test_query_string),
        cmocka_unit_test(test_slowdown),
    };
    return cmocka_run_group_tests_name("lt parity", tests, setup, teardown);
}
