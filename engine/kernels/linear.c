/* linear.c: every Linear's product (kernels.h): the weights packed once at
 * load into panels (mt_k_pack), then y = act(x W^T + b) over those panels
 * (mt_k_linear_packed) in AVX-512 / AVX2 registers (simd.h) or the scalar
 * path of a portable build (target_clones), split over the compute pool. */
#include "kernels.h"
#include "parallel.h"
#include "formats/safetensors.h"
#include "simd.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHUNK_MIN_WORK (32 * 1024)   /* multiply-adds: a chunk is worth a few microseconds */

/* ---- packed weights: every Linear ------------------------------------------------------
 * Weights are repacked once at load (model.c) into panels of MT_PANEL outputs,
 * each panel [in][MT_PANEL] (k-major), F32 or F16.  The product then needs no
 * horizontal sums: a block of NR rows x NP panels keeps NR*NP vector
 * accumulators, and each k adds x[r][k] (broadcast) times one panel row.
 * Panels stream sequentially from memory (what the hardware prefetcher
 * wants at batch 1) and stay in cache while every row block passes over
 * them (what a batch wants).
 *
 * y[r][o] = (FMA chain over k = 0..in-1, from 0) + b[o], then the activation:
 * one fixed order whatever n, the block or the thread, so a row's result is
 * bit-identical in any batch. */
#if VW == 16
#ifndef PK_NR
#define PK_NR 8           /* rows per block: 8 x 3 accumulators + 3 panel vectors */
#define PK_NP 3           /* panels per block */
#endif
#else
#define PK_NR 4           /* AVX2 (16 registers): 4 x 2 accumulators + 2; or scalar */
#define PK_NP 1
#endif
#define PV (MT_PANEL / (VW ? VW : MT_PANEL))   /* vectors per panel row */

size_t mt_k_packed_bytes(int in, int out, int f16)
{
    return (size_t)((out + MT_PANEL - 1) / MT_PANEL) * (size_t)in * MT_PANEL * (f16 ? 2 : 4);
}

long mt_k_l2_bytes(void)
{
    long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (v <= 0) {
        FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index2/size", "r");
        char unit = 'K';
        if (f && fscanf(f, "%ld%c", &v, &unit) >= 1)
            v *= unit == 'M' ? 1L << 20 : unit == 'K' ? 1L << 10 : 1;
        if (f)
            fclose(f);
    }
    return v >= (64L << 10) && v <= (256L << 20) ? v : 256L << 10;
}

int mt_k_block_k(int in, int f16, long l2_bytes)
{
    /* per input k: PK_NP panel rows of weights and PK_NR floats of the row block */
    long per_k = (long)PK_NP * MT_PANEL * (f16 ? 2 : 4) + (long)PK_NR * sizeof(float);
    long fit = l2_bytes / 2 / per_k;
    if (!VW || fit >= in)
        return 0;
    long blocks = (in + fit - 1) / (fit > 16 ? fit : 16);
    long kc = (in + blocks - 1) / blocks;               /* equal blocks, each a whole cache line of x */
    kc = (kc + 15) / 16 * 16;
    return kc < in ? (int)kc : 0;
}

void mt_k_pack(const float *W, int in, int out, int f16, void *dst)
{
    int np = (out + MT_PANEL - 1) / MT_PANEL;
    for (int p = 0; p < np; p++)
        for (int k = 0; k < in; k++)
            for (int j = 0; j < MT_PANEL; j++) {
                int o = p * MT_PANEL + j;
                float v = o < out ? W[(long)o * in + k] : 0.0f;          /* the last panel is zero-padded */
                long at = ((long)p * in + k) * MT_PANEL + j;
                if (f16)
                    ((uint16_t *)dst)[at] = mt_f32_to_f16(v);
                else
                    ((float *)dst)[at] = v;
            }
}

#if VW
/* rows [0, NR) of x times panels [p0, p0 + NP) over k in [k0, k1): acc[r][j * PV + v],
 * starting from zero (k0 == 0) or from the partial sums of k < k0 the previous
 * k block stored in y (rows ldy floats apart): the same FMA chain either way. */
static inline __attribute__((always_inline)) void pk_block(const float *x, int in, const void *Wp, int p0, int k0,
                                                           int k1, const float *part, int ldy,
                                                           vf acc[PK_NR][PK_NP * PV], const int NR, const int NP,
                                                           const int F16)
{
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 6
        for (int j = 0; j < NP * PV; j++)
            acc[r][j] = part ? vload(part + (long)r * ldy + j * VW) : vzero();
    long pstride = (long)in * MT_PANEL;
    for (int k = k0; k < k1; k++) {
        vf w[PK_NP * PV];
#pragma GCC unroll 3
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 2
            for (int v = 0; v < PV; v++) {
                long at = (p0 + j) * pstride + (long)k * MT_PANEL + v * VW;
                w[j * PV + v] = F16 ? vload16((const uint16_t *)Wp + at) : vload((const float *)Wp + at);
            }
#pragma GCC unroll 8
        for (int r = 0; r < NR; r++) {
            vf xb = vset1(x[(long)r * in + k]);
#pragma GCC unroll 6
            for (int j = 0; j < NP * PV; j++)
                acc[r][j] = vfma(xb, w[j], acc[r][j]);
        }
    }
}
#endif

