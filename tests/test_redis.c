/* test_redis: state shared through Redis (server/store, serve --redis).
 *
 * Without a server: every form of --redis URL, good and bad; every reply
 * type (made from RESP bytes by hiredis's own reader, and by hand for what
 * the reader never makes) read as every wanted type.
 *
 * With Debian's redis-server, started here on a private loopback port (and a
 * unix socket in a temporary directory), `--save '' --appendonly no`:
 *   - the client: commands, AUTH and SELECT, EVALSHA falling back to EVAL
 *     after SCRIPT FLUSH; Redis stopped (SIGSTOP: no answer) and killed:
 *     each call bounded by the timeout, calls skipped at once while it is
 *     down (no call waits on a probe: the client's thread probes), and the
 *     client back by itself once it is; Redis asleep (DEBUG SLEEP) past the
 *     budget: a quick call gives up after it, the next ones skip at once,
 *     full calls still wait, quick calls back once a probe is quick;
 *   - the file leases' scripts (service/file_lease.c): the budget, one
 *     winner of a claim, a result written by the lease's holder only, once;
 *   - three replicas of `mtserve serve --model models/tiny --redis ...`:
 *     a key limited to N requests a minute, sent to all three, gets the
 *     token bucket's N + N x elapsed / 60 within 5 %; a key's character
 *     quota holds across the replicas and across a restart of all three;
 *     Redis stopped, then killed and started again during load: no
 *     translation fails, /health says the limits are local meanwhile, and
 *     the replicas use Redis again by themselves, and new file jobs are
 *     refused with 503 while it is down; a file job taken just before it
 *     stopped is done and downloadable from the other replicas after (its
 *     state published again once the new, empty Redis takes it);
 *   - a file job submitted to one replica is polled on a second and
 *     downloaded from a third (its bytes equal the first's);
 *   - a DeepL glossary made through one replica is listed and read on the
 *     others and applied there (as the same terms given inline), an edit
 *     through a second is read on a third, a delete removes it on all (the
 *     replicas that used it too); Redis stopped: making one is 503 with
 *     Retry-After, and works again once Redis resumes;
 *   - the shared cache's bound: 1000 binary entries into 256 KiB, the oldest
 *     dropped, the count within the bound, an entry over 1/256 not written;
 *   - the shared translation cache (--redis-cache-mb): a sentence decoded on
 *     one replica is a shared-cache hit on each other (its metric counts
 *     one), the same output, and then a local hit there;
 *   - a DeepL document uploaded to one replica: its status on a second, a
 *     wrong key 404 on all, its result from a third (each paragraph as
 *     /translate has it), then gone on all;
 *   - a server's --usage-file counts seed Redis when it starts with --redis;
 *   - file jobs taken over (service/file_takeover.c), with 3 other replicas
 *     (models/tiny greedy and short, --redis-lease 1 s) behind Debian's nginx
 *     (tests/nginx_harness.h): 100 async file jobs (12 under TSan) submitted,
 *     polled and downloaded through nginx, each equal to its file translated
 *     by one replica alone; again with the replica holding the most running
 *     jobs SIGKILLed once half are submitted: all equal, its jobs taken over,
 *     one result written a job and none refused (the files:stats counts); a
 *     replica SIGSTOPped past its lease gives its job up once resumed (one
 *     result); a DeepL document taken over from a SIGKILLed replica: the
 *     same bytes and billed characters as one replica alone.
 * Every child is tracked by the harness and killed at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "harness.h"
#include "nginx_harness.h"
#include "service/file_lease.h"
#include "store/redis.h"

#define REDIS_BIN   "/usr/bin/redis-server"
#define MODEL       "models/tiny"
#define N_REPLICAS  3
#define TIMEOUT_MS  100         /* the clients' timeout here; the replicas' --redis-timeout */
#define MAX_LENGTH  "4"         /* of every translation: the load is the requests, not decoding
                                   (~100x slower under TSan) */

/* MTSERVE_TSAN=1 (make tsan): the replicas run instrumented, every call slower */
static int tsan(void)
{
    const char *v = getenv("MTSERVE_TSAN");
    return v && *v == '1';
}

/* ---- URLs ----------------------------------------------------------------------- */

typedef struct {
    const char *url;
    int         ok;
    const char *host_or_path;   /* ok: the host (or unix path); bad: a word of the message */
    int         port, db;
    const char *user, *password;
} url_case;

static const url_case url_cases[] = {
    { "redis://localhost", 1, "localhost", 6379, 0, "", "" },
    { "redis://127.0.0.1:7000", 1, "127.0.0.1", 7000, 0, "", "" },
    { "redis://127.0.0.1:7000/3", 1, "127.0.0.1", 7000, 3, "", "" },
    { "redis://redis.internal/15", 1, "redis.internal", 6379, 15, "", "" },
    { "redis://host:1/", 1, "host", 1, 0, "", "" },
    { "redis://:s3cret@h:6380/1", 1, "h", 6380, 1, "", "s3cret" },
    { "redis://app:p%40ss%3Aw@h", 1, "h", 6379, 0, "app", "p@ss:w" },
    { "redis://app:p@ss@h:1", 1, "h", 1, 0, "app", "p@ss" },       /* the last '@' ends the password */
    { "redis://[::1]:6390/2", 1, "::1", 6390, 2, "", "" },
    { "redis://[::1]", 1, "::1", 6379, 0, "", "" },
    { "unix:///run/redis/redis.sock", 1, "/run/redis/redis.sock", 0, 0, "", "" },
    { "unix:///tmp/r.sock?db=4", 1, "/tmp/r.sock", 0, 4, "", "" },
    { "rediss://h:6380", 0, "TLS", 0, 0, NULL, NULL },
    { "", 0, "empty", 0, 0, NULL, NULL },
    { "http://h:6379", 0, "not a Redis URL", 0, 0, NULL, NULL },
    { "h:6379", 0, "not a Redis URL", 0, 0, NULL, NULL },
    { "redis://", 0, "no host", 0, 0, NULL, NULL },
    { "redis://:6379", 0, "no host", 0, 0, NULL, NULL },
    { "redis://h:0", 0, "port", 0, 0, NULL, NULL },
    { "redis://h:65536", 0, "port", 0, 0, NULL, NULL },
    { "redis://h:12ab", 0, "port", 0, 0, NULL, NULL },
    { "redis://h:", 0, "port", 0, 0, NULL, NULL },
    { "redis://h/x", 0, "/db", 0, 0, NULL, NULL },
    { "redis://h/1/2", 0, "/db", 0, 0, NULL, NULL },
    { "redis://h?db=1", 0, "not a host", 0, 0, NULL, NULL },
    { "redis://user@h", 0, "[user]:password", 0, 0, NULL, NULL },
    { "redis://u:@h", 0, "empty password", 0, 0, NULL, NULL },
    { "redis://u:%zz@h", 0, "escape", 0, 0, NULL, NULL },
    { "redis://u:%00@h", 0, "NUL", 0, 0, NULL, NULL },
    { "redis://u:%4@h", 0, "escape", 0, 0, NULL, NULL },
    { "redis://[::1", 0, "']'", 0, 0, NULL, NULL },
    { "redis://[]:1", 0, "']'", 0, 0, NULL, NULL },
    { "redis://[zz]:1", 0, "IPv6", 0, 0, NULL, NULL },
    { "redis://[::1]x", 0, ":port", 0, 0, NULL, NULL },
    { "redis://h o:1", 0, "space", 0, 0, NULL, NULL },
    { "unix://", 0, "absolute", 0, 0, NULL, NULL },
    { "unix://relative.sock", 0, "absolute", 0, 0, NULL, NULL },
    { "unix:///tmp/r.sock?x=1", 0, "?db=N", 0, 0, NULL, NULL },
    { "unix:///tmp/r.sock?db=", 0, "?db=N", 0, 0, NULL, NULL },
};

static void test_url(void **state)
{
    char err[400];
    int n = 0;
    for (size_t i = 0; i < sizeof url_cases / sizeof *url_cases; i++, n++) {
        const url_case *c = &url_cases[i];
        srv_redis_url u;
        err[0] = 0;
        int rc = srv_redis_url_parse(c->url, &u, err, sizeof err);
        if (c->ok != (rc == 0))
            fail_msg("%s: parsed %s (%s)", c->url, rc ? "no" : "yes", err);
        if (!c->ok) {
            if (!strstr(err, c->host_or_path) || !strstr(err, "--redis"))
                fail_msg("%s: message '%s' lacks '%s'", c->url, err, c->host_or_path);
            continue;
        }
        assert_string_equal(u.is_unix ? u.path : u.host, c->host_or_path);
        assert_int_equal(u.is_unix, strncmp(c->url, "unix", 4) == 0);
        if (!u.is_unix)
            assert_int_equal(u.port, c->port);
        assert_int_equal(u.db, c->db);
        assert_string_equal(u.user, c->user);
        assert_string_equal(u.password, c->password);
        char printed[400];
        srv_redis_url_print(&u, printed, sizeof printed);
        if (u.password[0] && strstr(printed, u.password))
            fail_msg("%s: printed with its password: %s", c->url, printed);
    }
    /* a path one byte too long for sun_path, and the longest that fits */
    char url[200] = "unix:///";
    memset(url + 8, 'a', 107);
    url[8 + 107] = 0;
    srv_redis_url u;
    assert_int_equal(srv_redis_url_parse(url, &u, err, sizeof err), -1);
    url[8 + 106] = 0;
    assert_int_equal(srv_redis_url_parse(url, &u, err, sizeof err), 0);
    assert_int_equal(strlen(u.path), 107);
    print_message("# %d URLs\n", n + 2);
}

/* ---- replies ------------------------------------------------------------------- */

/* The one reply the RESP bytes make (hiredis's reader), or NULL. */
static redisReply *reply_of(const char *resp)
{
    redisReader *rd = redisReaderCreate();
    void *rep = NULL;
    redisReaderFeed(rd, resp, strlen(resp));
    if (redisReaderGetReply(rd, &rep) != REDIS_OK)
        rep = NULL;
    redisReaderFree(rd);
    return rep;
}

typedef struct {
    const char  *resp;
    srv_redis_rc rc[4];         /* read as OK, INT, STR, INTS */
    long long    i;             /* INT's value when OK */
    const char  *s;             /* STR's value when OK (NULL: nil) */
} reply_case;

#define OK_ SRV_REDIS_OK
#define BAD SRV_REDIS_BAD_REPLY
#define ERR SRV_REDIS_ERROR
#define NOS SRV_REDIS_NOSCRIPT
static const reply_case reply_cases[] = {
    { "+OK\r\n", { OK_, BAD, OK_, BAD }, 0, "OK" },
    { "+QUEUED\r\n", { BAD, BAD, OK_, BAD }, 0, "QUEUED" },
    { "+\r\n", { BAD, BAD, OK_, BAD }, 0, "" },
    { "-ERR unknown command\r\n", { ERR, ERR, ERR, ERR }, 0, NULL },
    { "-NOSCRIPT No matching script\r\n", { NOS, NOS, NOS, NOS }, 0, NULL },
    { "-NOSCRIP\r\n", { ERR, ERR, ERR, ERR }, 0, NULL },
    { "-\r\n", { ERR, ERR, ERR, ERR }, 0, NULL },
    { ":42\r\n", { BAD, OK_, BAD, BAD }, 42, NULL },
    { ":-9223372036854775807\r\n", { BAD, OK_, BAD, BAD }, -INT64_MAX, NULL },
    { "$2\r\n17\r\n", { BAD, OK_, OK_, BAD }, 17, "17" },
    { "$2\r\n-3\r\n", { BAD, OK_, OK_, BAD }, -3, "-3" },
    { "$3\r\nabc\r\n", { BAD, BAD, OK_, BAD }, 0, "abc" },
    { "$0\r\n\r\n", { BAD, BAD, OK_, BAD }, 0, "" },
    { "$3\r\n1 2\r\n", { BAD, BAD, OK_, BAD }, 0, "1 2" },
    { "$2\r\n1\0\r\n", { BAD, BAD, BAD, BAD }, 0, NULL },   /* cut at the NUL by strlen: no reply */
    { "$20\r\n99999999999999999999\r\n", { BAD, BAD, OK_, BAD }, 0, "99999999999999999999" },
    { "$-1\r\n", { BAD, OK_, OK_, BAD }, 0, NULL },
    { "*-1\r\n", { BAD, OK_, OK_, BAD }, 0, NULL },
    { "*0\r\n", { BAD, BAD, BAD, BAD }, 0, NULL },
    { "*2\r\n:1\r\n:0\r\n", { BAD, BAD, BAD, OK_ }, 0, NULL },
    { "*1\r\n:7\r\n", { BAD, BAD, BAD, OK_ }, 0, NULL },
    { "*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n", { BAD, BAD, BAD, OK_ }, 0, NULL },
    { "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n", { BAD, BAD, BAD, BAD }, 0, NULL },
    { "*2\r\n:1\r\n$1\r\n2\r\n", { BAD, BAD, BAD, BAD }, 0, NULL },
    { "*2\r\n:1\r\n$-1\r\n", { BAD, BAD, BAD, BAD }, 0, NULL },
    { "*2\r\n*1\r\n:1\r\n:2\r\n", { BAD, BAD, BAD, BAD }, 0, NULL },
    { "*1\r\n-ERR inside\r\n", { BAD, BAD, BAD, BAD }, 0, NULL },
    { "*1\r\n+OK\r\n", { BAD, BAD, BAD, BAD }, 0, NULL },
};

