/* html: translation units of a page and their markup put back (html.h). */
#include "html.h"

#include <ctype.h>
#include <gumbo.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "inline.h"

/* ---- the parse tree's memory ------------------------------------------------------
 * gumbo allocates from an arena of ours and never frees: its own
 * gumbo_destroy_output recurses once per level of nesting, which a hostile
 * page deep enough would turn into a stack overflow on a server thread.  The
 * whole tree goes at once with the arena.  Growth reallocations are not
 * returned until then: a few times the page's size at most.
 *
 * The allocator is also where the parse is stopped.  gumbo's tree builder
 * walks its stack of open elements for many tags (the "in scope" checks, the
 * adoption agency, reconstructing formatting elements), so nested or misnested
 * markup costs time quadratic in the page: 100,000 nested <div> (500 KB) take
 * 36 s, and 1 MB of repeated "<div><b id=1>...<b id=200></div>x" a minute.
 * gumbo has no limit of its own (0.10.1), and no way out but its return; so
 * every ARENA_CHECK allocations the arena reads the thread's CPU clock, and
 * past the budget it longjmps back to srv_html_parse, which drops the arena
 * with everything gumbo built (gumbo keeps no other state: no globals, no
 * file, no lock).  Every element gumbo creates is an allocation, so the checks
 * come at least once per ARENA_CHECK elements. */
typedef struct arena_blk {
    struct arena_blk *next;
    size_t            used, cap;
    max_align_t       data[];
} arena_blk;

typedef struct {
    arena_blk      *head;
    unsigned long   n_alloc;
    struct timespec start;      /* the thread's CPU clock when the parse began */
    long            budget_ms;
    jmp_buf         bail;
} arena;

enum { ARENA_BLOCK = 256 * 1024, ARENA_CHECK = 256 };

static long cpu_ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void *arena_alloc(void *ud, size_t n)
{
    arena *a = ud;
    if (++a->n_alloc % ARENA_CHECK == 0 && cpu_ms_since(&a->start) > a->budget_ms)
        longjmp(a->bail, 1);
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    arena_blk *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
        /* zeroed: gumbo 0.10.1 reads memory it allocated and never wrote (valgrind
         * shows a conditional jump on it in a plain <table>); zeros keep the parse
         * deterministic */
        arena_blk *nb = calloc(1, sizeof *nb + cap);
        if (!nb)
            longjmp(a->bail, 2);                /* gumbo does not check */
        nb->used = 0;
        nb->cap = cap;
        if (n > ARENA_BLOCK / 4 && b) {         /* a big one: behind the current block */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    return p;
}

static void arena_free(void *ud, void *p) { (void)ud, (void)p; }

static void arena_release(arena_blk *b)
{
    while (b) {
        arena_blk *next = b->next;
        free(b);
        b = next;
    }
}

/* ---- what an element is ------------------------------------------------------------ */

/* Inline elements: they stay inside their sentence and are translated with it. */
static const GumboTag INLINE[] = {
    GUMBO_TAG_A, GUMBO_TAG_ABBR, GUMBO_TAG_ACRONYM, GUMBO_TAG_B, GUMBO_TAG_BDI, GUMBO_TAG_BDO, GUMBO_TAG_BIG,
    GUMBO_TAG_CITE, GUMBO_TAG_CODE, GUMBO_TAG_DATA, GUMBO_TAG_DEL, GUMBO_TAG_DFN, GUMBO_TAG_EM, GUMBO_TAG_FONT,
    GUMBO_TAG_I, GUMBO_TAG_INS, GUMBO_TAG_KBD, GUMBO_TAG_LABEL, GUMBO_TAG_MARK, GUMBO_TAG_NOBR, GUMBO_TAG_Q,
    GUMBO_TAG_RB, GUMBO_TAG_RP, GUMBO_TAG_RT, GUMBO_TAG_RTC, GUMBO_TAG_RUBY, GUMBO_TAG_S, GUMBO_TAG_SAMP,
    GUMBO_TAG_SMALL, GUMBO_TAG_SPAN, GUMBO_TAG_STRIKE, GUMBO_TAG_STRONG, GUMBO_TAG_SUB, GUMBO_TAG_SUP,
    GUMBO_TAG_TIME, GUMBO_TAG_TT, GUMBO_TAG_U, GUMBO_TAG_VAR, GUMBO_TAG_BLINK,
};
/* Never translated, and inline-level: kept whole at their place in the sentence. */
static const GumboTag OPAQUE[] = {
    GUMBO_TAG_SCRIPT, GUMBO_TAG_STYLE, GUMBO_TAG_TEMPLATE, GUMBO_TAG_TEXTAREA, GUMBO_TAG_SVG, GUMBO_TAG_MATH,
    GUMBO_TAG_IMG, GUMBO_TAG_WBR, GUMBO_TAG_INPUT, GUMBO_TAG_SELECT, GUMBO_TAG_IFRAME, GUMBO_TAG_EMBED,
    GUMBO_TAG_OBJECT, GUMBO_TAG_AUDIO, GUMBO_TAG_VIDEO, GUMBO_TAG_CANVAS, GUMBO_TAG_KEYGEN, GUMBO_TAG_METER,
    GUMBO_TAG_PROGRESS, GUMBO_TAG_NOSCRIPT, GUMBO_TAG_XMP, GUMBO_TAG_NOEMBED, GUMBO_TAG_NOFRAMES,
    GUMBO_TAG_PLAINTEXT,
};
/* Never translated, block-level: kept whole, a unit boundary. */
static const GumboTag FROZEN_BLOCK[] = { GUMBO_TAG_PRE, GUMBO_TAG_LISTING };
static const GumboTag VOID[] = {
    GUMBO_TAG_AREA, GUMBO_TAG_BASE, GUMBO_TAG_BR, GUMBO_TAG_COL, GUMBO_TAG_EMBED, GUMBO_TAG_HR, GUMBO_TAG_IMG,
    GUMBO_TAG_INPUT, GUMBO_TAG_LINK, GUMBO_TAG_META, GUMBO_TAG_PARAM, GUMBO_TAG_SOURCE, GUMBO_TAG_TRACK,
    GUMBO_TAG_WBR, GUMBO_TAG_KEYGEN, GUMBO_TAG_BASEFONT, GUMBO_TAG_BGSOUND, GUMBO_TAG_FRAME, GUMBO_TAG_IMAGE,
    GUMBO_TAG_MENUITEM,
};
/* Their text is written as it is (no escaping: the parser took it raw). */
static const GumboTag RAWTEXT[] = {
    GUMBO_TAG_SCRIPT, GUMBO_TAG_STYLE, GUMBO_TAG_XMP, GUMBO_TAG_IFRAME, GUMBO_TAG_NOEMBED, GUMBO_TAG_NOFRAMES,
    GUMBO_TAG_NOSCRIPT, GUMBO_TAG_PLAINTEXT,
};
/* Elements the parser adds by itself when they are missing: never written unless they were. */
static const GumboTag IMPLIED[] = { GUMBO_TAG_HTML, GUMBO_TAG_HEAD, GUMBO_TAG_BODY, GUMBO_TAG_TBODY,
                                    GUMBO_TAG_COLGROUP };
/* The attributes people read. */
static const char *const TEXT_ATTRS[] = { "title", "alt", "placeholder" };

#define IN(tag, set) in_set(tag, set, sizeof set / sizeof set[0])
static int in_set(GumboTag t, const GumboTag *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == t)
            return 1;
    return 0;
}

