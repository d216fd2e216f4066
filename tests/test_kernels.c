/* test_kernels.c: the kernels (engine/kernels/kernels.h) against the naive references
 * (tests/ref_kernels.h): the packed product of every Linear (odd sizes, F32
 * and F16, fused activation, batch- and thread-independent bits, the n <= 2
 * and F16 prompt paths equal to the row-block tile; INT8 with
 * every kernel the CPU has against a plain reference, bit for bit), the attention's dot
 * products and a decode step's attention row, the strided gemm wrappers,
 * add+layernorm, masked softmax, activations, log-softmax with pad excluded,
 * and the F16/BF16 conversions. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#if defined(__F16C__)
#include <immintrin.h>
#endif


#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "ref_kernels.h"
#include "formats/safetensors.h"

static uint32_t rng = 12345;

static float frand(void)      /* uniform in [-1, 1) */
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) * (1.0 / 8388608.0)) - 1.0f;
}

static float *rand_vec(size_t n, float scale)
{
    float *v = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        v[i] = frand() * scale;
    return v;
}

/* normalized mean squared error (ggml test-backend-ops style) */
static double nmse(const float *a, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

static double max_abs(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static void *packed_new(const float *W, int in, int out, int f16, mt_packed *pk)
{
    void *p = malloc(mt_k_packed_bytes(in, out, f16));
    mt_k_pack(W, in, out, f16, p);
    *pk = (mt_packed){.data = p, .in = in, .out = out, .f16 = f16};
    return p;
}

static void check_linear(int n, int in, int out, int with_bias)
{
    float *x = rand_vec((size_t)n * in, 1), *W = rand_vec((size_t)out * in, 0.5f), *b = rand_vec((size_t)out, 1);
    float *y = malloc(sizeof(float) * (size_t)n * out), *r = malloc(sizeof(float) * (size_t)n * out);
    mt_packed pk;
    void *a = packed_new(W, in, out, 0, &pk);
    mt_k_linear_packed(x, n, &pk, with_bias ? b : NULL, y, MT_ACT_NONE);
    mt_ref_linear(x, n, in, W, with_bias ? b : NULL, out, r);
    double e = nmse(y, r, (size_t)n * out);
    if (e > 1e-10)
        print_message("linear n=%d in=%d out=%d: nmse %g\n", n, in, out, e);
    assert_true(e <= 1e-10);
    assert_true(max_abs(y, r, (size_t)n * out) <= 1e-4 * sqrt((double)in));
    free(x), free(W), free(b), free(y), free(r), free(a);
}

static void test_linear_shapes(void **state)
{
    (void)state;
    static const int shapes[][3] = {
        {1, 1, 1}, {1, 32, 96}, {1, 256, 768}, {1, 256, 8000}, {1, 1024, 256}, {1, 7, 13},
        {2, 3, 5}, {3, 17, 31}, {13, 64, 33}, {37, 31, 65}, {64, 256, 1024}, {5, 1, 9}, {9, 256, 256},
        {2, 256, 8000}, {3, 256, 768}, {4, 1024, 256}, {5, 64, 33}, {7, 32, 7}, {8, 256, 256}, {1, 8, 3},
        {65, 256, 300}, {130, 40, 77}, {200, 256, 768}, {35, 1024, 256},    /* a source's rows */
    };
    for (int threads = 1; threads <= 2; threads++) {
        mt_par_set_threads(threads);
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            check_linear(shapes[i][0], shapes[i][1], shapes[i][2], 1);
            check_linear(shapes[i][0], shapes[i][1], shapes[i][2], 0);
        }
    }
    mt_par_set_threads(1);
}

/* The decode-step product on packed weights, F32 and F16, against the naive
 * reference (on the F32 values of the same halves for F16); the fused
 * activation equals a separate pass; ragged panel ends and odd `in`. */
static void test_linear_packed(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 256, 8000}, {3, 256, 768}, {4, 1024, 256}, {33, 64, 99}, {5, 19, 7},
                                    {1, 1, 1}, {9, 256, 17}, {17, 32, 50}, {64, 256, 1024}, {130, 40, 77}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        int n = shapes[i][0], in = shapes[i][1], out = shapes[i][2];
        size_t nw = (size_t)out * in, ny = (size_t)n * out;
        float *x = rand_vec((size_t)n * in, 1), *W = rand_vec(nw, 0.5f), *b = rand_vec((size_t)out, 1);
        float *y = malloc(sizeof(float) * ny), *r = malloc(sizeof(float) * ny), *y32 = malloc(sizeof(float) * ny);
        float *Wh = malloc(sizeof(float) * nw);
        for (size_t k = 0; k < nw; k++)
            Wh[k] = mt_f16_to_f32(mt_f32_to_f16(W[k]));        /* the values the halves hold */
        mt_packed p32, p16, ph;
        void *a32 = packed_new(W, in, out, 0, &p32), *a16 = packed_new(W, in, out, 1, &p16);
        void *ah = packed_new(Wh, in, out, 0, &ph);
        for (int threads = 1; threads <= 2; threads++) {
            mt_par_set_threads(threads);
            mt_k_linear_packed(x, n, &p32, b, y, MT_ACT_NONE);
            mt_ref_linear(x, n, in, W, b, out, r);
            assert_true(nmse(y, r, ny) <= 1e-10);
            assert_true(max_abs(y, r, ny) <= 1e-4 * sqrt((double)in));
            mt_k_linear_packed(x, n, &p32, NULL, y, MT_ACT_NONE);
            mt_ref_linear(x, n, in, W, NULL, out, r);
            assert_true(nmse(y, r, ny) <= 1e-10);
            /* F16 storage: exactly the F32 kernel on the rounded values */
            mt_k_linear_packed(x, n, &p16, b, y, MT_ACT_NONE);
            mt_k_linear_packed(x, n, &ph, b, y32, MT_ACT_NONE);
            assert_memory_equal(y, y32, sizeof(float) * ny);
            mt_ref_linear(x, n, in, Wh, b, out, r);
            assert_true(nmse(y, r, ny) <= 1e-10);
            for (mt_act act = MT_ACT_SWISH; act <= MT_ACT_GELU; act++) {
                mt_k_linear_packed(x, n, &p16, b, y, act);
                mt_k_linear_packed(x, n, &p16, b, y32, MT_ACT_NONE);
                mt_k_activation(y32, (long)ny, act);
                assert_memory_equal(y, y32, sizeof(float) * ny);
            }
        }
        mt_par_set_threads(1);
        free(x), free(W), free(Wh), free(b), free(y), free(r), free(y32), free(a32), free(a16), free(ah);
    }
}

