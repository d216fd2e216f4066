/* fuzz_glossary: srv_glossary_add_tsv, srv_glossary_add_csv (DeepL's
 * entries, with unique sources), srv_glossary_merge and srv_glossary_match
 * (server/translate/glossary.c) on arbitrary bytes.
 *
 * The input is up to three parts cut at NULs: a TSV file (the server's), a
 * text, and a second TSV file (a request's).  Both files are parsed with small
 * limits (a refused line only ends its file: the lines before it stay), then
 * merged, the request winning, and the text is matched.  Checked:
 *   - entries: non-empty, trimmed, within max_term_bytes, valid UTF-8 without
 *     control characters; a source's whitespace is single ASCII spaces; the
 *     exact flag is "has an uppercase letter"; adding an entry again keeps the
 *     size (keys are stable); the canonical string has one line per entry and
 *     no key twice, and is the same for the merge of the glossary with itself;
 *   - matches: the count does not depend on max; matches are non-empty, in
 *     text order, disjoint, in range, on character boundaries, at word
 *     boundaries, and each span equals its entry's source under the case rule
 *     (whitespace runs for its spaces);
 *   - the third part also read as CSV into a glossary refusing duplicates: a
 *     refusal names its line; its entries, written as TSV and read back, give
 *     the same canonical string;
 *   - the whole list equals a naive reference: at every position where a word
 *     may start, every entry tried, the longest taken (an exact entry over a
 *     case-insensitive one with the same span), the scan going on after it.
 * The characters are segmented by fuzz_utf8_char, the spaces are utf8.h's
 * list, written again here; the word and case classes are the module's own
 * (srv_glossary_is_word / _fold / _is_upper), with ASCII checked against
 * isalnum-like rules. */
#include "fuzz_common.h"

#include "translate/glossary.h"

#define CP_BAD 0xFFFFFFFFu
#define MAX_MATCHES 4096

static int is_space(uint32_t c)
{
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200b) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
           c == 0x3000 || c == 0xfeff;
}

