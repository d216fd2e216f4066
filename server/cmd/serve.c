/* serve: `mtserve serve` -- options, thread budget, startup order, signals.
 *
 * Startup listens first and loads models afterwards (in a loader thread), so
 * /health can answer 503 "loading" meanwhile.  A --model org/name not in the
 * Hugging Face cache yet is downloaded once the server listens, by the admin
 * API's add (service/admin.h; its routes stay closed without --admin-key),
 * while /health shows the download and the other models serve; when no
 * model at all could be served, the server exits 1.  SIGTERM/SIGINT are
 * blocked in every thread and taken synchronously by the main thread with sigtimedwait:
 * it then stops accepting, lets in-flight requests finish, and exits 0.
 * SIGHUP is taken the same way: the main thread re-reads the API keys and the
 * glossary files (service/reload.h) while the others serve.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "commands.h"
#include "util/thread_prio.h"
#include "http/http.h"
#include "common/metrics.h"
#include "api/routes.h"
#include "service/admin.h"
#include "service/file_takeover.h"
#include "service/glossaries.h"
#include "service/reload.h"
#include "service/residency.h"
#include "service/server.h"

typedef struct {
    srv_server *srv;
    _Atomic int done;       /* 1 loaded, -1 failed */
    mt_err      err;
    int         failed_model;
} loader;

/* serve's --model org/name not in the cache: downloaded once the server listens */
static struct {
    srv_model_spec v[SRV_MAX_MODELS];
    int            n;
} later;

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* Models on demand (service/residency.h) rather than all loaded at start;
 * with the admin API too, whose models are added and removed through it,
 * and with a download at start (added the same way). */
static int on_demand(const srv_options *o)
{
    return o->model_dir[0] || o->max_models > 0 || o->memory_budget > 0 || o->admin_key[0] || later.n > 0;
}

/* Workers x compute threads <= cores: on 2 cores, 2 workers of 1 thread each
 * (two requests decode in parallel; one alone uses one core).  The compute
 * threads are the engine's one process-wide pool (engine/kernels/parallel.h): one
 * session at a time uses it, others run on their own thread.  The HTTP
 * threads only parse and reply: as many as cores, at least 2. */
static void plan_threads(srv_server *srv)
{
    const srv_options *o = &srv->opts;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    srv->cores = n > 0 ? (int)n : 1;
    srv->http_threads = o->http_threads > 0 ? o->http_threads : (srv->cores > 2 ? srv->cores : 2);
    if (o->batching) {
        /* Batching: the scheduler decodes /translate with every core in the
         * engine's pool, and no thread waits for it (the HTTP threads split,
         * tokenize and join; the scheduler resumes the connection).  The
         * workers run only /attention. */
        srv->workers = o->threads > 0 ? o->threads : srv->cores;
        srv->blas_threads = o->blas_threads > 0 ? o->blas_threads : srv->cores;
        return;
    }
    srv->workers = o->threads > 0 ? o->threads : srv->cores;
    srv->blas_threads = o->blas_threads > 0 ? o->blas_threads
                        : (srv->cores / srv->workers > 0 ? srv->cores / srv->workers : 1);
    srv->http_threads = o->http_threads > 0 ? o->http_threads : (srv->cores > 2 ? srv->cores : 2);
    if (srv->workers * srv->blas_threads > srv->cores)
        fprintf(stderr, "mtserve: warning: %d workers x %d compute threads > %d cores\n",
                srv->workers, srv->blas_threads, srv->cores);
}

