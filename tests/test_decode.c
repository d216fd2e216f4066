/* test_decode.c: the engine's decoding features (issue 14) against the PyTorch
 * reference and their own invariants.
 *
 * Reference: tests/fixtures/<model>/decode.jsonl and sampling.json, written by
 * models/recipe/decode_fixtures.py (decode_rules.py: HF's logits processors and
 * warpers in PyTorch over model.py).  Models: tiny and en-fr (en-fr fails if
 * models/en-fr exists without its fixtures).
 *
 *  - target prefix, repetition_penalty, no_repeat_ngram_size, min_length,
 *    length_penalty, greedy and beam: ids equal to the reference's, token
 *    log-probs within SCORE_TOL (relative to max(1, |ref|), as test_engine),
 *    scores (sums of n of them) within n * SCORE_TOL;
 *    alignments (the last layer, all heads; layer 0, head 0) equal, except at
 *    positions where the reference's two best head-averaged weights are
 *    closer than ALIGN_TIE (counted and printed; they are float near-ties).
 *  - the same rows as one continuous batch (joins staggered, all
 *    configurations mixed, 2 compute threads): every result bit-equal to the
 *    row decoded alone.
 *  - sampling: a seed gives the same ids alone, in a batch of 32 mixed
 *    sequences (sampling of several settings, greedy, beam), with 1 and 2
 *    threads; different seeds give different outputs; the first-step draws of
 *    N_DRAWS seeds match the reference's warped softmax (Pearson chi-square,
 *    bins of expected count >= 5, the rest pooled; fails above the 0.999
 *    quantile of chi-square with bins-1 degrees of freedom, Wilson-Hilferty),
 *    and no draw is ever outside the reference's support.
 *  - the decoder step allocates nothing with every feature on.
 *  - a stop callback (mt_decode_params.stop_callback: the server's stop
 *    strings) ends a greedy or sampling row where it says, its ids the first
 *    ones of the row decoded without it, the rows beside it unchanged; a
 *    beam row is never asked.
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

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif
/* under valgrind (50x slower): the first rows and one sampling distribution per model */
#define VALGRIND_ROWS  12
#define VALGRIND_DISTS 1
/* under AddressSanitizer and ThreadSanitizer: two settings per source (the
 * point there is memory and threads; en-fr's 2000 draws took 3 minutes each under TSan) */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_DISTS 2
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZER_DISTS 2
#endif
#endif

#define SCORE_TOL 1e-4
#define ALIGN_TIE 1e-4
#define N_DRAWS   2000
#define MAX_ROWS  256

#include "alloc_count.h"

/* ---- fixtures ---------------------------------------------------------------------------- */
typedef struct {
    const char *name;
    int         loaded, skip;
    char        why[512];
    mt_model   *m;
    mt_session *s;
    json_t     *rows[MAX_ROWS];
    int         n_rows, n_loaded;       /* used, parsed */
    json_t     *sampling;
} ctx;

static ctx CTX[] = {{.name = "tiny"}, {.name = "en-fr"}};

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static ctx *get_ctx(void **state)
{
    ctx *c = *state;
    if (c->loaded)
        return c;
    c->loaded = 1;
    char dir[96], path[256];
    snprintf(dir, sizeof dir, "models/%.64s", c->name);
    if (!exists(dir)) {
        c->skip = 1;
        snprintf(c->why, sizeof c->why, "%s does not exist", dir);
        return c;
    }
    snprintf(path, sizeof path, "tests/fixtures/%s/decode.jsonl", c->name);
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0 && c->n_rows < MAX_ROWS) {
        json_t *j = json_loads(line, 0, NULL);
        if (j)
            c->rows[c->n_rows++] = j;
    }
    free(line);
    if (f)
        fclose(f);
    c->n_loaded = c->n_rows;
    if (RUNNING_ON_VALGRIND && c->n_rows > VALGRIND_ROWS) {
        print_message("  [%s] under valgrind: the first %d of %d rows\n", c->name, VALGRIND_ROWS, c->n_rows);
        c->n_rows = VALGRIND_ROWS;
    }
    snprintf(path, sizeof path, "tests/fixtures/%s/sampling.json", c->name);
    c->sampling = json_load_file(path, 0, NULL);
    if (c->n_rows == 0 || !c->sampling) {
        c->skip = -1;
        snprintf(c->why, sizeof c->why, "%.96s exists but tests/fixtures/%.64s/{decode.jsonl,sampling.json} are missing: "
                 "run models/recipe/decode_fixtures.py", dir, c->name);
        return c;
    }
    mt_err err = {0};
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = 1;
    if (mt_model_load(dir, &mp, &c->m, &err) != MT_OK) {
        c->skip = -1;
        snprintf(c->why, sizeof c->why, "load %s: %.300s", dir, err.msg);
        return c;
    }
    mt_session_params sp = mt_session_default_params(c->m);
    sp.max_batch = 32;
    sp.max_tgt_len = 128;
    if (mt_session_new(c->m, &sp, &c->s, &err) != MT_OK) {
        c->skip = -1;
        snprintf(c->why, sizeof c->why, "session: %.300s", err.msg);
    }
    return c;
}

#define CTX_OR_RETURN(c)                                                   \
    ctx *c = get_ctx(state);                                               \
    if (c->skip > 0) {                                                     \
        print_message("[  SKIP    ] %s\n", c->why);                        \
        skip();                                                            \
    }                                                                      \
    if (c->skip < 0)                                                       \
        fail_msg("%s", c->why)

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }
static int    inum(json_t *o, const char *k) { return (int)json_integer_value(json_object_get(o, k)); }
static double rel_err(double a, double b) { return fabs(a - b) / (fabs(b) > 1 ? fabs(b) : 1); }

/* A fixture row's source and parameters (prefix into pre[]). */
typedef struct {
    int32_t src[512], pre[128];
    int     n_src;
    mt_decode_params dp;
} row_in;

static void row_params(json_t *r, row_in *in, int align_variant)
{
    in->n_src = ids_of(json_object_get(r, "src_ids"), in->src, 512);
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = inum(r, "beam");
    dp.n_best = dp.beam_size;
    dp.lengths.max_length = inum(r, "max_length");
    dp.length_penalty = (float)num(r, "length_penalty");
    dp.n_prefix = ids_of(json_object_get(r, "prefix"), in->pre, 128);
    dp.prefix = in->pre;
    dp.penalties.repetition = (float)num(r, "repetition_penalty");
    dp.penalties.no_repeat_ngram_size = inum(r, "no_repeat_ngram_size");
    dp.lengths.min_length = inum(r, "min_length");
    dp.penalties.loop_no_repeat = -1;       /* the reference has no loop guard (test_loop_guard tests it) */
    dp.lengths.max_length_factor = MT_LENGTH_FACTOR_NONE;  /* nor a length cap (test_length_cap): v4 en-fr's
                                                             beam reached its cap in a row, </s> forced there */
    dp.token_scores = 1;
    dp.alignment.enabled = 1;
    dp.alignment.layer = align_variant ? 0 : -1;
    dp.alignment.heads = align_variant ? 1 : 0;
    in->dp = dp;
}

