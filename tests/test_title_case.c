/* test_title_case: server/translate/title_case.h's rules, one table row a
 * cmocka test (what is Title Case, which words are lowered, what stays), and
 * random texts built from words of every kind: the output the same length,
 * only initials lowered, and no longer Title Case once folded.  The lone
 * word's fold and the output's capital (srv_word_fold, srv_title_capitalize)
 * by table too, and srv_glossary_upper against srv_glossary_fold on every
 * code point. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "translate/glossary.h"
#include "translate/title_case.h"
#include "util/utf8.h"

typedef struct {
    const char *name, *in, *out;   /* out NULL: not Title Case, nothing lowered */
} fold_case;

static const fold_case cases[] = {
    { "label", "Restore From Trash", "Restore from trash" },
    { "two_words", "Auto Save", "Auto save" },
    { "one_word_is_not", "Alarm", NULL },         /* srv_word_fold's (below) */
    { "sentence_case_is_not", "Save changes before closing?", NULL },
    { "one_lowercase_word_is_not", "Open the File", NULL },
    { "acronym_kept", "Web Based LDAP Administration Program", "Web based LDAP administration program" },
    { "camelcase_kept", "Open LibreOffice Writer", "Open LibreOffice writer" },
    { "digits_kept", "Convert To MP3 Or Ogg", "Convert to MP3 or ogg" },
    { "punctuation_before_initial", "Show (Hidden) \"Files\"", "Show (hidden) \"files\"" },
    { "no_initial_words_skipped", "1 Hour Or 2 Days", "1 Hour or 2 days" },
    { "one_initial_among_numbers_is_not", "0 (Disabled)", NULL },
    { "accents", "\xC3\x89" "diter Les \xC3\x89l\xC3\xA9ments", "\xC3\x89" "diter les \xC3\xA9l\xC3\xA9ments" },
    { "greek", "\xCE\x91\xCE\xBD\xCE\xBF\xCE\xB9\xCF\x87\xCF\x84\xCF\x8C \xCE\x91\xCF\x81\xCF\x87\xCE\xB5\xCE\xAF\xCE\xBF",
      "\xCE\x91\xCE\xBD\xCE\xBF\xCE\xB9\xCF\x87\xCF\x84\xCF\x8C \xCE\xB1\xCF\x81\xCF\x87\xCE\xB5\xCE\xAF\xCE\xBF" },
    { "caseless_script_is_not", "\xE6\x89\x93\xE5\xBC\x80 File", NULL },
    { "all_caps_not_lowered", "OPEN FILE", NULL },
    { "whitespace_kept", "  Restore\tFrom\n Trash ", "  Restore\tfrom\n trash " },
    { "empty", "", NULL },
    { "invalid_bytes", "Open \xFF" "File Now", "Open \xFF" "file now" },
    { "hyphen_parts", "Copier La Page Dans Le Presse-Papiers", "Copier la page dans le presse-papiers" },
    { "apostrophe_parts", "Impossible D'Obtenir Un Verrou", "Impossible d'obtenir un verrou" },
    { "curly_apostrophe_parts", "Erreur De L\xE2\x80\x99" "Auto-Test", "Erreur de l\xE2\x80\x99" "auto-test" },
    { "first_word_later_parts", "Auto-Test En Cours", "Auto-test en cours" },
    { "part_acronym_kept", "Open LDAP-Server Now", "Open LDAP-server now" },
    { "hyphen_alone", "Start - Stop Now", "Start - stop now" },
    { "trailing_joiner", "Rock- And Roll", "Rock- and roll" },
};

/* srv_word_fold: out NULL = not a lone word in sentence case */
static const fold_case word_cases[] = {
    { "word_label", "Alarm", "alarm" },
    { "word_blanks_around", " Hidden\n", " hidden\n" },
    { "word_accented", "\xC3\x89tat", "\xC3\xA9tat" },
    { "word_two_is_not", "Auto Save", NULL },
    { "word_lowercase_is_not", "alarm", NULL },
    { "word_acronym_is_not", "PDF", NULL },
    { "word_camelcase_is_not", "LibreOffice", NULL },
    { "word_digit_is_not", "Mp3", NULL },
    { "word_punctuation_is_not", "Hello.", NULL },
    { "word_hyphen_is_not", "E-mail", NULL },
    { "word_one_letter_is_not", "A", NULL },
    { "word_caseless_is_not", "\xE6\x89\x93\xE5\xBC\x80", NULL },
    { "word_empty_is_not", "  ", NULL },
    { "word_invalid_is_not", "Al\xFFrm", NULL },
};

/* srv_title_capitalize: out NULL = unchanged */
static const fold_case cap_cases[] = {
    { "cap_ascii", "alarme", "Alarme" },
    { "cap_accented", "\xC3\xA9" "cran", "\xC3\x89" "cran" },
    { "cap_after_punctuation", "\xC2\xAB l'alarme \xC2\xBB", "\xC2\xAB L'alarme \xC2\xBB" },
    { "cap_already", "Alarme", NULL },
    { "cap_digit_first", "3 alarmes", NULL },
    { "cap_no_letter", "...", NULL },
    { "cap_caseless", "\xE6\x89\x93\xE5\xBC\x80", NULL },
    { "cap_longer_upper", "\xC8\xBF" "x", NULL },          /* U+023F: its capital U+2C7E is 3 bytes */
};

typedef int (*fold_fn)(const char *, size_t, char *);

