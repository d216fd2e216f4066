/* doc_markdown: Markdown, CommonMark with GFM tables and strikethrough
 * (document.h, format md), on Debian's libcmark-gfm.
 *
 * cmark finds the blocks; their source positions give each leaf block's
 * lines in the file's own bytes.  Units: paragraphs (in list items and block
 * quotes too), headings (ATX and setext), table cells.  Never translated,
 * kept byte for byte: code blocks (fenced and indented), HTML blocks,
 * thematic breaks, link reference definitions, YAML front matter
 * ("---" ... "---" or "..." on top, which cmark never sees), and every
 * byte between the units.
 *
 * cmark's inline positions are not exact (they miss the indentation of
 * continuation lines, code spans' backticks, autolinks), so a block's inline
 * nodes are found in its bytes here: its lines' content (each line past its
 * block quote markers and indentation) walked with cmark's inline tree,
 * each text node's literal matched through its backslash escapes and entity
 * references, each construct's delimiters read where they stand.  A block
 * whose bytes do not match cmark's tree is left as it is (tests count them
 * on the CommonMark spec's examples).  Inside a unit (markup/inline.h, as
 * markup/xml.c does): emphasis, strong, strikethrough and links are inline
 * elements placed by the alignment with their delimiters as written (a
 * link's destination and title byte for byte); code spans, autolinks, raw
 * inline HTML, images and hard line breaks are opaque points written whole.
 * A soft line break is a space: a translated paragraph is one line.
 * Each translated unit is read back by cmark: when its emphasis would not
 * pair again (CommonMark's flanking rules, delimiters next to punctuation
 * inside a word), it is written without emphasis and strikethrough, its
 * text exact.  Emphasis around no word (only code, say) is left out, its
 * content kept; raw HTML that would open an HTML block first on a line goes
 * after the line's first word; a hard break before any word is left out.
 * Kept untranslated, as their translation could change the blocks: a block
 * with a code span, raw HTML or a link destination over lines, a paragraph
 * right after a table (a line the table did not take as a row), the header
 * of a table that cuts a paragraph short (cmark-gfm misplaces it).
 * The translation's text is escaped for Markdown (\* \_ \` \[ \] \< \\ \~,
 * \& before a name, \| in a table cell, a line's first # > - + = or "1."
 * kept from starting a block).
 *
 * Refused: a NUL byte or bytes that are not UTF-8 (MT_ERR_INPUT), inline
 * nesting deeper than max_depth, a unit over max_unit_bytes (MT_ERR_TOO_LONG).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>
#include <cmark-gfm/houdini.h>

#include "doc_format.h"
#include "markup/inline.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

/* A record's source bytes: an element's start [os, oe) and end [cs, ce)
 * delimiters; a point is [os, ce) whole. */
typedef struct {
    size_t os, oe, cs, ce;
    int    brk;             /* a hard line break: the next character starts a line */
    int    emph;            /* emphasis, strong or strikethrough (not a link) */
    int    first;           /* the spans of what it holds: [first, its own index) */
} mspan;

typedef struct {
    srv_iunit iu;
    size_t    start, end;   /* the bytes it replaces */
    int       cell;         /* in a table cell: | escaped */
    int       line_start;   /* it starts a line: a block marker at its start escaped */
    int       atx;          /* in an ATX heading: # escaped (a closing sequence otherwise) */
} munit;

typedef struct {
    const char *src;
    size_t      len;
    size_t     *ls;         /* [n_lines + 1] each line's start (ls[n_lines] = len) */
    int         n_lines;
    int         base_line;  /* lines before what cmark read (front matter) */
    mspan      *sp;
    int         nsp;
    size_t      cap_sp;
    munit      *u;
    int         n;
    size_t      cap_u;
    srv_irecs   recs;
    /* the block being read: its content's bytes, each with its place in src */
    mt_sbuf     s;
    size_t     *map;
    size_t      cap_map;
    int         atx;        /* the block is an ATX heading */
    int         max_depth;
    cmark_strbuf ent;
} md_doc;

/* ---- the block's content ---------------------------------------------------------------- */

static int push(md_doc *m, char c, size_t at)
{
    if (MT_GROW(m->map, m->cap_map, m->s.n + 2) || mt_sb_add(&m->s, &c, 1))
        return -1;
    m->map[m->s.n - 1] = at;
    m->map[m->s.n] = at + 1;
    return 0;
}

/* Line l's bytes [a, end of line) onto the content (the line ending left out). */
static int push_line(md_doc *m, int l, size_t a)
{
    size_t e = m->ls[l + 1];
    if (e > m->ls[l] && m->src[e - 1] == '\n')
        e--;
    if (e > a && m->src[e - 1] == '\r')
        e--;
    for (size_t i = a; i < e; i++)
        if (push(m, m->src[i], i))
            return -1;
    return 0;
}

/* Where the content of a continuation line l starts: past quotes block
 * quote markers (fewer on a lazy line) and the indentation. */
