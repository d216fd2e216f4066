/* doc_po: gettext .po and .pot (document.h, format po).
 *
 * Entries are comment lines (#, #. #: #, #| and the obsolete #~), then
 * msgctxt, msgid, msgid_plural, msgstr or msgstr[0..n), each a string that
 * may go on over "..." lines.  An entry whose msgid is not empty and whose
 * msgstr (every msgstr[k]) is empty gives units: those of its msgid (escapes
 * decoded, lines joined, its leading and trailing whitespace set aside and put
 * back around the translation), then, for a plural entry, those of its
 * msgid_plural.  The header (msgid ""), entries already translated, obsolete
 * ones and those without a letter outside their placeholders give none, and
 * like everything else are copied byte for byte.
 *
 * A filled entry: its msgstr lines written anew (escaped; a string holding a
 * line break is written gettext's way, "" then a line per \n), msgstr[0] from
 * the singular's translation and msgstr[1..nplurals) from the plural's
 * (nplurals from the header's Plural-Forms, else 2), and "fuzzy" added to its
 * "#," line (or a "#, fuzzy" line before its "#|" or msgctxt/msgid lines):
 * machine translation is for a translator to review.
 *
 * Placeholders stay exactly: the model never sees them.  A msgid (and its
 * plural) is made an HTML fragment for markup/html.h: its text escaped, each
 * placeholder (text/placeholders.h with SRV_PH_MARKUP: printf %s, %5.2f,
 * %1$s, %%; python %(name)s; Qt %1; brace {0} {name} {{count}}; ICU
 * arguments; ${x}; :name; URLs and e-mail addresses; tags; entities &amp;)
 * an opaque <code class="notranslate po-ph">, each
 * line break a <br class="po-nl"> (so each line is a unit of its own), each
 * whitespace run other than one space an opaque <code class="notranslate
 * po-ws"> between spaces, and its tags (<b> </a> <br/>) left as HTML when they
 * are inline elements without translatable attributes (title, alt,
 * placeholder) and the fragment gives the msgid back unchanged; else every tag
 * is a placeholder too.  Its units are srv_html's (the text between the
 * placeholders), the translations and links go to srv_html_set, and the
 * msgstr is srv_html_render's output unwrapped: the opaque items (written at
 * their aligned places, in order) back to the placeholders, the text
 * unescaped.  Each msgstr is then checked all the same: every placeholder of
 * its msgid the same number of times, printf's unnumbered conversions and the
 * tags in the same order (a swapped %s/%d crashes the program that prints it;
 * tags must still nest).  An entry that fails the check, or has a unit not
 * set or set blank, is not filled: it stays untranslated and unmarked, which
 * gettext shows as the msgid, so a wrong placeholder never reaches a program.
 * A msgid that gives no unit (placeholders and punctuation only, or markup
 * html.h does not translate) leaves its entry untranslated.
 *
 * Malformed files are MT_ERR_INPUT naming the line: an unterminated string, a
 * bad escape, a string that is not UTF-8 or holds NUL, msgstr without msgid,
 * msgid without msgstr, msgstr[k] without msgid_plural or out of order.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "doc_format.h"
#include "markup/html.h"
#include "text/placeholders.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

enum { MAX_PLURALS = 32, NONE = -1 };

typedef struct {
    size_t start, text_end, end;
} line;

/* A translatable entry: where its output differs from its bytes. */
typedef struct {
    int    msg;             /* its msgid's msg; a plural entry's msgid_plural is msg + 1 */
    int    plural;
    size_t flags_at;        /* its "#," line's start (SIZE_MAX: none) */
    size_t flags_end;       /* that line's end before its line ending */
    int    fuzzy;           /* that line has the fuzzy flag already */
    size_t insert_at;       /* where a "#, fuzzy" line goes when it has no "#," line */
    size_t str_at, str_end; /* its msgstr lines, endings included */
    size_t eol_at, eol;     /* its msgid line's ending: data[eol_at..+eol) */
    size_t last_at, last;   /* the msgstr lines' last ending (0: the file's end) */
} entry;

/* A msgid or msgid_plural to translate. */
typedef struct {
    char     *text;         /* trimmed, NUL-terminated: what its msgstr keeps the placeholders of */
    char     *lead, *trail; /* the whitespace set aside */
    char     *frag;         /* text as an HTML fragment, placeholders wrapped (h reads it) */
    srv_html *h;            /* its units; NULL: none */
    int       first, n;     /* the doc's units [first, first + n) are h's 0..n */
} msg;

enum { U_UNSET, U_SET, U_BLANK };

typedef struct {
    int msg, k;             /* unit k of msg's HTML */
    int state;              /* U_* */
} unit;

typedef struct {
    const char *data;
    size_t      len;
    entry      *e;
    int         n_e;
    size_t      cap_e;
    msg        *m;
    int         n_m;
    size_t      cap_m;
    unit       *u;
    int         n_u;
    size_t      cap_u;
    int         nplurals;
} po_doc;

