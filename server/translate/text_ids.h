/* text_ids: a text's token ids, for every endpoint that takes a text and
 * answers about its tokens (/tokenize, /score, /attention).  Failures are
 * engine statuses with a message; the callers map them to HTTP (srv_fail_mt).
 * (The translate pipeline tokenizes sentence by sentence into its own
 * buffers, with a multilingual model's language token first.)
 */
#ifndef SRV_TEXT_IDS_H
#define SRV_TEXT_IDS_H

#include <stdint.h>

#include "tokenizer/tokenizer.h"

/* text's ids with tok (target: the target side), </s> appended, into *ids
 * (malloc'd; the caller frees it, also on failure).  max: the most ids; 0:
 * as many as the text gives.  MT_ERR_TOO_LONG names the text as what ("the
 * text", "field 'pairs[0].source'") with its count; MT_ERR_INPUT (invalid
 * UTF-8); MT_ERR_NOMEM. */
mt_status srv_text_ids(const mt_tokenizer *tok, const char *text, int target, int max, const char *what,
                       int32_t **ids, int *n, mt_err *err);

#endif
