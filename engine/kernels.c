/* kernels.c: BLAS-backed kernels and their naive references (kernels.h). */
#include "kernels.h"
#include "parallel.h"
#include "safetensors.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* e^x: Cody-Waite reduction + the Cephes expf polynomial (about 1 ulp), the
 * argument clamped to [-87.3, 88.3].  exp1 (scalar) and vexp (vectors) do the
 * same float operations in the same order, so their results are identical:
 * an activation gives the same bits in the product's vector epilogue and in
 * a scalar tail. */
#define EXP_LO -87.3f
#define EXP_HI 88.3f
#define EXP_LOG2E 1.44269504088896341f
#define EXP_C1 0.693359375f
#define EXP_C2 -2.12194440e-4f
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f

/* With an FMA instruction, the fused form (the vectors use it); in a portable
 * build fmaf is a libm call, so plain multiply-add there. */
#if defined(__FMA__)
#define FMA1(a, b, c) fmaf(a, b, c)
#else
#define FMA1(a, b, c) ((a) * (b) + (c))
#endif

static inline float exp1(float x)
{
    x = fminf(fmaxf(x, EXP_LO), EXP_HI);
    float n = nearbyintf(x * EXP_LOG2E);
    float r = FMA1(-n, EXP_C1, x);
    r = FMA1(-n, EXP_C2, r);
    float p = EXP_P0;
    p = FMA1(p, r, EXP_P1);
    p = FMA1(p, r, EXP_P2);
    p = FMA1(p, r, EXP_P3);
    p = FMA1(p, r, EXP_P4);
    p = FMA1(p, r, EXP_P5);
    p = FMA1(p * r, r, r + 1.0f);
    uint32_t bits;
    memcpy(&bits, &p, sizeof bits);
    bits += (uint32_t)(int32_t)n << 23;
    memcpy(&p, &bits, sizeof p);
    return p;
}

/* ---- vectors: AVX-512, else AVX2 + FMA + F16C, else scalar ----------------------------- */
#if defined(__AVX512F__)
#define VW 16
typedef __m512 vf;
static inline vf vzero(void) { return _mm512_setzero_ps(); }
static inline vf vload(const float *p) { return _mm512_loadu_ps(p); }
static inline vf vload16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline vf vset1(float v) { return _mm512_set1_ps(v); }
static inline void vstore(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vmax(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline float vsum(vf v) { return _mm512_reduce_add_ps(v); }
static inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vmin(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf vdiv(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vfnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
static inline vf vround(vf x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/* p * 2^n for integral n (the exponent field added to) */
static inline vf vldexp(vf p, vf n)
{
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23)));
}
/* a float vector summed into double lanes */
typedef struct { __m512d lo, hi; } vd;
static inline vd vd_zero(void) { return (vd){_mm512_setzero_pd(), _mm512_setzero_pd()}; }
static inline vd vd_add(vd s, vf e)
{
    return (vd){_mm512_add_pd(s.lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e))),
                _mm512_add_pd(s.hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)))};
}
static inline double vd_sum(vd s) { return _mm512_reduce_add_pd(_mm512_add_pd(s.lo, s.hi)); }
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define VW 8
typedef __m256 vf;
static inline vf vzero(void) { return _mm256_setzero_ps(); }
static inline vf vload(const float *p) { return _mm256_loadu_ps(p); }
static inline vf vload16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
static inline vf vset1(float v) { return _mm256_set1_ps(v); }
static inline void vstore(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vmax(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline float vsum(vf v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}
static inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vmin(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vdiv(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vfnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
static inline vf vround(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf vldexp(vf p, vf n)
{
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23)));
}
typedef struct { __m256d lo, hi; } vd;
static inline vd vd_zero(void) { return (vd){_mm256_setzero_pd(), _mm256_setzero_pd()}; }
static inline vd vd_add(vd s, vf e)
{
    return (vd){_mm256_add_pd(s.lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e))),
                _mm256_add_pd(s.hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)))};
}
static inline double vd_sum(vd s)
{
    double t[4];
    _mm256_storeu_pd(t, _mm256_add_pd(s.lo, s.hi));
    return (t[0] + t[1]) + (t[2] + t[3]);
}
#else
#define VW 0
#endif

