/* models: the configured models -- named, described by their cards, loaded
 * (weights, sessions, decoder), unloaded -- and looked up. */
#include "server.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/metrics.h"
#include "http/body.h"
#include "http/request.h"
#include "admin.h"
#include "languages.h"
#include "pairs.h"

srv_model *srv_find_model(srv_server *srv, const char *id)
{
    int n = srv->n_models;
    if ((!id || !*id) && srv->default_id[0])
        for (int i = 0; i < n; i++)
            if (srv_model_listed(&srv->models[i]) && !strcmp(srv->models[i].id, srv->default_id))
                return &srv->models[i];
    for (int i = 0; i < n; i++)
        if (srv_model_listed(&srv->models[i]) && (!id || !*id || strcmp(srv->models[i].id, id) == 0))
            return &srv->models[i];
    return NULL;
}

/* -1 with resp failed (503 + Retry-After naming the download) when model
 * want is not served yet but being added: downloaded at start or through
 * the admin API; else 0. */
static int still_added(srv_server *srv, const char *want, srv_response *resp)
{
    srv_admin_pending p;
    if (!srv->admin || !want[0] || srv_find_model(srv, want) || !srv_admin_pending_find(srv->admin, want, &p))
        return 0;
    resp->retry_after = 5;
    if (p.phase == SRV_ADMIN_DOWNLOADING && p.total)
        return srv_fail(resp, SRV_E_LOADING, "model '%s' is still downloading (%s: %s, %.1f of %.1f MB); retry "
                        "shortly", p.id, p.name, p.file, (double)p.done / 1e6, (double)p.total / 1e6);
    return srv_fail(resp, SRV_E_LOADING, "model '%s' is still being %s (%s); retry shortly", p.id,
                    p.phase == SRV_ADMIN_DOWNLOADING ? "downloaded" : "read", p.name[0] ? p.name : p.path);
}

/* Looks up the "model" field: the default model when absent, 404 when
 * unknown, 503 while it is being added. */
srv_model *srv_request_model(srv_request *req, srv_response *resp)
{
    const char *id = NULL;
    if (srv_field_string(req, resp, "model", &id) < 0)
        return NULL;
    if (still_added(req->srv, id && *id ? id : req->srv->default_id, resp))
        return NULL;
    srv_model *m = srv_find_model(req->srv, id);
    if (!m)
        srv_fail(resp, SRV_E_UNKNOWN_MODEL, "unknown model '%s' (see GET /models)", id);
    return m;
}

/* Session shape: the engine's defaults, source length capped by --max-tokens,
 * batch by --max-batch when given.  A card gives the same shape as its model. */
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

void srv_models_name(srv_server *srv)
{
    _Static_assert(sizeof srv->models[0].id == sizeof srv->opts.models[0].id &&
                   sizeof srv->models[0].dir == sizeof srv->opts.models[0].dir, "sizes");
    srv->n_models = srv->opts.n_models;
    for (int i = 0; i < srv->n_models; i++) {
        memcpy(srv->models[i].id, srv->opts.models[i].id, sizeof srv->models[i].id);
        memcpy(srv->models[i].dir, srv->opts.models[i].dir, sizeof srv->models[i].dir);
        srv->models[i].index = i;
        snprintf(srv->models[i].cache_ns, sizeof srv->models[i].cache_ns, "%.63s#%d", srv->models[i].id, i);
    }
}

/* [vocab_size] flags of the ids that end p's output, or NULL without memory. */
static uint8_t *stop_flags(const srv_model *m, const mt_prompt *p)
{
    uint8_t *f = calloc((size_t)m->info->vocab_size, 1);
    const int32_t *ids;
    int n = mt_prompt_stop_ids(p, &ids);
    for (int i = 0; f && i < n; i++)
        if (ids[i] >= 0 && ids[i] < m->info->vocab_size)
            f[ids[i]] = 1;
    return f;
}

/* The chat of the OpenAI-compatible API: the kind its chat template names.
 * A template we do not render is no failure of the model: its chat
 * requests are refused with the reason (chat_why). */