/* The entry being read. */
typedef struct {
    int     lines;              /* lines read into it */
    size_t  flags_at, flags_end, prev_at;
    int     fuzzy;
    int     has_ctxt, has_id, has_plural, n_str, plain_str;
    int     id_line;
    size_t  kw_at, eol_at, eol;
    size_t  str_at, str_end, last_at, last;
    int     kw;                 /* what a "..." line continues: K_* */
    mt_sbuf id, plural, str;
} reading;

enum { K_NONE, K_CTXT, K_ID, K_PLURAL, K_STR };

static int is_sp(char c) { return c == ' ' || c == '\t'; }

/* ---- strings ---- */

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
}

/* The C string at d[i..e) (i at its opening quote) decoded onto b: *after
 * past its closing quote.  MT_ERR_INPUT (with the line no) when it is not one. */
static mt_status read_string(const char *d, size_t i, size_t e, int no, mt_sbuf *b, size_t *after, mt_err *err)
{
    i++;
    while (i < e && d[i] != '"') {
        char c = d[i++];
        if (c != '\\') {
            if (mt_sb_add(b, &c, 1))
                return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            continue;
        }
        if (i >= e)
            break;
        int v;
        c = d[i++];
        const char *p = strchr("ntrabfv\"\\'?", c);
        if (c && p) {
            v = "\n\t\r\a\b\f\v\"\\'?"[p - "ntrabfv\"\\'?"];
        } else if (c >= '0' && c <= '7') {
            v = c - '0';
            for (int k = 0; k < 2 && i < e && d[i] >= '0' && d[i] <= '7'; k++)
                v = v * 8 + d[i++] - '0';
        } else if (c == 'x' && i < e && hexval(d[i]) >= 0) {
            v = 0;
            for (int k = 0; k < 2 && i < e && hexval(d[i]) >= 0; k++)
                v = v * 16 + hexval(d[i++]);
        } else {
            return mt_err_set(err, MT_ERR_INPUT, "line %d: a bad escape \"\\%c\" in a string", no,
                              c > ' ' && c < 127 ? c : '?');
        }
        if (v == 0 || v > 255)
            return mt_err_set(err, MT_ERR_INPUT, "line %d: a string holds a NUL byte", no);
        char ch = (char)v;
        if (mt_sb_add(b, &ch, 1))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    if (i >= e)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: an unterminated string", no);
    i++;
    while (i < e && is_sp(d[i]))
        i++;
    if (i < e)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: text after the string's closing quote", no);
    *after = i;
    return MT_OK;
}

/* ---- placeholders ---- */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

/* A letter (or a non-ASCII character that is not a space) outside the
 * placeholders: something to translate. */
static int has_words(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        char kind;
        size_t k = srv_ph_at(s, i, n, SRV_PH_MARKUP, &kind);
        if (k) {
            i += k;
            continue;
        }
        uint32_t c;
        size_t m = (unsigned char)s[i] >= 0x80 ? mt_utf8_decode((const uint8_t *)s + i, n - i, &c) : 0;
        if (is_alpha(s[i]) || (m && !mt_utf8_is_space(c)))
            return 1;
        i += m ? m : 1;
    }
    return 0;
}

static int ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* ---- a msgid as HTML ---- */

/* The wrappers: what srv_html keeps out of the units, and the unwrapping finds again. */
static const char PH_OPEN[] = "<code class=\"notranslate po-ph\">", WS_OPEN[] = "<code class=\"notranslate po-ws\">",
                  CLOSE[] = "</code>", NL[] = "<br class=\"po-nl\">";
#define LEN(s) (sizeof s - 1)

/* s[0..n) escaped as HTML text onto b. */
static int add_html_text(mt_sbuf *b, const char *s, size_t n)
{
    size_t run = 0;
    int fail = 0;
    for (size_t i = 0; i < n && !fail; i++) {
        const char *e = s[i] == '&' ? "&amp;" : s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;" : NULL;
        if (e) {
            fail = mt_sb_add(b, s + run, i - run) || mt_sb_add(b, e, strlen(e));
            run = i + 1;
        }
    }
    return fail || mt_sb_add(b, s + run, n - run);
}

static int add_wrapped(mt_sbuf *b, const char *open, size_t n_open, const char *s, size_t n)
{
    return mt_sb_add(b, open, n_open) || add_html_text(b, s, n) || mt_sb_add(b, CLOSE, LEN(CLOSE));
}

/* The tag t[0..n) (srv_ph_at's) fit to stay HTML: an inline element html.h
 * places by the alignment (or br), no attribute html.h would translate, quotes
 * paired (no '>' inside a value), none of our wrappers' classes. */
