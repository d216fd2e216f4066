/* test_llm.c: decoder-only LMs (Llama / Qwen2 / Qwen3, issue 31) against an
 * independent float64 reference.
 *
 * Fixtures: `make llm-models` runs tests/llm/gen_llm.py into <build>/llm/
 * (random weights of the TinyLlama-1.1B-Chat-v1.0, Qwen3-0.6B and
 * Qwen2.5-0.5B configs narrowed: widths / 2 or 4 and a 16,384 vocabulary, the
 * rest as published, gen_llm.py narrow(); the reference is numpy float64 written from the HF
 * modeling equations, not from the engine).  Where they live: $MT_LLM_DIR,
 * else <dir of $MTSERVE_BIN>/llm, else build/llm.  A missing directory FAILS
 * (nothing is skipped).
 *
 *  - greedy: each reduced model (2 layers of the narrowed shape) in each file form (F32, F16, BF16 safetensors and two shards
 *    + index), 32 prompts of 1..40 ids decoded together (8 rows, sequences
 *    joining as others finish) for 20 tokens: ids IDENTICAL to the
 *    reference's.  The forms hold the same values (gen_llm.py
 *    round_weights), so one reference serves all four.  Then teacher-forced
 *    (mt_score over prompt + reference ids): the argmax of every row is the
 *    reference's id (the whole-sequence path with its causal mask).
 *  - continuous batching: sequences started at different steps (mt_seq_start
 *    between mt_step calls), several prompt lengths: every sequence's ids and
 *    score equal to decoding it alone, bit for bit.
 *  - held weights F16 / INT8 and the F16 K/V cache cannot match the float64
 *    reference exactly: their agreement is printed (whole sequences equal,
 *    ids equal up to the first difference) with a floor asserted.
 *  - full depth (BF16 checkpoint, F32 held): the first-step logits of 4
 *    prompts within LOGIT_TOL of the reference (max |diff| over the
 *    vocabulary, relative to the reference's largest |logit|), same argmax.
 *  - attention capture (mt_attention_run): the probabilities of 5 prompt +
 *    target pairs (5..60 positions) equal the reference's (attention.f64,
 *    gen_llm.py `attention`) within ATTN_TOL, every row sums to 1, the upper
 *    triangle is exactly 0; on a prompt of one id repeated, the log-ratio
 *    log p[m][m-D] - log p[m][m] is the same for every query position m
 *    (RoPE: a score depends on the offset only).  The reference files are
 *    read from $MT_LLM_ATTN_DIR when set (a fixture directory that lacks
 *    them, e.g. a read-only one, plus `gen_llm.py OUT attention SRC`).
 *  - bad checkpoints refused with a message naming the fault.
 *  - the decoder step allocates nothing.
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
#include "kernels/parallel.h"
#include "alloc_count.h"
#include "llm_expect.h"

/* Under AddressSanitizer / ThreadSanitizer (10x slower; the point there is
 * memory and threads): the first SAN_PROMPTS prompts of each model, the
 * first full-depth prompt, said on every run. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SAN_PROMPTS 4
#else
#define SAN_PROMPTS 0
#endif
#define MAX_PROMPTS LLM_MAX_PROMPTS
#define MAX_IDS     LLM_MAX_IDS
#define GEN         20
#define LOGIT_TOL   1e-4     /* full depth: max |engine - reference| / max |reference| (measured 2e-6 .. 7e-6) */
#define ATTN_TOL    1e-5     /* attention probabilities: max |engine - reference| */
#define ROPE_TOL    1e-4     /* repeated id: spread over m of log p[m][m-D] - log p[m][m] */

static char root[4096];

static const char *llm_dir(void)
{
    return root[0] ? root : llm_set_dir(root, sizeof root, "MT_LLM_DIR", "llm");
}

typedef llm_expected expected;

static void read_expected(const char *path, expected *e)
{
    llm_expected_read(path, "greedy", e, SAN_PROMPTS, "`make llm-models` (tests/llm/gen_llm.py)");
}