/* A row's result must not depend on the batch it is in: decode steps of
 * different sizes (continuous batching) give each sequence the same bits. */
static void test_linear_row_independent(void **state)
{
    (void)state;
    int in = 256, out = 203, nmax = 64;
    float *x = rand_vec((size_t)nmax * in, 1), *W = rand_vec((size_t)out * in, 0.5f), *b = rand_vec((size_t)out, 1);
    float *yn = malloc(sizeof(float) * (size_t)nmax * out), y1[203];
    for (int f16 = 0; f16 <= 1; f16++) {
        mt_packed pk;
        void *a = packed_new(W, in, out, f16, &pk);
        for (int threads = 1; threads <= 2; threads++) {
            mt_par_set_threads(threads);
            for (int n = 2; n <= nmax; n = n * 2 + 1) {
                mt_k_linear_packed(x, n, &pk, b, yn, MT_ACT_NONE);
                for (int r = 0; r < n; r++) {
                    mt_k_linear_packed(x + r * in, 1, &pk, b, y1, MT_ACT_NONE);
                    assert_memory_equal(y1, yn + (long)r * out, sizeof y1);
                }
            }
        }
        free(a);
    }
    mt_par_set_threads(1);
    free(x), free(W), free(b), free(yn);
}

/* With several threads the products split their outputs over the pool
 * (helpers claiming chunks): results must be bit-identical to one thread, for
 * single rows too, with helpers awake and asleep. */
static void test_linear_split_equals_serial(void **state)
{
    (void)state;
    static const int shapes[][3] = {
        {1, 256, 8000}, {1, 256, 768}, {1, 1024, 256}, {1, 256, 1024}, {1, 256, 203}, {4, 256, 8000},
        {4, 256, 768}, {3, 1024, 256}, {8, 256, 1000}, {2, 64, 4099}, {32, 256, 1024}, {64, 1024, 256},
        {100, 256, 768},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        int n = shapes[i][0], in = shapes[i][1], out = shapes[i][2];
        size_t ny = (size_t)n * out;
        float *x = rand_vec((size_t)n * in, 1), *W = rand_vec((size_t)out * in, 0.5f), *b = rand_vec((size_t)out, 1);
        float *p1 = malloc(sizeof(float) * ny), *p2 = malloc(sizeof(float) * ny);
        mt_packed pk;
        void *a = packed_new(W, in, out, 0, &pk);
        mt_par_set_threads(1);
        mt_k_linear_packed(x, n, &pk, b, p1, MT_ACT_SWISH);
        mt_par_set_threads(2);
        for (int rep = 0; rep < 50; rep++) {
            memset(p2, 0, sizeof(float) * ny);
            mt_k_linear_packed(x, n, &pk, b, p2, MT_ACT_SWISH);
            assert_memory_equal(p1, p2, sizeof(float) * ny);
            if (rep == 25)
                usleep(2000);                           /* let them fall asleep once */
        }
        free(x), free(W), free(b), free(p1), free(p2), free(a);
    }
    mt_par_set_threads(1);
}

/* K blocks (mt_packed.kc, sized from the L2 at load): any block gives the
 * bits of the whole k at once (each output's FMA chain in k order, its partial
 * sum exact in y between blocks), F32 and F16, every activation, ragged last
 * panels (which take their whole k), 1 and 2 threads, blocks that do not
 * divide `in`. */
