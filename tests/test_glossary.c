/* test_glossary: server/translate/glossary.h: entry checks (each refusal named
 * in its message), TSV files (comments, blank lines, CRLF, BOM, line numbers),
 * merging, the canonical string, and matching (whole words, the case rule,
 * whitespace inside terms, leftmost-longest, UTF-8 terms, hostile text), plus
 * a size check: 1,000 entries over 100 KB of text; DeepL's CSV entries and
 * unique sources; server/service/glossary_store.h (ids, owners, references
 * kept across delete and replace). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <cmocka.h>

#include "service/glossary_store.h"
#include "translate/glossary.h"

#define NBSP "\xC2\xA0"
#define BOM  "\xEF\xBB\xBF"

static const srv_glossary_limits LIM = { .max_entries = 100, .max_term_bytes = 64 };

/* ---- helpers ---- */

static srv_glossary *make(const srv_glossary_limits *lim)
{
    srv_glossary *g = srv_glossary_new(lim ? lim : &LIM);
    assert_non_null(g);
    return g;
}

static void add_ok(srv_glossary *g, const char *src, const char *tgt)
{
    mt_err err = { 0 };
    mt_status st = srv_glossary_add(g, src, strlen(src), tgt, strlen(tgt), &err);
    if (st != MT_OK)
        fail_msg("add \"%s\": %s", src, err.msg);
}

/* srv_glossary_add with explicit lengths must fail with MT_ERR_INPUT and a
 * message holding want1 and want2 (when not NULL). */
static void add_bad(srv_glossary *g, const char *src, size_t sn, const char *tgt, size_t tn, const char *want1,
                    const char *want2)
{
    mt_err err = { 0 };
    int before = srv_glossary_size(g);
    mt_status st = srv_glossary_add(g, src, sn, tgt, tn, &err);
    assert_int_equal(st, MT_ERR_INPUT);
    if (!strstr(err.msg, want1) || (want2 && !strstr(err.msg, want2)))
        fail_msg("message \"%s\" lacks \"%s\" / \"%s\"", err.msg, want1, want2 ? want2 : "");
    assert_int_equal(srv_glossary_size(g), before);      /* unchanged */
}

static int find(const srv_glossary *g, const char *src)
{
    for (int i = 0; i < srv_glossary_size(g); i++)
        if (!strcmp(srv_glossary_source(g, i), src))
            return i;
    return -1;
}

/* Matches of text, rendered as "[matched text>target]..." for easy asserts. */
static char *render(const srv_glossary *g, const char *text)
{
    static char out[4096];
    srv_term_match m[64];
    int n = srv_glossary_match(g, text, strlen(text), m, 64);
    assert_true(n >= 0 && n <= 64);
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        assert_true(m[i].start < m[i].end && m[i].end <= strlen(text));
        if (i)
            assert_true(m[i].start >= m[i - 1].end);
        k += (size_t)snprintf(out + k, sizeof out - k, "[%.*s>%s]", (int)(m[i].end - m[i].start),
                              text + m[i].start, srv_glossary_target(g, m[i].entry));
    }
    return out;
}

/* ---- entries ---- */

static void test_new_limits(void **state)
{
    (void)state;
    assert_null(srv_glossary_new(NULL));
    assert_null(srv_glossary_new(&(srv_glossary_limits){ .max_entries = 0, .max_term_bytes = 10 }));
    assert_null(srv_glossary_new(&(srv_glossary_limits){ .max_entries = 10, .max_term_bytes = -1 }));
    srv_glossary_free(NULL);
    assert_int_equal(srv_glossary_size(NULL), 0);
    srv_glossary *g = make(NULL);
    assert_int_equal(srv_glossary_size(g), 0);
    assert_null(srv_glossary_source(g, 0));
    assert_null(srv_glossary_target(g, -1));
    assert_int_equal(srv_glossary_case_sensitive(g, 0), -1);
    mt_err err;
    assert_int_equal(srv_glossary_add(NULL, "a", 1, "b", 1, &err), MT_ERR_INPUT);
    assert_int_equal(srv_glossary_add(g, NULL, 1, "b", 1, &err), MT_ERR_INPUT);
    srv_glossary_free(g);
}