static size_t continuation(const md_doc *m, int l, int quotes)
{
    size_t i = m->ls[l], e = m->ls[l + 1];
    for (int q = 0; q < quotes; q++) {
        size_t j = i;
        while (j < e && (m->src[j] == ' ' || m->src[j] == '\t'))
            j++;
        if (j >= e || m->src[j] != '>')
            break;
        i = j + 1;
        if (i < e && m->src[i] == ' ')
            i++;
    }
    while (i < e && (m->src[i] == ' ' || m->src[i] == '\t'))
        i++;
    return i;
}

static int is_type(cmark_node *n, const char *t) { return !strcmp(cmark_node_get_type_string(n), t); }

/* The content of leaf block n into m->s and m->map: 0, 1 (none), -1 (memory). */
static int block_bytes(md_doc *m, cmark_node *n)
{
    int l0 = cmark_node_get_start_line(n) - 1 + m->base_line, l1 = cmark_node_get_end_line(n) - 1 + m->base_line;
    int col = cmark_node_get_start_column(n), quotes = 0;
    m->s.n = 0;
    m->atx = 0;
    if (l0 < m->base_line || l0 >= m->n_lines || col < 1)
        return 1;
    if (l1 < l0 || l1 >= m->n_lines)
        l1 = m->n_lines - 1;
    size_t a = m->ls[l0] + (size_t)col - 1, le = m->ls[l0 + 1];
    if (a >= le)
        return 1;
    if (is_type(n, "table_cell")) {
        size_t e = m->ls[l0] + (size_t)cmark_node_get_end_column(n);
        for (size_t i = a; i < e && i < le && m->src[i] != '\n' && m->src[i] != '\r'; i++)
            if (push(m, m->src[i], i))
                return -1;
        return 0;
    }
    if (cmark_node_get_type(n) == CMARK_NODE_HEADING) {
        size_t i = a;
        while (i < le && m->src[i] == ' ')
            i++;
        if (i < le && m->src[i] == '#') {       /* ATX: one line, past its #s */
            while (i < le && m->src[i] == '#')
                i++;
            m->atx = 1;
            return push_line(m, l0, i);
        }
    }
    for (cmark_node *p = cmark_node_parent(n); p; p = cmark_node_parent(p))
        quotes += cmark_node_get_type(p) == CMARK_NODE_BLOCK_QUOTE;
    if (push_line(m, l0, a))
        return -1;
    for (int l = l0 + 1; l <= l1; l++)
        if (push(m, '\n', m->ls[l] - 1) || push_line(m, l, continuation(m, l, quotes)))
            return -1;
    return 0;
}

/* ---- matching cmark's inline tree against the bytes ---------------------------------------- */

typedef struct {
    md_doc     *m;
    srv_ibuild *b;
    size_t      c;          /* the cursor in m->s */
    int         depth;
    int         link_kind;  /* the last link's end: 0 a shortcut "[text]", 1 "[text][]", 2 "[text][label]", 3 "(...)" */
    int         oom;
} matcher;

