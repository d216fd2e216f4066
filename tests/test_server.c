/* test_server: integration tests of `mtserve serve` over HTTP (cmocka + libcurl).
 *
 * Starts the real binary ($MTSERVE_BIN, default build/mtserve) on a free
 * loopback port with models/tiny, waits for /health, and drives every
 * endpoint and error case.  Extra servers (API key, queue, shutdown) are
 * started by the tests that need them.  Every child is killed in teardown
 * (and on our own death, PR_SET_PDEATHSIG); every wait and loop is bounded.
 * Server logs go to <dir of MTSERVE_BIN>/tests/server-<port>.log, and are
 * scanned for sanitizer reports when each server stops.  The child-server
 * harness and the HTTP client are tests/harness.c, shared with test_load.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static server main_srv;

/* ---- assertions ------------------------------------------------------------------------ */

/* A request that must fail with our envelope: status, code, and a word in the message. */
static void expect_error(const server *s, const char *path, const req_opts *o, long status,
                         const char *code, const char *word)
{
    reply r = http_req(s, path, o);
    json_t *j = expect_json(&r, status);
    json_t *err = json_object_get(j, "error");
    assert_true(json_is_object(err));
    const char *got = json_string_value(json_object_get(err, "code"));
    const char *msg = json_string_value(json_object_get(err, "message"));
    assert_non_null(got);
    assert_non_null(msg);
    if (strcmp(got, code) != 0 || (word && !strstr(msg, word)))
        print_error("expected %s mentioning '%s', got %s: %s\n", code, word ? word : "", got, msg);
    assert_string_equal(got, code);
    if (word)
        assert_non_null(strstr(msg, word));
    json_decref(j);
    reply_free(&r);
}

/* A request that must fail in LibreTranslate's shape: status, and
 * {"error": string} with word in it (NULL: any). */
static void expect_lt_error_on(const server *s, const char *path, const req_opts *o, long status, const char *word)
{
    reply r = http_req(s, path, o);
    json_t *j = expect_json(&r, status);
    json_t *err = json_object_get(j, "error");
    if (!json_is_string(err) || (word && !strstr(json_string_value(err), word)))
        print_error("%s: expected an error string with '%s': %s\n", path, word ? word : "", r.body);
    assert_true(json_is_string(err));
    if (word)
        assert_non_null(strstr(json_string_value(err), word));
    assert_int_equal(json_object_size(j), 1);
    json_decref(j);
    reply_free(&r);
}

static void expect_post_error(const char *path, const char *body, long status, const char *code,
                              const char *word)
{
    req_opts o = { .body = body };
    expect_error(&main_srv, path, &o, status, code, word);
}

/* POST /translate on s; returns translations[i].text joined (caller frees json). */
static json_t *translate(const server *s, const char *body)
{
    reply r = post(s, "/translate", body);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    return j;
}

static const char *tr_text(json_t *j, size_t i)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), i), "text"));
}

/* ---- group setup ------------------------------------------------------------------------ */

static int group_setup(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "models/tiny", "--model", "copy=models/tiny",
                                        "--max-body", "65536", "--max-tokens", "300", "--queue", "64",
                                        NULL };     /* continuous batching (the default) */
    curl_global_init(CURL_GLOBAL_ALL);
    return server_start(&main_srv, args);
}

static int group_teardown(void **state)
{
    (void)state;
    int rc = 0;
    if (main_srv.pid) {
        int status = server_stop(&main_srv);
        if (status < 0 || !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            print_error("main server: exit status %d (-2: sanitizer report in %s)\n", status, main_srv.log);
            rc = -1;
        }
    }
    kill_all_children();
    curl_global_cleanup();
    return rc;
}

/* ---- endpoints ------------------------------------------------------------------------------ */

/* Every "/web/NAME" that page names (its stylesheet and script) answers 200
 * with its type; the count of names found. */
static int web_assets_ok(const char *page)
{
    int n = 0;
    for (const char *p = page; (p = strstr(p, "\"/web/")); p++) {
        char path[128];
        size_t len = strcspn(p + 1, "\"");
        assert_true(len < sizeof path);
        memcpy(path, p + 1, len);
        path[len] = 0;
        reply r = get(&main_srv, path);
        assert_int_equal(r.status, 200);
        const char *type = strstr(path, ".css") ? "content-type: text/css" : "content-type: text/javascript";
        assert_non_null(strcasestr(r.headers, type));
        reply_free(&r);
        n++;
    }
    return n;
}

/* The demo page: served from web/ (the default --web) at / and at /web/, the
 * files it names by absolute paths (so they resolve the same from both),
 * nothing outside web/. */
static void test_web_page(void **state)
{
    (void)state;
    static const char *const pages[] = { "/", "/web/" };
    for (size_t i = 0; i < 2; i++) {
        reply r = get(&main_srv, pages[i]);
        assert_int_equal(r.status, 200);
        assert_non_null(strcasestr(r.headers, "content-type: text/html"));
        assert_non_null(strstr(r.body, "<html"));
        assert_int_equal(web_assets_ok(r.body), 2);         /* style.css and app.js */
        reply_free(&r);
    }
    reply r = get(&main_srv, "/web/app.js");
    assert_int_equal(r.status, 200);
    assert_non_null(strcasestr(r.headers, "content-type: text/javascript"));
    reply_free(&r);
    r = get(&main_srv, "/web/examples.json");
    assert_int_equal(r.status, 200);
    assert_non_null(strcasestr(r.headers, "content-type: application/json"));
    json_t *ex = reply_json(&r);
    assert_true(json_is_array(json_object_get(ex, "en")));
    json_decref(ex);
    reply_free(&r);
    static const char *const refused[] = { "/web/..%2FMakefile", "/web/.hidden.js", "/web/README.md",
                                           "/web/nothere.js", "/web/a%2Fb.js" };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        r = get(&main_srv, refused[i]);
        assert_int_equal(r.status, 404);
        json_t *j = reply_json(&r);
        assert_non_null(json_object_get(j, "error"));
        json_decref(j);
        reply_free(&r);
    }
}

static void test_health(void **state)
{
    (void)state;
    reply r = get(&main_srv, "/health");
    json_t *j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
    json_decref(j);
    reply_free(&r);
}

static void test_translate_single(void **state)
{
    (void)state;
    json_t *j = translate(&main_srv, "{\"text\": \"Hello world.\", \"beam_size\": 2, \"max_length\": 16}");
    assert_string_equal(json_string_value(json_object_get(j, "model")), "tiny");
    assert_true(json_is_number(json_object_get(j, "timing_ms")));
    assert_int_equal(json_array_size(json_object_get(j, "translations")), 1);
    assert_non_null(tr_text(j, 0));
    assert_true(strlen(tr_text(j, 0)) > 0);
    assert_null(json_object_get(json_array_get(json_object_get(j, "translations"), 0), "tokens"));
    json_decref(j);
}

/* A list is one batch, and each result equals translating the text alone. */
static void test_translate_list(void **state)
{
    (void)state;
    const char *texts[] = { "Hello world.", "The cat sleeps", "Install the package" };
    json_t *all = translate(&main_srv, "{\"text\": [\"Hello world.\", \"The cat sleeps\", \"Install the package\"],"
                                       " \"return_tokens\": true, \"return_scores\": true, \"max_length\": 12}");
    assert_int_equal(json_array_size(json_object_get(all, "translations")), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *t = json_array_get(json_object_get(all, "translations"), i);
        json_t *tokens = json_object_get(t, "tokens"), *ids = json_object_get(t, "token_ids");
        assert_true(json_is_array(tokens) && json_is_array(ids));
        assert_int_equal(json_array_size(tokens), json_array_size(ids));
        assert_true(json_array_size(tokens) > 0);
        assert_true(json_is_number(json_object_get(t, "score")));
        char body[256];
        snprintf(body, sizeof body, "{\"text\": \"%s\", \"max_length\": 12}", texts[i]);
        json_t *one = translate(&main_srv, body);
        assert_string_equal(tr_text(one, 0), json_string_value(json_object_get(t, "text")));
        json_decref(one);
    }
    json_decref(all);
}

/* Sentences are translated one by one and joined with the original spacing. */
static void test_translate_split(void **state)
{
    (void)state;
    json_t *whole = translate(&main_srv, "{\"text\": \"Hello world. How are you?\\n\\n  Second paragraph.\","
                                         " \"beam_size\": 1, \"max_length\": 10}");
    json_t *parts = translate(&main_srv, "{\"text\": [\"Hello world.\", \"How are you?\", \"Second paragraph.\"],"
                                         " \"beam_size\": 1, \"max_length\": 10, \"split\": false}");
    char expect[2048];
    snprintf(expect, sizeof expect, "%s %s\n\n  %s", tr_text(parts, 0), tr_text(parts, 1), tr_text(parts, 2));
    assert_string_equal(tr_text(whole, 0), expect);
    json_decref(whole);
    json_decref(parts);
    json_t *nosplit = translate(&main_srv, "{\"text\": \"Hello world. How are you?\", \"split\": false,"
                                           " \"beam_size\": 1, \"max_length\": 10}");
    assert_non_null(tr_text(nosplit, 0));
    json_decref(nosplit);
}

static void test_translate_model_choice(void **state)
{
    (void)state;
    json_t *a = translate(&main_srv, "{\"text\": \"Good morning\", \"max_length\": 10}");
    json_t *b = translate(&main_srv, "{\"text\": \"Good morning\", \"max_length\": 10, \"model\": \"copy\"}");
    assert_string_equal(json_string_value(json_object_get(b, "model")), "copy");
    assert_string_equal(tr_text(a, 0), tr_text(b, 0));      /* same weights */
    json_decref(a);
    json_decref(b);
}

