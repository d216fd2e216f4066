/* doc_epub: EPUB 2 and 3 (document.h), on the parts of doc_parts.h.
 *
 * Reading: META-INF/container.xml names the package (its first rootfile of
 * media type application/oebps-package+xml); the package's manifest and
 * spine name the documents.  Parts translated, in this order:
 *   the package (SRV_PART_OPF): dc:title and dc:description; dc:language set
 *       to the target (srv_doc_target)
 *   the spine's XHTML documents, in reading order, then the EPUB 3
 *       navigation document (manifest item with properties "nav") when it is
 *       not in the spine (SRV_PART_XHTML: markup/html.h's units); the root's
 *       lang and xml:lang, where it has them, set to the target too
 *   the EPUB 2 table of contents (the spine's toc, or the manifest's
 *       application/x-dtbncx+xml item; SRV_PART_NCX): docTitle and navLabel
 *       texts
 * Every other entry (images, CSS, fonts, "mimetype" first and stored) is
 * copied as its own compressed bytes (doc_zip.h).
 *
 * XHTML through the HTML path.  The document must be well-formed XML (expat,
 * markup/xml_tree.h: a DOCTYPE that declares nothing is allowed, one with an
 * internal subset refused, as entities would be).  A document whose DOCTYPE
 * names the XHTML DTD (EPUB 2's) may use that DTD's entities: &nbsp;,
 * &eacute;, &mdash; and the rest of its Latin-1 and punctuation sets are read
 * as the characters they stand for (xhtml_entities); any other is refused.  The HTML parser is given
 * the root element on; the bytes before it (XML declaration, DOCTYPE,
 * comments) are written back as they were.  What XML allows and HTML reads
 * otherwise: an empty-element tag of a non-void element (<a id="p1"/>,
 * <script src="x"/>), which HTML takes for a start tag holding everything
 * after it, is given to the HTML parser as a start and an end tag (the
 * output has those).  The output is parsed again as XML before it is
 * returned: a document the HTML path could not write back as XML is an
 * error naming it, never a broken book.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_parts.h"
#include "markup/html.h"
#include "markup/xml_tree.h"
#include "text/printable.h"
#include "util/strbuf.h"

static const char XHTML_NS[] = "http://www.w3.org/1999/xhtml";
static const char OPF_NS[] = "http://www.idpf.org/2007/opf";
static const char CONTAINER_NS[] = "urn:oasis:names:tc:opendocument:xmlns:container";

/* ---- DOCTYPE ---------------------------------------------------------------- */

static size_t skip_to(const char *x, size_t len, size_t i, const char *end)
{
    const char *e = memmem(x + i, len - i, end, strlen(end));
    return e ? (size_t)(e - x) + strlen(end) : len;
}

int srv_xml_mask_doctype(char *xml, size_t len, size_t *at, char **saved)
{
    *saved = NULL;
    *at = 0;
    size_t i = len >= 3 && !memcmp(xml, "\xef\xbb\xbf", 3) ? 3 : 0;
    while (i < len) {
        if (strchr(" \t\r\n", xml[i]) && xml[i]) {
            i++;
        } else if (len - i >= 2 && !memcmp(xml + i, "<?", 2)) {
            i = skip_to(xml, len, i, "?>");
        } else if (len - i >= 4 && !memcmp(xml + i, "<!--", 4)) {
            i = skip_to(xml, len, i, "-->");
        } else {
            break;
        }
    }
    if (len - i < 9 || memcmp(xml + i, "<!DOCTYPE", 9))
        return 0;
    char q = 0;
    size_t e = i + 9;
    for (; e < len && (q || xml[e] != '>'); e++) {
        if (q && xml[e] == q)
            q = 0;
        else if (!q && (xml[e] == '"' || xml[e] == '\''))
            q = xml[e];
        else if (!q && xml[e] == '[')
            return 0;                   /* an internal subset: xml_tree refuses it */
    }
    if (e >= len)
        return 0;
    size_t n = e + 1 - i;
    if (!(*saved = malloc(n + 1)))
        return -1;
    memcpy(*saved, xml + i, n);
    (*saved)[n] = 0;
    memset(xml + i, ' ', n);
    *at = i;
    return 0;
}

