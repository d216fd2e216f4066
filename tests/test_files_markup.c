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
 * XLIFF among the formats); malformed pptx, xlsx and EPUB built here with
 * libzip (400 naming the part), a slide nested too deep and a zip bomb
 * (413), Markdown whose inline markup nests too deep (413 with its line);
 * XLIFF's overwrite=true (the form's, the CLI's --overwrite); and the CLI,
 * `mtserve translate --file`, on a Markdown file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <zip.h>

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


/* One fixture through the server and check_markup.py; returns the units translated. */
static int check_fixture(const char *fixture, const char *format, const char *want_name, const char *want_mime)
{
    char path[256], src_tmp[] = "/tmp/markup_srcXXXXXX", out_tmp[] = "/tmp/markup_outXXXXXX";
    snprintf(path, sizeof path, "tests/fixtures/%s", fixture);
    size_t len, out_len;
    char *data = slurp(path, &len);
    assert_non_null(data);
    const char *base = strrchr(fixture, '/') ? strrchr(fixture, '/') + 1 : fixture;
    char *out = translate_file_en_fr(&srv, base, data, len, want_name, want_mime, &out_len);
    int fd1 = mkstemp(src_tmp), fd2 = mkstemp(out_tmp);
    assert_true(fd1 >= 0 && fd2 >= 0);
    close(fd1);
    close(fd2);
    harness_write_file(src_tmp, data, len);
    harness_write_file(out_tmp, out, out_len);
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
        char *src = trimmed_copy(json_string_value(json_array_get(pair, 0)));
        char *got = trimmed_copy(json_string_value(json_array_get(pair, 1)));
        char *want = translate_en_fr(&srv, src);
        assert_non_null(want);
        char *want_t = trimmed_copy(want);
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
    char *out = translate_file_en_fr(&srv, "code.md", md, strlen(md), "code.fr.md", "text/markdown", &n);
    assert_int_equal(n, strlen(md));
    assert_memory_equal(out, md, n);
    free(out);
    const char *x = "<?xml version=\"1.0\"?>\r\n<xliff version=\"1.2\"><file target-language=\"de\"><body>\r\n"
                    "<trans-unit id=\"a\" translate=\"no\"><source>The house</source></trans-unit>\r\n"
                    "<trans-unit id=\"b\"><source>The garden</source><target>Le jardin</target></trans-unit>\r\n"
                    "</body></file></xliff>\r\n";
    out = translate_file_en_fr(&srv, "keep.xlf", x, strlen(x), "keep.fr.xlf", "application/xliff+xml", &n);
    assert_int_equal(n, strlen(x));
    assert_memory_equal(out, x, n);
    free(out);
}

/* data[0..len) through POST /translate_file: status want, its error naming needle. */
static void expect_refused_n(const char *name, const char *data, size_t len, long want, const char *needle)
{
    http_buf b;
    long st = post_file(&srv, name, data, len, &b, 300000L, "source", "en", "target", "fr", NULL);
    if (st != want || !b.p || !strstr(b.p, needle))
        print_error("%s: want %ld with '%s', got %ld: %s\n", name, want, needle, st, b.p ? b.p : "(none)");
    assert_int_equal(st, want);
    assert_non_null(strstr(b.p, needle));
    free(b.p);
}

static void expect_refused(const char *name, const char *data, long want, const char *needle)
{
    expect_refused_n(name, data, strlen(data), want, needle);
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
    char *want = translate_en_fr(&srv, "The garden is green.");
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

/* ---- the zip formats' refusals, archives built here (libzip) ---------------- */

typedef struct {
    const char *name, *data;
    size_t      len;            /* 0: strlen(data) */
} zentry;

/* A zip of e[0..n), deflated ("mimetype" stored, first, as EPUB has it): malloc'd, *len. */
static char *mkzip(const zentry *e, int n, size_t *len)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &ze);
    assert_non_null(src);
    zip_t *za = zip_open_from_source(src, ZIP_TRUNCATE, &ze);
    assert_non_null(za);
    zip_source_keep(src);
    for (int i = 0; i < n; i++) {
        zip_source_t *s = zip_source_buffer(za, e[i].data, e[i].len ? e[i].len : strlen(e[i].data), 0);
        assert_non_null(s);
        zip_int64_t k = zip_file_add(za, e[i].name, s, ZIP_FL_ENC_UTF_8);
        assert_true(k >= 0);
        zip_set_file_compression(za, (zip_uint64_t)k, strcmp(e[i].name, "mimetype") ? ZIP_CM_DEFLATE : ZIP_CM_STORE,
                                 0);
    }
    assert_int_equal(zip_close(za), 0);
    zip_stat_t st;
    assert_int_equal(zip_source_stat(src, &st), 0);
    assert_int_equal(zip_source_open(src), 0);
    char *b = malloc(st.size);
    assert_non_null(b);
    assert_int_equal(zip_source_read(src, b, st.size), (zip_int64_t)st.size);
    zip_source_close(src);
    zip_source_free(src);
    zip_error_fini(&ze);
    *len = st.size;
    return b;
}

static void zip_refused(const char *name, const zentry *e, int n, long want, const char *needle)
{
    size_t len;
    char *z = mkzip(e, n, &len);
    expect_refused_n(name, z, len, want, needle);
    free(z);
}

#define CT_XML "<?xml version=\"1.0\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\"/>"
#define P_DECL "xmlns:p=\"http://schemas.openxmlformats.org/presentationml/2006/main\" " \
               "xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\""
#define S_DECL "xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\""
#define CONTAINER_XML "<?xml version=\"1.0\"?>\n<container version=\"1.0\" xmlns=\"urn:oasis:names:tc:" \
    "opendocument:xmlns:container\"><rootfiles><rootfile full-path=\"OEBPS/content.opf\" " \
    "media-type=\"application/oebps-package+xml\"/></rootfiles></container>"