/* Compares hypothesis h with the reference's; 1 if the ids are equal. */
static int hyp_matches(json_t *ref, const mt_hyp *h, int beam, const char *align_key, double *worst_lp,
                       double *worst_score, int *al_same, int *al_total, int *al_ties)
{
    int32_t ids[512], al[512];
    int n = ids_of(json_object_get(ref, "ids"), ids, 512);
    if (h->n_ids != n || memcmp(h->ids, ids, sizeof(int32_t) * (size_t)n))
        return 0;
    json_t *lps = json_object_get(ref, "token_logp");
    for (int t = 0; t < n; t++) {
        double e = rel_err(h->token_logp[t], json_number_value(json_array_get(lps, (size_t)t)));
        *worst_lp = e > *worst_lp ? e : *worst_lp;
    }
    /* a score sums n token log-probs, each within SCORE_TOL (the reference's are float32
     * log-softmax values: near 0 they carry the rounding of logits of magnitude ~10) */
    double e = fabs(h->score - num(ref, "score")) / (n > 1 ? n : 1);
    if (e > SCORE_TOL)
        print_message("    score %.7g vs the reference's %.7g (%d ids)\n", h->score, num(ref, "score"), n);
    *worst_score = e > *worst_score ? e : *worst_score;
    char mk[64];
    snprintf(mk, sizeof mk, "%s_margin", align_key);
    ids_of(json_object_get(ref, align_key), al, 512);
    json_t *margin = json_object_get(ref, mk);
    for (int t = 0; t < n; t++) {
        if (h->align[t] == al[t])
            (*al_same)++;
        else if (json_number_value(json_array_get(margin, (size_t)t)) < ALIGN_TIE)
            (*al_ties)++;
        else
            print_message("    alignment differs at %d: %d vs the reference's %d\n", t, h->align[t], al[t]);
        (*al_total)++;
    }
    (void)beam;
    return 1;
}

/* ---- against the reference --------------------------------------------------------------- */
static void test_reference(void **state)
{
    CTX_OR_RETURN(c);
    int same = 0, al_same = 0, al_total = 0, al_ties = 0;
    double worst_lp = 0, worst_score = 0;
    for (int i = 0; i < c->n_rows; i++) {
        json_t *r = c->rows[i], *hyps = json_object_get(r, "hyps");
        for (int variant = 0; variant < 2; variant++) {
            row_in in;
            row_params(r, &in, variant);
            const int32_t *sp = in.src;
            mt_hyp h[16];
            mt_err err = {0};
            assert_int_equal(mt_generate(c->s, &sp, &in.n_src, 1, &in.dp, h, &err), MT_OK);
            int ok = 1, n_ref = (int)json_array_size(hyps);
            for (int k = 0; k < n_ref && k < in.dp.n_best && ok; k++)
                ok = hyp_matches(json_array_get(hyps, (size_t)k), &h[k], in.dp.beam_size,
                                 variant ? "align_l0h1" : "align_last", &worst_lp, &worst_score, &al_same,
                                 &al_total, &al_ties);
            if (!ok)
                print_message("  [%s] row %d (case %d, %s, variant %d): ids differ from the reference\n", c->name,
                              i, inum(r, "i"), json_string_value(json_object_get(r, "config")), variant);
            same += ok && variant == 0;
            mt_hyps_free(h, in.dp.n_best);
        }
    }
    print_message("  [%s] %d/%d rows (prefix, penalties, n-gram bans, min_length; greedy and beam) equal to the "
                  "reference; token log-probs max rel err %.2g, scores %.2g per token; alignments %d/%d equal, %d "
                  "reference near-ties (margin < %g)\n",
                  c->name, same, c->n_rows, worst_lp, worst_score, al_same, al_total, al_ties, ALIGN_TIE);
    assert_int_equal(same, c->n_rows);
    assert_true(worst_lp <= SCORE_TOL);
    assert_true(worst_score <= SCORE_TOL);
    assert_int_equal(al_same + al_ties, al_total);
    assert_true(al_ties * 50 <= al_total);              /* near-ties are rare: at most 2% */
}

/* The features really act: each configuration's output differs from plain
 * greedy/beam on at least one row, and the rules hold on every output. */
static void test_rules_hold(void **state)
{
    CTX_OR_RETURN(c);
    int changed = 0;
    for (int i = 0; i < c->n_rows; i++) {
        json_t *r = c->rows[i];
        row_in in;
        row_params(r, &in, 0);
        const int32_t *sp = in.src;
        mt_hyp h[16], plain[16];
        assert_int_equal(mt_generate(c->s, &sp, &in.n_src, 1, &in.dp, h, NULL), MT_OK);
        mt_decode_params dp = mt_decode_default_params();
        dp.beam_size = in.dp.beam_size;
        dp.n_best = in.dp.n_best;
        dp.lengths.max_length = in.dp.lengths.max_length;
        assert_int_equal(mt_generate(c->s, &sp, &in.n_src, 1, &dp, plain, NULL), MT_OK);
        changed += h[0].n_ids != plain[0].n_ids || memcmp(h[0].ids, plain[0].ids, sizeof(int32_t) * (size_t)h[0].n_ids);
        /* the prefix comes first */
        assert_true(h[0].n_ids >= in.dp.n_prefix);
        assert_memory_equal(h[0].ids, in.pre, sizeof(int32_t) * (size_t)in.dp.n_prefix);
        /* no n-gram twice (the final </s> aside) */
        int n = in.dp.penalties.no_repeat_ngram_size, len = h[0].n_ids;
        for (int a = 0; n > 0 && a + n <= len; a++)
            for (int b = a + 1; b + n <= len; b++)
                assert_false(!memcmp(h[0].ids + a, h[0].ids + b, sizeof(int32_t) * (size_t)n));
        /* min_length (HF): </s> not before decoder length min_length, unless forced by max_length */
        if (len < in.dp.lengths.max_length - 1)
            assert_true(len + 1 >= in.dp.lengths.min_length);
        mt_hyps_free(h, in.dp.n_best);
        mt_hyps_free(plain, dp.n_best);
    }
    print_message("  [%s] %d/%d rows differ from plain decoding; prefixes, n-gram bans and min_length hold\n",
                  c->name, changed, c->n_rows);
    assert_true(changed * 2 >= c->n_rows);
}

/* ---- continuous batching ------------------------------------------------------------------- */
/* Every row (and its alignment variant) started into one session over the
 * steps, 1-3 joins per step, with 2 compute threads: each result equals the
 * row decoded alone (ids, score, token log-probs, alignments: bit for bit). */
