/* fake_translate: a fake translation of a markup unit, for the tests of
 * server/markup (html_check.h, test_xml_markup.c, fuzz_xml.c): the unit's
 * words in place, reversed or shuffled, with word links as the pipeline
 * gives them (code points). */
#ifndef FAKE_TRANSLATE_H
#define FAKE_TRANSLATE_H

#include <stdint.h>

#include "util/strbuf.h"

static uint64_t html_rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int html_ws(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }

/* Unit text t's words as byte spans ([2k], [2k+1]) and code-point spans (cps). */
static int html_words(const char *t, long *bytes, long *cps, int cap)
{
    int n = 0;
    long cp = 0;
    for (long i = 0; t[i] && n < cap;) {
        while (t[i] && html_ws((unsigned char)t[i]))
            i++, cp++;
        if (!t[i])
            break;
        bytes[2 * n] = i;
        cps[2 * n] = cp;
        while (t[i] && !html_ws((unsigned char)t[i])) {
            cp += ((unsigned char)t[i] & 0xc0) != 0x80;
            i++;
        }
        bytes[2 * n + 1] = i;
        cps[2 * n++ + 1] = cp;
    }
    return n;
}

/* Unit i, whose text is t, translated: mode 0 the same words, in order, every
 * link; mode 1 the words reversed; mode 2 shuffled by seed with a third of the
 * links dropped and some words linked twice.  The text in scratch
 * (NUL-terminated), *links its links (static: until the next call), their count. */
static int fake_translation(const char *t, int i, int mode, uint64_t seed, mt_sbuf *scratch, const long **links_out)
{
    enum { CAP = 4096 };
    static long wb[2 * CAP], wc[2 * CAP], links[4 * 2 * CAP];
    static int order[CAP];
    int n = html_words(t, wb, wc, CAP);
    for (int k = 0; k < n; k++)
        order[k] = mode == 1 ? n - 1 - k : k;
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 1;
    for (int k = n - 1; mode == 2 && k > 0; k--) {
        int j = (int)(html_rng(&s) % (uint64_t)(k + 1)), x = order[k];
        order[k] = order[j];
        order[j] = x;
    }
    scratch->n = 0;
    int nl = 0;
    long cp = 0;
    for (int k = 0; k < n; k++) {
        int w = order[k];
        if (k) {
            mt_sb_add(scratch, " ", 1);
            cp++;
        }
        long len_cp = wc[2 * w + 1] - wc[2 * w];
        mt_sb_add(scratch, t + wb[2 * w], (size_t)(wb[2 * w + 1] - wb[2 * w]));
        if (mode != 2 || html_rng(&s) % 3) {
            long *l = links + 4 * nl++;
            l[0] = wc[2 * w], l[1] = wc[2 * w + 1], l[2] = cp, l[3] = cp + len_cp;
        }
        if (mode == 2 && html_rng(&s) % 5 == 0 && n > 1) {     /* a stray link */
            int o = order[html_rng(&s) % (uint64_t)n];
            long *l = links + 4 * nl++;
            l[0] = wc[2 * o], l[1] = wc[2 * o + 1], l[2] = cp, l[3] = cp + len_cp;
        }
        cp += len_cp;
    }
    mt_sb_add(scratch, "", 0);
    *links_out = links;
    return nl;
}

#endif
