/* test_doc_po: server/document/doc_po.c (gettext .po/.pot) without a model,
 * through its srv_doc_format table.  A fake translator stands for the model:
 * each word (a run of non-spaces) of a unit uppercased and linked to its
 * source word, the words in order with the whitespace between kept (mode 0),
 * reversed (mode 1), shuffled (mode 2: the odd words, then the even ones), in
 * order without links (mode 3), or in order with a stray "{x}" after them
 * (mode 4: a translation that made a placeholder up).  Checked: the units
 * (escapes decoded, lines joined, placeholders out of them, a line each,
 * header, translated, obsolete and placeholder-only entries left out, plurals
 * the units of both), the file written back exactly (comments, msgctxt, order,
 * wrapping of untouched entries, CRLF), msgstr[0..nplurals) filled, the fuzzy
 * flag, placeholders and markup back exactly and in order whatever the word
 * order, an entry whose translation fails the check left untranslated,
 * malformed files (MT_ERR_INPUT and the line), limits (MT_ERR_TOO_LONG),
 * sniffing. */
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

/* The formats' parse hook takes the caller's options: the defaults here. */
static const srv_doc_options *doc_opt(void)
{
    static srv_doc_options o;
    o = srv_doc_default_options();
    return &o;
}

static const srv_doc_format *F = &srv_doc_po_format;