static void test_batched_equals_alone(void **state)
{
    CTX_OR_RETURN(c);
    int n = 2 * c->n_rows;
    row_in *in = calloc((size_t)n, sizeof *in);
    mt_hyp *alone = calloc((size_t)n * 16, sizeof *alone), *got = calloc((size_t)n * 16, sizeof *got);
    int *seq_of = malloc(sizeof(int) * (size_t)n), *row_of = malloc(sizeof(int) * 64);
    for (int i = 0; i < n; i++) {
        row_params(c->rows[i / 2], &in[i], i % 2);
        const int32_t *sp = in[i].src;
        assert_int_equal(mt_generate(c->s, &sp, &in[i].n_src, 1, &in[i].dp, alone + (long)i * 16, NULL), MT_OK);
    }
    mt_par_set_threads(2);
    int next = 0, done = 0, steps = 0;
    for (int k = 0; k < 64; k++)
        row_of[k] = -1;
    while (done < n) {
        for (int j = 0; j < 1 + steps % 3 && next < n; j++) {
            int id;
            mt_err err;
            mt_status st = mt_seq_start(c->s, in[next].src, in[next].n_src, &in[next].dp, &id, &err);
            if (st == MT_ERR_BUSY)
                break;
            assert_int_equal(st, MT_OK);
            seq_of[next] = id;
            row_of[id] = next++;
        }
        mt_step(c->s);
        steps++;
        for (int id = 0; id < 32; id++)
            if (row_of[id] >= 0 && mt_seq_finished(c->s, id)) {
                int i = row_of[id];
                assert_int_equal(mt_seq_take(c->s, id, got + (long)i * 16, NULL), MT_OK);
                row_of[id] = -1;
                done++;
            }
    }
    mt_par_set_threads(1);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < in[i].dp.n_best; k++) {
            const mt_hyp *a = &alone[(long)i * 16 + k], *b = &got[(long)i * 16 + k];
            assert_int_equal(a->n_ids, b->n_ids);
            assert_memory_equal(a->ids, b->ids, sizeof(int32_t) * (size_t)a->n_ids);
            assert_memory_equal(a->token_logp, b->token_logp, sizeof(float) * (size_t)a->n_ids);
            assert_memory_equal(a->align, b->align, sizeof(int32_t) * (size_t)a->n_ids);
            assert_true(a->score == b->score || (isinf(a->score) && isinf(b->score)));
        }
    print_message("  [%s] %d sequences in one session over %d steps (2 threads): each equal to decoding it alone\n",
                  c->name, n, steps);
    for (int i = 0; i < n; i++) {
        mt_hyps_free(alone + (long)i * 16, in[i].dp.n_best);
        mt_hyps_free(got + (long)i * 16, in[i].dp.n_best);
    }
    free(in);
    free(alone);
    free(got);
    free(seq_of);
    free(row_of);
}

/* ---- sampling --------------------------------------------------------------------------------- */
static mt_decode_params sampling_params(uint64_t seed, float t, int k, float p, int max_length)
{
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = 1;
    dp.lengths.max_length = max_length;
    dp.sampling.enabled = 1;
    dp.sampling.temperature = t;
    dp.sampling.top_k = k;
    dp.sampling.top_p = p;
    dp.sampling.seed = seed;
    dp.token_scores = 1;
    return dp;
}

/* 32 sequences: sampling under four settings (seeds 100+i), greedy and beam 3
 * with rules, over the fixture rows' sources. */
#define MIX 32
static void mixed_params(ctx *c, row_in *in)
{
    for (int i = 0; i < MIX; i++) {
        row_params(c->rows[(i * 7) % c->n_rows], &in[i], 0);
        mt_decode_params dp = in[i].dp;
        if (i % 4 != 3) {
            float t[] = {1.0f, 0.8f, 1.3f}, p[] = {1.0f, 0.9f, 0.95f};
            int k[] = {0, 0, 30};
            int v = i % 4;
            dp = sampling_params(100 + (uint64_t)i, t[v], k[v], p[v], in[i].dp.lengths.max_length);
            dp.penalties.repetition = i % 8 == 1 ? 1.2f : 1.0f;
            dp.n_prefix = i % 8 == 2 ? in[i].dp.n_prefix : 0;
            dp.prefix = in[i].pre;
            dp.alignment.enabled = i % 2;
        }
        in[i].dp = dp;
    }
}

static void decode_alone(ctx *c, row_in *in, int n, mt_hyp *out)
{
    for (int i = 0; i < n; i++) {
        const int32_t *sp = in[i].src;
        assert_int_equal(mt_generate(c->s, &sp, &in[i].n_src, 1, &in[i].dp, out + (long)i * 4, NULL), MT_OK);
    }
}

static void decode_together(ctx *c, row_in *in, int n, mt_hyp *out)
{
    const int32_t **src = malloc(sizeof *src * (size_t)n);
    int *len = malloc(sizeof(int) * (size_t)n);
    const mt_decode_params **each = malloc(sizeof *each * (size_t)n);
    mt_hyp *tmp = calloc((size_t)n * 4, sizeof *tmp);
    for (int i = 0; i < n; i++)
        src[i] = in[i].src, len[i] = in[i].n_src, each[i] = &in[i].dp;
    /* n_best differs (beam rows 3): by n_best groups, each group one batch */
    for (int nb = 1; nb <= 4; nb++) {
        int m = 0, idx[MIX];
        for (int i = 0; i < n; i++)
            if (in[i].dp.n_best == nb || (nb == 1 && in[i].dp.n_best == 0))
                idx[m++] = i;
        if (!m)
            continue;
        const int32_t *s2[MIX];
        int l2[MIX];
        const mt_decode_params *e2[MIX];
        for (int j = 0; j < m; j++)
            s2[j] = src[idx[j]], l2[j] = len[idx[j]], e2[j] = each[idx[j]];
        assert_int_equal(mt_generate_each(c->s, s2, l2, m, e2, tmp, NULL), MT_OK);
        for (int j = 0; j < m; j++)
            memcpy(out + (long)idx[j] * 4, tmp + (long)j * nb, sizeof *tmp * (size_t)nb);
    }
    free(src);
    free(len);
    free(each);
    free(tmp);
}

static void hyps_equal(const mt_hyp *a, const mt_hyp *b)
{
    assert_int_equal(a->n_ids, b->n_ids);
    assert_memory_equal(a->ids, b->ids, sizeof(int32_t) * (size_t)a->n_ids);
    assert_memory_equal(a->token_logp, b->token_logp, sizeof(float) * (size_t)a->n_ids);
    assert_true(a->score == b->score);
}

/* A seed gives the same ids alone and in a batch of 32 mixed sequences,
 * with 1 and 2 threads; the greedy and beam sequences of the mix are
 * unchanged by the sampling beside them. */
static void test_sampling_reproducible(void **state)
{
    CTX_OR_RETURN(c);
    row_in *in = calloc(MIX, sizeof *in);
    mt_hyp *ref = calloc(MIX * 4, sizeof *ref), *got = calloc(MIX * 4, sizeof *got);
    mixed_params(c, in);
    decode_alone(c, in, MIX, ref);
    int sampled = 0;
    for (int threads = 1; threads <= 2; threads++) {
        mt_par_set_threads(threads);
        decode_together(c, in, MIX, got);
        for (int i = 0; i < MIX; i++) {
            int nb = in[i].dp.n_best ? in[i].dp.n_best : 1;
            for (int k = 0; k < nb; k++)
                hyps_equal(&ref[i * 4 + k], &got[i * 4 + k]);
            mt_hyps_free(got + i * 4, nb);
            sampled += threads == 1 && in[i].dp.sampling.enabled;
        }
        mt_decode_params one = in[0].dp;       /* and alone, under this thread count */
        const int32_t *sp = in[0].src;
        mt_hyp h;
        assert_int_equal(mt_generate(c->s, &sp, &in[0].n_src, 1, &one, &h, NULL), MT_OK);
        hyps_equal(&ref[0], &h);
        mt_hyps_free(&h, 1);
    }
    mt_par_set_threads(1);
    print_message("  [%s] %d sampled sequences (seeded) of a mix of %d: the same alone, batched, 1 and 2 threads\n",
                  c->name, sampled, MIX);
    for (int i = 0; i < MIX; i++)
        mt_hyps_free(ref + i * 4, in[i].dp.n_best ? in[i].dp.n_best : 1);
    free(in);
    free(ref);
    free(got);
}

