/* batch: the translation core behind POST /translate (both request shapes).
 *
 * Texts are split into sentences (server/splitter.h), every sentence of the
 * request is checked against the token limits, then all of them are decoded
 * together with one session: one mt_translate call when they fit the
 * session's batch (max_batch / beam sentences), chunks of that size
 * otherwise (shortest first, to waste little padding).  Each text's
 * translation is joined back with its original whitespace and line breaks.
 */
#ifndef SRV_BATCH_H
#define SRV_BATCH_H

#include <stdint.h>

#include "server.h"

#define SRV_MAX_BEAM 16     /* the engine's limit */

typedef struct {
    int beam_size;      /* >= 1 (resolved, not 0) */
    int max_length;     /* decoder length incl. the start token; 0 = the model's */
    int n_best;         /* hypotheses per text, 1..beam_size */
    int split;          /* split texts into sentences */
} srv_tr_params;

typedef struct {
    char   **alts;      /* n_alts joined translations, best first (malloc'd) */
    int      n_alts;
    int32_t *ids;       /* target ids of the best translation, sentence after sentence, </s> dropped */
    int      n_ids;
    double   score;     /* sum over the sentences of the best hypothesis' score */
    int      n_sentences;
} srv_tr_result;

/* Translates n texts with model m.  out[0..n) is filled; free it with
 * srv_tr_results_free.  0, or -1 with resp failed (nothing to free then). */
int  srv_translate_texts(srv_server *srv, srv_model *m, const char *const *texts, int n,
                         const srv_tr_params *p, srv_tr_result *out, srv_response *resp);
void srv_tr_results_free(srv_tr_result *r, int n);

/* The model's default beam, clamped to what its sessions allow. */
int  srv_default_beam(const srv_model *m);

#endif