static void *load_models(void *arg)
{
    loader *ld = arg;
    srv_server *srv = ld->srv;
    for (int i = 0; i < srv->opts.n_models; i++) {
        srv_model *m = &srv->models[i];
        if (srv_model_load(srv, i, &ld->err) != MT_OK) {       /* with its scheduler when batching */
            ld->failed_model = i;
            atomic_store(&ld->done, -1);
            return NULL;
        }
        fprintf(stderr, "mtserve: model %s (%s, %s %s): %s->%s%s, %d+%d layers, d_model %d, vocab %d, "
                        "%.1f MB weights (%s%s%s), session %.1f MB (batch %d, src %d, tgt %d), loaded in %.0f ms\n",
                m->id, m->dir, m->info->format, m->info->weights_file,
                m->info->source_lang[0] ? m->info->source_lang : "?",
                m->info->target_lang[0] ? m->info->target_lang : "?",
                m->n_targets ? " (multilingual)" : m->llm ? " (decoder-only: translation.json's pairs)" : "",
                m->info->enc_layers,
                m->info->dec_layers, m->info->d_model, m->info->vocab_size,
                (double)m->info->weight_bytes / 1e6, m->info->weights,
                m->info->int8_kernel[0] ? " " : "", m->info->int8_kernel, (double)srv_sessions_bytes(m->sessions) / 1e6,
                m->sparams.max_batch, m->sparams.max_src_len, m->sparams.max_tgt_len, m->load_ms);
    }
    atomic_store(&srv->ready, 1);
    atomic_store(&ld->done, 1);
    fprintf(stderr, "mtserve: ready\n");
    return NULL;
}

static void register_metrics(const srv_server *srv)
{
    const char *paths[SRV_METRICS_MAX_ROUTES];
    srv_metrics_set_routes(paths, srv_route_paths(paths, SRV_METRICS_MAX_ROUTES));
    const char *ids[SRV_MAX_MODELS];
    for (int i = 0; i < srv->n_models; i++)   /* named before: on demand, every model available */
        ids[i] = srv->models[i].id;
    srv_metrics_set_models(ids, srv->n_models);
}

/* Waits for SIGTERM/SIGINT (SIGHUP: reloads, then waits on); returns 0 on
 * a signal, 1 if loading failed. */
static int wait_for_signal(const sigset_t *set, loader *ld)
{
    struct timespec tick = { 0, 200 * 1000000L };
    for (;;) {
        int sig = sigtimedwait(set, NULL, &tick);
        if (sig == SIGHUP) {
            char msg[1600];
            srv_reload(ld->srv, msg, sizeof msg);
            fprintf(stderr, "mtserve: %s\n", msg);
            continue;
        }
        if (sig == SIGTERM || sig == SIGINT) {
            fprintf(stderr, "mtserve: %s: stopping (finishing in-flight requests)\n",
                    sig == SIGTERM ? "SIGTERM" : "SIGINT");
            return 0;
        }
        srv_server *srv = ld->srv;
        if (srv->admin && !srv_admin_in_progress(srv->admin) && !atomic_load(&srv->ready)) {
            fprintf(stderr, "mtserve: no model could be served: the downloads at start failed (above)\n");
            return 1;       /* in progress first: a model is published (ready) before its add is over */
        }
        if (atomic_load(&ld->done) < 0) {
            fprintf(stderr, "mtserve: cannot load model '%s': %s\n",
                    ld->srv->opts.models[ld->failed_model].dir, ld->err.msg);
            return 1;
        }
    }
}

/* Each connection is a descriptor: raise the soft open-file limit to the hard
 * one, and keep --max-connections within it (a server out of descriptors
 * stops accepting, and waiting clients hang in the backlog). */
#define RESERVED_FDS 64     /* model files, logs, the daemon's own, the loader's */
static void fit_connections(srv_server *srv)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)srv->opts.max_connections + RESERVED_FDS > rl.rlim_cur) {
        int fit = rl.rlim_cur > 2 * RESERVED_FDS ? (int)(rl.rlim_cur - RESERVED_FDS) : RESERVED_FDS;
        fprintf(stderr, "mtserve: open-file limit %llu: --max-connections %d lowered to %d\n",
                (unsigned long long)rl.rlim_cur, srv->opts.max_connections, fit);
        srv->opts.max_connections = fit;
    }
}

