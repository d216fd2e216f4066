/* sessions: one model's sessions, created lazily up to a maximum.
 *
 * A thread takes one for the duration of a job and gives it back; a session
 * is used by one thread at a time.  Creating one allocates its KV caches
 * (megabytes), which is done outside the pool's lock.
 */
#ifndef SRV_SESSIONS_H
#define SRV_SESSIONS_H

#include <stddef.h>

#include "mt.h"

typedef struct srv_sessions srv_sessions;

srv_sessions *srv_sessions_new(const mt_model *model, const mt_session_params *params, int max);
void          srv_sessions_free(srv_sessions *p);
/* A free session, created if none is idle; MT_ERR_BUSY when max are in use. */
mt_status     srv_sessions_get(srv_sessions *p, mt_session **out, mt_err *err);
void          srv_sessions_put(srv_sessions *p, mt_session *s);
size_t        srv_sessions_bytes(srv_sessions *p);     /* of one session; 0 before the first */

#endif
