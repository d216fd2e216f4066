/* fuzz_placeholders: the placeholder scanner (server/text/placeholders.c) and
 * a sentence's placeholders out and back (server/translate/protect.c, on
 * server/text/points.c) on arbitrary bytes.  Input: a selector byte, then the
 * text.  Checked:
 *   - srv_ph_scan (with and without SRV_PH_MARKUP): placeholders non-empty, in
 *     order, disjoint, inside the text, each the length srv_ph_at gives at its
 *     start; a smaller cap gives cap + 1 and the same first ones; a text keeps
 *     its own placeholders (srv_ph_kept) when it has at most 64;
 *   - srv_protect: the model's text valid UTF-8 (an invalid byte U+FFFD), its
 *     code points mapped to increasing ones of the sentence, every point in order,
 *     inside the text, its bytes the placeholder found there;
 *   - srv_unprotect of a fake translation (selector / 2 mod 4: the text
 *     itself with each word linked to itself, its words reversed with links
 *     crossing, empty, or the text with links read from the input, out of
 *     range ones included): every placeholder in the output byte for byte,
 *     once, in order, at the offsets reported; the output without them is
 *     the translation with only whitespace added; the code-point map
 *     increasing, ending at the output's count;
 *   - srv_title_fold (server/translate/title_case.c, on the same text): 0 and
 *     nothing written, or the same bytes long with only uppercase initials
 *     folded, as many as it says, and no longer Title Case;
 *   - srv_word_fold: 0 and nothing written, or one letter lowered and the
 *     result no longer a lone word in sentence case; srv_title_capitalize on
 *     that result gives the text back (up to a capital that folds alike); on the text itself: the same bytes
 *     long, at most one letter changed, to its capital.
 */
#include "fuzz_common.h"

#include "text/placeholders.h"
#include "translate/glossary.h"
#include "translate/protect.h"
#include "translate/title_case.h"
#include "util/utf8.h"

static void check_scan(const char *s, size_t n, int flags)
{
    enum { CAP = 256 };
    static srv_ph ph[CAP + 1], few[5];
    int m = srv_ph_scan(s, n, flags, ph, CAP);
    FUZZ_CHECK(m >= 0 && m <= CAP + 1);
    size_t at = 0;
    for (int i = 0; i < m && i < CAP; i++) {
        size_t off = (size_t)(ph[i].s - s);
        char kind;
        FUZZ_CHECK(ph[i].n > 0 && off >= at && off + ph[i].n <= n);
        FUZZ_CHECK(srv_ph_at(s, off, n, flags, &kind) == ph[i].n && kind == ph[i].kind);
        FUZZ_CHECK(kind == SRV_PH_ORDERED || kind == SRV_PH_OTHER || (kind == SRV_PH_TAG && (flags & SRV_PH_MARKUP)));
        at = off + ph[i].n;
    }
    int k = srv_ph_scan(s, n, flags, few, 4);
    FUZZ_CHECK(k == (m > 4 ? 5 : m));
    for (int i = 0; i < k && i < 4; i++)
        FUZZ_CHECK(few[i].s == ph[i].s && few[i].n == ph[i].n);
    if (m <= 64)
        FUZZ_CHECK(srv_ph_kept(s, n, s, n, flags) == 1);
}

static long count_cps(const char *s, size_t n)
{
    long k = 0;
    for (size_t i = 0; i < n; k++) {
        uint32_t c;
        i += mt_utf8_next(s + i, n - i, &c);
    }
    return k;
}

