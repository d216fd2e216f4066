/* test_detect: server/detect (srv_detect, srv_detect_languages) on real text and
 * hostile bytes; its language models (engine/tokenizer's mt_spm_log_prob, chosen by
 * server/service/detect_source's srv_detect_lms_init); srv_detect_source's
 * fallback for text without letters.
 *
 * - held-out accuracy: the first 500 lines of 3-10 words of the test split
 *   (tests/fixtures/tokenizer/inputs/test.{en,fr}.txt), candidates {en, fr}: the
 *   floors are the figures measured by bench/detect_eval.sh (97.7%: the issue's
 *   target of 99% is not reached, see server/detect/detect.h);
 * - negatives: German, Spanish and Italian synopses (tests/fixtures/detect/)
 *   reported as en or fr at most as often as measured (23.3%; 16.0% of them
 *   at confidence >= 20), and the confidence bands as measured;
 * - empty, whitespace, symbols, malformed UTF-8, controls, every single byte,
 *   random bytes, huge texts (the cap, a cut inside a character);
 * - candidate codes in any case, with region or script, unknown, NULL, too long;
 * - the contract on every answer (count <= max and <= 3, codes non-empty and
 *   NUL-terminated, confidences within 0..100 and non-increasing);
 * - two threads detecting the same lines at once give the single-thread answers,
 *   with and without language models (run under ThreadSanitizer: make
 *   B=build-det-tsan OPT="-O1 -g -march=native -fsanitize=thread"
 *   build-det-tsan/tests/test_detect);
 * - mt_spm_log_prob against python3-sentencepiece's best-path score
 *   (tests/fixtures/detect/spm_log_prob.jsonl, tests/gen_spm_log_prob.py), its
 *   limits and hostile bytes; mt_spm_same;
 * - which models srv_detect_lms_init gives the candidates: none for the shipped
 *   joint en+fr SentencePiece model, the OPUS-MT monolingual ones otherwise;
 * - the second stage with the OPUS-MT models: held-out accuracy as measured
 *   (99.0%), negatives unchanged line by line, French lines CLD2 alone reads as
 *   English; its arithmetic with a scripted scorer (weights, ties, confidence,
 *   what the scorer is given, which candidates it is asked about);
 * - srv_detect_source on a two-model server: text without letters falls back to
 *   the first source with a path to the target (confidence 0), blank text 400;
 * - the character language models (server/detect/charlm.h, issue 48): the shipped
 *   models/en-fr/en.charlm and models/fr-en/fr.charlm score as the reference scorer
 *   models/recipe/charlm.py (tests/fixtures/detect/charlm_ref.jsonl,
 *   tests/gen_charlm_ref.py); the back-off arithmetic on a small model built here;
 *   the normalization; every refusal of the loader, with its message; which
 *   candidates get one and the weight that goes with them; the held-out accuracy
 *   with them as measured (99.8%), negatives unchanged line by line, and the
 *   short strings CLD2 alone gets wrong ("documentation pour NTP (Network Time
 *   Protocol)", "Generate random integers") made right.
 * Run from the repository root (make test does). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "detect/charlm.h"
#include "detect/cld2.h"
#include "detect/detect.h"
#include "http/errors.h"
#include "http/reply.h"
#include "mt.h"
#include "service/detect_source.h"
#include "util/hash.h"
#include "util/utf8.h"

#define N_POS 500
#define MAX_LINE 4096

typedef struct {
    char **line;
    int    n;
} lines;

static lines pos_en, pos_fr, neg[3];
static const char *const neg_lang[3] = {"de", "es", "it"};
static const char *const enfr[] = {"en", "fr"};

/* Tokenizers: the shipped models (one joint en+fr spm) and two real OPUS-MT
 * models (an English and a French source spm); the OPUS-MT candidates' models. */
#define OPUS "tests/fixtures/opus-mt"
enum { TOK_EN_FR, TOK_FR_EN, TOK_EN_MG, TOK_FR_EN_BIG, N_TOK };
static const char *const tok_dir[N_TOK] = {"models/en-fr", "models/fr-en", OPUS "/en-mg", OPUS "/tc-big-fr-en"};
static mt_tokenizer *tok[N_TOK];
static srv_detect_lms opus_lms;
static srv_detect_params opus_params;
/* The shipped character models, and the candidates {en, fr} with them (the server's). */
static srv_charlm *charlm[2];
static srv_detect_lms charlm_lms;
static srv_detect_params charlm_params;

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

/* The lines of path; with max > 0 only the first max of 3-10 words (bench/detect_eval.c
 * selects the same). */
static void read_lines(const char *path, int max, lines *l)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run from the repository root)", path);
    char buf[MAX_LINE];
    int cap = max > 0 ? max : 1024;
    l->line = calloc((size_t)cap, sizeof *l->line);
    assert_non_null(l->line);
    l->n = 0;
    while (l->n < cap && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        int w = count_words(buf);
        if (max > 0 ? (w < 3 || w > 10) : w == 0)
            continue;
        l->line[l->n] = strdup(buf);
        assert_non_null(l->line[l->n]);
        l->n++;
    }
    fclose(f);
    if (max > 0)
        assert_int_equal(l->n, max);
}

static int setup(void **state)
{
    read_lines("tests/fixtures/tokenizer/inputs/test.en.txt", N_POS, &pos_en);
    read_lines("tests/fixtures/tokenizer/inputs/test.fr.txt", N_POS, &pos_fr);
    static const char *const files[3] = {"tests/fixtures/detect/de.txt", "tests/fixtures/detect/es.txt",
                                         "tests/fixtures/detect/it.txt"};
    for (int i = 0; i < 3; i++) {
        read_lines(files[i], 0, &neg[i]);
        assert_true(neg[i].n >= 100);
    }
    for (int i = 0; i < N_TOK; i++) {
        mt_err err;
        if (mt_tokenizer_load(tok_dir[i], &tok[i], &err) != MT_OK)
            fail_msg("%s", err.msg);
    }
    const mt_tokenizer *opus_tok[2] = {tok[TOK_EN_MG], tok[TOK_FR_EN_BIG]};
    srv_detect_lms_init(&opus_lms, enfr, opus_tok, 2);
    opus_params = srv_detect_default_params();
    srv_detect_lms_params(&opus_lms, &opus_params);
    static const char *const charlm_path[2] = {"models/en-fr/en.charlm", "models/fr-en/fr.charlm"};
    for (int i = 0; i < 2; i++) {
        mt_err err;
        if (srv_charlm_load(charlm_path[i], &charlm[i], &err) != MT_OK)
            fail_msg("%s", err.msg);
    }
    const mt_tokenizer *shipped_tok[2] = {tok[TOK_EN_FR], tok[TOK_FR_EN]};
    srv_detect_lms_init(&charlm_lms, enfr, shipped_tok, 2);
    srv_detect_lms_add_charlms(&charlm_lms, (const srv_charlm *const *)charlm, 2);
    charlm_params = srv_detect_default_params();
    srv_detect_lms_params(&charlm_lms, &charlm_params);
    return 0;
}

static void free_lines(lines *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->line[i]);
    free(l->line);
}

static int teardown(void **state)
{
    free_lines(&pos_en);
    free_lines(&pos_fr);
    for (int i = 0; i < 3; i++)
        free_lines(&neg[i]);
    for (int i = 0; i < N_TOK; i++)
        mt_tokenizer_free(tok[i]);
    for (int i = 0; i < 2; i++)
        srv_charlm_free(charlm[i]);
    return 0;
}

/* The header's promises on one answer. */
static void check_contract(const srv_lang_guess *g, int n, int max)
{
    assert_true(n >= 0 && n <= 3 && n <= (max > 0 ? max : 0));
    for (int i = 0; i < n; i++) {
        size_t k = strnlen(g[i].code, sizeof g[i].code);
        assert_true(k > 0 && k < sizeof g[i].code);
        assert_true(g[i].confidence >= 0.0f && g[i].confidence <= 100.0f);
        if (i > 0)
            assert_true(g[i].confidence <= g[i - 1].confidence);
    }
}

/* The answer for text with the given candidates ("" when none), contract checked. */
static const char *detect(const char *text, size_t len, const char *const *cand, int n_cand, float *conf)
{
    static __thread srv_lang_guess g[3];
    int n = srv_detect_languages(text, len, cand, n_cand, g, 3);
    check_contract(g, n, 3);
    if (conf)
        *conf = n ? g[0].confidence : 0.0f;
    return n ? g[0].code : "";
}

static const char *detect_s(const char *text, const char *const *cand, int n_cand)
{
    return detect(text, strlen(text), cand, n_cand, NULL);
}

static int right_of(const lines *l, const char *lang, const char *const *cand, int n_cand)
{
    int ok = 0;
    for (int i = 0; i < l->n; i++)
        ok += strcmp(detect_s(l->line[i], cand, n_cand), lang) == 0;
    return ok;
}

static void test_heldout_accuracy(void **state)
{
    int en = right_of(&pos_en, "en", enfr, 2), fr = right_of(&pos_fr, "fr", enfr, 2);
    int en0 = right_of(&pos_en, "en", NULL, 0), fr0 = right_of(&pos_fr, "fr", NULL, 0);
    print_message("held-out, candidates {en, fr}: en %d/500, fr %d/500 = %.1f%% (issue 27's target: 99%%)\n",
                  en, fr, (en + fr) / 10.0);
    print_message("held-out, no candidates:       en %d/500, fr %d/500 = %.1f%%\n", en0, fr0, (en0 + fr0) / 10.0);
    /* bench/detect_eval.sh, Debian 12 libcld2-0 0.0.0-git20150806-9: 495 + 482, and 497 + 437 */
    assert_true(en >= 494);
    assert_true(fr >= 480);
    assert_true(en + fr >= 975);
    assert_true(en0 + fr0 >= 930);
    assert_true(en + fr > en0 + fr0);                  /* the hint earns its place */
}

