/* bench_kernels: the batched Linear products at the OPUS-MT tc-big shape
 * against the peak measured in the same process (issue 32).
 *
 *   bench_kernels [--reps 9] [--threads 2] [--n 1,8,32,128] [--kernels f32,f16,int8]
 *                 [--int8-isa vnni|avx2|portable]   (INT8: a slower kernel than the CPU's best;
 *                 int8-reg is then the AVX2 loop, also for the portable kernel)
 *                 [--l2 auto,0,BYTES...]   (F32/F16: the L2 size their k blocks are sized for,
 *                 each a row of its own, timed in the same repetitions; auto = the machine's as
 *                 the engine reads it, 0 = no k blocks; the kc column gives the block)
 *                 [--shapes opus|qwen3|tinyllama]   (the products' shapes, below)
 *                 [--ab 1]   (F32/F16: each product also through the row-block tile alone,
 *                 mt_k_linear_packed_generic, the kernel before issue 54's n <= 2 and F16 prompt
 *                 paths: "old" beside "new", one after the other in every repetition, which
 *                 first alternating, each timing after an untimed call; the ratio is the
 *                 median of the repetitions' ratios)
 *                 [--arena-mb 0]   (F32/F16: each call reads its weights from the next place
 *                 in an arena of that many MB, so that they stream from memory as a decode
 *                 step's do, not from a cache that the last call filled; 0: one copy)
 *                 [--mem-mb 256]   (mem-read's buffer)
 *
 * Peaks (each measured with the products, interleaved):
 *   sgemm     OpenBLAS sgemm 1024^3, 1 and `threads` threads: the F32 and F16 peak
 *   fma-reg   an FMA loop on registers only, on every thread: F32 instruction throughput
 *   int8-reg  a vpdpbusd loop on registers only (AVX2: vpmaddubsw + vpmaddwd + vpaddd),
 *             every thread: the INT8 instruction throughput, the INT8 peak
 *   mem-read  256 MB summed over the pool: the read bandwidth from memory, beside each
 *             product's weight bytes per second (the vocabulary's weights do not fit
 *             the L3: at n = 8 they stream from memory)
 * Products: y [n][out] = x [n][in] W^T with W packed as the engine packs it
 * (mt_k_pack F32 / F16, mt_k_pack_q8 with the CPU's best ISA), the shapes
 * d x d (attention), d x 4d (FFN up), 4d x d (FFN down), d x vocab (output),
 * d = 1024, vocab 53017 (--shapes opus); the Qwen3-0.6B shapes (hidden 1024, q 2048,
 * kv 1024, FFN 3072, the tied head 151936) or TinyLlama-1.1B's (2048, kv 256, FFN 5632,
 * vocab 32000) with --shapes qwen3 / tinyllama.  Every repetition times every product once (a few
 * calls of at least ~20 ms) and the peaks before each kernel x shape group;
 * the table gives medians: GFLOP/s (2 n in out / s; INT8: GOP/s), % of the
 * kernel's peak (F32, F16: sgemm at `threads`; INT8: int8-reg) and, for the
 * float kernels, % of fma-reg (the instruction bound).
 *
 * The roofline: a call reads its weights once for n rows, so it can go no
 * faster than mem-read x (ops per weight byte: 2n / 4, 2, 1 bytes for F32,
 * F16, INT8) while they stream from memory.  "attainable" is the lower of
 * that and the instruction bound (fma-reg, int8-reg); "% of attainable" is
 * the product against it.  Over 100% means the weights came from a cache:
 * a product whose weights fit the L3 (attention, FFN: 4-16 MB at F32) finds
 * them there on the next call in this loop, which a whole decode step (every
 * layer's weights in turn) would not. */
#include <cblas.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "formats/tensors.h"
#include "bench_util.h"

#define MAX_ITEMS 128
#define MAX_REPS 31
#define MAX_SAMPLES (MAX_REPS * 16)   /* a peak is timed between every kernel x shape group */
#define NPEAKS 5                      /* items[0..NPEAKS): the peaks */

