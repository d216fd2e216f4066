/* redis: the state replicas share through Redis (serve --redis URL), and the
 * small client it goes through (hiredis).
 *
 * The client holds a few connections (hiredis contexts are not thread-safe:
 * a call takes one for itself, under a mutex), and every call is bounded:
 * connecting and each reply wait at most the call timeout.  A failed call
 * (refused, reset, timed out) drops its connection and marks Redis down;
 * while it is down calls fail at once without touching the network, and the
 * client's own thread probes it (PING) after a backoff (0.1 s doubling to
 * 5 s), so a dead or stopped Redis costs a request nothing but the local
 * fallback: no request ever waits on a probe.
 *
 * Quick calls (the ones on a plain translation's path: the rate limit's
 * script, the shared cache's lookup) are bounded by a shorter budget
 * (--redis-budget, 20 ms): one that passes it drops its connection and marks
 * Redis slow; while it is slow quick calls fail at once (SRV_REDIS_SLOW: the
 * caller decides locally) until a probe is answered within the budget.  The
 * other calls (file jobs, glossaries, quotas) still wait up to the timeout.
 *
 * What is shared (srv_shared, shared.c): the rate-limit buckets (one Lua
 * script per request: the token bucket of ratelimit.h kept in a Redis hash,
 * refilled by Redis's own clock) and each key's characters against its
 * char-quota (one script: the count, capped).  When Redis is down they fall
 * back to this process's own buckets and to the last shared count it saw
 * plus what it counted since (added to Redis when it is back).
 *
 * Sentinel and Cluster are not supported: one Redis server (or a proxy in
 * front of several) at one address.
 */
#ifndef SRV_STORE_REDIS_H
#define SRV_STORE_REDIS_H

#include <stddef.h>

#include "common/ratelimit.h"
#include "common/usage.h"

struct redisReply;
struct redisReader;

/* ---- the URL ---------------------------------------------------------------------- */

typedef struct {
    int  is_unix;               /* unix://path */
    char host[256];             /* redis://: a name, an IPv4 address or [IPv6] (brackets taken off) */
    int  port;                  /* 6379 when not given */
    char path[108];             /* unix:// (sun_path's size) */
    char user[128];             /* "" = none (AUTH password alone, or no AUTH) */
    char password[256];         /* "" = no AUTH */
    int  db;                    /* SELECT db; 0 when not given */
} srv_redis_url;

/* Parses redis://[[user]:password@]host[:port][/db] and unix://path[?db=N]
 * (user and password %-decoded).  rediss:// is refused: Debian's hiredis
 * 0.14 has no TLS.  0, or -1 with a message naming what is wrong. */
int srv_redis_url_parse(const char *url, srv_redis_url *out, char *err, size_t err_len);
/* The URL without its password, for logs and /health. */
void srv_redis_url_print(const srv_redis_url *u, char *out, size_t out_len);

/* ---- replies ---------------------------------------------------------------------- */

typedef enum {
    SRV_RW_OK,                  /* a status reply "OK" */
    SRV_RW_INT,                 /* an integer; a bulk string holding one; nil (v->nil, i = 0) */
    SRV_RW_STR,                 /* a bulk or status string; nil (v->nil) */
    SRV_RW_INTS,                /* an array of 1..SRV_REDIS_MAX_INTS integers (a script's verdict) */
} srv_redis_want;

#define SRV_REDIS_MAX_INTS 4

typedef struct {
    long long i;
    char     *s;                /* SRV_RW_STR: malloc'd, NUL-terminated copy (srv_redis_value_clear) */
    size_t    len;
    int       nil;
    long long ints[SRV_REDIS_MAX_INTS];
    int       n;
} srv_redis_value;

typedef enum {
    SRV_REDIS_OK = 0,
    SRV_REDIS_DOWN,             /* no answer: not connected, refused, timed out, reset (the call was dropped) */
    SRV_REDIS_ERROR,            /* Redis answered an error (its text in err) */
    SRV_REDIS_NOSCRIPT,         /* ... the error NOSCRIPT: EVALSHA of a script it has not loaded */
    SRV_REDIS_BAD_REPLY,        /* an answer of another type or shape than wanted */
    SRV_REDIS_SLOW,             /* a quick call: no answer within the budget, or skipped while Redis is slow */
} srv_redis_rc;

