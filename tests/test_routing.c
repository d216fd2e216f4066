/* test_routing: several models behind one server, picked by language pair
 * (server/service/pairs.c), with multilingual target tokens and pivots (cmocka + libcurl).
 *
 * Three model directories are made from models/en-fr in a temp dir (its files
 * symlinked; tokenizer_config.json rewritten, and for the multilingual one
 * vocab.json extended), so the routing is what is tested, on real decoding:
 *
 *   en-fr   models/en-fr as it is           en -> fr
 *   de-en   the same weights, labelled      de -> en
 *   multi   labelled it -> "mul", and its vocab.json gets ">>fra<<" and
 *           ">>spa<<" as extra names of two existing ids (MULTI_FRA, MULTI_SPA:
 *           the pieces "▁Python" and "▁Perl", so a token's effect shows)
 *
 * Checks: /languages lists every pair, pivots included; a LibreTranslate
 * request goes to the model of its pair; de -> fr is translated through en
 * and equals translating with de-en and then en-fr by name, and the JSON
 * reply names the pivot; the multilingual model lists its target languages,
 * wants a target (400 naming the choices), refuses one it lacks (400 naming
 * the choices), takes "fr" and "fra" alike, and its reply for a target equals
 * the engine's own decode of [the target token] + the source ids; a pair
 * nothing reaches is a 400.
 *
 * test_forms: a second server serves the random-weight opus-mt-en-mg of
 * `make opus-models` in its three forms at once (pytorch_model.bin, the
 * Marian release, model.safetensors) and tc-big-fr-en's F16 safetensors:
 * /models names each form, and the three en-mg forms (the same weights)
 * give the same reply.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ftw.h>
#include <libgen.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "mt.h"
#include "translate/pipeline.h"
#include "translate/session_decoder.h"

#define TINY       "models/en-fr"     /* real weights: the target token visibly matters */
#define MULTI_FRA  111     /* "▁Python" in models/en-fr/vocab.json */
#define MULTI_SPA  268     /* "▁Perl": a word each, so the token visibly changes the output */
#define TEXT       "bindings"

static char tmp[256];
static server srv;

/* ---- model directories ----------------------------------------------------------- */

static void link_file(const char *dir, const char *name)
{
    char from[1024], to[1024], cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(from, sizeof from, "%s/%s/%s", cwd, TINY, name);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    assert_int_equal(symlink(from, to), 0);
}

static void write_json(const char *dir, const char *name, json_t *j)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(json_dump_file(j, path, JSON_INDENT(1)), 0);
    json_decref(j);
}

/* A copy of the model labelled source -> target; extra: names added to vocab.json. */
static void make_model(const char *id, const char *source, const char *target, int multilingual)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmp, id);
    assert_int_equal(mkdir(dir, 0755), 0);
    static const char *const same[] = {"config.json", "generation_config.json", "model.safetensors",
                                       "source.spm", "target.spm", "special_tokens_map.json"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        link_file(dir, same[i]);
    json_error_t e;
    json_t *tc = json_load_file(TINY "/tokenizer_config.json", 0, &e);
    assert_non_null(tc);
    json_object_set_new(tc, "source_lang", json_string(source));
    json_object_set_new(tc, "target_lang", json_string(target));
    write_json(dir, "tokenizer_config.json", tc);
    json_t *vocab = json_load_file(TINY "/vocab.json", 0, &e);
    assert_non_null(vocab);
    if (multilingual) {
        json_object_set_new(vocab, ">>fra<<", json_integer(MULTI_FRA));
        json_object_set_new(vocab, ">>spa<<", json_integer(MULTI_SPA));
    }
    write_json(dir, "vocab.json", vocab);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/mt_test_routing_XXXXXX");
    if (!mkdtemp(tmp))
        return -1;
    make_model("en-fr", "en", "fr", 0);
    make_model("de-en", "de", "en", 0);
    make_model("multi", "it", "mul", 1);
    char a[3][600];
    snprintf(a[0], sizeof a[0], "en-fr=%s/en-fr", tmp);
    snprintf(a[1], sizeof a[1], "de-en=%s/de-en", tmp);
    snprintf(a[2], sizeof a[2], "multi=%s/multi", tmp);
    const char *const args[] = {"--model", a[0], "--model", a[1], "--model", a[2], "--threads", "2", NULL};
    return server_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    int rc = server_stop(&srv);
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc == 0 ? 0 : -1;
}

