/* admin: models added and removed while serving (admin.h). */
#include "admin.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/metrics.h"
#include "hub/hub.h"
#include "residency.h"
#include "util/thread_prio.h"

/* One add: its thread and what it shows while pending. */
typedef struct {
    srv_admin        *a;
    srv_admin_pending p;
    int               used;         /* listed (pending or failed) */
    int               running;      /* its thread is not joined yet */
    int               over;         /* its thread has nothing left to do: join it */
    pthread_t         thread;
} add_job;

struct srv_admin {
    srv_server     *srv;
    pthread_mutex_t lock;           /* jobs[] */
    pthread_mutex_t publish;        /* one add or removal decided at a time */
    pthread_mutex_t fetch;          /* one download at a time (libcurl's global state) */
    add_job         jobs[SRV_ADMIN_MAX_PENDING];
};

srv_admin *srv_admin_new(srv_server *srv)
{
    srv_admin *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->srv = srv;
    pthread_mutex_init(&a->lock, NULL);
    pthread_mutex_init(&a->publish, NULL);
    pthread_mutex_init(&a->fetch, NULL);
    return a;
}

/* Under a->lock: joins the threads that are over (they no longer take the lock). */
static void reap(srv_admin *a)
{
    for (int i = 0; i < SRV_ADMIN_MAX_PENDING; i++)
        if (a->jobs[i].running && a->jobs[i].over) {
            pthread_join(a->jobs[i].thread, NULL);
            a->jobs[i].running = 0;
        }
}

