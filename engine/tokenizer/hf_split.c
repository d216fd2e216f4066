/* hf_split.c: the Qwen2 / Llama 3 pre-tokenizer regex by hand (hf_split.h).
 * Each alternative is tried in order, as a backtracking engine would, and
 * the first that matches at i wins (not the longest). */
#include "hf_split.h"

#include "hf_unicode.h"

static int crlf(uint32_t c)
{
    return c == '\r' || c == '\n';
}

static uint32_t ascii_lower(uint32_t c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

size_t hf_split_match(const uint32_t *cp, const uint8_t *cls, size_t n, size_t i, int max_digits)
{
    uint32_t c = cp[i];
    size_t j;
#define OTHER(k) (!(cls[k] & (HFU_L | HFU_N | HFU_WS)))

    /* (?i:'s|'t|'re|'ve|'m|'ll|'d): case folding also maps U+017F (long s) to s */
    if (c == '\'' && i + 1 < n) {
        uint32_t a = ascii_lower(cp[i + 1]), b = i + 2 < n ? ascii_lower(cp[i + 2]) : 0;
        if (a == 's' || a == 0x17F || a == 't' || a == 'm' || a == 'd')
            return 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
            return 3;
    }
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    j = i;
    if (!(cls[i] & (HFU_L | HFU_N)) && !crlf(c) && i + 1 < n && (cls[i + 1] & HFU_L))
        j = i + 1;
    if (cls[j] & HFU_L) {
        while (j < n && (cls[j] & HFU_L))
            j++;
        return j - i;
    }
    /* \p{N} (or \p{N}{1,3}) */
    if (cls[i] & HFU_N) {
        for (j = i; j < n && (int)(j - i) < max_digits && (cls[j] & HFU_N); j++)
            ;
        return j - i;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    j = i;
    if (c == ' ' && i + 1 < n && OTHER(i + 1))
        j = i + 1;
    if (OTHER(j)) {
        while (j < n && OTHER(j))
            j++;
        while (j < n && crlf(cp[j]))
            j++;
        return j - i;
    }
    /* only whitespace is left */
    size_t e = i;
    while (e < n && (cls[e] & HFU_WS))
        e++;
    /* \s*[\r\n]+: up to the run's last line break */
    for (j = e; j > i; j--)
        if (crlf(cp[j - 1]))
            return j - i;
    /* \s+(?!\S): the run, or all of it but the space before a non-space */
    if (e == n)
        return e - i;
    if (e - 1 > i)
        return e - 1 - i;
    /* \s+ */
    return e > i ? e - i : 1;
#undef OTHER
}
