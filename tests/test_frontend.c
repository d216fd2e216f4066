/* test_frontend: GET /frontend/settings over real HTTP (cmocka + libcurl).
 *
 * LibreTranslate's web front end asks for it before anything else
 * (server/api/frontend_api.c).  Two real servers ($MTSERVE_BIN, default
 * build/mtserve) on free loopback ports, through tests/harness.h:
 *
 *   defaults   models/en-fr then models/fr-en, no option: LibreTranslate's
 *              fields, each of its type and no other; charLimit the default
 *              --max-body (1 MiB), no key, no suggestions, no files,
 *              source "auto" ("Auto Detect"), target the default model's
 *              target (fr, named as /languages names it); HEAD answers,
 *              POST is 405; OpenAPI describes the path
 *   options    models/fr-en first, --max-body 64K, --api-key: charLimit
 *              65536, apiKeys and keyRequired true (and a translation
 *              without the key is indeed 401), target en; the settings
 *              themselves stay public (no key), as LibreTranslate's
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"

#define DEFAULT_MAX_BODY (1 << 20)       /* server/common/options.c */

/* The fields of LibreTranslate's reply (its app.py, frontend_settings()) and their JSON types. */
static const struct {
    const char *name;
    json_type   type;
} lt_fields[] = {
    { "charLimit", JSON_INTEGER },       { "frontendTimeout", JSON_INTEGER },
    { "apiKeys", JSON_TRUE },            { "keyRequired", JSON_TRUE },        /* JSON_TRUE: any boolean */
    { "suggestions", JSON_TRUE },        { "filesTranslation", JSON_TRUE },
    { "supportedFilesFormat", JSON_ARRAY }, { "language", JSON_OBJECT },
};
#define N_FIELDS ((int)(sizeof lt_fields / sizeof lt_fields[0]))

static int has_type(json_t *v, json_type t)
{
    return t == JSON_TRUE ? json_is_boolean(v) : v && json_typeof(v) == t;
}

/* GET /frontend/settings: 200 JSON with exactly LibreTranslate's fields, each of its type. */
static json_t *settings(const server *s)
{
    reply r = get(s, "/frontend/settings");
    char type[128];
    assert_true(header(&r, "Content-Type", type, sizeof type));
    assert_non_null(strstr(type, "application/json"));
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    assert_true(json_is_object(j));
    for (int i = 0; i < N_FIELDS; i++) {
        json_t *v = json_object_get(j, lt_fields[i].name);
        if (!has_type(v, lt_fields[i].type))
            print_error("field %s missing or of the wrong type\n", lt_fields[i].name);
        assert_true(has_type(v, lt_fields[i].type));
    }
    if (json_object_size(j) != N_FIELDS) {
        char *dump = json_dumps(j, 0);
        print_error("more fields than LibreTranslate's: %s\n", dump);
        free(dump);
    }
    assert_int_equal(json_object_size(j), N_FIELDS);
    json_t *lang = json_object_get(j, "language");
    assert_int_equal(json_object_size(lang), 2);
    for (int k = 0; k < 2; k++) {
        json_t *l = json_object_get(lang, k ? "target" : "source");
        assert_true(json_is_object(l));
        assert_int_equal(json_object_size(l), 2);
        assert_true(json_is_string(json_object_get(l, "code")));
        assert_true(json_is_string(json_object_get(l, "name")));
    }
    return j;
}

static const char *lang_field(json_t *j, const char *side, const char *field)
{
    return json_string_value(json_object_get(json_object_get(json_object_get(j, "language"), side), field));
}

/* The name /languages gives code; fails the test if /languages lacks it. */
static char *languages_name(const server *s, const char *code)
{
    reply r = get(s, "/languages");
    json_t *list = expect_json(&r, 200), *l;
    reply_free(&r);
    size_t i;
    char *name = NULL;
    json_array_foreach(list, i, l)
        if (strcmp(json_string_value(json_object_get(l, "code")), code) == 0)
            name = strdup(json_string_value(json_object_get(l, "name")));
    json_decref(list);
    if (!name)
        print_error("/languages has no %s\n", code);
    assert_non_null(name);
    return name;
}

static void expect_source_auto(json_t *j)
{
    assert_string_equal(lang_field(j, "source", "code"), "auto");
    assert_string_equal(lang_field(j, "source", "name"), "Auto Detect");
}