static int ascii_punct(char c)
{
    return c > 0x20 && c < 0x7f && !((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'));
}

/* The literal lit[0..n) at the cursor, through escapes and references: 0, or -1. */
static int match_text(matcher *x, const char *lit, size_t n)
{
    const char *s = x->m->s.p;
    size_t len = x->m->s.n, k = 0;
    while (k < n) {
        size_t c = x->c;
        if (c >= len)
            return -1;
        if (s[c] == '\\' && c + 1 < len && ascii_punct(s[c + 1]) && s[c + 1] == lit[k]) {
            x->c += 2, k++;
            continue;
        }
        if (s[c] == '&') {
            cmark_strbuf *e = &x->m->ent;
            cmark_strbuf_clear(e);
            bufsize_t used = houdini_unescape_ent(e, (const uint8_t *)s + c + 1, (bufsize_t)(len - c - 1));
            if (used > 0 && (size_t)e->size <= n - k && !memcmp(e->ptr, lit + k, (size_t)e->size)) {
                x->c += 1 + (size_t)used, k += (size_t)e->size;
                continue;
            }
        }
        if (s[c] != lit[k])
            return -1;
        x->c++, k++;
    }
    return 0;
}

static int new_span(matcher *x, size_t os, size_t oe, size_t cs, size_t ce, int brk)
{
    md_doc *m = x->m;
    if (MT_GROW(m->sp, m->cap_sp, (size_t)m->nsp + 1)) {
        x->oom = 1;
        return -1;
    }
    m->sp[m->nsp] = (mspan){ m->map[os], m->map[oe - 1] + 1, m->map[cs], m->map[ce - 1] + 1, brk, 0, m->nsp };
    return m->nsp++;
}

/* A point over content [a, e) (e > a). */
static void point(matcher *x, size_t a, size_t e, int brk)
{
    int k = new_span(x, a, e, a, e, brk);
    if (k >= 0 && x->b && srv_ib_point(x->b, (const void *)(intptr_t)(k + 1)) < 0)
        x->oom = 1;
}

/* A link's end past "]" at the cursor: "(destination title)", "[label]", or
 * nothing (a shortcut).  The cursor goes past it. */
static void link_end(matcher *x)
{
    const char *s = x->m->s.p;
    size_t n = x->m->s.n, c = x->c;
    x->link_kind = 0;
    if (c < n && s[c] == '(') {
        int depth = 0;
        char quote = 0;
        for (size_t i = c + 1; i < n; i++) {
            if (s[i] == '\\' && i + 1 < n) {
                i++;
            } else if (quote) {
                quote = s[i] == quote ? 0 : quote;
            } else if ((s[i] == '"' || s[i] == '\'') && strchr(" \t\n", s[i - 1])) {
                quote = s[i];               /* a title's (an apostrophe in a URL is not) */
            } else if (s[i] == '<') {
                const char *gt = memchr(s + i, '>', n - i);
                i = gt ? (size_t)(gt - s) : i;
            } else if (s[i] == '(') {
                depth++;
            } else if (s[i] == ')' && depth-- == 0) {
                x->c = i + 1;
                x->link_kind = 3;
                return;
            }
        }
    } else if (c < n && s[c] == '[') {
        for (size_t i = c + 1; i < n; i++) {
            if (s[i] == '\\' && i + 1 < n)
                i++;
            else if (s[i] == ']') {
                x->link_kind = i == c + 1 ? 1 : 2;
                x->c = i + 1;
                return;
            }
        }
    }
}

static int match_nodes(matcher *x, cmark_node *first);

/* A run of n characters ch at the cursor (n == 0: any length, returned). */
static size_t delims(matcher *x, char ch, size_t n)
{
    const char *s = x->m->s.p;
    size_t k = 0;
    while (x->c + k < x->m->s.n && s[x->c + k] == ch && (!n || k < n))
        k++;
    return n && k < n ? 0 : k;
}

/* An element whose delimiters are runs of a character (emphasis, strong,
 * strikethrough) or a link ("[" ... "]" and its end). */
static int element(matcher *x, cmark_node *nd, int link)
{
    const char *s = x->m->s.p;
    size_t os = x->c, k = 0, ws = x->b ? (size_t)x->b->ws : 0;
    int first = x->m->nsp;
    char ch = x->c < x->m->s.n ? s[x->c] : 0;
    cmark_node_type t = cmark_node_get_type(nd);
    if (link)
        k = ch == '[' ? 1 : 0;
    else if (t == CMARK_NODE_EMPH || t == CMARK_NODE_STRONG)
        k = ch == '*' || ch == '_' ? delims(x, ch, t == CMARK_NODE_STRONG ? 2 : 1) : 0;
    else
        k = ch == '~' ? delims(x, '~', 0) : 0;
    if (!k)
        return -1;
    x->c += k;
    size_t oe = x->c;
    int r = x->b ? srv_ib_open(x->b, NULL) : -1;
    if (x->b && r < 0)
        return x->oom = 1, -1;
    int rc = match_nodes(x, cmark_node_first_child(nd));
    if (rc)
        return rc;                      /* -2: too deep */
    size_t cs = x->c;
    if (link) {
        if (x->c >= x->m->s.n || s[x->c] != ']')
            return -1;
        x->c++;
        link_end(x);
    } else if (!delims(x, ch, k)) {
        return -1;
    } else {
        x->c += k;
    }
    int sp = new_span(x, os, oe, cs, x->c, 0);
    if (sp < 0)
        return -1;
    x->m->sp[sp].emph = !link;
    x->m->sp[sp].first = first;
    if (x->b) {
        x->b->recs->r[r].node = (const void *)(intptr_t)(sp + 1);
        srv_ib_close(x->b, r, (int)ws);
    }
    return 0;
}

/* A construct kept whole: its bytes from the cursor on, by its kind. */
static int opaque(matcher *x, cmark_node *nd)
{
    const char *s = x->m->s.p;
    size_t n = x->m->s.n, a = x->c;
    cmark_node_type t = cmark_node_get_type(nd);
    if (t == CMARK_NODE_CODE) {
        size_t k = delims(x, '`', 0), i = a + k;
        if (!k)
            return -1;
        while (i < n) {                         /* the next run of exactly k backticks */
            size_t j = i;
            while (j < n && s[j] == '`')
                j++;
            if (j - i == k)
                break;
            i = j > i ? j : i + 1;
        }
        if (i >= n)
            return -1;
        x->c = i + k;
    } else if (t == CMARK_NODE_HTML_INLINE) {
        const char *lit = cmark_node_get_literal(nd);
        size_t ln = lit ? strlen(lit) : 0;
        if (!ln || n - a < ln || memcmp(s + a, lit, ln))
            return -1;
        x->c += ln;
    } else if (t == CMARK_NODE_LINK) {          /* an autolink */
        const char *gt = memchr(s + a, '>', n - a);
        if (!gt)
            return -1;
        x->c = (size_t)(gt - s) + 1;
    } else {                                    /* an image: its alt text read, not kept */
        if (n - a < 2 || s[a] != '!' || s[a + 1] != '[')
            return -1;
        srv_ibuild *b = x->b;
        x->b = NULL;
        x->c += 2;
        int rc = match_nodes(x, cmark_node_first_child(nd));
        x->b = b;
        if (rc)
            return rc;
        if (x->c >= n || s[x->c] != ']')
            return -1;
        x->c++;
        link_end(x);
    }
    point(x, a, x->c, 0);
    return 0;
}

static int line_break(matcher *x, int hard)
{
    const char *s = x->m->s.p;
    size_t n = x->m->s.n, a = x->c;
    if (hard && x->c < n && s[x->c] == '\\')
        x->c++;
    while (x->c < n && (s[x->c] == ' ' || s[x->c] == '\t'))
        x->c++;
    if (x->c >= n || s[x->c] != '\n')
        return -1;
    x->c++;
    if (!hard) {
        if (x->b)
            srv_ib_text(x->b, " ", 1);
        return 0;
    }
    if (x->c >= n)
        return -1;
    /* the break whole, up to the next line's content: its quote markers and indentation too */
    int k = new_span(x, a, x->c + 1, a, x->c + 1, 1);
    if (k < 0)
        return -1;
    x->m->sp[k].ce = x->m->sp[k].oe = x->m->map[x->c];
    if (x->b) {                     /* a space before it: the words on both sides stay apart */
        srv_ib_text(x->b, " ", 1);
        if (srv_ib_point(x->b, (const void *)(intptr_t)(k + 1)) < 0)
            x->oom = 1;
    }
    return 0;
}

/* A link: an inline element, but for a shortcut "[text]" or collapsed
 * "[text][]" reference, whose text is its label: kept whole. */
static int link(matcher *x, cmark_node *nd)
{
    size_t a = x->c;
    int nsp = x->m->nsp;
    srv_ibuild *b = x->b;
    x->b = NULL;
    int rc = element(x, nd, 1);
    x->b = b;
    x->m->nsp = nsp;
    if (rc)
        return rc;
    if (x->link_kind >= 2) {
        x->c = a;
        return element(x, nd, 1);
    }
    point(x, a, x->c, 0);
    return 0;
}

static int match_node(matcher *x, cmark_node *nd)
{
    const char *s = x->m->s.p;
    switch (cmark_node_get_type(nd)) {
    case CMARK_NODE_TEXT: {
        const char *lit = cmark_node_get_literal(nd);
        size_t n = lit ? strlen(lit) : 0, a = x->c;
        if (match_text(x, lit ? lit : "", n))
            return -1;
        if (x->b)
            srv_ib_text(x->b, lit, n);
        (void)a;
        return 0;
    }
    case CMARK_NODE_SOFTBREAK:
        return line_break(x, 0);
    case CMARK_NODE_LINEBREAK:
        return line_break(x, 1);
    case CMARK_NODE_CODE:
    case CMARK_NODE_HTML_INLINE:
    case CMARK_NODE_IMAGE:
        return opaque(x, nd);
    case CMARK_NODE_LINK:
        if (x->c < x->m->s.n && s[x->c] == '<')
            return opaque(x, nd);
        return link(x, nd);
    case CMARK_NODE_EMPH:
    case CMARK_NODE_STRONG:
        return element(x, nd, 0);
    default:
        return is_type(nd, "strikethrough") ? element(x, nd, 0) : -1;
    }
}

static int match_nodes(matcher *x, cmark_node *first)
{
    if (++x->depth > x->m->max_depth)
        return -2;
    for (cmark_node *c = first; c; c = cmark_node_next(c)) {
        int rc = match_node(x, c);
        if (rc)
            return x->depth--, rc;
        if (x->oom)
            return x->depth--, -1;
    }
    x->depth--;
    return 0;
}

/* ---- the units -------------------------------------------------------------------------- */

/* A construct of the block (spans [sp0, m->nsp)) but a hard break runs over
 * lines: a code span, raw HTML, a link's destination.  Moved to another place
 * in the line, its own lines could begin blocks ("-|" a table's delimiter
 * row), so such a block is not translated. */
static int multiline(const md_doc *m, int sp0)
{
    for (int k = sp0; k < m->nsp; k++) {
        const mspan *p = &m->sp[k];
        if (!p->brk && (memchr(m->src + p->os, '\n', p->ce - p->os) || memchr(m->src + p->os, '\r', p->ce - p->os)))
            return 1;
    }
    return 0;
}

/* Leaf block n: a unit when its bytes match its tree and it has words. */
static mt_status leaf(md_doc *m, cmark_node *n, const srv_doc_limits *lim, mt_err *err)
{
    int rc = block_bytes(m, n);
    if (rc)
        return rc < 0 ? mt_err_set(err, MT_ERR_NOMEM, "out of memory") : MT_OK;
    cmark_node *first = cmark_node_first_child(n), *before = cmark_node_previous(n);
    if (!first || !m->s.n)
        return MT_OK;
    if (before && is_type(before, "table") && cmark_node_get_start_line(n) == cmark_node_get_end_line(before) + 1)
        return MT_OK;                   /* a line the table did not take as a row: translated, it would be one */
    cmark_node *row = cmark_node_parent(n), *table = row ? cmark_node_parent(row) : NULL;
    cmark_node *para = table ? cmark_node_previous(table) : NULL;
    if (row && is_type(row, "table_header") && para && cmark_node_get_start_line(para) == 0)
        return MT_OK;                   /* a table that cut a paragraph short: cmark puts its header a line early */
    srv_ibuild b = SRV_IBUILD(&m->recs);
    int sp0 = m->nsp;
    matcher x = { .m = m, .b = &b };
    while (x.c < m->s.n && (m->s.p[x.c] == ' ' || m->s.p[x.c] == '\t'))
        x.c++;
    size_t start = x.c;
    rc = match_nodes(&x, first);
    munit u = { .start = m->map[start], .atx = m->atx, .cell = is_type(n, "table_cell"),
                .line_start = !m->atx };       /* a table's first cell may start its line */
    int words = srv_ib_finish(&b, &u.iu);
    if (!rc && multiline(m, sp0))
        rc = -1;                            /* kept as it is */
    if (rc || x.oom || words <= 0 || x.c == start) {
        if (words > 0)
            srv_iunit_free(&u.iu);
        m->recs.n = b.rec0;
        m->nsp = sp0;
        if (x.oom || words < 0)
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        if (rc == -2)
            return mt_err_set(err, MT_ERR_TOO_LONG, "line %d: inline markup nested deeper than %d",
                              cmark_node_get_start_line(n) + m->base_line, m->max_depth);
        return MT_OK;                       /* no words, or bytes cmark read otherwise: kept as they are */
    }
    u.end = m->map[x.c - 1] + 1;
    size_t tl = strlen(u.iu.text);
    if (tl > lim->max_unit_bytes) {
        srv_iunit_free(&u.iu);
        return mt_err_set(err, MT_ERR_TOO_LONG, "line %d: a block of %zu bytes; the limit is %zu (max_unit_bytes)",
                          cmark_node_get_start_line(n) + m->base_line, tl, lim->max_unit_bytes);
    }
    if (MT_GROW(m->u, m->cap_u, (size_t)m->n + 1)) {
        srv_iunit_free(&u.iu);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    m->u[m->n++] = u;
    return MT_OK;
}

/* src[i] ends a line, as cmark reads lines: LF, CRLF, or a CR alone. */
static int line_end(const md_doc *m, size_t i)
{
    return m->src[i] == '\n' || (m->src[i] == '\r' && (i + 1 == m->len || m->src[i + 1] != '\n'));
}

/* The line s[0..n) starts as a YAML mapping's key ("title:"). */
static int yaml_key(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
                     s[i] == '-'))
        i++;
    return i > 0 && i < n && s[i] == ':' && (i + 1 == n || s[i + 1] == ' ' || s[i + 1] == '\n' || s[i + 1] == '\r');
}

/* The lines of the file; front matter's (a first line "---", a second that
 * starts with a YAML key, up to a line "---" or "...") counted in
 * m->base_line; *skip its bytes. */
static int lines(md_doc *m, size_t *skip)
{
    size_t n = 1;
    for (size_t i = 0; i < m->len; i++)
        n += line_end(m, i);
    if (!(m->ls = malloc(sizeof *m->ls * (n + 1))))
        return -1;
    m->n_lines = 0;
    m->ls[m->n_lines++] = 0;
    for (size_t i = 0; i < m->len; i++)
        if (line_end(m, i) && i + 1 < m->len)
            m->ls[m->n_lines++] = i + 1;
    m->ls[m->n_lines] = m->len;
    *skip = 0;
    size_t bom = m->len >= 3 && !memcmp(m->src, "\xef\xbb\xbf", 3) ? 3 : 0;
    const char *s = m->src;
    if (m->n_lines < 3 || (strncmp(s + bom, "---\n", 4) && strncmp(s + bom, "---\r\n", 5)) ||
        !yaml_key(s + m->ls[1], m->ls[2] - m->ls[1]))
        return 0;
    for (int l = 1; l < m->n_lines; l++) {
        size_t a = m->ls[l], e = m->ls[l + 1];
        while (e > a && (s[e - 1] == '\n' || s[e - 1] == '\r'))
            e--;
        if (e - a == 3 && (!memcmp(s + a, "---", 3) || !memcmp(s + a, "...", 3))) {
            m->base_line = l + 1;
            *skip = m->ls[l + 1];
            return 0;
        }
    }
    return 0;
}

static void md_free(void *state)
{
    md_doc *m = state;
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        srv_iunit_free(&m->u[i].iu);
    free(m->u);
    free(m->recs.r);
    free(m->sp);
    free(m->ls);
    free(m->s.p);
    free(m->map);
    cmark_strbuf_free(&m->ent);
    free(m);
}

static cmark_node *cmark_read(const char *s, size_t n)
{
    cmark_gfm_core_extensions_ensure_registered();
    cmark_parser *p = cmark_parser_new(CMARK_OPT_DEFAULT);
    if (!p)
        return NULL;
    cmark_parser_attach_syntax_extension(p, cmark_find_syntax_extension("table"));
    cmark_parser_attach_syntax_extension(p, cmark_find_syntax_extension("strikethrough"));
    cmark_parser_feed(p, s, n);
    cmark_node *doc = cmark_parser_finish(p);
    cmark_parser_free(p);
    return doc;
}

static mt_status md_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                          const srv_doc_options *opt, void **state, mt_err *err)
{
    if (memchr(data, 0, len))
        return mt_err_set(err, MT_ERR_INPUT, "not Markdown: a NUL byte at offset %zu",
                          (size_t)((const char *)memchr(data, 0, len) - data));
    if (!mt_utf8_valid(data, len))
        return mt_err_set(err, MT_ERR_INPUT, "not Markdown: the file is not UTF-8");
    md_doc *m = calloc(1, sizeof *m);
    if (!m)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    m->src = data;
    m->len = len;
    m->max_depth = lim->max_depth;
    cmark_strbuf_init(cmark_get_default_mem_allocator(), &m->ent, 16);
    size_t skip;
    mt_status st = MT_OK;
    cmark_node *doc = NULL;
    if (lines(m, &skip) || !(doc = cmark_read(data + skip, len - skip))) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto done;
    }
    cmark_iter *it = cmark_iter_new(doc);
    cmark_event_type ev;
    while (st == MT_OK && (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
        cmark_node *n = cmark_iter_get_node(it);
        if (ev == CMARK_EVENT_ENTER && (cmark_node_get_type(n) == CMARK_NODE_PARAGRAPH ||
                                        cmark_node_get_type(n) == CMARK_NODE_HEADING || is_type(n, "table_cell")))
            st = leaf(m, n, lim, err);
    }
    cmark_iter_free(it);
done:
    cmark_node_free(doc);
    if (st != MT_OK) {
        md_free(m);
        return st;
    }
    *state = m;
    return MT_OK;
}