static int sp(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

enum { MODES = 5, CAP = 512 };

static long cps(const char *s, const char *e)    /* code points in [s, e) */
{
    long k = 0;
    for (; s < e; s++)
        k += ((unsigned char)*s & 0xc0) != 0x80;
    return k;
}

/* Unit text t "translated" by mode into b, its links into l[4 * CAP] (*nl). */
static void fake(const char *t, int mode, mt_sbuf *b, long *l, int *nl)
{
    const char *w[CAP];
    size_t wn[CAP];
    long ws[CAP];
    int n = 0, order[CAP];
    b->n = 0;
    *nl = 0;
    mt_sb_add(b, "", 0);
    for (const char *p = t; *p && n < CAP;) {
        const char *s = p;
        while (*p && sp(*p))
            p++;
        if (mode == 0 || mode == 3 || mode == 4)
            mt_sb_add(b, s, (size_t)(p - s));       /* the whitespace before each word (and at the end) */
        if (!*p)
            break;
        w[n] = p;
        ws[n] = cps(t, p);
        while (*p && !sp(*p))
            p++;
        wn[n] = (size_t)(p - w[n]);
        if (mode == 0 || mode == 3 || mode == 4) {
            size_t at = b->n;
            mt_sb_add(b, w[n], wn[n]);
            if (mode == 0) {
                long tws = cps(b->p, b->p + at);
                long *x = l + 4 * (*nl)++;
                x[0] = ws[n], x[1] = ws[n] + cps(w[n], w[n] + wn[n]), x[2] = tws, x[3] = tws + x[1] - x[0];
            }
            for (size_t k = at; k < b->n; k++)
                if (b->p[k] >= 'a' && b->p[k] <= 'z')
                    b->p[k] -= 32;
        }
        n++;
    }
    if (mode == 4)
        mt_sb_add(b, " {x}", 4);
    if (mode != 1 && mode != 2)
        return;
    for (int k = 0, j = 0; k < n; k++)              /* mode 2: 1, 3, 5, ..., 0, 2, 4, ... */
        order[k] = mode == 1 ? n - 1 - k : 2 * j + 1 < n && k < n / 2 ? 2 * j++ + 1 : 2 * (k - n / 2);
    for (int k = 0; k < n; k++) {
        int i = order[k];
        if (k)
            mt_sb_add(b, " ", 1);
        long tws = cps(b->p, b->p + b->n), len = cps(w[i], w[i] + wn[i]);
        size_t at = b->n;
        mt_sb_add(b, w[i], wn[i]);
        for (size_t x = at; x < b->n; x++)
            if (b->p[x] >= 'a' && b->p[x] <= 'z')
                b->p[x] -= 32;
        long *x = l + 4 * (*nl)++;
        x[0] = ws[i], x[1] = ws[i] + len, x[2] = tws, x[3] = tws + len;
    }
}

static void *parse_lim(const char *s, size_t n, const srv_doc_limits *lim)
{
    void *st = NULL;
    mt_err err = { 0 };
    mt_status r = F->parse(SRV_DOC_PO, s, n, lim, doc_opt(), &st, &err);
    if (r != MT_OK)
        fprintf(stderr, "parse: %s\n", err.msg);
    assert_int_equal(r, MT_OK);
    return st;
}

static void *parse(const char *s, size_t n)
{
    srv_doc_limits lim = srv_doc_default_limits();
    return parse_lim(s, n, &lim);
}

static char *render(void *st)
{
    char *out = NULL;
    size_t len = 0;
    mt_err err = { 0 };
    assert_int_equal(F->render(st, &out, &len, &err), MT_OK);
    assert_int_equal(strlen(out), len);
    return out;
}

/* s with every unit translated by mode (mode < 0: none), written out: malloc'd. */
static char *translate(const char *s, size_t n, int mode)
{
    void *st = parse(s, n);
    mt_sbuf b = { 0 };
    mt_err err = { 0 };
    static long links[4 * CAP];
    int nl;
    for (int i = 0; mode >= 0 && i < F->units(st); i++) {
        fake(F->unit(st, i), mode, &b, links, &nl);
        assert_int_equal(F->set(st, i, b.p, b.n, links, nl, &err), MT_OK);
    }
    free(b.p);
    char *out = render(st);
    F->free(st);
    return out;
}

static void expect_eq(const char *got, const char *want)
{
    if (strcmp(got, want))
        fprintf(stderr, "got:\n%s---\nwant:\n%s---\n", got, want);
    assert_string_equal(got, want);
}

static const char *const FIXTURE_UNITS[] = {
    "Open the file",
    "Could not open :",                 /* "Could not open %s: %s" */
    "file was removed",                 /* "%d file was removed" */
    "files were removed",
    "Hello , you have new messages.",   /* "Hello %(name)s, you have {count} new messages." */
    "Save all documents",               /* "Save <b>all</b> documents&hellip;" */
    "Usage: frobnicate [OPTION]... FILE",
    "Frobnicate the given file.",
    "Newer text with 100 accuracy",     /* "Newer text with 100%% accuracy" */
};

static void test_units(void **state)
{
    (void)state;
    size_t n;
    char *s = slurp("tests/fixtures/documents/sample.po", &n);
    void *st = parse(s, n);
    int want = (int)(sizeof FIXTURE_UNITS / sizeof FIXTURE_UNITS[0]);
    for (int i = 0; i < F->units(st) && i < want; i++)
        assert_string_equal(F->unit(st, i), FIXTURE_UNITS[i]);
    assert_int_equal(F->units(st), want);
    F->free(st);
    free(s);
}

static void test_translated(void **state)
{
    (void)state;
    size_t n;
    char *s = slurp("tests/fixtures/documents/sample.po", &n);
    char *out = translate(s, n, 0);
    const char *hdr_end = strstr(s, "\n\n#. TRANSLATORS");
    assert_non_null(hdr_end);
    assert_memory_equal(out, s, (size_t)(hdr_end - s) + 2);      /* comments and header as they were */
    expect_eq(out + (hdr_end - s) + 2,
              "#. TRANSLATORS: shown in the main window title\n#: src/main.c:42\n#, fuzzy\n"
              "msgid \"Open the file\"\nmsgstr \"OPEN THE FILE\"\n\n"
              "#: src/main.c:57\n#, fuzzy, c-format\nmsgid \"Could not open %s: %s\"\n"
              "msgstr \"COULD NOT OPEN %s: %s\"\n\n"
              "#: src/list.c:12\n#, fuzzy, c-format\nmsgid \"%d file was removed\"\n"
              "msgid_plural \"%d files were removed\"\nmsgstr[0] \"%d FILE WAS REMOVED\"\n"
              "msgstr[1] \"%d FILES WERE REMOVED\"\nmsgstr[2] \"%d FILES WERE REMOVED\"\n\n"
              "#: src/ui.py:88\n#, fuzzy, python-format\n"
              "msgid \"Hello %(name)s, you have {count} new messages.\"\n"
              "msgstr \"HELLO %(name)s, YOU HAVE {count} NEW MESSAGES.\"\n\n"
              "#: src/ui.py:90\n#, fuzzy\nmsgctxt \"menu\"\nmsgid \"Save <b>all</b> documents&hellip;\"\n"
              "msgstr \"SAVE <b>ALL</b> DOCUMENTS&hellip;\"\n\n"
              "#: src/help.c:5\n#, fuzzy\nmsgid \"\"\n\"Usage: frobnicate [OPTION]... FILE\\n\"\n"
              "\"Frobnicate the given file.\\n\"\nmsgstr \"\"\n\"USAGE: FROBNICATE [OPTION]... FILE\\n\"\n"
              "\"FROBNICATE THE GIVEN FILE.\\n\"\n\n"
              "#: src/main.c:99\nmsgid \"Already translated\"\nmsgstr \"Déjà traduit\"\n\n"
              "#: src/main.c:100\nmsgid \"%s\"\nmsgstr \"\"\n\n"
              "#, fuzzy\n#| msgid \"Old text\"\nmsgid \"Newer text with 100%% accuracy\"\n"
              "msgstr \"NEWER TEXT WITH 100%% ACCURACY\"\n\n"
              "#~ msgid \"An obsolete string\"\n#~ msgstr \"Une chaîne obsolète\"\n");
    free(out);
    free(s);
}

static void test_unset_is_byte_exact(void **state)
{
    (void)state;
    size_t n;
    char *s = slurp("tests/fixtures/documents/sample.po", &n);
    char *out = translate(s, n, -1);
    assert_int_equal(strlen(out), n);
    assert_memory_equal(out, s, n);
    free(out);
    free(s);
}

/* The placeholders of s in order (as check_po.py reads them), one per line: malloc'd. */
static char *ph_seq(const char *s)
{
    mt_sbuf b = { 0 };
    mt_sb_add(&b, "", 0);
    for (const char *p = s; *p;) {
        size_t k = 0;
        if (p[0] == '%' && p[1] == '%')
            k = 2;
        else if (p[0] == '%' && p[1] == '(' && strchr(p, ')'))
            k = (size_t)(strchr(p, ')') - p) + 2;
        else if (p[0] == '%' && p[1]) {
            k = 1 + strspn(p + 1, "0123456789$-+#.*hlLqjzt");
            if (!p[k] || !strchr("diouxXeEfFgGaAcsSpnmr@", p[k]))
                k = k > 1 && p[1] >= '1' && p[1] <= '9' ? k : 0;   /* Qt's %1, else none */
            else
                k++;
        } else if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}'))
            k = 2;
        else if (p[0] == '{' && strcspn(p, "} ") < strlen(p) && p[strcspn(p, "} ")] == '}')
            k = strcspn(p, "}") + 1;
        else if (p[0] == '<' && (((p[1] | 0x20) >= 'a' && (p[1] | 0x20) <= 'z') || p[1] == '/') && strchr(p, '>'))
            k = (size_t)(strchr(p, '>') - p) + 1;
        else if (p[0] == '&' && strcspn(p, "; ") < strlen(p) && p[strcspn(p, "; ")] == ';' && strcspn(p, ";") > 1)
            k = strcspn(p, ";") + 1;
        if (k) {
            mt_sb_add(&b, p, k);
            mt_sb_add(&b, "\n", 1);
            p += k;
        } else {
            p++;
        }
    }
    return b.p;
}

