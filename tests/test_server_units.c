/* test_server_units: the server's pure pieces, without HTTP: options (flags,
 * environment, precedence), body parsing (UTF-8, forms, typed fields), the
 * error table, metrics text, the worker pool's bounded queue, and the
 * language and script names (languages.tsv, scripts.tsv). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <unistd.h>

#include "util/check.h"
#include "util/utf8.h"
#include "http/body.h"
#include "translate/word_align.h"
#include "http/errors.h"
#include "common/metrics.h"
#include "common/options.h"
#include "translate/sessions.h"
#include "common/workers.h"
#include "api/routes.h"
#include "api/openai_req.h"
#include "service/languages.h"

/* ---- options ------------------------------------------------------------------ */

static const char *const *fake_env;

static const char *env_lookup(const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; fake_env && fake_env[i]; i++)
        if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
            return fake_env[i] + n + 1;
    return NULL;
}

static int parse(srv_options *o, const char *const *env, const char *const *args)
{
    char *argv[32] = { "serve" };
    int argc = 1;
    for (int i = 0; args && args[i]; i++)
        argv[argc++] = (char *)args[i];
    char err[256];
    fake_env = env;
    int rc = srv_options_parse(o, argc, argv, env_lookup, err, sizeof err);
    if (rc < 0)
        print_message("    (%s)\n", err);
    return rc;
}

static void test_options_defaults(void **state)
{
    (void)state;
    srv_options o;
    assert_int_equal(parse(&o, NULL, NULL), 0);
    assert_int_equal(o.n_models, 1);
    assert_string_equal(o.models[0].id, "en-fr");
    assert_string_equal(o.models[0].dir, "models/en-fr");
    assert_string_equal(o.host, "127.0.0.1");
    assert_int_equal(o.port, 8080);
    assert_string_equal(o.cors_origins, "*");
    assert_int_equal(o.access_log, 1);
    assert_int_equal(o.api_key[0], 0);
    assert_int_equal(o.kv_f16, 0);
    assert_int_equal(o.cache_mb, 64);
    assert_int_equal(o.n_glossaries, 0);
    assert_int_equal(o.max_glossary_entries, 1000);
    assert_int_equal(o.max_term_bytes, 256);
}

