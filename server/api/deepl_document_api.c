/* DeepL's document API, on the file jobs of POST /translate_file
 * (service/file_job.h): a document goes through the decoders in batches
 * beside every other request, and is held for --file-ttl once done.  What
 * DeepL does is from its API reference ("Translate documents").
 *
 * POST /v2/document      multipart/form-data: file (its name from the part,
 *                        or "filename"), target_lang, source_lang?, glossary_id?,
 *                        formality?, output_format? (the input's own format only)
 *                        -> {"document_id", "document_key"}
 * POST /v2/document/ID   document_key -> {"document_id", "status": "queued" |
 *                        "translating" | "done" | "error", "seconds_remaining"
 *                        (translating: from the progress so far), "billed_characters"
 *                        (done), "error_message" (error)}
 * POST /v2/document/ID/result   document_key -> the translated file; then it is
 *                        deleted, as DeepL deletes it once downloaded.  Not done
 *                        yet: 503 (deepl-node's DocumentNotReadyError).
 *
 * The document's characters (code points of its translation units) count
 * against the key's char-quota (usage.h) when it is uploaded, given back if
 * it is refused there.  A wrong document_key answers as an unknown id (404):
 * it tells nothing of the document.  Formats: what POST /translate_file reads
 * (document/document.h: txt, html, srt, vtt, po, docx, odt, pptx, xlsx, odp,
 * ods, epub, the i18n resources json, arb, properties, strings, android, yaml,
 * and md, xliff).
 *
 * With --redis the jobs are published there (service/file_share.h): status and
 * result are answered by any replica, a downloaded document is deleted on
 * all, and an upload while Redis does not answer gets 503 + Retry-After.  The
 * document and its options are kept there under this replica's lease, so
 * that another replica takes it over if this one dies
 * (service/file_takeover.h; over --redis-file-mb: 413, no room now: 503).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "handlers.h"
#include "http/body.h"
#include "service/file_prep.h"
#include "service/file_share.h"
#include "service/file_takeover.h"
#include "service/glossary_store.h"
#include "service/languages.h"
#include "service/pairs.h"
#include "service/server.h"

#define DOC_PATH "/v2/document/"

/* ---- upload -------------------------------------------------------------------------- */

typedef struct {
    const char  *data;
    size_t       len;
    char         filename[256];
    srv_doc_kind kind;
    const char  *target, *source;   /* the models' codes; source "auto" until detected */
    srv_lang_guess guess;
    const srv_glossary *terms;      /* glossary_id's dictionary (borrowed from glossary), or NULL */
    srv_gstored *glossary;
} dl_doc;

static const char *text_field(const srv_request *req, const char *name)
{
    return json_string_value(json_object_get(req->json, name));
}

/* The fields DeepL's upload takes; any other is refused by name. */
static int check_fields(const srv_request *req, srv_response *resp)
{
    static const char *const known[] = { "target_lang", "source_lang", "filename", "glossary_id", "formality",
                                         "output_format" };
    const char *name;
    json_t *v;
    json_object_foreach(req->json, name, v) {
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            ok |= !strcmp(name, known[i]);
        if (!ok)
            return srv_fail(resp, SRV_E_INVALID_FIELD, "Unknown parameter '%s'", name);
    }
    const char *form = text_field(req, "formality");
    if (form && strcasecmp(form, "default") && strcasecmp(form, "prefer_more") && strcasecmp(form, "prefer_less"))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "'formality' is not supported for the given 'target_lang' "
                        "(use prefer_more or prefer_less)");
    return 0;
}

/* The file part and the languages: 0, or -1 with resp failed. */
static int read_upload(srv_request *req, srv_response *resp, dl_doc *d)
{
    char err[160];
    int found = req->content_type && !strncasecmp(req->content_type, "multipart/form-data", 19)
                    ? srv_multipart_file(req->body, req->body_len, req->content_type, "file", &d->data, &d->len,
                                         d->filename, sizeof d->filename, err, sizeof err)
                    : -2;
    if (found == -2)
        return srv_fail(resp, SRV_E_BAD_REQUEST, "POST /v2/document takes multipart/form-data with a 'file' part");
    if (found < 0)
        return srv_fail(resp, SRV_E_INVALID_JSON, "%s", err);
    if (!found)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'file' not specified.");
    if (check_fields(req, resp))
        return -1;
    const char *fname = text_field(req, "filename"), *target = text_field(req, "target_lang");
    const char *source = text_field(req, "source_lang"), *out = text_field(req, "output_format");
    if (fname && *fname)
        snprintf(d->filename, sizeof d->filename, "%s", fname);
    if (!target || !*target)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'target_lang' not specified.");
    d->target = srv_served_code(req->srv, target);
    d->source = source && *source ? srv_served_code(req->srv, source) : "auto";
    if (srv_file_kind(req->srv, resp, d->data, d->len, d->filename, &d->kind))
        return -1;
    if (out && *out && strcasecmp(out, srv_doc_kind_ext(d->kind) + 1))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "output_format %s is not supported: a document is written in "
                        "its own format (%s)", out, srv_doc_kind_ext(d->kind) + 1);
    return 0;
}