void srv_admin_free(srv_admin *a)
{
    if (!a)
        return;
    for (int i = 0; i < SRV_ADMIN_MAX_PENDING; i++) {
        pthread_mutex_lock(&a->lock);
        int running = a->jobs[i].running;
        pthread_mutex_unlock(&a->lock);
        if (running)
            pthread_join(a->jobs[i].thread, NULL);  /* a download in progress ends first */
    }
    pthread_mutex_destroy(&a->fetch);
    pthread_mutex_destroy(&a->publish);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

/* ---- an add, on its own thread ---------------------------------------------------------- */

static void on_progress(void *ud, const char *file, uint64_t done, uint64_t total)
{
    add_job *j = ud;
    pthread_mutex_lock(&j->a->lock);
    snprintf(j->p.file, sizeof j->p.file, "%s", file);
    j->p.done = done;
    j->p.total = total;
    pthread_mutex_unlock(&j->a->lock);
}

/* The hub name's snapshot directory: from the cache, else downloaded. */
static mt_status fetch(add_job *j, char *dir, size_t cap, mt_err *err)
{
    hub_config cfg;
    hub_ref ref;
    if (hub_config_from_env(&cfg) != 0)
        return mt_err_set(err, MT_ERR_IO, "no hub cache directory (set HF_HUB_CACHE or HF_HOME)");
    if (!hub_ref_parse(j->p.name, &ref))
        return mt_err_set(err, MT_ERR_INPUT, "'%s' is not a hub name (org/name[@rev])", j->p.name);
    cfg.progress = on_progress;
    cfg.progress_ud = j;
    pthread_mutex_lock(&j->a->fetch);
    mt_status st = hub_model_dir(&cfg, &ref, dir, cap, err);
    pthread_mutex_unlock(&j->a->fetch);
    return st;
}

/* The card of dir read into the next model, which is then published.  0 or -1 with err. */
static int publish(srv_admin *a, const char *id, const char *dir, mt_err *err)
{
    srv_server *srv = a->srv;
    pthread_mutex_lock(&a->publish);
    int rc = -1, n = srv->n_models;
    srv_model *m = &srv->models[n < SRV_MAX_MODELS ? n : 0];
    if (srv_find_model(srv, id))
        mt_err_set(err, MT_ERR_INPUT, "a model is already named '%s'", id);
    else if (n >= SRV_MAX_MODELS)
        mt_err_set(err, MT_ERR_BUSY, "at most %d models over the server's life (removed ones count)", SRV_MAX_MODELS);
    else if (srv_model_read_card(srv, m, id, dir, n, err) == 0) {
        srv_metrics_add_model(n, m->id);    /* first: its first load is counted */
        rc = srv_residency_add(srv->residency, m, err);
    }
    if (rc == 0) {
        fprintf(stderr, "mtserve: model %s added (%s): %s->%s, loaded on first use\n", m->id, m->dir,
                m->info->source_lang[0] ? m->info->source_lang : "?",
                m->info->target_lang[0] ? m->info->target_lang : "?");
        if (!atomic_exchange(&srv->ready, 1))   /* serve's first model, downloaded at start */
            fprintf(stderr, "mtserve: ready: model %s served\n", m->id);
    }
    pthread_mutex_unlock(&a->publish);
    return rc;
}

static void *add_main(void *arg)
{
    mt_thread_rt(0);    /* started from a real-time HTTP thread (--http-sched rr): back in SCHED_OTHER */
    add_job *j = arg;
    srv_admin *a = j->a;
    char dir[1024];
    mt_err err = { 0 };
    mt_status st = MT_OK;
    if (j->p.name[0])
        st = fetch(j, dir, sizeof dir, &err);
    else
        snprintf(dir, sizeof dir, "%s", j->p.path);
    pthread_mutex_lock(&a->lock);
    j->p.phase = SRV_ADMIN_READING;
    pthread_mutex_unlock(&a->lock);
    int ok = st == MT_OK && publish(a, j->p.id, dir, &err) == 0;
    if (!ok && j->p.at_start)
        fprintf(stderr, "mtserve: model %s (--model %s) cannot be served: %s\n", j->p.id, j->p.name, err.msg);
    else if (!ok)
        fprintf(stderr, "mtserve: model %s not added: %s\n", j->p.id, err.msg);
    pthread_mutex_lock(&a->lock);
    if (ok) {
        j->used = 0;                        /* served now: GET /models lists it */
    } else {
        j->p.phase = SRV_ADMIN_FAILED;
        snprintf(j->p.error, sizeof j->p.error, "%s", err.msg);
    }
    j->over = 1;
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* ---- the API ------------------------------------------------------------------------ */

/* 1 if id may name a model: 1-63 bytes of letters, digits and . _ - (not starting with '.'). */
static int good_id(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n >= sizeof ((srv_model *)0)->id || id[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return 1;
}

/* Under a->lock: a free entry (a failed add of the same id, else unused, else the oldest failed), or NULL. */
static add_job *entry_for(srv_admin *a, const char *id)
{
    add_job *free_job = NULL;
    for (int i = 0; i < SRV_ADMIN_MAX_PENDING; i++) {
        add_job *j = &a->jobs[i];
        if (j->running)
            continue;
        if (j->used && !strcmp(j->p.id, id))
            return j;
        if (!j->used && !free_job)
            free_job = j;
    }
    for (int i = 0; !free_job && i < SRV_ADMIN_MAX_PENDING; i++)
        if (!a->jobs[i].running && (!free_job || a->jobs[i].p.started < free_job->p.started))
            free_job = &a->jobs[i];
    return free_job;
}

/* The request's fields checked: 0, or -1 with resp failed. */
static int check_add(srv_admin *a, const char *id, const char *dir, const char *name, srv_response *resp)
{
    struct stat sb;
    hub_ref ref;
    if (!good_id(id))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "\"id\" must be 1 to 63 letters, digits, '.', '_' or '-' "
                        "(not starting with '.')");
    if ((dir != NULL) == (name != NULL))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "give exactly one of \"path\" (a model directory) and \"name\" "
                        "(a hub name org/name[@rev])");
    if (dir && (!dir[0] || strlen(dir) >= sizeof ((srv_admin_pending *)0)->path))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "\"path\" must be a directory's path, at most 1023 bytes");
    if (dir && (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "\"path\": no directory '%s' on the server", dir);
    if (name && (strlen(name) >= sizeof ((srv_admin_pending *)0)->name || !hub_ref_parse(name, &ref)))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "\"name\" must be a hub name org/name[@rev]");
    if (srv_find_model(a->srv, id))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "a model is already named '%s' (DELETE /admin/models/%s first)",
                        id, id);
    return 0;
}

