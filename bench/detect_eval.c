/* detect_eval: the two Debian language identifiers measured on short strings, and
 * the rule of server/detect built on the one picked, with and without the
 * candidates' language models (issue 27).
 *
 *   bash bench/detect_eval.sh            # builds into $B (default build-det) and runs this
 *
 * Sets (read from the repository root, the same selection as tests/test_detect.c):
 *   positives: the first 500 lines of 3-10 whitespace-separated words of
 *              tests/fixtures/tokenizer/inputs/test.en.txt and of test.fr.txt
 *              (the held-out test split of models/en-fr);
 *   negatives: every line of tests/fixtures/detect/{de,es,it}.txt (Debian
 *              package synopses, bench/detect_negset.py);
 *   dev:       every line of 3-10 words of tests/fixtures/tokenizer/inputs/
 *              dev.{en,fr}.txt (the dev split): where cld2_weight is chosen.
 * Measured, with the candidate set {en, fr} (the languages the models translate from):
 *   all   top-1 accuracy over every language the detector knows (positives);
 *   cand  accuracy of the answer restricted to the candidates: the first of
 *         {en, fr} in the detector's ranked list, else its top-1 (positives);
 *   neg   how often a negative line gets en or fr as that answer;
 *   us    microseconds per call (mean over every line of every set, one thread).
 *
 * Detectors: CLD2 (Debian's libcld2) through server/detect/cld2.h in four
 * settings; libexttextcat with all of Debian's 164 fingerprints (its answer list:
 * every language within 3% of the best), and with the candidates' fingerprints
 * only (its restricted classifier, which can answer nothing else); and
 * srv_detect itself with the language models the server would build
 * (server/service/detect_source.h, srv_detect_lms_init):
 *   - of the shipped models/en-fr + models/fr-en: their source.spm is their
 *     target.spm (one joint en+fr SentencePiece model), so none: CLD2 alone;
 *   - of real OPUS-MT models' monolingual SentencePiece models
 *     (tests/fixtures/opus-mt/: opus-mt-en-mg's source.spm for en,
 *     opus-mt-tc-big-fr-en's source.spm for fr; and that model's target.spm,
 *     English, for en), as a server of such models would have;
 *   - the character n-gram models shipped beside them (models/en-fr/en.charlm,
 *     models/fr-en/fr.charlm, server/detect/charlm.h: issue 48), which the server
 *     uses when present; and those of every directory in the environment variable
 *     CHARLM_DIRS (space-separated, each holding en.charlm and fr.charlm: other
 *     orders and prunings written by models/recipe/charlm.py, to choose among);
 *   - bench only, not in the server: the shipped models' decoders as language
 *     models (log p of the text as the target of an empty source; models/fr-en's
 *     decoder for en, models/en-fr's for fr), the one signal of the shipped
 *     models that tells en from fr, at a decoder pass per candidate.
 * Then cld2_weight against accuracy on dev and test, the confidence of the
 * answers (accuracy per band, what a threshold trades), and the cost of a long
 * text.  `detect_eval LABEL --rows` prints the first table only
 * (detect_eval.sh's second run).  Prints Markdown. */
#include <libexttextcat/textcat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "detect/charlm.h"
#include "detect/cld2.h"
#include "detect/detect.h"
#include "mt.h"
#include "service/detect_source.h"
#include "bench_util.h"

#define N_POS 500
#define MAX_LINE 4096

enum { EN, FR, DE, ES, IT, N_MAIN, DEV_EN = N_MAIN, DEV_FR, N_SETS };
static const char *const set_lang[N_SETS] = {"en", "fr", "de", "es", "it", "en", "fr"};
static const char *const cand[] = {"en", "fr"};

typedef struct {
    char **line;
    int    n;
    int    first;                   /* index of its first line among every set's lines */
} set;

static set sets[N_SETS];
static int n_lines;                 /* of every set */

static int count_words(const char *s)
{
    int n = 0, in = 0;
    for (; *s; s++) {
        int sp = *s == ' ' || *s == '\t';
        n += !sp && !in;
        in = !sp;
    }
    return n;
}

/* Lines of path (newline stripped): with short_only, those of 3-10 words, the
 * first max of them (exactly max, or fail; max 0: all); else every non-blank one. */
