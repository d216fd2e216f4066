/* doc_strings: Apple .strings files (document.h, format strings), UTF-8.
 *
 * Entries "key" = "value"; between block and line comments and whitespace, as
 * the old-style property list reader takes them: a key or value is a quoted
 * string or an unquoted token of letters, digits and _ $ . : / -; an entry
 * "key"; alone (the value is the key) has nothing to translate.  Escapes in a
 * quoted string: \n \t \r \" \\ \' \a \b \f \v, \Uxxxx and \uxxxx (a
 * surrogate pair joined), up to three octal digits; a backslash before
 * another character is that character.  Each value that is not blank is a
 * unit, written back escaped (\" \\ \n \t \r; an unquoted value is written
 * quoted).  Keys, comments, '=', ';' and spacing stay as they are.
 *
 * Malformed (MT_ERR_INPUT naming the line): an unterminated string or
 * comment, a missing '=' or ';', a token where none can be, \U0000 or half a
 * surrogate pair.  UTF-16 files (Xcode's older default) are not read: the
 * sniffer takes only UTF-8 text.
 */
#include <stdlib.h>
#include <string.h>

#include "doc_format.h"
#include "doc_res.h"

typedef struct {
    srv_res    *r;
    const char *d;
    size_t      n, i;
    srv_res_buf v;
} strs;

static int token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr("_$.:/-", c));
}

static mt_status bad(const strs *s, const char *what, mt_err *err)
{
    return mt_err_set(err, MT_ERR_INPUT, "line %d: %s", srv_res_line(s->d, s->i < s->n ? s->i : s->n), what);
}

/* Whitespace and comments: MT_OK, or MT_ERR_INPUT for one not closed. */
static mt_status skip(strs *s, mt_err *err)
{
    while (s->i < s->n) {
        char c = s->d[s->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            s->i++;
        } else if (c == '/' && s->i + 1 < s->n && s->d[s->i + 1] == '/') {
            const char *nl = memchr(s->d + s->i, '\n', s->n - s->i);
            s->i = nl ? (size_t)(nl - s->d) : s->n;
        } else if (c == '/' && s->i + 1 < s->n && s->d[s->i + 1] == '*') {
            const char *e = memmem(s->d + s->i + 2, s->n - s->i - 2, "*/", 2);
            if (!e)
                return bad(s, "a comment not closed", err);
            s->i = (size_t)(e - s->d) + 2;
        } else {
            break;
        }
    }
    return MT_OK;
}

