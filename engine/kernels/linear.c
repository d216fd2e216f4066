/* linear.c: every Linear's product (kernels.h): the weights packed once at
 * load into panels (mt_k_pack), then y = act(x W^T + b) over those panels
 * (mt_k_linear_packed) in AVX-512 / AVX2 registers (simd.h) or the scalar
 * path of a portable build (target_clones), split over the compute pool;
 * a decode step (n <= 2) and an F16 prompt take paths of their own that give
 * the same bits (pk_small, pk_scratch). */
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

/* Two paths beside the row-block tile, chosen by n (mt_k_linear_packed):
 *   n <= 2 (a decode step): PK_SNP panel streams at once over all of k, each
 *     prefetched PK_PF bytes ahead (pk_small).  At batch 1 the product waits on
 *     memory; the prefetches keep more lines in flight than the hardware
 *     prefetcher alone (issue 54: 1 thread streamed F16 weights at ~90 % of the
 *     read loop's bandwidth without them).
 *   F16, n >= PK_SCRATCH_N (a prompt): each k block of PK_SK inputs of a panel
 *     block is converted to F32 once, into a stack scratch (L1 / L2),
 *     and every row block runs the F32 tile on it (pk_scratch), where the tile
 *     converted the halves again for every row block.
 * Both keep each output's FMA chain over k in order: the same bits as the tile. */
#if VW == 16
#define PK_SNP 4          /* n <= 2: 2 x 4 accumulators + 4 panel vectors */
#else
#define PK_SNP 2          /* AVX2: 2 x 2 x 2 accumulators + 4 */
#endif
#ifndef PK_PF
#define PK_PF 1024        /* bytes ahead in each panel stream (measured: 512-2048 alike) */
#endif
#ifndef PK_SK
#define PK_SK 256         /* F16 prompt: inputs a converted block (AVX-512: 3 panels, 48 KB of stack; the
                           pool helpers have 256 KB; 128 measured ~5 % slower, 64 slower again) */
#endif
#define PK_SCRATCH_N (2 * PK_NR)
#define PK_LANES ((PK_NR * PK_NP > 2 * PK_SNP ? PK_NR * PK_NP : 2 * PK_SNP) * MT_PANEL)

/* element el of W's panels, F32 or F16 */
static inline const void *pk_at(const mt_packed *W, long el)
{
    return W->f16 ? (const void *)((const uint16_t *)W->data + el) : (const void *)((const float *)W->data + el);
}

/* rows [r0, r0 + nr) x outputs from p0's panel from lane (nr rows of ldl floats,
 * np panels): + b and the activation, only outputs < out (a ragged panel, GELU) */
static inline void pk_lanes(const float *lane, int ldl, const float *b, float *y, int out, int r0, int nr, int p0,
                            int np, mt_act act)
{
    int o0 = p0 * MT_PANEL, no = np * MT_PANEL < out - o0 ? np * MT_PANEL : out - o0;
    for (int r = 0; r < nr; r++) {
        float *yr = y + (long)(r0 + r) * out + o0;
        for (int j = 0; j < no; j++)
            yr[j] = act1(b ? lane[r * ldl + j] + b[o0 + j] : lane[r * ldl + j], act);
    }
}

#if VW
/* rows [0, NR) of x (ldx floats apart) times panels [0, NP) of w (panel j at
 * element j * pstride, k-major, MT_PANEL a k) over k in [0, kn):
 * acc[r][j * PV + v], starting from zero (part NULL) or from the partial sums
 * of the earlier k the previous k block stored in part (rows ldy floats
 * apart): the same FMA chain either way.  save (a k block before the last):
 * the sums stored there as partial sums, rows ldy apart, from the registers
 * (a copy of acc after the loop became a rep movs per row).  keep (F16): the
 * panel rows as F32 too, panel j's at j * kn * MT_PANEL (pk_scratch). */
