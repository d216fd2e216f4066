/* glossary_share: stored glossaries in Redis for every replica (glossary_share.h). */
#include "glossary_share.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* KEYS gloss:ID, glosses:OWNER, gloss:n, gloss:seq; ARGV max, owner, json, id.
 * -1 full, 0 the id taken, else the new revision. */
static srv_redis_script add_script = { .source =
    "if tonumber(redis.call('GET', KEYS[3]) or '0') >= tonumber(ARGV[1]) then return -1 end\n"
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
    "local rev = redis.call('INCR', KEYS[4])\n"
    "redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'rev', rev, 'json', ARGV[3])\n"
    "redis.call('ZADD', KEYS[2], rev, ARGV[4])\n"
    "redis.call('INCR', KEYS[3])\n"
    "return rev\n" };

/* KEYS gloss:ID, gloss:seq; ARGV owner, json.  0 none (or another owner's), else the new revision. */
static srv_redis_script replace_script = { .source =
    "if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end\n"
    "local rev = redis.call('INCR', KEYS[2])\n"
    "redis.call('HSET', KEYS[1], 'rev', rev, 'json', ARGV[2])\n"
    "return rev\n" };

/* KEYS gloss:ID, glosses:OWNER, gloss:n; ARGV owner, id.  1 removed, 0 none. */
static srv_redis_script remove_script = { .source =
    "if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end\n"
    "redis.call('DEL', KEYS[1])\n"
    "redis.call('ZREM', KEYS[2], ARGV[2])\n"
    "if tonumber(redis.call('GET', KEYS[3]) or '0') > 0 then redis.call('DECR', KEYS[3]) end\n"
    "return 1\n" };

/* KEYS gloss:ID; ARGV owner, the revision known.  '' none, '=' the known
 * one is current, else "REV\nJSON" (read in one step: the JSON is REV's). */
static srv_redis_script get_script = { .source =
    "local h = redis.call('HMGET', KEYS[1], 'owner', 'rev')\n"
    "if h[1] ~= ARGV[1] then return '' end\n"
    "if h[2] == ARGV[2] then return '=' end\n"
    "return h[2] .. '\\n' .. redis.call('HGET', KEYS[1], 'json')\n" };

/* KEYS glosses:OWNER: the ids, by creation, separated by spaces. */
static srv_redis_script list_script = { .source =
    "return table.concat(redis.call('ZRANGE', KEYS[1], 0, -1), ' ')\n" };

static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;
static void scripts_init(void)
{
    srv_redis_script_init(&add_script);
    srv_redis_script_init(&replace_script);
    srv_redis_script_init(&remove_script);
    srv_redis_script_init(&get_script);
    srv_redis_script_init(&list_script);
}

typedef struct {
    char id[160], owner_set[160], n[160], seq[160], owner[16];
} keys;

static void keys_of(srv_redis *r, const char *id, int owner, keys *k)
{
    pthread_once(&scripts_once, scripts_init);
    const char *p = srv_redis_prefix(r);
    snprintf(k->id, sizeof k->id, "%sgloss:%s", p, id);
    snprintf(k->owner_set, sizeof k->owner_set, "%sglosses:%d", p, owner);
    snprintf(k->n, sizeof k->n, "%sgloss:n", p);
    snprintf(k->seq, sizeof k->seq, "%sgloss:seq", p);
    snprintf(k->owner, sizeof k->owner, "%d", owner);
}

/* ---- the calls ---------------------------------------------------------------------- */

/* A script answering an integer: 0 with *n, or -1 (Redis down, err set). */
static int eval_int(srv_redis *r, const srv_redis_script *s, int nkeys, int argc, const char *const *argv, long *n,
                    char *err, size_t err_len)
{
    srv_redis_value v;
    srv_redis_rc rc = srv_redis_eval(r, s, nkeys, argc, argv, SRV_RW_INT, &v, err, err_len);
    *n = (long)v.i;
    srv_redis_value_clear(&v);
    return rc == SRV_REDIS_OK ? 0 : -1;
}

