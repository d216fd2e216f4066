/* redis: the client (redis.h) -- a few hiredis connections, every call bounded,
 * down with a backoff, and what it saw for /metrics and /health.
 *
 * Locking: one mutex guards the slots (which connection is taken) and the
 * up/down state; a call holds it only to take and give back a slot, never
 * across the network.  A connection is used by one thread at a time.
 */
#include "redis.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "util/clock.h"

#define BACKOFF_MIN_S 0.1
#define BACKOFF_MAX_S 5.0
#define MAX_ARGS      16

typedef struct {
    redisContext *c;            /* NULL: not connected */
    int           busy;
} slot;

struct srv_redis {
    srv_redis_url    url;
    srv_redis_params p;
    char             prefix[64];
    char             printed[400];      /* the URL without its password */
    pthread_mutex_t  mu;
    pthread_cond_t   freed;             /* a slot was given back (CLOCK_MONOTONIC) */
    slot            *slots;
    /* under mu */
    int    up;                  /* the last call answered */
    int    down;                /* a call failed; calls skip until retry_at, then one probes */
    int    probing;
    int    fails;               /* in a row: the backoff doubles with each */
    double retry_at, down_since;
    char   last_error[160];
    double lat_sum, lat_max;
    /* counters */
    _Atomic long calls, errors, skipped, connects, lat_count, fb_limit, fb_quota;
};

srv_redis *srv_redis_new(const srv_redis_url *url, const srv_redis_params *p)
{
    srv_redis *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->url = *url;
    r->p = *p;
    r->p.timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : 1;
    r->p.connections = p->connections > 0 ? p->connections : 1;
    snprintf(r->prefix, sizeof r->prefix, "%s", p->prefix ? p->prefix : "mtserve:");
    r->p.prefix = r->prefix;
    srv_redis_url_print(url, r->printed, sizeof r->printed);
    if (!(r->slots = calloc((size_t)r->p.connections, sizeof *r->slots))) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->freed, &ca);
    pthread_condattr_destroy(&ca);
    return r;
}

void srv_redis_free(srv_redis *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->p.connections; i++)
        if (r->slots[i].c)
            redisFree(r->slots[i].c);
    pthread_cond_destroy(&r->freed);
    pthread_mutex_destroy(&r->mu);
    free(r->slots);
    free(r);
}

const char *srv_redis_prefix(const srv_redis *r) { return r->prefix; }

/* Under mu: the call failed without an answer. */
static void mark_down(srv_redis *r, const char *why)
{
    double now = mt_now_s();
    r->fails++;
    double backoff = BACKOFF_MIN_S * (double)(1 << (r->fails - 1 < 6 ? r->fails - 1 : 6));
    r->retry_at = now + (backoff < BACKOFF_MAX_S ? backoff : BACKOFF_MAX_S);
    if (!r->down) {
        r->down = 1;
        r->down_since = now;
        fprintf(stderr, "mtserve: redis %s: down (%s); limits and quotas are counted locally meanwhile\n",
                r->printed, why);
    }
    r->up = 0;
    snprintf(r->last_error, sizeof r->last_error, "%s", why);
}

static void mark_up(srv_redis *r)
{
    if (r->down)
        fprintf(stderr, "mtserve: redis %s: up again after %.1f s\n", r->printed, mt_now_s() - r->down_since);
    r->down = 0;
    r->up = 1;
    r->fails = 0;
}

/* A free slot, marked busy; NULL (err set) while Redis is down and not ours
 * to probe, or when every connection stays busy past the timeout. */
