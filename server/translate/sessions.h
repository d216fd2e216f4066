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
/* A session going idle (given back to the pool, or the scheduler's with
 * nothing to decode) gives back the pages its work touched
 * (mt_session_trim) when more than this is resident beyond a new session's.
 * A few sentences touch about 1 MB, which the next job would only fault in
 * again (that round trip cost ~1 ms); one batch of 200 sampled sentences
 * left 27 MB in the scheduler's session for good (issue 30), while checking
 * costs ~0.1 ms on its 230 MB (a mincore), ~10 us on a pooled one. */
#define SRV_SESSION_TRIM_MIN_BYTES ((size_t)4 << 20)

/* A free session, created if none is idle; MT_ERR_BUSY when max are in use. */
mt_status     srv_sessions_get(srv_sessions *p, mt_session **out, mt_err *err);
/* Gives s back, trimmed first (SRV_SESSION_TRIM_MIN_BYTES): a job that
 * touched a lot does not leave it resident in an idle session. */
void          srv_sessions_put(srv_sessions *p, mt_session *s);
size_t        srv_sessions_bytes(srv_sessions *p);     /* of one session; 0 before the first */

#endif
