/* file_lease: file jobs' sources and leases in Redis, one script a step (file_lease.h). */
#include "file_lease.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* KEYS src, job, lease, held, bytes; ARGV the source, the options, me,
 * lease ms, ttl s, budget, id.  {1, bytes held} or {0, bytes held}: no room. */
static srv_redis_script store_script = { .source =
    "local n = #ARGV[1] + #ARGV[2]\n"
    "local used = tonumber(redis.call('GET', KEYS[5]) or '0')\n"
    "if used + n > tonumber(ARGV[6]) then return {0, used} end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[5])\n"
    "redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[5])\n"
    "redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[4])\n"
    "redis.call('HSET', KEYS[4], ARGV[7], n)\n"
    "return {1, redis.call('INCRBY', KEYS[5], n)}\n" };

/* KEYS lease, end, src, job, state; ARGV me, lease ms, ttl s, the state
 * ("": none).  1 held (renewed, the state written), 0 lost (another holds
 * it, or ended it), -1 ended by this replica (a renewal racing its end). */
static srv_redis_script hold_script = { .source =
    "local v = redis.call('GET', KEYS[1])\n"
    "if v and v ~= ARGV[1] then return 0 end\n"
    "if not v then\n"
    "  local e = redis.call('GET', KEYS[2])\n"
    "  if e then return e == ARGV[1] and -1 or 0 end\n"
    "end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "redis.call('EXPIRE', KEYS[3], ARGV[3])\n"
    "redis.call('EXPIRE', KEYS[4], ARGV[3])\n"
    "if #ARGV[4] > 0 then redis.call('SET', KEYS[5], ARGV[4], 'EX', ARGV[3]) end\n"
    "return 1\n" };

/* KEYS lease, end, state, data, src, job, held, bytes, stats; ARGV me, the
 * state, the file, ttl s, id, done (1/0).  1 written (or by this replica
 * already: a retry after an answer that did not come back), 0 lost. */
static srv_redis_script finish_script = { .source =
    "local v, e = redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])\n"
    "if e == ARGV[1] then return 1 end\n"
    "if (v and v ~= ARGV[1]) or e then\n"
    "  if ARGV[6] == '1' then redis.call('HINCRBY', KEYS[9], 'refused', 1) end\n"
    "  return 0\n"
    "end\n"
    "if ARGV[6] == '1' then redis.call('SET', KEYS[4], ARGV[3], 'EX', ARGV[4]) end\n"
    "redis.call('SET', KEYS[3], ARGV[2], 'EX', ARGV[4])\n"
    "redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[4])\n"
    "redis.call('DEL', KEYS[1], KEYS[5], KEYS[6])\n"
    "local n = redis.call('HGET', KEYS[7], ARGV[5])\n"
    "if n then redis.call('HDEL', KEYS[7], ARGV[5]); redis.call('DECRBY', KEYS[8], n) end\n"
    "redis.call('HINCRBY', KEYS[9], ARGV[6] == '1' and 'completed' or 'ended', 1)\n"
    "return 1\n" };

/* KEYS held; ARGV the prefix of a job's keys ("PREFIX file:"), max.  The ids
 * held without a lease, space-separated (their keys are derived here: one
 * Redis, not a Cluster). */
static srv_redis_script orphans_script = { .source =
    "local out = {}\n"
    "for _, id in ipairs(redis.call('HKEYS', KEYS[1])) do\n"
    "  if redis.call('EXISTS', ARGV[1] .. id .. ':lease') == 0 then\n"
    "    out[#out + 1] = id\n"
    "    if #out >= tonumber(ARGV[2]) then break end\n"
    "  end\n"
    "end\n"
    "return table.concat(out, ' ')\n" };

/* KEYS lease, end, src, held, bytes, stats; ARGV me, lease ms, id.  1 taken,
 * 0 held by another, -1 nothing to run (ended, or its source expired: dropped
 * from held). */
static srv_redis_script claim_script = { .source =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
    "if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 0 then\n"
    "  local n = redis.call('HGET', KEYS[4], ARGV[3])\n"
    "  if n then redis.call('HDEL', KEYS[4], ARGV[3]); redis.call('DECRBY', KEYS[5], n) end\n"
    "  return -1\n"
    "end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "redis.call('HINCRBY', KEYS[6], 'taken_over', 1)\n"
    "return 1\n" };

/* KEYS lease; ARGV me.  Deletes the lease when it is ours. */
static srv_redis_script release_script = { .source =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
    "return 0\n" };

/* KEYS src, job, lease, held, bytes; ARGV me, id.  A job that never started:
 * its keys deleted (the lease only when ours), its bytes given back. */
static srv_redis_script drop_script = { .source =
    "redis.call('DEL', KEYS[1], KEYS[2])\n"
    "if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end\n"
    "local n = redis.call('HGET', KEYS[4], ARGV[2])\n"
    "if n then redis.call('HDEL', KEYS[4], ARGV[2]); redis.call('DECRBY', KEYS[5], n) end\n"
    "return 1\n" };

