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
    for (size_t a = 0, b; next_word(s, n, &a, &b); a = b) {
        word_info w = scan_word(s + a, b - a);
        if (w.at >= 0 && !first && w.uppers == 1 && !w.digit) {
            size_t at = a + (size_t)w.at;
            uint32_t cp, low = srv_glossary_fold(w.initial);
            size_t k = mt_utf8_next(s + at, n - at, &cp);
            char enc[4];
            if (low != w.initial && mt_utf8_encode(low, enc) == k) {   /* the same bytes long: offsets hold */
                if (!lowered)
                    memcpy(out, s, n);                           /* out is written only when it changes */
                memcpy(out + at, enc, k);
                lowered++;
            }
        }
        first &= w.at < 0;
    }
    return lowered;
}
