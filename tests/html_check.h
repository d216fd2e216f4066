/* html_check.h: what tests/test_html.c and tests/fuzz/fuzz_html.c check of
 * server/markup/html.c, header-only (static functions).
 *
 *   html_fake_translate   a translation of every unit without a model: its
 *                         words in an order a seed picks, each word linked to
 *                         itself, some links dropped or doubled
 *   html_shape            the element tree as a browser parses it (gumbo, and
 *                         html_parse_page's fix of its old fragment rule): one line per
 *                         element, "depth tag" in document order
 *   html_text             the text content, HTML whitespace runs made one space
 */
#ifndef HTML_CHECK_H
#define HTML_CHECK_H

#include <gumbo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_translate.h"
#include "markup/html.h"
#include "util/strbuf.h"

/* Unit i of h translated (fake_translate.h's modes).  Returns 0, or -1 when srv_html_set failed. */
static int html_fake_translate(srv_html *h, int i, int mode, uint64_t seed, mt_sbuf *scratch)
{
    const long *links;
    int nl = fake_translation(srv_html_unit(h, i), i, mode, seed, scratch, &links);
    mt_err err = { 0 };
    return srv_html_set(h, i, scratch->p ? scratch->p : "", scratch->n, links, nl, &err) == MT_OK ? 0 : -1;
}

/* Parsed as html.c parses: a document when it starts with a doctype, <html>, <head> or <body>. */
static int html_is_document(const char *s, size_t n)
{
    size_t i = 0;
    for (;;) {
        while (i < n && html_ws((unsigned char)s[i]))
            i++;
        if (n - i >= 4 && !memcmp(s + i, "<!--", 4)) {
            const char *e = memmem(s + i + 4, n - i - 4, "-->", 3);
            if (!e)
                return 0;
            i = (size_t)(e - s) + 3;
            continue;
        }
        break;
    }
    static const char *const starts[] = { "<!doctype", "<html", "<head", "<body" };
    for (size_t k = 0; k < 4; k++) {
        size_t m = strlen(starts[k]);
        if (n - i > m && !strncasecmp(s + i, starts[k], m) &&
            (k == 0 || html_ws((unsigned char)s[i + m]) || s[i + m] == '/' || s[i + m] == '>'))
            return 1;
    }
    return 0;
}

/* gumbo with zeroed allocations, as server/markup/html.c's arena: gumbo 0.10.1
 * reads memory it allocated and never wrote (valgrind: a conditional jump on it
 * in a plain <table>). */
static void *html_calloc(void *ud, size_t n) { (void)ud; return calloc(1, n ? n : 1); }
static void html_free(void *ud, void *p) { (void)ud; free(p); }
static inline GumboOptions html_gumbo_options(void)
{
    GumboOptions o = kGumboDefaultOptions;
    o.allocator = html_calloc;
    o.deallocator = html_free;
    return o;
}

/* HTML elements that end svg or math content (the HTML standard's list for a
 * start tag "in foreign content"), restated from the standard for the check. */
static int html_breaks_out(GumboTag t)
{
    static const GumboTag tags[] = {
        GUMBO_TAG_B, GUMBO_TAG_BIG, GUMBO_TAG_BLOCKQUOTE, GUMBO_TAG_BODY, GUMBO_TAG_BR, GUMBO_TAG_CENTER,
        GUMBO_TAG_CODE, GUMBO_TAG_DD, GUMBO_TAG_DIV, GUMBO_TAG_DL, GUMBO_TAG_DT, GUMBO_TAG_EM, GUMBO_TAG_EMBED,
        GUMBO_TAG_H1, GUMBO_TAG_H2, GUMBO_TAG_H3, GUMBO_TAG_H4, GUMBO_TAG_H5, GUMBO_TAG_H6, GUMBO_TAG_HEAD,
        GUMBO_TAG_HR, GUMBO_TAG_I, GUMBO_TAG_IMG, GUMBO_TAG_LI, GUMBO_TAG_LISTING, GUMBO_TAG_MENU, GUMBO_TAG_META,
        GUMBO_TAG_NOBR, GUMBO_TAG_OL, GUMBO_TAG_P, GUMBO_TAG_PRE, GUMBO_TAG_RUBY, GUMBO_TAG_S, GUMBO_TAG_SMALL,
        GUMBO_TAG_SPAN, GUMBO_TAG_STRONG, GUMBO_TAG_STRIKE, GUMBO_TAG_SUB, GUMBO_TAG_SUP, GUMBO_TAG_TABLE,
        GUMBO_TAG_TT, GUMBO_TAG_U, GUMBO_TAG_UL, GUMBO_TAG_VAR,
    };
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (tags[i] == t)
            return 1;
    return 0;
}

