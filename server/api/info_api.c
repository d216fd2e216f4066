/* GET /health, /models, /metrics, /openapi.json: the service describing itself. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "common/metrics.h"
#include "service/admin.h"
#include "service/file_takeover.h"
#include "service/residency.h"
#include "service/server.h"

/* The models being downloaded (serve's --model org/name at start, the admin
 * API's adds): [{"id", "name", "file", "done", "total", "at_start"}]. */
static json_t *downloads(srv_server *srv)
{
    srv_admin_pending p[SRV_ADMIN_MAX_PENDING];
    int n = srv->admin ? srv_admin_pending_list(srv->admin, p, SRV_ADMIN_MAX_PENDING) : 0;
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        if (p[i].phase == SRV_ADMIN_DOWNLOADING)
            json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:I,s:I,s:b}", "id", p[i].id, "name", p[i].name,
                                                  "file", p[i].file, "done", (json_int_t)p[i].done, "total",
                                                  (json_int_t)p[i].total, "at_start", p[i].at_start));
    return list;
}

/* With --redis, what /health says of it: up or down, slow or not, and where
 * the rate limits are counted meanwhile (a down or slow Redis does not make
 * the server unhealthy: it serves on with local counts). */
static json_t *redis_health(srv_redis *r)
{
    srv_redis_stats st;
    srv_redis_stats_get(r, &st);
    if (!st.up) {       /* not known up: ask (at once when its backoff is not over, else one timeout at most) */
        const char *ping[1] = { "PING" };
        srv_redis_value v;
        char err[200];
        srv_redis_cmd(r, SRV_RW_STR, &v, 1, ping, NULL, err, sizeof err);
        srv_redis_value_clear(&v);
        srv_redis_stats_get(r, &st);
    }
    const char *limits = !st.up ? "local (Redis down: each replica counts alone)"
                         : st.slow ? "local (Redis slower than --redis-budget: each replica counts alone)"
                                   : "shared";
    json_t *o = json_pack("{s:s,s:s,s:s,s:b}", "url", st.url, "state", st.up ? "up" : "down", "limits", limits,
                          "slow", st.slow);
    if (o && !st.up)
        json_object_set_new(o, "error", json_string(st.last_error));
    if (o && !st.up && st.down_for_s > 0)
        json_object_set_new(o, "down_s", json_real(st.down_for_s));
    return o;
}

/* The status, for load balancers and readiness probes: 503 "loading" while
 * the models load at start; 503 "downloading" while no model is served yet
 * and serve's --model org/name downloads (a replica with nothing to serve is
 * not ready); 200 "partial" while some models are served and others still
 * download (serve's at start, or the admin API's; each named with its bytes
 * in "downloads") or have their card read; 200 "ok" otherwise.
 * "redis" with --redis. */
void srv_handle_health(srv_request *req, srv_response *resp)
{
    int ready = atomic_load(&req->srv->ready);
    json_t *d = downloads(req->srv);
    int downloading = req->srv->admin && srv_admin_in_progress(req->srv->admin) > 0;   /* or reading */
    if (!ready)
        resp->retry_after = downloading ? 5 : 1;
    json_t *o = json_pack("{s:s}", "status", ready ? (downloading ? "partial" : "ok")
                                                  : (downloading ? "downloading" : "loading"));
    if (o && json_array_size(d))
        json_object_set(o, "downloads", d);
    json_decref(d);
    if (o && req->srv->redis)
        json_object_set_new(o, "redis", redis_health(req->srv->redis));
    srv_reply_json(resp, ready ? 200 : 503, o);
}

/* The lines of one part after resp->text: the mtserve_redis_* lines, the
 * shared cache's, the file leases' (0), or -1 (out of memory: text freed). */