static void test_negatives_bound(void **state)
{
    int fc = 0, fc20 = 0, own = 0, total = 0;
    for (int s = 0; s < 3; s++) {
        int fc_s = 0, own_s = 0;
        for (int i = 0; i < neg[s].n; i++) {
            float conf;
            const char *x = neg[s].line[i];
            const char *code = detect(x, strlen(x), enfr, 2, &conf);
            int as_cand = strcmp(code, "en") == 0 || strcmp(code, "fr") == 0;
            fc_s += as_cand;
            fc20 += as_cand && conf >= 20.0f;
            own_s += strcmp(code, neg_lang[s]) == 0;
        }
        print_message("%s: %d/%d reported as en or fr, %d as %s\n", neg_lang[s], fc_s, neg[s].n, own_s,
                      neg_lang[s]);
        fc += fc_s;
        own += own_s;
        total += neg[s].n;
    }
    print_message("negatives as en/fr: %d/%d (%.1f%%), at confidence >= 20: %d (%.1f%%)\n", fc, total,
                  100.0 * fc / total, fc20, 100.0 * fc20 / total);
    /* measured: 105 of 450 (23.3%), 72 (16.0%) at confidence >= 20; 320 in their own language */
    assert_true(fc * 1000 <= total * 240);
    assert_true(fc20 * 1000 <= total * 165);
    assert_true(own * 100 >= total * 70);
}

/* The header's confidence table: >= 90 right 99% of the time, < 20 rarely right. */
static void test_confidence_bands(void **state)
{
    int hi = 0, hi_ok = 0, lo = 0, lo_ok = 0;
    const lines *all[5] = {&pos_en, &pos_fr, &neg[0], &neg[1], &neg[2]};
    static const char *const lang[5] = {"en", "fr", "de", "es", "it"};
    for (int s = 0; s < 5; s++)
        for (int i = 0; i < all[s]->n; i++) {
            float conf;
            const char *x = all[s]->line[i];
            int ok = strcmp(detect(x, strlen(x), enfr, 2, &conf), lang[s]) == 0;
            if (conf >= 90.0f) {
                hi++;
                hi_ok += ok;
            } else if (conf > 0.0f && conf < 20.0f) {
                lo++;
                lo_ok += ok;
            }
        }
    print_message("confidence >= 90: %d/%d right; < 20: %d/%d right\n", hi_ok, hi, lo_ok, lo);
    assert_true(hi >= 600 && hi_ok * 100 >= hi * 98);
    assert_true(lo > 0 && lo_ok * 100 <= lo * 40);
}

static void test_plain_sentences(void **state)
{
    assert_string_equal(detect_s("The quick brown fox jumps over the lazy dog and runs away.", NULL, 0), "en");
    assert_string_equal(detect_s("Le renard brun saute par-dessus le chien paresseux et s'enfuit.", NULL, 0), "fr");
    assert_string_equal(detect_s("Der schnelle braune Fuchs springt über den faulen Hund und läuft davon.", enfr, 2),
                        "de");
    assert_string_equal(detect_s("El rápido zorro marrón salta sobre el perro perezoso y se escapa corriendo.",
                                 enfr, 2), "es");
    /* CLD2's retired code "iw" is reported as "he" */
    assert_string_equal(detect_s("\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD7\xA2\xD7\x95\xD7\x9C\xD7\x9D, "
                                 "\xD7\x96\xD7\x94\xD7\x95 \xD7\x9E\xD7\xA9\xD7\xA4\xD7\x98 \xD7\x91\xD7\xA2\xD7\x91"
                                 "\xD7\xA8\xD7\x99\xD7\xAA \xD7\xA9\xD7\x9C \xD7\x91\xD7\x93\xD7\x99\xD7\xA7\xD7\x94.",
                                 NULL, 0), "he");
}

static void test_empty_and_no_letters(void **state)
{
    static const char *const texts[] = {"", " ", "\t\n \r\f", "   \n\n  ", "12345 678.90", "!!! ??? ...",
                                        "\xC2\xA0\xE2\x80\x83\xE3\x80\x80", "-- // ** ## ++", "\xE2\x82\xAC 42"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        assert_string_equal(detect_s(texts[i], NULL, 0), "");
        assert_string_equal(detect_s(texts[i], enfr, 2), "");
    }
    srv_lang_guess g[3];
    assert_int_equal(srv_detect_languages(NULL, 0, NULL, 0, g, 3), 0);
    assert_int_equal(srv_detect_languages(NULL, 10, enfr, 2, g, 3), 0);
}

static void test_max_and_args(void **state)
{
    const char *text = "Ce paquet fournit la documentation de la bibliothèque standard du langage.";
    srv_lang_guess g[3];
    assert_int_equal(srv_detect_languages(text, strlen(text), NULL, 0, g, 0), 0);
    assert_int_equal(srv_detect_languages(text, strlen(text), NULL, 0, g, -1), 0);
    assert_int_equal(srv_detect_languages(text, strlen(text), NULL, 0, NULL, 3), 0);
    assert_int_equal(srv_detect_languages(text, strlen(text), enfr, -5, g, 3), 1);   /* n_cand < 0: none */
    assert_string_equal(g[0].code, "fr");

    /* two long paragraphs: several languages, best first, and max cuts the list */
    char mixed[4096];
    snprintf(mixed, sizeof mixed, "%s %s %s %s %s %s",
             "This package provides the documentation for the standard library of the language, with",
             "examples and a tutorial that explains how to write, build and test your first programs.",
             "It also contains the reference manual, which describes every module in great detail.",
             "Ce paquet fournit la documentation de la bibliothèque standard du langage, avec des",
             "exemples et un tutoriel qui explique comment écrire, compiler et tester vos premiers",
             "programmes. Il contient aussi le manuel de référence, qui décrit chaque module en détail.");
    int n = srv_detect_languages(mixed, strlen(mixed), NULL, 0, g, 3);
    check_contract(g, n, 3);
    assert_true(n >= 2);
    assert_true((strcmp(g[0].code, "en") == 0 && strcmp(g[1].code, "fr") == 0) ||
                (strcmp(g[0].code, "fr") == 0 && strcmp(g[1].code, "en") == 0));
    srv_lang_guess one[1];
    assert_int_equal(srv_detect_languages(mixed, strlen(mixed), NULL, 0, one, 1), 1);
    assert_string_equal(one[0].code, g[0].code);
}

/* Malformed UTF-8 and characters CLD2 refuses count as spaces, not as "no language". */
static void test_invalid_utf8_and_controls(void **state)
{
    static const char *const bad[] = {
        "Le paquet fournit \xff la documentation \xfe compl\xe8te du logiciel pour les utilisateurs.",
        "Le paquet fournit \xC0\xAF la documentation \xED\xA0\x80 compl\xC3 te du logiciel pour les utilisateurs.",
        "Le paquet fournit\x01 la documentation\x1b compl\xC2\x85te du logiciel\x7f pour les utilisateurs.",
        "Le paquet fournit la documentation \xEF\xB7\x90 compl\xC3\xA8te \xEF\xBF\xBE du logiciel pour les utilisateurs.",
        "Le paquet fournit la documentation compl\xC3\xA8te du logiciel pour les utilisateurs.\xF0\x9F",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_string_equal(detect_s(bad[i], enfr, 2), "fr");
    /* the reason for the scrub: CLD2 alone answers nothing for such text */
    detect_cld2_result r;
    detect_cld2(bad[2], (int)strlen(bad[2]), NULL, 1, &r);
    assert_false(detect_cld2_is_language(r.lang[0]));
    assert_true(r.valid_bytes < (int)strlen(bad[2]));
    /* an embedded NUL is a control character like the others */
    static const char nul[] = "The package provides\0the complete documentation for its users and developers.";
    assert_string_equal(detect(nul, sizeof nul - 1, NULL, 0, NULL), "en");
}

/* Every single byte, every pair starting with a lead byte, and random byte strings. */
static void test_any_bytes(void **state)
{
    srv_lang_guess g[3];
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        check_contract(g, srv_detect_languages(&c, 1, enfr, 2, g, 3), 3);
        for (int b2 = 0; b2 < 256; b2 += 7) {
            char two[2] = {c, (char)b2};
            check_contract(g, srv_detect_languages(two, 2, NULL, 0, g, 3), 3);
        }
    }
    uint64_t s = 0x9e3779b97f4a7c15u;
    char buf[512];
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = (size_t)(iter % 500) + 1;
        for (size_t i = 0; i < len; i++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            /* half the strings mostly ASCII letters and spaces, half any byte */
            buf[i] = iter & 1 ? (char)(s >> 24) : (char)("abcdefghijklmnopqrstuvwxyz  \xc3\xa9"[(s >> 24) % 30]);
        }
        int n = srv_detect_languages(buf, len, iter % 3 ? enfr : NULL, iter % 3 ? 2 : 0, g, 1 + iter % 3);
        check_contract(g, n, 1 + iter % 3);
    }
}