static void test_tokenize_detokenize(void **state)
{
    (void)state;
    reply r = post(&main_srv, "/tokenize", "{\"text\": \"Hello world\"}");
    json_t *j = expect_json(&r, 200);
    json_t *ids = json_object_get(j, "ids"), *pieces = json_object_get(j, "pieces");
    assert_true(json_array_size(ids) >= 2);
    assert_int_equal(json_array_size(ids), json_array_size(pieces));
    assert_string_equal(json_string_value(json_array_get(pieces, json_array_size(pieces) - 1)), "</s>");
    /* detokenize(tokenize(x)) == x */
    json_t *body = json_pack("{s:O}", "ids", ids);
    char *text = json_dumps(body, 0);
    reply d = post(&main_srv, "/detokenize", text);
    json_t *dj = expect_json(&d, 200);
    assert_string_equal(json_string_value(json_object_get(dj, "text")), "Hello world");
    free(text);
    json_decref(body);
    json_decref(dj);
    json_decref(j);
    reply_free(&d);
    reply_free(&r);

    r = post(&main_srv, "/tokenize", "{\"text\": \"Bonjour\", \"side\": \"target\", \"model\": \"copy\"}");
    j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(j, "side")), "target");
    assert_string_equal(json_string_value(json_object_get(j, "model")), "copy");
    json_decref(j);
    reply_free(&r);

    expect_post_error("/detokenize", "{\"ids\": [1, 2, 8000]}", 400, "invalid_field", "ids[2]");
    expect_post_error("/detokenize", "{\"ids\": [-1]}", 400, "invalid_field", "ids[0]");
    expect_post_error("/detokenize", "{\"ids\": \"1 2\"}", 400, "invalid_field", "ids");
    expect_post_error("/tokenize", "{\"text\": \"x\", \"side\": \"left\"}", 400, "invalid_field", "side");
}

/* Every row of every matrix sums to 1; decoder self-attention is lower-triangular. */
static void check_weights(json_t *w, size_t layers, size_t heads, size_t rows, size_t cols, int causal)
{
    assert_int_equal(json_array_size(w), layers);
    for (size_t l = 0; l < layers; l++) {
        json_t *lw = json_array_get(w, l);
        assert_int_equal(json_array_size(lw), heads);
        for (size_t h = 0; h < heads; h++) {
            json_t *hw = json_array_get(lw, h);
            assert_int_equal(json_array_size(hw), rows);
            for (size_t r = 0; r < rows; r++) {
                json_t *row = json_array_get(hw, r);
                assert_int_equal(json_array_size(row), cols);
                double sum = 0;
                for (size_t c = 0; c < cols; c++) {
                    double v = json_number_value(json_array_get(row, c));
                    assert_true(v >= 0 && v <= 1);
                    if (causal && c > r)
                        assert_true(v == 0);
                    sum += v;
                }
                if (fabs(sum - 1) > 1e-4)
                    print_error("row sum %.7f\n", sum);
                assert_true(fabs(sum - 1) <= 1e-4);
            }
        }
    }
}

static void test_attention(void **state)
{
    (void)state;
    reply r = post(&main_srv, "/attention", "{\"text\": \"The cat sleeps.\", \"target\": \"Le chat dort.\"}");
    json_t *j = expect_json(&r, 200);
    size_t S = json_array_size(json_object_get(j, "source_tokens"));
    size_t T = json_array_size(json_object_get(j, "target_tokens"));
    assert_true(S >= 2 && T >= 2);
    assert_int_equal(json_integer_value(json_object_get(j, "rounding_decimals")), 6);
    check_weights(json_object_get(j, "cross_attention"), 2, 4, T, S, 0);
    check_weights(json_object_get(j, "decoder_self_attention"), 2, 4, T, T, 1);
    check_weights(json_object_get(j, "encoder_self_attention"), 2, 4, S, S, 0);
    /* the target is the teacher-forced text */
    reply t = post(&main_srv, "/tokenize", "{\"text\": \"Le chat dort.\", \"side\": \"target\"}");
    json_t *tj = expect_json(&t, 200);
    assert_true(json_equal(json_object_get(tj, "ids"), json_object_get(j, "target_ids")));
    json_decref(tj);
    reply_free(&t);
    json_decref(j);
    reply_free(&r);

    /* without a target: the greedy translation; subsets of layers and heads */
    r = post(&main_srv, "/attention", "{\"text\": \"Hello\", \"layers\": [1], \"heads\": [0, 3], \"model\": \"copy\"}");
    j = expect_json(&r, 200);
    assert_true(json_is_true(json_object_get(j, "target_generated")));
    S = json_array_size(json_object_get(j, "source_tokens"));
    T = json_array_size(json_object_get(j, "target_tokens"));
    check_weights(json_object_get(j, "cross_attention"), 1, 2, T, S, 0);
    check_weights(json_object_get(j, "decoder_self_attention"), 1, 2, T, T, 1);
    check_weights(json_object_get(j, "encoder_self_attention"), 1, 2, S, S, 0);
    json_decref(j);
    reply_free(&r);

    expect_post_error("/attention", "{\"text\": \"Hello\", \"layers\": [2]}", 400, "invalid_field", "layers");
    expect_post_error("/attention", "{\"text\": \"Hello\", \"heads\": [-1]}", 400, "invalid_field", "heads");
    expect_post_error("/attention", "{\"text\": \"Hello\", \"heads\": \"all\"}", 400, "invalid_field", "heads");
    expect_post_error("/attention", "{\"text\": \"Hello\", \"target\": \" \"}", 400, "empty_text", "target");
}

static int has_string(json_t *arr, const char *s)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
        if (json_is_string(e) && strcmp(json_string_value(e), s) == 0)
            return 1;
    return 0;
}

static void test_models_languages_openapi(void **state)
{
    (void)state;
    reply r = get(&main_srv, "/models");
    json_t *j = expect_json(&r, 200);
    json_t *models = json_object_get(j, "models");
    assert_int_equal(json_array_size(models), 2);
    assert_string_equal(json_string_value(json_object_get(j, "default")), "tiny");
    json_t *m0 = json_array_get(models, 0);
    assert_string_equal(json_string_value(json_object_get(m0, "id")), "tiny");
    assert_string_equal(json_string_value(json_object_get(m0, "source_lang")), "en");
    assert_string_equal(json_string_value(json_object_get(m0, "target_lang")), "fr");
    assert_true(json_integer_value(json_object_get(json_object_get(m0, "size"), "file_bytes")) > 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m0, "config"), "d_model")), 32);
    assert_string_equal(json_string_value(json_object_get(json_array_get(models, 1), "id")), "copy");
    json_decref(j);
    reply_free(&r);

    r = get(&main_srv, "/languages");
    j = expect_json(&r, 200);
    assert_true(json_is_array(j));
    json_t *en = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e)
        if (strcmp(json_string_value(json_object_get(e, "code")), "en") == 0)
            en = e;
    assert_non_null(en);
    assert_string_equal(json_string_value(json_object_get(en, "name")), "English");
    assert_true(has_string(json_object_get(en, "targets"), "fr"));
    json_decref(j);
    reply_free(&r);

    r = get(&main_srv, "/openapi.json");
    j = expect_json(&r, 200);
    assert_true(strncmp(json_string_value(json_object_get(j, "openapi")), "3.", 2) == 0);
    const char *paths[] = { "/translate", "/languages", "/attention", "/tokenize", "/detokenize",
                            "/health", "/models", "/metrics", "/openapi.json" };
    for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++)
        assert_non_null(json_object_get(json_object_get(j, "paths"), paths[k]));
    json_decref(j);
    reply_free(&r);
}

/* --weights f16: /models says so, and on the tiny model (an F16 checkpoint:
 * the rounding is exact) the translations equal the F32 server's.  --weights
 * int8: /models says so and names the kernel; it translates.  --kv-cache f16:
 * /models says so; it translates. */
