/* linear_q8.c: every Linear's product with INT8 weights (kernels.h), the CPU's
 * best kernel chosen at run time: AVX-512 VNNI, AVX2, or portable C.
 *
 * The scheme (CTranslate2's and Marian's CPU int8):
 *   weights   W [out][in] quantized once at load, symmetric, per output row:
 *             ws[o] = max_k |W[o][k]| / 127, Wq[o][k] = rint(W[o][k] * (127 / max)).
 *   inputs    each row of x quantized as the product needs it, the same way:
 *             xs[r] = max_k |x[r][k]| / 127, xq[r][k] = rint(x[r][k] * (127 / max)).
 *   product   acc[r][o] = sum_k xq[r][k] Wq[o][k], exactly, in int32;
 *   output    y[r][o] = act((float)acc * (xs[r] * ws[o]) + b[o]) (not fused: the
 *             reference in models/recipe/model.py does the same float operations).
 * Every kernel computes the same exact integer sums, so every ISA gives the same
 * bits: the epilogue is one function shared by all of them.
 *
 * Layout (mt_k_pack_q8): panels of MT_PANEL = 16 outputs; in rounded up to a
 * multiple of 4 (in4, zero-padded); a panel is [in4 / 4][16][4] int8: one group
 * of 4 inputs for 16 outputs is 64 contiguous bytes, one AVX-512 register, which
 * is what VNNI's vpdpbusd multiplies against 4 broadcast input bytes.  After the
 * panels: ws [out] floats and wsum [out] int32 (sum_k Wq[o][k]).
 *
 * VNNI multiplies unsigned by signed bytes, so its inputs are stored as
 * xq + 128 and 128 * wsum[o] is subtracted at the end.  AVX2 has no such
 * instruction: it multiplies |xq| by Wq carrying xq's sign (vpsignb), whose
 * pair sums (at most 2 * 127 * 127) cannot saturate vpmaddubsw's int16. */
#include "kernels.h"
#include "parallel.h"
#include "simd.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define Q8_X86 1
#else
#define Q8_X86 0
#endif

#define CHUNK_MIN_WORK (64 * 1024)   /* int8 multiply-adds: a chunk is worth a few microseconds */
#define QUANT_MIN_WORK (64 * 1024)   /* inputs quantized per chunk: ~10 us, worth a hand-off */

static int in4_of(int in) { return (in + 3) & ~3; }
static int panels_of(int out) { return (out + MT_PANEL - 1) / MT_PANEL; }
static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* ---- the CPU ------------------------------------------------------------------------- */
mt_q8_isa mt_k_q8_best_isa(void)
{
#if Q8_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vnni"))
        return MT_Q8_VNNI512;
    if (__builtin_cpu_supports("avx2"))
        return MT_Q8_AVX2;
#endif
    return MT_Q8_SCALAR;
}

const char *mt_k_q8_isa_name(mt_q8_isa isa)
{
    switch (isa) {
    case MT_Q8_VNNI512: return "avx512-vnni";
    case MT_Q8_AVX2:    return "avx2";
    default:            return "portable";
    }
}

/* ---- packing --------------------------------------------------------------------------- */
size_t mt_k_q8_bytes(int in, int out)
{
    size_t np = (size_t)panels_of(out);
    return align64(np * (size_t)in4_of(in) * MT_PANEL) + align64(np * MT_PANEL * sizeof(float)) +
           align64(np * MT_PANEL * sizeof(int32_t));
}

/* max |v| over n floats */
static float absmax(const float *v, int n)
{
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        float a = v[i] < 0 ? -v[i] : v[i];
        m = a > m ? a : m;
    }
    return m;
}

/* rint(v * inv) as int8; |v * inv| <= 127 by construction, clamped for safety */
static inline int8_t q8_round(float v, float inv)
{
    float q = nearbyintf(v * inv);
    q = q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q;
    return (int8_t)q;
}

