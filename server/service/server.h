/* server: the state every handler shares, through srv_request.srv.
 *
 * Everything here is written once at startup (models are filled in by the
 * loader thread before `ready` is set) and read-only afterwards, except the
 * atomics, the models the admin API adds and removes while serving, and what
 * SIGHUP reloads:
 *   - a model added (admin.h) is written whole at models[n_models] and only
 *     then published by n_models' atomic increment (residency.c), so a reader
 *     that loops to n_models sees it complete or not at all; indices are never
 *     reused;
 *   - a model removed has `removed` set: every lookup and listing skips it at
 *     once, its weights go when nobody holds them (residency.c), and its card
 *     stays until exit, since a request that found it a moment before may
 *     still read its languages;
 *   - the API keys and the --glossary files are swapped by SIGHUP (reload.c)
 *     under reload_lock's write side; their readers hold its read side.
 * Handlers run only once `ready` is 1 (routes.c answers 503 before).
 */
#ifndef SRV_SERVER_H
#define SRV_SERVER_H

#include <pthread.h>
#include <stdatomic.h>

#include "translate/decode_job.h"
#include "http/request.h"
#include "mt.h"
#include "common/api_keys.h"
#include "common/usage.h"
#include "glossary_store.h"
#include "common/options.h"
#include "common/ratelimit.h"
#include "translate/scheduler.h"
#include "translate/session_decoder.h"
#include "translate/sessions.h"
#include "common/workers.h"
#include "file_job.h"
#include "translate/cache.h"
#include "translate/copy_gate.h"
#include "translate/glossary.h"
#include "detect/charlm.h"
#include "store/redis.h"
#include "file_share.h"

typedef struct srv_residency srv_residency;
typedef struct srv_admin srv_admin;
typedef struct srv_takeover srv_takeover;

/* Detection language models one model may hold (one per source language it has). */
#define SRV_MODEL_MAX_CHARLM 8

typedef struct {
    char               id[64];
    char               dir[1024];
    _Atomic int        removed;      /* DELETE /admin/models/ID: no longer found nor listed */
    char               cache_ns[80]; /* its translations' namespace in the cache: "ID#INDEX", so a model
                                        added again under a removed one's id never gets its translations */
    int                index;        /* in srv_server.models; metrics label index */
    /* What the model is, resident and read-only for the whole process: its
     * config, languages and tokenizer.  Loaded at start: the model itself;
     * on demand (--model-dir, --max-models, --memory-budget): its card
     * (mt_model_load_card), its weights loaded on first use (residency.h). */
    mt_model          *model;
    const mt_model_info *info;
    const mt_tokenizer *tok;
    mt_session_params  sparams;      /* every session of this model */
    srv_decoder        decoder;      /* /translate's: the scheduler's, or unbatched's; on demand the
                                        residency's, which loads the model before handing jobs on */
    char             (*targets)[16];  /* a multilingual model's target languages (">>fra<<" -> "fra") ... */
    int32_t           *target_ids;    /* ... and their token ids (pairs.c); n_targets 0: not multilingual */
    int                n_targets;
    /* An NLLB-200 / M2M-100 model (its tokenizer is mt_multi's): targets lists
     * every language of the model in its order, by the code clients know it by
     * ("fr" for fra_Latn; a second script of one language keeps the model's
     * code, "zho_Hant"), target_ids their tokens; each is a source too: its
     * token goes first in the source, the target's is generated first.
     * target_names: each one's English name, a language the model has in two
     * scripts named with its script ("Chinese (Traditional)", pairs.c). */
    int                multi;
    char             (*target_names)[80];
    /* A decoder-only model (its tokenizer is a tokenizer.json): the pairs it
     * translates, declared in translation.json beside the checkpoint (pairs.c;
     * none: raw continuations only), its prompt (that file's "prompt", else the
     * one its chat template names) and the ids that end a translation. */
    int                llm;
    char             (*pairs)[2][16];
    int                n_pairs;
    struct mt_prompt  *prompt;
    uint8_t           *end_ids;       /* [vocab_size] (mt_decode_params.end_ids) */
    int                max_length;    /* translation.json's default max_length (0: the model's) */
    /* The OpenAI-compatible chat (api/openai_api.c): the prompt its chat
     * template names ("auto"), with the ids that end a reply; NULL and
     * chat_why (the reason, for a 400) when it has none we render. */
    struct mt_prompt  *chat;
    uint8_t           *chat_end_ids;  /* [vocab_size] */
    char               chat_why[520];
    /* Language models of its source languages for detection: <dir>/<source>.charlm,
     * when the file is there (detect/charlm.h; read with the model, a bad file
     * refuses the model), used by detect_source.c */
    srv_charlm        *charlm[SRV_MODEL_MAX_CHARLM];
    int                n_charlm;
    /* NULL, or its copy guard's gate: <dir>/copy_gate.txt when the file is
     * there (translate/copy_gate.h; read with the model, a bad file refuses
     * the model): the guard armed only for sentences holding one of its words */
    srv_copy_gate     *copy_gate;
    /* NULL, or its lexical shortlist (serve --shortlist), read against the card
     * at start, shared by every request that does not say "shortlist": false;
     * such requests are cached under cache_ns_sl */
    mt_shortlist      *shortlist;
    char               shortlist_file[1024];
    /* NULL, or its target-language vocabulary map (serve --lang-vocab; a
     * multilingual model), read as the shortlist is, used alike (the same
     * "shortlist": false turns both off; cache_ns_sl then names both) */
    mt_lang_vocab     *lang_vocab;
    char               lang_vocab_file[1024];
    char               cache_ns_sl[96];
    /* The loaded part: written once before `ready` (at start), or on demand
     * by the residency's loader while nobody holds the model (residency.c);
     * read only by a holder (srv_model_acquire, a job's decoder). */
    mt_model          *weights;      /* the model with its weights (= model when loaded at start) */
    srv_sessions      *sessions;     /* per-request sessions (batching off; /attention) */
    srv_sched         *sched;        /* batching on: the scheduler decoding /translate */
    srv_session_decoder unbatched;   /* batching off: sessions decoding on the workers */
    srv_decoder        direct;       /* the decoder of the loaded weights (= decoder at start) */
    size_t             bytes;        /* weight bytes + one session's, as the engine reports them */
    double             load_ms;
} srv_model;