static int hexv(char h)
{
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

/* \Uxxxx or \uxxxx at d[q]: the code unit, or -1. */
static long unit_at(const strs *s, size_t q)
{
    if (q + 6 > s->n || s->d[q] != '\\' || (s->d[q + 1] != 'U' && s->d[q + 1] != 'u'))
        return -1;
    long c = 0;
    for (int k = 2; k < 6; k++) {
        int x = hexv(s->d[q + k]);
        if (x < 0)
            return -1;
        c = c << 4 | x;
    }
    return c;
}

/* The escape at s->i (its backslash) decoded into s->v. */
static mt_status escape(strs *s, mt_err *err)
{
    size_t at = s->i;
    char e = s->d[s->i + 1];
    const char *from = "ntr\"\\'abfv", *to = "\n\t\r\"\\'\a\b\f\v";
    long c;
    if (e == 'U' || e == 'u') {
        if ((c = unit_at(s, s->i)) < 0)
            return bad(s, "\\U not followed by four hex digits", err);
        s->i += 6;
        if (c >= 0xd800 && c < 0xdc00) {
            long lo = unit_at(s, s->i);
            if (lo < 0xdc00 || lo >= 0xe000)
                return bad(s, "half a surrogate pair", err);
            c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
            s->i += 6;
        } else if (c == 0 || (c >= 0xdc00 && c < 0xe000)) {
            return bad(s, "an escape that is no character", err);
        }
    } else if (e >= '0' && e <= '7') {
        c = 0;
        for (s->i++; s->i < s->n && s->i - at <= 3 && s->d[s->i] >= '0' && s->d[s->i] <= '7'; s->i++)
            c = c * 8 + (s->d[s->i] - '0');
        if (c == 0 || c >= 0x80)
            return bad(s, "an octal escape that is no ASCII character", err);
    } else if (e && strchr(from, e)) {
        c = to[strchr(from, e) - from];
        s->i += 2;
    } else {
        size_t m = 1;                           /* the character itself, whole */
        while (s->i + 1 + m < s->n && ((unsigned char)s->d[s->i + 1 + m] & 0xc0) == 0x80)
            m++;
        s->i += 1 + m;
        return srv_res_put(&s->v, s->d + at + 1, m, at) ? mt_err_set(err, MT_ERR_NOMEM, "out of memory") : MT_OK;
    }
    return srv_res_put_cp(&s->v, (unsigned long)c, at) ? mt_err_set(err, MT_ERR_NOMEM, "out of memory") : MT_OK;
}

/* A key or value at s->i: a quoted string (decoded into s->v when decode) or
 * a token.  *quoted set; *start and *end its content's bytes. */
static mt_status item(strs *s, int decode, int *quoted, size_t *start, size_t *end, mt_err *err)
{
    s->v.b.n = 0;
    *quoted = s->i < s->n && s->d[s->i] == '"';
    if (!*quoted) {
        *start = s->i;
        while (s->i < s->n && token_char(s->d[s->i]))
            s->i++;
        *end = s->i;
        if (*end == *start)
            return bad(s, "a quoted string or a token expected", err);
        return decode && srv_res_put(&s->v, s->d + *start, *end - *start, *start)
                   ? mt_err_set(err, MT_ERR_NOMEM, "out of memory")
                   : MT_OK;
    }
    *start = ++s->i;
    while (s->i < s->n && s->d[s->i] != '"') {
        if (s->d[s->i] == '\\' && s->i + 1 < s->n) {
            mt_status st = decode ? escape(s, err) : (s->i += 2, MT_OK);
            if (st != MT_OK)
                return st;
            continue;
        }
        if (decode && srv_res_put(&s->v, s->d + s->i, 1, s->i))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        s->i++;
    }
    if (s->i >= s->n || s->i > s->n)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: a string not closed", srv_res_line(s->d, *start - 1));
    *end = s->i++;
    return MT_OK;
}

/* One entry at s->i. */
static mt_status entry(strs *s, mt_err *err)
{
    int quoted;
    size_t a, b;
    mt_status st = item(s, 0, &quoted, &a, &b, err);
    if (st == MT_OK)
        st = skip(s, err);
    if (st != MT_OK)
        return st;
    if (s->i < s->n && s->d[s->i] == ';') {     /* "key"; */
        s->i++;
        return MT_OK;
    }
    if (s->i >= s->n || s->d[s->i] != '=')
        return bad(s, "'=' expected", err);
    s->i++;
    if ((st = skip(s, err)) != MT_OK || (st = item(s, 1, &quoted, &a, &b, err)) != MT_OK ||
        (st = skip(s, err)) != MT_OK)
        return st;
    if (s->i >= s->n || s->d[s->i] != ';')
        return bad(s, "';' expected", err);
    s->i++;
    return srv_res_value(s->r, &s->v, b, SRV_RES_STRINGS, quoted ? 0 : SRV_RES_QUOTE, a, err);
}

static mt_status strings_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                               const srv_doc_options *opt, void **state, mt_err *err)
{
    strs s = { .d = data, .n = len, .i = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0 };
    mt_status st = srv_res_new(data, len, lim, &s.r, err);
    if (st != MT_OK)
        return st;
    while ((st = skip(&s, err)) == MT_OK && s.i < len)
        if ((st = entry(&s, err)) != MT_OK)
            break;
    srv_res_buf_free(&s.v);
    if (st != MT_OK) {
        srv_res_free(s.r);
        return st;
    }
    *state = s.r;
    return MT_OK;
}

const srv_doc_format srv_doc_strings_format = { strings_parse, srv_res_units, srv_res_unit, srv_res_set,
                                                srv_res_render, srv_res_free, NULL };

/* The first thing after comments and spaces is "key" = "value". */
int srv_doc_is_strings(const char *data, size_t len)
{
    strs s = { .d = data, .n = len, .i = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0 };
    mt_err err;
    int quoted;
    size_t a, b;
    if (skip(&s, &err) != MT_OK || s.i >= len || data[s.i] != '"' || item(&s, 0, &quoted, &a, &b, &err) != MT_OK ||
        skip(&s, &err) != MT_OK || s.i >= len || data[s.i] != '=')
        return 0;
    s.i++;
    return skip(&s, &err) == MT_OK && s.i < len && data[s.i] == '"';
}
