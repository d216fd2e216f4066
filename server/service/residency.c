/* residency: models loaded on first use, least recently used unloaded (residency.h). */
#include "residency.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/metrics.h"
#include "util/clock.h"
#include "util/thread_prio.h"

/* RS_GONE: removed (admin API) and unloaded: never loaded again */
typedef enum { RS_UNLOADED, RS_LOADING, RS_LOADED, RS_UNLOADING, RS_GONE } rs_state;
typedef enum { FAIL_TIMEOUT, FAIL_TOO_BIG, FAIL_LOAD, FAIL_BUSY, FAIL_REMOVED } fail_reason;

typedef struct slot slot;

/* A decode job held by the residency: waiting for its model, or handed on
 * (its done() and ctx are ours until it is over). */
typedef struct waiter {
    srv_decode_job *dj;
    void          (*done)(srv_decode_job *dj);  /* the caller's, restored before calling it */
    void           *ctx;
    slot           *s;
    double          t;              /* when it began to wait */
    fail_reason     why;            /* on the failed list: why */
    mt_err          err;
    struct waiter  *next;
} waiter;

/* One model's residency; every field under r->lock. */
struct slot {
    srv_residency *r;
    srv_model     *m;
    rs_state       state;
    int            holders;         /* jobs handed on + srv_model_acquire holds */
    unsigned long  last_use;        /* r->tick at its last hold or release */
    waiter        *head, *tail;     /* jobs waiting for the load, oldest first */
    int            blocked;         /* srv_model_acquire callers waiting */
    double         blocked_since;
    size_t         known_bytes;     /* of its last load; 0: never loaded */
    int            too_big;         /* more than the whole budget: never loaded */
    int            removed;         /* DELETE /admin/models/ID: unloaded once nobody holds it, then RS_GONE */
    unsigned       fail_gen;        /* bumped by each failed load (fail: why) */
    mt_err         fail;
};

struct srv_residency {
    srv_server     *srv;
    pthread_mutex_t lock;
    pthread_cond_t  wake;           /* the loader: a job waits, a model was let go */
    pthread_cond_t  changed;        /* srv_model_acquire: a model loaded or failed */
    pthread_t       thread;
    int             stop;
    unsigned long   tick;
    int             queued;         /* jobs waiting, every model */
    size_t          max_known;      /* the largest model loaded so far */
    slot            slots[SRV_MAX_MODELS];
};

static const double TICK_S = 0.05;  /* the loader's look at timeouts while idle */

static void timed_wait(pthread_cond_t *c, pthread_mutex_t *l, double until)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double wait = until - mt_now_s();
    if (wait < 0)
        wait = 0;
    ts.tv_sec += (time_t)wait;
    ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(c, l, &ts);
}

static double mb(size_t bytes) { return (double)bytes / 1e6; }

/* ---- jobs: handed on, released, failed ---------------------------------------------- */

static void release(slot *s)
{
    srv_residency *r = s->r;
    pthread_mutex_lock(&r->lock);
    s->holders--;
    s->last_use = ++r->tick;
    if (s->holders == 0)
        pthread_cond_signal(&r->wake);      /* it may now make room */
    pthread_mutex_unlock(&r->lock);
}

/* The job is over: the model is let go, then the caller's done(). */
static void job_done(srv_decode_job *dj)
{
    waiter *w = dj->ctx;
    slot *s = w->s;
    dj->done = w->done;
    dj->ctx = w->ctx;
    free(w);
    release(s);
    dj->done(dj);
}

/* Outside the lock: the job never decodes; done() says why. */
static void fail_job(waiter *w)
{
    srv_decode_job *dj = w->dj;
    dj->done = w->done;
    dj->ctx = w->ctx;
    for (int i = 0; i < dj->n; i++) {
        dj->items[i].status = w->err.status;
        dj->items[i].err = w->err;
    }
    dj->status = w->err.status;
    dj->err = w->err;
    dj->timed_out = w->why == FAIL_TIMEOUT;     /* 503 + Retry-After (translate_job.c) */
    free(w);
    dj->done(dj);
}