/* xml[0..len) parsed with its DOCTYPE blanked out (in a copy): *doc over *copy, both the caller's. */
static mt_status parse_masked(const char *name, const char *xml, size_t len, int max_depth, char **copy,
                              srv_xml_doc **doc, mt_err *err)
{
    char *saved = NULL;
    size_t at;
    *doc = NULL;
    if (!(*copy = malloc(len + 1)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    memcpy(*copy, xml, len);
    (*copy)[len] = 0;
    if (srv_xml_mask_doctype(*copy, len, &at, &saved))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    free(saved);
    return srv_xml_parse(name, *copy, len, max_depth, doc, err);
}

/* ---- XHTML ---------------------------------------------------------------------- */

struct srv_xhtml {
    const char *name;
    const char *xml;            /* the document (own, or the part's) */
    char       *own;            /* the document with the XHTML DTD's entities resolved (xhtml_entities) */
    size_t      len, root;      /* its root element's first byte */
    char       *src;            /* what the HTML parser reads: the root on, empty non-void elements opened */
    srv_html   *h;
    int         has_lang;       /* the root has lang or xml:lang */
};

static const char *const LANG_ATTRS[] = { "lang", "xml:lang" };

static int void_element(const char *name)
{
    static const char *const V[] = { "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                                     "param", "source", "track", "wbr", "basefont", "bgsound", "frame", "keygen" };
    for (size_t i = 0; i < sizeof V / sizeof V[0]; i++)
        if (!strcmp(name, V[i]))
            return 1;
    return 0;
}

/* The source from *at up to e's end, e's "/>" written "></name>" when HTML would not end it there; e's children too. */
static int open_empty(const srv_xml_node *e, const char *xml, size_t *at, mt_sbuf *b)
{
    if (e->tag_end == e->content_end && !strcmp(e->ns, XHTML_NS) && !void_element(e->name) &&
        e->tag_end >= e->start + 3 && !memcmp(xml + e->tag_end - 2, "/>", 2)) {
        size_t q = e->start + 1, qe = q;
        while (qe < e->tag_end && !strchr(" \t\r\n/>", xml[qe]))
            qe++;
        if (mt_sb_add(b, xml + *at, e->tag_end - 2 - *at) || mt_sb_add(b, "></", 3) ||
            mt_sb_add(b, xml + q, qe - q) || mt_sb_add(b, ">", 1))
            return -1;
        *at = e->tag_end;
        return 0;
    }
    for (const srv_xml_node *c = e->children; c; c = c->next)
        if (c->type == SRV_XML_ELEMENT && open_empty(c, xml, at, b))
            return -1;
    return 0;
}

/* The document, before any translation, through the HTML writer and read
 * again as XML.  What HTML's parser rebuilds (a <div> inside a <p>, which XML
 * allows and HTML closes the <p> for) cannot be written back as the same
 * XML: refused here, with 400, rather than after the translation. */
static mt_status trial_render(const srv_xhtml *x, mt_err *err)
{
    char *out;
    size_t n;
    mt_status st = srv_xhtml_render(x, NULL, &out, &n, err);
    free(out);
    if (st == MT_ERR_INTERNAL && err)
        err->status = MT_ERR_INPUT;
    return st == MT_ERR_INTERNAL ? MT_ERR_INPUT : st;
}

void srv_xhtml_free(srv_xhtml *x)
{
    if (!x)
        return;
    srv_html_free(x->h);
    free(x->src);
    free(x->own);
    free(x);
}

/* The entities of the XHTML 1.0 and 1.1 DTDs that books use: Latin-1 (U+00A0
 * to U+00FF, in order) and the punctuation of xhtml-special and -symbol. */
static const char *const LAT1[96] = {
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf", "laquo", "not",
    "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro", "para", "middot", "cedil", "sup1",
    "ordm", "raquo", "frac14", "frac12", "frac34", "iquest", "Agrave", "Aacute", "Acirc", "Atilde", "Auml",
    "Aring", "AElig", "Ccedil", "Egrave", "Eacute", "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH",
    "Ntilde", "Ograve", "Oacute", "Ocirc", "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc",
    "Uuml", "Yacute", "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil",
    "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde", "ograve", "oacute",
    "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc", "uuml", "yacute", "thorn", "yuml" };
static const struct { const char *name; unsigned cp; } SPECIAL[] = {
    { "OElig", 338 }, { "oelig", 339 }, { "Scaron", 352 }, { "scaron", 353 }, { "Yuml", 376 }, { "fnof", 402 },
    { "circ", 710 }, { "tilde", 732 }, { "ensp", 8194 }, { "emsp", 8195 }, { "thinsp", 8201 }, { "zwnj", 8204 },
    { "zwj", 8205 }, { "lrm", 8206 }, { "rlm", 8207 }, { "ndash", 8211 }, { "mdash", 8212 }, { "lsquo", 8216 },
    { "rsquo", 8217 }, { "sbquo", 8218 }, { "ldquo", 8220 }, { "rdquo", 8221 }, { "bdquo", 8222 },
    { "dagger", 8224 }, { "Dagger", 8225 }, { "bull", 8226 }, { "hellip", 8230 }, { "permil", 8240 },
    { "prime", 8242 }, { "Prime", 8243 }, { "lsaquo", 8249 }, { "rsaquo", 8250 }, { "euro", 8364 },
    { "trade", 8482 } };

static unsigned entity_cp(const char *name, size_t n)
{
    for (unsigned k = 0; k < 96; k++)
        if (strlen(LAT1[k]) == n && !memcmp(name, LAT1[k], n))
            return 160 + k;
    for (size_t k = 0; k < sizeof SPECIAL / sizeof SPECIAL[0]; k++)
        if (strlen(SPECIAL[k].name) == n && !memcmp(name, SPECIAL[k].name, n))
            return SPECIAL[k].cp;
    return 0;
}

/* A document whose DOCTYPE names the XHTML DTD may use that DTD's entities
 * (&nbsp;, &eacute;), which expat, reading no DTD, does not know: a copy with
 * those written as character references (outside comments and CDATA) into
 * *own, or *own NULL (no such DOCTYPE, nothing to write).  0, or -1 out of
 * memory.  An entity of no table here is left, for expat to refuse. */
static int xhtml_entities(const char *xml, size_t len, char **own, size_t *own_len)
{
    *own = NULL;
    const char *root = memmem(xml, len, "<html", 5);
    if (!root || !memmem(xml, (size_t)(root - xml), "-//W3C//DTD XHTML", 17))
        return 0;
    mt_sbuf b = { 0 };
    size_t run = 0;                 /* the first byte not yet copied */
    for (size_t i = 0; i < len; i++) {
        const char *skip = len - i >= 4 && !memcmp(xml + i, "<!--", 4) ? "-->"
                         : len - i >= 9 && !memcmp(xml + i, "<![CDATA[", 9) ? "]]>" : NULL;
        if (skip) {
            i = skip_to(xml, len, i, skip) - 1;
            continue;
        }
        if (xml[i] != '&')
            continue;
        size_t e = i + 1;
        while (e < len && e - i <= 8 && isalnum((unsigned char)xml[e]))
            e++;
        unsigned cp = e < len && xml[e] == ';' ? entity_cp(xml + i + 1, e - i - 1) : 0;
        if (!cp)
            continue;
        char ref[16];
        int rn = snprintf(ref, sizeof ref, "&#%u;", cp);
        if (mt_sb_add(&b, xml + run, i - run) || mt_sb_add(&b, ref, (size_t)rn))
            goto oom;
        run = e + 1;
        i = e;
    }
    if (!run)                       /* nothing written */
        return 0;
    if (mt_sb_add(&b, xml + run, len - run) || mt_sb_add(&b, "", 0))
        goto oom;
    *own = b.p;
    *own_len = b.n;
    return 0;
oom:
    free(b.p);
    return -1;
}

mt_status srv_xhtml_open(const char *name, const char *xml, size_t len, const srv_doc_limits *lim,
                         srv_xhtml **out, mt_err *err)
{
    *out = NULL;
    char *copy = NULL;
    srv_xml_doc *doc = NULL;
    mt_sbuf b = { 0 };
    char *own = NULL;
    srv_xhtml *x = calloc(1, sizeof *x);
    mt_status st = x && !xhtml_entities(xml, len, &own, &len) ? MT_OK : mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (own)
        xml = own;
    if (st == MT_OK)
        st = parse_masked(name, xml, len, lim->max_depth, &copy, &doc, err);
    if (st != MT_OK) {
        free(own);
        goto done;
    }
    *x = (srv_xhtml){ .name = name, .xml = xml, .own = own, .len = len, .root = srv_xml_root(doc)->start };
    size_t at = x->root, an;
    for (int k = 0; k < 2; k++)
        x->has_lang |= srv_xml_attr(doc, srv_xml_root(doc), LANG_ATTRS[k], &an) != NULL;
    if (open_empty(srv_xml_root(doc), xml, &at, &b) || mt_sb_add(&b, xml + at, len - at) || mt_sb_add(&b, "", 0)) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto done;
    }
    x->src = b.p;
    b.p = NULL;
    st = srv_html_parse(x->src, strlen(x->src), lim->max_depth, &x->h, err);
    if (st == MT_OK)
        st = trial_render(x, err);
done:
    srv_xml_free(doc);
    free(copy);
    free(b.p);
    if (st == MT_OK)
        *out = x;
    else
        srv_xhtml_free(x);
    return st;
}

int srv_xhtml_units(const srv_xhtml *x) { return srv_html_units(x->h); }
int srv_xhtml_has_lang(const srv_xhtml *x) { return x->has_lang; }
const char *srv_xhtml_unit(const srv_xhtml *x, int i) { return srv_html_unit(x->h, i); }

mt_status srv_xhtml_set(srv_xhtml *x, int i, const char *text, size_t len, const long *links, int n_links,
                        mt_err *err)
{
    return srv_html_set(x->h, i, text, len, links, n_links, err);
}

/* b (the rendered document, doc its tree over a copy with the DOCTYPE
 * blanked) with the root's lang and xml:lang, those it has, set to lang.
 * Only the root's start tag changes, so the bytes before it are b's own
 * (the DOCTYPE written back). */
static mt_status set_lang(srv_xml_doc *doc, const char *lang, mt_sbuf *b, mt_err *err)
{
    const srv_xml_node *root = srv_xml_root(doc);
    size_t n, wn;
    for (int k = 0; k < 2; k++)
        if (srv_xml_attr(doc, root, LANG_ATTRS[k], &n) && srv_xml_set_attr(doc, root, LANG_ATTRS[k], lang))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    char *w;
    mt_status st = srv_xml_write(doc, &w, &wn, err);
    if (st != MT_OK)
        return st;
    mt_sbuf nb = { 0 };
    if (mt_sb_add(&nb, b->p, root->start) || mt_sb_add(&nb, w + root->start, wn - root->start) ||
        mt_sb_add(&nb, "", 0))
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    free(w);
    if (st != MT_OK) {
        free(nb.p);
        return st;
    }
    free(b->p);
    *b = nb;
    return MT_OK;
}

mt_status srv_xhtml_render(const srv_xhtml *x, const char *lang, char **out, size_t *len, mt_err *err)
{
    *out = NULL;
    *len = 0;
    char *body = NULL, *copy = NULL;
    size_t bn;
    srv_xml_doc *doc = NULL;
    mt_sbuf b = { 0 };
    mt_status st = srv_html_render(x->h, &body, &bn, err);
    if (st != MT_OK)
        return st;
    if (mt_sb_add(&b, x->xml, x->root) || mt_sb_add(&b, body, bn) || mt_sb_add(&b, "", 0)) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto done;
    }
    mt_err xe;
    mt_status xs = parse_masked(x->name, b.p, b.n, SRV_XML_MAX_DEPTH, &copy, &doc, &xe);
    if (xs == MT_ERR_NOMEM) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    } else if (xs != MT_OK) {
        char pb[96];
        st = mt_err_set(err, MT_ERR_INTERNAL, "%s: its markup, read as HTML, cannot be written back as XHTML: %s",
                        srv_printable(x->name, pb, sizeof pb), xe.msg);
    } else if (!lang || !x->has_lang || (st = set_lang(doc, lang, &b, err)) == MT_OK) {
        *out = b.p;
        *len = b.n;
        b.p = NULL;
    }
done:
    srv_xml_free(doc);
    free(copy);
    free(body);
    free(b.p);
    return st;
}