/* Texts past SRV_DETECT_MAX_BYTES: read up to the cap only, cut on a character. */
static void test_huge(void **state)
{
    size_t cap = 4u << 20;
    char *big = malloc(cap);
    assert_non_null(big);
    size_t at = 0;
    for (int i = 0; at < cap; i = (i + 1) % pos_fr.n) {
        size_t k = strlen(pos_fr.line[i]);
        if (at + k + 1 > cap)
            break;
        memcpy(big + at, pos_fr.line[i], k);
        at += k;
        big[at++] = ' ';
    }
    float conf;
    assert_string_equal(detect(big, at, enfr, 2, &conf), "fr");
    assert_true(conf >= 80.0f);

    /* the cap falls inside "é" (2 bytes): the cut steps back to its start */
    char *e = malloc(SRV_DETECT_MAX_BYTES + 2);
    assert_non_null(e);
    for (size_t i = 0; i < SRV_DETECT_MAX_BYTES - 1; i += 2)
        memcpy(e + i, "a ", 2);
    memcpy(e + SRV_DETECT_MAX_BYTES - 1, "\xC3\xA9", 2);
    e[SRV_DETECT_MAX_BYTES + 1] = 'x';
    srv_lang_guess g[3];
    check_contract(g, srv_detect_languages(e, SRV_DETECT_MAX_BYTES + 2, NULL, 0, g, 3), 3);
    /* a length past INT_MAX is cut to the cap before anything is read: only the
     * first SRV_DETECT_MAX_BYTES + 1 bytes are touched (ASan would see more) */
    check_contract(g, srv_detect_languages(e, SIZE_MAX, NULL, 0, g, 3), 3);
    check_contract(g, srv_detect_languages(e, (size_t)1 << 31, enfr, 2, g, 3), 3);
    free(e);
    free(big);
}

/* A short French line that CLD2 alone reads as English: the French hint tips it. */
#define TIPPED "débogage et diagnostics"

static void test_candidate_forms(void **state)
{
    assert_string_equal(detect_s(TIPPED, NULL, 0), "en");
    assert_string_equal(detect_s(TIPPED, enfr, 2), "fr");
    static const char *const forms[][2] = {
        {"EN", "FR"}, {"en-US", "fr_FR"}, {"en_gb", "fr-ca"}, {"fr", "fr"}, {"Fr", NULL},
    };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        const char *c[2] = {forms[i][0], forms[i][1]};
        assert_string_equal(detect_s(TIPPED, c, 2), "fr");
    }
    /* codes CLD2 does not know are ignored (639-3 codes are mapped by the service) */
    static const char *const unknown[] = {"fra", "", "xx", "french-language-code-too-long", "f"};
    assert_string_equal(detect_s(TIPPED, unknown, 5), "en");
    /* a candidate list of only English gives no hint: as without candidates */
    static const char *const en_only[] = {"en", "EN", "en-US"};
    assert_string_equal(detect_s(TIPPED, en_only, 3), "en");
    /* many candidates: CLD2 reads four hints (English, repeats and unknown codes not
     * counted), so French tips the answer as the fourth and not as the fifth */
    static const char *const fourth[] = {"en", "de", "xx", "es", "de", "it", "fr", "pt", "nl", "sv", "da", "cs"};
    static const char *const fifth[] = {"de", "es", "it", "pt", "fr", "nl", "sv", "da", "pl", "cs", "hu"};
    assert_string_equal(detect_s(TIPPED, fourth, 12), "fr");
    assert_string_not_equal(detect_s(TIPPED, fifth, 11), "fr");    /* (Portuguese, hinted) */
    /* Hebrew asked as "he" or as CLD2's "iw" */
    static const char *const he[] = {"he"}, *const iw[] = {"iw"};
    const char *shalom = "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD7\xA2\xD7\x95\xD7\x9C\xD7\x9D";
    assert_string_equal(detect_s(shalom, he, 1), "he");
    assert_string_equal(detect_s(shalom, iw, 1), "he");
}

/* Two threads on the same lines at once: the answers of one thread alone. */
typedef struct {
    const lines *l;
    char       (*codes)[16];
    float       *conf;
    const srv_detect_params *p;     /* NULL: candidates {en, fr}, no language models */
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    for (int rep = 0; rep < 2; rep++)
        for (int i = 0; i < j->l->n; i++) {
            srv_lang_guess g[3];
            const char *x = j->l->line[i];
            int n = j->p ? srv_detect(x, strlen(x), j->p, g, 3) : srv_detect_languages(x, strlen(x), enfr, 2, g, 3);
            snprintf(j->codes[i], 16, "%.15s", n ? g[0].code : "");
            j->conf[i] = n ? g[0].confidence : 0.0f;
        }
    return NULL;
}

static void test_two_threads(void **state)
{
    const lines *sets[2] = {&pos_fr, &neg[0]};
    char (*codes[3])[16];
    float *conf[3];
    for (int k = 0; k < 3; k++) {
        codes[k] = calloc(N_POS, 16);
        conf[k] = calloc(N_POS, sizeof(float));
        assert_true(codes[k] && conf[k]);
    }
    for (int s = 0; s < 6; s++) {
        const srv_detect_params *p = s < 2 ? NULL : s < 4 ? &opus_params : &charlm_params;
        job alone = {sets[s % 2], codes[2], conf[2], p};
        run_job(&alone);
        job a = {sets[s % 2], codes[0], conf[0], p}, b = {sets[s % 2], codes[1], conf[1], p};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, run_job, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, run_job, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        for (int i = 0; i < sets[s % 2]->n; i++)
            for (int k = 0; k < 2; k++) {
                assert_string_equal(codes[k][i], codes[2][i]);
                assert_true(conf[k][i] == conf[2][i]);
            }
    }
    for (int k = 0; k < 3; k++) {
        free(codes[k]);
        free(conf[k]);
    }
}

/* ---- mt_spm_log_prob: the spm models as language models ---- */

/* Against python3-sentencepiece 0.1.97's best-path score (tests/gen_spm_log_prob.py):
 * spm sums in float, so agreement is to float rounding. */
static void test_spm_log_prob_reference(void **state)
{
    json_error_t jerr;
    FILE *f = fopen("tests/fixtures/detect/spm_log_prob.jsonl", "rb");
    assert_non_null(f);
    char path[256] = "";
    mt_spm *sp = NULL;
    int rows = 0, models = 0, unk_rows = 0;
    double worst = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, &jerr);
        if (!j)
            fail_msg("spm_log_prob.jsonl: %s", jerr.text);
        const char *spm_path = json_string_value(json_object_get(j, "spm"));
        json_t *text = json_object_get(j, "text");
        double want = json_number_value(json_object_get(j, "score"));
        assert_true(spm_path && json_is_string(text));
        if (strcmp(spm_path, path) != 0) {
            mt_spm_free(sp);
            mt_err err;
            if (mt_spm_load(spm_path, &sp, &err) != MT_OK)
                fail_msg("%s", err.msg);
            snprintf(path, sizeof path, "%s", spm_path);
            models++;
        }
        double got = NAN;
        mt_err err;
        assert_int_equal(mt_spm_log_prob(sp, json_string_value(text), json_string_length(text), &got, &err), MT_OK);
        double d = fabs(got - want) / (fabs(want) > 1 ? fabs(want) : 1);
        if (d > 1e-5)
            fail_msg("%s: \"%s\": %.6f, python3-sentencepiece %.6f", spm_path, json_string_value(text), got, want);
        worst = d > worst ? d : worst;
        unk_rows += want < -1000;           /* unknown characters cost min_score - 10 each */
        rows++;
        json_decref(j);
    }
    free(line);
    fclose(f);
    mt_spm_free(sp);
    print_message("mt_spm_log_prob: %d texts x models (%d models), worst relative difference %.1e\n", rows, models,
                  worst);
    assert_true(rows >= 1000 && models == 6);
    (void)unk_rows;
}

static void test_spm_log_prob_limits(void **state)
{
    const mt_spm *en = mt_tokenizer_spm(tok[TOK_EN_MG], 0), *fr = mt_tokenizer_spm(tok[TOK_FR_EN_BIG], 0);
    double lp = 1;
    mt_err err;
    assert_int_equal(mt_spm_log_prob(NULL, "a", 1, &lp, &err), MT_ERR_INPUT);
    assert_int_equal(mt_spm_log_prob(en, NULL, 1, &lp, &err), MT_ERR_INPUT);
    assert_int_equal(mt_spm_log_prob(en, "a", 1, NULL, &err), MT_ERR_INPUT);
    assert_int_equal(mt_spm_log_prob(en, NULL, 0, &lp, NULL), MT_OK);
    assert_true(lp == 0.0);
    assert_int_equal(mt_spm_log_prob(en, " \t\n  ", 5, &lp, NULL), MT_OK);     /* normalizes to nothing */
    assert_true(lp == 0.0);

    /* the cap: MT_SPM_LOG_PROB_MAX bytes are scored, one more is refused */
    char *big = malloc(MT_SPM_LOG_PROB_MAX + 1);
    assert_non_null(big);
    for (int i = 0; i <= MT_SPM_LOG_PROB_MAX; i++)
        big[i] = "the cat "[i % 8];
    assert_int_equal(mt_spm_log_prob(en, big, MT_SPM_LOG_PROB_MAX, &lp, &err), MT_OK);
    assert_true(isfinite(lp) && lp < -1000);
    assert_int_equal(mt_spm_log_prob(en, big, MT_SPM_LOG_PROB_MAX + 1, &lp, &err), MT_ERR_TOO_LONG);
    assert_int_equal(mt_spm_log_prob(en, big, SIZE_MAX, &lp, &err), MT_ERR_TOO_LONG);
    /* more text, lower probability; the same text, the same answer */
    double a, b, c;
    assert_int_equal(mt_spm_log_prob(en, big, 100, &a, NULL), MT_OK);
    assert_int_equal(mt_spm_log_prob(en, big, 200, &b, NULL), MT_OK);
    assert_int_equal(mt_spm_log_prob(en, big, 100, &c, NULL), MT_OK);
    assert_true(b < a && a < 0 && a == c);
    free(big);

    /* the signal: each model prefers its own language by nats per character */
    const char *e = "This package provides the documentation for the library.";
    const char *f = "Ce paquet fournit la documentation de la bibliothèque.";
    double en_e, fr_e, en_f, fr_f;
    assert_int_equal(mt_spm_log_prob(en, e, strlen(e), &en_e, NULL), MT_OK);
    assert_int_equal(mt_spm_log_prob(fr, e, strlen(e), &fr_e, NULL), MT_OK);
    assert_int_equal(mt_spm_log_prob(en, f, strlen(f), &en_f, NULL), MT_OK);
    assert_int_equal(mt_spm_log_prob(fr, f, strlen(f), &fr_f, NULL), MT_OK);
    print_message("log p per char: English text en %.2f fr %.2f; French text en %.2f fr %.2f\n",
                  en_e / (double)strlen(e), fr_e / (double)strlen(e), en_f / (double)strlen(f),
                  fr_f / (double)strlen(f));
    assert_true(en_e - fr_e > 0.3 * (double)strlen(e));
    assert_true(fr_f - en_f > 0.3 * (double)strlen(f));

    /* any bytes: malformed UTF-8, controls, a cut character, NUL; finite, <= 0 */
    static const char *const hostile[] = {"\xff\xfe\xfd", "abc\xe2\x96", "\xc3", "a\x01\x02\x7f b", "\xf4\x90\x80\x80",
                                          "\xed\xa0\x80 x", "\xe2\x96\x81\xe2\x96\x81"};
    for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
        assert_int_equal(mt_spm_log_prob(en, hostile[i], strlen(hostile[i]), &lp, NULL), MT_OK);
        assert_true(isfinite(lp) && lp <= 0);
    }
    static const char nul[] = "a\0b";
    assert_int_equal(mt_spm_log_prob(fr, nul, 3, &lp, NULL), MT_OK);
    assert_true(isfinite(lp) && lp < 0);
    uint64_t s = 0x2545f4914f6cdd1du;
    char buf[512];
    for (int iter = 0; iter < 2000; iter++) {
        size_t len = (size_t)(iter % 400) + 1;
        for (size_t i = 0; i < len; i++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            buf[i] = (char)(s >> 24);
        }
        assert_int_equal(mt_spm_log_prob(iter & 1 ? en : fr, buf, len, &lp, NULL), MT_OK);
        assert_true(isfinite(lp) && lp <= 0);
    }
}

