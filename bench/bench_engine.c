/* bench_engine: the C engine's speed through the public API (engine/mt.h).
 *
 *   bench_engine --model DIR --input FILE [--n 64] [--max-length L] [--threads 2]
 *                [--configs 1:1,32:1,1:4,32:4] [--ids-out FILE] [--src-out FILE] [--limits]
 *
 * Reads the first n lines of FILE, tokenizes them with the model's tokenizer
 * (--src-out writes those ids, one JSON list a line, so the PyTorch reference
 * decodes exactly the same inputs), then for each batch:beam configuration
 * decodes all n sentences in chunks of `batch` sources (one warm-up chunk
 * first) and prints one JSON object: sentences/s, target tokens/s (generated
 * ids, </s> included, as bench_torch.py counts them).  --ids-out receives the
 * output ids of every configuration ({"batch","beam","ids":[...]} a line).
 *
 * --limits adds the machine's limits and where the engine stands:
 *   decode step at batch 1 (from greedy runs of two lengths, so the encoder
 *   cancels) against weight bytes per step / sgemv bandwidth (measured here on
 *   a matrix of the vocabulary projection's size, cache resident, as the
 *   weights are in the 480 MB L3), the encoder's GFLOP/s against sgemm
 *   peak (1024^3, 1 and 2 threads), and KV-cache bytes per token from the
 *   shape and from mt_session_bytes(). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mt.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

/* Decode sources [0, n) in chunks of `batch`; returns seconds, *ntok = ids generated. */
static double run(mt_session *s, const sources *S, int n, int batch, int beam, int max_length, mt_hyp *hyps,
                  long *ntok)
{
    mt_decode_params p = mt_decode_default_params();
    p.beam_size = beam;
    p.max_length = max_length;
    p.n_best = 1;
    double t0 = now();
    for (int i = 0; i < n; i += batch) {
        int k = n - i < batch ? n - i : batch;
        mt_err e;
        if (mt_generate(s, (const int32_t *const *)S->ids + i, S->len + i, k, &p, hyps + i, &e) != MT_OK)
            die("mt_generate", &e);
    }
    double dt = now() - t0;
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
        double t0 = now(), dt;
        do {
            cblas_sgemv(CblasRowMajor, CblasNoTrans, m, k, 1.0f, A, k, x, 1, 0.0f, y, 1);
            it++;
        } while ((dt = now() - t0) < 0.06);
        double g = (double)it * m * k * 4 / dt / 1e9;
        best = g > best ? g : best;
    }
    free(A), free(x), free(y);
    return best;
}

static double sgemm_gflops(int n)
{
    float *A = randbuf((size_t)n * n), *B = randbuf((size_t)n * n), *C = randbuf((size_t)n * n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
        double g = 2.0 * n * n * (double)n / (now() - t0) / 1e9;
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
        double dt = run(s, S, n, 1, 1, max_length, hyps, ntok);
        mt_hyps_free(hyps, n);
        best = dt < best ? dt : best;
    }
    return best;
}

