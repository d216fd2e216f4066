/* doc_office: the office formats (document.h): Office Open XML .docx, .pptx
 * and .xlsx, OpenDocument .odt, .odp and .ods; and the parts machinery of
 * doc_parts.h, which doc_epub.c drives too.
 *
 * Parts translated:
 *   docx  word/document.xml, then word/header*.xml, word/footer*.xml,
 *         word/footnotes.xml, word/endnotes.xml (in the archive's order)
 *   pptx  ppt/slides/slide*.xml and ppt/notesSlides/notesSlide*.xml (their
 *         text boxes and tables; not the layouts' and masters' placeholder
 *         texts); ppt/presentation.xml must be there
 *   xlsx  the shared strings part (the one xl/_rels/workbook.xml.rels names;
 *         xl/sharedStrings.xml when it names none) and the sheets
 *         xl/worksheets/sheet*.xml that hold inline strings; xl/workbook.xml
 *         (the sheet names) must be there
 *   odt, ods  content.xml, then the headers and footers of styles.xml (the
 *         paragraphs inside office:master-styles)
 *   odp   content.xml (pages, their tables, the speaker notes)
 * Every other entry is copied as it was (doc_zip.h: its compressed bytes).
 * None of these formats records the document's language in one place (runs
 * carry their own lang), so the target is not set (as docx and odt did).
 *
 * Units.  docx: each w:p with text; its runs are the w:r elements inside it
 * (through w:hyperlink, w:ins, w:smartTag, w:sdt, w:fldSimple, ... but not
 * into a w:p nested in a text box, which is a unit of its own, nor into the
 * runs' drawings), each w:t of a run a text slot; w:tab, w:br and w:cr are a
 * space between slots.  pptx: each a:p, its slots the a:t of its a:r runs,
 * a:br a space; a field (a:fld: the slide number, a date) keeps its text and
 * place.  xlsx: each string item si and inline string is, its slots its t
 * and the t of its rich-text runs r (not the phonetic rPh); formulas (f),
 * values (v), a formula's cached string: untouched.  odt, odp: each text:p
 * and text:h; its slots are the text nodes of the paragraph and of its
 * text:span, text:a, text:meta, text:ruby children (not notes, frames,
 * annotations or fields, which keep their place); text:s, text:tab and
 * text:line-break are a space.  ods: the same, only in the cells whose
 * office:value-type is "string" (a number's, a date's or a formula's text is
 * its value's display).  A unit's text is its slots joined (doc_runs.h:
 * whitespace runs one space, trimmed); a blank paragraph is not a unit.
 *
 * Writing a translation: srv_runs_split gives each slot its share; a docx or
 * xlsx slot's share goes into its t (xml:space="preserve" when it starts or
 * ends with a space; DrawingML's a:t keeps spaces without it), an ODF slot's
 * into its text node; a slot that gets nothing
 * is emptied, and the spaces before a tab or break are dropped (the element
 * is the space).  Run properties, paragraph properties, drawings, fields,
 * bookmarks, tables: every element stays where it is.  Only the parts with a
 * translated unit are written again, and in them only the text that changed
 * (markup/xml_tree.h: the new text spliced into the part's own bytes, every other byte
 * kept: declaration, prefixes, attributes, comments); characters XML 1.0 does
 * not allow are left out.
 *
 * XML safety (markup/xml_tree.h, expat): a DOCTYPE stops the parser at once (none of
 * these formats has one: no entity can be declared, so none can expand; nothing is
 * fetched); nesting is bounded by lim->max_depth.  The parts' trees are not
 * kept: parse reads the units and frees them, render parses the same bytes
 * again and walks them the same way, so render changes nothing in the parsed
 * document.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_format.h"
#include "doc_parts.h"
#include "doc_runs.h"
#include "markup/xml_tree.h"
#include "doc_zip.h"
#include "text/printable.h"
#include "markup/tgt_store.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

static const char *const W_NS[] = { "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
                                    "http://purl.oclc.org/ooxml/wordprocessingml/main", NULL };
static const char *const TEXT_NS[] = { "urn:oasis:names:tc:opendocument:xmlns:text:1.0", NULL };
static const char *const OFFICE_NS[] = { "urn:oasis:names:tc:opendocument:xmlns:office:1.0", NULL };
static const char *const MC_NS[] = { "http://schemas.openxmlformats.org/markup-compatibility/2006", NULL };
static const char *const A_NS[] = { "http://schemas.openxmlformats.org/drawingml/2006/main",
                                    "http://purl.oclc.org/ooxml/drawingml/main", NULL };
static const char *const S_NS[] = { "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
                                    "http://purl.oclc.org/ooxml/spreadsheetml/main", NULL };
static const char *const TABLE_NS[] = { "urn:oasis:names:tc:opendocument:xmlns:table:1.0", NULL };
static const char *const DC_NS[] = { "http://purl.org/dc/elements/1.1/", NULL };
static const char *const NCX_NS[] = { "http://www.daisy.org/z3986/2005/ncx/", NULL };

typedef struct {
    int            entry;       /* index in the archive */
    char          *name;
    srv_part_kind  kind;
    char          *xml;         /* the part inflated */
    size_t         len;
    time_t         mtime;
    int            first, n;    /* its units [first, first + n) */
    srv_xhtml     *html;        /* SRV_PART_XHTML: the document through the HTML path */
    char          *doctype;     /* a DOCTYPE blanked out of xml (srv_xml_mask_doctype), put back on writing */
    size_t         doctype_at;
} part;

