/* doc_xliff: XLIFF 1.2 and 2.0/2.1, the exchange format of CAT tools
 * (document.h, format xliff), on expat (markup/xml_tree.h).
 *
 * The root is <xliff>; its version is its namespace's (…:document:1.2 or
 * …:document:2.0) or its version attribute.  Units: in 1.2 each
 * <trans-unit>'s <source>, in 2.x each <segment>'s <source>; never those
 * under translate="no" (on <file>, <group>, <unit> or <trans-unit>), nor
 * those whose <target> already holds something (kept, unless the caller's
 * srv_doc_options.overwrite: then its content is replaced).  The translation goes
 * into the <target>: an empty one is filled, a missing one is created after
 * the <source> (after 1.2's <seg-source>) on a line of its own with the
 * source's indentation and line ending, its prefix the source's.  Set on
 * what was translated: 1.2 state="needs-review-translation" on the target,
 * 2.x state="translated" on the segment; the target language (srv_doc_target)
 * as 1.2's target-language on every <file>, 2.x's trgLang on <xliff>.
 *
 * Inline codes are the source's, as written (their ids kept): 1.2's <g> and
 * <mrk>, 2.x's <pc> and <mrk> are inline elements placed around the aligned
 * words (markup/inline.h, as markup/xml.c); every other element (<x/>,
 * <bx/>, <ex/>, <ph>, <bpt>, <ept>, <it>; <ph/>, <sc/>, <ec/>, <cp/>), a <mrk>
 * with translate="no" or mtype="protected", comments and processing
 * instructions are opaque points kept whole.  Notes, attributes, comments
 * and every other byte are the file's own.
 *
 * Malformed XML is MT_ERR_INPUT with expat's line, a root other than
 * <xliff> too; a DOCTYPE is refused (no entity can expand); nesting deeper
 * than max_depth and a source over max_unit_bytes are MT_ERR_TOO_LONG.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doc_format.h"
#include "markup/inline.h"
#include "markup/xml_tree.h"
#include "util/check.h"
#include "util/strbuf.h"

typedef struct {
    srv_iunit           iu;
    const srv_xml_node *source, *target;    /* target: NULL when one is to be created */
    const srv_xml_node *after;              /* where a created target goes: after this element */
    const srv_xml_node *segment;            /* 2.x: the segment (its state) */
} xunit;

typedef struct {
    const char  *src;
    size_t       len;
    srv_xml_doc *x;
    int          v2;
    xunit       *u;
    int          n;
    size_t       cap;
    srv_irecs    recs;
    const srv_xml_node **files;             /* 1.2: the <file> elements (target-language) */
    int          n_files;
    size_t       cap_files;
    char        *lang;                      /* the target language, once set */
    size_t       max_unit;
    int          overwrite;                 /* srv_doc_options: targets that hold text translated again */
} xdoc;

/* ---- reading ------------------------------------------------------------------------ */

static int attr_is(const xdoc *d, const srv_xml_node *el, const char *name, const char *value)
{
    size_t n;
    const char *v = srv_xml_attr(d->x, el, name, &n);
    return v && n == strlen(value) && !memcmp(v, value, n);
}

static int named(const srv_xml_node *n, const char *name)
{
    return n && n->type == SRV_XML_ELEMENT && !strcmp(n->name, name);
}

static const srv_xml_node *child(const srv_xml_node *el, const char *name)
{
    for (const srv_xml_node *c = el->children; c; c = c->next)
        if (named(c, name))
            return c;
    return NULL;
}

/* An element placed around words (its content translated), not kept whole. */
static int inline_element(const xdoc *d, const srv_xml_node *el)
{
    if (el->tag_end >= el->end || attr_is(d, el, "translate", "no") || attr_is(d, el, "mtype", "protected"))
        return 0;
    return d->v2 ? !strcmp(el->name, "pc") || !strcmp(el->name, "mrk")
                 : !strcmp(el->name, "g") || !strcmp(el->name, "mrk");
}

static void collect(const xdoc *d, srv_ibuild *b, const srv_xml_node *first)
{
    for (const srv_xml_node *c = first; c && !b->oom; c = c->next) {
        if (c->type == SRV_XML_TEXT) {
            srv_ib_text(b, c->text, c->text_len);
        } else if (c->type == SRV_XML_ELEMENT && inline_element(d, c)) {
            int ws = b->ws, r = srv_ib_open(b, c);
            if (r >= 0) {
                collect(d, b, c->children);
                srv_ib_close(b, r, ws);
            }
        } else {
            srv_ib_point(b, c);
        }
    }
}

