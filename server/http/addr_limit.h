/* addr_limit: open connections per client address, and what becomes of those
 * over --max-connections-per-ip.
 *
 * Closing a connection over the limit at once (what libmicrohttpd does)
 * costs little per refusal, but a client that reconnects at once (wrk, a
 * retrying library) turns it into a loop of accept, close and connect that
 * burns the CPU the admitted requests need: at 1,024 connections from one
 * address, 512 over the limit, goodput fell to a quarter.  So the first
 * `limit` connections over it are parked instead: never read past their
 * request head, never routed, answered 503 + Retry-After (and closed) after
 * park_s; a connection that sends nothing meanwhile is answered and closed by
 * the deadline sweeper at the same time.  The loop slows to one round per
 * park_s per parked socket.  Connections over twice the limit are closed at
 * once, so one address never holds more than 2 x limit descriptors, and
 * only for park_s beyond the first limit.
 *
 * The parked requests wait on a timer thread here; what "answer it" means is
 * the caller's (http.c resumes the suspended connection), passed in as a
 * callback.
 */
#ifndef SRV_ADDR_LIMIT_H
#define SRV_ADDR_LIMIT_H

#include <sys/socket.h>

typedef struct srv_addr_limit srv_addr_limit;
typedef struct srv_addr_slot srv_addr_slot;

typedef enum {
    SRV_ADDR_ADMIT = 0,     /* under the limit */
    SRV_ADDR_PARK,          /* over it: parked, answered 503 after park_s */
    SRV_ADDR_REFUSE,        /* over twice the limit: close at once */
} srv_addr_verdict;

typedef struct {
    int    limit;           /* connections per address; 0: no limit */
    double park_s;
    /* on the timer thread, once a parked request's time is over */
    void (*expire)(void *ctx, void *parked);
    void  *ctx;
} srv_addr_limit_params;

/* NULL when out of memory (or the timer thread cannot start). */
srv_addr_limit *srv_addr_limit_new(const srv_addr_limit_params *p);
/* Calls expire for every request still parked, at once, then stops. */
void            srv_addr_limit_free(srv_addr_limit *l);

/* A connection from addr opened: counted (*slot, for srv_addr_limit_leave;
 * NULL when not counted), and the verdict. */
srv_addr_verdict srv_addr_limit_enter(srv_addr_limit *l, const struct sockaddr *addr, srv_addr_slot **slot);
/* It closed. */
void             srv_addr_limit_leave(srv_addr_limit *l, srv_addr_slot *slot);

/* A parked connection's request arrived: expire(ctx, parked) is called on
 * the timer thread park_s after the connection was accepted (t_accept,
 * mt_now_s()), at once if that time is over.  -1 when out of memory
 * (nothing will be called). */
int srv_addr_limit_park(srv_addr_limit *l, void *parked, double t_accept);

#endif
