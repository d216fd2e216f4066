/* cmd_translate.c: `mtserve translate`: one sentence per stdin line -> one
 * translation per stdout line, in order, flushed per line.  With --json each
 * output line is {"source_ids", "ids", "pieces", "text", "score"} (and
 * "token_scores", "alignments", "word_alignments" when asked).  Each line
 * goes through the server's translate pipeline (pipeline.h, not split: a
 * line is a sentence), decoded on this thread by the session loop.  The
 * decoding features are POST /translate's: line i (from 0) samples with
 * seed + i. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "common/options.h"
#include "document/document.h"
#include "mt.h"
#include "translate/pipeline.h"
#include "service/languages.h"
#include "service/result_json.h"
#include "translate/session_decoder.h"

#define DEFAULT_MODEL "models/en-fr"

typedef struct {
    const char *model;
    int threads, json, seeded, tab_prefix, kv_f16;
    mt_weights weights;
    mt_decode_params dp;        /* the decoding fields as given (resolved once the model is loaded) */
    const char *prefix;         /* --target-prefix */
    int html;                   /* --format html: stdin is one page */
    const char *file, *out;     /* --file IN (a document: document.h's formats), --out OUT (default stdout) */
    const char *glossary;       /* --glossary FILE.tsv: terms every line keeps */
    const char *shortlist;      /* --shortlist FILE: a lexical shortlist (mt_shortlist_load) */
    const char *lang_vocab;     /* --lang-vocab FILE: a target-language vocabulary map (mt_lang_vocab_load) */
    int no_placeholders;        /* --no-placeholders: %s, {name}, URLs... sent to the model as text */
    int keep_title_case;        /* --keep-title-case: a Title Case line (or lone word) goes to the model as written */
    srv_doc_options doc;        /* --file's per-file choices: --overwrite */
    const char *source, *target;    /* --source, --target: a multilingual model's languages (its codes) */
    int32_t src_id;             /* the source language's token, -1 (a Marian model) */
    const srv_copy_gate *copy_gate; /* NULL, or the model's <dir>/copy_gate.txt (translate/copy_gate.h) */
} options;

/* The decoding flags, each a field of the engine's table (mt_decode_limits):
 * its range, default and description come from there. */
static const struct { const char *flag, *field; } decode_flags[] = {
    {"--beam", "beam_size"}, {"--max-length", "max_length"}, {"--temperature", "sampling.temperature"},
    {"--top-k", "sampling.top_k"}, {"--top-p", "sampling.top_p"}, {"--seed", "sampling.seed"},
    {"--min-length", "min_length"}, {"--repetition-penalty", "repetition_penalty"},
    {"--no-repeat-ngram-size", "no_repeat_ngram_size"}, {"--length-penalty", "length_penalty"},
    {"--max-length-factor", "max_length_factor"}, {"--loop-no-repeat-ngram-size", "loop_no_repeat_ngram_size"},
    {"--copy-guard", "copy_guard"},
    {"--alignment-layer", "alignment_layer"}, {"--alignment-heads", "alignment_heads"},
};
#define N_DECODE_FLAGS (sizeof decode_flags / sizeof decode_flags[0])

/* A bound or default as the usage shows it: a number, or what it depends on. */
static const char *limit_text(mt_bound of, double x, char *buf, size_t cap)
{
    if (of != MT_BOUND_CONST)
        return mt_decode_bound_name(of);
    snprintf(buf, cap, "%.17g", x);
    return buf;
}