static void check_reply(const char *what, const redisReply *r, const srv_redis_rc want_rc[4], long long i,
                        const char *s)
{
    for (int w = 0; w < 4; w++) {
        srv_redis_value v;
        char err[200] = "";
        srv_redis_rc rc = srv_redis_reply_read(r, (srv_redis_want)w, &v, err, sizeof err);
        if (rc != want_rc[w])
            fail_msg("%s read as %d: %d, expected %d (%s)", what, w, rc, want_rc[w], err);
        if (rc != OK_ && !err[0])
            fail_msg("%s read as %d: refused without a message", what, w);
        if (rc == OK_ && w == SRV_RW_INT && !v.nil)
            assert_true(v.i == i);
        if (rc == OK_ && w == SRV_RW_STR) {
            assert_int_equal(v.nil, s == NULL);
            if (s) {
                assert_int_equal(v.len, strlen(s));
                assert_memory_equal(v.s, s, v.len + 1);
            }
        }
        if (rc == OK_ && w == SRV_RW_INTS) {
            assert_true(v.n >= 1 && v.n <= SRV_REDIS_MAX_INTS);
            for (int k = 0; k < v.n; k++)
                assert_true(v.ints[k] == r->element[k]->integer);
        }
        if (rc == SRV_REDIS_ERROR || rc == SRV_REDIS_NOSCRIPT)
            assert_non_null(strstr(err, "Redis"));
        srv_redis_value_clear(&v);
    }
}

static void test_reply(void **state)
{
    int n = 0;
    for (size_t k = 0; k < sizeof reply_cases / sizeof *reply_cases; k++) {
        const reply_case *c = &reply_cases[k];
        redisReply *r = reply_of(c->resp);
        if (!r) {   /* only the case written to be cut short makes none: a NULL reply is DOWN */
            srv_redis_value v;
            char err[100];
            assert_non_null(strchr(c->resp, '1'));
            assert_int_equal(srv_redis_reply_read(NULL, SRV_RW_INT, &v, err, sizeof err), SRV_REDIS_DOWN);
            continue;
        }
        check_reply(c->resp, r, c->rc, c->i, c->s);
        freeReplyObject(r);
        n++;
    }
    /* what hiredis's reader never makes: an unknown type, an array with a hole */
    redisReply odd = { .type = 99, .str = "x", .len = 1 };
    const srv_redis_rc all_bad[4] = { BAD, BAD, BAD, BAD };
    check_reply("type 99", &odd, all_bad, 0, NULL);
    redisReply one = { .type = REDIS_REPLY_INTEGER, .integer = 5 };
    redisReply *holes[2] = { &one, NULL };
    redisReply arr = { .type = REDIS_REPLY_ARRAY, .elements = 2, .element = holes };
    check_reply("array with a NULL element", &arr, all_bad, 0, NULL);
    redisReply noelem = { .type = REDIS_REPLY_ARRAY, .elements = 1, .element = NULL };
    check_reply("array without elements", &noelem, all_bad, 0, NULL);
    redisReply errnull = { .type = REDIS_REPLY_ERROR, .str = NULL, .len = 0 };
    const srv_redis_rc all_err[4] = { ERR, ERR, ERR, ERR };
    check_reply("error without text", &errnull, all_err, 0, NULL);
    /* an array declared far larger than any reply of ours: the bounded
     * reader's error (hiredis 0.14 would allocate it all first), while one
     * within the bound still reads */
    const char *huge = "*1159580954\r\n:1\r\n", *fine = "*3\r\n:1\r\n:2\r\n:3\r\n";
    redisReader *rd = redisReaderCreate();
    srv_redis_reader_bound(rd);
    void *rep = NULL;
    redisReaderFeed(rd, fine, strlen(fine));
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
    assert_true(rep && ((redisReply *)rep)->elements == 3);
    freeReplyObject(rep);
    rep = NULL;
    redisReaderFeed(rd, huge, strlen(huge));
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_ERR);
    assert_null(rep);
    redisReaderFree(rd);
    print_message("# %d RESP replies x 4 wanted types, and 4 made by hand; an array of 1,159,580,954 refused\n", n);
}

/* ---- redis-server ---------------------------------------------------------------- */

typedef struct {
    pid_t pid;
    int   port;
    char  dir[64];              /* its unix socket's directory */
    char  sock[128];
    char  url[160];
    const char *password;       /* NULL: none */
} rserver;

static rserver rs;

/* 1 when a PING on the server's port is answered within 200 ms. */
static int redis_answers(const rserver *r)
{
    struct timeval tv = { 0, 200000 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        redisReply *rep = r->password ? redisCommand(c, "AUTH %s", r->password) : NULL;
        freeReplyObject(rep);
        rep = redisCommand(c, "PING");
        ok = rep && rep->type == REDIS_REPLY_STATUS;
        freeReplyObject(rep);
    }
    if (c)
        redisFree(c);
    return ok;
}

/* Starts redis-server on r->port (free_port when 0) and r->sock: 0 or -1. */
static int redis_start(rserver *r)
{
    if (!r->port)
        r->port = free_port();
    if (!r->dir[0]) {
        snprintf(r->dir, sizeof r->dir, "/tmp/mtserve-redis-XXXXXX");
        if (!mkdtemp(r->dir))
            return -1;
        snprintf(r->sock, sizeof r->sock, "%s/redis.sock", r->dir);
    }
    snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d", r->port);
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    const char *argv[20] = { REDIS_BIN, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--unixsocket", r->sock, "--unixsocketperm", "700", "--dir", r->dir,
                             "--enable-debug-command", "local" };     /* DEBUG SLEEP: a slow Redis */
    int n = 17;
    if (r->password) {
        argv[n++] = "--requirepass";
        argv[n++] = r->password;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execv(REDIS_BIN, (char *const *)argv);
        _exit(127);
    }
    r->pid = pid;
    track(pid);
    for (double t0 = now_s(); now_s() - t0 < 10; sleep_ms(50))
        if (redis_answers(r))
            return 0;
    print_error("redis-server on port %d did not answer\n", r->port);
    return -1;
}

static void redis_kill(rserver *r)
{
    if (r->pid <= 0)
        return;
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    untrack(r->pid);
    r->pid = 0;
}

/* ---- the client against a real Redis ------------------------------------------------ */

static srv_redis *client_of(const char *url_text)
{
    srv_redis_url url;
    char err[300];
    if (srv_redis_url_parse(url_text, &url, err, sizeof err))
        fail_msg("%s: %s", url_text, err);
    srv_redis_params p = { .timeout_ms = TIMEOUT_MS, .connections = 2, .prefix = "t:" };
    srv_redis *r = srv_redis_new(&url, &p);
    assert_non_null(r);
    return r;
}

static srv_redis_rc cmd(srv_redis *r, srv_redis_want want, srv_redis_value *v, const char *a0, const char *a1,
                        const char *a2)
{
    const char *argv[3] = { a0, a1, a2 };
    char err[200];
    return srv_redis_cmd(r, want, v, a2 ? 3 : a1 ? 2 : 1, argv, NULL, err, sizeof err);
}

static void test_client(void **state)
{
    rserver pw = { .password = "pa:ss@w" };
    assert_int_equal(redis_start(&pw), 0);
    char url[300];
    snprintf(url, sizeof url, "redis://:pa%%3Ass%%40w@127.0.0.1:%d/2", pw.port);
    srv_redis *r = client_of(url);
    srv_redis_value v;
    assert_int_equal(cmd(r, SRV_RW_OK, &v, "SET", "k", "41"), OK_);
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "INCR", "k", NULL), OK_);
    assert_int_equal(v.i, 42);
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "GET", "nothing", NULL), OK_);
    assert_true(v.nil && v.i == 0);
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "HSET", "k", "f"), ERR);      /* WRONGTYPE / arity: an error */
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "DBSIZE", NULL, NULL), OK_);
    assert_int_equal(v.i, 1);
    /* the same server through its unix socket, db 0: AUTH, and the key is not there */
    char u2[300];
    snprintf(u2, sizeof u2, "redis://:pa%%3Ass%%40w@127.0.0.1:%d", pw.port);
    srv_redis *r0 = client_of(u2);
    assert_int_equal(cmd(r0, SRV_RW_INT, &v, "EXISTS", "k", NULL), OK_);
    assert_int_equal(v.i, 0);
    srv_redis_free(r0);
    /* a wrong password: an error, and no connection kept */
    snprintf(u2, sizeof u2, "redis://:wrong@127.0.0.1:%d", pw.port);
    r0 = client_of(u2);
    assert_int_equal(cmd(r0, SRV_RW_STR, &v, "PING", NULL, NULL), SRV_REDIS_DOWN);
    srv_redis_stats st;
    srv_redis_stats_get(r0, &st);
    assert_int_equal(st.up, 0);
    assert_non_null(strstr(st.last_error, "WRONGPASS"));
    srv_redis_free(r0);
    /* scripts: EVAL the first time (NOSCRIPT), EVALSHA after; again EVAL after SCRIPT FLUSH */
    srv_redis_script s = { .source = "return {tonumber(ARGV[1]) + 1, 7}" };
    srv_redis_script_init(&s);
    assert_int_equal(strlen(s.sha1), 40);
    const char *args[1] = { "41" };
    char err[200];
    for (int round = 0; round < 3; round++) {
        if (round == 2)
            assert_int_equal(cmd(r, SRV_RW_OK, &v, "SCRIPT", "FLUSH", NULL), OK_);
        srv_redis_stats_get(r, &st);
        long calls = st.calls;
        assert_int_equal(srv_redis_eval(r, &s, 0, 1, args, SRV_RW_INTS, &v, err, sizeof err), OK_);
        assert_int_equal(v.n, 2);
        assert_true(v.ints[0] == 42 && v.ints[1] == 7);
        srv_redis_stats_get(r, &st);
        assert_int_equal(st.calls - calls, round == 1 ? 1 : 2);   /* EVALSHA alone once Redis has it */
    }
    srv_redis_free(r);
    /* the unix socket */
    redis_kill(&pw);
    pw.password = NULL;
    assert_int_equal(redis_start(&pw), 0);
    snprintf(u2, sizeof u2, "unix://%s?db=1", pw.sock);
    r = client_of(u2);
    assert_int_equal(cmd(r, SRV_RW_STR, &v, "PING", NULL, NULL), OK_);
    assert_string_equal(v.s, "PONG");
    srv_redis_value_clear(&v);
    srv_redis_free(r);
    redis_kill(&pw);
    unlink(pw.sock);
    rmdir(pw.dir);
}

/* Calls PING until it is answered (bounded): the seconds it took, or -1. */
static double until_up(srv_redis *r, double limit_s)
{
    double t0 = now_s();
    srv_redis_value v;
    while (now_s() - t0 < limit_s) {
        if (cmd(r, SRV_RW_STR, &v, "PING", NULL, NULL) == OK_) {
            srv_redis_value_clear(&v);
            return now_s() - t0;
        }
        sleep_ms(20);
    }
    return -1;
}