/* ---- helpers ---------------------------------------------------------------------- */

/* POST body to path; the reply's status must be want; the parsed body. */
static json_t *call(const char *path, const char *body, long want)
{
    reply r = post(&srv, path, body);
    if (r.status != want)
        print_message("%s %s -> %ld %s\n", path, body, r.status, r.body ? r.body : "");
    assert_int_equal(r.status, want);
    json_t *j = reply_json(&r);
    reply_free(&r);
    assert_non_null(j);
    return j;
}

/* The translation of text by a named model (JSON API), malloc'd. */
static char *by_model(const char *model, const char *text, const char *target)
{
    json_t *req = json_pack("{s:s,s:s}", "model", model, "text", text);
    if (target)
        json_object_set_new(req, "target", json_string(target));
    char *body = json_dumps(req, 0);
    json_t *j = call("/translate", body, 200);
    const char *t = json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0), "text"));
    assert_non_null(t);
    char *out = strdup(t);
    json_decref(j);
    free(body);
    json_decref(req);
    return out;
}

/* The LibreTranslate translation of TEXT from source to target, malloc'd. */
static char *by_pair(const char *source, const char *target)
{
    char body[512];
    snprintf(body, sizeof body, "{\"q\": \"%s\", \"source\": \"%s\", \"target\": \"%s\"}", TEXT, source, target);
    json_t *j = call("/translate", body, 200);
    const char *t = json_string_value(json_object_get(j, "translatedText"));
    assert_non_null(t);
    char *out = strdup(t);
    json_decref(j);
    return out;
}

static int has_target(json_t *langs, const char *code, const char *target)
{
    size_t i, k;
    json_t *l, *t;
    json_array_foreach(langs, i, l) {
        if (strcmp(json_string_value(json_object_get(l, "code")), code) != 0)
            continue;
        json_array_foreach(json_object_get(l, "targets"), k, t)
            if (!strcmp(json_string_value(t), target))
                return 1;
    }
    return 0;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_languages(void **state)
{
    (void)state;
    reply r = get(&srv, "/languages");
    assert_int_equal(r.status, 200);
    json_t *langs = reply_json(&r);
    reply_free(&r);
    assert_true(has_target(langs, "en", "fr"));
    assert_true(has_target(langs, "de", "en"));
    assert_true(has_target(langs, "de", "fr"));       /* through en */
    assert_true(has_target(langs, "it", "fra"));
    assert_true(has_target(langs, "it", "spa"));
    assert_false(has_target(langs, "en", "de"));
    assert_false(has_target(langs, "fr", "en"));
    json_decref(langs);
}

static void test_pair_routing(void **state)
{
    (void)state;
    char *lt = by_pair("de", "en"), *named = by_model("de-en", TEXT, NULL);
    assert_string_equal(lt, named);
    free(lt);
    free(named);
    json_t *j = call("/translate", "{\"text\": \"" TEXT "\", \"source\": \"de\", \"target\": \"en\"}", 200);
    assert_string_equal(json_string_value(json_object_get(j, "model")), "de-en");
    assert_null(json_object_get(j, "pivot"));
    json_decref(j);
}

static void test_pivot(void **state)
{
    (void)state;
    char *mid = by_model("de-en", TEXT, NULL), *want = by_model("en-fr", mid, NULL), *got = by_pair("de", "fr");
    print_message("    de -> en: %s\n    en -> fr: %s\n", mid, got);
    assert_string_equal(got, want);
    json_t *j = call("/translate", "{\"text\": \"" TEXT "\", \"source\": \"de\", \"target\": \"fr\"}", 200);
    json_t *pivot = json_object_get(j, "pivot");
    assert_non_null(pivot);
    assert_string_equal(json_string_value(json_object_get(pivot, "language")), "en");
    assert_string_equal(json_string_value(json_array_get(json_object_get(pivot, "models"), 0)), "de-en");
    assert_string_equal(json_string_value(json_array_get(json_object_get(pivot, "models"), 1)), "en-fr");
    assert_string_equal(json_string_value(json_object_get(j, "model")), "en-fr");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0),
                                                          "text")), want);
    json_decref(j);
    free(mid);
    free(want);
    free(got);
}