static mt_model *load(const char *sub, mt_weights w) { return llm_load(llm_dir(), sub, w); }
static mt_session *session(const mt_model *m, int batch, int kv_f16) { return llm_session(m, batch, 40, GEN, kv_f16); }
static mt_decode_params greedy(void) { return llm_greedy(GEN); }
static void generate_all(mt_session *s, const expected *e, mt_hyp *out) { llm_generate_all(s, e, GEN, out); }
static int cut(const mt_hyp *h, int32_t eos) { return llm_cut(h, eos, GEN); }

/* mt_decode_params.end_ids: for each reference sequence, its id at k = 2 + i % 5
 * (one not seen before k) is made an end id: the sequence must stop right
 * after it, ids[0..k] kept, the rest of the batch unchanged.  Greedy, and a
 * beam of 2 against its own run without end ids (the end id is its own
 * first hypothesis' id at k, and no beam may go past it). */
static void test_end_ids(void **st)
{
    (void)st;
    expected e;
    char path[4200];
    snprintf(path, sizeof path, "%s/tinyllama-2l/expected.txt", llm_dir());
    read_expected(path, &e);
    mt_model *m = load("tinyllama-2l/f32", MT_WEIGHTS_F32);
    mt_session *s = session(m, 8, 0);
    int V = mt_model_get_info(m)->vocab_size, checked = 0;
    uint8_t *end = calloc((size_t)V, 1);
    assert_non_null(end);
    for (int i = 0; i < e.n && i < 12; i++) {
        int k = 2 + i % 5, seen = 0;
        if (k >= e.ilen[i] - 1)
            continue;
        for (int j = 0; j < k; j++)
            seen |= e.ids[i][j] == e.ids[i][k];
        if (seen)
            continue;
        end[e.ids[i][k]] = 1;
        mt_decode_params q = greedy();
        q.end_ids = end;
        const int32_t *src[1] = {e.prompt[i]};
        mt_hyp h = {0};
        mt_err err = {0};
        assert_int_equal(mt_generate(s, src, &e.plen[i], 1, &q, &h, &err), MT_OK);
        assert_int_equal(h.n_ids, k + 1);
        assert_memory_equal(h.ids, e.ids[i], sizeof(int32_t) * (size_t)(k + 1));
        mt_hyps_free(&h, 1);
        q.end_ids = NULL;                   /* the same session, without: the whole reference again */
        assert_int_equal(mt_generate(s, src, &e.plen[i], 1, &q, &h, &err), MT_OK);
        assert_int_equal(cut(&h, mt_model_get_info(m)->eos_id), e.ilen[i]);
        mt_hyps_free(&h, 1);
        end[e.ids[i][k]] = 0;
        checked++;
    }
    /* a beam: no hypothesis runs past an end id */
    mt_decode_params q = greedy();
    q.beam_size = 2;
    const int32_t *src[1] = {e.prompt[0]};
    mt_hyp h[2] = {0};
    mt_err err = {0};
    assert_int_equal(mt_generate(s, src, &e.plen[0], 1, &q, h, &err), MT_OK);
    int k = h[0].n_ids > 3 ? 2 : 0;
    end[h[0].ids[k]] = 1;
    int32_t endid = h[0].ids[k];
    mt_hyps_free(h, 1);
    q.end_ids = end;
    q.n_best = 2;
    assert_int_equal(mt_generate(s, src, &e.plen[0], 1, &q, h, &err), MT_OK);
    for (int b = 0; b < 2; b++)
        for (int j = 0; j + 1 < h[b].n_ids; j++)
            assert_true(h[b].ids[j] != endid);
    mt_hyps_free(h, 2);
    printf("   end ids: %d greedy sequences stop right after their end id, a beam of 2 never passes it\n", checked);
    assert_true(checked >= 6);
    free(end);
    mt_session_free(s);
    mt_model_free(m);
}

static void agreement(const expected *e, const mt_hyp *out, int32_t eos, int *seq_eq, int *tok_eq, int *tok_all)
{
    llm_agreement(e, out, eos, GEN, seq_eq, tok_eq, tok_all);
}

static const char *const MODELS[] = {"tinyllama", "qwen3", "qwen2"};
static const char *const FORMS[] = {"f32", "f16", "bf16", "sharded"};

