/* xml_tree: an XML part's tree on expat and the part again with its text changed (xml_tree.h).
 *
 * The parse is one XML_Parse over the whole part, so expat's byte index of
 * each event is an offset in the caller's bytes: elements and text nodes
 * keep the range they came from, and srv_xml_write splices the changes into
 * a copy of the source.  Nodes and their strings live in the document's
 * arena, freed at once. */
#include <expat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xml_tree.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "text/printable.h"

/* ---- the arena ------------------------------------------------------------ */

typedef struct block {
    struct block *next;
    size_t        used, cap;
    _Alignas(16) char data[];
} block;

typedef struct {
    size_t at, cut;             /* source bytes [at, at + cut) replaced */
    size_t off, n;              /* by edits.p[off, off + n) */
    size_t seq;                 /* the order they were recorded in (a tie-break) */
} edit;

struct srv_xml_doc {
    const char   *src;
    size_t        len;
    srv_xml_node *root;
    block        *blocks;
    mt_sbuf       edit_bytes;
    edit         *edits;
    size_t        n_edits, cap_edits;
};

static void *arena(srv_xml_doc *d, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    block *b = d->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 60000 ? n : 60000;
        if (!(b = malloc(sizeof *b + cap)))
            return NULL;
        b->next = d->blocks;
        b->used = 0;
        b->cap = cap;
        d->blocks = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

static char *arena_str(srv_xml_doc *d, const char *s, size_t n)
{
    char *p = arena(d, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* ---- the parse ------------------------------------------------------------ */

typedef struct {
    const char *prefix, *uri;   /* prefix "" is the default namespace */
    int         depth;          /* of the element declaring it */
} binding;

typedef enum { P_OK, P_NOMEM, P_DOCTYPE, P_DEEP, P_ENCODING } parse_fail;

typedef struct {
    XML_Parser    xp;
    srv_xml_doc  *d;
    srv_xml_node *cur;          /* the open element (NULL: outside the root) */
    int           depth, max_depth;
    parse_fail    fail;
    char          encoding[40];
    binding      *bind;
    size_t        n_bind, cap_bind;
    mt_sbuf       text;         /* the pending text node's characters */
    size_t        text_start, text_end;
    int           in_text, in_cdata;
    size_t        cdata_start;
    int           keep_misc;
} parser;

static size_t here(const parser *p) { return (size_t)XML_GetCurrentByteIndex(p->xp); }
static size_t here_end(const parser *p) { return here(p) + (size_t)XML_GetCurrentByteCount(p->xp); }

static void stop(parser *p, parse_fail why)
{
    if (p->fail == P_OK)
        p->fail = why;
    XML_StopParser(p->xp, XML_FALSE);
}

static srv_xml_node *new_node(parser *p, srv_xml_type type)
{
    srv_xml_node *n = arena(p->d, sizeof *n);
    if (!n) {
        stop(p, P_NOMEM);
        return NULL;
    }
    *n = (srv_xml_node){ .type = type, .parent = p->cur, .ns = "", .name = "", .text = "" };
    if (p->cur) {
        if (p->cur->last)
            p->cur->last->next = n;
        else
            p->cur->children = n;
        p->cur->last = n;
    }
    return n;
}

/* The pending characters become a text node: any event but more characters ends them. */
static void flush_text(parser *p, size_t end)
{
    if (!p->in_text)
        return;
    p->in_text = 0;
    if (!p->cur)
        return;
    srv_xml_node *n = new_node(p, SRV_XML_TEXT);
    if (!n)
        return;
    n->start = p->text_start;
    n->end = end;
    n->text_len = p->text.n;
    if (!(n->text = arena_str(p->d, p->text.p ? p->text.p : "", p->text.n)))
        stop(p, P_NOMEM);
}

static void on_text(void *ud, const XML_Char *s, int len)
{
    parser *p = ud;
    if (!p->in_text) {
        p->in_text = 1;
        p->text.n = 0;
        p->text_start = here(p);
    }
    if (mt_sb_add(&p->text, s, (size_t)len))
        stop(p, P_NOMEM);
    p->text_end = here_end(p);
}

static void on_cdata_start(void *ud)
{
    parser *p = ud;
    flush_text(p, p->text_end);
    p->in_cdata = 1;
    p->cdata_start = here(p);
    p->in_text = 1;             /* even an empty section is a node */
    p->text.n = 0;
    p->text_start = p->cdata_start;
}

static void on_cdata_end(void *ud)
{
    parser *p = ud;
    p->in_cdata = 0;
    flush_text(p, here_end(p));
    if (p->cur && p->cur->last && p->cur->last->type == SRV_XML_TEXT)
        p->cur->last->cdata = 1;
}

/* comments and processing instructions: they end a text node; kept as a
 * node of their own when asked (inside the root: nothing else is a node) */
static void on_other(void *ud)
{
    parser *p = ud;
    flush_text(p, p->text_end);
    if (!p->keep_misc || !p->cur || p->fail != P_OK)
        return;
    srv_xml_node *n = new_node(p, SRV_XML_MISC);
    if (n) {
        n->start = here(p);
        n->end = here_end(p);
    }
}
static void on_comment(void *ud, const XML_Char *data) { on_other(ud); }
static void on_pi(void *ud, const XML_Char *target, const XML_Char *data) { on_other(ud); }

static void on_doctype(void *ud, const XML_Char *name, const XML_Char *sys, const XML_Char *pub, int has_internal)
{
    stop(ud, P_DOCTYPE);
}

static void on_decl(void *ud, const XML_Char *version, const XML_Char *encoding, int standalone)
{
    parser *p = ud;
    if (encoding && strcasecmp(encoding, "UTF-8") && strcasecmp(encoding, "UTF8") &&
        strcasecmp(encoding, "US-ASCII") && strcasecmp(encoding, "ASCII")) {
        snprintf(p->encoding, sizeof p->encoding, "%s", encoding);
        stop(p, P_ENCODING);
    }
}

static const char *resolve(const parser *p, const char *prefix, size_t n)
{
    for (size_t i = p->n_bind; i-- > 0;)
        if (strlen(p->bind[i].prefix) == n && !memcmp(p->bind[i].prefix, prefix, n))
            return p->bind[i].uri;
    return "";
}

static int bind(parser *p, const char *prefix, const char *uri)
{
    if (MT_GROW(p->bind, p->cap_bind, p->n_bind + 1))
        return -1;
    binding *b = &p->bind[p->n_bind];
    b->prefix = arena_str(p->d, prefix, strlen(prefix));
    b->uri = arena_str(p->d, uri, strlen(uri));
    b->depth = p->depth;
    if (!b->prefix || !b->uri)
        return -1;
    p->n_bind++;
    return 0;
}

static void on_start(void *ud, const XML_Char *qname, const XML_Char **atts)
{
    parser *p = ud;
    flush_text(p, p->text_end);
    if (p->fail != P_OK)
        return;
    if (++p->depth > p->max_depth) {
        stop(p, P_DEEP);
        return;
    }
    for (int i = 0; atts[i]; i += 2) {
        const char *a = atts[i];
        if (!strncmp(a, "xmlns", 5) && (a[5] == 0 || a[5] == ':') && bind(p, a[5] ? a + 6 : "", atts[i + 1])) {
            stop(p, P_NOMEM);
            return;
        }
    }
    srv_xml_node *n = new_node(p, SRV_XML_ELEMENT);
    if (!n)
        return;
    const char *colon = strchr(qname, ':');
    n->ns = colon ? resolve(p, qname, (size_t)(colon - qname)) : resolve(p, "", 0);
    n->name = arena_str(p->d, colon ? colon + 1 : qname, strlen(colon ? colon + 1 : qname));
    if (!n->name) {
        stop(p, P_NOMEM);
        return;
    }
    n->start = here(p);
    n->tag_end = here_end(p);
    if (!p->d->root)
        p->d->root = n;
    p->cur = n;
}

static void on_end(void *ud, const XML_Char *qname)
{
    parser *p = ud;
    flush_text(p, p->text_end);
    srv_xml_node *n = p->cur;
    if (!n)
        return;
    int empty = XML_GetCurrentByteCount(p->xp) == 0;     /* <a/>: the start tag was all of it */
    n->content_end = empty ? n->tag_end : here(p);
    n->end = empty ? n->tag_end : here_end(p);
    while (p->n_bind && p->bind[p->n_bind - 1].depth == p->depth)
        p->n_bind--;
    p->depth--;
    p->cur = n->parent;
}

static mt_status parse_error(const parser *p, const char *pn, mt_err *err)
{
    switch (p->fail) {
    case P_NOMEM:
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    case P_DOCTYPE:
        return mt_err_set(err, MT_ERR_INPUT, "%s has a DOCTYPE (refused: no DTD is read)", pn);
    case P_DEEP:
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s: XML nesting deeper than %d (%s)", pn, p->max_depth,
                          p->max_depth < SRV_XML_MAX_DEPTH ? "max_depth" : "the XML layer's bound");
    case P_ENCODING: {
        char eb[48];
        return mt_err_set(err, MT_ERR_INPUT, "%s declares the encoding %s (only UTF-8 is read)", pn,
                          srv_printable(p->encoding, eb, sizeof eb));
    }
    case P_OK:
        break;
    }
    enum XML_Error code = XML_GetErrorCode(p->xp);
    if (code == XML_ERROR_NO_MEMORY)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    return mt_err_set(err, MT_ERR_INPUT, "%s is not well-formed XML (line %lu): %s", pn,
                      (unsigned long)XML_GetCurrentLineNumber(p->xp), XML_ErrorString(code));
}

mt_status srv_xml_parse(const char *name, const char *xml, size_t len, int max_depth, srv_xml_doc **out, mt_err *err)
{
    return srv_xml_parse_flags(name, xml, len, max_depth, 0, out, err);
}

mt_status srv_xml_parse_flags(const char *name, const char *xml, size_t len, int max_depth, int flags,
                              srv_xml_doc **out, mt_err *err)
{
    *out = NULL;
    char pb[96];
    const char *pn = srv_printable(name, pb, sizeof pb);
    if (len > INT32_MAX)
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s is over 2 GB", pn);
    parser p = { .max_depth = max_depth < SRV_XML_MAX_DEPTH ? max_depth : SRV_XML_MAX_DEPTH,
                 .keep_misc = !!(flags & SRV_XML_KEEP_MISC) };
    mt_status st = MT_OK;
    p.d = calloc(1, sizeof *p.d);
    /* UTF-8 whatever the declaration says: on_decl refuses any other */
    p.xp = p.d ? XML_ParserCreate("UTF-8") : NULL;
    if (!p.xp) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto done;
    }
    p.d->src = xml;
    p.d->len = len;
    XML_SetUserData(p.xp, &p);
    XML_SetElementHandler(p.xp, on_start, on_end);
    XML_SetCharacterDataHandler(p.xp, on_text);
    XML_SetCdataSectionHandler(p.xp, on_cdata_start, on_cdata_end);
    XML_SetCommentHandler(p.xp, on_comment);
    XML_SetProcessingInstructionHandler(p.xp, on_pi);
    XML_SetStartDoctypeDeclHandler(p.xp, on_doctype);
    XML_SetXmlDeclHandler(p.xp, on_decl);
    if (XML_Parse(p.xp, xml, (int)len, 1) == XML_STATUS_ERROR || p.fail != P_OK)
        st = parse_error(&p, pn, err);
    else if (!p.d->root)        /* expat says "no element found" first; kept as a guard */
        st = mt_err_set(err, MT_ERR_INPUT, "%s is not well-formed XML (line 1): no element found", pn);
done:
    if (p.xp)
        XML_ParserFree(p.xp);
    free(p.bind);
    free(p.text.p);
    if (st != MT_OK) {
        srv_xml_free(p.d);
        return st;
    }
    *out = p.d;
    return MT_OK;
}

void srv_xml_free(srv_xml_doc *d)
{
    if (!d)
        return;
    for (block *b = d->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(d->edit_bytes.p);
    free(d->edits);
    free(d);
}

const srv_xml_node *srv_xml_root(const srv_xml_doc *d) { return d->root; }

/* ---- changes -------------------------------------------------------------- */

static int add_edit(srv_xml_doc *d, size_t at, size_t cut, size_t off)
{
    if (MT_GROW(d->edits, d->cap_edits, d->n_edits + 1))
        return -1;
    d->edits[d->n_edits] = (edit){ at, cut, off, d->edit_bytes.n - off, d->n_edits };
    d->n_edits++;
    return 0;
}

/* s[0..n) escaped for text (quote 0) or for an attribute value in quote. */
static int escape(mt_sbuf *b, const char *s, size_t n, char quote)
{
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = s[i] == '&' ? "&amp;" : s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;" : s[i] == '\r' ? "&#13;"
                        : quote && s[i] == quote ? (quote == '"' ? "&quot;" : "&apos;")
                        : quote && (s[i] == '\n' || s[i] == '\t') ? (s[i] == '\n' ? "&#10;" : "&#9;") : NULL;
        if (!rep)
            continue;
        if (mt_sb_add(b, s + from, i - from) || mt_sb_add(b, rep, strlen(rep)))
            return -1;
        from = i + 1;
    }
    return mt_sb_add(b, s + from, n - from);
}

int srv_xml_set_text(srv_xml_doc *d, const srv_xml_node *text, const char *s, size_t n)
{
    MT_ASSERT_OR(text->type == SRV_XML_TEXT, return -1);
    size_t off = d->edit_bytes.n;
    if (escape(&d->edit_bytes, s, n, 0))
        return -1;
    return add_edit(d, text->start, text->end - text->start, off);
}

static int name_char(char c) { return c && !strchr(" \t\r\n/>=", c); }

int srv_xml_add_text(srv_xml_doc *d, const srv_xml_node *el, const char *s, size_t n)
{
    MT_ASSERT_OR(el->type == SRV_XML_ELEMENT, return -1);
    size_t off = d->edit_bytes.n;
    if (el->content_end != el->tag_end || el->end != el->tag_end)  /* <a>...</a>: before the end tag */
        return escape(&d->edit_bytes, s, n, 0) || add_edit(d, el->content_end, 0, off);
    /* <a .../>: its "/>" becomes ">" s "</a>" */
    const char *q = d->src + el->start + 1;
    size_t qn = 0;
    while (name_char(q[qn]))
        qn++;
    if (mt_sb_add(&d->edit_bytes, ">", 1) || escape(&d->edit_bytes, s, n, 0) || mt_sb_add(&d->edit_bytes, "</", 2) ||
        mt_sb_add(&d->edit_bytes, q, qn) || mt_sb_add(&d->edit_bytes, ">", 1))
        return -1;
    return add_edit(d, el->tag_end - 2, 2, off);
}

static int space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Where attribute qname stands in el's start tag as written. */
typedef struct {
    size_t v, vn;    /* its value's bytes, inside the quotes */
    char quote;      /* the quote it is written with */
    size_t after;    /* when absent: past the element's name or the last attribute */
} attr_pos;

/* The start tag as expat checked it: "<" name (space name space? "=" space? quoted)* space? "/"? ">".
 * 1 with *p filled when qname is there; 0 with p->after set when it is not. */
static int find_attr(const char *s, const srv_xml_node *el, const char *qname, attr_pos *p)
{
    size_t i = el->start + 1, end = el->tag_end;
    while (i < end && name_char(s[i]))
        i++;
    p->after = i;
    while (i < end) {
        while (i < end && space(s[i]))
            i++;
        if (i >= end || s[i] == '/' || s[i] == '>')
            return 0;
        size_t a = i;
        while (i < end && name_char(s[i]))
            i++;
        size_t an = i - a;
        while (i < end && s[i] != '"' && s[i] != '\'')
            i++;
        if (i >= end)
            return 0;
        p->quote = s[i++];
        p->v = i;
        while (i < end && s[i] != p->quote)
            i++;
        p->vn = i - p->v;
        if (an == strlen(qname) && !memcmp(s + a, qname, an))
            return 1;
        p->after = ++i;
    }
    return 0;
}

const char *srv_xml_attr(const srv_xml_doc *d, const srv_xml_node *el, const char *qname, size_t *n)
{
    attr_pos p;
    if (el->type != SRV_XML_ELEMENT || !find_attr(d->src, el, qname, &p))
        return NULL;
    *n = p.vn;
    return d->src + p.v;
}

int srv_xml_set_attr(srv_xml_doc *d, const srv_xml_node *el, const char *qname, const char *value)
{
    MT_ASSERT_OR(el->type == SRV_XML_ELEMENT, return -1);
    attr_pos p;
    size_t n = strlen(value), off = d->edit_bytes.n;
    if (find_attr(d->src, el, qname, &p)) {
        if (p.vn == n && !memcmp(d->src + p.v, value, n))
            return 0;                           /* already so */
        return escape(&d->edit_bytes, value, n, p.quote) || add_edit(d, p.v, p.vn, off);
    }
    if (mt_sb_add(&d->edit_bytes, " ", 1) || mt_sb_add(&d->edit_bytes, qname, strlen(qname)) ||
        mt_sb_add(&d->edit_bytes, "=\"", 2) || escape(&d->edit_bytes, value, n, '"') ||
        mt_sb_add(&d->edit_bytes, "\"", 1))
        return -1;
    return add_edit(d, p.after, 0, off);
}

/* Source order; at one offset an insertion before a replacement, then the order recorded. */
static int edit_cmp(const void *pa, const void *pb)
{
    const edit *a = pa, *b = pb;
    if (a->at != b->at)
        return a->at < b->at ? -1 : 1;
    if ((a->cut == 0) != (b->cut == 0))
        return a->cut == 0 ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

mt_status srv_xml_write(const srv_xml_doc *d, char **out, size_t *len, mt_err *err)
{
    *out = NULL;
    *len = 0;
    mt_sbuf b = { 0 };
    mt_status st = MT_OK;
    edit *e = NULL;
    if (d->n_edits) {
        if (!(e = malloc(sizeof *e * d->n_edits))) {
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            goto done;
        }
        memcpy(e, d->edits, sizeof *e * d->n_edits);
        qsort(e, d->n_edits, sizeof *e, edit_cmp);
    }
    size_t from = 0;
    for (size_t k = 0; k < d->n_edits; k++) {
        MT_ASSERT_OR(e[k].at >= from && e[k].at + e[k].cut <= d->len,                 /* changes never overlap */
                     st = mt_err_set(err, MT_ERR_INTERNAL, "overlapping changes in an XML part"); goto done);
        if (mt_sb_add(&b, d->src + from, e[k].at - from) ||
            (e[k].n && mt_sb_add(&b, d->edit_bytes.p + e[k].off, e[k].n))) {
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            goto done;
        }
        from = e[k].at + e[k].cut;
    }
    if (mt_sb_add(&b, d->src + from, d->len - from)) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto done;
    }
    *out = b.p;
    *len = b.n;
    b.p = NULL;
done:
    free(e);
    free(b.p);
    return st;
}