/* Our marks on the tree, in parse_flags above gumbo's bits: the tree is ours
 * once parsed (the arena's; never handed back to gumbo). */
enum { M_FROZEN = 1 << 20,      /* inside a notranslate or never-translated element: its own attributes too */
       M_PURE = 1 << 21,        /* an inline element holding only text, inline and opaque items */
       M_FROZEN_IN = 1 << 22,   /* its children are frozen (it is never translated inside) */
       M_DISPLACED = 1 << 23,   /* out of its bytes' order (mark_displaced): its span is not its own */
       M_IGNORED = 1 << 24 };   /* named by the caller's ignore list: a point wherever it stands */

enum kind { K_TEXT, K_INLINE, K_OPAQUE, K_BLOCK, K_SKIP, K_NONE };

static const GumboVector *children_of(const GumboNode *n)
{
    if (n->type == GUMBO_NODE_DOCUMENT)
        return &n->v.document.children;
    if (n->type == GUMBO_NODE_ELEMENT || n->type == GUMBO_NODE_TEMPLATE)
        return &n->v.element.children;
    return NULL;
}

static enum kind kind_of(const GumboNode *n)
{
    switch (n->type) {
    case GUMBO_NODE_TEXT: case GUMBO_NODE_WHITESPACE: case GUMBO_NODE_CDATA:
        return K_TEXT;
    case GUMBO_NODE_COMMENT:
        return K_OPAQUE;
    case GUMBO_NODE_ELEMENT: case GUMBO_NODE_TEMPLATE: {
        GumboTag t = n->v.element.tag;
        int inline_level = IN(t, INLINE) || IN(t, OPAQUE);
        if (n->parse_flags & M_IGNORED)
            return K_OPAQUE;
        if (n->parse_flags & M_FROZEN)
            return inline_level ? K_OPAQUE : K_SKIP;
        if (IN(t, OPAQUE) || n->type == GUMBO_NODE_TEMPLATE)
            return K_OPAQUE;
        if (IN(t, INLINE) && (n->parse_flags & M_PURE))
            return K_INLINE;
        return IN(t, FROZEN_BLOCK) ? K_SKIP : K_BLOCK;
    }
    default:
        return K_NONE;
    }
}

static const GumboAttribute *attr(const GumboNode *n, const char *name)
{
    return gumbo_get_attribute(&n->v.element.attributes, name);
}

/* translate="no" (and back with "yes"), or the class notranslate. */
static int says_notranslate(const GumboNode *n, int inherited)
{
    const GumboAttribute *a = attr(n, "translate");
    int no = inherited;
    if (a)
        no = strcasecmp(a->value, "no") == 0 ? 1 : (strcasecmp(a->value, "yes") == 0 || !a->value[0]) ? 0 : no;
    if ((a = attr(n, "class"))) {
        for (const char *p = a->value; *p;) {
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f')
                p++;
            size_t k = strcspn(p, " \t\n\r\f");
            if (k == 11 && !strncmp(p, "notranslate", 11))
                no = 1;
            p += k;
        }
    }
    return no;
}

/* The caller's ignore list (srv_html_parse_ignoring). */
typedef struct {
    const char *const *names;
    int                n;
} ignore_list;

static const char *tag_name(const GumboNode *n, char *buf, size_t cap);

static int ignored(const GumboNode *n, const ignore_list *ig)
{
    char buf[256];
    const char *name = ig->n ? tag_name(n, buf, sizeof buf) : NULL;
    for (int i = 0; name && i < ig->n; i++)
        if (!strcasecmp(name, ig->names[i]))
            return 1;
    return 0;
}

/* The marks, top-down then bottom-up (the depth is bounded before this runs). */
static void mark(GumboNode *n, int frozen, const ignore_list *ig)
{
    const GumboVector *ch = children_of(n);
    if (n->type == GUMBO_NODE_ELEMENT || n->type == GUMBO_NODE_TEMPLATE) {
        GumboTag t = n->v.element.tag;
        if (!frozen && ignored(n, ig))
            n->parse_flags |= M_IGNORED;
        if (!frozen && (says_notranslate(n, 0) || (n->parse_flags & M_IGNORED)))
            frozen = 1;
        if (frozen)
            n->parse_flags |= M_FROZEN;
        if (frozen || IN(t, OPAQUE) || IN(t, FROZEN_BLOCK) || n->type == GUMBO_NODE_TEMPLATE ||
            n->v.element.tag_namespace != GUMBO_NAMESPACE_HTML) {
            n->parse_flags |= M_FROZEN_IN;
            frozen = 1;
        }
    }
    int pure = 1;
    for (unsigned i = 0; ch && i < ch->length; i++) {
        GumboNode *c = ch->data[i];
        mark(c, frozen, ig);
        enum kind k = kind_of(c);
        pure &= k == K_TEXT || k == K_OPAQUE || k == K_INLINE;
    }
    if (n->type == GUMBO_NODE_ELEMENT && IN(n->v.element.tag, INLINE) && pure)
        n->parse_flags |= M_PURE;
}

