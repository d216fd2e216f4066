/* deadline: per-connection request deadlines (deadline.h). */
#include "deadline.h"
#include "util/check.h"
#include "util/clock.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include <netinet/in.h>         /* IPPROTO_TCP */
#include <linux/sockios.h>
#include <linux/tcp.h>      /* struct tcp_info with tcpi_bytes_acked (glibc's lacks it) */
#include <unistd.h>

typedef enum { WAIT_FIRST, REQUEST, HANDLING, IDLE } phase;

struct srv_deadline_conn {
    srv_deadline_conn *prev, *next;
    int    fd;
    phase  ph;
    double since;           /* when the phase began */
    int    closed;          /* the sweeper shut it down already */
    int    gone_ticks;      /* consecutive ticks the peer was seen gone in this phase */
    int    linger;          /* srv_deadline_linger: drain after libmicrohttpd closes */
    char  *early;           /* srv_deadline_answer_unless_body's reply, or NULL */
    double early_due;       /* ... written at this time; 0 = not armed */
    unsigned long long acked;   /* tcpi_bytes_acked when last seen */
    double stalled_since;   /* bytes wait unacknowledged since; 0 = not stalled */
};

/* A socket answered early (its body unread) that libmicrohttpd has closed:
 * our dup() of it keeps it open while what the client still sends is read
 * and dropped, so the client's writes do not meet a reset before it reads
 * the reply.  Bounded in number, time and bytes. */
#define MAX_LINGER       64
#define LINGER_S         5.0
#define LINGER_BYTES     ((size_t)64 << 20)
#define LINGER_TICK_MS   20
typedef struct {
    int    fd;
    double until;
    size_t bytes;
} lingering;

struct srv_deadline {
    pthread_mutex_t    mu;
    pthread_cond_t     cv;      /* stop */
    pthread_t          tid;
    int                stop, started;
    srv_deadline_params p;
    srv_deadline_conn  head;    /* sentinel of a circular list */
    struct pollfd     *pfd;     /* the sweeper's scratch */
    srv_deadline_conn **pconn;
    size_t             pcap;
    char              *reply;   /* params.timeout_reply's copy, or NULL */
    size_t             reply_len;
    lingering          lg[MAX_LINGER];
    int                n_lg;
};


srv_deadline_params srv_deadline_default_params(void)
{
    return (srv_deadline_params){ .first_s = 10, .request_s = 10, .idle_s = 60, .tick_ms = 250 };
}

/* Under mu: the deadline of c, or 0 for none. */
static double due(const srv_deadline *d, const srv_deadline_conn *c)
{
    switch (c->ph) {
    case WAIT_FIRST: return c->since + d->p.first_s;
    case REQUEST:    return c->since + d->p.request_s;
    case IDLE:       return c->since + d->p.idle_s;
    default:         return 0;
    }
}

static void closed(srv_deadline *d, int why)
{
    if (d->p.on_close)
        d->p.on_close(d->p.on_close_ctx, why);
}

/* Under mu.  MSG_DONTWAIT: a client that does not read cannot block the
 * sweeper; the reply is best effort, the shutdown is what matters. */
static void expire(srv_deadline *d, srv_deadline_conn *c)
{
    if (c->ph != IDLE) {
        if (d->reply) {
            ssize_t n = send(c->fd, d->reply, d->reply_len, MSG_DONTWAIT | MSG_NOSIGNAL);
            (void)n;
        }
    }
    shutdown(c->fd, SHUT_RDWR);
    c->closed = 1;
    closed(d, c->ph == IDLE ? 1 : 0);
}

/* Under mu.  libmicrohttpd 0.9.75 with epoll misses the end of stream of a
 * client that closes right after connecting (or after part of a request):
 * such sockets sat in CLOSE-WAIT until a timeout (measured: 174 of 600).
 * One poll() over the guarded sockets finds them; a shutdown() makes
 * libmicrohttpd see it and close.  A peer must look gone on two ticks in the
 * same phase: a client that half-closes after a complete request is being
 * parsed, not gone.  Connections being answered are left to the handlers
 * (they poll their own client). */