static int html_foreign_html(const GumboNode *n, int depth)
{
    if (n->type != GUMBO_NODE_ELEMENT && n->type != GUMBO_NODE_TEMPLATE && n->type != GUMBO_NODE_DOCUMENT)
        return 0;
    if (n->type == GUMBO_NODE_ELEMENT && n->v.element.tag_namespace != GUMBO_NAMESPACE_HTML &&
        html_breaks_out(n->v.element.tag))
        return 1;
    const GumboVector *ch = n->type == GUMBO_NODE_DOCUMENT ? &n->v.document.children : &n->v.element.children;
    for (unsigned i = 0; depth < 4096 && i < ch->length; i++)
        if (html_foreign_html(ch->data[i], depth + 1))
            return 1;
    return 0;
}

/* s parsed as a browser reads a page or a body's content: a document when it
 * starts like one, else a fragment of <body>; and, when gumbo 0.10.1's
 * fragment parser (the standard of its day) left an HTML element inside svg
 * or math, as "<body>" + s, the standard's answer since.  *top: the node whose
 * children are the page's (the document, the fragment's, or that body);
 * *copy (free it after the output) holds the "<body>" + s text. */
static GumboOutput *html_parse_page(const GumboOptions *o0, const char *s, size_t n, const GumboNode **top,
                                    char **copy)
{
    GumboOptions o = *o0;
    *copy = NULL;
    int doc = html_is_document(s, n);
    if (!doc)
        o.fragment_context = GUMBO_TAG_BODY;
    GumboOutput *g = gumbo_parse_with_options(&o, s, n);
    *top = g ? g->document : NULL;
    if (!g || doc || !html_foreign_html(g->document, 0))
        return g;
    gumbo_destroy_output(&o, g);
    if (!(*copy = malloc(n + 6)))
        return NULL;
    memcpy(*copy, "<body>", 6);
    memcpy(*copy + 6, s, n);
    o.fragment_context = GUMBO_TAG_LAST;
    g = gumbo_parse_with_options(&o, *copy, n + 6);
    const GumboVector *ch = g ? &g->root->v.element.children : NULL;
    for (unsigned i = 0; ch && i < ch->length; i++) {
        const GumboNode *b = ch->data[i];
        if (b->type == GUMBO_NODE_ELEMENT && b->v.element.tag == GUMBO_TAG_BODY)
            *top = b;
    }
    return g;
}

static void html_shape_node(const GumboNode *n, int depth, mt_sbuf *out)
{
    char line[160];
    if (n->type == GUMBO_NODE_ELEMENT || n->type == GUMBO_NODE_TEMPLATE) {
        const GumboElement *e = &n->v.element;
        GumboStringPiece name = e->original_tag;
        const char *norm = gumbo_normalized_tagname(e->tag);
        if (e->tag == GUMBO_TAG_UNKNOWN && name.length)
            gumbo_tag_from_original_text(&name);
        int k = snprintf(line, sizeof line, "%d %.*s\n", depth, norm[0] ? (int)strlen(norm) : (int)name.length,
                         norm[0] ? norm : name.data);
        mt_sb_add(out, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
        for (unsigned i = 0; i < e->children.length; i++)
            html_shape_node(e->children.data[i], depth + 1, out);
    } else if (n->type == GUMBO_NODE_DOCUMENT) {
        for (unsigned i = 0; i < n->v.document.children.length; i++)
            html_shape_node(n->v.document.children.data[i], depth + 1, out);
    }
}

/* The element tree of s[0..n), malloc'd ("" when gumbo gave none). */
static char *html_shape(const char *s, size_t n)
{
    GumboOptions o = html_gumbo_options();
    if (n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))          /* as a browser decodes */
        s += 3, n -= 3;
    const GumboNode *top;
    char *copy;
    GumboOutput *g = html_parse_page(&o, s, n, &top, &copy);
    mt_sbuf out = { 0 };
    mt_sb_add(&out, "", 0);
    if (g && top->type == GUMBO_NODE_DOCUMENT) {
        html_shape_node(top, 0, &out);
    } else if (g) {                     /* a fragment's body: its children as a fragment's */
        mt_sb_add(&out, "1 html\n", 7);
        for (unsigned i = 0; i < top->v.element.children.length; i++)
            html_shape_node(top->v.element.children.data[i], 2, &out);
    }
    if (g)
        gumbo_destroy_output(&o, g);
    free(copy);
    return out.p;
}

