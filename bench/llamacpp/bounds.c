/* bounds: the machine's limits for bench/llamacpp_bench.py, measured in the
 * same run as the servers (alternately with them), one JSON line:
 *
 *   bounds [--threads 2] [--mb 1024]
 *   {"threads", "read_GBs", "copy_GBs", "fma_GFLOPs", "vnni_GOPs"}
 *
 *   read_GBs    MB of floats summed by every thread over its own part (AVX2
 *               loads, 4 chains): the bandwidth a batch-1 decode step's
 *               weights stream at; the buffer is 4 x the L3 and more
 *   copy_GBs    STREAM's copy (a[i] = b[i], bytes read + written) over the same
 *   fma_GFLOPs  an FMA loop on registers only (12 chains, zmm where the CPU has
 *               AVX-512, else ymm) on every thread: the F32 instruction peak
 *   vnni_GOPs   a vpdpbusd zmm loop on registers only (AVX512-VNNI; 0 without
 *               it): the int8 instruction peak (2 ops per byte product)
 * Each figure is the best of 3 (the machine is shared: the best is the least
 * disturbed).  Test-side code: never linked into mtserve. */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REG_ITERS (1 << 24)
#define MAX_THREADS 64

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((target("avx512f"), noinline)) static float fma512(float seed)
{
    __m512 a[12], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        a[i] = _mm512_set1_ps(seed + i);
    for (long it = 0; it < REG_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            a[i] = _mm512_fmadd_ps(a[i], m, c);
    for (int i = 1; i < 12; i++)
        a[0] = _mm512_add_ps(a[0], a[i]);
    return _mm512_reduce_add_ps(a[0]);
}

__attribute__((target("avx2,fma"), noinline)) static float fma256(float seed)
{
    __m256 a[12], m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        a[i] = _mm256_set1_ps(seed + i);
    for (long it = 0; it < REG_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            a[i] = _mm256_fmadd_ps(a[i], m, c);
    float t[8], s = 0;
    for (int i = 1; i < 12; i++)
        a[0] = _mm256_add_ps(a[0], a[i]);
    _mm256_storeu_ps(t, a[0]);
    for (int i = 0; i < 8; i++)
        s += t[i];
    return s;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"), noinline)) static int vnni512(int seed)
{
    __m512i a[12], x = _mm512_set1_epi32(0x01010101), w = _mm512_set1_epi32(seed);
    for (int i = 0; i < 12; i++)
        a[i] = _mm512_set1_epi32(i);
    for (long it = 0; it < REG_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            a[i] = _mm512_dpbusd_epi32(a[i], x, w);
    uint32_t t[16], u = 0;          /* the sums wrap: unsigned */
    for (int i = 1; i < 12; i++)
        a[0] = _mm512_add_epi32(a[0], a[i]);
    _mm512_storeu_si512(t, a[0]);
    for (int i = 0; i < 16; i++)
        u += t[i];
    return (int)(u & 0x7fffffff);
}

__attribute__((target("avx2"), noinline)) static float sum_floats(const float *p, long n)
{
    __m256 a[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    for (long i = 0; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            a[j] = _mm256_add_ps(a[j], _mm256_loadu_ps(p + i + 8 * j));
    float t[8], s = 0;
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
    for (int i = 0; i < 8; i++)
        s += t[i];
    return s;
}

typedef struct {
    int kind, id;                   /* 0 fma, 1 vnni, 2 read, 3 copy */
    float *a, *b;
    long n;                         /* floats of this thread's part */
    double sink;
} job;

static int has512, hasvnni;

static void *run(void *p)
{
    job *j = p;
    if (j->kind == 0)
        j->sink = has512 ? fma512((float)j->id) : fma256((float)j->id);
    else if (j->kind == 1)
        j->sink = vnni512(j->id + 3);
    else if (j->kind == 2)
        j->sink = sum_floats(j->a, j->n);
    else
        memcpy(j->b, j->a, (size_t)j->n * sizeof(float));
    return NULL;
}

/* seconds for `threads` threads each doing its job once */
static double timed(int kind, int threads, float *a, float *b, long n)
{
    pthread_t t[MAX_THREADS];
    job js[MAX_THREADS];
    long per = n / threads;
    double t0 = now();
    for (int i = 0; i < threads; i++) {
        js[i] = (job){ .kind = kind, .id = i, .a = a + i * per, .b = b + i * per, .n = per };
        pthread_create(&t[i], NULL, run, &js[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return now() - t0;
}

int main(int argc, char **argv)
{
    int threads = 2;
    long mb = 1024;
    for (int i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mb"))
            mb = atol(argv[i + 1]);
    if (threads < 1 || threads > MAX_THREADS || mb < 1) {
        fprintf(stderr, "usage: bounds [--threads 2] [--mb 1024]\n");
        return 2;
    }
    __builtin_cpu_init();
    has512 = __builtin_cpu_supports("avx512f");
    hasvnni = has512 && __builtin_cpu_supports("avx512vnni");
    long n = (mb << 20) / sizeof(float);
    float *a = aligned_alloc(64, (size_t)n * sizeof(float)), *b = aligned_alloc(64, (size_t)n * sizeof(float));
    if (!a || !b) {
        fprintf(stderr, "bounds: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        a[i] = b[i] = (float)(i & 1023);
    double best[4] = { 1e30, 1e30, 1e30, 1e30 };
    for (int rep = 0; rep < 3; rep++)
        for (int k = 0; k < 4; k++) {
            if (k == 1 && !hasvnni)
                continue;
            double s = timed(k, threads, a, b, n);
            if (s < best[k])
                best[k] = s;
        }
    double lanes = has512 ? 16 : 8, bytes = (double)n * sizeof(float);
    printf("{\"threads\": %d, \"read_GBs\": %.2f, \"copy_GBs\": %.2f, \"fma_GFLOPs\": %.1f, \"vnni_GOPs\": %.1f}\n",
           threads, bytes / best[2] / 1e9, 2 * bytes / best[3] / 1e9,
           threads * (double)REG_ITERS * 12 * lanes * 2 / best[0] / 1e9,
           hasvnni ? threads * (double)REG_ITERS * 12 * 64 * 2 / best[1] / 1e9 : 0.0);
    free(a);
    free(b);
    return 0;
}
