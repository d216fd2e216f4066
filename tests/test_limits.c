/* test_limits: rate limits per client against the real server.
 *
 * Clients are told apart by address (requests leave from 127.0.0.2, .3, ...:
 * all of 127/8 is this machine), by the X-Forwarded-For of a trusted proxy,
 * or by API key.  Each server gets its own limits:
 *  - --req-limit 3: a client's 4th request in the minute gets 429 with
 *    Retry-After and the JSON error (ours, and LibreTranslate's shape);
 *    another address is not affected; a spoofed X-Forwarded-For from an
 *    untrusted peer changes nothing; the routes that do not compute are not
 *    counted; /metrics counts the refusals;
 *  - --trusted-proxy 127.0.0.1 --req-limit 2 --char-limit 40: the forwarded
 *    addresses are the clients; characters count per minute, and a text
 *    over the whole minute's budget gets 413;
 *  - --api-keys FILE --req-limit 1: a key's own limits (0 lifts it), a key
 *    is one client from any address, two keys from one address are two.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static const char *TR = "{\"text\":\"Hello world.\",\"source\":\"en\",\"target\":\"fr\"}";

static reply send_req(const server *s, const char *path, const char *body, const char *from, const char *h1,
                  const char *h2)
{
    req_opts o = { .body = body, .from = from, .extra = { h1, h2 } };
    return http_req(s, path, &o);
}

/* Asserts a 429 with Retry-After in [1, max_s] and the error (ours or LibreTranslate's). */
static void expect_limited(reply *r, int lt, int max_s)
{
    json_t *j = expect_json(r, 429);
    char ra[32] = "";
    assert_true(header(r, "Retry-After", ra, sizeof ra));
    int s = atoi(ra);
    if (s < 1 || s > max_s)
        print_error("Retry-After %s (expected 1..%d)\n", ra, max_s);
    assert_true(s >= 1 && s <= max_s);
    if (lt) {
        assert_true(json_is_string(json_object_get(j, "error")));
    } else {
        json_t *e = json_object_get(j, "error");
        assert_string_equal(json_string_value(json_object_get(e, "code")), "rate_limited");
        assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "per minute"));
    }
    json_decref(j);
}

static void expect_status(reply *r, long status)
{
    json_t *j = expect_json(r, status);
    json_decref(j);
}

static void test_requests_per_address(void **state)
{
    (void)state;
    server s;
    const char *args[] = { "--model", "models/en-fr", "--req-limit", "3", NULL };
    assert_int_equal(server_start(&s, args), 0);
    for (int i = 0; i < 3; i++) {
        reply r = send_req(&s, "/translate", TR, "127.0.0.2", NULL, NULL);
        expect_status(&r, 200);
        reply_free(&r);
    }
    reply r = send_req(&s, "/translate", TR, "127.0.0.2", NULL, NULL);
    expect_limited(&r, 0, 20);          /* one request refills in 20 s */
    reply_free(&r);
    /* LibreTranslate's shape, same client: its error envelope */
    r = send_req(&s, "/translate", "{\"q\":\"Hello.\",\"source\":\"en\",\"target\":\"fr\"}", "127.0.0.2", NULL, NULL);
    expect_limited(&r, 1, 20);
    reply_free(&r);
    /* /detect counts too; /languages and /tokenize do not */
    r = send_req(&s, "/detect", "{\"q\":\"Hello world.\"}", "127.0.0.2", NULL, NULL);
    expect_limited(&r, 1, 20);
    reply_free(&r);
    req_opts g = { .from = "127.0.0.2" };
    r = http_req(&s, "/languages", &g);
    expect_status(&r, 200);
    reply_free(&r);
    r = send_req(&s, "/tokenize", "{\"text\":\"Hello.\"}", "127.0.0.2", NULL, NULL);
    expect_status(&r, 200);
    reply_free(&r);
    /* another address is another client */
    r = send_req(&s, "/translate", TR, "127.0.0.3", NULL, NULL);
    expect_status(&r, 200);
    reply_free(&r);
    /* an untrusted peer's X-Forwarded-For is ignored: still 127.0.0.2 */
    r = send_req(&s, "/translate", TR, "127.0.0.2", "X-Forwarded-For: 203.0.113.77", NULL);
    expect_limited(&r, 0, 20);
    reply_free(&r);
    double n = metric(&s, "mtserve_rate_limited_total{limit=\"requests\"}");
    printf("429s counted: %.0f\n", n);
    assert_true(n == 4);
    assert_true(metric(&s, "mtserve_requests_total{route=\"/translate\",status=\"429\"}") == 3);
    assert_int_equal(server_stop(&s), 0);
}