static mt_status describe_chat(srv_model *m, const mt_hf_tokenizer *hf, mt_err *err)
{
    mt_err why = { 0 };
    if (!mt_hf_tokenizer_chat_template(hf)) {
        snprintf(m->chat_why, sizeof m->chat_why, "its tokenizer_config.json has no chat_template (a completion "
                 "model): use /v1/completions");
        return MT_OK;
    }
    if (mt_prompt_new(hf, "auto", &m->chat, &why) != MT_OK) {
        snprintf(m->chat_why, sizeof m->chat_why, "%.500s", why.msg);
        return why.status == MT_ERR_NOMEM ? mt_err_set(err, MT_ERR_NOMEM, "out of memory") : MT_OK;
    }
    if (!(m->chat_end_ids = stop_flags(m, m->chat)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    return MT_OK;
}

/* A decoder-only model: its pairs and prompt (translation.json), and the
 * ids that end a translation (the prompt's end of turn and stop string). */
static mt_status describe_llm(srv_model *m, mt_err *err)
{
    const mt_hf_tokenizer *hf = mt_tokenizer_hf(m->tok);
    if (!hf)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: a decoder-only model needs its tokenizer.json to be served", m->dir);
    m->llm = 1;
    mt_status st = describe_chat(m, hf, err);
    if (st != MT_OK)
        return st;
    char kind[32];
    st = srv_model_read_pairs(m, m->dir, kind, sizeof kind, err);
    if (st != MT_OK || !m->n_pairs)
        return st;                      /* no pairs: raw continuations only, no prompt */
    if ((st = mt_prompt_new(hf, kind[0] ? kind : NULL, &m->prompt, err)) != MT_OK)
        return st;
    if (!(m->end_ids = stop_flags(m, m->prompt)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    return MT_OK;
}

/* The file option v (--shortlist, --lang-vocab) names for model m ("" none):
 * off, auto (the file auto_name beside it, when present), FILE (the first
 * model's), or ID=FILE,... */
static void option_file(const char *v, const char *auto_name, const srv_model *m, char *out, size_t cap)
{
    out[0] = 0;
    if (!v[0] || !strcmp(v, "off"))
        return;
    if (!strcmp(v, "auto")) {
        struct stat sb;
        snprintf(out, cap, "%.1000s/%s", m->dir, auto_name);
        if (stat(out, &sb) != 0)
            out[0] = 0;
        return;
    }
    if (!strchr(v, '=')) {
        if (m->index == 0)
            snprintf(out, cap, "%.1000s", v);
        return;
    }
    size_t idn = strlen(m->id);
    for (const char *p = v; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > idn && !strncmp(p, m->id, idn) && p[idn] == '=')
            snprintf(out, cap, "%.*s", (int)(n - idn - 1), p + idn + 1);
        p += n + (end != NULL);
    }
}

static mt_status load_shortlist(srv_server *srv, srv_model *m, mt_err *err)
{
    option_file(srv->opts.shortlist, "lex.s2t.bin", m, m->shortlist_file, sizeof m->shortlist_file);
    if (!m->shortlist_file[0])
        return MT_OK;
    mt_status st = mt_shortlist_load(m->model, m->shortlist_file, NULL, &m->shortlist, err);
    if (st != MT_OK)
        return st;
    const mt_shortlist_info *in = mt_shortlist_get_info(m->shortlist);
    fprintf(stderr, "mtserve: model %s: shortlist %s (%s, %ld entries, %d frequent)\n", m->id, m->shortlist_file,
            in->format, in->entries, in->frequent);
    return MT_OK;
}

/* A multilingual model's target-language map (--lang-vocab; default: its
 * lang_vocab.txt, when there).  A file named for another kind of model is an
 * error; auto skips them. */
static mt_status load_lang_vocab(srv_server *srv, srv_model *m, mt_err *err)
{
    const char *v = srv->opts.lang_vocab;
    if (strcmp(m->info->architecture, "m2m_100") != 0 && !strcmp(v, "auto"))
        return MT_OK;
    option_file(v, "lang_vocab.txt", m, m->lang_vocab_file, sizeof m->lang_vocab_file);
    if (!m->lang_vocab_file[0])
        return MT_OK;
    mt_status st = mt_lang_vocab_load(m->model, m->lang_vocab_file, &m->lang_vocab, err);
    if (st != MT_OK)
        return st;
    const mt_lang_vocab_info *in = mt_lang_vocab_get_info(m->lang_vocab);
    fprintf(stderr, "mtserve: model %s: target-language vocabulary map %s (%d languages, %d..%d ids each)\n", m->id,
            m->lang_vocab_file, in->languages, in->min_ids, in->max_ids);
    return MT_OK;
}

/* The shortlist and the language map: what they change is cached apart. */
static mt_status load_restrictions(srv_server *srv, srv_model *m, mt_err *err)
{
    mt_status st = load_shortlist(srv, m, err);
    if (st == MT_OK)
        st = load_lang_vocab(srv, m, err);
    if (st == MT_OK && (m->shortlist || m->lang_vocab))
        snprintf(m->cache_ns_sl, sizeof m->cache_ns_sl, "%.70s%s%s", m->cache_ns, m->shortlist ? "+shortlist" : "",
                 m->lang_vocab ? "+langvocab" : "");
    return st;
}

/* The detection language model of each source language of m that has one beside
 * it, <dir>/<source>.charlm (server.h).  A file that is there must load. */
static mt_status load_charlms(srv_model *m, mt_err *err)
{
    const char *src;
    for (int k = 0; (src = srv_model_source_at(m, k)) && m->n_charlm < SRV_MODEL_MAX_CHARLM; k++) {
        char path[1200];
        struct stat sb;
        int dup = 0;
        for (int j = 0; j < m->n_charlm; j++)
            dup |= srv_lang_same(srv_charlm_lang(m->charlm[j]), src);
        snprintf(path, sizeof path, "%.1000s/%.32s.charlm", m->dir, src);
        if (dup || stat(path, &sb) != 0)
            continue;
        srv_charlm *lm;
        mt_status st = srv_charlm_load(path, &lm, err);
        if (st != MT_OK)
            return st;
        m->charlm[m->n_charlm++] = lm;
        if (!srv_lang_same(srv_charlm_lang(lm), src))
            return mt_err_set(err, MT_ERR_FORMAT, "%s: a language model of '%s', not of the model's source '%s'",
                              path, srv_charlm_lang(lm), src);
        fprintf(stderr, "mtserve: model %s: detection language model %s (%s, order %d, %.0f KB)\n", m->id, path,
                srv_charlm_lang(lm), srv_charlm_order(lm), srv_charlm_bytes(lm) / 1e3);
    }
    return MT_OK;
}

void srv_model_free_charlms(srv_model *m)
{
    for (int i = 0; i < m->n_charlm; i++)
        srv_charlm_free(m->charlm[i]);
    memset(m->charlm, 0, sizeof m->charlm);
    m->n_charlm = 0;
}

/* The copy guard's gate, <dir>/copy_gate.txt, when the file is there (a
 * Marian model's: the guard is for one-vocabulary encoder-decoders). */
static mt_status load_copy_gate(srv_model *m, mt_err *err)
{
    char path[1200];
    struct stat sb;
    snprintf(path, sizeof path, "%.1000s/copy_gate.txt", m->dir);
    if (m->llm || m->multi || stat(path, &sb) != 0)
        return MT_OK;
    mt_status st = srv_copy_gate_load(path, &m->copy_gate, err);
    if (st == MT_OK)
        fprintf(stderr, "mtserve: model %s: copy guard gate %s (%ld words)\n", m->id, path,
                srv_copy_gate_size(m->copy_gate));
    return st;
}

/* m->model set (a card, or the loaded model): what is read from it once. */
static mt_status describe(srv_server *srv, srv_model *m, mt_err *err)
{
    m->info = mt_model_get_info(m->model);
    m->tok = mt_model_tokenizer(m->model);
    m->sparams = session_params(srv, m->model);
    mt_status st;
    if (strcmp(m->info->architecture, "marian") != 0 && strcmp(m->info->architecture, "m2m_100") != 0)
        st = describe_llm(m, err);
    else if (srv_model_find_targets(m) != 0)
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory listing the target languages of %s", m->id);
    else
        st = load_restrictions(srv, m, err);
    if (st == MT_OK)
        st = load_charlms(m, err);
    return st == MT_OK ? load_copy_gate(m, err) : st;
}

/* Decoder rows of a scheduler's session: --max-batch, else 64. */
static int sched_rows(const srv_server *srv)
{
    return srv->opts.max_batch > 0 ? srv->opts.max_batch : 64;
}

/* The model's scheduler: a session of sched_rows rows, otherwise shaped like its others. */
static mt_status start_scheduler(srv_server *srv, srv_model *m, mt_err *err)
{
    mt_session_params p = m->sparams;
    p.max_batch = sched_rows(srv);
    if (p.max_batch < m->sparams.max_batch)
        p.max_batch = m->sparams.max_batch;
    srv_sched_params sp = srv_sched_default_params();
    /* as many requests decode at once as --threads says (default: one per
     * decoder row), and --queue more may wait */
    sp.max_jobs = srv->opts.queue + (srv->opts.threads > 0 ? srv->opts.threads : p.max_batch);
    sp.queue_timeout_s = srv->opts.queue_timeout_ms / 1e3;
    sp.nice = srv->opts.decode_nice;
    sp.kv_budget = mt_model_step_weight_bytes(m->weights) / 100 * (size_t)srv->opts.kv_budget;
    m->sched = srv_sched_new(m->weights, &p, &sp, err);
    if (!m->sched)
        return err->status != MT_OK ? err->status : MT_ERR_INTERNAL;
    m->direct = srv_sched_decoder(m->sched);
    if (!srv->residency)                /* on demand the log line is the residency's */
        fprintf(stderr, "mtserve: model %s: continuous batching over %d decoder rows, K/V budget %.1f MB a step\n",
                m->id, p.max_batch, sp.kv_budget / 1e6);
    return MT_OK;
}

mt_status srv_model_load_weights(srv_server *srv, srv_model *m, mt_err *err)
{
    double t0 = srv_now();
    mt_status st = MT_OK;
    if (!m->weights) {
        mt_model_params mp = mt_model_default_params();
        mp.n_threads = srv->blas_threads;
        mp.compute_nice = srv->opts.decode_nice;
        mp.weights = (mt_weights)srv->opts.weights;
        if ((st = mt_model_load(m->dir, &mp, &m->weights, err)) != MT_OK)
            return st;
    }
    m->sessions = srv_sessions_new(m->weights, &m->sparams, srv->workers);
    if (!m->sessions)
        return mt_err_set(err, MT_ERR_NOMEM, "cannot allocate the session pool of %s", m->id);
    /* batching off: each request decodes on a worker with a pooled session */
    m->unbatched = (srv_session_decoder){ .sessions = m->sessions, .workers = srv->workers_pool };
    m->direct = srv_session_decoder_of(&m->unbatched);
    /* one session now: fail here rather than on the first request (and its bytes are known) */
    mt_session *s;
    if ((st = srv_sessions_get(m->sessions, &s, err)) != MT_OK)
        return st;
    srv_sessions_put(m->sessions, s);
    if (srv->opts.batching && (st = start_scheduler(srv, m, err)) != MT_OK)
        return st;
    m->bytes = mt_model_get_info(m->weights)->weight_bytes + srv_sessions_bytes(m->sessions);
    m->load_ms = (srv_now() - t0) * 1e3;
    srv_metrics_model_loaded(m->index);
    return MT_OK;
}

void srv_model_unload_weights(srv_model *m)
{
    srv_sched_free(m->sched);           /* first: it decodes with the sessions' model */
    m->sched = NULL;
    srv_sessions_free(m->sessions);
    m->sessions = NULL;
    if (m->weights != m->model)
        mt_model_free(m->weights);
    m->weights = NULL;
    m->direct = (srv_decoder){ 0 };
    m->bytes = 0;
}

mt_status srv_model_load(srv_server *srv, int i, mt_err *err)
{
    srv_model *m = &srv->models[i];
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = srv->blas_threads;
    mp.compute_nice = srv->opts.decode_nice;
    mp.weights = (mt_weights)srv->opts.weights;
    double t0 = srv_now();
    mt_status st = mt_model_load(m->dir, &mp, &m->model, err);
    if (st != MT_OK || (st = describe(srv, m, err)) != MT_OK)
        return st;
    m->weights = m->model;              /* loaded at start: the model is its own card */
    if ((st = srv_model_load_weights(srv, m, err)) != MT_OK)
        return st;
    m->decoder = m->direct;
    m->load_ms = (srv_now() - t0) * 1e3;
    return MT_OK;
}

/* ---- on demand: the available models, described by their cards ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int srv_model_read_card(srv_server *srv, srv_model *m, const char *id, const char *dir, int index, mt_err *err)
{
    snprintf(m->id, sizeof m->id, "%s", id);
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    m->index = index;
    snprintf(m->cache_ns, sizeof m->cache_ns, "%.63s#%d", id, index);
    if (mt_model_load_card(dir, &m->model, err) != MT_OK || describe(srv, m, err) != MT_OK) {
        srv_model_free_targets(m);
        srv_model_free_charlms(m);
        srv_copy_gate_free(m->copy_gate);
        m->copy_gate = NULL;
        mt_shortlist_free(m->shortlist);
        m->shortlist = NULL;
        mt_lang_vocab_free(m->lang_vocab);
        m->lang_vocab = NULL;
        mt_model_free(m->model);
        memset(m, 0, sizeof *m);
        return -1;
    }
    return 0;
}

/* Adds id=dir with its card (at start: nobody reads the models yet); 0, or -1 with err. */
static int add_card(srv_server *srv, const char *id, const char *dir, mt_err *err)
{
    if (srv_model_read_card(srv, &srv->models[srv->n_models], id, dir, srv->n_models, err) != 0)
        return -1;
    srv->n_models++;
    return 0;
}

/* Every subdirectory of --model-dir that holds a model, sorted by name. */
static int add_dir(srv_server *srv, const char *root, char *err, size_t err_len)
{
    DIR *d = opendir(root);
    if (!d) {
        snprintf(err, err_len, "--model-dir %s: cannot open it", root);
        return -1;
    }
    char *names[1024];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < (int)(sizeof names / sizeof names[0]))
        if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name)))
            n++;
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        char dir[1024], arg[1200], why[256];
        struct stat sb;
        srv_model_spec spec;
        mt_err merr = { 0 };
        int len = snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
        snprintf(arg, sizeof arg, "%s=%s", names[i], dir);
        if (len >= (int)sizeof dir || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            continue;                   /* files beside the models */
        if (srv_find_model(srv, names[i])) {
            fprintf(stderr, "mtserve: --model-dir: %s skipped: a model is already named '%s'\n", dir, names[i]);
        } else if (srv_model_spec_parse(arg, &spec, why, sizeof why) != 0) {
            fprintf(stderr, "mtserve: --model-dir: %s skipped: %s\n", dir, why);
        } else if (srv->n_models >= SRV_MAX_MODELS) {
            fprintf(stderr, "mtserve: --model-dir: %s skipped: at most %d models\n", dir, SRV_MAX_MODELS);
        } else if (add_card(srv, spec.id, spec.dir, &merr) != 0) {
            fprintf(stderr, "mtserve: --model-dir: %s skipped: not a model (%s)\n", dir, merr.msg);
        }
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    return 0;
}