static float *randbuf(size_t n, unsigned *seed)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = ((*seed >> 8) / 16777216.0f - 0.5f) * 0.1f;
    }
    return p;
}

/* ---- register-only loops: instruction throughput ------------------------------------------ */
#define REG_ITERS (1 << 22)

/* 12 independent FMA chains (latency 4 x 2 pipes, with room) */
__attribute__((target("avx512f"), noinline)) static float fma_loop512(float seed)
{
    __m512 a[12], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        a[i] = _mm512_set1_ps(seed + i);
    for (long it = 0; it < REG_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            a[i] = _mm512_fmadd_ps(a[i], m, c);
    __m512 s = a[0];
    for (int i = 1; i < 12; i++)
        s = _mm512_add_ps(s, a[i]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bw,avx512vnni"), noinline)) static int vnni_loop512(int seed)
{
    __m512i a[12], x = _mm512_set1_epi32(0x01010101), w = _mm512_set1_epi32(seed);
    for (int i = 0; i < 12; i++)
        a[i] = _mm512_set1_epi32(i);
    for (long it = 0; it < REG_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            a[i] = _mm512_dpbusd_epi32(a[i], x, w);
    __m512i s = a[0];
    for (int i = 1; i < 12; i++)
        s = _mm512_add_epi32(s, a[i]);
    uint32_t t[16], u = 0;                 /* the sums wrap: unsigned, no signed overflow */
    _mm512_storeu_si512(t, s);
    for (int i = 0; i < 16; i++)
        u += t[i];
    return (int)(u & 0x7fffffff);
}

__attribute__((target("avx2,fma"), noinline)) static float fma_loop256(float seed)
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

/* AVX2's int8 product as linear_q8.c does it: 32 multiply-adds of bytes per
 * vpmaddubsw, widened by vpmaddwd, summed by vpaddd */
__attribute__((target("avx2"), noinline)) static int maddubs_loop256(int seed)
{
    /* 6 chains in named variables (an array with the asm below stays in memory):
     * 6 sums + 6 inputs + w + ones fit AVX2's 16 registers */
    __m256i w = _mm256_set1_epi32(seed), one = _mm256_set1_epi16(1);
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
    __m256i x0 = _mm256_set1_epi8(1), x1 = _mm256_set1_epi8(2), x2 = _mm256_set1_epi8(3),
            x3 = _mm256_set1_epi8(4), x4 = _mm256_set1_epi8(5), x5 = _mm256_set1_epi8(6);
    /* x "changes" every iteration (no instruction): the products cannot be hoisted */
#define MADD8(a, x)                                                                     \
    __asm__ volatile("" : "+x"(x));                                                     \
    a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), one))
    for (long it = 0; it < REG_ITERS; it++) {
        MADD8(a0, x0); MADD8(a1, x1); MADD8(a2, x2); MADD8(a3, x3); MADD8(a4, x4); MADD8(a5, x5);
    }
#undef MADD8
    a0 = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)), _mm256_add_epi32(a4, a5));
    uint32_t t[8], s = 0;
    _mm256_storeu_si256((__m256i *)t, a0);
    for (int i = 0; i < 8; i++)
        s += t[i];
    return (int)(s & 0x7fffffff);
}

/* ---- memory: the read bandwidth a product's weights stream at ---------------------------- */
#define MEM_BYTES (256l << 20)          /* 8 x the L3: from memory */

typedef struct {
    const float *p;
    long n;                             /* floats */
    int chunks;
} mem_job;

__attribute__((target("avx2"), noinline)) static float sum_floats(const float *p, long n)
{
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (long i = 0; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++)
            a[j] = _mm256_add_ps(a[j], _mm256_loadu_ps(p + i + 8 * j));
    float t[8], s = 0;
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
    for (int i = 0; i < 8; i++)
        s += t[i];
    return s;
}

static volatile float sink_m;

