/* yaml.c: the YAML subset of Marian's files, parsed into jansson (yaml.h).
 *
 * The text is first cut into its significant lines (blank and comment-only
 * lines dropped, document markers handled).  Every node of the subset lies
 * on one line, so a line is the unit of the block structure: a block node
 * starts at a line's column `col`, and its siblings are the following lines
 * at the same column.  A compact entry ("- a: 1", "- - x") moves its line's
 * col to the entry's content and parses that as a node of its own, which is
 * how YAML defines the indentation of such entries.
 */
#include "yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/utf8.h"

typedef struct {
    const char *s;      /* the line, without its line break */
    int         len;
    int         col;    /* where the node on this line starts (its indentation at first) */
    int         no;     /* 1-based line number, for messages */
} yline;

typedef struct {
    const char *name;
    yline      *ln;     /* significant lines */
    int         n, at;  /* count; the line being parsed */
    int         depth;
    mt_err     *err;
    mt_status   st;     /* the first error, MT_OK until then */
} yparser;

/* ---- errors ------------------------------------------------------------------ */
/* Record the first error as "name:line: message"; returns NULL for the callers' convenience. */
__attribute__((format(printf, 4, 5)))
static void *fail(yparser *p, int no, mt_status st, const char *fmt, ...)
{
    if (p->st != MT_OK)
        return NULL;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->st = mt_err_set(p->err, st, "%s:%d: %s", p->name, no, msg);
    return NULL;
}

/* How many bytes of s[0..n) to quote in a message: at most 48, never half a character. */
static int clip(const char *s, size_t n) { return mt_utf8_clip(s, n, 48); }

/* The length of the character at s[i] of a line (lines are valid UTF-8), to
 * quote it whole in a message. */
static int char_len(const yline *l, int i)
{
    uint32_t cp;
    size_t n = mt_utf8_decode((const uint8_t *)l->s + i, (size_t)(l->len - i), &cp);
    return n ? (int)n : 1;
}

static void *nomem(yparser *p, int no)
{
    return fail(p, no, MT_ERR_NOMEM, "out of memory");
}

/* ---- lines ------------------------------------------------------------------- */
static int is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* 1 when only blanks or a comment follow position i.  A comment must be
 * separated from what precedes it by a blank (YAML: "a#b" is one scalar). */
static int rest_empty(const yline *l, int i)
{
    int j = i;
    while (j < l->len && is_ws(l->s[j]))
        j++;
    return j == l->len || (l->s[j] == '#' && (j == 0 || is_ws(l->s[j - 1])));
}

static int starts_marker(const char *s, int len, const char *m)
{
    return len >= 3 && !memcmp(s, m, 3) && (len == 3 || is_ws(s[3]));
}

/* One physical line: check it, and keep it when it holds content.  *state:
 * 0 before any content, 1 in the document, 2 after its end ("..."). */
static int add_line(yparser *p, const char *s, int len, int no, int *state)
{
    if (memchr(s, 0, (size_t)len))
        return fail(p, no, MT_ERR_UNSUPPORTED, "NUL byte in the text"), -1;
    if (!mt_utf8_valid(s, (size_t)len))
        return fail(p, no, MT_ERR_FORMAT, "invalid UTF-8"), -1;
    int ind = 0;
    while (ind < len && s[ind] == ' ')
        ind++;
    int j = ind;
    while (j < len && is_ws(s[j]))
        j++;
    if (j == len || s[j] == '#')
        return 0;                                   /* blank or comment only */
    if (j != ind)
        return fail(p, no, MT_ERR_FORMAT, "tab in indentation (YAML allows only spaces)"), -1;
    if (starts_marker(s, len, "---") || starts_marker(s, len, "...")) {
        int start = s[0] == '-';
        yline probe = {s, len, 3, no};
        if (!rest_empty(&probe, 3))
            return fail(p, no, MT_ERR_UNSUPPORTED, "content on a '%s' line is not supported",
                        start ? "---" : "..."), -1;
        if (start && *state != 0)
            return fail(p, no, MT_ERR_UNSUPPORTED, "a second YAML document is not supported"), -1;
        if (!start)
            *state = 2;
        return 0;
    }
    if (*state == 2)
        return fail(p, no, MT_ERR_UNSUPPORTED, "content after the end of the document ('...')"), -1;
    if (ind == 0 && s[0] == '%')
        return fail(p, no, MT_ERR_UNSUPPORTED, "YAML directives ('%%') are not supported"), -1;
    *state = 1;
    p->ln[p->n++] = (yline){s, len, ind, no};
    return 0;
}

