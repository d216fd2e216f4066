/* residency: models loaded on demand (--model-dir, --max-models, --memory-budget).
 *
 * Every available model's card (config, languages, tokenizer: models.c) is
 * resident from the start, so routing, /languages and /models know every
 * pair; its weights, sessions and decoder (srv_model's loaded part) are
 * loaded by one loader thread when a request first needs them, and the least
 * recently used model that nobody holds is unloaded when loading another
 * would exceed --max-models or --memory-budget (weight bytes + one session's,
 * as the engine reports them; a model never loaded is estimated from its
 * weights file, or from the largest model seen, whichever is larger).
 *
 * Every use of a model's weights holds it, so it is never unloaded under a
 * request:
 *   - a decode job (a /translate leg -- each leg of a pivot --, a streamed
 *     /translate, a file job's batch) goes through m->decoder, which is the
 *     residency's: submit() holds the model and the job's done() lets it go.
 *     A job submitted while its model is not loaded waits in the residency
 *     (no thread waits: the connection stays suspended) and is handed to the
 *     model's decoder once it is loaded; after --load-timeout it is failed as
 *     timed out (503 + Retry-After); a model larger than the whole budget
 *     fails it at once (500, naming the model and the sizes).
 *   - /score and /attention, on a worker thread: srv_model_acquire waits (up
 *     to --load-timeout) and holds, srv_model_release lets go.
 * /tokenize and /detokenize read only the card's tokenizer.  Concurrent
 * first requests load a model once (one loader, one state per model).
 *
 * Locking: one mutex guards every model's residency state (loaded or not,
 * holders, waiting jobs, last use) and the totals.  The loader loads and
 * unloads outside it: a load takes seconds, and freeing a scheduler joins
 * its thread, whose last done() releases (takes the mutex).  A model's
 * loaded part is written by the loader only while the model is loading or
 * unloading, states in which nobody can hold it.
 */
#ifndef SRV_RESIDENCY_H
#define SRV_RESIDENCY_H

#include "server.h"

/* Turns srv's models (cards, srv_models_discover) into models on demand:
 * each m->decoder becomes the residency's; starts the loader.  Nothing is
 * loaded yet.  NULL with err on failure. */
srv_residency *srv_residency_new(srv_server *srv, mt_err *err);
/* Stops the loader and unloads every model (after every request is over). */
void           srv_residency_free(srv_residency *r);

/* Holds m's loaded part for the caller (a worker: may block up to
 * --load-timeout while m loads).  0: m->sessions etc. are usable until
 * srv_model_release; -1: resp failed (503 loading + Retry-After: not loaded
 * in time; 500: it cannot fit the budget, or its load failed).  Models loaded
 * at start: 0 at once. */
int  srv_model_acquire(srv_server *srv, srv_model *m, srv_response *resp);
void srv_model_release(srv_server *srv, srv_model *m);

/* What /models and /metrics show of a model now. */
typedef struct {
    int    loaded;              /* its weights are in memory */
    int    holders;             /* requests holding it (on demand; 0 otherwise) */
    int    removing, gone;      /* removed (admin API): still held, or unloaded for good */
    size_t bytes;               /* weight_bytes + session_bytes; 0 when not loaded */
    size_t weight_bytes, session_bytes;
    double load_ms;             /* of its last load */
    char   dtype[8], weights[8], int8_kernel[24];   /* the loaded weights' (mt_model_info) */
    int    has_sched;           /* batching: its scheduler's counts below */
    srv_sched_counts sched;
} srv_model_state;

void srv_model_state_get(srv_server *srv, srv_model *m, srv_model_state *out);
/* Every model's, out[0..n), as of one moment (/metrics); n, the models then. */
int  srv_models_state(srv_server *srv, srv_model_state *out);

/* The admin API (admin.h).  Publishes m, whose card is read, as the next
 * model (m must be &srv->models[srv->n_models]): its decoder the
 * residency's, n_models incremented last.  0, or -1 with err (no index left). */
int  srv_residency_add(srv_residency *r, srv_model *m, mt_err *err);
/* Removes m: it is no longer found (srv_find_model) nor listed; jobs waiting
 * for its load fail; the loader unloads it once nobody holds it (a request
 * using it, a stream, finishes first) and it becomes gone. */
void srv_residency_remove(srv_residency *r, srv_model *m);

#endif