/* ---- greedy equal to the reference ----------------------------------------------- */
static void greedy_model(const char *name)
{
    char path[4200], sub[256];
    expected *e = calloc(1, sizeof *e);
    snprintf(path, sizeof path, "%s/%s-2l/expected.txt", llm_dir(), name);
    read_expected(path, e);
    assert_true(e->n >= 30 || (SAN_PROMPTS && e->n == SAN_PROMPTS));
    for (int f = 0; f < 4; f++) {
        snprintf(sub, sizeof sub, "%s-2l/%s", name, FORMS[f]);
        mt_model *m = load(sub, MT_WEIGHTS_F32);
        mt_session *s = session(m, 8, 0);
        mt_hyp out[MAX_PROMPTS];
        int32_t eos = mt_model_get_info(m)->eos_id;
        generate_all(s, e, out);
        int seq_eq, tok_eq, tok_all, bad = -1;
        agreement(e, out, eos, &seq_eq, &tok_eq, &tok_all);
        for (int i = 0; i < e->n && bad < 0; i++)
            if (cut(&out[i], eos) != e->ilen[i] || memcmp(out[i].ids, e->ids[i], sizeof(int32_t) * e->ilen[i]))
                bad = i;
        printf("   %-22s %s: %d/%d prompts identical to the float64 reference (%d/%d ids)\n", sub,
               mt_model_get_info(m)->dtype, seq_eq, e->n, tok_eq, tok_all);
        if (bad >= 0)
            fail_msg("%s: prompt %d (%d ids) differs from the reference", sub, bad, e->plen[bad]);
        /* teacher-forced: every row's argmax is the reference's next id */
        if (f == 0)
            for (int i = 0; i < e->n; i++) {
                int V = mt_model_get_info(m)->vocab_size, T = e->ilen[i];
                float *lg = malloc(sizeof(float) * (size_t)V * T), lp[MAX_IDS];
                mt_err err = {0};
                if (mt_score(s, e->prompt[i], e->plen[i], e->ids[i], T, lp, lg, &err) != MT_OK)
                    fail_msg("mt_score: %s", err.msg);
                for (int t = 0; t < T; t++) {
                    int best = 0;
                    for (int v = 1; v < V; v++)
                        best = lg[(long)t * V + v] > lg[(long)t * V + best] ? v : best;
                    if (best != e->ids[i][t])
                        fail_msg("%s: mt_score prompt %d row %d: argmax %d, reference %d", sub, i, t, best,
                                 e->ids[i][t]);
                    assert_true(lp[t] <= 0 && lp[t] > -50);
                }
                free(lg);
            }
        mt_hyps_free(out, e->n);
        mt_session_free(s);
        mt_model_free(m);
    }
    free(e);
}

static void test_greedy_tinyllama(void **st) { (void)st; greedy_model("tinyllama"); }
static void test_greedy_qwen3(void **st) { (void)st; greedy_model("qwen3"); }
static void test_greedy_qwen2(void **st) { (void)st; greedy_model("qwen2"); }