/* The fake translation of p->text for mode into *tgt (malloc'd) and its links (malloc'd [n][4]). */
static int fake(const srv_protected *p, int mode, const uint8_t *data, size_t size, char **tgt, long **links)
{
    long *w = malloc(sizeof *w * 2 * (size_t)(p->n_cp + 1));
    int nw = 0, in = 0, n = 0;
    FUZZ_CHECK(w);
    long cp = 0;
    for (size_t i = 0; i < p->len; cp++) {          /* the words of p->text: [start, end) code points */
        uint32_t c;
        size_t l = mt_utf8_next(p->text + i, p->len - i, &c);
        int sp = mt_utf8_is_space(c);
        if (!sp && !in)
            w[2 * nw] = cp;
        if (sp && in)
            w[2 * nw++ + 1] = cp;
        in = !sp;
        i += l;
    }
    if (in)
        w[2 * nw++ + 1] = cp;
    *links = malloc(sizeof **links * 4 * (size_t)(nw + 8));
    FUZZ_CHECK(*links);
    if (mode == 2) {
        *tgt = strdup("");
    } else if (mode == 1) {                         /* the words reversed, each linked to its source */
        *tgt = malloc(p->len + 2);
        FUZZ_CHECK(*tgt);
        size_t o = 0;
        long tcp = 0;
        for (int k = nw - 1; k >= 0; k--) {
            const char *a = p->text, *e = p->text;
            long c = 0;
            while (c < w[2 * k] && *a) {            /* code point -> byte */
                uint32_t u;
                a += mt_utf8_next(a, (size_t)(p->text + p->len - a), &u);
                c++;
            }
            for (e = a; c < w[2 * k + 1] && *e; c++) {
                uint32_t u;
                e += mt_utf8_next(e, (size_t)(p->text + p->len - e), &u);
            }
            if (o)
                (*tgt)[o++] = ' ', tcp++;
            memcpy(*tgt + o, a, (size_t)(e - a));
            o += (size_t)(e - a);
            long *L = *links + 4 * n++;
            L[0] = w[2 * k], L[1] = w[2 * k + 1], L[2] = tcp, L[3] = tcp + (w[2 * k + 1] - w[2 * k]);
            tcp = L[3];
        }
        (*tgt)[o] = 0;
    } else {                                        /* the text, each word linked to itself (mode 3: and stray links) */
        *tgt = strdup(p->text);
        for (int k = 0; k < nw; k++) {
            long *L = *links + 4 * n++;
            L[0] = L[2] = w[2 * k], L[1] = L[3] = w[2 * k + 1];
        }
        for (int k = 0; mode == 3 && k < 8 && size >= 4 * (size_t)(k + 1); k++) {
            long *L = *links + 4 * n++;
            for (int j = 0; j < 4; j++)
                L[j] = (long)data[4 * k + j] - 8;
        }
    }
    FUZZ_CHECK(*tgt);
    free(w);
    return n;
}

static void check_protect(const char *s, size_t n, int mode, const uint8_t *data, size_t size)
{
    srv_protected p;
    mt_err err = { 0 };
    FUZZ_CHECK(srv_protect(s, n, &p, &err) == MT_OK);
    if (!p.n) {
        FUZZ_CHECK(!p.text && !p.pts);
        return;
    }
    FUZZ_CHECK(p.len <= 3 * n && strlen(p.text) == p.len && mt_utf8_valid(p.text, p.len));
    FUZZ_CHECK(p.n_cp == count_cps(p.text, p.len));
    FUZZ_CHECK(p.orig[p.n_cp] == count_cps(s, n));
    for (long k = 0; k < p.n_cp; k++)
        FUZZ_CHECK(p.orig[k] >= 0 && p.orig[k] < p.orig[k + 1]);
    for (int k = 0; k < p.n; k++) {
        char kind;
        FUZZ_CHECK(p.pts[k].cp >= 0 && p.pts[k].cp <= p.n_cp && (!k || p.pts[k].cp >= p.pts[k - 1].cp));
        FUZZ_CHECK(!k || p.pts[k].at >= p.pts[k - 1].at + p.pts[k - 1].len);
        FUZZ_CHECK(srv_ph_at(s, p.pts[k].at, n, 0, &kind) == p.pts[k].len);
    }
    char *tgt, *out;
    long *links, *map;
    int nl = fake(&p, mode, data, size, &tgt, &links);
    size_t tlen = strlen(tgt), *at = malloc(sizeof *at * (size_t)p.n);
    FUZZ_CHECK(at && srv_unprotect(&p, s, tgt, tlen, links, nl, &out, &map, at) == 0);
    size_t olen = strlen(out), o = 0, t = 0;
    for (int k = 0; k <= p.n; k++) {                /* out = tgt's bytes (+ whitespace) and the placeholders */
        size_t end = k < p.n ? at[k] : olen;
        FUZZ_CHECK(end >= o && end <= olen);
        while (o < end) {                           /* a character of tgt's, or whitespace added */
            uint32_t c;
            size_t l = mt_utf8_next(out + o, end - o, &c);
            if (t + l <= tlen && !memcmp(out + o, tgt + t, l))
                t += l;
            else
                FUZZ_CHECK(mt_utf8_is_space(c));
            o += l;
        }
        if (k < p.n) {
            FUZZ_CHECK(o + p.pts[k].len <= olen && !memcmp(out + o, s + p.pts[k].at, p.pts[k].len));
            o += p.pts[k].len;
        }
    }
    FUZZ_CHECK(t == tlen);
    long tcp = count_cps(tgt, tlen);
    for (long k = 0; k < tcp; k++)
        FUZZ_CHECK(map[k] >= 0 && map[k] < map[k + 1]);
    FUZZ_CHECK(map[tcp] == count_cps(out, olen));
    free(out);
    free(map);
    free(at);
    free(tgt);
    free(links);
    srv_protected_free(&p);
}

