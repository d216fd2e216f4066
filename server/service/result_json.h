/* result_json: the decoding features of a translated text (pipeline.h's
 * srv_tr_result) as the API's JSON, one form for POST /translate and for
 * `mtserve translate --json`.
 */
#ifndef SRV_RESULT_JSON_H
#define SRV_RESULT_JSON_H

#include <jansson.h>

#include "translate/pipeline.h"

/* Sets on o: "token_scores" (log p of each target id; null where not finite)
 * if token_scores, and "alignments" ([source index, target index] token links)
 * and "word_alignments" ({"source": [start, end], "target": [start, end]} in
 * code points) if alignments. */
void srv_result_features_json(json_t *o, const srv_tr_result *r, int token_scores, int alignments);

#endif