#if VW
/* exp1 in vectors: the same operations, lane by lane */
static inline vf vexp(vf x)
{
    x = vmin(vmax(x, vset1(EXP_LO)), vset1(EXP_HI));
    vf n = vround(vmul(x, vset1(EXP_LOG2E)));
    vf r = vfnma(n, vset1(EXP_C1), x);
    r = vfnma(n, vset1(EXP_C2), r);
    vf p = vset1(EXP_P0);
    p = vfma(p, r, vset1(EXP_P1));
    p = vfma(p, r, vset1(EXP_P2));
    p = vfma(p, r, vset1(EXP_P3));
    p = vfma(p, r, vset1(EXP_P4));
    p = vfma(p, r, vset1(EXP_P5));
    p = vfma(vmul(p, r), r, vadd(r, vset1(1.0f)));
    return vldexp(p, n);
}

static inline vf vswish(vf v) { return vdiv(v, vadd(vset1(1.0f), vexp(vsub(vzero(), v)))); }
static inline vf vrelu(vf v) { return vmax(v, vzero()); }
#endif

/* The activation applied to one output as it is written (MT_ACT_NONE: identity):
 * fused here, it runs in whichever thread computed the output. */
static inline float act1(float v, mt_act act)
{
    switch (act) {
    case MT_ACT_SWISH: return v / (1.0f + exp1(-v));
    case MT_ACT_RELU:  return v > 0.0f ? v : 0.0f;
    case MT_ACT_GELU:  return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    default:           return v;
    }
}

#define CHUNK_MIN_WORK (32 * 1024)   /* multiply-adds: a chunk is worth a few microseconds */

/* ---- packed weights: every Linear ------------------------------------------------------
 * Weights are repacked once at load (model.c) into panels of MT_PANEL outputs,
 * each panel [in][MT_PANEL] (k-major), F32 or F16.  The product then needs no
 * horizontal sums: a block of NR rows x NP panels keeps NR*NP vector
 * accumulators, and each k adds x[r][k] (broadcast) times one panel row.
 * Panels stream sequentially from memory (what the hardware prefetcher
 * wants at batch 1) and stay in cache while every row block passes over
 * them (what a batch wants).
 *
 * y[r][o] = (FMA chain over k = 0..in-1, from 0) + b[o], then the activation:
 * one fixed order whatever n, the block or the thread, so a row's result is
 * bit-identical in any batch. */
#if VW == 16
#ifndef PK_NR
#define PK_NR 8           /* rows per block: 8 x 3 accumulators + 3 panel vectors */
#define PK_NP 3           /* panels per block */
#endif
#else
#define PK_NR 4           /* AVX2 (16 registers): 4 x 2 accumulators + 2; or scalar */
#define PK_NP 1
#endif
#define PV (MT_PANEL / (VW ? VW : MT_PANEL))   /* vectors per panel row */

size_t mt_k_packed_bytes(int in, int out, int f16)
{
    return (size_t)((out + MT_PANEL - 1) / MT_PANEL) * (size_t)in * MT_PANEL * (f16 ? 2 : 4);
}

void mt_k_pack(const float *W, int in, int out, int f16, void *dst)
{
    int np = (out + MT_PANEL - 1) / MT_PANEL;
    for (int p = 0; p < np; p++)
        for (int k = 0; k < in; k++)
            for (int j = 0; j < MT_PANEL; j++) {
                int o = p * MT_PANEL + j;
                float v = o < out ? W[(long)o * in + k] : 0.0f;          /* the last panel is zero-padded */
                long at = ((long)p * in + k) * MT_PANEL + j;
                if (f16)
                    ((uint16_t *)dst)[at] = mt_f32_to_f16(v);
                else
                    ((float *)dst)[at] = v;
            }
}

