/* doc_android: Android string resources, res/values/strings.xml (document.h,
 * format android).
 *
 * The root is <resources>; its <string> elements, the <item>s of its
 * <string-array> and <plurals> elements are units, but for those marked
 * translatable="false" (on the element or its array) and references to other
 * resources (@string/x, ?attr/x).  A value is read as aapt reads it: XML's
 * character references decoded, then Android's escapes (\' \" \\ \n \t \@ \?
 * \uXXXX), double quotes that keep the whitespace between them dropped, and
 * elsewhere each run of whitespace one space; its leading and trailing
 * whitespace stay as written.  A translation is written back escaped for
 * aapt (\' \" \\ \n \t, a leading @ or ? as \@ \?) and for XML (& < > as
 * references), or inside its CDATA section when the value was one.  The
 * XML (declaration, comments, attributes, other elements) is expat's tree
 * of markup/xml_tree.c read for positions only: every byte that is not a translated
 * value is the file's own.
 *
 * A value with markup (<b>, <i>, <u>, <a href>, <font>, <xliff:g>...) is an
 * HTML fragment for markup/html.h, as doc_po.c makes a msgid one: its text
 * read as aapt reads it and HTML-escaped, its inline elements (b i u a em
 * strong small big sub sup s strike tt span font...) as written, so that the
 * alignment places them in the translation; every other element (xliff:g,
 * annotation, an empty one) and each \n or \t an opaque <code
 * class="notranslate"> kept whole at its aligned place.  The value's content
 * is then the fragment's rendering turned back into Android text (the opaque
 * items back to their source bytes, text re-escaped).  A value made of text
 * and CDATA mixed is kept as it is.  A comment inside a value goes with its
 * translation.
 * Malformed XML is MT_ERR_INPUT with expat's line; a root other than
 * <resources> too; nesting deeper than max_depth MT_ERR_TOO_LONG.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_format.h"
#include "doc_res.h"
#include "markup/xml_tree.h"
#include "markup/html.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

/* A value with markup: its HTML fragment's units. */
typedef struct {
    srv_html *h;
    char     *frag;         /* the fragment (h reads it) */
    int       raw;          /* its content's raw span in the srv_res */
    size_t   *ops;          /* [2 * n_ops]: the source bytes of the elements kept opaque */
    int       n_ops;
    size_t    cap_ops;
} markup;

/* Unit i: the srv_res's unit k (m < 0), or unit k of markup m. */
typedef struct {
    int m, k;
} uref;

typedef struct {
    srv_res    *r;          /* the plain values, the raw spans; owns the XML tree */
    const char *src;
    markup     *m;
    int         nm;
    size_t      cap_m;
    uref       *u;
    int         nu;
    size_t      cap_u;
} adoc;

typedef struct {
    adoc             *a;
    srv_res          *r;
    const srv_xml_doc *x;
    int               max_depth;
    srv_res_buf       xml;      /* a text node's characters, references decoded */
    srv_res_buf       v;        /* the value as aapt reads it */
    size_t            vend;     /* the source offset past its last character (a closing quote after it stays) */
    int               quoted, spaced;   /* aapt's state over a markup value's text nodes */
} droid;

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* el has translatable="false". */
static int untranslatable(const droid *a, const srv_xml_node *el)
{
    size_t n;
    const char *v = srv_xml_attr(a->x, el, "translatable", &n);
    return v && n == 5 && !memcmp(v, "false", 5);
}

