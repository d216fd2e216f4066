/* pool: inference threads behind a bounded queue, and per-model session pools. */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

/* ---- workers ------------------------------------------------------------------ */

typedef struct {
    srv_job_fn fn, after;
    void      *arg;
} job;

struct srv_workers {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    pthread_t      *tids;
    int             threads, started;
    job            *ring;            /* capacity threads + queue */
    int             cap, head, count;
    int             busy;
    int             stop;
};

static void *worker_main(void *arg)
{
    srv_workers *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->count == 0 && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->count == 0)
            break;
        job j = w->ring[w->head];
        w->head = (w->head + 1) % w->cap;
        w->count--;
        w->busy++;
        pthread_mutex_unlock(&w->mu);
        j.fn(j.arg);
        pthread_mutex_lock(&w->mu);
        w->busy--;
        if (j.after) {
            pthread_mutex_unlock(&w->mu);
            j.after(j.arg);
            pthread_mutex_lock(&w->mu);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

srv_workers *srv_workers_new(int threads, int queue)
{
    srv_workers *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->threads = threads > 0 ? threads : 1;
    w->cap = w->threads + (queue > 0 ? queue : 0);
    w->ring = calloc((size_t)w->cap, sizeof *w->ring);
    w->tids = calloc((size_t)w->threads, sizeof *w->tids);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (!w->ring || !w->tids) {
        srv_workers_free(w);
        return NULL;
    }
    for (; w->started < w->threads; w->started++)
        if (pthread_create(&w->tids[w->started], NULL, worker_main, w) != 0) {
            srv_workers_free(w);
            return NULL;
        }
    return w;
}

void srv_workers_free(srv_workers *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->started; i++)
        pthread_join(w->tids[i], NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->ring);
    free(w->tids);
    free(w);
}

/* Outstanding = queued + running; a free thread or a free queue place admits. */
int srv_workers_submit(srv_workers *w, srv_job_fn fn, srv_job_fn after, void *arg)
{
    pthread_mutex_lock(&w->mu);
    if (w->stop || w->count + w->busy >= w->cap) {
        pthread_mutex_unlock(&w->mu);
        return -1;
    }
    w->ring[(w->head + w->count) % w->cap] = (job){ fn, after, arg };
    w->count++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void srv_workers_stats(srv_workers *w, int *busy, int *queued, int *threads)
{
    pthread_mutex_lock(&w->mu);
    *busy = w->busy;
    *queued = w->count;
    *threads = w->threads;
    pthread_mutex_unlock(&w->mu);
}

/* ---- sessions ----------------------------------------------------------------- */

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
    pthread_mutex_lock(&p->mu);
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

/* ---- for handlers ---------------------------------------------------------------- */

int srv_session_take(srv_sessions *p, mt_session **out, srv_response *resp)
{
    mt_err err = { 0 };
    if (srv_sessions_get(p, out, &err) != MT_OK)
        return srv_fail(resp, SRV_E_INTERNAL, "cannot get a session: %s", err.msg);
    return 0;
}
