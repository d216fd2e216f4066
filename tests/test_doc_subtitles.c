/* test_doc_subtitles: server/document/doc_subtitles.c (SubRip and WebVTT)
 * without a model, through its srv_doc_format table.  A fake translator
 * (each word uppercased, in order or reversed or shuffled, each word linked
 * to its source word, some links dropped) stands for the model.  Checked: the
 * units a file gives (tags out, lines joined, a sentence over cues merged),
 * files written back exactly (numbers, timings, settings, header, notes, tags,
 * CRLF, the BOM), a merged sentence split back with every cue non-empty, line
 * re-wrapping, the timing lines of every output equal to the input's under
 * every fake translation, malformed files (MT_ERR_INPUT and the line), the
 * limits (MT_ERR_TOO_LONG), content sniffing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture_file.h"

#include "document/doc_format.h"
#include "document/document.h"
#include "util/strbuf.h"
#include "util/utf8.h"

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

static int sp(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Unit i "translated": its words uppercased (ASCII), mode 0 in order, 1
 * reversed, 2 shuffled by seed with a third of the links dropped; each target
 * word linked to its source word (code points).  MT_OK or set's failure. */
static mt_status fake_translate(void *st, int i, int mode, uint64_t seed)
{
    enum { CAP = 2048 };
    const char *t = F->unit(st, i);
    long wb[2 * CAP], wc[2 * CAP], links[4 * CAP];
    int order[CAP], n = 0;
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
        order[n] = n;
        n++;
    }
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 1;
    for (int k = 0; mode == 1 && k < n; k++)
        order[k] = n - 1 - k;
    for (int k = n - 1; mode == 2 && k > 0; k--) {
        int j = (int)(rng(&s) % (uint64_t)(k + 1)), x = order[k];
        order[k] = order[j], order[j] = x;
    }
    mt_sbuf b = { 0 };
    int nl = 0;
    cp = 0;
    for (int k = 0; k < n; k++) {
        int w = order[k];
        if (k)
            mt_sb_add(&b, " ", 1), cp++;
        size_t at = b.n;
        mt_sb_add(&b, t + wb[2 * w], (size_t)(wb[2 * w + 1] - wb[2 * w]));
        for (size_t x = at; x < b.n; x++)
            if (b.p[x] >= 'a' && b.p[x] <= 'z')
                b.p[x] -= 32;
        long len = wc[2 * w + 1] - wc[2 * w];
        if (mode != 2 || rng(&s) % 3) {
            long *l = links + 4 * nl++;
            l[0] = wc[2 * w], l[1] = wc[2 * w + 1], l[2] = cp, l[3] = cp + len;
        }
        cp += len;
    }
    mt_err err = { 0 };
    mt_status r = F->set(st, i, b.p ? b.p : "", b.n, links, nl, &err);
    free(b.p);
    return r;
}

static void *parse_kind(srv_doc_kind kind, const char *s, size_t n)
{
    srv_doc_limits lim = srv_doc_default_limits();
    void *st = NULL;
    mt_err err = { 0 };
    mt_status r = F->parse(kind, s, n, &lim, doc_opt(), &st, &err);
    if (r != MT_OK)
        fprintf(stderr, "parse: %s\n", err.msg);
    assert_int_equal(r, MT_OK);
    return st;
}

/* s translated with mode (every unit when all, else none), written out: malloc'd. */
static char *translate(srv_doc_kind kind, const char *s, size_t n, int mode, uint64_t seed, size_t *out_len)
{
    void *st = parse_kind(kind, s, n);
    for (int i = 0; mode >= 0 && i < F->units(st); i++)
        assert_int_equal(fake_translate(st, i, mode, seed), MT_OK);
    char *out = NULL;
    size_t len = 0;
    mt_err err = { 0 };
    assert_int_equal(F->render(st, &out, &len, &err), MT_OK);
    assert_int_equal(strlen(out), len);
    F->free(st);
    if (out_len)
        *out_len = len;
    return out;
}

static void expect_units(srv_doc_kind kind, const char *s, const char *const *want, int n)
{
    void *st = parse_kind(kind, s, strlen(s));
    for (int i = 0; i < F->units(st) && i < n; i++)
        assert_string_equal(F->unit(st, i), want[i]);
    assert_int_equal(F->units(st), n);
    F->free(st);
}