typedef enum { PART_REDIS, PART_RCACHE, PART_LEASES } metrics_part;
static int append_metrics(srv_server *srv, metrics_part part, srv_response *resp)
{
    size_t n = 0;
    char *more = part == PART_REDIS    ? srv_redis_metrics(srv->redis, &n)
                 : part == PART_RCACHE ? srv_rcache_metrics(srv->rcache, &n)
                                       : srv_takeover_metrics(srv->takeover, &n);
    char *all = more ? realloc(resp->text, resp->text_len + n + 1) : NULL;
    if (!all) {
        free(more);
        free(resp->text);
        return -1;
    }
    memcpy(all + resp->text_len, more, n);
    all[resp->text_len + n] = 0;
    resp->text = all;
    resp->text_len += n;
    free(more);
    return 0;
}

static json_t *model_json(srv_server *srv, srv_model *m, int is_default)
{
    const mt_model_info *i = m->info;      /* the card's on demand: no weight fields */
    srv_model_state st;
    srv_model_state_get(srv, m, &st);
    json_t *config = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:s,s:s,s:i,s:i}",
                               "d_model", i->d_model, "encoder_layers", i->enc_layers,
                               "decoder_layers", i->dec_layers, "encoder_heads", i->enc_heads,
                               "decoder_heads", i->dec_heads, "encoder_ffn", i->enc_ffn,
                               "decoder_ffn", i->dec_ffn, "vocab_size", i->vocab_size,
                               "max_positions", i->max_positions, "activation", i->activation,
                               "dtype", st.dtype, "weights", st.weights, "default_beam", i->default_beam,
                               "default_max_length", i->default_max_length);
    if (config && st.int8_kernel[0])    /* INT8 weights: the kernel this CPU runs them with */
        json_object_set_new(config, "int8_kernel", json_string(st.int8_kernel));
    /* weight and session bytes: of the loaded model (0 while it is not) */
    json_t *size = json_pack("{s:I,s:I,s:I,s:I}", "file_bytes", (json_int_t)i->file_bytes,
                             "weight_bytes", (json_int_t)st.weight_bytes, "session_bytes",
                             (json_int_t)st.session_bytes, "resident_bytes", (json_int_t)st.bytes);
    json_t *limits = json_pack("{s:i,s:i,s:i,s:i,s:i,s:s}", "max_batch", m->sparams.max_batch,
                               "max_sentence_tokens", m->sparams.max_src_len, "max_length",
                               m->sparams.max_tgt_len, "max_request_tokens", srv->opts.max_tokens,
                               "sessions", srv->workers, "kv_cache", m->sparams.kv_f16 ? "f16" : "f32");
    json_t *o = json_pack("{s:s,s:b,s:b,s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:f}", "id", m->id, "default", is_default,
                          "loaded", st.loaded, "source_lang", i->source_lang, "target_lang", i->target_lang,
                          "format", i->format, "weights_file", i->weights_file, "size", size, "config", config,
                          "limits", limits, "load_ms", st.load_ms);
    if (o && m->shortlist) {            /* serve --shortlist: what it holds */
        const mt_shortlist_info *sl = mt_shortlist_get_info(m->shortlist);
        json_object_set_new(o, "shortlist", json_pack("{s:s,s:s,s:I,s:i,s:i,s:i,s:I}", "file", m->shortlist_file,
                                                      "format", sl->format, "entries", (json_int_t)sl->entries,
                                                      "source_words", sl->src_words, "max_list", sl->max_list,
                                                      "frequent", sl->frequent, "skipped", (json_int_t)sl->skipped));
    } else if (o) {
        json_object_set_new(o, "shortlist", json_null());
    }
    if (o && m->lang_vocab) {           /* serve --lang-vocab: what it holds */
        const mt_lang_vocab_info *lv = mt_lang_vocab_get_info(m->lang_vocab);
        json_object_set_new(o, "lang_vocab", json_pack("{s:s,s:i,s:I,s:i,s:i}", "file", m->lang_vocab_file,
                                                       "languages", lv->languages, "ids", (json_int_t)lv->ids,
                                                       "min_ids", lv->min_ids, "max_ids", lv->max_ids));
    } else if (o) {
        json_object_set_new(o, "lang_vocab", json_null());
    }
    /* its copy guard's gate (copy_gate.txt beside it: translate/copy_gate.h), and whether the guard is on
     * when a request does not say */
    if (o)
        json_object_set_new(o, "copy_guard", json_pack("{s:b,s:o}", "default", i->default_copy_guard,
                                                       "gate_words", m->copy_gate ?
                                                       json_integer(srv_copy_gate_size(m->copy_gate)) : json_null()));
    if (o && srv->residency)            /* on demand: requests holding it now (it is not unloaded meanwhile) */
        json_object_set_new(o, "in_use", json_integer(st.holders));
    if (o && m->n_targets) {            /* multilingual: the languages its target tokens name */
        json_t *targets = json_array();
        for (int k = 0; k < m->n_targets; k++)
            json_array_append_new(targets, json_string(m->targets[k]));
        json_object_set_new(o, "target_languages", targets);
    }
    if (o)
        json_object_set_new(o, "architecture", json_string(m->llm ? "decoder-only" : m->multi ? "m2m_100" : "marian"));
    if (o && m->multi) {                /* NLLB-200 / M2M-100: every language both ways, and the model's codes */
        const mt_multi_tokenizer *mt = mt_tokenizer_multi(m->tok);
        json_t *codes = json_array();
        for (int k = 0; k < m->n_targets; k++)
            json_array_append_new(codes, json_string(mt_multi_lang(mt, k)));
        json_object_set_new(o, "languages", json_integer(m->n_targets));
        json_object_set_new(o, "model_languages", codes);
        json_object_set_new(o, "tokenizer", json_string(mt_multi_kind_name(mt_multi_kind_of(mt))));
    }
    if (o && m->llm) {                  /* decoder-only: its family, pairs, prompt and positions */
        json_t *pairs = json_array();
        for (int k = 0; k < m->n_pairs; k++)
            json_array_append_new(pairs, json_pack("[s,s]", m->pairs[k][0], m->pairs[k][1]));
        json_object_set_new(o, "pairs", pairs);
        json_object_set_new(o, "model_type", json_string(i->architecture));
        json_object_set_new(o, "prompt", m->prompt ? json_string(mt_prompt_kind(m->prompt)) : json_null());
        json_object_set_new(o, "rope", json_pack("{s:f,s:i}", "theta", i->rope_theta, "head_dim", i->head_dim));
    }
    return o;
}