static void test_weights_f16(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "models/tiny", "--weights", "f16", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    reply r = get(&s, "/models");
    json_t *j = expect_json(&r, 200);
    json_t *cfg = json_object_get(json_array_get(json_object_get(j, "models"), 0), "config");
    assert_string_equal(json_string_value(json_object_get(cfg, "weights")), "F16");
    assert_string_equal(json_string_value(json_object_get(cfg, "dtype")), "F16");
    json_decref(j);
    reply_free(&r);
    r = get(&main_srv, "/models");
    j = expect_json(&r, 200);
    cfg = json_object_get(json_array_get(json_object_get(j, "models"), 0), "config");
    assert_string_equal(json_string_value(json_object_get(cfg, "weights")), "F32");
    json_decref(j);
    reply_free(&r);
    const char *body = "{\"text\": [\"The package provides tools.\", \"Hello world!\", \"Free software\"], "
                       "\"beam_size\": 2}";
    json_t *a = translate(&s, body), *b = translate(&main_srv, body);
    for (int i = 0; i < 3; i++)
        assert_string_equal(tr_text(a, i), tr_text(b, i));
    json_decref(a);
    json_decref(b);
    int status = server_stop(&s);
    assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* --weights int8: /models names the weights and the kernel this CPU runs; it translates */
    static const char *const args8[] = { "--model", "models/tiny", "--weights", "int8", NULL };
    assert_int_equal(server_start(&s, args8), 0);
    r = get(&s, "/models");
    j = expect_json(&r, 200);
    cfg = json_object_get(json_array_get(json_object_get(j, "models"), 0), "config");
    assert_string_equal(json_string_value(json_object_get(cfg, "weights")), "INT8");
    const char *kernel = json_string_value(json_object_get(cfg, "int8_kernel"));
    assert_non_null(kernel);
    assert_true(!strcmp(kernel, "avx512-vnni") || !strcmp(kernel, "avx2") || !strcmp(kernel, "portable"));
    json_decref(j);
    reply_free(&r);
    a = translate(&s, body);
    for (int i = 0; i < 3; i++)
        assert_true(strlen(tr_text(a, i)) > 0);
    json_decref(a);
    status = server_stop(&s);
    assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* --kv-cache f16: /models says so (an F32-cache server f32); the en-fr model's translations,
     * greedy and beam 2, equal the F32 cache's on these sentences (tests/test_engine.c test_kv_f16
     * bounds the difference in general; the tiny model's near-flat logits would flip) */
    static const char *const argskv[] = { "--model", "models/en-fr", "--kv-cache", "f16", NULL };
    static const char *const args32[] = { "--model", "models/en-fr", NULL };
    server s32;
    assert_int_equal(server_start(&s, argskv), 0);
    assert_int_equal(server_start(&s32, args32), 0);
    for (int k = 0; k < 2; k++) {
        r = get(k ? &s32 : &s, "/models");
        j = expect_json(&r, 200);
        json_t *lim = json_object_get(json_array_get(json_object_get(j, "models"), 0), "limits");
        assert_string_equal(json_string_value(json_object_get(lim, "kv_cache")), k ? "f32" : "f16");
        json_decref(j);
        reply_free(&r);
    }
    const char *greedy = "{\"text\": [\"The package provides tools.\", \"Hello world!\", \"Free software\"], "
                         "\"beam_size\": 1}";
    for (int k = 0; k < 2; k++) {
        a = translate(&s, k ? body : greedy), b = translate(&s32, k ? body : greedy);
        for (int i = 0; i < 3; i++)
            assert_string_equal(tr_text(a, i), tr_text(b, i));
        json_decref(a);
        json_decref(b);
    }
    for (int k = 0; k < 2; k++) {
        status = server_stop(k ? &s32 : &s);
        assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

static void test_metrics(void **state)
{
    (void)state;
    const char *ok = "mtserve_requests_total{route=\"/translate\",status=\"200\"}";
    const char *tok = "mtserve_generated_tokens_total{model=\"tiny\"}";
    double before = metric(&main_srv, ok), tok_before = metric(&main_srv, tok);
    json_t *j = translate(&main_srv, "{\"text\": \"Count me\", \"max_length\": 8}");
    json_decref(j);
    double after = metric(&main_srv, ok), tok_after = metric(&main_srv, tok);
    assert_true(after >= (before < 0 ? 0 : before) + 1);
    assert_true(tok_after > tok_before);
    assert_true(metric(&main_srv, "mtserve_request_duration_seconds_count{route=\"/translate\"}") >= after);
    assert_true(metric(&main_srv, "mtserve_active_sessions") >= 0);
    assert_true(metric(&main_srv, "mtserve_queue_depth") >= 0);
    reply r = get(&main_srv, "/metrics");
    char type[128];
    assert_true(header(&r, "Content-Type", type, sizeof type));
    assert_non_null(strstr(type, "text/plain"));
    assert_non_null(strstr(r.body, "# TYPE mtserve_request_duration_seconds histogram"));
    assert_non_null(strstr(r.body, "# TYPE mtserve_assertion_failures_total counter"));
    reply_free(&r);
    assert_true(metric(&main_srv, "mtserve_assertion_failures_total") == 0);   /* no invariant broke */
}

/* ---- errors ----------------------------------------------------------------------------- */

static void test_errors_json_and_fields(void **state)
{
    (void)state;
    expect_post_error("/translate", "{\"text\": \"Hello\"", 400, "invalid_json", NULL);
    expect_post_error("/translate", "[1, 2]", 400, "invalid_json", NULL);
    expect_post_error("/translate", "{\"text\": 5}", 400, "invalid_field", "'text'");
    expect_post_error("/translate", "{\"text\": [\"a\", 3]}", 400, "invalid_field", "text[1]");
    expect_post_error("/translate", "{}", 400, "invalid_field", "'text'");
    expect_post_error("/translate", "{\"text\": \"Hi\", \"beam_size\": \"4\"}", 400, "invalid_field", "beam_size");
    expect_post_error("/translate", "{\"text\": \"Hi\", \"beam_size\": 0}", 400, "invalid_field", "beam_size");
    expect_post_error("/translate", "{\"text\": \"Hi\", \"max_length\": 1.5}", 400, "invalid_field", "max_length");
    expect_post_error("/translate", "{\"text\": \"Hi\", \"return_tokens\": \"yes\"}", 400, "invalid_field",
                      "return_tokens");
    expect_post_error("/translate", "{\"text\": \"Hi\", \"split\": 1}", 400, "invalid_field", "split");
    expect_post_error("/translate", "{\"text\": \"Hi\", \"model\": 7}", 400, "invalid_field", "model");
    expect_post_error("/tokenize", "{\"text\": [\"a\"]}", 400, "invalid_field", "text");
}

static void test_errors_empty_text(void **state)
{
    (void)state;
    expect_post_error("/translate", "{\"text\": \"\"}", 400, "empty_text", "text");
    expect_post_error("/translate", "{\"text\": \" \\n\\t \"}", 400, "empty_text", "text");
    expect_post_error("/translate", "{\"text\": []}", 400, "empty_text", "text");
    expect_post_error("/translate", "{\"text\": [\"ok\", \"\"]}", 400, "empty_text", "text[1]");
    expect_post_error("/attention", "{\"text\": \"\"}", 400, "empty_text", "text");
    expect_post_error("/tokenize", "{\"text\": \"\"}", 400, "empty_text", "text");
    req_opts none = { .method = "POST" };
    expect_error(&main_srv, "/translate", &none, 400, "invalid_json", NULL);
}

static char *repeat(const char *prefix, const char *word, int n, const char *suffix)
{
    size_t len = strlen(prefix) + strlen(word) * (size_t)n + strlen(suffix) + 1;
    char *s = malloc(len), *p = s;
    p += sprintf(p, "%s", prefix);
    for (int i = 0; i < n; i++)
        p += sprintf(p, "%s", word);
    sprintf(p, "%s", suffix);
    return s;
}

static void test_errors_limits(void **state)
{
    (void)state;
    /* one sentence over the 256-token session limit; a request over --max-tokens 300 */
    char *one = repeat("{\"text\": \"", "word ", 400, "\"}");
    expect_post_error("/translate", one, 413, "input_too_long", "tokens");
    free(one);
    char *many = repeat("{\"text\": [", "\"one two three four five six seven eight nine\",", 40, "\"x\"]}");
    expect_post_error("/translate", many, 413, "input_too_long", "300");
    free(many);
    char *attn = repeat("{\"text\": \"", "word ", 400, "\"}");
    expect_post_error("/attention", attn, 413, "input_too_long", "tokens");
    free(attn);
    /* bodies over --max-body 65536: declared by Content-Length, and chunked */
    char *big = repeat("{\"text\": \"", "aaaaaaaaaa", 10000, "\"}");
    req_opts o = { .body = big };
    expect_error(&main_srv, "/translate", &o, 413, "body_too_large", "65536");
    req_opts oc = { .body = big, .chunked = 1 };
    expect_error(&main_srv, "/translate", &oc, 413, "body_too_large", "65536");
    free(big);
    /* a chunked body under the limit is fine */
    req_opts small = { .body = "{\"text\": \"Chunked hello\", \"max_length\": 8}", .chunked = 1 };
    reply r = http_req(&main_srv, "/translate", &small);
    assert_int_equal(r.status, 200);
    reply_free(&r);
}

static void test_errors_routes(void **state)
{
    (void)state;
    expect_post_error("/translate", "{\"text\": \"Hi\", \"model\": \"nope\"}", 404, "unknown_model", "nope");
    expect_post_error("/attention", "{\"text\": \"Hi\", \"model\": \"nope\"}", 404, "unknown_model", "nope");
    expect_error(&main_srv, "/nowhere", NULL, 404, "not_found", "/nowhere");
    req_opts del = { .method = "DELETE" };
    expect_error(&main_srv, "/models", &del, 405, "method_not_allowed", "DELETE");
    reply r = get(&main_srv, "/translate");
    assert_int_equal(r.status, 405);
    char allow[128];
    assert_true(header(&r, "Allow", allow, sizeof allow));
    assert_non_null(strstr(allow, "POST"));
    reply_free(&r);
    req_opts head = { .method = "HEAD" };
    r = http_req(&main_srv, "/health", &head);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    req_opts post_ = { .body = "{}" };
    expect_lt_error_on(&main_srv, "/languages", &post_, 405, "not allowed");     /* LibreTranslate's path */
}

static void test_errors_utf8_and_media(void **state)
{
    (void)state;
    const char bad[] = "{\"text\": \"caf\xc3 \xff\"}";
    expect_post_error("/translate", bad, 400, "invalid_utf8", NULL);
    const char overlong[] = "{\"text\": \"\xc0\xaf\"}";
    expect_post_error("/translate", overlong, 400, "invalid_utf8", NULL);
    expect_post_error("/translate", "{\"text\": \"\\ud800\"}", 400, "invalid_json", NULL);
    req_opts mp = { .body = "--x\r\n", .content_type = "multipart/form-data; boundary=x" };
    expect_lt_error_on(&main_srv, "/translate", &mp, 400, "multipart");     /* a form: LibreTranslate's */
    /* the server is still fine */
    json_t *j = translate(&main_srv, "{\"text\": \"Still alive\", \"max_length\": 8}");
    json_decref(j);
}

static void test_cors(void **state)
{
    (void)state;
    req_opts o = { .method = "OPTIONS",
                   .extra = { "Origin: http://example.org", "Access-Control-Request-Method: POST",
                              "Access-Control-Request-Headers: content-type, authorization" } };
    reply r = http_req(&main_srv, "/translate", &o);
    assert_int_equal(r.status, 204);
    char v[256];
    assert_true(header(&r, "Access-Control-Allow-Origin", v, sizeof v));
    assert_string_equal(v, "*");
    assert_true(header(&r, "Access-Control-Allow-Methods", v, sizeof v));
    assert_non_null(strstr(v, "POST"));
    assert_true(header(&r, "Access-Control-Allow-Headers", v, sizeof v));
    assert_non_null(strcasestr(v, "content-type"));
    assert_non_null(strcasestr(v, "authorization"));
    reply_free(&r);
    req_opts g = { .extra = { "Origin: http://example.org" } };
    r = http_req(&main_srv, "/models", &g);
    assert_int_equal(r.status, 200);
    assert_true(header(&r, "Access-Control-Allow-Origin", v, sizeof v));
    reply_free(&r);
}

/* ---- LibreTranslate ------------------------------------------------------------------------ */

static void test_libretranslate_json(void **state)
{
    (void)state;
    json_t *ours = translate(&main_srv, "{\"text\": \"Hello world\"}");
    reply r = post(&main_srv, "/translate", "{\"q\": \"Hello world\", \"source\": \"en\", \"target\": \"fr\", \"format\": \"text\"}");
    json_t *j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), tr_text(ours, 0));
    assert_null(json_object_get(j, "alternatives"));
    assert_null(json_object_get(j, "detectedLanguage"));
    json_decref(j);
    reply_free(&r);
    json_decref(ours);

    r = post(&main_srv, "/translate", "{\"q\": [\"Hello world\", \"Good night\"], \"source\": \"auto\", \"target\": \"fr\","
                                      " \"alternatives\": 2, \"api_key\": \"\"}");
    j = expect_json(&r, 200);
    json_t *texts = json_object_get(j, "translatedText"), *alts = json_object_get(j, "alternatives");
    assert_int_equal(json_array_size(texts), 2);
    assert_int_equal(json_array_size(alts), 2);
    assert_true(json_is_array(json_array_get(alts, 0)));
    assert_true(json_array_size(json_array_get(alts, 0)) <= 2);
    json_t *det = json_object_get(j, "detectedLanguage");
    assert_int_equal(json_array_size(det), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(det, 0), "language")), "en");
    json_decref(j);
    reply_free(&r);

    /* blank entries of a batch beside text come back "", as LibreTranslate's
     * improve_translation_formatting() makes them (`source = source.strip();
     * if not len(source): return ""`), untranslated */
    r = post(&main_srv, "/translate", "{\"q\": [\"Hello world\", \"\", \"  \"], \"source\": \"en\", \"target\": \"fr\"}");
    j = expect_json(&r, 200);
    texts = json_object_get(j, "translatedText");
    assert_int_equal(json_array_size(texts), 3);
    assert_true(strlen(json_string_value(json_array_get(texts, 0))) > 0);
    assert_string_equal(json_string_value(json_array_get(texts, 1)), "");
    assert_string_equal(json_string_value(json_array_get(texts, 2)), "");
    json_decref(j);
    reply_free(&r);
}

