/* title_case: Title Case sentences folded to sentence case (title_case.h). */
#include "title_case.h"

#include <stdint.h>
#include <string.h>

#include "glossary.h"
#include "util/utf8.h"

static int is_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* One word s[0..n): the byte offset of its initial in *at (-1: none), its
 * uppercase letters and whether it holds an ASCII digit. */
typedef struct {
    long at;
    uint32_t initial;
    int uppers;
    int digit;
} word_info;

static word_info scan_word(const char *s, size_t n)
{
    word_info w = { .at = -1 };
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = mt_utf8_next(s + i, n - i, &cp);
        if (cp >= '0' && cp <= '9')
            w.digit = 1;
        else if (w.at < 0 && srv_glossary_is_word(cp)) {
            w.at = (long)i;
            w.initial = cp;
        }
        w.uppers += srv_glossary_is_upper(cp);
        i += k;
    }
    return w;
}


/* The next word of s[0..n) at or after *a: [*a, *b), or 0 when there is none. */
static int next_word(const char *s, size_t n, size_t *a, size_t *b)
{
    while (*a < n && is_space(s[*a]))
        ++*a;
    for (*b = *a; *b < n && !is_space(s[*b]); ++*b)
        ;
    return *a < n;
}

/* A word's parts: split at hyphens and apostrophes, which Title Case
 * capitalizes after ("Presse-Papiers", "D'Obtenir", "L\u2019auto-Test"). */
static int is_joiner(uint32_t cp)
{
    return cp == '-' || cp == '\'' || cp == 0x2019;
}

/* The end of the part of s[a..b) that starts at a, and in *next where the one
 * after it starts (b: none). */
static size_t part_end(const char *s, size_t a, size_t b, size_t *next)
{
    for (size_t i = a; i < b;) {
        uint32_t cp;
        size_t k = mt_utf8_next(s + i, b - i, &cp);
        if (is_joiner(cp)) {
            *next = i + k;
            return i;
        }
        i += k;
    }
    *next = b;
    return b;
}

/* Lowers the initial at s[at] into out (copying s first when nothing was
 * lowered yet); returns 1 when it did. */
static int lower_initial(const char *s, size_t n, size_t at, uint32_t initial, char *out, int lowered)
{
    uint32_t cp, low = srv_glossary_fold(initial);
    size_t k = mt_utf8_next(s + at, n - at, &cp);
    char enc[4];
    if (low == initial || mt_utf8_encode(low, enc) != k)         /* the same bytes long: offsets hold */
        return 0;
    if (!lowered)
        memcpy(out, s, n);                                       /* out is written only when it changes */
    memcpy(out + at, enc, k);
    return 1;
}

int srv_title_fold(const char *s, size_t n, char *out)
{
    int initials = 0;
    for (size_t a = 0, b; next_word(s, n, &a, &b); a = b) {     /* >= 2 initials, all uppercase */
        word_info w = scan_word(s + a, b - a);
        if (w.at >= 0 && !srv_glossary_is_upper(w.initial))
            return 0;
        initials += w.at >= 0;
    }
    if (initials < 2)
        return 0;
    int lowered = 0, first = 1;
    for (size_t a = 0, b; next_word(s, n, &a, &b); a = b)
        for (size_t p = a, q, next; p < b; p = next) {
            q = part_end(s, p, b, &next);
            word_info w = scan_word(s + p, q - p);
            if (w.at >= 0 && !first && w.uppers == 1 && !w.digit)
                lowered += lower_initial(s, n, p + (size_t)w.at, w.initial, out, lowered);
            first &= w.at < 0;
        }
    return lowered;
}

/* A letter: a word character that is no ASCII digit. */
static int is_letter(uint32_t cp)
{
    return srv_glossary_is_word(cp) && !(cp >= '0' && cp <= '9');
}

int srv_word_fold(const char *s, size_t n, char *out)
{
    size_t a = 0, b, c, d;
    if (!next_word(s, n, &a, &b))
        return 0;
    c = b;
    if (next_word(s, n, &c, &d))
        return 0;                       /* a second word */
    uint32_t first = 0;
    int letters = 0;
    for (size_t i = a; i < b; letters++) {
        uint32_t cp;
        i += mt_utf8_next(s + i, b - i, &cp);
        if (!is_letter(cp) || (letters > 0 && srv_glossary_is_upper(cp)))
            return 0;
        if (letters == 0)
            first = cp;
    }
    if (letters < 2 || !srv_glossary_is_upper(first))
        return 0;
    return lower_initial(s, n, a, first, out, 0);
}

int srv_title_capitalize(char *text, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = mt_utf8_next(text + i, n - i, &cp);
        if (srv_glossary_is_word(cp)) {
            uint32_t up = srv_glossary_upper(cp);
            char enc[4];
            if (!is_letter(cp) || up == cp || mt_utf8_encode(up, enc) != k)
                return 0;
            memcpy(text + i, enc, k);
            return 1;
        }
        i += k;
    }
    return 0;
}
