/* attn_kernels.c: the products of attention (kernels.h), used by mha.c:
 * a decode step's attention for one query over its cached keys and values,
 * every head in one pass (mt_k_attend_row, with a register path for the
 * default model's 4 heads x 64), the per-head score dot products (mt_k_dots),
 * and the OpenBLAS sgemm wrappers for the attention of whole sequences
 * (mt_k_gemm_nt / mt_k_gemm_nn). */
#include "kernels.h"
#include "simd.h"
#include "formats/tensors.h"

#include <cblas.h>
#include <string.h>


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
 * q [d], keys K[j] and values V[j] rows ld elements apart (d = heads * hd),
 * held as F32 or as F16 (the session's kv_f16: half the bytes a step reads,
 * widened here as they are loaded), sc [heads][nk] scratch (the weights on
 * return), out [d].  Keys are visited in order and each key's whole row is
 * read at once: a cache row is contiguous, where a head-by-head pass strides
 * through every row once per head (the caches of a batch live in L3; that
 * pass ran at ~12 GB/s).  The sums are in a fixed order per (head, key) and
 * per output, whatever the batch. */
#if VW == 16
/* 16 cached elements at p[i] as floats */
static inline __attribute__((always_inline)) __m512 kv_load(const void *p, long i, const int F16)
{
    return F16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)))
               : _mm512_loadu_ps((const float *)p + i);
}

/* hd = 64 and heads a multiple of 4 (the default model: 4 heads; OPUS-MT base
 * 8, big 16): each group of 4 heads is 256 columns, 16 registers, so q and the
 * group's output stay in registers and every loop has constant bounds.  Four
 * heads of a key share one horizontal reduction. */
static inline __attribute__((always_inline)) void attend_row_hd64(const float *q, const void *K, const void *V,
                                                                  int ld, int nk, int heads, float scale,
                                                                  float *sc, float *out, const int F16)
{
    for (int g = 0; g < heads / 4; g++) {
        const float *qg = q + 256 * g;
        float *sg = sc + (long)4 * g * nk;
        __m512 qv[16];
#pragma GCC unroll 16
        for (int c = 0; c < 16; c++)
            qv[c] = _mm512_loadu_ps(qg + 16 * c);
        for (int j = 0; j < nk; j++) {
            long kj = (long)j * ld + 256 * g;
            __m512 a[4];
#pragma GCC unroll 4
            for (int h = 0; h < 4; h++) {
                __m512 acc = _mm512_mul_ps(kv_load(K, kj + 64 * h, F16), qv[4 * h]);
                acc = _mm512_fmadd_ps(kv_load(K, kj + 64 * h + 16, F16), qv[4 * h + 1], acc);
                acc = _mm512_fmadd_ps(kv_load(K, kj + 64 * h + 32, F16), qv[4 * h + 2], acc);
                a[h] = _mm512_fmadd_ps(kv_load(K, kj + 64 * h + 48, F16), qv[4 * h + 3], acc);
            }
            float t[4];
            _mm_storeu_ps(t, _mm_mul_ps(_mm_set1_ps(scale), sum4(a[0], a[1], a[2], a[3])));
            for (int h = 0; h < 4; h++)
                sg[(long)h * nk + j] = t[h];
        }
    }
    for (int h = 0; h < heads; h++)
        mt_k_softmax(sc + (long)h * nk, nk, nk);
    for (int g = 0; g < heads / 4; g++) {
        const float *sg = sc + (long)4 * g * nk;
        __m512 o[16];
#pragma GCC unroll 16
        for (int c = 0; c < 16; c++)
            o[c] = _mm512_setzero_ps();
        for (int j = 0; j < nk; j++) {
            long vj = (long)j * ld + 256 * g;
#pragma GCC unroll 4
            for (int h = 0; h < 4; h++) {
                __m512 w = _mm512_set1_ps(sg[(long)h * nk + j]);
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++)
                    o[4 * h + c] = _mm512_fmadd_ps(w, kv_load(V, vj + 64 * h + 16 * c, F16), o[4 * h + c]);
            }
        }
#pragma GCC unroll 16
        for (int c = 0; c < 16; c++)
            _mm512_storeu_ps(out + 256 * g + 16 * c, o[c]);
    }
}
#endif

