/* test_opus.c: the engine against the PyTorch reference on random-weight models
 * of the real published OPUS-MT configurations (en-mg, tc-big-fr-en) and a
 * synthetic one with every config variant (separate vocabularies, untied
 * lm_head, gelu, normalize_embedding, no embedding scale), in every file form.
 *
 * The models are regenerated at build time by tests/gen_opus.c (`make
 * opus-models`, into <build>/opus-mt/<model>/<form>/); the expected outputs are
 * committed, written by models/recipe/opus_fixtures.py
 * (tests/fixtures/opus-mt/<model>/expected.json; format and formula:
 * tests/fixtures/opus-mt/README.md).  For each (model, form) row below, and
 * each source sentence of the fixture:
 *
 *   - the tokenizer's ids equal the reference's (the form's own vocabulary
 *     files: vocab.json, or Marian's .yml);
 *   - greedy and beam-4 ids (max_length from the fixture) are identical, the
 *     beam score within score_rel; the greedy output detokenizes to the
 *     reference's text (MarianTokenizer v4 rules);
 *   - the first decoder step's logits: the argmax (pad excluded) is the same,
 *     the logsumexp (pad excluded) and the logits at the fixture's fixed ids
 *     within logit_rel * max(1, max |logit|) of that step.
 *
 * Each (model, form) is generated for its own test, by build/tests/gen_opus
 * (beside $MTSERVE_BIN: <dir>/tests/gen_opus; else build/tests/gen_opus) into
 * a scratch directory <dir>/opus-scratch.XXXXXX that the test's teardown
 * removes, failed or not: every form of the three models at once is 2.2 GB of
 * disk, one at a time at most 323 MB (tc-big-fr-en F32), for ~1 s of
 * generation a row.  (`make opus-models` still writes the forms that
 * tests/test_routing.c serves.)
 */
#include <errno.h>
#include <ftw.h>
#include <spawn.h>
#include <sys/wait.h>
#include <libgen.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "mt.h"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif
/* Under a sanitizer every row runs its first case only (the point there is memory
 * errors on each loader's path); under valgrind (50x slower) also, and the
 * tc-big rows (335 MB of weights each) are skipped. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define FIX_DIR  "tests/fixtures/opus-mt"
#define MAX_IDS  256

typedef struct {
    const char *model, *form;
} row;

/* Every generated (model, form) but variants/marian (test_marian_gelu_refused). */
static const row ROWS[] = {
    {"en-mg", "safetensors-f32"},        {"en-mg", "safetensors-f16"},
    {"en-mg", "pytorch"},                {"en-mg", "marian"},
    {"tc-big-fr-en", "safetensors-f32"}, {"tc-big-fr-en", "safetensors-f16"},
    {"tc-big-fr-en", "pytorch"},         {"tc-big-fr-en", "marian"},
    {"variants", "safetensors-f32"},     {"variants", "safetensors-f16"},
    {"variants", "pytorch"},
};

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* The build directory: that of $MTSERVE_BIN (the make test convention), else build. */
static const char *build_dir(void)
{
    static char dir[4096];
    const char *bin = getenv("MTSERVE_BIN");
    if (dir[0])
        return dir;
    if (bin && *bin) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s", bin);
        snprintf(dir, sizeof dir, "%s", dirname(tmp));
    } else {
        snprintf(dir, sizeof dir, "build");
    }
    return dir;
}

/* One row's scratch: the directory made for it and the form's directory inside. */
typedef struct {
    const row *r;
    char       scratch[4200], dir[4400];
} job;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* gen_opus --forms <form> <fixture> <scratch>/<model>: 0 when it wrote the form. */
static int generate_form(job *j)
{
    char gen[4200], fix[512], out[4300];
    snprintf(gen, sizeof gen, "%s/tests/gen_opus", build_dir());
    snprintf(j->scratch, sizeof j->scratch, "%s/opus-scratch.XXXXXX", build_dir());
    if (!mkdtemp(j->scratch)) {
        print_message("    mkdtemp %s: %s\n", j->scratch, strerror(errno));
        j->scratch[0] = 0;
        return -1;
    }
    snprintf(fix, sizeof fix, "%s/%s", FIX_DIR, j->r->model);
    snprintf(out, sizeof out, "%s/%s", j->scratch, j->r->model);
    snprintf(j->dir, sizeof j->dir, "%s/%s", out, j->r->form);
    char *argv[] = {gen, "--forms", (char *)j->r->form, fix, out, NULL};
    extern char **environ;
    pid_t pid;
    int status = 0;
    if (posix_spawn(&pid, gen, NULL, NULL, argv, environ) != 0) {
        print_message("    cannot run %s: %s (make test builds it)\n", gen, strerror(errno));
        return -1;
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        print_message("    %s --forms %s %s failed (status %d)\n", gen, j->r->form, fix, status);
        return -1;
    }
    return 0;
}