/* Elements inside a sentence (html.c's inline and opaque ones): every other
 * element separates the text before it from the text after it. */
static int html_in_sentence(GumboTag t)
{
    static const GumboTag tags[] = {
        GUMBO_TAG_A, GUMBO_TAG_ABBR, GUMBO_TAG_ACRONYM, GUMBO_TAG_B, GUMBO_TAG_BDI, GUMBO_TAG_BDO, GUMBO_TAG_BIG,
        GUMBO_TAG_CITE, GUMBO_TAG_CODE, GUMBO_TAG_DATA, GUMBO_TAG_DEL, GUMBO_TAG_DFN, GUMBO_TAG_EM, GUMBO_TAG_FONT,
        GUMBO_TAG_I, GUMBO_TAG_INS, GUMBO_TAG_KBD, GUMBO_TAG_LABEL, GUMBO_TAG_MARK, GUMBO_TAG_NOBR, GUMBO_TAG_Q,
        GUMBO_TAG_RB, GUMBO_TAG_RP, GUMBO_TAG_RT, GUMBO_TAG_RTC, GUMBO_TAG_RUBY, GUMBO_TAG_S, GUMBO_TAG_SAMP,
        GUMBO_TAG_SMALL, GUMBO_TAG_SPAN, GUMBO_TAG_STRIKE, GUMBO_TAG_STRONG, GUMBO_TAG_SUB, GUMBO_TAG_SUP,
        GUMBO_TAG_TIME, GUMBO_TAG_TT, GUMBO_TAG_U, GUMBO_TAG_VAR, GUMBO_TAG_BLINK,
        GUMBO_TAG_SCRIPT, GUMBO_TAG_STYLE, GUMBO_TAG_TEMPLATE, GUMBO_TAG_TEXTAREA, GUMBO_TAG_SVG, GUMBO_TAG_MATH,
        GUMBO_TAG_IMG, GUMBO_TAG_WBR, GUMBO_TAG_INPUT, GUMBO_TAG_SELECT, GUMBO_TAG_IFRAME, GUMBO_TAG_EMBED,
        GUMBO_TAG_OBJECT, GUMBO_TAG_AUDIO, GUMBO_TAG_VIDEO, GUMBO_TAG_CANVAS, GUMBO_TAG_KEYGEN, GUMBO_TAG_METER,
        GUMBO_TAG_PROGRESS, GUMBO_TAG_NOSCRIPT, GUMBO_TAG_XMP, GUMBO_TAG_NOEMBED, GUMBO_TAG_NOFRAMES,
        GUMBO_TAG_PLAINTEXT, GUMBO_TAG_UNKNOWN,
    };
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (tags[i] == t)
            return 1;
    return 0;
}

static void html_text_node(const GumboNode *n, mt_sbuf *out)
{
    if (n->type == GUMBO_NODE_TEXT || n->type == GUMBO_NODE_WHITESPACE || n->type == GUMBO_NODE_CDATA) {
        mt_sb_add(out, n->v.text.text, strlen(n->v.text.text));
        return;
    }
    const GumboVector *ch = n->type == GUMBO_NODE_DOCUMENT ? &n->v.document.children
                          : n->type == GUMBO_NODE_COMMENT ? NULL : &n->v.element.children;
    int sep = n->type == GUMBO_NODE_ELEMENT && !html_in_sentence(n->v.element.tag);
    if (sep)
        mt_sb_add(out, " ", 1);
    for (unsigned i = 0; ch && i < ch->length; i++)
        html_text_node(ch->data[i], out);
    if (sep)
        mt_sb_add(out, " ", 1);
}