/* rows [r0, r0 + nr) x panels [p0, p0 + np) over k in [k0, k1) into y (only
 * outputs < out).  A k block before the last (k1 < in; whole panels only: the
 * caller's rule) leaves its partial sums in y for the next; the last adds b
 * and the activation. */
static inline __attribute__((always_inline)) void pk_tile(const float *x, const mt_packed *W, const float *b,
                                                          float *y, int r0, int nr, int p0, int np, int k0, int k1,
                                                          mt_act act, const int F16)
{
    int in = W->in, out = W->out;
    const float *xr = x + (long)r0 * in;
    float lane[PK_NR][PK_NP * MT_PANEL];
#if VW
    vf acc[PK_NR][PK_NP * PV];
    float *yt = y + (long)r0 * out + p0 * MT_PANEL;
    const float *part = k0 > 0 ? yt : NULL;
    /* every (rows, panels) shape up to the block, each compiled with constant trip counts */
#define CASE(NR, NP)                                                                   \
    case (NR) * 8 + (NP):                                                              \
        if ((NR) <= PK_NR && (NP) <= PK_NP)                                            \
            pk_block(xr, in, W->data, p0, k0, k1, part, out, acc, (NR) <= PK_NR ? (NR) : 1, \
                     (NP) <= PK_NP ? (NP) : 1, F16);                                   \
        break
#define CASES(NR) CASE(NR, 1); CASE(NR, 2); CASE(NR, 3); CASE(NR, 4)
    switch (nr * 8 + np) {
    CASES(1); CASES(2); CASES(3); CASES(4); CASES(5); CASES(6); CASES(7); CASES(8);
    }
#undef CASES
#undef CASE
    if (k1 < in) {                                      /* a partial sum: exact in y until the next block */
        for (int r = 0; r < nr; r++)
            for (int j = 0; j < np * PV; j++)
                vstore(yt + (long)r * out + j * VW, acc[r][j]);
        return;
    }
    int o0v = p0 * MT_PANEL;
    if (act != MT_ACT_GELU && o0v + np * MT_PANEL <= out) {
        /* whole panels: + b and the activation in vectors, straight to y */
        for (int r = 0; r < nr; r++) {
            float *yr = y + (long)(r0 + r) * out + o0v;
            for (int j = 0; j < np * PV; j++) {
                vf v = b ? vadd(acc[r][j], vload(b + o0v + j * VW)) : acc[r][j];
                vstore(yr + j * VW, act == MT_ACT_SWISH ? vswish(v) : act == MT_ACT_RELU ? vrelu(v) : v);
            }
        }
        return;
    }
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np * PV; j++)
            vstore(lane[r] + j * VW, acc[r][j]);
#else
    /* Portable build (no FMA instruction: fmaf would be a libm call): a panel
     * row at a time into 16 sums the compiler keeps in SSE registers; one
     * fixed order per output, as in the vector paths. */
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np; j++) {
            float t[MT_PANEL] = {0};
            const float *xk = xr + (long)r * in;
            long at = (long)(p0 + j) * in * MT_PANEL;
            for (int k = 0; k < in; k++, at += MT_PANEL) {
                float xv = xk[k];
                if (F16)
                    for (int u = 0; u < MT_PANEL; u++)
                        t[u] += xv * mt_f16_to_f32(((const uint16_t *)W->data)[at + u]);
                else
                    for (int u = 0; u < MT_PANEL; u++)
                        t[u] += xv * ((const float *)W->data)[at + u];
            }
            memcpy(lane[r] + j * MT_PANEL, t, sizeof t);
        }
#endif
    int o0 = p0 * MT_PANEL, no = np * MT_PANEL < out - o0 ? np * MT_PANEL : out - o0;
    for (int r = 0; r < nr; r++) {
        float *yr = y + (long)(r0 + r) * out + o0;
        for (int j = 0; j < no; j++)
            yr[j] = act1(b ? lane[r][j] + b[o0 + j] : lane[r][j], act);
    }
}

/* panels [p_lo, p_hi) of all n rows: one panel block, then each k block of it
 * (W->kc inputs: the block's panels stay in the L2 while every row block passes
 * over them, mt_k_block_k), every row block over it.  A ragged last panel takes
 * its whole k at once (its partial sums would have no place in y).
 * A portable build (no vector ISA at compile time) still gets vectors: GCC
 * compiles this loop nest again for AVX-512 and AVX2 and picks one at load
 * (MULTIVERSION, simd.h); the portable path's 16-wide sums vectorize (it
 * takes every k at once). */