/* The string after key ("msgstr[0] \"") in out, its "..." lines joined and
 * its escapes decoded: malloc'd; NULL when there is none. */
static char *msgstr_of(const char *out, const char *key)
{
    const char *p = strstr(out, key);
    if (!p)
        return NULL;
    p += strlen(key);
    mt_sbuf b = { 0 };
    mt_sb_add(&b, "", 0);
    for (;;) {
        for (; *p && *p != '"'; p++) {
            char c = *p;
            if (c == '\\' && p[1])
                c = *++p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
            mt_sb_add(&b, &c, 1);
        }
        if (*p && p[1] == '\n' && p[2] == '"')     /* a "..." line goes on */
            p += 3;
        else
            break;
    }
    return b.p;
}

static void expect_filled(const char *id, int mode, const char *want_str)
{
    char po[512], want[1024];
    snprintf(po, sizeof po, "msgid \"%s\"\nmsgstr \"\"\n", id);
    snprintf(want, sizeof want, "#, fuzzy\nmsgid \"%s\"\nmsgstr \"%s\"\n", id, want_str);
    char *out = translate(po, strlen(po), mode);
    expect_eq(out, want);
    free(out);
}

static void expect_refused(const char *id, int mode)
{
    char po[512];
    snprintf(po, sizeof po, "msgid \"%s\"\nmsgstr \"\"\n", id);
    char *out = translate(po, strlen(po), mode);
    expect_eq(out, po);                 /* untranslated, unmarked */
    free(out);
}

