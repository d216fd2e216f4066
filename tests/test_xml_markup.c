/* test_xml_markup: server/markup/xml.c (tag_handling "xml") without a model.
 * No translation gives the input back byte for byte (self-closing tags, CDATA,
 * comments, PIs, entities, a declaration, namespaces, quoting); the units of
 * outline detection, splitting and non-splitting tags counted; ignored
 * elements kept byte for byte inside and outside sentences; under the fake
 * translations of tests/fake_translate.h (words in place, reversed,
 * shuffled) the output re-parses with the input's tags, comments, PIs and
 * CDATA, byte for byte, in the same nesting and order; the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_translate.h"
#include "markup/xml.h"
#include "xml_check.h"

static const srv_xml_tags OUTLINE = { .outline = 1 };

static srv_xmarkup *parse_tags(const char *s, const srv_xml_tags *tags)
{
    srv_xmarkup *x = NULL;
    mt_err err = { 0 };
    mt_status st = srv_xmarkup_parse(s, strlen(s), tags, 64, &x, &err);
    if (st != MT_OK)
        fprintf(stderr, "parse of %s: %s\n", s, err.msg);
    assert_int_equal(st, MT_OK);
    return x;
}

/* s rendered with every unit translated by mode (-1: none set): malloc'd. */
static char *translate(const char *s, const srv_xml_tags *tags, int mode)
{
    srv_xmarkup *x = parse_tags(s, tags);
    mt_sbuf sb = { 0 };
    for (int i = 0; mode >= 0 && i < srv_xmarkup_units(x); i++) {
        const long *links;
        int nl = fake_translation(srv_xmarkup_unit(x, i), i, mode, 7, &sb, &links);
        mt_err err = { 0 };
        assert_int_equal(srv_xmarkup_set(x, i, sb.p, sb.n, links, nl, &err), MT_OK);
    }
    free(sb.p);
    char *out;
    size_t len;
    mt_err err = { 0 };
    assert_int_equal(srv_xmarkup_render(x, &out, &len, &err), MT_OK);
    assert_int_equal(strlen(out), len);
    srv_xmarkup_free(x);
    return out;
}

static void expect_units(const char *s, const srv_xml_tags *tags, const char *const *want, int n)
{
    srv_xmarkup *x = parse_tags(s, tags);
    for (int i = 0; i < srv_xmarkup_units(x) && i < n; i++)
        assert_string_equal(srv_xmarkup_unit(x, i), want[i]);
    assert_int_equal(srv_xmarkup_units(x), n);
    srv_xmarkup_free(x);
}

static char *skeleton(const char *s)
{
    char *k = xml_skeleton(s, strlen(s));
    if (!k)
        fprintf(stderr, "not XML: %s\n", s);
    assert_non_null(k);
    return k;
}

static const char *const CASES[] = {
    "Press <b>Continue</b> to advance.",
    "<p>Line <x:br xmlns:x='urn:x'/> two &amp; <i>more <b>nested</b> words</i> here.</p>\n<p>Second.</p>",
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<doc><title>A title</title><par>One. <ph id=\"1\"/> Two.</par></doc>",
    "<doc>\r\n  <!-- a comment -->\r\n  <par>Text <![CDATA[<raw> & stuff]]> after, <?php echo 1; ?> end.</par>\r\n</doc>",
    "<p>Fish &amp; chips &lt;3 &#233;t&#xE9; &quot;q&quot; &apos;a&apos;</p>",
    "<Para>Case <B>sensitive</B> <b>names</b>.</Para><para>lower</para>",
    "<a href='x' title=\"y &amp; z\">Link   text</a> with  spaces\tand\nlines",
    "<doc><empty></empty><empty/><p>Only <g id='1'></g> a point.</p></doc>",
    "\xef\xbb\xbf<p>With a byte order mark: \xc3\xa9l\xc3\xa8ve.</p>",
    "plain text without tags",
    "<p>Run <code>ls  -l &amp; x</code> now, then <code/> stop.</p><code>not <b>this</b></code>",
};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