static void expect_output(srv_doc_kind kind, const char *s, int mode, const char *want)
{
    char *out = translate(kind, s, strlen(s), mode, 1, NULL);
    if (strcmp(out, want))
        fprintf(stderr, "got:\n%s---\nwant:\n%s---\n", out, want);
    assert_string_equal(out, want);
    free(out);
}

static void test_srt_units(void **state)
{
    (void)state;
    size_t n;
    char *s = slurp("tests/fixtures/documents/sample.srt", &n);
    const char *want[] = { "Welcome to the workshop.",
                           "Today we will learn how to install the package from the archive and how to configure it.",
                           "Please open a terminal now.", "The first command is very simple.", "- Is it ready? - Yes, it is.",
                           "Thank you!" };
    expect_units(SRV_DOC_SRT, s, want, 6);
    free(s);
}

/* SRT: a text '<' before a "{\...}" tag on the same line stays text and the
 * "{\...}" stays one whole tag (fuzz_doc_subtitles found a re-wrap that put
 * them on one line: "<fo00 {\an-->" read as one tag, "8}" as text). */
static void test_srt_lt_before_override(void **state)
{
    (void)state;
    const char *want[] = { "<fo00 The first command" };
    expect_units(SRV_DOC_SRT, "1\n00:00:16,500 --> 00:00:18,000\n<fo00 {\\an-->8}The first command\n", want, 1);
}

/* VTT: a text "{\\an0" before a '<' tag holding "{\\an8}" stays text, and the
 * '<' tag stays whole (fuzz_doc_subtitles: a re-wrap put them on one line and
 * "{\\an0 ... {\\an8}" read as one override, the rest of the tag as text). */
static void test_vtt_brace_before_tag(void **state)
{
    (void)state;
    const char *want[] = { "{\\an0 Hello world" };
    expect_units(SRV_DOC_VTT, "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n{\\an0 Hello <c.x{\\an8}>world\n", want, 1);
}

static void test_srt_translated(void **state)
{
    (void)state;
    size_t n;
    char *s = slurp("tests/fixtures/documents/sample.srt", &n);
    expect_output(SRV_DOC_SRT, s, 0,
                  "1\n00:00:01,000 --> 00:00:03,200\nWELCOME TO THE WORKSHOP.\n\n"
                  "2\n00:00:03,500 --> 00:00:06,000\nTODAY WE WILL LEARN HOW TO INSTALL\nTHE PACKAGE FROM THE ARCHIVE\n\n"
                  "3\n00:00:06,100 --> 00:00:08,400\nAND HOW TO CONFIGURE IT.\n\n"
                  "4\n00:00:09,000 --> 00:00:11,000\n<i>PLEASE OPEN A TERMINAL NOW.</i>\n\n"
                  "5\n00:00:11,500 --> 00:00:14,000\n{\\an8}THE FIRST COMMAND\nIS <b>VERY</b> SIMPLE.\n\n"
                  "6\n00:00:14,500 --> 00:00:16,000 X1:100 X2:500 Y1:20 Y2:80\n- IS IT READY?\n- YES, IT IS.\n\n"
                  "7\n00:00:16,500 --> 00:00:18,000\n<font color=\"#ffff00\">THANK YOU!</font>\n");
    free(s);
}

static void test_vtt_translated(void **state)
{
    (void)state;
    size_t n;
    char *s = slurp("tests/fixtures/documents/sample.vtt", &n);
    const char *want[] = { "Hello and welcome.", "This lesson shows how the tools work together & why they matter.",
                           "Let us begin right away!" };
    expect_units(SRV_DOC_VTT, s, want, 3);
    const char *head = "WEBVTT - a short lesson\nKind: captions\nLanguage: en\n\n"
                       "NOTE This note is not translated.\nIt runs over two lines.\n\n"
                       "STYLE\n::cue(.yellow) { color: yellow; }\n\nREGION\nid:bottom\nwidth:40%\n\n";
    char want_out[2048];
    snprintf(want_out, sizeof want_out, "%s%s", head,
             "intro\n00:00.000 --> 00:02.500 align:start position:10%\n<v Anna>HELLO AND WELCOME.</v>\n\n"
             "00:00:02.800 --> 00:00:05.000 line:0 region:bottom\n<c.yellow>THIS LESSON SHOWS</c> HOW THE TOOLS\n\n"
             "00:00:05.200 --> 00:00:07.900\nWORK TOGETHER &amp; WHY THEY MATTER.\n\n"
             "chapter-2\n00:00:08.000 --> 00:00:10.000\nLET US <00:00:08.500>BEGIN <i>RIGHT</i> AWAY!\n\n"
             "00:00:10.500 --> 00:00:12.000\n<b></b>\n");
    expect_output(SRV_DOC_VTT, s, 0, want_out);
    free(s);
}

