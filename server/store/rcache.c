/* rcache: the translation cache's second level, in Redis for every replica (redis.h). */
#include "redis.h"
#include "util/thread_prio.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* KEYS the entry, the list of entries by age ("SIZE KEY" each), the byte
 * count; ARGV the value, the budget.  Writes the entry unless another
 * replica has (0), then drops the oldest entries while the count is over the
 * budget (an entry already gone, by eviction or FLUSH, counts its size off
 * all the same).  Replies how many were dropped, or -1 when it was there. */
static srv_redis_script put_script = { .source =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end\n"
    "local n = #ARGV[1] + #KEYS[1]\n"
    "redis.call('SET', KEYS[1], ARGV[1])\n"
    "redis.call('LPUSH', KEYS[2], n .. ' ' .. KEYS[1])\n"
    "local total, dropped = redis.call('INCRBY', KEYS[3], n), 0\n"
    "while total > tonumber(ARGV[2]) do\n"
    "  local old = redis.call('RPOP', KEYS[2])\n"
    "  if not old then redis.call('SET', KEYS[3], 0); break end\n"
    "  local sp = string.find(old, ' ')\n"
    "  redis.call('DEL', string.sub(old, sp + 1))\n"
    "  total = redis.call('DECRBY', KEYS[3], tonumber(string.sub(old, 1, sp - 1)))\n"
    "  dropped = dropped + 1\n"
    "end\n"
    "return dropped\n" };

static pthread_once_t script_once = PTHREAD_ONCE_INIT;
static void script_init(void) { srv_redis_script_init(&put_script); }

/* A write waiting for the writer thread: the entry's Redis key and value. */
typedef struct pending pending;
struct pending {
    pending *next;
    char     ek[160];
    size_t   len;
    char     stored[];          /* the key's length (8 bytes, big-endian), the key, the value */
};

struct srv_rcache {
    srv_redis *r;
    size_t     max_bytes, max_entry, max_queued;
    char       list[96], count[96];
    pthread_mutex_t mu;
    pthread_cond_t  cv;         /* a write queued, or stop (the writer); the queue drained (flush) */
    pthread_t       writer;
    pending        *head, *tail;
    size_t          queued;     /* bytes of the writes waiting */
    int             writing, stop;
    _Atomic long hits, misses, puts, skipped, dropped;
};

/* The queued writes, one script each, on this thread: a decoded sentence is
 * answered without waiting for Redis to take it. */
static void *writer_main(void *arg)
{
    mt_thread_rt(0);    /* started from a real-time HTTP thread (--http-sched rr): back in SCHED_OTHER */
    srv_rcache *c = arg;
    char budget[24], err[200];
    snprintf(budget, sizeof budget, "%zu", c->max_bytes);
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->head && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (!c->head)
            break;              /* stopped, and nothing left */
        pending *w = c->head;
        c->head = w->next;
        c->tail = c->head ? c->tail : NULL;
        c->queued -= w->len;
        c->writing = 1;
        pthread_mutex_unlock(&c->mu);
        const char *argv[5] = { w->ek, c->list, c->count, w->stored, budget };
        const size_t lens[5] = { strlen(w->ek), strlen(c->list), strlen(c->count), w->len, strlen(budget) };
        srv_redis_value v;
        if (srv_redis_eval_len(c->r, &put_script, 3, 5, argv, lens, SRV_RW_INT, &v, err, sizeof err) ==
                SRV_REDIS_OK && v.i >= 0) {
            atomic_fetch_add(&c->puts, 1);
            atomic_fetch_add(&c->dropped, (long)v.i);
        }
        srv_redis_value_clear(&v);
        free(w);
        pthread_mutex_lock(&c->mu);
        c->writing = 0;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

srv_rcache *srv_rcache_new(srv_redis *r, size_t max_bytes)
{
    if (!r || !max_bytes)
        return NULL;
    pthread_once(&script_once, script_init);
    srv_rcache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->r = r;
    c->max_bytes = max_bytes;
    c->max_entry = max_bytes / 256;
    c->max_queued = max_bytes < (4u << 20) ? max_bytes : (4u << 20);
    snprintf(c->list, sizeof c->list, "%stc:order", srv_redis_prefix(r));
    snprintf(c->count, sizeof c->count, "%stc:bytes", srv_redis_prefix(r));
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (pthread_create(&c->writer, NULL, writer_main, c) != 0) {
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        free(c);
        return NULL;
    }
    return c;
}

void srv_rcache_flush(srv_rcache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    while (c->head || c->writing)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

void srv_rcache_free(srv_rcache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);     /* the writes queued go first (each bounded by the timeout) */
    c->stop = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->writer, NULL);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* PREFIX tc:SHA256(key) in hex. */
static void entry_key(const srv_rcache *c, const void *key, size_t klen, char out[160])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(key, klen, md, &n, EVP_sha256(), NULL);
    int k = snprintf(out, 160, "%stc:", srv_redis_prefix(c->r));
    for (unsigned int i = 0; i < n && k + 3 < 160; i++, k += 2)
        snprintf(out + k, 3, "%02x", md[i]);
}