/* "[lo, hi]" of table row l, the bounds that need the model by name. */
static const char *range_text(const mt_decode_limit *l, char *buf, size_t cap)
{
    char lo[32], hi[32];
    snprintf(buf, cap, "%c%s, %s]", l->min_open ? '(' : '[', limit_text(l->min_of, l->min, lo, sizeof lo),
             limit_text(l->max_of, l->max, hi, sizeof hi));
    return buf;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mtserve translate [--model DIR] [--beam N] [--max-length N] [--threads N] [--weights f32|f16|int8]\n"
               "                         [--kv-cache f32|f16] [--json] [--glossary F.tsv] [--no-placeholders]\n"
               "                         [--keep-title-case]\n"
               "                         [--format html | --file IN [--out OUT] [--overwrite]]\n"
               "  reads one sentence per line on stdin, writes one translation per line\n"
               "  --model DIR       Marian model directory (default %s), or a Hugging Face name org/name[@rev]\n"
               "  --source L --target L   the languages of a multilingual model (NLLB-200: eng_Latn, fra_Latn..;\n"
               "                    M2M-100: en, fr..; or ISO codes: fr, fra), required with one; refused\n"
               "                    with a one-pair model\n"
               "  --threads N       compute threads (default 1)\n"
               "  --weights f16     hold the weights rounded to half precision (default f32: as loaded)\n"
               "  --weights int8    hold them quantized to int8 per output row (the CPU's int8 kernel)\n"
               "  --kv-cache f16    hold the decoder's key/value caches in half precision (default f32)\n"
               "  --json            one JSON object per line: source_ids, ids, pieces, text, score\n"
               "  --format html     stdin is one HTML page: its text translated, its markup kept (README)\n"
               "  --glossary F.tsv  terms every translation keeps: source<TAB>target lines, # comments (README)\n"
               "  --no-placeholders %%s, {name}, URLs, e-mail... go to the model as text (default: kept byte for\n"
               "                    byte and placed by the word alignment, as the server's \"placeholders\")\n"
               "  --keep-title-case a Title Case line (\"Restore From Trash\") or a lone capitalized word\n"
               "                    (\"Alarm\") goes to the model as written (default: in sentence case,\n"
               "                    the word lowercased and its translation capitalized: \"fold_title_case\")\n"
               "  --shortlist FILE  a lexical shortlist (Marian binary or text, CTranslate2 vmap): each step's\n"
               "                    output ids are its candidates for the line only (docs/SHORTLIST.md)\n"
               "  --lang-vocab FILE a multilingual model's target-language vocabulary map: the output ids\n"
               "                    are the target language's list (README \"Multilingual models\")\n"
               "  --file IN         translate a document (txt, html, srt, vtt, po, docx, odt, pptx, xlsx, odp,\n"
               "                    ods, epub, i18n resources, Markdown, XLIFF: read from its bytes and\n"
               "                    name), its structure kept; --out OUT writes it (default stdout), with a\n"
               "                    progress bar on a terminal\n"
               "  --overwrite       with --file: XLIFF targets that already hold text are translated again\n"
               "                    (default: kept)\n"
               "decoding (POST /translate's fields; config.* and limits.* are the model's, as GET /models says):\n"
               "  --sample          draw each token (beam 1) with the sampling flags below; the seed, unless\n"
               "                    given, is drawn and printed on stderr; line i draws with seed + i\n",
            DEFAULT_MODEL);
    for (size_t k = 0; k < N_DECODE_FLAGS; k++) {
        const mt_decode_limit *l = mt_decode_limit_find(decode_flags[k].field);
        char opt[40], range[96], dflt[32];
        snprintf(opt, sizeof opt, "%s %s", decode_flags[k].flag, l->type == MT_LIMIT_BOOL ? "on|off" :
                 l->type == MT_LIMIT_FLOAT ? "X" : "N");
        if (l->type == MT_LIMIT_BOOL)
            fprintf(f, "  %-24s %s\n", opt, l->doc);
        else
            fprintf(f, "  %-24s %s\n  %-24s %s, default %s\n", opt, l->doc, "", range_text(l, range, sizeof range),
                    limit_text(l->dflt_of, l->dflt, dflt, sizeof dflt));
    }
    fprintf(f, "  --target-prefix TEXT   every translation starts with TEXT\n"
               "  --tab-prefix      each line is SOURCE<TAB>PREFIX: that line's target prefix\n"
               "  --token-scores    (--json) token_scores: log p of each id\n"
               "  --alignments      (--json) alignments [source index, target index] and word_alignments\n"
               "                    (code-point offsets), from --alignment-layer and --alignment-heads\n");
}

