/* redis_reply: a hiredis reply read as the type a call expects (redis.h).
 *
 * The one place a reply's fields are looked at: a Redis that answers
 * something else (another version, a proxy, a bug, a script edited by hand)
 * gives SRV_REDIS_BAD_REPLY with what came, never a read of the wrong field.
 * tests/test_redis.c feeds it every type; tests/fuzz/fuzz_redis_reply.c raw
 * RESP through hiredis's own reader.
 */
#include "redis.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

static const char *type_name(int type)
{
    switch (type) {
    case REDIS_REPLY_STRING: return "a string";
    case REDIS_REPLY_ARRAY: return "an array";
    case REDIS_REPLY_INTEGER: return "an integer";
    case REDIS_REPLY_NIL: return "nil";
    case REDIS_REPLY_STATUS: return "a status";
    case REDIS_REPLY_ERROR: return "an error";
    default: return "a reply of an unknown type";
    }
}

static srv_redis_rc bad(const redisReply *r, const char *wanted, char *err, size_t err_len)
{
    snprintf(err, err_len, "Redis answered %s where %s was expected", type_name(r->type), wanted);
    return SRV_REDIS_BAD_REPLY;
}

/* A whole decimal integer in s[0..n) (an optional '-', 1..19 digits, nothing else). */
static int parse_int(const char *s, size_t n, long long *out)
{
    if (!s || n == 0 || n > 20)
        return -1;
    char buf[24];
    memcpy(buf, s, n);
    buf[n] = 0;
    if (strlen(buf) != n)       /* a NUL inside */
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end || !(buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9')))
        return -1;
    *out = v;
    return 0;
}

static srv_redis_rc read_int(const redisReply *r, srv_redis_value *v, char *err, size_t err_len)
{
    if (r->type == REDIS_REPLY_INTEGER) {
        v->i = r->integer;
        return SRV_REDIS_OK;
    }
    if (r->type == REDIS_REPLY_NIL) {           /* GET of a key never set: 0 */
        v->nil = 1;
        return SRV_REDIS_OK;
    }
    if (r->type == REDIS_REPLY_STRING && parse_int(r->str, r->len, &v->i) == 0)
        return SRV_REDIS_OK;
    if (r->type == REDIS_REPLY_STRING) {
        snprintf(err, err_len, "Redis answered a string that is not an integer where an integer was expected");
        return SRV_REDIS_BAD_REPLY;
    }
    return bad(r, "an integer", err, err_len);
}

static srv_redis_rc read_str(const redisReply *r, srv_redis_value *v, char *err, size_t err_len)
{
    if (r->type == REDIS_REPLY_NIL) {
        v->nil = 1;
        return SRV_REDIS_OK;
    }
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)
        return bad(r, "a string", err, err_len);
    if (!(v->s = malloc(r->len + 1))) {
        snprintf(err, err_len, "out of memory for a reply of %zu bytes", r->len);
        return SRV_REDIS_BAD_REPLY;
    }
    if (r->len)
        memcpy(v->s, r->str, r->len);
    v->s[r->len] = 0;
    v->len = r->len;
    return SRV_REDIS_OK;
}

static srv_redis_rc read_ints(const redisReply *r, srv_redis_value *v, char *err, size_t err_len)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return bad(r, "an array of integers", err, err_len);
    if (r->elements < 1 || r->elements > SRV_REDIS_MAX_INTS || !r->element) {
        snprintf(err, err_len, "Redis answered an array of %zu elements where 1 to %d integers were expected",
                 r->elements, SRV_REDIS_MAX_INTS);
        return SRV_REDIS_BAD_REPLY;
    }
    for (size_t k = 0; k < r->elements; k++) {
        const redisReply *e = r->element[k];
        if (!e || e->type != REDIS_REPLY_INTEGER) {
            snprintf(err, err_len, "Redis answered an array whose element %zu is %s, not an integer", k,
                     e ? type_name(e->type) : "missing");
            return SRV_REDIS_BAD_REPLY;
        }
        v->ints[k] = e->integer;
    }
    v->n = (int)r->elements;
    return SRV_REDIS_OK;
}

srv_redis_rc srv_redis_reply_read(const redisReply *r, srv_redis_want want, srv_redis_value *v, char *err,
                                  size_t err_len)
{
    memset(v, 0, sizeof *v);
    if (!r) {
        snprintf(err, err_len, "no reply");
        return SRV_REDIS_DOWN;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        int n = !r->str ? 0 : r->len < 120 ? (int)r->len : 120;     /* a NUL inside cuts it: still a message */
        snprintf(err, err_len, "Redis: %.*s", n, r->str ? r->str : "");
        return r->str && r->len >= 8 && strncmp(r->str, "NOSCRIPT", 8) == 0 ? SRV_REDIS_NOSCRIPT : SRV_REDIS_ERROR;
    }
    switch (want) {
    case SRV_RW_OK:
        if (r->type == REDIS_REPLY_STATUS && r->str && r->len == 2 && memcmp(r->str, "OK", 2) == 0)
            return SRV_REDIS_OK;
        return bad(r, "the status OK", err, err_len);
    case SRV_RW_INT:
        return read_int(r, v, err, err_len);
    case SRV_RW_STR:
        return read_str(r, v, err, err_len);
    case SRV_RW_INTS:
        return read_ints(r, v, err, err_len);
    }
    snprintf(err, err_len, "no such reply type wanted: %d", (int)want);
    return SRV_REDIS_BAD_REPLY;
}

void srv_redis_value_clear(srv_redis_value *v)
{
    free(v->s);
    memset(v, 0, sizeof *v);
}

/* hiredis 0.14's reader allocates an array's declared count of elements
 * before any of them arrives (1.x has maxelements for it): "*1159580954"
 * from whatever answers at Redis's address would ask for 9 GB.  Its
 * createArray is wrapped so that a count over SRV_REDIS_MAX_ELEMENTS is the
 * reader's error (out of memory: the connection dropped) instead. */
static redisReplyObjectFunctions bounded_fns;
static void *(*default_array)(const redisReadTask *, int);

static void *bounded_array(const redisReadTask *task, int elements)
{
    return elements > SRV_REDIS_MAX_ELEMENTS ? NULL : default_array(task, elements);
}

static pthread_once_t bounded_once = PTHREAD_ONCE_INIT;
static void bounded_init(void)
{
    redisReader *rd = redisReaderCreate();      /* hiredis's own functions, whatever they are */
    if (rd && rd->fn) {
        bounded_fns = *rd->fn;
        default_array = bounded_fns.createArray;
        bounded_fns.createArray = default_array ? bounded_array : NULL;
    }
    redisReaderFree(rd);
}

void srv_redis_reader_bound(struct redisReader *rd)
{
    pthread_once(&bounded_once, bounded_init);
    if (rd && default_array)
        rd->fn = &bounded_fns;
}
