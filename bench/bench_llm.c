/* bench_llm: a decoder-only LM's decode speed through the public API (engine/mt.h),
 * with the memory-bandwidth bound measured in the same run (issue 31).
 *
 *   bench_llm --model DIR [--weights f32|f16|int8] [--batch 1,8] [--prompt 16] [--threads 2] [--kv-cache f32|f16]
 *
 * For each batch size b: b random prompts of --prompt ids decoded greedily
 * together (mt_generate), once to max_length L1 and once to L2 (best of 3
 * each); the decode step is (t(L2) - t(L1)) / (L2 - L1), so the prefill
 * cancels; tokens/s = b / step.  The bound: a batch-1 step reads every
 * weight matrix once (q|k|v, o, gate|up, down of every layer and the LM
 * head, at the held precision; INT8 adds a scale and a row sum per row);
 * over the read bandwidth of a buffer as large, summed by --threads threads
 * (best of 3 at the start, and again before each timed repetition of batch 1:
 * the best of all, as the step is the best of 3), it is the fastest a step
 * can be.  One JSON line per batch (read_GBs: the best so far).
 */
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mt.h"
#include "bench_util.h"

typedef struct { const float *p; size_t n; double sum; } slice;

static void *sum_slice(void *arg)
{
    slice *s = arg;
    float a[16] = {0};
    for (size_t i = 0; i + 16 <= s->n; i += 16)
        for (int k = 0; k < 16; k++)
            a[k] += s->p[i + k];
    double t = 0;
    for (int k = 0; k < 16; k++)
        t += a[k];
    s->sum = t;
    return NULL;
}

/* GB/s reading a buffer of `bytes` with `threads` threads, best of 3 (and of
 * every earlier call: the buffer is kept, and the best figure too, so the bound
 * measured between the timed decodes is the machine's best in this run). */
static double read_bw(size_t bytes, int threads)
{
    static float *buf;
    static size_t have;
    static double best;
    size_t n = bytes / sizeof(float);
    if (have != n) {
        free(buf);
        buf = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            buf[i] = (float)(i & 7);
        have = n, best = 0;
    }
    for (int rep = 0; rep < 3; rep++) {
        pthread_t th[16];
        slice sl[16];
        double t0 = bench_now();
        for (int k = 0; k < threads; k++) {
            sl[k] = (slice){.p = buf + n / threads * k, .n = n / threads};
            pthread_create(&th[k], NULL, sum_slice, &sl[k]);
        }
        for (int k = 0; k < threads; k++)
            pthread_join(th[k], NULL);
        double gbs = (double)bytes / (bench_now() - t0) / 1e9;
        best = gbs > best ? gbs : best;
    }
    return best;
}

