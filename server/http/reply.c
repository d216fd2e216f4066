/* reply: how every reply body is made (reply.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reply.h"
#include "util/clock.h"

static const char internal_error_body[] =
    "{\"error\":{\"code\":\"internal_error\",\"message\":\"cannot serialize the reply\"}}";

void srv_reply_serialize(srv_response *resp)
{
    if (!resp->json)
        return;
    resp->text = json_dumps(resp->json, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(resp->json);
    resp->json = NULL;
    if (!resp->text) {          /* our own failure: say so with a fixed body */
        resp->status = 500;
        resp->text = strdup(internal_error_body);
    }
    resp->text_len = resp->text ? strlen(resp->text) : 0;
    resp->content_type = "application/json";
}

void srv_reply_json(srv_response *resp, int status, json_t *body)
{
    if (!body) {        /* recorded as srv_fail (errors.c) would: the first failure wins */
        if (resp->error == SRV_OK) {
            resp->error = SRV_E_INTERNAL;
            snprintf(resp->message, sizeof resp->message, "out of memory building the reply");
        }
        return;
    }
    json_decref(resp->json);
    resp->json = body;
    resp->status = status;
}

double srv_now(void) { return mt_now_s(); }
