/* test_stream: POST /translate with "stream": true over real HTTP (cmocka + libcurl).
 *
 * The real binary ($MTSERVE_BIN) on a free loopback port; a libcurl client
 * that parses the server-sent events as they arrive (each event's arrival
 * time, and how many network reads carried them).
 *
 * Normal mode:
 *   test_fixture_cases   every case of tests/fixtures/{en-fr,tiny,fr-en}/cases.jsonl
 *                        (the first STREAM_CASES under a sanitizer), greedy and
 *                        beam 4, split off and on, 8 clients at once: the
 *                        streamed deltas of each text joined equal the
 *                        non-streamed text, the done event is the non-streamed
 *                        reply (timing aside), and with split off the text is
 *                        the PyTorch reference's (greedy_text, beam4[0].text)
 *   test_multi_text      several texts of several sentences with odd spacing
 *   test_first_token     events arrive before the reply ends: time to first
 *                        token printed, several network reads
 *   test_disconnect      a client that leaves mid-stream: its rows are freed
 *                        (batch_rows_in_use back to 0), 499 counted; the same
 *                        with --batching off (active sessions back to 0)
 *   test_bad_requests    JSON errors with their status before the stream starts
 *   test_error_event     a failure after the start: event: error (queue timeout)
 *   test_batching_off    --batching off streams too (the session decoder), same texts
 *   test_pivot           a pivot path (de -> en -> fr; "de-en" is models/fr-en
 *                        relabelled): the second leg streams, same texts
 *   test_mixed_load      STREAM_LOAD_CLIENTS clients for STREAM_LOAD_SECONDS,
 *                        half streaming, greedy and beam: 0 errors, every text
 *                        equal to its reference alone
 * TSan mode (MTSERVE_TSAN=1, `make tsan`): concurrent streaming and plain
 * clients, some leaving mid-stream, against --batching on and off with
 * models/tiny; every reply checked; the server exits 0 with no report.
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
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "mt.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_BUILD 1
#else
#define SANITIZER_BUILD 0
#endif

#define STREAM_CASES        (SANITIZER_BUILD ? 24 : 100000)
#define CASE_CLIENTS        8
#define STREAM_TIMEOUT_MS   (SANITIZER_BUILD ? 300000 : 60000)
#define STREAM_LOAD_CLIENTS 16
#define STREAM_LOAD_SECONDS 10.0
#define TSAN_CLIENTS        8
#define TSAN_REQUESTS       120

static server srv;               /* en-fr (default) and tiny, batching on */

/* ---- an SSE client ---------------------------------------------------------------------- */

typedef struct {
    long    status;
    char    ctype[128];
    int     curl_rc;
    char   *buf;                /* the raw body */
    size_t  len, parsed;
    json_t *events;             /* [{"type", "data", "t"}] in arrival order */
    int     reads;              /* network reads that completed at least one event */
    int     deltas;
    int     abort_after;        /* > 0: leave after this many delta events */
    double  t0, t_first, t_end;
} sse;

static void sse_parse(sse *s)
{
    int got = 0;
    for (;;) {
        char *start = s->buf + s->parsed, *end = strstr(start, "\n\n");
        if (!end)
            break;
        *end = 0;
        const char *type = "message", *data = NULL;
        for (char *line = start, *next; line && *line; line = next) {
            next = strchr(line, '\n');
            if (next)
                *next++ = 0;
            if (!strncmp(line, "event: ", 7))
                type = line + 7;
            else if (!strncmp(line, "data: ", 6))
                data = line + 6;
        }
        json_error_t je;
        json_t *d = data ? json_loads(data, 0, &je) : NULL;
        double t = now_s() - s->t0;
        json_array_append_new(s->events, json_pack("{s:s,s:o?,s:f}", "type", type, "data", d, "t", t));
        if (!strcmp(type, "message")) {
            if (!s->deltas++)
                s->t_first = t;
        }
        s->parsed = (size_t)(end - s->buf) + 2;
        got = 1;
    }
    s->reads += got;
}

static size_t sse_write(char *data, size_t size, size_t n, void *arg)
{
    sse *s = arg;
    size_t k = size * n;
    char *p = realloc(s->buf, s->len + k + 1);
    if (!p)
        return 0;
    s->buf = p;
    memcpy(s->buf + s->len, data, k);
    s->len += k;
    s->buf[s->len] = 0;
    sse_parse(s);
    if (s->abort_after > 0 && s->deltas >= s->abort_after)
        return 0;               /* curl aborts the transfer and closes the connection */
    return k;
}

static void sse_free(sse *s)
{
    free(s->buf);
    json_decref(s->events);
    memset(s, 0, sizeof *s);
}

