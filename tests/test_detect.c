/* test_detect: server/detect (srv_detect_languages) on real text and hostile bytes.
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
 * - two threads detecting the same lines at once give the single-thread answers
 *   (run under ThreadSanitizer: make B=build-det-tsan OPT="-O1 -g -march=native
 *   -fsanitize=thread" build-det-tsan/tests/test_detect).
 * Run from the repository root (make test does). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "detect/cld2.h"
#include "detect/detect.h"

#define N_POS 500
#define MAX_LINE 4096

typedef struct {
    char **line;
    int    n;
} lines;

static lines pos_en, pos_fr, neg[3];
static const char *const neg_lang[3] = {"de", "es", "it"};
static const char *const enfr[] = {"en", "fr"};

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
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    for (int rep = 0; rep < 2; rep++)
        for (int i = 0; i < j->l->n; i++) {
            srv_lang_guess g[3];
            const char *x = j->l->line[i];
            int n = srv_detect_languages(x, strlen(x), enfr, 2, g, 3);
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
    for (int s = 0; s < 2; s++) {
        job alone = {sets[s], codes[2], conf[2]};
        run_job(&alone);
        job a = {sets[s], codes[0], conf[0]}, b = {sets[s], codes[1], conf[1]};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, run_job, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, run_job, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        for (int i = 0; i < sets[s]->n; i++)
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
    };
    return cmocka_run_group_tests_name("detect", tests, setup, teardown);
}
