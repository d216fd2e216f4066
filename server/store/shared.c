/* shared: rate limits and key quotas counted in Redis for every replica, with
 * the local ones (common/ratelimit.h, common/usage.h) while it is down (redis.h).
 *
 * Each verdict is one script run by Redis (EVALSHA): a read-modify-write
 * there is atomic, so no two replicas can both take the last token.  The rate
 * limit's is a quick call (a Redis slower than --redis-budget: the local
 * bucket decides); a quota's waits up to the timeout (what a key is billed
 * must not be counted twice, and an answer given up on might still count).
 */
#include "redis.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

/* The token bucket of ratelimit.c in a hash {r, c, t}: tokens of requests and
 * characters and when they were refilled, by Redis's clock (replicas' clocks
 * never meet).  ARGV: requests and characters per minute (0: no limit), this
 * request's characters.  Replies {verdict, retry_s}: 0 taken, 1 out of
 * requests, 2 out of characters (nothing taken).  The hash expires once it
 * would have refilled completely: a forgotten bucket is a full one. */
static srv_redis_script bucket_script = { .source =
    "local rq, cq, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) + tonumber(t[2]) / 1000000\n"
    "local b = redis.call('HMGET', KEYS[1], 'r', 'c', 't')\n"
    "local r, c, last = tonumber(b[1]) or rq, tonumber(b[2]) or cq, tonumber(b[3]) or now\n"
    "local dt = now > last and now - last or 0\n"
    "if rq > 0 then r = math.min(rq, r + rq * dt / 60) else r = 0 end\n"
    "if cq > 0 then c = math.min(cq, c + cq * dt / 60) else c = 0 end\n"
    "local v, wait = 0, 0\n"
    "if rq > 0 and r < 1 then v = 1; wait = math.ceil((1 - r) * 60 / rq)\n"
    "elseif cq > 0 and c < n then v = 2; wait = math.ceil((n - c) * 60 / cq)\n"
    "else if rq > 0 then r = r - 1 end; if cq > 0 then c = c - n end end\n"
    "redis.call('HSET', KEYS[1], 'r', string.format('%.6f', r), 'c', string.format('%.6f', c),\n"
    "           't', string.format('%.6f', math.max(now, last)))\n"
    "redis.call('EXPIRE', KEYS[1], 61)\n"
    "if wait < 1 and v > 0 then wait = 1 end\n"
    "if wait > 60 then wait = 60 end\n"
    "return {v, wait}\n" };

/* A key's characters in all against its quota.  ARGV: the quota (-1: none),
 * this request's characters (negative: given back; 0: only read), and what
 * this replica counted while Redis was down (added first, whatever the
 * quota).  Replies {1 counted or 0 over the quota, the count now}; writes
 * only a change (a read creates no key). */
static srv_redis_script quota_script = { .source =
    "local q, n, owed = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "local used = tonumber(redis.call('GET', KEYS[1]) or '0') + owed\n"
    "local ok = 1\n"
    "if n > 0 and q >= 0 and n > q - used then ok = 0 else used = used + n end\n"
    "if used < 0 then used = 0 end\n"
    "if (ok == 1 and n ~= 0) or owed ~= 0 then redis.call('SET', KEYS[1], string.format('%.0f', used)) end\n"
    "return {ok, used}\n" };

static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;
static void scripts_init(void)
{
    srv_redis_script_init(&bucket_script);
    srv_redis_script_init(&quota_script);
}

struct srv_shared {
    srv_redis     *r;
    srv_ratelimit *local;
    srv_usage     *usage;
    pthread_mutex_t mu;
    pthread_cond_t  wake;       /* the flusher's: stop */
    pthread_t       flusher;
    int             flusher_started, stop;
    long          *known;       /* [slot] the last count Redis gave */
    long          *owed;        /* [slot] counted here (while Redis was down, or without a quota), not yet
                                   added there */
    int            n;
};

/* The counts of usage's state file (--usage-file) into Redis where it has
 * none (SET NX): moving a server to Redis keeps what its keys have used; of
 * several replicas with files, the first to start seeds each key. */
static void seed_counts(srv_shared *sh)
{
    int seeded = 0;
    for (int s = 0; s < sh->n; s++) {
        int key = s == sh->n - 1 ? -1 : s;
        long n = srv_usage_count(sh->usage, key);
        if (n <= 0)
            continue;
        char name[20], rkey[128], count[24], err[200];
        srv_usage_slot_name(sh->usage, key, name);
        snprintf(rkey, sizeof rkey, "%susage:%s", srv_redis_prefix(sh->r), name);
        snprintf(count, sizeof count, "%ld", n);
        const char *argv[4] = { "SET", rkey, count, "NX" };
        srv_redis_value v;
        srv_redis_rc rc = srv_redis_cmd(sh->r, SRV_RW_STR, &v, 4, argv, NULL, err, sizeof err);
        seeded += rc == SRV_REDIS_OK && !v.nil;        /* nil: Redis had a count, kept */
        srv_redis_value_clear(&v);
        if (rc == SRV_REDIS_DOWN)
            break;
    }
    if (seeded)
        fprintf(stderr, "mtserve: redis: the counts of %d keys seeded from the usage file\n", seeded);
}

