/* test_placeholders: the placeholder scanner (server/text/placeholders.h):
 * every form it takes, exactly (a table, one cmocka test per group), the
 * things it must leave as text ("100%", "50% off", "a:b", braces in prose),
 * the kinds whose order a translation keeps, srv_ph_kept, and a property test
 * on random texts made of known placeholders and known non-placeholders.
 * Then a sentence's placeholders out and back (server/translate/protect.h, on
 * server/text/points.h): the text the model sees, the points and their
 * spaces, verbatim sentences, and translations with given word links.
 * And the scanner against an independent reader (tests/fixtures/placeholders/
 * extract.py) on real msgids of Debian's catalogues: the same placeholders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "placeholders_fixture.h"
#include "text/placeholders.h"
#include "translate/protect.h"

typedef struct {
    const char *text;
    const char *want;           /* the placeholders, '|' between them ("" none) */
} row;

/* The placeholders srv_ph_scan finds in text, '|' between them, into out. */
static void scan_joined(const char *text, int flags, char *out, size_t cap)
{
    srv_ph ph[64];
    int n = srv_ph_scan(text, strlen(text), flags, ph, 64);
    assert_true(n <= 64);
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        assert_true(o + ph[i].n + 2 < cap);
        if (i)
            out[o++] = '|';
        memcpy(out + o, ph[i].s, ph[i].n);
        o += ph[i].n;
        out[o] = 0;
    }
}

static void check_rows(const row *rows, size_t n, int flags)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        char got[1024];
        scan_joined(rows[i].text, flags, got, sizeof got);
        if (strcmp(got, rows[i].want)) {
            fprintf(stderr, "  \"%s\": got \"%s\", want \"%s\"\n", rows[i].text, got, rows[i].want);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}
#define CHECK(rows, flags) check_rows(rows, sizeof rows / sizeof rows[0], flags)

static void test_printf(void **state)
{
    (void)state;
    static const row rows[] = {
        { "Open %s now", "%s" },
        { "%d files", "%d" },
        { "%1$s and %2$d", "%1$s|%2$d" },
        { "width %-5.2f here", "%-5.2f" },
        { "%05d", "%05d" },
        { "%lld bytes, %zu items, %lu", "%lld|%zu|%lu" },
        { "%+.3e and %#x", "%+.3e|%#x" },
        { "%'d", "%'d" },
        { "100%% sure", "%%" },
        { "%d%%", "%d|%%" },
        { "%s%s", "%s|%s" },
        { "Hello %(name)s!", "%(name)s" },
        { "%(count)d files", "%(count)d" },
        { "%{count} items", "%{count}" },
        { "%<count>d items", "%<count>d" },
        { "Page %1 of %2.", "%1|%2" },
        { "%@ is here", "%@" },
        { "file%sname", "%s" },
    };
    CHECK(rows, 0);
}

static void test_braces(void **state)
{
    (void)state;
    static const row rows[] = {
        { "{name} and {0} and {}", "{name}|{0}|{}" },
        { "{0:.2f} done", "{0:.2f}" },
        { "{user.name}, {items[0]}", "{user.name}|{items[0]}" },
        { "{{count}} items", "{{count}}" },
        { "{{ count }} items", "{{ count }}" },
        { "{{- name}}", "{{- name}}" },
        { "See $t(common.help) now", "$t(common.help)" },
        { "$t(items, {\"count\": 2}) left", "$t(items, {\"count\": 2})" },
        { "$t() and $t(x", "" },
        { "a {{ b", "{{" },
        { "b }} a", "}}" },
        { "{count, plural, one {# file} other {# files}}", "{count, plural, one {# file} other {# files}}" },
        { "You have {n, number} items", "{n, number}" },
        { "{gender, select, male {He} female {She} other {They}} left.",
          "{gender, select, male {He} female {She} other {They}}" },
        { "${HOME}/bin", "${HOME}" },
        { "Hi ${user.name}!", "${user.name}" },
        { "${} is Python's {} after a dollar", "{}|{}" },
        { "{d, date, short} at {t, time}", "{d, date, short}|{t, time}" },
    };
    CHECK(rows, 0);
}