static void test_options_glossaries(void **state)
{
    (void)state;
    srv_options o;
    const char *env[] = { "MTSERVE_GLOSSARY=en-fr=a.tsv, fr-en=b.tsv", "MTSERVE_CACHE_MB=0", NULL };
    assert_int_equal(parse(&o, env, NULL), 0);
    assert_int_equal(o.cache_mb, 0);
    assert_int_equal(o.n_glossaries, 2);
    assert_string_equal(o.glossaries[0].source, "en");
    assert_string_equal(o.glossaries[0].target, "fr");
    assert_string_equal(o.glossaries[0].path, "a.tsv");
    assert_string_equal(o.glossaries[1].source, "fr");
    assert_string_equal(o.glossaries[1].path, "b.tsv");
    const char *args[] = { "--glossary", "fra-eng=dir/terms=x.tsv", "--max-term-bytes", "12", NULL };
    assert_int_equal(parse(&o, env, args), 0);          /* flags replace the environment's list */
    assert_int_equal(o.n_glossaries, 1);
    assert_string_equal(o.glossaries[0].source, "fra");
    assert_string_equal(o.glossaries[0].target, "eng");
    assert_string_equal(o.glossaries[0].path, "dir/terms=x.tsv");
    assert_int_equal(o.max_term_bytes, 12);
    const char *bad[][3] = { { "--glossary", "enfr=x.tsv", NULL }, { "--glossary", "en-fr", NULL },
                             { "--glossary", "-fr=x", NULL }, { "--glossary", "en-=x", NULL },
                             { "--glossary", "en-fr=", NULL }, { "--cache-mb", "-1", NULL },
                             { "--max-glossary-entries", "0", NULL } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(parse(&o, NULL, bad[i]), -1);
}

static void test_options_env_and_flags(void **state)
{
    (void)state;
    srv_options o;
    const char *env[] = { "MTSERVE_MODEL=a=models/x, models/y/", "MTSERVE_PORT=9000", "MTSERVE_HOST=::1",
                          "MTSERVE_API_KEY=k", "MTSERVE_MAX_BODY=2M", "MTSERVE_ACCESS_LOG=0",
                          "MTSERVE_THREADS=3", "MTSERVE_KV_CACHE=f16", NULL };
    assert_int_equal(parse(&o, env, NULL), 0);
    assert_int_equal(o.kv_f16, 1);
    assert_int_equal(o.n_models, 2);
    assert_string_equal(o.models[0].id, "a");
    assert_string_equal(o.models[0].dir, "models/x");
    assert_string_equal(o.models[1].id, "y");
    assert_string_equal(o.models[1].dir, "models/y");
    assert_int_equal(o.port, 9000);
    assert_string_equal(o.host, "::1");
    assert_string_equal(o.api_key, "k");
    assert_int_equal(o.max_body, 2 << 20);
    assert_int_equal(o.access_log, 0);
    /* flags win; --model flags replace the environment's list */
    const char *args[] = { "--port", "9001", "--model", "models/tiny", "--model=t2=models/tiny",
                           "--threads=1", "--no-access-log", "--kv-cache", "f32", NULL };
    assert_int_equal(parse(&o, env, args), 0);
    assert_int_equal(o.kv_f16, 0);
    assert_int_equal(o.port, 9001);
    assert_int_equal(o.threads, 1);
    assert_int_equal(o.n_models, 2);
    assert_string_equal(o.models[0].id, "tiny");
    assert_string_equal(o.models[1].id, "t2");
    assert_string_equal(o.api_key, "k");
    /* a Hugging Face name: the id is its name, without the revision (server/hub resolves it) */
    const char *hub_args[] = { "--model", "Helsinki-NLP/opus-mt-en-de@v1.0", "--model", "fr=org/opus-mt-en-fr", NULL };
    assert_int_equal(parse(&o, env, hub_args), 0);
    assert_int_equal(o.n_models, 2);
    assert_string_equal(o.models[0].id, "opus-mt-en-de");
    assert_string_equal(o.models[0].dir, "Helsinki-NLP/opus-mt-en-de@v1.0");
    assert_string_equal(o.models[1].id, "fr");
    assert_string_equal(o.models[1].dir, "org/opus-mt-en-fr");
}

static void test_options_errors(void **state)
{
    (void)state;
    srv_options o;
    const char *bad[][4] = {
        { "--port", "70000", NULL }, { "--port", "x", NULL }, { "--threads", NULL },
        { "--frobnicate", NULL }, { "--model", "a=m/x", "--model", "a=m/y" }, { "--model", "bad id=m" },
        { "--max-body", "10G", NULL }, { "--no-access-log=1", NULL }, { "positional", NULL },
        { "--kv-cache", "f8", NULL }, { "--kv-cache", "F16", NULL },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(parse(&o, NULL, bad[i]), -1);
    const char *env[] = { "MTSERVE_PORT=-1", NULL };
    assert_int_equal(parse(&o, env, NULL), -1);
    const char *help[] = { "--help", NULL };
    assert_int_equal(parse(&o, NULL, help), 1);
}

/* ---- body ----------------------------------------------------------------------- */

static void test_utf8(void **state)
{
    (void)state;
    static const char ok[] = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
    assert_true(mt_utf8_valid(ok, sizeof ok - 1));
    assert_false(mt_utf8_valid("\xc3", 1));                 /* truncated */
    assert_false(mt_utf8_valid("\xc0\xaf", 2));             /* overlong */
    assert_false(mt_utf8_valid("\xed\xa0\x80", 3));         /* surrogate */
    assert_false(mt_utf8_valid("\xf4\x90\x80\x80", 4));     /* > U+10FFFF */
    assert_false(mt_utf8_valid("\xff", 1));
    assert_int_equal(mt_utf8_valid_prefix("ab\xff", 3), 2);
    assert_true(srv_is_blank(" \t\n\xc2\xa0\xe3\x80\x80", 8));
    assert_false(srv_is_blank(" x ", 3));
    assert_true(srv_is_blank("", 0));

    /* Scrubbing: invalid bytes become '?', valid characters stay. */
    char bad[] = "a\xc3\xa9\xff b\xe2\x82";
    assert_int_equal(mt_utf8_scrub(bad), 3);
    assert_string_equal(bad, "a\xc3\xa9? b??");

    /* A message whose quote is cut mid-character (by a caller's snprintf, or
     * by the message's own size) is still valid UTF-8 after mt_err_set. */
    static const char cut[] = "\"\xc3\xa9\xc3\xa9\xc3"; /* "éé cut at 7 bytes */
    mt_err err = { 0 };
    assert_int_equal(mt_err_set(&err, MT_ERR_FORMAT, "key %s: bad", cut), MT_ERR_FORMAT);
    assert_true(mt_utf8_valid(err.msg, strlen(err.msg)));
    assert_string_equal(err.msg, "key \"\xc3\xa9\xc3\xa9?: bad");
    char longq[sizeof err.msg + 8];
    memset(longq, 'x', sizeof longq);
    memcpy(longq + sizeof err.msg - 6, "\xe2\x82\xac\xe2\x82\xac", 6);
    longq[sizeof longq - 1] = 0;
    mt_err_set(&err, MT_ERR_INPUT, "%s", longq);
    assert_int_equal(strlen(err.msg), sizeof err.msg - 1);
    assert_true(mt_utf8_valid(err.msg, strlen(err.msg)));
}

static void test_form(void **state)
{
    (void)state;
    char err[128];
    const char *body = "q=Hello+world%21&source=en&target=fr&empty=&flag&q2=%E2%82%AC";
    json_t *j = srv_form_parse(body, strlen(body), 0, err, sizeof err);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "q")), "Hello world!");
    assert_string_equal(json_string_value(json_object_get(j, "source")), "en");
    assert_string_equal(json_string_value(json_object_get(j, "empty")), "");
    assert_string_equal(json_string_value(json_object_get(j, "flag")), "");
    assert_string_equal(json_string_value(json_object_get(j, "q2")), "\xe2\x82\xac");
    json_decref(j);
    assert_null(srv_form_parse("q=%zz", 5, 0, err, sizeof err));
    assert_null(srv_form_parse("q=%4", 4, 0, err, sizeof err));
    assert_null(srv_form_parse("q=%ff", 5, 0, err, sizeof err));    /* not UTF-8 once decoded */
    assert_null(srv_form_parse("q=%00", 5, 0, err, sizeof err));    /* NUL */
    /* repeated names: the last one, or every one in order (DeepL's text=...&text=...) */
    const char *rep = "text=a&target_lang=DE&text=b+c&text=&x=1&x=2";
    j = srv_form_parse(rep, strlen(rep), 0, err, sizeof err);
    assert_string_equal(json_string_value(json_object_get(j, "text")), "");
    assert_string_equal(json_string_value(json_object_get(j, "x")), "2");
    json_decref(j);
    j = srv_form_parse(rep, strlen(rep), 1, err, sizeof err);
    json_t *texts = json_object_get(j, "text");
    assert_int_equal(json_array_size(texts), 3);
    assert_string_equal(json_string_value(json_array_get(texts, 1)), "b c");
    assert_string_equal(json_string_value(json_array_get(texts, 2)), "");
    assert_string_equal(json_string_value(json_object_get(j, "target_lang")), "DE");
    assert_int_equal(json_array_size(json_object_get(j, "x")), 2);
    json_decref(j);
}

