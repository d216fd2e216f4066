/* DeepL's glossaries: made, listed, read and deleted by its clients, then
 * named by id in POST /v2/translate (glossary_id), where they are the
 * request's terms (the constraints of translate/glossary.h, as "glossary" in
 * our API).  Kept in memory (service/glossary_store.h), or with --redis in
 * Redis for every replica (a change while it does not answer: 503 +
 * Retry-After), each seen only by the key that made it.  What DeepL does is
 * from its API reference ("Manage glossaries", v2 and v3).
 *
 * v2, one language pair a glossary:
 *   POST   /v2/glossaries  name, source_lang, target_lang, entries, entries_format (tsv | csv)
 *                          -> 201 {glossary_id, name, ready, source_lang, target_lang,
 *                                  creation_time, entry_count}
 *   GET    /v2/glossaries                 -> {"glossaries": [...]}
 *   GET    /v2/glossaries/ID              -> the glossary
 *   GET    /v2/glossaries/ID/entries      -> its entries, text/tab-separated-values
 *   DELETE /v2/glossaries/ID              -> 204
 *   GET    /v2/glossary-language-pairs    -> {"supported_languages": [{source_lang, target_lang}]}
 * v3, several pairs ("dictionaries") a glossary:
 *   POST   /v3/glossaries  name, dictionaries (JSON list, or a form's
 *                          dictionaries[i].source_lang/.target_lang/.entries/.entries_format)
 *                          -> 201 {glossary_id, name, dictionaries: [{source_lang, target_lang,
 *                                  entry_count}], creation_time}
 *   GET    /v3/glossaries, GET /v3/glossaries/ID
 *   GET    /v3/glossaries/ID/entries?source_lang&target_lang
 *                          -> {"dictionaries": [{source_lang, target_lang, entries, entries_format: "tsv"}]}
 *   PATCH  /v3/glossaries/ID   name and/or dictionaries: each given pair's entries merged in
 *   PUT    /v3/glossaries/ID/dictionaries   one pair's entries replaced (or added)
 *   DELETE /v3/glossaries/ID, DELETE /v3/glossaries/ID/dictionaries?source_lang&target_lang
 *
 * Entries are refused, with the line named, as DeepL refuses them: an empty
 * list, a duplicate source term, an empty or over-long term, a control
 * character in one.  One difference, the matcher's case rule: a source term
 * without a capital matches whatever the case of the text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "handlers.h"
#include "http/body.h"
#include "service/glossary_store.h"
#include "service/languages.h"
#include "service/pairs.h"
#include "service/server.h"
#include "util/strbuf.h"

/* ---- languages ---------------------------------------------------------------------- */

/* A glossary's language: a code the models serve (any case), as they spell it, or NULL. */
static const char *glossary_lang(const srv_server *srv, const char *code)
{
    const char *served = code ? srv_served_code(srv, code) : NULL;
    return served && served != code ? served : NULL;
}

/* A pair checked: both languages served and a path between them.  0, or -1 with resp failed. */
static int pair(srv_request *req, srv_response *resp, const char *src, const char *tgt, const char **s,
                const char **t)
{
    srv_path path;
    *s = glossary_lang(req->srv, src);
    *t = glossary_lang(req->srv, tgt);
    if (!src || !*src || !tgt || !*tgt)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameters 'source_lang' and 'target_lang' are required");
    if (!*s || !*t || srv_lang_same(*s, *t) || srv_path_for_pair(req->srv, *s, *t, &path, resp))
        return srv_fail(resp, SRV_E_UNSUPPORTED_LANGUAGE, "Unsupported glossary language pair %s -> %s", src, tgt);
    return 0;
}

/* ---- entries ------------------------------------------------------------------------ */

/* The terms of entries in format ("tsv" default, "csv") for source -> target:
 * 0, or -1 with resp failed naming the line. */