static int read_set(const char *path, int max, int short_only, set *s)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    char buf[MAX_LINE];
    int cap = max > 0 ? max : 4096;
    s->line = calloc((size_t)cap, sizeof *s->line);
    s->n = 0;
    while (s->n < cap && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        int w = count_words(buf);
        if (short_only ? (w < 3 || w > 10) : w == 0)
            continue;
        s->line[s->n++] = strdup(buf);
    }
    fclose(f);
    if (max > 0 && s->n < max) {
        fprintf(stderr, "%s: only %d lines of 3-10 words\n", path, s->n);
        return -1;
    }
    s->first = n_lines;
    n_lines += s->n;
    return 0;
}

static int is_cand(const char *code)
{
    return strcmp(code, "en") == 0 || strcmp(code, "fr") == 0;
}

/* ---- language models: a cache in front of a scorer ----
 * Every call of srv_detect in this bench says which line it is on (cache.line);
 * a cached scorer computes each (line, candidate) once and then replays it, so
 * that sweeping cld2_weight does not rerun a decoder.  Timed rows run uncached. */
typedef struct {
    srv_detect_score_fn fn;
    void               *ctx;
    double             *val;        /* [n_lines][2] */
    signed char        *state;      /* [n_lines][2]: 0 unknown, 1 scored, -1 no model */
    int                 line;
} cache;

static int cached_score(void *ctx, int i, const char *text, size_t len, double *logp)
{
    cache *c = ctx;
    if (i < 0 || i > 1)
        return -1;
    size_t k = (size_t)c->line * 2 + (size_t)i;
    if (c->state[k] == 0) {
        c->state[k] = c->fn(c->ctx, i, text, len, &c->val[k]) == 0 ? 1 : -1;
    }
    *logp = c->val[k];
    return c->state[k] == 1 ? 0 : -1;
}

static void cache_init(cache *c, const srv_detect_params *p)
{
    c->fn = p->score;
    c->ctx = p->score_ctx;
    c->val = calloc((size_t)n_lines * 2, sizeof *c->val);
    c->state = calloc((size_t)n_lines * 2, 1);
    c->line = 0;
}

/* The decoders of the shipped models as language models (bench only): log p of
 * the text's target-side ids (</s> included) after an empty source, for cand[i]
 * by the model that translates INTO it. */
typedef struct {
    mt_model   *model[2];
    mt_session *session[2];
} decoder_lm;

static int decoder_score(void *ctx, int i, const char *text, size_t len, double *logp)
{
    decoder_lm *d = ctx;
    if (i < 0 || i > 1 || !d->session[i])
        return -1;
    const mt_tokenizer *tok = mt_model_tokenizer(d->model[i]);
    int32_t src[4], tgt[600];
    float lp[600];
    int ns = 0, nt = 0;
    if (mt_tokenizer_encode(tok, "", 0, 0, src, 4, &ns, NULL) ||
        mt_tokenizer_encode(tok, text, len, 1, tgt, 600, &nt, NULL) ||
        mt_score(d->session[i], src, ns, tgt, nt, lp, NULL, NULL))
        return -1;
    double s = 0;
    for (int k = 0; k < nt; k++)
        s += lp[k];
    *logp = s;
    return 0;
}