static void test_add_refusals(void **state)
{
    (void)state;
    srv_glossary *g = make(&(srv_glossary_limits){ .max_entries = 2, .max_term_bytes = 16 });
    add_bad(g, "", 0, "pomme", 5, "empty source term", "\"pomme\"");
    add_bad(g, NULL, 0, "pomme", 5, "empty source term", NULL);
    add_bad(g, " \t" NBSP "\xE3\x80\x80", 7, "pomme", 5, "empty source term", NULL);
    add_bad(g, "apple", 5, "  ", 2, "empty target term", "\"apple\"");
    add_bad(g, "abcdefghijklmnopq", 17, "x", 1, "source term \"abcdefghijklmnopq\" is 17 bytes", "limit of 16");
    add_bad(g, "x", 1, "abcdefghijklmnopq", 17, "target term", "limit of 16");
    add_bad(g, "ab\xFF" "c", 4, "x", 1, "source term \"ab\" is not valid UTF-8", "at byte 2");
    add_bad(g, "x", 1, "caf\xC3", 4, "target term \"caf\" is not valid UTF-8", "at byte 3");
    add_bad(g, "\xED\xA0\x80", 3, "x", 1, "not valid UTF-8", NULL);         /* a surrogate */
    add_bad(g, "a\tb", 3, "x", 1, "source term \"a?b\" contains a control character (U+0009)", NULL);
    add_bad(g, "a\nb", 3, "x", 1, "control character (U+000A)", NULL);
    add_bad(g, "a\0b", 3, "x", 1, "control character (U+0000)", NULL);
    add_bad(g, "x", 1, "a\xC2\x85" "b", 4, "target term", "control character (U+0085)");
    /* the ends are trimmed before the length check: 16 bytes + spaces fit */
    add_ok(g, "  abcdefghijklmnop" NBSP, "\tx\n");
    assert_string_equal(srv_glossary_source(g, 0), "abcdefghijklmnop");
    assert_string_equal(srv_glossary_target(g, 0), "x");
    add_ok(g, "b", "y");
    add_bad(g, "c", 1, "z", 1, "too many glossary entries: the limit is 2", "\"c\"");
    add_ok(g, "b", "y2");                /* replacing at the limit is fine */
    assert_string_equal(srv_glossary_target(g, 1), "y2");
    srv_glossary_free(g);
}

static void test_keys(void **state)
{
    (void)state;
    srv_glossary *g = make(NULL);
    add_ok(g, "apple", "pomme");
    add_ok(g, "Apple", "Apple Inc.");        /* uppercase: a key of its own */
    add_ok(g, "APPLE", "APPLE");
    assert_int_equal(srv_glossary_size(g), 3);
    add_ok(g, "apple", "pomme2");            /* same key: replaced in place */
    assert_int_equal(srv_glossary_size(g), 3);
    assert_string_equal(srv_glossary_target(g, 0), "pomme2");
    assert_int_equal(srv_glossary_case_sensitive(g, 0), 0);
    assert_int_equal(srv_glossary_case_sensitive(g, 1), 1);
    /* inner whitespace is one space: the same key */
    add_ok(g, "new   york", "a");
    add_ok(g, " new\xC2\xA0york ", "b");
    assert_int_equal(srv_glossary_size(g), 4);
    assert_string_equal(srv_glossary_source(g, 3), "new york");
    assert_string_equal(srv_glossary_target(g, 3), "b");
    /* two lowercase spellings that fold alike: long s, final sigma */
    add_ok(g, "stra\xC5\xBF\xC5\xBF" "e", "x");      /* straſſe */
    add_ok(g, "strasse", "y");
    assert_int_equal(srv_glossary_size(g), 5);
    assert_string_equal(srv_glossary_source(g, 4), "strasse");
    assert_int_equal(srv_glossary_case_sensitive(g, 4), 0);
    add_ok(g, "\xCE\xBB\xCF\x8C\xCE\xB3\xCE\xBF\xCF\x82", "logos");   /* λόγος: ς is lowercase */
    assert_int_equal(srv_glossary_case_sensitive(g, 5), 0);
    /* an uppercase letter anywhere makes the term exact */
    add_ok(g, "iPhone", "iPhone");
    assert_int_equal(srv_glossary_case_sensitive(g, 6), 1);
    srv_glossary_free(g);
}

/* ---- TSV ---- */

static void test_tsv(void **state)
{
    (void)state;
    srv_glossary *g = make(NULL);
    const char tsv[] = BOM "# a comment\r\n"
                       "\r\n"
                       "apple\tpomme\r\n"
                       "   # an indented comment\tnot an entry\n"
                       "\t# a tab then a comment\n"
                       "\n"
                       "  \t " NBSP "\n"
                       "New York\t New York \n"
                       "package\tpaquet";              /* no final newline */
    mt_err err = { 0 };
    assert_int_equal(srv_glossary_add_tsv(g, tsv, sizeof tsv - 1, &err), MT_OK);
    assert_int_equal(srv_glossary_size(g), 3);
    assert_string_equal(srv_glossary_source(g, 0), "apple");
    assert_string_equal(srv_glossary_target(g, 0), "pomme");
    assert_string_equal(srv_glossary_target(g, 1), "New York");
    assert_string_equal(srv_glossary_source(g, 2), "package");
    assert_string_equal(srv_glossary_target(g, 2), "paquet");
    assert_int_equal(srv_glossary_add_tsv(g, "", 0, &err), MT_OK);
    assert_int_equal(srv_glossary_add_tsv(g, NULL, 0, &err), MT_OK);
    assert_int_equal(srv_glossary_add_tsv(g, BOM, 3, &err), MT_OK);
    /* a BOM further on is a (zero-width) space: trimmed */
    assert_int_equal(srv_glossary_add_tsv(g, "\n" BOM "apple" BOM "\tpomme\n", 19, &err), MT_OK);
    assert_int_equal(srv_glossary_size(g), 3);
    srv_glossary_free(g);
}

