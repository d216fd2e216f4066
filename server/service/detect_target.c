/* detect_target: "auto" that lets text in the target language through. */
#include "detect_target.h"

#include "languages.h"

int srv_detect_auto(srv_server *srv, const char *const *texts, int n, const char *target, srv_lang_guess *out,
                    int *same, srv_response *resp)
{
    *same = 0;
    int k = srv_detect_texts(srv, texts, n, out, 1, resp);
    if (resp->error != SRV_OK)
        return -1;                      /* blank texts */
    if (k > 0 && srv_lang_same(out->code, target)) {
        *same = 1;
        return 0;
    }
    return srv_detect_source(srv, texts, n, target, out, resp);
}
