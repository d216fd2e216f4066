/* fuzz_redis_reply: raw RESP bytes through hiredis's reader, each reply read
 * by srv_redis_reply_read (server/store/redis_reply.c) as every wanted type;
 * and --redis URLs through srv_redis_url_parse (server/store/redis_url.c).
 *
 * Byte 0 even: the rest is what a Redis (or anything at its address) sends,
 * fed to a redisReader in chunks of 1 + (byte 0 >> 1) bytes; every reply it
 * makes is read four ways.  Checked against a reference decided from the
 * reply's type alone (and, for an integer in a string, strtoll):
 *   - an error reply is SRV_REDIS_ERROR, or NOSCRIPT exactly when its text
 *     starts so, whatever was wanted;
 *   - OK only for the status "OK"; INT for an integer, nil, or a string that
 *     is a whole decimal integer (its value); STR for a string, status or nil
 *     (a NUL-terminated copy of exactly its bytes); INTS for an array of 1..4
 *     integers (their values); anything else SRV_REDIS_BAD_REPLY with a message.
 * Byte 0 odd: the rest (up to a NUL) is a URL: a parse fails with a message
 * that names --redis, or gives a port 1..65535 (redis://) or an absolute
 * path (unix://), and the printed form shows the password as ***.
 */
#include "fuzz_common.h"

#include <errno.h>

#include <hiredis/hiredis.h>

#include "store/redis.h"

/* The reference's INT reading of a string: 1 and *v when it is a whole integer. */
static int ref_int(const redisReply *r, long long *v)
{
    if (r->len == 0 || r->len > 20 || memchr(r->str, 0, r->len))
        return 0;
    char buf[24];
    memcpy(buf, r->str, r->len);
    buf[r->len] = 0;
    if (!(buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9')))
        return 0;
    char *end;
    errno = 0;
    *v = strtoll(buf, &end, 10);
    return !errno && !*end;
}

static srv_redis_rc expected(const redisReply *r, srv_redis_want w, long long *iv)
{
    if (r->type == REDIS_REPLY_ERROR)
        return r->len >= 8 && !strncmp(r->str, "NOSCRIPT", 8) ? SRV_REDIS_NOSCRIPT : SRV_REDIS_ERROR;
    switch (w) {
    case SRV_RW_OK:
        return r->type == REDIS_REPLY_STATUS && r->len == 2 && !memcmp(r->str, "OK", 2) ? SRV_REDIS_OK
                                                                                      : SRV_REDIS_BAD_REPLY;
    case SRV_RW_INT:
        *iv = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        return r->type == REDIS_REPLY_INTEGER || r->type == REDIS_REPLY_NIL ||
               (r->type == REDIS_REPLY_STRING && ref_int(r, iv)) ? SRV_REDIS_OK : SRV_REDIS_BAD_REPLY;
    case SRV_RW_STR:
        return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_NIL
               ? SRV_REDIS_OK : SRV_REDIS_BAD_REPLY;
    case SRV_RW_INTS:
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->elements > SRV_REDIS_MAX_INTS)
            return SRV_REDIS_BAD_REPLY;
        for (size_t k = 0; k < r->elements; k++)
            if (r->element[k]->type != REDIS_REPLY_INTEGER)
                return SRV_REDIS_BAD_REPLY;
        return SRV_REDIS_OK;
    }
    return SRV_REDIS_BAD_REPLY;
}

static void check(const redisReply *r)
{
    for (int w = 0; w < 4; w++) {
        srv_redis_value v;
        char err[200];
        err[0] = 0;
        long long iv = 0;
        srv_redis_rc want = expected(r, (srv_redis_want)w, &iv);
        srv_redis_rc rc = srv_redis_reply_read(r, (srv_redis_want)w, &v, err, sizeof err);
        FUZZ_CHECK(rc == want);
        FUZZ_CHECK(rc == SRV_REDIS_OK || (err[0] && memchr(err, 0, sizeof err)));
        if (rc == SRV_REDIS_OK && w == SRV_RW_INT)
            FUZZ_CHECK(v.i == iv && v.nil == (r->type == REDIS_REPLY_NIL));
        if (rc == SRV_REDIS_OK && w == SRV_RW_STR) {
            FUZZ_CHECK(v.nil == (r->type == REDIS_REPLY_NIL));
            if (!v.nil)
                FUZZ_CHECK(v.s && v.len == r->len && v.s[v.len] == 0 && !memcmp(v.s, r->str, r->len));
        }
        if (rc == SRV_REDIS_OK && w == SRV_RW_INTS) {
            FUZZ_CHECK(v.n == (int)r->elements);
            for (int k = 0; k < v.n; k++)
                FUZZ_CHECK(v.ints[k] == r->element[k]->integer);
        }
        if (rc != SRV_REDIS_OK || w != SRV_RW_STR)
            FUZZ_CHECK(v.s == NULL);
        srv_redis_value_clear(&v);
    }
}

static void replies(const uint8_t *data, size_t size, size_t chunk)
{
    redisReader *rd = redisReaderCreate();
    FUZZ_CHECK(rd);
    srv_redis_reader_bound(rd);         /* as every connection's: no array of 2^30 elements allocated */
    for (size_t at = 0; at < size; at += chunk) {
        size_t n = size - at < chunk ? size - at : chunk;
        if (redisReaderFeed(rd, (const char *)data + at, n) != REDIS_OK)
            break;
        for (;;) {
            void *rep = NULL;
            if (redisReaderGetReply(rd, &rep) != REDIS_OK)
                goto done;          /* a protocol error: the client drops such a connection */
            if (!rep)
                break;              /* more bytes needed */
            check(rep);
            freeReplyObject(rep);
        }
    }
done:
    redisReaderFree(rd);
}

static void url(const uint8_t *data, size_t size)
{
    char text[600];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = 0;
    srv_redis_url u;
    char err[400] = "";
    if (srv_redis_url_parse(text, &u, err, sizeof err)) {
        FUZZ_CHECK(strstr(err, "--redis") != NULL);
        return;
    }
    if (u.is_unix)
        FUZZ_CHECK(u.path[0] == '/' && strlen(u.path) < sizeof u.path);
    else
        FUZZ_CHECK(u.port >= 1 && u.port <= 65535 && u.host[0]);
    FUZZ_CHECK(u.db >= 0);
    char printed[400];
    srv_redis_url_print(&u, printed, sizeof printed);
    if (u.password[0])
        FUZZ_CHECK(strstr(printed, ":***@") != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        url(data + 1, size - 1);
    else
        replies(data + 1, size - 1, 1 + (data[0] >> 1));
    return 0;
}