static void test_client_down(void **state)
{
    assert_int_equal(redis_start(&rs), 0);
    srv_redis *r = client_of(rs.url);
    srv_redis_value v;
    assert_true(until_up(r, 2) >= 0);
    /* stopped: the call waits its timeout, no more; the next ones are skipped at once */
    kill(rs.pid, SIGSTOP);
    double t0 = now_s();
    assert_int_equal(cmd(r, SRV_RW_STR, &v, "PING", NULL, NULL), SRV_REDIS_DOWN);
    double first = now_s() - t0;
    /* 1.5 s of calls every 5 ms: every one skipped at once; the client's own
     * thread probes after each backoff (0.1, 0.2, 0.4, 0.8 s), no caller waits */
    double worst = 0, t_end = now_s() + 1.5;
    int calls = 0, slow = 0;
    while (now_s() < t_end) {
        t0 = now_s();
        assert_int_equal(cmd(r, SRV_RW_STR, &v, "PING", NULL, NULL), SRV_REDIS_DOWN);
        double dt = now_s() - t0;
        worst = dt > worst ? dt : worst;
        slow += dt > TIMEOUT_MS * 0.5e-3;
        calls++;
        sleep_ms(5);
    }
    srv_redis_stats st;
    srv_redis_stats_get(r, &st);
    print_message("# stopped Redis: first call %.0f ms; then %d calls in 1.5 s, %d waited (at most %.1f ms), %ld "
                  "skipped at once; %ld background probes\n", first * 1e3, calls, slow, worst * 1e3, st.skipped,
                  st.probes);
    assert_true(first >= TIMEOUT_MS * 0.9e-3 && first < 3 * TIMEOUT_MS * 1e-3);
    assert_int_equal(slow, 0);                      /* the probes are the prober's: no call waits */
    assert_true(st.probes >= 2 && st.probes <= 5);  /* 0.1 + 0.2 + 0.4 + 0.8 s, each waiting one timeout */
    assert_true(st.skipped >= calls);
    assert_int_equal(st.up, 0);
    kill(rs.pid, SIGCONT);
    double back = until_up(r, 10);
    print_message("# continued: answered again after %.2f s\n", back);
    assert_true(back >= 0);
    /* killed, then started again on its port */
    redis_kill(&rs);
    assert_int_equal(cmd(r, SRV_RW_STR, &v, "PING", NULL, NULL), SRV_REDIS_DOWN);
    sleep_ms(1000);
    assert_int_equal(redis_start(&rs), 0);
    back = until_up(r, 10);
    print_message("# restarted: answered again after %.2f s\n", back);
    assert_true(back >= 0 && back < 6);     /* the backoff is at most 5 s */
    srv_redis_stats_get(r, &st);
    assert_true(st.up && st.connects >= 3);
    srv_redis_free(r);
}

typedef struct {
    int    port;
    double seconds;
} sleeper;

/* DEBUG SLEEP on its own connection: Redis answers nobody meanwhile. */
static void *sleep_main(void *arg)
{
    const sleeper *z = arg;
    redisContext *c = redisConnect("127.0.0.1", z->port);
    redisReply *rep = c && !c->err ? redisCommand(c, "DEBUG SLEEP %.3f", z->seconds) : NULL;
    freeReplyObject(rep);
    if (c)
        redisFree(c);
    return NULL;
}

/* A Redis slower than the budget: a quick call gives up after the budget,
 * the next ones skip it at once (SLOW) while full calls still wait for it,
 * and quick calls use it again once a background probe is quick. */
static void test_client_slow(void **state)
{
    srv_redis_url url;
    char err[300];
    assert_int_equal(srv_redis_url_parse(rs.url, &url, err, sizeof err), 0);
    srv_redis_params p = { .timeout_ms = 1000, .budget_ms = 30, .connections = 2, .prefix = "t:" };
    srv_redis *r = srv_redis_new(&url, &p);
    srv_redis_value v;
    assert_true(until_up(r, 2) >= 0);
    const char *ping[1] = { "PING" };
    sleeper z = { rs.port, 0.4 };
    pthread_t t;
    pthread_create(&t, NULL, sleep_main, &z);
    sleep_ms(50);                                   /* Redis is asleep */
    double t0 = now_s();
    assert_int_equal(srv_redis_cmd_quick(r, SRV_RW_STR, &v, 1, ping, NULL, err, sizeof err), SRV_REDIS_SLOW);
    double first = now_s() - t0;
    t0 = now_s();
    assert_int_equal(srv_redis_cmd_quick(r, SRV_RW_STR, &v, 1, ping, NULL, err, sizeof err), SRV_REDIS_SLOW);
    double second = now_s() - t0;
    srv_redis_stats st;
    srv_redis_stats_get(r, &st);
    assert_true(st.slow && st.up && st.late == 1);
    t0 = now_s();
    assert_int_equal(cmd(r, SRV_RW_STR, &v, "PING", NULL, NULL), OK_);     /* a full call waits for it */
    srv_redis_value_clear(&v);
    double full = now_s() - t0;
    pthread_join(t, NULL);
    double back = -1;
    for (t0 = now_s(); now_s() - t0 < 5; sleep_ms(10)) {
        if (srv_redis_cmd_quick(r, SRV_RW_STR, &v, 1, ping, NULL, err, sizeof err) == OK_) {
            back = now_s() - t0;
            srv_redis_value_clear(&v);
            break;
        }
    }
    srv_redis_stats_get(r, &st);
    print_message("# Redis asleep 0.4 s, budget 30 ms: a quick call gave up after %.0f ms, the next in %.1f ms; a "
                  "full call waited %.0f ms; quick calls answered again %.2f s after it woke (%ld probes)\n",
                  first * 1e3, second * 1e3, full * 1e3, back, st.probes);
    assert_true(first >= 0.025 && first < 0.3);
    assert_true(second < 0.015);
    assert_true(full > 0.1 && full < 1.0);
    assert_true(back >= 0 && back < 2);
    assert_true(!st.slow && st.probes >= 1);
    srv_redis_free(r);
}

/* The lease scripts (service/file_lease.c) against a real Redis, two
 * replicas A and B by their tokens: a store within the budget, renewals, a
 * claim only once the lease expired and by one of two, a result written only
 * by the holder and only once (a retry of its own is taken, another's
 * refused and counted), the orphans listed, a drop giving the bytes back. */
static void test_lease_scripts(void **state)
{
    srv_redis *r = client_of(rs.url);
    srv_lease_ctx A = { .r = r, .me = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", .lease_ms = 200, .ttl_s = 60, .budget = 1000 };
    srv_lease_ctx B = A;
    memcpy(B.me, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", SRV_FILE_ID_LEN);
    const char *id = "0123456789abcdef0123456789abcde1", *id2 = "0123456789abcdef0123456789abcde2";
    srv_redis_value v;
    cmd(r, SRV_RW_INT, &v, "DEL", "t:files:bytes", NULL);
    cmd(r, SRV_RW_INT, &v, "DEL", "t:files:held", NULL);
    cmd(r, SRV_RW_INT, &v, "DEL", "t:files:stats", NULL);
    long used = 0;
    char err[200], src[700];
    memset(src, 'x', sizeof src);
    src[3] = 0;                                 /* binary: a NUL inside */
    assert_int_equal(srv_lease_store(&A, id, src, sizeof src, "{}", &used, err, sizeof err), SRV_LEASE_OK);
    assert_int_equal(used, 702);
    assert_int_equal(srv_lease_store(&B, id2, src, sizeof src, "{}", &used, err, sizeof err), SRV_LEASE_FULL);
    assert_int_equal(used, 702);                /* 702 + 702 > 1000: nothing stored */
    char ids[4][SRV_FILE_ID_LEN];
    assert_int_equal(srv_lease_orphans(&B, ids, 4), 0);      /* A holds it */
    assert_int_equal(srv_lease_claim(&B, id), SRV_LEASE_LOST);
    assert_int_equal(srv_lease_hold(&A, id, "{\"s\":1}"), SRV_LEASE_OK);
    sleep_ms(300);                              /* A stops renewing: its lease expires */
    assert_int_equal(srv_lease_orphans(&B, ids, 4), 1);
    assert_string_equal(ids[0], id);
    assert_int_equal(srv_lease_claim(&B, id), SRV_LEASE_OK);
    assert_int_equal(srv_lease_claim(&A, id), SRV_LEASE_LOST);    /* one winner */
    char *opts, *got;
    size_t olen, glen;
    assert_int_equal(srv_lease_load(&B, id, &opts, &olen, &got, &glen), 0);
    assert_int_equal(glen, sizeof src);
    assert_memory_equal(got, src, sizeof src);
    free(opts);
    free(got);
    assert_int_equal(srv_lease_hold(&A, id, "{\"s\":2}"), SRV_LEASE_LOST);              /* A was paused */
    assert_int_equal(srv_lease_finish(&A, id, "{\"s\":3}", "A's", 3, 1), SRV_LEASE_LOST);
    assert_int_equal(srv_lease_finish(&B, id, "{\"s\":4}", "B's", 3, 1), SRV_LEASE_OK);
    assert_int_equal(srv_lease_finish(&B, id, "{\"s\":4}", "B's", 3, 1), SRV_LEASE_OK);  /* a retry of its own */
    assert_int_equal(srv_lease_finish(&A, id, "{\"s\":5}", "A's", 3, 1), SRV_LEASE_LOST);
    assert_int_equal(srv_lease_hold(&B, id, NULL), SRV_LEASE_GONE);     /* ended by B: not lost */
    assert_int_equal(srv_lease_hold(&A, id, NULL), SRV_LEASE_LOST);
    assert_int_equal(srv_lease_claim(&A, id), SRV_LEASE_GONE);
    assert_int_equal(cmd(r, SRV_RW_STR, &v, "GET", "t:file:0123456789abcdef0123456789abcde1:data", NULL), OK_);
    assert_string_equal(v.s, "B's");
    srv_redis_value_clear(&v);
    assert_int_equal(cmd(r, SRV_RW_STR, &v, "GET", "t:file:0123456789abcdef0123456789abcde1", NULL), OK_);
    assert_string_equal(v.s, "{\"s\":4}");
    srv_redis_value_clear(&v);
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "HGET", "t:files:stats", "completed"), OK_);
    assert_int_equal(v.i, 1);
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "HGET", "t:files:stats", "refused"), OK_);
    assert_int_equal(v.i, 2);
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "HGET", "t:files:stats", "taken_over"), OK_);
    assert_int_equal(v.i, 1);
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "GET", "t:files:bytes", NULL), OK_);
    assert_int_equal(v.i, 0);                   /* the finished job's bytes given back */
    /* a store that never started is dropped: the room is back */
    assert_int_equal(srv_lease_store(&B, id2, src, sizeof src, "{}", &used, err, sizeof err), SRV_LEASE_OK);
    srv_lease_drop(&B, id2);
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "GET", "t:files:bytes", NULL), OK_);
    assert_int_equal(v.i, 0);
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "EXISTS", "t:file:0123456789abcdef0123456789abcde2:src", NULL), OK_);
    assert_int_equal(v.i, 0);
    srv_redis_free(r);
}

/* The shared cache's bound (rcache.c) against a real Redis: entries of
 * binary keys and values (NUL bytes in both), 256 KiB in all, 1 KiB each at
 * most; written past the bound, the oldest go first and the count stays
 * within it; a hit is the key's, byte for byte. */
static void test_rcache(void **state)
{
    rserver own = { 0 };
    assert_int_equal(redis_start(&own), 0);
    srv_redis *r = client_of(own.url);
    srv_rcache *c = srv_rcache_new(r, 256 * 1024);
    assert_non_null(c);
    char key[64], val[900];
    void *got;
    size_t len;
    int n = 1000;
    for (int i = 0; i < n; i++) {
        memset(key, 0, sizeof key);
        snprintf(key + 1, sizeof key - 1, "k%d", i);            /* a NUL first: binary-safe or nothing */
        memset(val, 'a' + i % 26, sizeof val);
        val[7] = 0;
        srv_rcache_put(c, key, sizeof key, val, sizeof val);
        srv_rcache_flush(c);        /* written in order (a burst beyond the queue is skipped: below) */
    }
    int first_kept = -1, kept = 0;
    for (int i = 0; i < n; i++) {
        memset(key, 0, sizeof key);
        snprintf(key + 1, sizeof key - 1, "k%d", i);
        if (srv_rcache_get(c, key, sizeof key, &got, &len)) {
            assert_int_equal(len, sizeof val);
            assert_int_equal(((char *)got)[0], 'a' + i % 26);
            assert_int_equal(((char *)got)[7], 0);
            free(got);
            first_kept = first_kept < 0 ? i : first_kept;
            kept++;
        } else {
            assert_true(first_kept < 0);        /* dropped: only the oldest, none after a kept one */
        }
    }
    srv_redis_value v;
    assert_int_equal(cmd(r, SRV_RW_INT, &v, "GET", "t:tc:bytes", NULL), OK_);
    print_message("# shared cache of 256 KiB: %d of %d entries of 0.9 KiB kept (from #%d), %lld bytes counted\n",
                  kept, n, first_kept, v.i);
    assert_true(v.i <= 256 * 1024 && v.i > 200 * 1024);
    assert_true(kept > 200 && kept < 300 && first_kept == n - kept);
    /* over 1/256 of the budget: not written */
    char big[2000] = { 0 };
    srv_rcache_put(c, "big", 3, big, sizeof big);
    assert_int_equal(srv_rcache_get(c, "big", 3, &got, &len), 0);
    size_t mlen = 0;
    char *m = srv_rcache_metrics(c, &mlen);
    assert_non_null(strstr(m, "mtserve_redis_cache_skipped_total 1\n"));
    assert_non_null(strstr(m, "mtserve_redis_cache_puts_total 1000\n"));
    free(m);
    /* a burst of 600 new entries (540 KB) at once while Redis is stopped: the
     * writer thread waits on its first, those past the queue's bound (the
     * budget, 256 KiB) are skipped, none is lost unaccounted for, and the caller
     * never waited for Redis.  (Redis running, a writer faster than the caller,
     * under TSan, once kept up with all 600: nothing to bound, CI.) */
    kill(own.pid, SIGSTOP);
    double t0 = now_s();
    for (int i = 0; i < 600; i++) {
        snprintf(key + 1, sizeof key - 1, "burst%d", i);
        srv_rcache_put(c, key, sizeof key, val, sizeof val);
    }
    double queued_s = now_s() - t0;
    kill(own.pid, SIGCONT);
    srv_rcache_flush(c);
    m = srv_rcache_metrics(c, &mlen);
    long puts = atol(strstr(m, "\nmtserve_redis_cache_puts_total ") + 32);
    long skipped = atol(strstr(m, "\nmtserve_redis_cache_skipped_total ") + 35);
    free(m);
    print_message("# a burst of 600 writes queued in %.1f ms: %ld written, %ld skipped (queue full)\n",
                  queued_s * 1e3, puts - 1000, skipped - 1);
    assert_true(skipped > 1 && puts > 1000 + 250 && puts - 1000 + skipped - 1 == 600);
    srv_rcache_free(c);
    srv_redis_free(r);
    redis_kill(&own);
    unlink(own.sock);
    rmdir(own.dir);
}