static void mem_chunk(void *ctx, int c)
{
    const mem_job *j = ctx;
    long per = j->n / j->chunks;
    sink_m = sum_floats(j->p + c * per, per);
}

static int has512, hasvnni;
static volatile float sink_f;
static volatile int sink_i;

/* one register loop per chunk, `threads` chunks over the pool: flops (or int8 ops) done */
static void reg_chunk(void *ctx, int c)
{
    int kind = *(const int *)ctx;
    if (kind == 0)
        sink_f = has512 ? fma_loop512((float)c) : fma_loop256((float)c);
    else
        sink_i = hasvnni ? vnni_loop512(c + 3) : maddubs_loop256(c + 3);
}

static double reg_ops(int kind)
{
    /* F32: 12 FMA x lanes x 2; INT8: VNNI 12 x 64 x 2, AVX2 6 x 32 x 2 (vpmaddubsw's products) */
    if (kind == 0)
        return (double)REG_ITERS * 12 * (has512 ? 16 : 8) * 2;
    return hasvnni ? (double)REG_ITERS * 12 * 64 * 2 : (double)REG_ITERS * 6 * 32 * 2;
}

/* ---- the items ---------------------------------------------------------------------------- */
typedef enum { IT_SGEMM, IT_FMA, IT_INT8REG, IT_MEM, IT_LINEAR } item_kind;
enum { K_F32, K_F16, K_INT8 };
static const char *KNAME[] = {"F32", "F16", "INT8"};

typedef struct {
    item_kind kind;
    int threads;              /* IT_SGEMM: OpenBLAS threads */
    int kern, shape, n;       /* IT_LINEAR */
    int kc;                   /* IT_LINEAR F32/F16: the k block (mt_packed.kc) */
    int generic;              /* IT_LINEAR F32/F16: the row-block tile alone (--ab's "old") */
    double ops;               /* per call */
    int calls;                /* per timing */
    int ng;
    double g[MAX_SAMPLES];    /* G(FL)OP/s per timing */
} item;

typedef struct {
    const char *name;
    int in, out;
} shape;
#define NSHAPES 6
static const shape OPUS[] = {
    {"attn 1024x1024", 1024, 1024},
    {"ffn-up 1024x4096", 1024, 4096},
    {"ffn-down 4096x1024", 4096, 1024},
    {"vocab 1024x53017", 1024, 53017},
    {NULL, 0, 0},
};
static const shape QWEN3[] = {
    {"q 1024x2048", 1024, 2048},
    {"kv 1024x1024", 1024, 1024},
    {"o 2048x1024", 2048, 1024},
    {"gate/up 1024x3072", 1024, 3072},
    {"down 3072x1024", 3072, 1024},
    {"head 1024x151936", 1024, 151936},
};
static const shape TINYLLAMA[] = {
    {"q/o 2048x2048", 2048, 2048},
    {"kv 2048x256", 2048, 256},
    {"gate/up 2048x5632", 2048, 5632},
    {"down 5632x2048", 5632, 2048},
    {"head 2048x32000", 2048, 32000},
    {NULL, 0, 0},
};
static const shape *SHAPES = OPUS;
static int nshapes = 4;

typedef struct {
    mt_packed pk[3][NSHAPES];       /* F32, F16, INT8 */
    void *buf[3][NSHAPES];
    size_t bytes[3][NSHAPES];
    float *x, *y, *b[NSHAPES], *A, *B, *C, *mem;
    void *scratch;
    char *arena[2];                 /* --arena-mb: F32, F16 weights to stream from */
    size_t arena_bytes, arena_at[2];
    long mem_bytes;
} fixture;