static inline __attribute__((always_inline)) void pk_block(const float *x, long ldx, const void *w, long pstride,
                                                           int kn, const float *part, float *save, int ldy,
                                                           float *keep, vf acc[PK_NR][PK_NP * PV], const int NR,
                                                           const int NP, const int F16)
{
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 6
        for (int j = 0; j < NP * PV; j++)
            acc[r][j] = part ? vload(part + (long)r * ldy + j * VW) : vzero();
    for (int k = 0; k < kn; k++) {
        vf wv[PK_NP * PV];
#pragma GCC unroll 3
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 2
            for (int v = 0; v < PV; v++) {
                long at = j * pstride + (long)k * MT_PANEL + v * VW;
                wv[j * PV + v] = F16 ? vload16((const uint16_t *)w + at) : vload((const float *)w + at);
                if (keep)
                    vstore(keep + ((long)j * kn + k) * MT_PANEL + v * VW, wv[j * PV + v]);
            }
#pragma GCC unroll 8
        for (int r = 0; r < NR; r++) {
            vf xb = vset1(x[(long)r * ldx + k]);
#pragma GCC unroll 6
            for (int j = 0; j < NP * PV; j++)
                acc[r][j] = vfma(xb, wv[j], acc[r][j]);
        }
    }
    if (save)
#pragma GCC unroll 8
        for (int r = 0; r < NR; r++)
#pragma GCC unroll 6
            for (int j = 0; j < NP * PV; j++)
                vstore(save + (long)r * ldy + j * VW, acc[r][j]);
}

/* NR <= 2 rows of x (in floats apart) times panels [0, NP) of w over all of
 * k: pk_block's FMA chains, each panel stream prefetched PK_PF bytes ahead
 * once a cache line (the address in integers: past the last panel's end a
 * prefetch touches nothing and never faults). */
static inline __attribute__((always_inline)) void pk_small_block(const float *x, int in, const void *w, long pstride,
                                                                 vf acc[2][PK_SNP * PV], const int NR, const int NP,
                                                                 const int F16)
{
    const int esz = F16 ? 2 : 4, line = 64 / (MT_PANEL * esz) > 0 ? 64 / (MT_PANEL * esz) : 1;
    const long ahead = PK_PF;
#pragma GCC unroll 2
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 8
        for (int j = 0; j < NP * PV; j++)
            acc[r][j] = vzero();
    for (int k = 0; k < in; k++) {
        vf wv[PK_SNP * PV];
        if (k % line == 0)
#pragma GCC unroll 4
            for (int j = 0; j < NP; j++)
                __builtin_prefetch((const void *)((uintptr_t)w + (uintptr_t)((j * pstride + (long)k * MT_PANEL) * esz + ahead)));
#pragma GCC unroll 4
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 2
            for (int v = 0; v < PV; v++) {
                long at = j * pstride + (long)k * MT_PANEL + v * VW;
                wv[j * PV + v] = F16 ? vload16((const uint16_t *)w + at) : vload((const float *)w + at);
            }
#pragma GCC unroll 2
        for (int r = 0; r < NR; r++) {
            vf xb = vset1(x[(long)r * in + k]);
#pragma GCC unroll 8
            for (int j = 0; j < NP * PV; j++)
                acc[r][j] = vfma(xb, wv[j], acc[r][j]);
        }
    }
}

/* a tile's sums over all of k (acc: nr rows of lda vectors, np panels from
 * p0) into y: + b and the activation */
static inline __attribute__((always_inline)) void pk_out(const vf *acc, int lda, const float *b, float *y, int out,
                                                         int r0, int nr, int p0, int np, mt_act act)
{
    int o0 = p0 * MT_PANEL;
    if (act != MT_ACT_GELU && o0 + np * MT_PANEL <= out) {
        /* whole panels: + b and the activation in vectors, straight to y */
        for (int r = 0; r < nr; r++) {
            float *yr = y + (long)(r0 + r) * out + o0;
            for (int j = 0; j < np * PV; j++) {
                vf v = b ? vadd(acc[r * lda + j], vload(b + o0 + j * VW)) : acc[r * lda + j];
                vstore(yr + j * VW, act == MT_ACT_SWISH ? vswish(v) : act == MT_ACT_RELU ? vrelu(v) : v);
            }
        }
        return;
    }
    float lane[PK_LANES];
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np * PV; j++)
            vstore(lane + (r * np * PV + j) * VW, acc[r * lda + j]);
    pk_lanes(lane, np * MT_PANEL, b, y, out, r0, nr, p0, np, act);
}
#endif