/* ---- the package ------------------------------------------------------------------ */

typedef struct {
    srv_parts *o;
    srv_zip   *z;
    const srv_doc_limits *lim;
    srv_xml_doc *doc;           /* the current XML file */
    char      *copy;
    char       dir[512];        /* the package's folder, with its "/" ("" at the top) */
} epub;

static int is_el(const srv_xml_node *n, const char *ns, const char *name)
{
    return n->type == SRV_XML_ELEMENT && !strcmp(n->ns, ns) && !strcmp(n->name, name);
}

/* Attribute qname of el decoded into buf (the five predefined entities and,
 * with pct, %XX escapes): buf, or NULL when it is missing or too long. */
static const char *attr(const epub *e, const srv_xml_node *el, const char *qname, int pct, char *buf, size_t cap)
{
    size_t n, k = 0;
    const char *v = srv_xml_attr(e->doc, el, qname, &n);
    if (!v)
        return NULL;
    static const char *const ENT[][2] = { { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" }, { "&quot;", "\"" },
                                          { "&apos;", "'" } };
    for (size_t i = 0; i < n && k + 1 < cap; k++) {
        size_t m = 0;
        for (size_t j = 0; j < 5 && !m; j++)
            if (v[i] == '&' && n - i >= strlen(ENT[j][0]) && !memcmp(v + i, ENT[j][0], strlen(ENT[j][0])))
                m = strlen(ENT[j][0]), buf[k] = ENT[j][1][0];
        if (!m && pct && v[i] == '%' && n - i >= 3 && isxdigit((unsigned char)v[i + 1]) &&
            isxdigit((unsigned char)v[i + 2])) {
            char hx[3] = { v[i + 1], v[i + 2], 0 };
            buf[k] = (char)strtol(hx, NULL, 16);
            m = 3;
        }
        if (!m)
            buf[k] = v[i], m = 1;
        i += m;
    }
    if (k + 1 >= cap)
        return NULL;
    buf[k] = 0;
    return buf;
}