static void test_linear_kblock(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 256, 768}, {8, 512, 96}, {9, 1024, 203}, {33, 256, 50},
                                    {130, 96, 77}, {3, 4096, 48}, {17, 300, 1000}};
    static const int kcs[] = {16, 48, 112, 256, 1008};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        int n = shapes[i][0], in = shapes[i][1], out = shapes[i][2];
        size_t ny = (size_t)n * out;
        float *x = rand_vec((size_t)n * in, 1), *W = rand_vec((size_t)out * in, 0.5f), *b = rand_vec((size_t)out, 1);
        float *y0 = malloc(sizeof(float) * ny), *y1 = malloc(sizeof(float) * ny);
        for (int f16 = 0; f16 <= 1; f16++) {
            mt_packed pk;
            void *a = packed_new(W, in, out, f16, &pk);
            for (int threads = 1; threads <= 2; threads++) {
                mt_par_set_threads(threads);
                for (mt_act act = MT_ACT_SWISH; act <= MT_ACT_NONE; act++) {
                    pk.kc = 0;
                    mt_k_linear_packed(x, n, &pk, act == MT_ACT_RELU ? NULL : b, y0, act);
                    for (size_t k = 0; k < sizeof kcs / sizeof *kcs; k++) {
                        pk.kc = kcs[k];
                        memset(y1, 0xff, sizeof(float) * ny);       /* NaN: nothing may be read before written */
                        mt_k_linear_packed(x, n, &pk, act == MT_ACT_RELU ? NULL : b, y1, act);
                        assert_memory_equal(y0, y1, sizeof(float) * ny);
                    }
                }
            }
            free(a);
        }
        free(x), free(W), free(b), free(y0), free(y1);
    }
    mt_par_set_threads(1);
}

/* The n <= 2 path (panel streams with prefetch) and the F16 prompt path (k
 * blocks converted once to an F32 scratch) of mt_k_linear_packed against the
 * row-block tile alone (mt_k_linear_packed_generic: the kernel before them), bit for
 * bit, and against the plain reference: odd `in` (not a multiple of 16, 64 or
 * the scratch's 128-input blocks), outputs not a multiple of MT_PANEL, n = 1,
 * 2, 3, 17, 61, F32 and F16, with and without bias, every activation, k
 * blocks, 1 and 2 threads. */
static void test_linear_paths(void **state)
{
    (void)state;
    static const int ins[] = {1, 7, 37, 129, 300}, outs[] = {1, 15, 17, 50, 203}, ns[] = {1, 2, 3, 17, 61};
    int checked = 0;
    for (size_t a = 0; a < sizeof ins / sizeof *ins; a++)
        for (size_t c = 0; c < sizeof outs / sizeof *outs; c++) {
            int in = ins[a], out = outs[c], nmax = 61;
            size_t nw = (size_t)out * in, ny = (size_t)nmax * out;
            float *x = rand_vec((size_t)nmax * in, 1), *W = rand_vec(nw, 0.5f), *b = rand_vec((size_t)out, 1);
            float *y = malloc(sizeof(float) * ny), *g = malloc(sizeof(float) * ny), *r = malloc(sizeof(float) * ny);
            float *Wh = malloc(sizeof(float) * nw);
            for (size_t k = 0; k < nw; k++)
                Wh[k] = mt_f16_to_f32(mt_f32_to_f16(W[k]));
            for (int f16 = 0; f16 <= 1; f16++) {
                mt_packed pk;
                void *buf = packed_new(W, in, out, f16, &pk);
                pk.kc = in > 48 ? 48 : 0;                  /* the tile's k blocks; the new paths take none */
                for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
                    int n = ns[i];
                    size_t m = (size_t)n * out;
                    mt_par_set_threads(1 + (int)(i % 2));
                    for (mt_act act = MT_ACT_SWISH; act <= MT_ACT_NONE; act++) {
                        const float *bb = act == MT_ACT_RELU ? NULL : b;
                        memset(y, 0xff, sizeof(float) * m);      /* NaN: nothing may be read before written */
                        mt_k_linear_packed(x, n, &pk, bb, y, act);
                        mt_k_linear_packed_generic(x, n, &pk, bb, g, act);
                        assert_memory_equal(y, g, sizeof(float) * m);
                        checked++;
                    }
                    mt_k_linear_packed(x, n, &pk, b, y, MT_ACT_NONE);
                    mt_ref_linear(x, n, in, f16 ? Wh : W, b, out, r);
                    assert_true(nmse(y, r, m) <= 1e-10);
                    assert_true(max_abs(y, r, m) <= 1e-4 * sqrt((double)in));
                }
                free(buf);
            }
            free(x), free(W), free(Wh), free(b), free(y), free(g), free(r);
        }
    mt_par_set_threads(1);
    print_message("  linear paths: %d products equal to the tile's bits\n", checked);
}

/* The k block for a cache size: a multiple of 16 under `in` whose panel block
 * and row block fit half the L2, in equal blocks; 0 when `in` fits whole. */