static void test_spm_same(void **state)
{
    const mt_spm *ef_src = mt_tokenizer_spm(tok[TOK_EN_FR], 0), *ef_tgt = mt_tokenizer_spm(tok[TOK_EN_FR], 1);
    const mt_spm *fe_src = mt_tokenizer_spm(tok[TOK_FR_EN], 0);
    const mt_spm *mg_src = mt_tokenizer_spm(tok[TOK_EN_MG], 0), *mg_tgt = mt_tokenizer_spm(tok[TOK_EN_MG], 1);
    const mt_spm *big_src = mt_tokenizer_spm(tok[TOK_FR_EN_BIG], 0), *big_tgt = mt_tokenizer_spm(tok[TOK_FR_EN_BIG], 1);
    assert_true(ef_src && ef_tgt && ef_src != ef_tgt);      /* two loads of one file ... */
    assert_true(mt_spm_same(ef_src, ef_tgt));               /* ... are the same model */
    assert_true(mt_spm_same(ef_src, fe_src));               /* and the other shipped model has it too */
    assert_true(mt_spm_same(mg_src, mg_src));
    assert_false(mt_spm_same(mg_src, mg_tgt));
    assert_false(mt_spm_same(big_src, big_tgt));
    assert_false(mt_spm_same(mg_src, big_src));
    assert_false(mt_spm_same(ef_src, mg_src));
    assert_false(mt_spm_same(NULL, mg_src));
    assert_false(mt_spm_same(mg_src, NULL));
    assert_false(mt_spm_same(NULL, NULL));
    assert_null(mt_tokenizer_spm(NULL, 0));
}

/* ---- srv_detect_lms_init: which model a candidate gets ---- */

static void lms_of(const int *which, const char *const *langs, int n, srv_detect_lms *l, srv_detect_params *p)
{
    const mt_tokenizer *t[8];
    for (int i = 0; i < n; i++)
        t[i] = which[i] >= 0 ? tok[which[i]] : NULL;
    srv_detect_lms_init(l, langs, t, n);
    *p = srv_detect_default_params();
    srv_detect_lms_params(l, p);
}

static void test_lms_selection(void **state)
{
    srv_detect_lms l;
    srv_detect_params p;
    /* the shipped models: one joint en+fr spm on both sides of both: no model, CLD2 alone */
    static const char *const ef_fe[] = {"en", "fr"};
    lms_of((const int[]){TOK_EN_FR, TOK_FR_EN}, ef_fe, 2, &l, &p);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.cand[0], "en");
    assert_string_equal(l.cand[1], "fr");
    assert_null(l.spm[0]);
    assert_null(l.spm[1]);
    assert_true(p.cand == l.cand && p.n_cand == 2);
    assert_null(p.score);
    assert_true(p.cld2_weight == SRV_DETECT_CLD2_WEIGHT);
    /* OPUS-MT: separate monolingual source models */
    assert_true(opus_lms.n == 2 && opus_lms.spm[0] == mt_tokenizer_spm(tok[TOK_EN_MG], 0) &&
                opus_lms.spm[1] == mt_tokenizer_spm(tok[TOK_FR_EN_BIG], 0));
    assert_non_null(opus_params.score);
    assert_true(opus_params.score_ctx == &opus_lms);
    /* a joint model first, a monolingual one for the same language after it: that one */
    static const char *const en_en_fr[] = {"en", "en", "fr"};
    lms_of((const int[]){TOK_EN_FR, TOK_EN_MG, TOK_FR_EN_BIG}, en_en_fr, 3, &l, &p);
    assert_int_equal(l.n, 2);
    assert_true(l.spm[0] == mt_tokenizer_spm(tok[TOK_EN_MG], 0));
    assert_non_null(p.score);
    /* a model for one candidate only: fewer than two, CLD2 alone */
    lms_of((const int[]){TOK_EN_FR, TOK_FR_EN_BIG}, ef_fe, 2, &l, &p);
    assert_null(l.spm[0]);
    assert_non_null(l.spm[1]);
    assert_null(p.score);
    /* one spm file for two languages (as if en-mg's source.spm served "fr" too): neither */
    lms_of((const int[]){TOK_EN_MG, TOK_EN_MG}, ef_fe, 2, &l, &p);
    assert_true(!l.spm[0] && !l.spm[1] && !p.score);
    /* three candidates, two of them sharing one file: the third keeps its model, alone: off */
    static const char *const en_fr_de[] = {"en", "fr", "de"};
    lms_of((const int[]){TOK_FR_EN_BIG, TOK_EN_MG, TOK_FR_EN_BIG}, en_fr_de, 3, &l, &p);
    assert_int_equal(l.n, 3);
    assert_true(!l.spm[0] && l.spm[1] && !l.spm[2] && !p.score);
    /* unknown source languages and missing tokenizers are left out */
    static const char *const odd[] = {"", NULL, "fr", "en"};
    lms_of((const int[]){TOK_EN_MG, TOK_EN_MG, -1, TOK_EN_MG}, odd, 4, &l, &p);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.cand[0], "fr");
    assert_true(!l.spm[0] && l.spm[1] && !p.score);
    /* the score callback: its model's log-probability; -1 for no model or a bad index */
    double lp = 0;
    assert_int_equal(opus_params.score(opus_params.score_ctx, 0, "hello", 5, &lp), 0);
    assert_true(lp < 0);
    assert_int_equal(opus_params.score(opus_params.score_ctx, 2, "hello", 5, &lp), -1);
    assert_int_equal(opus_params.score(opus_params.score_ctx, -1, "hello", 5, &lp), -1);
}

/* ---- the second stage on the held-out lines (OPUS-MT models) ---- */

static int lm_right_of(const lines *l, const char *lang, const srv_detect_params *p)
{
    int ok = 0;
    for (int i = 0; i < l->n; i++) {
        srv_lang_guess g[3];
        int n = srv_detect(l->line[i], strlen(l->line[i]), p, g, 3);
        check_contract(g, n, 3);
        ok += n > 0 && strcmp(g[0].code, lang) == 0;
    }
    return ok;
}

static void test_lm_heldout(void **state)
{
    int en = lm_right_of(&pos_en, "en", &opus_params), fr = lm_right_of(&pos_fr, "fr", &opus_params);
    print_message("held-out, candidates {en, fr} with the OPUS-MT spms: en %d/500, fr %d/500 = %.1f%%\n", en, fr,
                  (en + fr) / 10.0);
    /* bench/detect_eval.sh: 493 + 497 (CLD2 alone: 495 + 482) */
    assert_true(en >= 492 && fr >= 496 && en + fr >= 990);
    /* the shipped models' candidates (no language model): exactly CLD2 alone */
    srv_detect_lms l;
    srv_detect_params shipped;
    lms_of((const int[]){TOK_EN_FR, TOK_FR_EN}, enfr, 2, &l, &shipped);
    assert_int_equal(lm_right_of(&pos_en, "en", &shipped), right_of(&pos_en, "en", enfr, 2));
    assert_int_equal(lm_right_of(&pos_fr, "fr", &shipped), right_of(&pos_fr, "fr", enfr, 2));
    /* the confidence keeps its meaning: >= 90 right 99% of the time (measured: 99%) */
    int hi = 0, hi_ok = 0;
    const lines *all[5] = {&pos_en, &pos_fr, &neg[0], &neg[1], &neg[2]};
    static const char *const lang[5] = {"en", "fr", "de", "es", "it"};
    for (int s = 0; s < 5; s++)
        for (int i = 0; i < all[s]->n; i++) {
            srv_lang_guess g[3];
            int n = srv_detect(all[s]->line[i], strlen(all[s]->line[i]), &opus_params, g, 3);
            if (n && g[0].confidence >= 90.0f) {
                hi++;
                hi_ok += strcmp(g[0].code, lang[s]) == 0;
            }
        }
    print_message("with the OPUS-MT spms, confidence >= 90: %d/%d right\n", hi_ok, hi);
    assert_true(hi >= 600 && hi_ok * 100 >= hi * 98);
}