int srv_rcache_get(srv_rcache *c, const void *key, size_t klen, void **val, size_t *vlen)
{
    *val = NULL;
    *vlen = 0;
    if (!c)
        return 0;
    char ek[160], err[200];
    entry_key(c, key, klen, ek);
    const char *argv[2] = { "GET", ek };
    srv_redis_value v;          /* quick: a Redis slower than the budget is a miss */
    int hit = srv_redis_cmd_quick(c->r, SRV_RW_STR, &v, 2, argv, NULL, err, sizeof err) == SRV_REDIS_OK && !v.nil &&
              v.len >= 8 + klen;
    uint64_t kl = 0;
    for (int i = 0; hit && i < 8; i++)
        kl = kl << 8 | (unsigned char)v.s[i];
    hit = hit && kl == klen && memcmp(v.s + 8, key, klen) == 0;    /* the key's own, not a hash's twin */
    if (hit && (*val = malloc(v.len - 8 - klen + 1))) {
        *vlen = v.len - 8 - klen;
        memcpy(*val, v.s + 8 + klen, *vlen);
    }
    srv_redis_value_clear(&v);
    atomic_fetch_add(*val ? &c->hits : &c->misses, 1);
    return *val != NULL;
}

void srv_rcache_put(srv_rcache *c, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (!c)
        return;
    size_t len = 8 + klen + vlen;
    pending *w = len <= c->max_entry ? malloc(sizeof *w + len) : NULL;
    if (!w) {
        atomic_fetch_add(&c->skipped, 1);
        return;
    }
    for (int i = 0; i < 8; i++)             /* the key's length, big-endian */
        w->stored[i] = (char)((uint64_t)klen >> (56 - 8 * i));
    memcpy(w->stored + 8, key, klen);
    memcpy(w->stored + 8 + klen, val, vlen);
    entry_key(c, key, klen, w->ek);
    w->len = len;
    w->next = NULL;
    pthread_mutex_lock(&c->mu);
    int full = c->queued + len > c->max_queued;     /* Redis slower than the writes come: dropped */
    if (!full) {
        *(c->tail ? &c->tail->next : &c->head) = w;
        c->tail = w;
        c->queued += len;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (full) {
        free(w);
        atomic_fetch_add(&c->skipped, 1);
    }
}

char *srv_rcache_metrics(srv_rcache *c, size_t *len)
{
    if (!c)
        return NULL;
    char *out = malloc(1536);
    if (!out)
        return NULL;
    int n = snprintf(out, 1536,
        "# HELP mtserve_redis_cache_hits_total Sentences found in the shared cache (--redis-cache-mb) after a local miss\n"
        "# TYPE mtserve_redis_cache_hits_total counter\nmtserve_redis_cache_hits_total %ld\n"
        "# HELP mtserve_redis_cache_misses_total Shared-cache lookups without a hit (Redis down or slow included)\n"
        "# TYPE mtserve_redis_cache_misses_total counter\nmtserve_redis_cache_misses_total %ld\n"
        "# HELP mtserve_redis_cache_puts_total Translations this replica wrote to the shared cache\n"
        "# TYPE mtserve_redis_cache_puts_total counter\nmtserve_redis_cache_puts_total %ld\n"
        "# HELP mtserve_redis_cache_skipped_total Translations not written: over the entry bound, or 4 MB of writes already waiting\n"
        "# TYPE mtserve_redis_cache_skipped_total counter\nmtserve_redis_cache_skipped_total %ld\n"
        "# HELP mtserve_redis_cache_dropped_total Oldest entries dropped by this replica's writes for room\n"
        "# TYPE mtserve_redis_cache_dropped_total counter\nmtserve_redis_cache_dropped_total %ld\n",
        atomic_load(&c->hits), atomic_load(&c->misses), atomic_load(&c->puts), atomic_load(&c->skipped),
        atomic_load(&c->dropped));
    *len = n > 0 && n < 1536 ? (size_t)n : 0;
    return out;
}