/* ---- continuous batching: joins at different steps = alone --------------------------- */
static void batch_model(const char *name)
{
    char path[4200], sub[256];
    expected *e = calloc(1, sizeof *e);
    snprintf(path, sizeof path, "%s/%s-2l/expected.txt", llm_dir(), name);
    read_expected(path, e);
    snprintf(sub, sizeof sub, "%s-2l/f32", name);
    mt_model *m = load(sub, MT_WEIGHTS_F32);
    for (int kv = 0; kv < 2; kv++) {
        mt_session *s = session(m, 8, kv);
        enum { N = SAN_PROMPTS ? SAN_PROMPTS : 12 };
        mt_hyp alone[N], joined[N];
        mt_decode_params q = greedy();
        mt_err err = {0};
        for (int i = 0; i < N; i++) {
            const int32_t *src = e->prompt[i];
            if (mt_generate(s, &src, &e->plen[i], 1, &q, &alone[i], &err) != MT_OK)
                fail_msg("alone: %s", err.msg);
        }
        /* sequence i starts at step i (while rows are free), so prefills of
         * one and of several prompts happen between the steps of others */
        int seq[N], started = 0, taken = 0;
        for (int step = 0; taken < N; step++) {
            while (started < N && started <= step && mt_session_can_start(s, 1)) {
                if (mt_seq_start(s, e->prompt[started], e->plen[started], &q, &seq[started], &err) != MT_OK)
                    fail_msg("start: %s", err.msg);
                started++;
                if (step % 3)                  /* sometimes one, sometimes two per step */
                    break;
            }
            mt_step(s);
            for (int i = 0; i < started; i++)
                if (seq[i] >= 0 && mt_seq_finished(s, seq[i])) {
                    if (mt_seq_take(s, seq[i], &joined[i], &err) != MT_OK)
                        fail_msg("take: %s", err.msg);
                    seq[i] = -1;
                    taken++;
                }
        }
        for (int i = 0; i < N; i++) {
            assert_int_equal(joined[i].n_ids, alone[i].n_ids);
            assert_memory_equal(joined[i].ids, alone[i].ids, sizeof(int32_t) * alone[i].n_ids);
            assert_true(joined[i].score == alone[i].score);     /* bit for bit */
        }
        printf("   %s kv_f16=%d: %d sequences joined at different steps = each alone (ids and scores)\n", sub, kv, N);
        mt_hyps_free(alone, N);
        mt_hyps_free(joined, N);
        mt_session_free(s);
    }
    mt_model_free(m);
    free(e);
}

static void test_batch_tinyllama(void **st) { (void)st; batch_model("tinyllama"); }
static void test_batch_qwen3(void **st) { (void)st; batch_model("qwen3"); }
static void test_batch_qwen2(void **st) { (void)st; batch_model("qwen2"); }

/* ---- held F16 / INT8 weights, F16 K/V cache: agreement figures ------------------------ */
static void test_approx_modes(void **st)
{
    (void)st;
    static const struct { mt_weights w; int kv; const char *name; double floor_seq; } modes[] = {
        {MT_WEIGHTS_F32, 1, "F32 weights, F16 K/V cache", 0.5},
        {MT_WEIGHTS_F16, 0, "F16 weights", 0.5},
        {MT_WEIGHTS_I8, 0, "INT8 weights", 0.0},
    };
    for (int mi = 0; mi < 3; mi++) {
        char path[4200], sub[256];
        expected *e = calloc(1, sizeof *e);
        snprintf(path, sizeof path, "%s/%s-2l/expected.txt", llm_dir(), MODELS[mi]);
        read_expected(path, e);
        snprintf(sub, sizeof sub, "%s-2l/bf16", MODELS[mi]);
        for (int k = 0; k < 3; k++) {
            mt_model *m = load(sub, modes[k].w);
            mt_session *s = session(m, 8, modes[k].kv);
            mt_hyp out[MAX_PROMPTS];
            generate_all(s, e, out);
            int seq_eq, tok_eq, tok_all, first = 0;
            agreement(e, out, mt_model_get_info(m)->eos_id, &seq_eq, &tok_eq, &tok_all);
            for (int i = 0; i < e->n; i++)
                first += out[i].ids[0] == e->ids[i][0];
            printf("   %-16s %-26s: %2d/%d sequences identical, first id %2d/%d, %3d/%d ids before the first "
                   "difference\n", sub, modes[k].name, seq_eq, e->n, first, e->n, tok_eq, tok_all);
            assert_true(seq_eq >= modes[k].floor_seq * e->n);
            assert_true(first >= e->n / 2);
            mt_hyps_free(out, e->n);
            mt_session_free(s);
            mt_model_free(m);
        }
        free(e);
    }
}

