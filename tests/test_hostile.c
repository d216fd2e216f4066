/* test_hostile: slow, idle and malformed clients against the real server.
 *
 * The attackers connect from other loopback addresses (127.0.0.2, .3, ...:
 * all of 127/8 is this machine) than the normal client (127.0.0.1), as they
 * would from other hosts; the per-address connection limit is part of what
 * is tested.  The server runs with --request-timeout 3 and --timeout 6 so
 * that the deadlines show within the test; everything else is the default.  Every socket has a
 * receive timeout and every loop is bounded.
 *
 * The stated time: while 2,000 idle or 300 slowloris sockets are held open,
 * every request of a normal client is answered within NORMAL_MAX_S.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"

#define DEADLINE_S        3     /* the server's --request-timeout here */
#define PER_IP            512   /* the default --max-connections-per-ip */
#define N_IDLE            2000
#define N_SLOW            300
#define NORMAL_MAX_S      2.0   /* a normal client's request, whatever the attackers do */
#define PARK_S            5.0   /* server/http/http.c: a connection over the per-address limit waits this for its 503 */

static server srv;

/* ---- raw sockets ------------------------------------------------------------------ */

/* A blocking socket from src (e.g. "127.0.0.2") to the server; -1 on failure. */
static int connect_from(const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = { .sin_family = AF_INET };
    inet_pton(AF_INET, src, &a.sin_addr);
    struct sockaddr_in b = { .sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port) };
    inet_pton(AF_INET, "127.0.0.1", &b.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || connect(fd, (struct sockaddr *)&b, sizeof b)) {
        close(fd);
        return -1;
    }
    struct timeval tv = { 5, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* 1 when the server has closed (or reset) fd: readable with EOF or an error. */
static int closed_by_server(int fd, int wait_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, wait_ms) <= 0)
        return 0;
    char buf[512];
    for (;;) {                          /* read past a 408 to the end of stream */
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return 1;
        if (n < 0)
            return poll(&p, 1, wait_ms) > 0 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0;
    }
}

/* Everything the server sends until it closes (bounded by the socket's
 * receive timeout); NUL-terminated, at most cap-1 bytes. */
static size_t read_all(int fd, char *out, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = recv(fd, out + n, cap - 1 - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    out[n] = 0;
    return n;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* Descriptors the server has open (its sockets among them). */
static int server_fds(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)srv.pid);
    DIR *d = opendir(path);
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 2;
}

/* A counter of /metrics, e.g. closed("request_timeout"); -1 if absent. */
static long closed_count(const char *reason)
{
    char key[128];
    snprintf(key, sizeof key, "mtserve_connections_closed_total{reason=\"%s\"}", reason);
    return (long)metric(&srv, key);
}

/* ---- the normal client ------------------------------------------------------------------ */

/* n requests, each on a new connection (a new client), alternating /health
 * and a /translate; returns the slowest in seconds, or -1 if one failed. */
static double normal_client(int n)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        req_opts o = { .body = i % 2 ? "{\"text\": \"Hello world.\"}" : NULL, .timeout_ms = 10000 };
        double t = now_s();
        reply r = http_req(&srv, i % 2 ? "/translate" : "/health", &o);
        double dt = now_s() - t;
        long st = r.status;
        reply_free(&r);
        if (st != 200) {
            print_error("normal request %d: status %ld after %.2f s\n", i, st, dt);
            return -1;
        }
        if (dt > worst)
            worst = dt;
        sleep_ms(50);
    }
    return worst;
}

/* ---- fixtures ---------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < N_IDLE + 200) {
        print_error("open-file limit %llu is below the %d sockets this test opens\n",
                    (unsigned long long)rl.rlim_cur, N_IDLE + 200);
        return -1;
    }
    const char *args[] = { "--model", "models/tiny", "--request-timeout", "3", "--timeout", "6", NULL };
    return server_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    int st = server_stop(&srv);
    kill_all_children();
    if (st != 0) {
        print_error("server stop status %d (see %s)\n", st, srv.log);
        return -1;
    }
    return 0;
}

/* ---- tests ------------------------------------------------------------------------------ */

