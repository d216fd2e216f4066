/* test_lb: three replicas of the real server behind a real nginx (cmocka + libcurl).
 *
 * Three `mtserve serve --model models/tiny` replicas on free loopback ports,
 * and Debian's nginx in front of them on another (tests/nginx_harness.h: its
 * own prefix, least_conn with keepalive, max_fails=1 fail_timeout=2s per
 * server, docker/nginx/proxy.conf's policy: a failed or refused attempt is
 * retried on another replica; a translation is idempotent, so retrying a
 * POST is right).
 *
 *   test_failover: 16 keep-alive clients send 1,000 POST /translate through
 *   nginx; after ~300 have completed one replica is SIGKILLed.  Every one of
 *   the 1,000 must be 200 with the translation a replica gives for the same
 *   input alone (decoding is deterministic).  The replica is then restarted
 *   on the same port and, after fail_timeout, 200 more requests through
 *   nginx must all succeed and reach it (its /metrics counts /translate 200).
 *
 *   test_one_vs_three: 400 requests from 16 clients through an nginx with 1
 *   upstream server, then through the one with 3; throughput and p99 are
 *   printed as "# ..." lines, never judged (the machine is shared).
 *
 * nginx is a test package (`make deps` installs nginx-light): without it the
 * setup fails, it is never skipped.  Every request
 * has a timeout, every wait a deadline; every child (replicas and nginx
 * masters) is tracked by the harness and killed at the end or on our death.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "nginx_harness.h"

#define MODEL          "models/tiny"
#define MAX_LENGTH     16
#define INPUTS_FILE    "tests/fixtures/tokenizer/inputs/test.en.txt"
#define N_INPUTS       24
#define N_REPLICAS     3
#define CLIENTS        16
#define FAILOVER_REQS  1000
#define KILL_AFTER     300
#define REJOIN_REQS    200
#define MEASURE_REQS   400
#define REQ_TIMEOUT_MS 30000
#define RUN_BUDGET_S   120.0    /* no request of a run starts after this */

static server rep[N_REPLICAS];
static lb     lb3, lb1;
static char  *inputs[N_INPUTS];
static char  *expected[N_INPUTS];

/* ---- inputs, references ----------------------------------------------------------- */

static int load_inputs(void)
{
    FILE *f = fopen(INPUTS_FILE, "r");
    char line[4096];
    static char *sent[4096];
    int n = 0;
    while (f && n < 4096 && fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\r\n");
        line[len] = 0;
        if (len >= 20 && len <= 80 && line[len - 1] == '.' && line[0] != '*' && line[0] != '-')
            sent[n++] = strdup(line);
    }
    if (f)
        fclose(f);
    if (n < N_INPUTS) {
        print_error("%s: %d usable sentences, need %d\n", INPUTS_FILE, n, N_INPUTS);
        return -1;
    }
    for (int i = 0; i < N_INPUTS; i++)
        inputs[i] = strdup(sent[i * (n / N_INPUTS)]);
    for (int i = 0; i < n; i++)
        free(sent[i]);
    return 0;
}