/* Different seeds: different outputs (16 seeds at temperature 1 give at
 * least 4 distinct outputs), and seed reuse gives the same. */
static void test_sampling_seeds_differ(void **state)
{
    CTX_OR_RETURN(c);
    row_in in;
    row_params(c->rows[c->n_rows - 1], &in, 0);
    const int32_t *sp = in.src;
    mt_hyp h[16];
    int distinct = 0;
    for (int i = 0; i < 16; i++) {
        mt_decode_params dp = sampling_params(1000 + (uint64_t)i, 1.0f, 0, 1.0f, 24);
        assert_int_equal(mt_generate(c->s, &sp, &in.n_src, 1, &dp, &h[i], NULL), MT_OK);
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = h[j].n_ids == h[i].n_ids && !memcmp(h[j].ids, h[i].ids, sizeof(int32_t) * (size_t)h[i].n_ids);
        distinct += !seen;
    }
    print_message("  [%s] 16 seeds: %d distinct outputs\n", c->name, distinct);
    assert_true(distinct >= 4);
    mt_hyps_free(h, 16);
}

/* The 0.999 quantile of chi-square with df degrees of freedom (Wilson-Hilferty). */
static double chi2_crit(int df)
{
    double z = 3.0902, a = 2.0 / (9.0 * df), t = 1.0 - a + z * sqrt(a);
    return df * t * t * t;
}

static void test_sampling_distribution(void **state)
{
    CTX_OR_RETURN(c);
    json_t *dists = json_object_get(c->sampling, "dists");
    int V = mt_model_get_info(c->m)->vocab_size;
    long *count = malloc(sizeof(long) * (size_t)V);
    row_in *in = calloc(N_DRAWS, sizeof *in);
    const int32_t **src = malloc(sizeof *src * N_DRAWS);
    int *len = malloc(sizeof(int) * N_DRAWS);
    const mt_decode_params **each = malloc(sizeof *each * N_DRAWS);
    mt_hyp *h = calloc(N_DRAWS, sizeof *h);
    size_t n_dists = json_array_size(dists);
    if (RUNNING_ON_VALGRIND && n_dists > VALGRIND_DISTS) {
        print_message("  [%s] under valgrind: %d of %zu distributions\n", c->name, VALGRIND_DISTS, n_dists);
        n_dists = VALGRIND_DISTS;
    }
    for (size_t d = 0; d < n_dists; d++) {
        json_t *dj = json_array_get(dists, d);
#ifdef SANITIZER_DISTS
        if (d % 5 != 0 && d % 5 != 4) {       /* 5 settings per source: the plain one and top-k + top-p */
            if (d % 5 == 1)
                print_message("  [%s] under a sanitizer: %d of the 5 settings\n", c->name, SANITIZER_DISTS);
            continue;
        }
#endif
        int32_t s0[512], ids[4096];
        int ns = ids_of(json_object_get(dj, "src_ids"), s0, 512), nk = ids_of(json_object_get(dj, "ids"), ids, 4096);
        json_t *probs = json_object_get(dj, "probs");
        double rest = num(dj, "rest");
        int support = inum(dj, "support");
        for (int i = 0; i < N_DRAWS; i++) {
            memcpy(in[i].src, s0, sizeof(int32_t) * (size_t)ns);
            in[i].n_src = ns;
            /* max_length 3: the first step is drawn, the second is the forced </s> */
            in[i].dp = sampling_params(7000 + (uint64_t)i, (float)num(dj, "temperature"), inum(dj, "top_k"),
                                       (float)num(dj, "top_p"), 3);
            src[i] = in[i].src, len[i] = ns, each[i] = &in[i].dp;
        }
        assert_int_equal(mt_generate_each(c->s, src, len, N_DRAWS, each, h, NULL), MT_OK);
        memset(count, 0, sizeof(long) * (size_t)V);
        for (int i = 0; i < N_DRAWS; i++) {
            assert_true(h[i].n_ids >= 1);
            count[h[i].ids[0]]++;
        }
        mt_hyps_free(h, N_DRAWS);
        /* bins: listed ids with expected >= 5; everything else pooled */
        double chi2 = 0, pooled_e = rest * N_DRAWS;
        long pooled_o = N_DRAWS, outside = 0;
        int bins = 0;
        for (int k = 0; k < nk; k++) {
            double e = json_number_value(json_array_get(probs, (size_t)k)) * N_DRAWS;
            if (e >= 5) {
                chi2 += (count[ids[k]] - e) * (count[ids[k]] - e) / e;
                pooled_o -= count[ids[k]];
                bins++;
            } else {
                pooled_e += e;
            }
        }
        if (support == nk) {        /* every id of the support listed: nothing else may be drawn */
            long listed = 0;
            for (int k = 0; k < nk; k++)
                listed += count[ids[k]];
            outside = N_DRAWS - listed;
        }
        if (pooled_e >= 5) {
            chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
            bins++;
        }
        double crit = bins >= 2 ? chi2_crit(bins - 1) : 0.0;
        print_message("  [%s] T %.2g top_k %d top_p %.2g (support %d ids): %d draws, chi-square %.1f on %d bins "
                      "(0.999 quantile %.1f)%s\n", c->name, num(dj, "temperature"), inum(dj, "top_k"),
                      num(dj, "top_p"), support, N_DRAWS, chi2, bins, crit,
                      support == nk ? ", none outside the support" : "");
        assert_int_equal(outside, 0);
        if (bins < 2) {                 /* one id holds all the mass: every draw is that id */
            assert_int_equal(support, 1);
            assert_int_equal(count[ids[0]], N_DRAWS);
            continue;
        }
        assert_true(chi2 <= crit);
    }
    free(count);
    free(in);
    free(src);
    free(len);
    free(each);
    free(h);
}