static void test_block_k(void **state)
{
    (void)state;
#if defined(__AVX512F__) || defined(__AVX2__)
    assert_int_equal(mt_k_block_k(1024, 0, 1L << 20), 0);        /* 3 x 1024 x 64 B + 8 rows: fits 512 KB */
    assert_int_equal(mt_k_block_k(512, 1, 256L << 10), 0);
    for (long l2 = 64L << 10; l2 <= 8L << 20; l2 *= 2)
        for (int in = 1; in <= 16384; in = in * 3 + 1)
            for (int f16 = 0; f16 <= 1; f16++) {
                int kc = mt_k_block_k(in, f16, l2);
                assert_true(kc >= 0 && kc < in);
                if (kc) {
                    assert_int_equal(kc % 16, 0);
                    int blocks = (in + kc - 1) / kc;
                    assert_true((long)kc * (blocks - 1) < in);          /* no empty block */
                    assert_true((long)kc * 16 * (f16 ? 2 : 4) <= l2 / 2);    /* one panel of the block fits */
                }
            }
#endif
    long l2 = mt_k_l2_bytes();
    assert_true(l2 >= (64L << 10) && l2 <= (256L << 20));
}

/* ---- INT8 weights (engine/kernels/linear_q8.c) ---- */
static void *q8_new(const float *W, int in, int out, mt_q8_isa isa, mt_packed *pk)
{
    void *p = malloc(mt_k_q8_bytes(in, out));
    mt_k_pack_q8(W, in, out, isa, p, pk);
    return p;
}

static const int q8_shapes[][3] = {
    {1, 256, 8000}, {1, 256, 768}, {1, 1024, 256}, {1, 255, 203}, {2, 7, 17}, {3, 1, 16}, {5, 66, 31},
    {8, 256, 1000}, {9, 130, 50}, {13, 64, 4099}, {32, 256, 1024}, {20, 1023, 48},
    {260, 256, 96}, {270, 1024, 40},         /* rows quantized over the pool in 2 and 4 chunks */
};

/* Every kernel this CPU has (portable, AVX2, AVX-512 VNNI) gives exactly the
 * plain reference's bits, bias or not: odd widths (in not a multiple of 4, out
 * not of 16), every row-block remainder, a zero row (scale 0). */
static void test_linear_q8_reference(void **state)
{
    (void)state;
    mt_q8_isa best = mt_k_q8_best_isa();
    print_message("# int8 kernels on this CPU: best %s\n", mt_k_q8_isa_name(best));
    for (size_t i = 0; i < sizeof q8_shapes / sizeof *q8_shapes; i++) {
        int n = q8_shapes[i][0], in = q8_shapes[i][1], out = q8_shapes[i][2];
        size_t ny = (size_t)n * out;
        float *x = rand_vec((size_t)n * in, 2), *W = rand_vec((size_t)out * in, 0.5f), *b = rand_vec((size_t)out, 1);
        memset(x, 0, sizeof(float) * (size_t)in);                   /* row 0 all zero */
        memset(W + (size_t)(out / 2) * in, 0, sizeof(float) * (size_t)in);   /* one output row zero */
        float *y = malloc(sizeof(float) * ny), *r = malloc(sizeof(float) * ny);
        void *scratch = malloc(mt_k_q8_scratch_bytes(n, in));
        for (int with_b = 0; with_b < 2; with_b++) {
            mt_ref_linear_q8(x, n, in, W, with_b ? b : NULL, out, r);
            for (int isa = MT_Q8_SCALAR; isa <= (int)best; isa++) {
                mt_packed pk;
                void *a = q8_new(W, in, out, (mt_q8_isa)isa, &pk);
                memset(y, 0xff, sizeof(float) * ny);
                mt_k_linear_q8(x, n, &pk, with_b ? b : NULL, y, MT_ACT_NONE, scratch);
                if (memcmp(y, r, sizeof(float) * ny) != 0)
                    print_message("int8 %s n=%d in=%d out=%d bias=%d differs from the reference\n",
                                  mt_k_q8_isa_name((mt_q8_isa)isa), n, in, out, with_b);
                assert_memory_equal(y, r, sizeof(float) * ny);
                free(a);
            }
        }
        free(x), free(W), free(b), free(y), free(r), free(scratch);
    }
}

/* Against the F32 product: the quantization error is that of 8 bits per row
 * (nmse about 1e-5 for these uniform values); a fused activation gives the
 * same bits from every kernel; 1 and 2 threads agree; a row's result does not
 * depend on the rows beside it. */
static void test_linear_q8_properties(void **state)
{
    (void)state;
    mt_q8_isa best = mt_k_q8_best_isa();
    for (size_t i = 0; i < sizeof q8_shapes / sizeof *q8_shapes; i++) {
        int n = q8_shapes[i][0], in = q8_shapes[i][1], out = q8_shapes[i][2];
        size_t ny = (size_t)n * out;
        float *x = rand_vec((size_t)n * in, 2), *W = rand_vec((size_t)out * in, 0.5f), *b = rand_vec((size_t)out, 1);
        float *y = malloc(sizeof(float) * ny), *f = malloc(sizeof(float) * ny), *y0 = malloc(sizeof(float) * ny);
        void *scratch = malloc(mt_k_q8_scratch_bytes(n, in));
        mt_ref_linear(x, n, in, W, b, out, f);
        mt_packed pk0;
        void *a0 = q8_new(W, in, out, MT_Q8_SCALAR, &pk0);
        mt_par_set_threads(1);
        mt_k_linear_q8(x, n, &pk0, b, y0, MT_ACT_SWISH, scratch);
        mt_k_linear_q8(x, n, &pk0, b, y, MT_ACT_NONE, scratch);
        double e = nmse(y, f, ny);
        if (in >= 64 && e > 2e-4)
            print_message("int8 n=%d in=%d out=%d: nmse %g against F32\n", n, in, out, e);
        if (in >= 64)
            assert_true(e < 2e-4);
        for (int isa = MT_Q8_SCALAR; isa <= (int)best; isa++) {
            mt_packed pk;
            void *a = q8_new(W, in, out, (mt_q8_isa)isa, &pk);
            for (int t = 1; t <= 2; t++) {
                mt_par_set_threads(t);
                mt_k_linear_q8(x, n, &pk, b, y, MT_ACT_SWISH, scratch);
                assert_memory_equal(y, y0, sizeof(float) * ny);
            }
            int r = n / 2;                                  /* one row alone */
            mt_k_linear_q8(x + (long)r * in, 1, &pk, b, y, MT_ACT_SWISH, scratch);
            assert_memory_equal(y, y0 + (long)r * out, sizeof(float) * (size_t)out);
            free(a);
        }
        mt_par_set_threads(1);
        free(x), free(W), free(b), free(y), free(f), free(y0), free(scratch), free(a0);
    }
}