/* The negatives: a line CLD2 gives another language keeps it, line by line; so
 * the count reported as en or fr cannot grow. */
static void test_lm_negatives_unchanged(void **state)
{
    int fc = 0, fc_lm = 0, total = 0;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < neg[s].n; i++) {
            const char *x = neg[s].line[i];
            srv_lang_guess a[3], b[3];
            int na = srv_detect_languages(x, strlen(x), enfr, 2, a, 3);
            int nb = srv_detect(x, strlen(x), &opus_params, b, 3);
            check_contract(b, nb, 3);
            assert_int_equal(na > 0, nb > 0);
            int cand_a = na && (!strcmp(a[0].code, "en") || !strcmp(a[0].code, "fr"));
            int cand_b = nb && (!strcmp(b[0].code, "en") || !strcmp(b[0].code, "fr"));
            assert_int_equal(cand_a, cand_b);
            if (na && !cand_a) {
                assert_string_equal(a[0].code, b[0].code);
                assert_true(a[0].confidence == b[0].confidence);
            }
            fc += cand_a;
            fc_lm += cand_b;
            total++;
        }
    print_message("negatives as en/fr: CLD2 alone %d/%d, with the OPUS-MT spms %d\n", fc, total, fc_lm);
    assert_int_equal(fc, fc_lm);
}

/* French lines of the test split that CLD2 alone (hinted) reads as English, and an
 * English one it reads as French: the models set them right; German stays German. */
static void test_lm_picks(void **state)
{
    static const char *const french[] = {
        "Bibliothèque de conversion Windows metafile",
        "transcription phonétique pour la langue slovaque",
        "L'outil uftrace gère les applications multitâches ou multi-fils.",
        "dispositif d'alignement Burrows-Wheeler",
    };
    for (size_t i = 0; i < sizeof french / sizeof *french; i++) {
        float c0, c1;
        assert_string_equal(detect(french[i], strlen(french[i]), enfr, 2, &c0), "en");
        srv_lang_guess g[3];
        int n = srv_detect(french[i], strlen(french[i]), &opus_params, g, 3);
        check_contract(g, n, 3);
        assert_true(n >= 2);
        assert_string_equal(g[0].code, "fr");
        assert_string_equal(g[1].code, "en");          /* CLD2's answer, after it */
        c1 = g[0].confidence;
        assert_true(c1 > 0 && c1 <= c0);
    }
    srv_lang_guess g[3];
    const char *qt = "Qt 5 qdoc tool";
    assert_string_equal(detect_s(qt, enfr, 2), "fr");
    assert_true(srv_detect(qt, strlen(qt), &opus_params, g, 3) >= 1);
    assert_string_equal(g[0].code, "en");
    /* a language that is not a candidate is still reported, whatever the models say */
    static const char *const other[][2] = {
        {"Der schnelle braune Fuchs springt über den faulen Hund und läuft davon.", "de"},
        {"El rápido zorro marrón salta sobre el perro perezoso y se escapa corriendo.", "es"},
        {"Questo pacchetto contiene la documentazione della libreria standard.", "it"},
    };
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        assert_true(srv_detect(other[i][0], strlen(other[i][0]), &opus_params, g, 3) >= 1);
        assert_string_equal(g[0].code, other[i][1]);
    }
    /* and text without letters is still nothing */
    assert_int_equal(srv_detect("12345 !!!", 9, &opus_params, g, 3), 0);
}

/* ---- the second stage's arithmetic, with a scripted scorer ---- */

typedef struct {
    double per_char[4];     /* log p per character that candidate i's "model" gives */
    int    ret[4];          /* what the callback returns for candidate i */
    int    calls[4];
    int    bad;             /* the callback was handed text it must never see */
    size_t longest;
} script;