/* POST body to path on handle c (NULL: a new one). */
static sse sse_post_on(CURL *c, const server *sv, const char *body, int abort_after, long timeout_ms)
{
    sse s = { .events = json_array(), .abort_after = abort_after };
    char url[256];
    int own = !c;
    if (own)
        c = curl_easy_init();
    curl_easy_reset(c);
    snprintf(url, sizeof url, "%s/translate", sv->base);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sse_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    s.t0 = now_s();
    s.curl_rc = (int)curl_easy_perform(c);
    s.t_end = now_s() - s.t0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &s.status);
    char *ct = NULL;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(s.ctype, sizeof s.ctype, "%s", ct ? ct : "");
    curl_slist_free_all(h);
    if (own)
        curl_easy_cleanup(c);
    return s;
}

static sse sse_post(const server *sv, const char *body, int abort_after)
{
    return sse_post_on(NULL, sv, body, abort_after, STREAM_TIMEOUT_MS);
}

/* body with "stream": on */
static char *with_stream(json_t *req, int on)
{
    json_object_set_new(req, "stream", json_boolean(on));
    return json_dumps(req, JSON_COMPACT);
}

/* What is wrong with stream s against the plain reply (NULL: nothing). */
static const char *stream_matches(const sse *s, json_t *plain, char *why, size_t wl)
{
    json_t *tr = json_object_get(plain, "translations");
    size_t n = json_array_size(tr), ne = json_array_size(s->events);
    if (s->status != 200 || strncmp(s->ctype, "text/event-stream", 17))
        return snprintf(why, wl, "status %ld, type %s, curl %d", s->status, s->ctype, s->curl_rc), why;
    if (ne == 0)
        return "no events";
    json_t *last = json_array_get(s->events, ne - 1);
    if (strcmp(json_string_value(json_object_get(last, "type")), "done"))
        return snprintf(why, wl, "last event %s: %.200s", json_string_value(json_object_get(last, "type")),
                        s->buf), why;
    json_t *a = json_deep_copy(json_object_get(last, "data")), *b = json_deep_copy(plain);
    json_object_del(a, "timing_ms");
    json_object_del(b, "timing_ms");
    int same = json_equal(a, b);
    json_decref(a);
    json_decref(b);
    if (!same)
        return "the done event is not the plain reply";
    for (size_t i = 0; i < n; i++) {
        const char *want = json_string_value(json_object_get(json_array_get(tr, i), "text"));
        size_t cap = strlen(want) + 4096, at = 0;
        char *got = calloc(1, cap);
        for (size_t k = 0; k + 1 < ne; k++) {
            json_t *e = json_array_get(s->events, k), *d = json_object_get(e, "data");
            if (strcmp(json_string_value(json_object_get(e, "type")), "message")) {
                free(got);
                return "an event other than a delta before done";
            }
            if ((size_t)json_integer_value(json_object_get(d, "index")) != i)
                continue;
            const char *delta = json_string_value(json_object_get(d, "delta"));
            size_t dl = delta ? strlen(delta) : 0;
            if (!delta || at + dl >= cap) {
                free(got);
                return "a delta is missing or too long";
            }
            memcpy(got + at, delta, dl);
            at += dl;
        }
        int ok = !strcmp(got, want);
        if (!ok)
            snprintf(why, wl, "text %zu: deltas joined \"%.150s\" != \"%.150s\"", i, got, want);
        free(got);
        if (!ok)
            return why;
    }
    return NULL;
}

static json_t *plain_post(const server *sv, const char *body, long *status)
{
    req_opts o = { .body = body, .timeout_ms = STREAM_TIMEOUT_MS };
    reply r = http_req(sv, "/translate", &o);
    *status = r.status;
    json_error_t je;
    json_t *j = r.body ? json_loads(r.body, 0, &je) : NULL;
    reply_free(&r);
    return j;
}

/* One request both ways; NULL when they agree (plain_out: the plain reply, kept). */
static const char *both_ways(const server *sv, json_t *req, json_t **plain_out, sse *s_out, char *why, size_t wl)
{
    char *pb = with_stream(req, 0), *sb = with_stream(req, 1);
    long st;
    json_t *plain = plain_post(sv, pb, &st);
    sse s = sse_post(sv, sb, 0);
    const char *bad = NULL;
    if (st != 200 || !plain) {
        snprintf(why, wl, "plain reply %ld", st);
        bad = why;
    } else {
        bad = stream_matches(&s, plain, why, wl);
    }
    free(pb);
    free(sb);
    if (plain_out && !bad)
        *plain_out = plain;
    else
        json_decref(plain);
    if (s_out)
        *s_out = s;
    else
        sse_free(&s);
    return bad;
}

/* ---- group ----------------------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "en-fr=models/en-fr", "--model", "tiny=models/tiny",
                                        "--model", "fr-en=models/fr-en", "--max-tokens", "2000", "--max-body", "1M",
                                        NULL };
    curl_global_init(CURL_GLOBAL_ALL);
    return server_start(&srv, args);
}

static int stop_checked(server *s, const char *what)
{
    int status = server_stop(s);
    if (status < 0 || !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        print_error("%s: exit status %d (-2: sanitizer report in %s)\n", what, status, s->log);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    int rc = srv.pid ? stop_checked(&srv, "server") : 0;
    kill_all_children();
    curl_global_cleanup();
    return rc;
}

/* ---- fixture cases ------------------------------------------------------------------------ */