MULTIVERSION
static void pk_range(const float *x, int n, const mt_packed *W, const float *b, float *y, int p_lo, int p_hi,
                     mt_act act)
{
    int in = W->in;
    int kc = VW && W->kc > 0 && W->kc < in ? W->kc : in;
    for (int p = p_lo; p < p_hi; p += PK_NP) {
        int np = p_hi - p < PK_NP ? p_hi - p : PK_NP;
        int step = (p + np) * MT_PANEL <= W->out ? kc : in;
        for (int k0 = 0; k0 < in; k0 += step) {
            int k1 = in - k0 < step ? in : k0 + step;
            for (int r = 0; r < n; r += PK_NR) {
                int nr = n - r < PK_NR ? n - r : PK_NR;
                if (W->f16)
                    pk_tile(x, W, b, y, r, nr, p, np, k0, k1, act, 1);
                else
                    pk_tile(x, W, b, y, r, nr, p, np, k0, k1, act, 0);
            }
        }
    }
}

typedef struct {
    const float *x, *b;
    const mt_packed *W;
    float *y;
    int n, per;               /* panels per chunk, a multiple of PK_NP */
    mt_act act;
} pk_job;

static void pk_chunk(void *ctx, int c)
{
    const pk_job *j = ctx;
    int np = (j->W->out + MT_PANEL - 1) / MT_PANEL, lo = c * j->per, hi = lo + j->per < np ? lo + j->per : np;
    pk_range(j->x, j->n, j->W, j->b, j->y, lo, hi, j->act);
}

void mt_k_linear_packed(const float *x, int n, const mt_packed *W, const float *b, float *y, mt_act act)
{
    int threads = mt_par_threads(), np = (W->out + MT_PANEL - 1) / MT_PANEL;
    long work = (long)n * W->in * W->out;
    int chunks = threads < 2 ? 1 : (int)(work / CHUNK_MIN_WORK);
    if (chunks > 4 * threads)
        chunks = 4 * threads;                 /* a few per thread: balance without overhead */
    if (chunks <= 1) {
        pk_range(x, n, W, b, y, 0, np, act);
        return;
    }
    int per = (np + chunks - 1) / chunks;
    per = (per + PK_NP - 1) / PK_NP * PK_NP;
    pk_job j = {.x = x, .b = b, .W = W, .y = y, .n = n, .per = per, .act = act};
    mt_par_for((np + per - 1) / per, pk_chunk, &j);
}

/* ---- a shortlist's outputs (kernels.h) ------------------------------------------------- */
void mt_k_pack_rows(const float *W, int in, const int32_t *ids, int n, int f16, void *dst)
{
    int np = (n + MT_PANEL - 1) / MT_PANEL;
    for (int p = 0; p < np; p++) {
        const float *row[MT_PANEL];
        for (int j = 0; j < MT_PANEL; j++)
            row[j] = p * MT_PANEL + j < n ? W + (long)ids[p * MT_PANEL + j] * in : NULL;
        for (int k = 0; k < in; k++) {
            long at = ((long)p * in + k) * MT_PANEL;
            for (int j = 0; j < MT_PANEL; j++) {
                float v = row[j] ? row[j][k] : 0.0f;
                if (f16)
                    ((uint16_t *)dst)[at + j] = mt_f32_to_f16(v);
                else
                    ((float *)dst)[at + j] = v;
            }
        }
    }
}

void mt_k_pack_select(const mt_packed *src, const int32_t *ids, int n, void *dst, mt_packed *out)
{
    if (src->i8) {
        mt_k_q8_select(src, ids, n, dst, out);
        return;
    }
    int np = (n + MT_PANEL - 1) / MT_PANEL, in = src->in;
    for (int p = 0; p < np; p++)
        for (int j = 0; j < MT_PANEL; j++) {
            int o = p * MT_PANEL + j, id = o < n ? ids[o] : -1;
            long from = id < 0 ? 0 : ((long)(id / MT_PANEL) * in) * MT_PANEL + id % MT_PANEL;
            long to = (long)p * in * MT_PANEL + j;
            if (src->f16) {
                const uint16_t *s = src->data;
                uint16_t *d = dst;
                for (int k = 0; k < in; k++)
                    d[to + (long)k * MT_PANEL] = id < 0 ? 0 : s[from + (long)k * MT_PANEL];
            } else {
                const float *s = src->data;
                float *d = dst;
                for (int k = 0; k < in; k++)
                    d[to + (long)k * MT_PANEL] = id < 0 ? 0.0f : s[from + (long)k * MT_PANEL];
            }
        }
    *out = (mt_packed){.data = dst, .in = in, .out = n, .f16 = src->f16, .kc = src->kc};
}
