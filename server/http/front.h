/* front: the listening socket, and each new connection until its request
 * head has arrived and passed srv_head_check (head_check.h).
 *
 * One thread accepts, counts the connection against its address
 * (addr_limit.h), and watches it (epoll, edge-triggered) while its head
 * arrives, peeking at the bytes without taking them.  A head that passes is
 * handed, untouched, to libmicrohttpd (http.c's admit callback); one that
 * fails gets its error written here and the connection is closed after a
 * short linger; one that does not complete within head_timeout_s gets the
 * 408.  So libmicrohttpd only ever parses heads these checks passed.
 *
 * A connection over the per-address limit is parked here: never read,
 * never handed on, answered 503 + Retry-After park_s after its accept (so a
 * client that reconnects at once loops once per park_s, at the cost of an
 * accept and a small write); one over twice the limit is closed at once.
 *
 * The front holds no libmicrohttpd type: http.c passes the calls in.
 */
#ifndef SRV_FRONT_H
#define SRV_FRONT_H

#include <stddef.h>
#include <sys/socket.h>

#include "addr_limit.h"
#include "head_check.h"

typedef struct srv_front srv_front;

typedef struct {
    int    listen_fd;           /* bound and listening; the front owns it from here */
    double head_timeout_s;      /* the head must arrive within this of the accept (408) */
    double park_s;              /* a parked connection (over the per-address limit) gets its 503 then */
    srv_addr_limit *addr_limit; /* per-address counts (may be NULL) */
    int    max_pending;         /* connections waiting for their heads; more are closed at once */
    srv_head_limit_fn body_limit;       /* a path's body limit (the 413s) */
    void  *body_limit_ctx;
    /* A connection whose head passed: now libmicrohttpd's.  slot: its count
     * (srv_addr_limit_leave when it closes). */
    void (*admit)(void *ctx, int fd, const struct sockaddr *addr, socklen_t len, srv_addr_slot *slot);
    /* The whole raw HTTP reply (malloc'd) for a refused head: status 400,
     * 413, 408 or 503 (parked), message, and the head's path and
     * Content-Type for the shape ("" when unknown). */
    char *(*reply)(void *ctx, int status, const char *msg, const char *path, const char *content_type);
    /* a connection the front closed: why 0 head timeout (408), 1 refused head, 2 client gone,
     * 3 over the per-address limit (a parked one's 503, or over twice the limit) */
    void (*closed)(void *ctx, int why);
    void  *ctx;
} srv_front_params;

/* Starts the thread; NULL with a message. */
srv_front *srv_front_start(const srv_front_params *p, char *err, size_t err_len);
/* Stops accepting: the listening socket is closed (connections waiting for
 * their head are still served until srv_front_free). */
void       srv_front_quiesce(srv_front *f);
/* Stops the thread and closes what it holds. */
void       srv_front_free(srv_front *f);

#endif