static int add(srv_admin *a, const char *id, const char *dir, const char *name, int at_start,
               srv_admin_pending *out, srv_response *resp)
{
    if (check_add(a, id, dir, name, resp))
        return -1;
    pthread_mutex_lock(&a->lock);
    reap(a);
    for (int i = 0; i < SRV_ADMIN_MAX_PENDING; i++)
        if (a->jobs[i].used && a->jobs[i].p.phase != SRV_ADMIN_FAILED && !strcmp(a->jobs[i].p.id, id)) {
            pthread_mutex_unlock(&a->lock);
            return srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' is being added already (GET /admin/models)", id);
        }
    add_job *j = entry_for(a, id);
    if (!j) {
        pthread_mutex_unlock(&a->lock);
        resp->retry_after = 5;
        return srv_fail(resp, SRV_E_QUEUE_FULL, "%d models are being added; retry when one is done",
                        SRV_ADMIN_MAX_PENDING);
    }
    *j = (add_job){ .a = a, .used = 1, .running = 1 };
    snprintf(j->p.id, sizeof j->p.id, "%s", id);
    snprintf(j->p.path, sizeof j->p.path, "%s", dir ? dir : "");
    snprintf(j->p.name, sizeof j->p.name, "%s", name ? name : "");
    j->p.phase = name ? SRV_ADMIN_DOWNLOADING : SRV_ADMIN_READING;
    j->p.started = srv_now();
    j->p.at_start = at_start;
    if (out)
        *out = j->p;
    if (pthread_create(&j->thread, NULL, add_main, j) != 0) {
        j->used = j->running = 0;
        pthread_mutex_unlock(&a->lock);
        return srv_fail(resp, SRV_E_INTERNAL, "cannot start a thread to add model '%s'", id);
    }
    pthread_mutex_unlock(&a->lock);
    return 0;
}

int srv_admin_add(srv_admin *a, const char *id, const char *dir, const char *name, srv_admin_pending *out,
                  srv_response *resp)
{
    return add(a, id, dir, name, 0, out, resp);
}

int srv_admin_add_at_start(srv_admin *a, const char *id, const char *name, srv_response *resp)
{
    return add(a, id, NULL, name, 1, NULL, resp);
}

int srv_admin_remove(srv_admin *a, const char *id, srv_model **out, srv_response *resp)
{
    srv_server *srv = a->srv;
    pthread_mutex_lock(&a->publish);
    srv_model *m = id[0] ? srv_find_model(srv, id) : NULL;
    int listed = 0;
    for (int i = 0; i < srv->n_models; i++)
        listed += srv_model_listed(&srv->models[i]);
    int rc = 0;
    if (!m) {
        srv_admin_pending p[SRV_ADMIN_MAX_PENDING];
        int n = srv_admin_pending_list(a, p, SRV_ADMIN_MAX_PENDING), pending = 0;
        for (int i = 0; i < n; i++)
            pending |= p[i].phase != SRV_ADMIN_FAILED && !strcmp(p[i].id, id);
        rc = pending ? srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' is still being added; remove it once "
                                "GET /models lists it", id)
                     : srv_fail(resp, SRV_E_UNKNOWN_MODEL, "unknown model '%s' (see GET /models)", id);
    } else if (listed <= 1) {
        rc = srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' is the last one served: add another first", id);
    } else {
        srv_residency_remove(srv->residency, m);
        srv_metrics_remove_model(m->index);
        fprintf(stderr, "mtserve: model %s removed from the listings; unloaded once no request holds it\n", id);
        *out = m;
    }
    pthread_mutex_unlock(&a->publish);
    return rc;
}

int srv_admin_pending_list(srv_admin *a, srv_admin_pending *out, int cap)
{
    int n = 0;
    pthread_mutex_lock(&a->lock);
    for (int i = 0; i < SRV_ADMIN_MAX_PENDING && n < cap; i++)
        if (a->jobs[i].used)
            out[n++] = a->jobs[i].p;
    pthread_mutex_unlock(&a->lock);
    return n;
}

int srv_admin_pending_find(srv_admin *a, const char *id, srv_admin_pending *out)
{
    int found = 0;
    pthread_mutex_lock(&a->lock);
    for (int i = 0; i < SRV_ADMIN_MAX_PENDING && !found; i++) {
        const add_job *j = &a->jobs[i];
        if (j->used && j->p.phase != SRV_ADMIN_FAILED && !strcmp(j->p.id, id)) {
            found = 1;
            if (out)
                *out = j->p;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return found;
}

int srv_admin_in_progress(srv_admin *a)
{
    int n = 0;
    pthread_mutex_lock(&a->lock);
    for (int i = 0; i < SRV_ADMIN_MAX_PENDING; i++)
        n += a->jobs[i].used && a->jobs[i].p.phase != SRV_ADMIN_FAILED;
    pthread_mutex_unlock(&a->lock);
    return n;
}
