/* pool: worker slots with a bounded wait queue, and per-model session pools. */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct srv_gate {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    int workers, busy;
    int queue, waiting;
    int timeout_ms;
};

srv_gate *srv_gate_new(int workers, int queue, int timeout_ms)
{
    srv_gate *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    g->workers = workers > 0 ? workers : 1;
    g->queue = queue;
    g->timeout_ms = timeout_ms;
    return g;
}

void srv_gate_free(srv_gate *g)
{
    if (!g)
        return;
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

static struct timespec deadline_after(int ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L)
        t.tv_sec++, t.tv_nsec -= 1000000000L;
    return t;
}

srv_code srv_gate_enter(srv_gate *g)
{
    srv_code rc = SRV_OK;
    pthread_mutex_lock(&g->mu);
    if (g->busy >= g->workers) {
        if (g->waiting >= g->queue) {
            rc = SRV_E_QUEUE_FULL;
        } else {
            struct timespec until = deadline_after(g->timeout_ms);
            g->waiting++;
            while (g->busy >= g->workers && rc == SRV_OK)
                if (pthread_cond_timedwait(&g->cv, &g->mu, &until) == ETIMEDOUT && g->busy >= g->workers)
                    rc = SRV_E_QUEUE_FULL;
            g->waiting--;
        }
    }
    if (rc == SRV_OK)
        g->busy++;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

void srv_gate_leave(srv_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->busy--;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

void srv_gate_stats(srv_gate *g, int *busy, int *waiting, int *workers)
{
    pthread_mutex_lock(&g->mu);
    *busy = g->busy;
    *waiting = g->waiting;
    *workers = g->workers;
    pthread_mutex_unlock(&g->mu);
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

/* ---- lease -------------------------------------------------------------------- */

int srv_lease_take(srv_gate *g, srv_sessions *p, srv_lease *lease, srv_response *resp)
{
    lease->gate = NULL;
    lease->sessions = NULL;
    lease->s = NULL;
    if (srv_gate_enter(g) != SRV_OK) {
        resp->retry_after = 1;
        return srv_fail(resp, SRV_E_QUEUE_FULL, "the server is busy; retry later");
    }
    mt_err err = { 0 };
    if (srv_sessions_get(p, &lease->s, &err) != MT_OK) {
        srv_gate_leave(g);
        return srv_fail(resp, SRV_E_INTERNAL, "cannot create a session: %s", err.msg);
    }
    lease->gate = g;
    lease->sessions = p;
    return 0;
}

void srv_lease_return(srv_lease *lease)
{
    if (lease->s)
        srv_sessions_put(lease->sessions, lease->s);
    if (lease->gate)
        srv_gate_leave(lease->gate);
    lease->s = NULL;
    lease->gate = NULL;
}
