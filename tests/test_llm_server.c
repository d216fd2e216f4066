/* test_llm_server: a decoder-only model served beside a Marian one (issue 31),
 * over real HTTP (cmocka + libcurl against the real binary).
 *
 * The server holds opus-mt en-fr (models/en-fr, Marian), "llama", a
 * Llama-shaped model with random weights and the real Llama-2-format
 * tokenizer, declaring de-en, en-de and fr-en with ALMA's prompt, and
 * "qwen", a Qwen3-shaped one (BF16, tied embeddings, q/k norms) with the
 * real Qwen3 tokenizer, declaring en-es and es-en, its prompt found from its
 * own chat template; both made by tests/llm/gen_served.py ($MT_LLM_SERVED,
 * `make llm-served`).
 * Every expected output comes from references independent of the engine:
 * prompt ids from @lenml/tokenizers (Qwen3's chat template rendered by
 * @huggingface/jinja), greedy ids from the float64 numpy forward, texts
 * decoded by @lenml/tokenizers (expected.json).
 *
 *   test_listing      /models: both, llama decoder-only with its pairs, prompt
 *                     and RoPE; /languages: de, en, fr with the targets the
 *                     two models reach (de -> fr through en)
 *   test_translate    each case through /translate by pair (only the
 *                     decoder-only models have them) and by model name: the
 *                     ids and the text equal the reference's
 *   test_libretranslate  the LibreTranslate shape (q, source, target) gives
 *                     the reference texts, one and several q; "source":
 *                     "auto" detects Spanish and answers with qwen
 *   test_pivot        de -> fr: llama (de -> en) then en-fr; the reply names
 *                     the pivot and equals en-fr's translation of llama's
 *   test_raw          "raw": true continues the text (no prompt, eos alone
 *                     ends): the reference's ids; refused for en-fr
 *   test_together     8 threads, both models at once, every reply right
 *                     (continuous batching of both architectures)
 *   test_attention    /attention on llama: the prompt ids and the greedy
 *                     output the reference's, prompt + output positions, rows
 *                     summing to 1, nothing above the diagonal
 *   test_errors       a pair llama does not declare, "raw" with Marian, an
 *                     unknown "pair", html: clear 400s naming the problem;
 *                     `mtserve translate` refuses a decoder-only model
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <sys/wait.h>

#include "harness.h"

static server srv;
static json_t *expected;        /* expected.json */
static char served_dir[1024];

static json_t *cases(void) { return json_object_get(expected, "cases"); }

static int setup(void **state)
{
    const char *dir = getenv("MT_LLM_SERVED");
    snprintf(served_dir, sizeof served_dir, "%s", dir ? dir : "build/llm-served");
    char path[1100], model[1100], qwen[1100];
    snprintf(path, sizeof path, "%s/expected.json", served_dir);
    json_error_t je;
    if (!(expected = json_load_file(path, 0, &je))) {
        print_error("cannot read %s (make llm-served): %s\n", path, je.text);
        return -1;
    }
    snprintf(model, sizeof model, "llama=%s/llama", served_dir);
    snprintf(qwen, sizeof qwen, "qwen=%s/qwen", served_dir);
    const char *args[] = { "--model", "en-fr=models/en-fr", "--model", model, "--model", qwen, NULL };
    return server_start(&srv, args);
}

static int teardown(void **state)
{
    int rc = server_stop(&srv);
    json_decref(expected);
    return rc == 0 ? 0 : -1;
}

/* POST body (a json_t, stolen) to path; the parsed reply, status asserted. */
static json_t *call(const char *path, json_t *body, long status)
{
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    reply r = post(&srv, path, s);
    free(s);
    json_t *j = expect_json(&r, status);
    reply_free(&r);
    return j;
}

/* The reference ids of a case, its final eos dropped (as the reply's token_ids):
 * llama's </s> 2, qwen's <|im_end|> 151645 (config.json eos_token_id). */
static int ref_ids(json_t *c, int32_t *out, int cap)
{
    const char *model = json_string_value(json_object_get(c, "model"));
    int32_t eos = model && !strcmp(model, "qwen") ? 151645 : 2;
    int n = ids_of(json_object_get(c, "ids"), out, cap);
    if (n > 0 && out[n - 1] == eos)
        n--;
    return n;
}