static void expect_lt_error(const char *body, const char *content_type, long status, const char *word)
{
    req_opts o = { .body = body, .content_type = content_type };
    expect_lt_error_on(&main_srv, "/translate", &o, status, word);
}

/* POST path with a JSON body on the main server: the reply's JSON (status checked). */
static json_t *post_json(const char *path, const char *body, long status)
{
    reply r = post(&main_srv, path, body);
    json_t *j = expect_json(&r, status);
    reply_free(&r);
    return j;
}

static void test_libretranslate_errors(void **state)
{
    (void)state;
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"de\", \"target\": \"fr\"}", NULL, 400, "de is not supported");
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"de\"}", NULL, 400, "not available");
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"auto\", \"target\": \"xx\"}", NULL, 400, "not available");
    expect_lt_error("{\"q\": \"\", \"source\": \"en\", \"target\": \"fr\"}", NULL, 400, "missing q");
    expect_lt_error("{\"q\": \"Hi\", \"target\": \"fr\"}", NULL, 400, "missing source");
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"en\"}", NULL, 400, "missing target");
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"fr\", \"format\": \"pdf\"}", NULL, 400,
                    "pdf format is not supported");
    expect_lt_error("{\"q\": \"<b>Hi</b>\", \"source\": \"auto\", \"target\": \"fr\", \"format\": \"html\"}", NULL,
                    400, "sources available: English (en)");     /* "Hi": too short to say (CLD2: Catalan) */
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"fr\", \"alternatives\": \"x\"}", NULL, 400,
                    "alternatives");
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"fr\", \"alternatives\": 99}", NULL, 400,
                    "alternatives");
    expect_lt_error("source=en&target=fr", "application/x-www-form-urlencoded", 400, "missing q");
    expect_lt_error("{\"q\": 5, \"source\": \"en\", \"target\": \"fr\"}", NULL, 400, "q must be");
    expect_lt_error("{\"q\": [\"a\", 5], \"source\": \"en\", \"target\": \"fr\"}", NULL, 400, "q[1]");
    expect_lt_error("{\"q\": [], \"source\": \"en\", \"target\": \"fr\"}", NULL, 400, "missing q");
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"fr\", \"alternatives\": \"1.5\"}", NULL, 400,
                    "alternatives parameter is not a number");
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"fr\", \"alternatives\": [1]}", NULL, 400,
                    "alternatives parameter is not a number");
    /* LibreTranslate's statuses: a text over a limit and an unknown model are 400 (ours: 413, 404) */
    char *longq = repeat("{\"q\": \"", "word ", 400, "\", \"source\": \"en\", \"target\": \"fr\"}");
    expect_lt_error(longq, NULL, 400, "tokens");
    free(longq);
    expect_lt_error("{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"fr\", \"model\": \"nope\"}", NULL, 400, "nope");
}

/* What LibreTranslate makes of its fields, beyond the plain case (its app.py,
 * translate()): codes in any case, format "" as text, alternatives from a
 * numeric string or a number (truncated), below 0 as 0, a form's line breaks,
 * and blank text sent back with source auto. */
static void test_libretranslate_fields(void **state)
{
    (void)state;
    json_t *plain = post_json("/translate", "{\"q\": \"Hello world\", \"source\": \"en\", \"target\": \"fr\"}", 200);
    const char *want = json_string_value(json_object_get(plain, "translatedText"));
    assert_non_null(want);
    static const char *const same[] = {
        "{\"q\": \"Hello world\", \"source\": \"EN\", \"target\": \"Fr\"}",
        "{\"q\": \"Hello world\", \"source\": \"en\", \"target\": \"fr\", \"format\": \"\"}",
        "{\"q\": \"Hello world\", \"source\": \"en\", \"target\": \"fr\", \"alternatives\": -2}",
        "{\"q\": \"Hello world\", \"source\": \"en\", \"target\": \"fr\", \"alternatives\": \"0\"}",
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        json_t *j = post_json("/translate", same[i], 200);
        assert_string_equal(json_string_value(json_object_get(j, "translatedText")), want);
        assert_int_equal(json_object_size(j), 1);           /* no alternatives, no detectedLanguage */
        json_decref(j);
    }
    static const char *const one_alt[] = {
        "{\"q\": \"Hello world\", \"source\": \"en\", \"target\": \"fr\", \"alternatives\": \" 1\"}",
        "{\"q\": \"Hello world\", \"source\": \"en\", \"target\": \"fr\", \"alternatives\": 1.9}",
    };
    for (size_t i = 0; i < sizeof one_alt / sizeof *one_alt; i++) {
        json_t *j = post_json("/translate", one_alt[i], 200);
        json_t *alts = json_object_get(j, "alternatives");
        assert_true(json_is_array(alts));
        assert_true(json_array_size(alts) <= 1);
        for (size_t k = 0; k < json_array_size(alts); k++) {     /* filter_unique: not the best, not "" */
            const char *a = json_string_value(json_array_get(alts, k));
            assert_true(a && a[0] && strcmp(a, json_string_value(json_object_get(j, "translatedText"))) != 0);
        }
        json_decref(j);
    }
    json_decref(plain);

    /* a form's q: line breaks made "\n", the last one dropped ("\n".join(q.splitlines())) */
    json_t *lines = post_json("/translate", "{\"q\": \"Hello world.\\nGood night.\", \"source\": \"en\", \"target\": \"fr\"}",
                              200);
    req_opts crlf = { .body = "q=Hello+world.%0D%0AGood+night.%0D%0A&source=en&target=fr",
                      .content_type = "application/x-www-form-urlencoded" };
    reply r = http_req(&main_srv, "/translate", &crlf);
    json_t *j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")),
                        json_string_value(json_object_get(lines, "translatedText")));
    assert_null(strchr(json_string_value(json_object_get(j, "translatedText")), '\r'));
    json_decref(j);
    reply_free(&r);
    req_opts breaks = { .body = "--b\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\nHello world.\rGood night.\r\n\r\n"
                                "--b\r\nContent-Disposition: form-data; name=\"source\"\r\n\r\nen\r\n"
                                "--b\r\nContent-Disposition: form-data; name=\"target\"\r\n\r\nfr\r\n--b--\r\n",
                        .content_type = "multipart/form-data; boundary=b" };
    r = http_req(&main_srv, "/translate", &breaks);
    j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")),
                        json_string_value(json_object_get(lines, "translatedText")));
    json_decref(j);
    reply_free(&r);
    json_decref(lines);

    /* a form's q of one line break passes `if not q`, then is "": sent back */
    req_opts lone = { .body = "q=%0D%0A&source=en&target=fr", .content_type = "application/x-www-form-urlencoded" };
    r = http_req(&main_srv, "/translate", &lone);
    j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), "");
    json_decref(j);
    reply_free(&r);

    /* blank text with source auto: sent back as it is, "en" with confidence 0 */
    j = post_json("/translate", "{\"q\": \"  \", \"source\": \"auto\", \"target\": \"fr\"}", 200);
    assert_string_equal(json_string_value(json_object_get(j, "translatedText")), "  ");
    json_t *det = json_object_get(j, "detectedLanguage");
    assert_string_equal(json_string_value(json_object_get(det, "language")), "en");
    assert_true(json_is_number(json_object_get(det, "confidence")));
    assert_true(json_number_value(json_object_get(det, "confidence")) == 0.0);
    json_decref(j);
    j = post_json("/translate", "{\"q\": [\"\", \" \"], \"source\": \"auto\", \"target\": \"fr\"}", 200);
    assert_int_equal(json_array_size(json_object_get(j, "translatedText")), 2);
    /* every entry blank: `translated_text = text # Cannot translate, send the original text back` */
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "translatedText"), 1)), " ");
    assert_int_equal(json_array_size(json_object_get(j, "detectedLanguage")), 2);
    json_decref(j);
}