static void test_round_trip_untranslated(void **state)
{
    (void)state;
    const char *const ign[] = { "code" };
    srv_xml_tags variants[3] = { { .outline = 1 }, { .outline = 0 }, { .outline = 1, .ignore = ign, .n_ignore = 1 } };
    for (int v = 0; v < 3; v++)
        for (int i = 0; i < N_CASES; i++) {
            char *out = translate(CASES[i], &variants[v], -1);
            assert_string_equal(out, CASES[i]);
            free(out);
        }
}

/* With the words in place, reversed or shuffled: the same markup, byte for
 * byte and in the same nesting; words in place: the same units again. */
static void test_markup_kept_when_translated(void **state)
{
    (void)state;
    const char *const ign[] = { "code" };
    srv_xml_tags tags = { .outline = 1, .ignore = ign, .n_ignore = 1 };
    int checked = 0;
    for (int mode = 0; mode < 3; mode++)
        for (int i = 0; i < N_CASES; i++) {
            char *out = translate(CASES[i], &tags, mode);
            char *a = skeleton(CASES[i]), *b = skeleton(out);
            assert_string_equal(b, a);
            if (mode == 0) {
                srv_xmarkup *x = parse_tags(CASES[i], &tags), *y = parse_tags(out, &tags);
                assert_int_equal(srv_xmarkup_units(y), srv_xmarkup_units(x));
                for (int k = 0; k < srv_xmarkup_units(x); k++)
                    assert_string_equal(srv_xmarkup_unit(y, k), srv_xmarkup_unit(x, k));
                srv_xmarkup_free(x);
                srv_xmarkup_free(y);
            }
            free(a);
            free(b);
            free(out);
            checked++;
        }
    assert_int_equal(checked, 3 * N_CASES);
}

static void test_words_move_with_tags(void **state)
{
    (void)state;
    char *out = translate("<p>one <b>two</b> three</p>", &OUTLINE, 1);     /* reversed */
    assert_string_equal(out, "<p>three <b>two</b> one</p>");
    free(out);
    out = translate("<p>Fish &amp; <i>chips</i> &lt;3</p>", &OUTLINE, 0);
    assert_string_equal(out, "<p>Fish &amp; <i>chips</i> &lt;3</p>");
    free(out);
    out = translate("<p>Fish &#38; chips &#233;</p>", &OUTLINE, 0);       /* references re-escaped as needed */
    assert_string_equal(out, "<p>Fish &amp; chips \xc3\xa9</p>");
    free(out);
}

static void test_units_entities_and_whitespace(void **state)
{
    (void)state;
    const char *want[] = { "Fish & chips <3 \xc3\xa9t\xc3\xa9 \"q\" 'a'" };
    expect_units(CASES[4], &OUTLINE, want, 1);
    const char *want2[] = { "Link text with spaces and lines" };
    expect_units(CASES[6], &OUTLINE, want2, 1);
}

/* DeepL's outline example: title and each par units, the same with
 * outline_detection=0 and splitting_tags=par,title. */
static void test_units_outline_and_splitting(void **state)
{
    (void)state;
    const char *doc = "<document>\n  <meta>\n    <title>A document's title</title>\n  </meta>\n  <content>\n"
                      "    <par>This is the first sentence. Followed by a <b>second</b> one.</par>\n"
                      "    <par>This is the third sentence.</par>\n  </content>\n</document>";
    const char *want[] = { "A document's title", "This is the first sentence. Followed by a second one.",
                           "This is the third sentence." };
    expect_units(doc, &OUTLINE, want, 3);
    const char *const split[] = { "par", "title" };
    srv_xml_tags manual = { .outline = 0, .splitting = split, .n_splitting = 2 };
    expect_units(doc, &manual, want, 3);
    /* no outline and nothing splitting: one unit */
    srv_xml_tags none = { .outline = 0 };
    const char *one[] = { "A document's title This is the first sentence. Followed by a second one. This is the "
                          "third sentence." };
    expect_units(doc, &none, one, 1);
    /* splitting tags split inside a sentence; non-splitting ones keep a block inline */
    const char *const sx[] = { "x" };
    srv_xml_tags sp = { .outline = 1, .splitting = sx, .n_splitting = 1 };
    const char *three[] = { "Hello", "big", "world" };
    expect_units("<p>Hello <x>big</x> world</p>", &sp, three, 3);
    const char *whole[] = { "Hello big world" };
    expect_units("<p>Hello <x>big</x> world</p>", &OUTLINE, whole, 1);
    /* outline: <b> alone in <p> is structure; named non-splitting it is inline of the p */
    const char *two[] = { "Bold", "tail" };
    expect_units("<d><p><b>Bold</b></p><p>tail</p></d>", &OUTLINE, two, 2);
    const char *const nb[] = { "d", "p", "b" };
    srv_xml_tags ns = { .outline = 1, .non_splitting = nb, .n_non_splitting = 3 };
    const char *joined[] = { "Bold tail" };
    expect_units("<d><p><b>Bold</b></p> <p>tail</p></d>", &ns, joined, 1);
}

