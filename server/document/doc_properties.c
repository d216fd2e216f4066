/* doc_properties: Java .properties files (document.h, format properties).
 *
 * As java.util.Properties.load reads them: a logical line is a line, or
 * lines joined where one ends with an odd number of backslashes (the next
 * line's leading whitespace dropped); a line whose first non-space character
 * is '#' or '!' is a comment; the key runs to the first unescaped space, '='
 * or ':', then spaces, one '=' or ':' and spaces again, and the value is the
 * rest.  Escapes in a value: \t \n \r \f, \uXXXX (a surrogate pair joined),
 * and a backslash before any other character is that character.  Each value
 * that is not blank is a unit; keys, comments, separators and line endings
 * stay as they are.  A translated value is written on one line (its
 * continuations were only layout), escaped: \\ \n \t \r \f, a leading space
 * as "\ ", and non-ASCII as \uXXXX when the file was all ASCII (what
 * Properties.load(InputStream) reads as ISO-8859-1), else as UTF-8.
 *
 * Malformed: a \u not followed by four hex digits (Properties.load throws
 * "Malformed \uxxxx encoding"), \u0000 or half a surrogate pair (no UTF-8
 * for it): MT_ERR_INPUT naming the line.
 */
#include <stdlib.h>
#include <string.h>

#include "doc_format.h"
#include "doc_res.h"

typedef struct {
    srv_res    *r;
    const char *d;
    size_t      n;
    int         line;           /* the line of the logical line's start */
    srv_res_buf l;              /* the logical line, continuations joined, with its source offsets */
    srv_res_buf v;              /* its value, decoded */
} props;

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\f'; }

static size_t eol(const props *p, size_t i)
{
    while (i < p->n && p->d[i] != '\n' && p->d[i] != '\r')
        i++;
    return i;
}

static size_t after_eol(props *p, size_t e)
{
    if (e < p->n && p->d[e] == '\r')
        e++;
    if (e < p->n && p->d[e] == '\n')
        e++;
    p->line++;
    return e;
}