typedef struct {
    char *text;             /* the unit */
    char *tgt;              /* its translation (NULL: none set) */
    size_t tgt_len;
    long *links;
    int   n_links;
    int   part;             /* the part it is in */
} unit;

struct srv_parts {
    srv_doc_kind   kind;
    const char    *data;
    size_t         len;
    srv_doc_limits lim;
    part          *parts;
    int            n_parts, cap_parts;
    unit          *units;
    int            n_units;
    size_t         cap_units;
    char          *lang;        /* the target's code (srv_doc_target), for SRV_PART_OPF's dc:language */
    char           shared[256]; /* xlsx: the shared strings part's name (shared_strings) */
};
typedef srv_parts office;

/* ---- the tree ------------------------------------------------------------ */

typedef const srv_xml_node *node_t;

static int in_ns(node_t n, const char *const *ns)
{
    for (; *ns; ns++)
        if (!strcmp(n->ns, *ns))
            return 1;
    return 0;
}

static int is_el(node_t n, const char *const *ns, const char *name)
{
    return n->type == SRV_XML_ELEMENT && in_ns(n, ns) && !strcmp(n->name, name);
}

static int is_text(node_t n) { return n->type == SRV_XML_TEXT; }

/* ---- a paragraph's slots -------------------------------------------------- */

typedef struct {
    node_t     node;        /* docx: the w:t element; odt: the text node */
    size_t     off, len;    /* its text in the walk's buffer */
    int        brk;         /* a tab or break follows it */
} slot;

typedef struct {
    office       *o;
    const part   *p;
    int           apply;    /* 0: collect the units; 1: write their translations */
    srv_xml_doc  *doc;      /* apply: where the changes are recorded */
    int           next;     /* apply: the next unit's index */
    mt_sbuf       buf;      /* the slots' texts */
    slot         *s;
    int           n;
    size_t        cap;
    const char  **ptr;      /* [cap] for srv_runs_init */
    size_t       *lens, *start, *end;
    mt_sbuf       out;      /* one share, cleaned */
    int           n_para;   /* paragraphs seen in this part (for messages) */
} walk;

static int add_slot(walk *w, node_t node)
{
    /* five arrays of one capacity: each grows from the same cap to the same
     * size; a failure leaves w->cap at what all of them still hold */
    size_t need = (size_t)w->n + 1, cs = w->cap, cp = w->cap, cl = w->cap, ca = w->cap, cb = w->cap;
    if (MT_GROW(w->s, cs, need) || MT_GROW(w->ptr, cp, need) || MT_GROW(w->lens, cl, need) ||
        MT_GROW(w->start, ca, need) || MT_GROW(w->end, cb, need))
        return -1;
    w->cap = cs;
    slot *s = &w->s[w->n++];
    s->node = node;
    s->off = w->buf.n;
    s->brk = 0;
    if (node->type == SRV_XML_ELEMENT) {    /* w:t: its text children */
        for (node_t c = node->children; c; c = c->next)
            if (is_text(c) && mt_sb_add(&w->buf, c->text, c->text_len))
                return -1;
    } else if (mt_sb_add(&w->buf, node->text, node->text_len)) {
        return -1;
    }
    s->len = w->buf.n - s->off;
    return 0;
}

/* A tab or break: a space after the slot before it (none at the start). */
static int add_break(walk *w)
{
    if (!w->n)
        return 0;
    w->s[w->n - 1].brk = 1;
    if (mt_sb_add(&w->buf, " ", 1))
        return -1;
    w->s[w->n - 1].len++;
    return 0;
}

