/* bench_engine: the C engine's speed through the public API (engine/mt.h).
 *
 *   bench_engine --model DIR --input FILE [--n 64] [--max-length L] [--threads 2]
 *                [--weights f32|f16|int8] [--kv-cache f32|f16] [--configs 1:1,32:1,1:4,32:4] [--ids-out FILE]
 *                [--src-out FILE] [--limits] [--limits-n 16] [--limits-reps 3]
 *                [--shortlist FILE] [--shortlist-build PREFIX] [--term N]
 *
 * Reads the first n lines of FILE, tokenizes them with the model's tokenizer
 * (--src-out writes those ids, one JSON list a line, so the PyTorch reference
 * decodes exactly the same inputs), then for each batch:beam configuration
 * decodes all n sentences in chunks of `batch` sources (one warm-up chunk
 * first) and prints one JSON object: sentences/s, target tokens/s (generated
 * ids, </s> included, as bench_torch.py counts them).  A configuration
 * batch:beam:m decodes only the first m sentences (the slow reference's
 * batch-1 runs are sized so; both engines then decode the same sentences).
 * --ids-out receives the output ids of every configuration
 * ({"batch","beam","sentences","ids":[...]} a line).  The first line printed
 * describes the model and its load (wall ms, peak RSS after it); the last,
 * the process's peak RSS after every run.
 *
 * --shortlist FILE decodes every configuration with that lexical shortlist
 * (docs/SHORTLIST.md), always gathered (no union cap, as CTranslate2's vmap).
 * --shortlist-build PREFIX decodes the n sentences greedy over the whole
 * vocabulary, builds a shortlist from those outputs (mt_shortlist_build:
 * best 50, frequent 100; a random-weight model has no corpus, so its own
 * outputs stand for one), writes it as PREFIX.bin (Marian's binary) and
 * PREFIX.vmap (the same lists as a CTranslate2 vmap: `piece<TAB>pieces`, the
 * frequent ids on the empty source's line) and exits.
 *
 * --term N gives every sentence one glossary term (mt_constraint) of N target
 * ids, 10, 11, ... (arbitrary pieces: the cost of constraints, not their
 * quality), for source position [1, 2): the model ends no sentence before
 * the term is in, so runs with and without it generate different ids.
 *
 * --src-lang CODE / --tgt-lang CODE (a multilingual model: M2M-100, NLLB-200)
 * put the source language's token first in every source and force the target
 * language's as the first generated id.  --lang-vocab FILE (a target-language
 * vocabulary map, engine/formats/langvocab_fmt.h) or --lang-vocab-ids N (a
 * map giving the target language N ids drawn uniformly, seed fixed, from the
 * vocabulary: the step's cost depends on how many, and scattered rows are the
 * gather's worst case) then runs each configuration --rounds R times (3) in
 * turn without and with the map in this one process, one line per run
 * ("lang_vocab": false / true), then the medians and their ratio.
 *
 * --limits adds the machine's limits and where the engine stands:
 *   decode step at batch 1 (from greedy runs of two lengths over the first
 *   --limits-n sentences, best of --limits-reps, so the encoder cancels)
 *   against the weight bytes a step reads over the sgemv bandwidth measured
 *   here on a matrix of the vocabulary projection's size (cache resident for
 *   a small model) and on 64 MB, and over the read bandwidth of a buffer as
 *   large as those bytes (the step's own working set: in the 32 MB L3 for a
 *   small model, from memory for the OPUS-MT shapes), the encoder's GFLOP/s
 *   against sgemm peak (1024^3, 1 and 2 threads), and KV-cache bytes per
 *   token from the shape and from mt_session_bytes(). */
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "mt.h"
#include "bench_util.h"

/* How the engine may hold its weights (--weights): the option's name, the name
 * mt_model_info reports, and the bytes a decode step reads per weight and per
 * output row of each matrix (INT8: the int8 values, then a float scale and an
 * int32 row sum per row, engine/kernels/linear_q8.c).  A new mode is one line here. */
static const struct {
    const char *opt, *name;
    mt_weights  w;
    double      per_weight, per_row;
} WEIGHTS[] = {
    {"f32", "F32", MT_WEIGHTS_F32, 4, 0},
    {"f16", "F16", MT_WEIGHTS_F16, 2, 0},
    {"int8", "INT8", MT_WEIGHTS_I8, 1, 8},
};
#define N_WEIGHTS (int)(sizeof WEIGHTS / sizeof WEIGHTS[0])

/* A line of /proc/self/status in bytes ("VmHWM", "VmRSS"), 0 if absent. */
static size_t proc_status(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0, n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':')
            kb = strtoull(line + n + 1, NULL, 10);
    if (f)
        fclose(f);
    return kb * 1024;
}

