/* doc_text: plain UTF-8 text (document.h, format txt).
 *
 * A unit is a line, or lines that continue one sentence: a line that does
 * not end a sentence (. ! ? : ; … or a closing quote or bracket after one) is
 * joined by the next non-blank line, up to 8 lines and 2,000 bytes, unless
 * the next one opens a list item ("- ", "* ", "• ", "1. ").  The lines of a
 * unit are its runs (doc_runs.h): the translation is split back over them
 * by the alignment, so the file keeps its line count and every line break.
 * Each line's indentation and line ending (LF, CRLF or a lone CR) are kept;
 * blank lines are copied.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doc_format.h"
#include "doc_runs.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

enum { MAX_LINES = 8, MAX_JOIN_BYTES = 2000 };

typedef struct {
    size_t indent;      /* start of the line's text (after its indentation) */
    size_t text_end;    /* end of its text (before trailing spaces) */
    size_t end;         /* after its line ending */
    size_t nl;          /* start of its line ending */
} line;

typedef srv_run_unit unit;     /* lines [first, first + n) */

typedef struct {
    const char *data;
    size_t      len;
    size_t      start;  /* after a byte order mark */
    line       *l;
    int         n_lines;
    unit       *u;
    int         n;
} text_doc;

/* Spaces a line's indentation and its end keep as they were. */
static int is_sp(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

/* No character but spaces (Unicode's too: a unit is never blank). */
static int blank(const text_doc *t, const line *l)
{
    for (size_t i = l->indent; i < l->text_end;) {
        uint32_t c;
        size_t m = mt_utf8_decode((const uint8_t *)t->data + i, l->text_end - i, &c);
        if (!m || !mt_utf8_is_space(c))
            return 0;
        i += m;
    }
    return 1;
}

/* The line ends a sentence: its last character, closing quotes and brackets aside. */
static int ends_sentence(const char *d, const line *l)
{
    size_t e = l->text_end;
    while (e > l->indent && strchr("\"')]»”’", d[e - 1]))
        e--;
    if (e >= l->indent + 3 && !memcmp(d + e - 3, "\xe2\x80\xa6", 3))     /* … */
        return 1;
    return e > l->indent && strchr(".!?:;", d[e - 1]);
}

static int opens_item(const char *d, const line *l)
{
    const char *p = d + l->indent;
    size_t n = l->text_end - l->indent;
    if (n >= 2 && (p[0] == '-' || p[0] == '*' || p[0] == '+') && p[1] == ' ')
        return 1;
    if (n >= 4 && !memcmp(p, "\xe2\x80\xa2 ", 4))                          /* • */
        return 1;
    size_t k = 0;
    while (k < n && k < 4 && p[k] >= '0' && p[k] <= '9')
        k++;
    return k > 0 && k + 1 < n && (p[k] == '.' || p[k] == ')') && p[k + 1] == ' ';
}

static mt_status split_lines(text_doc *t, mt_err *err)
{
    size_t cap = 0;
    for (size_t i = t->start; i < t->len;) {
        if (mt_grow(&t->l, &cap, (size_t)t->n_lines + 1, sizeof *t->l, 64))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        line *l = &t->l[t->n_lines++];
        size_t e = i;               /* a line ends at LF, CRLF, or a lone CR (old Mac files) */
        while (e < t->len && t->data[e] != '\n' && t->data[e] != '\r')
            e++;
        l->nl = e;
        if (e < t->len)
            e += t->data[e] == '\r' && e + 1 < t->len && t->data[e + 1] == '\n' ? 2 : 1;
        l->end = e;
        size_t end = e;
        l->indent = i;
        while (l->indent < l->nl && is_sp(t->data[l->indent]))
            l->indent++;
        l->text_end = l->nl;
        while (l->text_end > l->indent && is_sp(t->data[l->text_end - 1]))
            l->text_end--;
        i = end;
    }
    return MT_OK;
}

static mt_status make_unit(text_doc *t, int first, int n, const srv_doc_limits *lim, mt_err *err)
{
    const char *runs[MAX_LINES];
    size_t lens[MAX_LINES];
    for (int k = 0; k < n; k++) {
        runs[k] = t->data + t->l[first + k].indent;    /* with its line ending: a space between lines */
        lens[k] = t->l[first + k].end - t->l[first + k].indent;
    }
    unit *u = &t->u[t->n];
    memset(u, 0, sizeof *u);
    u->first = first;
    u->n = n;
    mt_status st = srv_runs_init(&u->runs, runs, lens, n, err);
    if (st != MT_OK)
        return st;
    t->n++;
    if (strlen(u->runs.text) > lim->max_unit_bytes)
        return mt_err_set(err, MT_ERR_TOO_LONG, "line %d is %zu bytes; the limit of a unit is %zu", first + 1,
                          strlen(u->runs.text), lim->max_unit_bytes);
    if (!(u->s = calloc((size_t)n, sizeof *u->s)) || !(u->e = calloc((size_t)n, sizeof *u->e)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    return MT_OK;
}

static void text_free(void *state)
{
    text_doc *t = state;
    if (!t)
        return;
    srv_run_units_free(t->u, t->n);
    free(t->l);
    free(t);
}

static mt_status text_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                            const srv_doc_options *opt, void **state, mt_err *err)
{
    if (memchr(data, 0, len))
        return mt_err_set(err, MT_ERR_INPUT, "the text holds a NUL byte at offset %zu",
                          (size_t)((const char *)memchr(data, 0, len) - data));
    if (!mt_utf8_valid(data, len))
        return mt_err_set(err, MT_ERR_INPUT, "the text is not valid UTF-8");
    text_doc *t = calloc(1, sizeof *t);
    if (!t)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    t->data = data;
    t->len = len;
    t->start = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
    mt_status st = split_lines(t, err);
    if (st == MT_OK && !(t->u = calloc((size_t)(t->n_lines ? t->n_lines : 1), sizeof *t->u)))
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    for (int i = 0; st == MT_OK && i < t->n_lines;) {
        if (blank(t, &t->l[i])) {
            i++;
            continue;
        }
        if (t->n >= lim->max_units) {
            st = mt_err_set(err, MT_ERR_TOO_LONG, "the text has over %d translation units (lines); the limit is %d",
                            lim->max_units, lim->max_units);
            break;
        }
        int n = 1;
        size_t bytes = t->l[i].text_end - t->l[i].indent;
        while (n < MAX_LINES && i + n < t->n_lines && !ends_sentence(data, &t->l[i + n - 1]) &&
               !blank(t, &t->l[i + n]) && !opens_item(data, &t->l[i + n]) &&
               bytes + t->l[i + n].text_end - t->l[i + n].indent < MAX_JOIN_BYTES) {
            bytes += t->l[i + n].text_end - t->l[i + n].indent;
            n++;
        }
        st = make_unit(t, i, n, lim, err);
        i += n;
    }
    if (st != MT_OK) {
        text_free(t);
        return st;
    }
    *state = t;
    return MT_OK;
}

static int text_units(const void *state) { return ((const text_doc *)state)->n; }
static const char *text_unit(const void *state, int i) { return ((const text_doc *)state)->u[i].runs.text; }

static mt_status text_set(void *state, int i, const char *tgt, size_t len, const long *links, int n_links,
                          mt_err *err)
{
    return srv_run_unit_set(&((text_doc *)state)->u[i], tgt, len, links, n_links, err);
}

/* A share of a translation without its spaces at either end. */
static void trim(const char *s, size_t *a, size_t *b)
{
    while (*a < *b && (s[*a] == ' ' || s[*a] == '\t' || s[*a] == '\n'))
        (*a)++;
    while (*b > *a && (s[*b - 1] == ' ' || s[*b - 1] == '\t' || s[*b - 1] == '\n'))
        (*b)--;
}

static mt_status text_render(const void *state, char **out, size_t *len, mt_err *err)
{
    const text_doc *t = state;
    mt_sbuf buf = { 0 };
    int fail = mt_sb_add(&buf, t->data, t->start), u = 0;
    for (int i = 0; !fail && i < t->n_lines; i++) {
        const line *l = &t->l[i];
        const unit *un = u < t->n && t->u[u].first <= i ? &t->u[u] : NULL;
        size_t line_start = i ? t->l[i - 1].end : t->start;
        if (!un || !un->tgt) {
            fail |= mt_sb_add(&buf, t->data + line_start, l->end - line_start);
        } else {                /* indentation, the line's share, trailing spaces and line ending */
            size_t a = un->s[i - un->first], b = un->e[i - un->first];
            trim(un->tgt, &a, &b);
            fail |= mt_sb_add(&buf, t->data + line_start, l->indent - line_start);
            fail |= mt_sb_add(&buf, un->tgt + a, b - a);
            fail |= mt_sb_add(&buf, t->data + l->text_end, l->end - l->text_end);
        }
        if (un && i == un->first + un->n - 1)
            u++;
    }
    if (fail) {
        free(buf.p);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    *out = buf.p;
    *len = buf.n;
    return MT_OK;
}

const srv_doc_format srv_doc_text_format = { text_parse, text_units, text_unit, text_set, text_render, text_free, NULL };
