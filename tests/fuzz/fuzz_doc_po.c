/* fuzz_doc_po: server/document/doc_po.c on arbitrary bytes, checked against
 * document.h's contract:
 *   - parsing fails only with MT_ERR_INPUT or MT_ERR_TOO_LONG (and nothing to free);
 *   - every unit is non-blank, valid UTF-8;
 *   - with no unit set, the render is the input byte for byte;
 *   - under a fake translation (each word of a unit uppercased and linked to
 *     its source word: in order, reversed, or in order without links), the
 *     render parses again, with no more units than the input (a filled entry
 *     is no longer one), and every fuzzy flag of the input still there; in
 *     order with links, every entry is filled (the placeholders, kept out of
 *     the units, come back and pass the check), unless its text holds ASCII
 *     punctuation (a placeholder moved out of a word, or the fake's upper
 *     case, can leave text that reads as one, a URL or an e-mail address
 *     too, which the check refuses);
 *   - a fake translation with a made-up placeholder ("{x}" after it) never
 *     fills an entry with that "{x}" whole (when the file has no tag: a tag,
 *     or the entry's own placeholders placed inside it, can split it, leaving
 *     text the check rightly lets through).
 * The first byte picks the translation; the others are the file. */
#include <ctype.h>

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

static const srv_doc_format *F = &srv_doc_po_format;

static int sp(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

enum { CAP = 4096, MODES = 4 };

static long cps(const char *s, const char *e)
{
    long k = 0;
    for (; s < e; s++)
        k += ((unsigned char)*s & 0xc0) != 0x80;
    return k;
}

/* mode 0: in order, linked; 1: reversed, linked; 2: in order, no links; 3: mode 2 and " {x}". */
static void fake(const char *t, int mode, mt_sbuf *b, long *l, int *nl)
{
    static const char *w[CAP];
    static size_t wn[CAP];
    static long ws[CAP];
    int n = 0;
    b->n = 0;
    *nl = 0;
    FUZZ_CHECK(mt_sb_add(b, "", 0) == 0);
    for (const char *p = t; *p && n < CAP;) {
        const char *s = p;
        while (*p && sp(*p))
            p++;
        if (mode != 1)
            FUZZ_CHECK(mt_sb_add(b, s, (size_t)(p - s)) == 0);
        if (!*p)
            break;
        w[n] = p;
        ws[n] = cps(t, p);
        while (*p && !sp(*p))
            p++;
        wn[n] = (size_t)(p - w[n]);
        if (mode != 1) {
            size_t at = b->n;
            FUZZ_CHECK(mt_sb_add(b, w[n], wn[n]) == 0);
            if (mode == 0) {
                long tws = cps(b->p, b->p + at), len = cps(w[n], w[n] + wn[n]);
                long *x = l + 4 * (*nl)++;
                x[0] = ws[n], x[1] = ws[n] + len, x[2] = tws, x[3] = tws + len;
            }
            for (size_t x = at; x < b->n; x++)
                if (b->p[x] >= 'a' && b->p[x] <= 'z')
                    b->p[x] -= 32;
        }
        n++;
    }
    if (mode == 3)
        FUZZ_CHECK(mt_sb_add(b, " {x}", 4) == 0);
    for (int k = 0; mode == 1 && k < n; k++) {
        int i = n - 1 - k;
        if (k)
            FUZZ_CHECK(mt_sb_add(b, " ", 1) == 0);
        long tws = cps(b->p, b->p + b->n), len = cps(w[i], w[i] + wn[i]);
        FUZZ_CHECK(mt_sb_add(b, w[i], wn[i]) == 0);
        long *x = l + 4 * (*nl)++;
        x[0] = ws[i], x[1] = ws[i] + len, x[2] = tws, x[3] = tws + len;
    }
}

static size_t count(const char *s, size_t n, const char *what)
{
    size_t c = 0, k = strlen(what);
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), what, k)); p += k)
        c++;
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % MODES;
    const char *file = (const char *)data + 1;
    size_t n = size - 1;
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_units = 2000;
    lim.max_unit_bytes = 8192;
    void *st = NULL;
    mt_err err = { 0 };
    mt_status r = F->parse(SRV_DOC_PO, file, n, &lim, doc_opt(), &st, &err);
    if (r != MT_OK) {
        FUZZ_CHECK((r == MT_ERR_INPUT || r == MT_ERR_TOO_LONG) && !st && err.msg[0]);
        return 0;
    }
    for (int i = 0; i < F->units(st); i++) {
        const char *u = F->unit(st, i);
        FUZZ_CHECK(u && *u && fuzz_utf8_valid(u, strlen(u)) && !sp(u[0]));
    }
    char *out = NULL;
    size_t len = 0;
    FUZZ_CHECK(F->render(st, &out, &len, &err) == MT_OK && len == n && !memcmp(out, file, n));
    free(out);
    mt_sbuf b = { 0 };
    static long links[4 * CAP];
    int nl;
    for (int i = 0; i < F->units(st); i++) {
        fake(F->unit(st, i), mode, &b, links, &nl);
        FUZZ_CHECK(F->set(st, i, b.p, b.n, links, nl, &err) == MT_OK);
    }
    free(b.p);
    FUZZ_CHECK(F->render(st, &out, &len, &err) == MT_OK && out[len] == 0);
    void *again = NULL;
    r = F->parse(SRV_DOC_PO, out, len, &lim, doc_opt(), &again, &err);
    if (r != MT_OK)
        fprintf(stderr, "the render does not parse: %s\n%.*s\n", err.msg, (int)len, out);
    FUZZ_CHECK(r == MT_OK);
    FUZZ_CHECK(F->units(again) <= F->units(st));
    /* a unit left with ASCII punctuation, which can make a placeholder with a moved one or with the
     * case the fake translation gives it: printf's % ("Width;%5.w" read as "Width;.w" then "%5.W"),
     * braces, markup, the :// of a URL ("ere://" glued to the next word once a tag between them is
     * out), an e-mail's @, a :name.  A unit of words only (letters, digits, spaces) is always filled. */
    int special = 0;
    for (int i = 0; i < F->units(again); i++)
        for (const char *c = F->unit(again, i); *c; c++)
            special |= (unsigned char)*c < 0x80 && ispunct((unsigned char)*c);
    int tags = memchr(file, '<', n) != NULL;   /* a tag can land inside the made-up "{x}" and unmake it */
    /* the made-up "{x}" never reaches a filled entry whole; placed words or placeholders can split it
     * ("{x%%%s}" is no placeholder, and the check rightly lets it through) */
    int made_up_kept = mode == 3 && !tags && count(out, len, "{x}") > count(file, n, "{x}");
    if ((mode == 0 && F->units(again) && !special) || made_up_kept)
        fprintf(stderr, "mode %d, %d units left:\n%.*s\n", mode, F->units(again), (int)len, out);
    FUZZ_CHECK(mode != 0 || F->units(again) == 0 || special);
    FUZZ_CHECK(!made_up_kept);
    FUZZ_CHECK(count(out, len, "fuzzy") >= count(file, n, "fuzzy"));
    F->free(again);
    free(out);
    F->free(st);
    return 0;
}
