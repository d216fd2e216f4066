/* test_title_case: server/translate/title_case.h's rules, one table row a
 * cmocka test (what is Title Case, which words are lowered, what stays), and
 * random texts built from words of every kind: the output the same length,
 * only initials lowered, and no longer Title Case once folded. */
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
    { "one_word_is_not", "Alarm", NULL },
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
    enum { N = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[N + 1];
    for (size_t i = 0; i < N; i++)
        tests[i] = (struct CMUnitTest){ .name = cases[i].name, .test_func = test_case,
                                        .initial_state = (void *)&cases[i] };
    tests[N] = (struct CMUnitTest){ .name = "random", .test_func = test_random };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
