/* test_document: server/document's shared parts: sniffing (srv_doc_sniff),
 * the runs a translation is split over (doc_runs.h), plain text (doc_text.c)
 * and HTML files (doc_html.c).  The formats of their own have their own tests
 * (test_doc_subtitles, test_doc_po, test_doc_office).
 *
 * Properties checked on random runs and random links: the shares tile the
 * translation (their concatenation is it), follow the runs' order, and every
 * run that held words gets one while words last.  Text files: a render
 * without translations gives back the bytes; a fake translation keeps the
 * line count, every line ending (LF, CRLF), indentation and blank line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "document/doc_runs.h"
#include "document/document.h"

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Words of s (ASCII here): their code-point spans [2k], [2k+1]. */
static int words(const char *s, long *w, int cap)
{
    int n = 0;
    for (long i = 0; s[i] && n < cap;) {
        while (s[i] == ' ')
            i++;
        if (!s[i])
            break;
        w[2 * n] = i;
        while (s[i] && s[i] != ' ')
            i++;
        w[2 * n++ + 1] = i;
    }
    return n;
}

static void test_runs_split_properties(void **state)
{
    (void)state;
    uint64_t seed = 7;
    static const char *const vocab[] = { "le", "chat", "noir", "dort", "sur", "un", "tapis", "rouge", "." };
    for (int iter = 0; iter < 2000; iter++) {
        /* 1-6 runs of 0-4 words each (some runs empty or only spaces) */
        int n = 1 + (int)(rng(&seed) % 6);
        char run_text[6][64];
        const char *runs[6];
        size_t lens[6];
        for (int i = 0; i < n; i++) {
            int k = (int)(rng(&seed) % 5), o = 0;
            run_text[i][0] = 0;
            if (rng(&seed) % 3 == 0)
                o += sprintf(run_text[i] + o, " ");
            for (int j = 0; j < k; j++)
                o += sprintf(run_text[i] + o, "%s%s", j ? " " : "", vocab[rng(&seed) % 9]);
            if (rng(&seed) % 2)
                o += sprintf(run_text[i] + o, " ");
            runs[i] = run_text[i];
            lens[i] = strlen(run_text[i]);
        }
        srv_runs r;
        mt_err err;
        assert_int_equal(srv_runs_init(&r, runs, lens, n, &err), MT_OK);
        long sw[128], tw[128];
        int ns = words(r.text, sw, 64);
        /* every run with a word has a span holding only its words */
        int need = 0;
        for (int i = 0; i < n; i++) {
            assert_true(r.start[i] <= r.end[i]);
            need += r.opens[i];
        }
        /* a "translation": 0-10 words, random links (some words unlinked) */
        char tgt[256] = "";
        int nt = (int)(rng(&seed) % 11), o = 0;
        for (int j = 0; j < nt; j++)
            o += sprintf(tgt + o, "%s%s", j ? " " : "", vocab[rng(&seed) % 9]);
        words(tgt, tw, 64);
        long links[4 * 64];
        int nl = 0;
        for (int j = 0; j < nt && ns; j++) {
            if (rng(&seed) % 4 == 0)
                continue;
            int k = (int)(rng(&seed) % (uint64_t)ns);
            long *l = links + 4 * nl++;
            l[0] = sw[2 * k], l[1] = sw[2 * k + 1], l[2] = tw[2 * j], l[3] = tw[2 * j + 1];
        }
        size_t s[6], e[6];
        assert_int_equal(srv_runs_split(&r, tgt, strlen(tgt), links, nl, s, e, &err), MT_OK);
        /* the shares tile tgt in run order */
        char cat[256] = "";
        size_t at = 0;
        int got = 0;
        for (int i = 0; i < n; i++) {
            assert_true(s[i] <= e[i]);
            if (e[i] > s[i]) {
                assert_int_equal(s[i], at);
                strncat(cat, tgt + s[i], e[i] - s[i]);
                at = e[i];
                got++;
                assert_true(r.opens[i] || (need == 0 && i == 0));  /* only runs in which a word starts */
            }
        }
        assert_string_equal(cat, tgt);
        if (nt >= need && need)
            assert_int_equal(got, need);
        srv_runs_free(&r);
    }
}