static int quota_call(srv_shared *sh, int key, long chars);

/* The owed counts into Redis (each slot's with one quota script), while it
 * answers: 0, or -1 when it did not (the rest stay owed). */
static int flush_owed(srv_shared *sh)
{
    for (int s = 0; s < sh->n; s++) {
        pthread_mutex_lock(&sh->mu);
        long owed = sh->owed[s];
        pthread_mutex_unlock(&sh->mu);
        if (owed && quota_call(sh, s == sh->n - 1 ? -1 : s, 0) < 0)
            return -1;
    }
    return 0;
}

/* Once a second, what was counted here goes to Redis: the keys without a
 * quota (no verdict to wait for, so their requests never call Redis for it),
 * and what every key used while Redis was down.  On this thread: a request
 * never waits for it. */
static void *flush_main(void *arg)
{
    srv_shared *sh = arg;
    pthread_mutex_lock(&sh->mu);
    while (!sh->stop) {
        struct timespec t = mt_abstime_after_ms(1000);
        pthread_cond_timedwait(&sh->wake, &sh->mu, &t);
        if (sh->stop)
            break;
        pthread_mutex_unlock(&sh->mu);
        flush_owed(sh);
        pthread_mutex_lock(&sh->mu);
    }
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

static void shared_release(srv_shared *sh)
{
    pthread_mutex_destroy(&sh->mu);
    pthread_cond_destroy(&sh->wake);
    free(sh->known);
    free(sh->owed);
    free(sh);
}

srv_shared *srv_shared_new(srv_redis *r, srv_ratelimit *local, srv_usage *usage)
{
    pthread_once(&scripts_once, scripts_init);
    srv_shared *sh = calloc(1, sizeof *sh);
    if (!sh)
        return NULL;
    sh->r = r, sh->local = local, sh->usage = usage;
    sh->n = srv_usage_slots(usage);
    sh->known = calloc((size_t)sh->n, sizeof *sh->known);
    sh->owed = calloc((size_t)sh->n, sizeof *sh->owed);
    pthread_mutex_init(&sh->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sh->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (!sh->known || !sh->owed) {
        shared_release(sh);
        return NULL;
    }
    if (r)
        seed_counts(sh);
    if (r && !(sh->flusher_started = pthread_create(&sh->flusher, NULL, flush_main, sh) == 0)) {
        shared_release(sh);
        return NULL;
    }
    return sh;
}

void srv_shared_free(srv_shared *sh)
{
    if (!sh)
        return;
    if (sh->flusher_started) {
        pthread_mutex_lock(&sh->mu);
        sh->stop = 1;
        pthread_cond_broadcast(&sh->wake);
        pthread_mutex_unlock(&sh->mu);
        pthread_join(sh->flusher, NULL);
    }
    if (sh->r)
        flush_owed(sh);     /* what is owed, while Redis answers (bounded) */
    shared_release(sh);
}

srv_limit_verdict srv_shared_limit_take(srv_shared *sh, const char *client, const srv_limit *lim, long chars,
                                        double now, int *retry_s)
{
    *retry_s = 0;
    if (lim->req_per_min <= 0 && lim->chars_per_min <= 0)
        return SRV_LIMIT_OK;
    if (lim->chars_per_min > 0 && chars > lim->chars_per_min)
        return SRV_LIMIT_NEVER;
    if (sh->r) {
        char key[160], a[3][24], err[200];
        snprintf(key, sizeof key, "%srl:%s", srv_redis_prefix(sh->r), client);
        snprintf(a[0], sizeof a[0], "%ld", lim->req_per_min > 0 ? lim->req_per_min : 0);
        snprintf(a[1], sizeof a[1], "%ld", lim->chars_per_min > 0 ? lim->chars_per_min : 0);
        snprintf(a[2], sizeof a[2], "%ld", chars);
        const char *argv[4] = { key, a[0], a[1], a[2] };
        srv_redis_value v;      /* quick: a Redis slower than the budget is decided here */
        srv_redis_rc rc = srv_redis_eval_quick(sh->r, &bucket_script, 1, 4, argv, SRV_RW_INTS, &v, err, sizeof err);
        if (rc == SRV_REDIS_OK && v.n == 2 && v.ints[0] >= 0 && v.ints[0] <= 2) {
            *retry_s = (int)v.ints[1];
            return v.ints[0] == 0 ? SRV_LIMIT_OK : v.ints[0] == 1 ? SRV_LIMIT_REQUESTS : SRV_LIMIT_CHARS;
        }
        srv_redis_count_fallback(sh->r, 0);
    }
    if (!sh->local)
        return SRV_LIMIT_OK;
    return srv_ratelimit_take(sh->local, client, lim, chars, now, retry_s);
}

static int slot_of(const srv_shared *sh, int key) { return key >= 0 && key < sh->n - 1 ? key : sh->n - 1; }

/* The quota script for key with chars (negative: given back), adding what is
 * owed: 0 counted, 1 over the quota, -1 Redis did not answer (owed kept). */
static int quota_call(srv_shared *sh, int key, long chars)
{
    int s = slot_of(sh, key);
    char name[20], rkey[128], a[3][24], err[200];
    srv_usage_slot_name(sh->usage, key, name);
    snprintf(rkey, sizeof rkey, "%susage:%s", srv_redis_prefix(sh->r), name);
    pthread_mutex_lock(&sh->mu);
    long owed = sh->owed[s];    /* taken out: two calls never both add it */
    sh->owed[s] = 0;
    pthread_mutex_unlock(&sh->mu);
    snprintf(a[0], sizeof a[0], "%ld", srv_usage_quota(sh->usage, key));
    snprintf(a[1], sizeof a[1], "%ld", chars);
    snprintf(a[2], sizeof a[2], "%ld", owed);
    const char *argv[4] = { rkey, a[0], a[1], a[2] };
    srv_redis_value v;
    srv_redis_rc rc = srv_redis_eval(sh->r, &quota_script, 1, 4, argv, SRV_RW_INTS, &v, err, sizeof err);
    int ok = rc == SRV_REDIS_OK && v.n == 2;
    pthread_mutex_lock(&sh->mu);
    if (ok)
        sh->known[s] = (long)v.ints[1];
    else
        sh->owed[s] += owed;
    pthread_mutex_unlock(&sh->mu);
    return ok ? (v.ints[0] == 1 ? 0 : 1) : -1;
}

/* Redis down: counted against the last count it gave plus what is owed. */
static int quota_local(srv_shared *sh, int key, long chars)
{
    int s = slot_of(sh, key), rc = 0;
    long quota = srv_usage_quota(sh->usage, key);
    srv_redis_count_fallback(sh->r, 1);
    pthread_mutex_lock(&sh->mu);
    if (chars > 0 && quota >= 0 && chars > quota - (sh->known[s] + sh->owed[s]))
        rc = -1;
    else
        sh->owed[s] += chars;
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

/* A slot without a quota has no verdict to wait for: its count goes to Redis
 * from the flusher thread within a second (a request's one round trip stays
 * the rate limit's), and when the server stops. */
static void count_unlimited(srv_shared *sh, int key, long chars)
{
    int s = slot_of(sh, key);
    pthread_mutex_lock(&sh->mu);
    sh->owed[s] += chars;
    pthread_mutex_unlock(&sh->mu);
}

int srv_shared_usage_take(srv_shared *sh, int key, long chars)
{
    if (!sh->r)
        return srv_usage_take(sh->usage, key, chars);
    if (srv_usage_quota(sh->usage, key) < 0) {
        count_unlimited(sh, key, chars);
        return 0;
    }
    int rc = quota_call(sh, key, chars);
    return rc < 0 ? quota_local(sh, key, chars) : rc ? -1 : 0;
}

void srv_shared_usage_give_back(srv_shared *sh, int key, long chars)
{
    if (!sh->r) {
        srv_usage_give_back(sh->usage, key, chars);
        return;
    }
    if (srv_usage_quota(sh->usage, key) < 0)
        count_unlimited(sh, key, -chars);
    else if (quota_call(sh, key, -chars) < 0)
        quota_local(sh, key, -chars);
}

long srv_shared_usage_known(srv_shared *sh, int key)
{
    if (!sh->r)
        return srv_usage_count(sh->usage, key);
    int s = slot_of(sh, key);
    pthread_mutex_lock(&sh->mu);
    long n = sh->known[s] + sh->owed[s];
    pthread_mutex_unlock(&sh->mu);
    return n > 0 ? n : 0;
}

long srv_shared_usage_count(srv_shared *sh, int key)
{
    if (sh->r)
        quota_call(sh, key, 0);     /* refreshes known (and adds what is owed) */
    return srv_shared_usage_known(sh, key);
}