static void release_departed(srv_deadline *d)
{
    int n = 0;
    for (srv_deadline_conn *c = d->head.next; c != &d->head; c = c->next) {
        if (c->closed || c->ph == HANDLING)
            continue;
        size_t cap_fd = d->pcap, cap_conn = d->pcap;   /* one capacity: both grow, or it stays */
        if (mt_grow(&d->pfd, &cap_fd, (size_t)n + 1, sizeof *d->pfd, 256) ||
            mt_grow(&d->pconn, &cap_conn, (size_t)n + 1, sizeof *d->pconn, 256))
            break;
        d->pcap = cap_fd;
        d->pfd[n] = (struct pollfd){ .fd = c->fd, .events = POLLRDHUP };
        d->pconn[n++] = c;
    }
    if (n == 0 || poll(d->pfd, (nfds_t)n, 0) <= 0)
        return;
    for (int i = 0; i < n; i++) {
        srv_deadline_conn *c = d->pconn[i];
        if (!(d->pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            c->gone_ticks = 0;
            continue;
        }
        if (++c->gone_ticks < 2)
            continue;
        shutdown(c->fd, SHUT_RDWR);
        c->closed = 1;
        closed(d, 2);
    }
}

/* Under mu: reads and drops what the lingering sockets have; closes each at
 * its end of stream, an error, or its time or byte bound. */
static void drain_lingering(srv_deadline *d, double now)
{
    static char sink[65536];        /* only the sweeper writes it; never read */
    for (int i = 0; i < d->n_lg;) {
        lingering *l = &d->lg[i];
        int done = now > l->until || l->bytes > LINGER_BYTES;
        while (!done) {
            ssize_t n = recv(l->fd, sink, sizeof sink, MSG_DONTWAIT);
            if (n > 0)
                done = (l->bytes += (size_t)n) > LINGER_BYTES;
            else
                done = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
            if (n < 0 && !done)
                break;
        }
        if (done) {
            close(l->fd);
            d->lg[i] = d->lg[--d->n_lg];
        } else {
            i++;
        }
    }
}

/* Under mu: 1 when c's reply has waited write_s without one byte taken.
 * SIOCOUTQ first (one cheap call for the common empty queue), TCP_INFO only
 * when something waits. */
static int write_stalled(const srv_deadline *d, srv_deadline_conn *c, double now)
{
    int outq = 0;
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    if (ioctl(c->fd, SIOCOUTQ, &outq) != 0 || outq <= 0 ||
        getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 || len < sizeof ti) {
        c->stalled_since = 0;
        return 0;
    }
    if (c->stalled_since == 0 || ti.tcpi_bytes_acked != c->acked) {
        c->acked = ti.tcpi_bytes_acked;
        c->stalled_since = now;
        return 0;
    }
    return now - c->stalled_since > d->p.write_s;
}

static void *sweeper(void *arg)
{
    srv_deadline *d = arg;
    double last = 0;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        /* lingering sockets are drained often: a client writing its body
         * must not stall on a full buffer */
        struct timespec t = mt_abstime_after_ms(d->n_lg ? LINGER_TICK_MS : d->p.tick_ms);
        int rc = pthread_cond_timedwait(&d->cv, &d->mu, &t);
        if (d->stop)
            break;
        if (rc != ETIMEDOUT && rc != 0)
            continue;
        double now = mt_now_s();
        drain_lingering(d, now);
        if (now - last < d->p.tick_ms / 1e3 * 0.9)
            continue;
        last = now;
        for (srv_deadline_conn *c = d->head.next; c != &d->head; c = c->next) {
            double when = due(d, c);
            if (!c->closed && c->early_due > 0 && now > c->early_due) {
                ssize_t n = send(c->fd, c->early, strlen(c->early), MSG_DONTWAIT | MSG_NOSIGNAL);
                (void)n;
                shutdown(c->fd, SHUT_RDWR);
                c->closed = 1;
            } else if (!c->closed && when > 0 && now > when)
                expire(d, c);
            else if (!c->closed && d->p.write_s > 0 && (c->ph == HANDLING || c->ph == IDLE) &&
                     write_stalled(d, c, now)) {
                shutdown(c->fd, SHUT_RDWR);
                c->closed = 1;
                closed(d, 3);
            }
        }
        release_departed(d);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

srv_deadline *srv_deadline_new(const srv_deadline_params *p)
{
    srv_deadline *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->p = *p;
    if (d->p.tick_ms <= 0)
        d->p.tick_ms = 250;
    d->head.next = d->head.prev = &d->head;
    if (p->timeout_reply) {
        if (!(d->reply = strdup(p->timeout_reply))) {
            free(d);
            return NULL;
        }
        d->reply_len = strlen(d->reply);
    }
    d->p.timeout_reply = NULL;
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&d->tid, NULL, sweeper, d) != 0) {
        srv_deadline_free(d);
        return NULL;
    }
    d->started = 1;
    return d;
}

