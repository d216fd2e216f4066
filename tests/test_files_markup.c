/* test_files_markup: Markdown and XLIFF files through POST /translate_file on
 * the real server with the shipped model (models/en-fr), over loopback as
 * `curl -F` sends them.
 *
 * For tests/fixtures/markdown/README.md and the XLIFF fixtures (1.2,
 * 2.0): 200, the file at translatedFileUrl named after the source with the
 * format's extension and MIME type; read back by independent readers
 * (tests/documents/check_markup.py: markdown-it, translate-toolkit's XLIFF
 * reader, lxml): the same blocks or units, code, inline code, link targets,
 * HTML, front matter, notes, kept targets and every byte outside the units
 * the same, inline codes each once, placeholders byte for byte, the target
 * language and the states set; each translated unit's text (inline codes
 * aside) exactly POST /translate's translation of its source text.  Then a
 * file with nothing to translate comes back byte for byte.  Refused:
 * malformed XLIFF (400 with its line), XLIFF nested past --max-html-depth
 * (413), a structured file of no format we read (415, naming Markdown and
 * XLIFF among the formats); and the CLI, `mtserve translate --file`, on a
 * Markdown file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture_file.h"
#include "harness.h"

static server srv;

static int setup(void **state)
{
    (void)state;
    const char *args[] = { "--model", "en-fr=models/en-fr", "--no-access-log", NULL };
    return server_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    int st = server_stop(&srv);
    kill_all_children();
    return st == 0 ? 0 : -1;
}


/* The model's translation of text, as POST /translate gives it (placeholders on, its default). */
static char *translate(const char *text)
{
    json_t *q = json_pack("{s:s,s:s}", "text", text, "model", "en-fr");
    char *body = json_dumps(q, 0);
    reply r = post(&srv, "/translate", body);
    char why[256];
    char *t = reply_text(&r, why, sizeof why);
    if (!t)
        print_error("%s\n", why);
    reply_free(&r);
    free(body);
    json_decref(q);
    return t;
}