/* ---- the units ----------------------------------------------------------------------- */

typedef struct {
    srv_iunit iu;               /* its text, whitespace, records, translation */
    /* a text unit: the run of children [first, first + count) of container */
    const GumboNode *container;
    unsigned first, count;
    const GumboAttribute *attr; /* an attribute unit: this one */
} unit;

struct srv_html {
    const char  *src;           /* the page as given */
    size_t       len;
    const char  *in;            /* what gumbo parsed: src without its byte order mark, or copy */
    size_t       in_len;
    char        *copy;          /* "<body>" + the fragment, when it is parsed as a document's body */
    GumboOptions opts;
    arena        arena;
    GumboOutput *out;
    int          fragment;
    int          bom;           /* src starts with a UTF-8 byte order mark, which the parser does not see */
    unit        *u;
    int          n;
    size_t       cap;
    srv_irecs    recs;          /* every unit's inline elements and points */
};

#define is_html_space srv_markup_space
#define is_blank srv_blank

static unit *new_unit(srv_html *h)
{
    if (mt_grow(&h->u, &h->cap, (size_t)h->n + 1, sizeof *h->u, 16))
        return NULL;
    unit *u = &h->u[h->n++];
    memset(u, 0, sizeof *u);
    return u;
}

/* s[0..n) with each run of HTML whitespace made one space, as a text unit's
 * (a newline inside a title would end its sentence for the splitter). */
static char *collapsed(const char *s, size_t n)
{
    char *t = malloc(n + 1), *o = t;
    if (!t)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (!is_html_space((unsigned char)s[i]))
            *o++ = s[i];
        else if (o > t && o[-1] != ' ')
            *o++ = ' ';
    }
    *o = 0;
    return t;
}

/* title, alt and placeholder of an element that is not frozen: units of their own. */
static int attr_units(srv_html *h, const GumboNode *n)
{
    if (n->type != GUMBO_NODE_ELEMENT || (n->parse_flags & M_FROZEN))
        return 0;
    const GumboVector *av = &n->v.element.attributes;
    for (unsigned i = 0; i < av->length; i++) {
        const GumboAttribute *a = av->data[i];
        int wanted = 0;
        for (size_t k = 0; k < sizeof TEXT_ATTRS / sizeof TEXT_ATTRS[0]; k++)
            wanted |= strcasecmp(a->name, TEXT_ATTRS[k]) == 0;
        if (!wanted || is_blank(a->value) || gumbo_get_attribute(av, a->name) != a)
            continue;
        const char *v = a->value, *end = v + strlen(v);
        while (is_html_space(*v))
            v++;
        while (end > v && is_html_space(end[-1]))
            end--;
        unit *u = new_unit(h);
        if (!u || !(u->iu.text = collapsed(v, (size_t)(end - v))) ||
            !(u->iu.lead = strndup(a->value, (size_t)(v - a->value))) || !(u->iu.trail = strdup(end)))
            return -1;
        u->attr = a;
        u->iu.first_rec = h->recs.n;
    }
    return 0;
}

static void collect_items(srv_html *h, srv_ibuild *b, const GumboNode *n);

static void collect_item(srv_html *h, srv_ibuild *b, const GumboNode *c)
{
    enum kind k = kind_of(c);
    if (k == K_TEXT) {
        srv_ib_text(b, c->v.text.text, strlen(c->v.text.text));
    } else if (k == K_OPAQUE) {
        if (srv_ib_point(b, c) < 0 || attr_units(h, c))
            b->oom = 1;
    } else if (k == K_INLINE) {
        int ws = b->ws, r = srv_ib_open(b, c);
        if (r < 0 || attr_units(h, c)) {
            b->oom = 1;
            return;
        }
        collect_items(h, b, c);
        srv_ib_close(b, r, ws);
    }
}

static void collect_items(srv_html *h, srv_ibuild *b, const GumboNode *n)
{
    const GumboVector *ch = children_of(n);
    for (unsigned i = 0; ch && i < ch->length && !b->oom; i++)
        collect_item(h, b, ch->data[i]);
}

/* The run [first, first + count) of n's children: a unit when it has words. */
static int collect_run(srv_html *h, const GumboNode *n, unsigned first, unsigned count)
{
    const GumboVector *ch = children_of(n);
    srv_ibuild b = SRV_IBUILD(&h->recs);
    int unit0 = h->n;
    for (unsigned i = first; i < first + count && !b.oom; i++)
        collect_item(h, &b, ch->data[i]);
    unit tu = { .container = n, .first = first, .count = count };
    int words = srv_ib_finish(&b, &tu.iu);
    if (words <= 0)             /* nothing to translate: written as it is */
        return words;
    /* the text unit goes before the attribute units collected inside it */
    unit *u = new_unit(h);
    if (!u) {
        srv_iunit_free(&tu.iu);
        return -1;
    }
    memmove(&h->u[unit0 + 1], &h->u[unit0], sizeof *u * (size_t)(h->n - 1 - unit0));
    h->u[unit0] = tu;
    return 0;
}

static int is_run_kind(enum kind k) { return k == K_TEXT || k == K_INLINE || k == K_OPAQUE; }

/* The end of the run of inline content starting at child i: the collector and
 * the writer cut a container's children at the same places through this. */
static unsigned run_end(const GumboVector *ch, unsigned i)
{
    while (i < ch->length && is_run_kind(kind_of(ch->data[i])))
        i++;
    return i;
}

