/* cache: a byte-bounded, thread-safe LRU cache of opaque blobs (the server's
 * translation cache: key = whatever identifies a sentence's translation,
 * value = its result, both bytes the cache only copies and compares).
 *
 * One cache is shared by every HTTP thread.  It is split into shards chosen
 * by the key's hash (16, fewer for a small cache: each shard keeps at least
 * 256 KiB), each with its own mutex, hash table and LRU list, so that
 * threads looking up different sentences rarely wait for each other; the LRU
 * order is therefore per shard, not global.  Each shard gets max_bytes /
 * shards bytes, and an entry may use at most 1/8 of a shard's bytes.
 *
 * The byte count is what the cache holds in memory, so that the process's
 * RSS stays within the bound: per entry its struct, key and value bytes plus
 * a malloc overhead (srv_cache_entry_cost), plus each shard's bucket array.
 * `bytes` never exceeds max_bytes.  The key is compared byte for byte.
 */
#ifndef SRV_CACHE_H
#define SRV_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct srv_cache srv_cache;

typedef struct {
    uint64_t hits, misses;      /* srv_cache_get answers */
    uint64_t evictions;         /* entries dropped for room (not replacements) */
    uint64_t inserts;           /* successful srv_cache_put calls (replacements too) */
    size_t   bytes;             /* held now: entries and bucket arrays (<= max_bytes) */
    size_t   entries;
    size_t   max_bytes;         /* as given to srv_cache_new */
} srv_cache_stats;

/* A cache of at most max_bytes.  NULL when max_bytes == 0 (the cache is off:
 * every call below accepts NULL) or out of memory.  Free with srv_cache_free. */
srv_cache *srv_cache_new(size_t max_bytes);

/* Frees c and every entry.  NULL ok.  No call on c may be running. */
void srv_cache_free(srv_cache *c);

/* Looks key[0..klen) up.  On a hit: 1, *val a malloc'd copy of the value
 * (never NULL, even for vlen 0; the caller frees it), *vlen its length, and
 * the entry becomes the most recent of its shard.  On a miss (or out of
 * memory for the copy, counted as a miss): 0, *val NULL, *vlen 0.  c NULL:
 * 0, nothing counted. */
int srv_cache_get(srv_cache *c, const void *key, size_t klen, void **val, size_t *vlen);

/* Stores copies of key and value, replacing an entry with the same key and
 * evicting the least recently used entries of the key's shard until the
 * bytes fit.  0 stored; -1 not stored: c NULL, the entry too big (more than
 * 1/8 of a shard's bytes) or out of memory.  After a -1 no older value of the
 * key stays either, so that a hit always returns the last value put. */
int srv_cache_put(srv_cache *c, const void *key, size_t klen, const void *val, size_t vlen);

/* The counters summed over the shards (each read under its shard's lock).
 * c NULL: zeros. */
void srv_cache_stats_get(srv_cache *c, srv_cache_stats *out);

/* The bytes an entry of this key and value length is charged (its share of
 * a bucket array not included); SIZE_MAX when that does not fit in size_t. */
size_t srv_cache_entry_cost(size_t klen, size_t vlen);

/* The largest srv_cache_entry_cost that c accepts (0 for NULL). */
size_t srv_cache_max_entry(const srv_cache *c);

#endif