static int parse_entries(srv_request *req, srv_response *resp, const char *entries, const char *format,
                         const char *source, const char *target, srv_glossary **out)
{
    srv_glossary_limits lim = { .max_entries = req->srv->opts.max_glossary_entries,
                                .max_term_bytes = req->srv->opts.max_term_bytes, .unique = 1 };
    mt_err err = { 0 };
    *out = NULL;
    if (!entries)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'entries' not specified.");
    if (format && strcmp(format, "tsv") && strcmp(format, "csv"))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Value for 'entries_format' not supported (tsv, csv).");
    srv_glossary *g = srv_glossary_new(&lim);
    if (!g)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    size_t n = strlen(entries);
    mt_status st = format && !strcmp(format, "csv") ? srv_glossary_add_csv(g, entries, n, source, target, &err)
                                                    : srv_glossary_add_tsv(g, entries, n, &err);
    if (st == MT_OK && srv_glossary_size(g) == 0)
        st = mt_err_set(&err, MT_ERR_INPUT, "no entry");
    if (st != MT_OK) {
        srv_glossary_free(g);
        return srv_fail(resp, st == MT_ERR_NOMEM ? SRV_E_INTERNAL : SRV_E_INVALID_FIELD, "Invalid glossary entries: %s",
                        err.msg);
    }
    *out = g;
    return 0;
}

/* The entries as TSV, one "source<TAB>target" line each; NULL when out of memory. */
static char *entries_tsv(const srv_glossary *g)
{
    mt_sbuf sb = { 0 };
    int bad = mt_sb_reserve(&sb, 1);
    for (int i = 0; i < srv_glossary_size(g); i++) {
        const char *src = srv_glossary_source(g, i), *tgt = srv_glossary_target(g, i);
        bad |= (i && mt_sb_add(&sb, "\n", 1)) || mt_sb_add(&sb, src, strlen(src)) || mt_sb_add(&sb, "\t", 1) ||
               mt_sb_add(&sb, tgt, strlen(tgt));
    }
    if (bad) {
        free(sb.p);
        return NULL;
    }
    sb.p[sb.n] = 0;
    return sb.p;
}

/* ---- replies ---------------------------------------------------------------------- */

static json_t *time_json(time_t t)
{
    char buf[40];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
    return json_string(buf);
}

/* A v2 glossary: its first (only) pair. */
static json_t *v2_json(const srv_gstored *g)
{
    const srv_gdict *d = &g->dicts[0];
    return json_pack("{s:s,s:s,s:b,s:s,s:s,s:o,s:i}", "glossary_id", g->id, "name", g->name, "ready", 1,
                     "source_lang", d->source, "target_lang", d->target, "creation_time", time_json(g->created),
                     "entry_count", srv_glossary_size(d->terms));
}

static json_t *v3_json(const srv_gstored *g)
{
    json_t *dicts = json_array();
    for (int i = 0; i < g->n_dicts; i++)
        json_array_append_new(dicts, json_pack("{s:s,s:s,s:i}", "source_lang", g->dicts[i].source, "target_lang",
                                               g->dicts[i].target, "entry_count",
                                               srv_glossary_size(g->dicts[i].terms)));
    return json_pack("{s:s,s:s,s:o,s:o}", "glossary_id", g->id, "name", g->name, "dictionaries", dicts,
                     "creation_time", time_json(g->created));
}

/* ---- paths -------------------------------------------------------------------------- */

/* /vN/glossaries/ID[/rest]: the id into id[37], *rest the part after it ("" when none).
 * 0, or -1 with resp failed (404). */
static int path_id(const srv_request *req, srv_response *resp, char id[37], const char **rest)
{
    const char *p = req->path + strlen("/v2/glossaries/");
    size_t n = strcspn(p, "/");
    if (n == 0 || n > 36)
        return srv_fail(resp, SRV_E_NOT_FOUND, "Glossary not found");
    memcpy(id, p, n);
    id[n] = 0;
    *rest = p + n;
    return 0;
}

/* The glossary of the path, with a reference; NULL with resp failed (404). */
static srv_gstored *path_glossary(srv_request *req, srv_response *resp, const char **rest)
{
    char id[37];
    if (path_id(req, resp, id, rest))
        return NULL;
    srv_gstored *g = srv_gstore_get(req->srv->gstore, id, req->key);
    if (!g)
        srv_fail(resp, SRV_E_NOT_FOUND, "Glossary not found");
    return g;
}

static const char *field(const srv_request *req, const char *name)
{
    return json_string_value(json_object_get(req->json, name));
}

/* The name: required, at most SRV_GSTORE_NAME_MAX - 1 bytes. */
static int glossary_name(srv_request *req, srv_response *resp, const char **out)
{
    *out = field(req, "name");
    if (!*out || !**out)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'name' not specified.");
    if (strlen(*out) >= SRV_GSTORE_NAME_MAX)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'name' is longer than %d bytes", SRV_GSTORE_NAME_MAX - 1);
    return 0;
}

