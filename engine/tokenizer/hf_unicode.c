/* hf_unicode.c: character classes and NFC for the tokenizer.json code (hf_unicode.h). */
#include "hf_unicode.h"

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

#include "hf_unicode_table.h"

/* Hangul syllables (de)compose by formula (Unicode 3.12), not by table. */
enum { S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7,
       L_COUNT = 19, V_COUNT = 21, T_COUNT = 28, N_COUNT = V_COUNT * T_COUNT, S_COUNT = L_COUNT * N_COUNT };

uint8_t hfu_class(uint32_t c)
{
    if (c >= 0x110000)
        return 0;
    return hfu_stage2[hfu_stage1[c >> 8]][c & 255];
}

const char *hfu_version(void)
{
    return HFU_UNICODE_VERSION;
}

static uint8_t ccc(uint32_t c)
{
    size_t lo = 0, hi = sizeof hfu_ccc / sizeof hfu_ccc[0];
    if (!(hfu_class(c) & HFU_NFC))
        return 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (hfu_ccc[mid][1] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sizeof hfu_ccc / sizeof hfu_ccc[0] && hfu_ccc[lo][0] <= c ? (uint8_t)hfu_ccc[lo][2] : 0;
}

/* The primary composite of a + b, or 0. */
static uint32_t compose(uint32_t a, uint32_t b)
{
    if (a - L_BASE < L_COUNT && b - V_BASE < V_COUNT)
        return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
    if (a - S_BASE < S_COUNT && (a - S_BASE) % T_COUNT == 0 && b - T_BASE - 1 < T_COUNT - 1)
        return a + (b - T_BASE);
    uint64_t key = ((uint64_t)a << 21) | b;
    size_t lo = 0, hi = sizeof hfu_comp / sizeof hfu_comp[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (hfu_comp[mid][0] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sizeof hfu_comp / sizeof hfu_comp[0] && hfu_comp[lo][0] == key ? (uint32_t)hfu_comp[lo][1] : 0;
}

/* Appends the full canonical decomposition of c to d[*n]: at most 4 code
 * points (the longest in Unicode 14; the caller leaves room for 4 per character). */
static void decompose(uint32_t c, uint32_t *d, size_t *n)
{
    if (c - S_BASE < S_COUNT) {
        uint32_t s = c - S_BASE;
        d[(*n)++] = L_BASE + s / N_COUNT;
        d[(*n)++] = V_BASE + (s % N_COUNT) / T_COUNT;
        if (s % T_COUNT)
            d[(*n)++] = T_BASE + s % T_COUNT;
        return;
    }
    if (hfu_class(c) & HFU_NFC) {
        size_t lo = 0, hi = sizeof hfu_decomp / sizeof hfu_decomp[0];
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (hfu_decomp[mid][0] < c)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < sizeof hfu_decomp / sizeof hfu_decomp[0] && hfu_decomp[lo][0] == c) {
            for (uint32_t i = 0; i < hfu_decomp[lo][2]; i++)
                d[(*n)++] = hfu_decomp_pool[hfu_decomp[lo][1] + i];
            return;
        }
    }
    d[(*n)++] = c;
}

int hfu_nfc(const char *s, size_t n, mt_sbuf *out)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0, chars = 0;
    int work = 0;
    while (i < n) {
        uint32_t c;
        size_t k = p[i] < 0x80 ? (c = p[i], 1) : mt_utf8_next(s + i, n - i, &c);  /* validated: never U+FFFD */
        work |= hfu_class(c) & HFU_NFC;
        i += k;
        chars++;
    }
    if (!work)
        return mt_sb_reserve(out, 1) || mt_sb_add(out, s, n) ? -1 : 0;

    /* decompose (at most 4 code points per character), order, compose */
    uint32_t *d = malloc((chars * 4 + 1) * sizeof *d);
    if (!d)
        return -1;
    size_t nd = 0;
    for (i = 0; i < n;) {
        uint32_t c;
        size_t k = mt_utf8_next(s + i, n - i, &c);
        decompose(c, d, &nd);
        i += k;
    }
    /* canonical ordering: a stable insertion sort inside each run of non-starters */
    for (size_t a = 1; a < nd; a++) {
        uint8_t ca = ccc(d[a]);
        if (!ca)
            continue;
        size_t b = a;
        uint32_t c = d[a];
        while (b > 0 && ccc(d[b - 1]) > ca) {
            d[b] = d[b - 1];
            b--;
        }
        d[b] = c;
    }
    /* composition: a character joins the last starter unless blocked (a
     * character between them has class 0 or >= its own; classes between are
     * ordered, so the last one decides) */
    size_t no = 0;
    long starter = -1;
    uint8_t last_cc = 0;
    for (size_t a = 0; a < nd; a++) {
        uint32_t c = d[a];
        uint8_t cc = ccc(c);
        if (starter >= 0) {
            int adjacent = (size_t)starter == no - 1;
            uint32_t comp;
            if ((adjacent || (last_cc != 0 && last_cc < cc)) && (comp = compose(d[starter], c))) {
                d[starter] = comp;
                continue;
            }
        }
        if (cc == 0)
            starter = (long)no;
        d[no++] = c;
        last_cc = cc;
    }
    int rc = mt_sb_reserve(out, no * 4 + 1);
    if (!rc) {
        for (size_t a = 0; a < no; a++)
            out->n += mt_utf8_encode(d[a], out->p + out->n);
        out->p[out->n] = '\0';
    }
    free(d);
    return rc ? -1 : 0;
}