/* ---- parameters and allocation ------------------------------------------------------------------ */
static void test_bad_params(void **state)
{
    CTX_OR_RETURN(c);
    row_in in;
    row_params(c->rows[0], &in, 0);
    const int32_t *sp = in.src;
    int32_t bad_pre[] = {0};
    struct { const char *what; mt_decode_params dp; } cases[12];
    int n = 0;
    for (int k = 0; k < 12; k++)
        cases[k].dp = mt_decode_default_params(), cases[k].dp.lengths.max_length = 16;
    cases[n].what = "negative temperature"; cases[n].dp.sampling.enabled = 1; cases[n].dp.beam_size = 1;
    cases[n++].dp.sampling.temperature = -1;
    cases[n].what = "top_p > 1"; cases[n].dp.sampling.enabled = 1; cases[n].dp.beam_size = 1;
    cases[n++].dp.sampling.top_p = 1.5f;
    cases[n].what = "top_k < 0"; cases[n].dp.sampling.enabled = 1; cases[n].dp.beam_size = 1;
    cases[n++].dp.sampling.top_k = -1;
    cases[n].what = "sampling with beam 4"; cases[n].dp.sampling.enabled = 1; cases[n++].dp.beam_size = 4;
    cases[n].what = "penalty < 0"; cases[n++].dp.penalties.repetition = -1;
    cases[n].what = "ngram < 0"; cases[n++].dp.penalties.no_repeat_ngram_size = -2;
    cases[n].what = "min_length > max_length"; cases[n++].dp.lengths.min_length = 17;
    cases[n].what = "prefix too long"; cases[n].dp.prefix = in.pre; cases[n++].dp.n_prefix = 15;
    cases[n].what = "prefix holds </s>"; cases[n].dp.prefix = bad_pre; cases[n].dp.n_prefix = 1; n++;
    cases[n].what = "alignment layer"; cases[n].dp.alignment.enabled = 1; cases[n++].dp.alignment.layer = 99;
    cases[n].what = "alignment heads"; cases[n].dp.alignment.enabled = 1; cases[n++].dp.alignment.heads = 99;
    for (int k = 0; k < n; k++) {
        mt_hyp h[4];
        mt_err err = {0};
        mt_status st = mt_generate(c->s, &sp, &in.n_src, 1, &cases[k].dp, h, &err);
        if (st != MT_ERR_INPUT)
            fail_msg("%s: status %d", cases[k].what, st);
        assert_true(err.msg[0] != 0);
        assert_int_equal(mt_session_seqs(c->s), 0);
    }
    print_message("  [%s] %d invalid parameter sets refused with MT_ERR_INPUT and a message\n", c->name, n);
}

static void test_no_alloc_with_features(void **state)
{
    CTX_OR_RETURN(c);
#if !HAVE_ALLOC_COUNTER
    print_message("[  SKIP    ] allocation counter disabled under a sanitizer\n");
    skip();
#else
    row_in in[4];
    int ids[4];
    for (int k = 0; k < 4; k++)
        row_params(c->rows[k], &in[k], 0);
    in[0].dp = sampling_params(5, 1.1f, 40, 0.9f, 40);
    in[0].dp.penalties.repetition = 1.3f, in[0].dp.penalties.no_repeat_ngram_size = 2, in[0].dp.alignment.enabled = 1;
    in[0].dp.token_scores = 1, in[0].dp.alignment.layer = -1;
    /* and lexical constraints on a greedy and a beam row (their ids: the
     * first ids of the vocabulary past the special ones) */
    int32_t cons_ids[3] = {5, 6, 7};
    mt_constraint cons[2] = {{.src_start = 0, .src_end = 1, .ids = cons_ids, .n_ids = 2},
                             {.src_start = 1, .src_end = 2, .ids = cons_ids + 2, .n_ids = 1}};
    for (int k = 1; k < 3; k++) {
        in[k].dp.constraints = cons;
        in[k].dp.n_constraints = in[k].n_src > 2 ? 2 : 1;
    }
    /* and a row whose copy guard fires (its copy ids: its unguarded output),
     * decoded again from the start within the counted steps */
    mt_hyp plain[MT_MAX_BEAM];
    const int32_t *src3 = in[3].src;
    in[3].dp.n_prefix = 0;
    assert_int_equal(mt_generate(c->s, &src3, &in[3].n_src, 1, &in[3].dp, plain, NULL), MT_OK);
    in[3].dp.copy.ids = plain[0].ids;
    in[3].dp.copy.n_ids = plain[0].n_ids - 1;
    in[3].dp.penalties.copy_guard = 1;
    for (int k = 0; k < 4; k++)
        assert_int_equal(mt_seq_start(c->s, in[k].src, in[k].n_src, &in[k].dp, &ids[k], NULL), MT_OK);
    mt_encode_started(c->s);
    long steps = 0;
    n_allocs = 0;
    counting = 1;
    while (!mt_seq_finished(c->s, ids[0]) || !mt_seq_finished(c->s, ids[1]) || !mt_seq_finished(c->s, ids[2]) ||
           !mt_seq_finished(c->s, ids[3])) {
        mt_step(c->s);
        steps++;
    }
    counting = 0;
    print_message("  [%s] %ld steps with sampling, rules, prefixes, alignments, constraints and a copy guard's "
                  "second decode: %ld allocations\n",
                  c->name, steps,
                  (long)n_allocs);
    assert_int_equal(n_allocs, 0);
    for (int k = 0; k < 4; k++) {
        mt_hyp h[16];
        assert_int_equal(mt_seq_take(c->s, ids[k], h, NULL), MT_OK);
        if (k == 3)                                 /* the guard fired: not the copy */
            assert_false(h[0].n_ids == plain[0].n_ids && !memcmp(h[0].ids, plain[0].ids, sizeof(int32_t) *
                                                                 (size_t)plain[0].n_ids));
        mt_hyps_free(h, in[k].dp.n_best ? in[k].dp.n_best : 1);
    }
    mt_hyps_free(plain, in[3].dp.n_best);
#endif
}

/* A stop callback: says stop once the row has *data ids; counts its calls. */
typedef struct {
    int after, calls;
} stop_at;

static int stop_after(void *data, const int32_t *ids, int n)
{
    stop_at *a = data;
    a->calls++;
    (void)ids;
    return n >= a->after;
}

static void test_stop_callback(void **state)
{
    CTX_OR_RETURN(c);
    int checked = 0;
    for (int r = 0; r < c->n_rows && r < 8; r++) {
        row_in in[2];
        const int32_t *src[2];
        int len[2];
        mt_hyp plain[2], got[2];
        stop_at at[2];
        const mt_decode_params *each[2] = { &in[0].dp, &in[1].dp };
        for (int k = 0; k < 2; k++) {           /* a greedy row and a sampling row, side by side */
            row_params(c->rows[(r + k) % c->n_rows], &in[k], 0);
            if (k)
                in[k].dp = sampling_params(9 + (uint64_t)r, 1.0f, 0, 1.0f, in[k].dp.lengths.max_length);
            in[k].dp.beam_size = in[k].dp.n_best = 1;
            src[k] = in[k].src, len[k] = in[k].n_src;
        }
        assert_int_equal(mt_generate_each(c->s, src, len, 2, each, plain, NULL), MT_OK);
        if (plain[0].n_ids < 3 || plain[1].n_ids < 3) {
            mt_hyps_free(plain, 2);
            continue;
        }
        for (int k = 0; k < 2; k++) {
            at[k] = (stop_at){ .after = plain[k].n_ids / 2 + k };
            in[k].dp.stop_callback = stop_after;
            in[k].dp.stop_callback_data = &at[k];
        }
        in[1].dp.stop_callback = r % 2 ? stop_after : NULL;     /* the row beside: stopped, or not asked */
        assert_int_equal(mt_generate_each(c->s, src, len, 2, each, got, NULL), MT_OK);
        for (int k = 0; k < 2; k++) {
            int want = in[k].dp.stop_callback ? at[k].after : plain[k].n_ids;
            if (got[k].n_ids != want || memcmp(got[k].ids, plain[k].ids, sizeof(int32_t) * (size_t)want))
                fail_msg("row %d/%d: %d ids, want the first %d of %d", r, k, got[k].n_ids, want, plain[k].n_ids);
            if (in[k].dp.stop_callback)
                assert_int_equal(at[k].calls, want);        /* once a step, from the first id */
        }
        mt_hyps_free(plain, 2);
        mt_hyps_free(got, 2);
        checked++;
    }
    /* a beam row is never asked */
    row_in b;
    row_params(c->rows[0], &b, 0);
    b.dp.beam_size = b.dp.n_best = 2;
    stop_at never = { .after = 1 };
    b.dp.stop_callback = stop_after;
    b.dp.stop_callback_data = &never;
    const int32_t *sp = b.src;
    mt_hyp h[2];
    assert_int_equal(mt_generate(c->s, &sp, &b.n_src, 1, &b.dp, h, NULL), MT_OK);
    assert_int_equal(never.calls, 0);
    mt_hyps_free(h, 2);
    print_message("  [%s] %d row pairs stopped where the callback said: the unstopped rows' first ids\n", c->name,
                  checked);
    assert_true(checked >= 3);
}

