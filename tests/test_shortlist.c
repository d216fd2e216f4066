/* test_shortlist: lexical shortlists (engine/model/shortlist.c,
 * engine/decode/shortlist_step.c, the head in engine/model/decoder.c, the
 * formats in engine/formats/shortlist_fmt.c) on models/tiny and models/en-fr
 * with the sources of tests/fixtures/<model>/cases.jsonl:
 *   - a shortlist holding every id: the same ids and scores, bit for bit, as
 *     none, greedy and beam 4, through the gathered head (from the row-major
 *     and from the packed weights) and through the masked whole head;
 *   - a shortlist holding the reference outputs' ids: the same greedy outputs;
 *   - ids outside a sequence's candidates never appear (greedy, beam, sampling),
 *     and a sequence without one decodes beside it as alone;
 *   - a sequence's search over its list of candidates (shortlist_search_max)
 *     picks the ids the [V] rows do, greedy, beam 4 and sampling, and with
 *     constraints (which then read no id outside the list either), with
 *     log-probs within float rounding of theirs, and bit for bit the same
 *     through the gathered and the masked head;
 *   - a decode step with shortlists allocates nothing;
 *   - the three file formats: written and read back, every corruption refused
 *     with its byte offset or line. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "mt.h"
#include "formats/shortlist_fmt.h"
#include "model/mt_internal.h"
#include "alloc_count.h"
#include "ref_params.h"

#define MAX_CASES 48
#define MAX_IDS   512

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif
#define VALGRIND_CASES 3       /* under valgrind (50x slower): the first cases, at most 16 ids each */
#define VALGRIND_MAX_LENGTH 17

typedef struct {
    const char *name;
    int loaded, skip;
    mt_model *m;
    int n;                              /* cases with a non-trivial source */
    int32_t src[MAX_CASES][MAX_IDS];
    int src_len[MAX_CASES];
    int32_t ref[MAX_CASES][MAX_IDS];    /* the fixture's greedy ids */
    int ref_len[MAX_CASES];
    int max_length[MAX_CASES];
} ctx;

static ctx CTX[] = {{.name = "tiny"}, {.name = "en-fr"}};
static long n_checked;                  /* hypotheses compared, printed at the end */

static ctx *get_ctx(void **state)
{
    ctx *c = *state;
    if (c->loaded)
        return c;
    c->loaded = 1;
    char dir[96], path[160];
    struct stat sb;
    snprintf(dir, sizeof dir, "models/%s", c->name);
    snprintf(path, sizeof path, "tests/fixtures/%s/cases.jsonl", c->name);
    if (stat(dir, &sb) != 0 || stat(path, &sb) != 0) {
        c->skip = 1;
        return c;
    }
    mt_err err = {0};
    mt_model_params mp = mt_model_default_params();
    if (mt_model_load(dir, &mp, &c->m, &err) != MT_OK)
        fail_msg("load %s: %s", dir, err.msg);
    json_t *rows = load_jsonl(path);
    int max_cases = RUNNING_ON_VALGRIND ? VALGRIND_CASES : MAX_CASES;
    for (size_t i = 0; i < json_array_size(rows) && c->n < max_cases; i++) {
        json_t *r = json_array_get(rows, i);
        int k = c->n;
        c->src_len[k] = ids_of(json_object_get(r, "src_ids"), c->src[k], MAX_IDS);
        c->ref_len[k] = ids_of(json_object_get(r, "greedy_ids"), c->ref[k], MAX_IDS);
        c->max_length[k] = (int)json_integer_value(json_object_get(r, "max_length"));
        if (c->src_len[k] >= 4 && c->ref_len[k] >= 3)
            c->n++;
    }
    json_decref(rows);
    return c;
}

static mt_session *new_session_search(const mt_model *m, int max_batch, int sl_max, int from_packed,
                                      int search_max)
{
    mt_session_params sp = mt_session_default_params(m);
    sp.max_batch = max_batch;
    sp.shortlist_max = sl_max;
    sp.shortlist_from_packed = from_packed;
    sp.shortlist_search_max = search_max;
    mt_session *s = NULL;
    mt_err err = {0};
    if (mt_session_new(m, &sp, &s, &err) != MT_OK)
        fail_msg("session: %s", err.msg);
    return s;
}

static mt_session *new_session(const mt_model *m, int max_batch, int sl_max, int from_packed)
{
    return new_session_search(m, max_batch, sl_max, from_packed, 0);
}

