/* redis: the client (redis.h) -- a few hiredis connections, every call bounded,
 * down with a backoff and probed in the background, quick calls bounded by a
 * shorter budget, and what it saw for /metrics and /health.
 *
 * Locking: one mutex guards the slots (which connection is taken) and the
 * up/down/slow state; a call holds it only to take and give back a slot, never
 * across the network.  A connection is used by one thread at a time.  The
 * prober thread is the only caller that sends while Redis is down (or, for
 * quick calls, slow): no request ever waits on a probe.
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
#define MAX_ARGS      24

/* How a call may go: a full one (bounded by the timeout) skips while Redis is
 * down; a quick one (bounded by the budget) skips while it is down or slow;
 * the prober's goes whatever the state. */
typedef enum { CALL_FULL, CALL_QUICK, CALL_PROBE } call_mode;

typedef struct {
    redisContext *c;            /* NULL: not connected */
    int           busy;
    int           tmo_ms;       /* the socket timeout c has now */
} slot;

struct srv_redis {
    srv_redis_url    url;
    srv_redis_params p;
    char             prefix[64];
    char             printed[400];      /* the URL without its password */
    pthread_mutex_t  mu;
    pthread_cond_t   freed;             /* a slot was given back (CLOCK_MONOTONIC) */
    pthread_cond_t   wake;              /* the prober has work, or must stop (CLOCK_MONOTONIC) */
    pthread_t        prober;
    int              prober_started;
    slot            *slots;
    /* under mu */
    int    stop;
    int    up;                  /* the last call answered */
    int    down;                /* a call failed: calls skip until the prober gets an answer */
    int    fails;               /* in a row: the backoff doubles with each */
    double retry_at, down_since;
    int    slow;                /* a quick call passed the budget: quick calls skip until a probe is quick */
    int    slow_fails;
    double slow_retry_at;
    char   last_error[160];
    double lat_sum, lat_max;
    /* counters */
    _Atomic long calls, errors, skipped, connects, lat_count, fb_limit, fb_quota, late, probes;
};

static void *probe_main(void *arg);

srv_redis *srv_redis_new(const srv_redis_url *url, const srv_redis_params *p)
{
    srv_redis *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->url = *url;
    r->p = *p;
    r->p.timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : 1;
    r->p.budget_ms = p->budget_ms > 0 && p->budget_ms < r->p.timeout_ms ? p->budget_ms : r->p.timeout_ms;
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
    pthread_cond_init(&r->wake, &ca);
    pthread_condattr_destroy(&ca);
    r->prober_started = pthread_create(&r->prober, NULL, probe_main, r) == 0;
    if (!r->prober_started) {
        srv_redis_free(r);
        return NULL;
    }
    return r;
}

void srv_redis_free(srv_redis *r)
{
    if (!r)
        return;
    if (r->prober_started) {
        pthread_mutex_lock(&r->mu);
        r->stop = 1;
        pthread_cond_broadcast(&r->wake);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->prober, NULL);
    }
    for (int i = 0; i < r->p.connections; i++)
        if (r->slots[i].c)
            redisFree(r->slots[i].c);
    pthread_cond_destroy(&r->freed);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->mu);
    free(r->slots);
    free(r);
}

const char *srv_redis_prefix(const srv_redis *r) { return r->prefix; }

static double backoff_s(int fails)
{
    double b = BACKOFF_MIN_S * (double)(1 << (fails - 1 < 6 ? fails - 1 : 6));
    return b < BACKOFF_MAX_S ? b : BACKOFF_MAX_S;
}

/* Under mu: the call failed without an answer. */
static void mark_down(srv_redis *r, const char *why)
{
    double now = mt_now_s();
    r->fails++;
    r->retry_at = now + backoff_s(r->fails);
    if (!r->down) {
        r->down = 1;
        r->down_since = now;
        fprintf(stderr, "mtserve: redis %s: down (%s); limits and quotas are counted locally meanwhile\n",
                r->printed, why);
    }
    r->up = 0;
    snprintf(r->last_error, sizeof r->last_error, "%s", why);
    pthread_cond_broadcast(&r->wake);
}