static int html_tag(const char *t, size_t n)
{
    static const char *const OK[] = { "a", "abbr", "b", "bdi", "bdo", "big", "br", "cite", "code", "del", "dfn",
                                      "em", "font", "i", "ins", "kbd", "mark", "q", "s", "samp", "small", "span",
                                      "strike", "strong", "sub", "sup", "tt", "u", "var" };
    size_t i = t[1] == '/' ? 2 : 1, k = i;
    while (k < n && (is_alpha(t[k]) || is_digit(t[k])))
        k++;
    if (k == n || (t[k] != '>' && t[k] != '/' && !ws(t[k])))
        return 0;
    int known = 0;
    for (size_t j = 0; j < sizeof OK / sizeof OK[0]; j++)
        known |= strlen(OK[j]) == k - i && !strncasecmp(OK[j], t + i, k - i);
    int dq = 0, sq = 0;
    for (size_t j = 0; j < n; j++)
        dq ^= t[j] == '"', sq ^= t[j] == '\'';
    static const char *const NO[] = { "title", "alt", "placeholder", "po-" };
    for (size_t j = 0; j < sizeof NO / sizeof NO[0] && known; j++)
        for (size_t x = 0; x + strlen(NO[j]) <= n && known; x++)
            known = strncasecmp(t + x, NO[j], strlen(NO[j])) != 0;
    return known && !dq && !sq;
}

/* The msgid s[0..n) (trimmed) as an HTML fragment onto b: *tags, whether a tag
 * was left HTML (only when tags_too is 0: else every tag is a placeholder). */
static int make_fragment(const char *s, size_t n, int tags_too, mt_sbuf *b, int *tags)
{
    int fail = mt_sb_add(b, "", 0);
    *tags = 0;
    for (size_t i = 0; i < n && !fail;) {
        char kind;
        size_t k = srv_ph_at(s, i, n, SRV_PH_MARKUP, &kind);
        if (k && kind == SRV_PH_TAG && !tags_too && html_tag(s + i, k)) {
            fail = mt_sb_add(b, s + i, k);
            *tags = 1;
        } else if (k) {
            fail = add_wrapped(b, PH_OPEN, LEN(PH_OPEN), s + i, k);
        } else if (s[i] == '\n') {
            fail = mt_sb_add(b, NL, LEN(NL));
            k = 1;
        } else if (ws(s[i])) {
            while (i + k < n && ws(s[i + k]) && s[i + k] != '\n')
                k++;
            if (k == 1 && s[i] == ' ')
                fail = mt_sb_add(b, " ", 1);
            else                            /* the spaces around: the model sees two words */
                fail = mt_sb_add(b, " ", 1) || add_wrapped(b, WS_OPEN, LEN(WS_OPEN), s + i, k) ||
                       mt_sb_add(b, " ", 1);
        } else {
            fail = add_html_text(b, s + i, 1);
            k = 1;
        }
        i += k;
    }
    return fail ? -1 : 0;
}

static int starts(const char *s, size_t n, const char *w, size_t wn) { return n >= wn && !memcmp(s, w, wn); }

/* srv_html_render's output s[0..n) of a fragment back to .po text onto o: the
 * wrappers taken off (a whitespace run's spaces around it too), text unescaped,
 * tags as they are. */
static int unwrap(const char *s, size_t n, mt_sbuf *o)
{
    int fail = mt_sb_add(o, "", 0);
    for (size_t i = 0; i < n && !fail;) {
        int is_ws = starts(s + i, n - i, WS_OPEN, LEN(WS_OPEN));
        if (is_ws || starts(s + i, n - i, PH_OPEN, LEN(PH_OPEN))) {
            size_t a = i + LEN(PH_OPEN);
            const char *c = memmem(s + a, n - a, CLOSE, LEN(CLOSE));
            size_t b = c ? (size_t)(c - s) : n;
            if (is_ws && o->n && o->p[o->n - 1] == ' ')
                o->n--;
            mt_sbuf in = { 0 };
            fail = unwrap(s + a, b - a, &in) || mt_sb_add(o, in.p, in.n);
            free(in.p);
            i = c ? b + LEN(CLOSE) : n;
            if (is_ws && i < n && s[i] == ' ')
                i++;
        } else if (starts(s + i, n - i, NL, LEN(NL))) {
            fail = mt_sb_add(o, "\n", 1);
            i += LEN(NL);
        } else if (s[i] == '<') {                   /* a tag of the msgid, as written */
            const char *e = memchr(s + i, '>', n - i);
            size_t k = e ? (size_t)(e - s) + 1 - i : n - i;
            fail = mt_sb_add(o, s + i, k);
            i += k;
        } else if (s[i] == '&') {
            const char *c = starts(s + i, n - i, "&amp;", 5) ? "&" : starts(s + i, n - i, "&lt;", 4) ? "<"
                          : starts(s + i, n - i, "&gt;", 4) ? ">" : NULL;
            fail = mt_sb_add(o, c ? c : "&", 1);
            i += !c ? 1 : *c == '&' ? 5 : 4;
        } else {
            size_t k = 1;
            while (i + k < n && s[i + k] != '<' && s[i + k] != '&')
                k++;
            fail = mt_sb_add(o, s + i, k);
            i += k;
        }
    }
    return fail ? -1 : 0;
}

/* m's HTML as parsed from its fragment built with tags_too: MT_OK and m->h, or
 * m->h NULL when it does not give the msgid back unchanged (or html.h refuses
 * it); MT_ERR_NOMEM. */