static void check_title(const char *s, size_t n)
{
    char *out = malloc(n + 1), *again = malloc(n + 1);
    FUZZ_CHECK(out && again);
    out[n] = 0x5A;
    int k = srv_title_fold(s, n, out);
    FUZZ_CHECK(k >= 0 && out[n] == 0x5A);
    int changed = 0;
    for (size_t i = 0; k > 0 && i < n;) {
        uint32_t a, b;
        size_t ka = mt_utf8_next(s + i, n - i, &a), kb = mt_utf8_next(out + i, n - i, &b);
        FUZZ_CHECK(ka == kb);
        if (a != b) {
            FUZZ_CHECK(srv_glossary_is_upper(a) && b == srv_glossary_fold(a));
            changed++;
        }
        i += ka;
    }
    FUZZ_CHECK(changed == k);
    FUZZ_CHECK(k == 0 || srv_title_fold(out, n, again) == 0);
    free(out);
    free(again);
}

/* The positions of s[0..n) and t[0..n) whose code points differ (same lengths each). */
static int differing(const char *s, const char *t, size_t n, uint32_t *from, uint32_t *to)
{
    int d = 0;
    for (size_t i = 0; i < n;) {
        uint32_t a, b;
        size_t ka = mt_utf8_next(s + i, n - i, &a), kb = mt_utf8_next(t + i, n - i, &b);
        FUZZ_CHECK(ka == kb);
        if (a != b)
            *from = a, *to = b, d++;
        i += ka;
    }
    return d;
}

static void check_word(const char *s, size_t n)
{
    char *out = malloc(n + 1), *again = malloc(n + 1), *cap = malloc(n + 1);
    FUZZ_CHECK(out && again && cap);
    out[n] = 0x5A;
    uint32_t a = 0, b = 0;
    int k = srv_word_fold(s, n, out);
    FUZZ_CHECK((k == 0 || k == 1) && out[n] == 0x5A);
    if (k) {
        FUZZ_CHECK(differing(s, out, n, &a, &b) == 1 && srv_glossary_is_upper(a) && b == srv_glossary_fold(a));
        FUZZ_CHECK(srv_word_fold(out, n, again) == 0);
        memcpy(cap, out, n);                /* back up: that letter, or one that folds alike */
        int r = srv_title_capitalize(cap, n), d = differing(s, cap, n, &a, &b);
        FUZZ_CHECK(r ? d == 0 || (d == 1 && srv_glossary_fold(a) == srv_glossary_fold(b)) : d == 1);
    }
    memcpy(cap, s, n);
    int c = srv_title_capitalize(cap, n);
    FUZZ_CHECK(differing(s, cap, n, &a, &b) == c && (!c || (b == srv_glossary_upper(a) && b != a)));
    free(out);
    free(again);
    free(cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int sel = data[0];
    char *s = malloc(size);
    FUZZ_CHECK(s);
    memcpy(s, data + 1, size - 1);
    size_t n = strnlen(s, size - 1);    /* the pipeline's texts are C strings */
    check_scan(s, n, 0);
    check_scan(s, n, SRV_PH_MARKUP);
    check_protect(s, n, (sel >> 1) % 4, data + 1, n);
    check_title(s, n);
    check_word(s, n);
    free(s);
    return 0;
}
