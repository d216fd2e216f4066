/* options: flags and MTSERVE_* variables -> srv_options.  One table drives
 * parsing, the environment and the usage text, so they cannot drift apart. */
#include "options.h"
#include "mt.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OPT_INT, OPT_SIZE, OPT_STR, OPT_MODEL, OPT_BOOL, OPT_ONOFF, OPT_WEIGHTS, OPT_KV, OPT_SCHED, OPT_GLOSSARY } opt_kind;

typedef struct {
    const char *flag;       /* "--port" */
    const char *env;        /* "MTSERVE_PORT" */
    opt_kind    kind;
    size_t      offset;     /* into srv_options */
    size_t      size;       /* STR: buffer size */
    long long   min, max;   /* INT, SIZE */
    const char *help;
} opt_def;

#define F(field) offsetof(srv_options, field)
#define S(field) sizeof(((srv_options *)0)->field)

static const opt_def opt_table[] = {
    { "--model", "MTSERVE_MODEL", OPT_MODEL, 0, 0, 0, 0,
      "model directory, or a Hugging Face name org/name[@rev] (from its cache, downloaded when missing), or ID=DIR / ID=org/name; repeat for several (env: comma-separated); first is the default" },
    { "--host", "MTSERVE_HOST", OPT_STR, F(host), S(host), 0, 0, "address to listen on" },
    { "--port", "MTSERVE_PORT", OPT_INT, F(port), 0, 0, 65535, "TCP port (0 = any free port)" },
    { "--threads", "MTSERVE_THREADS", OPT_INT, F(threads), 0, 0, 256,
      "inference workers (sessions per model); 0 = auto" },
    { "--blas-threads", "MTSERVE_BLAS_THREADS", OPT_INT, F(blas_threads), 0, 0, 256,
      "compute threads of the engine's pool; 0 = auto (batching: cores; else cores / workers)" },
    { "--weights", "MTSERVE_WEIGHTS", OPT_WEIGHTS, F(weights), 0, 0, 0,
      "f32|f16|int8: hold weights as loaded, rounded to half precision (half the bytes per decode step), "
      "or quantized to int8 per output row (a quarter; the CPU's int8 kernel)" },
    { "--kv-cache", "MTSERVE_KV_CACHE", OPT_KV, F(kv_f16), 0, 0, 0,
      "f32|f16: the decoder's key/value caches in single or half precision (half the bytes a decode "
      "step's attention reads; K and V rounded once as they are cached)" },
    { "--decode-nice", "MTSERVE_DECODE_NICE", OPT_INT, F(decode_nice), 0, 0, 19,
      "the nice value of the threads that decode (the scheduler or workers, the engine's pool): above the "
      "HTTP threads' own, so /detect, /health and replies keep their latency while every decode slot is "
      "busy (BENCHMARKS.md); 0 = the same priority; default 5" },
    { "--http-sched", "MTSERVE_HTTP_SCHED", OPT_SCHED, F(http_rr), 0, 0, 0,
      "other|rr: the HTTP threads' scheduling class; rr = real-time SCHED_RR priority 1 (needs CAP_SYS_NICE or "
      "RLIMIT_RTPRIO >= 1; without it a warning and other), the decoding threads explicitly SCHED_OTHER at "
      "--decode-nice: a waking HTTP thread preempts a decoder instead of waiting behind it (README "
      "\"Real-time HTTP threads\" says why it is opt-in and what it costs); default other" },
    { "--http-threads", "MTSERVE_HTTP_THREADS", OPT_INT, F(http_threads), 0, 0, 1024,
      "HTTP (I/O) threads; 0 = auto (cores, at least 2)" },
    { "--queue", "MTSERVE_QUEUE", OPT_INT, F(queue), 0, 0, 100000,
      "requests that may wait for a worker; beyond it 503 + Retry-After" },
    { "--queue-timeout", "MTSERVE_QUEUE_TIMEOUT", OPT_INT, F(queue_timeout_ms), 0, 1, 3600000,
      "ms a request may wait in the queue before 503" },
    { "--api-key", "MTSERVE_API_KEY", OPT_STR, F(api_key), S(api_key), 0, 0,
      "require 'Authorization: Bearer KEY' (or api_key) on every route but /health" },
    { "--admin-key", "MTSERVE_ADMIN_KEY", OPT_STR, F(admin_key), S(admin_key), 0, 0,
      "turn on the admin API (POST, GET /admin/models, DELETE /admin/models/ID: models added and removed "
      "while serving) behind 'Authorization: Bearer KEY'; its models load on first use, as with --model-dir" },
    { "--api-keys", "MTSERVE_API_KEYS", OPT_STR, F(api_keys), S(api_keys), 0, 0,
      "a keys file: one key per line, optionally 'req-limit=N char-limit=N char-quota=N' after it (that key's "
      "own limits; char-quota: characters in all, DeepL's character_limit); requires a key like --api-key "
      "(both may be given)" },
    { "--usage-file", "MTSERVE_USAGE_FILE", OPT_STR, F(usage_file), S(usage_file), 0, 0,
      "where the characters each key has had translated are kept across restarts (GET /v2/usage, "
      "char-quota); rewritten atomically at most once a second; none = counted in memory" },
    { "--trusted-proxy", "MTSERVE_TRUSTED_PROXY", OPT_STR, F(trusted_proxy), S(trusted_proxy), 0, 0,
      "addresses or CIDR blocks of proxies whose X-Forwarded-For names the client (comma-separated)" },
    { "--req-limit", "MTSERVE_REQ_LIMIT", OPT_INT, F(req_limit), 0, 0, 100000000,
      "requests per minute per client (its API key, else its address) on the routes that compute; "
      "beyond it 429 + Retry-After; 0 = no limit" },
    { "--char-limit", "MTSERVE_CHAR_LIMIT", OPT_INT, F(char_limit), 0, 0, 1000000000,
      "characters of text per minute per client; beyond it 429 + Retry-After (a request over the "
      "whole minute's budget: 413); 0 = no limit" },
    { "--redis", "MTSERVE_REDIS", OPT_STR, F(redis), S(redis), 0, 0,
      "redis://[[user]:password@]host[:port][/db] or unix:///path: rate limits and key quotas shared by every "
      "replica in that Redis (README \"Replicas and Redis\"); while it is down each replica counts alone; "
      "\"\" = none (default)" },
    { "--redis-timeout", "MTSERVE_REDIS_TIMEOUT", OPT_INT, F(redis_timeout_ms), 0, 1, 60000,
      "ms a Redis call may take (connecting, then its reply); past it the request goes on with the local count" },
    { "--redis-budget", "MTSERVE_REDIS_BUDGET", OPT_INT, F(redis_budget_ms), 0, 1, 60000,
      "ms the calls on a plain translation's path (the rate limit's script, the shared cache's lookup) wait for "
      "Redis; past it that request decides locally and such calls skip Redis until a background PING is as quick "
      "(at most --redis-timeout); default 20" },
    { "--redis-cache-mb", "MTSERVE_REDIS_CACHE_MB", OPT_INT, F(redis_cache_mb), 0, 0, 1 << 20,
      "with --redis: megabytes of translations kept in Redis for every replica, a second level under "
      "--cache-mb (the oldest written dropped first); 0 = off (default)" },
    { "--redis-file-mb", "MTSERVE_REDIS_FILE_MB", OPT_INT, F(redis_file_mb), 0, 1, 1 << 20,
      "with --redis: megabytes of running asynchronous file jobs' sources (and options) kept in Redis, every "
      "replica's together, so that another replica takes a job over when its own dies; a file over it alone "
      "gets 413, one that does not fit now 503 + Retry-After; default 64" },
    { "--redis-lease", "MTSERVE_REDIS_LEASE", OPT_INT, F(redis_lease_ms), 0, 100, 3600000,
      "with --redis: ms of an asynchronous file job's lease, renewed by its replica while it runs; another "
      "replica takes the job over once it expired (its replica died); default 5000" },
    { "--redis-prefix", "MTSERVE_REDIS_PREFIX", OPT_STR, F(redis_prefix), S(redis_prefix), 0, 0,
      "the prefix of every key mtserve writes in Redis (services sharing one Redis tell theirs apart)" },
    { "--cors-origins", "MTSERVE_CORS_ORIGINS", OPT_STR, F(cors_origins), S(cors_origins), 0, 0,
      "allowed CORS origins: * or a comma-separated list" },
    { "--max-body", "MTSERVE_MAX_BODY", OPT_SIZE, F(max_body), 0, 1, (long long)1 << 30,
      "request body limit in bytes (K/M suffixes); beyond it 413" },
    { "--max-tokens", "MTSERVE_MAX_TOKENS", OPT_INT, F(max_tokens), 0, 1, 1 << 24,
      "source tokens per request, all sentences; beyond it 413" },
    { "--max-batch", "MTSERVE_MAX_BATCH", OPT_INT, F(max_batch), 0, 0, 4096,
      "sequences (sentences x beams) per session; 0 = engine default" },
    { "--kv-budget", "MTSERVE_KV_BUDGET", OPT_INT, F(kv_budget), 0, 0, 100000,
      "batching: a new sentence waits while the K/V caches the next step would read exceed this percent of "
      "the weight bytes a step reads (caches that outgrow the CPU cache cost more than the rows gain); "
      "0 = rows only; default 100" },
    { "--max-alternatives", "MTSERVE_MAX_ALTERNATIVES", OPT_INT, F(max_alternatives), 0, 0, 64,
      "LibreTranslate 'alternatives' limit" },
    { "--max-html-depth", "MTSERVE_MAX_HTML_DEPTH", OPT_INT, F(max_html_depth), 0, 1, 100000,
      "format html: the deepest nesting of elements accepted; deeper gets 400" },
    { "--max-file-bytes", "MTSERVE_MAX_FILE_BYTES", OPT_SIZE, F(max_file_bytes), 0, 1, (long long)1 << 30,
      "POST /translate_file: the file's bytes (K/M suffixes; the body limit of that route); beyond it 413" },
    { "--max-file-units", "MTSERVE_MAX_FILE_UNITS", OPT_INT, F(max_file_units), 0, 1, 10000000,
      "translation units (paragraphs, cues, entries) of a file; beyond it 413" },
    { "--max-file-jobs", "MTSERVE_MAX_FILE_JOBS", OPT_INT, F(max_file_jobs), 0, 1, 100000,
      "file jobs held at once (running, and finished ones not yet deleted); beyond it 503" },
    { "--file-store", "MTSERVE_FILE_STORE", OPT_SIZE, F(file_store), 0, 1, (long long)1 << 40,
      "bytes of finished files held in memory for download (K/M suffixes)" },
    { "--file-batch", "MTSERVE_FILE_BATCH", OPT_INT, F(file_batch), 0, 1, 4096,
      "units of a file job per decode job, one in flight per file: fewer leave more of the decoder to other clients" },
    { "--file-ttl", "MTSERVE_FILE_TTL", OPT_INT, F(file_ttl_s), 0, 1, 604800,
      "seconds a finished file is kept for download, then deleted" },
    { "--max-connections", "MTSERVE_MAX_CONNECTIONS", OPT_INT, F(max_connections), 0, 1, 1000000,
      "open connections (more are refused at once; capped by the open-file limit)" },
    { "--max-connections-per-ip", "MTSERVE_MAX_CONNECTIONS_PER_IP", OPT_INT, F(max_connections_per_ip), 0, 0,
      1000000, "open connections from one client address; 0 = no limit (behind a load balancer)" },
    { "--timeout", "MTSERVE_TIMEOUT", OPT_INT, F(timeout_s), 0, 1, 86400,
      "keep-alive idle timeout in seconds" },
    { "--request-timeout", "MTSERVE_REQUEST_TIMEOUT", OPT_INT, F(request_timeout_s), 0, 1, 86400,
      "seconds a client has to send a whole request (head and body); beyond it 408" },
    { "--write-timeout", "MTSERVE_WRITE_TIMEOUT", OPT_INT, F(write_timeout_s), 0, 0, 86400,
      "seconds a reply may wait with no byte taken by the client (it stopped reading); then the connection "
      "is closed and a stream's decoding stopped; 0 = never" },
    { "--drain-timeout", "MTSERVE_DRAIN_TIMEOUT", OPT_INT, F(drain_s), 0, 0, 86400,
      "on SIGTERM, seconds to wait for in-flight requests" },
    { "--no-access-log", "MTSERVE_ACCESS_LOG", OPT_BOOL, F(access_log), 0, 0, 0,
      "do not log one line per request (env: 0/1)" },
    { "--batching", "MTSERVE_BATCHING", OPT_ONOFF, F(batching), 0, 0, 0,
      "on|off: continuous batching (one scheduler per model) or one worker per request" },
    { "--web", "MTSERVE_WEB", OPT_STR, F(web_dir), S(web_dir), 0, 0,
      "serve the demo page from this directory at / and /web/ (\"\" = off)" },
    { "--shortlist", "MTSERVE_SHORTLIST", OPT_STR, F(shortlist), S(shortlist), 0, 0,
      "lexical shortlists (docs/SHORTLIST.md): off (default); auto: each model's lex.s2t.bin beside it, when "
      "present; FILE: the default model's; or ID=FILE,ID=FILE (Marian binary or text, CTranslate2 vmap)" },
    { "--lang-vocab", "MTSERVE_LANG_VOCAB", OPT_STR, F(lang_vocab), S(lang_vocab), 0, 0,
      "target-language vocabulary maps of multilingual models (README \"Multilingual models\"): auto "
      "(default): each M2M-100/NLLB-200 model's lang_vocab.txt beside it, when present; off; FILE: the "
      "default model's; or ID=FILE,ID=FILE" },
    { "--glossary", "MTSERVE_GLOSSARY", OPT_GLOSSARY, 0, 0, 0, 0,
      "SRC-TGT=FILE.tsv: terms kept when translating SRC -> TGT (source<TAB>target lines, # comments); "
      "repeat for several (env: comma-separated); a request's \"glossary\" wins over it" },
    { "--max-glossary-entries", "MTSERVE_MAX_GLOSSARY_ENTRIES", OPT_INT, F(max_glossary_entries), 0, 1, 1000000,
      "entries of a request's \"glossary\" (and of a --glossary file); beyond it 400" },
    { "--max-term-bytes", "MTSERVE_MAX_TERM_BYTES", OPT_INT, F(max_term_bytes), 0, 1, 4096,
      "bytes of a glossary term; beyond it 400" },
    { "--max-stored-glossaries", "MTSERVE_MAX_STORED_GLOSSARIES", OPT_INT, F(max_stored_glossaries), 0, 1, 100000,
      "glossaries clients may create through the API (DeepL's /v2 and /v3/glossaries), all keys together; "
      "beyond it 400 until one is deleted (each holds at most --max-glossary-entries entries a language pair)" },
    { "--cache-mb", "MTSERVE_CACHE_MB", OPT_INT, F(cache_mb), 0, 0, 1 << 20,
      "megabytes of the translation cache (sentences already translated with the same settings); 0 = off" },
    { "--model-dir", "MTSERVE_MODEL_DIR", OPT_STR, F(model_dir), S(model_dir), 0, 0,
      "every subdirectory holding a model is a model, its id the name; models are then loaded on first use "
      "(with --model's too) and unloaded, least recently used first, to keep within --max-models and --memory-budget" },
    { "--max-models", "MTSERVE_MAX_MODELS", OPT_INT, F(max_models), 0, 0, SRV_MAX_MODELS,
      "models loaded at once (loads on demand); 0 = no limit" },
    { "--memory-budget", "MTSERVE_MEMORY_BUDGET", OPT_SIZE, F(memory_budget), 0, 0, (long long)1 << 50,
      "bytes of the loaded models' weights and sessions (K/M/G suffixes; loads on demand); 0 = no limit" },
    { "--load-timeout", "MTSERVE_LOAD_TIMEOUT", OPT_INT, F(load_timeout_s), 0, 1, 3600,
      "seconds a request waits for its model to load (or for room to load it); then 503 + Retry-After" },
};
#define N_OPTS (sizeof opt_table / sizeof opt_table[0])

