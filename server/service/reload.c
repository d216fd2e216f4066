/* reload: SIGHUP re-reads the API keys and the glossary files (reload.h). */
#include "reload.h"

#include <pthread.h>
#include <stdio.h>

#include "glossaries.h"

/* The keys from the options again, merged onto the current ones.  0, or -1 with err. */
static int read_keys(const srv_server *srv, srv_api_keys *out, char *err, size_t err_len)
{
    srv_api_keys fresh = { 0 };
    *out = (srv_api_keys){ 0 };
    int rc = -1;
    if (srv->opts.api_key[0] && srv_api_keys_add(&fresh, srv->opts.api_key, err, err_len))
        goto done;
    if (srv->opts.api_keys[0] && srv_api_keys_load(&fresh, srv->opts.api_keys, err, err_len))
        goto done;
    if (srv->keys.n && fresh.n == 0) {
        snprintf(err, err_len, "--api-keys %s: no key in the file", srv->opts.api_keys);
        goto done;
    }
    if (srv_api_keys_merge(&srv->keys, &fresh, out)) {
        snprintf(err, err_len, "out of memory");
        goto done;
    }
    rc = 0;
done:
    srv_api_keys_free(&fresh);
    return rc;
}

int srv_reload(srv_server *srv, char *msg, size_t msg_len)
{
    srv_api_keys keys;
    srv_glossary *gl[SRV_MAX_GLOSSARIES];
    char err[1400];
    int rc = -1;
    if (read_keys(srv, &keys, err, sizeof err)) {
        snprintf(msg, msg_len, "SIGHUP: nothing reloaded: %s", err);
        return -1;
    }
    if (srv_glossaries_read(srv, gl, err, sizeof err)) {
        snprintf(msg, msg_len, "SIGHUP: nothing reloaded: %s", err);
        goto done;                      /* frees what was read */
    }
    pthread_rwlock_wrlock(&srv->reload_lock);
    srv_api_keys old = srv->keys;       /* the swap: no reader is inside now */
    srv->keys = keys;
    keys = old;
    for (int i = 0; i < SRV_MAX_GLOSSARIES; i++) {
        srv_glossary *g = srv->glossaries[i];
        srv->glossaries[i] = gl[i];
        gl[i] = g;
    }
    pthread_rwlock_unlock(&srv->reload_lock);
    snprintf(msg, msg_len, "SIGHUP: reloaded %d API key%s (%d revoked) and %d glossary file%s",
             srv_api_keys_active(&srv->keys), srv_api_keys_active(&srv->keys) == 1 ? "" : "s",
             srv->keys.n - srv_api_keys_active(&srv->keys), srv->opts.n_glossaries,
             srv->opts.n_glossaries == 1 ? "" : "s");
    rc = 0;
done:
    for (int i = 0; i < SRV_MAX_GLOSSARIES; i++)
        srv_glossary_free(gl[i]);       /* the old ones, or what a failed read made */
    srv_api_keys_free(&keys);
    return rc;
}
