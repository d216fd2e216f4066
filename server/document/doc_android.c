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
 * of doc_xml.c read for positions only: every byte that is not a translated
 * value is the file's own.
 *
 * A value with inline markup (<b>, <i>, <u>, <xliff:g>, <a>) or made of
 * text and CDATA mixed is kept as it is, untranslated: its tags cannot be
 * placed yet (see README.md).  A comment inside a value goes with its
 * translation.
 * Malformed XML is MT_ERR_INPUT with expat's line; a root other than
 * <resources> too; nesting deeper than max_depth MT_ERR_TOO_LONG.
 */
#include <stdlib.h>
#include <string.h>

#include "doc_format.h"
#include "doc_res.h"
#include "doc_xml.h"

typedef struct {
    srv_res          *r;
    const srv_xml_doc *x;
    srv_res_buf       xml;      /* a text node's characters, references decoded */
    srv_res_buf       v;        /* the value as aapt reads it */
    size_t            vend;     /* the source offset past its last character (a closing quote after it stays) */
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

/* The value of el (a <string> or an <item>): its text nodes, all text or
 * all CDATA (a comment may have cut the text in two; a translation holding
 * "]]>" is written as two sections). */
static mt_status value(droid *a, const srv_xml_node *el, const char *src, mt_err *err)
{
    int cdata = -1, c;
    size_t end = 0;
    a->xml.b.n = 0;
    for (const srv_xml_node *t = el->children; t; t = t->next) {
        if (t->type != SRV_XML_TEXT)
            return MT_OK;               /* markup inside: kept as it is (not yet) */
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
    return srv_res_value(a->r, &a->v, a->vend, cdata ? SRV_RES_CDATA : SRV_RES_ANDROID, 0, el->start, err);
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

static mt_status android_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                               void **state, mt_err *err)
{
    droid a = { 0 };
    srv_xml_doc *x = NULL;
    mt_status st = srv_res_new(data, len, lim, &a.r, err);
    if (st != MT_OK)
        return st;
    if ((st = srv_xml_parse("strings.xml", data, len, lim->max_depth, &x, err)) != MT_OK)
        goto fail;
    a.r->own = x;
    a.r->own_free = xml_free;
    a.x = x;
    const srv_xml_node *root = srv_xml_root(x);
    if (!root || strcmp(root->name, "resources") || root->ns[0]) {
        st = mt_err_set(err, MT_ERR_INPUT, "not Android string resources: the root element is <%.40s>, not <resources>",
                        root ? root->name : "");
        goto fail;
    }
    if ((st = walk(&a, root, data, err)) != MT_OK)
        goto fail;
    srv_res_buf_free(&a.xml);
    srv_res_buf_free(&a.v);
    *state = a.r;
    return MT_OK;
fail:
    srv_res_buf_free(&a.xml);
    srv_res_buf_free(&a.v);
    srv_res_free(a.r);
    return st;
}

const srv_doc_format srv_doc_android_format = { android_parse, srv_res_units, srv_res_unit, srv_res_set,
                                                srv_res_render, srv_res_free, NULL };
