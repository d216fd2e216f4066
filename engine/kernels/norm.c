/* norm.c: the row-wise kernels (kernels.h): residual add + LayerNorm (split
 * over the compute pool), the masked softmax of attention weights, the
 * activations applied in place, and the log-softmax / log-sum-exp over the
 * vocabulary with one token excluded (greedy scores, beam log-probs). */
#include "kernels.h"
#include "parallel.h"
#include "simd.h"

#include <math.h>

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

/* The first index i != skip with x[i] >= mx, whole vectors passed over in one compare. */
static int first_at_least(const float *x, int n, int skip, float mx)
{
    int i = 0;
    while (i < n) {
#if VW
        if (i + VW <= n && !vany_ge(vload(x + i), mx)) {
            i += VW;
            continue;
        }
        for (int e = i + VW < n ? i + VW : n; i < e; i++)
#else
        for (; i < n; i++)
#endif
            if (i != skip && x[i] >= mx)
                return i;
    }
    return -1;
}

/* A greedy step's argmax over the vocabulary: the max by vectors (range_max),
 * then the first element equal to it, which is what the scalar scan keeping
 * the first of equal maxima finds; all -inf: the first index, as that scan. */
int mt_k_argmax_skip(const float *logits, int n, int skip)
{
    int a = skip >= 0 && skip < n ? skip : n;
    int b = a < n ? a + 1 : n, first = a > 0 ? 0 : b < n ? b : -1;
    if (first < 0)
        return -1;
    float mx = range_max(logits + b, n - b, range_max(logits, a, -INFINITY));
    if (!(mx > -INFINITY))
        return first;
    int i = first_at_least(logits, n, a, mx);
    return i >= 0 ? i : first;
}

void mt_k_log_softmax_skip(const float *logits, int n, int skip, float *lp)
{
    double lse = mt_k_logsumexp_skip(logits, n, skip);
    for (int v = 0; v < n; v++)
        lp[v] = (float)((double)logits[v] - lse);
    if (skip >= 0 && skip < n)
        lp[skip] = -INFINITY;
}

/* A beam row's candidate scores in one pass: the log-softmax exactly as
 * mt_k_log_softmax_skip rounds it (given its lse), plus the beam's score. */
void mt_k_log_softmax_shift(const float *logits, int n, int skip, double lse, float shift, float *out)
{
    for (int v = 0; v < n; v++) {
        float lp = (float)((double)logits[v] - lse);
        out[v] = lp + shift;
    }
    if (skip >= 0 && skip < n)
        out[skip] = -INFINITY;
}

/* The k largest of v[0..n), sorted descending; ties keep the lower index
 * first (torch.topk on CPU); NaN never enters.  Once k are held, a block
 * of vectors with no element above the k-th is passed over in one compare:
 * the elements it skips are exactly the ones the insertion would reject,
 * so the result is the plain insertion pass's. */
int mt_k_topk(const float *v, int n, int k, float *tv, int *ti)
{
    int cnt = 0, i = 0;
    while (i < n) {
#if VW
        if (cnt == k) {
            float thr = tv[k - 1];
            /* compares, not a max: a NaN lane must not hide its neighbours */
            while (i + 4 * VW <= n && !(vany_gt(vload(v + i), thr) | vany_gt(vload(v + i + VW), thr) |
                                        vany_gt(vload(v + i + 2 * VW), thr) | vany_gt(vload(v + i + 3 * VW), thr)))
                i += 4 * VW;
        }
#endif
        int end = i + 4 * (VW ? VW : 16) < n ? i + 4 * (VW ? VW : 16) : n;
        for (; i < end; i++) {
            float x = v[i];
            if (x != x || (cnt == k && !(x > tv[k - 1])))
                continue;
            int p = cnt < k ? cnt++ : k - 1;
            while (p > 0 && x > tv[p - 1]) {
                tv[p] = tv[p - 1];
                ti[p] = ti[p - 1];
                p--;
            }
            tv[p] = x;
            ti[p] = i;
        }
    }
    return cnt;
}

/* ---- decoder-only LMs (engine/model/llm.c) -------------------------------------- */
/* y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w over rows of d features (HF
 * LlamaRMSNorm); the mean of squares in double.  y may be x. */
void mt_k_rmsnorm(const float *x, int rows, int d, const float *w, float eps, float *y)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * d;
        float *yr = y + (long)r * d;
        double ss = 0;
        for (int i = 0; i < d; i++)
            ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / d + (double)eps));
        for (int i = 0; i < d; i++)
            yr[i] = xr[i] * inv * w[i];
    }
}

/* SwiGLU in place: row r of gu [rows][2F] holds gate | up; out row r (at
 * gu + r*F, rows packed as [rows][F]) = silu(gate) * up.  Row r's output
 * lies at or before its input and after every earlier row's input: writing
 * rows in order reads each element before it is overwritten. */
/* GeGLU (Gemma 3's MLP): gelu_pytorch_tanh(gate) * up, the tanh approximation
 * 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))), as torch's approximate='tanh'. */
void mt_k_geglu(float *gu, int rows, int F)
{
    const float c = 0.7978845608028654f;     /* sqrt(2 / pi) */
    for (int r = 0; r < rows; r++) {
        const float *g = gu + (long)r * 2 * F, *u = g + F;
        float *o = gu + (long)r * F;
        for (int j = 0; j < F; j++) {
            float gj = g[j];
            o[j] = 0.5f * gj * (1.0f + tanhf(c * (gj + 0.044715f * gj * gj * gj))) * u[j];
        }
    }
}

void mt_k_swiglu(float *gu, int rows, int F)
{
    for (int r = 0; r < rows; r++) {
        const float *g = gu + (long)r * 2 * F, *u = g + F;
        float *o = gu + (long)r * F;
        for (int j = 0; j < F; j++) {
            float gj = g[j];
            o[j] = gj / (1.0f + expf(-gj)) * u[j];
        }
    }
}
