/* rcache: the translation cache's second level, in Redis for every replica (redis.h). */
#include "redis.h"

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

struct srv_rcache {
    srv_redis *r;
    size_t     max_bytes, max_entry;
    char       list[96], count[96];
    _Atomic long hits, misses, puts, skipped, dropped;
};

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
    snprintf(c->list, sizeof c->list, "%stc:order", srv_redis_prefix(r));
    snprintf(c->count, sizeof c->count, "%stc:bytes", srv_redis_prefix(r));
    return c;
}

void srv_rcache_free(srv_rcache *c) { free(c); }

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
    srv_redis_value v;
    int hit = srv_redis_cmd(c->r, SRV_RW_STR, &v, 2, argv, NULL, err, sizeof err) == SRV_REDIS_OK && !v.nil &&
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
    if (8 + klen + vlen > c->max_entry) {
        atomic_fetch_add(&c->skipped, 1);
        return;
    }
    char ek[160], budget[24], err[200];
    char *stored = malloc(8 + klen + vlen);
    if (!stored)
        return;
    for (int i = 0; i < 8; i++)             /* the key's length, big-endian */
        stored[i] = (char)((uint64_t)klen >> (56 - 8 * i));
    memcpy(stored + 8, key, klen);
    memcpy(stored + 8 + klen, val, vlen);
    entry_key(c, key, klen, ek);
    snprintf(budget, sizeof budget, "%zu", c->max_bytes);
    const char *argv[5] = { ek, c->list, c->count, stored, budget };
    const size_t lens[5] = { strlen(ek), strlen(c->list), strlen(c->count), 8 + klen + vlen, strlen(budget) };
    srv_redis_value v;
    if (srv_redis_eval_len(c->r, &put_script, 3, 5, argv, lens, SRV_RW_INT, &v, err, sizeof err) == SRV_REDIS_OK &&
        v.i >= 0) {
        atomic_fetch_add(&c->puts, 1);
        atomic_fetch_add(&c->dropped, (long)v.i);
    }
    srv_redis_value_clear(&v);
    free(stored);
}

char *srv_rcache_metrics(srv_rcache *c, size_t *len)
{
    if (!c)
        return NULL;
    char *out = malloc(1024);
    if (!out)
        return NULL;
    int n = snprintf(out, 1024,
        "# HELP mtserve_redis_cache_hits_total Sentences found in the shared cache (--redis-cache-mb) after a local miss\n"
        "# TYPE mtserve_redis_cache_hits_total counter\nmtserve_redis_cache_hits_total %ld\n"
        "# HELP mtserve_redis_cache_misses_total Shared-cache lookups without a hit (Redis down included)\n"
        "# TYPE mtserve_redis_cache_misses_total counter\nmtserve_redis_cache_misses_total %ld\n"
        "# HELP mtserve_redis_cache_puts_total Translations this replica wrote to the shared cache\n"
        "# TYPE mtserve_redis_cache_puts_total counter\nmtserve_redis_cache_puts_total %ld\n"
        "# HELP mtserve_redis_cache_skipped_total Translations over the entry bound, not written\n"
        "# TYPE mtserve_redis_cache_skipped_total counter\nmtserve_redis_cache_skipped_total %ld\n"
        "# HELP mtserve_redis_cache_dropped_total Oldest entries dropped by this replica's writes for room\n"
        "# TYPE mtserve_redis_cache_dropped_total counter\nmtserve_redis_cache_dropped_total %ld\n",
        atomic_load(&c->hits), atomic_load(&c->misses), atomic_load(&c->puts), atomic_load(&c->skipped),
        atomic_load(&c->dropped));
    *len = n > 0 && n < 1024 ? (size_t)n : 0;
    return out;
}