static char *translate_body(int input)
{
    json_t *b = json_pack("{s:s,s:i}", "text", inputs[input], "max_length", MAX_LENGTH);
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

static int compute_references(const server *s)
{
    for (int i = 0; i < N_INPUTS; i++) {
        char *body = translate_body(i), why[300] = "";
        req_opts o = { .body = body, .timeout_ms = REQ_TIMEOUT_MS };
        reply r = http_req(s, "/translate", &o);
        expected[i] = r.status == 200 ? reply_text(&r, why, sizeof why) : NULL;
        if (!expected[i])
            print_error("reference %d: status %ld curl %d %s\n", i, r.status, r.curl_rc, why);
        reply_free(&r);
        free(body);
        if (!expected[i])
            return -1;
    }
    return 0;
}

/* ---- a run of requests through nginx ------------------------------------------------ */

typedef struct {
    const server *s;
    int           limit;
    double        deadline;
    _Atomic int   next, done, failed;
    double       *lat;          /* [limit], seconds */
    pthread_mutex_t mu;
    char          problem[600]; /* the first failure */
} run;

static void run_note(run *u, const char *fmt, ...)
{
    pthread_mutex_lock(&u->mu);
    if (!u->problem[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(u->problem, sizeof u->problem, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&u->mu);
}

static void *client_main(void *arg)
{
    run *u = arg;
    CURL *h = curl_easy_init();
    for (;;) {
        int k = atomic_fetch_add(&u->next, 1);
        if (k >= u->limit)
            break;
        if (!h || now_s() > u->deadline) {
            atomic_fetch_add(&u->failed, 1);
            run_note(u, "request %d: %s", k, h ? "not started: over the time budget" : "no curl handle");
            continue;
        }
        int input = k % N_INPUTS;
        char *body = translate_body(input), why[300] = "";
        req_opts o = { .body = body, .timeout_ms = REQ_TIMEOUT_MS };
        double t0 = now_s();
        reply r = http_req_on(h, u->s, "/translate", &o);
        u->lat[k] = now_s() - t0;
        char *t = NULL;
        if (r.curl_rc != 0)
            run_note(u, "request %d: transport error %d (%s)", k, r.curl_rc, curl_easy_strerror((CURLcode)r.curl_rc));
        else if (r.status != 200)
            run_note(u, "request %d: status %ld: %.200s", k, r.status, r.body ? r.body : "");
        else if (!(t = reply_text(&r, why, sizeof why)))
            run_note(u, "request %d: %s", k, why);
        else if (strcmp(t, expected[input]) != 0)
            run_note(u, "request %d: input %d differs:\n#   alone: %s\n#   via lb: %s", k, input, expected[input], t);
        if (!t || strcmp(t, expected[input]) != 0)
            atomic_fetch_add(&u->failed, 1);
        free(t);
        reply_free(&r);
        free(body);
        atomic_fetch_add(&u->done, 1);
    }
    if (h)
        curl_easy_cleanup(h);
    return NULL;
}

/* mtserve_requests_total{route="/translate",status="200"} of s, or -1. */
/* The replica's /translate 200 count: 0 while it has none (the counter is
 * not listed yet), -1 when /metrics does not answer. */
static long translate_200(const server *s)
{
    req_opts o = { .timeout_ms = 5000 };
    reply r = http_req(s, "/metrics", &o);
    const char *key = "mtserve_requests_total{route=\"/translate\",status=\"200\"} ";
    const char *p = r.status == 200 && r.body ? strstr(r.body, key) : NULL;
    long v = p ? strtol(p + strlen(key), NULL, 10) : (r.status == 200 ? 0 : -1);
    reply_free(&r);
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    int    failed;
    double seconds, rps, p50, p99;
} run_result;

/* n requests from CLIENTS threads through b; if victim, SIGKILL it once
 * kill_after have completed (its pid is untracked and reaped). */
static run_result do_run(const lb *b, int n, server *victim, int kill_after)
{
    run *u = calloc(1, sizeof *u);
    u->s = &b->s;
    u->limit = n;
    u->deadline = now_s() + RUN_BUDGET_S;
    u->lat = calloc((size_t)n, sizeof *u->lat);
    pthread_mutex_init(&u->mu, NULL);
    pthread_t th[CLIENTS];
    int started = 0;
    double t0 = now_s();
    for (int i = 0; i < CLIENTS; i++)
        if (pthread_create(&th[i], NULL, client_main, u) == 0)
            started++;
    if (victim) {
        double until = now_s() + RUN_BUDGET_S;
        while (atomic_load(&u->done) < kill_after && now_s() < until)
            sleep_ms(2);
        int at = atomic_load(&u->done);
        long before = translate_200(victim);    /* it was in the rotation */
        kill(victim->pid, SIGKILL);
        int ws = wait_child(victim->pid, 10);
        untrack(victim->pid);
        print_message("# failover: replica on port %d SIGKILLed after %d of %d replies, having served %ld (%s)\n",
                      victim->port, at, n, before, ws != -1 && WIFSIGNALED(ws) ? "reaped" : "NOT reaped");
        if (before <= 0 || ws == -1) {
            atomic_fetch_add(&u->failed, 1);
            run_note(u, "the victim had served %ld requests; wait status %d", before, ws);
        }
        victim->pid = 0;
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    run_result res = { .failed = atomic_load(&u->failed), .seconds = now_s() - t0 };
    if (started < CLIENTS)
        print_error("only %d of %d client threads started\n", started, CLIENTS);
    if (started == 0)
        res.failed = n;
    res.rps = n / res.seconds;
    qsort(u->lat, (size_t)n, sizeof *u->lat, cmp_double);
    res.p50 = u->lat[n / 2];
    res.p99 = u->lat[(int)ceil(0.99 * n) - 1];
    if (res.failed)
        print_error("%d of %d requests failed; the first: %s\n", res.failed, n, u->problem);
    pthread_mutex_destroy(&u->mu);
    free(u->lat);
    free(u);
    return res;
}

/* ---- setup, tests ----------------------------------------------------------------- */

static const char *const replica_args[] = { "--model", MODEL, NULL };

static void cleanup(void)
{
    lb_stop(&lb1);
    lb_stop(&lb3);
    kill_all_children();
    for (int i = 0; i < N_INPUTS; i++) {
        free(inputs[i]);
        free(expected[i]);
        inputs[i] = expected[i] = NULL;
    }
}

static int teardown(void **state)
{
    cleanup();
    curl_global_cleanup();
    return 0;
}

static int setup(void **state)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (access(NGINX_BIN, X_OK) != 0) {
        print_error("%s not found (make deps installs nginx-light)\n", NGINX_BIN);
        return -1;
    }
    if (load_inputs())
        goto fail;
    int ports[N_REPLICAS];
    for (int i = 0; i < N_REPLICAS; i++) {
        if (server_start(&rep[i], replica_args))
            goto fail;
        ports[i] = rep[i].port;
    }
    if (compute_references(&rep[0]) || lb_start(&lb3, ports, N_REPLICAS))
        goto fail;
    print_message("# replicas on ports %d %d %d, nginx on %d (prefix %s)\n", ports[0], ports[1], ports[2],
                  lb3.s.port, lb3.dir);
    return 0;
fail:
    cleanup();
    return -1;
}

/* Restarts the killed replica *s on its old port: the server takes the
 * last --port, so ours follows the harness's own. */
static int restart_on_port(server *s, int port)
{
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    const char *const args[] = { "--model", MODEL, "--port", p, NULL };
    for (int attempt = 0; attempt < 3; attempt++) {
        if (server_spawn(s, args, NULL))
            return -1;
        s->port = port;
        snprintf(s->base, sizeof s->base, "http://127.0.0.1:%d", port);
        if (wait_health(s, 200) == 0)
            return 0;
        if (s->pid > 0)
            kill_child(s->pid);
        sleep_ms(500);              /* e.g. the port not yet free */
    }
    return -1;
}

static void test_failover(void **state)
{
    server *victim = &rep[1];
    int port = victim->port;
    run_result r = do_run(&lb3, FAILOVER_REQS, victim, KILL_AFTER);
    print_message("# failover: %d requests, 16 clients, 3 -> 2 replicas: %d failed, %.2f s, %.0f req/s, p50 %.1f ms, "
                  "p99 %.1f ms\n", FAILOVER_REQS, r.failed, r.seconds, r.rps, r.p50 * 1e3, r.p99 * 1e3);
    /* what nginx saw of the dead replica (each such attempt was retried elsewhere) */
    int upstream_errors = lb_errors_for(&lb3, port);
    print_message("# failover: nginx logged %d failed attempts on the killed replica\n", upstream_errors);
    assert_int_equal(r.failed, 0);
    assert_true(server_alive(&rep[0]) && server_alive(&rep[2]));

    double t_restart = now_s();
    assert_int_equal(restart_on_port(victim, port), 0);
    assert_int_equal(translate_200(victim), 0);
    /* nginx retries it after fail_timeout from its last failed attempt, at the latest now */
    double wait_s = LB_FAIL_TIMEOUT_S + 0.5 - (now_s() - t_restart);
    if (wait_s > 0)
        sleep_ms((int)(wait_s * 1000));
    double t_rejoin = now_s();
    run_result r2 = do_run(&lb3, REJOIN_REQS, NULL, 0);
    long n = translate_200(victim);
    print_message("# rejoin: replica restarted on port %d; of %d more requests through nginx %.1f s later it "
                  "served %ld (%d failed)\n", port, REJOIN_REQS, t_rejoin - t_restart, n, r2.failed);
    assert_int_equal(r2.failed, 0);
    assert_true(n > 0);
}

static void test_one_vs_three(void **state)
{
    int one = rep[0].port;
    assert_int_equal(lb_start(&lb1, &one, 1), 0);
    run_result r[2];
    const lb *via[2] = { &lb1, &lb3 };
    for (int i = 0; i < 2; i++) {
        run_result warm = do_run(via[i], 32, NULL, 0);     /* connections, caches */
        assert_int_equal(warm.failed, 0);
        r[i] = do_run(via[i], MEASURE_REQS, NULL, 0);
    }
    lb_stop(&lb1);
    for (int i = 0; i < 2; i++)
        print_message("# %d replica%s behind nginx: %d requests, 16 clients: %.0f req/s, p50 %.1f ms, p99 %.1f ms "
                      "(%d failed)\n", i ? 3 : 1, i ? "s" : "", MEASURE_REQS, r[i].rps, r[i].p50 * 1e3,
                      r[i].p99 * 1e3, r[i].failed);
    assert_int_equal(r[0].failed, 0);
    assert_int_equal(r[1].failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failover),
        cmocka_unit_test(test_one_vs_three),
    };
    atexit(cleanup);
    return cmocka_run_group_tests(tests, setup, teardown);
}