static void tsv_bad(const char *data, size_t len, const char *want)
{
    srv_glossary *g = make(&(srv_glossary_limits){ .max_entries = 3, .max_term_bytes = 16 });
    mt_err err = { 0 };
    assert_int_equal(srv_glossary_add_tsv(g, data, len, &err), MT_ERR_INPUT);
    if (!strstr(err.msg, want))
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
    srv_glossary_free(g);
}

#define TSV_BAD(lit, want) tsv_bad(lit, sizeof lit - 1, want)

static void test_tsv_errors(void **state)
{
    (void)state;
    TSV_BAD("a\tb\r\nno tab here\r\n", "line 2: no tab between the source and the target term");
    TSV_BAD("a\tb\tc\n", "line 1: more than two tab-separated columns");
    TSV_BAD("# c\n\nx\t\n", "line 3: empty target term for \"x\"");
    TSV_BAD("# c\r\n\r\n\tx\r\n", "line 3: empty source term (target \"x\")");
    TSV_BAD("a\tb\n\nc\td\xFF\n", "line 3: target term \"d\" is not valid UTF-8");
    TSV_BAD("a\tb\nlong long long term\tx\n", "line 2: source term \"long long long term\" is 19 bytes");
    TSV_BAD("a\tb\nc\td\ne\tf\ng\th\n", "line 4: too many glossary entries");
    TSV_BAD("a\rb\tc\n", "line 1: source term \"a?b\" contains a control character (U+000D)");

    /* the lines before the bad one stay added */
    srv_glossary *g = make(NULL);
    mt_err err;
    assert_int_equal(srv_glossary_add_tsv(g, "a\tb\nc\n", 6, &err), MT_ERR_INPUT);
    assert_int_equal(srv_glossary_size(g), 1);
    srv_glossary_free(g);
}

/* ---- merge and canonical ---- */

static void test_merge(void **state)
{
    (void)state;
    srv_glossary *base = make(NULL), *over = make(NULL), *m = NULL;
    add_ok(base, "apple", "pomme");
    add_ok(base, "car", "voiture");
    add_ok(over, "APPLE", "POMME");          /* exact: does not replace "apple" */
    add_ok(over, "apple", "pomme (req)");
    add_ok(over, "bike", "v\xC3\xA9lo");
    mt_err err = { 0 };
    assert_int_equal(srv_glossary_merge(base, over, NULL, &m, &err), MT_OK);
    assert_int_equal(srv_glossary_size(m), 4);
    assert_string_equal(srv_glossary_target(m, find(m, "apple")), "pomme (req)");
    assert_string_equal(srv_glossary_target(m, find(m, "car")), "voiture");
    assert_string_equal(srv_glossary_target(m, find(m, "APPLE")), "POMME");
    assert_int_equal(find(m, "apple"), 0);   /* base's order first */
    assert_string_equal(render(m, "An apple, a car, a bike, an APPLE."),
                        "[apple>pomme (req)][car>voiture][bike>v\xC3\xA9lo][APPLE>POMME]");
    srv_glossary_free(m);

    /* NULL sides */
    assert_int_equal(srv_glossary_merge(NULL, over, NULL, &m, &err), MT_OK);
    assert_int_equal(srv_glossary_size(m), 3);
    srv_glossary_free(m);
    assert_int_equal(srv_glossary_merge(NULL, NULL, NULL, &m, &err), MT_OK);
    assert_int_equal(srv_glossary_size(m), 0);
    srv_glossary_free(m);
    /* new limits are checked */
    m = (srv_glossary *)1;
    assert_int_equal(srv_glossary_merge(base, over, &(srv_glossary_limits){ .max_entries = 3, .max_term_bytes = 64 }, &m, &err), MT_ERR_INPUT);
    assert_null(m);
    assert_non_null(strstr(err.msg, "too many glossary entries: the limit is 3"));
    assert_int_equal(srv_glossary_merge(base, over, &(srv_glossary_limits){ .max_entries = 9, .max_term_bytes = 4 }, &m, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "\"apple\" is 5 bytes, over the limit of 4"));
    srv_glossary_free(base);
    srv_glossary_free(over);
}