typedef struct {
    const char *model;
    json_t     *cases;
    int         n;
    _Atomic int next, bad, checked, ref_same, ref_total, blank;
} case_run;

static void *case_client(void *arg)
{
    case_run *cr = arg;
    char why[600];
    for (int i; (i = atomic_fetch_add(&cr->next, 1)) < cr->n;) {
        json_t *c = json_array_get(cr->cases, (size_t)i);
        const char *text = json_string_value(json_object_get(c, "text"));
        int max_len = (int)json_integer_value(json_object_get(c, "max_length"));
        for (int b = 0; b < 2; b++)
            for (int split = 0; split < 2; split++) {
                /* the model's own output, as the reference has it: placeholders, the length cap,
                 * the loop guard and the Title Case fold off */
                json_t *req = json_pack("{s:s,s:s,s:i,s:i,s:b,s:b,s:f,s:i,s:b}", "text", text, "model", cr->model,
                                        "beam_size", b ? 4 : 1, "max_length", max_len, "split", split, "placeholders",
                                        0, "max_length_factor", MT_LENGTH_FACTOR_NONE, "loop_no_repeat_ngram_size", -1,
                                        "fold_title_case", 0);
                json_t *plain = NULL;
                int blank = 1;
                for (const char *p = text; *p; p++)
                    blank &= *p == ' ';
                if (blank) {            /* blank text: the same JSON 400 streamed or not */
                    char *sb = with_stream(req, 1);
                    sse s = sse_post(&srv, sb, 0);
                    json_error_t je;
                    json_t *e = s.buf ? json_loads(s.buf, 0, &je) : NULL;
                    const char *code = json_string_value(json_object_get(json_object_get(e, "error"), "code"));
                    if (s.status != 400 || !code || strcmp(code, "empty_text") ||
                        strncmp(s.ctype, "application/json", 16))
                        atomic_fetch_add(&cr->bad, 1);
                    atomic_fetch_add(&cr->blank, 1);
                    json_decref(e);
                    sse_free(&s);
                    free(sb);
                    json_decref(req);
                    continue;
                }
                const char *bad = both_ways(&srv, req, &plain, NULL, why, sizeof why);
                if (bad) {
                    print_error("[%s] case %d beam %d split %d: %s\n", cr->model, i, b ? 4 : 1, split, bad);
                    atomic_fetch_add(&cr->bad, 1);
                } else if (!split) {
                    /* one sentence: the reference's text, with the outer spaces the server keeps */
                    const char *got = json_string_value(json_object_get(json_array_get(
                        json_object_get(plain, "translations"), 0), "text"));
                    const char *ref = b ? json_string_value(json_object_get(
                                              json_array_get(json_object_get(c, "beam4"), 0), "text"))
                                        : json_string_value(json_object_get(c, "greedy_text"));
                    size_t lead = strspn(text, " \t\r\n\v\f"), gl = strlen(got), rl = strlen(ref);
                    size_t tl = strlen(text), trail = 0;
                    while (trail < tl - lead && strchr(" \t\r\n\v\f", text[tl - 1 - trail]))
                        trail++;
                    int same = gl == lead + rl + trail && !strncmp(got + lead, ref, rl);
                    atomic_fetch_add(&cr->ref_same, same);
                    atomic_fetch_add(&cr->ref_total, 1);
                    if (!same)
                        print_error("[%s] case %d beam %d: \"%s\" != reference \"%s\"\n", cr->model, i, b ? 4 : 1,
                                    got, ref);
                }
                atomic_fetch_add(&cr->checked, 1);
                json_decref(plain);
                json_decref(req);
            }
    }
    return NULL;
}

static void fixture_cases(const char *model)
{
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/%s/cases.jsonl", model);
    case_run cr = { .model = model, .cases = load_jsonl(path) };
    cr.n = (int)json_array_size(cr.cases);
    if (cr.n > STREAM_CASES)
        cr.n = STREAM_CASES;
    double t0 = now_s();
    pthread_t th[CASE_CLIENTS];
    for (int i = 0; i < CASE_CLIENTS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, case_client, &cr), 0);
    for (int i = 0; i < CASE_CLIENTS; i++)
        pthread_join(th[i], NULL);
    print_message("# [%s] %d cases x greedy/beam 4 x split off/on, %d clients: %d streams equal to the plain reply "
                  "(%d blank: 400 either way), %d mismatches; split off: %d/%d texts equal to the PyTorch "
                  "reference; %.1f s\n", model, cr.n, CASE_CLIENTS, cr.checked, cr.blank, cr.bad, cr.ref_same,
                  cr.ref_total, now_s() - t0);
    assert_int_equal(cr.bad, 0);
    assert_true(cr.checked >= 4 * (cr.n - 2));
    assert_int_equal(cr.ref_same, cr.ref_total);
    json_decref(cr.cases);
}