static int docx_run(walk *w, node_t r)
{
    for (node_t c = r->children; c; c = c->next) {
        if (is_el(c, W_NS, "t")) {
            if (add_slot(w, c))
                return -1;
        } else if (is_el(c, W_NS, "tab") || is_el(c, W_NS, "br") || is_el(c, W_NS, "cr")) {
            if (add_break(w))
                return -1;
        }
    }
    return 0;
}

/* The runs under e (a w:p or a container inside it), in order. */
static int docx_collect(walk *w, node_t e)
{
    for (node_t c = e->children; c; c = c->next) {
        if (c->type != SRV_XML_ELEMENT || is_el(c, W_NS, "p") || is_el(c, W_NS, "pPr") || is_el(c, W_NS, "rPr"))
            continue;
        if (is_el(c, W_NS, "r")) {
            if (docx_run(w, c))
                return -1;
        } else if (is_el(c, MC_NS, "AlternateContent")) {
            /* the first choice's text (the fallback repeats it) */
            node_t a = c->children;
            while (a && !is_el(a, MC_NS, "Choice"))
                a = a->next;
            if (a && docx_collect(w, a))
                return -1;
        } else if (docx_collect(w, c)) {
            return -1;
        }
    }
    return 0;
}

/* The slots of a DrawingML paragraph (a:p) or a SpreadsheetML string (si, is):
 * the t elements of its own and of its runs (r), a:br a space; fields (a:fld)
 * and phonetic runs (rPh) keep their place untranslated. */
static int dml_collect(walk *w, node_t e, const char *const *ns)
{
    for (node_t c = e->children; c; c = c->next) {
        if (is_el(c, ns, "t")) {
            if (add_slot(w, c))
                return -1;
        } else if (is_el(c, ns, "br")) {
            if (add_break(w))
                return -1;
        } else if (is_el(c, ns, "r") && dml_collect(w, c, ns)) {
            return -1;
        }
    }
    return 0;
}

/* The text slots under e (a text:p, text:h or a span inside one; an EPUB
 * package's dc:title, an NCX text: their text nodes), in order. */
static int odt_collect(walk *w, node_t e)
{
    for (node_t c = e->children; c; c = c->next) {
        if (is_text(c)) {
            if (add_slot(w, c))
                return -1;
        } else if (is_el(c, TEXT_NS, "span") || is_el(c, TEXT_NS, "a") || is_el(c, TEXT_NS, "meta") ||
                   is_el(c, TEXT_NS, "ruby") || is_el(c, TEXT_NS, "ruby-base")) {
            if (odt_collect(w, c))
                return -1;
        } else if (is_el(c, TEXT_NS, "s") || is_el(c, TEXT_NS, "tab") || is_el(c, TEXT_NS, "line-break")) {
            if (add_break(w))
                return -1;
        }
    }
    return 0;
}

static int xml_char_ok(uint32_t c)
{
    return c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) ||
           c >= 0x10000;
}

static int ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* s[0..n) into slot k: w->out gets it without the characters XML cannot hold. */
static int write_slot(walk *w, const slot *sl, const char *s, size_t n)
{
    w->out.n = 0;
    if (mt_sb_add(&w->out, "", 0))
        return -1;
    for (size_t k = 0; k < n;) {
        uint32_t c;
        size_t m = mt_utf8_decode((const uint8_t *)s + k, n - k, &c);
        if (!m) {
            k++;
            continue;
        }
        if (xml_char_ok(c) && mt_sb_add(&w->out, s + k, m))
            return -1;
        k += m;
    }
    const char *t = w->out.p;
    size_t len = w->out.n;
    if (sl->node->type != SRV_XML_ELEMENT)      /* odt: the text node */
        return srv_xml_set_text(w->doc, sl->node, t, len);
    int done = 0;                               /* docx: the w:t's first text child, the others emptied */
    for (node_t c = sl->node->children; c; c = c->next) {
        if (!is_text(c))
            continue;
        if (srv_xml_set_text(w->doc, c, t, done ? 0 : len))
            return -1;
        done = 1;
    }
    if (!done && len && srv_xml_add_text(w->doc, sl->node, t, len))
        return -1;
    /* (DrawingML's a:t keeps its spaces without it, and has no such attribute) */
    if (len && w->p->kind != SRV_PART_PPTX && (ascii_space(t[0]) || ascii_space(t[len - 1])) &&
        srv_xml_set_attr(w->doc, sl->node, "xml:space", "preserve"))
        return -1;
    return 0;
}