/* Every case decoded with params q (shortlist as given) into out[case][n_best];
 * when cons, with one constraint per case: two ids of the next case's
 * reference (words the model would not write here) for source positions
 * [1, 3), so terms are forced, displace the model's own words and ban pieces
 * that would glue onto them. */
static void decode_all_cons(ctx *c, mt_session *s, const mt_decode_params *q, mt_hyp *out, int cons)
{
    mt_err err = {0};
    const mt_model_info *info = mt_model_get_info(c->m);
    for (int i = 0; i < c->n; i++) {
        int j = (i + 1) % c->n, n = 0;
        int32_t ids[2];
        for (int t = 0; cons && t < c->ref_len[j] && n < 2; t++)
            if (c->ref[j][t] != info->eos_id && c->ref[j][t] != info->pad_id)
                ids[n++] = c->ref[j][t];
        mt_constraint k = {.src_start = 1, .src_end = 3, .ids = ids, .n_ids = n};
        mt_decode_params qi = *q;
        qi.lengths.max_length = RUNNING_ON_VALGRIND ? VALGRIND_MAX_LENGTH : c->max_length[i];
        if (n > 0) {
            qi.constraints = &k;
            qi.n_constraints = 1;
        }
        const int32_t *src = c->src[i];
        if (mt_generate(s, &src, &c->src_len[i], 1, &qi, out + (long)i * (q->n_best ? q->n_best : 1), &err) != MT_OK)
            fail_msg("generate case %d%s: %s", i, n ? " with a constraint" : "", err.msg);
    }
}

static void decode_all(ctx *c, mt_session *s, const mt_decode_params *q, mt_hyp *out)
{
    decode_all_cons(c, s, q, out, 0);
}

static void assert_same_hyps(const mt_hyp *a, const mt_hyp *b, int n, int scores)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(a[i].n_ids, b[i].n_ids);
        assert_memory_equal(a[i].ids, b[i].ids, sizeof(int32_t) * (size_t)a[i].n_ids);
        if (scores) {
            assert_memory_equal(&a[i].score, &b[i].score, sizeof(float));
            assert_memory_equal(a[i].token_logp, b[i].token_logp, sizeof(float) * (size_t)a[i].n_ids);
        }
        n_checked++;
    }
}

/* A shortlist whose frequent list is every id. */
static mt_shortlist *every_id(const mt_model *m)
{
    int V = mt_model_get_info(m)->vocab_size;
    int32_t *all = malloc(sizeof *all * (size_t)V);
    for (int i = 0; i < V; i++)
        all[i] = i;
    mt_shortlist *sl = NULL;
    mt_err err = {0};
    assert_int_equal(mt_shortlist_new(m, 0, NULL, NULL, all, V, &sl, &err), MT_OK);
    free(all);
    return sl;
}

/* (a) every id: bit-identical ids and scores, greedy and beam 4, each head path. */
static void test_every_id_identical(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
    int V = mt_model_get_info(c->m)->vocab_size;
    mt_shortlist *sl = every_id(c->m);
    for (int beam = 1; beam <= 4; beam += 3) {
        mt_decode_params q = ref_params();
        q.beam_size = beam;
        q.n_best = beam == 4 ? 2 : 1;
        q.token_scores = 1;
        mt_hyp *ref = calloc((size_t)c->n * 2, sizeof *ref), *got = calloc((size_t)c->n * 2, sizeof *got);
        mt_session *s = new_session(c->m, 8, 0, 0);
        decode_all(c, s, &q, ref);
        mt_session_free(s);
        /* gathered from the row-major weights, from the packed ones; the whole head masked */
        int sl_max[3] = {V, V, -1}, packed[3] = {0, 1, 0};
        for (int k = 0; k < 3; k++) {
            s = new_session(c->m, 8, sl_max[k], packed[k]);
            q.shortlist = sl;
            decode_all(c, s, &q, got);
            assert_same_hyps(ref, got, c->n * q.n_best, 1);
            mt_hyps_free(got, c->n * q.n_best);
            mt_session_free(s);
            q.shortlist = NULL;
        }
        mt_hyps_free(ref, c->n * q.n_best);
        free(ref);
        free(got);
    }
    mt_shortlist_free(sl);
}

/* (a) in the other precisions: the INT8 and F16 heads gathered from their
 * packed weights, bit-identical to the whole head (greedy and beam 4). */
