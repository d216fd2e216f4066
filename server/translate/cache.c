/* cache: the sharded, byte-bounded LRU of opaque blobs (cache.h).
 *
 * Why sharded: every HTTP thread looks a sentence up before translating it
 * and stores it after, and even a hit writes (it moves the entry to the head
 * of the LRU list), so one lock over one list would make every request queue
 * on it.  The top bits of the key's hash pick a shard; a shard has its own
 * mutex, chained hash table (doubling while its bucket array fits the
 * budget), doubly-linked LRU list, counters and 1/nshards of the bytes, so
 * each shard keeps its own bound with only its own lock held and the sum
 * stays within max_bytes.  Entries are allocated and freed outside the lock;
 * only a hit's value is copied under it.
 */
#include "cache.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/hash.h"

#define MAX_SHARDS      16
#define MIN_SHARD_BYTES ((size_t)256 << 10)  /* fewer shards below this: an entry of a small cache still fits */
#define ENTRY_SHARE     8                    /* an entry may use 1/ENTRY_SHARE of its shard */
#define FIRST_BUCKETS   16
#define MALLOC_HEADER   8                    /* glibc: a chunk is its size word plus the request, */
#define MALLOC_ALIGN    16                   /* rounded up to 16 bytes */

typedef struct entry {
    struct entry *chain;            /* next in its bucket; in a free list, the next to free */
    struct entry *newer, *older;    /* the shard's LRU list */
    uint64_t      hash;
    size_t        klen, vlen;
    unsigned char data[];           /* key, then value */
} entry;

typedef struct {
    alignas(64) pthread_mutex_t mu; /* guards the rest; a cache line each: no false sharing */
    entry  **buckets;               /* nbuckets (a power of two, or 0 before the first put) */
    size_t   nbuckets, entries;
    size_t   bytes, budget;         /* bytes: entries' costs + the bucket array's; <= budget */
    entry   *newest, *oldest;
    uint64_t hits, misses, evictions, inserts;
} shard;

struct srv_cache {
    size_t   max_bytes;
    uint64_t seed;                  /* per cache: a client cannot aim keys at one bucket */
    int      nshards;               /* a power of two */
    shard    shards[];
};

/* ---- hashing ---- */

static inline uint64_t rotl64(uint64_t x, int r)
{
    return x << r | x >> (64 - r);
}

/* One 8-byte word into the state.  Both steps are bijections (odd multiplies,
 * xor-shifts, a rotation), in the word and in the state, so no word can wipe
 * out what came before (the weakness of a plain multiply-fold). */
static inline uint64_t absorb(uint64_t h, uint64_t w)
{
    w *= 0xc2b2ae3d27d4eb4fULL;
    w ^= w >> 31;
    w *= 0x9e3779b97f4a7c15ULL;
    return rotl64(h ^ w, 27) * 0x94d049bb133111ebULL + 0x2545f4914f6cdd1dULL;
}

/* A 64-bit hash of p[0..n), 8 bytes at a time; the length goes into the
 * final mix, so "ab" and "ab\0" (same zero-padded tail word) differ. */
static uint64_t hash_bytes(uint64_t seed, const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = seed, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, b + i, 8);
        h = absorb(h, w);
    }
    if (i < n) {
        w = 0;
        memcpy(&w, b + i, n - i);
        h = absorb(h, w);
    }
    return mt_hash_mix64(h ^ (uint64_t)n * 0xff51afd7ed558ccdULL);   /* every bit into the low ones the buckets use */
}

/* ---- accounting ---- */

/* What malloc(n) holds, as glibc rounds a chunk; SIZE_MAX when too big. */
static size_t alloc_cost(size_t n)
{
    if (n > SIZE_MAX - MALLOC_HEADER - MALLOC_ALIGN)
        return SIZE_MAX;
    return (n + MALLOC_HEADER + MALLOC_ALIGN - 1) & ~(size_t)(MALLOC_ALIGN - 1);
}