/* ---- full depth: first-step logits ------------------------------------------------------ */
static void logits_model(const char *name)
{
    char path[4200], sub[256];
    expected *e = calloc(1, sizeof *e);
    snprintf(path, sizeof path, "%s/%s-full/logits.txt", llm_dir(), name);
    read_expected(path, e);
    snprintf(sub, sizeof sub, "%s-full/bf16", name);
    mt_model *m = load(sub, MT_WEIGHTS_F32);
    int V = mt_model_get_info(m)->vocab_size;
    float *ref = malloc(sizeof(float) * (size_t)V * e->n), *lg = malloc(sizeof(float) * (size_t)V);
    snprintf(path, sizeof path, "%s/%s-full/logits.f32", llm_dir(), name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(ref, sizeof(float), (size_t)V * e->n, f), (size_t)V * e->n);
    if (SAN_PROMPTS)
        e->n = 1;
    fclose(f);
    mt_session *s = session(m, 1, 0);
    mt_decode_params q = greedy();
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
        /* the step path (prefill + one decoder step) gives the same first id */
        mt_hyp h;
        const int32_t *src = e->prompt[i];
        if (mt_generate(s, &src, &e->plen[i], 1, &q, &h, &err) != MT_OK)
            fail_msg("mt_generate: %s", err.msg);
        printf("   %s prompt %d (%2d ids): max |logit - ref| %.2e (max |ref| %.2f, rel %.2e), argmax %d / ref %d, "
               "step path %d\n", sub, i, e->plen[i], maxd, maxr, maxd / maxr, a, b, h.ids[0]);
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

static void test_logits_tinyllama(void **st) { (void)st; logits_model("tinyllama"); }
static void test_logits_qwen3(void **st) { (void)st; logits_model("qwen3"); }
static void test_logits_qwen2(void **st) { (void)st; logits_model("qwen2"); }

/* ---- attention capture: mt_attention_run ------------------------------------------------- */
static const char *attn_dir(void)
{
    const char *e = getenv("MT_LLM_ATTN_DIR");
    return e && *e ? e : llm_dir();
}

/* log p[m][m-D] - log p[m][m] over the query positions m >= D of one head's
 * [N][N] block: their largest spread over m (0 if the score depends on the
 * offset only), and in *range the spread of its mean over D (how much the
 * score does depend on the offset). */
static double offset_spread(const float *a, int N, double *range)
{
    double worst = 0, lo = INFINITY, hi = -INFINITY;
    for (int D = 1; D < N; D++) {
        double mn = INFINITY, mx = -INFINITY, sum = 0;
        for (int m = D; m < N; m++) {
            double r = log((double)a[(long)m * N + m - D]) - log((double)a[(long)m * N + m]);
            mn = fmin(mn, r);
            mx = fmax(mx, r);
            sum += r;
        }
        worst = fmax(worst, mx - mn);
        lo = fmin(lo, sum / (N - D));
        hi = fmax(hi, sum / (N - D));
    }
    *range = hi - lo;
    return worst;
}

static void attention_model(const char *name)
{
    char path[4200], sub[256];
    expected *e = calloc(1, sizeof *e);      /* prompt lines; "target" lines into ids */
    snprintf(path, sizeof path, "%s/%s-2l/attention.txt", attn_dir(), name);
    llm_expected_read(path, "target", e, 0, "tests/llm/gen_llm.py OUT attention [SRC]");
    assert_true(e->n >= 4);
    snprintf(path, sizeof path, "%s/%s-2l/attention.f64", attn_dir(), name);
    FILE *rf = fopen(path, "rb");
    assert_non_null(rf);
    snprintf(sub, sizeof sub, "%s-2l/f32", name);
    mt_model *m = load(sub, MT_WEIGHTS_F32);
    mt_session *s = session(m, 1, 0), *s16 = session(m, 1, 1);
    const mt_model_info *info = mt_model_get_info(m);
    double worst = 0;
    for (int i = 0; i < e->n; i++) {
        int P = e->plen[i], T = e->ilen[i];
        long N = P + T;
        mt_attention a, b;
        mt_err err = {0};
        if (mt_attention_run(s, e->prompt[i], P, T ? e->ids[i] : NULL, T, &a, &err) != MT_OK)
            fail_msg("%s pair %d: mt_attention_run: %s", sub, i, err.msg);
        assert_null(a.enc);
        assert_null(a.cross);
        assert_int_equal(a.enc_layers, 0);
        assert_int_equal(a.dec_layers, info->dec_layers);
        assert_int_equal(a.heads, info->dec_heads);
        assert_int_equal(a.src_len, P);
        assert_int_equal(a.tgt_len, N);
        long n = (long)a.dec_layers * a.heads * N * N;
        double *ref = malloc(sizeof(double) * (size_t)n), maxd = 0, maxs = 0;
        assert_int_equal(fread(ref, sizeof(double), (size_t)n, rf), (size_t)n);
        for (long r = 0; r < n / N; r++) {                  /* every row of every layer and head */
            const float *row = a.dec + r * N;
            long q = r % N;                                  /* its query position */
            double sum = 0;
            for (long k = 0; k < N; k++) {
                maxd = fmax(maxd, fabs((double)row[k] - ref[r * N + k]));
                sum += row[k];
                if (k > q && row[k] != 0.0f)
                    fail_msg("%s pair %d: row %ld column %ld above the diagonal is %g", sub, i, q, k, row[k]);
            }
            maxs = fmax(maxs, fabs(sum - 1.0));
        }
        /* the K/V cache's precision does not enter: the pass uses the F32 projections */
        if (mt_attention_run(s16, e->prompt[i], P, T ? e->ids[i] : NULL, T, &b, &err) != MT_OK)
            fail_msg("kv_f16: %s", err.msg);
        assert_memory_equal(a.dec, b.dec, sizeof(float) * (size_t)n);
        printf("   %s pair %d (%2d + %2d ids, %d layers x %d heads): max |p - ref| %.2e, max |row sum - 1| %.1e\n", sub,
               i, P, T, a.dec_layers, a.heads, maxd, maxs);
        worst = fmax(worst, maxd);
        assert_true(maxd <= ATTN_TOL);
        assert_true(maxs <= 1e-5);
        int repeated = T == 0 && P > 8;
        for (int k = 1; k < P && repeated; k++)
            repeated = e->prompt[i][k] == e->prompt[i][0];
        if (repeated) {                                      /* RoPE: the score depends on m - n only */
            double spread = 0, range = INFINITY, rg;
            for (int h = 0; h < a.dec_layers * a.heads; h++) {
                spread = fmax(spread, offset_spread(a.dec + (long)h * N * N, (int)N, &rg));
                range = fmin(range, rg);
            }
            printf("   %s pair %d (one id x %d): log p[m][m-D] - log p[m][m] over m: spread %.2e for every "
                   "layer, head, D (depends on D: least range over D of a head %.2f)\n", sub, i, P, spread, range);
            assert_true(spread <= ROPE_TOL);
            assert_true(range > 1e-2);
        }
        free(ref);
        mt_attention_free(&a);
        mt_attention_free(&b);
    }
    printf("   %s: max |p - ref| over %d pairs %.2e (tolerance %.0e)\n", sub, e->n, worst, ATTN_TOL);
    /* a decoder-only pass has no encoder: what is refused */
    mt_attention a;
    mt_err err = {0};
    int32_t big[64] = {0};
    assert_int_equal(mt_attention_run(s, big, 41, NULL, 0, &a, &err), MT_ERR_TOO_LONG);
    assert_int_equal(mt_attention_run(s, big, 0, NULL, 0, &a, &err), MT_ERR_INPUT);
    assert_int_equal(mt_attention_run(s, big, 2, NULL, 1, &a, &err), MT_ERR_INPUT);
    assert_int_equal(mt_attention_run(s, big, 2, big, GEN + 3, &a, &err), MT_ERR_TOO_LONG);
    big[1] = info->vocab_size;
    assert_int_equal(mt_attention_run(s, big, 2, NULL, 0, &a, &err), MT_ERR_INPUT);
    assert_null(a.dec);
    fclose(rf);
    mt_session_free(s16);
    mt_session_free(s);
    mt_model_free(m);
    free(e);
}

/* The small llama of bad/good (hidden 64, 4 heads over 2 K/V heads, 2
 * layers): the invariants and the offset-only scores without a reference,
 * cheap enough for valgrind (TEST_FILTER=test_attention_small). */
static void test_attention_small(void **st)
{
    (void)st;
    mt_model *m = load("bad/good", MT_WEIGHTS_F32);
    mt_session *s = session(m, 1, 0);
    int32_t ids[40], tgt[GEN];
    for (int i = 0; i < 40; i++)
        ids[i] = (int32_t)((i * 37 + 11) % 100);
    for (int i = 0; i < GEN; i++)
        tgt[i] = (int32_t)((i * 53 + 7) % 100);
    for (int c = 0; c < 3; c++) {
        int P = c == 2 ? 24 : 40 - 17 * c, T = c == 1 ? GEN : 0;
        if (c == 2)                                        /* one id repeated */
            for (int i = 0; i < P; i++)
                ids[i] = 42;
        mt_attention a;
        mt_err err = {0};
        if (mt_attention_run(s, ids, P, T ? tgt : NULL, T, &a, &err) != MT_OK)
            fail_msg("mt_attention_run: %s", err.msg);
        long N = P + T, rows = (long)a.dec_layers * a.heads * N;
        assert_int_equal(a.heads, 4);
        assert_int_equal(a.tgt_len, N);
        double maxs = 0;
        for (long r = 0; r < rows; r++) {
            double sum = 0;
            for (long k = 0; k < N; k++) {
                sum += a.dec[r * N + k];
                assert_true(k <= r % N ? a.dec[r * N + k] >= 0 : a.dec[r * N + k] == 0.0f);
            }
            maxs = fmax(maxs, fabs(sum - 1));
        }
        assert_true(maxs <= 1e-5);
        if (c == 2) {
            double spread = 0, rg;
            for (int h = 0; h < a.dec_layers * a.heads; h++)
                spread = fmax(spread, offset_spread(a.dec + (long)h * N * N, (int)N, &rg));
            printf("   bad/good, one id x %d: spread over m of log p[m][m-D] - log p[m][m] %.2e\n", P, spread);
            assert_true(spread <= ROPE_TOL);
        }
        mt_attention_free(&a);
    }
    mt_session_free(s);
    mt_model_free(m);
}

static void test_attention_tinyllama(void **st) { (void)st; attention_model("tinyllama"); }
static void test_attention_qwen3(void **st) { (void)st; attention_model("qwen3"); }
static void test_attention_qwen2(void **st) { (void)st; attention_model("qwen2"); }

/* ---- refusals -------------------------------------------------------------------------- */
static void test_refusals(void **st)
{
    (void)st;
    static const struct { const char *dir, *want; } cases[] = {
        {"missing-tensor", "missing tensor 'model.layers.1.mlp.up_proj.weight'"},
        {"wrong-shape", "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [64, 32], expected [32, 64]"},
        {"extra-tensor", "unexpected tensor 'model.layers.2.mlp.up_proj.weight'"},
        {"index-missing-shard", "in shard 'model-00002-of-00002.safetensors', which is missing"},
        {"index-unmapped-tensor", "holds tensor 'model.norm.weight', which the index does not list"},
        {"index-wrong-shard", "tensor 'model.norm.weight' is mapped to shard 'model-00001-of-00002.safetensors', "
                              "which does not hold it"},
        {"rope-scaling-yarn", "rope_scaling (type 'yarn') is not supported"},
        {"attention-bias", "attention_bias true is not supported for model_type 'llama'"},
        {"sliding-window", "use_sliding_window true is not supported"},
        {"hidden-act", "hidden_act 'gelu' is not supported"},
        {"mlp-bias", "mlp_bias true is not supported"},
        {"model-type", "model_type 'mistral' is not supported"},
    };
    char dir[4200];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(dir, sizeof dir, "%s/bad/%s", llm_dir(), cases[i].dir);
        assert_true(llm_is_dir(dir));
        mt_model *m = NULL;
        mt_err err = {0};
        mt_status s = mt_model_load(dir, NULL, &m, &err);
        printf("   %-22s -> %s\n", cases[i].dir, err.msg);
        assert_int_not_equal(s, MT_OK);
        assert_null(m);
        if (!strstr(err.msg, cases[i].want))
            fail_msg("%s: message '%s' lacks '%s'", cases[i].dir, err.msg, cases[i].want);
        /* a card reads the config and the index too */
        if (strstr(cases[i].dir, "index") || strstr(cases[i].want, "not supported")) {
            mt_err e2 = {0};
            assert_int_not_equal(mt_model_load_card(dir, &m, &e2), MT_OK);
            assert_null(m);
        }
    }
    for (int g = 0; g < 2; g++) {         /* their good twins load, sharded or not, alike */
        snprintf(dir, sizeof dir, "%s/bad/%s", llm_dir(), g ? "good-sharded" : "good");
        mt_model *m = NULL;
        mt_err err = {0};
        if (mt_model_load(dir, NULL, &m, &err) != MT_OK)
            fail_msg("%s: %s", dir, err.msg);
        const mt_model_info *info = mt_model_get_info(m);
        assert_int_equal(info->dec_layers, 2);
        assert_int_equal(info->enc_layers, 0);
        assert_string_equal(info->weights_file, g ? "model.safetensors.index.json" : "model.safetensors");
        mt_model_free(m);
        if (mt_model_load_card(dir, &m, &err) != MT_OK)
            fail_msg("card %s: %s", dir, err.msg);
        assert_true(mt_model_is_card(m));
        mt_model_free(m);
    }
}