/* Greedy ids under a length cap (lengths.max_length_factor): the uncapped
 * ids cut at ceil(factor x source ids) + the model's extra generated ids,
 * the last forced to </s> (the steps before never depend on the cap).  A
 * factor of 0 is the model's default (generation_config.json: en-fr's 2). */
static int capped_as_cut(ctx *c, row_in *in, float factor, int *was_cut)
{
    const mt_model_info *mi = mt_model_get_info(c->m);
    const int32_t *src = in->src;
    mt_hyp plain, capped;
    in->dp.lengths.max_length_factor = MT_LENGTH_FACTOR_NONE;
    assert_int_equal(mt_generate(c->s, &src, &in->n_src, 1, &in->dp, &plain, NULL), MT_OK);
    in->dp.lengths.max_length_factor = factor;
    assert_int_equal(mt_generate(c->s, &src, &in->n_src, 1, &in->dp, &capped, NULL), MT_OK);
    double f = factor > 0 ? factor : mi->default_length_factor > 0 ? mi->default_length_factor : MT_LENGTH_FACTOR_NONE;
    double limit = ceil(f * in->n_src) + mi->default_length_extra;
    int ok;
    *was_cut = plain.n_ids > limit;
    if (!*was_cut)
        ok = capped.n_ids == plain.n_ids && !memcmp(capped.ids, plain.ids, sizeof(int32_t) * (size_t)plain.n_ids);
    else
        ok = capped.n_ids == (int)limit && !memcmp(capped.ids, plain.ids, sizeof(int32_t) * (size_t)(limit - 1)) &&
             capped.ids[capped.n_ids - 1] == mi->eos_id;
    if (!ok)
        print_message("    factor %g, %d source ids: %d ids capped, %d uncapped, limit %g\n", factor, in->n_src,
                      capped.n_ids, plain.n_ids, limit);
    mt_hyps_free(&plain, 1);
    mt_hyps_free(&capped, 1);
    return ok;
}

static void test_length_cap(void **state)
{
    CTX_OR_RETURN(c);
    const mt_model_info *mi = mt_model_get_info(c->m);
    if (!strcmp(c->name, "en-fr")) {            /* the shipped model's, measured (models/recipe/export.py) */
        assert_true(mi->default_length_factor == 2.0f);
        assert_int_equal(mi->default_length_extra, 10);
    }
    int rows = 0, cut = 0, cut_default = 0;
    for (int r = 0; r < c->n_rows && rows < 24; r++) {
        row_in in;
        row_params(c->rows[r], &in, 0);
        if (in.dp.beam_size != 1 || in.dp.n_prefix || in.dp.lengths.min_length)
            continue;
        int was_cut;
        if (!capped_as_cut(c, &in, 0.25f, &was_cut))
            fail_msg("row %d: the capped ids are not the uncapped ones cut", r);
        cut += was_cut;
        if (!capped_as_cut(c, &in, 0, &was_cut))
            fail_msg("row %d: the model's default cap is not the uncapped ids cut", r);
        cut_default += was_cut;
        rows++;
    }
    print_message("  [%s] %d greedy rows: factor 0.25 cut %d, the model's default (%g, + %d) cut %d; the rest "
                  "equal\n", c->name, rows, cut, mi->default_length_factor, mi->default_length_extra, cut_default);
    assert_true(rows >= 4 && cut >= 1);
}

/* 1 when hyp h's ids, </s> aside, loop as the engine's guard says (generate.c
 * ids_loop, written again here: a 4-gram 3 times or an id 4 times in a row). */
static int hyp_loops(const mt_hyp *h, int32_t eos)
{
    int n = h->n_ids > 0 && h->ids[h->n_ids - 1] == eos ? h->n_ids - 1 : h->n_ids;
    for (int i = 0; i + 4 <= n; i++) {
        int same4 = 0, run = 1;
        for (int j = i; j + 4 <= n; j++)
            same4 += !memcmp(h->ids + i, h->ids + j, 4 * sizeof *h->ids);
        while (i + run < n && h->ids[i + run] == h->ids[i])
            run++;
        if (same4 >= 3 || run >= 4)
            return 1;
    }
    return 0;
}

static int same_hyp(const mt_hyp *a, const mt_hyp *b)
{
    return a->n_ids == b->n_ids && !memcmp(a->ids, b->ids, sizeof(int32_t) * (size_t)a->n_ids);
}

/* The loop guard (penalties.loop_no_repeat): an output that loops is the
 * output of decoding with no_repeat_ngram_size 3 from the start; one that
 * does not is the unguarded output; greedy and beam 4 (the best hypothesis). */
static void test_loop_guard(void **state)
{
    CTX_OR_RETURN(c);
    const mt_model_info *mi = mt_model_get_info(c->m);
    int rows = 0, looped = 0;
    for (int r = 0; r < c->n_rows && rows < 24; r++) {
        row_in in;
        row_params(c->rows[r], &in, 0);
        if (in.dp.n_prefix || in.dp.penalties.no_repeat_ngram_size)
            continue;
        for (int beam = 1; beam <= 4; beam += 3) {
            const int32_t *src = in.src;
            mt_hyp plain[4], guarded[4], banned[4];
            in.dp.beam_size = in.dp.n_best = beam;
            in.dp.penalties.loop_no_repeat = -1;
            assert_int_equal(mt_generate(c->s, &src, &in.n_src, 1, &in.dp, plain, NULL), MT_OK);
            in.dp.penalties.loop_no_repeat = 3;
            assert_int_equal(mt_generate(c->s, &src, &in.n_src, 1, &in.dp, guarded, NULL), MT_OK);
            in.dp.penalties.loop_no_repeat = -1;
            in.dp.penalties.no_repeat_ngram_size = 3;
            assert_int_equal(mt_generate(c->s, &src, &in.n_src, 1, &in.dp, banned, NULL), MT_OK);
            in.dp.penalties.no_repeat_ngram_size = 0;
            int loops = hyp_loops(&plain[0], mi->eos_id);
            if (!same_hyp(&guarded[0], loops ? &banned[0] : &plain[0]))
                fail_msg("row %d beam %d: the guarded output is not the %s one", r, beam, loops ? "n-gram-banned" :
                         "unguarded");
            looped += loops;
            mt_hyps_free(plain, beam);
            mt_hyps_free(guarded, beam);
            mt_hyps_free(banned, beam);
        }
        rows++;
    }
    print_message("  [%s] %d rows x greedy and beam 4: %d outputs looped and were decoded again with "
                  "no_repeat_ngram_size 3 (= banning from the start), the rest unchanged\n", c->name, rows, looped);
    assert_true(rows >= 3);         /* valgrind loads 12 rows, 3 of them without a prefix or n-gram ban */
    if (!strcmp(c->name, "tiny"))
        assert_true(looped >= 1);       /* random weights loop: the retry path ran */
}