/* The shares of srv_runs_split placed: the spaces between two shares ride
 * with the first; they go to the second when its source slot started with a
 * space and the first's did not end with one (" this sentence" after a
 * footnote mark), and they are dropped before a tab or break (the element is
 * the space). */
static mt_status write_unit(walk *w, const srv_runs *r, const unit *u, mt_err *err)
{
    size_t *a = w->start, *b = w->end;
    mt_status st = srv_runs_split(r, u->tgt, u->tgt_len, u->links, u->n_links, a, b, err);
    if (st != MT_OK)
        return st;
    const char *txt = w->buf.p ? w->buf.p : "";
    for (int i = 0, prev = -1; i < w->n; i++) {
        if (a[i] >= b[i])
            continue;
        if (prev >= 0 && b[prev] == a[i]) {
            size_t t = b[prev];
            while (t > a[prev] && ascii_space(u->tgt[t - 1]))
                t--;
            int brk = 0;
            for (int j = prev; j < i; j++)
                brk |= w->s[j].brk;
            const slot *sp = &w->s[prev], *si = &w->s[i];
            int trail = sp->len && ascii_space(txt[sp->off + sp->len - 1]);
            int lead = si->len && ascii_space(txt[si->off]);
            if (brk)
                b[prev] = t;
            else if (lead && !trail)
                b[prev] = a[i] = t;
        }
        prev = i;
    }
    for (int i = 0; i < w->n; i++)
        if (write_slot(w, &w->s[i], u->tgt + a[i], a[i] < b[i] ? b[i] - a[i] : 0))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    return MT_OK;
}

static mt_status paragraph(walk *w, node_t p, mt_err *err)
{
    office *o = w->o;
    w->n = 0;
    w->buf.n = 0;
    w->n_para++;
    int rc = w->p->kind == SRV_PART_DOCX   ? docx_collect(w, p)
             : w->p->kind == SRV_PART_PPTX ? dml_collect(w, p, A_NS)
             : w->p->kind == SRV_PART_XLSX ? dml_collect(w, p, S_NS)
                                           : odt_collect(w, p);
    if (rc)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (!w->n)
        return MT_OK;
    for (int i = 0; i < w->n; i++) {
        w->ptr[i] = w->buf.p ? w->buf.p + w->s[i].off : "";
        w->lens[i] = w->s[i].len;
    }
    srv_runs r;
    mt_status st = srv_runs_init(&r, w->ptr, w->lens, w->n, err);
    if (st != MT_OK)
        return st;
    if (!r.text[0])                             /* blank: not a unit */
        goto done;
    if (!w->apply) {
        size_t tl = strlen(r.text);
        char pb[96];
        if (tl > o->lim.max_unit_bytes)
            st = mt_err_set(err, MT_ERR_TOO_LONG, "%s: paragraph %d is %zu bytes; the limit is %zu (max_unit_bytes)",
                            srv_printable(w->p->name, pb, sizeof pb), w->n_para, tl,
                            o->lim.max_unit_bytes);
        else if (o->n_units >= o->lim.max_units)
            st = mt_err_set(err, MT_ERR_TOO_LONG, "the file has more than %d translation units (max_units)",
                            o->lim.max_units);
        else if (MT_GROW(o->units, o->cap_units, (size_t)o->n_units + 1))
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        if (st == MT_OK) {
            o->units[o->n_units++] = (unit){ .text = r.text, .part = (int)(w->p - o->parts) };
            r.text = NULL;
        }
    } else {
        int k = w->next++;
        if (k < o->n_units && o->units[k].tgt)
            st = write_unit(w, &r, &o->units[k], err);
    }
done:
    srv_runs_free(&r);
    return st;
}

/* Whether ods text element e stands in a cell holding a string (not a number,
 * a date or a formula's value: those keep their text, which is their value). */
static int string_cell(const walk *w, node_t e)
{
    node_t c = e->parent;
    size_t n;
    const char *t = c && is_el(c, TABLE_NS, "table-cell") ? srv_xml_attr(w->doc, c, "office:value-type", &n) : NULL;
    return t && n == 6 && !memcmp(t, "string", 6);
}

