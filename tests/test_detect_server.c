/* test_detect_server: detection of short strings by the shipped server end to end
 * (issue 48; the real binary, libcurl).  `mtserve serve` with models/en-fr and
 * models/fr-en reads their detection language models (en.charlm, fr.charlm: its
 * log says so), and then answers POST /detect and `source: "auto"` right on the
 * short strings that CLD2 alone gets wrong: "documentation pour NTP (Network
 * Time Protocol)" is French, "Generate random integers" English (test_detect.c
 * checks that CLD2 alone says the opposite).  A damaged .charlm, or one of another
 * language than the model's source, stops the server at start with its reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "harness.h"

static long n_checked;

/* The first language /detect answers for text (LibreTranslate's form), into code. */
static void detect_first(const server *s, const char *text, char *code, size_t cap, double *conf)
{
    json_t *body = json_pack("{s:s}", "q", text);
    char *b = json_dumps(body, 0);
    reply r = post(s, "/detect", b);
    json_t *j = expect_json(&r, 200);
    json_t *g = json_array_get(j, 0);
    assert_non_null(g);
    snprintf(code, cap, "%s", json_string_value(json_object_get(g, "language")));
    *conf = json_number_value(json_object_get(g, "confidence"));
    json_decref(j);
    reply_free(&r);
    free(b);
    json_decref(body);
}

/* The whole log of s, NUL-terminated, into buf. */
static void read_log(const server *s, char *buf, size_t cap)
{
    FILE *log = fopen(s->log, "r");
    size_t n = log ? fread(buf, 1, cap - 1, log) : 0;
    if (log)
        fclose(log);
    buf[n] = 0;
}

static void test_shipped_short_strings(void **state)
{
    (void)state;
    server s;
    const char *args[] = {"--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en", NULL};
    assert_int_equal(server_start(&s, args), 0);
    static char log[65536];
    read_log(&s, log, sizeof log);
    assert_non_null(strstr(log, "detection language model models/en-fr/en.charlm (en"));
    assert_non_null(strstr(log, "detection language model models/fr-en/fr.charlm (fr"));
    static const struct {
        const char *text, *lang;
    } cases[] = {
        {"documentation pour NTP (Network Time Protocol)", "fr"},
        {"Generate random integers", "en"},
        {"This package provides the documentation.", "en"},
        {"Ce paquet fournit la documentation.", "fr"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char code[16];
        double conf = -1;
        detect_first(&s, cases[i].text, code, sizeof code, &conf);
        print_message("/detect \"%s\": %s (%.0f)\n", cases[i].text, code, conf);
        assert_string_equal(code, cases[i].lang);
        assert_true(conf > 0 && conf <= 100);
        n_checked++;
    }
    /* source "auto": the same answer, and the text translated from it */
    reply r = post(&s, "/translate", "{\"q\": \"documentation pour NTP (Network Time Protocol)\", \"source\": \"auto\", "
                                     "\"target\": \"en\"}");
    json_t *j = expect_json(&r, 200);
    json_t *det = json_object_get(j, "detectedLanguage");
    assert_string_equal(json_string_value(json_object_get(det, "language")), "fr");
    assert_true(json_string_length(json_object_get(j, "translatedText")) > 0);
    json_decref(j);
    reply_free(&r);
    r = post(&s, "/translate", "{\"q\": \"Generate random integers\", \"source\": \"auto\", \"target\": \"fr\"}");
    j = expect_json(&r, 200);
    det = json_object_get(j, "detectedLanguage");
    assert_string_equal(json_string_value(json_object_get(det, "language")), "en");
    json_decref(j);
    reply_free(&r);
    n_checked += 2;
    assert_int_equal(server_stop(&s), 0);
}

/* A model directory like models/en-fr (links to its files) whose en.charlm is the
 * bytes of src, with byte flip_at changed (-1: none). */
static void model_dir_with(char *dir, size_t cap, const char *src, long flip_at)
{
    snprintf(dir, cap, "/tmp/test_detect_server_%d", (int)getpid());
    harness_model_link("models/en-fr", dir, NULL, NULL);
    char to[1400];
    snprintf(to, sizeof to, "%s/en.charlm", dir);
    FILE *in = fopen(src, "rb"), *out = fopen(to, "wb");
    assert_true(in && out);
    int c;
    long at = 0;
    while ((c = fgetc(in)) != EOF)
        fputc(at++ == flip_at ? c ^ 0x20 : c, out);
    fclose(in);
    fclose(out);
}

static void remove_dir(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* The server must not start; its log must say want. */
static void expect_refused(const char *dir, const char *want)
{
    char spec[1200];
    snprintf(spec, sizeof spec, "en-fr=%s", dir);
    const char *args[] = {"--model", spec, NULL};
    server s;
    assert_int_equal(server_spawn(&s, args, NULL), 0);
    int status = wait_child(s.pid, 60);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0);
    static char log[65536];
    read_log(&s, log, sizeof log);
    if (!strstr(log, want) || !strstr(log, "en.charlm"))
        fail_msg("the log does not say \"%s\" about en.charlm:\n%s", want, log);
    print_message("refused: %s\n", strstr(log, want));
    n_checked++;
}

static void test_bad_charlm_refused(void **state)
{
    (void)state;
    char dir[256];
    model_dir_with(dir, sizeof dir, "models/en-fr/en.charlm", 5000);       /* one byte of an entry */
    expect_refused(dir, "checksum mismatch");
    model_dir_with(dir, sizeof dir, "models/fr-en/fr.charlm", -1);         /* a sound file, of French */
    expect_refused(dir, "a language model of 'fr', not of the model's source 'en'");
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_short_strings),
        cmocka_unit_test(test_bad_charlm_refused),
    };
    int rc = cmocka_run_group_tests_name("test_detect_server", tests, NULL, NULL);
    printf("[ info ] test_detect_server: %ld checks of replies and start-ups\n", n_checked);
    kill_all_children();
    return rc;
}