static void test_laravel_urls_email(void **state)
{
    (void)state;
    static const row rows[] = {
        { "The :attribute must be at least :min.", ":attribute|:min" },
        { ":count items", ":count" },
        { "(:name)", ":name" },
        { "https://example.com/path?q=1.", "https://example.com/path?q=1" },
        { "See http://x.org/a, then", "http://x.org/a" },
        { "(see https://en.wikipedia.org/wiki/C_(language))", "https://en.wikipedia.org/wiki/C_(language)" },
        { "[https://x.org/y]", "https://x.org/y" },
        { "'https://x.org/%20y'", "https://x.org/%20y" },
        { "Visit www.debian.org.", "www.debian.org" },
        { "file:///usr/share/doc/x", "file:///usr/share/doc/x" },
        { "Mail bug-coreutils@gnu.org.", "bug-coreutils@gnu.org" },
        { "Report to <bugs@example.com>", "bugs@example.com" },
        { "first.last+tag@mail.example.co.uk!", "first.last+tag@mail.example.co.uk" },
        { "https://user@host.org/x", "https://user@host.org/x" },
        { "%s at https://x.org/%s", "%s|https://x.org/%s" },
    };
    CHECK(rows, 0);
}

static void test_not_taken(void **state)
{
    (void)state;
    static const row rows[] = {
        { "100%", "" },
        { "50% off", "" },
        { "50 % of them", "" },
        { "a 5%-10% range", "" },
        { "a:b", "" },
        { "at 10:30", "" },
        { "Note: this", "" },
        { "std::vector", "" },
        { "smile :) and :D", "" },
        { ":smile: emoji", "" },
        { "C:\\Windows", "" },
        { "the set {a, b} in prose", "" },
        { "a { b } c", "" },
        { "{ alone", "" },
        { "} alone", "" },
        { "$HOME and $ 5", "" },
        { "user@localhost", "" },
        { "a@b.c", "" },
        { "x@", "" },
        { "@home", "" },
        { "www.x", "" },
        { "http://", "" },
        { "ab://", "" },
        { "<b>bold</b> &amp; more", "" },
        { "", "" },
    };
    CHECK(rows, 0);
}

static void test_markup(void **state)
{
    (void)state;
    static const row rows[] = {
        { "<b>bold</b> &amp; more", "<b>|</b>|&amp;" },
        { "<a href=\"x\">link</a>", "<a href=\"x\">|</a>" },
        { "line<br/>next &#39;q&#39;", "<br/>|&#39;|&#39;" },
        { "Report to <bugs@example.com>", "<bugs@example.com>" },
        { "a < b and c > d", "" },
        { "100%", "" },
    };
    CHECK(rows, SRV_PH_MARKUP);
}

static void test_kinds(void **state)
{
    (void)state;
    const char *t = "%s %1$s %(n)s %d %{x} {y} %% %1 <b>";
    srv_ph ph[16];
    int n = srv_ph_scan(t, strlen(t), SRV_PH_MARKUP, ph, 16);
    assert_int_equal(n, 9);
    const char want[] = "poopoooot";
    for (int i = 0; i < n; i++)
        assert_int_equal(ph[i].kind, want[i]);
    /* more than cap: cap + 1, the first cap filled */
    assert_int_equal(srv_ph_scan(t, strlen(t), SRV_PH_MARKUP, ph, 3), 4);
    assert_int_equal(ph[2].n, 5);
    assert_memory_equal(ph[2].s, "%(n)s", 5);
}