static void test_canonical(void **state)
{
    (void)state;
    srv_glossary *a = make(NULL), *b = make(NULL);
    add_ok(a, "apple", "pomme");
    add_ok(a, "Apple", "Apple");
    add_ok(a, "New  York", "New York");
    add_ok(b, "New York", "New York");
    add_ok(b, "APPLE", "pomme");             /* "APPLE" is exact: a different entry */
    add_ok(b, "Apple", "Apple");
    size_t na, nb;
    char *ca = srv_glossary_canonical(a, &na), *cb = srv_glossary_canonical(b, &nb);
    assert_string_equal(ca, "=Apple\tApple\n=New York\tNew York\n~apple\tpomme\n");
    assert_int_equal(na, strlen(ca));
    assert_string_not_equal(ca, cb);
    free(cb);
    srv_glossary *c = make(NULL);            /* a's entries in another order and spelling */
    add_ok(c, "New York", "New York");
    add_ok(c, "apple", "x");
    add_ok(c, "Apple", "Apple");
    add_ok(c, "APPLE", "pomme");            /* exact: a key of its own */
    add_ok(c, " apple ", "pomme");          /* replaces "apple" -> "x" */
    cb = srv_glossary_canonical(c, &nb);
    assert_string_equal(cb, "=APPLE\tpomme\n" "=Apple\tApple\n=New York\tNew York\n~apple\tpomme\n");
    srv_glossary_free(c);
    c = make(NULL);
    add_ok(c, "New York", "New York");
    add_ok(c, "apple", "x");
    add_ok(c, "Apple", "Apple");
    add_ok(c, "apple", "pomme");
    free(cb);
    cb = srv_glossary_canonical(c, &nb);
    assert_string_equal(cb, ca);
    assert_int_equal(nb, na);
    free(cb);
    srv_glossary *d = make(NULL);
    add_ok(d, "New York", "New York");
    add_ok(d, "Apple", "Apple");
    add_ok(d, "APPLE", "pomme");            /* folded key of a lowercase entry: "apple" */
    add_ok(d, "apple", "pomme");
    cb = srv_glossary_canonical(d, NULL);
    assert_string_equal(cb, "=APPLE\tpomme\n=Apple\tApple\n=New York\tNew York\n~apple\tpomme\n");
    free(cb);
    free(ca);
    srv_glossary *e = make(NULL);
    ca = srv_glossary_canonical(e, &na);
    assert_string_equal(ca, "");
    assert_int_equal(na, 0);
    free(ca);
    add_ok(e, "\xC3\x89L\xC3\x89PHANT", "x");   /* ÉLÉPHANT: exact */
    add_ok(e, "\xC3\xA9l\xC3\xA9phant", "y");   /* éléphant */
    ca = srv_glossary_canonical(e, NULL);
    assert_string_equal(ca, "=\xC3\x89L\xC3\x89PHANT\tx\n~\xC3\xA9l\xC3\xA9phant\ty\n");
    free(ca);
    assert_null(srv_glossary_canonical(NULL, &na));
    srv_glossary_free(a);
    srv_glossary_free(b);
    srv_glossary_free(c);
    srv_glossary_free(d);
    srv_glossary_free(e);
}

/* ---- matching ---- */

static void test_whole_words(void **state)
{
    (void)state;
    srv_glossary *g = make(NULL);
    add_ok(g, "package", "paquet");
    assert_string_equal(render(g, "packages subpackage package_x repackaged"), "[package>paquet]");
    assert_string_equal(render(g, "package"), "[package>paquet]");                 /* whole text */
    assert_string_equal(render(g, "package, (package) \xC2\xABpackage\xC2\xBB package's package."),
                        "[package>paquet][package>paquet][package>paquet][package>paquet][package>paquet]");
    assert_string_equal(render(g, "package2 2package package\xC3\xA9 \xC3\xA9package"), "");
    assert_string_equal(render(g, "e-package/package"), "[package>paquet][package>paquet]");
    /* exact offsets: start and end of the text */
    srv_term_match m[4];
    const char *t = "package and package";
    assert_int_equal(srv_glossary_match(g, t, strlen(t), m, 4), 2);
    assert_int_equal(m[0].start, 0);
    assert_int_equal(m[0].end, 7);
    assert_int_equal(m[1].start, 12);
    assert_int_equal(m[1].end, 19);
    assert_int_equal(m[1].entry, 0);
    /* a term with punctuation at its ends follows the same rule */
    add_ok(g, "C++", "C++");
    assert_string_equal(render(g, "C++ and C++x, c++ (C++)"), "[C++>C++][C++>C++]");
    srv_glossary_free(g);
}

static void test_case_rule(void **state)
{
    (void)state;
    srv_glossary *g = make(NULL);
    add_ok(g, "debian", "Debian-fr");
    add_ok(g, "GNU", "GNU-fr");
    assert_string_equal(render(g, "Debian DEBIAN debian dEbIaN"),
                        "[Debian>Debian-fr][DEBIAN>Debian-fr][debian>Debian-fr][dEbIaN>Debian-fr]");
    assert_string_equal(render(g, "GNU gnu Gnu"), "[GNU>GNU-fr]");
    add_ok(g, "apple", "pomme");
    add_ok(g, "Apple", "Apple Inc.");
    assert_string_equal(render(g, "Apple apple APPLE"), "[Apple>Apple Inc.][apple>pomme][APPLE>pomme]");
    srv_glossary_free(g);
}

