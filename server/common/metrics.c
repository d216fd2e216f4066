/* metrics: lock-free counters and the Prometheus text exposition. */
#include "metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/check.h"
#include "util/strbuf.h"

static const int status_codes[] = { 200, 204, 400, 401, 404, 405, 413, 429, 500, 503 };
#define N_STATUS ((int)(sizeof status_codes / sizeof status_codes[0]) + 1)   /* + "other" */

static const double buckets[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };
#define N_BUCKETS ((int)(sizeof buckets / sizeof buckets[0]))

typedef unsigned long long u64;

static const int batch_buckets[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096 };
#define N_BATCH_BUCKETS ((int)(sizeof batch_buckets / sizeof batch_buckets[0]))

static struct {
    const char *routes[SRV_METRICS_MAX_ROUTES + 1];    /* the last used slot is "other" */
    int n_routes;
    const char *models[SRV_METRICS_MAX_MODELS];
    _Atomic int n_models;           /* grows (srv_metrics_add_model): models[i < n_models] set before */
    _Atomic int hidden[SRV_METRICS_MAX_MODELS];   /* removed (srv_metrics_remove_model): no longer rendered */
    _Atomic u64 requests[SRV_METRICS_MAX_ROUTES + 1][N_STATUS];
    _Atomic u64 hist[SRV_METRICS_MAX_ROUTES + 1][N_BUCKETS];   /* non-cumulative */
    _Atomic u64 count[SRV_METRICS_MAX_ROUTES + 1];
    _Atomic u64 sum_us[SRV_METRICS_MAX_ROUTES + 1];
    _Atomic u64 src_tokens[SRV_METRICS_MAX_MODELS];
    _Atomic u64 gen_tokens[SRV_METRICS_MAX_MODELS];
    _Atomic u64 model_loads[SRV_METRICS_MAX_MODELS], model_unloads[SRV_METRICS_MAX_MODELS];  /* on demand */
    _Atomic u64 batch_hist[12];     /* decoder steps by rows, non-cumulative (batch_buckets) */
    _Atomic u64 batch_steps, batch_rows, cancelled;
    _Atomic u64 sched_us[3];        /* scheduler threads' time: stepping, between steps, idle */
    _Atomic u64 closed[SRV_CLOSE_REASONS];     /* connections the server closed, by reason */
    _Atomic u64 limited[2];         /* 429s of the rate limits: requests, characters */
} M = { .routes = { "other" }, .n_routes = 1 };

void srv_metrics_set_routes(const char *const *labels, int n)
{
    if (n > SRV_METRICS_MAX_ROUTES)
        n = SRV_METRICS_MAX_ROUTES;
    for (int i = 0; i < n; i++)
        M.routes[i] = labels[i];
    M.routes[n] = "other";
    M.n_routes = n + 1;
}

void srv_metrics_set_models(const char *const *ids, int n)
{
    if (n > SRV_METRICS_MAX_MODELS)
        n = SRV_METRICS_MAX_MODELS;
    for (int i = 0; i < n; i++)
        M.models[i] = ids[i];
    M.n_models = n;
}

void srv_metrics_add_model(int n, const char *id)
{
    if (n != M.n_models || n >= SRV_METRICS_MAX_MODELS)
        return;
    M.models[n] = id;
    atomic_store(&M.n_models, n + 1);
}

void srv_metrics_remove_model(int n)
{
    if (n >= 0 && n < SRV_METRICS_MAX_MODELS)
        atomic_store(&M.hidden[n], 1);
}

static int route_index(const char *route)
{
    for (int i = 0; route && i < M.n_routes - 1; i++)
        if (strcmp(M.routes[i], route) == 0)
            return i;
    return M.n_routes - 1;
}

static int status_index(int status)
{
    for (int i = 0; i < N_STATUS - 1; i++)
        if (status_codes[i] == status)
            return i;
    return N_STATUS - 1;
}

void srv_metrics_request(const char *route, int status, double seconds)
{
    int r = route_index(route);
    atomic_fetch_add(&M.requests[r][status_index(status)], 1);
    int b = 0;
    while (b < N_BUCKETS && seconds > buckets[b])
        b++;
    if (b < N_BUCKETS)
        atomic_fetch_add(&M.hist[r][b], 1);
    atomic_fetch_add(&M.count[r], 1);
    atomic_fetch_add(&M.sum_us[r], (u64)(seconds > 0 ? seconds * 1e6 : 0));
}