static void mark_up(srv_redis *r)
{
    if (r->down)
        fprintf(stderr, "mtserve: redis %s: up again after %.1f s\n", r->printed, mt_now_s() - r->down_since);
    r->down = 0;
    r->up = 1;
    r->fails = 0;
}

/* Under mu: a quick call passed the budget (or a probe answered past it). */
static void mark_slow(srv_redis *r, const char *why)
{
    r->slow_fails++;
    r->slow_retry_at = mt_now_s() + backoff_s(r->slow_fails);
    if (!r->slow)
        fprintf(stderr, "mtserve: redis %s: slower than the budget of %d ms (%s); rate limits and cache lookups "
                "are decided locally meanwhile\n", r->printed, r->p.budget_ms, why);
    r->slow = 1;
    snprintf(r->last_error, sizeof r->last_error, "%s", why);
    pthread_cond_broadcast(&r->wake);
}

/* A free slot, marked busy; NULL (err set, *why SRV_REDIS_DOWN or, for a
 * quick call, SRV_REDIS_SLOW) while Redis is down (or, for a quick call,
 * slow): the prober alone sends then; or when every connection stays busy
 * past the call's bound. */
static slot *take(srv_redis *r, call_mode mode, srv_redis_rc *why, char *err, size_t err_len)
{
    pthread_mutex_lock(&r->mu);
    slot *s = NULL;
    int bound = mode == CALL_QUICK ? r->p.budget_ms : r->p.timeout_ms;
    *why = mode == CALL_QUICK ? SRV_REDIS_SLOW : SRV_REDIS_DOWN;
    if (mode != CALL_PROBE && r->down) {
        *why = SRV_REDIS_DOWN;
        snprintf(err, err_len, "Redis is down (%s)", r->last_error);
        goto skip;
    }
    if (mode == CALL_QUICK && r->slow) {
        snprintf(err, err_len, "Redis is slower than the budget of %d ms (%s)", r->p.budget_ms, r->last_error);
        goto skip;
    }
    struct timespec until = mt_abstime_after_ms(bound);
    for (;;) {
        for (int i = 0; i < r->p.connections && !s; i++)
            if (!r->slots[i].busy)
                s = &r->slots[i];
        if (s || pthread_cond_timedwait(&r->freed, &r->mu, &until) != 0)
            break;
    }
    if (!s) {
        snprintf(err, err_len, "every Redis connection busy for %d ms", bound);
        goto skip;
    }
    s->busy = 1;
    pthread_mutex_unlock(&r->mu);
    return s;
skip:
    pthread_mutex_unlock(&r->mu);
    atomic_fetch_add(&r->skipped, 1);
    return NULL;
}

/* How a call on a slot ended. */
typedef enum { ENDED_OK, ENDED_DROPPED, ENDED_LATE } ended;

/* Gives s back: answered, dropped (no answer: Redis down) or late (a quick
 * call past the budget: its connection goes, Redis is slow). */