/* A decoding flag's value into o->dp, within the table's bounds that need no
 * model (the resolver checks the rest once it is loaded): 1 taken (*i
 * advanced past the value), 0 not a decoding flag, -1 invalid. */
static int parse_decode_flag(const char *a, const char *v, int *i, options *o)
{
    const mt_decode_limit *l = NULL;
    for (size_t k = 0; k < N_DECODE_FLAGS && !l; k++)
        if (!strcmp(a, decode_flags[k].flag))
            l = mt_decode_limit_find(decode_flags[k].field);
    if (!l)
        return 0;
    if (l->type == MT_LIMIT_BOOL) {                 /* on: 1, off: -1 (unset 0: the model's default) */
        if (!v || (strcmp(v, "on") && strcmp(v, "off"))) {
            fprintf(stderr, "mtserve translate: %s needs on or off\n", a);
            return -1;
        }
        *(int *)((char *)&o->dp + l->offset) = strcmp(v, "on") ? -1 : 1;
        (*i)++;
        return 1;
    }
    double lo, hi, x = 0;
    char *end = NULL, range[96];
    mt_decode_limit_bounds(l, NULL, NULL, NULL, &lo, &hi);
    if (v)
        x = strtod(v, &end);
    if (!v || !*v || *end || !isfinite(x) || (l->min_open ? x <= lo : x < lo) || x > hi ||
        (l->type != MT_LIMIT_FLOAT && (x != floor(x) || (l->type == MT_LIMIT_INT && fabs(x) > INT_MAX)))) {
        fprintf(stderr, "mtserve translate: %s needs %s in %s\n", a, l->type == MT_LIMIT_FLOAT ? "a number" :
                "an integer", range_text(l, range, sizeof range));
        return -1;
    }
    char *f = (char *)&o->dp + l->offset;
    if (l->type == MT_LIMIT_INT)
        *(int *)f = (int)x;
    else if (l->type == MT_LIMIT_FLOAT)
        *(float *)f = mt_decode_limit_float(l, x);
    else
        *(uint64_t *)f = (uint64_t)x;
    o->seeded |= l->dflt_of == MT_BOUND_DRAWN;
    (*i)++;
    return 1;
}

/* The other decoding options: 1 taken, 0 not one of them. */
static int parse_feature(const char *a, const char *v, int *i, options *o)
{
    if (!strcmp(a, "--sample"))
        return o->dp.sampling.enabled = 1;
    if (!strcmp(a, "--token-scores"))
        return o->dp.token_scores = 1;
    if (!strcmp(a, "--alignments"))
        return o->dp.alignment.enabled = 1;
    if (!strcmp(a, "--tab-prefix"))
        return o->tab_prefix = 1;
    if (strcmp(a, "--target-prefix") || !v)
        return 0;
    o->prefix = v;
    (*i)++;
    return 1;
}