/* Untranslated units are copied: the file comes back byte for byte. */
static void test_unset_is_byte_exact(void **state)
{
    (void)state;
    const char *files[] = { "tests/fixtures/documents/sample.srt", "tests/fixtures/documents/sample.vtt",
                            "tests/fixtures/documents/crlf.srt" };
    srv_doc_kind kinds[] = { SRV_DOC_SRT, SRV_DOC_VTT, SRV_DOC_SRT };
    for (int f = 0; f < 3; f++) {
        size_t n, m;
        char *s = slurp(files[f], &n);
        char *out = translate(kinds[f], s, n, -1, 0, &m);
        assert_int_equal(m, n);
        assert_memory_equal(out, s, n);
        free(out);
        free(s);
    }
}

static void test_sentence_over_cues(void **state)
{
    (void)state;
    const char *s = "1\n00:00:01,000 --> 00:00:02,000\nI think that we\n\n"
                    "2\n00:00:02,500 --> 00:00:04,000\nshould go home now.\n";
    const char *want[] = { "I think that we should go home now." };
    expect_units(SRV_DOC_SRT, s, want, 1);
    expect_output(SRV_DOC_SRT, s, 0, "1\n00:00:01,000 --> 00:00:02,000\nI THINK THAT WE\n\n"
                                     "2\n00:00:02,500 --> 00:00:04,000\nSHOULD GO HOME NOW.\n");
    /* reversed and shuffled: every cue still gets words, all of them once */
    for (int mode = 1; mode <= 2; mode++)
        for (uint64_t seed = 1; seed < 20; seed++) {
            char *out = translate(SRV_DOC_SRT, s, strlen(s), mode, seed, NULL);
            const char *c1 = strstr(out, "02,000\n"), *c2 = strstr(out, "04,000\n");
            assert_non_null(c1);
            assert_non_null(c2);
            assert_true(c1[7] != '\n' && c2[7] != '\n' && c2[7] != 0);
            int words = 0;                      /* the 8 words, each once, over the two cue lines */
            for (const char *w = c1 + 7; *w && *w != '\n'; w++)
                words += w[0] != ' ' && (w == c1 + 7 || w[-1] == ' ');
            for (const char *w = c2 + 7; *w && *w != '\n'; w++)
                words += w[0] != ' ' && (w == c2 + 7 || w[-1] == ' ');
            assert_int_equal(words, 8);
            free(out);
        }
}

/* A run of five cues without a full stop is cut: a unit holds at most five. */
static void test_merge_bounded(void **state)
{
    (void)state;
    mt_sbuf b = { 0 };
    for (int i = 0; i < 12; i++) {
        char cue[128];
        snprintf(cue, sizeof cue, "%d\n00:00:%02d,000 --> 00:00:%02d,500\nword%d and\n\n", i + 1, i, i, i);
        mt_sb_add(&b, cue, strlen(cue));
    }
    void *st = parse_kind(SRV_DOC_SRT, b.p, b.n);
    assert_int_equal(F->units(st), 3);
    assert_string_equal(F->unit(st, 0), "word0 and word1 and word2 and word3 and word4 and");
    F->free(st);
    free(b.p);
}

static void test_crlf_kept(void **state)
{
    (void)state;
    size_t n, m;
    char *s = slurp("tests/fixtures/documents/crlf.srt", &n);
    char *out = translate(SRV_DOC_SRT, s, n, 0, 1, &m);
    assert_string_equal(out, "\xef\xbb\xbf" "1\r\n00:00:01,000 --> 00:00:02,000\r\nTHE FIRST LINE OF TEXT\r\n"
                             "AND THE SECOND LINE.\r\n\r\n2\r\n00:00:02,500 --> 00:00:04,000\r\nIT WORKS FINE\r\n\r\n"
                             "3\r\n00:00:04,200 --> 00:00:06,000\r\nWITH WINDOWS LINE ENDINGS.\r\n");
    for (size_t i = 0; i < m; i++)
        if (out[i] == '\n')
            assert_true(i > 0 && out[i - 1] == '\r');
    free(out);
    free(s);
}

