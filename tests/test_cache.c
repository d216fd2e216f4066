/* test_cache: the translation cache's LRU (server/translate/cache.h).
 *
 * Round trips, replacement, the LRU order of one shard, the byte bound under
 * many puts of random sizes (every hit checked against the last value put for
 * its key), refusals, the off cache (NULL), the counters, and 8 threads doing
 * random gets and puts on overlapping keys for half a second, every hit
 * checked byte for byte (meant for ThreadSanitizer: make tsan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "translate/cache.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* ---- helpers ---- */

static uint64_t rng_next(uint64_t *s)   /* xorshift64*: a state per thread */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dULL;
}

static size_t key_of(unsigned id, char *buf)
{
    return (size_t)snprintf(buf, 32, "sentence %u", id);
}

/* Byte j of any value put for key id: a hit is checked against it. */
static unsigned char value_byte(unsigned id, size_t j)
{
    return (unsigned char)(id * 131u + j * 7u + (j >> 8));
}

static void fill_value(unsigned id, unsigned char *v, size_t len)
{
    for (size_t j = 0; j < len; j++)
        v[j] = value_byte(id, j);
}

static int value_ok(unsigned id, const unsigned char *v, size_t len)
{
    for (size_t j = 0; j < len; j++)
        if (v[j] != value_byte(id, j))
            return 0;
    return 1;
}

static srv_cache_stats stats_of(srv_cache *c)
{
    srv_cache_stats st;
    srv_cache_stats_get(c, &st);
    return st;
}

static int put_str(srv_cache *c, const char *k, const char *v)
{
    return srv_cache_put(c, k, strlen(k), v, strlen(v));
}

/* 1 when k is cached with exactly the value v (the get refreshes it). */
static int has_str(srv_cache *c, const char *k, const char *v)
{
    void *got;
    size_t n;
    if (!srv_cache_get(c, k, strlen(k), &got, &n))
        return 0;
    int ok = n == strlen(v) && !memcmp(got, v, n);
    free(got);
    return ok;
}

static int has_key(srv_cache *c, const char *k)
{
    void *got;
    size_t n;
    int hit = srv_cache_get(c, k, strlen(k), &got, &n);
    free(got);
    return hit;
}

static int has_id(srv_cache *c, unsigned id)
{
    char k[32];
    key_of(id, k);
    return has_key(c, k);
}

/* ---- single thread ---- */

static void test_round_trip(void **state)
{
    (void)state;
    srv_cache *c = srv_cache_new(MIB);
    assert_non_null(c);
    assert_int_equal(put_str(c, "Hello world.", "Bonjour le monde."), 0);
    assert_true(has_str(c, "Hello world.", "Bonjour le monde."));
    /* full keys are compared: prefixes, extensions and a trailing NUL miss */
    assert_false(has_key(c, "Hello world"));
    assert_false(has_key(c, "Hello world.!"));
    void *got = (void *)1;
    size_t n = 99;
    assert_int_equal(srv_cache_get(c, "Hello world.", 13, &got, &n), 0);
    assert_null(got);
    assert_int_equal(n, 0);
    /* binary keys with NULs, an empty key, an empty value (still a non-NULL copy) */
    const char bin[] = {'a', 0, 'b', 0};
    assert_int_equal(srv_cache_put(c, bin, sizeof bin, "x", 1), 0);
    assert_int_equal(srv_cache_put(c, "", 0, "empty key", 9), 0);
    assert_int_equal(srv_cache_put(c, "empty value", 11, NULL, 0), 0);
    assert_int_equal(srv_cache_get(c, bin, sizeof bin, &got, &n), 1);
    assert_int_equal(n, 1);
    assert_memory_equal(got, "x", 1);
    free(got);
    assert_false(srv_cache_get(c, bin, 3, &got, &n));
    assert_true(has_str(c, "", "empty key"));
    assert_int_equal(srv_cache_get(c, "empty value", 11, &got, &n), 1);
    assert_non_null(got);
    assert_int_equal(n, 0);
    free(got);
    /* the cache keeps its own copies */
    char k[] = "mutable", v[] = "value";
    assert_int_equal(put_str(c, k, v), 0);
    k[0] = v[0] = 'X';
    assert_true(has_str(c, "mutable", "value"));
    assert_int_equal(stats_of(c).entries, 5);
    srv_cache_free(c);
}

