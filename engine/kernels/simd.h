/* simd.h: the vector shim of the kernel files (linear.c, attn_kernels.c,
 * norm.c): the `vf` primitives, e^x in scalar and vectors, the fused
 * activations.  A header of `static inline` functions, not a .c file, because
 * every primitive must inline into the loops that use it (a call per vector
 * would cost more than the instruction); nothing here has external linkage.
 *
 * Width, chosen at compile time from the target (-march): AVX-512F -> VW 16
 * (__m512); else AVX2 + FMA + F16C -> VW 8 (__m256); else VW 0, no vector
 * type, and the callers take their scalar paths (a portable build, where
 * MULTIVERSION functions are compiled again for AVX-512 and AVX2 by GCC).
 *
 * Only the kernel .c files include it; kernels.h is their public header. */
#ifndef MT_SIMD_H
#define MT_SIMD_H

#include "kernels.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <stdint.h>
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
static inline int vany_gt(vf a, float t) { return _mm512_cmp_ps_mask(a, _mm512_set1_ps(t), _CMP_GT_OQ) != 0; }
static inline int vany_ge(vf a, float t) { return _mm512_cmp_ps_mask(a, _mm512_set1_ps(t), _CMP_GE_OQ) != 0; }
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
static inline int vany_gt(vf a, float t) { return _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(t), _CMP_GT_OQ)) != 0; }
static inline int vany_ge(vf a, float t) { return _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(t), _CMP_GE_OQ)) != 0; }
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

/* A function marked MULTIVERSION: in a portable build (no vector ISA at
 * compile time) GCC compiles it again for AVX-512 and AVX2 and picks one at
 * load (function multi-versioning); its scalar loops vectorize in each clone. */
#if !VW && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MULTIVERSION
#endif

#endif