static int scripted(void *ctx, int i, const char *text, size_t len, double *logp)
{
    script *s = ctx;
    if (i < 0 || i >= 4 || !text || len == 0 || len > SRV_DETECT_LM_BYTES) {
        s->bad = 1;
        return -1;
    }
    s->calls[i]++;
    s->longest = len > s->longest ? len : s->longest;
    size_t chars = 0;
    for (size_t at = 0; at < len;) {                 /* valid UTF-8, no controls but TAB LF FF CR */
        uint32_t c;
        size_t k = mt_utf8_decode((const uint8_t *)text + at, len - at, &c);
        if (!k || (c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r') || (c >= 0x7f && c <= 0x9f)) {
            s->bad = 1;
            return -1;
        }
        at += k;
        chars++;
    }
    *logp = s->per_char[i] * (double)chars;
    return s->ret[i];
}

/* srv_detect of text with the scripted scorer over cand; *g gets the answer. */
static int scripted_detect(const char *text, const char *const *cand, int n_cand, script *s, float weight,
                           srv_lang_guess g[3])
{
    srv_detect_params p = srv_detect_default_params();
    p.cand = cand;
    p.n_cand = n_cand;
    p.score = scripted;
    p.score_ctx = s;
    p.cld2_weight = weight;
    int n = srv_detect(text, strlen(text), &p, g, 3);
    check_contract(g, n, 3);
    assert_false(s->bad);
    return n;
}

static void test_lm_rule(void **state)
{
    const char *fr_text = "Ce paquet fournit la documentation.";
    float c;
    assert_string_equal(detect(fr_text, strlen(fr_text), enfr, 2, &c), "fr");     /* CLD2: fr, c */
    srv_lang_guess g[3];
    const float w = SRV_DETECT_CLD2_WEIGHT;

    /* en's model ahead by more than CLD2's vote: en, confidence c (a full vote's lead) */
    script s = {{-1.0, -1.0 - w * c / 100 - 1.0}, {0, 0}, {0}, 0, 0};
    assert_true(scripted_detect(fr_text, enfr, 2, &s, w, g) == 2);
    assert_string_equal(g[0].code, "en");
    assert_float_equal(g[0].confidence, c, 1e-3);
    assert_string_equal(g[1].code, "fr");
    assert_true(g[1].confidence <= g[0].confidence);
    assert_int_equal(s.calls[0], 1);
    assert_int_equal(s.calls[1], 1);
    /* ahead by less than the vote: CLD2's answer stands, its confidence untouched */
    s = (script){{-1.0, -1.0 - w * c / 100 + 0.05}, {0, 0}, {0}, 0, 0};
    scripted_detect(fr_text, enfr, 2, &s, w, g);
    assert_string_equal(g[0].code, "fr");
    assert_float_equal(g[0].confidence, c, 1e-4);
    /* ahead by a fifth of the weight beyond the vote: en at a fifth of the confidence */
    s = (script){{-1.0, -1.0 - w * c / 100 - 0.2 * w}, {0, 0}, {0}, 0, 0};
    scripted_detect(fr_text, enfr, 2, &s, w, g);
    assert_string_equal(g[0].code, "en");
    assert_float_equal(g[0].confidence, 0.2f * c, 1e-2);
    /* weight 0: the models alone; a tie keeps CLD2's answer */
    s = (script){{-2.0, -2.0}, {0, 0}, {0}, 0, 0};
    scripted_detect(fr_text, enfr, 2, &s, 0.0f, g);
    assert_string_equal(g[0].code, "fr");
    s = (script){{-1.99, -2.0}, {0, 0}, {0}, 0, 0};
    scripted_detect(fr_text, enfr, 2, &s, 0.0f, g);
    assert_string_equal(g[0].code, "en");
    assert_true(g[0].confidence > 0 && g[0].confidence <= c);
    /* a candidate without a model (-1), or a logp that is no number: CLD2 alone */
    double bad[] = {NAN, INFINITY, -INFINITY};
    s = (script){{-1.0, -9.0}, {-1, 0}, {0}, 0, 0};
    scripted_detect(fr_text, enfr, 2, &s, w, g);
    assert_string_equal(g[0].code, "fr");
    for (int k = 0; k < 3; k++) {
        s = (script){{bad[k], -9.0}, {0, 0}, {0}, 0, 0};
        scripted_detect(fr_text, enfr, 2, &s, w, g);
        assert_string_equal(g[0].code, "fr");
        assert_float_equal(g[0].confidence, c, 1e-4);
    }
    /* CLD2's answer without a model: nothing to weigh it against */
    s = (script){{-1.0, -9.0}, {0, -1}, {0}, 0, 0};
    scripted_detect(fr_text, enfr, 2, &s, w, g);
    assert_string_equal(g[0].code, "fr");
    /* the callback is asked by candidate index; codes CLD2 does not know and repeats are not asked */
    static const char *const mixed[] = {"fra", "FR", "fr_FR", "en-US"};
    s = (script){{-9.0, -5.0, -9.0, -1.0}, {0, 0, 0, 0}, {0}, 0, 0};
    scripted_detect(fr_text, mixed, 4, &s, w, g);
    assert_int_equal(s.calls[0], 0);                    /* "fra": unknown to CLD2 */
    assert_int_equal(s.calls[1], 1);
    assert_int_equal(s.calls[2], 0);                    /* French again */
    assert_int_equal(s.calls[3], 1);
    assert_string_equal(g[0].code, "en");               /* reported in CLD2's spelling */
    /* one candidate: no second stage */
    s = (script){{-9.0, -1.0}, {0, 0}, {0}, 0, 0};
    static const char *const fr_only[] = {"fr"};
    scripted_detect(fr_text, fr_only, 1, &s, w, g);
    assert_int_equal(s.calls[0], 0);
    /* a non-candidate answer: the models are not asked */
    const char *de = "Dieses Paket enthält die Dokumentation und viele Beispiele für Entwickler.";
    s = (script){{-0.1, -0.1}, {0, 0}, {0}, 0, 0};
    scripted_detect(de, enfr, 2, &s, w, g);
    assert_string_equal(g[0].code, "de");
    assert_int_equal(s.calls[0] + s.calls[1], 0);
    /* max cuts the rewritten list too */
    s = (script){{-1.0, -5.0}, {0, 0}, {0}, 0, 0};
    srv_detect_params p = srv_detect_default_params();
    p.cand = enfr;
    p.n_cand = 2;
    p.score = scripted;
    p.score_ctx = &s;
    srv_lang_guess one[1];
    assert_int_equal(srv_detect(fr_text, strlen(fr_text), &p, one, 1), 1);
    assert_string_equal(one[0].code, "en");
}

/* What the models are handed: the scrubbed text, at most SRV_DETECT_LM_BYTES, cut
 * on a character. */
static void test_lm_text(void **state)
{
    size_t n = SRV_DETECT_MAX_BYTES + 100;
    char *big = malloc(n + 1);
    assert_non_null(big);
    /* "é" (2 bytes) straddles byte SRV_DETECT_LM_BYTES; controls and bad bytes inside */
    for (size_t i = 0; i < n;)
        i += (size_t)snprintf(big + i, n + 1 - i, "Le paquet fournit la documentation. ");
    memcpy(big + SRV_DETECT_LM_BYTES - 1, "\xC3\xA9", 2);
    memcpy(big + 10, "\x01\xff\x7f\xC2\x85", 5);
    script s = {{-1.0, -1.0}, {0, 0}, {0}, 0, 0};
    srv_lang_guess g[3];
    srv_detect_params p = srv_detect_default_params();
    p.cand = enfr;
    p.n_cand = 2;
    p.score = scripted;
    p.score_ctx = &s;
    int k = srv_detect(big, n, &p, g, 3);
    check_contract(g, k, 3);
    assert_false(s.bad);
    assert_int_equal(s.calls[0] + s.calls[1], 2);
    assert_int_equal(s.longest, SRV_DETECT_LM_BYTES - 1);
    free(big);
}

/* ---- srv_detect_source: a server of en-fr and fr-en ---- */

static srv_server fake_srv;
static mt_model_info info_ef = {.source_lang = "en", .target_lang = "fr"},
                     info_fe = {.source_lang = "fr", .target_lang = "en"};

static void fake_server(int n_models, int opus)
{
    memset(&fake_srv, 0, sizeof fake_srv);
    fake_srv.n_models = n_models;
    fake_srv.models[0].info = &info_ef;
    fake_srv.models[0].tok = tok[opus ? TOK_EN_MG : TOK_EN_FR];
    snprintf(fake_srv.models[0].id, sizeof fake_srv.models[0].id, "en-fr");
    fake_srv.models[1].info = &info_fe;
    fake_srv.models[1].tok = tok[opus ? TOK_FR_EN_BIG : TOK_FR_EN];
    snprintf(fake_srv.models[1].id, sizeof fake_srv.models[1].id, "fr-en");
}

/* srv_detect_source of one text: its return value; *g and *resp what it wrote. */
static int source_of(const char *text, const char *target, srv_lang_guess *g, srv_response *resp)
{
    memset(resp, 0, sizeof *resp);
    memset(g, 0, sizeof *g);
    const char *texts[1] = {text};
    return srv_detect_source(&fake_srv, texts, 1, target, g, resp);
}

static void test_detect_source_fallback(void **state)
{
    srv_lang_guess g;
    srv_response resp;
    fake_server(2, 0);
    /* no letters: the first source with a path to the target, confidence 0 */
    static const char *const no_letters[] = {"123", "!!!", "42 + 17 = 59", "\xE2\x82\xAC 42", "-- // **"};
    for (size_t i = 0; i < sizeof no_letters / sizeof *no_letters; i++) {
        assert_int_equal(source_of(no_letters[i], "fr", &g, &resp), 0);
        assert_int_equal(resp.error, SRV_OK);
        assert_string_equal(g.code, "en");
        assert_true(g.confidence == 0.0f);
        assert_int_equal(source_of(no_letters[i], "en", &g, &resp), 0);     /* en is the target: fr */
        assert_string_equal(g.code, "fr");
        assert_true(g.confidence == 0.0f);
    }
    /* no source reaches the target: 400 as before */
    assert_int_equal(source_of("123", "de", &g, &resp), -1);
    assert_int_equal(resp.error, SRV_E_UNSUPPORTED_LANGUAGE);
    assert_non_null(strstr(resp.message, "could not detect"));
    /* blank text: 400 empty_text, no fallback */
    assert_int_equal(source_of(" \t\n ", "fr", &g, &resp), -1);
    assert_int_equal(resp.error, SRV_E_EMPTY_TEXT);
    /* detected: as before */
    assert_int_equal(source_of("Ce paquet fournit la documentation.", "en", &g, &resp), 0);
    assert_string_equal(g.code, "fr");
    assert_true(g.confidence > 50);
    assert_int_equal(source_of("Ce paquet fournit la documentation.", "fr", &g, &resp), -1);
    assert_non_null(strstr(resp.message, "which is the target"));
    assert_int_equal(source_of("Dieses Paket enthält die Dokumentation und viele Beispiele.", "fr", &g, &resp), -1);
    assert_non_null(strstr(resp.message, "German (de"));
    /* one model: its source */
    fake_server(1, 0);
    assert_int_equal(source_of("2024", "fr", &g, &resp), 0);
    assert_string_equal(g.code, "en");
    assert_int_equal(source_of("2024", "en", &g, &resp), -1);
}

/* The server's detection uses the models it has: the shipped ones without their
 * .charlm files give CLD2's answer, OPUS-MT ones the second stage's, the shipped
 * ones with their .charlm files the character models'. */
static void test_detect_texts_models(void **state)
{
    const char *x = "Bibliothèque de conversion Windows metafile";
    const char *texts[1] = {x};
    srv_lang_guess g[3];
    srv_response resp = {0};
    fake_server(2, 0);
    assert_true(srv_detect_texts(&fake_srv, texts, 1, g, 3, &resp) >= 1);
    assert_string_equal(g[0].code, "en");
    fake_server(2, 1);
    assert_true(srv_detect_texts(&fake_srv, texts, 1, g, 3, &resp) >= 1);
    assert_string_equal(g[0].code, "fr");
    assert_int_equal(resp.error, SRV_OK);
    /* the shipped models with their .charlm files (as models.c loads them): the character models */
    const char *ntp[1] = {"documentation pour NTP (Network Time Protocol)"};
    fake_server(2, 0);
    assert_true(srv_detect_texts(&fake_srv, ntp, 1, g, 3, &resp) >= 1);
    assert_string_equal(g[0].code, "en");                  /* CLD2 alone */
    fake_srv.models[0].charlm[0] = charlm[0];
    fake_srv.models[0].n_charlm = 1;
    fake_srv.models[1].charlm[0] = charlm[1];
    fake_srv.models[1].n_charlm = 1;
    assert_true(srv_detect_texts(&fake_srv, ntp, 1, g, 3, &resp) >= 1);
    assert_string_equal(g[0].code, "fr");
    srv_lang_guess src;
    assert_int_equal(source_of(ntp[0], "en", &src, &resp), 0);
    assert_string_equal(src.code, "fr");
    fake_srv.models[1].n_charlm = 0;                        /* one candidate with one: not used */
    assert_true(srv_detect_texts(&fake_srv, ntp, 1, g, 3, &resp) >= 1);
    assert_string_equal(g[0].code, "en");
    memset(&fake_srv, 0, sizeof fake_srv);
}

/* ---- the character language models (charlm.h) ---- */

/* Against models/recipe/charlm.py's scorer reading the same files (tests/gen_charlm_ref.py):
 * both sum the same doubles, so agreement is to rounding. */
static void test_charlm_reference(void **state)
{
    json_error_t jerr;
    FILE *f = fopen("tests/fixtures/detect/charlm_ref.jsonl", "rb");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    int rows = 0;
    double worst = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, &jerr);
        if (!j)
            fail_msg("charlm_ref.jsonl: %s", jerr.text);
        const char *model = json_string_value(json_object_get(j, "model"));
        json_t *text = json_object_get(j, "text");
        assert_true(model && json_is_string(text));
        const srv_charlm *m = strstr(model, "en.charlm") ? charlm[0] : charlm[1];
        size_t n = 0;
        double lp = srv_charlm_log_prob(m, json_string_value(text), json_string_length(text), &n);
        double want = json_number_value(json_object_get(j, "logp")), d = fabs(lp - want);
        if (d > 1e-9 * (1 + fabs(want)) || (json_int_t)n != json_integer_value(json_object_get(j, "n")))
            fail_msg("%s, \"%s\": %.9f over %zu characters, the reference %.9f over %lld", model,
                     json_string_value(text), lp, n, want, (long long)json_integer_value(json_object_get(j, "n")));
        worst = d > worst ? d : worst;
        rows++;
        json_decref(j);
    }
    free(line);
    fclose(f);
    print_message("charlm: %d reference rows, largest difference %.3g nat\n", rows, worst);
    assert_true(rows >= 100);
}

/* ---- a model built here: bytes in the file format ---- */

typedef struct {
    const char *gram;               /* ASCII, one code point a byte */
    int         nlp;                /* -ln p in 1/2048 nat, 0xffff: a context only */
    int         bow;                /* ln bow in 1/2048 nat */
} gram_row;