static void test_fields(void **state)
{
    (void)state;
    srv_request req = { 0 };
    srv_response resp = { 0 };
    const char *body = "{\"s\": \"x\", \"i\": 3, \"b\": true, \"n\": null, \"l\": [1, 2], \"t\": [\"a\", \"  \"]}";
    req.body = body;
    req.body_len = strlen(body);
    req.content_type = "application/json; charset=utf-8";
    assert_int_equal(srv_body_parse(&req, &resp), 0);
    const char *s = NULL;
    int i = 0, b = 0, *l = NULL, n = 0;
    assert_int_equal(srv_field_string(&req, &resp, "s", &s), 1);
    assert_string_equal(s, "x");
    assert_int_equal(srv_field_string(&req, &resp, "n", &s), 0);   /* null = absent */
    assert_int_equal(srv_field_string(&req, &resp, "missing", &s), 0);
    assert_int_equal(srv_field_int(&req, &resp, "i", 1, 5, &i), 1);
    assert_int_equal(i, 3);
    assert_int_equal(srv_field_bool(&req, &resp, "b", &b), 1);
    assert_int_equal(srv_field_int_list(&req, &resp, "l", 0, 2, &l, &n), 1);
    assert_int_equal(n, 2);
    free(l);
    assert_int_equal(resp.error, SRV_OK);
    assert_int_equal(srv_field_int(&req, &resp, "i", 4, 5, &i), -1);
    assert_int_equal(resp.error, SRV_E_INVALID_FIELD);
    assert_non_null(strstr(resp.message, "'i'"));
    srv_response r2 = { 0 };
    const char **texts;
    int is_list;
    assert_int_equal(srv_field_texts(&req, &r2, "t", &texts, &n, &is_list), -1);
    assert_int_equal(r2.error, SRV_E_EMPTY_TEXT);
    assert_non_null(strstr(r2.message, "t[1]"));
    json_decref(req.json);

    /* form values are strings; numbers and booleans are read from them */
    srv_request f = { .body = "i=4&b=false&s=x", .body_len = 15,
                      .content_type = "application/x-www-form-urlencoded" };
    srv_response r3 = { 0 };
    assert_int_equal(srv_body_parse(&f, &r3), 0);
    assert_true(f.form);
    assert_int_equal(srv_field_int(&f, &r3, "i", 0, 9, &i), 1);
    assert_int_equal(i, 4);
    assert_int_equal(srv_field_bool(&f, &r3, "b", &b), 1);
    assert_int_equal(b, 0);
    json_decref(f.json);

    /* curl -d '{...}' sends JSON labelled as a form */
    srv_request c = { .body = " {\"text\": \"x\"}", .body_len = 14,
                      .content_type = "application/x-www-form-urlencoded" };
    srv_response r4 = { 0 };
    assert_int_equal(srv_body_parse(&c, &r4), 0);
    assert_false(c.form);
    json_decref(c.json);

    srv_request bad = { .body = "{\"a\": 1, \"a\": 2}", .body_len = 16 };
    srv_response r5 = { 0 };
    assert_int_equal(srv_body_parse(&bad, &r5), -1);     /* duplicate keys */
    assert_int_equal(r5.error, SRV_E_INVALID_JSON);
}

static void test_multipart(void **state)
{
    (void)state;
    char err[128];
    const char body[] = "preamble\r\n--b\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\nline 1\r\nline 2\r\n"
                        "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.txt\"\r\n"
                        "Content-Type: text/plain\r\n\r\nfile body\r\n"
                        "--b\r\ncontent-disposition: form-data; name=\"target\"\r\n\r\nfr\r\n--b--\r\n";
    json_t *j = srv_multipart_parse(body, sizeof body - 1, "multipart/form-data; boundary=\"b\"", err, sizeof err);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "q")), "line 1\r\nline 2");
    assert_string_equal(json_string_value(json_object_get(j, "target")), "fr");
    assert_null(json_object_get(j, "f"));
    json_decref(j);
    assert_null(srv_multipart_parse(body, sizeof body - 1, "multipart/form-data", err, sizeof err));
    assert_null(srv_multipart_parse(body, 40, "multipart/form-data; boundary=b", err, sizeof err));
}

/* ---- the OpenAPI document ------------------------------------------------------------ */

/* server/api/openapi.json, as embedded: it parses, names every route of the
 * routing table and every error code of the error table, and gives every
 * operation the statuses any request can get (400 for bad framing, 405,
 * 408, 500) and, for POST, 413. */
