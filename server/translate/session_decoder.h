/* session_decoder: the decode interface (decode_job.h) over a session of the
 * job's own.
 *
 * The job's sentences are decoded together by mt_generate_each (the engine's
 * decode loop, mt_decode_run: started while the session has rows, one
 * mt_step for all, taken when finished), with job->abort as its abort
 * callback and job->progress as each sentence's progress callback.  Results
 * equal the scheduler's (each sentence's result is that of decoding it
 * alone).
 *
 * srv_session_decode decodes inline on the calling thread (the CLI).  The
 * decoder of srv_session_decoder_of runs each job on a worker thread with a
 * session from the model's pool (the server with --batching off).
 */
#ifndef SRV_SEQLOOP_H
#define SRV_SEQLOOP_H

#include "decode_job.h"
#include "sessions.h"
#include "common/workers.h"

/* Decodes job on s, then calls job->done(job).  Never refuses. */
void srv_session_decode(mt_session *s, srv_decode_job *job);

typedef struct {
    srv_sessions *sessions;     /* where a job's session comes from */
    srv_workers  *workers;      /* where it runs; submit -1 when its queue is full */
} srv_session_decoder;

srv_decoder srv_session_decoder_of(srv_session_decoder *dec);

#endif
