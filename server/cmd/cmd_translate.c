/* cmd_translate.c: `mtserve translate`: one sentence per stdin line -> one
 * translation per stdout line, in order, flushed per line.  With --json each
 * output line is {"source_ids", "ids", "pieces", "text", "score"} (and
 * "token_scores", "alignments", "word_alignments" when asked).  Each line
 * goes through the server's translate pipeline (pipeline.h, not split: a
 * line is a sentence), decoded on this thread by the session loop.  The
 * decoding features are POST /translate's: line i (from 0) samples with
 * seed + i. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "mt.h"
#include "translate/pipeline.h"
#include "service/result_json.h"
#include "translate/session_decoder.h"

#define DEFAULT_MODEL "models/en-fr"

typedef struct {
    const char *model;
    int beam, max_length, threads, json, seeded, tab_prefix, kv_f16;
    mt_weights weights;
    mt_decode_params feat;      /* the decoding features */
    const char *prefix;         /* --target-prefix */
} options;

static void usage(FILE *f)
{
    fprintf(f, "usage: mtserve translate [--model DIR] [--beam N] [--max-length N] [--threads N] [--weights f32|f16|int8]\n"
               "                         [--kv-cache f32|f16] [--json]\n"
               "  reads one sentence per line on stdin, writes one translation per line\n"
               "  --model DIR       Marian model directory (default %s)\n"
               "  --beam N          beam size 1-%d (1 = greedy; default: the model's num_beams)\n"
               "  --max-length N    decoder length limit incl. the start token (default: the model's)\n"
               "  --threads N       compute threads (default 1)\n"
               "  --weights f16     hold the weights rounded to half precision (default f32: as loaded)\n"
               "  --weights int8    hold them quantized to int8 per output row (the CPU's int8 kernel)\n"
               "  --kv-cache f16    hold the decoder's key/value caches in half precision (default f32)\n"
               "  --json            one JSON object per line: source_ids, ids, pieces, text, score\n"
               "decoding features (as POST /translate's fields):\n"
               "  --sample          draw each token (beam 1); --temperature X (> 0), --top-k N (0 = all),\n"
               "                    --top-p X (0 < X <= 1), --seed N (line i draws with N + i; default: drawn,\n"
               "                    printed on stderr)\n"
               "  --target-prefix TEXT   every translation starts with TEXT\n"
               "  --tab-prefix      each line is SOURCE<TAB>PREFIX: that line's target prefix\n"
               "  --min-length N  --repetition-penalty X  --no-repeat-ngram-size N  --length-penalty X\n"
               "  --token-scores    (--json) token_scores: log p of each id\n"
               "  --alignments      (--json) alignments [source index, target index] and word_alignments\n"
               "                    (code-point offsets); --alignment-layer N (-1 = last), --alignment-heads N\n"
               "                    (0 = all)\n",
            DEFAULT_MODEL, MT_MAX_BEAM);
}

static int parse_int(const char *opt, const char *v, int lo, int hi, int *out)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || x < lo || x > hi) {
        fprintf(stderr, "mtserve translate: %s needs an integer in [%d, %d]\n", opt, lo, hi);
        return 0;
    }
    *out = (int)x;
    return 1;
}

static int parse_float(const char *opt, const char *v, double lo, double hi, int open_lo, float *out)
{
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || *end || !isfinite(x) || x > hi || (open_lo ? x <= lo : x < lo)) {
        fprintf(stderr, "mtserve translate: %s needs a number in %c%g, %g]\n", opt, open_lo ? '(' : '[', lo, hi);
        return 0;
    }
    *out = (float)x;
    return 1;
}