/* ---- replicas ------------------------------------------------------------------------- */

#define RL_KEY     "rl-key"
#define RL_N       (tsan() ? 60 : 240)     /* its requests per minute (a TSan replica answers fewer) */
#define Q_KEY      "q-key"
#define Q_CHARS    1000         /* its char-quota */
#define FREE_KEY   "free-key"
#define SEED_KEY   "seed-key"   /* counted in a usage file first, then in Redis */

static server rep[N_REPLICAS];
static char   keys_file[128];

static int replicas_start(void)
{
    static char redis_arg[200];
    snprintf(redis_arg, sizeof redis_arg, "%s", rs.url);
    /* 250 ms: the load here crowds two cores; the timeout's own test is test_client_down's (100 ms), the
     * budget's test_client_slow's (here as long as the timeout: the shared counts are what is tested) */
    const char *tmo = tsan() ? "1000" : "250";
    const char *const args[] = { "--model", MODEL, "--redis", redis_arg, "--redis-timeout", tmo, "--redis-budget", tmo,
                                 "--api-keys", keys_file, "--cache-mb", "16", "--redis-cache-mb", "8", NULL };
    for (int i = 0; i < N_REPLICAS; i++)
        if (server_start(&rep[i], args))
            return -1;
    return 0;
}

static void replicas_stop(void)
{
    for (int i = 0; i < N_REPLICAS; i++)
        if (rep[i].pid > 0) {
            int st = server_stop(&rep[i]);
            if (st != 0)
                fail_msg("replica %d stopped with %d", i, st);
            rep[i].pid = 0;
        }
}

typedef struct {
    const char *key;
    const char *text;
    double      until;          /* stop at this time */
    int         max_200;        /* stop after this many 200s in all (0: no) */
    _Atomic int *n200, *nrefused, *nfailed;
    _Atomic int *stop;
    int         first;          /* the replica it starts on */
    double      t_first, t_last;    /* of its requests */
    double      worst_s;        /* its slowest request */
} sender;

static void *send_main(void *arg)
{
    sender *s = arg;
    CURL *c = curl_easy_init();
    char auth[128], body[1200];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->key);
    snprintf(body, sizeof body, "{\"text\": \"%s\", \"max_length\": " MAX_LENGTH "}", s->text);
    req_opts o = { .body = body, .extra = { auth }, .timeout_ms = 30000 };
    s->t_first = now_s();
    for (int i = s->first; now_s() < s->until && !atomic_load(s->stop); i++) {
        double t0 = now_s();
        reply r = http_req_on(c, &rep[i % N_REPLICAS], "/translate", &o);
        double dt = now_s() - t0;
        s->worst_s = dt > s->worst_s ? dt : s->worst_s;
        s->t_last = now_s();
        if (r.status == 200) {
            if (atomic_fetch_add(s->n200, 1) + 1 == s->max_200 && s->max_200)
                atomic_store(s->stop, 1);
        } else if (r.status == 429 || r.status == 456) {
            atomic_fetch_add(s->nrefused, 1);
            sleep_ms(5);    /* a client waits a little (not the whole Retry-After: the limit is pressed) */
        } else {
            atomic_fetch_add(s->nfailed, 1);
            print_error("replica %d: %ld %s\n", i % N_REPLICAS, r.status, r.body ? r.body : "");
        }
        reply_free(&r);
    }
    curl_easy_cleanup(c);
    return NULL;
}

typedef struct {
    int    n200, refused, failed;
    double seconds, worst_s;
} load_result;

/* k senders with key and text over the replicas for seconds (or until max_200). */
static load_result load(int k, const char *key, const char *text, double seconds, int max_200)
{
    _Atomic int n200 = 0, nref = 0, nfail = 0, stop = 0;
    sender s[8];
    pthread_t t[8];
    double until = now_s() + seconds;
    for (int i = 0; i < k; i++) {
        s[i] = (sender){ .key = key, .text = text, .until = until, .max_200 = max_200, .n200 = &n200,
                         .nrefused = &nref, .nfailed = &nfail, .stop = &stop, .first = i };
        pthread_create(&t[i], NULL, send_main, &s[i]);
    }
    load_result res = { 0 };
    double first = 1e30, last = 0;
    for (int i = 0; i < k; i++) {
        pthread_join(t[i], NULL);
        first = s[i].t_first < first ? s[i].t_first : first;
        last = s[i].t_last > last ? s[i].t_last : last;
        res.worst_s = s[i].worst_s > res.worst_s ? s[i].worst_s : res.worst_s;
    }
    res.n200 = n200, res.refused = nref, res.failed = nfail;
    res.seconds = last - first;
    return res;
}

static void test_rate_limit(void **state)
{
    /* a bucket of RL_N, refilled at RL_N a minute, shared: N + N x elapsed / 60 */
    load_result r = load(6, RL_KEY, "Hello.", tsan() ? 8.0 : 12.0, 0);
    double expected = RL_N + RL_N * r.seconds / 60.0;
    double err = (r.n200 - expected) / expected, local = 0;
    for (int i = 0; i < N_REPLICAS; i++)      /* verdicts a replica took alone (Redis slow): none expected */
        local += metric_auth(&rep[i], "mtserve_redis_fallbacks_total{kind=\"limit\"}", "Authorization: Bearer " FREE_KEY);
    print_message("# rate limit %d/min through %d replicas for %.1f s: %d passed, %d refused (expected %.0f: "
                  "%+.1f %%; %.0f verdicts taken locally)\n", RL_N, N_REPLICAS, r.seconds, r.n200, r.refused, expected,
                  err * 100, local);
    assert_int_equal(r.failed, 0);
    assert_true(r.refused > r.n200);    /* it was pressed well past the limit */
    assert_true(err > -0.05 && err < 0.05);
}

static long usage_of(const server *s, const char *key)
{
    char auth[128];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
    req_opts o = { .method = "GET", .extra = { auth } };
    reply r = http_req(s, "/v2/usage", &o);
    json_t *j = expect_json(&r, 200);
    long n = (long)json_integer_value(json_object_get(j, "character_count"));
    json_decref(j);
    reply_free(&r);
    return n;
}

static void test_quota(void **state)
{
    /* 100 characters a request: exactly Q_CHARS / 100 pass, whichever replica */
    const char *text = "The package provides documentation, examples and tools for developers of this software.";
    char hundred[200];
    snprintf(hundred, sizeof hundred, "%s%s", text, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
    assert_true(strlen(hundred) > 100);
    hundred[100] = 0;
    load_result r = load(6, Q_KEY, hundred, 4.0, 0);
    print_message("# quota %d characters, 100 a request, 3 replicas: %d passed, %d refused\n", Q_CHARS, r.n200,
                  r.refused);
    assert_int_equal(r.failed, 0);
    assert_int_equal(r.n200, Q_CHARS / 100);
    for (int i = 0; i < N_REPLICAS; i++)
        assert_int_equal(usage_of(&rep[i], Q_KEY), Q_CHARS);
    /* every replica restarted: the count is Redis's, still there */
    replicas_stop();
    assert_int_equal(replicas_start(), 0);
    for (int i = 0; i < N_REPLICAS; i++)
        assert_int_equal(usage_of(&rep[i], Q_KEY), Q_CHARS);
    r = load(3, Q_KEY, "Hi.", 2.0, 0);
    print_message("# after a restart of all three: %d passed, %d refused\n", r.n200, r.refused);
    assert_int_equal(r.n200, 0);
    assert_true(r.refused > 0);
}

/* GET path on s with FREE_KEY: the reply (caller frees). */
static reply get_key(const server *s, const char *path)
{
    req_opts o = { .method = "GET", .extra = { "Authorization: Bearer " FREE_KEY }, .timeout_ms = 30000 };
    return http_req(s, path, &o);
}

/* The path of a URL ("http://host/p" -> "/p"). */
static const char *path_of(const char *url)
{
    const char *p = strstr(url, "://");
    return p ? strchr(p + 3, '/') : url;
}

/* An async file job of units paragraphs submitted to s: its status and file paths. */
static void submit_file(const server *s, int units, char status[128], char file[1024])
{
    char *in = malloc((size_t)units * 64 + 1);
    in[0] = 0;
    for (int i = 0; i < units; i++)
        sprintf(in + strlen(in), "This is sentence number %d of the file.\n\n", i + 1);
    http_buf b;
    assert_int_equal(post_file(s, "notes.txt", in, strlen(in), &b, 0, "source", "en", "target", "fr", "async",
                               "true", "api_key", FREE_KEY, NULL), 202);
    free(in);
    json_t *j = json_loadb(b.p, b.n, 0, NULL);
    free(b.p);
    assert_non_null(j);
    snprintf(status, 128, "%s", json_string_value(json_object_get(j, "status_url")));
    snprintf(file, 1024, "%s", path_of(json_string_value(json_object_get(j, "translatedFileUrl"))));
    json_decref(j);
}

/* Polls status on s until the job is no longer running (bounded; 404 taken
 * for "not yet" during the first grace_s): asserts "done" with units of
 * units and the file's path; *polls, *running_seen. */
static void poll_done(const server *s, const char *status, const char *file, int units, double grace_s, int *polls,
                      int *running_seen)
{
    const char *st = "";
    json_t *o = NULL;
    *polls = *running_seen = 0;
    for (double t0 = now_s(); now_s() - t0 < 300; sleep_ms(50), (*polls)++) {
        reply r = get_key(s, status);
        if (r.status == 404 && now_s() - t0 < grace_s) {
            reply_free(&r);
            continue;
        }
        json_decref(o);
        o = expect_json(&r, 200);
        reply_free(&r);
        st = json_string_value(json_object_get(o, "state"));
        *running_seen |= !strcmp(st, "running");
        if (strcmp(st, "running"))
            break;
    }
    assert_string_equal(st, "done");
    assert_int_equal(json_integer_value(json_object_get(o, "done")), units);
    assert_int_equal(json_integer_value(json_object_get(o, "total")), units);
    assert_string_equal(path_of(json_string_value(json_object_get(o, "translatedFileUrl"))), file);
    json_decref(o);
}

/* file downloaded from a and from b: the same bytes, and a translation; its size. */
static size_t same_download(const server *a, const server *b, const char *file, int units)
{
    reply here = get_key(a, file), there = get_key(b, file);
    assert_int_equal(here.status, 200);
    assert_int_equal(there.status, 200);
    assert_true(here.len > (size_t)units && here.len == there.len);
    assert_memory_equal(here.body, there.body, here.len);
    assert_null(strstr(here.body, "This is sentence number"));     /* translated, not the source */
    size_t n = there.len;
    reply_free(&here);
    reply_free(&there);
    return n;
}

static void test_file_jobs(void **state)
{
    /* 40 paragraphs (8 under TSan): several batches, progress published while it runs */
    int units = tsan() ? 8 : 40, polls, running_seen;
    char status[128], file[1024];
    submit_file(&rep[0], units, status, file);
    poll_done(&rep[1], status, file, units, 0, &polls, &running_seen);  /* a replica that never saw the job */
    print_message("# file job taken by replica 1: %d polls on replica 2 until done (running seen: %d)\n", polls,
                  running_seen);
    size_t n = same_download(&rep[0], &rep[2], file, units);
    print_message("# downloaded from replica 3: %zu bytes, equal to replica 1's\n", n);
    /* deleted where it ran: gone everywhere; an unknown id: 404 on every replica */
    req_opts del = { .method = "DELETE", .extra = { "Authorization: Bearer " FREE_KEY } };
    reply d = http_req(&rep[0], status, &del);
    assert_int_equal(d.status, 200);
    reply_free(&d);
    for (int i = 0; i < N_REPLICAS; i++) {
        reply r = get_key(&rep[i], file);
        assert_int_equal(r.status, 404);
        reply_free(&r);
        r = get_key(&rep[i], "/translate_file/0123456789abcdef0123456789abcdef");
        assert_int_equal(r.status, 404);
        reply_free(&r);
    }
}

/* ---- DeepL's documents through Redis ----------------------------------------------- */

/* POST /v2/document/ID[suffix] on s with document_key. */
static reply doc_call(const server *s, const char *id, const char *suffix, const char *doc_key)
{
    char path[128], body[128];
    snprintf(path, sizeof path, "/v2/document/%s%s", id, suffix);
    snprintf(body, sizeof body, "document_key=%s", doc_key);
    req_opts o = { .method = "POST", .body = body, .content_type = "application/x-www-form-urlencoded",
                   .extra = { "Authorization: DeepL-Auth-Key " FREE_KEY }, .timeout_ms = 30000 };
    return http_req(s, path, &o);
}

/* text through /translate on s (en -> fr): malloc'd. */
static char *plain_translation(const server *s, const char *text)
{
    char body[300];
    snprintf(body, sizeof body, "{\"text\": \"%s\", \"source\": \"en\", \"target\": \"fr\"}", text);
    req_opts o = { .body = body, .extra = { "Authorization: Bearer " FREE_KEY }, .timeout_ms = 30000 };
    reply r = http_req(s, "/translate", &o);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    char *t = strdup(json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0),
                                                       "text")));
    json_decref(j);
    return t;
}