static int md_units(const void *state) { return ((const md_doc *)state)->n; }
static const char *md_unit(const void *state, int i) { return ((const md_doc *)state)->u[i].iu.text; }

static mt_status md_set(void *state, int i, const char *text, size_t len, const long *links, int n_links, mt_err *err)
{
    return srv_iunit_set(&((md_doc *)state)->u[i].iu, text, len, links, n_links, err);
}

/* ---- writing ---------------------------------------------------------------------------- */

typedef struct {
    const md_doc *m;
    const munit  *u;
    mt_sbuf       out;
    int           line_start;   /* nothing but spaces written on this line yet */
    int           digits;       /* ... but for digits: a "." or ")" next would make a list */
    /* elements opened whose start is not written yet: Markdown has no empty
     * emphasis ("****" is text) and none that starts or ends with a space, so
     * a start waits for the element's first character, spaces and points
     * going before it (an element around points only would glue its
     * delimiters to its neighbours': "~~a~~~<b>~") */
    const mspan  *pend[64];
    int           n_pend;
    /* raw HTML placed first on a line would start an HTML block: it waits for
     * the end of the line's first word */
    const mspan **held;
    int           n_held;
    size_t        cap_held;
    int           words;        /* a character of the translation written on this line */
    int           items;        /* an opaque item written on this line */
    const mspan  *brk;          /* a hard break waiting for what follows it (last in a unit: none) */
    size_t        from;         /* where the unit's output starts */
    int           plain;        /* the unit again without its emphasis (unit_reads_back) */
    int           oom;
} writer;