static void test_openapi_document(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *doc = json_loads(srv_openapi_json, 0, &jerr);
    if (!doc)
        print_error("openapi.json: line %d: %s\n", jerr.line, jerr.text);
    assert_non_null(doc);
    json_t *paths = json_object_get(doc, "paths");
    assert_non_null(paths);
    const char *routes[64];
    int n = srv_route_paths(routes, 64);
    assert_true(n < 64);                /* all of them */
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) {
        /* a prefix route is its templated path */
        const char *p = strcmp(routes[i], "/web/") == 0              ? "/web/{file}"
                        : strcmp(routes[i], "/translate_file/") == 0 ? "/translate_file/{id}"
                        : strcmp(routes[i], "/download_file/") == 0  ? "/download_file/{id}/{name}"
                        : strcmp(routes[i], "/v2/glossaries/") == 0  ? "/v2/glossaries/{id}"
                        : strcmp(routes[i], "/v3/glossaries/") == 0  ? "/v3/glossaries/{id}"
                        : strcmp(routes[i], "/v2/document/") == 0    ? "/v2/document/{id}"
                        : strcmp(routes[i], "/admin/models/") == 0   ? "/admin/models/{id}"
                        : strcmp(routes[i], "/v1/models/") == 0      ? "/v1/models/{id}"
                                                                     : routes[i];
        if (!json_object_get(paths, p))
            print_error("route %s is not in openapi.json\n", routes[i]);
        assert_non_null(json_object_get(paths, p));
    }
    json_t *codes = json_object_get(json_object_get(json_object_get(json_object_get(json_object_get(
        json_object_get(json_object_get(doc, "components"), "schemas"), "Error"), "properties"), "error"),
        "properties"), "code");
    json_t *en = json_object_get(codes, "enum");
    assert_true(json_is_array(en));
    for (int c = 1; c < SRV_E_COUNT; c++) {
        int found = 0;
        for (size_t k = 0; k < json_array_size(en); k++)
            found |= strcmp(json_string_value(json_array_get(en, k)), srv_code_name((srv_code)c)) == 0;
        if (!found)
            print_error("error code %s is not in openapi.json\n", srv_code_name((srv_code)c));
        assert_true(found);
    }
    const char *path;
    json_t *item;
    json_object_foreach(paths, path, item) {
        const char *method;
        json_t *op;
        json_object_foreach(item, method, op) {
            json_t *r = json_object_get(op, "responses");
            const char *always[] = { "400", "405", "408", "500" };
            for (size_t k = 0; k < sizeof always / sizeof *always; k++) {
                if (!json_object_get(r, always[k]))
                    print_error("%s %s: no %s response\n", method, path, always[k]);
                assert_non_null(json_object_get(r, always[k]));
            }
            /* its success: 200, or 201 (made) / 202 (accepted: the admin API) / 204 (deleted) */
            assert_true(json_object_get(r, "200") || json_object_get(r, "201") || json_object_get(r, "202") ||
                        json_object_get(r, "204"));
            if (strcmp(method, "post") == 0)
                assert_non_null(json_object_get(r, "413"));
            /* security [] marks a public route; every other one can answer 401 (DeepL's: 403) */
            json_t *sec = json_object_get(op, "security");
            int deepl = json_object_get(json_array_get(sec, 0), "deepl") != NULL;
            if (!(json_is_array(sec) && json_array_size(sec) == 0))
                assert_non_null(json_object_get(r, deepl ? "403" : "401"));
        }
    }
    /* the beam limit is the engine's one constant */
    json_t *beam = json_object_get(json_object_get(json_object_get(json_object_get(json_object_get(
        json_object_get(doc, "components"), "schemas"), "TranslateRequest"), "properties"), "beam_size"), "maximum");
    assert_int_equal(json_integer_value(beam), MT_MAX_BEAM);
    /* OpenAI's fields: the parser's constants and the engine's table (server/api/openai_req.h) */
    json_t *oai = json_object_get(json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
                                                  "OpenAIChatRequest"), "properties");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(oai, "n"), "maximum")), OAI_MAX_N);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(oai, "messages"), "maxItems")),
                     OAI_MAX_MESSAGES);
    json_t *stop_list = json_array_get(json_object_get(json_object_get(oai, "stop"), "oneOf"), 1);
    assert_int_equal(json_integer_value(json_object_get(stop_list, "maxItems")), OAI_MAX_STOP);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(stop_list, "items"), "maxLength")),
                     OAI_MAX_STOP_LEN);
    static const char *const oai_rows[][2] = { { "temperature", "sampling.temperature" }, { "top_p", "sampling.top_p" },
                                               { "seed", "sampling.seed" } };
    for (int i = 0; i < 3; i++) {
        const mt_decode_limit *l = mt_decode_limit_find(oai_rows[i][1]);
        assert_non_null(l);
        assert_true(json_number_value(json_object_get(json_object_get(oai, oai_rows[i][0]), "maximum")) == l->max);
    }
    /* as served, the decoding fields' minimum, maximum and default are the
     * engine's table's; those that depend on the model are not stated */
    srv_request sreq = { 0 };
    srv_response sresp = { 0 };
    srv_handle_openapi(&sreq, &sresp);
    assert_int_equal(sresp.status, 200);
    json_t *served = json_loads(sresp.text, 0, &jerr);
    assert_non_null(served);
    json_t *props = json_object_get(json_object_get(json_object_get(json_object_get(
        served, "components"), "schemas"), "TranslateRequest"), "properties");
    int n_limits = 0;
    for (const mt_decode_limit *l = mt_decode_limits; l->name; l++, n_limits++) {
        const char *dot = strchr(l->name, '.');
        char outer[64];
        snprintf(outer, sizeof outer, "%.*s", dot ? (int)(dot - l->name) : 0, l->name);
        json_t *f = dot ? json_object_get(json_object_get(json_object_get(props, outer), "properties"), dot + 1)
                        : json_object_get(props, l->name);
        if (!f)
            print_error("%s is not in TranslateRequest\n", l->name);
        assert_non_null(f);
        if (l->type == MT_LIMIT_BOOL) {         /* a boolean: served as one, no bounds */
            assert_string_equal(json_string_value(json_object_get(f, "type")), "boolean");
            assert_null(json_object_get(f, "minimum"));
            continue;
        }
        double want[3];
        const char *key[3] = { "minimum", "maximum", "default" };
        mt_decode_limit_bounds(l, NULL, NULL, NULL, &want[0], &want[1]);
        want[2] = l->dflt_of == MT_BOUND_CONST ? l->dflt : HUGE_VAL;
        for (int k = 0; k < 3; k++) {
            json_t *v = json_object_get(f, key[k]);
            if (!isfinite(want[k])) {
                assert_null(v);
                continue;
            }
            if (!json_is_number(v) || json_number_value(v) != want[k])
                print_error("%s: served %s %g, the table's %g\n", l->name, key[k], json_number_value(v), want[k]);
            assert_true(json_is_number(v) && json_number_value(v) == want[k]);
        }
        assert_int_equal(json_is_true(json_object_get(f, "exclusiveMinimum")), l->min_open);
    }
    assert_true(n_limits >= 12);
    json_t *served_beam = json_object_get(json_object_get(props, "beam_size"), "maximum");
    assert_int_equal(json_integer_value(served_beam), MT_MAX_BEAM);
    json_decref(served);
    free(sresp.text);
    /* /languages is public, as LibreTranslate's */
    json_t *lang = json_object_get(json_object_get(paths, "/languages"), "get");
    assert_int_equal(json_array_size(json_object_get(lang, "security")), 0);
    json_decref(doc);
}