/* Two source lines: the translation re-wrapped at the space nearest the middle;
 * a short translation stays one line (never a blank one). */
static void test_rewrap(void **state)
{
    (void)state;
    const char *s = "1\n00:00:01,000 --> 00:00:02,000\nalpha beta gamma delta\nepsilon zeta.\n\n"
                    "2\n00:00:03,000 --> 00:00:04,000\nOne\nword.\n";
    expect_output(SRV_DOC_SRT, s, 1, "1\n00:00:01,000 --> 00:00:02,000\nZETA. EPSILON DELTA\nGAMMA BETA ALPHA\n\n"
                                     "2\n00:00:03,000 --> 00:00:04,000\nWORD.\nONE\n");
    const char *v = "WEBVTT\n\n00:01.000 --> 00:02.000\nsingle\n";
    expect_output(SRV_DOC_VTT, v, 0, "WEBVTT\n\n00:01.000 --> 00:02.000\nSINGLE\n");
}

/* The text's own & < > are escaped in VTT, kept in SRT; a file without a final line ending keeps none. */
static void test_escapes_and_file_end(void **state)
{
    (void)state;
    expect_output(SRV_DOC_VTT, "WEBVTT\n\n00:01.000 --> 00:02.000\nx &lt; y &amp;&amp; z",
                  0, "WEBVTT\n\n00:01.000 --> 00:02.000\nX &lt; Y &amp;&amp; Z");
    expect_output(SRV_DOC_SRT, "1\n0:00:01,5 --> 0:00:02,25\nfish & chips < 5", 0,
                  "1\n0:00:01,5 --> 0:00:02,25\nFISH & CHIPS < 5");
}

static void expect_error(srv_doc_kind kind, const char *s, mt_status want, const char *msg_part)
{
    srv_doc_limits lim = srv_doc_default_limits();
    void *st = NULL;
    mt_err err = { 0 };
    assert_int_equal(F->parse(kind, s, strlen(s), &lim, doc_opt(), &st, &err), want);
    if (!strstr(err.msg, msg_part))
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err.msg, msg_part);
    assert_non_null(strstr(err.msg, msg_part));
}

static void test_malformed(void **state)
{
    (void)state;
    expect_error(SRV_DOC_SRT, "1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:01,000 -> 00:00:02,000\nx\n",
                 MT_ERR_INPUT, "line 6");
    expect_error(SRV_DOC_SRT, "1\n00:00:01,000 --> 00:00:0x,000\nx\n", MT_ERR_INPUT, "line 2: the timing");
    expect_error(SRV_DOC_SRT, "1\n00:61:01,000 --> 00:62:02,000\nx\n", MT_ERR_INPUT, "line 2: a timestamp out of range");
    expect_error(SRV_DOC_SRT, "1\n00:00:01,000 --> 00:00:02,000\nok\n\nstray text\n", MT_ERR_INPUT,
                 "line 5: a cue without a timing");
    expect_error(SRV_DOC_SRT, "1\n00:00:01,000 --> 00:00:02,000\nbad \xff byte\n", MT_ERR_INPUT, "line 3: not valid UTF-8");
    expect_error(SRV_DOC_VTT, "1\n00:00:01.000 --> 00:00:02.000\nx\n", MT_ERR_INPUT, "line 1: a WebVTT file");
    expect_error(SRV_DOC_VTT, "WEBVTT\n\n00:01.000 --> 00:02,000\nx\n", MT_ERR_INPUT, "line 3");
    expect_error(SRV_DOC_VTT, "WEBVTT\n\nid\n00:01.000 --> 00:60.000\nx\n", MT_ERR_INPUT, "line 4: a timestamp");
    srv_doc_limits lim = srv_doc_default_limits();
    void *st = NULL;
    mt_err err = { 0 };
    assert_int_equal(F->parse(SRV_DOC_SRT, "1\n00:00:01,000 --> 00:00:02,000\na\0b\n", 36, &lim, doc_opt(), &st, &err),
                     MT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "line 3: a NUL"));
}