static mt_status split_lines(yparser *p, const char *text, size_t len)
{
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) {        /* a UTF-8 byte order mark */
        text += 3;
        len -= 3;
    }
    size_t count = 1;
    for (size_t i = 0; i < len; i++)
        count += text[i] == '\n';
    if (!(p->ln = calloc(count, sizeof *p->ln)))
        return nomem(p, 1), p->st;
    int no = 0, state = 0;
    for (size_t at = 0; at < len || (at == len && no == 0);) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, cut = end;
        if (cut > at && text[cut - 1] == '\r')
            cut--;
        if (add_line(p, text + at, (int)(cut - at), ++no, &state) < 0)
            return p->st;
        at = end + 1;
    }
    return MT_OK;
}

/* ---- scalars ----------------------------------------------------------------- */
/* The code point of the escape at s[*i] (the character after the backslash);
 * *i moves past it.  0 with an error recorded when it is not a YAML escape. */
static uint32_t escape(yparser *p, const yline *l, int *i)
{
    static const char simple[] = "abtnvfre \"/\\\t", value[] = "\a\b\t\n\v\f\r\x1b \"/\\\t";
    char c = l->s[*i];
    const char *k = strchr(simple, c);
    int clen = char_len(l, *i);
    (*i)++;
    if (c && k)
        return (unsigned char)value[k - simple];
    switch (c) {
    case 'N': return 0x85;
    case '_': return 0xA0;
    case 'L': return 0x2028;
    case 'P': return 0x2029;
    case '0': return fail(p, l->no, MT_ERR_UNSUPPORTED, "\\0 (a NUL character) is not supported"), 0;
    }
    int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (!digits)
        return fail(p, l->no, MT_ERR_FORMAT, "unknown escape '\\%.*s' in a double-quoted scalar", clen,
                    l->s + *i - 1), 0;
    uint32_t v = 0;
    for (int d = 0; d < digits; d++, (*i)++) {
        char h = *i < l->len ? l->s[*i] : 0;
        int x = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (x < 0)
            return fail(p, l->no, MT_ERR_FORMAT, "'\\%c' needs %d hex digits", c, digits), 0;
        v = v << 4 | (uint32_t)x;
    }
    if (v == 0)
        return fail(p, l->no, MT_ERR_UNSUPPORTED, "escape of a NUL character is not supported"), 0;
    if ((v >= 0xD800 && v <= 0xDFFF) || v > 0x10FFFF)
        return fail(p, l->no, MT_ERR_FORMAT, "escape '\\%c' gives U+%04X, not a Unicode scalar value", c,
                    (unsigned)v), 0;
    return v;
}

/* A quoted scalar starting at s[*i] (the quote): its text, malloc'd, NUL-
 * terminated, length in *n; *i moves past the closing quote.  The text grows
 * at most by half: \L and \P (2 characters) are the only escapes shorter
 * than their UTF-8 (3 bytes). */
static char *quoted(yparser *p, const yline *l, int *i, size_t *n)
{
    char q = l->s[*i];
    char *o = malloc((size_t)(l->len - *i) / 2 * 3 + 4), *text = NULL;
    if (!o)
        return nomem(p, l->no);
    *n = 0;
    for ((*i)++;;) {
        if (*i >= l->len || (q == '"' && l->s[*i] == '\\' && *i + 1 >= l->len)) {
            fail(p, l->no, MT_ERR_UNSUPPORTED, "a quoted scalar over several lines is not supported "
                 "(or the closing %c is missing)", q);
            goto done;
        }
        char c = l->s[(*i)++];
        if (c == q && q == '\'' && *i < l->len && l->s[*i] == '\'') {
            o[(*n)++] = '\'';
            (*i)++;
        } else if (c == q) {
            break;
        } else if (c == '\\' && q == '"') {
            uint32_t cp = escape(p, l, i);
            if (!cp)
                goto done;
            *n += mt_utf8_encode(cp, o + *n);
        } else {
            o[(*n)++] = c;
        }
    }
    o[*n] = 0;
    text = o;
    o = NULL; /* the caller owns it now */
done:
    free(o);
    return text;
}