/* server/api/libretranslate_spec.json, as embedded (GET /spec): Swagger 2.0
 * whose info is LibreTranslate v1.9.6's (its app.py: swag["info"]["title"] =
 * "LibreTranslate", ["description"] = "Free and Open Source Machine
 * Translation API.", ["license"] = {"name": "AGPL-3.0"}, ["version"] =
 * get_version(), its VERSION file "1.9.6"; swag["basePath"] "/"), whose
 * paths are exactly the LibreTranslate routes served (each one of the routing
 * table's), each operation answering 200 with a schema or a $ref that resolves. */
static void test_lt_spec_document(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *doc = json_loads(srv_lt_spec_json, 0, &jerr);
    if (!doc)
        print_error("libretranslate_spec.json: line %d: %s\n", jerr.line, jerr.text);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "swagger")), "2.0");
    assert_string_equal(json_string_value(json_object_get(doc, "basePath")), "/");
    json_t *info = json_object_get(doc, "info");
    assert_string_equal(json_string_value(json_object_get(info, "title")), "LibreTranslate");
    assert_string_equal(json_string_value(json_object_get(info, "version")), "1.9.6");
    assert_string_equal(json_string_value(json_object_get(info, "description")),
                        "Free and Open Source Machine Translation API.");
    assert_string_equal(json_string_value(json_object_get(json_object_get(info, "license"), "name")), "AGPL-3.0");
    /* LibreTranslate's routes with a Swagger docstring (app.py), and its /download_file */
    static const char *const want[][3] = {
        { "/translate", "post", "/translate" },          { "/translate_file", "post", "/translate_file" },
        { "/detect", "post", "/detect" },                { "/languages", "get", "/languages" },
        { "/frontend/settings", "get", "/frontend/settings" }, { "/suggest", "post", "/suggest" },
        { "/health", "get", "/health" },                 { "/download_file/{id}/{name}", "get", "/download_file/" },
    };
    size_t n_want = sizeof want / sizeof *want;
    json_t *paths = json_object_get(doc, "paths"), *defs = json_object_get(doc, "definitions");
    assert_int_equal(json_object_size(paths), n_want);
    const char *routes[32];
    int n_routes = srv_route_paths(routes, 32);
    for (size_t i = 0; i < n_want; i++) {
        json_t *op = json_object_get(json_object_get(paths, want[i][0]), want[i][1]);
        if (!op)
            print_error("%s %s is not in libretranslate_spec.json\n", want[i][1], want[i][0]);
        assert_non_null(op);
        int served = 0;
        for (int r = 0; r < n_routes; r++)
            served |= strcmp(routes[r], want[i][2]) == 0;
        assert_true(served);
        json_t *schema = json_object_get(json_object_get(json_object_get(op, "responses"), "200"), "schema");
        assert_non_null(schema);
        const char *ref = json_string_value(json_object_get(schema, "$ref"));
        if (ref) {
            assert_true(strncmp(ref, "#/definitions/", 14) == 0);
            assert_non_null(json_object_get(defs, ref + 14));
        }
    }
    json_decref(doc);
}

/* ---- errors ---------------------------------------------------------------------- */