static void expect_no_extras(json_t *j)
{
    assert_true(json_is_false(json_object_get(j, "suggestions")));
    assert_true(json_is_true(json_object_get(j, "filesTranslation")));         /* POST /translate_file */
    /* every format POST /translate_file reads, by extension, and nothing else */
    static const char *const exts[] = {".txt", ".html", ".srt", ".vtt", ".po", ".pot", ".docx", ".odt", ".json",
                                       ".arb", ".properties", ".strings", ".xml", ".yml", ".yaml", ".pptx", ".xlsx",
                                       ".odp", ".ods", ".epub", ".md", ".markdown", ".xlf", ".xliff"};
    json_t *formats = json_object_get(j, "supportedFilesFormat");
    assert_int_equal(json_array_size(formats), sizeof exts / sizeof *exts);
    for (size_t k = 0; k < sizeof exts / sizeof *exts; k++)
        assert_string_equal(json_string_value(json_array_get(formats, k)), exts[k]);
    assert_int_equal(json_integer_value(json_object_get(j, "frontendTimeout")), 500);
}

static void stop(server *s)
{
    int status = server_stop(s);
    if (status < 0 || !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        print_error("server: exit status %d (-2: sanitizer report in %s)\n", status, s->log);
    assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- the tests ------------------------------------------------------------------------ */

static void test_defaults(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    json_t *j = settings(&s);
    assert_int_equal(json_integer_value(json_object_get(j, "charLimit")), DEFAULT_MAX_BODY);
    assert_true(json_is_false(json_object_get(j, "apiKeys")));
    assert_true(json_is_false(json_object_get(j, "keyRequired")));
    expect_no_extras(j);
    expect_source_auto(j);
    assert_string_equal(lang_field(j, "target", "code"), "fr");          /* en-fr, the default model */
    char *name = languages_name(&s, "fr");
    assert_string_equal(lang_field(j, "target", "name"), name);
    assert_string_equal(name, "French");
    free(name);
    json_decref(j);

    reply r = http_req(&s, "/frontend/settings", &(req_opts){ .method = "HEAD" });
    assert_int_equal(r.status, 200);
    reply_free(&r);
    r = http_req(&s, "/frontend/settings", &(req_opts){ .method = "POST", .body = "{}" });
    assert_int_equal(r.status, 405);
    reply_free(&r);

    /* the OpenAPI document describes it, with the fields above as its schema's */
    r = get(&s, "/openapi.json");
    json_t *doc = expect_json(&r, 200);
    reply_free(&r);
    assert_non_null(json_object_get(json_object_get(json_object_get(doc, "paths"), "/frontend/settings"), "get"));
    json_t *props = json_object_get(json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
                                                    "FrontendSettings"), "properties");
    assert_int_equal(json_object_size(props), N_FIELDS);
    for (int i = 0; i < N_FIELDS; i++)
        assert_non_null(json_object_get(props, lt_fields[i].name));
    json_decref(doc);
    stop(&s);
}

static void test_options(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "fr-en=models/fr-en", "--model", "en-fr=models/en-fr",
                                        "--max-body", "64K", "--api-key", "s3cret", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    json_t *j = settings(&s);                   /* no key: public, as LibreTranslate's */
    assert_int_equal(json_integer_value(json_object_get(j, "charLimit")), 65536);
    assert_true(json_is_true(json_object_get(j, "apiKeys")));
    assert_true(json_is_true(json_object_get(j, "keyRequired")));
    expect_no_extras(j);
    expect_source_auto(j);
    assert_string_equal(lang_field(j, "target", "code"), "en");          /* fr-en, the default model now */
    assert_string_equal(lang_field(j, "target", "name"), "English");
    json_decref(j);

    /* keyRequired is true: a translation without the key is refused (400, as
     * LibreTranslate refuses a missing key, in its shape), with it served */
    static const char body[] = "{\"q\": \"Ce paquet contient la documentation.\", \"source\": \"fr\", \"target\": \"en\"}";
    reply r = post(&s, "/translate", body);
    json_t *e = expect_json(&r, 400);
    assert_non_null(strstr(json_string_value(json_object_get(e, "error")), "API key"));
    json_decref(e);
    reply_free(&r);
    r = http_req(&s, "/translate", &(req_opts){ .body = body, .extra = { "Authorization: Bearer s3cret" } });
    json_t *t = expect_json(&r, 200);
    assert_true(json_is_string(json_object_get(t, "translatedText")));
    json_decref(t);
    reply_free(&r);
    stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_options),
    };
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_ALL);
    int rc = cmocka_run_group_tests_name("frontend", tests, NULL, NULL);
    kill_all_children();
    curl_global_cleanup();
    return rc;
}
