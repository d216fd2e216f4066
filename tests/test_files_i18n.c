/* test_files_i18n: i18n resource files through POST /translate_file on the
 * real server with the shipped model (models/en-fr), over loopback as
 * `curl -F` sends them.
 *
 * For each of tests/fixtures/i18n/ (i18next JSON, ARB, Java .properties,
 * Apple .strings with CRLF, Android strings.xml, Rails YAML): 200, the file
 * at translatedFileUrl named after the source with the format's extension
 * and MIME type; read back by an independent reader
 * (tests/documents/check_i18n.py: Python's json and yaml, xml.etree, readers
 * of Java's and Apple's rules): the same keys, order and structure,
 * everything not translated equal (ARB metadata, translatable="false",
 * references), Android markup the same elements, ARB's @@locale and the
 * Rails top key the target, placeholders ({{x}}, %1$s, %@, {0}, %d) each as
 * often; and each translated value, trimmed, exactly POST /translate's
 * translation of its source value (the plain-text path, its placeholders
 * kept the same way), the whitespace around it as written.  Then the bytes
 * outside the values: a file with every value blank comes back byte for
 * byte.  Refused: a malformed JSON (400 naming line and column), a
 * .properties with a bad \u escape (400 naming the line), a malformed Rails
 * file (400), an XML file whose root is not <resources>, YAML that is not a
 * Rails locale file by name and by content, a JSON array (415, naming the
 * supported formats). */
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


/* One fixture through the server and check_i18n.py; returns the values translated. */
static int check_fixture(const char *fixture, const char *format, const char *want_name, const char *want_mime)
{
    char path[256], src_tmp[] = "/tmp/i18n_srcXXXXXX", out_tmp[] = "/tmp/i18n_outXXXXXX";
    snprintf(path, sizeof path, "tests/fixtures/i18n/%s", fixture);
    size_t len, out_len;
    char *data = slurp(path, &len);
    assert_non_null(data);
    char *out = translate_file_en_fr(&srv, fixture, data, len, want_name, want_mime, &out_len);
    int fd1 = mkstemp(src_tmp), fd2 = mkstemp(out_tmp);
    assert_true(fd1 >= 0 && fd2 >= 0);
    close(fd1);
    close(fd2);
    harness_write_file(src_tmp, data, len);
    harness_write_file(out_tmp, out, out_len);
    char cmd[768];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/documents/check_i18n.py %s %s %s fr", format, src_tmp, out_tmp);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t e;
    json_t *pairs = json_loadf(p, 0, &e);             /* the reader's pairs, on its stdout */
    int rc = pclose(p);
    if (rc != 0)
        print_error("check_i18n failed on %s:\n%s\n", fixture, out);
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

static void test_json(void **state)
{
    assert_int_equal(check_fixture("en.json", "json", "en.fr.json", "application/json"), 9);
}

static void test_arb(void **state)
{
    assert_int_equal(check_fixture("app_en.arb", "arb", "app_en.fr.arb", "application/json"), 2);
}

static void test_properties(void **state)
{
    assert_int_equal(check_fixture("messages.properties", "properties", "messages.fr.properties",
                                   "text/x-java-properties"), 6);
}

static void test_strings(void **state)
{
    assert_int_equal(check_fixture("Localizable.strings", "strings", "Localizable.fr.strings", "text/plain"), 4);
}

static void test_yaml(void **state)
{
    /* hello, greeting, notice, blank, too_long one/other, order's 3 items, help (a block scalar), and
     * shared, which the reader sees twice (its alias "again" is the same node); not the date format */
    assert_int_equal(check_fixture("en.yml", "yaml", "en.fr.yml", "application/yaml"), 12);
}

static void test_android(void **state)
{
    /* welcome, quoted, salt, bold (its <b> placed by the alignment), cdata, 2 seasons, 2 trees; not
     * app_name (translatable="false") nor link (a reference) */
    assert_int_equal(check_fixture("strings.xml", "android", "strings.fr.xml", "application/xml"), 9);
}

/* A file whose values are blank, or ones a program reads (ARB's metadata), comes back byte for byte. */
static void test_untouched_bytes(void **state)
{
    const char *in = "{\r\n\t\"@@x\" : \"The house\" ,\"a\":[ \"\", \"  \" , 1.50e+2 ],\n\"@b\" :{\"description\":\"Cold\"}}\n";
    size_t n;
    char *out = translate_file_en_fr(&srv, "keep.json", in, strlen(in), "keep.fr.json", "application/json", &n);
    assert_int_equal(n, strlen(in));
    assert_memory_equal(out, in, n);
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
    expect_refused("en.json", "{\n  \"a\": \"b\",\n  \"c\": \n}", 400, "line 4");
    expect_refused("m.properties", "a=b\nc=\\u00zz\n", 400, "line 2");
    expect_refused("strings.xml", "<resources><string name=\"a\">x</strin></resources>", 400, "line 1");
    expect_refused("AndroidManifest.xml", "<manifest package=\"a.b\"/>", 415, ".properties");
    expect_refused("docker-compose.yml", "services:\n  web:\n    image: nginx\n", 415, "Android's strings.xml");
    expect_refused("upload", "services:\n  web:\n    image: nginx\n", 415, ".json");
    expect_refused("en.yml", "en:\n  a: [b\n  c: d\n", 400, "line");
    expect_refused("upload", "[\"The house\", \"The garden\"]", 415, ".arb");
    expect_refused("doc.xml", "<?xml version=\"1.0\"?><catalog version=\"1.2\"/>", 415, ".strings");
}

static void test_frontend_lists(void **state)
{
    reply r = get(&srv, "/frontend/settings");
    json_t *j = expect_json(&r, 200);
    json_t *f = json_object_get(j, "supportedFilesFormat");
    const char *want[] = { ".json", ".arb", ".properties", ".strings", ".xml", ".yml" };
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
        cmocka_unit_test(test_json),           cmocka_unit_test(test_arb),     cmocka_unit_test(test_properties),
        cmocka_unit_test(test_strings),        cmocka_unit_test(test_android), cmocka_unit_test(test_untouched_bytes),
        cmocka_unit_test(test_yaml),           cmocka_unit_test(test_refused),
        cmocka_unit_test(test_frontend_lists),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
