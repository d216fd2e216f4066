/* doc_res: the spans of a resource file's values, their translations written
 * back escaped the format's way (doc_res.h). */
#include "doc_res.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/placeholders.h"
#include "util/check.h"
#include "util/utf8.h"

int srv_res_line(const char *data, size_t at)
{
    int line = 1;
    for (size_t i = 0; i < at; i++)
        line += data[i] == '\n';
    return line;
}

mt_status srv_res_new(const char *data, size_t len, const srv_doc_limits *lim, srv_res **out, mt_err *err)
{
    *out = NULL;
    size_t ok = mt_utf8_valid_prefix(data, len);
    if (ok < len)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: the file is not UTF-8 (byte %zu)", srv_res_line(data, ok),
                          ok);
    const char *nul = memchr(data, 0, len);
    if (nul)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: the file holds a NUL byte (offset %zu)",
                          srv_res_line(data, (size_t)(nul - data)), (size_t)(nul - data));
    srv_res *r = calloc(1, sizeof *r);
    if (!r)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    r->data = data;
    r->len = len;
    r->ascii = 1;
    for (size_t i = 0; i < len && r->ascii; i++)
        r->ascii = (unsigned char)data[i] < 0x80;
    r->max_unit = lim->max_unit_bytes;
    *out = r;
    return MT_OK;
}

int srv_res_put(srv_res_buf *v, const char *s, size_t n, size_t at)
{
    if (MT_GROW(v->map, v->cap, v->b.n + n + 1) || mt_sb_add(&v->b, s, n))
        return -1;
    for (size_t k = 0; k < n; k++)
        v->map[v->b.n - n + k] = at;
    return 0;
}

int srv_res_put_cp(srv_res_buf *v, unsigned long c, size_t at)
{
    char u[4];
    return srv_res_put(v, u, srv_res_utf8(c, u), at);
}

size_t srv_res_utf8(unsigned long c, char u[4])
{
    size_t n;
    if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
        c = 0xfffd;                     /* no character: U+FFFD, never bytes that are not UTF-8 */
    if (c < 0x80)
        u[0] = (char)c, n = 1;
    else if (c < 0x800)
        u[0] = (char)(0xc0 | c >> 6), u[1] = (char)(0x80 | (c & 0x3f)), n = 2;
    else if (c < 0x10000)
        u[0] = (char)(0xe0 | c >> 12), u[1] = (char)(0x80 | ((c >> 6) & 0x3f)), u[2] = (char)(0x80 | (c & 0x3f)), n = 3;
    else
        u[0] = (char)(0xf0 | c >> 18), u[1] = (char)(0x80 | ((c >> 12) & 0x3f)), u[2] = (char)(0x80 | ((c >> 6) & 0x3f)),
        u[3] = (char)(0x80 | (c & 0x3f)), n = 4;
    return n;
}

void srv_res_buf_free(srv_res_buf *v)
{
    free(v->b.p);
    free(v->map);
    *v = (srv_res_buf){ 0 };
}

/* The length of the space character at s[0..n) (0: not a space). */
static size_t space_at(const char *s, size_t n)
{
    uint32_t c;
    size_t m = mt_utf8_next(s, n, &c);
    return mt_utf8_is_space(c) ? m : 0;
}

/* t[0..n) has something to translate: a letter (or any non-ASCII character)
 * outside its placeholders and strftime's conversions ("%Y-%m-%d", "%H:%M"
 * are formats a program reads, not text). */