static void test_spacing(void **state)
{
    (void)state;
    srv_glossary *g = make(NULL);
    add_ok(g, "new york", "NY");
    assert_string_equal(render(g, "New York, new   york, NEW\tYORK, new\r\nyork, New" NBSP "York."),
                        "[New York>NY][new   york>NY][NEW\tYORK>NY][new\r\nyork>NY][New" NBSP "York>NY]");
    assert_string_equal(render(g, "newyork new-york new york2"), "");
    add_ok(g, "Open Source", "libre");
    assert_string_equal(render(g, "Open  Source, open source, Open\nSource"),
                        "[Open  Source>libre][Open\nSource>libre]");
    srv_glossary_free(g);
}

static void test_longest_first(void **state)
{
    (void)state;
    srv_glossary *g = make(NULL);
    add_ok(g, "New York", "New York");
    add_ok(g, "New York City", "NYC");
    add_ok(g, "York", "Y");
    add_ok(g, "city hall", "mairie");
    assert_string_equal(render(g, "New York City is in New York. York City Hall."),
                        "[New York City>NYC][New York>New York][York>Y][City Hall>mairie]");
    /* leftmost first, then longest: "New York" starts before "York City" */
    add_ok(g, "york city", "YC");
    assert_string_equal(render(g, "new york city"), "[york city>YC]");   /* the exact terms need capitals */
    assert_string_equal(render(g, "New York Cityx"), "[New York>New York]");
    assert_string_equal(render(g, "New York City hall"), "[New York City>NYC]");
    srv_glossary_free(g);
}

static void test_utf8_terms(void **state)
{
    (void)state;
    srv_glossary *g = make(NULL);
    add_ok(g, "\xC3\xA9l\xC3\xA9phant", "elephant");                         /* éléphant */
    add_ok(g, "\xD0\xBC\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0", "Moscow");   /* москва */
    add_ok(g, "\xCE\xBB\xCF\x8C\xCE\xB3\xCE\xBF\xCF\x82", "logos");            /* λόγος */
    add_ok(g, "\xC5\x81\xC3\xB3""d\xC5\xBA", "Lodz");                          /* Łódź: exact */
    /* Éléphant, ÉLÉPHANT, éléphant; not inside éléphants */
    assert_string_equal(render(g, "\xC3\x89l\xC3\xA9phant \xC3\x89L\xC3\x89PHANT \xC3\xA9l\xC3\xA9phant "
                                  "\xC3\xA9l\xC3\xA9phants"),
                        "[\xC3\x89l\xC3\xA9phant>elephant][\xC3\x89L\xC3\x89PHANT>elephant]"
                        "[\xC3\xA9l\xC3\xA9phant>elephant]");
    /* Москва, МОСКВА */
    assert_string_equal(render(g, "\xD0\x9C\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0! "
                                  "\xD0\x9C\xD0\x9E\xD0\xA1\xD0\x9A\xD0\x92\xD0\x90."),
                        "[\xD0\x9C\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0>Moscow]"
                        "[\xD0\x9C\xD0\x9E\xD0\xA1\xD0\x9A\xD0\x92\xD0\x90>Moscow]");
    /* ΛΌΓΟΣ: the capital sigma folds like the final one */
    assert_string_equal(render(g, "\xCE\x9B\xCE\x8C\xCE\x93\xCE\x9F\xCE\xA3"),
                        "[\xCE\x9B\xCE\x8C\xCE\x93\xCE\x9F\xCE\xA3>logos]");
    /* Łódź exact: not łódź nor ŁÓDŹ */
    assert_string_equal(render(g, "\xC5\x81\xC3\xB3""d\xC5\xBA \xC5\x82\xC3\xB3""d\xC5\xBA \xC5\x81\xC3\x93""D\xC5\xB9"),
                        "[\xC5\x81\xC3\xB3""d\xC5\xBA>Lodz]");
    /* a letter of another script next to the term is part of the word */
    assert_string_equal(render(g, "\xC3\xA9l\xC3\xA9phant\xD0\xB0 \xE6\x97\xA5\xC3\xA9l\xC3\xA9phant"), "");
    srv_glossary_free(g);

    /* a term that is not a Latin word at all */
    g = make(NULL);
    add_ok(g, "\xE6\x9D\xB1\xE4\xBA\xAC", "Tokyo");                          /* 東京 */
    assert_string_equal(render(g, "\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x80\x82 \xE6\x9D\xB1\xE4\xBA\xAC\xE9\x83\xBD"),
                        "[\xE6\x9D\xB1\xE4\xBA\xAC>Tokyo]");
    srv_glossary_free(g);
}