static int unit_element(const walk *w, node_t e)
{
    switch (w->p->kind) {
    case SRV_PART_DOCX:
        return is_el(e, W_NS, "p");
    case SRV_PART_PPTX:
        return is_el(e, A_NS, "p");
    case SRV_PART_XLSX:
        return is_el(e, S_NS, "si") || is_el(e, S_NS, "is");
    case SRV_PART_ODS_CONTENT:
        return (is_el(e, TEXT_NS, "p") || is_el(e, TEXT_NS, "h")) && string_cell(w, e);
    case SRV_PART_OPF:
        return is_el(e, DC_NS, "title") || is_el(e, DC_NS, "description");
    case SRV_PART_NCX:
        return is_el(e, NCX_NS, "text") && e->parent &&
               (is_el(e->parent, NCX_NS, "navLabel") || is_el(e->parent, NCX_NS, "docTitle"));
    default:
        return is_el(e, TEXT_NS, "p") || is_el(e, TEXT_NS, "h");
    }
}

/* The package's dc:language elements given the target's code. */
static mt_status set_language(walk *w, node_t e, mt_err *err)
{
    if (is_el(e, DC_NS, "language")) {
        int done = 0;
        for (node_t c = e->children; c; c = c->next)
            if (is_text(c)) {
                if (srv_xml_set_text(w->doc, c, w->o->lang, done ? 0 : strlen(w->o->lang)))
                    return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
                done = 1;
            }
        if (!done && srv_xml_add_text(w->doc, e, w->o->lang, strlen(w->o->lang)))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        return MT_OK;
    }
    for (node_t c = e->children; c; c = c->next)
        if (c->type == SRV_XML_ELEMENT) {
            mt_status st = set_language(w, c, err);
            if (st != MT_OK)
                return st;
        }
    return MT_OK;
}

/* Every unit element under e in document order (a unit's nested paragraphs after it).
 * Recursion is bounded by the nesting srv_xml_parse checked. */
static mt_status visit(walk *w, node_t e, int scope, mt_err *err)
{
    if (scope && unit_element(w, e)) {
        mt_status st = paragraph(w, e, err);
        if (st != MT_OK)
            return st;
    }
    if (!scope && is_el(e, OFFICE_NS, "master-styles"))
        scope = 1;
    for (node_t c = e->children; c; c = c->next)
        if (c->type == SRV_XML_ELEMENT) {
            mt_status st = visit(w, c, scope, err);
            if (st != MT_OK)
                return st;
        }
    return MT_OK;
}

static void walk_free(walk *w)
{
    free(w->buf.p);
    free(w->out.p);
    free(w->s);
    free(w->ptr);
    free(w->lens);
    free(w->start);
    free(w->end);
}

/* The part's units collected (apply 0) or its translations recorded in doc (apply 1). */
static mt_status walk_part(office *o, const part *p, srv_xml_doc *doc, int apply, mt_err *err)
{
    walk w = { .o = o, .p = p, .apply = apply, .doc = doc, .next = p->first };
    node_t root = srv_xml_root(doc);
    mt_status st = root ? visit(&w, root, p->kind != SRV_PART_ODT_STYLES, err) : MT_OK;
    if (st == MT_OK && root && apply && p->kind == SRV_PART_OPF && o->lang)
        st = set_language(&w, root, err);
    walk_free(&w);
    return st;
}

/* ---- the parts ------------------------------------------------------------ */

void srv_parts_free(void *state)
{
    office *o = state;
    if (!o)
        return;
    for (int i = 0; i < o->n_parts; i++) {
        free(o->parts[i].name);
        free(o->parts[i].xml);
        free(o->parts[i].doctype);
        srv_xhtml_free(o->parts[i].html);
    }
    free(o->parts);
    for (int i = 0; i < o->n_units; i++) {
        free(o->units[i].text);
        free(o->units[i].tgt);
        free(o->units[i].links);
    }
    free(o->units);
    free(o->lang);
    free(o);
}

mt_status srv_parts_new(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                        srv_parts **out, mt_err *err)
{
    office *o = calloc(1, sizeof *o);
    *out = o;
    if (!o)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    o->kind = kind;
    o->data = data;
    o->len = len;
    o->lim = *lim;
    snprintf(o->shared, sizeof o->shared, "xl/sharedStrings.xml");
    return MT_OK;
}