/* A target that holds nothing (no element, no character but spaces). */
static int empty_target(const srv_xml_node *t)
{
    for (const srv_xml_node *c = t->children; c; c = c->next)
        if (c->type != SRV_XML_TEXT || !srv_blank(c->text))
            return 0;
    return 1;
}

/* The source of a trans-unit (1.2) or a segment (2.x): a unit when it has
 * words and no target yet (or overwrite: whatever its target holds). */
static mt_status unit(xdoc *d, const srv_xml_node *holder, const srv_xml_node *segment, mt_err *err)
{
    const srv_xml_node *source = child(holder, "source"), *target = child(holder, "target");
    if (!source || (target && !d->overwrite && !empty_target(target)))
        return MT_OK;
    const srv_xml_node *seg = d->v2 ? NULL : child(holder, "seg-source");
    xunit u = { .source = source, .target = target, .segment = segment,
                .after = seg && seg->start > source->start ? seg : source };
    srv_ibuild b = SRV_IBUILD(&d->recs);
    collect(d, &b, source->children);
    int words = srv_ib_finish(&b, &u.iu);
    if (words < 0)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (!words)
        return MT_OK;
    size_t tl = strlen(u.iu.text);
    if (tl > d->max_unit) {
        srv_iunit_free(&u.iu);
        return mt_err_set(err, MT_ERR_TOO_LONG, "a <source> of %zu bytes; the limit is %zu (max_unit_bytes)", tl,
                          d->max_unit);
    }
    if (MT_GROW(d->u, d->cap, (size_t)d->n + 1)) {
        srv_iunit_free(&u.iu);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    d->u[d->n++] = u;
    return MT_OK;
}

/* The elements under el (a file, a group, a unit), translate="no" skipped.  The
 * depth is bounded by the parse (max_depth, SRV_XML_MAX_DEPTH). */
static mt_status walk(xdoc *d, const srv_xml_node *el, mt_err *err)
{
    mt_status st = MT_OK;
    for (const srv_xml_node *c = el->children; c && st == MT_OK; c = c->next) {
        if (c->type != SRV_XML_ELEMENT || attr_is(d, c, "translate", "no"))
            continue;
        if (!d->v2 && !strcmp(c->name, "file") &&
            MT_GROW(d->files, d->cap_files, (size_t)d->n_files + 1))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        if (!d->v2 && !strcmp(c->name, "file"))
            d->files[d->n_files++] = c;
        if (!d->v2 && !strcmp(c->name, "trans-unit"))
            st = unit(d, c, NULL, err);
        else if (d->v2 && !strcmp(c->name, "segment"))
            st = unit(d, c, c, err);
        else if (strcmp(c->name, "source") && strcmp(c->name, "target") && strcmp(c->name, "note"))
            st = walk(d, c, err);
    }
    return st;
}

static void x_free(void *state)
{
    xdoc *d = state;
    if (!d)
        return;
    for (int i = 0; i < d->n; i++)
        srv_iunit_free(&d->u[i].iu);
    free(d->u);
    free(d->recs.r);
    free(d->files);
    free(d->lang);
    srv_xml_free(d->x);
    free(d);
}

static mt_status x_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                         const srv_doc_options *opt, void **state, mt_err *err)
{
    xdoc *d = calloc(1, sizeof *d);
    if (!d)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    d->src = data;
    d->len = len;
    d->max_unit = lim->max_unit_bytes;
    d->overwrite = opt->overwrite;
    mt_status st = srv_xml_parse_flags("the XLIFF file", data, len, lim->max_depth, SRV_XML_KEEP_MISC, &d->x, err);
    if (st != MT_OK)
        goto fail;
    const srv_xml_node *root = srv_xml_root(d->x);
    if (!root || strcmp(root->name, "xliff")) {
        st = mt_err_set(err, MT_ERR_INPUT, "not XLIFF: the root element is <%.40s>, not <xliff>",
                        root ? root->name : "");
        goto fail;
    }
    size_t vn;
    const char *v = srv_xml_attr(d->x, root, "version", &vn);
    d->v2 = !strncmp(root->ns, "urn:oasis:names:tc:xliff:document:2", 35) || (!root->ns[0] && v && vn && v[0] == '2');
    if ((st = walk(d, root, err)) != MT_OK)
        goto fail;
    *state = d;
    return MT_OK;
fail:
    x_free(d);
    return st;
}

