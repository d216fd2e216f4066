/* test_splitter: exact-span cases for every rule in server/translate/splitter.h, the max/NULL
 * contract, a round-trip property test on random texts made of known sentences,
 * and a fuzz run on random bytes (invariants only).  Each table row is its own
 * cmocka test, named after the row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "translate/splitter.h"

/* C hex escapes swallow following hex digits, so multibyte characters are macros
 * glued on with string concatenation. */
#define NBSP  "\xC2\xA0"
#define NNBSP "\xE2\x80\xAF"
#define ELL   "\xE2\x80\xA6"
#define LAQ   "\xC2\xAB"
#define RAQ   "\xC2\xBB"
#define LDQ   "\xE2\x80\x9C"
#define RDQ   "\xE2\x80\x9D"
#define BOM   "\xEF\xBB\xBF"
#define LSEP  "\xE2\x80\xA8"
#define NEL   "\xC2\x85"

#define MAX_EXPECT 12

/* ---- invariants checked on every result ---- */

/* Whitespace exactly as splitter.h defines it (rule 5 + rule 1). */
static const char *const ws_chars[] = {
    " ", "\t", "\n", "\r", "\v", "\f", NEL, NBSP, "\xE1\x9A\x80",
    "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84",
    "\xE2\x80\x85", "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89",
    "\xE2\x80\x8A", "\xE2\x80\x8B", LSEP, "\xE2\x80\xA9", NNBSP, "\xE2\x81\x9F",
    "\xE3\x80\x80", BOM,
};
#define N_WS (sizeof ws_chars / sizeof ws_chars[0])

/* Length of the whitespace character starting at s (n bytes left), or 0. */
static size_t ws_prefix(const char *s, size_t n)
{
    for (size_t i = 0; i < N_WS; i++) {
        size_t k = strlen(ws_chars[i]);
        if (k <= n && memcmp(s, ws_chars[i], k) == 0) return k;
    }
    return 0;
}

/* Length of a whitespace character ending at s + n, or 0. */
static size_t ws_suffix(const char *s, size_t n)
{
    for (size_t i = 0; i < N_WS; i++) {
        size_t k = strlen(ws_chars[i]);
        if (k <= n && memcmp(s + n - k, ws_chars[i], k) == 0) return k;
    }
    return 0;
}

static int is_all_ws(const char *s, size_t n)
{
    while (n > 0) {
        size_t k = ws_prefix(s, n);
        if (k == 0) return 0;
        s += k;
        n -= k;
    }
    return 1;
}

static int is_valid_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char b = s[i];
        size_t k = b < 0x80 ? 1 : (b >= 0xC2 && b <= 0xDF) ? 2
                 : (b >= 0xE0 && b <= 0xEF) ? 3 : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
        if (k == 0 || i + k > n) return 0;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return 0;
        if ((b == 0xE0 && s[i + 1] < 0xA0) || (b == 0xED && s[i + 1] > 0x9F)
            || (b == 0xF0 && s[i + 1] < 0x90) || (b == 0xF4 && s[i + 1] > 0x8F))
            return 0;
        i += k;
    }
    return 1;
}

/* Spans are ordered, non-empty, trimmed and in bounds; the gaps are whitespace;
 * gaps + spans rebuild the text byte for byte; on valid UTF-8 no span edge cuts
 * a multibyte character. */
static void check_invariants(const char *text, size_t len, const mt_span *sp, int n)
{
    int utf8 = is_valid_utf8((const unsigned char *)text, len);
    char *rebuilt = malloc(len + 1);
    assert_non_null(rebuilt);
    size_t prev = 0, out = 0;
    for (int i = 0; i < n; i++) {
        assert_true(sp[i].len > 0);
        assert_true(sp[i].start >= prev);
        assert_true(sp[i].start + sp[i].len <= len);
        assert_true(is_all_ws(text + prev, sp[i].start - prev));
        assert_int_equal(ws_prefix(text + sp[i].start, sp[i].len), 0);
        assert_int_equal(ws_suffix(text + sp[i].start, sp[i].len), 0);
        if (utf8) {
            assert_true((text[sp[i].start] & 0xC0) != 0x80);
            size_t e = sp[i].start + sp[i].len;
            assert_true(e == len || (text[e] & 0xC0) != 0x80);
        }
        memcpy(rebuilt + out, text + prev, sp[i].start - prev);
        out += sp[i].start - prev;
        memcpy(rebuilt + out, text + sp[i].start, sp[i].len);
        out += sp[i].len;
        prev = sp[i].start + sp[i].len;
    }
    assert_true(is_all_ws(text + prev, len - prev));
    memcpy(rebuilt + out, text + prev, len - prev);
    out += len - prev;
    assert_int_equal(out, len);
    assert_memory_equal(rebuilt, text, len);
    free(rebuilt);
}