static void defaults(srv_options *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->models[0].id, sizeof o->models[0].id, "en-fr");
    snprintf(o->models[0].dir, sizeof o->models[0].dir, "models/en-fr");
    o->n_models = 1;
    snprintf(o->host, sizeof o->host, "127.0.0.1");
    snprintf(o->cors_origins, sizeof o->cors_origins, "*");
    snprintf(o->web_dir, sizeof o->web_dir, "web");
    snprintf(o->lang_vocab, sizeof o->lang_vocab, "auto");
    o->port = 8080;
    o->kv_budget = 100;
    o->decode_nice = 5; /* CFS weight 335 against 1024: a busy decoder leaves the HTTP threads
                           their share of a core without stalling itself */
    o->queue = 1024;    /* waiting costs a suspended connection, not a thread:
                           256 clients queue instead of a 503 storm */
    o->queue_timeout_ms = 30000;
    o->redis_timeout_ms = 100;
    o->redis_budget_ms = 20;
    o->redis_file_mb = 64;
    o->redis_lease_ms = 5000;
    snprintf(o->redis_prefix, sizeof o->redis_prefix, "mtserve:");
    o->max_body = 1 << 20;
    o->max_tokens = 1024;
    o->max_alternatives = 4;
    o->max_html_depth = SRV_HTML_DEFAULT_DEPTH;
    o->max_file_bytes = 16 << 20;
    o->max_file_units = 100000;
    o->max_file_jobs = 16;
    o->file_store = 256 << 20;
    o->file_ttl_s = 600;
    o->file_batch = 16;
    o->max_connections = 8192;
    o->max_connections_per_ip = 512;
    o->request_timeout_s = 10;
    o->timeout_s = 60;
    o->write_timeout_s = 5;
    o->drain_s = 30;
    o->access_log = 1;
    o->batching = 1;
    o->max_glossary_entries = 1000;
    o->max_term_bytes = 256;
    o->max_stored_glossaries = 1000;
    o->cache_mb = 64;
    o->load_timeout_s = 30;
}

