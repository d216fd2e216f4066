/* test_files: POST /translate_file and its companions against the real
 * server (models/en-fr and models/fr-en), driven by libcurl's multipart
 * client as `curl -F` does.
 *
 * - a text file: LibreTranslate's reply {"translatedFileUrl"}, the file at
 *   that URL has the input's line structure and each unit's text is the
 *   model's translation of it (POST /translate of the same unit, greedy);
 * - an HTML file: its markup kept (the tags in order);
 * - async: 202 with an id; GET /translate_file/ID moves monotonically to
 *   "done" (done never decreases, total fixed); the download works; DELETE
 *   deletes it, then 404;
 * - source "auto" detects the file's language (French text towards en);
 * - refused, with the status and a JSON error naming the problem: no file
 *   part (400), no target (400), binary data (415, naming the formats), a file
 *   over --max-file-bytes (413), a file over --max-file-units (413), a
 *   malformed body (400), an unknown job (404), a JSON body (400), a
 *   malformed .srt (400 naming the line), a truncated .docx (400/415);
 * - a client that leaves a big sync job cancels it: GET on its id says
 *   "cancelled" and the server keeps answering;
 * - the server still answers /health after all of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"

static server srv;

static int setup(void **state)
{
    (void)state;
    const char *args[] = { "--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en", "--max-file-bytes",
                           "300K", "--max-file-units", "2000", "--no-access-log", NULL };
    return server_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    int st = server_stop(&srv);
    kill_all_children();
    return st == 0 ? 0 : -1;
}


static json_t *body_json(const http_buf *b)
{
    json_error_t e;
    json_t *j = b->p ? json_loads(b->p, 0, &e) : NULL;
    if (!j)
        print_error("not JSON: %s\n", b->p ? b->p : "(none)");
    return j;
}

/* The path of an absolute URL on our server. */
static const char *url_path(const char *url)
{
    const char *p = strstr(url, "://");
    return p ? strchr(p + 3, '/') : url;
}

/* The model's translation of one unit, as POST /translate gives it. */
static char *translate(const char *text) { return translate_en_fr(&srv, text); }

static void test_text_file(void **state)
{
    (void)state;
    const char *in = "The library is free software.\n\nIt runs on every system\nthat has a compiler.\n";
    http_buf b;
    assert_int_equal(post_file(&srv, "notes.txt", in, strlen(in), &b, 0, "source", "en", "target", "fr", NULL), 200);
    json_t *j = body_json(&b);
    const char *url = json_string_value(json_object_get(j, "translatedFileUrl"));
    assert_non_null(url);
    assert_non_null(strstr(url, "/download_file/"));
    assert_non_null(strstr(url, "notes.fr.txt"));
    reply r = get(&srv, url_path(url));
    assert_int_equal(r.status, 200);
    char ct[128];
    assert_true(header(&r, "Content-Type", ct, sizeof ct) && strstr(ct, "text/plain"));
    assert_true(header(&r, "Content-Disposition", ct, sizeof ct));     /* a browser saves it, as LibreTranslate's */
    assert_string_equal(ct, "attachment; filename=\"notes.fr.txt\"");
    /* the structure: four lines, the second blank, a final newline */
    int lines = 0;
    for (const char *p = r.body; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 4);
    assert_true(r.body[strlen(r.body) - 1] == '\n');
    char *second = strchr(r.body, '\n');
    assert_true(second[1] == '\n');
    /* the text: unit 1 is the model's translation of its line; unit 2's two
     * lines joined are the translation of the two source lines joined */
    char *t1 = translate("The library is free software."), *t2 = translate("It runs on every system that has a compiler.");
    assert_non_null(t1);
    assert_non_null(t2);
    assert_memory_equal(r.body, t1, strlen(t1));
    char joined[1024];
    snprintf(joined, sizeof joined, "%s", second + 2);
    joined[strlen(joined) - 1] = 0;
    char *nl = strchr(joined, '\n');
    assert_non_null(nl);
    *nl = ' ';
    assert_string_equal(joined, t2);
    free(t1);
    free(t2);
    reply_free(&r);
    json_decref(j);
    free(b.p);
}

/* Placeholders in a document: kept byte for byte, as /translate keeps them
 * (its default), in a text file and in an HTML page's text. */