/* Splits text and asserts the spans equal expect[] (NULL-terminated). */
static void expect_split(const char *name, const char *text, size_t len,
                         const char *const *expect)
{
    mt_span sp[64];
    int n = mt_split_sentences(text, len, sp, 64);
    int want = 0;
    while (want < MAX_EXPECT && expect[want]) want++;
    int ok = (n == want);
    for (int i = 0; ok && i < n; i++)
        ok = strlen(expect[i]) == sp[i].len && memcmp(expect[i], text + sp[i].start, sp[i].len) == 0;
    if (!ok) {
        print_error("%s: got %d span(s), want %d\n", name, n, want);
        for (int i = 0; i < n && i < 64; i++)
            print_error("  got  [%zu,+%zu) <%.*s>\n", sp[i].start, sp[i].len,
                        (int)sp[i].len, text + sp[i].start);
        for (int i = 0; i < want; i++)
            print_error("  want <%s>\n", expect[i]);
        fail();
    }
    check_invariants(text, len, sp, n);
}

/* ---- table of exact cases ---- */

typedef struct {
    const char *name;
    const char *text;
    const char *expect[MAX_EXPECT + 1];
} split_case;

static const split_case cases[] = {
    /* basics */
    { "empty", "", { NULL } },
    { "whitespace_only", " \t\n \r\n  \v\f ", { NULL } },
    { "unicode_whitespace_only", NBSP NNBSP "\t" BOM "\xE3\x80\x80", { NULL } },
    { "no_terminator", "Hello world", { "Hello world" } },
    { "two_sentences", "Hello world. How are you?", { "Hello world.", "How are you?" } },
    { "three_terminators", "Stop! Who goes there? Nobody.", { "Stop!", "Who goes there?", "Nobody." } },
    { "terminator_runs", "Really?! Yes... No!!! Fine.", { "Really?!", "Yes...", "No!!!", "Fine." } },
    { "unicode_ellipsis_split", "Wait" ELL " Then he left.", { "Wait" ELL, "Then he left." } },
    { "unicode_ellipsis_inside", "Wait" ELL " and see.", { "Wait" ELL " and see." } },
    { "ellipsis_lowercase", "I thought... maybe not. Then", { "I thought... maybe not.", "Then" } },
    { "leading_ellipsis", "... And then nothing.", { "... And then nothing." } },
    { "lowercase_after_period", "The end. and more", { "The end. and more" } },
    { "no_space_after_terminator", "Wow!This is odd.", { "Wow!This is odd." } },
    { "digit_starts_sentence", "It ended in 2020. 30 people came.", { "It ended in 2020.", "30 people came." } },
    { "leading_trailing_ws", "   Hello there.   ", { "Hello there." } },
    { "tabs", "\tOne.\tTwo.\t", { "One.", "Two." } },
    { "brief_example", "He said \"Go.\" Then...", { "He said \"Go.\"", "Then..." } },
    /* abbreviations */
    { "english_titles", "Mr. Smith met Mrs. Jones and Dr. Who. They talked.",
      { "Mr. Smith met Mrs. Jones and Dr. Who.", "They talked." } },
    { "prof_st", "Prof. Xavier lives near St. Paul's. He is nice.",
      { "Prof. Xavier lives near St. Paul's.", "He is nice." } },
    { "eg_ie", "Use fruit, e.g. Apples, i.e. Red ones. Done.",
      { "Use fruit, e.g. Apples, i.e. Red ones.", "Done." } },
    { "capitalised_eg", "E.g. This works. Fine.", { "E.g. This works.", "Fine." } },
    { "vs_cf", "Lyon vs. Paris was tense. Cf. Table 2 for details.",
      { "Lyon vs. Paris was tense.", "Cf. Table 2 for details." } },
    { "approx_no_fig", "It costs approx. 5 euros. See No. 7 and Fig. 3 below. No. It is not.",
      { "It costs approx. 5 euros.", "See No. 7 and Fig. 3 below.", "No.", "It is not." } },
    { "etc", "Apples, pears, etc. are fruit. We bought apples, pears, etc. Then we left.",
      { "Apples, pears, etc. are fruit.", "We bought apples, pears, etc.", "Then we left." } },
    { "french_abbreviations",
      "M. Dupont et Mme. Durand arrivent. Des fruits, p.ex. Des pommes, c.-\xC3\xA0-d. Des reinettes. Fin.",
      { "M. Dupont et Mme. Durand arrivent.",
        "Des fruits, p.ex. Des pommes, c.-\xC3\xA0-d. Des reinettes.", "Fin." } },
    { "initials", "J. R. R. Tolkien wrote it. He was British.",
      { "J. R. R. Tolkien wrote it.", "He was British." } },
    { "accented_initial", "\xC3\x89. Zola \xC3\xA9" "crivit. Il mourut.",
      { "\xC3\x89. Zola \xC3\xA9" "crivit.", "Il mourut." } },
    { "abbrev_in_quotes", "He wrote \"Dr. Jekyll\" twice. Then stopped.",
      { "He wrote \"Dr. Jekyll\" twice.", "Then stopped." } },
    { "months_before_digit", "Born Jan. 5 1990. Dec. Then snow.",
      { "Born Jan. 5 1990.", "Dec.", "Then snow." } },
    { "abbrev_end_of_line", "Dear Mr.\nSmith", { "Dear Mr.", "Smith" } },
    /* things with dots that are not ends */
    { "decimals", "Pi is 3.14 approximately. The price is 1.000,50 euros.",
      { "Pi is 3.14 approximately.", "The price is 1.000,50 euros." } },
    { "versions", "Upgrade to v1.2.3 now. It fixes bugs.", { "Upgrade to v1.2.3 now.", "It fixes bugs." } },
    { "urls", "Visit https://example.com/a?b=1&c=2 now. Or http://x.org/index.html! Also www.example.org. Then stop.",
      { "Visit https://example.com/a?b=1&c=2 now.", "Or http://x.org/index.html!",
        "Also www.example.org.", "Then stop." } },
    { "email", "Write to john.doe@example.co.uk today. Thanks.",
      { "Write to john.doe@example.co.uk today.", "Thanks." } },
    { "file_names", "Open file.txt and README.md now. Save it.", { "Open file.txt and README.md now.", "Save it." } },
    { "bracketed_ellipsis", "He said [...] That was all. (" ELL ") The end.",
      { "He said [...] That was all.", "(" ELL ") The end." } },
    /* quotes and brackets */
    { "closing_paren", "(This is an aside.) The main text.", { "(This is an aside.)", "The main text." } },
    { "curly_quotes", "She said " LDQ "Stop!" RDQ " Then silence.", { "She said " LDQ "Stop!" RDQ, "Then silence." } },
    { "quote_then_lowercase", "\"Go!\" he said. \"Now.\"", { "\"Go!\" he said.", "\"Now.\"" } },
    { "opening_quote_starts", "He left. \"Why?\" she asked.", { "He left.", "\"Why?\" she asked." } },
    { "nested_closers", "He wrote (\"Yes.\") Then stopped.", { "He wrote (\"Yes.\")", "Then stopped." } },
    { "spanish_openers", "Hola. \xC2\xBFQu\xC3\xA9 tal? \xC2\xA1" "Bien!",
      { "Hola.", "\xC2\xBFQu\xC3\xA9 tal?", "\xC2\xA1" "Bien!" } },
    /* French typography */
    { "french_spacing", "Quoi ? Il est parti ! Vraiment ?", { "Quoi ?", "Il est parti !", "Vraiment ?" } },
    { "french_nbsp", "Quoi" NNBSP "? Il est parti" NBSP "!", { "Quoi" NNBSP "?", "Il est parti" NBSP "!" } },
    { "colon_semicolon", "Note : ceci ; cela. Fin.", { "Note : ceci ; cela.", "Fin." } },
    { "guillemets_split", "Il a dit : " LAQ " Viens ! " RAQ " Puis il est parti.",
      { "Il a dit : " LAQ " Viens ! " RAQ, "Puis il est parti." } },
    { "guillemets_nbsp_lower", LAQ NBSP "Viens" NBSP "!" NBSP RAQ " dit-il. Il part.",
      { LAQ NBSP "Viens" NBSP "!" NBSP RAQ " dit-il.", "Il part." } },
    { "guillemets_next", LAQ " Oui ! " RAQ " " LAQ " Non ! " RAQ, { LAQ " Oui ! " RAQ, LAQ " Non ! " RAQ } },
    /* lines */
    { "newline", "First line\nSecond line", { "First line", "Second line" } },
    { "blank_line", "Para one.\n\nPara two.", { "Para one.", "Para two." } },
    { "list_items", "Shopping:\n- milk\n- eggs\n1. Buy bread\n2. Bake",
      { "Shopping:", "- milk", "- eggs", "1. Buy bread", "2. Bake" } },
    { "inline_numbered", "1. First step. 2. Second step.", { "1. First step.", "2. Second step." } },
    { "letter_roman_markers", "a. Alpha\niv. Four\nII. Two\n2.3. Results",
      { "a. Alpha", "iv. Four", "II. Two", "2.3. Results" } },
    { "crlf", "One.\r\nTwo.\r\n\r\nThree.", { "One.", "Two.", "Three." } },
    { "lone_cr", "One\rTwo", { "One", "Two" } },
    { "unicode_line_breaks", "One" LSEP "Two" NEL "Three", { "One", "Two", "Three" } },
    { "line_mid_sentence", "This sentence is\nwrapped.", { "This sentence is", "wrapped." } },
    /* scripts and encodings */
    { "accented_uppercase", "\xC3\x87" "a va. \xC3\x89lodie arrive. \xC3\x96l\xC3\xA7" "ek.",
      { "\xC3\x87" "a va.", "\xC3\x89lodie arrive.", "\xC3\x96l\xC3\xA7" "ek." } },
    { "cyrillic", "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82. \xD0\x9A\xD0\xB0\xD0\xBA?",
      { "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82.", "\xD0\x9A\xD0\xB0\xD0\xBA?" } },
    { "cjk_after_period", "Hello. \xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82", { "Hello.", "\xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82" } },
    { "bom", BOM "Hello. World.", { "Hello.", "World." } },
    { "invalid_utf8", "Bad \xFF\xFE bytes. Next \xC3 one.", { "Bad \xFF\xFE bytes.", "Next \xC3 one." } },
    { "truncated_utf8", "End \xE2\x80", { "End \xE2\x80" } },
    { "overlong_dot", "A\xC0\xAE B", { "A\xC0\xAE B" } },
};
#define N_CASES (sizeof cases / sizeof cases[0])