static void put(writer *w, const char *s, size_t n) { w->oom |= mt_sb_add(&w->out, s, n); }

static void flush(writer *w);

static void put_unemphasized(writer *w, const mspan *p);
static void before_markup(writer *w, const mspan *p);

/* A point's bytes: an emphasis around no word without its delimiters. */
static void put_point(writer *w, const mspan *p)
{
    before_markup(w, p);
    if (p->emph)
        put_unemphasized(w, p);
    else
        put(w, w->m->src + p->os, p->ce - p->os);
}

/* Where the bytes put_point writes start (past an emphasis' delimiters). */
static size_t point_start(const writer *w, const mspan *p)
{
    size_t i = p->emph ? p->oe : p->os;
    while (p->emph && i < p->cs && strchr("*_~", w->m->src[i]))
        i++;
    return i;
}

static void release(writer *w)
{
    for (int i = 0; i < w->n_held; i++)
        put_point(w, w->held[i]);
    w->items |= w->n_held > 0;
    w->n_held = 0;
}

/* Raw HTML s[0..n) first on a line starts an HTML block (CommonMark's
 * conditions 1 to 6: <!, <?, or one of the block-level tags). */
static int html_block_start(const char *s, size_t n)
{
    static const char *const tags[] = {
        "address", "article", "aside", "base", "basefont", "blockquote", "body", "caption", "center", "col",
        "colgroup", "dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure",
        "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hr", "html",
        "iframe", "legend", "li", "link", "main", "menu", "menuitem", "nav", "noframes", "ol", "optgroup", "option",
        "p", "param", "pre", "script", "search", "section", "style", "summary", "table", "tbody", "td", "textarea",
        "tfoot", "th", "thead", "title", "tr", "track", "ul" };
    if (n < 2 || s[0] != '<')
        return 0;
    if (s[1] == '!' || s[1] == '?')
        return 1;
    size_t i = s[1] == '/' ? 2 : 1, k = i;
    while (k < n && ((s[k] | 0x20) >= 'a' && (s[k] | 0x20) <= 'z' ? 1 : s[k] >= '0' && s[k] <= '9'))
        k++;
    if (k < n && !strchr(" \t\r\n>/", s[k]))
        return 0;
    for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++)
        if (strlen(tags[t]) == k - i && !strncasecmp(tags[t], s + i, k - i))
            return 1;
    return 0;
}