static void test_errors(void **state)
{
    (void)state;
    assert_int_equal(srv_code_http(SRV_E_INVALID_JSON, 0), 400);
    assert_int_equal(srv_code_http(SRV_E_UNKNOWN_MODEL, 0), 404);
    assert_int_equal(srv_code_http(SRV_E_BODY_TOO_LARGE, 0), 413);
    assert_int_equal(srv_code_http(SRV_E_QUEUE_FULL, 0), 503);
    assert_int_equal(srv_code_http(SRV_E_UNAUTHORIZED, 0), 401);
    assert_int_equal(srv_code_http(SRV_E_INPUT_TOO_LONG, 0), 413);
    assert_int_equal(srv_code_http(SRV_E_COUNT, 0), 500);
    /* LibreTranslate's statuses for the same failures (its app.py): a wrong key
     * 403, a text over its limit and an unknown language 400; the rest as ours */
    assert_int_equal(srv_code_http(SRV_E_UNAUTHORIZED, 1), 403);
    assert_int_equal(srv_code_http(SRV_E_INPUT_TOO_LONG, 1), 400);
    assert_int_equal(srv_code_http(SRV_E_UNKNOWN_MODEL, 1), 400);
    assert_int_equal(srv_code_http(SRV_E_BODY_TOO_LARGE, 1), 413);
    assert_int_equal(srv_code_http(SRV_E_METHOD_NOT_ALLOWED, 1), 405);
    assert_int_equal(srv_code_http(SRV_E_NOT_FOUND, 1), 404);
    assert_int_equal(srv_code_http(SRV_E_LOADING, 1), 503);
    /* its suggest() with suggestions off: abort(403, ...) */
    assert_int_equal(srv_code_http(SRV_E_FORBIDDEN, 1), 403);
    for (int c = 1; c < SRV_E_COUNT; c++) {
        int ours = srv_code_http((srv_code)c, 0), lt = srv_code_http((srv_code)c, 1);
        assert_true(ours >= 400 && ours <= 599 && lt >= 400 && lt <= 599);
    }
    assert_int_equal(srv_code_from_mt(MT_ERR_TOO_LONG), SRV_E_INPUT_TOO_LONG);
    assert_int_equal(srv_code_from_mt(MT_ERR_INPUT), SRV_E_BAD_REQUEST);
    assert_int_equal(srv_code_from_mt(MT_ERR_IO), SRV_E_INTERNAL);
    assert_int_equal(srv_code_from_mt(MT_ERR_NOMEM), SRV_E_INTERNAL);
    for (int c = 1; c < SRV_E_COUNT; c++)
        assert_true(strlen(srv_code_name((srv_code)c)) > 2);

    srv_response r = { 0 };
    srv_fail(&r, SRV_E_QUEUE_FULL, "busy %d", 1);
    srv_fail(&r, SRV_E_INTERNAL, "ignored: the first failure wins");
    srv_error_render(&r, 0);
    assert_int_equal(r.status, 503);
    assert_int_equal(r.retry_after, 1);
    json_t *e = json_object_get(r.json, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "queue_full");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "busy 1");
    json_decref(r.json);

    srv_response lt = { 0 };
    srv_fail(&lt, SRV_E_UNSUPPORTED_LANGUAGE, "de is not supported");
    srv_error_render(&lt, 1);
    assert_int_equal(lt.status, 400);
    assert_string_equal(json_string_value(json_object_get(lt.json, "error")), "de is not supported");
    json_decref(lt.json);
    srv_response key = { 0 };
    srv_fail(&key, SRV_E_UNAUTHORIZED, "Invalid API key");
    srv_error_render(&key, 1);
    assert_int_equal(key.status, 403);
    assert_string_equal(json_string_value(json_object_get(key.json, "error")), "Invalid API key");
    json_decref(key.json);
    srv_response busy = { 0 };
    srv_fail(&busy, SRV_E_QUEUE_FULL, "busy");
    srv_error_render(&busy, 1);
    assert_int_equal(busy.status, 503);
    assert_int_equal(busy.retry_after, 1);
    assert_true(json_is_string(json_object_get(busy.json, "error")));
    json_decref(busy.json);

    /* a message cut inside a UTF-8 character is still valid JSON */
    char longmsg[1000];
    memset(longmsg, 'a', sizeof longmsg);
    for (size_t k = 1; k + 1 < sizeof longmsg; k += 2)
        longmsg[k - 1] = '\xc3', longmsg[k] = '\xa9';
    longmsg[sizeof longmsg - 1] = 0;
    srv_response u = { 0 };
    srv_fail(&u, SRV_E_BAD_REQUEST, "x%s", longmsg);
    srv_error_render(&u, 0);
    assert_non_null(u.json);
    json_decref(u.json);
}

/* ---- the error shape: LibreTranslate's, DeepL's or ours ------------------------------------ */

/* srv_route_error_shape on a request of method, path, Content-Type and body,
 * parsed first as the router does (parse: 1) or not (what http.c has of it). */
static int error_shape(const char *method, const char *path, const char *content_type, const char *body, int parse)
{
    srv_request req = { .method = method, .path = path, .content_type = content_type,
                        .body = body, .body_len = strlen(body) };
    srv_response resp = { 0 };
    if (parse)
        srv_body_parse(&req, &resp);
    int shape = srv_route_error_shape(NULL, &req);
    json_decref(req.json);
    return shape;
}

/* 1 when LibreTranslate's */
static int lt_errors(const char *method, const char *path, const char *content_type, const char *body, int parse)
{
    int shape = error_shape(method, path, content_type, body, parse);
    assert_true(shape == SRV_SHAPE_LT || shape == SRV_SHAPE_OURS);
    return shape == SRV_SHAPE_LT;
}

static void test_error_shape(void **state)
{
    (void)state;
    const char *json = "application/json", *form = "application/x-www-form-urlencoded";
    for (int parse = 0; parse < 2; parse++) {
        /* LibreTranslate's own paths, whatever the request */
        assert_true(lt_errors("GET", "/languages", NULL, "", parse));
        assert_true(lt_errors("POST", "/languages", json, "{\"text\": \"x\"}", parse));
        assert_true(lt_errors("GET", "/frontend/settings", NULL, "", parse));
        /* ours, and unknown paths */
        assert_false(lt_errors("GET", "/models", NULL, "", parse));
        assert_false(lt_errors("POST", "/attention", json, "{\"q\": \"x\"}", parse));
        assert_false(lt_errors("GET", "/nowhere", NULL, "", parse));
        /* /detect: LibreTranslate's unless the body is ours */
        assert_true(lt_errors("POST", "/detect", NULL, "", parse));
        assert_true(lt_errors("GET", "/detect", NULL, "", parse));
        assert_true(lt_errors("POST", "/detect", json, "{\"q\": \"x\"}", parse));
        assert_true(lt_errors("POST", "/detect", json, "{bad", parse));
        assert_false(lt_errors("POST", "/detect", json, "{\"text\": \"x\"}", parse));
        assert_false(lt_errors("POST", "/detect", json, "{\"text\" : bad", parse));
        /* /translate: ours unless the body is LibreTranslate's */
        assert_false(lt_errors("POST", "/translate", json, "", parse));
        assert_false(lt_errors("GET", "/translate", NULL, "", parse));
        assert_false(lt_errors("POST", "/translate", json, "{\"text\": \"x\"}", parse));
        assert_false(lt_errors("POST", "/translate", json, "{bad", parse));
        assert_false(lt_errors("POST", "/translate", json, "{\"q\": \"x\", \"text\": \"y\"}", parse));
        assert_false(lt_errors("POST", "/translate", form, "{\"text\": \"x\"}", parse));   /* curl -d '{...}' */
        assert_false(lt_errors("POST", "/translate", json, "{\"qq\": 1, \"a\": \"q\"}", parse));
        assert_true(lt_errors("POST", "/translate", json, "{\"q\": \"x\", \"source\": \"en\"}", parse));
        assert_true(lt_errors("POST", "/translate", json, "{\"q\"\n : [\"x\", bad", parse));
        assert_true(lt_errors("POST", "/translate", form, "", parse));
        assert_true(lt_errors("POST", "/translate", form, "q=x&source=en", parse));
        assert_true(lt_errors("POST", "/translate", form, "q=%zz", parse));
        assert_true(lt_errors("POST", "/translate", "multipart/form-data; boundary=b", "--b\r\n", parse));
        /* DeepL's paths are DeepL's, whatever the body says */
        assert_int_equal(error_shape("POST", "/v2/translate", form, "text=x&target_lang=DE", parse), SRV_SHAPE_DEEPL);
        assert_int_equal(error_shape("POST", "/v2/translate", json, "{\"q\": \"x\"}", parse), SRV_SHAPE_DEEPL);
        assert_int_equal(error_shape("GET", "/v2/usage", NULL, "", parse), SRV_SHAPE_DEEPL);
        assert_int_equal(error_shape("GET", "/v2/languages", NULL, "", parse), SRV_SHAPE_DEEPL);
    }
    srv_request req = { .body = "q=1", .body_len = 3, .content_type = "Multipart/Form-Data; boundary=x" };
    assert_true(srv_body_is_form(&req));
    req.content_type = "application/json";
    assert_false(srv_body_is_form(&req));
    req.content_type = NULL;
    assert_false(srv_body_is_form(&req));
}

