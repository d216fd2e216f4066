/* test_score: POST /score over HTTP against the PyTorch reference (cmocka + libcurl).
 *
 * The real binary ($MTSERVE_BIN) serves models/en-fr and models/tiny on a
 * free loopback port.  Every pair of tests/fixtures/<model>/score.jsonl
 * (models/recipe/score_fixtures.py: python3-sentencepiece tokenization, the
 * PyTorch reference's teacher-forced pass with the causal mask) is scored in
 * one request: the target tokens and ids must be the reference's, each
 * log-prob within SCORE_REL_TOL of the reference's (relative to max(1, |ref|):
 * the engine's float32 products in another order; measured up to 6.4e-6 on
 * en-fr), score their sum and normalized_score their mean.  Then every
 * validation error: the status, the code and the field named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"

#define SCORE_REL_TOL 1e-4

static server srv;

static int group_setup(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "en-fr=models/en-fr", "--model", "tiny=models/tiny",
                                        "--max-tokens", "1000", NULL };
    curl_global_init(CURL_GLOBAL_ALL);
    return server_start(&srv, args);
}

static int group_teardown(void **state)
{
    (void)state;
    int rc = 0;
    if (srv.pid) {
        int status = server_stop(&srv);
        if (status < 0 || !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            print_error("server: exit status %d (-2: sanitizer report in %s)\n", status, srv.log);
            rc = -1;
        }
    }
    kill_all_children();
    curl_global_cleanup();
    return rc;
}

static double rel_err(double a, double b) { return fabs(a - b) / (fabs(b) > 1 ? fabs(b) : 1); }

/* Every pair of the model's score.jsonl in one /score request, against the reference. */
static void score_fixture(const char *model)
{
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/%s/score.jsonl", model);
    json_t *cases = load_jsonl(path), *pairs = json_array();
    size_t n = json_array_size(cases);
    assert_true(n >= 8 && n <= 64);
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(cases, i);
        json_array_append_new(pairs, json_pack("{s:O,s:O}", "source", json_object_get(c, "source"), "target",
                                               json_object_get(c, "target")));
    }
    json_t *req = json_pack("{s:o,s:s}", "pairs", pairs, "model", model);
    char *body = json_dumps(req, 0);
    reply r = post(&srv, "/score", body);
    if (r.status != 200)
        print_error("/score: %ld %.300s\n", r.status, r.body ? r.body : "");
    assert_int_equal(r.status, 200);
    json_t *j = reply_json(&r);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "model")), model);
    json_t *scores = json_object_get(j, "scores");
    assert_int_equal(json_array_size(scores), n);
    double worst = 0;
    long compared = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(cases, i), *s = json_array_get(scores, i);
        assert_true(json_equal(json_object_get(s, "token_ids"), json_object_get(c, "tgt_ids")));
        assert_true(json_equal(json_object_get(s, "tokens"), json_object_get(c, "tokens")));
        json_t *got = json_object_get(s, "log_probs"), *ref = json_object_get(c, "log_probs");
        size_t T = json_array_size(ref);
        assert_int_equal(json_array_size(got), T);
        double sum = 0;
        for (size_t t = 0; t < T; t++, compared++) {
            json_t *g = json_array_get(got, t);
            assert_true(json_is_number(g));
            double e = rel_err(json_number_value(g), json_number_value(json_array_get(ref, t)));
            worst = e > worst ? e : worst;
            sum += json_number_value(g);
        }
        double score = json_number_value(json_object_get(s, "score"));
        assert_true(rel_err(score, json_number_value(json_object_get(c, "score"))) <= SCORE_REL_TOL * (double)T);
        assert_true(fabs(score - sum) <= 1e-6 * (1 + fabs(sum)));
        assert_true(fabs(json_number_value(json_object_get(s, "normalized_score")) - sum / (double)T) <=
                    1e-6 * (1 + fabs(sum)));
    }
    print_message("# /score [%s]: %zu pairs in one request, %ld log-probs, max rel err vs the PyTorch "
                  "reference %.3g (tolerance %g)\n", model, n, compared, worst, SCORE_REL_TOL);
    assert_true(worst <= SCORE_REL_TOL);
    json_decref(j);
    reply_free(&r);
    free(body);
    json_decref(req);
    json_decref(cases);
}