/* msgids with placeholders and markup (as written in a .po: \" escaped) */
static const char *const TRICKY[] = {
    "Copy %s to %d places",
    "Copy %1$s to %2$d places",
    "Width %5.2f%% of %lu",
    "Hi %(user)s and %(peer)s, welcome",
    "{0} of {total} files",
    "Use {{braces}} here",
    "Click <a href=\\\"x\\\">here</a><br/>",
    "Click <b>here</b> now, <i>please</i>",
    "Tom &amp; Jerry &hellip; again",
    "Done 50% of it",
    "Window %1 of %2",
    "Save <b>all</b> documents&hellip;",
    "Could not open %s: %s",
    "<b>Warning:</b> %s is <i>%d%%</i> full",
    "Unclosed <b>bold text",
    "Link <a title=\\\"Go\\\" href=\\\"y\\\">there</a> %s",
    "Fish & chips < 5 > 3",
    "Line one %s\\nLine  two\\tend %d",
    "One<br/>Two %s three",
    "<span class=\\\"x\\\">%s</span> items left",
};

static void test_placeholders(void **state)
{
    (void)state;
    /* in order, with links: each placeholder where it was */
    expect_filled("Copy %s to %d places", 0, "COPY %s TO %d PLACES");
    expect_filled("Hi %(user)s and {peer}, %1$s", 0, "HI %(user)s AND {peer}, %1$s");
    expect_filled("Width %5.2f%% of %lu", 0, "WIDTH %5.2f%% OF %lu");
    expect_filled("Click <a href=\\\"x\\\">here</a><br/>", 0, "CLICK <a href=\\\"x\\\">HERE</a><br/>");
    expect_filled("Tom &amp; Jerry", 0, "TOM &amp; JERRY");
    expect_filled("Done 50% of it", 0, "DONE 50% OF IT");                 /* "% o": not a placeholder */
    expect_filled("Fish & chips < 5", 0, "FISH & CHIPS < 5");             /* the model sees & and < */
    expect_filled("Unclosed <b>bold text", 0, "UNCLOSED <b>BOLD TEXT");    /* every tag a placeholder */
    expect_filled("A\\tB  C", 0, "A\\tB  C");                              /* whitespace runs kept */
    expect_filled("One<br/>Two", 0, "ONE<br/>TWO");
    /* reversed: the words move, the placeholders keep their order; tags wrap their words */
    expect_filled("Copy %s to %d places", 1, "PLACES TO COPY %s %d");
    expect_filled("Click <b>here</b> now", 1, "NOW <b>HERE</b> CLICK");
    expect_filled("%d file was removed", 1, "%d REMOVED WAS FILE");
    /* without links, in order */
    expect_filled("Copy %s to %d places", 3, "COPY %s TO %d PLACES");
    /* a translation that fails the check (a placeholder made up): left untranslated */
    expect_refused("Copy %s to %d places", 4);
    expect_refused("Open", 4);
    /* no unit: nothing to translate */
    const char *none[] = { "msgid \"%s: %s\"\nmsgstr \"\"\n",
                           "msgid \"<code class=\\\"notranslate\\\">frozen</code> %s\"\nmsgstr \"\"\n" };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        void *st = parse(none[i], strlen(none[i]));
        assert_int_equal(F->units(st), 0);
        F->free(st);
        char *out = translate(none[i], strlen(none[i]), 0);
        expect_eq(out, none[i]);
        free(out);
    }
    /* every mode but 4: each tricky msgid filled, its placeholders back exactly and in order */
    for (size_t i = 0; i < sizeof TRICKY / sizeof TRICKY[0]; i++) {
        char po[512], id[512];
        snprintf(po, sizeof po, "#, c-format\nmsgid \"%s\"\nmsgid_plural \"%s (%%d)\"\nmsgstr[0] \"\"\nmsgstr[1] \"\"\n",
                 TRICKY[i], TRICKY[i]);
        char *src = msgstr_of(po, "msgid \"");
        snprintf(id, sizeof id, "%s", src);
        free(src);
        char *want = ph_seq(id);
        for (int mode = 0; mode < MODES; mode++) {
            char *out = translate(po, strlen(po), mode);
            char *one = msgstr_of(out, "msgstr[0] \""), *two = msgstr_of(out, "msgstr[1] \"");
            assert_non_null(one);
            assert_non_null(two);
            if (mode == 4) {
                expect_eq(out, po);
            } else {
                char *got = ph_seq(one), *got2 = ph_seq(two), want2[600];
                snprintf(want2, sizeof want2, "%s%%d\n", want);
                if (strcmp(got, want) || strcmp(got2, want2))
                    fprintf(stderr, "mode %d, msgid \"%s\":\n%s", mode, id, out);
                assert_string_equal(got, want);
                assert_string_equal(got2, want2);
                assert_non_null(strstr(out, "#, fuzzy, c-format\n"));
                free(got);
                free(got2);
            }
            free(one);
            free(two);
            free(out);
        }
        free(want);
    }
}