static int is_sp(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* s without its leading and trailing ASCII whitespace (malloc'd). */
static char *trimmed(const char *s)
{
    while (*s && is_sp(*s))
        s++;
    size_t n = strlen(s);
    while (n && is_sp(s[n - 1]))
        n--;
    return strndup(s, n);
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* The file translated: its rendering fetched; *len its size. */
static char *translated(const char *name, const char *data, size_t len, const char *want_name, const char *want_mime,
                        size_t *out_len)
{
    http_buf b;
    long st = post_file(&srv, name, data, len, &b, 300000L, "source", "en", "target", "fr", NULL);
    if (st != 200)
        print_error("%s: %ld %s\n", name, st, b.p ? b.p : "");
    assert_int_equal(st, 200);
    json_error_t e;
    json_t *j = json_loads(b.p, 0, &e);
    const char *url = json_string_value(json_object_get(j, "translatedFileUrl"));
    assert_non_null(url);
    assert_non_null(strstr(url, want_name));
    reply r = get(&srv, strchr(strstr(url, "://") + 3, '/'));
    assert_int_equal(r.status, 200);
    char ct[128];
    assert_true(header(&r, "Content-Type", ct, sizeof ct));
    assert_non_null(strstr(ct, want_mime));
    char *out = malloc(r.len + 1);
    memcpy(out, r.body, r.len);
    out[r.len] = 0;
    *out_len = r.len;
    reply_free(&r);
    json_decref(j);
    free(b.p);
    return out;
}

/* One fixture through the server and check_markup.py; returns the units translated. */
static int check_fixture(const char *fixture, const char *format, const char *want_name, const char *want_mime)
{
    char path[256], src_tmp[] = "/tmp/markup_srcXXXXXX", out_tmp[] = "/tmp/markup_outXXXXXX";
    snprintf(path, sizeof path, "tests/fixtures/%s", fixture);
    size_t len, out_len;
    char *data = slurp(path, &len);
    assert_non_null(data);
    const char *base = strrchr(fixture, '/') ? strrchr(fixture, '/') + 1 : fixture;
    char *out = translated(base, data, len, want_name, want_mime, &out_len);
    int fd1 = mkstemp(src_tmp), fd2 = mkstemp(out_tmp);
    assert_true(fd1 >= 0 && fd2 >= 0);
    close(fd1);
    close(fd2);
    write_file(src_tmp, data, len);
    write_file(out_tmp, out, out_len);
    char cmd[768];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/documents/check_markup.py %s %s %s fr", format, src_tmp, out_tmp);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t e;
    json_t *pairs = json_loadf(p, 0, &e);             /* the reader's pairs, on its stdout */
    int rc = pclose(p);
    if (rc != 0)
        print_error("check_markup failed on %s:\n%s\n", fixture, out);
    assert_int_equal(rc, 0);
    assert_true(json_is_array(pairs));
    size_t i;
    json_t *pair;
    int same = 0;
    json_array_foreach(pairs, i, pair) {
        char *src = trimmed(json_string_value(json_array_get(pair, 0)));
        char *got = trimmed(json_string_value(json_array_get(pair, 1)));
        char *want = translate(src);
        assert_non_null(want);
        char *want_t = trimmed(want);
        if (strcmp(got, want_t))
            print_error("%s: '%s' -> '%s', POST /translate gives '%s'\n", fixture, src, got, want_t);
        assert_string_equal(got, want_t);
        same += !strcmp(src, got);
        free(src);
        free(got);
        free(want);
        free(want_t);
    }
    int count = (int)json_array_size(pairs);
    assert_true(same < count);          /* the model did translate */
    json_decref(pairs);
    unlink(src_tmp);
    unlink(out_tmp);
    free(out);
    free(data);
    return count;
}

static void test_markdown(void **state)
{
    /* 3 headings, 2 paragraphs, the list's 4 items, the quote, 6 cells, 3 more paragraphs */
    assert_int_equal(check_fixture("markdown/README.md", "md", "README.fr.md", "text/markdown"), 19);
}

static void test_xliff12(void **state)
{
    /* not the reviewed target, not translate="no" */
    assert_int_equal(check_fixture("xliff/messages.en-fr.xlf", "xliff12", "messages.en-fr.fr.xlf",
                                   "application/xliff+xml"), 5);
}

static void test_xliff20(void **state)
{
    assert_int_equal(check_fixture("xliff/app.en-fr.xlf", "xliff20", "app.en-fr.fr.xlf", "application/xliff+xml"), 4);
}

/* Files with nothing to translate come back byte for byte. */
static void test_untouched_bytes(void **state)
{
    const char *md = "---\ntitle: x\n---\n\n```\ncode\n```\n\n<div>\nraw\n</div>\n\n    indented\n";
    size_t n;
    char *out = translated("code.md", md, strlen(md), "code.fr.md", "text/markdown", &n);
    assert_int_equal(n, strlen(md));
    assert_memory_equal(out, md, n);
    free(out);
    const char *x = "<?xml version=\"1.0\"?>\r\n<xliff version=\"1.2\"><file target-language=\"de\"><body>\r\n"
                    "<trans-unit id=\"a\" translate=\"no\"><source>The house</source></trans-unit>\r\n"
                    "<trans-unit id=\"b\"><source>The garden</source><target>Le jardin</target></trans-unit>\r\n"
                    "</body></file></xliff>\r\n";
    out = translated("keep.xlf", x, strlen(x), "keep.fr.xlf", "application/xliff+xml", &n);
    assert_int_equal(n, strlen(x));
    assert_memory_equal(out, x, n);
    free(out);
}

static void expect_refused(const char *name, const char *data, long want, const char *needle)
{
    http_buf b;
    long st = post_file(&srv, name, data, strlen(data), &b, 300000L, "source", "en", "target", "fr", NULL);
    if (st != want || !b.p || !strstr(b.p, needle))
        print_error("%s: want %ld with '%s', got %ld: %s\n", name, want, needle, st, b.p ? b.p : "(none)");
    assert_int_equal(st, want);
    assert_non_null(strstr(b.p, needle));
    free(b.p);
}

static void test_refused(void **state)
{
    expect_refused("m.xlf", "<?xml version=\"1.0\"?>\n<xliff version=\"1.2\">\n<file><body><trans-unit id=\"1\">"
                   "<source>a</target></trans-unit></body></file></xliff>", 400, "line 3");
    expect_refused("m.xlf", "<?xml version=\"1.0\"?><catalog><item>a</item></catalog>", 415, ".xlf");
    expect_refused("upload", "<?xml version=\"1.0\"?><catalog><item>a</item></catalog>", 415, ".md");
    char deep[8192] = "<xliff version=\"2.0\"><file><unit><segment><source>";
    for (int i = 0; i < 300; i++)
        strcat(deep, "<pc>");
    strcat(deep, "a");
    for (int i = 0; i < 300; i++)
        strcat(deep, "</pc>");
    strcat(deep, "</source></segment></unit></file></xliff>");
    expect_refused("deep.xlf", deep, 413, "deep");
}

/* The form's overwrite=true (srv_doc_options): an XLIFF target that holds
 * text is translated again, as POST /translate translates its source, its
 * state set; translate="no" still kept.  Without it the target is kept
 * (test_untouched_bytes); a value other than a boolean is 400.  The CLI's
 * --overwrite does the same. */
static void test_overwrite(void **state)
{
    const char *x = "<?xml version=\"1.0\"?>\n<xliff version=\"1.2\"><file target-language=\"de\"><body>\n"
                    "<trans-unit id=\"a\" translate=\"no\"><source>The house</source><target>Das Haus</target></trans-unit>\n"
                    "<trans-unit id=\"b\"><source>The garden is green.</source><target>Le jardin</target></trans-unit>\n"
                    "</body></file></xliff>\n";
    char *want = translate("The garden is green.");
    assert_non_null(want);
    char target[512];
    snprintf(target, sizeof target, "<target state=\"needs-review-translation\">%s</target>", want);
    http_buf b;
    long st = post_file(&srv, "ow.xlf", x, strlen(x), &b, 300000L, "source", "en", "target", "fr", "overwrite", "true",
                        NULL);
    assert_int_equal(st, 200);
    json_t *j = json_loads(b.p, 0, NULL);
    const char *url = json_string_value(json_object_get(j, "translatedFileUrl"));
    assert_non_null(url);
    reply r = get(&srv, strchr(strstr(url, "://") + 3, '/'));
    assert_int_equal(r.status, 200);
    char *out = strndup(r.body, r.len);
    if (!strstr(out, target))
        print_error("'%s' not in:\n%s\n", target, out);
    assert_non_null(strstr(out, target));
    assert_null(strstr(out, "Le jardin<"));
    assert_non_null(strstr(out, "<source>The house</source><target>Das Haus</target>"));
    assert_non_null(strstr(out, "target-language=\"fr\""));
    free(out);
    reply_free(&r);
    json_decref(j);
    free(b.p);
    st = post_file(&srv, "ow.xlf", x, strlen(x), &b, 300000L, "source", "en", "target", "fr", "overwrite", "maybe",
                   NULL);
    assert_int_equal(st, 400);
    assert_non_null(strstr(b.p, "overwrite"));
    free(b.p);

    char path[] = "/tmp/markup_owXXXXXX.xlf", cmd[512];
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, x, strlen(x)), (ssize_t)strlen(x));
    close(fd);
    for (int ow = 0; ow < 2; ow++) {
        snprintf(cmd, sizeof cmd, "%s translate --model models/en-fr --file %s%s 2>/dev/null", getenv("MTSERVE_BIN"),
                 path, ow ? " --overwrite" : "");
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        char buf[4096];
        size_t n = fread(buf, 1, sizeof buf - 1, p);
        buf[n] = 0;
        assert_int_equal(pclose(p), 0);
        assert_true(ow ? strstr(buf, target) != NULL : strstr(buf, "<target>Le jardin</target>") != NULL);
    }
    unlink(path);
    free(want);
}

/* `mtserve translate --file`: the CLI reads the same formats. */
static void test_cli(void **state)
{
    char path[] = "/tmp/markup_cliXXXXXX.md";
    int fd = mkstemps(path, 3);
    assert_true(fd >= 0);
    const char *md = "# The house\n\nThe garden is **green**.\n\n```\nkeep me\n```\n";
    assert_int_equal(write(fd, md, strlen(md)), (ssize_t)strlen(md));
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s translate --model models/en-fr --file %s 2>/dev/null", getenv("MTSERVE_BIN"), path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[4096];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    assert_int_equal(pclose(p), 0);
    unlink(path);
    assert_true(!strncmp(out, "# ", 2));
    assert_non_null(strstr(out, "**"));
    assert_non_null(strstr(out, "\n\n```\nkeep me\n```\n"));
    assert_null(strstr(out, "The garden"));
}

static void test_frontend_lists(void **state)
{
    reply r = get(&srv, "/frontend/settings");
    json_t *j = expect_json(&r, 200);
    json_t *f = json_object_get(j, "supportedFilesFormat");
    const char *want[] = { ".md", ".markdown", ".xlf", ".xliff" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int seen = 0;
        for (size_t k = 0; k < json_array_size(f); k++)
            seen |= !strcmp(json_string_value(json_array_get(f, k)), want[i]);
        if (!seen)
            print_error("%s not in supportedFilesFormat\n", want[i]);
        assert_true(seen);
    }
    json_decref(j);
    reply_free(&r);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_markdown),       cmocka_unit_test(test_xliff12), cmocka_unit_test(test_xliff20),
        cmocka_unit_test(test_untouched_bytes), cmocka_unit_test(test_refused), cmocka_unit_test(test_cli),
        cmocka_unit_test(test_overwrite),
        cmocka_unit_test(test_frontend_lists),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