void mt_k_pack_q8(const float *W, int in, int out, mt_q8_isa isa, void *dst, mt_packed *pk)
{
    int np = panels_of(out), in4 = in4_of(in);
    int8_t *q = dst;
    float *ws = (float *)((uint8_t *)dst + align64((size_t)np * in4 * MT_PANEL));
    int32_t *wsum = (int32_t *)((uint8_t *)ws + align64((size_t)np * MT_PANEL * sizeof(float)));
    for (int o = 0; o < np * MT_PANEL; o++) {
        const float *w = o < out ? W + (long)o * in : NULL;
        float mx = w ? absmax(w, in) : 0.0f, inv = mx > 0.0f ? 127.0f / mx : 0.0f;
        int p = o / MT_PANEL, j = o % MT_PANEL, sum = 0;
        for (int k = 0; k < in4; k++) {
            int8_t v = w && k < in ? q8_round(w[k], inv) : 0;
            q[(((long)p * (in4 / 4) + k / 4) * MT_PANEL + j) * 4 + k % 4] = v;
            sum += v;
        }
        ws[o] = mx / 127.0f;
        wsum[o] = sum;
    }
    *pk = (mt_packed){.data = dst, .in = in, .out = out, .i8 = 1, .isa = isa, .scale = ws, .wsum = wsum};
}

void mt_k_q8_select(const mt_packed *src, const int32_t *ids, int n, void *dst, mt_packed *pk)
{
    int np = panels_of(n), in4 = in4_of(src->in);
    const int8_t *sq = src->data;                   /* 4 int8 of one output together */
    int8_t *q = dst;
    float *ws = (float *)((uint8_t *)dst + align64((size_t)np * in4 * MT_PANEL));
    int32_t *wsum = (int32_t *)((uint8_t *)ws + align64((size_t)np * MT_PANEL * sizeof(float)));
    for (int o = 0; o < np * MT_PANEL; o++) {
        int id = o < n ? ids[o] : -1, p = o / MT_PANEL, j = o % MT_PANEL;
        long from = id < 0 ? 0 : (long)(id / MT_PANEL) * (in4 / 4) * MT_PANEL + id % MT_PANEL;
        long to = (long)p * (in4 / 4) * MT_PANEL + j;
        for (int k4 = 0; k4 < in4 / 4; k4++)
            if (id < 0)
                memset(q + (to + (long)k4 * MT_PANEL) * 4, 0, 4);
            else
                memcpy(q + (to + (long)k4 * MT_PANEL) * 4, sq + (from + (long)k4 * MT_PANEL) * 4, 4);
        ws[o] = id < 0 ? 0.0f : src->scale[id];
        wsum[o] = id < 0 ? 0 : src->wsum[id];
    }
    *pk = (mt_packed){.data = dst, .in = src->in, .out = n, .i8 = 1, .isa = src->isa, .scale = ws, .wsum = wsum};
}

/* ---- inputs ----------------------------------------------------------------------------- */
size_t mt_k_q8_scratch_bytes(int rows, int in)
{
    return align64((size_t)rows * in4_of(in)) + align64((size_t)rows * sizeof(float));
}

/* One row: q[k] = rint(x[k] * inv) + bias (mod 256) for k < kv, where the
 * vector paths below stopped; the same float operations, so the same bytes. */
static void quantize_tail(const float *x, int k0, int in, float inv, uint8_t bias, uint8_t *q)
{
    for (int k = k0; k < in; k++)
        q[k] = (uint8_t)((uint8_t)q8_round(x[k], inv) + bias);
}

#if Q8_X86
/* AVX-512: max |x| 16 lanes at a time (max is exact in any order), then
 * round-to-nearest-even (vrndscaleps, as nearbyintf) and narrow (vpmovdb). */