/* --redis and Redis does not answer: 503 + Retry-After (nothing was changed). */
static int redis_down(srv_response *resp, const char *why)
{
    resp->retry_after = 5;
    return srv_fail(resp, SRV_E_QUEUE_FULL, "%s", why);
}

/* Stores g (freed on failure) and answers 201 with its JSON (v3 or v2). */
static void store_and_reply(srv_request *req, srv_response *resp, srv_gstored *g, int v3)
{
    char err[320];
    int rc = srv_gstore_add(req->srv->gstore, g, err, sizeof err);
    if (rc == -2)
        redis_down(resp, err);
    if (rc) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "%s", err);     /* no-op after redis_down */
        return;
    }
    srv_reply_json(resp, 201, v3 ? v3_json(g) : v2_json(g));    /* the store's reference: g lives on */
}

/* ---- v2 ------------------------------------------------------------------------------- */

static void v2_create(srv_request *req, srv_response *resp)
{
    const char *name, *s, *t;
    srv_glossary *terms;
    if (glossary_name(req, resp, &name) ||
        pair(req, resp, field(req, "source_lang"), field(req, "target_lang"), &s, &t) ||
        parse_entries(req, resp, field(req, "entries"), field(req, "entries_format"), s, t, &terms))
        return;
    srv_gstored *g = srv_gstored_new(name, req->key);
    if (!g || srv_gstored_add_dict(g, s, t, terms)) {
        srv_glossary_free(g ? NULL : terms);
        srv_gstored_free(g);
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    store_and_reply(req, resp, g, 0);
}

/* Owner's glossaries, v2 or v3 JSON each (v2 lists the single-pair ones). */
static void list(srv_request *req, srv_response *resp, int v3)
{
    srv_gstored **all;
    int n = srv_gstore_list(req->srv->gstore, req->key, &all);
    if (n < 0) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    json_t *out = json_array();
    for (int i = 0; i < n; i++) {
        if (v3 || all[i]->n_dicts == 1)
            json_array_append_new(out, v3 ? v3_json(all[i]) : v2_json(all[i]));
        srv_gstore_release(req->srv->gstore, all[i]);
    }
    free(all);
    srv_reply_json(resp, 200, json_pack("{s:o}", "glossaries", out));
}

/* GET /v2/glossaries/ID[/entries] */
static void v2_get(srv_request *req, srv_response *resp)
{
    const char *rest;
    srv_gstored *g = path_glossary(req, resp, &rest);
    if (!g)
        return;
    if (g->n_dicts != 1) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "This glossary has %d language pairs: read it with /v3/glossaries",
                 g->n_dicts);
    } else if (!*rest) {
        srv_reply_json(resp, 200, v2_json(g));
    } else if (!strcmp(rest, "/entries")) {
        char *tsv = entries_tsv(g->dicts[0].terms);
        if (!tsv) {
            srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        } else {
            resp->status = 200;
            resp->text = tsv;
            resp->text_len = strlen(tsv);
            resp->content_type = "text/tab-separated-values; charset=utf-8";
        }
    } else {
        srv_fail(resp, SRV_E_NOT_FOUND, "no route %s %s", req->method, req->path);
    }
    srv_gstore_release(req->srv->gstore, g);
}

/* DELETE /vN/glossaries/ID -> 204 */
static void delete_glossary(srv_request *req, srv_response *resp)
{
    char id[37];
    const char *rest;
    int rc;
    if (path_id(req, resp, id, &rest))
        return;
    if (*rest)
        srv_fail(resp, SRV_E_NOT_FOUND, "no route %s %s", req->method, req->path);
    else if ((rc = srv_gstore_remove(req->srv->gstore, id, req->key)) == -2)
        redis_down(resp, "glossaries are shared through Redis, which does not answer; retry later");
    else if (rc)
        srv_fail(resp, SRV_E_NOT_FOUND, "Glossary not found");
    else
        resp->status = 204;
}

void srv_handle_deepl_glossaries(srv_request *req, srv_response *resp)
{
    int root = !strcmp(req->path, "/v2/glossaries");
    if (root && !strcmp(req->method, "POST"))
        v2_create(req, resp);
    else if (root)
        list(req, resp, 0);
    else if (!strcmp(req->method, "DELETE"))
        delete_glossary(req, resp);
    else
        v2_get(req, resp);
}

