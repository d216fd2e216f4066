/* fuzz_doc_subtitles: server/document/doc_subtitles.c on arbitrary bytes,
 * checked against document.h's contract:
 *   - parsing fails only with MT_ERR_INPUT or MT_ERR_TOO_LONG (and nothing to free);
 *   - every unit is non-blank, valid UTF-8;
 *   - with no unit set, the render is the input byte for byte;
 *   - under a fake translation (each unit's words in place, reversed, or
 *     shuffled with links dropped), the render parses again as the same
 *     format; with the words in place it gives back the same text (joined()
 *     says how exactly).
 * The first byte picks the format (bit 0: srt or vtt) and the translation
 * (the rest); the other bytes are the file. */
#include "fuzz_common.h"

#include "document/doc_format.h"
#include "document/document.h"
#include "util/strbuf.h"

/* The formats' parse hook takes the caller's options: the defaults here. */
static const srv_doc_options *doc_opt(void)
{
    static srv_doc_options o;
    o = srv_doc_default_options();
    return &o;
}

static const srv_doc_format *F = &srv_doc_subtitles_format;

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int sp(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Unit i's words (ASCII-whitespace separated) in mode's order, each linked to itself. */
static void fake_translate(void *st, int i, int mode, uint64_t seed)
{
    enum { CAP = 4096 };
    static long wb[2 * CAP], wc[2 * CAP], links[4 * CAP];
    static int order[CAP];
    const char *t = F->unit(st, i);
    int n = 0;
    long cp = 0;
    for (long k = 0; t[k] && n < CAP;) {
        while (t[k] && sp(t[k]))
            k++, cp++;
        if (!t[k])
            break;
        wb[2 * n] = k, wc[2 * n] = cp;
        while (t[k] && !sp(t[k]))
            cp += ((unsigned char)t[k++] & 0xc0) != 0x80;
        wb[2 * n + 1] = k, wc[2 * n + 1] = cp;
        order[n] = mode == 1 ? -1 : n;
        n++;
    }
    for (int k = 0; mode == 1 && k < n; k++)
        order[k] = n - 1 - k;
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 1;
    for (int k = n - 1; mode == 2 && k > 0; k--) {
        int j = (int)(rng(&s) % (uint64_t)(k + 1)), x = order[k];
        order[k] = order[j], order[j] = x;
    }
    mt_sbuf b = { 0 };
    int nl = 0;
    cp = 0;
    for (int k = 0; k < n; k++) {
        int w = order[k];
        if (k) {
            FUZZ_CHECK(mt_sb_add(&b, " ", 1) == 0);
            cp++;
        }
        FUZZ_CHECK(mt_sb_add(&b, t + wb[2 * w], (size_t)(wb[2 * w + 1] - wb[2 * w])) == 0);
        long len = wc[2 * w + 1] - wc[2 * w];
        if (mode != 2 || rng(&s) % 3) {
            long *l = links + 4 * nl++;
            l[0] = wc[2 * w], l[1] = wc[2 * w + 1], l[2] = cp, l[3] = cp + len;
        }
        cp += len;
    }
    mt_err err = { 0 };
    FUZZ_CHECK(F->set(st, i, b.p ? b.p : "", b.n, links, nl, &err) == MT_OK);
    free(b.p);
}

static void check_units(void *st)
{
    for (int i = 0; i < F->units(st); i++) {
        const char *u = F->unit(st, i);
        FUZZ_CHECK(u && *u && fuzz_utf8_valid(u, strlen(u)));
        int word = 0;
        for (const char *p = u; *p && !word; p++)
            word = !sp(*p);
        FUZZ_CHECK(word || (unsigned char)u[0] >= 0x80);
    }
}

static int has_lt(const char *s) { return strpbrk(s, "<{&") != NULL; }

/* Every unit's text, one after the other, without spaces or what reads as a
 * spaces.  SRT has no escape: a '<' of the text that comes onto one line with
 * a '>' is a tag when read again, so text holding '<' '{' or '&' may lose
 * what became a tag; any other must come back exactly. */
static char *joined(void *st)
{
    mt_sbuf b = { 0 };
    FUZZ_CHECK(mt_sb_add(&b, "", 0) == 0);
    for (int i = 0; i < F->units(st); i++)
        for (const char *p = F->unit(st, i); *p; p++) {
            if (sp(*p))
                continue;
            FUZZ_CHECK(mt_sb_add(&b, p, 1) == 0);
        }
    return b.p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    srv_doc_kind kind = data[0] & 1 ? SRV_DOC_VTT : SRV_DOC_SRT;
    int mode = (data[0] >> 1) % 3;
    const char *file = (const char *)data + 1;
    size_t n = size - 1;
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_units = 2000;
    lim.max_unit_bytes = 8192;
    void *st = NULL;
    mt_err err = { 0 };
    mt_status r = F->parse(kind, file, n, &lim, doc_opt(), &st, &err);
    if (r != MT_OK) {
        FUZZ_CHECK((r == MT_ERR_INPUT || r == MT_ERR_TOO_LONG) && !st && err.msg[0]);
        return 0;
    }
    check_units(st);
    char *out = NULL;
    size_t len = 0;
    FUZZ_CHECK(F->render(st, &out, &len, &err) == MT_OK && len == n && !memcmp(out, file, n));
    free(out);
    for (int i = 0; i < F->units(st); i++)
        fake_translate(st, i, mode, size);
    FUZZ_CHECK(F->render(st, &out, &len, &err) == MT_OK && out[len] == 0);
    void *again = NULL;
    r = F->parse(kind, out, len, &lim, doc_opt(), &again, &err);
    if (r != MT_OK)
        fprintf(stderr, "the render does not parse: %s\n%.*s\n", err.msg, (int)len, out);
    FUZZ_CHECK(r == MT_OK);
    check_units(again);
    if (mode == 0) {
        char *x = joined(st), *y = joined(again);
        const char *p = x;              /* y a subsequence of x: equal but for what became a tag */
        for (const char *q = y; *q && p; q++)
            p = strchr(p, *q) ? strchr(p, *q) + 1 : NULL;
        if (!p || (!has_lt(x) && strcmp(x, y)))
            fprintf(stderr, "texts differ\n%s\n%s\n%.*s\n", x, y, (int)len, out);
        FUZZ_CHECK(p && (has_lt(x) || strcmp(x, y) == 0));
        free(x);
        free(y);
    }
    F->free(again);
    free(out);
    F->free(st);
    return 0;
}
