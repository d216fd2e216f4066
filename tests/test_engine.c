/* test_engine.c: parity of the C engine with the PyTorch reference fixtures
 * (tests/fixtures/<model>/, written by models/recipe/fixtures.py), plus the
 * engine's own invariants: incremental == teacher-forced, batch == alone,
 * session reuse, and no allocation inside the decoding loop.
 *
 * Models: tiny (always), en-fr (fails if models/en-fr exists without its
 * fixtures; skipped with a reason while models/en-fr does not exist), fr-en
 * (run when models/fr-en exists, failing without tests/fixtures/fr-en; absent,
 * not skipped, otherwise), and an extra model named by the environment.
 * Tolerances: logits |c - ref| <= LOGIT_TOL * max(1, |ref|); log-probs and
 * beam scores the same; attention weights ATTN_TOL absolute.
 */
#include <errno.h>
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
#include <jansson.h>

#include "harness.h"
#include "mt.h"
#include "kernels/parallel.h"
#include "kernels/kernels.h"
#include "model/mt_internal.h"     /* the packed weights' k blocks */
#include "util/check.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif
#define VALGRIND_CASES 12     /* under valgrind (50x slower) only the first cases run */
/* Under AddressSanitizer (make asan) the first 48 cases: the point there is
 * memory errors on every path, and all 215 x 2 models took over half an hour. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ASAN_CASES 48       /* TSan too: the point there is the threads, not every case */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_CASES 48
#endif
#endif

#define LOGIT_TOL 1e-4
#define SCORE_TOL 1e-4
#define ATTN_TOL  1e-5
#define MAX_CASES 1024

#include "alloc_count.h"
#include "ref_params.h"

/* ---- fixtures --------------------------------------------------------------------- */
typedef struct {
    const char *name;
    char        model_dir[256], fix_dir[256];
    int         loaded, skip;
    char        why[1024];
    mt_model   *m;
    mt_session *s;
    json_t     *cases[MAX_CASES];
    int         n_cases, n_loaded;   /* used, parsed */
    int         V;
} ctx;

/* tiny, en-fr, fr-en, and an optional extra model given by MT_EXTRA_MODEL=DIR
 * and MT_EXTRA_FIXTURES=DIR (e.g. a random model of another shape, or a
 * candidate export: models/Makefile's finish-* checks theirs this way). */
static ctx CTX[] = {{.name = "tiny"}, {.name = "en-fr"}, {.name = "fr-en"}, {.name = "extra"}};

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static int load_cases(ctx *c)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cases.jsonl", c->fix_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0 && c->n_cases < MAX_CASES) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        if (j)
            c->cases[c->n_cases++] = j;
    }
    free(line);
    fclose(f);
    c->n_loaded = c->n_cases;
    return c->n_cases > 0;
}

/* Load model + fixtures once per model; sets c->skip/why or fails the test. */
static ctx *get_ctx(void **state)
{
    ctx *c = *state;
    if (c->loaded)
        return c;
    c->loaded = 1;
    snprintf(c->model_dir, sizeof c->model_dir, "models/%s", c->name);
    snprintf(c->fix_dir, sizeof c->fix_dir, "tests/fixtures/%s", c->name);
    if (!strcmp(c->name, "extra")) {
        const char *md = getenv("MT_EXTRA_MODEL"), *fd = getenv("MT_EXTRA_FIXTURES");
        if (!md || !fd) {
            c->skip = 1;
            snprintf(c->why, sizeof c->why, "MT_EXTRA_MODEL / MT_EXTRA_FIXTURES not set: no extra model");
            return c;
        }
        snprintf(c->model_dir, sizeof c->model_dir, "%s", md);
        snprintf(c->fix_dir, sizeof c->fix_dir, "%s", fd);
    }
    if (!exists(c->model_dir)) {
        c->skip = 1;
        snprintf(c->why, sizeof c->why, "%s does not exist (not exported yet): %s parity skipped", c->model_dir,
                 c->name);
        return c;
    }
    char lj[300];
    snprintf(lj, sizeof lj, "%s/logits.json", c->fix_dir);
    if (!exists(lj) || !load_cases(c)) {
        c->skip = -1;
        snprintf(c->why, sizeof c->why, "%s exists but its fixtures %s/{cases.jsonl,logits.json} are missing: "
                 "run `make -C models fixtures`", c->model_dir, c->fix_dir);
        return c;
    }
    mt_err err = {0};
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = 1;
    if (mt_model_load(c->model_dir, &mp, &c->m, &err) != MT_OK) {
        c->skip = -1;
        snprintf(c->why, sizeof c->why, "load %s: %s", c->model_dir, err.msg);
        return c;
    }
    mt_session_params sp = mt_session_default_params(c->m);
    sp.max_batch = 16;
    sp.max_tgt_len = 256 < mt_model_get_info(c->m)->max_positions ? 256 : mt_model_get_info(c->m)->max_positions;
    if (mt_session_new(c->m, &sp, &c->s, &err) != MT_OK) {
        c->skip = -1;
        snprintf(c->why, sizeof c->why, "session: %s", err.msg);
        return c;
    }
    c->V = mt_model_get_info(c->m)->vocab_size;
    if (RUNNING_ON_VALGRIND && c->n_cases > VALGRIND_CASES) {
        print_message("  [%s] under valgrind: only the first %d of %d cases\n", c->name, VALGRIND_CASES, c->n_cases);
        c->n_cases = VALGRIND_CASES;
    }
#ifdef ASAN_CASES
    if (c->n_cases > ASAN_CASES) {
        print_message("  [%s] under AddressSanitizer: only the first %d of %d cases\n", c->name, ASAN_CASES, c->n_cases);
        c->n_cases = ASAN_CASES;
    }
#endif
    return c;
}

/* Every test starts with this: skip (with the reason printed) or fail. */
#define CTX_OR_RETURN(c)                                                   \
    ctx *c = get_ctx(state);                                               \
    if (c->skip > 0) {                                                     \
        print_message("[  SKIP    ] %s\n", c->why);                        \
        skip();                                                            \
    }                                                                      \
    if (c->skip < 0)                                                       \
        fail_msg("%s", c->why)

static int case_src(const ctx *c, int i, int32_t *src)
{
    return ids_of(json_object_get(c->cases[i], "src_ids"), src, 1024);
}

static int case_maxlen(const ctx *c, int i)
{
    return (int)json_integer_value(json_object_get(c->cases[i], "max_length"));
}

static double rel_err(double a, double b) { return fabs(a - b) / (fabs(b) > 1 ? fabs(b) : 1); }

/* ---- parity tests ---------------------------------------------------------------- */
static void test_tokenizer_src_ids(void **state)
{
    CTX_OR_RETURN(c);
    int bad = 0;
    for (int i = 0; i < c->n_cases; i++) {
        int32_t ref[1024], got[1024];
        int n_ref = case_src(c, i, ref), n = 0;
        const char *text = json_string_value(json_object_get(c->cases[i], "text"));
        mt_err err = {0};
        assert_int_equal(mt_tokenizer_encode(mt_model_tokenizer(c->m), text, strlen(text), 0, got, 1024, &n, &err),
                         MT_OK);
        if (n != n_ref || memcmp(got, ref, sizeof(int32_t) * (size_t)n) != 0) {
            print_message("  case %d: tokenizer ids differ\n", i);
            bad++;
        }
    }
    print_message("  [%s] src_ids identical: %d/%d\n", c->name, c->n_cases - bad, c->n_cases);
    assert_int_equal(bad, 0);
}