static uint32_t key_of(uint32_t seed, const char *g)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ seed;
    for (; *g; g++)
        h = mt_hash_mix64(h ^ (uint8_t)*g);
    return (uint32_t)(h >> 32);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t fnv(const unsigned char *p, size_t n)
{
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x01000193u;
    return h;
}

/* The checksum of buf[0..len) rewritten (after a test changed a byte on purpose). */
static void reseal(unsigned char *buf, size_t len)
{
    put32(buf + len - 4, fnv(buf, len - 4));
}

/* A .charlm of order n_orders: rows[k] (n[k] of them) the grams of order k+1, put in key
 * order; malloc'd, its length in *len. */
static unsigned char *build_charlm(const char *lang, uint32_t seed, uint32_t unk, int n_orders,
                                   const gram_row *const *rows, const int *n, size_t *len)
{
    size_t size = 64 + 4;
    for (int k = 0; k < n_orders; k++)
        size += (size_t)n[k] * (k + 1 < n_orders ? 8 : 6);
    unsigned char *b = calloc(1, size);
    assert_non_null(b);
    memcpy(b, "MTCHARLM", 8);
    put32(b + 8, 1);
    put32(b + 12, (uint32_t)n_orders);
    put32(b + 16, seed);
    put32(b + 20, unk);
    memcpy(b + 24, lang, strlen(lang));
    size_t at = 64;
    for (int k = 0; k < n_orders; k++) {
        int idx[16];
        for (int i = 0; i < n[k]; i++) {        /* insertion sort by key */
            int j = i;
            while (j > 0 && key_of(seed, rows[k][idx[j - 1]].gram) > key_of(seed, rows[k][i].gram)) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = i;
        }
        put32(b + 40 + 4 * k, (uint32_t)n[k]);
        for (int i = 0; i < n[k]; i++) {
            const gram_row *r = &rows[k][idx[i]];
            put32(b + at + 4 * i, key_of(seed, r->gram));
            b[at + 4 * n[k] + 2 * i] = (unsigned char)(r->nlp & 0xff);
            b[at + 4 * n[k] + 2 * i + 1] = (unsigned char)(r->nlp >> 8);
            if (k + 1 < n_orders) {
                b[at + 6 * n[k] + 2 * i] = (unsigned char)(r->bow & 0xff);
                b[at + 6 * n[k] + 2 * i + 1] = (unsigned char)((unsigned)r->bow >> 8);
            }
        }
        at += (size_t)n[k] * (k + 1 < n_orders ? 8 : 6);
    }
    reseal(b, size);
    *len = size;
    return b;
}

/* An order-2 model over ' ', 'a', 'b' ('c' a context only): every path of the back-off. */
static const gram_row uni[] = {{" ", 1000, -300}, {"a", 2000, -500}, {"b", 3000, -700}, {"c", 0xffff, -900}};
static const gram_row bi[] = {{" a", 400, 0}, {"ab", 600, 0}, {"c ", 100, 0}};

static srv_charlm *small_model(const char *lang)
{
    const gram_row *rows[2] = {uni, bi};
    int n[2] = {4, 3};
    size_t len;
    unsigned char *b = build_charlm(lang, 7, 20000, 2, rows, n, &len);
    srv_charlm *m = NULL;
    mt_err err;
    if (srv_charlm_parse(b, len, &m, &err) != MT_OK)
        fail_msg("%s", err.msg);
    free(b);
    return m;
}

static double lp_of(const srv_charlm *m, const char *text, size_t *n)
{
    return srv_charlm_log_prob(m, text, strlen(text), n);
}

static void test_charlm_backoff(void **state)
{
    srv_charlm *m = small_model("xx");
    assert_string_equal(srv_charlm_lang(m), "xx");
    assert_int_equal(srv_charlm_order(m), 2);
    assert_true(srv_charlm_bytes(m) > 0);
    const double q = 2048.0;
    size_t n = 0;
    /* "ab": a after ' ' (bigram " a"), b after a ("ab"), the end ' ' after b (no "b ":
     * bow(b) + p(' ')) */
    assert_true(fabs(lp_of(m, "ab", &n) - (-400 - 600 + (-700 - 1000)) / q) < 1e-12);
    assert_int_equal(n, 3);
    /* "ba": b after ' ' (bow(' ') + p(b)), a after b (bow(b) + p(a)), ' ' after a (bow(a) + p(' ')) */
    assert_true(fabs(lp_of(m, "ba", &n) - ((-300 - 3000) + (-700 - 2000) + (-500 - 1000)) / q) < 1e-12);
    /* an unseen character: bow(' ') + unk; then ' ' after it: its context unknown (bow 0) */
    assert_true(fabs(lp_of(m, "z", &n) - ((-300 - 20000) + (-1000)) / q) < 1e-12);
    assert_int_equal(n, 2);
    /* 'c' is a context only: predicting it backs off past it to unk; after it, "c " */
    assert_true(fabs(lp_of(m, "c", &n) - ((-300 - 20000) + (-100)) / q) < 1e-12);
    /* nothing to read: 0 over 0 */
    assert_true(lp_of(m, "", &n) == 0 && n == 0);
    assert_true(lp_of(m, " \t\r\n\xC2\xA0 ", &n) == 0 && n == 0);
    assert_true(srv_charlm_log_prob(m, NULL, 0, NULL) == 0);
    /* separators collapse into one ' ', none at either end; malformed bytes are separators */
    double ab_ba = lp_of(m, "ab ba", &n);
    assert_int_equal(n, 6);
    assert_true(lp_of(m, "  ab\t\n \xE2\x80\xA8" "ba  ", NULL) == ab_ba);
    assert_true(lp_of(m, "ab\xff\xC3" "ba", NULL) == ab_ba);
    assert_true(lp_of(m, "ab\x01\x7f\xC2\x85" "ba", NULL) == ab_ba);
    /* folding: capitals of ASCII read as small */
    assert_true(lp_of(m, "AB", NULL) == lp_of(m, "ab", NULL));
    srv_charlm_free(m);
    srv_charlm_free(NULL);
}

/* What the shipped models read: folded case, digits, separators; English more
 * likely under en.charlm than under fr.charlm, and French the other way. */
static void test_charlm_text(void **state)
{
    const srv_charlm *en = charlm[0], *fr = charlm[1];
    assert_string_equal(srv_charlm_lang(en), "en");
    assert_string_equal(srv_charlm_lang(fr), "fr");
    size_t n = 0;
    double a = lp_of(en, "Cet ÉTÉ, l'ŒUVRE de 2024", &n);
    assert_int_equal(n, strlen("cet été, l'œuvre de 0000") - 3 + 1);   /* characters, not bytes, plus the end */
    assert_true(lp_of(en, "cet été, l'œuvre de 1999", NULL) == a);
    assert_true(lp_of(en, "  cet\u00a0été,\tl'œuvre\n de 1999 ", NULL) == a);
    assert_true(isfinite(a) && a < 0);
    /* Latin Extended-A folded (pairs even-odd, then odd-even, Ÿ to ÿ); the dotted I not */
    assert_true(lp_of(en, "ĀĽŊŸŹ", NULL) == lp_of(en, "āľŋÿź", NULL));
    assert_true(lp_of(en, "İ", NULL) != lp_of(en, "i", NULL));
    /* each model prefers its language, per character, on held-out lines */
    int en_wins = 0, fr_wins = 0;
    for (int i = 0; i < 100; i++) {
        en_wins += lp_of(en, pos_en.line[i], NULL) > lp_of(fr, pos_en.line[i], NULL);
        fr_wins += lp_of(fr, pos_fr.line[i], NULL) > lp_of(en, pos_fr.line[i], NULL);
    }
    print_message("charlm alone, the first 100 held-out lines: en %d, fr %d right\n", en_wins, fr_wins);
    assert_true(en_wins >= 99 && fr_wins >= 99);
    /* any bytes: finite, <= 0 */
    uint32_t x = 12345;
    for (int iter = 0; iter < 2000; iter++) {
        char buf[64];
        size_t len = (size_t)(iter % 64);
        for (size_t i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            buf[i] = (char)(x >> 16);
        }
        double lp = srv_charlm_log_prob(iter & 1 ? en : fr, buf, len, &n);
        assert_true(isfinite(lp) && lp <= 0);
        assert_true(n <= len + 1);
    }
}

/* srv_charlm_parse of b[0..len) must fail with MT_ERR_FORMAT and a message holding want. */
static void refuse(const unsigned char *b, size_t len, const char *want)
{
    srv_charlm *m = (srv_charlm *)1;
    mt_err err = {0};
    mt_status st = srv_charlm_parse(b, len, &m, &err);
    if (st != MT_ERR_FORMAT || m != NULL || !strstr(err.msg, want))
        fail_msg("expected a refusal saying \"%s\"; got status %d: \"%s\"", want, (int)st, err.msg);
}