/* The per-key dot products (mt_k_dots) against double sums. */
static void test_dots(void **state)
{
    (void)state;
    static const int sizes[][2] = {{1, 64}, {37, 64}, {5, 32}, {9, 7}, {100, 80}, {3, 129}, {6, 64}};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        int nk = sizes[t][0], len = sizes[t][1], ld = len + 3;
        float *K = rand_vec((size_t)nk * ld, 1), *q = rand_vec((size_t)len, 1);
        float *sc = malloc(sizeof(float) * (size_t)nk);
        mt_k_dots(nk, len, 0.125f, K, ld, q, sc);
        for (int j = 0; j < nk; j++) {
            double s = 0;
            for (int i = 0; i < len; i++)
                s += (double)K[(long)j * ld + i] * q[i];
            assert_true(fabs(sc[j] - 0.125 * s) <= 1e-6 * sqrt((double)len));
        }
        free(K), free(q), free(sc);
    }
}

/* A decode step's attention row (every head in one pass; hd 64 x a multiple of
 * 4 heads has its own register path) against a double-precision softmax
 * attention, with K/V as F32 and as F16 (the reference then reads the same
 * rounded values, widened). */
static void check_attend_row(int H, int hd, int nk, int f16)
{
    int d = H * hd, ld = 2 * d + 3;
    float *kv = rand_vec((size_t)nk * ld, 1), *q = rand_vec((size_t)d, 2);
    float *sc = malloc(sizeof(float) * (size_t)H * nk), *out = malloc(sizeof(float) * (size_t)d);
    float scale = 1.0f / sqrtf((float)hd);
    if (f16) {
        uint16_t *kv16 = malloc(sizeof(uint16_t) * (size_t)nk * ld);
        mt_k_to_f16(kv, kv16, (long)nk * ld);
        mt_k_from_f16(kv16, kv, (long)nk * ld);          /* what the reference reads */
        mt_k_attend_row_f16(q, kv16, kv16 + d, ld, nk, H, hd, scale, sc, out);
        free(kv16);
    } else {
        mt_k_attend_row(q, kv, kv + d, ld, nk, H, hd, scale, sc, out);
    }
    for (int h = 0; h < H; h++) {
        double w[64], mx = -1e300, sum = 0;
        for (int j = 0; j < nk; j++) {
            double s = 0;
            for (int i = 0; i < hd; i++)
                s += (double)q[h * hd + i] * kv[(long)j * ld + h * hd + i];
            w[j] = s * scale;
            mx = fmax(mx, w[j]);
        }
        for (int j = 0; j < nk; j++)
            sum += (w[j] = exp(w[j] - mx));
        for (int j = 0; j < nk; j++)
            assert_true(fabs(sc[(long)h * nk + j] - w[j] / sum) <= 1e-6);
        for (int i = 0; i < hd; i++) {
            double o = 0;
            for (int j = 0; j < nk; j++)
                o += w[j] / sum * kv[(long)j * ld + d + h * hd + i];
            assert_true(fabs(out[h * hd + i] - o) <= 1e-5);
        }
    }
    free(kv), free(q), free(sc), free(out);
}

static void test_attend_row(void **state)
{
    (void)state;
    static const int shapes[][3] = {{4, 64, 36}, {4, 64, 1}, {8, 64, 23}, {16, 64, 7}, {6, 64, 5},
                                    {2, 24, 9},  {4, 8, 40}, {3, 16, 5}};
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++)
        for (int f16 = 0; f16 < 2; f16++)
            check_attend_row(shapes[t][0], shapes[t][1], shapes[t][2], f16);
}

/* The F16 cache's row conversions equal the scalar conversions element by
 * element (vector bodies and scalar tails; halves' specials included). */