/* mt_score on the greedy output vs the teacher-forced fixtures: top-5 logits and log-probs. */
static void test_teacher_forced(void **state)
{
    CTX_OR_RETURN(c);
    int V = c->V;
    double worst_logit = 0, worst_lp = 0;
    long n_logits = 0, n_lp = 0;
    float *logits = malloc(sizeof(float) * 256 * (size_t)V), lp[256];
    for (int i = 0; i < c->n_cases; i++) {
        int32_t src[1024], tgt[256];
        int ns = case_src(c, i, src), nt = ids_of(json_object_get(c->cases[i], "greedy_ids"), tgt, 256);
        mt_err err = {0};
        assert_int_equal(mt_score(c->s, src, ns, tgt, nt, lp, logits, &err), MT_OK);
        json_t *ti = json_object_get(c->cases[i], "top5_ids"), *tv = json_object_get(c->cases[i], "top5_logits"),
               *tl = json_object_get(c->cases[i], "tf_logprobs");
        for (int t = 0; t < nt; t++) {
            for (int k = 0; k < 5; k++) {
                int id = (int)json_integer_value(json_array_get(json_array_get(ti, (size_t)t), (size_t)k));
                double ref = json_number_value(json_array_get(json_array_get(tv, (size_t)t), (size_t)k));
                double e = rel_err(logits[(long)t * V + id], ref);
                worst_logit = e > worst_logit ? e : worst_logit;
                n_logits++;
            }
            double e = rel_err(lp[t], json_number_value(json_array_get(tl, (size_t)t)));
            worst_lp = e > worst_lp ? e : worst_lp;
            n_lp++;
        }
    }
    free(logits);
    print_message("  [%s] top-5 logits: %ld compared, max rel err %.3g; tf log-probs: %ld, max rel err %.3g\n",
                  c->name, n_logits, worst_logit, n_lp, worst_lp);
    /* fixture logits are rounded to 6 decimals: allow that on top */
    assert_true(worst_logit <= LOGIT_TOL + 1e-6);
    assert_true(worst_lp <= LOGIT_TOL);
}

/* Full logit rows in logits.bin. */
static void test_full_rows(void **state)
{
    CTX_OR_RETURN(c);
    char path[512];
    snprintf(path, sizeof path, "%s/logits.json", c->fix_dir);
    json_error_t je;
    json_t *idx = json_load_file(path, 0, &je);
    assert_non_null(idx);
    assert_int_equal(json_integer_value(json_object_get(idx, "vocab_size")), c->V);
    json_t *rows = json_object_get(idx, "rows");
    snprintf(path, sizeof path, "%s/logits.bin", c->fix_dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    int V = c->V, n = (int)json_array_size(rows);
    float *ref = malloc(sizeof(float) * (size_t)V), *logits = malloc(sizeof(float) * 256 * (size_t)V);
    double worst = 0;
    for (int r = 0; r < n; r++) {
        json_t *e = json_array_get(rows, (size_t)r);
        int ci = (int)json_integer_value(json_object_get(e, "case")), pos = (int)json_integer_value(json_object_get(e, "pos"));
        long row = (long)json_integer_value(json_object_get(e, "row"));
        assert_int_equal(fseek(f, row * V * (long)sizeof(float), SEEK_SET), 0);
        assert_int_equal(fread(ref, sizeof(float), (size_t)V, f), (size_t)V);
        int32_t src[1024], tgt[256];
        int ns = case_src(c, ci, src), nt = ids_of(json_object_get(c->cases[ci], "greedy_ids"), tgt, 256);
        assert_true(pos < nt);
        assert_int_equal(mt_score(c->s, src, ns, tgt, nt, NULL, logits, NULL), MT_OK);
        for (int v = 0; v < V; v++) {
            double er = rel_err(logits[(long)pos * V + v], ref[v]);
            worst = er > worst ? er : worst;
        }
    }
    fclose(f);
    free(ref);
    free(logits);
    json_decref(idx);
    print_message("  [%s] full logit rows: %d x %d, max rel err %.3g\n", c->name, n, V, worst);
    assert_true(n > 0);
    assert_true(worst <= LOGIT_TOL);
}

/* Greedy decoding of case i in session s into *h; 1 when its ids are the fixture's. */
static int greedy_case(const ctx *c, mt_session *s, int i, mt_hyp *h)
{
    int32_t src[1024], ref[256];
    int ns = case_src(c, i, src), nr = ids_of(json_object_get(c->cases[i], "greedy_ids"), ref, 256);
    const int32_t *sp = src;
    mt_decode_params dp = ref_params();
    dp.beam_size = 1;
    dp.lengths.max_length = case_maxlen(c, i);
    mt_err err = {0};
    assert_int_equal(mt_generate(s, &sp, &ns, 1, &dp, h, &err), MT_OK);
    return h->n_ids == nr && memcmp(h->ids, ref, sizeof(int32_t) * (size_t)nr) == 0;
}

static void test_greedy(void **state)
{
    CTX_OR_RETURN(c);
    int same_ids = 0, same_text = 0;
    for (int i = 0; i < c->n_cases; i++) {
        mt_hyp h;
        mt_err err = {0};
        if (greedy_case(c, c->s, i, &h))
            same_ids++;
        else
            print_message("  case %d: greedy ids differ\n", i);
        char *text = NULL;
        assert_int_equal(mt_tokenizer_decode(mt_model_tokenizer(c->m), h.ids, h.n_ids, &text, &err), MT_OK);
        if (strcmp(text, json_string_value(json_object_get(c->cases[i], "greedy_text"))) == 0)
            same_text++;
        else
            print_message("  case %d: greedy text differs: '%s'\n", i, text);
        free(text);
        mt_hyps_free(&h, 1);
    }
    print_message("  [%s] greedy: identical ids %d/%d, identical text %d/%d\n", c->name, same_ids, c->n_cases,
                  same_text, c->n_cases);
    assert_int_equal(same_ids, c->n_cases);
    assert_int_equal(same_text, c->n_cases);
}

/* Compare n-best hypotheses h[0..n) with the fixture's beam4 list. Returns 1 if all equal. */
static int beam_equal(json_t *ref, const mt_hyp *h, int nbest, double *worst, int *best_ok)
{
    int n = (int)json_array_size(ref), ok = 1;
    *best_ok = 0;
    for (int j = 0; j < n && j < nbest; j++) {
        json_t *r = json_array_get(ref, (size_t)j);
        int32_t ids[256];
        int nr = ids_of(json_object_get(r, "ids"), ids, 256);
        double e = fabs(h[j].score - json_number_value(json_object_get(r, "score")));
        int same = h[j].n_ids == nr && memcmp(h[j].ids, ids, sizeof(int32_t) * (size_t)nr) == 0 && e <= SCORE_TOL;
        *worst = e > *worst ? e : *worst;
        if (j == 0)
            *best_ok = same;
        ok &= same;
    }
    return ok;
}

static void test_beam(void **state)
{
    CTX_OR_RETURN(c);
    int all_ok = 0, best_ok = 0;
    double worst = 0;
    for (int i = 0; i < c->n_cases; i++) {
        int32_t src[1024];
        int ns = case_src(c, i, src), b_ok;
        const int32_t *sp = src;
        mt_decode_params dp = ref_params();
        dp.beam_size = 4;
        dp.n_best = 4;
        dp.lengths.max_length = case_maxlen(c, i);
        mt_hyp h[4];
        assert_int_equal(mt_generate(c->s, &sp, &ns, 1, &dp, h, NULL), MT_OK);
        int ok = beam_equal(json_object_get(c->cases[i], "beam4"), h, 4, &worst, &b_ok);
        all_ok += ok;
        best_ok += b_ok;
        if (!ok)
            print_message("  case %d: beam-4 n-best differs (best %s)\n", i, b_ok ? "same" : "DIFFERENT");
        mt_hyps_free(h, 4);
    }
    print_message("  [%s] beam-4: best hypothesis identical %d/%d, all 4 hypotheses identical %d/%d, "
                  "max score err %.3g\n", c->name, best_ok, c->n_cases, all_ok, c->n_cases, worst);
    assert_int_equal(best_ok, c->n_cases);
    assert_int_equal(all_ok, c->n_cases);
}

static double attn_cmp(json_t *ref, const float *got, long *n)
{
    double worst = 0;
    size_t L = json_array_size(ref);
    for (size_t l = 0; l < L; l++) {
        json_t *jl = json_array_get(ref, l);
        for (size_t h = 0; h < json_array_size(jl); h++) {
            json_t *jh = json_array_get(jl, h);
            for (size_t i = 0; i < json_array_size(jh); i++) {
                json_t *ji = json_array_get(jh, i);
                for (size_t j = 0; j < json_array_size(ji); j++) {
                    double e = fabs(*got++ - json_number_value(json_array_get(ji, j)));
                    worst = e > worst ? e : worst;
                    (*n)++;
                }
            }
        }
    }
    return worst;
}

static void test_attention(void **state)
{
    CTX_OR_RETURN(c);
    char path[512];
    snprintf(path, sizeof path, "%s/attention.json", c->fix_dir);
    json_error_t je;
    json_t *all = json_load_file(path, 0, &je);
    assert_non_null(all);
    double worst = 0;
    long n = 0;
    for (size_t k = 0; k < json_array_size(all); k++) {
        json_t *e = json_array_get(all, k);
        int32_t src[1024], tin[256];
        int ns = ids_of(json_object_get(e, "src_ids"), src, 1024), nt = ids_of(json_object_get(e, "tgt_in"), tin, 256);
        mt_attention a;
        mt_err err = {0};
        assert_int_equal(mt_attention_run(c->s, src, ns, tin, nt, &a, &err), MT_OK);
        double w1 = attn_cmp(json_object_get(e, "encoder"), a.enc, &n);
        double w2 = attn_cmp(json_object_get(e, "decoder"), a.dec, &n);
        double w3 = attn_cmp(json_object_get(e, "cross"), a.cross, &n);
        worst = fmax(worst, fmax(w1, fmax(w2, w3)));
        /* decoder self-attention is lower-triangular */
        for (int l = 0; l < a.dec_layers; l++)
            for (int h = 0; h < a.heads; h++)
                for (int i = 0; i < nt; i++)
                    for (int j = i + 1; j < nt; j++)
                        assert_true(a.dec[(((long)l * a.heads + h) * nt + i) * nt + j] == 0.0f);
        mt_attention_free(&a);
    }
    print_message("  [%s] attention: %zu inputs, %ld weights, max abs err %.3g\n", c->name, json_array_size(all),
                  n, worst);
    json_decref(all);
    assert_true(n > 0);
    assert_true(worst <= ATTN_TOL);
}

/* ---- engine invariants ------------------------------------------------------------ */
/* Incremental greedy ids == argmax (pad excluded) of the one-pass teacher-forced logits. */
static void test_incremental_equals_full(void **state)
{
    CTX_OR_RETURN(c);
    int V = c->V, pad = mt_model_get_info(c->m)->pad_id, checked = 0;
    float *logits = malloc(sizeof(float) * 256 * (size_t)V);
    for (int i = 0; i < c->n_cases; i++) {
        int32_t src[1024];
        int ns = case_src(c, i, src), ml = case_maxlen(c, i);
        const int32_t *sp = src;
        mt_decode_params dp = ref_params();
        dp.beam_size = 1;
        dp.lengths.max_length = ml;
        mt_hyp h;
        assert_int_equal(mt_generate(c->s, &sp, &ns, 1, &dp, &h, NULL), MT_OK);
        assert_int_equal(mt_score(c->s, src, ns, h.ids, h.n_ids, NULL, logits, NULL), MT_OK);
        for (int t = 0; t < h.n_ids; t++) {
            if (t == ml - 2)
                break;                               /* forced eos, not an argmax */
            const float *row = logits + (long)t * V;
            int best = -1;
            for (int v = 0; v < V; v++)
                if (v != pad && (best < 0 || row[v] > row[best]))
                    best = v;
            assert_int_equal(best, h.ids[t]);
            checked++;
        }
        mt_hyps_free(&h, 1);
    }
    free(logits);
    print_message("  [%s] incremental == teacher-forced argmax at %d positions\n", c->name, checked);
}

/* Sources decoded in padded batches of different lengths == decoded alone (the fixtures). */
static void test_batch_invariance(void **state)
{
    CTX_OR_RETURN(c);
    int batches = 0, same = 0, total = 0;
    for (int beam = 1; beam <= 4; beam += 3) {
        int per = 16 / beam;
        for (int i0 = 0; i0 < c->n_cases; i0 += per) {
            int n = c->n_cases - i0 < per ? c->n_cases - i0 : per;
            static int32_t src[16][1024];
            const int32_t *sp[16];
            int ns[16], ml = case_maxlen(c, i0);
            for (int k = 0; k < n; k++) {
                ns[k] = case_src(c, i0 + k, src[k]);
                sp[k] = src[k];
                assert_int_equal(case_maxlen(c, i0 + k), ml);
            }
            mt_decode_params dp = ref_params();
            dp.beam_size = beam;
            dp.n_best = beam;
            dp.lengths.max_length = ml;
            mt_hyp h[16 * 4];
            assert_int_equal(mt_generate(c->s, sp, ns, n, &dp, h, NULL), MT_OK);
            for (int k = 0; k < n; k++) {
                json_t *cs = c->cases[i0 + k];
                int ok, b_ok;
                double w = 0;
                if (beam == 1) {
                    int32_t ref[256];
                    int nr = ids_of(json_object_get(cs, "greedy_ids"), ref, 256);
                    ok = h[k].n_ids == nr && !memcmp(h[k].ids, ref, sizeof(int32_t) * (size_t)nr);
                } else {
                    ok = beam_equal(json_object_get(cs, "beam4"), h + k * beam, beam, &w, &b_ok);
                }
                if (!ok)
                    print_message("  case %d differs inside a batch (beam %d)\n", i0 + k, beam);
                same += ok;
                total++;
            }
            mt_hyps_free(h, n * beam);
            batches++;
        }
    }
    print_message("  [%s] batched decoding: %d batches, %d/%d results identical to decoding alone\n", c->name,
                  batches, same, total);
    assert_int_equal(same, total);
}

/* A second run on the same session (after other work) gives bit-identical results. */
static void test_session_reuse(void **state)
{
    CTX_OR_RETURN(c);
    int32_t src[1024];
    int i = c->n_cases > 50 ? 50 : c->n_cases - 1, ns = case_src(c, i, src);
    const int32_t *sp = src;
    mt_decode_params dp = ref_params();
    dp.beam_size = 4;
    dp.n_best = 4;
    dp.lengths.max_length = case_maxlen(c, i);
    mt_hyp a[4], b[4];
    assert_int_equal(mt_generate(c->s, &sp, &ns, 1, &dp, a, NULL), MT_OK);
    for (int k = 0; k < 3; k++) {                  /* dirty the session */
        int32_t s2[1024];
        int n2 = case_src(c, k + 5, s2);
        const int32_t *p2 = s2;
        mt_hyp t[4];
        assert_int_equal(mt_generate(c->s, &p2, &n2, 1, &dp, t, NULL), MT_OK);
        mt_hyps_free(t, 4);
    }
    assert_int_equal(mt_generate(c->s, &sp, &ns, 1, &dp, b, NULL), MT_OK);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(a[k].n_ids, b[k].n_ids);
        assert_memory_equal(a[k].ids, b[k].ids, sizeof(int32_t) * (size_t)a[k].n_ids);
        assert_true(a[k].score == b[k].score);
    }
    mt_hyps_free(a, 4);
    mt_hyps_free(b, 4);
}