static void test_limits(void **state)
{
    (void)state;
    const char *s = "1\n00:00:01,000 --> 00:00:02,000\nOne sentence.\n\n"
                    "2\n00:00:02,000 --> 00:00:03,000\nAnother one, longer than twenty bytes.\n";
    srv_doc_limits lim = srv_doc_default_limits();
    void *st = NULL;
    mt_err err = { 0 };
    lim.max_units = 1;
    assert_int_equal(F->parse(SRV_DOC_SRT, s, strlen(s), &lim, doc_opt(), &st, &err), MT_ERR_TOO_LONG);
    assert_non_null(strstr(err.msg, "limit is 1"));
    lim = srv_doc_default_limits();
    lim.max_unit_bytes = 20;
    assert_int_equal(F->parse(SRV_DOC_SRT, s, strlen(s), &lim, doc_opt(), &st, &err), MT_ERR_TOO_LONG);
    assert_non_null(strstr(err.msg, "line 6"));
    lim.max_unit_bytes = 200;
    lim.max_units = 2;
    assert_int_equal(F->parse(SRV_DOC_SRT, s, strlen(s), &lim, doc_opt(), &st, &err), MT_OK);
    F->free(st);
}

static void test_sniff(void **state)
{
    (void)state;
    srv_doc_kind k = SRV_DOC_UNKNOWN;
    const char *vtt = "\xef\xbb\xbfWEBVTT\r\n\r\n00:01.000 --> 00:02.000\r\nx\r\n";
    assert_true(srv_doc_is_subtitles(vtt, strlen(vtt), &k) && k == SRV_DOC_VTT);
    assert_true(srv_doc_is_subtitles("WEBVTT", 6, &k) && k == SRV_DOC_VTT);
    const char *srt = "\n\n12\n00:00:01,000 --> 00:00:02,000\nx\n";
    assert_true(srv_doc_is_subtitles(srt, strlen(srt), &k) && k == SRV_DOC_SRT);
    const char *no[] = { "WEBVTTX\n", "12\nhello\n", "msgid \"a\"\nmsgstr \"\"\n", "Just a text.\n",
                         "1\n00:00:01 --> 00:00:02\n", "" };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_false(srv_doc_is_subtitles(no[i], strlen(no[i]), &k));
}

/* The lines that hold "-->" (the timings) of s, one string. */
static char *timings(const char *s)
{
    mt_sbuf b = { 0 };
    mt_sb_add(&b, "", 0);
    for (const char *l = s; *l;) {
        const char *e = l + strcspn(l, "\r\n");
        if (memmem(l, (size_t)(e - l), "-->", 3)) {
            mt_sb_add(&b, l, (size_t)(e - l));
            mt_sb_add(&b, "|", 1);
        }
        l = *e == '\r' && e[1] == '\n' ? e + 2 : *e ? e + 1 : e;
    }
    return b.p;
}

/* Under every fake translation: the output parses again to as many units'
 * worth of cues, every timing line as it was, every unit's words present. */
static void test_structure_kept(void **state)
{
    (void)state;
    const char *files[] = { "tests/fixtures/documents/sample.srt", "tests/fixtures/documents/sample.vtt",
                            "tests/fixtures/documents/crlf.srt" };
    srv_doc_kind kinds[] = { SRV_DOC_SRT, SRV_DOC_VTT, SRV_DOC_SRT };
    for (int f = 0; f < 3; f++) {
        size_t n;
        char *s = slurp(files[f], &n);
        char *ta = timings(s);
        for (int mode = 0; mode < 3; mode++)
            for (uint64_t seed = 1; seed < 8; seed++) {
                size_t m;
                char *out = translate(kinds[f], s, n, mode, seed, &m);
                char *tb = timings(out);
                assert_string_equal(ta, tb);
                void *st = parse_kind(kinds[f], out, m);
                void *st0 = parse_kind(kinds[f], s, n);
                assert_true(F->units(st) <= F->units(st0) + 2);
                F->free(st);
                F->free(st0);
                free(tb);
                free(out);
            }
        free(ta);
        free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_srt_units),
        cmocka_unit_test(test_srt_lt_before_override),
        cmocka_unit_test(test_vtt_brace_before_tag),
        cmocka_unit_test(test_srt_translated),
        cmocka_unit_test(test_vtt_translated),
        cmocka_unit_test(test_unset_is_byte_exact),
        cmocka_unit_test(test_sentence_over_cues),
        cmocka_unit_test(test_merge_bounded),
        cmocka_unit_test(test_crlf_kept),
        cmocka_unit_test(test_rewrap),
        cmocka_unit_test(test_escapes_and_file_end),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_structure_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
