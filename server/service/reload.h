/* reload: SIGHUP's work, on the main thread (serve.c takes the signal with
 * sigtimedwait: no handler runs): --api-key and the --api-keys file, and
 * every --glossary file, read again and swapped in.
 *
 * Everything is read and checked first, outside any lock; a file that no
 * longer reads (or a keys file without a key) keeps the tables in use, with
 * the error logged.  The swap is a pointer exchange under reload_lock's write
 * side (server.h): a request holds its read side while it looks its key up
 * (routes.c) and while it copies a file's terms (glossaries.c), so none sees
 * half a table, and the old tables are freed only once no request reads them.
 * A key keeps its index (srv_api_keys_merge), so its usage, glossaries and
 * rate limits stay its own; a char-quota changed in the file counts from the
 * next start (usage.h counts against the keys of the start).  Connections stay
 * open: the next request on a kept-alive connection sees the new keys.
 */
#ifndef SRV_RELOAD_H
#define SRV_RELOAD_H

#include <stddef.h>

#include "server.h"

/* 0 (msg: what was reloaded), or -1 with msg (nothing changed). */
int srv_reload(srv_server *srv, char *msg, size_t msg_len);

#endif