static void test_every_id_held(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
    char dir[96];
    snprintf(dir, sizeof dir, "models/%s", c->name);
    mt_weights held[2] = {MT_WEIGHTS_F16, MT_WEIGHTS_I8};
    for (int h = 0; h < 2; h++) {
        mt_model_params mp = mt_model_default_params();
        mp.weights = held[h];
        mt_model *m = NULL;
        mt_err err = {0};
        assert_int_equal(mt_model_load(dir, &mp, &m, &err), MT_OK);
        mt_model *keep = c->m;
        c->m = m;
        int V = mt_model_get_info(m)->vocab_size, n = c->n;
        c->n = n < 12 ? n : 12;
        mt_shortlist *sl = every_id(m);
        for (int beam = 1; beam <= 4; beam += 3) {
            mt_decode_params q = ref_params();
            q.beam_size = beam;
            q.token_scores = 1;
            mt_hyp ref[12], got[12];
            mt_session *s = new_session(m, 8, 0, 0);
            decode_all(c, s, &q, ref);
            mt_session_free(s);
            s = new_session(m, 8, V, 0);
            q.shortlist = sl;
            decode_all(c, s, &q, got);
            assert_same_hyps(ref, got, c->n, 1);
            mt_hyps_free(ref, c->n);
            mt_hyps_free(got, c->n);
            mt_session_free(s);
        }
        mt_shortlist_free(sl);
        c->n = n;
        c->m = keep;
        mt_model_free(m);
    }
}

/* Each source id of the cases -> the reference ids of every case it occurs in. */
static mt_shortlist *reference_shortlist(ctx *c, double *avg_cand)
{
    const mt_model_info *info = mt_model_get_info(c->m);
    int Vs = info->src_vocab_size, V = info->vocab_size;
    uint8_t *pair = calloc((size_t)Vs * (size_t)V, 1);
    for (int i = 0; i < c->n; i++)
        for (int a = 0; a < c->src_len[i]; a++)
            for (int b = 0; b < c->ref_len[i]; b++)
                pair[(long)c->src[i][a] * V + c->ref[i][b]] = 1;
    long *off = calloc((size_t)Vs + 1, sizeof *off), n = 0;
    int32_t *ids = malloc(sizeof *ids * (size_t)c->n * MAX_IDS * 8);
    for (int w = 0; w < Vs; w++) {
        for (int t = 0; t < V; t++)
            if (pair[(long)w * V + t])
                ids[n++] = t;
        off[w + 1] = n;
    }
    mt_shortlist *sl = NULL;
    mt_err err = {0};
    assert_int_equal(mt_shortlist_new(c->m, Vs, off, ids, NULL, 0, &sl, &err), MT_OK);
    double total = 0;                       /* a sequence's candidates, on average */
    uint8_t *mark = calloc((size_t)V, 1);
    for (int i = 0; i < c->n; i++) {
        memset(mark, 0, (size_t)V);
        for (int a = 0; a < c->src_len[i]; a++)
            for (long j = off[c->src[i][a]]; j < off[c->src[i][a] + 1]; j++)
                total += !mark[ids[j]], mark[ids[j]] = 1;
    }
    *avg_cand = total / c->n;
    free(mark);
    free(pair);
    free(off);
    free(ids);
    return sl;
}

/* (b) the reference outputs' ids: the same greedy outputs. */
static void test_reference_ids_same_greedy(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
    double avg;
    mt_shortlist *sl = reference_shortlist(c, &avg);
    printf("[ info ] %s: %d cases, %.0f candidates per sentence on average of %d ids\n", c->name, c->n, avg,
           mt_model_get_info(c->m)->vocab_size);
    mt_decode_params q = ref_params();
    q.beam_size = 1;
    q.shortlist = sl;
    mt_hyp *got = calloc((size_t)c->n, sizeof *got);
    int sl_max[2] = {0, -1};
    for (int k = 0; k < 2; k++) {
        mt_session *s = new_session(c->m, 8, sl_max[k], 0);
        decode_all(c, s, &q, got);
        for (int i = 0; i < c->n; i++) {
            if (RUNNING_ON_VALGRIND && c->ref_len[i] >= VALGRIND_MAX_LENGTH)
                continue;                               /* cut by the shorter max_length */
            assert_int_equal(got[i].n_ids, c->ref_len[i]);
            assert_memory_equal(got[i].ids, c->ref[i], sizeof(int32_t) * (size_t)c->ref_len[i]);
            n_checked++;
        }
        mt_hyps_free(got, c->n);
        mt_session_free(s);
    }
    free(got);
    mt_shortlist_free(sl);
}