#if VW
/* rows [0, NR) of x times panels [p0, p0 + NP): acc[r][j * PV + v] */
static inline __attribute__((always_inline)) void pk_block(const float *x, int in, const void *Wp, int p0,
                                                           vf acc[PK_NR][PK_NP * PV], const int NR, const int NP,
                                                           const int F16)
{
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 6
        for (int j = 0; j < NP * PV; j++)
            acc[r][j] = vzero();
    long pstride = (long)in * MT_PANEL;
    for (int k = 0; k < in; k++) {
        vf w[PK_NP * PV];
#pragma GCC unroll 3
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 2
            for (int v = 0; v < PV; v++) {
                long at = (p0 + j) * pstride + (long)k * MT_PANEL + v * VW;
                w[j * PV + v] = F16 ? vload16((const uint16_t *)Wp + at) : vload((const float *)Wp + at);
            }
#pragma GCC unroll 8
        for (int r = 0; r < NR; r++) {
            vf xb = vset1(x[(long)r * in + k]);
#pragma GCC unroll 6
            for (int j = 0; j < NP * PV; j++)
                acc[r][j] = vfma(xb, w[j], acc[r][j]);
        }
    }
}
#endif

/* rows [r0, r0 + nr) x panels [p0, p0 + np) into y (only outputs < out) */
static inline __attribute__((always_inline)) void pk_tile(const float *x, const mt_packed *W, const float *b,
                                                          float *y, int r0, int nr, int p0, int np, mt_act act,
                                                          const int F16)
{
    int in = W->in, out = W->out;
    const float *xr = x + (long)r0 * in;
    float lane[PK_NR][PK_NP * MT_PANEL];
#if VW
    vf acc[PK_NR][PK_NP * PV];
    /* every (rows, panels) shape up to the block, each compiled with constant trip counts */
#define CASE(NR, NP)                                                                   \
    case (NR) * 8 + (NP):                                                              \
        if ((NR) <= PK_NR && (NP) <= PK_NP)                                            \
            pk_block(xr, in, W->data, p0, acc, (NR) <= PK_NR ? (NR) : 1, (NP) <= PK_NP ? (NP) : 1, F16); \
        break
#define CASES(NR) CASE(NR, 1); CASE(NR, 2); CASE(NR, 3); CASE(NR, 4)
    switch (nr * 8 + np) {
    CASES(1); CASES(2); CASES(3); CASES(4); CASES(5); CASES(6); CASES(7); CASES(8);
    }
#undef CASES
#undef CASE
    int o0v = p0 * MT_PANEL;
    if (act != MT_ACT_GELU && o0v + np * MT_PANEL <= out) {
        /* whole panels: + b and the activation in vectors, straight to y */
        for (int r = 0; r < nr; r++) {
            float *yr = y + (long)(r0 + r) * out + o0v;
            for (int j = 0; j < np * PV; j++) {
                vf v = b ? vadd(acc[r][j], vload(b + o0v + j * VW)) : acc[r][j];
                vstore(yr + j * VW, act == MT_ACT_SWISH ? vswish(v) : act == MT_ACT_RELU ? vrelu(v) : v);
            }
        }
        return;
    }
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np * PV; j++)
            vstore(lane[r] + j * VW, acc[r][j]);
#else
    /* Portable build (no FMA instruction: fmaf would be a libm call): a panel
     * row at a time into 16 sums the compiler keeps in SSE registers; one
     * fixed order per output, as in the vector paths. */
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np; j++) {
            float t[MT_PANEL] = {0};
            const float *xk = xr + (long)r * in;
            long at = (long)(p0 + j) * in * MT_PANEL;
            for (int k = 0; k < in; k++, at += MT_PANEL) {
                float xv = xk[k];
                if (F16)
                    for (int u = 0; u < MT_PANEL; u++)
                        t[u] += xv * mt_f16_to_f32(((const uint16_t *)W->data)[at + u]);
                else
                    for (int u = 0; u < MT_PANEL; u++)
                        t[u] += xv * ((const float *)W->data)[at + u];
            }
            memcpy(lane[r] + j * MT_PANEL, t, sizeof t);
        }
#endif
    int o0 = p0 * MT_PANEL, no = np * MT_PANEL < out - o0 ? np * MT_PANEL : out - o0;
    for (int r = 0; r < nr; r++) {
        float *yr = y + (long)(r0 + r) * out + o0;
        for (int j = 0; j < no; j++)
            yr[j] = act1(b ? lane[r][j] + b[o0 + j] : lane[r][j], act);
    }
}

/* panels [p_lo, p_hi) of all n rows: one panel block, every row block over it.
 * A portable build (no vector ISA at compile time) still gets vectors: GCC
 * compiles this loop nest again for AVX-512 and AVX2 and picks one at load
 * (function multi-versioning); the portable path's 16-wide sums vectorize. */
