/* points: a point of a source placed in its translation (points.h). */
#include "points.h"

#include <string.h>

#include "util/utf8.h"

int srv_is_word_cp(uint32_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

int srv_is_punct(uint32_t c)
{
    return (c < 0x80 && c > 0x20 && c != 0x7f && !srv_is_word_cp(c)) || c == 0xa1 || c == 0xab || c == 0xbb ||
           c == 0xbf || (c >= 0x2010 && c <= 0x205e) || (c >= 0x3001 && c <= 0x303f);
}

int srv_all_punct(const uint32_t *c, long a, long b)
{
    for (long i = a; i < b; i++)
        if (!srv_is_punct(c[i]))
            return 0;
    return b > a;
}

int srv_text_words(const uint32_t *c, long n, long *tw)
{
    int k = 0;
    for (long i = 0; i < n;) {
        while (i < n && mt_utf8_is_space(c[i]))
            i++;
        if (i == n)
            break;
        tw[2 * k] = i;
        while (i < n && !mt_utf8_is_space(c[i]))
            i++;
        tw[2 * k++ + 1] = i;
    }
    return k;
}

int srv_word_starting(const srv_aligned *a, long start)
{
    int lo = 0, hi = a->n_tw - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a->tw[2 * mid] == start)
            return mid;
        if (a->tw[2 * mid] < start)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* The source word around code point i when i is strictly inside one: 1 and [*ws, *we). */
static int inside_word(const srv_aligned *a, long i, long *ws, long *we)
{
    if (i <= 0 || i >= a->n_src || mt_utf8_is_space(a->src[i - 1]) || mt_utf8_is_space(a->src[i]))
        return 0;
    *ws = i;
    *we = i;
    while (*ws > 0 && !mt_utf8_is_space(a->src[*ws - 1]))
        (*ws)--;
    while (*we < a->n_src && !mt_utf8_is_space(a->src[*we]))
        (*we)++;
    return 1;
}

/* Target word j when it is source word [ws, we) copied (a name, a number, a formula). */
static int copied(const srv_aligned *a, int j, long ws, long we)
{
    if (j < 0)
        return 0;
    long s = a->tw[2 * j], e = a->tw[2 * j + 1];
    return e - s == we - ws && !memcmp(a->tgt + s, a->src + ws, sizeof *a->src * (size_t)(we - ws));
}

long srv_copied_boundary(const srv_aligned *a, long i, long t, int end)
{
    long ws, we;
    if (!inside_word(a, i, &ws, &we))
        return t;
    for (int j = 0; j < a->n_tw; j++)
        if ((end ? a->tw[2 * j + 1] : a->tw[2 * j]) == t && copied(a, j, ws, we))
            return a->tw[2 * j] + (i - ws);
    return t;
}

/* A point inside a source word: into the copy of that word the target holds, if one is linked to it. */
static int point_inside_copied(const srv_aligned *a, long s, long *p)
{
    long ws, we;
    if (!inside_word(a, s, &ws, &we))
        return 0;
    for (int k = 0; k < a->n_links; k++) {
        const long *l = a->links + 4 * k;
        int j = l[0] == ws ? srv_word_starting(a, l[2]) : -1;
        if (j >= 0 && copied(a, j, ws, we)) {
            *p = a->tw[2 * j] + (s - ws);
            return 1;
        }
    }
    return 0;
}

void srv_neighbours(const srv_aligned *a, long s, long e, long *pos, long *npos)
{
    long prev = -1, next = -1;
    *pos = *npos = -1;
    for (int k = 0; k < a->n_links; k++) {
        const long *l = a->links + 4 * k;
        if (l[1] <= s && (l[1] > prev || (l[1] == prev && l[3] > *pos))) {
            prev = l[1];
            *pos = l[3];
        }
        if (l[0] >= e && (next < 0 || l[0] < next || (l[0] == next && l[2] < *npos))) {
            next = l[0];
            *npos = l[2];
        }
    }
}

/* A point before the punctuation that ends its source word: after the last
 * target word linked to that word, before that target word's own trailing
 * punctuation. */
static int point_before_punct(const srv_aligned *a, long s, long *p)
{
    long ws, we, best = -1, start = 0;
    if (!inside_word(a, s, &ws, &we) || !srv_all_punct(a->src, s, we))
        return 0;
    for (int k = 0; k < a->n_links; k++) {
        const long *l = a->links + 4 * k;
        if (l[0] == ws && l[1] == we && l[3] > best && l[2] >= 0 && l[3] <= a->n_tgt && l[2] < l[3]) {
            best = l[3];
            start = l[2];
        }
    }
    if (best < 0)
        return 0;
    while (best > start && srv_is_punct(a->tgt[best - 1]))
        best--;
    *p = best;
    return 1;
}

long srv_point_target(const srv_aligned *a, long s)
{
    long p, pos, npos;
    if (point_inside_copied(a, s, &p) || point_before_punct(a, s, &p))
        return p;
    if (s <= 0 || s >= a->n_src)        /* before or after every word: there */
        return s <= 0 ? 0 : a->n_tgt;
    srv_neighbours(a, s, s, &pos, &npos);
    return pos >= 0 ? pos : npos >= 0 ? npos : 0;
}

static int tgt_space(const srv_aligned *a, long i) { return i >= 0 && i < a->n_tgt && mt_utf8_is_space(a->tgt[i]); }

void srv_point_spaces(const srv_aligned *a, srv_point_ws ws, long p, long hi, long *at, uint32_t *before,
                      uint32_t *after)
{
    *before = *after = 0;
    if (ws.before && p > 0 && !tgt_space(a, p - 1)) {
        if (tgt_space(a, p) && p < hi) {            /* the target's own space: after it */
            while (p < hi && tgt_space(a, p))
                p++;
        } else {
            *before = ws.before;
        }
    }
    if (ws.after && p < a->n_tgt && !tgt_space(a, p))
        *after = ws.after;
    else if (!ws.after && !ws.glued_after && p > 0 && tgt_space(a, p - 1) && p < a->n_tgt &&
             srv_is_word_cp(a->tgt[p]))
        *after = ' ';       /* "Hello %s, you" -> "Bonjour %s vous": between two words, not glued to either */
    *at = p;
}
