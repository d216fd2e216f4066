/* tgt_store: a unit's translation and its word links (tgt_store.h). */
#include "tgt_store.h"

#include <stdlib.h>
#include <string.h>

mt_status srv_tgt_store(char **tgt, size_t *tgt_len, long **out_links, int *out_n, const char *text, size_t len,
                        const long *links, int n_links, mt_err *err)
{
    char *t = malloc(len + 1);
    long *l = malloc(sizeof *l * 4 * (size_t)(n_links + 1));     /* + 1: never malloc(0) */
    if (!t || !l) {
        free(t);
        free(l);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    memcpy(t, text, len);
    t[len] = 0;
    if (n_links)
        memcpy(l, links, sizeof *l * 4 * (size_t)n_links);
    free(*tgt);
    free(*out_links);
    *tgt = t;
    *tgt_len = len;
    *out_links = l;
    *out_n = n_links;
    return MT_OK;
}
