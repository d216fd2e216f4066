/* options: the serve command's configuration, from flags and environment.
 *
 * Every flag has an MTSERVE_* environment twin; a flag wins over its variable.
 * Parsing is pure (no I/O besides the error message it writes into err) so
 * that the unit tests can drive it with a fake environment.
 */
#ifndef SRV_OPTIONS_H
#define SRV_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#define SRV_MAX_MODELS 16
/* format html: the element nesting accepted unless --max-html-depth says (the CLI's too) */
#define SRV_HTML_DEFAULT_DEPTH 256

typedef struct {
    char id[64];            /* what requests name it by: "en-fr" */
    char dir[1024];         /* the model directory */
} srv_model_spec;

#define SRV_MAX_GLOSSARIES 32

/* --glossary PAIR=FILE.tsv: terms kept when translating source -> target */
typedef struct {
    char source[16], target[16];
    char path[1024];
} srv_glossary_spec;

typedef struct {
    srv_model_spec models[SRV_MAX_MODELS];
    int    n_models;        /* the first is the default */
    char   host[256];
    char   shortlist[2048];     /* --shortlist: off, auto, FILE (the default model's) or ID=FILE,... */
    char   lang_vocab[2048];    /* --lang-vocab: auto (default), off, FILE (the default model's) or ID=FILE,... */
    int    port;
    int    threads;         /* inference workers = sessions per model; 0 = auto
                               (batching: request threads waiting on the scheduler; 0 = max_batch) */
    int    blas_threads;    /* compute threads (engine pool); 0 = auto (cores / workers) */
    int    weights;         /* --weights: an mt_weights (MT_WEIGHTS_F32, _F16, _I8) */
    int    kv_f16;          /* --kv-cache f16: the sessions' K/V caches in half precision */
    int    decode_nice;     /* nice value of the decoding threads (scheduler/workers, engine pool) */
    int    http_rr;         /* --http-sched rr: the HTTP threads in SCHED_RR priority 1 */
    int    http_threads;    /* libmicrohttpd I/O thread pool; 0 = auto (cores, >= 2) */
    int    queue;           /* requests that may wait for a worker; more get 503 */
    int    queue_timeout_ms;/* a waiting request gives up (503) after this */
    char   api_key[256];    /* "" = no key required */
    char   admin_key[256];  /* the admin API's key (POST/GET/DELETE /admin/models); "" = no admin API */
    char   api_keys[1024];  /* a keys file (one key per line, with its own limits); "" = none */
    char   usage_file[1024];/* the characters each key has used, kept across restarts; "" = in memory */
    char   trusted_proxy[1024]; /* proxies whose X-Forwarded-For names the client; "" = none */
    int    req_limit;       /* requests per minute per client (key, else address); 0 = no limit */
    int    char_limit;      /* characters of text per minute per client; 0 = no limit */
    char   redis[1024];     /* --redis URL: limits and quotas shared through it (store/redis.h); "" = none */
    int    redis_timeout_ms;/* a Redis call's bound (connect, then reply) */
    int    redis_budget_ms; /* the bound of the calls on a plain translation's path (rate limit, cache lookup) */
    char   redis_prefix[64];/* of every key written in Redis */
    int    redis_cache_mb;  /* the shared translation cache's megabytes in Redis; 0 = off */
    int    redis_file_mb;   /* running asynchronous file jobs' sources kept in Redis (all replicas) */
    int    redis_lease_ms;  /* a file job's lease: taken over this long after its replica stopped renewing it */
    char   cors_origins[1024]; /* "*" or a comma-separated list of origins */
    size_t max_body;        /* request body bytes; more gets 413 */
    int    max_tokens;      /* source tokens per request (all sentences); more gets 413 */
    int    max_batch;       /* sequences (sentences x beams) per session; 0 = engine default
                               (batching: decoder rows of the scheduler's session; 0 = 64) */
    int    kv_budget;       /* batching: percent of the weight bytes a decoder step reads that the
                               step's K/V caches may add before new sentences wait; 0 = rows only */
    int    batching;        /* 1: continuous batching, one scheduler thread per model (default) */
    int    max_alternatives;/* LibreTranslate alternatives cap */
    int    max_html_depth;  /* format "html": the deepest element nesting accepted; deeper gets 400 */
    size_t max_file_bytes;  /* POST /translate_file: the body limit of that route */
    int    max_file_units;  /* translation units of a file */
    int    max_file_jobs;   /* file jobs held at once */
    size_t file_store;      /* bytes of finished files held */
    int    file_ttl_s;      /* seconds a finished file is kept */
    int    file_batch;      /* units of a file job per decode job */
    int    max_connections;
    int    max_connections_per_ip;  /* 0 = no per-address limit */
    int    timeout_s;       /* keep-alive idle timeout */
    int    request_timeout_s;   /* a whole request must arrive within this (408) */
    int    write_timeout_s;     /* a reply the client takes no byte of for this long: closed */
    int    drain_s;         /* on SIGTERM: wait at most this long for in-flight requests */
    int    access_log;      /* one stderr line per request */
    char   web_dir[1024];   /* the demo page's directory; "" = not served */
    srv_glossary_spec glossaries[SRV_MAX_GLOSSARIES];
    int    n_glossaries;
    int    max_glossary_entries;   /* a request's "glossary" (and each file): entries */
    int    max_term_bytes;  /* a glossary term's bytes */
    int    max_stored_glossaries;  /* glossaries made through the API, in all */
    int    cache_mb;        /* the translation cache's megabytes; 0 = off */
    /* models on demand (service/residency.h): any of the three turns it on */
    char   model_dir[1024]; /* every model subdirectory is a model, its id the name; "" = none */
    int    max_models;      /* models loaded at once; 0 = no limit */
    size_t memory_budget;   /* weight + session bytes of the loaded models; 0 = no limit */
    int    load_timeout_s;  /* a request waits this long for its model to load, then 503 */
    int    models_given;    /* --model or MTSERVE_MODEL named models (else the default's, dropped with --model-dir) */
} srv_options;

/* Lookup of an environment variable (getenv in production, a table in tests). */
typedef const char *(*srv_getenv_fn)(const char *name);

/* Fills *o from defaults, then env, then argv (argv[0] is the command name).
 * Returns 0 on success, 1 when --help was asked (usage is the caller's job),
 * -1 on a bad flag or value with a message in err. */
int  srv_options_parse(srv_options *o, int argc, char **argv, srv_getenv_fn env,
                       char *err, size_t err_len);
void srv_options_usage(FILE *f);

/* Splits "id=DIR" or "DIR" into a spec (id = basename of DIR).  0 or -1. */
int  srv_model_spec_parse(const char *arg, srv_model_spec *spec, char *err, size_t err_len);
/* Splits "SRC-TGT=FILE" ("en-fr=terms.tsv") into a spec.  0 or -1. */
int  srv_glossary_spec_parse(const char *arg, srv_glossary_spec *spec, char *err, size_t err_len);

#endif
