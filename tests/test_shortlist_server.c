/* test_shortlist_server: `mtserve serve --shortlist` end to end (the real
 * binary, libcurl): /models reports each model's shortlist (or null), a
 * /translate uses it unless it says "shortlist": false, the two answers are
 * cached apart, a bad "shortlist" value is a 400, and a corrupt file stops
 * the server at start with its reason; 16 clients at once, half of their
 * requests with the shortlist and half without, long and short sentences
 * in the same continuous batches (the gathered head and, past the union
 * cap, the masked one), each get the reply their request gets alone.  Uses the shipped
 * models/{en-fr,fr-en}/lex.s2t.bin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <pthread.h>
#include <jansson.h>

#include "harness.h"

static long n_checked;

static json_t *model_entry(json_t *models, const char *id)
{
    json_t *arr = json_is_array(models) ? models : json_object_get(models, "models"), *m;
    size_t i;
    json_array_foreach(arr, i, m)
        if (!strcmp(json_string_value(json_object_get(m, "id")), id))
            return m;
    return NULL;
}

static void test_served_with_shortlist(void **state)
{
    (void)state;
    server s;
    const char *args[] = {"--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en", "--shortlist",
                          "en-fr=models/en-fr/lex.s2t.bin", "--cache-mb", "8", NULL};
    assert_int_equal(server_start(&s, args), 0);
    reply r = get(&s, "/models");
    json_t *j = expect_json(&r, 200);
    json_t *ef = model_entry(j, "en-fr"), *fe = model_entry(j, "fr-en");
    assert_non_null(ef);
    assert_non_null(fe);
    json_t *sl = json_object_get(ef, "shortlist");
    assert_true(json_is_object(sl));
    assert_string_equal(json_string_value(json_object_get(sl, "format")), "marian-binary");
    assert_true(json_integer_value(json_object_get(sl, "entries")) > 1000);
    assert_int_equal(json_integer_value(json_object_get(sl, "frequent")), 100);
    assert_true(json_is_null(json_object_get(fe, "shortlist")));
    json_decref(j);
    reply_free(&r);
    const char *with = "{\"text\": \"This package provides the documentation.\", \"return_tokens\": true}";
    const char *without = "{\"text\": \"This package provides the documentation.\", \"return_tokens\": true, "
                          "\"shortlist\": false}";
    for (int round = 0; round < 2; round++) {          /* the second round: from the cache */
        reply a = post(&s, "/translate", with), b = post(&s, "/translate", without);
        json_t *ja = expect_json(&a, 200), *jb = expect_json(&b, 200);
        const char *ta = json_string_value(json_object_get(json_array_get(json_object_get(ja, "translations"), 0), "text"));
        const char *tb = json_string_value(json_object_get(json_array_get(json_object_get(jb, "translations"), 0), "text"));
        assert_non_null(ta);
        assert_non_null(tb);
        assert_string_equal(ta, tb);                   /* a sentence of its training domain: the same words */
        json_decref(ja);
        json_decref(jb);
        reply_free(&a);
        reply_free(&b);
        n_checked += 2;
    }
    r = post(&s, "/translate", "{\"text\": \"Hello.\", \"shortlist\": 3}");
    j = expect_json(&r, 400);
    char *body = json_dumps(j, 0);
    assert_non_null(strstr(body, "shortlist"));
    free(body);
    json_decref(j);
    reply_free(&r);
    assert_true(server_stop(&s) >= 0);
    n_checked++;
}

static void test_corrupt_shortlist_refused(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_shortlist_server_%d.bin", (int)getpid());
    FILE *in = fopen("models/en-fr/lex.s2t.bin", "rb"), *out = fopen(path, "wb");
    assert_non_null(in);
    assert_non_null(out);
    int c, at = 0;
    while ((c = fgetc(in)) != EOF)
        fputc(at++ == 100 ? c ^ 1 : c, out);           /* one offset changed: the checksum sees it */
    fclose(in);
    fclose(out);
    server s;
    const char *args[] = {"--model", "models/en-fr", "--shortlist", path, NULL};
    assert_int_equal(server_spawn(&s, args, NULL), 0);
    int status = wait_child(s.pid, 60);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0);
    FILE *log = fopen(s.log, "r");
    char buf[8192] = {0};
    size_t n = log ? fread(buf, 1, sizeof buf - 1, log) : 0;
    if (log)
        fclose(log);
    buf[n] = 0;
    assert_non_null(strstr(buf, "checksum"));
    unlink(path);
    n_checked++;
}