static void test_fixture_cases_en_fr(void **state)
{
    (void)state;
    fixture_cases("en-fr");
}

static void test_fixture_cases_tiny(void **state)
{
    (void)state;
    fixture_cases("tiny");
}

static void test_fixture_cases_fr_en(void **state)
{
    (void)state;
    fixture_cases("fr-en");
}

/* Several texts, several sentences each, odd spacing: per index, in order. */
static void test_multi_text(void **state)
{
    (void)state;
    char why[600];
    for (int b = 0; b < 2; b++) {
        json_t *req = json_pack("{s:[s,s,s,s],s:i}", "text",
                                "  The cat sleeps.  The dog barks!\n\nIs it raining? Yes.  ",
                                "One sentence only", "\tFirst line.\nSecond line.\n",
                                "Dr. Smith arrived. He was late... The meeting started at 10.30.", "beam_size",
                                b ? 4 : 1);
        sse s;
        const char *bad = both_ways(&srv, req, NULL, &s, why, sizeof why);
        if (bad)
            print_error("beam %d: %s\n%s\n", b ? 4 : 1, bad, s.buf ? s.buf : "");
        assert_null(bad);
        print_message("# 4 texts, beam %d: %d delta events\n", b ? 4 : 1, s.deltas);
        assert_true(s.deltas >= (b ? 4 : 20));
        sse_free(&s);
        json_decref(req);
    }
}

/* Events arrive while the reply is being generated. */
static void test_first_token(void **state)
{
    (void)state;
    json_t *req = json_pack("{s:s,s:i}", "text",
                            "The package provides a library for parsing command line options, with support for "
                            "long options, optional arguments and automatically generated help messages.",
                            "beam_size", 1);
    char why[600];
    sse s;
    const char *bad = both_ways(&srv, req, NULL, &s, why, sizeof why);
    assert_null(bad);
    json_t *last = json_array_get(s.events, json_array_size(s.events) - 1);
    double t_done = json_number_value(json_object_get(last, "t"));
    print_message("# time to first token %.1f ms; done event at %.1f ms; %d token events in %d network reads "
                  "(%.0f tokens/s streamed)\n", s.t_first * 1e3, t_done * 1e3, s.deltas, s.reads,
                  s.deltas / (t_done > 0 ? t_done : 1));
    assert_true(s.deltas >= 20);
    assert_true(s.t_first < t_done);
    assert_true(s.reads >= 3);           /* not one buffered block at the end */
    sse_free(&s);
    json_decref(req);
}

/* A long job: tiny's random weights decode every sentence to its max_length
 * (64, the session's length): texts x 64 steps over the rows. */
static char *long_job(int texts, int max_length)
{
    json_t *list = json_array();
    for (int i = 0; i < texts; i++)
        json_array_append_new(list, json_string("one two three four five six seven eight nine ten"));
    json_t *req = json_pack("{s:o,s:s,s:i,s:i,s:b}", "text", list, "model", "tiny", "beam_size", 1, "max_length",
                            max_length, "stream", 1);
    char *s = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    return s;
}

static int wait_zero(const server *s, const char *const *names, int n, double timeout_s)
{
    double until = now_s() + timeout_s;
    for (;;) {
        int all = 1;
        for (int i = 0; i < n; i++)
            all &= metric(s, names[i]) == 0;
        if (all)
            return 1;
        if (now_s() > until)
            return 0;
        sleep_ms(10);
    }
}

static void disconnect_on(server *s, int batching)
{
    char *body = long_job(400, 64);
    double c0 = metric(s, "mtserve_cancelled_sequences_total");
    /* 499 (client gone) is counted under status "other" (metrics.c's list of statuses) */
    double r0 = metric(s, "mtserve_requests_total{route=\"/translate\",status=\"other\"}");
    r0 = r0 < 0 ? 0 : r0;
    sse e = sse_post(s, body, 3);
    assert_true(e.deltas >= 3);
    assert_int_equal(e.status, 200);
    assert_int_not_equal(e.curl_rc, 0);     /* we aborted */
    double t0 = now_s();
    static const char *const on[] = { "mtserve_batch_rows_in_use", "mtserve_active_sequences",
                                      "mtserve_waiting_sequences" };
    static const char *const off[] = { "mtserve_active_sessions" };
    int freed = batching ? wait_zero(s, on, 3, 30) : wait_zero(s, off, 1, 30);
    print_message("# batching %s: the client left after %d token events; rows freed %.0f ms later\n",
                  batching ? "on" : "off", e.deltas, (now_s() - t0) * 1e3);
    assert_true(freed);
    if (batching)
        assert_true(metric(s, "mtserve_cancelled_sequences_total") >= c0 + 1);
    double until = now_s() + 10;
    while (metric(s, "mtserve_requests_total{route=\"/translate\",status=\"other\"}") < r0 + 1 && now_s() < until)
        sleep_ms(10);
    assert_true(metric(s, "mtserve_requests_total{route=\"/translate\",status=\"other\"}") >= r0 + 1);
    sse_free(&e);
    free(body);
    /* still serving */
    char why[600];
    json_t *req = json_pack("{s:s,s:s,s:i}", "text", "Hello world.", "model", "tiny", "max_length", 20);
    assert_null(both_ways(s, req, NULL, NULL, why, sizeof why));
    json_decref(req);
}

