/* file_share: file jobs' state and results in Redis for every replica (file_share.h). */
#include "file_share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "util/clock.h"

static void key_of(srv_redis *r, const char *id, const char *suffix, char *out, size_t len)
{
    snprintf(out, len, "%sfile:%s%s", srv_redis_prefix(r), id, suffix);
}

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* SET key value EX ttl (binary-safe): 0 or -1. */
static int set_ex(srv_redis *r, const char *key, const char *value, size_t len, int ttl_s)
{
    char ttl[16], err[200];
    snprintf(ttl, sizeof ttl, "%d", ttl_s > 0 ? ttl_s : 1);
    const char *argv[5] = { "SET", key, value, "EX", ttl };
    const size_t lens[5] = { 3, strlen(key), len, 2, strlen(ttl) };
    srv_redis_value v;
    srv_redis_rc rc = srv_redis_cmd(r, SRV_RW_OK, &v, 5, argv, lens, err, sizeof err);
    return rc == SRV_REDIS_OK ? 0 : -1;
}

char *srv_file_share_state(const srv_file_info *info)
{
    double elapsed = (info->t_end > 0 ? info->t_end : mt_now_s()) - info->t_start;
    /* secret and chars: a DeepL document's key (what its reader must show) and its billed characters */
    json_t *o = json_pack("{s:i,s:i,s:i,s:s,s:i,s:I,s:f,s:f,s:i,s:s,s:s,s:I}", "state", (int)info->state, "done",
                          info->done, "total", info->total, "name", info->name, "kind", (int)info->kind, "bytes",
                          (json_int_t)info->bytes, "elapsed", elapsed, "at", wall_s(), "err_status",
                          (int)info->err.status, "err", info->err.msg, "secret", info->secret, "chars",
                          (json_int_t)info->chars);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

int srv_file_share_publish(void *share, const char *id, const srv_file_info *info, const char *result)
{
    const srv_file_share *sh = share;
    char key[160];
    /* the file first: a reader that sees "done" finds it */
    key_of(sh->r, id, ":data", key, sizeof key);
    if (info->state == SRV_FILE_DONE && (!result || set_ex(sh->r, key, result, info->bytes, sh->ttl_s)))
        return -1;
    char *text = srv_file_share_state(info);
    key_of(sh->r, id, "", key, sizeof key);
    int rc = text ? set_ex(sh->r, key, text, strlen(text), sh->ttl_s) : -1;
    free(text);
    return rc;
}

/* GET key as a string: malloc'd (*len), or NULL. */
static char *get(srv_redis *r, const char *key, size_t *len)
{
    const char *argv[2] = { "GET", key };
    srv_redis_value v;
    char err[200];
    if (srv_redis_cmd(r, SRV_RW_STR, &v, 2, argv, NULL, err, sizeof err) != SRV_REDIS_OK || v.nil) {
        srv_redis_value_clear(&v);
        return NULL;
    }
    *len = v.len;
    return v.s;         /* ours now: not cleared */
}

int srv_file_share_info(srv_redis *r, const char *id, srv_file_info *info)
{
    char key[160];
    size_t len = 0;
    key_of(r, id, "", key, sizeof key);
    char *text = get(r, key, &len);
    json_t *o = text ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    int state, done, total, kind, err_status;
    json_int_t bytes, chars = 0;
    double elapsed, at;
    const char *name, *msg, *secret = "";
    int bad = !o || json_unpack(o, "{s:i,s:i,s:i,s:s,s:i,s:I,s:F,s:F,s:i,s:s,s?s,s?I}", "state", &state, "done",
                                &done, "total", &total, "name", &name, "kind", &kind, "bytes", &bytes, "elapsed",
                                &elapsed, "at", &at, "err_status", &err_status, "err", &msg, "secret", &secret,
                                "chars", &chars) != 0 ||
              state < SRV_FILE_RUNNING || state > SRV_FILE_CANCELLED || bytes < 0;
    if (!bad) {
        memset(info, 0, sizeof *info);
        double now = mt_now_s();
        info->state = (srv_file_state)state;
        info->done = done, info->total = total;
        info->kind = (srv_doc_kind)kind;
        info->bytes = (size_t)bytes;
        snprintf(info->name, sizeof info->name, "%s", name);
        info->err.status = (mt_status)err_status;
        snprintf(info->err.msg, sizeof info->err.msg, "%s", msg);
        snprintf(info->secret, sizeof info->secret, "%s", secret);
        info->chars = (long)chars;
        if (state == SRV_FILE_RUNNING) {
            info->t_start = now - elapsed - (wall_s() > at ? wall_s() - at : 0);
        } else {
            info->t_end = now;
            info->t_start = now - elapsed;
        }
    }
    json_decref(o);
    return bad ? -1 : 0;
}

int srv_file_share_result(srv_redis *r, const char *id, char **out, size_t *len)
{
    char key[160];
    key_of(r, id, ":data", key, sizeof key);
    *out = get(r, key, len);
    return *out ? 0 : -1;
}

int srv_file_share_delete(srv_redis *r, const char *id)
{
    char k1[160], k2[160], err[200];
    key_of(r, id, "", k1, sizeof k1);
    key_of(r, id, ":data", k2, sizeof k2);
    const char *argv[3] = { "DEL", k1, k2 };
    srv_redis_value v;
    return srv_redis_cmd(r, SRV_RW_INT, &v, 3, argv, NULL, err, sizeof err) == SRV_REDIS_OK ? 0 : -1;
}

int srv_file_share_gone(void *share, const char *id, const srv_file_info *info)
{
    const srv_file_share *sh = share;
    char key[160], err[200];
    key_of(sh->r, id, ":data", key, sizeof key);
    const char *argv[2] = { "DEL", key };
    srv_redis_value v;
    if (srv_redis_cmd(sh->r, SRV_RW_INT, &v, 2, argv, NULL, err, sizeof err) != SRV_REDIS_OK)
        return -1;
    srv_file_info gone = *info;
    gone.state = SRV_FILE_CANCELLED;
    return srv_file_share_publish(share, id, &gone, NULL);
}

int srv_file_share_ready(srv_redis *r, char *why, size_t why_len)
{
    const char *argv[1] = { "PING" };
    srv_redis_value v;
    srv_redis_rc rc = srv_redis_cmd(r, SRV_RW_STR, &v, 1, argv, NULL, why, why_len);
    srv_redis_value_clear(&v);
    return rc == SRV_REDIS_OK;
}