/* rows [r0, r0 + nr) x panels [p0, p0 + np) over k in [k0, k1) into y (only
 * outputs < out); w: panel p0 at input k0, panels pstride elements apart (the
 * packed weights, or pk_scratch's F32 copy of a k block).  A k block before
 * the last (k1 < in; whole panels only: the caller's rule) leaves its partial
 * sums in y for the next; the last adds b and the activation. */
static inline __attribute__((always_inline)) void pk_tile(const float *x, int in, int out, const void *w, long pstride,
                                                          const float *b, float *y, int r0, int nr, int p0, int np,
                                                          int k0, int k1, mt_act act, const int F16)
{
    const float *xr = x + (long)r0 * in + k0;
#if VW
    vf acc[PK_NR][PK_NP * PV];
    float *yt = y + (long)r0 * out + p0 * MT_PANEL, *part = k0 > 0 ? yt : NULL, *save = k1 < in ? yt : NULL;
    /* every (rows, panels) shape up to the block, each compiled with constant trip counts */
#define CASE(NR, NP)                                                                                 \
    case (NR) * 8 + (NP):                                                                            \
        if ((NR) <= PK_NR && (NP) <= PK_NP)                                                          \
            pk_block(xr, in, w, pstride, k1 - k0, part, save, out, NULL, acc, (NR) <= PK_NR ? (NR) : 1, \
                     (NP) <= PK_NP ? (NP) : 1, F16);                                                 \
        break
#define CASES(NR) CASE(NR, 1); CASE(NR, 2); CASE(NR, 3); CASE(NR, 4)
    switch (nr * 8 + np) {
    CASES(1); CASES(2); CASES(3); CASES(4); CASES(5); CASES(6); CASES(7); CASES(8);
    }
#undef CASES
#undef CASE
    if (!save)
        pk_out(&acc[0][0], PK_NP * PV, b, y, out, r0, nr, p0, np, act);
#else
    /* Portable build (no FMA instruction: fmaf would be a libm call): a panel
     * row at a time into 16 sums the compiler keeps in SSE registers; one
     * fixed order per output, as in the vector paths (all of k: k0 == 0). */
    float lane[PK_LANES];
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np; j++) {
            float t[MT_PANEL] = {0};
            const float *xk = xr + (long)r * in;
            long at = j * pstride;
            for (int k = 0; k < k1 - k0; k++, at += MT_PANEL) {
                float xv = xk[k];
                if (F16)
                    for (int u = 0; u < MT_PANEL; u++)
                        t[u] += xv * mt_f16_to_f32(((const uint16_t *)w)[at + u]);
                else
                    for (int u = 0; u < MT_PANEL; u++)
                        t[u] += xv * ((const float *)w)[at + u];
            }
            memcpy(lane + (r * np + j) * MT_PANEL, t, sizeof t);
        }
    pk_lanes(lane, np * MT_PANEL, b, y, out, r0, nr, p0, np, act);
#endif
}