static slot *take(srv_redis *r, char *err, size_t err_len)
{
    pthread_mutex_lock(&r->mu);
    slot *s = NULL;
    if (r->down && (mt_now_s() < r->retry_at || r->probing)) {
        snprintf(err, err_len, "Redis is down (%s)", r->last_error);
        goto skip;
    }
    struct timespec until = mt_abstime_after_ms(r->p.timeout_ms);
    for (;;) {
        for (int i = 0; i < r->p.connections && !s; i++)
            if (!r->slots[i].busy)
                s = &r->slots[i];
        if (s || pthread_cond_timedwait(&r->freed, &r->mu, &until) != 0)
            break;
    }
    if (!s) {
        snprintf(err, err_len, "every Redis connection busy for %d ms", r->p.timeout_ms);
        goto skip;
    }
    s->busy = 1;
    if (r->down)
        r->probing = 1;         /* the backoff is over: this call tries it; the others still skip */
    pthread_mutex_unlock(&r->mu);
    return s;
skip:
    pthread_mutex_unlock(&r->mu);
    atomic_fetch_add(&r->skipped, 1);
    return NULL;
}

/* Gives s back: answered (ok) or dropped with why. */
static void give(srv_redis *r, slot *s, int ok, const char *why, double latency)
{
    pthread_mutex_lock(&r->mu);
    if (ok) {
        mark_up(r);
        r->lat_sum += latency;
        r->lat_max = latency > r->lat_max ? latency : r->lat_max;
    } else {
        /* this connection, and the idle ones: connected to the same Redis, they
         * are likely dead too, and a probe on one would only fail again */
        for (int i = 0; i < r->p.connections; i++) {
            slot *o = &r->slots[i];     /* a busy one's c is its holder's (connect_slot writes it unlocked) */
            if ((o == s || !o->busy) && o->c) {
                redisFree(o->c);
                o->c = NULL;
            }
        }
        mark_down(r, why);
    }
    r->probing = 0;
    s->busy = 0;
    pthread_cond_signal(&r->freed);
    pthread_mutex_unlock(&r->mu);
    if (ok)
        atomic_fetch_add(&r->lat_count, 1);
}

/* A command on c whose reply must be OK (AUTH, SELECT): 0 or -1 with err. */
static int must_ok(redisContext *c, int argc, const char **argv, char *err, size_t err_len)
{
    redisReply *rep = redisCommandArgv(c, argc, argv, NULL);
    srv_redis_value v;
    srv_redis_rc rc = srv_redis_reply_read(rep, SRV_RW_OK, &v, err, err_len);
    if (!rep)
        snprintf(err, err_len, "%s: %s", argv[0], c->errstr);
    freeReplyObject(rep);
    return rc == SRV_REDIS_OK ? 0 : -1;
}

/* Connects s (timeout, AUTH, SELECT): 0, or -1 with err. */
static int connect_slot(srv_redis *r, slot *s, char *err, size_t err_len)
{
    struct timeval tv = { r->p.timeout_ms / 1000, (r->p.timeout_ms % 1000) * 1000 };
    redisContext *c = r->url.is_unix ? redisConnectUnixWithTimeout(r->url.path, tv)
                                     : redisConnectWithTimeout(r->url.host, r->url.port, tv);
    if (!c || c->err) {
        snprintf(err, err_len, "cannot connect: %s", c ? c->errstr : "out of memory");
        goto fail;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(err, err_len, "cannot set the timeout: %s", c->errstr);
        goto fail;
    }
    const char *auth[3] = { "AUTH", r->url.user[0] ? r->url.user : r->url.password, r->url.password };
    if (r->url.password[0] && must_ok(c, r->url.user[0] ? 3 : 2, auth, err, err_len))
        goto fail;
    char db[16];
    snprintf(db, sizeof db, "%d", r->url.db);
    const char *sel[2] = { "SELECT", db };
    if (r->url.db && must_ok(c, 2, sel, err, err_len))
        goto fail;
    s->c = c;
    atomic_fetch_add(&r->connects, 1);
    return 0;
fail:
    if (c)
        redisFree(c);
    return -1;
}

/* One command on s's connection: the reply read as want.  *dropped: the
 * connection failed (no answer, or one hiredis could not read). */