static void test_escapes_and_whitespace(void **state)
{
    (void)state;
    const char *po = "msgid \"\\tSay \\\"hi\\\" \\\\ now\\n\"\nmsgstr \"\"\n";
    void *st = parse(po, strlen(po));
    assert_string_equal(F->unit(st, 0), "Say \"hi\" \\ now");
    F->free(st);
    char *out = translate(po, strlen(po), 1);
    expect_eq(out, "#, fuzzy\nmsgid \"\\tSay \\\"hi\\\" \\\\ now\\n\"\nmsgstr \"\\tNOW \\\\ \\\"HI\\\" SAY\\n\"\n");
    free(out);
    const char *oct = "msgid \"caf\\303\\251 \\x41\"\nmsgstr \"\"\n";
    st = parse(oct, strlen(oct));
    assert_string_equal(F->unit(st, 0), "café A");
    F->free(st);
}

static void test_plural_forms(void **state)
{
    (void)state;
    /* no header: two forms; a header with nplurals=1: one, from the singular */
    const char *po = "msgid \"one apple\"\nmsgid_plural \"many apples\"\nmsgstr[0] \"\"\nmsgstr[1] \"\"\n";
    char *out = translate(po, strlen(po), 0);
    expect_eq(out, "#, fuzzy\nmsgid \"one apple\"\nmsgid_plural \"many apples\"\nmsgstr[0] \"ONE APPLE\"\n"
                   "msgstr[1] \"MANY APPLES\"\n");
    free(out);
    const char *ja = "msgid \"\"\nmsgstr \"Plural-Forms: nplurals=1; plural=0;\\n\"\n\n"
                     "#, fuzzy, c-format\nmsgid \"one apple\"\nmsgid_plural \"many apples\"\nmsgstr[0] \"\"\n";
    out = translate(ja, strlen(ja), 0);
    expect_eq(out, "msgid \"\"\nmsgstr \"Plural-Forms: nplurals=1; plural=0;\\n\"\n\n"
                   "#, fuzzy, c-format\nmsgid \"one apple\"\nmsgid_plural \"many apples\"\nmsgstr[0] \"ONE APPLE\"\n");
    free(out);
    /* a plural entry already translated is kept */
    const char *done = "msgid \"a\"\nmsgid_plural \"as\"\nmsgstr[0] \"x\"\nmsgstr[1] \"\"\n";
    void *st = parse(done, strlen(done));
    assert_int_equal(F->units(st), 0);
    F->free(st);
}