/* A small shortlist: ids 0..9 frequent, each source id w -> 3 ids from a fixed hash of w. */
static mt_shortlist *small_shortlist(const mt_model *m)
{
    const mt_model_info *info = mt_model_get_info(m);
    int Vs = info->src_vocab_size, V = info->vocab_size;
    long *off = calloc((size_t)Vs + 1, sizeof *off);
    int32_t *ids = malloc(sizeof *ids * (size_t)Vs * 3), freq[10];
    for (int w = 0; w < Vs; w++) {
        for (int j = 0; j < 3; j++)
            ids[3 * w + j] = (int32_t)(((uint32_t)w * 2654435761u + (uint32_t)j * 40503u) % (uint32_t)V);
        off[w + 1] = 3L * (w + 1);
    }
    for (int i = 0; i < 10; i++)
        freq[i] = i;
    mt_shortlist *sl = NULL;
    mt_err err = {0};
    assert_int_equal(mt_shortlist_new(m, Vs, off, ids, freq, 10, &sl, &err), MT_OK);
    free(off);
    free(ids);
    return sl;
}

static int allowed(const mt_shortlist *sl, const int32_t *src, int n, int32_t id, int32_t eos)
{
    int k;
    const int32_t *f = mt_shortlist_frequent(sl, &k);
    for (int i = 0; i < k; i++)
        if (f[i] == id)
            return 1;
    for (int a = 0; a < n; a++) {
        const int32_t *l = mt_shortlist_list(sl, src[a], &k);
        for (int i = 0; i < k; i++)
            if (l[i] == id)
                return 1;
    }
    return id == eos;
}

/* (c) ids outside never appear: greedy, beam 4, sampling; a row without a
 * shortlist decoded in the same batch gives what it gives alone. */
static void test_outside_ids_never(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
    const mt_model_info *info = mt_model_get_info(c->m);
    mt_shortlist *sl = small_shortlist(c->m);
    int n = c->n < 8 ? c->n : 8;
    for (int mode = 0; mode < 3; mode++) {
        mt_decode_params q = ref_params();
        q.beam_size = mode == 1 ? 4 : 1;
        q.n_best = q.beam_size;
        q.sampling.enabled = mode == 2;
        q.sampling.seed = 7;
        q.token_scores = 1;
        q.shortlist = sl;
        q.lengths.max_length = 24;
        mt_session *s = new_session(c->m, 8, 0, 0);
        mt_hyp h[4];
        mt_err err = {0};
        for (int i = 0; i < n; i++) {
            const int32_t *src = c->src[i];
            assert_int_equal(mt_generate(s, &src, &c->src_len[i], 1, &q, h, &err), MT_OK);
            for (int b = 0; b < q.n_best; b++) {
                for (int j = 0; j < h[b].n_ids; j++) {
                    assert_true(allowed(sl, src, c->src_len[i], h[b].ids[j], info->eos_id));
                    assert_true(isfinite(h[b].token_logp[j]));
                }
                n_checked++;
            }
            mt_hyps_free(h, q.n_best);
        }
        mt_session_free(s);
    }
    /* one sequence with, one without, in one step; the one without = alone */
    mt_session *s = new_session(c->m, 8, 0, 0);
    mt_decode_params with = ref_params(), without = with;
    with.beam_size = without.beam_size = 1;
    with.shortlist = sl;
    const mt_decode_params *each[2] = {&with, &without};
    const int32_t *src[2] = {c->src[0], c->src[1]};
    int len[2] = {c->src_len[0], c->src_len[1]};
    mt_hyp both[2], alone;
    mt_err err = {0};
    assert_int_equal(mt_generate_each(s, src, len, 2, each, both, &err), MT_OK);
    assert_int_equal(mt_generate(s, &src[1], &len[1], 1, &without, &alone, &err), MT_OK);
    assert_same_hyps(&both[1], &alone, 1, 0);
    for (int j = 0; j < both[0].n_ids; j++)
        assert_true(allowed(sl, src[0], len[0], both[0].ids[j], info->eos_id));
    mt_hyps_free(both, 2);
    mt_hyps_free(&alone, 1);
    mt_session_free(s);
    /* a shortlist of another model is refused by name */
    if (strcmp(c->name, "tiny") != 0) {
        mt_shortlist *other = small_shortlist(CTX[0].m ? CTX[0].m : c->m);
        if (CTX[0].m && mt_model_get_info(CTX[0].m)->vocab_size != info->vocab_size) {
            with.shortlist = other;
            s = new_session(c->m, 8, 0, 0);
            int id;
            assert_int_equal(mt_seq_start(s, c->src[0], c->src_len[0], &with, &id, &err), MT_ERR_INPUT);
            assert_non_null(strstr(err.msg, "shortlist"));
            mt_session_free(s);
        }
        mt_shortlist_free(other);
    }
    mt_shortlist_free(sl);
}