static void test_replace(void **state)
{
    (void)state;
    srv_cache *c = srv_cache_new(MIB);
    assert_int_equal(put_str(c, "key", "a rather long first value"), 0);
    size_t with_long = stats_of(c).bytes;
    assert_int_equal(put_str(c, "key", "short"), 0);
    assert_true(has_str(c, "key", "short"));
    srv_cache_stats st = stats_of(c);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.inserts, 2);
    assert_int_equal(st.evictions, 0);
    /* the bytes follow the entry's cost: the bucket array is the rest */
    assert_int_equal(with_long - st.bytes, srv_cache_entry_cost(3, 25) - srv_cache_entry_cost(3, 5));
    assert_true(st.bytes > srv_cache_entry_cost(3, 5));
    srv_cache_free(c);
}

/* 64 KiB: one shard, so the LRU order is the whole cache's. */
static void test_lru_order(void **state)
{
    (void)state;
    srv_cache *c = srv_cache_new(64 * KIB);
    assert_non_null(c);
    static unsigned char v[5000];
    char k[32];
    unsigned n = 0;
    while (stats_of(c).evictions == 0) {
        fill_value(n, v, sizeof v);
        assert_int_equal(srv_cache_put(c, k, key_of(n, k), v, sizeof v), 0);
        n++;
    }
    assert_true(n > 6);
    /* the first one went first; entries 1..n-1 remain */
    assert_false(has_id(c, 0));
    assert_int_equal(stats_of(c).entries, n - 1);
    /* a get makes 1 the newest: the next put evicts 2 instead */
    assert_true(has_id(c, 1));
    assert_int_equal(srv_cache_put(c, k, key_of(n, k), v, sizeof v), 0);
    assert_int_equal(stats_of(c).evictions, 2);
    assert_false(has_id(c, 2));
    assert_true(has_id(c, 1));
    assert_true(has_id(c, 3));
    assert_true(has_id(c, n));
    /* a replacement also makes the key the newest: 4 is the oldest now, then 5 */
    assert_int_equal(srv_cache_put(c, k, key_of(5, k), v, sizeof v), 0);
    assert_int_equal(srv_cache_put(c, k, key_of(n + 1, k), v, sizeof v), 0);
    assert_false(has_id(c, 4));
    assert_true(has_id(c, 5));
    srv_cache_free(c);
}

/* Many puts of random sizes over 5000 keys into 1 MiB: the bound holds after
 * every put, and every hit is the last value put for its key. */
static void test_bound_random(void **state)
{
    (void)state;
    enum { KEYS = 5000, PUTS = 40000 };
    const size_t max = MIB;
    srv_cache *c = srv_cache_new(max);
    long *last = malloc(KEYS * sizeof *last);   /* length of the last put; -1 none or refused */
    unsigned char *v = malloc(64 * KIB);
    assert_non_null(last);
    assert_non_null(v);
    for (int i = 0; i < KEYS; i++)
        last[i] = -1;
    uint64_t rng = 0x1234567;
    uint64_t stored = 0;
    char k[32];
    for (int i = 0; i < PUTS; i++) {
        unsigned id = (unsigned)(rng_next(&rng) % KEYS);
        /* mostly sentence-sized, sometimes near or past the largest entry */
        size_t r = rng_next(&rng) % 100, len = r < 97 ? rng_next(&rng) % 300 : rng_next(&rng) % (40 * KIB);
        size_t klen = key_of(id, k);
        fill_value(id, v, len);
        int rc = srv_cache_put(c, k, klen, v, len);
        assert_int_equal(rc, srv_cache_entry_cost(klen, len) <= srv_cache_max_entry(c) ? 0 : -1);
        last[id] = rc == 0 ? (long)len : -1;
        stored += rc == 0;
        srv_cache_stats st = stats_of(c);
        assert_true(st.bytes <= max);
        if (i % 7 == 0) {   /* and some gets in between, to stir the LRU order */
            unsigned g = (unsigned)(rng_next(&rng) % KEYS);
            void *got;
            size_t n;
            if (srv_cache_get(c, k, key_of(g, k), &got, &n)) {
                assert_int_equal((long)n, last[g]);
                assert_true(value_ok(g, got, n));
                free(got);
            }
        }
    }
    srv_cache_stats st = stats_of(c);
    assert_int_equal(st.inserts, stored);
    assert_true(st.evictions > 0);
    assert_true(st.entries > 500);    /* small entries do fill it: the tables grew */
    /* entries: exactly the keys that hit, each with its last value; bytes:
     * their costs plus the bucket arrays (a small part) */
    size_t hits = 0, cost = 0;
    for (unsigned id = 0; id < KEYS; id++) {
        void *got;
        size_t n, klen = key_of(id, k);
        if (!srv_cache_get(c, k, klen, &got, &n))
            continue;
        assert_int_equal((long)n, last[id]);
        assert_true(value_ok(id, got, n));
        free(got);
        hits++;
        cost += srv_cache_entry_cost(klen, n);
    }
    assert_int_equal(hits, st.entries);
    assert_true(cost < st.bytes);
    assert_true(st.bytes - cost < max / 8);
    assert_true(st.bytes > max / 2);   /* and it is used, not just bounded */
    free(last);
    free(v);
    srv_cache_free(c);
}