/* ---- values ---------------------------------------------------------------- */

static int parse_number(const char *s, int allow_suffix, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno)
        return -1;
    if (allow_suffix && (*end == 'k' || *end == 'K') && v <= INT64_MAX / 1024)
        v *= 1024, end++;
    else if (allow_suffix && (*end == 'm' || *end == 'M') && v <= INT64_MAX / (1024 * 1024))
        v *= 1024 * 1024, end++;
    else if (allow_suffix && (*end == 'g' || *end == 'G') && v <= INT64_MAX / (1024 * 1024 * 1024))
        v *= 1024 * 1024 * 1024, end++;
    if (*end)
        return -1;
    *out = v;
    return 0;
}

static int valid_id(const char *id)
{
    if (!*id)
        return 0;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return 0;
    return 1;
}

int srv_model_spec_parse(const char *arg, srv_model_spec *spec, char *err, size_t err_len)
{
    const char *eq = strchr(arg, '=');
    const char *dir = eq ? eq + 1 : arg;
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    if (dlen == 0 || dlen >= sizeof spec->dir) {
        snprintf(err, err_len, "bad model directory '%s'", arg);
        return -1;
    }
    memcpy(spec->dir, dir, dlen);
    spec->dir[dlen] = 0;
    if (eq) {
        size_t ilen = (size_t)(eq - arg);
        if (ilen >= sizeof spec->id) {
            snprintf(err, err_len, "model id too long in '%s'", arg);
            return -1;
        }
        memcpy(spec->id, arg, ilen);
        spec->id[ilen] = 0;
    } else {
        const char *base = strrchr(spec->dir, '/');
        base = base ? base + 1 : spec->dir;
        const char *at = strchr(base, '@');        /* a hub name's revision: org/name@rev is "name" */
        size_t blen = at ? (size_t)(at - base) : strlen(base);
        if (blen >= sizeof spec->id) {
            snprintf(err, err_len, "model id too long in '%s' (use --model ID=DIR)", arg);
            return -1;
        }
        memcpy(spec->id, base, blen);
        spec->id[blen] = 0;
    }
    if (!valid_id(spec->id)) {
        snprintf(err, err_len, "bad model id '%s' (letters, digits, '-', '_', '.')", spec->id);
        return -1;
    }
    return 0;
}