/* Any shape: per head and key one dot product, then the weighted sum of
 * values; F16 elements widened one at a time where no vector path exists. */
static inline __attribute__((always_inline)) float kv_at(const void *p, long i, const int F16)
{
    return F16 ? mt_f16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static inline __attribute__((always_inline)) void attend_row_any(const float *q, const void *K, const void *V,
                                                                 int ld, int nk, int heads, int hd, float scale,
                                                                 float *sc, float *out, const int F16)
{
    for (int j = 0; j < nk; j++)
        for (int h = 0; h < heads; h++) {
            long kh = (long)j * ld + (long)h * hd;
            const float *qh = q + (long)h * hd;
            float t = 0.0f;
            int i = 0;
#if VW
            vf a = vzero();
            for (; i + VW <= hd; i += VW)
                a = vfma(F16 ? vload16((const uint16_t *)K + kh + i) : vload((const float *)K + kh + i),
                         vload(qh + i), a);
            t = vsum(a);
#endif
            for (; i < hd; i++)
                t += kv_at(K, kh + i, F16) * qh[i];
            sc[(long)h * nk + j] = scale * t;
        }
    for (int h = 0; h < heads; h++)
        mt_k_softmax(sc + (long)h * nk, nk, nk);
    memset(out, 0, sizeof(float) * (size_t)heads * hd);
    for (int j = 0; j < nk; j++)
        for (int h = 0; h < heads; h++) {
            float w = sc[(long)h * nk + j], *oh = out + (long)h * hd;
            long vh = (long)j * ld + (long)h * hd;
            int i = 0;
#if VW
            vf wv = vset1(w);
            for (; i + VW <= hd; i += VW)
                vstore(oh + i, vfma(wv, F16 ? vload16((const uint16_t *)V + vh + i) : vload((const float *)V + vh + i),
                                    vload(oh + i)));
#endif
            for (; i < hd; i++)
                oh[i] = FMA1(w, kv_at(V, vh + i, F16), oh[i]);
        }
}

MULTIVERSION
void mt_k_attend_row(const float *q, const float *K, const float *V, int ld, int nk, int heads, int hd, float scale,
                     float *sc, float *out)
{
#if VW == 16
    if (hd == 64 && heads % 4 == 0) {
        attend_row_hd64(q, K, V, ld, nk, heads, scale, sc, out, 0);
        return;
    }
#endif
    attend_row_any(q, K, V, ld, nk, heads, hd, scale, sc, out, 0);
}

MULTIVERSION
void mt_k_attend_row_f16(const float *q, const uint16_t *K, const uint16_t *V, int ld, int nk, int heads, int hd,
                         float scale, float *sc, float *out)
{
#if VW == 16
    if (hd == 64 && heads % 4 == 0) {
        attend_row_hd64(q, K, V, ld, nk, heads, scale, sc, out, 1);
        return;
    }
#endif
    attend_row_any(q, K, V, ld, nk, heads, hd, scale, sc, out, 1);
}

/* ---- the F16 K/V cache's conversions ---------------------------------------------- */
void mt_k_to_f16(const float *x, uint16_t *y, long n)
{
    long i = 0;
#if VW == 16
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif VW == 8
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; i++)
        y[i] = mt_f32_to_f16(x[i]);
}

void mt_k_from_f16(const uint16_t *x, float *y, long n)
{
    long i = 0;
#if VW
    for (; i + VW <= n; i += VW)
        vstore(y + i, vload16(x + i));
#endif
    for (; i < n; i++)
        y[i] = mt_f16_to_f32(x[i]);
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
