/* cmd_shortlist.c: `mtserve shortlist`: a lexical shortlist from a parallel
 * corpus (line i of --source translates to line i of --target), by
 * co-occurrence counts (mt_shortlist_build), written in Marian's binary
 * format (lex.s2t.bin, what Bergamot ships) or its text table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "mt.h"
#include "util/check.h"

#define MAX_LINE_IDS 1024

typedef struct {
    const char *model, *source, *target, *out;
    int best, frequent, min_count, text;
    long max_lines;
} options;

static void usage(FILE *f)
{
    fprintf(f, "usage: mtserve shortlist --model DIR --source FILE --target FILE --out FILE\n"
               "                         [--best N] [--frequent N] [--min-count N] [--max-lines N] [--text]\n"
               "  a lexical shortlist from a parallel corpus (line i of --source translates to line i of\n"
               "  --target): each source piece keeps the --best (50) target pieces of highest Dice\n"
               "  coefficient over the sentence pairs; ids 0..--frequent-1 (100) always allowed; pairs\n"
               "  seen fewer than --min-count (1) times dropped.  Written in Marian's binary format\n"
               "  (what `mtserve serve --shortlist` and Marian/Bergamot read), or its text table with --text.\n");
}

static int int_arg(const char *flag, const char *v, int lo, int hi, int *out)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || x < lo || x > hi) {
        fprintf(stderr, "mtserve shortlist: %s wants an integer in [%d, %d]\n", flag, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.best = 50, .frequent = 100, .min_count = 1, .max_lines = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout), 1;
        if (!strcmp(a, "--text")) {
            o->text = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "mtserve shortlist: %s needs a value\n", a);
            return -1;
        }
        i++;
        if (!strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--source")) o->source = v;
        else if (!strcmp(a, "--target")) o->target = v;
        else if (!strcmp(a, "--out")) o->out = v;
        else if (!strcmp(a, "--best")) { if (int_arg(a, v, 1, 100000, &o->best)) return -1; }
        else if (!strcmp(a, "--frequent")) { if (int_arg(a, v, 0, 1000000, &o->frequent)) return -1; }
        else if (!strcmp(a, "--min-count")) { if (int_arg(a, v, 1, 1000000, &o->min_count)) return -1; }
        else if (!strcmp(a, "--max-lines")) { if (int_arg(a, v, 1, 100000000, &n)) return -1; o->max_lines = n; }
        else {
            fprintf(stderr, "mtserve shortlist: unknown option '%s'\n", a);
            usage(stderr);
            return -1;
        }
    }
    if (!o->model || !o->source || !o->target || !o->out) {
        usage(stderr);
        return -1;
    }
    return 0;
}

typedef struct { int32_t **ids; int *len; long n; size_t cap; } corpus_side;

/* Every line of path encoded (target: the target side); a line too long for
 * MAX_LINE_IDS ids keeps its first ones. */
static int read_side(const mt_tokenizer *tok, const char *path, int target, long max_lines, corpus_side *c)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "mtserve shortlist: cannot open %s\n", path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int32_t ids[MAX_LINE_IDS];
    int rc = 0;
    while ((max_lines < 0 || c->n < max_lines) && (got = getline(&line, &cap, f)) >= 0) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
            line[--got] = 0;
        int n = 0;
        mt_err err = {0};
        mt_status st = mt_tokenizer_encode(tok, line, (size_t)got, target, ids, MAX_LINE_IDS, &n, &err);
        if (st == MT_ERR_TOO_LONG)
            n = MAX_LINE_IDS;
        else if (st != MT_OK) {
            fprintf(stderr, "mtserve shortlist: %s line %ld: %s\n", path, c->n + 1, err.msg);
            rc = -1;
            break;
        }
        size_t cap_ids = c->cap, cap_len = c->cap;     /* one capacity: both grow, or it stays */
        if (mt_grow(&c->ids, &cap_ids, (size_t)c->n + 1, sizeof *c->ids, 4096) ||
            mt_grow(&c->len, &cap_len, (size_t)c->n + 1, sizeof *c->len, 4096)) {
            rc = -1;
            break;
        }
        c->cap = cap_ids;
        c->ids[c->n] = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
        if (!c->ids[c->n]) {
            rc = -1;
            break;
        }
        memcpy(c->ids[c->n], ids, sizeof(int32_t) * (size_t)n);
        c->len[c->n++] = n;
    }
    free(line);
    fclose(f);
    return rc;
}

static void side_free(corpus_side *c)
{
    for (long i = 0; i < c->n; i++)
        free(c->ids[i]);
    free(c->ids);
    free(c->len);
}

static int write_text(const mt_model *m, const mt_shortlist *sl, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const mt_tokenizer *tok = mt_model_tokenizer(m);
    for (int w = 0; w < mt_model_get_info(m)->src_vocab_size; w++) {
        int k;
        const int32_t *l = mt_shortlist_list(sl, w, &k);
        for (int j = 0; j < k; j++)      /* Marian's text table: target source probability (rank-based here) */
            fprintf(f, "%s %s %.6f\n", mt_tokenizer_piece(tok, l[j]), mt_tokenizer_piece(tok, w), 1.0 / (j + 1));
    }
    return fclose(f) == 0 ? 0 : -1;
}

int mt_cmd_shortlist(int argc, char **argv)
{
    options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : 2;
    mt_model *m = NULL;
    mt_err err = {0};
    if (mt_model_load_card(o.model, &m, &err) != MT_OK) {
        fprintf(stderr, "mtserve shortlist: %s\n", err.msg);
        return 1;
    }
    corpus_side src = {0}, tgt = {0};
    if (read_side(mt_model_tokenizer(m), o.source, 0, o.max_lines, &src) ||
        read_side(mt_model_tokenizer(m), o.target, 1, o.max_lines, &tgt)) {
        rc = 1;
    } else if (src.n != tgt.n) {
        fprintf(stderr, "mtserve shortlist: %s has %ld lines, %s %ld\n", o.source, src.n, o.target, tgt.n);
        rc = 1;
    } else {
        mt_shortlist_params p = mt_shortlist_default_params();
        p.best = o.best;
        p.frequent = o.frequent;
        mt_shortlist *sl = NULL;
        mt_status st = mt_shortlist_build(m, (int)src.n, (const int32_t *const *)src.ids, src.len,
                                          (const int32_t *const *)tgt.ids, tgt.len, &p, o.min_count, &sl, &err);
        if (st == MT_OK && o.text && write_text(m, sl, o.out) != 0)
            st = mt_err_set(&err, MT_ERR_IO, "cannot write %s", o.out);
        else if (st == MT_OK && !o.text)
            st = mt_shortlist_write(sl, o.out, &err);
        if (st != MT_OK) {
            fprintf(stderr, "mtserve shortlist: %s\n", err.msg);
            rc = 1;
        } else {
            const mt_shortlist_info *in = mt_shortlist_get_info(sl);
            fprintf(stderr, "mtserve shortlist: %ld sentence pairs -> %s: %d source pieces, %ld entries (at most "
                    "%d each), %d frequent\n", src.n, o.out, in->src_words, in->entries, in->max_list, in->frequent);
        }
        mt_shortlist_free(sl);
    }
    side_free(&src);
    side_free(&tgt);
    mt_model_free(m);
    return rc;
}