/* ---- mt_session_trim ---------------------------------------------------------------- */
#define TRIM_N 12               /* sources of the sampled / greedy batch */

/* One run of every decoding path over the same sources: greedy, two
 * sampling settings (token scores on) and beam 4 as one batch of TRIM_N,
 * and a greedy decode with a lexical constraint (the word tables).  out:
 * TRIM_N + 4 + 1 hypotheses; returns how many. */
static int trim_decode(const ctx *c, mt_session *s, mt_hyp *out)
{
    static int32_t src[TRIM_N][1024];
    const int32_t *sp[TRIM_N];
    int ns[TRIM_N], n = c->n_cases < TRIM_N ? c->n_cases : TRIM_N;
    mt_decode_params dp[TRIM_N];
    const mt_decode_params *each[TRIM_N];
    for (int i = 0; i < n; i++) {
        int k = (i + 5) % c->n_cases;
        ns[i] = case_src(c, k, src[i]);
        sp[i] = src[i];
        dp[i] = ref_params();
        dp[i].beam_size = 1;
        dp[i].lengths.max_length = case_maxlen(c, k);
        dp[i].token_scores = 1;
        dp[i].sampling.enabled = i % 3 != 0;
        dp[i].sampling.top_k = i % 3 == 1 ? 10 : 0;
        dp[i].sampling.top_p = i % 3 == 2 ? 0.9f : 0;
        dp[i].sampling.temperature = i % 3 == 2 ? 0.8f : 0;
        dp[i].sampling.seed = (uint64_t)i + 1;
        each[i] = &dp[i];
    }
    assert_int_equal(mt_generate_each(s, sp, ns, n, each, out, NULL), MT_OK);
    mt_decode_params bp = ref_params();
    bp.beam_size = 4;
    bp.n_best = 4;
    bp.lengths.max_length = case_maxlen(c, 5 % c->n_cases);
    assert_int_equal(mt_generate(s, &sp[0], &ns[0], 1, &bp, out + n, NULL), MT_OK);
    const mt_model_info *info = mt_model_get_info(c->m);
    int32_t term[2] = {info->vocab_size / 2, info->vocab_size / 3};
    for (int t = 0; t < 2; t++)
        if (term[t] == info->pad_id || term[t] == info->eos_id)
            term[t]++;
    mt_constraint con = {.src_start = 0, .src_end = 1, .ids = term, .n_ids = 2};
    mt_decode_params gp = ref_params();
    gp.beam_size = 1;
    gp.lengths.max_length = 32;
    gp.constraints = &con;
    gp.n_constraints = 1;
    assert_int_equal(mt_generate(s, &sp[0], &ns[0], 1, &gp, out + n + 4, NULL), MT_OK);
    return n + 5;
}