static void run_item(fixture *F, item *it, int threads)
{
    switch (it->kind) {
    case IT_SGEMM:
        openblas_set_num_threads(it->threads);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1024, 1024, 1024, 1.0f, F->A, 1024, F->B, 1024, 0.0f,
                    F->C, 1024);
        openblas_set_num_threads(1);
        break;
    case IT_FMA:
    case IT_INT8REG: {
        int kind = it->kind == IT_FMA ? 0 : 1;
        mt_par_for(threads, reg_chunk, &kind);
        break;
    }
    case IT_MEM: {
        mem_job j = {.p = F->mem, .n = F->mem_bytes / 4, .chunks = 8 * threads};
        mt_par_for(j.chunks, mem_chunk, &j);
        break;
    }
    case IT_LINEAR: {
        mt_packed W = F->pk[it->kern][it->shape];
        if (it->kern == K_INT8)
            mt_k_linear_q8(F->x, it->n, &W, F->b[it->shape], F->y, MT_ACT_NONE, F->scratch);
        else {
            W.kc = it->kc;
            size_t bytes = F->bytes[it->kern][it->shape], *at = &F->arena_at[it->kern];
            if (F->arena[it->kern] && 2 * bytes <= F->arena_bytes) {    /* the next place in the arena */
                if (*at + bytes > F->arena_bytes)
                    *at = 0;
                W.data = F->arena[it->kern] + *at;
                *at += (bytes + 4095) & ~(size_t)4095;
            }
            (it->generic ? mt_k_linear_packed_generic : mt_k_linear_packed)(F->x, it->n, &W, F->b[it->shape], F->y,
                                                                              MT_ACT_NONE);
        }
        break;
    }
    }
}

static int warm_first;       /* --ab: one untimed call before each product's timing */

