/* GET /frontend/settings: what LibreTranslate's web front end (and the clients
 * that copy it) asks first, in LibreTranslate's shape and with its field names
 * and types (its app.py, frontend_settings()):
 *
 *   {"charLimit": int, "frontendTimeout": int, "apiKeys": bool, "keyRequired": bool,
 *    "suggestions": bool, "filesTranslation": bool, "supportedFilesFormat": [strings],
 *    "language": {"source": {"code", "name"}, "target": {"code", "name"}}}
 *
 * The values are this server's:
 *   charLimit         --max-body: a text of more characters than the body has
 *                     bytes can never be sent (every character is at least a
 *                     byte), so no longer text is accepted.  The token limit
 *                     (--max-tokens) is separate: /translate answers 413 past it.
 *   frontendTimeout   500: LibreTranslate's default wait (ms) after a keystroke
 *                     before its page translates; a property of the page, not of
 *                     the server, which has no such setting.
 *   apiKeys, keyRequired   --api-key set: every translation needs it.
 *   suggestions       false: /suggest answers 403, as LibreTranslate's without --suggestions.
 *   filesTranslation  true: POST /translate_file (file_api.c); supportedFilesFormat
 *                     the extensions of the formats it reads (document/document.h).
 *   language.source   "auto" ("Auto Detect"), LibreTranslate's default.
 *   language.target   the default model's target language (a multilingual
 *                     model: its first target), named as /languages names it.
 * Public and LibreTranslate-shaped (routes.c): no key, errors as {"error": "..."}.
 */
#include <string.h>

#include "document/document.h"
#include "handlers.h"
#include "service/pairs.h"
#include "service/server.h"

/* LibreTranslate's --frontend-timeout default (ms). */
#define LT_FRONTEND_TIMEOUT_MS 500

static json_t *language_json(const char *code, const char *name)
{
    return json_pack("{s:s,s:s}", "code", code, "name", name);
}

void srv_handle_frontend_settings(srv_request *req, srv_response *resp)
{
    const srv_server *srv = req->srv;
    const srv_model *m = srv_find_model(req->srv, NULL);    /* the default: the first listed (never none) */
    const char *target = m->n_pairs ? m->pairs[0][1] : m->n_targets ? m->targets[0] : m->info->target_lang;
    int key = srv->opts.api_key[0] != 0;
    json_int_t char_limit = (json_int_t)srv->opts.max_body;      /* at most 1 GiB (options.c) */
    json_t *formats = json_array();
    for (const char *p = srv_doc_supported(); formats && *p;) {       /* ".txt, .html, ..." */
        size_t n = strcspn(p, ", ");
        if (n)
            json_array_append_new(formats, json_stringn(p, n));
        p += n;
        p += strspn(p, ", ");
    }
    json_t *o = json_pack("{s:I,s:i,s:b,s:b,s:b,s:b,s:o,s:{s:o,s:o}}",
                          "charLimit", char_limit,
                          "frontendTimeout", LT_FRONTEND_TIMEOUT_MS,
                          "apiKeys", key,
                          "keyRequired", key,
                          "suggestions", 0,
                          "filesTranslation", 1,
                          "supportedFilesFormat", formats,
                          "language",
                          "source", language_json("auto", "Auto Detect"),
                          "target", language_json(target, srv_language_name(srv, target)));
    if (!o) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    srv_reply_json(resp, 200, o);
}