static int add_model(srv_options *o, const char *arg, char *err, size_t err_len)
{
    if (o->n_models >= SRV_MAX_MODELS) {
        snprintf(err, err_len, "at most %d models", SRV_MAX_MODELS);
        return -1;
    }
    srv_model_spec *spec = &o->models[o->n_models];
    if (srv_model_spec_parse(arg, spec, err, err_len))
        return -1;
    for (int i = 0; i < o->n_models; i++)
        if (strcmp(o->models[i].id, spec->id) == 0) {
            snprintf(err, err_len, "two models with the id '%s' (use --model ID=DIR)", spec->id);
            return -1;
        }
    o->n_models++;
    o->models_given = 1;
    return 0;
}

int srv_glossary_spec_parse(const char *arg, srv_glossary_spec *spec, char *err, size_t err_len)
{
    const char *eq = strchr(arg, '='), *dash = eq ? memchr(arg, '-', (size_t)(eq - arg)) : NULL;
    size_t ls = dash ? (size_t)(dash - arg) : 0, lt = dash ? (size_t)(eq - dash - 1) : 0;
    if (!dash || !ls || !lt || ls >= sizeof spec->source || lt >= sizeof spec->target || !eq[1] ||
        strlen(eq + 1) >= sizeof spec->path) {
        snprintf(err, err_len, "--glossary '%s' is not SRC-TGT=FILE (\"en-fr=terms.tsv\")", arg);
        return -1;
    }
    memcpy(spec->source, arg, ls);
    spec->source[ls] = 0;
    memcpy(spec->target, dash + 1, lt);
    spec->target[lt] = 0;
    snprintf(spec->path, sizeof spec->path, "%s", eq + 1);
    return 0;
}

