/* ratelimit: token buckets per client (ratelimit.h). */
#include "ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N_SHARDS  16
#define KEY_BYTES 64    /* srv_request.client's size: longer keys are cut (never happens there) */

typedef struct {
    char   key[KEY_BYTES];      /* "" = free */
    double req, chars;          /* tokens held */
    double t;                   /* when they were last refilled */
} bucket;

typedef struct {
    pthread_mutex_t mu;
    bucket         *v;
    int             n;          /* slots */
} shard;

struct srv_ratelimit {
    shard s[N_SHARDS];
};

static uint64_t hash_of(const char *s)
{
    uint64_t h = 1469598103934665603ull;    /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

srv_ratelimit *srv_ratelimit_new(int max_clients)
{
    srv_ratelimit *rl = calloc(1, sizeof *rl);
    if (!rl)
        return NULL;
    int per = max_clients / N_SHARDS > 1 ? max_clients / N_SHARDS : 1;
    for (int i = 0; i < N_SHARDS; i++) {
        pthread_mutex_init(&rl->s[i].mu, NULL);
        rl->s[i].n = per;
        if (!(rl->s[i].v = calloc((size_t)per, sizeof(bucket)))) {
            srv_ratelimit_free(rl);
            return NULL;
        }
    }
    return rl;
}

void srv_ratelimit_free(srv_ratelimit *rl)
{
    if (!rl)
        return;
    for (int i = 0; i < N_SHARDS; i++) {
        pthread_mutex_destroy(&rl->s[i].mu);
        free(rl->s[i].v);
    }
    free(rl);
}

/* Tokens after refilling for dt seconds at cap per minute, at most cap. */
static double refill(double have, double cap, double dt)
{
    double v = have + cap * dt / 60.0;
    return v > cap ? cap : v;
}

/* 1 when b holds no debt at now: forgetting it would change no verdict. */
static int full(const bucket *b, const srv_limit *lim, double now)
{
    double dt = now - b->t;
    return dt >= 60.0 || ((lim->req_per_min == 0 || refill(b->req, (double)lim->req_per_min, dt) >= lim->req_per_min) &&
                          (lim->chars_per_min == 0 ||
                           refill(b->chars, (double)lim->chars_per_min, dt) >= lim->chars_per_min));
}

/* The client's bucket in sh (under its mutex): found, or a new full one in a
 * free, forgettable or least recently seen slot.  Linear in the shard's
 * slots: a shard holds max_clients / 16, a few hundred by default. */
static bucket *find(shard *sh, const char *key, const srv_limit *lim, double now)
{
    bucket *spare = NULL, *oldest = NULL;
    for (int i = 0; i < sh->n; i++) {
        bucket *b = &sh->v[i];
        if (!b->key[0]) {
            if (!spare)
                spare = b;
            continue;
        }
        if (strncmp(b->key, key, KEY_BYTES - 1) == 0)
            return b;
        if (!spare && full(b, lim, now))
            spare = b;
        if (!oldest || b->t < oldest->t)
            oldest = b;
    }
    bucket *b = spare ? spare : oldest;
    strncpy(b->key, key, KEY_BYTES - 1);
    b->key[KEY_BYTES - 1] = 0;
    b->req = (double)lim->req_per_min;
    b->chars = (double)lim->chars_per_min;
    b->t = now;
    return b;
}

/* Seconds until have reaches need at cap per minute, rounded up, >= 1. */
static int wait_s(double have, double need, double cap)
{
    double s = ceil((need - have) * 60.0 / cap);
    return s < 1 ? 1 : s > 60 ? 60 : (int)s;
}

srv_limit_verdict srv_ratelimit_take(srv_ratelimit *rl, const char *client, const srv_limit *lim, long chars,
                                     double now, int *retry_s)
{
    *retry_s = 0;
    if (lim->req_per_min <= 0 && lim->chars_per_min <= 0)
        return SRV_LIMIT_OK;
    if (lim->chars_per_min > 0 && chars > lim->chars_per_min)
        return SRV_LIMIT_NEVER;
    shard *sh = &rl->s[hash_of(client) % N_SHARDS];
    pthread_mutex_lock(&sh->mu);
    bucket *b = find(sh, client, lim, now);
    double dt = now > b->t ? now - b->t : 0;
    b->t = now > b->t ? now : b->t;
    /* a limit changed (a key's own): never hold more than the new cap */
    b->req = lim->req_per_min > 0 ? refill(b->req, (double)lim->req_per_min, dt) : 0;
    b->chars = lim->chars_per_min > 0 ? refill(b->chars, (double)lim->chars_per_min, dt) : 0;
    srv_limit_verdict v = SRV_LIMIT_OK;
    if (lim->req_per_min > 0 && b->req < 1.0) {
        v = SRV_LIMIT_REQUESTS;
        *retry_s = wait_s(b->req, 1.0, (double)lim->req_per_min);
    } else if (lim->chars_per_min > 0 && b->chars < (double)chars) {
        v = SRV_LIMIT_CHARS;
        *retry_s = wait_s(b->chars, (double)chars, (double)lim->chars_per_min);
    } else {
        if (lim->req_per_min > 0)
            b->req -= 1.0;
        if (lim->chars_per_min > 0)
            b->chars -= (double)chars;
    }
    pthread_mutex_unlock(&sh->mu);
    return v;
}