static int decoder_lm_load(decoder_lm *d)
{
    static const char *const dir[2] = {"models/fr-en", "models/en-fr"};     /* into en, into fr */
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = 1;
    for (int i = 0; i < 2; i++) {
        mt_err err;
        if (mt_model_load(dir[i], &mp, &d->model[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
        mt_session_params sp = mt_session_default_params(d->model[i]);
        if (mt_session_new(d->model[i], &sp, &d->session[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
    }
    return 0;
}

static void decoder_lm_free(decoder_lm *d)
{
    for (int i = 0; i < 2; i++) {
        mt_session_free(d->session[i]);
        mt_model_free(d->model[i]);
    }
}

/* ---- detectors ---- */

/* One detector: its ranked codes for a text (at most 8), into codes[]; the count. */
typedef int (*detector)(void *ctx, const char *text, size_t len, char codes[][16]);

typedef struct {
    const char *name;
    detector    fn;
    void       *ctx;
} entry;

typedef struct {
    const char *hints;
    int         best_effort;
} cld2_cfg;

static int run_cld2(void *ctx, const char *text, size_t len, char codes[][16])
{
    const cld2_cfg *c = ctx;
    detect_cld2_result r;
    detect_cld2(text, (int)len, c->hints, c->best_effort, &r);
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (detect_cld2_is_language(r.lang[i]))
            snprintf(codes[n++], 16, "%s", detect_cld2_code(r.lang[i]));
    return n;
}

static int run_textcat(void *ctx, const char *text, size_t len, char codes[][16])
{
    void *h = ctx;
    candidate_t *c = textcat_GetClassifyFullOutput(h);
    int k = textcat_ClassifyFull(h, text, len, c), n = 0;
    for (int i = 0; i < k && n < 8; i++) {            /* "en--utf8", "zh-CN-utf8": the language */
        size_t m = strcspn(c[i].name, "-");
        snprintf(codes[n++], 16, "%.*s", (int)m, c[i].name);
    }
    textcat_ReleaseClassifyFullOutput(h, c);
    return n;                                         /* k < 0: SHORT or UNKNOWN, no answer */
}

static int run_module(void *ctx, const char *text, size_t len, char codes[][16])
{
    srv_lang_guess g[3];
    int n = srv_detect(text, len, ctx, g, 3);
    for (int i = 0; i < n; i++)
        snprintf(codes[i], 16, "%.15s", g[i].code);
    return n;
}

typedef struct {
    int    top[N_SETS];             /* positives: the top-1 answer right */
    int    ok[N_SETS];              /* positives: the "cand" answer right; negatives: it is en or fr */
    double us;
} tally;

/* The detector over sets[from..to); with c, c->line follows the lines. */
static tally run_sets(const entry *e, int from, int to, cache *c)
{
    tally t;
    memset(&t, 0, sizeof t);
    int calls = 0;
    double secs = 0;
    for (int s = from; s < to; s++) {
        for (int i = 0; i < sets[s].n; i++) {
            const char *x = sets[s].line[i];
            char codes[8][16];
            if (c)
                c->line = sets[s].first + i;
            double t0 = bench_now();
            int n = e->fn(e->ctx, x, strlen(x), codes);
            secs += bench_now() - t0;
            calls++;
            const char *pick = n > 0 ? codes[0] : "";
            for (int k = 0; k < n; k++)
                if (is_cand(codes[k])) {
                    pick = codes[k];
                    break;
                }
            if (s == DE || s == ES || s == IT) {
                t.ok[s] += is_cand(pick);
            } else {
                t.top[s] += n > 0 && strcmp(codes[0], set_lang[s]) == 0;
                t.ok[s] += strcmp(pick, set_lang[s]) == 0;
            }
        }
    }
    t.us = calls ? 1e6 * secs / calls : 0;
    return t;
}

static double pct(int a, int n)
{
    return n ? 100.0 * a / n : 0;
}

static void measure(const entry *e)
{
    tally t = run_sets(e, EN, N_MAIN, NULL);
    const int *all_ok = t.top;
    int n_neg = sets[DE].n + sets[ES].n + sets[IT].n, neg = t.ok[DE] + t.ok[ES] + t.ok[IT];
    printf("| %s | %.1f%% (en %.1f, fr %.1f) | %.1f%% (en %.1f, fr %.1f) | %.1f%% (de %d, es %d, it %d of %d) | %.1f |\n",
           e->name, pct(all_ok[EN] + all_ok[FR], 2 * N_POS), pct(all_ok[EN], N_POS), pct(all_ok[FR], N_POS),
           pct(t.ok[EN] + t.ok[FR], 2 * N_POS), pct(t.ok[EN], N_POS), pct(t.ok[FR], N_POS), pct(neg, n_neg),
           t.ok[DE], t.ok[ES], t.ok[IT], sets[DE].n, t.us);
}

/* cld2_weight against accuracy: dev (where it is chosen), test, negatives. */
static void weight_table(const char *const *names, srv_detect_params *const *ps, int n_cfg)
{
    static const float w[] = {0.0f, 0.05f, 0.1f, 0.15f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.8f, 1.0f};
    printf("\n| language models | cld2_weight | dev en+fr (%d + %d lines) | test en+fr | neg as en/fr |\n"
           "|---|---|---|---|---|\n", sets[DEV_EN].n, sets[DEV_FR].n);
    for (int k = 0; k < n_cfg; k++) {
        cache c;
        cache_init(&c, ps[k]);
        srv_detect_params p = *ps[k];
        p.score = cached_score;
        p.score_ctx = &c;
        entry e = {names[k], run_module, &p};
        for (size_t j = 0; j < sizeof w / sizeof *w; j++) {
            p.cld2_weight = w[j];
            tally dev = run_sets(&e, DEV_EN, N_SETS, &c), test = run_sets(&e, EN, N_MAIN, &c);
            int nd = sets[DEV_EN].n + sets[DEV_FR].n, n_neg = sets[DE].n + sets[ES].n + sets[IT].n;
            printf("| %s | %.2f%s | %.1f%% (en %.1f, fr %.1f) | %.1f%% (en %.1f, fr %.1f) | %.1f%% |\n", names[k],
                   (double)w[j], w[j] == ps[k]->cld2_weight ? " (default)" : "",
                   pct(dev.top[DEV_EN] + dev.top[DEV_FR], nd), pct(dev.top[DEV_EN], sets[DEV_EN].n),
                   pct(dev.top[DEV_FR], sets[DEV_FR].n), pct(test.top[EN] + test.top[FR], 2 * N_POS),
                   pct(test.top[EN], N_POS), pct(test.top[FR], N_POS),
                   pct(test.ok[DE] + test.ok[ES] + test.ok[IT], n_neg));
        }
        free(c.val);
        free(c.state);
    }
}

/* srv_detect with p: accuracy per confidence band (the five main sets, right = the
 * line's language), and accuracy / false en-fr when answers under a threshold are
 * dropped. */
static void confidence_table(const char *name, const srv_detect_params *p)
{
    int band_ok[11] = {0}, band_n[11] = {0};
    static const int th[] = {0, 10, 20, 30, 40, 50, 60};
    int pos_ok[7] = {0}, neg_fc[7] = {0}, n_neg = 0;
    for (int s = EN; s < N_MAIN; s++) {
        for (int i = 0; i < sets[s].n; i++) {
            srv_lang_guess g[3];
            const char *x = sets[s].line[i];
            int n = srv_detect(x, strlen(x), p, g, 3);
            n_neg += s > FR;
            if (n == 0)
                continue;
            int right = strcmp(g[0].code, set_lang[s]) == 0;
            int b = (int)(g[0].confidence / 10);
            b = b > 10 ? 10 : b;
            band_ok[b] += right;
            band_n[b]++;
            for (int k = 0; k < 7; k++) {
                if (g[0].confidence < (float)th[k])
                    continue;
                if (s <= FR)
                    pos_ok[k] += right;
                else
                    neg_fc[k] += is_cand(g[0].code);
            }
        }
    }
    printf("\n%s:\n\n| confidence of the answer | lines | right |\n|---|---|---|\n", name);
    for (int b = 10; b >= 0; b--)
        if (band_n[b])
            printf("| %d-%d | %d | %.0f%% |\n", b * 10, b == 10 ? 100 : b * 10 + 10, band_n[b],
                   100.0 * band_ok[b] / band_n[b]);
    printf("\n| answers kept (confidence >=) | en+fr right | de/es/it reported as en or fr |\n|---|---|---|\n");
    for (int k = 0; k < 7; k++)
        printf("| %d | %.1f%% | %.1f%% |\n", th[k], 100.0 * pos_ok[k] / (2 * N_POS), 100.0 * neg_fc[k] / n_neg);
}

/* A text of SRV_DETECT_MAX_BYTES (the module's cap) and a 1 MiB one (cut to it):
 * microseconds per call. */
static void long_text_cost(const char *name, const srv_detect_params *p)
{
    size_t cap = 1 << 20, at = 0;
    char *big = malloc(cap + 1);
    for (int i = 0; at < cap; i = (i + 1) % sets[FR].n) {
        size_t k = strlen(sets[FR].line[i]);
        if (at + k + 1 > cap)
            break;
        memcpy(big + at, sets[FR].line[i], k);
        at += k;
        big[at++] = ' ';
    }
    size_t sizes[] = {SRV_DETECT_MAX_BYTES, at};
    printf("long text, %s: ", name);
    for (int s = 0; s < 2; s++) {
        srv_lang_guess g[3];
        int reps = 20, n = 0;
        double t0 = bench_now();
        for (int r = 0; r < reps; r++)
            n = srv_detect(big, sizes[s], p, g, 3);
        printf("%s%zu bytes of French: %.0f us per call (%s %.1f)", s ? "; " : "", sizes[s],
               1e6 * (bench_now() - t0) / reps, n ? g[0].code : "-", n ? g[0].confidence : 0.0f);
    }
    printf("\n");
    free(big);
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Per call, microseconds: srv_detect with p, and srv_charlm_log_prob of each model
 * alone, over the 1450 main lines, REPS times each: mean, median, p99, max. */
static void latency_table(const srv_detect_params *p, srv_charlm *const *lm)
{
    enum { REPS = 5 };
    int n = 0;
    for (int s = EN; s < N_MAIN; s++)
        n += sets[s].n;
    double *t = malloc(sizeof *t * (size_t)n * REPS);
    printf("\n| per call, one thread (%d lines x %d) | mean us | p50 | p99 | max |\n|---|---|---|---|---|\n", n, REPS);
    for (int what = 0; what < 3; what++) {
        int k = 0;
        for (int r = 0; r < REPS; r++)
            for (int s = EN; s < N_MAIN; s++)
                for (int i = 0; i < sets[s].n; i++) {
                    const char *x = sets[s].line[i];
                    srv_lang_guess g[3];
                    double t0 = bench_now();
                    if (what == 0)
                        srv_detect(x, strlen(x), p, g, 3);
                    else
                        srv_charlm_log_prob(lm[what - 1], x, strlen(x), NULL);
                    t[k++] = 1e6 * (bench_now() - t0);
                }
        double sum = 0;
        for (int i = 0; i < k; i++)
            sum += t[i];
        qsort(t, (size_t)k, sizeof *t, by_double);
        static const char *const label[] = {"srv_detect, shipped models (CLD2 + both .charlm)", "en.charlm alone",
                                            "fr.charlm alone"};
        printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", label[what], sum / k, t[k / 2], t[(size_t)(k * 0.99)],
               t[k - 1]);
    }
    free(t);
}

/* The language models a server of these model directories would use
 * (srv_detect_lms_init), their tokenizers loaded into tok[]. */
static int server_lms(const char *const *dirs, const char *const *langs, int n, mt_tokenizer **tok,
                      srv_detect_lms *l)
{
    for (int i = 0; i < n; i++) {
        mt_err err;
        if (mt_tokenizer_load(dirs[i], &tok[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
    }
    srv_detect_lms_init(l, langs, (const mt_tokenizer *const *)tok, n);
    return 0;
}

/* The character models of dir (en.charlm, fr.charlm) as the candidates' (l's spms none). */
static int charlm_lms(const char *dir_en, const char *dir_fr, srv_charlm **lm, srv_detect_lms *l)
{
    const char *path[2][2] = {{dir_en, "en"}, {dir_fr, "fr"}};
    for (int i = 0; i < 2; i++) {
        char file[1100];
        mt_err err;
        snprintf(file, sizeof file, "%s/%s.charlm", path[i][0], path[i][1]);
        if (srv_charlm_load(file, &lm[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
    }
    srv_detect_lms_init(l, cand, (const mt_tokenizer *const[]){NULL, NULL}, 2);
    srv_detect_lms_add_charlms(l, (const srv_charlm *const *)lm, 2);
    return 0;
}

#define MAX_CHARLM_DIRS 8

int main(int argc, char **argv)
{
    if (read_set("tests/fixtures/tokenizer/inputs/test.en.txt", N_POS, 1, &sets[EN]) ||
        read_set("tests/fixtures/tokenizer/inputs/test.fr.txt", N_POS, 1, &sets[FR]) ||
        read_set("tests/fixtures/detect/de.txt", 0, 0, &sets[DE]) ||
        read_set("tests/fixtures/detect/es.txt", 0, 0, &sets[ES]) ||
        read_set("tests/fixtures/detect/it.txt", 0, 0, &sets[IT]) ||
        read_set("tests/fixtures/tokenizer/inputs/dev.en.txt", 0, 1, &sets[DEV_EN]) ||
        read_set("tests/fixtures/tokenizer/inputs/dev.fr.txt", 0, 1, &sets[DEV_FR])) {
        fprintf(stderr, "run from the repository root\n");
        return 1;
    }
    const char *lm = "/usr/share/libexttextcat/";
    void *tc_all = special_textcat_Init("/usr/share/libexttextcat/fpdb.conf", lm);
    char conf[] = "/tmp/detect_eval_XXXXXX";
    int fd = mkstemp(conf);
    if (fd < 0 || dprintf(fd, "en.lm en--utf8\nfr.lm fr--utf8\n") < 0) {
        perror(conf);
        return 1;
    }
    close(fd);
    void *tc_cand = special_textcat_Init(conf, lm);
    unlink(conf);
    if (!tc_all || !tc_cand) {
        fprintf(stderr, "libexttextcat: cannot read the fingerprints in %s\n", lm);
        return 1;
    }

    /* the language models: shipped (the server's: the .charlm files beside the models),
     * OPUS-MT (two choices of the English one), CHARLM_DIRS, decoders */
    static const char *const shipped_dirs[] = {"models/en-fr", "models/fr-en"};
    static const char *const opus_dirs[] = {"tests/fixtures/opus-mt/en-mg", "tests/fixtures/opus-mt/tc-big-fr-en"};
    mt_tokenizer *tok_shipped[2], *tok_opus[2];
    srv_charlm *lm_shipped[2], *lm_dir[MAX_CHARLM_DIRS][2];
    srv_detect_lms lms_shipped, lms_shipped_c, lms_opus, lms_opus2, lms_dir[MAX_CHARLM_DIRS];
    if (server_lms(shipped_dirs, cand, 2, tok_shipped, &lms_shipped) ||
        server_lms(opus_dirs, cand, 2, tok_opus, &lms_opus) ||
        charlm_lms(shipped_dirs[0], shipped_dirs[1], lm_shipped, &lms_shipped_c))
        return 1;
    srv_detect_lms_add_charlms(&lms_shipped, (const srv_charlm *const *)lm_shipped, 2);    /* as the server */
    lms_opus2 = lms_opus;                                   /* en: tc-big-fr-en's target.spm */
    lms_opus2.spm[0] = mt_tokenizer_spm(tok_opus[1], 1);
    char dirs_buf[2048], *dir_name[MAX_CHARLM_DIRS], *save = NULL;
    int n_dirs = 0;
    snprintf(dirs_buf, sizeof dirs_buf, "%s", getenv("CHARLM_DIRS") ? getenv("CHARLM_DIRS") : "");
    for (char *d = strtok_r(dirs_buf, " ", &save); d && n_dirs < MAX_CHARLM_DIRS; d = strtok_r(NULL, " ", &save)) {
        if (charlm_lms(d, d, lm_dir[n_dirs], &lms_dir[n_dirs]))
            return 1;
        dir_name[n_dirs++] = d;
    }
    decoder_lm dec = {{NULL, NULL}, {NULL, NULL}};
    if (decoder_lm_load(&dec))
        return 1;

    srv_detect_params none = srv_detect_default_params(), hinted = none, shipped = none, shipped_lm_only,
                      shipped_spm = none, opus = none, opus_spm_only, opus2 = none, decoder = none, decoder_dev,
                      dir_p[MAX_CHARLM_DIRS];
    hinted.cand = cand;
    hinted.n_cand = 2;
    srv_detect_lms_params(&lms_shipped, &shipped);
    shipped_lm_only = shipped;
    shipped_lm_only.cld2_weight = 0;
    lms_shipped_c = lms_shipped;                            /* the shipped spms alone, as before issue 48 */
    memset(lms_shipped_c.charlm, 0, sizeof lms_shipped_c.charlm);
    srv_detect_lms_params(&lms_shipped_c, &shipped_spm);
    srv_detect_lms_params(&lms_opus, &opus);
    srv_detect_lms_params(&lms_opus2, &opus2);
    opus_spm_only = opus;
    opus_spm_only.cld2_weight = 0;
    decoder = hinted;
    decoder.score = decoder_score;
    decoder.score_ctx = &dec;
    decoder_dev = decoder;
    decoder_dev.cld2_weight = 0.2f;                         /* its best on dev (the table below) */
    for (int i = 0; i < n_dirs; i++) {
        dir_p[i] = none;
        srv_detect_lms_params(&lms_dir[i], &dir_p[i]);
    }

    cld2_cfg plain = {NULL, 0}, best = {NULL, 1}, best_enfr = {"en,fr", 1}, best_fr = {"fr", 1};
    entry entries[32] = {
        {"CLD2, plain", run_cld2, &plain},
        {"CLD2, best effort", run_cld2, &best},
        {"CLD2, best effort, hints en,fr", run_cld2, &best_enfr},
        {"CLD2, best effort, hint fr", run_cld2, &best_fr},
        {"libexttextcat, 164 fingerprints", run_textcat, tc_all},
        {"libexttextcat, en+fr fingerprints only", run_textcat, tc_cand},
        {"srv_detect, no candidates", run_module, &none},
        {"srv_detect, candidates en,fr, no language models (the shipped models before issue 48: joint spm)",
         run_module, &hinted},
        {"srv_detect, the shipped models' spms only (joint: no language model)", run_module, &shipped_spm},
        {"**srv_detect, shipped models/en-fr + models/fr-en** (en.charlm, fr.charlm)", run_module, &shipped},
        {"srv_detect, the shipped .charlm files, cld2_weight 0 (the models decide among en/fr)", run_module,
         &shipped_lm_only},
        {"srv_detect, OPUS-MT spms (en-mg source: en; tc-big-fr-en source: fr)", run_module, &opus},
        {"srv_detect, the same spms, cld2_weight 0 (spm decides among en/fr)", run_module, &opus_spm_only},
        {"srv_detect, OPUS-MT spms (tc-big-fr-en target: en, source: fr)", run_module, &opus2},
        {"srv_detect, shipped models' decoders as LMs (bench only)", run_module, &decoder},
        {"srv_detect, shipped models' decoders as LMs, cld2_weight 0.2 (bench only)", run_module, &decoder_dev},
    };
    int n_entries = 16;
    char dir_label[MAX_CHARLM_DIRS][1200];
    for (int i = 0; i < n_dirs; i++) {
        snprintf(dir_label[i], sizeof dir_label[i], "srv_detect, charlm %s", dir_name[i]);
        entries[n_entries++] = (entry){dir_label[i], run_module, &dir_p[i]};
    }
    int rows_only = argc > 2 && strcmp(argv[2], "--rows") == 0;
    printf("%d en + %d fr positives (3-10 words), %d de + %d es + %d it negatives; %s\n", sets[EN].n, sets[FR].n,
           sets[DE].n, sets[ES].n, sets[IT].n, argc > 1 ? argv[1] : "");
    printf("language models of the shipped models: %s\n\n", shipped.score ? "their .charlm files" : "none");
    printf("| detector | all: top-1 | cand {en,fr} | neg: de/es/it as en/fr | us/call |\n|---|---|---|---|---|\n");
    for (int i = 0; i < n_entries; i++)
        measure(&entries[i]);
    if (!rows_only) {
        const char *names[3 + MAX_CHARLM_DIRS] = {"shipped .charlm files", "OPUS-MT spms (en-mg, tc-big-fr-en)",
                                                  "OPUS-MT spms (tc-big-fr-en both sides)"};
        srv_detect_params *ps[4 + MAX_CHARLM_DIRS] = {&shipped, &opus, &opus2};
        int n_cfg = 3;
        for (int i = 0; i < n_dirs; i++) {
            names[n_cfg] = dir_label[i] + strlen("srv_detect, ");
            ps[n_cfg++] = &dir_p[i];
        }
        names[n_cfg] = "shipped decoders";
        ps[n_cfg++] = &decoder;
        weight_table(names, ps, n_cfg);
        latency_table(&shipped, lm_shipped);
        confidence_table("srv_detect, shipped models (their .charlm files), all 1450 lines", &shipped);
        confidence_table("srv_detect, CLD2 alone (candidates en, fr), all 1450 lines", &hinted);
        confidence_table("srv_detect, OPUS-MT spms (en-mg, tc-big-fr-en), all 1450 lines", &opus);
        printf("\n");
        long_text_cost("shipped models (.charlm)", &shipped);
        long_text_cost("CLD2 alone", &hinted);
        long_text_cost("OPUS-MT spms", &opus);
    }
    decoder_lm_free(&dec);
    for (int i = 0; i < 2; i++) {
        mt_tokenizer_free(tok_shipped[i]);
        mt_tokenizer_free(tok_opus[i]);
        srv_charlm_free(lm_shipped[i]);
        for (int j = 0; j < n_dirs; j++)
            srv_charlm_free(lm_dir[j][i]);
    }
    textcat_Done(tc_all);
    textcat_Done(tc_cand);
    return 0;
}
