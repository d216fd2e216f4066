/* test_terms: glossaries and the translation cache (issue 29) over HTTP
 * against the real binary (cmocka + libcurl, tests/harness.c).
 *
 * Servers (models/en-fr and models/fr-en): one with a --glossary file for
 * en-fr, small glossary limits and the cache on; one with --cache-mb 0 and
 * batching off (a session per request: the other decoder).
 *  - every target term of the request's glossary is in the output, greedy
 *    and beam 4, on both servers, JSON and LibreTranslate shapes, several
 *    terms in several sentences, both directions
 *  - the file's terms apply to their pair only, and the request's win
 *  - sentences without a term translate byte for byte as without a glossary
 *  - bad glossaries: 400 invalid_field naming the problem
 *  - the cache: a repeated request is answered identically (text, scores,
 *    alignments) and counted as hits in /metrics; "cache": false and
 *    sampling without a seed are not looked up; a streamed request after a
 *    cached one gives the same text; 16 concurrent clients repeating
 *    requests get exactly the uncached replies (TSan: make tsan)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>

#include "harness.h"

static server srv, srv_off;
static char gloss_path[256];

static int group_setup(void **state)
{
    (void)state;
    snprintf(gloss_path, sizeof gloss_path, "/tmp/mtserve-test-terms-%d.tsv", (int)getpid());
    FILE *f = fopen(gloss_path, "w");
    if (!f)
        return -1;
    fputs("# a test glossary\n\nserver\tmachine\nrestart\trelancez\n", f);
    fclose(f);
    char g[300];
    snprintf(g, sizeof g, "en-fr=%s", gloss_path);
    static char garg[300];
    memcpy(garg, g, sizeof g);
    const char *const a[] = {"--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en", "--glossary", garg,
                             "--max-glossary-entries", "4", "--max-term-bytes", "40", "--cache-mb", "64", NULL};
    const char *const b[] = {"--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en", "--cache-mb", "0",
                             "--batching", "off", NULL};      /* (the harness's default, said here) */
    return server_start(&srv, a) || server_start(&srv_off, b) ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    int a = server_stop(&srv), b = server_stop(&srv_off);
    unlink(gloss_path);
    return a == 0 && b == 0 ? 0 : -1;
}

static json_t *translate(const server *s, const char *body)
{
    reply r = post(s, "/translate", body);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    return j;
}

static const char *text_of(json_t *j, size_t i)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), i), "text"));
}

/* Whole-word occurrence of w in t (ASCII letters around it end a word). */
static int has_word(const char *t, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = t; (p = strstr(p, w)); p++) {
        int before = p == t || !((p[-1] | 32) >= 'a' && (p[-1] | 32) <= 'z');
        int after = !((p[n] | 32) >= 'a' && (p[n] | 32) <= 'z');
        if (before && after)
            return 1;
    }
    return 0;
}

static void test_terms_appear(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "Install the package with apt and restart the server.",
        "This tool converts images to PDF files quickly. The package provides a library.",
        "A simple editor for text files.",
    };
    const server *servers[] = {&srv, &srv_off};
    for (int si = 0; si < 2; si++)
        for (int beam = 1; beam <= 4; beam += 3)
            for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
                char body[1024];
                snprintf(body, sizeof body, "{\"text\": \"%s\", \"source\": \"en\", \"target\": \"fr\", "
                         "\"beam_size\": %d, \"glossary\": {\"package\": \"colis\", \"images\": \"photos\", "
                         "\"editor\": \"rédacteur\"}}", texts[i], beam);
                json_t *j = translate(servers[si], body);
                const char *out = text_of(j, 0);
                assert_non_null(out);
                if (strstr(texts[i], "package"))
                    assert_true(has_word(out, "colis"));
                if (strstr(texts[i], "images"))
                    assert_true(has_word(out, "photos"));
                if (strstr(texts[i], "editor"))
                    assert_true(strstr(out, "rédacteur") != NULL);
                json_decref(j);
            }
    /* fr -> en, and the LibreTranslate shape */
    json_t *j = translate(&srv, "{\"text\": \"Installez le paquet.\", \"source\": \"fr\", \"target\": \"en\", "
                                "\"glossary\": {\"paquet\": \"parcel\"}}");
    assert_true(has_word(text_of(j, 0), "parcel"));
    json_decref(j);
    reply r = post(&srv, "/translate", "{\"q\": \"Install the package.\", \"source\": \"en\", \"target\": \"fr\", "
                                       "\"glossary\": {\"package\": \"colis\"}}");
    j = expect_json(&r, 200);
    assert_true(has_word(json_string_value(json_object_get(j, "translatedText")), "colis"));
    json_decref(j);
    reply_free(&r);
}