/* ---- metrics ----------------------------------------------------------------------- */

static void test_metrics_text(void **state)
{
    (void)state;
    const char *routes[] = { "/translate", "/health" };
    const char *models[] = { "m" };
    srv_metrics_set_routes(routes, 2);
    srv_metrics_set_models(models, 1);
    srv_metrics_request("/translate", 200, 0.003);
    srv_metrics_request("/translate", 200, 0.2);
    srv_metrics_request("/nope", 404, 0.001);
    srv_metrics_request("/health", 299, 0.001);
    srv_metrics_tokens(0, 10, 7);
    srv_metrics_tokens(5, 10, 7);       /* unknown model index: ignored */
    srv_metrics_gauges g = { .active_sessions = 1, .queue_depth = 2, .workers = 2, .in_flight = 3,
                             .models_loaded = 1, .uptime_s = 5 };
    size_t len;
    char *text = srv_metrics_render(&g, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    assert_non_null(strstr(text, "mtserve_requests_total{route=\"/translate\",status=\"200\"} 2\n"));
    assert_non_null(strstr(text, "mtserve_requests_total{route=\"other\",status=\"404\"} 1\n"));
    assert_non_null(strstr(text, "mtserve_requests_total{route=\"/health\",status=\"other\"} 1\n"));
    assert_non_null(strstr(text, "mtserve_request_duration_seconds_bucket{route=\"/translate\",le=\"0.005\"} 1\n"));
    assert_non_null(strstr(text, "mtserve_request_duration_seconds_bucket{route=\"/translate\",le=\"0.25\"} 2\n"));
    assert_non_null(strstr(text, "mtserve_request_duration_seconds_bucket{route=\"/translate\",le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(text, "mtserve_request_duration_seconds_count{route=\"/translate\"} 2\n"));
    assert_non_null(strstr(text, "mtserve_generated_tokens_total{model=\"m\"} 7\n"));
    assert_non_null(strstr(text, "mtserve_source_tokens_total{model=\"m\"} 10\n"));
    assert_non_null(strstr(text, "mtserve_queue_depth 2\n"));
    assert_non_null(strstr(text, "mtserve_active_sessions 1\n"));
    /* MT_ASSERT's count (none broken here), a counter like the others */
    assert_non_null(strstr(text, "# HELP mtserve_assertion_failures_total "));
    assert_non_null(strstr(text, "# TYPE mtserve_assertion_failures_total counter\n"));
    char line[96];
    snprintf(line, sizeof line, "\nmtserve_assertion_failures_total %lu\n", mt_assert_failures());
    assert_non_null(strstr(text, line));
    free(text);
}

/* ---- worker pool ------------------------------------------------------------------------ */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    int             release, started, finished, after;
} gate_job;

static void blocking_job(void *arg)
{
    gate_job *g = arg;
    pthread_mutex_lock(&g->mu);
    g->started++;
    pthread_cond_broadcast(&g->cv);
    while (!g->release)
        pthread_cond_wait(&g->cv, &g->mu);
    g->finished++;
    pthread_mutex_unlock(&g->mu);
}

static void after_job(void *arg)
{
    gate_job *g = arg;
    pthread_mutex_lock(&g->mu);
    g->after++;
    pthread_mutex_unlock(&g->mu);
}

static void test_workers_queue(void **state)
{
    (void)state;
    gate_job g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };
    srv_workers *w = srv_workers_new(2, 1, 0);        /* 2 running + 1 waiting */
    assert_non_null(w);
    for (int i = 0; i < 3; i++)
        assert_int_equal(srv_workers_submit(w, blocking_job, after_job, &g), 0);
    assert_int_equal(srv_workers_submit(w, blocking_job, after_job, &g), -1);   /* full */
    pthread_mutex_lock(&g.mu);
    for (int i = 0; i < 1000 && g.started < 2; i++) {       /* bounded wait */
        pthread_mutex_unlock(&g.mu);
        usleep(1000);
        pthread_mutex_lock(&g.mu);
    }
    pthread_mutex_unlock(&g.mu);
    int busy, queued, threads;
    srv_workers_stats(w, &busy, &queued, &threads);
    assert_int_equal(busy, 2);
    assert_int_equal(queued, 1);
    assert_int_equal(threads, 2);
    pthread_mutex_lock(&g.mu);
    g.release = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    srv_workers_free(w);                            /* runs what is queued, joins */
    assert_int_equal(g.finished, 3);
    assert_int_equal(g.after, 3);
}