/* A set smaller than a beam's 2 x beam candidates is widened with the
 * lowest ids: no -inf candidate is picked, every score stays finite. */
static void test_tiny_set_beam(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
    int32_t eos = mt_model_get_info(c->m)->eos_id, one = 5;
    long off[2] = {0, 0};
    mt_shortlist *sl = NULL;
    mt_err err = {0};
    assert_int_equal(mt_shortlist_new(c->m, 1, off, NULL, &one, 1, &sl, &err), MT_OK);
    mt_decode_params q = ref_params();
    q.beam_size = 4;
    q.n_best = 4;
    q.token_scores = 1;
    q.lengths.max_length = 12;
    q.shortlist = sl;
    mt_session *s = new_session(c->m, 8, 0, 0);
    mt_hyp h[4];
    const int32_t *src = c->src[0];
    assert_int_equal(mt_generate(s, &src, &c->src_len[0], 1, &q, h, &err), MT_OK);
    for (int b = 0; b < 4; b++) {
        assert_true(isfinite(h[b].score));
        for (int j = 0; j < h[b].n_ids; j++)     /* 5, eos, and the 8 lowest others (pad excluded) */
            assert_true(h[b].ids[j] == one || h[b].ids[j] == eos || h[b].ids[j] <= 9);
        n_checked++;
    }
    mt_hyps_free(h, 4);
    mt_session_free(s);
    mt_shortlist_free(sl);
}

/* (e) the search over each sequence's list against the search over [V] rows
 * (shortlist_search_max -1): the same ids, greedy, beam 4 and sampling (top-k
 * and top-p), and greedy and beam 4 with a constraint, token log-probs and
 * scores within float rounding (the normalizer sums the same terms in another
 * order); the list's search bit for bit the same through the gathered and the
 * masked head. */
static void test_list_search(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
    double avg;
    mt_shortlist *sls[2] = {reference_shortlist(c, &avg), small_shortlist(c->m)};
    long exact = 0, tokens = 0;
    double worst = 0.0;
    for (int k = 0; k < 2; k++)
        for (int mode = 0; mode < 6; mode++) {
            mt_decode_params q = ref_params();
            q.beam_size = q.n_best = mode == 1 || mode == 5 ? 4 : 1;
            q.sampling.enabled = mode == 2 || mode == 3;
            q.sampling.seed = 11;
            q.sampling.top_k = mode == 2 ? 5 : 0;
            q.sampling.top_p = mode == 3 ? 0.9f : 1.0f;
            q.token_scores = 1;
            q.shortlist = sls[k];
            int nh = c->n * q.n_best;
            mt_hyp *list = calloc((size_t)nh, sizeof *list), *rows = calloc((size_t)nh, sizeof *rows),
                   *masked = calloc((size_t)nh, sizeof *masked);
            mt_session *sa = new_session_search(c->m, 8, 0, 0, 0), *sb = new_session_search(c->m, 8, 0, 0, -1),
                       *sc = new_session_search(c->m, 8, -1, 0, 0);
            /* the list's [V] rows are written at the candidates alone: a huge
             * value everywhere else wins any read outside the list */
            long cells = 8L * mt_model_get_info(c->m)->vocab_size;
            for (long i = 0; i < cells; i++)
                sa->logits[i] = 1e30f;
            decode_all_cons(c, sa, &q, list, mode >= 4);
            assert_true(sa->seqs[0].sl_n > 0);                 /* searched over its list */
            assert_true(sa->sl.only[0]);                       /* constraints too: no [V] row filled */
            decode_all_cons(c, sb, &q, rows, mode >= 4);
            assert_int_equal(sb->seqs[0].sl_n, 0);
            decode_all_cons(c, sc, &q, masked, mode >= 4);
            assert_same_hyps(list, masked, nh, 1);
            for (int i = 0; i < nh; i++) {
                assert_int_equal(list[i].n_ids, rows[i].n_ids);
                assert_memory_equal(list[i].ids, rows[i].ids, sizeof(int32_t) * (size_t)list[i].n_ids);
                assert_float_equal(list[i].score, rows[i].score, 1e-5 * fmax(1.0, fabs(rows[i].score)));
                for (int j = 0; j < list[i].n_ids; j++) {
                    double d = fabs((double)list[i].token_logp[j] - rows[i].token_logp[j]);
                    assert_true(d <= 1e-5 * fmax(1.0, fabs(rows[i].token_logp[j])));
                    worst = fmax(worst, d);
                    exact += list[i].token_logp[j] == rows[i].token_logp[j];
                    tokens++;
                }
                n_checked++;
            }
            mt_hyps_free(list, nh);
            mt_hyps_free(rows, nh);
            mt_hyps_free(masked, nh);
            free(list);
            free(rows);
            free(masked);
            mt_session_free(sa);
            mt_session_free(sb);
            mt_session_free(sc);
        }
    printf("[ info ] %s: list search against [V] rows: %ld of %ld token log-probs bit-equal, the largest "
           "difference %.3g\n", c->name, exact, tokens, worst);
    mt_shortlist_free(sls[0]);
    mt_shortlist_free(sls[1]);
}