void srv_metrics_tokens(int m, long source_tokens, long generated_tokens)
{
    if (m < 0 || m >= M.n_models)
        return;
    atomic_fetch_add(&M.src_tokens[m], (u64)(source_tokens > 0 ? source_tokens : 0));
    atomic_fetch_add(&M.gen_tokens[m], (u64)(generated_tokens > 0 ? generated_tokens : 0));
}

void srv_metrics_model_loaded(int m)
{
    if (m >= 0 && m < M.n_models)
        atomic_fetch_add(&M.model_loads[m], 1);
}

void srv_metrics_model_unloaded(int m)
{
    if (m >= 0 && m < M.n_models)
        atomic_fetch_add(&M.model_unloads[m], 1);
}

void srv_metrics_batch_step(int rows)
{
    int b = 0;
    while (b < N_BATCH_BUCKETS - 1 && rows > batch_buckets[b])
        b++;
    atomic_fetch_add(&M.batch_hist[b], 1);
    atomic_fetch_add(&M.batch_steps, 1);
    atomic_fetch_add(&M.batch_rows, (u64)(rows > 0 ? rows : 0));
}

void srv_metrics_sched_time(double step_s, double between_s, double idle_s)
{
    const double s[3] = { step_s, between_s, idle_s };
    for (int i = 0; i < 3; i++)
        if (s[i] > 0)
            atomic_fetch_add(&M.sched_us[i], (u64)(s[i] * 1e6 + 0.5));
}

void srv_metrics_cancelled(int n)
{
    atomic_fetch_add(&M.cancelled, (u64)(n > 0 ? n : 0));
}

void srv_metrics_connection_closed(srv_close_reason why)
{
    if (why >= 0 && why < SRV_CLOSE_REASONS)
        atomic_fetch_add(&M.closed[why], 1);
}

/* ---- rendering ---------------------------------------------------------------- */

/* The exposition text, in the engine's byte string; failed: a write did not fit (no memory). */
typedef struct {
    mt_sbuf b;
    int     failed;
} text;

