/* test_gemma3.c: Gemma 3 text models (issue 54) against an independent float64
 * reference.
 *
 * Fixtures: `make gemma3-models` runs tests/llm/gen_gemma3.py into
 * <build>/gemma3/ (random weights at the published gemma-3-1b-it and
 * gemma-3-4b-it text configs, 2 layers at the published widths: layer 0
 * sliding_attention, layer 1 full_attention, sliding_window cut to 16 so that
 * prompts of up to 40 ids cross it, a vocabulary of 8,192; the 1b at all 26
 * layers for the first-step logits; the reference is numpy float64 written from
 * modeling_gemma3's equations).  Where they live: $MT_GEMMA3_DIR, else <dir of
 * $MTSERVE_BIN>/gemma3, else build/gemma3.  A missing directory FAILS.
 *
 *  - greedy: each 2-layer model in each file form (1b: F32, F16, BF16; 4b:
 *    BF16, F16 and the multimodal layout: model_type gemma3 with a sparse
 *    text_config, language_model.* names, 2 shards, vision tensors skipped),
 *    32 prompts decoded together (8 rows) for 20 ids: IDENTICAL to the
 *    reference.  The forms hold the same values, one reference serves all.
 *    Then mt_score over prompt + reference ids: every row's argmax is the
 *    reference's id (the prefill path with its window mask), and the
 *    first-step logits of 5 prompts (1, 2, 40, 17, 33 ids) within LOGIT_TOL:
 *    the greedy margins are wide here, the logits pin the values.
 *  - the F16 K/V cache: agreement printed, a floor asserted.
 *  - full depth (1b, 26 layers, BF16, F32 held): first-step logits within
 *    LOGIT_TOL of the reference, same argmax, the step path's first id too.
 *  - tiny (hidden 64, window 4): greedy equal to the reference (the valgrind case).
 *  - configs refused, each naming its setting.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "harness.h"
#include "mt.h"
#include "llm_expect.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SAN_PROMPTS 4
#else
#define SAN_PROMPTS 0
#endif
#define MAX_PROMPTS LLM_MAX_PROMPTS
#define MAX_IDS     LLM_MAX_IDS
#define GEN         20
#define WINDOW      16       /* gen_gemma3.py TEST_WINDOW */
#define LOGIT_TOL   1e-4     /* full depth: max |engine - reference| / max |reference| */

static char root[4096];

static const char *gdir(void)
{
    return root[0] ? root : llm_set_dir(root, sizeof root, "MT_GEMMA3_DIR", "gemma3");
}

typedef llm_expected expected;

static void read_expected(const char *path, expected *e)
{
    llm_expected_read(path, "greedy", e, SAN_PROMPTS, "`make gemma3-models` (tests/llm/gen_gemma3.py)");
}

static mt_model *load(const char *sub, mt_weights w) { return llm_load(gdir(), sub, w); }
static mt_session *session(const mt_model *m, int batch, int kv_f16) { return llm_session(m, batch, 48, GEN, kv_f16); }
/* Every row of mt_score over prompt + reference ids argmaxes to the reference's id. */
static void score_rows(mt_session *s, const mt_model *m, const expected *e, const char *sub)
{
    int V = mt_model_get_info(m)->vocab_size;
    for (int i = 0; i < e->n; i++) {
        int T = e->ilen[i];
        float *lg = malloc(sizeof(float) * (size_t)V * T), lp[MAX_IDS];
        mt_err err = {0};
        if (mt_score(s, e->prompt[i], e->plen[i], e->ids[i], T, lp, lg, &err) != MT_OK)
            fail_msg("mt_score: %s", err.msg);
        for (int t = 0; t < T; t++) {
            int best = 0;
            for (int v = 1; v < V; v++)
                best = lg[(long)t * V + v] > lg[(long)t * V + best] ? v : best;
            if (best != e->ids[i][t])
                fail_msg("%s: mt_score prompt %d row %d: argmax %d, reference %d", sub, i, t, best, e->ids[i][t]);
            assert_true(lp[t] <= 0 && lp[t] > -50);
        }
        free(lg);
    }
}

/* The first-step logits of the first n prompts (file: the reference's, [n][V] float32)
 * within LOGIT_TOL (max |engine - reference| over the vocabulary / max |reference|);
 * returns the largest relative difference. */
static double logits_check(mt_session *s, const mt_model *m, const expected *e, int n, const char *file,
                           const char *label)
{
    int V = mt_model_get_info(m)->vocab_size;
    float *ref = malloc(sizeof(float) * (size_t)V * n), *lg = malloc(sizeof(float) * (size_t)V);
    FILE *f = fopen(file, "rb");
    if (!f)
        fail_msg("%s: missing: run `make gemma3-models`", file);
    assert_int_equal(fread(ref, sizeof(float), (size_t)V * n, f), (size_t)V * n);
    fclose(f);
    double worst = 0;
    for (int i = 0; i < n && i < e->n; i++) {
        const float *r = ref + (long)i * V;
        int32_t any = 0;
        float lp;
        mt_err err = {0};
        if (mt_score(s, e->prompt[i], e->plen[i], &any, 1, &lp, lg, &err) != MT_OK)
            fail_msg("mt_score: %s", err.msg);
        double maxd = 0, maxr = 0;
        for (int v = 0; v < V; v++) {
            maxd = fmax(maxd, fabs((double)lg[v] - r[v]));
            maxr = fmax(maxr, fabs((double)r[v]));
        }
        printf("   %s prompt %d (%2d ids): max |logit - ref| %.2e (max |ref| %.2f, rel %.2e)\n", label, i, e->plen[i],
               maxd, maxr, maxd / maxr);
        assert_true(maxd / maxr <= LOGIT_TOL);
        worst = fmax(worst, maxd / maxr);
    }
    free(ref);
    free(lg);
    return worst;
}

