/* reply: small helpers shared by the handlers. */
#include <time.h>

#include "handlers.h"

void srv_reply_json(srv_response *resp, int status, json_t *body)
{
    if (!body) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory building the reply");
        return;
    }
    json_decref(resp->json);
    resp->json = body;
    resp->status = status;
}

double srv_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
