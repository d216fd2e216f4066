/* test_access: who a client is and what it may spend, without a server:
 * http/client_addr.c (the address behind trusted proxies),
 * common/ratelimit.c (token buckets per client), common/api_keys.c (the keys
 * file), common/usage.c (characters per key against char-quota, its state
 * file).  The server-level behaviour (429, Retry-After, metrics, the
 * X-Forwarded-For of a real request) is tests/test_limits.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/api_keys.h"
#include "common/ratelimit.h"
#include "common/usage.h"
#include "http/client_addr.h"

static const char *addr_of(const char *trusted, const char *peer, const char *xff, int *from_xff)
{
    static char out[SRV_ADDR_MAX];
    char err[128];
    srv_proxies *p = srv_proxies_parse(trusted, err, sizeof err);
    assert_non_null(p);
    int f = srv_client_address(p, peer, xff, out);
    if (from_xff)
        *from_xff = f;
    srv_proxies_free(p);
    return out;
}

static void test_client_address(void **state)
{
    (void)state;
    int f;
    /* nobody trusted: the peer, whatever the header says */
    assert_string_equal(addr_of("", "192.0.2.7", "203.0.113.9", &f), "192.0.2.7");
    assert_int_equal(f, 0);
    /* a trusted proxy: the address it appended (the rightmost) */
    assert_string_equal(addr_of("127.0.0.1", "127.0.0.1", "203.0.113.9", &f), "203.0.113.9");
    assert_int_equal(f, 1);
    /* a client's own (spoofed) entries on the left are not believed */
    assert_string_equal(addr_of("127.0.0.1", "127.0.0.1", "1.1.1.1, 203.0.113.9", NULL), "203.0.113.9");
    /* a chain of trusted proxies is walked through, right to left */
    assert_string_equal(addr_of("10.0.0.0/8, 127.0.0.1", "127.0.0.1", "1.1.1.1, 203.0.113.9, 10.1.2.3", NULL),
                        "203.0.113.9");
    /* garbage ends the walk: the last trusted hop stands */
    assert_string_equal(addr_of("10.0.0.0/8, 127.0.0.1", "127.0.0.1", "203.0.113.9, bogus, 10.1.2.3", NULL),
                        "10.1.2.3");
    assert_string_equal(addr_of("127.0.0.1", "127.0.0.1", "", &f), "127.0.0.1");
    assert_int_equal(f, 0);
    assert_string_equal(addr_of("127.0.0.1", "127.0.0.1", " , ", NULL), "127.0.0.1");
    /* no header: the peer */
    assert_string_equal(addr_of("127.0.0.1", "127.0.0.1", NULL, NULL), "127.0.0.1");
    /* IPv6, canonical text; an IPv4-mapped peer is the IPv4 address */
    assert_string_equal(addr_of("::1", "::1", "2001:DB8:0:0::1", NULL), "2001:db8::1");
    assert_string_equal(addr_of("127.0.0.0/8", "::ffff:127.0.0.1", "198.51.100.4", NULL), "198.51.100.4");
    assert_string_equal(addr_of("", "::ffff:192.0.2.1", NULL, NULL), "192.0.2.1");
    /* CIDR edges */
    assert_string_equal(addr_of("192.168.0.0/23", "192.168.1.255", "203.0.113.1", NULL), "203.0.113.1");
    assert_string_equal(addr_of("192.168.0.0/23", "192.168.2.0", "203.0.113.1", NULL), "192.168.2.0");
    assert_string_equal(addr_of("0.0.0.0/0", "8.8.8.8", "203.0.113.1", NULL), "203.0.113.1");
    /* bad lists are refused with the entry named */
    const char *bad[] = { "10.0.0.0/33", "fe80::/129", "10.0.0.1/", "10.0.0.1/x", "localhost", "1.2.3.4.5", "::1/-1" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[128] = "";
        assert_null(srv_proxies_parse(bad[i], err, sizeof err));
        assert_non_null(strstr(err, "--trusted-proxy"));
    }
    char err[128];
    srv_proxies *p = srv_proxies_parse("10.0.0.0/8,::1", err, sizeof err);
    assert_non_null(p);
    assert_true(srv_proxies_trust(p, "10.255.0.1"));
    assert_true(srv_proxies_trust(p, "::1"));
    assert_false(srv_proxies_trust(p, "11.0.0.1"));
    assert_false(srv_proxies_trust(p, "not an address"));
    srv_proxies_free(p);
}