/* LibreTranslate's [{"confidence": 0.0, "language": "en"}]. */
static void expect_undetected(json_t *j)
{
    assert_true(json_is_array(j));
    assert_int_equal(json_array_size(j), 1);
    json_t *g = json_array_get(j, 0);
    assert_string_equal(json_string_value(json_object_get(g, "language")), "en");
    assert_true(json_is_real(json_object_get(g, "confidence")));
    assert_true(json_real_value(json_object_get(g, "confidence")) == 0.0);
    assert_int_equal(json_object_size(g), 2);
}

/* POST /detect as LibreTranslate's detect(): q a string or a list (one list
 * back for all of it, as its detect_languages() gathers the texts' detections:
 * tests/test_lt_parity.c), no letter -> en 0, `if not q` -> 400; ours beside it. */
static void test_libretranslate_detect(void **state)
{
    (void)state;
    static const char *const none[] = { "{\"q\": \"123\"}", "{\"q\": \"  \"}", "{\"q\": [\"12\", \" \"]}",
                                         "{\"q\": [\"\"]}", "{\"q\": \"?!\", \"format\": \"text\", \"api_key\": null}" };
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        json_t *j = post_json("/detect", none[i], 200);
        expect_undetected(j);
        json_decref(j);
    }
    req_opts form = { .body = "q=123&api_key=", .content_type = "application/x-www-form-urlencoded" };
    reply r = http_req(&main_srv, "/detect", &form);
    json_t *j = expect_json(&r, 200);
    expect_undetected(j);
    json_decref(j);
    reply_free(&r);

    /* a list: one flat list, best first; a blank entry is LibreTranslate's
     * Detector's [Language("en", 0)], so en's confidence is the mean of the
     * text's and 0, and the other languages' stay */
    json_t *one = post_json("/detect", "{\"q\": \"This package provides the documentation.\"}", 200);
    json_t *list = post_json("/detect", "{\"q\": [\"This package provides the documentation.\", \" \"]}", 200);
    assert_int_equal(json_array_size(list), json_array_size(one));
    assert_true(json_array_size(one) >= 1 && json_array_size(one) <= 3);
    json_t *g = json_array_get(one, 0);
    assert_string_equal(json_string_value(json_object_get(g, "language")), "en");
    double c = json_number_value(json_object_get(g, "confidence"));
    assert_true(c > 0 && c <= 100);
    for (size_t k = 0; k < json_array_size(one); k++) {
        json_t *a = json_array_get(one, k), *b = NULL;
        for (size_t m = 0; m < json_array_size(list); m++)
            if (json_equal(json_object_get(a, "language"), json_object_get(json_array_get(list, m), "language")))
                b = json_array_get(list, m);
        assert_non_null(b);
        double ca = json_number_value(json_object_get(a, "confidence"));
        assert_true(json_number_value(json_object_get(b, "confidence")) == (k == 0 ? ca / 2 : ca));
    }
    json_decref(one);
    json_decref(list);
    list = post_json("/detect", "{\"q\": [\"This package provides the documentation.\", \"It is free software.\"]}", 200);
    assert_true(json_array_size(list) >= 1);
    for (size_t k = 0; k < json_array_size(list); k++)
        assert_true(json_is_object(json_array_get(list, k)));
    json_decref(list);

    /* `if not q`: missing, empty, an empty list; and what is not text */
    static const char *const missing[] = { "{}", "{\"q\": \"\"}", "{\"q\": []}", "{\"q\": null}" };
    for (size_t i = 0; i < sizeof missing / sizeof *missing; i++) {
        req_opts o = { .body = missing[i] };
        expect_lt_error_on(&main_srv, "/detect", &o, 400, "Invalid request: missing q parameter");
    }
    req_opts nobody = { .method = "POST" };
    expect_lt_error_on(&main_srv, "/detect", &nobody, 400, "Invalid request: missing q parameter");
    req_opts num = { .body = "{\"q\": 5}" };
    expect_lt_error_on(&main_srv, "/detect", &num, 400, "q must be");
    req_opts mixed = { .body = "{\"q\": [\"a\", 5]}" };
    expect_lt_error_on(&main_srv, "/detect", &mixed, 400, "q[1]");

    /* ours: {"text"} -> {"detections"}, our envelope */
    j = post_json("/detect", "{\"text\": \"123\"}", 200);
    assert_true(json_is_array(json_object_get(j, "detections")));
    assert_int_equal(json_array_size(json_object_get(j, "detections")), 0);
    json_decref(j);
    expect_post_error("/detect", "{\"text\": \" \"}", 400, "empty_text", NULL);
}

/* Errors raised before a handler runs (body, method, size) on LibreTranslate's
 * paths and requests: {"error": "..."}; ours keep our envelope. */
static void test_libretranslate_early_errors(void **state)
{
    (void)state;
    /* bodies that do not parse */
    req_opts bad_q = { .body = "{\"q\": \"x\", bad" };
    expect_lt_error_on(&main_srv, "/translate", &bad_q, 400, "malformed JSON");
    expect_lt_error_on(&main_srv, "/detect", &bad_q, 400, "malformed JSON");
    req_opts bad = { .body = "{bad" };
    expect_lt_error_on(&main_srv, "/detect", &bad, 400, "malformed JSON");
    expect_error(&main_srv, "/translate", &bad, 400, "invalid_json", NULL);        /* whose? ours by default */
    req_opts bad_text = { .body = "{\"text\": bad" };
    expect_error(&main_srv, "/translate", &bad_text, 400, "invalid_json", NULL);
    expect_error(&main_srv, "/detect", &bad_text, 400, "invalid_json", NULL);
    req_opts array = { .body = "[{\"q\": \"x\"}]" };
    expect_lt_error_on(&main_srv, "/translate", &array, 400, "JSON object");
    req_opts utf8 = { .body = "{\"q\": \"caf\xc3\"}" };
    expect_lt_error_on(&main_srv, "/translate", &utf8, 400, "UTF-8");
    req_opts escape = { .body = "q=%zz&source=en&target=fr", .content_type = "application/x-www-form-urlencoded" };
    expect_lt_error_on(&main_srv, "/translate", &escape, 400, "escape");
    req_opts empty_form = { .body = "", .content_type = "application/x-www-form-urlencoded" };
    expect_lt_error_on(&main_srv, "/translate", &empty_form, 400, "Invalid request: missing q parameter");
    req_opts multipart = { .body = "--x\r\n", .content_type = "multipart/form-data; boundary=x" };
    expect_lt_error_on(&main_srv, "/translate", &multipart, 400, "multipart");

    /* methods: LibreTranslate's paths answer 405 in its shape, with Allow */
    req_opts get_ = { .method = "GET" };
    expect_lt_error_on(&main_srv, "/detect", &get_, 405, "GET");
    req_opts post_ = { .body = "{}" };
    expect_lt_error_on(&main_srv, "/languages", &post_, 405, "POST");
    expect_lt_error_on(&main_srv, "/frontend/settings", &post_, 405, "POST");
    reply r = http_req(&main_srv, "/detect", &get_);
    char allow[128];
    assert_true(header(&r, "Allow", allow, sizeof allow));
    assert_non_null(strstr(allow, "POST"));
    reply_free(&r);
    expect_error(&main_srv, "/translate", &get_, 405, "method_not_allowed", NULL);  /* no body: ours */
    expect_error(&main_srv, "/nowhere", NULL, 404, "not_found", NULL);

    /* bodies over --max-body 65536 (answered by http.c): the body's first bytes
     * tell whose; a client waiting for 100 Continue sends none (its form type still tells) */
    char *big = repeat("{\"q\": \"", "aaaaaaaaaa", 10000, "\", \"source\": \"en\", \"target\": \"fr\"}");
    req_opts sent = { .body = big, .extra = { "Expect:" } };
    expect_lt_error_on(&main_srv, "/translate", &sent, 413, "65536");
    req_opts chunked = { .body = big, .chunked = 1 };
    expect_lt_error_on(&main_srv, "/translate", &chunked, 413, "65536");
    expect_lt_error_on(&main_srv, "/detect", &chunked, 413, "65536");
    free(big);
    char *bigform = repeat("q=", "aaaaaaaaaa", 10000, "&source=en&target=fr");
    req_opts form = { .body = bigform, .content_type = "application/x-www-form-urlencoded",
                      .extra = { "Expect: 100-continue" } };
    expect_lt_error_on(&main_srv, "/translate", &form, 413, "65536");
    free(bigform);
    char *ours = repeat("{\"text\": \"", "aaaaaaaaaa", 10000, "\"}");
    req_opts ours_o = { .body = ours, .extra = { "Expect:" } };
    expect_error(&main_srv, "/translate", &ours_o, 413, "body_too_large", "65536");
    free(ours);
}

