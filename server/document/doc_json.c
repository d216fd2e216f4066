/* doc_json: JSON resource files (document.h, formats json and arb).
 *
 * i18next (nested objects of keys, plural keys such as key_one/key_other,
 * arrays of strings, {{x}} and $t() inside values), and Flutter's ARB
 * (Application Resource Bundle): every string that is a value (not a key) is
 * a unit, but for those under a key starting with '@': ARB's "@key"
 * metadata objects (description, placeholders, examples) and "@@locale",
 * "@@context" are not translated, and "@@locale", at the top, is set to the
 * target language when there is one (srv_doc_target).  Numbers, true, false
 * and null are data.  Keys, nesting, order and whitespace are the file's bytes.
 *
 * jansson reads the file first, so a malformed one is MT_ERR_INPUT with
 * jansson's line, column and reason; the top must be an object.  jansson
 * gives no byte offsets, so a small scanner over the (now known to be valid)
 * bytes then finds each string token: its escapes decoded for the unit
 * (\uXXXX pairs joined), and a translation written back escaped (doc_res.c;
 * non-ASCII as \uXXXX when the file is all ASCII and writes its own
 * non-ASCII so, as tools with ensure_ascii do; else as UTF-8).
 * Nesting deeper than max_depth is MT_ERR_TOO_LONG.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "doc_format.h"
#include "doc_res.h"
#include "util/check.h"

typedef struct {
    srv_res    *r;
    const char *d;
    size_t      n, i;
    int         max_depth;
    srv_res_buf v;
} scan;

static void ws(scan *s)
{
    while (s->i < s->n && strchr(" \t\r\n", s->d[s->i]))
        s->i++;
}

static int hex4(const char *p, unsigned long *c)
{
    *c = 0;
    for (int k = 0; k < 4; k++) {
        char h = p[k];
        int x = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (x < 0)
            return -1;
        *c = *c << 4 | (unsigned long)x;
    }
    return 0;
}

/* The string token at s->i (its '"'), decoded into s->v when decode; s->i
 * past its closing quote.  MT_OK, MT_ERR_INPUT, MT_ERR_NOMEM. */
static mt_status string_token(scan *s, int decode, mt_err *err)
{
    s->v.b.n = 0;
    size_t i = s->i + 1;
    while (i < s->n && s->d[i] != '"') {
        size_t at = i;
        unsigned long c = (unsigned char)s->d[i];
        if (c != '\\') {
            size_t k = i + 1;
            while (k < s->n && s->d[k] != '"' && s->d[k] != '\\')
                k++;
            if (decode && srv_res_put(&s->v, s->d + i, k - i, i))
                goto nomem;
            for (size_t j = i; decode && j < k; j++)        /* each byte from where it is */
                s->v.map[s->v.b.n - (k - j)] = j;
            i = k;
            continue;
        }
        if (i + 1 >= s->n)
            break;
        char e = s->d[i + 1];
        i += 2;
        if (e == 'u') {
            if (i + 4 > s->n || hex4(s->d + i, &c))
                break;
            i += 4;
            if (c >= 0xd800 && c < 0xdc00) {            /* a pair's first half: the second must follow */
                unsigned long lo;
                if (i + 6 > s->n || s->d[i] != '\\' || s->d[i + 1] != 'u' || hex4(s->d + i + 2, &lo) || lo < 0xdc00 ||
                    lo >= 0xe000)
                    break;
                c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                i += 6;
            } else if ((c >= 0xdc00 && c < 0xe000) || c == 0) {
                break;
            }
        } else {
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *p = strchr(from, e);
            if (!p || !e)
                break;
            c = (unsigned char)to[p - from];
        }
        if (decode && srv_res_put_cp(&s->v, c, at))
            goto nomem;
    }
    if (i >= s->n || s->d[i] != '"')
        return mt_err_set(err, MT_ERR_INPUT, "line %d: a string the scanner cannot read (offset %zu)",
                          srv_res_line(s->d, i < s->n ? i : s->n), i);
    s->i = i + 1;
    return MT_OK;
nomem:
    return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
}

/* kind of member a value is: translated, metadata (not), or ARB's locale */
enum { V_TEXT, V_META, V_LOCALE };

static mt_status value(scan *s, int depth, int what, mt_err *err);

