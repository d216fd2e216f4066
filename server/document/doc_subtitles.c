/* doc_subtitles: SubRip .srt and WebVTT .vtt (document.h, formats srt and vtt).
 *
 * The file is blocks of lines between blank lines.  A cue block is an
 * optional number (SRT) or identifier (VTT), a timing line, then the cue's
 * text (its payload lines).  VTT starts with its WEBVTT header block; its
 * NOTE, STYLE and REGION blocks are not cues.  Everything but the payload of
 * a translated cue is copied byte for byte: numbers, identifiers, timings and
 * their cue settings, the header, notes, blank lines, line endings.
 *
 * Units.  A cue's text is its payload without its styling tags (<i>, </b>,
 * <font ...>, VTT's <c.x>, <v Name>, <00:00:01.000>, SRT's {\an8}), its line
 * breaks made spaces, VTT's &amp; &lt; &gt; decoded.  Consecutive cues make
 * one unit while a cue's text does not end a sentence (. ! ? … or a closing
 * quote or bracket after one), up to MAX_CUES cues and MAX_JOIN_BYTES bytes,
 * unless the next cue opens with a dash (a new speaker) or a non-cue block
 * comes between.  The text between a cue's first and last word, cut at its
 * inner tags, gives the unit's runs (doc_runs.h), so the translation is split
 * back over the cues, and over the inner tags of a cue, by the alignment.
 *
 * A translated cue is written as: the tags before its first word, its runs'
 * shares with the inner tags between them, the tags after its last word;
 * re-wrapped into as many lines as the source had (breaks at the spaces of
 * the translation nearest to equal parts, never a blank line), each line
 * ending as the source's did (CRLF stays CRLF; the last line's ending, maybe
 * none at the end of the file, is the source's last).  In VTT the
 * translation's & < > are escaped; SRT has no escape, so a text '<' of the
 * source that a re-wrap puts on one line with a '>' reads as a tag (a player
 * hides it).  A unit without a translation is copied.
 *
 * Malformed input is MT_ERR_INPUT naming the line: a NUL byte or invalid
 * UTF-8, a VTT file without its WEBVTT line, a block that is no cue and has
 * no timing line, a timing line that does not parse, minutes or seconds over
 * 59.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doc_format.h"
#include "doc_runs.h"
#include "util/check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

/* A sentence carried over more cues than this, or more bytes, is cut: a unit
 * stays a sentence or two, not a scene. */
enum { MAX_CUES = 5, MAX_JOIN_BYTES = 500 };

typedef struct {
    size_t start;       /* first byte */
    size_t text_end;    /* before its line ending */
    size_t end;         /* after its line ending */
} line;

typedef struct {
    size_t a, b;        /* data[a..b) */
    int    tag;         /* 1 a styling tag (kept as is), 0 text */
} piece;

typedef struct {
    size_t pay, pay_end;    /* the payload lines in data, their endings included */
    int    line;            /* the timing line, 1-based (messages) */
    int    n_lines;         /* payload lines */
    size_t eol_at, eol;     /* the first payload line's ending: data[eol_at..+eol) */
    size_t last_eol_at, last_eol;   /* the last one's (eol 0: none, the file's end) */
    int    p0, p1;          /* pieces [p0, p1) */
    int    m0, m1;          /* the middle [m0, m1): first to last text piece with a word; m0 == m1: no word */
    int    after_block;     /* a block that is no cue came before it */
    int    dialogue;        /* 2+ lines, each opening with a dash: one speaker a line */
    int    unit, run0;      /* its unit (-1: none) and its first run there */
} cue;

typedef srv_run_unit unit;     /* cues [first, first + n) */

typedef struct {
    srv_doc_kind kind;
    const char  *data;
    size_t       len;
    line        *l;
    int          n_lines;
    piece       *p;
    int          n_p;
    size_t       cap_p;
    cue         *c;
    int          n_c;
    size_t       cap_c;
    unit        *u;
    int          n_u;
} subs;

/* ---- lines and timings ---- */

static int is_sp(char c) { return c == ' ' || c == '\t'; }