static void give(srv_redis *r, slot *s, ended how, const char *why, double latency)
{
    pthread_mutex_lock(&r->mu);
    if (how == ENDED_OK) {
        mark_up(r);
        r->lat_sum += latency;
        r->lat_max = latency > r->lat_max ? latency : r->lat_max;
    } else if (how == ENDED_LATE) {
        redisFree(s->c);            /* its answer would come on it later: the connection is out of step */
        s->c = NULL;
        mark_slow(r, why);
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
    s->busy = 0;
    pthread_cond_signal(&r->freed);
    pthread_mutex_unlock(&r->mu);
    if (how == ENDED_OK)
        atomic_fetch_add(&r->lat_count, 1);
}

/* A connection's failure was a timeout (connecting, or waiting for a reply:
 * hiredis reports a read past its socket timeout as EAGAIN's text). */
static int timed_out(const redisContext *c)
{
    return c && c->err == REDIS_ERR_IO &&
           (strstr(c->errstr, "temporarily unavailable") || strstr(c->errstr, "timed out"));
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

static struct timeval tv_of(int ms) { return (struct timeval){ ms / 1000, (ms % 1000) * 1000 }; }

/* Connects s (connect and reply timeout ms, AUTH, SELECT): 0, or -1 with err
 * (*late: it was a timeout). */
static int connect_slot(srv_redis *r, slot *s, int ms, char *err, size_t err_len, int *late)
{
    struct timeval tv = tv_of(ms);
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
    srv_redis_reader_bound(c->reader);
    const char *auth[3] = { "AUTH", r->url.user[0] ? r->url.user : r->url.password, r->url.password };
    if (r->url.password[0] && must_ok(c, r->url.user[0] ? 3 : 2, auth, err, err_len))
        goto fail;
    char db[16];
    snprintf(db, sizeof db, "%d", r->url.db);
    const char *sel[2] = { "SELECT", db };
    if (r->url.db && must_ok(c, 2, sel, err, err_len))
        goto fail;
    s->c = c;
    s->tmo_ms = ms;
    atomic_fetch_add(&r->connects, 1);
    return 0;
fail:
    *late = timed_out(c);
    if (c)
        redisFree(c);
    return -1;
}

/* One command on s's connection within ms: the reply read as want.  *how:
 * answered, dropped (no answer, or one hiredis could not read) or late (no
 * answer within ms). */
static srv_redis_rc send_on(srv_redis *r, slot *s, int ms, int argc, const char *const *argv, const size_t *argvlen,
                            srv_redis_want want, srv_redis_value *v, char *err, size_t err_len, ended *how)
{
    atomic_fetch_add(&r->calls, 1);
    if (s->tmo_ms != ms && redisSetTimeout(s->c, tv_of(ms)) == REDIS_OK)
        s->tmo_ms = ms;
    redisReply *rep = redisCommandArgv(s->c, argc, (const char **)argv, argvlen);
    if (!rep) {
        if (timed_out(s->c))
            snprintf(err, err_len, "no answer within %d ms", ms);
        else
            snprintf(err, err_len, "%s", s->c->errstr[0] ? s->c->errstr : "no reply");
        *how = timed_out(s->c) ? ENDED_LATE : ENDED_DROPPED;
        memset(v, 0, sizeof *v);
        return SRV_REDIS_DOWN;
    }
    srv_redis_rc rc = srv_redis_reply_read(rep, want, v, err, err_len);
    freeReplyObject(rep);
    return rc;
}

/* The commands of one call on one connection: argv, then (NOSCRIPT) alt.  A
 * quick call that passes the budget is late (SRV_REDIS_SLOW: Redis is
 * marked slow); any other call without an answer marks Redis down. */
static srv_redis_rc call(srv_redis *r, call_mode mode, int argc, const char *const *argv, const size_t *argvlen,
                         const char *const *alt, srv_redis_want want, srv_redis_value *v, char *err, size_t err_len)
{
    memset(v, 0, sizeof *v);
    srv_redis_rc skipped = SRV_REDIS_DOWN;
    slot *s = take(r, mode, &skipped, err, err_len);
    if (!s)
        return skipped;
    int ms = mode == CALL_QUICK ? r->p.budget_ms : r->p.timeout_ms, late = 0;
    double t0 = mt_now_s();
    ended how = ENDED_OK;
    if (!s->c && connect_slot(r, s, ms, err, err_len, &late)) {
        how = late && mode == CALL_QUICK ? ENDED_LATE : ENDED_DROPPED;
        atomic_fetch_add(how == ENDED_LATE ? &r->late : &r->errors, 1);
        give(r, s, how, err, 0);
        return how == ENDED_LATE ? SRV_REDIS_SLOW : SRV_REDIS_DOWN;
    }
    srv_redis_rc rc = send_on(r, s, ms, argc, argv, argvlen, want, v, err, err_len, &how);
    if (rc == SRV_REDIS_NOSCRIPT && alt)
        rc = send_on(r, s, ms, argc, alt, argvlen, want, v, err, err_len, &how);
    if (how == ENDED_LATE && mode != CALL_QUICK)
        how = ENDED_DROPPED;        /* the whole timeout passed: down */
    if (how != ENDED_OK)
        atomic_fetch_add(how == ENDED_LATE ? &r->late : &r->errors, 1);
    give(r, s, how, err, mt_now_s() - t0);
    return how == ENDED_LATE ? SRV_REDIS_SLOW : rc;
}

srv_redis_rc srv_redis_cmd(srv_redis *r, srv_redis_want want, srv_redis_value *v, int argc, const char *const *argv,
                           const size_t *argvlen, char *err, size_t err_len)
{
    return call(r, CALL_FULL, argc, argv, argvlen, NULL, want, v, err, err_len);
}

srv_redis_rc srv_redis_cmd_quick(srv_redis *r, srv_redis_want want, srv_redis_value *v, int argc,
                                 const char *const *argv, const size_t *argvlen, char *err, size_t err_len)
{
    return call(r, CALL_QUICK, argc, argv, argvlen, NULL, want, v, err, err_len);
}

void srv_redis_script_init(srv_redis_script *s)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(s->source, strlen(s->source), md, &n, EVP_sha1(), NULL);
    for (unsigned int i = 0; i < n && i < 20; i++)
        snprintf(s->sha1 + 2 * i, 3, "%02x", md[i]);
}

static srv_redis_rc eval_mode(srv_redis *r, call_mode mode, const srv_redis_script *s, int nkeys, int argc,
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
        return call(r, mode, argc + 3, sha, NULL, eval, want, v, err, err_len);
    /* lengths given: EVALSHA's first (EVAL, sent on NOSCRIPT, has its own) */
    lens[0] = 7;
    lens[2] = strlen(nk);
    srv_redis_rc rc = call(r, mode, argc + 3, sha, lens, NULL, want, v, err, err_len);
    if (rc != SRV_REDIS_NOSCRIPT)
        return rc;
    srv_redis_value_clear(v);
    lens[0] = 4;
    lens[1] = strlen(s->source);
    return call(r, mode, argc + 3, eval, lens, NULL, want, v, err, err_len);
}

srv_redis_rc srv_redis_eval(srv_redis *r, const srv_redis_script *s, int nkeys, int argc, const char *const *argv,
                            srv_redis_want want, srv_redis_value *v, char *err, size_t err_len)
{
    return eval_mode(r, CALL_FULL, s, nkeys, argc, argv, NULL, want, v, err, err_len);
}

srv_redis_rc srv_redis_eval_len(srv_redis *r, const srv_redis_script *s, int nkeys, int argc,
                                const char *const *argv, const size_t *argvlen, srv_redis_want want,
                                srv_redis_value *v, char *err, size_t err_len)
{
    return eval_mode(r, CALL_FULL, s, nkeys, argc, argv, argvlen, want, v, err, err_len);
}

srv_redis_rc srv_redis_eval_quick(srv_redis *r, const srv_redis_script *s, int nkeys, int argc,
                                  const char *const *argv, srv_redis_want want, srv_redis_value *v, char *err,
                                  size_t err_len)
{
    return eval_mode(r, CALL_QUICK, s, nkeys, argc, argv, NULL, want, v, err, err_len);
}

/* ---- the prober -------------------------------------------------------------------- */

/* Under mu: one PING, unlocked meanwhile; a quick enough answer ends "slow". */
static void probe(srv_redis *r)
{
    pthread_mutex_unlock(&r->mu);
    const char *ping[1] = { "PING" };
    srv_redis_value v;
    char err[200];
    double t0 = mt_now_s();
    srv_redis_rc rc = call(r, CALL_PROBE, 1, ping, NULL, NULL, SRV_RW_STR, &v, err, sizeof err);
    double ms = (mt_now_s() - t0) * 1e3;
    srv_redis_value_clear(&v);
    atomic_fetch_add(&r->probes, 1);
    pthread_mutex_lock(&r->mu);
    if (rc == SRV_REDIS_DOWN || !r->slow)
        return;                 /* give() marked it down again (a later retry_at), or it was only down */
    if (ms <= r->p.budget_ms) {
        fprintf(stderr, "mtserve: redis %s: within the budget again (a PING in %.1f ms)\n", r->printed, ms);
        r->slow = 0;
        r->slow_fails = 0;
    } else {
        char why[80];
        snprintf(why, sizeof why, "a PING answered in %.0f ms", ms);
        mark_slow(r, why);
    }
}

/* While Redis is down or slow, one PING after each backoff (0.1 s doubling to
 * 5 s), on this thread: the calls of requests skip Redis meanwhile, and none
 * of them ever waits for a probe. */
static void *probe_main(void *arg)
{
    srv_redis *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        double due = r->down ? r->retry_at : r->slow ? r->slow_retry_at : -1, now = mt_now_s();
        if (due < 0) {
            pthread_cond_wait(&r->wake, &r->mu);
        } else if (now < due) {
            struct timespec t = mt_abstime_after_ms((long)((due - now) * 1e3) + 1);
            pthread_cond_timedwait(&r->wake, &r->mu, &t);
        } else {
            probe(r);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- what it saw -------------------------------------------------------------------- */

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
    st->late = atomic_load(&r->late);
    st->probes = atomic_load(&r->probes);
    st->fallbacks_limit = atomic_load(&r->fb_limit);
    st->fallbacks_quota = atomic_load(&r->fb_quota);
    st->budget_ms = r->p.budget_ms;
    pthread_mutex_lock(&r->mu);
    st->up = r->up;
    st->slow = r->slow;
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
    char *out = malloc(3072);
    if (!out)
        return NULL;
    int n = snprintf(out, 3072,
        "# HELP mtserve_redis_up 1 when the last call to Redis (--redis) was answered\n"
        "# TYPE mtserve_redis_up gauge\nmtserve_redis_up %d\n"
        "# HELP mtserve_redis_slow 1 while Redis answers slower than --redis-budget: rate limits and cache lookups local\n"
        "# TYPE mtserve_redis_slow gauge\nmtserve_redis_slow %d\n"
        "# HELP mtserve_redis_calls_total Commands sent to Redis\n"
        "# TYPE mtserve_redis_calls_total counter\nmtserve_redis_calls_total %ld\n"
        "# HELP mtserve_redis_errors_total Calls without an answer: refused, reset, timed out\n"
        "# TYPE mtserve_redis_errors_total counter\nmtserve_redis_errors_total %ld\n"
        "# HELP mtserve_redis_over_budget_total Quick calls (rate limits, cache lookups) not answered within --redis-budget\n"
        "# TYPE mtserve_redis_over_budget_total counter\nmtserve_redis_over_budget_total %ld\n"
        "# HELP mtserve_redis_skipped_total Calls not sent: Redis down (or slow, for quick calls)\n"
        "# TYPE mtserve_redis_skipped_total counter\nmtserve_redis_skipped_total %ld\n"
        "# HELP mtserve_redis_probes_total PINGs of the background prober while Redis was down or slow\n"
        "# TYPE mtserve_redis_probes_total counter\nmtserve_redis_probes_total %ld\n"
        "# HELP mtserve_redis_connects_total Connections made to Redis\n"
        "# TYPE mtserve_redis_connects_total counter\nmtserve_redis_connects_total %ld\n"
        "# HELP mtserve_redis_fallbacks_total Verdicts taken locally because Redis was down or slow\n"
        "# TYPE mtserve_redis_fallbacks_total counter\n"
        "mtserve_redis_fallbacks_total{kind=\"limit\"} %ld\nmtserve_redis_fallbacks_total{kind=\"quota\"} %ld\n"
        "# HELP mtserve_redis_latency_seconds Time of the calls Redis answered\n"
        "# TYPE mtserve_redis_latency_seconds summary\n"
        "mtserve_redis_latency_seconds_sum %.6f\nmtserve_redis_latency_seconds_count %ld\n"
        "# HELP mtserve_redis_latency_max_seconds The longest answered call\n"
        "# TYPE mtserve_redis_latency_max_seconds gauge\nmtserve_redis_latency_max_seconds %.6f\n"
        "# HELP mtserve_redis_down_seconds How long Redis has been down (0: up)\n"
        "# TYPE mtserve_redis_down_seconds gauge\nmtserve_redis_down_seconds %.3f\n",
        st.up, st.slow, st.calls, st.errors, st.late, st.skipped, st.probes, st.connects, st.fallbacks_limit,
        st.fallbacks_quota, st.latency_sum_s, st.latency_count, st.latency_max_s, st.down_for_s);
    *len = n > 0 && n < 3072 ? (size_t)n : 0;
    return out;
}