/* glossary_id: the key's glossary's dictionary for the pair (source_lang required). */
static int upload_glossary(srv_request *req, srv_response *resp, dl_doc *d)
{
    const char *id = text_field(req, "glossary_id");
    if (!id || !*id)
        return 0;
    if (!strcmp(d->source, "auto"))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Use of a glossary requires the source_lang parameter");
    if (!(d->glossary = srv_gstore_get(req->srv->gstore, id, req->key)))
        return srv_fail(resp, SRV_E_NOT_FOUND, "Glossary not found");
    const srv_gdict *g = srv_gstored_dict(d->glossary, d->source, d->target);
    if (!g)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "The glossary has no dictionary %s -> %s", d->source, d->target);
    d->terms = g->terms;
    return 0;
}

/* The document's characters against the key's quota; req->billed so that a
 * failure after this gives them back (routes.c). */
static int bill(srv_request *req, srv_response *resp, long chars)
{
    srv_usage *u = req->srv->usage;
    if (!u || !chars)
        return 0;
    if (srv_shared_usage_take(req->srv->shared, req->key, chars))
        return srv_fail(resp, SRV_E_QUOTA_EXCEEDED, "Quota exceeded: this key may have %ld characters translated "
                        "in all, %ld are used and this document has %ld", srv_usage_quota(u, req->key),
                        srv_shared_usage_known(req->srv->shared, req->key), chars);
    req->billed = chars;
    req->billed_key = req->key;
    return 0;
}

/* With --redis: 0 when it answers (the job's state can be shared), else resp
 * failed with 503 + Retry-After, as POST /translate_file's. */
static int share_ready(srv_request *req, srv_response *resp)
{
    char why[200];
    if (!req->srv->redis || srv_file_share_ready(req->srv->redis, why, sizeof why))
        return 0;
    resp->retry_after = 5;
    return srv_fail(resp, SRV_E_QUEUE_FULL, "documents are shared through Redis, which does not answer (%s); "
                    "retry later", why);
}

void srv_handle_deepl_document(srv_request *req, srv_response *resp)
{
    srv_server *srv = req->srv;
    dl_doc d = { 0 };
    char *copy = NULL, name[256], id[SRV_FILE_ID_LEN];
    srv_doc *doc = NULL;
    srv_file_route r = { 0 };
    if (share_ready(req, resp) || read_upload(req, resp, &d) || upload_glossary(req, resp, &d) ||
        srv_file_parse(srv, resp, d.data, d.len, d.kind, NULL, &copy, &doc) ||
        srv_file_route_doc(srv, resp, doc, d.target, &d.source, &d.guess, d.terms, &r) ||
        bill(req, resp, srv_file_chars(doc)))
        goto done;
    r.chars = srv_file_chars(doc);
    if (srv_files_random_id(r.secret)) {
        srv_fail(resp, SRV_E_INTERNAL, "no randomness for the document key");
        goto done;
    }
    srv_file_result_name(d.filename[0] ? d.filename : "file", d.target, d.kind, name, sizeof name);
    srv_takeover_job job = { .kind = d.kind, .name = name, .target = d.target, .source = d.source,
                             .opt = srv_doc_default_options(), .terms = d.terms, .secret = r.secret,
                             .chars = r.chars };
    if (srv->takeover && srv_takeover_store(srv->takeover, &job, d.data, d.len, r.id, resp))
        goto done;                      /* kept in Redis for another replica to take over: refused */
    mt_err err = { 0 };
    mt_status st = srv_files_start(srv->files, doc, copy, name, &r, id, &err);
    doc = NULL;                         /* the job's now, also on failure */
    copy = NULL;
    r.glossary = NULL;
    if (st != MT_OK) {
        if (r.id[0])
            srv_takeover_abandon(srv->takeover, r.id);
        if (err.status == MT_ERR_BUSY)
            resp->retry_after = 5;
        srv_fail(resp, srv_code_from_mt(err.status), "%s", err.msg);
        goto done;
    }
    srv_reply_json(resp, 200, json_pack("{s:s,s:s}", "document_id", id, "document_key", r.secret));
done:
    srv_gstore_release(srv->gstore, d.glossary);
    srv_glossary_free(r.glossary);
    srv_doc_free(doc);
    free(copy);
}

/* ---- status and result ----------------------------------------------------------------- */

/* With --redis: 1 when this replica's finished document id was downloaded
 * through another (its shared state "cancelled"): then dropped here too. */
static int downloaded_elsewhere(srv_request *req, const char *id)
{
    srv_file_info shared;
    if (!req->srv->redis || srv_file_share_info(req->srv->redis, id, &shared) || shared.state != SRV_FILE_CANCELLED)
        return 0;
    srv_files_cancel(req->srv->files, id);
    return 1;
}