static void test_case(void **state)
{
    const split_case *c = *state;
    expect_split(c->name, c->text, strlen(c->text), c->expect);
}

/* ---- the API contract ---- */

static void test_max_smaller_than_count(void **state)
{
    (void)state;
    const char *t = "One. Two. Three.";
    mt_span sp[3] = { { 99, 99 }, { 99, 99 }, { 99, 99 } };
    assert_int_equal(mt_split_sentences(t, strlen(t), sp, 2), 3);
    assert_int_equal(sp[0].start, 0);
    assert_int_equal(sp[0].len, 4);
    assert_int_equal(sp[1].start, 5);
    assert_int_equal(sp[1].len, 4);
    assert_int_equal(sp[2].start, 99);      /* untouched */
    assert_int_equal(mt_split_sentences(t, strlen(t), NULL, 0), 3);
    assert_int_equal(mt_split_sentences(t, strlen(t), sp, -1), 3);
    assert_int_equal(sp[0].start, 0);
}

static void test_null_and_length(void **state)
{
    (void)state;
    mt_span sp[4];
    assert_int_equal(mt_split_sentences(NULL, 0, sp, 4), 0);
    assert_int_equal(mt_split_sentences("", 0, sp, 4), 0);
    /* only len bytes are read: the rest of the buffer is ignored */
    const char *t = "Hi. There. Not read.";
    assert_int_equal(mt_split_sentences(t, 9, sp, 4), 2);
    assert_int_equal(sp[1].start, 4);
    assert_int_equal(sp[1].len, 5);
    /* embedded NUL is an ordinary byte */
    const char z[] = "A\0b. C.";
    assert_int_equal(mt_split_sentences(z, sizeof z - 1, sp, 4), 2);
    assert_int_equal(sp[0].len, 4);
}