/* A block container: its runs of inline content and its blocks. */
static int collect_block(srv_html *h, const GumboNode *n)
{
    if (attr_units(h, n))
        return -1;
    const GumboVector *ch = children_of(n);
    for (unsigned i = 0; ch && i < ch->length;) {
        const GumboNode *c = ch->data[i];
        enum kind k = kind_of(c);
        if (is_run_kind(k)) {
            unsigned j = run_end(ch, i);
            if (collect_run(h, n, i, j - i))
                return -1;
            i = j;
            continue;
        }
        if (k == K_BLOCK && collect_block(h, c))
            return -1;
        if (k == K_SKIP && attr_units(h, c))
            return -1;
        i++;
    }
    return 0;
}

/* The node after n in a preorder walk of root's subtree (NULL: the walk is
 * over), without recursion (the depth limit is checked by such a walk, before
 * anything recurses); *depth follows it: +1 into a child, -1 a level up. */
static const GumboNode *preorder_next(const GumboNode *root, const GumboNode *n, int *depth)
{
    const GumboVector *ch = children_of(n);
    if (ch && ch->length) {
        ++*depth;
        return ch->data[0];
    }
    for (;;) {
        if (n == root)
            return NULL;
        const GumboNode *p = n->parent;
        const GumboVector *pc = children_of(p);
        if (n->index_within_parent + 1 < pc->length)
            return pc->data[n->index_within_parent + 1];
        n = p;
        --*depth;
    }
}

/* The deepest nesting. */
static int tree_depth(const GumboNode *root)
{
    int d = 0, max = 0;
    for (const GumboNode *n = root; n; n = preorder_next(root, n, &d))
        if (d > max)
            max = d;
    return max;
}

