/* kernels.h: the math of the engine.
 *
 * Layout convention, stated once: every matrix is row-major; a Linear weight W
 * is [out][in] (PyTorch nn.Linear), so y = x W^T + b, y[o] = b[o] + sum_i
 * W[o*in+i] x[i].  Activations are [rows][features].
 *
 * The mt_k_* functions are the fast path: the engine's own AVX-512 / AVX2
 * kernel for every Linear (weights packed at load), OpenBLAS sgemm (one
 * thread per caller) for the attention of whole sequences, all split over
 * the compute pool (parallel.h).  This is the one public header of the
 * kernel files:
 *   simd.h          the vector shim they share (static inline: AVX-512 / AVX2 / scalar)
 *   linear.c        mt_k_packed_bytes, mt_k_pack, mt_k_linear_packed: every Linear
 *   linear_q8.c     mt_k_pack_q8, mt_k_linear_q8: every Linear with INT8 weights
 *   attn_kernels.c  mt_k_dots, mt_k_attend_row(_f16), mt_k_gemm_nt, mt_k_gemm_nn: attention products,
 *                   mt_k_to_f16, mt_k_from_f16: the F16 K/V cache
 *   norm.c          mt_k_add_layernorm, mt_k_softmax, mt_k_activation,
 *                   mt_k_log_softmax_skip, mt_k_argmax_skip, mt_k_logsumexp_skip, mt_k_log_softmax_shift,
 *                   mt_k_topk: row-wise kernels
 *   alloc.c         mt_huge_alloc, mt_huge_free: the big, long-lived buffers;
 *                   mt_pages_*: page mappings whose pages can be given back
 * Their naive references are test code: tests/ref_kernels.h.
 */
#ifndef MT_KERNELS_H
#define MT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { MT_ACT_SWISH, MT_ACT_RELU, MT_ACT_GELU, MT_ACT_NONE } mt_act;

/* A Linear weight [out][in] packed at load (mt_k_pack): panels of
 * MT_PANEL outputs, each [in][MT_PANEL], the last zero-padded; F32 or F16. */
#define MT_PANEL 16
/* INT8 kernels (linear_q8.c), best first; the CPU's best is found at run time. */
typedef enum { MT_Q8_SCALAR = 0, MT_Q8_AVX2 = 1, MT_Q8_VNNI512 = 2 } mt_q8_isa;
typedef struct {
    const void *data;
    int in, out, f16;
    int kc;                     /* F32/F16: inputs per k block (mt_k_block_k), 0: all of in at once */
    int i8;                     /* INT8 (mt_k_pack_q8): data is [panels][in4/4][16][4] int8 */
    mt_q8_isa isa;              /* i8: the kernel that runs it */
    const float *scale;         /* i8: [out] per output row, max |W[o]| / 127 */
    const int32_t *wsum;        /* i8: [out] sum_k of the quantized row */
} mt_packed;
size_t mt_k_packed_bytes(int in, int out, int f16);
/* The L2 cache's bytes, read at run time (sysconf, then sysfs; 256 KB when
 * neither says), and the k block a packed F32/F16 weight of `in` inputs gets
 * for it: the inputs a panel block and a row block of the product hold so
 * that both stay within half the L2 (0: all of in fits).  Any k block gives
 * the same bits: each output's FMA chain runs over k in order, its partial
 * sum kept exactly in y between blocks. */
long mt_k_l2_bytes(void);
int  mt_k_block_k(int in, int f16, long l2_bytes);
/* Pack W [out][in] (F32) into dst (mt_k_packed_bytes); f16: rounded to nearest even. */
void mt_k_pack(const float *W, int in, int out, int f16, void *dst);
/* A lexical shortlist's head (model/shortlist.c): a packed matrix of only
 * the outputs ids[0..n) of a [rows][in] weight, output j = row ids[j], in
 * the same layout as packing the whole matrix would give them (so each
 * output's product has the same bits).  From the row-major F32 weight W
 * (mt_k_pack_rows: F32 or, with f16, rounded as mt_k_pack does) or from an
 * already packed one in any precision (mt_k_pack_select: F32, F16 or INT8,
 * dst of mt_k_packed_bytes / mt_k_q8_bytes for n outputs). */
void mt_k_pack_rows(const float *W, int in, const int32_t *ids, int n, int f16, void *dst);
void mt_k_pack_select(const mt_packed *src, const int32_t *ids, int n, void *dst, mt_packed *out);
/* y[n][out] = act(x[n][in] W^T + b) with packed W, split over the compute pool.
 * Each output is one FMA chain over k then + b: bit-identical in any batch and
 * with any number of threads. */