/* An XML file of the archive parsed into e->doc (the one before freed). */
static mt_status load(epub *e, int entry, mt_err *err)
{
    srv_xml_free(e->doc);
    free(e->copy);
    e->doc = NULL;
    e->copy = NULL;
    char *xml;
    size_t len;
    char pb[96];
    mt_status st = srv_zip_read(e->z, entry, &xml, &len, err);
    if (st != MT_OK)
        return st;
    if (len > e->lim->max_xml_part)
        st = mt_err_set(err, MT_ERR_TOO_LONG, "%s is %zu bytes of XML; the limit of a part is %zu (max_xml_part)",
                        srv_printable(srv_zip_name(e->z, entry), pb, sizeof pb), len, e->lim->max_xml_part);
    else
        st = parse_masked(srv_zip_name(e->z, entry), xml, len, e->lim->max_depth, &e->copy, &e->doc, err);
    free(xml);
    return st;
}

/* The entry of href (relative to the package's folder; "./" stays, "../"
 * climbs, a "#fragment" is dropped), or -1. */
static int entry_of(const epub *e, const char *href)
{
    char path[1024];
    if (strlen(e->dir) + strlen(href) >= sizeof path)
        return -1;
    strcpy(path, e->dir);
    strcat(path, href);
    char *h;
    while ((h = strstr(path, "/./")))           /* "a/./b" -> "a/b" */
        memmove(h, h + 2, strlen(h + 2) + 1);
    if (!strncmp(path, "./", 2))
        memmove(path, path + 2, strlen(path + 2) + 1);
    while ((h = strstr(path, "/../"))) {        /* "a/b/../c" -> "a/c" */
        char *s = h;
        while (s > path && s[-1] != '/')
            s--;
        memmove(s, h + 4, strlen(h + 4) + 1);
    }
    if (!strncmp(path, "../", 3))
        return -1;
    char *frag = strchr(path, '#');
    if (frag)
        *frag = 0;
    return srv_zip_find(e->z, path);
}

