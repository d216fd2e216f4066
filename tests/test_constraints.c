/* test_constraints.c: the engine's lexical constraints (mt_decode_params
 * constraints, engine/decode/constraints.c) on models/en-fr.
 *
 * Sources: the first lines of the held-out test split; constraints: words of
 * the French reference lines, tokenized as target text, each on a random
 * source word (seeded, so every run is the same).
 *  - every hypothesis (greedy; beam 4 with its 4 best) holds each
 *    constraint's ids as a contiguous run, and ends with </s> or at max_length
 *  - one to MT_MAX_CONSTRAINTS constraints, short max_length (the deadline)
 *  - n_constraints 0 (with a non-NULL array) is byte-identical to none
 *  - the same sequences in one continuous batch (mixed: constrained and
 *    plain, greedy and beam, joining as rows free up, 2 compute threads) give
 *    the results they give alone
 *  - bad constraints are refused with a message naming 'glossary'
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mt.h"
#include "tokenizer/tokenizer.h"

#define N_SRC   24
#define MAX_IDS 128

typedef struct {
    mt_model *m;
    mt_session *s;
    const mt_tokenizer *tok;
    int32_t src[N_SRC][MAX_IDS];
    int n_src[N_SRC];
    char fr[N_SRC][512];
} ctx;

static ctx C;

static int read_lines(const char *path, char out[][512], int n)
{
    FILE *f = fopen(path, "r");
    int k = 0;
    while (f && k < n && fgets(out[k], 512, f)) {
        out[k][strcspn(out[k], "\n")] = 0;
        if (strlen(out[k]) > 20 && strlen(out[k]) < 200)
            k++;
    }
    if (f)
        fclose(f);
    return k;
}

static int setup(void **state)
{
    (void)state;
    mt_err err = {0};
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = 2;
    if (mt_model_load("models/en-fr", &mp, &C.m, &err) != MT_OK)
        return -1;
    mt_session_params sp = mt_session_default_params(C.m);
    sp.max_batch = 32;
    sp.max_tgt_len = 128;
    if (mt_session_new(C.m, &sp, &C.s, &err) != MT_OK)
        return -1;
    C.tok = mt_model_tokenizer(C.m);
    static char en[N_SRC][512];
    if (read_lines("tests/fixtures/tokenizer/inputs/test.en.txt", en, N_SRC) != N_SRC ||
        read_lines("tests/fixtures/tokenizer/inputs/test.fr.txt", C.fr, N_SRC) != N_SRC)
        return -1;
    for (int i = 0; i < N_SRC; i++)
        if (mt_tokenizer_encode(C.tok, en[i], strlen(en[i]), 0, C.src[i], MAX_IDS, &C.n_src[i], &err) != MT_OK)
            return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mt_session_free(C.s);
    mt_model_free(C.m);
    return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int rnd(int n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

/* Up to k constraints for source i: words of its French line (ids into buf). */
typedef struct {
    mt_constraint c[MT_MAX_CONSTRAINTS];
    int32_t buf[MT_MAX_CONSTRAINTS][16];
    int n;
} cons_set;

static void make_constraints(int i, int k, cons_set *cs)
{
    char line[512], *save = NULL;
    memcpy(line, C.fr[i], sizeof line);
    char *words[64];
    int nw = 0;
    for (char *w = strtok_r(line, " ", &save); w && nw < 64; w = strtok_r(NULL, " ", &save))
        words[nw++] = w;
    cs->n = 0;
    for (int j = 0; j < k && nw > 0; j++) {
        const char *w = words[rnd(nw)];
        int n = 0;
        mt_err err = {0};
        if (mt_tokenizer_encode(C.tok, w, strlen(w), 1, cs->buf[cs->n], 16, &n, &err) != MT_OK || n < 2)
            continue;
        int a = rnd(C.n_src[i] - 1);
        cs->c[cs->n] = (mt_constraint){.src_start = a, .src_end = a + 1, .ids = cs->buf[cs->n], .n_ids = n - 1};
        cs->n++;
    }
}