static srv_redis_rc send_on(srv_redis *r, slot *s, int argc, const char *const *argv, const size_t *argvlen,
                            srv_redis_want want, srv_redis_value *v, char *err, size_t err_len, int *dropped)
{
    atomic_fetch_add(&r->calls, 1);
    redisReply *rep = redisCommandArgv(s->c, argc, (const char **)argv, argvlen);
    if (!rep) {
        /* hiredis reports a read past its socket timeout as EAGAIN's text */
        if (s->c->err == REDIS_ERR_IO && strstr(s->c->errstr, "temporarily unavailable"))
            snprintf(err, err_len, "no answer within %d ms", r->p.timeout_ms);
        else
            snprintf(err, err_len, "%s", s->c->errstr[0] ? s->c->errstr : "no reply");
        atomic_fetch_add(&r->errors, 1);
        *dropped = 1;
        memset(v, 0, sizeof *v);
        return SRV_REDIS_DOWN;
    }
    srv_redis_rc rc = srv_redis_reply_read(rep, want, v, err, err_len);
    freeReplyObject(rep);
    return rc;
}

/* The commands of one call on one connection: argv, then (NOSCRIPT) alt. */
static srv_redis_rc call(srv_redis *r, int argc, const char *const *argv, const size_t *argvlen,
                         const char *const *alt, srv_redis_want want, srv_redis_value *v, char *err, size_t err_len)
{
    memset(v, 0, sizeof *v);
    slot *s = take(r, err, err_len);
    if (!s)
        return SRV_REDIS_DOWN;
    double t0 = mt_now_s();
    int dropped = 0;
    if (!s->c && connect_slot(r, s, err, err_len)) {
        atomic_fetch_add(&r->errors, 1);
        give(r, s, 0, err, 0);
        return SRV_REDIS_DOWN;
    }
    srv_redis_rc rc = send_on(r, s, argc, argv, argvlen, want, v, err, err_len, &dropped);
    if (rc == SRV_REDIS_NOSCRIPT && alt)
        rc = send_on(r, s, argc, alt, argvlen, want, v, err, err_len, &dropped);
    give(r, s, !dropped, err, mt_now_s() - t0);
    return rc;
}

srv_redis_rc srv_redis_cmd(srv_redis *r, srv_redis_want want, srv_redis_value *v, int argc, const char *const *argv,
                           const size_t *argvlen, char *err, size_t err_len)
{
    return call(r, argc, argv, argvlen, NULL, want, v, err, err_len);
}

void srv_redis_script_init(srv_redis_script *s)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(s->source, strlen(s->source), md, &n, EVP_sha1(), NULL);
    for (unsigned int i = 0; i < n && i < 20; i++)
        snprintf(s->sha1 + 2 * i, 3, "%02x", md[i]);
}

srv_redis_rc srv_redis_eval(srv_redis *r, const srv_redis_script *s, int nkeys, int argc, const char *const *argv,
                            srv_redis_want want, srv_redis_value *v, char *err, size_t err_len)
{
    return srv_redis_eval_len(r, s, nkeys, argc, argv, NULL, want, v, err, err_len);
}

srv_redis_rc srv_redis_eval_len(srv_redis *r, const srv_redis_script *s, int nkeys, int argc,
                                const char *const *argv, const size_t *argvlen, srv_redis_want want,
                                srv_redis_value *v, char *err, size_t err_len)
{
    if (argc + 3 > MAX_ARGS) {
        snprintf(err, err_len, "a script call with %d arguments (at most %d)", argc, MAX_ARGS - 3);
        memset(v, 0, sizeof *v);
        return SRV_REDIS_ERROR;
    }
    char nk[16];
    snprintf(nk, sizeof nk, "%d", nkeys);
    const char *sha[MAX_ARGS] = { "EVALSHA", s->sha1, nk }, *eval[MAX_ARGS] = { "EVAL", s->source, nk };
    size_t lens[MAX_ARGS];
    lens[1] = strlen(s->sha1);      /* EVAL's source has another length: without argvlen both are strlen'd */
    for (int i = 0; i < argc; i++) {
        sha[3 + i] = eval[3 + i] = argv[i];
        lens[3 + i] = argvlen ? argvlen[i] : 0;
    }
    if (!argvlen)
        return call(r, argc + 3, sha, NULL, eval, want, v, err, err_len);
    /* lengths given: EVALSHA's first (EVAL, sent on NOSCRIPT, has its own) */
    lens[0] = 7;
    lens[2] = strlen(nk);
    srv_redis_rc rc = call(r, argc + 3, sha, lens, NULL, want, v, err, err_len);
    if (rc != SRV_REDIS_NOSCRIPT)
        return rc;
    srv_redis_value_clear(v);
    lens[0] = 4;
    lens[1] = strlen(s->source);
    return call(r, argc + 3, eval, lens, NULL, want, v, err, err_len);
}