static int capitalize_copy(const char *s, size_t n, char *out)
{
    char tmp[256];
    memcpy(tmp, s, n);
    if (!srv_title_capitalize(tmp, n))
        return 0;
    memcpy(out, tmp, n);
    return 1;
}

static void check_fold(const fold_case *c, fold_fn fn)
{
    size_t n = strlen(c->in);
    char out[256];
    memset(out, '#', sizeof out);
    int k = fn(c->in, n, out);
    if (!c->out) {
        assert_int_equal(k, 0);
        assert_true(n == 0 || out[0] == '#');
        return;
    }
    assert_int_equal(k, 1);
    assert_int_equal(strlen(c->out), n);
    assert_memory_equal(out, c->out, n);
    assert_int_equal(out[n], '#');
}

static void test_word(void **state) { check_fold(*state, srv_word_fold); }
static void test_cap(void **state) { check_fold(*state, capitalize_copy); }

/* srv_glossary_upper inverts srv_glossary_fold on every uppercase letter it
 * lowers (up to the smallest capital of a letter several fold to), and gives
 * every other code point back. */
static void test_upper_all(void **state)
{
    (void)state;
    int pairs = 0;
    for (uint32_t c = 0; c <= 0x10FFFF; c++) {
        uint32_t u = srv_glossary_upper(c);
        if (u == c)
            continue;
        pairs++;
        assert_true(srv_glossary_is_upper(u));
        assert_int_equal(srv_glossary_fold(u), c);
        assert_false(srv_glossary_is_upper(c));
    }
    for (uint32_t u = 0; u <= 0x10FFFF; u++) {         /* every lowered capital has one back */
        uint32_t l = srv_glossary_fold(u);
        if (l != u && srv_glossary_is_upper(u) && !srv_glossary_is_upper(l))
            assert_int_equal(srv_glossary_fold(srv_glossary_upper(l)), l);
    }
    print_message("  %d lowercase letters with a capital\n", pairs);
    assert_true(pairs > 1000);
    assert_int_equal(srv_glossary_upper(0xE9), 0xC9);
    assert_int_equal(srv_glossary_upper('k'), 'K');     /* not the Kelvin sign, which folds to k too */
}

static void test_case(void **state)
{
    const fold_case *c = *state;
    size_t n = strlen(c->in);
    char out[256];
    memset(out, '#', sizeof out);
    int k = srv_title_fold(c->in, n, out);
    if (!c->out) {
        assert_int_equal(k, 0);
        assert_true(n == 0 || out[0] == '#');       /* untouched */
        return;
    }
    assert_true(k >= 1);
    assert_int_equal(strlen(c->out), n);
    assert_memory_equal(out, c->out, n);
    assert_int_equal(out[n], '#');                  /* nothing written past n */
}

/* Random sentences of words of every kind: the same bytes long, each changed
 * character the fold of an uppercase one, and the output not Title Case. */
static void test_random(void **state)
{
    (void)state;
    static const char *const words[] = { "Open", "open", "LDAP", "LibreOffice", "MP3", "(Hidden)", "\xC3\x89tat",
                                         "\xC3\xA9tat", "42", "--", "\xE6\x89\x93", "\xFF", "Zo\xC3\xAB", "\xC8\xBA" "x", "Presse-Papiers", "D'Obtenir", "l\xE2\x80\x99" "Auto", "Wi-Fi" };
    const int nw = (int)(sizeof words / sizeof words[0]);
    srand(53);
    int folded = 0;
    for (int r = 0; r < 20000; r++) {
        char in[256] = "", out[256];
        int count = 1 + rand() % 6;
        for (int i = 0; i < count; i++) {
            strcat(in, words[rand() % nw]);
            strcat(in, rand() % 5 ? " " : "\t");
        }
        size_t n = strlen(in);
        int k = srv_title_fold(in, n, out);
        if (k == 0)
            continue;
        folded++;
        int changed = 0;
        for (size_t i = 0; i < n;) {
            uint32_t a, b;
            size_t ka = mt_utf8_next(in + i, n - i, &a), kb = mt_utf8_next(out + i, n - i, &b);
            assert_int_equal(ka, kb);
            if (a != b) {
                assert_true(srv_glossary_is_upper(a));
                assert_int_equal(b, srv_glossary_fold(a));
                changed++;
            }
            i += ka;
        }
        assert_int_equal(changed, k);
        char again[256];
        assert_int_equal(srv_title_fold(out, n, again), 0);
    }
    print_message("  %d of 20000 random texts folded\n", folded);
    assert_true(folded > 1000);
}

int main(void)
{
    enum { N = sizeof cases / sizeof cases[0], NW = sizeof word_cases / sizeof word_cases[0],
           NC = sizeof cap_cases / sizeof cap_cases[0] };
    struct CMUnitTest tests[N + NW + NC + 2];
    int k = 0;
    for (size_t i = 0; i < N; i++)
        tests[k++] = (struct CMUnitTest){ .name = cases[i].name, .test_func = test_case,
                                          .initial_state = (void *)&cases[i] };
    for (size_t i = 0; i < NW; i++)
        tests[k++] = (struct CMUnitTest){ .name = word_cases[i].name, .test_func = test_word,
                                          .initial_state = (void *)&word_cases[i] };
    for (size_t i = 0; i < NC; i++)
        tests[k++] = (struct CMUnitTest){ .name = cap_cases[i].name, .test_func = test_cap,
                                          .initial_state = (void *)&cap_cases[i] };
    tests[k++] = (struct CMUnitTest){ .name = "random", .test_func = test_random };
    tests[k++] = (struct CMUnitTest){ .name = "upper_all", .test_func = test_upper_all };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
