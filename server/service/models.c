/* models: load the configured models, size their sessions, look them up. */
#include "server.h"

#include <stdio.h>
#include <string.h>

#include "http/body.h"
#include "http/request.h"
#include "pairs.h"

srv_model *srv_find_model(srv_server *srv, const char *id)
{
    if (!id || !*id)
        return srv->n_models ? &srv->models[0] : NULL;
    for (int i = 0; i < srv->n_models; i++)
        if (strcmp(srv->models[i].id, id) == 0)
            return &srv->models[i];
    return NULL;
}

/* Looks up the "model" field: the default model when absent, 404 when unknown. */
srv_model *srv_request_model(srv_request *req, srv_response *resp)
{
    const char *id = NULL;
    if (srv_field_string(req, resp, "model", &id) < 0)
        return NULL;
    srv_model *m = srv_find_model(req->srv, id);
    if (!m)
        srv_fail(resp, SRV_E_UNKNOWN_MODEL, "unknown model '%s' (see GET /models)", id);
    return m;
}

/* Session shape: the engine's defaults, source length capped by --max-tokens,
 * batch by --max-batch when given. */
static mt_session_params session_params(const srv_server *srv, const mt_model *model)
{
    mt_session_params p = mt_session_default_params(model);
    if (srv->opts.max_batch > 0)
        p.max_batch = srv->opts.max_batch;
    p.kv_f16 = srv->opts.kv_f16;
    if (srv->opts.max_tokens > 0 && p.max_src_len > srv->opts.max_tokens)
        p.max_src_len = srv->opts.max_tokens;
    return p;
}

mt_status srv_model_load(srv_server *srv, int i, mt_err *err)
{
    srv_model *m = &srv->models[i];
    const srv_model_spec *spec = &srv->opts.models[i];
    double t0 = srv_now();
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = srv->blas_threads;
    mp.weights = (mt_weights)srv->opts.weights;
    _Static_assert(sizeof m->id == sizeof spec->id && sizeof m->dir == sizeof spec->dir, "sizes");
    memcpy(m->id, spec->id, sizeof m->id);
    memcpy(m->dir, spec->dir, sizeof m->dir);
    m->index = i;
    mt_status st = mt_model_load(spec->dir, &mp, &m->model, err);
    if (st != MT_OK)
        return st;
    m->info = mt_model_get_info(m->model);
    m->tok = mt_model_tokenizer(m->model);
    if (srv_model_find_targets(m) != 0)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory listing the target languages of %s", m->id);
    m->sparams = session_params(srv, m->model);
    m->sessions = srv_sessions_new(m->model, &m->sparams, srv->workers);
    if (!m->sessions)
        return mt_err_set(err, MT_ERR_NOMEM, "cannot allocate the session pool of %s", m->id);
    /* batching off: each request decodes on a worker with a pooled session
     * (serve.c replaces this with the scheduler's decoder when batching) */
    m->unbatched = (srv_session_decoder){ .sessions = m->sessions, .workers = srv->workers_pool };
    m->decoder = srv_session_decoder_of(&m->unbatched);
    /* one session now: fail at startup rather than on the first request */
    mt_session *s;
    if ((st = srv_sessions_get(m->sessions, &s, err)) != MT_OK)
        return st;
    srv_sessions_put(m->sessions, s);
    m->load_ms = (srv_now() - t0) * 1e3;
    return MT_OK;
}

void srv_models_free(srv_server *srv)
{
    for (int i = 0; i < SRV_MAX_MODELS; i++) {
        srv_sessions_free(srv->models[i].sessions);
        srv_model_free_targets(&srv->models[i]);
        mt_model_free(srv->models[i].model);
        srv->models[i].sessions = NULL;
        srv->models[i].model = NULL;
    }
}