#if VW
/* n <= 2 rows over panels [p_lo, p_hi), PK_SNP at a time, all of k at once */
static void pk_small(const float *x, int n, const mt_packed *W, const float *b, float *y, int p_lo, int p_hi,
                     mt_act act)
{
    int in = W->in;
    long ps = (long)in * MT_PANEL;
    vf acc[2][PK_SNP * PV];
    for (int p = p_lo; p < p_hi; p += PK_SNP) {
        int np = p_hi - p < PK_SNP ? p_hi - p : PK_SNP;
        const void *w = pk_at(W, p * ps);
#define SCASE(NR, NP)                                                                                \
    case (NR) * 8 + (NP):                                                                            \
        if ((NP) <= PK_SNP) {                                                                        \
            if (W->f16)                                                                              \
                pk_small_block(x, in, w, ps, acc, NR, (NP) <= PK_SNP ? (NP) : 1, 1);                 \
            else                                                                                     \
                pk_small_block(x, in, w, ps, acc, NR, (NP) <= PK_SNP ? (NP) : 1, 0);                 \
        }                                                                                            \
        break
        switch (n * 8 + np) {
        SCASE(1, 1); SCASE(1, 2); SCASE(1, 3); SCASE(1, 4); SCASE(2, 1); SCASE(2, 2); SCASE(2, 3); SCASE(2, 4);
        }
#undef SCASE
        pk_out(&acc[0][0], PK_SNP * PV, b, y, W->out, 0, n, p, np, act);
    }
}

/* pk_scratch's first row block (PK_NR rows) over k in [k0, k1) of np whole
 * panels from p (h: their halves at k0): the tile on the halves, keeping
 * their F32 values in sc as it goes (the loads from memory overlap the FMAs,
 * as in the tile; a separate conversion pass waited on them) */
static inline void pk_keep_tile(const float *x, int in, int out, const uint16_t *h, long ps, float *sc,
                                const float *b, float *y, int p, int np, int k0, int k1, mt_act act)
{
    vf acc[PK_NR][PK_NP * PV];
    float *yt = y + p * MT_PANEL, *part = k0 > 0 ? yt : NULL, *save = k1 < in ? yt : NULL;
    if (np == 1)
        pk_block(x + k0, in, h, ps, k1 - k0, part, save, out, sc, acc, PK_NR, 1, 1);
    else if (np == 2 && PK_NP >= 2)
        pk_block(x + k0, in, h, ps, k1 - k0, part, save, out, sc, acc, PK_NR, PK_NP >= 2 ? 2 : 1, 1);
    else if (PK_NP >= 3)
        pk_block(x + k0, in, h, ps, k1 - k0, part, save, out, sc, acc, PK_NR, PK_NP >= 3 ? 3 : 1, 1);
    if (!save)
        pk_out(&acc[0][0], PK_NP * PV, b, y, out, 0, PK_NR, p, np, act);
}

/* F16, n >= PK_SCRATCH_N rows over panels [p_lo, p_hi): each k block of PK_SK
 * inputs of a panel block converted once into sc (panel j's block at j * kn *
 * MT_PANEL floats) by its first row block, every other row block's F32 tile
 * over it.  A block with a ragged last panel (its partial sums would have no
 * place in y) takes the tile on the halves, all of k at once. */
static void pk_scratch(const float *x, int n, const mt_packed *W, const float *b, float *y, int p_lo, int p_hi,
                       mt_act act)
{
    int in = W->in, out = W->out;
    long ps = (long)in * MT_PANEL;
    float sc[PK_NP * PK_SK * MT_PANEL] __attribute__((aligned(64)));
    for (int p = p_lo; p < p_hi; p += PK_NP) {
        int np = p_hi - p < PK_NP ? p_hi - p : PK_NP;
        const uint16_t *h = (const uint16_t *)W->data + p * ps;
        if ((p + np) * MT_PANEL > out) {
            for (int r = 0; r < n; r += PK_NR)
                pk_tile(x, in, out, h, ps, b, y, r, n - r < PK_NR ? n - r : PK_NR, p, np, 0, in, act, 1);
            continue;
        }
        for (int k0 = 0; k0 < in; k0 += PK_SK) {
            int kn = in - k0 < PK_SK ? in - k0 : PK_SK;
            pk_keep_tile(x, in, out, h + (long)k0 * MT_PANEL, ps, sc, b, y, p, np, k0, k0 + kn, act);
            for (int r = PK_NR; r < n; r += PK_NR)
                pk_tile(x, in, out, sc, (long)kn * MT_PANEL, b, y, r, n - r < PK_NR ? n - r : PK_NR, p, np, k0,
                        k0 + kn, act, 0);
        }
    }
}
#endif

