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

/* The words of t (runs of non-spaces): [n][2] code points. */
static long *words(const char *t, int *n)
{
    size_t len = strlen(t);
    long *w = malloc(sizeof *w * 2 * (len + 1)), cp = 0, ws = -1;
    assert_non_null(w);
    *n = 0;
    for (size_t i = 0; i <= len;) {
        uint32_t c = ' ';
        size_t m = i < len ? mt_utf8_next(t + i, len - i, &c) : 1;
        if (c == ' ' && ws >= 0) {
            w[2 * *n] = ws;
            w[2 * (*n)++ + 1] = cp;
            ws = -1;
        } else if (c != ' ' && ws < 0) {
            ws = cp;
        }
        cp++;
        i += m;
    }
    return w;
}

/* Unit i set to t, its k-th word linked to the source's k-th word. */
static void set_linked(srv_doc *d, int i, const char *t)
{
    int ns, nt;
    long *sw = words(srv_doc_unit(d, i), &ns), *tw = words(t, &nt), *l = malloc(sizeof *l * 4 * (size_t)(ns + 1));
    int n = ns < nt ? ns : nt;
    for (int k = 0; k < n; k++) {
        l[4 * k] = sw[2 * k];
        l[4 * k + 1] = sw[2 * k + 1];
        l[4 * k + 2] = tw[2 * k];
        l[4 * k + 3] = tw[2 * k + 1];
    }
    mt_err err = { 0 };
    assert_int_equal(srv_doc_set(d, i, t, strlen(t), l, n, &err), MT_OK);
    free(sw);
    free(tw);
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
        int sp = h[i] == ' ' || h[i] == '\n' || h[i] == '\t' || h[i] == '\f' || h[i] == '\r';
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

/* The letters of h outside its tags upper-cased. */
static void upper_text(char *h)
{
    int tag = 0;
    for (char *p = h; *p; p++) {
        tag = *p == '<' ? 1 : *p == '>' ? 0 : tag;
        if (!tag && *p >= 'a' && *p <= 'z')
            *p = (char)(*p - 32);
    }
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


/* ---- Markdown: a README -------------------------------------------------------------------- */

static void md_readme_units(void **state)
{
    (void)state;
    size_t len;
    char *md = slurp("tests/fixtures/markdown/README.md", &len);
    srv_doc *d = parse(SRV_DOC_MARKDOWN, md);
    const char *want[] = { "Garden Tools",
                           "A small library for planning a garden. It reads your beds from a file and tells you "
                           "when to water them.",
                           "Installation", "Install it with , or read the documentation.", "Usage",
                           "Write your beds in a file.", "Run the planner every morning. It prints what to do today.",
                           "The house has a small garden.", "Water the plants before noon.",
                           "The garden is green in spring. Keep it that way.", "Plant", "Water", "Tomato",
                           "Every day", "Rose", "Twice a week", "See for answers, and never water at night.",
                           "The planner prints %d tasks for {name} every day.", "Licence: MIT." };
    int n = (int)(sizeof want / sizeof want[0]);
    assert_int_equal(srv_doc_units(d), n);
    for (int i = 0; i < n; i++)
        assert_string_equal(srv_doc_unit(d, i), want[i]);
    char *out = render(d);
    assert_string_equal(out, md);                   /* nothing set: the same bytes */
    free(out);
    for (int i = 0; i < n; i++) {                   /* every unit upper-cased, word for word */
        char *t = strdup(srv_doc_unit(d, i));
        for (char *p = t; *p; p++)
            *p = *p >= 'a' && *p <= 'z' ? (char)(*p - 32) : *p;
        set_linked(d, i, t);
        free(t);
    }
    out = render(d);
    /* kept byte for byte: front matter, code, inline code, link targets, HTML, autolinks */
    const char *kept[] = { "---\ntitle: Garden Tools\ntags: [garden, tools]\n---\n",
                           "```sh\npip install garden-tools\ngarden plan --beds beds.yaml\n```\n",
                           "`pip install garden-tools`", "](https://example.com/docs \"Docs\")",
                           "<div align=\"center\">\n  <img src=\"logo.png\" alt=\"logo\">\n</div>\n",
                           "<https://example.com/faq>", "    indented code stays as it is\n",
                           "|-------|-------|\n" };
    for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++)
        if (!strstr(out, kept[k]))
            fail_msg("'%s' not kept in:\n%s", kept[k], (fprintf(stderr, "%s\n", out), ""));
    const char *made[] = { "# GARDEN TOOLS\n", "A SMALL LIBRARY FOR **PLANNING A GARDEN**. IT READS YOUR BEDS FROM A "
                           "FILE AND TELLS YOU *WHEN TO WATER* THEM.\n", "[DOCUMENTATION](https://example.com/docs",
                           "1. WRITE YOUR BEDS IN A FILE.\n", "> THE GARDEN IS GREEN IN SPRING. KEEP IT THAT WAY.\n",
                           "| TOMATO | EVERY DAY |\n", "~~NEVER~~ WATER AT NIGHT.\n", "- THE HOUSE HAS A **SMALL** GARDEN.\n" };
    for (size_t k = 0; k < sizeof made / sizeof made[0]; k++)
        if (!strstr(out, made[k]))
            fail_msg("'%s' not in:\n%s", made[k], (fprintf(stderr, "%s\n", out), ""));
    char *a = html_of(md), *b = html_of(out);     /* the same structure: only the letters' case differs */
    upper_text(a);
    upper_text(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
    free(out);
    srv_doc_free(d);
    free(md);
}

/* A translation holding Markdown's characters is escaped: its text is the translation. */
static void md_escapes(void **state)
{
    (void)state;
    srv_doc *d = parse(SRV_DOC_MARKDOWN, "Plain words here.\n\n| a | b |\n|---|---|\n| c | d |\n\n# Title\n");
    assert_int_equal(srv_doc_units(d), 6);
    set(d, 0, "- 1. *not* a [list] <b> `x` a_b \\ ~s~ & &amp; #7 !");
    set(d, 3, "c | d");
    set(d, 5, "Title #");
    char *out = render(d);
    assert_string_equal(out, "\\- 1. \\*not\\* a \\[list\\] \\<b> \\`x\\` a\\_b \\\\ \\~s\\~ & \\&amp; #7 !\n\n"
                             "| a | b |\n|---|---|\n| c \\| d | d |\n\n# Title \\#\n");
    char *h = html_of(out);
    assert_non_null(strstr(h, "<p>- 1. *not* a [list] &lt;b&gt; `x` a_b \\ ~s~ &amp; &amp;amp; #7 !</p>"));
    assert_non_null(strstr(h, "<td>c | d</td>"));
    assert_non_null(strstr(h, "<h1>Title #</h1>"));
    free(h);
    free(out);
    srv_doc_free(d);
    d = parse(SRV_DOC_MARKDOWN, "# Title\r\rPara *one*\rgoes on.\r");      /* lone CRs end lines, as for cmark */
    assert_int_equal(srv_doc_units(d), 2);
    assert_string_equal(srv_doc_unit(d, 1), "Para one goes on.");
    set_linked(d, 1, "PARA ONE GOES ON.");
    rendered_is(d, "# Title\r\rPARA *ONE* GOES ON.\r");
    srv_doc_free(d);
    d = parse(SRV_DOC_MARKDOWN, "Para one.\n");
    set(d, 0, "12. Point");                         /* a list's number at a line's start */
    rendered_is(d, "12\\. Point\n");
    srv_doc_free(d);
}

/* The delimiters of emphasis and links follow the words they were linked to. */
static void md_inline_placed(void **state)
{
    (void)state;
    srv_doc *d = parse(SRV_DOC_MARKDOWN, "The **red** house has a [door](/d \"t\").\n");
    assert_string_equal(srv_doc_unit(d, 0), "The red house has a door.");
    /* "La maison rouge a une porte.": red -> rouge, house -> maison, door -> porte */
    const char *t = "La maison rouge a une porte.";
    long links[] = { 0, 3, 0, 2, 4, 7, 10, 15, 8, 13, 3, 9, 20, 24, 22, 28 };
    mt_err err = { 0 };
    assert_int_equal(srv_doc_set(d, 0, t, strlen(t), links, 4, &err), MT_OK);
    rendered_is(d, "La maison **rouge** a une [porte](/d \"t\").\n");
    srv_doc_free(d);
    /* an apostrophe in a destination, a title, a reference link, a shortcut one (its text is its label: kept) */
    d = parse(SRV_DOC_MARKDOWN, "See [the docs](http://x/it's \"T\") and [this][r] or [r].\n\n[r]: /r\n");
    assert_string_equal(srv_doc_unit(d, 0), "See the docs and this or .");
    set_linked(d, 0, "VOIR LES DOCS ET CECI OU .");
    rendered_is(d, "VOIR [LES DOCS](http://x/it's \"T\") ET [CECI][r] OU [r].\n\n[r]: /r\n");
    srv_doc_free(d);
    d = parse(SRV_DOC_MARKDOWN, "> Line one  \n> line two\\\n> three.\n");
    assert_string_equal(srv_doc_unit(d, 0), "Line one line two three.");
    set_linked(d, 0, "LINE ONE LINE TWO THREE.");
    rendered_is(d, "> LINE ONE  \n> LINE TWO\\\n> THREE.\n");    /* hard breaks with the next line's markers */
    srv_doc_free(d);
}

static void md_sniff_and_refuse(void **state)
{
    (void)state;
    const char *md = "# Title\n\nSome text with a [link](http://x).\n";
    assert_int_equal(srv_doc_sniff(md, strlen(md), "notes.md"), SRV_DOC_MARKDOWN);
    assert_int_equal(srv_doc_sniff(md, strlen(md), "NOTES.MARKDOWN"), SRV_DOC_MARKDOWN);
    assert_int_equal(srv_doc_sniff(md, strlen(md), NULL), SRV_DOC_MARKDOWN);
    assert_int_equal(srv_doc_sniff(md, strlen(md), "notes.txt"), SRV_DOC_TXT);    /* a .txt is text */
    const char *prose = "# not a heading, a shell comment\nThe garden is green.\n\nThe house is small.\n";
    assert_int_equal(srv_doc_sniff(prose, strlen(prose), NULL), SRV_DOC_TXT);
    const char *plain = "The garden is green.\nThe house is *small*.\n";
    assert_int_equal(srv_doc_sniff(plain, strlen(plain), "upload"), SRV_DOC_TXT);
    assert_int_equal(srv_doc_sniff(plain, strlen(plain), "upload.md"), SRV_DOC_MARKDOWN);
    refused(SRV_DOC_MARKDOWN, "a\0b", 3, MT_ERR_INPUT, "NUL");
    refused(SRV_DOC_MARKDOWN, "caf\xe9\n", 5, MT_ERR_INPUT, "UTF-8");
    const char *deep = "*a **b *c **d *e **f *g **h *i **j k** l* m** n* o** p* q** r* s** t*\n";
    refused(SRV_DOC_MARKDOWN, deep, strlen(deep), MT_ERR_TOO_LONG, "nested deeper than 8");
    char big[200];
    memset(big, 'a', sizeof big);
    for (size_t i = 5; i < sizeof big; i += 6)
        big[i] = ' ';
    big[sizeof big - 1] = 0;
    refused(SRV_DOC_MARKDOWN, big, strlen(big), MT_ERR_TOO_LONG, "max_unit_bytes");
}

/* ---- XLIFF ------------------------------------------------------------------------------------ */

static void xliff12(void **state)
{
    (void)state;
    size_t len;
    char *x = slurp("tests/fixtures/xliff/messages.en-fr.xlf", &len);
    assert_int_equal(srv_doc_sniff(x, len, "messages.en-fr.xlf"), SRV_DOC_XLIFF);
    assert_int_equal(srv_doc_sniff(x, len, "upload"), SRV_DOC_XLIFF);
    srv_doc *d = parse(SRV_DOC_XLIFF, x);
    const char *want[] = { "Welcome to the garden.", "Hello friend, you have new messages.",
                           "Your cart holds items.", "The file %s was not found.", "See for help & support." };
    assert_int_equal(srv_doc_units(d), 5);          /* not the reviewed target, not translate="no" */
    for (int i = 0; i < 5; i++)
        assert_string_equal(srv_doc_unit(d, i), want[i]);
    char *out = render(d);
    assert_string_equal(out, x);                    /* nothing set: the same bytes, no target-language set */
    free(out);
    srv_doc_target(d, "fr");
    set_linked(d, 0, "Bienvenue au jardin.");
    set_linked(d, 1, "Bonjour ami, vous avez nouveaux messages.");
    set_linked(d, 2, "Votre panier contient articles.");
    set_linked(d, 4, "Voir pour aide & support.");
    out = render(d);
    const char *made[] = {
        "<file source-language=\"en\" target-language=\"fr\" datatype",
        "        <source>Welcome to the garden.</source>\n"
        "        <target state=\"needs-review-translation\">Bienvenue au jardin.</target>\n"
        "        <note from=\"developer\">",
        "<target state=\"needs-review-translation\">Bonjour <g id=\"1\" ctype=\"bold\">ami</g>, vous avez "
        "<x id=\"2\" equiv-text=\"%count%\"/> nouveaux messages.</target>",
        "<target state=\"needs-review-translation\">Votre panier contient <ph id=\"1\">{{ count }}</ph> articles.</target>",
        "<target state=\"final\">La maison est petite.</target>",
        "<source>Acme Garden Tools</source>\n      </trans-unit>",
        "<source>The file <bpt id=\"1\">&lt;b&gt;</bpt>%s<ept id=\"1\">&lt;/b&gt;</ept> was not found.</source>\n"
        "        </trans-unit>",
        "<target state=\"needs-review-translation\">Voir <mrk mtype=\"protected\">https://example.com/help</mrk> "
        "pour aide &amp; support.</target>" };
    for (size_t k = 0; k < sizeof made / sizeof made[0]; k++)
        if (!strstr(out, made[k]))
            fail_msg("'%s' not in:\n%s", made[k], (fprintf(stderr, "%s\n", out), ""));
    free(out);
    srv_doc_free(d);
    free(x);
}

/* srv_doc_options.overwrite: a target that holds text is kept without it,
 * translated again with it (1.2: its state "needs-review-translation"; 2.x:
 * the segment's "translated"); translate="no" is kept either way. */
static void xliff_overwrite(void **state)
{
    (void)state;
    const char *files[] = { "tests/fixtures/xliff/messages.en-fr.xlf", "tests/fixtures/xliff/app.en-fr.xlf" };
    const char *kept[] = { "<target state=\"final\">La maison est petite.</target>",
                           "<segment state=\"final\">\n        <source>The house is small.</source>\n"
                           "        <target>La maison est petite.</target>" };
    const char *redone[] = { "<source>The house is small.</source>\n"
                             "        <target state=\"needs-review-translation\">Le logis est petit.</target>",
                             "<segment state=\"translated\">\n        <source>The house is small.</source>\n"
                             "        <target>Le logis est petit.</target>" };
    for (int f = 0; f < 2; f++) {
        size_t len;
        char *x = slurp(files[f], &len);
        srv_doc_options opt = srv_doc_default_options();
        assert_int_equal(opt.overwrite, 0);
        for (int ow = 0; ow < 2; ow++) {
            opt.overwrite = ow;
            srv_doc *d = NULL;
            mt_err err = { 0 };
            assert_int_equal(srv_doc_parse_opt(SRV_DOC_XLIFF, x, len, NULL, &opt, &d, &err), MT_OK);
            int house = -1;
            for (int i = 0; i < srv_doc_units(d); i++) {
                assert_string_not_equal(srv_doc_unit(d, i), "Acme Garden Tools");     /* translate="no" */
                if (!strcmp(srv_doc_unit(d, i), "The house is small."))
                    house = i;
            }
            assert_int_equal(srv_doc_units(d), (f ? 4 : 5) + ow);
            assert_true(ow ? house >= 0 : house < 0);
            for (int i = 0; i < srv_doc_units(d); i++)
                set_linked(d, i, i == house ? "Le logis est petit." : srv_doc_unit(d, i));
            char *out = render(d);
            if (!strstr(out, ow ? redone[f] : kept[f]))
                fail_msg("overwrite=%d: '%s' not in:\n%s", ow, ow ? redone[f] : kept[f], out);
            assert_null(strstr(out, ow ? "La maison est petite." : "Le logis est petit."));
            free(out);
            srv_doc_free(d);
        }
        free(x);
    }
}

static void xliff20(void **state)
{
    (void)state;
    size_t len;
    char *x = slurp("tests/fixtures/xliff/app.en-fr.xlf", &len);
    assert_int_equal(srv_doc_sniff(x, len, "app.xliff"), SRV_DOC_XLIFF);
    srv_doc *d = parse(SRV_DOC_XLIFF, x);
    const char *want[] = { "The garden is green.", "Water the plants every morning.", "Click to save, then close the window.",
                           "You have {count} new messages from %s." };
    assert_int_equal(srv_doc_units(d), 4);
    for (int i = 0; i < 4; i++)
        assert_string_equal(srv_doc_unit(d, i), want[i]);
    srv_doc_target(d, "fr");
    set_linked(d, 0, "Le jardin est vert.");
    set_linked(d, 1, "Arrosez les plantes chaque matin.");
    set_linked(d, 2, "Cliquez pour enregistrer, puis fermez la fenêtre.");
    char *out = render(d);
    const char *made[] = {
        "<xliff xmlns=\"urn:oasis:names:tc:xliff:document:2.0\" version=\"2.0\" srcLang=\"en\" trgLang=\"fr\">",
        "      <segment state=\"translated\">\n        <source>The <mrk id=\"m1\" translate=\"no\">Acme</mrk> garden is "
        "green.</source>\n        <target>",
        "<mrk id=\"m1\" translate=\"no\">Acme</mrk>",
        "<segment id=\"s1\" state=\"translated\">", "<pc id=\"1\" dataRefStart=\"d1\" dataRefEnd=\"d2\">",
        "<ph id=\"2\" dataRef=\"d3\"/>", "<sc id=\"3\" dataRef=\"d1\"/>", "<ec startRef=\"3\" dataRef=\"d2\"/>",
        "<segment state=\"final\">\n        <source>The house is small.</source>\n        <target>La maison est petite.</target>",
        "<unit id=\"sku\" translate=\"no\">\n      <segment>\n        <source>SKU-2048 Garden Hose</source>\n      </segment>",
        "      <segment>\n        <source>You have {count} new messages from %s.</source>\n      </segment>",
        "<note category=\"context\">Strings of the garden app</note>" };
    for (size_t k = 0; k < sizeof made / sizeof made[0]; k++)
        if (!strstr(out, made[k]))
            fail_msg("'%s' not in:\n%s", made[k], (fprintf(stderr, "%s\n", out), ""));
    /* each <pc>, <ph/>, <sc/>, <ec/> of the source exactly once in its target */
    const char *t = strstr(out, "<target>Arrosez");
    assert_non_null(t);
    assert_non_null(strstr(t, "<pc id=\"1\""));
    free(out);
    srv_doc_free(d);
    free(x);
}

static void xliff_refused(void **state)
{
    (void)state;
    const char *bad = "<?xml version=\"1.0\"?>\n<xliff version=\"1.2\">\n<file><body><trans-unit id=\"1\"><source>a</target>"
                      "</trans-unit></body></file></xliff>";
    refused(SRV_DOC_XLIFF, bad, strlen(bad), MT_ERR_INPUT, "line 3");
    const char *other = "<?xml version=\"1.0\"?><resources/>";
    refused(SRV_DOC_XLIFF, other, strlen(other), MT_ERR_INPUT, "<resources>");
    const char *dtd = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"aaaa\">]><xliff version=\"1.2\"/>";
    refused(SRV_DOC_XLIFF, dtd, strlen(dtd), MT_ERR_INPUT, "DOCTYPE");
    const char *deep = "<xliff version=\"2.0\"><file><unit><segment><source><pc><pc><pc><pc><pc>a</pc></pc></pc></pc></pc>"
                       "</source></segment></unit></file></xliff>";
    refused(SRV_DOC_XLIFF, deep, strlen(deep), MT_ERR_TOO_LONG, "8");
    const char *xml = "<?xml version=\"1.0\"?><catalog><item>a</item></catalog>";
    assert_int_equal(srv_doc_sniff(xml, strlen(xml), "c.xlf"), SRV_DOC_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(md_spec_examples),
        cmocka_unit_test(md_readme_units),
        cmocka_unit_test(md_escapes),
        cmocka_unit_test(md_inline_placed),
        cmocka_unit_test(md_sniff_and_refuse),
        cmocka_unit_test(xliff12),
        cmocka_unit_test(xliff20),
        cmocka_unit_test(xliff_overwrite),
        cmocka_unit_test(xliff_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