static int is_word(uint32_t c)
{
    if (c == CP_BAD)
        return 0;
    int w = srv_glossary_is_word(c);
    if (c < 0x80)
        FUZZ_CHECK(w == ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')));
    return w;
}

/* The character at s[0..n) (n >= 1): its length, *cp (CP_BAD for a lone byte). */
static size_t char_at(const uint8_t *s, size_t n, uint32_t *cp)
{
    size_t k = fuzz_utf8_char(s, n, cp);
    if (k)
        return k;
    *cp = CP_BAD;
    return 1;
}

/* The end of text[p..len) matching src (a stored source) under the case rule,
 * or 0. */
static size_t span_match(const char *src, int exact, const uint8_t *t, size_t len, size_t p)
{
    const uint8_t *s = (const uint8_t *)src;
    size_t n = strlen(src), i = p;
    for (size_t j = 0; j < n;) {
        uint32_t a, b;
        size_t ka = fuzz_utf8_char(s + j, n - j, &a);
        FUZZ_CHECK(ka > 0);
        j += ka;
        if (i >= len)
            return 0;
        size_t kb = char_at(t + i, len - i, &b);
        if (a == ' ') {
            if (!is_space(b))
                return 0;
            while (i < len && (kb = char_at(t + i, len - i, &b), is_space(b)))
                i += kb;
            continue;
        }
        if (b == CP_BAD || (exact ? a != b : srv_glossary_fold(a) != srv_glossary_fold(b)))
            return 0;
        i += kb;
    }
    return i;
}

/* The naive scan: like srv_glossary_match, by trying every entry everywhere. */
static int reference(const srv_glossary *g, const uint8_t *t, size_t len, const uint32_t *cp_at,
                     const signed char *start_of, srv_term_match *out, int max)
{
    int n = 0, ne = srv_glossary_size(g);
    size_t prev = SIZE_MAX;             /* start of the previous character */
    for (size_t p = 0; p < len;) {
        int prev_word = prev != SIZE_MAX && is_word(cp_at[prev]);
        size_t best = 0;
        int best_e = -1;
        for (int e = 0; e < ne && !prev_word; e++) {
            int exact = srv_glossary_case_sensitive(g, e);
            size_t end = span_match(srv_glossary_source(g, e), exact, t, len, p);
            if (!end || (end < len && is_word(cp_at[end])))
                continue;
            if (end > best || (end == best && exact))
                best = end, best_e = e;
        }
        if (best_e >= 0) {
            if (n < max)
                out[n] = (srv_term_match){ p, best, best_e };
            n++;
            size_t q = best - 1;
            while (!start_of[q])
                q--;
            prev = q;
            p = best;
            continue;
        }
        prev = p;
        do
            p++;
        while (p < len && !start_of[p]);
    }
    return n;
}

static void check_entries(const srv_glossary *g, const srv_glossary_limits *lim)
{
    int n = srv_glossary_size(g);
    for (int i = 0; i < n; i++) {
        const char *s = srv_glossary_source(g, i), *t = srv_glossary_target(g, i);
        FUZZ_CHECK(s && t && *s && *t);
        size_t ns = strlen(s), nt = strlen(t);
        FUZZ_CHECK(ns <= (size_t)lim->max_term_bytes && nt <= (size_t)lim->max_term_bytes);
        FUZZ_CHECK(fuzz_utf8_valid(s, ns) && fuzz_utf8_valid(t, nt));
        int upper = 0;
        uint32_t cp, first = 0, last = 0, before = 0;
        for (size_t j = 0, k; j < ns; j += k) {
            k = fuzz_utf8_char((const uint8_t *)s + j, ns - j, &cp);
            FUZZ_CHECK(cp >= 0x20 && !(cp >= 0x7f && cp <= 0x9f));
            FUZZ_CHECK(!is_space(cp) || (cp == ' ' && before != ' '));
            upper |= srv_glossary_is_upper(cp);
            if (!j)
                first = cp;
            last = before = cp;
        }
        FUZZ_CHECK(!is_space(first) && !is_space(last));
        for (size_t j = 0, k; j < nt; j += k) {
            k = fuzz_utf8_char((const uint8_t *)t + j, nt - j, &cp);
            FUZZ_CHECK(cp >= 0x20 && !(cp >= 0x7f && cp <= 0x9f));
            FUZZ_CHECK(!is_space(cp) || (j && j + k < nt));
        }
        FUZZ_CHECK(srv_glossary_case_sensitive(g, i) == upper);
    }
    FUZZ_CHECK(srv_glossary_source(g, n) == NULL && srv_glossary_target(g, -1) == NULL);

    /* the canonical string: one line per entry, keys strictly increasing (an
     * exact key has an uppercase letter, a folded one none: never equal) */
    size_t len = 0;
    char *c = srv_glossary_canonical(g, &len);
    FUZZ_CHECK(c && strlen(c) == len);
    int lines = 0;
    const char *prev_key = NULL;
    size_t prev_n = 0;
    for (const char *l = c; *l; lines++) {
        const char *tab = strchr(l, '\t'), *nl = strchr(l, '\n');
        FUZZ_CHECK(tab && nl && tab < nl && (*l == '=' || *l == '~'));
        size_t kn = (size_t)(tab - l - 1);
        if (prev_key) {
            int cmp = memcmp(prev_key, l + 1, prev_n < kn ? prev_n : kn);
            FUZZ_CHECK(cmp < 0 || (cmp == 0 && prev_n < kn));
        }
        prev_key = l + 1;
        prev_n = kn;
        l = nl + 1;
    }
    FUZZ_CHECK(lines == n);

    /* merged with itself: the same glossary */
    srv_glossary *m = NULL;
    mt_err err;
    FUZZ_CHECK(srv_glossary_merge(g, g, NULL, &m, &err) == MT_OK);
    FUZZ_CHECK(srv_glossary_size(m) == n);
    size_t len2 = 0;
    char *c2 = srv_glossary_canonical(m, &len2);
    FUZZ_CHECK(c2 && len2 == len && !memcmp(c, c2, len));
    /* every entry added again (as stored) hits its own key */
    for (int i = 0; i < n; i++) {
        const char *s = srv_glossary_source(m, i), *t = srv_glossary_target(m, i);
        FUZZ_CHECK(srv_glossary_add(m, s, strlen(s), t, strlen(t), &err) == MT_OK);
    }
    FUZZ_CHECK(srv_glossary_size(m) == n);
    free(c2);
    free(c);
    srv_glossary_free(m);
}

static void check_matches(const srv_glossary *g, const uint8_t *t, size_t len)
{
    /* the fuzz's own segmentation: start_of[i] for character starts, cp_at[i] */
    signed char *start_of = calloc(len + 1, 1);
    uint32_t *cp_at = calloc(len + 1, sizeof *cp_at);
    srv_term_match *m = malloc(sizeof *m * MAX_MATCHES), *ref = malloc(sizeof *ref * MAX_MATCHES);
    FUZZ_CHECK(start_of && cp_at && m && ref);
    for (size_t i = 0; i < len;) {
        start_of[i] = 1;
        i += char_at(t + i, len - i, &cp_at[i]);
    }
    start_of[len] = 1;

    int n = srv_glossary_match(g, (const char *)t, len, NULL, 0);
    FUZZ_CHECK(n >= 0 && (size_t)n <= len);
    srv_term_match few[4];
    FUZZ_CHECK(srv_glossary_match(g, (const char *)t, len, few, 4) == n);
    int got = srv_glossary_match(g, (const char *)t, len, m, MAX_MATCHES);
    FUZZ_CHECK(got == n);
    for (int i = 0; i < n && i < 4; i++)
        FUZZ_CHECK(few[i].start == m[i].start && few[i].end == m[i].end && few[i].entry == m[i].entry);

    size_t at = 0;
    for (int i = 0; i < n && i < MAX_MATCHES; i++) {
        size_t s = m[i].start, e = m[i].end;
        FUZZ_CHECK(s >= at && s < e && e <= len);
        FUZZ_CHECK(start_of[s] && start_of[e]);
        FUZZ_CHECK(m[i].entry >= 0 && m[i].entry < srv_glossary_size(g));
        if (s > 0) {
            size_t q = s - 1;
            while (!start_of[q])
                q--;
            FUZZ_CHECK(!is_word(cp_at[q]));
        }
        FUZZ_CHECK(e == len || !is_word(cp_at[e]));
        FUZZ_CHECK(span_match(srv_glossary_source(g, m[i].entry), srv_glossary_case_sensitive(g, m[i].entry), t, len,
                              s) == e);
        at = e;
    }

    int nr = reference(g, t, len, cp_at, start_of, ref, MAX_MATCHES);
    FUZZ_CHECK(nr == n);
    for (int i = 0; i < n && i < MAX_MATCHES; i++)
        FUZZ_CHECK(ref[i].start == m[i].start && ref[i].end == m[i].end && ref[i].entry == m[i].entry);
    free(ref);
    free(m);
    free(cp_at);
    free(start_of);
}

/* data as DeepL's CSV entries (unique sources), then its TSV round trip. */
static void check_csv(const char *data, size_t len)
{
    srv_glossary_limits ul = { .max_entries = 24, .max_term_bytes = 40, .unique = 1 };
    srv_glossary *csv = srv_glossary_new(&ul), *back = srv_glossary_new(&ul);
    FUZZ_CHECK(csv && back);
    mt_err err;
    mt_status st = srv_glossary_add_csv(csv, data, len, "en", "fr", &err);
    FUZZ_CHECK(st == MT_OK || (st == MT_ERR_INPUT && !strncmp(err.msg, "line ", 5) &&
                               fuzz_utf8_valid(err.msg, strlen(err.msg))));
    check_entries(csv, &ul);
    char tsv[24 * 90];
    size_t o = 0;
    for (int i = 0; i < srv_glossary_size(csv); i++)
        o += (size_t)snprintf(tsv + o, sizeof tsv - o, "%s\t%s\n", srv_glossary_source(csv, i),
                              srv_glossary_target(csv, i));
    int tsv_ok = 1;         /* a source starting with '#' reads as a comment in TSV: not comparable */
    for (int i = 0; i < srv_glossary_size(csv); i++)
        tsv_ok &= srv_glossary_source(csv, i)[0] != '#';
    if (tsv_ok) {
        FUZZ_CHECK(srv_glossary_add_tsv(back, tsv, o, &err) == MT_OK);
        char *a = srv_glossary_canonical(csv, NULL), *b = srv_glossary_canonical(back, NULL);
        FUZZ_CHECK(a && b && !strcmp(a, b));
        free(a);
        free(b);
    }
    srv_glossary_free(csv);
    srv_glossary_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[3];
    size_t part_len[3];
    int np = fuzz_split(data, size, 3, part, part_len);
    /* one part: the file is also the text */
    const uint8_t *text = np > 1 ? part[1] : part[0];
    size_t text_len = np > 1 ? part_len[1] : part_len[0];

    srv_glossary_limits lim = { .max_entries = 24, .max_term_bytes = 40 };
    srv_glossary *file = srv_glossary_new(&lim), *req = srv_glossary_new(&lim), *all = NULL;
    FUZZ_CHECK(file && req);
    mt_err err;
    mt_status st = srv_glossary_add_tsv(file, (const char *)part[0], part_len[0], &err);
    FUZZ_CHECK(st == MT_OK || (st == MT_ERR_INPUT && !strncmp(err.msg, "line ", 5)));
    FUZZ_CHECK(st == MT_OK || fuzz_utf8_valid(err.msg, strlen(err.msg)));
    if (np > 2) {
        st = srv_glossary_add_tsv(req, (const char *)part[2], part_len[2], &err);
        FUZZ_CHECK(st == MT_OK || (st == MT_ERR_INPUT && fuzz_utf8_valid(err.msg, strlen(err.msg))));
    }
    check_entries(file, &lim);
    check_entries(req, &lim);
    if (np > 2)
        check_csv((const char *)part[2], part_len[2]);

    FUZZ_CHECK(srv_glossary_merge(file, req, NULL, &all, &err) == MT_OK);
    FUZZ_CHECK(srv_glossary_size(all) <= srv_glossary_size(file) + srv_glossary_size(req));
    FUZZ_CHECK(srv_glossary_size(all) >= srv_glossary_size(req));
    for (int i = 0; i < srv_glossary_size(req); i++) {       /* the request wins */
        const char *s = srv_glossary_source(req, i);
        int found = 0;
        for (int j = 0; j < srv_glossary_size(all) && !found; j++)
            found = !strcmp(srv_glossary_source(all, j), s) &&
                    !strcmp(srv_glossary_target(all, j), srv_glossary_target(req, i));
        FUZZ_CHECK(found);
    }
    check_entries(all, &lim);
    check_matches(all, text, text_len);

    srv_glossary_free(all);
    srv_glossary_free(req);
    srv_glossary_free(file);
    return 0;
}