static void die(const char *what, const mt_err *e)
{
    fprintf(stderr, "bench_engine: %s: %s\n", what, e ? e->msg : "failed");
    exit(1);
}

typedef struct {
    int32_t **ids;
    int *len;
    int n, max_len;
} sources;

static int32_t g_src_lang = -1;       /* --src-lang's token, put first in every source */

static void read_sources(const mt_model *m, const char *path, int n_max, sources *S)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    S->ids = calloc((size_t)n_max, sizeof *S->ids);
    S->len = calloc((size_t)n_max, sizeof *S->len);
    S->n = S->max_len = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    const mt_tokenizer *tok = mt_model_tokenizer(m);
    while (S->n < n_max && (got = getline(&line, &cap, f)) >= 0) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
            line[--got] = 0;
        int32_t buf[1024];
        int nid = 0;
        mt_err e;
        if (mt_tokenizer_encode(tok, line, (size_t)got, 0, buf, 1024, &nid, &e) != MT_OK)
            die("tokenize", &e);
        if (g_src_lang >= 0 && nid < 1024) {        /* the source language's token first */
            memmove(buf + 1, buf, sizeof *buf * (size_t)nid);
            buf[0] = g_src_lang;
            nid++;
        }
        S->ids[S->n] = malloc(sizeof(int32_t) * (size_t)nid);
        memcpy(S->ids[S->n], buf, sizeof(int32_t) * (size_t)nid);
        S->len[S->n++] = nid;
        if (nid > S->max_len)
            S->max_len = nid;
    }
    free(line);
    fclose(f);
}

static void print_ids(FILE *f, const int32_t *ids, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, i ? ",%d" : "%d", ids[i]);
    fputc(']', f);
}

/* User + system CPU seconds of the process (all its threads). */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

/* Decode sources [0, n) in chunks of `batch`; returns seconds, *ntok = ids generated. */
/* --tgt-lang's token (forced first), -1 none; the map of this run (NULL: none). */
static int32_t g_forced = -1;
static const mt_lang_vocab *g_lv;

static double run(mt_session *s, const sources *S, int n, int batch, int beam, int max_length,
                  const mt_shortlist *sl, const mt_constraint *term, mt_hyp *hyps, long *ntok)
{
    mt_decode_params p = mt_decode_default_params();
    p.shortlist = sl;
    p.forced_bos.enabled = g_forced >= 0;
    p.forced_bos.id = g_forced;
    p.lang_vocab = g_lv;
    p.constraints = term;
    p.n_constraints = term != NULL;
    p.beam_size = beam;
    p.lengths.max_length = max_length;
    p.n_best = 1;
    double t0 = bench_now();
    for (int i = 0; i < n; i += batch) {
        int k = n - i < batch ? n - i : batch;
        mt_err e;
        if (mt_generate(s, (const int32_t *const *)S->ids + i, S->len + i, k, &p, hyps + i, &e) != MT_OK)
            die("mt_generate", &e);
    }
    double dt = bench_now() - t0;
    *ntok = 0;
    for (int i = 0; i < n; i++)
        *ntok += hyps[i].n_ids;
    return dt;
}

/* ---- machine limits ----------------------------------------------------------- */
static float *randbuf(size_t n)
{
    float *p = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    return p;
}

/* sgemv on an [m][k] matrix, repeated for ~0.3 s; GB/s of matrix bytes read. */
static double sgemv_gbs(int m, int k)
{
    float *A = randbuf((size_t)m * k), *x = randbuf((size_t)k), *y = randbuf((size_t)m);
    for (int w = 0; w < 3; w++)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, m, k, 1.0f, A, k, x, 1, 0.0f, y, 1);
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        int it = 0;
        double t0 = bench_now(), dt;
        do {
            cblas_sgemv(CblasRowMajor, CblasNoTrans, m, k, 1.0f, A, k, x, 1, 0.0f, y, 1);
            it++;
        } while ((dt = bench_now() - t0) < 0.06);
        double g = (double)it * m * k * 4 / dt / 1e9;
        best = g > best ? g : best;
    }
    free(A), free(x), free(y);
    return best;
}

/* Memory read bandwidth: `threads` threads each sum their slice of a buffer of
 * `bytes` (64-byte vector loads, independent accumulators), repeated for ~0.2 s,
 * best of 3; GB/s of buffer bytes read.  sgemv alone understates it: OpenBLAS's
 * sgemv streams less than the engine's packed kernel does from memory. */
typedef uint64_t v8 __attribute__((vector_size(64)));

