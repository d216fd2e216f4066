/* bench_attention: a decode step's attention over the K/V caches of R rows in
 * flight, alone, in the session's layout (issue 32: why the attention per token
 * grows with the rows a step holds).
 *
 *   build/bench/bench_attention [--d 256] [--heads 4] [--layers 3] [--nk 31]
 *                               [--rows 4,8,16,32,64,128] [--kv f32|f16] [--keys 20000000]
 *
 * Per step and layer, every row attends one query over nk cached positions of
 * its own self cache ([layer][slot][max_tgt][2d], as decoder.c) and nk of its
 * own source's cross cache; one thread.  Each R runs as many steps as make
 * --keys keys in all, so every line does the same work: ns per key and the
 * cache bytes read per second tell whether the step's caches (R x layers x 2 x
 * nk x 2d elements) still come from cache.
 */
#include "kernels/kernels.h"
#include "bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
    int d = 256, heads = 4, layers = 3, nk = 31, max_tgt = 256, max_src = 512, f16 = 0, huge = 0;
    long keys = 20000000;
    const char *rows_list = "4,8,16,32,64,128";
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--d")) d = atoi(v);
        else if (!strcmp(a, "--heads")) heads = atoi(v);
        else if (!strcmp(a, "--layers")) layers = atoi(v);
        else if (!strcmp(a, "--nk")) nk = atoi(v);
        else if (!strcmp(a, "--rows")) rows_list = v;
        else if (!strcmp(a, "--kv")) f16 = !strcmp(v, "f16");
        else if (!strcmp(a, "--keys")) keys = atol(v);
        else if (!strcmp(a, "--huge")) huge = atoi(v);
        else {
            fprintf(stderr, "bench_attention: unknown option %s\n", a);
            return 2;
        }
    }
    int hd = d / heads, max_rows = 0;
    for (const char *p = rows_list; *p;) {
        int r = (int)strtol(p, (char **)&p, 10);
        max_rows = r > max_rows ? r : max_rows;
        if (*p == ',')
            p++;
    }
    size_t el = f16 ? 2 : 4;
    long self_n = (long)layers * max_rows * max_tgt * 2 * d, cross_n = (long)layers * max_rows * max_src * 2 * d;
    char *self = aligned_alloc(1 << 21, ((size_t)self_n * el + (1 << 21) - 1) & ~(size_t)((1 << 21) - 1));
    char *cross = aligned_alloc(1 << 21, ((size_t)cross_n * el + (1 << 21) - 1) & ~(size_t)((1 << 21) - 1));
    if (huge) {                         /* 2 MB pages for the caches, to see what the TLB costs */
        madvise(self, (size_t)self_n * el, MADV_HUGEPAGE);
        madvise(cross, (size_t)cross_n * el, MADV_HUGEPAGE);
    }
    float *q = malloc(sizeof(float) * (size_t)max_rows * d), *out = malloc(sizeof(float) * (size_t)max_rows * d);
    float *sc = malloc(sizeof(float) * (size_t)heads * (nk > 1 ? nk : 1));
    float *tmp = malloc(sizeof(float) * 2 * (size_t)d);
    srand(1);
    for (long i = 0; i < (long)max_rows * d; i++)
        q[i] = (float)rand() / RAND_MAX - 0.5f;
    /* fill every cache row a step reads (and only those, as a session touches them) */
    for (int l = 0; l < layers; l++)
        for (int r = 0; r < max_rows; r++)
            for (int t = 0; t < nk; t++) {
                for (int i = 0; i < 2 * d; i++)
                    tmp[i] = (float)rand() / RAND_MAX - 0.5f;
                long so = (((long)l * max_rows + r) * max_tgt + t) * 2 * d;
                long co = ((long)l * max_rows * max_src + (long)r * max_src + t) * 2 * d;
                if (f16) {
                    mt_k_to_f16(tmp, (uint16_t *)self + so, 2L * d);
                    mt_k_to_f16(tmp, (uint16_t *)cross + co, 2L * d);
                } else {
                    memcpy((float *)self + so, tmp, sizeof(float) * 2 * d);
                    memcpy((float *)cross + co, tmp, sizeof(float) * 2 * d);
                }
            }
    float scale = 1.0f / sqrtf((float)hd);
    printf("d %d heads %d layers %d nk %d kv %s: rows, step cache MB, ns per key, cache GB/s\n", d, heads, layers,
           nk, f16 ? "f16" : "f32");
    for (const char *p = rows_list; *p;) {
        int R = (int)strtol(p, (char **)&p, 10);
        if (*p == ',')
            p++;
        long per_step = (long)R * layers * 2 * nk, steps = keys / per_step + 1;
        double t0 = bench_now(), sink = 0;
        for (long s = 0; s < steps; s++)
            for (int l = 0; l < layers; l++)
                for (int c = 0; c < 2; c++)
                    for (int r = 0; r < R; r++) {
                        long off = c ? ((long)l * max_rows * max_src + (long)r * max_src) * 2 * d
                                     : ((long)l * max_rows + r) * max_tgt * 2 * d;
                        const char *base = c ? cross : self;
                        if (f16) {
                            const uint16_t *k = (const uint16_t *)base + off;
                            mt_k_attend_row_f16(q + (long)r * d, k, k + d, 2 * d, nk, heads, hd, scale, sc,
                                                out + (long)r * d);
                        } else {
                            const float *k = (const float *)base + off;
                            mt_k_attend_row(q + (long)r * d, k, k + d, 2 * d, nk, heads, hd, scale, sc,
                                            out + (long)r * d);
                        }
                        sink += out[(long)r * d];
                    }
        double dt = bench_now() - t0, nkeys = (double)steps * per_step;
        double mb = (double)per_step * 2 * d * el / 1e6;
        printf("%4d %8.2f %8.2f %8.2f%s\n", R, mb, 1e9 * dt / nkeys, nkeys * 2 * d * el / dt / 1e9,
               sink == 12345.678 ? "!" : "");
        fflush(stdout);
    }
    free(self), free(cross), free(q), free(out), free(sc), free(tmp);
    return 0;
}