static void test_documents(void **state)
{
    const char *b = "----mtserve-test-boundary";
    char body[1024], ct[96];
    int n = snprintf(body, sizeof body, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
                     "Content-Type: text/plain\r\n\r\nThe cat sleeps on the sofa.\n\nIt is a nice day.\n\r\n"
                     "--%s\r\nContent-Disposition: form-data; name=\"target_lang\"\r\n\r\nFR\r\n"
                     "--%s\r\nContent-Disposition: form-data; name=\"source_lang\"\r\n\r\nEN\r\n--%s--\r\n", b, b, b, b);
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", b);
    req_opts o = { .method = "POST", .body = body, .body_len = (size_t)n, .content_type = ct,
                   .extra = { "Authorization: DeepL-Auth-Key " FREE_KEY }, .timeout_ms = 30000 };
    reply r = http_req(&rep[0], "/v2/document", &o);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    char id[40], key[40];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "document_id")));
    snprintf(key, sizeof key, "%s", json_string_value(json_object_get(j, "document_key")));
    json_decref(j);
    /* uploaded to replica 1: its status on replica 2 until done */
    const char *status = "";
    int polls = 0;
    for (double t0 = now_s(); now_s() - t0 < 120 && strcmp(status, "done"); polls++) {
        r = doc_call(&rep[1], id, "", key);
        j = expect_json(&r, 200);
        reply_free(&r);
        status = strcmp(json_string_value(json_object_get(j, "status")), "done") ? "" : "done";
        if (*status)
            assert_int_equal(json_integer_value(json_object_get(j, "billed_characters")), 44);
        json_decref(j);
        if (!*status)
            sleep_ms(50);
    }
    assert_string_equal(status, "done");
    /* a wrong key: as an unknown document, on the replica that runs it and on the others */
    for (int i = 0; i < N_REPLICAS; i++) {
        r = doc_call(&rep[i], id, "", "0123456789abcdef0123456789abcdef");
        assert_int_equal(r.status, 404);
        reply_free(&r);
    }
    /* the result from replica 3: each paragraph as /translate has it */
    r = doc_call(&rep[2], id, "/result", key);
    assert_int_equal(r.status, 200);
    char *t1 = plain_translation(&rep[2], "The cat sleeps on the sofa.");
    char *t2 = plain_translation(&rep[2], "It is a nice day.");
    char want[2048];
    snprintf(want, sizeof want, "%s\n\n%s\n", t1, t2);
    print_message("# document uploaded to replica 1: done after %d polls on replica 2, %zu bytes from replica 3\n",
                  polls, r.len);
    assert_string_equal(r.body, want);
    free(t1);
    free(t2);
    reply_free(&r);
    /* downloaded once: gone on every replica, the one that ran it too */
    for (int i = 0; i < N_REPLICAS; i++) {
        r = doc_call(&rep[i], id, "/result", key);
        assert_int_equal(r.status, 404);
        reply_free(&r);
    }
}

/* ---- stored glossaries (DeepL's API) through Redis ---------------------------------- */

/* method path on s with key and a JSON body (NULL: none): the reply. */
static reply req_json(const server *s, const char *method, const char *path, const char *key, const char *body)
{
    char auth[128];
    snprintf(auth, sizeof auth, "Authorization: DeepL-Auth-Key %s", key);
    req_opts o = { .method = method, .body = body, .content_type = "application/json", .extra = { auth },
                   .timeout_ms = 30000 };
    return http_req(s, path, &o);
}

/* The text of a translation of text on s: through DeepL's /v2/translate with
 * glossary_id (NULL: /translate with terms as "glossary"); malloc'd. */
static char *translated(const server *s, const char *text, const char *glossary_id, const char *terms)
{
    char body[600];
    if (glossary_id)
        snprintf(body, sizeof body, "{\"text\": [\"%s\"], \"source_lang\": \"EN\", \"target_lang\": \"FR\", "
                 "\"glossary_id\": \"%s\"}", text, glossary_id);
    else
        snprintf(body, sizeof body, "{\"text\": \"%s\", \"source\": \"en\", \"target\": \"fr\", \"glossary\": %s}",
                 text, terms);
    reply r = req_json(s, "POST", glossary_id ? "/v2/translate" : "/translate", FREE_KEY, body);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    const char *t = json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0), "text"));
    assert_non_null(t);
    char *out = strdup(t);
    json_decref(j);
    return out;
}

/* GET /v2/glossaries/ID/entries on s: its status, and the body into out. */
static long entries_on(const server *s, const char *id, char *out, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "/v2/glossaries/%s/entries", id);
    reply r = req_json(s, "GET", path, FREE_KEY, NULL);
    long st = r.status;
    snprintf(out, len, "%s", r.body ? r.body : "");
    reply_free(&r);
    return st;
}

static void test_glossaries(void **state)
{
    const char *text = "The cat sleeps on the sofa.";
    reply r = req_json(&rep[0], "POST", "/v2/glossaries", FREE_KEY,
                       "{\"name\": \"Pets\", \"source_lang\": \"en\", \"target_lang\": \"fr\", "
                       "\"entries\": \"cat\\tchaton\\nsofa\\tdivan\", \"entries_format\": \"tsv\"}");
    json_t *g = expect_json(&r, 201);
    reply_free(&r);
    char id[64], path[128], body[400];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(g, "glossary_id")));
    assert_int_equal(strlen(id), 36);
    /* made on replica 1: listed on 2, read on 3, the same JSON */
    r = req_json(&rep[1], "GET", "/v2/glossaries", FREE_KEY, NULL);
    json_t *all = expect_json(&r, 200);
    reply_free(&r);
    assert_int_equal(json_array_size(json_object_get(all, "glossaries")), 1);
    assert_true(json_equal(json_array_get(json_object_get(all, "glossaries"), 0), g));
    json_decref(all);
    snprintf(path, sizeof path, "/v2/glossaries/%s", id);
    r = req_json(&rep[2], "GET", path, FREE_KEY, NULL);
    json_t *again = expect_json(&r, 200);
    reply_free(&r);
    assert_true(json_equal(again, g));
    json_decref(again);
    assert_int_equal(entries_on(&rep[2], id, body, sizeof body), 200);
    assert_string_equal(body, "cat\tchaton\nsofa\tdivan");
    /* another key sees none of it */
    r = req_json(&rep[1], "GET", path, RL_KEY, NULL);
    assert_int_equal(r.status, 404);
    reply_free(&r);
    /* applied on replica 3 as the same terms given inline */
    char *with = translated(&rep[2], text, id, NULL);
    char *inline_terms = translated(&rep[2], text, NULL, "{\"cat\": \"chaton\", \"sofa\": \"divan\"}");
    print_message("# glossary made on replica 1, applied on replica 3: '%s' (inline terms: '%s')\n", with,
                  inline_terms);
    assert_string_equal(with, inline_terms);
    free(with);
    free(inline_terms);
    /* edited through replica 2 (v3 PUT: a pair's entries replaced): replica 3,
     * which holds the old copy, reads the new one */
    snprintf(path, sizeof path, "/v3/glossaries/%s/dictionaries", id);
    r = req_json(&rep[1], "PUT", path, FREE_KEY,
                 "{\"dictionaries\": [{\"source_lang\": \"en\", \"target_lang\": \"fr\", "
                 "\"entries\": \"cat\\tmatou\", \"entries_format\": \"tsv\"}]}");
    assert_int_equal(r.status, 200);
    reply_free(&r);
    assert_int_equal(entries_on(&rep[2], id, body, sizeof body), 200);
    assert_string_equal(body, "cat\tmatou");
    /* deleted through replica 2: gone on every replica, the ones that used it too */
    snprintf(path, sizeof path, "/v2/glossaries/%s", id);
    r = req_json(&rep[1], "DELETE", path, FREE_KEY, NULL);
    assert_int_equal(r.status, 204);
    reply_free(&r);
    for (int i = 0; i < N_REPLICAS; i++) {
        assert_int_equal(entries_on(&rep[i], id, body, sizeof body), 404);
        snprintf(body, sizeof body, "{\"text\": [\"x\"], \"source_lang\": \"EN\", \"target_lang\": \"FR\", "
                 "\"glossary_id\": \"%s\"}", id);
        r = req_json(&rep[i], "POST", "/v2/translate", FREE_KEY, body);
        assert_int_equal(r.status, 404);        /* as an id never made */
        reply_free(&r);
        r = req_json(&rep[i], "GET", "/v2/glossaries", FREE_KEY, NULL);
        json_t *none = expect_json(&r, 200);
        reply_free(&r);
        assert_int_equal(json_array_size(json_object_get(none, "glossaries")), 0);
        json_decref(none);
    }
    json_decref(g);
    /* Redis stopped: a new glossary is refused with 503 + Retry-After, at once
     * once the client knows it is down; back after */
    kill(rs.pid, SIGSTOP);
    const char *make = "{\"name\": \"x\", \"source_lang\": \"en\", \"target_lang\": \"fr\", \"entries\": \"a\\tb\"}";
    double t0 = now_s();
    r = req_json(&rep[0], "POST", "/v2/glossaries", FREE_KEY, make);
    double dt = now_s() - t0;
    char retry[16] = "";
    header(&r, "Retry-After", retry, sizeof retry);
    print_message("# POST /v2/glossaries with Redis stopped: %ld in %.0f ms, Retry-After %s: %s\n", r.status,
                  dt * 1e3, retry, r.body ? r.body : "");
    assert_int_equal(r.status, 503);
    assert_true(atoi(retry) > 0);
    assert_non_null(strstr(r.body, "Redis"));
    reply_free(&r);
    kill(rs.pid, SIGCONT);
    for (t0 = now_s(); now_s() - t0 < 10; sleep_ms(200)) {
        r = req_json(&rep[0], "POST", "/v2/glossaries", FREE_KEY, make);
        long st = r.status;
        if (st == 201) {
            json_t *j = expect_json(&r, 201);
            snprintf(path, sizeof path, "/v2/glossaries/%s", json_string_value(json_object_get(j, "glossary_id")));
            json_decref(j);
        }
        reply_free(&r);
        if (st == 201)
            break;
        assert_int_equal(st, 503);
    }
    print_message("# a glossary made again %.1f s after Redis resumed\n", now_s() - t0);
    r = req_json(&rep[2], "DELETE", path, FREE_KEY, NULL);
    assert_int_equal(r.status, 204);
    reply_free(&r);
}

/* ---- the shared translation cache (--redis-cache-mb) ------------------------------- */

/* text through /translate on s with FREE_KEY (en -> fr, max_length MAX_LENGTH): malloc'd. */
static char *cached_translation(const server *s, const char *text)
{
    char body[400];
    snprintf(body, sizeof body, "{\"text\": \"%s\", \"source\": \"en\", \"target\": \"fr\", \"max_length\": "
             MAX_LENGTH "}", text);
    req_opts o = { .body = body, .extra = { "Authorization: Bearer " FREE_KEY }, .timeout_ms = 30000 };
    reply r = http_req(s, "/translate", &o);
    json_t *j = expect_json(&r, 200);
    reply_free(&r);
    char *t = strdup(json_string_value(json_object_get(json_array_get(json_object_get(j, "translations"), 0),
                                                       "text")));
    json_decref(j);
    return t;
}