static int x_units(const void *state) { return ((const xdoc *)state)->n; }
static const char *x_unit(const void *state, int i) { return ((const xdoc *)state)->u[i].iu.text; }

static mt_status x_set(void *state, int i, const char *text, size_t len, const long *links, int n_links, mt_err *err)
{
    return srv_iunit_set(&((xdoc *)state)->u[i].iu, text, len, links, n_links, err);
}

static void x_target(void *state, const char *lang)
{
    xdoc *d = state;
    free(d->lang);
    d->lang = strdup(lang);                 /* out of memory: the language is not set, nothing else changes */
}

/* ---- writing: the source's bytes with edits spliced in ---------------------------------------- */

/* Bytes [start, end) of the source replaced by text (end == start: inserted). */
typedef struct {
    size_t start, end;
    char  *text;
    size_t n;
    int    seq;                 /* the order it was made: ties keep it */
} edit;

typedef struct {
    const xdoc *d;
    edit       *e;
    int         n;
    size_t      cap;
    mt_sbuf     b;              /* the edit being built */
    int         oom;
} writer;

static void put(writer *w, const char *s, size_t n) { w->oom |= mt_sb_add(&w->b, s, n); }

static void put_escaped(writer *w, const char *s, size_t n, int attr)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = s[i] == '&' ? "&amp;" : s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;"
                      : attr && s[i] == '"' ? "&quot;" : NULL;
        if (!e)
            continue;
        put(w, s + run, i - run);
        put(w, e, strlen(e));
        run = i + 1;
    }
    put(w, s + run, n - run);
}

/* The text built so far becomes the edit [start, end). */
static void commit(writer *w, size_t start, size_t end)
{
    if (w->oom || MT_GROW(w->e, w->cap, (size_t)w->n + 1)) {
        w->oom = 1;
        return;
    }
    w->e[w->n] = (edit){ start, end, w->b.p, w->b.n, w->n };
    w->n++;
    w->b = (mt_sbuf){ 0 };
}

/* Attribute name of el set to value: its value replaced, or the attribute added. */
static void set_attr(writer *w, const srv_xml_node *el, const char *name, const char *value)
{
    const xdoc *d = w->d;
    size_t n;
    const char *v = srv_xml_attr(d->x, el, name, &n);
    put_escaped(w, value, strlen(value), 1);
    if (v) {
        commit(w, (size_t)(v - d->src), (size_t)(v - d->src) + n);
        return;
    }
    mt_sbuf val = w->b;
    w->b = (mt_sbuf){ 0 };
    size_t at = el->tag_end - 1;            /* before ">" or "/>" */
    if (at > el->start && d->src[at - 1] == '/')
        at--;
    put(w, " ", 1);
    put(w, name, strlen(name));
    put(w, "=\"", 2);
    put(w, val.p ? val.p : "", val.n);
    put(w, "\"", 1);
    free(val.p);
    commit(w, at, at);
}

static void w_text(void *ctx, const char *s, size_t n) { put_escaped(ctx, s, n, 0); }

static void w_open(void *ctx, const void *node)
{
    writer *w = ctx;
    const srv_xml_node *el = node;
    put(w, w->d->src + el->start, el->tag_end - el->start);
}

static void w_close(void *ctx, const void *node)
{
    writer *w = ctx;
    const srv_xml_node *el = node;
    put(w, w->d->src + el->content_end, el->end - el->content_end);
}

static void w_whole(void *ctx, const void *node)
{
    writer *w = ctx;
    const srv_xml_node *el = node;
    put(w, w->d->src + el->start, el->end - el->start);
}

/* The element's name as written ("target", "xlf:source"): its start tag's bytes after "<". */
static size_t qname(const xdoc *d, const srv_xml_node *el, const char **name)
{
    const char *s = d->src + el->start + 1;
    size_t k = 0;
    while (el->start + 1 + k < el->tag_end && !strchr(" \t\r\n/>", s[k]))
        k++;
    *name = s;
    return k;
}

/* The line break and indentation before el, when it starts its line: *n their bytes. */
static const char *indentation(const xdoc *d, const srv_xml_node *el, size_t *n)
{
    size_t i = el->start;
    while (i > 0 && (d->src[i - 1] == ' ' || d->src[i - 1] == '\t'))
        i--;
    if (i == 0 || d->src[i - 1] != '\n') {
        *n = 0;
        return "";
    }
    i -= i >= 2 && d->src[i - 2] == '\r' ? 2 : 1;
    *n = el->start - i;
    return d->src + i;
}