static void test_libretranslate_form(void **state)
{
    (void)state;
    reply rj = post(&main_srv, "/translate", "{\"q\": \"Hello world!\", \"source\": \"en\", \"target\": \"fr\"}");
    json_t *jj = expect_json(&rj, 200);
    req_opts o = { .body = "q=Hello+world%21&source=en&target=fr&format=text&api_key=",
                   .content_type = "application/x-www-form-urlencoded" };
    reply rf = http_req(&main_srv, "/translate", &o);
    json_t *jf = expect_json(&rf, 200);
    assert_string_equal(json_string_value(json_object_get(jf, "translatedText")),
                        json_string_value(json_object_get(jj, "translatedText")));
    json_decref(jf);
    reply_free(&rf);
    /* a batch in a form: q holds a JSON array */
    req_opts ob = { .body = "q=%5B%22Hello%20world!%22%2C%22Bye%22%5D&source=en&target=fr&alternatives=1",
                    .content_type = "application/x-www-form-urlencoded" };
    rf = http_req(&main_srv, "/translate", &ob);
    jf = expect_json(&rf, 200);
    json_t *texts = json_object_get(jf, "translatedText");
    assert_int_equal(json_array_size(texts), 2);
    assert_string_equal(json_string_value(json_array_get(texts, 0)),
                        json_string_value(json_object_get(jj, "translatedText")));
    json_decref(jf);
    reply_free(&rf);
    /* a browser's FormData: multipart/form-data */
    req_opts om = { .body = "--XyZ\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\nHello world!\r\n"
                            "--XyZ\r\nContent-Disposition: form-data; name=\"source\"\r\n\r\nen\r\n"
                            "--XyZ\r\nContent-Disposition: form-data; name=\"target\"\r\n\r\nfr\r\n"
                            "--XyZ--\r\n",
                    .content_type = "multipart/form-data; boundary=XyZ" };
    rf = http_req(&main_srv, "/translate", &om);
    jf = expect_json(&rf, 200);
    assert_string_equal(json_string_value(json_object_get(jf, "translatedText")),
                        json_string_value(json_object_get(jj, "translatedText")));
    json_decref(jf);
    reply_free(&rf);
    json_decref(jj);
    reply_free(&rj);
}

/* ---- concurrency ------------------------------------------------------------------------------ */

#define N_CLIENTS 32
#define N_TEXTS 8
#define PER_CLIENT 2

static const char *const conc_texts[N_TEXTS] = {
    "Hello world.", "The package contains documentation.", "Install it now", "Good morning. Good night.",
    "A small test", "Where is the library?", "Files and folders", "This is the last one."
};
static char *conc_expect[N_TEXTS];

typedef struct {
    int id, ok, failed;
} client_arg;

static char *conc_body(int k)
{
    json_t *b = json_pack("{s:s,s:i,s:i}", "text", conc_texts[k], "beam_size", 2, "max_length", 12);
    char *s = json_dumps(b, 0);
    json_decref(b);
    return s;
}

static const server *conc_srv = &main_srv;     /* the server the clients talk to */

static void *client(void *arg)
{
    client_arg *a = arg;
    for (int i = 0; i < PER_CLIENT; i++) {
        int k = (a->id + i) % N_TEXTS;
        char *body = conc_body(k);
        reply r = post(conc_srv, "/translate", body);
        json_t *j = r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
        const char *t = j ? tr_text(j, 0) : NULL;
        if (t && strcmp(t, conc_expect[k]) == 0)
            a->ok++;
        else
            a->failed++;
        json_decref(j);
        reply_free(&r);
        free(body);
    }
    return NULL;
}

/* N_CLIENTS clients at once against conc_srv: every answer equals the single
 * request's answer from the main server (batching on).  Returns requests/s. */
static double run_concurrent(const char *what)
{
    pthread_t tid[N_CLIENTS];
    client_arg args[N_CLIENTS];
    double t0 = now_s();
    for (int i = 0; i < N_CLIENTS; i++) {
        args[i] = (client_arg){ .id = i };
        assert_int_equal(pthread_create(&tid[i], NULL, client, &args[i]), 0);
    }
    int ok = 0, failed = 0;
    for (int i = 0; i < N_CLIENTS; i++) {
        pthread_join(tid[i], NULL);
        ok += args[i].ok;
        failed += args[i].failed;
    }
    double dt = now_s() - t0;
    print_message("    %d concurrent clients, %s: %d requests in %.2f s\n", N_CLIENTS, what, ok + failed, dt);
    assert_int_equal(failed, 0);
    assert_int_equal(ok, N_CLIENTS * PER_CLIENT);
    return (ok + failed) / dt;
}

/* Continuous batching (the main server), then one worker per request
 * (--batching off): both give exactly the answers of single requests. */