static void test_disconnect(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "tiny=models/tiny", "--max-batch", "16", "--max-tokens", "100000",
                                        "--max-body", "4M", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    disconnect_on(&s, 1);
    assert_int_equal(stop_checked(&s, "batching on"), 0);
    static const char *const args_off[] = { "--model", "tiny=models/tiny", "--batching", "off", "--threads", "2",
                                            "--max-tokens", "100000", "--max-body", "4M", NULL };
    assert_int_equal(server_start(&s, args_off), 0);
    disconnect_on(&s, 0);
    assert_int_equal(stop_checked(&s, "batching off"), 0);
}

/* A streaming client that stops reading (a tiny receive buffer, never read
 * after the first bytes): the server closes it within --write-timeout plus
 * the sweeper's slack, counts it (reason write_timeout), frees its decoder
 * rows, and serves another client meanwhile. */
#define WRITE_TIMEOUT_S 2
static void test_write_timeout(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "tiny=models/tiny", "--max-batch", "16", "--max-tokens", "100000",
                                        "--max-body", "4M", "--write-timeout", "2", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    double w0 = metric(&s, "mtserve_connections_closed_total{reason=\"write_timeout\"}");
    char *body = long_job(2000, 64);
    size_t blen = strlen(body);
    char head[256];
    int hl = snprintf(head, sizeof head, "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                         "Content-Length: %zu\r\n\r\n", blen);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int rcv = 1024;                             /* before connect: the window stays small */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)s.port) };
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(send(fd, head, (size_t)hl, MSG_NOSIGNAL), hl);
    for (size_t off = 0; off < blen;) {
        ssize_t n = send(fd, body + off, blen - off, MSG_NOSIGNAL);
        assert_true(n > 0);
        off += (size_t)n;
    }
    char buf[4096];
    struct timeval tv = { 30, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t got = recv(fd, buf, 64, 0);         /* the stream began; from now on nothing is read */
    assert_true(got > 12 && strncmp(buf, "HTTP/1.1 200", 12) == 0);
    double t0 = now_s();
    while (metric(&s, "mtserve_connections_closed_total{reason=\"write_timeout\"}") < w0 + 1 &&
           now_s() - t0 < WRITE_TIMEOUT_S + 8)
        sleep_ms(100);
    double dt = now_s() - t0;
    double w1 = metric(&s, "mtserve_connections_closed_total{reason=\"write_timeout\"}");
    /* its rows come back (the stream's abort check saw the socket shut) */
    static const char *const rows[] = { "mtserve_batch_rows_in_use", "mtserve_active_sequences",
                                        "mtserve_waiting_sequences" };
    int freed = wait_zero(&s, rows, 3, 10);
    /* another client is served meanwhile */
    char why[600];
    json_t *req = json_pack("{s:s,s:s,s:i}", "text", "Hello world.", "model", "tiny", "max_length", 20);
    const char *other = both_ways(&s, req, NULL, NULL, why, sizeof why);
    json_decref(req);
    /* and the stalled socket ends: what was queued, then end of stream (or a reset) */
    double t1 = now_s();
    tv.tv_sec = 5;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int ended = 0;
    while (now_s() - t1 < 10) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            ended = 1;
            break;
        }
        if (n < 0)
            break;
    }
    close(fd);
    free(body);
    print_message("# write timeout: a stream client stopped reading; closed (write_timeout %.0f -> %.0f) %.2f s "
                  "later, rows freed: %s, another client: %s, its socket ended: %s\n", w0, w1, dt,
                  freed ? "yes" : "no", other ? other : "ok", ended ? "yes" : "no");
    assert_true(w0 >= 0 && w1 >= w0 + 1);
    assert_true(dt < WRITE_TIMEOUT_S + 2);
    assert_true(freed);
    assert_null(other);
    assert_true(ended);
    assert_int_equal(stop_checked(&s, "write timeout"), 0);
}