/* (d) a decode step with shortlists (gathered head, masked head, beams) allocates nothing. */
static void test_no_alloc_per_step(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
#if !HAVE_ALLOC_COUNTER
    skip();                             /* the sanitizers own malloc */
#else
    mt_shortlist *sl = small_shortlist(c->m);
    int sl_max[2] = {0, -1};
    for (int k = 0; k < 2; k++) {
        mt_session *s = new_session(c->m, 8, sl_max[k], 0);
        mt_decode_params q = ref_params();
        q.shortlist = sl;
        q.lengths.max_length = 20;
        mt_err err = {0};
        int ids[3];
        for (int i = 0; i < 3; i++) {
            q.beam_size = i == 2 ? 4 : 1;
            assert_int_equal(mt_seq_start(s, c->src[i], c->src_len[i], &q, &ids[i], &err), MT_OK);
        }
        mt_encode_started(s);
        n_allocs = 0;
        counting = 1;
        int steps = 0;
        while (!(mt_seq_finished(s, ids[0]) && mt_seq_finished(s, ids[1]) && mt_seq_finished(s, ids[2])) &&
               steps < 30) {
            mt_step(s);
            steps++;
        }
        counting = 0;
        printf("[ info ] %s: %d steps with shortlists (%s head): %ld allocations\n", c->name, steps,
               k ? "masked" : "gathered", (long)n_allocs);
        assert_int_equal(n_allocs, 0);
        for (int i = 0; i < 3; i++)
            mt_seq_cancel(s, ids[i]);
        mt_session_free(s);
    }
    mt_shortlist_free(sl);
#endif
}

/* ---- formats -------------------------------------------------------------------------------- */
static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*n + 1);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void assert_same_lists(const mt_shortlist *a, const mt_shortlist *b, int Vs)
{
    for (int w = 0; w < Vs; w++) {
        int na, nb;
        const int32_t *la = mt_shortlist_list(a, w, &na), *lb = mt_shortlist_list(b, w, &nb);
        assert_int_equal(na, nb);
        if (na)
            assert_memory_equal(la, lb, sizeof(int32_t) * (size_t)na);
    }
    int fa, fb;
    const int32_t *xa = mt_shortlist_frequent(a, &fa), *xb = mt_shortlist_frequent(b, &fb);
    assert_int_equal(fa, fb);
    if (fa)
        assert_memory_equal(xa, xb, sizeof(int32_t) * (size_t)fa);
}

/* Marian's binary format: written, read back equal; its checksum, sizes,
 * offsets and ids checked with the byte offset named. */
