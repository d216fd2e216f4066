/* test_doc_markup_formats: Markdown (doc_markdown.c, on cmark-gfm) and XLIFF
 * 1.2 / 2.x (doc_xliff.c, on markup/xml_tree.h) through document.h, without
 * a model.
 *
 * Markdown: every example of the CommonMark spec (0.31.2,
 * tests/fixtures/markdown/, CC-BY-SA 4.0) parses; rendered with nothing set
 * it is byte for byte the input; with every unit set to its own text (an
 * "identity" translation, each word linked to itself) cmark renders the output
 * to the same HTML as the input, whitespace runs aside (a translated
 * paragraph is one line); the figures are printed.  Then the units of a
 * README-shaped file (what is translated, what is kept byte for byte: code,
 * inline code, link targets, HTML, front matter), the escaping of a
 * translation that holds Markdown's characters, the delimiters placed by the
 * links, the sniffing by name and by content, and the refusals.
 *
 * XLIFF: the units of 1.2 and 2.0 files (translate="no", existing targets,
 * inline codes as opaque items or elements), targets created with the
 * source's indentation or filled, the target language and the state set,
 * every other byte kept; malformed files refused with their line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>
#include <jansson.h>

#include "document/document.h"
#include "fixture_file.h"
#include "util/utf8.h"

static srv_doc *parse(srv_doc_kind k, const char *s)
{
    srv_doc *d = NULL;
    mt_err err = { 0 };
    if (srv_doc_parse(k, s, strlen(s), NULL, &d, &err) != MT_OK)
        fail_msg("parse: %s", err.msg);
    return d;
}

static char *render(const srv_doc *d)
{
    char *out;
    size_t len;
    mt_err err = { 0 };
    assert_int_equal(srv_doc_render(d, &out, &len, &err), MT_OK);
    assert_int_equal(strlen(out), len);
    return out;
}

/* Links of an identity translation of t: word k of the source to word k of the target (t itself). */
static long *identity_links(const char *t, int *n)
{
    size_t len = strlen(t);
    long *l = malloc(sizeof *l * 4 * (len + 1)), cp = 0, ws = -1;
    assert_non_null(l);
    *n = 0;
    for (size_t i = 0; i <= len;) {
        uint32_t c = ' ';
        size_t m = i < len ? mt_utf8_next(t + i, len - i, &c) : 1;
        if (c == ' ' && ws >= 0) {
            long *w = l + 4 * (*n)++;
            w[0] = w[2] = ws;
            w[1] = w[3] = cp;
            ws = -1;
        } else if (c != ' ' && ws < 0) {
            ws = cp;
        }
        cp++;
        i += m;
    }
    return l;
}

/* Unit i set to t, linked word to word with its source (the same number of words). */
static void set_linked(srv_doc *d, int i, const char *t)
{
    int n;
    long *l = identity_links(t, &n);
    mt_err err = { 0 };
    assert_int_equal(srv_doc_set(d, i, t, strlen(t), l, n, &err), MT_OK);
    free(l);
}

static void set(srv_doc *d, int i, const char *t)
{
    mt_err err = { 0 };
    assert_int_equal(srv_doc_set(d, i, t, strlen(t), NULL, 0, &err), MT_OK);
}

static void rendered_is(const srv_doc *d, const char *want)
{
    char *out = render(d);
    assert_string_equal(out, want);
    free(out);
}

static void refused(srv_doc_kind k, const char *s, size_t len, mt_status want, const char *msg_part)
{
    srv_doc *d = NULL;
    mt_err err = { 0 };
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_depth = 8;
    lim.max_unit_bytes = 64;
    assert_int_equal(srv_doc_parse(k, s, len, &lim, &d, &err), want);
    assert_null(d);
    if (!strstr(err.msg, msg_part))
        fail_msg("'%s' does not name '%s'", err.msg, msg_part);
}

/* ---- Markdown: the CommonMark spec's examples -------------------------------------------- */

/* cmark's HTML of s (GFM tables and strikethrough, as doc_markdown.c reads),
 * whitespace runs one space, none next to a tag. */
static char *html_of(const char *s)
{
    cmark_gfm_core_extensions_ensure_registered();
    cmark_parser *p = cmark_parser_new(CMARK_OPT_DEFAULT);
    cmark_parser_attach_syntax_extension(p, cmark_find_syntax_extension("table"));
    cmark_parser_attach_syntax_extension(p, cmark_find_syntax_extension("strikethrough"));
    cmark_parser_feed(p, s, strlen(s));
    cmark_node *doc = cmark_parser_finish(p);
    char *h = cmark_render_html(doc, CMARK_OPT_DEFAULT, cmark_parser_get_syntax_extensions(p));
    cmark_node_free(doc);
    cmark_parser_free(p);
    size_t k = 0;
    for (size_t i = 0; h[i]; i++) {
        int sp = h[i] == ' ' || h[i] == '\n' || h[i] == '\t';
        if (sp && (k == 0 || h[k - 1] == ' ' || h[k - 1] == '>'))
            continue;
        if (h[i] == '<' && k && h[k - 1] == ' ')
            k--;
        h[k++] = sp ? ' ' : h[i];
    }
    while (k && h[k - 1] == ' ')
        k--;
    h[k] = 0;
    return h;
}

static void md_spec_examples(void **state)
{
    (void)state;
    json_error_t je;
    json_t *all = json_load_file("tests/fixtures/markdown/commonmark_spec_examples.json", 0, &je);
    if (!all)
        fail_msg("the spec's examples: %s", je.text);
    size_t n = json_array_size(all), same = 0, with_units = 0, html_same = 0, bytes_same = 0, units = 0;
    for (size_t e = 0; e < n; e++) {
        json_t *ex = json_array_get(all, e);
        const char *md = json_string_value(json_object_get(ex, "markdown"));
        srv_doc *d = parse(SRV_DOC_MARKDOWN, md);
        char *out = render(d);
        same += !strcmp(out, md);
        if (strcmp(out, md))
            fail_msg("example %d: not its own bytes back", (int)json_integer_value(json_object_get(ex, "example")));
        free(out);
        int u = srv_doc_units(d);
        units += (size_t)u;
        for (int i = 0; i < u; i++)
            set_linked(d, i, srv_doc_unit(d, i));
        if (u) {
            with_units++;
            out = render(d);
            char *a = html_of(md), *b = html_of(out);
            html_same += !strcmp(a, b);
            bytes_same += !strcmp(out, md);
            if (strcmp(a, b) && getenv("MD_SPEC_VERBOSE"))
                fprintf(stderr, "example %d (%s):\n%s\n-- became --\n%s\n-- html --\n%s\n%s\n",
                        (int)json_integer_value(json_object_get(ex, "example")),
                        json_string_value(json_object_get(ex, "section")), md, out, a, b);
            free(a);
            free(b);
            free(out);
        }
        srv_doc_free(d);
    }
    printf("CommonMark spec: %zu examples, %zu rendered untranslated byte for byte; %zu with units (%zu units), "
           "identity translation: %zu the same HTML, %zu the same bytes\n", n, same, with_units, units, html_same,
           bytes_same);
    assert_int_equal(n, 655);
    assert_int_equal(same, n);
    assert_int_equal(html_same, with_units);
    json_decref(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(md_spec_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
