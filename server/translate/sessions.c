/* sessions: one model's session pool (sessions.h). */
#include "sessions.h"

#include <pthread.h>
#include <stdlib.h>

#include "util/check.h"

struct srv_sessions {
    pthread_mutex_t   mu;
    const mt_model   *model;
    mt_session_params params;
    mt_session      **free_list;
    int               n_free, n_created, max;
    size_t            bytes;
};

srv_sessions *srv_sessions_new(const mt_model *model, const mt_session_params *params, int max)
{
    srv_sessions *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->free_list = calloc((size_t)max, sizeof *p->free_list);
    if (!p->free_list) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->model = model;
    p->params = *params;
    p->max = max;
    return p;
}

void srv_sessions_free(srv_sessions *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n_free; i++)
        mt_session_free(p->free_list[i]);
    pthread_mutex_destroy(&p->mu);
    free(p->free_list);
    free(p);
}

/* Creating a session allocates its KV caches (megabytes), so do it unlocked. */
mt_status srv_sessions_get(srv_sessions *p, mt_session **out, mt_err *err)
{
    pthread_mutex_lock(&p->mu);
    if (p->n_free > 0) {
        *out = p->free_list[--p->n_free];
        pthread_mutex_unlock(&p->mu);
        return MT_OK;
    }
    if (p->n_created >= p->max) {
        pthread_mutex_unlock(&p->mu);
        return mt_err_set(err, MT_ERR_BUSY, "no free session");
    }
    p->n_created++;
    pthread_mutex_unlock(&p->mu);
    mt_status st = mt_session_new(p->model, &p->params, out, err);
    pthread_mutex_lock(&p->mu);
    if (st != MT_OK)
        p->n_created--;
    else if (!p->bytes)
        p->bytes = mt_session_bytes(*out);
    pthread_mutex_unlock(&p->mu);
    return st;
}

void srv_sessions_put(srv_sessions *p, mt_session *s)
{
    mt_session_trim(s, SRV_SESSION_TRIM_MIN_BYTES, NULL);  /* still ours: outside the lock */
    pthread_mutex_lock(&p->mu);
    /* put back more than were made: a bug of the caller; the extra one is freed, not written past the list */
    MT_ASSERT_OR(p->n_free < p->n_created, pthread_mutex_unlock(&p->mu); mt_session_free(s); return);
    p->free_list[p->n_free++] = s;
    pthread_mutex_unlock(&p->mu);
}

size_t srv_sessions_bytes(srv_sessions *p)
{
    pthread_mutex_lock(&p->mu);
    size_t b = p->bytes;
    pthread_mutex_unlock(&p->mu);
    return b;
}
