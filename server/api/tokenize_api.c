/* POST /tokenize    {"text", "model"?, "side"?: "source" | "target"} -> {"model", "ids", "pieces"}
 * POST /detokenize  {"ids", "model"?} -> {"model", "text"}
 * Ids are Marian vocabulary ids; source ids end with </s>, as the model sees them. */
#include <stdlib.h>
#include <string.h>

#include "http/body.h"
#include "handlers.h"
#include "service/server.h"
#include "translate/text_ids.h"

static int parse_side(srv_request *req, srv_response *resp, int *target)
{
    const char *side = "source";
    if (srv_field_string(req, resp, "side", &side) < 0)
        return -1;
    if (strcmp(side, "source") && strcmp(side, "target"))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'side' must be \"source\" or \"target\"");
    *target = strcmp(side, "target") == 0;
    return 0;
}

void srv_handle_tokenize(srv_request *req, srv_response *resp)
{
    const char **texts = NULL;
    int n = 0, is_list = 0, target = 0, n_ids = 0;
    int32_t *ids = NULL;
    srv_model *m;
    mt_err err = { 0 };
    if (srv_field_texts(req, resp, "text", &texts, &n, &is_list) < 0)
        return;
    if (is_list) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "field 'text' must be a string");
        goto done;
    }
    if (!(m = srv_request_model(req, resp)) || parse_side(req, resp, &target))
        goto done;
    if (srv_text_ids(m->tok, texts[0], target, 0, "the text", &ids, &n_ids, &err) != MT_OK) {
        srv_fail_mt(resp, &err);
        goto done;
    }
    json_t *jids = json_array(), *pieces = json_array();
    for (int i = 0; i < n_ids; i++) {
        const char *p = mt_tokenizer_piece(m->tok, ids[i]);
        json_array_append_new(jids, json_integer(ids[i]));
        json_array_append_new(pieces, json_string(p ? p : ""));
    }
    srv_reply_json(resp, 200, json_pack("{s:s,s:s,s:o,s:o}", "model", m->id, "side",
                                        target ? "target" : "source", "ids", jids, "pieces", pieces));
done:
    free(ids);
    free(texts);
}

void srv_handle_detokenize(srv_request *req, srv_response *resp)
{
    srv_model *m = srv_request_model(req, resp);
    json_t *list = json_object_get(req->json, "ids");
    if (!m)
        return;
    if (!json_is_array(list)) {
        srv_fail(resp, SRV_E_INVALID_FIELD, "field 'ids' must be a list of integers");
        return;
    }
    size_t n = json_array_size(list);
    int vocab = mt_tokenizer_vocab_size(m->tok);
    int32_t *ids = malloc(sizeof *ids * (n + 1));
    char *text = NULL;
    mt_err err = { 0 };
    if (!ids) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(list, i);
        if (!json_is_integer(e)) {
            srv_fail(resp, SRV_E_INVALID_FIELD, "field 'ids[%zu]' must be an integer", i);
            goto done;
        }
        json_int_t v = json_integer_value(e);
        if (v < 0 || v >= vocab) {
            srv_fail(resp, SRV_E_INVALID_FIELD, "field 'ids[%zu]' = %lld is outside [0, %d)", i,
                     (long long)v, vocab);
            goto done;
        }
        ids[i] = (int32_t)v;
    }
    if (mt_tokenizer_decode(m->tok, ids, (int)n, &text, &err) != MT_OK) {
        srv_fail_mt(resp, &err);
        goto done;
    }
    srv_reply_json(resp, 200, json_pack("{s:s,s:s}", "model", m->id, "text", text));
done:
    free(text);
    free(ids);
}
