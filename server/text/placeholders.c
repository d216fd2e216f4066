/* placeholders: the placeholders of a text (placeholders.h). */
#include "placeholders.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static int is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static int is_high(char c) { return (unsigned char)c >= 0x80; }

/* The index of the first ')' or '>' (close) after s[k] within 64 bytes, the
 * bytes between being a name (name: letters, digits, '_') or anything; 0 when none. */
static size_t closing(const char *s, size_t k, size_t n, char close, int name)
{
    for (size_t j = k + 1; j < n && j < k + 64; j++) {
        if (s[j] == close)
            return j;
        if (name && !is_word(s[j]))
            return 0;
    }
    return 0;
}

/* printf's (with %1$, Python's %(name), Ruby's %<name>), Ruby's %{name}, or
 * else Qt's %1: its length at s[i], 0 if none ("%5.2f" and "%05d" are
 * printf's, "%1 of" and "%1." Qt's). */
static size_t printf_at(const char *s, size_t i, size_t n)
{
    size_t k = i + 1, qt = 0;
    if (k < n && s[k] == '%')
        return 2;
    if (k < n && s[k] == '{') {                             /* %{name} */
        size_t e = closing(s, k, n, '}', 1);
        return e > k + 1 ? e + 1 - i : 0;
    }
    if (k < n && (s[k] == '(' || s[k] == '<')) {            /* %(name)s, %<name>d */
        size_t e = closing(s, k, n, s[k] == '(' ? ')' : '>', s[k] == '<');
        if (!e)
            return 0;
        k = e + 1;
    } else {
        size_t j = k;
        while (j < n && is_digit(s[j]))
            j++;
        if (j > k && j < n && s[j] == '$')
            k = j + 1;                                      /* %1$ */
        else if (j > k && (j >= n || !is_alpha(s[j]) || s[k] == '0'))
            qt = j - i;                                     /* Qt's %1, unless printf's goes on */
    }
    while (k < n && s[k] && strchr("-+#0'I", s[k]))         /* flags (not ' ': "50% of") */
        k++;
    while (k < n && (is_digit(s[k]) || s[k] == '*' || s[k] == '$'))
        k++;
    if (k < n && s[k] == '.') {
        k++;
        while (k < n && (is_digit(s[k]) || s[k] == '*' || s[k] == '$'))
            k++;
    }
    while (k < n && s[k] && strchr("hlLqjzZt", s[k]))
        k++;
    return k < n && s[k] && strchr("diouxXeEfFgGaAcsSpnmr@", s[k]) ? k + 1 - i : qt;
}

/* An ICU argument at s[i] == '{': "{count, plural, one {# file} other {#
 * files}}", "{n, number}" (a name, a comma, a type of ICU's), its nested
 * braces balanced within 1024 bytes. */
static size_t icu_at(const char *s, size_t i, size_t n)
{
    size_t k = i + 1;
    while (k < n && is_ws(s[k]))
        k++;
    size_t w = k;
    while (k < n && is_word(s[k]))
        k++;
    if (k == w)
        return 0;
    while (k < n && is_ws(s[k]))
        k++;
    if (k >= n || s[k] != ',')
        return 0;
    static const char *const TYPES[] = { "plural", "select", "selectordinal", "number", "date", "time", "spellout",
                                         "ordinal", "duration", "choice" };
    k++;
    while (k < n && is_ws(s[k]))
        k++;
    size_t t = k;                       /* its type: not "{a, b}" of prose */
    while (k < n && is_alpha(s[k]))
        k++;
    int typed = 0;
    for (size_t j = 0; j < sizeof TYPES / sizeof *TYPES; j++)
        typed |= strlen(TYPES[j]) == k - t && !memcmp(s + t, TYPES[j], k - t);
    if (!typed || k >= n || !(is_ws(s[k]) || s[k] == ',' || s[k] == '}'))
        return 0;
    int depth = 1;
    for (; k < n && k < i + 1024; k++) {
        if (s[k] == '{' && ++depth > 16)
            return 0;
        if (s[k] == '}' && --depth == 0)
            return k + 1 - i;
    }
    return 0;
}

/* Braces at s[i] ('{' or '}'). */
static size_t brace_at(const char *s, size_t i, size_t n)
{
    if (s[i] == '}')
        return i + 1 < n && s[i + 1] == '}' ? 2 : 0;        /* }} */
    if (i + 1 < n && s[i + 1] == '{') {                     /* {{name}}, {{ name }}; else {{ alone */
        for (size_t k = i + 2; k + 1 < n && k < i + 64; k++) {
            if (s[k] == '}')
                return s[k + 1] == '}' && k > i + 2 ? k + 2 - i : 2;
            if (s[k] == '{' || s[k] == '\n')
                return 2;
        }
        return 2;
    }
    for (size_t k = i + 1; k < n && k < i + 64; k++) {     /* {name}: no space nor brace inside */
        if (s[k] == '}')
            return k + 1 - i;
        if (s[k] == '{' || is_ws(s[k]))
            break;
    }
    return icu_at(s, i, n);
}

