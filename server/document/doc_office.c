/* doc_office: Office Open XML .docx and OpenDocument .odt (document.h).
 *
 * Parts translated:
 *   docx  word/document.xml, then word/header*.xml, word/footer*.xml,
 *         word/footnotes.xml, word/endnotes.xml (in the archive's order)
 *   odt   content.xml, then the headers and footers of styles.xml (the
 *         paragraphs inside office:master-styles)
 * Every other entry is copied as it was (doc_zip.h: its compressed bytes).
 *
 * Units.  docx: each w:p with text; its runs are the w:r elements inside it
 * (through w:hyperlink, w:ins, w:smartTag, w:sdt, w:fldSimple, ... but not
 * into a w:p nested in a text box, which is a unit of its own, nor into the
 * runs' drawings), each w:t of a run a text slot; w:tab, w:br and w:cr are a
 * space between slots.  odt: each text:p and text:h; its slots are the text
 * nodes of the paragraph and of its text:span, text:a, text:meta, text:ruby
 * children (not notes, frames, annotations or fields, which keep their
 * place); text:s, text:tab and text:line-break are a space.  A unit's text is
 * its slots joined (doc_runs.h: whitespace runs one space, trimmed); a blank
 * paragraph is not a unit.
 *
 * Writing a translation: srv_runs_split gives each slot its share; a docx
 * slot's share goes into its w:t (xml:space="preserve" when it starts or ends
 * with a space), an odt slot's into its text node; a slot that gets nothing
 * is emptied, and the spaces before a tab or break are dropped (the element
 * is the space).  Run properties, paragraph properties, drawings, fields,
 * bookmarks, tables: every element stays where it is.  Only the parts with a
 * translated unit are written again, and in them only the text that changed
 * (markup/xml_tree.h: the new text spliced into the part's own bytes, every other byte
 * kept: declaration, prefixes, attributes, comments); characters XML 1.0 does
 * not allow are left out.
 *
 * XML safety (markup/xml_tree.h, expat): a DOCTYPE stops the parser at once (neither
 * format has one: no entity can be declared, so none can expand; nothing is
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

typedef enum { PART_DOCX, PART_ODT_CONTENT, PART_ODT_STYLES } part_kind;

typedef struct {
    int       entry;        /* index in the archive */
    char     *name;
    part_kind kind;
    char     *xml;          /* the part inflated */
    size_t    len;
    time_t    mtime;
    int       first, n;     /* its units [first, first + n) */
} part;

typedef struct {
    char *text;             /* the unit */
    char *tgt;              /* its translation (NULL: none set) */
    size_t tgt_len;
    long *links;
    int   n_links;
} unit;

typedef struct {
    srv_doc_kind   kind;
    const char    *data;
    size_t         len;
    srv_doc_limits lim;
    part          *parts;
    int            n_parts;
    unit          *units;
    int            n_units;
    size_t         cap_units;
} office;

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