/* Reads reply r as want into *v (cleared first): every reply type
 * (string, array, integer, nil, status, error, and any other) gives a
 * result; a NULL reply is SRV_REDIS_DOWN.  Not OK: err says why. */
srv_redis_rc srv_redis_reply_read(const struct redisReply *r, srv_redis_want want, srv_redis_value *v, char *err,
                                  size_t err_len);
void         srv_redis_value_clear(srv_redis_value *v);

/* A reader (every connection's, and the fuzz target's) made to refuse an
 * array of more than SRV_REDIS_MAX_ELEMENTS (hiredis 0.14 allocates the
 * declared count up front): such a reply is a protocol error, not 9 GB. */
#define SRV_REDIS_MAX_ELEMENTS 65536
void         srv_redis_reader_bound(struct redisReader *rd);

/* ---- the client ------------------------------------------------------------------- */

typedef struct srv_redis srv_redis;

typedef struct {
    int         timeout_ms;     /* connecting, and each reply; >= 1 */
    int         budget_ms;      /* the same for quick calls; 0 or over timeout_ms: timeout_ms */
    int         connections;    /* held at most; >= 1 */
    const char *prefix;         /* of every key ("mtserve:") */
} srv_redis_params;

/* The client of url.  It connects on its first call (Redis may come up after
 * the server): NULL only when out of memory. */
srv_redis  *srv_redis_new(const srv_redis_url *url, const srv_redis_params *p);
void        srv_redis_free(srv_redis *r);
const char *srv_redis_prefix(const srv_redis *r);

/* One command (argv[0..argc), binary-safe with argvlen, NULL: strlen), its
 * reply read as want.  Thread-safe; never waits past the timeout (twice it
 * when it has to connect first). */
srv_redis_rc srv_redis_cmd(srv_redis *r, srv_redis_want want, srv_redis_value *v, int argc, const char *const *argv,
                           const size_t *argvlen, char *err, size_t err_len);

/* The same bounded by the budget: SRV_REDIS_SLOW past it, or at once while
 * Redis is slow (or down: SRV_REDIS_DOWN). */
srv_redis_rc srv_redis_cmd_quick(srv_redis *r, srv_redis_want want, srv_redis_value *v, int argc,
                                 const char *const *argv, const size_t *argvlen, char *err, size_t err_len);

/* A Lua script, run by its sha1 (EVALSHA) and sent whole (EVAL) when Redis
 * answers NOSCRIPT (first use, after a restart or SCRIPT FLUSH): one round
 * trip but for that. */
typedef struct {
    const char *source;
    char        sha1[41];       /* filled by srv_redis_script_init */
} srv_redis_script;
void         srv_redis_script_init(srv_redis_script *s);
srv_redis_rc srv_redis_eval(srv_redis *r, const srv_redis_script *s, int nkeys, int argc, const char *const *argv,
                            srv_redis_want want, srv_redis_value *v, char *err, size_t err_len);
/* The same with binary-safe arguments: argv[i] is argvlen[i] bytes (NOSCRIPT
 * then costs a second call: the script is sent whole in another command). */
srv_redis_rc srv_redis_eval_len(srv_redis *r, const srv_redis_script *s, int nkeys, int argc,
                                const char *const *argv, const size_t *argvlen, srv_redis_want want,
                                srv_redis_value *v, char *err, size_t err_len);

/* srv_redis_eval bounded by the budget, as srv_redis_cmd_quick. */
srv_redis_rc srv_redis_eval_quick(srv_redis *r, const srv_redis_script *s, int nkeys, int argc,
                                  const char *const *argv, srv_redis_want want, srv_redis_value *v, char *err,
                                  size_t err_len);