/* A page is a document when it starts (after spaces and comments) with a doctype or <html>. */
static int is_document(const char *s, size_t n)
{
    size_t i = 0;
    if (n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
        i = 3;
    for (;;) {
        while (i < n && is_html_space((unsigned char)s[i]))
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
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        size_t m = strlen(starts[k]);
        /* a tag name ends at whitespace, / or > (<body<1 is an element of another name) */
        if (n - i > m && !strncasecmp(s + i, starts[k], m) &&
            (k == 0 || is_html_space((unsigned char)s[i + m]) || s[i + m] == '/' || s[i + m] == '>'))
            return 1;
    }
    return 0;
}

/* HTML elements that end foreign content (the HTML standard's list for a start
 * tag "in foreign content"; font only with color, face or size, left out here). */
static const GumboTag BREAKOUT[] = {
    GUMBO_TAG_B, GUMBO_TAG_BIG, GUMBO_TAG_BLOCKQUOTE, GUMBO_TAG_BODY, GUMBO_TAG_BR, GUMBO_TAG_CENTER,
    GUMBO_TAG_CODE, GUMBO_TAG_DD, GUMBO_TAG_DIV, GUMBO_TAG_DL, GUMBO_TAG_DT, GUMBO_TAG_EM, GUMBO_TAG_EMBED,
    GUMBO_TAG_H1, GUMBO_TAG_H2, GUMBO_TAG_H3, GUMBO_TAG_H4, GUMBO_TAG_H5, GUMBO_TAG_H6, GUMBO_TAG_HEAD,
    GUMBO_TAG_HR, GUMBO_TAG_I, GUMBO_TAG_IMG, GUMBO_TAG_LI, GUMBO_TAG_LISTING, GUMBO_TAG_MENU, GUMBO_TAG_META,
    GUMBO_TAG_NOBR, GUMBO_TAG_OL, GUMBO_TAG_P, GUMBO_TAG_PRE, GUMBO_TAG_RUBY, GUMBO_TAG_S, GUMBO_TAG_SMALL,
    GUMBO_TAG_SPAN, GUMBO_TAG_STRONG, GUMBO_TAG_STRIKE, GUMBO_TAG_SUB, GUMBO_TAG_SUP, GUMBO_TAG_TABLE,
    GUMBO_TAG_TT, GUMBO_TAG_U, GUMBO_TAG_UL, GUMBO_TAG_VAR,
};

/* Whether a fragment parse left an HTML element inside svg or math: gumbo
 * 0.10.1 follows the HTML standard of its day, whose fragment parser kept
 * <svg><p> in the svg (a "fragment case"); the standard since, browsers and
 * html5lib end the svg there, as in a document.  Iterative (preorder_next):
 * the depth is not checked yet. */
static int foreign_breakout(const GumboNode *root)
{
    int d = 0;
    for (const GumboNode *n = root; n; n = preorder_next(root, n, &d))
        if (n->type == GUMBO_NODE_ELEMENT && n->v.element.tag_namespace != GUMBO_NAMESPACE_HTML &&
            IN(n->v.element.tag, BREAKOUT))
            return 1;
    return 0;
}

/* The fragment parsed again as the body of a document ("<body>" + it), where
 * gumbo ends foreign content as the standard now does.  The <body> is ours:
 * made implied, so it is never written.  0, or -1 out of memory. */
static int reparse_as_body(srv_html *h)
{
    static const char open[] = "<body>";
    size_t k = sizeof open - 1;
    if (!(h->copy = malloc(k + h->in_len)))
        return -1;
    memcpy(h->copy, open, k);
    memcpy(h->copy + k, h->in, h->in_len);
    arena_release(h->arena.head);           /* the first tree: nothing points into it now */
    h->arena.head = NULL;
    h->opts.fragment_context = GUMBO_TAG_LAST;
    h->in = h->copy + k;
    h->out = gumbo_parse_with_options(&h->opts, h->copy, k + h->in_len);
    if (!h->out)
        return -1;
    const GumboVector *top = &h->out->root->v.element.children;
    for (unsigned i = 0; i < top->length; i++) {
        GumboNode *b = top->data[i];
        if (b->type == GUMBO_NODE_ELEMENT && b->v.element.tag == GUMBO_TAG_BODY &&
            b->v.element.original_tag.data == h->copy) {
            b->v.element.original_tag.length = 0;
            b->parse_flags |= GUMBO_INSERTION_BY_PARSER;
        }
    }
    return 0;
}

/* M_DISPLACED on every node whose bytes come before bytes of a node ahead of it
 * in tree order (*seen: the furthest source offset so far): the parser moved
 * it, or moved those ahead of it.  gumbo 0.10.1 flags what the adoption agency
 * moves, not what foster parenting does: "<table>t</table>" is the text t and
 * then the table, whose bytes hold the t. */
static void mark_displaced(GumboNode *n, size_t *seen)
{
    enum { SYNTHETIC = GUMBO_INSERTION_BY_PARSER | GUMBO_INSERTION_IMPLIED |
                       GUMBO_INSERTION_RECONSTRUCTED_FORMATTING_ELEMENT | GUMBO_INSERTION_ADOPTION_AGENCY_CLONED };
    if (n->type != GUMBO_NODE_DOCUMENT && !(n->parse_flags & SYNTHETIC)) {
        size_t at = n->type == GUMBO_NODE_ELEMENT || n->type == GUMBO_NODE_TEMPLATE ? n->v.element.start_pos.offset
                                                                                    : n->v.text.start_pos.offset;
        if (at < *seen)
            n->parse_flags |= M_DISPLACED;
        else
            *seen = at;
    }
    const GumboVector *ch = children_of(n);
    for (unsigned i = 0; ch && i < ch->length; i++)
        mark_displaced(ch->data[i], seen);
}

mt_status srv_html_parse(const char *src, size_t len, int max_depth, srv_html **out, mt_err *err)
{
    return srv_html_parse_ignoring(src, len, max_depth, NULL, 0, out, err);
}

mt_status srv_html_parse_ignoring(const char *src, size_t len, int max_depth, const char *const *ignore, int n_ignore,
                                  srv_html **out, mt_err *err)
{
    *out = NULL;
    if (len > UINT32_MAX / 2)
        return mt_err_set(err, MT_ERR_TOO_LONG, "the HTML is over 2 GB");
    const char *nul = memchr(src, 0, len);
    if (nul)        /* the parser would drop or replace it, and no page has one */
        return mt_err_set(err, MT_ERR_INPUT, "the HTML holds a NUL byte at offset %zu", (size_t)(nul - src));
    srv_html *h = calloc(1, sizeof *h);
    if (!h)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    h->src = src;
    h->len = len;
    h->opts = kGumboDefaultOptions;
    h->opts.allocator = arena_alloc;
    h->opts.deallocator = arena_free;
    h->opts.userdata = &h->arena;
    h->arena.budget_ms = SRV_HTML_PARSE_CPU_MS;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &h->arena.start);
    h->opts.max_errors = 0;                     /* we do not read them */
    /* a browser drops the byte order mark as it decodes; gumbo would take it for text */
    h->bom = len >= 3 && !memcmp(src, "\xef\xbb\xbf", 3);
    h->fragment = !is_document(src + 3 * h->bom, len - 3 * (size_t)h->bom);
    if (h->fragment)
        h->opts.fragment_context = GUMBO_TAG_BODY;
    mt_status st;
    int bailed = setjmp(h->arena.bail);
    if (bailed) {                               /* from arena_alloc, inside gumbo */
        st = bailed == 2 ? mt_err_set(err, MT_ERR_NOMEM, "out of memory")
                         : mt_err_set(err, MT_ERR_TOO_LONG, "the HTML takes over %d ms to parse (deeply nested or "
                                      "misnested markup); simplify it or send it in parts", SRV_HTML_PARSE_CPU_MS);
        goto fail;
    }
    h->in = src + 3 * h->bom;
    h->in_len = len - 3 * (size_t)h->bom;
    h->out = gumbo_parse_with_options(&h->opts, h->in, h->in_len);
    if ((h->out && h->fragment && foreign_breakout(h->out->document) && reparse_as_body(h)) || !h->out) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    int depth = tree_depth(h->out->document);
    if (depth > max_depth + 2) {                /* html and body do not count */
        st = mt_err_set(err, MT_ERR_TOO_LONG, "the HTML nests %d elements deep; the limit is %d", depth - 2,
                        max_depth);
        goto fail;
    }
    mark(h->out->document, 0, &(ignore_list){ ignore, n_ignore });
    size_t seen = 0;
    mark_displaced(h->out->document, &seen);
    if (collect_block(h, h->out->document)) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    *out = h;
    return MT_OK;
fail:
    srv_html_free(h);
    return st;
}

void srv_html_free(srv_html *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->n; i++)
        srv_iunit_free(&h->u[i].iu);
    free(h->u);
    free(h->recs.r);
    arena_release(h->arena.head);
    free(h->copy);
    free(h);
}

int srv_html_units(const srv_html *h) { return h->n; }
const char *srv_html_unit(const srv_html *h, int i) { return i >= 0 && i < h->n ? h->u[i].iu.text : NULL; }

mt_status srv_html_set(srv_html *h, int i, const char *text, size_t len, const long *links, int n_links, mt_err *err)
{
    if (i < 0 || i >= h->n || n_links < 0)
        return mt_err_set(err, MT_ERR_INPUT, "no unit %d", i);
    return srv_iunit_set(&h->u[i].iu, text, len, links, n_links, err);
}

/* ---- writing it out ------------------------------------------------------------------ */

typedef struct {
    const srv_html *h;
    mt_sbuf out;
    int     oom;
    int     next_text;          /* the next text unit, in document order */
    int     next_attr;          /* the next attribute unit */
    int     at_eof;             /* a script the end of the input closed was written: see end_tag */
} writer;

static void put(writer *w, const char *s, size_t n) { w->oom |= mt_sb_add(&w->out, s, n); }
static void puts_(writer *w, const char *s) { put(w, s, strlen(s)); }

static void put_escaped(writer *w, const char *s, size_t n, int in_attr)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = s[i] == '&' ? "&amp;" : s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;"
                      : in_attr && s[i] == '"' ? "&quot;" : NULL;
        if (!e)
            continue;
        put(w, s + run, i - run);
        puts_(w, e);
        run = i + 1;
    }
    put(w, s + run, n - run);
}