static int hex(char h)
{
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

/* \uXXXX at l[q] (its backslash): the code unit, or -1. */
static long unit_at(const char *l, size_t q, size_t n)
{
    if (q + 6 > n || l[q] != '\\' || l[q + 1] != 'u')
        return -1;
    long c = 0;
    for (int k = 2; k < 6; k++) {
        int x = hex(l[q + k]);
        if (x < 0)
            return -1;
        c = c << 4 | x;
    }
    return c;
}

/* The logical line from i (its first non-space byte) into p->l; *end where it
 * ends in the source; returns where the next line starts. */
static size_t logical_line(props *p, size_t i, size_t *end, int *bad)
{
    p->l.b.n = 0;
    for (;;) {
        size_t e = eol(p, i), bs = 0;
        while (e - bs > i && p->d[e - bs - 1] == '\\')
            bs++;
        int cont = bs % 2 == 1;
        size_t upto = cont ? e - 1 : e;
        if (srv_res_put(&p->l, p->d + i, upto - i, i)) {
            *bad = 1;
            return p->n;
        }
        for (size_t k = i; k < upto; k++)
            p->l.map[p->l.b.n - (upto - k)] = k;
        *end = e;
        size_t next = after_eol(p, e);
        if (!cont || next >= p->n)
            return next;
        i = next;
        while (i < p->n && is_ws(p->d[i]))
            i++;
    }
}

/* The value l[k..n) decoded into p->v: MT_OK, MT_ERR_INPUT, MT_ERR_NOMEM. */
static mt_status decode(props *p, size_t k, mt_err *err)
{
    const char *l = p->l.b.p;
    size_t n = p->l.b.n;
    p->v.b.n = 0;
    for (size_t q = k; q < n;) {
        size_t at = p->l.map[q];
        if (l[q] != '\\' || q + 1 >= n) {
            size_t m = 1;
            while (q + m < n && ((unsigned char)l[q + m] & 0xc0) == 0x80)
                m++;                            /* a whole character from one place */
            if (srv_res_put(&p->v, l + q, m, at))
                goto nomem;
            q += m;
            continue;
        }
        char e = l[q + 1];
        long c;
        if (e == 'u') {
            if ((c = unit_at(l, q, n)) < 0)
                return mt_err_set(err, MT_ERR_INPUT, "line %d: malformed \\uxxxx encoding", p->line);
            q += 6;
            if (c >= 0xd800 && c < 0xdc00) {
                long lo = unit_at(l, q, n);
                if (lo < 0xdc00 || lo >= 0xe000)
                    return mt_err_set(err, MT_ERR_INPUT, "line %d: \\u%04lx is half a surrogate pair", p->line, c);
                c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                q += 6;
            } else if (c == 0 || (c >= 0xdc00 && c < 0xe000)) {
                return mt_err_set(err, MT_ERR_INPUT, "line %d: \\u%04lx is no character a value can hold", p->line, c);
            }
        } else if (e == 't' || e == 'n' || e == 'r' || e == 'f') {
            c = e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r' : '\f';
            q += 2;
        } else {
            q++;                                /* the character itself, whole */
            size_t m = 1;
            while (q + m < n && ((unsigned char)l[q + m] & 0xc0) == 0x80)
                m++;
            if (srv_res_put(&p->v, l + q, m, at))
                goto nomem;
            q += m;
            continue;
        }
        if (srv_res_put_cp(&p->v, (unsigned long)c, at))
            goto nomem;
    }
    return MT_OK;
nomem:
    return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
}

/* One key-value line, p->l: its value a unit. */
static mt_status entry(props *p, size_t end, mt_err *err)
{
    const char *l = p->l.b.p;
    size_t n = p->l.b.n, k = 0;
    while (k < n && l[k] != '=' && l[k] != ':' && !is_ws(l[k]))
        k += l[k] == '\\' && k + 1 < n ? 2 : 1;
    while (k < n && is_ws(l[k]))
        k++;
    if (k < n && (l[k] == '=' || l[k] == ':'))
        k++;
    while (k < n && is_ws(l[k]))
        k++;
    if (k == n)
        return MT_OK;                           /* no value */
    mt_status st = decode(p, k, err);
    return st != MT_OK ? st : srv_res_value(p->r, &p->v, end, SRV_RES_PROPS, SRV_RES_LEAD, p->l.map[k], err);
}

static mt_status props_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                             const srv_doc_options *opt, void **state, mt_err *err)
{
    props p = { .d = data, .n = len, .line = 1 };
    mt_status st = srv_res_new(data, len, lim, &p.r, err);
    if (st != MT_OK)
        return st;
    size_t i = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
    while (i < len) {
        size_t j = i;
        while (j < len && is_ws(data[j]))
            j++;
        size_t e = eol(&p, j);
        if (j == e || data[j] == '#' || data[j] == '!') {
            i = after_eol(&p, e);               /* blank, or a comment (never continued) */
            continue;
        }
        int bad = 0, line = p.line;
        size_t end;
        i = logical_line(&p, j, &end, &bad);
        int next_line = p.line;
        p.line = line;
        if (bad) {
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if ((st = entry(&p, end, err)) != MT_OK)
            goto fail;
        p.line = next_line;
    }
    srv_res_buf_free(&p.l);
    srv_res_buf_free(&p.v);
    *state = p.r;
    return MT_OK;
fail:
    srv_res_buf_free(&p.l);
    srv_res_buf_free(&p.v);
    srv_res_free(p.r);
    return st;
}

const srv_doc_format srv_doc_properties_format = { props_parse, srv_res_units, srv_res_unit, srv_res_set,
                                                   srv_res_render, srv_res_free, NULL };

/* key = value lines (a key of letters, digits, '.', '_', '-'; '=' after it),
 * comments and blank lines, nothing else, and at least two entries. */
int srv_doc_is_properties(const char *data, size_t len)
{
    int entries = 0;
    for (size_t i = 0, cont = 0; i < len;) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - data) : len, j = i, t = e;
        while (j < e && (data[j] == ' ' || data[j] == '\t'))
            j++;
        while (t > j && (data[t - 1] == '\r' || data[t - 1] == ' '))
            t--;
        int was_cont = cont;
        cont = t > j && data[t - 1] == '\\';
        if (!was_cont && j < t && data[j] != '#' && data[j] != '!') {
            size_t k = j;
            while (k < t && (strchr("._-", data[k]) || (data[k] >= 'a' && data[k] <= 'z') ||
                             (data[k] >= 'A' && data[k] <= 'Z') || (data[k] >= '0' && data[k] <= '9')))
                k++;
            while (k < t && data[k] == ' ')
                k++;
            if (k == j || k >= t || data[k] != '=')
                return 0;
            entries++;
        }
        i = e + 1;
    }
    return entries >= 2;
}
