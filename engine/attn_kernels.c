/* attn_kernels.c: the products of attention (kernels.h), used by mha.c:
 * a decode step's attention for one query over its cached keys and values,
 * every head in one pass (mt_k_attend_row, with a register path for the
 * default model's 4 heads x 64), the per-head score dot products (mt_k_dots),
 * and the OpenBLAS sgemm wrappers for the attention of whole sequences
 * (mt_k_gemm_nt / mt_k_gemm_nn). */
#include "kernels.h"
#include "simd.h"

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
