/* front: accept, and hold each connection until its head passed (front.h). */
#include "front.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "util/clock.h"

#define PEEK_MAX   (16 << 10)   /* a head longer than this goes to libmicrohttpd unchecked (it answers 431) */
#define LINGER_S   2.0          /* a refused connection: what the client still sends is read and dropped */
#define TICK_MS    100

typedef struct pending {
    int             fd;
    struct sockaddr_storage addr;
    socklen_t       addr_len;
    srv_addr_slot  *slot;
    int             parked;
    int             closing;    /* answered: lingering until EOF or `until` */
    double          t_accept, until;
    struct pending *prev, *next;
} pending;

struct srv_front {
    srv_front_params p;
    int        ep;
    int        wake[2];         /* quiesce/stop -> the thread */
    pthread_t  tid;
    _Atomic int stop, quiesce;
    pending   *list;            /* every connection held (the thread's only) */
    int        n_pending;
    char       buf[PEEK_MAX];
};

static void unlink_p(srv_front *f, pending *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        f->list = c->next;
    if (c->next)
        c->next->prev = c->prev;
}

/* Forget c: counted out of its address unless it went on to libmicrohttpd. */
static void drop(srv_front *f, pending *c, int close_fd)
{
    epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
    if (close_fd) {
        close(c->fd);
        srv_addr_limit_leave(f->p.addr_limit, c->slot);
    }
    unlink_p(f, c);
    f->n_pending--;
    free(c);
}

static void readable(srv_front *f, pending *c, int hup);

/* Writes reply (best effort: the socket's buffer takes a small reply whole),
 * then lingers: reads and drops until the client closes or LINGER_S, so its
 * own writes do not meet a reset before it has read the reply. */
static void answer(srv_front *f, pending *c, int status, const char *msg, const char *path, const char *ctype,
                   int why)
{
    char *raw = f->p.reply(f->p.ctx, status, msg, path, ctype);
    if (raw) {
        ssize_t w = send(c->fd, raw, strlen(raw), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
        free(raw);
    }
    if (f->p.closed)
        f->p.closed(f->p.ctx, why);
    /* answered: no longer its address's (a client that reconnects at once
     * must not find its lingering socket still counted) */
    srv_addr_limit_leave(f->p.addr_limit, c->slot);
    c->slot = NULL;
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        drop(f, c, 1);          /* nothing unread: the close is a plain FIN, the reply is safe */
        return;
    }
    shutdown(c->fd, SHUT_WR);
    c->closing = 1;
    c->until = mt_now_s() + LINGER_S;
    readable(f, c, 0);          /* drop what is unread now (the head was only peeked at) */
}

/* Bytes arrived (or the peer closed: hup) on c. */
static void readable(srv_front *f, pending *c, int hup)
{
    if (c->closing) {
        char sink[4096];
        ssize_t n;
        while ((n = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT)) > 0)
            ;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            drop(f, c, 1);
        return;
    }
    if (c->parked) {            /* over the per-address limit: only its 503 is coming (sweep) */
        if (hup) {
            if (f->p.closed)
                f->p.closed(f->p.ctx, 2);
            drop(f, c, 1);
        }
        return;
    }
    ssize_t n = recv(c->fd, f->buf, sizeof f->buf, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        if (f->p.closed)
            f->p.closed(f->p.ctx, 2);
        drop(f, c, 1);
        return;
    }
    if (n < 0)
        return;
    srv_head_verdict v;
    size_t len = srv_head_check(f->buf, (size_t)n, f->p.body_limit, f->p.body_limit_ctx, &v);
    if (!len && (size_t)n < sizeof f->buf) {
        if (hup) {                              /* half a head, and the client has stopped sending */
            if (f->p.closed)
                f->p.closed(f->p.ctx, 2);
            drop(f, c, 1);
        }
        return;                                 /* more of the head to come */
    }
    if (len && v.status) {
        answer(f, c, v.status, v.msg, v.path, v.content_type, 1);
        return;
    }
    /* fine (or too long for us to judge): libmicrohttpd's from here */
    int fd = c->fd;
    struct sockaddr_storage a = c->addr;
    socklen_t al = c->addr_len;
    srv_addr_slot *slot = c->slot;
    drop(f, c, 0);
    f->p.admit(f->p.ctx, fd, (struct sockaddr *)&a, al, slot);
}

