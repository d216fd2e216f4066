/* protect: placeholders out of a sentence and back into its translation (protect.h). */
#include "protect.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/placeholders.h"
#include "util/strbuf.h"
#include "util/utf8.h"

void srv_protected_free(srv_protected *p)
{
    free(p->text);
    free(p->orig);
    free(p->pts);
    memset(p, 0, sizeof *p);
}

/* Characters of s[0..n), an invalid byte counting as one (mt_utf8_next). */
static long chars(const char *s, size_t n)
{
    long k = 0;
    for (size_t i = 0; i < n; k++) {
        uint32_t c;
        i += mt_utf8_next(s + i, n - i, &c);
    }
    return k;
}

static int count_placeholders(const char *s, size_t n)
{
    int m = 0;
    for (size_t i = 0; i < n;) {
        char kind;
        size_t k = srv_ph_at(s, i, n, 0, &kind);
        m += k > 0;
        i += k ? k : 1;
    }
    return m;
}

mt_status srv_protect(const char *s, size_t n, srv_protected *p, mt_err *err)
{
    memset(p, 0, sizeof *p);
    int count = count_placeholders(s, n);
    if (!count)
        return MT_OK;
    p->text = malloc(3 * n + 1);                /* an invalid byte becomes U+FFFD: 3 */
    p->orig = malloc(sizeof *p->orig * (n + 1));
    p->pts = calloc((size_t)count, sizeof *p->pts);
    if (!p->text || !p->orig || !p->pts) {
        srv_protected_free(p);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    size_t o = 0;
    long cp = 0, src_cp = 0, space_at = -1;     /* space_at: a space owed, at that character of s */
    int after = -1, m = 0, words = 0;           /* after: the last point, until what follows it is known */
    int glued = 0;                              /* a letter, a digit or a point right before */
    uint32_t ws = 0;                            /* the last whitespace since the last character or point */
    for (size_t i = 0; i < n;) {
        char kind;
        size_t k = srv_ph_at(s, i, n, 0, &kind);
        if (k) {
            if (after >= 0)
                p->pts[after].ws.glued_after = 1;  /* two points glued ("%d%%"): nothing between them */
            p->pts[m] = (srv_ph_point){ .at = i, .len = k, .cp = cp, .ws = { .before = ws }, .glued_before = glued };
            after = m++;
            ws = 0;
            glued = 1;
            src_cp += chars(s + i, k);
            i += k;
            continue;
        }
        uint32_t c;
        size_t l = mt_utf8_next(s + i, n - i, &c);
        if (mt_utf8_is_space(c)) {
            if (cp > 0 && space_at < 0)
                space_at = src_cp;
            if (after >= 0)
                p->pts[after].ws.after = c;
            after = -1;
            ws = c;
            glued = 0;
        } else {
            if (after >= 0 && !srv_is_word_cp(c))
                space_at = -1;      /* "from %s." -> "from.": no space before the punctuation */
            if (after >= 0)
                p->pts[after].ws.glued_after = srv_is_word_cp(c);
            after = -1;
            ws = 0;
            glued = srv_is_word_cp(c);
            if (space_at >= 0) {
                p->text[o++] = ' ';
                p->orig[cp++] = space_at;
                space_at = -1;
            }
            words |= srv_is_word_cp(c);
            if (c == 0xfffd && l == 1) {        /* the text stays valid UTF-8, one character for the byte */
                memcpy(p->text + o, "\xef\xbf\xbd", 3);
                o += 3;
            } else {
                memcpy(p->text + o, s + i, l);
                o += l;
            }
            p->orig[cp++] = src_cp;
        }
        src_cp++;
        i += l;
    }
    p->text[o] = 0;
    p->len = o;
    p->n_cp = cp;
    p->orig[cp] = src_cp;
    p->n = m;
    p->verbatim = !words;
    return MT_OK;
}

/* The code points of s[0..n) into c, and each one's byte offset into at
 * (NULL: not wanted; at[count] = n): their count. */
static long decode_all(const char *s, size_t n, uint32_t *c, long *at)
{
    long k = 0;
    for (size_t i = 0; i < n; k++) {
        if (at)
            at[k] = (long)i;
        i += mt_utf8_next(s + i, n - i, &c[k]);
    }
    if (at)
        at[k] = (long)n;
    return k;
}

/* Code point c (0: none) onto o as UTF-8, counted in *cps. */
static int add_cp(mt_sbuf *o, uint32_t c, long *cps)
{
    char b[4];
    int n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (!c)
        return 0;
    if (n == 1) {
        b[0] = (char)c;
    } else {
        for (int i = n - 1; i > 0; i--, c >>= 6)
            b[i] = (char)(0x80 | (c & 0x3f));
        b[0] = (char)((0xf0 << (4 - n)) | c);
    }
    (*cps)++;
    return mt_sb_add(o, b, (size_t)n);
}

typedef struct {
    mt_sbuf     o;
    long        cps;            /* code points in o */
    const char *tgt;
    const long *cpb;            /* [n_tgt + 1] byte offset of each code point of tgt */
    long       *map;            /* [n_tgt + 1] */
} filler;

/* Target code points [a, b) onto the output. */
static int copy_target(filler *f, long a, long b)
{
    for (long k = a; k < b; k++)
        f->map[k] = f->cps++;
    return b > a ? mt_sb_add(&f->o, f->tgt + f->cpb[a], (size_t)(f->cpb[b] - f->cpb[a])) : 0;
}

/* The points into the output, after the target up to where each goes. */
static int fill(const srv_protected *p, const char *s, const srv_aligned *a, filler *f, size_t *at)
{
    long cur = 0;
    int point = 0;                      /* the output ends with a point written at cur */
    for (int k = 0; k < p->n; k++) {
        const srv_ph_point *pt = &p->pts[k];
        long t = srv_point_target(a, pt->cp), to;
        uint32_t before, after;
        t = t < cur ? cur : t > a->n_tgt ? a->n_tgt : t;    /* never before the point before it */
        srv_point_spaces(a, pt->ws, t, a->n_tgt, &to, &before, &after);
        /* glued to no word in the sentence ("<%s>"): to none in the output */
        if (!before && !pt->ws.before && !pt->glued_before && to > 0 && (to > cur || !point) &&
            srv_is_word_cp(a->tgt[to - 1]))
            before = ' ';
        if (!after && !pt->ws.after && !pt->ws.glued_after && to < a->n_tgt && srv_is_word_cp(a->tgt[to]))
            after = ' ';
        if (copy_target(f, cur, to) || add_cp(&f->o, before, &f->cps))
            return -1;
        if (at)
            at[k] = f->o.n;
        if (mt_sb_add(&f->o, s + pt->at, pt->len) || add_cp(&f->o, after, &f->cps))
            return -1;
        f->cps += chars(s + pt->at, pt->len);
        cur = to;
        point = 1;
    }
    if (copy_target(f, cur, a->n_tgt))
        return -1;
    f->map[a->n_tgt] = f->cps;
    return mt_sb_add(&f->o, "", 0);
}

int srv_unprotect(const srv_protected *p, const char *s, const char *tgt, size_t len, const long *links,
                  int n_links, char **out, long **map, size_t *at)
{
    uint32_t *sc = malloc(sizeof *sc * (p->len + 1)), *tc = malloc(sizeof *tc * (len + 1));
    long *cpb = malloc(sizeof *cpb * (len + 1)), *tw = malloc(sizeof *tw * 2 * (len + 1));
    filler f = { .tgt = tgt, .cpb = cpb, .map = malloc(sizeof *f.map * (len + 1)) };
    int rc = -1;
    *out = NULL;
    if (map)
        *map = NULL;
    if (sc && tc && cpb && tw && f.map) {
        long n_src = decode_all(p->text, p->len, sc, NULL), n_tgt = decode_all(tgt, len, tc, cpb);
        srv_aligned a = { sc, n_src, tc, n_tgt, tw, srv_text_words(tc, n_tgt, tw), links, n_links };
        rc = fill(p, s, &a, &f, at);
    }
    if (rc == 0) {
        *out = f.o.p;
        f.o.p = NULL;
        if (map) {
            *map = f.map;
            f.map = NULL;
        }
    }
    free(f.o.p);
    free(f.map);
    free(sc);
    free(tc);
    free(cpb);
    free(tw);
    return rc;
}