void srv_redis_count_fallback(srv_redis *r, int quota)
{
    atomic_fetch_add(quota ? &r->fb_quota : &r->fb_limit, 1);
}

void srv_redis_stats_get(srv_redis *r, srv_redis_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!r)
        return;
    st->configured = 1;
    st->calls = atomic_load(&r->calls);
    st->errors = atomic_load(&r->errors);
    st->skipped = atomic_load(&r->skipped);
    st->connects = atomic_load(&r->connects);
    st->fallbacks_limit = atomic_load(&r->fb_limit);
    st->fallbacks_quota = atomic_load(&r->fb_quota);
    pthread_mutex_lock(&r->mu);
    st->up = r->up;
    st->latency_sum_s = r->lat_sum;
    st->latency_max_s = r->lat_max;
    st->latency_count = atomic_load(&r->lat_count);
    st->down_for_s = r->down ? mt_now_s() - r->down_since : 0;
    snprintf(st->last_error, sizeof st->last_error, "%s", r->last_error);
    pthread_mutex_unlock(&r->mu);
    snprintf(st->url, sizeof st->url, "%s", r->printed);
}

char *srv_redis_metrics(srv_redis *r, size_t *len)
{
    srv_redis_stats st;
    srv_redis_stats_get(r, &st);
    char *out = malloc(2048);
    if (!out)
        return NULL;
    int n = snprintf(out, 2048,
        "# HELP mtserve_redis_up 1 when the last call to Redis (--redis) was answered\n"
        "# TYPE mtserve_redis_up gauge\nmtserve_redis_up %d\n"
        "# HELP mtserve_redis_calls_total Commands sent to Redis\n"
        "# TYPE mtserve_redis_calls_total counter\nmtserve_redis_calls_total %ld\n"
        "# HELP mtserve_redis_errors_total Calls without an answer: refused, reset, timed out\n"
        "# TYPE mtserve_redis_errors_total counter\nmtserve_redis_errors_total %ld\n"
        "# HELP mtserve_redis_skipped_total Calls not sent: Redis down and its backoff not over\n"
        "# TYPE mtserve_redis_skipped_total counter\nmtserve_redis_skipped_total %ld\n"
        "# HELP mtserve_redis_connects_total Connections made to Redis\n"
        "# TYPE mtserve_redis_connects_total counter\nmtserve_redis_connects_total %ld\n"
        "# HELP mtserve_redis_fallbacks_total Verdicts taken locally because Redis was down\n"
        "# TYPE mtserve_redis_fallbacks_total counter\n"
        "mtserve_redis_fallbacks_total{kind=\"limit\"} %ld\nmtserve_redis_fallbacks_total{kind=\"quota\"} %ld\n"
        "# HELP mtserve_redis_latency_seconds Time of the calls Redis answered\n"
        "# TYPE mtserve_redis_latency_seconds summary\n"
        "mtserve_redis_latency_seconds_sum %.6f\nmtserve_redis_latency_seconds_count %ld\n"
        "# HELP mtserve_redis_latency_max_seconds The longest answered call\n"
        "# TYPE mtserve_redis_latency_max_seconds gauge\nmtserve_redis_latency_max_seconds %.6f\n"
        "# HELP mtserve_redis_down_seconds How long Redis has been down (0: up)\n"
        "# TYPE mtserve_redis_down_seconds gauge\nmtserve_redis_down_seconds %.3f\n",
        st.up, st.calls, st.errors, st.skipped, st.connects, st.fallbacks_limit, st.fallbacks_quota,
        st.latency_sum_s, st.latency_count, st.latency_max_s, st.down_for_s);
    *len = n > 0 && n < 2048 ? (size_t)n : 0;
    return out;
}