static void test_too_big(void **state)
{
    (void)state;
    srv_cache *c = srv_cache_new(64 * MIB);   /* 16 shards of 4 MiB: 512 KiB an entry */
    size_t max_entry = srv_cache_max_entry(c);
    assert_true(max_entry >= 64 * MIB / 16 / 8 - 64 && max_entry <= 64 * MIB / 8);
    unsigned char *v = calloc(1, MIB);
    assert_non_null(v);
    assert_int_equal(srv_cache_put(c, "big", 3, v, MIB), -1);
    assert_int_equal(srv_cache_put(c, "fits", 4, v, 256 * KIB), 0);
    /* the exact limit, on both sides */
    size_t vlen = max_entry - srv_cache_entry_cost(4, 0);
    while (srv_cache_entry_cost(4, vlen) > max_entry)
        vlen--;
    assert_int_equal(srv_cache_put(c, "edge", 4, v, vlen), 0);
    while (srv_cache_entry_cost(4, vlen) <= max_entry)
        vlen++;
    assert_int_equal(srv_cache_put(c, "over", 4, v, vlen), -1);
    /* a refused put also drops the older value of its key */
    assert_int_equal(put_str(c, "key", "old"), 0);
    assert_int_equal(srv_cache_put(c, "key", 3, v, MIB), -1);
    assert_false(has_key(c, "key"));
    /* lengths whose sum overflows are refused, never read */
    assert_int_equal(srv_cache_put(c, "k", 1, v, SIZE_MAX), -1);
    assert_int_equal(srv_cache_entry_cost(SIZE_MAX / 2, SIZE_MAX / 2 + 2), SIZE_MAX);
    srv_cache_stats st = stats_of(c);
    assert_int_equal(st.entries, 2);
    assert_int_equal(st.inserts, 3);
    /* a cache too small for any entry refuses everything and stays within its bytes */
    srv_cache *tiny = srv_cache_new(100);
    assert_non_null(tiny);
    assert_int_equal(put_str(tiny, "a", "b"), -1);
    assert_int_equal(stats_of(tiny).bytes, 0);
    srv_cache_free(tiny);
    free(v);
    srv_cache_free(c);
}

static void test_off(void **state)
{
    (void)state;
    assert_null(srv_cache_new(0));
    void *got = (void *)1;
    size_t n = 5;
    assert_int_equal(srv_cache_put(NULL, "k", 1, "v", 1), -1);
    assert_int_equal(srv_cache_get(NULL, "k", 1, &got, &n), 0);
    assert_null(got);
    assert_int_equal(n, 0);
    srv_cache_stats st;
    memset(&st, 0xff, sizeof st);
    srv_cache_stats_get(NULL, &st);
    assert_true(st.hits == 0 && st.misses == 0 && st.evictions == 0 && st.inserts == 0);
    assert_true(st.bytes == 0 && st.entries == 0 && st.max_bytes == 0);
    assert_int_equal(srv_cache_max_entry(NULL), 0);
    srv_cache_free(NULL);
}