/* A glossary through a pivot: the request's target term goes into the pivot
 * text as it is and comes out of the second leg unchanged (random weights:
 * only the constraints can put it there).  A glossary of the first leg's own
 * pair is not what a de -> fr request names, so it is not asked for here. */
static void test_pivot_glossary(void **state)
{
    (void)state;
    json_t *j = call("/translate", "{\"text\": \"" TEXT "\", \"source\": \"de\", \"target\": \"fr\", "
                                   "\"glossary\": {\"" TEXT "\": \"passerelles\"}}", 200);
    assert_non_null(json_object_get(j, "pivot"));
    const char *t = json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0), "text"));
    print_message("    de -> en -> fr with the glossary {\"%s\": \"passerelles\"}: %s\n", TEXT, t);
    assert_non_null(t);
    assert_non_null(strstr(t, "passerelles"));
    json_decref(j);
}

/* Pivots under concurrency: the second leg is submitted from the first leg's
 * done() on a scheduler thread while other requests come and go (the TSan
 * run of this test is `make tsan TSAN_TESTS=test_routing`). */
#define PIVOT_THREADS 4
#define PIVOT_EACH    12
#define PIVOT_EACH_TSAN 4   /* 16 pivots, 32 legs: ~40 s less of CI's TSan run */

typedef struct {
    const char *want;
    int         each, bad;
} pivot_arg;

static void *pivot_client(void *p)
{
    pivot_arg *a = p;
    for (int i = 0; i < a->each; i++) {
        const char *body = i % 2 ? "{\"q\": \"" TEXT "\", \"source\": \"de\", \"target\": \"fr\"}"
                                 : "{\"text\": \"" TEXT "\", \"source\": \"de\", \"target\": \"fr\"}";
        reply r = post(&srv, "/translate", body);
        json_t *j = r.status == 200 ? reply_json(&r) : NULL;
        const char *t = json_string_value(json_object_get(j, "translatedText"));
        if (!t)
            t = json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0), "text"));
        a->bad += !t || strcmp(t, a->want) != 0;
        json_decref(j);
        reply_free(&r);
    }
    return NULL;
}