/* Teardown: the scratch directory goes, whatever the test did. */
static int remove_scratch(void **state)
{
    job *j = *state;
    if (j->scratch[0] && nftw(j->scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        print_message("    could not remove %s: %s\n", j->scratch, strerror(errno));
    j->scratch[0] = 0;
    return 0;
}

/* expected.json of a model, parsed once. */
static struct {
    const char *model;
    json_t     *j;
} cache[8];

static json_t *expected(const char *model)
{
    for (int i = 0; i < 8; i++) {
        if (cache[i].model && !strcmp(cache[i].model, model))
            return cache[i].j;
        if (!cache[i].model) {
            char path[512];
            json_error_t je;
            snprintf(path, sizeof path, "%s/%s/expected.json", FIX_DIR, model);
            json_t *j = json_load_file(path, 0, &je);
            if (!j)
                fail_msg("%s:%d: %s", path, je.line, je.text);
            cache[i].model = model;
            cache[i].j = j;
            return j;
        }
    }
    fail_msg("too many models");
    return NULL;
}

static double num(json_t *o, const char *key)
{
    json_t *j = json_object_get(o, key);
    if (!json_is_number(j))
        fail_msg("expected.json: '%s' missing", key);
    return json_number_value(j);
}

static void print_ids(const char *what, const int32_t *ids, int n)
{
    char line[2048];
    int at = snprintf(line, sizeof line, "    %s:", what);
    for (int i = 0; i < n && at < (int)sizeof line - 16; i++)
        at += snprintf(line + at, sizeof line - (size_t)at, " %d", ids[i]);
    print_message("%s\n", line);
}

static void test_row(void **state)
{
    job *j = *state;
    const row *r = j->r;
    if (RUNNING_ON_VALGRIND && !strcmp(r->model, "tc-big-fr-en")) {
        print_message("[  SKIP    ] under valgrind: the tc-big rows are too slow\n");
        skip();
    }
    struct timespec g0, g1;
    clock_gettime(CLOCK_MONOTONIC, &g0);
    if (generate_form(j) != 0 || !exists(j->dir))
        fail_msg("%s/%s was not generated", r->model, r->form);
    clock_gettime(CLOCK_MONOTONIC, &g1);
    const char *dir = j->dir;
    json_t *ex = expected(r->model);
    const char *set = json_string_value(json_object_get(json_object_get(ex, "forms"), r->form));
    assert_non_null(set);
    json_t *res = json_object_get(json_object_get(ex, "results"), set);
    json_t *cases = json_object_get(ex, "cases"), *rcases = json_object_get(res, "cases");
    json_t *tol = json_object_get(ex, "tolerance"), *fixed = json_object_get(ex, "fixed_ids");
    double logit_tol = num(tol, "logit_rel"), score_tol = num(tol, "score_rel");
    int max_len = (int)num(ex, "max_length"), beams = (int)num(ex, "num_beams");
    int n_cases = (int)json_array_size(cases);
    assert_true(n_cases > 0 && (size_t)n_cases == json_array_size(rcases));
    if (SANITIZED || RUNNING_ON_VALGRIND)
        n_cases = 1;

    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mt_err err = {0};
    mt_model *m = NULL;
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = 2;
    if (mt_model_load(dir, &mp, &m, &err) != MT_OK)
        fail_msg("load %s: %s", dir, err.msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const mt_model_info *info = mt_model_get_info(m);
    assert_int_equal(info->d_model, (int)num(ex, "d_model"));
    assert_int_equal(info->vocab_size, (int)num(ex, "decoder_vocab_size"));
    assert_int_equal(info->src_vocab_size, (int)num(ex, "vocab_size"));
    assert_int_equal(info->enc_layers, (int)num(ex, "encoder_layers"));
    assert_int_equal(info->dec_layers, (int)num(ex, "decoder_layers"));
    int V = info->vocab_size, pad = info->pad_id;

    mt_session *s = NULL;
    mt_session_params sp = mt_session_default_params(m);
    sp.max_batch = beams;
    sp.max_src_len = MAX_IDS;
    sp.max_tgt_len = max_len;
    if (mt_session_new(m, &sp, &s, &err) != MT_OK)
        fail_msg("session: %s", err.msg);

    float *logits = malloc(sizeof(float) * (size_t)max_len * (size_t)V);
    assert_non_null(logits);
    int bad = 0;
    double worst_logit = 0, worst_score = 0;
    for (int i = 0; i < n_cases; i++) {
        json_t *c = json_array_get(cases, (size_t)i), *rc = json_array_get(rcases, (size_t)i);
        const char *text = json_string_value(json_object_get(c, "text"));
        int32_t src[MAX_IDS], got[MAX_IDS], ref[MAX_IDS];
        int ns = ids_of(json_object_get(c, "src_ids"), src, MAX_IDS), n = 0;

        /* the tokenizer of this form's files */
        if (mt_tokenizer_encode(mt_model_tokenizer(m), text, strlen(text), 0, got, MAX_IDS, &n, &err) != MT_OK)
            fail_msg("encode: %s", err.msg);
        if (n != ns || memcmp(got, src, sizeof(int32_t) * (size_t)n)) {
            print_message("  case %d: source ids differ\n", i);
            print_ids("reference", src, ns);
            print_ids("engine", got, n);
            bad++;
        }

        /* greedy */
        const int32_t *srcp = src;
        mt_decode_params dp = mt_decode_default_params();
        dp.beam_size = 1;
        dp.lengths.max_length = max_len;
        mt_hyp h;
        if (mt_generate(s, &srcp, &ns, 1, &dp, &h, &err) != MT_OK)
            fail_msg("greedy: %s", err.msg);
        int nr = ids_of(json_object_get(rc, "greedy_ids"), ref, MAX_IDS);
        if (h.n_ids != nr || memcmp(h.ids, ref, sizeof(int32_t) * (size_t)nr)) {
            print_message("  case %d: greedy ids differ\n", i);
            print_ids("reference", ref, nr);
            print_ids("engine", h.ids, h.n_ids);
            bad++;
        }
        char *dtext = NULL;
        if (mt_tokenizer_decode(mt_model_tokenizer(m), h.ids, h.n_ids, &dtext, &err) != MT_OK)
            fail_msg("decode: %s", err.msg);
        const char *wtext = json_string_value(json_object_get(rc, "greedy_text"));
        if (!wtext || strcmp(dtext, wtext)) {
            print_message("  case %d: greedy text differs:\n    reference: %s\n    engine:    %s\n", i, wtext, dtext);
            bad++;
        }
        free(dtext);
        mt_hyps_free(&h, 1);

        /* beam */
        dp.beam_size = beams;
        dp.n_best = 1;
        if (mt_generate(s, &srcp, &ns, 1, &dp, &h, &err) != MT_OK)
            fail_msg("beam: %s", err.msg);
        nr = ids_of(json_object_get(rc, "beam_ids"), ref, MAX_IDS);
        double sref = num(rc, "beam_score"), se = fabs(h.score - sref) / fmax(1.0, fabs(sref));
        worst_score = fmax(worst_score, se);
        if (h.n_ids != nr || memcmp(h.ids, ref, sizeof(int32_t) * (size_t)nr) || se > score_tol) {
            print_message("  case %d: beam-%d best differs (score %.6f, reference %.6f)\n", i, beams, h.score, sref);
            print_ids("reference", ref, nr);
            print_ids("engine", h.ids, h.n_ids);
            bad++;
        }
        mt_hyps_free(&h, 1);

        /* the first decoder step's logits, teacher-forced on the greedy output */
        nr = ids_of(json_object_get(rc, "greedy_ids"), ref, MAX_IDS);
        if (mt_score(s, src, ns, ref, nr, NULL, logits, &err) != MT_OK)
            fail_msg("score: %s", err.msg);
        json_t *fs = json_object_get(rc, "first_step");
        double scale = num(fs, "max_abs"), lim = logit_tol * scale;
        int am = -1;
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < V; v++)
            if (v != pad && logits[v] > mx)
                mx = logits[v], am = v;
        for (int v = 0; v < V; v++)
            if (v != pad)
                sum += exp((double)logits[v] - mx);
        double lse = mx + log(sum), e = fabs(lse - num(fs, "logsumexp"));
        worst_logit = fmax(worst_logit, e / scale);
        if (am != (int)num(fs, "argmax") || e > lim) {
            print_message("  case %d: first step: argmax %d (reference %d), logsumexp %.6f (reference %.6f)\n", i,
                          am, (int)num(fs, "argmax"), lse, num(fs, "logsumexp"));
            bad++;
        }
        json_t *fl = json_object_get(fs, "logits");
        for (size_t k = 0; k < json_array_size(fixed); k++) {
            int id = (int)json_integer_value(json_array_get(fixed, k));
            double want = json_number_value(json_array_get(fl, k)), d = fabs(logits[id] - want);
            worst_logit = fmax(worst_logit, d / scale);
            if (d > lim) {
                print_message("  case %d: first-step logit of id %d: %.7f, reference %.7f\n", i, id, logits[id], want);
                bad++;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t2);
    print_message("  [%s %s] %s weights (%s), %d cases: generated in %.2f s, load %.2f s, decode %.2f s; first-step "
                  "logits max err %.2g of the step's scale (tolerance %.2g), beam score max rel err %.2g\n", r->model,
                  r->form, info->dtype, set, n_cases, (g1.tv_sec - g0.tv_sec) + (g1.tv_nsec - g0.tv_nsec) * 1e-9,
                  (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
                  (t2.tv_sec - t1.tv_sec) + (t2.tv_nsec - t1.tv_nsec) * 1e-9, worst_logit, logit_tol, worst_score);
    free(logits);
    mt_session_free(s);
    mt_model_free(m);
    assert_int_equal(bad, 0);
}

/* The variants model's Marian form has transformer-ffn-activation "gelu".
 * Marian's gelu is x * sigmoid(1.702 x), not the erf gelu Hugging Face's
 * converter maps it to; the engine implements neither form for Marian
 * releases, so marian.c refuses it at load, naming the setting: that refusal
 * is what is checked.  It comes from model.yml, before any tensor is read, so
 * the generated model.npz holds the options alone (gen.json "marian_weights":
 * false; the vocabularies, decoder.yml and .spm files are all there). */
static void test_marian_gelu_refused(void **state)
{
    job *j = *state;
    if (generate_form(j) != 0 || !exists(j->dir))
        fail_msg("variants/marian was not generated");
    const char *dir = j->dir;
    mt_model *m = NULL;
    mt_err err = {0};
    mt_status st = mt_model_load(dir, NULL, &m, &err);
    print_message("    %s: %s\n", mt_status_name(st), err.msg);
    assert_int_equal(st, MT_ERR_UNSUPPORTED);
    assert_null(m);
    assert_non_null(strstr(err.msg, "transformer-ffn-activation"));
    assert_non_null(strstr(err.msg, "gelu"));
}

static char names[sizeof ROWS / sizeof ROWS[0]][96];
static const row GELU = {"variants", "marian"};
static job jobs[sizeof ROWS / sizeof ROWS[0] + 1];

int main(void)
{
    size_t nr = sizeof ROWS / sizeof ROWS[0];
    struct CMUnitTest tests[sizeof jobs / sizeof jobs[0]];
    size_t n = 0;
    for (size_t i = 0; i < nr; i++) {
        jobs[n].r = &ROWS[i];
        snprintf(names[n], sizeof names[n], "%s [%s]", ROWS[i].model, ROWS[i].form);
        tests[n] = (struct CMUnitTest){.name = names[n], .test_func = test_row, .teardown_func = remove_scratch,
                                       .initial_state = &jobs[n]};
        n++;
    }
    jobs[n].r = &GELU;
    tests[n] = (struct CMUnitTest){.name = "variants [marian]: gelu refused", .test_func = test_marian_gelu_refused,
                                   .teardown_func = remove_scratch, .initial_state = &jobs[n]};
    n++;
    int rc = _cmocka_run_group_tests("test_opus", tests, n, NULL, NULL);
    for (int i = 0; i < 8; i++)
        json_decref(cache[i].j);
    return rc;
}