static void greedy_model(const char *name, const char *const *forms, int nforms)
{
    char path[4200], sub[256];
    expected *e = calloc(1, sizeof *e);
    snprintf(path, sizeof path, "%s/%s-2l/expected.txt", gdir(), name);
    read_expected(path, e);
    assert_true(e->n >= 32 || (SAN_PROMPTS && e->n == SAN_PROMPTS));
    int over = 0, prompt_over = 0;
    for (int i = 0; i < e->n; i++) {
        over += e->plen[i] + e->ilen[i] > WINDOW;
        prompt_over += e->plen[i] > WINDOW;
    }
    printf("   %s: %d prompts, %d of them longer than the window (%d), %d with the output\n", name, e->n,
           prompt_over, WINDOW, over);
    assert_true(prompt_over >= (SAN_PROMPTS ? 1 : 8));
    for (int f = 0; f < nforms; f++) {
        snprintf(sub, sizeof sub, "%s-2l/%s", name, forms[f]);
        mt_model *m = load(sub, MT_WEIGHTS_F32);
        mt_session *s = session(m, 8, 0);
        mt_hyp out[MAX_PROMPTS];
        int32_t eos = mt_model_get_info(m)->eos_id;
        llm_generate_all(s, e, GEN, out);
        int seq_eq, tok_eq, tok_all, bad = -1;
        llm_agreement(e, out, eos, GEN, &seq_eq, &tok_eq, &tok_all);
        for (int i = 0; i < e->n && bad < 0; i++)
            if (llm_cut(&out[i], eos, GEN) != e->ilen[i] || memcmp(out[i].ids, e->ids[i], sizeof(int32_t) * e->ilen[i]))
                bad = i;
        printf("   %-18s %s (%s): %d/%d prompts identical to the float64 reference (%d/%d ids)\n", sub,
               mt_model_get_info(m)->dtype, mt_model_get_info(m)->architecture, seq_eq, e->n, tok_eq, tok_all);
        if (bad >= 0)
            fail_msg("%s: prompt %d (%d ids) differs from the reference", sub, bad, e->plen[bad]);
        if (f == 0) {
            score_rows(s, m, e, sub);
            snprintf(path, sizeof path, "%s/%s-2l/logits.f32", gdir(), name);
            logits_check(s, m, e, 5, path, sub);
        }
        mt_hyps_free(out, e->n);
        mt_session_free(s);
        /* the F16 K/V cache: approximate, its agreement printed, a floor asserted */
        if (f == 0) {
            s = session(m, 8, 1);
            llm_generate_all(s, e, GEN, out);
            llm_agreement(e, out, eos, GEN, &seq_eq, &tok_eq, &tok_all);
            printf("   %-18s F16 K/V cache: %d/%d sequences, %d/%d ids before the first difference\n", sub, seq_eq,
                   e->n, tok_eq, tok_all);
            assert_true(2 * seq_eq >= e->n);
            mt_hyps_free(out, e->n);
            mt_session_free(s);
        }
        mt_model_free(m);
    }
    free(e);
}

/* MT_GEMMA3_FULL=1 (`make gemma3-full-check`): the fixtures of `make gemma3-full` (~3 GB),
 * with the 1b's F32 form, the 4b and the 1b at full depth; else `make gemma3-models`'s
 * (~250 MB, `make check`), whose tests are these alone (none of the others listed). */
static int full_fixtures(void) { return getenv("MT_GEMMA3_FULL") && !strcmp(getenv("MT_GEMMA3_FULL"), "1"); }

static void test_greedy_1b(void **st)
{
    (void)st;
    static const char *const forms[] = {"bf16", "f16", "f32"};
    greedy_model("gemma3-1b", forms, full_fixtures() ? 3 : 2);
}

static void test_greedy_4b(void **st)
{
    (void)st;
    static const char *const forms[] = {"bf16", "f16", "mm"};
    greedy_model("gemma3-4b", forms, 3);
}

