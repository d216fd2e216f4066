/* kernels.c: BLAS-backed kernels and their naive references (kernels.h). */
#include "kernels.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* ---- matrix products ---------------------------------------------------------- */
void mt_k_linear(const float *x, int n, int in, const float *W, const float *b, int out, float *y)
{
    /* Start from the bias and accumulate (beta = 1): one pass over y. */
    for (int r = 0; r < n; r++) {
        if (b)
            memcpy(y + (long)r * out, b, sizeof(float) * (size_t)out);
        else
            memset(y + (long)r * out, 0, sizeof(float) * (size_t)out);
    }
    if (n == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, W, in, x, 1, 1.0f, y, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, W, in, 1.0f, y, out);
}

void mt_k_gemv(int m, int k, float alpha, const float *A, int lda, const float *x, float *y)
{
    cblas_sgemv(CblasRowMajor, CblasNoTrans, m, k, alpha, A, lda, x, 1, 0.0f, y, 1);
}

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
void mt_k_add_layernorm(float *x, const float *h, int rows, int d, const float *g, const float *b)
{
    for (int r = 0; r < rows; r++) {
        float *xr = x + (long)r * d;
        if (h) {
            const float *hr = h + (long)r * d;
            for (int i = 0; i < d; i++)
                xr[i] += hr[i];
        }
        double s = 0, ss = 0;
        for (int i = 0; i < d; i++)
            s += xr[i];
        double mean = s / d;
        for (int i = 0; i < d; i++) {
            double c = xr[i] - mean;
            ss += c * c;
        }
        float rstd = (float)(1.0 / sqrt(ss / d + 1e-5)), m = (float)mean;
        for (int i = 0; i < d; i++)
            xr[i] = (xr[i] - m) * rstd * g[i] + b[i];
    }
}

void mt_k_softmax(float *x, int n, int ld)
{
    float mx = x[0];
    for (int i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    float s = 0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        s += x[i];
    }
    float inv = 1.0f / s;
    for (int i = 0; i < n; i++)
        x[i] *= inv;
    for (int i = n; i < ld; i++)
        x[i] = 0.0f;
}

void mt_k_activation(float *x, long n, mt_act act)
{
    switch (act) {
    case MT_ACT_SWISH:
        for (long i = 0; i < n; i++)
            x[i] = x[i] / (1.0f + expf(-x[i]));
        break;
    case MT_ACT_RELU:
        for (long i = 0; i < n; i++)
            x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case MT_ACT_GELU:
        for (long i = 0; i < n; i++)
            x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
        break;
    }
}

double mt_k_logsumexp_skip(const float *logits, int n, int skip)
{
    float mx = -INFINITY;
    for (int v = 0; v < n; v++)
        if (v != skip && logits[v] > mx)
            mx = logits[v];
    /* expf (1 ulp) summed in double: accurate to ~1e-7 and 3x cheaper than exp() */
    double s = 0;
    for (int v = 0; v < n; v++)
        if (v != skip)
            s += expf(logits[v] - mx);
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
        if (act == MT_ACT_SWISH)
            v = v / (1.0 + exp(-v));
        else if (act == MT_ACT_RELU)
            v = v > 0 ? v : 0;
        else
            v = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
        x[i] = (float)v;
    }
}
