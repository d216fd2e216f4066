/* translate_job: a translate request's trip through the pipeline, for the
 * two /translate handlers (translate.c, libretranslate.c).
 *
 * srv_translate_start splits and tokenizes the texts, hands the sentences
 * to the model's decoder (the scheduler, or a worker's session loop) and
 * returns; the request is then pending (handlers.h): when the decoder is
 * done the connection is resumed, and srv_translate_results, called from
 * the handler's finish, turns the hypotheses into joined texts.  Nothing
 * waits on a thread in between.
 */
#ifndef SRV_TRANSLATE_JOB_H
#define SRV_TRANSLATE_JOB_H

#include "pipeline.h"
#include "server.h"

/* The model's default beam, clamped to what its sessions allow. */
int srv_default_beam(const srv_model *m);
/* The widest beam the model's sessions allow (<= SRV_MAX_BEAM). */
int srv_max_beam(const srv_model *m);

/* Starts translating texts[0..n) (they must live until finish).  The
 * request becomes pending (req->finish, pending, pending_free set before
 * the decoder can answer); *tr receives the pipeline state, which pending
 * owns.  0: pending.  -1: resp failed, the request is not pending, *tr is
 * NULL and the caller still owns its state. */
int srv_translate_start(srv_request *req, srv_response *resp, srv_model *m, const char *const *texts, int n,
                        const srv_tr_params *p, srv_tr **tr, void (*finish)(srv_request *, srv_response *),
                        void *pending, void (*pending_free)(void *));

/* In the handler's finish: out[0..n) (free with srv_tr_results_free), or -1
 * with resp failed: the client went away (499), the queue timed out (503),
 * or decoding failed. */
int srv_translate_results(srv_model *m, srv_tr *tr, srv_tr_result *out, srv_response *resp);

#endif