static mt_status msg_html(msg *m, int tags_too, int max_depth, int *tags, mt_err *err)
{
    mt_sbuf b = { 0 }, back = { 0 };
    m->h = NULL;
    free(m->frag);
    m->frag = NULL;
    if (make_fragment(m->text, strlen(m->text), tags_too, &b, tags)) {
        free(b.p);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    m->frag = b.p;
    mt_err e2 = { 0 };
    mt_status st = srv_html_parse(m->frag, b.n, max_depth, &m->h, &e2);
    if (st == MT_ERR_NOMEM)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (st != MT_OK)
        return MT_OK;
    char *out = NULL;
    size_t len = 0;
    st = srv_html_render(m->h, &out, &len, &e2);
    int same = st == MT_OK && !unwrap(out, len, &back) && back.n == strlen(m->text) &&
               !memcmp(back.p, m->text, back.n);
    free(out);
    free(back.p);
    if (st == MT_OK && !same) {
        srv_html_free(m->h);
        m->h = NULL;
    }
    return st == MT_OK ? MT_OK : mt_err_set(err, MT_ERR_NOMEM, "out of memory");
}

/* ---- entries ---- */


static void msg_free(msg *m)
{
    free(m->text);
    free(m->lead);
    free(m->trail);
    srv_html_free(m->h);
    free(m->frag);
}

/* The decoded msgid s as a msg: trimmed, its whitespace kept aside, its HTML
 * (m->h NULL: it gives no unit).  Its units are not added yet. */
static mt_status add_msg(po_doc *t, const mt_sbuf *s, int no, const srv_doc_limits *lim, mt_err *err)
{
    const char *p = s->p ? s->p : "";
    size_t a = 0, b = s->n;
    if (!mt_utf8_valid(p, s->n))
        return mt_err_set(err, MT_ERR_INPUT, "line %d: the msgid is not valid UTF-8 (the file must be UTF-8)", no);
    while (a < b && ws(p[a]))
        a++;
    while (b > a && ws(p[b - 1]))
        b--;
    if (b - a > lim->max_unit_bytes)
        return mt_err_set(err, MT_ERR_TOO_LONG, "line %d: the msgid is %zu bytes; the limit of a unit is %zu", no,
                          b - a, lim->max_unit_bytes);
    if (mt_grow(&t->m, &t->cap_m, (size_t)t->n_m + 1, sizeof *t->m, 64))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    msg *m = &t->m[t->n_m++];
    memset(m, 0, sizeof *m);
    m->text = dup_n(p + a, b - a);
    m->lead = dup_n(p, a);
    m->trail = dup_n(p + b, s->n - b);
    if (!m->text || !m->lead || !m->trail)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    int tags;
    mt_status st = msg_html(m, 0, lim->max_depth, &tags, err);
    if (st == MT_OK && !m->h && tags)       /* its markup does not come back: every tag a placeholder */
        st = msg_html(m, 1, lim->max_depth, &tags, err);
    if (st == MT_OK)
        m->n = m->h ? srv_html_units(m->h) : 0;
    return st;
}

/* msg i's units, after the doc's. */
static mt_status add_units(po_doc *t, int i, int no, const srv_doc_limits *lim, mt_err *err)
{
    msg *m = &t->m[i];
    m->first = t->n_u;
    for (int k = 0; k < m->n; k++) {
        if (t->n_u >= lim->max_units)
            return mt_err_set(err, MT_ERR_TOO_LONG, "line %d: the file has over %d translation units (msgids); "
                              "the limit is %d", no, lim->max_units, lim->max_units);
        if (mt_grow(&t->u, &t->cap_u, (size_t)t->n_u + 1, sizeof *t->u, 64))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        t->u[t->n_u++] = (unit){ i, k, U_UNSET };
    }
    return MT_OK;
}

/* "nplurals=N" of the header's msgstr; 2 when it has none (a template). */
static int nplurals(const mt_sbuf *h)
{
    const char *p = h->p ? memmem(h->p, h->n, "nplurals", 8) : NULL;
    if (!p)
        return 2;
    p += 8;
    const char *e = h->p + h->n;
    while (p < e && is_sp(*p))
        p++;
    if (p >= e || *p++ != '=')
        return 2;
    while (p < e && is_sp(*p))
        p++;
    int v = 0, k = 0;
    while (p < e && is_digit(*p) && k < 3)
        v = v * 10 + (*p++ - '0'), k++;
    return v >= 1 && v <= MAX_PLURALS ? v : 2;
}

/* The entry read so far is complete: checked, and a unit or two if it wants translating. */
static mt_status close_entry(po_doc *t, reading *r, const srv_doc_limits *lim, mt_err *err)
{
    mt_status st = MT_OK;
    if (r->has_ctxt && !r->has_id)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: msgctxt without msgid", r->id_line);
    if (r->has_id && !r->n_str)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: msgid without msgstr", r->id_line);
    if (r->has_id && r->id.n == 0 && !r->has_ctxt && t->nplurals == 0)
        t->nplurals = nplurals(&r->str);                        /* the header */
    if (r->has_id && r->id.n > 0 && r->str.n == 0) {
        mt_sb_add(&r->id, "", 0);
        mt_sb_add(&r->plural, "", 0);
        if (!mt_utf8_valid(r->id.p, r->id.n) || (r->has_plural && !mt_utf8_valid(r->plural.p, r->plural.n)))
            return mt_err_set(err, MT_ERR_INPUT, "line %d: the msgid is not valid UTF-8 (the file must be UTF-8)",
                              r->id_line);
        if (has_words(r->id.p) && (!r->has_plural || has_words(r->plural.p))) {
            if (mt_grow(&t->e, &t->cap_e, (size_t)t->n_e + 1, sizeof *t->e, 64))
                return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            int m0 = t->n_m, keep = 1;
            st = add_msg(t, &r->id, r->id_line, lim, err);
            if (st == MT_OK && r->has_plural)
                st = add_msg(t, &r->plural, r->id_line, lim, err);
            if (st != MT_OK)
                return st;
            for (int i = m0; i < t->n_m; i++)
                keep &= t->m[i].n > 0;
            for (int i = m0; keep && st == MT_OK && i < t->n_m; i++)
                st = add_units(t, i, r->id_line, lim, err);
            if (st != MT_OK)
                return st;
            if (!keep) {                    /* no unit: left as it is */
                while (t->n_m > m0)
                    msg_free(&t->m[--t->n_m]);
            } else {
                t->e[t->n_e++] = (entry){ .msg = m0, .plural = r->has_plural, .flags_at = r->flags_at,
                                          .flags_end = r->flags_end, .fuzzy = r->fuzzy,
                                          .insert_at = r->prev_at != SIZE_MAX ? r->prev_at : r->kw_at,
                                          .str_at = r->str_at, .str_end = r->str_end, .eol_at = r->eol_at,
                                          .eol = r->eol, .last_at = r->last_at, .last = r->last };
            }
        }
    }
    mt_sbuf id = r->id, plural = r->plural, str = r->str;
    id.n = plural.n = str.n = 0;
    *r = (reading){ .flags_at = SIZE_MAX, .prev_at = SIZE_MAX, .id = id, .plural = plural, .str = str };
    return st;
}

static int keyword(const char *d, size_t i, size_t e, const char *kw, size_t *after)
{
    size_t n = strlen(kw);
    if (e - i < n || memcmp(d + i, kw, n))
        return 0;
    *after = i + n;
    return 1;
}

/* A comment line: it ends an entry that had its strings; "#," and "#|" are noted. */
static mt_status comment(po_doc *t, reading *r, const char *d, const line *l, const srv_doc_limits *lim, mt_err *err)
{
    if (r->has_id || r->has_ctxt) {
        mt_status st = close_entry(t, r, lim, err);
        if (st != MT_OK)
            return st;
    }
    size_t n = l->text_end - l->start;
    if (n >= 2 && d[l->start + 1] == ',' && r->flags_at == SIZE_MAX) {
        r->flags_at = l->start;
        r->flags_end = l->text_end;
        for (size_t i = l->start + 2; i + 5 <= l->text_end; i++)
            if (!memcmp(d + i, "fuzzy", 5) && (i + 5 == l->text_end || d[i + 5] == ',' || is_sp(d[i + 5])) &&
                (d[i - 1] == ',' || is_sp(d[i - 1])))
                r->fuzzy = 1;
    }
    if (n >= 2 && d[l->start + 1] == '|' && r->prev_at == SIZE_MAX)
        r->prev_at = l->start;
    r->lines++;
    return MT_OK;
}

/* A keyword line (msgctxt, msgid, msgid_plural, msgstr, msgstr[k]) starting at i. */
static mt_status keyword_line(po_doc *t, reading *r, const char *d, const line *l, size_t i, int no,
                              const srv_doc_limits *lim, mt_err *err)
{
    size_t e = l->text_end, at;
    int kw = K_NONE, index = -1;
    if (keyword(d, i, e, "msgctxt", &at))
        kw = K_CTXT;
    else if (keyword(d, i, e, "msgid_plural", &at))
        kw = K_PLURAL;
    else if (keyword(d, i, e, "msgid", &at))
        kw = K_ID;
    else if (keyword(d, i, e, "msgstr[", &at)) {
        kw = K_STR;
        index = 0;
        size_t k = at;
        while (k < e && is_digit(d[k]) && k - at < 4)
            index = index * 10 + d[k++] - '0';
        if (k == at || k >= e || d[k] != ']')
            return mt_err_set(err, MT_ERR_INPUT, "line %d: a bad plural index", no);
        at = k + 1;
    } else if (keyword(d, i, e, "msgstr", &at))
        kw = K_STR;
    if (kw == K_NONE || at >= e || !is_sp(d[at]))
        return mt_err_set(err, MT_ERR_INPUT, "line %d: not a .po line (a keyword, a \"string\" or a # comment)", no);
    while (at < e && is_sp(d[at]))
        at++;
    if (at >= e || d[at] != '"')
        return mt_err_set(err, MT_ERR_INPUT, "line %d: a keyword without its \"string\"", no);
    /* where this keyword may come */
    if ((kw == K_CTXT || kw == K_ID) && (r->n_str || (kw == K_CTXT && r->has_id))) {
        mt_status st = close_entry(t, r, lim, err);
        if (st != MT_OK)
            return st;
    }
    if ((kw == K_CTXT && r->has_ctxt) || (kw == K_ID && r->has_id))
        return mt_err_set(err, MT_ERR_INPUT, "line %d: %s twice in one entry", no, kw == K_ID ? "msgid" : "msgctxt");
    if (kw == K_PLURAL && (!r->has_id || r->has_plural || r->n_str))
        return mt_err_set(err, MT_ERR_INPUT, "line %d: msgid_plural without msgid before it", no);
    if (kw == K_STR && !r->has_id)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: msgstr without msgid", no);
    if (kw == K_STR && index < 0 && (r->has_plural || r->n_str))
        return mt_err_set(err, MT_ERR_INPUT, "line %d: %s", no,
                          r->has_plural ? "a plural entry's msgstr needs an index: msgstr[0]" : "msgstr twice");
    if (kw == K_STR && index >= 0 && (!r->has_plural || index != r->n_str))
        return mt_err_set(err, MT_ERR_INPUT, "line %d: a bad plural index msgstr[%d]%s", no, index,
                          r->has_plural ? " (out of order)" : " without msgid_plural");
    mt_sbuf *b = kw == K_ID ? &r->id : kw == K_PLURAL ? &r->plural : kw == K_STR ? &r->str : NULL;
    mt_sbuf ctxt = { 0 };
    size_t after;
    mt_status st = read_string(d, at, e, no, b ? b : &ctxt, &after, err);
    free(ctxt.p);
    if (st != MT_OK)
        return st;
    if (!r->has_id && !r->has_ctxt)
        r->kw_at = l->start;
    if (kw == K_CTXT)
        r->has_ctxt = 1;
    if (kw == K_ID) {
        r->has_id = 1;
        r->id_line = no;
        r->eol_at = l->text_end;
        r->eol = l->end - l->text_end;
    }
    if (kw == K_PLURAL)
        r->has_plural = 1;
    if (kw == K_STR) {
        if (!r->n_str)
            r->str_at = l->start;
        r->n_str++;
        r->str_end = l->end;
        r->last_at = l->text_end;
        r->last = l->end - l->text_end;
    }
    if (kw == K_CTXT && !r->id_line)
        r->id_line = no;
    r->kw = kw;
    r->lines++;
    return MT_OK;
}

/* A "..." line: the string of the keyword before it goes on. */
static mt_status string_line(reading *r, const char *d, const line *l, size_t i, int no, mt_err *err)
{
    if (r->kw == K_NONE)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: a string without a keyword before it", no);
    mt_sbuf *b = r->kw == K_ID ? &r->id : r->kw == K_PLURAL ? &r->plural : r->kw == K_STR ? &r->str : NULL;
    mt_sbuf ctxt = { 0 };
    size_t after;
    mt_status st = read_string(d, i, l->text_end, no, b ? b : &ctxt, &after, err);
    free(ctxt.p);
    if (st == MT_OK && r->kw == K_STR) {
        r->str_end = l->end;
        r->last_at = l->text_end;
        r->last = l->end - l->text_end;
    }
    return st;
}

static mt_status read_lines(po_doc *t, reading *r, const srv_doc_limits *lim, mt_err *err)
{
    const char *d = t->data;
    int no = 0;
    for (size_t i = 0; i < t->len;) {
        line l = { i, i, i };
        while (l.text_end < t->len && d[l.text_end] != '\n')
            l.text_end++;
        l.end = l.text_end < t->len ? l.text_end + 1 : l.text_end;
        if (l.text_end > l.start && d[l.text_end - 1] == '\r')
            l.text_end--;
        if (i == 0 && t->len >= 3 && !memcmp(d, "\xef\xbb\xbf", 3))
            l.start = 3;
        no++;
        i = l.end;
        size_t k = l.start;
        while (k < l.text_end && is_sp(d[k]))
            k++;
        mt_status st = MT_OK;
        if (k == l.text_end)
            st = r->lines ? close_entry(t, r, lim, err) : MT_OK;
        else if (d[k] == '#')
            st = comment(t, r, d, &(line){ k, l.text_end, l.end }, lim, err);
        else if (d[k] == '"')
            st = string_line(r, d, &l, k, no, err);
        else
            st = keyword_line(t, r, d, &l, k, no, lim, err);
        if (st != MT_OK)
            return st;
    }
    return r->lines ? close_entry(t, r, lim, err) : MT_OK;
}

int srv_doc_is_po(const char *data, size_t len)
{
    int first = 1, id = 0, str = 0;
    for (size_t i = 0; data && i < len;) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - data) : len, k = i;
        while (k < e && is_sp(data[k]))
            k++;
        if (k < e && data[k] != '#' && data[k] != '\r') {
            int is_id = e - k >= 7 && !memcmp(data + k, "msgid \"", 7);
            if (first && !is_id && !(e - k >= 9 && !memcmp(data + k, "msgctxt \"", 9)))
                return 0;
            first = 0;
            id |= is_id;
            str |= e - k >= 7 && !memcmp(data + k, "msgstr", 6) && (data[k + 6] == ' ' || data[k + 6] == '[');
        }
        i = e + 1;
    }
    return id && str;
}