#define OPF_XML "<?xml version=\"1.0\"?>\n<package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\" " \
    "unique-identifier=\"id\"><metadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:identifier " \
    "id=\"id\">x</dc:identifier><dc:title>A book</dc:title><dc:language>en</dc:language></metadata><manifest>" \
    "<item id=\"c1\" href=\"ch1.xhtml\" media-type=\"application/xhtml+xml\"/></manifest><spine><itemref " \
    "idref=\"c1\"/></spine></package>"

/* Malformed pptx, xlsx and EPUB: 400 naming the part and what is wrong;
 * XML nested past --max-html-depth and a zip bomb (entries that inflate past
 * max_inflated, refused from their sizes before one byte is inflated): 413.
 * Markdown: nested inline markup past the depth, 413 with its line (no byte
 * string is malformed Markdown: one with a NUL or not UTF-8 is not text, 415). */
static void test_zip_formats_refused(void **state)
{
    const zentry pptx[] = { { "[Content_Types].xml", CT_XML, 0 },
                            { "ppt/presentation.xml", "<p:presentation " P_DECL "/>", 0 },
                            { "ppt/slides/slide1.xml", "<p:sld " P_DECL ">\n<p:cSld><a:p><a:r>\n<a:t>The house"
                                                       "</a:r></a:p></p:cSld></p:sld>", 0 } };
    zip_refused("deck.pptx", pptx, 3, 400, "ppt/slides/slide1.xml");
    zip_refused("deck.pptx", pptx, 3, 400, "line 3");
    char *deep = malloc(16384);
    strcpy(deep, "<p:sld " P_DECL "><p:cSld><a:p><a:r><a:t>x</a:t></a:r></a:p>");
    for (int i = 0; i < 300; i++)
        strcat(deep, "<p:grpSp>");
    for (int i = 0; i < 300; i++)
        strcat(deep, "</p:grpSp>");
    strcat(deep, "</p:cSld></p:sld>");
    const zentry pptx_deep[] = { pptx[0], pptx[1], { "ppt/slides/slide1.xml", deep, 0 } };
    zip_refused("deep.pptx", pptx_deep, 3, 413, "deep");
    free(deep);

    const zentry xlsx[] = { { "[Content_Types].xml", CT_XML, 0 },
                            { "xl/workbook.xml", "<workbook " S_DECL "><sheets/></workbook>", 0 },
                            { "xl/sharedStrings.xml", "<sst " S_DECL "><si><t>Rent</si></sst>", 0 } };
    zip_refused("book.xlsx", xlsx, 3, 400, "xl/sharedStrings.xml");

    const zentry epub_no_opf[] = { { "mimetype", "application/epub+zip", 0 },
                                   { "META-INF/container.xml", CONTAINER_XML, 0 } };
    zip_refused("book.epub", epub_no_opf, 2, 400, "OEBPS/content.opf is not in the archive");
    const zentry epub_bad[] = { epub_no_opf[0], epub_no_opf[1], { "OEBPS/content.opf", OPF_XML, 0 },
                                { "OEBPS/ch1.xhtml", "<html xmlns=\"http://www.w3.org/1999/xhtml\"><body>\n<p>The "
                                                     "end.</body></html>", 0 } };
    zip_refused("book.epub", epub_bad, 4, 400, "OEBPS/ch1.xhtml");

    /* 14 entries of 20 MB of zeros: 280 MB inflated (the limit is 256 MB), some 300 KB sent */
    size_t fill = 20u << 20;
    char *zeros = calloc(1, fill);
    char names[14][32];
    zentry bomb[17] = { pptx[0], pptx[1], { "ppt/slides/slide1.xml", "<p:sld " P_DECL "/>", 0 } };
    for (int i = 0; i < 14; i++) {
        snprintf(names[i], sizeof names[i], "ppt/media/fill%d.bin", i);
        bomb[3 + i] = (zentry){ names[i], zeros, fill };
    }
    size_t len;
    char *z = mkzip(bomb, 17, &len);
    printf("zip bomb: %zu bytes inflating to %zu\n", len, 14 * fill);
    assert_true(len < 1u << 20);
    expect_refused_n("bomb.pptx", z, len, 413, "max_inflated");
    free(z);
    const zentry epub_ok[] = { epub_no_opf[0], epub_no_opf[1], { "OEBPS/content.opf", OPF_XML, 0 },
                                 { "OEBPS/ch1.xhtml", "<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><p>"
                                                      "The end.</p></body></html>", 0 },
                                 { "OEBPS/fill.bin", zeros, fill }, { "OEBPS/fill2.bin", zeros, fill },
                                 { "OEBPS/fill3.bin", zeros, fill } };
    /* the same entries, three of them, under the limit: the book is translated */
    z = mkzip(epub_ok, 7, &len);
    http_buf b;
    long st = post_file(&srv, "big.epub", z, len, &b, 300000L, "source", "en", "target", "fr", NULL);
    if (st != 200)
        print_error("60 MB inflated: %ld %s\n", st, b.p);
    assert_int_equal(st, 200);
    free(b.p);
    free(z);
    free(zeros);

    char md[4096] = "# Title\n\nThe ";
    for (int i = 0; i < 300; i++)
        strcat(md, "*a ");
    strcat(md, "house");
    for (int i = 0; i < 300; i++)
        strcat(md, " a*");
    strcat(md, "\n");
    expect_refused("deep.md", md, 413, "line 3");
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
        cmocka_unit_test(test_overwrite), cmocka_unit_test(test_zip_formats_refused),
        cmocka_unit_test(test_frontend_lists),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