/* A unit of its own, unit i of an XHTML part's document, within the limits. */
static mt_status add_unit(office *o, const part *p, const char *text, int i, mt_err *err)
{
    char pb[96];
    size_t tl = strlen(text);
    if (tl > o->lim.max_unit_bytes)
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s: unit %d is %zu bytes; the limit is %zu (max_unit_bytes)",
                          srv_printable(p->name, pb, sizeof pb), i + 1, tl, o->lim.max_unit_bytes);
    if (o->n_units >= o->lim.max_units)
        return mt_err_set(err, MT_ERR_TOO_LONG, "the file has more than %d translation units (max_units)",
                          o->lim.max_units);
    if (MT_GROW(o->units, o->cap_units, (size_t)o->n_units + 1))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    unit *u = &o->units[o->n_units];
    *u = (unit){ .text = strdup(text), .part = (int)(p - o->parts) };
    if (!u->text)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    o->n_units++;
    return MT_OK;
}

/* The part's units: its XML walked, or its XHTML document's units. */
static mt_status read_units(office *o, part *p, mt_err *err)
{
    mt_status st;
    if (p->kind == SRV_PART_XHTML) {
        if ((st = srv_xhtml_open(p->name, p->xml, p->len, &o->lim, &p->html, err)) != MT_OK)
            return st;
        for (int i = 0; st == MT_OK && i < srv_xhtml_units(p->html); i++)
            st = add_unit(o, p, srv_xhtml_unit(p->html, i), i, err);
        return st;
    }
    if (p->kind == SRV_PART_OPF || p->kind == SRV_PART_NCX) {
        if (srv_xml_mask_doctype(p->xml, p->len, &p->doctype_at, &p->doctype))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    srv_xml_doc *doc;
    if ((st = srv_xml_parse(p->name, p->xml, p->len, o->lim.max_depth, &doc, err)) != MT_OK)
        return st;
    st = walk_part(o, p, doc, 0, err);
    srv_xml_free(doc);
    return st;
}

mt_status srv_parts_add(srv_parts *o, srv_zip *z, int entry, srv_part_kind pk, mt_err *err)
{
    for (int i = 0; i < o->n_parts; i++)
        if (o->parts[i].entry == entry)
            return MT_OK;
    size_t cap = (size_t)o->cap_parts;
    if (MT_GROW(o->parts, cap, (size_t)o->n_parts + 1))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    o->cap_parts = (int)cap;
    part *p = &o->parts[o->n_parts];
    *p = (part){ .entry = entry, .kind = pk, .mtime = srv_zip_mtime(z, entry), .first = o->n_units };
    if (!(p->name = strdup(srv_zip_name(z, entry))))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    o->n_parts++;
    mt_status st = srv_zip_read(z, entry, &p->xml, &p->len, err);
    if (st != MT_OK)
        return st;
    char pb[96];
    if (p->len > o->lim.max_xml_part)       /* its tree would take many times that */
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s is %zu bytes of XML; the limit of a part is %zu (max_xml_part)",
                          srv_printable(p->name, pb, sizeof pb), p->len, o->lim.max_xml_part);
    if (pk == SRV_PART_XLSX && strcmp(p->name, o->shared) && !memmem(p->xml, p->len, "inlineStr", 9)) {
        free(p->name);              /* a sheet of numbers, formulas and shared strings: nothing of its own */
        free(p->xml);
        o->n_parts--;
        return MT_OK;
    }
    st = read_units(o, p, err);
    p->n = o->n_units - p->first;
    return st;
}

/* "word/header" digits ".xml" and the like */
static int numbered(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n))
        return 0;
    name += n;
    while (*name >= '0' && *name <= '9')
        name++;
    return !strcmp(name, ".xml");
}

/* ---- the office formats ------------------------------------------------------ */

/* The entry a file of kind cannot be without, and whether it is a part (*pk). */
static const char *main_entry(srv_doc_kind kind, int *is_part, srv_part_kind *pk)
{
    *is_part = 1;
    switch (kind) {
    case SRV_DOC_DOCX:
        *pk = SRV_PART_DOCX;
        return "word/document.xml";
    case SRV_DOC_PPTX:
        *is_part = 0;
        return "ppt/presentation.xml";
    case SRV_DOC_XLSX:
        *is_part = 0;
        return "xl/workbook.xml";
    case SRV_DOC_ODS:
        *pk = SRV_PART_ODS_CONTENT;
        return "content.xml";
    default:                        /* odt, odp */
        *pk = SRV_PART_ODT_CONTENT;
        return "content.xml";
    }
}

/* The workbook's shared strings part into o->shared: the Target of the
 * Relationship whose Type ends in "/sharedStrings" in
 * xl/_rels/workbook.xml.rels (relative to xl/, or from the archive's top
 * when it starts with "/"); without that file or such a Relationship, the
 * usual xl/sharedStrings.xml (srv_parts_new). */