static int html_repaired_node(const GumboNode *n)
{
    enum { REPAIRS = GUMBO_INSERTION_ADOPTION_AGENCY_CLONED | GUMBO_INSERTION_ADOPTION_AGENCY_MOVED |
                     GUMBO_INSERTION_RECONSTRUCTED_FORMATTING_ELEMENT | GUMBO_INSERTION_FOSTER_PARENTED };
    if (n->parse_flags & REPAIRS)
        return 1;
    if ((n->type == GUMBO_NODE_ELEMENT || n->type == GUMBO_NODE_TEMPLATE) &&
        n->v.element.tag_namespace != GUMBO_NAMESPACE_HTML)
        return 1;
    const GumboVector *ch = n->type == GUMBO_NODE_DOCUMENT ? &n->v.document.children
                          : (n->type == GUMBO_NODE_ELEMENT || n->type == GUMBO_NODE_TEMPLATE) ? &n->v.element.children
                          : NULL;
    for (unsigned i = 0; ch && i < ch->length; i++)
        if (html_repaired_node(ch->data[i]))
            return 1;
    return 0;
}

/* 1 when s is not well-formed HTML (gumbo reports a parse error) or the parser
 * rebuilt its tree (misnested formatting elements cloned or moved, content
 * foster-parented out of a table, svg/math content): HTML's serialization
 * does not round-trip every such tree (the HTML standard says so of its own
 * serializer).  Well-formed pages must come back with exactly their tree. */
static inline int html_repaired(const char *s, size_t n)
{
    GumboOptions o = html_gumbo_options();
    if (n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
        s += 3, n -= 3;
    if (!html_is_document(s, n))
        o.fragment_context = GUMBO_TAG_BODY;
    GumboOutput *g = gumbo_parse_with_options(&o, s, n);
    int r = g && (g->errors.length > 0 || html_repaired_node(g->document));
    if (g)
        gumbo_destroy_output(&o, g);
    return r;
}

/* s[0..n) case-insensitively holds lit at i. */
static int html_at(const char *s, size_t n, size_t i, const char *lit)
{
    size_t k = strlen(lit);
    return i + k <= n && !strncasecmp(s + i, lit, k);
}

/* 1 when the page ends inside a script whose text went into the tokenizer's
 * escaped states: its last "<script" has no "</script" after it, and a "<!--"
 * follows it.  Whatever is written after such a script is its text (after
 * "<!--" and "<script", even "</script>" is), so a tree in which nodes follow
 * it (foster parenting moved it before a table) serializes, by us or a
 * browser's innerHTML, into a page that does not parse back the same: HTML's
 * own known exception to round trips. */
static inline int html_eof_escaped_script(const char *s, size_t n)
{
    size_t last = n;
    for (size_t i = 0; i < n; i++)
        if (html_at(s, n, i, "<script") && (i + 7 == n || strchr(" \t\n\f\r/>", s[i + 7])))
            last = i;
    if (last == n)
        return 0;
    int comment = 0;
    for (size_t i = last + 7; i < n; i++) {
        if (html_at(s, n, i, "</script"))
            return 0;
        comment |= html_at(s, n, i, "<!--");
    }
    return comment;
}

/* The text content of s[0..n), whitespace runs made one space, trimmed. */
static char *html_text(const char *s, size_t n)
{
    GumboOptions o = html_gumbo_options();      /* a byte order mark counts as text here */
    const GumboNode *top;
    char *copy;
    GumboOutput *g = html_parse_page(&o, s, n, &top, &copy);
    mt_sbuf raw = { 0 }, out = { 0 };
    mt_sb_add(&raw, "", 0);
    mt_sb_add(&out, "", 0);
    if (g) {
        html_text_node(top, &raw);
        gumbo_destroy_output(&o, g);
    }
    free(copy);
    int space = 0;
    for (size_t i = 0; i < raw.n; i++) {
        if (html_ws((unsigned char)raw.p[i])) {
            space = out.n > 0;
            continue;
        }
        if (space)
            mt_sb_add(&out, " ", 1);
        space = 0;
        mt_sb_add(&out, raw.p + i, 1);
    }
    free(raw.p);
    return out.p;
}

#endif