/* The element's name: gumbo's, or as written for a tag it does not know (into buf). */
static const char *tag_name(const GumboNode *n, char *buf, size_t cap)
{
    const char *s = gumbo_normalized_tagname(n->v.element.tag);
    if (s && *s)
        return s;
    GumboStringPiece t = n->v.element.original_tag;
    if (!t.length || t.data[0] != '<' || t.length < 2 || t.data[1] == '/')
        return NULL;
    gumbo_tag_from_original_text(&t);
    size_t k = 0;
    for (size_t i = 0; i < t.length; i++) {     /* as the tokenizer reads it: NUL is U+FFFD */
        if (k + 4 > cap)
            return NULL;
        if (t.data[i])
            buf[k++] = (char)tolower((unsigned char)t.data[i]);
        else
            memcpy(buf + k, "\xef\xbf\xbd", 3), k += 3;
    }
    buf[k] = 0;
    return k ? buf : NULL;
}

/* Left out of the output: an html, head, body, tbody or colgroup the parser supplied. */
static int implied(const GumboNode *n)
{
    /* (an implied <html> or <body> given attributes by a later tag is written, with them) */
    return !n->v.element.original_tag.length && (n->parse_flags & GUMBO_INSERTION_BY_PARSER) &&
           IN(n->v.element.tag, IMPLIED) && !n->v.element.attributes.length;
}

static int self_closing(const GumboNode *n)
{
    const GumboStringPiece *t = &n->v.element.original_tag;
    return t->length >= 2 && t->data[t->length - 2] == '/' && t->data[t->length - 1] == '>';
}

/* The attribute units of n, in order (the writer meets elements in the order they were collected). */
static const unit *attr_unit_for(writer *w, const GumboAttribute *a)
{
    const srv_html *h = w->h;
    while (w->next_attr < h->n && !h->u[w->next_attr].attr)
        w->next_attr++;
    if (w->next_attr < h->n && h->u[w->next_attr].attr == a)
        return &h->u[w->next_attr++];
    return NULL;
}

/* A translated value, in the quotes it had (double when it had none). */
static void put_attr_value(writer *w, const unit *u)
{
    const GumboStringPiece *o = &u->attr->original_value;
    char q = o->length && o->data[0] == '\'' ? '\'' : '"';
    const srv_iunit *iu = &u->iu;
    const char *t = iu->tgt ? iu->tgt : iu->text;
    size_t n = iu->tgt ? iu->tgt_len : strlen(iu->text), run = 0;
    put(w, &q, 1);
    puts_(w, iu->lead);
    for (size_t i = 0; i <= n; i++) {       /* & < > escaped; and the quote: &quot; or &#39; */
        if (i < n && t[i] != '\'')
            continue;
        put_escaped(w, t + run, i - run, q == '"');
        if (i < n)
            puts_(w, q == '\'' ? "&#39;" : "'");
        run = i + 1;
    }
    puts_(w, iu->trail);
    put(w, &q, 1);
}

/* Whether every attribute of e was written in its start tag: a second <html> or
 * <body> tag adds its attributes to the first element, and then the tag is
 * written from the attribute list. */
static int attrs_in_tag(const GumboElement *e)
{
    const char *t = e->original_tag.data, *end = t + e->original_tag.length;
    for (unsigned i = 0; i < e->attributes.length; i++) {
        const GumboAttribute *a = e->attributes.data[i];
        if (!a->original_name.data || a->original_name.data < t || a->original_name.data >= end)
            return 0;
    }
    return 1;
}

/* An element the parser made of an end tag (</p>, </br>): that end tag as it
 * was written, which makes the element again (also inside svg, where "<p>"
 * would end the svg); NULL for any other element. */
static const GumboStringPiece *converted_end_tag(const GumboNode *n)
{
    const GumboElement *e = &n->v.element;
    if (!(n->parse_flags & GUMBO_INSERTION_CONVERTED_FROM_END_TAG))
        return NULL;
    if (e->original_tag.length >= 2 && e->original_tag.data[1] == '/')
        return &e->original_tag;
    if (!e->original_tag.length && e->original_end_tag.length >= 2 && e->original_end_tag.data[0] == '<' &&
        e->original_end_tag.data[1] == '/' && !e->children.length)
        return &e->original_end_tag;
    return NULL;
}

static void start_tag(writer *w, const GumboNode *n)
{
    const GumboElement *e = &n->v.element;
    const GumboVector *av = &e->attributes;
    const GumboStringPiece *conv = converted_end_tag(n);
    if (conv && conv != &e->original_tag) {     /* </p> in svg: gumbo kept no start tag */
        put(w, conv->data, conv->length);
        return;
    }
    if (e->original_tag.length && attrs_in_tag(e)) {    /* as written, translated values spliced in */
        const char *t = e->original_tag.data, *end = t + e->original_tag.length, *at = t;
        for (unsigned i = 0; i < av->length; i++) {
            const GumboAttribute *a = av->data[i];
            const unit *u = attr_unit_for(w, a);
            const char *v = a->original_value.data;
            if (!u || !v || v < at || v + a->original_value.length > end)
                continue;
            put(w, at, (size_t)(v - at));
            put_attr_value(w, u);
            at = v + a->original_value.length;
        }
        put(w, at, (size_t)(end - at));
        return;
    }
    char buf[256];
    const char *name = tag_name(n, buf, sizeof buf);
    if (implied(n) || !name)
        return;
    put(w, "<", 1);
    puts_(w, name);
    for (unsigned i = 0; i < av->length; i++) {
        const GumboAttribute *a = av->data[i];
        const unit *u = attr_unit_for(w, a);
        put(w, " ", 1);
        puts_(w, a->name);
        put(w, "=", 1);
        if (u) {
            put_attr_value(w, u);
        } else {
            put(w, "\"", 1);
            put_escaped(w, a->value, strlen(a->value), 1);
            put(w, "\"", 1);
        }
    }
    put(w, ">", 1);
}