static void test_match_contract(void **state)
{
    (void)state;
    srv_glossary *g = make(NULL);
    srv_term_match m[2];
    assert_int_equal(srv_glossary_match(g, "a b", 3, m, 2), 0);      /* empty glossary */
    add_ok(g, "a", "x");
    assert_int_equal(srv_glossary_match(NULL, "a", 1, m, 2), -1);
    assert_int_equal(srv_glossary_match(g, NULL, 1, m, 2), -1);
    assert_int_equal(srv_glossary_match(g, "a", 1, m, -1), -1);
    assert_int_equal(srv_glossary_match(g, "a", 1, NULL, 1), -1);
    assert_int_equal(srv_glossary_match(g, NULL, 0, NULL, 0), 0);
    /* the count does not depend on max; only max are written */
    const char *t = "a a a a a";
    memset(m, 0x5a, sizeof m);
    assert_int_equal(srv_glossary_match(g, t, strlen(t), NULL, 0), 5);
    assert_int_equal(srv_glossary_match(g, t, strlen(t), m, 1), 5);
    assert_int_equal(m[0].start, 0);
    assert_int_equal(m[1].start, 0x5a5a5a5a5a5a5a5a);
    srv_glossary_free(g);
}

static void test_hostile_text(void **state)
{
    (void)state;
    srv_glossary *g = make(NULL);
    add_ok(g, "apple", "pomme");
    add_ok(g, "caf\xC3\xA9", "coffee");
    /* invalid bytes are non-word characters that nothing matches */
    assert_string_equal(render(g, "\xFF" "apple\xFE apple\xC3"), "[apple>pomme][apple>pomme]");
    assert_string_equal(render(g, "caf\xC3"), "");                 /* truncated at the end */
    assert_string_equal(render(g, "caf\xC3\xA9\xC3"), "[caf\xC3\xA9>coffee]");
    assert_string_equal(render(g, "\xED\xA0\x80" "apple"), "[apple>pomme]");   /* surrogate */
    /* a NUL in the text is a non-word character too */
    srv_term_match m[4];
    assert_int_equal(srv_glossary_match(g, "apple\0apple", 11, m, 4), 2);
    assert_int_equal(m[1].start, 6);
    /* exact-size heap copies of every prefix: ASan sees any read past len */
    const char *t = "An apple, un caf\xC3\xA9 \xE2\x80\x94 apple";
    size_t n = strlen(t);
    for (size_t k = 0; k <= n; k++) {
        char *h = malloc(k ? k : 1);
        assert_non_null(h);
        memcpy(h, t, k);
        int r = srv_glossary_match(g, h, k, m, 4);
        assert_true(r >= 0 && r <= 3);
        free(h);
    }
    srv_glossary_free(g);
}

static void test_classes(void **state)
{
    (void)state;
    assert_int_equal(srv_glossary_fold('A'), 'a');
    assert_int_equal(srv_glossary_fold(0xC9), 0xE9);      /* É */
    assert_int_equal(srv_glossary_fold(0x178), 0xFF);     /* Ÿ */
    assert_int_equal(srv_glossary_fold(0x17F), 's');      /* ſ */
    assert_int_equal(srv_glossary_fold(0x3A3), 0x3C3);    /* Σ */
    assert_int_equal(srv_glossary_fold(0x3C2), 0x3C3);    /* ς */
    assert_int_equal(srv_glossary_fold(0x41C), 0x43C);    /* М */
    assert_int_equal(srv_glossary_fold(0x401), 0x451);    /* Ё */
    assert_int_equal(srv_glossary_fold(0x1E9E), 0xDF);    /* ẞ */
    assert_int_equal(srv_glossary_fold(0x212A), 'k');     /* Kelvin sign */
    assert_int_equal(srv_glossary_fold(0x130), 0x130);    /* İ: no simple folding */
    assert_int_equal(srv_glossary_fold(0x4E00), 0x4E00);
    assert_true(srv_glossary_is_upper(0x100) && !srv_glossary_is_upper(0x101));
    assert_true(!srv_glossary_is_upper(0x3C2) && !srv_glossary_is_upper(0x17F) && !srv_glossary_is_upper(0xB5));
    assert_true(srv_glossary_is_upper(0x1C5));            /* ǅ titlecase */
    assert_true(srv_glossary_is_word('a') && srv_glossary_is_word('7') && !srv_glossary_is_word('_'));
    assert_true(srv_glossary_is_word(0xE9) && srv_glossary_is_word(0x436) && srv_glossary_is_word(0x4E00));
    assert_true(srv_glossary_is_word(0x301) && srv_glossary_is_word(0x200C) && srv_glossary_is_word(0x0661));
    assert_true(!srv_glossary_is_word(0xAB) && !srv_glossary_is_word(0xA0) && !srv_glossary_is_word(0x2014));
    assert_true(!srv_glossary_is_word(0x3002) && !srv_glossary_is_word(0x1F600) && !srv_glossary_is_word(0x20AC));
    assert_true(!srv_glossary_is_word(0x060C) && !srv_glossary_is_word(0xFF0C) && !srv_glossary_is_word(0x200E));
    assert_true(!srv_glossary_is_word(0xFFFFFFFF));
}

/* 1,000 entries (one- to three-word terms), 100 KB of text: the match must
 * stay far from entries x text. */