static mt_status shared_strings(office *o, srv_zip *z, mt_err *err)
{
    static const char RELS[] = "xl/_rels/workbook.xml.rels";
    int e = srv_zip_find(z, RELS);
    if (e < 0)
        return MT_OK;
    char *xml = NULL;
    size_t len, tn, gn;
    srv_xml_doc *doc = NULL;
    mt_status st = srv_zip_read(z, e, &xml, &len, err);
    if (st == MT_OK && len > o->lim.max_xml_part)
        st = mt_err_set(err, MT_ERR_TOO_LONG, "%s is %zu bytes of XML; the limit of a part is %zu (max_xml_part)",
                        RELS, len, o->lim.max_xml_part);
    if (st == MT_OK)
        st = srv_xml_parse(RELS, xml, len, o->lim.max_depth, &doc, err);
    const srv_xml_node *root = st == MT_OK ? srv_xml_root(doc) : NULL;
    for (const srv_xml_node *c = root ? root->children : NULL; c; c = c->next) {
        const char *type = c->type == SRV_XML_ELEMENT && !strcmp(c->name, "Relationship")
                               ? srv_xml_attr(doc, c, "Type", &tn) : NULL;
        const char *target = type ? srv_xml_attr(doc, c, "Target", &gn) : NULL;
        if (!target || !gn || tn < 14 || memcmp(type + tn - 14, "/sharedStrings", 14))
            continue;
        if (target[0] == '/')
            snprintf(o->shared, sizeof o->shared, "%.*s", (int)(gn - 1), target + 1);
        else
            snprintf(o->shared, sizeof o->shared, "xl/%.*s", (int)gn, target);
        break;
    }
    srv_xml_free(doc);
    free(xml);
    return st;
}

/* The other parts translated, in the archive's order. */
static int other_part(const office *o, srv_doc_kind kind, const char *name, srv_part_kind *pk)
{
    switch (kind) {
    case SRV_DOC_DOCX:
        *pk = SRV_PART_DOCX;
        return numbered(name, "word/header") || numbered(name, "word/footer") ||
               !strcmp(name, "word/footnotes.xml") || !strcmp(name, "word/endnotes.xml");
    case SRV_DOC_ODT: case SRV_DOC_ODS:             /* headers and footers */
        *pk = SRV_PART_ODT_STYLES;
        return !strcmp(name, "styles.xml");
    case SRV_DOC_PPTX:
        *pk = SRV_PART_PPTX;
        return numbered(name, "ppt/slides/slide") || numbered(name, "ppt/notesSlides/notesSlide");
    case SRV_DOC_XLSX:
        *pk = SRV_PART_XLSX;
        return !strcmp(name, o->shared) || numbered(name, "xl/worksheets/sheet");
    default:
        return 0;
    }
}

static mt_status o_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                         const srv_doc_options *opt, void **state, mt_err *err)
{
    *state = NULL;
    if (kind != SRV_DOC_DOCX && kind != SRV_DOC_ODT && kind != SRV_DOC_PPTX && kind != SRV_DOC_XLSX &&
        kind != SRV_DOC_ODP && kind != SRV_DOC_ODS)
        return mt_err_set(err, MT_ERR_INPUT, "not an office format");
    office *o;
    srv_zip *z = NULL;
    mt_status st = srv_parts_new(kind, data, len, lim, &o, err);
    if (st == MT_OK)
        st = srv_zip_open(data, len, lim, &z, err);
    if (st != MT_OK)
        goto fail;
    int is_part;
    srv_part_kind pk;
    const char *main_name = main_entry(kind, &is_part, &pk);
    int first = srv_zip_find(z, main_name);
    const char *kn = srv_doc_kind_name(kind);
    if (first < 0)
        st = mt_err_set(err, MT_ERR_INPUT, "not a%s %s: the archive has no %s", kn[0] == 'o' ? "n" : "", kn,
                        main_name);
    else if (is_part)
        st = srv_parts_add(o, z, first, pk, err);
    if (st == MT_OK && kind == SRV_DOC_XLSX)
        st = shared_strings(o, z, err);
    for (int i = 0; st == MT_OK && i < srv_zip_entries(z); i++)
        if (i != first && other_part(o, kind, srv_zip_name(z, i), &pk))
            st = srv_parts_add(o, z, i, pk, err);
    srv_zip_close(z);
    if (st != MT_OK)
        goto fail;
    *state = o;
    return MT_OK;
fail:
    srv_parts_free(o);
    return st;
}