/* 1 when a script's text leaves the tokenizer in its "script data double
 * escaped" state: after "<!--" then "<script", where even "</script>" is text.
 * (The states of HTML's tokenizer for script data, the dashes' subtleties left out.) */
static int ends_double_escaped(const GumboNode *script)
{
    enum { DATA, ESCAPED, DOUBLE } st = DATA;
    const GumboVector *ch = &script->v.element.children;
    for (unsigned c = 0; c < ch->length; c++) {
        const GumboNode *t = ch->data[c];
        if (t->type != GUMBO_NODE_TEXT && t->type != GUMBO_NODE_WHITESPACE && t->type != GUMBO_NODE_CDATA)
            continue;
        const char *s = t->v.text.text;
        for (size_t i = 0, n = strlen(s); i < n; i++) {
            if (st != DATA && i + 3 <= n && !memcmp(s + i, "-->", 3))
                st = DATA;
            else if (st == DATA && i + 4 <= n && !memcmp(s + i, "<!--", 4))
                st = ESCAPED;
            else if (st == ESCAPED && i + 8 <= n && !strncasecmp(s + i, "<script", 7) && strchr(" \t\n\f/>", s[i + 7]))
                st = DOUBLE;
            else if (st == DOUBLE && i + 9 <= n && !strncasecmp(s + i, "</script", 8) && strchr(" \t\n\f/>", s[i + 8]))
                st = ESCAPED;
        }
    }
    return st == DOUBLE;
}

static void end_tag(writer *w, const GumboNode *n)
{
    const GumboElement *e = &n->v.element;
    char buf[256];
    const char *name = tag_name(n, buf, sizeof buf);
    /* an end tag the parser made an element of (</p>, </br>) was written as it was: it makes it again */
    int converted = converted_end_tag(n) != NULL;
    /* A script with no end tag of its own ran to the end of the input.  When its text
     * ends in the double-escaped state (after "<!--" and "<script"), "</script>" would
     * not end it but be more of its text, and so would every later end tag: write
     * none, and let the end of the output close them all, as it did the input's.
     * (Anything else after it, a foster-parented table, cannot be written back at
     * all: no serializer can; tests/html_check.h html_eof_escaped_script.) */
    int own_end = e->original_end_tag.length && !(n->parse_flags & GUMBO_INSERTION_IMPLICIT_END_TAG);
    if (e->tag == GUMBO_TAG_SCRIPT && e->tag_namespace == GUMBO_NAMESPACE_HTML && !own_end && ends_double_escaped(n))
        w->at_eof = 1;
    if (w->at_eof || converted || e->tag == GUMBO_TAG_PLAINTEXT || IN(e->tag, VOID) || implied(n) || (e->tag_namespace != GUMBO_NAMESPACE_HTML && self_closing(n)))
        return;
    if (e->original_end_tag.length && !(n->parse_flags & GUMBO_INSERTION_IMPLICIT_END_TAG) &&
        e->original_end_tag.data[0] == '<' && e->original_end_tag.data[1] == '/') {
        put(w, e->original_end_tag.data, e->original_end_tag.length);
        return;
    }
    if (name) {
        put(w, "</", 2);
        puts_(w, name);
        put(w, ">", 1);
    }
}

enum { NOT_CLEAN = (int)((unsigned)GUMBO_INSERTION_BY_PARSER | GUMBO_INSERTION_IMPLICIT_END_TAG |
                         GUMBO_INSERTION_RECONSTRUCTED_FORMATTING_ELEMENT | GUMBO_INSERTION_ADOPTION_AGENCY_CLONED |
                         GUMBO_INSERTION_ADOPTION_AGENCY_MOVED | GUMBO_INSERTION_FOSTER_PARENTED |
                         GUMBO_INSERTION_CONVERTED_FROM_END_TAG | GUMBO_INSERTION_FROM_IMAGE | M_DISPLACED) };

/* The source bytes [*a, *b) of element n when they hold exactly its subtree: every
 * element written, in place, ended by its own end tag (or self-closing / void). */
static int clean_span(const srv_html *h, const GumboNode *n, size_t *a, size_t *b)
{
    const GumboElement *e = &n->v.element;
    if ((n->parse_flags & NOT_CLEAN) || !e->original_tag.length)
        return 0;
    size_t s = (size_t)(e->original_tag.data - h->in), end;
    if (e->original_end_tag.length && e->original_end_tag.data[0] == '<' && e->original_end_tag.data[1] == '/')
        end = (size_t)(e->original_end_tag.data - h->in) + e->original_end_tag.length;
    else if ((IN(e->tag, VOID) || self_closing(n)) && !e->children.length)
        end = s + e->original_tag.length;   /* "<r/>" of an HTML element holds what follows: not this */
    else
        return 0;
    if (s > h->in_len || end > h->in_len || end < s)
        return 0;
    const GumboVector *ch = children_of(n);
    for (unsigned i = 0; ch && i < ch->length; i++) {
        const GumboNode *c = ch->data[i];
        size_t ca, cb;
        if (c->type == GUMBO_NODE_ELEMENT || c->type == GUMBO_NODE_TEMPLATE) {
            if (!clean_span(h, c, &ca, &cb) || ca < s || cb > end)
                return 0;
        } else if ((c->parse_flags & NOT_CLEAN) || c->v.text.start_pos.offset < s ||
                   c->v.text.start_pos.offset > end) {
            return 0;
        }
    }
    *a = s;
    *b = end;
    return 1;
}

static void write_node(writer *w, const GumboNode *n);

static void write_children(writer *w, const GumboNode *n)
{
    const GumboVector *ch = children_of(n);
    for (unsigned i = 0; ch && i < ch->length; i++)
        write_node(w, ch->data[i]);
}