/* ---- the format's calls ---- */

static void po_free(void *state)
{
    po_doc *t = state;
    if (!t)
        return;
    for (int i = 0; i < t->n_m; i++)
        msg_free(&t->m[i]);
    free(t->m);
    free(t->u);
    free(t->e);
    free(t);
}

static mt_status po_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                          const srv_doc_options *opt, void **state, mt_err *err)
{
    const char *z = memchr(data, 0, len);
    if (z) {                            /* a unit is a C string: a NUL would cut it */
        int no = 1;
        for (const char *p = data; p < z; p++)
            no += *p == '\n';
        return mt_err_set(err, MT_ERR_INPUT, "line %d: a NUL byte", no);
    }
    po_doc *t = calloc(1, sizeof *t);
    if (!t)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    t->data = data;
    t->len = len;
    reading r = { .flags_at = SIZE_MAX, .prev_at = SIZE_MAX };
    mt_status st = read_lines(t, &r, lim, err);
    free(r.id.p);
    free(r.plural.p);
    free(r.str.p);
    if (st != MT_OK) {
        po_free(t);
        return st;
    }
    if (!t->nplurals)
        t->nplurals = 2;
    *state = t;
    return MT_OK;
}

static int po_units(const void *state) { return ((const po_doc *)state)->n_u; }

