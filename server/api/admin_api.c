/* The admin API (--admin-key; routes.c checks the key): models added and removed while serving.
 *
 * POST /admin/models {"id": "ID", "path": "DIR"} or {"id": "ID", "name": "org/name[@rev]"}
 *     -> 202 the model's pending entry (service/admin.h: read, or downloaded
 *        from the hub then read, on a thread of its own; served once its card is read)
 * GET /admin/models -> {"models": [...]}: every served model (available,
 *     loaded, removing) and every pending add (downloading with its bytes,
 *     reading, failed with its error)
 * DELETE /admin/models/ID -> 202 {"id", "state": "removing", "holders": N}:
 *     no longer found nor listed from now on; unloaded once no request holds it
 */
#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "http/body.h"
#include "service/admin.h"
#include "service/residency.h"
#include "service/server.h"

#define ADMIN_PATH "/admin/models/"

static const char *phase_name(srv_admin_phase p)
{
    return p == SRV_ADMIN_DOWNLOADING ? "downloading" : p == SRV_ADMIN_READING ? "reading" : "failed";
}

static json_t *pending_json(const srv_admin_pending *p)
{
    json_t *o = json_pack("{s:s,s:s,s:f}", "id", p->id, "state", phase_name(p->phase), "elapsed_ms",
                          (srv_now() - p->started) * 1e3);
    if (o && p->path[0])
        json_object_set_new(o, "path", json_string(p->path));
    if (o && p->name[0])
        json_object_set_new(o, "name", json_string(p->name));
    if (o && p->name[0] && p->phase == SRV_ADMIN_DOWNLOADING)
        json_object_set_new(o, "progress", json_pack("{s:s,s:I,s:I}", "file", p->file, "done", (json_int_t)p->done,
                                                     "total", (json_int_t)p->total));
    if (o && p->phase == SRV_ADMIN_FAILED)
        json_object_set_new(o, "error", json_string(p->error));
    return o;
}

static json_t *served_json(srv_server *srv, srv_model *m)
{
    srv_model_state st;
    srv_model_state_get(srv, m, &st);
    const char *state = st.gone ? "removed" : st.removing ? "removing" : st.loaded ? "loaded" : "available";
    return json_pack("{s:s,s:s,s:s,s:b,s:i}", "id", m->id, "path", m->dir, "state", state, "loaded", st.loaded,
                     "holders", st.holders);
}

static void list(srv_request *req, srv_response *resp)
{
    srv_server *srv = req->srv;
    json_t *models = json_array();
    int n = srv->n_models;
    for (int i = 0; i < n; i++) {
        srv_model_state st;
        srv_model_state_get(srv, &srv->models[i], &st);
        if (!st.gone)                       /* removed for good: no longer there */
            json_array_append_new(models, served_json(srv, &srv->models[i]));
    }
    srv_admin_pending p[SRV_ADMIN_MAX_PENDING];
    int np = srv_admin_pending_list(srv->admin, p, SRV_ADMIN_MAX_PENDING);
    for (int i = 0; i < np; i++)
        json_array_append_new(models, pending_json(&p[i]));
    srv_reply_json(resp, 200, json_pack("{s:o}", "models", models));
}

static void add(srv_request *req, srv_response *resp)
{
    static const char *const fields[] = { "id", "path", "name" };
    if (!json_is_object(req->json)) {
        srv_fail(resp, SRV_E_INVALID_JSON, "the body must be a JSON object {\"id\": ..., \"path\" or \"name\": ...}");
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach(req->json, key, v) {
        int known = 0;
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
            known |= !strcmp(key, fields[i]);
        if (!known) {
            srv_fail(resp, SRV_E_INVALID_FIELD, "unknown field \"%s\" (id, path, name)", key);
            return;
        }
    }
    const char *id = NULL, *path = NULL, *name = NULL;
    if (srv_field_string(req, resp, "id", &id) < 0 || srv_field_string(req, resp, "path", &path) < 0 ||
        srv_field_string(req, resp, "name", &name) < 0)
        return;
    if (!id) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "missing \"id\": the name the model is served as");
        return;
    }
    srv_admin_pending p;
    if (srv_admin_add(req->srv->admin, id, path, name, &p, resp) == 0)
        srv_reply_json(resp, 202, pending_json(&p));
}

void srv_handle_admin_models(srv_request *req, srv_response *resp)
{
    if (!strcmp(req->method, "POST"))
        add(req, resp);
    else
        list(req, resp);
}

void srv_handle_admin_model(srv_request *req, srv_response *resp)
{
    const char *id = req->path + strlen(ADMIN_PATH);
    srv_model *m;
    if (srv_admin_remove(req->srv->admin, id, &m, resp) != 0)
        return;
    srv_model_state st;
    srv_model_state_get(req->srv, m, &st);
    srv_reply_json(resp, 202, json_pack("{s:s,s:s,s:i}", "id", m->id, "state", st.gone ? "removed" : "removing",
                                        "holders", st.holders));
}