struct srv_server {
    srv_options  opts;
    srv_model    models[SRV_MAX_MODELS];
    _Atomic int  n_models;          /* grows (admin API): a reader loops to its value once read */
    char         default_id[64];    /* serve's first --model, when it downloads at start (it is added
                                       after the others): the default once served; "": the first listed */
    srv_workers *workers_pool;      /* compute threads + queue: /attention, and decoding with batching off */
    srv_files   *files;             /* POST /translate_file's jobs and finished files */
    srv_glossary *glossaries[SRV_MAX_GLOSSARIES];   /* opts.glossaries[i]'s terms (glossaries.h; reload_lock) */
    srv_cache   *cache;             /* sentences translated (pipeline.h); NULL: --cache-mb 0 */
    srv_api_keys keys;              /* --api-key then --api-keys FILE's; n 0: no key required; swapped by
                                       SIGHUP (reload.c: read under reload_lock) */
    srv_api_keys usage_keys;        /* the keys at start, whose slots usage.h counts (never swapped) */
    pthread_rwlock_t reload_lock;   /* keys and glossaries[]: SIGHUP writes, requests read */
    srv_ratelimit *limits;          /* --req-limit / --char-limit and the keys' own; NULL: none at all */
    srv_usage   *usage;             /* characters per key against char-quota (usage.h) */
    srv_redis   *redis;             /* --redis (store/redis.h); NULL: none */
    srv_rcache  *rcache;            /* --redis-cache-mb: cache's second level, in redis; NULL: off */
    srv_shared  *shared;            /* limits and usage: through redis when set, else limits' and usage's */
    srv_file_share file_share;      /* with redis: files' publish context (file_share.h) */
    srv_takeover *takeover;         /* with redis: asynchronous file jobs' sources and leases, taken over
                                       from a replica that died (file_takeover.h); NULL: none */
    srv_gstore  *gstore;            /* the glossaries clients made (DeepL's API: glossary_store.h) */
    int          cores, workers, blas_threads, http_threads;
    double       t_start;
    srv_residency *residency;       /* models on demand (residency.h); NULL: all loaded at start */
    srv_admin   *admin;             /* --admin-key: models added and removed while serving (admin.h) */
    _Atomic int  ready;             /* 0 while loading, 1 serving */
    _Atomic int  in_flight;         /* requests inside the router now */
};

/* 1 while m is served (not removed by the admin API). */
static inline int srv_model_listed(const srv_model *m) { return !atomic_load(&m->removed); }

/* The model a request names (NULL or "" = the default: default_id's when
 * served, else the first listed), or NULL. */
srv_model *srv_find_model(srv_server *srv, const char *id);
/* The model of a request's optional "model" field; NULL with resp failed
 * (404 unknown_model, 400 when not a string, 503 + Retry-After naming the
 * download while that model, or the default one, is still being added). */
srv_model *srv_request_model(srv_request *req, srv_response *resp);

/* Names srv->models from the options (--model), before anything reads them. */
void      srv_models_name(srv_server *srv);
/* On demand: srv->models from --model, then every model subdirectory of
 * --model-dir (sorted; bad ids and directories without a model skipped with
 * a log line), each with its card, sessions' shape and languages, no
 * weights.  0, or -1 with a message (a --model's card failed). */
int       srv_models_discover(srv_server *srv, char *err, size_t err_len);
/* Reads model m's card (id, dir, index given): 0, or -1 with err and m cleared. */
int       srv_model_read_card(srv_server *srv, srv_model *m, const char *id, const char *dir, int index, mt_err *err);
/* Loads model i at start (its weights are its card) and its decoder.  Thread: loader. */
mt_status srv_model_load(srv_server *srv, int i, mt_err *err);
/* Loads m's weights, sessions and decoder (the loaded part above).  On demand: the residency's loader. */
mt_status srv_model_load_weights(srv_server *srv, srv_model *m, mt_err *err);
/* Frees the loaded part (the scheduler stops after the work it holds: nothing may hold m). */
void      srv_model_unload_weights(srv_model *m);
/* Frees m's detection language models (charlm[]). */
void      srv_model_free_charlms(srv_model *m);
void      srv_models_free(srv_server *srv);

#endif
