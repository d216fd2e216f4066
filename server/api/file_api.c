/* Files: POST /translate_file (LibreTranslate's shape), GET and DELETE
 * /translate_file/ID (progress, cancel: ours), GET /download_file/ID/NAME.
 *
 *   POST /translate_file   multipart/form-data: file, target, source (or
 *                          "auto", the default), api_key; and ours: async,
 *                          overwrite (XLIFF: targets that hold text translated again).
 *       The file's format is read from its bytes (document/document.h); it
 *       becomes a file job (service/file_job.h) that goes through the
 *       decoders in batches beside every other request.  As LibreTranslate:
 *       the reply comes when the file is done, {"translatedFileUrl": URL}
 *       (URL: GET /download_file/...); the client leaving cancels the job.
 *       With async=true: 202 at once, {"id", "status_url", "translatedFileUrl"},
 *       the file there once GET status_url says "done".
 *   GET /translate_file/ID {"id", "state", "done", "total", "name", "format",
 *       "elapsed_ms", "translatedFileUrl" (done), "error" (failed)}: units
 *       translated of all, monotonically.
 *   DELETE /translate_file/ID   cancels a running job, deletes a finished file.
 *   GET /download_file/ID/NAME  the file, until --file-ttl after it was done.
 *
 * Errors: no file part 400, a file over --max-file-bytes 413, over
 * --max-file-units 413, a format we do not read 415 (naming the formats), a
 * file that is not what it says 400 (where), --max-file-jobs held 503.
 *
 * With --redis (service/file_share.h) a job is published there as it runs,
 * and GET /translate_file/ID and /download_file/ID/NAME of a job another
 * replica holds are answered from it; while Redis does not answer, new jobs
 * get 503 + Retry-After (their state could not be shared).  An async job's
 * file and form are kept there too, under this replica's lease, so that
 * another replica takes it over if this one dies (service/file_takeover.h):
 * a file over --redis-file-mb alone gets 413, one that does not fit now 503.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "handlers.h"
#include "http/body.h"
#include "service/detect_source.h"
#include "service/file_prep.h"
#include "service/file_takeover.h"
#include "service/glossaries.h"
#include "service/pairs.h"
#include "service/server.h"
#include "service/translate_job.h"

#define FILE_PATH "/translate_file/"
#define DOWNLOAD_PATH "/download_file/"

/* A sync request's wait: the runner calls resume(req) when the job ends. */
typedef struct {
    srv_files *files;
    char       id[SRV_FILE_ID_LEN];
    char       url[1024];
} waiting;

static void waiting_free(void *p)
{
    waiting *w = p;
    srv_files_detach(w->files, w->id, 1);   /* the request died first: nobody wants the file */
    free(w);
}

static void job_ended(void *ctx)
{
    srv_request *req = ctx;
    req->resume(req);
}

static int req_gone(void *ctx)
{
    srv_request *req = ctx;
    return req->client_gone && req->client_gone(req->conn);
}

static void file_url(const srv_request *req, const char *id, const char *name, char *out, size_t len)
{
    if (req->host && req->host[0] && !strpbrk(req->host, "\"<> \r\n"))
        snprintf(out, len, "http://%s%s%s/%s", req->host, DOWNLOAD_PATH, id, name);
    else
        snprintf(out, len, "%s%s/%s", DOWNLOAD_PATH, id, name);
}

static void finish_sync(srv_request *req, srv_response *resp)
{
    waiting *w = req->pending;
    req->pending = NULL;
    srv_file_info info;
    if (srv_files_info(w->files, w->id, &info) != 0) {
        srv_fail(resp, SRV_E_INTERNAL, "the file job vanished");
    } else if (info.state == SRV_FILE_DONE) {
        srv_reply_json(resp, 200, json_pack("{s:s}", "translatedFileUrl", w->url));
    } else if (info.state == SRV_FILE_CANCELLED) {
        srv_fail(resp, SRV_E_CLIENT_GONE, "the file job was cancelled");
    } else {
        srv_file_fail(resp, &info.err);
    }
    free(w);
}

/* A POST /translate_file's form, checked: the file's bytes (in the request's
 * body), its name and format, the languages, whether to reply at once, and
 * the per-file choices of the format (document.h's srv_doc_options). */
typedef struct {
    const char    *data;
    size_t         len;
    char           filename[256];
    srv_doc_kind   kind;
    const char    *target, *source;     /* source: "auto" or a code (guess.code once detected) */
    int            async;
    srv_doc_options opt;
    srv_lang_guess guess;
} file_form;

/* The form's fields for srv_doc_options, over its defaults: "overwrite"
 * (true/false).  0, or -1 with resp failed. */
static int read_doc_options(srv_request *req, srv_response *resp, srv_doc_options *o)
{
    *o = srv_doc_default_options();
    return srv_field_bool(req, resp, "overwrite", &o->overwrite) < 0 ? -1 : 0;
}