static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;
static void scripts_init(void)
{
    srv_redis_script *all[] = { &store_script, &hold_script, &finish_script, &orphans_script, &claim_script,
                                &release_script, &drop_script };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        srv_redis_script_init(all[i]);
}

/* A job's key: PREFIX file:ID SUFFIX. */
typedef struct {
    char k[160];
} key;

static key job_key(const srv_lease_ctx *c, const char *id, const char *suffix)
{
    key out;
    snprintf(out.k, sizeof out.k, "%sfile:%s%s", srv_redis_prefix(c->r), id, suffix);
    return out;
}

static key files_key(const srv_lease_ctx *c, const char *what)
{
    key out;
    snprintf(out.k, sizeof out.k, "%sfiles:%s", srv_redis_prefix(c->r), what);
    return out;
}

/* A script over argv (argvlen: lengths, NULL: strlen), its verdict an
 * integer or an array of them into v. */
static srv_redis_rc run(const srv_lease_ctx *c, srv_redis_script *s, int nkeys, int argc, const char *const *argv,
                        const size_t *argvlen, srv_redis_want want, srv_redis_value *v, char *err, size_t err_len)
{
    pthread_once(&scripts_once, scripts_init);
    size_t lens[20];
    for (int i = 0; i < argc && i < 20; i++)
        lens[i] = argvlen && argvlen[i] != (size_t)-1 ? argvlen[i] : strlen(argv[i]);
    return srv_redis_eval_len(c->r, s, nkeys, argc, argv, lens, want, v, err, err_len);
}

#define ARGC(a) ((int)(sizeof(a) / sizeof *(a)))
#define STRLEN ((size_t)-1)

srv_lease_rc srv_lease_store(const srv_lease_ctx *c, const char *id, const char *src, size_t len, const char *opts,
                             long *used, char *err, size_t err_len)
{
    key ks = job_key(c, id, ":src"), kj = job_key(c, id, ":job"), kl = job_key(c, id, ":lease");
    key kh = files_key(c, "held"), kb = files_key(c, "bytes");
    char ms[16], ttl[16], budget[24];
    snprintf(ms, sizeof ms, "%d", c->lease_ms);
    snprintf(ttl, sizeof ttl, "%d", c->ttl_s);
    snprintf(budget, sizeof budget, "%zu", c->budget);
    const char *argv[] = { ks.k, kj.k, kl.k, kh.k, kb.k, src, opts, c->me, ms, ttl, budget, id };
    const size_t lens[] = { STRLEN, STRLEN, STRLEN, STRLEN, STRLEN, len, STRLEN, STRLEN, STRLEN, STRLEN, STRLEN,
                            STRLEN };
    srv_redis_value v;
    srv_redis_rc rc = run(c, &store_script, 5, ARGC(argv), argv, lens, SRV_RW_INTS, &v, err, err_len);
    if (rc != SRV_REDIS_OK || v.n != 2) {
        if (rc == SRV_REDIS_OK)
            snprintf(err, err_len, "Redis answered the store script with %d values", v.n);
        return SRV_LEASE_DOWN;
    }
    *used = (long)v.ints[1];
    return v.ints[0] == 1 ? SRV_LEASE_OK : SRV_LEASE_FULL;
}

/* An integer verdict: 1 OK, 0 LOST, -1 GONE; anything else (no answer) DOWN. */
static srv_lease_rc verdict(srv_redis_rc rc, const srv_redis_value *v)
{
    if (rc != SRV_REDIS_OK || v->nil)
        return SRV_LEASE_DOWN;
    return v->i == 1 ? SRV_LEASE_OK : v->i == 0 ? SRV_LEASE_LOST : v->i == -1 ? SRV_LEASE_GONE : SRV_LEASE_DOWN;
}

srv_lease_rc srv_lease_hold(const srv_lease_ctx *c, const char *id, const char *state)
{
    key kl = job_key(c, id, ":lease"), ke = job_key(c, id, ":end"), ks = job_key(c, id, ":src");
    key kj = job_key(c, id, ":job"), kst = job_key(c, id, "");
    char ms[16], ttl[16], err[200];
    snprintf(ms, sizeof ms, "%d", c->lease_ms);
    snprintf(ttl, sizeof ttl, "%d", c->ttl_s);
    const char *argv[] = { kl.k, ke.k, ks.k, kj.k, kst.k, c->me, ms, ttl, state ? state : "" };
    srv_redis_value v;
    return verdict(run(c, &hold_script, 5, ARGC(argv), argv, NULL, SRV_RW_INT, &v, err, sizeof err), &v);
}