/* Can a plain scalar start at s[i]?  0, or -1 with the reason recorded. */
static int plain_start(yparser *p, const yline *l, int i)
{
    char c = l->s[i], next = i + 1 < l->len ? l->s[i + 1] : ' ';
    switch (c) {
    case '&': return fail(p, l->no, MT_ERR_UNSUPPORTED, "anchors ('&') are not supported"), -1;
    case '*': return fail(p, l->no, MT_ERR_UNSUPPORTED, "aliases ('*') are not supported"), -1;
    case '!': return fail(p, l->no, MT_ERR_UNSUPPORTED, "tags ('!') are not supported"), -1;
    case '|': case '>':
        return fail(p, l->no, MT_ERR_UNSUPPORTED, "block scalars ('%c') are not supported", c), -1;
    case '%': case '@': case '`': case ',': case ']': case '}': case '[': case '{': case '#':
        return fail(p, l->no, MT_ERR_FORMAT, "'%c' cannot start a plain scalar here (quote it)", c), -1;
    case '?':
        if (is_ws(next))
            return fail(p, l->no, MT_ERR_UNSUPPORTED, "complex keys ('? ') are not supported"), -1;
        break;
    case ':':
        if (is_ws(next))
            return fail(p, l->no, MT_ERR_FORMAT, "a mapping value without a key"), -1;
        break;
    case '-':
        if (is_ws(next))
            return fail(p, l->no, MT_ERR_FORMAT, "a sequence entry is not allowed here"), -1;
        break;
    }
    return 0;
}

static int is_flow_ind(char c)
{
    return c == ',' || c == '[' || c == ']' || c == '{' || c == '}';
}

/* The end of a plain scalar starting at s[i]: a comment, the line's end and,
 * in a flow collection, a flow indicator or ':' followed by a blank or one. */
static int plain_end(const yline *l, int i, int flow)
{
    for (; i < l->len; i++) {
        char c = l->s[i], next = i + 1 < l->len ? l->s[i + 1] : ' ';
        if (c == '#' && i > 0 && is_ws(l->s[i - 1]))
            break;
        if (flow && (is_flow_ind(c) || (c == ':' && (is_ws(next) || is_flow_ind(next)))))
            break;
    }
    return i;
}

static int trimmed_end(const yline *l, int from, int to)
{
    while (to > from && is_ws(l->s[to - 1]))
        to--;
    return to;
}

static int matches(const char *s, size_t n, const char *const *set)
{
    for (; *set; set++)
        if (strlen(*set) == n && !memcmp(*set, s, n))
            return 1;
    return 0;
}

/* [-+]? digits, optionally . digits, optionally e[-+]?digits, at least one mantissa digit. */
static int is_decimal(const char *s, size_t n, int *is_int)
{
    size_t i = 0, mant = 0, exp = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        mant++;
    *is_int = i == n && mant > 0;
    if (i < n && s[i] == '.')
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            mant++;
    if (mant && i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            exp++;
        if (!exp)
            return 0;
    }
    return mant > 0 && i == n;
}

/* A plain value as YAML's core schema types it (yaml.h); strings otherwise. */
static json_t *typed(const char *s, size_t n)
{
    static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL},
                             *const trues[] = {"true", "True", "TRUE", NULL},
                             *const falses[] = {"false", "False", "FALSE", NULL};
    if (n == 0 || matches(s, n, nulls))
        return json_null();
    if (matches(s, n, trues))
        return json_true();
    if (matches(s, n, falses))
        return json_false();
    int is_int;
    if (n < 64 && is_decimal(s, n, &is_int)) {
        char buf[64], *end;
        memcpy(buf, s, n);
        buf[n] = 0;
        errno = 0;
        if (is_int) {
            long long v = strtoll(buf, &end, 10);
            if (errno == 0 && *end == 0)
                return json_integer((json_int_t)v);
        } else {
            double d = strtod(buf, &end);
            if (*end == 0 && isfinite(d))
                return json_real(d);
        }
    }
    return json_stringn(s, n);
}

/* ---- mappings --------------------------------------------------------------------- */
/* m[key] = v, taking v (NULL: an error is already recorded): 0, or -1. */
static int set_key(yparser *p, const yline *l, json_t *m, const char *key, json_t *v)
{
    if (!v)
        return -1;
    if (json_object_get(m, key)) {
        json_decref(v);
        return fail(p, l->no, MT_ERR_FORMAT, "duplicate key '%.*s'", clip(key, strlen(key)), key), -1;
    }
    if (json_object_set_new(m, key, v))
        return nomem(p, l->no), -1;
    return 0;
}

/* ---- flow collections (one line) ----------------------------------------------- */
static json_t *flow_node(yparser *p, const yline *l, int *i);

