/* mtserve health [--host H] [--port P] [--timeout S]: exit 0 when GET /health answers 200.
 *
 * Why it exists: the container image has no shell and no curl (it holds the binary, the
 * shared libraries it links and the model), so its HEALTHCHECK asks the binary itself.
 * The port defaults to MTSERVE_PORT, as `serve` reads it, so the check follows the
 * server when an operator moves it. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "util/clock.h"

static long ms_now(void) { return (long)(mt_now_s() * 1e3); }

/* Wait until fd is ready for `events` or the deadline passes: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, long deadline)
{
    for (;;) {
        long left = deadline - ms_now();
        if (left <= 0)
            return 0;
        struct pollfd p = { .fd = fd, .events = events };
        int r = poll(&p, 1, (int)left);
        if (r > 0)
            return 1;
        if (r == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

static int connect_to(const char *host, const char *port)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV }, *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "mtserve health: %s:%s: %s\n", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    if (fd < 0)
        fprintf(stderr, "mtserve health: connect %s:%s: %s\n", host, port, strerror(errno));
    freeaddrinfo(res);
    return fd;
}

/* Send the request, read the status line: the HTTP status, or -1. */
static int get_status(int fd, const char *host, long deadline)
{
    char req[256];
    int n = snprintf(req, sizeof req, "GET /health HTTP/1.0\r\nHost: %s\r\n\r\n", host);
    for (int off = 0; off < n;) {
        if (wait_fd(fd, POLLOUT, deadline) != 1)
            return -1;
        ssize_t w = send(fd, req + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno != EINTR)
            return -1;
        off += w > 0 ? (int)w : 0;
    }
    char buf[64];
    size_t got = 0;
    while (got < sizeof buf - 1 && !memchr(buf, '\n', got)) {
        if (wait_fd(fd, POLLIN, deadline) != 1)
            return -1;
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    buf[got] = '\0';
    int major, minor, status;
    if (sscanf(buf, "HTTP/%d.%d %d", &major, &minor, &status) != 3)
        return -1;
    return status;
}

int mt_cmd_health(int argc, char **argv)
{
    const char *host = "127.0.0.1", *env_port = getenv("MTSERVE_PORT");
    const char *port = env_port && *env_port ? env_port : "8080";
    double timeout_s = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("usage: mtserve health [--host H] [--port P] [--timeout SECONDS]\n"
                   "exit 0 when GET /health answers 200 (port: MTSERVE_PORT, else 8080)\n");
            return 0;
        }
        if (!v) {
            fprintf(stderr, "mtserve health: unknown or incomplete option '%s'\n", a);
            return 2;
        }
        if (strcmp(a, "--host") == 0)
            host = v;
        else if (strcmp(a, "--port") == 0)
            port = v;
        else if (strcmp(a, "--timeout") == 0 && (timeout_s = atof(v)) > 0)
            ;
        else {
            fprintf(stderr, "mtserve health: bad option '%s %s'\n", a, v);
            return 2;
        }
        i++;
    }
    long deadline = ms_now() + (long)(timeout_s * 1000);
    int fd = connect_to(host, port);
    if (fd < 0)
        return 1;
    int status = get_status(fd, host, deadline);
    close(fd);
    if (status != 200) {
        if (status < 0)
            fprintf(stderr, "mtserve health: no HTTP reply from %s:%s within %.1f s\n", host, port, timeout_s);
        else
            fprintf(stderr, "mtserve health: /health answered %d\n", status);
        return 1;
    }
    return 0;
}