int srv_models_discover(srv_server *srv, char *err, size_t err_len)
{
    srv->n_models = 0;
    for (int i = 0; i < srv->opts.n_models; i++) {
        mt_err merr = { 0 };
        if (add_card(srv, srv->opts.models[i].id, srv->opts.models[i].dir, &merr) != 0) {
            snprintf(err, err_len, "cannot read model '%s': %s", srv->opts.models[i].dir, merr.msg);
            return -1;
        }
    }
    if (srv->opts.model_dir[0] && add_dir(srv, srv->opts.model_dir, err, err_len) != 0)
        return -1;
    if (srv->n_models == 0) {
        snprintf(err, err_len, "no model: --model-dir %s holds none", srv->opts.model_dir);
        return -1;
    }
    return 0;
}

void srv_models_free(srv_server *srv)
{
    for (int i = 0; i < SRV_MAX_MODELS; i++) {
        srv_model *m = &srv->models[i];
        srv_model_unload_weights(m);
        srv_model_free_targets(m);
        srv_model_free_charlms(m);
        srv_copy_gate_free(m->copy_gate);
        m->copy_gate = NULL;
        mt_shortlist_free(m->shortlist);
        m->shortlist = NULL;
        mt_lang_vocab_free(m->lang_vocab);
        m->lang_vocab = NULL;
        mt_model_free(m->model);
        m->model = NULL;
    }
}