/* i18next's nesting $t(key) or $t(key, {"count": 2}) at s[i] == '$': up to
 * its balanced ')' on the same line, at most 128 bytes. */
static size_t nesting_at(const char *s, size_t i, size_t n)
{
    int depth = 0;
    for (size_t k = i + 2; k < n && k < i + 128; k++) {
        if (s[k] == '\n')
            return 0;
        depth += s[k] == '(';
        if (s[k] == ')' && --depth == 0)
            return k > i + 3 ? k + 1 - i : 0;
    }
    return 0;
}

/* ${name} (or $t(...)) at s[i] == '$'. */
static size_t dollar_at(const char *s, size_t i, size_t n)
{
    if (i + 2 < n && s[i + 1] == 't' && s[i + 2] == '(')
        return nesting_at(s, i, n);
    if (i + 1 >= n || s[i + 1] != '{')
        return 0;
    for (size_t k = i + 2; k < n && k < i + 64; k++) {
        if (s[k] == '}')
            return k > i + 2 ? k + 1 - i : 0;
        if (s[k] == '{' || s[k] == '\n')
            return 0;
    }
    return 0;
}

/* Laravel's :name at s[i] == ':'. */
static size_t colon_at(const char *s, size_t i, size_t n)
{
    if (i > 0 && (is_word(s[i - 1]) || is_high(s[i - 1]) || s[i - 1] == ':' || s[i - 1] == '/'))
        return 0;
    size_t k = i + 1;
    if (k >= n || !(is_alpha(s[k]) || s[k] == '_'))
        return 0;
    while (k < n && is_word(s[k]))
        k++;
    if (k - i < 3 || (k < n && (s[k] == ':' || is_high(s[k]))))
        return 0;                                           /* ":D", ":smile:", ":nameé" */
    return k - i;
}

/* An HTML tag at s[i] == '<' (SRV_PH_MARKUP). */
static size_t tag_at(const char *s, size_t i, size_t n)
{
    if (!(i + 1 < n && (is_alpha(s[i + 1]) || (s[i + 1] == '/' && i + 2 < n && is_alpha(s[i + 2])))))
        return 0;
    for (size_t k = i + 1; k < n && k < i + 256; k++) {
        if (s[k] == '>')
            return k + 1 - i;
        if (s[k] == '<')
            return 0;
    }
    return 0;
}

/* A character reference at s[i] == '&' (SRV_PH_MARKUP). */
static size_t ref_at(const char *s, size_t i, size_t n)
{
    if (i + 2 >= n)
        return 0;
    size_t k = i + 1;
    if (s[k] == '#')
        k++;
    size_t w = k;
    while (k < n && k < i + 32 && (is_alpha(s[k]) || is_digit(s[k])))
        k++;
    return k > w && k < n && s[k] == ';' ? k + 1 - i : 0;
}

static int url_char(char c)
{
    return (unsigned char)c > 0x20 && (unsigned char)c < 0x7f && !strchr("<>\"`{}|\\^", c);
}

/* A URL at s[i] (a word's start): scheme://... or www.host.tld... */
static size_t url_at(const char *s, size_t i, size_t n)
{
    if (i > 0 && (is_word(s[i - 1]) || is_high(s[i - 1]) || strchr("./@-+", s[i - 1])))
        return 0;
    size_t k = i, body;
    int www = n - i >= 4 && !strncasecmp(s + i, "www.", 4);
    if (www) {
        body = k = i + 4;
    } else {
        if (!is_alpha(s[k]))
            return 0;
        while (k < n && k < i + 32 && (is_alpha(s[k]) || is_digit(s[k]) || s[k] == '+' || s[k] == '.' || s[k] == '-'))
            k++;
        if (n - k < 3 || memcmp(s + k, "://", 3))
            return 0;
        body = k += 3;
    }
    while (k < n && url_char(s[k]))
        k++;
    while (k > body) {                  /* the sentence's punctuation after it, an unbalanced bracket */
        char c = s[k - 1];
        int open = 0, close = 0;
        if (c == ')' || c == ']')
            for (size_t j = i; j < k; j++)
                open += s[j] == (c == ')' ? '(' : '['), close += s[j] == c;
        if (!strchr(".,;:!?'*", c) && close <= open)
            break;
        k--;
    }
    if (k == body)
        return 0;
    if (www) {                          /* a host of two labels at least: www.example.org */
        size_t h = body;
        while (h < k && (is_alpha(s[h]) || is_digit(s[h]) || s[h] == '-'))
            h++;
        if (h == body || h + 1 >= k || s[h] != '.' || !(is_alpha(s[h + 1]) || is_digit(s[h + 1])))
            return 0;
    }
    return k - i;
}