/* Requests decoded at once share steps: rows with and without a shortlist,
 * and unions of candidates above the 4,096 cap (the whole head, masked)
 * next to small ones (the gathered head).  A row's result does not depend
 * on its batch, so each reply must equal the one its request gets alone. */
#define N_CLIENTS 16
#define N_BODIES  12
/* Under TSan (MTSERVE_TSAN=1, make tsan) decoding is ~100x slower: 8 clients
 * x 6 requests still send every body, long and short in the same batches,
 * and keep the run near 30 s instead of 200 s. */
static int n_clients = N_CLIENTS, per_client = 2 * N_BODIES;
static const char *sentences[N_BODIES / 2] = {
    "This package provides the documentation.",
    "Open the file.",
    "The server keeps a log of every request, and the administrator can read it from the web interface "
    "or from the command line; old entries are compressed every night.",
    "A simple text editor with syntax highlighting for many programming languages, spell checking, "
    "bookmarks, macros, a file browser, a terminal and plugins written in Python or Lua.",
    "Install the package.",
    "This library contains the shared objects needed to run programs that use the graphical toolkit, "
    "with its widgets, themes, printing support, accessibility and input methods for many scripts.",
};
static char *bodies[N_BODIES], *alone[N_BODIES];
static server mixed;

typedef struct { int id, bad, failed; } client;

static char *reply_canon(reply *r)
{
    json_t *j = r->status == 200 ? json_loads(r->body, 0, NULL) : NULL;
    if (j)
        json_object_del(j, "timing_ms");
    char *s = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

static void *client_run(void *arg)
{
    client *c = arg;
    for (int k = 0; k < per_client; k++) {
        int b = (c->id * 5 + k) % N_BODIES;
        reply r = post(&mixed, "/translate", bodies[b]);
        char *got = reply_canon(&r);
        c->failed += !got;
        c->bad += got && strcmp(got, alone[b]) != 0;
        free(got);
        reply_free(&r);
    }
    return NULL;
}

static void test_concurrent_mixed(void **state)
{
    (void)state;
    const char *args[] = {"--model", "models/en-fr", "--shortlist", "auto", "--cache-mb", "0", NULL};
    if (getenv("MTSERVE_TSAN")) {
        n_clients = N_CLIENTS / 2;
        per_client = N_BODIES / 2;
    }
    assert_int_equal(server_start(&mixed, args), 0);
    for (int b = 0; b < N_BODIES; b++) {
        json_t *j = json_pack("{s:s, s:b, s:i, s:b}", "text", sentences[b / 2], "shortlist", b % 2 == 0,
                              "beam_size", 1, "return_tokens", 1);
        bodies[b] = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        reply r = post(&mixed, "/translate", bodies[b]);
        alone[b] = reply_canon(&r);
        assert_non_null(alone[b]);
        reply_free(&r);
    }
    pthread_t tid[N_CLIENTS];
    client cl[N_CLIENTS];
    for (int i = 0; i < n_clients; i++) {
        cl[i] = (client){.id = i};
        assert_int_equal(pthread_create(&tid[i], NULL, client_run, &cl[i]), 0);
    }
    int bad = 0, failed = 0;
    for (int i = 0; i < n_clients; i++) {
        pthread_join(tid[i], NULL);
        bad += cl[i].bad;
        failed += cl[i].failed;
    }
    print_message("  %d clients x %d requests (shortlist on and off, %d sentences): %d failed, %d differ from "
                  "the request alone\n", n_clients, per_client, N_BODIES / 2, failed, bad);
    assert_int_equal(failed, 0);
    assert_int_equal(bad, 0);
    assert_true(server_alive(&mixed));
    assert_true(log_clean(&mixed));
    n_checked += n_clients * per_client;
    assert_true(server_stop(&mixed) >= 0);
    for (int b = 0; b < N_BODIES; b++) {
        free(bodies[b]);
        free(alone[b]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_served_with_shortlist),
        cmocka_unit_test(test_corrupt_shortlist_refused),
        cmocka_unit_test(test_concurrent_mixed),
    };
    int rc = cmocka_run_group_tests_name("test_shortlist_server", tests, NULL, NULL);
    printf("[ info ] test_shortlist_server: %ld checks of replies and start-ups\n", n_checked);
    kill_all_children();
    return rc;
}