/* Hypothesis h's ids after the first skip (the forced ones) without </s>:
 * 1 when they are ids[0..n). */
static int hyp_is(const mt_hyp *h, int skip, int32_t eos, const int32_t *ids, int n)
{
    int k = h->n_ids - skip - (h->n_ids > 0 && h->ids[h->n_ids - 1] == eos);
    return k == n && !memcmp(h->ids + skip, ids, sizeof(int32_t) * (size_t)n);
}

/* One decode of src with dp into out (beam hypotheses). */
static void decode1(ctx *c, const int32_t *src, int n_src, const mt_decode_params *dp, mt_hyp *out)
{
    mt_err err = {0};
    if (mt_generate(c->s, &src, &n_src, 1, dp, out, &err) != MT_OK)
        fail_msg("mt_generate: %s", err.msg);
}

/* The copy guard (penalties.copy_guard, copy.ids): given the unguarded output
 * as its copy ids, the guarded output is the output of decoding with the copy
 * ban from the start (copy.ban), and none of its hypotheses is the copy;
 * given ids it is not (the output less its last id), it is the unguarded
 * output; greedy and beam 4.  Bad copy ids are refused. */
static void test_copy_guard(void **state)
{
    CTX_OR_RETURN(c);
    const mt_model_info *mi = mt_model_get_info(c->m);
    int rows = 0, fired = 0, changed = 0;
    for (int r = 0; r < c->n_rows && rows < 24; r++) {
        row_in in;
        row_params(c->rows[r], &in, 0);
        if (in.dp.n_prefix || in.dp.penalties.no_repeat_ngram_size)
            continue;
        for (int beam = 1; beam <= 4; beam += 3) {
            mt_hyp plain[4], guarded[4], banned[4], other[4];
            in.dp.beam_size = in.dp.n_best = beam;
            in.dp.penalties.copy_guard = -1;
            decode1(c, in.src, in.n_src, &in.dp, plain);
            int32_t copy[128];
            int n = plain[0].n_ids - (plain[0].n_ids > 0 && plain[0].ids[plain[0].n_ids - 1] == mi->eos_id);
            assert_true(n <= 128);
            memcpy(copy, plain[0].ids, sizeof(int32_t) * (size_t)(n > 0 ? n : 0));
            in.dp.copy.ids = copy;
            in.dp.copy.n_ids = n;
            decode1(c, in.src, in.n_src, &in.dp, other);        /* off: the ids change nothing */
            assert_true(same_hyp(&other[0], &plain[0]));
            mt_hyps_free(other, beam);
            in.dp.penalties.copy_guard = 1;
            decode1(c, in.src, in.n_src, &in.dp, guarded);
            in.dp.penalties.copy_guard = -1;
            in.dp.copy.ban = 1;
            decode1(c, in.src, in.n_src, &in.dp, banned);
            in.dp.copy.ban = 0;
            if (n > 0) {
                if (!same_hyp(&guarded[0], &banned[0]))
                    fail_msg("row %d beam %d: the guarded output is not the copy-banned one", r, beam);
                for (int k = 0; k < beam; k++)
                    if (guarded[k].n_ids > 0 && hyp_is(&guarded[k], 0, mi->eos_id, copy, n))
                        fail_msg("row %d beam %d: guarded hypothesis %d is the copy", r, beam, k);
                fired++;
                changed += !same_hyp(&guarded[0], &plain[0]);
            }
            in.dp.copy.n_ids = n - 1;                           /* not the output: unchanged */
            in.dp.penalties.copy_guard = 1;
            if (n > 1) {
                decode1(c, in.src, in.n_src, &in.dp, other);
                if (!same_hyp(&other[0], &plain[0]))
                    fail_msg("row %d beam %d: an output that is not its copy ids changed", r, beam);
                mt_hyps_free(other, beam);
            }
            in.dp.copy.n_ids = 0;
            in.dp.penalties.copy_guard = -1;
            mt_hyps_free(plain, beam);
            mt_hyps_free(guarded, beam);
            mt_hyps_free(banned, beam);
        }
        rows++;
    }
    print_message("  [%s] %d rows x greedy and beam 4: the guard fired %d times (= the copy ban from the start), "
                  "%d outputs changed; ids other than the output: unchanged\n", c->name, rows, fired, changed);
    assert_true(rows >= 3 && fired >= rows);
    assert_true(changed == fired);      /* the ban from the start cannot give the copy back */
    row_in in;
    row_params(c->rows[0], &in, 0);
    int32_t bad[2] = {5, mi->eos_id};
    in.dp.copy.ids = bad;
    in.dp.copy.n_ids = 2;
    mt_hyp h[16];
    const int32_t *src = in.src;
    mt_err err = {0};
    assert_int_equal(mt_generate(c->s, &src, &in.n_src, 1, &in.dp, h, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "copy guard"));
}

/* The copy guard against the PyTorch reference (models/recipe/copy_fixtures.py:
 * repeats.py's greedy_no_copy) on labels the model gives back as they are:
 * the unguarded greedy ids and the guarded ones (the source's ids, </s> left
 * out, as the server gives them) are the reference's; beam 4 guarded is beam 4
 * banned from the start and not the copy. */
