/* xml: translation units of an XML fragment and their markup put back (xml.h).
 *
 * The tree is xml_tree.c's, over a copy of the text inside a root of ours;
 * every node keeps its byte range there, so the output is that copy with
 * each translated run of inline content spliced in (and the root's tags left
 * out).  The words and the inline tags of a run go through inline.h, as
 * html.c's do. */
#include "xml.h"

#include <stdlib.h>
#include <string.h>

#include "inline.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "xml_tree.h"

/* The root around the fragment: a name no one uses, so that a tag list cannot meet it. */
static const char ROOT_OPEN[] = "<mtserve-fragment>", ROOT_CLOSE[] = "</mtserve-fragment>";

enum kind { K_NONE, K_TEXT, K_INLINE, K_OPAQUE, K_BLOCK };

typedef struct {
    srv_iunit iu;
    size_t    start, end;       /* the run's bytes in x->buf */
} unit;

struct srv_xmarkup {
    char        *buf;           /* declaration, ROOT_OPEN, the rest of the text, ROOT_CLOSE */
    size_t       len;
    size_t       prefix;        /* the declaration's bytes (and a byte order mark's) */
    srv_xml_doc *doc;
    const srv_xml_tags *tags;   /* during the parse only */
    unit        *u;
    int          n;
    size_t       cap;
    srv_irecs    recs;
};

/* ---- what a node is ---------------------------------------------------------------- */

static int listed(const char *name, size_t n, const char *const *list, int count)
{
    for (int i = 0; i < count; i++)
        if (strlen(list[i]) == n && !memcmp(list[i], name, n))
            return 1;
    return 0;
}

/* The element's name as written ("x:b"): its start tag's bytes after "<". */
static size_t qname(const srv_xmarkup *x, const srv_xml_node *n, const char **name)
{
    const char *s = x->buf + n->start + 1;
    size_t k = 0;
    while (n->start + 1 + k < n->tag_end && !strchr(" \t\r\n/>", s[k]))
        k++;
    *name = s;
    return k;
}

/* Characters of its own other than whitespace. */
static int has_text(const srv_xml_node *n)
{
    for (const srv_xml_node *c = n->children; c; c = c->next)
        if (c->type == SRV_XML_TEXT && !c->cdata && !srv_blank(c->text))
            return 1;
    return 0;
}

static int is_run_kind(int k) { return k == K_TEXT || k == K_INLINE || k == K_OPAQUE; }

/* Every node's kind in its mark; in_text: an ancestor up to the nearest block
 * has characters beside its children (outline detection's "inline").  The
 * depth is bounded by the parse (SRV_XML_MAX_DEPTH). */
static void mark(const srv_xmarkup *x, srv_xml_node *n, int in_text, int is_root)
{
    if (n->type != SRV_XML_ELEMENT) {
        n->mark = n->type == SRV_XML_TEXT && !n->cdata ? K_TEXT : K_OPAQUE;
        return;
    }
    const srv_xml_tags *t = x->tags;
    const char *name;
    size_t nl = qname(x, n, &name);
    if (!is_root && listed(name, nl, t->ignore, t->n_ignore)) {
        n->mark = K_OPAQUE;
        return;
    }
    int inner = in_text || has_text(n), pure = 1;
    for (srv_xml_node *c = n->children; c; c = c->next) {
        mark(x, c, inner, 0);
        pure &= is_run_kind(c->mark);
    }
    int want_inline = listed(name, nl, t->non_splitting, t->n_non_splitting) ||
                      (!listed(name, nl, t->splitting, t->n_splitting) && (!t->outline || in_text));
    n->mark = !is_root && want_inline && pure ? K_INLINE : K_BLOCK;
}

/* ---- the units ----------------------------------------------------------------------- */

static int collect_items(srv_xmarkup *x, srv_ibuild *b, const srv_xml_node *first, const srv_xml_node *end)
{
    for (const srv_xml_node *c = first; c != end && !b->oom; c = c->next) {
        if (c->mark == K_TEXT) {
            srv_ib_text(b, c->text, c->text_len);
        } else if (c->mark == K_OPAQUE) {
            srv_ib_point(b, c);
        } else if (c->mark == K_INLINE) {
            int ws = b->ws, r = srv_ib_open(b, c);
            if (r >= 0 && !collect_items(x, b, c->children, NULL))
                srv_ib_close(b, r, ws);
        }
    }
    return b->oom ? -1 : 0;
}

/* The run of children [first, end): a unit when it has words. */
static int collect_run(srv_xmarkup *x, const srv_xml_node *first, const srv_xml_node *end, const srv_xml_node *last)
{
    srv_ibuild b = SRV_IBUILD(&x->recs);
    collect_items(x, &b, first, end);
    unit nu = { .start = first->start, .end = last->end };
    int words = srv_ib_finish(&b, &nu.iu);
    if (words <= 0)
        return words;
    if (mt_grow(&x->u, &x->cap, (size_t)x->n + 1, sizeof *x->u, 16)) {
        srv_iunit_free(&nu.iu);
        return -1;
    }
    x->u[x->n++] = nu;
    return 0;
}

/* A block: its runs of inline content and its blocks. */
static int collect_block(srv_xmarkup *x, const srv_xml_node *n)
{
    for (const srv_xml_node *c = n->children; c;) {
        if (is_run_kind(c->mark)) {
            const srv_xml_node *last = c, *e = c->next;
            while (e && is_run_kind(e->mark))
                last = e, e = e->next;
            if (collect_run(x, c, e, last))
                return -1;
            c = e;
            continue;
        }
        if (c->mark == K_BLOCK && collect_block(x, c))
            return -1;
        c = c->next;
    }
    return 0;
}