/* srv_align_points: a source point between words lands on the first target
 * space after the target words linked to the source word before it. */
static void test_align_points(void **state)
{
    (void)state;
    /* source "aa bb cc dd" (words at 0-2, 3-5, 6-8, 9-11), target "AA CC BB DD":
     * aa-AA, bb-BB, cc-CC, dd-DD (bb and cc swapped) */
    const long words[] = { 0, 2, 0, 2, 3, 5, 6, 8, 6, 8, 3, 5, 9, 11, 9, 11 };
    const char *tgt = "AA CC BB DD";
    long out[3];
    long pos[] = { 2, 5, 8 };        /* after aa, after bb, after cc */
    srv_align_points(words, 4, tgt, strlen(tgt), pos, 3, out);
    assert_int_equal(out[0], 2);     /* after AA */
    assert_int_equal(out[1], 8);     /* after BB (target 6-8) */
    assert_int_equal(out[2], -1);    /* after CC is before out[1]: no space left past it... */
    long one[] = { 8 };
    srv_align_points(words, 4, tgt, strlen(tgt), one, 1, out);
    assert_int_equal(out[0], 5);     /* ... alone, after CC */
    /* an unlinked word: the nearest linked one before it */
    const long some[] = { 0, 2, 0, 2 };
    srv_align_points(some, 1, tgt, strlen(tgt), pos, 1, out);
    assert_int_equal(out[0], 2);
    long far[] = { 11 };             /* after the last word: no space left */
    srv_align_points(words, 4, tgt, strlen(tgt), far, 1, out);
    assert_int_equal(out[0], -1);
    /* code points, not bytes */
    const char *u = "\xc3\xa9t\xc3\xa9 ici";   /* "été ici": the space is code point 3 */
    const long w2[] = { 0, 4, 0, 3, 5, 8, 4, 7 };
    long p2[] = { 4 };
    srv_align_points(w2, 2, u, strlen(u), p2, 1, out);
    assert_int_equal(out[0], 3);
}

/* ---- language and script names -------------------------------------------------- */

/* Names from languages.tsv and scripts.tsv: a code in a script named with
 * both; every language and script of NLLB-200's codes has a name. */
static void test_language_names(void **state)
{
    (void)state;
    char buf[80];
    assert_string_equal(srv_lang_name("fr"), "French");              /* the plain names, as before */
    assert_string_equal(srv_lang_name("fra"), "French");
    assert_string_equal(srv_lang_name("zh"), "Chinese");
    assert_string_equal(srv_lang_name("qqq"), "qqq");
    assert_string_equal(srv_script_name("Latn"), "Latin");
    assert_string_equal(srv_script_name("Deva"), "Devanagari");      /* iso-codes' "Devanagari (Nagari)" */
    assert_string_equal(srv_script_name("Hans"), "Simplified");      /* the generator's override of "Han (...)" */
    assert_string_equal(srv_script_name("Hant"), "Traditional");
    assert_null(srv_script_name("Qaaa"));
    assert_null(srv_script_name(""));
    assert_string_equal(srv_lang_script_name("zho_Hant", buf, sizeof buf), "Chinese (Traditional)");
    assert_string_equal(srv_lang_script_name("zho_Hans", buf, sizeof buf), "Chinese (Simplified)");
    assert_string_equal(srv_lang_script_name("ace_Arab", buf, sizeof buf), "Achinese (Arabic)");
    assert_string_equal(srv_lang_script_name("kas_Deva", buf, sizeof buf), "Kashmiri (Devanagari)");
    assert_string_equal(srv_lang_script_name("arb_Arab", buf, sizeof buf), "Arabic (Arabic)");   /* an alias */
    /* unknown language or script, no script, or too long: the code itself */
    assert_string_equal(srv_lang_script_name("qqq_Latn", buf, sizeof buf), "qqq_Latn");
    assert_string_equal(srv_lang_script_name("zho_Qaaa", buf, sizeof buf), "zho_Qaaa");
    assert_string_equal(srv_lang_script_name("zho_", buf, sizeof buf), "zho_");
    assert_string_equal(srv_lang_script_name("zh", buf, sizeof buf), "zh");
    assert_string_equal(srv_lang_script_name("zho_Hant", buf, 12), "zho_Hant");
    /* every code of NLLB-200 (the tokenizer's list): its language and script named */
    FILE *f = fopen("engine/tokenizer/nllb_langs.txt", "r");
    assert_non_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        const char *name = srv_lang_script_name(line, buf, sizeof buf);
        if (!strcmp(name, line) || !strchr(name, '('))
            fail_msg("NLLB's %s has no name with its script: %s", line, name);
        n++;
    }
    fclose(f);
    print_message("    %d NLLB-200 codes, each named with its language and script\n", n);
    assert_int_equal(n, 202);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_defaults),
        cmocka_unit_test(test_options_env_and_flags),
        cmocka_unit_test(test_options_errors),
        cmocka_unit_test(test_options_glossaries),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_form),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_multipart),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_error_shape),
        cmocka_unit_test(test_openapi_document),
        cmocka_unit_test(test_lt_spec_document),
        cmocka_unit_test(test_metrics_text),
        cmocka_unit_test(test_workers_queue),
        cmocka_unit_test(test_align_points),
        cmocka_unit_test(test_language_names),
    };
    return cmocka_run_group_tests_name("server units", tests, NULL, NULL);
}