static void test_runs_follow_links(void **state)
{
    (void)state;
    /* "The <b>red</b> sofa" -> "Le canapé rouge": rouge goes to the bold run */
    const char *runs[] = { "The ", "red", " sofa." };
    size_t lens[] = { 4, 3, 6 };
    srv_runs r;
    mt_err err;
    assert_int_equal(srv_runs_init(&r, runs, lens, 3, &err), MT_OK);
    assert_string_equal(r.text, "The red sofa.");
    assert_int_equal(r.start[1], 4);
    assert_int_equal(r.end[1], 7);
    const char *tgt = "Le canapé rouge.";      /* é: one code point, two bytes */
    long links[] = { 0, 3, 0, 2, 4, 7, 10, 16, 8, 13, 3, 9 };
    size_t s[3], e[3];
    assert_int_equal(srv_runs_split(&r, tgt, strlen(tgt), links, 3, s, e, &err), MT_OK);
    /* order kept: the bold run cannot come after "sofa.", so it takes what is
     * between its neighbours' words; nothing is lost */
    char cat[64] = "";
    for (int i = 0; i < 3; i++)
        strncat(cat, tgt + s[i], e[i] - s[i]);
    assert_string_equal(cat, tgt);
    assert_true(e[1] > s[1]);
    srv_runs_free(&r);
}

static void test_runs_word_split_over_runs(void **state)
{
    (void)state;
    /* "of the *librar*y." (a run ends inside a word): the identity translation
     * keeps every word where its start was; the run holding "y." alone gets
     * nothing, and takes no word from its neighbours */
    const char *runs[] = { "of ", "the ", "librar", "y." };
    size_t lens[] = { 3, 4, 6, 2 };
    srv_runs r;
    mt_err err;
    assert_int_equal(srv_runs_init(&r, runs, lens, 4, &err), MT_OK);
    assert_string_equal(r.text, "of the library.");
    assert_int_equal(r.opens[2], 1);
    assert_int_equal(r.opens[3], 0);
    const char *tgt = "OF THE LIBRARY.";
    long links[] = { 0, 2, 0, 2, 3, 6, 3, 6, 7, 15, 7, 15 };
    size_t s[4], e[4];
    assert_int_equal(srv_runs_split(&r, tgt, strlen(tgt), links, 3, s, e, &err), MT_OK);
    const char *want[] = { "OF ", "THE ", "LIBRARY.", "" };
    for (int i = 0; i < 4; i++) {
        char got[32];
        snprintf(got, sizeof got, "%.*s", (int)(e[i] - s[i]), tgt + s[i]);
        assert_string_equal(got, want[i]);
    }
    srv_runs_free(&r);
}

static char *render(srv_doc *d)
{
    char *out;
    size_t len;
    mt_err err;
    assert_int_equal(srv_doc_render(d, &out, &len, &err), MT_OK);
    assert_int_equal(strlen(out), len);
    return out;
}

/* Every unit "translated" to its words upper-cased, each linked to itself. */
static void upper_all(srv_doc *d)
{
    for (int i = 0; i < srv_doc_units(d); i++) {
        const char *u = srv_doc_unit(d, i);
        char t[4096];
        long w[2 * 256], links[4 * 256];
        snprintf(t, sizeof t, "%s", u);
        for (char *p = t; *p; p++)
            if (*p >= 'a' && *p <= 'z')
                *p -= 32;
        int n = words(t, w, 256);
        for (int k = 0; k < n; k++) {
            links[4 * k] = w[2 * k], links[4 * k + 1] = w[2 * k + 1];
            links[4 * k + 2] = w[2 * k], links[4 * k + 3] = w[2 * k + 1];
        }
        mt_err err;
        assert_int_equal(srv_doc_set(d, i, t, strlen(t), links, n, &err), MT_OK);
    }
}