static const char *po_unit(const void *state, int i)
{
    const po_doc *t = state;
    return srv_html_unit(t->m[t->u[i].msg].h, t->u[i].k);
}

/* The words of s[0..n) (runs of non-spaces) into w[2 * k] (their [start, end)
 * in code points, room for n): how many. */
static int words_of(const char *s, size_t n, long *w)
{
    int k = 0, in = 0;
    long cp = 0;
    for (size_t i = 0; i < n; cp++) {
        uint32_t c;
        i += mt_utf8_next(s + i, n - i, &c);
        int space = mt_utf8_is_space(c);
        if (!space && !in)
            w[2 * k] = cp;
        if (space && in)
            w[2 * k++ + 1] = cp;
        in = !space;
    }
    if (in)
        w[2 * k++ + 1] = cp;
    return k;
}

static mt_status po_set(void *state, int i, const char *tgt, size_t len, const long *links, int n_links,
                        mt_err *err)
{
    po_doc *t = state;
    unit *u = &t->u[i];
    srv_html *h = t->m[u->msg].h;
    long *diag = NULL;
    if (!n_links) {     /* no alignment: the words linked along the diagonal, each item at its share of the way */
        const char *src = srv_html_unit(h, u->k);
        size_t sn = strlen(src);
        long *sw = malloc(sizeof *sw * 2 * (sn + 1)), *tw = malloc(sizeof *tw * 2 * (len + 1));
        diag = malloc(sizeof *diag * 4 * (sn + 1));
        if (!sw || !tw || !diag) {
            free(sw);
            free(tw);
            free(diag);
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        }
        int ns = words_of(src, sn, sw), nt = words_of(tgt, len, tw);
        for (int k = 0; nt && k < ns; k++) {
            long j = ((long)k * 2 + 1) * nt / (2L * ns);
            long *l = diag + 4 * n_links++;
            l[0] = sw[2 * k], l[1] = sw[2 * k + 1], l[2] = tw[2 * j], l[3] = tw[2 * j + 1];
        }
        free(sw);
        free(tw);
        links = diag;
    }
    mt_status st = srv_html_set(h, u->k, tgt, len, links, n_links, err);
    free(diag);
    if (st != MT_OK)
        return st;
    size_t k = 0;
    while (k < len && ws(tgt[k]))
        k++;
    u->state = k < len ? U_SET : U_BLANK;
    return MT_OK;
}

