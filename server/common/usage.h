/* usage: the characters each API key has had translated, as DeepL counts
 * them (code points of the texts sent), against the key's char-quota
 * (api_keys.h), kept across restarts in a small state file.
 *
 * Slot k < n_keys is the k-th key of srv_api_keys; slot n_keys is every
 * request that presents none (all of them on a server without keys).  A
 * request takes its characters before it runs (srv_usage_take refuses what
 * would pass the quota) and gives them back when it fails, so what is
 * counted is what was translated.
 *
 * The state file (--usage-file) has one line per slot with a count:
 *     mtserve-usage 1
 *     <16 hex digits: mt_hash of the key, or "-" for no key> <count>
 * (a hash, not the key: the file holds no secret).  It is read once at start
 * (counts of keys no longer listed are dropped) and rewritten atomically
 * (a temporary file, fsync, rename) at most once a second by srv_usage_take
 * and at srv_usage_close.  Thread-safe.
 */
#ifndef SRV_USAGE_H
#define SRV_USAGE_H

#include <stddef.h>

#include "api_keys.h"

typedef struct srv_usage srv_usage;

/* The counts of keys' slots, read from path when it exists ("" or NULL: no
 * file, counts live in memory).  0, or -1 with a message (a file that is not
 * a state file, out of memory).  keys must outlive *out. */
int  srv_usage_open(srv_usage **out, const srv_api_keys *keys, const char *path, char *err, size_t err_len);
/* Saves (when there is a file) and frees.  NULL is a no-op. */
void srv_usage_close(srv_usage *u);

/* Counts chars for slot (key index, or -1: no key): 0, or -1 with nothing
 * counted when the count would pass the slot's quota. */
int  srv_usage_take(srv_usage *u, int key, long chars);
/* Takes back chars counted for a request that failed. */
void srv_usage_give_back(srv_usage *u, int key, long chars);
/* The slot's count, and its quota (-1: none). */
long srv_usage_count(srv_usage *u, int key);
long srv_usage_quota(const srv_usage *u, int key);

/* The name of key's slot in the state file (and in Redis, store/shared.c):
 * 16 hex digits of a hash of the key, "-" for no key. */
void srv_usage_slot_name(const srv_usage *u, int key, char out[20]);

/* The slots: the keys', then no key's (slot -1 of the calls above is the last). */
int  srv_usage_slots(const srv_usage *u);

/* Writes the state file now: 0, or -1 with a message. */
int  srv_usage_save(srv_usage *u, char *err, size_t err_len);

#endif
