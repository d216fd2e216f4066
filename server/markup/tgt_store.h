/* tgt_store: a unit's translation and its word links, kept by the writers
 * that put translations back into markup (html.c, the office formats). */
#ifndef SRV_TGT_STORE_H
#define SRV_TGT_STORE_H

#include <stddef.h>

#include "util/status.h"

/* Copies text[0..len) (NUL-terminated) and links[n_links][4] (n_links >= 0)
 * into fresh blocks; on success frees *tgt and *out_links and puts the copies
 * there, with their sizes in *tgt_len and *out_n; on failure changes nothing.
 * MT_OK or MT_ERR_NOMEM. */
mt_status srv_tgt_store(char **tgt, size_t *tgt_len, long **out_links, int *out_n, const char *text, size_t len,
                        const long *links, int n_links, mt_err *err);

#endif