static void test_crlf_and_file_end(void **state)
{
    (void)state;
    const char *po = "#: a.c:1\r\n#, c-format\r\nmsgid \"Hello %s\"\r\nmsgstr \"\"\r\n\r\n"
                     "msgid \"last one\"\r\nmsgstr \"\"";
    char *out = translate(po, strlen(po), 0);
    expect_eq(out, "#: a.c:1\r\n#, fuzzy, c-format\r\nmsgid \"Hello %s\"\r\nmsgstr \"HELLO %s\"\r\n\r\n"
                   "#, fuzzy\r\nmsgid \"last one\"\r\nmsgstr \"LAST ONE\"");
    free(out);
}

static void expect_error(const char *po, mt_status want, const char *msg_part)
{
    srv_doc_limits lim = srv_doc_default_limits();
    void *st = NULL;
    mt_err err = { 0 };
    mt_status r = F->parse(SRV_DOC_PO, po, strlen(po), &lim, doc_opt(), &st, &err);
    if (r == MT_OK)
        F->free(st);
    assert_int_equal(r, want);
    if (!strstr(err.msg, msg_part))
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err.msg, msg_part);
    assert_non_null(strstr(err.msg, msg_part));
}

static void test_malformed(void **state)
{
    (void)state;
    expect_error("msgid \"a\"\nmsgstr \"\"\n\nmsgid \"open\nmsgstr \"\"\n", MT_ERR_INPUT, "line 4: an unterminated");
    expect_error("msgid \"a\\q\"\nmsgstr \"\"\n", MT_ERR_INPUT, "line 1: a bad escape");
    expect_error("msgid \"a\"\n\"b\\\"\nmsgstr \"\"\n", MT_ERR_INPUT, "line 2: an unterminated");
    expect_error("# c\nmsgstr \"x\"\n", MT_ERR_INPUT, "line 2: msgstr without msgid");
    expect_error("msgid \"a\"\nmsgid_plural \"b\"\nmsgstr[1] \"\"\n", MT_ERR_INPUT, "line 3: a bad plural index");
    expect_error("msgid \"a\"\nmsgstr[0] \"\"\n", MT_ERR_INPUT, "line 2: a bad plural index");
    expect_error("msgid \"a\"\nmsgid_plural \"b\"\nmsgstr[x] \"\"\n", MT_ERR_INPUT, "line 3: a bad plural index");
    expect_error("msgid \"a\"\nmsgid_plural \"b\"\nmsgstr \"\"\n", MT_ERR_INPUT, "line 3");
    expect_error("msgid \"a\"\n\nmsgid \"b\"\nmsgstr \"\"\n", MT_ERR_INPUT, "line 1: msgid without msgstr");
    expect_error("msgid \"a\"\nmsgstr \"\" junk\n", MT_ERR_INPUT, "line 2: text after");
    expect_error("msgid \"a\"\nmsgstr \"\"\nhello\n", MT_ERR_INPUT, "line 3: not a .po line");
    expect_error("msgid \"a\\0b\"\nmsgstr \"\"\n", MT_ERR_INPUT, "line 1: a string holds a NUL");
    expect_error("msgid \"caf\\351\"\nmsgstr \"\"\n", MT_ERR_INPUT, "line 1: the msgid is not valid UTF-8");
    expect_error("\"a\"\n", MT_ERR_INPUT, "line 1: a string without a keyword");
}