/* The decoding features' options: 1 taken (*i advanced past a value), 0 not one of them, -1 invalid. */
static int parse_feature(const char *a, const char *v, int *i, options *o)
{
    mt_decode_params *f = &o->feat;
    int ok = 1;
    if (!strcmp(a, "--sample"))
        return f->sample = 1;
    if (!strcmp(a, "--token-scores"))
        return f->token_scores = 1;
    if (!strcmp(a, "--alignments"))
        return f->alignments = 1;
    if (!strcmp(a, "--tab-prefix"))
        return o->tab_prefix = 1;
    if (!strcmp(a, "--temperature"))
        ok = parse_float(a, v, 0, 100, 1, &f->temperature);
    else if (!strcmp(a, "--top-p"))
        ok = parse_float(a, v, 0, 1, 1, &f->top_p);
    else if (!strcmp(a, "--repetition-penalty"))
        ok = parse_float(a, v, 0, 100, 1, &f->repetition_penalty);
    else if (!strcmp(a, "--length-penalty"))
        ok = parse_float(a, v, -10, 10, 0, &f->length_penalty);
    else if (!strcmp(a, "--top-k"))
        ok = parse_int(a, v, 0, 1 << 20, &f->top_k);
    else if (!strcmp(a, "--min-length"))
        ok = parse_int(a, v, 0, 1 << 20, &f->min_length);
    else if (!strcmp(a, "--no-repeat-ngram-size"))
        ok = parse_int(a, v, 0, 1 << 20, &f->no_repeat_ngram_size);
    else if (!strcmp(a, "--alignment-layer"))
        ok = parse_int(a, v, -64, 63, &f->align_layer);
    else if (!strcmp(a, "--alignment-heads"))
        ok = parse_int(a, v, 0, 1024, &f->align_heads);
    else if (!strcmp(a, "--target-prefix") && v)
        o->prefix = v;
    else if (!strcmp(a, "--seed")) {
        char *end;
        unsigned long long x = v ? strtoull(v, &end, 10) : 0;
        if (!v || *end || *v == '-') {
            fprintf(stderr, "mtserve translate: --seed needs a non-negative integer\n");
            return -1;
        }
        f->seed = x;
        o->seeded = 1;
    } else
        return 0;
    (*i)++;
    return ok ? 1 : -1;
}

/* 0 = ok, 1 = exit 0 (help), 2 = usage error */
static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.model = DEFAULT_MODEL, .beam = 0, .max_length = 0, .threads = 1,
                   .feat = mt_decode_default_params()};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = parse_feature(a, v, &i, o);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--model") && v) {
            o->model = v;
            i++;
        } else if (!strcmp(a, "--beam")) {
            if (!parse_int(a, v, 1, MT_MAX_BEAM, &o->beam))
                return 2;
            i++;
        } else if (!strcmp(a, "--max-length")) {
            if (!parse_int(a, v, 2, 1 << 20, &o->max_length))
                return 2;
            i++;
        } else if (!strcmp(a, "--weights") && v && (!strcmp(v, "f32") || !strcmp(v, "f16") || !strcmp(v, "int8"))) {
            o->weights = v[0] == 'i' ? MT_WEIGHTS_I8 : v[1] == '1' ? MT_WEIGHTS_F16 : MT_WEIGHTS_F32;
            i++;
        } else if (!strcmp(a, "--kv-cache") && v && (!strcmp(v, "f32") || !strcmp(v, "f16"))) {
            o->kv_f16 = v[1] == '1';
            i++;
        } else if (!strcmp(a, "--threads")) {
            if (!parse_int(a, v, 1, 256, &o->threads))
                return 2;
            i++;
        } else {
            fprintf(stderr, "mtserve translate: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o->feat.sample && o->beam > 1) {
        fprintf(stderr, "mtserve translate: --sample draws one row: --beam must be 1\n");
        return 2;
    }
    if (o->feat.sample)
        o->beam = 1;
    return 0;
}

static json_t *ids_json(const int32_t *ids, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    return a;
}

static void print_json(const mt_tokenizer *tok, const int32_t *src, int n_src, const mt_hyp *h, const options *opt,
                       const srv_tr_result *r)
{
    json_t *pieces = json_array();
    for (int i = 0; h && i < h->n_ids; i++) {
        const char *p = mt_tokenizer_piece(tok, h->ids[i]);
        json_array_append_new(pieces, json_string(p ? p : ""));
    }
    json_t *o = json_pack("{s:o, s:o, s:o, s:s, s:f}", "source_ids", ids_json(src, n_src), "ids",
                          ids_json(h ? h->ids : NULL, h ? h->n_ids : 0), "pieces", pieces, "text",
                          h && h->text ? h->text : "", "score", h ? (double)h->score : 0.0);
    if (o && r)
        srv_result_features_json(o, r, opt->feat.token_scores, opt->feat.alignments);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    puts(s ? s : "{}");
    free(s);
    json_decref(o);
}

static int only_space(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\v' && *s != '\f')
            return 0;
    return 1;
}

static void decoded(srv_decode_job *job)
{
    (void)job;                      /* the loop runs inline: nothing to wake */
}

/* Through the pipeline: tokenize, decode on s, detokenize; *r the joined result. */
static mt_status translate_text(mt_session *s, const srv_tr_model *tm, const srv_tr_params *tp, const char *line,
                                srv_tr **out, srv_tr_result *r, mt_err *err)
{
    mt_status st = srv_tr_new(tm, &line, 1, tp, out, err);
    if (st != MT_OK)
        return st;
    srv_decode_job *job = srv_tr_job(*out);
    job->done = decoded;
    srv_seqloop_run(s, job);
    if (job->status != MT_OK) {
        *err = job->err;
        return job->status;
    }
    return srv_tr_finish(*out, r, err);
}

