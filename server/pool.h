/* pool: who may decode now.
 *
 * srv_gate      W worker slots shared by every model (W x BLAS threads <= cores)
 *               and a bounded queue in front of them: a request takes a free
 *               slot, or waits (up to the queue timeout) if fewer than Q others
 *               are waiting, or is refused at once (503 queue_full).
 * srv_sessions  one model's sessions, created lazily up to W.  Holding a gate
 *               slot guarantees a free session, so getting one never blocks.
 *               A session is used by one thread at a time.
 * srv_lease     both together: what a handler holds while it decodes.
 */
#ifndef SRV_POOL_H
#define SRV_POOL_H

#include "handlers.h"
#include "mt.h"

typedef struct srv_gate srv_gate;
typedef struct srv_sessions srv_sessions;

srv_gate *srv_gate_new(int workers, int queue, int timeout_ms);
void      srv_gate_free(srv_gate *g);
/* 0 with a slot held, or SRV_E_QUEUE_FULL (queue full or timed out). */
srv_code  srv_gate_enter(srv_gate *g);
void      srv_gate_leave(srv_gate *g);
void      srv_gate_stats(srv_gate *g, int *busy, int *waiting, int *workers);

srv_sessions *srv_sessions_new(const mt_model *model, const mt_session_params *params, int max);
void          srv_sessions_free(srv_sessions *p);
mt_status     srv_sessions_get(srv_sessions *p, mt_session **out, mt_err *err);
void          srv_sessions_put(srv_sessions *p, mt_session *s);
/* Bytes of one session (0 until the first is created). */
size_t        srv_sessions_bytes(srv_sessions *p);

typedef struct {
    srv_gate     *gate;
    srv_sessions *sessions;
    mt_session   *s;
} srv_lease;

/* Waits for a slot and takes a session: 0, or -1 with resp failed (503 queue_full, 500). */
int  srv_lease_take(srv_gate *g, srv_sessions *p, srv_lease *lease, srv_response *resp);
void srv_lease_return(srv_lease *lease);

#endif