static int blank(const char *d, const line *l)
{
    for (size_t i = l->start; i < l->text_end; i++)
        if (!is_sp(d[i]))
            return 0;
    return 1;
}

/* Line endings are \n, \r\n and a lone \r (WebVTT allows all three). */
static mt_status split_lines(subs *t, size_t from, mt_err *err)
{
    size_t cap = 0;
    for (size_t i = from; i < t->len;) {
        if (mt_grow(&t->l, &cap, (size_t)t->n_lines + 1, sizeof *t->l, 64))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        line *l = &t->l[t->n_lines++];
        size_t e = i;
        while (e < t->len && t->data[e] != '\n' && t->data[e] != '\r')
            e++;
        l->start = i;
        l->text_end = e;
        if (e < t->len && t->data[e] == '\r' && e + 1 < t->len && t->data[e + 1] == '\n')
            e += 2;
        else if (e < t->len)
            e++;
        l->end = e;
        i = e;
    }
    return MT_OK;
}

static size_t digits(const char *p, const char *end)
{
    size_t n = 0;
    while (p + n < end && p[n] >= '0' && p[n] <= '9')
        n++;
    return n;
}

/* One timestamp at *pp: SRT "H+:MM:SS,mmm" (',' or '.', 1-3 digits of
 * milliseconds, as players accept), VTT "[HH+:]MM:SS.mmm".  1 and *pp past it,
 * 0 when it is none, -1 when minutes or seconds are over 59. */
static int timestamp(const char **pp, const char *end, int vtt)
{
    const char *p = *pp;
    size_t f[3];
    int n = 0;
    for (;;) {
        size_t k = digits(p, end);
        if (!k || k > 10)
            return 0;
        f[n++] = k;
        p += k;
        if (n == 3 || p >= end || *p != ':')
            break;
        p++;
    }
    if (n < 2 || (!vtt && n < 3))
        return 0;
    if (f[n - 1] != 2 || f[n - 2] != 2 || (vtt && n == 3 && f[0] < 2))
        return 0;
    if (p >= end || !(*p == '.' || (!vtt && *p == ',')))
        return 0;
    size_t ms = digits(p + 1, end);
    if (vtt ? ms != 3 : ms < 1 || ms > 3)
        return 0;
    const char *sec = p - 2, *min = p - 5;
    *pp = p + 1 + ms;
    if (sec[0] > '5' || min[0] > '5')
        return -1;
    return 1;
}

/* A timing line: timestamp --> timestamp, then (after a space) cue settings
 * or SRT's coordinates.  1, 0 (not one), -1 (a field out of range). */
static int timing(const char *d, const line *l, int vtt)
{
    const char *p = d + l->start, *end = d + l->text_end;
    while (p < end && is_sp(*p))
        p++;
    int a = timestamp(&p, end, vtt);
    if (a == 0)
        return 0;
    while (p < end && is_sp(*p))
        p++;
    if (end - p < 3 || memcmp(p, "-->", 3))
        return 0;
    p += 3;
    while (p < end && is_sp(*p))
        p++;
    int b = timestamp(&p, end, vtt);
    if (b == 0 || (p < end && !is_sp(*p)))
        return 0;
    return a < 0 || b < 0 ? -1 : 1;
}

static int has_arrow(const char *d, const line *l)
{
    return memmem(d + l->start, l->text_end - l->start, "-->", 3) != NULL;
}

static int number_line(const char *d, const line *l)
{
    size_t i = l->start;
    while (i < l->text_end && is_sp(d[i]))
        i++;
    size_t k = digits(d + i, d + l->text_end);
    i += k;
    while (i < l->text_end && is_sp(d[i]))
        i++;
    return k > 0 && i == l->text_end;
}

/* The line starts with word w, alone or followed by a space. */
static int starts_word(const char *d, const line *l, const char *w)
{
    size_t n = strlen(w), m = l->text_end - l->start;
    return m >= n && !memcmp(d + l->start, w, n) && (m == n || is_sp(d[l->start + n]));
}

static int vtt_header(const char *d, size_t len)
{
    size_t i = len >= 3 && !memcmp(d, "\xef\xbb\xbf", 3) ? 3 : 0;
    return len - i >= 6 && !memcmp(d + i, "WEBVTT", 6) &&
           (len - i == 6 || strchr(" \t\r\n", d[i + 6]));
}