/* The package's path, from META-INF/container.xml, into buf. */
static mt_status package_path(epub *e, char *buf, size_t cap, mt_err *err)
{
    int c = srv_zip_find(e->z, "META-INF/container.xml");
    if (c < 0)
        return mt_err_set(err, MT_ERR_INPUT, "not an EPUB: the archive has no META-INF/container.xml");
    mt_status st = load(e, c, err);
    if (st != MT_OK)
        return st;
    const srv_xml_node *root = srv_xml_root(e->doc), *fs = root ? root->children : NULL;
    while (fs && !is_el(fs, CONTAINER_NS, "rootfiles"))
        fs = fs->next;
    for (const srv_xml_node *r = fs ? fs->children : NULL; r; r = r->next) {
        char mt[64];
        const char *m = is_el(r, CONTAINER_NS, "rootfile") ? attr(e, r, "media-type", 0, mt, sizeof mt) : NULL;
        if (m && !strcmp(m, "application/oebps-package+xml") && attr(e, r, "full-path", 1, buf, cap))
            return MT_OK;
    }
    return mt_err_set(err, MT_ERR_INPUT, "not an EPUB: META-INF/container.xml names no package");
}

/* The manifest item of id (NULL: none). */
static const srv_xml_node *item(const epub *e, const srv_xml_node *manifest, const char *id)
{
    char b[256];
    for (const srv_xml_node *i = manifest ? manifest->children : NULL; i; i = i->next) {
        const char *v = is_el(i, OPF_NS, "item") ? attr(e, i, "id", 0, b, sizeof b) : NULL;
        if (v && !strcmp(v, id))
            return i;
    }
    return NULL;
}