__attribute__((target("avx512f,avx512bw")))
static float quantize_row_512(const float *x, int in, uint8_t bias, uint8_t *q)
{
    __m512 m = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= in; k += 16)
        m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + k)));
    float mx = _mm512_reduce_max_ps(m);
    for (; k < in; k++)
        mx = fabsf(x[k]) > mx ? fabsf(x[k]) : mx;
    float inv = mx > 0.0f ? 127.0f / mx : 0.0f;
    __m512 vi = _mm512_set1_ps(inv);
    __m128i vb = _mm_set1_epi8((char)bias);
    for (k = 0; k + 16 <= in; k += 16) {
        __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(x + k), vi),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m128i b = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(r));
        _mm_storeu_si128((__m128i *)(q + k), _mm_add_epi8(b, vb));
    }
    quantize_tail(x, k, in, inv, bias, q);
    return mx;
}

/* AVX2: the same with 8 lanes; narrowed through 32-bit lanes. */
__attribute__((target("avx2")))
static float quantize_row_256(const float *x, int in, uint8_t bias, uint8_t *q)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    int k = 0;
    for (; k + 8 <= in; k += 8)
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)));
    float lanes[8], mx = 0.0f;
    _mm256_storeu_ps(lanes, m);
    for (int i = 0; i < 8; i++)
        mx = lanes[i] > mx ? lanes[i] : mx;
    for (; k < in; k++)
        mx = fabsf(x[k]) > mx ? fabsf(x[k]) : mx;
    float inv = mx > 0.0f ? 127.0f / mx : 0.0f;
    __m256 vi = _mm256_set1_ps(inv);
    for (k = 0; k + 8 <= in; k += 8) {
        __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + k), vi),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        int32_t v[8];
        _mm256_storeu_si256((__m256i *)v, _mm256_cvtps_epi32(r));
        for (int i = 0; i < 8; i++)
            q[k + i] = (uint8_t)((uint8_t)(int8_t)v[i] + bias);
    }
    quantize_tail(x, k, in, inv, bias, q);
    return mx;
}
#endif

/* x [n][in] -> xq [n][in4] (int8, or uint8 = int8 + 128 for VNNI; pads are 0 in
 * either's terms) and xs [n] */
static void quantize_rows(const float *x, int n, int in, mt_q8_isa isa, uint8_t *xq, float *xs)
{
    int in4 = in4_of(in);
    uint8_t bias = isa == MT_Q8_VNNI512 ? 128 : 0;
    for (int r = 0; r < n; r++) {
        const float *xr = x + (long)r * in;
        uint8_t *qr = xq + (long)r * in4;
        float mx;
        switch (isa) {
#if Q8_X86
        case MT_Q8_VNNI512: mx = quantize_row_512(xr, in, bias, qr); break;
        case MT_Q8_AVX2:    mx = quantize_row_256(xr, in, bias, qr); break;
#endif
        default:
            mx = absmax(xr, in);
            quantize_tail(xr, 0, in, mx > 0.0f ? 127.0f / mx : 0.0f, bias, qr);
            break;
        }
        for (int k = in; k < in4; k++)
            qr[k] = bias;
        xs[r] = mx / 127.0f;
    }
}

/* Many rows (a source's, a wide batch's) are quantized over the pool too:
 * serial, they were up to a fifth of a 2-thread product at 128 rows.  Each
 * row is quantized alone, so the split changes no byte. */
typedef struct {
    const float *x;
    int n, in, per;
    mt_q8_isa isa;
    uint8_t *xq;
    float *xs;
} quant_job;

static void quant_chunk(void *ctx, int c)
{
    const quant_job *j = ctx;
    int r0 = c * j->per, r1 = r0 + j->per < j->n ? r0 + j->per : j->n;
    quantize_rows(j->x + (long)r0 * j->in, r1 - r0, j->in, j->isa, j->xq + (long)r0 * in4_of(j->in), j->xs + r0);
}

static void quantize_all(const float *x, int n, int in, mt_q8_isa isa, uint8_t *xq, float *xs, int threads)
{
    int chunks = threads < 2 ? 1 : (int)((long)n * in / QUANT_MIN_WORK);
    chunks = chunks > 2 * threads ? 2 * threads : chunks > n ? n : chunks;
    if (chunks <= 1) {
        quantize_rows(x, n, in, isa, xq, xs);
        return;
    }
    quant_job j = {.x = x, .n = n, .in = in, .per = (n + chunks - 1) / chunks, .isa = isa, .xq = xq, .xs = xs};
    mt_par_for((n + j.per - 1) / j.per, quant_chunk, &j);
}