#if !VW && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MULTIVERSION
#endif
MULTIVERSION
static void pk_range(const float *x, int n, const mt_packed *W, const float *b, float *y, int p_lo, int p_hi,
                     mt_act act)
{
    for (int p = p_lo; p < p_hi; p += PK_NP) {
        int np = p_hi - p < PK_NP ? p_hi - p : PK_NP;
        for (int r = 0; r < n; r += PK_NR) {
            int nr = n - r < PK_NR ? n - r : PK_NR;
            if (W->f16)
                pk_tile(x, W, b, y, r, nr, p, np, act, 1);
            else
                pk_tile(x, W, b, y, r, nr, p, np, act, 0);
        }
    }
}

typedef struct {
    const float *x, *b;
    const mt_packed *W;
    float *y;
    int n, per;               /* panels per chunk, a multiple of PK_NP */
    mt_act act;
} pk_job;

static void pk_chunk(void *ctx, int c)
{
    const pk_job *j = ctx;
    int np = (j->W->out + MT_PANEL - 1) / MT_PANEL, lo = c * j->per, hi = lo + j->per < np ? lo + j->per : np;
    pk_range(j->x, j->n, j->W, j->b, j->y, lo, hi, j->act);
}

void mt_k_linear_packed(const float *x, int n, const mt_packed *W, const float *b, float *y, mt_act act)
{
    int threads = mt_par_threads(), np = (W->out + MT_PANEL - 1) / MT_PANEL;
    long work = (long)n * W->in * W->out;
    int chunks = threads < 2 ? 1 : (int)(work / CHUNK_MIN_WORK);
    if (chunks > 4 * threads)
        chunks = 4 * threads;                 /* a few per thread: balance without overhead */
    if (chunks <= 1) {
        pk_range(x, n, W, b, y, 0, np, act);
        return;
    }
    int per = (np + chunks - 1) / chunks;
    per = (per + PK_NP - 1) / PK_NP * PK_NP;
    pk_job j = {.x = x, .b = b, .W = W, .y = y, .n = n, .per = per, .act = act};
    mt_par_for((np + per - 1) / per, pk_chunk, &j);
}

#if VW == 16
/* four vectors' horizontal sums at once: [sum a0, sum a1, sum a2, sum a3] */
static inline __m128 sum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    __m256 b0 = _mm256_add_ps(_mm512_castps512_ps256(a0), _mm512_extractf32x8_ps(a0, 1));
    __m256 b1 = _mm256_add_ps(_mm512_castps512_ps256(a1), _mm512_extractf32x8_ps(a1, 1));
    __m256 b2 = _mm256_add_ps(_mm512_castps512_ps256(a2), _mm512_extractf32x8_ps(a2, 1));
    __m256 b3 = _mm256_add_ps(_mm512_castps512_ps256(a3), _mm512_extractf32x8_ps(a3, 1));
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(b0, b1), _mm256_hadd_ps(b2, b3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}
#endif

/* sc[j] = alpha * (K[j] . q) over len features, j < nk (K rows ld apart): the
 * scores of one query and one head, for heads mt_k_attend_row does not take
 * four at a time. */
void mt_k_dots(int nk, int len, float alpha, const float *K, int ld, const float *q, float *sc)
{
    for (int j = 0; j < nk; j++) {
        const float *kj = K + (long)j * ld;
        float t = 0.0f;
        int i = 0;
#if VW
        vf a = vzero();
        for (; i + VW <= len; i += VW)
            a = vfma(vload(kj + i), vload(q + i), a);
        t = vsum(a);
#endif
        for (; i < len; i++)
            t += kj[i] * q[i];
        sc[j] = alpha * t;
    }
}

/* One query over nk keys for every head at once: a decode step's attention.
 * q [d], keys K[j] and values V[j] rows ld apart (d = heads * hd), sc
 * [heads][nk] scratch (the weights on return), out [d].  Keys are visited in
 * order and each key's whole row is read at once: a cache row is contiguous,
 * where a head-by-head pass strides through every row once per head (the
 * caches of a batch live in L3; that pass ran at ~12 GB/s).  Four heads of a
 * key share one horizontal reduction (AVX-512).  The sums are in a fixed
 * order per (head, key) and per output, whatever the batch. */
