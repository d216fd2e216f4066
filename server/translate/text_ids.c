/* text_ids: a text's token ids (text_ids.h). */
#include "text_ids.h"

#include <stdlib.h>
#include <string.h>

mt_status srv_text_ids(const mt_tokenizer *tok, const char *text, int target, int max, const char *what,
                       int32_t **ids, int *n, mt_err *err)
{
    size_t len = strlen(text);
    *n = 0;
    if (max <= 0 && len > (size_t)1 << 28)
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s is too long", what);
    int cap = max > 0 ? max : (int)len + 8;     /* pieces never outnumber bytes + </s> */
    if (!(*ids = malloc(sizeof **ids * (size_t)cap)))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    mt_status st = mt_tokenizer_encode(tok, text, len, target, *ids, cap, n, err);
    if (st == MT_ERR_TOO_LONG)
        return mt_err_set(err, MT_ERR_TOO_LONG, "%s has %d tokens (</s> included); the limit is %d", what, *n, cap);
    return st;
}