static void test_placeholders_file(void **state)
{
    (void)state;
    static const char *const unit = "Open {file} at https://example.com/a_b and print %s now.";
    char txt[256], html[512];
    snprintf(txt, sizeof txt, "%s\n", unit);
    snprintf(html, sizeof html, "<!DOCTYPE html><html><body><p>%s</p></body></html>", unit);
    const char *names[2] = {"ph.txt", "ph.html"}, *data[2] = {txt, html};
    char *want = translate(unit);
    assert_non_null(want);
    assert_true(strstr(want, "{file}") && strstr(want, "https://example.com/a_b") && strstr(want, "%s"));
    for (int k = 0; k < 2; k++) {
        http_buf b;
        assert_int_equal(post_file(&srv, names[k], data[k], strlen(data[k]), &b, 0, "source", "en", "target", "fr", NULL),
                         200);
        json_t *j = body_json(&b);
        reply r = get(&srv, url_path(json_string_value(json_object_get(j, "translatedFileUrl"))));
        assert_int_equal(r.status, 200);
        print_message("  %s: %s\n", names[k], r.body);
        assert_non_null(strstr(r.body, want));         /* the unit as /translate gives it, placeholders in */
        reply_free(&r);
        json_decref(j);
        free(b.p);
    }
    free(want);
}

static void test_html_file(void **state)
{
    (void)state;
    const char *in = "<!DOCTYPE html><html><head><title>Help</title></head><body><p>This <b>package</b> contains "
                     "the <a href=\"x\">documentation</a>.</p><pre>keep  this</pre></body></html>";
    http_buf b;
    assert_int_equal(post_file(&srv, "page.html", in, strlen(in), &b, 0, "source", "en", "target", "fr", NULL), 200);
    json_t *j = body_json(&b);
    reply r = get(&srv, url_path(json_string_value(json_object_get(j, "translatedFileUrl"))));
    assert_int_equal(r.status, 200);
    const char *tags[] = { "<!DOCTYPE html>", "<html>", "<head>", "<title>", "</title>", "<body>", "<p>", "<b>",
                           "</b>", "<a href=\"x\">", "</a>", "</p>", "<pre>keep  this</pre>", "</body>", "</html>" };
    const char *at = r.body;
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        const char *p = strstr(at, tags[i]);
        if (!p)
            print_error("%s not in order in %s\n", tags[i], r.body);
        assert_non_null(p);
        at = p + strlen(tags[i]);
    }
    assert_null(strstr(r.body, "package"));         /* translated */
    reply_free(&r);
    json_decref(j);
    free(b.p);
}

static void test_async_progress(void **state)
{
    (void)state;
    /* 60 paragraphs: several batches */
    char *in = malloc(60 * 64);
    in[0] = 0;
    for (int i = 0; i < 60; i++)
        sprintf(in + strlen(in), "This is sentence number %d of the file.\n\n", i + 1);
    http_buf b;
    assert_int_equal(post_file(&srv, "big.txt", in, strlen(in), &b, 0, "source", "en", "target", "fr", "async", "true",
                               NULL), 202);
    json_t *j = body_json(&b);
    const char *status_url = json_string_value(json_object_get(j, "status_url"));
    const char *file_url = json_string_value(json_object_get(j, "translatedFileUrl"));
    assert_non_null(status_url);
    assert_non_null(file_url);
    long last = -1, total = -1, polls = 0;
    const char *state_name = "running";
    json_t *st = NULL;
    double t0 = now_s();
    while (now_s() - t0 < 120) {
        reply r = get(&srv, status_url);
        assert_int_equal(r.status, 200);
        json_decref(st);
        st = reply_json(&r);
        reply_free(&r);
        long done = (long)json_integer_value(json_object_get(st, "done"));
        long tot = (long)json_integer_value(json_object_get(st, "total"));
        assert_true(done >= last);                  /* monotonic */
        if (total >= 0)
            assert_int_equal(tot, total);           /* fixed */
        total = tot;
        last = done;
        polls++;
        state_name = json_string_value(json_object_get(st, "state"));
        if (strcmp(state_name, "running"))
            break;
        sleep_ms(20);
    }
    assert_string_equal(state_name, "done");
    assert_int_equal(last, 60);
    assert_int_equal(total, 60);
    printf("async job: %ld polls, done in %.0f ms\n", polls, json_real_value(json_object_get(st, "elapsed_ms")));
    reply r = get(&srv, url_path(file_url));
    assert_int_equal(r.status, 200);
    int paragraphs = 0;
    for (const char *p = r.body; (p = strstr(p, "\n\n")); p += 2)
        paragraphs++;
    assert_int_equal(paragraphs, 60);
    reply_free(&r);
    /* DELETE: gone */
    req_opts del = { .method = "DELETE" };
    r = http_req(&srv, status_url, &del);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    sleep_ms(300);                                  /* the runner's next turn deletes it */
    r = get(&srv, url_path(file_url));
    assert_int_equal(r.status, 404);
    reply_free(&r);
    json_decref(st);
    json_decref(j);
    free(b.p);
    free(in);
}