static void expect_json_error(const char *body, long status, const char *code, const char *word)
{
    sse s = sse_post(&srv, body, 0);
    json_error_t je;
    json_t *e = s.buf ? json_loads(s.buf, 0, &je) : NULL;
    const char *got = json_string_value(json_object_get(json_object_get(e, "error"), "code"));
    const char *msg = json_string_value(json_object_get(json_object_get(e, "error"), "message"));
    if (s.status != status || !got || strcmp(got, code) || !msg || !strstr(msg, word))
        print_error("%.100s: expected %ld %s '%s', got %ld %s\n", body, status, code, word, s.status,
                    s.buf ? s.buf : "");
    assert_int_equal(s.status, status);
    assert_true(!strncmp(s.ctype, "application/json", 16));
    assert_non_null(got);
    assert_string_equal(got, code);
    assert_non_null(strstr(msg, word));
    json_decref(e);
    sse_free(&s);
}

static void test_bad_requests(void **state)
{
    (void)state;
    expect_json_error("{\"text\": \"Hi\", \"stream\": \"yes\"}", 400, "invalid_field", "'stream'");
    expect_json_error("{\"text\": \"Hi\", \"stream\": 1}", 400, "invalid_field", "'stream'");
    expect_json_error("{\"text\": \" \", \"stream\": true}", 400, "empty_text", "'text'");
    expect_json_error("{\"stream\": true}", 400, "invalid_field", "'text'");
    expect_json_error("{\"text\": \"Hi\", \"stream\": true, \"beam_size\": 99}", 400, "invalid_field",
                      "beam_size");
    expect_json_error("{\"text\": \"Hi\", \"stream\": true, \"model\": \"nope\"}", 404, "unknown_model", "nope");
    expect_json_error("{\"text\": \"Hi\", \"stream\": true, \"source\": \"en\", \"target\": \"xx\"}", 400,
                      "unsupported_language", "");
    json_t *list = json_array();                 /* over --max-tokens 2000 */
    for (int i = 0; i < 300; i++)
        json_array_append_new(list, json_string("one two three four five six seven eight nine ten."));
    json_t *req = json_pack("{s:o,s:b}", "text", list, "stream", 1);
    char *body = json_dumps(req, JSON_COMPACT);
    expect_json_error(body, 413, "input_too_long", "limit");
    free(body);
    json_decref(req);
}

/* A failure after the stream began: the later sentences wait past the queue
 * timeout while the first (one row) decodes: an error event, then the end. */
static void test_error_event(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "tiny=models/tiny", "--max-batch", "1", "--queue-timeout",
                                        "300", "--max-tokens", "100000", "--max-body", "4M", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    char *body = long_job(200, 64);
    sse e = sse_post(&s, body, 0);
    size_t ne = json_array_size(e.events);
    json_t *last = json_array_get(e.events, ne ? ne - 1 : 0);
    const char *type = json_string_value(json_object_get(last, "type"));
    json_t *err = json_object_get(json_object_get(last, "data"), "error");
    print_message("# error after the start: %d token events, then event %s: %s\n", e.deltas, type ? type : "-",
                  json_string_value(json_object_get(err, "message")));
    assert_int_equal(e.status, 200);
    assert_true(e.deltas >= 1);
    assert_non_null(type);
    assert_string_equal(type, "error");
    assert_string_equal(json_string_value(json_object_get(err, "code")), "queue_full");
    assert_int_equal(e.curl_rc, 0);              /* the stream ended properly */
    sse_free(&e);
    free(body);
    static const char *const on[] = { "mtserve_batch_rows_in_use", "mtserve_active_sequences",
                                      "mtserve_waiting_sequences" };
    assert_true(wait_zero(&s, on, 3, 30));
    assert_int_equal(stop_checked(&s, "error event"), 0);
}

/* --batching off: the session decoder streams too. */
static void test_batching_off(void **state)
{
    (void)state;
    static const char *const args[] = { "--model", "en-fr=models/en-fr", "--batching", "off", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    json_t *cases = load_jsonl("tests/fixtures/en-fr/cases.jsonl");
    int n = 0;
    char why[600];
    for (size_t i = 40; i < json_array_size(cases) && n < (SANITIZER_BUILD ? 4 : 24); i += 7, n++)
        for (int b = 0; b < 2; b++) {
            json_t *c = json_array_get(cases, i);
            json_t *req = json_pack("{s:O,s:i}", "text", json_object_get(c, "text"), "beam_size", b ? 4 : 1);
            const char *bad = both_ways(&s, req, NULL, NULL, why, sizeof why);
            if (bad)
                print_error("case %zu beam %d: %s\n", i, b ? 4 : 1, bad);
            assert_null(bad);
            json_decref(req);
        }
    print_message("# --batching off: %d cases x greedy/beam 4 streamed equal to the plain replies\n", n);
    json_decref(cases);
    assert_int_equal(stop_checked(&s, "batching off"), 0);
}

/* A pivot: the first leg decodes unseen, the second streams. */
static void test_pivot(void **state)
{
    (void)state;
    char dir[] = "/tmp/mt_test_stream_XXXXXX", path[1024], from[1024], cwd[512], arg[1100];
    assert_non_null(mkdtemp(dir));
    assert_non_null(getcwd(cwd, sizeof cwd));
    static const char *const files[] = { "config.json", "generation_config.json", "model.safetensors", "source.spm",
                                         "target.spm", "special_tokens_map.json", "vocab.json" };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(from, sizeof from, "%s/models/fr-en/%s", cwd, files[i]);
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        assert_int_equal(symlink(from, path), 0);
    }
    json_error_t je;
    json_t *tc = json_load_file("models/fr-en/tokenizer_config.json", 0, &je);
    assert_non_null(tc);
    json_object_set_new(tc, "source_lang", json_string("de"));
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    assert_int_equal(json_dump_file(tc, path, 0), 0);
    json_decref(tc);
    snprintf(arg, sizeof arg, "de-en=%s", dir);
    const char *const args[] = { "--model", "en-fr=models/en-fr", "--model", arg, NULL };
    server s;
    int started = server_start(&s, args);
    char why[600];
    for (int b = 0; started == 0 && b < 2; b++) {
        json_t *req = json_pack("{s:s,s:s,s:s,s:i}", "text", "Le chat dort sur le canapé. Il fait beau.", "source",
                                "de", "target", "fr", "beam_size", b ? 4 : 1);
        json_t *plain = NULL;
        const char *bad = both_ways(&s, req, &plain, NULL, why, sizeof why);
        if (bad)
            print_error("pivot beam %d: %s\n", b ? 4 : 1, bad);
        assert_null(bad);
        assert_non_null(json_object_get(plain, "pivot"));
        json_decref(plain);
        json_decref(req);
    }
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    unlink(path);
    rmdir(dir);
    assert_int_equal(started, 0);
    assert_int_equal(stop_checked(&s, "pivot"), 0);
}

