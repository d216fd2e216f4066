/* ref_kernels.c: naive scalar references of the engine's kernels (ref_kernels.h),
 * in double where it is cheap; test_kernels.c checks the mt_k_* kernels
 * against them.  Test-only: not part of libmt.a. */
#include "ref_kernels.h"

#include <stdlib.h>

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

/* The INT8 product as kernels.h defines it, written plainly: each row of W and
 * of x quantized symmetrically (scale = max|.| / 127, q = round half to even of
 * v * (127 / max)), the sums in 64-bit, then (float)sum * (xs * ws) + b without
 * a fused multiply-add (the volatile keeps the compiler from fusing). */
static float ref_q8_row(const float *v, int n, int32_t *q)
{
    float mx = 0.0f;
    for (int i = 0; i < n; i++)
        mx = fmaxf(mx, fabsf(v[i]));
    float inv = mx > 0.0f ? 127.0f / mx : 0.0f;
    for (int i = 0; i < n; i++) {
        float t = nearbyintf(v[i] * inv);
        q[i] = (int32_t)fminf(127.0f, fmaxf(-127.0f, t));
    }
    return mx / 127.0f;
}

void mt_ref_linear_q8(const float *x, int n, int in, const float *W, const float *b, int out, float *y)
{
    int32_t *qx = malloc(sizeof(int32_t) * (size_t)in), *qw = malloc(sizeof(int32_t) * (size_t)in);
    for (int r = 0; r < n; r++) {
        float xs = ref_q8_row(x + (long)r * in, in, qx);
        for (int o = 0; o < out; o++) {
            float ws = ref_q8_row(W + (long)o * in, in, qw);
            int64_t acc = 0;
            for (int i = 0; i < in; i++)
                acc += (int64_t)qx[i] * qw[i];
            volatile float v = (float)acc * (xs * ws);
            y[(long)r * out + o] = b ? v + b[o] : v;
        }
    }
    free(qx), free(qw);
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