/* The hard break waiting, now that something follows it on its line. */
static void put_break(writer *w)
{
    if (!w->brk)
        return;
    while (w->out.n > w->from && w->out.p[w->out.n - 1] == ' ')
        w->out.n--;                     /* a space before a backslash break would be kept */
    put(w, w->m->src + w->brk->os, w->brk->ce - w->brk->os);
    w->brk = NULL;
    w->line_start = 1;
    w->words = w->items = w->digits = 0;
}

static void w_text(void *ctx, const char *s, size_t n)
{
    writer *w = ctx;
    for (size_t i = 0; i < n; i++) {
        char c = s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
        if (c != ' ' && c != '\t')
            put_break(w);
        if (w->line_start && !w->digits && (c == ' ' || c == '\t'))
            continue;                   /* a line's indentation: none (four spaces would make code) */
        int esc = (c && strchr("\\`*_[]<~", c) != NULL) || (c == '|' && w->u->cell) || (c == '#' && w->u->atx) ||
                  (c == '&' && i + 1 < n && (s[i + 1] == '#' || (unsigned char)((s[i + 1] | 0x20) - 'a') < 26));
        if (w->line_start && c != ' ' && c != '\t') {
            esc |= !w->digits && c && strchr("#>-+=", c) != NULL;
            esc |= w->digits && (c == '.' || c == ')');
            w->digits = c >= '0' && c <= '9';
            w->line_start = w->digits;
        }
        if (c != ' ' && c != '\t')
            flush(w), w->words = 1;
        else
            release(w);
        if (esc)
            put(w, "\\", 1);
        put(w, &c, 1);
    }
}

