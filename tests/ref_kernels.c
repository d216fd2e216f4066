/* ref_kernels.c: naive scalar references of the engine's kernels (ref_kernels.h),
 * in double where it is cheap; test_kernels.c checks the mt_k_* kernels
 * against them.  Test-only: not part of libmt.a. */
#include "ref_kernels.h"

#include <math.h>

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