size_t srv_cache_entry_cost(size_t klen, size_t vlen)
{
    if (klen > SIZE_MAX - sizeof(entry) || vlen > SIZE_MAX - sizeof(entry) - klen)
        return SIZE_MAX;
    return alloc_cost(sizeof(entry) + klen + vlen);
}

static size_t entry_cost(const entry *e)
{
    return srv_cache_entry_cost(e->klen, e->vlen);
}

static size_t table_cost(size_t nbuckets)
{
    return nbuckets ? alloc_cost(nbuckets * sizeof(entry *)) : 0;
}

size_t srv_cache_max_entry(const srv_cache *c)
{
    return c ? c->shards[0].budget / ENTRY_SHARE : 0;
}

/* ---- one shard (its lock held) ---- */

static shard *shard_of(srv_cache *c, uint64_t h)
{
    /* the top bits: the buckets index with the low ones */
    return &c->shards[(h >> 56) & (uint64_t)(c->nshards - 1)];
}

static entry *shard_find(const shard *s, uint64_t h, const void *key, size_t klen)
{
    if (!s->nbuckets)
        return NULL;
    for (entry *e = s->buckets[h & (s->nbuckets - 1)]; e; e = e->chain)
        if (e->hash == h && e->klen == klen && (!klen || !memcmp(e->data, key, klen)))
            return e;
    return NULL;
}

static void lru_unlink(shard *s, entry *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        s->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        s->oldest = e->newer;
}

static void lru_push_newest(shard *s, entry *e)
{
    e->newer = NULL;
    e->older = s->newest;
    if (s->newest)
        s->newest->newer = e;
    else
        s->oldest = e;
    s->newest = e;
}

/* Takes e out of the shard onto *dead (freed by the caller, after unlocking). */
static void shard_take(shard *s, entry *e, entry **dead)
{
    entry **p = &s->buckets[e->hash & (s->nbuckets - 1)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    lru_unlink(s, e);
    s->entries--;
    s->bytes -= entry_cost(e);
    e->chain = *dead;
    *dead = e;
}

/* Doubles the bucket array (or makes the first) if the bytes allow it with
 * `room` more for the entry on its way in.  0 done, -1 not (over budget or
 * out of memory): the chains just get longer. */
static int shard_grow(shard *s, size_t room)
{
    size_t n = s->nbuckets ? 2 * s->nbuckets : FIRST_BUCKETS;
    size_t grow = table_cost(n) - table_cost(s->nbuckets);
    if (grow > s->budget || s->bytes + room > s->budget - grow)
        return -1;
    entry **b = calloc(n, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < s->nbuckets; i++)
        for (entry *e = s->buckets[i], *next; e; e = next) {
            next = e->chain;
            e->chain = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
    s->bytes += grow;
    return 0;
}

/* Makes room for e (cost bytes) by evicting the oldest entries, then links it
 * in as the newest.  0, or -1 when it cannot be placed (no bucket array). */
static int shard_place(shard *s, entry *e, size_t cost, entry **dead)
{
    while (s->bytes + cost > s->budget && s->oldest) {
        shard_take(s, s->oldest, dead);
        s->evictions++;
    }
    /* load factor 1 keeps chains short; past the budget the table stays as is */
    if (s->entries + 1 > s->nbuckets && shard_grow(s, cost) != 0 && !s->nbuckets)
        return -1;
    if (s->bytes + cost > s->budget)
        return -1;
    entry **b = &s->buckets[e->hash & (s->nbuckets - 1)];
    e->chain = *b;
    *b = e;
    lru_push_newest(s, e);
    s->entries++;
    s->bytes += cost;
    return 0;
}

static void free_chain(entry *e)
{
    for (entry *next; e; e = next) {
        next = e->chain;
        free(e);
    }
}

/* ---- the cache ---- */

static uint64_t make_seed(const srv_cache *c)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return mt_hash_mix64((uint64_t)(uintptr_t)c ^ (uint64_t)t.tv_sec << 32 ^ (uint64_t)t.tv_nsec);
}

srv_cache *srv_cache_new(size_t max_bytes)
{
    if (!max_bytes)
        return NULL;
    int n = MAX_SHARDS;
    while (n > 1 && max_bytes / (size_t)n < MIN_SHARD_BYTES)
        n /= 2;
    size_t size = sizeof(srv_cache) + (size_t)n * sizeof(shard);
    size = (size + alignof(srv_cache) - 1) & ~(alignof(srv_cache) - 1);  /* aligned_alloc's rule */
    srv_cache *c = aligned_alloc(alignof(srv_cache), size);
    if (!c)
        return NULL;
    memset(c, 0, size);
    c->max_bytes = max_bytes;
    c->nshards = n;
    c->seed = make_seed(c);
    for (int i = 0; i < n; i++) {
        c->shards[i].budget = max_bytes / (size_t)n;
        if (pthread_mutex_init(&c->shards[i].mu, NULL) != 0) {
            while (i--)
                pthread_mutex_destroy(&c->shards[i].mu);
            free(c);
            return NULL;
        }
    }
    return c;
}

void srv_cache_free(srv_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nshards; i++) {
        shard *s = &c->shards[i];
        for (entry *e = s->newest, *older; e; e = older) {
            older = e->older;
            free(e);
        }
        free(s->buckets);
        pthread_mutex_destroy(&s->mu);
    }
    free(c);
}