/* panels [p_lo, p_hi) of all n rows: pk_small or pk_scratch where they apply
 * (generic: neither), else the tile: one panel block, then each k block of it
 * (W->kc inputs: the block's panels stay in the L2 while every row block passes
 * over them, mt_k_block_k), every row block over it.  A ragged last panel takes
 * its whole k at once (its partial sums would have no place in y).
 * A portable build (no vector ISA at compile time) still gets vectors: GCC
 * compiles this loop nest again for AVX-512 and AVX2 and picks one at load
 * (MULTIVERSION, simd.h); the portable path's 16-wide sums vectorize (it
 * takes every k at once). */
MULTIVERSION
static void pk_range(const float *x, int n, const mt_packed *W, const float *b, float *y, int p_lo, int p_hi,
                     mt_act act, int generic)
{
    int in = W->in;
#if VW
    if (!generic && n <= 2) {
        pk_small(x, n, W, b, y, p_lo, p_hi, act);
        return;
    }
    if (!generic && W->f16 && n >= PK_SCRATCH_N) {
        pk_scratch(x, n, W, b, y, p_lo, p_hi, act);
        return;
    }
#endif
    long ps = (long)in * MT_PANEL;
    int kc = VW && W->kc > 0 && W->kc < in ? W->kc : in;
    for (int p = p_lo; p < p_hi; p += PK_NP) {
        int np = p_hi - p < PK_NP ? p_hi - p : PK_NP;
        int step = (p + np) * MT_PANEL <= W->out ? kc : in;
        for (int k0 = 0; k0 < in; k0 += step) {
            int k1 = in - k0 < step ? in : k0 + step;
            const void *w = pk_at(W, p * ps + (long)k0 * MT_PANEL);
            for (int r = 0; r < n; r += PK_NR) {
                int nr = n - r < PK_NR ? n - r : PK_NR;
                if (W->f16)
                    pk_tile(x, in, W->out, w, ps, b, y, r, nr, p, np, k0, k1, act, 1);
                else
                    pk_tile(x, in, W->out, w, ps, b, y, r, nr, p, np, k0, k1, act, 0);
            }
        }
    }
}

typedef struct {
    const float *x, *b;
    const mt_packed *W;
    float *y;
    int n, per;               /* panels per chunk, a multiple of PK_NP */
    int generic;
    mt_act act;
} pk_job;

static void pk_chunk(void *ctx, int c)
{
    const pk_job *j = ctx;
    int np = (j->W->out + MT_PANEL - 1) / MT_PANEL, lo = c * j->per, hi = lo + j->per < np ? lo + j->per : np;
    pk_range(j->x, j->n, j->W, j->b, j->y, lo, hi, j->act, j->generic);
}

static void linear_packed(const float *x, int n, const mt_packed *W, const float *b, float *y, mt_act act,
                          int generic)
{
    int threads = mt_par_threads(), np = (W->out + MT_PANEL - 1) / MT_PANEL;
    long work = (long)n * W->in * W->out;
    int chunks = threads < 2 ? 1 : (int)(work / CHUNK_MIN_WORK);
    if (chunks > 4 * threads)
        chunks = 4 * threads;                 /* a few per thread: balance without overhead */
    if (chunks <= 1) {
        pk_range(x, n, W, b, y, 0, np, act, generic);
        return;
    }
    int per = (np + chunks - 1) / chunks;
    per = (per + PK_NP - 1) / PK_NP * PK_NP;
    pk_job j = {.x = x, .b = b, .W = W, .y = y, .n = n, .per = per, .generic = generic, .act = act};
    mt_par_for((np + per - 1) / per, pk_chunk, &j);
}

void mt_k_linear_packed(const float *x, int n, const mt_packed *W, const float *b, float *y, mt_act act)
{
    linear_packed(x, n, W, b, y, act, 0);
}

void mt_k_linear_packed_generic(const float *x, int n, const mt_packed *W, const float *b, float *y, mt_act act)
{
    linear_packed(x, n, W, b, y, act, 1);
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