static int holds(const mt_hyp *h, const mt_constraint *c)
{
    for (int p = 0; p + c->n_ids <= h->n_ids; p++)
        if (!memcmp(h->ids + p, c->ids, sizeof(int32_t) * (size_t)c->n_ids))
            return 1;
    return 0;
}

static void check_all(const mt_hyp *h, int n_best, const cons_set *cs, int max_length)
{
    for (int b = 0; b < n_best; b++) {
        assert_true(h[b].n_ids > 0);
        int ended = h[b].ids[h[b].n_ids - 1] == mt_model_get_info(C.m)->eos_id;
        assert_true(ended || h[b].n_ids >= max_length - 1);
        for (int j = 0; j < cs->n; j++) {
            if (!holds(&h[b], &cs->c[j]))
                print_error("hypothesis %d lacks constraint %d of %d\n", b, j, cs->n);
            assert_true(holds(&h[b], &cs->c[j]));
        }
    }
}

static void test_every_hypothesis_holds(void **state)
{
    (void)state;
    static const int beams[] = {1, 4};
    static const int counts[] = {1, 2, 3, MT_MAX_CONSTRAINTS};
    int checked = 0;
    for (int bi = 0; bi < 2; bi++)
        for (int ci = 0; ci < 4; ci++)
            for (int i = 0; i < N_SRC; i += ci == 3 ? 6 : 1) {
                cons_set cs;
                make_constraints(i, counts[ci], &cs);
                mt_decode_params p = mt_decode_default_params();
                p.beam_size = beams[bi];
                p.n_best = beams[bi];
                p.lengths.max_length = ci == 3 ? 100 : 0;
                p.constraints = cs.c;
                p.n_constraints = cs.n;
                mt_hyp h[4];
                mt_err err = {0};
                const int32_t *src[1] = {C.src[i]};
                mt_status st = mt_generate(C.s, src, &C.n_src[i], 1, &p, h, &err);
                if (st != MT_OK && ci == 3) {         /* 16 words may not fit in max_length */
                    assert_non_null(strstr(err.msg, "glossary"));
                    continue;
                }
                assert_int_equal(st, MT_OK);
                check_all(h, p.n_best, &cs, p.lengths.max_length ? p.lengths.max_length : 128);
                mt_hyps_free(h, p.n_best);
                checked++;
            }
    print_message("  %d constrained decodes, every hypothesis holds its constraints\n", checked);
}

static void test_deadline(void **state)
{
    (void)state;
    /* a short max_length: the constraints still go in before the forced </s> */
    for (int i = 0; i < N_SRC; i += 3) {
        cons_set cs;
        make_constraints(i, 2, &cs);
        int need = 0;
        for (int j = 0; j < cs.n; j++)
            need += cs.c[j].n_ids;
        for (int beam = 1; beam <= 4; beam += 3) {
            mt_decode_params p = mt_decode_default_params();
            p.beam_size = beam;
            p.lengths.max_length = need + 3;
            p.constraints = cs.c;
            p.n_constraints = cs.n;
            mt_hyp h[1];
            mt_err err = {0};
            const int32_t *src[1] = {C.src[i]};
            assert_int_equal(mt_generate(C.s, src, &C.n_src[i], 1, &p, h, &err), MT_OK);
            check_all(h, 1, &cs, p.lengths.max_length);
            assert_true(h[0].n_ids <= p.lengths.max_length - 1);
            mt_hyps_free(h, 1);
        }
    }
}

static void test_none_is_plain(void **state)
{
    (void)state;
    mt_constraint dummy = {0};
    for (int i = 0; i < N_SRC; i++)
        for (int beam = 1; beam <= 4; beam += 3) {
            mt_decode_params p = mt_decode_default_params(), q;
            p.beam_size = beam;
            q = p;
            q.constraints = &dummy;              /* n_constraints 0: not read */
            mt_hyp a[1], b[1];
            mt_err err = {0};
            const int32_t *src[1] = {C.src[i]};
            assert_int_equal(mt_generate(C.s, src, &C.n_src[i], 1, &p, a, &err), MT_OK);
            assert_int_equal(mt_generate(C.s, src, &C.n_src[i], 1, &q, b, &err), MT_OK);
            assert_int_equal(a[0].n_ids, b[0].n_ids);
            assert_memory_equal(a[0].ids, b[0].ids, sizeof(int32_t) * (size_t)a[0].n_ids);
            assert_true(a[0].score == b[0].score);
            mt_hyps_free(a, 1), mt_hyps_free(b, 1);
        }
}