void srv_handle_models(srv_request *req, srv_response *resp)
{
    srv_server *srv = req->srv;
    json_t *list = json_array();
    const srv_model *def = srv_find_model(srv, NULL);   /* the first listed */
    for (int i = 0; i < srv->n_models; i++)
        if (srv_model_listed(&srv->models[i]))
            json_array_append_new(list, model_json(srv, &srv->models[i], &srv->models[i] == def));
    srv_reply_json(resp, 200, json_pack("{s:s?,s:o}", "default", def ? def->id : NULL, "models", list));
}

void srv_handle_metrics(srv_request *req, srv_response *resp)
{
    srv_server *srv = req->srv;
    srv_metrics_gauges g = { 0 };
    srv_workers_stats(srv->workers_pool, &g.active_sessions, &g.queue_depth, &g.workers);
    g.in_flight = atomic_load(&srv->in_flight);
    srv_model_state states[SRV_MAX_MODELS];
    int n = srv_models_state(srv, states);
    for (int i = 0; i < n; i++) {
        const srv_model_state st = states[i];
        g.models_loaded += st.loaded;
        if (i < SRV_METRICS_MAX_MODELS)
            g.model_bytes[i] = (double)st.bytes;
        if (st.has_sched) {
            const srv_sched_counts c = st.sched;
            g.active_sequences += c.active;
            g.waiting_sequences += c.waiting;
            g.rows_in_use += c.rows;
            g.active_sessions += c.jobs_started;    /* requests decoding: the scheduler's */
            g.queue_depth += c.jobs_waiting;
        }
    }
    size_t stored = 0;
    srv_files_usage(srv->files, &g.file_jobs_held, &g.file_jobs_running, &stored);
    g.file_store_bytes = (double)stored;
    srv_cache_stats cs;
    srv_cache_stats_get(srv->cache, &cs);
    g.cache_hits = (double)cs.hits, g.cache_misses = (double)cs.misses, g.cache_evictions = (double)cs.evictions;
    g.cache_bytes = (double)cs.bytes, g.cache_entries = (double)cs.entries, g.cache_max_bytes = (double)cs.max_bytes;
    g.uptime_s = srv_now() - srv->t_start;
    long *usage = srv->usage ? calloc((size_t)srv_usage_slots(srv->usage), sizeof *usage) : NULL;
    for (int k = 0; usage && k < srv_usage_slots(srv->usage); k++)
        usage[k] = srv_shared_usage_known(srv->shared, k == srv_usage_slots(srv->usage) - 1 ? -1 : k);
    g.usage = usage;
    g.n_usage = usage ? srv_usage_slots(srv->usage) : 0;
    resp->text = srv_metrics_render(&g, &resp->text_len);
    free(usage);
    if (resp->text && srv->redis && append_metrics(srv, PART_REDIS, resp))
        resp->text = NULL;
    if (resp->text && srv->rcache && append_metrics(srv, PART_RCACHE, resp))
        resp->text = NULL;
    if (resp->text && srv->takeover && append_metrics(srv, PART_LEASES, resp))
        resp->text = NULL;
    if (!resp->text) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory rendering metrics");
        return;
    }
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    resp->status = 200;
}