/* --redis: its URL read (a bad one fails the start), the client (it connects
 * on first use: Redis may come up after us; one PING now says which in the log)
 * and the limits and quotas counted through it.  0, or -1 with a message. */
static int redis_start(srv_server *srv, char *err, size_t err_len)
{
    if (srv->opts.redis[0]) {
        srv_redis_url url;
        if (srv_redis_url_parse(srv->opts.redis, &url, err, err_len))
            return -1;
        srv_redis_params p = { .timeout_ms = srv->opts.redis_timeout_ms, .budget_ms = srv->opts.redis_budget_ms,
                               .connections = srv->http_threads + 2, .prefix = srv->opts.redis_prefix };
        if (!(srv->redis = srv_redis_new(&url, &p)))
            goto oom;
        const char *ping[1] = { "PING" };
        srv_redis_value v;
        char why[200], printed[400];
        srv_redis_url_print(&url, printed, sizeof printed);
        if (srv_redis_cmd(srv->redis, SRV_RW_STR, &v, 1, ping, NULL, why, sizeof why) == SRV_REDIS_OK)
            fprintf(stderr, "mtserve: redis %s: up; rate limits and key quotas are shared through it\n", printed);
        srv_redis_value_clear(&v);
    }
    if (!(srv->shared = srv_shared_new(srv->redis, srv->limits, srv->usage)))
        goto oom;
    return 0;
oom:
    snprintf(err, err_len, "out of memory");
    return -1;
}

/* The API keys (--api-key, --api-keys FILE), the rate limits and the trusted
 * proxies; 0, or -1 with a message. */
