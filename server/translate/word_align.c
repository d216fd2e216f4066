/* word_align: token alignments -> word links over character offsets (word_align.h). */
#include "word_align.h"

#include <stdlib.h>
#include <string.h>

#include "util/check.h"
#include "util/utf8.h"


long srv_cp_count(const char *s, size_t n) { return mt_utf8_count(s, n); }

/* The words of t[0..len) as code-point spans [2 * w], [2 * w + 1]; returns
 * their count (at most cap; the rest are not recorded but counted). */
static int text_words(const char *t, size_t len, long *span, int cap)
{
    int n = 0, in_word = 0;
    long cp = 0;
    size_t i = 0;
    while (i < len) {
        uint32_t c;
        size_t k = mt_utf8_next(t + i, len - i, &c);
        int sp = mt_utf8_is_space(c);
        if (!sp && !in_word && n < cap)
            span[2 * n] = cp;
        if (sp && in_word && n - 1 < cap)
            span[2 * (n - 1) + 1] = cp;
        if (!sp && !in_word)
            n++;
        in_word = !sp;
        cp++;
        i += k;
    }
    if (in_word && n - 1 < cap)
        span[2 * (n - 1) + 1] = cp;
    return n;
}

/* Word index of each piece: U+2581 at a piece's start opens the next word. */
static void piece_words(const mt_tokenizer *tok, const int32_t *ids, int n, int n_words, int *w)
{
    int cur = -1;
    for (int i = 0; i < n; i++) {
        const char *p = mt_tokenizer_piece(tok, ids[i]);
        if (cur < 0 || (p && !strncmp(p, "\xe2\x96\x81", 3)))
            cur++;
        w[i] = cur < n_words ? cur : n_words - 1;
    }
}

static int push(srv_links *l, const long v[4])
{
    for (int i = 0; i < l->n; i++)
        if (!memcmp(l->v + 4 * (long)i, v, sizeof(long) * 4))
            return 0;
    if (mt_grow(&l->v, &l->cap, (size_t)l->n + 1, sizeof(long) * 4, 32))     /* [cap][4] */
        return -1;
    memcpy(l->v + 4 * (long)l->n++, v, sizeof(long) * 4);
    return 0;
}

int srv_word_links(const mt_tokenizer *tok, const char *src_text, size_t src_len, const int32_t *src_ids, int ns,
                   const char *tgt_text, size_t tgt_len, const int32_t *tgt_ids, int nt, const int32_t *align,
                   long src_cp0, long tgt_cp0, srv_links *out)
{
    int cap_s = ns + 1, cap_t = nt + 1, rc = 0;
    long *ss = malloc(sizeof(long) * 2 * (size_t)cap_s), *ts = malloc(sizeof(long) * 2 * (size_t)cap_t);
    int *sw = malloc(sizeof(int) * (size_t)cap_s), *tw = malloc(sizeof(int) * (size_t)cap_t);
    if (!ss || !ts || !sw || !tw) {
        rc = -1;
        goto done;
    }
    /* a word with no token of its own cannot be linked: only the first cap spans matter */
    int n_sw = text_words(src_text, src_len, ss, cap_s), n_tw = text_words(tgt_text, tgt_len, ts, cap_t);
    n_sw = n_sw < cap_s ? n_sw : cap_s;
    n_tw = n_tw < cap_t ? n_tw : cap_t;
    if (n_sw == 0 || n_tw == 0)
        goto done;
    piece_words(tok, src_ids, ns, n_sw, sw);
    piece_words(tok, tgt_ids, nt, n_tw, tw);
    for (int t = 0; t < nt && rc == 0; t++) {
        if (align[t] < 0 || align[t] >= ns)
            continue;
        int a = sw[align[t]], b = tw[t];
        long v[4] = {src_cp0 + ss[2 * a], src_cp0 + ss[2 * a + 1], tgt_cp0 + ts[2 * b], tgt_cp0 + ts[2 * b + 1]};
        rc = push(out, v);
    }
done:
    free(ss);
    free(ts);
    free(sw);
    free(tw);
    return rc;
}

/* Which word (run of non-space characters) byte pos of t falls in: the number
 * of words that start at or before it, less one. */
static int word_at(const char *t, size_t len, size_t pos)
{
    int n = 0, in_word = 0;
    size_t i = 0;
    while (i < len && i <= pos) {
        uint32_t c;
        size_t k = mt_utf8_next(t + i, len - i, &c);
        int sp = mt_utf8_is_space(c);
        n += !sp && !in_word;
        in_word = !sp;
        i += k;
    }
    return n - 1;
}

int srv_token_span(const mt_tokenizer *tok, const char *text, size_t len, const int32_t *ids, int n, size_t a,
                   size_t b, int *start, int *end)
{
    *start = *end = 0;
    if (n <= 0 || a >= b || b > len)
        return -1;
    int w0 = word_at(text, len, a), w1 = word_at(text, len, b - 1), cur = -1;
    *start = -1;
    for (int i = 0; i < n; i++) {
        const char *p = mt_tokenizer_piece(tok, ids[i]);
        if (cur < 0 || (p && !strncmp(p, "\xe2\x96\x81", 3)))
            cur++;
        if (cur >= w0 && cur <= w1) {
            if (*start < 0)
                *start = i;
            *end = i + 1;
        }
    }
    if (*start < 0)
        *start = *end = 0;
    return *end > *start ? 0 : -1;
}

/* The target end of the links of the source word ending nearest before pos; -1 when none has a link. */
static long target_end_before(const long *w, int n, long pos)
{
    long best_src = -1, end = -1;
    for (int k = 0; k < n; k++) {
        const long *l = w + 4 * k;
        if (l[1] > pos || l[1] < best_src)
            continue;
        if (l[1] > best_src)
            end = -1;           /* a nearer source word: its links only */
        best_src = l[1];
        end = l[3] > end ? l[3] : end;
    }
    return end;
}

void srv_align_points(const long *words, int n_words, const char *tgt, size_t tgt_len, const long *pos, int n,
                      long *out)
{
    long last = -1;
    for (int i = 0; i < n; i++) {
        long end = target_end_before(words, n_words, pos[i]);
        out[i] = -1;
        if (end < 0)
            continue;
        long cp = 0;
        for (size_t b = 0; b < tgt_len; cp++) {
            if (cp >= end && cp > last && tgt[b] == ' ') {
                out[i] = last = cp;
                break;
            }
            b++;
            while (b < tgt_len && ((unsigned char)tgt[b] & 0xc0) == 0x80)
                b++;
        }
    }
}