static int local_char(char c) { return is_word(c) || (c && strchr(".%+-", c)); }

/* An e-mail address at s[i] (a word's start). */
static size_t email_at(const char *s, size_t i, size_t n)
{
    if (i > 0 && (local_char(s[i - 1]) || is_high(s[i - 1])))
        return 0;
    size_t k = i;
    while (k < n && k < i + 64 && local_char(s[k]))
        k++;
    if (k == i || k >= n || s[k] != '@' || s[i] == '.' || s[k - 1] == '.')
        return 0;
    size_t host = ++k, end = 0, tld = 0;
    int labels = 0, alpha = 0;
    while (k < n && k < host + 255) {       /* labels of letters, digits and '-', dot-separated */
        size_t a = k;
        alpha = 1;
        while (k < n && k < host + 255 && (is_alpha(s[k]) || is_digit(s[k]) || s[k] == '-'))
            alpha &= is_alpha(s[k++]);
        if (k == a)
            break;
        labels++;
        end = k;
        tld = k - a;
        if (k + 1 < n && s[k] == '.' && (is_alpha(s[k + 1]) || is_digit(s[k + 1])))
            k++;
        else
            break;
    }
    return labels >= 2 && alpha && tld >= 2 ? end - i : 0;     /* the last label: 2+ letters */
}

size_t srv_ph_at(const char *s, size_t i, size_t n, int flags, char *kind)
{
    *kind = SRV_PH_OTHER;
    if (i >= n)
        return 0;
    switch (s[i]) {
    case '%': {
        size_t k = printf_at(s, i, n);
        if (k >= 2 && !strchr("%({<", s[i + 1]) && !memchr(s + i, '$', k) && !is_digit(s[i + k - 1]))
            *kind = SRV_PH_ORDERED;
        return k;
    }
    case '{':
    case '}':
        return brace_at(s, i, n);
    case '$':
        return dollar_at(s, i, n);
    case ':':
        return colon_at(s, i, n);
    case '<': {
        size_t k = flags & SRV_PH_MARKUP ? tag_at(s, i, n) : 0;
        if (k)
            *kind = SRV_PH_TAG;
        return k;
    }
    case '&':
        return flags & SRV_PH_MARKUP ? ref_at(s, i, n) : 0;
    default:
        break;
    }
    if (!is_word(s[i]))
        return 0;
    size_t k = url_at(s, i, n);
    return k ? k : email_at(s, i, n);
}

int srv_ph_scan(const char *s, size_t n, int flags, srv_ph *out, int cap)
{
    int m = 0;
    for (size_t i = 0; i < n;) {
        char kind;
        size_t k = srv_ph_at(s, i, n, flags, &kind);
        if (!k) {
            i++;
            continue;
        }
        if (m == cap)
            return cap + 1;
        out[m++] = (srv_ph){ s + i, k, kind };
        i += k;
    }
    return m;
}

static int ph_cmp(const void *a, const void *b)
{
    const srv_ph *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* The same of one kind, in order. */
static int same_order(const srv_ph *a, int na, const srv_ph *b, int nb, char kind)
{
    int i = 0, j = 0;
    for (;;) {
        while (i < na && a[i].kind != kind)
            i++;
        while (j < nb && b[j].kind != kind)
            j++;
        if (i == na || j == nb)
            return i == na && j == nb;
        if (ph_cmp(&a[i++], &b[j++]))
            return 0;
    }
}

int srv_ph_kept(const char *src, size_t sn, const char *t, size_t tn, int flags)
{
    enum { CAP = 64 };
    srv_ph a[CAP + 1], b[CAP + 1];
    int na = srv_ph_scan(src, sn, flags, a, CAP), nb = srv_ph_scan(t, tn, flags, b, CAP);
    if (na > CAP || na != nb)
        return 0;
    if (!same_order(a, na, b, nb, SRV_PH_ORDERED) || !same_order(a, na, b, nb, SRV_PH_TAG))
        return 0;
    qsort(a, (size_t)na, sizeof *a, ph_cmp);
    qsort(b, (size_t)nb, sizeof *b, ph_cmp);
    for (int k = 0; k < na; k++)
        if (ph_cmp(&a[k], &b[k]))
            return 0;
    return 1;
}