/* An object's members, s->i at its '{'. */
static mt_status object(scan *s, int depth, int what, mt_err *err)
{
    s->i++;
    for (ws(s); s->i < s->n && s->d[s->i] != '}';) {
        if (s->d[s->i] != '"')
            return mt_err_set(err, MT_ERR_INPUT, "line %d: a key expected", srv_res_line(s->d, s->i));
        size_t k = s->i;
        mt_status st = string_token(s, 0, err);
        if (st != MT_OK)
            return st;
        int meta = s->d[k + 1] == '@', locale = depth == 1 && s->i - k == 10 && !memcmp(s->d + k, "\"@@locale\"", 10);
        ws(s);
        if (s->i >= s->n || s->d[s->i] != ':')
            return mt_err_set(err, MT_ERR_INPUT, "line %d: ':' expected", srv_res_line(s->d, s->i));
        s->i++;
        ws(s);
        st = value(s, depth, locale ? V_LOCALE : meta || what != V_TEXT ? V_META : V_TEXT, err);
        if (st != MT_OK)
            return st;
        ws(s);
        if (s->i < s->n && s->d[s->i] == ',')
            s->i++, ws(s);
    }
    if (s->i >= s->n)
        return mt_err_set(err, MT_ERR_INPUT, "an object not closed");
    s->i++;
    return MT_OK;
}

static mt_status value(scan *s, int depth, int what, mt_err *err)
{
    if (s->i >= s->n)
        return mt_err_set(err, MT_ERR_INPUT, "a value expected at the end");
    char c = s->d[s->i];
    if (c == '{' || c == '[') {
        if (depth + 1 > s->max_depth)
            return mt_err_set(err, MT_ERR_TOO_LONG, "line %d: JSON nesting deeper than %d (max_depth)",
                              srv_res_line(s->d, s->i), s->max_depth);
        if (c == '{')
            return object(s, depth + 1, what, err);
        s->i++;
        for (ws(s); s->i < s->n && s->d[s->i] != ']';) {
            mt_status st = value(s, depth + 1, what == V_LOCALE ? V_META : what, err);
            if (st != MT_OK)
                return st;
            ws(s);
            if (s->i < s->n && s->d[s->i] == ',')
                s->i++, ws(s);
        }
        if (s->i >= s->n)
            return mt_err_set(err, MT_ERR_INPUT, "an array not closed");
        s->i++;
        return MT_OK;
    }
    if (c != '"') {                             /* a number, true, false, null */
        while (s->i < s->n && !strchr(" \t\r\n,]}", s->d[s->i]))
            s->i++;
        return MT_OK;
    }
    size_t start = s->i;
    mt_status st = string_token(s, what == V_TEXT, err);
    if (st != MT_OK || what == V_META)
        return st;
    if (what == V_LOCALE) {
        s->r->has_locale = 1;
        s->r->loc_start = start + 1;
        s->r->loc_end = s->i - 1;
        return MT_OK;
    }
    return srv_res_value(s->r, &s->v, s->i - 1, SRV_RES_JSON, 0, start, err);
}

/* The file escapes non-ASCII characters itself: a \uXXXX of one (past 0x7f). */
static int escapes_non_ascii(const char *d, size_t n)
{
    for (const char *p = d; (p = memmem(p, n - (size_t)(p - d), "\\u", 2)) && (size_t)(p - d) + 6 <= n; p += 2) {
        unsigned long c;
        if (!hex4(p + 2, &c) && c >= 0x80)
            return 1;
    }
    return 0;
}

/* jansson's verdict on the file: MT_OK when it is JSON with an object on top. */
static mt_status validate(const char *d, size_t n, mt_err *err)
{
    json_error_t je;
    json_t *root = json_loadb(d, n, 0, &je);
    if (!root)
        return mt_err_set(err, MT_ERR_INPUT, "not valid JSON: line %d, column %d (offset %d): %s", je.line,
                          je.column, je.position, je.text);
    int obj = json_is_object(root);
    json_decref(root);
    if (!obj)
        return mt_err_set(err, MT_ERR_INPUT, "a JSON resource file holds an object of keys; this one's top is not an "
                          "object");
    return MT_OK;
}

static mt_status json_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                            const srv_doc_options *opt, void **state, mt_err *err)
{
    srv_res *r = NULL;
    mt_status st = srv_res_new(data, len, lim, &r, err);
    if (st != MT_OK)
        return st;
    size_t bom = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
    scan s = { .r = r, .d = data, .n = len, .i = bom, .max_depth = lim->max_depth };
    if ((st = validate(data + bom, len - bom, err)) != MT_OK)
        goto fail;
    r->ascii = r->ascii && escapes_non_ascii(data, len);
    ws(&s);
    if ((st = value(&s, 0, V_TEXT, err)) != MT_OK)
        goto fail;
    srv_res_buf_free(&s.v);
    *state = r;
    return MT_OK;
fail:
    srv_res_buf_free(&s.v);
    srv_res_free(r);
    return st;
}

const srv_doc_format srv_doc_json_format = { json_parse, srv_res_units, srv_res_unit, srv_res_set, srv_res_render,
                                             srv_res_free, srv_res_target };

int srv_doc_is_json(const char *data, size_t len)
{
    size_t i = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0, e = len;
    while (i < len && strchr(" \t\r\n", data[i]))
        i++;
    while (e > i && strchr(" \t\r\n", data[e - 1]))
        e--;
    return e - i >= 2 && data[i] == '{' && data[e - 1] == '}';
}