static int has_attr_unit(const writer *w, const GumboNode *n)
{
    const srv_html *h = w->h;
    int k = w->next_attr;
    while (k < h->n && !h->u[k].attr)
        k++;
    if (k >= h->n)
        return 0;
    const GumboVector *av = &n->v.element.attributes;
    for (unsigned i = 0; i < av->length; i++)
        if (h->u[k].attr == av->data[i])
            return 1;
    return 0;
}

/* A node as it was: text escaped (raw inside script and the like), elements
 * with their tags; a frozen element from its source bytes when they are clean. */
static void write_node(writer *w, const GumboNode *n)
{
    switch (n->type) {
    case GUMBO_NODE_TEXT: case GUMBO_NODE_WHITESPACE: {
        const GumboNode *p = n->parent;
        const char *t = n->v.text.text;
        if (p && p->type == GUMBO_NODE_ELEMENT && IN(p->v.element.tag, RAWTEXT) &&
            p->v.element.tag_namespace == GUMBO_NAMESPACE_HTML)   /* svg's <script> holds data, not raw text */
            puts_(w, t);
        else
            put_escaped(w, t, strlen(t), 0);
        return;
    }
    case GUMBO_NODE_CDATA:
        puts_(w, "<![CDATA[");
        puts_(w, n->v.text.text);
        puts_(w, "]]>");
        return;
    case GUMBO_NODE_COMMENT: {
        const GumboStringPiece *o = &n->v.text.original_text;
        /* as written: <!-- -->, <!-->, <!--->, or a bogus comment (<!x>, <?x>, </3>);
         * else (a comment the page's end cut, "<!--/>" among them) closed here, so
         * that it does not swallow what the writer puts after it */
        int dashes = o->length >= 4 && !memcmp(o->data, "<!--", 4);
        if ((dashes && o->length >= 7 && !memcmp(o->data + o->length - 3, "-->", 3)) ||
            (dashes && (o->length == 5 || o->length == 6) && o->data[o->length - 1] == '>' &&
             (o->length == 5 || o->data[4] == '-')) ||
            (!dashes && o->length >= 3 && o->data[0] == '<' && o->data[o->length - 1] == '>' &&
             !memchr(o->data + 1, '>', o->length - 2))) {
            put(w, o->data, o->length);
        } else {
            puts_(w, "<!--");
            puts_(w, n->v.text.text);
            puts_(w, "-->");
        }
        return;
    }
    case GUMBO_NODE_ELEMENT: case GUMBO_NODE_TEMPLATE: {
        size_t a, b;
        if ((n->parse_flags & M_FROZEN_IN) && !has_attr_unit(w, n) && clean_span(w->h, n, &a, &b)) {
            put(w, w->h->in + a, b - a);
            return;
        }
        start_tag(w, n);
        write_children(w, n);
        end_tag(w, n);
        return;
    }
    default:
        return;
    }
}

/* ---- a translated unit ---------------------------------------------------------------- */

static void w_text(void *ctx, const char *s, size_t n) { put_escaped(ctx, s, n, 0); }
static void w_open(void *ctx, const void *node) { start_tag(ctx, node); }
static void w_close(void *ctx, const void *node) { end_tag(ctx, node); }
static void w_whole(void *ctx, const void *node) { write_node(ctx, node); }

static void write_unit(writer *w, const unit *u)
{
    srv_iwriter iw = { w_text, w_open, w_close, w_whole, w };
    if (srv_iunit_write(&u->iu, &w->h->recs, &iw))
        w->oom = 1;
}

static void write_block(writer *w, const GumboNode *n);

/* A run of inline content: its unit translated, or as it was. */
static void write_run(writer *w, const GumboNode *n, unsigned first, unsigned count)
{
    const srv_html *h = w->h;
    while (w->next_text < h->n && h->u[w->next_text].attr)
        w->next_text++;
    const unit *u = w->next_text < h->n ? &h->u[w->next_text] : NULL;
    if (u && u->container == n && u->first == first && u->iu.tgt) {
        w->next_text++;
        write_unit(w, u);
        return;
    }
    if (u && u->container == n && u->first == first)
        w->next_text++;
    const GumboVector *ch = children_of(n);
    for (unsigned i = first; i < first + count; i++)
        write_node(w, ch->data[i]);
}

static void write_block(writer *w, const GumboNode *n)
{
    const GumboVector *ch = children_of(n);
    for (unsigned i = 0; ch && i < ch->length;) {
        const GumboNode *c = ch->data[i];
        enum kind k = kind_of(c);
        if (is_run_kind(k)) {
            unsigned j = run_end(ch, i);
            write_run(w, n, i, j - i);
            i = j;
            continue;
        }
        if (k == K_BLOCK) {
            start_tag(w, c);
            write_block(w, c);
            end_tag(w, c);
        } else {
            write_node(w, c);
        }
        i++;
    }
}

/* The doctype as written: "<!doctype" up to its ">". */
static void write_doctype(writer *w)
{
    const srv_html *h = w->h;
    if (!h->out->document->v.document.has_doctype)
        return;
    for (size_t i = 0; i + 9 <= h->len; i++) {
        if (strncasecmp(h->src + i, "<!doctype", 9) != 0)
            continue;
        const char *e = memchr(h->src + i, '>', h->len - i);
        if (!e) {                               /* unterminated: it ran to the end */
            put(w, h->src + i, h->len - i);
            put(w, ">", 1);
            return;
        }
        size_t end = (size_t)(e - h->src) + 1;
        while (end < h->len && is_html_space((unsigned char)h->src[end]))  /* the parser drops these */
            end++;
        put(w, h->src + i, end - i);
        return;
    }
}

mt_status srv_html_render(const srv_html *h, char **out, size_t *len, mt_err *err)
{
    writer w = { .h = h };
    *out = NULL;
    *len = 0;
    if (mt_sb_reserve(&w.out, h->len + h->len / 2 + 16) != 0)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (h->bom)
        put(&w, h->src, 3);
    write_doctype(&w);
    write_block(&w, h->out->document);
    if (w.oom || mt_sb_add(&w.out, "", 0)) {
        free(w.out.p);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    *out = w.out.p;
    *len = w.out.n;
    return MT_OK;
}