static void test_text_units_and_lines(void **state)
{
    (void)state;
    const char *in = "Title line\r\n\r\n  This sentence runs\r\n  over two lines.\r\nNext one.\r\n- item one\r\n"
                     "- item two\r\n\r\n\r\nlast line without end";
    srv_doc *d;
    mt_err err;
    assert_int_equal(srv_doc_sniff(in, strlen(in), "a.txt"), SRV_DOC_TXT);
    assert_int_equal(srv_doc_parse(SRV_DOC_TXT, in, strlen(in), NULL, &d, &err), MT_OK);
    assert_int_equal(srv_doc_units(d), 6);
    assert_string_equal(srv_doc_unit(d, 0), "Title line");
    assert_string_equal(srv_doc_unit(d, 1), "This sentence runs over two lines.");
    assert_string_equal(srv_doc_unit(d, 2), "Next one.");
    assert_string_equal(srv_doc_unit(d, 3), "- item one");
    assert_string_equal(srv_doc_unit(d, 5), "last line without end");
    char *same = render(d);
    assert_string_equal(same, in);                      /* nothing set: the bytes */
    free(same);
    upper_all(d);
    char *out = render(d);
    assert_string_equal(out, "TITLE LINE\r\n\r\n  THIS SENTENCE RUNS\r\n  OVER TWO LINES.\r\nNEXT ONE.\r\n- ITEM ONE\r\n"
                             "- ITEM TWO\r\n\r\n\r\nLAST LINE WITHOUT END");
    free(out);
    srv_doc_free(d);
}

static void test_text_refused(void **state)
{
    (void)state;
    srv_doc *d = NULL;
    mt_err err;
    assert_int_equal(srv_doc_parse(SRV_DOC_TXT, "a\0b", 3, NULL, &d, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "NUL"));
    assert_int_equal(srv_doc_parse(SRV_DOC_TXT, "caf\xe9", 4, NULL, &d, &err), MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "UTF-8"));
    srv_doc_limits lim = srv_doc_default_limits();
    lim.max_units = 2;
    assert_int_equal(srv_doc_parse(SRV_DOC_TXT, "a.\nb.\nc.\n", 9, &lim, &d, &err), MT_ERR_TOO_LONG);
    assert_non_null(strstr(err.msg, "limit is 2"));
    lim = srv_doc_default_limits();
    lim.max_bytes = 4;
    assert_int_equal(srv_doc_parse(SRV_DOC_TXT, "hello", 5, &lim, &d, &err), MT_ERR_TOO_LONG);
    assert_null(d);
    assert_int_equal(srv_doc_parse(SRV_DOC_TXT, "", 0, NULL, &d, &err), MT_OK);
    assert_int_equal(srv_doc_units(d), 0);
    char *out = render(d);
    assert_string_equal(out, "");
    free(out);
    srv_doc_free(d);
}

static void test_sniff(void **state)
{
    (void)state;
    assert_int_equal(srv_doc_sniff("<!DOCTYPE html><p>x", 19, NULL), SRV_DOC_HTML);
    assert_int_equal(srv_doc_sniff("<p>x</p>", 8, "x.txt"), SRV_DOC_HTML);
    assert_int_equal(srv_doc_sniff("a < b and c > d", 15, NULL), SRV_DOC_TXT);
    assert_int_equal(srv_doc_sniff("x <b>y</b>", 10, "page.html"), SRV_DOC_HTML);
    assert_int_equal(srv_doc_sniff("\x89PNG\r\n\x1a\n\0\0", 10, "a.txt"), SRV_DOC_UNKNOWN);
    assert_int_equal(srv_doc_sniff("PK\x03\x04junk", 8, "a.docx"), SRV_DOC_UNKNOWN);
    assert_int_equal(srv_doc_sniff("caf\xe9", 4, NULL), SRV_DOC_UNKNOWN);
    assert_string_equal(srv_doc_kind_name(SRV_DOC_DOCX), "docx");
    assert_null(srv_doc_kind_name(SRV_DOC_N));
}

static void test_html_file(void **state)
{
    (void)state;
    const char *in = "<!DOCTYPE html><html><body><p>Hello <b>big</b> world.</p><pre>keep  me</pre></body></html>";
    srv_doc *d;
    mt_err err;
    assert_int_equal(srv_doc_parse(SRV_DOC_HTML, in, strlen(in), NULL, &d, &err), MT_OK);
    assert_int_equal(srv_doc_units(d), 1);
    upper_all(d);
    char *out = render(d);
    assert_string_equal(out, "<!DOCTYPE html><html><body><p>HELLO <b>BIG</b> WORLD.</p><pre>keep  me</pre></body></html>");
    free(out);
    srv_doc_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_split_properties),
        cmocka_unit_test(test_runs_follow_links),
        cmocka_unit_test(test_runs_word_split_over_runs),
        cmocka_unit_test(test_text_units_and_lines),
        cmocka_unit_test(test_text_refused),
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_html_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