static void test_listing(void **state)
{
    reply r = get(&srv, "/models");
    json_t *j = expect_json(&r, 200), *m, *llama = NULL, *marian = NULL, *qwen = NULL;
    reply_free(&r);
    size_t i;
    json_array_foreach(json_object_get(j, "models"), i, m) {
        if (!strcmp(json_string_value(json_object_get(m, "id")), "llama"))
            llama = m;
        if (!strcmp(json_string_value(json_object_get(m, "id")), "en-fr"))
            marian = m;
        if (!strcmp(json_string_value(json_object_get(m, "id")), "qwen"))
            qwen = m;
    }
    assert_non_null(llama);
    assert_non_null(marian);
    assert_string_equal(json_string_value(json_object_get(marian, "architecture")), "marian");
    assert_string_equal(json_string_value(json_object_get(llama, "architecture")), "decoder-only");
    assert_string_equal(json_string_value(json_object_get(llama, "model_type")), "llama");
    assert_string_equal(json_string_value(json_object_get(llama, "prompt")), "alma");
    json_t *pairs = json_object_get(llama, "pairs");
    assert_int_equal(json_array_size(pairs), 3);
    assert_string_equal(json_string_value(json_array_get(json_array_get(pairs, 1), 0)), "en");
    assert_string_equal(json_string_value(json_array_get(json_array_get(pairs, 1), 1)), "de");
    assert_non_null(qwen);
    assert_string_equal(json_string_value(json_object_get(qwen, "model_type")), "qwen3");
    assert_string_equal(json_string_value(json_object_get(qwen, "prompt")), "qwen3");      /* from its chat template */
    assert_true(fabs(json_number_value(json_object_get(json_object_get(qwen, "rope"), "theta")) - 1e6) < 1e-3);
    json_t *rope = json_object_get(llama, "rope");
    assert_true(fabs(json_number_value(json_object_get(rope, "theta")) - 10000.0) < 1e-9);
    assert_int_equal(json_integer_value(json_object_get(rope, "head_dim")), 16);
    json_decref(j);

    r = get(&srv, "/languages");
    j = expect_json(&r, 200);
    reply_free(&r);
    int seen = 0, de_fr = 0, es_en = 0;
    json_array_foreach(j, i, m) {
        const char *code = json_string_value(json_object_get(m, "code"));
        json_t *t;
        size_t k;
        seen += !strcmp(code, "de") || !strcmp(code, "en") || !strcmp(code, "fr") || !strcmp(code, "es");
        if (!strcmp(code, "de"))
            json_array_foreach(json_object_get(m, "targets"), k, t)
                de_fr |= !strcmp(json_string_value(t), "fr");
        if (!strcmp(code, "es"))
            json_array_foreach(json_object_get(m, "targets"), k, t)
                es_en |= !strcmp(json_string_value(t), "en");
    }
    assert_int_equal(seen, 4);
    assert_true(de_fr);                 /* through the pivot en */
    assert_true(es_en);
    json_decref(j);
}

/* One case through /translate, by pair or by model: ids and text. */
static void check_case(json_t *c, int by_model)
{
    json_t *body = json_pack("{s:O,s:O,s:O,s:i,s:b}", "text", json_object_get(c, "text"),
                             "source", json_object_get(c, "source"), "target", json_object_get(c, "target"),
                             "max_length", 17, "return_tokens", 1);
    const char *model = json_string_value(json_object_get(c, "model"));
    if (by_model)
        json_object_set_new(body, "model", json_string(model));
    json_t *j = call("/translate", body, 200);
    assert_string_equal(json_string_value(json_object_get(j, "model")), model);
    json_t *tr = json_array_get(json_object_get(j, "translations"), 0);
    int32_t got[64], want[64];
    int n = ids_of(json_object_get(tr, "token_ids"), got, 64), m = ref_ids(c, want, 64);
    if (n != m || memcmp(got, want, sizeof *got * (size_t)n) != 0) {
        char *s = json_dumps(tr, JSON_COMPACT);
        print_error("%s %s: ids differ from the reference's\n  got %s\n", json_string_value(json_object_get(c, "pair")),
                    json_string_value(json_object_get(c, "text")), s);
        free(s);
        fail();
    }
    assert_string_equal(json_string_value(json_object_get(tr, "text")),
                        json_string_value(json_object_get(c, "expected")));
    json_decref(j);
}

static void test_translate(void **state)
{
    json_t *c;
    size_t i;
    int qwen = 0;
    json_array_foreach(cases(), i, c) {
        check_case(c, 0);
        check_case(c, 1);
        qwen += !strcmp(json_string_value(json_object_get(c, "model")), "qwen");
    }
    print_message("   %zu cases (%d of qwen) by pair and by model name: ids and texts equal the reference's\n",
                  json_array_size(cases()), qwen);
    assert_true(json_array_size(cases()) >= 15);
    assert_true(qwen >= 4);
}