static void test_kv_conversions(void **state)
{
    (void)state;
    enum { N = 77 };
    float x[N], back[N];
    uint16_t h[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)((i * 7919) % 2001 - 1000) * 0.37f;
    x[3] = 65520.0f;                  /* rounds to inf */
    x[5] = 1e-6f;                     /* a subnormal half */
    x[17] = -0.0f;
    x[20] = NAN;
    mt_k_to_f16(x, h, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(h[i], mt_f32_to_f16(x[i]));
    mt_k_from_f16(h, back, N);
    for (int i = 0; i < N; i++) {
        float e = mt_f16_to_f32(h[i]);
        assert_memory_equal(&back[i], &e, sizeof e);
    }
}

static void test_gemm_strided(void **state)
{
    (void)state;
    int nq = 7, nk = 11, hd = 8, ld = 3 * 32;
    float *q = rand_vec((size_t)nq * ld, 1), *k = rand_vec((size_t)nk * ld, 1), *v = rand_vec((size_t)nk * ld, 1);
    float sc[7 * 11], ref[7 * 11], out[7 * 40], outr[7 * 40];
    int off = 2 * hd;                                    /* head 2 */
    mt_k_gemm_nt(nq, nk, hd, 0.5f, q + off, ld, k + off, ld, 0.0f, sc, nk);
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < nk; j++) {
            double s = 0;
            for (int c = 0; c < hd; c++)
                s += (double)q[i * ld + off + c] * k[j * ld + off + c];
            ref[i * nk + j] = (float)(0.5 * s);
        }
    assert_true(max_abs(sc, ref, (size_t)nq * nk) < 1e-5);
    memset(out, 0, sizeof out);
    mt_k_gemm_nn(nq, hd, nk, sc, nk, v + off, ld, 0.0f, out + off, 40);
    memset(outr, 0, sizeof outr);
    for (int i = 0; i < nq; i++)
        for (int c = 0; c < hd; c++) {
            double s = 0;
            for (int j = 0; j < nk; j++)
                s += (double)sc[i * nk + j] * v[j * ld + off + c];
            outr[i * 40 + off + c] = (float)s;
        }
    assert_true(max_abs(out, outr, sizeof out / sizeof *out) < 1e-5);
    free(q), free(k), free(v);
}

static void test_layernorm(void **state)
{
    (void)state;
    static const int ds[] = {1, 2, 31, 32, 256, 1000};
    for (size_t t = 0; t < sizeof ds / sizeof *ds; t++) {
        int d = ds[t], rows = 5;
        float *x = rand_vec((size_t)rows * d, 3), *h = rand_vec((size_t)rows * d, 2), *g = rand_vec((size_t)d, 1),
              *b = rand_vec((size_t)d, 1), *xr = malloc(sizeof(float) * (size_t)rows * d);
        for (int i = 0; i < rows * d; i++)
            x[i] += 10.0f;                                /* a large mean: cancellation matters */
        memcpy(xr, x, sizeof(float) * (size_t)rows * d);
        /* float rounding of (x - mean) is amplified by 1/std: scale the tolerance with it */
        double rstd_max = 1;
        for (int r = 0; r < rows; r++) {
            double m = 0, v = 0;
            for (int i = 0; i < d; i++)
                m += (double)x[r * d + i] + h[r * d + i];
            m /= d;
            for (int i = 0; i < d; i++)
                v += pow((double)x[r * d + i] + h[r * d + i] - m, 2);
            rstd_max = fmax(rstd_max, 1 / sqrt(v / d + 1e-5));
        }
        mt_k_add_layernorm(x, h, rows, d, g, b);
        mt_ref_add_layernorm(xr, h, rows, d, g, b);
        assert_true(max_abs(x, xr, (size_t)rows * d) < 4e-6 * rstd_max);
        free(x), free(h), free(g), free(b), free(xr);
    }
    /* a constant row normalizes to the bias (variance 0, eps 1e-5) */
    float x[4] = {2, 2, 2, 2}, g[4] = {1, 1, 1, 1}, b[4] = {0.5f, -1, 0, 3};
    mt_k_add_layernorm(x, NULL, 1, 4, g, b);
    for (int i = 0; i < 4; i++)
        assert_float_equal(x[i], b[i], 1e-6);
}

static void test_softmax_masked(void **state)
{
    (void)state;
    for (int n = 1; n <= 40; n += 3) {
        int ld = n + 5;
        float *x = rand_vec((size_t)ld, 20), *r = malloc(sizeof(float) * (size_t)ld);
        memcpy(r, x, sizeof(float) * (size_t)ld);
        mt_k_softmax(x, n, ld);
        mt_ref_softmax(r, n, ld);
        double s = 0;
        for (int i = 0; i < n; i++)
            s += x[i];
        assert_float_equal(s, 1.0, 1e-5);
        for (int i = n; i < ld; i++)
            assert_true(x[i] == 0.0f);                  /* masked keys: exactly 0 */
        assert_true(max_abs(x, r, (size_t)ld) < 1e-6);
        free(x), free(r);
    }
    float big[3] = {1e30f, -1e30f, 1e30f};             /* no overflow */
    mt_k_softmax(big, 3, 3);
    assert_float_equal(big[0], 0.5, 1e-6);
    assert_float_equal(big[1], 0.0, 1e-6);
}