int srv_doc_is_subtitles(const char *data, size_t len, srv_doc_kind *kind)
{
    if (!data)
        return 0;
    if (vtt_header(data, len)) {
        *kind = SRV_DOC_VTT;
        return 1;
    }
    /* SRT: the first non-blank line a number, the next a timing line */
    size_t i = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
    line l[2];
    int n = 0;
    while (i < len && n < 2) {
        size_t e = i;
        while (e < len && data[e] != '\n' && data[e] != '\r')
            e++;
        line cur = { i, e, e };
        i = e < len && data[e] == '\r' && e + 1 < len && data[e + 1] == '\n' ? e + 2 : e < len ? e + 1 : e;
        if (n == 0 && blank(data, &cur))
            continue;
        l[n++] = cur;
    }
    if (n == 2 && number_line(data, &l[0]) && timing(data, &l[1], 0) != 0) {
        *kind = SRV_DOC_SRT;
        return 1;
    }
    return 0;
}

/* ---- cues and their pieces ---- */

static mt_status add_piece(subs *t, size_t a, size_t b, int tag, mt_err *err)
{
    if (a >= b)
        return MT_OK;
    if (mt_grow(&t->p, &t->cap_p, (size_t)t->n_p + 1, sizeof *t->p, 64))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    t->p[t->n_p++] = (piece){ a, b, tag };
    return MT_OK;
}

/* The length of a styling tag at d[i..e) (e: the line's end), 0 if none.
 * VTT: '<' always opens a tag (a text '<' is written &lt;).  SRT: '<' and a
 * letter or '/', or "{\", up to the closing bracket on the same line, with
 * no other tag's opening bracket before it: a text '<' that a re-wrap puts
 * before a "{\...}" on one line must not swallow half of it.  The same holds
 * for a "{\" in VTT, whose text '{' has no escape: a text "{\an0" re-wrapped
 * before a "<...{\an8}>" tag must not reach into it. */
static size_t tag_at(const char *d, size_t i, size_t e, int vtt)
{
    char close;
    if (d[i] == '<' && i + 1 < e &&
        (vtt || d[i + 1] == '/' || ((d[i + 1] | 0x20) >= 'a' && (d[i + 1] | 0x20) <= 'z')))
        close = '>';
    else if (d[i] == '{' && i + 1 < e && d[i + 1] == '\\')
        close = '}';
    else
        return 0;
    for (size_t q = i + 1; q < e; q++) {
        if (d[q] == close)
            return q - i + 1;
        if ((!vtt || close == '}') && (d[q] == '<' || d[q] == '{'))
            return 0;
    }
    return 0;
}

static int has_word(const char *d, size_t a, size_t b)
{
    for (size_t i = a; i < b;) {
        uint32_t c;
        size_t m = mt_utf8_decode((const uint8_t *)d + i, b - i, &c);
        if (!m)
            return 1;
        if (!mt_utf8_is_space(c))
            return 1;
        i += m;
    }
    return 0;
}

/* The payload lines [l0, l1) of cue c cut into text and tags. */
static mt_status cut_payload(subs *t, cue *c, int l0, int l1, mt_err *err)
{
    const char *d = t->data;
    int vtt = t->kind == SRV_DOC_VTT;
    c->p0 = t->n_p;
    size_t text = c->pay;
    for (int k = l0; k < l1; k++) {
        const line *l = &t->l[k];
        for (size_t i = l->start; i < l->text_end;) {
            size_t n = tag_at(d, i, l->text_end, vtt);
            if (!n) {
                i++;
                continue;
            }
            mt_status st = add_piece(t, text, i, 0, err);
            if (st == MT_OK)
                st = add_piece(t, i, i + n, 1, err);
            if (st != MT_OK)
                return st;
            i += n;
            text = i;
        }
    }
    /* the text up to the last line's end, its ending left out */
    mt_status st = add_piece(t, text, l1 > l0 ? t->l[l1 - 1].text_end : text, 0, err);
    if (st != MT_OK)
        return st;
    c->p1 = t->n_p;
    c->m0 = c->m1 = c->p1;
    for (int k = c->p0; k < c->p1; k++)
        if (!t->p[k].tag && has_word(d, t->p[k].a, t->p[k].b)) {
            if (c->m0 == c->p1)
                c->m0 = k;
            c->m1 = k + 1;
        }
    if (c->m0 == c->p1)
        c->m0 = c->m1 = c->p0;
    return MT_OK;
}