static void assert_hyps_equal(const mt_hyp *a, const mt_hyp *b, int n)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(a[i].n_ids, b[i].n_ids);
        assert_memory_equal(a[i].ids, b[i].ids, sizeof(int32_t) * (size_t)a[i].n_ids);
        assert_true(a[i].score == b[i].score);
        assert_true(!a[i].token_logp == !b[i].token_logp);
        if (a[i].token_logp)
            assert_memory_equal(a[i].token_logp, b[i].token_logp, sizeof(float) * (size_t)a[i].n_ids);
    }
}

/* A session that decoded and was then trimmed gives its pages back and
 * decodes exactly as before, and as a new session does: the trim leaves it
 * as mt_session_new made it.  With a sequence in flight it refuses. */
static void test_session_trim(void **state)
{
    CTX_OR_RETURN(c);
    mt_session_params sp = mt_session_default_params(c->m);    /* get_ctx's shape */
    sp.max_batch = 16;
    sp.max_tgt_len = 256 < mt_model_get_info(c->m)->max_positions ? 256 : mt_model_get_info(c->m)->max_positions;
    mt_session *fresh = NULL;
    assert_int_equal(mt_session_new(c->m, &sp, &fresh, NULL), MT_OK);
    size_t new_res = mt_session_resident(fresh);
    assert_int_equal(mt_session_trim(fresh, 0, NULL), MT_OK);  /* nothing touched: nothing changes */
    assert_int_equal(mt_session_resident(fresh), new_res);

    mt_hyp a[TRIM_N + 5], b[TRIM_N + 5], f[TRIM_N + 5];
    int n = trim_decode(c, c->s, a);
    size_t used = mt_session_resident(c->s);

    int seq;                                    /* in flight: refused, nothing given back */
    int32_t one[1024];
    int n1 = case_src(c, 5 % c->n_cases, one);
    mt_decode_params dp = ref_params();
    assert_int_equal(mt_seq_start(c->s, one, n1, &dp, &seq, NULL), MT_OK);
    mt_err err = {0};
    assert_int_equal(mt_session_trim(c->s, 0, &err), MT_ERR_BUSY);
    assert_true(mt_session_resident(c->s) >= used);
    mt_seq_cancel(c->s, seq);

    assert_int_equal(mt_session_trim(c->s, (size_t)-1, NULL), MT_OK);   /* under the caller's minimum: kept */
    assert_true(mt_session_resident(c->s) >= used);
    assert_int_equal(mt_session_trim(c->s, 0, &err), MT_OK);
    size_t trimmed = mt_session_resident(c->s);
    print_message("  [%s] session of %zu kB: %zu kB resident new, %zu kB after decoding, %zu kB trimmed\n", c->name,
                  mt_session_bytes(c->s) >> 10, new_res >> 10, used >> 10, trimmed >> 10);
    assert_true(used > new_res);
    assert_int_equal(trimmed, new_res);         /* the pages mt_session_new touches, no more */

    assert_int_equal(trim_decode(c, c->s, b), n);
    assert_int_equal(trim_decode(c, fresh, f), n);
    assert_hyps_equal(a, b, n);
    assert_hyps_equal(a, f, n);
    mt_hyps_free(a, n);
    mt_hyps_free(b, n);
    mt_hyps_free(f, n);
    mt_session_free(fresh);
}

/* Allocations during mt_generate must not depend on the number of decoding
 * steps: the only ones are the result copies (one per hypothesis). */
static void test_no_alloc_in_decode_loop(void **state)
{
    CTX_OR_RETURN(c);
#if !HAVE_ALLOC_COUNTER
    print_message("[  SKIP    ] allocation counter disabled under AddressSanitizer\n");
    skip();
#else
    if (RUNNING_ON_VALGRIND) {      /* valgrind replaces malloc, also ours: the counter sees nothing */
        print_message("[  SKIP    ] allocation counter inert under valgrind\n");
        skip();
    }
    /* The case whose greedy output is longest, so that max_length 30 really
     * runs more steps than max_length 4 (a trained model stops early on "..."). */
    int best = 0, best_len = -1;
    for (int i = 0; i < c->n_cases; i++) {
        int32_t g[256];
        int n = ids_of(json_object_get(c->cases[i], "greedy_ids"), g, 256);
        if (n > best_len)
            best = i, best_len = n;
    }
    int32_t src[1024];
    int ns = case_src(c, best, src);
    const int32_t *sp = src;
    for (int beam = 1; beam <= 4; beam += 3) {
        long counts[2];
        int lens[2] = {4, 30}, steps[2];
        for (int k = 0; k < 2; k++) {
            mt_decode_params dp = ref_params();
            dp.beam_size = beam;
            dp.n_best = beam;
            dp.lengths.max_length = lens[k];
            mt_hyp h[4];
            n_allocs = 0;
            counting = 1;
            mt_status st = mt_generate(c->s, &sp, &ns, 1, &dp, h, NULL);
            counting = 0;
            assert_int_equal(st, MT_OK);
            counts[k] = n_allocs;
            steps[k] = h[0].n_ids;
            mt_hyps_free(h, beam);
        }
        print_message("  [%s] beam %d: %ld allocations for %d steps, %ld for %d steps\n", c->name, beam,
                      counts[0], steps[0], counts[1], steps[1]);
        assert_true(steps[1] > steps[0]);
        assert_int_equal(counts[0], counts[1]);
        assert_int_equal(counts[1], beam);        /* exactly the result arrays */
    }
#endif
}

/* ---- continuous batching ---------------------------------------------------------- */
/* Does sequence result h (n_best hyps) equal case i's fixture for this beam? */
static int seq_result_ok(const ctx *c, int i, int beam, const mt_hyp *h)
{
    json_t *cs = c->cases[i];
    if (beam == 1) {
        int32_t ref[256];
        int nr = ids_of(json_object_get(cs, "greedy_ids"), ref, 256);
        return h[0].n_ids == nr && !memcmp(h[0].ids, ref, sizeof(int32_t) * (size_t)nr);
    }
    double w = 0;
    int b_ok;
    return beam_equal(json_object_get(cs, "beam4"), h, beam, &w, &b_ok);
}

/* Sequences join at different steps (one or two per step, greedy and beam-4
 * mixed in one session), some are cancelled half-way; every sequence that
 * runs to the end gives exactly the ids of decoding it alone (the fixtures),
 * and mt_step allocates nothing. */