static void test_kept(void **state)
{
    (void)state;
    static const struct {
        const char *src, *tgt;
        int flags, want;
    } rows[] = {
        { "%s of %d", "%s de %d", 0, 1 },
        { "%s of %d", "%d de %s", 0, 0 },          /* printf's unnumbered ones: in order */
        { "%1$s of %2$d", "%2$d de %1$s", 0, 1 },   /* numbered: any order */
        { "{a} and {b}", "{b} et {a}", 0, 1 },
        { "%s", "%s %s", 0, 0 },                    /* as many times */
        { "%s", "", 0, 0 },
        { "https://x.org", "https://x.org/", 0, 0 },
        { "no placeholder", "aucun", 0, 1 },
        { "<b>x</b>", "</b>x<b>", SRV_PH_MARKUP, 0 },  /* tags in order */
        { "<b>x</b>", "<b>x</b>", SRV_PH_MARKUP, 1 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int got = srv_ph_kept(rows[i].src, strlen(rows[i].src), rows[i].tgt, strlen(rows[i].tgt), rows[i].flags);
        if (got != rows[i].want)
            fprintf(stderr, "  \"%s\" -> \"%s\": got %d\n", rows[i].src, rows[i].tgt, got);
        assert_int_equal(got, rows[i].want);
    }
    /* over 64 placeholders: refused rather than half checked */
    char big[65 * 3 + 1] = "";
    for (int i = 0; i < 65; i++)
        strcat(big, "%s ");
    assert_int_equal(srv_ph_kept(big, strlen(big), big, strlen(big), 0), 0);
}

/* Random texts of known pieces, a space between each: the scan finds exactly
 * the placeholders among them, in order. */
static void test_property(void **state)
{
    (void)state;
    static const char *const ph[] = {
        "%s", "%d", "%1$s", "%-5.2f", "%%", "%(name)s", "%{n}", "{0}", "{name}", "{{count}}",
        "{n, plural, one {# x} other {# xs}}", "${x}", ":attribute", "https://example.org/a?b=1",
        "www.debian.org", "me@example.com", "%1", "%lu",
    };
    static const char *const prose[] = {
        "100%", "50%", "a:b", "10:30", "Note:", "hello", "world.", "{a", "b}", "(x)", "e-mail", "@", "$5",
        "http:", "a.b", "x@y", ":)", "std::x", "-", "\xc3\xa9t\xc3\xa9", "#",
    };
    unsigned seed = 12345;
    for (int round = 0; round < 2000; round++) {
        char text[2048] = "", want[2048] = "";
        int n = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 12;
        for (int k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            int is_ph = (seed >> 16) % 2;
            seed = seed * 1103515245u + 12345u;
            const char *p = is_ph ? ph[(seed >> 16) % (sizeof ph / sizeof *ph)]
                                  : prose[(seed >> 16) % (sizeof prose / sizeof *prose)];
            if (k)
                strcat(text, " ");
            strcat(text, p);
            if (is_ph) {
                if (*want)
                    strcat(want, "|");
                strcat(want, p);
            }
        }
        char got[2048];
        scan_joined(text, 0, got, sizeof got);
        if (strcmp(got, want))
            fprintf(stderr, "  \"%s\": got \"%s\", want \"%s\"\n", text, got, want);
        assert_string_equal(got, want);
    }
}

/* ---- protect.h ---- */

static void test_protect_text(void **state)
{
    (void)state;
    static const struct {
        const char *sentence, *text;
        int n, verbatim;
    } rows[] = {
        { "Open %s now", "Open now", 1, 0 },
        { "Could not read %s.", "Could not read.", 1, 0 },         /* no space before the full stop */
        { "Cannot open %s: %s", "Cannot open:", 2, 0 },
        { "Hello %(name)s, you have {count} new messages.", "Hello, you have new messages.", 2, 0 },
        { "file%sname", "filename", 1, 0 },
        { "%d files", "files", 1, 0 },
        { "a  %s \t b", "a b", 1, 0 },
        { "See https://x.org/a for more", "See for more", 1, 0 },
        { "%s: %s", ":", 2, 1 },                                  /* nothing to translate */
        { "(%d)", "()", 1, 1 },
        { "{{count}}", "", 1, 1 },
        { "%s 2", "2", 1, 0 },                                     /* a digit is a word */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        srv_protected p;
        mt_err err = { 0 };
        assert_int_equal(srv_protect(rows[i].sentence, strlen(rows[i].sentence), &p, &err), MT_OK);
        if (strcmp(p.text, rows[i].text) || p.n != rows[i].n || p.verbatim != rows[i].verbatim)
            fprintf(stderr, "  \"%s\": \"%s\" n %d verbatim %d\n", rows[i].sentence, p.text, p.n, p.verbatim);
        assert_string_equal(p.text, rows[i].text);
        assert_int_equal(p.n, rows[i].n);
        assert_int_equal(p.verbatim, rows[i].verbatim);
        assert_int_equal(p.len, strlen(rows[i].text));
        srv_protected_free(&p);
    }
    srv_protected p;
    mt_err err = { 0 };
    assert_int_equal(srv_protect("No placeholder here.", 20, &p, &err), MT_OK);   /* left alone */
    assert_int_equal(p.n, 0);
    assert_null(p.text);
}

static void test_protect_points(void **state)
{
    (void)state;
    srv_protected p;
    mt_err err = { 0 };
    const char *s = "a  %s \t b%d%%, x";
    assert_int_equal(srv_protect(s, strlen(s), &p, &err), MT_OK);
    assert_string_equal(p.text, "a b, x");
    assert_int_equal(p.n, 3);
    /* %s between "a" and "b", the spaces around it; %d%% glued to "b" and to each other */
    assert_int_equal(p.pts[0].at, 3);
    assert_int_equal(p.pts[0].len, 2);
    assert_int_equal(p.pts[0].cp, 1);
    assert_int_equal(p.pts[0].ws.before, ' ');
    assert_int_equal(p.pts[0].ws.after, ' ');       /* the first after it */
    assert_int_equal(p.pts[0].ws.glued_after, 0);
    assert_int_equal(p.pts[1].cp, 3);
    assert_int_equal(p.pts[1].ws.before, 0);
    assert_int_equal(p.pts[1].ws.glued_after, 1);
    assert_int_equal(p.pts[2].at, 11);
    assert_int_equal(p.pts[2].cp, 3);
    assert_int_equal(p.pts[2].ws.glued_after, 0);
    /* the model's code points back to the sentence's: "a" 0, the space 1, "b" 8, "," 13 */
    const long want[] = { 0, 1, 8, 13, 14, 15, 16 };
    assert_int_equal(p.n_cp, 6);
    for (int k = 0; k <= 6; k++)
        assert_int_equal(p.orig[k], want[k]);
    srv_protected_free(&p);
}

/* sentence translated as tgt with links (source word k of the model's text
 * -> target word link[k], -1 none): the output. */
static char *put_back(const char *sentence, const char *tgt, const int *link, long **map)
{
    srv_protected p;
    mt_err err = { 0 };
    assert_int_equal(srv_protect(sentence, strlen(sentence), &p, &err), MT_OK);
    long sw[32][2], tw[32][2], links[32][4];
    int ns = 0, nt = 0, nl = 0;
    for (int pass = 0; pass < 2; pass++) {      /* the words of both, code points = bytes (ASCII) */
        const char *t = pass ? tgt : p.text;
        long (*w)[2] = pass ? tw : sw;
        int *n = pass ? &nt : &ns;
        for (long i = 0; t[i];) {
            while (t[i] == ' ')
                i++;
            if (!t[i])
                break;
            w[*n][0] = i;
            while (t[i] && t[i] != ' ')
                i++;
            w[(*n)++][1] = i;
        }
    }
    for (int k = 0; k < ns; k++)
        if (link[k] >= 0) {
            links[nl][0] = sw[k][0], links[nl][1] = sw[k][1];
            links[nl][2] = tw[link[k]][0], links[nl][3] = tw[link[k]][1];
            nl++;
        }
    char *out = NULL;
    size_t at[8];
    assert_int_equal(srv_unprotect(&p, sentence, tgt, strlen(tgt), &links[0][0], nl, &out, map, at), 0);
    for (int k = 0; k < p.n; k++)               /* each placeholder where it says */
        assert_memory_equal(out + at[k], sentence + p.pts[k].at, p.pts[k].len);
    srv_protected_free(&p);
    return out;
}

static void test_unprotect(void **state)
{
    (void)state;
    static const struct {
        const char *sentence, *tgt;
        int link[8];
        const char *want;
    } rows[] = {
        { "Open %s now", "Ouvrez maintenant", { 0, 1 }, "Ouvrez %s maintenant" },
        { "Could not read %s.", "Impossible de lire.", { 0, 0, 2 }, "Impossible de lire %s." },
        { "Cannot open %s: %s", "Impossible d'ouvrir :", { 0, 1 }, "Impossible d'ouvrir %s: %s" },   /* glued as written */
        { "%d files", "fichiers", { 0 }, "%d fichiers" },                 /* at the start */
        { "Saved to %s", "Enregistré dans", { 0, 1 }, "Enregistré dans %s" },   /* at the end */
        { "file%sname", "le filename", { 1 }, "le file%sname" },        /* inside a word copied */
        { "%s then %d", "ensuite", { 0 }, "%s ensuite %d" },
        { "Hello %(name)s, you", "Bonjour vous", { 0, 1 }, "Bonjour %(name)s vous" },   /* a space between words */
        { "Copy %s to %s.", "Copier vers.", { 0, 1 }, "Copier %s vers %s." },
        /* the alignment puts the second before the first: the order is kept */
        { "Copy %1$s into %2$s now", "dans copier maintenant", { 1, 0, 2 }, "dans copier %1$s %2$s maintenant" },
        { "From %1$s to %2$s", "Vers depuis", { 1, 0 }, "Vers depuis %1$s %2$s" },   /* the last at the end */
        { "Open %s now", "Ouvrez maintenant", { -1, -1 }, "%s Ouvrez maintenant" },    /* no link: the start */
        /* the brackets dropped by the model: the placeholder is not glued to a word for it */
        { "See <%s> for more", "Voir pour plus", { 0, -1, 1, 2 }, "Voir %s pour plus" },
        { "from <%s>", "depuis", { 0 }, "depuis %s" },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char *out = put_back(rows[i].sentence, rows[i].tgt, rows[i].link, NULL);
        if (strcmp(out, rows[i].want))
            fprintf(stderr, "  \"%s\" -> \"%s\": got \"%s\"\n", rows[i].sentence, rows[i].tgt, out);
        assert_string_equal(out, rows[i].want);
        assert_int_equal(srv_ph_kept(rows[i].sentence, strlen(rows[i].sentence), out, strlen(out), 0), 1);
        free(out);
    }
    long *map = NULL;
    char *out = put_back("Open %s now", "Ouvrez maintenant", (const int[]){ 0, 1 }, &map);
    assert_string_equal(out, "Ouvrez %s maintenant");
    assert_int_equal(map[5], 5);                /* the "z" of Ouvrez */
    assert_int_equal(map[7], 10);               /* the "m" of maintenant, after "%s " */
    assert_int_equal(map[17], 20);              /* the end */
    free(out);
    free(map);
}

/* The scanner and extract.py's reading agree on every msgid of the Debian fixture. */
static void test_debian_agreement(void **state)
{
    (void)state;
    ph_row *with, *without;
    int nw = ph_rows_load(PH_FIXTURE_DIR "with.tsv", &with), nn = ph_rows_load(PH_FIXTURE_DIR "without.tsv", &without);
    int bad = 0, total = 0;
    for (int i = 0; i < nw; i++) {
        srv_ph ph[64];
        int n = srv_ph_scan(with[i].text, strlen(with[i].text), 0, ph, 64);
        int same = n == with[i].n_ph;
        for (int k = 0; same && k < n; k++)
            same = ph[k].n == strlen(with[i].ph[k]) && !memcmp(ph[k].s, with[i].ph[k], ph[k].n);
        total += with[i].n_ph;
        if (!same && bad++ < 10)
            fprintf(stderr, "  %s: \"%s\": %d found, %d by extract.py\n", with[i].domain, with[i].text, n,
                    with[i].n_ph);
    }
    for (int i = 0; i < nn; i++) {
        srv_ph ph[4];
        int n = srv_ph_scan(without[i].text, strlen(without[i].text), 0, ph, 4);
        if (n && bad++ < 10)
            fprintf(stderr, "  %s: \"%s\": %d found, none by extract.py\n", without[i].domain, without[i].text, n);
    }
    printf("Debian msgids: %d with %d placeholders, %d without; the scanner disagrees on %d\n", nw, total, nn, bad);
    assert_true(nw >= 500);
    assert_int_equal(bad, 0);
    ph_rows_free(with, nw);
    ph_rows_free(without, nn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_printf),
        cmocka_unit_test(test_braces),
        cmocka_unit_test(test_laravel_urls_email),
        cmocka_unit_test(test_not_taken),
        cmocka_unit_test(test_markup),
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_kept),
        cmocka_unit_test(test_property),
        cmocka_unit_test(test_protect_text),
        cmocka_unit_test(test_protect_points),
        cmocka_unit_test(test_unprotect),
        cmocka_unit_test(test_debian_agreement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
