/* bench_shortlist: decode speed with and without a lexical shortlist
 * (docs/SHORTLIST.md).  Usage:
 *   bench_shortlist MODEL_DIR [--weights f32|int8] [--sentences N] [--steps T] [--threads N] [--ftz 1]
 *                   [--beam B] [--reps R]
 * --ftz 1 sets flush-to-zero and denormals-are-zero (MXCSR) before the
 * compute threads start: subnormal arithmetic then costs nothing.
 * Sources are random ids of the source vocabulary (20 + i % 11 tokens, </s>
 * last).  The shortlist is built from the model's own outputs on those
 * sources at the bench's beam (mt_shortlist_build: best 50, frequent 100), as
 * a random-weight model has no corpus.  Every sentence then decodes exactly T steps
 * (min_length = max_length), greedy (or beam B), at batch 1 and batch 32:
 * without the shortlist, with it gathered from the row-major weights, gathered
 * from the packed ones, and gathered from the packed ones but searched over
 * [V] rows (shortlist_search_max -1, the search before the candidate lists);
 * tokens/s of each (best of R rounds, the configurations taking turns in each
 * round), and how many outputs equal the unrestricted ones. */
#include "mt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xmmintrin.h>
#include "bench_util.h"

static void die(const char *what, const mt_err *e)
{
    fprintf(stderr, "bench_shortlist: %s: %s\n", what, e ? e->msg : "");
    exit(1);
}

typedef struct { int32_t **ids; int *len; int n; } sources;