static double rcache_metric(const server *s, const char *name)
{
    return metric_auth(s, name, "Authorization: Bearer " FREE_KEY);
}

static void test_shared_cache(void **state)
{
    char text[128];
    snprintf(text, sizeof text, "The shared cache test number %d-%ld works.", (int)getpid(), (long)now_s());
    double hits0[N_REPLICAS], puts0 = rcache_metric(&rep[0], "mtserve_redis_cache_puts_total");
    for (int i = 0; i < N_REPLICAS; i++)
        hits0[i] = rcache_metric(&rep[i], "mtserve_redis_cache_hits_total");
    char *first = cached_translation(&rep[0], text);       /* decoded on replica 1, written to Redis ... */
    double puts1 = puts0, t0 = now_s();
    while (puts1 == puts0 && now_s() - t0 < 5) {           /* ... by its writer thread, after the reply */
        sleep_ms(puts1 == puts0 ? 10 : 0);
        puts1 = rcache_metric(&rep[0], "mtserve_redis_cache_puts_total");
    }
    print_message("# shared-cache writes on replica 1: %.0f -> %.0f (%.0f ms after the reply)\n", puts0, puts1,
                  (now_s() - t0) * 1e3);
    assert_true(puts1 == puts0 + 1);
    assert_true(rcache_metric(&rep[0], "mtserve_redis_cache_hits_total") == hits0[0]);
    for (int i = 1; i < N_REPLICAS; i++) {
        char *again = cached_translation(&rep[i], text);    /* a local miss there, Redis's hit */
        double hits = rcache_metric(&rep[i], "mtserve_redis_cache_hits_total");
        print_message("# '%s' translated on replica 1, then on replica %d: shared-cache hits %.0f -> %.0f, "
                      "output %s\n", text, i + 1, hits0[i], hits, strcmp(again, first) ? "DIFFERENT" : "identical");
        assert_string_equal(again, first);
        assert_true(hits == hits0[i] + 1);
        free(again);
        again = cached_translation(&rep[i], text);          /* now in its own cache: Redis not asked */
        assert_string_equal(again, first);
        assert_true(rcache_metric(&rep[i], "mtserve_redis_cache_hits_total") == hits0[i] + 1);
        free(again);
    }
    free(first);
    /* the entry is the local key's: PREFIX tc:<64 hex>, holding that key and the byte count */
    redisContext *c = redisConnect("127.0.0.1", rs.port);
    redisReply *k = redisCommand(c, "GET mtserve:tc:bytes");
    assert_true(k && k->type == REDIS_REPLY_STRING && atol(k->str) > 0 && atol(k->str) <= 8L << 20);
    print_message("# shared cache: %s bytes of entries in Redis\n", k->str);
    freeReplyObject(k);
    redisFree(c);
}

/* "state" of /health's redis on s: 1 up, 0 down, -1 none. */
static int health_redis(const server *s, char *limits, size_t len)
{
    reply r = get(s, "/health");
    json_t *j = expect_json(&r, 200), *o = json_object_get(j, "redis");
    int up = o ? !strcmp(json_string_value(json_object_get(o, "state")), "up") : -1;
    if (o && limits)
        snprintf(limits, len, "%s", json_string_value(json_object_get(o, "limits")));
    json_decref(j);
    reply_free(&r);
    return up;
}

typedef struct {
    load_result res;
    double      seconds;
} bg_load;

static void *bg_main(void *arg)
{
    bg_load *b = arg;
    b->res = load(4, FREE_KEY, "Hello world.", b->seconds, 0);
    return NULL;
}

/* 1 once every replica's /health says Redis is up (bounded). */
static int all_up(double limit_s)
{
    for (double t0 = now_s(); now_s() - t0 < limit_s; sleep_ms(100)) {
        int up = 1;
        for (int i = 0; i < N_REPLICAS; i++)
            up &= health_redis(&rep[i], NULL, 0) == 1;
        if (up)
            return 1;
    }
    return 0;
}

static void test_outage(void **state)
{
    assert_true(all_up(10));
    bg_load b = { .seconds = 10.0 };     /* the outage below takes ~8 s of it */
    pthread_t t;
    pthread_create(&t, NULL, bg_main, &b);
    sleep_ms(2000);
    /* a file job taken just before: it runs on through the outage, and ends
     * shared all the same (published again once Redis takes it) */
    int units = tsan() ? 8 : 120, polls, running_seen;
    char status[128], file[1024];
    submit_file(&rep[0], units, status, file);
    kill(rs.pid, SIGSTOP);                  /* slow: no answer at all */
    sleep_ms(3000);
    char limits[200] = "";
    int during = health_redis(&rep[0], limits, sizeof limits);
    print_message("# Redis stopped: /health says %s, limits %s\n", during ? "up" : "down", limits);
    assert_int_equal(during, 0);
    assert_non_null(strstr(limits, "local"));
    redis_kill(&rs);                        /* down, from stopped: nothing taken since (the file job's
                                               state too: it must be published again) */
    sleep_ms(1000);
    /* a file job now could not be shared: refused with 503 + Retry-After, at once */
    http_buf fbuf;
    double tf = now_s();
    long fst = post_file(&rep[1], "a.txt", "Hello.", 6, &fbuf, 0, "target", "fr", "api_key", FREE_KEY, NULL);
    double file_s = now_s() - tf;
    print_message("# POST /translate_file with Redis down: %ld in %.0f ms: %.*s\n", fst, file_s * 1e3,
                  (int)(fbuf.n < 200 ? fbuf.n : 200), fbuf.p ? fbuf.p : "");
    assert_int_equal(fst, 503);
    assert_non_null(fbuf.p && strstr(fbuf.p, "Redis") ? fbuf.p : NULL);
    assert_true(file_s < 1.0);
    free(fbuf.p);
    sleep_ms(1500);
    assert_int_equal(redis_start(&rs), 0);  /* on its port again, empty */
    pthread_join(t, NULL);
    print_message("# load during the outage: %d translated, %d refused, %d failed in %.1f s; slowest %.0f ms\n",
                  b.res.n200, b.res.refused, b.res.failed, b.res.seconds, b.res.worst_s * 1e3);
    assert_int_equal(b.res.failed, 0);
    assert_int_equal(b.res.refused, 0);
    assert_true(b.res.n200 > 0);
    /* back by themselves: each replica up, and the rate limit counted in Redis again */
    double t0 = now_s();
    int up = 0;
    while (!up && now_s() - t0 < 15) {
        load_result warm = load(N_REPLICAS, RL_KEY, "Hi.", 0.3, 0);     /* calls that probe */
        assert_int_equal(warm.failed, 0);
        up = all_up(0.1);
    }
    print_message("# replicas up on Redis again %.1f s after its restart\n", now_s() - t0);
    assert_true(up);
    /* the new Redis is empty: the job is there again with its next publish (within 2 s, 3 under TSan) */
    poll_done(&rep[1], status, file, units, tsan() ? 4.0 : 3.0, &polls, &running_seen);
    size_t n = same_download(&rep[0], &rep[2], file, units);
    print_message("# the file job of %d units taken before the outage: done on replica 2 after %d more polls, "
                  "%zu bytes from replica 3\n", units, polls, n);
    double fb = 0;
    for (int i = 0; i < N_REPLICAS; i++)
        fb += metric_auth(&rep[i], "mtserve_redis_fallbacks_total{kind=\"limit\"}", "Authorization: Bearer " FREE_KEY);
    print_message("# rate-limit verdicts taken locally during the outage: %.0f\n", fb);
    assert_true(fb > 0);
    redisContext *c = redisConnect("127.0.0.1", rs.port);
    redisReply *k = redisCommand(c, "EXISTS mtserve:rl:key:0");
    assert_true(k && k->type == REDIS_REPLY_INTEGER && k->integer == 1);
    freeReplyObject(k);
    redisFree(c);
}

/* A server counted alone in a usage file, restarted with --redis: Redis takes
 * its counts (every replica then reports them). */
static void test_usage_seed(void **state)
{
    const char *bin = bin_path(), *slash = strrchr(bin, '/');
    char file[160], redis_arg[200];
    snprintf(file, sizeof file, "%.*stests/redis-usage-%d", slash ? (int)(slash - bin + 1) : 0, bin, (int)getpid());
    snprintf(redis_arg, sizeof redis_arg, "%s", rs.url);
    unlink(file);
    server alone;
    const char *const a1[] = { "--model", MODEL, "--api-keys", keys_file, "--usage-file", file, NULL };
    assert_int_equal(server_start(&alone, a1), 0);
    req_opts o = { .body = "{\"text\": \"Hello, world.\", \"max_length\": 4}",
                   .extra = { "Authorization: Bearer " SEED_KEY } };
    for (int i = 0; i < 3; i++) {
        reply r = http_req(&alone, "/translate", &o);
        assert_int_equal(r.status, 200);
        reply_free(&r);
    }
    assert_int_equal(usage_of(&alone, SEED_KEY), 39);
    assert_int_equal(server_stop(&alone), 0);          /* the file written */
    assert_int_equal(usage_of(&rep[0], SEED_KEY), 0);  /* Redis knows nothing of it yet */
    const char *const a2[] = { "--model", MODEL, "--api-keys", keys_file, "--usage-file", file, "--redis", redis_arg,
                               NULL };
    assert_int_equal(server_start(&alone, a2), 0);
    long there = usage_of(&rep[2], SEED_KEY);
    print_message("# a usage file's count (39) seeded into Redis: replica 3 reports %ld\n", there);
    assert_int_equal(there, 39);
    assert_int_equal(server_stop(&alone), 0);
    unlink(file);
}

/* ---- file jobs taken over, through nginx ------------------------------------------- */

#define TK_PREFIX   "tk:"       /* its own keys: the counts below are this test's alone */
#define TK_JOBS     (tsan() ? 12 : 100)
#define TK_FILES    (tsan() ? 4 : 20)       /* distinct files: job k sends file k % TK_FILES */
#define TK_UNITS    8                       /* under TSan too: a job must still run when its replica is killed */
#define TK_CLIENTS  4

static server tk[N_REPLICAS];
static lb     tk_lb;
static char  *tk_src[20], *tk_ref[20];      /* each file, and its translation by one replica alone */
static size_t tk_ref_len[20];

static void tk_file(int k, char *out, size_t len)
{
    out[0] = 0;
    for (int u = 0; u < TK_UNITS; u++)
        snprintf(out + strlen(out), len - strlen(out), "File %d of the takeover test, paragraph %d, is here.\n\n",
                 k + 1, u + 1);
}

/* GET path (a URL's path) on s: 200's body (malloc'd, *len), or NULL. */
static char *tk_get(const server *s, const char *path, size_t *len, long *status)
{
    req_opts o = { .method = "GET", .timeout_ms = 30000 };
    reply r = http_req(s, path, &o);
    *status = r.status;
    char *body = NULL;
    if (r.status == 200 && r.body && (body = malloc(r.len + 1))) {
        memcpy(body, r.body, r.len + 1);
        *len = r.len;
    }
    reply_free(&r);
    return body;
}

/* Each file translated by replica 0 alone (POST /translate_file straight to it, waiting). */
static void tk_references(void)
{
    for (int k = 0; k < TK_FILES; k++) {
        char text[1024], name[32];
        tk_file(k, text, sizeof text);
        snprintf(name, sizeof name, "t%d.txt", k);
        http_buf b;
        long st = post_file(&tk[0], name, text, strlen(text), &b, 0, "source", "en", "target", "fr", NULL);
        json_t *j = st == 200 ? json_loadb(b.p, b.n, 0, NULL) : NULL;
        free(b.p);
        assert_non_null(j);
        long got;
        tk_ref[k] = tk_get(&tk[0], path_of(json_string_value(json_object_get(j, "translatedFileUrl"))),
                           &tk_ref_len[k], &got);
        json_decref(j);
        assert_non_null(tk_ref[k]);
        assert_null(strstr(tk_ref[k], "takeover test"));
        tk_src[k] = strdup(text);
    }
}

typedef struct {
    char   status[96], file[160];   /* paths, through nginx */
    int    k;                       /* its file */
    _Atomic int state;              /* 0 polling, 1 equal to the reference, -1 failed */
} tk_job;

typedef struct {
    tk_job     *jobs;
    int         n, first, step;
    double      deadline;
    _Atomic int *done;
    char        problem[400];
} tk_poller;

/* Polls this poller's jobs through nginx until each is done and downloaded
 * (compared with its reference) or failed, or the deadline. */