/* Manifest item it as a part of kind pk (a missing file: an error naming it). */
static mt_status add_item(epub *e, const srv_xml_node *it, srv_part_kind pk, mt_err *err)
{
    char href[512], pb[96];
    if (!attr(e, it, "href", 1, href, sizeof href))
        return mt_err_set(err, MT_ERR_INPUT, "the package has an item without href");
    int k = entry_of(e, href);
    if (k < 0)
        return mt_err_set(err, MT_ERR_INPUT, "the package's %s is not in the archive",
                          srv_printable(href, pb, sizeof pb));
    return srv_parts_add(e->o, e->z, k, pk, err);
}

static const srv_xml_node *child(const srv_xml_node *n, const char *name)
{
    for (const srv_xml_node *c = n ? n->children : NULL; c; c = c->next)
        if (is_el(c, OPF_NS, name))
            return c;
    return NULL;
}

/* The spine's XHTML documents, the navigation document, the NCX. */
static mt_status documents(epub *e, mt_err *err)
{
    const srv_xml_node *pkg = srv_xml_root(e->doc);
    const srv_xml_node *man = child(pkg, "manifest"), *spine = child(pkg, "spine"), *ncx = NULL;
    char b[256], mt[128];
    mt_status st = MT_OK;
    for (const srv_xml_node *r = spine ? spine->children : NULL; st == MT_OK && r; r = r->next) {
        const srv_xml_node *it = is_el(r, OPF_NS, "itemref") && attr(e, r, "idref", 0, b, sizeof b)
                                     ? item(e, man, b) : NULL;
        if (it && attr(e, it, "media-type", 0, mt, sizeof mt) && !strcmp(mt, "application/xhtml+xml"))
            st = add_item(e, it, SRV_PART_XHTML, err);
    }
    if (spine && attr(e, spine, "toc", 0, b, sizeof b))
        ncx = item(e, man, b);
    for (const srv_xml_node *it = man ? man->children : NULL; st == MT_OK && it; it = it->next) {
        if (!is_el(it, OPF_NS, "item"))
            continue;
        const char *p = attr(e, it, "properties", 0, b, sizeof b);
        size_t n = p ? strlen(p) : 0;
        for (const char *s = p; s && (s = strstr(s, "nav")); s += 3)
            if ((s == p || s[-1] == ' ') && (s + 3 == p + n || s[3] == ' '))
                st = add_item(e, it, SRV_PART_XHTML, err);
        if (!ncx && attr(e, it, "media-type", 0, mt, sizeof mt) && !strcmp(mt, "application/x-dtbncx+xml"))
            ncx = it;
    }
    if (st == MT_OK && ncx)
        st = add_item(e, ncx, SRV_PART_NCX, err);
    return st;
}

