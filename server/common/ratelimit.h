/* ratelimit: per-client limits on requests and characters per minute.
 *
 * One token bucket per client and kind: a bucket holds at most a minute's
 * allowance and refills continuously at allowance / 60 s, so a client may
 * spend a minute's worth in a burst and then its steady rate (LibreTranslate's
 * --req-limit and --char-limit, counted the same way per key or address).
 * Clients are told apart by a string (the router's "key:N" or "ip:ADDR");
 * the table is sharded by its hash and bounded: when full, a bucket that has
 * refilled completely (it holds no debt, so forgetting it changes nothing)
 * is reused, else the least recently seen.
 */
#ifndef SRV_RATELIMIT_H
#define SRV_RATELIMIT_H

#include <stddef.h>

typedef struct srv_ratelimit srv_ratelimit;

/* A client's allowance per minute; 0 = no limit of that kind. */
typedef struct {
    long req_per_min;
    long chars_per_min;
} srv_limit;

typedef enum {
    SRV_LIMIT_OK = 0,
    SRV_LIMIT_REQUESTS,     /* over req_per_min: retry after *retry_s */
    SRV_LIMIT_CHARS,        /* over chars_per_min: retry after *retry_s */
    SRV_LIMIT_NEVER,        /* chars > chars_per_min: no wait makes it fit */
} srv_limit_verdict;

/* max_clients: buckets held at most (memory ~ 128 bytes each). */
srv_ratelimit *srv_ratelimit_new(int max_clients);
void           srv_ratelimit_free(srv_ratelimit *rl);

/* Takes one request and chars characters from client's buckets at time now
 * (seconds, monotonic) -- both or neither.  Thread-safe. */
srv_limit_verdict srv_ratelimit_take(srv_ratelimit *rl, const char *client, const srv_limit *lim, long chars,
                                     double now, int *retry_s);

#endif