/* The reference &...; at s[0..n) (expat checked it): its code point, *len its bytes. */
static unsigned long reference(const char *s, size_t n, size_t *len)
{
    const char *semi = memchr(s, ';', n);
    *len = semi ? (size_t)(semi - s) + 1 : 1;
    if (!semi)
        return '&';
    static const struct { const char *name; char c; } named[] = {
        { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' }
    };
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
        if (*len == strlen(named[k].name) && !memcmp(s, named[k].name, *len))
            return (unsigned char)named[k].c;
    if (*len > 3 && s[1] == '#')
        return s[2] == 'x' ? strtoul(s + 3, NULL, 16) : strtoul(s + 2, NULL, 10);
    return '&';
}

/* Text node t's characters appended to a->xml: *cdata set for a CDATA
 * section, *end where its content ends. */
static int xml_chars(droid *a, const srv_xml_node *t, const char *src, int *cdata, size_t *end)
{
    size_t i = t->start, e = t->end;
    *cdata = e - i >= 12 && !memcmp(src + i, "<![CDATA[", 9);
    if (*cdata) {
        *end = e - 3;
        for (i += 9; i < e - 3; i++)
            if (srv_res_put(&a->xml, src + i, 1, i))
                return -1;
        return 0;
    }
    *end = e;
    while (i < e) {
        if (src[i] != '&') {
            if (srv_res_put(&a->xml, src + i, 1, i))
                return -1;
            i++;
            continue;
        }
        size_t len;
        unsigned long c = reference(src + i, e - i, &len);
        if (srv_res_put_cp(&a->xml, c, i))
            return -1;
        i += len;
    }
    return 0;
}

static int hexv(char h)
{
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

/* a->xml (the text node's content ends at end) read as aapt does into a->v,
 * a->vend past its last character: 0, or -1 out of memory. */
static int aapt_chars(droid *a, size_t end)
{
    const char *x = a->xml.b.p;
    size_t n = a->xml.b.n;
    int quoted = 0, spaced = 0;
    a->v.b.n = 0;
    a->vend = end;
    for (size_t q = 0; q < n;) {
        size_t at = a->xml.map[q], had = a->v.b.n;
        char c = x[q];
        if (c == '\\' && q + 1 < n) {
            char e = x[q + 1];
            long u = -1;
            if (e == 'u' && q + 6 <= n) {
                u = 0;
                for (int k = 2; k < 6 && u >= 0; k++)
                    u = hexv(x[q + k]) < 0 ? -1 : u << 4 | hexv(x[q + k]);
            }
            if (u > 0 && (u < 0xd800 || u >= 0xe000)) {
                q += 6;
                if (srv_res_put_cp(&a->v, (unsigned long)u, at))
                    return -1;
            } else {
                char d = e == 'n' ? '\n' : e == 't' ? '\t' : e;
                q += 2;
                if ((unsigned char)d >= 0x80)           /* a character that is not an escape: kept whole */
                    d = '\\', q -= 1;
                if (srv_res_put(&a->v, &d, 1, at))
                    return -1;
            }
            spaced = 0;
        } else if (c == '"') {
            quoted = !quoted;                           /* dropped: it only keeps whitespace */
            q++;
        } else if (!quoted && is_space(c)) {
            if (!spaced && srv_res_put(&a->v, " ", 1, at))
                return -1;
            spaced = 1;
            q++;
        } else {
            if (srv_res_put(&a->v, x + q, 1, at))
                return -1;
            spaced = 0;
            q++;
        }
        if (a->v.b.n > had)                             /* a character: its source ends where the next begins */
            a->vend = q < n ? a->xml.map[q] : end;
    }
    return 0;
}

/* ---- values with markup ------------------------------------------------------- */

static const char NL[] = "<code class=\"notranslate mtnl\"></code>", TAB[] = "<code class=\"notranslate mttab\"></code>",
                  OPQ[] = "<code class=\"notranslate mtsx\">";

/* Elements html.h carries inside a sentence (its INLINE list, as Android writes them). */
static int inline_element(const srv_xml_node *el)
{
    static const char *const names[] = { "a", "abbr", "b", "big", "cite", "del", "dfn", "em", "font", "i", "ins",
                                         "kbd", "mark", "q", "s", "samp", "small", "span", "strike", "strong",
                                         "sub", "sup", "tt", "u", "var" };
    if (el->ns[0] || el->tag_end >= el->end)
        return 0;                       /* a prefixed element (xliff:g), or an empty one */
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(el->name, names[k]))
            return 1;
    return 0;
}

/* Character c HTML-escaped onto f: 0, or -1. */
static int html_char(mt_sbuf *f, unsigned long c)
{
    if (c == '&' || c == '<' || c == '>')
        return mt_sb_add(f, c == '&' ? "&amp;" : c == '<' ? "&lt;" : "&gt;", c == '&' ? 5 : 4);
    char u[4];
    return mt_sb_add(f, u, srv_res_utf8(c, u));
}

/* Text node t, read as aapt does (p->quoted and p->spaced go on over the
 * value's nodes), onto the fragment f: 0, or -1 out of memory. */
static int frag_text(droid *p, mt_sbuf *f, const srv_xml_node *t)
{
    int cdata;
    size_t end;
    p->xml.b.n = 0;
    if (xml_chars(p, t, p->a->src, &cdata, &end))
        return -1;
    const char *x = p->xml.b.p;
    size_t n = p->xml.b.n;
    for (size_t q = 0; q < n;) {
        char c = x[q];
        int rc = 0, spaced = 0;
        if (c == '\\' && q + 1 < n) {
            char e = x[q + 1];
            long u = -1;
            if (e == 'u' && q + 6 <= n) {
                u = 0;
                for (int k = 2; k < 6 && u >= 0; k++)
                    u = hexv(x[q + k]) < 0 ? -1 : u << 4 | hexv(x[q + k]);
            }
            if (u > 0 && (u < 0xd800 || u >= 0xe000)) {
                rc = html_char(f, (unsigned long)u);
                q += 6;
            } else if (e == 'n' || e == 't') {
                rc = e == 'n' ? mt_sb_add(f, NL, sizeof NL - 1) : mt_sb_add(f, TAB, sizeof TAB - 1);
                q += 2;
            } else if ((unsigned char)e >= 0x80) {
                rc = mt_sb_add(f, "\\", 1);     /* not an escape: the backslash as it is */
                q++;
            } else {
                rc = html_char(f, (unsigned char)e);
                q += 2;
            }
        } else if (c == '"') {
            p->quoted = !p->quoted;
            spaced = p->spaced;
            q++;
        } else if (!p->quoted && is_space(c)) {
            rc = p->spaced ? 0 : mt_sb_add(f, " ", 1);
            spaced = 1;
            q++;
        } else {
            rc = (c == '&' || c == '<' || c == '>') ? html_char(f, (unsigned char)c) : mt_sb_add(f, x + q, 1);
            q++;
        }
        if (rc)
            return -1;
        p->spaced = spaced;
    }
    return 0;
}

/* Element el of a value onto the fragment: an inline one as written around
 * its content, any other kept opaque.  0, or -1 out of memory. */
static int frag_element(droid *p, markup *mk, mt_sbuf *f, const srv_xml_node *el)
{
    const char *src = p->a->src;
    if (!inline_element(el)) {
        char num[24];
        int k = snprintf(num, sizeof num, "%d</code>", mk->n_ops);
        if (MT_GROW(mk->ops, mk->cap_ops, 2 * (size_t)mk->n_ops + 2) || mt_sb_add(f, OPQ, sizeof OPQ - 1) ||
            mt_sb_add(f, num, (size_t)k))
            return -1;
        mk->ops[2 * mk->n_ops] = el->start;
        mk->ops[2 * mk->n_ops + 1] = el->end;
        mk->n_ops++;
        p->spaced = 0;
        return 0;
    }
    if (mt_sb_add(f, src + el->start, el->tag_end - el->start))
        return -1;
    for (const srv_xml_node *c = el->children; c; c = c->next)
        if (c->type == SRV_XML_TEXT ? frag_text(p, f, c) : frag_element(p, mk, f, c))
            return -1;
    return mt_sb_add(f, src + el->content_end, el->end - el->content_end);
}

static void markup_free(markup *mk)
{
    srv_html_free(mk->h);
    free(mk->frag);
    free(mk->ops);
}

/* A value with markup, el's content: its fragment's units, if any. */
static mt_status markup_value(droid *p, const srv_xml_node *el, mt_err *err)
{
    adoc *a = p->a;
    markup mk = { .raw = -1 };
    mt_sbuf f = { 0 };
    p->quoted = p->spaced = 0;
    for (const srv_xml_node *c = el->children; c; c = c->next)
        if (c->type == SRV_XML_TEXT ? frag_text(p, &f, c) : frag_element(p, &mk, &f, c))
            goto nomem;
    if (!f.p)
        return MT_OK;
    mk.frag = f.p;
    mt_status st = srv_html_parse(mk.frag, f.n, p->max_depth, &mk.h, err);
    if (st != MT_OK || !srv_html_units(mk.h)) {
        markup_free(&mk);
        return st;                      /* nothing to translate: kept as it is */
    }
    int units = srv_html_units(mk.h);
    if ((mk.raw = srv_res_raw(a->r, el->tag_end, el->content_end)) < 0 || MT_GROW(a->m, a->cap_m, (size_t)a->nm + 1) ||
        MT_GROW(a->u, a->cap_u, (size_t)a->nu + (size_t)units)) {
        markup_free(&mk);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < units; k++)
        a->u[a->nu++] = (uref){ a->nm, k };
    a->m[a->nm++] = mk;
    return MT_OK;
nomem:
    free(f.p);
    free(mk.ops);
    return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
}

/* Character c onto o escaped for Android XML text (first: the value's first). */
static int android_char(mt_sbuf *o, unsigned long c, int first)
{
    const char *e = c == '\\' ? "\\\\" : c == '\'' ? "\\'" : c == '"' ? "\\\"" : c == '&' ? "&amp;" : c == '<' ? "&lt;"
                  : c == '>' ? "&gt;" : first && c == '@' ? "\\@" : first && c == '?' ? "\\?" : NULL;
    if (e)
        return mt_sb_add(o, e, strlen(e));
    if (c < 0x20)
        return c == '\t' || c == '\n' ? mt_sb_add(o, c == '\t' ? "\\t" : "\\n", 2) : 0;
    char u[4];
    return mt_sb_add(o, u, srv_res_utf8(c, u));
}

/* The reference at h[0..n) ('&' first) of html.c's output: its character, *len its bytes. */
static unsigned long html_ref(const char *h, size_t n, size_t *len)
{
    const char *semi = memchr(h, ';', n < 12 ? n : 12);
    if (!semi) {
        *len = 1;
        return '&';
    }
    *len = (size_t)(semi - h) + 1;
    if (h[1] == '#')
        return h[2] == 'x' || h[2] == 'X' ? strtoul(h + 3, NULL, 16) : strtoul(h + 2, NULL, 10);
    static const struct { const char *n; unsigned long c; } named[] = {
        { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' }, { "&nbsp;", 0xa0 }
    };
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
        if (*len == strlen(named[k].n) && !memcmp(h, named[k].n, *len))
            return named[k].c;
    *len = 1;
    return '&';
}

/* html.c's rendering h[0..n) of markup mk back to Android text onto o: 0, or -1. */
static int unwrap(const adoc *a, const markup *mk, const char *h, size_t n, mt_sbuf *o)
{
    for (size_t i = 0; i < n;) {
        size_t len;
        if (h[i] == '<') {
            if (n - i >= sizeof NL - 1 && !memcmp(h + i, NL, sizeof NL - 1)) {
                if (mt_sb_add(o, "\\n", 2))
                    return -1;
                i += sizeof NL - 1;
                continue;
            }
            if (n - i >= sizeof TAB - 1 && !memcmp(h + i, TAB, sizeof TAB - 1)) {
                if (mt_sb_add(o, "\\t", 2))
                    return -1;
                i += sizeof TAB - 1;
                continue;
            }
            if (n - i > sizeof OPQ - 1 && !memcmp(h + i, OPQ, sizeof OPQ - 1)) {
                char *e;
                unsigned long k = strtoul(h + i + sizeof OPQ - 1, &e, 10);
                if (k < (unsigned long)mk->n_ops && (size_t)(h + n - e) >= 7 && !memcmp(e, "</code>", 7)) {
                    if (mt_sb_add(o, a->src + mk->ops[2 * k], mk->ops[2 * k + 1] - mk->ops[2 * k]))
                        return -1;
                    i = (size_t)(e - h) + 7;
                    continue;
                }
            }
            const char *gt = memchr(h + i, '>', n - i);        /* a tag as the source wrote it */
            len = gt ? (size_t)(gt - h) + 1 - i : n - i;
            if (mt_sb_add(o, h + i, len))
                return -1;
            i += len;
            continue;
        }
        uint32_t c;
        unsigned long cp = h[i] == '&' ? html_ref(h + i, n - i, &len) : (len = mt_utf8_next(h + i, n - i, &c), c);
        if (android_char(o, cp, o->n == 0))
            return -1;
        i += len;
    }
    return 0;
}

/* ---- plain values ------------------------------------------------------------------ */

/* The value of el (a <string> or an <item>): its text nodes, all text or
 * all CDATA (a comment may have cut the text in two; a translation holding
 * "]]>" is written as two sections), or markup. */
static mt_status value(droid *a, const srv_xml_node *el, const char *src, mt_err *err)
{
    int cdata = -1, c;
    size_t end = 0;
    a->xml.b.n = 0;
    for (const srv_xml_node *t = el->children; t; t = t->next)
        if (t->type != SRV_XML_TEXT)
            return markup_value(a, el, err);
    for (const srv_xml_node *t = el->children; t; t = t->next) {
        if (xml_chars(a, t, src, &c, &end))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        if (cdata >= 0 && c != cdata)
            return MT_OK;               /* text and CDATA mixed: kept as it is */
        cdata = c;
    }
    if (cdata < 0)
        return MT_OK;                   /* empty */
    size_t k = 0;
    while (k < a->xml.b.n && is_space(a->xml.b.p[k]))
        k++;
    if (k < a->xml.b.n && (a->xml.b.p[k] == '@' || a->xml.b.p[k] == '?'))
        return MT_OK;                   /* a reference to another resource */
    if (aapt_chars(a, end))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    int before = a->r->n;
    mt_status st = srv_res_value(a->r, &a->v, a->vend, cdata ? SRV_RES_CDATA : SRV_RES_ANDROID, 0, el->start, err);
    if (st == MT_OK && a->r->n > before) {
        if (MT_GROW(a->a->u, a->a->cap_u, (size_t)a->a->nu + 1))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        a->a->u[a->a->nu++] = (uref){ -1, before };
    }
    return st;
}

static mt_status walk(droid *a, const srv_xml_node *root, const char *src, mt_err *err)
{
    mt_status st = MT_OK;
    for (const srv_xml_node *el = root->children; el && st == MT_OK; el = el->next) {
        if (el->type != SRV_XML_ELEMENT || el->ns[0] || untranslatable(a, el))
            continue;
        if (!strcmp(el->name, "string")) {
            st = value(a, el, src, err);
        } else if (!strcmp(el->name, "string-array") || !strcmp(el->name, "plurals")) {
            for (const srv_xml_node *it = el->children; it && st == MT_OK; it = it->next)
                if (it->type == SRV_XML_ELEMENT && !strcmp(it->name, "item") && !untranslatable(a, it))
                    st = value(a, it, src, err);
        }
    }
    return st;
}

static void xml_free(void *x) { srv_xml_free(x); }

static void a_free(void *state)
{
    adoc *a = state;
    if (!a)
        return;
    for (int i = 0; i < a->nm; i++)
        markup_free(&a->m[i]);
    free(a->m);
    free(a->u);
    srv_res_free(a->r);
    free(a);
}

static mt_status android_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                               const srv_doc_options *opt, void **state, mt_err *err)
{
    droid p = { .max_depth = lim->max_depth };
    srv_xml_doc *x = NULL;
    adoc *a = calloc(1, sizeof *a);
    if (!a)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    a->src = data;
    p.a = a;
    mt_status st = srv_res_new(data, len, lim, &a->r, err);
    if (st != MT_OK)
        goto fail;
    p.r = a->r;
    if ((st = srv_xml_parse("strings.xml", data, len, lim->max_depth, &x, err)) != MT_OK)
        goto fail;
    a->r->own = x;
    a->r->own_free = xml_free;
    p.x = x;
    const srv_xml_node *root = srv_xml_root(x);
    if (!root || strcmp(root->name, "resources") || root->ns[0]) {
        st = mt_err_set(err, MT_ERR_INPUT, "not Android string resources: the root element is <%.40s>, not <resources>",
                        root ? root->name : "");
        goto fail;
    }
    if ((st = walk(&p, root, data, err)) != MT_OK)
        goto fail;
    srv_res_buf_free(&p.xml);
    srv_res_buf_free(&p.v);
    *state = a;
    return MT_OK;
fail:
    srv_res_buf_free(&p.xml);
    srv_res_buf_free(&p.v);
    a_free(a);
    return st;
}

static int a_units(const void *state) { return ((const adoc *)state)->nu; }

static const char *a_unit(const void *state, int i)
{
    const adoc *a = state;
    uref u = a->u[i];
    return u.m < 0 ? srv_res_unit(a->r, u.k) : srv_html_unit(a->m[u.m].h, u.k);
}

static mt_status a_set(void *state, int i, const char *text, size_t len, const long *links, int n_links, mt_err *err)
{
    adoc *a = state;
    uref u = a->u[i];
    if (u.m < 0)
        return srv_res_set(a->r, u.k, text, len, links, n_links, err);
    markup *mk = &a->m[u.m];
    mt_status st = srv_html_set(mk->h, u.k, text, len, links, n_links, err);
    char *h = NULL;
    size_t hn;
    if (st != MT_OK || (st = srv_html_render(mk->h, &h, &hn, err)) != MT_OK)
        return st;
    mt_sbuf o = { 0 };                  /* the content again, from the fragment's rendering */
    int rc = unwrap(a, mk, h, hn, &o) || srv_res_raw_set(a->r, mk->raw, o.p ? o.p : "", o.n);
    free(h);
    free(o.p);
    return rc ? mt_err_set(err, MT_ERR_NOMEM, "out of memory") : MT_OK;
}

static mt_status a_render(const void *state, char **out, size_t *len, mt_err *err)
{
    return srv_res_render(((const adoc *)state)->r, out, len, err);
}

const srv_doc_format srv_doc_android_format = { android_parse, a_units, a_unit, a_set, a_render, a_free, NULL };