static void test_server_file(void **state)
{
    (void)state;
    /* the file's terms: en-fr only; the request's win */
    json_t *j = translate(&srv, "{\"text\": \"Restart the server.\", \"source\": \"en\", \"target\": \"fr\"}");
    assert_true(has_word(text_of(j, 0), "machine"));
    json_decref(j);
    j = translate(&srv, "{\"text\": \"Restart the server.\", \"source\": \"en\", \"target\": \"fr\", "
                        "\"glossary\": {\"server\": \"ordinateur\"}}");
    assert_true(has_word(text_of(j, 0), "ordinateur"));
    assert_false(has_word(text_of(j, 0), "machine"));
    json_decref(j);
    j = translate(&srv, "{\"text\": \"Redémarrez le serveur.\", \"source\": \"fr\", \"target\": \"en\"}");
    assert_false(has_word(text_of(j, 0), "machine"));
    json_decref(j);
}

static void test_no_terms_identical(void **state)
{
    (void)state;
    static const char *const texts[] = {"A simple editor for text files.", "Hello world. How are you?",
                                        "Documentation for the library."};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        for (int beam = 1; beam <= 4; beam += 3) {
            char a[512], b[512], c[600];
            snprintf(a, sizeof a, "{\"text\": \"%s\", \"source\": \"en\", \"target\": \"fr\", \"beam_size\": %d, "
                     "\"cache\": false}", texts[i], beam);
            snprintf(b, sizeof b, "{\"text\": \"%s\", \"source\": \"en\", \"target\": \"fr\", \"beam_size\": %d, "
                     "\"cache\": false, \"glossary\": {}}", texts[i], beam);
            snprintf(c, sizeof c, "{\"text\": \"%s\", \"source\": \"en\", \"target\": \"fr\", \"beam_size\": %d, "
                     "\"cache\": false, \"glossary\": {\"zebra crossing\": \"passage piéton\"}}", texts[i], beam);
            json_t *ja = translate(&srv_off, a), *jb = translate(&srv_off, b), *jc = translate(&srv_off, c);
            assert_string_equal(text_of(ja, 0), text_of(jb, 0));
            assert_string_equal(text_of(ja, 0), text_of(jc, 0));
            json_decref(ja), json_decref(jb), json_decref(jc);
        }
}

static void expect_invalid(const char *body, const char *needle)
{
    reply r = post(&srv, "/translate", body);
    json_t *j = expect_json(&r, 400);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    assert_non_null(msg);
    if (!strstr(msg, needle))
        print_error("message '%s' lacks '%s'\n", msg, needle);
    assert_non_null(strstr(msg, needle));
    const char *code = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
    assert_non_null(code);         /* invalid_field where the parser sees it, bad_request from the pipeline */
    assert_true(!strcmp(code, "invalid_field") || !strcmp(code, "bad_request"));
    json_decref(j);
    reply_free(&r);
}