static int add_glossary(srv_options *o, const char *arg, char *err, size_t err_len)
{
    if (o->n_glossaries >= SRV_MAX_GLOSSARIES) {
        snprintf(err, err_len, "at most %d glossaries", SRV_MAX_GLOSSARIES);
        return -1;
    }
    if (srv_glossary_spec_parse(arg, &o->glossaries[o->n_glossaries], err, err_len))
        return -1;
    o->n_glossaries++;
    return 0;
}

/* An MTSERVE_* list: comma-separated entries, spaces around them ignored,
 * each handed to add (add_model, add_glossary). */
static int add_each(srv_options *o, const char *list, const char *var,
                    int (*add)(srv_options *, const char *, char *, size_t), char *err, size_t err_len)
{
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *next = p + len + (comma ? 1 : 0);
        while (len && *p == ' ')
            p++, len--;
        while (len && p[len - 1] == ' ')
            len--;
        char one[1200];
        if (len >= sizeof one) {
            snprintf(err, err_len, "%s entry too long", var);
            return -1;
        }
        memcpy(one, p, len);
        one[len] = 0;
        if (len && add(o, one, err, err_len))
            return -1;
        p = next;
    }
    return 0;
}

static int set_glossary_list(srv_options *o, const char *list, char *err, size_t err_len)
{
    o->n_glossaries = 0;
    return add_each(o, list, "MTSERVE_GLOSSARY", add_glossary, err, err_len);
}