static void *tk_poll_main(void *arg)
{
    tk_poller *p = arg;
    for (int left = 1; left && now_s() < p->deadline;) {
        left = 0;
        for (int i = p->first; i < p->n; i += p->step) {
            tk_job *j = &p->jobs[i];
            if (atomic_load(&j->state))
                continue;
            size_t len = 0;
            long st;
            char *body = tk_get(&tk_lb.s, j->status, &len, &st);
            json_t *o = body ? json_loads(body, 0, NULL) : NULL;
            free(body);
            const char *state = json_string_value(json_object_get(o, "state"));
            if (state && !strcmp(state, "done")) {
                char *f = tk_get(&tk_lb.s, j->file, &len, &st);
                int same = f && len == tk_ref_len[j->k] && !memcmp(f, tk_ref[j->k], len);
                if (!same && !p->problem[0])
                    snprintf(p->problem, sizeof p->problem, "job %d (file %d): download %ld, %zu bytes, %s", i,
                             j->k, st, len, f ? "different from the reference" : "no body");
                atomic_store(&j->state, same ? 1 : -1);
                atomic_fetch_add(p->done, 1);
                free(f);
            } else if ((state && strcmp(state, "running")) || (!o && st != 0 && st != 502 && st != 504)) {
                if (!p->problem[0])
                    snprintf(p->problem, sizeof p->problem, "job %d: status %ld, state %s", i, st,
                             state ? state : "?");
                atomic_store(&j->state, -1);
                atomic_fetch_add(p->done, 1);
            } else {
                left = 1;
            }
            json_decref(o);
        }
        sleep_ms(tsan() ? 200 : 50);
    }
    return NULL;
}

static long tk_stat(const char *field)
{
    redisContext *c = redisConnect("127.0.0.1", rs.port);
    redisReply *r = c && !c->err ? redisCommand(c, "HGET " TK_PREFIX "files:stats %s", field) : NULL;
    long v = r && r->type == REDIS_REPLY_STRING ? atol(r->str) : 0;
    freeReplyObject(r);
    if (c)
        redisFree(c);
    return v;
}

typedef struct {
    int    equal, failed, victim_held;
    double seconds;
    long   completed, refused, taken_over;
    char   problem[400];
} tk_round;

/* The replica holding the most leases (running jobs) SIGKILLed, when one
 * holds at least one (else, unless wait_s, nothing: -1): its index, *held
 * those it held. */
static int tk_kill_busiest(int *held, double wait_s)
{
    int v = -1;
    double most = 0, t0 = now_s();
    for (;;) {
        for (int i = 0; i < N_REPLICAS; i++) {
            double h = tk[i].pid > 0 ? metric(&tk[i], "mtserve_file_leases_held") : -1;
            if (h > most)
                most = h, v = i;
        }
        if (v >= 0 || now_s() - t0 >= wait_s)
            break;
        sleep_ms(5);
    }
    if (v < 0)
        return -1;
    kill(tk[v].pid, SIGKILL);
    int ws = wait_child(tk[v].pid, 10);
    untrack(tk[v].pid);
    tk[v].pid = 0;
    *held = (int)most;
    print_message("# replica %d SIGKILLed holding %d running jobs (wait status %d)\n", v + 1, *held, ws);
    return v;
}

/* TK_JOBS async jobs submitted through nginx (with kill, the replica holding
 * the most leases SIGKILLed once half are submitted and one holds any: the
 * rest go to the others), then polled and downloaded through it by
 * TK_CLIENTS threads. */
static tk_round tk_run(int kill_one)
{
    long c0 = tk_stat("completed"), r0 = tk_stat("refused"), t0s = tk_stat("taken_over");
    tk_job *jobs = calloc((size_t)TK_JOBS, sizeof *jobs);
    tk_round res = { 0 };
    double t0 = now_s();
    int killed = !kill_one;
    for (int i = 0; i < TK_JOBS; i++) {
        if (!killed && i >= TK_JOBS / 2)        /* from half on, as soon as one holds running jobs */
            killed = tk_kill_busiest(&res.victim_held, 0) >= 0;
        http_buf b;
        char name[32];
        jobs[i].k = i % TK_FILES;
        snprintf(name, sizeof name, "t%d.txt", jobs[i].k);
        long st = post_file(&tk_lb.s, name, tk_src[jobs[i].k], strlen(tk_src[jobs[i].k]), &b, 0, "source", "en",
                            "target", "fr", "async", "true", NULL);
        json_t *j = st == 202 ? json_loadb(b.p, b.n, 0, NULL) : NULL;
        if (!j)
            fail_msg("job %d: submitted through nginx: %ld %.*s", i, st, (int)b.n, b.p ? b.p : "");
        free(b.p);
        snprintf(jobs[i].status, sizeof jobs[i].status, "%s", json_string_value(json_object_get(j, "status_url")));
        snprintf(jobs[i].file, sizeof jobs[i].file, "%s",
                 path_of(json_string_value(json_object_get(j, "translatedFileUrl"))));
        json_decref(j);
    }
    if (!killed)
        assert_true(tk_kill_busiest(&res.victim_held, 10) >= 0);
    _Atomic int done = 0;
    tk_poller p[TK_CLIENTS];
    pthread_t th[TK_CLIENTS];
    for (int i = 0; i < TK_CLIENTS; i++) {
        p[i] = (tk_poller){ .jobs = jobs, .n = TK_JOBS, .first = i, .step = TK_CLIENTS,
                            .deadline = now_s() + (tsan() ? 300 : 120), .done = &done };
        pthread_create(&th[i], NULL, tk_poll_main, &p[i]);
    }
    for (int i = 0; i < TK_CLIENTS; i++)
        pthread_join(th[i], NULL);
    res.seconds = now_s() - t0;
    for (int i = 0; i < TK_JOBS; i++) {
        res.equal += atomic_load(&jobs[i].state) == 1;
        res.failed += atomic_load(&jobs[i].state) != 1;
    }
    for (int i = 0; i < TK_CLIENTS && !res.problem[0]; i++)
        snprintf(res.problem, sizeof res.problem, "%s", p[i].problem);
    res.completed = tk_stat("completed") - c0;
    res.refused = tk_stat("refused") - r0;
    res.taken_over = tk_stat("taken_over") - t0s;
    free(jobs);
    return res;
}

/* The two live takeover replicas into *a and *b. */
static void tk_two(int *a, int *b)
{
    *a = *b = -1;
    for (int i = 0; i < N_REPLICAS; i++) {
        if (tk[i].pid > 0 && *a < 0)
            *a = i;
        else if (tk[i].pid > 0 && *b < 0)
            *b = i;
    }
    assert_true(*a >= 0 && *b >= 0);
}

/* A replica paused (SIGSTOP) past its lease while it runs a job: another
 * takes the job over; resumed, the first finds its lease taken and stops the
 * job without writing a result: one result, the same as one replica alone. */
static void test_takeover_paused(void **state)
{
    int a, b;
    tk_two(&a, &b);
    int units = tsan() ? 40 : 200;
    char *text = malloc((size_t)units * 64 + 1);
    text[0] = 0;
    for (int u = 0; u < units; u++)
        sprintf(text + strlen(text), "Paragraph %d of the paused replica's file.\n\n", u + 1);
    http_buf rb;        /* the reference: replica b alone, waiting */
    assert_int_equal(post_file(&tk[b], "p.txt", text, strlen(text), &rb, 0, "source", "en", "target", "fr", NULL),
                     200);
    json_t *rj = json_loadb(rb.p, rb.n, 0, NULL);
    free(rb.p);
    size_t ref_len = 0;
    long st;
    char *ref = tk_get(&tk[b], path_of(json_string_value(json_object_get(rj, "translatedFileUrl"))), &ref_len, &st);
    json_decref(rj);
    assert_non_null(ref);
    long c0 = tk_stat("completed"), r0 = tk_stat("refused"), t0 = tk_stat("taken_over");
    double lost0 = metric(&tk[a], "mtserve_file_leases_lost_total");
    http_buf b1;
    assert_int_equal(post_file(&tk[a], "p.txt", text, strlen(text), &b1, 0, "source", "en", "target", "fr", "async",
                               "true", NULL), 202);
    json_t *j = json_loadb(b1.p, b1.n, 0, NULL);
    free(b1.p);
    char status[96], file[160];
    snprintf(status, sizeof status, "%s", json_string_value(json_object_get(j, "status_url")));
    snprintf(file, sizeof file, "%s", path_of(json_string_value(json_object_get(j, "translatedFileUrl"))));
    json_decref(j);
    long done_at_stop = 0;
    for (double tw = now_s(); now_s() - tw < 60; sleep_ms(5)) {     /* translating on a */
        size_t len;
        char *s = tk_get(&tk[a], status, &len, &st);
        json_t *o = s ? json_loads(s, 0, NULL) : NULL;
        done_at_stop = (long)json_integer_value(json_object_get(o, "done"));
        json_decref(o);
        free(s);
        if (done_at_stop > 0)
            break;
    }
    /* paused with most of the file to do (--file-batch 2: many batches), so that
     * it cannot end before its lease does: 8 units once all ended in the ms
     * between a status reply and the signal (CI, TSan) */
    assert_true(done_at_stop > 0 && done_at_stop < units);
    kill(tk[a].pid, SIGSTOP);
    double t_stop = now_s();
    while (tk_stat("taken_over") == t0 && now_s() - t_stop < (tsan() ? 120 : 30))
        sleep_ms(20);
    double taken_after = now_s() - t_stop;
    kill(tk[a].pid, SIGCONT);
    char *got = NULL;
    size_t got_len = 0;
    for (double tw = now_s(); !got && now_s() - tw < (tsan() ? 300 : 60); sleep_ms(50)) {
        size_t len;
        char *s = tk_get(&tk[b], status, &len, &st);
        json_t *o = s ? json_loads(s, 0, NULL) : NULL;
        const char *js = json_string_value(json_object_get(o, "state"));
        if (js && !strcmp(js, "done"))
            got = tk_get(&tk[b], file, &got_len, &st);
        json_decref(o);
        free(s);
    }
    sleep_ms(tsan() ? 3000 : 1000);     /* a's renewal after SIGCONT: a quarter lease */
    double lost = metric(&tk[a], "mtserve_file_leases_lost_total") - lost0;
    reply here = get(&tk[a], status);   /* a forgot it: what it answers is Redis's */
    json_t *o = here.status == 200 ? json_loadb(here.body, here.len, 0, NULL) : NULL;
    const char *a_state = json_string_value(json_object_get(o, "state"));
    print_message("# replica %d paused (SIGSTOP) at %ld of %d paragraphs: taken over %.1f s later; "
                  "resumed, it gave it up (leases lost %.0f); the file done on replica %d, %s to one replica's "
                  "alone; replica %d now says %s; results written %ld, refused %ld\n", a + 1, done_at_stop, units,
                  taken_after, lost,
                  b + 1, got && got_len == ref_len && !memcmp(got, ref, ref_len) ? "equal" : "NOT equal", a + 1,
                  a_state ? a_state : "?", tk_stat("completed") - c0, tk_stat("refused") - r0);
    assert_int_equal(tk_stat("taken_over") - t0, 1);
    assert_non_null(got);
    assert_int_equal(got_len, ref_len);
    assert_memory_equal(got, ref, ref_len);
    assert_int_equal(tk_stat("completed") - c0, 1);
    assert_int_equal(tk_stat("refused") - r0, 0);
    assert_true(lost == 1);
    assert_string_equal(a_state, "done");
    json_decref(o);
    reply_free(&here);
    free(got);
    free(ref);
    free(text);
}

/* POST /v2/document of text (a.txt, EN -> FR) to s: 0 with its id and key. */
static int tk_doc_upload(const server *s, const char *text, char id[40], char key[40])
{
    const char *b = "----mtserve-takeover-boundary";
    size_t cap = strlen(text) + 1024;
    char *body = malloc(cap), ct[96];
    int n = snprintf(body, cap, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
                     "Content-Type: text/plain\r\n\r\n%s\r\n--%s\r\nContent-Disposition: form-data; "
                     "name=\"target_lang\"\r\n\r\nFR\r\n--%s\r\nContent-Disposition: form-data; "
                     "name=\"source_lang\"\r\n\r\nEN\r\n--%s--\r\n", b, text, b, b, b);
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", b);
    req_opts o = { .method = "POST", .body = body, .body_len = (size_t)n, .content_type = ct, .timeout_ms = 30000 };
    reply r = http_req(s, "/v2/document", &o);
    free(body);
    json_t *j = r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    reply_free(&r);
    if (!j)
        return -1;
    snprintf(id, 40, "%s", json_string_value(json_object_get(j, "document_id")));
    snprintf(key, 40, "%s", json_string_value(json_object_get(j, "document_key")));
    json_decref(j);
    return 0;
}