/* What the client has seen, for /metrics and /health. */
typedef struct {
    int    configured;          /* 0: no --redis (every other field 0) */
    int    up;                  /* the last call (or probe) got an answer */
    int    slow;                /* quick calls skip it: one passed the budget, no probe was quick since */
    int    budget_ms;
    long   calls;               /* commands sent */
    long   errors;              /* of them, without an answer (timed out, reset, refused) */
    long   skipped;             /* calls not sent: Redis down (or slow, for quick calls) */
    long   late;                /* quick calls not answered within the budget */
    long   probes;              /* PINGs of the prober thread */
    long   connects;            /* connections made */
    long   fallbacks_limit;     /* rate-limit verdicts taken locally (shared.c) */
    long   fallbacks_quota;     /* quota counts taken locally */
    double latency_sum_s;       /* of the calls answered */
    long   latency_count;
    double latency_max_s;
    double down_for_s;          /* since when it is down; 0 when up */
    char   last_error[160];
    char   url[400];            /* srv_redis_url_print */
} srv_redis_stats;
void  srv_redis_stats_get(srv_redis *r, srv_redis_stats *st);
/* One verdict taken locally because Redis was down or slow (shared.c): quota 0 a rate limit's, 1 a quota's. */
void  srv_redis_count_fallback(srv_redis *r, int quota);
/* The mtserve_redis_* lines of GET /metrics (malloc'd, *len bytes); NULL on OOM. */
char *srv_redis_metrics(srv_redis *r, size_t *len);

/* ---- shared limits and quotas (shared.c) ---------------------------------------- */

typedef struct srv_shared srv_shared;

/* The limits and quotas of the process: with r (may be NULL: no --redis)
 * shared by every replica, else (and while r is down) local's and usage's.
 * local may be NULL (no rate limit configured); usage and r outlive it.
 * With r, the counts usage read from its state file go to Redis for the keys
 * it has none of (the first replica to start seeds them). */
srv_shared *srv_shared_new(srv_redis *r, srv_ratelimit *local, srv_usage *usage);
void        srv_shared_free(srv_shared *sh);

/* srv_ratelimit_take through Redis, or locally. */
srv_limit_verdict srv_shared_limit_take(srv_shared *sh, const char *client, const srv_limit *lim, long chars,
                                        double now, int *retry_s);
/* srv_usage_take, _give_back, _count of usage.h, counted in Redis.
 * count: from Redis, else the last count seen plus what was counted here. */
int  srv_shared_usage_take(srv_shared *sh, int key, long chars);
void srv_shared_usage_give_back(srv_shared *sh, int key, long chars);
long srv_shared_usage_count(srv_shared *sh, int key);
/* The same without a round trip (for /metrics): the last count known here. */
long srv_shared_usage_known(srv_shared *sh, int key);

/* ---- the shared translation cache (rcache.c) ------------------------------------ */

/* A second level under the local translation cache (translate/cache.h), in
 * Redis for every replica (serve --redis-cache-mb N): the same keys and
 * values, looked up after a local miss and filled after a decode.  Each
 * entry is stored under PREFIX tc:SHA256(key), its value the key itself (so
 * that a hit is the key's, byte for byte) and the local value.  The entries
 * written through this prefix hold at most max_bytes of keys and values in
 * all (Redis's own overhead per key, ~100 bytes, not counted), the oldest
 * written dropped first, by one Lua script per write; an entry is at most
 * max_bytes / 256. */
typedef struct srv_rcache srv_rcache;

/* NULL when out of memory (r NULL or max_bytes 0: NULL, the cache off; every
 * call below takes NULL). */
srv_rcache *srv_rcache_new(srv_redis *r, size_t max_bytes);
void        srv_rcache_free(srv_rcache *c);
/* 1 with *val (malloc'd) and *vlen on a hit; 0 on a miss or while Redis
 * does not answer within the budget (a quick call). */
int         srv_rcache_get(srv_rcache *c, const void *key, size_t klen, void **val, size_t *vlen);
/* Stores it: a copy queued for the cache's writer thread (the caller does not
 * wait for Redis); not when over the entry bound, when 4 MB of writes (at
 * most max_bytes) already wait, or when Redis does not answer. */
void        srv_rcache_put(srv_rcache *c, const void *key, size_t klen, const void *val, size_t vlen);
/* Waits until every queued write was sent (tests; srv_rcache_free sends them too). */
void        srv_rcache_flush(srv_rcache *c);
/* The mtserve_redis_cache_* lines of GET /metrics (malloc'd, *len bytes); NULL on OOM or c NULL. */
char       *srv_rcache_metrics(srv_rcache *c, size_t *len);

#endif