/* GET /v2/glossary-language-pairs: every pair of served languages with a path. */
void srv_handle_deepl_glossary_pairs(srv_request *req, srv_response *resp)
{
    srv_server *srv = req->srv;
    json_t *pairs = json_array();
    for (int i = 0; i < srv->n_models; i++) {
        const char *s;
        for (int k = 0; srv_model_listed(&srv->models[i]) && (s = srv_model_source_at(&srv->models[i], k)); k++) {
            for (int j = 0; j < srv->n_models; j++) {
                const srv_model *m = &srv->models[j];
                if (!srv_model_listed(m))
                    continue;
                const char *t = m->n_targets ? NULL : m->info->target_lang;
                for (int x = 0; x < (m->n_targets ? m->n_targets : 1); x++) {
                    srv_path path;
                    srv_response scratch = { 0 };
                    const char *tt = t ? t : m->targets[x];
                    json_t *e = json_pack("{s:s,s:s}", "source_lang", s, "target_lang", tt);
                    int seen = 0;
                    size_t q;
                    json_t *o;
                    json_array_foreach(pairs, q, o)
                        seen |= json_equal(o, e);
                    if (!seen && tt[0] && strcmp(s, tt) && srv_path_for_pair(srv, s, tt, &path, &scratch) == 0)
                        json_array_append(pairs, e);
                    json_decref(e);
                }
            }
        }
    }
    srv_reply_json(resp, 200, json_pack("{s:o}", "supported_languages", pairs));
}

/* ---- v3 ------------------------------------------------------------------------------- */

/* Dictionary i of the request: from a JSON list "dictionaries", or a form's
 * "dictionaries[i].field".  0 when there is no entry i. */
static int dict_fields(const srv_request *req, int i, const char *f[4])
{
    static const char *const names[4] = { "source_lang", "target_lang", "entries", "entries_format" };
    json_t *list = json_object_get(req->json, "dictionaries");
    int any = 0;
    for (int k = 0; k < 4; k++) {
        char key[64];
        snprintf(key, sizeof key, "dictionaries[%d].%s", i, names[k]);
        json_t *d = json_is_array(list) ? json_array_get(list, (size_t)i) : NULL;
        f[k] = json_string_value(d ? json_object_get(d, names[k]) : json_object_get(req->json, key));
        any |= f[k] != NULL || d != NULL;
    }
    return any;
}

/* Adds the request's dictionaries to g: 0, or -1 with resp failed.  need: at least one. */
static int add_dicts(srv_request *req, srv_response *resp, srv_gstored *g, int need)
{
    const char *f[4];
    int i = 0;
    for (; dict_fields(req, i, f); i++) {
        const char *s, *t;
        srv_glossary *terms;
        if (pair(req, resp, f[0], f[1], &s, &t) || parse_entries(req, resp, f[2], f[3], s, t, &terms))
            return -1;
        if (srv_gstored_add_dict(g, s, t, terms))
            return srv_fail(resp, SRV_E_INVALID_FIELD, "more than %d dictionaries", SRV_GSTORE_MAX_DICTS);
    }
    if (need && i == 0)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'dictionaries' not specified.");
    return 0;
}

static void v3_create(srv_request *req, srv_response *resp)
{
    const char *name;
    if (glossary_name(req, resp, &name))
        return;
    srv_gstored *g = srv_gstored_new(name, req->key);
    if (!g) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    if (add_dicts(req, resp, g, 1)) {
        srv_gstored_free(g);
        return;
    }
    store_and_reply(req, resp, g, 1);
}

/* The query's (or body's) source_lang and target_lang, checked. */
static int query_pair(srv_request *req, srv_response *resp, const char **s, const char **t)
{
    return pair(req, resp, field(req, "source_lang"), field(req, "target_lang"), s, t);
}

static void v3_entries(srv_request *req, srv_response *resp, const srv_gstored *g)
{
    const char *s, *t;
    if (query_pair(req, resp, &s, &t))
        return;
    const srv_gdict *d = srv_gstored_dict(g, s, t);
    char *tsv = d ? entries_tsv(d->terms) : NULL;
    if (!d) {
        srv_fail(resp, SRV_E_NOT_FOUND, "The glossary has no dictionary %s -> %s", s, t);
        return;
    }
    if (!tsv) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    srv_reply_json(resp, 200, json_pack("{s:[{s:s,s:s,s:s,s:s}]}", "dictionaries", "source_lang", s, "target_lang", t,
                                        "entries", tsv, "entries_format", "tsv"));
    free(tsv);
}