#if VW == 16
/* The common shape (hd = 64, d = 256: the default model): q and the output
 * stay in registers, every loop has constant bounds. */
static void attend_row_256(const float *q, const float *K, const float *V, int ld, int nk, float scale, float *sc,
                           float *out)
{
    __m512 qv[16];
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++)
        qv[c] = _mm512_loadu_ps(q + 16 * c);
    for (int j = 0; j < nk; j++) {
        const float *kj = K + (long)j * ld;
        __m512 a[4];
#pragma GCC unroll 4
        for (int h = 0; h < 4; h++) {
            __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(kj + 64 * h), qv[4 * h]);
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(kj + 64 * h + 16), qv[4 * h + 1], acc);
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(kj + 64 * h + 32), qv[4 * h + 2], acc);
            a[h] = _mm512_fmadd_ps(_mm512_loadu_ps(kj + 64 * h + 48), qv[4 * h + 3], acc);
        }
        float t[4];
        _mm_storeu_ps(t, _mm_mul_ps(_mm_set1_ps(scale), sum4(a[0], a[1], a[2], a[3])));
        for (int h = 0; h < 4; h++)
            sc[(long)h * nk + j] = t[h];
    }
    for (int h = 0; h < 4; h++)
        mt_k_softmax(sc + (long)h * nk, nk, nk);
    __m512 o[16];
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++)
        o[c] = _mm512_setzero_ps();
    for (int j = 0; j < nk; j++) {
        const float *vj = V + (long)j * ld;
#pragma GCC unroll 4
        for (int h = 0; h < 4; h++) {
            __m512 w = _mm512_set1_ps(sc[(long)h * nk + j]);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                o[4 * h + c] = _mm512_fmadd_ps(w, _mm512_loadu_ps(vj + 64 * h + 16 * c), o[4 * h + c]);
        }
    }
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++)
        _mm512_storeu_ps(out + 16 * c, o[c]);
}
#endif

MULTIVERSION
void mt_k_attend_row(const float *q, const float *K, const float *V, int ld, int nk, int heads, int hd, float scale,
                     float *sc, float *out)
{
    int d = heads * hd;
#if VW == 16
    if (heads == 4 && hd == 64) {
        attend_row_256(q, K, V, ld, nk, scale, sc, out);
        return;
    }
#endif
    for (int j = 0; j < nk; j++) {
        const float *kj = K + (long)j * ld;
        int h = 0;
#if VW == 16
        if (hd % 16 == 0)
            for (; h + 4 <= heads; h += 4) {
                __m512 a[4];
                for (int u = 0; u < 4; u++) {
                    const float *kh = kj + (h + u) * hd, *qh = q + (h + u) * hd;
                    __m512 acc = _mm512_setzero_ps();
                    for (int i = 0; i < hd; i += 16)
                        acc = _mm512_fmadd_ps(_mm512_loadu_ps(kh + i), _mm512_loadu_ps(qh + i), acc);
                    a[u] = acc;
                }
                float t[4];
                _mm_storeu_ps(t, _mm_mul_ps(_mm_set1_ps(scale), sum4(a[0], a[1], a[2], a[3])));
                for (int u = 0; u < 4; u++)
                    sc[(long)(h + u) * nk + j] = t[u];
            }
#endif
        for (; h < heads; h++)
            mt_k_dots(1, hd, scale, kj + h * hd, ld, q + h * hd, sc + (long)h * nk + j);
    }
    for (int h = 0; h < heads; h++)
        mt_k_softmax(sc + (long)h * nk, nk, nk);
    memset(out, 0, sizeof(float) * (size_t)d);
    for (int j = 0; j < nk; j++) {
        const float *vj = V + (long)j * ld;
        for (int h = 0; h < heads; h++) {
            float w = sc[(long)h * nk + j], *oh = out + h * hd;
            const float *vh = vj + h * hd;
            int i = 0;
#if VW
            vf wv = vset1(w);
            for (; i + VW <= hd; i += VW)
                vstore(oh + i, vfma(wv, vload(vh + i), vload(oh + i)));
#endif
            for (; i < hd; i++)
                oh[i] = FMA1(w, vh[i], oh[i]);
        }
    }
}

