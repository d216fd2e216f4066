/* addr_limit: open connections per client address, and what becomes of those
 * over --max-connections-per-ip.
 *
 * Closing a connection over the limit at once (what libmicrohttpd does)
 * costs little per refusal, but a client that reconnects at once (wrk, a
 * retrying library) turns it into a loop of accept, close and connect that
 * burns the CPU the admitted requests need: at 1,024 connections from one
 * address, 512 over the limit, goodput fell to a quarter.  So the first
 * `limit` connections over it are parked instead (front.c: never read,
 * answered 503 + Retry-After and closed after a few seconds): the loop slows
 * to one round per park per parked socket.  Connections over twice the limit
 * are closed at once, so one address never holds more than 2 x limit
 * descriptors, and only for the park beyond the first limit.
 */
#ifndef SRV_ADDR_LIMIT_H
#define SRV_ADDR_LIMIT_H

#include <sys/socket.h>

typedef struct srv_addr_limit srv_addr_limit;
typedef struct srv_addr_slot srv_addr_slot;

typedef enum {
    SRV_ADDR_ADMIT = 0,     /* under the limit */
    SRV_ADDR_PARK,          /* over it: parked (front.c), answered 503 after its park */
    SRV_ADDR_REFUSE,        /* over twice the limit: close at once */
} srv_addr_verdict;

typedef struct {
    int    limit;           /* connections per address; 0: no limit */
} srv_addr_limit_params;

/* NULL when out of memory. */
srv_addr_limit *srv_addr_limit_new(const srv_addr_limit_params *p);
void            srv_addr_limit_free(srv_addr_limit *l);

/* A connection from addr opened: counted (*slot, for srv_addr_limit_leave;
 * NULL when not counted), and the verdict. */
srv_addr_verdict srv_addr_limit_enter(srv_addr_limit *l, const struct sockaddr *addr, srv_addr_slot **slot);
/* It closed. */
void             srv_addr_limit_leave(srv_addr_limit *l, srv_addr_slot *slot);

#endif