/* The form's file part and fields: 0, or -1 with resp failed. */
static int read_form(srv_request *req, srv_response *resp, file_form *f)
{
    const srv_server *srv = req->srv;
    char err_msg[160];
    int found = req->content_type && strncasecmp(req->content_type, "multipart/form-data", 19) == 0
                    ? srv_multipart_file(req->body, req->body_len, req->content_type, "file", &f->data, &f->len,
                                         f->filename, sizeof f->filename, err_msg, sizeof err_msg)
                    : -2;
    if (found == -2)
        return srv_fail(resp, SRV_E_BAD_REQUEST, "POST /translate_file takes multipart/form-data with a 'file' part");
    if (found < 0)
        return srv_fail(resp, SRV_E_INVALID_JSON, "%s", err_msg);
    if (!found)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: missing file parameter");
    f->target = NULL;
    f->source = "auto";
    f->async = 0;
    if (srv_field_string(req, resp, "target", &f->target) < 0 || srv_field_string(req, resp, "source", &f->source) < 0 ||
        srv_field_bool(req, resp, "async", &f->async) < 0 || read_doc_options(req, resp, &f->opt) < 0)
        return -1;
    if (!f->target)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Invalid request: missing target parameter");
    if (!f->source[0])
        f->source = "auto";
    return srv_file_kind(srv, resp, f->data, f->len, f->filename, &f->kind);
}

/* With --redis: 0 when it answers, else resp failed with 503 + Retry-After. */
static int share_ready(srv_request *req, srv_response *resp)
{
    char why[200];
    if (!req->srv->redis || srv_file_share_ready(req->srv->redis, why, sizeof why))
        return 0;
    resp->retry_after = 5;
    return srv_fail(resp, SRV_E_QUEUE_FULL, "file jobs are shared through Redis, which does not answer (%s); "
                    "retry later", why);
}

/* With --redis, an asynchronous job's source and form kept in Redis under
 * this replica's lease (service/file_takeover.h), its id into r->id: 0, or -1
 * with resp failed (413 over --redis-file-mb, 503 no room now or Redis down). */
static int keep_job(srv_request *req, srv_response *resp, const file_form *f, const char *name,
                    const srv_glossary *terms, srv_file_route *r)
{
    if (!f->async || !req->srv->takeover)
        return 0;                       /* a synchronous job's client waits on this replica: nothing to take over */
    srv_takeover_job job = { .kind = f->kind, .name = name, .target = f->target, .source = f->source,
                             .opt = f->opt, .terms = terms, .secret = "" };
    return srv_takeover_store(req->srv->takeover, &job, f->data, f->len, r->id, resp);
}

void srv_handle_translate_file(srv_request *req, srv_response *resp)
{
    srv_server *srv = req->srv;
    file_form f;
    char *copy = NULL, name[256];
    srv_doc *doc = NULL;
    srv_file_route r = { 0 };
    waiting *w = NULL;
    srv_glossary *terms = NULL;         /* the form's "glossary", a JSON object as a string */
    if (share_ready(req, resp) || read_form(req, resp, &f) ||
        srv_file_parse(srv, resp, f.data, f.len, f.kind, &f.opt, &copy, &doc) ||
        srv_request_glossary(req, resp, &terms) ||
        srv_file_route_doc(srv, resp, doc, f.target, &f.source, &f.guess, terms, &r))
        goto done;
    if (!(w = calloc(1, sizeof *w))) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        goto done;
    }
    srv_file_result_name(f.filename[0] ? f.filename : "file", f.target, f.kind, name, sizeof name);
    if (keep_job(req, resp, &f, name, terms, &r))
        goto done;
    w->files = srv->files;
    if (!f.async) {                     /* LibreTranslate's: the reply waits for the file */
        r.on_end = job_ended;
        r.end_ctx = req;
        r.gone = req_gone;
        r.gone_ctx = req;
        req->finish = finish_sync;      /* before the job can end */
        req->pending = w;
        req->pending_free = waiting_free;
    }
    mt_err err = { 0 };
    mt_status st = srv_files_start(srv->files, doc, copy, name, &r, w->id, &err);
    doc = NULL;                         /* the job's now, also on failure */
    copy = NULL;
    r.glossary = NULL;
    if (st != MT_OK) {
        req->finish = NULL;
        req->pending = NULL;
        req->pending_free = NULL;
        if (r.id[0])
            srv_takeover_abandon(srv->takeover, r.id);
        if (err.status == MT_ERR_BUSY)
            resp->retry_after = 5;
        srv_fail(resp, srv_code_from_mt(err.status), "%s", err.msg);
        goto done;
    }
    file_url(req, w->id, name, w->url, sizeof w->url);
    if (!f.async) {
        w = NULL;                       /* req->pending: finish_sync frees it */
        goto done;
    }
    char status[128];
    snprintf(status, sizeof status, "%s%s", FILE_PATH, w->id);
    srv_reply_json(resp, 202, json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", w->id, "status_url", status,
                                        "translatedFileUrl", w->url, "format", srv_doc_kind_name(f.kind),
                                        "detectedLanguage", f.source));
