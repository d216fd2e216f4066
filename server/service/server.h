/* server: the state every handler shares, through srv_request.srv.
 *
 * Everything here is written once at startup (models are filled in by the
 * loader thread before `ready` is set) and read-only afterwards, except the
 * atomics.  Handlers run only once `ready` is 1 (routes.c answers 503 before).
 */
#ifndef SRV_SERVER_H
#define SRV_SERVER_H

#include <stdatomic.h>

#include "translate/decode_job.h"
#include "http/request.h"
#include "mt.h"
#include "common/options.h"
#include "translate/scheduler.h"
#include "translate/session_decoder.h"
#include "translate/sessions.h"
#include "common/workers.h"
#include "file_job.h"
#include "translate/cache.h"
#include "translate/glossary.h"

typedef struct {
    char               id[64];
    char               dir[1024];
    int                index;        /* in srv_server.models; metrics label index */
    mt_model          *model;
    const mt_model_info *info;
    const mt_tokenizer *tok;
    mt_session_params  sparams;      /* every session of this model */
    srv_sessions      *sessions;     /* per-request sessions (batching off; /attention) */
    srv_sched         *sched;        /* batching on: the scheduler decoding /translate */
    srv_session_decoder unbatched;   /* batching off: sessions decoding on the workers */
    srv_decoder        decoder;      /* /translate's: the scheduler's, or unbatched's */
    double             load_ms;
    char             (*targets)[16];  /* a multilingual model's target languages (">>fra<<" -> "fra") ... */
    int32_t           *target_ids;    /* ... and their token ids (pairs.c); n_targets 0: not multilingual */
    int                n_targets;
} srv_model;

struct srv_server {
    srv_options  opts;
    srv_model    models[SRV_MAX_MODELS];
    int          n_models;
    srv_workers *workers_pool;      /* compute threads + queue: /attention, and decoding with batching off */
    srv_files   *files;             /* POST /translate_file's jobs and finished files */
    srv_glossary *glossaries[SRV_MAX_GLOSSARIES];   /* opts.glossaries[i]'s terms (glossaries.h) */
    srv_cache   *cache;             /* sentences translated (pipeline.h); NULL: --cache-mb 0 */
    int          cores, workers, blas_threads, http_threads;
    double       t_start;
    _Atomic int  ready;             /* 0 while loading, 1 serving */
    _Atomic int  in_flight;         /* requests inside the router now */
};

/* The model a request names (NULL or "" = the default), or NULL. */
srv_model *srv_find_model(srv_server *srv, const char *id);
/* The model of a request's optional "model" field; NULL with resp failed
 * (404 unknown_model, 400 when not a string). */
srv_model *srv_request_model(srv_request *req, srv_response *resp);

/* Loads model i (opts.models[i]) and creates its session pool.  Thread: loader. */
mt_status srv_model_load(srv_server *srv, int i, mt_err *err);
void      srv_models_free(srv_server *srv);

#endif
