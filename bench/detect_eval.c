/* detect_eval: the two Debian language identifiers measured on short strings, and
 * the rule of server/detect built on the one picked (issue 27).
 *
 *   bash bench/detect_eval.sh            # builds into $B (default build-det) and runs this
 *
 * Sets (read from the repository root, the same selection as tests/test_detect.c):
 *   positives: the first 500 lines of 3-10 whitespace-separated words of
 *              tests/fixtures/tokenizer/inputs/test.en.txt and of test.fr.txt
 *              (the held-out test split of models/en-fr);
 *   negatives: every line of tests/fixtures/detect/{de,es,it}.txt (Debian
 *              package synopses, bench/detect_negset.py).
 * Measured, with the candidate set {en, fr} (the languages the models translate from):
 *   all   top-1 accuracy over every language the detector knows (positives);
 *   cand  accuracy of the answer restricted to the candidates: the first of
 *         {en, fr} in the detector's ranked list, else its top-1 (positives);
 *   neg   how often a negative line gets en or fr as that answer;
 *   us    microseconds per call (mean over every line of every set, one thread).
 * Then the confidence of srv_detect_languages: accuracy per band and what a
 * confidence threshold trades, and the cost of a long text.  `detect_eval LABEL
 * --rows` prints the first table only (detect_eval.sh's second run).
 *
 * Detectors: CLD2 (Debian's libcld2) through server/detect/cld2.h in four
 * settings; libexttextcat with all of Debian's 164 fingerprints (its answer list:
 * every language within 3% of the best), and with the candidates' fingerprints
 * only (its restricted classifier, which can answer nothing else); and
 * srv_detect_languages itself.  Prints Markdown. */
#include <libexttextcat/textcat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "detect/cld2.h"
#include "detect/detect.h"

#define N_POS 500
#define MAX_LINE 4096

enum { EN, FR, DE, ES, IT, N_SETS };
static const char *const set_lang[N_SETS] = {"en", "fr", "de", "es", "it"};
static const char *const cand[] = {"en", "fr"};

typedef struct {
    char **line;
    int    n;
} set;

static set sets[N_SETS];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

/* Lines of path (newline stripped); with max > 0, only the first max of 3-10 words. */
static int read_set(const char *path, int max, set *s)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    char buf[MAX_LINE];
    s->line = calloc(max > 0 ? (size_t)max : 4096, sizeof *s->line);
    s->n = 0;
    while (fgets(buf, sizeof buf, f) && s->n < (max > 0 ? max : 4096)) {
        buf[strcspn(buf, "\n")] = '\0';
        int w = count_words(buf);
        if (max > 0 ? (w < 3 || w > 10) : w == 0)
            continue;
        s->line[s->n++] = strdup(buf);
    }
    fclose(f);
    if (max > 0 && s->n < max) {
        fprintf(stderr, "%s: only %d lines of 3-10 words\n", path, s->n);
        return -1;
    }
    return 0;
}

static int is_cand(const char *code)
{
    return strcmp(code, "en") == 0 || strcmp(code, "fr") == 0;
}

/* One detector: its ranked codes for a text (at most 8), into codes[]; the count. */
typedef int (*detector)(void *ctx, const char *text, size_t len, char codes[][16]);

typedef struct {
    const char *name;
    detector    fn;
    void       *ctx;
} entry;

/* ---- CLD2 settings ---- */
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

/* ---- libexttextcat ---- */
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

/* ---- the module ---- */
static int run_module(void *ctx, const char *text, size_t len, char codes[][16])
{
    srv_lang_guess g[3];
    int n = srv_detect_languages(text, len, ctx ? cand : NULL, ctx ? 2 : 0, g, 3);
    for (int i = 0; i < n; i++)
        snprintf(codes[i], 16, "%.15s", g[i].code);
    return n;
}