/* POST /v2/document/ID[suffix] with its key on s. */
static reply tk_doc_call(const server *s, const char *id, const char *suffix, const char *key)
{
    char path[128], body[128];
    snprintf(path, sizeof path, "/v2/document/%s%s", id, suffix);
    snprintf(body, sizeof body, "document_key=%s", key);
    req_opts o = { .method = "POST", .body = body, .content_type = "application/x-www-form-urlencoded",
                   .timeout_ms = 30000 };
    return http_req(s, path, &o);
}

/* Polls document id's status on s until it is done (bounded) or, with
 * until_started, has units translated: its billed characters, or -1. */
static long tk_doc_wait(const server *s, const char *id, const char *key, int until_started)
{
    for (double t0 = now_s(); now_s() - t0 < (tsan() ? 300 : 60); sleep_ms(until_started ? 5 : 50)) {
        reply r = tk_doc_call(s, id, "", key);
        json_t *j = r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
        reply_free(&r);
        const char *st = json_string_value(json_object_get(j, "status"));
        long billed = (long)json_integer_value(json_object_get(j, "billed_characters"));
        int error = st && !strcmp(st, "error");
        int over = st && (!strcmp(st, "done") || error || (until_started && strcmp(st, "queued")));
        json_decref(j);
        if (over)
            return error ? -1 : billed;
    }
    return -1;
}

/* A DeepL document taken over: uploaded to one replica, which is SIGKILLed
 * once it translates; another replica reports it done and gives the same
 * document and billed characters as one it ran alone. */
static void test_takeover_document(void **state)
{
    int a, b;
    tk_two(&a, &b);
    int units = 60;     /* 8 under TSan once ended before the SIGKILL landed (CI): nothing to take over */
    char *text = malloc((size_t)units * 64 + 1), id[40], key[40], rid[40], rkey[40];
    text[0] = 0;
    for (int u = 0; u < units; u++)
        sprintf(text + strlen(text), "Paragraph %d of the document taken over.\n\n", u + 1);
    long c0 = tk_stat("completed"), r0 = tk_stat("refused"), t0 = tk_stat("taken_over");
    assert_int_equal(tk_doc_upload(&tk[b], text, rid, rkey), 0);       /* the reference: replica b alone */
    long ref_billed = tk_doc_wait(&tk[b], rid, rkey, 0);
    reply ref = tk_doc_call(&tk[b], rid, "/result", rkey);
    assert_int_equal(ref.status, 200);
    assert_int_equal(tk_doc_upload(&tk[a], text, id, key), 0);
    assert_true(tk_doc_wait(&tk[a], id, key, 1) >= 0);                  /* translating on a */
    kill(tk[a].pid, SIGKILL);
    wait_child(tk[a].pid, 10);
    untrack(tk[a].pid);
    tk[a].pid = 0;
    double t_kill = now_s();
    long billed = tk_doc_wait(&tk[b], id, key, 0);
    double took = now_s() - t_kill;
    reply got = tk_doc_call(&tk[b], id, "/result", key);
    print_message("# a DeepL document of %d paragraphs uploaded to replica %d, SIGKILLed while translating: done on "
                  "replica %d %.1f s later, %zu bytes (alone: %zu), billed %ld (alone: %ld); taken over %ld, "
                  "results written %ld, refused %ld\n", units, a + 1, b + 1, took, got.len, ref.len, billed,
                  ref_billed, tk_stat("taken_over") - t0, tk_stat("completed") - c0, tk_stat("refused") - r0);
    assert_int_equal(got.status, 200);
    assert_int_equal(got.len, ref.len);
    assert_memory_equal(got.body, ref.body, ref.len);
    assert_true(billed == ref_billed && billed > 0);
    assert_int_equal(tk_stat("taken_over") - t0, 1);
    assert_int_equal(tk_stat("completed") - c0, 2);
    assert_int_equal(tk_stat("refused") - r0, 0);
    reply_free(&got);
    reply_free(&ref);
    free(text);
}

/* models/tiny with a shorter decode (greedy, at most TK_MAX_LENGTH tokens: its
 * random weights never end a sentence): <dir of MTSERVE_BIN>/tests/tiny-tk-PID,
 * its files links to the model's but generation_config.json.  Its path, or NULL. */
#define TK_MAX_LENGTH (tsan() ? 8 : 24)
static char tk_model_dir[PATH_MAX];

static const char *tk_model(void)
{
    const char *bin = bin_path(), *slash = strrchr(bin, '/');
    char from[PATH_MAX], to[PATH_MAX + 64];
    snprintf(tk_model_dir, sizeof tk_model_dir, "%.*stests/tiny-tk-%d", slash ? (int)(slash - bin + 1) : 0, bin,
             (int)getpid());
    if (mkdir(tk_model_dir, 0755) && errno != EEXIST)
        return NULL;
    const char *files[] = { "config.json", "model.safetensors", "source.spm", "target.spm", "special_tokens_map.json",
                            "tokenizer_config.json", "vocab.json" };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(to, sizeof to, "%s/%s", tk_model_dir, files[i]);
        snprintf(from, sizeof from, MODEL "/%s", files[i]);
        char *abs = realpath(from, NULL);
        unlink(to);
        int bad = !abs || symlink(abs, to);
        free(abs);
        if (bad)
            return NULL;
    }
    snprintf(to, sizeof to, "%s/generation_config.json", tk_model_dir);
    FILE *f = fopen(to, "w");
    if (!f)
        return NULL;
    fprintf(f, "{\"bad_words_ids\": [[7999]], \"decoder_start_token_id\": 7999, \"eos_token_id\": 0, "
               "\"forced_eos_token_id\": 0, \"max_length\": %d, \"num_beams\": 1, \"pad_token_id\": 7999}\n",
            TK_MAX_LENGTH);
    fclose(f);
    return tk_model_dir;
}

static void tk_model_remove(void)
{
    if (!tk_model_dir[0])
        return;
    const char *files[] = { "config.json", "model.safetensors", "source.spm", "target.spm", "special_tokens_map.json",
                            "tokenizer_config.json", "vocab.json", "generation_config.json" };
    char p[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", tk_model_dir, files[i]);
        unlink(p);
    }
    rmdir(tk_model_dir);
    tk_model_dir[0] = 0;
}

static int tk_setup(void **state)
{
    replicas_stop();            /* the other tests' replicas: their cores are this test's */
    if (!rs.pid && redis_start(&rs))
        return -1;
    static char redis_arg[200];
    snprintf(redis_arg, sizeof redis_arg, "%s", rs.url);
    const char *model = tk_model();
    if (!model)
        return -1;
    const char *const args[] = { "--model", model, "--redis", redis_arg, "--redis-prefix", TK_PREFIX,
                                 "--redis-timeout", tsan() ? "1000" : "250", "--redis-lease", tsan() ? "3000" : "1000",
                                 "--max-file-jobs", "400", "--file-batch", "2", NULL };
    int ports[N_REPLICAS];
    for (int i = 0; i < N_REPLICAS; i++) {
        if (server_start(&tk[i], args))
            return -1;
        ports[i] = tk[i].port;
    }
    return lb_start(&tk_lb, ports, N_REPLICAS);
}

static int tk_teardown(void **state)
{
    lb_stop(&tk_lb);
    int rc = 0;
    for (int i = 0; i < N_REPLICAS; i++)
        if (tk[i].pid > 0 && server_stop(&tk[i]) != 0) {
            print_error("replica %d (%s) did not stop cleanly\n", i, tk[i].log);
            rc = -1;
        }
    for (int k = 0; k < 20; k++) {
        free(tk_src[k]);
        free(tk_ref[k]);
        tk_src[k] = tk_ref[k] = NULL;
    }
    tk_model_remove();
    return rc;
}

static void test_takeover(void **state)
{
    tk_references();
    tk_round a = tk_run(0);
    print_message("# %d async file jobs (%d units each) through nginx, 3 replicas: %d equal to one replica's "
                  "alone, %d failed, in %.1f s; results written %ld, refused %ld, taken over %ld\n", TK_JOBS, TK_UNITS,
                  a.equal, a.failed, a.seconds, a.completed, a.refused, a.taken_over);
    if (a.failed)
        print_error("first problem: %s\n", a.problem);
    assert_int_equal(a.equal, TK_JOBS);
    assert_int_equal(a.completed, TK_JOBS);
    assert_int_equal(a.refused, 0);
    assert_int_equal(a.taken_over, 0);
    tk_round b = tk_run(1);
    double taken = 0, refused = 0;
    for (int i = 0; i < N_REPLICAS; i++)
        if (tk[i].pid > 0) {
            taken += metric(&tk[i], "mtserve_file_takeovers_total");
            refused += metric(&tk[i], "mtserve_file_results_refused_total");
        }
    print_message("# again with one replica SIGKILLed once half were submitted: %d equal, %d failed, in %.1f s; "
                  "results written %ld, refused %ld; taken over %ld (the survivors' metrics: %.0f)\n", b.equal, b.failed, b.seconds,
                  b.completed, b.refused, b.taken_over, taken);
    if (b.failed)
        print_error("first problem: %s\n", b.problem);
    assert_int_equal(b.equal, TK_JOBS);
    assert_int_equal(b.completed, TK_JOBS);     /* one result written a job ... */
    assert_int_equal(b.refused, 0);             /* ... and none finished a second time */
    assert_true(refused == 0);
    assert_true(b.victim_held > 0 && b.taken_over >= 1 && b.taken_over <= b.victim_held);
    assert_true(taken == b.taken_over);
}

static void test_bad_url(void **state)
{
    /* a bad --redis stops the start with its reason */
    server s;
    const char *const args[] = { "--model", MODEL, "--redis", "rediss://h:6380", NULL };
    assert_int_equal(server_spawn(&s, args, NULL), 0);
    int st = wait_child(s.pid, 30);
    untrack(s.pid);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0);
    FILE *f = fopen(s.log, "r");
    char line[600];
    int said = 0;
    while (f && fgets(line, sizeof line, f))
        said |= strstr(line, "rediss://") && strstr(line, "no TLS");
    if (f)
        fclose(f);
    assert_true(said);
}

/* ---- setup -------------------------------------------------------------------------- */

static int group_setup(void **state)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (access(REDIS_BIN, X_OK) != 0) {
        print_error("%s not found (make deps installs redis-server)\n", REDIS_BIN);
        return -1;
    }
    return 0;
}

static int replicas_setup(void **state)
{
    const char *bin = bin_path(), *slash = strrchr(bin, '/');
    snprintf(keys_file, sizeof keys_file, "%.*stests/redis-keys-%d.txt", slash ? (int)(slash - bin + 1) : 0, bin,
             (int)getpid());
    FILE *f = fopen(keys_file, "w");
    if (!f)
        return -1;
    fprintf(f, RL_KEY " req-limit=%d\n" Q_KEY " char-quota=%d\n" FREE_KEY " req-limit=100000\n" SEED_KEY "\n", RL_N,
            Q_CHARS);
    fclose(f);
    if (!rs.pid && redis_start(&rs))
        return -1;
    return replicas_start();
}

static int group_teardown(void **state)
{
    int rc = 0;
    for (int i = 0; i < N_REPLICAS; i++)        /* a sanitizer report in a log, or a bad exit, fails the group */
        if (rep[i].pid > 0 && server_alive(&rep[i]) && server_stop(&rep[i]) != 0) {
            print_error("replica %d (%s) did not stop cleanly\n", i, rep[i].log);
            rc = -1;
        }
    if (rs.pid > 0)
        kill(rs.pid, SIGCONT);
    redis_kill(&rs);
    kill_all_children();
    if (keys_file[0])
        unlink(keys_file);
    tk_model_remove();
    if (rs.dir[0]) {
        unlink(rs.sock);
        rmdir(rs.dir);
    }
    curl_global_cleanup();
    return rc;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url),
        cmocka_unit_test(test_reply),
        cmocka_unit_test(test_client),
        cmocka_unit_test(test_client_down),
        cmocka_unit_test(test_client_slow),
        cmocka_unit_test(test_lease_scripts),
        cmocka_unit_test(test_bad_url),
        cmocka_unit_test(test_rcache),
        cmocka_unit_test_setup(test_rate_limit, replicas_setup),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_file_jobs),
        cmocka_unit_test(test_glossaries),
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_shared_cache),
        cmocka_unit_test(test_outage),
        cmocka_unit_test(test_usage_seed),
        cmocka_unit_test_setup(test_takeover, tk_setup),
        cmocka_unit_test(test_takeover_paused),
        cmocka_unit_test_teardown(test_takeover_document, tk_teardown),
    };
    signal(SIGPIPE, SIG_IGN);       /* a write to a killed Redis: EPIPE, as in the server */
    const char *filter = getenv("MT_TEST_FILTER");  /* cmocka's wildcards: "test_client*" */
    if (filter && *filter)
        cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