/* Msg m's translation fit to be written, into b (its msgid's whitespace
 * around it): 1; 0 when it is not (a unit not set or blank, not UTF-8, its
 * placeholders not kept); -1 out of memory. */
static int msg_text(const po_doc *t, const msg *m, mt_sbuf *b)
{
    for (int k = 0; k < m->n; k++)
        if (t->u[m->first + k].state != U_SET)
            return 0;
    char *html = NULL;
    size_t len = 0;
    mt_err err = { 0 };
    mt_sbuf tx = { 0 };
    int ok = -1;
    if (srv_html_render(m->h, &html, &len, &err) != MT_OK || unwrap(html, len, &tx))
        goto done;
    size_t a = 0, e = tx.n;
    while (a < e && ws(tx.p[a]))
        a++;
    while (e > a && ws(tx.p[e - 1]))
        e--;
    ok = a < e && !memchr(tx.p + a, 0, e - a) && mt_utf8_valid(tx.p + a, e - a) &&
         srv_ph_kept(m->text, strlen(m->text), tx.p + a, e - a, SRV_PH_MARKUP);
    b->n = 0;
    if (ok && (mt_sb_add(b, m->lead, strlen(m->lead)) || mt_sb_add(b, tx.p + a, e - a) ||
               mt_sb_add(b, m->trail, strlen(m->trail))))
        ok = -1;
done:
    free(html);
    free(tx.p);
    return ok;
}