srv_gshare_rc srv_gshare_add(srv_redis *r, const char *id, int owner, const char *json, int max, long *rev,
                             char *err, size_t err_len)
{
    keys k;
    keys_of(r, id, owner, &k);
    char smax[16];
    snprintf(smax, sizeof smax, "%d", max);
    const char *argv[8] = { k.id, k.owner_set, k.n, k.seq, smax, k.owner, json, id };
    int rc = eval_int(r, &add_script, 4, 8, argv, rev, err, err_len);
    return rc ? SRV_GSHARE_DOWN : *rev < 0 ? SRV_GSHARE_FULL : *rev == 0 ? SRV_GSHARE_TAKEN : SRV_GSHARE_OK;
}

srv_gshare_rc srv_gshare_replace(srv_redis *r, const char *id, int owner, const char *json, long *rev, char *err,
                                 size_t err_len)
{
    keys k;
    keys_of(r, id, owner, &k);
    const char *argv[4] = { k.id, k.seq, k.owner, json };
    int rc = eval_int(r, &replace_script, 2, 4, argv, rev, err, err_len);
    return rc ? SRV_GSHARE_DOWN : *rev > 0 ? SRV_GSHARE_OK : SRV_GSHARE_NONE;
}

srv_gshare_rc srv_gshare_remove(srv_redis *r, const char *id, int owner, char *err, size_t err_len)
{
    keys k;
    keys_of(r, id, owner, &k);
    const char *argv[5] = { k.id, k.owner_set, k.n, k.owner, id };
    long n;
    if (eval_int(r, &remove_script, 3, 5, argv, &n, err, err_len))
        return SRV_GSHARE_DOWN;
    return n == 1 ? SRV_GSHARE_OK : SRV_GSHARE_NONE;
}

srv_gshare_rc srv_gshare_get(srv_redis *r, const char *id, int owner, long known_rev, char **json, size_t *len,
                             long *rev, char *err, size_t err_len)
{
    keys k;
    keys_of(r, id, owner, &k);
    char known[24];
    snprintf(known, sizeof known, "%ld", known_rev);
    const char *argv[3] = { k.id, k.owner, known };
    srv_redis_value v;
    *json = NULL;
    if (srv_redis_eval(r, &get_script, 1, 3, argv, SRV_RW_STR, &v, err, err_len) != SRV_REDIS_OK || v.nil) {
        srv_redis_value_clear(&v);
        return SRV_GSHARE_DOWN;
    }
    srv_gshare_rc rc = SRV_GSHARE_OK;
    char *nl = v.len ? memchr(v.s, '\n', v.len) : NULL;
    if (v.len == 0) {
        rc = SRV_GSHARE_NONE;
    } else if (v.len == 1 && v.s[0] == '=') {
        rc = SRV_GSHARE_SAME;
    } else if (!nl || !(*json = malloc(v.len))) {
        snprintf(err, err_len, "glossary %s: %s", id, nl ? "out of memory" : "unreadable in Redis");
        rc = SRV_GSHARE_DOWN;
    } else {
        *len = v.len - (size_t)(nl + 1 - v.s);
        memcpy(*json, nl + 1, *len);
        (*json)[*len] = 0;
        *rev = strtol(v.s, NULL, 10);
    }
    srv_redis_value_clear(&v);
    return rc;
}

int srv_gshare_list(srv_redis *r, int owner, char (**ids)[37])
{
    keys k;
    keys_of(r, "", owner, &k);
    const char *argv[1] = { k.owner_set };
    srv_redis_value v;
    char err[200];
    *ids = NULL;
    if (srv_redis_eval(r, &list_script, 1, 1, argv, SRV_RW_STR, &v, err, sizeof err) != SRV_REDIS_OK || v.nil) {
        srv_redis_value_clear(&v);
        return -1;
    }
    int n = 0;
    *ids = malloc(sizeof **ids * (v.len / 2 + 1));
    for (char *p = v.s, *save = NULL, *t; *ids && (t = strtok_r(p, " ", &save)); p = NULL)
        if (strlen(t) < sizeof **ids)
            snprintf((*ids)[n++], sizeof **ids, "%s", t);
    srv_redis_value_clear(&v);
    return *ids ? n : -1;
}