static void measure(const entry *e)
{
    int all_ok[2] = {0, 0}, cand_ok[2] = {0, 0}, neg_fc[3] = {0, 0, 0}, calls = 0;
    double t = 0;
    for (int s = 0; s < N_SETS; s++) {
        for (int i = 0; i < sets[s].n; i++) {
            const char *x = sets[s].line[i];
            char codes[8][16];
            double t0 = now();
            int n = e->fn(e->ctx, x, strlen(x), codes);
            t += now() - t0;
            calls++;
            const char *top = n > 0 ? codes[0] : "";
            const char *pick = top;
            for (int k = 0; k < n; k++)
                if (is_cand(codes[k])) {
                    pick = codes[k];
                    break;
                }
            if (s <= FR) {
                all_ok[s] += strcmp(top, set_lang[s]) == 0;
                cand_ok[s] += strcmp(pick, set_lang[s]) == 0;
            } else {
                neg_fc[s - DE] += is_cand(pick);
            }
        }
    }
    int n_neg = sets[DE].n + sets[ES].n + sets[IT].n;
    printf("| %s | %.1f%% (en %.1f, fr %.1f) | %.1f%% (en %.1f, fr %.1f) | %.1f%% (de %d, es %d, it %d of %d) | %.1f |\n",
           e->name, 100.0 * (all_ok[0] + all_ok[1]) / (2 * N_POS), 100.0 * all_ok[0] / N_POS,
           100.0 * all_ok[1] / N_POS, 100.0 * (cand_ok[0] + cand_ok[1]) / (2 * N_POS),
           100.0 * cand_ok[0] / N_POS, 100.0 * cand_ok[1] / N_POS,
           100.0 * (neg_fc[0] + neg_fc[1] + neg_fc[2]) / n_neg, neg_fc[0], neg_fc[1], neg_fc[2],
           sets[DE].n, 1e6 * t / calls);
}

/* srv_detect_languages with candidates {en, fr}: accuracy per confidence band (all
 * five sets, right = the line's language), and accuracy / false en-fr when answers
 * under a threshold are dropped. */
static void confidence_table(void)
{
    int band_ok[11] = {0}, band_n[11] = {0};
    static const int th[] = {0, 10, 20, 30, 40, 50, 60};
    int pos_ok[7] = {0}, neg_fc[7] = {0}, n_neg = 0;
    for (int s = 0; s < N_SETS; s++) {
        for (int i = 0; i < sets[s].n; i++) {
            srv_lang_guess g[3];
            const char *x = sets[s].line[i];
            int n = srv_detect_languages(x, strlen(x), cand, 2, g, 3);
            if (n == 0) {
                n_neg += s > FR;
                continue;
            }
            int right = strcmp(g[0].code, set_lang[s]) == 0;
            int b = (int)(g[0].confidence / 10);
            b = b > 10 ? 10 : b;
            band_ok[b] += right;
            band_n[b]++;
            n_neg += s > FR;
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
    printf("\n| confidence of the answer | lines | right |\n|---|---|---|\n");
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
static void long_text_cost(void)
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
    for (int s = 0; s < 2; s++) {
        srv_lang_guess g[3];
        int reps = 20, n = 0;
        double t0 = now();
        for (int r = 0; r < reps; r++)
            n = srv_detect_languages(big, sizes[s], cand, 2, g, 3);
        printf("%s%zu bytes of French: %.0f us per call (%s %.1f)", s ? "; " : "\nlong text: ", sizes[s],
               1e6 * (now() - t0) / reps, n ? g[0].code : "-", n ? g[0].confidence : 0.0f);
    }
    printf("\n");
    free(big);
}

int main(int argc, char **argv)
{
    if (read_set("tests/fixtures/tokenizer/inputs/test.en.txt", N_POS, &sets[EN]) ||
        read_set("tests/fixtures/tokenizer/inputs/test.fr.txt", N_POS, &sets[FR]) ||
        read_set("tests/fixtures/detect/de.txt", 0, &sets[DE]) ||
        read_set("tests/fixtures/detect/es.txt", 0, &sets[ES]) ||
        read_set("tests/fixtures/detect/it.txt", 0, &sets[IT])) {
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

    cld2_cfg plain = {NULL, 0}, best = {NULL, 1}, best_enfr = {"en,fr", 1}, best_fr = {"fr", 1};
    const entry entries[] = {
        {"CLD2, plain", run_cld2, &plain},
        {"CLD2, best effort", run_cld2, &best},
        {"CLD2, best effort, hints en,fr", run_cld2, &best_enfr},
        {"CLD2, best effort, hint fr", run_cld2, &best_fr},
        {"libexttextcat, 164 fingerprints", run_textcat, tc_all},
        {"libexttextcat, en+fr fingerprints only", run_textcat, tc_cand},
        {"**srv_detect_languages**, no candidates", run_module, NULL},
        {"**srv_detect_languages**, candidates en,fr", run_module, (void *)1},
    };
    int rows_only = argc > 2 && strcmp(argv[2], "--rows") == 0;
    printf("%d en + %d fr positives (3-10 words), %d de + %d es + %d it negatives; %s\n\n", sets[EN].n,
           sets[FR].n, sets[DE].n, sets[ES].n, sets[IT].n, argc > 1 ? argv[1] : "");
    printf("| detector | all: top-1 | cand {en,fr} | neg: de/es/it as en/fr | us/call |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++)
        measure(&entries[i]);
    if (!rows_only) {
        confidence_table();
        long_text_cost();
    }
    textcat_Done(tc_all);
    textcat_Done(tc_cand);
    return 0;
}