static void test_size(void **state)
{
    (void)state;
    srv_glossary *g = make(&(srv_glossary_limits){ .max_entries = 1000, .max_term_bytes = 64 });
    char src[64], tgt[64];
    for (int i = 0; i < 1000; i++) {
        int w = i % 3;
        snprintf(src, sizeof src, w == 0 ? "term%d" : w == 1 ? "term%d word" : "Term%d word more", i);
        snprintf(tgt, sizeof tgt, "t%d", i);
        add_ok(g, src, tgt);
    }
    size_t cap = 100 * 1024, n = 0;
    char *text = malloc(cap + 64);
    assert_non_null(text);
    unsigned seed = 7;
    while (n < cap) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)(seed >> 16) % 1200;
        n += (size_t)sprintf(text + n, k < 1000 ? (k % 2 ? "term%d word more, " : "Term%d word more ")
                                                : "plain%d words ", k);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int found = 0;
    for (int rep = 0; rep < 10; rep++)
        found = srv_glossary_match(g, text, n, NULL, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / 10;
    print_message("glossary: 1000 entries, %zu bytes: %d matches in %.2f ms\n", n, found, ms);
    assert_true(found > 3000);
    assert_true(ms < 200);              /* ~1 ms expected; generous for valgrind */
    free(text);
    srv_glossary_free(g);
}

/* ---- DeepL's CSV entries, unique sources ---- */