static void test_copy_reference(void **state)
{
    CTX_OR_RETURN(c);
    const mt_model_info *mi = mt_model_get_info(c->m);
    char path[128];
    snprintf(path, sizeof path, "tests/fixtures/%s/copy_guard.jsonl", c->name);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s is missing: run models/recipe/copy_fixtures.py", path);
    char *line = NULL;
    size_t cap = 0;
    int rows = 0, copies = 0, beam_copies = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *r = json_loads(line, 0, NULL);
        assert_non_null(r);
        int32_t src[128], plain_ref[128], guarded_ref[128];
        int n_src = ids_of(json_object_get(r, "src_ids"), src, 128);
        int n_plain = ids_of(json_object_get(r, "plain_ids"), plain_ref, 128);
        int n_guarded = ids_of(json_object_get(r, "guarded_ids"), guarded_ref, 128);
        int is_copy = json_is_true(json_object_get(r, "copy"));
        mt_decode_params dp = mt_decode_default_params();
        dp.beam_size = dp.n_best = 1;
        dp.lengths.max_length = inum(r, "max_length");
        dp.lengths.max_length_factor = MT_LENGTH_FACTOR_NONE;
        dp.penalties.loop_no_repeat = -1;
        dp.penalties.copy_guard = -1;
        dp.copy.ids = src;
        dp.copy.n_ids = n_src - 1;
        mt_hyp plain[4], guarded[4], banned[4];
        decode1(c, src, n_src, &dp, plain);
        assert_true(hyp_is(&plain[0], 0, -1, plain_ref, n_plain));
        assert_int_equal(hyp_is(&plain[0], 0, mi->eos_id, src, n_src - 1), is_copy);
        dp.penalties.copy_guard = 1;
        decode1(c, src, n_src, &dp, guarded);
        if (!hyp_is(&guarded[0], 0, -1, guarded_ref, n_guarded))
            fail_msg("%s: the guarded ids are not greedy_no_copy's", json_string_value(json_object_get(r, "text")));
        mt_hyps_free(plain, 1);
        mt_hyps_free(guarded, 1);
        dp.beam_size = dp.n_best = 4;
        decode1(c, src, n_src, &dp, guarded);
        dp.penalties.copy_guard = -1;
        dp.copy.ban = 1;
        decode1(c, src, n_src, &dp, banned);
        dp.copy.ban = 0;
        decode1(c, src, n_src, &dp, plain);
        int beam_copy = hyp_is(&plain[0], 0, mi->eos_id, src, n_src - 1);
        assert_true(same_hyp(&guarded[0], beam_copy ? &banned[0] : &plain[0]));
        for (int k = 0; k < 4 && beam_copy; k++)        /* fired: no hypothesis is the copy */
            assert_false(hyp_is(&guarded[k], 0, mi->eos_id, src, n_src - 1));
        beam_copies += beam_copy;
        mt_hyps_free(plain, 4);
        mt_hyps_free(guarded, 4);
        mt_hyps_free(banned, 4);
        copies += is_copy;
        rows++;
        json_decref(r);
    }
    free(line);
    fclose(f);
    print_message("  [%s] %d labels, %d copied by greedy: the guarded ids are the PyTorch reference's; %d copied by "
                  "beam 4: guarded = banned from the start\n", c->name, rows, copies, beam_copies);
    assert_true(rows >= 4 && copies >= 2);
}

/* What a scheduler weighs before starting a sentence (scheduler.c fits):
 * the weight bytes of one decoder step against the model's shapes, and the
 * K/V bytes the next step reads as one greedy and one beam sequence start,
 * step and finish. */
static void test_step_bytes(void **state)
{
    CTX_OR_RETURN(c);
    const mt_model_info *mi = mt_model_get_info(c->m);
    size_t d = (size_t)mi->d_model, L = (size_t)mi->dec_layers, F = (size_t)mi->dec_ffn, V = (size_t)mi->vocab_size;
    size_t per_w = !strcmp(mi->weights, "INT8") ? 1 : !strcmp(mi->weights, "F16") ? 2 : 4;
    /* per layer: self q|k|v and out (4 d^2), cross q and out (2 d^2), fc1 and fc2 (2 d F); the head V d.
     * Packed in panels of 16 outputs (an F32 or F16 model: no INT8 scales) */
#define PAD16(n) (((n) + 15) / 16 * 16)
    size_t want_w = L * (d * PAD16(3 * d) + 3 * d * PAD16(d) + d * PAD16(F) + F * PAD16(d)) + d * PAD16(V);
    assert_true(per_w != 1);
    assert_int_equal(mt_model_step_weight_bytes(c->m), per_w * want_w);
#undef PAD16
    mt_session_params sp = mt_session_default_params(c->m);
    sp.kv_f16 = 0;
    mt_session *s = NULL;
    assert_int_equal(mt_session_new(c->m, &sp, &s, NULL), MT_OK);
    size_t pos_bytes = L * 2 * d * sizeof(float);       /* one position, self or cross, every layer */
    assert_int_equal(mt_session_kv_step_bytes(s, 0, 0), 0);
    assert_int_equal(mt_session_kv_step_bytes(s, 7, 2), 2 * (7 + 7) * pos_bytes);   /* half-way: 7 + 7 */
    row_in in[2];
    int ids[2];
    for (int k = 0; k < 2; k++) {
        row_params(c->rows[k], &in[k], 0);
        in[k].dp = mt_decode_default_params();
        in[k].dp.beam_size = 1 + 2 * k;                  /* greedy, beam 3 */
        in[k].dp.lengths.max_length = 6;
        assert_int_equal(mt_seq_start(s, in[k].src, in[k].n_src, &in[k].dp, &ids[k], NULL), MT_OK);
    }
    /* before the first step each row reads its start position and its source */
    size_t want = (1 + (size_t)in[0].n_src) * pos_bytes + 3 * (1 + (size_t)in[1].n_src) * pos_bytes;
    assert_int_equal(mt_session_kv_step_bytes(s, 0, 0), want);
    assert_int_equal(mt_session_kv_step_bytes(s, 5, 1), want + 10 * pos_bytes);
    int checked = 0;
    for (int t = 1; t <= 3; t++) {
        mt_step(s);
        if (mt_seq_finished(s, ids[0]) || mt_seq_finished(s, ids[1]))
            break;                                      /* a finished sequence's rows are not read */
        want = (1 + t + (size_t)in[0].n_src) * pos_bytes + 3 * (1 + t + (size_t)in[1].n_src) * pos_bytes;
        assert_int_equal(mt_session_kv_step_bytes(s, 0, 0), want);
        checked++;
    }
    print_message("  [%s] step weights %zu bytes; K/V bytes checked before the first step and after %d\n", c->name,
                  mt_model_step_weight_bytes(c->m), checked);
    assert_true(checked >= 1);
    for (int k = 0; k < 2; k++)
        mt_seq_cancel(s, ids[k]);
    assert_int_equal(mt_session_kv_step_bytes(s, 0, 0), 0);
    mt_session_free(s);
}

static int teardown(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof CTX / sizeof *CTX; k++) {
        mt_session_free(CTX[k].s);
        mt_model_free(CTX[k].m);
        for (int i = 0; i < CTX[k].n_loaded; i++)
            json_decref(CTX[k].rows[i]);
        json_decref(CTX[k].sampling);
    }
    return 0;
}

#define PER_MODEL(fn)                                                          \
    {.name = #fn " [tiny]", .test_func = fn, .initial_state = &CTX[0]},        \
    {.name = #fn " [en-fr]", .test_func = fn, .initial_state = &CTX[1]}

int main(void)
{
    const struct CMUnitTest tests[] = {
        PER_MODEL(test_reference),
        PER_MODEL(test_rules_hold),
        PER_MODEL(test_batched_equals_alone),
        PER_MODEL(test_sampling_reproducible),
        PER_MODEL(test_sampling_seeds_differ),
        PER_MODEL(test_sampling_distribution),
        PER_MODEL(test_bad_params),
        PER_MODEL(test_no_alloc_with_features),
        PER_MODEL(test_step_bytes),
        PER_MODEL(test_stop_callback),
        PER_MODEL(test_length_cap),
        PER_MODEL(test_loop_guard),
        PER_MODEL(test_copy_guard),
        {.name = "test_copy_reference [en-fr]", .test_func = test_copy_reference, .initial_state = &CTX[1]},
    };
    /* MT_TEST_FILTER="*[tiny]" (cmocka's wildcards): `make valgrind` on the
     * tiny model alone, the same code as en-fr's at shapes valgrind runs in minutes */
    const char *filter = getenv("MT_TEST_FILTER");
    if (filter && *filter)
        cmocka_set_test_filter(filter);
    return cmocka_run_group_tests_name("test_decode", tests, NULL, teardown);
}