/* ---- attention over whole sequences (OpenBLAS, one thread per caller) ------------- */
void mt_k_gemm_nt(int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

void mt_k_gemm_nn(int m, int n, int k, const float *A, int lda, const float *B, int ldb, float beta,
                  float *C, int ldc)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

/* ---- normalization ------------------------------------------------------------- */
/* Mean and biased variance in double: the float rounding of PyTorch's moments
 * is not reproducible anyway, so be as exact as is cheap. */
/* sum of x[0..n) and of (x[i] - m)^2, accumulated in double */
static double sum_d(const float *x, int n)
{
    double s = 0;
    int i = 0;
#if VW == 16
    __m512d a = _mm512_setzero_pd(), c = _mm512_setzero_pd();
    for (; i + 16 <= n; i += 16) {
        a = _mm512_add_pd(a, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
        c = _mm512_add_pd(c, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)));
    }
    s = _mm512_reduce_add_pd(_mm512_add_pd(a, c));
#endif
    for (; i < n; i++)
        s += x[i];
    return s;
}

static double sqdev_d(const float *x, int n, double m)
{
    double s = 0;
    int i = 0;
#if VW == 16
    __m512d a = _mm512_setzero_pd(), mv = _mm512_set1_pd(m);
    for (; i + 8 <= n; i += 8) {
        __m512d c = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), mv);
        a = _mm512_fmadd_pd(c, c, a);
    }
    s = _mm512_reduce_add_pd(a);
#endif
    for (; i < n; i++) {
        double c = x[i] - m;
        s += c * c;
    }
    return s;
}

static void layernorm_rows(float *x, const float *h, int rows, int d, const float *g, const float *b)
{
    for (int r = 0; r < rows; r++) {
        float *xr = x + (long)r * d;
        if (h) {
            const float *hr = h + (long)r * d;
            for (int i = 0; i < d; i++)
                xr[i] += hr[i];
        }
        double mean = sum_d(xr, d) / d;
        float rstd = (float)(1.0 / sqrt(sqdev_d(xr, d, mean) / d + 1e-5)), m = (float)mean;
        for (int i = 0; i < d; i++)                  /* vectorized by the compiler (no reduction) */
            xr[i] = (xr[i] - m) * rstd * g[i] + b[i];
    }
}

typedef struct {
    float *x;
    const float *h, *g, *b;
    int rows, d, per;
} ln_job;

static void ln_chunk(void *ctx, int c)
{
    const ln_job *j = ctx;
    int r0 = c * j->per, n = r0 + j->per < j->rows ? j->per : j->rows - r0;
    layernorm_rows(j->x + (long)r0 * j->d, j->h ? j->h + (long)r0 * j->d : NULL, n, j->d, j->g, j->b);
}

/* Rows are independent: a batch or a source of many rows splits them over the pool. */
void mt_k_add_layernorm(float *x, const float *h, int rows, int d, const float *g, const float *b)
{
    int chunks = (int)((long)rows * d / 2048);
    if (chunks > 2 * mt_par_threads())
        chunks = 2 * mt_par_threads();
    if (chunks < 2) {
        layernorm_rows(x, h, rows, d, g, b);
        return;
    }
    ln_job j = {.x = x, .h = h, .g = g, .b = b, .rows = rows, .d = d, .per = (rows + chunks - 1) / chunks};
    mt_par_for((rows + j.per - 1) / j.per, ln_chunk, &j);
}