static void test_request_bucket(void **state)
{
    (void)state;
    srv_ratelimit *rl = srv_ratelimit_new(64);
    assert_non_null(rl);
    srv_limit lim = { .req_per_min = 6 };
    int retry;
    double t = 1000.0;
    for (int i = 0; i < 6; i++)         /* a minute's worth in a burst */
        assert_int_equal(srv_ratelimit_take(rl, "ip:a", &lim, 0, t, &retry), SRV_LIMIT_OK);
    assert_int_equal(srv_ratelimit_take(rl, "ip:a", &lim, 0, t, &retry), SRV_LIMIT_REQUESTS);
    assert_int_equal(retry, 10);        /* one request refills in 60 / 6 s */
    /* another client is not affected */
    assert_int_equal(srv_ratelimit_take(rl, "ip:b", &lim, 0, t, &retry), SRV_LIMIT_OK);
    /* after the wait it was told, exactly one more */
    assert_int_equal(srv_ratelimit_take(rl, "ip:a", &lim, 0, t + 9.5, &retry), SRV_LIMIT_REQUESTS);
    assert_int_equal(retry, 1);
    assert_int_equal(srv_ratelimit_take(rl, "ip:a", &lim, 0, t + 10.0, &retry), SRV_LIMIT_OK);
    assert_int_equal(srv_ratelimit_take(rl, "ip:a", &lim, 0, t + 10.0, &retry), SRV_LIMIT_REQUESTS);
    /* an idle minute refills to the cap, not beyond */
    for (int i = 0; i < 6; i++)
        assert_int_equal(srv_ratelimit_take(rl, "ip:a", &lim, 0, t + 600, &retry), SRV_LIMIT_OK);
    assert_int_equal(srv_ratelimit_take(rl, "ip:a", &lim, 0, t + 600, &retry), SRV_LIMIT_REQUESTS);
    /* no limit at all */
    srv_limit none = { 0 };
    for (int i = 0; i < 100; i++)
        assert_int_equal(srv_ratelimit_take(rl, "ip:a", &none, 1000, t, &retry), SRV_LIMIT_OK);
    srv_ratelimit_free(rl);
}

static void test_char_bucket(void **state)
{
    (void)state;
    srv_ratelimit *rl = srv_ratelimit_new(64);
    srv_limit lim = { .req_per_min = 100, .chars_per_min = 600 };
    int retry;
    double t = 50.0;
    assert_int_equal(srv_ratelimit_take(rl, "key:0", &lim, 500, t, &retry), SRV_LIMIT_OK);
    /* 200 more need 100 refilled: 10 s at 10 characters a second */
    assert_int_equal(srv_ratelimit_take(rl, "key:0", &lim, 200, t, &retry), SRV_LIMIT_CHARS);
    assert_int_equal(retry, 10);
    /* a refused request takes nothing: neither its request nor its characters */
    assert_int_equal(srv_ratelimit_take(rl, "key:0", &lim, 100, t, &retry), SRV_LIMIT_OK);
    assert_int_equal(srv_ratelimit_take(rl, "key:0", &lim, 1, t, &retry), SRV_LIMIT_CHARS);
    /* more than a whole minute allows: never */
    assert_int_equal(srv_ratelimit_take(rl, "key:1", &lim, 601, t, &retry), SRV_LIMIT_NEVER);
    assert_int_equal(srv_ratelimit_take(rl, "key:1", &lim, 600, t, &retry), SRV_LIMIT_OK);
    srv_ratelimit_free(rl);
}

/* The table is bounded: many clients reuse the slots of full buckets, and a
 * client with debt is remembered while there is room. */
static void test_bounded_table(void **state)
{
    (void)state;
    srv_ratelimit *rl = srv_ratelimit_new(32);     /* 2 per shard */
    srv_limit lim = { .req_per_min = 1 };
    int retry;
    char name[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "ip:10.0.%d.%d", i / 256, i % 256);
        assert_int_equal(srv_ratelimit_take(rl, name, &lim, 0, 1.0 + i * 60.0, &retry), SRV_LIMIT_OK);
    }
    assert_int_equal(srv_ratelimit_take(rl, "ip:x", &lim, 0, 1e6, &retry), SRV_LIMIT_OK);
    assert_int_equal(srv_ratelimit_take(rl, "ip:x", &lim, 0, 1e6, &retry), SRV_LIMIT_REQUESTS);
    srv_ratelimit_free(rl);
}

typedef struct {
    srv_ratelimit *rl;
    int ok;
} taker;

static void *take_many(void *arg)
{
    taker *tk = arg;
    srv_limit lim = { .req_per_min = 1000 };
    int retry;
    for (int i = 0; i < 5000; i++)
        tk->ok += srv_ratelimit_take(tk->rl, "ip:shared", &lim, 0, 5.0, &retry) == SRV_LIMIT_OK;
    return NULL;
}