/* ---- mixed load ---------------------------------------------------------------------------- */

typedef struct {
    const server *s;
    json_t      **reqs;         /* [n] requests */
    json_t      **refs;         /* [n] plain replies alone */
    int           n, id, leave; /* leave: every k-th stream leaves early (TSan mode) */
    double        deadline;
    _Atomic int  *next;         /* shared counter, or NULL: until the deadline */
    int           limit;
    int           ok, bad, streams, left;
    double        ttft_sum;
} load_client;

static int check_plain(json_t *got, json_t *ref)
{
    json_t *a = json_object_get(got, "translations"), *b = json_object_get(ref, "translations");
    return a && json_equal(a, b);
}

static void *load_main(void *arg)
{
    load_client *c = arg;
    CURL *h = curl_easy_init();
    char why[600];
    for (int k = 0;; k++) {
        int i;
        if (c->next) {
            if ((i = atomic_fetch_add(c->next, 1)) >= c->limit)
                break;
        } else {
            if (now_s() > c->deadline)
                break;
            i = k;
        }
        json_t *req = c->reqs[(i + c->id) % c->n], *ref = c->refs[(i + c->id) % c->n];
        if ((i + c->id) % 2 == 0) {             /* streaming */
            int leave = c->leave && i % c->leave == 0;
            char *body = with_stream(req, 1);
            sse s = sse_post_on(h, c->s, body, leave ? 1 : 0, STREAM_TIMEOUT_MS);
            if (leave) {
                c->left++;
                if (s.status != 200 || s.deltas < 1)
                    c->bad++, print_error("client %d: stream left early: %ld %d\n", c->id, s.status, s.deltas);
            } else if (stream_matches(&s, ref, why, sizeof why)) {
                c->bad++;
                print_error("client %d: %s\n", c->id, stream_matches(&s, ref, why, sizeof why));
            } else {
                c->ok++;
                c->streams++;
                c->ttft_sum += s.t_first;
            }
            sse_free(&s);
            free(body);
        } else {
            char *body = with_stream(req, 0);
            req_opts o = { .body = body, .timeout_ms = STREAM_TIMEOUT_MS };
            reply r = http_req_on(h, c->s, "/translate", &o);
            json_error_t je;
            json_t *j = r.status == 200 && r.body ? json_loads(r.body, 0, &je) : NULL;
            if (j && check_plain(j, ref))
                c->ok++;
            else
                c->bad++, print_error("client %d: plain %ld %.200s\n", c->id, r.status, r.body ? r.body : "");
            json_decref(j);
            reply_free(&r);
            free(body);
        }
    }
    curl_easy_cleanup(h);
    return NULL;
}

/* Requests over the test split's sentences (1-3 per text), greedy and beam 4 in turn. */
static int make_requests(const char *model, int n, int max_length, json_t **reqs)
{
    FILE *f = fopen("tests/fixtures/tokenizer/inputs/test.en.txt", "r");
    char line[2048], *sent[256];
    int ns = 0;
    while (f && ns < 256 && fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\r\n");
        line[len] = 0;
        if (len >= 20 && len <= 100 && line[len - 1] == '.')
            sent[ns++] = strdup(line);
    }
    if (f)
        fclose(f);
    if (ns < 3 * n)
        return -1;
    for (int i = 0; i < n; i++) {
        char text[1024] = "";
        for (int k = 0; k <= i % 3; k++) {
            strcat(text, k ? " " : "");
            strcat(text, sent[3 * i + k]);
        }
        reqs[i] = json_pack("{s:s,s:s,s:i}", "text", text, "model", model, "beam_size", i % 2 ? 4 : 1);
        if (max_length)
            json_object_set_new(reqs[i], "max_length", json_integer(max_length));
    }
    for (int i = 0; i < ns; i++)
        free(sent[i]);
    return 0;
}