/* Translate one line; errors go to stderr and leave an empty output line so
 * the output stays aligned with the input.  Returns 0 on success. */
static int translate_line(mt_session *s, const srv_tr_model *tm, const options *o, const srv_tr_params *tp0,
                          char *line, long lineno)
{
    srv_tr_params tp = *tp0;
    mt_decode_params feat = *tp0->feat;
    srv_prefix prefix = {.text = o->prefix};
    char *tab = o->tab_prefix ? strchr(line, '\t') : NULL;
    if (tab) {                                      /* SOURCE<TAB>PREFIX */
        *tab = 0;
        prefix.text = tab + 1;
    }
    feat.seed += (uint64_t)(lineno - 1);            /* line i draws with seed + i */
    tp.feat = &feat;
    tp.prefix = prefix.text && *prefix.text ? &prefix : NULL;
    if (only_space(line)) {
        if (o->json)
            print_json(tm->tok, NULL, 0, NULL, o, NULL);
        else
            putchar('\n');
        return 0;
    }
    srv_tr *t = NULL;
    srv_tr_result r = {0};
    mt_err err = {0};
    mt_status st = translate_text(s, tm, &tp, line, &t, &r, &err);
    if (st != MT_OK) {
        fprintf(stderr, "mtserve translate: line %ld: %s: %s\n", lineno, mt_status_name(st), err.msg);
        if (o->json)
            print_json(tm->tok, NULL, 0, NULL, o, NULL);
        else
            putchar('\n');
        srv_tr_free(t);
        return 1;
    }
    int n_src;
    const int32_t *src = srv_tr_source(t, 0, &n_src);
    const mt_hyp *best = srv_tr_best(t, 0);
    if (o->json)
        print_json(tm->tok, src, n_src, best, o, &r);
    else
        puts(best->text ? best->text : "");
    srv_tr_results_free(&r, 1);
    srv_tr_free(t);
    return 0;
}

static int run(mt_model *m, const options *o)
{
    mt_err err = {0};
    mt_session *s;
    mt_session_params sp = mt_session_default_params(m);
    sp.kv_f16 = o->kv_f16;
    if (o->max_length > sp.max_tgt_len)
        sp.max_tgt_len = o->max_length;
    if (mt_session_new(m, &sp, &s, &err) != MT_OK) {
        fprintf(stderr, "mtserve translate: %s\n", err.msg);
        return 1;
    }
    const mt_model_info *info = mt_model_get_info(m);
    srv_tr_model tm = { .tok = mt_model_tokenizer(m), .eos_id = info->eos_id, .max_src_len = sp.max_src_len,
                        .max_length = info->default_max_length < sp.max_tgt_len ? info->default_max_length
                                                                                 : sp.max_tgt_len };
    srv_tr_params tp = { .beam_size = o->beam, .max_length = o->max_length, .n_best = 1, .split = 0,
                         .feat = &o->feat };
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int failed = 0;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        failed |= translate_line(s, &tm, o, &tp, line, lineno);
        fflush(stdout);
    }
    free(line);
    mt_session_free(s);
    return failed;
}

int mt_cmd_translate(int argc, char **argv)
{
    options o;
    int r = parse_args(argc, argv, &o);
    if (r)
        return r == 1 ? 0 : 2;
    if (o.feat.sample && !o.seeded) {       /* reproducible: say which seed was drawn */
        uint64_t x = 0;
        if (getrandom(&x, sizeof x, GRND_NONBLOCK) != (ssize_t)sizeof x)
            x = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
        o.feat.seed = x & ((1ull << 53) - 1);
        fprintf(stderr, "mtserve translate: --seed %llu\n", (unsigned long long)o.feat.seed);
    }
    struct stat sb;
    if (stat(o.model, &sb) != 0) {
        fprintf(stderr, "mtserve translate: model directory '%s' not found%s; pass --model DIR\n", o.model,
                strcmp(o.model, DEFAULT_MODEL) == 0 ? " (the default model is not installed)" : "");
        return 1;
    }
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = o.threads;
    mp.weights = o.weights;
    mt_model *m;
    mt_err err = {0};
    if (mt_model_load(o.model, &mp, &m, &err) != MT_OK) {
        fprintf(stderr, "mtserve translate: %s: %s\n", mt_status_name(err.status), err.msg);
        return 1;
    }
    r = run(m, &o);
    mt_model_free(m);
    return r;
}