static void test_forwarded_clients_and_chars(void **state)
{
    (void)state;
    server s;
    const char *args[] = { "--model", "models/en-fr", "--trusted-proxy", "127.0.0.1", "--req-limit", "2",
                           "--char-limit", "40", NULL };
    assert_int_equal(server_start(&s, args), 0);
    const char *a = "X-Forwarded-For: 1.1.1.1, 198.51.100.1";    /* the client wrote the first entry */
    for (int i = 0; i < 2; i++) {
        reply r = send_req(&s, "/translate", TR, "127.0.0.1", a, NULL);
        expect_status(&r, 200);
        reply_free(&r);
    }
    reply r = send_req(&s, "/translate", TR, "127.0.0.1", a, NULL);
    expect_limited(&r, 0, 30);
    reply_free(&r);
    /* the spoofed first entry is not the client */
    r = send_req(&s, "/translate", TR, "127.0.0.1", "X-Forwarded-For: 198.51.100.1", NULL);
    expect_limited(&r, 0, 30);
    reply_free(&r);
    r = send_req(&s, "/translate", TR, "127.0.0.1", "X-Forwarded-For: 198.51.100.2", NULL);
    expect_status(&r, 200);
    reply_free(&r);
    /* characters: 30 pass, 30 more are over the 40 a minute (refills 2 every 3 s) */
    const char *thirty = "{\"text\":\"This is a sentence of thirty.\",\"source\":\"en\",\"target\":\"fr\"}";
    r = send_req(&s, "/translate", thirty, "127.0.0.1", "X-Forwarded-For: 198.51.100.3", NULL);
    expect_status(&r, 200);
    reply_free(&r);
    r = send_req(&s, "/translate", thirty, "127.0.0.1", "X-Forwarded-For: 198.51.100.3", NULL);
    expect_limited(&r, 0, 60);
    reply_free(&r);
    /* a text over the whole minute's budget can never pass: 413 at once, not 429 */
    const char *long_text = "{\"text\":[\"This sentence is long.\",\"So is this one, twice.\"],"
                            "\"source\":\"en\",\"target\":\"fr\"}";
    r = send_req(&s, "/translate", long_text, "127.0.0.1", "X-Forwarded-For: 198.51.100.4", NULL);
    json_t *j = expect_json(&r, 413);
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")),
                           "characters"));
    json_decref(j);
    reply_free(&r);
    /* the characters are code points, not bytes: 40 of them in 80 bytes pass */
    char body[512];
    char text[128] = "";
    for (int i = 0; i < 40; i++)
        strcat(text, "\xc3\xa9");
    snprintf(body, sizeof body, "{\"text\":\"%s\",\"source\":\"en\",\"target\":\"fr\"}", text);
    r = send_req(&s, "/translate", body, "127.0.0.1", "X-Forwarded-For: 2001:db8::5", NULL);
    expect_status(&r, 200);
    reply_free(&r);
    assert_true(metric(&s, "mtserve_rate_limited_total{limit=\"chars\"}") == 1);
    assert_int_equal(server_stop(&s), 0);
}

static void test_key_limits(void **state)
{
    (void)state;
    char path[] = "/tmp/mtserve-keys-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *keys = "# test keys\nk-free req-limit=0\nk-two req-limit=2\nk-default\n";
    assert_int_equal(write(fd, keys, strlen(keys)), (ssize_t)strlen(keys));
    close(fd);
    server s;
    const char *args[] = { "--model", "models/en-fr", "--api-keys", path, "--req-limit", "1", NULL };
    assert_int_equal(server_start(&s, args), 0);
    for (int i = 0; i < 5; i++) {
        reply r = send_req(&s, "/translate", TR, "127.0.0.2", "Authorization: Bearer k-free", NULL);
        expect_status(&r, 200);
        reply_free(&r);
    }
    for (int i = 0; i < 2; i++) {       /* one key from two addresses: one client */
        reply r = send_req(&s, "/translate", TR, i ? "127.0.0.3" : "127.0.0.2", "Authorization: Bearer k-two", NULL);
        expect_status(&r, 200);
        reply_free(&r);
    }
    reply r = send_req(&s, "/translate", TR, "127.0.0.4", "Authorization: Bearer k-two", NULL);
    expect_limited(&r, 0, 30);
    reply_free(&r);
    /* the server's limit for a key without its own; LibreTranslate's api_key field */
    const char *lt = "{\"q\":\"Hello.\",\"source\":\"en\",\"target\":\"fr\",\"api_key\":\"k-default\"}";
    r = send_req(&s, "/translate", lt, "127.0.0.2", NULL, NULL);
    expect_status(&r, 200);
    reply_free(&r);
    r = send_req(&s, "/translate", lt, "127.0.0.2", NULL, NULL);
    expect_limited(&r, 1, 60);
    reply_free(&r);
    /* keys are required: none, or a wrong one, is refused before any limit */
    r = send_req(&s, "/translate", TR, "127.0.0.5", NULL, NULL);
    expect_status(&r, 401);
    reply_free(&r);
    r = send_req(&s, "/translate", TR, "127.0.0.5", "Authorization: Bearer k-fre", NULL);
    expect_status(&r, 401);
    reply_free(&r);
    assert_int_equal(server_stop(&s), 0);
    unlink(path);
}

/* A bad keys file or proxy list stops the start with the reason. */
static void test_bad_config(void **state)
{
    (void)state;
    char path[] = "/tmp/mtserve-keys-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *keys = "good\nbad req-limit=many\n";
    assert_int_equal(write(fd, keys, strlen(keys)), (ssize_t)strlen(keys));
    close(fd);
    const char *bad[][3] = { { "--api-keys", path, "line 2" },
                             { "--trusted-proxy", "10.0.0.0/40", "10.0.0.0/40" },
                             { "--api-keys", "/nonexistent/keys", "/nonexistent/keys" } };
    for (int i = 0; i < 3; i++) {
        server s;
        const char *args[] = { "--model", "models/en-fr", bad[i][0], bad[i][1], NULL };
        assert_int_equal(server_spawn(&s, args, NULL), 0);
        int st = wait_child(s.pid, 30);
        assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0);
        FILE *f = fopen(s.log, "r");
        assert_non_null(f);
        char log[4096] = "";
        size_t n = fread(log, 1, sizeof log - 1, f);
        log[n] = 0;
        fclose(f);
        if (!strstr(log, bad[i][2]))
            print_error("log of %s %s: %s\n", bad[i][0], bad[i][1], log);
        assert_non_null(strstr(log, bad[i][2]));
        untrack(s.pid);
    }
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_per_address),
        cmocka_unit_test(test_forwarded_clients_and_chars),
        cmocka_unit_test(test_key_limits),
        cmocka_unit_test(test_bad_config),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kill_all_children();
    return rc;
}