static double run(mt_session *s, const sources *S, int batch, int steps, int beam, const mt_shortlist *sl,
                  mt_hyp *hyps, long *ntok)
{
    mt_decode_params p = mt_decode_default_params();
    p.beam_size = beam;
    p.lengths.max_length = steps + 1;
    p.lengths.min_length = steps + 1;
    p.shortlist = sl;
    mt_err e;
    double t0 = bench_now();
    for (int i = 0; i < S->n; i += batch) {
        int k = S->n - i < batch ? S->n - i : batch;
        if (mt_generate(s, (const int32_t *const *)S->ids + i, S->len + i, k, &p, hyps + i, &e) != MT_OK)
            die("mt_generate", &e);
    }
    double dt = bench_now() - t0;
    *ntok = 0;
    for (int i = 0; i < S->n; i++)
        *ntok += hyps[i].n_ids;
    return dt;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_shortlist MODEL_DIR [--weights f32|int8] [--sentences N] [--steps T] "
                        "[--threads N] [--beam B] [--reps R]\n");
        return 2;
    }
    mt_model_params mp = mt_model_default_params();
    int n = 64, steps = 32, beam = 1, reps = 3;
    mp.n_threads = 2;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--weights"))
            mp.weights = !strcmp(argv[i + 1], "int8") ? MT_WEIGHTS_I8 : !strcmp(argv[i + 1], "f16") ? MT_WEIGHTS_F16
                                                                                                  : MT_WEIGHTS_F32;
        else if (!strcmp(argv[i], "--sentences"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--beam"))
            beam = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            mp.n_threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ftz") && atoi(argv[i + 1]))
            _mm_setcsr(_mm_getcsr() | 0x8040);                     /* FTZ | DAZ, inherited by new threads */
    }
    mt_model *m;
    mt_err e = {0};
    if (mt_model_load(argv[1], &mp, &m, &e) != MT_OK)
        die(argv[1], &e);
    const mt_model_info *info = mt_model_get_info(m);
    sources S = {.ids = calloc((size_t)n, sizeof(int32_t *)), .len = calloc((size_t)n, sizeof(int)), .n = n};
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < n; i++) {
        S.len[i] = 21 + i % 11;
        S.ids[i] = malloc(sizeof(int32_t) * (size_t)S.len[i]);
        for (int j = 0; j + 1 < S.len[i]; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            S.ids[i][j] = 100 + (int32_t)(x % (uint64_t)(info->src_vocab_size - 100));
        }
        S.ids[i][S.len[i] - 1] = info->eos_id;
    }
    mt_hyp *ref = calloc((size_t)n, sizeof *ref), *got = calloc((size_t)n, sizeof *got);
    mt_session_params sp = mt_session_default_params(m);
    sp.max_batch = 32 * beam;
    sp.max_tgt_len = steps + 1;
    sp.max_src_len = 40;
    mt_session *dense;
    if (mt_session_new(m, &sp, &dense, &e) != MT_OK)
        die("session", &e);
    long ntok;
    run(dense, &S, 32, steps, beam, NULL, ref, &ntok);            /* the outputs the shortlist is built from */
    int32_t **tgt = malloc(sizeof *tgt * (size_t)n);
    int *tlen = malloc(sizeof *tlen * (size_t)n);
    for (int i = 0; i < n; i++)
        tgt[i] = ref[i].ids, tlen[i] = ref[i].n_ids;
    mt_shortlist *sl;
    mt_shortlist_params slp = mt_shortlist_default_params();
    slp.best = 50;
    slp.frequent = 100;
    if (mt_shortlist_build(m, n, (const int32_t *const *)S.ids, S.len, (const int32_t *const *)tgt, tlen, &slp, 1,
                           &sl, &e) != MT_OK)
        die("shortlist", &e);
    const mt_shortlist_info *si = mt_shortlist_get_info(sl);
    printf("model %s (d_model %d, vocab %d), weights %s, %d sentences x %d steps, beam %d, threads %d, ftz/daz %s\n",
           argv[1], info->d_model, info->vocab_size, info->weights, n, steps, beam, mp.n_threads,
           (_mm_getcsr() & 0x8040) == 0x8040 ? "on" : "off");
    printf("shortlist from its own greedy outputs: %ld entries over %d source ids, 100 frequent\n", si->entries,
           si->src_words);
    sp.shortlist_max = info->vocab_size;                          /* always gather: measured, not capped */
    mt_session *rows, *packed, *vrows;
    sp.shortlist_from_packed = 0;
    if (mt_session_new(m, &sp, &rows, &e) != MT_OK)
        die("session", &e);
    sp.shortlist_from_packed = 1;
    if (mt_session_new(m, &sp, &packed, &e) != MT_OK)
        die("session", &e);
    sp.shortlist_search_max = -1;
    if (mt_session_new(m, &sp, &vrows, &e) != MT_OK)
        die("session", &e);
    int batches[2] = {1, 32};
    enum { NCFG = 4 };
    struct { const char *name; mt_session *s; const mt_shortlist *sl; } cfg[NCFG] = {
        {"whole vocabulary", dense, NULL},  {"shortlist, rows", rows, sl}, {"shortlist, packed", packed, sl},
        {"packed, [V] search", vrows, sl}};
    int use[NCFG] = {1, info->weights[0] == 'F' && strcmp(info->weights, "F16") != 0, 1, 1};  /* INT8, F16: packed only */
    for (int b = 0; b < 2; b++) {
        int batch = batches[b], same[NCFG] = {0};
        double best[NCFG];
        for (int c = 0; c < NCFG; c++) {
            best[c] = 1e30;
            if (use[c]) {
                run(cfg[c].s, &S, batch, steps, beam, cfg[c].sl, got, &ntok);          /* warm-up */
                mt_hyps_free(got, n);
            }
        }
        for (int rep = 0; rep < reps; rep++)
            for (int c = 0; c < NCFG; c++) {
                if (!use[c])
                    continue;
                double dt = run(cfg[c].s, &S, batch, steps, beam, cfg[c].sl, got, &ntok);
                best[c] = dt < best[c] ? dt : best[c];
                same[c] = 0;
                for (int i = 0; i < n; i++)
                    same[c] += got[i].n_ids == ref[i].n_ids &&
                               !memcmp(got[i].ids, ref[i].ids, sizeof(int32_t) * (size_t)ref[i].n_ids);
                mt_hyps_free(got, n);
            }
        for (int c = 0; c < NCFG; c++)
            if (use[c])
                printf("batch %2d  %-18s %8.1f tok/s  x%.2f  outputs equal to the whole vocabulary's: %d/%d\n",
                       batch, cfg[c].name, (double)ntok / best[c], best[0] / best[c], same[c], n);
    }
    mt_session_free(vrows);
    mt_hyps_free(ref, n);
    mt_shortlist_free(sl);
    mt_session_free(dense);
    mt_session_free(rows);
    mt_session_free(packed);
    mt_model_free(m);
    return 0;
}