typedef struct {
    const v8 *p;
    size_t    n;
    v8        sum;
} slice;

static void *read_slice(void *arg)
{
    slice *s = arg;
    v8 a = {0}, b = {0}, c = {0}, d = {0};
    size_t i = 0;
    for (; i + 4 <= s->n; i += 4) {
        a += s->p[i], b += s->p[i + 1];
        c += s->p[i + 2], d += s->p[i + 3];
    }
    for (; i < s->n; i++)
        a += s->p[i];
    s->sum = a + b + c + d;
    return NULL;
}

static double read_gbs(size_t bytes, int threads)
{
    size_t n = bytes / sizeof(v8) > 64 ? bytes / sizeof(v8) : 64;
    size_t len = (n * sizeof(v8) + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    v8 *buf = aligned_alloc(2u << 20, len);
    if (!buf || threads < 1 || threads > 64) {
        fprintf(stderr, "bench_engine: read_gbs: no memory or bad thread count\n");
        exit(1);
    }
    madvise(buf, len, MADV_HUGEPAGE);           /* as the engine maps its packed weights (alloc.c) */
    memset(buf, 1, n * sizeof(v8));             /* every page backed before timing */
    slice sl[64];
    pthread_t th[64];
    uint64_t sink = 0;
    double best = 0;
    for (int rep = 0; rep < 4; rep++) {         /* the first is a warm-up */
        int it = 0;
        double t0 = bench_now(), dt;
        do {
            for (int t = 0; t < threads; t++) {
                sl[t].p = buf + n * (size_t)t / (size_t)threads;
                sl[t].n = n * (size_t)(t + 1) / (size_t)threads - n * (size_t)t / (size_t)threads;
                if (t && pthread_create(&th[t], NULL, read_slice, &sl[t]))
                    exit(1);
            }
            read_slice(&sl[0]);
            for (int t = 1; t < threads; t++)
                pthread_join(th[t], NULL);
            for (int t = 0; t < threads; t++)
                sink += sl[t].sum[0];
            it++;
        } while ((dt = bench_now() - t0) < 0.2);
        double g = (double)it * (double)(n * sizeof(v8)) / dt / 1e9;
        if (rep && g > best)
            best = g;
    }
    free(buf);
    if (sink == 42)                             /* keeps the sums alive */
        fputc(' ', stderr);
    return best;
}

static double sgemm_gflops(int n)
{
    float *A = randbuf((size_t)n * n), *B = randbuf((size_t)n * n), *C = randbuf((size_t)n * n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = bench_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
        double g = 2.0 * n * n * (double)n / (bench_now() - t0) / 1e9;
        best = g > best ? g : best;
    }
    free(A), free(B), free(C);
    return best;
}

/* Best of `reps` greedy batch-1 runs over sources [0, n) with this max_length. */
static double greedy_time(mt_session *s, const sources *S, int n, int max_length, mt_hyp *hyps, long *ntok, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double dt = run(s, S, n, 1, 1, max_length, NULL, NULL, hyps, ntok);
        mt_hyps_free(hyps, n);
        best = dt < best ? dt : best;
    }
    return best;
}

/* bytes of the matrices a decode step reads: every decoder Linear but the cross
 * K/V projections (run once per source) and the vocabulary projection */
static double step_bytes_of(const mt_model_info *MI, int wi)
{
    double d = MI->d_model, F = MI->dec_ffn, V = MI->vocab_size, L = MI->dec_layers;
    double weights = L * (3 * d * d + d * d + d * d + d * d + 2 * d * F) + V * d;
    double rows = L * (3 * d + d + d + d + F + d) + V;
    return WEIGHTS[wi].per_weight * weights + WEIGHTS[wi].per_row * rows;
}