static void test_binary_format(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
    int Vs = mt_model_get_info(c->m)->src_vocab_size;
    mt_shortlist *sl = small_shortlist(c->m), *back = NULL;
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_shortlist_%d.bin", (int)getpid());
    mt_err err = {0};
    assert_int_equal(mt_shortlist_write(sl, path, &err), MT_OK);
    assert_int_equal(mt_shortlist_load(c->m, path, NULL, &back, &err), MT_OK);
    assert_string_equal(mt_shortlist_get_info(back)->format, "marian-binary");
    assert_same_lists(sl, back, Vs);
    mt_shortlist_free(back);
    mt_shortlist_params p = mt_shortlist_default_params();         /* best 2: each list's first 2 */
    p.best = 2;
    p.frequent = 4;
    assert_int_equal(mt_shortlist_load(c->m, path, &p, &back, &err), MT_OK);
    assert_int_equal(mt_shortlist_get_info(back)->max_list, 2);
    assert_int_equal(mt_shortlist_get_info(back)->frequent, 4);
    mt_shortlist_free(back);
    size_t n;
    uint8_t *b = (uint8_t *)read_file(path, &n);
    struct { size_t at; uint8_t x; const char *says; } bad[] = {
        {0, 0x01, "byte 0: magic"},
        {8, 0x01, "byte 8: checksum"},
        {n - 5, 0x10, "byte 8: checksum"},          /* a changed id: the checksum sees it */
        {32, 0x01, "byte 32:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        b[bad[i].at] ^= bad[i].x;
        write_file(path, b, n);
        assert_int_equal(mt_shortlist_load(c->m, path, NULL, &back, &err), MT_ERR_FORMAT);
        assert_null(back);
        if (!strstr(err.msg, bad[i].says))
            fail_msg("case %zu: %s", i, err.msg);
        b[bad[i].at] ^= bad[i].x;
    }
    /* an id past the vocabulary, with a correct checksum: named at its byte */
    mt_lex_bin lb;
    assert_int_equal(mt_lex_bin_parse(b, n, 0, &lb, &err), MT_OK);
    size_t id_at = MT_LEX_HEADER + 8 * (size_t)(lb.n_words + 1);
    b[id_at + 3] = 0x7f;
    uint64_t sum = mt_lex_checksum(b, n);
    for (int i = 0; i < 8; i++)
        b[8 + i] = (uint8_t)(sum >> (8 * i));
    write_file(path, b, n);
    assert_int_equal(mt_shortlist_load(c->m, path, NULL, &back, &err), MT_ERR_FORMAT);
    char want[64];
    snprintf(want, sizeof want, "byte %zu: target id", id_at);
    assert_non_null(strstr(err.msg, want));
    write_file(path, b, 20);                                      /* truncated */
    assert_int_equal(mt_shortlist_load(c->m, path, NULL, &back, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "48-byte header"));
    free(b);
    unlink(path);
    mt_shortlist_free(sl);
    n_checked++;
}

/* Marian's text table and CTranslate2's vmap, through the model's pieces. */
static void test_text_formats(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
    const mt_tokenizer *tok = mt_model_tokenizer(c->m);
    const char *a = mt_tokenizer_piece(tok, 20), *b = mt_tokenizer_piece(tok, 21), *t1 = mt_tokenizer_piece(tok, 30),
               *t2 = mt_tokenizer_piece(tok, 31), *t3 = mt_tokenizer_piece(tok, 32);
    char text[1024], path[64];
    snprintf(path, sizeof path, "/tmp/test_shortlist_%d.txt", (int)getpid());
    /* t1 best for a, then t2, t3; b -> t3; a NULL line and an unknown piece skipped */
    snprintf(text, sizeof text, "%s %s 0.5\n%s %s 0.25\n%s\t%s 0.125\nNULL %s 0.9\n%s %s 0.75\n\n%s no-such-piece 1\n",
             t1, a, t2, a, t3, a, a, t3, b, t1);
    write_file(path, text, strlen(text));
    mt_shortlist_params p = mt_shortlist_default_params();
    p.best = 2;
    p.frequent = 3;
    mt_shortlist *sl = NULL;
    mt_err err = {0};
    assert_int_equal(mt_shortlist_load(c->m, path, &p, &sl, &err), MT_OK);
    const mt_shortlist_info *info = mt_shortlist_get_info(sl);
    assert_string_equal(info->format, "marian-text");
    assert_int_equal(info->entries, 3);
    assert_int_equal(info->skipped, 1);
    assert_int_equal(info->frequent, 3);
    int k;
    const int32_t *l = mt_shortlist_list(sl, 20, &k);
    assert_int_equal(k, 2);
    assert_int_equal(l[0], 30);
    assert_int_equal(l[1], 31);
    l = mt_shortlist_list(sl, 21, &k);
    assert_int_equal(k, 1);
    assert_int_equal(l[0], 32);
    mt_shortlist_free(sl);
    snprintf(text, sizeof text, "%s %s 0.5\n%s %s\n", t1, a, t2, a);        /* no probability on line 2 */
    write_file(path, text, strlen(text));
    assert_int_equal(mt_shortlist_load(c->m, path, &p, &sl, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "line 2 (byte"));
    /* vmap: "a" -> t1 t2, "a b" -> t3 (its first token's list), "" -> t3 always */
    snprintf(text, sizeof text, "%s\t%s %s\n%s %s\t%s\n\t%s\n", a, t1, t2, a, b, t3, t3);
    write_file(path, text, strlen(text));
    assert_int_equal(mt_shortlist_load(c->m, path, NULL, &sl, &err), MT_OK);
    info = mt_shortlist_get_info(sl);
    assert_string_equal(info->format, "ct2-vmap");
    assert_int_equal(info->entries, 3);
    assert_int_equal(info->frequent, 1);
    l = mt_shortlist_list(sl, 20, &k);
    assert_int_equal(k, 3);
    mt_shortlist_free(sl);
    snprintf(text, sizeof text, "%s\t%s\n%s %s\n", a, t1, a, t1);            /* line 2 has no TAB */
    write_file(path, text, strlen(text));
    assert_int_equal(mt_shortlist_load(c->m, path, NULL, &sl, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "line 2 (byte"));
    p.best = -1;
    assert_int_equal(mt_shortlist_load(c->m, path, &p, &sl, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "'best'"));
    unlink(path);
    assert_int_equal(mt_shortlist_load(c->m, path, NULL, &sl, &err), MT_ERR_IO);
    n_checked++;
}

/* mt_shortlist_build: Dice ranking, the best cut, min_count, the frequent ids. */
static void test_build_from_corpus(void **state)
{
    ctx *c = get_ctx(state);
    if (c->skip)
        skip();
    int32_t eos = mt_model_get_info(c->m)->eos_id;
    /* source 200 always with target 300 (and once with 301); 201 with 302 twice, 303 once */
    int32_t s0[] = {200, 201, eos}, t0[] = {300, 302, eos}, s1[] = {200, eos}, t1[] = {300, 301, eos},
            s2[] = {201, 200, eos}, t2[] = {302, 300, 303, eos};
    const int32_t *src[3] = {s0, s1, s2}, *tgt[3] = {t0, t1, t2};
    int sl_[3] = {3, 2, 3}, tl[3] = {3, 3, 4};
    mt_shortlist_params p = mt_shortlist_default_params();
    p.best = 1;
    p.frequent = 5;
    mt_shortlist *sl = NULL;
    mt_err err = {0};
    assert_int_equal(mt_shortlist_build(c->m, 3, src, sl_, tgt, tl, &p, 1, &sl, &err), MT_OK);
    int k;
    const int32_t *l = mt_shortlist_list(sl, 200, &k);
    assert_int_equal(k, 1);
    assert_int_equal(l[0], 300);              /* Dice 2*3/(3+3) = 1 */
    l = mt_shortlist_list(sl, 201, &k);
    assert_int_equal(k, 1);
    assert_int_equal(l[0], 302);
    assert_int_equal(mt_shortlist_get_info(sl)->frequent, 5);
    mt_shortlist_free(sl);
    p.best = 0;                               /* 50 */
    assert_int_equal(mt_shortlist_build(c->m, 3, src, sl_, tgt, tl, &p, 2, &sl, &err), MT_OK);
    mt_shortlist_list(sl, 200, &k);
    assert_int_equal(k, 2);                   /* 300 (3), 302 (2); 301 and 303 seen once: dropped */
    mt_shortlist_free(sl);
    int32_t bad[] = {-1, eos};
    const int32_t *bsrc[1] = {bad};
    int bl[1] = {2};
    assert_int_equal(mt_shortlist_build(c->m, 1, bsrc, bl, tgt, tl, &p, 1, &sl, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "pair 0"));
    n_checked++;
}

static int teardown(void **state)
{
    for (size_t i = 0; i < sizeof CTX / sizeof *CTX; i++)
        mt_model_free(CTX[i].m);
    printf("[ info ] test_shortlist: %ld hypotheses and files checked\n", n_checked);
    return 0;
}

#define PER_MODEL(fn) {.name = #fn " [tiny]", .test_func = fn, .initial_state = &CTX[0]}, \
                      {.name = #fn " [en-fr]", .test_func = fn, .initial_state = &CTX[1]}

int main(void)
{
    const struct CMUnitTest tests[] = {
        PER_MODEL(test_every_id_identical),
        PER_MODEL(test_every_id_held),
        PER_MODEL(test_reference_ids_same_greedy),
        PER_MODEL(test_outside_ids_never),
        PER_MODEL(test_tiny_set_beam),
        PER_MODEL(test_list_search),
        PER_MODEL(test_no_alloc_per_step),
        PER_MODEL(test_binary_format),
        PER_MODEL(test_text_formats),
        PER_MODEL(test_build_from_corpus),
    };
    return cmocka_run_group_tests_name("test_shortlist", tests, NULL, teardown);
}