/* ---- GET /openapi.json ---------------------------------------------------------------- */

/* A number as the document writes it: an integer when it is one. */
static json_t *number_json(double x)
{
    return x == floor(x) && fabs(x) < 9007199254740992.0 ? json_integer((json_int_t)x) : json_real(x);
}

/* The schema of field name ("sampling.top_k": properties.sampling.properties.top_k). */
static json_t *field_schema(json_t *props, const char *name)
{
    const char *dot = strchr(name, '.');
    if (!dot)
        return json_object_get(props, name);
    char outer[64];
    snprintf(outer, sizeof outer, "%.*s", (int)(dot - name), name);
    return field_schema(json_object_get(json_object_get(props, outer), "properties"), dot + 1);
}

/* The served document: server/api/openapi.json with the minimum, maximum and
 * default of each TranslateRequest field of the engine's table
 * (mt_decode_limits) taken from the table, so that they are the limits the
 * server checks.  One that depends on the model is left out (the field's
 * description names it). */
static char *openapi_served;
static pthread_once_t openapi_once = PTHREAD_ONCE_INIT;

static void openapi_build(void)
{
    json_t *doc = json_loads(srv_openapi_json, 0, NULL);
    json_t *props = json_object_get(json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
                                                    "TranslateRequest"), "properties");
    for (const mt_decode_limit *l = mt_decode_limits; props && l->name; l++) {
        json_t *f = field_schema(props, l->name);
        double v[3];
        const char *key[3] = { "minimum", "maximum", "default" };
        if (!f || l->type == MT_LIMIT_BOOL)     /* a boolean: no bounds, its default the model's */
            continue;
        mt_decode_limit_bounds(l, NULL, NULL, NULL, &v[0], &v[1]);
        v[2] = l->dflt_of == MT_BOUND_CONST ? l->dflt : NAN;
        for (int k = 0; k < 3; k++) {
            if (isfinite(v[k]))
                json_object_set_new(f, key[k], number_json(v[k]));
            else
                json_object_del(f, key[k]);
        }
        if (l->min_open)
            json_object_set_new(f, "exclusiveMinimum", json_true());
        else
            json_object_del(f, "exclusiveMinimum");
    }
    openapi_served = doc ? json_dumps(doc, JSON_INDENT(1)) : NULL;
    json_decref(doc);
}

void srv_handle_openapi(srv_request *req, srv_response *resp)
{
    (void)req;
    pthread_once(&openapi_once, openapi_build);
    if (!(resp->text = strdup(openapi_served ? openapi_served : srv_openapi_json))) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    resp->text_len = strlen(resp->text);
    resp->content_type = "application/json";
    resp->status = 200;
}
