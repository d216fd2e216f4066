/* glossaries: the server's files and the request's terms, per leg (glossaries.h). */
#include "glossaries.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/body.h"
#include "languages.h"

static srv_glossary_limits limits(const srv_server *srv)
{
    return (srv_glossary_limits){ .max_entries = srv->opts.max_glossary_entries,
                                  .max_term_bytes = srv->opts.max_term_bytes };
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = 0;
        *len = (size_t)n;
    } else {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    return buf;
}

int srv_glossaries_read(const srv_server *srv, srv_glossary *out[SRV_MAX_GLOSSARIES], char *err, size_t err_len)
{
    memset(out, 0, SRV_MAX_GLOSSARIES * sizeof *out);
    srv_glossary_limits lim = limits(srv);
    for (int i = 0; i < srv->opts.n_glossaries; i++) {
        const srv_glossary_spec *g = &srv->opts.glossaries[i];
        size_t len = 0;
        char *data = read_file(g->path, &len);
        mt_err e = { 0 };
        if (!data) {
            snprintf(err, err_len, "--glossary %s-%s: cannot read '%s'", g->source, g->target, g->path);
            return -1;
        }
        out[i] = srv_glossary_new(&lim);
        mt_status st = out[i] ? srv_glossary_add_tsv(out[i], data, len, &e)
                              : mt_err_set(&e, MT_ERR_NOMEM, "out of memory");
        free(data);
        if (st != MT_OK) {
            snprintf(err, err_len, "--glossary %s-%s: %s: %s", g->source, g->target, g->path, e.msg);
            return -1;
        }
    }
    return 0;
}

int srv_glossaries_load(srv_server *srv, char *err, size_t err_len)
{
    return srv_glossaries_read(srv, srv->glossaries, err, err_len);
}

void srv_glossaries_free(srv_server *srv)
{
    for (int i = 0; i < SRV_MAX_GLOSSARIES; i++) {
        srv_glossary_free(srv->glossaries[i]);
        srv->glossaries[i] = NULL;
    }
}

/* The object itself, or a form's string holding it (NULL with *owned when parsed). */
static json_t *glossary_object(json_t *v, json_t **owned, srv_response *resp)
{
    *owned = NULL;
    if (json_is_string(v)) {
        json_error_t je;
        if (!(*owned = json_loadb(json_string_value(v), json_string_length(v), 0, &je))) {
            srv_fail(resp, SRV_E_INVALID_FIELD, "field 'glossary' must be an object of \"source term\": "
                     "\"target term\" (a string holding one is not valid JSON: %s)", je.text);
            return NULL;
        }
        v = *owned;
    }
    if (!json_is_object(v)) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "field 'glossary' must be an object of \"source term\": \"target term\"");
        json_decref(*owned);
        *owned = NULL;
        return NULL;
    }
    return v;
}

int srv_request_glossary(srv_request *req, srv_response *resp, srv_glossary **out)
{
    *out = NULL;
    json_t *v = json_object_get(req->json, "glossary"), *owned, *obj;
    if (!v || json_is_null(v))
        return 0;
    if (!(obj = glossary_object(v, &owned, resp)))
        return -1;
    srv_glossary_limits lim = limits(req->srv);
    if (json_object_size(obj) > (size_t)lim.max_entries) {
        json_decref(owned);
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'glossary' has %zu entries; the limit is %d",
                        json_object_size(obj), lim.max_entries);
    }
    srv_glossary *g = json_object_size(obj) ? srv_glossary_new(&lim) : NULL;
    if (json_object_size(obj) && !g) {
        json_decref(owned);
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    }
    const char *key;
    size_t klen;
    json_t *t;
    int rc = 0;
    json_object_keylen_foreach(obj, key, klen, t) {
        mt_err e = { 0 };
        if (!json_is_string(t)) {
            rc = srv_fail(resp, SRV_E_INVALID_FIELD, "field 'glossary': the target of \"%.64s\" must be a string",
                          key);
            break;
        }
        if (srv_glossary_add(g, key, klen, json_string_value(t), json_string_length(t), &e) != MT_OK) {
            rc = srv_fail(resp, e.status == MT_ERR_NOMEM ? SRV_E_INTERNAL : SRV_E_INVALID_FIELD,
                          "field 'glossary': %s", e.msg);
            break;
        }
    }
    json_decref(owned);
    if (rc < 0) {
        srv_glossary_free(g);
        return -1;
    }
    *out = g;
    return 0;
}

/* Leg i's languages: its model's source, and the target it produces. */
static void leg_langs(const srv_path *p, int i, const char **src, const char **tgt)
{
    const srv_model *m = p->model[i];
    *src = m->info->source_lang;
    *tgt = m->info->target_lang;
    for (int k = 0; k < m->n_targets; k++)
        if (m->target_ids[k] == p->lang_id[i])
            *tgt = m->targets[k];
}

static const srv_glossary *file_for(const srv_server *srv, const char *src, const char *tgt)
{
    for (int i = 0; i < srv->opts.n_glossaries; i++)
        if (src[0] && tgt[0] && srv_lang_same(srv->opts.glossaries[i].source, src) &&
            srv_lang_same(srv->opts.glossaries[i].target, tgt))
            return srv->glossaries[i];
    return NULL;
}

/* The request's target terms, each to itself: what leg 1 of a pivot keeps. */
static mt_status identity(const srv_glossary *request, srv_glossary **out, mt_err *err)
{
    int n = srv_glossary_size(request);
    srv_glossary_limits lim = { .max_entries = n > 0 ? n : 1, .max_term_bytes = 1 << 16 };
    if (!(*out = srv_glossary_new(&lim)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const char *t = srv_glossary_target(request, i);
        mt_status st = srv_glossary_add(*out, t, strlen(t), t, strlen(t), err);
        if (st != MT_OK)
            return st;
    }
    return MT_OK;
}

int srv_leg_glossaries(const srv_server *srv, const srv_path *path, const srv_glossary *request,
                       srv_glossary *out[2], srv_response *resp)
{
    out[0] = out[1] = NULL;
    mt_err err = { 0 };
    mt_status st = MT_OK;
    /* the files' terms are merged into each leg's own copy: read under the lock SIGHUP swaps them with */
    pthread_rwlock_rdlock((pthread_rwlock_t *)&srv->reload_lock);
    for (int i = 0; i < path->n_legs && st == MT_OK; i++) {
        const char *src, *tgt;
        leg_langs(path, i, &src, &tgt);
        const srv_glossary *file = file_for(srv, src, tgt), *req = request;
        srv_glossary *carried = NULL;
        if (i == 1 && request && (st = identity(request, &carried, &err)) != MT_OK)
            break;
        if (i == 1)
            req = carried;
        if ((file && srv_glossary_size(file)) || srv_glossary_size(req))
            st = srv_glossary_merge(file, req, NULL, &out[i], &err);
        srv_glossary_free(carried);
    }
    pthread_rwlock_unlock((pthread_rwlock_t *)&srv->reload_lock);
    if (st == MT_OK)
        return 0;
    srv_glossary_free(out[0]);
    srv_glossary_free(out[1]);
    out[0] = out[1] = NULL;
    return srv_fail_mt(resp, &err);
}
