/* test_copy_gate: server/translate/copy_gate.h.
 *
 *   - the word rule against its Python twin (models/recipe/copy_gate.py, which
 *     builds the shipped lists): every line of tests/fixtures/copy_gate/lines.jsonl
 *     (UI strings of the held-out packages, recipe/right-copies.txt, corner
 *     cases) gives the same words, and the fixture's list arms the same lines;
 *   - the word rule by table (independent of the fixture);
 *   - the shipped lists (models/en-fr, models/fr-en) load and arm an interface
 *     word, not a name, a number or an option;
 *   - files refused, each naming its line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "fixture_file.h"
#include "translate/copy_gate.h"

#define FIX "tests/fixtures/copy_gate/"

typedef struct {
    char buf[1024];
    size_t n;
} joined;

/* The words as one string, each followed by '|'. */
static void join_word(void *ctx, const char *w, size_t n)
{
    joined *j = ctx;
    assert_true(j->n + n + 1 < sizeof j->buf);
    memcpy(j->buf + j->n, w, n);
    j->n += n;
    j->buf[j->n++] = '|';
    j->buf[j->n] = 0;
}

static const char *words_of(const char *text, size_t n, joined *j)
{
    j->n = 0;
    j->buf[0] = 0;
    int k = srv_copy_gate_words(text, n, join_word, j);
    int bars = 0;
    for (size_t i = 0; i < j->n; i++)
        bars += j->buf[i] == '|';
    assert_int_equal(k, bars);
    return j->buf;
}

static void test_fixture_parity(void **state)
{
    (void)state;
    srv_copy_gate *g;
    mt_err err = { 0 };
    assert_int_equal(srv_copy_gate_load(FIX "words.txt", &g, &err), MT_OK);
    assert_true(srv_copy_gate_size(g) > 100);
    char *all = slurp(FIX "lines.jsonl", NULL);
    int lines = 0, armed = 0;
    for (char *line = strtok(all, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        assert_non_null(o);
        const char *text = json_string_value(json_object_get(o, "text"));
        size_t n = json_string_length(json_object_get(o, "text"));
        joined want = { .n = 0 }, got;
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(o, "words"), k, w)
            join_word(&want, json_string_value(w), json_string_length(w));
        words_of(text, n, &got);
        if (strcmp(want.buf, got.buf) != 0)
            fail_msg("words of \"%s\": want %s, got %s", text, want.buf, got.buf);
        int a = srv_copy_gate_arms(g, text, n);
        if (a != json_is_true(json_object_get(o, "armed")))
            fail_msg("\"%s\": armed %d, the recipe says otherwise", text, a);
        armed += a;
        lines++;
        json_decref(o);
    }
    assert_true(lines > 300);
    assert_true(armed > 50 && armed < lines);       /* both answers are tested */
    free(all);
    srv_copy_gate_free(g);
}

typedef struct {
    const char *in, *words;
} words_case;

static const words_case word_cases[] = {
    { "Save the File", "save|the|file|" },
    { "\xC2\xAB" "Save\xC2\xBB the file\xE2\x80\xA6", "save|the|file|" },   /* « » … off the edges */
    { "--help", "" },
    { "Ctrl+C", "" },
    { "README.md", "" },
    { "x86_64 12345 100 %", "" },
    { "E-mail", "e|mail|" },
    { "l\xE2\x80\x99\xC3\x8Ele", "l|\xC3\xAEle|" },                        /* l’Île */
    { "x- -x a--b 'quoted'", "quoted|" },
    { "cm,cms;inch/inches", "cm|cms|inch|inches|" },
    { "\xC3\x89TAT", "\xC3\xA9tat|" },                                        /* ÉTAT folded */
    { "Open \xFF" "File", "open|" },                                          /* a bad byte is no letter */
    { "a\xC2\xA0" "b\xE3\x80\x80" "c", "a|b|c|" },                            /* NBSP, ideographic space */
    { "", "" },
    { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ok", "ok|" },  /* 65 letters: none */
};

static void test_word_rule(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof word_cases / sizeof word_cases[0]; i++) {
        joined j;
        const char *got = words_of(word_cases[i].in, strlen(word_cases[i].in), &j);
        if (strcmp(got, word_cases[i].words) != 0)
            fail_msg("\"%s\": want %s, got %s", word_cases[i].in, word_cases[i].words, got);
    }
}

