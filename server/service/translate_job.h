/* translate_job: a translate request's trip through the pipeline, for the
 * two /translate handlers (api/translate_api.c, api/libretranslate_api.c).
 *
 * srv_translate_start splits and tokenizes the texts, hands the sentences
 * to the first model's decoder (the scheduler, or a worker's session loop)
 * and returns; the request is then pending (handlers.h): when the decoder
 * is done the connection is resumed, and srv_translate_results, called from
 * the handler's finish, turns the hypotheses into joined texts.  Nothing
 * waits on a thread in between.
 *
 * A path of two legs (a pivot, pairs.h): when the first leg's decoder is
 * done, its best translations are joined (on the decoder's thread: a few
 * microseconds per sentence) and become the second leg's texts, submitted
 * to the second model's decoder; the connection is resumed after that one.
 */
#ifndef SRV_TRANSLATE_JOB_H
#define SRV_TRANSLATE_JOB_H

#include "pairs.h"
#include "translate/pipeline.h"
#include "server.h"

/* p->dp, as the request parser collected it (mt_decode_default_params and
 * the fields given), resolved for the path's last model: on the request path
 * the one call of mt_decode_params_resolve, where every default is filled.
 * 0, or -1 with resp failed (400, naming the field). */
int srv_translate_resolve(const srv_path *path, srv_tr_params *p, srv_response *resp);
/* The widest beam model m's sessions take (the table's beam_size maximum). */
int srv_max_beam(const srv_model *m);
/* Leg i of path as the pipeline sees its model: tokenizer, limits, the
 * language token; a decoder-only model's prompt with the leg's language
 * names and end ids (none when raw).  max_tokens left 0 (the caller's). */
srv_tr_model srv_leg_model(srv_server *srv, const srv_path *path, int i, int raw);

typedef struct srv_trjob srv_trjob;

/* Streaming (stream.c): where the last leg's tokens go instead of waiting. */
typedef struct {
    /* the last leg's sentences, before they are submitted (any thread): 0, or
     * -1 with err (out of memory).  max_ids: the most ids of a sentence. */
    int  (*attach)(void *ctx, const srv_tr *t, int max_ids, mt_err *err);
    srv_progress progress;      /* the last leg's decode job's (decode_job.h) */
    int  (*gone)(void *ctx);    /* the abort of every leg */
    void (*done)(void *ctx);    /* called instead of req->resume: the job is over */
    void  *ctx;
} srv_tr_sink;

/* Starts translating texts[0..n) along path with p, resolved by
 * srv_translate_resolve (the texts must live until finish).  The request
 * becomes pending (req->finish, pending, pending_free set before the
 * decoder can answer); *job receives the state, which the
 * caller's pending owns (free it with srv_trjob_free).  0: pending.  -1:
 * resp failed, the request is not pending, *job is NULL.  sink (NULL: none;
 * copied) streams the last leg and is told when the job is over, instead of
 * req->resume. */
int srv_translate_start(srv_request *req, srv_response *resp, const srv_path *path, const char *const *texts,
                        int n, const srv_tr_params *p, srv_trjob **job,
                        void (*finish)(srv_request *, srv_response *), void *pending,
                        void (*pending_free)(void *), const srv_tr_sink *sink);

/* In the handler's finish: out[0..n) (free with srv_tr_results_free), or -1
 * with resp failed: the client went away (499), the queue timed out (503),
 * or decoding failed. */
int srv_translate_results(srv_trjob *job, srv_tr_result *out, srv_response *resp);
/* The model whose tokens the results hold (the last leg's). */
const srv_model *srv_trjob_model(const srv_trjob *job);
void srv_trjob_free(srv_trjob *job);

#endif