static void test_ignore_tags(void **state)
{
    (void)state;
    const char *const ign[] = { "code", "x:k" };
    srv_xml_tags tags = { .outline = 1, .ignore = ign, .n_ignore = 2 };
    const char *want[] = { "Run now, then stop.", "Keep going." };
    const char *in = "<p>Run <code>ls  -l &amp; <b>x</b></code> now, then <code/> stop.</p>"
                     "<code>not <b>this</b></code><p xmlns:x='u'>Keep <x:k>as\tis</x:k> going.</p>";
    expect_units(in, &tags, want, 2);
    for (int mode = 0; mode < 3; mode++) {
        char *out = translate(in, &tags, mode);
        const char *keep[] = { "<code>ls  -l &amp; <b>x</b></code>", "<code/>", "<code>not <b>this</b></code>",
                               "<x:k>as\tis</x:k>" };
        for (int k = 0; k < 4; k++) {
            const char *at = strstr(out, keep[k]);
            assert_non_null(at);
            assert_null(strstr(at + 1, keep[k]));    /* once */
        }
        free(out);
    }
    /* names are case-sensitive: Code is not code */
    const char *want2[] = { "Run ls now." };
    expect_units("<p>Run <Code>ls</Code> now.</p>", &tags, want2, 1);
}

static void parse_fails(const char *s, mt_status want, const char *msg)
{
    srv_xmarkup *x = NULL;
    mt_err err = { 0 };
    assert_int_equal(srv_xmarkup_parse(s, strlen(s), &OUTLINE, 8, &x, &err), want);
    assert_null(x);
    if (!strstr(err.msg, msg))
        fprintf(stderr, "message: %s (wanted %s)\n", err.msg, msg);
    assert_non_null(strstr(err.msg, msg));
}

static void test_refused(void **state)
{
    (void)state;
    parse_fails("<p>unclosed <b>bold</p>", MT_ERR_INPUT, "mismatched tag");
    parse_fails("<p>a</p>\n<p>b", MT_ERR_INPUT, "(line 2)");
    parse_fails("<p>&nbsp;</p>", MT_ERR_INPUT, "undefined entity");
    parse_fails("<!DOCTYPE p><p>x</p>", MT_ERR_INPUT, "");
    parse_fails("<p a='1' a='2'>x</p>", MT_ERR_INPUT, "duplicate attribute");
    parse_fails("<?xml version='1.0' encoding='ISO-8859-1'?><p>x</p>", MT_ERR_INPUT, "ISO-8859-1");
    parse_fails("<a><a><a><a><a><a><a><a><a>deep</a></a></a></a></a></a></a></a></a>", MT_ERR_TOO_LONG, "deeper");
    /* the root's name is ours: a closing tag of it in the text is still an error */
    parse_fails("x</mtserve-fragment><p>", MT_ERR_INPUT, "not well-formed");
    srv_xmarkup *x = NULL;
    mt_err err = { 0 };                         /* 8 levels: accepted */
    const char *ok = "<a><a><a><a><a><a><a><a>deep</a></a></a></a></a></a></a></a>";
    assert_int_equal(srv_xmarkup_parse(ok, strlen(ok), &OUTLINE, 8, &x, &err), MT_OK);
    srv_xmarkup_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_untranslated),
        cmocka_unit_test(test_markup_kept_when_translated),
        cmocka_unit_test(test_words_move_with_tags),
        cmocka_unit_test(test_units_entities_and_whitespace),
        cmocka_unit_test(test_units_outline_and_splitting),
        cmocka_unit_test(test_ignore_tags),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