/* 0 = ok, 1 = exit 0 (help), 2 = usage error */
static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.model = DEFAULT_MODEL, .threads = 1, .dp = mt_decode_default_params(),
              .doc = srv_doc_default_options(), .src_id = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = parse_decode_flag(a, v, &i, o);
        if (r < 0)
            return 2;
        if (r > 0 || parse_feature(a, v, &i, o))
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--format") && v && (!strcmp(v, "text") || !strcmp(v, "html"))) {
            o->html = !strcmp(v, "html");
            i++;
        } else if (!strcmp(a, "--file") && v) {
            o->file = v;
            i++;
        } else if (!strcmp(a, "--out") && v) {
            o->out = v;
            i++;
        } else if (!strcmp(a, "--glossary") && v) {
            o->glossary = v;
            i++;
        } else if (!strcmp(a, "--shortlist") && v) {
            o->shortlist = v;
            i++;
        } else if (!strcmp(a, "--lang-vocab") && v) {
            o->lang_vocab = v;
            i++;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--no-placeholders")) {
            o->no_placeholders = 1;
        } else if (!strcmp(a, "--keep-title-case")) {
            o->keep_title_case = 1;
        } else if (!strcmp(a, "--overwrite")) {
            o->doc.overwrite = 1;
        } else if (!strcmp(a, "--model") && v) {
            o->model = v;
            i++;
        } else if ((!strcmp(a, "--source") || !strcmp(a, "--target")) && v) {
            *(a[2] == 's' ? &o->source : &o->target) = v;
            i++;
        } else if (!strcmp(a, "--weights") && v && (!strcmp(v, "f32") || !strcmp(v, "f16") || !strcmp(v, "int8"))) {
            o->weights = v[0] == 'i' ? MT_WEIGHTS_I8 : v[1] == '1' ? MT_WEIGHTS_F16 : MT_WEIGHTS_F32;
            i++;
        } else if (!strcmp(a, "--kv-cache") && v && (!strcmp(v, "f32") || !strcmp(v, "f16"))) {
            o->kv_f16 = v[1] == '1';
            i++;
        } else if (!strcmp(a, "--threads")) {
            char *end;
            long x = v ? strtol(v, &end, 10) : 0;
            if (!v || *end || x < 1 || x > 256) {
                fprintf(stderr, "mtserve translate: --threads needs an integer in [1, 256]\n");
                return 2;
            }
            o->threads = (int)x;
            i++;
        } else {
            fprintf(stderr, "mtserve translate: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
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
    /* the text as the pipeline joined it (placeholders back); ids and pieces are the model's */
    const char *text = r && r->n_alts > 0 ? r->alts[0] : h && h->text ? h->text : "";
    json_t *o = json_pack("{s:o, s:o, s:o, s:s, s:f}", "source_ids", ids_json(src, n_src), "ids",
                          ids_json(h ? h->ids : NULL, h ? h->n_ids : 0), "pieces", pieces, "text", text,
                          "score", h ? (double)h->score : 0.0);
    if (o && r)
        srv_result_features_json(o, r, opt->dp.token_scores, opt->dp.alignment.enabled);
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
    srv_session_decode(s, job);
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
    srv_prefix prefix = {.text = o->prefix};
    char *tab = o->tab_prefix ? strchr(line, '\t') : NULL;
    if (tab) {                                      /* SOURCE<TAB>PREFIX */
        *tab = 0;
        prefix.text = tab + 1;
    }
    tp.dp.sampling.seed += (uint64_t)(lineno - 1);           /* line i draws with seed + i */
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
        puts(r.n_alts > 0 ? r.alts[0] : best->text ? best->text : "");
    srv_tr_results_free(&r, 1);
    srv_tr_free(t);
    return 0;
}

/* The whole of f: malloc'd, *len its size; NULL on failure (errno). */
static char *read_all(FILE *f, size_t *len)
{
    char *data = NULL;
    *len = 0;
    FILE *mem = open_memstream(&data, len);
    char buf[65536];
    size_t n;
    while (mem && (n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, mem);
    if (!mem || fclose(mem) != 0 || ferror(f)) {
        free(data);
        return NULL;
    }
    return data;
}

/* "[#####.....] 37/120 units" on a terminal's stderr, redrawn in place. */
static void progress(int done, int total)
{
    enum { W = 30 };
    int k = total ? (int)((long long)done * W / total) : W;
    fprintf(stderr, "\r[%.*s%.*s] %d/%d units", k, "##############################", W - k,
            "..............................", done, total);
    if (done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

enum { FILE_BATCH = 16 };

/* --glossary FILE.tsv, read and checked (the server's default limits:
 * server/common/options.c); NULL with the reason on stderr. */
static srv_glossary *load_glossary(const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t len = 0;
    char *data = f ? read_all(f, &len) : NULL;
    if (f)
        fclose(f);
    srv_glossary_limits lim = { .max_entries = 1000000, .max_term_bytes = 4096 };
    srv_glossary *g = data ? srv_glossary_new(&lim) : NULL;
    mt_err err = { 0 };
    if (!data)
        fprintf(stderr, "mtserve translate: --glossary: cannot read '%s'\n", path);
    else if (!g || srv_glossary_add_tsv(g, data, len, &err) != MT_OK)
        fprintf(stderr, "mtserve translate: --glossary %s: %s\n", path, g ? err.msg : "out of memory");
    free(data);
    if (g && err.status != MT_OK) {
        srv_glossary_free(g);
        g = NULL;
    }
    return g;
}

/* Document d's units translated in batches of FILE_BATCH on this thread, each
 * put back into d; 1 if a batch failed (it leaves its units as they were,
 * stderr says why), else 0. */
static int translate_units(mt_session *s, const srv_tr_model *tm, const srv_tr_params *tp, srv_doc *d, int bar)
{
    int failed = 0, total = srv_doc_units(d);
    mt_err err = {0};
    for (int i = 0; i < total; i += FILE_BATCH) {
        int n = total - i < FILE_BATCH ? total - i : FILE_BATCH;
        const char *texts[FILE_BATCH];
        for (int k = 0; k < n; k++)
            texts[k] = srv_doc_unit(d, i + k);
        srv_tr *t = NULL;
        srv_tr_result r[FILE_BATCH] = {{0}};
        mt_status st = srv_tr_new(tm, texts, n, tp, &t, &err);
        if (st == MT_OK) {
            srv_decode_job *job = srv_tr_job(t);
            job->done = decoded;
            srv_session_decode(s, job);
            st = job->status != MT_OK ? (err = job->err, job->status) : srv_tr_finish(t, r, &err);
        }
        for (int k = 0; st == MT_OK && k < n; k++)
            st = srv_doc_set(d, i + k, r[k].alts[0], strlen(r[k].alts[0]), r[k].words, r[k].n_words, &err);
        if (st != MT_OK) {
            fprintf(stderr, "%smtserve translate: units %d-%d: %s\n", bar ? "\n" : "", i + 1, i + n, err.msg);
            failed = 1;
        } else {
            srv_tr_results_free(r, n);
        }
        srv_tr_free(t);
        if (bar)
            progress(i + n, total);
    }
    return failed;
}

/* Document d rendered to --out (or stdout): 0, or 1 with stderr saying why. */
static int write_doc(const srv_doc *d, const options *o)
{
    char *out;
    size_t len;
    mt_err err = {0};
    if (srv_doc_render(d, &out, &len, &err) != MT_OK) {
        fprintf(stderr, "mtserve translate: %s\n", err.msg);
        return 1;
    }
    int failed = 0;
    FILE *f = o->out ? fopen(o->out, "wb") : stdout;
    if (!f || fwrite(out, 1, len, f) != len || (f != stdout && fclose(f) != 0)) {
        fprintf(stderr, "mtserve translate: cannot write %s\n", o->out ? o->out : "stdout");
        failed = 1;
    }
    free(out);
    return failed;
}

/* A document (--file, or --format html on stdin): its units translated in
 * batches of FILE_BATCH on this thread, the document with its structure to
 * out (target: the model's language, set where the file names its own).  A
 * batch that fails leaves its units as they were (stderr says why). */
static int run_file(mt_session *s, const srv_tr_model *tm, const srv_tr_params *tp0, const options *o,
                    const char *target)
{
    const char *name = o->file ? o->file : "stdin";
    char *data = NULL;
    srv_doc *d = NULL;
    int failed = 1;
    FILE *in = o->file ? fopen(o->file, "rb") : stdin;
    if (!in) {
        fprintf(stderr, "mtserve translate: cannot open %s: %s\n", o->file, strerror(errno));
        goto done;
    }
    size_t len;
    data = read_all(in, &len);
    if (in != stdin)
        fclose(in);
    if (!data) {
        fprintf(stderr, "mtserve translate: cannot read %s\n", name);
        goto done;
    }
    srv_doc_kind kind = o->html ? SRV_DOC_HTML : srv_doc_sniff(data, len, o->file);
    if (kind == SRV_DOC_UNKNOWN) {
        fprintf(stderr, "mtserve translate: %s is in no format this command translates (%s)\n", o->file,
                srv_doc_supported());
        goto done;
    }
    srv_tr_params tp = *tp0;
    tp.split = 1;                       /* a unit is a paragraph */
    tp.dp.alignment.enabled = 1;        /* tags and runs follow the words */
    mt_err err = {0};
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_bytes = (size_t)1 << 30;    /* the operator's own file: only its format's bounds */
    lim.max_units = 10000000;
    if (srv_doc_parse_opt(kind, data, len, &lim, &o->doc, &d, &err) != MT_OK) {
        fprintf(stderr, "mtserve translate: %s: %s\n", name, err.msg);
        goto done;
    }
    if (target && target[0])
        srv_doc_target(d, target);      /* the model's target language, where the file names its own (ARB, Rails) */
    failed = translate_units(s, tm, &tp, d, o->out && isatty(2));
    failed |= write_doc(d, o);
done:
    srv_doc_free(d);
    free(data);
    return failed;
}

static int run(mt_model *m, const options *o)
{
    mt_err err = {0};
    mt_session *s;
    mt_session_params sp = mt_session_default_params(m);
    sp.kv_f16 = o->kv_f16;
    if (o->dp.lengths.max_length > sp.max_tgt_len)
        sp.max_tgt_len = o->dp.lengths.max_length;
    srv_tr_params tp = { .split = 0, .placeholders = !o->no_placeholders, .keep_title_case = o->keep_title_case };
    if (mt_decode_params_resolve(m, &sp, &o->dp, &tp.dp, &err) != MT_OK) {   /* every line's */
        fprintf(stderr, "mtserve translate: %s\n", err.msg);
        return 2;
    }
    if (mt_session_new(m, &sp, &s, &err) != MT_OK) {
        fprintf(stderr, "mtserve translate: %s\n", err.msg);
        return 1;
    }
    srv_tr_model tm = { .tok = mt_model_tokenizer(m), .eos_id = mt_model_get_info(m)->eos_id,
                        .max_src_len = sp.max_src_len, .has_lang = o->src_id >= 0, .lang_id = o->src_id,
                        .lang_after = mt_multi_legacy(mt_tokenizer_multi(mt_model_tokenizer(m))),
                        /* the target language generated first, as the server's srv_leg_model says */
                        .has_bos = o->dp.forced_bos.enabled, .bos_id = o->dp.forced_bos.id,
                        /* the pipeline sets each sentence's from the model's (it was NULL here:
                         * --shortlist had no effect) */
                        .shortlist = o->dp.shortlist, .lang_vocab = o->dp.lang_vocab, .copy_gate = o->copy_gate };
    srv_glossary *g = NULL;
    int failed = 0;
    if (o->glossary && !(tp.glossary = g = load_glossary(o->glossary))) {
        failed = 2;
        goto done;
    }
    if (o->html || o->file) {
        failed = run_file(s, &tm, &tp, o, mt_model_get_info(m)->target_lang);
        goto done;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        failed |= translate_line(s, &tm, o, &tp, line, lineno);
        fflush(stdout);
    }
    free(line);
done:
    mt_session_free(s);
    srv_glossary_free(g);
    return failed;
}

/* A language of a multilingual model: its own code ("fra_Latn", "fr") or
 * token, else the first of its languages that code names (languages.h:
 * "fr" or "fra" for fra_Latn); -1. */
static int32_t multi_lang(const mt_multi_tokenizer *mt, const char *code)
{
    int32_t id = mt_multi_lang_id(mt, code);
    for (int i = 0; id < 0 && i < mt_multi_n_langs(mt); i++) {
        const char *c = mt_multi_lang(mt, i), *us = strchr(c, '_');
        char base[16];
        snprintf(base, sizeof base, "%.*s", us ? (int)(us - c) : (int)strlen(c), c);
        if (srv_lang_same(base, code))
            id = mt_multi_lang_id(mt, c);
    }
    return id;
}

/* A multilingual model (NLLB-200, M2M-100) needs --source and --target: the
 * source's token goes first in every sentence, the target's is the first id
 * generated (forced_bos).  Another model refuses them.  0, or 1 with the
 * reason on stderr. */
static int languages(const mt_model *m, options *o)
{
    const mt_multi_tokenizer *mt = mt_tokenizer_multi(mt_model_tokenizer(m));
    if (!mt) {
        if (!o->source && !o->target)
            return 0;
        fprintf(stderr, "mtserve translate: --source and --target name the languages of a multilingual model "
                        "(NLLB-200, M2M-100); %s translates one pair\n", o->model);
        return 1;
    }
    if (!o->source || !o->target) {
        fprintf(stderr, "mtserve translate: %s is a multilingual %s model: give --source and --target (%s, ...)\n",
                o->model, mt_multi_kind_name(mt_multi_kind_of(mt)), mt_multi_lang(mt, 0));
        return 1;
    }
    o->src_id = multi_lang(mt, o->source);
    int32_t tgt = multi_lang(mt, o->target);
    if (o->src_id < 0 || tgt < 0) {
        fprintf(stderr, "mtserve translate: --%s '%s' is not a language of %s (%d codes: %s, %s, ...)\n",
                o->src_id < 0 ? "source" : "target", o->src_id < 0 ? o->source : o->target, o->model,
                mt_multi_n_langs(mt), mt_multi_lang(mt, 0), mt_multi_lang(mt, 1));
        return 1;
    }
    o->dp.forced_bos.enabled = 1;
    o->dp.forced_bos.id = tgt;
    return 0;
}

int mt_cmd_translate(int argc, char **argv)
{
    options o;
    int r = parse_args(argc, argv, &o);
    if (r)
        return r == 1 ? 0 : 2;
    if (o.dp.sampling.enabled && !o.seeded) {         /* reproducible: say which seed was drawn */
        uint64_t x = 0;
        if (getrandom(&x, sizeof x, GRND_NONBLOCK) != (ssize_t)sizeof x)
            x = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
        o.dp.sampling.seed = x & ((1ull << 53) - 1);
        fprintf(stderr, "mtserve translate: --seed %llu\n", (unsigned long long)o.dp.sampling.seed);
    }
    char hub_dir[1024];                     /* --model org/name: its snapshot in the hub's cache */
    int by_name = mt_hub_resolve_dir(o.model, hub_dir, sizeof hub_dir);
    if (by_name < 0)
        return 1;
    if (by_name > 0)
        o.model = hub_dir;
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
    mt_shortlist *sl = NULL;
    mt_lang_vocab *lv = NULL;
    srv_copy_gate *gate = NULL;
    r = 1;
    if (languages(m, &o) != 0)
        goto done;
    if (strcmp(mt_model_get_info(m)->architecture, "marian") != 0 && o.src_id < 0) {   /* pairs, prompt: the server's */
        fprintf(stderr, "mtserve translate: %s is a decoder-only model (%s): `mtserve serve --model ID=%s` translates "
                        "with it, through its translation.json pairs and prompt\n", o.model,
                mt_model_get_info(m)->architecture, o.model);
        goto done;
    }
    if (o.shortlist && mt_shortlist_load(m, o.shortlist, NULL, &sl, &err) != MT_OK) {
        fprintf(stderr, "mtserve translate: --shortlist: %s\n", err.msg);
        goto done;
    }
    o.dp.shortlist = sl;
    if (o.lang_vocab && mt_lang_vocab_load(m, o.lang_vocab, &lv, &err) != MT_OK) {
        fprintf(stderr, "mtserve translate: --lang-vocab: %s\n", err.msg);
        goto done;
    }
    o.dp.lang_vocab = lv;
    char gate_file[1200];
    snprintf(gate_file, sizeof gate_file, "%.1000s/copy_gate.txt", o.model);
    if (o.src_id < 0 && stat(gate_file, &sb) == 0 && srv_copy_gate_load(gate_file, &gate, &err) != MT_OK) {
        fprintf(stderr, "mtserve translate: %s\n", err.msg);
        goto done;
    }
    o.copy_gate = gate;
    r = run(m, &o);
done:
    srv_copy_gate_free(gate);
    mt_lang_vocab_free(lv);
    mt_shortlist_free(sl);
    mt_model_free(m);
    return r;
}