static void test_charlm_refusals(void **state)
{
    mt_err err;
    FILE *f = fopen("models/en-fr/en.charlm", "rb");
    assert_non_null(f);
    static unsigned char good[1 << 20];
    size_t len = fread(good, 1, sizeof good, f);
    fclose(f);
    assert_true(len > 1000 && len < sizeof good);
    srv_charlm *m = NULL;
    assert_int_equal(srv_charlm_parse(good, len, &m, &err), MT_OK);
    srv_charlm_free(m);
    unsigned char *b = malloc(len + 8);
    assert_non_null(b);
#define MUTATE(code, want) do { memcpy(b, good, len); code; refuse(b, len, want); } while (0)
#define MUTATE_SEALED(code, want) do { memcpy(b, good, len); code; reseal(b, len); refuse(b, len, want); } while (0)
    refuse(good, 0, "shorter than a header");
    refuse(good, 67, "shorter than a header");
    MUTATE(b[0] = 'X', "no \"MTCHARLM\"");
    MUTATE_SEALED(put32(b + 8, 2), "version 2");
    MUTATE_SEALED(put32(b + 12, 0), "order 0");
    MUTATE_SEALED(put32(b + 12, 7), "order 7");
    MUTATE_SEALED(put32(b + 20, 0), "unseen characters");
    MUTATE_SEALED(b[25] = ' ', "its language");
    MUTATE_SEALED(b[24] = 0, "its language");                    /* empty */
    MUTATE_SEALED(memset(b + 24, 'e', 16), "its language");      /* no NUL */
    MUTATE_SEALED(b[30] = 'x', "its language");                  /* bytes after the NUL */
    MUTATE_SEALED(put32(b + 40, 0), "order 1 has 0 entries");
    MUTATE_SEALED(put32(b + 40 + 4 * 4, 1), "order 5 has entries");
    MUTATE_SEALED(put32(b + 40 + 4 * 3, 0xffffffffu), "entries: 1 to");
    MUTATE_SEALED(put32(b + 40 + 4 * 3, (uint32_t)(len / 6)), "truncated");
    refuse(good, len - 1, "truncated");
    memcpy(b, good, len);
    b[len] = 0;
    refuse(b, len + 1, "too long");
    MUTATE(b[len / 2] ^= 0x10, "checksum mismatch");
    MUTATE(b[len - 1] ^= 1, "checksum mismatch");
    /* the first two keys of order 1 swapped: out of order */
    MUTATE_SEALED({ unsigned char t[4]; memcpy(t, b + 64, 4); memcpy(b + 64, b + 68, 4); memcpy(b + 68, t, 4); },
                  "keys not in increasing order at entry 1");
    MUTATE_SEALED(memcpy(b + 68, b + 64, 4), "keys not in increasing order at entry 1");   /* a repeat */
#undef MUTATE
#undef MUTATE_SEALED
    /* a file: a missing one is MT_ERR_IO, a bad one's message names it */
    assert_int_equal(srv_charlm_load("tests/fixtures/detect/no-such.charlm", &m, &err), MT_ERR_IO);
    assert_null(m);
    assert_non_null(strstr(err.msg, "no-such.charlm"));
    char path[] = "/tmp/test_detect_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, good, len - 5), (ssize_t)(len - 5));
    close(fd);
    assert_int_equal(srv_charlm_load(path, &m, &err), MT_ERR_FORMAT);
    assert_null(m);
    assert_true(strncmp(err.msg, path, strlen(path)) == 0 && strstr(err.msg, "truncated"));
    print_message("charlm: a bad file: %s\n", err.msg);
    unlink(path);
    free(b);
}

/* Which candidates get a character model, and the weight that goes with them. */
static void test_charlm_selection(void **state)
{
    srv_detect_lms l;
    srv_detect_params p;
    /* the shipped models with their files: both, the charlm scorer, its weight */
    assert_true(charlm_lms.charlm[0] == charlm[0] && charlm_lms.charlm[1] == charlm[1]);
    assert_non_null(charlm_params.score);
    assert_true(charlm_params.cld2_weight == SRV_CHARLM_CLD2_WEIGHT);
    double lp = 0;
    assert_int_equal(charlm_params.score(charlm_params.score_ctx, 1, "le paquet", 9, &lp), 0);
    assert_true(lp == srv_charlm_log_prob(charlm[1], "le paquet", 9, NULL));
    assert_int_equal(charlm_params.score(charlm_params.score_ctx, 2, "x", 1, &lp), -1);
    assert_int_equal(charlm_params.score(charlm_params.score_ctx, -1, "x", 1, &lp), -1);
    /* given in any order, matched by language (ISO 639-1 or -3); one of another language ignored */
    srv_charlm *de = small_model("de"), *fra = small_model("fra");
    const srv_charlm *mixed[3] = {de, charlm[1], charlm[0]};
    lms_of((const int[]){TOK_EN_FR, TOK_FR_EN}, enfr, 2, &l, &p);
    srv_detect_lms_add_charlms(&l, mixed, 3);
    srv_detect_lms_params(&l, &p);
    assert_true(l.charlm[0] == charlm[0] && l.charlm[1] == charlm[1] && p.score);
    const srv_charlm *iso3[2] = {fra, charlm[0]};
    lms_of((const int[]){TOK_EN_FR, TOK_FR_EN}, enfr, 2, &l, &p);
    srv_detect_lms_add_charlms(&l, iso3, 2);
    assert_true(l.charlm[1] == fra);
    /* one candidate with one: fewer than two, so not used; the spms decide as before */
    lms_of((const int[]){TOK_EN_FR, TOK_FR_EN}, enfr, 2, &l, &p);
    srv_detect_lms_add_charlms(&l, (const srv_charlm *const[]){charlm[0]}, 1);
    srv_detect_lms_params(&l, &p);
    assert_null(p.score);                                   /* (the joint spm: none) */
    lms_of((const int[]){TOK_EN_MG, TOK_FR_EN_BIG}, enfr, 2, &l, &p);
    srv_detect_lms_add_charlms(&l, (const srv_charlm *const[]){charlm[0]}, 1);
    p.cld2_weight = 1.0f;
    srv_detect_lms_params(&l, &p);
    assert_true(p.score == opus_params.score && p.cld2_weight == SRV_DETECT_CLD2_WEIGHT);
    /* both: the character models first, even where the spms are monolingual */
    srv_detect_lms_add_charlms(&l, (const srv_charlm *const *)charlm, 2);
    srv_detect_lms_params(&l, &p);
    assert_true(p.score == charlm_params.score && p.cld2_weight == SRV_CHARLM_CLD2_WEIGHT);
    srv_charlm_free(de);
    srv_charlm_free(fra);
}

/* The shipped models' detection: held-out accuracy as measured by bench/detect_eval.sh
 * (99.8%: en 500, fr 498; CLD2 alone 495 + 482), the hard short strings, the
 * negatives unchanged line by line. */
static void test_charlm_heldout(void **state)
{
    int en = lm_right_of(&pos_en, "en", &charlm_params), fr = lm_right_of(&pos_fr, "fr", &charlm_params);
    print_message("held-out, candidates {en, fr} with the shipped .charlm files: en %d/500, fr %d/500 = %.1f%%\n",
                  en, fr, (en + fr) / 10.0);
    assert_true(en >= 499 && fr >= 497 && en + fr >= 997);
    /* the strings CLD2 alone reads as the other language */
    static const struct {
        const char *text, *lang, *cld2;
    } hard[] = {
        {"documentation pour NTP (Network Time Protocol)", "fr", "en"},
        {"Generate random integers", "en", "fr"},
    };
    for (size_t i = 0; i < sizeof hard / sizeof *hard; i++) {
        srv_lang_guess a[3], b[3];
        const char *x = hard[i].text;
        assert_true(srv_detect_languages(x, strlen(x), enfr, 2, a, 3) >= 1);
        assert_string_equal(a[0].code, hard[i].cld2);
        int n = srv_detect(x, strlen(x), &charlm_params, b, 3);
        check_contract(b, n, 3);
        assert_true(n >= 1);
        assert_string_equal(b[0].code, hard[i].lang);
        print_message("\"%s\": CLD2 alone %s (%.0f), with the .charlm files %s (%.0f)\n", x, a[0].code,
                      a[0].confidence, b[0].code, b[0].confidence);
    }
    /* negatives: what CLD2 gives another language keeps it */
    int fc = 0, fc_lm = 0;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < neg[s].n; i++) {
            const char *x = neg[s].line[i];
            srv_lang_guess a[3], b[3];
            int na = srv_detect_languages(x, strlen(x), enfr, 2, a, 3);
            int nb = srv_detect(x, strlen(x), &charlm_params, b, 3);
            assert_int_equal(na, nb > 0 ? na : 0);
            int cand_a = na && (!strcmp(a[0].code, "en") || !strcmp(a[0].code, "fr"));
            int cand_b = nb && (!strcmp(b[0].code, "en") || !strcmp(b[0].code, "fr"));
            assert_int_equal(cand_a, cand_b);
            if (na && !cand_a)
                assert_string_equal(a[0].code, b[0].code);
            fc += cand_a;
            fc_lm += cand_b;
        }
    assert_int_equal(fc, fc_lm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heldout_accuracy),
        cmocka_unit_test(test_negatives_bound),
        cmocka_unit_test(test_confidence_bands),
        cmocka_unit_test(test_plain_sentences),
        cmocka_unit_test(test_empty_and_no_letters),
        cmocka_unit_test(test_max_and_args),
        cmocka_unit_test(test_invalid_utf8_and_controls),
        cmocka_unit_test(test_any_bytes),
        cmocka_unit_test(test_huge),
        cmocka_unit_test(test_candidate_forms),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_spm_log_prob_reference),
        cmocka_unit_test(test_spm_log_prob_limits),
        cmocka_unit_test(test_spm_same),
        cmocka_unit_test(test_lms_selection),
        cmocka_unit_test(test_lm_heldout),
        cmocka_unit_test(test_lm_negatives_unchanged),
        cmocka_unit_test(test_lm_picks),
        cmocka_unit_test(test_lm_rule),
        cmocka_unit_test(test_lm_text),
        cmocka_unit_test(test_detect_source_fallback),
        cmocka_unit_test(test_detect_texts_models),
        cmocka_unit_test(test_charlm_reference),
        cmocka_unit_test(test_charlm_backoff),
        cmocka_unit_test(test_charlm_text),
        cmocka_unit_test(test_charlm_refusals),
        cmocka_unit_test(test_charlm_selection),
        cmocka_unit_test(test_charlm_heldout),
    };
    return cmocka_run_group_tests_name("detect", tests, setup, teardown);
}