static void limits(const mt_model *m, mt_session *s, const sources *S, int wi, int threads, int max_length,
                   int lim_n, int reps, mt_hyp *hyps)
{
    const mt_model_info *MI = mt_model_get_info(m);
    long d = MI->d_model, V = MI->vocab_size, L = MI->dec_layers, Fe = MI->enc_ffn;
    double step_bytes = step_bytes_of(MI, wi);
    /* step time: greedy batch 1 at max_length T vs 2 (one forced step): same encoder work */
    int n = S->n < lim_n ? S->n : lim_n, T = max_length;
    long tok_a, tok_b;
    double ta = greedy_time(s, S, n, T, hyps, &tok_a, reps);
    double tb = greedy_time(s, S, n, 2, hyps, &tok_b, reps);
    double step_us = (ta - tb) / (double)(tok_a - tok_b) * 1e6;
    /* encoder: FLOPs of the encoder stack and the cross K/V projections (both run
     * before the first step) over the actual source lengths, timed at batch 32 with
     * max_length 2 minus one batch-32 step (approximated by 32 single-row steps' bytes,
     * which is an overestimate of its cost, so GFLOP/s is a lower bound). */
    double flops = 0;
    long srcs = 0;
    for (int i = 0; i < S->n; i++) {
        double Sl = S->len[i];
        flops += MI->enc_layers * (2 * Sl * (3 * d * d + d * d + 2 * d * Fe) + 4 * Sl * Sl * d) +
                 L * 2 * Sl * d * 2 * d;
        srcs++;
    }
    mt_decode_params p = mt_decode_default_params();
    p.beam_size = 1;
    p.lengths.max_length = 2;
    double te = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = bench_now();
        for (int i = 0; i < S->n; i += 32) {
            int k = S->n - i < 32 ? S->n - i : 32;
            mt_err e;
            if (mt_generate(s, (const int32_t *const *)S->ids + i, S->len + i, k, &p, hyps + i, &e) != MT_OK)
                die("mt_generate", &e);
        }
        double dt = bench_now() - t0;
        mt_hyps_free(hyps, S->n);
        te = dt < te ? dt : te;
    }
    double enc_gflops = flops / te / 1e9;
    /* machine: sgemv bandwidth on the vocab projection's shape (cache resident for
     * a small model), on 64 MB, and on a matrix of the step's bytes (its working
     * set; sgemv is F32, the engine's F16/INT8 read fewer bytes of the same
     * memory), sgemm peak, each with 1 and `threads` threads */
    double gv[2], gv_big[2], gr_step[2], gm[2];
    int th[2] = {1, threads};
    for (int k = 0; k < 2; k++) {
        openblas_set_num_threads(th[k]);
        gv[k] = sgemv_gbs((int)V, (int)d);
        gv_big[k] = sgemv_gbs(16384, 1024);
        gr_step[k] = read_gbs((size_t)step_bytes, th[k]);
        gm[k] = sgemm_gflops(1024);
    }
    openblas_set_num_threads(1);               /* the engine parallelizes itself (parallel.h) */
    double gv_best = gv[0] > gv[1] ? gv[0] : gv[1];
    double gr_best = gr_step[0] > gr_step[1] ? gr_step[0] : gr_step[1];
    double bound_us = step_bytes / (gv_best * 1e9) * 1e6;
    double step_bound_us = step_bytes / (gr_best * 1e9) * 1e6;
    /* KV cache: self K|V per generated token per sequence, cross K|V per source token */
    double kv_self = 4.0 * L * 2 * d, kv_cross = 4.0 * L * 2 * d;
    mt_session_params sp = mt_session_default_params(m);
    sp.max_batch = 8;
    sp.max_src_len = 64;
    sp.max_tgt_len = 64;
    mt_session *s1, *s2;
    mt_err e;
    if (mt_session_new(m, &sp, &s1, &e) != MT_OK)
        die("session", &e);
    sp.max_tgt_len = 128;
    if (mt_session_new(m, &sp, &s2, &e) != MT_OK)
        die("session", &e);
    double sess_tok = (double)(mt_session_bytes(s2) - mt_session_bytes(s1)) / (sp.max_batch * 64.0);
    size_t sess_default;
    {
        mt_session *s3;
        mt_session_params dp = mt_session_default_params(m);
        if (mt_session_new(m, &dp, &s3, &e) != MT_OK)
            die("session", &e);
        sess_default = mt_session_bytes(s3);
        mt_session_free(s3);
    }
    mt_session_free(s1), mt_session_free(s2);
    printf("{\"limits\": {\"weights\": \"%s\", \"threads\": %d, \"step_us\": %.1f, \"step_weight_bytes\": %.0f, "
           "\"step_sentences\": %d, \"step_tokens\": %ld, "
           "\"sgemv_gbs_1t\": %.1f, \"sgemv_gbs_nt\": %.1f, \"sgemv64mb_gbs_1t\": %.1f, \"sgemv64mb_gbs_nt\": %.1f, "
           "\"read_step_gbs_1t\": %.1f, \"read_step_gbs_nt\": %.1f, "
           "\"step_bound_us\": %.1f, \"step_bound_mem_us\": %.1f, \"step_eff_gbs\": %.1f, "
           "\"enc_gflops\": %.1f, \"enc_flops\": %.0f, \"enc_seconds\": %.4f, \"enc_sources\": %ld, "
           "\"sgemm_gflops_1t\": %.1f, \"sgemm_gflops_nt\": %.1f, "
           "\"kv_self_bytes_per_token\": %.0f, \"kv_cross_bytes_per_src_token\": %.0f, "
           "\"session_bytes_per_tgt_token\": %.0f, \"session_bytes_default\": %zu, \"weight_bytes\": %zu}}\n",
           WEIGHTS[wi].name, threads, step_us, step_bytes, n, tok_a - tok_b, gv[0], gv[1], gv_big[0], gv_big[1],
           gr_step[0], gr_step[1], bound_us, step_bound_us,
           step_bytes / (step_us * 1e-6) / 1e9, enc_gflops, flops, te, srcs, gm[0], gm[1], kv_self, kv_cross,
           sess_tok, sess_default, MI->weight_bytes);
    fflush(stdout);
}

