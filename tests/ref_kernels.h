/* ref_kernels.h: naive scalar versions of some kernels of engine/kernels/kernels.h,
 * the references of tests/test_kernels.c (same arguments as the mt_k_*
 * function each one mirrors; the linear takes W unpacked, [out][in]). */
#ifndef MT_REF_KERNELS_H
#define MT_REF_KERNELS_H

#include "kernels/kernels.h"

void mt_ref_linear(const float *x, int n, int in, const float *W, const float *b, int out, float *y);
/* INT8 weights and inputs, quantized per row (kernels.h mt_k_linear_q8), no activation */
void mt_ref_linear_q8(const float *x, int n, int in, const float *W, const float *b, int out, float *y);
void mt_ref_add_layernorm(float *x, const float *h, int rows, int d, const float *g, const float *b);
void mt_ref_softmax(float *x, int n, int ld);
void mt_ref_activation(float *x, long n, mt_act act);

#endif