static void test_activations(void **state)
{
    (void)state;
    mt_act acts[] = {MT_ACT_SWISH, MT_ACT_RELU, MT_ACT_GELU};
    for (int a = 0; a < 3; a++) {
        size_t n = 4001;
        float *x = rand_vec(n, 12), *r = malloc(sizeof(float) * n);
        x[0] = 0, x[1] = -100, x[2] = 100, x[3] = -1e-30f;
        memcpy(r, x, sizeof(float) * n);
        mt_k_activation(x, (long)n, acts[a]);
        mt_ref_activation(r, (long)n, acts[a]);
        for (size_t i = 0; i < n; i++)
            assert_true(fabs(x[i] - r[i]) <= 1e-6 * fmax(1, fabs(r[i])));
        free(x), free(r);
    }
    float s[2] = {1, -1};
    mt_k_activation(s, 2, MT_ACT_SWISH);               /* swish(1) = 1 / (1 + e^-1) */
    assert_float_equal(s[0], 0.7310585786, 1e-6);
    assert_float_equal(s[1], -0.2689414214, 1e-6);
}

static void test_log_softmax_skip(void **state)
{
    (void)state;
    int n = 8000, skip = 7999;
    float *lg = rand_vec((size_t)n, 15), *lp = malloc(sizeof(float) * (size_t)n);
    lg[skip] = 1000;                                    /* pad's mass must not count */
    mt_k_log_softmax_skip(lg, n, skip, lp);
    double s = 0;
    for (int v = 0; v < n; v++)
        if (v != skip)
            s += exp(lp[v]);
    assert_float_equal(s, 1.0, 1e-5);
    assert_true(isinf(lp[skip]) && lp[skip] < 0);
    /* logsumexp against a double reference, pad anywhere (vector body and tails) */
    for (int sk = -1; sk < 20; sk++) {
        for (int len = 1; len < 40; len += 7) {
            float *x = lg + 100;
            double m1 = -INFINITY, s1 = 0;
            for (int v = 0; v < len; v++)
                if (v != sk)
                    m1 = fmax(m1, x[v]);
            for (int v = 0; v < len; v++)
                if (v != sk)
                    s1 += exp((double)x[v] - m1);
            if (len == 1 && sk == 0)
                continue;                                  /* nothing left */
            assert_float_equal(mt_k_logsumexp_skip(x, len, sk), m1 + log(s1), 1e-6 * fmax(1, fabs(m1)));
        }
    }
    double m2 = -INFINITY, s2 = 0;
    for (int v = 0; v < n - 1; v++)
        m2 = fmax(m2, lg[v]);
    for (int v = 0; v < n - 1; v++)
        s2 += exp((double)lg[v] - m2);
    assert_float_equal(mt_k_logsumexp_skip(lg, n, skip), m2 + log(s2), 1e-6 * fabs(m2));
    free(lg), free(lp);
}

static void test_half_conversion(void **state)
{
    (void)state;
    assert_true(mt_f16_to_f32(0x3c00) == 1.0f);
    assert_true(mt_f16_to_f32(0xc000) == -2.0f);
    assert_true(mt_f16_to_f32(0x7bff) == 65504.0f);                 /* max half */
    assert_true(mt_f16_to_f32(0x0001) == ldexpf(1, -24));            /* smallest subnormal */
    assert_true(mt_f16_to_f32(0x03ff) == ldexpf(1023, -24));         /* largest subnormal */
    assert_true(mt_f16_to_f32(0x0400) == ldexpf(1, -14));            /* smallest normal */
    assert_true(mt_f16_to_f32(0x3555) == 0.333251953125f);
    assert_true(isinf(mt_f16_to_f32(0x7c00)) && mt_f16_to_f32(0xfc00) < 0);
    assert_true(isnan(mt_f16_to_f32(0x7e00)));
    assert_true(mt_f16_to_f32(0x8000) == 0.0f && signbit(mt_f16_to_f32(0x8000)));
    assert_true(mt_bf16_to_f32(0x3f80) == 1.0f);
    assert_true(mt_bf16_to_f32(0xc0a0) == -5.0f);
    /* every finite half: value = (-1)^s * m * 2^e computed independently */
    for (uint32_t h = 0; h < 0x10000; h++) {
        int e = (h >> 10) & 0x1f, m = h & 0x3ff;
        if (e == 0x1f)
            continue;
        double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
        if (h & 0x8000)
            v = -v;
        assert_true(mt_f16_to_f32((uint16_t)h) == (float)v);
        assert_true(mt_f32_to_f16(mt_f16_to_f32((uint16_t)h)) == h);  /* round trip */
    }
    /* rounding: ties to even, overflow to inf, underflow to zero */
    assert_true(mt_f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3c00);          /* tie, even below */
    assert_true(mt_f32_to_f16(1.0f + 3 * ldexpf(1, -11)) == 0x3c02);      /* tie, even above */
    assert_true(mt_f32_to_f16(65519.0f) == 0x7bff && mt_f32_to_f16(65520.0f) == 0x7c00);
    assert_true(mt_f32_to_f16(ldexpf(1, -25)) == 0x0000 && mt_f32_to_f16(ldexpf(3, -26)) == 0x0001);
    assert_true(mt_f32_to_f16(-ldexpf(1, -30)) == 0x8000 && mt_f32_to_f16(NAN) >= 0x7e00);
#if defined(__F16C__)
    /* against the CPU's own conversion (F16C), on random floats of every magnitude */
    for (int i = 0; i < 1000000; i++) {
        rng = rng * 1664525u + 1013904223u;
        uint32_t bits = rng;
        float f;
        memcpy(&f, &bits, sizeof f);
        if (isnan(f))
            continue;
        assert_true(mt_f32_to_f16(f) == _cvtss_sh(f, 0));
    }
#endif
}