static void test_concurrent_clients(void **state)
{
    (void)state;
    for (int k = 0; k < N_TEXTS; k++) {
        char *body = conc_body(k);
        json_t *j = translate(&main_srv, body);
        conc_expect[k] = strdup(tr_text(j, 0));
        json_decref(j);
        free(body);
    }
    conc_srv = &main_srv;
    run_concurrent("batching on");
    assert_true(metric(&main_srv, "mtserve_batch_rows_count") > 0);
    /* the scheduler's time, split: it stepped, and did something between steps */
    assert_true(metric(&main_srv, "mtserve_scheduler_seconds_total{phase=\"step\"}") > 0);
    assert_true(metric(&main_srv, "mtserve_scheduler_seconds_total{phase=\"between\"}") > 0);
    assert_true(metric(&main_srv, "mtserve_scheduler_seconds_total{phase=\"idle\"}") >= 0);
    static const char *const args[] = { "--model", "models/tiny", "--batching", "off", "--threads", "2",
                                        "--queue", "64", NULL };
    server off;
    assert_int_equal(server_start(&off, args), 0);
    conc_srv = &off;
    run_concurrent("batching off");
    conc_srv = &main_srv;
    assert_true(metric(&off, "mtserve_batch_rows_count") == 0);
    assert_true(metric(&off, "mtserve_scheduler_seconds_total{phase=\"step\"}") == 0);
    int status = server_stop(&off);
    for (int k = 0; k < N_TEXTS; k++)
        free(conc_expect[k]);
    assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- servers of their own ---------------------------------------------------------------------- */

static void test_api_key(void **state)
{
    (void)state;
    static const char *const env[] = { "MTSERVE_API_KEY=s3cret", "MTSERVE_MODEL=k=models/tiny",
                                       "MTSERVE_CORS_ORIGINS=http://a.example, http://b.example", NULL };
    server s;
    assert_int_equal(server_start_env(&s, NULL, env), 0);
    reply r = get(&s, "/health");                      /* public */
    assert_int_equal(r.status, 200);
    reply_free(&r);
    expect_error(&s, "/models", NULL, 401, "unauthorized", NULL);
    req_opts bad = { .extra = { "Authorization: Bearer nope" } };
    expect_error(&s, "/models", &bad, 401, "unauthorized", NULL);
    req_opts good = { .extra = { "Authorization: Bearer s3cret" } };
    r = http_req(&s, "/models", &good);
    json_t *j = expect_json(&r, 200);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "models"), 0), "id")), "k");
    json_decref(j);
    reply_free(&r);
    req_opts tr = { .body = "{\"text\": \"Hi\", \"max_length\": 6}" };
    expect_error(&s, "/translate", &tr, 401, "unauthorized", NULL);
    /* LibreTranslate: the key in the body; errors as strings, with its statuses
     * (access_check): a wrong key 403, a missing one 400 */
    r = post(&s, "/translate", "{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"fr\", \"api_key\": \"s3cret\"}");
    assert_int_equal(r.status, 200);
    reply_free(&r);
    req_opts wrong = { .body = "{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"fr\", \"api_key\": \"wrong\"}" };
    expect_lt_error_on(&s, "/translate", &wrong, 403, "Invalid API key");
    req_opts missing = { .body = "{\"q\": \"Hi\", \"source\": \"en\", \"target\": \"fr\", \"api_key\": \"\"}" };
    expect_lt_error_on(&s, "/translate", &missing, 400, "get an API key");
    req_opts form_wrong = { .body = "q=Hi&api_key=wrong", .content_type = "application/x-www-form-urlencoded" };
    expect_lt_error_on(&s, "/detect", &form_wrong, 403, "Invalid API key");
    req_opts form_none = { .body = "q=Hi", .content_type = "application/x-www-form-urlencoded" };
    expect_lt_error_on(&s, "/detect", &form_none, 400, "get an API key");
    req_opts form_good = { .body = "q=Hi&api_key=s3cret", .content_type = "application/x-www-form-urlencoded" };
    r = http_req(&s, "/detect", &form_good);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    req_opts ours_detect = { .body = "{\"text\": \"Hi\"}" };
    expect_error(&s, "/detect", &ours_detect, 401, "unauthorized", NULL);
    /* preflight needs no key; origins are checked against the list */
    req_opts pre = { .method = "OPTIONS", .extra = { "Origin: http://b.example" } };
    r = http_req(&s, "/translate", &pre);
    assert_int_equal(r.status, 204);
    char v[128];
    assert_true(header(&r, "Access-Control-Allow-Origin", v, sizeof v));
    assert_string_equal(v, "http://b.example");
    reply_free(&r);
    req_opts other = { .method = "OPTIONS", .extra = { "Origin: http://evil.example" } };
    r = http_req(&s, "/translate", &other);
    assert_false(header(&r, "Access-Control-Allow-Origin", v, sizeof v));
    reply_free(&r);
    int status = server_stop(&s);
    assert_true(status >= 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A request that keeps the only worker busy for a while: many sentences, long
 * outputs.  ThreadSanitizer runs the engine ~20x slower: a fifth of the
 * sentences still holds the server for seconds, within the tests' timeouts. */
static char *slow_body(int sentences)
{
#if defined(__SANITIZE_THREAD__)
    sentences = sentences / 5 > 2 ? sentences / 5 : 2;
#endif
    return repeat("{\"text\": [", "\"Hello there my friend. Another sentence here!\",", sentences,
                  "\"end\"], \"beam_size\": 4, \"max_length\": 64}");
}

typedef struct {
    const server *s;
    const char   *body;
    long          status;
    double        seconds;
} slow_arg;

static void *slow_client(void *arg)
{
    slow_arg *a = arg;
    double t0 = now_s();
    reply r = post(a->s, "/translate", a->body);
    a->status = r.status;
    a->seconds = now_s() - t0;
    reply_free(&r);
    return NULL;
}

/* Waits until metric name reaches at least value (bounded); 1 if it did. */
static int wait_metric(const server *s, const char *name, double value, double timeout_s)
{
    double until = now_s() + timeout_s;
    while (now_s() < until) {
        if (metric(s, name) >= value)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

static void test_queue_full(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "models/tiny", "--threads", "1", "--queue", "0",
                                        "--max-tokens", "100000", "--max-body", "4M", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    char *body = slow_body(150);
    int got_503 = 0;
    for (int attempt = 0; attempt < 3 && !got_503; attempt++) {
        slow_arg a = { .s = &s, .body = body };
        pthread_t tid;
        assert_int_equal(pthread_create(&tid, NULL, slow_client, &a), 0);
        if (wait_metric(&s, "mtserve_active_sessions", 1, 30)) {
            req_opts o = { .body = "{\"text\": \"Quick\", \"max_length\": 6}" };
            reply r = http_req(&s, "/translate", &o);
            if (r.status == 503) {
                char v[32];
                json_t *j = reply_json(&r);
                assert_true(header(&r, "Retry-After", v, sizeof v));
                assert_true(atoi(v) >= 1);
                assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                                    "queue_full");
                json_decref(j);
                got_503 = 1;
            }
            reply_free(&r);
        }
        pthread_join(tid, NULL);
        assert_int_equal(a.status, 200);        /* the held request is unaffected */
    }
    free(body);
    assert_true(got_503);
    json_t *j = translate(&s, "{\"text\": \"Quick again\", \"max_length\": 6}");
    json_decref(j);
    assert_true(metric(&s, "mtserve_requests_total{route=\"/translate\",status=\"503\"}") >= 1);
    int status = server_stop(&s);
    assert_true(status >= 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A client that gives up (50 ms timeout, connection closed) on a long
 * request: the scheduler drops its sentences, their rows are freed (active
 * sequences back to 0), and the server keeps answering. */
static void test_client_disconnect(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "models/tiny", "--max-tokens", "100000", "--max-body", "4M",
                                        "--max-batch", "16", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    char *body = slow_body(300);            /* 1200 beam rows of up to 64 steps: seconds of work */
    req_opts o = { .body = body, .timeout_ms = 50 };
    reply r = http_req(&s, "/translate", &o);
    assert_int_not_equal(r.curl_rc, 0);     /* timed out: curl closed the connection */
    reply_free(&r);
    assert_true(wait_metric(&s, "mtserve_cancelled_sequences_total", 1, 30));
    double until = now_s() + 30;
    while (now_s() < until && (metric(&s, "mtserve_active_sequences") != 0 ||
                               metric(&s, "mtserve_waiting_sequences") != 0 ||
                               metric(&s, "mtserve_batch_rows_in_use") != 0))
        sleep_ms(10);
    assert_true(metric(&s, "mtserve_active_sequences") == 0);
    assert_true(metric(&s, "mtserve_waiting_sequences") == 0);
    assert_true(metric(&s, "mtserve_batch_rows_in_use") == 0);
    json_t *j = translate(&s, "{\"text\": \"Quick\", \"beam_size\": 4, \"max_length\": 6}");   /* rows reused */
    assert_non_null(tr_text(j, 0));
    json_decref(j);
    free(body);
    int status = server_stop(&s);
    assert_true(status >= 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* SIGTERM while requests run: every started request is answered 200, exit 0. */
static void test_sigterm_drains(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "models/tiny", "--threads", "1", "--queue", "8",
                                        "--max-tokens", "100000", NULL };
    enum { N = 4 };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    char *body = slow_body(25);
    slow_arg a[N];
    pthread_t tid[N];
    for (int i = 0; i < N; i++) {
        a[i] = (slow_arg){ .s = &s, .body = body };
        assert_int_equal(pthread_create(&tid[i], NULL, slow_client, &a[i]), 0);
    }
    /* all N inside the server (the metrics request itself counts one more) */
    int all_in = wait_metric(&s, "mtserve_requests_in_flight", N + 1, 30);
    if (!all_in)
        print_error("in flight: %g\n", metric(&s, "mtserve_requests_in_flight"));
    kill(s.pid, SIGTERM);
    int status = wait_child(s.pid, 60);
    for (int i = 0; i < N; i++)
        pthread_join(tid[i], NULL);
    if (status == -1)
        kill_child(s.pid);
    untrack(s.pid);
    free(body);
    assert_true(log_clean(&s));
    assert_true(all_in);
    for (int i = 0; i < N; i++) {
        if (a[i].status != 200)
            print_error("request %d: status %ld after %.2f s\n", i, a[i].status, a[i].seconds);
        assert_int_equal(a[i].status, 200);
    }
    assert_true(status != -1);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* /health is 503 "loading" until the models are loaded: the server listens
 * first.  The model's config.json is a FIFO, so loading waits for our write. */
static void write_fifo(const char *fifo, const char *from)
{
    /* Non-blocking, the open fails (ENXIO) while the server has not yet opened
     * the fifo to read: its loader thread may still be on its way there on a
     * loaded machine, so try again for up to 20 s. */
    int fd = -1;
    for (int i = 0; i < 2000 && (fd = open(fifo, O_WRONLY | O_NONBLOCK)) < 0 && errno == ENXIO; i++)
        usleep(10000);
    FILE *in = fopen(from, "rb");
    char buf[4096];
    size_t n;
    if (fd >= 0) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        while (in && (n = fread(buf, 1, sizeof buf, in)) > 0)
            if (write(fd, buf, n) != (ssize_t)n)
                break;
        close(fd);
    }
    if (in)
        fclose(in);
}

static void test_loading(void **state)
{
    (void)state;
    char dir[256], path[512], target[512], cwd[256];
    const char *files[] = { "generation_config.json", "model.safetensors", "source.spm", "target.spm",
                            "special_tokens_map.json", "tokenizer_config.json", "vocab.json" };
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(dir, sizeof dir, "/tmp/mtserve-loading-%d", (int)getpid());
    mkdir(dir, 0755);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        snprintf(target, sizeof target, "%s/models/tiny/%s", cwd, files[i]);
        unlink(path);
        assert_int_equal(symlink(target, path), 0);
    }
    char fifo[300], arg[320];
    snprintf(fifo, sizeof fifo, "%s/config.json", dir);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    snprintf(arg, sizeof arg, "slow=%s", dir);
    const char *args[] = { "--model", arg, NULL };
    server s;
    assert_int_equal(server_spawn(&s, args, NULL), 0);
    int loading = wait_health(&s, 503) == 0;
    reply h = get(&s, "/health");
    json_t *hj = reply_json(&h);
    int says_loading = hj && strcmp(json_string_value(json_object_get(hj, "status")), "loading") == 0;
    json_decref(hj);
    reply_free(&h);
    req_opts o = { .body = "{\"text\": \"Hi\"}" };
    reply r = http_req(&s, "/translate", &o);
    char retry[16] = "";
    int tr_503 = r.status == 503 && header(&r, "Retry-After", retry, sizeof retry) && strstr(r.body, "\"loading\"");
    reply_free(&r);
    r = get(&s, "/metrics");
    long metrics_status = r.status;
    reply_free(&r);
    write_fifo(fifo, "models/tiny/config.json");     /* let the load finish */
    int ready = wait_health(&s, 200) == 0;
    json_t *j = ready ? translate(&s, "{\"text\": \"Hi\", \"max_length\": 6}") : NULL;
    json_decref(j);
    int status = server_stop(&s);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    unlink(fifo);
    rmdir(dir);
    assert_true(loading);
    assert_true(says_loading);
    assert_true(tr_503);
    assert_int_equal(metrics_status, 200);
    assert_true(ready);
    assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Thread tid of pid: its nice value (field 19 of /proc/PID/task/TID/stat) and
 * scheduling class (field 41, policy NULL: not read).  0, or -1 when the
 * thread ended meanwhile. */
static int thread_stat(pid_t pid, const char *tid, int *nice, int *policy)
{
    char path[400], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)pid, tid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');               /* the name may hold spaces: fields after it */
    int field = 2, last = policy ? 41 : 19;
    for (; p && *p && field < last; p++) {
        if (*p != ' ')
            continue;
        if (++field == 19 && sscanf(p + 1, "%d", nice) != 1)
            return -1;
    }
    if (!p || field != last || (policy && sscanf(p, "%d", policy) != 1))
        return -1;
    return 0;
}

/* The nice value of each thread of pid: counts[0] threads at 0, counts[1] at
 * want, counts[2] at anything else. */
static void thread_nices(pid_t pid, int want, int counts[3])
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    assert_non_null(d);
    counts[0] = counts[1] = counts[2] = 0;
    for (struct dirent *e; (e = readdir(d));) {
        int nice = 0;
        if (e->d_name[0] == '.' || thread_stat(pid, e->d_name, &nice, NULL) != 0)
            continue;                          /* the thread ended meanwhile */
        counts[nice == 0 ? 0 : nice == want ? 1 : 2]++;
    }
    closedir(d);
}

/* Decoding runs below the HTTP threads' priority (--decode-nice, default 5):
 * the scheduler and the engine's pool helpers at 5 once a request has been
 * decoded, the main and HTTP threads at 0; --decode-nice 0 leaves all at 0. */
static void test_decode_nice(void **state)
{
    (void)state;
    static const char *const defaults[] = { "--model", "models/en-fr", NULL };
    static const char *const same[] = { "--model", "models/en-fr", "--decode-nice", "0", NULL };
    const char *const *cases[] = { defaults, same };
    for (int k = 0; k < 2; k++) {
        server s;
        assert_int_equal(server_start(&s, cases[k]), 0);
        reply r = post(&s, "/translate", "{\"text\": \"Open the file.\"}");
        assert_int_equal(r.status, 200);
        reply_free(&r);
        int c[3];
        thread_nices(s.pid, 5, c);
        print_message("  --decode-nice %s: %d threads at 0, %d at 5, %d other\n", k ? "0" : "(default 5)",
                      c[0], c[1], c[2]);
        assert_int_equal(c[2], 0);
        assert_true(c[0] >= 2);                 /* main and the HTTP threads */
        if (k == 0)
            assert_true(c[1] >= 1);             /* the scheduler; the pool's helpers */
        else
            assert_int_equal(c[1], 0);
        assert_int_equal(server_stop(&s), 0);
    }
}

/* Each thread of pid by scheduling class (field 41 of /proc/PID/task/TID/stat)
 * and nice value (field 19): c[0] in SCHED_RR, c[1] in SCHED_OTHER at nice 0,
 * c[2] in SCHED_OTHER at decode_nice, c[3] at decode_nice in another class
 * (a decoder left in SCHED_RR), c[4] anything else; c[5] libmicrohttpd's
 * threads (named MHD-worker), c[6] those in SCHED_RR; *main_rr the main thread's. */
static void thread_classes(pid_t pid, int decode_nice, int c[7], int *main_rr)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    assert_non_null(d);
    memset(c, 0, 7 * sizeof *c);
    *main_rr = -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        int nice = 0, policy = -1;
        if (thread_stat(pid, e->d_name, &nice, &policy) != 0)
            continue;                          /* the thread ended meanwhile */
        if (atoi(e->d_name) == (int)pid)
            *main_rr = policy == 2;
        char comm[32] = "", path[400];
        snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f))
                comm[0] = 0;
            fclose(f);
        }
        if (strncmp(comm, "MHD-worker", 10) == 0) {
            c[5]++;
            c[6] += policy == 2;
        }
        if (policy == 2 && nice == 0)
            c[0]++;
        else if (policy == 0 && nice == 0)
            c[1]++;
        else if (policy == 0 && nice == decode_nice)
            c[2]++;
        else if (nice == decode_nice)
            c[3]++;
        else
            c[4]++;
    }
    closedir(d);
}