static void shipped(const char *dir, const char *word)
{
    char path[256];
    snprintf(path, sizeof path, "models/%s/copy_gate.txt", dir);
    srv_copy_gate *g;
    mt_err err = { 0 };
    assert_int_equal(srv_copy_gate_load(path, &g, &err), MT_OK);
    assert_true(srv_copy_gate_size(g) > 10000);
    assert_true(srv_copy_gate_arms(g, word, strlen(word)));
    static const char *const right[] = { "Linux", "Firefox", "Debian", "GNOME", "12345", "--help", "Ctrl+C",
                                         "README.md", "user@example.com", "UTF-8" };
    for (size_t i = 0; i < sizeof right / sizeof right[0]; i++)
        if (srv_copy_gate_arms(g, right[i], strlen(right[i])))
            fail_msg("%s: \"%s\" arms the guard", path, right[i]);
    srv_copy_gate_free(g);
}

static void test_shipped_lists(void **state)
{
    (void)state;
    shipped("en-fr", "Alarm");
    shipped("fr-en", "Fermer");
}

typedef struct {
    const char *file, *why;      /* why NULL: accepted */
    long words;
} file_case;

static const file_case files[] = {
    { "", NULL, 0 },
    { "# only a comment\n", NULL, 0 },
    { "# head\n# more\nalarm\nbleu\n\xC3\xA9tat\n", NULL, 3 },
    { "alarm\nbleu", "line has no newline", 0 },
    { "bleu\nalarm\n", "line 2: a word not after", 0 },
    { "alarm\nalarm\n", "line 2: a word not after", 0 },
    { "alarm\nAlarm\n", "line 2: a letter not case-folded", 0 },
    { "alarm\nsave as\n", "line 2: a character that is not a letter", 0 },
    { "alarm\n\nbleu\n", "line 2: an empty line", 0 },
    { "# head\nalarm\n# late\n", "line 3: a character that is not a letter", 0 },
    { "al\xFFrm\n", "line 1: invalid UTF-8", 0 },
    { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", "line 1: a word over 64 bytes", 0 },
    { "caf\xC3\xA9\n" "caf\xC3\x89\n", "line 2: a letter not case-folded", 0 },
};

static void test_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        srv_copy_gate *g = NULL;
        mt_err err = { 0 };
        mt_status st = srv_copy_gate_parse(files[i].file, strlen(files[i].file), &g, &err);
        if (!files[i].why) {
            assert_int_equal(st, MT_OK);
            assert_int_equal(srv_copy_gate_size(g), files[i].words);
            assert_false(srv_copy_gate_arms(g, "zzz", 3));
            srv_copy_gate_free(g);
            continue;
        }
        assert_int_equal(st, MT_ERR_FORMAT);
        assert_null(g);
        if (!strstr(err.msg, files[i].why))
            fail_msg("file %zu: \"%s\" does not say \"%s\"", i, err.msg, files[i].why);
    }
}

static void test_lookup(void **state)
{
    (void)state;
    const char *f = "alarm\nbleu\nclose\n\xC3\xA9tat\n";
    srv_copy_gate *g;
    assert_int_equal(srv_copy_gate_parse(f, strlen(f), &g, NULL), MT_OK);
    assert_true(srv_copy_gate_arms(g, "Alarm", 5));
    assert_true(srv_copy_gate_arms(g, "Linux, close it!", 16));
    assert_true(srv_copy_gate_arms(g, "\xC3\x89TAT", 5));
    assert_false(srv_copy_gate_arms(g, "Alarms", 6));
    assert_false(srv_copy_gate_arms(g, "alar", 4));
    assert_false(srv_copy_gate_arms(g, "--close", 7));
    assert_false(srv_copy_gate_arms(g, "Alarm", 4));        /* the length is the caller's */
    srv_copy_gate_free(g);
}

static void test_load_missing(void **state)
{
    (void)state;
    srv_copy_gate *g = (srv_copy_gate *)1;
    mt_err err = { 0 };
    assert_int_equal(srv_copy_gate_load("tests/fixtures/copy_gate/none.txt", &g, &err), MT_ERR_IO);
    assert_null(g);
    assert_non_null(strstr(err.msg, "none.txt"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_parity),
        cmocka_unit_test(test_word_rule),
        cmocka_unit_test(test_shipped_lists),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_load_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