/* ---- the shared epilogue: every ISA's int32 sums become floats here -------------------- */
#if VW == 16
/* (float)(acc - comp * wsum) for VW outputs */
static inline vf q8_sums(const int32_t *acc, const int32_t *wsum, int comp)
{
    __m512i a = _mm512_sub_epi32(_mm512_loadu_si512(acc),
                                 _mm512_mullo_epi32(_mm512_set1_epi32(comp), _mm512_loadu_si512(wsum)));
    return _mm512_cvtepi32_ps(a);
}
#elif VW == 8
static inline vf q8_sums(const int32_t *acc, const int32_t *wsum, int comp)
{
    __m256i a = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)acc),
                                 _mm256_mullo_epi32(_mm256_set1_epi32(comp), _mm256_loadu_si256((const __m256i *)wsum)));
    return _mm256_cvtepi32_ps(a);
}
#endif

/* acc [nr][ld] for outputs o0 .. o0 + no of rows r0 ..; comp: 128 for VNNI's
 * unsigned inputs, else 0.  Not fused (fp-contract off), not inlined: the same
 * bits from every kernel, and the float operations the reference does.  The
 * vector loop does exactly the scalar tail's operations lane by lane (two
 * products, one sum, and an activation whose vector form gives act1's bits,
 * simd.h), so a row's outputs do not depend on where the vectors end. */
__attribute__((noinline, optimize("fp-contract=off")))
static void q8_store(const int32_t *acc, int ld, int nr, int o0, int no, const mt_packed *W, const float *xs,
                     const float *b, float *y, int comp, mt_act act)
{
    int out = W->out;
    for (int r = 0; r < nr; r++) {
        float *yr = y + (long)r * out;
        const int32_t *ar = acc + (long)r * ld;
        int j = 0;
#if VW
        if (act != MT_ACT_GELU) {         /* GELU has no vector form (erff) */
            vf xsr = vset1(xs[r]);
            for (; j + VW <= no; j += VW) {
                int o = o0 + j;
                vf v = vmul(q8_sums(ar + j, W->wsum + o, comp), vmul(xsr, vload(W->scale + o)));
                if (b)
                    v = vadd(v, vload(b + o));
                vstore(yr + o, act == MT_ACT_SWISH ? vswish(v) : act == MT_ACT_RELU ? vrelu(v) : v);
            }
        }
#endif
        for (; j < no; j++) {
            int o = o0 + j;
            int32_t a = ar[j] - comp * W->wsum[o];
            float v = (float)a * (xs[r] * W->scale[o]);
            if (b)
                v = v + b[o];
            yr[o] = act1(v, act);
        }
    }
}

/* ---- kernels: rows [0, NR) of xq times panels [p0, p0 + NP) -> acc [NR][NP * 16] ---------- */
#define Q8_MAX_NR 8
#define Q8_MAX_NP 3

static void tile_scalar(const uint8_t *xq, int in4, const int8_t *Wq, int p0, int nr, int np, int32_t *acc)
{
    int groups = in4 / 4;
    for (int r = 0; r < nr; r++) {
        const int8_t *xr = (const int8_t *)xq + (long)r * in4;
        for (int p = 0; p < np; p++) {
            const int8_t *wp = Wq + (long)(p0 + p) * groups * MT_PANEL * 4;
            int32_t *ar = acc + (long)r * Q8_MAX_NP * MT_PANEL + p * MT_PANEL;
            for (int j = 0; j < MT_PANEL; j++)
                ar[j] = 0;
            for (int g = 0; g < groups; g++)
                for (int j = 0; j < MT_PANEL; j++) {
                    const int8_t *w = wp + ((long)g * MT_PANEL + j) * 4, *xv = xr + 4 * g;
                    ar[j] += xv[0] * w[0] + xv[1] * w[1] + xv[2] * w[2] + xv[3] * w[3];
                }
        }
    }
}