/* "batch:beam" or "batch:beam:sentences" (0: all); the next configuration or NULL. */
static const char *next_config(const char *c, int *batch, int *beam, int *sent)
{
    *sent = 0;
    int used = 0;
    if (sscanf(c, "%d:%d%n", batch, beam, &used) != 2 || *batch < 1 || *beam < 1) {
        fprintf(stderr, "bench_engine: bad config %s\n", c);
        exit(2);
    }
    c += used;
    if (*c == ':' && sscanf(c + 1, "%d%n", sent, &used) == 1 && *sent >= 1)
        c += 1 + used;
    if (*c && *c != ',') {
        fprintf(stderr, "bench_engine: bad config near %s\n", c);
        exit(2);
    }
    return *c ? c + 1 : NULL;
}

/* --shortlist-build: the sentences' greedy outputs over the whole vocabulary
 * as the corpus of a shortlist, written in Marian's binary format and as a
 * CTranslate2 vmap with the same lists. */
static void shortlist_build(const mt_model *m, mt_session *s, const sources *S, int max_length, const char *prefix)
{
    mt_hyp *h = calloc((size_t)S->n, sizeof *h);
    long ntok;
    run(s, S, S->n, 32, 1, max_length, NULL, NULL, h, &ntok);
    int32_t **tgt = malloc(sizeof *tgt * (size_t)S->n);
    int *tlen = malloc(sizeof *tlen * (size_t)S->n);
    for (int i = 0; i < S->n; i++)
        tgt[i] = h[i].ids, tlen[i] = h[i].n_ids;
    mt_shortlist_params sp = mt_shortlist_default_params();
    sp.best = 50;
    sp.frequent = 100;
    mt_shortlist *sl;
    mt_err e;
    if (mt_shortlist_build(m, S->n, (const int32_t *const *)S->ids, S->len, (const int32_t *const *)tgt, tlen, &sp,
                           1, &sl, &e) != MT_OK)
        die("mt_shortlist_build", &e);
    char path[4096];
    snprintf(path, sizeof path, "%s.bin", prefix);
    if (mt_shortlist_write(sl, path, &e) != MT_OK)
        die(path, &e);
    snprintf(path, sizeof path, "%s.vmap", prefix);
    FILE *f = fopen(path, "w");
    if (!f)
        die(path, NULL);
    const mt_tokenizer *tok = mt_model_tokenizer(m);
    const mt_shortlist_info *si = mt_shortlist_get_info(sl);
    int k;
    const int32_t *fr = mt_shortlist_frequent(sl, &k);
    fputc('\t', f);                                   /* the empty source: always candidates */
    for (int j = 0; j < k; j++)
        fprintf(f, j ? " %s" : "%s", mt_tokenizer_piece(tok, fr[j]));
    fputc('\n', f);
    for (int w = 0; w < si->src_vocab; w++) {
        const int32_t *l = mt_shortlist_list(sl, w, &k);
        if (!l || !k || !mt_tokenizer_piece(tok, w))
            continue;
        fprintf(f, "%s\t", mt_tokenizer_piece(tok, w));
        for (int j = 0; j < k; j++)
            fprintf(f, j ? " %s" : "%s", mt_tokenizer_piece(tok, l[j]));
        fputc('\n', f);
    }
    fclose(f);
    printf("{\"shortlist_built\": {\"prefix\": \"%s\", \"entries\": %ld, \"src_words\": %d, \"frequent\": %d}}\n",
           prefix, si->entries, si->src_words, si->frequent);
    mt_shortlist_free(sl);
    mt_hyps_free(h, S->n);
    free(h), free(tgt), free(tlen);
}

/* A language's token id (--src-lang, --tgt-lang); exits when the model has no such language. */
static int32_t lang_id(const mt_model *m, const char *code)
{
    int32_t id = mt_multi_lang_id(mt_tokenizer_multi(mt_model_tokenizer(m)), code);
    if (id < 0) {
        fprintf(stderr, "bench_engine: '%s' is not a language of the model\n", code);
        exit(2);
    }
    return id;
}

