/* Tokenizer throughput: Marian encode (and decode) over text files, one sentence a line.
 *
 *   bench_tokenizer [MODEL_DIR] [FILE...]
 *
 * Defaults: models/tiny and the corpus test split as committed in the tokenizer
 * fixtures (tests/fixtures/tokenizer/inputs/test.{en,fr}.txt, no escapes in them).
 * One warm-up pass, then passes until at least 2 s have elapsed; prints pieces/s
 * (</s> not counted), lines/s and MB/s for encode, and lines/s for decode.
 * Single-threaded.  Build and run from the repository root (no Makefile target):
 *   cc -O2 -march=native -std=c11 -D_GNU_SOURCE -Iengine bench/bench_tokenizer.c engine/tokenizer/tokenizer.c \
 *      engine/tokenizer/spm.c engine/tokenizer/spm_norm.c engine/tokenizer/spm_proto.c engine/tokenizer/vocab.c engine/util/strmap.c engine/util/strbuf.c \
 *      engine/util/utf8.c engine/util/status.c $(pkg-config --cflags --libs jansson) -o build/bench_tokenizer
 *   build/bench_tokenizer [MODEL_DIR] [FILE...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer/tokenizer.h"
#include "bench_util.h"

typedef struct {
    char  **line;
    size_t *len;
    int     n, cap;
    size_t  bytes;
} corpus;

static int read_lines(const char *path, corpus *c)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&buf, &cap, f)) >= 0) {
        size_t n = (size_t)got;
        if (n && buf[n - 1] == '\n')
            n--;
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 4096;
            c->line = realloc(c->line, (size_t)c->cap * sizeof *c->line);
            c->len = realloc(c->len, (size_t)c->cap * sizeof *c->len);
            if (!c->line || !c->len)
                return -1;
        }
        c->line[c->n] = malloc(n + 1);
        if (!c->line[c->n])
            return -1;
        memcpy(c->line[c->n], buf, n);
        c->line[c->n][n] = '\0';
        c->len[c->n++] = n;
        c->bytes += n;
    }
    free(buf);
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "models/tiny";
    static const char *dflt[] = { "tests/fixtures/tokenizer/inputs/test.en.txt",
                                  "tests/fixtures/tokenizer/inputs/test.fr.txt" };
    corpus c = { 0 };
    int nfiles = argc > 2 ? argc - 2 : 2;
    for (int i = 0; i < nfiles; i++)
        if (read_lines(argc > 2 ? argv[2 + i] : dflt[i], &c))
            return 1;
    mt_tokenizer *tok;
    mt_err err;
    double t0 = bench_now();
    if (mt_tokenizer_load(dir, &tok, &err) != MT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double t_load = bench_now() - t0;

    enum { MAX_IDS = 8192 };
    int32_t *ids = malloc(MAX_IDS * sizeof *ids);
    long pieces = 0, passes = 0;
    double t_enc = 0;
    for (int pass = -1; pass < 1 || t_enc < 2.0; pass++) {   /* pass -1: warm-up */
        long pc = 0;
        t0 = bench_now();
        for (int i = 0; i < c.n; i++) {
            int n;
            if (mt_tokenizer_encode(tok, c.line[i], c.len[i], 0, ids, MAX_IDS, &n, &err) != MT_OK) {
                fprintf(stderr, "line %d: %s\n", i + 1, err.msg);
                return 1;
            }
            pc += n - 1;
        }
        if (pass >= 0) {
            t_enc += bench_now() - t0;
            pieces += pc;
            passes++;
        }
    }

    /* decode: ids of every line once, then decode passes */
    int32_t **all = malloc((size_t)c.n * sizeof *all);
    int *all_n = malloc((size_t)c.n * sizeof *all_n);
    for (int i = 0; i < c.n; i++) {
        mt_tokenizer_encode(tok, c.line[i], c.len[i], 0, ids, MAX_IDS, &all_n[i], &err);
        all[i] = malloc((size_t)all_n[i] * sizeof **all);
        memcpy(all[i], ids, (size_t)all_n[i] * sizeof *ids);
    }
    double t_dec = 0;
    long dec_passes = 0;
    for (int pass = -1; pass < 1 || t_dec < 1.0; pass++) {
        t0 = bench_now();
        for (int i = 0; i < c.n; i++) {
            char *text;
            if (mt_tokenizer_decode(tok, all[i], all_n[i], &text, &err) != MT_OK) {
                fprintf(stderr, "decode line %d: %s\n", i + 1, err.msg);
                return 1;
            }
            free(text);
        }
        if (pass >= 0) {
            t_dec += bench_now() - t0;
            dec_passes++;
        }
    }

    printf("model %s: loaded in %.1f ms; %d lines, %.2f MB, %.1f pieces/line\n", dir, 1e3 * t_load, c.n,
           (double)c.bytes / 1e6, (double)pieces / (double)passes / c.n);
    printf("encode: %.0f tokens/s, %.0f lines/s, %.1f MB/s (%ld passes, %.2f s)\n", (double)pieces / t_enc,
           (double)passes * c.n / t_enc, (double)passes * (double)c.bytes / 1e6 / t_enc, passes, t_enc);
    printf("decode: %.0f tokens/s, %.0f lines/s (%ld passes, %.2f s)\n",
           (double)dec_passes * (double)pieces / (double)passes / t_dec, (double)dec_passes * c.n / t_dec,
           dec_passes, t_dec);

    for (int i = 0; i < c.n; i++) {
        free(c.line[i]);
        free(all[i]);
    }
    free(all);
    free(all_n);
    free(c.line);
    free(c.len);
    free(ids);
    mt_tokenizer_free(tok);
    return 0;
}