static void test_batch_equals_alone(void **state)
{
    (void)state;
    cons_set cs[N_SRC];
    mt_decode_params p[N_SRC];
    const mt_decode_params *each[N_SRC];
    const int32_t *src[N_SRC];
    mt_hyp alone[N_SRC], batch[N_SRC];
    for (int i = 0; i < N_SRC; i++) {
        make_constraints(i, i % 4, &cs[i]);            /* 0..3 constraints */
        p[i] = mt_decode_default_params();
        p[i].beam_size = i % 3 == 0 ? 4 : 1;          /* beams and greedy rows mixed */
        p[i].constraints = cs[i].c;
        p[i].n_constraints = cs[i].n;
        each[i] = &p[i];
        src[i] = C.src[i];
        mt_err err = {0};
        assert_int_equal(mt_generate(C.s, &src[i], &C.n_src[i], 1, &p[i], &alone[i], &err), MT_OK);
    }
    mt_err err = {0};
    assert_int_equal(mt_generate_each(C.s, src, C.n_src, N_SRC, each, batch, &err), MT_OK);
    for (int i = 0; i < N_SRC; i++) {
        assert_int_equal(alone[i].n_ids, batch[i].n_ids);
        assert_memory_equal(alone[i].ids, batch[i].ids, sizeof(int32_t) * (size_t)alone[i].n_ids);
        check_all(&batch[i], 1, &cs[i], 128);
    }
    mt_hyps_free(alone, N_SRC);
    mt_hyps_free(batch, N_SRC);
}

static void expect_refused(mt_decode_params *p, const char *needle)
{
    mt_hyp h[1];
    mt_err err = {0};
    const int32_t *src[1] = {C.src[0]};
    assert_int_equal(mt_generate(C.s, src, &C.n_src[0], 1, p, h, &err), MT_ERR_INPUT);
    if (!strstr(err.msg, needle))
        print_error("'%s' lacks '%s'\n", err.msg, needle);
    assert_non_null(strstr(err.msg, needle));
}

static void test_refused(void **state)
{
    (void)state;
    int32_t ids[2] = {100, 200}, eos = mt_model_get_info(C.m)->eos_id;
    mt_constraint c[MT_MAX_CONSTRAINTS + 1];
    for (int i = 0; i <= MT_MAX_CONSTRAINTS; i++)
        c[i] = (mt_constraint){.src_start = 0, .src_end = 1, .ids = ids, .n_ids = 2};
    mt_decode_params p = mt_decode_default_params();
    p.constraints = c;
    p.n_constraints = MT_MAX_CONSTRAINTS + 1;
    expect_refused(&p, "the limit is 16");
    p.n_constraints = 1;
    c[0].n_ids = 0;
    expect_refused(&p, "no target ids");
    c[0] = (mt_constraint){.src_start = 2, .src_end = 2, .ids = ids, .n_ids = 2};
    expect_refused(&p, "empty source span");
    c[0] = (mt_constraint){.src_start = 0, .src_end = C.n_src[0] + 1, .ids = ids, .n_ids = 2};
    expect_refused(&p, "outside the source");
    int32_t bad[1] = {eos};
    c[0] = (mt_constraint){.src_start = 0, .src_end = 1, .ids = bad, .n_ids = 1};
    expect_refused(&p, "pad or </s>");
    c[0] = (mt_constraint){.src_start = 0, .src_end = 1, .ids = ids, .n_ids = 2};
    p.lengths.max_length = 3;
    expect_refused(&p, "leaves room");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_hypothesis_holds),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_none_is_plain),
        cmocka_unit_test(test_batch_equals_alone),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests_name("constraints", tests, setup, teardown);
}