done:
    free(w);
    srv_glossary_free(terms);
    srv_glossary_free(r.glossary);
    srv_doc_free(doc);
    free(copy);
}

/* The id in /PREFIX/ID[/...]: 32 hex digits, else NULL. */
static const char *path_id(const char *path, const char *prefix, char id[SRV_FILE_ID_LEN])
{
    const char *p = path + strlen(prefix);
    size_t n = strspn(p, "0123456789abcdef");
    if (n != SRV_FILE_ID_LEN - 1 || (p[n] && p[n] != '/'))
        return NULL;
    memcpy(id, p, n);
    id[n] = 0;
    return id;
}

/* DELETE /translate_file/ID: cancelled here, or (another replica's) deleted from Redis when finished. */
static void delete_job(srv_request *req, srv_response *resp, const char *id, const srv_file_info *info, int here)
{
    srv_redis *r = req->srv->redis;
    if (!here && info->state == SRV_FILE_RUNNING) {
        srv_fail(resp, SRV_E_FORBIDDEN, "file job %s runs on another replica: it can be cancelled only there", id);
        return;
    }
    if (here)
        srv_files_cancel(req->srv->files, id);
    if (r && info->state != SRV_FILE_RUNNING)
        srv_file_share_delete(r, id);
    srv_reply_json(resp, 200, json_pack("{s:s,s:s}", "id", id,
                                        "state", info->state == SRV_FILE_RUNNING ? "cancelled" : "deleted"));
}

void srv_handle_file_status(srv_request *req, srv_response *resp)
{
    char id[SRV_FILE_ID_LEN] = "";
    srv_file_info info;
    int here = path_id(req->path, FILE_PATH, id) && srv_files_info(req->srv->files, id, &info) == 0;
    if (!here && (!id[0] || !req->srv->redis || srv_file_share_info(req->srv->redis, id, &info))) {
        srv_fail(resp, SRV_E_NOT_FOUND, "no file job at %s (unknown, or deleted after --file-ttl)", req->path);
        return;
    }
    if (!strcmp(req->method, "DELETE")) {
        delete_job(req, resp, id, &info, here);
        return;
    }
    double end = info.t_end > 0 ? info.t_end : srv_now();
    json_t *o = json_pack("{s:s,s:s,s:i,s:i,s:s,s:s,s:f}", "id", id, "state", srv_file_state_name(info.state),
                          "done", info.done, "total", info.total, "name", info.name, "format",
                          srv_doc_kind_name(info.kind), "elapsed_ms", (end - info.t_start) * 1e3);
    if (o && info.state == SRV_FILE_DONE) {
        char url[1024];
        file_url(req, id, info.name, url, sizeof url);
        json_object_set_new(o, "translatedFileUrl", json_string(url));
        json_object_set_new(o, "bytes", json_integer((json_int_t)info.bytes));
    }
    if (o && info.state == SRV_FILE_FAILED)
        json_object_set_new(o, "error", json_string(info.err.msg));
    srv_reply_json(resp, 200, o);
}

void srv_handle_download_file(srv_request *req, srv_response *resp)
{
    char id[SRV_FILE_ID_LEN];
    if (!path_id(req->path, DOWNLOAD_PATH, id)) {
        srv_fail(resp, SRV_E_NOT_FOUND, "no file at %s", req->path);
        return;
    }
    char *bytes;
    size_t len;
    srv_file_info info;
    mt_err err = { 0 };
    mt_status st = srv_files_result(req->srv->files, id, &bytes, &len, &info, &err);
    if (st == MT_ERR_INPUT && srv_files_info(req->srv->files, id, &info) != 0 && req->srv->redis &&
        srv_file_share_info(req->srv->redis, id, &info) == 0 && info.state == SRV_FILE_DONE &&
        srv_file_share_result(req->srv->redis, id, &bytes, &len) == 0)
        st = MT_OK;                     /* another replica's, from Redis */
    if (st == MT_ERR_NOMEM) {
        srv_fail(resp, SRV_E_INTERNAL, "%s", err.msg);
        return;
    }
    if (st != MT_OK) {
        srv_fail(resp, SRV_E_NOT_FOUND, "%s", err.msg);
        return;
    }
    resp->status = 200;
    resp->text = bytes;
    resp->text_len = len;
    resp->content_type = srv_doc_kind_mime(info.kind);
    snprintf(resp->attachment, sizeof resp->attachment, "%.250s", info.name);   /* result_name's characters only */
}