static void test_staggered_joins(void **state)
{
    CTX_OR_RETURN(c);
    mt_session *s = c->s;
    int seq_case[16], seq_beam[16], seq_born[16], next = 0, steps = 0, same = 0, total = 0, cancelled = 0;
    int max_rows = 0;
    long step_allocs = 0;
    for (int k = 0; k < 16; k++)
        seq_case[k] = -1;
    assert_int_equal(mt_session_seqs(s), 0);
    while (next < c->n_cases || mt_session_seqs(s) > 0) {
        for (int j = 0; j < 1 + steps % 2 && next < c->n_cases; j++) {        /* 1 or 2 joins per step */
            int32_t src[1024];
            int ns = case_src(c, next, src), beam = next % 3 == 0 ? 4 : 1, id;
            mt_decode_params dp = ref_params();
            dp.beam_size = beam;
            dp.n_best = beam;
            dp.lengths.max_length = case_maxlen(c, next);
            mt_err err = {0};
            mt_status st = mt_seq_start(s, src, ns, &dp, &id, &err);
            if (st == MT_ERR_BUSY)
                break;
            assert_int_equal(st, MT_OK);
            assert_true(id >= 0 && id < 16 && seq_case[id] < 0);
            seq_case[id] = next++;
            seq_beam[id] = beam;
            seq_born[id] = steps;
        }
        if (mt_session_rows_used(s) > max_rows)
            max_rows = mt_session_rows_used(s);
        mt_encode_started(s);             /* once per source; OpenBLAS may allocate there for small matrices */
#if HAVE_ALLOC_COUNTER
        n_allocs = 0;
        counting = 1;
#endif
        mt_step(s);
#if HAVE_ALLOC_COUNTER
        counting = 0;
        step_allocs += n_allocs;
#endif
        steps++;
        for (int id = 0; id < 16; id++) {
            if (seq_case[id] < 0)
                continue;
            if (!mt_seq_finished(s, id)) {
                if (seq_case[id] % 7 == 5 && steps - seq_born[id] == 3) {      /* a client that went away */
                    mt_seq_cancel(s, id);
                    seq_case[id] = -1;
                    cancelled++;
                }
                continue;
            }
            mt_hyp h[4];
            assert_int_equal(mt_seq_take(s, id, h, NULL), MT_OK);
            int ok = seq_result_ok(c, seq_case[id], seq_beam[id], h);
            if (!ok)
                print_message("  case %d (beam %d) differs when joining at step %d\n", seq_case[id], seq_beam[id],
                              seq_born[id]);
            same += ok;
            total++;
            mt_hyps_free(h, seq_beam[id]);
            seq_case[id] = -1;
        }
        assert_true(steps < 100000);
    }
    print_message("  [%s] staggered joins: %d steps, up to %d rows, %d cancelled, %d/%d results identical to "
                  "decoding alone, %ld allocations in mt_step\n", c->name, steps, max_rows, cancelled, same, total,
                  step_allocs);
    assert_int_equal(same, total);
    assert_true(total + cancelled == c->n_cases && cancelled > 0);
    assert_int_equal(mt_session_rows_used(s), 0);
#if HAVE_ALLOC_COUNTER
    if (!RUNNING_ON_VALGRIND)
        assert_int_equal(step_allocs, 0);
#endif
}

/* Rows full -> MT_ERR_BUSY (nothing changed); a cancel frees rows that a new
 * sequence then uses, and its result is still that of decoding it alone. */
static void test_cancel_frees_rows(void **state)
{
    CTX_OR_RETURN(c);
    mt_session *s = c->s;
    int32_t src[1024];
    int ids[4], i = c->n_cases > 20 ? 20 : 0, ns = case_src(c, i, src);
    mt_decode_params dp = ref_params();
    dp.beam_size = 4;
    dp.n_best = 4;
    dp.lengths.max_length = case_maxlen(c, i);
    for (int k = 0; k < 4; k++)                              /* 4 x beam 4 = the session's 16 rows */
        assert_int_equal(mt_seq_start(s, src, ns, &dp, &ids[k], NULL), MT_OK);
    mt_step(s);
    assert_int_equal(mt_session_rows_used(s), 16);
    assert_false(mt_session_can_start(s, 1));
    int extra;
    mt_decode_params g = dp;
    g.beam_size = g.n_best = 1;
    mt_err err = {0};
    assert_int_equal(mt_seq_start(s, src, ns, &g, &extra, &err), MT_ERR_BUSY);
    assert_int_equal(mt_session_seqs(s), 4);
    mt_seq_cancel(s, ids[1]);
    mt_seq_cancel(s, ids[1]);                                /* twice: a no-op */
    assert_int_equal(mt_session_rows_used(s), 12);
    int fresh;
    assert_int_equal(mt_seq_start(s, src, ns, &dp, &fresh, NULL), MT_OK);   /* the freed rows */
    int left = 4;
    while (left > 0) {
        mt_step(s);
        for (int k = 0; k < 4; k++) {
            int id = k == 1 ? fresh : ids[k];
            if (id >= 0 && mt_seq_finished(s, id)) {
                mt_hyp h[4];
                assert_int_equal(mt_seq_take(s, id, h, NULL), MT_OK);
                assert_true(seq_result_ok(c, i, 4, h));
                mt_hyps_free(h, 4);
                if (k == 1)
                    fresh = -1;
                else
                    ids[k] = -1;
                left--;
            }
        }
    }
    assert_int_equal(mt_session_rows_used(s), 0);
    assert_int_equal(mt_session_seqs(s), 0);
    assert_int_equal(mt_seq_take(s, 0, NULL, NULL), MT_ERR_INPUT);          /* nothing to take */
}

/* A broken engine invariant (a running sequence's row owned by another one)
 * is never recovered silently.  In an MT_ASSERT_ABORT build the step aborts,
 * naming generate.c and the line; in a release build that sequence alone
 * fails (its take: MT_ERR_INTERNAL, counted) and the session goes on. */
static void test_broken_invariant(void **state)
{
    CTX_OR_RETURN(c);
    mt_session *s = c->s;
    int32_t src[1024];
    int ns = case_src(c, 0, src), id;
    mt_decode_params dp = ref_params();
    dp.beam_size = dp.n_best = 1;
    dp.lengths.max_length = case_maxlen(c, 0);
    assert_int_equal(mt_seq_start(s, src, ns, &dp, &id, NULL), MT_OK);
    mt_step(s);
    int row = s->seqs[id].base;
    s->row.owner[row] = id + 1;                              /* the broken invariant */
    if (MT_ASSERT_ABORTS) {
        int fd[2];
        assert_int_equal(pipe(fd), 0);
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fd[1], 2);
            mt_step(s);
            _exit(0);
        }
        close(fd[1]);
        char out[4096] = {0};
        size_t got = 0;
        for (ssize_t k; got < sizeof out - 1 && (k = read(fd[0], out + got, sizeof out - 1 - got)) > 0;)
            got += (size_t)k;
        close(fd[0]);
        int wst = 0;
        assert_int_equal(waitpid(pid, &wst, 0), pid);
        assert_true(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGABRT);
        assert_non_null(strstr(out, "engine/decode/generate.c:"));
        assert_non_null(strstr(out, "assertion failed: s->row.owner[r] == id"));
        s->row.owner[row] = id;
        mt_seq_cancel(s, id);
    } else {
        unsigned long before = mt_assert_failures();
        assert_int_equal(mt_step(s), 1);
        assert_true(mt_seq_finished(s, id));
        assert_int_equal(mt_assert_failures(), before + 1);
        mt_hyp h[1];
        mt_err err = {0};
        assert_int_equal(mt_seq_take(s, id, h, &err), MT_ERR_INTERNAL);
    }
    assert_int_equal(mt_session_seqs(s), 0);
    assert_int_equal(mt_session_rows_used(s), 0);
    mt_hyp h[1];
    assert_int_equal(mt_generate(s, (const int32_t *const[]){src}, &ns, 1, &dp, h, NULL), MT_OK);
    assert_true(seq_result_ok(c, 0, 1, h));                  /* the session goes on, right */
    mt_hyps_free(h, 1);
}

/* Threads and weight storage.  (1) Two compute threads give logits
 * bit-identical to one (every output is summed in one fixed order).  (2) F16
 * weights (mt_model_params.weights): on a checkpoint stored in F16 (tiny) the
 * rounding is exact, so logits are bit-identical to F32 mode; on an F32
 * checkpoint (en-fr) the weights change by the rounding, and the greedy
 * outputs are counted against the F32 reference (not asserted equal: they are
 * a different model; bench/ compares them with PyTorch on the same rounding). */
static void scores_of(const ctx *c, mt_session *s, int n, float *logits, long per_case)
{
    for (int i = 0; i < n; i++) {
        int32_t src[1024], tgt[256];
        int ns = case_src(c, i, src), nt = ids_of(json_object_get(c->cases[i], "greedy_ids"), tgt, 256);
        assert_true((long)nt * c->V <= per_case);
        memset(logits + i * per_case, 0, sizeof(float) * (size_t)per_case);
        assert_int_equal(mt_score(s, src, ns, tgt, nt, NULL, logits + i * per_case, NULL), MT_OK);
    }
}