int srv_parts_units(const void *state) { return ((const office *)state)->n_units; }
const char *srv_parts_unit(const void *state, int i) { return ((const office *)state)->units[i].text; }

mt_status srv_parts_set(void *state, int i, const char *text, size_t len, const long *links, int n_links,
                        mt_err *err)
{
    office *o = state;
    if (!mt_utf8_valid(text, len))
        return mt_err_set(err, MT_ERR_INPUT, "the translation of unit %d is not valid UTF-8", i);
    unit *u = &o->units[i];
    part *p = &o->parts[u->part];
    if (p->kind == SRV_PART_XHTML) {
        mt_status st = srv_xhtml_set(p->html, i - p->first, text, len, links, n_links, err);
        if (st != MT_OK)
            return st;
    }
    return srv_tgt_store(&u->tgt, &u->tgt_len, &u->links, &u->n_links, text, len, links, n_links, err);
}

void srv_parts_target(void *state, const char *lang)
{
    office *o = state;
    char *l = strdup(lang);
    if (!l)                         /* out of memory: the language stays the source's */
        return;
    free(o->lang);
    o->lang = l;
}

/* Part p written again with its translations: *out malloc'd. */
static mt_status write_part(const office *o, const part *p, char **out, size_t *len, mt_err *err)
{
    if (p->kind == SRV_PART_XHTML)
        return srv_xhtml_render(p->html, o->lang, out, len, err);
    srv_xml_doc *doc;
    mt_status st = srv_xml_parse(p->name, p->xml, p->len, o->lim.max_depth, &doc, err);
    if (st != MT_OK)
        return st;
    st = walk_part((office *)o, p, doc, 1, err);
    if (st == MT_OK)
        st = srv_xml_write(doc, out, len, err);
    srv_xml_free(doc);
    size_t dl = p->doctype ? strlen(p->doctype) : 0;
    if (st == MT_OK && dl && p->doctype_at + dl <= *len)    /* nothing before the root changed */
        memcpy(*out + p->doctype_at, p->doctype, dl);
    return st;
}

static int part_changed(const office *o, const part *p)
{
    if (o->lang && (p->kind == SRV_PART_OPF || (p->kind == SRV_PART_XHTML && srv_xhtml_has_lang(p->html))))
        return 1;
    for (int i = p->first; i < p->first + p->n; i++)
        if (o->units[i].tgt)
            return 1;
    return 0;
}

mt_status srv_parts_render(const void *state, char **out, size_t *len, mt_err *err)
{
    const office *o = state;
    *out = NULL;
    *len = 0;
    int n = 0;
    int *idx = malloc(sizeof *idx * (size_t)(o->n_parts + 1));
    char **xml = calloc((size_t)(o->n_parts + 1), sizeof *xml);
    size_t *xml_len = malloc(sizeof *xml_len * (size_t)(o->n_parts + 1));
    time_t *mtime = malloc(sizeof *mtime * (size_t)(o->n_parts + 1));
    mt_status st = idx && xml && xml_len && mtime ? MT_OK : mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    for (int k = 0; st == MT_OK && k < o->n_parts; k++) {
        const part *p = &o->parts[k];
        if (!part_changed(o, p))
            continue;               /* copied as it is */
        if ((st = write_part(o, p, &xml[n], &xml_len[n], err)) == MT_OK) {
            idx[n] = p->entry;
            mtime[n] = p->mtime;
            n++;
        }
    }
    if (st == MT_OK && n == 0) {            /* nothing translated: the file as it came */
        if (!(*out = malloc(o->len + 1)))
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        else {
            memcpy(*out, o->data, o->len);
            (*out)[o->len] = 0;
            *len = o->len;
        }
    } else if (st == MT_OK) {
        st = srv_zip_rewrite(o->data, o->len, idx, (const char *const *)xml, xml_len, mtime, n, out, len, err);
    }
    for (int k = 0; xml && k < n; k++)
        free(xml[k]);
    free(idx);
    free(xml);
    free(xml_len);
    free(mtime);
    return st;
}

const srv_doc_format srv_doc_office_format = { o_parse, srv_parts_units, srv_parts_unit, srv_parts_set,
                                               srv_parts_render, srv_parts_free, NULL };

int srv_doc_is_office(const char *data, size_t len, srv_doc_kind *kind) { return srv_zip_sniff(data, len, kind); }