/* --lang-vocab-ids N: the target language's list, N distinct ids drawn from the
 * vocabulary (splitmix64 from a fixed seed), pad left out. */
static mt_lang_vocab *random_lang_vocab(const mt_model *m, int32_t lang, int n)
{
    const mt_model_info *mi = mt_model_get_info(m);
    int V = mi->vocab_size, k = 0;
    if (n < 1 || n >= V)
        die("--lang-vocab-ids: outside [1, vocab)", NULL);
    uint8_t *taken = calloc((size_t)V, 1);
    int32_t *ids = malloc(sizeof *ids * (size_t)n);
    uint64_t x = 49;
    while (k < n) {
        uint64_t z = (x += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        int32_t id = (int32_t)((z ^ (z >> 31)) % (uint64_t)V);
        if (!taken[id] && id != mi->pad_id)
            taken[id] = 1, ids[k++] = id;
    }
    long off[2] = {0, n};
    mt_lang_vocab *lv;
    mt_err e;
    if (mt_lang_vocab_new(m, 1, &lang, off, ids, &lv, &e) != MT_OK)
        die("mt_lang_vocab_new", &e);
    free(ids);
    free(taken);
    return lv;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A configuration without and with the map in turn, rounds times; the medians
 * of tokens/s (every sentence's encoder, steps and all) and of the decoder
 * step alone: each run is made at max_length and at a third of it, and the
 * step is the difference of their times over the difference of their tokens
 * (the encoders cancel). */
static void ab_runs(mt_session *s, const sources *S, int k, int batch, int beam, int max_length,
                    const mt_lang_vocab *lv, int rounds, mt_hyp *hyps)
{
    double tps[2][64], step[2][64];
    if (rounds > 64)
        rounds = 64;
    int short_len = max_length / 3 > 2 ? max_length / 3 : 2;
    for (int r = 0; r < rounds; r++)
        for (int with = 0; with < 2; with++) {
            long ntok, nshort;
            g_lv = with ? lv : NULL;
            run(s, S, batch < k ? batch : k, batch, beam, short_len, NULL, NULL, hyps, &ntok);     /* warm-up */
            mt_hyps_free(hyps, batch < k ? batch : k);
            double ds = run(s, S, k, batch, beam, short_len, NULL, NULL, hyps, &nshort);
            mt_hyps_free(hyps, k);
            double dt = run(s, S, k, batch, beam, max_length, NULL, NULL, hyps, &ntok);
            tps[with][r] = ntok / dt;
            step[with][r] = ntok > nshort ? (dt - ds) / (double)(ntok - nshort) * 1e3 : 0;
            printf("{\"engine\": \"c\", \"batch\": %d, \"beam\": %d, \"sentences\": %d, \"round\": %d, "
                   "\"lang_vocab\": %s, \"seconds\": %.3f, \"tok_per_s\": %.2f, \"target_tokens\": %ld, "
                   "\"short_seconds\": %.3f, \"short_tokens\": %ld, \"step_ms\": %.2f}\n", batch, beam, k, r,
                   with ? "true" : "false", dt, ntok / dt, ntok, ds, nshort, step[with][r]);
            fflush(stdout);
            mt_hyps_free(hyps, k);
        }
    g_lv = NULL;
    for (int w = 0; w < 2; w++) {
        qsort(tps[w], (size_t)rounds, sizeof(double), cmp_double);
        qsort(step[w], (size_t)rounds, sizeof(double), cmp_double);
    }
    /* medians (an even count: the mean of the middle two) */
    int lo = (rounds - 1) / 2, hi = rounds / 2;
    double a = (tps[0][lo] + tps[0][hi]) / 2, b = (tps[1][lo] + tps[1][hi]) / 2;
    double sa = (step[0][lo] + step[0][hi]) / 2, sb = (step[1][lo] + step[1][hi]) / 2;
    printf("{\"summary\": {\"batch\": %d, \"beam\": %d, \"rounds\": %d, \"map_ids\": %d, \"full_tok_per_s\": %.2f, "
           "\"map_tok_per_s\": %.2f, \"speedup\": %.2f, \"full_step_ms\": %.2f, \"map_step_ms\": %.2f, "
           "\"step_speedup\": %.2f}}\n", batch, beam, rounds, mt_lang_vocab_count(lv, g_forced), a, b, b / a, sa, sb,
           sb > 0 ? sa / sb : 0);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *model = "models/en-fr", *input = "tests/fixtures/tokenizer/inputs/test.en.txt";
    const char *configs = "1:1,32:1,1:4,32:4", *ids_out = NULL, *src_out = NULL, *sl_file = NULL, *sl_build = NULL;
    int n = 64, max_length = 0, threads = 2, do_limits = 0, wi = 0, lim_n = 16, lim_reps = 3, kv_f16 = 0;
    int term_n = 0, lv_ids = 0, rounds = 3;
    const char *src_lang = NULL, *tgt_lang = NULL, *lv_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--limits")) {
            do_limits = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "bench_engine: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--input")) input = v;
        else if (!strcmp(a, "--n")) n = atoi(v);
        else if (!strcmp(a, "--max-length")) max_length = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--configs")) configs = v;
        else if (!strcmp(a, "--limits-n")) lim_n = atoi(v);
        else if (!strcmp(a, "--limits-reps")) lim_reps = atoi(v);
        else if (!strcmp(a, "--weights")) {
            for (wi = 0; wi < N_WEIGHTS && strcmp(v, WEIGHTS[wi].opt); wi++)
                ;
            if (wi == N_WEIGHTS) {       /* never measure F32 under another mode's name */
                fprintf(stderr, "bench_engine: unknown --weights %s\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--kv-cache")) {
            if (strcmp(v, "f32") && strcmp(v, "f16")) {
                fprintf(stderr, "bench_engine: unknown --kv-cache %s\n", v);
                return 2;
            }
            kv_f16 = v[1] == '1';
        } else if (!strcmp(a, "--ids-out")) ids_out = v;
        else if (!strcmp(a, "--src-out")) src_out = v;
        else if (!strcmp(a, "--shortlist")) sl_file = v;
        else if (!strcmp(a, "--shortlist-build")) sl_build = v;
        else if (!strcmp(a, "--term")) term_n = atoi(v);
        else if (!strcmp(a, "--src-lang")) src_lang = v;
        else if (!strcmp(a, "--tgt-lang")) tgt_lang = v;
        else if (!strcmp(a, "--lang-vocab")) lv_file = v;
        else if (!strcmp(a, "--lang-vocab-ids")) lv_ids = atoi(v);
        else if (!strcmp(a, "--rounds")) rounds = atoi(v);
        else {
            fprintf(stderr, "bench_engine: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (n < 1 || lim_n < 1 || lim_reps < 1) {
        fprintf(stderr, "bench_engine: --n, --limits-n and --limits-reps must be at least 1\n");
        return 2;
    }
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = threads;
    mp.weights = WEIGHTS[wi].w;
    mt_model *m;
    mt_err e;
    double t_load = bench_now();
    if (mt_model_load(model, &mp, &m, &e) != MT_OK)
        die(model, &e);
    t_load = bench_now() - t_load;
    size_t hwm_load = proc_status("VmHWM"), rss_load = proc_status("VmRSS");
    const mt_model_info *MI = mt_model_get_info(m);
    if (strcmp(MI->weights, WEIGHTS[wi].name)) {
        fprintf(stderr, "bench_engine: --weights %s, the model reports %s\n", WEIGHTS[wi].opt, MI->weights);
        return 1;
    }
    if (max_length == 0)
        max_length = MI->default_max_length;
    g_src_lang = src_lang ? lang_id(m, src_lang) : -1;
    g_forced = tgt_lang ? lang_id(m, tgt_lang) : -1;
    mt_lang_vocab *lv = NULL;
    if ((lv_file || lv_ids) && g_forced < 0)
        die("--lang-vocab and --lang-vocab-ids need --tgt-lang", NULL);
    if (lv_file && mt_lang_vocab_load(m, lv_file, &lv, &e) != MT_OK)
        die(lv_file, &e);
    if (!lv && lv_ids)
        lv = random_lang_vocab(m, g_forced, lv_ids);
    sources S;
    read_sources(m, input, n, &S);
    n = S.n;
    if (src_out) {
        FILE *f = fopen(src_out, "w");
        for (int i = 0; i < n; i++)
            print_ids(f, S.ids[i], S.len[i]), fputc('\n', f);
        fclose(f);
    }
    /* one session big enough for every configuration */
    int max_rows = 1, batch, beam, sent;
    for (const char *c = configs; c;) {
        c = next_config(c, &batch, &beam, &sent);
        if (batch * beam > max_rows)
            max_rows = batch * beam;
    }
    mt_session_params sp = mt_session_default_params(m);
    sp.kv_f16 = kv_f16;
    sp.max_batch = max_rows;
    sp.max_src_len = S.max_len;
    sp.max_tgt_len = max_length;
    mt_shortlist *sl = NULL;
    if (sl_file) {
        mt_shortlist_params slp = mt_shortlist_default_params();
        if (mt_shortlist_load(m, sl_file, &slp, &sl, &e) != MT_OK)
            die(sl_file, &e);
        sp.shortlist_max = MI->vocab_size;     /* always gathered, as CTranslate2 gathers its vmap's union */
    }
    if (sl_build && max_rows < 32)
        sp.max_batch = 32;
    mt_session *s;
    if (mt_session_new(m, &sp, &s, &e) != MT_OK)
        die("mt_session_new", &e);
    if (sl_build) {
        shortlist_build(m, s, &S, max_length, sl_build);
        mt_session_free(s);
        mt_model_free(m);
        return 0;
    }
    mt_hyp *hyps = calloc((size_t)n, sizeof *hyps);
    int32_t term_ids[8];
    if (term_n < 0 || term_n > 8)
        die("--term takes 0..8 ids", NULL);
    for (int i = 0; i < term_n; i++)
        term_ids[i] = 10 + i;
    const mt_constraint term_c = {.src_start = 1, .src_end = 2, .ids = term_ids, .n_ids = term_n};
    const mt_constraint *term = term_n ? &term_c : NULL;
    long src_tokens = 0;
    for (int i = 0; i < n; i++)
        src_tokens += S.len[i];
    FILE *fo = ids_out ? fopen(ids_out, "w") : NULL;
    printf("{\"model\": {\"d_model\": %d, \"enc_layers\": %d, \"dec_layers\": %d, \"heads\": %d, \"ffn\": %d, "
           "\"vocab\": %d, \"dtype\": \"%s\", \"weights\": \"%s\", \"weight_bytes\": %zu, \"file_bytes\": %zu, "
           "\"max_length\": %d, \"sentences\": %d, \"source_tokens\": %ld, \"threads\": %d, "
           "\"load_ms\": %.0f, \"hwm_after_load\": %zu, \"rss_after_load\": %zu, "
           "\"step_weight_bytes\": %.0f}}\n",
           MI->d_model, MI->enc_layers, MI->dec_layers, MI->dec_heads, MI->dec_ffn, MI->vocab_size, MI->dtype,
           MI->weights, MI->weight_bytes, MI->file_bytes, max_length, n, src_tokens, threads, t_load * 1e3,
           hwm_load, rss_load, step_bytes_of(MI, wi));
    fflush(stdout);
    for (const char *c = configs; c;) {
        c = next_config(c, &batch, &beam, &sent);
        int k = sent && sent < n ? sent : n;
        if (lv) {
            ab_runs(s, &S, k, batch, beam, max_length, lv, rounds, hyps);
            continue;
        }
        long ntok;
        run(s, &S, batch < k ? batch : k, batch, beam, max_length, sl, term, hyps, &ntok);      /* warm-up */
        mt_hyps_free(hyps, batch < k ? batch : k);
        double c0 = cpu_seconds();
        double dt = run(s, &S, k, batch, beam, max_length, sl, term, hyps, &ntok);
        double cpu = cpu_seconds() - c0;    /* every thread's: the run's cost on a shared machine */
        printf("{\"engine\": \"c\", \"batch\": %d, \"beam\": %d, \"sentences\": %d, \"seconds\": %.3f, "
               "\"sent_per_s\": %.2f, \"tok_per_s\": %.1f, \"target_tokens\": %ld, \"cpu_s\": %.3f, "
               "\"shortlist\": %s, \"term_ids\": %d}\n",
               batch, beam, k, dt, k / dt, ntok / dt, ntok, cpu, sl ? "true" : "false", term_n);
        fflush(stdout);
        if (fo) {
            fprintf(fo, "{\"batch\": %d, \"beam\": %d, \"sentences\": %d, \"ids\": [", batch, beam, k);
            for (int i = 0; i < k; i++) {
                if (i)
                    fputc(',', fo);
                print_ids(fo, hyps[i].ids, hyps[i].n_ids);
            }
            fputs("]}\n", fo);
        }
        mt_hyps_free(hyps, k);
    }
    if (fo)
        fclose(fo);
    if (do_limits)
        limits(m, s, &S, wi, threads, max_length, lim_n, lim_reps, hyps);
    printf("{\"rss\": {\"hwm_end\": %zu, \"rss_end\": %zu}}\n", proc_status("VmHWM"), proc_status("VmRSS"));
    free(hyps);
    mt_session_free(s);
    mt_shortlist_free(sl);
    mt_lang_vocab_free(lv);
    for (int i = 0; i < n; i++)
        free(S.ids[i]);
    free(S.ids), free(S.len);
    mt_model_free(m);
    return 0;
}