/* The text slots under e (a text:p, text:h or a span inside one), in order. */
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
    if (len && (ascii_space(t[0]) || ascii_space(t[len - 1])) &&
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
    int rc = o->kind == SRV_DOC_DOCX ? docx_collect(w, p) : odt_collect(w, p);
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
            o->units[o->n_units++] = (unit){ .text = r.text };
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

static int unit_element(const walk *w, node_t e)
{
    if (w->o->kind == SRV_DOC_DOCX)
        return is_el(e, W_NS, "p");
    return is_el(e, TEXT_NS, "p") || is_el(e, TEXT_NS, "h");
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
    mt_status st = root ? visit(&w, root, p->kind != PART_ODT_STYLES, err) : MT_OK;
    walk_free(&w);
    return st;
}

/* ---- the format ----------------------------------------------------------- */

static void o_free(void *state)
{
    office *o = state;
    if (!o)
        return;
    for (int i = 0; i < o->n_parts; i++) {
        free(o->parts[i].name);
        free(o->parts[i].xml);
    }
    free(o->parts);
    for (int i = 0; i < o->n_units; i++) {
        free(o->units[i].text);
        free(o->units[i].tgt);
        free(o->units[i].links);
    }
    free(o->units);
    free(o);
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

static int extra_part(srv_doc_kind kind, const char *name, part_kind *pk)
{
    if (kind == SRV_DOC_ODT) {
        *pk = PART_ODT_STYLES;
        return !strcmp(name, "styles.xml");
    }
    *pk = PART_DOCX;
    return numbered(name, "word/header") || numbered(name, "word/footer") || !strcmp(name, "word/footnotes.xml") ||
           !strcmp(name, "word/endnotes.xml");
}

static mt_status add_part(office *o, srv_zip *z, int entry, part_kind pk, mt_err *err)
{
    part *p = &o->parts[o->n_parts];
    *p = (part){ .entry = entry, .kind = pk, .mtime = srv_zip_mtime(z, entry), .first = o->n_units };
    if (!(p->name = strdup(srv_zip_name(z, entry))))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    o->n_parts++;
    mt_status st = srv_zip_read(z, entry, &p->xml, &p->len, err);
    if (st != MT_OK)
        return st;
    if (p->len > o->lim.max_xml_part)       /* its tree would take many times that */
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s is %zu bytes of XML; the limit of a part is %zu (max_xml_part)",
                          p->name, p->len, o->lim.max_xml_part);
    srv_xml_doc *doc;
    if ((st = srv_xml_parse(p->name, p->xml, p->len, o->lim.max_depth, &doc, err)) != MT_OK)
        return st;
    st = walk_part(o, p, doc, 0, err);
    srv_xml_free(doc);
    p->n = o->n_units - p->first;
    return st;
}

static mt_status o_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim, void **state,
                         mt_err *err)
{
    *state = NULL;
    if (kind != SRV_DOC_DOCX && kind != SRV_DOC_ODT)
        return mt_err_set(err, MT_ERR_INPUT, "not an office format");
    office *o = calloc(1, sizeof *o);
    if (!o)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    o->kind = kind;
    o->data = data;
    o->len = len;
    o->lim = *lim;
    srv_zip *z = NULL;
    mt_status st = srv_zip_open(data, len, lim, &z, err);
    if (st != MT_OK)
        goto fail;
    const char *main_name = kind == SRV_DOC_DOCX ? "word/document.xml" : "content.xml";
    int main_entry = srv_zip_find(z, main_name);
    if (main_entry < 0) {
        st = mt_err_set(err, MT_ERR_INPUT, "not a%s %s: the archive has no %s", kind == SRV_DOC_ODT ? "n" : "",
                        srv_doc_kind_name(kind), main_name);
    } else if (!(o->parts = calloc((size_t)srv_zip_entries(z), sizeof *o->parts))) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    } else {
        st = add_part(o, z, main_entry, kind == SRV_DOC_DOCX ? PART_DOCX : PART_ODT_CONTENT, err);
        for (int i = 0; st == MT_OK && i < srv_zip_entries(z); i++) {
            part_kind pk;
            if (i != main_entry && extra_part(kind, srv_zip_name(z, i), &pk))
                st = add_part(o, z, i, pk, err);
        }
    }
    srv_zip_close(z);
    if (st != MT_OK)
        goto fail;
    *state = o;
    return MT_OK;
fail:
    o_free(o);
    return st;
}

static int o_units(const void *state) { return ((const office *)state)->n_units; }
static const char *o_unit(const void *state, int i) { return ((const office *)state)->units[i].text; }

static mt_status o_set(void *state, int i, const char *text, size_t len, const long *links, int n_links, mt_err *err)
{
    office *o = state;
    if (!mt_utf8_valid(text, len))
        return mt_err_set(err, MT_ERR_INPUT, "the translation of unit %d is not valid UTF-8", i);
    unit *u = &o->units[i];
    return srv_tgt_store(&u->tgt, &u->tgt_len, &u->links, &u->n_links, text, len, links, n_links, err);
}

static mt_status o_render(const void *state, char **out, size_t *len, mt_err *err)
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
        int set = 0;
        for (int i = p->first; i < p->first + p->n && !set; i++)
            set = o->units[i].tgt != NULL;
        if (!set)
            continue;               /* copied as it is */
        srv_xml_doc *doc;
        if ((st = srv_xml_parse(p->name, p->xml, p->len, o->lim.max_depth, &doc, err)) != MT_OK)
            break;
        st = walk_part((office *)o, p, doc, 1, err);
        if (st == MT_OK && (st = srv_xml_write(doc, &xml[n], &xml_len[n], err)) == MT_OK) {
            idx[n] = p->entry;
            mtime[n] = p->mtime;
            n++;
        }
        srv_xml_free(doc);
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

const srv_doc_format srv_doc_office_format = { o_parse, o_units, o_unit, o_set, o_render, o_free, NULL };

int srv_doc_is_office(const char *data, size_t len, srv_doc_kind *kind) { return srv_zip_sniff(data, len, kind); }
