/* kernels.h: the math of the engine.
 *
 * Layout convention, stated once: every matrix is row-major; a Linear weight W
 * is [out][in] (PyTorch nn.Linear), so y = x W^T + b, y[o] = b[o] + sum_i
 * W[o*in+i] x[i].  Activations are [rows][features].
 *
 * The mt_k_* functions are the fast path (OpenBLAS cblas); the mt_ref_*
 * functions are plain scalar versions kept for the unit tests.
 */
#ifndef MT_KERNELS_H
#define MT_KERNELS_H

typedef enum { MT_ACT_SWISH, MT_ACT_RELU, MT_ACT_GELU } mt_act;

/* y[n][out] = x[n][in] W[out][in]^T + b[out] (b may be NULL).  Up to 8 rows (in a
 * multiple of 8, AVX2+FMA builds) a packing-free kernel; else sgemv (n == 1) or sgemm. */
void mt_k_linear(const float *x, int n, int in, const float *W, const float *b, int out, float *y);
/* y[m] = alpha * A[m][k] x[k] (A with leading dimension lda). */
void mt_k_gemv(int m, int k, float alpha, const float *A, int lda, const float *x, float *y);
/* 1 when the small-batch AVX2/FMA kernel is compiled in (else BLAS only). */
int mt_k_have_small(void);
/* C[m][n] = alpha * A[m][k] . B[n][k]^T (+ beta C), with leading dimensions. */
void mt_k_gemm_nt(int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc);
/* C[m][n] = A[m][k] . B[k][n] (+ beta C), with leading dimensions. */
void mt_k_gemm_nn(int m, int n, int k, const float *A, int lda, const float *B, int ldb, float beta,
                  float *C, int ldc);
/* x[r] = LayerNorm(x[r] + h[r]) * g + b over rows of d features, eps 1e-5 (h may be NULL). */
void mt_k_add_layernorm(float *x, const float *h, int rows, int d, const float *g, const float *b);
/* In-place softmax of the first n entries of x; x[n..ld) are set to 0 (masked keys). */
void mt_k_softmax(float *x, int n, int ld);
void mt_k_activation(float *x, long n, mt_act act);
/* log-softmax of logits[v] with token `skip` excluded from the normalizer
 * (its output is -inf); returns nothing, writes lp[v]. */
void mt_k_log_softmax_skip(const float *logits, int n, int skip, float *lp);
/* log(sum_{v != skip} exp(logits[v])) computed stably. */
double mt_k_logsumexp_skip(const float *logits, int n, int skip);

/* ---- naive references (tests) ---- */
void mt_ref_linear(const float *x, int n, int in, const float *W, const float *b, int out, float *y);
void mt_ref_add_layernorm(float *x, const float *h, int rows, int d, const float *g, const float *b);
void mt_ref_softmax(float *x, int n, int ld);
void mt_ref_activation(float *x, long n, mt_act act);

#endif