/* A decoder-only model has no source alignment: alignments and glossary terms are refused. */
static void test_refused_params(void **st)
{
    (void)st;
    mt_model *m = load("bad/good", MT_WEIGHTS_F32);
    mt_session_params sp = mt_session_default_params(m);
    mt_decode_params q = mt_decode_default_params(), out;
    q.alignment.enabled = 1;
    mt_err err = {0};
    assert_int_not_equal(mt_decode_params_resolve(m, &sp, &q, &out, &err), MT_OK);
    assert_non_null(strstr(err.msg, "alignments"));
    mt_model_free(m);
}

/* ---- no allocation in the decoder step --------------------------------------------------- */
static void test_step_allocates_nothing(void **st)
{
    (void)st;
#if HAVE_ALLOC_COUNTER
    expected *e = calloc(1, sizeof *e);
    char path[4200];
    snprintf(path, sizeof path, "%s/qwen3-2l/expected.txt", llm_dir());
    read_expected(path, e);
    mt_model *m = load("qwen3-2l/f32", MT_WEIGHTS_F32);
    mt_session *s = session(m, 8, 1);
    mt_decode_params q = greedy(), qb = greedy();
    qb.beam_size = 3;
    int id;
    mt_err err = {0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(mt_seq_start(s, e->prompt[i], e->plen[i], i == 3 ? &qb : &q, &id, &err), MT_OK);
    mt_encode_started(s);             /* the prefill (OpenBLAS may allocate there) */
    n_allocs = 0;
    counting = 1;
    for (int k = 0; k < 10; k++)
        mt_step(s);
    counting = 0;
    printf("   10 steps of 6 rows (greedy and a beam of 3): %ld allocations\n", (long)n_allocs);
    assert_int_equal(n_allocs, 0);
    mt_session_free(s);
    mt_model_free(m);
    free(e);
#else
    printf("   (allocation counter disabled under a sanitizer)\n");
#endif
}

int main(void)
{
    if (!llm_is_dir(llm_dir())) {
        fprintf(stderr, "test_llm: %s: no fixtures (run `make llm-models`: tests/llm/gen_llm.py)\n", llm_dir());
        return 1;
    }
    mt_par_set_threads(2);
    if (getenv("TEST_FILTER"))          /* e.g. TEST_FILTER='test_attention*' */
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_end_ids),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_refused_params),
        cmocka_unit_test(test_greedy_tinyllama),
        cmocka_unit_test(test_greedy_qwen3),
        cmocka_unit_test(test_greedy_qwen2),
        cmocka_unit_test(test_batch_tinyllama),
        cmocka_unit_test(test_batch_qwen3),
        cmocka_unit_test(test_batch_qwen2),
        cmocka_unit_test(test_approx_modes),
        cmocka_unit_test(test_step_allocates_nothing),
        cmocka_unit_test(test_logits_tinyllama),
        cmocka_unit_test(test_logits_qwen3),
        cmocka_unit_test(test_logits_qwen2),
        cmocka_unit_test(test_attention_small),
        cmocka_unit_test(test_attention_tinyllama),
        cmocka_unit_test(test_attention_qwen3),
        cmocka_unit_test(test_attention_qwen2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