#define LIMITED_CLIENTS 4096    /* clients whose rate-limit buckets are held at once */
static int access_start(srv_server *srv, srv_proxies **proxies, char *err, size_t err_len)
{
    if (srv->opts.api_key[0] && srv_api_keys_add(&srv->keys, srv->opts.api_key, err, err_len))
        return -1;
    if (srv->opts.api_keys[0]) {
        if (srv_api_keys_load(&srv->keys, srv->opts.api_keys, err, err_len))
            return -1;
        if (srv->keys.n == 0) {
            snprintf(err, err_len, "--api-keys %s: no key in the file", srv->opts.api_keys);
            return -1;
        }
    }
    if (srv_api_keys_copy(&srv->keys, &srv->usage_keys)) {     /* usage's slots: SIGHUP swaps srv->keys */
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    int limited = srv->opts.req_limit > 0 || srv->opts.char_limit > 0;
    for (int i = 0; i < srv->keys.n; i++)
        limited |= srv->keys.v[i].req_limit > 0 || srv->keys.v[i].char_limit > 0;
    if (limited && !(srv->limits = srv_ratelimit_new(LIMITED_CLIENTS))) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    if (srv_usage_open(&srv->usage, &srv->usage_keys, srv->opts.usage_file, err, err_len))
        return -1;
    if (redis_start(srv, err, err_len))
        return -1;
    if (!(srv->gstore = srv_gstore_new(srv->opts.max_stored_glossaries))) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    if (srv->redis)
        srv_gstore_share(srv->gstore, srv->redis);     /* DeepL's stored glossaries: every replica's */
    if (!(*proxies = srv_proxies_parse(srv->opts.trusted_proxy, err, err_len)))
        return -1;
    return 0;
}

static void access_free(srv_server *srv, srv_proxies *proxies)
{
    srv_shared_free(srv->shared);       /* before what it counts with */
    srv->shared = NULL;
    srv_redis_free(srv->redis);
    srv->redis = NULL;
    srv_usage_close(srv->usage);        /* saves the counts: before the keys they name */
    srv->usage = NULL;
    srv_gstore_free(srv->gstore);       /* no request is left to hold one */
    srv->gstore = NULL;
    srv_api_keys_free(&srv->keys);
    srv_api_keys_free(&srv->usage_keys);
    srv_ratelimit_free(srv->limits);
    srv->limits = NULL;
    srv_proxies_free(proxies);
}

/* Frees what build, listen_on and start_models made, in the reverse order
 * (each free takes NULL: after a failed start, only what was made). */
static void teardown(srv_server *srv, srv_proxies *proxies)
{
    srv_admin_free(srv->admin);             /* an add still running (a download) ends first */
    srv->admin = NULL;
    srv_takeover_stop(srv->takeover);       /* its leases given up: the other replicas take the jobs over */
    srv_files_free(srv->files);             /* its batches in flight come back first */
    srv->files = NULL;
    srv_takeover_free(srv->takeover);
    srv->takeover = NULL;
    srv_residency_free(srv->residency);     /* on demand: unloads them (no request is left) */
    srv->residency = NULL;
    srv_workers_free(srv->workers_pool);
    srv->workers_pool = NULL;
    for (int i = 0; i < srv->n_models; i++) {
        srv_sched_free(srv->models[i].sched);
        srv->models[i].sched = NULL;
    }
    srv_models_free(srv);
    srv_glossaries_free(srv);
    srv_cache_free(srv->cache);
    srv->cache = NULL;
    srv_rcache_free(srv->rcache);       /* before the client it calls through (access_free) */
    srv->rcache = NULL;
    access_free(srv, proxies);
}

/* What the requests use, before listening: glossaries, API keys and limits,
 * the cache, the workers, the file jobs.  0, or -1 with a message printed
 * (teardown frees what was made). */
static int build(srv_server *srv, srv_proxies **proxies)
{
    char err[1400];
    if (srv_glossaries_load(srv, err, sizeof err) || access_start(srv, proxies, err, sizeof err)) {
        fprintf(stderr, "mtserve: %s\n", err);
        return -1;
    }
    srv->cache = srv_cache_new((size_t)srv->opts.cache_mb << 20);
    if (srv->cache && srv->redis && srv->opts.redis_cache_mb > 0 &&
        !(srv->rcache = srv_rcache_new(srv->redis, (size_t)srv->opts.redis_cache_mb << 20))) {
        fprintf(stderr, "mtserve: out of memory\n");
        return -1;
    }
    if (!(srv->workers_pool = srv_workers_new(srv->workers, srv->opts.queue, srv->opts.decode_nice))) {
        fprintf(stderr, "mtserve: cannot start %d worker threads (queue %d)\n", srv->workers, srv->opts.queue);
        return -1;
    }
    srv_files_params fp = srv_files_default_params();
    fp.max_jobs = srv->opts.max_file_jobs;
    fp.max_store = srv->opts.file_store;
    fp.ttl_s = srv->opts.file_ttl_s;
    fp.batch_units = srv->opts.file_batch;
    if (srv->redis) {                       /* file jobs readable by every replica, taken over from one that died */
        srv->file_share = (srv_file_share){ .r = srv->redis, .ttl_s = srv->opts.file_ttl_s };
        if (!(srv->takeover = srv_takeover_new(srv, &srv->file_share, srv->opts.redis_lease_ms,
                                               (size_t)srv->opts.redis_file_mb << 20))) {
            fprintf(stderr, "mtserve: out of memory\n");
            return -1;
        }
        fp.publish = srv_takeover_publish;
        fp.publish_ctx = srv->takeover;
    }
    mt_err ferr = { 0 };
    if (!(srv->files = srv_files_new(&fp, &ferr))) {
        fprintf(stderr, "mtserve: %s\n", ferr.msg);
        return -1;
    }
    if (srv->takeover && srv_takeover_start(srv->takeover)) {
        fprintf(stderr, "mtserve: cannot start the file jobs' lease thread\n");
        return -1;
    }
    if ((srv->opts.admin_key[0] || later.n > 0) && !(srv->admin = srv_admin_new(srv))) {
        fprintf(stderr, "mtserve: out of memory\n");
        return -1;
    }
    return 0;
}

/* The HTTP server, listening: NULL with a message printed. */
static srv_http *listen_on(srv_server *srv, srv_proxies *proxies)
{
    srv_http_config cfg = {
        .host = srv->opts.host, .port = srv->opts.port, .threads = srv->http_threads,
        .max_connections = srv->opts.max_connections, .timeout_s = srv->opts.timeout_s,
        .max_connections_per_ip = srv->opts.max_connections_per_ip,
        .request_timeout_s = srv->opts.request_timeout_s,
        .write_timeout_s = srv->opts.write_timeout_s,
        .max_body = srv->opts.max_body, .access_log = srv->opts.access_log,
        .cors_origins = srv->opts.cors_origins, .in_flight = &srv->in_flight,
        .trusted_proxies = proxies,
        .router = { .prepare = srv_route_prepare, .start = srv_route_start, .finish = srv_route_finish,
                    .label = srv_route_label, .error_shape = srv_route_error_shape,
                    .max_body = srv_route_max_body, .ctx = srv },
    };
    char err[512];
    /* --http-sched rr: the threads started here (libmicrohttpd's pool, the
     * front that reads request heads, the deadline sweeper) inherit SCHED_RR
     * from this thread, which goes back to SCHED_OTHER after; the decoding
     * threads set SCHED_OTHER themselves (mt_thread_nice).  Not permitted,
     * the server runs as without the option: a priority is never a result. */
    int rt = srv->opts.http_rr && mt_thread_rt(1) == 0;
    if (srv->opts.http_rr && !rt)
        fprintf(stderr, "mtserve: warning: --http-sched rr: cannot set SCHED_RR (%s; it needs CAP_SYS_NICE or "
                        "RLIMIT_RTPRIO >= 1): the HTTP threads run in SCHED_OTHER\n", strerror(errno));
    srv_http *http = srv_http_start(&cfg, err, sizeof err);
    if (rt)
        mt_thread_rt(0);
    if (!http) {
        fprintf(stderr, "mtserve: %s\n", err);
        return NULL;
    }
    fprintf(stderr, "mtserve: listening on http://%s:%d (%d cores: %s, %d workers x %d compute threads, "
                    "%d HTTP threads, queue %d)\n", srv->opts.host, srv_http_port(http), srv->cores,
            srv->opts.batching ? "batching on" : "batching off", srv->workers, srv->blas_threads,
            srv->http_threads, srv->opts.queue);
    return http;
}

/* serve's --model org/name not in the cache: each added as POST /admin/models
 * adds one by name (downloaded on a thread, then served).  0, or -1 printed. */
static int start_downloads(srv_server *srv)
{
    for (int i = 0; i < later.n; i++) {
        srv_response resp = { 0 };
        if (srv_admin_add_at_start(srv->admin, later.v[i].id, later.v[i].dir, &resp) != 0) {
            fprintf(stderr, "mtserve: model %s (%s): %s\n", later.v[i].id, later.v[i].dir, resp.message);
            return -1;
        }
        fprintf(stderr, "mtserve: model %s: downloading %s in the background (GET /health shows it)\n",
                later.v[i].id, later.v[i].dir);
    }
    return 0;
}

/* The models: on demand, their cards read (they load on first use,
 * residency.h); else loaded by a thread (*tid) while /health says "loading".
 * 0, or -1 with a message printed. */
static int start_models(srv_server *srv, loader *ld, int loading, pthread_t *tid)
{
    if (loading) {
        int e = pthread_create(tid, NULL, load_models, ld);
        if (e != 0) {
            fprintf(stderr, "mtserve: cannot start the model loader thread: %s\n", strerror(e));
            return -1;
        }
        return 0;
    }
    mt_err rerr = { 0 };
    if (!srv_residency_new(srv, &rerr)) {
        fprintf(stderr, "mtserve: %s\n", rerr.msg);
        return -1;
    }
    atomic_store(&ld->done, 1);
    if (srv->n_models > 0) {        /* else ready once the first download is served (admin.c) */
        atomic_store(&srv->ready, 1);
        fprintf(stderr, "mtserve: ready: %d models available, loaded on demand (at most %d at once, "
                        "memory budget %.1f MB; 0 = no limit)\n", srv->n_models, srv->opts.max_models,
                (double)srv->opts.memory_budget / 1e6);
    }
    return start_downloads(srv);
}

static int run(srv_server *srv)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);     /* before any thread starts */
    signal(SIGPIPE, SIG_IGN);
    json_object_seed(0);
    register_metrics(srv);
    fit_connections(srv);

    srv_proxies *proxies = NULL;
    srv_http *http = NULL;
    loader ld = { .srv = srv };
    pthread_t tid;
    int loading = !on_demand(&srv->opts), rc = 1;
    if (build(srv, &proxies) || !(http = listen_on(srv, proxies)))
        goto done;
    if (start_models(srv, &ld, loading, &tid)) {
        srv_http_stop(http, 0);
        goto done;
    }
    rc = wait_for_signal(&set, &ld);
    if (srv_http_stop(http, rc ? 0 : srv->opts.drain_s) != 0) {
        if (loading && atomic_load(&ld.done) != 0)
            pthread_join(tid, NULL);    /* the loader is over: nothing of ours left unjoined */
        fflush(NULL);
        _exit(1);           /* requests still decode: do not free what they use */
    }
    if (atomic_load(&ld.done) == 0) {
        fprintf(stderr, "mtserve: stopped while loading models\n");
        fflush(NULL);
        _exit(rc);          /* a load cannot be interrupted; nothing else runs */
    }
    if (loading)
        pthread_join(tid, NULL);