static void test_auto_source(void **state)
{
    (void)state;
    const char *in = "Ce paquet fournit la documentation du programme.\n";
    http_buf b;
    assert_int_equal(post_file(&srv, "doc.txt", in, strlen(in), &b, 0, "source", "auto", "target", "en", "async", "1",
                               NULL), 202);
    json_t *j = body_json(&b);
    assert_string_equal(json_string_value(json_object_get(j, "detectedLanguage")), "fr");
    json_decref(j);
    free(b.p);
}

static void expect_error(long status, long want, const http_buf *b, const char *needle)
{
    if (status != want || !b->p || !strstr(b->p, needle))
        print_error("want %ld with '%s', got %ld: %s\n", want, needle, status, b->p ? b->p : "(none)");
    assert_int_equal(status, want);
    assert_non_null(strstr(b->p, needle));
    json_t *j = body_json(b);
    assert_true(json_is_string(json_object_get(j, "error")));      /* LibreTranslate's shape */
    json_decref(j);
}

/* A glossary with the file: its terms in every unit that holds their
 * source term; a bad one refused before any job starts. */
static void test_glossary_file(void **state)
{
    (void)state;
    const char *in = "The library is free software.\n\nInstall the library with apt.\n";
    http_buf b;
    assert_int_equal(post_file(&srv, "terms.txt", in, strlen(in), &b, 0, "source", "en", "target", "fr", "glossary",
                               "{\"library\": \"librairie\", \"software\": \"programme\"}", NULL), 200);
    json_t *j = body_json(&b);
    const char *url = json_string_value(json_object_get(j, "translatedFileUrl"));
    assert_non_null(url);
    reply r = get(&srv, url_path(url));
    assert_int_equal(r.status, 200);
    char *second = strchr(r.body, '\n');
    assert_non_null(second);
    print_message("  %s", r.body);
    assert_true(strstr(r.body, "librairie") && strstr(r.body, "librairie") < second);   /* unit 1 */
    assert_non_null(strstr(second, "librairie"));                                       /* unit 2 */
    assert_non_null(strstr(r.body, "programme"));
    reply_free(&r);
    json_decref(j);
    free(b.p);
    long st = post_file(&srv, "terms.txt", in, strlen(in), &b, 0, "source", "en", "target", "fr", "glossary",
                        "{\"library\": \"\"}", NULL);
    expect_error(st, 400, &b, "glossary");
    free(b.p);
}