/* The bytes of an XML declaration at the start (after a byte order mark): they must stay first. */
static size_t decl_end(const char *s, size_t n)
{
    size_t i = n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3) ? 3 : 0;
    if (n - i < 6 || memcmp(s + i, "<?xml", 5) || !strchr(" \t\r\n", s[i + 5]) || !s[i + 5])
        return i;
    const char *e = memmem(s + i, n - i, "?>", 2);
    return e ? (size_t)(e - s) + 2 : i;
}

static mt_status wrap(srv_xmarkup *x, const char *src, size_t len, mt_err *err)
{
    size_t o = sizeof ROOT_OPEN - 1, c = sizeof ROOT_CLOSE - 1;
    x->prefix = decl_end(src, len);
    x->len = len + o + c;
    if (!(x->buf = malloc(x->len + 1)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    memcpy(x->buf, src, x->prefix);
    memcpy(x->buf + x->prefix, ROOT_OPEN, o);
    memcpy(x->buf + x->prefix + o, src + x->prefix, len - x->prefix);
    memcpy(x->buf + len + o, ROOT_CLOSE, c);
    x->buf[x->len] = 0;
    return MT_OK;
}

mt_status srv_xmarkup_parse(const char *src, size_t len, const srv_xml_tags *tags, int max_depth, srv_xmarkup **out,
                            mt_err *err)
{
    *out = NULL;
    srv_xmarkup *x = calloc(1, sizeof *x);
    if (!x)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    mt_status st = wrap(x, src, len, err);
    if (st == MT_OK)                        /* + 1: our root */
        st = srv_xml_parse_flags("the text", x->buf, x->len, max_depth + 1, SRV_XML_KEEP_MISC, &x->doc, err);
    if (st != MT_OK)
        goto fail;
    /* the tree is ours: its marks are this reader's to set */
    srv_xml_node *root = (srv_xml_node *)srv_xml_root(x->doc);
    x->tags = tags;
    mark(x, root, 0, 1);
    x->tags = NULL;
    if (collect_block(x, root)) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    *out = x;
    return MT_OK;
fail:
    srv_xmarkup_free(x);
    return st;
}

void srv_xmarkup_free(srv_xmarkup *x)
{
    if (!x)
        return;
    for (int i = 0; i < x->n; i++)
        srv_iunit_free(&x->u[i].iu);
    free(x->u);
    free(x->recs.r);
    srv_xml_free(x->doc);
    free(x->buf);
    free(x);
}

int srv_xmarkup_units(const srv_xmarkup *x) { return x->n; }
const char *srv_xmarkup_unit(const srv_xmarkup *x, int i) { return i >= 0 && i < x->n ? x->u[i].iu.text : NULL; }

mt_status srv_xmarkup_set(srv_xmarkup *x, int i, const char *text, size_t len, const long *links, int n_links,
                          mt_err *err)
{
    if (i < 0 || i >= x->n || n_links < 0)
        return mt_err_set(err, MT_ERR_INPUT, "no unit %d", i);
    return srv_iunit_set(&x->u[i].iu, text, len, links, n_links, err);
}

/* ---- writing it out ------------------------------------------------------------------ */

typedef struct {
    const srv_xmarkup *x;
    mt_sbuf out;
    int     oom;
} writer;

static void put(writer *w, const char *s, size_t n) { w->oom |= mt_sb_add(&w->out, s, n); }

static void w_text(void *ctx, const char *s, size_t n)
{
    writer *w = ctx;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = s[i] == '&' ? "&amp;" : s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;" : NULL;
        if (!e)
            continue;
        put(w, s + run, i - run);
        put(w, e, strlen(e));
        run = i + 1;
    }
    put(w, s + run, n - run);
}

static void w_open(void *ctx, const void *node)
{
    writer *w = ctx;
    const srv_xml_node *n = node;
    put(w, w->x->buf + n->start, n->tag_end - n->start);
}

static void w_close(void *ctx, const void *node)
{
    writer *w = ctx;
    const srv_xml_node *n = node;
    put(w, w->x->buf + n->content_end, n->end - n->content_end);
}

static void w_whole(void *ctx, const void *node)
{
    writer *w = ctx;
    const srv_xml_node *n = node;
    put(w, w->x->buf + n->start, n->end - n->start);
}

mt_status srv_xmarkup_render(const srv_xmarkup *x, char **out, size_t *len, mt_err *err)
{
    writer w = { .x = x };
    srv_iwriter iw = { w_text, w_open, w_close, w_whole, &w };
    const srv_xml_node *root = srv_xml_root(x->doc);
    *out = NULL;
    *len = 0;
    put(&w, x->buf, x->prefix);
    size_t at = root->tag_end;                  /* the root's own tags are not written */
    for (int i = 0; i < x->n; i++) {
        const unit *u = &x->u[i];
        if (!u->iu.tgt)
            continue;
        put(&w, x->buf + at, u->start - at);
        if (srv_iunit_write(&u->iu, &x->recs, &iw))
            w.oom = 1;
        at = u->end;
    }
    put(&w, x->buf + at, root->content_end - at);
    if (w.oom || mt_sb_add(&w.out, "", 0)) {
        free(w.out.p);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    *out = w.out.p;
    *len = w.out.n;
    return MT_OK;
}