static void test_limits(void **state)
{
    (void)state;
    const char *po = "msgid \"First\"\nmsgstr \"\"\n\nmsgid \"Second, longer than ten\"\nmsgstr \"\"\n";
    srv_doc_limits lim = srv_doc_default_limits();
    void *st = NULL;
    mt_err err = { 0 };
    lim.max_units = 1;
    assert_int_equal(F->parse(SRV_DOC_PO, po, strlen(po), &lim, doc_opt(), &st, &err), MT_ERR_TOO_LONG);
    assert_non_null(strstr(err.msg, "line 4"));
    lim = srv_doc_default_limits();
    lim.max_unit_bytes = 10;
    assert_int_equal(F->parse(SRV_DOC_PO, po, strlen(po), &lim, doc_opt(), &st, &err), MT_ERR_TOO_LONG);
    assert_non_null(strstr(err.msg, "limit of a unit is 10"));
    lim.max_unit_bytes = 100;
    lim.max_units = 2;
    st = parse_lim(po, strlen(po), &lim);
    F->free(st);
}

static void test_sniff(void **state)
{
    (void)state;
    size_t n;
    char *s = slurp("tests/fixtures/documents/sample.po", &n);
    assert_true(srv_doc_is_po(s, n));
    free(s);
    assert_true(srv_doc_is_po("msgctxt \"m\"\nmsgid \"a\"\nmsgstr[0] \"\"\n", 36));
    const char *no[] = { "Hello msgid \"a\"\nmsgstr \"\"\n", "msgid \"a\"\n", "# only\n", "",
                         "1\n00:00:01,000 --> 00:00:02,000\nmsgid \"x\"\nmsgstr \"\"\n" };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_false(srv_doc_is_po(no[i], strlen(no[i])));
}

/* Every line that is not a msgstr line or a flags line, of s: one string. */
static char *skeleton(const char *s)
{
    mt_sbuf b = { 0 };
    mt_sb_add(&b, "", 0);
    int in_str = 0;
    for (const char *l = s; *l;) {
        const char *e = l + strcspn(l, "\n");
        if (!strncmp(l, "msgstr", 6))
            in_str = 1;
        else if (*l != '"')
            in_str = 0;
        if (!in_str && strncmp(l, "#,", 2)) {
            mt_sb_add(&b, l, (size_t)(e - l));
            mt_sb_add(&b, "|", 1);
        }
        l = *e ? e + 1 : e;
    }
    return b.p;
}

/* Under each fake translation the output parses again, with the same
 * msgids, contexts and comments, and no entry left to fill that was filled. */
static void test_structure_kept(void **state)
{
    (void)state;
    size_t n;
    char *s = slurp("tests/fixtures/documents/sample.po", &n);
    char *a = skeleton(s);
    for (int mode = 0; mode < MODES; mode++) {
        char *out = translate(s, n, mode);
        char *b = skeleton(out);
        assert_string_equal(a, b);
        void *st = parse(out, strlen(out));
        assert_int_equal(F->units(st), mode == 4 ? (int)(sizeof FIXTURE_UNITS / sizeof FIXTURE_UNITS[0]) : 0);
        F->free(st);
        if (mode == 4)
            expect_eq(out, s);          /* every entry refused: the file as it was */
        free(b);
        free(out);
    }
    free(a);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_translated),
        cmocka_unit_test(test_unset_is_byte_exact),
        cmocka_unit_test(test_placeholders),
        cmocka_unit_test(test_escapes_and_whitespace),
        cmocka_unit_test(test_plural_forms),
        cmocka_unit_test(test_crlf_and_file_end),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_structure_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
