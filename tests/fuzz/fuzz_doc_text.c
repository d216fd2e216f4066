/* fuzz_doc_text: plain-text documents (server/document/doc_text.c) and the
 * runs a translation is split over (doc_runs.c), on arbitrary bytes:
 *   - srv_doc_sniff never fails on any bytes (and names a kind or UNKNOWN);
 *   - parsing refuses only with MT_ERR_INPUT (NUL, not UTF-8) or
 *     MT_ERR_TOO_LONG, else every unit is non-blank UTF-8;
 *   - a render without translations gives the input back byte for byte;
 *   - every unit "translated" (selector byte: its words upper-cased in place,
 *     or reversed, each linked to itself, some links dropped) renders to text
 *     with exactly the input's line count and line endings.
 * The first byte picks the translation; the rest is the file. */
#include "fuzz_common.h"

#include "document/document.h"
#include "util/utf8.h"

static int words(const char *t, long *w, int cap)
{
    int n = 0;
    long cp = 0;
    for (size_t i = 0; t[i] && n < cap;) {
        while (t[i] == ' ')
            i++, cp++;
        if (!t[i])
            break;
        w[2 * n] = cp;
        while (t[i] && t[i] != ' ') {
            cp += ((unsigned char)t[i] & 0xc0) != 0x80;
            i++;
        }
        w[2 * n++ + 1] = cp;
    }
    return n;
}

static size_t count(const char *s, size_t n, char c)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == c;
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    srv_doc_kind k = srv_doc_sniff(text, n, NULL);
    FUZZ_CHECK(k == SRV_DOC_UNKNOWN || (k >= 0 && k < SRV_DOC_N));
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_units = 2000;
    srv_doc *d = NULL;
    mt_err err = { 0 };
    mt_status st = srv_doc_parse(SRV_DOC_TXT, text, n, &lim, &d, &err);
    if (st != MT_OK) {
        FUZZ_CHECK((st == MT_ERR_INPUT || st == MT_ERR_TOO_LONG) && !d && err.msg[0]);
        return 0;
    }
    char *out;
    size_t len;
    FUZZ_CHECK(srv_doc_render(d, &out, &len, &err) == MT_OK && len == n && !memcmp(out, text, n));
    free(out);
    enum { CAP = 512 };
    static long w[2 * CAP], links[4 * CAP];
    static char t[1 << 16];
    for (int i = 0; i < srv_doc_units(d); i++) {
        const char *u = srv_doc_unit(d, i);
        FUZZ_CHECK(u && *u && mt_utf8_valid(u, strlen(u)));
        size_t ul = strlen(u);
        if (ul >= sizeof t)
            continue;
        memcpy(t, u, ul + 1);
        for (char *p = t; *p; p++)
            if (*p >= 'a' && *p <= 'z')
                *p -= 32;
        int nw = words(t, w, CAP), nl = 0;
        for (int j = 0; j < nw; j++) {
            if (mode == 2 && j % 3 == 1)
                continue;                       /* some words unlinked */
            int s = mode == 1 ? nw - 1 - j : j; /* reversed: each word linked to its mirror */
            long *l = links + 4 * nl++;
            l[0] = w[2 * s], l[1] = w[2 * s + 1], l[2] = w[2 * j], l[3] = w[2 * j + 1];
        }
        FUZZ_CHECK(srv_doc_set(d, i, t, ul, links, nl, &err) == MT_OK);
    }
    FUZZ_CHECK(srv_doc_render(d, &out, &len, &err) == MT_OK);
    FUZZ_CHECK(count(out, len, '\n') == count(text, n, '\n') && count(out, len, '\r') == count(text, n, '\r'));
    FUZZ_CHECK(mt_utf8_valid(out, len));
    free(out);
    srv_doc_free(d);
    return 0;
}