static void test_libretranslate(void **state)
{
    json_t *c, *qs = json_array(), *want = json_array();
    size_t i;
    json_array_foreach(cases(), i, c) {
        if (strcmp(json_string_value(json_object_get(c, "pair")), "en-de") != 0)
            continue;
        json_t *j = call("/translate", json_pack("{s:O,s:s,s:s}", "q", json_object_get(c, "text"), "source", "en",
                                                 "target", "de"), 200);
        assert_string_equal(json_string_value(json_object_get(j, "translatedText")),
                            json_string_value(json_object_get(c, "expected")));
        json_decref(j);
        json_array_append(qs, json_object_get(c, "text"));
        json_array_append(want, json_object_get(c, "expected"));
    }
    assert_true(json_array_size(qs) >= 3);
    json_t *j = call("/translate", json_pack("{s:o,s:s,s:s}", "q", qs, "source", "en", "target", "de"), 200);
    json_t *got = json_object_get(j, "translatedText");
    assert_int_equal(json_array_size(got), json_array_size(want));
    for (i = 0; i < json_array_size(want); i++)
        assert_string_equal(json_string_value(json_array_get(got, i)), json_string_value(json_array_get(want, i)));
    json_decref(want);
    json_decref(j);
    json_array_foreach(cases(), i, c) {                 /* Spanish, detected: only qwen translates it */
        if (strcmp(json_string_value(json_object_get(c, "pair")), "es-en") != 0)
            continue;
        j = call("/translate", json_pack("{s:O,s:s,s:s}", "q", json_object_get(c, "text"), "source", "auto",
                                         "target", "en"), 200);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "detectedLanguage"), "language")),
                            "es");
        assert_string_equal(json_string_value(json_object_get(j, "translatedText")),
                            json_string_value(json_object_get(c, "expected")));
        json_decref(j);
    }
}

static void test_pivot(void **state)
{
    json_t *c, *one = NULL;
    size_t i;
    json_array_foreach(cases(), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "pair")), "de-en") && !one)
            one = c;
    assert_non_null(one);
    /* greedy: the first leg's beam is the request's (en-fr's default is a beam of 4) */
    json_t *j = call("/translate", json_pack("{s:O,s:s,s:s,s:i}", "text", json_object_get(one, "text"), "source", "de",
                                             "target", "fr", "beam_size", 1), 200);
    json_t *pv = json_object_get(j, "pivot");
    assert_non_null(json_string_value(json_object_get(pv, "language")));
    assert_string_equal(json_string_value(json_object_get(pv, "language")), "en");
    assert_string_equal(json_string_value(json_array_get(json_object_get(pv, "models"), 0)), "llama");
    const char *got = json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0), "text"));
    /* the second leg: en-fr's translation of llama's English (split into sentences as the pivot is) */
    json_t *k = call("/translate", json_pack("{s:O,s:s,s:i}", "text", json_object_get(one, "expected"), "model", "en-fr",
                                             "beam_size", 1), 200);
    const char *want = json_string_value(json_object_get(json_array_get(json_object_get(k, "translations"), 0), "text"));
    assert_string_equal(got, want);
    assert_true(strlen(got) > 0);
    json_decref(k);
    json_decref(j);
}

static void test_raw(void **state)
{
    json_t *c, *raws = json_object_get(expected, "raw");
    size_t i;
    assert_true(json_array_size(raws) >= 2);
    json_array_foreach(raws, i, c) {
        json_t *j = call("/translate", json_pack("{s:O,s:s,s:b,s:i,s:b}", "text", json_object_get(c, "text"), "model",
                                                 "llama", "raw", 1, "max_length", 17, "return_tokens", 1), 200);
        json_t *tr = json_array_get(json_object_get(j, "translations"), 0);
        int32_t got[64], want[64];
        int n = ids_of(json_object_get(tr, "token_ids"), got, 64), m = ref_ids(c, want, 64);
        assert_int_equal(n, m);
        assert_memory_equal(got, want, sizeof *got * (size_t)n);
        assert_string_equal(json_string_value(json_object_get(tr, "text")),
                            json_string_value(json_object_get(c, "expected")));
        json_decref(j);
    }
    json_t *j = call("/translate", json_pack("{s:s,s:s,s:b}", "text", "Hello", "model", "en-fr", "raw", 1), 400);
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")), "decoder-only"));
    json_decref(j);
}

typedef struct {
    int id, ok, bad;
} worker;

static void *together_thread(void *arg)
{
    worker *w = arg;
    json_t *cs = cases();
    size_t n = json_array_size(cs);
    for (int r = 0; r < 6; r++) {
        json_t *c = json_array_get(cs, (size_t)(w->id * 5 + r * 3) % n);
        json_t *body = (w->id + r) % 2
            ? json_pack("{s:O,s:s,s:i}", "text", json_object_get(c, "text"), "model",
                          json_string_value(json_object_get(c, "model")), "max_length", 17)
            : json_pack("{s:s,s:s,s:s}", "text", "The cat sat on the mat.", "source", "en", "target", "fr");
        if ((w->id + r) % 2 == 1) {
            json_object_set(body, "source", json_object_get(c, "source"));
            json_object_set(body, "target", json_object_get(c, "target"));
        }
        char *s = json_dumps(body, JSON_COMPACT);
        reply rp = post(&srv, "/translate", s);
        json_t *j = rp.status == 200 ? json_loads(rp.body, 0, NULL) : NULL;
        const char *text = json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0),
                                                             "text"));
        const char *want = (w->id + r) % 2 ? json_string_value(json_object_get(c, "expected")) : NULL;
        if (text && (!want || !strcmp(text, want)) && (want || strlen(text) > 0))
            w->ok++;
        else
            w->bad++;
        json_decref(j);
        reply_free(&rp);
        free(s);
        json_decref(body);
    }
    return NULL;
}