/* Threads spending one client's bucket at one instant: exactly its cap passes. */
static void test_threads_share_a_bucket(void **state)
{
    (void)state;
    srv_ratelimit *rl = srv_ratelimit_new(64);
    taker tk[4] = { { rl, 0 }, { rl, 0 }, { rl, 0 }, { rl, 0 } };
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, take_many, &tk[i]);
    int ok = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ok += tk[i].ok;
    }
    printf("4 threads x 5000 requests at one instant, cap 1000: %d passed\n", ok);
    assert_int_equal(ok, 1000);
    srv_ratelimit_free(rl);
}

static void test_keys_file(void **state)
{
    (void)state;
    srv_api_keys keys = { 0 };
    char err[256];
    const char *text = "# keys\n"
                       "alpha\n"
                       "  beta req-limit=5 char-limit=1000\r\n"
                       "\n"
                       "gamma\tchar-limit=0\n"
                       "delta req-limit=0 char-quota=500000";
    assert_int_equal(srv_api_keys_parse(&keys, text, err, sizeof err), 0);
    assert_int_equal(keys.n, 4);
    assert_int_equal(srv_api_keys_find(&keys, "alpha"), 0);
    assert_int_equal(srv_api_keys_find(&keys, "beta"), 1);
    assert_int_equal(keys.v[1].req_limit, 5);
    assert_int_equal(keys.v[1].char_limit, 1000);
    assert_int_equal(keys.v[0].req_limit, -1);
    assert_int_equal(keys.v[2].char_limit, 0);
    assert_int_equal(keys.v[2].req_limit, -1);
    assert_int_equal(keys.v[3].req_limit, 0);
    assert_int_equal(keys.v[3].char_quota, 500000);
    assert_int_equal(keys.v[0].char_quota, -1);
    assert_int_equal(srv_api_keys_find(&keys, "alph"), -1);
    assert_int_equal(srv_api_keys_find(&keys, "alphaa"), -1);
    assert_int_equal(srv_api_keys_find(&keys, ""), -1);
    srv_api_keys_free(&keys);
    const struct {
        const char *text, *says;
    } bad[] = {
        { "k req-limit=-1\n", "line 1" },
        { "ok\nk req-limit=x\n", "line 2" },
        { "k rate=5\n", "line 1" },
        { "k char-limit=\n", "line 1" },
        { "a\nb\na\n", "listed twice" },
        { "k\xc3\xa9\n", "bad key" },
        { "k req-limit=99999999999\n", "line 1" },
        { "k char-quota=-5\n", "char-quota=N" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        srv_api_keys k = { 0 };
        err[0] = 0;
        assert_int_equal(srv_api_keys_parse(&k, bad[i].text, err, sizeof err), -1);
        if (!strstr(err, bad[i].says))
            print_error("'%s': %s\n", bad[i].text, err);
        assert_non_null(strstr(err, bad[i].says));
        srv_api_keys_free(&k);
    }
    assert_int_equal(srv_api_keys_load(&keys, "/nonexistent/keys", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/keys"));
}

static srv_api_keys two_keys(void)
{
    srv_api_keys keys = { 0 };
    char err[128];
    assert_int_equal(srv_api_keys_parse(&keys, "free\nlimited char-quota=100\n", err, sizeof err), 0);
    return keys;
}

/* Counts per key, the quota, give-back, and the state file across a "restart". */
/* SIGHUP's merge: a key of both keeps its index with the new limits, a key
 * gone is revoked (never found, its index kept), a new key is appended. */
static void test_keys_merge(void **state)
{
    (void)state;
    char err[256];
    srv_api_keys old = { 0 }, fresh = { 0 }, out = { 0 }, again = { 0 };
    assert_int_equal(srv_api_keys_parse(&old, "alpha req-limit=5\nbeta\ngamma\n", err, sizeof err), 0);
    assert_int_equal(srv_api_keys_parse(&fresh, "delta\nbeta char-limit=9\nalpha\n", err, sizeof err), 0);
    assert_int_equal(srv_api_keys_merge(&old, &fresh, &out), 0);
    assert_int_equal(out.n, 4);
    assert_int_equal(srv_api_keys_find(&out, "alpha"), 0);
    assert_int_equal(out.v[0].req_limit, -1);           /* the file's line now: no own limit */
    assert_int_equal(srv_api_keys_find(&out, "beta"), 1);
    assert_int_equal(out.v[1].char_limit, 9);
    assert_int_equal(srv_api_keys_find(&out, "gamma"), -1); /* revoked */
    assert_true(out.v[2].revoked);
    assert_int_equal(srv_api_keys_find(&out, "delta"), 3);
    assert_int_equal(srv_api_keys_active(&out), 3);
    /* gamma back: its old index again, nothing appended */
    srv_api_keys_free(&fresh);
    assert_int_equal(srv_api_keys_parse(&fresh, "gamma\n", err, sizeof err), 0);
    assert_int_equal(srv_api_keys_merge(&out, &fresh, &again), 0);
    assert_int_equal(again.n, 4);
    assert_int_equal(srv_api_keys_find(&again, "gamma"), 2);
    assert_int_equal(srv_api_keys_find(&again, "alpha"), -1);
    assert_int_equal(srv_api_keys_active(&again), 1);
    srv_api_keys_free(&old);
    srv_api_keys_free(&fresh);
    srv_api_keys_free(&out);
    srv_api_keys_free(&again);
}

static void test_usage(void **state)
{
    (void)state;
    char path[128], err[256];
    snprintf(path, sizeof path, "/tmp/test_access_usage.%d", (int)getpid());
    unlink(path);
    srv_api_keys keys = two_keys();
    srv_usage *u = NULL;
    assert_int_equal(srv_usage_open(&u, &keys, path, err, sizeof err), 0);
    assert_int_equal(srv_usage_quota(u, 0), -1);
    assert_int_equal(srv_usage_quota(u, 1), 100);
    assert_int_equal(srv_usage_quota(u, -1), -1);           /* no key: no quota */
    assert_int_equal(srv_usage_take(u, 0, 1000000), 0);
    assert_int_equal(srv_usage_take(u, 1, 60), 0);
    assert_int_equal(srv_usage_take(u, 1, 41), -1);         /* 101 > 100: refused, nothing counted */
    assert_int_equal(srv_usage_count(u, 1), 60);
    assert_int_equal(srv_usage_take(u, 1, 40), 0);          /* exactly the quota */
    assert_int_equal(srv_usage_take(u, 1, 1), -1);
    srv_usage_give_back(u, 1, 40);                          /* that request failed */
    assert_int_equal(srv_usage_count(u, 1), 60);
    assert_int_equal(srv_usage_take(u, -1, 7), 0);
    assert_int_equal(srv_usage_count(u, -1), 7);
    srv_usage_close(u);                                     /* saves */
    FILE *f = fopen(path, "r");
    char text[512] = "";
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    print_message("%s", text);
    assert_non_null(strstr(text, "mtserve-usage 1\n"));
    assert_null(strstr(text, "free"));                      /* hashes, not the keys */
    assert_null(strstr(text, "limited"));
    assert_non_null(strstr(text, "\n- 7\n"));
    /* restarted, with the keys in another order and one more: each keeps its count */
    srv_api_keys k2 = { 0 };
    assert_int_equal(srv_api_keys_parse(&k2, "new\nlimited char-quota=100\nfree\n", err, sizeof err), 0);
    assert_int_equal(srv_usage_open(&u, &k2, path, err, sizeof err), 0);
    assert_int_equal(srv_usage_count(u, 0), 0);
    assert_int_equal(srv_usage_count(u, 1), 60);
    assert_int_equal(srv_usage_count(u, 2), 1000000);
    assert_int_equal(srv_usage_count(u, -1), 7);
    srv_usage_close(u);
    srv_api_keys_free(&k2);
    /* not a state file: refused with its name */
    f = fopen(path, "w");
    fputs("something else\n", f);
    fclose(f);
    assert_int_equal(srv_usage_open(&u, &keys, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a usage file"));
    f = fopen(path, "w");
    fputs("mtserve-usage 1\n- -3\n", f);
    fclose(f);
    assert_int_equal(srv_usage_open(&u, &keys, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 2"));
    unlink(path);
    /* no file: in memory */
    assert_int_equal(srv_usage_open(&u, &keys, "", err, sizeof err), 0);
    assert_int_equal(srv_usage_take(u, 0, 5), 0);
    srv_usage_close(u);
    srv_api_keys_free(&keys);
}

typedef struct {
    srv_usage *u;
    int        ok;
} spender;

static void *spend(void *arg)
{
    spender *sp = arg;
    for (int i = 0; i < 5000; i++)
        sp->ok += srv_usage_take(sp->u, 1, 1) == 0;
    return NULL;
}

/* Threads spending one key's quota at once: exactly the quota passes. */
static void test_usage_threads(void **state)
{
    (void)state;
    char err[128];
    srv_api_keys keys = two_keys();
    srv_usage *u = NULL;
    assert_int_equal(srv_usage_open(&u, &keys, NULL, err, sizeof err), 0);
    spender sp[4] = { { u, 0 }, { u, 0 }, { u, 0 }, { u, 0 } };
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, spend, &sp[i]);
    int ok = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ok += sp[i].ok;
    }
    assert_int_equal(ok, 100);
    assert_int_equal(srv_usage_count(u, 1), 100);
    srv_usage_close(u);
    srv_api_keys_free(&keys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_address),
        cmocka_unit_test(test_request_bucket),
        cmocka_unit_test(test_char_bucket),
        cmocka_unit_test(test_bounded_table),
        cmocka_unit_test(test_threads_share_a_bucket),
        cmocka_unit_test(test_keys_file),
        cmocka_unit_test(test_keys_merge),
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_usage_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