static void test_exact_offsets(void **state)
{
    (void)state;
    const char *t = "  One.\r\n\tTwo three?  ";
    mt_span sp[4];
    assert_int_equal(mt_split_sentences(t, strlen(t), sp, 4), 2);
    assert_int_equal(sp[0].start, 2);
    assert_int_equal(sp[0].len, 4);
    assert_int_equal(sp[1].start, 9);
    assert_int_equal(sp[1].len, 10);
}

/* ---- property test: random texts from known sentences ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* Each piece is one sentence that ends with a terminator (plus closers) and
 * starts with a sentence opener, so any whitespace between two of them splits. */
static const char *const pieces[] = {
    "Mr. Smith arrived.", "Pi is 3.14 today.", "See https://x.org/a?b=1 now!",
    "He said \"Go.\"", LAQ " Viens ! " RAQ, "Quoi ?", "J. R. R. Tolkien wrote it.",
    "Write to a.b@c.fr today.", "Wait... what?", "\xC3\x87" "a va" NNBSP "?",
    "Open file.txt, e.g. Now.", "Use v1.2.3 (latest).", "1.000,50 euros is a lot.",
    "(An aside.)", "\xC2\xBF" "Qu\xC3\xA9?", "\xD0\x9A\xD0\xB0\xD0\xBA?", "No. 5 won!",
    "M. Dupont et Mme. Durand, c.-\xC3\xA0-d. Eux.", "It went" ELL " and on" ELL,
    "\xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82", "Really?!", "A cat sat.",
};
#define N_PIECES (sizeof pieces / sizeof pieces[0])