int srv_cache_get(srv_cache *c, const void *key, size_t klen, void **val, size_t *vlen)
{
    *val = NULL;
    *vlen = 0;
    if (!c || (klen && !key))
        return 0;
    uint64_t h = hash_bytes(c->seed, key, klen);
    shard *s = shard_of(c, h);
    void *copy = NULL;
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    entry *e = shard_find(s, h, key, klen);
    /* the copy is made under the lock: the entry may be evicted right after */
    if (e && (copy = malloc(e->vlen ? e->vlen : 1))) {
        n = e->vlen;
        memcpy(copy, e->data + e->klen, n);
        lru_unlink(s, e);
        lru_push_newest(s, e);
        s->hits++;
    } else {
        s->misses++;
    }
    pthread_mutex_unlock(&s->mu);
    *val = copy;
    *vlen = n;
    return copy != NULL;
}

static entry *entry_new(uint64_t h, const void *key, size_t klen, const void *val, size_t vlen)
{
    entry *e = malloc(sizeof(entry) + klen + vlen);
    if (!e)
        return NULL;
    e->hash = h;
    e->klen = klen;
    e->vlen = vlen;
    if (klen)
        memcpy(e->data, key, klen);
    if (vlen)
        memcpy(e->data + klen, val, vlen);
    return e;
}

int srv_cache_put(srv_cache *c, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (!c || (klen && !key) || (vlen && !val))
        return -1;
    uint64_t h = hash_bytes(c->seed, key, klen);
    shard *s = shard_of(c, h);
    size_t cost = srv_cache_entry_cost(klen, vlen);
    /* built before locking: the copy of a long value holds no one up */
    entry *e = cost <= srv_cache_max_entry(c) ? entry_new(h, key, klen, val, vlen) : NULL;
    entry *dead = NULL;
    pthread_mutex_lock(&s->mu);
    entry *old = shard_find(s, h, key, klen);
    if (old)
        shard_take(s, old, &dead);  /* even when e is refused: no stale value stays */
    int rc = e ? shard_place(s, e, cost, &dead) : -1;
    if (rc == 0)
        s->inserts++;
    pthread_mutex_unlock(&s->mu);
    if (rc != 0)
        free(e);
    free_chain(dead);
    return rc;
}

void srv_cache_stats_get(srv_cache *c, srv_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    out->max_bytes = c->max_bytes;
    for (int i = 0; i < c->nshards; i++) {
        shard *s = &c->shards[i];
        pthread_mutex_lock(&s->mu);
        out->hits += s->hits;
        out->misses += s->misses;
        out->evictions += s->evictions;
        out->inserts += s->inserts;
        out->bytes += s->bytes;
        out->entries += s->entries;
        pthread_mutex_unlock(&s->mu);
    }
}