static void test_pivot_concurrent(void **state)
{
    (void)state;
    char *mid = by_model("de-en", TEXT, NULL), *want = by_model("en-fr", mid, NULL);
    pthread_t th[PIVOT_THREADS];
    pivot_arg args[PIVOT_THREADS];
    int each = getenv("MTSERVE_TSAN") ? PIVOT_EACH_TSAN : PIVOT_EACH;
    for (int i = 0; i < PIVOT_THREADS; i++) {
        args[i] = (pivot_arg){.want = want, .each = each};
        assert_int_equal(pthread_create(&th[i], NULL, pivot_client, &args[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < PIVOT_THREADS; i++) {
        pthread_join(th[i], NULL);
        bad += args[i].bad;
    }
    print_message("    %d pivoted requests from %d clients, %d wrong\n", PIVOT_THREADS * each, PIVOT_THREADS, bad);
    assert_int_equal(bad, 0);
    free(mid);
    free(want);
}

static void test_unreachable_pair(void **state)
{
    (void)state;
    json_t *j = call("/translate", "{\"q\": \"x\", \"source\": \"en\", \"target\": \"de\"}", 400);
    assert_non_null(strstr(json_string_value(json_object_get(j, "error")), "not available"));
    json_decref(j);
    j = call("/translate", "{\"q\": \"x\", \"source\": \"xx\", \"target\": \"fr\"}", 400);
    assert_non_null(strstr(json_string_value(json_object_get(j, "error")), "xx is not supported"));
    json_decref(j);
}

static void test_multilingual_listing(void **state)
{
    (void)state;
    reply r = get(&srv, "/models");
    json_t *j = reply_json(&r);
    reply_free(&r);
    size_t i;
    json_t *m;
    int seen = 0;
    json_array_foreach(json_object_get(j, "models"), i, m) {
        json_t *tl = json_object_get(m, "target_languages");
        if (!strcmp(json_string_value(json_object_get(m, "id")), "multi")) {
            assert_int_equal(json_array_size(tl), 2);
            assert_string_equal(json_string_value(json_array_get(tl, 0)), "fra");
            assert_string_equal(json_string_value(json_array_get(tl, 1)), "spa");
            seen = 1;
        } else {
            assert_null(tl);
        }
        assert_string_equal(json_string_value(json_object_get(m, "format")), "safetensors");
    }
    assert_true(seen);
    json_decref(j);
}

static void test_multilingual_target(void **state)
{
    (void)state;
    json_t *j = call("/translate", "{\"text\": \"x\", \"model\": \"multi\"}", 400);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "fra, spa"));
    json_decref(j);
    j = call("/translate", "{\"text\": \"x\", \"model\": \"multi\", \"target\": \"de\"}", 400);
    msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    assert_non_null(strstr(msg, "cannot translate into 'de'"));
    assert_non_null(strstr(msg, "fra, spa"));
    json_decref(j);
    char *fr = by_model("multi", TEXT, "fr"), *fra = by_model("multi", TEXT, "fra"), *lt = by_pair("it", "es");
    char *spa = by_model("multi", TEXT, "spa");
    assert_string_equal(fr, fra);
    assert_string_equal(lt, spa);
    assert_string_not_equal(fra, spa);                    /* the token reaches the model */
    free(fr);
    free(fra);
    free(lt);
    free(spa);
}

static void done_cb(srv_decode_job *job) { (void)job; }

/* The server's reply for target t equals the engine's decode of [token] + source
 * ids, through the same pipeline the server uses, loaded here in-process. */
static void test_multilingual_matches_engine(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/multi", tmp);
    mt_model *m;
    mt_err err = {0};
    assert_int_equal(mt_model_load(dir, NULL, &m, &err), MT_OK);
    mt_session_params sp = mt_session_default_params(m);
    mt_session *s;
    assert_int_equal(mt_session_new(m, &sp, &s, &err), MT_OK);
    const int32_t tokens[2] = {MULTI_FRA, MULTI_SPA};
    const char *codes[2] = {"fra", "spa"};
    for (int k = 0; k < 2; k++) {
        srv_tr_model tm = {.tok = mt_model_tokenizer(m), .eos_id = mt_model_get_info(m)->eos_id,
                           .max_src_len = sp.max_src_len, .has_lang = 1, .lang_id = tokens[k]};
        srv_tr_params tp = {.split = 1};
        assert_int_equal(mt_decode_params_resolve(m, &sp, NULL, &tp.dp, &err), MT_OK);    /* the model's defaults */
        const char *text = TEXT;
        srv_tr *t;
        assert_int_equal(srv_tr_new(&tm, &text, 1, &tp, &t, &err), MT_OK);
        srv_decode_job *job = srv_tr_job(t);
        job->done = done_cb;
        srv_session_decode(s, job);
        assert_int_equal(job->status, MT_OK);
        srv_tr_result r;
        assert_int_equal(srv_tr_finish(t, &r, &err), MT_OK);
        int n_src = 0;
        const int32_t *src = srv_tr_source(t, 0, &n_src);
        assert_int_equal(src[0], tokens[k]);              /* the token first ... */
        int32_t plain[64];
        int n_plain = 0;
        assert_int_equal(mt_tokenizer_encode(mt_model_tokenizer(m), TEXT, strlen(TEXT), 0, plain, 64, &n_plain,
                                             &err), MT_OK);
        assert_int_equal(n_src, n_plain + 1);             /* ... then the text's own ids */
        assert_memory_equal(src + 1, plain, sizeof *plain * (size_t)n_plain);
        char *served = by_model("multi", TEXT, codes[k]);
        print_message("    %s: %s\n", codes[k], served);
        assert_string_equal(served, r.alts[0]);
        free(served);
        srv_tr_results_free(&r, 1);
        srv_tr_free(t);
    }
    mt_session_free(s);
    mt_model_free(m);
}

/* The directory of the generated OPUS-MT models (as tests/test_opus.c finds it). */
static void opus_dir(char *out, size_t cap)
{
    const char *env = getenv("MT_OPUS_DIR");
    char bin[1024];
    snprintf(bin, sizeof bin, "%s", bin_path());
    if (env && *env)
        snprintf(out, cap, "%s", env);
    else
        snprintf(out, cap, "%s/opus-mt", dirname(bin));
}

static void test_forms(void **state)
{
    (void)state;
    char root[1024], a[4][1200];
    opus_dir(root, sizeof root);
    snprintf(a[0], sizeof a[0], "mg-pt=%s/en-mg/pytorch", root);
    snprintf(a[1], sizeof a[1], "mg-npz=%s/en-mg/marian", root);
    snprintf(a[2], sizeof a[2], "mg-st=%s/en-mg/safetensors-f32", root);
    snprintf(a[3], sizeof a[3], "big=%s/tc-big-fr-en/safetensors-f16", root);
    /* Under TSan (make tsan) the three en-mg forms only: converting tc-big's
     * 230M F16 weights instrumented took ~60 s of CI and races nothing the
     * smaller forms' loading does not; the plain run serves all four. */
    int tsan = getenv("MTSERVE_TSAN") != NULL, n_models = tsan ? 3 : 4;
    const char *args[] = {"--model", a[0], "--model", a[1], "--model", a[2], "--model", a[3],
                          "--threads", "2", NULL};
    if (tsan) {
        args[6] = "--threads";
        args[7] = "2";
        args[8] = NULL;
    }
    server s2;
    assert_int_equal(server_start(&s2, args), 0);
    reply r = get(&s2, "/models");
    json_t *j = reply_json(&r);
    reply_free(&r);
    static const char *const want[4][2] = {{"mg-pt", "pytorch"}, {"mg-npz", "marian-npz"},
                                           {"mg-st", "safetensors"}, {"big", "safetensors"}};
    assert_int_equal(json_array_size(json_object_get(j, "models")), (size_t)n_models);
    for (int i = 0; i < n_models; i++) {
        json_t *m = json_array_get(json_object_get(j, "models"), (size_t)i);
        assert_string_equal(json_string_value(json_object_get(m, "id")), want[i][0]);
        assert_string_equal(json_string_value(json_object_get(m, "format")), want[i][1]);
    }
    json_decref(j);
    char *text[3];
    for (int i = 0; i < 3; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"model\": \"%s\", \"text\": \"The program is free software.\", "
                 "\"max_length\": 12, \"beam_size\": 1}", want[i][0]);
        reply t = post(&s2, "/translate", body);
        assert_int_equal(t.status, 200);
        char why[256];
        text[i] = reply_text(&t, why, sizeof why);
        if (!text[i])
            print_message("%s: %s\n", want[i][0], why);
        assert_non_null(text[i]);
        reply_free(&t);
    }
    print_message("    en-mg (random weights): %s\n", text[0]);
    assert_string_equal(text[0], text[1]);
    assert_string_equal(text[0], text[2]);
    for (int i = 0; i < 3; i++)
        free(text[i]);
    if (!tsan) {
        reply t = post(&s2, "/translate", "{\"model\": \"big\", \"text\": \"Bonjour.\", \"max_length\": 8}");
        assert_int_equal(t.status, 200);
        reply_free(&t);
    }
    assert_int_equal(server_stop(&s2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_languages),
        cmocka_unit_test(test_pair_routing),
        cmocka_unit_test(test_pivot),
        cmocka_unit_test(test_pivot_glossary),
        cmocka_unit_test(test_pivot_concurrent),
        cmocka_unit_test(test_unreachable_pair),
        cmocka_unit_test(test_multilingual_listing),
        cmocka_unit_test(test_multilingual_target),
        cmocka_unit_test(test_multilingual_matches_engine),
        cmocka_unit_test(test_forms),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