static const mspan *span_of(const writer *w, const void *node) { return &w->m->sp[(intptr_t)node - 1]; }

/* Markup starts at p: a "!" the translation put just before a "[" would make
 * an image; a code span right after another would make one backtick run. */
static void before_markup(writer *w, const mspan *p)
{
    mt_sbuf *o = &w->out;
    if (w->m->src[p->os] == '`' && o->n && o->p[o->n - 1] == '`')
        put(w, " ", 1);
    if (w->m->src[p->os] == '[' && o->n && o->p[o->n - 1] == '!' && (o->n < 2 || o->p[o->n - 2] != '\\')) {
        o->n--;
        put(w, "\\!", 2);
    }
}

static void write_open(writer *w, const mspan *p)
{
    before_markup(w, p);
    put(w, w->m->src + p->os, p->oe - p->os);
    w->line_start = w->digits = 0;
}

/* The starts that waited: the element has a character now. */
static void flush(writer *w)
{
    for (int i = 0; i < w->n_pend; i++)
        write_open(w, w->pend[i]);
    w->n_pend = 0;
}

static void w_open(void *ctx, const void *node)
{
    writer *w = ctx;
    if (w->plain && w->m->src[span_of(w, node)->os] != '[')
        return;
    if (w->n_pend == (int)(sizeof w->pend / sizeof w->pend[0]))
        flush(w);
    w->pend[w->n_pend++] = span_of(w, node);
}

static void w_close(void *ctx, const void *node)
{
    writer *w = ctx;
    const mspan *p = span_of(w, node);
    if (w->plain && w->m->src[p->os] != '[')
        return;
    if (w->n_pend && w->pend[w->n_pend - 1] == p) {
        w->n_pend--;
        if (w->m->src[p->os] != '[')
            return;                     /* emphasis around nothing: none */
        flush(w);                       /* a link around nothing: still a link */
        write_open(w, p);
        put(w, w->m->src + p->cs, p->ce - p->cs);
        return;
    }
    release(w);
    size_t sp = 0;                      /* spaces at its end go after it */
    while (sp < w->out.n - w->from && w->out.p[w->out.n - 1 - sp] == ' ')
        sp++;
    w->out.n -= sp;
    put(w, w->m->src + p->cs, p->ce - p->cs);
    while (sp--)
        put(w, " ", 1);
    w->line_start = w->digits = 0;
}