static int set_models_list(srv_options *o, const char *list, char *err, size_t err_len)
{
    o->n_models = 0;
    if (add_each(o, list, "MTSERVE_MODEL", add_model, err, err_len))
        return -1;
    if (o->n_models == 0) {
        snprintf(err, err_len, "MTSERVE_MODEL names no model");
        return -1;
    }
    return 0;
}

static int is_false(const char *v)
{
    return strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "no") == 0 ||
           strcmp(v, "off") == 0;
}

/* Stores value into the field of def; from_env picks the env spelling of booleans. */
static int set_value(srv_options *o, const opt_def *def, const char *value, int from_env,
                     char *err, size_t err_len)
{
    const char *name = from_env ? def->env : def->flag;
    char *field = (char *)o + def->offset;
    long long v;
    switch (def->kind) {
    case OPT_MODEL:
        return from_env ? set_models_list(o, value, err, err_len) : add_model(o, value, err, err_len);
    case OPT_GLOSSARY:
        return from_env ? set_glossary_list(o, value, err, err_len) : add_glossary(o, value, err, err_len);
    case OPT_STR:
        if (strlen(value) >= def->size) {
            snprintf(err, err_len, "%s: value too long", name);
            return -1;
        }
        snprintf(field, def->size, "%s", value);
        return 0;
    case OPT_BOOL:
        *(int *)field = from_env ? !is_false(value) : 0;
        return 0;
    case OPT_WEIGHTS:
        if (strcmp(value, "f32") == 0 || strcmp(value, "f16") == 0 || strcmp(value, "int8") == 0) {
            *(int *)field = value[0] == 'i' ? MT_WEIGHTS_I8 : value[1] == '1' ? MT_WEIGHTS_F16 : MT_WEIGHTS_F32;
            return 0;
        }
        snprintf(err, err_len, "%s: '%s' is not f32, f16 or int8", name, value);
        return -1;
    case OPT_KV:
        if (strcmp(value, "f32") == 0 || strcmp(value, "f16") == 0) {
            *(int *)field = value[1] == '1';
            return 0;
        }
        snprintf(err, err_len, "%s: '%s' is not f32 or f16", name, value);
        return -1;
    case OPT_SCHED:
        if (strcmp(value, "other") == 0 || strcmp(value, "rr") == 0) {
            *(int *)field = value[0] == 'r';
            return 0;
        }
        snprintf(err, err_len, "%s: '%s' is not other or rr", name, value);
        return -1;
    case OPT_ONOFF:
        if (strcmp(value, "on") == 0 || strcmp(value, "1") == 0)
            *(int *)field = 1;
        else if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0)
            *(int *)field = 0;
        else {
            snprintf(err, err_len, "%s: '%s' is not on or off", name, value);
            return -1;
        }
        return 0;
    case OPT_INT:
    case OPT_SIZE:
        if (parse_number(value, def->kind == OPT_SIZE, &v) || v < def->min || v > def->max) {
            snprintf(err, err_len, "%s: '%s' is not an integer in [%lld, %lld]", name, value,
                     def->min, def->max);
            return -1;
        }
        if (def->kind == OPT_SIZE)
            *(size_t *)field = (size_t)v;
        else
            *(int *)field = (int)v;
        return 0;
    default:
        return 0;
    }
}