/* 1 if the server's log holds text. */
static int log_has(const server *s, const char *text)
{
    FILE *f = fopen(s->log, "r");
    if (!f)
        return 0;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, text) != NULL;
}

#define RR_WARNING "warning: --http-sched rr"

/* One server with args, a request decoded, its threads' classes into c;
 * *warned: the log says SCHED_RR was refused.  0, or 1 on a failure. */
static int classes_of(const char *const *args, int c[7], int *main_rr, int *warned)
{
    server s;
    if (server_start(&s, args) != 0)
        return 1;
    reply r = post(&s, "/translate", "{\"text\": \"Open the file.\"}");
    long status = r.status;
    reply_free(&r);
    thread_classes(s.pid, 5, c, main_rr);
    *warned = log_has(&s, RR_WARNING);
    return (server_stop(&s) != 0) | (status != 200);
}

/* --http-sched rr: libmicrohttpd's threads (and the front's, the sweeper's) in
 * SCHED_RR, every decoding thread (scheduler, the engine's pool) in
 * SCHED_OTHER at --decode-nice, the main thread in SCHED_OTHER; without the
 * option all in SCHED_OTHER.  Without the privilege (CAP_SYS_NICE dropped
 * from the bounding set, RLIMIT_RTPRIO 0, in a child process so the rest of
 * this program keeps it): a warning, all in SCHED_OTHER, and a server that
 * translates. */
static void test_http_sched(void **state)
{
    (void)state;
    static const char *const rr[] = { "--model", "models/en-fr", "--http-sched", "rr", "--http-threads", "2", NULL };
    static const char *const other[] = { "--model", "models/en-fr", "--http-threads", "2", NULL };
    int c[7], main_rr, warned;
    assert_int_equal(classes_of(other, c, &main_rr, &warned), 0);
    print_message("  default: %d RR, %d OTHER at 0, %d OTHER at 5, %d RR at 5, %d other\n", c[0], c[1], c[2],
                  c[3], c[4]);
    assert_int_equal(c[0], 0);
    assert_int_equal(c[5], 2);
    assert_true(c[2] >= 1);
    assert_int_equal(c[3] + c[4], 0);
    assert_false(warned);

    assert_int_equal(classes_of(rr, c, &main_rr, &warned), 0);
    print_message("  --http-sched rr: %d RR (MHD-worker %d of %d), %d OTHER at 0, %d OTHER at 5, %d RR at 5, "
                  "%d other%s\n", c[0], c[6], c[5], c[1], c[2], c[3], c[4], warned ? " (no privilege: warned)" : "");
    assert_int_equal(main_rr, 0);
    assert_true(c[2] >= 1);                     /* the scheduler; the pool's helpers */
    assert_int_equal(c[3] + c[4], 0);           /* no decoder in SCHED_RR */
    assert_int_equal(c[5], 2);                  /* --http-threads 2 */
    if (!warned) {
        assert_int_equal(c[6], 2);              /* both of libmicrohttpd's in SCHED_RR */
        assert_true(c[0] >= 3);                 /* and the front, the sweeper */
    } else
        assert_int_equal(c[0], 0);

    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit none = { 0, 0 };
        if (prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0 || setrlimit(RLIMIT_RTPRIO, &none) != 0)
            _exit(3);                           /* cannot drop it here */
        int rc = classes_of(rr, c, &main_rr, &warned);
        _exit(rc ? 1 : !warned ? 4 : c[0] != 0 || c[3] + c[4] != 0 ? 5 : 0);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    if (WEXITSTATUS(ws) == 3)
        print_message("  cannot drop CAP_SYS_NICE here: the unprivileged case not run\n");
    else
        assert_int_equal(WEXITSTATUS(ws), 0);  /* 1 server, 4 no warning, 5 a thread in SCHED_RR */
}

static void test_bad_startup(void **state)
{
    (void)state;
    /* a bad flag exits 2 at once; a missing model exits 1 after listening */
    const char *argv1[] = { bin_path(), "serve", "--port", "notaport", NULL };
    const char *argv2[] = { bin_path(), "serve", "--host", "127.0.0.1", "--port", "0", "--model",
                            "models/does-not-exist", NULL };
    const char *argv3[] = { bin_path(), "serve", "--weights", "f8", NULL };
    const char *argv4[] = { bin_path(), "serve", "--decode-nice", "20", NULL };
    const char *argv5[] = { bin_path(), "serve", "--http-sched", "fifo", NULL };
    const char *const *cases[] = { argv1, argv2, argv3, argv4, argv5 };
    int expect[] = { 2, 1, 2, 2, 2 };
    for (int i = 0; i < 5; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 2);
            execv(cases[i][0], (char *const *)cases[i]);
            _exit(127);
        }
        track(pid);
        int status = wait_child(pid, 30);
        untrack(pid);
        if (status == -1)
            kill_child(pid);
        assert_true(status != -1 && WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), expect[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health),
        cmocka_unit_test(test_web_page),
        cmocka_unit_test(test_translate_single),
        cmocka_unit_test(test_translate_list),
        cmocka_unit_test(test_translate_split),
        cmocka_unit_test(test_translate_model_choice),
        cmocka_unit_test(test_tokenize_detokenize),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_models_languages_openapi),
        cmocka_unit_test(test_weights_f16),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_errors_json_and_fields),
        cmocka_unit_test(test_errors_empty_text),
        cmocka_unit_test(test_errors_limits),
        cmocka_unit_test(test_errors_routes),
        cmocka_unit_test(test_errors_utf8_and_media),
        cmocka_unit_test(test_cors),
        cmocka_unit_test(test_libretranslate_json),
        cmocka_unit_test(test_libretranslate_errors),
        cmocka_unit_test(test_libretranslate_form),
        cmocka_unit_test(test_libretranslate_fields),
        cmocka_unit_test(test_libretranslate_detect),
        cmocka_unit_test(test_libretranslate_early_errors),
        cmocka_unit_test(test_concurrent_clients),
        cmocka_unit_test(test_api_key),
        cmocka_unit_test(test_queue_full),
        cmocka_unit_test(test_client_disconnect),
        cmocka_unit_test(test_sigterm_drains),
        cmocka_unit_test(test_loading),
        cmocka_unit_test(test_bad_startup),
        cmocka_unit_test(test_decode_nice),
        cmocka_unit_test(test_http_sched),
    };
    signal(SIGPIPE, SIG_IGN);
    if (getenv("TEST_FILTER"))          /* e.g. TEST_FILTER='test_sigterm*' */
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    return cmocka_run_group_tests_name("server", tests, group_setup, group_teardown);
}