static const char *const joiners[] = {
    " ", "  ", "\t", NBSP, NNBSP, "\n", "\r\n", "\n\n", " \r\n\t", "\xE3\x80\x80", "\r", " " LSEP " ",
};
#define N_JOINERS (sizeof joiners / sizeof joiners[0])

static size_t append(char *buf, size_t at, const char *s)
{
    size_t n = strlen(s);
    memcpy(buf + at, s, n);
    return at + n;
}

static void test_property_roundtrip(void **state)
{
    (void)state;
    char text[4096];
    const char *want[MAX_EXPECT + 1];
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = 0;
        int n = 1 + (int)(rng() % MAX_EXPECT);
        if (rng() % 2) len = append(text, len, joiners[rng() % N_JOINERS]);
        for (int i = 0; i < n; i++) {
            want[i] = pieces[rng() % N_PIECES];
            len = append(text, len, want[i]);
            if (i + 1 < n || rng() % 2) len = append(text, len, joiners[rng() % N_JOINERS]);
        }
        want[n] = NULL;
        char name[32];
        snprintf(name, sizeof name, "property #%d", iter);
        expect_split(name, text, len, want);
    }
}

/* ---- fuzz: random bytes from an alphabet rich in edge cases ---- */

static void test_fuzz_invariants(void **state)
{
    (void)state;
    static const char *const atoms[] = {
        ".", "!", "?", " ", "\n", "\r", "\t", "A", "a", "1", "\"", "'", "(", ")", "[", "]",
        NBSP, NNBSP, ELL, LAQ, RAQ, "\xC2", "\xA0", "\xE2", "\x80", "\xFF", "\xF0\x9F\x98\x80",
        "Mr", "e.g", "J", "\xC3\x89", BOM, LSEP, NEL, "\xF4\x90\x80\x80", "\xED\xA0\x80", "\0",
    };
    const size_t n_atoms = sizeof atoms / sizeof atoms[0];
    char text[512];
    mt_span sp[300];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = 0, target = rng() % 120;
        while (len < target) {
            const char *a = atoms[rng() % n_atoms];
            size_t k = a[0] ? strlen(a) : 1;
            memcpy(text + len, a, k);
            len += k;
        }
        /* an exact-size heap copy lets ASan catch any read past len */
        char *heap = malloc(len ? len : 1);
        assert_non_null(heap);
        memcpy(heap, text, len);
        int n = mt_split_sentences(heap, len, sp, 300);
        assert_true(n >= 0 && n <= 300);
        check_invariants(heap, len, sp, n);
        free(heap);
    }
}

/* ---- main: one cmocka test per table row, then the rest ---- */

int main(void)
{
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_max_smaller_than_count),
        cmocka_unit_test(test_null_and_length),
        cmocka_unit_test(test_exact_offsets),
        cmocka_unit_test(test_property_roundtrip),
        cmocka_unit_test(test_fuzz_invariants),
    };
    const size_t n_fixed = sizeof fixed / sizeof fixed[0];
    struct CMUnitTest tests[N_CASES + sizeof fixed / sizeof fixed[0]];
    for (size_t i = 0; i < N_CASES; i++)
        tests[i] = (struct CMUnitTest){ .name = cases[i].name, .test_func = test_case,
                                        .initial_state = (void *)&cases[i] };
    for (size_t i = 0; i < n_fixed; i++)
        tests[N_CASES + i] = fixed[i];
    return _cmocka_run_group_tests("splitter", tests, N_CASES + n_fixed, NULL, NULL);
}