static mt_status epub_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                            const srv_doc_options *opt, void **state, mt_err *err)
{
    *state = NULL;
    epub e = { .lim = lim };
    char path[512], pb[96];
    mt_status st = srv_parts_new(kind, data, len, lim, &e.o, err);
    if (st == MT_OK)
        st = srv_zip_open(data, len, lim, &e.z, err);
    if (st == MT_OK)
        st = package_path(&e, path, sizeof path, err);
    int opf = st == MT_OK ? srv_zip_find(e.z, path) : -1;
    if (st == MT_OK && opf < 0)
        st = mt_err_set(err, MT_ERR_INPUT, "not an EPUB: its package %s is not in the archive",
                        srv_printable(path, pb, sizeof pb));
    if (st == MT_OK && (st = srv_parts_add(e.o, e.z, opf, SRV_PART_OPF, err)) == MT_OK &&
        (st = load(&e, opf, err)) == MT_OK) {
        const char *slash = strrchr(path, '/');
        size_t dn = slash ? (size_t)(slash - path) + 1 : 0;
        memcpy(e.dir, path, dn);
        e.dir[dn] = 0;
        const srv_xml_node *root = srv_xml_root(e.doc);
        st = root && is_el(root, OPF_NS, "package")
                 ? documents(&e, err)
                 : mt_err_set(err, MT_ERR_INPUT, "not an EPUB: %s is not an OPF package",
                              srv_printable(path, pb, sizeof pb));
    }
    srv_xml_free(e.doc);
    free(e.copy);
    srv_zip_close(e.z);
    if (st != MT_OK) {
        srv_parts_free(e.o);
        return st;
    }
    *state = e.o;
    return MT_OK;
}

const srv_doc_format srv_doc_epub_format = { epub_parse, srv_parts_units, srv_parts_unit, srv_parts_set,
                                             srv_parts_render, srv_parts_free, srv_parts_target };