/* t's start tag (without its ">" or "/>") with attribute state set to value (when not NULL). */
static void start_tag(writer *w, const srv_xml_node *t, const char *state)
{
    const xdoc *d = w->d;
    size_t e = t->tag_end - 1, n;
    if (e > t->start && d->src[e - 1] == '/')
        e--;
    const char *v = state ? srv_xml_attr(d->x, t, "state", &n) : NULL;
    if (v) {
        put(w, d->src + t->start, (size_t)(v - d->src) - t->start);
        put(w, state, strlen(state));
        put(w, v + n, (size_t)(d->src + e - (v + n)));
    } else {
        put(w, d->src + t->start, e - t->start);
        if (state) {
            put(w, " state=\"", 8);
            put(w, state, strlen(state));
            put(w, "\"", 1);
        }
    }
    put(w, ">", 1);
}

/* Unit u's translation into its target: an empty one filled, or a new one
 * after the source, on a line of its own as the source is. */
static void fill(writer *w, const xunit *u, const srv_iwriter *iw)
{
    const xdoc *d = w->d;
    const srv_xml_node *t = u->target;
    const char *state = d->v2 ? NULL : "needs-review-translation";
    if (t && t->tag_end < t->end) {         /* <target>...</target> */
        if (srv_iunit_write(&u->iu, &d->recs, iw))
            w->oom = 1;
        commit(w, t->tag_end, t->content_end);
        if (state)
            set_attr(w, t, "state", state);
        return;
    }
    const char *name;                       /* the end tag's name: the target's, or the source's prefix + "target" */
    size_t nn = qname(d, t ? t : u->source, &name), pre = 0;
    if (t) {                                /* <target/>: rewritten whole, its attributes kept */
        start_tag(w, t, state);
    } else {
        const char *colon = memchr(name, ':', nn);
        size_t in;
        const char *ind = indentation(d, u->source, &in);
        pre = colon ? (size_t)(colon - name) + 1 : 0;
        put(w, ind, in);
        put(w, "<", 1);
        put(w, name, pre);
        put(w, "target", 6);
        if (state)
            put(w, " state=\"needs-review-translation\"", 33);
        put(w, ">", 1);
    }
    if (srv_iunit_write(&u->iu, &d->recs, iw))
        w->oom = 1;
    put(w, "</", 2);
    put(w, name, t ? nn : pre);
    if (!t)
        put(w, "target", 6);
    put(w, ">", 1);
    commit(w, t ? t->start : u->after->end, t ? t->end : u->after->end);
}

static int by_place(const void *a, const void *b)
{
    const edit *x = a, *y = b;
    return x->start != y->start ? (x->start < y->start ? -1 : 1) : x->seq - y->seq;
}

static mt_status x_render(const void *state, char **out, size_t *len, mt_err *err)
{
    const xdoc *d = state;
    writer w = { .d = d };
    srv_iwriter iw = { w_text, w_open, w_close, w_whole, &w };
    int any = 0;
    for (int i = 0; i < d->n; i++) {
        const xunit *u = &d->u[i];
        if (!u->iu.tgt)
            continue;
        any = 1;
        fill(&w, u, &iw);
        if (u->segment)
            set_attr(&w, u->segment, "state", "translated");
    }
    if (d->lang && any && d->v2)
        set_attr(&w, srv_xml_root(d->x), "trgLang", d->lang);
    for (int f = 0; d->lang && any && f < d->n_files; f++)
        set_attr(&w, d->files[f], "target-language", d->lang);
    mt_sbuf o = { 0 };
    int oom = w.oom;
    if (!oom) {
        if (w.n)
            qsort(w.e, (size_t)w.n, sizeof *w.e, by_place);
        size_t at = 0;
        for (int i = 0; i < w.n && !oom; i++) {
            const edit *e = &w.e[i];
            if (e->start < at)              /* never: each edit has bytes of its own */
                continue;
            oom |= mt_sb_add(&o, d->src + at, e->start - at) || mt_sb_add(&o, e->text ? e->text : "", e->n);
            at = e->end;
        }
        oom |= mt_sb_add(&o, d->src + at, d->len - at) || mt_sb_add(&o, "", 0);
    }
    for (int i = 0; i < w.n; i++)
        free(w.e[i].text);
    free(w.e);
    free(w.b.p);
    if (oom) {
        free(o.p);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    *out = o.p;
    *len = o.n;
    return MT_OK;
}

const srv_doc_format srv_doc_xliff_format = { x_parse, x_units, x_unit, x_set, x_render, x_free, x_target };