static void test_csv(void **state)
{
    (void)state;
    srv_glossary_limits ul = { .max_entries = 100, .max_term_bytes = 64, .unique = 1 };
    srv_glossary *g = make(&ul);
    mt_err err = { 0 };
    const char *csv = BOM "cat,chat\r\n"
                      "\"sofa, big\",\"grand \"\"divan\"\"\"\n"
                      "\n"
                      "house,maison,EN,fr\n"
                      "\"\",x\n";
    mt_status st = srv_glossary_add_csv(g, csv, strlen(csv), "en", "fr", &err);
    assert_int_equal(st, MT_ERR_INPUT);                 /* the last line: an empty source */
    assert_non_null(strstr(err.msg, "line 5"));
    assert_int_equal(srv_glossary_size(g), 3);
    assert_string_equal(srv_glossary_source(g, 1), "sofa, big");
    assert_string_equal(srv_glossary_target(g, 1), "grand \"divan\"");
    assert_string_equal(srv_glossary_target(g, 2), "maison");
    srv_glossary_free(g);
    static const struct {
        const char *csv, *says;
    } bad[] = {
        { "a,b\nc\n", "line 2: not source,target" },
        { "a,b,c\n", "line 1: not source,target" },
        { "a,b,c,d,e\n", "more than 4" },
        { "\"a,b\n", "not closed" },
        { "\"a\"x,b\n", "after a closing quote" },
        { "a,b,de,fr\n", "not the glossary's" },
        { "a,b\nA,c\nA,d\n", "line 3: duplicate source term \"A\"" },
        /* case rule: Apple, apple, APPLE are three keys; "ap   ple" is "ap ple" */
        { "Apple,x\napple,y\nAPPLE,z\nap ple,w\nap   ple,v\n", "line 5: duplicate" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        g = make(&ul);
        st = srv_glossary_add_csv(g, bad[i].csv, strlen(bad[i].csv), "en", "fr", &err);
        if (st != MT_ERR_INPUT || !strstr(err.msg, bad[i].says))
            fail_msg("'%s': %s (want %s)", bad[i].csv, err.msg, bad[i].says);
        srv_glossary_free(g);
    }
    /* without unique, a repeated source replaces (the server's files, a request's terms) */
    g = make(NULL);
    assert_int_equal(srv_glossary_add_csv(g, "a,b\na,c\n", 8, NULL, NULL, &err), MT_OK);
    assert_int_equal(srv_glossary_size(g), 1);
    assert_string_equal(srv_glossary_target(g, 0), "c");
    srv_glossary_free(g);
}

/* ---- the store of API-made glossaries ---- */

static srv_gstored *stored(const char *name, int owner, const char *src, const char *tgt)
{
    srv_gstored *g = srv_gstored_new(name, owner);
    srv_glossary *t = make(NULL);
    add_ok(t, src, tgt);
    assert_non_null(g);
    assert_int_equal(srv_gstored_add_dict(g, "en", "fr", t), 0);
    return g;
}

static void test_store(void **state)
{
    (void)state;
    char err[160];
    srv_gstore *s = srv_gstore_new(2);
    assert_non_null(s);
    srv_gstored *a = stored("a", 0, "cat", "chat"), *b = stored("b", 1, "dog", "chien");
    assert_int_equal(srv_gstore_add(s, a, err, sizeof err), 0);
    assert_int_equal(srv_gstore_add(s, b, err, sizeof err), 0);
    assert_int_equal(strlen(a->id), 36);
    assert_int_equal(a->id[14], '4');                   /* version 4 */
    assert_string_not_equal(a->id, b->id);
    assert_int_equal(srv_gstore_add(s, stored("c", 0, "x", "y"), err, sizeof err), -1);     /* full */
    assert_non_null(strstr(err, "limit of 2"));
    /* each key sees its own */
    assert_null(srv_gstore_get(s, a->id, 1));
    assert_null(srv_gstore_get(s, a->id, -1));
    srv_gstored **list;
    assert_int_equal(srv_gstore_list(s, 0, &list), 1);
    assert_ptr_equal(list[0], a);
    srv_gstore_release(s, list[0]);
    free(list);
    /* a reader keeps a deleted glossary whole */
    char id[37];
    snprintf(id, sizeof id, "%s", a->id);
    srv_gstored *held = srv_gstore_get(s, id, 0);
    assert_ptr_equal(held, a);
    assert_int_equal(srv_gstore_remove(s, id, 0), 0);
    assert_null(srv_gstore_get(s, id, 0));
    assert_int_equal(srv_gstore_remove(s, id, 0), -1);
    assert_string_equal(srv_glossary_target(srv_gstored_dict(held, "en", "fr")->terms, 0), "chat");
    srv_gstore_release(s, held);                        /* the last reference: freed (valgrind/ASan see it) */
    /* and a replaced one */
    held = srv_gstore_get(s, b->id, 1);
    srv_gstored *c = srv_gstored_copy(held);
    assert_non_null(c);
    assert_int_equal(srv_gstored_add_dict(c, "fr", "en", make(NULL)), 0);
    assert_int_equal(srv_gstore_replace(s, c), 0);
    srv_gstored *now = srv_gstore_get(s, b->id, 1);
    assert_int_equal(now->n_dicts, 2);
    assert_int_equal(held->n_dicts, 1);
    assert_null(srv_gstored_dict(held, "fr", "en"));
    assert_int_equal(srv_gstored_remove_dict(now, "de", "en"), -1);
    srv_gstore_release(s, held);
    srv_gstore_release(s, now);
    srv_gstored *gone = stored("gone", 5, "a", "b");
    snprintf(gone->id, sizeof gone->id, "%s", "no-such-id");
    assert_int_equal(srv_gstore_replace(s, gone), -1);  /* freed */
    srv_gstore_free(s);
}

/* Readers holding glossaries while others replace and delete them: every
 * reader sees a whole glossary, the last reference frees (TSan: make tsan). */
typedef struct {
    srv_gstore  *s;
    char         id[37];
    int          seen;
    _Atomic int *first_done;    /* readers past their first read: the delete waits for all */
} store_reader;

static void *read_store(void *arg)
{
    store_reader *r = arg;
    for (int i = 0; i < 2000; i++) {
        srv_gstored *g = srv_gstore_get(r->s, r->id, 7);
        if (g) {
            r->seen += srv_gstored_dict(g, "en", "fr") != NULL && g->n_dicts >= 1;
            srv_gstore_release(r->s, g);
        }
        srv_gstored **all;
        int n = srv_gstore_list(r->s, 7, &all);
        for (int k = 0; k < n; k++)
            srv_gstore_release(r->s, all[k]);
        free(all);
        if (i == 0)
            atomic_fetch_add(r->first_done, 1);
    }
    return NULL;
}

static void test_store_threads(void **state)
{
    (void)state;
    char err[160];
    srv_gstore *s = srv_gstore_new(8);
    srv_gstored *g = stored("shared", 7, "cat", "chat");
    assert_int_equal(srv_gstore_add(s, g, err, sizeof err), 0);
    store_reader r[3];
    pthread_t th[3];
    _Atomic int first_done = 0;
    for (int i = 0; i < 3; i++) {
        r[i] = (store_reader){ .s = s, .seen = 0, .first_done = &first_done };
        snprintf(r[i].id, sizeof r[i].id, "%s", g->id);
        pthread_create(&th[i], NULL, read_store, &r[i]);
    }
    for (int i = 0; i < 500; i++) {             /* edits under the readers */
        srv_gstored *cur = srv_gstore_get(s, r[0].id, 7), *c = cur ? srv_gstored_copy(cur) : NULL;
        srv_gstore_release(s, cur);
        if (c)
            assert_int_equal(srv_gstore_replace(s, c), 0);
    }
    /* every reader has read once before the delete: on a loaded machine the
     * edits could otherwise all be over before a reader ran (seen 0, CI) */
    while (atomic_load(&first_done) < 3)
        sched_yield();
    assert_int_equal(srv_gstore_remove(s, r[0].id, 7), 0);
    int seen = 0;
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        seen += r[i].seen;
    }
    print_message("    3 readers, 500 replacements and a delete: %d whole reads\n", seen);
    assert_true(seen >= 3);
    srv_gstore_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_limits),
        cmocka_unit_test(test_add_refusals),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_tsv),
        cmocka_unit_test(test_tsv_errors),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_whole_words),
        cmocka_unit_test(test_case_rule),
        cmocka_unit_test(test_spacing),
        cmocka_unit_test(test_longest_first),
        cmocka_unit_test(test_utf8_terms),
        cmocka_unit_test(test_match_contract),
        cmocka_unit_test(test_hostile_text),
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_size),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_store_threads),
    };
    return cmocka_run_group_tests_name("glossary", tests, NULL, NULL);
}