static int by_start(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Emphasis p, around no word, without it: what it holds, the delimiters of
 * every emphasis inside left out too (they are disjoint byte ranges). */
static void put_unemphasized(writer *w, const mspan *p)
{
    int k0 = p->first, k1 = (int)(p - w->m->sp), n = 0;
    size_t *cut = malloc(sizeof *cut * 4 * (size_t)(k1 - k0 + 1)), at = p->oe;
    if (!cut) {
        w->oom = 1;
        return;
    }
    for (int k = k0; k < k1; k++) {
        const mspan *q = &w->m->sp[k];
        if (q->emph) {
            size_t r[4] = { q->os, q->oe, q->cs, q->ce };
            memcpy(cut + 2 * n, r, sizeof r);
            n += 2;
        }
    }
    qsort(cut, (size_t)n, 2 * sizeof *cut, by_start);
    for (int i = 0; i < n; i++) {
        put(w, w->m->src + at, cut[2 * i] - at);
        at = cut[2 * i + 1];
    }
    put(w, w->m->src + at, p->cs - at);
    free(cut);
}

static void w_whole(void *ctx, const void *node)
{
    writer *w = ctx;
    const mspan *p = span_of(w, node);
    if (p->brk) {
        int spaces = w->m->src[p->os] != '\\';
        if ((w->brk && spaces) || (!w->brk && !w->words && (w->items || w->n_held || spaces)))
            return;                     /* before any word: none ("<e>  " alone is HTML, "  " alone blank; */
        put_break(w);                   /* "\\" alone is a line) */
        w->brk = p;
        return;
    }
    put_break(w);
    size_t at = point_start(w, p);
    if (w->line_start && (w->n_held || html_block_start(w->m->src + at, p->ce - at))) {
        if (MT_GROW(w->held, w->cap_held, (size_t)w->n_held + 1)) {
            w->oom = 1;
            return;
        }
        w->held[w->n_held++] = p;       /* and every point after it, until the line's first word is written */
        return;
    }
    release(w);
    if (p->emph) {                      /* emphasis around no word of the unit: its delimiters, read alone, */
        put_point(w, p);                /* may pair with their neighbours' */
        w->items = 1;
        return;
    }
    before_markup(w, p);
    put(w, w->m->src + p->os, p->ce - p->os);
    w->line_start = w->digits = 0;
    w->items = 1;
}

/* The characters cmark reads as text in s[0..n) (whitespace aside), counted into h[256]: 0, or -1. */
static int text_counts(const char *s, size_t n, size_t *h)
{
    cmark_node *doc = cmark_read(s, n);
    cmark_iter *it = doc ? cmark_iter_new(doc) : NULL;
    cmark_event_type ev;
    while (it && (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
        cmark_node *nd = cmark_iter_get_node(it);
        const char *lit = cmark_node_get_literal(nd);
        if (ev == CMARK_EVENT_ENTER && cmark_node_get_type(nd) == CMARK_NODE_TEXT && lit)
            for (const char *c = lit; *c; c++)
                h[(unsigned char)*c] += !strchr(" \t\n\r\f\v", *c);
    }
    cmark_iter_free(it);
    cmark_node_free(doc);
    return it ? 0 : -1;
}

/* The unit written as w->out[from..) reads back, as cmark reads it, with as
 * many * _ ~ in its text as its translation and its opaque items (each read
 * alone) have: emphasis delimiters the alignment put where CommonMark's
 * flanking rules do not take them (next to punctuation inside a word) would
 * show as characters (the lines a unit spans, with their block quote
 * markers, read as a document of their own).  1 yes, 0 no, -1 out of
 * memory. */
static int unit_reads_back(const writer *w, const munit *u, size_t from)
{
    const char *o = w->out.p ? w->out.p + from : "";
    size_t n = w->out.n - from, got[256] = { 0 }, want[256] = { 0 };
    for (size_t i = 0; i < u->iu.tgt_len; i++)
        want[(unsigned char)u->iu.tgt[i]] += !strchr(" \t\n\r\f\v", u->iu.tgt[i]);
    const srv_irec *r = u->iu.n_rec ? w->m->recs.r + u->iu.first_rec : NULL;   /* none: no array */
    for (int k = 0; k < u->iu.n_rec; k++) {
        if (r[k].s != r[k].e)
            continue;
        writer pw = { .m = w->m };      /* the point's bytes as put_point writes them, read alone */
        put_point(&pw, span_of(w, r[k].node));
        int rc = pw.oom || text_counts(pw.out.p ? pw.out.p : "", pw.out.n, want);
        free(pw.out.p);
        if (rc)
            return -1;
        k += r[k].n_desc;               /* written with it */
    }
    if (text_counts(o, n, got))
        return -1;
    return got['*'] == want['*'] && got['_'] == want['_'] && got['~'] == want['~'];
}

/* Unit u onto w->out: with its inline elements, or, when its emphasis would
 * not read back, without emphasis and strikethrough (links, words and
 * opaque items as placed). */
static void write_unit(writer *w, const munit *u, const srv_iwriter *iw)
{
    size_t from = w->out.n;
    for (w->plain = 0; w->plain < 2; w->plain++) {
        w->out.n = from;
        w->u = u;
        w->line_start = u->line_start;
        w->digits = w->n_pend = w->n_held = w->words = w->items = 0;
        w->brk = NULL;
        w->from = from;
        if (srv_iunit_write(&u->iu, &w->m->recs, iw))
            w->oom = 1;
        release(w);
        w->brk = NULL;                  /* a break last in the unit: nothing after it to break to */
        int ok = w->oom ? -1 : unit_reads_back(w, u, from);
        if (ok)
            break;
    }
    w->plain = 0;
}

static mt_status md_render(const void *state, char **out, size_t *len, mt_err *err)
{
    const md_doc *m = state;
    writer w = { .m = m };
    srv_iwriter iw = { w_text, w_open, w_close, w_whole, &w };
    size_t at = 0;
    for (int i = 0; i < m->n; i++) {
        const munit *u = &m->u[i];
        if (!u->iu.tgt)
            continue;
        put(&w, m->src + at, u->start - at);
        write_unit(&w, u, &iw);
        at = u->end;
    }
    put(&w, m->src + at, m->len - at);
    free(w.held);
    if (w.oom || mt_sb_add(&w.out, "", 0)) {
        free(w.out.p);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    *out = w.out.p;
    *len = w.out.n;
    return MT_OK;
}

const srv_doc_format srv_doc_markdown_format = { md_parse, md_units, md_unit, md_set, md_render, md_free, NULL };