static void skip_ws(const yline *l, int *i)
{
    while (*i < l->len && is_ws(l->s[*i]))
        (*i)++;
}

static void *multi_line_flow(yparser *p, const yline *l)
{
    return fail(p, l->no, MT_ERR_UNSUPPORTED, "a flow collection over several lines is not supported "
                "(or its closing bracket is missing)");
}

/* After an entry: ',' (then more, or the close) or the close itself.  1 when
 * the collection is closed, 0 to go on, -1 on error. */
static int flow_next(yparser *p, const yline *l, int *i, char close)
{
    skip_ws(l, i);
    if (*i >= l->len)
        return multi_line_flow(p, l), -1;
    char c = l->s[*i];
    int clen = char_len(l, *i);
    (*i)++;
    if (c == close)
        return 1;
    if (c != ',')
        return fail(p, l->no, MT_ERR_FORMAT, "expected ',' or '%c' in a flow collection, got '%.*s'", close, clen,
                    l->s + *i - 1), -1;
    skip_ws(l, i);
    if (*i < l->len && l->s[*i] == close) {                 /* a trailing comma */
        (*i)++;
        return 1;
    }
    return 0;
}

static json_t *flow_seq(yparser *p, const yline *l, int *i)
{
    json_t *a = json_array();
    if (!a)
        return nomem(p, l->no);
    (*i)++;
    skip_ws(l, i);
    if (*i < l->len && l->s[*i] == ']') {
        (*i)++;
        return a;
    }
    for (int r = 0; r == 0;) {
        json_t *v = flow_node(p, l, i);
        if (!v)
            break;
        if (json_array_append_new(a, v)) {
            nomem(p, l->no);
            break;
        }
        skip_ws(l, i);
        if (*i < l->len && l->s[*i] == ':') {
            fail(p, l->no, MT_ERR_UNSUPPORTED, "a key: value pair inside a flow sequence is not supported");
            break;
        }
        if ((r = flow_next(p, l, i, ']')) == 1)
            return a;
    }
    json_decref(a);
    return NULL;
}

/* A key inside {...}: quoted, or plain up to ':'. */
static char *flow_key(yparser *p, const yline *l, int *i)
{
    size_t n;
    if (l->s[*i] == '"' || l->s[*i] == '\'')
        return quoted(p, l, i, &n);
    if (plain_start(p, l, *i) < 0)
        return NULL;
    int end = plain_end(l, *i, 1), tend = trimmed_end(l, *i, end);
    char *k = strndup(l->s + *i, (size_t)(tend - *i));
    *i = end;
    return k ? k : nomem(p, l->no);
}

static int flow_map_entry(yparser *p, const yline *l, int *i, json_t *m)
{
    char *k = flow_key(p, l, i);
    if (!k)
        return -1;
    json_t *v = NULL;
    skip_ws(l, i);
    if (*i >= l->len || l->s[*i] != ':') {
        fail(p, l->no, MT_ERR_FORMAT, "expected ':' after the key '%.*s' in a flow mapping", clip(k, strlen(k)), k);
    } else {
        (*i)++;
        skip_ws(l, i);
        v = *i < l->len && (l->s[*i] == ',' || l->s[*i] == '}') ? json_null() : flow_node(p, l, i);
    }
    int r = set_key(p, l, m, k, v);
    free(k);
    return r;
}

static json_t *flow_map(yparser *p, const yline *l, int *i)
{
    json_t *m = json_object();
    if (!m)
        return nomem(p, l->no);
    (*i)++;
    skip_ws(l, i);
    if (*i < l->len && l->s[*i] == '}') {
        (*i)++;
        return m;
    }
    for (int r = 0; r == 0;) {
        if (*i >= l->len) {
            multi_line_flow(p, l);
            break;
        }
        if (flow_map_entry(p, l, i, m) < 0)
            break;
        if ((r = flow_next(p, l, i, '}')) == 1)
            return m;
    }
    json_decref(m);
    return NULL;
}