static void run_load(const server *s, const char *model, int n_reqs, int clients, int max_length, double seconds,
                     int limit, int leave, const char *label)
{
    json_t *reqs[32], *refs[32];
    assert_true(n_reqs <= 32);
    assert_int_equal(make_requests(model, n_reqs, max_length, reqs), 0);
    for (int i = 0; i < n_reqs; i++) {          /* the references: each alone, plain */
        char *body = with_stream(reqs[i], 0);
        long st;
        refs[i] = plain_post(s, body, &st);
        assert_int_equal(st, 200);
        free(body);
    }
    load_client c[32];
    pthread_t th[32];
    _Atomic int next = 0;
    double t0 = now_s();
    assert_true(clients <= 32);
    for (int i = 0; i < clients; i++) {
        c[i] = (load_client){ .s = s, .reqs = reqs, .refs = refs, .n = n_reqs, .id = i, .leave = leave,
                              .deadline = t0 + seconds, .next = limit ? &next : NULL, .limit = limit };
        assert_int_equal(pthread_create(&th[i], NULL, load_main, &c[i]), 0);
    }
    int ok = 0, bad = 0, streams = 0, left = 0;
    double ttft = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(th[i], NULL);
        ok += c[i].ok, bad += c[i].bad, streams += c[i].streams, left += c[i].left, ttft += c[i].ttft_sum;
    }
    double t = now_s() - t0;
    print_message("# %s: %d clients, %.1f s: %d replies checked (%d streamed, mean time to first token %.1f ms), "
                  "%d streams left early, %d errors; %.1f replies/s\n", label, clients, t, ok, streams,
                  streams ? ttft / streams * 1e3 : 0, left, bad, ok / t);
    assert_int_equal(bad, 0);
    assert_true(ok >= clients);
    for (int i = 0; i < n_reqs; i++) {
        json_decref(reqs[i]);
        json_decref(refs[i]);
    }
}

static void test_mixed_load(void **state)
{
    (void)state;
    run_load(&srv, "en-fr", 24, STREAM_LOAD_CLIENTS, 0, SANITIZER_BUILD ? 5.0 : STREAM_LOAD_SECONDS, 0, 0,
             "mixed load (en-fr)");
    assert_true(server_alive(&srv));
    static const char *const on[] = { "mtserve_batch_rows_in_use", "mtserve_active_sequences" };
    assert_true(wait_zero(&srv, on, 2, 30));
}

/* ---- TSan mode -------------------------------------------------------------------------------- */

static void tsan_run(const char *batching)
{
    const char *const args[] = { "--model", "tiny=models/tiny", "--batching", batching, "--blas-threads", "2",
                                 "--max-batch", "32", NULL };
    server s;
    assert_int_equal(server_start(&s, args), 0);
    char label[64];
    snprintf(label, sizeof label, "tsan, batching %s", batching);
    run_load(&s, "tiny", 12, TSAN_CLIENTS, 16, 0, TSAN_REQUESTS, 5, label);
    assert_int_equal(stop_checked(&s, label), 0);
}

static void test_tsan_batching_on(void **state)
{
    (void)state;
    tsan_run("on");
}

static void test_tsan_batching_off(void **state)
{
    (void)state;
    tsan_run("off");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_cases_en_fr),
        cmocka_unit_test(test_fixture_cases_tiny),
        cmocka_unit_test(test_fixture_cases_fr_en),
        cmocka_unit_test(test_multi_text),
        cmocka_unit_test(test_first_token),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_disconnect),
        cmocka_unit_test(test_write_timeout),
        cmocka_unit_test(test_error_event),
        cmocka_unit_test(test_batching_off),
        cmocka_unit_test(test_pivot),
        cmocka_unit_test(test_mixed_load),
    };
    const struct CMUnitTest tsan[] = {
        cmocka_unit_test(test_tsan_batching_on),
        cmocka_unit_test(test_tsan_batching_off),
    };
    signal(SIGPIPE, SIG_IGN);
    if (getenv("TEST_FILTER"))
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    const char *ts = getenv("MTSERVE_TSAN");
    if (ts && *ts && strcmp(ts, "0")) {
        curl_global_init(CURL_GLOBAL_ALL);
        int rc = cmocka_run_group_tests_name("stream (tsan)", tsan, NULL, NULL);
        kill_all_children();
        curl_global_cleanup();
        return rc;
    }
    return cmocka_run_group_tests_name("stream", tests, group_setup, group_teardown);
}