static void accept_all(srv_front *f)
{
    for (;;) {
        struct sockaddr_storage a;
        socklen_t al = sizeof a;
        int fd = accept4(f->p.listen_fd, (struct sockaddr *)&a, &al, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;                             /* EAGAIN, or out of descriptors: the backlog waits */
        srv_addr_slot *slot = NULL;
        srv_addr_verdict verdict = srv_addr_limit_enter(f->p.addr_limit, (struct sockaddr *)&a, &slot);
        if (verdict == SRV_ADDR_REFUSE) {       /* over twice the limit: no linger, nothing */
            close(fd);
            srv_addr_limit_leave(f->p.addr_limit, slot);
            if (f->p.closed)
                f->p.closed(f->p.ctx, 3);
            continue;
        }
        pending *c = f->n_pending < f->p.max_pending ? calloc(1, sizeof *c) : NULL;
        if (!c) {                               /* out of memory, or too many heads awaited at once */
            close(fd);
            srv_addr_limit_leave(f->p.addr_limit, slot);
            continue;
        }
        c->fd = fd;
        c->addr = a;
        c->addr_len = al;
        c->slot = slot;
        c->parked = verdict == SRV_ADDR_PARK;
        c->t_accept = mt_now_s();
        c->next = f->list;
        if (f->list)
            f->list->prev = c;
        f->list = c;
        f->n_pending++;
        struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c };
        if (epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            drop(f, c, 1);
            continue;
        }
        readable(f, c, 0);                      /* its head may be there already */
    }
}

/* Deadlines: a parked connection's 503, a head not complete in time (408),
 * a linger over. */
static void sweep(srv_front *f)
{
    double t = mt_now_s();
    for (pending *c = f->list, *next; c; c = next) {
        next = c->next;
        if (c->closing) {
            if (t > c->until)
                drop(f, c, 1);
        } else if (c->parked && t > c->t_accept + f->p.park_s) {
            answer(f, c, 503, "", "", "", 3);
        } else if (!c->parked && t > c->t_accept + f->p.head_timeout_s) {
            answer(f, c, 408, "the request was not received in time", "", "", 0);
        }
    }
}

static void *front_main(void *arg)
{
    srv_front *f = arg;
    struct epoll_event ev[64];
    double last_sweep = 0;
    while (!atomic_load(&f->stop)) {
        int n = epoll_wait(f->ep, ev, 64, TICK_MS);
        for (int i = 0; i < n; i++) {
            void *ptr = ev[i].data.ptr;
            if (ptr == f) {                     /* the listening socket */
                if (!atomic_load(&f->quiesce))
                    accept_all(f);
            } else if (ptr == &f->wake) {
                char b[16];
                while (read(f->wake[0], b, sizeof b) > 0)
                    ;
                if (atomic_load(&f->quiesce) && f->p.listen_fd >= 0) {
                    epoll_ctl(f->ep, EPOLL_CTL_DEL, f->p.listen_fd, NULL);
                    close(f->p.listen_fd);
                    f->p.listen_fd = -1;
                }
            } else {
                readable(f, ptr, (ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
            }
        }
        double t = mt_now_s();
        if (t - last_sweep >= TICK_MS / 1e3) {
            sweep(f);
            last_sweep = t;
        }
    }
    while (f->list)
        drop(f, f->list, 1);
    return NULL;
}

srv_front *srv_front_start(const srv_front_params *p, char *err, size_t err_len)
{
    srv_front *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    f->p = *p;
    f->ep = -1;
    f->wake[0] = f->wake[1] = -1;
    int fl = fcntl(p->listen_fd, F_GETFL);
    if ((f->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 || pipe2(f->wake, O_NONBLOCK | O_CLOEXEC) != 0 || fl < 0 ||
        fcntl(p->listen_fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        snprintf(err, err_len, "front: %s", strerror(errno));
        goto fail;
    }
    struct epoll_event ls = { .events = EPOLLIN, .data.ptr = f };
    struct epoll_event wk = { .events = EPOLLIN, .data.ptr = &f->wake };
    if (epoll_ctl(f->ep, EPOLL_CTL_ADD, p->listen_fd, &ls) != 0 ||
        epoll_ctl(f->ep, EPOLL_CTL_ADD, f->wake[0], &wk) != 0) {
        snprintf(err, err_len, "front: %s", strerror(errno));
        goto fail;
    }
    if (pthread_create(&f->tid, NULL, front_main, f) != 0) {
        snprintf(err, err_len, "front: cannot start its thread");
        goto fail;
    }
    return f;
fail:
    if (f->ep >= 0)
        close(f->ep);
    if (f->wake[0] >= 0)
        close(f->wake[0]), close(f->wake[1]);
    free(f);
    return NULL;
}

void srv_front_quiesce(srv_front *f)
{
    if (!f)
        return;
    atomic_store(&f->quiesce, 1);
    ssize_t w = write(f->wake[1], "q", 1);
    (void)w;
}

void srv_front_free(srv_front *f)
{
    if (!f)
        return;
    atomic_store(&f->stop, 1);
    ssize_t w = write(f->wake[1], "s", 1);
    (void)w;
    pthread_join(f->tid, NULL);
    if (f->p.listen_fd >= 0)
        close(f->p.listen_fd);
    close(f->ep);
    close(f->wake[0]);
    close(f->wake[1]);
    free(f);
}
