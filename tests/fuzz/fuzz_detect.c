/* fuzz_detect: srv_detect_languages (server/detect/detect.c, CLD2 behind it) on
 * arbitrary bytes, checked against the contract of server/detect/detect.h:
 *   - the count is within 0..min(max, 3), for max from 0 to 4;
 *   - each code is non-empty, NUL-terminated inside its 16 bytes, and made of
 *     ASCII letters and '-' ("en", "zh-Hant");
 *   - each confidence is a number within 0..100, and they never increase;
 *   - the same call twice gives the same answer, and a smaller max gives a
 *     prefix of the longer answer.
 * Input: [candidate codes, comma-separated] NUL text; without a NUL the whole
 * input is the text and the candidates are {en, fr}.  The input's length picks
 * max (size % 5). */
#include "fuzz_common.h"

#include "detect/detect.h"

#define MAX_CAND 8

static void check(const srv_lang_guess *g, int n, int max)
{
    FUZZ_CHECK(n >= 0 && n <= 3 && n <= (max > 0 ? max : 0));
    for (int i = 0; i < n; i++) {
        size_t k = strnlen(g[i].code, sizeof g[i].code);
        FUZZ_CHECK(k > 0 && k < sizeof g[i].code);
        for (size_t j = 0; j < k; j++) {
            char c = g[i].code[j];
            FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-');
        }
        float f = g[i].confidence;
        FUZZ_CHECK(f == f && f >= 0.0f && f <= 100.0f);
        if (i > 0)
            FUZZ_CHECK(f <= g[i - 1].confidence);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[2];
    size_t part_len[2];
    int parts = fuzz_split(data, size, 2, part, part_len);

    /* the candidates: each code copied NUL-terminated (up to 31 bytes kept) */
    static const char *const enfr[] = {"en", "fr"};
    char codes[MAX_CAND][32];
    const char *cand[MAX_CAND];
    const char *const *cv = enfr;
    int n_cand = 2;
    if (parts == 2) {
        n_cand = 0;
        size_t at = 0;
        while (at <= part_len[0] && n_cand < MAX_CAND) {
            const uint8_t *comma = memchr(part[0] + at, ',', part_len[0] - at);
            size_t end = comma ? (size_t)(comma - part[0]) : part_len[0];
            size_t k = end - at < 31 ? end - at : 31;
            memcpy(codes[n_cand], part[0] + at, k);
            codes[n_cand][k] = '\0';
            cand[n_cand] = codes[n_cand];
            n_cand++;
            at = end + 1;
        }
        cv = n_cand ? cand : NULL;
    }
    const uint8_t *text = part[parts - 1];
    size_t len = part_len[parts - 1];
    int max = (int)(size % 5);

    srv_lang_guess a[4], b[4], one[1];
    memset(a, 0, sizeof a);
    int n = srv_detect_languages((const char *)text, len, cv, n_cand, a, max);
    check(a, n, max);
    int m = srv_detect_languages((const char *)text, len, cv, n_cand, b, max);
    FUZZ_CHECK(m == n);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(strcmp(a[i].code, b[i].code) == 0 && a[i].confidence == b[i].confidence);
    if (n > 0) {
        FUZZ_CHECK(srv_detect_languages((const char *)text, len, cv, n_cand, one, 1) == 1);
        FUZZ_CHECK(strcmp(one[0].code, a[0].code) == 0 && one[0].confidence == a[0].confidence);
    }
    return 0;
}