static void test_together(void **state)
{
    pthread_t t[8];
    worker w[8] = { 0 };
    for (int i = 0; i < 8; i++) {
        w[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, together_thread, &w[i]), 0);
    }
    int ok = 0, bad = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ok += w[i].ok;
        bad += w[i].bad;
    }
    print_message("   8 threads x 6 requests over both models: %d right, %d wrong\n", ok, bad);
    assert_int_equal(bad, 0);
    assert_int_equal(ok, 48);
}

static void test_attention(void **state)
{
    json_t *c = json_array_get(cases(), 0);
    json_t *j = call("/attention", json_pack("{s:O,s:s,s:s}", "text", json_object_get(c, "text"), "model", "llama",
                                             "pair", json_string_value(json_object_get(c, "pair"))), 200);
    assert_string_equal(json_string_value(json_object_get(j, "architecture")), "decoder-only");
    int P = (int)json_integer_value(json_object_get(j, "prompt_length"));
    int32_t ids[256], want[256];
    int N = ids_of(json_object_get(j, "token_ids"), ids, 256);
    int np = ids_of(json_object_get(c, "prompt_ids"), want, 256);
    assert_int_equal(P, np);
    assert_memory_equal(ids, want, sizeof *ids * (size_t)P);
    int32_t out[64], ref[64];                /* the greedy output: the reference's ids, eos included */
    int no = ids_of(json_object_get(j, "output_ids"), out, 64), nr = ids_of(json_object_get(c, "ids"), ref, 64);
    assert_int_equal(no, nr);
    assert_memory_equal(out, ref, sizeof *out * (size_t)no);
    assert_int_equal(N, P + no - 1);
    json_t *self = json_object_get(j, "self_attention");
    assert_int_equal(json_array_size(self), 2);                         /* layers */
    assert_int_equal(json_array_size(json_array_get(self, 0)), 4);      /* heads */
    assert_true(N > P);
    for (size_t l = 0; l < 2; l++)
        for (size_t h = 0; h < 4; h++) {
            json_t *mat = json_array_get(json_array_get(self, l), h);
            assert_int_equal(json_array_size(mat), N);
            for (int r = 0; r < N; r++) {
                json_t *row = json_array_get(mat, (size_t)r);
                double sum = 0;
                for (int k = 0; k < N; k++) {
                    double v = json_number_value(json_array_get(row, (size_t)k));
                    if (k > r)
                        assert_true(v == 0.0);
                    sum += v;
                }
                assert_true(fabs(sum - 1.0) < 1e-4);
            }
        }
    print_message("   /attention: %d prompt + %d output positions, 2 layers x 4 heads, causal, rows sum to 1\n", P,
                  N - P);
    json_decref(j);
}

static void test_errors(void **state)
{
    json_t *j = call("/translate", json_pack("{s:s,s:s,s:s,s:s}", "text", "Bonjour", "model", "llama", "source", "fr",
                                             "target", "de"), 400);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    assert_non_null(strstr(msg, "de-en, en-de, fr-en"));
    json_decref(j);
    j = call("/attention", json_pack("{s:s,s:s,s:s}", "text", "Hallo", "model", "llama", "pair", "it-en"), 400);
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")), "it-en"));
    json_decref(j);
    j = call("/attention", json_pack("{s:s,s:s,s:b}", "text", "Hello", "model", "en-fr", "raw", 1), 400);
    json_decref(j);
    j = call("/translate", json_pack("{s:s,s:s,s:s}", "text", "<p>Hallo</p>", "model", "llama", "format", "html"), 400);
    json_decref(j);
    /* the CLI translates with Marian models only: a clear refusal, exit 1 */
    char cmd[2400], out[1024] = "";
    snprintf(cmd, sizeof cmd, "echo Hallo | %s translate --model %s/llama 2>&1", bin_path(), served_dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
    assert_non_null(strstr(out, "decoder-only"));
}

int main(void)
{
    if (getenv("TEST_FILTER"))
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),   cmocka_unit_test(test_translate), cmocka_unit_test(test_libretranslate),
        cmocka_unit_test(test_pivot),     cmocka_unit_test(test_raw),       cmocka_unit_test(test_together),
        cmocka_unit_test(test_attention), cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