static void time_item(fixture *F, item *it, int threads)
{
    if (warm_first && it->kind == IT_LINEAR)
        run_item(F, it, threads);           /* both of a pair start from the same caches */
    double t0 = bench_now();
    for (int c = 0; c < it->calls; c++)
        run_item(F, it, threads);
    if (it->ng < MAX_SAMPLES)
        it->g[it->ng++] = it->ops * it->calls / (bench_now() - t0) / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    double t[MAX_SAMPLES];
    memcpy(t, v, n * sizeof *t);
    qsort(t, n, sizeof *t, cmp_d);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static int parse_list(const char *s, int *v, int max)
{
    int k = 0;
    while (*s && k < max) {
        v[k++] = atoi(s);
        s = strchr(s, ',');
        if (!s)
            break;
        s++;
    }
    return k;
}

/* --arena-mb: `bytes` of weights of the products' scale (no NaN, no subnormal sums), as
 * halves (f16) or floats, for the F32/F16 products to read from a new place each call */
static char *arena_new(size_t bytes, int f16, unsigned *seed)
{
    char *a = mt_huge_alloc(bytes);
    for (size_t i = 0; i < bytes / (f16 ? 2 : 4); i++) {
        *seed = *seed * 1664525u + 1013904223u;
        float v = ((*seed >> 8) / 16777216.0f - 0.5f) * 0.1f;
        if (f16)
            ((uint16_t *)a)[i] = mt_f32_to_f16(v);
        else
            ((float *)a)[i] = v;
    }
    return a;
}

/* --ab: new / old per product; the ratio of medians would mix two moments, the median of
 * the per-repetition ratios does not */
static void print_ab(item *items, int ni)
{
    printf("\n| kernel | product | n | new / old (median of the repetitions' ratios) |\n|---|---|---:|---:|\n");
    for (int i = NPEAKS; i + 1 < ni; i++) {
        item *a = &items[i], *o = &items[i + 1];
        if (a->kern == K_INT8 || a->generic || !o->generic)
            continue;
        double rr[MAX_SAMPLES];
        int nr = a->ng < o->ng ? a->ng : o->ng;
        for (int q = 0; q < nr; q++)
            rr[q] = a->g[q] / o->g[q];
        printf("| %s | %s | %d | %.3f |\n", KNAME[a->kern], SHAPES[a->shape].name, a->n, median(rr, nr));
    }
}

int main(int argc, char **argv)
{
    int int8_isa = -1;                           /* --int8-isa: the CPU's best unless given */
    int reps = 9, threads = 2, ns[8] = {1, 8, 32, 128}, nn = 4, kern_on[3] = {1, 1, 1};
    long l2s[4] = {-1};                          /* --l2: -1 = auto */
    int nl2 = 1, ab = 0;
    long arena_mb = 0, mem_mb = MEM_BYTES >> 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--shapes")) {
            SHAPES = !strcmp(argv[i + 1], "qwen3") ? QWEN3 : !strcmp(argv[i + 1], "tinyllama") ? TINYLLAMA : OPUS;
            for (nshapes = 0; nshapes < NSHAPES && SHAPES[nshapes].name; nshapes++)
                ;
        } else if (!strcmp(argv[i], "--ab"))
            ab = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--arena-mb"))
            arena_mb = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--mem-mb"))
            mem_mb = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--n"))
            nn = parse_list(argv[i + 1], ns, 8);
        else if (!strcmp(argv[i], "--int8-isa"))
            int8_isa = !strcmp(argv[i + 1], "avx2") ? MT_Q8_AVX2 : !strcmp(argv[i + 1], "portable") ? MT_Q8_SCALAR
                                                                                                : MT_Q8_VNNI512;
        else if (!strcmp(argv[i], "--l2")) {
            nl2 = 0;
            for (const char *s = argv[i + 1]; s && *s && nl2 < 4; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
                l2s[nl2++] = !strncmp(s, "auto", 4) ? -1 : atol(s);
        } else if (!strcmp(argv[i], "--kernels")) {
            for (int k = 0; k < 3; k++)
                kern_on[k] = strstr(argv[i + 1], k == 0 ? "f32" : k == 1 ? "f16" : "int8") != NULL;
        } else {
            fprintf(stderr, "usage: bench_kernels [--reps 9] [--threads 2] [--n 1,8,32,128] [--kernels f32,f16,int8] [--int8-isa vnni|avx2|portable] [--l2 auto,0,BYTES]\n"
                            "       [--shapes opus|qwen3|tinyllama] [--ab 1] [--arena-mb 0] [--mem-mb 256]\n");
            return 2;
        }
    }
    reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
    warm_first = ab;
    __builtin_cpu_init();
    has512 = __builtin_cpu_supports("avx512f");
    mt_q8_isa isa = mt_k_q8_best_isa();
    if (int8_isa >= 0 && int8_isa < (int)isa)
        isa = (mt_q8_isa)int8_isa;              /* a slower kernel than the CPU's best, against its own peak */
    hasvnni = isa == MT_Q8_VNNI512;
    openblas_set_num_threads(1);
    mt_par_set_threads(threads);

    unsigned seed = 12345;
    fixture F = {0};
    int maxn = 1;
    for (int i = 0; i < nn; i++)
        maxn = ns[i] > maxn ? ns[i] : maxn;
    int maxin = 1, maxout = 1;
    for (int s = 0; s < nshapes; s++) {
        maxin = SHAPES[s].in > maxin ? SHAPES[s].in : maxin;
        maxout = SHAPES[s].out > maxout ? SHAPES[s].out : maxout;
    }
    F.x = randbuf((size_t)maxn * maxin, &seed);
    F.y = randbuf((size_t)maxn * maxout, &seed);
    F.scratch = malloc(mt_k_q8_scratch_bytes(maxn, maxin));
    F.mem_bytes = (mem_mb > 0 ? mem_mb : MEM_BYTES >> 20) << 20;
    F.mem = mt_huge_alloc(F.mem_bytes);
    memset(F.mem, 1, F.mem_bytes);                /* real pages, not the zero page */
    F.arena_bytes = (size_t)(arena_mb > 0 ? arena_mb : 0) << 20;
    for (int k = 0; k < 2 && F.arena_bytes; k++)
        if (kern_on[k])
            F.arena[k] = arena_new(F.arena_bytes, k == K_F16, &seed);
    F.A = randbuf(1024 * 1024, &seed), F.B = randbuf(1024 * 1024, &seed), F.C = randbuf(1024 * 1024, &seed);
    for (int s = 0; s < nshapes; s++) {
        int in = SHAPES[s].in, out = SHAPES[s].out;
        float *W = randbuf((size_t)in * out, &seed);
        F.b[s] = randbuf(out, &seed);
        for (int k = 0; k < 3; k++) {
            if (!kern_on[k])
                continue;
            F.bytes[k][s] = k == K_INT8 ? mt_k_q8_bytes(in, out) : mt_k_packed_bytes(in, out, k == K_F16);
            F.buf[k][s] = mt_huge_alloc(F.bytes[k][s]);
            if (k == K_INT8)
                mt_k_pack_q8(W, in, out, isa, F.buf[k][s], &F.pk[k][s]);
            else {
                mt_k_pack(W, in, out, k == K_F16, F.buf[k][s]);
                F.pk[k][s] = (mt_packed){.data = F.buf[k][s], .in = in, .out = out, .f16 = k == K_F16};
            }
        }
        free(W);
    }

    static item items[MAX_ITEMS];
    int ni = 0;
    items[ni++] = (item){.kind = IT_SGEMM, .threads = 1, .ops = 2.0 * 1024 * 1024 * 1024};
    items[ni++] = (item){.kind = IT_SGEMM, .threads = threads, .ops = 2.0 * 1024 * 1024 * 1024};
    items[ni++] = (item){.kind = IT_FMA, .ops = reg_ops(0) * threads};
    items[ni++] = (item){.kind = IT_INT8REG, .ops = reg_ops(1) * threads};
    items[ni++] = (item){.kind = IT_MEM, .ops = (double)F.mem_bytes};
    long l2_auto = mt_k_l2_bytes();
    for (int k = 0; k < 3; k++)
        for (int s = 0; s < nshapes && kern_on[k]; s++)
            for (int i = 0; i < nn; i++)
                for (int l = 0; l < (k == K_INT8 ? 1 : nl2); l++)
                    for (int g = 0; g <= (ab && k != K_INT8) && ni < MAX_ITEMS; g++) {
                        long l2 = l2s[l] < 0 ? l2_auto : l2s[l];
                        int kc = k == K_INT8 || l2 == 0 ? 0 : mt_k_block_k(SHAPES[s].in, k == K_F16, l2);
                        items[ni++] = (item){.kind = IT_LINEAR, .kern = k, .shape = s, .n = ns[i], .kc = kc,
                                             .generic = g, .ops = 2.0 * ns[i] * SHAPES[s].in * SHAPES[s].out};
                    }

    /* calibration (also the warm-up): calls per timing for >= ~20 ms */
    for (int i = 0; i < ni; i++) {
        double t0 = bench_now();
        run_item(&F, &items[i], threads);
        double dt = bench_now() - t0;
        items[i].calls = dt >= 0.02 ? 1 : (int)(0.02 / (dt > 1e-6 ? dt : 1e-6)) + 1;
    }
    /* Each repetition: the peaks, then one kernel x shape group (its n values), the
     * peaks again, ... so the peaks are sampled as often as the products and
     * under the same load (this machine is shared). */
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < ni; i++) {
            int peaks = i == NPEAKS || (i > NPEAKS && items[i].shape != items[i - 1].shape);
            for (int q = peaks ? 0 : i; q < (peaks ? NPEAKS : i); q++)
                time_item(&F, &items[q], threads);
            /* --ab: a pair's first alternates between repetitions (the one right after the
             * peaks meets colder caches: identical code timed 5-35 % slower there) */
            int swap = ab && r % 2 && i + 1 < ni && items[i].kind == IT_LINEAR && !items[i].generic &&
                       items[i + 1].generic;
            if (swap)
                time_item(&F, &items[i + 1], threads);
            time_item(&F, &items[i], threads);
            i += swap;
        }

    double sg1 = median(items[0].g, items[0].ng), sgT = median(items[1].g, items[1].ng);
    double fpeak = median(items[2].g, items[2].ng), ipeak = median(items[3].g, items[3].ng);
    double mem = median(items[4].g, items[4].ng);
    printf("# bench_kernels: %d threads, %d repetitions (medians), int8 kernel %s\n", threads, reps,
           mt_k_q8_isa_name(isa));
    printf("# peak sgemm 1024^3: %.1f GFLOP/s (1 thread), %.1f GFLOP/s (%d threads)\n", sg1, sgT, threads);
    printf("# peak fma-reg (F32 FMA instruction throughput, %s, %d threads): %.1f GFLOP/s\n",
           has512 ? "zmm" : "ymm", threads, fpeak);
    printf("# peak int8-reg (%s instruction throughput, %d threads): %.1f GOP/s\n",
           hasvnni ? "vpdpbusd zmm" : "vpmaddubsw ymm", threads, ipeak);
    printf("# peak mem-read (%ld MB summed, %d threads): %.1f GB/s\n", F.mem_bytes >> 20, threads, mem);
    if (F.arena_bytes)
        printf("# F32/F16 weights read from a %zu MB arena, each call at the next place (from memory)\n",
               F.arena_bytes >> 20);
    if (ab)
        printf("# --ab: F32/F16 \"new\" (the kernel as the engine runs it) beside \"old\" (the row-block tile "
               "alone, mt_k_linear_packed_generic), timed alternately\n");
    printf("# L2 %ld KB as the engine reads it (mt_k_l2_bytes); kc: the F32/F16 k block (0: all of in)\n",
           l2_auto >> 10);
    printf("| kernel | product | n | kc | path | G(FL)OP/s | %% of peak | peak | %% of fma-reg | weights GB/s "
           "| attainable (bound) | %% of attainable |\n"
           "|---|---|---:|---:|---|---:|---:|---|---:|---:|---:|---:|\n");
    for (int i = NPEAKS; i < ni; i++) {
        item *it = &items[i];
        double g = median(it->g, it->ng);
        /* the weight bytes each call reads: g / ops per call = calls per second */
        double wgb = g / it->ops * F.bytes[it->kern][it->shape];
        double streamed = mem * it->ops / F.bytes[it->kern][it->shape];   /* the weights' reads alone */
        double instr = it->kern == K_INT8 ? ipeak : fpeak;
        double att = streamed < instr ? streamed : instr;
        const char *bound = streamed < instr ? "memory" : "instructions";
        if (it->kern == K_INT8)
            printf("| INT8 | %s | %d | | | %.1f GOP/s | %.0f%% | int8-reg %.1f | | %.1f | %.1f (%s) | %.0f%% |\n",
                   SHAPES[it->shape].name, it->n, g, 100 * g / ipeak, ipeak, wgb, att, bound, 100 * g / att);
        else
            printf("| %s | %s | %d | %d | %s | %.1f | %.0f%% | sgemm %.1f | %.0f%% | %.1f | %.1f (%s) | %.0f%% |\n",
                   KNAME[it->kern], SHAPES[it->shape].name, it->n, it->kc, !ab ? "" : it->generic ? "old" : "new", g, 100 * g / sgT, sgT, 100 * g / fpeak,
                   wgb, att, bound, 100 * g / att);
    }
    if (ab)
        print_ab(items, ni);
    for (int k = 0; k < 3; k++)
        for (int s = 0; s < NSHAPES; s++)
            if (F.buf[k][s])
                mt_huge_free(F.buf[k][s], F.bytes[k][s]);
    mt_huge_free(F.mem, F.mem_bytes);
    for (int k = 0; k < 2; k++)
        if (F.arena[k])
            mt_huge_free(F.arena[k], F.arena_bytes);
    free(F.x), free(F.y), free(F.scratch), free(F.A), free(F.B), free(F.C);
    for (int s = 0; s < NSHAPES; s++)
        free(F.b[s]);
    return 0;
}