static void limits(const mt_model *m, mt_session *s, const sources *S, int threads, int max_length, mt_hyp *hyps)
{
    const mt_model_info *MI = mt_model_get_info(m);
    long d = MI->d_model, F = MI->dec_ffn, V = MI->vocab_size, L = MI->dec_layers, Fe = MI->enc_ffn;
    /* decode step: every decoder Linear + the vocabulary projection, once per step,
     * at the bytes per weight they are held in (F16: 2, F32: 4) */
    int f16 = MI->weights && !strcmp(MI->weights, "F16");
    double wbytes = f16 ? 2.0 : 4.0;
    double step_bytes = wbytes * (L * (3 * d * d + d * d + d * d + d * d + 2 * d * F) + V * d);
    /* step time: greedy batch 1 at max_length T vs 2 (one forced step): same encoder work */
    int n = S->n < 16 ? S->n : 16, T = max_length;
    long tok_a, tok_b;
    double ta = greedy_time(s, S, n, T, hyps, &tok_a, 3);
    double tb = greedy_time(s, S, n, 2, hyps, &tok_b, 3);
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
    p.max_length = 2;
    double te = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        for (int i = 0; i < S->n; i += 32) {
            int k = S->n - i < 32 ? S->n - i : 32;
            mt_err e;
            if (mt_generate(s, (const int32_t *const *)S->ids + i, S->len + i, k, &p, hyps + i, &e) != MT_OK)
                die("mt_generate", &e);
        }
        double dt = now() - t0;
        mt_hyps_free(hyps, S->n);
        te = dt < te ? dt : te;
    }
    double enc_gflops = flops / te / 1e9;
    /* machine: sgemv bandwidth on the vocab projection's shape (cache resident) and
     * on 64 MB (beyond L2, in L3), sgemm peak, each with 1 and `threads` threads */
    double gv[2], gv_big[2], gm[2];
    int th[2] = {1, threads};
    for (int k = 0; k < 2; k++) {
        openblas_set_num_threads(th[k]);
        gv[k] = sgemv_gbs((int)V, (int)d);
        gv_big[k] = sgemv_gbs(16384, 1024);
        gm[k] = sgemm_gflops(1024);
    }
    openblas_set_num_threads(1);               /* the engine parallelizes itself (parallel.h) */
    double gv_best = gv[0] > gv[1] ? gv[0] : gv[1];
    double bound_us = step_bytes / (gv_best * 1e9) * 1e6;
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
           "\"sgemv_gbs_1t\": %.1f, \"sgemv_gbs_nt\": %.1f, \"sgemv64mb_gbs_1t\": %.1f, \"sgemv64mb_gbs_nt\": %.1f, "
           "\"step_bound_us\": %.1f, \"step_eff_gbs\": %.1f, "
           "\"enc_gflops\": %.1f, \"enc_flops\": %.0f, \"enc_seconds\": %.4f, \"enc_sources\": %ld, "
           "\"sgemm_gflops_1t\": %.1f, \"sgemm_gflops_nt\": %.1f, "
           "\"kv_self_bytes_per_token\": %.0f, \"kv_cross_bytes_per_src_token\": %.0f, "
           "\"session_bytes_per_tgt_token\": %.0f, \"session_bytes_default\": %zu, \"weight_bytes\": %zu}}\n",
           f16 ? "F16" : "F32", threads, step_us, step_bytes, gv[0], gv[1], gv_big[0], gv_big[1], bound_us,
           step_bytes / (step_us * 1e-6) / 1e9, enc_gflops, flops, te, srcs, gm[0], gm[1], kv_self, kv_cross,
           sess_tok, sess_default, MI->weight_bytes);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *model = "models/en-fr", *input = "tests/fixtures/tokenizer/inputs/test.en.txt";
    const char *configs = "1:1,32:1,1:4,32:4", *ids_out = NULL, *src_out = NULL;
    int n = 64, max_length = 0, threads = 2, do_limits = 0, f16 = 0;
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
        else if (!strcmp(a, "--weights")) f16 = v && !strcmp(v, "f16");
        else if (!strcmp(a, "--ids-out")) ids_out = v;
        else if (!strcmp(a, "--src-out")) src_out = v;
        else {
            fprintf(stderr, "bench_engine: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = threads;
    mp.weights = f16 ? MT_WEIGHTS_F16 : MT_WEIGHTS_F32;
    mt_model *m;
    mt_err e;
    if (mt_model_load(model, &mp, &m, &e) != MT_OK)
        die(model, &e);
    const mt_model_info *MI = mt_model_get_info(m);
    if (max_length == 0)
        max_length = MI->default_max_length;
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
    int max_rows = 1;
    for (const char *c = configs; *c;) {
        int b, k;
        if (sscanf(c, "%d:%d", &b, &k) == 2 && b * k > max_rows)
            max_rows = b * k;
        c = strchr(c, ',') ? strchr(c, ',') + 1 : c + strlen(c);
    }
    mt_session_params sp = mt_session_default_params(m);
    sp.max_batch = max_rows;
    sp.max_src_len = S.max_len;
    sp.max_tgt_len = max_length;
    mt_session *s;
    if (mt_session_new(m, &sp, &s, &e) != MT_OK)
        die("mt_session_new", &e);
    mt_hyp *hyps = calloc((size_t)n, sizeof *hyps);
    long src_tokens = 0;
    for (int i = 0; i < n; i++)
        src_tokens += S.len[i];
    FILE *fo = ids_out ? fopen(ids_out, "w") : NULL;
    printf("{\"model\": {\"d_model\": %d, \"enc_layers\": %d, \"dec_layers\": %d, \"ffn\": %d, \"vocab\": %d, "
           "\"dtype\": \"%s\", \"weights\": \"%s\", \"weight_bytes\": %zu, \"max_length\": %d, \"sentences\": %d, "
           "\"source_tokens\": %ld, \"threads\": %d}}\n",
           MI->d_model, MI->enc_layers, MI->dec_layers, MI->dec_ffn, MI->vocab_size, MI->dtype, MI->weights, MI->weight_bytes,
           max_length, n, src_tokens, threads);
    for (const char *c = configs; *c;) {
        int batch, beam;
        if (sscanf(c, "%d:%d", &batch, &beam) != 2) {
            fprintf(stderr, "bench_engine: bad config %s\n", c);
            return 2;
        }
        long ntok;
        run(s, &S, batch < n ? batch : n, batch, beam, max_length, hyps, &ntok);      /* warm-up */
        mt_hyps_free(hyps, batch < n ? batch : n);
        double dt = run(s, &S, n, batch, beam, max_length, hyps, &ntok);
        printf("{\"engine\": \"c\", \"batch\": %d, \"beam\": %d, \"sentences\": %d, \"seconds\": %.3f, "
               "\"sent_per_s\": %.2f, \"tok_per_s\": %.1f, \"target_tokens\": %ld}\n",
               batch, beam, n, dt, n / dt, ntok / dt, ntok);
        fflush(stdout);
        if (fo) {
            fprintf(fo, "{\"batch\": %d, \"beam\": %d, \"ids\": [", batch, beam);
            for (int i = 0; i < n; i++) {
                if (i)
                    fputc(',', fo);
                print_ids(fo, hyps[i].ids, hyps[i].n_ids);
            }
            fputs("]}\n", fo);
        }
        mt_hyps_free(hyps, n);
        c = strchr(c, ',') ? strchr(c, ',') + 1 : c + strlen(c);
    }
    if (fo)
        fclose(fo);
    if (do_limits)
        limits(m, s, &S, threads, max_length, hyps);
    free(hyps);
    mt_session_free(s);
    for (int i = 0; i < n; i++)
        free(S.ids[i]);
    free(S.ids), free(S.len);
    mt_model_free(m);
    return 0;
}