static void fail_list(waiter *w)
{
    while (w) {
        waiter *next = w->next;
        fail_job(w);
        w = next;
    }
}

/* Outside the lock, the model held for w: to its decoder.  queued: w had
 * waited (submit already said yes, so a refusal fails the job). */
static int hand_on(waiter *w, int queued)
{
    srv_decode_job *dj = w->dj;
    srv_model *m = w->s->m;
    dj->done = job_done;
    dj->ctx = w;
    if (m->direct.submit(m->direct.self, dj) == 0)
        return 0;                           /* done() may have run already: w is gone */
    dj->done = w->done;
    dj->ctx = w->ctx;
    release(w->s);
    if (!queued) {
        free(w);
        return -1;
    }
    w->why = FAIL_BUSY;
    mt_err_set(&w->err, MT_ERR_BUSY, "the decoder's queue of model '%s' is full; retry later", m->id);
    fail_job(w);
    return 0;
}

/* srv_model.decoder on demand: any thread (an HTTP thread, a decoder's for a
 * pivot's second leg, the file runner). */
static int res_submit(void *self, srv_decode_job *dj)
{
    slot *s = self;
    srv_residency *r = s->r;
    waiter *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    *w = (waiter){ .dj = dj, .done = dj->done, .ctx = dj->ctx, .s = s, .t = mt_now_s() };
    pthread_mutex_lock(&r->lock);
    if (s->too_big || (s->removed && s->state != RS_LOADED)) {
        w->why = s->too_big ? FAIL_TOO_BIG : FAIL_REMOVED;
        w->err = s->fail;
        pthread_mutex_unlock(&r->lock);
        fail_job(w);
        return 0;
    }
    /* removed but still loaded: a request that found the model just before
     * DELETE holds it as the others do; the unload waits for it too */
    if (s->state == RS_LOADED) {
        s->holders++;
        s->last_use = ++r->tick;
        pthread_mutex_unlock(&r->lock);
        return hand_on(w, 0);
    }
    if (r->queued >= r->srv->opts.queue + SRV_MAX_MODELS) {
        pthread_mutex_unlock(&r->lock);
        free(w);
        return -1;                          /* 503 queue_full, as a full decoder */
    }
    if (s->tail)
        s->tail->next = w;
    else
        s->head = w;
    s->tail = w;
    r->queued++;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

/* Under the lock: every job waiting for s onto *failed, each with why and err. */
static void fail_waiting(slot *s, fail_reason why, const mt_err *err, waiter **failed)
{
    while (s->head) {
        waiter *w = s->head;
        s->head = w->next;
        s->r->queued--;
        w->why = why;
        w->err = *err;
        w->next = *failed;
        *failed = w;
    }
    s->tail = NULL;
}

/* Under the lock: jobs that waited longer than --load-timeout. */
static void expire(srv_residency *r, waiter **failed)
{
    double now = mt_now_s(), limit = r->srv->opts.load_timeout_s;
    for (int i = 0; i < r->srv->n_models; i++) {
        slot *s = &r->slots[i];
        waiter **at = &s->head, *prev = NULL;
        while (*at) {
            waiter *w = *at;
            if (now - w->t < limit) {
                prev = w;
                at = &w->next;
                continue;
            }
            *at = w->next;
            if (s->tail == w)
                s->tail = prev;
            r->queued--;
            w->why = FAIL_TIMEOUT;
            mt_err_set(&w->err, MT_ERR_BUSY, "model '%s' was not loaded within %d s (--load-timeout)%s; retry later",
                       s->m->id, r->srv->opts.load_timeout_s,
                       s->state == RS_LOADING ? ": it is loading" : ": no room (every loaded model is in use)");
            w->next = *failed;
            *failed = w;
        }
    }
}

/* ---- the loader ----------------------------------------------------------------------- */

static int resident(const slot *s) { return s->state != RS_UNLOADED; }

/* Under the lock: the models in memory and their bytes. */
static void totals(const srv_residency *r, int *n, size_t *bytes)
{
    *n = 0, *bytes = 0;
    for (int i = 0; i < r->srv->n_models; i++)
        if (resident(&r->slots[i])) {
            (*n)++;
            *bytes += r->slots[i].state == RS_LOADED ? r->slots[i].m->bytes : r->slots[i].known_bytes;
        }
}

/* A model never loaded: its weights file's bytes, as held (F16 half, INT8 about a quarter). */
static size_t card_estimate(const srv_residency *r, const slot *s)
{
    size_t b = s->m->info->file_bytes;
    int w = r->srv->opts.weights;
    return w == MT_WEIGHTS_F16 ? b / 2 : w == MT_WEIGHTS_I8 ? b / 3 : b;
}

/* The least recently used model nobody holds or waits for (not except), or NULL. */
static slot *victim(srv_residency *r, const slot *except)
{
    slot *v = NULL;
    for (int i = 0; i < r->srv->n_models; i++) {
        slot *s = &r->slots[i];
        if (s != except && s->state == RS_LOADED && !s->holders && !s->head && !s->blocked &&
            (!v || s->last_use < v->last_use))
            v = s;
    }
    return v;
}

/* Under the lock (released while it frees): v's loaded part. */
static void unload(srv_residency *r, slot *v, const char *why)
{
    v->state = RS_UNLOADING;
    pthread_mutex_unlock(&r->lock);
    size_t bytes = v->m->bytes;
    srv_model_unload_weights(v->m);
    srv_metrics_model_unloaded(v->m->index);
    fprintf(stderr, "mtserve: model %s unloaded (%.1f MB; %s)\n", v->m->id, mb(bytes), why);
    pthread_mutex_lock(&r->lock);
    v->state = RS_UNLOADED;
}

/* Under the lock: 1 if a model of `bytes` more fits the limits. */
static int fits(const srv_residency *r, size_t bytes)
{
    int n;
    size_t held;
    totals(r, &n, &held);
    const srv_options *o = &r->srv->opts;
    return (!o->max_models || n + 1 <= o->max_models) && (!o->memory_budget || held + bytes <= o->memory_budget);
}

static int over(const srv_residency *r)
{
    int n;
    size_t held;
    totals(r, &n, &held);
    const srv_options *o = &r->srv->opts;
    return (o->max_models && n > o->max_models) || (o->memory_budget && held > o->memory_budget);
}

/* The model waited for longest, not loaded, or NULL. */
static slot *wanted(srv_residency *r)
{
    slot *best = NULL;
    double best_t = 0;
    for (int i = 0; i < r->srv->n_models; i++) {
        slot *s = &r->slots[i];
        if (s->state != RS_UNLOADED || s->removed || (!s->head && !s->blocked))
            continue;
        double t = s->head ? s->head->t : s->blocked_since;
        if (s->blocked && s->blocked_since < t)
            t = s->blocked_since;
        if (!best || t < best_t)
            best = s, best_t = t;
    }
    return best;
}

static void too_big(srv_residency *r, slot *s, size_t bytes, int estimated, waiter **failed)
{
    s->too_big = 1;
    s->fail_gen++;
    mt_err_set(&s->fail, MT_ERR_NOMEM, "model '%s' needs %s%.1f MB (weights and a session), more than the whole "
               "--memory-budget of %.1f MB: it cannot be loaded", s->m->id, estimated ? "about " : "", mb(bytes),
               mb(r->srv->opts.memory_budget));
    fprintf(stderr, "mtserve: %s\n", s->fail.msg);
    fail_waiting(s, FAIL_TOO_BIG, &s->fail, failed);
    pthread_cond_broadcast(&r->changed);
}

/* Under the lock, s's weights just loaded (in ms): counts them, hands its
 * waiting jobs on (the lock released meanwhile), then makes room if its
 * exact bytes exceed the estimate. */
static void loaded(srv_residency *r, slot *s, double ms, waiter **failed)
{
    const srv_server *srv = r->srv;
    s->known_bytes = s->m->bytes;
    if (s->m->bytes > r->max_known)
        r->max_known = s->m->bytes;
    if (srv->opts.memory_budget && s->m->bytes > srv->opts.memory_budget) {
        unload(r, s, "larger than the whole --memory-budget");
        too_big(r, s, s->known_bytes, 0, failed);
        return;
    }
    s->state = RS_LOADED;
    s->last_use = ++r->tick;
    int n_jobs = 0;
    waiter *jobs = s->head;
    for (waiter *w = jobs; w; w = w->next)
        n_jobs++;
    s->head = s->tail = NULL;
    r->queued -= n_jobs;
    s->holders += n_jobs;                   /* held before anyone can pick it to unload */
    int n;
    size_t held;
    totals(r, &n, &held);
    fprintf(stderr, "mtserve: model %s loaded on demand in %.0f ms: %.1f MB (weights %.1f, session %.1f); "
                    "%d loaded, %.1f MB; %d request%s waited\n", s->m->id, ms, mb(s->m->bytes),
            mb(mt_model_get_info(s->m->weights)->weight_bytes), mb(srv_sessions_bytes(s->m->sessions)), n, mb(held),
            n_jobs, n_jobs == 1 ? "" : "s");
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    while (jobs) {
        waiter *next = jobs->next;
        jobs->next = NULL;
        hand_on(jobs, 1);
        jobs = next;
    }
    pthread_mutex_lock(&r->lock);
    /* its exact bytes may exceed the estimate: make room now if it can be made */
    while (over(r)) {
        slot *v = victim(r, s);
        if (!v) {
            fprintf(stderr, "mtserve: over the limits until a loaded model is let go\n");
            break;
        }
        unload(r, v, "least recently used, over the limits");
    }
}

/* Under the lock: loads s (making room first), hands its waiting jobs on.
 * 1: something changed; 0: no room (every loaded model is held): wait. */
static int load(srv_residency *r, slot *s, waiter **failed)
{
    srv_server *srv = r->srv;
    size_t own = s->known_bytes ? s->known_bytes : card_estimate(r, s), need = own;
    if (srv->opts.memory_budget && own > srv->opts.memory_budget) {
        too_big(r, s, own, !s->known_bytes, failed);
        return 1;
    }
    if (!s->known_bytes && r->max_known > need) {   /* never loaded: no smaller than the largest seen */
        need = r->max_known;
        if (srv->opts.memory_budget && need > srv->opts.memory_budget)
            need = srv->opts.memory_budget;
    }
    if (!fits(r, need)) {
        slot *v = victim(r, s);
        if (!v)
            return 0;
        char why[160];
        snprintf(why, sizeof why, "least recently used, for %s", s->m->id);
        unload(r, v, why);
        return 1;
    }
    s->state = RS_LOADING;
    pthread_mutex_unlock(&r->lock);
    mt_err err = { 0 };
    double t0 = mt_now_s();
    mt_status st = srv_model_load_weights(srv, s->m, &err);
    if (st != MT_OK)
        srv_model_unload_weights(s->m);     /* what was made of it */
    double ms = (mt_now_s() - t0) * 1e3;
    pthread_mutex_lock(&r->lock);
    if (st != MT_OK) {
        s->state = RS_UNLOADED;
        s->fail_gen++;
        mt_err_set(&s->fail, st, "cannot load model '%s': %s", s->m->id, err.msg);
        fprintf(stderr, "mtserve: %s\n", s->fail.msg);
        fail_waiting(s, FAIL_LOAD, &s->fail, failed);
        pthread_cond_broadcast(&r->changed);
        return 1;
    }
    loaded(r, s, ms, failed);
    return 1;
}

/* Under the lock: a removed model nobody holds is unloaded for good.  1 if one was. */
static int retire(srv_residency *r)
{
    for (int i = 0; i < r->srv->n_models; i++) {
        slot *s = &r->slots[i];
        if (!s->removed || s->holders || s->blocked || (s->state != RS_LOADED && s->state != RS_UNLOADED))
            continue;
        if (s->state == RS_LOADED)
            unload(r, s, "removed (DELETE /admin/models)");
        s->state = RS_GONE;
        fprintf(stderr, "mtserve: model %s removed\n", s->m->id);
        pthread_cond_broadcast(&r->changed);
        return 1;
    }
    return 0;
}

static void *loader_main(void *arg)
{
    mt_thread_rt(0);    /* started from a real-time HTTP thread (--http-sched rr): back in SCHED_OTHER */
    srv_residency *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        waiter *failed = NULL;
        if (retire(r))
            continue;
        expire(r, &failed);
        slot *s = wanted(r);
        int changed = s && load(r, s, &failed);
        if (!changed) {
            /* idle or no room: over the limits (an estimate too low) once a model is let go */
            slot *v = over(r) ? victim(r, NULL) : NULL;
            if (v)
                unload(r, v, "least recently used, over the limits");
            else if (!failed)
                timed_wait(&r->wake, &r->lock, mt_now_s() + TICK_S);
        }
        if (failed) {
            pthread_mutex_unlock(&r->lock);
            fail_list(failed);
            pthread_mutex_lock(&r->lock);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* ---- the API -------------------------------------------------------------------------- */

srv_residency *srv_residency_new(srv_server *srv, mt_err *err)
{
    srv_residency *r = calloc(1, sizeof *r);
    if (!r) {
        mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    r->srv = srv;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    pthread_cond_init(&r->changed, NULL);
    for (int i = 0; i < srv->n_models; i++) {
        r->slots[i] = (slot){ .r = r, .m = &srv->models[i] };
        srv->models[i].decoder = (srv_decoder){ .submit = res_submit, .self = &r->slots[i] };
    }
    srv->residency = r;
    if (pthread_create(&r->thread, NULL, loader_main, r) != 0) {
        srv->residency = NULL;
        pthread_cond_destroy(&r->changed);
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        mt_err_set(err, MT_ERR_NOMEM, "cannot start the model loader thread");
        return NULL;
    }
    return r;
}

void srv_residency_free(srv_residency *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = 1;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    /* no request is left; a job still waiting is failed (its done() resumes nobody harmful) */
    waiter *failed = NULL;
    mt_err gone;
    mt_err_set(&gone, MT_ERR_ABORTED, "the server is stopping");
    for (int i = 0; i < r->srv->n_models; i++) {
        fail_waiting(&r->slots[i], FAIL_LOAD, &gone, &failed);
        srv_model_unload_weights(r->slots[i].m);    /* schedulers' last done() release into r */
    }
    fail_list(failed);
    r->srv->residency = NULL;
    pthread_cond_destroy(&r->changed);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

int srv_model_acquire(srv_server *srv, srv_model *m, srv_response *resp)
{
    srv_residency *r = srv->residency;
    if (!r)
        return 0;
    slot *s = &r->slots[m->index];
    double deadline = mt_now_s() + srv->opts.load_timeout_s;
    pthread_mutex_lock(&r->lock);
    unsigned gen = s->fail_gen;
    if (s->removed && s->state != RS_LOADED) {
        pthread_mutex_unlock(&r->lock);
        return srv_fail(resp, SRV_E_UNKNOWN_MODEL, "model '%s' was removed (see GET /models)", m->id);
    }
    if (s->state != RS_LOADED && !s->too_big) {
        if (s->blocked++ == 0)
            s->blocked_since = mt_now_s();
        pthread_cond_signal(&r->wake);
        while (s->state != RS_LOADED && !s->too_big && !s->removed && s->fail_gen == gen && mt_now_s() < deadline)
            timed_wait(&r->changed, &r->lock, deadline);
        s->blocked--;
    }
    int rc = 0;
    if (s->state == RS_LOADED) {
        s->holders++;
        s->last_use = ++r->tick;
    } else if (s->removed) {
        rc = srv_fail(resp, SRV_E_UNKNOWN_MODEL, "model '%s' was removed (see GET /models)", m->id);
    } else if (s->too_big || s->fail_gen != gen) {
        rc = srv_fail(resp, SRV_E_INTERNAL, "%s", s->fail.msg);
    } else {
        resp->retry_after = 1;
        rc = srv_fail(resp, SRV_E_LOADING, "model '%s' was not loaded within %d s (--load-timeout); retry later",
                      m->id, srv->opts.load_timeout_s);
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void srv_model_release(srv_server *srv, srv_model *m)
{
    if (srv->residency)
        release(&srv->residency->slots[m->index]);
}

/* m's loaded part into out (the caller keeps it from being unloaded meanwhile). */
static void state_of(srv_model *m, srv_model_state *out)
{
    const mt_model_info *i = mt_model_get_info(m->weights);
    out->loaded = 1;
    out->bytes = m->bytes;
    out->weight_bytes = i->weight_bytes;
    out->session_bytes = srv_sessions_bytes(m->sessions);
    out->load_ms = m->load_ms;
    snprintf(out->dtype, sizeof out->dtype, "%s", i->dtype);
    snprintf(out->weights, sizeof out->weights, "%s", i->weights);
    snprintf(out->int8_kernel, sizeof out->int8_kernel, "%s", i->int8_kernel);
    if (m->sched) {
        out->has_sched = 1;
        srv_sched_stats(m->sched, &out->sched);
    }
}

int srv_models_state(srv_server *srv, srv_model_state *out)
{
    srv_residency *r = srv->residency;
    if (r)
        pthread_mutex_lock(&r->lock);       /* one moment for all: never two states of a swap */
    int n = srv->n_models;                  /* models are added under the lock too */
    for (int i = 0; i < n; i++) {
        srv_model *m = &srv->models[i];
        memset(&out[i], 0, sizeof out[i]);
        if (r ? r->slots[i].state == RS_LOADED : atomic_load(&srv->ready) && m->weights != NULL)
            state_of(m, &out[i]);
        if (r) {
            out[i].holders = r->slots[i].holders;
            out[i].removing = r->slots[i].removed && r->slots[i].state != RS_GONE;
            out[i].gone = r->slots[i].state == RS_GONE;
        }
    }
    if (r)
        pthread_mutex_unlock(&r->lock);
    return n;
}

void srv_model_state_get(srv_server *srv, srv_model *m, srv_model_state *out)
{
    memset(out, 0, sizeof *out);
    srv_residency *r = srv->residency;
    if (!r) {                               /* loaded at start: once ready, for good */
        if (atomic_load(&srv->ready) && m->weights)
            state_of(m, out);
        return;
    }
    pthread_mutex_lock(&r->lock);
    slot *s = &r->slots[m->index];
    if (s->state == RS_LOADED)
        state_of(m, out);
    out->holders = s->holders;
    out->removing = s->removed && s->state != RS_GONE;
    out->gone = s->state == RS_GONE;
    pthread_mutex_unlock(&r->lock);
}

/* ---- the admin API: models added and removed while serving ---------------------------- */

int srv_residency_add(srv_residency *r, srv_model *m, mt_err *err)
{
    srv_server *srv = r->srv;
    pthread_mutex_lock(&r->lock);
    int i = srv->n_models;
    if (i >= SRV_MAX_MODELS || m != &srv->models[i]) {
        pthread_mutex_unlock(&r->lock);
        mt_err_set(err, MT_ERR_BUSY, "at most %d models over the server's life (removed ones count)",
                   SRV_MAX_MODELS);
        return -1;
    }
    r->slots[i] = (slot){ .r = r, .m = m };
    m->decoder = (srv_decoder){ .submit = res_submit, .self = &r->slots[i] };
    atomic_fetch_add(&srv->n_models, 1);    /* published: everything above is seen with it */
    pthread_mutex_unlock(&r->lock);
    return 0;
}

void srv_residency_remove(srv_residency *r, srv_model *m)
{
    slot *s = &r->slots[m->index];
    waiter *failed = NULL;
    atomic_store(&m->removed, 1);           /* lookups and listings skip it from now on */
    pthread_mutex_lock(&r->lock);
    if (!s->removed) {
        s->removed = 1;
        mt_err_set(&s->fail, MT_ERR_INPUT, "model '%s' was removed (see GET /models)", m->id);
        fail_waiting(s, FAIL_REMOVED, &s->fail, &failed);   /* never loaded for them now */
        pthread_cond_broadcast(&r->changed);
        pthread_cond_signal(&r->wake);
    }
    pthread_mutex_unlock(&r->lock);
    fail_list(failed);
}