void mt_k_softmax(float *x, int n, int ld)
{
    float mx = x[0];
    int i = 0;
#if VW
    vf vm = vset1(mx);
    for (; i + VW <= n; i += VW)
        vm = vmax(vm, vload(x + i));
    float t[VW];
    vstore(t, vm);
    for (int k = 0; k < VW; k++)
        mx = t[k] > mx ? t[k] : mx;
#endif
    for (; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    float s = 0;
    i = 0;
#if VW
    vf vs = vzero(), vmx = vset1(mx);
    for (; i + VW <= n; i += VW) {
        vf e = vexp(vsub(vload(x + i), vmx));
        vstore(x + i, e);
        vs = vadd(vs, e);
    }
    s = vsum(vs);
#endif
    for (; i < n; i++) {
        x[i] = exp1(x[i] - mx);                     /* the same function as the vectors */
        s += x[i];
    }
    float inv = 1.0f / s;
    for (i = 0; i < n; i++)
        x[i] *= inv;
    for (i = n; i < ld; i++)
        x[i] = 0.0f;
}

void mt_k_activation(float *x, long n, mt_act act)
{
    switch (act) {
    case MT_ACT_SWISH:
        for (long i = 0; i < n; i++)
            x[i] = act1(x[i], MT_ACT_SWISH);
        break;
    case MT_ACT_RELU:
        for (long i = 0; i < n; i++)
            x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case MT_ACT_GELU:
        for (long i = 0; i < n; i++)
            x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
        break;
    case MT_ACT_NONE:
        break;
    }
}

/* max and sum of exp(x - mx) over x[0..n): AVX2 when available.  A beam
 * step normalizes beams x vocab logits (32k for beam 4), so this is hot. */
/* max and sum of e^(x - mx) over x[0..n): the vocabulary's log-sum-exp, once
 * per row and step (greedy scores, beam log-probs).  Sums in double. */
static float range_max(const float *x, int n, float mx)
{
    int i = 0;
#if VW
    vf m = vset1(mx);
    for (; i + VW <= n; i += VW)
        m = vmax(m, vload(x + i));
    float t[VW];
    vstore(t, m);
    for (int k = 0; k < VW; k++)
        mx = t[k] > mx ? t[k] : mx;
#endif
    for (; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    return mx;
}

static double range_sumexp(const float *x, int n, float mx)
{
    double s = 0;
    int i = 0;
#if VW
    vd acc = vd_zero();
    vf vm = vset1(mx);
    for (; i + VW <= n; i += VW)
        acc = vd_add(acc, vexp(vsub(vload(x + i), vm)));
    s = vd_sum(acc);
#endif
    for (; i < n; i++)
        s += exp1(x[i] - mx);
    return s;
}

double mt_k_logsumexp_skip(const float *logits, int n, int skip)
{
    int a = skip >= 0 && skip < n ? skip : n;          /* [0, a) and (a, n) */
    int b = a < n ? a + 1 : n;
    float mx = range_max(logits + b, n - b, range_max(logits, a, -INFINITY));
    double s = range_sumexp(logits, a, mx) + range_sumexp(logits + b, n - b, mx);
    return mx + log(s);
}

void mt_k_log_softmax_skip(const float *logits, int n, int skip, float *lp)
{
    double lse = mt_k_logsumexp_skip(logits, n, skip);
    for (int v = 0; v < n; v++)
        lp[v] = (float)((double)logits[v] - lse);
    if (skip >= 0 && skip < n)
        lp[skip] = -INFINITY;
}

/* ---- naive references ---------------------------------------------------------- */
void mt_ref_linear(const float *x, int n, int in, const float *W, const float *b, int out, float *y)
{
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++) {
            double s = b ? b[o] : 0.0;
            for (int i = 0; i < in; i++)
                s += (double)W[(long)o * in + i] * x[(long)r * in + i];
            y[(long)r * out + o] = (float)s;
        }
}

void mt_ref_add_layernorm(float *x, const float *h, int rows, int d, const float *g, const float *b)
{
    for (int r = 0; r < rows; r++) {
        float *xr = x + (long)r * d;
        double mean = 0, var = 0;
        for (int i = 0; i < d; i++) {
            if (h)
                xr[i] += h[(long)r * d + i];
            mean += xr[i];
        }
        mean /= d;
        for (int i = 0; i < d; i++)
            var += (xr[i] - mean) * (xr[i] - mean);
        var /= d;
        for (int i = 0; i < d; i++)
            xr[i] = (float)((xr[i] - mean) / sqrt(var + 1e-5) * g[i] + b[i]);
    }
}

void mt_ref_softmax(float *x, int n, int ld)
{
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++)
        s += exp(x[i] - mx);
    for (int i = 0; i < n; i++)
        x[i] = (float)(exp(x[i] - mx) / s);
    for (int i = n; i < ld; i++)
        x[i] = 0.0f;
}

void mt_ref_activation(float *x, long n, mt_act act)
{
    for (long i = 0; i < n; i++) {
        double v = x[i];
        if (act == MT_ACT_NONE)
            continue;
        if (act == MT_ACT_SWISH)
            v = v / (1.0 + exp(-v));
        else if (act == MT_ACT_RELU)
            v = v > 0 ? v : 0;
        else
            v = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
        x[i] = (float)v;
    }
}