static const opt_def *find_flag(const char *arg, size_t len)
{
    for (size_t i = 0; i < N_OPTS; i++)
        if (strlen(opt_table[i].flag) == len && strncmp(opt_table[i].flag, arg, len) == 0)
            return &opt_table[i];
    return NULL;
}

static int parse_env(srv_options *o, srv_getenv_fn env, char *err, size_t err_len)
{
    for (size_t i = 0; env && i < N_OPTS; i++) {
        const char *v = env(opt_table[i].env);
        if (v && *v && set_value(o, &opt_table[i], v, 1, err, err_len))
            return -1;
    }
    return 0;
}

static int parse_argv(srv_options *o, int argc, char **argv, char *err, size_t err_len)
{
    int models_from_flags = 0, glossaries_from_flags = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return 1;
        const char *eq = strchr(arg, '=');
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        const opt_def *def = strncmp(arg, "--", 2) == 0 ? find_flag(arg, nlen) : NULL;
        if (!def) {
            snprintf(err, err_len, "unknown option '%s'", arg);
            return -1;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (def->kind == OPT_BOOL) {
            if (value) {
                snprintf(err, err_len, "%s takes no value", def->flag);
                return -1;
            }
        } else if (!value) {
            if (i + 1 >= argc) {
                snprintf(err, err_len, "%s needs a value", def->flag);
                return -1;
            }
            value = argv[++i];
        }
        if (def->kind == OPT_MODEL && !models_from_flags) {
            o->n_models = 0;        /* flags replace the environment's list */
            models_from_flags = 1;
        }
        if (def->kind == OPT_GLOSSARY && !glossaries_from_flags) {
            o->n_glossaries = 0;    /* flags replace the environment's list */
            glossaries_from_flags = 1;
        }
        if (set_value(o, def, value ? value : "", 0, err, err_len))
            return -1;
    }
    return 0;
}

int srv_options_parse(srv_options *o, int argc, char **argv, srv_getenv_fn env,
                      char *err, size_t err_len)
{
    defaults(o);
    if (parse_env(o, env, err, err_len))
        return -1;
    int rc = parse_argv(o, argc, argv, err, err_len);
    if (rc == 0 && o->model_dir[0] && !o->models_given)
        o->n_models = 0;            /* --model-dir alone: its models, not the default one */
    return rc;
}

void srv_options_usage(FILE *f)
{
    fprintf(f, "usage: mtserve serve [options]\n"
               "Serves translation models over HTTP (default: models/en-fr on 127.0.0.1:8080).\n"
               "Every option can also be set from the environment; a flag wins.\n\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt_def *d = &opt_table[i];
        fprintf(f, "  %-20s %-26s %s\n", d->flag, d->env, d->help);
    }
}