/* The small model: greedy (8 ids) equal to the reference; cheap enough for valgrind. */
static void test_tiny(void **st)
{
    (void)st;
    char path[4200];
    expected *e = calloc(1, sizeof *e);
    snprintf(path, sizeof path, "%s/gemma3-tiny/expected.txt", gdir());
    read_expected(path, e);
    mt_model *m = load("gemma3-tiny", MT_WEIGHTS_F32);
    const mt_model_info *info = mt_model_get_info(m);
    assert_string_equal(info->architecture, "gemma3_text");
    mt_session *s = session(m, 4, 0);
    mt_hyp out[MAX_PROMPTS];
    llm_generate_all(s, e, 8, out);
    int seq_eq, tok_eq, tok_all;
    llm_agreement(e, out, info->eos_id, 8, &seq_eq, &tok_eq, &tok_all);
    printf("   gemma3-tiny: %d/%d prompts identical (%d/%d ids)\n", seq_eq, e->n, tok_eq, tok_all);
    assert_int_equal(seq_eq, e->n);
    mt_hyps_free(out, e->n);
    mt_session_free(s);
    mt_model_free(m);
    free(e);
}

static void test_logits_1b_full(void **st)
{
    (void)st;
    char path[4200];
    expected *e = calloc(1, sizeof *e);
    snprintf(path, sizeof path, "%s/gemma3-1b-full/logits.txt", gdir());
    read_expected(path, e);
    mt_model *m = load("gemma3-1b-full/bf16", MT_WEIGHTS_F32);
    int V = mt_model_get_info(m)->vocab_size;
    float *ref = malloc(sizeof(float) * (size_t)V * e->n), *lg = malloc(sizeof(float) * (size_t)V);
    snprintf(path, sizeof path, "%s/gemma3-1b-full/logits.f32", gdir());
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(ref, sizeof(float), (size_t)V * e->n, f), (size_t)V * e->n);
    fclose(f);
    mt_session *s = session(m, 1, 0);
    mt_decode_params q = mt_decode_default_params();
    q.beam_size = 1;
    q.lengths.max_length = 3;
    for (int i = 0; i < e->n; i++) {
        const float *r = ref + (long)i * V;
        int32_t any = 0;
        float lp;
        mt_err err = {0};
        if (mt_score(s, e->prompt[i], e->plen[i], &any, 1, &lp, lg, &err) != MT_OK)
            fail_msg("mt_score: %s", err.msg);
        double maxd = 0, maxr = 0;
        int a = 0, b = 0;
        for (int v = 0; v < V; v++) {
            maxd = fmax(maxd, fabs((double)lg[v] - r[v]));
            maxr = fmax(maxr, fabs((double)r[v]));
            a = lg[v] > lg[a] ? v : a;
            b = r[v] > r[b] ? v : b;
        }
        mt_hyp h;
        const int32_t *src = e->prompt[i];
        if (mt_generate(s, &src, &e->plen[i], 1, &q, &h, &err) != MT_OK)
            fail_msg("mt_generate: %s", err.msg);
        printf("   gemma3-1b-full prompt %d (%2d ids): max |logit - ref| %.2e (max |ref| %.2f, rel %.2e), argmax %d / "
               "ref %d, step path %d\n", i, e->plen[i], maxd, maxr, maxd / maxr, a, b, h.ids[0]);
        assert_true(maxd / maxr <= LOGIT_TOL);
        assert_int_equal(a, b);
        assert_int_equal(h.ids[0], b);
        mt_hyps_free(&h, 1);
    }
    mt_session_free(s);
    mt_model_free(m);
    free(ref);
    free(lg);
    free(e);
}

/* Each bad/<case> is refused with a message naming what refusal.txt says. */
static void test_refusals(void **st)
{
    (void)st;
    static const char *const cases[] = {"attn_softcap", "rope_yarn", "gelu_exact", "chunked", "bidirectional",
                                        "rope_parameters", "mm_siglip_text"};
    char dir[4200], path[4300], want[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(dir, sizeof dir, "%s/bad/%s", gdir(), cases[i]);
        snprintf(path, sizeof path, "%s/refusal.txt", dir);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        assert_non_null(fgets(want, sizeof want, f));
        fclose(f);
        want[strcspn(want, "\n")] = 0;
        mt_model *m = NULL;
        mt_err err = {0};
        mt_status s = mt_model_load(dir, NULL, &m, &err);
        printf("   %-16s -> %s\n", cases[i], err.msg);
        assert_int_not_equal(s, MT_OK);
        assert_null(m);
        if (!strstr(err.msg, want))
            fail_msg("%s: message '%s' lacks '%s'", cases[i], err.msg, want);
    }
}

int main(void)
{
    if (!llm_is_dir(gdir())) {
        fprintf(stderr, "test_gemma3: %s: no fixtures (run `make gemma3-models`: tests/llm/gen_gemma3.py)\n", gdir());
        return 1;
    }
    /* TEST_FILTER, or MT_TEST_FILTER="*[tiny]" (`make valgrind`: the small model alone) */
    const char *filter = getenv("TEST_FILTER") ? getenv("TEST_FILTER") : getenv("MT_TEST_FILTER");
    if (filter && *filter)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        {.name = "test_tiny [tiny]", .test_func = test_tiny},
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_greedy_1b),
        cmocka_unit_test(test_greedy_4b),          /* these two: the full fixtures only */
        cmocka_unit_test(test_logits_1b_full),
    };
    size_t n = sizeof tests / sizeof tests[0] - (full_fixtures() ? 0 : 2);
    return _cmocka_run_group_tests("test_gemma3", tests, n, NULL, NULL);
}