void srv_deadline_free(srv_deadline *d)
{
    if (!d)
        return;
    if (d->started) {
        pthread_mutex_lock(&d->mu);
        d->stop = 1;
        pthread_cond_signal(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->tid, NULL);
    }
    /* entries still listed belong to connections libmicrohttpd never closed
     * (the daemon was left running at exit): free them with the registry */
    for (srv_deadline_conn *c = d->head.next, *n; c != &d->head; c = n) {
        n = c->next;
        free(c);
    }
    for (int i = 0; i < d->n_lg; i++)
        close(d->lg[i].fd);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d->reply);
    free(d->pfd);
    free(d->pconn);
    free(d);
}

srv_deadline_conn *srv_deadline_add(srv_deadline *d, int fd)
{
    srv_deadline_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = fd;
    c->ph = WAIT_FIRST;
    c->since = mt_now_s();
    pthread_mutex_lock(&d->mu);
    c->next = d->head.next;
    c->prev = &d->head;
    d->head.next->prev = c;
    d->head.next = c;
    pthread_mutex_unlock(&d->mu);
    return c;
}

void srv_deadline_remove(srv_deadline *d, srv_deadline_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&d->mu);
    c->prev->next = c->next;
    c->next->prev = c->prev;
    if (c->linger && !c->closed && d->n_lg < MAX_LINGER) {
        int fd = dup(c->fd);
        if (fd >= 0)
            d->lg[d->n_lg++] = (lingering){ .fd = fd, .until = mt_now_s() + LINGER_S };
    }
    pthread_mutex_unlock(&d->mu);
    free(c->early);
    free(c);
}

void srv_deadline_answer_unless_body(srv_deadline *d, srv_deadline_conn *c, double grace_s, const char *reply)
{
    char *copy = c && reply ? strdup(reply) : NULL;
    if (!copy)
        return;
    pthread_mutex_lock(&d->mu);
    free(c->early);
    c->early = copy;
    c->early_due = mt_now_s() + grace_s;
    pthread_mutex_unlock(&d->mu);
}

void srv_deadline_body_seen(srv_deadline *d, srv_deadline_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&d->mu);
    c->early_due = 0;
    pthread_mutex_unlock(&d->mu);
}

void srv_deadline_linger(srv_deadline *d, srv_deadline_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&d->mu);
    c->linger = 1;
    pthread_mutex_unlock(&d->mu);
}

static void set_phase(srv_deadline *d, srv_deadline_conn *c, phase ph)
{
    if (!c)
        return;
    double t = mt_now_s();
    pthread_mutex_lock(&d->mu);
    /* the first request's clock runs from the accept: trickling the request
     * line itself must not buy a fresh deadline */
    if (!(ph == REQUEST && c->ph == WAIT_FIRST))
        c->since = t;
    c->ph = ph;
    c->gone_ticks = 0;
    pthread_mutex_unlock(&d->mu);
}

void srv_deadline_request_line(srv_deadline *d, srv_deadline_conn *c) { set_phase(d, c, REQUEST); }
void srv_deadline_request_done(srv_deadline *d, srv_deadline_conn *c) { set_phase(d, c, HANDLING); }
void srv_deadline_reply_sent(srv_deadline *d, srv_deadline_conn *c)   { set_phase(d, c, IDLE); }

int srv_deadline_expired(srv_deadline *d, srv_deadline_conn *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&d->mu);
    double when = due(d, c);
    int r = c->ph == REQUEST && when > 0 && mt_now_s() > when;
    pthread_mutex_unlock(&d->mu);
    return r;
}