static void test_stats(void **state)
{
    (void)state;
    srv_cache *c = srv_cache_new(2 * MIB);
    srv_cache_stats st = stats_of(c);
    assert_true(st.hits == 0 && st.misses == 0 && st.inserts == 0 && st.bytes == 0 && st.entries == 0);
    assert_int_equal(st.max_bytes, 2 * MIB);
    assert_false(has_key(c, "a"));
    put_str(c, "a", "1");
    put_str(c, "b", "2");
    put_str(c, "a", "3");
    assert_true(has_str(c, "a", "3"));
    assert_true(has_str(c, "b", "2"));
    assert_false(has_key(c, "c"));
    st = stats_of(c);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.misses, 2);
    assert_int_equal(st.inserts, 3);
    assert_int_equal(st.evictions, 0);
    assert_int_equal(st.entries, 2);
    assert_true(st.bytes >= 2 * srv_cache_entry_cost(1, 1));
    srv_cache_free(c);
}

/* ---- threads ---- */

#define THREADS    8
#define STRESS_KEYS 1500

typedef struct {
    srv_cache *c;
    uint64_t   seed;
    double     until;
    long       gets, hits, puts, stored, bad;
} worker;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Every value of key id has this length: a hit of any other length is torn. */
static size_t stress_len(unsigned id)
{
    return id % 10 == 0 ? 4000 + id : 20 + (id * 7919u) % 1500;
}

static void *stress(void *arg)
{
    worker *w = arg;
    unsigned char *v = malloc(8 * KIB);
    char k[32];
    if (!v) {
        w->bad++;
        return NULL;
    }
    for (long i = 0; (i & 63) || now_s() < w->until; i++) {
        unsigned id = (unsigned)(rng_next(&w->seed) % STRESS_KEYS);
        size_t klen = key_of(id, k), len = stress_len(id);
        unsigned op = (unsigned)(rng_next(&w->seed) % 16);
        if (op < 9) {
            void *got;
            size_t n;
            w->gets++;
            if (srv_cache_get(w->c, k, klen, &got, &n)) {
                w->hits++;
                w->bad += n != len || !value_ok(id, got, n);
                free(got);
            }
        } else if (op < 15) {
            fill_value(id, v, len);
            w->puts++;
            w->stored += srv_cache_put(w->c, k, klen, v, len) == 0;
        } else {
            srv_cache_stats st;
            srv_cache_stats_get(w->c, &st);
            w->bad += st.bytes > st.max_bytes;
        }
    }
    free(v);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    const size_t max = 1 * MIB;   /* 4 shards; the keys' values take ~1.5 MB: evictions */
    srv_cache *c = srv_cache_new(max);
    worker w[THREADS];
    pthread_t t[THREADS];
    double until = now_s() + 0.5;
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){ .c = c, .seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1), .until = until };
        assert_int_equal(pthread_create(&t[i], NULL, stress, &w[i]), 0);
    }
    long gets = 0, hits = 0, puts = 0, stored = 0, bad = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        gets += w[i].gets, hits += w[i].hits, puts += w[i].puts, stored += w[i].stored, bad += w[i].bad;
    }
    srv_cache_stats st = stats_of(c);
    print_message("threads: %ld gets (%ld hits), %ld puts, %llu evictions, %zu entries, %zu bytes\n",
                  gets, hits, puts, (unsigned long long)st.evictions, st.entries, st.bytes);
    assert_int_equal(bad, 0);
    assert_true(hits > 0 && hits < gets);
    assert_int_equal(stored, puts);   /* every value fits */
    assert_int_equal(st.hits, hits);
    assert_int_equal(st.misses, gets - hits);
    assert_int_equal(st.inserts, stored);
    assert_true(st.evictions > 0);
    assert_true(st.bytes <= max);
    srv_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_replace),
        cmocka_unit_test(test_lru_order),
        cmocka_unit_test(test_bound_random),
        cmocka_unit_test(test_too_big),
        cmocka_unit_test(test_off),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests_name("cache", tests, NULL, NULL);
}