static json_t *flow_node(yparser *p, const yline *l, int *i)
{
    skip_ws(l, i);
    if (*i >= l->len)
        return multi_line_flow(p, l);
    if (p->depth >= MT_YAML_MAX_DEPTH)
        return fail(p, l->no, MT_ERR_FORMAT, "nesting deeper than %d", MT_YAML_MAX_DEPTH);
    p->depth++;
    json_t *v = NULL;
    char c = l->s[*i];
    size_t n;
    if (c == '[') {
        v = flow_seq(p, l, i);
    } else if (c == '{') {
        v = flow_map(p, l, i);
    } else if (c == '"' || c == '\'') {
        char *s = quoted(p, l, i, &n);
        if (s && !(v = json_stringn(s, n)))
            nomem(p, l->no);
        free(s);
    } else if (plain_start(p, l, *i) == 0) {
        int end = plain_end(l, *i, 1), tend = trimmed_end(l, *i, end);
        if (!(v = typed(l->s + *i, (size_t)(tend - *i))))
            nomem(p, l->no);
        *i = end;
    }
    p->depth--;
    return v;
}

/* ---- block structure ------------------------------------------------------------- */
static json_t *block_node(yparser *p);

static int is_seq_entry(const yline *l)
{
    return l->s[l->col] == '-' && (l->col + 1 == l->len || is_ws(l->s[l->col + 1]));
}

/* A value that fills the rest of line l from i: a flow collection or a
 * scalar, with nothing but a comment after it. */
static json_t *inline_value(yparser *p, const yline *l, int i)
{
    json_t *v = NULL;
    char c = l->s[i];
    if (c == '[' || c == '{' || c == '"' || c == '\'') {
        v = flow_node(p, l, &i);
    } else if (plain_start(p, l, i) == 0) {
        int end = plain_end(l, i, 0), tend = trimmed_end(l, i, end);
        for (int k = i; k < tend; k++)
            if (l->s[k] == ':' && (k + 1 == tend || is_ws(l->s[k + 1])))
                return fail(p, l->no, MT_ERR_FORMAT, "': ' inside a plain value (a mapping cannot start on "
                            "the line of a key; quote the value)");
        if (!(v = typed(l->s + i, (size_t)(tend - i))))
            return nomem(p, l->no);
        i = end;
    }
    if (v && !rest_empty(l, i)) {
        json_decref(v);
        return fail(p, l->no, MT_ERR_FORMAT, "unexpected text after the value: '%.*s'",
                    clip(l->s + i, (size_t)(l->len - i)), l->s + i);    /* lines are not NUL-terminated */
    }
    return v;
}

/* If line l is a mapping entry "key: ...": 1, *key (malloc'd) and *after
 * (the index after the ':'); 0 when it is not; -1 on error. */
static int map_key(yparser *p, const yline *l, char **key, int *after)
{
    int i = l->col;
    char c = l->s[i];
    *key = NULL;
    if (c == '"' || c == '\'') {
        size_t n;
        char *k = quoted(p, l, &i, &n);
        if (!k)
            return -1;
        skip_ws(l, &i);
        if (i < l->len && l->s[i] == ':' && (i + 1 == l->len || is_ws(l->s[i + 1]))) {
            *key = k;                               /* no NUL inside: escapes of NUL are refused */
            *after = i + 1;
            return 1;
        }
        free(k);
        return 0;
    }
    if (c == '[' || c == '{')
        return 0;
    for (int k = i; k < l->len; k++) {
        if (l->s[k] == '#' && k > i && is_ws(l->s[k - 1]))
            return 0;
        if (l->s[k] == ':' && (k + 1 == l->len || is_ws(l->s[k + 1]))) {
            if (plain_start(p, l, i) < 0)
                return -1;
            if (!(*key = strndup(l->s + i, (size_t)(trimmed_end(l, i, k) - i))))
                return nomem(p, l->no), -1;
            *after = k + 1;
            return 1;
        }
    }
    return 0;
}

/* The value of a key whose line ends after the ':': a node on the next lines
 * (more indented, or a sequence at the key's own indentation), else null. */
static json_t *value_below(yparser *p, int key_col)
{
    if (p->at < p->n) {
        yline *nx = &p->ln[p->at];
        if (nx->col > key_col || (nx->col == key_col && is_seq_entry(nx)))
            return block_node(p);
    }
    return json_null();
}

static int map_entry(yparser *p, json_t *m, int col)
{
    yline *l = &p->ln[p->at];
    char *key;
    int after, r = map_key(p, l, &key, &after);
    if (r <= 0)
        return r < 0 ? -1 : (fail(p, l->no, MT_ERR_FORMAT, "expected 'key: value' in a block mapping"), -1);
    json_t *v;
    int i = after;
    skip_ws(l, &i);
    p->at++;
    if (rest_empty(l, i))
        v = value_below(p, col);
    else if (l->s[i] == '-' && (i + 1 == l->len || is_ws(l->s[i + 1])))
        v = fail(p, l->no, MT_ERR_FORMAT, "a block sequence cannot start on the line of its key");
    else
        v = inline_value(p, l, i);
    r = set_key(p, l, m, key, v);
    free(key);
    return r;
}

