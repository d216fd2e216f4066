/* fuzz_body.h: what the three request-body targets share: srv_body_parse on a
 * request as server/http/http.c builds it, then every field getter the handlers use,
 * then the error envelope, all checked for the contracts of server/http/body.h. */
#ifndef FUZZ_BODY_H
#define FUZZ_BODY_H

#include "fuzz_common.h"

#include "http/body.h"
#include "http/errors.h"
#include "api/handlers.h"

#include <jansson.h>
#include <math.h>

/* Render a recorded failure as the router does; the message must stay valid
 * UTF-8 (srv_fail truncates) or jansson refuses it and the reply has no body. */
static inline void fuzz_body_render(srv_response *resp, srv_shape shape)
{
    if (resp->error == SRV_OK)
        return;
    FUZZ_CHECK(fuzz_utf8_valid(resp->message, strlen(resp->message)));
    srv_error_render(resp, shape);
    FUZZ_CHECK(resp->json != NULL);
    FUZZ_CHECK(resp->status >= 400 && resp->status < 600);
    json_decref(resp->json);
    free(resp->text);
    memset(resp, 0, sizeof *resp);
}

/* Every getter of server/http/body.h on the field names the handlers read. */
static inline void fuzz_body_fields(srv_request *req)
{
    static const char *const text_fields[] = {"text", "q"};
    static const char *const int_fields[] = {"beam_size", "max_length", "alternatives", "layers"};
    static const char *const bool_fields[] = {"return_tokens", "return_scores", "split", "copy_guard"};
    static const char *const str_fields[] = {"model", "source", "target", "format", "side", "api_key"};
    static const char *const list_fields[] = {"ids", "heads", "layers"};
    srv_response resp = {0};

    for (size_t i = 0; i < sizeof text_fields / sizeof *text_fields; i++) {
        const char **texts = NULL;
        int n = -1, is_list = -1;
        int rc = srv_field_texts(req, &resp, text_fields[i], &texts, &n, &is_list);
        if (rc == 1) {
            FUZZ_CHECK(n >= 1 && texts && (is_list == 0 || is_list == 1));
            for (int k = 0; k < n; k++) {
                FUZZ_CHECK(texts[k] != NULL);
                FUZZ_CHECK(!srv_is_blank(texts[k], strlen(texts[k])));
            }
            free(texts);
        } else {
            FUZZ_CHECK(rc == -1 && resp.error != SRV_OK);
        }
        fuzz_body_render(&resp, (srv_shape)(i % 3));
    }
    for (size_t i = 0; i < sizeof int_fields / sizeof *int_fields; i++) {
        int v = 12345, rc = srv_field_int(req, &resp, int_fields[i], -3, 1000, &v);
        FUZZ_CHECK(rc == 1 ? v >= -3 && v <= 1000 : rc == 0 ? v == 12345 : resp.error != SRV_OK);
        fuzz_body_render(&resp, SRV_SHAPE_OURS);
    }
    for (size_t i = 0; i < sizeof bool_fields / sizeof *bool_fields; i++) {
        int v = 7, rc = srv_field_bool(req, &resp, bool_fields[i], &v);
        FUZZ_CHECK(rc == 1 ? v == 0 || v == 1 : rc == 0 ? v == 7 : resp.error != SRV_OK);
        fuzz_body_render(&resp, SRV_SHAPE_LT);
    }
    for (size_t i = 0; i < sizeof str_fields / sizeof *str_fields; i++) {
        const char *s = NULL;
        int rc = srv_field_string(req, &resp, str_fields[i], &s);
        FUZZ_CHECK(rc == 1 ? s != NULL : rc == 0 ? s == NULL : resp.error != SRV_OK);
        fuzz_body_render(&resp, SRV_SHAPE_OURS);
    }
    for (size_t i = 0; i < sizeof list_fields / sizeof *list_fields; i++) {
        int *list = NULL, n = -1;
        int rc = srv_field_int_list(req, &resp, list_fields[i], 0, 65535, &list, &n);
        if (rc == 1) {
            FUZZ_CHECK(list && n >= 1 && n <= 4096);
            for (int k = 0; k < n; k++)
                FUZZ_CHECK(list[k] >= 0 && list[k] <= 65535);
            free(list);
        } else {
            FUZZ_CHECK(rc == 0 || resp.error != SRV_OK);
        }
        fuzz_body_render(&resp, SRV_SHAPE_OURS);
    }
}

/* The getters the decoding features use (issue 14): numbers, 64-bit integers,
 * objects with known members, and "object.member" names. */
static inline void fuzz_body_feature_fields(srv_request *req)
{
    static const char *const num_fields[] = {"repetition_penalty", "length_penalty", "sampling.temperature",
                                             "sampling.top_p"};
    static const char *const keys[] = {"temperature", "top_k", "top_p", "seed", NULL};
    srv_response resp = {0};
    for (size_t i = 0; i < sizeof num_fields / sizeof *num_fields; i++) {
        double v = 12345.0;
        int rc = srv_field_number(req, &resp, num_fields[i], 0.0, 1.0, (int)(i & 1), &v);
        FUZZ_CHECK(rc == 1 ? isfinite(v) && v <= 1.0 && ((i & 1) ? v > 0.0 : v >= 0.0)
                           : rc == 0 ? v == 12345.0 : resp.error != SRV_OK);
        fuzz_body_render(&resp, SRV_SHAPE_OURS);
    }
    long long seed = -7;
    int rc = srv_field_int64(req, &resp, "sampling.seed", 0, (1ll << 53) - 1, &seed);
    FUZZ_CHECK(rc == 1 ? seed >= 0 && seed < (1ll << 53) : rc == 0 ? seed == -7 : resp.error != SRV_OK);
    fuzz_body_render(&resp, SRV_SHAPE_OURS);
    json_t *obj = NULL;
    rc = srv_field_object(req, &resp, "sampling", keys, &obj);
    FUZZ_CHECK(rc == 1 ? json_is_object(obj) : rc == 0 ? obj == NULL : resp.error != SRV_OK);
    fuzz_body_render(&resp, SRV_SHAPE_OURS);
}

/* srv_body_parse of body under content_type (may be NULL), then the fields. */
static inline void fuzz_body_request(const char *content_type, const char *body, size_t len)
{
    srv_request req = {0};
    srv_response resp = {0};
    req.method = "POST";
    req.path = "/translate";
    req.content_type = content_type;
    req.body = body;
    req.body_len = len;
    if (srv_body_parse(&req, &resp) == 0) {
        FUZZ_CHECK(resp.error == SRV_OK && json_is_object(req.json));
        /* a parsed body holds only valid UTF-8 strings (jansson guarantees it
         * for JSON; the form parsers must too) */
        const char *key;
        json_t *val;
        json_object_foreach(req.json, key, val) {
            FUZZ_CHECK(fuzz_utf8_valid(key, strlen(key)));
            if (req.form)
                FUZZ_CHECK(json_is_string(val) &&
                           fuzz_utf8_valid(json_string_value(val), json_string_length(val)));
        }
        fuzz_body_fields(&req);
        fuzz_body_feature_fields(&req);
    } else {
        FUZZ_CHECK(resp.error != SRV_OK);
        fuzz_body_render(&resp, SRV_SHAPE_OURS);
    }
    json_decref(req.json);
}

#endif