static mt_status add_cue(subs *t, int timing_line, int l1, int after_block, mt_err *err)
{
    if (mt_grow(&t->c, &t->cap_c, (size_t)t->n_c + 1, sizeof *t->c, 64))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    cue *c = &t->c[t->n_c];
    memset(c, 0, sizeof *c);
    int l0 = timing_line + 1;
    c->line = timing_line + 1;
    c->pay = l0 < l1 ? t->l[l0].start : t->l[timing_line].end;
    c->pay_end = l0 < l1 ? t->l[l1 - 1].end : c->pay;
    c->n_lines = l1 - l0;
    if (l0 < l1) {
        c->eol_at = t->l[l0].text_end;
        c->eol = t->l[l0].end - t->l[l0].text_end;
        c->last_eol_at = t->l[l1 - 1].text_end;
        c->last_eol = t->l[l1 - 1].end - t->l[l1 - 1].text_end;
    }
    c->after_block = after_block;
    c->unit = -1;
    c->dialogue = l1 - l0 >= 2;
    for (int k = l0; k < l1; k++)
        c->dialogue &= t->l[k].start < t->l[k].text_end && t->data[t->l[k].start] == '-';
    mt_status st = cut_payload(t, c, l0, l1, err);
    if (st == MT_OK)
        t->n_c++;
    return st;
}

/* The block of lines [i, j): a cue, or (VTT) a note, style or region block. */
static mt_status block(subs *t, int i, int j, int *after_block, mt_err *err)
{
    const char *d = t->data;
    int vtt = t->kind == SRV_DOC_VTT;
    const line *l = &t->l[i];
    if (vtt && (starts_word(d, l, "NOTE") || starts_word(d, l, "STYLE") || starts_word(d, l, "REGION")) &&
        !has_arrow(d, l)) {
        *after_block = 1;
        return MT_OK;
    }
    int at = -1;                        /* the timing line */
    if (timing(d, l, vtt) != 0)
        at = i;
    else if (i + 1 < j && (vtt ? !has_arrow(d, l) : number_line(d, l)))
        at = i + 1;
    if (at < 0 || !has_arrow(d, &t->l[at])) {
        int bad = at < 0 ? i : at;
        return mt_err_set(err, MT_ERR_INPUT, "line %d: a cue without a timing line (\"start --> end\")", bad + 1);
    }
    int r = timing(d, &t->l[at], vtt);
    if (r == 0)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: the timing line does not parse (expected %s)", at + 1,
                          vtt ? "[hh:]mm:ss.ttt --> [hh:]mm:ss.ttt" : "hh:mm:ss,mmm --> hh:mm:ss,mmm");
    if (r < 0)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: a timestamp out of range (minutes and seconds are 00-59)",
                          at + 1);
    mt_status st = add_cue(t, at, j, *after_block, err);
    *after_block = 0;
    return st;
}

/* ---- units ---- */

/* The cue's text ends a sentence: its last character, closing quotes and
 * brackets aside, is . ! ? … (or their CJK forms). */