#if Q8_X86
#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline
#define AVX2_TARGET __attribute__((target("avx2"), always_inline)) inline

static VNNI_TARGET void vnni_block(const uint8_t *xq, int in4, const int8_t *Wq, int p0, int32_t *acc,
                                  const int NR, const int NP)
{
    __m512i a[Q8_MAX_NR][Q8_MAX_NP];       /* in registers: every loop over r and p unrolled */
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 3
        for (int p = 0; p < NP; p++)
            a[r][p] = _mm512_setzero_si512();
    long pstride = (long)(in4 / 4) * MT_PANEL * 4;
    const int8_t *w0 = Wq + p0 * pstride;
    for (int g = 0; g < in4 / 4; g++) {
        __m512i w[Q8_MAX_NP];
#pragma GCC unroll 3
        for (int p = 0; p < NP; p++)
            w[p] = _mm512_loadu_si512(w0 + p * pstride + (long)g * 64);
#pragma GCC unroll 8
        for (int r = 0; r < NR; r++) {
            int32_t x4;
            memcpy(&x4, xq + (long)r * in4 + 4 * g, 4);
            __m512i xb = _mm512_set1_epi32(x4);
#pragma GCC unroll 3
            for (int p = 0; p < NP; p++)
                a[r][p] = _mm512_dpbusd_epi32(a[r][p], xb, w[p]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 3
        for (int p = 0; p < NP; p++)
            _mm512_storeu_si512(acc + (long)r * Q8_MAX_NP * MT_PANEL + p * MT_PANEL, a[r][p]);
}

__attribute__((target("avx512f,avx512bw,avx512vnni")))
static void tile_vnni(const uint8_t *xq, int in4, const int8_t *Wq, int p0, int nr, int np, int32_t *acc)
{
#define VCASE(R, P) case (R) * 4 + (P): vnni_block(xq, in4, Wq, p0, acc, R, P); break
#define VCASES(R) VCASE(R, 1); VCASE(R, 2); VCASE(R, 3)
    switch (nr * 4 + np) {
    VCASES(1); VCASES(2); VCASES(3); VCASES(4); VCASES(5); VCASES(6); VCASES(7); VCASES(8);
    }
#undef VCASES
#undef VCASE
}

/* AVX2: a panel's 64-byte group is two registers of 8 outputs x 4 inputs. */
static AVX2_TARGET void avx2_block(const uint8_t *xq, int in4, const int8_t *Wq, int p0, int32_t *acc, const int NR)
{
    __m256i a[4][2];                       /* in registers: every loop over r unrolled */
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
        a[r][0] = a[r][1] = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    const int8_t *w0 = Wq + p0 * (long)(in4 / 4) * MT_PANEL * 4;
    for (int g = 0; g < in4 / 4; g++) {
        __m256i wa = _mm256_loadu_si256((const __m256i *)(w0 + (long)g * 64));
        __m256i wb = _mm256_loadu_si256((const __m256i *)(w0 + (long)g * 64 + 32));
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            int32_t x4;
            memcpy(&x4, xq + (long)r * in4 + 4 * g, 4);
            __m256i xb = _mm256_set1_epi32(x4), ax = _mm256_abs_epi8(xb);
            __m256i pa = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(wa, xb));
            __m256i pb = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(wb, xb));
            a[r][0] = _mm256_add_epi32(a[r][0], _mm256_madd_epi16(pa, ones));
            a[r][1] = _mm256_add_epi32(a[r][1], _mm256_madd_epi16(pb, ones));
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) {
        int32_t *ar = acc + (long)r * Q8_MAX_NP * MT_PANEL;
        _mm256_storeu_si256((__m256i *)ar, a[r][0]);
        _mm256_storeu_si256((__m256i *)(ar + 8), a[r][1]);
    }
}

__attribute__((target("avx2")))
static void tile_avx2(const uint8_t *xq, int in4, const int8_t *Wq, int p0, int nr, int np, int32_t *acc)
{
    for (int p = 0; p < np; p++)
        for (int r = 0; r < nr; r += 4) {
            int n = nr - r < 4 ? nr - r : 4;
            const uint8_t *x = xq + (long)r * in4;
            int32_t *ac = acc + (long)r * Q8_MAX_NP * MT_PANEL + p * MT_PANEL;
            switch (n) {
            case 1: avx2_block(x, in4, Wq, p0 + p, ac, 1); break;
            case 2: avx2_block(x, in4, Wq, p0 + p, ac, 2); break;
            case 3: avx2_block(x, in4, Wq, p0 + p, ac, 3); break;
            default: avx2_block(x, in4, Wq, p0 + p, ac, 4); break;
            }
        }
}
#endif

/* ---- the product, split over the compute pool by panels --------------------------------- */
typedef struct {
    const uint8_t *xq;
    const float *xs, *b;
    const mt_packed *W;
    float *y;
    int n, per;
    mt_act act;
} q8_job;

static void q8_range(const q8_job *j, int p_lo, int p_hi)
{
    const mt_packed *W = j->W;
    int in4 = in4_of(W->in);
    int32_t acc[Q8_MAX_NR * Q8_MAX_NP * MT_PANEL];
    for (int p = p_lo; p < p_hi; p += Q8_MAX_NP) {
        int np = p_hi - p < Q8_MAX_NP ? p_hi - p : Q8_MAX_NP;
        int o0 = p * MT_PANEL, no = np * MT_PANEL < W->out - o0 ? np * MT_PANEL : W->out - o0;
        for (int r = 0; r < j->n; r += Q8_MAX_NR) {
            int nr = j->n - r < Q8_MAX_NR ? j->n - r : Q8_MAX_NR;
            const uint8_t *x = j->xq + (long)r * in4;
            switch (W->isa) {
#if Q8_X86
            case MT_Q8_VNNI512: tile_vnni(x, in4, W->data, p, nr, np, acc); break;
            case MT_Q8_AVX2:    tile_avx2(x, in4, W->data, p, nr, np, acc); break;
#endif
            default:            tile_scalar(x, in4, W->data, p, nr, np, acc); break;
            }
            q8_store(acc, Q8_MAX_NP * MT_PANEL, nr, o0, no, W, j->xs + r, j->b, j->y + (long)r * W->out,
                     W->isa == MT_Q8_VNNI512 ? 128 : 0, j->act);
        }
    }
}

static void q8_chunk(void *ctx, int c)
{
    const q8_job *j = ctx;
    int np = panels_of(j->W->out), lo = c * j->per, hi = lo + j->per < np ? lo + j->per : np;
    q8_range(j, lo, hi);
}

void mt_k_linear_q8(const float *x, int n, const mt_packed *W, const float *b, float *y, mt_act act,
                    void *scratch)
{
    int in4 = in4_of(W->in), np = panels_of(W->out);
    uint8_t *xq = scratch;
    float *xs = (float *)((uint8_t *)scratch + align64((size_t)n * in4));
    int threads = mt_par_threads();
    quantize_all(x, n, W->in, W->isa, xq, xs, threads);
    q8_job j = {.xq = xq, .xs = xs, .b = b, .W = W, .y = y, .n = n, .act = act};
    long work = (long)n * in4 * W->out;
    int chunks = threads < 2 ? 1 : (int)(work / CHUNK_MIN_WORK);
    if (chunks > 4 * threads)
        chunks = 4 * threads;
    if (chunks <= 1) {
        q8_range(&j, 0, np);
        return;
    }
    int per = (np + chunks - 1) / chunks;
    per = (per + Q8_MAX_NP - 1) / Q8_MAX_NP * Q8_MAX_NP;
    j.per = per;
    mt_par_for((np + per - 1) / per, q8_chunk, &j);
}