srv_lease_rc srv_lease_finish(const srv_lease_ctx *c, const char *id, const char *state, const char *result,
                              size_t len, int done)
{
    key kl = job_key(c, id, ":lease"), ke = job_key(c, id, ":end"), kst = job_key(c, id, "");
    key kd = job_key(c, id, ":data"), ks = job_key(c, id, ":src"), kj = job_key(c, id, ":job");
    key kh = files_key(c, "held"), kb = files_key(c, "bytes"), kx = files_key(c, "stats");
    char ttl[16], err[200];
    snprintf(ttl, sizeof ttl, "%d", c->ttl_s);
    const char *argv[] = { kl.k, ke.k, kst.k, kd.k, ks.k, kj.k, kh.k, kb.k, kx.k,
                           c->me, state, done && result ? result : "", ttl, id, done ? "1" : "0" };
    const size_t lens[] = { STRLEN, STRLEN, STRLEN, STRLEN, STRLEN, STRLEN, STRLEN, STRLEN, STRLEN,
                            STRLEN, STRLEN, done && result ? len : 0, STRLEN, STRLEN, STRLEN };
    srv_redis_value v;
    return verdict(run(c, &finish_script, 9, ARGC(argv), argv, lens, SRV_RW_INT, &v, err, sizeof err), &v);
}

int srv_lease_orphans(const srv_lease_ctx *c, char (*ids)[SRV_FILE_ID_LEN], int max)
{
    key kh = files_key(c, "held");
    char prefix[128], n[16], err[200];
    snprintf(prefix, sizeof prefix, "%sfile:", srv_redis_prefix(c->r));
    snprintf(n, sizeof n, "%d", max);
    const char *argv[] = { kh.k, prefix, n };
    srv_redis_value v;
    if (run(c, &orphans_script, 1, ARGC(argv), argv, NULL, SRV_RW_STR, &v, err, sizeof err) != SRV_REDIS_OK) {
        srv_redis_value_clear(&v);
        return -1;
    }
    int count = 0;
    for (const char *p = v.s ? v.s : ""; *p && count < max;) {
        size_t len = strcspn(p, " ");
        if (len == SRV_FILE_ID_LEN - 1) {       /* an id of ours; anything else is not */
            memcpy(ids[count], p, len);
            ids[count++][len] = 0;
        }
        p += len + (p[len] == ' ');
    }
    srv_redis_value_clear(&v);
    return count;
}

srv_lease_rc srv_lease_claim(const srv_lease_ctx *c, const char *id)
{
    key kl = job_key(c, id, ":lease"), ke = job_key(c, id, ":end"), ks = job_key(c, id, ":src");
    key kh = files_key(c, "held"), kb = files_key(c, "bytes"), kx = files_key(c, "stats");
    char ms[16], err[200];
    snprintf(ms, sizeof ms, "%d", c->lease_ms);
    const char *argv[] = { kl.k, ke.k, ks.k, kh.k, kb.k, kx.k, c->me, ms, id };
    srv_redis_value v;
    return verdict(run(c, &claim_script, 6, ARGC(argv), argv, NULL, SRV_RW_INT, &v, err, sizeof err), &v);
}

/* GET k (binary): malloc'd with *len, or NULL. */
static char *get(const srv_lease_ctx *c, const char *k, size_t *len)
{
    const char *argv[2] = { "GET", k };
    srv_redis_value v;
    char err[200];
    if (srv_redis_cmd(c->r, SRV_RW_STR, &v, 2, argv, NULL, err, sizeof err) != SRV_REDIS_OK || v.nil) {
        srv_redis_value_clear(&v);
        return NULL;
    }
    *len = v.len;
    return v.s;
}

int srv_lease_load(const srv_lease_ctx *c, const char *id, char **opts, size_t *olen, char **src, size_t *slen)
{
    key kj = job_key(c, id, ":job"), ks = job_key(c, id, ":src");
    *opts = get(c, kj.k, olen);
    *src = *opts ? get(c, ks.k, slen) : NULL;
    if (*src)
        return 0;
    free(*opts);
    *opts = NULL;
    return -1;
}

void srv_lease_release(const srv_lease_ctx *c, const char *id)
{
    key kl = job_key(c, id, ":lease");
    char err[200];
    const char *argv[] = { kl.k, c->me };
    srv_redis_value v;
    run(c, &release_script, 1, ARGC(argv), argv, NULL, SRV_RW_INT, &v, err, sizeof err);
}

void srv_lease_drop(const srv_lease_ctx *c, const char *id)
{
    key ks = job_key(c, id, ":src"), kj = job_key(c, id, ":job"), kl = job_key(c, id, ":lease");
    key kh = files_key(c, "held"), kb = files_key(c, "bytes");
    char err[200];
    const char *argv[] = { ks.k, kj.k, kl.k, kh.k, kb.k, c->me, id };
    srv_redis_value v;
    run(c, &drop_script, 5, ARGC(argv), argv, NULL, SRV_RW_INT, &v, err, sizeof err);
}
