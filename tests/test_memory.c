/* test_memory: one large request does not leave the server's memory up
 * (issue 30), against the real server.
 *
 * A request of 200 sampled sentences touches tens of MB of a session's K/V
 * caches and logits; those pages stayed resident for good (RSS 58 -> 86 MB,
 * malloc_trim giving back ~1 MB: not the heap).  Now a session going idle
 * gives them back (mt_session_trim: the scheduler's when it has nothing to
 * decode, a pooled one when it is put back).  Each test warms the server up
 * with a few single sentences, reads its RSS, sends the large request, waits
 * for it to go idle and expects the RSS back within 10% of where it was;
 * with continuous batching (the scheduler's session) and with --batching off
 * (a pooled session, as wide).  Skipped under sanitizers (their shadow memory and
 * quarantine are most of the RSS there) and without models/en-fr.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

#define N_BIG      200          /* sentences of the large request */
#define WARM_UP    5
#define SETTLE_S   3.0          /* after going idle, how long the RSS may take to come down */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

static const char *const WORDS[] = { "red", "old", "small", "house", "car", "dog", "river", "city", "garden",
                                     "teacher", "doctor", "friend", "window", "book", "train", "letter" };
static const char *const VERBS[] = { "sees", "likes", "paints", "finds", "sells", "buys", "opens", "watches" };
#define N_WORDS ((int)(sizeof WORDS / sizeof WORDS[0]))
#define N_VERBS ((int)(sizeof VERBS / sizeof VERBS[0]))

/* Sentence i: different for every i (its number), of the length of real ones. */
static int sentence(char *out, size_t cap, int i)
{
    return snprintf(out, cap, "The %s %s %s the %s %s near the %s %s, number %d.", WORDS[i % N_WORDS],
                    WORDS[(i / 3 + 5) % N_WORDS], VERBS[i % N_VERBS], WORDS[(i * 7 + 1) % N_WORDS],
                    WORDS[(i * 5 + 3) % N_WORDS], WORDS[(i / 2 + 9) % N_WORDS], WORDS[(i * 11 + 2) % N_WORDS],
                    i);
}

/* {"text":[n sentences from first], sampling (top_k 10, seed 1)} */
static char *body_of(int n, int first)
{
    size_t cap = 256 + (size_t)n * 128, len;
    char *b = malloc(cap), one[128];
    assert_non_null(b);
    len = (size_t)snprintf(b, cap, "{\"source\":\"en\",\"target\":\"fr\",\"sampling\":{\"top_k\":10,\"seed\":1},"
                                   "\"text\":[");
    for (int i = 0; i < n; i++) {
        sentence(one, sizeof one, first + i);
        len += (size_t)snprintf(b + len, cap - len, "%s\"%s\"", i ? "," : "", one);
    }
    snprintf(b + len, cap - len, "]}");
    return b;
}

static void post_ok(server *s, const char *body)
{
    req_opts o = { .body = body, .timeout_ms = 600000 };
    reply r = http_req(s, "/translate", &o);
    if (r.status != 200)
        print_error("status %ld: %s\n", r.status, r.body ? r.body : "");
    assert_int_equal(r.status, 200);
    reply_free(&r);
}

/* Nothing decodes or waits (the scheduler's gauges; 0 with --batching off),
 * then a moment for the decoder to go idle (its trim runs after the reply). */
static void wait_idle(server *s)
{
    for (int k = 0; k < 600; k++) {
        if (metric(s, "mtserve_active_sequences") == 0 && metric(s, "mtserve_waiting_sequences") == 0)
            break;
        sleep_ms(50);
    }
    sleep_ms(200);
}

static void large_request_gives_memory_back(const char *batching)
{
#ifdef SANITIZED
    print_message("[  SKIP    ] under a sanitizer the RSS is its shadow memory\n");
    skip();
#endif
    struct stat sb;
    if (stat("models/en-fr/model.safetensors", &sb) != 0) {
        print_message("[  SKIP    ] models/en-fr does not exist\n");
        skip();
    }
    /* 64 rows: the scheduler's default, and a pooled session as wide (the
     * pool's default 8 rows hold ~5 MB of such a request) */
    const char *args[] = { "--model", "en-fr=models/en-fr", "--max-tokens", "100000", "--max-batch", "64",
                           "--batching", batching, NULL };
    server srv;
    assert_int_equal(server_start(&srv, args), 0);
    for (int i = 0; i < WARM_UP; i++) {
        char *one = body_of(1, 1000 + i);
        post_ok(&srv, one);
        free(one);
    }
    wait_idle(&srv);
    long steady = server_rss_kb(&srv);
    assert_true(steady > 0);

    char *big = body_of(N_BIG, 0);
    double t0 = now_s();
    post_ok(&srv, big);
    double took = now_s() - t0;
    free(big);
    wait_idle(&srv);
    long after = server_rss_kb(&srv), bound = steady + steady / 10;
    for (double t = now_s(); after > bound && now_s() - t < SETTLE_S; after = server_rss_kb(&srv))
        sleep_ms(100);
    printf("--batching %s: RSS %.1f MB steady, %.1f MB after %d sampled sentences (%.1f s) once idle "
           "(bound %.1f MB)\n", batching, steady / 1024.0, after / 1024.0, N_BIG, took, bound / 1024.0);
    assert_true(after <= bound);
    assert_int_equal(server_stop(&srv), 0);
}

static void test_scheduler_gives_memory_back(void **state)
{
    (void)state;
    large_request_gives_memory_back("on");
}

static void test_pooled_session_gives_memory_back(void **state)
{
    (void)state;
    large_request_gives_memory_back("off");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scheduler_gives_memory_back),
        cmocka_unit_test(test_pooled_session_gives_memory_back),
    };
    curl_global_init(CURL_GLOBAL_ALL);
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kill_all_children();
    return rc;
}