static int has_words(const char *t, size_t n)
{
    for (size_t i = 0; i < n;) {
        char kind;
        size_t k = srv_ph_at(t, i, n, 0, &kind);
        if (!k && t[i] == '%' && i + 1 < n) {
            size_t j = i + 1 + (strchr("-_0^#:", t[i + 1]) != NULL);
            if (j < n && ((t[j] >= 'a' && t[j] <= 'z') || (t[j] >= 'A' && t[j] <= 'Z')))
                k = j + 1 - i;
        }
        if (k) {
            i += k;
            continue;
        }
        unsigned char c = (unsigned char)t[i];
        if (c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            return 1;
        i++;
    }
    return 0;
}

mt_status srv_res_value(srv_res *r, const srv_res_buf *v, size_t end, int esc, int flags, size_t at, mt_err *err)
{
    const char *d = v->b.p;
    size_t a = 0, b = v->b.n, m;
    while (a < b && (m = space_at(d + a, b - a)))
        a += m;
    if (a == b || !has_words(d + a, b - a))
        return MT_OK;                           /* blank, or formats only: nothing to translate */
    for (;;) {                                  /* the last non-space character's end */
        size_t k = b - 1;
        while (k > a && ((unsigned char)d[k] & 0xc0) == 0x80)
            k--;
        if (!space_at(d + k, b - k))
            break;
        b = k;
    }
    if (b - a > r->max_unit)
        return mt_err_set(err, MT_ERR_TOO_LONG, "line %d: a value of %zu bytes; the limit is %zu (max_unit_bytes)",
                          srv_res_line(r->data, at), b - a, r->max_unit);
    if (MT_GROW(r->s, r->cap, (size_t)r->n + 1))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    srv_res_span *s = &r->s[r->n];
    *s = (srv_res_span){ .start = v->map[a], .end = b < v->b.n ? v->map[b] : end, .esc = esc,
                         .flags = a ? flags & ~SRV_RES_LEAD : flags };
    MT_ASSERT(s->start <= s->end && s->end <= r->len && (!r->n || r->s[r->n - 1].end <= s->start), err);
    if (!(s->text = strndup(d + a, b - a)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    r->n++;
    return MT_OK;
}

mt_status srv_res_token(srv_res *r, size_t start, size_t end, const char *dec, size_t n, size_t at, int flags,
                        mt_err *err)
{
    size_t a = 0, b = n, m;
    while (a < b && (m = space_at(dec + a, b - a)))
        a += m;
    if (a == b || !has_words(dec + a, b - a))
        return MT_OK;
    for (;;) {
        size_t k = b - 1;
        while (k > a && ((unsigned char)dec[k] & 0xc0) == 0x80)
            k--;
        if (!space_at(dec + k, b - k))
            break;
        b = k;
    }
    if (b - a > r->max_unit)
        return mt_err_set(err, MT_ERR_TOO_LONG, "line %d: a value of %zu bytes; the limit is %zu (max_unit_bytes)",
                          srv_res_line(r->data, at), b - a, r->max_unit);
    if (MT_GROW(r->s, r->cap, (size_t)r->n + 1))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    srv_res_span *s = &r->s[r->n];
    *s = (srv_res_span){ .start = start, .end = end, .esc = SRV_RES_YAML, .flags = SRV_RES_QUOTE | flags };
    MT_ASSERT(start <= end && end <= r->len && (!r->n || r->s[r->n - 1].end <= start), err);
    s->text = strndup(dec + a, b - a);
    s->lead = strndup(dec, a);
    s->trail = strndup(dec + b, n - b);
    r->n++;                             /* counted even when short of memory: freed with the rest */
    if (!s->text || !s->lead || !s->trail)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    return MT_OK;
}

int srv_res_units(const void *state) { return ((const srv_res *)state)->n; }
const char *srv_res_unit(const void *state, int i) { return ((const srv_res *)state)->s[i].text; }

mt_status srv_res_set(void *state, int i, const char *text, size_t len, const long *links, int n_links, mt_err *err)
{
    srv_res_span *s = &((srv_res *)state)->s[i];
    char *t = strndup(text, len);
    if (!t)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    free(s->tr);
    s->tr = t;
    s->tr_len = strlen(t);
    return MT_OK;
}

void srv_res_target(void *state, const char *lang)
{
    srv_res *r = state;
    size_t k = 0;
    for (; lang[k] && k + 1 < sizeof r->locale; k++)       /* "pt-BR" -> ARB's "pt_BR" */
        r->locale[k] = lang[k] == '-' && !r->locale_dash ? '_' : lang[k];
    r->locale[k] = 0;
}

/* c as \uXXXX (a surrogate pair above the BMP). */
static int put_u(mt_sbuf *o, uint32_t c, const char *fmt)
{
    char e[16];
    if (c >= 0x10000) {
        c -= 0x10000;
        snprintf(e, sizeof e, fmt, 0xd800 + (c >> 10));
        snprintf(e + 6, sizeof e - 6, fmt, 0xdc00 + (c & 0x3ff));
        return mt_sb_add(o, e, 12);
    }
    snprintf(e, sizeof e, fmt, c);
    return mt_sb_add(o, e, 6);
}

/* The escape of character c (bytes s[0..m)) at position first (1: the
 * span's first character) for esc: NULL when written as it is; *u set for a
 * \uXXXX escape. */
static const char *escape_of(int esc, int flags, int ascii, uint32_t c, int first, int *u)
{
    *u = 0;
    switch (esc) {
    case SRV_RES_JSON:
        if (c == '"' || c == '\\')
            return c == '"' ? "\\\"" : "\\\\";
        if (c < 0x20)
            return c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
                                                                                                             : (*u = 1, "");
        *u = c >= 0x80 && ascii;
        return *u ? "" : NULL;
    case SRV_RES_PROPS:
        if (c == '\\')
            return "\\\\";
        if ((c == ' ' || c == '=' || c == ':') && first && (flags & SRV_RES_LEAD))
            return c == ' ' ? "\\ " : c == '=' ? "\\=" : "\\:";     /* else read as the separator */
        if (c < 0x20)
            return c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\f' ? "\\f" : (*u = 1, "");
        *u = c >= 0x80 && ascii;
        return *u ? "" : NULL;
    case SRV_RES_YAML:
        if (c == '"' || c == '\\')
            return c == '"' ? "\\\"" : "\\\\";
        if (c < 0x20 || c == 0x7f || c == 0x85 || c == 0x2028 || c == 0x2029)
            return c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : (*u = 1, "");
        return NULL;
    case SRV_RES_STRINGS:
        if (c == '"' || c == '\\')
            return c == '"' ? "\\\"" : "\\\\";
        if (c < 0x20)
            return c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : (*u = 1, "");
        return NULL;
    default:                    /* Android, in text or CDATA */
        if (c == '\\' || c == '\'' || c == '"')
            return c == '\\' ? "\\\\" : c == '\'' ? "\\'" : "\\\"";
        if (c == '\n' || c == '\t')
            return c == '\n' ? "\\n" : "\\t";
        if (c < 0x20)
            return "";          /* XML 1.0 cannot hold it */
        if (first && (c == '@' || c == '?'))
            return c == '@' ? "\\@" : "\\?";
        if (esc == SRV_RES_ANDROID && (c == '&' || c == '<' || c == '>'))
            return c == '&' ? "&amp;" : c == '<' ? "&lt;" : "&gt;";
        return NULL;
    }
}

/* t[0..n) escaped for span s onto o (first: t starts the span): 0, or -1 out of memory. */
static int write_chars(mt_sbuf *o, const srv_res_span *s, int ascii, const char *t, size_t n, int first)
{
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t m = mt_utf8_next(t + i, n - i, &c);
        int u;
        const char *e = escape_of(s->esc, s->flags, ascii, c, first && i == 0, &u);
        int rc = u ? put_u(o, c, s->esc == SRV_RES_STRINGS ? "\\U%04X" : "\\u%04x")   /* YAML reads \\u too */
                 : e ? mt_sb_add(o, e, strlen(e))
                 : (s->esc == SRV_RES_CDATA && c == '>' && i >= 2 && !memcmp(t + i - 2, "]]", 2))
                     ? mt_sb_add(o, "]]><![CDATA[>", 13)
                     : c == 0xfffd && m == 1 ? mt_sb_add(o, "\xef\xbf\xbd", 3) : mt_sb_add(o, t + i, m);
        if (rc)
            return -1;
        i += m;
    }
    return 0;
}

/* Span s's translation t[0..n) onto o: 0, or -1 out of memory. */
static int write_escaped(mt_sbuf *o, const srv_res_span *s, int ascii, const char *t, size_t n)
{
    int quote = (s->flags & SRV_RES_QUOTE) != 0;
    return ((s->flags & SRV_RES_SPACE) && mt_sb_add(o, " ", 1)) || (quote && mt_sb_add(o, "\"", 1)) || (s->lead && write_chars(o, s, ascii, s->lead, strlen(s->lead), 1)) ||
                   write_chars(o, s, ascii, t, n, !s->lead || !s->lead[0]) ||
                   (s->trail && write_chars(o, s, ascii, s->trail, strlen(s->trail), 0)) ||
                   (quote && mt_sb_add(o, "\"", 1))
               ? -1
               : 0;
}

int srv_res_raw(srv_res *r, size_t start, size_t end)
{
    if (start > end || end > r->len || (r->nx && r->x[r->nx - 1].end > start) || MT_GROW(r->x, r->xcap, (size_t)r->nx + 1))
        return -1;
    r->x[r->nx] = (srv_res_span){ .start = start, .end = end };
    return r->nx++;
}

int srv_res_raw_set(srv_res *r, int i, const char *s, size_t n)
{
    char *t = malloc(n + 1);
    if (!t)
        return -1;
    memcpy(t, s, n);
    t[n] = 0;
    free(r->x[i].tr);
    r->x[i].tr = t;
    r->x[i].tr_len = n;
    return 0;
}

mt_status srv_res_render(const void *state, char **out, size_t *len, mt_err *err)
{
    const srv_res *r = state;
    mt_sbuf o = { 0 };
    size_t at = 0;
    int i = 0, j = 0, loc = r->has_locale && r->locale[0];
    if (mt_sb_reserve(&o, r->len + 1))
        goto nomem;
    for (;;) {                  /* the units', the raw spans' and the locale's replacements in source order */
        size_t si = i < r->n ? r->s[i].start : SIZE_MAX, sj = j < r->nx ? r->x[j].start : SIZE_MAX;
        size_t sl = loc ? r->loc_start : SIZE_MAX;
        if (si == SIZE_MAX && sj == SIZE_MAX && sl == SIZE_MAX)
            break;
        if (sl <= si && sl <= sj) {
            loc = 0;
            if (at > r->loc_start)
                continue;
            if (mt_sb_add(&o, r->data + at, r->loc_start - at) || mt_sb_add(&o, r->locale, strlen(r->locale)))
                goto nomem;
            at = r->loc_end;
            continue;
        }
        int raw = sj < si;
        const srv_res_span *s = raw ? &r->x[j++] : &r->s[i++];
        if (!s->tr || at > s->start)
            continue;                           /* copied with the bytes around it */
        if (mt_sb_add(&o, r->data + at, s->start - at) ||
            (raw ? mt_sb_add(&o, s->tr, s->tr_len) : write_escaped(&o, s, r->ascii, s->tr, s->tr_len)))
            goto nomem;
        at = s->end;
    }
    if (mt_sb_add(&o, r->data + at, r->len - at))
        goto nomem;
    *out = o.p;
    *len = o.n;
    return MT_OK;
nomem:
    free(o.p);
    return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
}

void srv_res_free(void *state)
{
    srv_res *r = state;
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        free(r->s[i].text);
        free(r->s[i].tr);
        free(r->s[i].lead);
        free(r->s[i].trail);
    }
    free(r->s);
    for (int i = 0; i < r->nx; i++)
        free(r->x[i].tr);
    free(r->x);
    if (r->own_free)
        r->own_free(r->own);
    free(r);
}