/* 2,000 idle sockets from one address: the server keeps PER_IP of them,
 * parks PER_IP more (a 503 after PARK_S: front.c), closes the rest at once,
 * answers a normal client meanwhile, and closes the ones it kept when their
 * first request does not arrive in time (408). */
static void test_idle_sockets(void **state)
{
    (void)state;
    int base_fds = server_fds();
    int *fds = malloc(sizeof(int) * N_IDLE);
    assert_non_null(fds);
    int opened = 0;
    for (int i = 0; i < N_IDLE; i++)
        if ((fds[i] = connect_from("127.0.0.2")) >= 0)
            opened++;
    assert_int_equal(opened, N_IDLE);           /* the kernel completes every handshake */
    sleep_ms(500);
    int refused = 0;
    for (int i = 0; i < N_IDLE; i++)
        refused += closed_by_server(fds[i], 0);
    int held = server_fds() - base_fds;
    double worst = normal_client(20);
    printf("# idle: %d sockets, %d refused at once, server holds %d more fds, normal client's slowest %.3f s\n",
           N_IDLE, refused, held, worst);
    assert_true(worst >= 0 && worst < NORMAL_MAX_S);
    assert_true(refused >= N_IDLE - 2 * PER_IP);    /* the per-address limit, and as many parked */
    assert_true(held <= 2 * PER_IP + 8);
    /* past the deadline and the park every socket is closed: the kept ones with
     * a 408, the parked ones with a 503 */
    sleep_ms((int)(PARK_S * 1000) + 500);
    int closed = 0, with_408 = 0, with_503 = 0;
    for (int i = 0; i < N_IDLE; i++) {
        char buf[1024];
        struct pollfd p = { .fd = fds[i], .events = POLLIN };
        if (poll(&p, 1, 0) > 0) {
            ssize_t n = recv(fds[i], buf, sizeof buf - 1, MSG_DONTWAIT);
            if (n > 0) {
                buf[n] = 0;
                with_408 += strstr(buf, " 408 ") != NULL && strstr(buf, "request_timeout") != NULL;
                with_503 += strstr(buf, " 503 ") != NULL && strstr(buf, "max-connections-per-ip") != NULL;
            }
            closed++;
        }
        close(fds[i]);
    }
    free(fds);
    printf("# idle: after %.1f s, %d of %d closed by the server, %d of them with a 408, %d with a 503\n",
           PARK_S + 1, closed, N_IDLE, with_408, with_503);
    assert_int_equal(closed, N_IDLE);
    assert_true(with_408 >= PER_IP - 8);
    assert_true(with_503 >= PER_IP - 8);
    sleep_ms(300);
    assert_true(server_fds() <= base_fds + 4);  /* nothing lingers */
}

/* A client that reconnects as soon as it is refused (wrk, a retrying
 * library): its connections over the per-address limit are parked, never
 * read, and each gets a 503 with Retry-After after PARK_S, instead of a close
 * at once that it would answer with a new connection at once (a loop that
 * took the CPU from the admitted requests: a quarter of the goodput at 1,024
 * connections from one address). */
#define N_RETRY   16

typedef struct {
    _Atomic int answered_503, other;
    _Atomic long min_ms;
} retry_ctx;