static void test_bad_glossaries(void **state)
{
    (void)state;
    const char *pre = "{\"text\": \"Install the package.\", \"source\": \"en\", \"target\": \"fr\", \"glossary\": ";
    char b[512];
    struct { const char *g, *needle; } cases[] = {
        {"{\"\": \"colis\"}", "empty"},
        {"{\"package\": \"\"}", "empty"},
        {"{\"package\": 5}", "must be a string"},
        {"[\"package\"]", "must be an object"},
        {"\"not json\"", "not valid JSON"},
        {"{\"a\": \"b\", \"c\": \"d\", \"e\": \"f\", \"g\": \"h\", \"i\": \"j\"}", "limit is 4"},
        {"{\"package\": \"0123456789012345678901234567890123456789x\"}", "40"},
        {"{\"pack\\tage\": \"colis\"}", "control"},
        {"{\"package\": \"co\\u0001lis\"}", "control"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(b, sizeof b, "%s%s}", pre, cases[i].g);
        expect_invalid(b, cases[i].needle);
    }
    /* more terms in one sentence than a decode takes */
    expect_invalid("{\"text\": \"a a a a a a a a a a a a a a a a a\", \"source\": \"en\", \"target\": \"fr\", "
                   "\"glossary\": {\"a\": \"x\"}}", "17 glossary terms; the limit is 16");
    assert_true(server_alive(&srv));
}

static void test_cache(void **state)
{
    (void)state;
    const char *body = "{\"text\": \"The library reads files. It writes them back.\", \"source\": \"en\", "
                       "\"target\": \"fr\", \"return_scores\": true, \"return_alignments\": true}";
    double h0 = metric(&srv, "mtserve_cache_hits_total"), m0 = metric(&srv, "mtserve_cache_misses_total");
    reply r1 = post(&srv, "/translate", body), r2 = post(&srv, "/translate", body);
    json_t *a = expect_json(&r1, 200), *b = expect_json(&r2, 200);
    json_object_del(a, "timing_ms"), json_object_del(b, "timing_ms");
    assert_true(json_equal(a, b));
    assert_true(metric(&srv, "mtserve_cache_hits_total") - h0 == 2);      /* two sentences */
    assert_true(metric(&srv, "mtserve_cache_misses_total") - m0 == 2);
    assert_true(metric(&srv, "mtserve_cache_entries") >= 2);
    assert_true(metric(&srv, "mtserve_cache_bytes") > 0);
    json_decref(a), json_decref(b);
    reply_free(&r1), reply_free(&r2);
    /* the same sentence with other settings is another entry */
    double h1 = metric(&srv, "mtserve_cache_hits_total");
    json_t *c = translate(&srv, "{\"text\": \"The library reads files.\", \"source\": \"en\", \"target\": \"fr\", "
                                "\"beam_size\": 1}");
    assert_true(metric(&srv, "mtserve_cache_hits_total") == h1);
    json_decref(c);
    /* "cache": false and sampling without a seed are not looked up */
    double m1 = metric(&srv, "mtserve_cache_misses_total");
    json_decref(translate(&srv, "{\"text\": \"The library reads files.\", \"source\": \"en\", \"target\": \"fr\", "
                                "\"cache\": false}"));
    json_decref(translate(&srv, "{\"text\": \"The library reads files.\", \"source\": \"en\", \"target\": \"fr\", "
                                "\"sampling\": {\"temperature\": 0.7}}"));
    json_decref(translate(&srv, "{\"text\": \"The library reads files.\", \"source\": \"en\", \"target\": \"fr\", "
                                "\"sampling\": {\"temperature\": 0.7}}"));
    assert_true(metric(&srv, "mtserve_cache_misses_total") == m1);
    assert_true(metric(&srv, "mtserve_cache_hits_total") == h1);
    /* with a seed it is */
    const char *seeded = "{\"text\": \"The library reads files.\", \"source\": \"en\", \"target\": \"fr\", "
                         "\"sampling\": {\"temperature\": 0.7, \"seed\": 7}}";
    json_t *s1 = translate(&srv, seeded), *s2 = translate(&srv, seeded), *s3 = translate(&srv_off, seeded);
    assert_string_equal(text_of(s1, 0), text_of(s2, 0));
    assert_string_equal(text_of(s1, 0), text_of(s3, 0));                 /* as decoded by the other server */
    assert_true(metric(&srv, "mtserve_cache_hits_total") == h1 + 1);
    json_decref(s1), json_decref(s2), json_decref(s3);
    /* a cached result equals a fresh decode of the cache-less server */
    json_t *x = translate(&srv, body), *y = translate(&srv_off, body);
    assert_string_equal(text_of(x, 0), text_of(y, 0));
    json_decref(x), json_decref(y);
}

static void test_stream_cached(void **state)
{
    (void)state;
    const char *plain = "{\"text\": \"Open the file. Save it.\", \"source\": \"en\", \"target\": \"fr\", "
                        "\"beam_size\": 1}";
    json_t *j = translate(&srv, plain);
    reply r = post(&srv, "/translate", "{\"text\": \"Open the file. Save it. Close it.\", \"source\": \"en\", "
                                       "\"target\": \"fr\", \"beam_size\": 1, \"stream\": true}");
    assert_int_equal(r.status, 200);
    assert_non_null(r.body);
    assert_non_null(strstr(r.body, "event: done"));
    const char *done = strstr(r.body, "event: done\ndata: ");
    assert_non_null(done);
    json_t *final = json_loads(done + strlen("event: done\ndata: "), JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(final);
    const char *all = text_of(final, 0), *first = text_of(j, 0);
    assert_true(strncmp(all, first, strlen(first)) == 0);     /* the cached sentences, then the new one */
    json_decref(final);
    json_decref(j);
    reply_free(&r);
    /* terms while streaming: the deltas and the final text hold them */
    r = post(&srv_off, "/translate", "{\"text\": \"Install the package. Open the file.\", \"source\": \"en\", "
                                     "\"target\": \"fr\", \"beam_size\": 1, \"stream\": true, "
                                     "\"glossary\": {\"package\": \"colis\", \"file\": \"dossier\"}}");
    assert_int_equal(r.status, 200);
    assert_non_null(r.body);
    done = strstr(r.body, "event: done\ndata: ");
    assert_non_null(done);
    final = json_loads(done + strlen("event: done\ndata: "), JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(final);
    assert_true(has_word(text_of(final, 0), "colis") && has_word(text_of(final, 0), "dossier"));
    assert_non_null(strstr(r.body, "\"delta\":\" col"));  /* streamed before the done event too */
    assert_true(strstr(r.body, "\"delta\":\" col") < done);
    json_decref(final);
    reply_free(&r);
}

/* 16 clients repeating 8 requests (with and without terms) at once: every
 * reply equals the first one of its request (under TSan: the cache shared by
 * every HTTP thread, with evictions when the server's cache is small). */
#define N_CLIENTS 16
#define N_BODIES  8
static const char *bodies[N_BODIES] = {
    "{\"text\": \"Open the file.\", \"source\": \"en\", \"target\": \"fr\", \"beam_size\": 1}",
    "{\"text\": \"Open the file.\", \"source\": \"en\", \"target\": \"fr\"}",
    "{\"text\": \"Open the file. Save it.\", \"source\": \"en\", \"target\": \"fr\", \"beam_size\": 1}",
    "{\"text\": \"Install the package.\", \"source\": \"en\", \"target\": \"fr\", \"glossary\": {\"package\": \"colis\"}}",
    "{\"text\": \"Install the package.\", \"source\": \"en\", \"target\": \"fr\"}",
    "{\"text\": \"Close the window.\", \"source\": \"en\", \"target\": \"fr\", \"return_alignments\": true}",
    "{\"text\": \"Redémarrez le serveur.\", \"source\": \"fr\", \"target\": \"en\"}",
    "{\"text\": \"A simple editor.\", \"source\": \"en\", \"target\": \"fr\", \"beam_size\": 2}",
};
static char *first[N_BODIES];

typedef struct { int id, bad; } client;

static void *client_run(void *arg)
{
    client *c = arg;
    for (int k = 0; k < 3 * N_BODIES; k++) {
        int b = (c->id + k) % N_BODIES;
        reply r = post(&srv, "/translate", bodies[b]);
        json_t *j = r.status == 200 ? json_loads(r.body, 0, NULL) : NULL;
        if (j)
            json_object_del(j, "timing_ms");
        char *got = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
        c->bad += !got || strcmp(got, first[b]) != 0;
        free(got);
        json_decref(j);
        reply_free(&r);
    }
    return NULL;
}

static void test_concurrent_cache(void **state)
{
    (void)state;
    for (int b = 0; b < N_BODIES; b++) {
        json_t *j = translate(&srv_off, bodies[b]);          /* decoded, no cache */
        json_object_del(j, "timing_ms");
        first[b] = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
        json_decref(j);
    }
    double h0 = metric(&srv, "mtserve_cache_hits_total");
    pthread_t tid[N_CLIENTS];
    client cl[N_CLIENTS];
    for (int i = 0; i < N_CLIENTS; i++) {
        cl[i] = (client){.id = i};
        assert_int_equal(pthread_create(&tid[i], NULL, client_run, &cl[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < N_CLIENTS; i++) {
        pthread_join(tid[i], NULL);
        bad += cl[i].bad;
    }
    double hits = metric(&srv, "mtserve_cache_hits_total") - h0;
    print_message("  %d clients x %d requests: %d replies differ from the uncached decode; %.0f cache hits\n",
                  N_CLIENTS, 3 * N_BODIES, bad, hits);
    assert_int_equal(bad, 0);
    assert_true(hits > N_CLIENTS * N_BODIES);
    for (int b = 0; b < N_BODIES; b++)
        free(first[b]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_terms_appear),
        cmocka_unit_test(test_server_file),
        cmocka_unit_test(test_no_terms_identical),
        cmocka_unit_test(test_bad_glossaries),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_stream_cached),
        cmocka_unit_test(test_concurrent_cache),
    };
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = cmocka_run_group_tests_name("terms", tests, group_setup, group_teardown);
    kill_all_children();
    curl_global_cleanup();
    return rc;
}