/* Lines at column col, each one entry; stops at a line less indented.  A line
 * indented more than col here belongs to no entry: an error. */
static json_t *block_collection(yparser *p, int col, int seq)
{
    json_t *c = seq ? json_array() : json_object();
    if (!c)
        return nomem(p, p->ln[p->at].no);
    while (p->at < p->n && p->ln[p->at].col >= col) {
        yline *l = &p->ln[p->at];
        if (l->col > col) {
            fail(p, l->no, MT_ERR_FORMAT, "unexpected indentation (column %d, the %s is at %d; scalars over "
                 "several lines are not supported)", l->col + 1, seq ? "sequence" : "mapping", col + 1);
            break;
        }
        if (seq != is_seq_entry(l)) {
            if (seq)
                break;              /* a key after a sequence written at its key's indentation */
            fail(p, l->no, MT_ERR_FORMAT, "a sequence entry where a mapping key is expected");
            break;
        }
        if (!seq) {
            if (map_entry(p, c, col) < 0)
                break;
            continue;
        }
        int i = l->col + 1;
        skip_ws(l, &i);
        json_t *v;
        if (rest_empty(l, i)) {
            p->at++;
            v = p->at < p->n && p->ln[p->at].col > col ? block_node(p) : json_null();
        } else {
            l->col = i;                                     /* "- x": x is a node at its own column */
            v = block_node(p);
        }
        if (!v || json_array_append_new(c, v)) {
            if (v)
                nomem(p, l->no);
            break;
        }
    }
    if (p->st != MT_OK) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* The node starting at the current line's column. */
static json_t *block_node(yparser *p)
{
    yline *l = &p->ln[p->at];
    if (p->depth >= MT_YAML_MAX_DEPTH)
        return fail(p, l->no, MT_ERR_FORMAT, "nesting deeper than %d", MT_YAML_MAX_DEPTH);
    p->depth++;
    json_t *v;
    char *key;
    int after, r;
    if (is_seq_entry(l)) {
        v = block_collection(p, l->col, 1);
    } else if ((r = map_key(p, l, &key, &after)) != 0) {
        free(key);
        v = r > 0 ? block_collection(p, l->col, 0) : NULL;
    } else {
        v = inline_value(p, l, l->col);
        p->at++;
    }
    p->depth--;
    return v;
}

/* ---- API ------------------------------------------------------------------------- */
mt_status mt_yaml_parse(const char *name, const char *text, size_t len, json_t **out, mt_err *err)
{
    yparser p = {.name = name, .err = err};
    *out = NULL;
    if (len > MT_YAML_MAX_BYTES)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %zu bytes, over the %zu-byte limit of a YAML file", name, len,
                          MT_YAML_MAX_BYTES);
    json_t *root = NULL;
    if (split_lines(&p, text, len) == MT_OK) {
        if (p.n == 0 && !(root = json_null()))
            nomem(&p, 1);
        else if (p.n > 0 && (root = block_node(&p)) && p.at < p.n)
            fail(&p, p.ln[p.at].no, MT_ERR_FORMAT, "this line (column %d) belongs to no node: bad "
                 "indentation, or a second top-level node", p.ln[p.at].col + 1);
    }
    free(p.ln);
    if (p.st != MT_OK) {
        json_decref(root);
        return p.st;
    }
    *out = root;
    return MT_OK;
}

mt_status mt_yaml_load(const char *path, json_t **out, mt_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mt_err_set(err, MT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    mt_status st = MT_OK;
    char *buf = NULL;
    size_t size = 0;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))
        st = mt_err_set(err, MT_ERR_IO, "%s: not a regular file", path);
    else if ((uint64_t)sb.st_size > MT_YAML_MAX_BYTES)
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: %lld bytes, over the %zu-byte limit of a YAML file", path,
                        (long long)sb.st_size, MT_YAML_MAX_BYTES);
    else if (!(buf = malloc((size = (size_t)sb.st_size) + 1)))
        st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
    else if (fread(buf, 1, size, f) != size)
        st = mt_err_set(err, MT_ERR_IO, "%s: read error", path);
    fclose(f);
    if (st == MT_OK)
        st = mt_yaml_parse(path, buf, size, out, err);
    free(buf);
    return st;
}