static void *retry_once(void *arg)
{
    retry_ctx *r = arg;
    static const char req[] = "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              "Content-Length: 24\r\n\r\n{\"text\": \"Hello world.\"}";
    int fd = connect_from("127.0.0.3");
    if (fd < 0) {
        atomic_fetch_add(&r->other, 1);
        return NULL;
    }
    struct timeval tv = { (long)PARK_S + 5, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    double t0 = now_s();
    char buf[2048];
    if (send_all(fd, req, sizeof req - 1) == 0 && read_all(fd, buf, sizeof buf) > 0 &&
        strstr(buf, "HTTP/1.1 503") && strstr(buf, "Retry-After: 5") && strstr(buf, "max-connections-per-ip"))
        atomic_fetch_add(&r->answered_503, 1);
    else
        atomic_fetch_add(&r->other, 1);
    long ms = (long)((now_s() - t0) * 1e3);
    long cur = atomic_load(&r->min_ms);
    while (ms < cur && !atomic_compare_exchange_weak(&r->min_ms, &cur, ms))
        ;
    close(fd);
    return NULL;
}

static void test_parked_over_limit(void **state)
{
    (void)state;
    int *held = malloc(sizeof(int) * PER_IP);
    assert_non_null(held);
    for (int i = 0; i < PER_IP; i++)            /* the address's whole allowance, idle */
        assert_true((held[i] = connect_from("127.0.0.3")) >= 0);
    sleep_ms(200);
    long parked0 = closed_count("per_ip_limit");
    retry_ctx r = { .min_ms = 1000000 };
    pthread_t th[N_RETRY];
    for (int i = 0; i < N_RETRY; i++)
        assert_int_equal(pthread_create(&th[i], NULL, retry_once, &r), 0);
    double worst = normal_client(6);
    for (int i = 0; i < N_RETRY; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < PER_IP; i++)
        close(held[i]);
    free(held);
    long parked = closed_count("per_ip_limit") - parked0;
    printf("# over the limit: %d requests answered 503 + Retry-After (%d otherwise), the first after %ld ms; "
           "%ld counted per_ip_limit; normal client's slowest %.3f s\n", atomic_load(&r.answered_503),
           atomic_load(&r.other), atomic_load(&r.min_ms), parked, worst);
    assert_true(worst >= 0 && worst < NORMAL_MAX_S);
    assert_int_equal(atomic_load(&r.answered_503), N_RETRY);
    assert_true(atomic_load(&r.min_ms) >= (long)(PARK_S * 1000) - 300);    /* parked, not refused at once */
    assert_true(parked >= N_RETRY);
}

typedef struct {
    int *fds, n;
    _Atomic int stop;
} drip_ctx;

/* One header byte a second on every socket: never idle, never complete. */
static void *drip(void *arg)
{
    drip_ctx *d = arg;
    static const char head[] = "POST /translate HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for (size_t k = 0; k < sizeof head - 1 && !atomic_load(&d->stop); k++) {
        for (int i = 0; i < d->n; i++)
            if (d->fds[i] >= 0)
                send(d->fds[i], head + k, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        for (int t = 0; t < 10 && !atomic_load(&d->stop); t++)
            sleep_ms(100);
    }
    return NULL;
}

/* 300 slowloris sockets: a normal client is answered meanwhile, and each
 * slow socket gets a 408 and is closed once its deadline passes. */
static void test_slowloris(void **state)
{
    (void)state;
    long before = closed_count("request_timeout");
    drip_ctx d = { .n = N_SLOW };
    d.fds = malloc(sizeof(int) * N_SLOW);
    assert_non_null(d.fds);
    for (int i = 0; i < N_SLOW; i++)
        assert_true((d.fds[i] = connect_from("127.0.0.3")) >= 0);
    double t0 = now_s();
    pthread_t tid;
    assert_int_equal(pthread_create(&tid, NULL, drip, &d), 0);
    double worst = normal_client(20);
    /* wait for the deadline to pass, still dripping */
    while (now_s() - t0 < DEADLINE_S + 1.5)
        sleep_ms(100);
    int got_408 = 0, closed = 0;
    for (int i = 0; i < N_SLOW; i++) {
        char buf[2048];
        struct timeval tv = { 2, 0 };
        setsockopt(d.fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        read_all(d.fds[i], buf, sizeof buf);
        got_408 += strncmp(buf, "HTTP/1.1 408 ", 13) == 0 && strstr(buf, "\"request_timeout\"") != NULL;
        closed += closed_by_server(d.fds[i], 0) || buf[0];
    }
    atomic_store(&d.stop, 1);
    pthread_join(tid, NULL);
    for (int i = 0; i < N_SLOW; i++)
        close(d.fds[i]);
    free(d.fds);
    printf("# slowloris: %d sockets, normal client's slowest %.3f s, %d got a 408, %d closed\n", N_SLOW, worst,
           got_408, closed);
    assert_true(worst >= 0 && worst < NORMAL_MAX_S);
    assert_int_equal(got_408, N_SLOW);
    assert_true(before >= 0 && closed_count("request_timeout") >= before + N_SLOW);
}

/* A body that stops arriving: 408 once the deadline passes. */
static void test_slow_body(void **state)
{
    (void)state;
    int fd = connect_from("127.0.0.4");
    assert_true(fd >= 0);
    static const char head[] = "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                               "Content-Length: 100\r\n\r\n{\"text\": ";
    double t0 = now_s();
    assert_int_equal(send_all(fd, head, sizeof head - 1), 0);
    char buf[2048];
    struct timeval tv = { DEADLINE_S + 3, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    read_all(fd, buf, sizeof buf);
    double dt = now_s() - t0;
    close(fd);
    printf("# slow body: answered after %.2f s: %.40s\n", dt, buf);
    assert_true(strncmp(buf, "HTTP/1.1 408 ", 13) == 0);
    assert_non_null(strstr(buf, "\"request_timeout\""));
    assert_true(dt >= DEADLINE_S - 0.5 && dt < DEADLINE_S + 2);
}

/* Clients that connect, send half a request or nothing, and leave: the
 * server's descriptors come back, released by the departed-client sweep
 * (reason client_gone), never by the request deadline (3 s here).
 *
 * Known limit, seen twice under `make check` (never alone, in ~20 runs):
 * 128 sockets the sweep had shut down stayed open in libmicrohttpd 0.9.75
 * (epoll) past 10 s; its idle timeout (--timeout, 6 s here, 60 by default)
 * is what released them.  So: the fds at 2 s are printed, the fds must be
 * back by the idle timeout + 4 s, the sweep must have closed some, the
 * request deadline none. */
static void test_departed_clients_released(void **state)
{
    (void)state;
    int base = server_fds();
    long before = closed_count("client_gone"), timeouts = closed_count("request_timeout");
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 200; i++) {
            int fd = connect_from("127.0.0.5");
            assert_true(fd >= 0);
            if (i % 2)
                send(fd, "POST /translate HTTP/1.1\r\nHo", 28, MSG_NOSIGNAL);
            close(fd);
        }
    double t0 = now_s();
    int now = server_fds(), at2 = -1;
    while (now > base + 4 && now_s() - t0 < 10.0) {
        sleep_ms(50);
        now = server_fds();
        if (at2 < 0 && now_s() - t0 >= 2.0)
            at2 = now;
    }
    long gone = closed_count("client_gone") - before, late = closed_count("request_timeout") - timeouts;
    printf("# departed: 600 clients came and went; server fds %d -> %d within %.2f s (at 2 s: %d); closed as "
           "client_gone %ld, by the request deadline %ld\n", base, now, now_s() - t0, at2 < 0 ? now : at2, gone, late);
    assert_true(now <= base + 4);
    assert_true(before >= 0 && gone > 0);
    assert_int_equal(late, 0);
}

/* One request that must be answered with status and close the connection. */
static void expect_raw(const char *src, const char *request, size_t len, const char *status, const char *code)
{
    int fd = connect_from(src);
    assert_true(fd >= 0);
    assert_int_equal(send_all(fd, request, len ? len : strlen(request)), 0);
    char buf[8192];
    read_all(fd, buf, sizeof buf);          /* until the server closes */
    close(fd);
    if (strncmp(buf, status, strlen(status)) != 0 || (code && !strstr(buf, code)))
        print_error("expected %s %s, got: %.300s\n", status, code ? code : "", buf);
    assert_true(strncmp(buf, status, strlen(status)) == 0);
    if (code)
        assert_non_null(strstr(buf, code));
    /* exactly one reply: nothing after the body was parsed as a second request */
    assert_null(strstr(buf, "\nHTTP/1.1 "));
    assert_null(strstr(buf, "}HTTP/1.1 "));
}

static void test_http_strictness(void **state)
{
    (void)state;
    /* two Content-Lengths: the tail would be read as a smuggled second request */
    expect_raw("127.0.0.6",
               "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 24\r\nContent-Length: 5\r\n\r\n{\"text\": \"Hello world.\"}"
               "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 0, "HTTP/1.1 400 ", "more than one Content-Length");
    /* conflicting values that are equal are still two headers */
    expect_raw("127.0.0.6",
               "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 0,
               "HTTP/1.1 400 ", "more than one Content-Length");
    expect_raw("127.0.0.6",
               "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
               "0\r\n\r\n", 0, "HTTP/1.1 400 ", "both Content-Length and Transfer-Encoding");
    expect_raw("127.0.0.6",
               "POST /translate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 0, "HTTP/1.1 400 ",
               "Transfer-Encoding");
    expect_raw("127.0.0.6", "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", 0, "HTTP/1.1 400 ",
               "needs a Host header");
    /* HTTP/1.0 has no Host requirement */
    expect_raw("127.0.0.6", "GET /health HTTP/1.0\r\n\r\n", 0, "HTTP/1.1 200 ", "\"ok\"");
}

/* Issue 30's framing probes: each answered at once with one JSON 4xx. */
static void test_framing_edges(void **state)
{
    (void)state;
    double t0 = now_s();
    /* a declared body over the limit, not sent (the client waits): 413 now,
     * not a 408 at the request deadline */
    expect_raw("127.0.0.6",
               "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 5000000\r\n\r\n", 0, "HTTP/1.1 413 ", "\"body_too_large\"");
    double dt = now_s() - t0;
    printf("# framing: Content-Length over the limit without its body: 413 after %.2f s\n", dt);
    assert_true(dt < DEADLINE_S - 1);
    /* control bytes in a header value: 400; HTAB is allowed */
    static const char ctl[] = "GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n";
    expect_raw("127.0.0.6", ctl, sizeof ctl - 1, "HTTP/1.1 400 ", "control character");
    static const char del[] = "GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\x7f\r\n\r\n";
    expect_raw("127.0.0.6", del, sizeof del - 1, "HTTP/1.1 400 ", "control character");
    static const char esc[] = "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\x1b[0m\r\n"
                              "Content-Length: 2\r\n\r\n{}";
    expect_raw("127.0.0.6", esc, sizeof esc - 1, "HTTP/1.1 400 ", "control character");
    expect_raw("127.0.0.6", "GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\tb\r\nConnection: close\r\n\r\n", 0,
               "HTTP/1.1 200 ", "\"ok\"");
    /* what libmicrohttpd 0.9.75 decided alone, now checked on the raw head
     * first (server/http/head_check.c): */
    /* a NUL in a header value (libmicrohttpd cut the value there, unseen) */
    static const char nul[] = "GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n";
    expect_raw("127.0.0.6", nul, sizeof nul - 1, "HTTP/1.1 400 ", "control character");
    /* a Content-Length over 2^64-1 (libmicrohttpd's own HTML 413, its header block sent twice) */
    expect_raw("127.0.0.6",
               "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 18446744073709551616\r\n\r\n", 0, "HTTP/1.1 413 ", "\"body_too_large\"");
    /* a chunk size of 2^64-1 (taken as valid: a 408 at the deadline), and one no number holds */
    double t1 = now_s();
    expect_raw("127.0.0.6",
               "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n{\"text\"", 0, "HTTP/1.1 413 ",
               "\"body_too_large\"");
    expect_raw("127.0.0.6",
               "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\n{", 0, "HTTP/1.1 400 ", "chunk size");
    printf("# framing: NUL in a header, Content-Length 2^64, chunk sizes 2^64-1 and 2^68-1: answered in %.2f s\n",
           now_s() - t1);
    assert_true(now_s() - t1 < 1.0);
    /* a Content-Length that is no number */
    expect_raw("127.0.0.6", "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n", 0,
               "HTTP/1.1 400 ", "not a number");
    /* an ordinary chunked request still passes */
    expect_raw("127.0.0.6",
               "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
               "Transfer-Encoding: chunked\r\n\r\n18\r\n{\"text\": \"Hello world.\"}\r\n0\r\n\r\n", 0,
               "HTTP/1.1 200 ", "\"ids\"");
    assert_true(now_s() - t0 < DEADLINE_S);
}

/* A keep-alive connection left idle: the server closes it after --timeout
 * (6 s here) and counts it once as idle (libmicrohttpd's own timeout, at the
 * same length, used to win the race uncounted about half the time). */
static void test_idle_counted_once(void **state)
{
    (void)state;
    long before = closed_count("idle");
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = connect_from("127.0.0.8");
        assert_true(fds[i] >= 0);
        static const char req[] = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_int_equal(send_all(fds[i], req, sizeof req - 1), 0);
        char buf[512];
        assert_true(recv(fds[i], buf, sizeof buf, 0) > 12);
    }
    double t0 = now_s();
    int closed = 0;
    while (closed < 4 && now_s() - t0 < 12) {
        closed = 0;
        for (int i = 0; i < 4; i++)
            closed += closed_by_server(fds[i], 0);
        sleep_ms(100);
    }
    double dt = now_s() - t0;
    for (int i = 0; i < 4; i++)
        close(fds[i]);
    sleep_ms(300);
    long after = closed_count("idle");
    printf("# idle: 4 keep-alive connections closed by the server after %.1f s; idle closes counted %ld -> %ld\n", dt,
           before, after);
    assert_int_equal(closed, 4);
    assert_true(before >= 0);
    assert_int_equal(after - before, 4);
}

/* A client that writes its whole oversized body before reading (Python's
 * urllib does) still receives the 413, not a reset. */
static void test_413_after_whole_body(void **state)
{
    (void)state;
    size_t n = (size_t)3 << 20;             /* 3 MB against the default 1 MB limit */
    char *req = malloc(n + 256);
    assert_non_null(req);
    int h = snprintf(req, 256, "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                               "Content-Length: %zu\r\n\r\n", n);
    memset(req + h, 'x', n);
    int fd = connect_from("127.0.0.7");
    assert_true(fd >= 0);
    int sent = send_all(fd, req, (size_t)h + n);
    free(req);
    char buf[4096];
    read_all(fd, buf, sizeof buf);
    close(fd);
    printf("# 413 after a whole 3 MB body: send %s, reply %.30s\n", sent ? "failed" : "ok", buf);
    assert_int_equal(sent, 0);
    assert_true(strncmp(buf, "HTTP/1.1 413 ", 13) == 0);
    assert_non_null(strstr(buf, "\"body_too_large\""));

    /* with Expect: 100-continue the 413 comes at once and no body is sent */
    int fd2 = connect_from("127.0.0.7");
    assert_true(fd2 >= 0);
    char head[256];
    int hl = snprintf(head, sizeof head, "POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n"
                                         "Expect: 100-continue\r\n\r\n", n);
    assert_int_equal(send_all(fd2, head, (size_t)hl), 0);
    read_all(fd2, buf, sizeof buf);
    close(fd2);
    assert_true(strncmp(buf, "HTTP/1.1 413 ", 13) == 0);
    assert_null(strstr(buf, "100 Continue"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_strictness),
        cmocka_unit_test(test_413_after_whole_body),
        cmocka_unit_test(test_framing_edges),
        cmocka_unit_test(test_idle_counted_once),
        cmocka_unit_test(test_slow_body),
        cmocka_unit_test(test_departed_clients_released),
        cmocka_unit_test(test_idle_sockets),
        cmocka_unit_test(test_parked_over_limit),
        cmocka_unit_test(test_slowloris),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