static int ends_sentence(const subs *t, const cue *c)
{
    if (c->m0 == c->m1)
        return 1;
    const piece *p = &t->p[c->m1 - 1];
    const char *d = t->data;
    size_t e = p->b;
    while (e > p->a && strchr(" \t\r\n", d[e - 1]))
        e--;
    for (;;) {                          /* closing quotes and brackets */
        if (e > p->a && strchr("\"')]", d[e - 1]) && d[e - 1])
            e--;
        else if (e >= p->a + 3 && (!memcmp(d + e - 3, "\xe2\x80\x9d", 3) || !memcmp(d + e - 3, "\xe2\x80\x99", 3)))
            e -= 3;                     /* ” ’ */
        else if (e >= p->a + 2 && !memcmp(d + e - 2, "\xc2\xbb", 2))
            e -= 2;                     /* » */
        else
            break;
    }
    if (e > p->a && strchr(".!?", d[e - 1]) && d[e - 1])
        return 1;
    static const char *const ends[] = { "\xe2\x80\xa6", "\xe3\x80\x82", "\xef\xbc\x81", "\xef\xbc\x9f" };  /* … 。！？ */
    for (size_t k = 0; k < sizeof ends / sizeof ends[0]; k++)
        if (e >= p->a + 3 && !memcmp(d + e - 3, ends[k], 3))
            return 1;
    return 0;
}

/* The cue opens with a dash: a new speaker, a new unit. */
static int opens_dash(const subs *t, const cue *c)
{
    const piece *p = &t->p[c->m0];
    size_t i = p->a;
    while (i < p->b && strchr(" \t\r\n", t->data[i]))
        i++;
    return i < p->b && (t->data[i] == '-' || (p->b - i >= 3 && (!memcmp(t->data + i, "\xe2\x80\x93", 3) ||
                                                                   !memcmp(t->data + i, "\xe2\x80\x94", 3))));
}

static size_t middle_bytes(const subs *t, const cue *c)
{
    return c->m0 < c->m1 ? t->p[c->m1 - 1].b - t->p[c->m0].a : 0;
}

/* A text piece as its run's text into b: VTT's three escapes decoded. */
static int decode_piece(const subs *t, const piece *p, mt_sbuf *b)
{
    const char *d = t->data;
    if (t->kind != SRV_DOC_VTT)
        return mt_sb_add(b, d + p->a, p->b - p->a);
    static const struct { const char *e; char c; } ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' } };
    for (size_t i = p->a; i < p->b;) {
        size_t k = 0;
        while (k < 3 && !(p->b - i >= strlen(ents[k].e) && !memcmp(d + i, ents[k].e, strlen(ents[k].e))))
            k++;
        if (k < 3) {
            if (mt_sb_add(b, &ents[k].c, 1))
                return -1;
            i += strlen(ents[k].e);
        } else {
            if (mt_sb_add(b, d + i, 1))
                return -1;
            i++;
        }
    }
    return 0;
}

/* Cues [first, first + n) as one unit: their middles' text pieces are its runs,
 * a space after each cue's last one. */