/* mt_k_topk against a plain selection (k passes, each taking the largest
 * not yet taken, the lower index on ties), on rows with ties, -inf, NaN and
 * every length around the vector blocks; and mt_k_log_softmax_shift against
 * the log-softmax then the shift added, bit for bit. */
static int topk_naive(const float *v, int n, int k, float *tv, int *ti, char *taken)
{
    memset(taken, 0, (size_t)n);
    int cnt = 0;
    for (; cnt < k; cnt++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!taken[i] && v[i] == v[i] && (best < 0 || v[i] > v[best]))
                best = i;
        if (best < 0)
            break;
        taken[best] = 1;
        tv[cnt] = v[best];
        ti[cnt] = best;
    }
    return cnt;
}

static void test_topk(void **state)
{
    (void)state;
    enum { N = 700 };
    float v[N], tv[16], rv[16];
    int ti[16], ri[16];
    char taken[N];
    long checked = 0;
    for (int trial = 0; trial < 400; trial++) {
        int n = 1 + trial % N, k = 1 + trial % 9, kind = trial % 4;
        for (int i = 0; i < n; i++) {
            float x = frand();
            if (kind == 1)
                x = (float)((int)(x * 4));                 /* many ties */
            if (kind == 2 && i % 13 == 5)
                x = NAN;
            if (kind == 3)
                x = i % 3 ? -INFINITY : x;
            v[i] = x;
        }
        if (trial % 5 == 0)
            v[n - 1] = 3.0f;                               /* the best in the tail */
        int c1 = mt_k_topk(v, n, k, tv, ti), c2 = topk_naive(v, n, k, rv, ri, taken);
        assert_int_equal(c1, c2);
        for (int j = 0; j < c1; j++) {
            assert_int_equal(ti[j], ri[j]);
            assert_memory_equal(&tv[j], &rv[j], sizeof(float));
        }
        checked += c1;
    }
    float lg[300], a[300], b[300];
    for (int i = 0; i < 300; i++)
        lg[i] = 8 * frand();
    double lse = mt_k_logsumexp_skip(lg, 300, 7);
    mt_k_log_softmax_skip(lg, 300, 7, a);
    for (int i = 0; i < 300; i++)
        a[i] = a[i] + -2.75f;
    mt_k_log_softmax_shift(lg, 300, 7, lse, -2.75f, b);
    assert_memory_equal(a, b, sizeof a);
    print_message("  topk: %ld selections equal to the plain selection's\n", checked);
}

/* mt_k_argmax_skip against the plain scan keeping the first of equal maxima,
 * on rows with ties, -inf (all of a row too), the skip anywhere (a maximum
 * there included), and every length around the vector blocks. */
static int argmax_naive(const float *v, int n, int skip)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (i != skip && (best < 0 || v[i] > v[best]))
            best = i;
    return best;
}

static void test_argmax_skip(void **state)
{
    (void)state;
    enum { N = 300 };
    float v[N];
    long checked = 0;
    for (int trial = 0; trial < 3000; trial++) {
        int n = 1 + trial % N, kind = trial % 5;
        int skip = trial % 7 == 0 ? -1 : trial % 7 == 1 ? n - 1 : (trial * 37) % (n + 2) - 1;
        for (int i = 0; i < n; i++) {
            float x = frand();
            if (kind == 1)
                x = (float)((int)(x * 3));                 /* many ties */
            if (kind == 2)
                x = i % 5 ? -INFINITY : x;
            if (kind == 3)
                x = -INFINITY;                             /* every id banned */
            v[i] = x;
        }
        if (kind == 4 && skip >= 0)
            v[skip] = 100.0f;                              /* the skipped id holds the maximum */
        assert_int_equal(mt_k_argmax_skip(v, n, skip), argmax_naive(v, n, skip));
        checked++;
    }
    print_message("  argmax_skip: %ld rows equal to the plain scan's\n", checked);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_shapes),  cmocka_unit_test(test_linear_row_independent),
        cmocka_unit_test(test_linear_kblock),  cmocka_unit_test(test_block_k),
        cmocka_unit_test(test_gemm_strided),   cmocka_unit_test(test_linear_split_equals_serial),
        cmocka_unit_test(test_layernorm),      cmocka_unit_test(test_softmax_masked),
        cmocka_unit_test(test_activations),    cmocka_unit_test(test_log_softmax_skip),
        cmocka_unit_test(test_half_conversion), cmocka_unit_test(test_linear_packed), cmocka_unit_test(test_linear_paths),
        cmocka_unit_test(test_dots),      cmocka_unit_test(test_attend_row), cmocka_unit_test(test_kv_conversions),
        cmocka_unit_test(test_linear_q8_reference), cmocka_unit_test(test_linear_q8_properties),
        cmocka_unit_test(test_topk),           cmocka_unit_test(test_argmax_skip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