static int cfg_int(json_t *c, const char *k, int def)
{
    json_t *j = json_object_get(c, k);
    return json_is_integer(j) ? (int)json_integer_value(j) : def;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *wname = "f32", *batches = "1,8";
    int prompt = 16, threads = 2, kv16 = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--weights")) wname = argv[i + 1];
        else if (!strcmp(argv[i], "--batch")) batches = argv[i + 1];
        else if (!strcmp(argv[i], "--prompt")) prompt = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--kv-cache")) kv16 = !strcmp(argv[i + 1], "f16");
    }
    if (!dir) {
        fprintf(stderr, "usage: bench_llm --model DIR [--weights f32|f16|int8] [--batch 1,8] [--prompt 16]\n");
        return 2;
    }
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = threads;
    mp.weights = !strcmp(wname, "f16") ? MT_WEIGHTS_F16 : !strcmp(wname, "int8") ? MT_WEIGHTS_I8 : MT_WEIGHTS_F32;
    mt_model *m;
    mt_err err = {0};
    double t0 = bench_now();
    if (mt_model_load(dir, &mp, &m, &err) != MT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double load_s = bench_now() - t0;
    const mt_model_info *info = mt_model_get_info(m);
    /* the matrices a step reads, from config.json */
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *c = json_load_file(path, 0, NULL);
    int d = cfg_int(c, "hidden_size", 0), H = cfg_int(c, "num_attention_heads", 1), F = cfg_int(c, "intermediate_size", 0);
    int KV = cfg_int(c, "num_key_value_heads", H), hd = cfg_int(c, "head_dim", d / H), L = cfg_int(c, "num_hidden_layers", 0);
    int V = cfg_int(c, "vocab_size", 0);
    json_decref(c);
    double rows = (double)L * (H * hd + 2 * KV * hd + d + 2 * F + d) + V;
    double weights = (double)L * ((double)d * (H * hd + 2 * KV * hd) + (double)H * hd * d + 3.0 * d * F) + (double)V * d;
    double per = mp.weights == MT_WEIGHTS_F16 ? 2 : mp.weights == MT_WEIGHTS_I8 ? 1 : 4;
    double step_bytes = weights * per + (mp.weights == MT_WEIGHTS_I8 ? 8 * rows : 0);
    double bw = read_bw((size_t)(step_bytes < 4e9 ? step_bytes : 4e9), threads);
    printf("{\"model\": \"%s\", \"weights\": \"%s\", \"dtype\": \"%s\", \"load_s\": %.1f, \"step_bytes_MB\": %.0f, "
           "\"read_GBs\": %.1f, \"bound_tok_s_batch1\": %.2f, \"threads\": %d}\n", dir, info->weights, info->dtype,
           load_s, step_bytes / 1e6, bw, bw * 1e9 / step_bytes, threads);
    fflush(stdout);
    const int L1 = 9, L2 = 41;
    char bl[64];
    snprintf(bl, sizeof bl, "%s", batches);
    for (char *tok = strtok(bl, ","); tok; tok = strtok(NULL, ",")) {
        int b = atoi(tok);
        mt_session_params sp = {.max_batch = b, .max_src_len = prompt, .max_tgt_len = L2 + 1, .kv_f16 = kv16};
        mt_session *s;
        if (mt_session_new(m, &sp, &s, &err) != MT_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)b * prompt);
        const int32_t **src = malloc(sizeof *src * (size_t)b);
        int *len = malloc(sizeof(int) * (size_t)b);
        srand(7);
        for (int i = 0; i < b; i++) {
            for (int k = 0; k < prompt; k++)
                ids[i * prompt + k] = rand() % V;
            src[i] = ids + i * prompt;
            len[i] = prompt;
        }
        mt_hyp *out = calloc((size_t)b, sizeof *out);
        double t[2] = {1e30, 1e30};
        long toks[2] = {0, 0};
        for (int rep = 0; rep < 3; rep++) {
            if (b == 1)            /* the bound again between the timed decodes (the machine is shared) */
                bw = read_bw((size_t)(step_bytes < 4e9 ? step_bytes : 4e9), threads);
            for (int k = 0; k < 2; k++) {
                mt_decode_params q = mt_decode_default_params();
                q.beam_size = 1;
                q.lengths.max_length = k ? L2 : L1;
                double a = bench_now();
                if (mt_generate(s, src, len, b, &q, out, &err) != MT_OK) {
                    fprintf(stderr, "%s\n", err.msg);
                    return 1;
                }
                double e = bench_now() - a;
                long n = 0;
                for (int i = 0; i < b; i++)
                    n += out[i].n_ids;
                mt_hyps_free(out, b);
                if (e < t[k])
                    t[k] = e, toks[k] = n;
            }
        }
        double step = (t[1] - t[0]) / (L2 - L1);
        printf("{\"batch\": %d, \"prompt\": %d, \"kv_cache\": \"%s\", \"step_ms\": %.2f, \"tok_s\": %.2f, "
               "\"ids\": [%ld, %ld], \"read_GBs\": %.1f, \"bound_tok_s\": %.2f, \"pct_of_bound\": %.0f}\n", b, prompt,
               kv16 ? "f16" : "f32", step * 1e3, b / step, toks[0], toks[1], bw, bw * 1e9 / step_bytes,
               b == 1 ? 100.0 * (step_bytes / (bw * 1e9)) / step : -1.0);
        fflush(stdout);
        free(out);
        free(ids);
        free(src);
        free(len);
        mt_session_free(s);
    }
    mt_model_free(m);
    return 0;
}