static mt_status make_unit(subs *t, int first, int n, const srv_doc_limits *lim, mt_err *err)
{
    int n_runs = 0;
    for (int k = first; k < first + n; k++)
        for (int q = t->c[k].m0; q < t->c[k].m1; q++)
            n_runs += !t->p[q].tag;
    mt_sbuf b = { 0 };
    size_t *off = malloc(sizeof *off * (size_t)(n_runs + 1));
    const char **ptr = malloc(sizeof *ptr * (size_t)n_runs);
    size_t *lens = malloc(sizeof *lens * (size_t)n_runs);
    mt_status st = MT_OK;
    if (!off || !ptr || !lens)
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    int r = 0;
    for (int k = first; st == MT_OK && k < first + n; k++) {
        cue *c = &t->c[k];
        c->unit = t->n_u;
        c->run0 = r;
        for (int q = c->m0; st == MT_OK && q < c->m1; q++) {
            if (t->p[q].tag)
                continue;
            off[r++] = b.n;
            int last = q == c->m1 - 1 && k < first + n - 1;
            if (decode_piece(t, &t->p[q], &b) || (last && mt_sb_add(&b, " ", 1)))
                st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        }
    }
    unit *u = &t->u[t->n_u];
    memset(u, 0, sizeof *u);
    if (st == MT_OK) {
        off[n_runs] = b.n;
        for (int k = 0; k < n_runs; k++) {
            ptr[k] = b.p + off[k];
            lens[k] = off[k + 1] - off[k];
        }
        u->first = first;
        u->n = n;
        st = srv_runs_init(&u->runs, ptr, lens, n_runs, err);
    }
    free(b.p), free(off), free(ptr), free(lens);
    if (st != MT_OK)
        return st;
    t->n_u++;
    size_t bytes = strlen(u->runs.text);
    if (bytes > lim->max_unit_bytes)
        return mt_err_set(err, MT_ERR_TOO_LONG, "line %d: the cue's text is %zu bytes; the limit of a unit is %zu",
                          t->c[first].line, bytes, lim->max_unit_bytes);
    if (!(u->s = calloc((size_t)(n_runs ? n_runs : 1), sizeof *u->s)) ||
        !(u->e = calloc((size_t)(n_runs ? n_runs : 1), sizeof *u->e)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    return MT_OK;
}

static mt_status make_units(subs *t, const srv_doc_limits *lim, mt_err *err)
{
    if (!(t->u = calloc((size_t)(t->n_c ? t->n_c : 1), sizeof *t->u)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < t->n_c;) {
        const cue *c = &t->c[i];
        if (c->m0 == c->m1) {
            i++;
            continue;
        }
        if (t->n_u >= lim->max_units)
            return mt_err_set(err, MT_ERR_TOO_LONG, "line %d: the file has over %d translation units (cues); the limit "
                              "is %d", c->line, lim->max_units, lim->max_units);
        int n = 1;
        size_t bytes = middle_bytes(t, c);
        while (n < MAX_CUES && i + n < t->n_c) {
            const cue *next = &t->c[i + n];
            if (ends_sentence(t, &t->c[i + n - 1]) || next->m0 == next->m1 || next->after_block ||
                opens_dash(t, next) || bytes + middle_bytes(t, next) > MAX_JOIN_BYTES)
                break;
            bytes += middle_bytes(t, next);
            n++;
        }
        mt_status st = make_unit(t, i, n, lim, err);
        if (st != MT_OK)
            return st;
        i += n;
    }
    return MT_OK;
}

/* ---- the format's calls ---- */

static void subs_free(void *state)
{
    subs *t = state;
    if (!t)
        return;
    srv_run_units_free(t->u, t->n_u);
    free(t->c);
    free(t->p);
    free(t->l);
    free(t);
}

static int line_of(const char *d, size_t at)
{
    int n = 1;
    for (size_t i = 0; i < at; i++)
        n += d[i] == '\n' || (d[i] == '\r' && !(i + 1 < at && d[i + 1] == '\n'));
    return n;
}

static mt_status check_bytes(const char *data, size_t len, mt_err *err)
{
    const char *z = memchr(data, 0, len);
    if (z)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: a NUL byte", line_of(data, (size_t)(z - data)));
    size_t ok = mt_utf8_valid_prefix(data, len);
    if (ok < len)
        return mt_err_set(err, MT_ERR_INPUT, "line %d: not valid UTF-8 (byte %zu)", line_of(data, ok), ok);
    return MT_OK;
}

static mt_status blocks(subs *t, mt_err *err)
{
    int i = 0, after_block = 0;
    if (t->kind == SRV_DOC_VTT) {       /* the header block: WEBVTT and what follows it */
        if (!vtt_header(t->data, t->len))
            return mt_err_set(err, MT_ERR_INPUT, "line 1: a WebVTT file starts with \"WEBVTT\"");
        while (i < t->n_lines && !blank(t->data, &t->l[i]))
            i++;
    }
    while (i < t->n_lines) {
        if (blank(t->data, &t->l[i])) {
            i++;
            continue;
        }
        int j = i;
        while (j < t->n_lines && !blank(t->data, &t->l[j]))
            j++;
        mt_status st = block(t, i, j, &after_block, err);
        if (st != MT_OK)
            return st;
        i = j;
    }
    return MT_OK;
}

static mt_status subs_parse(srv_doc_kind kind, const char *data, size_t len, const srv_doc_limits *lim,
                            const srv_doc_options *opt, void **state, mt_err *err)
{
    mt_status st = check_bytes(data, len, err);
    if (st != MT_OK)
        return st;
    subs *t = calloc(1, sizeof *t);
    if (!t)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    t->kind = kind == SRV_DOC_VTT ? SRV_DOC_VTT : SRV_DOC_SRT;
    t->data = data;
    t->len = len;
    /* a byte order mark belongs to the first line: copied, never a cue's text */
    size_t bom = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
    st = split_lines(t, 0, err);
    if (st == MT_OK && t->n_lines)
        t->l[0].start += bom;
    if (st == MT_OK)
        st = blocks(t, err);
    if (st == MT_OK)
        st = make_units(t, lim, err);
    if (st != MT_OK) {
        subs_free(t);
        return st;
    }
    *state = t;
    return MT_OK;
}

static int subs_units(const void *state) { return ((const subs *)state)->n_u; }
static const char *subs_unit(const void *state, int i) { return ((const subs *)state)->u[i].runs.text; }

static mt_status subs_set(void *state, int i, const char *tgt, size_t len, const long *links, int n_links,
                          mt_err *err)
{
    return srv_run_unit_set(&((subs *)state)->u[i], tgt, len, links, n_links, err);
}

/* ---- writing a translated cue ---- */

typedef struct {
    mt_sbuf b;          /* the cue's text */
    size_t *brk;        /* [n_brk] offsets in b of the translation's spaces: where a line may break */
    size_t *vis;        /* [n_brk] the text's bytes before each (tags left out: what a viewer sees) */
    size_t  n_vis;      /* the text's bytes so far */
    int     n_brk;
    size_t  cap_brk;
    int     fail;
} cue_out;

static void out_add(cue_out *o, const char *s, size_t n)
{
    if (!o->fail && mt_sb_add(&o->b, s, n))
        o->fail = 1;
}

static void out_space(cue_out *o)
{
    if (o->fail)
        return;
    if ((size_t)o->n_brk == o->cap_brk) {     /* brk and vis share the capacity */
        size_t cap = mt_grow_cap(o->cap_brk, (size_t)o->n_brk + 1, sizeof *o->brk, 16);
        size_t *b = cap ? realloc(o->brk, sizeof *b * cap) : NULL, *v = b ? realloc(o->vis, sizeof *v * cap) : NULL;
        if (b)
            o->brk = b;
        if (v)
            o->vis = v;
        if (!b || !v) {
            o->fail = 1;
            return;
        }
        o->cap_brk = cap;
    }
    o->vis[o->n_brk] = o->n_vis++;
    o->brk[o->n_brk++] = o->b.n;
    out_add(o, " ", 1);
}

static int ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Translated text s[0..n): its whitespace made single spaces (never a line
 * break: that would end the cue), VTT's & < > escaped. */
static void out_text(cue_out *o, const char *s, size_t n, int vtt)
{
    for (size_t i = 0; i < n; i++) {
        if (ws(s[i]) || s[i] == 0) {
            while (i + 1 < n && (ws(s[i + 1]) || s[i + 1] == 0))
                i++;
            out_space(o);
            continue;
        }
        o->n_vis++;
        if (vtt && s[i] == '&') {
            out_add(o, "&amp;", 5);
        } else if (vtt && s[i] == '<') {
            out_add(o, "&lt;", 4);
        } else if (vtt && s[i] == '>') {
            out_add(o, "&gt;", 4);
        } else {
            out_add(o, s + i, 1);
        }
    }
}

/* The cue's text on one line: outer tags, then its runs' shares with the
 * inner tags between.  A share's trailing space goes where the source had
 * one (after the share, or at a later run that starts with a space), else
 * before the next share. */
static void compose(const subs *t, const cue *c, const unit *u, cue_out *o)
{
    const char *d = t->data;
    int vtt = t->kind == SRV_DOC_VTT, r = c->run0, pending = 0;
    for (int q = c->p0; q < c->m0; q++)
        if (t->p[q].tag)
            out_add(o, d + t->p[q].a, t->p[q].b - t->p[q].a);
    for (int q = c->m0; q < c->m1; q++) {
        const piece *p = &t->p[q];
        if (p->tag) {
            out_add(o, d + p->a, p->b - p->a);
            continue;
        }
        size_t a = u->s[r], b = u->e[r];
        r++;
        while (a < b && ws(u->tgt[a]))
            a++;
        int trailing = 0;
        while (b > a && ws(u->tgt[b - 1]))
            b--, trailing = 1;
        if (pending && (a < b || ws(d[p->a]))) {
            out_space(o);
            pending = 0;
        }
        out_text(o, u->tgt + a, b - a, vtt);
        if (a < b)
            pending = trailing;
        if (pending && ws(d[p->b - 1]) && q + 1 < c->m1) {
            out_space(o);
            pending = 0;
        }
    }
    for (int q = c->m1; q < c->p1; q++)
        if (t->p[q].tag)
            out_add(o, d + t->p[q].a, t->p[q].b - t->p[q].a);
}

/* The break nearest to want (visible bytes) among brk[lo..n), or -1; when
 * dash, only a break before a dash counts if there is one (a dialogue cue
 * keeps one speaker a line). */
static int nearest(const cue_out *o, int lo, size_t want, int dash)
{
    int best = -1;
    size_t bd = 0;
    for (int pass = dash ? 0 : 1; pass < 2 && best < 0; pass++)
        for (int k = lo; k < o->n_brk; k++) {
            if (!pass && !(o->brk[k] + 1 < o->b.n && o->b.p[o->brk[k] + 1] == '-'))
                continue;
            size_t dist = o->vis[k] > want ? o->vis[k] - want : want - o->vis[k];
            if (best < 0 || dist < bd)
                best = k, bd = dist;
        }
    return best;
}

/* o's text as up to c->n_lines lines (breaks nearest to equal parts; a line
 * without a non-space byte dropped, so no blank line ends the cue early), the
 * source's line endings after them. */
static int write_lines(const subs *t, const cue *c, const cue_out *o, mt_sbuf *out)
{
    enum { MAX_WRAP = 16 };             /* a cue of more lines is written in 16 at most */
    const char *s = o->b.p ? o->b.p : "";
    size_t n = o->b.n, cut[MAX_WRAP];
    int want = c->n_lines > 1 ? c->n_lines : 1, n_cut = 0, lo = 0;
    cut[n_cut++] = 0;
    for (int k = 1; k < want && k < MAX_WRAP; k++) {
        int b = nearest(o, lo, o->n_vis * (size_t)k / (size_t)want, c->dialogue);
        if (b < 0)
            break;
        cut[n_cut++] = o->brk[b];
        lo = b + 1;
    }
    int lines = 0;
    for (int k = 0; k < n_cut; k++) {
        size_t a = cut[k], e = k + 1 < n_cut ? cut[k + 1] : n;
        while (a < e && s[a] == ' ')
            a++;
        while (e > a && s[e - 1] == ' ')
            e--;
        if (a == e)
            continue;
        if (lines && mt_sb_add(out, t->data + c->eol_at, c->eol))
            return -1;
        if (mt_sb_add(out, s + a, e - a))
            return -1;
        lines++;
    }
    return lines && mt_sb_add(out, t->data + c->last_eol_at, c->last_eol) ? -1 : 0;
}

static mt_status subs_render(const void *state, char **out, size_t *len, mt_err *err)
{
    const subs *t = state;
    mt_sbuf b = { 0 };
    cue_out o = { 0 };
    size_t at = 0;
    int fail = mt_sb_add(&b, "", 0);
    for (int i = 0; !fail && i < t->n_c; i++) {
        const cue *c = &t->c[i];
        const unit *u = c->unit >= 0 ? &t->u[c->unit] : NULL;
        if (!u || !u->tgt)
            continue;
        o.b.n = 0;
        o.n_brk = 0;
        o.n_vis = 0;
        compose(t, c, u, &o);
        fail = o.fail || mt_sb_add(&b, t->data + at, c->pay - at) || write_lines(t, c, &o, &b);
        at = c->pay_end;
    }
    fail = fail || mt_sb_add(&b, t->data + at, t->len - at);
    free(o.b.p);
    free(o.brk);
    free(o.vis);
    if (fail) {
        free(b.p);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    *out = b.p;
    *len = b.n;
    return MT_OK;
}

const srv_doc_format srv_doc_subtitles_format = { subs_parse, subs_units, subs_unit, subs_set, subs_render,
                                                  subs_free, NULL };