static void test_threads_and_f16(void **state)
{
    CTX_OR_RETURN(c);
    int n = c->n_cases < 6 ? c->n_cases : 6;
    long per_case = 1;      /* logit rows for the longest greedy output of the n cases */
    for (int i = 0; i < n; i++) {
        long nt = (long)json_array_size(json_object_get(c->cases[i], "greedy_ids"));
        per_case = nt > per_case ? nt : per_case;
    }
    per_case *= c->V;
    float *a = malloc(sizeof(float) * (size_t)(n * per_case)), *b = malloc(sizeof(float) * (size_t)(n * per_case));
    scores_of(c, c->s, n, a, per_case);
    mt_par_set_threads(2);
    scores_of(c, c->s, n, b, per_case);
    assert_memory_equal(a, b, sizeof(float) * (size_t)(n * per_case));
    mt_par_set_threads(1);
    mt_err err = {0};

    /* k blocks sized for a 2 KB L2 (mt_model_params.cache_l2): every product
     * of these shapes runs in blocks of 16 inputs, with the AVX-512 kernel's
     * panels and the AVX2 one's (at 8 KB the AVX2 block held all of tiny's 32
     * inputs: no blocking to test); the same bits, on 1 and 2 threads, as the
     * blocks the machine's L2 gives (none at these shapes) */
    mt_model_params mk = mt_model_default_params();
    mk.cache_l2 = 2 << 10;
    mt_model *mb;
    mt_session *sb;
    assert_int_equal(mt_model_load(c->model_dir, &mk, &mb, &err), MT_OK);
    assert_int_equal(c->m->lm_pk.kc, mt_k_block_k(c->m->d, 0, mt_k_l2_bytes()));
    assert_int_equal(mb->lm_pk.kc, mt_k_block_k(mb->d, 0, 2 << 10));
    assert_true(mb->lm_pk.kc > 0 && mb->lm_pk.kc < mb->d);
    mt_session_params spb = mt_session_default_params(mb);
    spb.max_tgt_len = 256 < mt_model_get_info(mb)->max_positions ? 256 : mt_model_get_info(mb)->max_positions;
    assert_int_equal(mt_session_new(mb, &spb, &sb, &err), MT_OK);
    for (int threads = 1; threads <= 2; threads++) {
        mt_par_set_threads(threads);
        memset(b, 0, sizeof(float) * (size_t)(n * per_case));
        scores_of(c, sb, n, b, per_case);
        assert_memory_equal(a, b, sizeof(float) * (size_t)(n * per_case));
    }
    mt_par_set_threads(1);
    mt_session_free(sb);
    mt_model_free(mb);

    mt_model_params mp = mt_model_default_params();
    mp.weights = MT_WEIGHTS_F16;
    mt_model *m16;
    mt_session *s16;
    assert_int_equal(mt_model_load(c->model_dir, &mp, &m16, &err), MT_OK);
    const mt_model_info *i16 = mt_model_get_info(m16), *i32 = mt_model_get_info(c->m);
    assert_string_equal(i16->weights, "F16");
    assert_string_equal(i32->weights, "F32");
    assert_true(i16->weight_bytes < i32->weight_bytes);
    mt_session_params sp = mt_session_default_params(m16);
    sp.max_tgt_len = 256 < i16->max_positions ? 256 : i16->max_positions;
    assert_int_equal(mt_session_new(m16, &sp, &s16, &err), MT_OK);
    scores_of(c, s16, n, b, per_case);
    int exact = !strcmp(i32->dtype, "F16");
    if (exact)
        assert_memory_equal(a, b, sizeof(float) * (size_t)(n * per_case));
    int same = 0, total = c->n_cases < 100 ? c->n_cases : 100;
    for (int i = 0; i < total; i++) {
        mt_hyp h;
        same += greedy_case(c, s16, i, &h);
        mt_hyps_free(&h, 1);
    }
    print_message("  [%s] 2 threads: logits bit-identical to 1; F16 weights (%zu vs %zu bytes): logits %s, greedy "
                  "ids equal to the F32 reference on %d/%d\n", c->name, i16->weight_bytes, i32->weight_bytes,
                  exact ? "bit-identical (F16 checkpoint)" : "rounded", same, total);
    if (exact)
        assert_int_equal(same, total);
    mt_session_free(s16);
    mt_model_free(m16);
    free(a), free(b);
}

/* The F16 K/V cache (mt_session_params.kv_f16) against the F32 reference.
 * K and V are rounded to half precision as they are cached (relative error
 * <= 2^-11), so logits move in their last digits: teacher-forced logit rows
 * (cross K/V rounded, widened for the whole-sequence path) must stay within
 * KV16_LOGIT_TOL of the row's largest |logit| and must not be bit-identical
 * (the cache really is F16); greedy decoding (self and cross K/V rounded,
 * the step kernels' F16 loads) must give the reference's ids wherever its
 * margin (smallest top-1 - top-2 gap of the F32 logits along the reference's
 * greedy path) exceeds KV16_MARGIN, with sums of log p within KV16_SCORE_TOL;
 * beam 4 (its rows' F16 caches copied on reorder) must agree with the F32
 * session on the hypotheses it finds, scores within KV16_SCORE_TOL.
 * Measured: logits 4.0e-4 of the row max (en-fr); a fault (K and V swapped,
 * a wrong element size, a stale row) moves them by whole units. */
#define KV16_LOGIT_TOL 5e-3
#define KV16_MARGIN    0.05
#define KV16_SCORE_TOL 0.05

/* smallest top-1 - top-2 gap over the rows [nt][V] */
static double min_margin(const float *lg, int nt, int V)
{
    double m = INFINITY;
    for (int t = 0; t < nt; t++) {
        const float *r = lg + (long)t * V;
        float a = -INFINITY, b = -INFINITY;
        for (int v = 0; v < V; v++)
            if (r[v] > a)
                b = a, a = r[v];
            else if (r[v] > b)
                b = r[v];
        m = a - b < m ? a - b : m;
    }
    return m;
}

static void test_kv_f16(void **state)
{
    CTX_OR_RETURN(c);
    mt_session_params sp = mt_session_default_params(c->m);
    sp.max_tgt_len = 256 < mt_model_get_info(c->m)->max_positions ? 256 : mt_model_get_info(c->m)->max_positions;
    sp.kv_f16 = 1;
    mt_session *s16;
    mt_err err = {0};
    assert_int_equal(mt_session_new(c->m, &sp, &s16, &err), MT_OK);
    int total = c->n_cases < 100 ? c->n_cases : 100;
    float *a = malloc(sizeof(float) * 256 * (size_t)c->V), *b = malloc(sizeof(float) * 256 * (size_t)c->V);
    double worst = 0, worst_score = 0;
    int sure = 0, sure_same = 0, same = 0;
    for (int i = 0; i < total; i++) {
        int32_t src[1024], tgt[256];
        int ns = case_src(c, i, src), nt = ids_of(json_object_get(c->cases[i], "greedy_ids"), tgt, 256);
        assert_int_equal(mt_score(c->s, src, ns, tgt, nt, NULL, a, NULL), MT_OK);
        assert_int_equal(mt_score(s16, src, ns, tgt, nt, NULL, b, NULL), MT_OK);
        for (int t = 0; t < nt; t++) {
            const float *ra = a + (long)t * c->V, *rb = b + (long)t * c->V;
            double top = 0, d = 0;
            for (int v = 0; v < c->V; v++) {
                top = fabs(ra[v]) > top ? fabs(ra[v]) : top;
                d = fabs(ra[v] - rb[v]) > d ? fabs(ra[v] - rb[v]) : d;
            }
            worst = d / top > worst ? d / top : worst;
        }
        mt_hyp h, h32;
        int eq = greedy_case(c, s16, i, &h);
        int confident = min_margin(a, nt, c->V) > KV16_MARGIN;
        same += eq, sure += confident, sure_same += confident && eq;
        if (confident && !eq)
            print_message("  case %d: F16 K/V greedy ids differ from the reference's\n", i);
        if (eq) {
            greedy_case(c, c->s, i, &h32);
            double e = fabs(h.score - h32.score);
            worst_score = e > worst_score ? e : worst_score;
            mt_hyps_free(&h32, 1);
        }
        mt_hyps_free(&h, 1);
    }
    /* beam 4: the F16 session against the F32 session */
    int nb = total < 30 ? total : 30, beam_same = 0;
    for (int i = 0; i < nb; i++) {
        int32_t src[1024];
        int ns = case_src(c, i, src);
        const int32_t *p = src;
        mt_decode_params dp = ref_params();
        dp.beam_size = 4;
        dp.lengths.max_length = case_maxlen(c, i);
        mt_hyp h32, h16;
        assert_int_equal(mt_generate(c->s, &p, &ns, 1, &dp, &h32, &err), MT_OK);
        assert_int_equal(mt_generate(s16, &p, &ns, 1, &dp, &h16, &err), MT_OK);
        if (h32.n_ids == h16.n_ids && !memcmp(h32.ids, h16.ids, sizeof(int32_t) * (size_t)h32.n_ids)) {
            beam_same++;
            double e = fabs(h32.score - h16.score);
            worst_score = e > worst_score ? e : worst_score;
        }
        mt_hyps_free(&h32, 1);
        mt_hyps_free(&h16, 1);
    }
    print_message("  [%s] F16 K/V cache: logits within %.2g of the row max; greedy ids equal to the reference on "
                  "%d/%d (%d/%d with margin > %.2g); beam 4 equal to the F32 cache on %d/%d; scores within %.2g\n",
                  c->name, worst, same, total, sure_same, sure, KV16_MARGIN, beam_same, nb, worst_score);
    assert_true(worst > 0);                      /* the cache really holds F16 */
    assert_true(worst <= KV16_LOGIT_TOL);
    assert_int_equal(sure_same, sure);
    assert_true(worst_score <= KV16_SCORE_TOL);
    assert_true(beam_same * 10 >= nb * 8);       /* most beams find the same hypothesis */
    free(a), free(b);
    mt_session_free(s16);
}