static void sb_printf(text *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(text *sb, const char *fmt, ...)
{
    for (int tries = 0; tries < 2 && !sb->failed; tries++) {
        size_t room = sb->b.cap - sb->b.n;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(room ? sb->b.p + sb->b.n : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            sb->failed = 1;
            return;
        }
        if ((size_t)n < room) {
            sb->b.n += (size_t)n;
            return;
        }
        if (mt_sb_reserve(&sb->b, (size_t)n + 1))   /* then the second try fits */
            sb->failed = 1;
    }
}

static void render_requests(text *sb)
{
    sb_printf(sb, "# HELP mtserve_requests_total HTTP requests by route and status.\n"
                  "# TYPE mtserve_requests_total counter\n");
    for (int r = 0; r < M.n_routes; r++)
        for (int s = 0; s < N_STATUS; s++) {
            u64 v = atomic_load(&M.requests[r][s]);
            if (!v)
                continue;
            if (s < N_STATUS - 1)
                sb_printf(sb, "mtserve_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
                          M.routes[r], status_codes[s], v);
            else
                sb_printf(sb, "mtserve_requests_total{route=\"%s\",status=\"other\"} %llu\n",
                          M.routes[r], v);
        }
}

static void render_latency(text *sb)
{
    sb_printf(sb, "# HELP mtserve_request_duration_seconds Request latency by route.\n"
                  "# TYPE mtserve_request_duration_seconds histogram\n");
    for (int r = 0; r < M.n_routes; r++) {
        u64 count = atomic_load(&M.count[r]), cum = 0;
        if (!count)
            continue;
        for (int b = 0; b < N_BUCKETS; b++) {
            cum += atomic_load(&M.hist[r][b]);
            sb_printf(sb, "mtserve_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                      M.routes[r], buckets[b], cum);
        }
        sb_printf(sb, "mtserve_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n",
                  M.routes[r], count);
        sb_printf(sb, "mtserve_request_duration_seconds_sum{route=\"%s\"} %.6f\n", M.routes[r],
                  (double)atomic_load(&M.sum_us[r]) / 1e6);
        sb_printf(sb, "mtserve_request_duration_seconds_count{route=\"%s\"} %llu\n", M.routes[r], count);
    }
}

/* A counter by model: its HELP and TYPE lines, then one line per model. */
static void render_by_model(text *sb, const char *name, const char *help, _Atomic u64 *v)
{
    sb_printf(sb, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (int m = 0; m < M.n_models; m++)
        if (!atomic_load(&M.hidden[m]))
            sb_printf(sb, "%s{model=\"%s\"} %llu\n", name, M.models[m], atomic_load(&v[m]));
}

static void render_tokens(text *sb)
{
    render_by_model(sb, "mtserve_source_tokens_total", "Source tokens read, by model.", M.src_tokens);
    render_by_model(sb, "mtserve_generated_tokens_total", "Target tokens generated, by model.", M.gen_tokens);
}

/* Models on demand: loads, unloads and the bytes each holds now. */
static void render_residency(text *sb, const srv_metrics_gauges *g)
{
    render_by_model(sb, "mtserve_model_loads_total",
                    "Times a model's weights were loaded (at start, or on demand).", M.model_loads);
    render_by_model(sb, "mtserve_model_unloads_total",
                    "Times a model's weights were unloaded to keep within --max-models and --memory-budget.",
                    M.model_unloads);
    sb_printf(sb, "# HELP mtserve_model_resident_bytes Bytes a model holds now: its weights and one session "
                  "(0: not loaded).\n# TYPE mtserve_model_resident_bytes gauge\n");
    for (int m = 0; m < M.n_models; m++)
        if (!atomic_load(&M.hidden[m]))
            sb_printf(sb, "mtserve_model_resident_bytes{model=\"%s\"} %.0f\n", M.models[m], g->model_bytes[m]);
}

/* The characters each key has had translated (the key's index, not the key). */
static void render_usage(text *sb, const srv_metrics_gauges *g)
{
    if (!g->usage || g->n_usage < 1)
        return;
    sb_printf(sb, "# HELP mtserve_usage_characters Characters (code points) translated for each API key, by its "
                  "index in the keys (none: requests without a key); kept across restarts with --usage-file.\n"
                  "# TYPE mtserve_usage_characters counter\n");
    for (int k = 0; k < g->n_usage - 1; k++)
        sb_printf(sb, "mtserve_usage_characters{key=\"%d\"} %ld\n", k, g->usage[k]);
    sb_printf(sb, "mtserve_usage_characters{key=\"none\"} %ld\n", g->usage[g->n_usage - 1]);
}

static void render_batch(text *sb)
{
    sb_printf(sb, "# HELP mtserve_batch_rows Decoder rows per continuous-batching step.\n"
                  "# TYPE mtserve_batch_rows histogram\n");
    u64 cum = 0;
    for (int b = 0; b < N_BATCH_BUCKETS; b++) {
        cum += atomic_load(&M.batch_hist[b]);
        sb_printf(sb, "mtserve_batch_rows_bucket{le=\"%d\"} %llu\n", batch_buckets[b], cum);
    }
    u64 steps = atomic_load(&M.batch_steps);
    sb_printf(sb, "mtserve_batch_rows_bucket{le=\"+Inf\"} %llu\n", steps);
    sb_printf(sb, "mtserve_batch_rows_sum %llu\nmtserve_batch_rows_count %llu\n", atomic_load(&M.batch_rows),
              steps);
    static const char *const phase[3] = { "step", "between", "idle" };
    sb_printf(sb, "# HELP mtserve_scheduler_seconds_total The batching schedulers' thread time: in the engine's "
                  "step (encoding new sources, one decoder step, handing over the finished), between steps "
                  "(retiring, resuming connections, admission), idle (nothing to step).\n"
                  "# TYPE mtserve_scheduler_seconds_total counter\n");
    for (int i = 0; i < 3; i++)
        sb_printf(sb, "mtserve_scheduler_seconds_total{phase=\"%s\"} %.6f\n", phase[i],
                  (double)atomic_load(&M.sched_us[i]) * 1e-6);
    sb_printf(sb, "# HELP mtserve_cancelled_sequences_total Sentences dropped because their client went away.\n"
                  "# TYPE mtserve_cancelled_sequences_total counter\nmtserve_cancelled_sequences_total %llu\n",
              atomic_load(&M.cancelled));
}

static void render_closed(text *sb)
{
    static const char *const reason[SRV_CLOSE_REASONS] = {
        [SRV_CLOSE_REQUEST_TIMEOUT] = "request_timeout", [SRV_CLOSE_IDLE] = "idle",
        [SRV_CLOSE_CLIENT_GONE] = "client_gone", [SRV_CLOSE_WRITE_TIMEOUT] = "write_timeout",
        [SRV_CLOSE_PER_IP] = "per_ip_limit",
    };
    sb_printf(sb, "# HELP mtserve_connections_closed_total Connections the server closed: a request not received "
                  "within --request-timeout (408), keep-alive idle past --timeout, a client that had gone, or a reply the "
                  "client stopped reading for --write-timeout, or over --max-connections-per-ip.\n"
                  "# TYPE mtserve_connections_closed_total counter\n");
    for (int r = 0; r < SRV_CLOSE_REASONS; r++)
        sb_printf(sb, "mtserve_connections_closed_total{reason=\"%s\"} %llu\n", reason[r], atomic_load(&M.closed[r]));
}

void srv_metrics_rate_limited(int kind)
{
    if (kind == 0 || kind == 1)
        atomic_fetch_add(&M.limited[kind], 1);
}

static void render_limited(text *sb)
{
    sb_printf(sb, "# HELP mtserve_rate_limited_total Requests refused with 429: over a client's requests or "
                  "characters per minute (--req-limit, --char-limit, a key's own).\n"
                  "# TYPE mtserve_rate_limited_total counter\n"
                  "mtserve_rate_limited_total{limit=\"requests\"} %llu\n"
                  "mtserve_rate_limited_total{limit=\"chars\"} %llu\n",
              atomic_load(&M.limited[0]), atomic_load(&M.limited[1]));
}

static void render_gauge(text *sb, const char *name, const char *help, double v)
{
    sb_printf(sb, "# HELP %s %s\n# TYPE %s gauge\n%s %g\n", name, help, name, name, v);
}

static void render_counter(text *sb, const char *name, const char *help, double v)
{
    sb_printf(sb, "# HELP %s %s\n# TYPE %s counter\n%s %.0f\n", name, help, name, name, v);
}

char *srv_metrics_render(const srv_metrics_gauges *g, size_t *len)
{
    text sb = { 0 };
    if (mt_sb_reserve(&sb.b, 8192))
        return NULL;
    render_requests(&sb);
    render_latency(&sb);
    render_tokens(&sb);
    render_gauge(&sb, "mtserve_active_sessions", "Requests decoding now (on a worker, or in a batching scheduler).", g->active_sessions);
    render_gauge(&sb, "mtserve_queue_depth", "Requests waiting for a worker or for decoder rows.", g->queue_depth);
    render_gauge(&sb, "mtserve_workers", "Inference worker slots.", g->workers);
    render_gauge(&sb, "mtserve_requests_in_flight", "HTTP requests being processed.", g->in_flight);
    render_gauge(&sb, "mtserve_models_loaded", "Models loaded and serving.", g->models_loaded);
    render_residency(&sb, g);
    render_batch(&sb);
    render_closed(&sb);
    render_limited(&sb);
    render_gauge(&sb, "mtserve_active_sequences", "Sentences decoding in the batching schedulers now.",
                 g->active_sequences);
    render_gauge(&sb, "mtserve_waiting_sequences", "Sentences waiting for decoder rows.", g->waiting_sequences);
    render_gauge(&sb, "mtserve_batch_rows_in_use", "Decoder rows held by the active sentences.", g->rows_in_use);
    render_gauge(&sb, "mtserve_file_jobs_running", "File jobs translating now.", g->file_jobs_running);
    render_gauge(&sb, "mtserve_file_jobs_held", "File jobs held: running, and finished ones kept for download.",
                 g->file_jobs_held);
    render_gauge(&sb, "mtserve_file_store_bytes", "Bytes of finished files kept for download.", g->file_store_bytes);
    render_counter(&sb, "mtserve_cache_hits_total", "Sentences answered from the translation cache.", g->cache_hits);
    render_counter(&sb, "mtserve_cache_misses_total", "Sentences looked up in the translation cache and decoded.",
                   g->cache_misses);
    render_counter(&sb, "mtserve_cache_evictions_total", "Translation cache entries dropped for room.",
                   g->cache_evictions);
    render_gauge(&sb, "mtserve_cache_bytes", "Bytes the translation cache holds (at most --cache-mb).", g->cache_bytes);
    render_gauge(&sb, "mtserve_cache_entries", "Sentences the translation cache holds.", g->cache_entries);
    render_gauge(&sb, "mtserve_cache_max_bytes", "The translation cache's bound (--cache-mb; 0: off).",
                 g->cache_max_bytes);
    render_usage(&sb, g);
    render_counter(&sb, "mtserve_assertion_failures_total",
                   "Broken invariants (MT_ASSERT) met by this process; a request that met one got HTTP 500.",
                   (double)mt_assert_failures());
    render_gauge(&sb, "mtserve_uptime_seconds", "Seconds since start.", g->uptime_s);
    if (sb.failed) {
        free(sb.b.p);
        return NULL;
    }
    *len = sb.b.n;
    return sb.b.p;
}