static void test_score_en_fr(void **state)
{
    (void)state;
    score_fixture("en-fr");
}

static void test_score_tiny(void **state)
{
    (void)state;
    score_fixture("tiny");
}

static void expect_error(const char *body, long status, const char *code, const char *word)
{
    reply r = post(&srv, "/score", body);
    json_t *j = reply_json(&r);
    assert_non_null(j);
    const char *got = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    if (r.status != status || !got || strcmp(got, code) || !msg || !strstr(msg, word))
        print_error("%s: expected %ld %s '%s', got %ld %s\n", body, status, code, word, r.status,
                    r.body ? r.body : "");
    assert_int_equal(r.status, status);
    assert_string_equal(got, code);
    assert_non_null(strstr(msg, word));
    json_decref(j);
    reply_free(&r);
}

static void test_score_errors(void **state)
{
    (void)state;
    expect_error("{}", 400, "invalid_field", "'pairs' is required");
    expect_error("{\"pairs\": \"x\"}", 400, "invalid_field", "'pairs' must be a list");
    expect_error("{\"pairs\": []}", 400, "invalid_field", "'pairs' is an empty list");
    expect_error("{\"pairs\": [1]}", 400, "invalid_field", "'pairs[0]' must be an object");
    expect_error("{\"pairs\": [{\"source\": \"Hi\", \"target\": \"Salut\"}, {\"target\": \"x\"}]}", 400,
                 "invalid_field", "'pairs[1].source' is required");
    expect_error("{\"pairs\": [{\"source\": \"Hi\", \"target\": 3}]}", 400, "invalid_field",
                 "'pairs[0].target' must be a string");
    expect_error("{\"pairs\": [{\"source\": \"Hi\", \"target\": \" \\n\"}]}", 400, "empty_text",
                 "'pairs[0].target' is empty");
    expect_error("{\"pairs\": [{\"source\": \"\", \"target\": \"x\"}]}", 400, "empty_text",
                 "'pairs[0].source' is empty");
    expect_error("{\"pairs\": [{\"source\": \"Hi\", \"target\": \"x\"}], \"model\": \"nope\"}", 404,
                 "unknown_model", "nope");
    expect_error("{\"pairs\": [{\"source\": \"Hi\", \"target\": \"x\"}], \"model\": 3}", 400, "invalid_field",
                 "model");
    expect_error("[1, 2]", 400, "invalid_json", "JSON object");
    expect_error("{\"pairs\": [", 400, "invalid_json", "");
    /* 65 pairs */
    json_t *pairs = json_array();
    for (int i = 0; i < 65; i++)
        json_array_append_new(pairs, json_pack("{s:s,s:s}", "source", "Hi", "target", "Salut"));
    json_t *req = json_pack("{s:o}", "pairs", pairs);
    char *body = json_dumps(req, 0);
    expect_error(body, 400, "invalid_field", "'pairs' has 65 entries; the limit is 64");
    free(body);
    json_decref(req);
    /* a target longer than the decoder (tiny: 512 positions), the field named */
    size_t len = 4000;
    char *longt = malloc(len * 2 + 200);
    strcpy(longt, "{\"model\": \"tiny\", \"pairs\": [{\"source\": \"Hi\", \"target\": \"");
    for (size_t i = 0; i < len / 2; i++)
        strcat(longt, "a ");
    strcat(longt, "\"}]}");
    expect_error(longt, 413, "input_too_long", "'pairs[0].target' has");
    free(longt);
    /* the request's tokens over --max-tokens 1000: 60 pairs of ~20 source tokens */
    pairs = json_array();
    for (int i = 0; i < 60; i++)
        json_array_append_new(pairs, json_pack("{s:s,s:s}", "source",
                                               "one two three four five six seven eight nine ten eleven twelve "
                                               "thirteen fourteen fifteen sixteen seventeen", "target", "x"));
    req = json_pack("{s:o}", "pairs", pairs);
    body = json_dumps(req, 0);
    expect_error(body, 413, "input_too_long", "source and");
    free(body);
    json_decref(req);
    /* the route is in the metrics */
    assert_true(metric(&srv, "mtserve_requests_total{route=\"/score\",status=\"200\"}") >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_score_en_fr),
        cmocka_unit_test(test_score_tiny),
        cmocka_unit_test(test_score_errors),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests_name("score", tests, group_setup, group_teardown);
}