void mt_k_linear_packed(const float *x, int n, const mt_packed *W, const float *b, float *y, mt_act act);
/* mt_k_linear_packed with every n through the row-block tile (the kernel
 * before the n <= 2 and F16 prompt paths of linear.c): the same bits; for the
 * bench's A/B and the tests that check those paths against it. */
void mt_k_linear_packed_generic(const float *x, int n, const mt_packed *W, const float *b, float *y, mt_act act);
/* INT8 weights (linear_q8.c): W quantized per output row, each input row
 * quantized per row as the product needs it, the sums exact in int32, then
 * y = act((float)acc * (xs[r] * ws[o]) + b[o]); every ISA gives the same bits. */
mt_q8_isa   mt_k_q8_best_isa(void);
const char *mt_k_q8_isa_name(mt_q8_isa isa);
size_t mt_k_q8_bytes(int in, int out);
void   mt_k_pack_q8(const float *W, int in, int out, mt_q8_isa isa, void *dst, mt_packed *pk);
/* mt_k_pack_select of INT8 weights (linear_q8.c). */
void   mt_k_q8_select(const mt_packed *src, const int32_t *ids, int n, void *dst, mt_packed *out);
/* scratch for the quantized inputs of up to `rows` rows of `in` features */
size_t mt_k_q8_scratch_bytes(int rows, int in);
void   mt_k_linear_q8(const float *x, int n, const mt_packed *W, const float *b, float *y, mt_act act,
                      void *scratch);
/* sc[j] = alpha * (K[j] . q) over len features for j < nk, K rows ld floats apart. */
void mt_k_dots(int nk, int len, float alpha, const float *K, int ld, const float *q, float *sc);
/* A decode step's attention for one query, all heads: q [d], K and V rows ld
 * floats apart, nk keys; sc [heads][nk] scratch (the weights on return), out [d]. */
void mt_k_attend_row(const float *q, const float *K, const float *V, int ld, int nk, int heads, int hd, float scale,
                     float *sc, float *out);
/* The same with K and V held in half precision (a session's F16 K/V cache). */
void mt_k_attend_row_f16(const float *q, const uint16_t *K, const uint16_t *V, int ld, int nk, int heads, int hd,
                         float scale, float *sc, float *out);
/* The F16 K/V cache's conversions: y[i] = x[i] rounded to nearest even / widened. */
void mt_k_to_f16(const float *x, uint16_t *y, long n);
void mt_k_from_f16(const uint16_t *x, float *y, long n);
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
/* The first v != skip holding the largest logits[v] (-1 when n holds only
 * skip): a plain scan's answer, by vectors; NaN logits may answer otherwise. */
int mt_k_argmax_skip(const float *logits, int n, int skip);
/* log(sum_{v != skip} exp(logits[v])) computed stably. */
double mt_k_logsumexp_skip(const float *logits, int n, int skip);
/* out[v] = (float)(logits[v] - lse) + shift (the log-softmax's rounding, then
 * the shift added in float); out[skip] = -inf. */
void mt_k_log_softmax_shift(const float *logits, int n, int skip, double lse, float shift, float *out);
/* The k largest of v[0..n) into tv/ti, sorted descending, ties to the lower
 * index, NaN skipped; returns min(k, count of non-NaN). */
int mt_k_topk(const float *v, int n, int k, float *tv, int *ti);

/* Decoder-only LMs (norm.c): y[r] = x[r] * rsqrt(mean(x[r]^2) + eps) * w (y may be x);
 * SwiGLU in place: gu [rows][2F] = gate | up -> [rows][F] silu(gate) * up. */
void mt_k_rmsnorm(const float *x, int rows, int d, const float *w, float eps, float *y);
void mt_k_swiglu(float *gu, int rows, int F);
/* GeGLU in place (Gemma 3): [rows][2F] gate | up -> [rows][F] gelu_tanh(gate) * up. */
void mt_k_geglu(float *gu, int rows, int F);

/* alloc.c: zeroed, 2 MB-aligned, MADV_HUGEPAGE mappings for the big buffers
 * (packed weights); free with the size that was allocated. */
void *mt_huge_alloc(size_t bytes);
void  mt_huge_free(void *p, size_t bytes);
/* alloc.c: zeroed, page-aligned mappings of 4 KB pages (session arenas);
 * free with the size that was allocated.  mt_pages_release gives every page
 * of [p, p + bytes) back to the system (the range then reads as zeros; p as
 * mt_pages_alloc returned it); 0, or -1 with nothing changed.
 * mt_pages_resident: the bytes of the range in memory now (mincore). */
void  *mt_pages_alloc(size_t bytes);
void   mt_pages_free(void *p, size_t bytes);
int    mt_pages_release(void *p, size_t bytes);
size_t mt_pages_resident(const void *p, size_t bytes);

#endif