/* PATCH: a new name and/or dictionaries whose entries are merged in (the new win). */
static int v3_patch(srv_request *req, srv_response *resp, srv_gstored *c)
{
    const char *name = field(req, "name");
    if (name && glossary_name(req, resp, &name))
        return -1;
    if (name)
        snprintf(c->name, sizeof c->name, "%s", name);
    srv_gstored *add = srv_gstored_new("", req->key);
    if (!add)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    int rc = add_dicts(req, resp, add, !name);
    for (int i = 0; rc == 0 && i < add->n_dicts; i++) {
        const srv_gdict *old = srv_gstored_dict(c, add->dicts[i].source, add->dicts[i].target);
        srv_glossary *merged = NULL;
        mt_err err;
        if (srv_glossary_merge(old ? old->terms : NULL, add->dicts[i].terms, NULL, &merged, &err) != MT_OK ||
            srv_gstored_add_dict(c, add->dicts[i].source, add->dicts[i].target, merged))
            rc = srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    }
    srv_gstored_free(add);
    return rc;
}

/* DELETE .../dictionaries?source_lang&target_lang */
static int v3_delete_dict(srv_request *req, srv_response *resp, srv_gstored *c)
{
    const char *s, *t;
    if (query_pair(req, resp, &s, &t))
        return -1;
    if (srv_gstored_remove_dict(c, s, t))
        return srv_fail(resp, SRV_E_NOT_FOUND, "The glossary has no dictionary %s -> %s", s, t);
    if (c->n_dicts == 0)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "a glossary keeps at least one dictionary (delete the glossary)");
    return 0;
}

/* An edit of g: PATCH, PUT .../dictionaries (one pair's entries replaced or
 * added), DELETE .../dictionaries: a new glossary under the same id. */
static void v3_edit(srv_request *req, srv_response *resp, const srv_gstored *g, const char *rest)
{
    int dicts = !strcmp(rest, "/dictionaries"), rc;
    srv_gstored *c = srv_gstored_copy(g);
    if (!c) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    if (!strcmp(req->method, "PATCH") && !*rest)
        rc = v3_patch(req, resp, c);
    else if (!strcmp(req->method, "PUT") && dicts)
        rc = add_dicts(req, resp, c, 1);
    else if (!strcmp(req->method, "DELETE") && dicts)
        rc = v3_delete_dict(req, resp, c);
    else
        rc = srv_fail(resp, SRV_E_NOT_FOUND, "no route %s %s", req->method, req->path);
    if (rc) {
        srv_gstored_free(c);
        return;
    }
    json_t *out = v3_json(c);
    if ((rc = srv_gstore_replace(req->srv->gstore, c)) == -2) {
        json_decref(out);
        redis_down(resp, "glossaries are shared through Redis, which does not answer; retry later");
    } else if (rc) {                                        /* deleted meanwhile */
        json_decref(out);
        srv_fail(resp, SRV_E_NOT_FOUND, "Glossary not found");
    } else if (!strcmp(req->method, "DELETE")) {
        json_decref(out);
        resp->status = 204;
    } else {
        srv_reply_json(resp, 200, out);
    }
}

void srv_handle_deepl_glossaries_v3(srv_request *req, srv_response *resp)
{
    if (!strcmp(req->path, "/v3/glossaries")) {
        if (!strcmp(req->method, "POST"))
            v3_create(req, resp);
        else
            list(req, resp, 1);
        return;
    }
    const char *rest;
    if (!strcmp(req->method, "DELETE") && !strchr(req->path + strlen("/v3/glossaries/"), '/')) {
        delete_glossary(req, resp);
        return;
    }
    srv_gstored *g = path_glossary(req, resp, &rest);
    if (!g)
        return;
    if (!strcmp(req->method, "GET") && !*rest)
        srv_reply_json(resp, 200, v3_json(g));
    else if (!strcmp(req->method, "GET") && !strcmp(rest, "/entries"))
        v3_entries(req, resp, g);
    else
        v3_edit(req, resp, g, rest);
    srv_gstore_release(req->srv->gstore, g);
}