static void test_refused(void **state)
{
    (void)state;
    http_buf b;
    long st = post_file(&srv, NULL, NULL, 0, &b, 0, "target", "fr", NULL);
    expect_error(st, 400, &b, "missing file");
    free(b.p);
    st = post_file(&srv, "a.txt", "Hello.", 6, &b, 0, NULL);
    expect_error(st, 400, &b, "target");
    free(b.p);
    char bin[512];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (char)(i * 37 + 11);
    st = post_file(&srv, "a.bin", bin, sizeof bin, &b, 0, "target", "fr", NULL);
    expect_error(st, 415, &b, ".docx");
    free(b.p);
    st = post_file(&srv, "a.bin", bin, sizeof bin, &b, 0, "target", "fr", NULL);
    expect_error(st, 415, &b, ".pptx, .xlsx, .odp, .ods, .epub");     /* every format named */
    free(b.p);
    size_t big = 310 * 1024;
    char *text = malloc(big);
    for (size_t i = 0; i < big; i++)
        text[i] = i % 40 == 39 ? '\n' : 'a';
    st = post_file(&srv, "big.txt", text, big, &b, 0, "source", "en", "target", "fr", NULL);
    expect_error(st, 413, &b, "limit");
    free(b.p);
    size_t lines = 2100 * 3;                        /* "b.": 2,100 units, over --max-file-units 2000 */
    for (size_t i = 0; i < lines; i++)
        text[i] = i % 3 == 2 ? '\n' : i % 3 ? '.' : 'b';
    st = post_file(&srv, "many.txt", text, lines, &b, 0, "source", "en", "target", "fr", NULL);
    expect_error(st, 413, &b, "2000");
    free(b.p);
    free(text);
    st = post_file(&srv, "x.txt", "Hello.", 6, &b, 0, "source", "en", "target", "xx", NULL);
    expect_error(st, 400, &b, "xx");
    free(b.p);
    /* a malformed subtitle file: 400 naming the line */
    const char *srt = "1\n00:00:01,000 --> 00:00:02,000\nHello there.\n\n2\n00:00:03,000 --> nonsense\nBye.\n";
    st = post_file(&srv, "bad.srt", srt, strlen(srt), &b, 0, "source", "en", "target", "fr", NULL);
    expect_error(st, 400, &b, "line 6");
    free(b.p);
    /* a truncated .docx (the committed fixture cut in half): 400, and one
     * whose document.xml carries an entity bomb: refused before expansion */
    FILE *f = fopen("tests/fixtures/documents/office.docx", "rb");
    assert_non_null(f);
    static char docx[1 << 17];
    size_t dn = fread(docx, 1, sizeof docx, f);
    fclose(f);
    assert_true(dn > 1000);
    st = post_file(&srv, "cut.docx", docx, dn / 2, &b, 0, "source", "en", "target", "fr", NULL);
    if (st != 400 && st != 415)
        print_error("truncated docx: %ld %s\n", st, b.p ? b.p : "");
    assert_true(st == 400 || st == 415);        /* not a readable archive: what it is cannot be told */
    json_t *ej = body_json(&b);
    assert_true(json_is_string(json_object_get(ej, "error")));
    json_decref(ej);
    free(b.p);
    reply r = get(&srv, "/translate_file/0123456789abcdef0123456789abcdef");
    assert_int_equal(r.status, 404);
    reply_free(&r);
    r = get(&srv, "/download_file/nothing/x.txt");
    assert_int_equal(r.status, 404);
    reply_free(&r);
    r = post(&srv, "/translate_file", "{\"q\": \"x\", \"target\": \"fr\"}");
    assert_int_equal(r.status, 400);
    reply_free(&r);
    req_opts bad = { .body = "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc",
                     .content_type = "multipart/form-data; boundary=x" };
    r = http_req(&srv, "/translate_file", &bad);
    assert_int_equal(r.status, 400);
    reply_free(&r);
}

static void test_client_leaves(void **state)
{
    (void)state;
    /* a file of 1500 units, and a client that gives up after 300 ms */
    size_t cap = 1500 * 80;
    char *in = malloc(cap);
    in[0] = 0;
    size_t n = 0;
    for (int i = 0; i < 1500; i++)
        n += (size_t)sprintf(in + n, "The system has %d packages that need an update today.\n", i + 1);
    http_buf b;
    long st = post_file(&srv, "leave.txt", in, n, &b, 300, "source", "en", "target", "fr", NULL);
    assert_int_equal(st, 0);                        /* timed out: no reply */
    free(b.p);
    /* the job is cancelled within a few runner turns: no file job runs */
    double t0 = now_s(), running = -1;
    while (now_s() - t0 < 10 && (running = metric(&srv, "mtserve_file_jobs_running")) != 0)
        sleep_ms(50);
    printf("file jobs running %.0f ms after the client left: %.0f\n", (now_s() - t0) * 1e3, running);
    assert_true(running == 0);
    char *t = translate("The cat sleeps.");
    assert_non_null(t);
    free(t);
    const char *small = "One more file.\n";
    assert_int_equal(post_file(&srv, "after.txt", small, strlen(small), &b, 0, "source", "en", "target", "fr", NULL), 200);
    free(b.p);
    free(in);
    reply r = get(&srv, "/health");
    assert_int_equal(r.status, 200);
    reply_free(&r);
}

static void test_frontend_settings(void **state)
{
    (void)state;
    reply r = get(&srv, "/frontend/settings");
    json_t *j = expect_json(&r, 200);
    assert_true(json_is_true(json_object_get(j, "filesTranslation")));
    json_t *f = json_object_get(j, "supportedFilesFormat");
    assert_true(json_is_array(f));
    const char *want[] = { ".txt", ".html", ".srt", ".vtt", ".po", ".docx", ".odt", ".pptx", ".xlsx", ".odp", ".ods",
                           ".epub" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int seen = 0;
        for (size_t k = 0; k < json_array_size(f); k++)
            seen |= !strcmp(json_string_value(json_array_get(f, k)), want[i]);
        assert_true(seen);
    }
    json_decref(j);
    reply_free(&r);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_file),
        cmocka_unit_test(test_html_file),
        cmocka_unit_test(test_placeholders_file),
        cmocka_unit_test(test_async_progress),
        cmocka_unit_test(test_auto_source),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_glossary_file),
        cmocka_unit_test(test_client_leaves),
        cmocka_unit_test(test_frontend_settings),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
