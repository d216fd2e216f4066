/* fuzz_splitter: mt_split_sentences (server/translate/splitter.c) on arbitrary bytes,
 * checked against the contract of server/translate/splitter.h:
 *   - the count does not depend on max (max = 0 with spans = NULL, max = 8,
 *     and an array of exactly the returned count give the same answer, and
 *     the shorter runs wrote a prefix of the full list);
 *   - spans are non-empty, in text order, disjoint, inside text[0..len);
 *   - they start and end on character boundaries (an invalid byte is a
 *     one-byte character), never start or end with whitespace (rule 5) and
 *     never contain a line break (rule 1);
 *   - every byte outside the spans is whitespace or a line break.
 * The input is the text. */
#include "fuzz_common.h"

#include "translate/splitter.h"

enum { C_OTHER = 0, C_SPACE = 1, C_BREAK = 2 };

/* Rule 5's whitespace and rule 1's line breaks, from the header's lists. */
static int char_class(uint32_t c)
{
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x85 || c == 0x2028 || c == 0x2029)
        return C_BREAK;
    if (c == ' ' || c == '\t' || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200b) || c == 0x202f ||
        c == 0x205f || c == 0x3000 || c == 0xfeff)
        return C_SPACE;
    return C_OTHER;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    /* cls[i]: class of the character starting at byte i, -1 inside a character */
    signed char *cls = malloc(size + 1);
    FUZZ_CHECK(cls);
    for (size_t i = 0; i < size;) {
        uint32_t cp = 0;
        size_t k = fuzz_utf8_char(data + i, size - i, &cp);
        cls[i] = k ? (signed char)char_class(cp) : C_OTHER;
        if (!k)
            k = 1;
        for (size_t j = 1; j < k; j++)
            cls[i + j] = -1;
        i += k;
    }
    cls[size] = C_OTHER;                /* the end is a boundary */

    int n = mt_split_sentences(text, size, NULL, 0);
    FUZZ_CHECK(n >= 0 && (size_t)n <= size);
    mt_span few[8];
    memset(few, 0xa5, sizeof few);
    FUZZ_CHECK(mt_split_sentences(text, size, few, 8) == n);
    mt_span *spans = malloc(sizeof *spans * (size_t)(n ? n : 1));
    FUZZ_CHECK(spans);
    FUZZ_CHECK(mt_split_sentences(text, size, spans, n) == n);
    for (int i = 0; i < n && i < 8; i++)
        FUZZ_CHECK(few[i].start == spans[i].start && few[i].len == spans[i].len);

    size_t at = 0;                      /* end of the previous span */
    for (int i = 0; i < n; i++) {
        size_t s = spans[i].start, e = spans[i].start + spans[i].len;
        FUZZ_CHECK(spans[i].len > 0 && s >= at && e > s && e <= size);
        FUZZ_CHECK(cls[s] >= 0 && cls[e] >= 0);              /* character boundaries */
        for (size_t j = at; j < s; j++)                       /* the gap: whitespace only */
            FUZZ_CHECK(cls[j] != C_OTHER);
        FUZZ_CHECK(cls[s] == C_OTHER);                       /* trimmed at the start */
        size_t last = e - 1;
        while (cls[last] < 0)
            last--;
        FUZZ_CHECK(cls[last] == C_OTHER);                    /* and at the end */
        for (size_t j = s; j < e; j++)
            FUZZ_CHECK(cls[j] != C_BREAK);                   /* one line at most */
        at = e;
    }
    for (size_t j = at; j < size; j++)
        FUZZ_CHECK(cls[j] != C_OTHER);

    free(spans);
    free(cls);
    return 0;
}