done:
    teardown(srv, proxies);
    if (rc == 0)
        fprintf(stderr, "mtserve: stopped\n");
    return rc;
}

int mt_cmd_serve(int argc, char **argv)
{
    srv_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        fprintf(stderr, "mtserve: out of memory\n");
        return 1;
    }
    /* writers first: a SIGHUP is not put off for as long as requests keep overlapping */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&srv->reload_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    char err[512];
    if (mt_hub_expand_pairs(&argc, &argv) != 0) {  /* --pair en-de: --model Helsinki-NLP/opus-mt-en-de */
        free(srv);
        return 2;
    }
    int rc = srv_options_parse(&srv->opts, argc, argv, env_get, err, sizeof err);
    if (rc != 0) {
        if (rc > 0) {
            srv_options_usage(stdout);
            printf("  --pair SRC-TGT         the published OPUS-MT model of a language pair by name, from the Hugging\n"
                   "                         Face Hub (`mtserve pull --pair`); two through English when it has none\n");
        } else {
            fprintf(stderr, "mtserve serve: %s (see --help)\n", err);
        }
        rc = rc > 0 ? 0 : 2;
        goto done;
    }
    char first[sizeof srv->default_id];
    memcpy(first, srv->opts.models[0].id, sizeof first);
    if (mt_hub_resolve_models(&srv->opts, later.v, &later.n) != 0) {   /* cached, or downloaded later */
        rc = 1;
        goto done;
    }
    if (later.n > 0)                    /* the first --model stays the default once downloaded */
        memcpy(srv->default_id, first, sizeof first);
    srv->t_start = srv_now();
    plan_threads(srv);
    if (!on_demand(&srv->opts)) {
        srv_models_name(srv);
    } else if (srv->opts.n_models == 0 && !srv->opts.model_dir[0]) {
        srv->n_models = 0;              /* every --model downloads at start */
    } else if (srv_models_discover(srv, err, sizeof err) != 0) {
        fprintf(stderr, "mtserve: %s\n", err);
        srv_models_free(srv);
        rc = 1;
        goto done;
    }
    rc = run(srv);                      /* frees what it and srv_models_* made */
done:
    pthread_rwlock_destroy(&srv->reload_lock);
    free(srv);
    return rc;
}