/* /v2/document/ID[/result] with its document_key: the job's info (this
 * replica's, or with --redis another's as published there: *here 0) and
 * whether the result was asked for.  0, or -1 with resp failed (404 for an
 * unknown id or a wrong key alike). */
static int find_document(srv_request *req, srv_response *resp, char id[SRV_FILE_ID_LEN], srv_file_info *info,
                         int *result, int *here)
{
    const char *p = req->path + strlen(DOC_PATH), *key = text_field(req, "document_key");
    size_t n = strspn(p, "0123456789abcdef");
    *result = !strcmp(p + n, "/result");
    if (n != SRV_FILE_ID_LEN - 1 || (p[n] && !*result))
        return srv_fail(resp, SRV_E_NOT_FOUND, "Document not found");
    memcpy(id, p, n);
    id[n] = 0;
    if (!key || !*key)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "Parameter 'document_key' not specified.");
    *here = srv_files_info(req->srv->files, id, info) == 0;
    if (*here && info->state == SRV_FILE_DONE && downloaded_elsewhere(req, id))
        *here = 0;
    if ((!*here && (!req->srv->redis || srv_file_share_info(req->srv->redis, id, info))) || !info->secret[0] ||
        strcmp(info->secret, key) || (!*here && info->state == SRV_FILE_CANCELLED))    /* downloaded */
        return srv_fail(resp, SRV_E_NOT_FOUND, "Document not found");
    return 0;
}

static json_t *status_json(const char *id, const srv_file_info *info)
{
    json_t *o = json_pack("{s:s}", "document_id", id);
    const char *status = info->state == SRV_FILE_DONE ? "done" : info->state != SRV_FILE_RUNNING ? "error"
                         : info->done == 0 ? "queued" : "translating";
    json_object_set_new(o, "status", json_string(status));
    if (info->state == SRV_FILE_RUNNING && info->done > 0) {
        double spent = srv_now() - info->t_start;
        json_object_set_new(o, "seconds_remaining",
                            json_integer((json_int_t)(spent / info->done * (info->total - info->done) + 0.5)));
    }
    if (info->state == SRV_FILE_DONE)
        json_object_set_new(o, "billed_characters", json_integer(info->chars));
    if (info->state == SRV_FILE_FAILED || info->state == SRV_FILE_CANCELLED)
        json_object_set_new(o, "error_message", json_string(info->state == SRV_FILE_FAILED ? info->err.msg
                                                                                          : "cancelled"));
    return o;
}

/* The result of another replica's document (info: as published): from Redis. */
static mt_status shared_result(srv_request *req, const char *id, char **bytes, size_t *len, srv_file_info *info,
                               mt_err *err)
{
    if (info->state != SRV_FILE_DONE)
        return mt_err_set(err, MT_ERR_INPUT, "not done");
    if (srv_file_share_result(req->srv->redis, id, bytes, len))
        return mt_err_set(err, MT_ERR_INPUT, "its file is no longer in Redis");
    return MT_OK;
}

static void download(srv_request *req, srv_response *resp, const char *id, srv_file_info info, int here)
{
    char *bytes;
    size_t len;
    mt_err err = { 0 };
    mt_status st = here ? srv_files_result(req->srv->files, id, &bytes, &len, &info, &err)
                        : shared_result(req, id, &bytes, &len, &info, &err);
    if (st == MT_ERR_NOMEM) {
        srv_fail(resp, SRV_E_INTERNAL, "%s", err.msg);
    } else if (st != MT_OK && info.state == SRV_FILE_RUNNING) {
        resp->retry_after = 1;
        srv_fail(resp, SRV_E_QUEUE_FULL, "Document not ready: %d of %d units translated", info.done, info.total);
    } else if (st != MT_OK) {
        srv_fail(resp, SRV_E_NOT_FOUND, "Document not found: %s", err.msg);
    } else {
        resp->status = 200;
        resp->text = bytes;
        resp->text_len = len;
        resp->content_type = srv_doc_kind_mime(info.kind);
        snprintf(resp->attachment, sizeof resp->attachment, "%.250s", info.name);
        if (here)
            srv_files_cancel(req->srv->files, id);  /* downloaded: deleted, as DeepL does ... */
        if (req->srv->redis)
            srv_file_share_gone(&req->srv->file_share, id, &info);     /* ... on every replica */
    }
}

void srv_handle_deepl_document_status(srv_request *req, srv_response *resp)
{
    char id[SRV_FILE_ID_LEN];
    srv_file_info info;
    int result, here = 0;
    if (find_document(req, resp, id, &info, &result, &here))
        return;
    if (result)
        download(req, resp, id, info, here);
    else
        srv_reply_json(resp, 200, status_json(id, &info));
}