/* INT8 weights (mt_model_params.weights = MT_WEIGHTS_I8) against the PyTorch
 * reference with the same quantization (models/recipe/model.py quantize_int8,
 * fixtures int8.jsonl and int8_logits.bin by q8_fixtures.py).  The integer sums
 * are exact on both sides, but an input element on a rounding boundary may
 * quantize one step apart when the float32 activations before it differ in the
 * last bits, so logits are compared with Q8_LOGIT_TOL (relative to the row's
 * largest |logit|), log-probs with Q8_LP_TOL, and greedy ids must be equal wherever the reference's margin
 * (smallest top-1 - top-2 gap over the steps) exceeds Q8_MARGIN. */
/* Measured: full rows 2.4e-7 (tiny), 2.2e-7 (the first en-fr), 4.0e-3 (en-fr v2: one row
 * downstream of a boundary flip), 1.1e-2 (fr-en v3, the same; en-fr v3 2.3e-7); log-probs
 * 0.056, 0.055, 0.088, 0.057.  A fault (a wrong scale, a lost bias, a misplaced panel)
 * moves logits by whole units. */
#define Q8_LOGIT_TOL 2e-2     /* of the row's largest |logit| */
#define Q8_LP_TOL    0.25
#define Q8_MARGIN    0.05

static void test_int8(void **state)
{
    CTX_OR_RETURN(c);
    char path[512];
    snprintf(path, sizeof path, "%s/int8.jsonl", c->fix_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s missing: run models/recipe/q8_fixtures.py (make -C models fixtures)", path);
    mt_model_params mp = mt_model_default_params();
    mp.weights = MT_WEIGHTS_I8;
    mp.n_threads = 1;
    mt_model *m8;
    mt_session *s8;
    mt_err err = {0};
    assert_int_equal(mt_model_load(c->model_dir, &mp, &m8, &err), MT_OK);
    const mt_model_info *info = mt_model_get_info(m8);
    assert_string_equal(info->weights, "INT8");
    assert_true(info->weight_bytes < mt_model_get_info(c->m)->weight_bytes);
    mt_session_params sp = mt_session_default_params(m8);
    sp.max_tgt_len = 256 < info->max_positions ? 256 : info->max_positions;
    assert_int_equal(mt_session_new(m8, &sp, &s8, &err), MT_OK);

    /* greedy ids */
    int cases = 0, same = 0, sure = 0, sure_same = 0;
    double worst_lp = 0;
    char *line = NULL;
    size_t cap = 0;
    float *logits = malloc(sizeof(float) * 256 * (size_t)c->V);
    while (getline(&line, &cap, f) > 0) {
        json_error_t je;
        json_t *q = json_loads(line, 0, &je);
        assert_non_null(q);
        int ci = (int)json_integer_value(json_object_get(q, "i"));
        assert_true(ci < c->n_loaded);
        if (ci >= c->n_cases) {                      /* a sanitizer or valgrind run: fewer cases */
            json_decref(q);
            continue;
        }
        int32_t src[1024], ref[256], tgt_lp_n;
        int ns = case_src(c, ci, src), nr = ids_of(json_object_get(q, "greedy_ids"), ref, 256);
        const int32_t *sp8 = src;
        mt_decode_params dp = ref_params();
        dp.beam_size = 1;
        dp.lengths.max_length = case_maxlen(c, ci);
        mt_hyp h;
        assert_int_equal(mt_generate(s8, &sp8, &ns, 1, &dp, &h, &err), MT_OK);
        int eq = h.n_ids == nr && memcmp(h.ids, ref, sizeof(int32_t) * (size_t)nr) == 0;
        int confident = json_number_value(json_object_get(q, "margin")) > Q8_MARGIN;
        cases++, same += eq, sure += confident, sure_same += confident && eq;
        if (confident && !eq)
            print_message("  case %d: int8 greedy ids differ from the reference's (margin %.3g)\n", ci,
                          json_number_value(json_object_get(q, "margin")));
        mt_hyps_free(&h, 1);
        /* teacher-forced log-probs of the reference's int8 greedy ids */
        float lp[256];
        tgt_lp_n = nr;
        assert_int_equal(mt_score(s8, src, ns, ref, nr, lp, NULL, &err), MT_OK);
        json_t *tl = json_object_get(q, "tf_logprobs");
        for (int t = 0; t < tgt_lp_n; t++) {
            double e = fabs(lp[t] - json_number_value(json_array_get(tl, (size_t)t)));
            worst_lp = e > worst_lp ? e : worst_lp;
        }
        json_decref(q);
    }
    free(line);
    fclose(f);

    /* full logit rows */
    snprintf(path, sizeof path, "%s/int8_logits.json", c->fix_dir);
    json_error_t je;
    json_t *idx = json_load_file(path, 0, &je);
    assert_non_null(idx);
    json_t *rows = json_object_get(idx, "rows");
    snprintf(path, sizeof path, "%s/int8_logits.bin", c->fix_dir);
    FILE *fb = fopen(path, "rb");
    assert_non_null(fb);
    float *ref = malloc(sizeof(float) * (size_t)c->V);
    double worst = 0;
    int n_rows = 0;
    for (size_t r = 0; r < json_array_size(rows); r++) {
        json_t *e = json_array_get(rows, r);
        int ci = (int)json_integer_value(json_object_get(e, "case")), pos = (int)json_integer_value(json_object_get(e, "pos"));
        long row = (long)json_integer_value(json_object_get(e, "row"));
        if (ci >= c->n_cases)
            continue;
        assert_int_equal(fseek(fb, row * c->V * (long)sizeof(float), SEEK_SET), 0);
        assert_int_equal(fread(ref, sizeof(float), (size_t)c->V, fb), (size_t)c->V);
        /* the reference's int8 greedy ids of that case, from int8.jsonl's twin in logits.json order */
        int32_t src[1024], tgt[256];
        int ns = case_src(c, ci, src), nt = 0;
        FILE *f2 = NULL;
        snprintf(path, sizeof path, "%s/int8.jsonl", c->fix_dir);
        assert_non_null(f2 = fopen(path, "r"));
        char *l2 = NULL;
        size_t c2 = 0;
        while (getline(&l2, &c2, f2) > 0 && !nt) {
            json_t *q = json_loads(l2, 0, &je);
            if (q && json_integer_value(json_object_get(q, "i")) == ci)
                nt = ids_of(json_object_get(q, "greedy_ids"), tgt, 256);
            json_decref(q);
        }
        free(l2);
        fclose(f2);
        assert_true(pos < nt);
        assert_int_equal(mt_score(s8, src, ns, tgt, nt, NULL, logits, NULL), MT_OK);
        double scale = 1;
        for (int v = 0; v < c->V; v++)
            scale = fabs(ref[v]) > scale ? fabs(ref[v]) : scale;
        for (int v = 0; v < c->V; v++) {
            double er = fabs(logits[(long)pos * c->V + v] - ref[v]) / scale;
            worst = er > worst ? er : worst;
        }
        n_rows++;
    }
    fclose(fb);
    json_decref(idx);
    free(ref);
    free(logits);
    print_message("  [%s] INT8 (%s, %zu bytes of weights): greedy ids equal to the int8 reference's %d/%d "
                  "(%d/%d with margin > %g); log-probs max abs err %.3g; %d full rows: max err %.3g of the "
                  "row's scale\n", c->name, info->int8_kernel, info->weight_bytes, same, cases, sure_same, sure,
                  Q8_MARGIN, worst_lp, n_rows, worst);
    assert_true(cases > 0 && n_rows > 0);
    assert_int_equal(sure_same, sure);
    assert_true(worst <= Q8_LOGIT_TOL);
    assert_true(worst_lp <= Q8_LP_TOL);
    mt_session_free(s8);
    mt_model_free(m8);
}

/* mt_score_batch vs the PyTorch reference (score.jsonl, models/recipe/score_fixtures.py):
 * the C tokenizer gives the reference's ids for both sides, the batched log-probs
 * equal the reference's within LOGIT_TOL, and each pair's equal mt_score of it
 * alone bit for bit, whatever the pairs beside it (forward and reversed order;
 * the session's 16 rows make several passes). */
static void test_score_batch(void **state)
{
    CTX_OR_RETURN(c);
    char path[512];
    snprintf(path, sizeof path, "%s/score.jsonl", c->fix_dir);
    FILE *f = fopen(path, "r");
    if (!f && !strcmp(c->name, "extra")) {
        print_message("[  SKIP    ] %s: no score.jsonl (models/recipe/score_fixtures.py)\n", c->fix_dir);
        skip();
    }
    assert_non_null(f);
    enum { MAXP = 64, MAXT = 128 };
    static int32_t src[MAXP][MAXT], tgt[MAXP][MAXT];
    static float lp[MAXP][MAXT], lp_rev[MAXP][MAXT], alone[MAXT];
    static double ref[MAXP][MAXT];
    int ns[MAXP], nt[MAXP], n = 0;
    char *line = NULL;
    size_t cap = 0;
    const mt_tokenizer *tok = mt_model_tokenizer(c->m);
    while (getline(&line, &cap, f) > 0 && n < MAXP) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        assert_non_null(j);
        int32_t ids[MAXT];
        int k;
        const char *source = json_string_value(json_object_get(j, "source"));
        const char *target = json_string_value(json_object_get(j, "target"));
        ns[n] = ids_of(json_object_get(j, "src_ids"), src[n], MAXT);
        nt[n] = ids_of(json_object_get(j, "tgt_ids"), tgt[n], MAXT);
        assert_int_equal(mt_tokenizer_encode(tok, source, strlen(source), 0, ids, MAXT, &k, NULL), MT_OK);
        assert_int_equal(k, ns[n]);
        assert_memory_equal(ids, src[n], sizeof(int32_t) * (size_t)k);
        assert_int_equal(mt_tokenizer_encode(tok, target, strlen(target), 1, ids, MAXT, &k, NULL), MT_OK);
        assert_int_equal(k, nt[n]);
        assert_memory_equal(ids, tgt[n], sizeof(int32_t) * (size_t)k);
        json_t *l = json_object_get(j, "log_probs");
        assert_int_equal((int)json_array_size(l), nt[n]);
        for (int t = 0; t < nt[n]; t++)
            ref[n][t] = json_number_value(json_array_get(l, (size_t)t));
        json_decref(j);
        n++;
    }
    free(line);
    fclose(f);
    assert_true(n >= 8);
    const int32_t *sp[MAXP], *tp[MAXP], *sp_r[MAXP], *tp_r[MAXP];
    int ns_r[MAXP], nt_r[MAXP];
    float *out[MAXP], *out_r[MAXP];
    for (int i = 0; i < n; i++) {
        sp[i] = src[i], tp[i] = tgt[i], out[i] = lp[i];
        int r = n - 1 - i;
        sp_r[i] = src[r], tp_r[i] = tgt[r], ns_r[i] = ns[r], nt_r[i] = nt[r], out_r[i] = lp_rev[r];
    }
    mt_err err = {0};
    assert_int_equal(mt_score_batch(c->s, n, sp, ns, tp, nt, out, &err), MT_OK);
    assert_int_equal(mt_score_batch(c->s, n, sp_r, ns_r, tp_r, nt_r, out_r, &err), MT_OK);
    double worst = 0;
    long cmp = 0;
    int same = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(mt_score(c->s, src[i], ns[i], tgt[i], nt[i], alone, NULL, &err), MT_OK);
        same += !memcmp(alone, lp[i], sizeof(float) * (size_t)nt[i]) &&
                !memcmp(alone, lp_rev[i], sizeof(float) * (size_t)nt[i]);
        for (int t = 0; t < nt[i]; t++, cmp++) {
            double e = rel_err(lp[i][t], ref[i][t]);
            worst = e > worst ? e : worst;
        }
    }
    print_message("  [%s] score batch: %d pairs, %ld log-probs, max rel err vs reference %.3g; equal to mt_score "
                  "alone (both orders): %d/%d\n", c->name, n, cmp, worst, same, n);
    assert_int_equal(same, n);
    assert_true(worst <= LOGIT_TOL);
    /* a bad pair is named */
    int32_t bad = -1;
    const int32_t *bp[2] = { src[0], &bad };
    int bl[2] = { ns[0], 1 };
    assert_int_equal(mt_score_batch(c->s, 2, sp, ns, bp, bl, out, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "pair 1: target"));
}