/* s[0..n) escaped as a .po string's body. */
static int add_escaped(mt_sbuf *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *p = strchr("\n\t\r\a\b\f\v\"\\", s[i]);
        char esc[5];
        if (s[i] && p) {
            esc[0] = '\\', esc[1] = "ntrabfv\"\\"[p - "\n\t\r\a\b\f\v\"\\"];
            if (mt_sb_add(o, esc, 2))
                return -1;
        } else if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            esc[0] = '\\', esc[1] = (char)('0' + ((unsigned char)s[i] >> 6)), esc[2] = (char)('0' + (s[i] >> 3 & 7));
            esc[3] = (char)('0' + (s[i] & 7));
            if (mt_sb_add(o, esc, 4))
                return -1;
        } else if (mt_sb_add(o, s + i, 1)) {
            return -1;
        }
    }
    return 0;
}

/* kw "text": one line, or gettext's way when text breaks lines inside (kw ""
 * then a line for each \n).  Each line but the first after eol. */
static int add_msgstr(mt_sbuf *o, const char *kw, const char *text, size_t n, const char *eol, size_t eol_n,
                      int first)
{
    const char *nl = memchr(text, '\n', n);
    int many = nl && nl + 1 < text + n;
    if ((!first && mt_sb_add(o, eol, eol_n)) || mt_sb_add(o, kw, strlen(kw)) || mt_sb_add(o, " \"", 2))
        return -1;
    if (!many)
        return add_escaped(o, text, n) || mt_sb_add(o, "\"", 1);
    if (mt_sb_add(o, "\"", 1))
        return -1;
    for (size_t i = 0; i < n;) {
        const char *e = memchr(text + i, '\n', n - i);
        size_t k = e ? (size_t)(e - text) + 1 - i : n - i;
        if (mt_sb_add(o, eol, eol_n) || mt_sb_add(o, "\"", 1) || add_escaped(o, text + i, k) || mt_sb_add(o, "\"", 1))
            return -1;
        i += k;
    }
    return 0;
}

/* Entry e filled with one (and many, its plural's): its fuzzy flag, its msgstr
 * lines (data up to them copied from *at). */
static int write_entry(const po_doc *t, const entry *e, size_t *at, mt_sbuf *o, const mt_sbuf *one,
                       const mt_sbuf *many)
{
    const char *d = t->data;
    const char *eol = e->eol ? d + e->eol_at : "\n";
    size_t eol_n = e->eol ? e->eol : 1;
    if (e->flags_at != SIZE_MAX && !e->fuzzy) {             /* "#, c-format" -> "#, fuzzy, c-format" */
        size_t rest = e->flags_at + 2, k = rest;
        while (k < e->flags_end && is_sp(d[k]))
            k++;
        if (mt_sb_add(o, d + *at, e->flags_at - *at) || mt_sb_add(o, "#, fuzzy", 8) ||
            (k < e->flags_end && (mt_sb_add(o, ",", 1) || mt_sb_add(o, d + rest, e->flags_end - rest))))
            return -1;
        *at = e->flags_end;
    } else if (e->flags_at == SIZE_MAX) {
        if (mt_sb_add(o, d + *at, e->insert_at - *at) || mt_sb_add(o, "#, fuzzy", 8) || mt_sb_add(o, eol, eol_n))
            return -1;
        *at = e->insert_at;
    }
    if (mt_sb_add(o, d + *at, e->str_at - *at))
        return -1;
    if (!e->plural) {
        if (add_msgstr(o, "msgstr", one->p, one->n, eol, eol_n, 1))
            return -1;
    } else {
        for (int k = 0; k < t->nplurals; k++) {
            char kw[32];
            snprintf(kw, sizeof kw, "msgstr[%d]", k);
            const mt_sbuf *x = k ? many : one;
            if (add_msgstr(o, kw, x->p, x->n, eol, eol_n, k == 0))
                return -1;
        }
    }
    *at = e->str_end;
    return mt_sb_add(o, d + e->last_at, e->last);
}

static mt_status po_render(const void *state, char **out, size_t *len, mt_err *err)
{
    const po_doc *t = state;
    mt_sbuf o = { 0 }, one = { 0 }, many = { 0 };
    size_t at = 0;
    int fail = mt_sb_add(&o, "", 0);
    for (int i = 0; !fail && i < t->n_e; i++) {
        const entry *e = &t->e[i];
        int a = msg_text(t, &t->m[e->msg], &one), b = a > 0 && e->plural ? msg_text(t, &t->m[e->msg + 1], &many) : 1;
        fail = a < 0 || b < 0;
        if (!fail && a > 0 && b > 0)    /* else not filled: copied as it is */
            fail = write_entry(t, e, &at, &o, &one, &many);
    }
    fail = fail || mt_sb_add(&o, t->data + at, t->len - at);
    free(one.p);
    free(many.p);
    if (fail) {
        free(o.p);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    *out = o.p;
    *len = o.n;
    return MT_OK;
}

const srv_doc_format srv_doc_po_format = { po_parse, po_units, po_unit, po_set, po_render, po_free, NULL };