static int teardown(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof CTX / sizeof *CTX; k++) {
        mt_session_free(CTX[k].s);
        mt_model_free(CTX[k].m);
        for (int i = 0; i < CTX[k].n_loaded; i++)
            json_decref(CTX[k].cases[i]);
    }
    return 0;
}

#define PER_MODEL(fn)                                                          \
    {.name = #fn " [tiny]", .test_func = fn, .initial_state = &CTX[0]},        \
    {.name = #fn " [en-fr]", .test_func = fn, .initial_state = &CTX[1]},       \
    {.name = #fn " [fr-en]", .test_func = fn, .initial_state = &CTX[2]},       \
    {.name = #fn " [extra]", .test_func = fn, .initial_state = &CTX[3]}

int main(void)
{
    const struct CMUnitTest tests[] = {
        PER_MODEL(test_tokenizer_src_ids),
        PER_MODEL(test_teacher_forced),
        PER_MODEL(test_full_rows),
        PER_MODEL(test_greedy),
        PER_MODEL(test_beam),
        PER_MODEL(test_attention),
        PER_MODEL(test_incremental_equals_full),
        PER_MODEL(test_batch_invariance),
        PER_MODEL(test_session_reuse),
        PER_MODEL(test_session_trim),
        PER_MODEL(test_no_alloc_in_decode_loop),
        PER_MODEL(test_staggered_joins),
        PER_MODEL(test_cancel_frees_rows), PER_MODEL(test_threads_and_f16), PER_MODEL(test_int8),
        PER_MODEL(test_kv_f16), PER_MODEL(test_score_batch),
        {.name = "test_broken_invariant [tiny]", .test_func = test_broken_invariant, .initial_state = &CTX[0]},
    };
    /* The extra model's tests exist only when it is given, fr-en's only when
     * models/fr-en exists: never a standing skip. */
    /* MT_TEST_FILTER="*[tiny]" (cmocka's wildcards): `make valgrind` on the
     * tiny model alone, the same code as en-fr's at shapes valgrind runs in minutes */
    const char *filter = getenv("MT_TEST_FILTER");
    if (filter && *filter)
        cmocka_set_test_filter(filter);
    struct CMUnitTest run[sizeof tests / sizeof tests[0]];
    size_t n = 0;
    int extra = getenv("MT_EXTRA_MODEL") != NULL, fr_en = exists("models/fr-en");
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if ((extra || !strstr(tests[i].name, "[extra]")) && (fr_en || !strstr(tests[i].name, "[fr-en]")))
            run[n++] = tests[i];
    return _cmocka_run_group_tests("test_engine", run, n, NULL, teardown);
}
